/* fuse_qdq.c -- quantized regions (WNN_FUSE_QDQ, backend.h): the chains
 *
 *   dequantizeLinear(x: uint8 / int8)      \
 *   dequantizeLinear(w: constant int8/uint8) -> conv2d | matmul | gemm
 *       -> [add(bias)] -> [relu | clamp] -> quantizeLinear(-> uint8 / int8)
 *
 * -> [dequantizeLinear (the chain's result then float32)]
 *
 * or, a matmul's w the dequantizeLinear of an activation (uint8 / int8,
 * scale and zero point per tensor; attention's q k^T and p v), of rank 2 or
 * a batch of matrices as x's (no broadcast)
 *
 * that a backend may run as one integer step.  Each intermediate (the
 * dequantized weights, the producer's, the add's and the activation's
 * result) is read once, by the next node, and is not a graph output; the
 * dequantized x may be read by other nodes too (then its dequantizeLinear
 * runs for them, outside the chain, whose step reads x itself).
 * Scales are float32 and, like the zero points, constants; x's and the
 * output's are per tensor (one element), the weights' per tensor or per
 * output channel.  conv2d: nhwc input, groups 1 (any filter layout, padding,
 * strides, dilations), its bias (if any) a float32 constant or the
 * dequantizeLinear of a constant, no add then; matmul: a of rank >= 2, b the
 * [K, N] weights; gemm: alpha 1, a not transposed, b the weights ([K, N],
 * or [N, K] transposed), c (if any) with beta 1 a bias as conv2d's.  The
 * add's other input is such a bias over the output channel (the last
 * axis).  The bias's dequantizeLinear reads an int32 / int8 / uint8
 * constant, with scale and zero point per tensor or per channel.
 * Backend-neutral: it only reads the IR. */
#include <string.h>

#include "fuse.h"
#include "lower/lower.h"
#include "../ops/ops_internal.h"
#include "../ops/options.h"

/* the longest sum of u8 x s8 products that stays within int32 */
#define QDQ_MAX_K 65536

typedef struct qctx {
    const wnn_ir *ir;
    const uint32_t *uses, *consumer;
    const bool *is_out;
    const uint32_t *chain_of;
} qctx;

static const wnn_desc *
desc(const qctx *q, uint32_t id)
{
    return &q->ir->operands[id].desc;
}

static bool
is_const(const qctx *q, uint32_t id)
{
    return q->ir->operands[id].kind == WNN_OPERAND_CONSTANT;
}

/* an intermediate only the next node reads; its producer, free */
static const wnn_node *
sole_producer(const qctx *q, uint32_t id, uint32_t *node)
{
    const wnn_operand *o = &q->ir->operands[id];
    if (o->kind != WNN_OPERAND_NODE || q->uses[id] != 1 || q->is_out[id] ||
        q->chain_of[o->node]) {
        return NULL;
    }
    *node = o->node;
    return &q->ir->nodes[o->node];
}

/* the dequantizeLinear of x: the producer of id, read by the chain's
 * producer alone (then part of the chain) or by other nodes too (a ResNet
 * block's input, read by its first convolution and by the residual add or
 * the downsampling convolution): then it runs as it is for them and the
 * chain reads its integer input itself (the plan keeps that alive to the
 * chain's end: plan.c) */
static const wnn_node *
x_producer(const qctx *q, uint32_t id, uint32_t *node)
{
    const wnn_operand *o = &q->ir->operands[id];
    if (o->kind != WNN_OPERAND_NODE || q->chain_of[o->node]) {
        return NULL;
    }
    *node = o->node;
    return &q->ir->nodes[o->node];
}

static bool
int8_type(wnn_dtype t)
{
    return t == WNN_UINT8 || t == WNN_INT8;
}

/* a dequantizeLinear / quantizeLinear whose scale is float32 and whose
 * scale and zero point are constants; per_tensor: one element each */
