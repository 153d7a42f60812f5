/* layout.c -- layout planning (layout.h): a graph written in nchw runs its
 * convolutions in nhwc on a backend that prefers it (WNN_PLAN_NHWC), with
 * conversions at the edges of each nhwc region only.
 *
 * In the plan's order, every float conv2d whose input layout is nchw is
 * switched to nhwc (its options' input_layout; the filter keeps its layout,
 * which the kernels read as it is) and its output is stored nhwc.  An nhwc
 * operand stays nhwc through the operators that do not care about the
 * layout or can be told it: element-wise operators (the trait
 * WNN_TR_ANY_LAYOUT of their ops.def row) -- unary ones, binary ones whose
 * inputs both have the output's shape (a residual add; an nchw input is
 * transposed) --, pools (the family WNN_FAMILY_POOL) and
 * instanceNormalization (their layout option),
 * batchNormalization on the channel axis (axis 1 -> 3), concat of nhwc
 * inputs (its axis mapped), reductions (WNN_FAMILY_REDUCE: their axes
 * mapped, reduce_nhwc) and ShuffleNet's channel shuffle (shuffle_nhwc).
 * A transpose to nhwc of an operand stored nhwc, and one to nchw (stored
 * nhwc) of an operand in its logical layout, become identities
 * (transpose_cancels).  Any other reader, and a graph output, gets the
 * operand transposed back to nchw by a transpose node inserted before it
 * (made once per operand); a conv2d whose input is not nhwc gets it
 * transposed to nhwc the same way.  The rewritten graph is the one the
 * rest of the pipeline (fuse, plan, lower) and the backend see, and the
 * one summary() shows (the inserted nodes are labelled "layout ...").
 *
 * Only graphs with two or more such convolutions are planned (a single
 * convolution would pay two conversions for nothing).  Results equal the
 * unplanned graph's up to the summation order of the nhwc kernels. */
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "fuse.h"
#include "../ops/ops_internal.h"
#include "../ops/options.h"

typedef struct lp {
    wnn_graph *g;
    wnn_ir *ir;
    bool *nhwc;            /* per operand: stored nhwc                    */
    uint32_t *to_nhwc;     /* per operand: its nhwc copy, or WNN_NO_NODE  */
    uint32_t *to_nchw;     /* per nhwc operand: its nchw copy             */
    uint32_t n_cap;        /* capacity of the three arrays above          */
    uint32_t *order;       /* the new order                               */
    uint32_t n_order, cap_order;
} lp;

static bool
push_order(lp *s, uint32_t node)
{
    if (!wnn_grow((void **)&s->order, &s->cap_order, s->n_order + 1,
                  sizeof(uint32_t))) {
        return false;
    }
    s->order[s->n_order++] = node;
    return true;
}

static bool
is_conv_candidate(const wnn_ir *ir, const wnn_node *n)
{
    if (n->op != WNN_OP_CONV2D ||
        ((const wnn_conv2d_options *)n->options)->input_layout !=
            WNN_LAYOUT_NCHW) {
        return false;
    }
    const wnn_desc *x = &ir->operands[n->in[0]].desc;
    return x->rank == 4 && (x->dtype == WNN_FLOAT32 || x->dtype == WNN_FLOAT16);
}

/* A reduction of an nhwc operand (ONNX's GlobalAveragePool arrives as a
 * reduceMean over axes 2 and 3): its axes mapped to the stored order,
 * when the result is then nhwc (keepDimensions: *out_nhwc) or, without
 * keepDimensions, in the logical order already (the axes left keep their
 * order when stored: n, c once h and w are gone).  False: it reads the
 * nchw version instead. */
