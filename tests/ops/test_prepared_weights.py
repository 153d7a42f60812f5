"""Filters prepared once (cpu_prep: the direct kernels' packed filter, the
Winograd transform, reordered depthwise / im2col / 1x1 filters) are kept
only for constant filters: a filter given as a graph input is prepared
again at every dispatch, and a constant filter's prepared copy gives the
same results at every dispatch.  References: NumPy float64."""
import numpy as np
import pytest

import webnn


def conv_ref(x, w, b, pad, groups, nhwc):
    """x nchw/nhwc, w oihw (float64), stride 1."""
    if nhwc:
        x = x.transpose(0, 3, 1, 2)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                y[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", xs[:, :, i:i + oh, j:j + ow], w[g * og:(g + 1) * og, :, i, j])
    y += b[None, :, None, None]
    return y.transpose(0, 2, 3, 1) if nhwc else y


LAYOUTS = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}

CASES = {
    # name: (input layout, filter layout, C, O, k, groups)
    "direct_nhwc_3x3": ("nhwc", "hwio", 8, 24, 3, 1),
    "winograd_nhwc": ("nhwc", "ihwo", 32, 48, 3, 1),
    "direct_nhwc_1x1": ("nhwc", "oihw", 16, 40, 1, 1),
    "nchw_1x1_ihwo": ("nchw", "ihwo", 16, 40, 1, 1),
    "nchw_3x3_hwio": ("nchw", "hwio", 8, 16, 3, 1),
    "depthwise_nchw_hwio": ("nchw", "hwio", 12, 12, 3, 12),
    "depthwise_nhwc_oihw": ("nhwc", "oihw", 12, 12, 3, 12),
    "grouped_ohwi": ("nchw", "ohwi", 8, 6, 3, 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("constant", [True, False])
def test_prepared_filters(case, constant):
    lay, flay, C, O, k, groups = CASES[case]
    rng = np.random.default_rng(len(case))
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    xs = (2, C, 10, 10) if lay == "nchw" else (2, 10, 10, C)
    x = b.input("x", {"dataType": "float32", "shape": list(xs)})
    wshape = tuple(np.empty((O, C // groups, k, k)).transpose(LAYOUTS[flay]).shape)
    bias = rng.standard_normal(O).astype(np.float32)
    ws = [rng.standard_normal((O, C // groups, k, k)).astype(np.float32) for _ in range(3)]
    if constant:
        w = b.constant(np.ascontiguousarray(ws[0].transpose(LAYOUTS[flay])))
    else:
        w = b.input("w", {"dataType": "float32", "shape": list(wshape)})
    y = b.conv2d(x, w, bias=b.constant(bias), padding=[k // 2] * 4, groups=groups,
                 input_layout=lay, filter_layout=flay)
    g = b.build({"y": y})
    for i in range(3):
        xv = rng.standard_normal(xs).astype(np.float32)
        wv = ws[0] if constant else ws[i]
        inputs = {"x": xv}
        if not constant:
            inputs["w"] = np.ascontiguousarray(wv.transpose(LAYOUTS[flay]))
        got = ctx.compute(g, inputs)["y"]
        want = conv_ref(xv.astype(np.float64), wv.astype(np.float64), bias.astype(np.float64),
                        k // 2, groups, lay == "nhwc")
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"dispatch {i}")
