"""Layout planning on the CPU (compiler/layout.c): an nchw graph with two or
more convolutions runs them in nhwc, with transposes at the edges of the
nhwc regions only.  Checked against the same graph unplanned
(WEBNN_CPU_LAYOUT=0, the nchw kernels) and against NumPy float64: residual
adds, clamps and other element-wise operators inside a region, pools,
operands that are graph outputs or have readers that need nchw (concat,
reshape, broadcasting adds), float16; and the inserted transposes, visible
in summary(), are exactly the ones at the region's edges."""
import numpy as np
import pytest

import webnn

from .test_fusion import edge_values, make_context
from .test_prepared_weights import conv_ref


@pytest.fixture(scope="module")
def contexts():
    """(planned, unplanned); fusion on in both"""
    return (make_context(WEBNN_CPU_LAYOUT="1", WEBNN_CPU_FUSION="1"),
            make_context(WEBNN_CPU_LAYOUT="0", WEBNN_CPU_FUSION="1"))


def build_run(ctx, make, inputs):
    b = webnn.MLGraphBuilder(ctx)
    ops = {k: b.input(k, {"dataType": str(v.dtype), "shape": list(v.shape)})
           for k, v in inputs.items()}
    outs = make(b, ops)
    g = b.build(outs)
    return ctx.compute(g, inputs), g


def layout_nodes(g):
    return [r["label"] for r in g.summary().rows if r["label"].startswith("layout")]


def weights(rng, o, c, k, dt):
    return (rng.standard_normal((o, c, k, k)) * (1.0 / np.sqrt(c * k * k))).astype(dt)


def block(b, x, rng, dt, cin, cout, stride=1, residual=True):
    """MobileNetV2's inverted residual: 1x1 expand, clamp, 3x3 depthwise,
    clamp, 1x1 project, residual add."""
    e = cin * 4
    y = b.conv2d(x, b.constant(weights(rng, e, cin, 1, dt)),
                 bias=b.constant(rng.standard_normal(e).astype(dt)))
    y = b.clamp(y, min_value=0, max_value=6)
    y = b.conv2d(y, b.constant(weights(rng, e, 1, 3, dt)), padding=[1] * 4,
                 strides=[stride] * 2, groups=e)
    y = b.clamp(y, min_value=0, max_value=6)
    y = b.conv2d(y, b.constant(weights(rng, cout, e, 1, dt)))
    return b.add(y, x) if residual and stride == 1 and cin == cout else y


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_mobilenet_like(contexts, dt):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 8, 15, 15)).astype(dt)
    bias = rng.standard_normal((16, 1, 1)).astype(dt)

    def make(b, ops):
        r = np.random.default_rng(1)
        y = block(b, ops["x"], r, dt, 8, 8)
        mid = y                                            # also an output
        y = block(b, y, r, dt, 8, 16, stride=2)
        y = b.add(y, b.constant(bias))                     # per channel: nhwc, bias as [C]
        y = block(b, y, r, dt, 16, 16)
        y = b.sigmoid(y)
        p = b.average_pool2d(y)                            # pool in nhwc
        cat = b.concat([y, y], 1)                          # nhwc (axis 3), an output
        return {"mid": mid, "pool": b.reshape(p, [2, 16]), "cat": cat}

    (got, g), (want, _) = (build_run(c, make, {"x": x}) for c in contexts)
    tol = 1e-5 if dt == "float32" else 2e-2
    for k in want:
        assert got[k].shape == want[k].shape, k
        np.testing.assert_allclose(got[k].astype(np.float64), want[k].astype(np.float64),
                                   rtol=tol, atol=tol, err_msg=k)
    labels = layout_nodes(g)
    # in: x once; the bias reshaped to [C]; out: mid (output), before
    # reshape (the pool's result) and cat (output)
    assert labels.count("layout nchw->nhwc") == 1, labels
    assert labels.count("layout per-channel operand") == 1, labels
    assert labels.count("layout nhwc->nchw") == 3, labels