static bool
quant_node(const qctx *q, const wnn_node *n, wnn_op op, bool per_tensor)
{
    if (n->op != op || n->n_in != 3 || n->n_out != 1 ||
        desc(q, n->in[1])->dtype != WNN_FLOAT32 || !is_const(q, n->in[1]) ||
        !is_const(q, n->in[2])) {
        return false;
    }
    return !per_tensor || (wnn_desc_elements(desc(q, n->in[1])) == 1 &&
                           wnn_desc_elements(desc(q, n->in[2])) == 1);
}

/* the weights' scale (and zero point) per tensor or per output channel:
 * 1 everywhere but at axis oax, where it is O */
static bool
weight_scale(const wnn_desc *s, uint32_t oax, int64_t O)
{
    uint64_t e = wnn_desc_elements(s);
    if (e == 1) {
        return true;
    }
    for (uint32_t d = 0; d < s->rank; d++) {
        if (s->shape[d] != (d == oax ? (uint64_t)O : 1)) {
            return false;
        }
    }
    return true;
}

/* the weights' output-channel axis, and O */
static bool
producer_ok(const qctx *q, const wnn_node *p, uint32_t *oax, int64_t *O)
{
    const wnn_desc *x = desc(q, p->in[0]), *w = desc(q, p->in[1]);
    const wnn_desc *y = desc(q, p->out[0]);
    if (p->n_out != 1 || y->dtype != WNN_FLOAT32) {
        return false;
    }
    if (p->op == WNN_OP_MATMUL) {
        /* w [K, N], or a batch of them as x's (no broadcast) */
        if (p->n_in != 2 || x->rank < 2 || w->rank < 2 ||
            (w->rank > 2 && (w->rank != x->rank ||
                             memcmp(w->shape, x->shape,
                                    (w->rank - 2) * sizeof(w->shape[0]))))) {
            return false;
        }
        *oax = w->rank - 1;
        *O = w->shape[w->rank - 1];
        return w->shape[w->rank - 2] <= QDQ_MAX_K;
    }
    if (p->op == WNN_OP_GEMM) {
        const wnn_gemm_options *o = p->options;
        if (x->rank != 2 || w->rank != 2 || o->alpha != 1.0 ||
            o->a_transpose || (o->c && o->beta != 1.0)) {
            return false;
        }
        *oax = o->b_transpose ? 0 : 1;
        *O = w->shape[*oax];
        return w->shape[1 - *oax] <= QDQ_MAX_K;
    }
    if (p->op != WNN_OP_CONV2D) {
        return false;
    }
    const wnn_conv2d_options *o = p->options;
    wnn_conv_params cp;
    wnn_lower_conv(&cp, p, x, w, y);
    if (!cp.nhwc || cp.G != 1) {
        return false;
    }
    static const uint32_t oaxis[] = { [WNN_CONV_OIHW] = 0, [WNN_CONV_HWIO] = 3,
                                      [WNN_CONV_OHWI] = 0, [WNN_CONV_IHWO] = 3 };
    *oax = oaxis[o->filter_layout];
    *O = cp.O;
    return cp.KH * cp.KW * cp.C <= QDQ_MAX_K;
}

/* a per-channel bias of O float32 elements: a constant, or the
 * dequantizeLinear of a constant (its node id + 1 in *dq, else 0) */
static bool
bias_ok(const qctx *q, uint32_t id, const wnn_desc *yd, uint32_t *dq)
{
    const wnn_desc *b = desc(q, id);
    int64_t O = yd->shape[yd->rank - 1];
    *dq = 0;
    if (b->dtype != WNN_FLOAT32 || wnn_desc_elements(b) != (uint64_t)O ||
        b->rank > yd->rank || (b->rank && b->shape[b->rank - 1] != O)) {
        return false;
    }
    if (is_const(q, id)) {
        return true;
    }
    uint32_t nid;
    const wnn_node *n = sole_producer(q, id, &nid);
    wnn_dtype bt = n ? desc(q, n->in[0])->dtype : WNN_FLOAT32;
    if (!n || !quant_node(q, n, WNN_OP_DEQUANTIZE_LINEAR, false) ||
        !is_const(q, n->in[0]) ||
        (bt != WNN_INT32 && bt != WNN_INT8 && bt != WNN_UINT8)) {
        return false;
    }
    for (int j = 1; j <= 2; j++) {
        uint64_t e = wnn_desc_elements(desc(q, n->in[j]));
        if (e != 1 && e != (uint64_t)O) {
            return false;
        }
    }
    *dq = nid + 1;
    return true;
}

