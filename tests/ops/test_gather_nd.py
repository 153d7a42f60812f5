"""gatherND(input, indices).

Reference: NumPy advanced indexing x[i0, i1, ...] with each coordinate of the
index tuples resolved against its input dimension as the kernels document
(negative counts from the end, then clamped to [0, N - 1]).  Compared bit for
bit.
"""
import numpy as np
import pytest

from .conftest import op_dtypes, rng_for
from .test_gather import assert_bits, build_one, data, index_values, raises_msg, resolve

DTYPES = op_dtypes("gather_nd", "input")
INDEX_TYPES = op_dtypes("gather_nd", "indices")


def ref(x, idx):
    cs = idx.shape[-1]
    coords = tuple(resolve(idx[..., k], x.shape[k]) for k in range(cs))
    return x[coords]


def random_indices(rng, x_shape, batch, cs, it, in_range=False):
    cols = [index_values(rng, batch, x_shape[k], it, in_range) for k in range(cs)]
    return np.stack(cols, axis=-1) if batch or cs else np.zeros((cs,), cols[0].dtype)


def run_gnd(run, x, idx):
    return run(lambda b, x, i: b.gather_nd(x, i), {"x": x, "i": idx})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("it", INDEX_TYPES)
def test_types_and_coordinate_sizes(run, dt, it):
    rng = rng_for("gatherND", dt, it)
    for rank in (1, 2, 3, 4):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        x = data(rng, shape, dt)
        for cs in range(1, rank + 1):
            batch = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
            idx = random_indices(rng, shape, batch, cs, it)
            assert_bits(run_gnd(run, x, idx), ref(x, idx), dt)


def test_spec_examples(run):
    x = np.array([[0, 1], [2, 3]], np.float32)
    np.testing.assert_array_equal(run_gnd(run, x, np.array([[0, 0], [1, 1], [1, 0]], np.uint32)),
                                  [0, 3, 2])
    np.testing.assert_array_equal(run_gnd(run, x, np.array([[1], [0]], np.uint32)),
                                  [[2, 3], [0, 1]])
    x3 = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    np.testing.assert_array_equal(run_gnd(run, x3, np.array([[0, 1], [1, 0]], np.uint32)),
                                  [[2, 3], [4, 5]])
    np.testing.assert_array_equal(run_gnd(run, x3, np.array([[1], [0], [1]], np.uint32)),
                                  [x3[1], x3[0], x3[1]])


def test_scalar_output_and_clamping(run):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run_gnd(run, x, np.array([-1, 7], np.int32))  # [1, 2] after clamping
    assert got.shape == () and got == 5
    got = run_gnd(run, x, np.array([[-3, -4], [5, 0], [-2, -1]], np.int64))
    np.testing.assert_array_equal(got, [x[0, 0], x[1, 0], x[0, 2]])


def test_max_rank_and_large(run):
    rng = rng_for("gatherND big")
    x = data(rng, (2, 3, 2, 2, 3), "float16")
    idx = random_indices(rng, x.shape, (2, 1, 2, 2), 1, "int32")  # output rank 8
    got = run_gnd(run, x, idx)
    assert got.ndim == 8
    assert_bits(got, ref(x, idx), "float16")
    x = rng.standard_normal((100, 50, 32)).astype(np.float32)  # threaded
    idx = random_indices(rng, x.shape, (4000,), 2, "uint32")
    assert_bits(run_gnd(run, x, idx), ref(x, idx), "float32")


# ---- validation ----------------------------------------------------------------
def test_coordinate_size_above_rank(ctx):
    with raises_msg(TypeError, "gatherND", "gnd", "indices", "coordinate size"):
        build_one(ctx, "gather_nd", {"x": ("float32", [2, 3]), "i": ("int32", [4, 3])},
                  label="gnd")


def test_output_rank_above_max(ctx):
    with raises_msg(TypeError, "gatherND", "indices", "rank"):
        build_one(ctx, "gather_nd", {"x": ("float32", [2] * 6), "i": ("int32", [2] * 5 + [1])})


@pytest.mark.parametrize("shapes", [([], [1]), ([2], [])])
def test_ranks(ctx, shapes):
    with pytest.raises(TypeError, match="gatherND"):
        build_one(ctx, "gather_nd", {"x": ("float32", shapes[0]), "i": ("int32", shapes[1])})


@pytest.mark.parametrize("it", ["float32", "uint64", "uint8"])
def test_index_type(ctx, it):
    with raises_msg(TypeError, "gatherND", "indices"):
        build_one(ctx, "gather_nd", {"x": ("float32", [2, 3]), "i": (it, [2])})


def test_output_descriptor(ctx):
    out = build_one(ctx, "gather_nd", {"x": ("uint8", [2, 3, 4]), "i": ("int64", [5, 6, 2])})
    assert out.shape == (5, 6, 4) and out.data_type == "uint8"
