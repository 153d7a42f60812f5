"""ctx.compute() on the CPU runs the graph straight on the caller's arrays
and writes into the arrays it returns (no tensors in between): what it
accepts, what it refuses, and that it equals dispatch + read_tensor."""
import threading

import numpy as np
import pytest

import webnn


def graph(ctx, shape=(2, 3), dt="float32"):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": list(shape)})
    y = b.input("y", {"dataType": dt, "shape": list(shape)})
    return b.build({"sum": b.add(x, y), "prod": b.mul(x, y)})


def test_equals_dispatch_and_read(ctx):
    g = graph(ctx, (64, 33))
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((64, 33)).astype(np.float32) for _ in range(2))
    out = ctx.compute(g, {"x": x, "y": y})
    np.testing.assert_array_equal(out["sum"], x + y)
    np.testing.assert_array_equal(out["prod"], x * y)
    tx, ty = (ctx.create_tensor({"dataType": "float32", "shape": [64, 33], "writable": True}) for _ in range(2))
    ts, tp = (ctx.create_tensor({"dataType": "float32", "shape": [64, 33], "readable": True}) for _ in range(2))
    ctx.write_tensor(tx, x)
    ctx.write_tensor(ty, y)
    ctx.dispatch(g, {"x": tx, "y": ty}, {"sum": ts, "prod": tp})
    np.testing.assert_array_equal(ctx.read_tensor(ts), out["sum"])
    np.testing.assert_array_equal(ctx.read_tensor(tp), out["prod"])


def test_inputs_untouched_and_outputs_fresh(ctx):
    g = graph(ctx)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.ones((2, 3), np.float32)
    x0, y0 = x.copy(), y.copy()
    a = ctx.compute(g, {"x": x, "y": y})
    b = ctx.compute(g, {"x": y, "y": x})
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    assert a["sum"] is not b["sum"] and not np.shares_memory(a["sum"], b["sum"])
    assert not np.shares_memory(a["sum"], x) and a["sum"].flags.writeable


def test_non_contiguous_unaligned_and_raw_bytes(ctx):
    g = graph(ctx, (4,))
    big = np.arange(8, dtype=np.float32)
    strided = big[::2]                                  # not contiguous
    raw = np.zeros(17, np.uint8)
    unaligned = np.frombuffer(raw.data, np.float32, 4, offset=1)  # misaligned view
    assert not unaligned.flags.aligned
    out = ctx.compute(g, {"x": strided, "y": unaligned})
    np.testing.assert_array_equal(out["sum"], [0, 2, 4, 6])
    out = ctx.compute(g, {"x": np.ones(4, np.float32).tobytes(), "y": bytearray(16)})
    np.testing.assert_array_equal(out["sum"], [1, 1, 1, 1])


def test_same_array_twice_and_same_output_twice(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "int32", "shape": [3]})
    y = b.input("y", {"dataType": "int32", "shape": [3]})
    s = b.add(x, y)
    g = b.build({"a": s, "b": s})
    v = np.array([1, -2, 3], np.int32)
    out = ctx.compute(g, {"x": v, "y": v})
    np.testing.assert_array_equal(out["a"], [2, -4, 6])
    np.testing.assert_array_equal(out["b"], [2, -4, 6])


def test_graph_without_inputs(ctx):
    b = webnn.MLGraphBuilder(ctx)
    c = b.constant({"dataType": "float32", "shape": [2]}, np.array([1.5, -2], np.float32))
    g = b.build({"y": b.abs(c)})
    np.testing.assert_array_equal(ctx.compute(g, {})["y"], [1.5, 2])


def test_errors(ctx, ctx2):
    g = graph(ctx)
    ok = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="missing"):
        ctx.compute(g, {"x": ok})
    with pytest.raises(TypeError, match="not inputs"):
        ctx.compute(g, {"x": ok, "y": ok, "z": ok})
    with pytest.raises(TypeError, match="float64"):
        ctx.compute(g, {"x": ok, "y": np.ones((2, 3))})
    with pytest.raises(TypeError, match=r"shape \(5,\) does not match .* \(2, 3\)"):
        ctx.compute(g, {"x": ok, "y": np.ones(5, np.float32)})     # both shapes named
    with pytest.raises(TypeError, match="byte length"):
        ctx.compute(g, {"x": ok, "y": bytes(20)})
    with pytest.raises(TypeError, match="buffer"):
        ctx.compute(g, {"x": ok, "y": [[1, 2, 3], [4, 5, 6]]})
    with pytest.raises(TypeError, match="another context"):
        ctx2.compute(g, {"x": ok, "y": ok})
    g.destroy()
    with pytest.raises(webnn.InvalidStateError, match="destroyed"):
        ctx.compute(g, {"x": ok, "y": ok})


