/* cuda_emu.c -- a fake CUDA runtime and cuBLAS on the CPU, for testing the
 * CUDA backend (backend_cuda.c and the kernels compiled with -DCK_HOST_EMU)
 * on a machine without a GPU.  "Device" memory is host memory, streams and
 * events do nothing (every call completes at once), and the GEMMs are naive
 * loops implementing cuBLAS's documented column-major definition
 *     C = alpha * op(A) * op(B) + beta * C   (beta == 0: C is not read)
 * with cuBLAS's argument checks (leading dimensions), so a wrong row-major
 * to column-major mapping in the backend fails here as it would on a GPU.
 * Signatures come from the real headers (cuda_runtime_api.h, cublas_v2.h).
 * Never part of the real library. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "emu_stream.h"

float wnn_f16_to_f32(uint16_t h);
uint16_t wnn_f32_to_f16(float f);

static long long emu_live; /* cudaMalloc'd blocks not freed yet (the tests
                            * read it: wnn_emu_live_allocs below) */

/* ---- runtime ------------------------------------------------------------ */
cudaError_t
cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

cudaError_t
cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t
cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    (void)device;
    memset(prop, 0, sizeof(*prop));
    strcpy(prop->name, "CPU emulation of the CUDA backend");
    prop->major = 9;
    prop->minor = 0;
    prop->totalGlobalMem = (size_t)1 << 34;
    return cudaSuccess;
}

cudaError_t
cudaGetLastError(void)
{
    return cudaSuccess;
}

const char *
cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess ? "cudaSuccess" : "cudaErrorEmulated";
}

const char *
cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "an error of the CUDA emulation";
}

cudaError_t
cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    (void)func;
    memset(attr, 0, sizeof(*attr));
    return cudaSuccess;
}

