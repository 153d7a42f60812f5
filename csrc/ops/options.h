/* options.h -- one C struct per IDL options dictionary (and positional plain
 * arguments, which live in the same struct).  Field tables that let the
 * Python layer fill these generically are in options.c.  Operand-valued
 * members hold (node input index + 1); 0 means absent.  `label` lives on the
 * node, not here. */
#ifndef WNN_OPTIONS_H
#define WNN_OPTIONS_H
#include "webnn_core.h"

typedef struct wnn_no_options {
    int unused;
} wnn_no_options;

/* cast(input, dataType) -- #api-mlgraphbuilder-cast */
typedef struct wnn_cast_options {
    wnn_dtype data_type;
} wnn_cast_options;

/* reshape(input, newShape) -- #api-mlgraphbuilder-reshape-method */
typedef struct wnn_reshape_options {
    wnn_u32_list new_shape;
} wnn_reshape_options;

/* MLClampOptions -- #api-mlgraphbuilder-clamp */
typedef struct wnn_clamp_options {
    wnn_number min_value;
    wnn_number max_value;
} wnn_clamp_options;

/* MLEluOptions */
typedef struct wnn_elu_options {
    double alpha; /* 1 */
} wnn_elu_options;

/* MLHardSigmoidOptions */
typedef struct wnn_hard_sigmoid_options {
    double alpha; /* 0.2 */
    double beta;  /* 0.5 */
} wnn_hard_sigmoid_options;

/* MLLeakyReluOptions */
typedef struct wnn_leaky_relu_options {
    double alpha; /* 0.01 */
} wnn_leaky_relu_options;

/* MLLinearOptions */
typedef struct wnn_linear_options {
    double alpha; /* 1 */
    double beta;  /* 0 */
} wnn_linear_options;

/* MLGemmOptions -- #api-mlgraphbuilder-gemm */
typedef struct wnn_gemm_options {
    uint32_t c;   /* operand */
    double alpha; /* 1 */
    double beta;  /* 1 */
    bool a_transpose;
    bool b_transpose;
} wnn_gemm_options;

#include "options/conv2d.h"
#include "options/pool2d.h"
#include "options/normalization.h"
#include "options/reduce.h"
#include "options/resample2d.h"
#include "options/movement.h"
#include "options/gather_scatter.h"
#include "options/quantize.h"
#include "options/recurrent.h"

#define WNN_OP(ID, camel, snake, sig, opts, check, limits, cpu) \
    extern const wnn_field_table opts##_fields;
#include "ops.def"
#undef WNN_OP

#endif
