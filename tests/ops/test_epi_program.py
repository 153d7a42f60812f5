"""Epilogue programs (compiler/fuse.h WNN_FUSE_EPI_PROG, cpu/epilogue.c): the
float32 element-wise nodes after a producer (conv2d, matmul, gemm; its bias
add; a reshape of its result) that read its result, each other's results and
constant scalars only -- GPT-2's tanh gelu, hard-swish, a scale by a
constant -- run on each block of the product while it is in the cache, with
the operators' own loops.

So the fused graph must equal, bit for bit, the same graph with the programs
off (WEBNN_CPU_EPI_PROGRAM=0: element-wise chains) and with fusion off
(every operator alone); it is also checked against NumPy float64.  Each test
checks from the summary which nodes were fused, and the patterns that must
not become a program (an intermediate that is a graph output or has a reader
outside, a second operand that is not a scalar) do not."""
import zlib

import numpy as np
import pytest

import webnn

from .test_fusion import make_context, run_in


@pytest.fixture(scope="module")
def contexts():
    """(programs on, programs off, fusion off); layout planning off"""
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_EPI_PROGRAM="1"),
            make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_EPI_PROGRAM="0"),
            make_context(WEBNN_CPU_FUSION="0", WEBNN_CPU_LAYOUT="0"))


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def scalar(b, v):
    return b.constant({"dataType": "float32", "shape": []}, np.array(v, np.float32))


def run_all(contexts, make, inputs):
    """the output and the summary's fused groups in each context"""
    outs, summaries = run_in(contexts, make, inputs)
    return outs, [s.fused_groups for s in summaries]


def assert_same_bits(outs):
    for name in outs[0]:
        a = outs[0][name].view(np.uint32)
        for o in outs[1:]:
            np.testing.assert_array_equal(a, o[name].view(np.uint32), err_msg=name)


def tanh_gelu(b, t, swap_add=False, swap_mul=False, scalars_left=False):
    """GPT-2's gelu_new as the exporter writes it (swap_add: x^3 b + t,
    swap_mul: (tanh + 1) (0.5 t), scalars_left: 0.5 t as mul(0.5, t) ...)"""
    def smul(v, k):
        return b.mul(scalar(b, k), v) if scalars_left else b.mul(v, scalar(b, k))

    def sadd(v, k):
        return b.add(scalar(b, k), v) if scalars_left else b.add(v, scalar(b, k))

    g = smul(t, 0.5)
    bb = smul(b.pow(t, scalar(b, 3.0)), 0.044715)
    c = b.add(bb, t) if swap_add else b.add(t, bb)
    f = sadd(b.tanh(smul(c, 0.7978845608)), 1.0)
    return b.mul(f, g) if swap_mul else b.mul(g, f)


def tanh_gelu64(t):
    t = t.astype(np.float64)
    return 0.5 * t * (1 + np.tanh(0.7978845608 * (t + 0.044715 * t ** 3)))


GELU_OPS = ["mul", "pow", "mul", "add", "mul", "tanh", "add", "mul"]


@pytest.mark.parametrize("m,k,n", [(37, 24, 48), (128, 64, 300), (5, 16, 1000), (1, 8, 3), (40, 600, 96)])
def test_tanh_gelu_after_matmul(contexts, m, k, n):
    rng = rng_for(f"gelu{m},{k},{n}")
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    bias = (rng.standard_normal(n) * 2).astype(np.float32)

    def make(b, ops):
        return tanh_gelu(b, b.add(b.matmul(ops["x"], b.constant(w)), b.constant(bias)))

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0] == [["matmul", "add"] + GELU_OPS], groups[0]
    assert not any(g[0] == "matmul" and len(g) > 2 for g in groups[1]), groups[1]
    assert_same_bits(outs)
    ref = tanh_gelu64(x.astype(np.float64) @ w + bias)
    np.testing.assert_allclose(outs[0]["y"], ref, rtol=1e-4, atol=1e-5)


