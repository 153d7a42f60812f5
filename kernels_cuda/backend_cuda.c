/* backend_cuda.c -- the CUDA backend (the wnn_backend_i of backend.h) for
 * NVIDIA GPUs, built by setup.py into webnn/libwebnn_cuda.so, which
 * csrc/backend/registry.c loads with dlopen() only when a context asks for
 * the GPU.  It is plain C (the graph IR's headers use C11 atomics); the
 * kernels are in the .cu files behind cuda_kernels.h.
 *
 *   memory     device memory from cudaMalloc (never managed memory); one
 *              CUDA stream per backend, i.e. per context timeline: every
 *              copy and kernel is queued on it in timeline order;
 *   tensors    tensor_write / tensor_read go through two pinned staging
 *              buffers (cudaMallocHost) with cudaMemcpyAsync on the stream,
 *              pipelined in chunks; synchronize() is cudaStreamSynchronize;
 *   compile()  uploads the constants once (one device block), allocates the
 *              memory plan's arena once (compiler/plan.c gives the offsets)
 *              and a scratch block for the nodes that need one, and turns
 *              each node into a kernel parameter struct;
 *   execute()  only launches kernels and cuBLAS calls on the stream: no
 *              synchronisation, no allocation;
 *   products   matmul and gemm on cuBLAS (one handle per backend, made by
 *              the first compile() with a product): float32 with cublasSgemm* in
 *              CUBLAS_DEFAULT_MATH (no TF32: float32 products are computed
 *              in float32), float16 with cublasGemmEx on tensor cores
 *              accumulating in float32 (CUBLAS_COMPUTE_32F);
 *   convs      conv2d / convTranspose2d on cuDNN 9 (dlopen'd, cudnn_dl.c;
 *              descriptors, algorithm and workspace made at compile;
 *              float32 with FMA math only, float16 on tensor cores with
 *              float32 compute), else the direct kernels of conv.cu;
 *   fusion     the backend declares WNN_FUSE_EPILOGUE (backend.h); the core's
 *              pipeline finds the chains (g->fusion: producer -> add ->
 *              activation) and plans memory for them (g->plan) before
 *              compile(); each chain runs at its last node as the producer
 *              plus one epilogue kernel (or one
 *              cudnnConvolutionBiasActivationForward).  No call into
 *              csrc/compiler/ from here.
 *
 * The library also holds its own copy of the operator registry
 * (every .c of csrc/ops, and csrc/core/dtype.c): the core is loaded by Python with
 * RTLD_LOCAL and exports nothing, so wnn_op_get(), wnn_failk() and
 * wnn_number_store() are linked in here; only wnn_cuda_backend_create is
 * exported. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "../csrc/core/internal.h"
#include "../csrc/compiler/lower/lower.h"
#include "../csrc/ops/ops_internal.h"
#include "cuda_kernels.h"
#include "cudnn_dl.h"

_Static_assert((int)CK_F32 == (int)WNN_FLOAT32 && (int)CK_F16 == (int)WNN_FLOAT16 &&
                   (int)CK_I32 == (int)WNN_INT32 && (int)CK_U32 == (int)WNN_UINT32 &&
                   (int)CK_I64 == (int)WNN_INT64 && (int)CK_U64 == (int)WNN_UINT64 &&
                   (int)CK_I8 == (int)WNN_INT8 && (int)CK_U8 == (int)WNN_UINT8,
               "cuda_kernels.h data types follow wnn_dtype");
_Static_assert((int)CK_RANK == (int)WNN_MAX_RANK, "cuda_kernels.h rank");

#define STAGE_BYTES ((size_t)8 << 20) /* per pinned staging buffer */
#define DEV_ALIGN 256u

#define EXPORT __attribute__((visibility("default")))

/* ---- the backend ------------------------------------------------------------ */
typedef struct cu_backend {
    wnn_backend base;       /* base.impl points here */
    wnn_backend_i iface;    /* per instance: max_tensor_bytes of the device */
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;    /* made by the first compile() that needs it */
    pthread_mutex_t blas_mu; /* also guards the cuDNN handle */
    bool dnn_off;           /* WEBNN_CUDNN=0 when the backend was created */
    bool dnn_tried;         /* need_dnn() ran */
    const wdnn_api *dnn;    /* cuDNN, loaded by the first convolution */
    wdnn_handle dnn_h;      /* on `stream` */
    pthread_mutex_t dnn_mu; /* one cuDNN call at a time on the handle (a
                             * compile() may query while a dispatch runs) */
    pthread_mutex_t stage_mu; /* the staging buffers, for any thread */
    void *stage[2];
    cudaEvent_t stage_ev[2];
    int stage_next;
} cu_backend;

static cu_backend *
cu_of(wnn_backend *be)
{
    return (cu_backend *)be->impl;
}

/* Make the backend's device current on the calling thread. */
static void
cu_enter(cu_backend *b)
{
    cudaSetDevice(b->device);
}

static wnn_status
cuda_error(wnn_error *err, wnn_error_kind kind, const char *op,
           const char *label, cudaError_t e, const char *what)
{
    cudaGetLastError(); /* clear a non-sticky error */
    return wnn_failk(err, kind, op, label, NULL, "CUDA %s failed: %s (%s)",
                     what, cudaGetErrorName(e), cudaGetErrorString(e));
}

static uint64_t
align_up(uint64_t n)
{
    return (n + DEV_ALIGN - 1) / DEV_ALIGN * DEV_ALIGN;
}

/* ---- staging ------------------------------------------------------------------ */
/* Called with stage_mu held. */
static cudaError_t
stage_ready(cu_backend *b)
{
    for (int k = 0; k < 2; k++) {
        if (!b->stage[k]) {
            cudaError_t e = cudaMallocHost(&b->stage[k], STAGE_BYTES);
            if (e != cudaSuccess) {
                b->stage[k] = NULL;
                return e;
            }
        }
        if (!b->stage_ev[k]) {
            cudaError_t e = cudaEventCreateWithFlags(&b->stage_ev[k],
                                                     cudaEventDisableTiming);
            if (e != cudaSuccess) {
                b->stage_ev[k] = NULL;
                return e;
            }
        }
    }
    return cudaSuccess;
}

/* Host -> device through the pinned buffers: the host copy of a chunk
 * overlaps the DMA of the previous one.  Returns when src may be freed (the
 * last DMA may still run, from the staging buffer). */
static cudaError_t
stage_write(cu_backend *b, void *dst, const void *src, uint64_t bytes)
{
    pthread_mutex_lock(&b->stage_mu);
    cudaError_t e = stage_ready(b);
    for (uint64_t off = 0; e == cudaSuccess && off < bytes;
         off += STAGE_BYTES) {
        size_t n = bytes - off < STAGE_BYTES ? (size_t)(bytes - off)
                                             : STAGE_BYTES;
        int k = b->stage_next;
        b->stage_next ^= 1;
        e = cudaEventSynchronize(b->stage_ev[k]); /* the buffer is free */
        if (e != cudaSuccess) {
            break;
        }
        memcpy(b->stage[k], (const char *)src + off, n);
        e = cudaMemcpyAsync((char *)dst + off, b->stage[k], n,
                            cudaMemcpyHostToDevice, b->stream);
        if (e == cudaSuccess) {
            e = cudaEventRecord(b->stage_ev[k], b->stream);
        }
    }
    pthread_mutex_unlock(&b->stage_mu);
    return e;
}

/* Device -> host through the pinned buffers: chunk i + 2 is queued while
 * chunk i is copied out.  Returns when dst holds the data. */
static cudaError_t
stage_read(cu_backend *b, void *dst, const void *src, uint64_t bytes)
{
    pthread_mutex_lock(&b->stage_mu);
    cudaError_t e = stage_ready(b);
    uint64_t chunks = (bytes + STAGE_BYTES - 1) / STAGE_BYTES;
    /* queue chunk j into buffer j % 2 */
#define QUEUE(j)                                                             \
    do {                                                                     \
        uint64_t o_ = (uint64_t)(j) * STAGE_BYTES;                           \
        size_t n_ = bytes - o_ < STAGE_BYTES ? (size_t)(bytes - o_)          \
                                             : STAGE_BYTES;                  \
        e = cudaMemcpyAsync(b->stage[(j) & 1], (const char *)src + o_, n_,   \
                            cudaMemcpyDeviceToHost, b->stream);              \
        if (e == cudaSuccess) {                                              \
            e = cudaEventRecord(b->stage_ev[(j) & 1], b->stream);            \
        }                                                                    \
    } while (0)
    for (uint64_t j = 0; e == cudaSuccess && j < chunks && j < 2; j++) {
        QUEUE(j);
    }
    for (uint64_t i = 0; e == cudaSuccess && i < chunks; i++) {
        uint64_t off = i * STAGE_BYTES;
        size_t n = bytes - off < STAGE_BYTES ? (size_t)(bytes - off)
                                             : STAGE_BYTES;
        e = cudaEventSynchronize(b->stage_ev[i & 1]);
        if (e != cudaSuccess) {
            break;
        }
        memcpy((char *)dst + off, b->stage[i & 1], n);
        if (i + 2 < chunks) {
            QUEUE(i + 2);
        }
    }
#undef QUEUE
    b->stage_next = 0;
    pthread_mutex_unlock(&b->stage_mu);
    return e;
}

/* ---- kernels of each operator ------------------------------------------------- */
enum {
    K_NONE = -1,
    K_UNARY,
    K_BINARY,
    K_WHERE,
    K_CAST,
    K_COPY,
    K_VIEWS,     /* transpose expand slice tile reverse split concat */
    K_PAD,
    K_TRI,
    K_GATHER,
    K_GATHER_EL,
    K_GATHER_ND,
    K_SCATTER_EL,
    K_SCATTER_ND,
    K_NORM,
    K_BN,
    K_SOFTMAX,
    K_QUANT,
    K_MATMUL,
    K_GEMM,
    K_REDUCE,
    K_ARG,
    K_CUMSUM,
    K_POOL,
    K_CONV,
    K_RESAMPLE,
    K_RNN        /* gru gruCell lstm lstmCell */
};

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

static int
kind_of(wnn_op op)
{
    return (unsigned)op < WNN_OP_COUNT ? cu_ops[op].kind1 - 1 : K_NONE;
}

/* Data types the kernels of a kind handle (intersected with the spec's). */
static uint16_t
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

static int
unary_op(wnn_op op)
{
    return cu_ops[op].code;
}

static int
binary_op(wnn_op op)
{
    return cu_ops[op].code;
}

/* ---- compiled nodes ------------------------------------------------------------ */
/* One strided copy of a movement operator: node input `in` (at byte
 * offset in_off) to node output `out` (at out_off). */
typedef struct cu_view {
    ck_view_p p;
    uint32_t in, out;
    int64_t in_off, out_off;
    bool plain; /* contiguous on both sides: a cudaMemcpyAsync */
} cu_view;

enum { MM_ONE, MM_STRIDED, MM_POINTERS };

typedef struct mm_plan {
    int dt, mode;
    int M, N, K, batch;
    long long sa, sb, sc; /* element strides between matrices */
    ck_bptr_p bp;
} mm_plan;

