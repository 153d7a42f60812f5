"""MLTensor and the context's tensor methods: createTensor,
createConstantTensor, readTensor (both forms), writeTensor; data of every
MLOperandDataType; buffer validation ("validate buffer with descriptor");
copies."""
import asyncio

import numpy as np
import pytest

import webnn

from ._helpers import ALL_TYPES, NP, raises, sample

F32 = {"dataType": "float32", "shape": [2, 3]}
SHAPE = (3, 4)


def rw(ctx, dt="float32", shape=(2, 3), **flags):
    flags = flags or {"readable": True, "writable": True}
    return ctx.create_tensor({"dataType": dt, "shape": list(shape), **flags})


# ---- attributes -----------------------------------------------------------------
def test_tensor_attributes(ctx):
    t = ctx.create_tensor({"data_type": "int64", "shape": [4, 1], "readable": True})
    assert (t.data_type, t.dataType, t.shape) == ("int64", "int64", (4, 1))
    assert (t.readable, t.writable, t.constant) == (True, False, False)
    w = ctx.create_tensor({"dataType": "uint8", "shape": [2], "writable": True})
    assert (w.readable, w.writable, w.constant) == (False, True, False)
    c = ctx.create_constant_tensor({"dataType": "int8", "shape": [2]}, np.zeros(2, np.int8))
    assert (c.readable, c.writable, c.constant) == (False, False, True)
    assert c.shape == (2,) and c.data_type == "int8"
    s = ctx.create_tensor({"dataType": "float16", "shape": [], "readable": True})
    assert s.shape == ()


def test_readable_writable_must_be_bool(ctx):
    with raises(TypeError, "createTensor"):
        ctx.create_tensor({**F32, "readable": "yes"})


def test_new_tensor_is_zeroed(ctx):
    for dt in ALL_TYPES:
        t = rw(ctx, dt, (5, 7))
        out = ctx.read_tensor(t)
        assert out.dtype == NP[dt] and out.shape == (5, 7)
        assert not out.any(), dt


def test_scalar_tensor_round_trip(ctx):
    t = rw(ctx, "float32", ())
    ctx.write_tensor(t, np.array(2.5, np.float32))
    out = ctx.read_tensor(t)
    assert out.shape == () and out[()] == 2.5


# ---- round trips of every data type ---------------------------------------------
@pytest.mark.parametrize("dt", ALL_TYPES)
def test_write_read_round_trip(ctx, dt):
    data = sample(dt, SHAPE)
    t = rw(ctx, dt, SHAPE)
    ctx.write_tensor(t, data)
    out = ctx.read_tensor(t)
    assert out.dtype == NP[dt] and out.shape == SHAPE
    np.testing.assert_array_equal(out.view(np.uint8), data.view(np.uint8))
    # the bring-your-own-buffer form
    buf = np.empty(SHAPE, NP[dt])
    assert ctx.read_tensor(t, buf) is None
    np.testing.assert_array_equal(buf.view(np.uint8), data.view(np.uint8))


def test_64_bit_extremes_exact(ctx):
    u = np.array([0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, 2**64 - 1], np.uint64)
    t = rw(ctx, "uint64", u.shape)
    ctx.write_tensor(t, u)
    out = ctx.read_tensor(t)
    assert [int(v) for v in out] == [int(v) for v in u]
    i = np.array([-2**63, -2**63 + 1, -1, 0, 1, 2**53 + 1, 2**63 - 1], np.int64)
    t = rw(ctx, "int64", i.shape)
    ctx.write_tensor(t, i)
    assert [int(v) for v in ctx.read_tensor(t)] == [int(v) for v in i]


