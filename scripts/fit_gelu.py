"""Refit the erfc polynomial of vm_gelu (csrc/cpu/kernels/elementwise/vmath.h)
and elementwise.c's gelu512.

erfc(a) exp(a^2) = t Q(t), t = 1 / (1 + p a), a in [0, 11], p = 0.38,
Q of degree 8, fitted for the least maximum relative error by iteratively
reweighted least squares (Lawson) on Chebyshev points in t, in float64
(math.erfc is accurate to the last bits out to a = 11).  Prints the float32
coefficients halved, highest degree first, as the C code writes them, and
the relative error of t Q(t) with those float32 coefficients (the code then
reaches <= 7.7 ulp for gelu itself; the C core test "vmath gelu" and
tests/ops/test_vector_math.py check the result).

    python scripts/fit_gelu.py [p] [degree]
"""
import math
import sys

import numpy as np

AMAX = 11.0


def s_of_a(a):
    return math.erfc(a) * math.exp(a * a)


def fit(p, deg, npts=4000, iters=80):
    tmin = 1 / (1 + p * AMAX)
    k = np.arange(npts)
    t = (tmin + 1) / 2 + (1 - tmin) / 2 * np.cos(np.pi * (k + 0.5) / npts)
    q = np.array([s_of_a(a) for a in (1 / t - 1) / p]) / t
    v = np.vander(t, deg + 1, increasing=True)
    w = np.ones(npts)
    for _ in range(iters):
        wr = w / q  # relative error
        c, *_ = np.linalg.lstsq(v * wr[:, None], q * wr, rcond=None)
        err = (v @ c - q) / q
        w = w * np.sqrt(np.abs(err))
        w /= w.sum()
    return c


def main():
    p = float(sys.argv[1]) if len(sys.argv) > 1 else 0.38
    deg = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    c32 = fit(p, deg).astype(np.float32)
    t = np.linspace(1 / (1 + p * AMAX), 1, 20001)
    ref = np.array([s_of_a(a) for a in (1 / t - 1) / p])
    err = np.abs(t * np.polyval(c32[::-1].astype(np.float64), t) / ref - 1).max()
    print(f"p = {p}, degree {deg}: relative error {err:.3g} with float32 coefficients")
    print(f"VM_GELU_P = {np.float32(p / math.sqrt(2)):.9e}f  (p / sqrt 2, t from |x|)")
    for ci in c32[::-1]:
        print(f"{ci / np.float32(2):.9e}f")


if __name__ == "__main__":
    main()
