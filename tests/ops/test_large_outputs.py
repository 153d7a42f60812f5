"""Outputs of 16 MiB and more take the CPU backend's streaming-store paths
(element-wise add sub mul div, float32 unary operators, the 1x1 nhwc
convolution, tensor reads and
writes; see cpu_nt_bytes in csrc/cpu/backend_cpu.c).  The results must be
the same bits as the cached path gives: compared with NumPy float32 (one
IEEE operation per element) and against a small-tensor run of the same
values.  Unaligned lengths exercise the heads and tails."""
import numpy as np
import pytest

import webnn

N = 4 * 1024 * 1024 + 7  # > 16 MiB of float32


def _f32(shape, **kw):
    return dict(dataType="float32", shape=list(shape), **kw)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    b[::97] = 0.0  # division by zero -> inf / nan as IEEE says
    return a, b


@pytest.mark.parametrize("op,ref", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)])
def test_binary_large(op, ref, data):
    a, b = data
    ctx = webnn.ml.create_context(device_type="cpu")
    bl = webnn.MLGraphBuilder(ctx)
    g = bl.build({"y": getattr(bl, op)(bl.input("a", _f32([N])), bl.input("b", _f32([N])))})
    with np.errstate(all="ignore"):
        want = ref(a, b)
    got = ctx.compute(g, {"a": a, "b": b})["y"]
    np.testing.assert_array_equal(got, want)
    # the spec's path: tensors, dispatch, read (streaming copies in and out)
    ta = ctx.create_tensor(_f32([N], writable=True))
    tb = ctx.create_tensor(_f32([N], writable=True))
    ty = ctx.create_tensor(_f32([N], readable=True))
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
    out = np.empty(N + 1, np.float32)[1:]  # an unaligned destination
    ctx.read_tensor(ty, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("op,ref", [("add", np.add), ("mul", np.multiply), ("sub", np.subtract)])
@pytest.mark.parametrize("bshape", [(1031,), (4097, 1), (4097, 1031)])
def test_binary_large_rows(op, ref, bshape):
    """[4097, 1031] (16.1 MiB of float32): rows of 1031 elements, which the
    kernel's tasks of 1024 cut across, taken a row at a time when both
    operands run along the row (a [1031] operand broadcast down the rows
    too) and element chunk by chunk when one is constant along it."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4097, 1031)).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    ctx = webnn.ml.create_context(device_type="cpu")
    bl = webnn.MLGraphBuilder(ctx)
    g = bl.build({"y": getattr(bl, op)(bl.input("a", _f32(a.shape)), bl.input("b", _f32(b.shape)))})
    np.testing.assert_array_equal(ctx.compute(g, {"a": a, "b": b})["y"], ref(a, b))
    # and with the operands swapped (the broadcast one first)
    bl = webnn.MLGraphBuilder(ctx)
    g = bl.build({"y": getattr(bl, op)(bl.input("b", _f32(b.shape)), bl.input("a", _f32(a.shape)))})
    np.testing.assert_array_equal(ctx.compute(g, {"a": a, "b": b})["y"], ref(b, a))


@pytest.mark.parametrize("op", ["relu", "neg", "abs", "sigmoid", "exp", "tanh"])
def test_unary_large_equals_small(op, data):
    a = data[0].copy()
    a[5::4099] = np.nan  # and signed zeros, infinities: compared bit for bit
    a[6::4099] = -0.0
    a[7::4099] = np.inf
    a[8::4099] = -np.inf
    ctx = webnn.ml.create_context(device_type="cpu")

    def run(x):
        bl = webnn.MLGraphBuilder(ctx)
        g = bl.build({"y": getattr(bl, op)(bl.input("x", _f32(x.shape)))})
        return ctx.compute(g, {"x": x})["y"]

    big = run(a)
    # the same values in pieces below the threshold take the cached path
    piece = 1 << 20
    small = np.concatenate([run(a[i:i + piece]) for i in range(0, N, piece)])
    np.testing.assert_array_equal(big.view(np.uint32), small.view(np.uint32))
    # dispatch + read: the read is merged into the dispatch (one pass straight
    # into the caller's buffer), here at 4 bytes (a masked head up to the
    # 64-byte boundary before the streaming stores) past an alignment; at 2
    # bytes, not aligned to the elements, it is not merged (a copy)
    bl = webnn.MLGraphBuilder(ctx)
    g = bl.build({"y": getattr(bl, op)(bl.input("x", _f32([N])))})
    tx = ctx.create_tensor(_f32([N], writable=True))
    ty = ctx.create_tensor(_f32([N], readable=True))
    ctx.write_tensor(tx, a)
    for offset in (4, 2):
        buf = np.zeros(4 * N + 64, np.uint8)
        out = np.frombuffer(buf.data, np.float32, N, offset)
        assert out.ctypes.data % 64 != 0
        for _ in range(3):
            ctx.dispatch(g, {"x": tx}, {"y": ty})
            ctx.read_tensor(ty, buf[offset:offset + 4 * N])
            np.testing.assert_array_equal(out.view(np.uint32), big.view(np.uint32))
    np.testing.assert_array_equal(ctx.read_tensor(ty).view(np.uint32), big.view(np.uint32))
    if op in ("relu", "neg", "abs"):
        with np.errstate(invalid="ignore"):
            relu = np.where((a > 0) | np.isnan(a), a, np.float32(0))  # +0 for -0
        ref = {"relu": relu, "neg": -a, "abs": np.abs(a)}[op]
        np.testing.assert_array_equal(big.view(np.uint32), ref.view(np.uint32))


@pytest.mark.parametrize("out_channels,clamp", [(64, False), (48, True)])
def test_conv1x1_large_streaming(out_channels, clamp):
    """A 1x1 nhwc convolution with an output of 16 MiB or more stores with
    streaming stores (csrc/cpu/kernels/conv/direct.c, d1x1_job.nt); the
    clamp runs in registers before them.  Checked against NumPy float64 and,
    bit for bit, against the first rows computed alone (output below 16 MiB:
    the cached path)."""
    rng = np.random.default_rng(out_channels)
    H, W, C, O = 1024 * 1024 * 4 // (256 * out_channels) + 1, 256, 16, out_channels
    x = rng.standard_normal((1, H, W, C)).astype(np.float32)
    w = rng.standard_normal((O, 1, 1, C)).astype(np.float32)
    bias = rng.standard_normal(O).astype(np.float32)
    ctx = webnn.ml.create_context(device_type="cpu")

    def run(xv):
        bl = webnn.MLGraphBuilder(ctx)
        y = bl.conv2d(bl.input("x", _f32(xv.shape)), bl.constant(w), bias=bl.constant(bias),
                      input_layout="nhwc", filter_layout="ohwi")
        if clamp:
            y = bl.clamp(y, min_value=-1.0, max_value=1.5)
        return ctx.compute(bl.build({"y": y}), {"x": xv})["y"]

    got = run(x)
    assert got.nbytes >= 16 << 20
    want = x.astype(np.float64).reshape(-1, C) @ w.reshape(O, C).T.astype(np.float64) + bias
    if clamp:
        want = np.clip(want, -1.0, 1.5)
    np.testing.assert_allclose(got.reshape(-1, O), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[:, :4], run(np.ascontiguousarray(x[:, :4])))


def test_identity_and_duplicated_outputs_large(data):
    """identity and a graph output named twice copy on every thread from
    1 MiB (cpu_parallel_copy), with streaming stores from 16 MiB: the same
    bits, at sizes on both sides of each threshold and unaligned lengths."""
    a, _ = data
    ctx = webnn.ml.create_context(device_type="cpu")
    for n in (1000, (1 << 18) + 3, (1 << 20) + 5, N):
        x = a[:n]
        bl = webnn.MLGraphBuilder(ctx)
        y = bl.identity(bl.input("x", _f32([n])))
        g = bl.build({"y": y, "z": y})
        got = ctx.compute(g, {"x": x})
        np.testing.assert_array_equal(got["y"], x)
        np.testing.assert_array_equal(got["z"], x)
        tx = ctx.create_tensor(_f32([n], writable=True))
        ty = ctx.create_tensor(_f32([n], readable=True))
        tz = ctx.create_tensor(_f32([n], readable=True))
        ctx.write_tensor(tx, x)
        ctx.dispatch(g, {"x": tx}, {"y": ty, "z": tz})
        np.testing.assert_array_equal(ctx.read_tensor(ty), x)
        np.testing.assert_array_equal(ctx.read_tensor(tz), x)
