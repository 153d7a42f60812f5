/* options/pool2d.h -- options structs for averagePool2d l2Pool2d maxPool2d -- #api-mlgraphbuilder-pool2d (included by ops/options.h). */
#pragma once

/* MLPool2dOptions -- the IDL members (lists start absent), then the values
 * the checker resolves from them (defaults filled in), which the kernels
 * use. */
#define WNN_POOL2D_OPTIONS(S, F, E, X)                                        \
    /* [windowHeight, windowWidth] */                                         \
    F(S, window_dimensions, "windowDimensions", WNN_F_U32_LIST, 0)            \
    /* [top, bottom, left, right] */                                          \
    F(S, padding, "padding", WNN_F_U32_LIST, 0)                               \
    F(S, strides, "strides", WNN_F_U32_LIST, 0)                               \
    F(S, dilations, "dilations", WNN_F_U32_LIST, 0)                           \
    E(S, layout, "layout", WNN_F_ENUM, layouts, 0) /* 0 "nchw", 1 "nhwc" */   \
    /* 0 "floor", 1 "ceil" */                                                 \
    E(S, output_shape_rounding, "outputShapeRounding", WNN_F_ENUM, roundings, 0) \
    F(S, output_sizes, "outputSizes", WNN_F_U32_LIST, 0)                      \
    /* resolved by wnn_check_pool2d */                                        \
    X(uint32_t window[2], pad[4], stride[2], dilation[2])
WNN_OPTIONS_STRUCT(wnn_pool2d_options, WNN_POOL2D_OPTIONS)