def test_against_numpy(contexts):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 6, 9, 9)).astype(np.float32)
    w1, w2 = weights(rng, 10, 6, 3, np.float32), weights(rng, 10, 1, 3, np.float32)
    b1 = rng.standard_normal(10).astype(np.float32)

    def make(b, ops):
        y = b.relu(b.conv2d(ops["x"], b.constant(w1), bias=b.constant(b1), padding=[1] * 4))
        z = b.conv2d(y, b.constant(w2), padding=[1] * 4, groups=10)
        return {"z": b.add(z, y)}

    got, g = build_run(contexts[0], make, {"x": x})
    y = np.maximum(conv_ref(x.astype(np.float64), w1.astype(np.float64),
                            b1.astype(np.float64), 1, 1, False), 0)
    z = conv_ref(y, w2.astype(np.float64), np.zeros(10), 1, 10, False) + y
    np.testing.assert_allclose(got["z"], z, rtol=1e-5, atol=1e-5)
    assert layout_nodes(g) == ["layout nchw->nhwc", "layout nhwc->nchw"]
    assert g.summary().rows[-1]["label"] == "layout nhwc->nchw"


def test_single_conv_and_switch_off(contexts):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    w = weights(rng, 4, 4, 3, np.float32)

    def one(b, ops):
        return {"y": b.conv2d(ops["x"], b.constant(w), padding=[1] * 4)}

    def two(b, ops):
        return {"y": b.conv2d(b.conv2d(ops["x"], b.constant(w), padding=[1] * 4),
                              b.constant(w), padding=[1] * 4)}

    assert layout_nodes(build_run(contexts[0], one, {"x": x})[1]) == []
    (a, g1), (c, g0) = (build_run(ctx, two, {"x": x}) for ctx in contexts)
    assert len(layout_nodes(g1)) == 2 and layout_nodes(g0) == []
    np.testing.assert_allclose(a["y"], c["y"], rtol=1e-5, atol=1e-5)


def test_nhwc_graphs_are_left_alone(contexts):
    """A graph already in nhwc has nothing to plan."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 8, 8, 4)).astype(np.float32)
    w = np.ascontiguousarray(weights(rng, 4, 4, 3, np.float32).transpose(0, 2, 3, 1))

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), padding=[1] * 4, input_layout="nhwc",
                     filter_layout="ohwi")
        return {"y": b.conv2d(y, b.constant(w), padding=[1] * 4, input_layout="nhwc",
                              filter_layout="ohwi")}

    (a, g), (c, _) = (build_run(ctx, make, {"x": x}) for ctx in contexts)
    assert layout_nodes(g) == []
    np.testing.assert_array_equal(a["y"], c["y"])


def test_conv_output_as_another_convs_filter(contexts):
    """An nhwc-stored result read as a filter (not an activation) is given
    in nchw."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 2, 5, 5)).astype(np.float32)
    a = rng.standard_normal((1, 3, 7, 7)).astype(np.float32)
    w1 = weights(rng, 2, 2, 3, np.float32)

    def make(b, ops):
        f = b.conv2d(ops["x"], b.constant(w1))            # [4, 2, 3, 3]: a filter
        g = b.conv2d(ops["a"], b.constant(weights(np.random.default_rng(9), 2, 3, 1, np.float32)))
        return {"y": b.conv2d(g, f, padding=[1] * 4)}

    (got, g), (want, _) = (build_run(c, make, {"x": x, "a": a}) for c in contexts)
    assert layout_nodes(g)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-5, atol=1e-5)