typedef struct gemm_plan {
    int dt, M, N, K, lda, ldb;
    bool ta, tb, use_c;
    float alpha, beta;
    uint32_t c_in; /* node input of c */
    cu_view cview; /* c broadcast into the output */
} gemm_plan;

/* gru / gruCell / lstm / lstmCell: the kernels' parameters, the operands
 * (node input + 1, 0 absent), the outputs (node output + 1) and the scratch
 * layout (byte offsets; float32 copies of x, W, R only for float16). */
typedef struct rnn_plan {
    ck_rnn_p p;
    int64_t I;
    uint32_t bias, rbias, peep, h0, c0;      /* node inputs + 1    */
    uint32_t out_c, out_seq;                 /* node outputs + 1   */
    uint64_t x32, w32, r32, xw, bsum, rbn, h[2], c[2], rh, hr;
} rnn_plan;

/* A convolution on cuDNN, prepared at compile: descriptors, algorithm,
 * workspace, the filter in cuDNN's layout (KCRS for nchw, KRSC for nhwc). */
typedef struct cu_dnn {
    bool bwd;               /* convTranspose2d: cudnnConvolutionBackwardData */
    bool fused;             /* cudnnConvolutionBiasActivationForward */
    bool identity;          /* ... with IDENTITY: only the conv's bias (float16:
                             * one rounding, as the CPU); the chain's add and
                             * activation in the epilogue kernel */
    bool fused_failed;      /* it returned an error once: conv + epilogue */
    wdnn_tdesc x, y, bias;  /* our input, our output, [1, O, 1, 1] */
    wdnn_fdesc w;
    wdnn_cdesc conv;
    wdnn_adesc act;
    int algo;
    size_t ws;              /* workspace bytes, at scratch + ws_off */
    uint64_t ws_off;
    int frelayout;          /* 0: filter as is; 1: constant, prepared once
                             * at const_off (consts block); 2: per dispatch
                             * into scratch at 0 */
    cu_view fview;          /* the relayout (node input 1 -> prepared) */
    uint64_t fprep_off, fbytes;
    uint32_t bias_src;      /* fused: node input + 1 of the conv bias, or 0
                             * (the chain's per-channel addend) */
} cu_dnn;

typedef struct cu_node {
    const wnn_node *node;
    const wnn_lowered *lowered; /* g->lowered[node id] (compiler/lower/) */
    /* epilogue fusion (compiler/fuse.c): a chain's producer runs at the
     * chain's last node, writing `result`; the chain's other nodes skip. */
    bool skip;             /* runs elsewhere or not at all */
    uint32_t run_head;     /* on a chain's last node: producer's index + 1 */
    uint32_t result;       /* operand the producer (+ epilogue) writes */
    uint32_t addend;       /* operand of the fused add, or UINT32_MAX */
    bool epi_on;
    ck_epi_p epi;
    cu_dnn *dnn;           /* K_CONV on cuDNN, or NULL (direct kernel) */
    int kind;
    uint64_t scratch;      /* bytes of scratch the node needs */
    uint32_t scale, bias;  /* normalization: node input + 1, 0 absent */
    union {
        ck_unary_p un;
        ck_binary_p bin;
        ck_where_p wh;
        struct { int ti, to; int64_t n; } cast;
        uint64_t copy_bytes;
        ck_pad_p pad;
        ck_tri_p tri;
        ck_gather_p ga;
        ck_gather_el_p gel;
        ck_nd_p nd;
        ck_norm_p norm;
        ck_bn_p bn;
        ck_softmax_p sm;
        ck_quant_p q;
        ck_reduce_p red;
        ck_axis_p ax;
        ck_pool_p pool;
        ck_conv_p conv;
        ck_resample_p rs;
        mm_plan mm;
        gemm_plan gm;
        rnn_plan rnn;
    } u;
    cu_view *views;        /* K_VIEWS */
    uint32_t n_views;
    uint64_t in_bytes;     /* scatter: bytes of the input copied first */
} cu_node;

typedef struct cu_compiled {
    void *arena;           /* the plan's intermediates */
    void *consts;          /* every constant, at const_off[operand] */
    uint64_t *const_off;
    void *scratch;
    cu_node *nodes;
    uint32_t n_nodes;
    void **ptr_in, **ptr_out; /* resolved operands of one node */
    uint32_t max_io;
    pthread_mutex_t mu;    /* one execution at a time per graph */
} cu_compiled;

static void
contiguous_strides(const wnn_desc *d, int64_t *st)
{
    int64_t s = 1;
    for (int i = (int)d->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->shape[i];
    }
}

static uint64_t
prod(const uint32_t *shape, uint32_t lo, uint32_t hi)
{
    uint64_t p = 1;
    for (uint32_t i = lo; i < hi; i++) {
        p *= shape[i];
    }
    return p;
}

/* The broadcast iterator lowered once by the core (compiler/lower/
 * broadcast.c, the CPU kernels read the same block) in the kernels' types. */
static void
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

/* Drop size-1 dimensions and merge neighbours contiguous on both sides
 * (cpu/kernels/movement/movement.c view_simplify); sets n and plain. */
static void
view_finish(cu_view *v, int es)
{
    ck_view_p *p = &v->p;
    int r = 0;
    for (int d = 0; d < p->rank; d++) {
        if (p->shape[d] == 1) {
            continue;
        }
        if (r > 0 && p->is[r - 1] == p->is[d] * (int64_t)p->shape[d] &&
            p->os[r - 1] == p->os[d] * (int64_t)p->shape[d]) {
            p->shape[r - 1] *= p->shape[d];
            p->is[r - 1] = p->is[d];
            p->os[r - 1] = p->os[d];
            continue;
        }
        p->shape[r] = p->shape[d];
        p->is[r] = p->is[d];
        p->os[r] = p->os[d];
        r++;
    }
    if (r == 0) {
        p->shape[0] = 1;
        p->is[0] = p->os[0] = 1;
        r = 1;
    }
    p->rank = r;
    p->es = es;
    p->n = 1;
    for (int d = 0; d < r; d++) {
        p->n *= p->shape[d];
    }
    v->plain = r == 1 && p->is[0] == 1 && p->os[0] == 1;
}

/* ---- per-operator preparation (at compile) ------------------------------------ */
static void
prep_unary(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_node *node = cn->node;
    ck_unary_p *p = &cn->u.un;
    wnn_dtype t = in->dtype;
    memset(p, 0, sizeof(*p));
    p->op = unary_op(node->op);
    p->ti = in->dtype;
    p->to = out->dtype;
    p->n = (int64_t)wnn_desc_elements(out);
    wnn_scalar_params sp;
    wnn_scalar_params_of(node->op, node->options, t, &sp);
    p->a = sp.a;
    p->b = sp.b;
    p->lo = sp.lo;
    p->hi = sp.hi;
    p->ilo = sp.ilo;
    p->ihi = sp.ihi;
    p->ulo = sp.ulo;
    p->uhi = sp.uhi;
}

static void
prep_binary(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_binary_p *p = &cn->u.bin;
    p->op = binary_op(cn->node->op);
    p->ti = in[0].dtype;
    p->to = out->dtype;
    p->n = (int64_t)wnn_desc_elements(out);
    bcast_from(&p->it, &cn->lowered->u.bcast);
}

static void
prep_where(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_where_p *p = &cn->u.wh;
    p->es = (int)wnn_dtype_size(out->dtype);
    p->n = (int64_t)wnn_desc_elements(out);
    bcast_from(&p->it, &cn->lowered->u.bcast);
}

/* Views of transpose expand slice tile reverse split concat
 * (cpu/kernels/movement/movement.c). */
static bool
prep_views(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_node *node = cn->node;
    uint32_t n = node->op == WNN_OP_SPLIT    ? node->n_out
                 : node->op == WNN_OP_CONCAT ? node->n_in
                                             : 1;
    cn->views = calloc(n, sizeof(cu_view));
    if (!cn->views) {
        return false;
    }
    cn->n_views = n;
    int es = (int)wnn_dtype_size(in[0].dtype);
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    cu_view *v = cn->views;
    switch (node->op) {
    case WNN_OP_TRANSPOSE: {
        const wnn_transpose_options *o = node->options;
        contiguous_strides(&in[0], ist);
        contiguous_strides(&out[0], ost);
        v->p.rank = (int)out[0].rank;
        for (uint32_t i = 0; i < out[0].rank; i++) {
            uint32_t p = o->permutation.v[i];
            v->p.shape[i] = out[0].shape[i];
            v->p.is[i] = p < in[0].rank ? ist[p] : 0;
            v->p.os[i] = ost[i];
        }
        break;
    }
    case WNN_OP_EXPAND: {
        contiguous_strides(&in[0], ist);
        contiguous_strides(&out[0], ost);
        v->p.rank = (int)out[0].rank;
        int shift = (int)out[0].rank - (int)in[0].rank;
        for (int i = 0; i < (int)out[0].rank; i++) {
            int j = i - shift;
            v->p.shape[i] = out[0].shape[i];
            v->p.is[i] = j >= 0 && in[0].shape[j] != 1 ? ist[j] : 0;
            v->p.os[i] = ost[i];
        }
        break;
    }
    case WNN_OP_SLICE: {
        const wnn_slice_options *o = node->options;
        contiguous_strides(&in[0], ist);
        contiguous_strides(&out[0], ost);
        v->p.rank = (int)out[0].rank;
        int64_t base = 0;
        for (uint32_t i = 0; i < out[0].rank; i++) {
            v->p.shape[i] = out[0].shape[i];
            v->p.is[i] = ist[i] * (int64_t)o->strides.v[i];
            v->p.os[i] = ost[i];
            base += ist[i] * (int64_t)o->starts.v[i];
        }
        v->in_off = base * es;
        break;
    }
    case WNN_OP_TILE: {
        const wnn_tile_options *o = node->options;
        contiguous_strides(&in[0], ist);
        contiguous_strides(&out[0], ost);
        v->p.rank = 2 * (int)in[0].rank;
        for (uint32_t i = 0; i < in[0].rank; i++) {
            v->p.shape[2 * i] = o->repetitions.v[i];
            v->p.is[2 * i] = 0;
            v->p.os[2 * i] = ost[i] * in[0].shape[i];
            v->p.shape[2 * i + 1] = in[0].shape[i];
            v->p.is[2 * i + 1] = ist[i];
            v->p.os[2 * i + 1] = ost[i];
        }
        break;
    }
    case WNN_OP_REVERSE: {
        const wnn_reverse_options *o = node->options;
        contiguous_strides(&in[0], ist);
        v->p.rank = (int)in[0].rank;
        int64_t base = 0;
        for (uint32_t i = 0; i < in[0].rank; i++) {
            v->p.shape[i] = in[0].shape[i];
            v->p.is[i] = ist[i];
            v->p.os[i] = ist[i];
        }
        for (uint32_t a = 0; a < o->axes.n; a++) {
            uint32_t i = o->axes.v[a];
            if (i < in[0].rank && v->p.is[i] > 0) { /* duplicates ignored */
                base += (int64_t)(in[0].shape[i] - 1) * ist[i];
                v->p.is[i] = -ist[i];
            }
        }
        v->in_off = base * es;
        break;
    }
    case WNN_OP_SPLIT: {
        const wnn_split_options *o = node->options;
        int64_t start = 0;
        contiguous_strides(&in[0], ist);
        for (uint32_t j = 0; j < n; j++) {
            contiguous_strides(&out[j], ost);
            v[j].p.rank = (int)out[j].rank;
            for (uint32_t i = 0; i < out[j].rank; i++) {
                v[j].p.shape[i] = out[j].shape[i];
                v[j].p.is[i] = ist[i];
                v[j].p.os[i] = ost[i];
            }
            v[j].out = j;
            v[j].in_off = start * ist[o->axis] * es;
            start += out[j].shape[o->axis];
        }
        break;
    }
    case WNN_OP_CONCAT: {
        const wnn_concat_options *o = node->options;
        int64_t start = 0;
        contiguous_strides(&out[0], ost);
        for (uint32_t j = 0; j < n; j++) {
            contiguous_strides(&in[j], ist);
            v[j].p.rank = (int)in[j].rank;
            for (uint32_t i = 0; i < in[j].rank; i++) {
                v[j].p.shape[i] = in[j].shape[i];
                v[j].p.is[i] = ist[i];
                v[j].p.os[i] = ost[i];
            }
            v[j].in = j;
            v[j].out_off = start * ost[o->axis] * es;
            start += in[j].shape[o->axis];
        }
        break;
    }
    default:
        return false;
    }
    for (uint32_t j = 0; j < n; j++) {
        view_finish(&v[j], es);
    }
    return true;
}

