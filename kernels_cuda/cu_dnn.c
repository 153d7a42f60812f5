/* cu_dnn.c -- cuDNN (loaded at run time, cudnn_dl.c): convolution planning
 * at compile, the calls at execute (cu_internal.h has the overview). */
#include "cu_internal.h"

/* ---- cuDNN (loaded at run time, cudnn_dl.c) ------------------------------------- */
/* The cuDNN handle, made on first use on the backend's stream; false when
 * cuDNN is off (WEBNN_CUDNN=0), missing, or fails to initialise: the
 * direct kernels then run every convolution. */
bool
need_dnn(cu_backend *b)
{
    pthread_mutex_lock(&b->blas_mu);
    if (!b->dnn_tried) {
        b->dnn_tried = true;
        const wdnn_api *d = b->dnn_off ? NULL : wdnn_load(NULL);
        if (d && d->cudnnCreate(&b->dnn_h) == WDNN_STATUS_SUCCESS) {
            if (d->cudnnSetStream(b->dnn_h, b->stream) == WDNN_STATUS_SUCCESS) {
                b->dnn = d;
            } else {
                d->cudnnDestroy(b->dnn_h);
                b->dnn_h = NULL;
            }
        }
    }
    bool ok = b->dnn != NULL;
    pthread_mutex_unlock(&b->blas_mu);
    return ok;
}

/* held: the caller holds dnn_mu */
void
dnn_free(cu_backend *b, cu_dnn *d, bool held)
{
    if (!d) {
        return;
    }
    const wdnn_api *a = b->dnn;
    if (a) {
        if (!held) {
            pthread_mutex_lock(&b->dnn_mu);
        }
        if (d->x) a->cudnnDestroyTensorDescriptor(d->x);
        if (d->y) a->cudnnDestroyTensorDescriptor(d->y);
        if (d->bias) a->cudnnDestroyTensorDescriptor(d->bias);
        if (d->w) a->cudnnDestroyFilterDescriptor(d->w);
        if (d->conv) a->cudnnDestroyConvolutionDescriptor(d->conv);
        if (d->act) a->cudnnDestroyActivationDescriptor(d->act);
        if (!held) {
            pthread_mutex_unlock(&b->dnn_mu);
        }
    }
    free(d);
}

/* Position of each logical filter axis (K, C, R, S) in a layout: conv2d K =
 * output channels, C = input channels per group; convTranspose2d (as the
 * forward convolution of cudnnConvolutionBackwardData) K = input channels,
 * C = output channels per group. */
const int *
cu_filter_axes(bool transpose, int layout)
{
    static const int kcrs[4] = { 0, 1, 2, 3 }, rsck[4] = { 2, 3, 1, 0 },
                     krsc[4] = { 0, 2, 3, 1 }, crsk[4] = { 1, 2, 3, 0 };
    if (transpose) {
        return layout == WNN_CONVT_IOHW ? kcrs : layout == WNN_CONVT_HWOI ? rsck : crsk;
    }
    switch (layout) {
    case WNN_CONV_OIHW: return kcrs;
    case WNN_CONV_HWIO: return rsck;
    case WNN_CONV_OHWI: return krsc;
    default: return crsk;
    }
}

#define DNN_WS_MAX ((size_t)512 << 20)


/* Prepares cn (K_CONV) for cuDNN; false: the direct kernel runs it
 * (asymmetric padding, no cuDNN, a shape or layout cuDNN refuses).
 * chain: the fused chain the convolution heads, or NULL. */
bool
plan_dnn(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
         const cu_node *act_cn)
{
    const wnn_node *node = cn->node;
    const wnn_conv_params *p = &cn->lowered->u.conv;
    const uint32_t *pad;
    if (p->transpose) {
        pad = ((const wnn_conv_transpose2d_options *)node->options)->pad;
    } else {
        pad = ((const wnn_conv2d_options *)node->options)->pad;
    }
    if (pad[0] != pad[1] || pad[2] != pad[3] || !need_dnn(b)) {
        return false;
    }
    pthread_mutex_lock(&b->dnn_mu);
    bool planned = plan_dnn_locked(b, ir, cn, chain, act_cn);
    pthread_mutex_unlock(&b->dnn_mu);
    return planned;
}

