/* graph.c -- build(): the spec's output checks, reachability from the
 * outputs, topological order, then the compiler pipeline
 * (core/compile.c: fuse, plan, the backend's compile).  Also MLGraph's
 * accessors and teardown (its reference count is lifetime.c's). */
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "internal.h"

/* The graph's teardown, run by lifetime.c when its last reference goes
 * (g->free). */
static void
graph_free(wnn_graph *g)
{
    wnn_compiled_graph_free(g);
    wnn_ir_free(g->ir);
    free(g->inputs);
    free(g->outputs);
    wnn_strmap_free(&g->input_index);
    wnn_strmap_free(&g->output_index);
    wnn_context_release(g->ctx);
    free(g);
}

uint32_t wnn_graph_num_inputs(const wnn_graph *g) { return g->n_inputs; }
uint32_t wnn_graph_num_outputs(const wnn_graph *g) { return g->n_outputs; }
const char *wnn_graph_input_name(const wnn_graph *g, uint32_t i) { return g->inputs[i].name; }
const wnn_desc *wnn_graph_input_desc(const wnn_graph *g, uint32_t i) { return &g->inputs[i].desc; }
const char *wnn_graph_output_name(const wnn_graph *g, uint32_t i) { return g->outputs[i].name; }
const wnn_desc *wnn_graph_output_desc(const wnn_graph *g, uint32_t i) { return &g->outputs[i].desc; }
wnn_context *wnn_graph_context(const wnn_graph *g) { return g->ctx; }

/* Unpin the constant tensors of operands [0, end) (reachable ones only
 * when `reach` is given). */
static void
unpin_constants(const wnn_ir *ir, const uint8_t *reach, uint32_t end)
{
    for (uint32_t i = 0; i < end; i++) {
        const wnn_operand *o = &ir->operands[i];
        if (o->tensor && (!reach || reach[i])) {
            wnn_tensor_unpin(o->tensor);
        }
    }
}

/* The spec's checks of build()'s outputs; `seen` finds a name given twice
 * in linear time. */
static wnn_status
check_outputs(const wnn_ir *ir, uint32_t n_out, const char *const *names,
              const uint32_t *ids, wnn_strmap *seen, wnn_error *err)
{
    for (uint32_t i = 0; i < n_out; i++) {
        if (!names[i] || !names[i][0]) {
            return wnn_failk(err, WNN_TYPE_ERROR, "build", NULL, "outputs",
                             "an output name is empty");
        }
        int r = wnn_strmap_put(seen, names[i], i);
        if (r != 0) {
            return r < 0 ? wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL,
                                     NULL, "out of memory")
                         : wnn_failk(err, WNN_TYPE_ERROR, "build", NULL,
                                     "outputs", "output '%s' is named twice",
                                     names[i]);
        }
        if (ids[i] >= ir->n_operands) {
            return wnn_failk(err, WNN_TYPE_ERROR, "build", NULL, "outputs",
                             "output '%s' is not an operand of this builder",
                             names[i]);
        }
        wnn_operand_kind k = ir->operands[ids[i]].kind;
        if (k != WNN_OPERAND_NODE) {
            return wnn_failk(err, WNN_TYPE_ERROR, "build", NULL, "outputs",
                             "output '%s' is an %s, not the result of an "
                             "operator (use identity())", names[i],
                             k == WNN_OPERAND_INPUT ? "input" : "constant");
        }
    }
    return WNN_OK;
}

/* #api-mlgraphbuilder-build */
/* Reachability (reach: the operands the outputs depend on) and the
 * topological order of the nodes they need (iterative post-order DFS;
 * state and stack: scratch of n_nodes + 1 and 2 (n_nodes + 1) zeroed and
 * any); the number of nodes in order. */
static uint32_t
topo_order(const wnn_ir *ir, uint32_t n_out, const uint32_t *ids,
           uint8_t *state, uint32_t *stack, uint8_t *reach, uint32_t *order)
{
    uint32_t n_order = 0;
    for (uint32_t i = 0; i < n_out; i++) {
        reach[ids[i]] = 1;
        uint32_t root = ir->operands[ids[i]].node;
        if (state[root]) {
            continue;
        }
        uint32_t sp = 0;
        stack[sp++] = root;
        state[root] = 1;
        while (sp) {
            uint32_t n = stack[sp - 1];
            bool pushed = false;
            const wnn_node *node = &ir->nodes[n];
            for (uint32_t j = 0; j < node->n_in; j++) {
                const wnn_operand *o = &ir->operands[node->in[j]];
                reach[node->in[j]] = 1;
                if (o->kind == WNN_OPERAND_NODE && !state[o->node]) {
                    state[o->node] = 1;
                    stack[sp++] = o->node;
                    pushed = true;
                    break;
                }
            }
            if (!pushed) {
                sp--;
                if (state[n] == 1) {
                    state[n] = 2;
                    order[n_order++] = n;
                }
            }
        }
    }
    return n_order;
}

/* The graph's named inputs (those the outputs reach) and outputs, and
 * their indexes by name; false: out of memory. */