static bool
reduce_nhwc(wnn_node *n, bool *out_nhwc)
{
    static const uint32_t stored[4] = { 0, 3, 1, 2 }; /* n c h w -> n h w c */
    wnn_reduce_options *o = n->options;
    uint32_t m = o->axes_mask & 15, m2 = 0, last = 0;
    bool first = true;
    for (uint32_t d = 0; d < 4; d++) {
        if (m >> d & 1) {
            m2 |= 1u << stored[d];
        } else if (!o->keep_dimensions) {
            if (!first && stored[d] < last) {
                return false;
            }
            last = stored[d], first = false;
        }
    }
    if (o->axes.present) {
        uint32_t *v = (uint32_t *)o->axes.v;
        for (uint32_t i = 0; i < o->axes.n; i++) {
            v[i] = stored[v[i]];
        }
    }
    o->axes_mask = m2;
    *out_nhwc = o->keep_dimensions;
    return true;
}

static void
permute_desc(wnn_desc *d, bool to_nhwc)
{
    uint32_t n = d->shape[0], a = d->shape[1], b = d->shape[2], c = d->shape[3];
    if (to_nhwc) { /* [N, C, H, W] -> [N, H, W, C] */
        d->shape[1] = b, d->shape[2] = c, d->shape[3] = a;
    } else {       /* [N, H, W, C] -> [N, C, H, W] */
        d->shape[1] = c, d->shape[2] = a, d->shape[3] = b;
    }
    d->shape[0] = n;
}

/* A node `op` (options o) from src to a new operand of descriptor d,
 * stored nhwc or not, appended to the order; returns the new operand's id
 * or WNN_NO_NODE (out of memory). */
static uint32_t
add_node(lp *s, uint32_t src, wnn_op op, void *o, const wnn_desc *d,
         bool nhwc, const char *label)
{
    wnn_ir *ir = s->ir;
    if (!o ||
        !wnn_grow((void **)&ir->operands, &ir->cap_operands, ir->n_operands + 1,
                  sizeof(wnn_operand)) ||
        !wnn_grow((void **)&ir->nodes, &ir->cap_nodes, ir->n_nodes + 1,
                  sizeof(wnn_node))) {
        return WNN_NO_NODE;
    }
    uint32_t need = ir->n_operands + 1;
    if (need > s->n_cap) {
        uint32_t nc = need * 2;
        bool *a = realloc(s->nhwc, nc * sizeof(bool));
        if (a) {
            s->nhwc = a;
        }
        uint32_t *b = realloc(s->to_nhwc, nc * sizeof(uint32_t));
        if (b) {
            s->to_nhwc = b;
        }
        uint32_t *c = realloc(s->to_nchw, nc * sizeof(uint32_t));
        if (c) {
            s->to_nchw = c;
        }
        if (!a || !b || !c) {
            return WNN_NO_NODE;
        }
        s->n_cap = nc;
    }
    uint32_t *in = wnn_arena_alloc(&ir->arena, sizeof(uint32_t));
    uint32_t *out = wnn_arena_alloc(&ir->arena, sizeof(uint32_t));
    if (!in || !out) {
        return WNN_NO_NODE;
    }
    uint32_t id = ir->n_operands++, nid = ir->n_nodes++;
    wnn_operand *opd = &ir->operands[id];
    memset(opd, 0, sizeof(*opd));
    opd->desc = *d;
    opd->kind = WNN_OPERAND_NODE;
    opd->node = nid;
    in[0] = src;
    out[0] = id;
    ir->nodes[nid] = (wnn_node){ .op = op, .n_in = 1, .n_out = 1, .in = in,
                                 .out = out, .options = o, .label = label };
    s->nhwc[id] = nhwc;
    s->to_nhwc[id] = WNN_NO_NODE;
    s->to_nchw[id] = WNN_NO_NODE;
    if (!push_order(s, nid)) {
        return WNN_NO_NODE;
    }
    return id;
}

