"""Quantized (QDQ) regions in integer arithmetic (compiler/fuse_qdq.c,
cpu/qdq.c, cpu/kernels/qgemm/).

A graph built by hand with

    dequantizeLinear(x: uint8 / int8), dequantizeLinear(constant weights)
      -> conv2d / matmul -> [add(bias)] -> [relu / clamp] -> quantizeLinear

runs as one integer step on the CPU.  Reference (independent of the kernels):
the product of the quantized values in exact NumPy int64 arithmetic,
acc = (x - zx) (*) (w - zw), then the epilogue the step documents, which is
the unfused graph's float32 arithmetic: v = float32(acc * (sx * sw)),
v = float32(v + bias), the activation, y = saturate(rint(v / sy) + zy).
Comparisons are exact.  Besides: the fused graph equals its unfused
evaluation (WEBNN_CPU_INT8=0, in a subprocess) bit for bit where the float32
path is exact (power-of-two scales) and within one quantization step
elsewhere; patterns that must stay float do; and every kernel (AVX-512 VNNI,
AVX2, portable) is checked by rerunning the kernel tests in subprocesses
with WEBNN_CPU_ISA=avx2 and baseline.

Self-contained (no relative imports): the subprocesses load this file.
"""
import importlib.util
import os
import re
import subprocess
import sys
import zlib

import numpy as np
import pytest

import webnn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QRANGE = {"uint8": (0, 255), "int8": (-128, 127)}
# filter layout -> (axes of the (O, KH, KW, C) array to transpose into it)
FILTER_PERM = {"ohwi": (0, 1, 2, 3), "hwio": (1, 2, 3, 0), "oihw": (0, 3, 1, 2),
               "ihwo": (3, 1, 2, 0)}


