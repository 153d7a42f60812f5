"""The MobileNetV2 backbone (without classifier) as a WebNN graph: 52 conv2d,
35 clamp (ReLU6), 10 residual adds, a global average pool and a reshape to
the 1280-wide feature vector.  Weights, architecture and preprocessing:
../data/mobilenetv2/README.md."""
import os
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
import numpy.typing as npt

import webnn

from . import reference as ref

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                    "mobilenetv2")

# (weights name, stride, groups == channels (depthwise), relu6, residual source row)
# Rows follow the README's architecture table (row numbers from 1).
_ROWS = [
    ("conv_0", 2, False, True, None), ("conv_2", 1, True, True, None),
    ("conv_4", 1, False, False, None),
    ("conv_5", 1, False, True, None), ("conv_7", 2, True, True, None), ("conv_9", 1, False, False, None),
    ("conv_10", 1, False, True, None), ("conv_12", 1, True, True, None), ("conv_14", 1, False, False, 6),
    ("conv_16", 1, False, True, None), ("conv_18", 2, True, True, None), ("conv_20", 1, False, False, None),
    ("conv_21", 1, False, True, None), ("conv_23", 1, True, True, None), ("conv_25", 1, False, False, 12),
    ("conv_27", 1, False, True, None), ("conv_29", 1, True, True, None), ("conv_31", 1, False, False, 15),
    ("conv_33", 1, False, True, None), ("conv_35", 2, True, True, None), ("conv_37", 1, False, False, None),
    ("conv_38", 1, False, True, None), ("conv_40", 1, True, True, None), ("conv_42", 1, False, False, 21),
    ("conv_44", 1, False, True, None), ("conv_46", 1, True, True, None), ("conv_48", 1, False, False, 24),
    ("conv_50", 1, False, True, None), ("conv_52", 1, True, True, None), ("conv_54", 1, False, False, 27),
    ("conv_56", 1, False, True, None), ("conv_58", 1, True, True, None), ("conv_60", 1, False, False, None),
    ("conv_61", 1, False, True, None), ("conv_63", 1, True, True, None), ("conv_65", 1, False, False, 33),
    ("conv_67", 1, False, True, None), ("conv_69", 1, True, True, None), ("conv_71", 1, False, False, 36),
    ("conv_73", 1, False, True, None), ("conv_75", 2, True, True, None), ("conv_77", 1, False, False, None),
    ("conv_78", 1, False, True, None), ("conv_80", 1, True, True, None), ("conv_82", 1, False, False, 42),
    ("conv_84", 1, False, True, None), ("conv_86", 1, True, True, None), ("conv_88", 1, False, False, 45),
    ("conv_90", 1, False, True, None), ("conv_92", 1, True, True, None), ("conv_94", 1, False, False, None),
    ("conv_95", 1, False, True, None),
]

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])


Weights = Dict[str, Tuple[npt.NDArray[Any], npt.NDArray[Any]]]


def load_weights(folder: Optional[str] = None) -> Weights:
    folder = folder or DATA
    return {name: (np.load(os.path.join(folder, f"{name}_weight.npy")),
                   np.load(os.path.join(folder, f"{name}_bias.npy")))
            for name, *_ in _ROWS}


def load_image(path: Optional[str] = None, size: int = 224) -> npt.NDArray[np.float32]:
    """The README's preprocessing: RGB, stretch to 224x224 bilinear, /255,
    normalise, CHW, batch dim -> float32 [1,3,224,224].  Needs Pillow."""
    from PIL import Image
    img = Image.open(path or os.path.join(DATA, "test.jpg")).convert("RGB")
    img = img.resize((size, size), Image.Resampling.BILINEAR)
    x = np.asarray(img, np.float64) / 255.0
    x = (x - MEAN) / STD
    out: npt.NDArray[np.float32] = x.transpose(2, 0, 1)[None].astype(np.float32)
    return out