/* A transpose node src -> a new operand in the other layout. */
static uint32_t
add_transpose(lp *s, uint32_t src, bool to_nhwc)
{
    wnn_ir *ir = s->ir;
    wnn_transpose_options *o = wnn_arena_alloc(&ir->arena, sizeof(*o));
    uint32_t *perm = wnn_arena_alloc(&ir->arena, 4 * sizeof(uint32_t));
    if (!o || !perm) {
        return WNN_NO_NODE;
    }
    static const uint32_t p_nhwc[4] = { 0, 2, 3, 1 }, p_nchw[4] = { 0, 3, 1, 2 };
    memcpy(perm, to_nhwc ? p_nhwc : p_nchw, sizeof(p_nhwc));
    o->permutation = (wnn_u32_list){ .n = 4, .present = true, .v = perm };
    wnn_desc d = s->ir->operands[src].desc;
    permute_desc(&d, to_nhwc);
    return add_node(s, src, WNN_OP_TRANSPOSE, o, &d, to_nhwc,
                    to_nhwc ? "layout nchw->nhwc" : "layout nhwc->nchw");
}

/* A reshape node: a per-channel operand ([C, 1, 1], [1, C, 1, 1]: it
 * broadcasts along an nchw tensor's channels) as [C], which broadcasts
 * along the channels of an nhwc one. */
static uint32_t
add_channel_reshape(lp *s, uint32_t src, uint32_t channels)
{
    wnn_ir *ir = s->ir;
    wnn_reshape_options *o = wnn_arena_alloc(&ir->arena, sizeof(*o));
    uint32_t *shape = wnn_arena_alloc(&ir->arena, sizeof(uint32_t));
    if (!o || !shape) {
        return WNN_NO_NODE;
    }
    shape[0] = channels;
    memset(o, 0, sizeof(*o));
    o->new_shape = (wnn_u32_list){ .n = 1, .present = true, .v = shape };
    wnn_desc d = ir->operands[src].desc;
    d.rank = 1;
    d.shape[0] = channels;
    return add_node(s, src, WNN_OP_RESHAPE, o, &d, false,
                    "layout per-channel operand");
}

/* the nchw (to_nhwc false) or nhwc version of operand `id` */
static uint32_t
version(lp *s, uint32_t id, bool want_nhwc)
{
    if (s->nhwc[id] == want_nhwc) {
        return id;
    }
    uint32_t *cache = want_nhwc ? &s->to_nhwc[id] : &s->to_nchw[id];
    if (*cache == WNN_NO_NODE) {
        uint32_t v = add_transpose(s, id, want_nhwc);
        if (v == WNN_NO_NODE) {
            return WNN_NO_NODE;
        }
        cache = want_nhwc ? &s->to_nhwc[id] : &s->to_nchw[id]; /* moved */
        *cache = v;
    }
    return *cache;
}

/* node id's inputs from `first` on in nhwc (want_nhwc), or in nchw where
 * they are stored nhwc: each replaced by its version of that layout (made
 * on first need); false: out of memory.  The nodes may move. */
static bool
inputs_in(lp *s, uint32_t id, uint32_t first, bool want_nhwc)
{
    for (uint32_t j = first; j < s->ir->nodes[id].n_in; j++) {
        uint32_t in = s->ir->nodes[id].in[j];
        if (want_nhwc || s->nhwc[in]) {
            uint32_t v = version(s, in, want_nhwc);
            if (v == WNN_NO_NODE) {
                return false;
            }
            s->ir->nodes[id].in[j] = v;
        }
    }
    return true;
}

/* every input of n is stored nhwc */
static bool
all_nhwc(const lp *s, const wnn_node *n)
{
    for (uint32_t j = 0; j < n->n_in; j++) {
        if (!s->nhwc[n->in[j]]) {
            return false;
        }
    }
    return n->n_in > 0;
}

/* the operand's shape in the graph's (nchw) layout */
static wnn_desc
logical(const lp *s, uint32_t id)
{
    wnn_desc d = s->ir->operands[id].desc;
    if (s->nhwc[id]) {
        permute_desc(&d, false);
    }
    return d;
}