static void
prep_pad(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_pad_options *o = cn->node->options;
    ck_pad_p *p = &cn->u.pad;
    memset(p, 0, sizeof(*p));
    p->rank = (int)in->rank;
    p->es = (int)wnn_dtype_size(in->dtype);
    p->mode = o->mode == WNN_PAD_EDGE         ? CK_PAD_EDGE
              : o->mode == WNN_PAD_REFLECTION ? CK_PAD_REFLECTION
                                              : CK_PAD_CONSTANT;
    p->n = (int64_t)wnn_desc_elements(out);
    contiguous_strides(in, p->ist);
    for (uint32_t d = 0; d < in->rank; d++) {
        p->ishape[d] = in->shape[d];
        p->oshape[d] = out->shape[d];
        p->begin[d] = o->beginning_padding.v[d];
    }
    uint64_t val = 0;
    wnn_number_store(&o->value, in->dtype, &val);
    p->value = val;
}

static void
prep_nd(ck_nd_p *p, const wnn_desc *in, const wnn_desc *ix)
{
    memset(p, 0, sizeof(*p));
    p->es = (int)wnn_dtype_size(in->dtype);
    p->it = ix->dtype;
    p->coord = (int)ix->shape[ix->rank - 1];
    p->tuples = (int64_t)prod(ix->shape, 0, ix->rank - 1);
    p->slice = (int64_t)prod(in->shape, (uint32_t)p->coord, in->rank);
    p->n_slices = (int64_t)prod(in->shape, 0, (uint32_t)p->coord);
    int64_t s = 1;
    for (int d = p->coord - 1; d >= 0; d--) {
        p->dims[d] = in->shape[d];
        p->strides[d] = s;
        s *= in->shape[d];
    }
}

/* Group description of instance / layer normalization. */
static void
prep_norm(cu_node *cn, const wnn_desc *in)
{
    ck_norm_p *p = &cn->u.norm;
    memset(p, 0, sizeof(*p));
    p->dt = in->dtype;
    int64_t st[WNN_MAX_RANK];
    contiguous_strides(in, st);
    if (cn->node->op == WNN_OP_INSTANCE_NORMALIZATION) {
        const wnn_instance_normalization_options *o = cn->node->options;
        uint32_t N = in->shape[0];
        bool nhwc = o->layout != 0;
        uint32_t C = nhwc ? in->shape[3] : in->shape[1];
        uint32_t H = nhwc ? in->shape[1] : in->shape[2];
        uint32_t W = nhwc ? in->shape[2] : in->shape[3];
        p->nk = 2;
        p->kext[0] = N;
        p->kext[1] = C;
        p->kst[0] = st[0];
        p->kst[1] = nhwc ? 1 : st[1];
        p->nr = 2;
        p->rext[0] = H;
        p->rext[1] = W;
        p->rst[0] = nhwc ? st[1] : st[2];
        p->rst[1] = nhwc ? st[2] : 1;
        p->per_channel = C;
        p->G = (int64_t)N * C;
        p->S = (int64_t)H * W;
        p->eps = o->epsilon;
        cn->scale = o->scale;
        cn->bias = o->bias;
        return;
    }
    const wnn_layer_normalization_options *o = cn->node->options;
    bool red[WNN_MAX_RANK] = { false };
    for (uint32_t i = 0; i < o->axes.n; i++) {
        red[o->axes.v[i]] = true;
    }
    p->G = 1;
    p->S = 1;
    for (uint32_t i = 0; i < in->rank; i++) {
        if (!red[i]) {
            p->kext[p->nk] = in->shape[i];
            p->kst[p->nk++] = st[i];
            p->G *= in->shape[i];
        }
    }
    for (uint32_t i = 0; i < o->axes.n; i++) {
        uint32_t a = o->axes.v[i];
        p->rext[p->nr] = in->shape[a];
        p->rst[p->nr++] = st[a];
        p->S *= in->shape[a];
    }
    p->per_channel = 0;
    p->eps = o->epsilon;
    cn->scale = o->scale;
    cn->bias = o->bias;
}

/* Blockwise broadcasting of scale / zeroPoint (cpu/kernels/quantize/quantize.c). */
static void
prep_quant(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    ck_quant_p *p = &cn->u.q;
    const wnn_desc *sc = &in[1];
    memset(p, 0, sizeof(*p));
    p->dequant = cn->node->op == WNN_OP_DEQUANTIZE_LINEAR;
    p->it = in[0].dtype;
    p->st = in[1].dtype;
    p->zt = in[2].dtype;
    p->ot = out->dtype;
    p->n = (int64_t)wnn_desc_elements(&in[0]);
    uint64_t ish[WNN_MAX_RANK], ssh[WNN_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t d = 0; d < in[0].rank; d++) {
        uint64_t i = in[0].shape[d], s = sc->shape[d];
        if (i == 1) {
            continue;
        }
        if (r > 0) {
            uint64_t pi = ish[r - 1], ps = ssh[r - 1];
            if ((ps == pi && s == i) || (ps == 1 && s == 1)) {
                ish[r - 1] = pi * i;
                ssh[r - 1] = ps * s;
                continue;
            }
        }
        ish[r] = i;
        ssh[r] = s;
        r++;
    }
    if (r == 0) {
        ish[0] = ssh[0] = 1;
        r = 1;
    }
    p->rank = (int)r;
    int64_t stv = 1;
    for (int d = (int)r - 1; d >= 0; d--) {
        p->shape[d] = (uint32_t)ish[d];
        p->block[d] = (uint32_t)(ish[d] / ssh[d]);
        p->sstride[d] = stv;
        stv *= (int64_t)ssh[d];
    }
}

static int
reduce_op(wnn_op op)
{
    return cu_ops[op].code;
}

/* reduce*: kept and reduced dimensions (size-1 dimensions dropped, adjacent
 * ones of the same group merged when contiguous). */
static void
prep_reduce(cu_node *cn, const wnn_desc *in)
{
    const wnn_reduce_options *o = cn->node->options;
    ck_reduce_p *p = &cn->u.red;
    memset(p, 0, sizeof(*p));
    p->op = reduce_op(cn->node->op);
    p->dt = in->dtype;
    int64_t st[WNN_MAX_RANK];
    contiguous_strides(in, st);
    p->G = 1;
    p->S = 1;
    for (uint32_t i = 0; i < in->rank; i++) {
        if (in->shape[i] == 1) {
            continue;
        }
        if (o->axes_mask & (1u << i)) {
            if (p->nr > 0 && p->rst[p->nr - 1] == st[i] * in->shape[i]) {
                p->rext[p->nr - 1] *= in->shape[i];
                p->rst[p->nr - 1] = st[i];
            } else {
                p->rext[p->nr] = in->shape[i];
                p->rst[p->nr++] = st[i];
            }
            p->S *= in->shape[i];
        } else {
            if (p->nk > 0 && p->kst[p->nk - 1] == st[i] * in->shape[i]) {
                p->kext[p->nk - 1] *= in->shape[i];
                p->kst[p->nk - 1] = st[i];
            } else {
                p->kext[p->nk] = in->shape[i];
                p->kst[p->nk++] = st[i];
            }
            p->G *= in->shape[i];
        }
    }
}

static void
prep_axis(cu_node *cn, const wnn_desc *in, const wnn_desc *out, uint32_t axis)
{
    ck_axis_p *p = &cn->u.ax;
    memset(p, 0, sizeof(*p));
    p->dt = in->dtype;
    p->to = out->dtype;
    p->n = in->shape[axis];
    p->outer = (int64_t)prod(in->shape, 0, axis);
    p->inner = (int64_t)prod(in->shape, axis + 1, in->rank);
}

static void
prep_pool(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_pool2d_options *o = cn->node->options;
    ck_pool_p *p = &cn->u.pool;
    memset(p, 0, sizeof(*p));
    wnn_op op = cn->node->op;
    p->op = op == WNN_OP_AVERAGE_POOL2D ? CK_POOL_AVG
            : op == WNN_OP_L2_POOL2D   ? CK_POOL_L2
                                       : CK_POOL_MAX;
    p->dt = in->dtype;
    p->nhwc = o->layout != 0;
    p->n = (int64_t)wnn_desc_elements(out);
    p->N = in->shape[0];
    p->C = p->nhwc ? in->shape[3] : in->shape[1];
    p->H = p->nhwc ? in->shape[1] : in->shape[2];
    p->W = p->nhwc ? in->shape[2] : in->shape[3];
    p->OH = p->nhwc ? out->shape[1] : out->shape[2];
    p->OW = p->nhwc ? out->shape[2] : out->shape[3];
    p->kh = o->window[0];
    p->kw = o->window[1];
    p->sh = o->stride[0];
    p->sw = o->stride[1];
    p->dh = o->dilation[0];
    p->dw = o->dilation[1];
    p->pt = o->pad[0];
    p->pl = o->pad[2];
}

static void
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
    p->n = (int64_t)wnn_desc_elements(out);
    p->N = q->N, p->C = q->C, p->H = q->H, p->W = q->W;
    p->O = q->O, p->OH = q->OH, p->OW = q->OW;
    p->KH = q->KH, p->KW = q->KW;
    p->sh = q->sh, p->sw = q->sw, p->dh = q->dh, p->dw = q->dw;
    p->pt = q->pad[0], p->pl = q->pad[2];
    p->groups = q->G;
    p->has_bias = q->bias != 0;
    cn->bias = q->bias;
}