def build(builder: webnn.MLGraphBuilder, weights: Weights, batch: int = 1,
          layout: str = "nchw") -> webnn.MLOperand:
    """Returns the [batch, 1280] feature operand."""
    b = builder
    x = b.input("input", {"dataType": "float32", "shape": [batch, 3, 224, 224]})
    outputs: Dict[int, webnn.MLOperand] = {}
    for row, (name, stride, depthwise, relu6, residual) in enumerate(_ROWS, 1):
        w, bias = weights[name]
        pad = 1 if w.shape[2] == 3 else 0
        x = b.conv2d(x, b.constant(w), bias=b.constant(bias), strides=[stride, stride],
                     padding=[pad] * 4, groups=w.shape[0] if depthwise else 1, label=name)
        if relu6:
            x = b.clamp(x, min_value=0, max_value=6)
        if residual is not None:
            x = b.add(x, outputs[residual])
        outputs[row] = x
    x = b.average_pool2d(x)
    return b.reshape(x, [batch, 1280])


def reference(weights: Weights, x: npt.ArrayLike) -> npt.NDArray[Any]:
    """float64 NumPy forward pass -> [N, 1280]."""
    y: npt.NDArray[Any] = np.asarray(x, np.float64)
    outputs: Dict[int, npt.NDArray[Any]] = {}
    for row, (name, stride, depthwise, relu6, residual) in enumerate(_ROWS, 1):
        w, bias = weights[name]
        pad = 1 if w.shape[2] == 3 else 0
        if depthwise:
            y = ref.depthwise_conv2d_nchw(y, w, bias, stride, pad)
        else:
            y = ref.conv2d_nchw(y, w, bias, stride, pad)
        if relu6:
            y = np.clip(y, 0, 6)
        if residual is not None:
            y = y + outputs[residual]
        outputs[row] = y
    features: npt.NDArray[Any] = y.mean(axis=(2, 3))
    return features


def torch_forward(torch: Any, weights: Weights, device: str = "cpu") -> Callable[[Any], Any]:
    """The same network in PyTorch (for the benchmarks): returns forward(x),
    x an NCHW float32 torch tensor on `device`, giving [N, 1280]."""
    F = torch.nn.functional
    params = [(torch.from_numpy(w).to(device), torch.from_numpy(b).to(device))
              for w, b in (weights[name] for name, *_ in _ROWS)]

    def forward(x: Any) -> Any:
        outputs: Dict[int, Any] = {}
        for row, ((name, stride, depthwise, relu6, residual), (w, b)) in enumerate(
                zip(_ROWS, params), 1):
            pad = 1 if w.shape[2] == 3 else 0
            x = F.conv2d(x, w, b, stride, pad, 1, w.shape[0] if depthwise else 1)
            if relu6:
                x = F.hardtanh(x, 0.0, 6.0)
            if residual is not None:
                x = x + outputs[residual]
            outputs[row] = x
        return F.adaptive_avg_pool2d(x, 1).flatten(1)
    return forward


def onnx_model(weights: Weights, batch: int = 1, opset: int = 17) -> Any:
    """The same network as an ONNX model (onnx.ModelProto, built with
    onnx.helper), for ONNX Runtime in the benchmarks: input "input"
    [batch, 3, 224, 224], output "f" [batch, 1280]."""
    import onnx  # type: ignore[import-not-found, unused-ignore]
    from onnx import TensorProto, helper, numpy_helper  # type: ignore[import-not-found, unused-ignore]
    nodes: list[Any] = []
    inits: list[Any] = []
    x = "input"
    outputs: Dict[int, str] = {}
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    six = numpy_helper.from_array(np.array(6, np.float32), "six")
    inits += [zero, six]
    for row, (name, stride, depthwise, relu6, residual) in enumerate(_ROWS, 1):
        w, bias = weights[name]
        inits += [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(bias, f"{name}_b")]
        pad = 1 if w.shape[2] == 3 else 0
        y = f"{name}_y"
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [y], name=name,
                                      strides=[stride, stride], pads=[pad] * 4,
                                      group=w.shape[0] if depthwise else 1))
        x = y
        if relu6:
            nodes.append(helper.make_node("Clip", [x, "zero", "six"], [x + "_r6"]))
            x = x + "_r6"
        if residual is not None:
            nodes.append(helper.make_node("Add", [x, outputs[residual]], [x + "_res"]))
            x = x + "_res"
        outputs[row] = x
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"]))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["f"], axis=1))
    graph = helper.make_graph(
        nodes, "mobilenetv2",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info("f", TensorProto.FLOAT, [batch, 1280])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    return model
