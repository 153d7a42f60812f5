"""ML.createContext() and MLContext: options, devices, destroy(), lost."""
import asyncio
import concurrent.futures

import numpy as np
import pytest

import webnn
from webnn import _core

from ._helpers import raises

F32 = {"dataType": "float32", "shape": [2, 3]}
GPU = _core.device_available("gpu")


# ---- createContext ------------------------------------------------------------
def test_cpu_context():
    ctx = webnn.ml.create_context(device_type="cpu")
    assert ctx.accelerated is False
    assert ctx.device_type == "cpu"
    assert isinstance(ctx, webnn.MLContext)
    ctx.destroy()


def test_cpu_context_spellings():
    for c in (webnn.ml.create_context({"deviceType": "cpu"}),
              webnn.ml.create_context({"device_type": "cpu"}),
              webnn.ml.createContext(deviceType="cpu"),
              webnn.ml.create_context(accelerated=False),
              webnn.ml.create_context({"accelerated": False, "powerPreference": "low-power"})):
        assert c.accelerated is False and c.device_type == "cpu"
        c.destroy()


@pytest.mark.skipif(GPU, reason="a usable GPU is present")
def test_gpu_context_not_supported_here():
    with raises(webnn.NotSupportedError, "gpu"):
        webnn.ml.create_context(device_type="gpu")
    with raises(webnn.NotSupportedError, "gpu"):
        webnn.ml.create_context({"deviceType": "gpu"})
    assert issubclass(webnn.NotSupportedError, webnn.DOMException)
    assert webnn.NotSupportedError.name == "NotSupportedError"


@pytest.mark.skipif(GPU, reason="a usable GPU is present")
def test_default_context_falls_back_to_cpu():
    ctx = webnn.ml.create_context()
    assert ctx.accelerated is False and ctx.device_type == "cpu"
    ctx.destroy()
    ctx = webnn.ml.create_context(accelerated=True, power_preference="high-performance")
    assert ctx.device_type == "cpu"
    ctx.destroy()


@pytest.mark.skipif(not GPU, reason="no usable GPU")
def test_gpu_context_where_present():
    ctx = webnn.ml.create_context(device_type="gpu")
    assert ctx.accelerated is True and ctx.device_type == "gpu"
    ctx.destroy()


@pytest.mark.parametrize("pref", ["default", "high-performance", "low-power"])
def test_power_preferences(pref):
    for ctx in (webnn.ml.create_context(power_preference=pref, device_type="cpu"),
                webnn.ml.create_context({"powerPreference": pref, "deviceType": "cpu"})):
        assert ctx.power_preference == pref
        ctx.destroy()


@pytest.mark.parametrize("pref", ["fast", "", "Default", "high_performance", 1, None])
def test_bad_power_preference(pref):
    with raises(TypeError, "createContext", "powerPreference"):
        webnn.ml.create_context(power_preference=pref)
    with raises(TypeError, "createContext", "powerPreference"):
        webnn.ml.create_context({"powerPreference": pref})


def test_bad_options():
    with raises(TypeError, "createContext", "accelerated"):
        webnn.ml.create_context(accelerated="yes")
    with raises(TypeError, "createContext", "tpu"):
        webnn.ml.create_context(device_type="tpu")
    with raises(TypeError, "createContext", "colour"):
        webnn.ml.create_context(colour="blue")
    with raises(TypeError, "createContext"):
        webnn.ml.create_context("cpu")


def test_create_context_async():
    ctx = asyncio.run(webnn.ml.create_context_async(device_type="cpu"))
    assert isinstance(ctx, webnn.MLContext) and ctx.device_type == "cpu"
    ctx.destroy()
    if not GPU:
        with raises(webnn.NotSupportedError, "gpu"):
            asyncio.run(webnn.ml.create_context_async({"deviceType": "gpu"}))


def test_ml_singleton():
    assert isinstance(webnn.ml, webnn.ML)
    assert webnn.ml.createContext is webnn.ml.create_context


# ---- destroy() and lost -------------------------------------------------------
def test_lost_resolves_on_destroy():
    ctx = webnn.ml.create_context(device_type="cpu")
    assert isinstance(ctx.lost, concurrent.futures.Future)
    assert not ctx.lost.done()
    ctx.destroy()
    info = ctx.lost.result(timeout=10)
    assert isinstance(info, dict) and isinstance(info["message"], str) and info["message"]


def test_lost_awaitable():
    ctx = webnn.ml.create_context(device_type="cpu")

    async def main():
        fut = asyncio.wrap_future(ctx.lost)
        asyncio.get_running_loop().call_later(0.05, ctx.destroy)
        return await asyncio.wait_for(fut, 10)
    assert "message" in asyncio.run(main())


