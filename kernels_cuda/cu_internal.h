/* cu_internal.h -- what the files of the CUDA backend share: the backend,
 * compiled-graph and node structs, the launcher kinds, and the functions
 * each file gives the others.  Files:
 *   backend_cuda.c  lifecycle (creation, device, stream, destroy), tensors,
 *                   the wnn_backend_i
 *   cu_ops.c        the dispatch table from cuda_ops.h, op_limits, and the
 *                   per-node extras (prep_node: data types, counts, op
 *                   codes, options; the parameter blocks themselves are
 *                   g->lowered's, passed to the launchers as they are)
 *   cu_launch.c     compile() and execute() over the core's steps
 *                   (g->schedule, csrc/backend/steps.h): each step's state
 *                   once, then only launches; fused chains (producer +
 *                   epilogue)
 *   cu_blas.c       cuBLAS products
 *   cu_dnn.c        cuDNN planning and calls
 *   cu_device.c     the services all of them use: the device made current,
 *                   CUDA errors, pinned staging, slot addresses, view copies
 * Calls go down only: backend_cuda.c -> cu_launch.c -> cu_ops.c, cu_blas.c,
 * cu_dnn.c -> cu_device.c (tests/architecture/test_layers.py).
 *
 * The CUDA backend (the wnn_backend_i of backend.h) for
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
 *              and a scratch block for the steps that need one; each
 *              step's launcher (a node, or an epilogue chain's producer)
 *              takes its node's lowered block (g->lowered) and its extras
 *              (wnn_kernel_args, wnn_kernel_abi.h);
 *   execute()  only launches kernels and cuBLAS calls on the stream: no
 *              synchronisation, no allocation; a graph dispatched again
 *              with the same tensors is captured once as a CUDA graph and
 *              replayed with one cudaGraphLaunch (cu_launch.c, "graph
 *              replay"; WEBNN_CUDA_GRAPHS=0 turns it off);
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
 * The core is loaded by Python with RTLD_LOCAL and exports nothing: the
 * services of the core the library uses (the operator table, the error
 * helper, data type sizes, element-wise parameters) come through the
 * versioned table that registry.c gives wnn_cuda_backend_init at load time
 * (wnn_core_services, csrc/backend/backend.h), kept in cu_core; no source
 * of the core is linked in.  Only wnn_cuda_backend_init and
 * wnn_cuda_backend_create are exported. */
#ifndef WNN_CU_INTERNAL_H
#define WNN_CU_INTERNAL_H
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

#define STAGE_BYTES ((size_t)8 << 20) /* per pinned staging buffer */
#define DEV_ALIGN 256u

#define EXPORT __attribute__((visibility("default")))

/* The core's services (backend_cuda.c wnn_cuda_backend_init), set once at
 * load time before any backend is created. */
extern const wnn_core_services *cu_core;

/* ---- the backend ------------------------------------------------------------ */
typedef struct cu_backend {
    wnn_backend base;       /* base.impl points here */
    wnn_backend_i iface;    /* per instance: max_tensor_bytes of the device */
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;    /* made by the first compile() that needs it */
    void *blas_ws;          /* its workspace (BLAS_WS_BYTES), or NULL */
    pthread_mutex_t blas_mu; /* also guards the cuDNN handle */
    bool dnn_off;           /* WEBNN_CUDNN=0 when the backend was created */
    bool graphs_off;        /* WEBNN_CUDA_GRAPHS=0 when it was created: no
                             * CUDA graph replay (cu_launch.c) */
    bool graphs_verbose;    /* WEBNN_CUDA_GRAPHS_VERBOSE=1: why a graph's
                             * replay was turned off, on stderr */
    pthread_mutex_t cap_mu; /* held while a dispatch is captured into a CUDA
                             * graph on `stream`, and by every other user of
                             * the stream outside execute() (compile,
                             * tensors, synchronize): work they queued would
                             * join the capture, a synchronisation would
                             * break it */
    bool dnn_tried;         /* need_dnn() ran */
    const wdnn_api *dnn;    /* cuDNN, loaded by the first convolution */
    wdnn_handle dnn_h;      /* on `stream` */
    pthread_mutex_t dnn_mu; /* one cuDNN call at a time on the handle (a
                             * compile() may query while a dispatch runs) */
    bool dnn_find_off;      /* WEBNN_CUDNN_FIND=0: the heuristics' algorithm */
    struct dnn_algo_entry *algos; /* cuDNN's measured choice per shape
                                   * (cu_dnn.c dnn_find), under dnn_mu */
    size_t n_algos, cap_algos;
    pthread_mutex_t stage_mu; /* the staging buffers, for any thread */
    void *stage[2];
    cudaEvent_t stage_ev[2];
    int stage_next;
} cu_backend;

