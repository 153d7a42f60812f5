"""reverse: np.flip as the reference, bit-exact, every data type, ranks 0 to
5 and the largest, options.axes absent (every axis), empty (none), and every
subset of the axes in any order; plus the validation steps of
#api-mlgraphbuilder-reverse-method."""
import itertools

import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("reverse", "input")
MAX_RANK = min(op_max_rank("reverse", "input"), 8)


def run_reverse(run, x, axes=None, constant=False):
    def f(b, x):
        return b.reverse(x) if axes is None else b.reverse(x, axes=list(axes))
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def ref_reverse(x, axes):
    if axes is None:
        axes = range(x.ndim)
    return np.flip(x, tuple(axes)) if x.ndim else x.copy()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_every_subset(run, dt, rank):
    rng = rng_for("reverse", dt, rank)
    x = data(rng, [int(d) for d in rng.integers(1, 5, size=rank)], dt)
    same(run_reverse(run, x), ref_reverse(x, None), f"reverse {dt} {x.shape} default")
    subsets = [c for n in range(rank + 1) for c in itertools.combinations(range(rank), n)]
    if rank == 5:
        subsets = subsets[::3]
    for k, axes in enumerate(subsets):
        axes = [int(a) for a in rng.permutation(axes)] if axes else []
        same(run_reverse(run, x, axes, constant=k % 4 == 1 and rank > 0),
             ref_reverse(x, axes), f"reverse {dt} {x.shape} axes {axes}")


def test_max_rank(run):
    rng = rng_for("reverse-max")
    x = data(rng, (2,) * MAX_RANK, "uint64")
    for axes in (None, [0], [MAX_RANK - 1], list(range(0, MAX_RANK, 2))):
        same(run_reverse(run, x, axes), ref_reverse(x, axes), f"reverse max rank {axes}")


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64"])
def test_large(run, dt):
    rng = rng_for("reverse-large", dt)
    x = data(rng, (43, 37, 51), dt)
    for axes in (None, [2], [0], [1], [0, 2]):
        same(run_reverse(run, x, axes), ref_reverse(x, axes), f"reverse {dt} {axes}")


# ---- validation (#api-mlgraphbuilder-reverse-method) -----------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3, 4]))
    r = lambda axes: lambda l: b.reverse(x, axes=axes, label=l)  # noqa: E731
    type_error(r([3]), "reverse", "options.axes")          # out of range
    type_error(r([0, 5]), "reverse", "options.axes")
    type_error(r([1, 1]), "reverse", "options.axes")       # duplicate
    type_error(r([0, 2, 0]), "reverse", "options.axes")
    type_error(r(0), "reverse", "options.axes")            # not a sequence
    type_error(r([-1]), "reverse", "axes")                 # EnforceRange
    assert tuple(b.reverse(x, axes=[]).shape) == (2, 3, 4)
    assert tuple(b.reverse(x, axes=[2, 0]).shape) == (2, 3, 4)
    s = b.input("s", desc("int8", []))
    assert tuple(b.reverse(s).shape) == ()
    type_error(lambda l: b.reverse(s, axes=[0], label=l), "reverse", "options.axes")
