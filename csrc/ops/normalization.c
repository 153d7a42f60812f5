/* normalization.c -- field tables, tensor limits and checkers of
 * batchNormalization, instanceNormalization, layerNormalization and softmax.
 * Data types (float32 / float16) and ranks of every operand are checked by
 * the builder against the limits tables below before the checkers run; the
 * checkers do the rest of the spec's steps ("same type as input", shapes,
 * axes) in the spec's order. */
#include <string.h>

#include "ops_internal.h"

#define N WNN_MAX_RANK
#define F WNN_DT_FLOAT

/* ---- option fields ------------------------------------------------------ */
WNN_OPTIONS_TABLE(wnn_batch_normalization_options, WNN_BATCH_NORMALIZATION_OPTIONS);

static const char *const layouts[] = { "nchw", "nhwc", NULL };
WNN_OPTIONS_TABLE(wnn_instance_normalization_options, WNN_INSTANCE_NORMALIZATION_OPTIONS);

WNN_OPTIONS_TABLE(wnn_layer_normalization_options, WNN_LAYER_NORMALIZATION_OPTIONS);

WNN_OPTIONS_TABLE(wnn_softmax_options, WNN_SOFTMAX_OPTIONS);

/* ---- tensor limits ------------------------------------------------------ */
/* #tensor-limits-batchNormalization */
const wnn_op_limits wnn_limits_batch_normalization = {
    5, 6, { { "input", F, 1, N }, { "mean", F, 1, 1 }, { "variance", F, 1, 1 },
            { "scale", F, 1, 1 }, { "bias", F, 1, 1 }, { "output", F, 1, N } } };
/* #tensor-limits-instanceNormalization */
const wnn_op_limits wnn_limits_instance_normalization = {
    3, 4, { { "input", F, 4, 4 }, { "scale", F, 1, 1 }, { "bias", F, 1, 1 },
            { "output", F, 4, 4 } } };
/* #tensor-limits-layerNormalization */
const wnn_op_limits wnn_limits_layer_normalization = {
    3, 4, { { "input", F, 0, N }, { "scale", F, 0, N }, { "bias", F, 0, N },
            { "output", F, 0, N } } };
/* #tensor-limits-softmax */
const wnn_op_limits wnn_limits_softmax = {
    1, 2, { { "input", F, 1, N }, { "output", F, 1, N } } };

/* ---- helpers ------------------------------------------------------------ */
/* The spec's "cast epsilon to input's dataType": one rounding from the
 * double, to float32 or float16. */
static double
cast_epsilon(double eps, wnn_dtype t)
{
    wnn_number v = { .present = true, .d = eps };
    if (t == WNN_FLOAT16) {
        uint16_t h;
        wnn_number_store(&v, t, &h);
        return wnn_f16_to_f32(h);
    }
    float f;
    wnn_number_store(&v, WNN_FLOAT32, &f);
    return f;
}

/* "If its dataType is not ... (same as input)" and "If its shape is not
 * equal to « input's shape[axis] »" for a 1-D operand (its rank is 1 by the
 * limits table). */
static wnn_status
check_1d(wnn_check *c, uint32_t idx, const char *name, uint32_t axis)
{
    const wnn_desc *d = &c->in[idx];
    uint32_t want = c->in[0].shape[axis];
    if (wnn_check_same_dtype(c, 0, idx, "input", name) != WNN_OK) {
        return WNN_ERR;
    }
    if (d->rank != 1 || d->shape[0] != want) {
        char s[96];
        return wnn_fail(c, name,
                        "shape %s is not [%u] (input's dimension %u)",
                        wnn_shape_str(d->shape, d->rank, s, sizeof(s)), want,
                        axis);
    }
    return WNN_OK;
}

static void
same_as_input(wnn_check *c)
{
    c->out[0] = c->in[0];
    c->n_out = 1;
}

