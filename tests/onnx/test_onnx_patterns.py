"""Subgraphs imported as one WebNN operator (webnn/onnx/_patterns.py): the
five-node erf gelu that exporters write becomes gelu, in every order of its
products; anything that breaks the pattern is converted node by node.  Values
against the formula in float64."""
import math

import numpy as np
import pytest

onnx = pytest.importorskip("onnx.helper")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402


def _gelu64(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _const(name, v):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(
        np.array(v, np.float32)))


def _model(variant, extra_outputs=(), scale_node="Div", x_static=False):
    nodes = [_const("s2", math.sqrt(2) if scale_node == "Div" else 1 / math.sqrt(2)),
             _const("one", 1.0), _const("half", 0.5),
             helper.make_node("Relu", ["x"], ["xr"]) if not x_static else
             _const("xr", [[-1.5, 0.25, 2.0]]),
             helper.make_node(scale_node, ["xr", "s2"], ["d"]),
             helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["one", "e"], ["a"])]
    if variant == "x_first":      # (x * (1 + erf)) * 0.5
        nodes += [helper.make_node("Mul", ["xr", "a"], ["m"]),
                  helper.make_node("Mul", ["m", "half"], ["y0"])]
    elif variant == "half_first":  # x * ((1 + erf) * 0.5)
        nodes += [helper.make_node("Mul", ["a", "half"], ["m"]),
                  helper.make_node("Mul", ["xr", "m"], ["y0"])]
    else:                           # (x * 0.5) * (1 + erf)
        nodes += [helper.make_node("Mul", ["half", "xr"], ["m"]),
                  helper.make_node("Mul", ["m", "a"], ["y0"])]
    nodes.append(helper.make_node("Neg", ["y0"], ["y"]))
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    outs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in extra_outputs]
    g = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [2, 3])], outs)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _ops(m):
    return str(m.graph.summary())


X = np.array([[-3.0, -0.5, 0.0], [0.7, 1.9, 6.0]], np.float32)


@pytest.mark.parametrize("variant", ["x_first", "half_first", "x_half"])
@pytest.mark.parametrize("scale_node", ["Div", "Mul"])
def test_erf_gelu_is_one_gelu(variant, scale_node):
    m = webnn.onnx.load(_model(variant, scale_node=scale_node).SerializeToString())
    ops = _ops(m)
    assert "gelu" in ops and "erf" not in ops, ops
    y = m.run({"x": X})["y"]
    np.testing.assert_allclose(y, -_gelu64(np.maximum(X, 0)), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("seen", [["a"], ["e"], ["m"]])
def test_a_value_used_outside_stays_node_by_node(seen):
    m = webnn.onnx.load(_model("x_first", extra_outputs=seen).SerializeToString())
    ops = _ops(m)
    assert "erf" in ops and "gelu" not in ops, ops
    y = m.run({"x": X})["y"]
    np.testing.assert_allclose(y, -_gelu64(np.maximum(X, 0)), rtol=2e-6, atol=1e-7)


def test_a_wrong_constant_is_no_gelu():
    model = _model("x_first")
    model.graph.node[2].CopyFrom(_const("half", 0.51))
    m = webnn.onnx.load(model.SerializeToString())
    assert "gelu" not in _ops(m)
    xr = np.maximum(X, 0).astype(np.float64)
    want = -(xr * (1 + np.vectorize(math.erf)(xr / math.sqrt(2))) * np.float64(np.float32(0.51)))
    np.testing.assert_allclose(m.run({"x": X})["y"], want, rtol=2e-6, atol=1e-7)


def test_a_constant_x_folds():
    m = webnn.onnx.load(_model("x_first", x_static=True).SerializeToString())
    y = m.run({"x": X})["y"]
    np.testing.assert_allclose(y, -_gelu64(np.array([[-1.5, 0.25, 2.0]], np.float32)),
                               rtol=2e-6, atol=1e-7)
