"""Weights taken from the file's bytes without a copy (webnn/onnx/_weights.py,
issue 31's load speed): the offsets found by walking the wire format are
those of each initializer's raw_data, and anything unexpected falls back."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402
from webnn.onnx import _weights  # noqa: E402


def _model(inits):
    node = helper.make_node("Add", ["x", inits[0].name], ["y"])
    g = helper.make_graph([node], "w", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def test_offsets_are_the_raw_data():
    rng = np.random.default_rng(3)
    arrays = {"a": rng.random(3, dtype=np.float32), "b": np.arange(7, dtype=np.int64),
              "c": rng.random((2, 5)).astype(np.float16)}
    m = _model([numpy_helper.from_array(v, k) for k, v in arrays.items()])
    buf = m.SerializeToString()
    offsets = _weights.raw_offsets(buf)
    assert set(offsets) == set(arrays)
    for t in m.graph.initializer:
        off, n = offsets[t.name]
        assert buf[off:off + n] == t.raw_data
        v = _weights.view(buf, offsets, t)
        np.testing.assert_array_equal(v, arrays[t.name])
        assert np.shares_memory(v, np.frombuffer(buf, np.uint8)) and not v.flags.writeable


def test_unexpected_layouts_fall_back():
    a = numpy_helper.from_array(np.ones(3, np.float32), "a")
    buf = _model([a, numpy_helper.from_array(np.zeros(3, np.float32), "a")]).SerializeToString()
    assert _weights.raw_offsets(buf) == {}             # a name twice
    _weights.raw_offsets(buf[:-5])                     # truncated: no exception
    assert _weights.raw_offsets(b"\x0b\x0c") == {}      # a group
    short = TensorProto(name="a", data_type=TensorProto.FLOAT, dims=[4],
                        raw_data=np.ones(3, np.float32).tobytes())
    buf = _model([short]).SerializeToString()
    assert _weights.view(buf, _weights.raw_offsets(buf), short) is None   # size mismatch


def test_path_and_bytes_load_the_same_values(tmp_path):
    w = np.array([1.5, -2.0, 7.25], np.float32)
    m = _model([numpy_helper.from_array(w, "w")])
    onnx.save(m, tmp_path / "m.onnx")
    x = np.array([1, 2, 3], np.float32)
    ctx = webnn.ml.create_context(device_type="cpu")
    for src in (tmp_path / "m.onnx", m.SerializeToString(), bytearray(m.SerializeToString()), m):
        np.testing.assert_array_equal(webnn.onnx.load(src, ctx).run({"x": x})["y"], x + w)


# ---- a path's large weights read straight from the file (_weights.scan) -------
def _big_model(rng):
    """x [2, 64] @ w [64, 48] + b [48], w2 [48, 60] (float16, cast), an int64
    table of 700 (over 4 KiB but under the checker's threshold as 4-byte
    elements: kept in the proto), a small initializer and a Constant node."""
    w = rng.standard_normal((64, 48)).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    w2 = rng.standard_normal((48, 60)).astype(np.float16)
    idx = np.arange(700, dtype=np.int64)[::-1].copy()
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "b"], ["h2"]),
             helper.make_node("Cast", ["w2"], ["w2f"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["h2", "w2f"], ["y0"]),
             helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
                 np.full(60, 0.5, np.float32))),
             helper.make_node("Add", ["y0", "c"], ["y"]),
             helper.make_node("Gather", ["idx", "i"], ["g"], axis=0)]
    inits = [numpy_helper.from_array(v, k) for k, v in
             (("w", w), ("b", b), ("w2", w2), ("idx", idx), ("i", np.array([0, 699], np.int64)))]
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 60]),
                           helper.make_tensor_value_info("g", TensorProto.INT64, [2])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return m, (w, b, w2, idx)


def test_scan_leaves_out_the_large_weights(tmp_path):
    m, (w, b, w2, idx) = _big_model(np.random.default_rng(5))
    path = tmp_path / "big.onnx"
    onnx.save(m, path)
    with open(path, "rb") as f:
        skeleton, stripped = _weights.scan(f.fileno(), path.stat().st_size)
        arrays = _weights.read_stripped(f.fileno(), stripped)
    assert set(stripped) == {"w", "w2"}         # b: 192 B; idx: 5.6 KiB but 700 x 4 B < 4 KiB
    assert len(skeleton) <= path.stat().st_size - w.nbytes - w2.nbytes
    sk = onnx.ModelProto()
    sk.ParseFromString(skeleton)
    by_name = {t.name: t for t in sk.graph.initializer}
    for name, want in (("w", w), ("w2", w2)):
        t = by_name[name]
        assert not t.HasField("raw_data") and list(t.dims) == list(want.shape)
        np.testing.assert_array_equal(arrays[name], want)
        assert arrays[name].dtype == want.dtype and not arrays[name].flags.writeable
        owner = arrays[name]
        while isinstance(owner, np.ndarray):
            owner = owner.base
        assert type(owner).__name__ == "_HostBuffer"
    np.testing.assert_array_equal(numpy_helper.to_array(by_name["idx"]), idx)
    np.testing.assert_array_equal(numpy_helper.to_array(by_name["b"]), b)
    # everything but the left-out raw_data is as it was
    full = onnx.load(str(path))
    for t in full.graph.initializer:
        if t.name in stripped:
            t.ClearField("raw_data")
    assert full.SerializeToString() == sk.SerializeToString()


def test_a_path_loads_as_bytes_do(tmp_path):
    rng = np.random.default_rng(6)
    m, (w, b, w2, idx) = _big_model(rng)
    path = tmp_path / "big.onnx"
    onnx.save(m, path)
    x = rng.standard_normal((2, 64)).astype(np.float32)
    want = (x.astype(np.float64) @ w + b) @ w2.astype(np.float64) + 0.5
    ctx = webnn.ml.create_context(device_type="cpu")
    for src in (path, m.SerializeToString()):
        out = webnn.onnx.load(src, ctx).run({"x": x})
        np.testing.assert_allclose(out["y"], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(out["g"], [idx[0], idx[699]])


def test_scan_falls_back_on_odd_files(tmp_path):
    m, _ = _big_model(np.random.default_rng(7))
    buf = m.SerializeToString()
    dup = onnx.ModelProto()
    dup.CopyFrom(m)
    dup.graph.initializer.append(dup.graph.initializer[0])   # "w" twice
    for name, data in (("dup", dup.SerializeToString()), ("cut", buf[:len(buf) - 3000]),
                       ("small", _model([numpy_helper.from_array(np.ones(3, np.float32), "a")])
                        .SerializeToString())):
        p = tmp_path / f"{name}.onnx"
        p.write_bytes(data)
        with open(p, "rb") as f:
            assert _weights.scan(f.fileno(), p.stat().st_size) is None, name
    # the loader then reads the whole file and decides as before
    with pytest.raises(TypeError):
        webnn.onnx.load(tmp_path / "cut.onnx")


def test_a_graph_keeps_its_weights_alive():
    """A read-only array over a host block is the constant itself (no copy):
    the graph holds the block after every Python reference is gone; a
    writable one is copied, as the spec's constant() says."""
    import gc
    from webnn import _core
    ctx = webnn.ml.create_context(device_type="cpu")
    k = np.array([1.5, -2.0, 4.0, 0.25], np.float32)

    def graph(writable):
        hb = _core.host_buffer(16)
        a = np.frombuffer(hb, np.float32)
        a[:] = k
        a.flags.writeable = writable
        bld = webnn.MLGraphBuilder(ctx)
        x = bld.input("x", {"dataType": "float32", "shape": [4]})
        g = bld.build({"y": bld.add(x, bld.constant(a))})
        return g, a

    x = np.arange(4, dtype=np.float32)
    g, a = graph(False)
    del a
    gc.collect()
    np.testing.assert_array_equal(ctx.compute(g, {"x": x})["y"], x + k)
    g, a = graph(True)
    a[:] = 100                   # after constant(): not seen by the graph
    np.testing.assert_array_equal(ctx.compute(g, {"x": x})["y"], x + k)
