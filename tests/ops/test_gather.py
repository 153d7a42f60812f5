"""gather(input, indices, {axis}).

Reference: np.take with the indices resolved as the kernels document (a
negative index counts from the end of the dimension, then indices are
clamped to [0, N - 1], which the WPT vectors expect).  Values are copied bit
for bit, so results are compared exactly (float bit patterns included).

The helpers at the top (resolve, index_values, assert_bits, raises_msg) are
shared by the other gather / scatter test files.
"""
import numpy as np
import pytest

import webnn

from .conftest import npdt, op_dtypes, random_values, rng_for

DTYPES = op_dtypes("gather", "input")
INDEX_TYPES = op_dtypes("gather", "indices")


# ---- shared helpers ----------------------------------------------------------
def resolve(idx, dim):
    """Indices as the kernels read them: i < 0 means i + dim, then clamp."""
    i = np.asarray(idx).astype(object)  # exact, also for int64 extremes
    i = np.where(i < 0, i + dim, i)
    i = np.minimum(np.maximum(i, 0), dim - 1)
    return np.asarray(i, dtype=np.int64)


def index_values(rng, shape, dim, dt, in_range=False):
    """Indices for a dimension of size dim: in range (both signs; uint32 is
    never negative) and, unless in_range, about a third out of range on
    either side, the index type's extremes included."""
    info = np.iinfo(npdt(dt))
    lo = 0 if dt == "uint32" else -dim
    n = int(np.prod(shape, dtype=np.int64))
    vals = [int(v) for v in rng.integers(lo, dim, size=n)]
    if not in_range:
        extra = [dim, dim + 3, int(info.max)]
        if dt != "uint32":
            extra += [-dim - 1, int(info.min), -1]
        k = n // 3 if n >= 3 else int(rng.random() < 0.5)
        for j, p in enumerate(rng.permutation(n)[:k]):
            vals[p] = extra[(j + int(rng.integers(0, len(extra)))) % len(extra)]
    return np.array(vals, dtype=npdt(dt)).reshape(shape)


def assert_bits(got, ref, dt):
    """Exact comparison of dtype, shape and bit patterns."""
    ref = np.asarray(ref, dtype=npdt(dt))
    assert got.dtype == npdt(dt), (got.dtype, dt)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    u = np.dtype(f"u{npdt(dt).itemsize}")
    g, r = np.ascontiguousarray(got).view(u), np.ascontiguousarray(ref).view(u)
    if not np.array_equal(g, r):
        bad = np.argwhere(g != r)[:5]
        pytest.fail(f"{int(np.count_nonzero(g != r))} elements differ; first at "
                    f"{[tuple(int(v) for v in b) for b in bad]}: got "
                    f"{[got[tuple(b)] for b in bad]}, expected {[ref[tuple(b)] for b in bad]}",
                    pytrace=False)


def data(rng, shape, dt):
    """Random values; float data gets NaN / -0.0 / Inf so that bit-exact copies
    are checked."""
    x = np.array(random_values(rng, shape, dt))
    if npdt(dt).kind == "f" and x.size >= 4:
        f = x.reshape(-1)
        f[0], f[1], f[2] = np.nan, -0.0, -np.inf
    return x


def raises_msg(exc, *words):
    """pytest.raises that also checks the message mentions every word."""
    class _Ctx:
        def __enter__(self):
            self.cm = pytest.raises(exc)
            self.info = self.cm.__enter__()
            return self.info

        def __exit__(self, *a):
            r = self.cm.__exit__(*a)
            msg = str(self.info.value)
            missing = [w for w in words if w.lower() not in msg.lower()]
            assert not missing, f"message {msg!r} does not mention {missing}"
            return r

    return _Ctx()


def build_one(ctx, op, shapes, *args, **options):
    """Call builder.<op> on inputs of the given {name: (dtype, shape)}."""
    b = webnn.MLGraphBuilder(ctx)
    ops = [b.input(n, {"dataType": dt, "shape": list(s)}) for n, (dt, s) in shapes.items()]
    return getattr(b, op)(*ops, *args, **options)


# ---- gather ------------------------------------------------------------------
def ref_gather(x, idx, axis):
    return np.take(x, resolve(idx, x.shape[axis]), axis=axis)


def run_gather(run, x, idx, axis=None, constant_indices=False):
    def build(b, x, i):
        return b.gather(x, i) if axis is None else b.gather(x, i, {"axis": axis})

    if constant_indices:
        return run(build, {"x": x}, {"i": idx})
    return run(build, {"x": x, "i": idx})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("it", INDEX_TYPES)
def test_types_and_axes(run, dt, it):
    """Every data type x index type, every axis of ranks 1-4, indices of rank
    0-2, out-of-range and negative indices included."""
    rng = rng_for("gather", dt, it)
    for rank in (1, 2, 3, 4):
        shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
        x = data(rng, shape, dt)
        for axis in range(rank):
            irank = int(rng.integers(0, 3))
            ishape = tuple(int(d) for d in rng.integers(1, 4, size=irank))
            idx = index_values(rng, ishape, shape[axis], it)
            got = run_gather(run, x, idx, axis)
            assert_bits(got, ref_gather(x, idx, axis), dt)


