"""slice: NumPy basic slicing x[start:start+size:stride] as the reference,
bit-exact, every data type, ranks 0 to 5 and the largest, with and without
options.strides (strides larger than the size included); plus the
validation steps of #api-mlgraphbuilder-slice."""
import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("slice", "input")
MAX_RANK = min(op_max_rank("slice", "input"), 8)


def ref_slice(x, starts, sizes, strides=None):
    strides = strides or [1] * x.ndim
    return x[tuple(slice(a, a + n, s) for a, n, s in zip(starts, sizes, strides))]


def run_slice(run, x, starts, sizes, strides=None, constant=False):
    def f(b, x):
        if strides is None:
            return b.slice(x, list(starts), list(sizes))
        return b.slice(x, list(starts), list(sizes), {"strides": list(strides)})
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def random_slice(rng, shape, with_strides):
    starts = [int(rng.integers(0, d)) for d in shape]
    sizes = [int(rng.integers(1, d - a + 1)) for a, d in zip(starts, shape)]
    strides = [int(rng.integers(1, 5)) for _ in shape] if with_strides else None
    return starts, sizes, strides


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, rank):
    rng = rng_for("slice", dt, rank)
    x = data(rng, [int(d) for d in rng.integers(1, 7, size=rank)], dt)
    for k in range(4):
        starts, sizes, strides = random_slice(rng, x.shape, with_strides=k >= 2)
        # (conftest's constants turn 0-d arrays into 1-d ones)
        same(run_slice(run, x, starts, sizes, strides, constant=k == 1 and rank > 0),
             ref_slice(x, starts, sizes, strides),
             f"slice {dt} {x.shape} starts {starts} sizes {sizes} strides {strides}")


def test_fixed(run):
    rng = rng_for("slice-fixed")
    x = data(rng, (5, 6, 7), "float32")
    cases = [([0, 0, 0], [5, 6, 7], None),          # the whole tensor
             ([0, 0, 0], [5, 6, 7], [1, 1, 1]),     # explicit unit strides
             ([4, 5, 6], [1, 1, 1], None),          # the last element
             ([1, 2, 3], [4, 4, 4], [10, 10, 10]),  # stride > size: one element
             ([0, 1, 0], [5, 5, 7], [2, 3, 7]),
             ([0, 0, 1], [5, 6, 6], [1, 1, 2])]     # stride on the last axis only
    for starts, sizes, strides in cases:
        same(run_slice(run, x, starts, sizes, strides), ref_slice(x, starts, sizes, strides),
             f"slice starts {starts} sizes {sizes} strides {strides}")
    y = data(rng, (2,) * MAX_RANK, "uint64")
    starts, sizes = [1, 0] * (MAX_RANK // 2), [1, 2] * (MAX_RANK // 2)
    same(run_slice(run, y, starts, sizes), ref_slice(y, starts, sizes), "slice max rank")
    s = data(rng, (), "int64")
    same(run_slice(run, s, [], []), s, "slice rank 0")
    same(run_slice(run, s, [], [], []), s, "slice rank 0 strides []")


@pytest.mark.parametrize("dt", ["float32", "float16", "uint8", "int64"])
def test_large(run, dt):
    rng = rng_for("slice-large", dt)
    x = data(rng, (41, 37, 53), dt)
    for starts, sizes, strides in [([1, 2, 3], [40, 35, 50], None),
                                   ([0, 0, 1], [41, 37, 52], [1, 1, 3]),
                                   ([0, 1, 0], [41, 36, 53], [1, 2, 1])]:
        same(run_slice(run, x, starts, sizes, strides), ref_slice(x, starts, sizes, strides),
             f"slice {dt} starts {starts} sizes {sizes} strides {strides}")
    y = data(rng, (200003,), dt)
    same(run_slice(run, y, [7], [199996], [3]), y[7::3], "slice 1-D strided")


# ---- validation (#api-mlgraphbuilder-slice) --------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [4, 5]))

    def s(starts, sizes, strides=None):
        opts = {} if strides is None else {"strides": strides}
        return lambda l: b.slice(x, starts, sizes, opts, label=l)

    type_error(s([0, 0], [0, 5]), "slice", "sizes")               # a size of 0
    type_error(s([0], [4, 5]), "slice", "starts")                 # lengths != rank
    type_error(s([0, 0, 0], [4, 5]), "slice", "starts")
    type_error(s([0, 0], [4]), "slice", "sizes")
    type_error(s([0, 0], [4, 5], [1]), "slice", "options.strides")
    type_error(s([0, 0], [4, 5], [1, 0]), "slice", "options.strides")   # stride 0
    type_error(s([5, 0], [1, 5]), "slice", "starts")              # start > dimension
    type_error(s([4, 0], [1, 5]), "slice", "sizes")               # start + size > dim
    type_error(s([1, 0], [4, 5]), "slice", "sizes")
    type_error(s([0, 2**32 - 1], [1, 2**32 - 1]), "slice", "starts")  # no wrap-around
    type_error(s([0, 1], [1, 2**32 - 1]), "slice", "sizes")
    type_error(s(0, [4, 5]), "slice", "starts")                   # not a sequence
    type_error(s([0, 0], [4, 5], 1), "slice", "options.strides")
    type_error(s([0, -1], [4, 5]), "slice", "starts")             # EnforceRange
    assert tuple(b.slice(x, [1, 1], [3, 4], {"strides": [2, 3]}).shape) == (2, 2)
