/* cu_prep.c -- compile-time parameter blocks of each node (the dispatch
 * table from cuda_ops.h, op_limits, the prep_* functions).  What the core's
 * lowering computed (g->lowered, compiler/lower/: broadcast iterators, conv
 * and pool geometry, reduce runs, axis extents, gather / scatter strides,
 * quantize shapes, the movement operators' views; the CPU kernels read the
 * same blocks) is only copied into the kernels' types here
 * (cu_internal.h has the overview). */
#include "cu_internal.h"

/* The dispatch table, generated from cuda_ops.h (the CUDA column of the
 * operator table): launcher kind + 1 (0: no kernel) and the kernel's op
 * code of each operator. */
static const struct {
    int8_t kind1;
    int8_t code;
} cu_ops[WNN_OP_COUNT] = {
#define CU_OP(ID, kind, code) [WNN_OP_##ID] = { (kind) + 1, (code) },
#include "cuda_ops.h"
#undef CU_OP
};

int
cu_kind_of(wnn_op op)
{
    return (unsigned)op < WNN_OP_COUNT ? cu_ops[op].kind1 - 1 : K_NONE;
}

/* Data types the kernels of a kind handle (intersected with the spec's). */
uint16_t
kind_dtypes(int kind)
{
    switch (kind) {
    case K_MATMUL: case K_GEMM: case K_NORM: case K_BN: case K_SOFTMAX:
    case K_CONV: case K_RNN:
        return WNN_DT_FLOAT;
    default:
        return WNN_DT_ANY;
    }
}

int
cu_unary_op(wnn_op op)
{
    return cu_ops[op].code;
}

int
cu_binary_op(wnn_op op)
{
    return cu_ops[op].code;
}

uint64_t
cu_prod(const uint32_t *shape, uint32_t lo, uint32_t hi)
{
    uint64_t p = 1;
    for (uint32_t i = lo; i < hi; i++) {
        p *= shape[i];
    }
    return p;
}

/* The broadcast iterator lowered once by the core (compiler/lower/
 * broadcast.c, the CPU kernels read the same block) in the kernels' types. */
void
bcast_from(ck_bcast *it, const wnn_broadcast_params *bp)
{
    memset(it, 0, sizeof(*it));
    it->rank = (int)bp->rank;
    for (uint32_t d = 0; d < bp->rank; d++) {
        it->shape[d] = (uint32_t)bp->shape[d];
        for (uint32_t k = 0; k < bp->n; k++) {
            it->st[k][d] = bp->st[k][d];
        }
    }
}

/* One of the CUDA backend's own views (gemm's c broadcast, cu_dnn.c's
 * filter transpose; offsets 0) simplified by the core's rule
 * (wnn_view_simplify, through the services table), as the movement
 * operators' views come lowered; sets n and plain. */
void
view_finish(cu_view *v, int es)
{
    wnn_view w;
    memset(&w, 0, sizeof(w));
    w.rank = v->p.rank;
    w.in = v->in;
    w.out = v->out;
    for (int d = 0; d < w.rank; d++) {
        w.shape[d] = v->p.shape[d];
        w.is[d] = v->p.is[d];
        w.os[d] = v->p.os[d];
    }
    cu_core->view_simplify(&w);
    view_from(v, &w, es);
}

/* A view lowered by the core (compiler/lower/views.c: simplified) in the
 * kernels' types; sets plain. */
void
view_from(cu_view *cv, const wnn_view *v, int es)
{
    ck_view_p *p = &cv->p;
    memset(cv, 0, sizeof(*cv));
    p->rank = v->rank;
    p->es = es;
    p->n = v->n;
    for (int d = 0; d < v->rank; d++) {
        p->shape[d] = (uint32_t)v->shape[d];
        p->is[d] = v->is[d];
        p->os[d] = v->os[d];
    }
    cv->in = v->in;
    cv->out = v->out;
    cv->in_off = v->in_off * es;
    cv->out_off = v->out_off * es;
    cv->plain = v->rank == 1 && v->is[0] == 1 && v->os[0] == 1;
}