static void
prep_matmul(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    mm_plan *m = &cn->u.mm;
    const wnn_desc *ad = &in[0], *bd = &in[1], *od = out;
    memset(m, 0, sizeof(*m));
    m->dt = od->dtype;
    int64_t M = ad->shape[ad->rank - 2], K = ad->shape[ad->rank - 1];
    int64_t N = bd->shape[bd->rank - 1];
    int64_t batch = (int64_t)wnn_desc_elements(od) / (M * N);
    int64_t nba = (int64_t)wnn_desc_elements(ad) / (M * K);
    int64_t nbb = (int64_t)wnn_desc_elements(bd) / (K * N);
    m->M = (int)M;
    m->N = (int)N;
    m->K = (int)K;
    m->batch = (int)batch;
    if (nbb == 1 && nba == batch) {
        /* b shared: a's matrices are one tall matrix */
        m->mode = MM_ONE;
        m->M = (int)(M * batch);
        m->batch = 1;
    } else if ((nba == 1 || nba == batch) && (nbb == 1 || nbb == batch)) {
        m->mode = MM_STRIDED;
        m->sa = nba == 1 ? 0 : M * K;
        m->sb = nbb == 1 ? 0 : K * N;
        m->sc = M * N;
    } else {
        /* batch dimensions broadcast both ways: pointer arrays */
        m->mode = MM_POINTERS;
        ck_bptr_p *bp = &m->bp;
        uint32_t rb = od->rank - 2;
        int64_t acc_a = 1, acc_b = 1;
        size_t es = wnn_dtype_size(od->dtype);
        bp->rb = (int)rb;
        bp->batch = batch;
        for (int d = (int)rb - 1; d >= 0; d--) {
            int da = d - (int)(rb - (ad->rank - 2));
            int db = d - (int)(rb - (bd->rank - 2));
            uint32_t xa = da >= 0 ? ad->shape[da] : 1;
            uint32_t xb = db >= 0 ? bd->shape[db] : 1;
            bp->oshape[d] = od->shape[d];
            bp->sa[d] = xa == 1 ? 0 : acc_a;
            bp->sb[d] = xb == 1 ? 0 : acc_b;
            acc_a *= xa;
            acc_b *= xb;
        }
        bp->ma = M * K * (int64_t)es;
        bp->mb = K * N * (int64_t)es;
        bp->mc = M * N * (int64_t)es;
        cn->scratch = 3 * (uint64_t)batch * sizeof(void *);
    }
}

static void
prep_gemm(cu_node *cn, const wnn_desc *in, const wnn_desc *out)
{
    const wnn_gemm_options *o = cn->node->options;
    gemm_plan *g = &cn->u.gm;
    memset(g, 0, sizeof(*g));
    wnn_dtype t = out->dtype;
    g->dt = t;
    g->M = (int)out->shape[0];
    g->N = (int)out->shape[1];
    g->K = (int)(o->a_transpose ? in[0].shape[0] : in[0].shape[1]);
    g->lda = (int)in[0].shape[1];
    g->ldb = (int)in[1].shape[1];
    g->ta = o->a_transpose;
    g->tb = o->b_transpose;
    g->alpha = wnn_cast_float(o->alpha, t);
    g->beta = wnn_cast_float(o->beta, t);
    if (o->c && g->beta != 0.0f) {
        /* c broadcast into the output, then accumulated onto */
        const wnn_desc *cd = &in[o->c - 1];
        uint32_t r0 = cd->rank == 2 ? cd->shape[0] : 1;
        uint32_t r1 = cd->rank >= 1 ? cd->shape[cd->rank - 1] : 1;
        cu_view *v = &g->cview;
        v->p.rank = 2;
        v->p.shape[0] = out->shape[0];
        v->p.shape[1] = out->shape[1];
        v->p.is[0] = r0 == 1 ? 0 : r1;
        v->p.is[1] = r1 == 1 ? 0 : 1;
        v->p.os[0] = out->shape[1];
        v->p.os[1] = 1;
        view_finish(v, (int)wnn_dtype_size(t));
        g->use_c = true;
        g->c_in = o->c - 1;
    } else {
        g->beta = 0.0f;
    }
}

/* Scratch bytes, 256-byte aligned pieces. */
static uint64_t
rnn_take(uint64_t *at, uint64_t floats)
{
    uint64_t off = *at;
    *at += (floats * sizeof(float) + 255) / 256 * 256;
    return off;
}

static void
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
static bool
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
        cn->u.cast.n = (int64_t)wnn_desc_elements(&out[0]);
        break;
    case K_COPY: cn->u.copy_bytes = wnn_desc_bytes(&out[0]); break;
    case K_VIEWS: return prep_views(cn, in, out);
    case K_PAD: prep_pad(cn, &in[0], &out[0]); break;
    case K_TRI: {
        const wnn_triangular_options *o = node->options;
        const wnn_desc *d = &in[0];
        cn->u.tri.es = (int)wnn_dtype_size(d->dtype);
        cn->u.tri.upper = o->upper;
        cn->u.tri.n = (int64_t)wnn_desc_elements(d);
        cn->u.tri.h = d->shape[d->rank - 2];
        cn->u.tri.w = d->shape[d->rank - 1];
        cn->u.tri.diag = o->diagonal;
        break;
    }
    case K_GATHER: {
        const wnn_gather_options *o = node->options;
        ck_gather_p *p = &cn->u.ga;
        p->es = (int)wnn_dtype_size(in[0].dtype);
        p->it = in[1].dtype;
        p->dim = in[0].shape[o->axis];
        p->inner = (int64_t)prod(in[0].shape, o->axis + 1, in[0].rank);
        p->n_idx = (int64_t)wnn_desc_elements(&in[1]);
        p->n = (int64_t)wnn_desc_elements(&out[0]);
        break;
    }
    case K_GATHER_EL:
    case K_SCATTER_EL: {
        /* MLGatherOptions and MLScatterOptions: one axis field */
        uint32_t axis = cn->kind == K_GATHER_EL
                            ? ((const wnn_gather_options *)node->options)->axis
                            : ((const wnn_scatter_options *)node->options)->axis;
        ck_gather_el_p *p = &cn->u.gel;
        p->es = (int)wnn_dtype_size(in[0].dtype);
        p->it = in[1].dtype;
        p->dim = in[0].shape[axis];
        p->a_n = in[1].shape[axis];
        p->inner = (int64_t)prod(in[0].shape, axis + 1, in[0].rank);
        if (cn->kind == K_GATHER_EL) {
            p->n = (int64_t)wnn_desc_elements(&in[1]);
        } else {
            p->n = (int64_t)prod(in[0].shape, 0, axis) * p->inner;
            cn->in_bytes = wnn_desc_bytes(&in[0]);
        }
        break;
    }
    case K_GATHER_ND: prep_nd(&cn->u.nd, &in[0], &in[1]); break;
    case K_SCATTER_ND:
        prep_nd(&cn->u.nd, &in[0], &in[1]);
        cn->in_bytes = wnn_desc_bytes(&in[0]);
        cn->scratch = (uint64_t)cn->u.nd.n_slices * sizeof(int32_t);
        break;
    case K_NORM: prep_norm(cn, &in[0]); break;
    case K_BN: {
        const wnn_batch_normalization_options *o = node->options;
        ck_bn_p *p = &cn->u.bn;
        p->dt = in[0].dtype;
        p->n = (int64_t)wnn_desc_elements(&in[0]);
        p->C = in[0].shape[o->axis];
        p->inner = (int64_t)prod(in[0].shape, o->axis + 1, in[0].rank);
        p->eps = o->epsilon;
        cn->scale = o->scale;
        cn->bias = o->bias;
        cn->scratch = 3 * (uint64_t)p->C * sizeof(double);
        break;
    }
    case K_SOFTMAX: {
        const wnn_softmax_options *o = node->options;
        ck_softmax_p *p = &cn->u.sm;
        p->dt = in[0].dtype;
        p->C = in[0].shape[o->axis];
        p->outer = (int64_t)prod(in[0].shape, 0, o->axis);
        p->inner = (int64_t)prod(in[0].shape, o->axis + 1, in[0].rank);
        break;
    }
    case K_QUANT: prep_quant(cn, in, &out[0]); break;
    case K_MATMUL: prep_matmul(cn, in, &out[0]); break;
    case K_GEMM: prep_gemm(cn, in, &out[0]); break;
    case K_REDUCE: prep_reduce(cn, &in[0]); break;
    case K_ARG:
        prep_axis(cn, &in[0], &out[0],
                  ((const wnn_arg_min_max_options *)node->options)->axis);
        cn->u.ax.is_max = node->op == WNN_OP_ARG_MAX;
        break;
    case K_CUMSUM: {
        const wnn_cumulative_sum_options *o = node->options;
        prep_axis(cn, &in[0], &out[0], o->axis);
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
        p->n = (int64_t)wnn_desc_elements(&out[0]);
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

/* ---- running one node (at execute) --------------------------------------------- */
static cudaError_t
run_view(cu_backend *b, const cu_view *v, void *const *in, void *const *out)
{
    const char *src = (const char *)in[v->in] + v->in_off;
    char *dst = (char *)out[v->out] + v->out_off;
    if (v->plain) {
        return cudaMemcpyAsync(dst, src, (size_t)v->p.n * (size_t)v->p.es,
                               cudaMemcpyDeviceToDevice, b->stream);
    }
    return ck_copy_view(&v->p, src, dst, b->stream);
}

static const char *
blas_error(cublasStatus_t s)
{
    return cublasGetStatusString(s);
}

/* Row-major C = op(A) op(B) on cuBLAS, which is column-major: the column-
 * major C^T = op(B)^T op(A)^T, i.e. the operands swapped with the same
 * transpose flags. */
static cublasStatus_t
blas_gemm(cu_backend *b, int dt, bool ta, bool tb, int M, int N, int K,
          float alpha, const void *A, int lda, long long sa, const void *B,
          int ldb, long long sb, float beta, void *C, int ldc, long long sc,
          int batch)
{
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dt == WNN_FLOAT32) {
        if (batch == 1) {
            return cublasSgemm(b->blas, opb, opa, N, M, K, &alpha, B, ldb, A,
                               lda, &beta, C, ldc);
        }
        return cublasSgemmStridedBatched(b->blas, opb, opa, N, M, K, &alpha,
                                         B, ldb, sb, A, lda, sa, &beta, C, ldc,
                                         sc, batch);
    }
    if (batch == 1) {
        return cublasGemmEx(b->blas, opb, opa, N, M, K, &alpha, B, CUDA_R_16F,
                            ldb, A, CUDA_R_16F, lda, &beta, C, CUDA_R_16F, ldc,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    return cublasGemmStridedBatchedEx(b->blas, opb, opa, N, M, K, &alpha, B,
                                      CUDA_R_16F, ldb, sb, A, CUDA_R_16F, lda,
                                      sa, &beta, C, CUDA_R_16F, ldc, sc, batch,
                                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

static wnn_status
run_matmul(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
           void *scratch, wnn_error *err)
{
    const mm_plan *m = &cn->u.mm;
    const char *op = wnn_op_get(cn->node->op)->camel;
    cublasStatus_t s;
    if (m->mode != MM_POINTERS) {
        s = blas_gemm(b, m->dt, false, false, m->M, m->N, m->K, 1.0f, in[0],
                      m->K, m->sa, in[1], m->N, m->sb, 0.0f, out[0], m->N,
                      m->sc, m->batch);
    } else {
        void **ptrs = scratch;
        cudaError_t e = ck_batch_pointers(&m->bp, in[0], in[1], out[0], ptrs,
                                          b->stream);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label,
                              e, "kernel launch");
        }
        float alpha = 1.0f, beta = 0.0f;
        int batch = m->batch;
        if (m->dt == WNN_FLOAT32) {
            s = cublasSgemmBatched(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, m->N,
                                   m->M, m->K, &alpha,
                                   (const float *const *)(ptrs + batch), m->N,
                                   (const float *const *)ptrs, m->K, &beta,
                                   (float *const *)(ptrs + 2 * batch), m->N,
                                   batch);
        } else {
            s = cublasGemmBatchedEx(b->blas, CUBLAS_OP_N, CUBLAS_OP_N, m->N,
                                    m->M, m->K, &alpha,
                                    (const void *const *)(ptrs + batch),
                                    CUDA_R_16F, m->N,
                                    (const void *const *)ptrs, CUDA_R_16F,
                                    m->K, &beta,
                                    (void *const *)(ptrs + 2 * batch),
                                    CUDA_R_16F, m->N, batch,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        }
    }
    if (s != CUBLAS_STATUS_SUCCESS) {
        return wnn_failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(s));
    }
    return WNN_OK;
}

static wnn_status
run_gemm(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
         wnn_error *err)
{
    const gemm_plan *g = &cn->u.gm;
    const char *op = wnn_op_get(cn->node->op)->camel;
    if (g->use_c) {
        /* c broadcast into the output (c is node input c_in) */
        const void *cin[1] = { in[g->c_in] };
        cudaError_t e = run_view(b, &g->cview, (void *const *)cin, out);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label,
                              e, "kernel launch");
        }
    }
    cublasStatus_t s = blas_gemm(b, g->dt, g->ta, g->tb, g->M, g->N, g->K,
                                 g->alpha, in[0], g->lda, 0, in[1], g->ldb, 0,
                                 g->beta, out[0], g->N, 0, 1);
    if (s != CUBLAS_STATUS_SUCCESS) {
        return wnn_failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(s));
    }
    return WNN_OK;
}