/* The tensor, filter and convolution descriptors of the forward view (K
 * filters over Cg channels each); false when cuDNN refuses them or the
 * forward convolution's output is not exactly the other side. */
static bool
dnn_descriptors(const wdnn_api *a, cu_dnn *d, const wnn_conv_params *p,
                const uint32_t *pad, int K, int Cg, int dt, int fmt)
{
    bool ok =
        a->cudnnCreateTensorDescriptor(&d->x) == 0 &&
        a->cudnnCreateTensorDescriptor(&d->y) == 0 &&
        a->cudnnCreateFilterDescriptor(&d->w) == 0 &&
        a->cudnnCreateConvolutionDescriptor(&d->conv) == 0 &&
        a->cudnnSetTensor4dDescriptor(d->x, fmt, dt, (int)p->N, (int)p->C,
                                      (int)p->H, (int)p->W) == 0 &&
        a->cudnnSetTensor4dDescriptor(d->y, fmt, dt, (int)p->N, (int)p->O,
                                      (int)p->OH, (int)p->OW) == 0 &&
        a->cudnnSetFilter4dDescriptor(d->w, dt, fmt, K, Cg, (int)p->KH,
                                      (int)p->KW) == 0 &&
        a->cudnnSetConvolution2dDescriptor(d->conv, (int)pad[0], (int)pad[2],
                                           (int)p->sh, (int)p->sw, (int)p->dh,
                                           (int)p->dw, WDNN_CROSS_CORRELATION,
                                           WDNN_DATA_FLOAT) == 0 &&
        a->cudnnSetConvolutionGroupCount(d->conv, (int)p->G) == 0 &&
        /* float32: FMA kernels only (no TF32); float16: tensor cores,
         * float32 accumulation (the compute type above) */
        a->cudnnSetConvolutionMathType(d->conv, dt == WDNN_DATA_HALF
                                                    ? WDNN_TENSOR_OP_MATH
                                                    : WDNN_FMA_MATH) == 0;
    /* the forward convolution's output must be exactly the other side */
    int n, c, h, w;
    wdnn_tdesc fin = d->bwd ? d->y : d->x, fout = d->bwd ? d->x : d->y;
    const wnn_conv_params *q = p;
    ok = ok && a->cudnnGetConvolution2dForwardOutputDim(d->conv, fin, d->w, &n, &c,
                                                        &h, &w) == 0 &&
         n == (int)q->N && c == K && h == (int)(d->bwd ? q->H : q->OH) &&
         w == (int)(d->bwd ? q->W : q->OW);
    (void)fout;
    return ok;
}

/* an algorithm result we may run: it ran, fits DNN_WS_MAX, and float32 is
 * not on TF32 tensor cores */
static bool
dnn_perf_ok(const wdnn_algo_perf *pf, int wdt)
{
    return pf->status == WDNN_STATUS_SUCCESS && pf->memory <= DNN_WS_MAX &&
           (wdt != WNN_FLOAT32 || pf->mathType == WDNN_FMA_MATH ||
            pf->mathType == WDNN_DEFAULT_MATH);
}

static wdnn_status
dnn_ws_size(cu_backend *b, const cu_dnn *d, int algo, size_t *ws)
{
    const wdnn_api *a = b->dnn;
    return d->bwd ? a->cudnnGetConvolutionBackwardDataWorkspaceSize(
                        b->dnn_h, d->w, d->x, d->conv, d->y, algo, ws)
                  : a->cudnnGetConvolutionForwardWorkspaceSize(
                        b->dnn_h, d->x, d->w, d->conv, d->y, algo, ws);
}