@pytest.mark.parametrize("dt", ALL_TYPES)
def test_dispatch_identity_round_trip(ctx, dt):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": list(SHAPE)})
    g = b.build({"y": b.identity(x)})
    data = sample(dt, SHAPE, seed=1)
    tx = ctx.create_tensor({"dataType": dt, "shape": list(SHAPE), "writable": True})
    ty = ctx.create_tensor({"dataType": dt, "shape": list(SHAPE), "readable": True})
    ctx.write_tensor(tx, data)
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    out = ctx.read_tensor(ty)
    assert out.dtype == NP[dt]
    np.testing.assert_array_equal(out.view(np.uint8), data.view(np.uint8))
    # compute(), the NumPy convenience
    out = ctx.compute(g, {"x": data})["y"]
    np.testing.assert_array_equal(out.view(np.uint8), data.view(np.uint8))


@pytest.mark.parametrize("dt", ALL_TYPES)
@pytest.mark.parametrize("form", ["descriptor-buffer", "descriptor-bytes", "ndarray", "tensor"])
def test_constant_round_trip(ctx, dt, form):
    data = sample(dt, SHAPE, seed=2)
    b = webnn.MLGraphBuilder(ctx)
    desc = {"dataType": dt, "shape": list(SHAPE)}
    if form == "descriptor-buffer":
        c = b.constant(desc, data)
    elif form == "descriptor-bytes":
        c = b.constant(desc, data.tobytes())
    elif form == "ndarray":
        c = b.constant(data)
    else:
        c = b.constant(ctx.create_constant_tensor(desc, data))
    assert c.data_type == dt and c.shape == SHAPE
    g = b.build({"id": b.identity(c), "flat": b.reshape(c, [SHAPE[0] * SHAPE[1]])})
    out = ctx.compute(g, {})
    assert out["id"].dtype == NP[dt] and out["id"].shape == SHAPE
    np.testing.assert_array_equal(out["id"].view(np.uint8), data.view(np.uint8))
    assert out["flat"].shape == (SHAPE[0] * SHAPE[1],)
    np.testing.assert_array_equal(out["flat"].view(np.uint8), data.reshape(-1).view(np.uint8))


@pytest.mark.parametrize("dt", ALL_TYPES)
def test_scalar_constant_round_trip(ctx, dt):
    vals = {"float32": 1.5, "float16": -2.25, "int32": -2**31, "uint32": 2**31 + 5,
            "int64": -2**63, "uint64": 2**64 - 1, "int8": -128, "uint8": 255}
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.identity(b.constant(dt, vals[dt]))})
    out = ctx.compute(g, {})["y"]
    assert out.dtype == NP[dt] and out.shape == ()
    assert out[()] == vals[dt] if NP[dt].kind == "f" else int(out[()]) == vals[dt]


# ---- readable / writable / context / destroyed -----------------------------------
def test_read_not_readable(ctx):
    t = ctx.create_tensor({**F32, "writable": True})
    with raises(TypeError, "readTensor", "readable"):
        ctx.read_tensor(t)
    with raises(TypeError, "readTensor", "readable"):
        ctx.read_tensor(t, np.empty((2, 3), np.float32))
    with raises(TypeError, "readTensor", "readable"):
        asyncio.run(ctx.read_tensor_async(t))


def test_write_not_writable(ctx):
    t = ctx.create_tensor({**F32, "readable": True})
    with raises(TypeError, "writeTensor", "writable"):
        ctx.write_tensor(t, np.ones((2, 3), np.float32))


def test_constant_tensor_not_readable_nor_writable(ctx):
    c = ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32))
    with raises(TypeError, "readTensor", "readable"):
        ctx.read_tensor(c)
    with raises(TypeError, "writeTensor", "writable"):
        ctx.write_tensor(c, np.ones((2, 3), np.float32))


def test_tensor_of_another_context(ctx, ctx2):
    t = rw(ctx2)
    with raises(TypeError, "readTensor", "context"):
        ctx.read_tensor(t)
    with raises(TypeError, "readTensor", "context"):
        ctx.read_tensor(t, np.empty((2, 3), np.float32))
    with raises(TypeError, "writeTensor", "context"):
        ctx.write_tensor(t, np.ones((2, 3), np.float32))