/* a binary node with an nhwc input whose inputs both have the output's
 * shape (no broadcasting: element i of each is element i of the output),
 * so that it can run in nhwc (the other input transposed, once) */
static bool
same_shapes(const lp *s, const wnn_node *n)
{
    const wnn_desc out = s->ir->operands[n->out[0]].desc; /* still nchw */
    if (n->n_in != 2 || out.rank != 4 ||
        (!s->nhwc[n->in[0]] && !s->nhwc[n->in[1]])) {
        return false;
    }
    wnn_desc a = logical(s, n->in[0]), b = logical(s, n->in[1]);
    return wnn_desc_same_shape(&a, &out) && wnn_desc_same_shape(&b, &out);
}

/* operand b broadcast against an nchw [N, C, H, W] output along the
 * channels at most: every dimension 1 but the one aligned with C, which may
 * be C (*chan set).  Stored nhwc, b qualifies as [1, C, 1, 1] only (a
 * squeeze-excitation's scale, made in the nhwc region): with h and w of 1
 * both layouts store its C values in the same order. */
static bool
channel_only(const lp *s, uint32_t b, const wnn_desc *out, bool *chan)
{
    const wnn_desc l = logical(s, b);
    const wnn_desc *d = &l;
    *chan = false;
    if (d->rank > 4 || out->rank != 4) {
        return false;
    }
    if (s->nhwc[b] && !(d->rank == 4 && d->shape[0] == 1 &&
                        d->shape[2] == 1 && d->shape[3] == 1)) {
        return false;
    }
    for (uint32_t i = 0; i < d->rank; i++) {
        if (d->shape[i] == 1) {
            continue;
        }
        if (4 - d->rank + i == 1 && d->shape[i] == out->shape[1]) {
            *chan = true;
            continue;
        }
        return false;
    }
    return true;
}

/* a binary element-wise node whose input a (0 or 1) is stored nhwc with
 * the output's shape and whose other input broadcasts along the channels
 * at most (a bias or scale of shape [C, 1, 1]): it runs in nhwc, the other
 * input as [C] */
static bool
nhwc_with_channel_operand(const lp *s, const wnn_node *n, uint32_t *a,
                          bool *chan)
{
    if (n->n_in != 2) {
        return false;
    }
    const wnn_desc *out = &s->ir->operands[n->out[0]].desc;
    for (uint32_t j = 0; j < 2; j++) {
        if (s->nhwc[n->in[j]]) {
            wnn_desc l = logical(s, n->in[j]);
            if (wnn_desc_same_shape(&l, out) &&
                channel_only(s, n->in[1 - j], out, chan)) {
                *a = j;
                return true;
            }
        }
    }
    return false;
}

/* a quantizeLinear or dequantizeLinear of an nhwc input whose scale and
 * zero point have one element each (per-tensor: they broadcast the same in
 * either layout) */
static bool
scalar_quantize(const lp *s, const wnn_node *n)
{
    if ((n->op != WNN_OP_QUANTIZE_LINEAR && n->op != WNN_OP_DEQUANTIZE_LINEAR) ||
        n->n_in != 3 || n->n_out != 1 || !s->nhwc[n->in[0]]) {
        return false;
    }
    for (uint32_t j = 1; j < 3; j++) {
        const wnn_desc *d = &s->ir->operands[n->in[j]].desc;
        if (s->nhwc[n->in[j]] || d->rank > 4) {
            return false;
        }
        for (uint32_t i = 0; i < d->rank; i++) {
            if (d->shape[i] != 1) {
                return false;
            }
        }
    }
    return true;
}

/* readers of each operand (the graph's outputs count) and, for each, its
 * last reader in plan order (WNN_NO_NODE: none) */
