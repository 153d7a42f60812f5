/* fuse.c -- epilogue fusion analysis (see fuse.h): producer -> [add] ->
 * [activation] chains whose intermediates have exactly one use and are not
 * graph outputs.  Backend-neutral: it only reads the IR and the graph's
 * outputs; a backend decides which chains it runs fused. */
#include <stdlib.h>
#include <string.h>

#include "fuse.h"
#include "lower/lower.h"
#include "../ops/ops_internal.h"
#include "../ops/options.h"

void
wnn_fusion_free(wnn_fusion *f)
{
    free(f->chains);
    free(f->chain_of);
    memset(f, 0, sizeof(*f));
}

/* a chain of one node, `id`, whose result is operand `result`: no add,
 * activation, batchNormalization or pair yet */
static wnn_epilogue
chain_of_one(uint32_t id, uint32_t result, uint32_t axis, uint32_t kind)
{
    return (wnn_epilogue){ .producer = id,
                           .add = WNN_NO_NODE,
                           .addend = 0,
                           .add_kind = WNN_EPI_ADD_NONE,
                           .channel_axis = axis,
                           .act = WNN_NO_NODE,
                           .last = id,
                           .result = result,
                           .kind = kind };
}

/* d broadcasts to `out` along `axis` only: right-aligned, 1 everywhere but
 * at the axis, where it is out's size. */
static bool
channel_shape(const wnn_desc *d, const wnn_desc *out, uint32_t axis)
{
    if (d->rank > out->rank || d->rank == 0) {
        return false;
    }
    uint32_t lead = out->rank - d->rank;
    if (axis < lead) {
        return false;
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        uint32_t want = lead + i == axis ? out->shape[axis] : 1;
        if (d->shape[i] != want) {
            return false;
        }
    }
    return true;
}

static uint32_t
channel_axis(const wnn_node *n, const wnn_desc *out)
{
    int layout = WNN_LAYOUT_NCHW;
    if (n->op == WNN_OP_CONV2D) {
        layout = ((const wnn_conv2d_options *)n->options)->input_layout;
    } else if (n->op == WNN_OP_CONV_TRANSPOSE2D) {
        layout = ((const wnn_conv_transpose2d_options *)n->options)->input_layout;
    } else {
        return out->rank - 1; /* matmul, gemm */
    }
    return layout == WNN_LAYOUT_NHWC ? 3 : 1;
}

/* an element-wise node a chain may hold: one output, every input and the
 * output of one float data type; or a float32 batchNormalization (a
 * per-channel affine map of its input 0; its parameters are read whole) */
static bool
eltwise_node(const wnn_ir *ir, const wnn_node *n)
{
    if (n->op == WNN_OP_BATCH_NORMALIZATION) {
        if (n->n_out != 1 || n->n_in < 3 ||
            ir->operands[n->out[0]].desc.dtype != WNN_FLOAT32) {
            return false;
        }
        for (uint32_t j = 0; j < n->n_in; j++) {
            if (ir->operands[n->in[j]].desc.dtype != WNN_FLOAT32) {
                return false;
            }
        }
        return true;
    }
    if (!wnn_op_has(n->op, WNN_TR_ELTWISE) || n->n_out != 1 || n->n_in < 1 ||
        n->n_in > 2) {
        return false;
    }
    wnn_dtype t = ir->operands[n->out[0]].desc.dtype;
    if (t != WNN_FLOAT32 && t != WNN_FLOAT16) {
        return false;
    }
    for (uint32_t j = 0; j < n->n_in; j++) {
        if (ir->operands[n->in[j]].desc.dtype != t) {
            return false;
        }
    }
    return true;
}

/* conv pairs (fuse.h): 1 where a is a conv2d with groups 1 (a 1x1
 * expansion, or an image's first convolution) and b a 3x3 depthwise
 * conv2d (groups = input = output channels) -- an expansion and its
 * depthwise convolution; 2 where a is
 * such a depthwise convolution and b such a 1x1 -- a depthwise convolution
 * and its projection; 0 otherwise.  b's input is `result`, the result of
 * a's chain; both nhwc and float32. */
