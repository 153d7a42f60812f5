/* options/resample2d.h -- options structs for resample2d -- #api-mlgraphbuilder-resample2d-method (included by ops/options.h). */
#pragma once

/* MLResample2dOptions -- the IDL members, then what the checker resolves.
 * The kernel takes the sizes from the input and output shapes (the spec's
 * scale is outputSize / inputSize in both cases). */
typedef struct wnn_resample2d_options {
    int mode;            /* 0 "nearest-neighbor", 1 "linear" */
    wnn_f32_list scales;
    wnn_u32_list sizes;
    wnn_u32_list axes;
    /* resolved by wnn_check_resample2d */
    uint32_t axis[2];
} wnn_resample2d_options;
