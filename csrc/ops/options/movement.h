/* options/movement.h -- options structs for concat expand transpose slice split tile reverse triangular pad (included by ops/options.h). */
#pragma once

/* concat(inputs, axis) -- #api-mlgraphbuilder-concat */
typedef struct wnn_concat_options {
    uint32_t axis;
} wnn_concat_options;

/* expand(input, newShape) -- #api-mlgraphbuilder-expand */
typedef struct wnn_expand_options {
    wnn_u32_list new_shape;
} wnn_expand_options;

/* MLTransposeOptions -- #api-mlgraphbuilder-transpose.  The checker fills
 * an absent permutation with [rank-1, ..., 0]. */
typedef struct wnn_transpose_options {
    wnn_u32_list permutation;
} wnn_transpose_options;

/* slice(input, starts, sizes, MLSliceOptions) -- #api-mlgraphbuilder-slice.
 * The checker fills absent strides with 1s. */
typedef struct wnn_slice_options {
    wnn_u32_list starts;
    wnn_u32_list sizes;
    wnn_u32_list strides;
} wnn_slice_options;

/* split(input, splits, MLSplitOptions) -- #api-mlgraphbuilder-split.
 * splits is (unsigned long or sequence<unsigned long>): .scalar tells an
 * integer (one item) from a sequence. */
typedef struct wnn_split_options {
    wnn_u32_list splits;
    uint32_t axis; /* 0 */
} wnn_split_options;

/* tile(input, repetitions) -- #api-mlgraphbuilder-tile */
typedef struct wnn_tile_options {
    wnn_u32_list repetitions;
} wnn_tile_options;

/* MLReverseOptions -- #api-mlgraphbuilder-reverse-method.  The checker
 * fills absent axes with every axis. */
typedef struct wnn_reverse_options {
    wnn_u32_list axes;
} wnn_reverse_options;

/* MLTriangularOptions -- #api-mlgraphbuilder-triangular */
typedef struct wnn_triangular_options {
    bool upper;       /* true */
    int32_t diagonal; /* 0 */
} wnn_triangular_options;

/* MLPaddingMode */
enum { WNN_PAD_CONSTANT = 0, WNN_PAD_EDGE, WNN_PAD_REFLECTION };

/* pad(input, beginningPadding, endingPadding, MLPadOptions) --
 * #api-mlgraphbuilder-pad */
typedef struct wnn_pad_options {
    wnn_u32_list beginning_padding;
    wnn_u32_list ending_padding;
    int mode;         /* MLPaddingMode index, "constant" */
    wnn_number value; /* 0, cast to the input's type by the kernel */
} wnn_pad_options;
