"""gatherElements(input, indices, {axis}).

Reference: np.take_along_axis with the indices resolved as the kernels
document (negative counts from the end, then clamped to [0, N - 1]).  The
output has indices' shape (the spec's examples; its "copy of input" step
would contradict them).  Compared bit for bit.
"""
import numpy as np
import pytest

from .conftest import op_dtypes, rng_for
from .test_gather import assert_bits, build_one, data, index_values, raises_msg, resolve

DTYPES = op_dtypes("gatherElements", "input")
INDEX_TYPES = op_dtypes("gatherElements", "indices")


def ref(x, idx, axis):
    return np.take_along_axis(x, resolve(idx, x.shape[axis]), axis=axis)


def run_ge(run, x, idx, axis=None):
    def build(b, x, i):
        return b.gather_elements(x, i) if axis is None else b.gatherElements(x, i, axis=axis)

    return run(build, {"x": x, "i": idx})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("it", INDEX_TYPES)
def test_types_and_axes(run, dt, it):
    rng = rng_for("gatherElements", dt, it)
    for rank in (1, 2, 3, 4):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        x = data(rng, shape, dt)
        for axis in range(rank):
            ishape = list(shape)
            ishape[axis] = int(rng.integers(1, 6))  # fewer or more than input's
            idx = index_values(rng, tuple(ishape), shape[axis], it)
            assert_bits(run_ge(run, x, idx, axis), ref(x, idx, axis), dt)


def test_default_axis_and_spec_examples(run):
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    got = run_ge(run, x, np.array([[3, 1, 1], [2, 0, 3]], np.uint32))
    np.testing.assert_array_equal(got, [[30, 11, 12], [20, 1, 32]])
    got = run_ge(run, x, np.array([[2], [1], [0], [2]], np.uint32), 1)
    np.testing.assert_array_equal(got, [[2], [11], [20], [32]])
    x3 = np.array([0, 1, 10, 11, 100, 101, 110, 111, 200, 201, 210, 211, 300, 301, 310, 311],
                  np.float32).reshape(4, 2, 2)
    got = run_ge(run, x3, np.array([0, 2, 1, 3], np.uint32).reshape(1, 2, 2), 0)
    np.testing.assert_array_equal(got, [[[0, 201], [110, 311]]])


def test_clamping(run):
    x = np.arange(8, dtype=np.int64).reshape(2, 4)
    idx = np.array([[-1, -4, -5, 4], [9, 2**40, -(2**40), 0]], np.int64)
    got = run_ge(run, x, idx, 1)
    np.testing.assert_array_equal(got, [[3, 0, 0, 3], [7, 7, 4, 4]])


def test_max_rank_and_large(run):
    rng = rng_for("gatherElements big")
    x = data(rng, (2, 1, 2, 3, 1, 2, 2, 3), "uint8")
    for axis in (0, 3, 7):
        ishape = list(x.shape)
        ishape[axis] = 4
        idx = index_values(rng, tuple(ishape), x.shape[axis], "int32")
        assert_bits(run_ge(run, x, idx, axis), ref(x, idx, axis), "uint8")
    x = rng.standard_normal((64, 300, 8)).astype(np.float32)  # threaded
    idx = index_values(rng, (64, 350, 8), 300, "int64")
    assert_bits(run_ge(run, x, idx, 1), ref(x, idx, 1), "float32")


# ---- validation ----------------------------------------------------------------
def test_axis_out_of_range(ctx):
    with raises_msg(TypeError, "gatherElements", "ge1", "options.axis"):
        build_one(ctx, "gather_elements", {"x": ("float32", [2, 3]), "i": ("int32", [2, 3])},
                  axis=2, label="ge1")


def test_indices_rank(ctx):
    with raises_msg(TypeError, "gatherElements", "ge2", "indices", "rank"):
        build_one(ctx, "gather_elements", {"x": ("float32", [2, 3]), "i": ("int32", [2])},
                  label="ge2")


@pytest.mark.parametrize("ishape,axis", [([2, 4], 0), ([3, 3], 1), ([1, 1], 0)])
def test_indices_shape(ctx, ishape, axis):
    with raises_msg(TypeError, "gatherElements", "ge3", "indices", "shape"):
        build_one(ctx, "gather_elements", {"x": ("float32", [2, 3]), "i": ("int32", ishape)},
                  axis=axis, label="ge3")


@pytest.mark.parametrize("it", ["float32", "uint64", "int8"])
def test_index_type(ctx, it):
    with raises_msg(TypeError, "gatherElements", "indices"):
        build_one(ctx, "gather_elements", {"x": ("float32", [2, 3]), "i": (it, [2, 3])})


def test_output_descriptor(ctx):
    out = build_one(ctx, "gather_elements", {"x": ("int8", [2, 3]), "i": ("uint32", [5, 3])})
    assert out.shape == (5, 3) and out.data_type == "int8"