/* One measured choice per shape and context (the caller holds dnn_mu). */
#define DNN_KEY_LEN 19
typedef struct dnn_algo_entry {
    int key[DNN_KEY_LEN]; /* dims, pads, strides, dilations, groups, type,
                           * layout, direction: all Find's descriptors say */
    int algo;             /* the fastest that passes dnn_perf_ok, or -1:
                           * Find failed or none passed (the heuristics) */
} dnn_algo_entry;

static void
dnn_key(int *key, const cu_dnn *d, const wnn_conv_params *p, const uint32_t *pad,
        int dt, int fmt)
{
    const int k[DNN_KEY_LEN] = {
        (int)p->N,  (int)p->C,  (int)p->H,  (int)p->W,  (int)p->O,
        (int)p->OH, (int)p->OW, (int)p->KH, (int)p->KW, (int)pad[0],
        (int)pad[2], (int)p->sh, (int)p->sw, (int)p->dh, (int)p->dw,
        (int)p->G,  dt,         fmt,        d->bwd
    };
    memcpy(key, k, sizeof(k));
}

void
dnn_cache_free(cu_backend *b)
{
    free(b->algos);
    b->algos = NULL;
    b->n_algos = b->cap_algos = 0;
}

/* cuDNN's measured choice (cudnnFind*: it runs each algorithm on buffers
 * of its own, so this works at compile, and returns them sorted by time),
 * from the cache when this shape was measured before; -1: none. */
static int
dnn_find(cu_backend *b, const cu_dnn *d, int wdt, const int *key)
{
    for (size_t i = 0; i < b->n_algos; i++) {
        if (memcmp(b->algos[i].key, key, sizeof(b->algos[i].key)) == 0) {
            return b->algos[i].algo;
        }
    }
    const wdnn_api *a = b->dnn;
    wdnn_algo_perf perf[16];
    int got = 0, algo = -1;
    wdnn_status st =
        d->bwd ? a->cudnnFindConvolutionBackwardDataAlgorithm(b->dnn_h, d->w, d->x, d->conv,
                                                              d->y, 16, &got, perf)
               : a->cudnnFindConvolutionForwardAlgorithm(b->dnn_h, d->x, d->w, d->conv,
                                                         d->y, 16, &got, perf);
    if (st != WDNN_STATUS_SUCCESS) {
        cudaGetLastError(); /* e.g. its buffers did not fit: not ours to report */
        got = 0;
    }
    /* No FFT / Winograd: their transforms cost accuracy (a few roundings of
     * the terms' magnitudes no longer bound the error: the trade refused for
     * TF32), and on small shapes, where the timings are noise, Find may
     * well pick them; the GEMM-like algorithms are the fast ones on tensor
     * cores and for 1x1 anyway */
    int transforms = d->bwd ? WDNN_BWD_DATA_ALGO_FFT : WDNN_FWD_ALGO_FFT;
    for (int i = 0; i < got && i < 16 && algo < 0; i++) {
        if (dnn_perf_ok(&perf[i], wdt) && perf[i].algo < transforms) {
            algo = perf[i].algo;
        }
    }
    if (b->n_algos == b->cap_algos) {
        size_t cap = b->cap_algos ? 2 * b->cap_algos : 16;
        dnn_algo_entry *n = realloc(b->algos, cap * sizeof(*n));
        if (!n) {
            return algo; /* measured again next time */
        }
        b->algos = n;
        b->cap_algos = cap;
    }
    memcpy(b->algos[b->n_algos].key, key, sizeof(b->algos[0].key));
    b->algos[b->n_algos++].algo = algo;
    return algo;
}

