"""matmul: 2-D products and stacks of matrices (ranks 2..5) with NumPy batch
broadcasting.

Reference: np.matmul in float64 on the same inputs.  Tolerance (the standard
forward error bound of a K-term dot product, with a factor 2 of margin):
    |got - ref| <= K * eps_acc * (|A| @ |B|) + 1 ulp of the output type
with eps_acc the float32 epsilon (float16 inputs are expected to accumulate
in at least float32 precision).  Small-integer inputs must be exact.
"""
import itertools

import numpy as np
import pytest

from .conftest import check_float, check_shape_dtype, npdt, op_dtypes, rng_for

DTYPES = op_dtypes("matmul", "a")
EPS_ACC = 2.0**-23


def _mm(bld, a, b):
    return bld.matmul(a, b)


def ref_and_tol(a, b, dt):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = np.matmul(a64, b64)
        bound = np.matmul(np.abs(a64), np.abs(b64))
    k = a.shape[-1]
    return ref, k * EPS_ACC * bound


def check(a, b, got, dt, what="matmul"):
    ref, atol = ref_and_tol(a, b, dt)
    check_float(got, ref, dt, ref.shape, ulps=1, atol=atol, what=f"{what} {dt} {a.shape} x {b.shape}")


def batch_shapes(rng, rank_a, rank_b):
    nb = max(rank_a, rank_b) - 2
    out = [int(d) for d in rng.integers(1, 4, size=nb)]
    sa, sb = [], []
    for i, d in enumerate(out):
        sa.append(1 if rng.random() < 0.3 else d)
        sb.append(1 if rng.random() < 0.3 else d)
    return tuple(sa[nb - (rank_a - 2):]), tuple(sb[nb - (rank_b - 2):])


def operands(rng, dt, sa, sb):
    t = npdt(dt)
    return (rng.uniform(-1, 1, size=sa).astype(t), rng.uniform(-1, 1, size=sb).astype(t))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank_a,rank_b", list(itertools.product(range(2, 6), repeat=2)))
def test_random_batch_broadcast(run, dt, rank_a, rank_b):
    rng = rng_for("matmul", dt, rank_a, rank_b)
    for _ in range(2):
        ba, bb = batch_shapes(rng, rank_a, rank_b)
        m, k, n = (int(v) for v in rng.integers(1, 10, size=3))
        a, b = operands(rng, dt, ba + (m, k), bb + (k, n))
        check(a, b, run(_mm, {"a": a, "b": b}), dt)


BATCH_CASES = [
    ((2, 3), (3, 4)),
    ((1, 1), (1, 1)),
    ((5, 1), (1, 7)),
    ((1, 8), (8, 1)),
    ((3, 2, 3), (3, 4)),
    ((2, 3), (4, 3, 5)),
    ((1, 2, 3), (4, 3, 2)),
    ((4, 1, 2, 3), (5, 3, 2)),
    ((2, 1, 3, 2, 3), (4, 1, 3, 2)),
    ((1, 1, 1, 2, 3), (3, 2)),
    ((2, 2, 2, 2, 2), (2, 2, 2, 2, 2)),
]


@pytest.mark.parametrize("dt", DTYPES)
def test_batch_patterns(run, dt):
    rng = rng_for("matmul-p", dt)
    for i, (sa, sb) in enumerate(BATCH_CASES):
        a, b = operands(rng, dt, sa, sb)
        got = run(_mm, {"a": a}, constants={"b": b}) if i % 2 else run(_mm, {"a": a, "b": b})
        check(a, b, got, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mkn", [(64, 128, 48), (1, 300, 1), (33, 257, 65), (128, 96, 130),
                                 (7, 1, 9), (200, 3, 1)])