/* gru / gruCell / lstm / lstmCell: x W^T for every step and direction in
 * one product, then per step h R^T (one strided-batched product over the
 * directions) and the gate kernel; gru without resetAfter takes z and r
 * first, then (r * h) Rn.  float32 products (float16 operands widened into
 * scratch first), as the CPU. */
static wnn_status
run_rnn(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
        void *scratch, wnn_error *err)
{
    const rnn_plan *r = &cn->u.rnn;
    const ck_rnn_p *p = &r->p;
    const char *op = wnn_op_get(cn->node->op)->camel;
    cudaStream_t s = b->stream;
    char *sc = scratch;
#define F(off) ((float *)(sc + (off)))
    const int64_t T = p->T, B = p->B, H = p->H, D = p->D, I = r->I;
    const int64_t G = p->lstm ? 4 : 3, GH = G * H, state = D * B * H;
    const float *x = in[0], *w = in[1], *rw = in[2];
    cudaError_t e = cudaSuccess;
    if (p->dt == WNN_FLOAT16) {
        e = ck_cast(CK_F16, CK_F32, T * B * I, in[0], F(r->x32), s);
        if (e == cudaSuccess) {
            e = ck_cast(CK_F16, CK_F32, D * GH * I, in[1], F(r->w32), s);
        }
        if (e == cudaSuccess) {
            e = ck_cast(CK_F16, CK_F32, D * GH * H, in[2], F(r->r32), s);
        }
        x = F(r->x32), w = F(r->w32), rw = F(r->r32);
    }
    if (e == cudaSuccess) {
        e = ck_rnn_init(p, r->bias ? in[r->bias - 1] : NULL,
                        r->rbias ? in[r->rbias - 1] : NULL,
                        r->h0 ? in[r->h0 - 1] : NULL,
                        r->c0 ? in[r->c0 - 1] : NULL, F(r->bsum), F(r->rbn),
                        F(r->h[0]), p->lstm ? F(r->c[0]) : NULL, s);
    }
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label, e,
                          "kernel launch");
    }
    cublasStatus_t bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)(T * B),
                                  (int)(D * GH), (int)I, 1.0f, x, (int)I, 0,
                                  w, (int)I, 0, 0.0f, F(r->xw), (int)(D * GH),
                                  0, 1);
    const void *peep = r->peep ? in[r->peep - 1] : NULL;
    void *seq = r->out_seq ? out[r->out_seq - 1] : NULL;
    float *hr = F(r->hr);
    for (int64_t k = 0; k < T && bs == CUBLAS_STATUS_SUCCESS &&
                        e == cudaSuccess; k++) {
        float *hp = F(r->h[k & 1]), *hn = F(r->h[(k + 1) & 1]);
        float *cp = p->lstm ? F(r->c[k & 1]) : NULL;
        float *cnx = p->lstm ? F(r->c[(k + 1) & 1]) : NULL;
        bool two = !p->lstm && !p->reset_after;
        /* hr[d] = h[d] R[d]^T (gru without resetAfter: z and r only) */
        bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)B,
                       (int)(two ? 2 * H : GH), (int)H, 1.0f, hp, (int)H,
                       B * H, rw, (int)H, GH * H, 0.0f, hr, (int)GH, B * GH,
                       (int)D);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            break;
        }
        e = ck_rnn_gates(p, 0, k, F(r->xw), hr, F(r->bsum), F(r->rbn), peep,
                         hp, cp, hn, cnx, F(r->rh), seq, s);
        if (two && e == cudaSuccess) {
            bs = blas_gemm(b, WNN_FLOAT32, false, true, (int)B, (int)H,
                           (int)H, 1.0f, F(r->rh), (int)H, B * H,
                           rw + 2 * H * H, (int)H, GH * H, 0.0f, hr + 2 * H,
                           (int)GH, B * GH, (int)D);
            if (bs == CUBLAS_STATUS_SUCCESS) {
                e = ck_rnn_gates(p, 1, k, F(r->xw), hr, F(r->bsum), F(r->rbn),
                                 peep, hp, cp, hn, cnx, F(r->rh), seq, s);
            }
        }
    }
    if (bs != CUBLAS_STATUS_SUCCESS) {
        return wnn_failk(err, WNN_OPERATION_ERROR, op, cn->node->label, NULL,
                         "cuBLAS failed: %s", blas_error(bs));
    }
    /* the final states into the outputs */
    const float *hf = F(r->h[T & 1]);
    const float *cf = p->lstm ? F(r->c[T & 1]) : NULL;
    size_t bytes = (size_t)state * sizeof(float);
    if (e == cudaSuccess) {
        e = p->dt == WNN_FLOAT32
                ? cudaMemcpyAsync(out[0], hf, bytes, cudaMemcpyDeviceToDevice, s)
                : ck_cast(CK_F32, CK_F16, state, hf, out[0], s);
    }
    if (e == cudaSuccess && r->out_c) {
        e = p->dt == WNN_FLOAT32
                ? cudaMemcpyAsync(out[r->out_c - 1], cf, bytes,
                                  cudaMemcpyDeviceToDevice, s)
                : ck_cast(CK_F32, CK_F16, state, cf, out[r->out_c - 1], s);
    }
#undef F
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, op, cn->node->label, e,
                          "kernel launch");
    }
    return WNN_OK;
}

static wnn_status
run_node(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
         void *scratch, wnn_error *err)
{
    cudaStream_t s = b->stream;
    cudaError_t e = cudaSuccess;
    switch (cn->kind) {
    case K_UNARY: e = ck_unary(&cn->u.un, in[0], out[0], s); break;
    case K_BINARY: e = ck_binary(&cn->u.bin, in[0], in[1], out[0], s); break;
    case K_WHERE: e = ck_where(&cn->u.wh, in[0], in[1], in[2], out[0], s); break;
    case K_CAST:
        if (cn->u.cast.ti == cn->u.cast.to) {
            e = cudaMemcpyAsync(out[0], in[0],
                                (size_t)cn->u.cast.n *
                                    wnn_dtype_size(cn->u.cast.ti),
                                cudaMemcpyDeviceToDevice, s);
        } else {
            e = ck_cast(cn->u.cast.ti, cn->u.cast.to, cn->u.cast.n, in[0],
                        out[0], s);
        }
        break;
    case K_COPY:
        if (out[0] != in[0]) {
            e = cudaMemcpyAsync(out[0], in[0], cn->u.copy_bytes,
                                cudaMemcpyDeviceToDevice, s);
        }
        break;
    case K_VIEWS:
        for (uint32_t j = 0; j < cn->n_views && e == cudaSuccess; j++) {
            e = run_view(b, &cn->views[j], in, out);
        }
        break;
    case K_PAD: e = ck_pad(&cn->u.pad, in[0], out[0], s); break;
    case K_TRI: e = ck_triangular(&cn->u.tri, in[0], out[0], s); break;
    case K_GATHER: e = ck_gather(&cn->u.ga, in[0], in[1], out[0], s); break;
    case K_GATHER_EL:
        e = ck_gather_elements(&cn->u.gel, in[0], in[1], out[0], s);
        break;
    case K_GATHER_ND: e = ck_gather_nd(&cn->u.nd, in[0], in[1], out[0], s); break;
    case K_SCATTER_EL:
        e = cudaMemcpyAsync(out[0], in[0], cn->in_bytes,
                            cudaMemcpyDeviceToDevice, s);
        if (e == cudaSuccess) {
            e = ck_scatter_elements(&cn->u.gel, in[1], in[2], out[0], s);
        }
        break;
    case K_SCATTER_ND:
        e = cudaMemcpyAsync(out[0], in[0], cn->in_bytes,
                            cudaMemcpyDeviceToDevice, s);
        if (e == cudaSuccess) {
            e = ck_scatter_nd(&cn->u.nd, in[1], in[2], out[0], scratch, s);
        }
        break;
    case K_NORM:
        e = ck_norm(&cn->u.norm, in[0], cn->scale ? in[cn->scale - 1] : NULL,
                    cn->bias ? in[cn->bias - 1] : NULL, out[0], s);
        break;
    case K_BN:
        e = ck_batch_norm(&cn->u.bn, in[0], in[1], in[2],
                          cn->scale ? in[cn->scale - 1] : NULL,
                          cn->bias ? in[cn->bias - 1] : NULL, out[0], scratch,
                          s);
        break;
    case K_SOFTMAX: e = ck_softmax(&cn->u.sm, in[0], out[0], s); break;
    case K_QUANT: e = ck_quantize(&cn->u.q, in[0], in[1], in[2], out[0], s); break;
    case K_MATMUL: return run_matmul(b, cn, in, out, scratch, err);
    case K_GEMM: return run_gemm(b, cn, in, out, err);
    case K_RNN: return run_rnn(b, cn, in, out, scratch, err);
    case K_REDUCE: e = ck_reduce(&cn->u.red, in[0], out[0], s); break;
    case K_ARG: e = ck_arg_min_max(&cn->u.ax, in[0], out[0], s); break;
    case K_CUMSUM: e = ck_cumulative_sum(&cn->u.ax, in[0], out[0], s); break;
    case K_POOL: e = ck_pool2d(&cn->u.pool, in[0], out[0], s); break;
    case K_RESAMPLE: e = ck_resample2d(&cn->u.rs, in[0], out[0], s); break;
    case K_CONV:
        e = ck_conv2d(&cn->u.conv, in[0], in[1],
                      cn->bias ? in[cn->bias - 1] : NULL, out[0], s);
        break;
    default:
        return wnn_failk(err, WNN_NOT_SUPPORTED,
                         wnn_op_get(cn->node->op)->camel, cn->node->label,
                         NULL, "no CUDA kernel");
    }
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR,
                          wnn_op_get(cn->node->op)->camel, cn->node->label, e,
                          "kernel launch");
    }
    return WNN_OK;
}

