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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

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

cudaError_t
cudaMemcpyAsync(void *dst, const void *src, size_t count,
                enum cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    if ((int)kind >= 0 && (int)kind < 5) {
        __atomic_fetch_add(&emu_copies[kind], 1, __ATOMIC_RELAXED);
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
    (void)stream;
    memset(p, value, count);
    return cudaSuccess;
}

cudaError_t
cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    *s = (cudaStream_t)malloc(16);
    return *s ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t
cudaStreamDestroy(cudaStream_t s)
{
    free(s);
    return cudaSuccess;
}

cudaError_t
cudaStreamSynchronize(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
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
    (void)s;
    return cudaSuccess;
}

cudaError_t
cudaEventSynchronize(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}

/* ---- cuBLAS --------------------------------------------------------------- */
struct cublasContext {
    int unused;
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
    (void)h;
    (void)s;
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

cublasStatus_t
cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
            int m, int n, int k, const float *alpha, const float *A, int lda,
            const float *B, int ldb, const float *beta, float *C, int ldc)
{
    (void)h;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    if (s == CUBLAS_STATUS_SUCCESS) {
        gemm1(ta, tb, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc,
              CUDA_R_32F, CUDA_R_32F);
    }
    return s;
}

cublasStatus_t
cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
             int m, int n, int k, const void *alpha, const void *A,
             cudaDataType at, int lda, const void *B, cudaDataType bt, int ldb,
             const void *beta, void *C, cudaDataType ct, int ldc,
             cublasComputeType_t comp, cublasGemmAlgo_t algo)
{
    (void)h;
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    if (s == CUBLAS_STATUS_SUCCESS) {
        gemm1(ta, tb, m, n, k, *(const float *)alpha, A, lda, B, ldb,
              *(const float *)beta, C, ldc, at, ct);
    }
    return s;
}

cublasStatus_t
cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                          cublasOperation_t tb, int m, int n, int k,
                          const float *alpha, const float *A, int lda,
                          long long sa, const float *B, int ldb, long long sb,
                          const float *beta, float *C, int ldc, long long sc,
                          int batch)
{
    (void)h;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < batch; i++) {
        gemm1(ta, tb, m, n, k, *alpha, A + i * sa, lda, B + i * sb, ldb,
              *beta, C + i * sc, ldc, CUDA_R_32F, CUDA_R_32F);
    }
    return s;
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
    (void)h;
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    size_t es = tsize(at), esc = tsize(ct);
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < batch; i++) {
        gemm1(ta, tb, m, n, k, *(const float *)alpha,
              (const char *)A + i * sa * (long long)es, lda,
              (const char *)B + i * sb * (long long)es, ldb,
              *(const float *)beta, (char *)C + i * sc * (long long)esc, ldc,
              at, ct);
    }
    return s;
}

cublasStatus_t
cublasSgemmBatched(cublasHandle_t h, cublasOperation_t ta,
                   cublasOperation_t tb, int m, int n, int k,
                   const float *alpha, const float *const Aarray[], int lda,
                   const float *const Barray[], int ldb, const float *beta,
                   float *const Carray[], int ldc, int batch)
{
    (void)h;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, CUDA_R_32F,
                             CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < batch; i++) {
        gemm1(ta, tb, m, n, k, *alpha, Aarray[i], lda, Barray[i], ldb, *beta,
              Carray[i], ldc, CUDA_R_32F, CUDA_R_32F);
    }
    return s;
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
    (void)h;
    (void)algo;
    cublasStatus_t s = check(ta, tb, m, n, k, lda, ldb, ldc, at, bt, ct, comp);
    for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < batch; i++) {
        gemm1(ta, tb, m, n, k, *(const float *)alpha, Aarray[i], lda,
              Barray[i], ldb, *(const float *)beta, Carray[i], ldc, at, ct);
    }
    return s;
}
