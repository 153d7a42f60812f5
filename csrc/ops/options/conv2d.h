/* options/conv2d.h -- options structs for conv2d convTranspose2d -- #api-mlgraphbuilder-conv2d, #api-mlgraphbuilder-convtranspose2d (included by ops/options.h). */
#pragma once

/* Enum indices (the order of the string lists in ops/conv2d.c). */
enum { WNN_LAYOUT_NCHW = 0, WNN_LAYOUT_NHWC = 1 };
enum { WNN_CONV_OIHW = 0, WNN_CONV_HWIO = 1, WNN_CONV_OHWI = 2, WNN_CONV_IHWO = 3 };
enum { WNN_CONVT_IOHW = 0, WNN_CONVT_HWOI = 1, WNN_CONVT_OHWI = 2 };

/* MLConv2dOptions -- #api-mlgraphbuilder-conv2d */
typedef struct wnn_conv2d_options {
    wnn_u32_list padding, strides, dilations; /* .present false when absent */
    uint32_t groups;                          /* 1 */
    int input_layout;                         /* "nchw" */
    int filter_layout;                        /* "oihw" */
    uint32_t bias;                            /* operand: input index + 1 */
    /* Filled in by the checker (defaults applied), read by the kernel. */
    uint32_t pad[4];                          /* top, bottom, left, right */
    uint32_t stride[2], dilation[2];
} wnn_conv2d_options;

/* MLConvTranspose2dOptions -- #api-mlgraphbuilder-convtranspose2d */
typedef struct wnn_conv_transpose2d_options {
    wnn_u32_list padding, strides, dilations, output_padding, output_sizes;
    uint32_t groups;                          /* 1 */
    int input_layout;                         /* "nchw" */
    int filter_layout;                        /* "iohw" */
    uint32_t bias;                            /* operand: input index + 1 */
    /* Filled in by the checker. */
    uint32_t pad[4];
    uint32_t stride[2], dilation[2];
} wnn_conv_transpose2d_options;