/* The cuBLAS handle, made on first use (creating one costs time and memory
 * that contexts without products need not pay).  float32 products in
 * float32: CUBLAS_DEFAULT_MATH with cublasSgemm* and CUBLAS_COMPUTE_32F
 * never use TF32; float16 products run on tensor cores, accumulating in
 * float32. */
static wnn_status
need_blas(cu_backend *b, wnn_error *err)
{
    wnn_status st = WNN_OK;
    pthread_mutex_lock(&b->blas_mu);
    if (!b->blas) {
        cublasStatus_t s = cublasCreate(&b->blas);
        if (s == CUBLAS_STATUS_SUCCESS) {
            s = cublasSetStream(b->blas, b->stream);
        }
        if (s == CUBLAS_STATUS_SUCCESS) {
            s = cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH);
        }
        if (s != CUBLAS_STATUS_SUCCESS) {
            if (b->blas) {
                cublasDestroy(b->blas);
            }
            b->blas = NULL;
            st = wnn_failk(err, WNN_OPERATION_ERROR, "build", NULL, NULL,
                           "cannot initialise cuBLAS: %s", blas_error(s));
        }
    }
    pthread_mutex_unlock(&b->blas_mu);
    return st;
}

/* ---- cuDNN (loaded at run time, cudnn_dl.c) ------------------------------------- */
/* The cuDNN handle, made on first use on the backend's stream; false when
 * cuDNN is off (WEBNN_CUDNN=0), missing, or fails to initialise: the
 * direct kernels then run every convolution. */
static bool
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
static void
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
static const int *
filter_axes(bool transpose, int layout)
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

static bool plan_dnn_locked(cu_backend *b, const wnn_ir *ir, cu_node *cn,
                            const wnn_epilogue *chain, const cu_node *act_cn);

/* Prepares cn (K_CONV) for cuDNN; false: the direct kernel runs it
 * (asymmetric padding, no cuDNN, a shape or layout cuDNN refuses).
 * chain: the fused chain the convolution heads, or NULL. */
static bool
plan_dnn(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
         const cu_node *act_cn)
{
    const wnn_node *node = cn->node;
    const ck_conv_p *p = &cn->u.conv;
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

static bool
plan_dnn_locked(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
                const cu_node *act_cn)
{
    const wnn_node *node = cn->node;
    const ck_conv_p *p = &cn->u.conv;
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
    int dt = p->dt == WNN_FLOAT16 ? WDNN_DATA_HALF : WDNN_DATA_FLOAT;
    int fmt = p->nhwc ? WDNN_TENSOR_NHWC : WDNN_TENSOR_NCHW;
    /* forward-convolution view: K filters over C / groups channels */
    int K = (int)(d->bwd ? p->C : p->O);
    int Cg = (int)((d->bwd ? p->O : p->C) / p->groups);
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
        a->cudnnSetConvolutionGroupCount(d->conv, (int)p->groups) == 0 &&
        /* float32: FMA kernels only (no TF32); float16: tensor cores,
         * float32 accumulation (the compute type above) */
        a->cudnnSetConvolutionMathType(d->conv, p->dt == WNN_FLOAT16
                                                    ? WDNN_TENSOR_OP_MATH
                                                    : WDNN_FMA_MATH) == 0;
    /* the forward convolution's output must be exactly the other side */
    int n, c, h, w;
    wdnn_tdesc fin = d->bwd ? d->y : d->x, fout = d->bwd ? d->x : d->y;
    const ck_conv_p *q = p;
    ok = ok && a->cudnnGetConvolution2dForwardOutputDim(d->conv, fin, d->w, &n, &c,
                                                        &h, &w) == 0 &&
         n == (int)q->N && c == K && h == (int)(d->bwd ? q->H : q->OH) &&
         w == (int)(d->bwd ? q->W : q->OW);
    (void)fout;
    /* the algorithm: the heuristics' first that fits (FMA for float32) */
    wdnn_algo_perf perf[16];
    int got = 0;
    d->algo = -1;
    if (ok) {
        wdnn_status st = d->bwd
            ? a->cudnnGetConvolutionBackwardDataAlgorithm_v7(b->dnn_h, d->w, d->x, d->conv,
                                                             d->y, 16, &got, perf)
            : a->cudnnGetConvolutionForwardAlgorithm_v7(b->dnn_h, d->x, d->w, d->conv,
                                                        d->y, 16, &got, perf);
        for (int i = 0; st == 0 && i < got && d->algo < 0; i++) {
            if (perf[i].status != WDNN_STATUS_SUCCESS || perf[i].memory > DNN_WS_MAX ||
                (p->dt == WNN_FLOAT32 && perf[i].mathType != WDNN_FMA_MATH &&
                 perf[i].mathType != WDNN_DEFAULT_MATH)) {
                continue;
            }
            size_t ws = 0;
            st = d->bwd ? a->cudnnGetConvolutionBackwardDataWorkspaceSize(
                              b->dnn_h, d->w, d->x, d->conv, d->y, perf[i].algo, &ws)
                        : a->cudnnGetConvolutionForwardWorkspaceSize(
                              b->dnn_h, d->x, d->w, d->conv, d->y, perf[i].algo, &ws);
            if (st == 0 && ws <= DNN_WS_MAX) {
                d->algo = perf[i].algo;
                d->ws = ws;
            }
            st = 0;
        }
        /* the algorithm's math type may differ from the request: set ours
         * again (no TF32 for float32) */
        ok = d->algo >= 0 &&
             a->cudnnSetConvolutionMathType(d->conv, p->dt == WNN_FLOAT16
                                                         ? WDNN_TENSOR_OP_MATH
                                                         : WDNN_FMA_MATH) == 0;
    }
    if (!ok) {
        dnn_free(b, d, true);
        return false;
    }
    /* the filter in cuDNN's layout */
    const int *src = filter_axes(d->bwd, p->flayout);
    static const int kcrs[4] = { 0, 1, 2, 3 }, krsc[4] = { 0, 2, 3, 1 };
    const int *dst = p->nhwc ? krsc : kcrs;
    if (memcmp(src, dst, sizeof(kcrs)) != 0) {
        const int64_t dims[4] = { K, Cg, p->KH, p->KW };
        int64_t sstride[4], acc = 1;
        for (int i = 3; i >= 0; i--) {
            sstride[src[i]] = acc; /* logical axis src[i] at position i */
            acc *= dims[src[i]];
        }
        ck_view_p *v = &d->fview.p;
        memset(&d->fview, 0, sizeof(d->fview));
        v->rank = 4;
        acc = 1;
        for (int i = 3; i >= 0; i--) {
            v->shape[i] = (uint32_t)dims[dst[i]];
            v->is[i] = sstride[dst[i]];
            v->os[i] = acc;
            acc *= dims[dst[i]];
        }
        d->fview.in = 1;
        d->fview.out = 0;
        view_finish(&d->fview, (int)wnn_dtype_size(p->dt));
        d->fbytes = align_up((uint64_t)acc * wnn_dtype_size(p->dt));
        d->frelayout = ir->operands[node->in[1]].kind == WNN_OPERAND_CONSTANT ? 1 : 2;
    }
    d->ws_off = d->frelayout == 2 ? d->fbytes : 0;
    cn->scratch = d->ws_off + align_up(d->ws);
    /* float16 with a bias: cuDNN's convolution would round to float16 before
     * the bias is added (the CPU rounds once, after it): the bias goes into
     * cudnnConvolutionBiasActivationForward (IDENTITY, which cuDNN only runs
     * with IMPLICIT_PRECOMP_GEMM); backward data has no bias: direct kernel */
    bool half_bias = p->dt == WNN_FLOAT16 && cn->bias;
    if (half_bias && d->bwd) {
        dnn_free(b, d, true);
        return false;
    }
    /* bias + residual + relu / relu6 in one cuDNN call (forward only) */
    if (!d->bwd && chain && act_cn) {
        int act = act_cn->u.un.op;
        float lo = act_cn->u.un.lo, hi = act_cn->u.un.hi;
        bool relu = act == CK_U_RELU;
        bool relu6 = act == CK_U_CLAMP && lo == 0.0f && hi > 0.0f && hi < 3.0e38f;
        bool chan = chain->add_kind == WNN_EPI_ADD_CHANNEL;
        bool one_bias = (cn->bias != 0) != chan;
        if ((relu || relu6) && one_bias &&
            a->cudnnCreateTensorDescriptor(&d->bias) == 0 &&
            a->cudnnSetTensor4dDescriptor(d->bias, WDNN_TENSOR_NCHW, dt, 1,
                                          (int)p->O, 1, 1) == 0 &&
            a->cudnnCreateActivationDescriptor(&d->act) == 0 &&
            a->cudnnSetActivationDescriptor(
                d->act, relu ? WDNN_ACTIVATION_RELU : WDNN_ACTIVATION_CLIPPED_RELU,
                WDNN_PROPAGATE_NAN, relu ? 0.0 : (double)hi) == 0) {
            d->fused = true;
            d->bias_src = cn->bias;
        }
    }
    if (half_bias && !d->fused) {
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
            dnn_free(b, d, true);
            return false;
        }
        d->algo = algo;
        d->ws = ws;
        cn->scratch = d->ws_off + align_up(d->ws);
        d->fused = d->identity = true;
        d->bias_src = cn->bias;
    }
    cn->dnn = d;
    return true;
}

/* The filter operand cuDNN reads: as given, prepared once among the
 * constants, or relaid out now into the scratch. */
