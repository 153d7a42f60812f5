"""The nhwc depthwise kernel's sliding windows (cpu/kernels/conv/depthwise_k.h,
slide5 / slide7): strides 1 and dilation 1 across, 5 or 7 taps a row, at
most 7 tap rows -- ConvNeXt's 7x7 and EfficientNet's 5x5 layers -- run in
blocks of 8 columns, borders included, each tap row's window of input
columns loaded once for all its multiply-adds.

Compared with NumPy float64 (zero-padded input) over the shapes the path
takes and its edges: channel counts that are not a multiple of the vector
(the last channels one column at a time), images narrower than a block,
asymmetric and large padding, dilation down the rows, filters that are not
square, a fused bias + relu or residual, batches, and the shapes next to the
path that must keep their old kernels (7 tap rows and more, strides,
dilation across)."""
import zlib

import numpy as np
import pytest

import webnn

from .test_conv2d import check, make_case, run_conv

# name: (n, c, h, w, kh, kw, padding, dilations)
CASES = {
    "convnext_7x7": (1, 96, 14, 14, 7, 7, (3, 3, 3, 3), (1, 1)),
    "7x7_on_7x7": (1, 48, 7, 7, 7, 7, (3, 3, 3, 3), (1, 1)),
    "5x5_tail_channels": (1, 40, 9, 11, 5, 5, (2, 2, 2, 2), (1, 1)),
    "5x5_narrow": (2, 24, 5, 3, 5, 5, (2, 2, 2, 2), (1, 1)),
    "7x7_no_padding": (1, 32, 12, 17, 7, 7, (0, 0, 0, 0), (1, 1)),
    "7x7_asymmetric": (1, 16, 10, 9, 7, 7, (1, 4, 0, 5), (1, 1)),
    "5x5_large_padding": (1, 16, 4, 4, 5, 5, (6, 6, 7, 7), (1, 1)),
    "3x7_rows_dilated": (1, 32, 13, 12, 3, 7, (2, 2, 3, 3), (2, 1)),
    "7x5": (1, 20, 11, 10, 7, 5, (3, 3, 2, 2), (1, 1)),
    "one_column": (1, 16, 6, 1, 5, 5, (2, 2, 2, 2), (1, 1)),
    # next to the path: their own kernels
    "9x7_rows": (1, 16, 12, 12, 9, 7, (4, 4, 3, 3), (1, 1)),
    "7x7_dilated_across": (1, 16, 14, 14, 7, 7, (3, 3, 6, 6), (1, 2)),
    "7x7_8_channels": (1, 8, 9, 9, 7, 7, (3, 3, 3, 3), (1, 1)),
}


def seed(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


@pytest.mark.parametrize("layout", ["hwio", "ohwi", "oihw", "ihwo"])
@pytest.mark.parametrize("name", list(CASES))
def test_against_numpy(ctx, name, layout):
    n, c, h, w, kh, kw, pad, dil = CASES[name]
    x, f, b = make_case(seed("dw slide", name, layout), "float32", n, c, h, w, c, kh, kw, c,
                        True)
    got = run_conv(ctx, x, f, b, "nhwc", layout, constant_filter=layout == "hwio",
                   padding=list(pad), dilations=list(dil), groups=c)
    check(got, x, f, b, "float32", c, pad, (1, 1), dil)


@pytest.mark.parametrize("strides", [(2, 2), (1, 2), (2, 1)])
def test_strides_keep_their_kernel(ctx, strides):
    x, f, b = make_case(seed("dw slide strides", strides), "float32", 1, 32, 15, 14, 32, 7,
                        7, 32, True)
    got = run_conv(ctx, x, f, b, "nhwc", "hwio", padding=[3, 3, 3, 3],
                   strides=list(strides), groups=32)
    check(got, x, f, b, "float32", 32, (3, 3, 3, 3), strides)


def test_fused_epilogues():
    """bias + residual add + relu after a 7x7 depthwise conv (ConvNeXt has
    none; a ConvNeXt-like block with one): the unfused operators' values"""
    ctx = webnn.ml.create_context(device_type="cpu")
    rng = seed("dw slide epilogue")
    x = rng.uniform(-1, 1, (2, 9, 10, 48)).astype(np.float32)
    f = rng.uniform(-1, 1, (7, 7, 1, 48)).astype(np.float32)
    bias = rng.uniform(-1, 1, 48).astype(np.float32)
    res = rng.uniform(-2, 2, (2, 9, 10, 48)).astype(np.float32)
    bd = webnn.MLGraphBuilder(ctx)
    xi = bd.input("x", {"dataType": "float32", "shape": list(x.shape)})
    ri = bd.input("r", {"dataType": "float32", "shape": list(res.shape)})
    y = bd.conv2d(xi, bd.constant(f), {"inputLayout": "nhwc", "filterLayout": "hwio",
                                        "padding": [3, 3, 3, 3], "groups": 48,
                                        "bias": bd.constant(bias)})
    got = ctx.compute(bd.build({"y": bd.relu(bd.add(y, ri))}), {"x": x, "r": res})["y"]
    from .test_conv2d import ref_conv2d
    conv, _ = ref_conv2d(x.transpose(0, 3, 1, 2), f.transpose(3, 2, 0, 1), bias,
                         (3, 3, 3, 3), groups=48)
    want = np.maximum(conv.transpose(0, 2, 3, 1) + res, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_special_values(ctx):
    """a NaN or an infinity in x reaches exactly the outputs whose windows
    hold it; the padding adds zeros, never NaN"""
    x, f, b = make_case(seed("dw slide specials"), "float32", 1, 32, 9, 12, 32, 7, 7, 32,
                        True)
    f = np.abs(f)
    x[0, 3, 0, 0] = np.nan
    x[0, 17, 4, 11] = np.inf
    x[0, 30, 8, 5] = -np.inf
    got = run_conv(ctx, x, f, b, "nhwc", "oihw", padding=[3, 3, 3, 3], groups=32)
    check(got, x, f, b, "float32", 32, (3, 3, 3, 3))
    assert np.isnan(got[0, 3, :4, :4]).all() and not np.isnan(got[0, 3, 4:, :]).any()
