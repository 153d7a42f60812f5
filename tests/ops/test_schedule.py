"""The schedule stage (csrc/compiler/schedule.c, csrc/backend/steps.h): after
lowering, the core turns the plan's order, the fused chains, the aliased
reshapes and the linked conv pairs into the list of steps a backend prepares
and runs.  Read through webnn._core.graph_view(g._h)["steps"]: each test
checks the steps of a small graph (which nodes run as one step, which are no
step, what a step reads and writes) and that the graph's results are those
of NumPy float64 (or of the operators run apart)."""
import os

import numpy as np
import pytest

import webnn

from .conftest import cpu_level, rng_for
from .test_fusion import _pair, _pair_case, assert_same, make_context, run_both
from .test_int8 import make_case, reference
from .test_int8 import build as build_int8


def view(g):
    return webnn._core.graph_view(g._h)


def run_steps(v):
    """the steps execute() runs, in order"""
    return [s for s in v["steps"] if not s["inner"]]


def producer_of(v, operand):
    """node id of the node that writes an operand"""
    return next(i for i, n in enumerate(v["nodes"]) if operand in n["outputs"])


@pytest.fixture(scope="module")
def cpu_fused():
    return make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_FOLD_BN="0")


@pytest.fixture(scope="module")
def cpu_plain():
    return make_context(WEBNN_CPU_FUSION="0")


def conv_nchw(x, w, pad):
    """NumPy float64 conv2d, nchw / oihw, stride 1"""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, _, kh, kw = w.shape
    n, _, h, wd = x.shape
    oh, ow = h - kh + 1, wd - kw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.float64))
    return y