def rng_for(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def qrand(rng, shape, dt):
    lo, hi = QRANGE[dt]
    return rng.integers(lo, hi + 1, size=shape).astype(dt)


# ---- a case: everything that defines one quantized region -----------------
def make_case(rng, op, xdt="uint8", wdt="int8", ydt="uint8", M=5, K=7, N=9,
              conv=None, per_channel=True, zx=None, zw=None, zy=None,
              sx=None, sw=None, sy=None, bias=None, act=None, pow2=False, bt=False):
    """op: "matmul" (x [M, K] -- or [2, M, K] when M is a tuple) or
    "conv2d" (conv: dict of H, W, C, O, KH, KW, padding, strides, dilations,
    layout); bias: None, "conv" (conv2d's option, float32), "conv_dq" (the
    option, dequantized int32; gemm: its c), "add" / "add_dq" (an add after
    the producer); act: None, "relu", ("clamp", lo, hi); bt: gemm's
    bTranspose (weights [N, K])."""
    c = {"op": op, "xdt": xdt, "wdt": wdt, "ydt": ydt, "bias": bias, "act": act, "bt": bt}
    if op == "gemm":
        c["x"] = qrand(rng, (M, K), xdt)
        c["wkn"] = qrand(rng, (K, N), wdt)
        c["w"] = np.ascontiguousarray(c["wkn"].T) if bt else c["wkn"]
        O = N
    elif op == "matmul":
        xshape = (M, K) if not isinstance(M, tuple) else M + (K,)
        c["x"] = qrand(rng, xshape, xdt)
        c["w"] = qrand(rng, (K, N), wdt)
        O = N
    else:
        cv = dict(conv)
        c["conv"] = cv
        O = cv["O"]
        c["x"] = qrand(rng, (cv.get("N", 1), cv["H"], cv["W"], cv["C"]), xdt)
        c["w_ohwi"] = qrand(rng, (O, cv["KH"], cv["KW"], cv["C"]), wdt)
        c["w"] = np.ascontiguousarray(c["w_ohwi"].transpose(FILTER_PERM[cv["layout"]]))
    pick = (lambda n: 2.0 ** rng.integers(-9, -4, size=n)) if pow2 else \
        (lambda n: rng.uniform(0.002, 0.02, size=n))
    c["sx"] = np.float32(sx if sx is not None else (0.5 if pow2 else rng.uniform(0.01, 0.1)))
    nsw = O if per_channel else 1
    c["sw"] = (np.asarray(sw, np.float32).reshape(-1) if sw is not None
               else pick(nsw).astype(np.float32))
    c["sy"] = np.float32(sy if sy is not None else (2.0 if pow2 else rng.uniform(0.05, 0.5)))
    lo, hi = QRANGE[xdt]
    c["zx"] = np.array(zx if zx is not None else rng.integers(lo, hi + 1), xdt)
    lo, hi = QRANGE[wdt]
    c["zw"] = (np.asarray(zw, wdt).reshape(-1) if zw is not None
               else np.zeros(nsw, wdt) if wdt == "int8" else np.full(nsw, 128, wdt))
    lo, hi = QRANGE[ydt]
    c["zy"] = np.array(zy if zy is not None else rng.integers(lo, hi + 1), ydt)
    if bias:
        if bias.endswith("dq"):
            c["b32"] = rng.integers(-5000, 5000, size=O).astype(np.int32)
        else:
            c["bf"] = (rng.integers(-64, 64, size=O) * (0.25 if pow2 else 0.37)).astype(np.float32)
    return c


def _w_scale_shape(c):
    """the weights' scale / zero point shape: 1 everywhere, O at the output
    channel axis of the filter layout (or b's last axis)"""
    n = c["sw"].size
    if c["op"] == "gemm" and c["bt"]:
        return (n, 1)
    if c["op"] in ("matmul", "gemm"):
        return (1, n)
    lay = c["conv"]["layout"]
    shape = [1, 1, 1, 1]
    shape[lay.index("o")] = n
    return tuple(shape)


def build(ctx, c, extra=None):
    """The graph of case c; extra: None, "x_twice" (dequantized x also read
    by a graph output), "float_out" (the producer's result also a graph
    output), "no_quant" (the activation's float result is the output)."""
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    x = b.input("x", {"dataType": c["xdt"], "shape": list(c["x"].shape)})
    ones = [1] * c["x"].ndim
    dx = b.dequantize_linear(x, const(np.full(ones, c["sx"], np.float32)),
                             const(np.full(ones, c["zx"], c["xdt"])))
    ws = _w_scale_shape(c)
    dw = b.dequantize_linear(const(c["w"]), const(c["sw"].reshape(ws)),
                             const(c["zw"].reshape(ws)))
    O = _sw_full(c).size

    def bias_operand():
        if "b32" in c:
            s = (c["sx"].astype(np.float64) * _sw_full(c)).astype(np.float32)
            return b.dequantize_linear(const(c["b32"]), const(s), const(np.zeros(O, np.int32)))
        return const(c["bf"])

    if c["op"] == "matmul":
        y = b.matmul(dx, dw)
    elif c["op"] == "gemm":
        opts = {"bTranspose": c["bt"]}
        if c["bias"] in ("conv", "conv_dq"):
            opts["c"] = bias_operand()
        y = b.gemm(dx, dw, opts)
    else:
        cv = c["conv"]
        opts = {"inputLayout": "nhwc", "filterLayout": cv["layout"]}
        for k in ("padding", "strides", "dilations"):
            if k in cv:
                opts[k] = cv[k]
        if c["bias"] in ("conv", "conv_dq"):
            opts["bias"] = bias_operand()
        y = b.conv2d(dx, dw, opts)
    outs = {}
    if extra == "float_out":
        outs["f"] = y
    if c["bias"] in ("add", "add_dq"):
        y = b.add(y, bias_operand())
    if c["act"] == "relu":
        y = b.relu(y)
    elif c["act"]:
        y = b.clamp(y, {"minValue": c["act"][1], "maxValue": c["act"][2]})
    if extra == "x_twice":
        outs["t"] = b.relu(dx)
    if extra == "no_quant":
        outs["y"] = y
    else:
        r = [1] * len(y.shape)
        outs["y"] = b.quantize_linear(y, const(np.full(r, c["sy"], np.float32)),
                                      const(np.full(r, c["zy"], c["ydt"])))
    return b.build(outs)


def _sw_full(c):
    O = {"matmul": lambda: c["w"].shape[1], "gemm": lambda: c["wkn"].shape[1],
         "conv2d": lambda: c["conv"]["O"]}[c["op"]]()
    return np.broadcast_to(c["sw"].astype(np.float64), (O,))


def _im2col(c):
    """x - zx of a conv case as [rows, KH * KW * C] int64 (padding: 0)"""
    cv = c["conv"]
    x = c["x"].astype(np.int64) - int(c["zx"])
    n, H, W, C = x.shape
    KH, KW = cv["KH"], cv["KW"]
    pt, pb, pl, pr = cv.get("padding", [0, 0, 0, 0])
    sh, sw = cv.get("strides", [1, 1])
    dh, dw = cv.get("dilations", [1, 1])
    xp = np.zeros((n, H + pt + pb, W + pl + pr, C), np.int64)
    xp[:, pt:pt + H, pl:pl + W] = x
    OH = (H + pt + pb - (KH - 1) * dh - 1) // sh + 1
    OW = (W + pl + pr - (KW - 1) * dw - 1) // sw + 1
    cols = np.empty((n, OH, OW, KH, KW, C), np.int64)
    for kh in range(KH):
        for kw in range(KW):
            cols[:, :, :, kh, kw] = xp[:, kh * dh:kh * dh + (OH - 1) * sh + 1:sh,
                                       kw * dw:kw * dw + (OW - 1) * sw + 1:sw]
    return cols.reshape(n * OH * OW, -1), (n, OH, OW)


def reference(c):
    """exact integer product, then the documented float32 epilogue"""
    zw = np.broadcast_to(c["zw"].astype(np.int64), (_sw_full(c).size,))
    if c["op"] in ("matmul", "gemm"):
        a = c["x"].astype(np.int64).reshape(-1, c["x"].shape[-1]) - int(c["zx"])
        wk = c.get("wkn", c["w"]).astype(np.int64) - zw
        lead = c["x"].shape[:-1]
    else:
        a, lead = _im2col(c)
        wk = (c["w_ohwi"].astype(np.int64).reshape(c["conv"]["O"], -1).T) - zw
    acc = a @ wk
    v = (acc.astype(np.float64) * (np.float64(c["sx"]) * _sw_full(c))).astype(np.float32)
    if "bf" in c:
        v = (v + c["bf"]).astype(np.float32)
    elif "b32" in c:
        s = (np.float64(c["sx"]) * _sw_full(c)).astype(np.float32)
        v = (v + (c["b32"].astype(np.float64) * s.astype(np.float64)).astype(np.float32)).astype(np.float32)
    if c["act"] == "relu":
        v = np.maximum(v, np.float32(0))
    elif c["act"]:
        v = np.clip(v, np.float32(c["act"][1]), np.float32(c["act"][2]))
    lo, hi = QRANGE[c["ydt"]]
    q = np.clip(np.rint(v.astype(np.float64) / np.float64(c["sy"])) + int(c["zy"]), lo, hi)
    return q.astype(c["ydt"]).reshape(lead + (-1,))


def compute(ctx, c, extra=None):
    g = build(ctx, c, extra)
    return g, ctx.compute(g, {"x": c["x"]})


def int8_groups(g):
    """the operators of the fused chains that hold a dequantizeLinear"""
    view = webnn._core.graph_view(g._h)
    groups = {}
    for nid, k in enumerate(view["fusion"]):
        if k:
            groups.setdefault(k, []).append(view["nodes"][nid]["operator"])
    return [ops for ops in groups.values() if "dequantizeLinear" in ops]


def check(ctx, c):
    g, res = compute(ctx, c)
    assert len(int8_groups(g)) == 1, "the region did not run in integer arithmetic"
    got, ref = res["y"], reference(c)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    bad = np.argwhere(got != ref)
    assert bad.size == 0, f"{len(bad)} mismatches, first at {bad[:3].tolist()}: " \
        f"{got[tuple(bad[0])]} != {ref[tuple(bad[0])]}"


@pytest.fixture(scope="module")
def ctx():
    # the CPU backend's integer steps (also when the suite runs against
    # another device: WEBNN_TEST_DEVICE=gpu, make test-cuda-emu)
    return webnn.ml.create_context(device_type="cpu")


# ---- the kernels: sizes, types, zero points, scales ------------------------
SIZES = [(1, 1, 1), (1, 5, 3), (3, 1, 40), (5, 7, 9), (7, 13, 37), (6, 4, 32),
         (13, 3, 17), (97, 65, 33), (100, 31, 300), (2, 300, 70)]


@pytest.mark.parametrize("M,K,N", SIZES)
@pytest.mark.parametrize("xdt,wdt", [("uint8", "int8"), ("int8", "int8"), ("uint8", "uint8")])
def test_kernel_matmul_sizes(ctx, M, K, N, xdt, wdt):
    rng = rng_for("sizes", M, K, N, xdt, wdt)
    check(ctx, make_case(rng, "matmul", xdt, wdt, M=M, K=K, N=N, act="relu"))


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("ydt", ["uint8", "int8"])
def test_kernel_scales_and_output_types(ctx, per_channel, ydt):
    rng = rng_for("scales", per_channel, ydt)
    for bias in (None, "add", "add_dq"):
        check(ctx, make_case(rng, "matmul", ydt=ydt, M=(2, 9), K=21, N=19,
                             per_channel=per_channel, bias=bias))


@pytest.mark.parametrize("xdt,wdt", [("uint8", "int8"), ("int8", "uint8"), ("uint8", "uint8"),
                                     ("int8", "int8")])
def test_kernel_zero_points_at_the_edges(ctx, xdt, wdt):
    """zero points 0, 255 / -128, 127 for x, the weights (per channel, edges
    mixed) and the output"""
    rng = rng_for("zp", xdt, wdt)
    xlo, xhi = QRANGE[xdt]
    wlo, whi = QRANGE[wdt]
    for zx in (xlo, xhi):
        for ydt in ("uint8", "int8"):
            for zy in QRANGE[ydt]:
                zw = rng.choice([wlo, whi, 0 if wdt == "int8" else 128], size=11)
                check(ctx, make_case(rng, "matmul", xdt, wdt, ydt, M=9, K=17, N=11,
                                     zx=zx, zw=zw, zy=zy))


def test_kernel_saturation(ctx):
    """results far outside the output range at both ends: saturated, as
    quantizeLinear saturates; the extreme products (255 * -128 summed over
    long K, where a 16-bit pair sum would overflow) stay exact"""
    M, K, N = 8, 600, 24
    for xdt, ydt in (("uint8", "uint8"), ("uint8", "int8"), ("int8", "int8")):
        rng = rng_for("sat", xdt, ydt)
        c = make_case(rng, "matmul", xdt, "int8", ydt, M=M, K=K, N=N, sy=0.001, zx=0
                      if xdt == "uint8" else -128)
        c["x"][:] = QRANGE[xdt][1]
        c["w"][:, : N // 2] = -128
        c["w"][:, N // 2:] = 127
        check(ctx, c)
        ref = reference(c)
        assert set(np.unique(ref)) == set(QRANGE[ydt])


def test_kernel_round_half_to_even(ctx):
    """v / sy exactly halfway between two integers for every odd sum (sx *
    sw = 0.5, sy = 1), positive and negative: quantizeLinear's roundEven"""
    rng = rng_for("ties")
    for ydt in ("int8", "uint8"):
        c = make_case(rng, "matmul", "uint8", "int8", ydt, M=7, K=3, N=21, per_channel=False,
                      sx=0.5, sw=[1.0], sy=1.0, zx=10, zy=0 if ydt == "int8" else 128)
        c["x"][:] = rng.integers(0, 21, size=c["x"].shape)
        c["w"][:] = rng.integers(-9, 10, size=c["w"].shape)
        acc = (c["x"].astype(np.int64) - 10) @ c["w"].astype(np.int64)
        assert (acc % 2 == 1).sum() > 30 and (acc < 0).any()
        check(ctx, c)


@pytest.mark.parametrize("bt", [False, True])
def test_kernel_gemm(ctx, bt):
    """gemm (alpha 1; bTranspose or not; c as a float or dequantized bias)"""
    rng = rng_for("gemm", bt)
    for bias, M, K, N in ((None, 5, 12, 40), ("conv", 33, 7, 19), ("conv_dq", 100, 64, 70),
                          ("add_dq", 1, 1, 1)):
        check(ctx, make_case(rng, "gemm", M=M, K=K, N=N, bias=bias, bt=bt, act="relu"))


def test_gemm_with_alpha_stays_float(ctx):
    """alpha != 1 (or a transposed a): not an integer step"""
    rng = rng_for("gemm alpha")
    c = make_case(rng, "gemm", M=4, K=8, N=6, pow2=True)
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "uint8", "shape": [4, 8]})

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    dx = b.dequantize_linear(x, const(np.full((1, 1), c["sx"])), const(np.full((1, 1), c["zx"])))
    dw = b.dequantize_linear(const(c["w"]), const(c["sw"].reshape(1, -1)),
                             const(np.zeros((1, 6), np.int8)))
    y = b.gemm(dx, dw, {"alpha": 2.0})
    g = b.build({"y": b.quantize_linear(y, const(np.full((1, 1), c["sy"])),
                                        const(np.full((1, 1), c["zy"])))})
    assert not int8_groups(g)
    c["sx"] = np.float32(2 * c["sx"])  # alpha 2: the same as twice x's scale
    np.testing.assert_array_equal(ctx.compute(g, {"x": c["x"]})["y"], reference(c))


def test_kernel_relu_clamp(ctx):
    rng = rng_for("act")
    for act in ("relu", ("clamp", -0.3, 0.45), ("clamp", 0.0, 6.0)):
        check(ctx, make_case(rng, "matmul", M=11, K=40, N=23, act=act, bias="add"))


CONVS = [
    dict(H=6, W=7, C=5, O=9, KH=3, KW=3, padding=[1, 1, 1, 1]),
    dict(H=8, W=8, C=16, O=33, KH=1, KW=1),
    dict(H=9, W=7, C=3, O=8, KH=3, KW=2, strides=[2, 2], padding=[1, 0, 2, 1]),
    dict(H=10, W=9, C=4, O=7, KH=3, KW=3, dilations=[2, 2], padding=[2, 2, 2, 2], N=2),
    dict(H=5, W=5, C=1, O=1, KH=5, KW=5),
    dict(H=14, W=14, C=64, O=70, KH=3, KW=3, padding=[1, 1, 1, 1]),
]


@pytest.mark.parametrize("layout", list(FILTER_PERM))
@pytest.mark.parametrize("i", range(len(CONVS)))
def test_kernel_conv2d(ctx, layout, i):
    """nhwc conv2d of every filter layout: padding (filled with x's zero
    point), strides, dilations, batches; each bias form"""
    rng = rng_for("conv", layout, i)
    for bias, xdt, act in ((None, "uint8", "relu"), ("conv", "int8", None),
                           ("conv_dq", "uint8", ("clamp", -1.0, 1.0)), ("add_dq", "uint8", "relu")):
        cv = dict(CONVS[i], layout=layout)
        check(ctx, make_case(rng, "conv2d", xdt, conv=cv, bias=bias, act=act,
                             zx=None if xdt == "int8" else 200))


def test_kernel_random_regions(ctx):
    """random regions: operator, sizes, types, zero points, scales per
    tensor / channel, bias form, activation, conv geometry"""
    rng = rng_for("random regions")
    for _ in range(60):
        op = str(rng.choice(["matmul", "gemm", "conv2d"]))
        xdt, wdt, ydt = (str(rng.choice(["uint8", "int8"])) for _ in range(3))
        act = [None, "relu", ("clamp", float(rng.uniform(-2, 0)), float(rng.uniform(0, 2)))][
            int(rng.integers(0, 3))]
        bias = [None, "add", "add_dq", "conv", "conv_dq"][int(rng.integers(0, 5 if op != "matmul"
                                                                          else 3))]
        zw = None if rng.random() < 0.5 else qrand(rng, (1,), wdt)
        kw = dict(per_channel=bool(rng.random() < 0.7), act=act, bias=bias)
        if zw is not None:
            kw.update(per_channel=False, zw=zw)
        if op == "conv2d":
            k = int(rng.integers(1, 4))
            cv = dict(H=int(rng.integers(k, 12)), W=int(rng.integers(k, 12)), C=int(rng.integers(1, 20)),
                      O=int(rng.integers(1, 40)), KH=k, KW=k, N=int(rng.integers(1, 3)),
                      strides=[int(rng.integers(1, 3))] * 2, padding=[int(rng.integers(0, k))] * 4,
                      layout=str(rng.choice(list(FILTER_PERM))))
            c = make_case(rng, op, xdt, wdt, ydt, conv=cv, **kw)
        else:
            c = make_case(rng, op, xdt, wdt, ydt, M=int(rng.integers(1, 80)), K=int(rng.integers(1, 90)),
                          N=int(rng.integers(1, 90)), bt=bool(rng.random() < 0.5), **kw)
        check(ctx, c)


# ---- the fused region against the unfused graph -----------------------------
def _unfused_cases():
    rng = rng_for("unfused")
    cases = []
    for pow2 in (True, False):
        for op, kw in (("matmul", dict(M=17, K=33, N=29)),
                       ("conv2d", dict(conv=dict(CONVS[0], layout="ohwi"))),
                       ("conv2d", dict(conv=dict(CONVS[2], layout="oihw")))):
            for bias, act in ((None, "relu"), ("add", ("clamp", -2.0, 3.0)), ("add_dq", None)):
                if op == "conv2d" and bias == "add":
                    bias = "conv"
                cases.append(make_case(rng, op, bias=bias, act=act, pow2=pow2, **kw))
    return cases


def compute_unfused_cases(out):
    """run in a subprocess with WEBNN_CPU_INT8=0: the float evaluation"""
    ctx = webnn.ml.create_context(device_type="cpu")
    res = {}
    for i, c in enumerate(_unfused_cases()):
        g, r = compute(ctx, c)
        assert not int8_groups(g)
        res[str(i)] = r["y"]
    np.savez(out, **res)


def _load_self():
    spec = importlib.util.spec_from_file_location("int8_sub", os.path.abspath(__file__))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SUB = ("import sys; sys.path.insert(0, {root!r}); import importlib.util as u; "
       "s = u.spec_from_file_location('t', {path!r}); m = u.module_from_spec(s); "
       "s.loader.exec_module(m); m.compute_unfused_cases({out!r})")


def test_equals_unfused_evaluation(ctx, tmp_path):
    """bit-equal where the float32 product is exact (power-of-two scales,
    small integer sums), within one step elsewhere, and exactly the
    integer reference everywhere"""
    out = str(tmp_path / "unfused.npz")
    code = SUB.format(root=ROOT, path=os.path.abspath(__file__), out=out)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300,
                   env=dict(os.environ, WEBNN_CPU_INT8="0", PYTHONPATH=ROOT))
    unfused = np.load(out)
    cases = _unfused_cases()
    n_exact = 0
    for i, c in enumerate(cases):
        g, r = compute(ctx, c)
        assert len(int8_groups(g)) == 1
        got, fl = r["y"], unfused[str(i)]
        np.testing.assert_array_equal(got, reference(c))
        diff = np.abs(got.astype(np.int64) - fl.astype(np.int64))
        if i < len(cases) // 2:  # power-of-two scales: bit-exact
            np.testing.assert_array_equal(got, fl)
            n_exact += 1
        else:
            assert diff.max() <= 1, f"case {i}: {diff.max()} steps from the float path"
    assert n_exact == len(cases) // 2