static bool
pointwise(const wnn_conv_params *p)
{
    return p->nhwc && p->KH == 1 && p->KW == 1 && p->sh == 1 && p->sw == 1 &&
           !p->pad[0] && !p->pad[1] && !p->pad[2] && !p->pad[3] && p->G == 1;
}

/* a dense convolution (groups 1) of any filter: the producer of a pair
 * whose backend computes its rows one by one (an image's first
 * convolution before the first depthwise one) */
static bool
dense(const wnn_conv_params *p)
{
    return p->nhwc && p->G == 1;
}

static bool
depthwise3(const wnn_conv_params *p)
{
    return p->nhwc && p->KH == 3 && p->KW == 3 && p->G == p->C &&
           p->O == p->C;
}

/* pa, pb: the two convolutions lowered (for the backend's conv_pair) */
static int
conv_pair(const wnn_ir *ir, const wnn_node *a, const wnn_node *b,
          uint32_t result, wnn_conv_params *pa, wnn_conv_params *pb)
{
    if (a->op != WNN_OP_CONV2D || b->op != WNN_OP_CONV2D || a->n_out != 1 ||
        b->n_out != 1 || b->in[0] != result) {
        return 0;
    }
    const wnn_desc *ad = &ir->operands[a->out[0]].desc;
    const wnn_desc *bd = &ir->operands[b->out[0]].desc;
    if (ad->dtype != WNN_FLOAT32 || bd->dtype != WNN_FLOAT32) {
        return 0;
    }
    wnn_lower_conv(pa, a, &ir->operands[a->in[0]].desc,
                   &ir->operands[a->in[1]].desc, ad);
    wnn_lower_conv(pb, b, ad, &ir->operands[b->in[1]].desc, bd);
    if (pb->C != pa->O) {
        return 0;
    }
    return dense(pa) && depthwise3(pb) ? 1
         : depthwise3(pa) && pointwise(pb) ? 2 : 0;
}

/* a batchNormalization that an epilogue chain may hold (WNN_FUSE_BN): it
 * reads `t`, the producer's float32 result, over the producer's channel
 * axis; mean, variance, scale and bias are float32 [C] */
static bool
bn_fusable(const wnn_ir *ir, const wnn_node *n, uint32_t t,
           const wnn_desc *od, uint32_t axis)
{
    if (n->op != WNN_OP_BATCH_NORMALIZATION || n->n_out != 1 ||
        n->n_in < 3 || n->in[0] != t || od->dtype != WNN_FLOAT32 ||
        ((const wnn_batch_normalization_options *)n->options)->axis != axis) {
        return false;
    }
    for (uint32_t j = 1; j < n->n_in; j++) {
        const wnn_desc *d = &ir->operands[n->in[j]].desc;
        if (d->dtype != WNN_FLOAT32 || d->rank != 1 ||
            d->shape[0] != od->shape[axis]) {
            return false;
        }
    }
    return true;
}

/* What the chain finders share: the graph, the chains found so far and,
 * per operand, its readers (uses; the first and the last in the plan's
 * order) and whether it is a graph output. */
typedef struct fz {
    const wnn_graph *g;
    const wnn_ir *ir;
    uint32_t kinds;
    wnn_fusion *f;
    uint32_t *uses, *first, *consumer;
    bool *is_out;
    bool *target; /* per chain: the second of a conv pair already */
} fz;

/* an intermediate that only the next node of a chain reads */
static bool
sole(const fz *z, uint32_t t)
{
    return z->uses[t] == 1 && !z->is_out[t] &&
           z->ir->operands[t].kind == WNN_OPERAND_NODE;
}

/* the node that may extend a chain whose result is t (its id in *next), or
 * NULL */
static const wnn_node *
follow(const fz *z, uint32_t t, uint32_t *next)
{
    if (!sole(z, t) || z->f->chain_of[z->consumer[t]]) {
        return NULL;
    }
    *next = z->consumer[t];
    return &z->ir->nodes[*next];
}

