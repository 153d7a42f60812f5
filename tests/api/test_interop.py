"""Issue 14: arrays of any byte order, buffers, __array_interface__ and
DLPack producers in compute(), constant() and write_tensor(); shape and
data-type errors that name what was wrong; MLTensor.__array__; an awaitable
ctx.lost; informative reprs."""
import array
import asyncio

import numpy as np
import pytest

import webnn

from ._helpers import raises


@pytest.fixture
def graph(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    return b.build({"y": b.mul(x, b.constant("float32", 2.0))})


X = np.arange(6, dtype=np.float32).reshape(2, 3)


class ArrayInterfaceOnly:
    """A producer with only __array_interface__ (no buffer protocol)."""

    def __init__(self, a):
        self._a = a
        self.__array_interface__ = a.__array_interface__


class DLPackOnly:
    """A producer with only the DLPack protocol (as a torch CPU tensor)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kw):
        return self._a.__dlpack__(*args, **kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCudaDLPack(DLPackOnly):
    def __dlpack_device__(self):
        return (2, 0)


@pytest.mark.parametrize("make", [
    lambda a: a.astype(">f4"),
    lambda a: a.astype("<f4"),
    lambda a: np.asfortranarray(a),
    lambda a: ArrayInterfaceOnly(a.copy()),
    lambda a: DLPackOnly(a.copy()),
    lambda a: a.tobytes(),
], ids=["big-endian", "little-endian", "fortran", "array-interface", "dlpack", "bytes"])
def test_compute_accepts(ctx, graph, make):
    data = make(X)
    np.testing.assert_array_equal(ctx.compute(graph, {"x": data})["y"], X * 2)


def test_big_endian_everywhere(ctx):
    big = X.astype(">f4")
    b = webnn.MLGraphBuilder(ctx)
    c1 = b.constant({"dataType": "float32", "shape": [2, 3]}, big)
    c2 = b.constant(big)
    g = b.build({"y": b.add(c1, c2)})
    np.testing.assert_array_equal(ctx.compute(g, {})["y"], X * 2)
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True,
                           "writable": True})
    ctx.write_tensor(t, big)
    np.testing.assert_array_equal(ctx.read_tensor(t), X)
    ctx.write_tensor(t, array.array("f", [1, 2, 3, 4, 5, 6]))
    np.testing.assert_array_equal(ctx.read_tensor(t).ravel(), [1, 2, 3, 4, 5, 6])
    # a buffer whose format is big-endian is converted too
    mv = memoryview(np.arange(6, dtype=">f4"))
    ctx.write_tensor(t, mv)
    np.testing.assert_array_equal(ctx.read_tensor(t).ravel(), np.arange(6))
    ct = ctx.create_constant_tensor({"dataType": "float32", "shape": [2, 3]}, big)
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.identity(b.constant(ct))})
    np.testing.assert_array_equal(ctx.compute(g, {})["y"], X)


def test_read_into_any_byte_order(ctx):
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True,
                           "writable": True})
    ctx.write_tensor(t, X)
    big = np.zeros((2, 3), ">f4")
    ctx.read_tensor(t, big)
    np.testing.assert_array_equal(big, X)
    with raises(TypeError, "readTensor", "float64", "float32"):
        ctx.read_tensor(t, np.zeros((2, 3), np.float64))


def test_compute_rejects_a_wrong_shape(ctx, graph):
    with raises(TypeError, "compute", "'x'", "(3, 2)", "(2, 3)"):
        ctx.compute(graph, {"x": X.reshape(3, 2)})


def test_compute_names_data_types(ctx, graph):
    with raises(TypeError, "compute", "float64", "float32"):
        ctx.compute(graph, {"x": X.astype(np.float64)})
    with raises(TypeError, "compute", "int32", "float32"):
        ctx.compute(graph, {"x": X.astype(">i4")})
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "writable": True})
    with raises(TypeError, "writeTensor", "float64", "float32"):
        ctx.write_tensor(t, X.astype(np.float64))
    b = webnn.MLGraphBuilder(ctx)
    with raises(TypeError, "constant", "float64", "float32"):
        b.constant({"dataType": "float32", "shape": [2, 3]}, X.astype(np.float64))
    with raises(TypeError, "constant", "float64"):
        b.constant(X.astype(np.float64))


def test_uint8_raw_bytes_still_stand_for_any_type(ctx, graph):
    raw = np.frombuffer(X.tobytes(), np.uint8)
    np.testing.assert_array_equal(ctx.compute(graph, {"x": raw})["y"], X * 2)


def test_gpu_dlpack_producer_is_a_clear_error(ctx, graph):
    with raises(TypeError, "DLPack", "device type 2", "CPU context", "cpu()", "GPU context"):
        ctx.compute(graph, {"x": FakeCudaDLPack(X.copy())})
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "writable": True})
    with raises(TypeError, "writeTensor", "device type 2", "CPU context"):
        ctx.write_tensor(t, FakeCudaDLPack(X.copy()))
    b = webnn.MLGraphBuilder(ctx)
    with raises(TypeError, "constant", "device type 2"):
        b.constant(FakeCudaDLPack(X.copy()))
    with raises(TypeError, "constant", "device type 2"):
        b.constant({"dataType": "float32", "shape": [2, 3]}, FakeCudaDLPack(X.copy()))
    with raises(TypeError, "createConstantTensor", "device type 2"):
        ctx.create_constant_tensor({"dataType": "float32", "shape": [2, 3]},
                                   FakeCudaDLPack(X.copy()))


def test_cpu_tensor_dlpack_arguments(ctx):
    """A CPU context's export stays a host copy; the protocol's arguments are
    checked as on a GPU context (the GPU side: tests/backends/test_dlpack_gpu.py)."""
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True,
                           "writable": True})
    ctx.write_tensor(t, X)
    with pytest.raises(BufferError, match=r"\(2, 0\)"):
        t.__dlpack__(dl_device=(2, 0))
    np.testing.assert_array_equal(np.from_dlpack(t, device="cpu"), X)
    with pytest.raises(ValueError, match="stream"):
        t.__dlpack__(stream=0)
    w = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "writable": True})
    with raises(TypeError, "not readable"):
        w.__dlpack__()
    # the core refuses to hand out a CPU tensor's memory as device memory
    from webnn import _core
    with pytest.raises(webnn.NotSupportedError, match="not a device tensor"):
        _core.tensor_dlpack(ctx._h, t._h, True, False)
    a = X.copy()
    with pytest.raises(webnn.NotSupportedError, match="host memory"):
        _core.tensor_write_device(ctx._h, w._h, a.ctypes.data, a.nbytes)
    with pytest.raises(webnn.NotSupportedError, match="host memory"):
        _core.tensor_create_constant_device(ctx._h, {"dataType": "float32", "shape": [2, 3]},
                                            a.ctypes.data)
    assert ctx._device_id == -1


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_capsule_parser(versioned):
    """_core.dlpack_info reads a producer's capsule (here NumPy's) without
    consuming it: device, address, data type, shape, strides, read-only."""
    from webnn import _core
    a = np.arange(12, dtype=np.int16).reshape(3, 4)[:, 1:]
    a.flags.writeable = not versioned    # only the versioned struct can say read-only
    cap = a.__dlpack__(max_version=(1, 0)) if versioned else a.__dlpack__()
    kind, dev, addr, dtype, shape, strides, read_only = _core.dlpack_info(cap)
    assert (kind, dev) == (1, 0)
    assert addr == a.ctypes.data
    assert dtype == (0, 16, 1) and shape == (3, 3) and strides == (4, 1)
    assert read_only is versioned
    # not consumed: NumPy can still import it
    assert np.from_dlpack(a).shape == (3, 3)
    with pytest.raises(TypeError, match="not a DLPack capsule"):
        _core.dlpack_info(object())


def test_torch_cpu_tensors(ctx, graph):
    torch = pytest.importorskip("torch")
    y = ctx.compute(graph, {"x": torch.arange(6, dtype=torch.float32).reshape(2, 3)})["y"]
    np.testing.assert_array_equal(y, X * 2)
    b = webnn.MLGraphBuilder(ctx)
    c = b.constant(torch.ones(2, 3))
    assert c.shape == (2, 3) and c.data_type == "float32"


def test_tensor_array_protocol(ctx):
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True,
                           "writable": True})
    ctx.write_tensor(t, X)
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (2, 3)
    np.testing.assert_array_equal(a, X)
    np.testing.assert_array_equal(np.asarray(t, dtype=np.float64), X)
    w = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "writable": True})
    with raises(TypeError, "not readable", "readable=True"):
        np.asarray(w)


def test_tensor_dlpack_export(ctx):
    t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True,
                           "writable": True})
    ctx.write_tensor(t, X)
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), X)
    with pytest.raises(BufferError):
        t.__dlpack__(copy=False)
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(torch.from_dlpack(t).numpy(), X)


def test_lost_is_awaitable(ctx):
    import concurrent.futures
    c = webnn.ml.create_context(device_type="cpu")
    assert isinstance(c.lost, concurrent.futures.Future)

    async def main():
        waiter = asyncio.ensure_future(c.lost)
        await asyncio.sleep(0)
        assert not waiter.done()
        c.destroy()
        return await asyncio.wait_for(waiter, 10)

    info = asyncio.run(main())
    assert "message" in info and c.lost.result() is info or c.lost.result() == info


def test_reprs(ctx):
    assert repr(ctx).startswith("MLContext(device_type='cpu', backend='cpu', threads=")
    b = webnn.MLGraphBuilder(ctx)
    assert repr(b) == "MLGraphBuilder(device='cpu', building)"
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    assert repr(x) == "MLOperand(input 'x', data_type='float32', shape=(2, 3))"
    c = b.constant(X)
    assert repr(c) == "MLOperand(constant, data_type='float32', shape=(2, 3))"
    y = b.add(x, c, label="sum")
    assert repr(y) == "MLOperand(add, label='sum', data_type='float32', shape=(2, 3))"
    assert (y.operator, y.label, x.name, x.operator) == ("add", "sum", "x", "input")
    z = b.relu(y)
    assert repr(z) == "MLOperand(relu, data_type='float32', shape=(2, 3))"
    g = b.build({"z": z})
    assert repr(b) == "MLGraphBuilder(device='cpu', built)"
    assert repr(g) == ("MLGraph(inputs={'x': float32[2, 3]}, outputs={'z': float32[2, 3]}, "
                       "operators=2, device='cpu')")
    t = ctx.create_tensor({"dataType": "int8", "shape": [4], "readable": True})
    assert repr(t) == "MLTensor(data_type='int8', shape=(4,), device='cpu', readable)"
    t.destroy()
    assert repr(t).endswith("readable, destroyed)")
