/* options/reduce.h -- options structs for reduce* argMin argMax cumulativeSum softmax (included by ops/options.h). */
#pragma once

/* MLReduceOptions -- #api-mlgraphbuilder-reduce (all ten reduce* ops) */
#define WNN_REDUCE_OPTIONS(S, F, E, X)                                        \
    /* absent: every axis; present and empty: none */                         \
    F(S, axes, "axes", WNN_F_U32_LIST, 0)                                     \
    F(S, keep_dimensions, "keepDimensions", WNN_F_BOOL, 0) /* false */        \
    X(uint32_t axes_mask) /* not a field: bit d set when input dimension d    \
                               is reduced, filled in by the checker */
WNN_OPTIONS_STRUCT(wnn_reduce_options, WNN_REDUCE_OPTIONS)

/* argMin/argMax(input, axis, MLArgMinMaxOptions) -- #api-mlgraphbuilder-argminmax */
#define WNN_ARG_MIN_MAX_OPTIONS(S, F, E, X)                                   \
    /* positional, [EnforceRange] unsigned long */                            \
    F(S, axis, "axis", WNN_F_U32, 0)                                          \
    F(S, keep_dimensions, "keepDimensions", WNN_F_BOOL, 0) /* false */        \
    /* "int32" */                                                             \
    F(S, output_data_type, "outputDataType", WNN_F_DTYPE, WNN_INT32)
WNN_OPTIONS_STRUCT(wnn_arg_min_max_options, WNN_ARG_MIN_MAX_OPTIONS)

/* cumulativeSum(input, axis, MLCumulativeSumOptions) -- #api-mlgraphbuilder-cumulativesum */
#define WNN_CUMULATIVE_SUM_OPTIONS(S, F, E, X)                                \
    F(S, axis, "axis", WNN_F_U32, 0) /* positional */                         \
    F(S, exclusive, "exclusive", WNN_F_BOOL, 0) /* false */                   \
    F(S, reversed, "reversed", WNN_F_BOOL, 0) /* false */
WNN_OPTIONS_STRUCT(wnn_cumulative_sum_options, WNN_CUMULATIVE_SUM_OPTIONS)