def test_normalization_per_channel_operands_and_concat_stay_nhwc(contexts):
    """ONNX-style blocks: conv -> batchNormalization (axis 1) -> mul / add by
    [C, 1, 1] constants -> relu -> conv, instanceNormalization, concat of
    nhwc operands (densenet): all in nhwc, no transpose inside; broadcasts
    that are not per channel ([W], [1, 1, H, W]) and a concat with an nchw
    input still get the operand in nchw."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 6, 7, 7)).astype(np.float32)
    c = 7  # = W: a [W] operand must not pass for a per-channel one
    vecs = [rng.standard_normal(c).astype(np.float32) for _ in range(4)]
    mean, scale, bias = vecs[0], vecs[2], vecs[3]
    var = np.abs(vecs[1]) + 0.5
    chw = rng.standard_normal((c, 1, 1)).astype(np.float32)
    nchw_4 = rng.standard_normal((1, c, 1, 1)).astype(np.float32)
    w_row = rng.standard_normal(7).astype(np.float32)          # broadcasts along W
    hw = rng.standard_normal((1, 1, 7, 7)).astype(np.float32)  # along H and W

    def make(b, ops):
        k = b.constant
        y = b.conv2d(ops["x"], k(weights(rng_w(1), c, 6, 3, np.float32)), padding=[1] * 4)
        y = b.batch_normalization(y, k(mean), k(var), scale=k(scale), bias=k(bias))
        y = b.add(b.mul(y, k(chw)), k(nchw_4))
        y = b.relu(y)
        z = b.conv2d(y, k(weights(rng_w(2), c, c, 1, np.float32)))
        z = b.instance_normalization(z, scale=k(scale), bias=k(bias))
        cat = b.concat([y, z], 1)                                   # both nhwc
        u = b.conv2d(cat, k(weights(rng_w(3), c, 2 * c, 1, np.float32)))
        v = b.add(u, k(w_row))                                      # needs nchw
        t = b.mul(u, k(hw))                                         # needs nchw
        mixed = b.concat([u, ops["x2"]], 1)                         # an nchw input
        return {"v": v, "t": t, "mixed": mixed}

    x2 = rng.standard_normal((2, 3, 7, 7)).astype(np.float32)
    inputs = {"x": x, "x2": x2}
    (got, g), (want, _) = (build_run(ctx, make, inputs) for ctx in contexts)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-5, atol=2e-5, err_msg=name)
    # and against NumPy in float64
    f = np.float64
    per = (lambda a: a.astype(f)[:, None, None])
    y = conv_ref(x.astype(f), weights(rng_w(1), c, 6, 3, np.float32).astype(f), np.zeros(c), 1,
                 1, False)
    y = (y - per(mean)) / np.sqrt(per(var) + 1e-5) * per(scale) + per(bias)
    y = np.maximum(y * chw.astype(f) + nchw_4.astype(f), 0)
    z = conv_ref(y, weights(rng_w(2), c, c, 1, np.float32).astype(f), np.zeros(c), 0, 1, False)
    m, d = z.mean(axis=(2, 3), keepdims=True), z.var(axis=(2, 3), keepdims=True)
    z = (z - m) / np.sqrt(d + 1e-5) * per(scale) + per(bias)
    u = conv_ref(np.concatenate([y, z], 1), weights(rng_w(3), c, 2 * c, 1, np.float32).astype(f),
                 np.zeros(c), 0, 1, False)
    ref = {"v": u + w_row, "t": u * hw, "mixed": np.concatenate([u, x2], 1)}
    for name in ref:
        np.testing.assert_allclose(got[name], ref[name], rtol=1e-4, atol=1e-4, err_msg=name)
    labels = layout_nodes(g)
    assert labels.count("layout per-channel operand") == 2, labels   # chw, nchw_4
    # x in; u out once, for the two broadcasts and the mixed concat (x2 is
    # nchw already); v, t and mixed are then nchw: nothing else transposed
    assert labels.count("layout nchw->nhwc") == 1, labels
    assert labels.count("layout nhwc->nchw") == 1, labels
    ops = [r["operator"] for r in g.summary().rows]
    assert ops.count("transpose") == 2, ops


def rng_w(seed):
    return np.random.default_rng(100 + seed)


def test_channel_shuffle_runs_in_nhwc(contexts):
    """ShuffleNet's channel shuffle (reshape to [N, G, C/G, H, W], transpose
    [0, 2, 1, 3, 4], reshape back) between two convolutions runs in nhwc:
    one transpose ([N, H, W, G, C/G] -> [N, H, W, C/G, G]) and no layout
    conversions around it; against the unplanned graph and NumPy float64.
    A shuffle whose intermediate has a second reader, or with another
    permutation, keeps the nchw road."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 12, 7, 7)).astype(np.float32)
    w1 = weights(rng, 12, 4, 1, np.float32)       # grouped 1x1, 3 groups
    w2 = weights(rng, 12, 1, 3, np.float32)       # depthwise 3x3

    def make(variant):
        def f(b, ops):
            y = b.relu(b.conv2d(ops["x"], b.constant(w1), groups=3))
            r = b.reshape(y, [2, 3, 4, 7, 7])
            t = b.transpose(r, permutation=[0, 2, 1, 3, 4] if variant != "perm" else [0, 1, 2, 4, 3])
            s = b.reshape(t, [2, 12, 7, 7])
            out = {"z": b.conv2d(s, b.constant(w2), padding=[1] * 4, groups=12)}
            if variant == "second_reader":
                out["r"] = b.relu(r)
            return out
        return f

    def ref(variant):
        y = np.maximum(conv_ref(x.astype(np.float64), w1.astype(np.float64), np.zeros(12), 0, 3,
                                False), 0)
        r = y.reshape(2, 3, 4, 7, 7)
        t = r.transpose(0, 2, 1, 3, 4) if variant != "perm" else r.transpose(0, 1, 2, 4, 3)
        return conv_ref(t.reshape(2, 12, 7, 7), w2.astype(np.float64), np.zeros(12), 1, 12, False)

    for variant in ("shuffle", "second_reader", "perm"):
        (a, g1), (c, _) = (build_run(ctx, make(variant), {"x": x}) for ctx in contexts)
        np.testing.assert_allclose(a["z"], c["z"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(a["z"], ref(variant), rtol=1e-4, atol=1e-5)
        transposes = [r for r in g1.summary().rows if r["operator"] == "transpose"]
        if variant == "shuffle":
            assert layout_nodes(g1) == ["layout nchw->nhwc", "layout nhwc->nchw"], layout_nodes(g1)
            assert len(transposes) == 3, transposes  # the two edges and the shuffle
            assert [r["outputs"] for r in transposes if not r["label"]] == [["float32[2, 7, 7, 4, 3]"]]
        else:
            assert len(layout_nodes(g1)) == 4, layout_nodes(g1)


# reductions of an nhwc operand (ONNX's GlobalAveragePool is a reduceMean
# over axes 2 and 3): axes mapped to the stored order where the result is
# then nhwc (keepDimensions) or already in the logical order; otherwise the
# nchw version is read (a transpose at the edge)
REDUCES = [
    # (op, axes, keep, runs in nhwc)
    ("reduce_mean", [2, 3], True, True),
    ("reduce_mean", [2, 3], False, True),
    ("reduce_max", [1], False, True),         # n, h, w left: the same order
    ("reduce_sum", [0, 1, 2, 3], False, True),
    ("reduce_l2", [1, 3], True, True),
    ("reduce_sum_square", None, True, True),  # every axis
    ("reduce_min", [3], False, False),         # n, c, h left: c moves
    ("reduce_log_sum_exp", [2], False, False),
]


@pytest.mark.parametrize("op,axes,keep,nhwc", REDUCES)
def test_reductions_in_nhwc(contexts, op, axes, keep, nhwc):
    rng = np.random.default_rng(abs(hash((op, str(axes), keep))) % 2**32)
    x = rng.standard_normal((2, 6, 7, 5)).astype(np.float32)
    w1, w2 = weights(rng, 12, 6, 3, np.float32), weights(rng, 10, 12, 1, np.float32)

    def make(b, ops):
        y = b.relu(b.conv2d(ops["x"], b.constant(w1), padding=[1] * 4))
        y = b.conv2d(y, b.constant(w2))
        opts = {"keep_dimensions": keep}
        if axes is not None:
            opts["axes"] = axes
        r = getattr(b, op)(y, **opts)
        return {"r": b.add(r, r)}

    planned, g = build_run(contexts[0], make, {"x": x})
    plain, _ = build_run(contexts[1], make, {"x": x})
    np.testing.assert_allclose(planned["r"], plain["r"], rtol=1e-5, atol=1e-5)
    # and NumPy float64
    y = np.maximum(conv_ref(x.astype(np.float64), w1.astype(np.float64), np.zeros(12), 1, 1,
                            False), 0)
    y = conv_ref(y, w2.astype(np.float64), np.zeros(10), 0, 1, False)
    ax = tuple(axes) if axes is not None else None
    fn = {"reduce_mean": lambda a: a.mean(ax, keepdims=keep),
          "reduce_max": lambda a: a.max(ax, keepdims=keep),
          "reduce_sum": lambda a: a.sum(ax, keepdims=keep),
          "reduce_l2": lambda a: np.sqrt((a * a).sum(ax, keepdims=keep)),
          "reduce_sum_square": lambda a: (a * a).sum(ax, keepdims=keep),
          "reduce_min": lambda a: a.min(ax, keepdims=keep),
          "reduce_log_sum_exp": lambda a: np.log(np.exp(a).sum(ax, keepdims=keep))}[op]
    np.testing.assert_allclose(planned["r"], 2 * fn(y), rtol=1e-4, atol=1e-4)
    # the reduction reads the nhwc operand (no transpose of the conv's
    # output) exactly when it runs in nhwc
    rows = g.summary().rows
    conv_out_transposed = any(r["label"] == "layout nhwc->nchw" and
                              r["inputs"][0].endswith("[2, 7, 5, 10]") for r in rows)
    assert conv_out_transposed != nhwc, [(r["operator"], r["label"], r["inputs"]) for r in rows]


@pytest.mark.parametrize("op", ["identity", "cast", "is_nan", "is_infinite", "logical_not",
                                "lesser_or_equal"])
def test_elementwise_operators_stay_in_nhwc(contexts, op):
    """identity (ONNX Dropout), cast, isNaN, isInfinite, logicalNot after a
    comparison with a scalar, and a comparison of two nhwc operands between
    two convolutions read and write nhwc: no transposes around them, the
    results those of the unplanned graph and of NumPy (NaN and +-Inf in the
    input reach them through the convolution)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 6, 5)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    x[0, 2, 4, 1] = np.inf
    w1, w2 = weights(rng, 8, 4, 1, np.float32), weights(rng, 6, 8, 1, np.float32)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w1))
        if op == "identity":
            y = b.conv2d(b.identity(y), b.constant(w2))
        elif op == "cast":
            y = b.conv2d(b.cast(b.cast(y, "float16"), "float32"), b.constant(w2))
        elif op == "lesser_or_equal":
            z = b.conv2d(ops["x"], b.constant(w1[::-1].copy()))
            y = b.conv2d(b.cast(b.lesser_or_equal(y, z), "float32"), b.constant(w2))
        else:
            u = getattr(b, op)(b.greater(y, b.constant("float32", 0.0))
                               if op == "logical_not" else y)
            y = b.conv2d(b.cast(u, "float32"), b.constant(w2))
        return {"y": y}

    planned, g = build_run(contexts[0], make, {"x": x})
    plain, _ = build_run(contexts[1], make, {"x": x})
    np.testing.assert_array_equal(planned["y"], plain["y"])
    with np.errstate(invalid="ignore"):
        y = conv_ref(x.astype(np.float64), w1.astype(np.float64), np.zeros(8), 0, 1, False)
        u = {"identity": y, "cast": y.astype(np.float32).astype(np.float16).astype(np.float64),
             "is_nan": np.isnan(y), "is_infinite": np.isinf(y),
             "logical_not": ~(y > 0),
             "lesser_or_equal": y <= conv_ref(x.astype(np.float64), w1[::-1].astype(np.float64),
                                              np.zeros(8), 0, 1, False)}[op].astype(np.float64)
        ref = conv_ref(u, w2.astype(np.float64), np.zeros(6), 0, 1, False)
    np.testing.assert_allclose(planned["y"], ref, rtol=2e-3, atol=2e-3, equal_nan=True)
    # only the graph's edges: its input in, its output out
    assert layout_nodes(g) == ["layout nchw->nhwc", "layout nhwc->nchw"], layout_nodes(g)


@pytest.mark.parametrize("batch", [1, 2])
def test_squeeze_excitation_scale_stays_nhwc(contexts, batch):
    """EfficientNet's squeeze-excitation: y = conv(x); s = sigmoid(conv1x1(
    relu(conv1x1(reduceMean(y over h, w, kept))))); y * s -> conv.  s is made
    in the nhwc region as [1, C, 1, 1], stored as [1, 1, 1, C]: the same C
    values in the same order, so the product runs in nhwc with s read as [C]
    (no transposes around it).  With a batch of 2, s is [2, C, 1, 1], not per
    channel: the product gets its operands in nchw, and the values still
    agree."""
    rng = np.random.default_rng(21)
    c, r = 8, 4
    x = rng.standard_normal((batch, 3, 9, 9)).astype(np.float32)
    w0, w1, w2, w3 = (weights(rng_w(10 + i), o, ci, k, np.float32) for i, (o, ci, k) in
                      enumerate([(c, 3, 3), (r, c, 1), (c, r, 1), (c, c, 1)]))

    def make(b, ops):
        k = b.constant
        y = b.conv2d(ops["x"], k(w0), padding=[1] * 4)
        s = b.reduce_mean(y, axes=[2, 3], keep_dimensions=True)
        s = b.relu(b.conv2d(s, k(w1)))
        s = b.sigmoid(b.conv2d(s, k(w2)))
        return {"out": b.conv2d(b.mul(y, s), k(w3))}

    (got, g), (want, _) = (build_run(ctx, make, {"x": x}) for ctx in contexts)
    np.testing.assert_allclose(got["out"], want["out"], rtol=2e-5, atol=2e-5)
    f = np.float64
    y = conv_ref(x.astype(f), w0.astype(f), np.zeros(c), 1, 1, False)
    s = np.maximum(conv_ref(y.mean(axis=(2, 3), keepdims=True), w1.astype(f), np.zeros(r), 0, 1,
                            False), 0)
    s = 1 / (1 + np.exp(-conv_ref(s, w2.astype(f), np.zeros(c), 0, 1, False)))
    ref = conv_ref(y * s, w3.astype(f), np.zeros(c), 0, 1, False)
    np.testing.assert_allclose(got["out"], ref, rtol=1e-4, atol=1e-4)
    labels = layout_nodes(g)
    if batch == 1:
        assert labels.count("layout per-channel operand") == 1, labels
        assert labels.count("layout nchw->nhwc") == 1 and \
            labels.count("layout nhwc->nchw") == 1, labels   # x in, out out
    else:
        assert "layout per-channel operand" not in labels, labels
        assert labels.count("layout nhwc->nchw") >= 2, labels


@pytest.mark.parametrize("out_mid", [False, True], ids=["intermediate", "output"])
def test_convnext_permutes_become_views(contexts, out_mid):
    """ConvNeXt's block as ONNX exports it: depthwise conv2d (nchw) ->
    transpose [0, 2, 3, 1] -> layerNormalization over the channels (now the
    last axis) -> matmul -> gelu -> matmul -> transpose [0, 3, 1, 2] ->
    residual add -> the next conv2d.  With the convolutions in nhwc the two
    permutes are the stored data as it is: identities, aliased (no step, no
    transpose anywhere), unless a permuted tensor is a graph output (then it
    is copied).  Values as the unplanned graph's and NumPy float64's."""
    rng = np.random.default_rng(7)
    C, H, W = 16, 6, 5
    x = rng.standard_normal((2, C, H, W)).astype(np.float32)
    wd = (rng.standard_normal((C, 1, 3, 3)) / 3).astype(np.float32)
    w1 = (rng.standard_normal((C, 2 * C)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((2 * C, C)) / 6).astype(np.float32)
    wc = (rng.standard_normal((C, C, 1, 1)) / 4).astype(np.float32)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(wd), padding=[1] * 4, groups=C)
        t = b.transpose(y, permutation=[0, 2, 3, 1])
        t = b.layer_normalization(t, axes=[3])
        t = b.matmul(b.gelu(b.matmul(t, b.constant(w1))), b.constant(w2))
        back = b.transpose(t, permutation=[0, 3, 1, 2])
        z = b.conv2d(b.add(back, ops["x"]), b.constant(wc))
        return {"z": z, "back": back} if out_mid else {"z": z}

    (got, g), (want, _) = (build_run(c, make, {"x": x}) for c in contexts)
    # NumPy float64
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = sum(xp[:, :, i:i + H, j:j + W] * wd[None, :, 0, i, j, None, None]
            for i in range(3) for j in range(3))
    t = y.transpose(0, 2, 3, 1)
    t = (t - t.mean(-1, keepdims=True)) / np.sqrt(t.var(-1, keepdims=True) + 1e-5)
    h = t @ w1
    from math import erf
    h = 0.5 * h * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    back = (h @ w2).transpose(0, 3, 1, 2)
    z = np.einsum("nchw,oc->nohw", back + x, wc[:, :, 0, 0])
    ref = {"z": z, "back": back}
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=k)
        np.testing.assert_allclose(got[k], ref[k], rtol=1e-4, atol=1e-4, err_msg=k)
    v = webnn._core.graph_view(g._h)
    ops = [v["nodes"][s["node"]]["operator"] for s in v["steps"]]
    # the graph's input into nhwc and each output back to nchw: the model's
    # two permutes are no step (a permuted output is read back from the
    # nhwc storage by its layout transpose)
    assert ops.count("transpose") == (3 if out_mid else 2), ops
    assert "identity" not in ops and len(ops) == (9 if out_mid else 8), ops