/* the chain ending at quantizeLinear node qid, or false */
static bool
match(const qctx *q, uint32_t qid, wnn_epilogue *e)
{
    const wnn_ir *ir = q->ir;
    const wnn_node *qn = &ir->nodes[qid];
    if (!quant_node(q, qn, WNN_OP_QUANTIZE_LINEAR, true) ||
        !int8_type(desc(q, qn->out[0])->dtype) ||
        desc(q, qn->in[0])->dtype != WNN_FLOAT32) {
        return false;
    }
    *e = (wnn_epilogue){ .add = WNN_NO_NODE, .act = WNN_NO_NODE,
                         .last = qid, .result = qn->out[0],
                         .kind = WNN_FUSE_QDQ, .bias = WNN_NO_NODE,
                         .add_kind = WNN_EPI_ADD_NONE };
    uint32_t t = qn->in[0], id;
    const wnn_node *n = sole_producer(q, t, &id);
    if (n && (n->op == WNN_OP_RELU || n->op == WNN_OP_CLAMP) &&
        n->n_out == 1) {
        e->act = id;
        t = n->in[0];
        n = sole_producer(q, t, &id);
    }
    uint32_t add_other = WNN_NO_NODE;
    if (n && n->op == WNN_OP_ADD && n->n_in == 2 && n->n_out == 1) {
        e->add = id;
        uint32_t a0 = n->in[0], a1 = n->in[1];
        uint32_t pid;
        const wnn_node *p0 = sole_producer(q, a0, &pid);
        bool first = p0 && (p0->op == WNN_OP_CONV2D || p0->op == WNN_OP_MATMUL ||
                            p0->op == WNN_OP_GEMM);
        t = first ? a0 : a1;
        add_other = first ? a1 : a0;
        if (!wnn_desc_same_shape(desc(q, n->out[0]), desc(q, t))) {
            return false;
        }
        n = sole_producer(q, t, &id);
    }
    uint32_t oax;
    int64_t O;
    if (!n || !producer_ok(q, n, &oax, &O)) {
        return false;
    }
    e->producer = id;
    const wnn_desc *yd = desc(q, n->out[0]);
    e->channel_axis = yd->rank - 1;
    if (n->op == WNN_OP_CONV2D || n->op == WNN_OP_GEMM) {
        uint32_t b = n->op == WNN_OP_GEMM
                         ? ((const wnn_gemm_options *)n->options)->c
                         : ((const wnn_conv2d_options *)n->options)->bias;
        if (b && add_other != WNN_NO_NODE) {
            return false;
        }
        if (b) {
            add_other = n->in[b - 1];
        }
    }
    if (add_other != WNN_NO_NODE) {
        if (!bias_ok(q, add_other, yd, &e->dq_b)) {
            return false;
        }
        e->bias = add_other;
        e->addend = add_other;
        e->add_kind = e->add != WNN_NO_NODE ? WNN_EPI_ADD_CHANNEL
                                            : WNN_EPI_ADD_NONE;
    }
    uint32_t dx = 0, dw = 0;
    const wnn_node *nx = x_producer(q, n->in[0], &dx);
    const wnn_node *nw = sole_producer(q, n->in[1], &dw);
    if (!nx || !nw || dx == dw ||
        !quant_node(q, nx, WNN_OP_DEQUANTIZE_LINEAR, true) ||
        !int8_type(desc(q, nx->in[0])->dtype) ||
        !int8_type(desc(q, nw->in[0])->dtype)) {
        return false;
    }
    /* constant weights (scale per tensor or per output channel), or a
     * matmul's second activation (attention's products; the backend packs
     * it per dispatch): per tensor */
    bool wconst = is_const(q, nw->in[0]);
    bool dyn = n->op == WNN_OP_MATMUL &&
               (!wconst || desc(q, n->in[1])->rank > 2);
    if (dyn ? !quant_node(q, nw, WNN_OP_DEQUANTIZE_LINEAR, true)
            : !wconst || !quant_node(q, nw, WNN_OP_DEQUANTIZE_LINEAR, false) ||
                  !weight_scale(desc(q, nw->in[1]), oax, O) ||
                  !weight_scale(desc(q, nw->in[2]), oax, O)) {
        return false;
    }
    e->dq_x = dx + 1;
    e->dq_w = dw + 1;
    return true;
}

