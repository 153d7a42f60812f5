/* movement.c -- field tables, tensor limits and checkers of the data
 * movement operators: concat expand transpose slice split tile reverse
 * triangular pad.  Data types and ranks are checked by the builder against
 * the limits tables before these run; every shape computation below is done
 * in 64-bit arithmetic and checked against WNN_MAX_DIM. */
#include <stdio.h>
#include <string.h>

#include "ops_internal.h"

#define N WNN_MAX_RANK
#define ANY WNN_DT_ANY

/* The spec's "valid tensor count" is 1 to 8192; an implementation may
 * impose a smaller bound: a node here has at most WNN_MAX_OUTPUTS outputs. */
#define VALID_TENSOR_COUNT 8192u

/* ---- field tables --------------------------------------------------------- */
WNN_OPTIONS_TABLE(wnn_concat_options, WNN_CONCAT_OPTIONS);

WNN_OPTIONS_TABLE(wnn_expand_options, WNN_EXPAND_OPTIONS);

WNN_OPTIONS_TABLE(wnn_transpose_options, WNN_TRANSPOSE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_slice_options, WNN_SLICE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_split_options, WNN_SPLIT_OPTIONS);

WNN_OPTIONS_TABLE(wnn_tile_options, WNN_TILE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_reverse_options, WNN_REVERSE_OPTIONS);

WNN_OPTIONS_TABLE(wnn_triangular_options, WNN_TRIANGULAR_OPTIONS);

static const char *const padding_modes[] = { "constant", "edge", "reflection",
                                             NULL };
WNN_OPTIONS_TABLE(wnn_pad_options, WNN_PAD_OPTIONS);

/* ---- tensor limits -------------------------------------------------------- */
/* #tensor-limits-concat */
const wnn_op_limits wnn_limits_concat = {
    1, 2, { { "inputs", ANY, 1, N }, { "output", ANY, 1, N } } };
/* #tensor-limits-expand */
const wnn_op_limits wnn_limits_expand = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-transpose */
const wnn_op_limits wnn_limits_transpose = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-slice */
const wnn_op_limits wnn_limits_slice = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-split */
const wnn_op_limits wnn_limits_split = {
    1, 2, { { "input", ANY, 1, N }, { "outputs", ANY, 1, N } } };
/* #tensor-limits-tile */
const wnn_op_limits wnn_limits_tile = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-reverse */
const wnn_op_limits wnn_limits_reverse = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };
/* #tensor-limits-triangular */
const wnn_op_limits wnn_limits_triangular = {
    1, 2, { { "input", ANY, 2, N }, { "output", ANY, 2, N } } };
/* #tensor-limits-pad */
const wnn_op_limits wnn_limits_pad = {
    1, 2, { { "input", ANY, 0, N }, { "output", ANY, 0, N } } };

/* ---- helpers -------------------------------------------------------------- */
/* Arguments whose IDL type is a plain sequence: an integer is a TypeError
 * (the Python layer accepts one for union types such as split's). */
static wnn_status
need_sequence(wnn_check *c, const wnn_u32_list *l, const char *arg)
{
    if (l->present && l->scalar) {
        return wnn_fail(c, arg, "expected a sequence of integers, got an "
                                "integer");
    }
    return WNN_OK;
}

/* The list must have one item per input dimension. */
static wnn_status
need_rank_items(wnn_check *c, const wnn_u32_list *l, const char *arg)
{
    if (need_sequence(c, l, arg) != WNN_OK) {
        return WNN_ERR;
    }
    if (l->n != c->in[0].rank) {
        return wnn_fail(c, arg, "has %u items; the input's rank is %u", l->n,
                        c->in[0].rank);
    }
    return WNN_OK;
}

/* Items in [0, rank) and without duplicates. */
static wnn_status
need_axes(wnn_check *c, const wnn_u32_list *l, const char *arg)
{
    uint32_t rank = c->in[0].rank;
    bool seen[WNN_MAX_RANK] = { false };
    for (uint32_t i = 0; i < l->n; i++) {
        if (l->v[i] >= rank) {
            return wnn_fail(c, arg, "item %u (%u) is not in the range [0, %u)",
                            i, l->v[i], rank);
        }
        if (seen[l->v[i]]) {
            return wnn_fail(c, arg, "contains %u more than once", l->v[i]);
        }
        seen[l->v[i]] = true;
    }
    return WNN_OK;
}


static wnn_status
oom(wnn_check *c)
{
    wnn_fail(c, NULL, "out of memory");
    c->err->kind = WNN_OUT_OF_MEMORY;
    return WNN_ERR;
}

