/* options/conv2d.h -- options structs for conv2d convTranspose2d -- #api-mlgraphbuilder-conv2d, #api-mlgraphbuilder-convtranspose2d (included by ops/options.h). */
#pragma once

/* Enum indices (the order of the string lists in ops/conv2d.c). */
enum { WNN_LAYOUT_NCHW = 0, WNN_LAYOUT_NHWC = 1 };
enum { WNN_CONV_OIHW = 0, WNN_CONV_HWIO = 1, WNN_CONV_OHWI = 2, WNN_CONV_IHWO = 3 };
enum { WNN_CONVT_IOHW = 0, WNN_CONVT_HWOI = 1, WNN_CONVT_OHWI = 2 };

/* MLConv2dOptions -- #api-mlgraphbuilder-conv2d */
#define WNN_CONV2D_OPTIONS(S, F, E, X)                                        \
    /* lists: .present false when absent */                                   \
    F(S, padding, "padding", WNN_F_U32_LIST, 0)                               \
    F(S, strides, "strides", WNN_F_U32_LIST, 0)                               \
    F(S, dilations, "dilations", WNN_F_U32_LIST, 0)                           \
    F(S, groups, "groups", WNN_F_U32, 1) /* 1 */                              \
    /* "nchw" */                                                              \
    E(S, input_layout, "inputLayout", WNN_F_ENUM, input_layouts, WNN_LAYOUT_NCHW) \
    /* "oihw" */                                                              \
    E(S, filter_layout, "filterLayout", WNN_F_ENUM, conv2d_filter_layouts, WNN_CONV_OIHW) \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand: input index + 1 */       \
    /* Filled in by the checker (defaults applied), read by the kernel. */    \
    X(uint32_t pad[4]) /* top, bottom, left, right */                         \
    X(uint32_t stride[2], dilation[2])
WNN_OPTIONS_STRUCT(wnn_conv2d_options, WNN_CONV2D_OPTIONS)

/* MLConvTranspose2dOptions -- #api-mlgraphbuilder-convtranspose2d */
#define WNN_CONV_TRANSPOSE2D_OPTIONS(S, F, E, X)                              \
    F(S, padding, "padding", WNN_F_U32_LIST, 0)                               \
    F(S, strides, "strides", WNN_F_U32_LIST, 0)                               \
    F(S, dilations, "dilations", WNN_F_U32_LIST, 0)                           \
    F(S, output_padding, "outputPadding", WNN_F_U32_LIST, 0)                  \
    F(S, output_sizes, "outputSizes", WNN_F_U32_LIST, 0)                      \
    F(S, groups, "groups", WNN_F_U32, 1) /* 1 */                              \
    /* "nchw" */                                                              \
    E(S, input_layout, "inputLayout", WNN_F_ENUM, input_layouts, WNN_LAYOUT_NCHW) \
    /* "iohw" */                                                              \
    E(S, filter_layout, "filterLayout", WNN_F_ENUM, conv_transpose2d_filter_layouts, WNN_CONVT_IOHW) \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand: input index + 1 */       \
    /* Filled in by the checker. */                                           \
    X(uint32_t pad[4])                                                        \
    X(uint32_t stride[2], dilation[2])
WNN_OPTIONS_STRUCT(wnn_conv_transpose2d_options, WNN_CONV_TRANSPOSE2D_OPTIONS)