# ---- patterns that must stay float ------------------------------------------
@pytest.mark.parametrize("extra", ["float_out", "no_quant"])
def test_stays_float(ctx, extra):
    """the producer's result also a graph output, or no quantizeLinear at the
    end: no integer step, and the float operators' results"""
    rng = rng_for("float", extra)
    c = make_case(rng, "matmul", M=6, K=10, N=12, act="relu", pow2=True)
    g, r = compute(ctx, c, extra)
    assert not int8_groups(g)
    if extra != "no_quant":
        # power-of-two scales: the float path is exact, so it equals the reference
        np.testing.assert_array_equal(r["y"], reference(c))


@pytest.mark.parametrize("op", ["matmul", "conv2d"])
def test_dequantized_x_read_elsewhere_too(ctx, op):
    """x's dequantizeLinear also read by another node (a ResNet block's
    input, read by its first convolution and by the residual add): the
    region still runs in integer arithmetic, reading x itself, and the
    dequantizeLinear runs for the other reader; both results exact."""
    rng = rng_for("shared", op)
    c = make_case(rng, op, act="relu", pow2=True,
                  **({"conv": dict(CONVS[0], layout="ohwi")} if op == "conv2d" else
                     {"M": 6, "K": 10, "N": 12}))
    g, r = compute(ctx, c, "x_twice")
    assert len(int8_groups(g)) == 1, "the region did not run in integer arithmetic"
    assert int8_groups(g)[0].count("dequantizeLinear") == 1   # the weights' only
    np.testing.assert_array_equal(r["y"], reference(c))
    dx = (c["x"].astype(np.float32) - np.float32(c["zx"])) * c["sx"]
    np.testing.assert_array_equal(r["t"], np.maximum(dx, 0))