def test_after_context_destroy(ctx):
    g = graph(ctx)
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        ctx.compute(g, {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)})


def test_runs_after_queued_work(ctx):
    """compute() joins the timeline: work queued before it has run."""
    g = graph(ctx, (1024,))
    tx, ty = (ctx.create_tensor({"dataType": "float32", "shape": [1024], "writable": True})
              for _ in range(2))
    ts = ctx.create_tensor({"dataType": "float32", "shape": [1024], "readable": True})
    tp = ctx.create_tensor({"dataType": "float32", "shape": [1024], "readable": True})
    ctx.write_tensor(tx, np.full(1024, 3, np.float32))
    ctx.write_tensor(ty, np.full(1024, 3, np.float32))
    ctx.dispatch(g, {"x": tx, "y": ty}, {"sum": ts, "prod": tp})
    out = ctx.compute(g, {"x": np.ones(1024, np.float32), "y": np.ones(1024, np.float32)})
    np.testing.assert_array_equal(out["sum"], 2)
    np.testing.assert_array_equal(ctx.read_tensor(tp), 9)


def test_threads_share_a_graph(ctx):
    g = graph(ctx, (256,))
    errors = []

    def worker(k):
        try:
            x = np.full(256, k, np.float32)
            for _ in range(50):
                out = ctx.compute(g, {"x": x, "y": x})
                assert np.array_equal(out["sum"], 2 * x) and np.array_equal(out["prod"], x * x)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ths = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    assert not errors


# ---- the C path (_core.compute_dict) and what it leaves to Python -----------------
# ndarrays of the inputs' exact dtypes and shapes, native and C-ordered, in a
# plain dict run in C; everything else is converted (or refused) by the
# Python layer.  Both give the same results.
@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "uint8"])
def test_c_path_dtypes(ctx, dt):
    g = graph(ctx, (3, 5), dt)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 9, (3, 5)).astype(dt)
    y = rng.integers(0, 9, (3, 5)).astype(dt)
    out = ctx.compute(g, {"x": x, "y": y})
    assert set(out) == {"sum", "prod"}
    np.testing.assert_array_equal(out["sum"], (x + y).astype(dt))
    np.testing.assert_array_equal(out["prod"], (x * y).astype(dt))
    assert out["sum"].dtype == np.dtype(dt) and out["sum"].shape == (3, 5)


def test_inputs_the_python_layer_converts(ctx):
    g = graph(ctx, (2, 3))
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y = np.full((2, 3), 0.5, np.float32)
    want_sum, want_prod = x + y, x * y

    class D(dict):
        pass

    class Sub(np.ndarray):
        pass

    cases = {
        "byte-swapped": {"x": x.astype(">f4"), "y": y},
        "fortran order": {"x": np.asfortranarray(x), "y": y},
        "dict subclass": D(x=x, y=y),
        "ndarray subclass": {"x": x.view(Sub), "y": y},
        "read-only": {"x": x.copy(), "y": y},
    }
    cases["read-only"]["x"].flags.writeable = False
    for what, ins in cases.items():
        out = ctx.compute(g, ins)
        np.testing.assert_array_equal(out["sum"], want_sum, err_msg=what)
        np.testing.assert_array_equal(out["prod"], want_prod, err_msg=what)


def test_one_element_input_of_another_shape(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1]})
    g = b.build({"y": b.neg(x)})
    for v in (np.array([[2.5]], np.float32), np.float32(2.5), np.array(2.5, np.float32)):
        np.testing.assert_array_equal(ctx.compute(g, {"x": v})["y"], [-2.5])


def test_large_outputs_on_the_result_cache(ctx):
    """Outputs of 1 MiB or more come from the result cache's allocator: each
    call's arrays are its own."""
    n = 1 << 19                                  # 2 MiB of float32
    g = graph(ctx, (n,))
    x = np.arange(n, dtype=np.float32)
    a = ctx.compute(g, {"x": x, "y": x})
    b = ctx.compute(g, {"x": x, "y": -x})
    np.testing.assert_array_equal(a["sum"], 2 * x)
    np.testing.assert_array_equal(b["sum"], np.zeros(n, np.float32))
    assert not np.shares_memory(a["sum"], b["sum"])
    assert a["sum"].flags.writeable and a["sum"].flags.c_contiguous


def test_c_path_keeps_the_callers_dict(ctx):
    g = graph(ctx)
    x = np.ones((2, 3), np.float32)
    ins = {"x": x, "y": x}
    ctx.compute(g, ins)
    assert list(ins) == ["x", "y"] and ins["x"] is x and ins["y"] is x
