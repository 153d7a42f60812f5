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