/* the heuristics' first algorithm that fits (FMA for float32) */
static void
dnn_heuristic(cu_backend *b, cu_dnn *d, int wdt)
{
    const wdnn_api *a = b->dnn;
    wdnn_algo_perf perf[16];
    int got = 0;
    wdnn_status st = d->bwd
        ? a->cudnnGetConvolutionBackwardDataAlgorithm_v7(b->dnn_h, d->w, d->x, d->conv,
                                                         d->y, 16, &got, perf)
        : a->cudnnGetConvolutionForwardAlgorithm_v7(b->dnn_h, d->x, d->w, d->conv,
                                                    d->y, 16, &got, perf);
    for (int i = 0; st == 0 && i < got && i < 16 && d->algo < 0; i++) {
        size_t ws = 0;
        if (dnn_perf_ok(&perf[i], wdt) &&
            dnn_ws_size(b, d, perf[i].algo, &ws) == 0 && ws <= DNN_WS_MAX) {
            d->algo = perf[i].algo;
            d->ws = ws;
        }
    }
}

/* the algorithm: cuDNN's measured choice, else (WEBNN_CUDNN_FIND=0, Find
 * failed, or its choice has no usable workspace size) the heuristics' */
static bool
dnn_pick_algo(cu_backend *b, cu_dnn *d, int wdt, const int *key)
{
    const wdnn_api *a = b->dnn;
    d->algo = -1;
    int algo = b->dnn_find_off ? -1 : dnn_find(b, d, wdt, key);
    size_t ws = 0;
    if (algo >= 0 && dnn_ws_size(b, d, algo, &ws) == 0 && ws <= DNN_WS_MAX) {
        d->algo = algo;
        d->ws = ws;
    } else {
        dnn_heuristic(b, d, wdt);
    }
    /* the algorithm's math type may differ from the request: set ours
     * again (no TF32 for float32) */
    return d->algo >= 0 &&
           a->cudnnSetConvolutionMathType(d->conv, wdt == WNN_FLOAT16
                                                       ? WDNN_TENSOR_OP_MATH
                                                       : WDNN_FMA_MATH) == 0;
}

/* the filter in cuDNN's layout: a view that relays it out when its layout
 * differs (once for a constant, else at each run into the scratch) */
static void
dnn_filter_layout(cu_dnn *d, const wnn_conv_params *p, int es,
                  const wnn_ir *ir, const wnn_node *node, int K, int Cg)
{
    const int *src = cu_filter_axes(d->bwd, p->filter_layout);
    static const int kcrs[4] = { 0, 1, 2, 3 }, krsc[4] = { 0, 2, 3, 1 };
    const int *dst = p->nhwc ? krsc : kcrs;
    if (memcmp(src, dst, sizeof(kcrs)) != 0) {
        const int64_t dims[4] = { K, Cg, p->KH, p->KW };
        int64_t sstride[4], acc = 1;
        for (int i = 3; i >= 0; i--) {
            sstride[src[i]] = acc; /* logical axis src[i] at position i */
            acc *= dims[src[i]];
        }
        wnn_view *v = &d->fview;
        memset(v, 0, sizeof(*v));
        v->rank = 4;
        acc = 1;
        for (int i = 3; i >= 0; i--) {
            v->shape[i] = dims[dst[i]];
            v->is[i] = sstride[dst[i]];
            v->os[i] = acc;
            acc *= dims[dst[i]];
        }
        v->in = 1;
        v->out = 0;
        /* simplified by the core's rule, as the lowered views */
        cu_core->view_simplify(v);
        d->fes = es;
        d->fbytes = cu_align_up((uint64_t)acc * (uint64_t)es);
        d->frelayout = ir->operands[node->in[1]].kind == WNN_OPERAND_CONSTANT ? 1 : 2;
    }
}

