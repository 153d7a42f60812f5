"""The vectorised float32 math of the CPU element-wise kernels
(csrc/cpu/kernels/elementwise/vmath.h: exp, log, erf, gelu, sigmoid, tanh,
softplus, elu) and the softmax kernel's long-row path, against float64 NumPy.

What these add to test_unary.py / test_activations.py: lengths that leave
every possible vector tail (1 to 33, around the 1024-element chunks, odd
sizes above the threading threshold, one output above the 16 MiB
streaming-store threshold), inputs on both sides of every branch point of
the branch-free code (exp's clamps and subnormal range, erf's 1 and 4, gelu's
x / sqrt 2 = +-1 and its underflow to 0, log's subnormal scaling and
mantissa split), and a tolerance in float32 ulps of the correctly rounded
float64 value, close to what the code measures (see vmath.h), so that an
error of a few ulps fails:

  exp, log                2 ulp      erf, sigmoid, tanh, softplus   4 ulp
  elu (expm1)             4 ulp      gelu                            9 ulp
  softmax                 4 ulp (as test_softmax.py)

(The WPT vectors' float32 bounds are looser: exp 32, sigmoid 34, tanh 16,
elu 18 ulp.)  Subnormal results are compared in ulps of the subnormal grid,
so a flush to zero fails.  gelu's reference is 0.5 x erfc(-x / sqrt 2), the
spec's 0.5 x (1 + erf(x / sqrt 2)) without its float64 cancellation for
x << 0 (the kernel computes erfc there too); gelu(-Inf) is NaN, as the spec's
formula gives (-Inf * 0).
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from .conftest import check_float, cpu_level, float_specials, rng_for

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _sigmoid(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _gelu(x):
    with np.errstate(invalid="ignore"):
        return 0.5 * x * _erfc(-x / math.sqrt(2))


def _elu(alpha):
    a = float(np.float32(alpha))
    return lambda x: np.where(x > 0, x, a * np.expm1(np.minimum(x, 0)))


# op -> (builder call, float64 reference, ulps)
OPS = {
    "exp": (lambda b, x: b.exp(x), np.exp, 2),
    "log": (lambda b, x: b.log(x), np.log, 2),
    "erf": (lambda b, x: b.erf(x), _erf, 4),
    "sigmoid": (lambda b, x: b.sigmoid(x), _sigmoid, 4),
    "tanh": (lambda b, x: b.tanh(x), np.tanh, 4),
    "softplus": (lambda b, x: b.softplus(x), lambda x: np.logaddexp(0, x), 4),
    "elu": (lambda b, x: b.elu(x), _elu(1.0), 4),
    "elu_a": (lambda b, x: b.elu(x, {"alpha": 0.3}), _elu(0.3), 4),
    "gelu": (lambda b, x: b.gelu(x), _gelu, 9),
}

# the points where the branch-free code switches or clamps
EDGES = [
    0.0, 1.0, 4.0, 0.70710678, 1.41421356, 2.0, 5.656854, 15.5, 21.92, 0.3465736,
    0.5, 0.25, 1e-3, 1e-7, 1e-20, 1e-38, 1.1754944e-38, 1e-40, 1e-45,
    87.33654, 87.5, 88.37626, 88.72283, 88.7229, 88.8, 89.0, 103.9720, 104.0, 110.0,
    9.0, 10.0, 11.0, 17.0, 30.0, 100.0, 1e4, 1e30, 3.0e38, 0.6931472, 1.0000001,
    0.99999994, 1.4142135, 1.4142137, 8388608.0,
]


def edge_values():
    e = np.array(EDGES, np.float64)
    near = np.concatenate([e * (1 - 2e-7), e, e * (1 + 2e-7)])
    vals = np.concatenate([near, -near, float_specials("float32").astype(np.float64)])
    with np.errstate(over="ignore"):
        return vals.astype(np.float32)


def random_values(rng, n):
    """n float32 values over every binade, both signs, and ordinary ones."""
    mag = 10.0 ** rng.uniform(-44, 38.5, size=n)
    sign = rng.choice([-1.0, 1.0], size=n)
    wide = (sign * mag)
    ordinary = rng.standard_normal(n) * 8
    with np.errstate(over="ignore"):
        return np.where(rng.random(n) < 0.5, wide, ordinary).astype(np.float32)


def check_op(run, op, x):
    build, ref, ulps = OPS[op]
    got = run(build, {"x": x})
    with np.errstate(all="ignore"):
        r = ref(x.astype(np.float64))
    # subnormal results: ulp of the subnormal grid, which spacing() gives
    check_float(got, r, "float32", x.shape, ulps=ulps, inputs={"x": x},
                what=f"{op} n={x.size}")


@pytest.mark.parametrize("op", sorted(OPS))
def test_edges(run, op):
    check_op(run, op, edge_values())


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("n", [1, 2, 3, 7, 15, 16, 17, 31, 33, 1023, 1025, 4097, 70001])
def test_random_lengths(run, op, n):
    rng = rng_for("vmath", op, n)
    x = random_values(rng, n)
    if n >= 64:  # put the edge values at the start, middle and tail
        e = edge_values()
        m = min(e.size, n // 3)
        x[:m] = e[:m]
        x[n // 2:n // 2 + m] = e[-m:]
        x[-m:] = e[:m][::-1]
    check_op(run, op, x)


@pytest.mark.parametrize("op", ["exp", "sigmoid", "tanh", "softplus", "gelu"])
def test_streaming_output(run, op):
    """Above 16 MiB of output the kernel writes with streaming stores."""
    n = 4 * 1024 * 1024 + 13
    rng = rng_for("vmath-nt", op)
    x = (rng.standard_normal(n) * 6).astype(np.float32)
    x[:: 997] = np.float32(np.nan)
    x[5:: 1009] = np.float32(-np.inf)
    check_op(run, op, x)


@pytest.mark.parametrize("op", sorted(OPS))
def test_dense_grid(run, op):
    """Every 4099th float32 bit pattern: all binades, NaN payloads, both
    signs (about 1 Mi values)."""
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    if op == "gelu" or op == "erf":  # the vectorised math.erf(c) is slow: a sample
        x = x[::4]
    check_op(run, op, x)


@pytest.mark.parametrize("op", ["exp", "sigmoid", "gelu", "tanh", "erf"])
def test_operator_equals_fused_chain(run, op):
    """exp, sigmoid, gelu, tanh and erf run an AVX-512 intrinsics loop
    where the CPU has it (elementwise.c: 2^n by vscalefps); alone, the
    operator's loop reads x and writes y; inside a fused element-wise chain
    (chain.c) or a conv / matmul epilogue the step runs in place on a chunk
    through cpu_unary_f32.  Both must give the same bits, on the dense grid
    of bit patterns (NaN as NaN).  (vmath.h's portable clones of gelu are
    checked against float64 by the C core test "vmath gelu".)"""
    bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)

    def build(b, x):
        one = b.constant({"dataType": "float32", "shape": [1]}, np.ones(1, np.float32))
        return {"alone": getattr(b, op)(x), "chain": getattr(b, op)(b.mul(x, one))}

    got = run(build, {"x": x})
    np.testing.assert_array_equal(got["alone"], got["chain"])


_LEVEL_CHILD = r"""
import sys, numpy as np, webnn
ctx = webnn.ml.create_context(device_type="cpu")
bits = np.arange(0, 2 ** 32, 4099, dtype=np.uint64).astype(np.uint32)
x = bits.view(np.float32)
out = {}
for op in ("exp", "sigmoid", "gelu", "tanh", "erf"):
    b = webnn.MLGraphBuilder(ctx)
    i = b.input("x", {"dataType": "float32", "shape": [x.size]})
    out[op] = ctx.compute(b.build({"y": getattr(b, op)(i)}), {"x": x})["y"]
