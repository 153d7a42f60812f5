"""concat: NumPy's np.concatenate as the reference, bit-exact, for every data
type, ranks 1 to 5 (and the largest), every axis, 1 to many inputs, inputs
and constants mixed; plus the validation steps of the spec
(#api-mlgraphbuilder-concat).

The helpers at the top (bits, data, same, type_error) are shared by the
other data movement tests (expand, transpose, slice, split, tile, reverse,
triangular, pad), which import them from here."""
import numpy as np
import pytest

import webnn

from .conftest import npdt, op_dtypes, op_max_rank, rng_for, specials

# ---- shared by the data movement tests (test_concat, test_expand, ...) ------
# These operators move values without computing on them, so the check is
# bit-exact: NaN payloads, -0.0, subnormals and 64-bit integer extremes must
# come through unchanged.  Inputs are random bytes (any bit pattern of the
# type) with the type's edge values mixed in.


def bits(a):
    a = np.array(a, order="C")  # (np.ascontiguousarray makes 0-d arrays 1-d)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def data(rng, shape, dt):
    """Random bit patterns of `dt` with its edge values (NaN, +-Inf, -0,
    subnormals, largest finite / INT_MIN, INT_MAX, UINT64_MAX, ...) at random
    places."""
    t = npdt(dt)
    n = int(np.prod(shape, dtype=np.int64))
    flat = rng.integers(0, 256, size=n * t.itemsize, dtype=np.uint8).view(t).copy()
    sp = rng.permutation(specials(dt))
    k = min(n, sp.size)
    flat[rng.choice(n, size=k, replace=False)] = sp[:k]
    return flat.reshape(shape)


def same(got, ref, what):
    """dtype, shape and every element's bits equal."""
    ref = np.array(ref, order="C")
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == ref.dtype, f"{what}: dtype {got.dtype}, expected {ref.dtype}"
    assert got.shape == ref.shape, f"{what}: shape {got.shape}, expected {ref.shape}"
    bad = bits(got) != bits(ref)
    if np.any(bad):
        idx = [tuple(int(i) for i in ix) for ix in zip(*np.nonzero(bad))][:5] if got.ndim else [()]
        pytest.fail(f"{what}: {int(np.count_nonzero(bad))} of {bad.size} elements differ; "
                    + "; ".join(f"at {ix}: got {got[ix]!r}, expected {ref[ix]!r}" for ix in idx),
                    pytrace=False)


def type_error(fn, op, arg, label="the-label"):
    """fn(label) raises a TypeError whose message names the operator, the
    label and the argument."""
    with pytest.raises(TypeError) as info:
        fn(label)
    msg = str(info.value)
    for word in (op, label, f"'{arg}'"):
        assert word in msg, f"message {msg!r} does not mention {word!r}"
    return msg


def desc(dt, shape):
    return {"dataType": dt, "shape": list(shape)}


def builder(ctx):
    return webnn.MLGraphBuilder(ctx)


# ---- concat -----------------------------------------------------------------
DTYPES = op_dtypes("concat", "inputs")


def run_concat(ctx, arrays, axis, constant=()):
    """concat of arrays (those whose index is in `constant` as constants)."""
    b = builder(ctx)
    ops, feeds = [], {}
    for i, a in enumerate(arrays):
        if i in constant:
            ops.append(b.constant(desc(str(a.dtype), a.shape), np.ascontiguousarray(a)))
        else:
            ops.append(b.input(f"x{i}", desc(str(a.dtype), a.shape)))
            feeds[f"x{i}"] = a
    g = b.build({"y": b.concat(ops, axis)})
    return ctx.compute(g, feeds)["y"]