/* bias + residual + relu / relu6 in one cuDNN call (forward only) */
static void
dnn_fuse_bias_act(const wdnn_api *a, cu_dnn *d, const cu_node *cn,
                  const wnn_epilogue *chain, const cu_node *act_cn, int dt)
{
    const wnn_conv_params *p = &cn->lowered->u.conv;
    int act = act_cn->ka.op;
    float lo = act_cn->ka.sp.lo, hi = act_cn->ka.sp.hi;
    bool relu = act == CK_U_RELU;
    bool relu6 = act == CK_U_CLAMP && lo == 0.0f && hi > 0.0f && hi < 3.0e38f;
    bool chan = chain->add_kind == WNN_EPI_ADD_CHANNEL;
    bool one_bias = (cn->x.bias != 0) != chan;
    if ((relu || relu6) && one_bias &&
        a->cudnnCreateTensorDescriptor(&d->bias) == 0 &&
        a->cudnnSetTensor4dDescriptor(d->bias, WDNN_TENSOR_NCHW, dt, 1,
                                      (int)p->O, 1, 1) == 0 &&
        a->cudnnCreateActivationDescriptor(&d->act) == 0 &&
        a->cudnnSetActivationDescriptor(
            d->act, relu ? WDNN_ACTIVATION_RELU : WDNN_ACTIVATION_CLIPPED_RELU,
            WDNN_PROPAGATE_NAN, relu ? 0.0 : (double)hi) == 0) {
        d->fused = true;
        d->bias_src = cn->x.bias;
    }
}

/* float16 with a bias that no fused call takes: the bias through
 * cudnnConvolutionBiasActivationForward with IDENTITY (on
 * IMPLICIT_PRECOMP_GEMM); false when cuDNN cannot. */
static bool
dnn_half_bias(cu_backend *b, cu_dnn *d, cu_node *cn, int dt)
{
    const wdnn_api *a = b->dnn;
    const wnn_conv_params *p = &cn->lowered->u.conv;
    size_t ws = 0;
    int algo = WDNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if (a->cudnnGetConvolutionForwardWorkspaceSize(b->dnn_h, d->x, d->w, d->conv, d->y,
                                                   algo, &ws) != 0 ||
        ws > DNN_WS_MAX ||
        (!d->bias && (a->cudnnCreateTensorDescriptor(&d->bias) != 0 ||
                      a->cudnnSetTensor4dDescriptor(d->bias, WDNN_TENSOR_NCHW, dt, 1,
                                                    (int)p->O, 1, 1) != 0)) ||
        (!d->act && a->cudnnCreateActivationDescriptor(&d->act) != 0) ||
        a->cudnnSetActivationDescriptor(d->act, WDNN_ACTIVATION_IDENTITY,
                                        WDNN_PROPAGATE_NAN, 0.0) != 0) {
        return false;
    }
    d->algo = algo;
    d->ws = ws;
    cn->scratch = d->ws_off + cu_align_up(d->ws);
    d->fused = d->identity = true;
    d->bias_src = cn->x.bias;
    return true;
}

/* float16 with a bias outside a fused call: the bias broadcast into y
 * (a strided copy, stride 0 but along the channels), on which the
 * convolution then runs with beta 1.  cuDNN adds beta * y in its float
 * compute type and rounds once: the CPU's result, where a convolution
 * rounded to float16 and then the bias would round twice (off by many
 * ulps where the bias cancels most of the sum).  The same memory traffic
 * as the epilogue kernel adding the bias afterwards. */
static void
dnn_bias_view(cu_dnn *d, const cu_node *cn)
{
    const wnn_conv_params *p = &cn->lowered->u.conv;
    wnn_view *v = &d->bview;
    memset(v, 0, sizeof(*v));
    int64_t hw = (int64_t)p->OH * p->OW;
    if (p->nhwc) { /* [N * OH * OW, O] */
        v->rank = 2;
        v->shape[0] = (int64_t)p->N * hw;
        v->shape[1] = p->O;
        v->is[0] = 0;
        v->is[1] = 1;
        v->os[0] = p->O;
        v->os[1] = 1;
    } else { /* [N, O, OH * OW] */
        v->rank = 3;
        v->shape[0] = p->N;
        v->shape[1] = p->O;
        v->shape[2] = hw;
        v->is[0] = v->is[2] = 0;
        v->is[1] = 1;
        v->os[0] = (int64_t)p->O * hw;
        v->os[1] = hw;
        v->os[2] = 1;
    }
    v->in = cn->x.bias - 1;
    v->out = 0;
    cu_core->view_simplify(v);
    d->has_bview = true;
}