/* t -> sigmoid(t) -> mul(t, sigmoid(t)): SiLU (swish), as EfficientNet's
 * and YOLO's exports write it, t float32 and read by those two nodes only
 * (no graph output): the sigmoid's node in *sig, the mul's in *mul */
static bool
gate_of(const fz *z, uint32_t t, uint32_t *sig, uint32_t *mul)
{
    const wnn_ir *ir = z->ir;
    const wnn_desc *td = &ir->operands[t].desc;
    if (!(z->kinds & WNN_FUSE_GATE) || z->uses[t] != 2 || z->is_out[t] ||
        td->dtype != WNN_FLOAT32 ||
        ir->operands[t].kind != WNN_OPERAND_NODE) {
        return false;
    }
    uint32_t a = z->first[t], b = z->consumer[t];
    const wnn_node *sn = &ir->nodes[a], *mn = &ir->nodes[b];
    if (a == b || z->f->chain_of[a] || z->f->chain_of[b] ||
        sn->op != WNN_OP_SIGMOID || sn->n_in != 1 || sn->n_out != 1 ||
        sn->in[0] != t || !sole(z, sn->out[0]) ||
        z->consumer[sn->out[0]] != b || mn->op != WNN_OP_MUL ||
        mn->n_in != 2 || mn->n_out != 1 ||
        !((mn->in[0] == t && mn->in[1] == sn->out[0]) ||
          (mn->in[1] == t && mn->in[0] == sn->out[0])) ||
        ir->operands[mn->out[0]].desc.dtype != WNN_FLOAT32 ||
        !wnn_desc_same_shape(&ir->operands[mn->out[0]].desc, td)) {
        return false;
    }
    *sig = a;
    *mul = b;
    return true;
}

/* how far past the last node of a program prog_of looks for the next one
 * (plan positions): an exporter writes a program's nodes together */
#define PROG_WINDOW 16

/* operand id is a float32 constant of one value (a program's scalar) */
static bool
scalar_constant(const wnn_ir *ir, uint32_t id)
{
    const wnn_operand *o = &ir->operands[id];
    return o->kind == WNN_OPERAND_CONSTANT && o->desc.dtype == WNN_FLOAT32 &&
           wnn_desc_elements(&o->desc) == 1;
}

/* The program of a chain whose running value is t, from plan position
 * pos0 on (WNN_FUSE_EPI_PROG): float32 element-wise nodes (not
 * batchNormalization) of t's shape, in no chain yet, each reading t,
 * results of the nodes before it and float32 constants of one value only,
 * at least one of the former; the longest run of them in which every
 * value but the last result (t included) is read inside the run only and
 * is no graph output.  A reshape that is t's only reader (and no graph
 * output) may come first: the program reads its result as t (the same
 * values in the same order).  Into e (n_prog, prog, prog_view, last,
 * result); false: none. */
