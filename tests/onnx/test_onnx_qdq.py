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


# ---- QDQ models as onnxruntime.quantization writes them (issue 30) ----------
def _qdq_resnet_block(rng, opset=13):
    """x (float, nchw) -> Q -> DQ -> [Conv 3x3 (int8 weights per channel,
    int32 bias) -> Q -> DQ] -> Conv 3x3 -> Q -> DQ -> Add(block input's DQ)
    -> Q -> DQ -> y: a basic residual block in ORT's QDQ format (the block
    input's DequantizeLinear read by the first conv and by the add)."""
    C = 8
    nodes, inits = [], []

    def init(name, a):
        inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def qdq(src, name, scale, zp=128):
        s, z = init(name + "_s", np.float32(scale)), init(name + "_z", np.uint8(zp))
        nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [name + "_q"]))
        nodes.append(helper.make_node("DequantizeLinear", [name + "_q", s, z], [name + "_dq"]))
        return name + "_dq"

    def conv(src, name, s_in):
        w = rng.integers(-60, 61, (C, C, 3, 3)).astype(np.int8)
        ws = (rng.random(C) * 0.01 + 0.002).astype(np.float32)
        b = rng.integers(-500, 500, C).astype(np.int32)
        wdq = name + "_w_dq"
        nodes.append(helper.make_node("DequantizeLinear", [init(name + "_w", w), init(name + "_ws", ws),
                                                          init(name + "_wz", np.zeros(C, np.int8))],
                                      [wdq], axis=0))
        bdq = name + "_b_dq"
        nodes.append(helper.make_node("DequantizeLinear", [init(name + "_b", b),
                                                          init(name + "_bs", (ws * s_in).astype(np.float32)),
                                                          init(name + "_bz", np.zeros(C, np.int32))],
                                      [bdq], axis=0))
        nodes.append(helper.make_node("Conv", [src, wdq, bdq], [name + "_y"], pads=[1, 1, 1, 1],
                                      name=name))
        return name + "_y"

    x = qdq("x", "in", 0.05)
    h = qdq(conv(x, "c1", 0.05), "h", 0.04)
    h2 = qdq(conv(h, "c2", 0.04), "h2", 0.06)
    nodes.append(helper.make_node("Add", [h2, x], ["sum"]))
    y = qdq("sum", "out", 0.08)
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    g = helper.make_graph(nodes, "qdq_block",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C, 10, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, C, 10, 10])],
                          inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("opset", [o for o in OPSETS if o >= 13])
def test_qdq_convolutions_run_in_integer_arithmetic(ctx, opset):
    """The weights' DequantizeLinear is not folded to float at import, the
    per-tensor QuantizeLinear / DequantizeLinear follow the convolutions into
    nhwc, and the second convolution runs as an integer step; the output
    within one quantization step of ONNX Runtime's (they round the same way
    where the sums agree).  The first stays float: the graph's dequantized
    input is read by the residual add too, so layout planning transposes it
    between its DequantizeLinear and the convolution (README, known limits;
    read by the convolution alone it runs in integers: test_int8's
    test_nchw_first_convolution_runs_in_integers)."""
    m = _qdq_resnet_block(np.random.default_rng(opset), opset)
    x = np.random.default_rng(1).standard_normal((1, 8, 10, 10)).astype(np.float32)
    model = webnn.onnx.load(m.SerializeToString(), ctx)
    summary = str(model.graph.summary())
    # (the region ends in the DequantizeLinear that reads its integers: it
    # writes that float32 itself)
    assert summary.count("conv2d -> quantizeLinear -> dequantizeLinear (int8)") == 1, summary
    assert "c2" in str([r["label"] for r in model.graph.summary().rows
                        if r["operator"] == "conv2d" and r["fused"]])
    got = model.run({"x": x})["y"]
    want = _ort(m, {"x": x})[0]
    step = 0.08
    assert np.max(np.abs(got - want)) <= step * 1.001, np.max(np.abs(got - want))
    assert np.mean(got == want) > 0.9   # most equal; the rest one step apart