def test_tanh_gelu_after_gemm_and_reshape(contexts):
    """HF GPT-2's Conv1D: gemm on the flattened rows, a reshape back to
    [batch, seq, features], then the gelu on that"""
    rng = rng_for("gemm-reshape")
    x = rng.standard_normal((4 * 9, 32)).astype(np.float32)
    w = (rng.standard_normal((32, 96)) / 6).astype(np.float32)
    c = rng.standard_normal(96).astype(np.float32)

    def make(b, ops):
        t = b.reshape(b.gemm(ops["x"], b.constant(w), c=b.constant(c)), [4, 9, 96])
        return tanh_gelu(b, t)

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0] == [["gemm", "reshape"] + GELU_OPS], groups[0]
    assert_same_bits(outs)
    ref = tanh_gelu64(x.astype(np.float64) @ w + c).reshape(4, 9, 96)
    np.testing.assert_allclose(outs[0]["y"], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_hard_swish_after_conv(contexts, layout):
    """x * clamp(x + 3, 0, 6) / 6 (MobileNetV3's hard-swish as ONNX exports
    decompose it), after a convolution with a bias"""
    rng = rng_for(f"hswish{layout}")
    xs = (2, 9, 9, 16) if layout == "nhwc" else (2, 16, 9, 9)
    x = (rng.standard_normal(xs) * 2).astype(np.float32)
    w = (rng.standard_normal((24, 16, 3, 3)) / 12).astype(np.float32)  # oihw
    bias = rng.standard_normal(24).astype(np.float32)

    def make(b, ops):
        t = b.conv2d(ops["x"], b.constant(w), input_layout=layout, filter_layout="oihw",
                     padding=[1, 1, 1, 1], bias=b.constant(bias))
        r = b.clamp(b.add(t, scalar(b, 3.0)), min_value=0.0, max_value=6.0)
        return b.div(b.mul(t, r), scalar(b, 6.0))

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0] == [["conv2d", "add", "clamp", "mul", "div"]], groups[0]
    assert_same_bits(outs)
    x64 = x.astype(np.float64)
    if layout == "nhwc":
        x64 = x64.transpose(0, 3, 1, 2)
    xp = np.pad(x64, ((0, 0), (0, 0), (1, 1), (1, 1)))
    t = np.zeros((2, 24, 9, 9))
    for i in range(3):
        for j in range(3):
            t += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 9, j:j + 9], w[:, :, i, j])
    t += bias.reshape(1, 24, 1, 1)
    ref = t * np.clip(t + 3, 0, 6) / 6
    if layout == "nhwc":
        ref = ref.transpose(0, 2, 3, 1)
    np.testing.assert_allclose(outs[0]["y"], ref, rtol=1e-4, atol=1e-5)


def test_a_scale_alone_and_a_residual_after_it(contexts):
    """matmul + bias -> mul by a constant (Whisper's query scale): a program
    of one node; the add of a tensor after it is not the program's (its
    second operand is no scalar) and runs on its own"""
    rng = rng_for("scale")
    x = rng.standard_normal((20, 40)).astype(np.float32)
    r = rng.standard_normal((20, 64)).astype(np.float32)
    w = rng.standard_normal((40, 64)).astype(np.float32)
    bias = rng.standard_normal(64).astype(np.float32)

    def make(b, ops):
        t = b.add(b.matmul(ops["x"], b.constant(w)), b.constant(bias))
        return b.add(b.mul(t, scalar(b, 0.125)), ops["r"])

    outs, groups = run_all(contexts, make, {"x": x, "r": r})
    assert groups[0] == [["matmul", "add", "mul"]], groups[0]
    assert_same_bits(outs)
    ref = (x.astype(np.float64) @ w + bias) * 0.125 + r
    np.testing.assert_allclose(outs[0]["y"], ref, rtol=1e-5, atol=1e-4)


