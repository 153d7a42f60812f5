/* elementwise.c -- checkers of the element-wise families: binary, logical,
 * unary, and the activations that keep their input's shape (clamp elu gelu
 * hardSigmoid hardSwish leakyRelu linear relu sigmoid softplus softsign tanh)
 * plus prelu.  Data types and ranks are checked generically by the builder
 * against the op's limits table before these run. */
#include <math.h>

#include "ops_internal.h"

static wnn_status
broadcast_out(wnn_check *c, const char *na, const char *nb, wnn_dtype out_t)
{
    char sa[96], sb[96];
    wnn_desc *o = &c->out[0];
    if (wnn_broadcast_shapes(c->in[0].shape, c->in[0].rank, c->in[1].shape,
                             c->in[1].rank, o->shape, &o->rank) != 0) {
        return wnn_fail(c, nb, "shape %s does not broadcast with %s's shape %s",
                        wnn_shape_str(c->in[1].shape, c->in[1].rank, sb,
                                      sizeof(sb)),
                        na,
                        wnn_shape_str(c->in[0].shape, c->in[0].rank, sa,
                                      sizeof(sa)));
    }
    o->dtype = out_t;
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-binary: "create an element-wise binary operation" */
wnn_status
wnn_check_binary(wnn_check *c)
{
    if (wnn_check_same_dtype(c, 0, 1, "a", "b") != WNN_OK) {
        return WNN_ERR;
    }
    return broadcast_out(c, "a", "b", c->in[0].dtype);
}

/* #api-mlgraphbuilder-logical: "create an element-wise logical operation"
 * for the two-operand ones; the output is uint8. */
wnn_status
wnn_check_compare(wnn_check *c)
{
    if (wnn_check_same_dtype(c, 0, 1, "a", "b") != WNN_OK) {
        return WNN_ERR;
    }
    return broadcast_out(c, "a", "b", WNN_UINT8);
}

/* #api-mlgraphbuilder-logical: logicalNot, isNaN, isInfinite. */
wnn_status
wnn_check_unary_logical(wnn_check *c)
{
    c->out[0] = c->in[0];
    c->out[0].dtype = WNN_UINT8;
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-unary and the shape-keeping activations: the output
 * is a copy of the input's descriptor.  Float options (alpha, beta) are cast
 * to the input's type by the kernels, as the spec's steps say. */
wnn_status
wnn_check_unary(wnn_check *c)
{
    c->out[0] = c->in[0];
    c->n_out = 1;
    return WNN_OK;
}

static double
number_as_double_in(const wnn_number *v, wnn_dtype t)
{
    /* Compare in the input's type, after the spec's "cast". */
    union {
        float f;
        uint16_t h;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        int8_t i8;
        uint8_t u8;
    } u;
    wnn_number_store(v, t, &u);
    switch (t) {
    case WNN_FLOAT32: return u.f;
    case WNN_FLOAT16: return wnn_f16_to_f32(u.h);
    case WNN_INT32: return u.i32;
    case WNN_UINT32: return u.u32;
    case WNN_INT64: return (double)u.i64;
    case WNN_UINT64: return (double)u.u64;
    case WNN_INT8: return u.i8;
    case WNN_UINT8: return u.u8;
    default: return 0;
    }
}

/* #api-mlgraphbuilder-clamp */
wnn_status
wnn_check_clamp(wnn_check *c)
{
    const wnn_clamp_options *o = c->options;
    wnn_dtype t = c->in[0].dtype;
    double lo = number_as_double_in(&o->min_value, t);
    double hi = number_as_double_in(&o->max_value, t);
    bool greater = lo > hi;
    if (t == WNN_INT64 || t == WNN_UINT64) {
        /* 64-bit values do not all fit a double: compare them exactly */
        int64_t a, b;
        wnn_number_store(&o->min_value, t, &a);
        wnn_number_store(&o->max_value, t, &b);
        greater = t == WNN_INT64 ? a > b : (uint64_t)a > (uint64_t)b;
    }
    /* NaN bounds: the spec's comparison "is greater than" is false. */
    if (greater) {
        return wnn_fail(c, "options.minValue",
                        "minValue %g is greater than maxValue %g", lo, hi);
    }
    return wnn_check_unary(c);
}

/* #api-mlgraphbuilder-prelu: slope and input broadcast bidirectionally. */
wnn_status
wnn_check_prelu(wnn_check *c)
{
    if (wnn_check_same_dtype(c, 0, 1, "input", "slope") != WNN_OK) {
        return WNN_ERR;
    }
    return broadcast_out(c, "input", "slope", c->in[0].dtype);
}
