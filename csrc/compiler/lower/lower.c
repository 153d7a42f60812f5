/* lower.c -- wnn_lower_graph (lower.h): every node of the plan's order to
 * its family's parameter block. */
#include <stdlib.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

wnn_status
wnn_lower_graph(const wnn_graph *g, wnn_lowered **out, wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    wnn_lowered *lw = calloc(ir->n_nodes + 1, sizeof(wnn_lowered));
    if (!lw) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    for (uint32_t pos = 0; pos < g->plan.n_order; pos++) {
        uint32_t id = g->plan.order[pos];
        const wnn_node *node = &ir->nodes[id];
        if (wnn_lower_is_broadcast(node->op) && node->n_in >= 2 &&
            node->n_in <= WNN_BCAST_MAX_OPERANDS) {
            const wnn_desc *in[WNN_BCAST_MAX_OPERANDS];
            for (uint32_t j = 0; j < node->n_in; j++) {
                in[j] = &ir->operands[node->in[j]].desc;
            }
            lw[id].kind = WNN_LOWER_BROADCAST;
            wnn_lower_broadcast(&lw[id].u.bcast,
                                &ir->operands[node->out[0]].desc, in,
                                node->n_in);
        } else if (node->op == WNN_OP_CONV2D ||
                   node->op == WNN_OP_CONV_TRANSPOSE2D) {
            lw[id].kind = WNN_LOWER_CONV;
            wnn_lower_conv(&lw[id].u.conv, node,
                           &ir->operands[node->in[0]].desc,
                           &ir->operands[node->in[1]].desc,
                           &ir->operands[node->out[0]].desc);
        }
    }
    *out = lw;
    return WNN_OK;
}