static bool
name_inputs_outputs(wnn_graph *g, wnn_ir *ir, const uint8_t *reach,
                    uint32_t n_out, const char *const *names,
                    const uint32_t *ids)
{
    for (uint32_t i = 0; i < ir->n_inputs; i++) {
        uint32_t id = ir->inputs[i];
        if (reach[id]) {
            wnn_named *nm = &g->inputs[g->n_inputs++];
            nm->name = ir->operands[id].name;
            nm->operand = id;
            nm->desc = ir->operands[id].desc;
        }
    }
    bool oom = false;
    for (uint32_t i = 0; i < n_out; i++) {
        wnn_named *nm = &g->outputs[g->n_outputs++];
        nm->name = wnn_arena_strdup(&ir->arena, names[i]);
        nm->operand = ids[i];
        nm->desc = ir->operands[ids[i]].desc;
        oom |= !nm->name || wnn_strmap_put(&g->output_index, nm->name, i) < 0;
    }
    for (uint32_t i = 0; i < g->n_inputs; i++) {
        oom |= wnn_strmap_put(&g->input_index, g->inputs[i].name, i) < 0;
    }
    return !oom;
}

/* Unreachable constants are dropped now. */
static void
drop_unreachable_constants(wnn_ir *ir, const uint8_t *reach)
{
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        wnn_operand *o = &ir->operands[i];
        if (!reach[i] && o->kind == WNN_OPERAND_CONSTANT) {
            wnn_operand_drop_data(o);
            if (o->tensor) {
                wnn_tensor_release(o->tensor);
                o->tensor = NULL;
            }
        }
    }
}

wnn_status
wnn_builder_build(wnn_builder *b, uint32_t n_out, const char *const *names,
                  const uint32_t *ids, wnn_graph **out, wnn_error *err)
{
    if (b->built || !b->ir) {
        return wnn_failk(err, WNN_INVALID_STATE, "build", NULL, NULL,
                         "the builder has already built a graph");
    }
    if (wnn_context_is_lost(b->ctx)) {
        return wnn_failk(err, WNN_INVALID_STATE, "build", NULL, NULL,
                         "the context is lost");
    }
    if (n_out == 0) {
        return wnn_failk(err, WNN_TYPE_ERROR, "build", NULL, "outputs",
                         "no outputs were given");
    }
    wnn_ir *ir = b->ir;
    wnn_strmap seen = { 0 };
    wnn_status st = check_outputs(ir, n_out, names, ids, &seen, err);
    wnn_strmap_free(&seen);
    if (st != WNN_OK) {
        return st;
    }

    /* Reachability and topological order (iterative post-order DFS). */
    uint8_t *state = calloc(ir->n_nodes + 1, 1);
    uint8_t *reach = calloc(ir->n_operands + 1, 1);
    uint32_t *order = malloc(sizeof(uint32_t) * (ir->n_nodes + 1));
    uint32_t *stack = malloc(sizeof(uint32_t) * (ir->n_nodes + 1) * 2);
    wnn_graph *g = calloc(1, sizeof(*g));
    if (!state || !reach || !order || !stack || !g) {
        free(state);
        free(reach);
        free(order);
        free(stack);
        free(g);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    uint32_t n_order = topo_order(ir, n_out, ids, state, stack, reach, order);
    free(state);
    free(stack);

    /* A constant made from a tensor that is destroyed has no data.  The
     * tensors are pinned while the graph is compiled (compile copies from
     * their storage with the GIL released): a destroy() from another thread
     * meanwhile marks them destroyed but frees nothing until unpinned. */
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        wnn_operand *o = &ir->operands[i];
        if (reach[i] && o->tensor && !wnn_tensor_pin(o->tensor)) {
            unpin_constants(ir, reach, i);
            free(reach);
            free(order);
            free(g);
            return wnn_failk(err, WNN_TYPE_ERROR, "build", NULL, "constant",
                             "a constant's tensor was destroyed");
        }
    }

    atomic_init(&g->refs, 1);
    g->free = graph_free;
    atomic_init(&g->destroyed, false);
    g->ctx = b->ctx;
    wnn_context_retain(b->ctx);
    g->ir = ir;
    g->plan.order = order;
    g->plan.n_order = n_order;
    g->outputs = calloc(n_out, sizeof(wnn_named));
    g->inputs = calloc(ir->n_inputs + 1, sizeof(wnn_named));
    if (!g->outputs || !g->inputs) {
        unpin_constants(ir, reach, ir->n_operands);
        free(reach);
        g->ir = NULL;
        graph_free(g);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory");
    }
    bool oom = !name_inputs_outputs(g, ir, reach, n_out, names, ids);
    drop_unreachable_constants(ir, reach);
    free(reach);
    /* The builder has built: its IR now belongs to the graph. */
    b->built = true;
    b->ir = NULL;

    if (oom) {
        st = wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                       "out of memory");
    } else if (wnn_compile_graph(g, err) != WNN_OK) {
        st = WNN_ERR;
    }
    /* every constant tensor left in the IR is a reachable, pinned one */
    unpin_constants(ir, NULL, ir->n_operands);
    if (st != WNN_OK) {
        graph_free(g);
        return WNN_ERR;
    }
    *out = g;
    return WNN_OK;
}