/* ---- per-operator preparation (at compile) ------------------------------------ */
void
prep_unary(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_node *node = cn->node;
    ck_unary_p *p = &cn->u.un;
    wnn_dtype t = in->dtype;
    memset(p, 0, sizeof(*p));
    p->op = cu_unary_op(node->op);
    p->ti = in->dtype;
    p->to = out->dtype;
    p->n = (int64_t)cu_core->desc_elements(out);
    wnn_scalar_params sp;
    cu_core->scalar_params_of(node->op, node->options, t, &sp);
    p->a = sp.a;
    p->b = sp.b;
    p->lo = sp.lo;
    p->hi = sp.hi;
    p->ilo = sp.ilo;
    p->ihi = sp.ihi;
    p->ulo = sp.ulo;
    p->uhi = sp.uhi;
}

void
prep_binary(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_binary_p *p = &cn->u.bin;
    p->op = cu_binary_op(cn->node->op);
    p->ti = in[0].dtype;
    p->to = out->dtype;
    p->n = (int64_t)cu_core->desc_elements(out);
    bcast_from(&p->it, &cn->lowered->u.bcast);
}

void
prep_where(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_where_p *p = &cn->u.wh;
    p->es = (int)cu_core->dtype_size(out->dtype);
    p->n = (int64_t)cu_core->desc_elements(out);
    bcast_from(&p->it, &cn->lowered->u.bcast);
}

/* Views of transpose expand slice tile reverse split concat, lowered by
 * the core (compiler/lower/views.c; cpu/kernels/movement/ reads the same). */
bool
prep_views(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    (void)out;
    const wnn_views_params *q = &cn->lowered->u.views;
    cn->views = calloc(q->n ? q->n : 1, sizeof(cu_view));
    if (!cn->views) {
        return false;
    }
    cn->n_views = q->n;
    int es = (int)cu_core->dtype_size(in[0].dtype);
    for (uint32_t j = 0; j < q->n; j++) {
        view_from(&cn->views[j], &q->v[j], es);
    }
    return true;
}

void
prep_pad(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    /* lowered by the core (compiler/lower/views.c) */
    const wnn_pad_params *q = &cn->lowered->u.pad;
    ck_pad_p *p = &cn->u.pad;
    memset(p, 0, sizeof(*p));
    p->rank = (int)q->rank;
    p->es = (int)cu_core->dtype_size(in->dtype);
    p->mode = q->mode == WNN_PAD_EDGE         ? CK_PAD_EDGE
              : q->mode == WNN_PAD_REFLECTION ? CK_PAD_REFLECTION
                                              : CK_PAD_CONSTANT;
    p->n = (int64_t)cu_core->desc_elements(out);
    for (uint32_t d = 0; d < q->rank; d++) {
        p->ist[d] = q->ist[d];
        p->ishape[d] = in->shape[d];
        p->oshape[d] = out->shape[d];
        p->begin[d] = q->begin[d];
    }
    p->value = q->value;
}

void
prep_nd(ck_nd_p *p, const wnn_desc *in, const wnn_desc *ix,
        const wnn_gather_params *q)
{
    memset(p, 0, sizeof(*p));
    p->es = (int)cu_core->dtype_size(in->dtype);
    p->it = ix->dtype;
    p->coord = (int)q->coord;
    p->tuples = (int64_t)q->tuples;
    p->slice = (int64_t)q->slice;
    p->n_slices = (int64_t)q->n_slices;
    for (uint32_t d = 0; d < q->coord; d++) {
        p->dims[d] = (int64_t)q->dims[d];
        p->strides[d] = (int64_t)q->strides[d];
    }
}

/* Groups of instance / layer normalization, lowered by the core
 * (compiler/lower/reduce.c; cpu/kernels/normalization/ reads the same). */
