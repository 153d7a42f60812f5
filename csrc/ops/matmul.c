/* matmul.c -- checkers of matmul and gemm. */
#include "ops_internal.h"

/* #api-mlgraphbuilder-matmul */
wnn_status
wnn_check_matmul(wnn_check *c)
{
    char s1[96], s2[96];
    const wnn_desc *a = &c->in[0], *b = &c->in[1];
    wnn_desc *o = &c->out[0];
    if (wnn_check_same_dtype(c, 0, 1, "a", "b") != WNN_OK) {
        return WNN_ERR;
    }
    /* ranks >= 2 are enforced by the limits table (2 to N) */
    uint32_t cols_a = a->shape[a->rank - 1], rows_a = a->shape[a->rank - 2];
    uint32_t cols_b = b->shape[b->rank - 1], rows_b = b->shape[b->rank - 2];
    if (cols_a != rows_b) {
        return wnn_fail(c, "b",
                        "rows %u do not match a's columns %u", rows_b, cols_a);
    }
    if (wnn_broadcast_shapes(a->shape, a->rank - 2, b->shape, b->rank - 2,
                             o->shape, &o->rank) != 0) {
        return wnn_fail(c, "b",
                        "batch dimensions of %s do not broadcast with a's %s",
                        wnn_shape_str(b->shape, b->rank, s1, sizeof(s1)),
                        wnn_shape_str(a->shape, a->rank, s2, sizeof(s2)));
    }
    o->shape[o->rank++] = rows_a;
    o->shape[o->rank++] = cols_b;
    o->dtype = a->dtype;
    c->n_out = 1;
    return WNN_OK;
}

/* #api-mlgraphbuilder-gemm */
wnn_status
wnn_check_gemm(wnn_check *c)
{
    char s1[96];
    const wnn_gemm_options *opt = c->options;
    const wnn_desc *a = &c->in[0], *b = &c->in[1];
    uint32_t sa[2] = { a->shape[0], a->shape[1] };
    uint32_t sb[2] = { b->shape[0], b->shape[1] };
    if (wnn_check_same_dtype(c, 0, 1, "a", "b") != WNN_OK) {
        return WNN_ERR;
    }
    if (opt->a_transpose) {
        sa[0] = a->shape[1];
        sa[1] = a->shape[0];
    }
    if (opt->b_transpose) {
        sb[0] = b->shape[1];
        sb[1] = b->shape[0];
    }
    if (sa[1] != sb[0]) {
        return wnn_fail(c, "b",
                        "rows %u (after bTranspose) do not match a's columns "
                        "%u (after aTranspose)", sb[0], sa[1]);
    }
    uint32_t out_shape[2] = { sa[0], sb[1] };
    if (opt->c) {
        const wnn_desc *cd = &c->in[opt->c - 1];
        if (wnn_check_same_dtype(c, 0, opt->c - 1, "a", "options.c") != WNN_OK) {
            return WNN_ERR;
        }
        if (!wnn_unidirectional(cd->shape, cd->rank, out_shape, 2)) {
            return wnn_fail(c, "options.c",
                            "shape %s is not unidirectionally broadcastable "
                            "to [%u, %u]",
                            wnn_shape_str(cd->shape, cd->rank, s1, sizeof(s1)),
                            out_shape[0], out_shape[1]);
        }
    }
    c->out[0].dtype = a->dtype;
    c->out[0].rank = 2;
    c->out[0].shape[0] = out_shape[0];
    c->out[0].shape[1] = out_shape[1];
    c->n_out = 1;
    return WNN_OK;
}
