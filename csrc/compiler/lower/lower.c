/* lower.c -- wnn_lower_graph (lower.h): every node of the plan's order to
 * its family's parameter block.  The views of the movement operators (one
 * per output of split, per input of concat) are kept in the same
 * allocation, after the per-node blocks, so that g->lowered is freed by
 * one free(). */
#include <stdlib.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

static bool
is_reduce(wnn_op op)
{
    switch (op) {
    case WNN_OP_REDUCE_L1: case WNN_OP_REDUCE_L2: case WNN_OP_REDUCE_LOG_SUM:
    case WNN_OP_REDUCE_LOG_SUM_EXP: case WNN_OP_REDUCE_MAX:
    case WNN_OP_REDUCE_MEAN: case WNN_OP_REDUCE_MIN:
    case WNN_OP_REDUCE_PRODUCT: case WNN_OP_REDUCE_SUM:
    case WNN_OP_REDUCE_SUM_SQUARE:
        return true;
    default:
        return false;
    }
}

static const wnn_desc *
in_desc(const wnn_ir *ir, const wnn_node *node, uint32_t j)
{
    return &ir->operands[node->in[j]].desc;
}

wnn_status
wnn_lower_graph(const wnn_graph *g, wnn_lowered **out, wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    size_t n_views = 0;
    for (uint32_t pos = 0; pos < g->plan.n_order; pos++) {
        n_views += wnn_lower_view_count(&ir->nodes[g->plan.order[pos]]);
    }
    size_t head = sizeof(wnn_lowered) * ((size_t)ir->n_nodes + 1);
    wnn_lowered *lw = calloc(1, head + sizeof(wnn_view) * n_views);
    if (!lw) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    wnn_view *views = (wnn_view *)((char *)lw + head);
    for (uint32_t pos = 0; pos < g->plan.n_order; pos++) {
        uint32_t id = g->plan.order[pos], axis, nv;
        const wnn_node *node = &ir->nodes[id];
        const wnn_desc *y = &ir->operands[node->out[0]].desc;
        wnn_lowered *l = &lw[id];
        if (wnn_lower_is_broadcast(node->op) && node->n_in >= 2 &&
            node->n_in <= WNN_BCAST_MAX_OPERANDS) {
            const wnn_desc *in[WNN_BCAST_MAX_OPERANDS];
            for (uint32_t j = 0; j < node->n_in; j++) {
                in[j] = in_desc(ir, node, j);
            }
            l->kind = WNN_LOWER_BROADCAST;
            wnn_lower_broadcast(&l->u.bcast, y, in, node->n_in);
        } else if (node->op == WNN_OP_CONV2D ||
                   node->op == WNN_OP_CONV_TRANSPOSE2D) {
            l->kind = WNN_LOWER_CONV;
            wnn_lower_conv(&l->u.conv, node, in_desc(ir, node, 0),
                           in_desc(ir, node, 1), y);
            if (l->u.conv.C % l->u.conv.G != 0) {
                /* convTranspose2d: the builder accepts it as the spec does
                 * (no divisibility step), but the spec defines no result. */
                long long c = l->u.conv.C, grp = l->u.conv.G;
                free(lw);
                return wnn_failk(err, WNN_NOT_SUPPORTED, "convTranspose2d",
                                 node->label, "options.groups",
                                 "input channels %lld / groups %lld is not an "
                                 "integer: the spec's builder accepts it but "
                                 "defines no computation for it",
                                 c, grp);
            }
        } else if (node->op == WNN_OP_AVERAGE_POOL2D ||
                   node->op == WNN_OP_L2_POOL2D ||
                   node->op == WNN_OP_MAX_POOL2D) {
            l->kind = WNN_LOWER_POOL;
            wnn_lower_pool(&l->u.pool, node, in_desc(ir, node, 0), y);
        } else if (is_reduce(node->op)) {
            l->kind = WNN_LOWER_REDUCE;
            wnn_lower_reduce(&l->u.reduce, in_desc(ir, node, 0),
                             ((const wnn_reduce_options *)node->options)
                                 ->axes_mask);
        } else if (node->op == WNN_OP_INSTANCE_NORMALIZATION ||
                   node->op == WNN_OP_LAYER_NORMALIZATION) {
            l->kind = WNN_LOWER_NORM;
            wnn_lower_norm(&l->u.norm, node, in_desc(ir, node, 0));
        } else if (wnn_lower_axis_of(node, &axis)) {
            l->kind = WNN_LOWER_AXIS;
            wnn_lower_axis(&l->u.axis, in_desc(ir, node, 0), axis);
        } else if (wnn_lower_is_gather(node->op)) {
            l->kind = WNN_LOWER_GATHER;
            wnn_lower_gather(&l->u.gather, node, in_desc(ir, node, 0),
                             in_desc(ir, node, 1));
        } else if (node->op == WNN_OP_QUANTIZE_LINEAR ||
                   node->op == WNN_OP_DEQUANTIZE_LINEAR) {
            l->kind = WNN_LOWER_QUANT;
            wnn_lower_quant(&l->u.quant, in_desc(ir, node, 0),
                            in_desc(ir, node, 1));
        } else if (node->op == WNN_OP_MATMUL) {
            l->kind = WNN_LOWER_MATMUL;
            wnn_lower_matmul(&l->u.matmul, in_desc(ir, node, 0),
                             in_desc(ir, node, 1), y);
        } else if (node->op == WNN_OP_GEMM) {
            const wnn_gemm_options *o = node->options;
            l->kind = WNN_LOWER_GEMM;
            wnn_lower_gemm(&l->u.gemm, node, in_desc(ir, node, 0),
                           in_desc(ir, node, 1),
                           o->c ? in_desc(ir, node, o->c - 1) : NULL, y);
        } else if (node->op == WNN_OP_PAD) {
            l->kind = WNN_LOWER_PAD;
            wnn_lower_pad(&l->u.pad, node, in_desc(ir, node, 0));
        } else if ((nv = wnn_lower_view_count(node)) > 0) {
            l->kind = WNN_LOWER_VIEWS;
            wnn_lower_views(views, ir, node);
            l->u.views.n = nv;
            l->u.views.v = views;
            views += nv;
        }
    }
    *out = lw;
    return WNN_OK;
}