void
prep_norm(cu_node *cn, const wnn_desc *in)
{
    const wnn_norm_params *q = &cn->lowered->u.norm;
    ck_norm_p *p = &cn->u.norm;
    memset(p, 0, sizeof(*p));
    p->dt = in->dtype;
    p->nk = (int)q->nk;
    p->nr = (int)q->nr;
    for (uint32_t j = 0; j < q->nk; j++) {
        p->kext[j] = (uint32_t)q->kext[j];
        p->kst[j] = q->kst[j];
    }
    for (uint32_t j = 0; j < q->nr; j++) {
        p->rext[j] = (uint32_t)q->rext[j];
        p->rst[j] = q->rst[j];
    }
    p->per_channel = q->per_channel;
    p->G = q->G;
    p->S = q->S;
    if (cn->node->op == WNN_OP_INSTANCE_NORMALIZATION) {
        const wnn_instance_normalization_options *o = cn->node->options;
        p->eps = o->epsilon;
        cn->scale = o->scale;
        cn->bias = o->bias;
    } else {
        const wnn_layer_normalization_options *o = cn->node->options;
        p->eps = o->epsilon;
        cn->scale = o->scale;
        cn->bias = o->bias;
    }
}

/* Blockwise broadcasting of scale / zeroPoint. */
void
prep_quant(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_quant_p *p = &cn->u.q;
    memset(p, 0, sizeof(*p));
    p->dequant = cn->node->op == WNN_OP_DEQUANTIZE_LINEAR;
    p->it = in[0].dtype;
    p->st = in[1].dtype;
    p->zt = in[2].dtype;
    p->ot = out->dtype;
    p->n = (int64_t)cu_core->desc_elements(&in[0]);
    /* lowered by the core (compiler/lower/quantize.c) */
    const wnn_quant_params *q = &cn->lowered->u.quant;
    p->rank = (int)q->rank;
    for (uint32_t d = 0; d < q->rank; d++) {
        p->shape[d] = (uint32_t)q->shape[d];
        p->block[d] = (uint32_t)q->block[d];
        p->sstride[d] = (int64_t)q->sstride[d];
    }
}

int
cu_reduce_op(wnn_op op)
{
    return cu_ops[op].code;
}

/* reduce*: the runs lowered by the core (compiler/lower/reduce.c). */
void
prep_reduce(cu_node *cn, const wnn_desc *in)
{
    const wnn_reduce_params *q = &cn->lowered->u.reduce;
    ck_reduce_p *p = &cn->u.red;
    memset(p, 0, sizeof(*p));
    p->op = cu_reduce_op(cn->node->op);
    p->dt = in->dtype;
    p->nk = (int)q->nk;
    p->nr = (int)q->nr;
    p->G = (int64_t)q->O;
    p->S = (int64_t)q->R;
    for (uint32_t j = 0; j < q->nk; j++) {
        p->kext[j] = (uint32_t)q->kext[j];
        p->kst[j] = (int64_t)q->kst[j];
    }
    for (uint32_t j = 0; j < q->nr; j++) {
        p->rext[j] = (uint32_t)q->rext[j];
        p->rst[j] = (int64_t)q->rst[j];
    }
}

void
prep_axis(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_axis_params *q = &cn->lowered->u.axis; /* compiler/lower/reduce.c */
    ck_axis_p *p = &cn->u.ax;
    memset(p, 0, sizeof(*p));
    p->dt = in->dtype;
    p->to = out->dtype;
    p->n = (int64_t)q->n;
    p->outer = (int64_t)q->outer;
    p->inner = (int64_t)q->inner;
}