static bool
prog_of(const fz *z, uint32_t t, uint32_t pos0, wnn_epilogue *e)
{
    const wnn_ir *ir = z->ir;
    const wnn_plan *p = &z->g->plan;
    const wnn_desc *td = &ir->operands[t].desc;
    if (!(z->kinds & WNN_FUSE_EPI_PROG) || td->dtype != WNN_FLOAT32 ||
        z->is_out[t] || ir->operands[t].kind != WNN_OPERAND_NODE) {
        return false;
    }
    /* vals[0] = t, vals[k] the result of node prog[k - 1] */
    uint32_t vals[WNN_EPI_PROG_MAX + 1], prog[WNN_EPI_PROG_MAX], n = 0;
    uint32_t view = 0;
    if (sole(z, t) && !z->f->chain_of[z->consumer[t]]) {
        const wnn_node *r = &ir->nodes[z->consumer[t]];
        if (r->op == WNN_OP_RESHAPE && r->n_in == 1 && r->n_out == 1 &&
            r->in[0] == t &&
            ir->operands[r->out[0]].desc.dtype == WNN_FLOAT32) {
            view = z->consumer[t] + 1;
            t = r->out[0];
            td = &ir->operands[t].desc;
            if (z->is_out[t]) {
                return false;
            }
        }
    }
    vals[0] = t;
    for (uint32_t pos = pos0 + 1, end = pos0 + 1 + PROG_WINDOW;
         pos < p->n_order && pos < end && n < WNN_EPI_PROG_MAX; pos++) {
        uint32_t id = p->order[pos];
        const wnn_node *nd = &ir->nodes[id];
        if (z->f->chain_of[id] || nd->op == WNN_OP_BATCH_NORMALIZATION ||
            !eltwise_node(ir, nd) ||
            ir->operands[nd->out[0]].desc.dtype != WNN_FLOAT32 ||
            !wnn_desc_same_shape(&ir->operands[nd->out[0]].desc, td)) {
            continue;
        }
        bool reads = false, ok = true;
        for (uint32_t j = 0; j < nd->n_in && ok; j++) {
            bool in = false;
            for (uint32_t k = 0; k <= n && !in; k++) {
                in = vals[k] == nd->in[j];
            }
            reads |= in;
            ok = in || scalar_constant(ir, nd->in[j]);
        }
        if (!ok || !reads) {
            continue;
        }
        prog[n++] = id;
        vals[n] = nd->out[0];
        end = pos + 1 + PROG_WINDOW;
    }
    /* the longest prefix whose values but its last are its own */
    for (uint32_t m = n; m > 0; m--) {
        uint32_t inside[WNN_EPI_PROG_MAX + 1] = { 0 };
        for (uint32_t i = 0; i < m; i++) {
            const wnn_node *nd = &ir->nodes[prog[i]];
            for (uint32_t j = 0; j < nd->n_in; j++) {
                for (uint32_t k = 0; k <= i; k++) {
                    inside[k] += vals[k] == nd->in[j];
                }
            }
        }
        bool closed = true;
        for (uint32_t k = 0; k < m && closed; k++) {
            closed = inside[k] == z->uses[vals[k]] && !z->is_out[vals[k]];
        }
        if (closed) {
            e->n_prog = m;
            e->prog_view = view;
            memcpy(e->prog, prog, m * sizeof(uint32_t));
            e->last = prog[m - 1];
            e->result = vals[m];
            return true;
        }
    }
    return false;
}

/* the add of a chain whose result is t, read by node `next` (nn): a
 * residual or a per-channel addend of the producer output's shape od */
static bool
add_step(const fz *z, wnn_epilogue *e, const wnn_node *nn, uint32_t next,
         uint32_t t, const wnn_desc *od)
{
    const wnn_ir *ir = z->ir;
    if (nn->op != WNN_OP_ADD || nn->n_in != 2 || nn->n_out != 1 ||
        !wnn_desc_same_shape(&ir->operands[nn->out[0]].desc, od)) {
        return false;
    }
    uint32_t other = nn->in[0] == t ? nn->in[1] : nn->in[0];
    const wnn_desc *ad = &ir->operands[other].desc;
    if (other != t && ad->dtype == od->dtype) {
        if (wnn_desc_same_shape(ad, od)) {
            e->add_kind = WNN_EPI_ADD_RESIDUAL;
        } else if (channel_shape(ad, od, e->channel_axis)) {
            e->add_kind = WNN_EPI_ADD_CHANNEL;
        }
    }
    if (e->add_kind == WNN_EPI_ADD_NONE) {
        return false;
    }
    e->add = next;
    e->addend = other;
    e->last = next;
    e->result = nn->out[0];
    return true;
}