/* ---- batchNormalization -- #api-mlgraphbuilder-batchnorm ---------------- */
wnn_status
wnn_check_batch_normalization(wnn_check *c)
{
    const wnn_batch_normalization_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    if (o->axis >= in->rank) {
        return wnn_fail(c, "options.axis",
                        "axis %u is not in the range [0, %u) of input's rank",
                        o->axis, in->rank);
    }
    if (check_1d(c, 1, "mean", o->axis) != WNN_OK ||
        check_1d(c, 2, "variance", o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    ((wnn_batch_normalization_options *)c->resolved)->epsilon =
        cast_epsilon(o->epsilon, in->dtype);
    if (o->scale && check_1d(c, o->scale - 1, "options.scale", o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    if (o->bias && check_1d(c, o->bias - 1, "options.bias", o->axis) != WNN_OK) {
        return WNN_ERR;
    }
    same_as_input(c);
    return WNN_OK;
}

/* ---- instanceNormalization -- #api-mlgraphbuilder-instancenorm ---------- */
wnn_status
wnn_check_instance_normalization(wnn_check *c)
{
    const wnn_instance_normalization_options *o = c->options;
    /* data type and rank 4: the limits table */
    ((wnn_instance_normalization_options *)c->resolved)->epsilon =
        cast_epsilon(o->epsilon, c->in[0].dtype);
    uint32_t axis = o->layout == 0 ? 1 : 3;
    if (o->scale && check_1d(c, o->scale - 1, "options.scale", axis) != WNN_OK) {
        return WNN_ERR;
    }
    if (o->bias && check_1d(c, o->bias - 1, "options.bias", axis) != WNN_OK) {
        return WNN_ERR;
    }
    same_as_input(c);
    return WNN_OK;
}

/* ---- layerNormalization -- #api-mlgraphbuilder-layernorm ---------------- */
static wnn_status
check_ln_operand(wnn_check *c, uint32_t idx, const char *name,
                 const wnn_u32_list *axes)
{
    const wnn_desc *d = &c->in[idx];
    const wnn_desc *in = &c->in[0];
    char s[96], t[96];
    if (wnn_check_same_dtype(c, 0, idx, "input", name) != WNN_OK) {
        return WNN_ERR;
    }
    if (d->rank != axes->n) {
        return wnn_fail(c, name, "rank %u is not the number of axes (%u)",
                        d->rank, axes->n);
    }
    for (uint32_t i = 0; i < axes->n; i++) {
        if (d->shape[i] != in->shape[axes->v[i]]) {
            uint32_t want[WNN_MAX_RANK];
            for (uint32_t j = 0; j < axes->n; j++) {
                want[j] = in->shape[axes->v[j]];
            }
            return wnn_fail(c, name,
                            "shape %s is not %s (input's dimensions at axes)",
                            wnn_shape_str(d->shape, d->rank, s, sizeof(s)),
                            wnn_shape_str(want, axes->n, t, sizeof(t)));
        }
    }
    return WNN_OK;
}

wnn_status
wnn_check_layer_normalization(wnn_check *c)
{
    wnn_layer_normalization_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0];
    uint32_t rank = in->rank;
    if (!r->axes.present) {
        uint32_t n = rank > 1 ? rank - 1 : 0;
        uint32_t *v = wnn_check_list(c, &r->axes, n);
        if (!v) {
            return wnn_failk(c->err, WNN_OUT_OF_MEMORY,
                             wnn_op_get(c->op)->camel, c->label, NULL,
                             "out of memory");
        }
        for (uint32_t i = 0; i < n; i++) {
            v[i] = i + 1;
        }
    } else {
        if (r->axes.scalar) {
            /* IDL sequence<unsigned long>: a bare number is not a sequence */
            return wnn_fail(c, "options.axes", "expected a sequence of axes");
        }
        uint32_t seen = 0;
        for (uint32_t i = 0; i < r->axes.n; i++) {
            uint32_t a = r->axes.v[i];
            if (a >= rank) {
                return wnn_fail(c, "options.axes",
                                "axis %u is not in the range [0, %u) of "
                                "input's rank", a, rank);
            }
            if (seen & (1u << a)) {
                return wnn_fail(c, "options.axes", "axis %u is duplicated", a);
            }
            seen |= 1u << a;
        }
    }
    r->epsilon = cast_epsilon(r->epsilon, in->dtype);
    if (r->scale && check_ln_operand(c, r->scale - 1, "options.scale", &r->axes) != WNN_OK) {
        return WNN_ERR;
    }
    if (r->bias && check_ln_operand(c, r->bias - 1, "options.bias", &r->axes) != WNN_OK) {
        return WNN_ERR;
    }
    same_as_input(c);
    return WNN_OK;
}

/* ---- softmax -- #api-mlgraphbuilder-softmax-method ---------------------- */
wnn_status
wnn_check_softmax(wnn_check *c)
{
    const wnn_softmax_options *o = c->options;
    if (o->axis >= c->in[0].rank) {
        return wnn_fail(c, "axis", "axis %u is not in the range [0, %u) of "
                        "input's rank", o->axis, c->in[0].rank);
    }
    same_as_input(c);
    return WNN_OK;
}
