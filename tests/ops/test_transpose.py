"""transpose: np.transpose as the reference, bit-exact, every data type,
every permutation of ranks 0 to 4, random ones of rank 5 and the largest,
the default (reversed) permutation; large tensors for the blocked 2-D
transpose (edges that are not multiples of the block or SIMD width); plus the
validation steps of #api-mlgraphbuilder-transpose."""
import itertools

import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("transpose", "input")
MAX_RANK = min(op_max_rank("transpose", "input"), 8)


def run_transpose(run, x, perm=None, constant=False):
    def f(b, x):
        return b.transpose(x) if perm is None else b.transpose(x, permutation=list(perm))
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4])
def test_every_permutation(run, dt, rank):
    rng = rng_for("transpose", dt, rank)
    x = data(rng, [2, 3, 4, 5][:rank], dt)
    same(run_transpose(run, x), np.transpose(x), f"transpose {dt} {x.shape} default")
    for k, perm in enumerate(itertools.permutations(range(rank))):
        same(run_transpose(run, x, perm, constant=k % 3 == 1), np.transpose(x, perm),
             f"transpose {dt} {x.shape} {perm}")


@pytest.mark.parametrize("dt", DTYPES)
def test_random_high_rank(run, dt):
    rng = rng_for("transpose-high", dt)
    for rank in (5, MAX_RANK):
        x = data(rng, [int(d) for d in rng.integers(1, 4, size=rank)], dt)
        same(run_transpose(run, x), np.transpose(x), f"transpose {dt} {x.shape} default")
        for _ in range(6):
            perm = [int(p) for p in rng.permutation(rank)]
            same(run_transpose(run, x, perm), np.transpose(x, perm),
                 f"transpose {dt} {x.shape} {perm}")


@pytest.mark.parametrize("dt", DTYPES)
def test_blocked(run, dt):
    """Sizes that exercise the blocked transpose: 2-D with edges that are
    not multiples of 32 or of the SIMD width, short last dimensions (the
    block then spans two output dimensions), and the attention-head case."""
    rng = rng_for("transpose-blocked", dt)
    cases = [((67, 45), None), ((3, 33, 70), (0, 2, 1)), ((5, 130, 7), (2, 1, 0)),
             ((9, 6, 35, 5), (3, 2, 1, 0)), ((4, 16, 3, 8), (0, 2, 1, 3)),
             ((2, 20, 9, 31), (0, 2, 3, 1)), ((2, 31, 20, 9), (0, 3, 1, 2)),
             ((4, 1, 37, 1, 6), (4, 3, 2, 1, 0)),
             # 2 or 3 planes interleaved (nchw -> nhwc of an RGB image): the
             # blocks of tall thin columns, rows not a multiple of the block
             ((2, 3, 45, 47), (0, 2, 3, 1)), ((1, 2, 1061), (0, 2, 1)),
             ((3, 5, 77), (1, 2, 0)), ((7, 3, 2, 33), (0, 3, 1, 2))]
    for shape, perm in cases:
        x = data(rng, shape, dt)
        same(run_transpose(run, x, perm), np.transpose(x, perm),
             f"transpose {dt} {shape} {perm}")


@pytest.mark.parametrize("dt", DTYPES)
def test_interleaved_rows(run, dt):
    """[P, A, B] -> [P, B, A] with 2 <= A <= 8 (ShuffleNet's channel shuffle
    in nhwc): the interleaving loop for 4-byte types (A 2, 3, 4 and 8
    specialised, others generic), one block (P = 1) and many (threaded),
    B below and above a vector; other types take the general paths."""
    rng = rng_for("transpose-interleave", dt)
    cases = [((1, 4, 34), (0, 2, 1)), ((4, 34), None), ((7, 7, 4, 136), (0, 1, 3, 2)),
             ((1, 28, 28, 4, 34), (0, 1, 2, 4, 3)), ((1, 14, 14, 2, 58), (0, 1, 2, 4, 3)),
             ((3, 5, 3, 40), (0, 1, 3, 2)), ((9, 8, 16), (0, 2, 1)), ((6, 5, 3), (0, 2, 1)),
             ((2, 6, 21), (0, 2, 1)), ((130, 7, 2), (0, 2, 1)), ((2, 2, 2), (0, 2, 1))]
    for shape, perm in cases:
        x = data(rng, shape, dt)
        same(run_transpose(run, x, perm), np.transpose(x, perm),
             f"transpose {dt} {shape} {perm}")


@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "int8"])
def test_large(run, dt):
    """Threaded paths."""
    rng = rng_for("transpose-large", dt)
    for shape, perm in [((300, 257), None), ((2, 64, 12, 32), (0, 2, 1, 3)),
                        ((2, 64, 12, 32), (0, 2, 3, 1)), ((70001, 2), None),
                        ((2, 3, 224, 224), (0, 2, 3, 1)), ((2, 70001), None)]:
        x = data(rng, shape, dt)
        same(run_transpose(run, x, perm), np.transpose(x, perm),
             f"transpose {dt} {shape} {perm}")


# ---- validation (#api-mlgraphbuilder-transpose) ----------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3, 4]))
    t = lambda p: lambda l: b.transpose(x, permutation=p, label=l)  # noqa: E731
    arg = "options.permutation"
    type_error(t([0, 1]), "transpose", arg)            # size != rank
    type_error(t([0, 1, 2, 3]), "transpose", arg)
    type_error(t([]), "transpose", arg)
    type_error(t([0, 1, 3]), "transpose", arg)         # out of range
    type_error(t([0, 1, 1]), "transpose", arg)         # duplicate
    type_error(t(0), "transpose", arg)                 # not a sequence
    type_error(lambda l: b.transpose(x, permutation=[0, -1, 2], label=l), "transpose",
               "permutation")                          # [EnforceRange] unsigned long
    assert tuple(b.transpose(x).shape) == (4, 3, 2)
    assert tuple(b.transpose(x, permutation=[1, 2, 0]).shape) == (3, 4, 2)
    s = b.input("s", desc("int8", []))
    assert tuple(b.transpose(s, permutation=[]).shape) == ()
    type_error(lambda l: b.transpose(s, permutation=[0], label=l), "transpose", arg)