/* ---- concat -- #api-mlgraphbuilder-concat --------------------------------- */
wnn_status
wnn_check_concat(wnn_check *c)
{
    const wnn_concat_options *o = c->options;
    char arg[24], s1[96], s2[96];
    if (c->n_in == 0 || c->n_in > VALID_TENSOR_COUNT) {
        return wnn_fail(c, "inputs", "%u operands is not a valid tensor count "
                                     "(1 to %u)", c->n_in, VALID_TENSOR_COUNT);
    }
    const wnn_desc *first = &c->in[0];
    if (o->axis >= first->rank) {
        return wnn_fail(c, "axis", "%u is not less than the inputs' rank %u",
                        o->axis, first->rank);
    }
    wnn_desc d = *first;
    uint64_t size = first->shape[o->axis];
    for (uint32_t i = 1; i < c->n_in; i++) {
        const wnn_desc *in = &c->in[i];
        snprintf(arg, sizeof(arg), "inputs[%u]", i);
        if (in->dtype != first->dtype) {
            return wnn_fail(c, arg, "data type %s differs from inputs[0]'s %s",
                            wnn_dtype_name(in->dtype),
                            wnn_dtype_name(first->dtype));
        }
        if (in->rank != first->rank) {
            return wnn_fail(c, arg, "rank %u differs from inputs[0]'s rank %u",
                            in->rank, first->rank);
        }
        for (uint32_t k = 0; k < in->rank; k++) {
            if (k != o->axis && in->shape[k] != first->shape[k]) {
                return wnn_fail(
                    c, arg,
                    "shape %s differs from inputs[0]'s shape %s in dimension "
                    "%u (only dimension %u, the axis, may differ)",
                    wnn_shape_str(in->shape, in->rank, s1, sizeof(s1)),
                    wnn_shape_str(first->shape, first->rank, s2, sizeof(s2)),
                    k, o->axis);
            }
        }
        size += in->shape[o->axis]; /* <= 8192 * 2^32: no overflow */
        if (size > WNN_MAX_DIM) {
            return wnn_fail(c, arg, "the concatenated dimension %u exceeds "
                                    "%u", o->axis, WNN_MAX_DIM);
        }
    }
    d.shape[o->axis] = (uint32_t)size;
    c->out[0] = d;
    c->n_out = 1;
    return WNN_OK;
}

/* ---- expand -- #api-mlgraphbuilder-expand --------------------------------- */
wnn_status
wnn_check_expand(wnn_check *c)
{
    const wnn_expand_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    const wnn_u32_list *ns = &o->new_shape;
    char s1[96], s2[96];
    if (need_sequence(c, ns, "newShape") != WNN_OK) {
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < ns->n; i++) {
        if (ns->v[i] == 0 || ns->v[i] > WNN_MAX_DIM) {
            return wnn_fail(c, "newShape",
                            "dimension %u (%u) is not a valid dimension", i,
                            ns->v[i]);
        }
    }
    /* unidirectionally broadcasting input's shape and newShape */
    bool ok = ns->n >= in->rank;
    for (uint32_t i = 0; ok && i < in->rank; i++) {
        uint32_t from = in->shape[i], to = ns->v[ns->n - in->rank + i];
        ok = from == to || from == 1;
    }
    if (!ok) {
        s2[0] = '\0';
        if (ns->n <= WNN_MAX_RANK) {
            wnn_shape_str(ns->v, ns->n, s2, sizeof(s2));
        } else {
            snprintf(s2, sizeof(s2), "(rank %u)", ns->n);
        }
        return wnn_fail(c, "newShape",
                        "input shape %s is not unidirectionally broadcastable "
                        "to %s",
                        wnn_shape_str(in->shape, in->rank, s1, sizeof(s1)), s2);
    }
    const wnn_op_limits *l = wnn_op_get(c->op)->limits;
    if (ns->n < l->e[1].rank_min || ns->n > l->e[1].rank_max) {
        return wnn_fail(c, "newShape", "output rank %u is not in [%u, %u]",
                        ns->n, l->e[1].rank_min, l->e[1].rank_max);
    }
    c->out[0].dtype = in->dtype;
    c->out[0].rank = ns->n;
    for (uint32_t i = 0; i < ns->n; i++) {
        c->out[0].shape[i] = ns->v[i];
    }
    c->n_out = 1;
    return WNN_OK;
}