def test_destroy_is_idempotent():
    ctx = webnn.ml.create_context(device_type="cpu")
    ctx.destroy()
    first = ctx.lost.result(timeout=10)
    ctx.destroy()
    ctx.destroy()
    assert ctx.lost.result(timeout=10) == first


def test_destroy_leaves_other_contexts_alone():
    a = webnn.ml.create_context(device_type="cpu")
    b = webnn.ml.create_context(device_type="cpu")
    bb = webnn.MLGraphBuilder(b)
    g = bb.build({"y": bb.neg(bb.input("x", F32))})
    a.destroy()
    assert not b.lost.done()
    out = b.compute(g, {"x": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(out, -np.ones((2, 3), np.float32))
    b.destroy()


@pytest.fixture
def dead():
    """A destroyed context, with a graph, tensors and an unbuilt builder made
    before destroy()."""
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    g = b.build({"y": b.relu(x)})
    b2 = webnn.MLGraphBuilder(ctx)
    x2 = b2.input("x", F32)
    tx = ctx.create_tensor({**F32, "writable": True, "readable": True})
    ty = ctx.create_tensor({**F32, "readable": True})
    ctx.destroy()
    return ctx, g, b2, x2, tx, ty


def test_after_destroy_builder_creation(dead):
    ctx = dead[0]
    with raises(webnn.InvalidStateError, "MLGraphBuilder", "lost"):
        webnn.MLGraphBuilder(ctx)


def test_after_destroy_tensor_creation(dead):
    ctx = dead[0]
    with raises(webnn.InvalidStateError, "createTensor", "lost"):
        ctx.create_tensor({**F32, "readable": True})
    with raises(webnn.InvalidStateError, "createConstantTensor", "lost"):
        ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32))
    with raises(webnn.InvalidStateError, "createTensor"):
        asyncio.run(ctx.create_tensor_async(F32))
    with raises(webnn.InvalidStateError, "createConstantTensor"):
        asyncio.run(ctx.create_constant_tensor_async(F32, np.ones((2, 3), np.float32)))


def test_after_destroy_dispatch(dead):
    ctx, g, _, _, tx, ty = dead
    with raises(webnn.InvalidStateError, "dispatch"):
        ctx.dispatch(g, {"x": tx}, {"y": ty})


def test_after_destroy_dispatch_checks_graph_first(dead):
    """lose() destroys every graph of the context, and dispatch() checks the
    graph before the tensors: InvalidStateError even with wrong tensors."""
    ctx, g, _, _, _, _ = dead
    with raises(webnn.InvalidStateError, "dispatch"):
        ctx.dispatch(g, {}, {})


def test_after_destroy_read_write(dead):
    ctx, _, _, _, tx, ty = dead
    with raises(webnn.InvalidStateError, "readTensor"):
        ctx.read_tensor(ty)
    with raises(webnn.InvalidStateError, "readTensor"):
        ctx.read_tensor(ty, np.empty((2, 3), np.float32))
    with raises(webnn.InvalidStateError, "readTensor"):
        asyncio.run(ctx.read_tensor_async(ty))
    with raises(webnn.InvalidStateError, "writeTensor"):
        ctx.write_tensor(tx, np.ones((2, 3), np.float32))


def test_after_destroy_compute(dead):
    ctx, g, _, _, _, _ = dead
    with raises(webnn.InvalidStateError, "lost"):
        ctx.compute(g, {"x": np.ones((2, 3), np.float32)})


def test_after_destroy_existing_builder(dead):
    _, _, b2, x2, _, _ = dead
    with raises(webnn.InvalidStateError, "input"):
        b2.input("z", F32)
    with raises(webnn.InvalidStateError, "constant"):
        b2.constant("float32", 1.0)
    with raises(webnn.InvalidStateError, "constant"):
        b2.constant(F32, np.ones((2, 3), np.float32))
    with raises(webnn.InvalidStateError, "relu"):
        b2.relu(x2)
    with raises(webnn.InvalidStateError, "build"):
        b2.build({"y": x2})
    with raises(webnn.InvalidStateError, "build"):
        asyncio.run(b2.build_async({"y": x2}))


def test_destroy_during_build_async():
    """build() racing destroy(): either a graph or InvalidStateError, no hang."""
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    y = b.input("x", F32)
    for _ in range(200):
        y = b.add(y, b.constant("float32", 1.0))

    async def main():
        task = asyncio.ensure_future(b.build_async({"y": y}))
        await asyncio.sleep(0)
        ctx.destroy()
        return await asyncio.wait_for(task, 60)
    try:
        g = asyncio.run(main())
        assert isinstance(g, webnn.MLGraph)
    except webnn.InvalidStateError:
        pass