cudaError_t
cudaMalloc(void **p, size_t size)
{
#ifdef CK_EMU_EXACT_MALLOC /* AddressSanitizer builds: exact bounds */
    size_t n = size;
    *p = malloc(n ? n : 1);
#else
    size_t n = (size + 255) / 256 * 256;
    *p = aligned_alloc(256, n ? n : 256);
#endif
    if (!*p) {
        return cudaErrorMemoryAllocation;
    }
    /* garbage, as device memory: the backend must not rely on zeros */
    memset(*p, 0xa5, n);
    __atomic_fetch_add(&emu_live, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t
cudaFree(void *p)
{
    if (p) {
        __atomic_fetch_sub(&emu_live, 1, __ATOMIC_RELAXED);
    }
    free(p);
    return cudaSuccess;
}

cudaError_t
cudaMallocHost(void **p, size_t size)
{
    *p = malloc(size ? size : 1);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

/* Counters the tests read with ctypes (tests/backends/test_dlpack_gpu.py):
 * copies per cudaMemcpyKind (0..4) and cudaDeviceSynchronize calls, so that
 * a test can tell a device-to-device copy from a host round trip. */
static unsigned long long emu_copies[5], emu_device_syncs;
__attribute__((visibility("default"))) long long
wnn_emu_live_allocs(void)
{
    return __atomic_load_n(&emu_live, __ATOMIC_RELAXED);
}

__attribute__((visibility("default"))) unsigned long long
wnn_emu_copies(int kind)
{
    return kind >= 0 && kind < 5 ? emu_copies[kind] : 0;
}

__attribute__((visibility("default"))) unsigned long long
wnn_emu_device_syncs(void)
{
    return emu_device_syncs;
}

/* a copy or fill recorded by a capture */
typedef struct emu_mem {
    void *dst;
    const void *src; /* NULL: fill with value */
    size_t count;
    int value;
} emu_mem;

static void
emu_mem_run(void *arg)
{
    emu_mem *m = arg;
    if (m->src) {
        memmove(m->dst, m->src, m->count);
    } else {
        memset(m->dst, m->value, m->count);
    }
}

static cudaError_t
emu_mem_record(emu_stream *cs, void *dst, const void *src, size_t count,
               int value)
{
    emu_mem *m = malloc(sizeof(*m));
    if (!m) {
        cs->capturing = 2;
        return cudaErrorMemoryAllocation;
    }
    *m = (emu_mem){ dst, src, count, value };
    return cs->record(cs, emu_mem_run, free, m) == 0 ? cudaSuccess
                                                     : cudaErrorMemoryAllocation;
}

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t count,
                enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if ((int)kind >= 0 && (int)kind < 5) {
        __atomic_fetch_add(&emu_copies[kind], 1, __ATOMIC_RELAXED);
    }
    emu_stream *cs = emu_capturing(stream);
    if (cs) {
        /* a graph replays device copies only (the backend captures no
         * other): a host buffer in one is a bug on a GPU too */
        if (kind != cudaMemcpyDeviceToDevice) {
            cs->capturing = 2;
            return cudaErrorStreamCaptureUnsupported;
        }
        return emu_mem_record(cs, dst, src, count, 0);
    }
    memmove(dst, src, count);
    return cudaSuccess;
}

cudaError_t
cudaDeviceSynchronize(void)
{
    __atomic_fetch_add(&emu_device_syncs, 1, __ATOMIC_RELAXED);
    return cudaSuccess;
}

cudaError_t
cudaMemsetAsync(void *p, int value, size_t count, cudaStream_t stream)
{
    emu_stream *cs = emu_capturing(stream);
    if (cs) {
        return emu_mem_record(cs, p, NULL, count, value);
    }
    memset(p, value, count);
    return cudaSuccess;
}

static int
emu_record(emu_stream *s, void (*run)(void *), void (*drop)(void *), void *arg)
{
    if (s->capturing == 1 && s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        emu_op *ops = realloc(s->ops, cap * sizeof(*ops));
        if (!ops) {
            s->capturing = 2;
        } else {
            s->ops = ops;
            s->cap = cap;
        }
    }
    if (s->capturing != 1) {
        drop(arg);
        return -1;
    }
    s->ops[s->n++] = (emu_op){ run, drop, arg };
    return 0;
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    emu_stream *es = calloc(1, sizeof(*es));
    if (es) {
        es->magic = EMU_STREAM_MAGIC;
        es->record = emu_record;
    }
    *s = (cudaStream_t)es;
    return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

static void
emu_ops_free(emu_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ops[i].drop(ops[i].arg);
    }
    free(ops);
}

cudaError_t
cudaStreamDestroy(cudaStream_t s)
{
    emu_stream *es = (emu_stream *)s;
    if (es) {
        emu_ops_free(es->ops, es->n);
        es->magic = 0;
    }
    free(s);
    return cudaSuccess;
}

/* a synchronisation of a capturing stream is illegal on a GPU: it breaks
 * the capture (cudaErrorStreamCaptureUnsupported), as here */
static cudaError_t
emu_sync_check(cudaStream_t s)
{
    emu_stream *cs = emu_capturing(s);
    if (cs) {
        cs->capturing = 2;
        return cudaErrorStreamCaptureUnsupported;
    }
    return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t s)
{
    return emu_sync_check(s);
}

/* ---- CUDA graphs: capture records closures, a launch runs them ------------ */
struct CUgraph_st {
    emu_op *ops;
    size_t n;
};
struct CUgraphExec_st {
    emu_op *ops;
    size_t n;
};

static long long emu_graph_launches; /* the tests read it */

__attribute__((visibility("default"))) long long
wnn_emu_graph_launches(void)
{
    return __atomic_load_n(&emu_graph_launches, __ATOMIC_RELAXED);
}

/* A test knob: the graph API call that fails (the backend must then run
 * the dispatch eagerly): 0 none, 1 cudaStreamBeginCapture, 2
 * cudaStreamEndCapture (the capture invalidated), 3 cudaGraphInstantiate
 * and cudaGraphExecUpdate, 4 cudaGraphLaunch. */
static int emu_graph_fail;

__attribute__((visibility("default"))) void
wnn_emu_graph_fail(int where)
{
    __atomic_store_n(&emu_graph_fail, where, __ATOMIC_RELAXED);
}

static bool
emu_fails(int where)
{
    return __atomic_load_n(&emu_graph_fail, __ATOMIC_RELAXED) == where;
}

cudaError_t
cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    emu_stream *s = (emu_stream *)stream;
    if (!s || s->magic != EMU_STREAM_MAGIC) {
        return cudaErrorStreamCaptureUnsupported;
    }
    if (s->capturing) {
        return cudaErrorIllegalState;
    }
    if (emu_fails(1)) {
        return cudaErrorStreamCaptureUnsupported;
    }
    s->capturing = 1;
    s->n = 0;
    return cudaSuccess;
}

cudaError_t
cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *st)
{
    emu_stream *s = (emu_stream *)stream;
    *st = !s || s->magic != EMU_STREAM_MAGIC || !s->capturing
              ? cudaStreamCaptureStatusNone
              : s->capturing == 1 ? cudaStreamCaptureStatusActive
                                  : cudaStreamCaptureStatusInvalidated;
    return cudaSuccess;
}

