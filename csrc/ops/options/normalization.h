/* options/normalization.h -- options structs for batchNormalization
 * instanceNormalization layerNormalization softmax (included by
 * ops/options.h).  Operand members hold the node input index + 1 (0: absent).
 * The checkers replace epsilon by its value cast to the input's data type
 * (the spec's "Set options.epsilon to the result of casting ...") and fill in
 * layerNormalization's default axes. */
#pragma once

/* MLBatchNormalizationOptions -- #api-mlgraphbuilder-batchnorm */
#define WNN_BATCH_NORMALIZATION_OPTIONS(S, F, E, X)                           \
    F(S, scale, "scale", WNN_F_OPERAND, 0) /* operand */                      \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, axis, "axis", WNN_F_U32, 1) /* 1 */                                  \
    F(S, epsilon, "epsilon", WNN_F_DOUBLE, 1e-5) /* 1e-5 */
WNN_OPTIONS_STRUCT(wnn_batch_normalization_options, WNN_BATCH_NORMALIZATION_OPTIONS)

/* MLInstanceNormalizationOptions -- #api-mlgraphbuilder-instancenorm */
#define WNN_INSTANCE_NORMALIZATION_OPTIONS(S, F, E, X)                        \
    F(S, scale, "scale", WNN_F_OPERAND, 0) /* operand */                      \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    F(S, epsilon, "epsilon", WNN_F_DOUBLE, 1e-5) /* 1e-5 */                   \
    /* MLInputOperandLayout: 0 "nchw" (default), 1 "nhwc" */                  \
    E(S, layout, "layout", WNN_F_ENUM, layouts, 0)
WNN_OPTIONS_STRUCT(wnn_instance_normalization_options, WNN_INSTANCE_NORMALIZATION_OPTIONS)

/* MLLayerNormalizationOptions -- #api-mlgraphbuilder-layernorm */
#define WNN_LAYER_NORMALIZATION_OPTIONS(S, F, E, X)                           \
    F(S, scale, "scale", WNN_F_OPERAND, 0) /* operand */                      \
    F(S, bias, "bias", WNN_F_OPERAND, 0) /* operand */                        \
    /* absent: 1 .. rank-1 (set by the checker) */                            \
    F(S, axes, "axes", WNN_F_U32_LIST, 0)                                     \
    F(S, epsilon, "epsilon", WNN_F_DOUBLE, 1e-5) /* 1e-5 */
WNN_OPTIONS_STRUCT(wnn_layer_normalization_options, WNN_LAYER_NORMALIZATION_OPTIONS)

/* softmax(input, axis) -- #api-mlgraphbuilder-softmax-method */
#define WNN_SOFTMAX_OPTIONS(S, F, E, X)                                       \
    F(S, axis, "axis", WNN_F_U32, 0)
WNN_OPTIONS_STRUCT(wnn_softmax_options, WNN_SOFTMAX_OPTIONS)