/* ---- transpose -- #api-mlgraphbuilder-transpose --------------------------- */
wnn_status
wnn_check_transpose(wnn_check *c)
{
    wnn_transpose_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0];
    if (!r->permutation.present) {
        uint32_t *p = wnn_check_list(c, &r->permutation, in->rank);
        if (!p) {
            return oom(c);
        }
        for (uint32_t i = 0; i < in->rank; i++) {
            p[i] = in->rank - 1 - i;
        }
    } else if (need_rank_items(c, &r->permutation, "options.permutation") !=
                   WNN_OK ||
               need_axes(c, &r->permutation, "options.permutation") != WNN_OK) {
        return WNN_ERR;
    }
    c->out[0].dtype = in->dtype;
    c->out[0].rank = in->rank;
    for (uint32_t i = 0; i < in->rank; i++) {
        c->out[0].shape[i] = in->shape[r->permutation.v[i]];
    }
    c->n_out = 1;
    return WNN_OK;
}

/* ---- slice -- #api-mlgraphbuilder-slice ----------------------------------- */
wnn_status
wnn_check_slice(wnn_check *c)
{
    wnn_slice_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0];
    if (need_sequence(c, &r->starts, "starts") != WNN_OK ||
        need_sequence(c, &r->sizes, "sizes") != WNN_OK ||
        need_sequence(c, &r->strides, "options.strides") != WNN_OK) {
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < r->sizes.n; i++) {
        if (r->sizes.v[i] == 0) {
            return wnn_fail(c, "sizes", "item %u is 0", i);
        }
    }
    if (need_rank_items(c, &r->starts, "starts") != WNN_OK ||
        need_rank_items(c, &r->sizes, "sizes") != WNN_OK) {
        return WNN_ERR;
    }
    if (r->strides.present) {
        if (need_rank_items(c, &r->strides, "options.strides") != WNN_OK) {
            return WNN_ERR;
        }
    } else {
        uint32_t *s = wnn_check_list(c, &r->strides, in->rank);
        if (!s) {
            return oom(c);
        }
        for (uint32_t i = 0; i < in->rank; i++) {
            s[i] = 1;
        }
    }
    c->out[0].dtype = in->dtype;
    c->out[0].rank = in->rank;
    for (uint32_t i = 0; i < in->rank; i++) {
        uint64_t size = in->shape[i], start = r->starts.v[i];
        uint64_t len = r->sizes.v[i], stride = r->strides.v[i];
        if (stride < 1) {
            return wnn_fail(c, "options.strides", "item %u is 0 (strides must "
                                                  "be at least 1)", i);
        }
        if (start > size) {
            return wnn_fail(c, "starts",
                            "item %u (%llu) is greater than the input's "
                            "dimension %llu", i, (unsigned long long)start,
                            (unsigned long long)size);
        }
        if (start + len > size) {
            return wnn_fail(c, "sizes",
                            "starts[%u] + sizes[%u] = %llu exceeds the input's "
                            "dimension %llu", i, i,
                            (unsigned long long)(start + len),
                            (unsigned long long)size);
        }
        c->out[0].shape[i] = (uint32_t)(len / stride + (len % stride != 0));
    }
    c->n_out = 1;
    return WNN_OK;
}

/* ---- split -- #api-mlgraphbuilder-split ----------------------------------- */
wnn_status
wnn_check_split(wnn_check *c)
{
    const wnn_split_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    const wnn_u32_list *sp = &o->splits;
    if (o->axis >= in->rank) {
        return wnn_fail(c, "options.axis",
                        "%u is not less than the input's rank %u", o->axis,
                        in->rank);
    }
    uint32_t dim = in->shape[o->axis], count;
    if (!sp->present) {
        return wnn_fail(c, "splits", "is required");
    }
    if (sp->scalar) {
        count = sp->v[0];
        if (count == 0 || count > VALID_TENSOR_COUNT) {
            return wnn_fail(c, "splits", "%u is not a valid tensor count (1 "
                                         "to %u)", count, VALID_TENSOR_COUNT);
        }
        if (count > WNN_MAX_OUTPUTS) {
            return wnn_fail(c, "splits",
                            "%u outputs exceed this implementation's maximum "
                            "of %u", count, WNN_MAX_OUTPUTS);
        }
        if (dim % count != 0) {
            return wnn_fail(c, "splits",
                            "%u does not evenly divide the input's dimension "
                            "%u (axis %u)", count, dim, o->axis);
        }
    } else {
        count = sp->n;
        if (count == 0 || count > VALID_TENSOR_COUNT) {
            return wnn_fail(c, "splits", "%u items is not a valid tensor count "
                                         "(1 to %u)", count, VALID_TENSOR_COUNT);
        }
        if (count > WNN_MAX_OUTPUTS) {
            return wnn_fail(c, "splits",
                            "%u outputs exceed this implementation's maximum "
                            "of %u", count, WNN_MAX_OUTPUTS);
        }
        uint64_t sum = 0;
        for (uint32_t i = 0; i < count; i++) {
            if (sp->v[i] == 0) {
                return wnn_fail(c, "splits", "item %u is 0", i);
            }
            sum += sp->v[i];
        }
        if (sum != dim) {
            return wnn_fail(c, "splits",
                            "the sizes add up to %llu, not to the input's "
                            "dimension %u (axis %u)", (unsigned long long)sum,
                            dim, o->axis);
        }
    }
    for (uint32_t i = 0; i < count; i++) {
        c->out[i] = *in;
        c->out[i].shape[o->axis] = sp->scalar ? dim / count : sp->v[i];
    }
    c->n_out = count;
    return WNN_OK;
}

