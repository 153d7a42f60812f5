"""triangular: np.triu / np.tril (applied to the last two dimensions) as the
reference, bit-exact, every data type, ranks 2 to 5 and the largest, upper
and lower, diagonals from far below to far above (the ends of long
included), square and non-square matrices; plus the validation steps of
#api-mlgraphbuilder-triangular."""
import numpy as np
import pytest

from .conftest import op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("triangular", "input")
MAX_RANK = min(op_max_rank("triangular", "input"), 8)
LONG_MIN, LONG_MAX = -2**31, 2**31 - 1


def run_triangular(run, x, upper=None, diagonal=None, constant=False):
    opts = {}
    if upper is not None:
        opts["upper"] = upper
    if diagonal is not None:
        opts["diagonal"] = diagonal
    f = lambda b, x: b.triangular(x, opts)  # noqa: E731
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def ref_triangular(x, upper=True, diagonal=0):
    # np.triu / np.tril take k as a Python int, any size
    return np.triu(x, diagonal) if upper else np.tril(x, diagonal)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [2, 3, 4, 5])
def test_random(run, dt, rank):
    rng = rng_for("triangular", dt, rank)
    shape = [int(d) for d in rng.integers(1, 4, size=rank - 2)] + \
        [int(d) for d in rng.integers(1, 7, size=2)]
    x = data(rng, shape, dt)
    same(run_triangular(run, x), ref_triangular(x), f"triangular {dt} {shape} defaults")
    for k, (upper, diagonal) in enumerate([(True, 0), (False, 0), (True, 1), (True, -1),
                                           (False, 2), (False, -2), (True, 4), (False, -5)]):
        same(run_triangular(run, x, upper, diagonal, constant=k % 3 == 1),
             ref_triangular(x, upper, diagonal),
             f"triangular {dt} {shape} upper={upper} diagonal={diagonal}")


def test_fixed(run):
    rng = rng_for("triangular-fixed")
    x = data(rng, (3, 4, 7), "float32")
    for upper in (True, False):
        for diagonal in range(-9, 10):
            same(run_triangular(run, x, upper, diagonal), ref_triangular(x, upper, diagonal),
                 f"triangular upper={upper} diagonal={diagonal}")
        for diagonal in (LONG_MIN, LONG_MIN + 1, LONG_MAX - 1, LONG_MAX):
            same(run_triangular(run, x, upper, diagonal), ref_triangular(x, upper, diagonal),
                 f"triangular upper={upper} diagonal={diagonal}")
    y = data(rng, (2,) * MAX_RANK, "uint64")
    same(run_triangular(run, y, False, 0), ref_triangular(y, False, 0), "max rank")


def test_spec_example(run):
    """The spec's example, hand-checked."""
    x = np.array([[7, 1, 2], [9, 4, 8], [2, 6, 3]], np.float32)
    expected = {
        (True, 0): [[7, 1, 2], [0, 4, 8], [0, 0, 3]],
        (True, 1): [[0, 1, 2], [0, 0, 8], [0, 0, 0]],
        (True, -1): [[7, 1, 2], [9, 4, 8], [0, 6, 3]],
        (False, 0): [[7, 0, 0], [9, 4, 0], [2, 6, 3]],
        (False, 1): [[7, 1, 0], [9, 4, 8], [2, 6, 3]],
        (False, -1): [[0, 0, 0], [9, 0, 0], [2, 6, 0]],
    }
    for (upper, diagonal), e in expected.items():
        same(run_triangular(run, x, upper, diagonal), np.array(e, np.float32),
             f"spec example upper={upper} diagonal={diagonal}")


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64"])
def test_large(run, dt):
    rng = rng_for("triangular-large", dt)
    x = data(rng, (3, 131, 97), dt)
    for upper, diagonal in [(True, 0), (False, 5), (True, -40)]:
        same(run_triangular(run, x, upper, diagonal), ref_triangular(x, upper, diagonal),
             f"triangular {dt} upper={upper} diagonal={diagonal}")


# ---- validation (#api-mlgraphbuilder-triangular) ---------------------------
def test_validation(ctx):
    b = builder(ctx)
    for shape in ([], [5]):
        x = b.input(f"x{len(shape)}", desc("float32", shape))
        type_error(lambda l: b.triangular(x, label=l), "triangular", "input")
    m = b.input("m", desc("float32", [3, 3]))
    type_error(lambda l: b.triangular(m, {"diagonal": 2**31}, label=l), "triangular",
               "diagonal")                                    # [EnforceRange] long
    type_error(lambda l: b.triangular(m, {"diagonal": -2**31 - 1}, label=l), "triangular",
               "diagonal")
    assert tuple(b.triangular(m, {"upper": False, "diagonal": -2**31}).shape) == (3, 3)