def test_nchw_conv_stays_float(ctx):
    """the recogniser does not take a conv2d in nchw yet (layout planning
    puts transposes between it and the dequantizeLinear): it stays float,
    and correct"""
    rng = rng_for("nchw")
    c = make_case(rng, "conv2d", conv=dict(CONVS[0], layout="ohwi"), pow2=True)
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    xn = np.ascontiguousarray(c["x"].transpose(0, 3, 1, 2))
    x = b.input("x", {"dataType": "uint8", "shape": list(xn.shape)})
    dx = b.dequantize_linear(x, const(np.full([1] * 4, c["sx"])), const(np.full([1] * 4, c["zx"])))
    dw = b.dequantize_linear(const(c["w_ohwi"].transpose(0, 3, 1, 2)),
                             const(c["sw"].reshape(-1, 1, 1, 1)),
                             const(np.zeros((c["sw"].size, 1, 1, 1), np.int8)))
    y = b.conv2d(dx, dw, {"padding": [1, 1, 1, 1]})
    y = b.quantize_linear(y, const(np.full([1] * 4, c["sy"])), const(np.full([1] * 4, c["zy"])))
    g = b.build({"y": y})
    assert not int8_groups(g)
    got = ctx.compute(g, {"x": xn})["y"]
    np.testing.assert_array_equal(got.transpose(0, 2, 3, 1), reference(c))