/* ---- tile -- #api-mlgraphbuilder-tile ------------------------------------- */
wnn_status
wnn_check_tile(wnn_check *c)
{
    const wnn_tile_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    if (need_rank_items(c, &o->repetitions, "repetitions") != WNN_OK) {
        return WNN_ERR;
    }
    for (uint32_t i = 0; i < in->rank; i++) {
        if (o->repetitions.v[i] == 0) {
            return wnn_fail(c, "repetitions", "item %u is 0", i);
        }
    }
    c->out[0] = *in;
    for (uint32_t i = 0; i < in->rank; i++) {
        uint64_t d = (uint64_t)in->shape[i] * o->repetitions.v[i];
        if (d > WNN_MAX_DIM) {
            return wnn_fail(c, "repetitions",
                            "dimension %u: %u * %u = %llu is not a valid "
                            "dimension", i, in->shape[i], o->repetitions.v[i],
                            (unsigned long long)d);
        }
        c->out[0].shape[i] = (uint32_t)d;
    }
    c->n_out = 1;
    return WNN_OK;
}

/* ---- reverse -- #api-mlgraphbuilder-reverse-method ------------------------ */
wnn_status
wnn_check_reverse(wnn_check *c)
{
    wnn_reverse_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0];
    if (!r->axes.present) {
        uint32_t *a = wnn_check_list(c, &r->axes, in->rank);
        if (!a) {
            return oom(c);
        }
        for (uint32_t i = 0; i < in->rank; i++) {
            a[i] = i;
        }
    } else if (need_sequence(c, &r->axes, "options.axes") != WNN_OK ||
               need_axes(c, &r->axes, "options.axes") != WNN_OK) {
        return WNN_ERR;
    }
    c->out[0] = *in;
    c->n_out = 1;
    return WNN_OK;
}

/* ---- triangular -- #api-mlgraphbuilder-triangular ------------------------- */
wnn_status
wnn_check_triangular(wnn_check *c)
{
    /* the rank (2 to N) is checked against the limits table */
    c->out[0] = c->in[0];
    c->n_out = 1;
    return WNN_OK;
}

/* ---- pad -- #api-mlgraphbuilder-pad --------------------------------------- */
wnn_status
wnn_check_pad(wnn_check *c)
{
    const wnn_pad_options *o = c->options;
    const wnn_desc *in = &c->in[0];
    if (need_sequence(c, &o->beginning_padding, "beginningPadding") != WNN_OK ||
        need_sequence(c, &o->ending_padding, "endingPadding") != WNN_OK) {
        return WNN_ERR;
    }
    if (o->beginning_padding.n != in->rank || o->ending_padding.n != in->rank) {
        return wnn_fail(c, o->beginning_padding.n != in->rank
                               ? "beginningPadding" : "endingPadding",
                        "beginningPadding has %u items and endingPadding %u; "
                        "both must equal the input's rank %u",
                        o->beginning_padding.n, o->ending_padding.n, in->rank);
    }
    c->out[0] = *in;
    for (uint32_t i = 0; i < in->rank; i++) {
        uint64_t d = in->shape[i];
        uint64_t b = o->beginning_padding.v[i], e = o->ending_padding.v[i];
        if (o->mode == WNN_PAD_REFLECTION) {
            if (b >= d) {
                return wnn_fail(c, "beginningPadding",
                                "item %u (%llu) must be less than the input's "
                                "dimension %llu for reflection padding", i,
                                (unsigned long long)b, (unsigned long long)d);
            }
            if (e >= d) {
                return wnn_fail(c, "endingPadding",
                                "item %u (%llu) must be less than the input's "
                                "dimension %llu for reflection padding", i,
                                (unsigned long long)e, (unsigned long long)d);
            }
        }
        uint64_t out = d + b + e; /* < 3 * 2^32 */
        if (out > WNN_MAX_DIM) {
            return wnn_fail(c, "endingPadding",
                            "dimension %u: %llu + %llu + %llu = %llu is not a "
                            "valid dimension", i, (unsigned long long)b,
                            (unsigned long long)d, (unsigned long long)e,
                            (unsigned long long)out);
        }
        c->out[0].shape[i] = (uint32_t)out;
    }
    c->n_out = 1;
    return WNN_OK;
}