/* the input scale of a conv2d producer n (WNN_FUSE_IN_SCALE): its input
 * 0 is the result of mul(x, s), read by n alone and no graph output, the
 * mul in no chain yet, x of the mul's shape, s one value per input channel
 * (1 everywhere but at the input's channel axis), all float32, n of groups
 * 1; and the filter a quarter of x per input channel or less (N H W >=
 * 4 O KH KW: scaling the filter's input channels per dispatch, on one
 * thread, costs less than the pass over x it saves; EfficientNet-B0's
 * 14 x 14 blocks, 196 pixels against 80 and 112 output channels, came out
 * even).  The mul's node in *mul, which input is s in *si. */
static bool
in_scale_of(const fz *z, const wnn_node *n, uint32_t *mul, uint32_t *si)
{
    const wnn_ir *ir = z->ir;
    if (!(z->kinds & WNN_FUSE_IN_SCALE) || n->op != WNN_OP_CONV2D ||
        n->n_in < 2 || !sole(z, n->in[0])) {
        return false;
    }
    uint32_t t = n->in[0], m = ir->operands[t].node;
    const wnn_node *mn = &ir->nodes[m];
    const wnn_desc *td = &ir->operands[t].desc;
    if (mn->op != WNN_OP_MUL || mn->n_in != 2 || mn->n_out != 1 ||
        mn->out[0] != t || z->f->chain_of[m] || td->dtype != WNN_FLOAT32 ||
        td->rank != 4 ||
        ir->operands[n->out[0]].desc.dtype != WNN_FLOAT32) {
        return false;
    }
    wnn_conv_params p;
    wnn_lower_conv(&p, n, td, &ir->operands[n->in[1]].desc,
                   &ir->operands[n->out[0]].desc);
    if (p.G != 1 || p.N * p.H * p.W < 4 * p.O * p.KH * p.KW) {
        return false;
    }
    const uint32_t axis = p.nhwc ? 3 : 1;
    for (uint32_t j = 0; j < 2; j++) {
        const wnn_desc *xd = &ir->operands[mn->in[1 - j]].desc;
        const wnn_desc *sd = &ir->operands[mn->in[j]].desc;
        if (xd->dtype == WNN_FLOAT32 && sd->dtype == WNN_FLOAT32 &&
            wnn_desc_same_shape(xd, td) && channel_shape(sd, td, axis)) {
            *mul = m;
            *si = j;
            return true;
        }
    }
    return false;
}

static void
record_chain(fz *z, const wnn_epilogue *e)
{
    wnn_fusion *f = z->f;
    uint32_t k = f->n_chains++;
    f->chains[k] = *e;
    f->chain_of[e->producer] = k + 1;
    if (e->bn) {
        f->chain_of[e->bn - 1] = k + 1;
    }
    if (e->add != WNN_NO_NODE) {
        f->chain_of[e->add] = k + 1;
    }
    if (e->act != WNN_NO_NODE) {
        f->chain_of[e->act] = k + 1;
    }
    if (e->gate) {
        f->chain_of[e->last] = k + 1;
    }
    if (e->in_scale) {
        f->chain_of[e->in_scale - 1] = k + 1;
    }
    for (uint32_t i = 0; i < e->n_prog; i++) {
        f->chain_of[e->prog[i]] = k + 1;
    }
    if (e->prog_view) {
        f->chain_of[e->prog_view - 1] = k + 1;
    }
}

/* producer -> [bn] -> [add] -> [activation, or a gate: t * sigmoid(t), or
 * a program] */
