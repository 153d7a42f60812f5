/* compile.c -- the one road from a built graph to something a backend can
 * execute, the same for every backend, owned by the core (graph.c calls
 * wnn_compile_graph after build()'s checks and the topological order):
 *
 *   0. layout   compiler/layout.c: on a backend that declares WNN_PLAN_NHWC,
 *               the convolutions of an nchw graph run in nhwc, with
 *               transposes at the edges of the nhwc regions (the IR and the
 *               order are rewritten)
 *   1. fuse     compiler/fuse.c finds the chains the backend declares it
 *               runs fused (wnn_backend.fuses, a capability: data, not code
 *               in the backend; which conv pairs it links, its conv_pair
 *               answers from their geometry) -> g->fusion
 *   2. plan     compiler/plan.c: where every operand lives, arena offsets
 *               (with the fused chains' lifetimes when there are chains;
 *               what a chain never stores has no storage)
 *               -> g->plan
 *   3. lower    compiler/lower/: each node to a typed, resolved parameter
 *               block the backends' kernels read, chosen by the node's
 *               family (ops.def) -> g->lowered, one per node id
 *   4. schedule compiler/schedule.c: the steps a backend runs, in order
 *               (backend/steps.h): a node, an epilogue chain at its last
 *               node, an element-wise run, a quantized region, a conv
 *               pair with the chains it runs inside; aliased reshapes and
 *               a chain's other nodes are no step -> g->schedule
 *   5. compile  backend->compile: the backend prepares each step's state
 *               once (packed weights, cuDNN plans); execute() is one loop
 *               over the steps.
 *
 * Backends never call into compiler/: they read g->schedule (and g->plan's
 * slots, g->lowered, g->fusion's chains that the steps point to). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../compiler/fuse.h"
#include "../compiler/layout.h"
#include "../compiler/lower/lower.h"
#include "../compiler/schedule.h"

/* Every operator of the graph costs a pass over its operands (the trait
 * WNN_TR_CHEAP of its ops.def row: the element-wise ones, and the
 * normalizations -- softmax, layer / instance / batch normalization: a
 * group's statistics and its write, the input read twice while it is in
 * cache): the timeline's merged reads run such a graph again instead of
 * keeping its output -- a layerNormalization of 16 Mi float32 on 2 threads
 * costs 4.7 ms alone and 7.9 with the read's copy. */
static bool
rerun_cheap(const wnn_graph *g)
{
    if (g->n_outputs != 1 || g->plan.n_copies != 0) {
        return false;
    }
    for (uint32_t i = 0; i < g->plan.n_order; i++) {
        if (!wnn_op_has(g->ir->nodes[g->plan.order[i]].op, WNN_TR_CHEAP)) {
            return false;
        }
    }
    return true;
}

wnn_status
wnn_compile_graph(wnn_graph *g, wnn_error *err)
{
    wnn_backend *be = g->ctx->backend;
    if ((be->fuses & WNN_PLAN_NHWC) && wnn_layout_plan(g, err) != WNN_OK) {
        return WNN_ERR;
    }
    uint32_t chains = be->fuses & (WNN_FUSE_EPILOGUE | WNN_FUSE_ELTWISE |
                                   WNN_FUSE_CONV_PAIR | WNN_FUSE_BN |
                                   WNN_FUSE_QDQ | WNN_FUSE_GATE |
                                   WNN_FUSE_ATTENTION | WNN_FUSE_IN_SCALE |
                                   WNN_FUSE_EPI_PROG);
    if (chains && wnn_fusion_find(g, chains, &g->fusion, err) != WNN_OK) {
        return WNN_ERR;
    }
    g->plan.alias_reshapes = (be->fuses & WNN_PLAN_ALIAS) != 0;
    wnn_status st = g->fusion.n_chains
                        ? wnn_plan_make_fused(g, &g->plan, &g->fusion, err)
                        : wnn_plan_make(g, &g->plan, err);
    if (st != WNN_OK || wnn_lower_graph(g, &g->lowered, err) != WNN_OK ||
        wnn_schedule_make(g, &g->schedule, err) != WNN_OK) {
        return WNN_ERR;
    }
    g->rerun_cheap = rerun_cheap(g);
    uint64_t io = 0;
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        io += wnn_desc_bytes(&g->inputs[i].desc);
    }
    io += g->n_outputs ? wnn_desc_bytes(&g->outputs[0].desc) : 0;
    g->run_inline = g->rerun_cheap && io <= (64u << 10);
    return be->iface->compile(be, g, &g->compiled, err);
}

/* The graph's compiled state (backend first: it may read the plan). */
void
wnn_compiled_graph_free(wnn_graph *g)
{
    if (g->compiled && !wnn_context_forked(g->ctx)) {
        g->ctx->backend->iface->compiled_free(g->ctx->backend, g->compiled);
    }
    g->compiled = NULL;
    wnn_schedule_free(&g->schedule);
    wnn_plan_free(&g->plan);
    wnn_fusion_free(&g->fusion);
    free(g->lowered);
    g->lowered = NULL;
}