static void
count_readers(const wnn_graph *g, uint32_t *uses, uint32_t *reader)
{
    const wnn_ir *ir = g->ir;
    const wnn_plan *p = &g->plan;
    for (uint32_t i = 0; i <= ir->n_operands; i++) {
        reader[i] = WNN_NO_NODE;
    }
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        const wnn_node *n = &ir->nodes[p->order[pos]];
        for (uint32_t j = 0; j < n->n_in; j++) {
            uses[n->in[j]]++;
            reader[n->in[j]] = p->order[pos];
        }
    }
    for (uint32_t i = 0; i < g->n_outputs; i++) {
        uses[g->outputs[i].operand]++;
    }
}

/* a per-tensor quantizeLinear / dequantizeLinear of a 4-D nchw operand
 * whose result, through at most three more such nodes each read once,
 * only a convolution reads as its input (a QDQ model's first convolution:
 * x -> quantizeLinear -> dequantizeLinear -> conv2d): it runs in nhwc, its
 * input transposed (the float input, before it is quantized), so that the
 * dequantizeLinear meets the convolution and the region runs in integer
 * arithmetic (compiler/fuse_qdq.c) instead of a transpose between them */
static bool
leading_quantize(const lp *s, const uint32_t *uses, const uint32_t *reader,
                 const wnn_node *n)
{
    const wnn_ir *ir = s->ir;
    if (s->nhwc[n->in[0]] || ir->operands[n->in[0]].desc.rank != 4) {
        return false;
    }
    for (int depth = 0; depth < 4; depth++) {
        if ((n->op != WNN_OP_QUANTIZE_LINEAR &&
             n->op != WNN_OP_DEQUANTIZE_LINEAR) ||
            n->n_in != 3 || n->n_out != 1) {
            return false;
        }
        for (uint32_t j = 1; j < 3; j++) {
            const wnn_desc *d = &ir->operands[n->in[j]].desc;
            if (s->nhwc[n->in[j]] || d->rank > 4 || wnn_desc_elements(d) != 1) {
                return false;
            }
        }
        uint32_t o = n->out[0];
        if (uses[o] != 1 || reader[o] == WNN_NO_NODE) {
            return false;
        }
        n = &ir->nodes[reader[o]];
        if (is_conv_candidate(ir, n)) {
            return n->in[0] == o;
        }
    }
    return false;
}

static uint32_t *
u32s(wnn_ir *ir, uint32_t n, const uint32_t *v)
{
    uint32_t *a = wnn_arena_alloc(&ir->arena, n * sizeof(uint32_t));
    if (a) {
        memcpy(a, v, n * sizeof(uint32_t));
    }
    return a;
}

/* The node after position pos in the plan that reads operand id (its only
 * reader: uses[id] == 1), or NULL. */
static wnn_node *
only_reader(const lp *s, const uint32_t *uses, uint32_t pos, uint32_t id)
{
    const wnn_plan *p = &s->g->plan;
    if (uses[id] != 1) {
        return NULL;
    }
    for (uint32_t q = pos + 1; q < p->n_order; q++) {
        wnn_node *m = &s->ir->nodes[p->order[q]];
        for (uint32_t j = 0; j < m->n_in; j++) {
            if (m->in[j] == id) {
                return m;
            }
        }
    }
    return NULL;
}

/* A channel shuffle (ShuffleNet, as ONNX exports it): reshape [N, C, H, W]
 * -> [N, G, C/G, H, W], transpose [0, 2, 1, 3, 4], reshape -> [N, C, H, W],
 * each result read only by the next.  On an nhwc input (node r1, at
 * position pos) it is rewritten to run in nhwc -- [N, H, W, G, C/G],
 * transpose [0, 1, 2, 4, 3], [N, H, W, C], stored nhwc -- one transpose
 * instead of three (the layout conversions around it).  false: not this
 * pattern (nothing changed), or out of memory (*ok false). */
