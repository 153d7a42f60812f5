"""Input scales (compiler/fuse.h WNN_FUSE_IN_SCALE, cpu/kernels/conv/conv2d.c):
a conv2d of groups 1 reading mul(x, s), s one value per input channel -- the
end of a squeeze-and-excitation block (EfficientNet, MobileNetV3) -- runs as
conv(x, W diag(s)), x * s never stored.

Each term is then rounded as x (w s) instead of (x s) w, so the fused graph
is compared with the unfused one (a context with WEBNN_CPU_FUSION=0) and with
NumPy float64 within a few float32 ulps of the sum of the terms' magnitudes;
where s is not in [2^-64, 1] (or 0, or NaN) the kernel multiplies x as the
mul does and the results are bit-exact.  Each test checks from the summary
that the chain was (or, for the patterns that must not fuse, was not)
fused."""
import zlib

import numpy as np
import pytest

import webnn

from .test_fusion import make_context


@pytest.fixture(scope="module")
def contexts():
    """(fused, unfused); layout planning off in both"""
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_IN_SCALE="1"),
            make_context(WEBNN_CPU_FUSION="0", WEBNN_CPU_LAYOUT="0"))


PERM = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def se_case(rng, layout="nhwc", flayout="ohwi", n=1, hw=12, cin=24, cout=8, k=1,
            pad=0, bias=True, residual=False, act=None, s=None, const_filter=True):
    """inputs, builder function and float64 reference of conv(x * s, w)
    [+ b] [+ r] [-> act]"""
    xs = (n, hw, hw, cin) if layout == "nhwc" else (n, cin, hw, hw)
    ss = (1, 1, 1, cin) if layout == "nhwc" else (1, cin, 1, 1)
    x = rng.standard_normal(xs).astype(np.float32)
    if s is None:
        s = sigmoid(rng.standard_normal(cin) * 3)
    s = np.asarray(s, np.float32).reshape(ss)
    w_oihw = (rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float32)
    w = np.ascontiguousarray(w_oihw.transpose(PERM[flayout]))
    b = rng.standard_normal(cout).astype(np.float32)
    oh = hw + 2 * pad - k + 1
    ys = (n, oh, oh, cout) if layout == "nhwc" else (n, cout, oh, oh)
    r = rng.standard_normal(ys).astype(np.float32)
    inputs = {"x": x, "s": s}
    if not const_filter:
        inputs["w"] = w
    if residual:
        inputs["r"] = r

    def make(bld, ops):
        wop = ops["w"] if not const_filter else bld.constant(w)
        opts = {"input_layout": layout, "filter_layout": flayout}
        if pad:
            opts["padding"] = [pad] * 4
        if bias:
            opts["bias"] = bld.constant(b)
        y = bld.conv2d(bld.mul(ops["x"], ops["s"]), wop, **opts)
        if residual:
            y = bld.add(y, ops["r"])
        if act == "relu":
            y = bld.relu(y)
        return y

    # float64: the terms and the sum of their magnitudes (the tolerance)
    xn = (x.astype(np.float64) * s.astype(np.float64))
    if layout == "nhwc":
        xn = xn.transpose(0, 3, 1, 2)
    xp = np.pad(xn, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ref = np.zeros((n, cout, oh, oh))
    mag = np.zeros_like(ref)
    w64 = w_oihw.astype(np.float64)
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i:i + oh, j:j + oh]
            ref += np.einsum("nchw,oc->nohw", patch, w64[:, :, i, j])
            mag += np.einsum("nchw,oc->nohw", np.abs(patch), np.abs(w64[:, :, i, j]))
    if bias:
        ref += b.reshape(1, -1, 1, 1)
        mag += np.abs(b).reshape(1, -1, 1, 1)
    if layout == "nhwc":
        ref, mag = ref.transpose(0, 2, 3, 1), mag.transpose(0, 2, 3, 1)
    if residual:
        ref += r
        mag += np.abs(r)
    if act == "relu":
        ref = np.maximum(ref, 0)
    return inputs, make, ref, mag


def run(ctx, make, inputs):
    b = webnn.MLGraphBuilder(ctx)
    ops = {k: b.input(k, {"dataType": str(v.dtype), "shape": list(v.shape)})
           for k, v in inputs.items()}
    g = b.build({"y": make(b, ops)})
    return ctx.compute(g, inputs)["y"], g.summary()


