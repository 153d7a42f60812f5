"""python -m webnn.onnx: the runner."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _run(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "webnn.onnx", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def dynamic_model(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                           np.random.default_rng(0).random(108).astype(np.float32))
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["y"])], "g", [x], [y], [w])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_runner_bench_and_compare(dynamic_model):
    pytest.importorskip("onnxruntime")
    r = _run(dynamic_model, "--input-shape", "x=2,3,8,8", "--bench", "5",
             "--compare-onnxruntime", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "x: float32 [2, 3, 8, 8]" in out
    assert "y: float32 [2, 4, 8, 8]" in out
    assert "latency over 5 runs: min" in out and "median" in out
    line = [ln for ln in out.splitlines() if ln.strip().startswith("y: max abs")][0]
    assert float(line.split("max abs")[1].split()[0]) < 1e-4


def test_runner_dim_param(dynamic_model):
    r = _run(dynamic_model, "--input-shape", "N=3")
    assert r.returncode == 0, r.stderr
    assert "x: float32 [3, 3, 8, 8]" in r.stdout


def test_runner_dynamic_without_shape_is_an_error(dynamic_model):
    r = _run(dynamic_model)
    assert r.returncode == 2
    assert "dynamic" in r.stderr and "input_shapes" in r.stderr


def test_runner_profile(tmp_path):
    """--profile N: every step of the compiled graph, labelled with the ONNX
    nodes' names (escaped), a fused conv + relu as one row."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3],
                           np.random.default_rng(0).random(216).astype(np.float32))
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["c"], name="stem\x1b[31m",
                                            pads=[1, 1, 1, 1]),
                           helper.make_node("Relu", ["c"], ["r"], name="stem_relu"),
                           helper.make_node("Sigmoid", ["r"], ["y"], name="gate")],
                          "g", [x], [y], [w])
    path = tmp_path / "p.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    r = _run(path, "--profile", "3", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "GraphProfile (cpu):" in out and "3 runs" in out
    rows = [ln for ln in out.splitlines() if "float32[1, 8, 16, 16]" in ln]
    assert any("conv2d+relu" in ln and "stem\\x1b[31m" in ln for ln in rows), out
    assert any(ln.split()[1].startswith("sigmoid") and "gate" in ln for ln in rows), out
    assert "\x1b" not in out


def test_model_profile_names_onnx_nodes(tmp_path):
    import webnn
    import webnn.onnx
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8], np.ones(64, np.float32))
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"], name="proj"),
                           helper.make_node("Tanh", ["m"], ["y"], name="act")],
                          "g", [x], [y], [w])
    m = webnn.onnx.load(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
                        webnn.ml.create_context(device_type="cpu"))
    p = m.profile({"x": np.ones((4, 8), np.float32)}, runs=2)
    labels = {r["label"] for r in p.rows}
    assert "proj" in labels or "act" in labels
    assert "+".join(p.rows[-1]["operators"]).endswith("tanh")
    with pytest.raises(TypeError, match="missing"):
        m.profile({}, runs=2)
