"""expand: np.broadcast_to as the reference, bit-exact, every data type,
input ranks 0 to 5, output ranks up to the largest, size-1 dimensions
anywhere; plus the validation steps of #api-mlgraphbuilder-expand."""
import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("expand", "input")
MAX_RANK = min(op_max_rank("expand", "output"), 8)


def run_expand(run, x, new_shape, constant=False):
    f = lambda b, x: b.expand(x, list(new_shape))  # noqa: E731
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def random_case(rng, in_rank, out_rank):
    """(input shape, new shape): the new shape has out_rank dimensions; the
    input takes its last in_rank with some replaced by 1."""
    out = [int(d) for d in rng.integers(1, 5, size=out_rank)]
    shape = [1 if rng.random() < 0.4 else d for d in out[out_rank - in_rank:]]
    return shape, out


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("in_rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, in_rank):
    rng = rng_for("expand", dt, in_rank)
    for k, out_rank in enumerate(range(in_rank, 6)):
        shape, new_shape = random_case(rng, in_rank, out_rank)
        x = data(rng, shape, dt)
        same(run_expand(run, x, new_shape, constant=k % 2 == 1),
             np.broadcast_to(x, new_shape), f"expand {dt} {shape} -> {new_shape}")


def test_patterns(run):
    rng = rng_for("expand-patterns")
    cases = [((), ()), ((), (1,)), ((1,), (7,)), ((3,), (3,)), ((3, 1), (3, 5)),
             ((1, 5), (3, 5)), ((2, 1, 3), (4, 2, 5, 3)), ((1, 1, 1), (2, 3, 4)),
             ((4, 1, 2, 1, 3), (4, 5, 2, 3, 3)), ((2,), (1,) * (MAX_RANK - 1) + (2,)),
             ((1, 2), (2,) * MAX_RANK)]
    for dt in ("float16", "int64", "uint64"):
        for shape, new_shape in cases:
            x = data(rng, shape, dt)
            same(run_expand(run, x, new_shape), np.broadcast_to(x, new_shape),
                 f"expand {dt} {shape} -> {new_shape}")


@pytest.mark.parametrize("dt", ["float32", "uint8", "uint64"])
def test_large(run, dt):
    """Threaded paths: a broadcast row (fill), a repeated row (memcpy), a
    broadcast in the middle."""
    rng = rng_for("expand-large", dt)
    for shape, new_shape in [((257, 1), (257, 301)), ((1, 301), (257, 301)),
                             ((40, 1, 33), (40, 31, 33)), ((), (70001,))]:
        x = data(rng, shape, dt)
        same(run_expand(run, x, new_shape), np.broadcast_to(x, new_shape),
             f"expand {dt} {shape} -> {new_shape}")


# ---- validation (#api-mlgraphbuilder-expand) -------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3]))
    e = lambda shape: lambda l: b.expand(x, shape, label=l)  # noqa: E731
    type_error(e([2, 4]), "expand", "newShape")        # 3 -> 4
    type_error(e([3, 3]), "expand", "newShape")        # 2 -> 3
    type_error(e([3]), "expand", "newShape")           # fewer dimensions
    type_error(e([]), "expand", "newShape")
    type_error(e([0, 2, 3]), "expand", "newShape")     # not a valid dimension
    type_error(e([2**31, 2, 3]), "expand", "newShape")
    type_error(e([1] * (MAX_RANK + 1)), "expand", "newShape")  # output rank
    type_error(e(6), "expand", "newShape")             # an integer, not a sequence
    type_error(e([-1, 3]), "expand", "newShape")       # [EnforceRange] unsigned long
    # more elements than the largest valid dimension
    type_error(e([2**16, 2**16, 2, 3]), "expand", "output")
    assert tuple(b.expand(x, [1, 4, 2, 3]).shape) == (1, 4, 2, 3)