def random_inputs(rng, dt, rank, axis, n, max_dim=4):
    base = [int(d) for d in rng.integers(1, max_dim + 1, size=rank)]
    arrays = []
    for _ in range(n):
        s = list(base)
        s[axis] = int(rng.integers(1, max_dim + 2))
        arrays.append(data(rng, s, dt))
    return arrays


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_random(ctx, dt, rank):
    rng = rng_for("concat", dt, rank)
    for axis in range(rank):
        for n in (1, 2, 3):
            arrays = random_inputs(rng, dt, rank, axis, n)
            constant = {1} if n > 1 and axis % 2 else ()
            same(run_concat(ctx, arrays, axis, constant), np.concatenate(arrays, axis),
                 f"concat {dt} axis {axis} of {[a.shape for a in arrays]}")


def test_max_rank_and_many_inputs(ctx):
    rng = rng_for("concat-many")
    rank = min(op_max_rank("concat", "inputs"), 8)
    arrays = random_inputs(rng, "uint8", rank, rank - 1, 2, max_dim=2)
    same(run_concat(ctx, arrays, rank - 1), np.concatenate(arrays, rank - 1), "rank max")
    arrays = random_inputs(rng, "float32", 3, 1, 40, max_dim=3)
    same(run_concat(ctx, arrays, 1), np.concatenate(arrays, 1), "40 inputs")


def test_same_operand_twice(ctx):
    x = data(rng_for("concat-twice"), (2, 3), "int64")
    b = builder(ctx)
    i = b.input("x", desc("int64", x.shape))
    g = b.build({"y": b.concat([i, i, i], 1)})
    same(ctx.compute(g, {"x": x})["y"], np.concatenate([x, x, x], 1), "x x x")


@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "uint8"])
def test_large(ctx, dt):
    """Large enough for the threaded path; rows that do not line up."""
    rng = rng_for("concat-large", dt)
    for shape_a, shape_b, axis in [((4, 64, 300), (4, 64, 301), 2),
                                   ((3, 127, 257), (3, 1, 257), 1),
                                   ((70001,), (3,), 0)]:
        a, c = data(rng, shape_a, dt), data(rng, shape_b, dt)
        same(run_concat(ctx, [a, c], axis), np.concatenate([a, c], axis),
             f"concat {dt} {shape_a} {shape_b}")


# ---- validation (#api-mlgraphbuilder-concat) -------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3]))
    y = b.input("y", desc("float32", [2, 4]))
    z = b.input("z", desc("int32", [2, 3]))
    w = b.input("w", desc("float32", [2, 3, 1]))
    s = b.input("s", desc("float32", []))
    type_error(lambda l: b.concat([], 0, label=l), "concat", "inputs")
    type_error(lambda l: b.concat([x, x], 2, label=l), "concat", "axis")
    type_error(lambda l: b.concat([x], 7, label=l), "concat", "axis")
    type_error(lambda l: b.concat([x, y], 0, label=l), "concat", "inputs[1]")
    type_error(lambda l: b.concat([x, x, z], 0, label=l), "concat", "inputs[2]")
    type_error(lambda l: b.concat([x, w], 1, label=l), "concat", "inputs[1]")
    type_error(lambda l: b.concat([s, s], 0, label=l), "concat", "inputs")  # rank 0
    type_error(lambda l: b.concat([x], -1, label=l), "concat", "axis")
    # more than a valid tensor count (8192)
    type_error(lambda l: b.concat([x] * 8193, 0, label=l), "concat", "inputs")
    # and still fine: along axis 1 shapes may differ
    assert tuple(b.concat([x, y], 1).shape) == (2, 7)


def test_concatenated_size_must_be_valid(ctx):
    """The sum along the axis must be a valid dimension (at most 2**31 - 1)."""
    b = builder(ctx)
    big = b.input("big", desc("uint8", [1, 2**31 - 201]))
    small = b.input("small", desc("uint8", [1, 100]))
    assert tuple(b.concat([big, small, small], 1).shape) == (1, 2**31 - 1)
    type_error(lambda l: b.concat([big, small, small, small], 1, label=l), "concat",
               "inputs[3]")
