"""scatterElements(input, indices, updates, {axis}).

Reference: a copy of input, then every update written in the row-major
order of indices at its position with the axis coordinate replaced by the
resolved index (negative counts from the end, then clamped to [0, N - 1]);
the last update written to an element wins, as the kernel documents.
Compared bit for bit.
"""
import numpy as np
import pytest

from .conftest import op_dtypes, rng_for
from .test_gather import assert_bits, build_one, data, index_values, raises_msg, resolve

DTYPES = op_dtypes("scatterElements", "input")
INDEX_TYPES = op_dtypes("scatterElements", "indices")


def ref(x, idx, upd, axis):
    out = x.copy()
    r = resolve(idx, x.shape[axis])
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[axis] = int(r[pos])
        out[tuple(dst)] = upd[pos]
    return out


def run_se(run, x, idx, upd, axis=None):
    def build(b, x, i, u):
        if axis is None:
            return b.scatter_elements(x, i, u)
        return b.scatterElements(x, i, u, {"axis": axis})

    return run(build, {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("it", INDEX_TYPES)
def test_types_and_axes(run, dt, it):
    rng = rng_for("scatterElements", dt, it)
    for rank in (1, 2, 3, 4):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        x = data(rng, shape, dt)
        for axis in range(rank):
            ishape = list(shape)
            ishape[axis] = int(rng.integers(1, 6))  # duplicates when more than N
            idx = index_values(rng, tuple(ishape), shape[axis], it)
            upd = data(rng, tuple(ishape), dt)
            assert_bits(run_se(run, x, idx, upd, axis), ref(x, idx, upd, axis), dt)


def test_default_axis_and_spec_examples(run):
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    idx = np.array([[3, 1, 1], [2, 0, 3]], np.uint32)
    upd = np.array([[-1, -2, -3], [-4, -5, -6]], np.float32)
    np.testing.assert_array_equal(run_se(run, x, idx, upd),
                                  [[0, -5, 2], [10, -2, -3], [-4, 21, 22], [-1, 31, -6]])
    idx = np.array([[2], [1], [0], [2]], np.uint32)
    upd = np.array([[-1], [-2], [-3], [-4]], np.float32)
    np.testing.assert_array_equal(run_se(run, x, idx, upd, 1),
                                  [[0, 1, -1], [10, -2, 12], [-3, 21, 22], [30, 31, -4]])


def test_duplicates_last_wins_and_clamping(run):
    x = np.zeros((1, 4), np.int32)
    idx = np.array([[1, -3, 9, 3, -100, 0]], np.int32)  # 1, 1, 3, 3, 0, 0
    upd = np.array([[10, 20, 30, 40, 50, 60]], np.int32)
    np.testing.assert_array_equal(run_se(run, x, idx, upd, 1), [[60, 20, 0, 40]])


def test_max_rank_and_large(run):
    rng = rng_for("scatterElements big")
    x = data(rng, (2, 1, 2, 3, 1, 2, 2, 3), "int64")
    for axis in (0, 3, 7):
        ishape = list(x.shape)
        ishape[axis] = 2
        idx = index_values(rng, tuple(ishape), x.shape[axis], "uint32")
        upd = data(rng, tuple(ishape), "int64")
        assert_bits(run_se(run, x, idx, upd, axis), ref(x, idx, upd, axis), "int64")
    # threaded: per (outer, inner) column a permutation of the axis, so the
    # vectorised NumPy reference is unambiguous
    x = rng.standard_normal((40, 200, 16)).astype(np.float32)
    perm = np.argsort(rng.random((40, 150, 16)), axis=1)  # distinct in [0, 150)
    idx = (perm - 200).astype(np.int32)  # negative form
    upd = rng.standard_normal((40, 150, 16)).astype(np.float32)
    exp = x.copy()
    np.put_along_axis(exp, perm, upd, axis=1)
    assert_bits(run_se(run, x, idx, upd, 1), exp, "float32")


# ---- validation ----------------------------------------------------------------
SHAPES = {"x": ("float32", [2, 3]), "i": ("int32", [2, 3]), "u": ("float32", [2, 3])}


def shapes_with(**kw):
    s = dict(SHAPES)
    s.update(kw)
    return s


def test_updates_type(ctx):
    with raises_msg(TypeError, "scatterElements", "se1", "updates", "data type"):
        build_one(ctx, "scatter_elements", shapes_with(u=("float16", [2, 3])), label="se1")


@pytest.mark.parametrize("it", ["float32", "uint64", "int8"])
def test_index_type(ctx, it):
    with raises_msg(TypeError, "scatterElements", "indices"):
        build_one(ctx, "scatter_elements", shapes_with(i=(it, [2, 3])))


@pytest.mark.parametrize("name,arg", [("i", "indices"), ("u", "updates")])
def test_ranks(ctx, name, arg):
    with raises_msg(TypeError, "scatterElements", "se2", arg, "rank"):
        build_one(ctx, "scatter_elements", shapes_with(**{name: (SHAPES[name][0], [2, 3, 1])}),
                  label="se2")


def test_axis_out_of_range(ctx):
    with raises_msg(TypeError, "scatterElements", "options.axis"):
        build_one(ctx, "scatter_elements", SHAPES, axis=2)


def test_indices_shape(ctx):
    with raises_msg(TypeError, "scatterElements", "indices", "shape"):
        build_one(ctx, "scatter_elements", shapes_with(i=("int32", [2, 4]), u=("float32", [2, 4])))
    # along the axis any size is fine
    out = build_one(ctx, "scatter_elements", shapes_with(i=("int32", [5, 3]),
                                                          u=("float32", [5, 3])))
    assert out.shape == (2, 3)


def test_updates_shape(ctx):
    with raises_msg(TypeError, "scatterElements", "updates", "shape"):
        build_one(ctx, "scatter_elements", shapes_with(u=("float32", [1, 3])))


def test_output_descriptor(ctx):
    out = build_one(ctx, "scatter_elements", {"x": ("uint64", [2, 3]), "i": ("int64", [2, 1]),
                                              "u": ("uint64", [2, 1])}, axis=1)
    assert out.shape == (2, 3) and out.data_type == "uint64"