static bool
shuffle_nhwc(lp *s, const uint32_t *uses, uint32_t pos, wnn_node *r1,
             bool *ok)
{
    wnn_ir *ir = s->ir;
    if (r1->op != WNN_OP_RESHAPE || !s->nhwc[r1->in[0]]) {
        return false;
    }
    const wnn_desc x = logical(s, r1->in[0]);
    const wnn_desc *a = &ir->operands[r1->out[0]].desc;
    if (a->rank != 5 || a->shape[0] != x.shape[0] ||
        (uint64_t)a->shape[1] * a->shape[2] != x.shape[1] ||
        a->shape[3] != x.shape[2] || a->shape[4] != x.shape[3]) {
        return false;
    }
    wnn_node *t = only_reader(s, uses, pos, r1->out[0]);
    const wnn_transpose_options *to = t ? t->options : NULL;
    static const uint32_t shuffle[5] = { 0, 2, 1, 3, 4 };
    if (!t || t->op != WNN_OP_TRANSPOSE || to->permutation.n != 5 ||
        memcmp(to->permutation.v, shuffle, sizeof(shuffle)) != 0) {
        return false;
    }
    wnn_node *r2 = only_reader(s, uses, pos, t->out[0]);
    if (!r2 || r2->op != WNN_OP_RESHAPE ||
        !wnn_desc_same_shape(&ir->operands[r2->out[0]].desc, &x)) {
        return false;
    }
    const uint32_t N = x.shape[0], C = x.shape[1], H = x.shape[2],
                   W = x.shape[3], G = a->shape[1], Cg = a->shape[2];
    const uint32_t s1[5] = { N, H, W, G, Cg }, st[5] = { N, H, W, Cg, G },
                   s2[4] = { N, H, W, C }, perm[5] = { 0, 1, 2, 4, 3 };
    uint32_t *v1 = u32s(ir, 5, s1), *vp = u32s(ir, 5, perm),
             *v2 = u32s(ir, 4, s2);
    wnn_transpose_options *nto = wnn_arena_alloc(&ir->arena, sizeof(*nto));
    wnn_reshape_options *o1 = wnn_arena_alloc(&ir->arena, sizeof(*o1));
    wnn_reshape_options *o2 = wnn_arena_alloc(&ir->arena, sizeof(*o2));
    if (!v1 || !vp || !v2 || !nto || !o1 || !o2) {
        *ok = false;
        return true;
    }
    *o1 = *(const wnn_reshape_options *)r1->options;
    o1->new_shape = (wnn_u32_list){ .n = 5, .present = true, .v = v1 };
    r1->options = o1;
    memcpy(ir->operands[r1->out[0]].desc.shape, s1, sizeof(s1));
    *nto = *to;
    nto->permutation = (wnn_u32_list){ .n = 5, .present = true, .v = vp };
    t->options = nto;
    memcpy(ir->operands[t->out[0]].desc.shape, st, sizeof(st));
    *o2 = *(const wnn_reshape_options *)r2->options;
    o2->new_shape = (wnn_u32_list){ .n = 4, .present = true, .v = v2 };
    r2->options = o2;
    memcpy(ir->operands[r2->out[0]].desc.shape, s2, sizeof(s2));
    s->nhwc[r2->out[0]] = true; /* (r2 itself then runs as it is) */
    return true;
}

/* A transpose that the layout plan makes a copy (ConvNeXt's permutes
 * around its LayerNorm and MLP, as ONNX exports them): [0, 2, 3, 1] of an
 * operand stored nhwc gives its stored data as it is; [0, 3, 1, 2] of a
 * rank-4 operand in its logical layout gives an nchw tensor whose nhwc
 * storage is that operand's data (*out_nhwc: its result is stored nhwc).
 * The node becomes an identity, which the memory plan aliases to its
 * input (WNN_PLAN_ALIAS) where its result is an intermediate.  false: not
 * such a transpose (nothing changed), or out of memory (*ok false). */
