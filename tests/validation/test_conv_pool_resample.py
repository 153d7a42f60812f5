"""Validation steps of conv2d, convTranspose2d (#api-mlgraphbuilder-conv2d,
-convtranspose2d), the pooling operations (#api-mlgraphbuilder-pool2d) and
resample2d (#api-mlgraphbuilder-resample2d-method): option lists of the
wrong length, strides / dilations of 0, groups that do not divide, windows
larger than the padded input, unknown layouts, and the shapes of accepted
edge cases.  Operators not in this build are skipped (they come from other
branches); where the spec leaves the argument to name open (an output size
that is not a valid dimension), any of the arguments involved is accepted."""
import pytest

from .conftest import OK, V, params, run_case, x

F16 = "float16"


def conv(b, L, inp=(1, 2, 5, 5), flt=(4, 2, 3, 3), dt="float32", fdt=None, **o):
    return b.conv2d(x(b, inp, dt), x(b, flt, fdt or dt), label=L, **o)


def convt(b, L, inp=(1, 2, 3, 3), flt=(2, 4, 3, 3), dt="float32", **o):
    return b.convTranspose2d(x(b, inp, dt), x(b, flt, dt), label=L, **o)


SIZE = ("output", "input", "filter", "padding", "windowDimensions", "dilations", "strides")

