/* options/reduce.h -- options structs for reduce* argMin argMax cumulativeSum softmax (included by ops/options.h). */
#pragma once

/* MLReduceOptions -- #api-mlgraphbuilder-reduce (all ten reduce* ops) */
typedef struct wnn_reduce_options {
    wnn_u32_list axes;      /* absent: every axis; present and empty: none */
    bool keep_dimensions;   /* false */
    uint32_t axes_mask;     /* not a field: bit d set when input dimension d
                               is reduced, filled in by the checker */
} wnn_reduce_options;

/* argMin/argMax(input, axis, MLArgMinMaxOptions) -- #api-mlgraphbuilder-argminmax */
typedef struct wnn_arg_min_max_options {
    uint32_t axis;               /* positional, [EnforceRange] unsigned long */
    bool keep_dimensions;        /* false */
    wnn_dtype output_data_type;  /* "int32" */
} wnn_arg_min_max_options;

/* cumulativeSum(input, axis, MLCumulativeSumOptions) -- #api-mlgraphbuilder-cumulativesum */
typedef struct wnn_cumulative_sum_options {
    uint32_t axis;   /* positional */
    bool exclusive;  /* false */
    bool reversed;   /* false */
} wnn_cumulative_sum_options;
