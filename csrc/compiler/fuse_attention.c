/* fuse_attention.c -- attention blocks (WNN_FUSE_ATTENTION, backend.h): the
 * chains
 *
 *   s = matmul(q, kt) -> [mul(s, c) | div(s, c)] -> [add(s, mask)]
 *     -> p = softmax(., last axis)
 *     -> [where(isNaN(p), 0, p)] -> matmul(p, v)
 *
 * as ONNX exports of transformers write scaled dot-product attention:
 * BERT, GPT-2 and Llama mask the scores and guard fully masked rows (a
 * softmax of -inf only is NaN) with the where; ViT and Whisper have neither;
 * older exports scale the scores (c a float32 constant of one element, by
 * which the scores are multiplied or divided) where newer ones scale q and
 * k before the product.
 * All float32; q [..., S, D], kt [..., D, T], v [..., T, Dv] with the same
 * leading (batch) dimensions, no broadcast; the mask any float32 operand
 * that broadcasts to the scores' shape [..., S, T]; the guard's value a
 * float32 constant of zeros (+0).  Each intermediate (s, the masked s, p,
 * isNaN(p), the guarded p) is read by the next node of the chain only (p by
 * the isNaN and the where) and is not a graph output.
 *
 * The chain (wnn_epilogue, kind WNN_FUSE_ATTENTION): producer the first
 * matmul, scale the mul's or div's node id + 1 (0: none), add / addend the
 * mask's add and the mask, act the softmax, guard the where's node id + 1
 * (0: none), last the second matmul.  A backend
 * that runs it computes rows of scores, their softmax and their product
 * with v block by block, never storing the scores whole.
 * Backend-neutral: it only reads the IR. */
#include <string.h>

#include "fuse.h"
#include "../ops/ops_internal.h"
#include "../ops/options.h"

typedef struct actx {
    const wnn_ir *ir;
    const uint32_t *uses, *first, *consumer;
    const bool *is_out;
    const uint32_t *chain_of;
    /* identities passed on the way (a decode graph's Dropout, imported as
     * one): the chain's nodes too */
    uint32_t skipped[8], n_skipped;
} actx;

static const wnn_desc *
desc(const actx *a, uint32_t id)
{
    return &a->ir->operands[id].desc;
}

/* an intermediate read by one node only, not a graph output: that node
 * (its id in *next) where it is free, else NULL */
static const wnn_node *
sole_reader(const actx *a, uint32_t t, uint32_t *next)
{
    if (a->uses[t] != 1 || a->is_out[t] ||
        a->ir->operands[t].kind != WNN_OPERAND_NODE ||
        a->chain_of[a->consumer[t]]) {
        return NULL;
    }
    *next = a->consumer[t];
    return &a->ir->nodes[*next];
}

/* sole_reader, through identities (recorded in a->skipped): *t becomes
 * the operand the node returned reads */
static const wnn_node *
next_node(actx *a, uint32_t *t, uint32_t *next)
{
    const wnn_node *n = sole_reader(a, *t, next);
    while (n && n->op == WNN_OP_IDENTITY && n->n_in == 1 && n->n_out == 1 &&
           a->n_skipped < 8) {
        a->skipped[a->n_skipped++] = *next;
        *t = n->out[0];
        n = sole_reader(a, *t, next);
    }
    return n;
}

/* a float32 matmul of two operands of one rank >= 2, the same leading
 * dimensions (no broadcast) */
static bool
plain_matmul(const actx *a, const wnn_node *n)
{
    if (n->op != WNN_OP_MATMUL || n->n_in != 2 || n->n_out != 1) {
        return false;
    }
    const wnn_desc *x = desc(a, n->in[0]), *y = desc(a, n->in[1]);
    const wnn_desc *o = desc(a, n->out[0]);
    if (x->dtype != WNN_FLOAT32 || y->dtype != WNN_FLOAT32 ||
        x->rank < 2 || x->rank != y->rank || o->rank != x->rank) {
        return false;
    }
    for (uint32_t i = 0; i + 2 < x->rank; i++) {
        if (x->shape[i] != y->shape[i]) {
            return false;
        }
    }
    return true;
}

/* d broadcasts to s (right-aligned, each dimension 1 or s's) */
static bool
broadcasts_to(const wnn_desc *d, const wnn_desc *s)
{
    if (d->rank > s->rank) {
        return false;
    }
    uint32_t lead = s->rank - d->rank;
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->shape[i] != 1 && d->shape[i] != s->shape[lead + i]) {
            return false;
        }
    }
    return true;
}

/* a float32 constant whose bytes are all zero (+0.0) */
static bool
zeros_constant(const actx *a, uint32_t id)
{
    const wnn_operand *o = &a->ir->operands[id];
    if (o->kind != WNN_OPERAND_CONSTANT || !o->data ||
        o->desc.dtype != WNN_FLOAT32) {
        return false;
    }
    const unsigned char *b = o->data;
    uint64_t n = wnn_desc_bytes(&o->desc);
    for (uint64_t i = 0; i < n; i++) {
        if (b[i]) {
            return false;
        }
    }
    return true;
}

/* a float32 constant of one element */
static bool
scalar_constant(const actx *a, uint32_t id)
{
    const wnn_operand *o = &a->ir->operands[id];
    return o->kind == WNN_OPERAND_CONSTANT && o->data &&
           o->desc.dtype == WNN_FLOAT32 && wnn_desc_elements(&o->desc) == 1;
}

/* p -> isNaN(p) -> where(., zeros, p): p read by those two nodes only; the
 * where's node in *wh */
