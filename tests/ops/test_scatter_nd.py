"""scatterND(input, indices, updates).

Reference: a copy of input, then for each index tuple in row-major order its
update slice written at the resolved coordinates (negative counts from the
end, then clamped to [0, N - 1]); the last update written wins, as the
kernel documents.  Compared bit for bit.
"""
import numpy as np
import pytest

from .conftest import op_dtypes, rng_for
from .test_gather import assert_bits, build_one, data, index_values, raises_msg, resolve

DTYPES = op_dtypes("scatter_nd", "input")
INDEX_TYPES = op_dtypes("scatter_nd", "indices")


def ref(x, idx, upd):
    out = x.copy()
    cs = idx.shape[-1]
    coords = [resolve(idx[..., k], x.shape[k]) for k in range(cs)]
    for pos in np.ndindex(*idx.shape[:-1]):
        out[tuple(int(c[pos]) for c in coords)] = upd[pos]
    return out


def random_indices(rng, x_shape, batch, cs, it, in_range=False):
    cols = [index_values(rng, batch, x_shape[k], it, in_range) for k in range(cs)]
    return np.stack(cols, axis=-1)


def run_snd(run, x, idx, upd):
    return run(lambda b, x, i, u: b.scatter_nd(x, i, u), {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("it", INDEX_TYPES)
def test_types_and_coordinate_sizes(run, dt, it):
    rng = rng_for("scatterND", dt, it)
    for rank in (1, 2, 3, 4):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        x = data(rng, shape, dt)
        for cs in range(1, rank + 1):
            batch = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
            idx = random_indices(rng, shape, batch, cs, it)
            upd = data(rng, batch + shape[cs:], dt)
            assert_bits(run_snd(run, x, idx, upd), ref(x, idx, upd), dt)


def test_spec_examples(run):
    x = np.arange(8, dtype=np.float32)
    got = run_snd(run, x, np.array([[4], [3], [1], [7]], np.uint32),
                  np.array([-1, -2, -3, -4], np.float32))
    np.testing.assert_array_equal(got, [0, -3, 2, -2, -1, 5, 6, -4])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = run_snd(run, x, np.array([[2], [0]], np.uint32),
                  np.array([[-1, -2], [-3, -4]], np.float32))
    np.testing.assert_array_equal(got, [[-3, -4], [2, 3], [-1, -2]])
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    got = run_snd(run, x, np.array([[0, 1], [1, 0]], np.uint32),
                  np.array([[-1, -2], [-3, -4]], np.float32))
    np.testing.assert_array_equal(got, [[[0, 1], [-1, -2]], [[-3, -4], [6, 7]]])


def test_duplicates_last_wins_and_clamping(run):
    x = np.zeros((3, 2), np.int32)
    idx = np.array([[0], [-3], [5], [2], [-1]], np.int64)  # 0 0 2 2 2
    upd = np.arange(10, dtype=np.int32).reshape(5, 2)
    np.testing.assert_array_equal(run_snd(run, x, idx, upd), [[2, 3], [0, 0], [8, 9]])
    # scalar updates for full coordinates
    idx = np.array([1, -7], np.int32)  # [1, 0]
    got = run_snd(run, x, idx, np.array(5, np.int32))
    np.testing.assert_array_equal(got, [[0, 0], [5, 0], [0, 0]])


def test_max_rank_and_large(run):
    rng = rng_for("scatterND big")
    x = data(rng, (2, 3, 1, 2, 2, 1, 3, 2), "uint8")
    idx = random_indices(rng, x.shape, (3, 2), 3, "int32")
    upd = data(rng, (3, 2) + x.shape[3:], "uint8")
    assert_bits(run_snd(run, x, idx, upd), ref(x, idx, upd), "uint8")
    x = rng.standard_normal((600, 400)).astype(np.float32)  # big copies
    idx = random_indices(rng, x.shape, (300,), 1, "int64")
    upd = rng.standard_normal((300, 400)).astype(np.float32)
    assert_bits(run_snd(run, x, idx, upd), ref(x, idx, upd), "float32")


# ---- validation ----------------------------------------------------------------
def test_coordinate_size_above_rank(ctx):
    with raises_msg(TypeError, "scatterND", "snd", "indices", "coordinate size"):
        build_one(ctx, "scatter_nd", {"x": ("float32", [2, 3]), "i": ("int32", [4, 3]),
                                      "u": ("float32", [4])}, label="snd")


@pytest.mark.parametrize("ushape", [[4], [4, 2], [3, 3], [4, 3, 1], []])
def test_updates_shape(ctx, ushape):
    with raises_msg(TypeError, "scatterND", "snd2", "updates", "shape"):
        build_one(ctx, "scatter_nd", {"x": ("float32", [2, 3]), "i": ("int32", [4, 1]),
                                      "u": ("float32", ushape)}, label="snd2")


def test_updates_type(ctx):
    with raises_msg(TypeError, "scatterND", "updates", "data type"):
        build_one(ctx, "scatter_nd", {"x": ("float32", [2, 3]), "i": ("int32", [4, 1]),
                                      "u": ("int32", [4, 3])})


@pytest.mark.parametrize("it", ["float32", "uint64", "int8"])
def test_index_type(ctx, it):
    with raises_msg(TypeError, "scatterND", "indices"):
        build_one(ctx, "scatter_nd", {"x": ("float32", [2, 3]), "i": (it, [4, 1]),
                                      "u": ("float32", [4, 3])})


@pytest.mark.parametrize("xs,iss", [([], [1]), ([2], [])])
def test_ranks(ctx, xs, iss):
    with pytest.raises(TypeError, match="scatterND"):
        build_one(ctx, "scatter_nd", {"x": ("float32", xs), "i": ("int32", iss),
                                      "u": ("float32", [])})


def test_output_descriptor(ctx):
    out = build_one(ctx, "scatter_nd", {"x": ("int8", [2, 3, 4]), "i": ("uint32", [5, 2]),
                                        "u": ("int8", [5, 4])})
    assert out.shape == (2, 3, 4) and out.data_type == "int8"
