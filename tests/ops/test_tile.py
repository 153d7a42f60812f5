"""tile: np.tile as the reference, bit-exact, every data type, ranks 0 to 5
and the largest, repetitions of 1 and more on any axis; plus the validation
steps of #api-mlgraphbuilder-tile."""
import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("tile", "input")
MAX_RANK = min(op_max_rank("tile", "input"), 8)


def run_tile(run, x, reps, constant=False):
    f = lambda b, x: b.tile(x, list(reps))  # noqa: E731
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def ref_tile(x, reps):
    return np.tile(x, reps) if x.ndim else x.copy()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, rank):
    rng = rng_for("tile", dt, rank)
    for k in range(3):
        x = data(rng, [int(d) for d in rng.integers(1, 4, size=rank)], dt)
        reps = [int(r) for r in rng.integers(1, 4, size=rank)]
        same(run_tile(run, x, reps, constant=k == 1 and rank > 0), ref_tile(x, reps),
             f"tile {dt} {x.shape} {reps}")


def test_fixed(run):
    rng = rng_for("tile-fixed")
    for shape, reps in [((3,), (1,)), ((3,), (5,)), ((2, 3), (1, 4)), ((2, 3), (4, 1)),
                        ((1, 1), (3, 2)), ((2, 1, 3), (1, 5, 1)),
                        ((2,) * MAX_RANK, (1, 2) * (MAX_RANK // 2))]:
        x = data(rng, shape, "uint64")
        same(run_tile(run, x, reps), ref_tile(x, reps), f"tile {shape} {reps}")


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64"])
def test_large(run, dt):
    rng = rng_for("tile-large", dt)
    for shape, reps in [((37, 53), (3, 5)), ((3,), (40000,)), ((40000, 1), (1, 3)),
                        ((5, 7, 3), (2, 40, 20))]:
        x = data(rng, shape, dt)
        same(run_tile(run, x, reps), ref_tile(x, reps), f"tile {dt} {shape} {reps}")


# ---- validation (#api-mlgraphbuilder-tile) ---------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3]))
    t = lambda reps: lambda l: b.tile(x, reps, label=l)  # noqa: E731
    type_error(t([2]), "tile", "repetitions")                # size != rank
    type_error(t([1, 1, 1]), "tile", "repetitions")
    type_error(t([1, 0]), "tile", "repetitions")             # a repetition of 0
    type_error(t([2**30, 1]), "tile", "repetitions")         # 2 * 2**30 > 2**31 - 1
    type_error(t([1, 2**32 - 1]), "tile", "repetitions")     # no wrap-around
    type_error(t(2), "tile", "repetitions")                  # not a sequence
    type_error(t([1, -2]), "tile", "repetitions")
    type_error(t([2**29, 2]), "tile", "output")              # too many elements
    assert tuple(b.tile(x, [3, 2]).shape) == (6, 6)
    s = b.input("s", desc("int8", []))
    assert tuple(b.tile(s, []).shape) == ()