cudaError_t
cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    emu_stream *s = (emu_stream *)stream;
    *graph = NULL;
    if (!s || s->magic != EMU_STREAM_MAGIC || !s->capturing) {
        return cudaErrorIllegalState;
    }
    bool broken = s->capturing != 1 || emu_fails(2);
    s->capturing = 0;
    struct CUgraph_st *g = broken ? NULL : malloc(sizeof(*g));
    if (!g) {
        emu_ops_free(s->ops, s->n);
        s->ops = NULL;
        s->n = s->cap = 0;
        return broken ? cudaErrorStreamCaptureInvalidated
                      : cudaErrorMemoryAllocation;
    }
    g->ops = s->ops;
    g->n = s->n;
    s->ops = NULL;
    s->n = s->cap = 0;
    *graph = g;
    return cudaSuccess;
}

cudaError_t
cudaGraphDestroy(cudaGraph_t g)
{
    if (g) {
        emu_ops_free(g->ops, g->n);
        free(g);
    }
    return cudaSuccess;
}

/* The exec takes the graph's closures (the graph keeps none: it is only
 * destroyed afterwards, as the backend does). */
cudaError_t
cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g,
                     unsigned long long flags)
{
    (void)flags;
    struct CUgraphExec_st *x = emu_fails(3) ? NULL : calloc(1, sizeof(*x));
    if (!x) {
        return cudaErrorMemoryAllocation;
    }
    x->ops = g->ops;
    x->n = g->n;
    g->ops = NULL;
    g->n = 0;
    *exec = x;
    return cudaSuccess;
}

/* A real update requires the same topology (else
 * cudaErrorGraphExecUpdateFailure); the emulation takes any graph. */
cudaError_t
cudaGraphExecUpdate(cudaGraphExec_t x, cudaGraph_t g,
                    cudaGraphExecUpdateResultInfo *info)
{
    if (info) {
        memset(info, 0, sizeof(*info));
        info->result = cudaGraphExecUpdateSuccess;
    }
    if (emu_fails(3)) {
        if (info) {
            info->result = cudaGraphExecUpdateError;
        }
        return cudaErrorGraphExecUpdateFailure;
    }
    emu_ops_free(x->ops, x->n);
    x->ops = g->ops;
    x->n = g->n;
    g->ops = NULL;
    g->n = 0;
    return cudaSuccess;
}

cudaError_t
cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t stream)
{
    if (emu_capturing(stream) || emu_fails(4)) {
        return emu_fails(4) ? cudaErrorLaunchFailure : cudaErrorStreamCaptureUnsupported;
    }
    __atomic_fetch_add(&emu_graph_launches, 1, __ATOMIC_RELAXED);
    for (size_t i = 0; i < x->n; i++) {
        x->ops[i].run(x->ops[i].arg);
    }
    return cudaSuccess;
}

cudaError_t
cudaGraphExecDestroy(cudaGraphExec_t x)
{
    if (x) {
        emu_ops_free(x->ops, x->n);
        free(x);
    }
    return cudaSuccess;
}

/* The kernels' launches (ck_host_emu.h, CK_LAUNCH) while a stream captures. */
int
ck_emu_is_capturing(void *stream)
{
    return emu_capturing(stream) != NULL;
}

int
ck_emu_record(void *stream, void (*run)(void *), void (*drop)(void *),
              void *arg)
{
    emu_stream *s = emu_capturing(stream);
    return s ? s->record(s, run, drop, arg) : (run(arg), drop(arg), 0);
}

cudaError_t
cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    (void)flags;
    *e = (cudaEvent_t)malloc(16);
    return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaEventDestroy(cudaEvent_t e)
{
    free(e);
    return cudaSuccess;
}

cudaError_t
cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)e;
    return emu_sync_check(s); /* (the backend records none in a capture) */
}

cudaError_t
cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}

/* ---- cuBLAS --------------------------------------------------------------- */
struct cublasContext {
    cudaStream_t stream; /* cublasSetStream's */
};

