"""gemm: alpha * A' * B' + beta * C with optional transposes and C of rank
0/1/2 unidirectionally broadcast to [M, N].

Reference: float64 with alpha and beta first cast to the input data type (as
the spec says).  Tolerance: the K-term dot product bound plus a couple of
roundings of the alpha / beta terms, and one ulp of the output type.
"""
import itertools

import numpy as np
import pytest

from .conftest import cast_param, check_float, check_shape_dtype, npdt, op_dtypes, rng_for

DTYPES = op_dtypes("gemm", "a")
EPS_ACC = 2.0**-23

C_SHAPES = ["none", (), (1,), ("N",), (1, 1), (1, "N"), ("M", 1), ("M", "N")]
ALPHA_BETA = [(None, None), (2.0, 0.5), (-1.5, -0.25), (0.0, 1.0), (0.3, 0.7), (1.0, 0.0)]


def ref_and_tol(a, b, c, dt, alpha, beta, at, bt):
    al = cast_param(1.0 if alpha is None else alpha, dt)
    be = cast_param(1.0 if beta is None else beta, dt)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if at:
        a64 = a64.T
    if bt:
        b64 = b64.T
    k = a64.shape[1]
    ref = al * (a64 @ b64)
    bound = (k + 2) * EPS_ACC * abs(al) * (np.abs(a64) @ np.abs(b64))
    if c is not None:
        c64 = c.astype(np.float64)
        ref = ref + be * c64
        bound = bound + 2 * EPS_ACC * abs(be) * np.abs(c64)
    return ref, bound


def c_shape(spec, m, n):
    return tuple(m if d == "M" else n if d == "N" else d for d in spec)


def build(alpha, beta, at, bt, with_c):
    def f(bld, a, b, c=None):
        opts = {}
        if with_c:
            opts["c"] = c
        if alpha is not None:
            opts["alpha"] = alpha
        if beta is not None:
            opts["beta"] = beta
        if at:
            opts["aTranspose"] = True
        if bt:
            opts["bTranspose"] = True
        return bld.gemm(a, b, opts)
    return f


def run_case(run, rng, dt, m, k, n, at, bt, cspec, alpha, beta, c_const=False, b_const=False):
    t = npdt(dt)
    a = rng.uniform(-1, 1, size=(k, m) if at else (m, k)).astype(t)
    b = rng.uniform(-1, 1, size=(n, k) if bt else (k, n)).astype(t)
    c = None if cspec == "none" else rng.uniform(-2, 2, size=c_shape(cspec, m, n)).astype(t)
    inputs = {"a": a, "b": b}
    consts = {}
    if b_const:
        consts["b"] = inputs.pop("b")
    if c is not None:
        (consts if c_const else inputs)["c"] = c
    got = run(build(alpha, beta, at, bt, c is not None), inputs, constants=consts)
    ref, atol = ref_and_tol(a, b, c, dt, alpha, beta, at, bt)
    check_shape_dtype(got, dt, (m, n))
    check_float(got, ref, dt, (m, n), ulps=1, atol=atol,
                what=f"gemm {dt} M={m} K={k} N={n} aT={at} bT={bt} c={None if c is None else c.shape} "
                     f"alpha={alpha} beta={beta}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("at,bt", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("cspec", C_SHAPES, ids=str)
def test_options(run, dt, at, bt, cspec):
    rng = rng_for("gemm", dt, at, bt, str(cspec))
    for i, (alpha, beta) in enumerate(ALPHA_BETA):
        m, k, n = (int(v) for v in rng.integers(1, 9, size=3))
        run_case(run, rng, dt, m, k, n, at, bt, cspec, alpha, beta, c_const=bool(i % 2))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mkn", [(64, 128, 48), (1, 257, 1), (33, 100, 65), (130, 20, 7)])
@pytest.mark.parametrize("at,bt", [(False, False), (True, True)])
def test_large(run, dt, mkn, at, bt):
    rng = rng_for("gemm-l", dt, mkn, at, bt)
    run_case(run, rng, dt, *mkn, at, bt, ("M", "N"), 0.5, -2.0)
    run_case(run, rng, dt, *mkn, at, bt, ("N",), None, None)


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    t = npdt(dt)
    a = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], t)      # [3, 2]
    b = np.array([[1.0, 0.0, -1.0, 2.0], [0.5, 1.0, 0.0, -1.0]], t)  # [2, 4]
    c = np.array([10.0, 20.0, 30.0, 40.0], t)
    got = run(lambda bld, a, b, c: bld.gemm(a, b, c=c, alpha=2.0, beta=0.5),
              {"a": a, "b": b, "c": c})
    expect = 2 * (a.astype(np.float64) @ b.astype(np.float64)) + 0.5 * c.astype(np.float64)
    np.testing.assert_array_equal(expect, [[9, 14, 13, 20], [15, 18, 9, 24], [21, 22, 5, 28]])
    check_float(got, expect, dt, (3, 4), what="gemm hand-checked")
    # aTranspose / bTranspose of the same data give the same product
    got = run(lambda bld, a, b: bld.gemm(a, b, a_transpose=True, b_transpose=True),
              {"a": np.ascontiguousarray(a.T), "b": np.ascontiguousarray(b.T)})
    check_float(got, a.astype(np.float64) @ b.astype(np.float64), dt, (3, 4),
                what="gemm transposed hand-checked")


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt):
    t = npdt(dt)
    a = np.array([[np.nan, 0.0], [np.inf, 1.0], [1.0, 1.0]], t)
    b = np.array([[0.0, 1.0], [1.0, 1.0]], t)
    c = np.array([[1.0], [-np.inf], [np.inf]], t)
    with np.errstate(all="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    got = run(lambda bld, a, b, c: bld.gemm(a, b, c=c), {"a": a, "b": b, "c": c})
    check_float(got, ref, dt, (3, 2), what="gemm specials")


@pytest.mark.parametrize("path", ["default", "portable"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("at,bt", list(itertools.product([False, True], repeat=2)))
def test_product_kernels(ctx, monkeypatch, path, dt, at, bt):
    """On AVX-512 CPUs gemm runs on the 1x1 convolution's micro-kernel where
    a is not transposed, alpha is 1 and c is absent or one row broadcast to
    every row (beta c is then the kernel's bias), 8 columns wide or more;
    otherwise, and under 'portable' (WEBNN_CONV_DIRECT=0, read at build), on
    BLIS.  Both sides of each condition, b a constant or an input."""
    import functools

    from .conftest import run_graph
    if path == "portable":
        monkeypatch.setenv("WEBNN_CONV_DIRECT", "0")
    run = functools.partial(run_graph, ctx)
    rng = rng_for("gemm-kernels", dt, at, bt)
    cases = [("none", None, None), (("N",), None, 0.5), ((1, "N"), 1.0, -2.0), ((), None, None),
             (("M", "N"), None, 0.25), (("N",), 1.0, 0.0), (("N",), 2.0, 1.0), (("M", 1), None, None)]
    for i, (cspec, alpha, beta) in enumerate(cases):
        for m, k, n in [(13, 40, 17), (30, 7, 70), (6, 65, 8)]:
            run_case(run, rng, dt, m, k, n, at, bt, cspec, alpha, beta,
                     c_const=bool(i % 2), b_const=bool((i + m) % 2))
