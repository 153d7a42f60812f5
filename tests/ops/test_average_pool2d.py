"""averagePool2d, and the pooling reference shared with test_l2_pool2d.py and
test_max_pool2d.py.

Reference (float64, written from the spec's definitions, independent of the
kernel): the window of output (oh, ow) covers input rows
oh * strideH - padTop + kh * dilationH and the matching columns; only taps
inside the input count (padding is never averaged in: WPT's expected values,
webmachinelearning/webnn#876).  A window with no valid tap gives 0 (average,
L2) or the lowest value (max).  Output sizes: the spec's
floor/ceil((in - ((k - 1) * d + 1) + padBegin + padEnd) / stride + 1), with
exact rational arithmetic.

Tolerance (average): the kernel sums in float32, so |err| <= (taps + 2) *
2^-23 * mean(|x|) plus one ulp of the output type.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import webnn

from .conftest import check_float, check_shape_dtype, op_dtypes, random_floats, rng_for

OP = "averagePool2d"
EPS32 = 2.0**-23

# (name, input [N, C, H, W] in nchw terms, options) -- every option, default
# and non-default, in at least one case
CASES = [
    ("global-default", (2, 3, 5, 4), {}),
    ("window3", (1, 2, 6, 7), {"windowDimensions": [3, 3]}),
    ("window-rect-strides", (2, 2, 7, 8), {"windowDimensions": [2, 3], "strides": [2, 1]}),
    ("asym-padding", (1, 3, 5, 6), {"windowDimensions": [3, 2], "padding": [1, 0, 2, 1]}),
    ("dilation-stride-padding", (2, 2, 9, 8),
     {"windowDimensions": [3, 3], "strides": [2, 2], "dilations": [2, 1], "padding": [1, 1, 0, 2]}),
    ("dilation-with-stride", (1, 2, 9, 10),
     {"windowDimensions": [2, 2], "dilations": [3, 2], "strides": [2, 3]}),
    ("ceil", (1, 2, 6, 7), {"windowDimensions": [3, 3], "strides": [2, 2],
                            "outputShapeRounding": "ceil"}),
    ("floor-explicit", (1, 2, 6, 7), {"windowDimensions": [3, 3], "strides": [2, 2],
                                      "outputShapeRounding": "floor"}),
    ("ceil-padding", (2, 1, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1],
                                    "strides": [2, 2], "outputShapeRounding": "ceil"}),
    ("outputSizes-floor", (1, 2, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1],
                                         "strides": [2, 2], "outputSizes": [3, 3],
                                         "outputShapeRounding": "ceil"}),
    ("outputSizes-ceil", (1, 2, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1],
                                        "strides": [2, 2], "outputSizes": [4, 4]}),
    # 5x5, window 3, stride 3, padding 1, ceil: the last row and column of
    # windows lie wholly in the padding
    ("empty-windows", (1, 2, 5, 5), {"windowDimensions": [3, 3], "strides": [3, 3],
                                     "padding": [1, 1, 1, 1], "outputShapeRounding": "ceil"}),
    ("subsample-1x1", (1, 2, 7, 8), {"windowDimensions": [1, 1], "strides": [3, 2]}),
    ("window-over-input-ceil", (1, 1, 5, 5), {"windowDimensions": [6, 6], "strides": [2, 2],
                                              "outputShapeRounding": "ceil"}),
    ("big-padding", (1, 1, 3, 3), {"windowDimensions": [2, 2], "padding": [3, 2, 0, 4]}),
]


def _out_size(n, k, pb, pe, s, d, rounding):
    calc = Fraction(n - ((k - 1) * d + 1) + pb + pe, s) + 1
    return math.ceil(calc) if rounding == "ceil" else math.floor(calc)


def pool_shape(shape_nchw, options):
    """Output shape [N, C, OH, OW] of the reference."""
    n, c, h, w = shape_nchw
    kh, kw = options.get("windowDimensions", [h, w])
    pad = options.get("padding", [0, 0, 0, 0])
    sh, sw = options.get("strides", [1, 1])
    dh, dw = options.get("dilations", [1, 1])
    if "outputSizes" in options:
        oh, ow = options["outputSizes"]
    else:
        r = options.get("outputShapeRounding", "floor")
        oh = _out_size(h, kh, pad[0], pad[1], sh, dh, r)
        ow = _out_size(w, kw, pad[2], pad[3], sw, dw, r)
    return n, c, oh, ow


def pool_ref(x, kind, options):
    """Reference pooling of an nchw array. kind: avg / l2 / max.  Returns
    (result, taps): float64 results (or x's dtype for integer max) and the
    number of valid taps of each output element."""
    n, c, h, w = x.shape
    kh, kw = options.get("windowDimensions", [h, w])
    pad = options.get("padding", [0, 0, 0, 0])
    sh, sw = options.get("strides", [1, 1])
    dh, dw = options.get("dilations", [1, 1])
    _, _, oh, ow = pool_shape(x.shape, options)
    integer = x.dtype.kind in "iu"
    xs = x if integer else x.astype(np.float64)
    out = np.zeros((n, c, oh, ow), dtype=x.dtype if integer else np.float64)
    taps = np.zeros((oh, ow), dtype=np.int64)
    for i in range(oh):
        rows = [i * sh - pad[0] + k * dh for k in range(kh)]
        rows = [r for r in rows if 0 <= r < h]
        for j in range(ow):
            cols = [j * sw - pad[2] + k * dw for k in range(kw)]
            cols = [q for q in cols if 0 <= q < w]
            taps[i, j] = len(rows) * len(cols)
            if not rows or not cols:
                if kind == "max":
                    out[:, :, i, j] = np.iinfo(x.dtype).min if integer else -np.inf
                else:
                    out[:, :, i, j] = 0
                continue
            win = xs[:, :, rows][:, :, :, cols].reshape(n, c, -1)
            with np.errstate(invalid="ignore", over="ignore"):
                red(out, win, kind, i, j)
    return out, taps


def red(out, win, kind, i, j):
    if kind == "avg":
        out[:, :, i, j] = win.mean(axis=2)
    elif kind == "l2":
        out[:, :, i, j] = np.sqrt((win * win).sum(axis=2))
    else:
        # NaN propagates (np.max does)
        out[:, :, i, j] = win.max(axis=2)


def to_layout(a, layout):
    return a.transpose(0, 2, 3, 1) if layout == "nhwc" else a


def run_pool(run, method, x_nchw, options, layout, label=None):
    """Run `method` on x given in nchw, in `layout`; returns the result in
    nchw."""
    opts = dict(options)
    if layout != "nchw" or "layout" in opts:
        opts["layout"] = layout
    if label:
        opts["label"] = label
    xl = np.ascontiguousarray(to_layout(x_nchw, layout))
    got = run(lambda b, x: getattr(b, method)(x, opts), {"x": xl})
    return got.transpose(0, 3, 1, 2) if layout == "nhwc" else got


def expected_shape(shape_nchw, options, layout):
    n, c, oh, ow = pool_shape(shape_nchw, options)
    return (n, oh, ow, c) if layout == "nhwc" else (n, c, oh, ow)


def avg_tolerance(x, options, dt):
    """Per-element bound of float32 summation: (taps + 2) * eps * mean|x|."""
    mean_abs, taps = pool_ref(np.abs(x.astype(np.float64)), "avg", options)
    return (taps + 2) * EPS32 * mean_abs


DTYPES = op_dtypes(OP)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,shape,options", CASES, ids=[c[0] for c in CASES])
def test_options(run, name, shape, options, dt, layout):
    rng = rng_for(OP, name, dt, layout)
    x = random_floats(rng, shape, dt)
    ref, _ = pool_ref(x, "avg", options)
    got = run_pool(run, "average_pool2d", x, options, layout)
    check_shape_dtype(got.transpose(0, 2, 3, 1) if layout == "nhwc" else got, dt,
                      expected_shape(shape, options, layout))
    check_float(got, ref, dt, ulps=1, atol=avg_tolerance(x, options, dt))


def test_hand_checked(run):
    # 4x4 of 1..16, window 3, padding 1, strides 2: the corner window holds
    # 1 2 / 5 6 (4 valid taps), the next 2 3 4 / 6 7 8 (6 valid taps)
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    got = run_pool(run, "average_pool2d", x,
                   {"windowDimensions": [3, 3], "padding": [1, 1, 1, 1], "strides": [2, 2]},
                   "nchw")
    np.testing.assert_array_equal(got, np.array([[[[3.5, 5.0], [9.5, 11.0]]]], np.float32))
    # global average of 1..16
    got = run_pool(run, "average_pool2d", x, {}, "nhwc")
    np.testing.assert_array_equal(got.reshape(-1), [8.5])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt, layout):
    # inf and NaN flow through the sums: inf + -inf is NaN, NaN stays NaN
    rng = rng_for(OP, "special", dt, layout)
    # 19 channels: in nhwc, float32 runs 8 at a time in registers, then 3
    x = random_floats(rng, (1, 19, 6, 6), dt, -2, 2)
    for c in (0, 9, 17):
        x[0, c, 0, 0] = np.inf
        x[0, c, 5, 5] = -np.inf
        x[0, c + 1, 2, 2] = np.nan
        x[0, c + 1, 0, 5] = np.inf
        x[0, c + 1, 1, 5] = -np.inf
    x[0, 5, 3, 3] = -0.0
    opts = {"windowDimensions": [2, 3], "strides": [1, 2], "padding": [1, 0, 0, 1]}
    ref, _ = pool_ref(x, "avg", opts)
    with np.errstate(invalid="ignore"):
        tol = np.nan_to_num(avg_tolerance(x, opts, dt), nan=0.0, posinf=0.0)
    got = run_pool(run, "average_pool2d", x, opts, layout)
    check_float(got, ref, dt, ulps=1, atol=tol)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape,options", [
    ((2, 24, 33, 35), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((2, 600, 7, 7), {}),  # global, more channels than one nhwc block
    # above the kernel's threading threshold (128 Ki units of work)
    ((8, 32, 64, 64), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((24, 1280, 7, 7), {}),
    ((1, 4, 40, 41), {"windowDimensions": [5, 4], "strides": [3, 2], "dilations": [2, 3],
                      "padding": [2, 0, 1, 3], "outputShapeRounding": "ceil"}),
])
def test_large(run, shape, options, layout):
    # big enough to run threaded
    rng = rng_for(OP, "large", shape, layout)
    x = random_floats(rng, shape, "float32")
    ref, _ = pool_ref(x, "avg", options)
    got = run_pool(run, "average_pool2d", x, options, layout)
    check_float(got, ref, "float32", ulps=1, atol=avg_tolerance(x, options, "float32"))


def test_graph_reuse_and_dispatch(ctx):
    # the same graph twice, through tensors (dispatch / read_tensor)
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
    y = b.average_pool2d(x, {"windowDimensions": [2, 2], "strides": [2, 2]})
    g = b.build({"y": y})
    tx = ctx.create_tensor({"dataType": "float32", "shape": [1, 3, 8, 8], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [1, 3, 4, 4], "readable": True})
    for seed in (1, 2):
        xv = random_floats(np.random.default_rng(seed), (1, 3, 8, 8), "float32")
        ctx.write_tensor(tx, xv)
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        ref, _ = pool_ref(xv, "avg", {"windowDimensions": [2, 2], "strides": [2, 2]})
        check_float(ctx.read_tensor(ty), ref, "float32", ulps=1,
                    atol=6 * EPS32 * np.abs(ref) + 1e-6)


# ---- validation (shared by the three pooling operators) -------------------
POOL_METHODS = ["average_pool2d", "l2_pool2d", "max_pool2d"]
CAMEL = {"average_pool2d": "averagePool2d", "l2_pool2d": "l2Pool2d", "max_pool2d": "maxPool2d"}

# (input shape, options, argument named in the message)
INVALID = [
    ((1, 2, 5, 5), {"windowDimensions": [2]}, "windowDimensions"),
    ((1, 2, 5, 5), {"windowDimensions": [1, 1, 1, 1]}, "windowDimensions"),
    ((1, 2, 5, 5), {"windowDimensions": [0, 2]}, "windowDimensions"),
    ((1, 2, 5, 5), {"windowDimensions": 2}, "windowDimensions"),
    ((1, 2, 5, 5), {"windowDimensions": [8, 2]}, "windowDimensions"),  # too big
    ((1, 2, 5, 5), {"windowDimensions": [2, 8]}, "windowDimensions"),
    ((1, 2, 5, 5), {"windowDimensions": [6, 3]}, "windowDimensions"),  # output 0
    ((1, 2, 5, 5), {"windowDimensions": [3, 3], "dilations": [3, 1]}, "windowDimensions"),
    ((1, 2, 5, 5), {"padding": [2, 2]}, "padding"),
    ((1, 2, 5, 5), {"padding": [0, 0, 0, 0, 0]}, "padding"),
    ((1, 2, 5, 5), {"strides": [2]}, "strides"),
    ((1, 2, 5, 5), {"strides": [0, 2]}, "strides"),
    ((1, 2, 5, 5), {"strides": [1, 0]}, "strides"),
    ((1, 2, 5, 5), {"dilations": [1, 1, 2]}, "dilations"),
    ((1, 2, 5, 5), {"dilations": [1, 0]}, "dilations"),
    ((1, 2, 5, 5), {"windowDimensions": [2, 2], "padding": [2, 2, 2, 2], "strides": [2, 2],
                    "outputSizes": [3, 3]}, "outputSizes"),
    ((1, 2, 5, 5), {"windowDimensions": [2, 2], "padding": [2, 2, 2, 2], "strides": [2, 2],
                    "outputSizes": [1, 2, 4, 4]}, "outputSizes"),
    # floor height with ceil width: neither pair
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputSizes": [3, 4]}, "outputSizes"),
    ((1, 2, 5, 5), {"padding": 1}, "padding"),
    ((1, 2, 5, 5), {"windowDimensions": [6, 6], "outputSizes": [0, 0]}, "outputSizes"),
    ((1, 3, 5, 5), {"padding": [2**32 - 1] * 4}, "windowDimensions"),  # output too large
    ((1, 3, 5, 5), {"windowDimensions": [2, 2], "strides": [2**32 - 1, 1],
                    "dilations": [2**32 - 1, 1]}, "windowDimensions"),
]


@pytest.mark.parametrize("method", POOL_METHODS)
@pytest.mark.parametrize("shape,options,arg", INVALID)
def test_invalid_options(ctx, method, shape, options, arg):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": list(shape)})
    with pytest.raises(TypeError) as info:
        getattr(b, method)(x, dict(options, label="pool-label"))
    msg = str(info.value)
    assert CAMEL[method] in msg and "pool-label" in msg and arg in msg, msg


@pytest.mark.parametrize("method", POOL_METHODS)
@pytest.mark.parametrize("options", [{"layout": "NCHW"}, {"layout": "hwc"},
                                     {"outputShapeRounding": "round"},
                                     {"windowDimensions": [-1, 2]},
                                     {"padding": [0, 0, 0, 2**32]},
                                     {"strides": "22"}])
def test_invalid_option_values(ctx, method, options):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 2, 5, 5]})
    with pytest.raises(TypeError) as info:
        getattr(b, method)(x, options)
    assert CAMEL[method] in str(info.value)


@pytest.mark.parametrize("method", POOL_METHODS)
@pytest.mark.parametrize("shape", [(1, 5, 5), (1, 1, 1, 5, 5), (5,)])
def test_invalid_rank(ctx, method, shape):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": list(shape)})
    with pytest.raises(TypeError) as info:
        getattr(b, method)(x, {"label": "rank-label"})
    msg = str(info.value)
    assert CAMEL[method] in msg and "rank-label" in msg and "input" in msg, msg


@pytest.mark.parametrize("method", ["average_pool2d", "l2_pool2d"])
@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64", "int8", "uint8"])
def test_invalid_data_type(ctx, method, dt):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": [1, 1, 2, 2]})
    with pytest.raises(TypeError) as info:
        getattr(b, method)(x)
    assert CAMEL[method] in str(info.value) and "input" in str(info.value)


# Output shapes (the WPT validation cases plus layouts); padding is kept with
# outputSizes, and outputSizes may exceed the strides.
SHAPES = [
    ((1, 3, 4, 4), {}, (1, 3, 1, 1)),
    ((1, 3, 4, 4), {"windowDimensions": [3, 3]}, (1, 3, 2, 2)),
    ((1, 3, 5, 5), {"windowDimensions": [5, 5], "padding": [2, 2, 2, 2]}, (1, 3, 5, 5)),
    ((1, 3, 5, 5), {"windowDimensions": [2, 2], "strides": [2, 2]}, (1, 3, 2, 2)),
    ((1, 3, 5, 5), {"windowDimensions": [3, 3], "padding": [1, 1, 1, 1], "strides": [2, 2]},
     (1, 3, 3, 3)),
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [2, 1, 2, 1], "strides": [2, 2]},
     (1, 3, 4, 4)),
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputShapeRounding": "floor"}, (1, 3, 3, 3)),
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputShapeRounding": "ceil"}, (1, 3, 4, 4)),
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputShapeRounding": "ceil", "outputSizes": [3, 3]}, (1, 3, 3, 3)),
    ((1, 3, 7, 7), {"windowDimensions": [4, 4], "padding": [1, 1, 1, 1], "strides": [2, 2],
                    "outputSizes": [4, 4]}, (1, 3, 4, 4)),
    ((1, 2, 5, 5), {"windowDimensions": [3, 3], "layout": "nchw"}, (1, 2, 3, 3)),
    ((1, 5, 5, 2), {"windowDimensions": [3, 3], "layout": "nhwc"}, (1, 3, 3, 2)),
    ((1, 5, 6, 2), {"layout": "nhwc"}, (1, 1, 1, 2)),
    ((2, 7, 7, 5), {"layout": "nhwc", "windowDimensions": [6, 6], "strides": [2, 2],
                    "outputShapeRounding": "ceil"}, (2, 2, 2, 5)),
]


@pytest.mark.parametrize("method", POOL_METHODS)
@pytest.mark.parametrize("shape,options,out", SHAPES)
def test_output_shapes(ctx, method, shape, options, out):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": list(shape)})
    y = getattr(b, method)(x, options)
    assert y.shape == out and y.data_type == "float32"


@pytest.mark.parametrize("method", POOL_METHODS)
def test_snake_case_options(ctx, method):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 7, 7, 2]})
    y = getattr(b, method)(x, window_dimensions=[4, 4], padding=[1, 1, 1, 1], strides=[2, 2],
                           output_shape_rounding="ceil", layout="nhwc")
    assert y.shape == (1, 4, 4, 2)
    y = getattr(b, method)(x, windowDimensions=[4, 4], padding=[1, 1, 1, 1], strides=[2, 2],
                           output_sizes=[3, 3], layout="nhwc")
    assert y.shape == (1, 3, 3, 2)
