/* options/movement.h -- options structs for concat expand transpose slice split tile reverse triangular pad (included by ops/options.h). */
#pragma once

/* concat(inputs, axis) -- #api-mlgraphbuilder-concat */
#define WNN_CONCAT_OPTIONS(S, F, E, X)                                        \
    F(S, axis, "axis", WNN_F_U32, 0)
WNN_OPTIONS_STRUCT(wnn_concat_options, WNN_CONCAT_OPTIONS)

/* expand(input, newShape) -- #api-mlgraphbuilder-expand */
#define WNN_EXPAND_OPTIONS(S, F, E, X)                                        \
    F(S, new_shape, "newShape", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_expand_options, WNN_EXPAND_OPTIONS)

/* MLTransposeOptions -- #api-mlgraphbuilder-transpose.  The checker fills
 * an absent permutation with [rank-1, ..., 0]. */
#define WNN_TRANSPOSE_OPTIONS(S, F, E, X)                                     \
    F(S, permutation, "permutation", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_transpose_options, WNN_TRANSPOSE_OPTIONS)

/* slice(input, starts, sizes, MLSliceOptions) -- #api-mlgraphbuilder-slice.
 * The checker fills absent strides with 1s. */
#define WNN_SLICE_OPTIONS(S, F, E, X)                                         \
    F(S, starts, "starts", WNN_F_U32_LIST, 0)                                 \
    F(S, sizes, "sizes", WNN_F_U32_LIST, 0)                                   \
    F(S, strides, "strides", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_slice_options, WNN_SLICE_OPTIONS)

/* split(input, splits, MLSplitOptions) -- #api-mlgraphbuilder-split.
 * splits is (unsigned long or sequence<unsigned long>): .scalar tells an
 * integer (one item) from a sequence. */
#define WNN_SPLIT_OPTIONS(S, F, E, X)                                         \
    F(S, splits, "splits", WNN_F_U32_LIST, WNN_LIST_OR_ONE)                   \
    F(S, axis, "axis", WNN_F_U32, 0) /* 0 */
WNN_OPTIONS_STRUCT(wnn_split_options, WNN_SPLIT_OPTIONS)

/* tile(input, repetitions) -- #api-mlgraphbuilder-tile */
#define WNN_TILE_OPTIONS(S, F, E, X)                                          \
    F(S, repetitions, "repetitions", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_tile_options, WNN_TILE_OPTIONS)

/* MLReverseOptions -- #api-mlgraphbuilder-reverse-method.  The checker
 * fills absent axes with every axis. */
#define WNN_REVERSE_OPTIONS(S, F, E, X)                                       \
    F(S, axes, "axes", WNN_F_U32_LIST, 0)
WNN_OPTIONS_STRUCT(wnn_reverse_options, WNN_REVERSE_OPTIONS)

/* MLTriangularOptions -- #api-mlgraphbuilder-triangular */
#define WNN_TRIANGULAR_OPTIONS(S, F, E, X)                                    \
    F(S, upper, "upper", WNN_F_BOOL, 1) /* true */                            \
    F(S, diagonal, "diagonal", WNN_F_I32, 0) /* 0 */
WNN_OPTIONS_STRUCT(wnn_triangular_options, WNN_TRIANGULAR_OPTIONS)

/* MLPaddingMode */
enum { WNN_PAD_CONSTANT = 0, WNN_PAD_EDGE, WNN_PAD_REFLECTION };

/* pad(input, beginningPadding, endingPadding, MLPadOptions) --
 * #api-mlgraphbuilder-pad */
#define WNN_PAD_OPTIONS(S, F, E, X)                                           \
    F(S, beginning_padding, "beginningPadding", WNN_F_U32_LIST, 0)            \
    F(S, ending_padding, "endingPadding", WNN_F_U32_LIST, 0)                  \
    /* MLPaddingMode index, "constant" */                                     \
    E(S, mode, "mode", WNN_F_ENUM, padding_modes, WNN_PAD_CONSTANT)           \
    /* 0, cast to the input's type by the kernel */                           \
    F(S, value, "value", WNN_F_NUMBER, 0)
WNN_OPTIONS_STRUCT(wnn_pad_options, WNN_PAD_OPTIONS)
