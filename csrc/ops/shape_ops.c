/* shape_ops.c -- checkers of cast, reshape and where. */
#include "ops_internal.h"

/* #api-mlgraphbuilder-cast */
wnn_status
wnn_check_cast(wnn_check *c)
{
    const wnn_cast_options *o = c->options;
    c->out[0] = c->in[0];
    c->out[0].dtype = o->data_type;
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-reshape-method */
wnn_status
wnn_check_reshape(wnn_check *c)
{
    const wnn_reshape_options *o = c->options;
    const wnn_op_limits *l = wnn_op_get(c->op)->limits;
    uint64_t count = 1, in_count = 1;
    if (o->new_shape.n < l->e[1].rank_min || o->new_shape.n > l->e[1].rank_max) {
        return wnn_fail(c, "newShape", "rank %u is not in [%u, %u]",
                        o->new_shape.n, l->e[1].rank_min, l->e[1].rank_max);
    }
    for (uint32_t i = 0; i < o->new_shape.n; i++) {
        uint32_t d = o->new_shape.v[i];
        if (d == 0 || d > WNN_MAX_DIM) {
            return wnn_fail(c, "newShape",
                            "dimension %u (%u) is not a valid dimension", i, d);
        }
        count *= d; /* < 2^31 * 2^31 per step after the check below */
        if (count > WNN_MAX_DIM) {
            return wnn_fail(c, "newShape",
                            "element count exceeds the largest valid "
                            "dimension");
        }
    }
    for (uint32_t i = 0; i < c->in[0].rank; i++) {
        in_count *= c->in[0].shape[i];
    }
    if (count != in_count) {
        return wnn_fail(c, "newShape",
                        "element count %llu differs from the input's %llu",
                        (unsigned long long)count,
                        (unsigned long long)in_count);
    }
    c->out[0].dtype = c->in[0].dtype;
    c->out[0].rank = o->new_shape.n;
    for (uint32_t i = 0; i < o->new_shape.n; i++) {
        c->out[0].shape[i] = o->new_shape.v[i];
    }
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-where */
wnn_status
wnn_check_where(wnn_check *c)
{
    char s1[96], s2[96];
    uint32_t tmp[WNN_MAX_RANK], rt;
    wnn_desc *o = &c->out[0];
    if (wnn_check_same_dtype(c, 1, 2, "trueValue", "falseValue") != WNN_OK) {
        return WNN_ERR;
    }
    if (wnn_broadcast_shapes(c->in[1].shape, c->in[1].rank, c->in[2].shape,
                             c->in[2].rank, tmp, &rt) != 0) {
        return wnn_fail(c, "falseValue",
                        "shape %s does not broadcast with trueValue's shape %s",
                        wnn_shape_str(c->in[2].shape, c->in[2].rank, s1,
                                      sizeof(s1)),
                        wnn_shape_str(c->in[1].shape, c->in[1].rank, s2,
                                      sizeof(s2)));
    }
    if (wnn_broadcast_shapes(c->in[0].shape, c->in[0].rank, tmp, rt, o->shape,
                             &o->rank) != 0) {
        return wnn_fail(c, "condition",
                        "shape %s does not broadcast with the values' shape %s",
                        wnn_shape_str(c->in[0].shape, c->in[0].rank, s1,
                                      sizeof(s1)),
                        wnn_shape_str(tmp, rt, s2, sizeof(s2)));
    }
    o->dtype = c->in[1].dtype;
    c->n_out = 1;
    return WNN_OK;
}