static wnn_status
dnn_filter(cu_backend *b, const cu_compiled *c, const cu_node *cn,
           void *const *in, void *scratch, const void **wp, wnn_error *err)
{
    const cu_dnn *d = cn->dnn;
    *wp = in[1];
    if (d->frelayout == 1) {
        *wp = (const char *)c->consts + d->fprep_off;
    } else if (d->frelayout == 2) {
        void *outs[1] = { scratch };
        cudaError_t e = run_view(b, &d->fview, in, outs);
        if (e != cudaSuccess) {
            return cuda_error(err, WNN_OPERATION_ERROR,
                              wnn_op_get(cn->node->op)->camel, cn->node->label,
                              e, "kernel launch");
        }
        *wp = scratch;
    }
    return WNN_OK;
}

static wnn_status
dnn_fail(const cu_backend *b, const cu_node *cn, wdnn_status st, wnn_error *err)
{
    return wnn_failk(err, WNN_OPERATION_ERROR, wnn_op_get(cn->node->op)->camel,
                     cn->node->label, NULL, "cuDNN failed: %s",
                     b->dnn->cudnnGetErrorString(st));
}

/* A convolution on cuDNN (with its fused chain): writes y; *done is false
 * when the epilogue kernel must still run. */
static wnn_status
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
         * convolution, then the epilogue kernel (with the bias) */
        d->fused_failed = true;
        if (d->identity) {
            cn->epi.bias = 1;
            cn->epi_on = true;
        }
        st = a->cudnnConvolutionForward(b->dnn_h, &one, d->x, in[0], d->w, w, d->conv,
                                        d->algo, ws, d->ws, &zero, d->y, y);
    } else {
        st = a->cudnnConvolutionForward(b->dnn_h, &one, d->x, in[0], d->w, w, d->conv,
                                        d->algo, ws, d->ws, &zero, d->y, y);
    }
    pthread_mutex_unlock(&b->dnn_mu);
    if (st != WDNN_STATUS_SUCCESS) {
        return dnn_fail(b, cn, st, err);
    }
    return WNN_OK;
}

/* ---- the interface ---------------------------------------------------------------- */
static bool
cu_op_limits(wnn_backend *be, wnn_op op, wnn_op_limits *out)
{
    (void)be;
    int kind = kind_of(op);
    if (kind == K_NONE) {
        return false;
    }
    *out = *wnn_op_get(op)->limits;
    uint16_t mask = kind_dtypes(kind);
    for (uint32_t i = 0; i < out->n; i++) {
        out->e[i].dtypes &= mask;
    }
    return true;
}

static void
cu_compiled_free(wnn_backend *be, void *ptr)
{
    cu_compiled *c = ptr;
    if (!c) {
        return;
    }
    cu_backend *b = cu_of(be);
    cu_enter(b);
    /* queued work may still use the memory */
    cudaStreamSynchronize(b->stream);
    for (uint32_t i = 0; i < c->n_nodes; i++) {
        free(c->nodes[i].views);
        dnn_free(b, c->nodes[i].dnn, false);
    }
    cudaFree(c->arena);
    cudaFree(c->consts);
    cudaFree(c->scratch);
    pthread_mutex_destroy(&c->mu);
    free(c->nodes);
    free(c->const_off);
    free(c->ptr_in);
    free(c->ptr_out);
    free(c);
}

static wnn_status
cu_compile(wnn_backend *be, const wnn_graph *g, void **out, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    const wnn_ir *ir = g->ir;
    const wnn_plan *p = &g->plan;
    cudaError_t e = cudaSuccess;
    const char *what = "";
    cu_enter(b);
    cu_compiled *c = calloc(1, sizeof(*c));
    if (!c) {
        goto oom;
    }
    pthread_mutex_init(&c->mu, NULL);
    c->const_off = calloc(ir->n_operands + 1, sizeof(uint64_t));
    c->nodes = calloc(p->n_order + 1, sizeof(cu_node));
    uint32_t *idx = calloc(ir->n_nodes + 1, sizeof(uint32_t));
    if (!c->const_off || !c->nodes || !idx) {
        free(idx);
        goto oom;
    }
    /* The core's pipeline (core/compile.c) has found the epilogue
     * chains (g->fusion: this backend declares WNN_FUSE_EPILOGUE unless
     * WEBNN_CUDA_FUSION=0) and made the memory plan that keeps each chain's
     * inputs alive until the chain's last node, where it runs (g->plan). */
    const wnn_fusion *fusion = &g->fusion;
    /* nodes: kernel parameters, scratch */
    uint64_t scratch = 0;
    for (uint32_t n = 0; n < p->n_order; n++) {
        idx[p->order[n]] = n;
        const wnn_node *node = &ir->nodes[p->order[n]];
        cu_node *cn = &c->nodes[c->n_nodes++];
        wnn_desc in[node->n_in + 1], outd[node->n_out + 1];
        for (uint32_t j = 0; j < node->n_in; j++) {
            in[j] = ir->operands[node->in[j]].desc;
        }
        for (uint32_t j = 0; j < node->n_out; j++) {
            outd[j] = ir->operands[node->out[j]].desc;
        }
        cn->node = node;
        cn->lowered = &g->lowered[p->order[n]];
        cn->kind = kind_of(node->op);
        cn->result = node->n_out ? node->out[0] : 0;
        cn->addend = UINT32_MAX;
        if (cn->kind == K_NONE) {
            free(idx);
            cu_compiled_free(be, c);
            return wnn_failk(err, WNN_NOT_SUPPORTED, "build", NULL, NULL,
                             "%s has no CUDA kernel",
                             wnn_op_get(node->op)->camel);
        }
        if (!prep_node(cn, in, outd)) {
            free(idx);
            goto oom;
        }
        if ((cn->kind == K_MATMUL || cn->kind == K_GEMM || cn->kind == K_RNN) &&
            need_blas(b, err) != WNN_OK) {
            free(idx);
            cu_compiled_free(be, c);
            return WNN_ERR;
        }
        if (node->n_in > c->max_io) {
            c->max_io = node->n_in;
        }
        if (node->n_out > c->max_io) {
            c->max_io = node->n_out;
        }
    }
    /* the producers: fused chains, convolutions on cuDNN */
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        cu_node *cn = &c->nodes[n];
        if (cn->kind != K_CONV && cn->kind != K_MATMUL && cn->kind != K_GEMM) {
            continue;
        }
        uint32_t id = p->order[n];
        uint32_t k = fusion->n_chains ? fusion->chain_of[id] : 0;
        const wnn_epilogue *chain = k ? &fusion->chains[k - 1] : NULL;
        if (chain && chain->producer != id) {
            chain = NULL;
        }
        const cu_node *act_cn = NULL;
        const wnn_desc *od = &ir->operands[cn->node->out[0]].desc;
        ck_epi_p *ep = &cn->epi;
        memset(ep, 0, sizeof(*ep));
        ep->dt = od->dtype;
        ep->n = (int64_t)wnn_desc_elements(od);
        ep->act = -1;
        ep->C = ep->inner = 1;
        uint32_t axis = cn->kind == K_CONV ? (cn->u.conv.nhwc ? 3 : 1)
                                           : (od->rank ? od->rank - 1 : 0);
        if (chain) {
            axis = chain->channel_axis;
            cn->skip = true; /* runs at the chain's last node */
            c->nodes[idx[chain->last]].run_head = n + 1;
            cn->result = chain->result;
            if (chain->add != WNN_NO_NODE) {
                c->nodes[idx[chain->add]].skip = true;
                cn->addend = chain->addend;
                ep->add = chain->add_kind == WNN_EPI_ADD_RESIDUAL ? 1 : 2;
            }
            if (chain->act != WNN_NO_NODE) {
                act_cn = &c->nodes[idx[chain->act]];
                c->nodes[idx[chain->act]].skip = true;
                ep->act = act_cn->u.un.op;
                ep->u = act_cn->u.un;
            }
        }
        if (axis < od->rank) {
            ep->C = od->shape[axis];
            ep->inner = (int64_t)prod(od->shape, axis + 1, od->rank);
        }
        if (cn->kind == K_CONV && plan_dnn(b, ir, cn, chain, act_cn)) {
            /* cuDNN's convolution has no bias (the fused call has) */
            ep->bias = cn->bias != 0 && !(cn->dnn->fused && cn->dnn->identity);
        }
        cn->epi_on = ep->bias || ep->add || ep->act >= 0;
    }
    free(idx);
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        if (c->nodes[n].scratch > scratch) {
            scratch = c->nodes[n].scratch;
        }
    }
    c->ptr_in = calloc(c->max_io + 1, sizeof(void *));
    c->ptr_out = calloc(c->max_io + 1, sizeof(void *));
    if (!c->ptr_in || !c->ptr_out) {
        goto oom;
    }
    /* constants: one device block, uploaded once */
    uint64_t const_bytes = 0;
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        if (p->slots[i].kind == WNN_SLOT_CONSTANT) {
            c->const_off[i] = const_bytes;
            const_bytes += align_up(wnn_desc_bytes(&ir->operands[i].desc));
        }
    }
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        cu_dnn *d = c->nodes[n].dnn;
        if (d && d->frelayout == 1) { /* a constant filter, relaid out once */
            d->fprep_off = const_bytes;
            const_bytes += d->fbytes;
        }
    }
    if (const_bytes) {
        what = "cudaMalloc (constants)";
        if ((e = cudaMalloc(&c->consts, const_bytes)) != cudaSuccess) {
            c->consts = NULL;
            goto cuda_fail;
        }
    }
    for (uint32_t i = 0; i < ir->n_operands; i++) {
        const wnn_operand *o = &ir->operands[i];
        if (p->slots[i].kind != WNN_SLOT_CONSTANT) {
            continue;
        }
        uint64_t bytes = wnn_desc_bytes(&o->desc);
        char *dst = (char *)c->consts + c->const_off[i];
        what = "upload of a constant";
        if (o->tensor) {
            /* a constant MLTensor: device to device, after its creation
             * (queued earlier on the same stream) */
            e = cudaMemcpyAsync(dst, o->tensor->storage, bytes,
                                cudaMemcpyDeviceToDevice, b->stream);
        } else if (o->data) {
            e = stage_write(b, dst, o->data, bytes);
        }
        if (e != cudaSuccess) {
            goto cuda_fail;
        }
    }
    what = "filter layout for cuDNN";
    for (uint32_t n = 0; n < c->n_nodes; n++) {
        const cu_node *cn = &c->nodes[n];
        if (cn->dnn && cn->dnn->frelayout == 1) {
            void *fin[2] = { NULL, (char *)c->consts + c->const_off[cn->node->in[1]] };
            void *fout[1] = { (char *)c->consts + cn->dnn->fprep_off };
            if ((e = run_view(b, &cn->dnn->fview, fin, fout)) != cudaSuccess) {
                goto cuda_fail;
            }
        }
    }
    what = "cudaMalloc (intermediates)";
    if (p->arena_bytes &&
        (e = cudaMalloc(&c->arena, p->arena_bytes)) != cudaSuccess) {
        c->arena = NULL;
        goto cuda_fail;
    }
    what = "cudaMalloc (scratch)";
    if (scratch && (e = cudaMalloc(&c->scratch, scratch)) != cudaSuccess) {
        c->scratch = NULL;
        goto cuda_fail;
    }
    what = "upload of the constants";
    if ((e = cudaStreamSynchronize(b->stream)) != cudaSuccess) {
        goto cuda_fail;
    }
    *out = c;
    return WNN_OK;