TABLE = [
    # ---- conv2d ------------------------------------------------------------------
    V("conv2d", "padding-length-3", lambda b, L: conv(b, L, padding=[0, 0, 0]), "padding"),
    V("conv2d", "strides-length-1", lambda b, L: conv(b, L, strides=[1]), "strides"),
    V("conv2d", "strides-0", lambda b, L: conv(b, L, strides=[0, 1]), "strides"),
    V("conv2d", "dilations-length-3", lambda b, L: conv(b, L, dilations=[1, 1, 1]), "dilations"),
    V("conv2d", "dilations-0", lambda b, L: conv(b, L, dilations=[1, 0]), "dilations"),
    V("conv2d", "groups-0", lambda b, L: conv(b, L, groups=0), "groups"),
    V("conv2d", "groups-do-not-divide-input-channels", lambda b, L: conv(b, L, flt=(3, 1, 3, 3), groups=3),
      ("groups", "filter", "input")),
    V("conv2d", "filter-input-channels", lambda b, L: conv(b, L, flt=(4, 1, 3, 3)), ("filter", "groups", "input")),
    V("conv2d", "groups-do-not-divide-output-channels",
      lambda b, L: conv(b, L, inp=(1, 4, 5, 5), flt=(3, 2, 3, 3), groups=2), ("groups", "filter")),
    V("conv2d", "input-rank3", lambda b, L: conv(b, L, inp=(2, 5, 5)), "input"),
    V("conv2d", "filter-rank3", lambda b, L: conv(b, L, flt=(4, 2, 3)), "filter"),
    V("conv2d", "filter-dtype", lambda b, L: conv(b, L, fdt=F16), "filter"),
    V("conv2d", "input-int32", lambda b, L: conv(b, L, dt="int32"), "input"),
    V("conv2d", "bias-shape", lambda b, L: conv(b, L, bias=x(b, [2])), "bias"),
    V("conv2d", "bias-dtype", lambda b, L: conv(b, L, bias=x(b, [4], F16)), "bias"),
    V("conv2d", "window-larger-than-input", lambda b, L: conv(b, L, flt=(4, 2, 7, 7)), SIZE),
    V("conv2d", "dilated-window-larger", lambda b, L: conv(b, L, dilations=[3, 3]), SIZE),
    V("conv2d", "unknown-input-layout", lambda b, L: conv(b, L, inputLayout="nchw8"), "inputLayout"),
    V("conv2d", "unknown-filter-layout", lambda b, L: conv(b, L, filterLayout="oi"), "filterLayout"),
    OK("conv2d", "default", lambda b, L: conv(b, L), (1, 4, 3, 3)),
    OK("conv2d", "same-padding", lambda b, L: conv(b, L, padding=[1, 1, 1, 1]), (1, 4, 5, 5)),
    OK("conv2d", "strides", lambda b, L: conv(b, L, strides=[2, 2]), (1, 4, 2, 2)),
    OK("conv2d", "dilations", lambda b, L: conv(b, L, dilations=[2, 2]), (1, 4, 1, 1)),
    OK("conv2d", "window-equals-padded-input", lambda b, L: conv(b, L, flt=(4, 2, 7, 7), padding=[1, 1, 1, 1]), (1, 4, 1, 1)),
    OK("conv2d", "nhwc-hwio", lambda b, L: conv(b, L, inp=(1, 5, 5, 2), flt=(3, 3, 2, 4), inputLayout="nhwc",
                                                filterLayout="hwio"), (1, 3, 3, 4)),
    OK("conv2d", "depthwise", lambda b, L: conv(b, L, flt=(2, 1, 3, 3), groups=2, bias=x(b, [2])), (1, 2, 3, 3)),
    OK("conv2d", "all-ones", lambda b, L: conv(b, L, inp=(1, 1, 1, 1), flt=(1, 1, 1, 1), dt=F16), (1, 1, 1, 1), F16),
    # ---- convTranspose2d ---------------------------------------------------------
    V("convTranspose2d", "padding-length-2", lambda b, L: convt(b, L, padding=[0, 0]), "padding"),
    V("convTranspose2d", "strides-0", lambda b, L: convt(b, L, strides=[0, 1]), "strides"),
    V("convTranspose2d", "dilations-0", lambda b, L: convt(b, L, dilations=[1, 0]), "dilations"),
    V("convTranspose2d", "outputPadding-length-1", lambda b, L: convt(b, L, outputPadding=[0]), "outputPadding"),
    V("convTranspose2d", "outputPadding-not-below-strides", lambda b, L: convt(b, L, strides=[2, 2], outputPadding=[2, 0]),
      "outputPadding"),
    V("convTranspose2d", "outputSizes-length-3", lambda b, L: convt(b, L, outputSizes=[5, 5, 5]), "outputSizes"),
    V("convTranspose2d", "outputSizes-too-small", lambda b, L: convt(b, L, outputSizes=[4, 5]), "outputSizes"),
    V("convTranspose2d", "outputSizes-too-large", lambda b, L: convt(b, L, strides=[2, 2], outputSizes=[7, 9]),
      "outputSizes"),
    V("convTranspose2d", "groups-0", lambda b, L: convt(b, L, groups=0), "groups"),
    V("convTranspose2d", "input-channels", lambda b, L: convt(b, L, flt=(3, 4, 3, 3)), ("filter", "input")),
    V("convTranspose2d", "bias-shape", lambda b, L: convt(b, L, bias=x(b, [2])), "bias"),
    V("convTranspose2d", "input-rank5", lambda b, L: convt(b, L, inp=(1, 1, 2, 3, 3)), "input"),
    V("convTranspose2d", "unknown-filter-layout", lambda b, L: convt(b, L, filterLayout="oihw"), "filterLayout"),
    OK("convTranspose2d", "default", lambda b, L: convt(b, L), (1, 4, 5, 5)),
    OK("convTranspose2d", "strides", lambda b, L: convt(b, L, strides=[2, 2]), (1, 4, 7, 7)),
    OK("convTranspose2d", "outputPadding", lambda b, L: convt(b, L, strides=[2, 2], outputPadding=[1, 0]), (1, 4, 8, 7)),
    OK("convTranspose2d", "outputSizes", lambda b, L: convt(b, L, strides=[2, 2], outputSizes=[7, 8]), (1, 4, 7, 8)),
    OK("convTranspose2d", "all-ones", lambda b, L: convt(b, L, inp=(1, 1, 1, 1), flt=(1, 1, 1, 1)), (1, 1, 1, 1)),
]