def test_destroyed_tensor(ctx):
    t = rw(ctx)
    t.destroy()
    t.destroy()     # idempotent
    with raises(TypeError, "readTensor", "destroyed"):
        ctx.read_tensor(t)
    with raises(TypeError, "readTensor", "destroyed"):
        ctx.read_tensor(t, np.empty((2, 3), np.float32))
    with raises(TypeError, "writeTensor", "destroyed"):
        ctx.write_tensor(t, np.ones((2, 3), np.float32))


def test_not_a_tensor(ctx):
    with raises(TypeError, "readTensor", "tensor"):
        ctx.read_tensor(np.ones(3))
    with raises(TypeError, "writeTensor", "tensor"):
        ctx.write_tensor("x", np.ones(3))


# ---- buffers: byte length, element type, uint8, contiguity -------------------------
def test_write_wrong_byte_length(ctx):
    t = rw(ctx)
    with raises(TypeError, "writeTensor", "byte length"):
        ctx.write_tensor(t, np.ones((2, 2), np.float32))
    with raises(TypeError, "writeTensor", "byte length"):
        ctx.write_tensor(t, b"\0" * 23)
    # a float64 array of the right shape is a data type mismatch, named so
    with raises(TypeError, "writeTensor", "float64", "float32"):
        ctx.write_tensor(t, np.ones((2, 3), np.float64))


