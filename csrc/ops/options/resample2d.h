/* options/resample2d.h -- options structs for resample2d -- #api-mlgraphbuilder-resample2d-method (included by ops/options.h). */
#pragma once

/* MLResample2dOptions -- the IDL members, then what the checker resolves.
 * The kernel takes the sizes from the input and output shapes (the spec's
 * scale is outputSize / inputSize in both cases). */
#define WNN_RESAMPLE2D_OPTIONS(S, F, E, X)                                    \
    /* 0 "nearest-neighbor", 1 "linear" */                                    \
    E(S, mode, "mode", WNN_F_ENUM, modes, 0)                                  \
    F(S, scales, "scales", WNN_F_F32_LIST, 0)                                 \
    F(S, sizes, "sizes", WNN_F_U32_LIST, 0)                                   \
    F(S, axes, "axes", WNN_F_U32_LIST, 0)                                     \
    /* resolved by wnn_check_resample2d */                                    \
    X(uint32_t axis[2])
WNN_OPTIONS_STRUCT(wnn_resample2d_options, WNN_RESAMPLE2D_OPTIONS)