/* ---- kernels of each operator ------------------------------------------------- */
/* The launcher kinds, K_<KIND>, generated from cuda_ops.h's CU_KIND and
 * CU_SERVICE_KIND rows (in their order); K_NONE: no kernel. */
enum {
    K_NONE = -1,
#define CU_OP(ID, kind, code)
#define CU_KIND(KIND, run, dtypes) K_##KIND,
#define CU_SERVICE_KIND(KIND, dtypes) K_##KIND,
#include "cuda_ops.h"
#undef CU_OP
#undef CU_KIND
#undef CU_SERVICE_KIND
    K_COUNT
};

/* ---- compiled nodes ------------------------------------------------------------ */
/* gemm: c broadcast into the output (when the lowered block has c) */
typedef struct gemm_plan {
    wnn_view cview; /* node input c -> output 0, simplified */
} gemm_plan;

/* gru / gruCell / lstm / lstmCell: the scratch layout (byte offsets;
 * float32 copies of x, W, R only for float16); the kernels' parameters,
 * operands and outputs are the lowered block's (lowered->u.rnn). */
typedef struct rnn_plan {
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
    bool bias_fill;         /* float16 bias, no fused call: y filled with the
                             * bias (bview), then the convolution with beta 1
                             * (one rounding after the bias, as the CPU) */
    bool has_bview;         /* bview is set (float16 with a bias, forward) */
    wnn_view bview;         /* the bias (node input) broadcast over y */
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
    wnn_view fview;         /* the relayout (node input 1 -> prepared) */
    int fes;                /* the filter's element size */
    uint64_t fprep_off, fbytes;
    uint32_t bias_src;      /* fused: node input + 1 of the conv bias, or 0
                             * (the chain's per-channel addend) */
} cu_dnn;

typedef struct cu_node {
    const wnn_node *node;
    const wnn_lowered *lowered; /* g->lowered[node id] (compiler/lower/): the
                                 * parameter block the launchers take */
    /* its step of the schedule (g->schedule.steps[i] for c->nodes[i]):
     * a node, or an epilogue chain that runs its producer (`node`) at the
     * chain's last node, writing `result` */
    const wnn_step *step;
    uint32_t result;       /* operand the producer (+ epilogue) writes */
    uint32_t addend;       /* operand of the fused add, or UINT32_MAX */
    bool epi_on;
    wnn_epi_params epi;
    cu_dnn *dnn;           /* K_CONV on cuDNN, or NULL (direct kernel) */
    int kind;
    uint64_t scratch;      /* bytes of scratch the node needs */
    wnn_kernel_args ka;    /* the per-node extras (cu_ops.c prep_node) */
    cu_node_extras x;      /* ... those beside the kernel's (optional
                            * operands, byte counts): cu_ops.c prep_node;
                            * both reach the run launchers (cu_launch_args) */
    union {                /* the backend's own plans */
        gemm_plan gm;
        rnn_plan rnn;
    } u;
} cu_node;

typedef struct cu_compiled {
    void *arena;           /* the plan's intermediates */
    void *consts;          /* every constant, at const_off[operand] */
    uint64_t *const_off;
    void *scratch;
    uint64_t scratch_bytes; /* the largest step's scratch */
    cu_node *nodes;
    uint32_t n_nodes;
    void **ptr_in, **ptr_out; /* resolved operands of one node */
    uint32_t max_io;
    pthread_mutex_t mu;    /* one execution at a time per graph */
    /* CUDA graph replay (cu_launch.c, "graph replay"): the schedule's
     * launches captured once and replayed with one cudaGraphLaunch while
     * the bindings (tensor addresses) stay those it was captured with */
    cudaGraphExec_t gexec; /* NULL until a capture succeeded */
    void **cap_in, **cap_out;   /* the bindings gexec was captured with */
    void **last_in, **last_out; /* the previous dispatch's */
    bool has_last;         /* last_in / last_out hold a dispatch's */
    bool no_capture;       /* replay off: WEBNN_CUDA_GRAPHS=0, nothing to
                            * capture, or a capture or launch failed */
} cu_compiled;