def test_special_values(contexts):
    """NaN, infinities and values whose cube overflows run through the program
    as through the operators"""
    rng = rng_for("special")
    x = rng.standard_normal((16, 8)).astype(np.float32)
    x[0, 0] = np.nan
    x[1, :] = np.inf
    x[2, :] = -np.inf
    x[3, :] = 3e13  # x^3 overflows to inf in float32
    x[4, :] = -3e13
    w = np.eye(8, 40, dtype=np.float32)  # t's columns 0-7 are x, the rest 0

    def make(b, ops):
        return tanh_gelu(b, b.matmul(ops["x"], b.constant(w)))

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0] == [["matmul"] + GELU_OPS], groups[0]
    assert_same_bits(outs)
    y = outs[0]["y"]
    assert np.isnan(y[0, 0])
    np.testing.assert_array_equal(y[3, :8], np.float32(3e13))  # tanh(inf) = 1
    np.testing.assert_array_equal(y[4, :8], np.float32(-0.0))  # 1 + tanh(-inf) = 0
    assert np.signbit(y[4, :8]).all()
    fin = np.arange(5, 16)
    ref = tanh_gelu64(x[fin].astype(np.float64) @ w)
    np.testing.assert_allclose(y[fin], ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("swap_add", [False, True])
@pytest.mark.parametrize("swap_mul", [False, True])
@pytest.mark.parametrize("scalars_left", [False, True])
def test_operand_orders(contexts, swap_add, swap_mul, scalars_left):
    """the gelu's operations with their operands either way round, with NaN
    and infinities in t (the two operations of two values, t + x^3 b and the
    last product, keep the nodes' operand order in the fused kernel; their
    NaN operands here all carry t's payload, so that order is not observable
    in the bits)"""
    rng = rng_for(f"orders{swap_add}{swap_mul}{scalars_left}")
    x = rng.standard_normal((7, 16)).astype(np.float32) * 3
    x[::3, 5] = np.nan
    x[1, :] = np.inf
    w = rng.standard_normal((16, 45)).astype(np.float32)

    def make(b, ops):
        return tanh_gelu(b, b.matmul(ops["x"], b.constant(w)), swap_add, swap_mul, scalars_left)

    outs, groups = run_all(contexts, make, {"x": x})
    assert len(groups[0]) == 1 and groups[0][0][0] == "matmul" and len(groups[0][0]) == 9, groups[0]
    assert_same_bits(outs)
    assert np.isnan(outs[0]["y"][0]).all() and np.isnan(outs[0]["y"][1]).all()
    fin = [2, 4, 5]
    ref = tanh_gelu64(x[fin].astype(np.float64) @ w)
    np.testing.assert_allclose(outs[0]["y"][fin], ref, rtol=1e-4, atol=1e-5)


def test_unary_nodes_and_a_value_read_twice(contexts):
    """x * tanh(softplus(x)) (Mish): unary nodes between, t read by the first
    and the last node"""
    rng = rng_for("mish")
    x = rng.standard_normal((33, 17)).astype(np.float32)
    w = rng.standard_normal((17, 70)).astype(np.float32)

    def make(b, ops):
        t = b.matmul(ops["x"], b.constant(w))
        return b.mul(t, b.tanh(b.softplus(t)))

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0] == [["matmul", "softplus", "tanh", "mul"]], groups[0]
    assert_same_bits(outs)
    t = x.astype(np.float64) @ w
    np.testing.assert_allclose(outs[0]["y"], t * np.tanh(np.log1p(np.exp(t))), rtol=1e-4, atol=1e-5)


def test_an_intermediate_output_is_no_program(contexts):
    """the gelu's tanh is a graph output too: it must be stored, so the
    nodes stay element-wise chains (and t, read by three nodes, is stored)"""
    rng = rng_for("out")
    x = rng.standard_normal((12, 16)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)

    def make(b, ops):
        t = b.matmul(ops["x"], b.constant(w))
        g = b.mul(t, scalar(b, 0.5))
        c = b.add(t, b.mul(b.pow(t, scalar(b, 3.0)), scalar(b, 0.044715)))
        e = b.tanh(b.mul(c, scalar(b, 0.7978845608)))
        return {"y": b.mul(g, b.add(e, scalar(b, 1.0))), "e": e}

    outs, groups = run_all(contexts, make, {"x": x})
    assert not any(g[0] == "matmul" for g in groups[0]), groups[0]
    assert groups[0] == groups[1], (groups[0], groups[1])
    assert_same_bits(outs)


def test_a_reader_outside_is_no_program(contexts):
    """t is also read by a reduction: it must be stored, no program"""
    rng = rng_for("reader")
    x = rng.standard_normal((12, 16)).astype(np.float32)
    w = rng.standard_normal((16, 32)).astype(np.float32)

    def make(b, ops):
        t = b.matmul(ops["x"], b.constant(w))
        return {"y": b.mul(t, b.sigmoid(b.mul(t, scalar(b, 1.702)))),
                "s": b.reduce_sum(t, axes=[1])}

    outs, groups = run_all(contexts, make, {"x": x})
    assert not any(g[0] == "matmul" for g in groups[0]), groups[0]
    assert_same_bits(outs)


def test_a_long_run_is_cut_at_the_limit(contexts):
    """20 nodes of a scalar each: the program takes the first 16 (WNN_EPI_PROG_MAX),
    an element-wise chain the rest"""
    rng = rng_for("long")
    x = rng.standard_normal((9, 11)).astype(np.float32)
    w = rng.standard_normal((11, 50)).astype(np.float32)
    ks = rng.uniform(0.9, 1.1, 20).astype(np.float32)

    def make(b, ops):
        t = b.matmul(ops["x"], b.constant(w))
        for i, k in enumerate(ks):
            t = b.mul(t, scalar(b, k)) if i % 2 else b.add(t, scalar(b, k))
        return t

    outs, groups = run_all(contexts, make, {"x": x})
    assert groups[0][0] == ["matmul"] + ["add", "mul"] * 8, groups[0]
    assert groups[0][1] == ["add", "mul"] * 2, groups[0]
    assert_same_bits(outs)
    ref = x.astype(np.float64) @ w
    for i, k in enumerate(ks):
        ref = ref * k if i % 2 else ref + k
    np.testing.assert_allclose(outs[0]["y"], ref, rtol=1e-4, atol=1e-4)