cublasStatus_t
cublasCreate(cublasHandle_t *h)
{
    *h = calloc(1, sizeof(struct cublasContext));
    return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t
cublasDestroy(cublasHandle_t h)
{
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}

/* cuBLAS asks for a workspace aligned to 256 bytes; the emulation needs
 * none, it only counts the calls (the tests read wnn_emu_blas_workspaces) */
static unsigned long long emu_blas_ws;

__attribute__((visibility("default"))) unsigned long long
wnn_emu_blas_workspaces(void)
{
    return __atomic_load_n(&emu_blas_ws, __ATOMIC_RELAXED);
}

cublasStatus_t
cublasSetWorkspace(cublasHandle_t h, void *ws, size_t bytes)
{
    if (!h || (bytes && !ws)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
#ifndef CK_EMU_EXACT_MALLOC /* cudaMalloc above: 256-byte aligned */
    if ((uintptr_t)ws & 255) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
#endif
    __atomic_fetch_add(&emu_blas_ws, 1, __ATOMIC_RELAXED);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasSetMathMode(cublasHandle_t h, cublasMath_t mode)
{
    (void)h;
    /* the emulation sums in float32 (or wider) always */
    int base = (int)mode & ~(int)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    return base == CUBLAS_DEFAULT_MATH || base == CUBLAS_PEDANTIC_MATH
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_INVALID_VALUE;
}

const char *
cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS"
                                      : "CUBLAS_STATUS_(emulated error)";
}

static float
load(const void *p, cudaDataType t, int64_t i)
{
    return t == CUDA_R_16F ? wnn_f16_to_f32(((const uint16_t *)p)[i])
                           : ((const float *)p)[i];
}

static cublasStatus_t
check(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      int lda, int ldb, int ldc, cudaDataType at, cudaDataType bt,
      cudaDataType ct, cublasComputeType_t comp)
{
    int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (ra > 1 ? ra : 1) ||
        ldb < (rb > 1 ? rb : 1) || ldc < (m > 1 ? m : 1)) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    /* float32 or float16 operands; C of their type, or float32 (real
     * cuBLAS's mixed-precision CUDA_R_16F x CUDA_R_16F -> CUDA_R_32F) */
    if (at != bt || (ct != at && ct != CUDA_R_32F) ||
        (at != CUDA_R_32F && at != CUDA_R_16F) || comp != CUBLAS_COMPUTE_32F) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* one column-major product, in float32 (cuBLAS's COMPUTE_32F) */
static void
gemm1(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
      float alpha, const void *A, int lda, const void *B, int ldb, float beta,
      void *C, int ldc, cudaDataType t, cudaDataType ct)
{
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < m; i++) {
            float acc = 0.0f;
            for (int l = 0; l < k; l++) {
                int64_t ia = ta == CUBLAS_OP_N ? i + (int64_t)l * lda
                                               : l + (int64_t)i * lda;
                int64_t ib = tb == CUBLAS_OP_N ? l + (int64_t)j * ldb
                                               : j + (int64_t)l * ldb;
                acc += load(A, t, ia) * load(B, t, ib);
            }
            int64_t ic = i + (int64_t)j * ldc;
            float v = alpha * acc;
            if (beta != 0.0f) {
                v += beta * load(C, ct, ic);
            }
            if (ct == CUDA_R_16F) {
                ((uint16_t *)C)[ic] = wnn_f32_to_f16(v);
            } else {
                ((float *)C)[ic] = v;
            }
        }
    }
}

static size_t
tsize(cudaDataType t)
{
    return t == CUDA_R_16F ? 2 : 4;
}

/* One cuBLAS call's products: batch products of A + i * sa (bytes), or of
 * Aa[i] (the pointer arrays of the *Batched calls, device memory read when
 * the products run). */
typedef struct emu_gemm {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, batch;
    float alpha, beta;
    const void *A, *B;
    void *C;
    long long sa, sb, sc;
    const void *const *Aa, *const *Ba;
    void *const *Ca;
    cudaDataType t, ct;
} emu_gemm;

static void
gemm_run(void *arg)
{
    const emu_gemm *j = arg;
    for (int i = 0; i < j->batch; i++) {
        const void *A = j->Aa ? j->Aa[i] : (const char *)j->A + i * j->sa;
        const void *B = j->Ba ? j->Ba[i] : (const char *)j->B + i * j->sb;
        void *C = j->Ca ? j->Ca[i] : (char *)j->C + i * j->sc;
        gemm1(j->ta, j->tb, j->m, j->n, j->k, j->alpha, A, j->lda, B, j->ldb,
              j->beta, C, j->ldc, j->t, j->ct);
    }
}

/* Runs the products now, or records them while the handle's stream
 * captures a graph (alpha and beta by value, as cuBLAS's host pointer
 * mode reads them at the call). */
static cublasStatus_t
gemm_queue(cublasHandle_t h, cublasStatus_t s, const emu_gemm *j)
{
    if (s != CUBLAS_STATUS_SUCCESS) {
        return s;
    }
    emu_stream *cs = emu_capturing(h->stream);
    if (!cs) {
        gemm_run((void *)j);
        return s;
    }
    emu_gemm *copy = malloc(sizeof(*copy));
    if (!copy) {
        cs->capturing = 2;
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    *copy = *j;
    return cs->record(cs, gemm_run, free, copy) == 0
               ? CUBLAS_STATUS_SUCCESS
               : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t
cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
            int m, int n, int k, const float *alpha, const float *A, int lda,
            const float *B, int ldb, const float *beta, float *C, int ldc)
{
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = 1, .alpha = *alpha,
                   .beta = *beta, .A = A, .B = B, .C = C, .t = CUDA_R_32F,
                   .ct = CUDA_R_32F };
    return gemm_queue(h, s, &j);
}

cublasStatus_t
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
             int m, int n, int k, const void *alpha, const void *A,
             cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb,
             const void *beta, void *C, cudaDataType ct, int ldc,
             cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = 1,
                   .alpha = *(const float *)alpha,
                   .beta = *(const float *)beta, .A = A, .B = B, .C = C,
                   .t = at, .ct = ct };
    return gemm_queue(h, s, &j);
}