@pytest.mark.parametrize("dt", ALL_TYPES)
def test_write_wrong_dtype_same_length(ctx, dt):
    t = rw(ctx, dt, (4, 2))
    nbytes = 8 * NP[dt].itemsize
    for other in ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8",
                  "float64", "int16", "uint16"):
        od = np.dtype(other)
        if od == NP[dt] or nbytes % od.itemsize:
            continue
        with raises(TypeError, "writeTensor", dt):
            ctx.write_tensor(t, np.zeros(nbytes // od.itemsize, od))


@pytest.mark.parametrize("dt", ALL_TYPES)
def test_raw_uint8_accepted(ctx, dt):
    data = sample(dt, (4, 2), seed=3)
    t = rw(ctx, dt, (4, 2))
    ctx.write_tensor(t, data.view(np.uint8))           # an ndarray of uint8
    np.testing.assert_array_equal(ctx.read_tensor(t).view(np.uint8), data.view(np.uint8))
    ctx.write_tensor(t, np.zeros(data.nbytes, np.uint8))
    ctx.write_tensor(t, data.tobytes())                  # bytes
    np.testing.assert_array_equal(ctx.read_tensor(t).view(np.uint8), data.view(np.uint8))
    ctx.write_tensor(t, bytearray(data.nbytes))          # bytearray
    assert not ctx.read_tensor(t).view(np.uint8).any()
    ctx.write_tensor(t, memoryview(data.tobytes()))      # memoryview
    out = np.zeros(data.nbytes, np.uint8)
    ctx.read_tensor(t, out)                              # read into raw uint8
    np.testing.assert_array_equal(out, data.view(np.uint8).reshape(-1))
    out = bytearray(data.nbytes)
    ctx.read_tensor(t, out)                              # read into a bytearray
    assert bytes(out) == data.tobytes()


def test_read_into_wrong_buffer(ctx):
    t = rw(ctx)
    with raises(TypeError, "readTensor", "byte length"):
        ctx.read_tensor(t, np.empty((2, 2), np.float32))
    with raises(TypeError, "readTensor", "float32"):
        ctx.read_tensor(t, np.empty((2, 3), np.int32))
    with raises(TypeError, "readTensor", "float32"):
        ctx.read_tensor(t, np.empty(3, np.float64))


def test_read_into_read_only_buffer(ctx):
    t = rw(ctx)
    with raises(TypeError, "readTensor"):
        ctx.read_tensor(t, bytes(24))
    ro = np.zeros((2, 3), np.float32)
    ro.flags.writeable = False
    with raises(TypeError, "readTensor"):
        ctx.read_tensor(t, ro)


def test_read_tensor_fills_out(ctx):
    t = rw(ctx)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    ctx.write_tensor(t, data)
    out = np.full((2, 3), -1, np.float32)
    assert ctx.read_tensor(t, out) is None
    np.testing.assert_array_equal(out, data)
    flat = np.full(6, -1, np.float32)        # another shape of the same length is a buffer too
    ctx.read_tensor(t, flat)
    np.testing.assert_array_equal(flat, data.reshape(-1))


def test_non_contiguous_write_is_copied(ctx):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[::2, ::2]                     # (2, 3), not contiguous
    assert not view.flags.c_contiguous
    t = rw(ctx)
    ctx.write_tensor(t, view)
    np.testing.assert_array_equal(ctx.read_tensor(t), view)
    tr = np.arange(6, dtype=np.float32).reshape(3, 2).T    # Fortran order
    ctx.write_tensor(t, tr)
    np.testing.assert_array_equal(ctx.read_tensor(t), tr)


def test_non_contiguous_constants_are_copied(ctx):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = base[::2, ::2]
    b = webnn.MLGraphBuilder(ctx)
    c1 = b.constant(F32, view)
    c2 = b.constant(view)
    c3 = b.constant(ctx.create_constant_tensor(F32, view))
    g = b.build({"a": b.identity(c1), "b": b.identity(c2), "c": b.identity(c3)})
    out = ctx.compute(g, {})
    for k in "abc":
        np.testing.assert_array_equal(out[k], view)


def test_non_contiguous_compute_input(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    g = b.build({"y": b.neg(x)})
    view = np.arange(24, dtype=np.float32).reshape(4, 6)[1::2, 1::2]
    np.testing.assert_array_equal(ctx.compute(g, {"x": view})["y"], -view)


def test_read_into_non_contiguous_out(ctx):
    """A strided output buffer is either filled correctly or refused with a
    TypeError -- never silently left unchanged (written to a copy)."""
    t = rw(ctx)
    data = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    ctx.write_tensor(t, data)
    base = np.zeros((4, 6), np.float32)
    view = base[::2, ::2]
    try:
        ctx.read_tensor(t, view)
    except TypeError as e:
        assert "readTensor" in str(e)
        return
    np.testing.assert_array_equal(view, data)


# ---- copies: the caller's buffer is never kept ------------------------------------
def test_write_tensor_copies(ctx):
    t = rw(ctx)
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    ctx.write_tensor(t, data)
    data[:] = 99
    np.testing.assert_array_equal(ctx.read_tensor(t), np.arange(6, dtype=np.float32).reshape(2, 3))
    buf = bytearray(np.ones(6, np.float32).tobytes())
    ctx.write_tensor(t, buf)
    buf[:] = bytes(24)
    np.testing.assert_array_equal(ctx.read_tensor(t), np.ones((2, 3), np.float32))


@pytest.mark.parametrize("form", ["descriptor-buffer", "ndarray", "bytearray", "tensor"])
def test_constants_copy_their_data(ctx, form):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    keep = data.copy()
    b = webnn.MLGraphBuilder(ctx)
    if form == "descriptor-buffer":
        c = b.constant(F32, data)
    elif form == "ndarray":
        c = b.constant(data)
    elif form == "bytearray":
        data = bytearray(data.tobytes())
        c = b.constant(F32, data)
    else:
        c = b.constant(ctx.create_constant_tensor(F32, data))
    if isinstance(data, bytearray):
        data[:] = b"\xff" * len(data)
    else:
        data[:] = 99
    x = b.input("x", F32)
    g = b.build({"y": b.add(x, c)})
    if isinstance(data, np.ndarray):
        data[:] = -7          # also after build
    out = ctx.compute(g, {"x": np.zeros((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(out, keep)


def test_create_constant_tensor_copies_before_use(ctx):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ctx.create_constant_tensor(F32, data)
    data[:] = 42
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.identity(b.constant(t))})
    np.testing.assert_array_equal(ctx.compute(g, {})["y"],
                                  np.arange(6, dtype=np.float32).reshape(2, 3))


def test_compute_never_writes_inputs(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    y = b.relu(b.neg(x))
    g = b.build({"y": y, "z": b.mul(x, x)})
    data = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    keep = data.copy()
    ctx.compute(g, {"x": data})
    np.testing.assert_array_equal(data, keep)
    tx = rw(ctx)
    ctx.write_tensor(tx, data)
    ty, tz = rw(ctx), rw(ctx)
    ctx.dispatch(g, {"x": tx}, {"y": ty, "z": tz})
    np.testing.assert_array_equal(ctx.read_tensor(tx), keep)
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.maximum(-keep, 0))
    np.testing.assert_array_equal(ctx.read_tensor(tz), keep * keep)


def test_read_tensor_returns_a_fresh_array(ctx):
    t = rw(ctx)
    ctx.write_tensor(t, np.ones((2, 3), np.float32))
    a = ctx.read_tensor(t)
    a[:] = 5
    np.testing.assert_array_equal(ctx.read_tensor(t), np.ones((2, 3), np.float32))


# ---- create_constant_tensor checks --------------------------------------------------
def test_create_constant_tensor_buffer_checks(ctx):
    with raises(TypeError, "createConstantTensor", "byte length"):
        ctx.create_constant_tensor(F32, np.ones(5, np.float32))
    with raises(TypeError, "createConstantTensor", "float32"):
        ctx.create_constant_tensor(F32, np.ones(6, np.int32))
    t = ctx.create_constant_tensor(F32, np.ones(24, np.uint8))
    assert t.constant


# ---- the timeline ---------------------------------------------------------------
def test_timeline_order(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    g = b.build({"y": b.mul(x, b.constant("float32", 10.0))})
    tx, ty = rw(ctx), rw(ctx)
    ctx.write_tensor(tx, np.ones((2, 3), np.float32))
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    ctx.write_tensor(tx, np.full((2, 3), 2, np.float32))
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.full((2, 3), 10, np.float32))
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    ctx.write_tensor(tx, np.full((2, 3), 3, np.float32))
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    ctx.write_tensor(tx, np.full((2, 3), 4, np.float32))
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.full((2, 3), 30, np.float32))
    np.testing.assert_array_equal(ctx.read_tensor(tx), np.full((2, 3), 4, np.float32))


def test_dispatch_then_destroy_tensor_then_read_other(ctx):
    """Destroying a tensor after a dispatch that uses it does not break the
    queued work of other tensors."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    g = b.build({"y": b.neg(x)})
    tx, ty = rw(ctx), rw(ctx)
    ctx.write_tensor(tx, np.ones((2, 3), np.float32))
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    tx.destroy()
    np.testing.assert_array_equal(ctx.read_tensor(ty), -np.ones((2, 3), np.float32))


# ---- awaitable twins ---------------------------------------------------------------
def test_async_tensor_methods(ctx):
    async def main():
        t = await ctx.create_tensor_async({**F32, "readable": True, "writable": True})
        ctx.write_tensor(t, np.full((2, 3), 3, np.float32))
        a = await ctx.read_tensor_async(t)
        out = np.empty((2, 3), np.float32)
        r = await ctx.read_tensor_async(t, out)
        c = await ctx.create_constant_tensor_async(F32, np.full((2, 3), 5, np.float32))
        return a, out, r, c
    a, out, r, c = asyncio.run(main())
    np.testing.assert_array_equal(a, np.full((2, 3), 3, np.float32))
    np.testing.assert_array_equal(out, a)
    assert r is None
    assert c.constant and c.shape == (2, 3)


def test_camel_case_methods_on_context(ctx):
    t = ctx.createTensor({**F32, "readable": True, "writable": True})
    ctx.writeTensor(t, np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(ctx.readTensor(t), np.ones((2, 3), np.float32))
    c = ctx.createConstantTensor(F32, np.ones((2, 3), np.float32))
    assert c.constant
