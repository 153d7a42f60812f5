"""Large results of compute() and read_tensor() are made on memory that
earlier results gave back (webnn/_binding/tensors.c, "result buffers"): reused only
once no array uses it, never shared by two live results, bounded by
WEBNN_RESULT_CACHE_MB (0: plain np.empty)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import webnn

N = 1 << 19  # float32: 2 MiB, above the 1 MiB threshold


def _addr(a):
    return a.__array_interface__["data"][0]


@pytest.fixture
def relu(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [N]})
    return b.build({"y": b.relu(x), "z": b.neg(x)})


def test_live_results_never_share_memory(ctx, relu):
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(N).astype(np.float32) for _ in range(4)]
    ctx.compute(relu, {"x": xs[0]})  # its two results go back at once
    outs = [ctx.compute(relu, {"x": x}) for x in xs]
    arrays = [o[k] for o in outs for k in ("y", "z")]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            assert not np.shares_memory(a, b)
    for x, o in zip(xs, outs):  # every result still holds its own values
        np.testing.assert_array_equal(o["y"], np.maximum(x, 0))
        np.testing.assert_array_equal(o["z"], -x)


def test_memory_of_a_dropped_result_is_reused_with_new_values(ctx, relu):
    rng = np.random.default_rng(2)
    x1, x2 = (rng.standard_normal(N).astype(np.float32) for _ in range(2))
    y1 = ctx.compute(relu, {"x": x1})["y"]
    where = _addr(y1)
    del y1
    # the two outputs of the next call: one of them takes the freed block
    r = ctx.compute(relu, {"x": x2})
    assert where in (_addr(r["y"]), _addr(r["z"]))
    np.testing.assert_array_equal(r["y"], np.maximum(x2, 0))
    np.testing.assert_array_equal(r["z"], -x2)


def test_a_view_keeps_the_memory_alive(ctx, relu):
    x = np.arange(N, dtype=np.float32) - N / 2
    view = ctx.compute(relu, {"x": x})["y"][::2]   # the full result is dropped
    other = ctx.compute(relu, {"x": -x})["y"]
    assert not np.shares_memory(view, other)
    np.testing.assert_array_equal(view, np.maximum(x, 0)[::2])


def test_results_are_ordinary_writable_arrays(ctx, relu):
    x = np.ones(N, np.float32)
    y = ctx.compute(relu, {"x": x})["y"]
    assert type(y) is np.ndarray and y.dtype == np.float32 and y.shape == (N,)
    assert y.flags.writeable and y.flags.c_contiguous
    y[:] = 7  # the caller's to change
    assert float(y.sum()) == 7.0 * N


def test_read_tensor_results_too(ctx):
    t = ctx.create_tensor({"dataType": "float32", "shape": [N], "readable": True,
                           "writable": True})
    data = np.random.default_rng(3).standard_normal(N).astype(np.float32)
    ctx.write_tensor(t, data)
    a = ctx.read_tensor(t)
    b = ctx.read_tensor(t)
    assert not np.shares_memory(a, b)
    np.testing.assert_array_equal(a, data)
    np.testing.assert_array_equal(b, data)


def test_results_outlive_their_context():
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [N]})
    g = b.build({"y": b.neg(x)})
    data = np.arange(N, dtype=np.float32)
    y = ctx.compute(g, {"x": data})["y"]
    ctx.destroy()
    del g, b, ctx
    np.testing.assert_array_equal(y, -data)


def test_cache_off_and_bounds_in_a_fresh_process():
    code = """
import numpy as np, webnn
from webnn import _core
ctx = webnn.ml.create_context()
b = webnn.MLGraphBuilder(ctx)
x = b.input("x", {"dataType": "float32", "shape": [1 << 19]})
g = b.build({"y": b.neg(x)})
y = ctx.compute(g, {"x": np.ones(1 << 19, np.float32)})["y"]
assert float(y.sum()) == -(1 << 19)
print(type(y.base).__name__ if y.base is not None else "None",
      _core.out_buffer(1 << 20) is None, _core.out_buffer(10) is None)
"""
    env = dict(os.environ)
    for value, expected in (("0", "None True True"), ("64", "ndarray False True")):
        env["WEBNN_RESULT_CACHE_MB"] = value
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert r.stdout.split() == expected.split(), (value, r.stdout)
    # a buffer larger than the limit is not made here (np.empty instead)
    env["WEBNN_RESULT_CACHE_MB"] = "1"
    r = subprocess.run([sys.executable, "-c",
                        "from webnn import _core; print(_core.out_buffer(2 << 20) is None)"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "True", r.stderr


def test_out_buffer_rejects_bad_sizes():
    from webnn import _core
    with pytest.raises(ValueError):
        _core.out_buffer(-1)
    with pytest.raises(TypeError):
        _core.out_buffer("big")