def test_large(run, dt, mkn):
    """Sizes that cross blocking boundaries of an optimised GEMM."""
    rng = rng_for("matmul-l", dt, mkn)
    m, k, n = mkn
    a, b = operands(rng, dt, (m, k), (k, n))
    check(a, b, run(_mm, {"a": a, "b": b}), dt)
    a, b = operands(rng, dt, (3, 1, m, k), (2, k, n))
    check(a, b, run(_mm, {"a": a, "b": b}), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_small_integers_exact(run, dt):
    """Products of small integers sum exactly in any reasonable precision."""
    rng = rng_for("matmul-int", dt)
    t = npdt(dt)
    a = rng.integers(-4, 5, size=(2, 3, 17, 31)).astype(t)
    b = rng.integers(-4, 5, size=(3, 31, 13)).astype(t)
    got = run(_mm, {"a": a, "b": b})
    check_float(got, np.matmul(a.astype(np.float64), b.astype(np.float64)), dt, (2, 3, 17, 13),
                what="matmul small integers")


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt):
    """NaN and Inf propagate (NaN * 0 = NaN, Inf * 0 = NaN, Inf + -Inf = NaN)."""
    t = npdt(dt)
    a = np.array([[1.0, 2.0, 0.0],
                  [np.nan, 0.0, 0.0],
                  [np.inf, 1.0, 0.0],
                  [np.inf, 0.0, 0.0],
                  [1.0, 1.0, 1.0]], t)
    b = np.array([[1.0, 0.0, -1.0],
                  [0.0, 1.0, 2.0],
                  [0.0, 0.0, np.inf]], t)
    with np.errstate(all="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64)
    got = run(_mm, {"a": a, "b": b})
    check_float(got, ref, dt, (5, 3), what="matmul specials")
    # float16 overflow of the sum
    if dt == "float16":
        a = np.full((1, 4), 60000.0, t)
        b = np.ones((4, 1), t)
        check_float(run(_mm, {"a": a, "b": b}), np.array([[np.inf]]), dt, what="matmul f16 overflow")


def test_output_descriptor(run):
    a = np.ones((4, 1, 2, 3), np.float32)
    b = np.ones((5, 3, 6), np.float32)
    got = run(_mm, {"a": a, "b": b})
    check_shape_dtype(got, "float32", (4, 5, 2, 6))


@pytest.mark.parametrize("path", ["default", "portable"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mkn", [(1, 768, 64), (5, 3, 8), (6, 5, 9), (13, 40, 17), (24, 7, 16),
                                 (25, 64, 130), (97, 33, 200), (300, 16, 48), (12, 300, 31)])
def test_product_kernels(ctx, monkeypatch, path, dt, mkn):
    """Products 8 columns wide and more take, on AVX-512 CPUs, the 1x1
    convolution's micro-kernel (6 or 24 rows x up to 64 columns in
    registers, b packed in 64-column blocks: once for a constant); 'portable'
    (WEBNN_CONV_DIRECT=0, read at build) takes BLIS, as other CPUs do.  Row
    counts around the 6 / 12 / 24-row blocks, column tails of 1 to 15 past a
    multiple of 16, more than one 64-column block; b a constant or an input;
    a stack of a over a shared b (one tall product) and over a stack of b."""
    from .conftest import run_graph
    if path == "portable":
        monkeypatch.setenv("WEBNN_CONV_DIRECT", "0")
    rng = rng_for("matmul-kernels", dt, mkn)
    m, k, n = mkn
    for sa, sb in [((m, k), (k, n)), ((3, m, k), (k, n)), ((2, m, k), (2, k, n))]:
        a, b = operands(rng, dt, sa, sb)
        check(a, b, run_graph(ctx, _mm, {"a": a, "b": b}), dt)
        check(a, b, run_graph(ctx, _mm, {"a": a}, constants={"b": b}), dt)


def test_product_kernel_special_values(ctx):
    """NaN and +-Inf in a and in a constant b propagate through the direct
    kernel as through the reference (NaN * 0, Inf * 0, Inf - Inf)."""
    from .conftest import run_graph
    rng = rng_for("matmul-kernel-specials")
    a = rng.uniform(-1, 1, size=(20, 30)).astype(np.float32)
    b = rng.uniform(-1, 1, size=(30, 40)).astype(np.float32)
    a[3, 4], a[7, :] = np.nan, 0.0
    a[9, 2], a[11, 5], a[11, 6] = np.inf, np.inf, -np.inf
    b[5, 33], b[2, 17] = np.inf, 0.0
    b[6, :] = 1.0
    check(a, b, run_graph(ctx, _mm, {"a": a}, constants={"b": b}), "float32")
