/* lower.c -- wnn_lower_graph (lower.h): every node of the plan's order to
 * its family's parameter block, by the lowering its ops.def row names (the
 * lower column; 0: the node is not lowered).  The views of the movement
 * operators (one per output of split, per input of concat) are kept in the
 * same allocation, after the per-node blocks, so that g->lowered is freed
 * by one free(). */
#include <stdlib.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

/* ops.def's lower column, by operator id */
static const wnn_lower_fn lowerings[WNN_OP_COUNT] = {
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, \
               lower, cpu)                                                \
    [WNN_OP_##ID] = lower,
#include "../../ops/ops.def"
#undef WNN_OP
};

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
        uint32_t id = g->plan.order[pos];
        const wnn_node *node = &ir->nodes[id];
        wnn_lower_fn lower =
            (unsigned)node->op < WNN_OP_COUNT ? lowerings[node->op] : NULL;
        if (!lower) {
            continue;
        }
        if (lower(&lw[id], ir, node, views, err) != WNN_OK) {
            free(lw);
            return WNN_ERR;
        }
        views += wnn_lower_view_count(node);
    }
    *out = lw;
    return WNN_OK;
}
