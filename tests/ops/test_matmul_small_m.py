"""matmul / gemm with few rows: the kernels of a language model's decode step.

- a constant b (the weights) and at most 8 rows of a: on AVX-512 CPUs the
  direct micro-kernel with the columns cut into 16-column vectors shared
  among the threads (csrc/cpu/kernels/conv/direct.c, direct_small_m);
  elsewhere BLIS;
- b an input (attention's products against the cache) and one row: a loop
  without packing (csrc/cpu/gemm.c, sgemm_rows) on every CPU; more
  rows take BLIS.

Row counts 1..9 (9: past both limits), columns and depths that are not
multiples of the 16-lane vector (nor of the 64-column blocks), pieces that
start and end inside a block, weights large enough to be shared among the
threads; fused epilogues and gemm's bias; NaN and infinities.

Reference: np.matmul in float64, with the K-term dot product bound of
test_matmul.py (|got - ref| <= K eps32 (|A| @ |B|) + 1 ulp).
"""
import numpy as np
import pytest

from .conftest import check_float, run_graph, rng_for
from .test_matmul import check

ROWS = list(range(1, 10))
# (K, N): column tails of 1 to 15 past a multiple of 16, a block and a bit;
# weights of 1 MiB and more, shared among the threads, in whole 64-column
# blocks (576 x 580: 10 blocks, the last 4 columns past a vector) or, with
# fewer than two blocks a thread, in vectors (2400 x 100: 7 vectors); 8 rows
# of 129 x 1100 (threads by the flops)
KN = [(1, 8), (7, 9), (17, 15), (3, 17), (33, 31), (64, 33), (100, 63), (5, 65),
      (40, 100), (300, 130), (576, 200), (129, 1100), (576, 580), (2400, 100)]


def _mm(bld, a, b):
    return bld.matmul(a, b)


def _operands(rng, sa, sb):
    return (rng.uniform(-1, 1, size=sa).astype(np.float32),
            rng.uniform(-1, 1, size=sb).astype(np.float32))


@pytest.mark.parametrize("k,n", KN)
def test_constant_b_rows(ctx, k, n):
    rng = rng_for("matmul-small-m", k, n)
    for m in ROWS:
        a, b = _operands(rng, (m, k), (k, n))
        check(a, b, run_graph(ctx, _mm, {"a": a}, constants={"b": b}), "float32")


@pytest.mark.parametrize("k,n", [(17, 15), (64, 73), (300, 130)])
def test_constant_b_stack(ctx, k, n):
    """a stack of a over a shared b is one product of its rows (3 x 1..3)."""
    rng = rng_for("matmul-small-m-stack", k, n)
    for m in (1, 2, 3):
        a, b = _operands(rng, (3, m, k), (k, n))
        check(a, b, run_graph(ctx, _mm, {"a": a}, constants={"b": b}), "float32")


@pytest.mark.parametrize("k,n", [(33, 31), (300, 130), (576, 580), (2400, 100)])
def test_fused_epilogues(ctx, k, n):
    """matmul -> add (a residual) -> relu / clamp, applied by the kernel as
    each piece is stored; gemm's bias (c broadcast along the rows)."""
    rng = rng_for("matmul-small-m-epi", k, n)
    for m in (1, 2, 5, 9):
        a, b = _operands(rng, (m, k), (k, n))
        r = rng.uniform(-2, 2, size=(m, n)).astype(np.float32)
        c = rng.uniform(-2, 2, size=(n,)).astype(np.float32)
        ref, atol = _ref(a, b)
        got = run_graph(ctx, lambda bld, a, r, b: bld.relu(bld.add(bld.matmul(a, b), r)),
                        {"a": a, "r": r}, constants={"b": b})
        check_float(got, np.maximum(ref + r, 0), "float32", ref.shape, ulps=1,
                    atol=atol + 2.0**-23 * np.abs(ref + r), what=f"relu(a b + r) {m}x{k}x{n}")
        got = run_graph(ctx, lambda bld, a, b: bld.clamp(bld.matmul(a, b),
                                                         {"minValue": -0.5, "maxValue": 0.25}),
                        {"a": a}, constants={"b": b})
        check_float(got, np.clip(ref, -0.5, 0.25), "float32", ref.shape, ulps=1, atol=atol,
                    what=f"clamp(a b) {m}x{k}x{n}")
        got = run_graph(ctx, lambda bld, a, b, c: bld.gemm(a, b, {"c": c}),
                        {"a": a}, constants={"b": b, "c": c})
        check_float(got, ref + c, "float32", ref.shape, ulps=1,
                    atol=atol + 2.0**-23 * np.abs(ref + c), what=f"gemm a b + c {m}x{k}x{n}")
        bt = np.ascontiguousarray(b.T)
        got = run_graph(ctx, lambda bld, a, b: bld.gemm(a, b, {"bTranspose": True}),
                        {"a": a}, constants={"b": bt})
        check_float(got, ref, "float32", ref.shape, ulps=1, atol=atol,
                    what=f"gemm a b^T {m}x{k}x{n}")


def _ref(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return a64 @ b64, a.shape[-1] * 2.0**-23 * (np.abs(a64) @ np.abs(b64))


# (K, N) of products against an input b: attention's 64 x 73 and 73 x 64,
# one column, one vector, one past a 64-column block, more than two blocks
KN_INPUT = [(1, 1), (3, 15), (64, 73), (73, 64), (5, 16), (16, 17), (2, 63), (9, 65),
            (40, 130), (100, 200)]


@pytest.mark.parametrize("k,n", KN_INPUT)
def test_input_b_batched(ctx, k, n):
    """a [9, m, k] times b [9, k, n], both inputs (one product per matrix)."""
    rng = rng_for("matmul-small-rows", k, n)
    for m in ROWS:
        a, b = _operands(rng, (9, m, k), (9, k, n))
        check(a, b, run_graph(ctx, _mm, {"a": a, "b": b}), "float32")
        a, b = _operands(rng, (m, k), (k, n))
        check(a, b, run_graph(ctx, _mm, {"a": a, "b": b}), "float32")


@pytest.mark.parametrize("where", ["input", "constant"])
def test_special_values(ctx, where):
    """NaN and +-Inf in a and b propagate as in the reference (NaN * 0,
    Inf * 0, Inf - Inf), whichever kernel; zeros elsewhere stay exact."""
    rng = rng_for("matmul-small-m-specials", where)
    for m in (1, 3, 4, 5):
        a, b = _operands(rng, (m, 70), (70, 90))
        a[0, 4] = np.nan
        a[m - 1, 2], b[5, 33], b[2, 17] = np.inf, np.inf, 0.0
        b[6, :] = -np.inf
        if m > 2:
            a[1, :] = 0.0
        if where == "input":
            got = run_graph(ctx, _mm, {"a": a, "b": b})
        else:
            got = run_graph(ctx, _mm, {"a": a}, constants={"b": b})
        with np.errstate(all="ignore"):
            check(a, b, got, "float32")