for _op in ("averagePool2d", "l2Pool2d", "maxPool2d"):
    def _p(b, L, inp=(1, 2, 4, 4), op=_op, **o):
        return getattr(b, op)(x(b, inp), label=L, **o)
    TABLE += [
        V(_op, "input-rank3", lambda b, L, p=_p: p(b, L, inp=(2, 4, 4)), "input"),
        V(_op, "window-length-1", lambda b, L, p=_p: p(b, L, windowDimensions=[2]), "windowDimensions"),
        V(_op, "window-0", lambda b, L, p=_p: p(b, L, windowDimensions=[0, 2]), "windowDimensions"),
        V(_op, "window-larger-than-input", lambda b, L, p=_p: p(b, L, windowDimensions=[5, 5]), SIZE),
        V(_op, "padding-length-2", lambda b, L, p=_p: p(b, L, padding=[1, 1]), "padding"),
        V(_op, "strides-0", lambda b, L, p=_p: p(b, L, strides=[1, 0]), "strides"),
        V(_op, "strides-length-3", lambda b, L, p=_p: p(b, L, strides=[1, 1, 1]), "strides"),
        V(_op, "dilations-0", lambda b, L, p=_p: p(b, L, dilations=[0, 1]), "dilations"),
        V(_op, "unknown-layout", lambda b, L, p=_p: p(b, L, layout="chwn"), "layout"),
        V(_op, "unknown-rounding", lambda b, L, p=_p: p(b, L, outputShapeRounding="round"), "outputShapeRounding"),
        V(_op, "outputSizes-neither-floor-nor-ceil", lambda b, L, p=_p: p(b, L, windowDimensions=[3, 3], strides=[2, 2],
                                                                        outputSizes=[3, 3]), "outputSizes"),
        OK(_op, "global", lambda b, L, p=_p: p(b, L), (1, 2, 1, 1)),
        OK(_op, "window-2-stride-2", lambda b, L, p=_p: p(b, L, windowDimensions=[2, 2], strides=[2, 2]), (1, 2, 2, 2)),
        OK(_op, "ceil", lambda b, L, p=_p: p(b, L, windowDimensions=[3, 3], strides=[2, 2], outputShapeRounding="ceil"),
           (1, 2, 2, 2)),
        OK(_op, "floor", lambda b, L, p=_p: p(b, L, windowDimensions=[3, 3], strides=[2, 2]), (1, 2, 1, 1)),
        OK(_op, "window-equals-padded-input", lambda b, L, p=_p: p(b, L, windowDimensions=[6, 6], padding=[1, 1, 1, 1]),
           (1, 2, 1, 1)),
        OK(_op, "nhwc", lambda b, L, p=_p: p(b, L, inp=(1, 4, 4, 3), layout="nhwc", windowDimensions=[2, 2]), (1, 3, 3, 3)),
        OK(_op, "1x1", lambda b, L, p=_p: p(b, L, inp=(1, 1, 1, 1)), (1, 1, 1, 1)),
    ]


def rs(b, L, inp=(1, 1, 2, 3), **o):
    return b.resample2d(x(b, inp), label=L, **o)


TABLE += [
    V("resample2d", "input-rank3", lambda b, L: rs(b, L, inp=(1, 2, 3)), "input"),
    V("resample2d", "scales-0", lambda b, L: rs(b, L, scales=[0, 1]), "scales"),
    V("resample2d", "scales-negative", lambda b, L: rs(b, L, scales=[1, -2]), "scales"),
    V("resample2d", "scales-length-1", lambda b, L: rs(b, L, scales=[2]), "scales"),
    V("resample2d", "sizes-0", lambda b, L: rs(b, L, sizes=[0, 3]), "sizes"),
    V("resample2d", "sizes-length-3", lambda b, L: rs(b, L, sizes=[2, 3, 4]), "sizes"),
    V("resample2d", "axes-duplicate", lambda b, L: rs(b, L, axes=[2, 2]), "axes"),
    V("resample2d", "axes-out-of-range", lambda b, L: rs(b, L, axes=[2, 4]), "axes"),
    V("resample2d", "scaled-size-0", lambda b, L: rs(b, L, scales=[0.1, 1]), ("scales", "output")),
    V("resample2d", "unknown-mode", lambda b, L: rs(b, L, mode="cubic"), "mode"),
    OK("resample2d", "default", lambda b, L: rs(b, L), (1, 1, 2, 3)),
    OK("resample2d", "scales", lambda b, L: rs(b, L, scales=[2, 1.5]), (1, 1, 4, 4)),
    OK("resample2d", "sizes-win-over-scales", lambda b, L: rs(b, L, sizes=[5, 7], scales=[9, 9]), (1, 1, 5, 7)),
    OK("resample2d", "other-axes", lambda b, L: rs(b, L, axes=[0, 1], sizes=[3, 2], mode="linear"), (3, 2, 2, 3)),
    OK("resample2d", "1x1", lambda b, L: rs(b, L, inp=(1, 1, 1, 1)), (1, 1, 1, 1)),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_conv_pool_resample_validation(ctx, case):
    run_case(ctx, case)