# ---- every ISA level -------------------------------------------------------
@pytest.mark.skipif(bool(os.environ.get("WEBNN_INT8_SUBRUN")), reason="inside the rerun")
@pytest.mark.parametrize("isa", ["avx2", "baseline"])
def test_other_isa_levels(isa):
    """the kernel tests rerun with WEBNN_CPU_ISA capped: the AVX2 widening
    kernel and the portable one (the default run takes VNNI where present)"""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        os.path.abspath(__file__), "-k", "test_kernel_"],
                       env=dict(os.environ, WEBNN_CPU_ISA=isa, PYTHONPATH=ROOT,
                                WEBNN_INT8_SUBRUN="1"),
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    m = re.search(r"(\d+) passed", r.stdout)
    assert m and int(m.group(1)) >= 60 and "failed" not in r.stdout, r.stdout[-2000:]


def test_summary_marks_the_integer_step(ctx):
    rng = rng_for("summary")
    g, _ = compute(ctx, make_case(rng, "matmul", M=3, K=4, N=5, act="relu"))
    text = str(g.summary())
    assert ("fused chains (each run as one operation on this context): dequantizeLinear -> "
            "dequantizeLinear -> matmul -> relu -> quantizeLinear (int8)") in text
    g, _ = compute(ctx, make_case(rng, "matmul", M=3, K=4, N=5, act="relu"), "float_out")
    assert "(int8)" not in str(g.summary())


# ---- a product of two activations (attention's q k^T and p v) ---------------
def _two_act_case(rng, xshape, wshape, xdt="uint8", wdt="uint8", ydt="uint8", zx=None,
                  zw=None, bias=False, act=None, pow2=False):
    lo = {d: QRANGE[d] for d in (xdt, wdt, ydt)}
    pick = (lambda: float(2.0 ** rng.integers(-7, -3))) if pow2 else \
        (lambda: float(np.float32(rng.uniform(0.002, 0.05))))
    c = {"x": qrand(rng, xshape, xdt), "w": qrand(rng, wshape, wdt), "ydt": ydt, "act": act,
         "sx": np.float32(pick()), "sw": np.float32(pick()), "sy": np.float32(pick() * 4),
         "zx": np.array(zx if zx is not None else rng.integers(*lo[xdt]), xdt),
         "zw": np.array(zw if zw is not None else rng.integers(*lo[wdt]), wdt),
         "zy": np.array(rng.integers(*lo[ydt]), ydt)}
    if bias:
        c["bf"] = rng.uniform(-2, 2, wshape[-1]).astype(np.float32)
    return c