def fused_groups(summary):
    return [g for g in summary.fused_groups if g[:2] == ["mul", "conv2d"]]


def close(got, ref, mag, ulps=8):
    """within ulps float32 ulps of the sum of the terms' magnitudes"""
    err = np.abs(got.astype(np.float64) - ref)
    tol = ulps * np.finfo(np.float32).eps * (mag + 1e-30)
    assert np.all(err <= tol), f"max err / tol {np.max(err / tol):.3g}"


@pytest.mark.parametrize("flayout", ["ohwi", "oihw", "hwio", "ihwo"])
@pytest.mark.parametrize("epi", ["none", "residual", "bias_relu"])
def test_fused_against_unfused_and_numpy(contexts, flayout, epi):
    rng = np.random.default_rng(zlib.crc32(f"{flayout}-{epi}".encode()))
    inputs, make, ref, mag = se_case(rng, flayout=flayout, bias=epi != "none",
                                     residual=epi == "residual",
                                     act="relu" if epi == "bias_relu" else None)
    got, summary = run(contexts[0], make, inputs)
    plain, _ = run(contexts[1], make, inputs)
    want = {"none": ["mul", "conv2d"], "residual": ["mul", "conv2d", "add"],
            "bias_relu": ["mul", "conv2d", "relu"]}[epi]
    assert fused_groups(summary) == [want], summary
    close(got, ref, mag)
    close(plain, ref, mag)


@pytest.mark.parametrize("case", ["nchw", "filter_input", "3x3_padded", "3x3_winograd",
                                  "batch2", "odd_channels", "one_channel", "one_channel_3x3"])
def test_other_paths(contexts, case):
    """the paths that scale the filter in its own layout (nchw, a filter
    that is no constant, Winograd's 3x3: 16 channels in and out or more),
    the packed 3x3 filter of the direct kernel, and other shapes"""
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    kw = {"nchw": dict(layout="nchw", flayout="oihw"),
          "filter_input": dict(const_filter=False),
          "3x3_padded": dict(k=3, pad=1, hw=32, cin=32, cout=8),
          "3x3_winograd": dict(k=3, pad=1, hw=48, cin=32, cout=16),
          "batch2": dict(n=2, hw=9),
          "odd_channels": dict(cin=37, cout=5, hw=7),
          # one input channel: groups 1 and depthwise at once (the
          # depthwise kernel runs it, on a scaled filter)
          "one_channel": dict(cin=1, cout=3, hw=8),
          "one_channel_3x3": dict(cin=1, cout=1, hw=8, k=3, pad=1)}[case]
    inputs, make, ref, mag = se_case(rng, **kw)
    got, summary = run(contexts[0], make, inputs)
    assert len(fused_groups(summary)) == 1, summary
    close(got, ref, mag, ulps=16)


@pytest.mark.parametrize("kind", ["large", "tiny", "negative_large", "inf"])
def test_scales_outside_the_exact_range_are_bit_exact(contexts, kind):
    """an s outside [2^-64, 1] (the filter times s could overflow or lose
    bits in the subnormals) is applied to x as the mul applies it: the same
    bits as the unfused graph"""
    rng = np.random.default_rng(7)
    s = sigmoid(rng.standard_normal(24))
    s[3] = {"large": 3.5, "tiny": 1e-30, "negative_large": -2.0, "inf": np.inf}[kind]
    inputs, make, _, _ = se_case(rng, s=s, residual=True)
    inputs["x"][0, 1, 2, 5] = 1e30
    got, summary = run(contexts[0], make, inputs)
    plain, _ = run(contexts[1], make, inputs)
    assert len(fused_groups(summary)) == 1, summary
    np.testing.assert_array_equal(got, plain)