void
prep_pool(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    /* the geometry lowered by the core (compiler/lower/pool.c) */
    const wnn_pool_params *q = &cn->lowered->u.pool;
    ck_pool_p *p = &cn->u.pool;
    memset(p, 0, sizeof(*p));
    wnn_op op = cn->node->op;
    p->op = op == WNN_OP_AVERAGE_POOL2D ? CK_POOL_AVG
            : op == WNN_OP_L2_POOL2D   ? CK_POOL_L2
                                       : CK_POOL_MAX;
    p->dt = in->dtype;
    p->nhwc = q->nhwc;
    p->n = (int64_t)cu_core->desc_elements(out);
    p->N = q->N, p->C = q->C, p->H = q->H, p->W = q->W;
    p->OH = q->OH, p->OW = q->OW;
    p->kh = q->kh, p->kw = q->kw;
    p->sh = q->sh, p->sw = q->sw, p->dh = q->dh, p->dw = q->dw;
    p->pt = q->pad[0], p->pl = q->pad[2];
}

void
prep_conv(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    /* the geometry lowered once by the core (compiler/lower/conv.c; the CPU
     * kernels read the same block) */
    const wnn_conv_params *q = &cn->lowered->u.conv;
    ck_conv_p *p = &cn->u.conv;
    memset(p, 0, sizeof(*p));
    p->transpose = q->transpose;
    p->flayout = q->filter_layout;
    p->dt = in[0].dtype;
    p->nhwc = q->nhwc;
    p->n = (int64_t)cu_core->desc_elements(out);
    p->N = q->N, p->C = q->C, p->H = q->H, p->W = q->W;
    p->O = q->O, p->OH = q->OH, p->OW = q->OW;
    p->KH = q->KH, p->KW = q->KW;
    p->sh = q->sh, p->sw = q->sw, p->dh = q->dh, p->dw = q->dw;
    p->pt = q->pad[0], p->pl = q->pad[2];
    p->groups = q->G;
    p->has_bias = q->bias != 0;
    cn->bias = q->bias;
}

/* matmul and gemm: the lowered shapes (compiler/lower/matmul.c) copied
 * into the cuBLAS launchers' plans */
void
prep_matmul(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    (void)in;
    const wnn_matmul_params *q = &cn->lowered->u.matmul;
    mm_plan *m = &cn->u.mm;
    memset(m, 0, sizeof(*m));
    m->dt = out->dtype;
    m->M = (int)q->M;
    m->N = (int)q->N;
    m->K = (int)q->K;
    m->batch = (int)q->batch;
    if (q->mode == WNN_MM_ONE) {
        /* b shared: a's matrices are one tall matrix */
        m->mode = MM_ONE;
        m->M = (int)(q->M * q->batch);
        m->batch = 1;
    } else if (q->mode == WNN_MM_STRIDED) {
        m->mode = MM_STRIDED;
        m->sa = q->ma;
        m->sb = q->mb;
        m->sc = q->M * q->N;
    } else {
        /* batch dimensions broadcast both ways: pointer arrays */
        m->mode = MM_POINTERS;
        ck_bptr_p *bp = &m->bp;
        size_t es = cu_core->dtype_size(out->dtype);
        bp->rb = (int)q->rb;
        bp->batch = q->batch;
        for (uint32_t d = 0; d < q->rb; d++) {
            bp->oshape[d] = (uint32_t)q->bshape[d];
            bp->sa[d] = q->sa[d];
            bp->sb[d] = q->sb[d];
        }
        bp->ma = q->M * q->K * (int64_t)es;
        bp->mb = q->K * q->N * (int64_t)es;
        bp->mc = q->M * q->N * (int64_t)es;
        cn->scratch = 3 * (uint64_t)q->batch * sizeof(void *);
    }
}