static bool
transpose_cancels(lp *s, wnn_node *n, bool *out_nhwc, bool *ok)
{
    static const uint32_t p_nhwc[4] = { 0, 2, 3, 1 }, p_nchw[4] = { 0, 3, 1, 2 };
    if (n->op != WNN_OP_TRANSPOSE || n->n_in != 1 || n->n_out != 1) {
        return false;
    }
    const wnn_transpose_options *o = n->options;
    const wnn_desc *x = &s->ir->operands[n->in[0]].desc;
    if (!o->permutation.present || o->permutation.n != 4 || x->rank != 4) {
        return false;
    }
    const uint32_t *perm = o->permutation.v;
    bool stored = s->nhwc[n->in[0]];
    if (memcmp(perm, stored ? p_nhwc : p_nchw, sizeof(p_nhwc)) != 0) {
        return false;
    }
    wnn_no_options *none = wnn_arena_alloc(&s->ir->arena, sizeof(*none));
    if (!none) {
        *ok = false;
        return true;
    }
    memset(none, 0, sizeof(*none));
    n->op = WNN_OP_IDENTITY;
    n->options = none;
    *out_nhwc = !stored;
    return true;
}

wnn_status
wnn_layout_plan(wnn_graph *g, wnn_error *err)
{
    wnn_ir *ir = g->ir;
    wnn_plan *p = &g->plan;
    uint32_t convs = 0;
    for (uint32_t pos = 0; pos < p->n_order; pos++) {
        convs += is_conv_candidate(ir, &ir->nodes[p->order[pos]]);
    }
    if (convs < 2) {
        return WNN_OK;
    }
    lp s = { .g = g, .ir = ir };
    s.n_cap = ir->n_operands + 16;
    s.nhwc = calloc(s.n_cap, sizeof(bool));
    s.to_nhwc = malloc(s.n_cap * sizeof(uint32_t));
    s.to_nchw = malloc(s.n_cap * sizeof(uint32_t));
    /* readers of each operand (the graph's outputs count): shuffle_nhwc */
    uint32_t *uses = calloc(ir->n_operands + 1, sizeof(uint32_t));
    uint32_t *reader = malloc((ir->n_operands + 1) * sizeof(uint32_t));
    bool ok = s.nhwc && s.to_nhwc && s.to_nchw && uses && reader;
    if (ok) {
        count_readers(g, uses, reader);
    }
    for (uint32_t i = 0; ok && i < s.n_cap; i++) {
        s.to_nhwc[i] = s.to_nchw[i] = WNN_NO_NODE;
    }
    for (uint32_t pos = 0; ok && pos < p->n_order; pos++) {
        uint32_t id = p->order[pos];
        wnn_node *n = &ir->nodes[id];
        bool out_nhwc = false, chan;
        uint32_t cj;
        if (shuffle_nhwc(&s, uses, pos, n, &ok)) {
            /* its transpose and second reshape run as they are now */
        } else if (transpose_cancels(&s, n, &out_nhwc, &ok)) {
            /* an identity now: its input's storage as it is */
        } else if (is_conv_candidate(ir, n)) {
            uint32_t x = version(&s, n->in[0], true);
            ok = x != WNN_NO_NODE;
            n = &ir->nodes[id]; /* the nodes may have moved */
            if (ok) {
                n->in[0] = x;
                ((wnn_conv2d_options *)n->options)->input_layout =
                    WNN_LAYOUT_NHWC;
                out_nhwc = true;
            }
            /* the filter and bias are read as they are: nchw */
            ok = ok && inputs_in(&s, id, 1, false);
        } else if (wnn_op_family(n->op) == WNN_FAMILY_POOL &&
                   s.nhwc[n->in[0]] &&
                   ((wnn_pool2d_options *)n->options)->layout ==
                       WNN_LAYOUT_NCHW) {
            ((wnn_pool2d_options *)n->options)->layout = WNN_LAYOUT_NHWC;
            out_nhwc = true;
        } else if (n->op == WNN_OP_BATCH_NORMALIZATION && s.nhwc[n->in[0]] &&
                   ((wnn_batch_normalization_options *)n->options)->axis ==
                       1) {
            /* per channel: nhwc's channel axis is 3; mean, variance, scale
             * and bias are [C] */
            ((wnn_batch_normalization_options *)n->options)->axis = 3;
            ok = inputs_in(&s, id, 1, false);
            out_nhwc = true;
        } else if (n->op == WNN_OP_INSTANCE_NORMALIZATION &&
                   s.nhwc[n->in[0]] &&
                   ((wnn_instance_normalization_options *)n->options)
                           ->layout == WNN_LAYOUT_NCHW) {
            ((wnn_instance_normalization_options *)n->options)->layout =
                WNN_LAYOUT_NHWC;
            ok = inputs_in(&s, id, 1, false);
            out_nhwc = true;
        } else if (wnn_op_family(n->op) == WNN_FAMILY_REDUCE &&
                   s.nhwc[n->in[0]] &&
                   reduce_nhwc(n, &out_nhwc)) {
            /* its axes now in the stored order */
        } else if (n->op == WNN_OP_CONCAT && all_nhwc(&s, n)) {
            /* the same axis in the stored order: n c h w -> 0 3 1 2 */
            static const uint32_t stored[4] = { 0, 3, 1, 2 };
            wnn_concat_options *o = n->options;
            o->axis = stored[o->axis];
            out_nhwc = true;
        } else if (wnn_op_has(n->op, WNN_TR_ANY_LAYOUT) &&
                   n->n_out == 1 &&
                   nhwc_with_channel_operand(&s, n, &cj, &chan)) {
            /* x * scale[C, 1, 1] + bias[C, 1, 1] after a convolution */
            if (chan) { /* (a reshape of C elements per use) */
                uint32_t v = add_channel_reshape(
                    &s, n->in[1 - cj], ir->operands[n->out[0]].desc.shape[1]);
                ok = v != WNN_NO_NODE;
                n = &ir->nodes[id]; /* the nodes may have moved */
                if (ok) {
                    n->in[1 - cj] = v;
                }
            }
            out_nhwc = true;
        } else if (leading_quantize(&s, uses, reader, n)) {
            uint32_t x = version(&s, n->in[0], true);
            ok = x != WNN_NO_NODE;
            n = &ir->nodes[id]; /* the nodes may have moved */
            if (ok) {
                n->in[0] = x;
            }
            out_nhwc = true;
        } else if (scalar_quantize(&s, n)) {
            /* quantizeLinear / dequantizeLinear with one scale and zero
             * point: element by element, in nhwc as the convolutions of a
             * quantized region read and write it (compiler/fuse_qdq.c) */
            out_nhwc = true;
        } else if (wnn_op_has(n->op, WNN_TR_ANY_LAYOUT) &&
                   n->n_out == 1 &&
                   ((n->n_in == 1 && s.nhwc[n->in[0]]) || same_shapes(&s, n))) {
            /* element by element: any layout, the same for all */
            ok = inputs_in(&s, id, 0, true);
            out_nhwc = true;
        } else {
            ok = inputs_in(&s, id, 0, false);
        }
        n = &ir->nodes[id]; /* the nodes may have moved */
        if (ok && out_nhwc) {
            uint32_t o = n->out[0];
            permute_desc(&ir->operands[o].desc, true);
            s.nhwc[o] = true;
        }
        ok = ok && push_order(&s, id);
    }
    /* graph outputs in their logical layout */
    for (uint32_t i = 0; ok && i < g->n_outputs; i++) {
        uint32_t o = g->outputs[i].operand;
        if (s.nhwc[o]) {
            uint32_t v = version(&s, o, false);
            ok = v != WNN_NO_NODE;
            g->outputs[i].operand = ok ? v : o;
        }
    }
    free(s.nhwc);
    free(s.to_nhwc);
    free(s.to_nchw);
    free(uses);
    free(reader);
    if (!ok) {
        free(s.order);
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                         "out of memory while planning layouts");
    }
    free(p->order);
    p->order = s.order;
    p->n_order = s.n_order;
    return WNN_OK;
}