bool
plan_dnn_locked(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
                const cu_node *act_cn)
{
    const wnn_node *node = cn->node;
    const wnn_conv_params *p = &cn->lowered->u.conv;
    const uint32_t *pad;
    if (p->transpose) {
        pad = ((const wnn_conv_transpose2d_options *)node->options)->pad;
    } else {
        pad = ((const wnn_conv2d_options *)node->options)->pad;
    }
    const wdnn_api *a = b->dnn;
    cu_dnn *d = calloc(1, sizeof(*d));
    if (!d) {
        return false;
    }
    d->bwd = p->transpose;
    int dt = cn->ka.dt == WNN_FLOAT16 ? WDNN_DATA_HALF : WDNN_DATA_FLOAT;
    int fmt = p->nhwc ? WDNN_TENSOR_NHWC : WDNN_TENSOR_NCHW;
    /* forward-convolution view: K filters over C / groups channels */
    int K = (int)(d->bwd ? p->C : p->O);
    int Cg = (int)((d->bwd ? p->O : p->C) / p->G);
    int key[DNN_KEY_LEN];
    dnn_key(key, d, p, pad, dt, fmt);
    if (!dnn_descriptors(a, d, p, pad, K, Cg, dt, fmt) ||
        !dnn_pick_algo(b, d, cn->ka.dt, key)) {
        dnn_free(b, d, true);
        return false;
    }
    dnn_filter_layout(d, p, cn->ka.es, ir, node, K, Cg);
    d->ws_off = d->frelayout == 2 ? d->fbytes : 0;
    cn->scratch = d->ws_off + cu_align_up(d->ws);
    /* float16 with a bias must round once, after the bias, as the CPU (see
     * dnn_bias_view); backward data has no bias: direct kernel */
    bool half_bias = cn->ka.dt == WNN_FLOAT16 && cn->x.bias;
    if (half_bias && d->bwd) {
        dnn_free(b, d, true);
        return false;
    }
    if (!d->bwd && chain && act_cn) {
        /* relu / relu6 take any algorithm: the measured one */
        dnn_fuse_bias_act(a, d, cn, chain, act_cn, dt);
    }
    /* The bias inside cudnnConvolutionBiasActivationForward (IDENTITY) only
     * runs on IMPLICIT_PRECOMP_GEMM: taken where that is the measured best;
     * else the measured algorithm on y filled with the bias (forcing that
     * algorithm made float16 convolutions 2-6x slower than PyTorch's).
     * WEBNN_CUDNN_FIND=0 keeps the earlier rule: always IDENTITY, or the
     * direct kernel when cuDNN cannot. */
    bool identity = half_bias && !d->fused &&
                    (b->dnn_find_off || d->algo == WDNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    if (identity && !dnn_half_bias(b, d, cn, dt) && b->dnn_find_off) {
        dnn_free(b, d, true);
        return false;
    }
    if (half_bias) {
        /* the fused call's fallback too (relu6 is refused on GPUs) */
        dnn_bias_view(d, cn);
        d->bias_fill = !d->fused; /* else only when the fused call fails */
    }
    cn->dnn = d;
    return true;
}

/* The filter operand cuDNN reads: as given, prepared once among the
 * constants, or relaid out now into the scratch. */
wnn_status
dnn_filter(cu_backend *b, const cu_compiled *c, const cu_node *cn,
           void *const *in, void *scratch, const void **wp, wnn_error *err)
{
    const cu_dnn *d = cn->dnn;
    *wp = in[1];
    if (d->frelayout == 1) {
        *wp = (const char *)c->consts + d->fprep_off;
    } else if (d->frelayout == 2) {
        void *outs[1] = { scratch };
        cudaError_t e = run_view(b, &d->fview, d->fes, in, outs);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR,
                              cu_core->op_get(cn->node->op)->camel, cn->node->label,
                              e, "kernel launch");
        }
        *wp = scratch;
    }
    return WNN_OK;
}

