"""ONNX's own backend test suite (onnx.backend.test.BackendTest) against
webnn.onnx.backend: the node tests (collected from the onnx package's test
cases), the light_* models (kind 'real': AlexNet, DenseNet-121, Inception
v1/v2, ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512, with the outputs
shipped in the onnx wheel), pytorch-converted, pytorch-operator and simple.
CPU device only.  Each excluded test is listed with its reason in
excluded.txt."""
import os
import tempfile
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402

import webnn.onnx.backend as backend  # noqa: E402

# the light models' generated test data go here, not to ~/.onnx
os.environ.setdefault("ONNX_HOME", os.path.join(tempfile.gettempdir(), "webnn_onnx_home"))


def excluded():
    out = {}
    for line in (Path(__file__).parent / "excluded.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, why = line.split("\t", 1)
            out[name] = why
    return out


EXCLUDED = excluded()

_bt = onnx.backend.test.BackendTest(backend, __name__)
_bt.include(r"_cpu$")
for _name in EXCLUDED:
    _bt.exclude(f"^{_name}_cpu$")

globals().update(_bt.test_cases)
