/* introspect.c -- the read-only views of webnn_introspect.h. */
#include <stdlib.h>
#include <string.h>

#include "../compiler/fuse.h"
#include "internal.h"
#include "webnn_introspect.h"

static bool
view_of(const wnn_ir *ir, uint32_t id, wnn_operand_view *out)
{
    if (!ir || id >= ir->n_operands) {
        return false;
    }
    const wnn_operand *o = &ir->operands[id];
    memset(out, 0, sizeof(*out));
    out->desc = o->desc;
    switch (o->kind) {
    case WNN_OPERAND_INPUT:
        out->kind = WNN_ORIGIN_INPUT;
        out->name = o->name;
        break;
    case WNN_OPERAND_CONSTANT:
        out->kind = WNN_ORIGIN_CONSTANT;
        out->constant_bytes =
            (o->data || o->tensor) ? wnn_desc_bytes(&o->desc) : 0;
        break;
    default:
        out->kind = WNN_ORIGIN_NODE;
        out->node = o->node;
        if (o->node < ir->n_nodes) {
            out->op = ir->nodes[o->node].op;
            out->label = ir->nodes[o->node].label;
        }
        break;
    }
    return true;
}

bool
wnn_builder_operand_view(const wnn_builder *b, uint32_t id,
                         wnn_operand_view *out)
{
    return b && view_of(b->ir, id, out);
}

uint32_t
wnn_graph_num_operands(const wnn_graph *g)
{
    return g && g->ir ? g->ir->n_operands : 0;
}

bool
wnn_graph_operand_view(const wnn_graph *g, uint32_t id, wnn_operand_view *out)
{
    return g && view_of(g->ir, id, out);
}

uint32_t
wnn_graph_num_nodes(const wnn_graph *g)
{
    return g && g->ir ? g->ir->n_nodes : 0;
}

bool
wnn_graph_node_view(const wnn_graph *g, uint32_t id, wnn_node_view *out)
{
    if (!g || !g->ir || id >= g->ir->n_nodes) {
        return false;
    }
    const wnn_node *n = &g->ir->nodes[id];
    out->op = n->op;
    out->label = n->label;
    out->n_in = n->n_in;
    out->n_out = n->n_out;
    out->in = n->in;
    out->out = n->out;
    return true;
}

uint32_t
wnn_graph_input_operand(const wnn_graph *g, uint32_t i)
{
    return i < g->n_inputs ? g->inputs[i].operand : UINT32_MAX;
}

uint32_t
wnn_graph_output_operand(const wnn_graph *g, uint32_t i)
{
    return i < g->n_outputs ? g->outputs[i].operand : UINT32_MAX;
}

uint32_t
wnn_graph_plan_length(const wnn_graph *g)
{
    return g ? g->plan.n_order : 0;
}

uint32_t
wnn_graph_plan_node(const wnn_graph *g, uint32_t i)
{
    return g && i < g->plan.n_order ? g->plan.order[i] : UINT32_MAX;
}

uint64_t
wnn_graph_plan_arena_bytes(const wnn_graph *g)
{
    return g ? g->plan.arena_bytes : 0;
}

bool
wnn_graph_fuses(const wnn_graph *g)
{
    return g && g->ctx && g->ctx->backend &&
           (g->ctx->backend->fuses & (WNN_FUSE_EPILOGUE | WNN_FUSE_ELTWISE |
                                        WNN_FUSE_QDQ | WNN_FUSE_ATTENTION));
}

int
wnn_graph_fusion_groups(const wnn_graph *g, uint32_t *group_of)
{
    if (!g || !g->ir || !g->plan.order) {
        return -1;
    }
    if (wnn_graph_fuses(g)) { /* the chains the pipeline fused */
        for (uint32_t i = 0; i < g->ir->n_nodes; i++) {
            uint32_t k = g->fusion.chain_of ? g->fusion.chain_of[i] : 0;
            /* a chain of one node (a projection made a chain to run a
             * conv pair) is no fused group */
            group_of[i] = k && g->fusion.chains[k - 1].producer ==
                                   g->fusion.chains[k - 1].last &&
                                   !g->fusion.chains[k - 1].in_scale
                              ? 0 : k;
        }
        return (int)g->fusion.n_chains;
    }
    wnn_fusion f;
    wnn_error err;
    memset(&f, 0, sizeof(f));
    if (wnn_fusion_find(g, WNN_FUSE_EPILOGUE | WNN_FUSE_ELTWISE, &f, &err) !=
        WNN_OK) {
        return -1;
    }
    for (uint32_t i = 0; i < g->ir->n_nodes; i++) {
        group_of[i] = f.chain_of ? f.chain_of[i] : 0;
    }
    int n = (int)f.n_chains;
    wnn_fusion_free(&f);
    return n;
}

uint32_t
wnn_graph_num_steps(const wnn_graph *g)
{
    return g && g->ir ? g->schedule.n_steps : 0;
}

uint32_t
wnn_graph_num_run_steps(const wnn_graph *g)
{
    return g && g->ir ? g->schedule.n_run : 0;
}

bool
wnn_graph_step_view(const wnn_graph *g, uint32_t i, wnn_step_view *out)
{
    static const char *const kinds[] = {
        [WNN_STEP_NODE] = "node", [WNN_STEP_EPILOGUE] = "epilogue",
        [WNN_STEP_ELTWISE] = "eltwise", [WNN_STEP_QDQ] = "qdq",
        [WNN_STEP_CONV_PAIR] = "conv_pair", [WNN_STEP_ATTENTION] = "attention",
    };
    if (i >= wnn_graph_num_steps(g)) {
        return false;
    }
    const wnn_step *s = &g->schedule.steps[i];
    *out = (wnn_step_view){ .kind = kinds[s->kind], .op = s->op,
                            .node = s->node, .at = s->at,
                            .n_nodes = s->n_nodes, .nodes = s->nodes,
                            .n_in = s->n_in, .in = s->in,
                            .result = s->result, .addend = s->addend,
                            .pre_e = s->pre_e, .pre_d = s->pre_d };
    return true;
}

const char *
wnn_context_backend_name(const wnn_context *c)
{
    return c && c->backend && c->backend->iface ? c->backend->iface->name
                                                : "none";
}

int
wnn_context_threads(const wnn_context *c)
{
    const wnn_backend *be = c ? c->backend : NULL;
    return be && be->iface->threads ? be->iface->threads((wnn_backend *)be)
                                    : 0;
}