def test_edge_values(contexts):
    """NaN and infinities in x, zeros, NaN and -0 in s: NaN where the unfused
    graph has NaN, the rest within the tolerance"""
    rng = np.random.default_rng(11)
    s = sigmoid(rng.standard_normal(24))
    s[[1, 2]] = [0.0, -0.0]
    inputs, make, ref, mag = se_case(rng, s=s)
    x = inputs["x"]
    x[0, 0, 0, 1] = np.inf       # times s = 0: NaN at every output of pixel (0, 0)
    x[0, 3, 4, 7] = -np.inf      # times s > 0: -inf terms
    x[0, 5, 5, 9] = np.nan
    got, summary = run(contexts[0], make, inputs)
    plain, _ = run(contexts[1], make, inputs)
    assert len(fused_groups(summary)) == 1, summary
    np.testing.assert_array_equal(np.isnan(got), np.isnan(plain))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(plain))
    fin = np.isfinite(plain)
    assert fin.sum() > 0.9 * plain.size
    with np.errstate(invalid="ignore"):
        close(got[fin], ref[fin], mag[fin])
    # a NaN in s: every output NaN, both ways
    s[4] = np.nan
    inputs, make, _, _ = se_case(np.random.default_rng(12), s=s)
    got, _ = run(contexts[0], make, inputs)
    plain, _ = run(contexts[1], make, inputs)
    assert np.isnan(got).all() and np.isnan(plain).all()


def test_se_block_against_numpy(contexts):
    """a whole squeeze-and-excitation block as EfficientNet's exports write
    it: s = sigmoid(conv(silu(conv(mean(x))))), then conv(x * s)"""
    rng = np.random.default_rng(5)
    n, hw, c, r, o = 1, 20, 32, 8, 16
    x = rng.standard_normal((n, hw, hw, c)).astype(np.float32)
    w1 = (rng.standard_normal((r, 1, 1, c)) / np.sqrt(c)).astype(np.float32)
    w2 = (rng.standard_normal((c, 1, 1, r)) / np.sqrt(r)).astype(np.float32)
    wp = (rng.standard_normal((o, 1, 1, c)) / np.sqrt(c)).astype(np.float32)
    outs = []
    for ctx in contexts:
        b = webnn.MLGraphBuilder(ctx)
        xi = b.input("x", {"dataType": "float32", "shape": list(x.shape)})
        m = b.reduce_mean(xi, axes=[1, 2], keep_dimensions=True)
        t = b.conv2d(m, b.constant(w1), input_layout="nhwc", filter_layout="ohwi")
        t = b.mul(t, b.sigmoid(t))
        sc = b.sigmoid(b.conv2d(t, b.constant(w2), input_layout="nhwc", filter_layout="ohwi"))
        y = b.conv2d(b.mul(xi, sc), b.constant(wp), input_layout="nhwc", filter_layout="ohwi")
        g = b.build({"y": y})
        outs.append((ctx.compute(g, {"x": x})["y"], g.summary()))
    assert len(fused_groups(outs[0][1])) == 1, outs[0][1]
    assert not fused_groups(outs[1][1])
    x64 = x.astype(np.float64)
    m = x64.mean(axis=(1, 2))
    t = m @ w1[:, 0, 0, :].T
    t = t * sigmoid(t)
    sc = sigmoid(t @ w2[:, 0, 0, :].T)
    ref = np.einsum("nhwc,oc->nhwo", x64 * sc[:, None, None, :], wp[:, 0, 0, :])
    mag = np.einsum("nhwc,oc->nhwo", np.abs(x64 * sc[:, None, None, :]), np.abs(wp[:, 0, 0, :]))
    close(outs[0][0], ref, mag, ulps=16)
    close(outs[1][0], ref, mag, ulps=16)


def _fuses(ctx, make_graph):
    b = webnn.MLGraphBuilder(ctx)
    return fused_groups(make_graph(b).summary())


@pytest.mark.parametrize("case", ["mul_is_output", "second_reader", "full_shape_s",
                                  "s_on_height", "grouped", "depthwise",
                                  "small_image", "float16", "switched_off"])