def _two_act_graph(ctx, c, w_twice=False, per_channel_w=False):
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    x = b.input("x", {"dataType": str(c["x"].dtype), "shape": list(c["x"].shape)})
    w = b.input("w", {"dataType": str(c["w"].dtype), "shape": list(c["w"].shape)})
    one = lambda a: [1] * a.ndim   # noqa: E731
    dx = b.dequantize_linear(x, const(np.full(one(c["x"]), c["sx"])),
                             const(np.full(one(c["x"]), c["zx"])))
    if per_channel_w:
        n = c["w"].shape[-1]
        ws = one(c["w"])[:-1] + [n]
        dw = b.dequantize_linear(w, const(np.full(ws, c["sw"])), const(np.full(ws, c["zw"])))
    else:
        dw = b.dequantize_linear(w, const(np.full(one(c["w"]), c["sw"])),
                                 const(np.full(one(c["w"]), c["zw"])))
    y = b.matmul(dx, dw)
    outs = {}
    if "bf" in c:
        y = b.add(y, const(c["bf"]))
    if c["act"] == "relu":
        y = b.relu(y)
    if w_twice:
        outs["t"] = b.relu(dw)
    r = [1] * len(y.shape)
    outs["y"] = b.quantize_linear(y, const(np.full(r, c["sy"])), const(np.full(r, c["zy"])))
    return b.build(outs)


def _two_act_reference(c):
    acc = np.matmul(c["x"].astype(np.int64) - int(c["zx"]), c["w"].astype(np.int64) - int(c["zw"]))
    v = (acc.astype(np.float64) * (np.float64(c["sx"]) * np.float64(c["sw"]))).astype(np.float32)
    if "bf" in c:
        v = (v + c["bf"]).astype(np.float32)
    if c["act"] == "relu":
        v = np.maximum(v, np.float32(0))
    lo, hi = QRANGE[c["ydt"]]
    q = np.clip(np.rint(v.astype(np.float64) / np.float64(c["sy"])) + int(c["zy"]), lo, hi)
    return q.astype(c["ydt"])


def _two_act_check(ctx, c, fused=True, **kw):
    g = _two_act_graph(ctx, c, **kw)
    res = ctx.compute(g, {"x": c["x"], "w": c["w"]})
    assert len(int8_groups(g)) == (1 if fused else 0)
    ref = _two_act_reference(c)
    got = res["y"]
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if fused or kw.get("pow2_exact"):
        bad = np.argwhere(got != ref)
        assert bad.size == 0, f"{len(bad)} mismatches, first at {bad[:3].tolist()}"
    else:   # the float path: within one quantization step of the exact result
        assert np.abs(got.astype(np.int64) - ref.astype(np.int64)).max() <= 1
    return g, res


TWO_ACT_SHAPES = [((1, 1), (1, 1)), ((5, 7), (7, 9)), ((3, 64), (64, 3)),
                  ((2, 3, 5, 6), (2, 3, 6, 33)), ((1, 12, 16, 64), (1, 12, 64, 16)),
                  ((4, 1, 70), (4, 70, 40)), ((2, 97, 13), (2, 13, 130)),
                  ((3, 8, 129), (129, 5))]


@pytest.mark.parametrize("xs,ws", TWO_ACT_SHAPES)
@pytest.mark.parametrize("xdt,wdt,ydt", [("uint8", "uint8", "uint8"), ("int8", "int8", "int8"),
                                         ("uint8", "int8", "uint8"), ("int8", "uint8", "int8")])
def test_kernel_two_activations(ctx, xs, ws, xdt, wdt, ydt):
    """x and w both dequantized activations, batched as x (no broadcast) or
    w one matrix: one integer step, exactly the integer reference"""
    rng = rng_for("two", xs, ws, xdt, wdt, ydt)
    _two_act_check(ctx, _two_act_case(rng, xs, ws, xdt, wdt, ydt))


@pytest.mark.parametrize("zx,zw", [(0, 0), (255, 255), (0, 255), (255, 0)])
def test_kernel_two_activations_zero_points_at_the_edges(ctx, zx, zw):
    rng = rng_for("two-z", zx, zw)
    _two_act_check(ctx, _two_act_case(rng, (2, 9, 21), (2, 21, 35), zx=zx, zw=zw))
    sx, sw = (zx - 128, zw - 128)   # the same edges in int8
    _two_act_check(ctx, _two_act_case(rng, (2, 9, 21), (2, 21, 35), "int8", "int8", "int8",
                                      zx=min(max(sx, -128), 127), zw=min(max(sw, -128), 127)))


def test_kernel_two_activations_bias_relu_and_ties(ctx):
    """an add of a constant bias and a relu in the region; power-of-two
    scales put many quotients exactly on a tie (rounded half to even: the
    division path behind the multiplication by 1 / scale)"""
    rng = rng_for("two-ties")
    for bias, act in ((True, "relu"), (False, None), (True, None)):
        c = _two_act_case(rng, (3, 24, 40), (3, 40, 48), bias=bias, act=act, pow2=True)
        c["sy"] = np.float32(c["sx"] * c["sw"] * 2)   # every odd sum is a tie
        _two_act_check(ctx, c)
    # a scale whose reciprocal rounds: v * (1 / sy) lands beside the tie that
    # v / sy is exactly (sy = 665 * 2^-20; x = 35, w = 19 * u: the sums are
    # 665 * sum(u), v = sum * 2^-21, v / sy = sum(u) / 2, sum(u) odd; at
    # these sums the product and the quotient round apart)
    sums = [61, 121, 125, 241, 245, 249, 253, 477, 481, 485, 489, 493, 497, 501, 505, 509]
    c = _two_act_case(rng, (1, 3, 40), (1, 40, len(sums)), zx=0, zw=0)
    c["x"][:] = 35
    u = np.zeros((40, len(sums)), np.int64)
    for j, t in enumerate(sums):
        u[:, j] = t // 40
        u[: t % 40, j] += 1
    c["w"][0] = (19 * u).astype(np.uint8)
    c.update(sx=np.float32(2.0 ** -10), sw=np.float32(2.0 ** -11), sy=np.float32(665 * 2.0 ** -20))
    _two_act_check(ctx, c)


