"""conv2d: every option (padding, strides, dilations, groups, depthwise,
inputLayout, filterLayout, bias) against a float64 NumPy reference, both data
types, the kernel's paths (general im2col + GEMM, 1x1 without im2col,
depthwise direct, threaded and banded work), and the spec's validation steps.

Reference: a plain convolution in float64 written with explicit padding,
strides and dilations (NCHW / OIHW, other layouts transposed to those).
Tolerance: the dot-product bound (terms + 2) * 2^-23 * sum |x * w| (+ |bias|)
of a float32 accumulation, plus one ulp of the output type (float16 is
computed in float32 and rounded once).
"""
import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, random_floats, rng_for

DTYPES = op_dtypes("conv2d", "input")
EPS_ACC = 2.0**-23
FILTER_LAYOUTS = ["oihw", "hwio", "ohwi", "ihwo"]
INPUT_LAYOUTS = ["nchw", "nhwc"]

# filter layout -> axes of an OIHW array in that layout, and back
TO_LAYOUT = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1),
             "ihwo": (1, 2, 3, 0)}
TO_OIHW = {k: tuple(int(i) for i in np.argsort(v)) for k, v in TO_LAYOUT.items()}


# ---- reference ------------------------------------------------------------------
def ref_conv2d(x, w, b=None, padding=(0, 0, 0, 0), strides=(1, 1), dilations=(1, 1),
               groups=1):
    """x: NCHW, w: OIHW, float64.  Returns (result, sum of |terms|)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    assert c == cg * groups and o % groups == 0
    og = o // groups
    pt, pb, pl, pr = padding
    sh, sw = strides
    dh, dw = dilations
    oh = (h + pt + pb - ((kh - 1) * dh + 1)) // sh + 1
    ow = (wd + pl + pr - ((kw - 1) * dw + 1)) // sw + 1
    assert oh > 0 and ow > 0
    xp = np.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    out = np.zeros((n, o, oh, ow))
    mag = np.zeros((n, o, oh, ow))
    with np.errstate(invalid="ignore", over="ignore"):
        for g in range(groups):
            xs = xp[:, g * cg:(g + 1) * cg]
            ws = w[g * og:(g + 1) * og]
            for i in range(kh):
                for j in range(kw):
                    patch = xs[:, :, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                               j * dw:j * dw + (ow - 1) * sw + 1:sw]
                    out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                             ws[:, :, i, j])
                    mag[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", np.abs(patch),
                                                             np.abs(ws[:, :, i, j]))
        if b is not None:
            b = np.asarray(b, np.float64)
            out += b[None, :, None, None]
            mag += np.abs(b)[None, :, None, None]
    return out, mag


# ---- running ----------------------------------------------------------------------
def make_case(rng, dt, n, c, h, w, o, kh, kw, groups=1, bias=False, lo=-1.0, hi=1.0):
    x = random_floats(rng, (n, c, h, w), dt, lo, hi)
    f = random_floats(rng, (o, c // groups, kh, kw), dt, lo, hi)
    bb = random_floats(rng, (o,), dt, lo, hi) if bias else None
    return x, f, bb


def run_conv(ctx, x, f, b=None, input_layout=None, filter_layout=None, constant_filter=False,
             **options):
    """x NCHW, f OIHW (numpy, dtype of the test); converts to the layouts,
    runs conv2d, returns the output converted back to NCHW."""
    xl = x if input_layout in (None, "nchw") else x.transpose(0, 2, 3, 1)
    fl = f if filter_layout is None else f.transpose(TO_LAYOUT[filter_layout])
    xl, fl = np.ascontiguousarray(xl), np.ascontiguousarray(fl)
    builder = webnn.MLGraphBuilder(ctx)
    dt = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}[x.dtype]
    xi = builder.input("x", {"dataType": dt, "shape": list(xl.shape)})
    feeds = {"x": xl}
    if constant_filter:
        fi = builder.constant({"dataType": dt, "shape": list(fl.shape)}, fl)
    else:
        fi = builder.input("f", {"dataType": dt, "shape": list(fl.shape)})
        feeds["f"] = fl
    opts = dict(options)
    if input_layout is not None:
        opts["inputLayout"] = input_layout
    if filter_layout is not None:
        opts["filterLayout"] = filter_layout
    if b is not None:
        opts["bias"] = builder.input("b", {"dataType": dt, "shape": list(b.shape)})
        feeds["b"] = b
    y = builder.conv2d(xi, fi, opts)
    graph = builder.build({"y": y})
    got = ctx.compute(graph, feeds)["y"]
    assert tuple(y.shape) == got.shape
    if input_layout == "nhwc":
        got = got.transpose(0, 3, 1, 2)
    return got


def check(got, x, f, b, dt, groups=1, padding=(0, 0, 0, 0), strides=(1, 1),
          dilations=(1, 1)):
    ref, mag = ref_conv2d(x, f, b, padding, strides, dilations, groups)
    terms = f.shape[1] * f.shape[2] * f.shape[3] + 2
    check_float(got, ref, dt, ulps=1, atol=terms * EPS_ACC * mag)


def opts_of(padding, strides, dilations, groups):
    o = {}
    if padding is not None:
        o["padding"] = list(padding)
    if strides is not None:
        o["strides"] = list(strides)
    if dilations is not None:
        o["dilations"] = list(dilations)
    if groups is not None:
        o["groups"] = groups
    return o


# (n, c, h, w, o, kh, kw, padding, strides, dilations, groups, bias)
CONFIGS = {
    "defaults": (1, 3, 7, 6, 4, 3, 3, None, None, None, None, False),
    "asymmetric_padding": (2, 2, 5, 6, 3, 3, 2, (1, 2, 0, 3), None, None, None, True),
    "strides": (1, 3, 9, 8, 2, 3, 3, (1, 1, 1, 1), (2, 3), None, None, False),
    "dilations_strides": (1, 2, 11, 10, 3, 3, 2, (2, 0, 1, 1), (2, 2), (2, 3), None, True),
    "groups2": (1, 4, 6, 6, 6, 3, 3, (1, 1, 1, 1), None, None, 2, True),
    "groups3_strided": (2, 6, 7, 5, 3, 2, 2, (0, 1, 1, 0), (2, 1), (1, 2), 3, False),
    "depthwise3x3": (2, 5, 8, 9, 5, 3, 3, (1, 1, 1, 1), None, None, 5, True),
    "depthwise3x3_stride2": (1, 5, 9, 10, 5, 3, 3, (0, 1, 1, 1), (2, 2), None, 5, True),
    "depthwise3x3_dilated": (1, 4, 9, 10, 4, 3, 3, (2, 2, 2, 2), None, (2, 2), 4, False),
    "depthwise5x5_stride3": (1, 3, 11, 12, 3, 5, 5, (2, 1, 2, 0), (3, 2), None, 3, True),
    "depthwise_huge_padding": (1, 3, 4, 5, 3, 3, 3, (100, 90, 80, 120), (50, 45), None, 3,
                               True),
    "depthwise3x3_stride3_dilated": (1, 4, 10, 21, 4, 3, 3, (1, 0, 2, 1), (3, 3), (1, 2), 4,
                                     True),
    "depthwise_multiplier": (1, 3, 6, 7, 6, 3, 3, (1, 1, 1, 1), None, None, 3, True),
    "depthwise_1x1": (1, 4, 5, 5, 4, 1, 1, None, None, None, 4, False),
    "pointwise": (2, 5, 4, 6, 7, 1, 1, None, None, None, None, True),
    "pointwise_groups": (1, 6, 5, 4, 4, 1, 1, None, None, None, 2, True),
    "pointwise_strided": (1, 4, 7, 7, 3, 1, 1, (0, 0, 0, 0), (2, 2), (3, 3), None, False),
    "pointwise_padded": (1, 4, 3, 3, 3, 1, 1, (1, 0, 0, 1), None, None, None, True),
    "filter_as_large_as_padded_input": (1, 2, 3, 4, 2, 5, 4, (1, 1, 0, 0), None, None, None,
                                        True),
    "one_channel": (3, 1, 5, 5, 1, 2, 2, None, None, None, None, True),
}


def use_path(monkeypatch, path):
    """path 'portable': WEBNN_CONV_DIRECT=0, which turns the AVX-512 direct
    kernels (and Winograd) off, so that the im2col / BLIS paths that other
    CPUs take are tested on this one too (once, in float32); 'no_winograd':
    WEBNN_CONV_WINOGRAD=0, the direct kernel for 3x3 filters too."""
    if path == "portable":
        monkeypatch.setenv("WEBNN_CONV_DIRECT", "0")
    if path == "no_winograd":
        monkeypatch.setenv("WEBNN_CONV_WINOGRAD", "0")


DT_PATHS = [(dt, "default") for dt in DTYPES] + [("float32", "portable")]


@pytest.mark.parametrize("dt,path", DT_PATHS)
@pytest.mark.parametrize("filter_layout", FILTER_LAYOUTS)
@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("name", list(CONFIGS))
def test_options(ctx, monkeypatch, name, input_layout, filter_layout, dt, path):
    use_path(monkeypatch, path)
    n, c, h, w, o, kh, kw, pad, st, dil, groups, bias = CONFIGS[name]
    rng = rng_for("conv2d", name, input_layout, filter_layout, dt)
    x, f, b = make_case(rng, dt, n, c, h, w, o, kh, kw, groups or 1, bias)
    got = run_conv(ctx, x, f, b, input_layout, filter_layout,
                   **opts_of(pad, st, dil, groups))
    check(got, x, f, b, dt, groups or 1, pad or (0, 0, 0, 0), st or (1, 1), dil or (1, 1))


@pytest.mark.parametrize("dt", DTYPES)
def test_default_layouts_omitted(ctx, dt):
    """No inputLayout / filterLayout given: nchw and oihw."""
    rng = rng_for("conv2d default layouts", dt)
    x, f, b = make_case(rng, dt, 1, 2, 5, 5, 3, 3, 3, bias=True)
    got = run_conv(ctx, x, f, b)
    check(got, x, f, b, dt)


@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
def test_constant_filter(ctx, input_layout):
    rng = rng_for("conv2d constant", input_layout)
    x, f, b = make_case(rng, "float32", 1, 4, 6, 6, 4, 3, 3, 4, True)
    got = run_conv(ctx, x, f, b, input_layout, "ihwo", constant_filter=True, groups=4,
                   padding=[1, 1, 1, 1])
    check(got, x, f, b, "float32", 4, (1, 1, 1, 1))


# Larger shapes: several threads, bands of output rows (im2col and 1x1 GEMM
# paths), the 64-channel blocks of the nhwc depthwise kernel, one image of
# one output pixel (a product cut across the threads).
LARGE = {
    "3x3": (2, 16, 30, 29, 24, 3, 3, (1, 1, 1, 1), None, None, None, True),
    "3x3_stride2": (1, 8, 41, 40, 16, 3, 3, (1, 1, 1, 1), (2, 2), None, None, True),
    "5x5_groups2": (1, 8, 25, 26, 8, 5, 5, (2, 2, 2, 2), None, (1, 2), 2, True),
    "1x1": (2, 32, 20, 21, 48, 1, 1, None, None, None, None, True),
    "depthwise": (2, 70, 20, 19, 70, 3, 3, (1, 1, 1, 1), None, None, 70, True),
    "depthwise_s2": (1, 70, 21, 20, 70, 3, 3, (0, 1, 0, 1), (2, 2), None, 70, True),
    "one_output_pixel": (1, 64, 3, 3, 1024, 3, 3, None, None, None, None, True),
    "1x1_one_pixel": (1, 512, 1, 1, 2048, 1, 1, None, None, None, None, True),
    "1x1_gemm": (2, 32, 20, 21, 40, 1, 1, None, None, None, None, True),
    "gemm_one_pixel": (1, 7, 7, 7, 4096, 7, 7, None, None, None, None, True),
    # the nhwc 1x1 product's two task orders (direct.c, direct_1x1): chunk
    # by chunk for a small image (each thread its own pixels), groups of
    # chunks for a larger one or weights beyond 1 MiB
    "1x1_14x14_by_chunks": (1, 64, 14, 14, 384, 1, 1, None, None, None, None, True),
    "1x1_chunk_groups": (2, 160, 24, 30, 80, 1, 1, None, None, None, None, True),
    "1x1_big_weights": (1, 600, 7, 7, 500, 1, 1, None, None, None, None, False),
    # exactly 24 output channels: 16 + 8 lanes, 12-pixel blocks and a tail
    "1x1_24_channels": (1, 40, 9, 11, 24, 1, 1, None, None, None, None, True),
    # rows wide enough for the tall blocks of the nhwc direct kernel (24
    # pixels x 16 channels, 12 x 32), with strides and dilations
    "3x3_o16_wide": (1, 8, 6, 60, 16, 3, 3, (1, 1, 1, 1), None, None, None, True),
    "3x3_o32_wide_s2": (1, 3, 9, 70, 32, 3, 3, (1, 1, 1, 1), (2, 2), None, None, True),
    "3x3_o16_wide_dilated": (1, 5, 7, 64, 16, 3, 3, (2, 2, 2, 2), None, (2, 2), None, False),
    # the nhwc 3x3 depthwise kernel's AVX-512 columns (depthwise.c): stride
    # 1 with the taps kept in registers from column to column, border
    # columns on both sides (asymmetric padding, none on the left), strided
    # and dilated rows, rows too narrow for any interior column, 16-channel
    # vectors and a ragged rest
    "depthwise_c48_asymmetric": (1, 48, 9, 11, 48, 3, 3, (0, 2, 2, 1), None, None, 48, True),
    "depthwise_c32_dilated": (1, 32, 10, 12, 32, 3, 3, (2, 1, 2, 0), None, (2, 2), 32, True),
    "depthwise_c33_two_columns": (2, 33, 5, 2, 33, 3, 3, (1, 1, 1, 1), None, None, 33, True),
    "depthwise_c16_one_column": (1, 16, 4, 1, 16, 3, 3, (1, 1, 1, 1), None, None, 16, False),
    "depthwise_c64_s2_odd": (1, 64, 9, 9, 64, 3, 3, (1, 1, 1, 1), (2, 2), None, 64, True),
    # the nhwc depthwise kernel for other filters (depthwise_k.h): blocks
    # of 8 interior columns and single border columns, 16 (AVX-512) or 8
    # (AVX2) channels a vector, four vectors at once in the single columns,
    # the last C % 16 channels scalar; strides, dilations, rows and columns
    # with no tap inside, a row too narrow for any block (EfficientNet's
    # 7 x 7 layers)
    "depthwise5x5_c48": (1, 48, 14, 20, 48, 5, 5, (2, 2, 2, 2), None, None, 48, True),
    "depthwise5x5_s2_c40": (1, 40, 23, 29, 40, 5, 5, (1, 2, 2, 1), (2, 2), None, 40, True),
    "depthwise5x5_dilated_c37": (2, 37, 13, 30, 37, 5, 5, (4, 3, 4, 4), None, (2, 2), 37,
                                 True),
    "depthwise7x3_s3x2_c64": (1, 64, 16, 41, 64, 7, 3, (3, 0, 1, 2), (3, 2), None, 64, False),
    "depthwise5x5_7x7_c96": (1, 96, 7, 7, 96, 5, 5, (2, 2, 2, 2), None, None, 96, True),
    "depthwise5x5_s2_c80_odd": (1, 80, 15, 15, 80, 5, 5, (1, 2, 1, 2), (2, 2), None, 80, True),
    "depthwise3x5_c8_wide": (1, 8, 5, 37, 8, 3, 5, (1, 1, 2, 2), None, None, 8, True),
    "depthwise5x5_no_tap_rows": (1, 16, 3, 12, 16, 5, 5, (6, 6, 1, 1), None, None, 16, True),
    "depthwise2x2_s2_c24": (2, 24, 10, 34, 24, 2, 2, None, (2, 2), None, 24, False),
    # the rows in blocks through a table of pointers (zeros outside), 7 x 7
    # and 14 x 14 rows, ragged channels and a strided, dilated row; a
    # filter of more taps than the table holds (9 x 7: columns one by one)
    "depthwise5x5_14x14_c40_table": (1, 40, 14, 14, 40, 5, 5, (2, 2, 2, 2), None, None, 40,
                                     True),
    "depthwise5x5_s2_dil_c21_table": (1, 21, 17, 37, 21, 5, 5, (3, 1, 4, 2), (2, 2), (1, 2),
                                      21, True),
    "depthwise9x7_c32_untabled": (1, 32, 12, 14, 32, 9, 7, (4, 4, 3, 3), None, None, 32, True),
    # blocks of 4 slots: a row of 8 + 4 columns, and 3 border columns right
    # of 3 interior blocks (stride 2, as EfficientNet's 56 -> 28 layer)
    "depthwise5x5_12_wide_c32": (1, 32, 6, 12, 32, 5, 5, (2, 2, 2, 2), None, None, 32, True),
    "depthwise5x5_s2_edges_c24": (1, 24, 9, 56, 24, 5, 5, (2, 2, 2, 2), (2, 2), None, 24, True),
    # spans of pixels cut into blocks of equal height (direct.c,
    # conv_direct_pick): 49 pixels over 4 + 4 + 2 vectors of channels, 111
    # pixels of 16 channels (the 24-pixel blocks), 29 of 32, 13 of 24
    "1x1_49_pixels_o160": (1, 96, 7, 7, 160, 1, 1, None, None, None, None, True),
    "1x1_111_pixels_o16": (1, 12, 3, 37, 16, 1, 1, None, None, None, None, True),
    "1x1_29_pixels_o32": (1, 20, 1, 29, 32, 1, 1, None, None, None, None, False),
    "1x1_13_pixels_o24": (1, 40, 1, 13, 24, 1, 1, None, None, None, None, True),
}


@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("name", list(LARGE))
@pytest.mark.parametrize("path", ["default", "portable"])
def test_large(ctx, monkeypatch, name, input_layout, path):
    use_path(monkeypatch, path)
    n, c, h, w, o, kh, kw, pad, st, dil, groups, bias = LARGE[name]
    dt = "float32"
    rng = rng_for("conv2d large", name, input_layout)
    x, f, b = make_case(rng, dt, n, c, h, w, o, kh, kw, groups or 1, bias)
    filter_layout = "oihw" if input_layout == "nchw" else "ohwi"
    got = run_conv(ctx, x, f, b, input_layout, filter_layout, constant_filter=True,
                   **opts_of(pad, st, dil, groups))
    check(got, x, f, b, dt, groups or 1, pad or (0, 0, 0, 0), st or (1, 1), dil or (1, 1))


# groups 1: the register-blocked direct kernels where the CPU has AVX-512
# (and, with path "portable", the im2col / BLIS paths) -- nhwc
# (blocks of 6 pixels x 64 channels, partial channel blocks, border columns
# and rows, rows with no tap inside the input), nchw through transposes to
# nhwc and back (tiles of 64 and 16 with ragged edges), nchw 1x1 as a
# product (blocks of 6 channels x 64 pixels, partial last block).
DIRECT = {
    "3x3_pad1": (1, 8, 9, 14, 64, 3, 3, (1, 1, 1, 1), None, None, None, True),
    "3x3_o50": (2, 9, 7, 13, 50, 3, 3, (1, 1, 1, 1), None, None, None, True),
    "3x3_o80_strided": (1, 12, 11, 17, 80, 3, 3, (0, 2, 1, 2), (2, 3), None, None, True),
    "5x3_dilated": (1, 8, 12, 15, 16, 5, 3, (2, 2, 3, 1), None, (2, 3), None, False),
    "1x1": (2, 24, 5, 7, 144, 1, 1, None, None, None, None, True),
    "1x1_80_pixels": (1, 16, 8, 10, 48, 1, 1, None, None, None, None, True),
    "1x1_130_pixels_no_bias": (2, 33, 10, 13, 49, 1, 1, None, None, None, None, False),
    "3x3_big_tiles": (1, 70, 9, 10, 96, 3, 3, (1, 1, 1, 1), None, None, None, True),
    "1x1_strided_padded": (1, 8, 6, 9, 32, 1, 1, (1, 2, 2, 0), (2, 2), None, None, True),
    "no_tap_rows": (1, 8, 2, 3, 48, 3, 3, (4, 4, 3, 3), (1, 1), None, None, True),
    "wide_filter": (1, 10, 3, 20, 17 * 3, 2, 7, (0, 0, 0, 0), (1, 2), None, None, True),
}




# grouped nhwc convolutions (not depthwise) on the direct kernel, group by
# group (direct.c): each group's input channels read in place from the
# pixel, its outputs written in place -- output channels per group below
# 16 (a partial vector), exactly 16 / 24 / 32 (the tall and 16 + 8 lane
# blocks), over 64 (several blocks, a partial last one), input channels per
# group from 2 to 40; 1x1 products (long rows of pixels, chunked), strided,
# padded, dilated and 5x5 filters, border columns.  nchw takes the general
# path (im2col + BLIS per group): both are checked against NumPy.
# (n, c, h, w, o, kh, kw, padding, strides, dilations, groups, bias)
GROUPED = {
    "1x1_g4_og34": (1, 136, 6, 28, 136, 1, 1, None, None, None, 4, True),
    "1x1_g4_cg6_og28": (2, 24, 9, 13, 112, 1, 1, None, None, None, 4, True),
    "1x1_g2_og136": (1, 64, 5, 7, 272, 1, 1, None, None, None, 2, False),
    "1x1_g3_og24": (1, 9, 7, 40, 72, 1, 1, None, None, None, 3, True),
    "1x1_g2_og16": (1, 80, 4, 31, 32, 1, 1, None, None, None, 2, True),
    "1x1_g2_og32_strided": (1, 12, 9, 30, 64, 1, 1, (1, 0, 0, 1), (2, 1), None, 2, True),
    "3x3_g4_og12": (1, 32, 11, 13, 48, 3, 3, (1, 1, 1, 1), (2, 1), None, 4, True),
    "3x3_g2_og20_dilated": (2, 20, 9, 30, 40, 3, 3, (2, 2, 2, 2), None, (2, 2), 2, True),
    "5x5_g8_cg2": (1, 16, 8, 8, 64, 5, 5, (2, 2, 2, 2), None, None, 8, False),
}


@pytest.mark.parametrize("dt,path", DT_PATHS)
@pytest.mark.parametrize("filter_layout", FILTER_LAYOUTS)
@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("name", [f"direct_{k}" for k in DIRECT] +
                         [f"grouped_{k}" for k in GROUPED])
def test_direct(ctx, monkeypatch, name, input_layout, filter_layout, dt, path):
    """DIRECT (groups 1) and GROUPED above, against NumPy"""
    use_path(monkeypatch, path)
    kind, key = name.split("_", 1)
    n, c, h, w, o, kh, kw, pad, st, dil, groups, bias = (DIRECT if kind == "direct"
                                                         else GROUPED)[key]
    rng = rng_for(f"conv2d {kind}", key, input_layout, filter_layout, dt)
    x, f, b = make_case(rng, dt, n, c, h, w, o, kh, kw, groups or 1, bias)
    got = run_conv(ctx, x, f, b, input_layout, filter_layout, **opts_of(pad, st, dil, groups))
    check(got, x, f, b, dt, groups or 1, pad or (0, 0, 0, 0), st or (1, 1), dil or (1, 1))


def test_grouped_constant_filter_twice(ctx):
    """A constant grouped filter is packed once (all groups in one prepared
    block) and reused: two dispatches with different inputs, both right."""
    rng = np.random.default_rng(11)
    x1, f, b = make_case(rng, "float32", 1, 136, 7, 9, 136, 1, 1, 4, True)
    x2 = random_floats(rng, x1.shape, "float32", -1.0, 1.0)
    builder = webnn.MLGraphBuilder(ctx)
    xi = builder.input("x", {"dataType": "float32", "shape": [1, 7, 9, 136]})
    y = builder.conv2d(xi, builder.constant(np.ascontiguousarray(f.transpose(0, 2, 3, 1))),
                       bias=builder.constant(b), groups=4, input_layout="nhwc",
                       filter_layout="ohwi")
    graph = builder.build({"y": y})
    for x in (x1, x2, x1):
        got = ctx.compute(graph, {"x": np.ascontiguousarray(x.transpose(0, 2, 3, 1))})["y"]
        check(got.transpose(0, 3, 1, 2), x, f, b, "float32", 4)


# 3x3, strides 1, dilations 1, groups 1, >= 16 channels in and out, 48
# tiles of 2 x 2 outputs or more: Winograd F(2x2, 3x3) on AVX-512 -- odd
# output sizes (partial tiles), asymmetric and large padding (tiles wholly
# in the padding), channel counts that are not multiples of 16, tasks of 30
# tiles with a ragged last one, few chunks of tiles (the output channels
# cut into ranges too: "channel_ranges", 3 x 20 tiles, 160 channels).
WINOGRAD = {
    "pad1_odd": (3, 16, 7, 9, 16, (1, 1, 1, 1), True),
    "no_padding": (5, 20, 6, 11, 24, None, True),
    "asymmetric": (3, 17, 10, 8, 50, (0, 2, 1, 0), True),
    "many_tiles": (1, 32, 17, 19, 40, (1, 1, 1, 1), False),
    "ragged_chunk": (1, 16, 13, 17, 16, (1, 1, 1, 1), True),
    "tiles_in_padding": (3, 16, 4, 5, 16, (3, 3, 3, 3), True),
    "channel_ranges": (3, 24, 7, 9, 160, (1, 1, 1, 1), True),
    # 7 x 7 at batch 1: 16 tiles, the direct kernel instead
    "few_tiles_direct": (1, 32, 7, 7, 48, (1, 1, 1, 1), True),
}


@pytest.mark.parametrize("dt,path", DT_PATHS + [("float32", "no_winograd")])
@pytest.mark.parametrize("filter_layout", FILTER_LAYOUTS)
@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("name", list(WINOGRAD))
def test_winograd(ctx, monkeypatch, name, input_layout, filter_layout, dt, path):
    use_path(monkeypatch, path)
    n, c, h, w, o, pad, bias = WINOGRAD[name]
    rng = rng_for("conv2d winograd", name, input_layout, filter_layout, dt)
    x, f, b = make_case(rng, dt, n, c, h, w, o, 3, 3, 1, bias)
    got = run_conv(ctx, x, f, b, input_layout, filter_layout, **opts_of(pad, None, None, None))
    check(got, x, f, b, dt, 1, pad or (0, 0, 0, 0))


@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("case", ["nan_inf", "huge", "huge_filter"])
def test_winograd_special_values(ctx, input_layout, case):
    """Infinities, NaN and values near overflow in a convolution that would
    take Winograd: the results are those of the direct sum (an infinity
    stays an infinity where its window has it, no inf - inf = NaN)."""
    rng = rng_for("conv2d winograd specials", input_layout, case)
    x, f, b = make_case(rng, "float32", 4, 16, 6, 7, 16, 3, 3, 1, True)  # 48 tiles
    f = np.abs(f)  # one sign: infinities do not cancel in the direct sum
    if case == "nan_inf":
        x[0, 0, 1, 1] = np.inf
        x[0, 3, 4, 5] = np.nan
        x[0, 5, 2, 3] = -np.inf
    elif case == "huge":
        x[0, 2, 3, 3] = 3e37
    else:
        f[3, 1, 1, 1] = 2e38
    got = run_conv(ctx, x, f, b, input_layout, "oihw", padding=[1, 1, 1, 1])
    check(got, x, f, b, "float32", 1, (1, 1, 1, 1))


@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("case", ["moderate", "huge_filter"])
def test_winograd_constant_filter_dispatches(ctx, input_layout, case):
    """A constant filter over several computes: the transformed filter is
    made once (its values checked then), and each compute still checks its
    input -- one with an infinity, after moderate ones, gives the direct
    sum; a filter near overflow takes the direct kernel every time."""
    rng = rng_for("conv2d winograd constant filter", input_layout, case)
    x, f, b = make_case(rng, "float32", 4, 16, 6, 7, 16, 3, 3, 1, False)  # 48 tiles
    f = np.abs(f)
    if case == "huge_filter":
        f[3, 1, 1, 1] = 2e38
    xl = np.ascontiguousarray(x if input_layout == "nchw" else x.transpose(0, 2, 3, 1))
    builder = webnn.MLGraphBuilder(ctx)
    xi = builder.input("x", {"dataType": "float32", "shape": list(xl.shape)})
    fi = builder.constant({"dataType": "float32", "shape": list(f.shape)}, f)
    graph = builder.build({"y": builder.conv2d(xi, fi, {"inputLayout": input_layout,
                                                        "padding": [1, 1, 1, 1]})})
    for k in range(4):
        xk = x.copy()
        if k == 3:
            xk[1, 2, 3, 3] = np.inf
        feeds = {"x": np.ascontiguousarray(xk if input_layout == "nchw"
                                           else xk.transpose(0, 2, 3, 1))}
        got = ctx.compute(graph, feeds)["y"]
        if input_layout == "nhwc":
            got = got.transpose(0, 3, 1, 2)
        check(got, xk, f, None, "float32", 1, (1, 1, 1, 1))


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(ctx, dt):
    """1x1x3x3 input of 1..9, 2x2 filter of ones, padding 1 right / bottom."""
    x = np.arange(1, 10, dtype=npdt(dt)).reshape(1, 1, 3, 3)
    f = np.ones((1, 1, 2, 2), npdt(dt))
    got = run_conv(ctx, x, f, padding=[0, 1, 0, 1])
    want = np.array([[12, 16, 9], [24, 28, 15], [15, 17, 9]], np.float64)
    np.testing.assert_array_equal(got.reshape(3, 3).astype(np.float64), want)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("input_layout", INPUT_LAYOUTS)
@pytest.mark.parametrize("groups", [1, 3])
def test_special_values(ctx, dt, input_layout, groups):
    """NaN and infinities in the input reach exactly the outputs whose
    windows hold them; padding contributes zeros, never NaN."""
    rng = rng_for("conv2d specials", dt, input_layout, groups)
    x, f, b = make_case(rng, dt, 1, 3, 7, 7, 3, 3, 3, groups, True)
    x[0, 0, 1, 1] = np.nan
    x[0, 1, 5, 2] = np.inf
    x[0, 2, 3, 6] = -np.inf
    for layout in ("oihw", "hwio"):
        got = run_conv(ctx, x, f, b, input_layout, layout, padding=[1, 1, 1, 1],
                       groups=groups)
        check(got, x, f, b, dt, groups, (1, 1, 1, 1))


def test_float16_range(ctx):
    """float16 is accumulated in float32: partial sums beyond the float16
    range (60000 + 60000) do not overflow when the result is finite."""
    x = np.array([60000.0, 60000.0, -60000.0], np.float16).reshape(1, 3, 1, 1)
    f = np.ones((1, 3, 1, 1), np.float16)
    got = run_conv(ctx, x, f)
    assert got.dtype == np.float16 and float(got.reshape(-1)[0]) == 60000.0


def test_output_shape(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 10, 11, 6]})
    f = b.input("f", {"dataType": "float32", "shape": [4, 3, 3, 4]})
    y = b.conv2d(x, f, input_layout="nhwc", filter_layout="hwio", padding=[1, 2, 0, 3],
                 strides=[3, 2], dilations=[2, 1], groups=2)
    # height (10 + 3 - 7) / 3 + 1 = 3, width (11 + 3 - 3) / 2 + 1 = 6 (floor)
    assert y.shape == (2, 3, 6, 4)
    assert y.data_type == "float32"


# ---- validation ---------------------------------------------------------------------
def _build(ctx, x_shape, f_shape, dt="float32", fdt=None, b_shape=None, bdt=None, **opts):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": list(x_shape)})
    f = b.input("f", {"dataType": fdt or dt, "shape": list(f_shape)})
    if b_shape is not None:
        opts["bias"] = b.input("b", {"dataType": bdt or dt, "shape": list(b_shape)})
    return b.conv2d(x, f, opts)


def _fails(ctx, words, *args, **kw):
    kw.setdefault("label", "conv-lbl")
    with pytest.raises(TypeError) as info:
        _build(ctx, *args, **kw)
    msg = str(info.value)
    for wd in ["conv2d", "conv-lbl"] + list(words):
        assert wd.lower() in msg.lower(), f"{msg!r} does not mention {wd!r}"


X, F = (1, 4, 5, 5), (6, 4, 3, 3)


@pytest.mark.parametrize("case", [
    # data types and ranks (the tensor limits)
    (("input",), dict(x_shape=X, f_shape=F, dt="int32")),
    (("input",), dict(x_shape=(4, 5, 5), f_shape=F)),
    (("filter",), dict(x_shape=X, f_shape=(6, 4, 3))),
    (("filter",), dict(x_shape=X, f_shape=F, fdt="float16")),
    (("filter",), dict(x_shape=X, f_shape=F, dt="float16", fdt="float32")),
    # padding / strides / dilations
    (("padding",), dict(x_shape=X, f_shape=F, padding=[1, 1, 1])),
    (("padding",), dict(x_shape=X, f_shape=F, padding=[])),
    (("strides",), dict(x_shape=X, f_shape=F, strides=[1])),
    (("strides",), dict(x_shape=X, f_shape=F, strides=[1, 1, 1])),
    (("strides",), dict(x_shape=X, f_shape=F, strides=[1, 0])),
    (("dilations",), dict(x_shape=X, f_shape=F, dilations=[1, 1, 1])),
    (("dilations",), dict(x_shape=X, f_shape=F, dilations=[0, 1])),
    (("groups",), dict(x_shape=X, f_shape=F, groups=0)),
    # channels
    (("groups",), dict(x_shape=X, f_shape=(6, 1, 3, 3), groups=3)),
    (("filter",), dict(x_shape=X, f_shape=(6, 3, 3, 3))),
    (("filter",), dict(x_shape=X, f_shape=(6, 4, 3, 3), groups=2)),
    (("filter",), dict(x_shape=(1, 5, 5, 4), f_shape=(3, 3, 2, 6), input_layout="nhwc",
                       filter_layout="hwio")),
    (("groups",), dict(x_shape=X, f_shape=(6, 1, 3, 3), groups=4)),
    (("groups",), dict(x_shape=X, f_shape=(3, 2, 3, 3), groups=2)),
    # bias
    (("bias",), dict(x_shape=X, f_shape=F, b_shape=(5,))),
    (("bias",), dict(x_shape=X, f_shape=F, b_shape=(1, 6))),
    (("bias",), dict(x_shape=X, f_shape=F, b_shape=(6,), bdt="float16")),
    # output sizes
    (("filter",), dict(x_shape=X, f_shape=(6, 4, 6, 3))),
    (("filter",), dict(x_shape=X, f_shape=F, dilations=[3, 1])),
    (("filter",), dict(x_shape=X, f_shape=(6, 4, 3, 7), padding=[0, 0, 1, 0])),
    (("padding",), dict(x_shape=(1, 4, 1, 1), f_shape=(6, 4, 1, 1),
                        padding=[2**31, 2**31, 0, 0])),
], ids=lambda c: "-".join(f"{k}={v}" for k, v in c[1].items()))
def test_validation(ctx, case):
    words, kw = case
    _fails(ctx, words, **kw)


def test_validation_enforce_range(ctx):
    for bad in ({"strides": [-1, 1]}, {"padding": [0, 0, 0, 2**32]}, {"groups": -1}):
        with pytest.raises(TypeError):
            _build(ctx, X, F, **bad)


def test_validation_enums(ctx):
    with pytest.raises(TypeError):
        _build(ctx, X, F, input_layout="nwhc")
    with pytest.raises(TypeError):
        _build(ctx, X, F, filter_layout="iohw")


def test_valid_edge(ctx):
    """The largest filter that fits the padded input, and a padding that
    makes a large but valid output."""
    y = _build(ctx, X, (6, 4, 7, 5), padding=[1, 1, 0, 0])
    assert y.shape == (1, 6, 1, 1)
    y = _build(ctx, (1, 4, 1, 1), (6, 4, 1, 1), padding=[2**31 - 2, 0, 0, 0],
               strides=[2**31 - 1, 1])
    assert y.shape == (1, 6, 1, 1)
