/* schedule.c -- the schedule stage (schedule.h): the plan's order with the
 * fused chains (g->fusion), the aliased reshapes (g->plan.aliased) and the
 * lowered parameters (g->lowered) turned into the steps of
 * backend/steps.h, once, for every backend:
 *
 *   - a node that is not in a chain and not an aliased reshape is a
 *     WNN_STEP_NODE at its own position;
 *   - an aliased reshape (WNN_PLAN_ALIAS) is no step: its output's slot is
 *     its input's storage (plan.c);
 *   - a chain is one step at its last node's position, its other nodes no
 *     step: an epilogue chain runs its producer's kernel (WNN_STEP_EPILOGUE;
 *     with an input scale, WNN_FUSE_IN_SCALE, it reads the mul's x and s),
 *     an element-wise run and a quantized region their nodes
 *     (WNN_STEP_ELTWISE, WNN_STEP_QDQ);
 *   - a chain linked into another (a conv pair, wnn_epilogue.into / pair)
 *     is an inner step, after the run steps, named by the step it runs
 *     inside (pre_e, pre_d: that step is a WNN_STEP_CONV_PAIR). */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "lower/lower.h"
#include "../ops/ops_internal.h"

static const wnn_epilogue *
chain_of(const wnn_graph *g, uint32_t id)
{
    const wnn_fusion *f = &g->fusion;
    uint32_t k = f->chain_of ? f->chain_of[id] : 0;
    return k ? &f->chains[k - 1] : NULL;
}

/* Is the node a step: not an aliased reshape, not in a chain but as its
 * last node? */
static bool
is_step(const wnn_graph *g, uint32_t id)
{
    if (g->plan.aliased && g->plan.aliased[id]) {
        return false;
    }
    const wnn_epilogue *ch = chain_of(g, id);
    return !ch || ch->last == id;
}

/* a chain that runs inside another one (the first of a linked conv pair) */
static bool
is_inner(const wnn_epilogue *ch)
{
    return ch && ch->into != 0;
}

/* An element-wise run's inputs from outside it, each once, into *cur. */
static void
run_inputs(const wnn_graph *g, wnn_step *st, uint32_t k, uint32_t **cur)
{
    const wnn_ir *ir = g->ir;
    st->in = *cur;
    for (uint32_t i = 0; i < st->n_nodes; i++) {
        const wnn_node *n = &ir->nodes[st->nodes[i]];
        for (uint32_t j = 0; j < n->n_in; j++) {
            const wnn_operand *o = &ir->operands[n->in[j]];
            bool own = o->kind == WNN_OPERAND_NODE && g->fusion.chain_of[o->node] == k;
            for (uint32_t q = 0; q < st->n_in && !own; q++) {
                own = st->in[q] == n->in[j];
            }
            if (!own) {
                (*cur)[st->n_in++] = n->in[j];
            }
        }
    }
    *cur += st->n_in;
}

/* The step of a chain (its nodes, in plan order, already listed). */
static void
chain_step(const wnn_graph *g, wnn_step *st, const wnn_epilogue *ch,
           uint32_t **cur)
{
    const wnn_ir *ir = g->ir;
    st->result = ch->result;
    st->n_out = 1;
    st->out = &st->result;
    if (ch->kind == WNN_FUSE_ELTWISE) {
        st->kind = WNN_STEP_ELTWISE;
        run_inputs(g, st, (uint32_t)(ch - g->fusion.chains) + 1, cur);
        return;
    }
    if (ch->kind == WNN_FUSE_ATTENTION) {
        const wnn_node *m1 = &ir->nodes[ch->producer];
        st->kind = WNN_STEP_ATTENTION;
        st->node = ch->producer;
        st->act = ch->act;
        uint32_t *in = *cur;
        in[0] = m1->in[0];
        in[1] = m1->in[1];
        in[2] = ir->nodes[ch->last].in[1];
        st->n_in = 3;
        if (ch->add != WNN_NO_NODE) {
            st->addend = ch->addend;
            in[st->n_in++] = ch->addend;
        }
        st->in = in;
        *cur += st->n_in;
        return;
    }
    if (ch->kind == WNN_FUSE_QDQ) {
        const wnn_node *dq = &ir->nodes[ch->dq_x - 1];
        st->kind = WNN_STEP_QDQ;
        st->n_in = dq->n_in;
        st->in = dq->in;
        return;
    }
    const wnn_node *pr = &ir->nodes[ch->producer];
    st->kind = WNN_STEP_EPILOGUE;
    st->node = ch->producer;
    st->n_in = pr->n_in;
    st->in = pr->in;
    if (ch->in_scale) { /* x instead of x * s, and s after the inputs */
        const wnn_node *m = &ir->nodes[ch->in_scale - 1];
        uint32_t *in = *cur;
        memcpy(in, pr->in, pr->n_in * sizeof(uint32_t));
        in[0] = m->in[1 - ch->scale_in];
        in[pr->n_in] = m->in[ch->scale_in];
        st->n_in = pr->n_in + 1;
        st->in = in;
        *cur += st->n_in;
    }
    st->addend = ch->add != WNN_NO_NODE ? ch->addend : WNN_NO_NODE;
    st->act = ch->act;
    st->bn = ch->bn ? ch->bn - 1 : WNN_NO_NODE;
    if (st->bn != WNN_NO_NODE) {
        const wnn_desc *od = &ir->operands[pr->out[0]].desc;
        st->scratch = 3 * sizeof(double) * ((uint64_t)od->shape[ch->channel_axis] + 1);
    }
}