@pytest.mark.parametrize("kind", ["broadcast", "w_read_twice", "per_channel_w"])
def test_two_activations_stay_float(ctx, kind):
    """w broadcast over x's batch, w's dequantized value read by another node,
    or w's scale per channel (an activation's is per tensor): float, and
    within one step of the exact result"""
    rng = rng_for("two-float", kind)
    ws = (1, 11, 9) if kind == "broadcast" else (2, 11, 9)
    c = _two_act_case(rng, (2, 5, 11), ws)
    _two_act_check(ctx, c, fused=False, w_twice=kind == "w_read_twice",
                   per_channel_w=kind == "per_channel_w")


def test_quantize_linear_ties_and_near_ties(ctx):
    """the standalone float32 -> uint8 / int8 kernel (multiplication by
    1 / scale, the division near ties): exact ties round half to even and
    the float32 neighbours of ties round away from them, as x / scale in
    double does"""
    for dt in ("uint8", "int8"):
        # (x * (1 / s) and x / s round differently at some of its ties)
        s = np.float32(0.6494140625)
        k = np.arange(-300, 300, dtype=np.float64) + 0.5
        ties = (k * np.float64(s)).astype(np.float32)
        x = np.concatenate([ties, np.nextafter(ties, np.float32(np.inf)),
                            np.nextafter(ties, np.float32(-np.inf)),
                            (np.arange(-3000, 3000) * np.float32(0.0625)).astype(np.float32)] * 3)
        b = webnn.MLGraphBuilder(ctx)
        xi = b.input("x", {"dataType": "float32", "shape": [x.size]})
        z = 3 if dt == "uint8" else -2
        q = b.quantize_linear(xi, b.constant({"dataType": "float32", "shape": [1]}, np.array([s])),
                              b.constant({"dataType": dt, "shape": [1]}, np.array([z], dt)))
        got = ctx.compute(b.build({"y": q}), {"x": x})["y"]
        lo, hi = QRANGE[dt]
        ref = np.clip(np.rint(x.astype(np.float64) / np.float64(s)) + z, lo, hi).astype(dt)
        np.testing.assert_array_equal(got, ref)


def test_quantize_linear_random_scales_and_specials(ctx):
    """random float32 scales and inputs (the quotient's full range, NaN,
    infinities, subnormal and huge scales) against rint(x / s) in float64:
    every vector path (float32 first, double near a tie, the division at
    one) gives the quotient's result"""
    rng = rng_for("qrandom")
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 3e38, -3e38], np.float32)
    for i in range(40):
        s = np.float32(2.0 ** rng.uniform(-20, 6) if i < 36 else [1e-45, 1e-40, 3e38, 1.0][i - 36])
        with np.errstate(over="ignore"):
            x = (rng.standard_normal(1000) * s * 10 ** rng.uniform(0, 3)).astype(np.float32)
            ties = ((rng.integers(-300, 300, 200) + 0.5) * np.float64(s)).astype(np.float32)
        x = np.concatenate([x, ties, specials, x[:37]])
        for dt in ("uint8", "int8"):
            z = int(rng.integers(*QRANGE[dt]))
            b = webnn.MLGraphBuilder(ctx)
            xi = b.input("x", {"dataType": "float32", "shape": [x.size]})
            q = b.quantize_linear(xi, b.constant({"dataType": "float32", "shape": [1]}, np.array([s])),
                                  b.constant({"dataType": dt, "shape": [1]}, np.array([z], dt)))
            got = ctx.compute(b.build({"y": q}), {"x": x})["y"]
            with np.errstate(all="ignore"):
                r = np.rint(x.astype(np.float64) / np.float64(s)) + z
            lo, hi = QRANGE[dt]
            ref = np.where(np.isnan(r), 0, np.clip(r, lo, hi)).astype(dt)
            bad = np.nonzero(got != ref)[0]
            assert bad.size == 0, (s, dt, x[bad[:5]], got[bad[:5]], ref[bad[:5]])


@pytest.mark.parametrize("also_q_out", [False, True])
@pytest.mark.parametrize("ydt", ["uint8", "int8"])
def test_region_ending_in_dequantize(ctx, also_q_out, ydt):
    """quantizeLinear -> dequantizeLinear (the next region's input, as QDQ
    models chain them): the integer step writes the float32
    (q - zd) * sd itself -- unless the integers are a graph output too,
    then the dequantizeLinear runs on its own; both exact"""
    rng = rng_for("dq-end", also_q_out, ydt)
    c = make_case(rng, "matmul", ydt=ydt, M=7, K=20, N=33, bias="add", act="relu")
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    x = b.input("x", {"dataType": c["xdt"], "shape": list(c["x"].shape)})
    dx = b.dequantize_linear(x, const(np.full([1, 1], c["sx"], np.float32)),
                             const(np.full([1, 1], c["zx"], c["xdt"])))
    dw = b.dequantize_linear(const(c["w"]), const(c["sw"].reshape(_w_scale_shape(c))),
                             const(c["zw"].reshape(_w_scale_shape(c))))
    y = b.relu(b.add(b.matmul(dx, dw), const(c["bf"])))
    q = b.quantize_linear(y, const(np.full([1, 1], c["sy"], np.float32)),
                          const(np.full([1, 1], c["zy"], ydt)))
    sd, zd = np.float32(0.37), np.array(int(rng.integers(*QRANGE[ydt])), ydt)
    d = b.dequantize_linear(q, const(np.full([1, 1], sd)), const(np.full([1, 1], zd)))
    outs = {"d": d, "q": q} if also_q_out else {"d": d}
    g = b.build(outs)
    res = ctx.compute(g, {"x": c["x"]})
    groups = int8_groups(g)
    assert len(groups) == 1
    assert groups[0][-1] == ("quantizeLinear" if also_q_out else "dequantizeLinear"), groups
    ref_q = reference(c)
    ref_d = ((ref_q.astype(np.float64) - int(zd)) * np.float64(sd)).astype(np.float32)
    np.testing.assert_array_equal(res["d"], ref_d)
    if also_q_out:
        np.testing.assert_array_equal(res["q"], ref_q)


