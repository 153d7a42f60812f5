/* options/pool2d.h -- options structs for averagePool2d l2Pool2d maxPool2d -- #api-mlgraphbuilder-pool2d (included by ops/options.h). */
#pragma once

/* MLPool2dOptions -- the IDL members (lists start absent), then the values
 * the checker resolves from them (defaults filled in), which the kernels
 * use. */
typedef struct wnn_pool2d_options {
    wnn_u32_list window_dimensions; /* [windowHeight, windowWidth]        */
    wnn_u32_list padding;           /* [top, bottom, left, right]         */
    wnn_u32_list strides;
    wnn_u32_list dilations;
    int layout;                     /* 0 "nchw", 1 "nhwc"                 */
    int output_shape_rounding;      /* 0 "floor", 1 "ceil"                */
    wnn_u32_list output_sizes;
    /* resolved by wnn_check_pool2d */
    uint32_t window[2], pad[4], stride[2], dilation[2];
} wnn_pool2d_options;
