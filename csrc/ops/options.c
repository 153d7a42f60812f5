/* options.c -- field tables of the options structs (options.h) and their IDL
 * defaults.  A row names the member in snake_case and camelCase, its kind and
 * its offset; the Python layer converts dictionaries through these rows, so
 * adding an operator adds no Python code. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "options.h"
#include "ops_internal.h"

#define FIELD(S, member, camel, type) \
    { #member, camel, type, offsetof(S, member), NULL }
#define TABLE(S, arr) \
    const wnn_field_table S##_fields = { sizeof(arr) / sizeof(arr[0]), arr }

const wnn_field_table wnn_no_options_fields = { 0, NULL };

static const wnn_field cast_f[] = {
    FIELD(wnn_cast_options, data_type, "dataType", WNN_F_DTYPE),
};
TABLE(wnn_cast_options, cast_f);

static const wnn_field reshape_f[] = {
    FIELD(wnn_reshape_options, new_shape, "newShape", WNN_F_U32_LIST),
};
TABLE(wnn_reshape_options, reshape_f);

static const wnn_field clamp_f[] = {
    FIELD(wnn_clamp_options, min_value, "minValue", WNN_F_NUMBER),
    FIELD(wnn_clamp_options, max_value, "maxValue", WNN_F_NUMBER),
};
TABLE(wnn_clamp_options, clamp_f);

static const wnn_field elu_f[] = {
    FIELD(wnn_elu_options, alpha, "alpha", WNN_F_DOUBLE),
};
TABLE(wnn_elu_options, elu_f);

static const wnn_field hard_sigmoid_f[] = {
    FIELD(wnn_hard_sigmoid_options, alpha, "alpha", WNN_F_DOUBLE),
    FIELD(wnn_hard_sigmoid_options, beta, "beta", WNN_F_DOUBLE),
};
TABLE(wnn_hard_sigmoid_options, hard_sigmoid_f);

static const wnn_field leaky_relu_f[] = {
    FIELD(wnn_leaky_relu_options, alpha, "alpha", WNN_F_DOUBLE),
};
TABLE(wnn_leaky_relu_options, leaky_relu_f);

static const wnn_field linear_f[] = {
    FIELD(wnn_linear_options, alpha, "alpha", WNN_F_DOUBLE),
    FIELD(wnn_linear_options, beta, "beta", WNN_F_DOUBLE),
};
TABLE(wnn_linear_options, linear_f);

static const wnn_field gemm_f[] = {
    FIELD(wnn_gemm_options, c, "c", WNN_F_OPERAND),
    FIELD(wnn_gemm_options, alpha, "alpha", WNN_F_DOUBLE),
    FIELD(wnn_gemm_options, beta, "beta", WNN_F_DOUBLE),
    FIELD(wnn_gemm_options, a_transpose, "aTranspose", WNN_F_BOOL),
    FIELD(wnn_gemm_options, b_transpose, "bTranspose", WNN_F_BOOL),
};
TABLE(wnn_gemm_options, gemm_f);

/* IDL defaults.  Everything not listed is zero / false / absent. */
void
wnn_options_default(wnn_op op, void *options)
{
    const wnn_op_info *info = wnn_op_get(op);
    memset(options, 0, info->options_size);
    switch (op) {
    case WNN_OP_ELU: {
        wnn_elu_options *o = options;
        o->alpha = 1.0;
        break;
    }
    case WNN_OP_HARD_SIGMOID: {
        wnn_hard_sigmoid_options *o = options;
        o->alpha = 0.2;
        o->beta = 0.5;
        break;
    }
    case WNN_OP_LEAKY_RELU: {
        wnn_leaky_relu_options *o = options;
        o->alpha = 0.01;
        break;
    }
    case WNN_OP_LINEAR: {
        wnn_linear_options *o = options;
        o->alpha = 1.0;
        break;
    }
    case WNN_OP_GEMM: {
        wnn_gemm_options *o = options;
        o->alpha = 1.0;
        o->beta = 1.0;
        break;
    }
    case WNN_OP_CLAMP: {
        /* The spec's clamp steps say "minValue ... or Infinity otherwise" and
         * "maxValue ... or -Infinity otherwise", which would make every
         * default clamp fail its min <= max check; the intent (and every
         * implementation) is -Infinity / +Infinity. */
        wnn_clamp_options *o = options;
        o->min_value.d = -INFINITY;
        o->max_value.d = INFINITY;
        break;
    }
    default:
        break;
    }
}
