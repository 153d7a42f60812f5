/* options.c -- field tables of the options structs (options.h) and their IDL
 * defaults.  A row names the member in snake_case and camelCase, its kind and
 * its offset; the Python layer converts dictionaries through these rows, so
 * adding an operator adds no Python code. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "options.h"
#include "ops_internal.h"

const wnn_field_table wnn_no_options_fields = { 0, NULL };

WNN_OPTIONS_TABLE(wnn_cast_options, WNN_CAST_OPTIONS);

WNN_OPTIONS_TABLE(wnn_reshape_options, WNN_RESHAPE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_clamp_options, WNN_CLAMP_OPTIONS);

WNN_OPTIONS_TABLE(wnn_elu_options, WNN_ELU_OPTIONS);

WNN_OPTIONS_TABLE(wnn_hard_sigmoid_options, WNN_HARD_SIGMOID_OPTIONS);

WNN_OPTIONS_TABLE(wnn_leaky_relu_options, WNN_LEAKY_RELU_OPTIONS);

WNN_OPTIONS_TABLE(wnn_linear_options, WNN_LINEAR_OPTIONS);

WNN_OPTIONS_TABLE(wnn_gemm_options, WNN_GEMM_OPTIONS);

/* IDL defaults, from the field tables.  Lists and operands start absent;
 * defaults that depend on a rank are filled in by the checkers. */
void
wnn_options_default(wnn_op op, void *options)
{
    const wnn_op_info *info = wnn_op_get(op);
    memset(options, 0, info->options_size);
    for (uint32_t i = 0; i < info->fields->n; i++) {
        const wnn_field *f = &info->fields->f[i];
        void *p = (char *)options + f->offset;
        switch (f->type) {
        case WNN_F_DOUBLE: *(double *)p = f->def; break;
        case WNN_F_NUMBER: ((wnn_number *)p)->d = f->def; break;
        case WNN_F_BOOL: *(bool *)p = f->def != 0; break;
        case WNN_F_U32: *(uint32_t *)p = (uint32_t)f->def; break;
        case WNN_F_I32: *(int32_t *)p = (int32_t)f->def; break;
        case WNN_F_ENUM: *(int *)p = (int)f->def; break;
        case WNN_F_DTYPE: *(wnn_dtype *)p = (wnn_dtype)(int)f->def; break;
        default: break;
        }
    }
}

bool
wnn_options_u32(wnn_op op, const void *options, const char *camel,
                uint32_t *v)
{
    const wnn_op_info *info = wnn_op_get(op);
    for (uint32_t i = 0; info && i < info->fields->n; i++) {
        const wnn_field *f = &info->fields->f[i];
        if (f->type == WNN_F_U32 && strcmp(f->camel, camel) == 0) {
            *v = *(const uint32_t *)((const char *)options + f->offset);
            return true;
        }
    }
    return false;
}

float
wnn_cast_float(double v, wnn_dtype t)
{
    return t == WNN_FLOAT16 ? wnn_f16_to_f32(wnn_f32_to_f16((float)v))
                            : (float)v;
}

void
wnn_scalar_params_of(wnn_op op, const void *options, wnn_dtype t,
                     wnn_scalar_params *p)
{
    memset(p, 0, sizeof(*p));
    switch (op) {
    case WNN_OP_ELU:
        p->a = wnn_cast_float(((const wnn_elu_options *)options)->alpha, t);
        break;
    case WNN_OP_LEAKY_RELU:
        p->a = wnn_cast_float(((const wnn_leaky_relu_options *)options)->alpha, t);
        break;
    case WNN_OP_HARD_SIGMOID: {
        const wnn_hard_sigmoid_options *o = options;
        p->a = wnn_cast_float(o->alpha, t);
        p->b = wnn_cast_float(o->beta, t);
        break;
    }
    case WNN_OP_LINEAR: {
        const wnn_linear_options *o = options;
        p->a = wnn_cast_float(o->alpha, t);
        p->b = wnn_cast_float(o->beta, t);
        break;
    }
    case WNN_OP_CLAMP: {
        /* Bounds are "cast" to the input's type (spec clamp steps). */
        const wnn_clamp_options *o = options;
        union { float f; uint16_t h; int32_t i32; uint32_t u32; int64_t i64;
                uint64_t u64; int8_t i8; uint8_t u8; } lo, hi;
        memset(&lo, 0, sizeof(lo));
        memset(&hi, 0, sizeof(hi));
        wnn_number_store(&o->min_value, t, &lo);
        wnn_number_store(&o->max_value, t, &hi);
        switch (t) {
        case WNN_FLOAT32: p->lo = lo.f; p->hi = hi.f; break;
        case WNN_FLOAT16: p->lo = wnn_f16_to_f32(lo.h); p->hi = wnn_f16_to_f32(hi.h); break;
        case WNN_INT32: p->ilo = lo.i32; p->ihi = hi.i32; break;
        case WNN_UINT32: p->ilo = lo.u32; p->ihi = hi.u32; break;
        case WNN_INT64: p->ilo = lo.i64; p->ihi = hi.i64; break;
        case WNN_UINT64: p->ulo = lo.u64; p->uhi = hi.u64; break;
        case WNN_INT8: p->ilo = lo.i8; p->ihi = hi.i8; break;
        case WNN_UINT8: p->ilo = lo.u8; p->ihi = hi.u8; break;
        default: break;
        }
        break;
    }
    default:
        break;
    }
}
