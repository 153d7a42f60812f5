"""Gathered short rows (cpu/kernels/conv/direct.c, conv_direct_gathered): an
nhwc conv2d of groups 1 whose output rows are narrow (7 pixels at AVX-512, up
to 15 at AVX2) copies each output pixel's taps into a column matrix and runs
the 1x1 product over all pixels at once, instead of the direct kernel row by
row (or, at AVX2 for 3x3 filters on such rows, im2col + BLIS).

Every case is compared with NumPy float64 and with the same graph built under
WEBNN_CONV_GATHER=0.  The sums are the row kernel's, in the same (kh, kw, c)
order, plus the padding's zero products, so a padded tap that meets an
infinite weight gives a NaN, as the float64 reference (and im2col + BLIS)
give it: test_padding_meets_an_infinite_weight shows the path is taken."""
import os
import zlib

import numpy as np
import pytest

import webnn

from .conftest import cpu_level
from .test_conv2d import check, make_case, run_conv

# name: (n, c, h, w, o, kh, kw, padding, strides, dilations, bias)
CASES = {
    # ResNet-50's last stage: 3x3 on 7 x 7, its strided 1x1 downsample
    "3x3_7x7": (1, 40, 7, 7, 48, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True),
    "1x1_stride2": (1, 64, 14, 14, 80, 1, 1, (0, 0, 0, 0), (2, 2), (1, 1), True),
    "3x3_stride2_partial_vector": (2, 24, 14, 13, 33, 3, 3, (1, 1, 1, 1), (2, 2), (1, 1),
                                   False),
    "5x5_dilated": (1, 16, 11, 11, 24, 5, 5, (2, 2, 2, 2), (1, 1), (2, 2), True),
    "asymmetric_padding": (1, 20, 6, 7, 17, 3, 2, (1, 2, 0, 3), (1, 1), (1, 1), True),
    "batch3": (3, 8, 7, 7, 16, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True),
    # rows of 14: gathered at AVX2 only
    "3x3_14_wide": (1, 32, 14, 14, 40, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True),
    # more than 512 taps a pixel: the AVX2 product slices them
    "600_channels": (1, 600, 7, 7, 64, 3, 3, (1, 1, 1, 1), (1, 1), (1, 1), True),
    "one_pixel": (1, 16, 3, 3, 16, 3, 3, (0, 0, 0, 0), (1, 1), (1, 1), False),
}
LAYOUTS = ["oihw", "hwio", "ohwi", "ihwo"]


def seed(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def run_both(monkeypatch, ctx, x, f, b, layout, const, **opts):
    got = run_conv(ctx, x, f, b, "nhwc", layout, constant_filter=const, **opts)
    monkeypatch.setenv("WEBNN_CONV_GATHER", "0")
    off = run_conv(ctx, x, f, b, "nhwc", layout, constant_filter=const, **opts)
    monkeypatch.delenv("WEBNN_CONV_GATHER")
    return got, off


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("const", [True, False], ids=["constant", "input"])
@pytest.mark.parametrize("name", list(CASES))
def test_against_numpy_and_rows(ctx, monkeypatch, name, layout, const):
    n, c, h, w, o, kh, kw, pad, strides, dil, bias = CASES[name]
    x, f, b = make_case(seed("gather", name, layout, const), "float32", n, c, h, w, o, kh,
                        kw, 1, bias)
    got, off = run_both(monkeypatch, ctx, x, f, b, layout, const, padding=list(pad),
                        strides=list(strides), dilations=list(dil))
    check(got, x, f, b, "float32", 1, pad, strides, dil)
    check(off, x, f, b, "float32", 1, pad, strides, dil)
    np.testing.assert_allclose(got, off, rtol=1e-5, atol=1e-5 * np.abs(off).max())


def test_fused_epilogues(monkeypatch):
    """bias + residual add + relu, and clamp, fused into the gathered
    product: the unfused operators' results (within the sum's rounding)"""
    ctx = webnn.ml.create_context(device_type="cpu")
    rng = seed("gather epilogues")
    x = rng.uniform(-1, 1, (1, 7, 7, 64)).astype(np.float32)
    f = rng.uniform(-1, 1, (64, 3, 3, 64)).astype(np.float32)
    bias = rng.uniform(-1, 1, 64).astype(np.float32)
    res = rng.uniform(-4, 4, (1, 7, 7, 64)).astype(np.float32)

    def build(kind):
        bd = webnn.MLGraphBuilder(ctx)
        xi = bd.input("x", {"dataType": "float32", "shape": [1, 7, 7, 64]})
        y = bd.conv2d(xi, bd.constant(f), {"inputLayout": "nhwc", "filterLayout": "ohwi",
                                            "padding": [1, 1, 1, 1],
                                            "bias": bd.constant(bias)})
        if kind == "res_relu":
            y = bd.relu(bd.add(y, bd.input("r", {"dataType": "float32",
                                                 "shape": [1, 7, 7, 64]})))
        else:
            y = bd.clamp(y, min_value=-1.0, max_value=2.0)
        feeds = {"x": x, "r": res} if kind == "res_relu" else {"x": x}
        return ctx.compute(bd.build({"y": y}), feeds)["y"]

    from .test_conv2d import ref_conv2d
    conv, _ = ref_conv2d(x.transpose(0, 3, 1, 2), f.transpose(0, 3, 1, 2), bias,
                         (1, 1, 1, 1))
    conv = conv.transpose(0, 2, 3, 1)
    for kind, want in (("res_relu", np.maximum(conv + res, 0)),
                       ("clamp", np.clip(conv, -1, 2))):
        got = build(kind)
        monkeypatch.setenv("WEBNN_CONV_GATHER", "0")
        off = build(kind)
        monkeypatch.delenv("WEBNN_CONV_GATHER")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(got, off, rtol=1e-5, atol=1e-4)


def test_nan_and_infinity_in_the_input(ctx, monkeypatch):
    """a NaN or an infinity in x reaches exactly the outputs whose windows
    hold it; the padding adds zeros, never NaN"""
    x, f, b = make_case(seed("gather specials"), "float32", 1, 16, 7, 7, 16, 3, 3, 1, True)
    f = np.abs(f)
    x[0, 3, 0, 0] = np.nan
    x[0, 5, 6, 3] = np.inf
    x[0, 7, 3, 6] = -np.inf
    got, off = run_both(monkeypatch, ctx, x, f, b, "ohwi", True, padding=[1, 1, 1, 1])
    check(got, x, f, b, "float32", 1, (1, 1, 1, 1))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(off))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(off))


