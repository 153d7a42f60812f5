"""split: np.split as the reference, bit-exact, every data type, ranks 1 to
5 and the largest, splits as a number (equal parts) and as a sequence of
sizes, options.axis default (0) and every other axis; the output count limit
of this implementation (64); plus the validation steps of
#api-mlgraphbuilder-split."""
import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("split", "input")
MAX_RANK = min(op_max_rank("split", "input"), 8)
MAX_OUTPUTS = 64


def ref_split(x, splits, axis):
    if isinstance(splits, int):
        return np.split(x, splits, axis)
    return np.split(x, np.cumsum(splits)[:-1], axis)


def run_split(ctx, x, splits, axis=None, constant=False):
    b = builder(ctx)
    if constant:
        xi = b.constant(desc(str(x.dtype), x.shape), x)
    else:
        xi = b.input("x", desc(str(x.dtype), x.shape))
    outs = b.split(xi, splits) if axis is None else b.split(xi, splits, {"axis": axis})
    assert isinstance(outs, list)
    g = b.build({f"y{i}": o for i, o in enumerate(outs)})
    res = ctx.compute(g, {} if constant else {"x": x})
    return [res[f"y{i}"] for i in range(len(outs))]


def check(ctx, x, splits, axis=None, constant=False, what=""):
    got = run_split(ctx, x, splits, axis, constant)
    ref = ref_split(x, splits, 0 if axis is None else axis)
    assert len(got) == len(ref), f"{what}: {len(got)} outputs, expected {len(ref)}"
    for i, (g, r) in enumerate(zip(got, ref)):
        same(g, r, f"{what} output {i}")


def random_sizes(rng, total):
    cuts = sorted(int(c) for c in rng.choice(np.arange(1, total), size=int(rng.integers(
        0, min(total - 1, 4) + 1)), replace=False)) if total > 1 else []
    return [b - a for a, b in zip([0] + cuts, cuts + [total])]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_random(ctx, dt, rank):
    rng = rng_for("split", dt, rank)
    shape = [int(d) for d in rng.integers(1, 5, size=rank)]
    for axis in [None] + list(range(rank)):
        ax = 0 if axis is None else axis
        s = list(shape)
        s[ax] = int(rng.choice([1, 2, 3, 4, 6, 7]))
        x = data(rng, s, dt)
        divisors = [n for n in range(1, s[ax] + 1) if s[ax] % n == 0]
        n = int(rng.choice(divisors))
        check(ctx, x, n, axis, constant=ax % 2 == 1, what=f"split {dt} {s} {n} axis {axis}")
        sizes = random_sizes(rng, s[ax])
        check(ctx, x, sizes, axis, what=f"split {dt} {s} {sizes} axis {axis}")


def test_fixed(ctx):
    rng = rng_for("split-fixed")
    x = data(rng, (6, 4), "int64")
    check(ctx, x, 1, what="one part")
    check(ctx, x, [6], what="one size")
    check(ctx, x, 6, what="six parts")
    check(ctx, x, [1] * 4, 1, what="size-1 parts")
    check(ctx, x, [3, 1], 1, what="3 + 1")
    y = data(rng, (2,) * (MAX_RANK - 1) + (5,), "uint64")
    check(ctx, y, [2, 3], MAX_RANK - 1, what="max rank")


def test_output_limit(ctx):
    """This implementation gives at most 64 outputs (a valid tensor count
    may be up to 8192): 64 build, 65 is a TypeError that says so."""
    rng = rng_for("split-limit")
    x = data(rng, (2, MAX_OUTPUTS), "float16")
    check(ctx, x, MAX_OUTPUTS, 1, what="64 parts")
    check(ctx, x, [1] * MAX_OUTPUTS, 1, what="64 sizes")
    b = builder(ctx)
    y = b.input("y", desc("float32", [130]))
    for splits in (MAX_OUTPUTS + 1, [2] * (MAX_OUTPUTS + 1)):
        msg = type_error(lambda l: b.split(y, splits, label=l), "split", "splits")
        assert "64" in msg, msg


@pytest.mark.parametrize("dt", ["float32", "float16", "uint8", "int64"])
def test_large(ctx, dt):
    rng = rng_for("split-large", dt)
    x = data(rng, (37, 41, 53), dt)
    check(ctx, x, [10, 1, 30], 1, what=f"split {dt} axis 1")
    check(ctx, x, [50, 3], 2, what=f"split {dt} axis 2")
    check(ctx, x, [36, 1], 0, what=f"split {dt} axis 0")


# ---- validation (#api-mlgraphbuilder-split) --------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [6, 4]))
    sp = lambda splits, **o: lambda l: b.split(x, splits, o, label=l)  # noqa: E731
    type_error(sp(2, axis=2), "split", "options.axis")         # axis >= rank
    type_error(sp([6], axis=5), "split", "options.axis")
    type_error(sp(0), "split", "splits")                       # not a valid count
    type_error(sp(8193), "split", "splits")
    type_error(sp(4), "split", "splits")                       # 6 % 4 != 0
    type_error(sp(5, axis=1), "split", "splits")
    type_error(sp([]), "split", "splits")                      # empty sequence
    type_error(sp([3, 0, 3]), "split", "splits")               # a size of 0
    type_error(sp([3, 2]), "split", "splits")                  # sum != 6
    type_error(sp([3, 4]), "split", "splits")
    type_error(sp([2**32 - 1, 7]), "split", "splits")          # no wrap-around
    type_error(sp(-1), "split", "splits")                      # EnforceRange
    type_error(lambda l: b.split(x, 2, {"axis": -1}, label=l), "split", "axis")
    s = b.input("s", desc("float32", []))
    type_error(lambda l: b.split(s, 1, label=l), "split", "input")  # rank 0
    outs = b.split(x, [1, 5])
    assert [tuple(o.shape) for o in outs] == [(1, 4), (5, 4)]
    outs = b.split(x, 2, {"axis": 1})
    assert [tuple(o.shape) for o in outs] == [(6, 2), (6, 2)]