/* ---- functions shared between the files ---- */
static inline cu_backend *
cu_of(wnn_backend *be)
{
    return (cu_backend *)be->impl;
}

static inline uint64_t
cu_align_up(uint64_t n)
{
    return (n + DEV_ALIGN - 1) / DEV_ALIGN * DEV_ALIGN;
}

void cu_enter(cu_backend *b);
wnn_status cuda_error(wnn_error *err, wnn_error_kind kind, const char *op,
           const char *label, cudaError_t e, const char *what);
cudaError_t stage_ready(cu_backend *b);
cudaError_t stage_write(cu_backend *b, void *dst, const void *src, uint64_t bytes);
cudaError_t stage_read(cu_backend *b, void *dst, const void *src, uint64_t bytes);
wnn_status cu_tensor_alloc(wnn_backend *be, uint64_t bytes, void **storage,
                wnn_error *err);
void cu_tensor_free(wnn_backend *be, void *storage);
wnn_status cu_tensor_write(wnn_backend *be, void *storage, const void *src,
                uint64_t bytes, wnn_error *err);
wnn_status cu_tensor_read(wnn_backend *be, const void *storage, void *dst,
               uint64_t bytes, wnn_error *err);
wnn_status cu_tensor_device_ptr(wnn_backend *be, void *storage, void **ptr,
                int *device_id, wnn_error *err);
wnn_status cu_tensor_write_device(wnn_backend *be, void *storage,
                const void *src, uint64_t bytes, wnn_error *err);
void cu_synchronize(wnn_backend *be);
void cu_destroy(wnn_backend *be);
wnn_status cu_not_supported(wnn_error *err, const char *fmt, ...);
int cu_kind_of(wnn_op op);
uint64_t cu_prod(const uint32_t *shape, uint32_t lo, uint32_t hi);
uint64_t rnn_take(uint64_t *at, uint64_t floats);
void prep_rnn(cu_node *cn);
bool prep_node(cu_node *cn, const wnn_desc *in, const wnn_desc *out);
bool cu_op_limits(wnn_backend *be, wnn_op op, wnn_op_limits *out);
const char *blas_error(cublasStatus_t s);
cublasStatus_t blas_gemm(cu_backend *b, int dt, bool ta, bool tb, int M, int N, int K,
          float alpha, const void *A, int lda, long long sa, const void *B,
          int ldb, long long sb, float beta, void *C, int ldc, long long sc,
          int batch);
wnn_status run_matmul(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
           void *scratch, wnn_error *err);
wnn_status run_gemm(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
                    void *scratch, wnn_error *err);
wnn_status run_rnn(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
        void *scratch, wnn_error *err);
wnn_status need_blas(cu_backend *b, wnn_error *err);
bool need_dnn(cu_backend *b);
void dnn_free(cu_backend *b, cu_dnn *d, bool held);
void dnn_cache_free(cu_backend *b);
const int *cu_filter_axes(bool transpose, int layout);
bool plan_dnn(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
         const cu_node *act_cn);
bool plan_dnn_locked(cu_backend *b, const wnn_ir *ir, cu_node *cn, const wnn_epilogue *chain,
                const cu_node *act_cn);
wnn_status dnn_filter(cu_backend *b, const cu_compiled *c, const cu_node *cn,
           void *const *in, void *scratch, const void **wp, wnn_error *err);
wnn_status dnn_fail(const cu_backend *b, const cu_node *cn, wdnn_status st, wnn_error *err);
wnn_status run_dnn(cu_backend *b, const cu_compiled *c, cu_node *cn, void *const *in,
        void *y, const void *addend, void *scratch, bool *done, wnn_error *err);
wnn_status run_fused(cu_backend *b, const wnn_graph *g, cu_compiled *c, cu_node *cn,
          void *const *in, void *const *out, wnn_error *err);
void cu_compiled_free(wnn_backend *be, void *ptr);
wnn_status cu_compile(wnn_backend *be, const wnn_graph *g, void **out, wnn_error *err);
void *cu_resolve(const wnn_graph *g, cu_compiled *c, uint32_t id, void *const *in,
        void *const *out);
wnn_status cu_execute(wnn_backend *be, const wnn_graph *g, void *compiled,
           void *const *in, void *const *out, wnn_error *err);
cudaError_t run_view(cu_backend *b, const wnn_view *v, int es, void *const *in,
                     void *const *out);
wnn_status run_node(cu_backend *b, const cu_node *cn, void *const *in, void *const *out,
         void *scratch, wnn_error *err);

#endif