void
prep_gemm(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    (void)in;
    const wnn_gemm_params *q = &cn->lowered->u.gemm;
    gemm_plan *g = &cn->u.gm;
    memset(g, 0, sizeof(*g));
    wnn_dtype t = out->dtype;
    g->dt = t;
    g->M = (int)q->M;
    g->N = (int)q->N;
    g->K = (int)q->K;
    g->lda = (int)q->lda;
    g->ldb = (int)q->ldb;
    g->ta = q->ta;
    g->tb = q->tb;
    g->alpha = q->alpha;
    g->beta = q->beta;
    if (q->c) {
        /* c broadcast into the output, then accumulated onto */
        cu_view *v = &g->cview;
        v->p.rank = 2;
        v->p.shape[0] = q->M;
        v->p.shape[1] = q->N;
        v->p.is[0] = q->cs0;
        v->p.is[1] = q->cs1;
        v->p.os[0] = q->N;
        v->p.os[1] = 1;
        view_finish(v, (int)cu_core->dtype_size(t));
        g->use_c = true;
        g->c_in = q->c - 1;
        if (t == WNN_FLOAT16) {
            /* the float32 sum (cu_blas.c run_gemm) */
            cn->scratch = (uint64_t)q->M * q->N * sizeof(float);
        }
    }
}

/* Scratch bytes, 256-byte aligned pieces. */
uint64_t
rnn_take(uint64_t *at, uint64_t floats)
{
    uint64_t off = *at;
    *at += (floats * sizeof(float) + 255) / 256 * 256;
    return off;
}

void
prep_rnn(cu_node *cn, const wnn_desc *in)
{
    rnn_plan *r = &cn->u.rnn;
    ck_rnn_p *p = &r->p;
    memset(r, 0, sizeof(*r));
    const wnn_node *node = cn->node;
    const wnn_u32_list *acts;
    int layout;
    p->dt = in[0].dtype;
    p->direction = CK_RNN_FORWARD;
    switch (node->op) {
    case WNN_OP_GRU: {
        const wnn_gru_options *o = node->options;
        p->T = in[0].shape[0], p->B = in[0].shape[1], r->I = in[0].shape[2];
        p->H = o->hidden_size, p->reset_after = o->reset_after;
        p->direction = o->direction;
        r->bias = o->bias, r->rbias = o->recurrent_bias;
        r->h0 = o->initial_hidden_state;
        r->out_seq = o->return_sequence && node->n_out > 1 ? 2 : 0;
        acts = &o->activations, layout = o->layout;
        break;
    }
    case WNN_OP_GRU_CELL: {
        const wnn_gru_cell_options *o = node->options;
        p->T = 1, p->B = in[0].shape[0], r->I = in[0].shape[1];
        p->H = o->hidden_size, p->reset_after = o->reset_after;
        r->bias = o->bias, r->rbias = o->recurrent_bias, r->h0 = 4;
        acts = &o->activations, layout = o->layout;
        break;
    }
    case WNN_OP_LSTM: {
        const wnn_lstm_options *o = node->options;
        p->lstm = 1;
        p->T = in[0].shape[0], p->B = in[0].shape[1], r->I = in[0].shape[2];
        p->H = o->hidden_size, p->direction = o->direction;
        r->bias = o->bias, r->rbias = o->recurrent_bias;
        r->peep = o->peephole_weight, r->h0 = o->initial_hidden_state;
        r->c0 = o->initial_cell_state, r->out_c = 2;
        r->out_seq = o->return_sequence && node->n_out > 2 ? 3 : 0;
        acts = &o->activations, layout = o->layout;
        break;
    }
    default: { /* lstmCell */
        const wnn_lstm_cell_options *o = node->options;
        p->lstm = 1;
        p->T = 1, p->B = in[0].shape[0], r->I = in[0].shape[1];
        p->H = o->hidden_size;
        r->bias = o->bias, r->rbias = o->recurrent_bias;
        r->peep = o->peephole_weight, r->h0 = 4, r->c0 = 5, r->out_c = 2;
        acts = &o->activations, layout = o->layout;
        break;
    }
    }
    p->D = p->direction == CK_RNN_BOTH ? 2 : 1;
    const uint32_t *av = acts->present ? acts->v : NULL;
    p->act_f = av ? (int)av[0] : CK_RNN_SIGMOID;
    p->act_g = av ? (int)av[1] : CK_RNN_TANH;
    p->act_h = p->lstm && av ? (int)av[2] : CK_RNN_TANH;
    if (p->lstm) {
        bool iofg = layout == WNN_LSTM_IOFG;
        p->gi = 0;
        p->go = iofg ? 1 : 3;
        p->gf = iofg ? 2 : 1;
        p->gg = iofg ? 3 : 2;
    } else {
        p->gz = layout == WNN_GRU_ZRN ? 0 : 1;
        p->gr = 1 - p->gz;
    }
    const uint64_t T = p->T, B = p->B, H = p->H, D = p->D, I = r->I;
    const uint64_t GH = (p->lstm ? 4 : 3) * H, state = D * B * H;
    uint64_t at = 0;
    if (p->dt == WNN_FLOAT16) {
        r->x32 = rnn_take(&at, T * B * I);
        r->w32 = rnn_take(&at, D * GH * I);
        r->r32 = rnn_take(&at, D * GH * H);
    }
    r->xw = rnn_take(&at, T * B * D * GH);
    r->bsum = rnn_take(&at, D * GH);
    r->rbn = rnn_take(&at, D * H);
    for (int k = 0; k < 2; k++) {
        r->h[k] = rnn_take(&at, state);
        r->c[k] = p->lstm ? rnn_take(&at, state) : 0;
    }
    r->rh = rnn_take(&at, state);
    r->hr = rnn_take(&at, D * B * GH);
    cn->scratch = at;
}