cublasStatus_t
cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                          cublasOperation_t tb, int m, int n, int k,
                          const float *alpha, const float *A, int lda,
                          long long sa, const float *B, int ldb, long long sb,
                          const float *beta, float *C, int ldc, long long sc,
                          int batch)
{
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = batch, .alpha = *alpha,
                   .beta = *beta, .A = A, .B = B, .C = C, .sa = sa * 4,
                   .sb = sb * 4, .sc = sc * 4, .t = CUDA_R_32F,
                   .ct = CUDA_R_32F };
    return gemm_queue(h, s, &j);
}

cublasStatus_t
cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, int m, int n, int k,
                           const void *alpha, const void *A, cudaDataType at,
                           int lda, long long sa, const void *B,
                           cudaDataType bt, int ldb, long long sb,
                           const void *beta, void *C, cudaDataType ct, int ldc,
                           long long sc, int batch, cublasComputeType_t comp,
                           cublasGemmAlgo_t algo)
{
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    long long es = (long long)tsize(at), esc = (long long)tsize(ct);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = batch,
                   .alpha = *(const float *)alpha,
                   .beta = *(const float *)beta, .A = A, .B = B, .C = C,
                   .sa = sa * es, .sb = sb * es, .sc = sc * esc, .t = at,
                   .ct = ct };
    return gemm_queue(h, s, &j);
}

cublasStatus_t
cublasSgemmBatched(cublasHandle_t h, cublasOperation_t ta,
                   cublasOperation_t tb, int m, int n, int k,
                   const float *alpha, const float *const Aarray[], int lda,
                   const float *const Barray[], int ldb, const float *beta,
                   float *const Carray[], int ldc, int batch)
{
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = batch, .alpha = *alpha,
                   .beta = *beta, .Aa = (const void *const *)Aarray,
                   .Ba = (const void *const *)Barray,
                   .Ca = (void *const *)Carray, .t = CUDA_R_32F,
                   .ct = CUDA_R_32F };
    return gemm_queue(h, s, &j);
}

cublasStatus_t
cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                    cublasOperation_t tb, int m, int n, int k,
                    const void *alpha, const void *const Aarray[],
                    cudaDataType at, int lda, const void *const Barray[],
                    cudaDataType bt, int ldb, const void *beta,
                    void *const Carray[], cudaDataType ct, int ldc, int batch,
                    cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    emu_gemm j = { .ta = ta, .tb = tb, .m = m, .n = n, .k = k, .lda = lda,
                   .ldb = ldb, .ldc = ldc, .batch = batch,
                   .alpha = *(const float *)alpha,
                   .beta = *(const float *)beta, .Aa = Aarray, .Ba = Barray,
                   .Ca = Carray, .t = at, .ct = ct };
    return gemm_queue(h, s, &j);
}