/* A step's epilogue extents (steps.h epi_n, epi_c, epi_inner): a chain's
 * at its channel axis, a convolution's alone at its layout's. */
static void
epi_extents(const wnn_graph *g, wnn_step *st)
{
    const wnn_ir *ir = g->ir;
    const wnn_node *pr = &ir->nodes[st->node];
    const wnn_lowered *l = st->lowered;
    uint32_t axis;
    if (st->kind == WNN_STEP_EPILOGUE) {
        axis = st->epi->channel_axis;
    } else if (st->kind == WNN_STEP_NODE && l->kind == WNN_LOWER_CONV) {
        axis = l->u.conv.nhwc ? 3 : 1;
    } else {
        return;
    }
    const wnn_desc *od = &ir->operands[pr->out[0]].desc;
    st->epi_n = (int64_t)wnn_desc_elements(od);
    st->epi_c = st->epi_inner = 1;
    if (axis < od->rank) {
        st->epi_c = od->shape[axis];
        for (uint32_t i = axis + 1; i < od->rank; i++) {
            st->epi_inner *= od->shape[i];
        }
    }
}

/* The step of the node at plan position pos.  chain_nodes: the nodes of
 * each chain in plan order (per chain index, its first at base[k]). */
static void
make_step(const wnn_graph *g, wnn_step *st, uint32_t pos,
          const uint32_t *chain_nodes, const uint32_t *base, uint32_t **cur)
{
    const wnn_ir *ir = g->ir;
    uint32_t id = g->plan.order[pos];
    const wnn_node *node = &ir->nodes[id];
    const wnn_epilogue *ch = chain_of(g, id);
    *st = (wnn_step){ .kind = WNN_STEP_NODE, .node = id, .at = pos, .epi = ch,
                      .addend = WNN_NO_NODE, .act = WNN_NO_NODE,
                      .bn = WNN_NO_NODE };
    if (ch) {
        uint32_t k = (uint32_t)(ch - g->fusion.chains);
        st->nodes = chain_nodes + base[k];
        st->n_nodes = base[k + 1] - base[k];
        chain_step(g, st, ch, cur);
    } else {
        st->nodes = *cur;
        *(*cur)++ = id;
        st->n_nodes = 1;
        st->n_in = node->n_in;
        st->in = node->in;
        st->n_out = node->n_out;
        st->out = node->out;
        st->result = node->n_out ? node->out[0] : WNN_NO_NODE;
    }
    st->op = ir->nodes[st->node].op;
    st->family = wnn_op_family(st->op);
    st->lowered = &g->lowered[st->node];
    epi_extents(g, st);
}

/* conv pairs: each inner step named by the step it runs in (-1: a pair
 * without its second convolution, which cannot run) */