def conv_add_relu(ctx, rng):
    x = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    w = rng.standard_normal((3, 4, 3, 3)).astype(np.float32)
    r = rng.standard_normal((2, 3, 6, 5)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", {"dataType": "float32", "shape": list(x.shape)})
    ri = b.input("r", {"dataType": "float32", "shape": list(r.shape)})
    y = b.relu(b.add(b.conv2d(xi, b.constant(w), padding=[1, 1, 1, 1]), ri))
    g = b.build({"y": y})
    want = np.maximum(conv_nchw(x, w, 1) + r, 0)
    return g, {"x": x, "r": r}, want


def test_epilogue_chain_is_one_step(cpu_fused):
    """conv2d -> add -> relu: one step at the relu's position running the
    conv2d's kernel, reading the add's other input as its addend and
    writing the relu's result; the add and the relu are no step."""
    g, inputs, want = conv_add_relu(cpu_fused, rng_for("schedule", "chain"))
    v = view(g)
    conv, add, relu = v["order"]
    assert [v["nodes"][n]["operator"] for n in (conv, add, relu)] == ["conv2d", "add", "relu"]
    (s,) = v["steps"]
    assert s["kind"] == "epilogue" and s["operator"] == "conv2d" and not s["inner"]
    assert s["node"] == conv and s["nodes"] == [conv, add, relu]
    assert s["at"] == 2  # the relu's plan position
    assert s["inputs"] == v["nodes"][conv]["inputs"]
    assert s["result"] == v["outputs"][0] == v["nodes"][relu]["outputs"][0]
    assert s["addend"] == v["inputs"][1]  # r
    got = cpu_fused.compute(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_without_fusion_every_node_is_a_step(cpu_plain):
    g, inputs, want = conv_add_relu(cpu_plain, rng_for("schedule", "chain"))
    v = view(g)
    steps = run_steps(v)
    assert [s["kind"] for s in steps] == ["node"] * 3
    assert [s["operator"] for s in steps] == ["conv2d", "add", "relu"]
    assert [s["nodes"] for s in steps] == [[n] for n in v["order"]]
    assert [s["at"] for s in steps] == [0, 1, 2]
    for s in steps:
        n = v["nodes"][s["node"]]
        assert s["inputs"] == n["inputs"] and s["result"] == n["outputs"][0]
        assert s["addend"] is None
    got = cpu_plain.compute(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("fusion", ["1", "0"])
def test_aliased_reshape_is_no_step(fusion):
    """softmax -> reshape -> softmax: the reshape into an intermediate is a
    view of its input (WNN_PLAN_ALIAS, with or without fusion): no step; the
    second softmax reads the reshape's result (its input's storage)."""
    ctx = make_context(WEBNN_CPU_FUSION=fusion)
    x = rng_for("schedule", "alias").standard_normal((2, 6)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", {"dataType": "float32", "shape": [2, 6]})
    r = b.reshape(b.softmax(xi, 1), [3, 4])
    g = b.build({"y": b.softmax(r, 1)})
    v = view(g)
    assert [v["nodes"][n]["operator"] for n in v["order"]] == ["softmax", "reshape", "softmax"]
    steps = run_steps(v)
    assert [s["operator"] for s in steps] == ["softmax", "softmax"]
    assert [s["at"] for s in steps] == [0, 2]
    reshape = v["order"][1]
    assert steps[1]["inputs"] == v["nodes"][reshape]["outputs"]
    assert steps[0]["inputs"] == [v["inputs"][0]]
    got = ctx.compute(g, {"x": x})["y"]
    want = softmax(softmax(x.astype(np.float64)).reshape(3, 4))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_eltwise_run_is_one_step(cpu_fused):
    """abs -> mul(., x) -> neg -> exp -> add(., y): one pass
    (WNN_FUSE_ELTWISE) at the add's position, its inputs x (read by two of
    its nodes) and y, each listed once."""
    rng = rng_for("schedule", "eltwise")
    x = rng.standard_normal((3, 8)).astype(np.float32)
    y = rng.standard_normal((1, 8)).astype(np.float32)
    b = webnn.MLGraphBuilder(cpu_fused)
    xi = b.input("x", {"dataType": "float32", "shape": [3, 8]})
    yi = b.input("y", {"dataType": "float32", "shape": [1, 8]})
    g = b.build({"z": b.add(b.exp(b.neg(b.mul(b.abs(xi), xi))), yi)})
    v = view(g)
    (s,) = v["steps"]
    assert s["kind"] == "eltwise" and s["operator"] == "add"
    assert s["nodes"] == v["order"] and len(s["nodes"]) == 5
    assert s["node"] == v["order"][-1] and s["at"] == 4
    assert s["inputs"] == v["inputs"]  # x, y
    assert s["result"] == v["outputs"][0]
    got = cpu_fused.compute(g, {"x": x, "y": y})["z"]
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(got, np.exp(-(np.abs(x64) * x64)) + y, rtol=1e-6, atol=1e-7)


def test_qdq_region_is_one_step(cpu_fused):
    """dequantizeLinear(x), dequantizeLinear(w) -> matmul -> relu ->
    quantizeLinear: one integer step (WNN_FUSE_QDQ) at the
    quantizeLinear, reading x's dequantizeLinear's inputs."""
    c = make_case(rng_for("schedule", "qdq"), "matmul", act="relu")
    g = build_int8(cpu_fused, c)
    v = view(g)
    steps = run_steps(v)
    (s,) = [s for s in steps if s["kind"] == "qdq"]
    assert s["operator"] == "quantizeLinear" and s["node"] == v["order"][-1]
    assert s["inputs"][0] == v["inputs"][0]
    assert producer_of(v, v["outputs"][0]) == s["node"]
    assert sorted(v["nodes"][n]["operator"] for n in s["nodes"]) == sorted(
        ["dequantizeLinear", "dequantizeLinear", "matmul", "relu", "quantizeLinear"])
    # nothing else runs (the weights' dequantizeLinear is the region's)
    assert steps == [s]
    np.testing.assert_array_equal(cpu_fused.compute(g, {"x": c["x"]})["y"], reference(c))


@pytest.fixture(scope="module")
def pair_contexts():
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_CONV_PAIRS="1", WEBNN_CPU_FOLD_BN="0"),
            make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_CONV_PAIRS="0", WEBNN_CPU_FOLD_BN="0"))


@pytest.mark.skipif(cpu_level() == "baseline",
                    reason="the conv pair kernel needs x86-64 AVX2 or AVX-512 (make test-isa "
                           "caps the level with WEBNN_CPU_ISA)")
def test_conv_pair_steps(pair_contexts):
    """expansion -> depthwise -> projection (+ residual): one conv_pair step
    at the residual add running the projection, whose pre_d is the
    depthwise step, whose pre_e is the expansion's: both inner steps, never
    run alone; with pairs off, three epilogue steps.  The results are the
    same."""
    p, inputs, _ = _pair_case("block_residual")
    fused, plain, _ = run_both(pair_contexts, lambda b, ops: _pair(b, ops, p), inputs)
    assert_same(fused, plain)
    graphs = []
    for ctx in pair_contexts:
        b = webnn.MLGraphBuilder(ctx)
        ops = {k: b.input(k, {"dataType": "float32", "shape": list(a.shape)}) for k, a in inputs.items()}
        graphs.append(view(b.build({"y": _pair(b, ops, p)})))
    v, apart = graphs
    convs = [n for n in v["order"] if v["nodes"][n]["operator"] == "conv2d"]
    assert len(convs) == 3
    (head,) = run_steps(v)
    assert head["kind"] == "conv_pair" and head["node"] == convs[2]
    assert head["at"] == len(v["order"]) - 1 and head["result"] == v["outputs"][0]
    assert head["addend"] == v["inputs"][0] and head["pre_e"] == 0
    dw = v["steps"][head["pre_d"] - 1]
    assert dw["inner"] and dw["kind"] == "conv_pair" and dw["node"] == convs[1] and dw["pre_d"] == 0
    ex = v["steps"][dw["pre_e"] - 1]
    assert ex["inner"] and ex["kind"] == "epilogue" and ex["node"] == convs[0]
    assert ex["pre_e"] == ex["pre_d"] == 0
    assert len(v["steps"]) == 3
    # the chains' nodes, all of the graph's, each in one step
    assert sorted(ex["nodes"] + dw["nodes"] + head["nodes"]) == sorted(v["order"])
    steps = run_steps(apart)
    assert [s["kind"] for s in steps] == ["epilogue"] * 3 and len(apart["steps"]) == 3
    assert [s["node"] for s in steps] == [n for n in apart["order"]
                                          if apart["nodes"][n]["operator"] == "conv2d"]


def test_steps_on_the_test_device(ctx):
    """conv2d -> add -> relu on the test device's backend (the CUDA one
    under WEBNN_TEST_DEVICE=gpu): one epilogue step where the backend fuses
    epilogues, three node steps where it does not; the results are NumPy's."""
    g, inputs, want = conv_add_relu(ctx, rng_for("schedule", "device"))
    v = view(g)
    steps = run_steps(v)
    if v["fuses"]:  # the CPU and CUDA backends, unless fusion is off
        assert len(steps) == 1
        assert steps[0]["kind"] == "epilogue" and steps[0]["operator"] == "conv2d"
        assert steps[0]["addend"] == v["inputs"][1]
    else:
        assert [s["kind"] for s in steps] == ["node"] * 3
    assert steps[-1]["result"] == v["outputs"][0]
    got = ctx.compute(g, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