static void
find_epilogues(fz *z)
{
    const wnn_ir *ir = z->ir;
    const wnn_plan *p = &z->g->plan;
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        const wnn_node *n = &ir->nodes[id];
        if (!wnn_op_has(n->op, WNN_TR_PRODUCER) || n->n_out != 1 ||
            z->f->chain_of[id]) {
            continue;
        }
        uint32_t t = n->out[0], next = 0, sig, mul;
        const wnn_desc *od = &ir->operands[t].desc;
        if (od->dtype != WNN_FLOAT32 && od->dtype != WNN_FLOAT16) {
            continue;
        }
        wnn_epilogue e = chain_of_one(id, t, channel_axis(n, od),
                                      WNN_FUSE_EPILOGUE);
        uint32_t sm, si;
        if (od->dtype == WNN_FLOAT32 && in_scale_of(z, n, &sm, &si)) {
            e.in_scale = sm + 1;
            e.scale_in = si;
        }
        const wnn_node *nn = follow(z, t, &next);
        if (nn && (z->kinds & WNN_FUSE_BN) &&
            bn_fusable(ir, nn, t, od, e.channel_axis)) {
            e.bn = next + 1;
            e.last = next;
            e.result = nn->out[0];
            t = e.result;
            nn = follow(z, t, &next);
        }
        if (nn && add_step(z, &e, nn, next, t, od)) {
            t = e.result;
            nn = follow(z, t, &next);
        } else if (nn && nn->op == WNN_OP_ADD) {
            nn = NULL; /* an add that is not the chain's: it ends here */
        }
        if (nn && wnn_op_has(nn->op, WNN_TR_ACTIVATION) && nn->n_in == 1 &&
            nn->n_out == 1 && nn->in[0] == t &&
            ir->operands[nn->out[0]].desc.dtype == od->dtype) {
            e.act = next;
            e.last = next;
            e.result = nn->out[0];
        } else if (!nn && gate_of(z, t, &sig, &mul)) {
            e.act = sig;
            e.gate = 1;
            e.last = mul;
            e.result = ir->nodes[mul].out[0];
        } else {
            (void)prog_of(z, t, pos, &e);
        }
        if (e.last != id || e.in_scale) {
            record_chain(z, &e);
        }
    }
}

/* conv pairs among the epilogue chains (in the plan's order: a chain comes
 * before the chain that reads it); a chain is the first of one pair and the
 * second of one at most.  The backend says which pairs it runs linked (its
 * conv_pair, from their geometry); only those are linked, so that the plan
 * gives their first chain's result no storage. */
static void
find_conv_pairs(fz *z)
{
    const wnn_ir *ir = z->ir;
    wnn_fusion *f = z->f;
    const wnn_backend *be = z->g->ctx->backend;
    for (uint32_t k = 0; k < f->n_chains; k++) {
        if (!sole(z, f->chains[k].result)) {
            continue;
        }
        uint32_t next = z->consumer[f->chains[k].result];
        uint32_t kb = f->chain_of[next];
        wnn_conv_params pa, pb;
        int kind = conv_pair(ir, &ir->nodes[f->chains[k].producer],
                             &ir->nodes[next], f->chains[k].result, &pa, &pb);
        /* a projection (the target of a depthwise chain) is not also the
         * expansion of the next depthwise convolution: a run of linked
         * pairs is at most expansion -> depthwise -> projection */
        if (!kind || (kind == 1 && z->target[k]) || f->chains[k].in_scale ||
            (kb && f->chains[kb - 1].in_scale) || f->chains[k].n_prog ||
            (kb && f->chains[kb - 1].n_prog)) {
            continue; /* a chain with an input scale or a program runs alone */
        }
        /* b: the producer of its own chain, not the second of a pair yet;
         * or a projection without an add or activation (the linear
         * bottleneck of an inverted residual block), made a chain of its
         * own below */
        if (kb ? kb - 1 <= k || z->target[kb - 1] ||
                     f->chains[kb - 1].producer != next
               : kind != 2) {
            continue;
        }
        if (!be->iface->conv_pair((wnn_backend *)be, &pa, &pb, kind,
                                  z->target[k])) {
            continue;
        }
        if (!kb) {
            kb = ++f->n_chains;
            uint32_t o = ir->nodes[next].out[0];
            f->chains[kb - 1] = chain_of_one(
                next, o, channel_axis(&ir->nodes[next], &ir->operands[o].desc),
                WNN_FUSE_EPILOGUE);
            f->chain_of[next] = kb;
        }
        f->chains[k].into = kb;
        f->chains[k].pair = (uint32_t)kind;
        z->target[kb - 1] = true;
    }
}

/* element-wise chains among the nodes left, from each chain's first node
 * (the plan's order visits a node before its readers) */