static int
link_pairs(const wnn_graph *g, wnn_schedule *s)
{
    uint32_t *step_of = calloc(g->fusion.n_chains + 1, sizeof(uint32_t));
    if (!step_of) {
        return 0;
    }
    for (uint32_t i = 0; i < s->n_steps; i++) {
        if (s->steps[i].epi) {
            step_of[s->steps[i].epi - g->fusion.chains] = i + 1;
        }
    }
    int ok = 1;
    for (uint32_t i = s->n_run; i < s->n_steps && ok > 0; i++) {
        const wnn_epilogue *ch = s->steps[i].epi;
        uint32_t t = step_of[ch->into - 1];
        if (!t || (ch->pair != 1 && ch->pair != 2)) {
            ok = -1;
            break;
        }
        if (ch->pair == 1) {
            s->steps[t - 1].pre_e = i + 1; /* the expansion of depthwise t */
        } else {
            s->steps[t - 1].pre_d = i + 1; /* depthwise, t its projection */
        }
        s->steps[t - 1].kind = WNN_STEP_CONV_PAIR;
    }
    free(step_of);
    return ok;
}

/* per chain, the offsets of its nodes in chain_nodes (base[k] .. base[k +
 * 1]) and the nodes, in plan order */
static void
list_chain_nodes(const wnn_graph *g, uint32_t *chain_nodes, uint32_t *base)
{
    const wnn_plan *p = &g->plan;
    uint32_t nc = g->fusion.n_chains;
    for (uint32_t pos = 0; pos < p->n_order && nc; pos++) {
        uint32_t k = g->fusion.chain_of[p->order[pos]];
        if (k) {
            base[k]++;
        }
    }
    for (uint32_t k = 0; k < nc; k++) {
        base[k + 1] += base[k];
    }
    for (uint32_t pos = 0; pos < p->n_order && nc; pos++) {
        uint32_t k = g->fusion.chain_of[p->order[pos]];
        if (k) {
            chain_nodes[base[k - 1]++] = p->order[pos];
        }
    }
    for (uint32_t k = nc; k > 0; k--) { /* base[k - 1] moved to base[k] */
        base[k] = base[k - 1];
    }
    base[0] = 0;
}

wnn_status
wnn_schedule_make(const wnn_graph *g, wnn_schedule *s, wnn_error *err)
{
    const wnn_plan *p = &g->plan;
    memset(s, 0, sizeof(*s));
    uint64_t n_ids = 0; /* chains' node lists, nodes' own, runs' inputs */
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        const wnn_epilogue *ch = chain_of(g, id);
        n_ids += 1 + (ch && ch->kind == WNN_FUSE_ELTWISE ? g->ir->nodes[id].n_in
                      : ch && ch->kind == WNN_FUSE_ATTENTION && ch->last == id ? 4
                      : ch && ch->in_scale && ch->producer == id
                          ? g->ir->nodes[id].n_in + 1
                          : 0);
        if (is_step(g, id)) {
            s->n_steps++;
            s->n_run += !is_inner(ch);
        }
    }
    uint32_t nc = g->fusion.n_chains;
    s->steps = calloc(s->n_steps + 1, sizeof(wnn_step));
    s->ids = malloc((n_ids + 1) * sizeof(uint32_t));
    uint32_t *base = calloc(nc + 2, sizeof(uint32_t));
    if (!s->steps || !s->ids || !base) {
        free(base);
        wnn_schedule_free(s);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory while scheduling the graph");
    }
    list_chain_nodes(g, s->ids, base);
    uint32_t *cur = s->ids + base[nc];
    uint32_t n = 0;
    /* the run steps in plan order, then the inner ones */
    for (int inner = 0; inner < 2; inner++) {
        for (uint32_t pos = 0; pos < p->n_order; pos++) {
            uint32_t id = p->order[pos];
            if (is_step(g, id) && is_inner(chain_of(g, id)) == (inner != 0)) {
                make_step(g, &s->steps[n++], pos, s->ids, base, &cur);
            }
        }
    }
    free(base);
    int linked = s->n_run < s->n_steps ? link_pairs(g, s) : 1;
    if (linked <= 0) {
        wnn_schedule_free(s);
        return linked < 0
                   ? wnn_failk(err, WNN_OPERATION_ERROR, "build", NULL, NULL,
                               "internal error: a conv pair without its "
                               "second convolution")
                   : wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                               "out of memory while scheduling the graph");
    }
    return WNN_OK;
}

void
wnn_schedule_free(wnn_schedule *s)
{
    free(s->steps);
    free(s->ids);
    memset(s, 0, sizeof(*s));
}