@pytest.mark.parametrize("quantize_input", [False, True])
def test_nchw_first_convolution_runs_in_integers(ctx, quantize_input):
    """an nchw graph of two convolutions (layout planning puts them in
    nhwc) whose first reads x -> [quantizeLinear] -> dequantizeLinear: the
    per-tensor (de)quantization runs in nhwc, its input transposed, so the
    first convolution's region runs in integer arithmetic -- its integers
    exactly the reference's -- instead of a transpose between the
    dequantizeLinear and the convolution"""
    rng = rng_for("nchw-first", quantize_input)
    c = make_case(rng, "conv2d", conv=dict(CONVS[2], layout="oihw"), act="relu")
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    one = [1, 1, 1, 1]
    xn = np.ascontiguousarray(c["x"].transpose(0, 3, 1, 2))
    sx, zx = const(np.full(one, c["sx"], np.float32)), const(np.full(one, c["zx"], c["xdt"]))
    if quantize_input:   # a float input, quantized by the graph (x's own values)
        xf = ((xn.astype(np.float64) - int(c["zx"])) * np.float64(c["sx"])).astype(np.float32)
        x = b.input("x", {"dataType": "float32", "shape": list(xn.shape)})
        dx = b.dequantize_linear(b.quantize_linear(x, sx, zx), sx, zx)
        feeds = {"x": xf}
    else:
        x = b.input("x", {"dataType": c["xdt"], "shape": list(xn.shape)})
        dx = b.dequantize_linear(x, sx, zx)
        feeds = {"x": xn}
    dw = b.dequantize_linear(const(c["w"]), const(c["sw"].reshape(-1, 1, 1, 1)),
                             const(c["zw"].reshape(-1, 1, 1, 1)))
    y = b.relu(b.conv2d(dx, dw, {k: c["conv"][k] for k in ("padding", "strides", "dilations")
                                 if k in c["conv"]}))
    q = b.quantize_linear(y, const(np.full(one, c["sy"], np.float32)),
                          const(np.full(one, c["zy"], c["ydt"])))
    w2 = rng.standard_normal((4, c["conv"]["O"], 1, 1)).astype(np.float32)
    d = b.dequantize_linear(q, const(np.full(one, np.float32(0.5))), const(np.full(one, c["zy"])))
    g = b.build({"q": q, "y2": b.conv2d(d, const(w2))})
    groups = int8_groups(g)
    assert len(groups) == 1 and "conv2d" in groups[0], groups
    res = ctx.compute(g, feeds)
    ref = reference(c)                              # nhwc
    np.testing.assert_array_equal(res["q"], ref.transpose(0, 3, 1, 2))
    dref = (ref.astype(np.float64) - int(c["zy"])) * 0.5
    y2 = np.einsum("nhwc,oc->nohw", dref, w2[:, :, 0, 0].astype(np.float64))
    np.testing.assert_allclose(res["y2"], y2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shared", [False, True])
def test_chained_regions(ctx, shared):
    """matmul -> quantizeLinear -> dequantizeLinear -> matmul ->
    quantizeLinear (a QDQ model's consecutive layers): two integer regions,
    the first's dequantizeLinear left to the second as its x (not taken into
    the first as its float32 result) -- also when that dequantized value is
    read elsewhere too (shared: a residual add's reader); exact"""
    rng = rng_for("chain", shared)
    c1 = make_case(rng, "matmul", M=6, K=19, N=23, act="relu")
    c2 = make_case(rng, "matmul", M=6, K=23, N=11)
    b = webnn.MLGraphBuilder(ctx)

    def const(a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    def dq(v, s, z, shape=(1, 1)):
        return b.dequantize_linear(v, const(np.full(shape, s, np.float32)),
                                   const(np.full(shape, z, np.asarray(z).dtype)))

    x = b.input("x", {"dataType": c1["xdt"], "shape": list(c1["x"].shape)})
    y1 = b.relu(b.matmul(dq(x, c1["sx"], c1["zx"]),
                         dq(const(c1["w"]), c1["sw"].reshape(1, -1), c1["zw"].reshape(1, -1),
                            (1, c1["w"].shape[1]))))
    q1 = b.quantize_linear(y1, const(np.full((1, 1), c1["sy"], np.float32)),
                           const(np.full((1, 1), c1["zy"], c1["ydt"])))
    d1 = dq(q1, c1["sy"], c1["zy"])
    y2 = b.matmul(d1, dq(const(c2["w"]), c2["sw"].reshape(1, -1), c2["zw"].reshape(1, -1),
                         (1, c2["w"].shape[1])))
    q2 = b.quantize_linear(y2, const(np.full((1, 1), c2["sy"], np.float32)),
                           const(np.full((1, 1), c2["zy"], c2["ydt"])))
    outs = {"q2": q2, "t": b.tanh(d1)} if shared else {"q2": q2}
    g = b.build(outs)
    assert len(int8_groups(g)) == 2, int8_groups(g)
    res = ctx.compute(g, {"x": c1["x"]})
    r1 = reference(c1)
    c2.update(x=r1, xdt=c1["ydt"], sx=c1["sy"], zx=c1["zy"])
    np.testing.assert_array_equal(res["q2"], reference(c2))
    if shared:
        d = ((r1.astype(np.float64) - int(c1["zy"])) * np.float64(c1["sy"])).astype(np.float32)
        np.testing.assert_allclose(res["t"], np.tanh(d.astype(np.float64)), rtol=1e-6, atol=1e-7)