static void
find_eltwise_chains(fz *z)
{
    const wnn_ir *ir = z->ir;
    const wnn_plan *p = &z->g->plan;
    wnn_fusion *f = z->f;
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        const wnn_node *n = &ir->nodes[id];
        if (f->chain_of[id] || !eltwise_node(ir, n)) {
            continue;
        }
        const wnn_desc *od = &ir->operands[n->out[0]].desc;
        wnn_epilogue e = chain_of_one(id, n->out[0], 0, WNN_FUSE_ELTWISE);
        uint32_t k = f->n_chains + 1, len = 1;
        f->chain_of[id] = k;
        for (;;) {
            uint32_t t = e.result;
            if (!sole(z, t)) {
                break;
            }
            uint32_t next = z->consumer[t];
            const wnn_node *nn = &ir->nodes[next];
            if (f->chain_of[next] || !eltwise_node(ir, nn) ||
                ir->operands[nn->out[0]].desc.dtype != od->dtype ||
                !wnn_desc_same_shape(&ir->operands[nn->out[0]].desc, od)) {
                break;
            }
            /* a batchNormalization carries the running value as its input
             * (sole: t is read once, so not as a parameter too) */
            if (nn->op == WNN_OP_BATCH_NORMALIZATION && nn->in[0] != t) {
                break;
            }
            f->chain_of[next] = k;
            e.last = next;
            e.result = nn->out[0];
            len++;
        }
        if (len < 2) {
            f->chain_of[id] = 0;
            continue;
        }
        f->chains[f->n_chains++] = e;
    }
}

wnn_status
wnn_fusion_find(const wnn_graph *g, uint32_t kinds, wnn_fusion *f,
                wnn_error *err)
{
    const wnn_ir *ir = g->ir;
    const wnn_plan *p = &g->plan;
    memset(f, 0, sizeof(*f));
    uint32_t no = ir->n_operands;
    fz z = { .g = g, .ir = ir, .kinds = kinds, .f = f };
    z.uses = calloc(no + 1, sizeof(uint32_t));
    z.first = malloc((no + 1) * sizeof(uint32_t));
    z.consumer = malloc((no + 1) * sizeof(uint32_t));
    z.is_out = calloc(no + 1, sizeof(bool));
    z.target = calloc(ir->n_nodes + 1, sizeof(bool));
    f->chain_of = calloc(ir->n_nodes + 1, sizeof(uint32_t));
    f->chains = calloc(ir->n_nodes + 1, sizeof(wnn_epilogue));
    wnn_status st = WNN_OK;
    if (!z.uses || !z.first || !z.consumer || !z.is_out || !z.target ||
        !f->chain_of || !f->chains) {
        wnn_fusion_free(f);
        st = wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                       "out of memory");
        goto done;
    }
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        const wnn_node *n = &ir->nodes[id];
        for (uint32_t j = 0; j < n->n_in; j++) {
            if (!z.uses[n->in[j]]++) {
                z.first[n->in[j]] = id;
            }
            z.consumer[n->in[j]] = id;
        }
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        z.is_out[g->outputs[i].operand] = true;
    }
    if (kinds & WNN_FUSE_QDQ) {
        wnn_fusion_find_qdq(g, z.uses, z.consumer, z.is_out, f);
    }
    if (kinds & WNN_FUSE_ATTENTION) {
        wnn_fusion_find_attention(g, z.uses, z.first, z.consumer, z.is_out, f);
    }
    if (kinds & WNN_FUSE_EPILOGUE) {
        find_epilogues(&z);
    }
    if ((kinds & WNN_FUSE_CONV_PAIR) && g->ctx->backend->iface->conv_pair) {
        find_conv_pairs(&z);
    }
    if (kinds & WNN_FUSE_ELTWISE) {
        find_eltwise_chains(&z);
    }
done:
    free(z.uses);
    free(z.first);
    free(z.consumer);
    free(z.is_out);
    free(z.target);
    return st;
}
