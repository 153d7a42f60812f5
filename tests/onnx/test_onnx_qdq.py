"""QuantizeLinear / DequantizeLinear of every opset that has them (10, 13,
19, 21, 23, 25 ...), per tensor and per axis, with and without a zero point,
folded at import (all inputs constant) and run by the graph, against ONNX
Runtime (issue 31: opsets 10 and 13 did not fold, onnx.reference implements
only the newer versions)."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402

OPSETS = [v for v in (10, 13, 19, 21, 23, 25) if v <= onnx.defs.onnx_opset_version()]


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context(device_type="cpu")


def _ort(m, feeds):
    m.ir_version = min(m.ir_version, 10)
    return ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("per_axis", [False, True], ids=["per_tensor", "per_axis"])
@pytest.mark.parametrize("static", [False, True], ids=["run", "folded"])
@pytest.mark.parametrize("qt", [TensorProto.INT8, TensorProto.UINT8, None],
                         ids=["int8", "uint8", "no_zero_point"])
def test_quantize_dequantize(ctx, opset, per_axis, static, qt):
    if per_axis and opset < 13:
        pytest.skip("per-axis quantization arrived in opset 13")
    rng = np.random.default_rng(opset * 8 + 4 * per_axis + 2 * static + (qt or 0))
    x = (rng.standard_normal((2, 3, 4)) * 4).astype(np.float32)
    scale = np.array([0.05, 0.1, 0.2], np.float32) if per_axis else np.array(0.07, np.float32)
    npq = {TensorProto.INT8: np.int8, TensorProto.UINT8: np.uint8, None: np.uint8}[qt]
    zp = np.array([3, 120, 0] if per_axis else 100, npq) if npq == np.uint8 else \
        np.array([3, -2, 0] if per_axis else -5, npq)
    attrs = {"axis": 1} if per_axis else {}
    inits = [numpy_helper.from_array(scale, "s")]
    ins = ["x", "s"]
    if qt is not None:
        inits.append(numpy_helper.from_array(zp, "z"))
        ins.append("z")
    if static:
        inits.append(numpy_helper.from_array(x, "x"))
    nodes = [helper.make_node("QuantizeLinear", ins, ["q"], **attrs),
             helper.make_node("DequantizeLinear", ["q"] + ins[1:], ["y"], **attrs)]
    out_t = TensorProto.UINT8 if qt is None else qt
    g = helper.make_graph(
        nodes, "qdq", [] if static else [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       [2, 3, 4])],
        [helper.make_tensor_value_info("q", out_t, [2, 3, 4]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    feeds = {} if static else {"x": x}
    want_q, want_y = _ort(m, feeds)
    out = webnn.onnx.load(m, ctx).run(feeds)
    assert out["q"].dtype == want_q.dtype
    np.testing.assert_array_equal(out["q"], want_q)
    np.testing.assert_allclose(out["y"], want_y, rtol=1e-6, atol=1e-6)
    # a value that saturates and the values themselves are not all trivial
    assert len(np.unique(want_q)) > 5


@pytest.mark.parametrize("opset", OPSETS)
def test_dequantize_int32(ctx, opset):
    """DequantizeLinear of int32 (bias of QDQ models), folded, every opset."""
    xq = np.array([-70000, -3, 0, 5, 123456], np.int32)
    g = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["xq", "s"], ["y"])], "dq", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])],
        [numpy_helper.from_array(xq, "xq"), numpy_helper.from_array(np.array(0.5, np.float32), "s")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    (want,) = _ort(m, {})
    np.testing.assert_array_equal(webnn.onnx.load(m, ctx).run({})["y"], want)
