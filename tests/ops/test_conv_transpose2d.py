"""convTranspose2d: every option (padding, strides, dilations, outputPadding,
outputSizes, groups, inputLayout, filterLayout, bias) against a float64 NumPy
reference, both data types, and the spec's validation steps.

Reference: the definition as a scatter -- input pixel (ih, iw) adds
x * w[kh, kw] to the full output at (ih * stride + kh * dilation, ...), then
the full output is cropped by the padding (begin) and cut or extended (with
zeros, then the bias) to the output size.  Tolerance as in test_conv2d.
"""
import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, random_floats, rng_for

DTYPES = op_dtypes("convTranspose2d", "input")
EPS_ACC = 2.0**-23
FILTER_LAYOUTS = ["iohw", "hwoi", "ohwi"]
INPUT_LAYOUTS = ["nchw", "nhwc"]
# IOHW array -> that layout
TO_LAYOUT = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def out_size(inp, k, begin, end, stride, dil, out_pad=0):
    return (inp - 1) * stride + (k - 1) * dil + 1 - begin - end + out_pad


def ref_conv_transpose2d(x, w, b=None, padding=(0, 0, 0, 0), strides=(1, 1),
                         dilations=(1, 1), groups=1, out_hw=None):
    """x: NCHW, w: IOHW (input channels, output channels / groups, h, w)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    ci, og, kh, kw = w.shape
    assert ci == c and c % groups == 0
    cg = c // groups
    pt, pb, pl, pr = padding
    sh, sw = strides
    dh, dw = dilations
    oh, ow = out_hw
    full_h = max((h - 1) * sh + (kh - 1) * dh + 1, pt + oh)
    full_w = max((wd - 1) * sw + (kw - 1) * dw + 1, pl + ow)
    full = np.zeros((n, og * groups, full_h, full_w))
    mag = np.zeros_like(full)
    with np.errstate(invalid="ignore", over="ignore"):
        for g in range(groups):
            xs = x[:, g * cg:(g + 1) * cg]
            ws = w[g * cg:(g + 1) * cg]
            for i in range(kh):
                for j in range(kw):
                    sl = (slice(None), slice(g * og, (g + 1) * og),
                          slice(i * dh, i * dh + (h - 1) * sh + 1, sh),
                          slice(j * dw, j * dw + (wd - 1) * sw + 1, sw))
                    full[sl] += np.einsum("nchw,co->nohw", xs, ws[:, :, i, j])
                    mag[sl] += np.einsum("nchw,co->nohw", np.abs(xs), np.abs(ws[:, :, i, j]))
        out = full[:, :, pt:pt + oh, pl:pl + ow]
        mag = mag[:, :, pt:pt + oh, pl:pl + ow]
        if b is not None:
            b = np.asarray(b, np.float64)
            out = out + b[None, :, None, None]
            mag = mag + np.abs(b)[None, :, None, None]
    return out, mag


def run_convt(ctx, x, w, b=None, input_layout=None, filter_layout=None, constant=False,
              **options):
    xl = x if input_layout in (None, "nchw") else x.transpose(0, 2, 3, 1)
    wl = w if filter_layout is None else w.transpose(TO_LAYOUT[filter_layout])
    xl, wl = np.ascontiguousarray(xl), np.ascontiguousarray(wl)
    dt = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}[x.dtype]
    builder = webnn.MLGraphBuilder(ctx)
    xi = builder.input("x", {"dataType": dt, "shape": list(xl.shape)})
    feeds = {"x": xl}
    if constant:
        wi = builder.constant({"dataType": dt, "shape": list(wl.shape)}, wl)
    else:
        wi = builder.input("w", {"dataType": dt, "shape": list(wl.shape)})
        feeds["w"] = wl
    opts = dict(options)
    if input_layout is not None:
        opts["inputLayout"] = input_layout
    if filter_layout is not None:
        opts["filterLayout"] = filter_layout
    if b is not None:
        opts["bias"] = builder.input("b", {"dataType": dt, "shape": list(b.shape)})
        feeds["b"] = b
    y = builder.conv_transpose2d(xi, wi, opts)
    got = ctx.compute(builder.build({"y": y}), feeds)["y"]
    assert tuple(y.shape) == got.shape
    if input_layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    return got


# (n, c, h, w, og, kh, kw, padding, strides, dilations, outputPadding, outputSizes,
#  groups, bias)
CONFIGS = {
    "defaults": (1, 2, 3, 4, 3, 3, 3, None, None, None, None, None, None, False),
    "padding": (1, 2, 4, 4, 2, 3, 3, (1, 0, 2, 1), None, None, None, None, None, True),
    "strides": (2, 3, 3, 4, 2, 3, 2, None, (2, 3), None, None, None, None, True),
    "dilations": (1, 2, 4, 3, 2, 2, 3, (1, 1, 0, 2), None, (2, 3), None, None, None, False),
    "strides_dilations": (1, 2, 4, 5, 3, 3, 3, (0, 1, 1, 0), (2, 3), (2, 2), None, None, None,
                          True),
    "output_padding": (1, 2, 3, 3, 2, 3, 3, (1, 1, 1, 1), (3, 2), None, (2, 1), None, None,
                       True),
    "output_sizes": (1, 1, 3, 3, 2, 3, 3, None, (3, 2), None, None, (10, 8), None, True),
    "output_sizes_ignore_padding": (1, 2, 3, 4, 2, 2, 2, (1, 0, 0, 1), (3, 3), None, (2, 2),
                                    (9, 12), None, False),
    "groups": (1, 4, 3, 3, 3, 3, 3, (1, 1, 1, 1), None, None, None, None, 2, True),
    "groups_strided": (2, 6, 3, 4, 1, 2, 3, None, (2, 2), (1, 2), (1, 0), None, 3, True),
    "depthwise": (1, 5, 4, 4, 1, 3, 3, (1, 1, 1, 1), (2, 2), None, (1, 1), None, 5, True),
    "padding_crops_everything_but_one": (1, 2, 2, 2, 2, 2, 2, (1, 1, 1, 0), None, None, None,
                                         None, None, True),
    "1x1": (2, 3, 4, 5, 4, 1, 1, None, None, None, None, None, None, True),
    "1x1_strided": (1, 3, 3, 3, 2, 1, 1, None, (2, 2), None, (1, 1), None, None, False),
}


def output_hw(h, w, kh, kw, pad, st, dil, op, osz):
    pad = pad or (0, 0, 0, 0)
    st = st or (1, 1)
    dil = dil or (1, 1)
    op = op or (0, 0)
    if osz is not None:
        return tuple(osz)
    return (out_size(h, kh, pad[0], pad[1], st[0], dil[0], op[0]),
            out_size(w, kw, pad[2], pad[3], st[1], dil[1], op[1]))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("filter_layout", FILTER_LAYOUTS)
@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_options(ctx, name, input_layout, filter_layout, dt):
    n, c, h, w, og, kh, kw, pad, st, dil, op, osz, groups, bias = CONFIGS[name]
    g = groups or 1
    rng = rng_for("convTranspose2d", name, input_layout, filter_layout, dt)
    x = random_floats(rng, (n, c, h, w), dt, -1, 1)
    f = random_floats(rng, (c, og, kh, kw), dt, -1, 1)
    b = random_floats(rng, (og * g,), dt, -1, 1) if bias else None
    opts = {}
    for key, val in (("padding", pad), ("strides", st), ("dilations", dil),
                     ("outputPadding", op), ("outputSizes", osz)):
        if val is not None:
            opts[key] = list(val)
    if groups is not None:
        opts["groups"] = groups
    got = run_convt(ctx, x, f, b, input_layout, filter_layout, **opts)
    ohw = output_hw(h, w, kh, kw, pad, st, dil, op, osz)
    ref, mag = ref_conv_transpose2d(x, f, b, pad or (0, 0, 0, 0), st or (1, 1), dil or (1, 1),
                                    g, ohw)
    terms = (c // g) * kh * kw + 2
    check_float(got, ref, dt, ulps=1, atol=terms * EPS_ACC * mag)


@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
def test_large(ctx, input_layout):
    """An upsampling layer: 4x4 filter, strides 2, padding 1, constant filter."""
    rng = rng_for("convTranspose2d large", input_layout)
    x = random_floats(rng, (2, 24, 16, 15), "float32", -1, 1)
    f = random_floats(rng, (24, 16, 4, 4), "float32", -1, 1)
    b = random_floats(rng, (16,), "float32", -1, 1)
    layout = "iohw" if input_layout == "nchw" else "ohwi"
    got = run_convt(ctx, x, f, b, input_layout, layout, constant=True,
                    strides=[2, 2], padding=[1, 1, 1, 1])
    ref, mag = ref_conv_transpose2d(x, f, b, (1, 1, 1, 1), (2, 2), (1, 1), 1, (32, 30))
    check_float(got, ref, "float32", ulps=1, atol=(24 * 16 + 2) * EPS_ACC * mag)


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(ctx, dt):
    """[[1, 2], [3, 4]] with a 2x2 filter of ones, strides 2: each input
    value fills its own 2x2 block; outputPadding adds a row / column that
    only the bias reaches."""
    x = np.array([[1, 2], [3, 4]], npdt(dt)).reshape(1, 1, 2, 2)
    f = np.ones((1, 1, 2, 2), npdt(dt))
    b = np.array([10], npdt(dt))
    got = run_convt(ctx, x, f, b, strides=[2, 2], output_padding=[1, 1])
    want = np.array([[11, 11, 12, 12, 10], [11, 11, 12, 12, 10], [13, 13, 14, 14, 10],
                     [13, 13, 14, 14, 10], [10, 10, 10, 10, 10]], np.float64)
    np.testing.assert_array_equal(got.reshape(5, 5).astype(np.float64), want)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(ctx, dt):
    rng = rng_for("convTranspose2d specials", dt)
    x = random_floats(rng, (1, 2, 4, 4), dt, -1, 1)
    f = random_floats(rng, (2, 2, 3, 3), dt, -1, 1)
    x[0, 0, 1, 2] = np.nan
    x[0, 1, 3, 0] = np.inf
    got = run_convt(ctx, x, f, strides=[2, 2], padding=[1, 1, 1, 1])
    ref, mag = ref_conv_transpose2d(x, f, None, (1, 1, 1, 1), (2, 2), (1, 1), 1, (7, 7))
    check_float(got, ref, dt, ulps=1, atol=20 * EPS_ACC * np.nan_to_num(mag))


def test_output_shape(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float16", "shape": [2, 5, 4, 6]})
    f = b.input("f", {"dataType": "float16", "shape": [3, 2, 3, 6]})
    y = b.conv_transpose2d(x, f, input_layout="nhwc", filter_layout="hwoi", strides=[3, 2],
                           dilations=[1, 2], padding=[1, 0, 2, 1], output_padding=[2, 1],
                           groups=2)
    # height (5-1)*3 + 3 - 1 + 2 = 16, width (4-1)*2 + (2-1)*2+1 - 3 + 1 = 7
    assert y.shape == (2, 16, 7, 6)
    assert y.data_type == "float16"


# ---- validation ---------------------------------------------------------------------
def _build(ctx, x_shape, f_shape, dt="float32", fdt=None, b_shape=None, bdt=None, **opts):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": list(x_shape)})
    f = b.input("f", {"dataType": fdt or dt, "shape": list(f_shape)})
    if b_shape is not None:
        opts["bias"] = b.input("b", {"dataType": bdt or dt, "shape": list(b_shape)})
    return b.conv_transpose2d(x, f, opts)


X, F = (1, 4, 3, 3), (4, 2, 3, 3)


@pytest.mark.parametrize("case", [
    (("input",), dict(x_shape=X, f_shape=F, dt="int8")),
    (("input",), dict(x_shape=(4, 3, 3), f_shape=F)),
    (("filter",), dict(x_shape=X, f_shape=(4, 2, 3, 3, 1))),
    (("filter",), dict(x_shape=X, f_shape=F, fdt="float16")),
    (("padding",), dict(x_shape=X, f_shape=F, padding=[0, 0])),
    (("strides",), dict(x_shape=X, f_shape=F, strides=[2])),
    (("strides",), dict(x_shape=X, f_shape=F, strides=[0, 2])),
    (("dilations",), dict(x_shape=X, f_shape=F, dilations=[1, 1, 1])),
    (("dilations",), dict(x_shape=X, f_shape=F, dilations=[1, 0])),
    (("outputPadding",), dict(x_shape=X, f_shape=F, output_padding=[1])),
    (("outputPadding",), dict(x_shape=X, f_shape=F, output_padding=[1, 0])),
    (("outputPadding",), dict(x_shape=X, f_shape=F, strides=[2, 2], output_padding=[1, 2])),
    (("outputSizes",), dict(x_shape=X, f_shape=F, output_sizes=[5])),
    (("groups",), dict(x_shape=X, f_shape=F, groups=0)),
    (("filter",), dict(x_shape=X, f_shape=(3, 2, 3, 3))),
    (("filter",), dict(x_shape=(1, 3, 3, 4), f_shape=(3, 3, 2, 3), input_layout="nhwc",
                       filter_layout="hwoi")),
    (("groups",), dict(x_shape=(1, 1, 3, 3), f_shape=(1, 2**20, 1, 1), groups=2**12)),
    (("bias",), dict(x_shape=X, f_shape=F, b_shape=(4,))),
    (("bias",), dict(x_shape=X, f_shape=F, groups=2, b_shape=(2,))),
    (("bias",), dict(x_shape=X, f_shape=F, b_shape=(2,), bdt="float16")),
    (("outputSizes",), dict(x_shape=X, f_shape=F, strides=[2, 2], output_sizes=[6, 7])),
    (("outputSizes",), dict(x_shape=X, f_shape=F, strides=[2, 2], output_sizes=[9, 7])),
    (("outputSizes",), dict(x_shape=X, f_shape=F, strides=[2, 2], output_sizes=[7, 9])),
    (("outputSizes",), dict(x_shape=(1, 4, 1, 1), f_shape=(4, 2, 1, 1),
                            padding=[1, 1, 0, 0], strides=[3, 1], output_sizes=[0, 1])),
    (("padding",), dict(x_shape=X, f_shape=F, padding=[3, 2, 0, 0])),
    (("padding",), dict(x_shape=(1, 4, 2**15, 1), f_shape=(4, 2, 1, 1),
                        strides=[2**17, 1])),
    (("groups",), dict(x_shape=(1, 6, 3, 3), f_shape=(6, 1, 3, 3), groups=0)),
], ids=lambda c: "-".join(f"{k}={v}" for k, v in c[1].items()))
def test_validation(ctx, case):
    words, kw = case
    kw = dict(kw, label="ct-lbl")
    with pytest.raises(TypeError) as info:
        _build(ctx, **kw)
    msg = str(info.value)
    for wd in ["convTranspose2d", "ct-lbl"] + list(words):
        assert wd.lower() in msg.lower(), f"{msg!r} does not mention {wd!r}"


def test_valid_edges(ctx):
    # outputSizes at both ends of [calculated, calculated + stride)
    for size in (7, 8):
        y = _build(ctx, X, F, strides=[2, 2], output_sizes=[size, 7])
        assert y.shape == (1, 2, size, 7)
    # outputPadding just below the stride; ignored when outputSizes is given
    y = _build(ctx, X, F, strides=[3, 2], output_padding=[2, 1])
    assert y.shape == (1, 2, 11, 8)
    y = _build(ctx, X, F, strides=[2, 2], output_padding=[5, 5], output_sizes=[8, 8])
    assert y.shape == (1, 2, 8, 8)
    # a negative calculated size that outputSizes still makes valid
    y = _build(ctx, (1, 4, 1, 1), (4, 2, 1, 1), padding=[1, 1, 0, 0], strides=[3, 1],
               output_sizes=[1, 1])
    assert y.shape == (1, 2, 1, 1)


def test_negative_calculated_size_computes(ctx):
    """Every output element of a fully cropped transposed convolution is
    the bias alone."""
    x = np.ones((1, 1, 1, 1), np.float32)
    f = np.ones((1, 1, 1, 1), np.float32)
    b = np.array([2.5], np.float32)
    got = run_convt(ctx, x, f, b, padding=[1, 1, 0, 0], strides=[3, 1], output_sizes=[1, 1])
    assert got.reshape(-1).tolist() == [2.5]


def test_groups_need_not_divide_the_input_channels_when_building_the_operand():
    """The spec's convTranspose2d steps check groups != 0 and that
    filterOutputChannels * groups is a valid dimension, never that groups
    divides the input channels (conv2d's steps do): the operand builds, with
    outputChannels = filterOutputChannels * groups (WPT validation
    "[convTranspose2d] Test with padding=1, groups=3.").  The spec defines no
    result for such a graph, so build() refuses it, naming the node."""
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 1, 5, 5]})
    w = b.input("w", {"dataType": "float32", "shape": [1, 1, 3, 3]})
    y = b.conv_transpose2d(x, w, padding=[1, 1, 1, 1], groups=3, label="up")
    assert y.shape == (1, 3, 5, 5) and y.data_type == "float32"
    with pytest.raises(webnn.NotSupportedError,
                       match=r"convTranspose2d \(label 'up'\).*groups.*input channels 1 / "
                             r"groups 3 is not an integer"):
        b.build({"y": y})
    # a group count that divides the input channels builds and computes
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 2, 2]})
    w = b.constant(np.ones((3, 1, 1, 1), np.float32))
    g = b.build({"y": b.conv_transpose2d(x, w, groups=3)})
    xs = np.arange(12, dtype=np.float32).reshape(1, 3, 2, 2)
    np.testing.assert_array_equal(ctx.compute(g, {"x": xs})["y"], xs)
    ctx.destroy()