def test_patterns_that_must_not_fuse(contexts, case):
    """no input scale where x * s is a graph output or read elsewhere, where
    s is not one value per input channel, for grouped or depthwise
    convolutions, where the filter is larger than a quarter of x per input
    channel, in float16, or with WEBNN_CPU_IN_SCALE=0"""
    rng = np.random.default_rng(3)
    ctx = (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_IN_SCALE="0")
           if case == "switched_off" else contexts[0])
    dt = "float16" if case == "float16" else "float32"
    hw = 3 if case == "small_image" else 12
    c, o = 24, 8

    def graph(b):
        x = b.input("x", {"dataType": dt, "shape": [1, hw, hw, c]})
        sshape = {"full_shape_s": [1, hw, hw, c], "s_on_height": [1, hw, 1, 1]}.get(case, [1, 1, 1, c])
        s = b.input("s", {"dataType": dt, "shape": sshape})
        groups = {"grouped": 2, "depthwise": c}.get(case, 1)
        oc = c if case == "depthwise" else o
        w = b.constant(rng.standard_normal((oc, 1, 1, c // groups)).astype(dt))
        xs = b.mul(x, s)
        y = b.conv2d(xs, w, input_layout="nhwc", filter_layout="ohwi", groups=groups)
        outs = {"y": y}
        if case == "mul_is_output":
            outs["xs"] = xs
        if case == "second_reader":
            outs["z"] = b.relu(xs)
        return b.build(outs)

    assert _fuses(ctx, graph) == []
    if case == "small_image":  # 9 pixels against 4 x 2 output channels: fused
        o = 2
        assert len(_fuses(ctx, graph)) == 1


def test_efficientnet_projection_shapes(contexts):
    """EfficientNet-B0's first projections (112 x 112 x 32 -> 16, 56 x 56 x
    144 -> 24 with the residual) against the unfused graph"""
    rng = np.random.default_rng(21)
    for hw, cin, cout, residual in ((112, 32, 16, False), (56, 144, 24, True)):
        inputs, make, ref, mag = se_case(rng, hw=hw, cin=cin, cout=cout,
                                         residual=residual, bias=True)
        got, summary = run(contexts[0], make, inputs)
        plain, _ = run(contexts[1], make, inputs)
        assert len(fused_groups(summary)) == 1, summary
        close(got, ref, mag)
        close(plain, ref, mag)
        assert np.max(np.abs(got - plain)) <= 1e-5 * np.max(np.abs(plain))


@pytest.mark.parametrize("seed", range(24))
def test_random_geometries(contexts, seed):
    """random conv2d geometries (filter sizes, strides, dilations, padding,
    batch, both layouts, every filter layout, a residual or not) behind an
    input scale: the fused graph against the unfused one, within a few ulps
    of the sum of the terms' magnitudes, on whichever path the kernel takes"""
    rng = np.random.default_rng(1000 + seed)
    layout = ["nhwc", "nchw"][seed % 2]
    flayout = ["ohwi", "oihw", "hwio", "ihwo"][seed // 2 % 4]
    n = int(rng.integers(1, 3))
    k = int(rng.choice([1, 1, 2, 3, 5]))
    stride = int(rng.integers(1, 3))
    dil = int(rng.integers(1, 3)) if k > 1 else 1
    pad = [int(v) for v in rng.integers(0, k, 4)]
    cin, cout = int(rng.integers(1, 70)), int(rng.integers(1, 40))
    span = (k - 1) * dil + 1
    hw = int(rng.integers(span, span + 24))
    xs = (n, hw, hw, cin) if layout == "nhwc" else (n, cin, hw, hw)
    ss = (1, 1, 1, cin) if layout == "nhwc" else (1, cin, 1, 1)
    x = rng.standard_normal(xs).astype(np.float32)
    s = sigmoid(rng.standard_normal(cin) * 4).astype(np.float32).reshape(ss)
    w_oihw = rng.standard_normal((cout, cin, k, k)).astype(np.float32)
    w = np.ascontiguousarray(w_oihw.transpose(PERM[flayout]))
    opts = {"input_layout": layout, "filter_layout": flayout, "strides": [stride] * 2,
            "dilations": [dil] * 2, "padding": pad}

    def make(b, ops):
        return b.conv2d(b.mul(ops["x"], ops["s"]), b.constant(w), **opts)

    inputs = {"x": x, "s": s}
    got, summary = run(contexts[0], make, inputs)
    plain, _ = run(contexts[1], make, inputs)
    oh = (hw + pad[0] + pad[1] - span) // stride + 1
    fuses = n * hw * hw >= 4 * cout * k * k
    assert len(fused_groups(summary)) == int(fuses), (summary, n, hw, cout, k)
    # |x s| |w| summed over the window: the unfused result through abs values
    absw = np.abs(w)
    mag, _ = run(contexts[1], lambda b, ops: b.conv2d(b.abs(b.mul(ops["x"], ops["s"])),
                                                       b.constant(absw), **opts), inputs)
    assert got.shape == plain.shape and got.shape[1 if layout == "nhwc" else 2] == oh
    err = np.abs(got.astype(np.float64) - plain)
    assert np.all(err <= 16 * np.finfo(np.float32).eps * (mag.astype(np.float64) + 1e-30)), \
        float(np.max(err / (mag + 1e-30)))
