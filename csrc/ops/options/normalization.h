/* options/normalization.h -- options structs for batchNormalization
 * instanceNormalization layerNormalization softmax (included by
 * ops/options.h).  Operand members hold the node input index + 1 (0: absent).
 * The checkers replace epsilon by its value cast to the input's data type
 * (the spec's "Set options.epsilon to the result of casting ...") and fill in
 * layerNormalization's default axes. */
#pragma once

/* MLBatchNormalizationOptions -- #api-mlgraphbuilder-batchnorm */
typedef struct wnn_batch_normalization_options {
    uint32_t scale;  /* operand */
    uint32_t bias;   /* operand */
    uint32_t axis;   /* 1 */
    double epsilon;  /* 1e-5 */
} wnn_batch_normalization_options;

/* MLInstanceNormalizationOptions -- #api-mlgraphbuilder-instancenorm */
typedef struct wnn_instance_normalization_options {
    uint32_t scale;  /* operand */
    uint32_t bias;   /* operand */
    double epsilon;  /* 1e-5 */
    int layout;      /* MLInputOperandLayout: 0 "nchw" (default), 1 "nhwc" */
} wnn_instance_normalization_options;

/* MLLayerNormalizationOptions -- #api-mlgraphbuilder-layernorm */
typedef struct wnn_layer_normalization_options {
    uint32_t scale;    /* operand */
    uint32_t bias;     /* operand */
    wnn_u32_list axes; /* absent: 1 .. rank-1 (set by the checker) */
    double epsilon;    /* 1e-5 */
} wnn_layer_normalization_options;

/* softmax(input, axis) -- #api-mlgraphbuilder-softmax-method */
typedef struct wnn_softmax_options {
    uint32_t axis;
} wnn_softmax_options;