/* Fill cn for its node; false when out of memory. */
bool
prep_node(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_node *node = cn->node;
    switch (cn->kind) {
    case K_UNARY: prep_unary(cn, &in[0], &out[0]); break;
    case K_BINARY: prep_binary(cn, in, &out[0]); break;
    case K_WHERE: prep_where(cn, in, &out[0]); break;
    case K_CAST:
        cn->u.cast.ti = in[0].dtype;
        cn->u.cast.to = out[0].dtype;
        cn->u.cast.n = (int64_t)cu_core->desc_elements(&out[0]);
        break;
    case K_COPY: cn->u.copy_bytes = cu_core->desc_bytes(&out[0]); break;
    case K_VIEWS: return prep_views(cn, in, out);
    case K_PAD: prep_pad(cn, &in[0], &out[0]); break;
    case K_TRI: {
        const wnn_triangular_options *o = node->options;
        const wnn_desc *d = &in[0];
        cn->u.tri.es = (int)cu_core->dtype_size(d->dtype);
        cn->u.tri.upper = o->upper;
        cn->u.tri.n = (int64_t)cu_core->desc_elements(d);
        cn->u.tri.h = d->shape[d->rank - 2];
        cn->u.tri.w = d->shape[d->rank - 1];
        cn->u.tri.diag = o->diagonal;
        break;
    }
    case K_GATHER: {
        const wnn_gather_params *q = &cn->lowered->u.gather;
        ck_gather_p *p = &cn->u.ga;
        p->es = (int)cu_core->dtype_size(in[0].dtype);
        p->it = in[1].dtype;
        p->dim = (int64_t)q->dim;
        p->inner = (int64_t)q->inner;
        p->n_idx = (int64_t)q->n_idx;
        p->n = (int64_t)cu_core->desc_elements(&out[0]);
        break;
    }
    case K_GATHER_EL:
    case K_SCATTER_EL: {
        const wnn_gather_params *q = &cn->lowered->u.gather;
        ck_gather_el_p *p = &cn->u.gel;
        p->es = (int)cu_core->dtype_size(in[0].dtype);
        p->it = in[1].dtype;
        p->dim = (int64_t)q->dim;
        p->a_n = (int64_t)q->a_n;
        p->inner = (int64_t)q->inner;
        if (cn->kind == K_GATHER_EL) {
            p->n = (int64_t)q->n_idx;
        } else {
            p->n = (int64_t)(q->outer * q->inner);
            cn->in_bytes = cu_core->desc_bytes(&in[0]);
        }
        break;
    }
    case K_GATHER_ND:
        prep_nd(&cn->u.nd, &in[0], &in[1], &cn->lowered->u.gather);
        break;
    case K_SCATTER_ND:
        prep_nd(&cn->u.nd, &in[0], &in[1], &cn->lowered->u.gather);
        cn->in_bytes = cu_core->desc_bytes(&in[0]);
        cn->scratch = (uint64_t)cn->u.nd.n_slices * sizeof(int32_t);
        break;
    case K_NORM: prep_norm(cn, &in[0]); break;
    case K_BN: {
        const wnn_batch_normalization_options *o = node->options;
        ck_bn_p *p = &cn->u.bn;
        p->dt = in[0].dtype;
        p->n = (int64_t)cu_core->desc_elements(&in[0]);
        p->C = (int64_t)cn->lowered->u.axis.n;
        p->inner = (int64_t)cn->lowered->u.axis.inner;
        p->eps = o->epsilon;
        cn->scale = o->scale;
        cn->bias = o->bias;
        cn->scratch = 3 * (uint64_t)p->C * sizeof(double);
        break;
    }
    case K_SOFTMAX: {
        const wnn_axis_params *q = &cn->lowered->u.axis;
        ck_softmax_p *p = &cn->u.sm;
        p->dt = in[0].dtype;
        p->C = (int64_t)q->n;
        p->outer = (int64_t)q->outer;
        p->inner = (int64_t)q->inner;
        break;
    }
    case K_QUANT: prep_quant(cn, in, &out[0]); break;
    case K_MATMUL: prep_matmul(cn, in, &out[0]); break;
    case K_GEMM: prep_gemm(cn, in, &out[0]); break;
    case K_REDUCE: prep_reduce(cn, &in[0]); break;
    case K_ARG:
        prep_axis(cn, &in[0], &out[0]);
        cn->u.ax.is_max = node->op == WNN_OP_ARG_MAX;
        break;
    case K_CUMSUM: {
        const wnn_cumulative_sum_options *o = node->options;
        prep_axis(cn, &in[0], &out[0]);
        cn->u.ax.exclusive = o->exclusive;
        cn->u.ax.reversed = o->reversed;
        break;
    }
    case K_POOL: prep_pool(cn, &in[0], &out[0]); break;
    case K_CONV: prep_conv(cn, in, &out[0]); break;
    case K_RNN: prep_rnn(cn, in); break;
    case K_RESAMPLE: {
        const wnn_resample2d_options *o = node->options;
        ck_resample_p *p = &cn->u.rs;
        memset(p, 0, sizeof(*p));
        p->dt = in[0].dtype;
        p->linear = o->mode == 1;
        uint32_t a = o->axis[0], c = o->axis[1];
        p->ya = (int)(a < c ? a : c);
        p->xa = (int)(a < c ? c : a);
        p->n = (int64_t)cu_core->desc_elements(&out[0]);
        for (int d = 0; d < 4; d++) {
            p->in[d] = in[0].shape[d];
            p->out[d] = out[0].shape[d];
        }
        break;
    }
    default: break;
    }
    return true;
}

/* ---- the interface ---------------------------------------------------------------- */
bool
cu_op_limits(wnn_backend *be, wnn_op op, wnn_op_limits *out)
{
    (void)be;
    int kind = cu_kind_of(op);
    if (kind == K_NONE) {
        return false;
    }
    *out = *cu_core->op_get(op)->limits;
    uint16_t mask = kind_dtypes(kind);
    for (uint32_t i = 0; i < out->n; i++) {
        out->e[i].dtypes &= mask;
    }
    return true;
}