def test_padding_meets_an_infinite_weight(ctx, monkeypatch):
    """The path is taken: an infinite weight at tap (0, 0) meets the padding
    at the top row and left column of outputs.  Gathered, 0 * inf is a NaN
    there, as in the float64 reference (zero-padded input); the row kernel
    skips the padded taps and gives finite values."""
    if cpu_level() == "baseline" or os.environ.get("WEBNN_CONV_DIRECT") == "0":
        pytest.skip("no direct kernels (the baseline level, or WEBNN_CONV_DIRECT=0)")
    x, f, b = make_case(seed("gather inf weight"), "float32", 1, 16, 14, 14, 16, 3, 3, 1,
                        True)
    f[2, 5, 0, 0] = np.inf
    got, off = run_both(monkeypatch, ctx, x, f, b, "ohwi", True, padding=[1, 1, 1, 1],
                        strides=[2, 2])
    check(got, x, f, b, "float32", 1, (1, 1, 1, 1), (2, 2))
    edge = np.zeros((7, 7), bool)
    edge[0, :] = edge[:, 0] = True
    assert np.isnan(got[0, 2][edge]).all() and not np.isnan(got[0, 2][~edge]).any()
    assert not np.isnan(off[0, 2]).any()


def test_input_scale_fused(monkeypatch):
    """an input scale (mul(x, s) fused into the conv: test_fusion_scale.py)
    on a gathered conv: the scaled packed filter serves the gathered taps"""
    ctx = webnn.ml.create_context(device_type="cpu")
    rng = seed("gather in scale")
    # a 1x1 of stride 2 onto 7 x 7 (the fusion wants 4 N H W >= O KH KW)
    x = rng.uniform(-1, 1, (1, 14, 14, 32)).astype(np.float32)
    s = rng.uniform(0.1, 1, 32).astype(np.float32)
    f = rng.uniform(-1, 1, (24, 1, 1, 32)).astype(np.float32)

    def build():
        bd = webnn.MLGraphBuilder(ctx)
        xi = bd.input("x", {"dataType": "float32", "shape": [1, 14, 14, 32]})
        si = bd.input("s", {"dataType": "float32", "shape": [1, 1, 1, 32]})
        y = bd.conv2d(bd.mul(xi, si), bd.constant(f),
                      {"inputLayout": "nhwc", "filterLayout": "ohwi", "strides": [2, 2]})
        return ctx.compute(bd.build({"y": y}), {"x": x, "s": s.reshape(1, 1, 1, 32)})["y"]

    want = np.einsum("nhwc,oc->nhwo", (x.astype(np.float64) * s)[:, ::2, ::2],
                     f[:, 0, 0].astype(np.float64))
    got = build()
    monkeypatch.setenv("WEBNN_CONV_GATHER", "0")
    off = build()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got, off, rtol=1e-5, atol=1e-5)