cuda_fail:
    cu_compiled_free(be, c);
    return cuda_error(err, e == cudaErrorMemoryAllocation ? WNN_OUT_OF_MEMORY
                                                          : WNN_OPERATION_ERROR,
                      "build", NULL, e, what);
oom:
    cu_compiled_free(be, c);
    return wnn_failk(err, WNN_OUT_OF_MEMORY, "build", NULL, NULL,
                     "out of memory while compiling for the GPU");
}

static void *
resolve(const wnn_graph *g, cu_compiled *c, uint32_t id, void *const *in,
        void *const *out)
{
    const wnn_slot *s = &g->plan.slots[id];
    switch (s->kind) {
    case WNN_SLOT_INPUT: return in[s->index];
    case WNN_SLOT_OUTPUT: return out[s->index];
    case WNN_SLOT_CONSTANT: return (char *)c->consts + c->const_off[id];
    case WNN_SLOT_ARENA: return (char *)c->arena + s->offset;
    default: return NULL;
    }
}

/* A producer with its epilogue (bias, fused add, activation) or a
 * convolution on cuDNN: writes cn->result. */
static wnn_status
run_fused(cu_backend *b, const wnn_graph *g, cu_compiled *c, cu_node *cn,
          void *const *in, void *const *out, wnn_error *err)
{
    const wnn_node *node = cn->node;
    for (uint32_t j = 0; j < node->n_in; j++) {
        c->ptr_in[j] = resolve(g, c, node->in[j], in, out);
    }
    void *y = resolve(g, c, cn->result, in, out);
    const void *addend = cn->addend != UINT32_MAX
                             ? resolve(g, c, cn->addend, in, out) : NULL;
    c->ptr_out[0] = y;
    bool done = false;
    wnn_status st;
    if (cn->dnn) {
        st = run_dnn(b, c, cn, c->ptr_in, y, addend, c->scratch, &done, err);
    } else {
        st = run_node(b, cn, c->ptr_in, c->ptr_out, c->scratch, err);
    }
    if (st != WNN_OK || done || !cn->epi_on) {
        return st;
    }
    const void *b1 = cn->epi.bias ? c->ptr_in[cn->bias - 1] : NULL;
    cudaError_t e = ck_epilogue(&cn->epi, b1, addend, y, b->stream);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, wnn_op_get(node->op)->camel,
                          node->label, e, "kernel launch");
    }
    return WNN_OK;
}

static wnn_status
cu_execute(wnn_backend *be, const wnn_graph *g, void *compiled,
           void *const *in, void *const *out, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_compiled *c = compiled;
    wnn_status st = WNN_OK;
    cu_enter(b);
    pthread_mutex_lock(&c->mu);
    for (uint32_t n = 0; n < c->n_nodes && st == WNN_OK; n++) {
        cu_node *cn = &c->nodes[n];
        if (cn->run_head) {
            /* a fused chain's last node: its producer runs now */
            st = run_fused(b, g, c, &c->nodes[cn->run_head - 1], in, out, err);
            continue;
        }
        if (cn->skip) {
            continue;
        }
        if (cn->dnn || cn->epi_on) {
            st = run_fused(b, g, c, cn, in, out, err);
            continue;
        }
        const wnn_node *node = cn->node;
        for (uint32_t j = 0; j < node->n_in; j++) {
            c->ptr_in[j] = resolve(g, c, node->in[j], in, out);
        }
        for (uint32_t j = 0; j < node->n_out; j++) {
            c->ptr_out[j] = resolve(g, c, node->out[j], in, out);
        }
        st = run_node(b, cn, c->ptr_in, c->ptr_out, c->scratch, err);
    }
    for (uint32_t i = 0; i < g->plan.n_copies && st == WNN_OK; i++) {
        const wnn_output_copy *cp = &g->plan.copies[i];
        cudaError_t e = cudaMemcpyAsync(
            out[cp->to_output], out[cp->from_output],
            wnn_desc_bytes(&g->outputs[cp->to_output].desc),
            cudaMemcpyDeviceToDevice, b->stream);
        if (e != cudaSuccess) {
            st = cuda_error(err, WNN_OPERATION_ERROR, "dispatch", NULL, e,
                            "copy of an output");
        }
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

static wnn_status
cu_tensor_alloc(wnn_backend *be, uint64_t bytes, void **storage,
                wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
#ifdef CK_EMU_EXACT_MALLOC /* the emulation under AddressSanitizer */
    uint64_t n = bytes ? bytes : 1;
#else
    uint64_t n = align_up(bytes ? bytes : 1);
#endif
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return wnn_failk(err, WNN_UNKNOWN_ERROR, "createTensor", NULL, NULL,
                         "cannot allocate %llu bytes of GPU memory: %s",
                         (unsigned long long)bytes, cudaGetErrorString(e));
    }
    e = cudaMemsetAsync(p, 0, n, b->stream);
    if (e != cudaSuccess) {
        cudaFree(p);
        return cuda_error(err, WNN_UNKNOWN_ERROR, "createTensor", NULL, e,
                          "cudaMemsetAsync");
    }
    *storage = p;
    return WNN_OK;
}

static void
cu_tensor_free(wnn_backend *be, void *storage)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    cudaStreamSynchronize(b->stream); /* work queued on it may use it */
    cudaFree(storage);
}

static wnn_status
cu_tensor_write(wnn_backend *be, void *storage, const void *src,
                uint64_t bytes, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    cudaError_t e = stage_write(b, storage, src, bytes);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_UNKNOWN_ERROR, "writeTensor", NULL, e,
                          "copy to the GPU");
    }
    return WNN_OK;
}

static wnn_status
cu_tensor_read(wnn_backend *be, const void *storage, void *dst,
               uint64_t bytes, wnn_error *err)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    cudaError_t e = stage_read(b, dst, storage, bytes);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, "readTensor", NULL, e,
                          "copy from the GPU");
    }
    return WNN_OK;
}

static void
cu_synchronize(wnn_backend *be)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    cudaStreamSynchronize(b->stream);
}

static void
cu_destroy(wnn_backend *be)
{
    cu_backend *b = cu_of(be);
    cu_enter(b);
    if (b->stream) {
        cudaStreamSynchronize(b->stream);
    }
    if (b->blas) {
        cublasDestroy(b->blas);
    }
    if (b->dnn && b->dnn_h) {
        b->dnn->cudnnDestroy(b->dnn_h);
    }
    for (int k = 0; k < 2; k++) {
        if (b->stage_ev[k]) {
            cudaEventDestroy(b->stage_ev[k]);
        }
        if (b->stage[k]) {
            cudaFreeHost(b->stage[k]);
        }
    }
    if (b->stream) {
        cudaStreamDestroy(b->stream);
    }
    pthread_mutex_destroy(&b->stage_mu);
    pthread_mutex_destroy(&b->blas_mu);
    pthread_mutex_destroy(&b->dnn_mu);
    free(b);
}

static const wnn_backend_i cu_iface = {
    .api_version = WNN_BACKEND_API_VERSION,
    .name = "cuda",
    .device = WNN_DEVICE_GPU,
    .accelerated = true,
    .max_tensor_bytes = (uint64_t)1 << 32,
    .op_limits = cu_op_limits,
    .compile = cu_compile,
    .compiled_free = cu_compiled_free,
    .execute = cu_execute,
    .tensor_alloc = cu_tensor_alloc,
    .tensor_free = cu_tensor_free,
    .tensor_write = cu_tensor_write,
    .tensor_read = cu_tensor_read,
    .synchronize = cu_synchronize,
    .destroy = cu_destroy,
};

/* NotSupportedError "no usable GPU: <reason>" (as registry.c says when the
 * library cannot be loaded) */
static wnn_status
not_supported(wnn_error *err, const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return wnn_failk(err, WNN_NOT_SUPPORTED, "createContext", NULL,
                     "deviceType", "no usable GPU: %s", why);
}

/* The entry point that registry.c looks up: a backend on the GPU numbered
 * WEBNN_CUDA_DEVICE (default 0), or WNN_ERR (NotSupportedError naming the
 * reason) when no device or driver is usable. */
EXPORT wnn_status
wnn_cuda_backend_create(wnn_backend **out, wnn_error *err)
{
    int count = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return not_supported(err, "CUDA: %s (%s)",
                             cudaGetErrorName(e), cudaGetErrorString(e));
    }
    if (count <= 0) {
        return not_supported(err, "no CUDA device");
    }
    const char *env = getenv("WEBNN_CUDA_DEVICE");
    if (env && env[0]) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 0 || v >= count) {
            return not_supported(err, "WEBNN_CUDA_DEVICE=%s is not a device "
                                 "number below %d", env, count);
        }
        dev = (int)v;
    }
    if ((e = cudaSetDevice(dev)) != cudaSuccess) {
        cudaGetLastError();
        return not_supported(err, "cannot use CUDA device %d: %s", dev,
                             cudaGetErrorString(e));
    }
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof(prop));
    if ((e = cudaGetDeviceProperties(&prop, dev)) != cudaSuccess) {
        cudaGetLastError();
        return not_supported(err, "cannot query CUDA device %d: %s", dev,
                             cudaGetErrorString(e));
    }
    if ((e = ck_probe()) != cudaSuccess) {
        cudaGetLastError();
        return not_supported(err, "CUDA device %d (%s, compute capability "
                             "%d.%d) cannot run this build's kernels (sm_90): "
                             "%s", dev, prop.name, prop.major, prop.minor,
                             cudaGetErrorString(e));
    }
    cu_backend *b = calloc(1, sizeof(*b));
    if (!b) {
        return wnn_failk(err, WNN_OUT_OF_MEMORY, "createContext", NULL, NULL,
                         "out of memory");
    }
    b->device = dev;
    b->base.iface = &b->iface;
    b->base.impl = b;
    b->iface = cu_iface;
    pthread_mutex_init(&b->stage_mu, NULL);
    pthread_mutex_init(&b->blas_mu, NULL);
    pthread_mutex_init(&b->dnn_mu, NULL);
    /* fusion is a capability the core's pipeline reads (backend.h);
     * WEBNN_CUDA_FUSION=0 when the context is created turns it off */
    const char *fenv = getenv("WEBNN_CUDA_FUSION");
    b->base.fuses = fenv && strcmp(fenv, "0") == 0 ? 0 : WNN_FUSE_EPILOGUE;
    const char *dnn_env = getenv("WEBNN_CUDNN");
    b->dnn_off = dnn_env && strcmp(dnn_env, "0") == 0;
    if ((e = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking)) !=
        cudaSuccess) {
        cudaGetLastError();
        b->stream = NULL;
        cu_destroy(&b->base);
        return not_supported(err, "cannot create a CUDA stream: %s",
                             cudaGetErrorString(e));
    }
    uint64_t mem = (uint64_t)prop.totalGlobalMem;
    if (mem && mem < b->iface.max_tensor_bytes) {
        b->iface.max_tensor_bytes = mem;
    }
    *out = &b->base;
    return WNN_OK;
}