wnn_status
dnn_fail(const cu_backend *b, const cu_node *cn, wdnn_status st, wnn_error *err)
{
    return cu_core->failk(err, WNN_OPERATION_ERROR, cu_core->op_get(cn->node->op)->camel,
                     cn->node->label, NULL, "cuDNN failed: %s",
                     b->dnn->cudnnGetErrorString(st));
}

/* cudnnConvolutionForward; with bias_fill, on y filled with the bias
 * first (beta 1).  *ce: the fill's error (the convolution then not run). */
static wdnn_status
dnn_conv(cu_backend *b, cu_dnn *d, void *const *in, const void *w, void *ws, void *y,
         cudaError_t *ce)
{
    float one = 1.0f, zero = 0.0f;
    *ce = cudaSuccess;
    if (d->bias_fill) {
        void *outs[1] = { y };
        if ((*ce = run_view(b, &d->bview, 2, in, outs)) != cudaSuccess) {
            return WDNN_STATUS_SUCCESS;
        }
    }
    return b->dnn->cudnnConvolutionForward(b->dnn_h, &one, d->x, in[0], d->w, w, d->conv,
                                           d->algo, ws, d->ws,
                                           d->bias_fill ? &one : &zero, d->y, y);
}

/* A convolution on cuDNN (with its fused chain): writes y; *done is false
 * when the epilogue kernel must still run. */
wnn_status
run_dnn(cu_backend *b, const cu_compiled *c, cu_node *cn, void *const *in,
        void *y, const void *addend, void *scratch, bool *done, wnn_error *err)
{
    cu_dnn *d = cn->dnn;
    const wdnn_api *a = b->dnn;
    const void *w;
    *done = false;
    if (dnn_filter(b, c, cn, in, scratch, &w, err) != WNN_OK) {
        return WNN_ERR;
    }
    void *ws = d->ws ? (char *)scratch + d->ws_off : NULL;
    float one = 1.0f, zero = 0.0f;
    wdnn_status st;
    cudaError_t ce = cudaSuccess;
    pthread_mutex_lock(&b->dnn_mu);
    if (d->bwd) {
        st = a->cudnnConvolutionBackwardData(b->dnn_h, &one, d->w, w, d->x, in[0], d->conv,
                                             d->algo, ws, d->ws, &zero, d->y, y);
    } else if (d->fused && !d->fused_failed) {
        bool residual = !d->identity && cn->addend != UINT32_MAX && cn->epi.add == 1;
        const void *bias = d->bias_src ? in[d->bias_src - 1] : addend;
        float alpha2 = residual ? 1.0f : 0.0f;
        st = a->cudnnConvolutionBiasActivationForward(
            b->dnn_h, &one, d->x, in[0], d->w, w, d->conv, d->algo, ws, d->ws, &alpha2,
            d->y, residual ? addend : y, d->bias, bias, d->act, d->y, y);
        if (st == WDNN_STATUS_SUCCESS) {
            pthread_mutex_unlock(&b->dnn_mu);
            *done = !d->identity; /* IDENTITY: the chain's rest follows */
            return WNN_OK;
        }
        /* not supported for these descriptors on this GPU: from now on the
         * convolution, then the epilogue kernel (the bias in it, or, for
         * float16, in y before the convolution) */
        d->fused_failed = true;
        d->bias_fill = d->has_bview;
        cn->epi.bias = cn->x.bias != 0 && !d->bias_fill;
        cn->epi_on = cn->epi.bias || cn->epi.add || cn->epi.act >= 0;
        st = dnn_conv(b, d, in, w, ws, y, &ce);
    } else {
        st = dnn_conv(b, d, in, w, ws, y, &ce);
    }
    pthread_mutex_unlock(&b->dnn_mu);
    if (ce != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, cu_core->op_get(cn->node->op)->camel,
                          cn->node->label, ce, "kernel launch");
    }
    if (st != WDNN_STATUS_SUCCESS) {
        return dnn_fail(b, cn, st, err);
    }
    return WNN_OK;
}