/* the quantizeLinear's result read only by a dequantizeLinear (per tensor,
 * float32 out) and not a graph output, that dequantizeLinear not the x of
 * another region (then that region reads the integers): the chain ends
 * there instead, its result that dequantizeLinear's float32 (the next
 * operators' input; the backend writes it straight from the integers).
 * After every region is found (fusion's chain_of filled). */
static void
take_dequantize(const qctx *q, const wnn_fusion *f, wnn_epilogue *e)
{
    const wnn_node *qn = &q->ir->nodes[e->last];
    uint32_t r = qn->out[0];
    if (q->uses[r] != 1 || q->is_out[r]) {
        return;
    }
    uint32_t did = q->consumer[r];
    const wnn_node *dn = &q->ir->nodes[did];
    if (q->chain_of[did] || !quant_node(q, dn, WNN_OP_DEQUANTIZE_LINEAR, true) ||
        dn->in[0] != r || desc(q, dn->out[0])->dtype != WNN_FLOAT32) {
        return;
    }
    for (uint32_t k = 0; k < f->n_chains; k++) {
        if (f->chains[k].kind == WNN_FUSE_QDQ && f->chains[k].dq_x == did + 1) {
            return;
        }
    }
    e->last = did;
    e->result = dn->out[0];
}

/* called by wnn_fusion_find before the other kinds (fuse.c) */
void
wnn_fusion_find_qdq(const wnn_graph *g, const uint32_t *uses,
                    const uint32_t *consumer, const bool *is_out,
                    wnn_fusion *f)
{
    const wnn_plan *p = &g->plan;
    qctx q = { g->ir, uses, consumer, is_out, f->chain_of };
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        wnn_epilogue e;
        if (g->ir->nodes[id].op != WNN_OP_QUANTIZE_LINEAR || f->chain_of[id] ||
            !match(&q, id, &e)) {
            continue;
        }
        uint32_t k = ++f->n_chains;
        f->chains[k - 1] = e;
        const uint32_t nodes[] = { e.dq_x - 1, e.dq_w - 1, e.producer, e.last,
                                   e.add, e.act, e.dq_b ? e.dq_b - 1
                                                        : WNN_NO_NODE };
        /* a dequantizeLinear of x read elsewhere too runs on its own */
        const wnn_node *dx = &g->ir->nodes[e.dq_x - 1];
        bool shared_x = uses[dx->out[0]] != 1 || is_out[dx->out[0]];
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
            if (nodes[i] != WNN_NO_NODE && !(i == 0 && shared_x)) {
                f->chain_of[nodes[i]] = k;
            }
        }
    }
    for (uint32_t k = 0; k < f->n_chains; k++) {
        wnn_epilogue *e = &f->chains[k];
        uint32_t qid = e->last;
        if (e->kind != WNN_FUSE_QDQ) {
            continue;
        }
        take_dequantize(&q, f, e);
        if (e->last != qid) {
            f->chain_of[e->last] = k + 1;
        }
    }
}