static bool
guard_of(const actx *a, uint32_t p, uint32_t *wh)
{
    const wnn_ir *ir = a->ir;
    if (a->uses[p] != 2 || a->is_out[p]) {
        return false;
    }
    uint32_t i = a->first[p], w = a->consumer[p];
    const wnn_node *in = &ir->nodes[i], *wn = &ir->nodes[w];
    uint32_t nx;
    if (i == w || a->chain_of[i] || a->chain_of[w] ||
        in->op != WNN_OP_IS_NAN || in->n_in != 1 || in->in[0] != p ||
        !sole_reader(a, in->out[0], &nx) || nx != w ||
        wn->op != WNN_OP_WHERE || wn->n_in != 3 || wn->n_out != 1 ||
        wn->in[0] != in->out[0] || wn->in[2] != p ||
        !zeros_constant(a, wn->in[1]) ||
        !broadcasts_to(desc(a, wn->in[1]), desc(a, p)) ||
        desc(a, wn->out[0])->dtype != WNN_FLOAT32 ||
        !wnn_desc_same_shape(desc(a, wn->out[0]), desc(a, p))) {
        return false;
    }
    *wh = w;
    return true;
}

/* the attention chain whose first matmul is node id, into *e */
static bool
attention_at(actx *a, uint32_t id, wnn_epilogue *e)
{
    const wnn_ir *ir = a->ir;
    const wnn_node *m1 = &ir->nodes[id];
    if (a->chain_of[id] || !plain_matmul(a, m1)) {
        return false;
    }
    const wnn_desc *sd = desc(a, m1->out[0]);
    *e = (wnn_epilogue){ .producer = id, .add = WNN_NO_NODE,
                         .add_kind = WNN_EPI_ADD_NONE,
                         .channel_axis = sd->rank - 1, .act = WNN_NO_NODE,
                         .kind = WNN_FUSE_ATTENTION };
    uint32_t t = m1->out[0], next;
    a->n_skipped = 0;
    const wnn_node *n = next_node(a, &t, &next);
    if (n && (n->op == WNN_OP_MUL || n->op == WNN_OP_DIV) && n->n_in == 2 &&
        n->n_out == 1) {
        uint32_t c = n->in[0] == t ? n->in[1] : n->in[0];
        if (c == t || (n->op == WNN_OP_DIV && n->in[0] != t) ||
            !scalar_constant(a, c) || desc(a, c)->rank > sd->rank ||
            !wnn_desc_same_shape(desc(a, n->out[0]), sd)) {
            return false;
        }
        e->scale = next + 1;
        t = n->out[0];
        n = next_node(a, &t, &next);
    }
    if (n && n->op == WNN_OP_ADD && n->n_in == 2 && n->n_out == 1) {
        uint32_t mask = n->in[0] == t ? n->in[1] : n->in[0];
        if (mask == t || desc(a, mask)->dtype != WNN_FLOAT32 ||
            !broadcasts_to(desc(a, mask), sd) ||
            !wnn_desc_same_shape(desc(a, n->out[0]), sd)) {
            return false;
        }
        e->add = next;
        e->addend = mask;
        e->add_kind = WNN_EPI_ADD_RESIDUAL;
        t = n->out[0];
        n = next_node(a, &t, &next);
    }
    if (!n || n->op != WNN_OP_SOFTMAX || n->n_out != 1 ||
        ((const wnn_softmax_options *)n->options)->axis != sd->rank - 1 ||
        !wnn_desc_same_shape(desc(a, n->out[0]), sd)) {
        return false;
    }
    e->act = next;
    t = n->out[0];
    uint32_t wh;
    if (guard_of(a, t, &wh)) {
        e->guard = wh + 1;
        t = ir->nodes[wh].out[0];
    }
    n = next_node(a, &t, &next);
    if (!n || !plain_matmul(a, n) || n->in[0] != t || n->in[1] == t) {
        return false;
    }
    const wnn_desc *vd = desc(a, n->in[1]);
    if (vd->rank != sd->rank) {
        return false;
    }
    for (uint32_t i = 0; i + 2 < sd->rank; i++) {
        if (vd->shape[i] != sd->shape[i]) {
            return false;
        }
    }
    e->last = next;
    e->result = n->out[0];
    return true;
}

void
wnn_fusion_find_attention(const wnn_graph *g, const uint32_t *uses,
                          const uint32_t *first, const uint32_t *consumer,
                          const bool *is_out, wnn_fusion *f)
{
    const wnn_ir *ir = g->ir;
    const wnn_plan *p = &g->plan;
    actx a = { .ir = ir, .uses = uses, .first = first, .consumer = consumer,
               .is_out = is_out, .chain_of = f->chain_of };
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        wnn_epilogue e;
        if (ir->nodes[id].op != WNN_OP_MATMUL || !attention_at(&a, id, &e)) {
            continue;
        }
        uint32_t k = ++f->n_chains;
        f->chains[k - 1] = e;
        f->chain_of[e.producer] = k;
        if (e.scale) {
            f->chain_of[e.scale - 1] = k;
        }
        if (e.add != WNN_NO_NODE) {
            f->chain_of[e.add] = k;
        }
        f->chain_of[e.act] = k;
        if (e.guard) {
            const wnn_node *w = &ir->nodes[e.guard - 1];
            f->chain_of[e.guard - 1] = k;
            f->chain_of[ir->operands[w->in[0]].node] = k;
        }
        f->chain_of[e.last] = k;
        for (uint32_t i = 0; i < a.n_skipped; i++) {
            f->chain_of[a.skipped[i]] = k;
        }
    }
}