def test_default_axis_is_0(run):
    rng = rng_for("gather default")
    x = data(rng, (4, 3, 2), "float32")
    idx = np.array([3, -1, 0, 7, -9], np.int32)
    assert_bits(run_gather(run, x, idx), ref_gather(x, idx, 0), "float32")
    assert_bits(run_gather(run, x, idx, 0), ref_gather(x, idx, 0), "float32")


def test_spec_examples(run):
    x = np.array([[0, 1, 2], [10, 11, 12], [20, 21, 22], [30, 31, 32]], np.float32)
    got = run_gather(run, x, np.array([3, 1], np.uint32), constant_indices=True)
    np.testing.assert_array_equal(got, [[30, 31, 32], [10, 11, 12]])
    got = run_gather(run, x, np.array([2, 1, 1], np.uint32), 1, constant_indices=True)
    np.testing.assert_array_equal(got, [[2, 1, 1], [12, 11, 11], [22, 21, 21], [32, 31, 31]])
    got = run_gather(run, x, np.array([[0, 1], [1, 2]], np.uint32), 1)
    np.testing.assert_array_equal(got, [[[0, 1], [1, 2]], [[10, 11], [11, 12]],
                                        [[20, 21], [21, 22]], [[30, 31], [31, 32]]])


@pytest.mark.parametrize("it", INDEX_TYPES)
def test_clamping(run, it):
    """Hand-checked: -1 is the last row, -N the first, below -N clamps to the
    first row, N and above clamp to the last row."""
    x = np.arange(12, dtype=np.int32).reshape(4, 3)
    if it == "uint32":
        idx = np.array([0, 3, 4, 1000, 2**32 - 1], np.uint32)
        rows = [0, 3, 3, 3, 3]
    else:
        info = np.iinfo(npdt(it))
        idx = np.array([-1, -4, -5, 4, 1000, int(info.min), int(info.max)], npdt(it))
        rows = [3, 0, 0, 3, 3, 0, 3]
    got = run_gather(run, x, idx, 0)
    np.testing.assert_array_equal(got, x[rows])
    got = run_gather(run, x.T.copy(), idx, 1)
    np.testing.assert_array_equal(got, x.T[:, rows])


def test_scalar_indices_and_scalar_output(run):
    x = np.array([5, 6, 7], np.float16)
    got = run_gather(run, x, np.array(-1, np.int64))
    assert got.shape == () and got == np.float16(7)


def test_max_rank_output(run):
    """rank(output) = rank(input) + rank(indices) - 1 = 8."""
    rng = rng_for("gather max rank")
    x = data(rng, (2, 3, 1, 2, 3), "int8")
    idx = index_values(rng, (2, 1, 2, 2), 2, "int32")
    for axis in (0, 3, 4):
        idx = index_values(rng, (2, 1, 2, 2), x.shape[axis], "int32")
        got = run_gather(run, x, idx, axis)
        assert got.ndim == 8
        assert_bits(got, ref_gather(x, idx, axis), "int8")


@pytest.mark.parametrize("axis,shape,n", [(0, (5000, 64), 3000), (1, (300, 1000), 700)])
def test_large_threaded(run, axis, shape, n):
    """Big enough for the threaded path: an embedding lookup (rows copied) and
    a last-axis gather (single elements)."""
    rng = rng_for("gather large", axis)
    x = rng.standard_normal(shape).astype(np.float32)
    idx = index_values(rng, (n,), shape[axis], "int32")
    assert_bits(run_gather(run, x, idx, axis), ref_gather(x, idx, axis), "float32")


def test_embedding_int64_constant_indices(run):
    rng = rng_for("gather embedding")
    x = rng.standard_normal((100, 16)).astype(np.float16)
    idx = index_values(rng, (4, 8), 100, "int64", in_range=True)
    got = run_gather(run, x, idx, 0, constant_indices=True)
    assert_bits(got, x[idx], "float16")


# ---- validation ----------------------------------------------------------------
def test_axis_out_of_range(ctx):
    with raises_msg(TypeError, "gather", "emb", "options.axis"):
        build_one(ctx, "gather", {"x": ("float32", [2, 3]), "i": ("int32", [2])},
                  axis=2, label="emb")


def test_axis_negative_is_rejected(ctx):
    with pytest.raises(TypeError):
        build_one(ctx, "gather", {"x": ("float32", [2, 3]), "i": ("int32", [2])}, axis=-1)


@pytest.mark.parametrize("it", ["float32", "uint8", "int8", "uint64", "float16"])
def test_index_type(ctx, it):
    with raises_msg(TypeError, "gather", "lbl", "indices"):
        build_one(ctx, "gather", {"x": ("float32", [2, 3]), "i": (it, [2])}, label="lbl")


def test_scalar_input(ctx):
    with raises_msg(TypeError, "gather", "input"):
        build_one(ctx, "gather", {"x": ("float32", []), "i": ("int32", [])})


def test_output_rank_above_max(ctx):
    with raises_msg(TypeError, "gather", "indices", "rank"):
        build_one(ctx, "gather", {"x": ("float32", [2] * 5), "i": ("int32", [1] * 5)})


def test_output_shape_and_type(ctx):
    out = build_one(ctx, "gather", {"x": ("uint64", [2, 3, 4]), "i": ("uint32", [5, 6])}, axis=1)
    assert out.shape == (2, 5, 6, 4) and out.data_type == "uint64"
