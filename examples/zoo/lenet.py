"""LeNet (MNIST) as a WebNN graph: conv2d, maxPool2d, reshape, gemm, relu,
softmax.  Weights and layout: ../data/lenet/README.md."""
import os
from typing import Any, Dict, Optional, Tuple

import numpy as np
import numpy.typing as npt

import webnn

from . import reference as ref

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "lenet")

# (name, byte offset, shape) from the README's byte layout table
_LAYOUT = [
    ("conv1_w", 0, (20, 1, 5, 5)), ("conv1_b", 2000, (20,)),
    ("conv2_w", 2080, (50, 20, 5, 5)), ("conv2_b", 102080, (50,)),
    ("fc1_w", 102296, (500, 800)), ("fc1_b", 1702296, (500,)),
    ("fc2_w", 1704296, (10, 500)), ("fc2_b", 1724296, (10,)),
]


def load_weights(path: Optional[str] = None) -> Dict[str, npt.NDArray[np.float32]]:
    with open(path or os.path.join(DATA, "lenet.bin"), "rb") as f:
        data = f.read()
    if len(data) != 1724336:
        raise ValueError(f"lenet.bin has {len(data)} bytes, expected 1724336")
    return {name: np.frombuffer(data, "<f4", int(np.prod(shape)), off).reshape(shape).copy()
            for name, off, shape in _LAYOUT}


def load_digit(digit: int, folder: Optional[str] = None) -> npt.NDArray[np.float32]:
    """One MNIST image as float32 [1, 1, 28, 28] with values 0..255."""
    with open(os.path.join(folder or DATA, f"{digit}.idx"), "rb") as f:
        raw = f.read()
    magic, count, rows, cols = np.frombuffer(raw[:16], ">i4")
    if magic != 2051 or rows != 28 or cols != 28 or count < 1:
        raise ValueError(f"{digit}.idx is not a 28x28 IDX3 image file")
    return np.frombuffer(raw, np.uint8, 784, 16).astype(np.float32).reshape(1, 1, 28, 28)


def build(builder: webnn.MLGraphBuilder, weights: Dict[str, npt.NDArray[np.float32]],
          batch: int = 1) -> Tuple[webnn.MLOperand, webnn.MLOperand]:
    """Returns (logits, probabilities) operands of the graph."""
    b, w = builder, weights
    x = b.input("input", {"dataType": "float32", "shape": [batch, 1, 28, 28]})
    y = b.conv2d(x, b.constant(w["conv1_w"]), bias=b.constant(w["conv1_b"]), label="conv1")
    y = b.max_pool2d(y, window_dimensions=[2, 2], strides=[2, 2], label="pool1")
    y = b.conv2d(y, b.constant(w["conv2_w"]), bias=b.constant(w["conv2_b"]), label="conv2")
    y = b.max_pool2d(y, window_dimensions=[2, 2], strides=[2, 2], label="pool2")
    y = b.reshape(y, [batch, 800])
    y = b.relu(b.gemm(y, b.constant(w["fc1_w"]), c=b.constant(w["fc1_b"]), b_transpose=True,
                      label="fc1"))
    logits = b.gemm(y, b.constant(w["fc2_w"]), c=b.constant(w["fc2_b"]), b_transpose=True,
                    label="fc2")
    return logits, b.softmax(logits, 1)


def reference(weights: Dict[str, npt.NDArray[np.float32]],
              x: npt.NDArray[Any]) -> Tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """float64 NumPy forward pass: (logits, probabilities)."""
    w = weights
    y = ref.conv2d_nchw(x, w["conv1_w"], w["conv1_b"])
    y = ref.max_pool2d_nchw(y, 2, 2)
    y = ref.conv2d_nchw(y, w["conv2_w"], w["conv2_b"])
    y = ref.max_pool2d_nchw(y, 2, 2)
    y = y.reshape(y.shape[0], 800)
    y = np.maximum(y @ w["fc1_w"].astype(np.float64).T + w["fc1_b"], 0)
    logits = y @ w["fc2_w"].astype(np.float64).T + w["fc2_b"]
    return logits, ref.softmax(logits, 1)