xs = x[np.isfinite(x)][: 8 * 4096].reshape(-1, 8)  # x sigmoid(x) on a product
b = webnn.MLGraphBuilder(ctx)
i = b.input("x", {"dataType": "float32", "shape": list(xs.shape)})
mm = b.matmul(i, b.constant(np.eye(8, 24, dtype=np.float32)))
out["silu"] = ctx.compute(b.build({"y": b.mul(mm, b.sigmoid(mm))}), {"x": xs})["y"]
# pow (a double-precision loop at AVX-512 and AVX2, powf at baseline): every
# sign of base, with exponents of every kind
e = np.random.default_rng(3).uniform(-8, 8, x.size).astype(np.float32)
e[::3] = np.round(e[::3])
e[1::7] = np.float32(0.75)
b = webnn.MLGraphBuilder(ctx)
pa = b.input("a", {"dataType": "float32", "shape": [x.size]})
pb = b.input("b", {"dataType": "float32", "shape": [x.size]})
out["pow"] = ctx.compute(b.build({"y": b.pow(pa, pb)}), {"a": x, "b": e})["y"]
# softmax rows (the row pass's exp(x - max) at each level): differences from
# the row's maximum over [-130, 0] (exp of them normal, subnormal and 0),
# -inf entries, a row of -inf, rows holding +inf or NaN, odd lengths
rng = np.random.default_rng(5)
sm = rng.uniform(-130, 0, (64, 1501)).astype(np.float32)
sm[:, ::97] = -np.inf
sm[1, :] = -np.inf
sm[2, 7] = np.inf
sm[3, 100] = np.nan
sm[4, :] = np.float32(1e30) * rng.uniform(-1, 1, 1501).astype(np.float32)
b = webnn.MLGraphBuilder(ctx)
i = b.input("x", {"dataType": "float32", "shape": list(sm.shape)})
out["softmax"] = ctx.compute(b.build({"y": b.softmax(i, 1)}), {"x": sm})["y"]
np.savez(sys.argv[1], **out)
"""


def test_avx2_twins_match_the_compilers_loops(tmp_path):
    """exp, sigmoid, gelu, tanh, erf and the x sigmoid(x) epilogue at AVX2 run the
    intrinsics twins of vmath256.h (softmax's row pass too, on rows, with its
    branch-free exp of x - max <= 0); with WEBNN_CPU_VM_TWINS=0, the loops GCC
    vectorises from vmath.h, built for the same level (AVX2 + FMA).  The
    twins follow the same sequence, so every bit pattern of the grid must
    give the same bits (NaN as NaN); so must the CPU's own level (the
    AVX-512 twins where it has them) against its loops and against AVX2;
    pow's AVX2 loop those of its AVX-512 loop.  (Capped at baseline the
    loops run without FMA, rounding otherwise: the accuracy tests above
    cover that build when `make test-isa` runs them there.)"""
    os_env = dict(os.environ)
    cap = os_env.pop("WEBNN_CPU_ISA", None)
    os_env.pop("WEBNN_CPU_VM_TWINS", None)
    if cpu_level() == "baseline" and cap is None:
        pytest.skip("no AVX2 on this CPU")
    if "libasan" in os_env.get("LD_PRELOAD", "") or "libtsan" in os_env.get("LD_PRELOAD", ""):
        pytest.skip("a sanitizer build (-O1): GCC contracts no a * b + c into FMA "
                    "there, so its loops round otherwise than the twins")
    res = {}
    for level in ("avx2", ""):
        for twins in ("", "0"):
            path = tmp_path / f"out_{level or 'cpu'}{twins}.npz"
            env = dict(os_env, WEBNN_CPU_ISA=level) if level else dict(os_env)
            if twins:
                env["WEBNN_CPU_VM_TWINS"] = twins
            subprocess.run([sys.executable, "-c", _LEVEL_CHILD, str(path)], env=env,
                           check=True, timeout=300)
            res[level + twins] = np.load(path)
    pairs = [("avx2", "avx20", "the AVX2 twins against the AVX2 loops"),
             ("", "0", "the CPU level's twins against its loops"),
             ("avx2", "", "the AVX2 twins against the CPU level's")]
    for a_key, b_key, what in pairs:
        for op in res[a_key].files:
            if op == "pow" and (a_key, b_key) != ("avx2", "") or \
                    op == "pow" and cpu_level() != "avx512":
                continue  # pow has no twins: its AVX2 loop against its AVX-512 one
            a, b = res[a_key][op], res[b_key][op]
            same = (a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))
            assert same.all(), (what, op, int((~same).sum()))


# ---- softmax: rows longer than a cache-sized part (two passes, split) -----
SM_PART = 32768


def sm_ref(x):
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(x64 - np.max(x64, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)


@pytest.mark.parametrize("n", [SM_PART + 1, 2 * SM_PART, 3 * SM_PART + 17])
def test_softmax_long_rows(run, n):
    rng = rng_for("sm-long", n)
    rows = []
    base = (rng.standard_normal(n) * 5).astype(np.float32)
    rows.append(base)
    r = base.copy()            # the maximum in the last part, far above the rest:
    r[-3] = 200.0              # earlier parts' sums scaled by exp(m_p - M) ~ 0
    rows.append(r)
    r = base.copy()
    r[SM_PART // 2] = 90.0     # the maximum in the first part
    rows.append(r)
    r = np.full(n, -np.inf, np.float32)   # -Inf but one finite value
    r[n - 2] = -5.0
    rows.append(r)
    r = np.linspace(-200, 0, n).astype(np.float32)  # exp down to the subnormals
    rows.append(r)
    x = np.stack(rows)
    got = run(lambda b, x: b.softmax(x, 1), {"x": x})
    check_float(got, sm_ref(x), "float32", x.shape, ulps=4, what=f"softmax long n={n}")


@pytest.mark.parametrize("special", ["nan", "inf", "all-inf"])
def test_softmax_long_special(run, special):
    n = 2 * SM_PART + 5
    rng = rng_for("sm-long-special", special)
    x = (rng.standard_normal((3, n)) * 3).astype(np.float32)
    if special == "nan":
        x[1, SM_PART + 7] = np.nan      # in the second part only
    elif special == "inf":
        x[1, -1] = np.inf               # in the last part
    else:
        x[1, :] = -np.inf
    got = run(lambda b, x: b.softmax(x, 1), {"x": x})
    assert np.isnan(got[1]).all(), special
    assert not np.isnan(got[[0, 2]]).any()
    check_float(got[[0, 2]], sm_ref(x[[0, 2]]), "float32", (2, n), ulps=4)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 15, 16, 17, 31, 33, 100, 767, 1025])
def test_softmax_row_tails(run, n):
    """Rows shorter than a vector and every tail length, with specials."""
    rng = rng_for("sm-tail", n)
    x = (rng.standard_normal((6, n)) * 20).astype(np.float32)
    x[1, n // 2] = np.float32(-1e30)
    x[2, :] = np.float32(3.0e38)
    x[3, 0] = np.float32(-np.inf)
    x[4, -1] = np.float32(-100.0)
    got = run(lambda b, x: b.softmax(x, 1), {"x": x})
    check_float(got, sm_ref(x), "float32", x.shape, ulps=4, what=f"softmax n={n}")
