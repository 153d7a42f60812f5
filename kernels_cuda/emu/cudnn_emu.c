/* cudnn_emu.c -- the subset of cuDNN 9's legacy convolution API that the
 * CUDA backend uses, on the CPU, built as its own shared object
 * (build/cuda-emu/libcudnn_emu.so) that the emulated backend loads with
 * dlopen exactly as it loads libcudnn.so.9 on a GPU host (cudnn_dl.c).
 * Compiled against the real cudnn.h, so every signature is cuDNN's.
 *
 * Naive implementations of cuDNN's documented definitions:
 *   forward       y = alpha * conv(x, w) + beta * y   (cross-correlation, or
 *                 convolution with the filter flipped), groups, dilation,
 *                 symmetric padding, strides;
 *   backward data dx = alpha * conv^T(dy, w) + beta * dx;
 *   bias + act    y = act(alpha1 * conv(x, w) + alpha2 * z + bias), with
 *                 RELU, CLIPPED_RELU (coef) or IDENTITY (IMPLICIT_PRECOMP_GEMM
 *                 only, as documented);
 * element (n, c, h, w) at NCHW or NHWC offsets from each descriptor's format,
 * filters KCRS (NCHW) or KRSC (NHWC).  The argument checks follow cuDNN:
 * descriptors set and consistent (x channels = filter C * groups, K a
 * multiple of groups, y = the forward output's dimensions, one data type,
 * bias [1, K, 1, 1], z like y), a workspace at least as large as the size
 * query gave (it is filled with garbage first), x not overlapping y.
 * Accumulation in double, one rounding to the output type.  Policy checks
 * of this project: float32 must not be asked for tensor-op math (no TF32).
 *
 * Test hooks (ctypes): cudnn_emu_calls(name) counts calls per function,
 * cudnn_emu_live() the descriptors and handles not destroyed yet,
 * cudnn_emu_set("reject_fused", 1) makes the bias-activation call return
 * CUDNN_STATUS_NOT_SUPPORTED (as a GPU may for some configurations),
 * cudnn_emu_set("no_algo", 1) makes the algorithm queries find nothing,
 * cudnn_emu_set("find_algo", a) the algorithm the Find functions return
 * (0 IMPLICIT_GEMM, the default; 1 IMPLICIT_PRECOMP_GEMM),
 * cudnn_emu_set("find_fail", 1) makes them fail (CUDNN_STATUS_ALLOC_FAILED). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn.h>

#include "emu_stream.h"

#define EXPORT __attribute__((visibility("default")))

struct cudnnContext { int magic; cudaStream_t stream; };
struct cudnnTensorStruct { int set; cudnnTensorFormat_t fmt; cudnnDataType_t dt; int n, c, h, w; };
struct cudnnFilterStruct { int set; cudnnTensorFormat_t fmt; cudnnDataType_t dt; int k, c, h, w; };
struct cudnnConvolutionStruct {
    int set, ph, pw, u, v, dh, dw, groups;
    cudnnConvolutionMode_t mode;
    cudnnDataType_t ct;
    cudnnMathType_t math;
};
struct cudnnActivationStruct { int set; cudnnActivationMode_t mode; cudnnNanPropagation_t nan; double coef; };

#define MAGIC 0x5eed

/* ---- test hooks ------------------------------------------------------------ */
static const char *names[32];
static size_t counts[32];
static long live;
static int reject_fused, no_algo;
static int find_algo; /* the Find functions' one result: IMPLICIT_GEMM (0)
                       * unless set (1: IMPLICIT_PRECOMP_GEMM) */
static int find_fail; /* the Find functions fail (as when their buffers do
                       * not fit on a GPU) */

static void
count(const char *name)
{
    for (int i = 0; i < 32; i++) {
        if (!names[i]) {
            names[i] = name;
        }
        if (strcmp(names[i], name) == 0) {
            counts[i]++;
            return;
        }
    }
}

EXPORT size_t
cudnn_emu_calls(const char *name)
{
    for (int i = 0; i < 32 && names[i]; i++) {
        if (strcmp(names[i], name) == 0) {
            return counts[i];
        }
    }
    return 0;
}

EXPORT long
cudnn_emu_live(void)
{
    return live;
}

EXPORT void
cudnn_emu_set(const char *knob, int value)
{
    if (strcmp(knob, "reject_fused") == 0) {
        reject_fused = value;
    } else if (strcmp(knob, "no_algo") == 0) {
        no_algo = value;
    } else if (strcmp(knob, "find_algo") == 0 && (value == 0 || value == 1)) {
        find_algo = value;
    } else if (strcmp(knob, "find_fail") == 0) {
        find_fail = value;
    }
}

/* ---- float16 --------------------------------------------------------------- */
static float
h2f(uint16_t h)
{
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023;
    uint32_t bits;
    if (e == 31) {
        bits = s | 0x7f800000u | (m << 13);
    } else if (e) {
        bits = s | ((e + 112) << 23) | (m << 13);
    } else if (m) { /* subnormal */
        float f = ldexpf((float)m, -24);
        return s ? -f : f;
    } else {
        bits = s;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t
f2h(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t s = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        return s | 0x7c00 | (a > 0x7f800000u ? 0x200 : 0);
    }
    if (a >= 0x477ff000u) { /* rounds to >= 65520: inf */
        return s | 0x7c00;
    }
    if (a < 0x38800000u) { /* subnormal or zero: round at 2^-24 */
        float v;
        memcpy(&v, &a, 4);
        return s | (uint16_t)nearbyintf(v * 16777216.0f);
    }
    uint32_t r = a + 0xfff + ((a >> 13) & 1); /* to nearest even */
    return s | (uint16_t)((r - 0x38000000u) >> 13);
}

static double
ld(const void *p, cudnnDataType_t t, int64_t i)
{
    return t == CUDNN_DATA_HALF ? h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void
st(void *p, cudnnDataType_t t, int64_t i, double v)
{
    if (t == CUDNN_DATA_HALF) {
        ((uint16_t *)p)[i] = f2h((float)v);
    } else {
        ((float *)p)[i] = (float)v;
    }
}

static int64_t
toff(const struct cudnnTensorStruct *d, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return d->fmt == CUDNN_TENSOR_NHWC ? ((n * d->h + h) * d->w + w) * d->c + c
                                       : ((n * d->c + c) * d->h + h) * d->w + w;
}

static int64_t
foff(const struct cudnnFilterStruct *d, int64_t k, int64_t c, int64_t r, int64_t s)
{
    return d->fmt == CUDNN_TENSOR_NHWC ? ((k * d->h + r) * d->w + s) * d->c + c
                                       : ((k * d->c + c) * d->h + r) * d->w + s;
}

static int64_t
tbytes(const struct cudnnTensorStruct *d)
{
    return (int64_t)d->n * d->c * d->h * d->w * (d->dt == CUDNN_DATA_HALF ? 2 : 4);
}

/* ---- handle, descriptors ------------------------------------------------------ */
size_t
cudnnGetVersion(void)
{
    count("cudnnGetVersion");
    return CUDNN_VERSION;
}

const char *
cudnnGetErrorString(cudnnStatus_t s)
{
    switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM (emulated)";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED (emulated)";
    default: return "CUDNN_STATUS_ (emulated error)";
    }
}

cudnnStatus_t
cudnnCreate(cudnnHandle_t *h)
{
    count("cudnnCreate");
    *h = calloc(1, sizeof(**h));
    (*h)->magic = MAGIC;
    live++;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnDestroy(cudnnHandle_t h)
{
    if (!h || h->magic != MAGIC) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    h->magic = 0;
    free(h);
    live--;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{
    count("cudnnSetStream");
    if (!h || h->magic != MAGIC) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

#define CREATE_DESTROY(T, cre, des)                                            \
    cudnnStatus_t cre(T *d)                                                    \
    {                                                                          \
        *d = calloc(1, sizeof(**d));                                           \
        live++;                                                                \
        return CUDNN_STATUS_SUCCESS;                                           \
    }                                                                          \
    cudnnStatus_t des(T d)                                                     \
    {                                                                          \
        if (!d) {                                                              \
            return CUDNN_STATUS_BAD_PARAM;                                     \
        }                                                                      \
        free(d);                                                               \
        live--;                                                                \
        return CUDNN_STATUS_SUCCESS;                                           \
    }
CREATE_DESTROY(cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor)
CREATE_DESTROY(cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor)
CREATE_DESTROY(cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor)
CREATE_DESTROY(cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
               cudnnDestroyActivationDescriptor)

static int
fmt_ok(cudnnTensorFormat_t f)
{
    return f == CUDNN_TENSOR_NCHW || f == CUDNN_TENSOR_NHWC;
}

static int
dt_ok(cudnnDataType_t t)
{
    return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF;
}

cudnnStatus_t
cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                           cudnnDataType_t dt, int n, int c, int h, int w)
{
    if (!d || !fmt_ok(format) || !dt_ok(dt) || n <= 0 || c <= 0 || h <= 0 || w <= 0) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    *d = (struct cudnnTensorStruct){ 1, format, dt, n, c, h, w };
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                           cudnnTensorFormat_t format, int k, int c, int h, int w)
{
    if (!d || !fmt_ok(format) || !dt_ok(dt) || k <= 0 || c <= 0 || h <= 0 || w <= 0) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    *d = (struct cudnnFilterStruct){ 1, format, dt, k, c, h, w };
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int ph, int pw, int u,
                                int v, int dh, int dw, cudnnConvolutionMode_t mode,
                                cudnnDataType_t ct)
{
    if (!d || ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0 ||
        (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) || !dt_ok(ct)) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    d->set = 1;
    d->ph = ph, d->pw = pw, d->u = u, d->v = v, d->dh = dh, d->dw = dw;
    d->mode = mode;
    d->ct = ct;
    d->groups = 1;
    d->math = CUDNN_DEFAULT_MATH;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups)
{
    if (!d || !d->set || groups < 1) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    d->groups = groups;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t m)
{
    count("cudnnSetConvolutionMathType");
    if (!d || !d->set || (int)m < 0 || (int)m > 3) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d, cudnnActivationMode_t mode,
                             cudnnNanPropagation_t nan, double coef)
{
    if (!d || (int)mode < 0 || (int)mode > 6) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    *d = (struct cudnnActivationStruct){ 1, mode, nan, coef };
    return CUDNN_STATUS_SUCCESS;
}

/* ---- shapes, algorithms, workspaces --------------------------------------------- */
static cudnnStatus_t
out_dim(const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *x,
        const struct cudnnFilterStruct *w, int *n, int *k, int *h, int *wd)
{
    if (!c || !x || !w || !c->set || !x->set || !w->set || x->dt != w->dt ||
        x->c != w->c * c->groups || w->k % c->groups) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    int eh = (w->h - 1) * c->dh + 1, ew = (w->w - 1) * c->dw + 1;
    if (x->h + 2 * c->ph < eh || x->w + 2 * c->pw < ew) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    *n = x->n;
    *k = w->k;
    *h = (x->h + 2 * c->ph - eh) / c->u + 1;
    *wd = (x->w + 2 * c->pw - ew) / c->v + 1;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t c,
                                      const cudnnTensorDescriptor_t x,
                                      const cudnnFilterDescriptor_t w, int *n, int *k,
                                      int *h, int *wd)
{
    return out_dim(c, x, w, n, k, h, wd);
}

/* x -> y through (c, w), y's descriptor included */
static cudnnStatus_t
check_fwd(const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *x,
          const struct cudnnFilterStruct *w, const struct cudnnTensorStruct *y)
{
    int n, k, h, wd;
    if (out_dim(c, x, w, &n, &k, &h, &wd) != CUDNN_STATUS_SUCCESS || !y || !y->set ||
        y->dt != x->dt || y->n != n || y->c != k || y->h != h || y->w != wd) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (x->dt == CUDNN_DATA_FLOAT && c->ct != CUDNN_DATA_FLOAT) {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    /* this project's promise: float32 never on TF32 tensor cores */
    if (x->dt == CUDNN_DATA_FLOAT &&
        (c->math == CUDNN_TENSOR_OP_MATH || c->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)) {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    return CUDNN_STATUS_SUCCESS;
}

/* algorithm 1 needs a workspace (to exercise the backend's), 0 none */
static size_t
ws_need(int algo, const struct cudnnFilterStruct *w)
{
    return algo == 1 ? 256 + (size_t)w->k * w->c * 4 : 0;
}

static void
fill_perf(void *perf, int n, int *returned, cudnnMathType_t math,
          const struct cudnnFilterStruct *w)
{
    /* both perf structs have the same layout */
    cudnnConvolutionFwdAlgoPerf_t *p = perf;
    int k = 0;
    for (int a = 1; a >= 0 && k < n; a--, k++) {
        memset(&p[k], 0, sizeof(p[k]));
        p[k].algo = (cudnnConvolutionFwdAlgo_t)a;
        p[k].status = no_algo ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
        p[k].time = -1.0f;
        p[k].memory = ws_need(a, w);
        p[k].determinism = CUDNN_DETERMINISTIC;
        p[k].mathType = math;
    }
    *returned = k;
}

cudnnStatus_t
cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                       const cudnnFilterDescriptor_t w,
                                       const cudnnConvolutionDescriptor_t c,
                                       const cudnnTensorDescriptor_t y, const int requested,
                                       int *returned, cudnnConvolutionFwdAlgoPerf_t *perf)
{
    count("cudnnGetConvolutionForwardAlgorithm_v7");
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || requested < 1 || !returned || !perf) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if ((s = check_fwd(c, x, w, y)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    fill_perf(perf, requested, returned, c->math, w);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                            const cudnnTensorDescriptor_t dy,
                                            const cudnnConvolutionDescriptor_t c,
                                            const cudnnTensorDescriptor_t dx,
                                            const int requested, int *returned,
                                            cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    count("cudnnGetConvolutionBackwardDataAlgorithm_v7");
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || requested < 1 || !returned || !perf) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if ((s = check_fwd(c, dx, w, dy)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    fill_perf(perf, requested, returned, c->math, w);
    return CUDNN_STATUS_SUCCESS;
}

/* cudnnFind*: cuDNN runs every algorithm and returns them sorted by time;
 * here one result, the algorithm `find_algo` (both are emulated alike),
 * time 0, its workspace, the math type requested */
static void
find_perf(void *perf, int *returned, cudnnMathType_t math,
          const struct cudnnFilterStruct *w)
{
    cudnnConvolutionFwdAlgoPerf_t *p = perf;
    memset(p, 0, sizeof(*p));
    p->algo = (cudnnConvolutionFwdAlgo_t)find_algo;
    p->status = no_algo ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
    p->time = 0.0f;
    p->memory = ws_need(find_algo, w);
    p->determinism = CUDNN_DETERMINISTIC;
    p->mathType = math;
    *returned = 1;
}

cudnnStatus_t
cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                     const cudnnFilterDescriptor_t w,
                                     const cudnnConvolutionDescriptor_t c,
                                     const cudnnTensorDescriptor_t y, const int requested,
                                     int *returned, cudnnConvolutionFwdAlgoPerf_t *perf)
{
    count("cudnnFindConvolutionForwardAlgorithm");
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || requested < 1 || !returned || !perf) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (find_fail) {
        return CUDNN_STATUS_ALLOC_FAILED;
    }
    if ((s = check_fwd(c, x, w, y)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    find_perf(perf, returned, c->math, w);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                          const cudnnTensorDescriptor_t dy,
                                          const cudnnConvolutionDescriptor_t c,
                                          const cudnnTensorDescriptor_t dx,
                                          const int requested, int *returned,
                                          cudnnConvolutionBwdDataAlgoPerf_t *perf)
{
    count("cudnnFindConvolutionBackwardDataAlgorithm");
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || requested < 1 || !returned || !perf) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (find_fail) {
        return CUDNN_STATUS_ALLOC_FAILED;
    }
    if ((s = check_fwd(c, dx, w, dy)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    find_perf(perf, returned, c->math, w);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, const cudnnTensorDescriptor_t x,
                                        const cudnnFilterDescriptor_t w,
                                        const cudnnConvolutionDescriptor_t c,
                                        const cudnnTensorDescriptor_t y,
                                        cudnnConvolutionFwdAlgo_t algo, size_t *size)
{
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || (int)algo < 0 || (int)algo > 1) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if ((s = check_fwd(c, x, w, y)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    *size = ws_need(algo, w);
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, const cudnnFilterDescriptor_t w,
                                             const cudnnTensorDescriptor_t dy,
                                             const cudnnConvolutionDescriptor_t c,
                                             const cudnnTensorDescriptor_t dx,
                                             cudnnConvolutionBwdDataAlgo_t algo, size_t *size)
{
    cudnnStatus_t s;
    if (!h || h->magic != MAGIC || (int)algo < 0 || (int)algo > 1) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if ((s = check_fwd(c, dx, w, dy)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    *size = ws_need(algo, w);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- the computations ---------------------------------------------------------- */
static cudnnStatus_t
check_run(cudnnHandle_t h, int algo, const struct cudnnFilterStruct *w, void *ws,
          size_t ws_size)
{
    if (!h || h->magic != MAGIC || algo < 0 || algo > 1) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    size_t need = ws_need(algo, w);
    if (need && (!ws || ws_size < need)) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (need) {
        memset(ws, 0x5a, need); /* a real algorithm writes its workspace */
    }
    return CUDNN_STATUS_SUCCESS;
}

static int
overlap(const void *a, int64_t na, const void *b, int64_t nb)
{
    const char *x = a, *y = b;
    return x < y + nb && y < x + na;
}

/* the cross-correlation (or convolution) sum at y(n, k, oh, ow) */
static double
conv_at(const struct cudnnConvolutionStruct *c, const struct cudnnTensorStruct *xd,
        const void *x, const struct cudnnFilterStruct *wd, const void *w, int n, int k,
        int oh, int ow)
{
    int Kg = wd->k / c->groups, g = k / Kg;
    double acc = 0.0;
    for (int ci = 0; ci < wd->c; ci++) {
        for (int r = 0; r < wd->h; r++) {
            int ih = oh * c->u - c->ph + r * c->dh;
            if (ih < 0 || ih >= xd->h) {
                continue;
            }
            for (int s = 0; s < wd->w; s++) {
                int iw = ow * c->v - c->pw + s * c->dw;
                if (iw < 0 || iw >= xd->w) {
                    continue;
                }
                int fr = c->mode == CUDNN_CONVOLUTION ? wd->h - 1 - r : r;
                int fs = c->mode == CUDNN_CONVOLUTION ? wd->w - 1 - s : s;
                acc += ld(x, xd->dt, toff(xd, n, g * wd->c + ci, ih, iw)) *
                       ld(w, wd->dt, foff(wd, k, ci, fr, fs));
            }
        }
    }
    return acc;
}

/* ---- CUDA graph capture (emu_stream.h): a call on a capturing stream is
 * checked now and recorded with its arguments (the scalars by value, as
 * cuDNN reads host scalars at the call) to run at cudaGraphLaunch.  Calls
 * are counted when made, not replayed, as on a GPU. */
enum { DC_FWD, DC_BWD, DC_FUSED };
typedef struct dnn_call {
    int kind;
    cudnnHandle_t h;
    float a1, a2;
    cudnnTensorDescriptor_t xd, yd, zd, bd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t c;
    cudnnActivationDescriptor_t ad;
    int algo;
    const void *x, *w, *z, *bias;
    void *ws, *y;
    size_t ws_size;
} dnn_call;

static _Thread_local int replaying; /* the calls below run, uncounted */

static void dnn_call_run(void *arg);

/* 1: recorded (the caller returns success), 0: run now, -1: failed */
static int
dnn_record(const dnn_call *call)
{
    emu_stream *cs = replaying ? NULL : emu_capturing(call->h->stream);
    if (!cs) {
        return 0;
    }
    dnn_call *copy = malloc(sizeof(*copy));
    if (!copy) {
        cs->capturing = 2;
        return -1;
    }
    *copy = *call;
    return cs->record(cs, dnn_call_run, free, copy) == 0 ? 1 : -1;
}

#define DNN_RECORD(...)                                                          \
    do {                                                                         \
        dnn_call call_ = { __VA_ARGS__ };                                        \
        int r_ = dnn_record(&call_);                                             \
        if (r_) {                                                                \
            return r_ > 0 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_ALLOC_FAILED;    \
        }                                                                        \
    } while (0)

cudnnStatus_t
cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd,
                        const void *x, const cudnnFilterDescriptor_t wd, const void *w,
                        const cudnnConvolutionDescriptor_t c, cudnnConvolutionFwdAlgo_t algo,
                        void *ws, size_t ws_size, const void *beta,
                        const cudnnTensorDescriptor_t yd, void *y)
{
    if (!replaying) {
        count("cudnnConvolutionForward");
    }
    cudnnStatus_t s;
    if ((s = check_fwd(c, xd, wd, yd)) != CUDNN_STATUS_SUCCESS ||
        (s = check_run(h, algo, wd, ws, ws_size)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    if (!x || !w || !y || !alpha || !beta || overlap(x, tbytes(xd), y, tbytes(yd))) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    float a = *(const float *)alpha, b = *(const float *)beta;
    DNN_RECORD(.kind = DC_FWD, .h = h, .a1 = a, .a2 = b, .xd = xd, .yd = yd, .wd = wd,
               .c = c, .algo = (int)algo, .x = x, .w = w, .ws = ws, .y = y,
               .ws_size = ws_size);
    for (int n = 0; n < yd->n; n++)
        for (int k = 0; k < yd->c; k++)
            for (int oh = 0; oh < yd->h; oh++)
                for (int ow = 0; ow < yd->w; ow++) {
                    int64_t o = toff(yd, n, k, oh, ow);
                    double v = a * conv_at(c, xd, x, wd, w, n, k, oh, ow);
                    if (b != 0.0f) {
                        v += b * ld(y, yd->dt, o);
                    }
                    st(y, yd->dt, o, v);
                }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                             const cudnnFilterDescriptor_t wd, const void *w,
                             const cudnnTensorDescriptor_t dyd, const void *dy,
                             const cudnnConvolutionDescriptor_t c,
                             cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t ws_size,
                             const void *beta, const cudnnTensorDescriptor_t dxd, void *dx)
{
    if (!replaying) {
        count("cudnnConvolutionBackwardData");
    }
    cudnnStatus_t s;
    if ((s = check_fwd(c, dxd, wd, dyd)) != CUDNN_STATUS_SUCCESS ||
        (s = check_run(h, algo, wd, ws, ws_size)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    if (!dy || !w || !dx || !alpha || !beta || overlap(dy, tbytes(dyd), dx, tbytes(dxd))) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    float a = *(const float *)alpha, b = *(const float *)beta;
    DNN_RECORD(.kind = DC_BWD, .h = h, .a1 = a, .a2 = b, .xd = dxd, .yd = dyd, .wd = wd,
               .c = c, .algo = (int)algo, .x = dy, .w = w, .ws = ws, .y = dx,
               .ws_size = ws_size);
    int Kg = wd->k / c->groups;
    for (int n = 0; n < dxd->n; n++)
        for (int ch = 0; ch < dxd->c; ch++) {
            int g = ch / wd->c, ci = ch % wd->c;
            for (int ih = 0; ih < dxd->h; ih++)
                for (int iw = 0; iw < dxd->w; iw++) {
                    double acc = 0.0;
                    for (int k = g * Kg; k < (g + 1) * Kg; k++)
                        for (int r = 0; r < wd->h; r++) {
                            int t = ih + c->ph - r * c->dh;
                            if (t < 0 || t % c->u || t / c->u >= dyd->h) {
                                continue;
                            }
                            for (int q = 0; q < wd->w; q++) {
                                int tw = iw + c->pw - q * c->dw;
                                if (tw < 0 || tw % c->v || tw / c->v >= dyd->w) {
                                    continue;
                                }
                                int fr = c->mode == CUDNN_CONVOLUTION ? wd->h - 1 - r : r;
                                int fq = c->mode == CUDNN_CONVOLUTION ? wd->w - 1 - q : q;
                                acc += ld(dy, dyd->dt, toff(dyd, n, k, t / c->u, tw / c->v)) *
                                       ld(w, wd->dt, foff(wd, k, ci, fr, fq));
                            }
                        }
                    int64_t o = toff(dxd, n, ch, ih, iw);
                    double v = a * acc;
                    if (b != 0.0f) {
                        v += b * ld(dx, dxd->dt, o);
                    }
                    st(dx, dxd->dt, o, v);
                }
        }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t
cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnFilterDescriptor_t wd, const void *w, const cudnnConvolutionDescriptor_t c,
    cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_size, const void *alpha2,
    const cudnnTensorDescriptor_t zd, const void *z, const cudnnTensorDescriptor_t bd,
    const void *bias, const cudnnActivationDescriptor_t ad, const cudnnTensorDescriptor_t yd,
    void *y)
{
    if (!replaying) {
        count("cudnnConvolutionBiasActivationForward");
    }
    cudnnStatus_t s;
    if ((s = check_fwd(c, xd, wd, yd)) != CUDNN_STATUS_SUCCESS ||
        (s = check_run(h, algo, wd, ws, ws_size)) != CUDNN_STATUS_SUCCESS) {
        return s;
    }
    if (!x || !w || !y || !z || !bias || !alpha1 || !alpha2 || !ad || !ad->set || !zd ||
        !zd->set || !bd || !bd->set || overlap(x, tbytes(xd), y, tbytes(yd))) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (zd->n != yd->n || zd->c != yd->c || zd->h != yd->h || zd->w != yd->w ||
        zd->dt != yd->dt || zd->fmt != yd->fmt || bd->n != 1 || bd->c != yd->c ||
        bd->h != 1 || bd->w != 1 || bd->dt != yd->dt) {
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (ad->mode != CUDNN_ACTIVATION_RELU && ad->mode != CUDNN_ACTIVATION_CLIPPED_RELU &&
        ad->mode != CUDNN_ACTIVATION_IDENTITY) {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (ad->mode == CUDNN_ACTIVATION_IDENTITY &&
        algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    if (reject_fused && !replaying) { /* a captured graph keeps its call */
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    float a1 = *(const float *)alpha1, a2 = *(const float *)alpha2;
    DNN_RECORD(.kind = DC_FUSED, .h = h, .a1 = a1, .a2 = a2, .xd = xd, .yd = yd, .zd = zd,
               .bd = bd, .wd = wd, .c = c, .ad = ad, .algo = (int)algo, .x = x, .w = w,
               .z = z, .bias = bias, .ws = ws, .y = y, .ws_size = ws_size);
    for (int n = 0; n < yd->n; n++)
        for (int k = 0; k < yd->c; k++)
            for (int oh = 0; oh < yd->h; oh++)
                for (int ow = 0; ow < yd->w; ow++) {
                    int64_t o = toff(yd, n, k, oh, ow);
                    double v = a1 * conv_at(c, xd, x, wd, w, n, k, oh, ow);
                    if (a2 != 0.0f) {
                        v += a2 * ld(z, zd->dt, toff(zd, n, k, oh, ow));
                    }
                    v += ld(bias, bd->dt, k);
                    if (ad->mode != CUDNN_ACTIVATION_IDENTITY && !isnan(v)) {
                        v = v > 0 ? v : 0;
                        if (ad->mode == CUDNN_ACTIVATION_CLIPPED_RELU && v > ad->coef) {
                            v = ad->coef;
                        }
                    }
                    st(y, yd->dt, o, v);
                }
    return CUDNN_STATUS_SUCCESS;
}

/* A recorded call, run by cudaGraphLaunch (the same function, not counted
 * and not recorded again). */
static void
dnn_call_run(void *arg)
{
    const dnn_call *k = arg;
    replaying = 1;
    if (k->kind == DC_FWD) {
        cudnnConvolutionForward(k->h, &k->a1, k->xd, k->x, k->wd, k->w, k->c,
                                (cudnnConvolutionFwdAlgo_t)k->algo, k->ws, k->ws_size,
                                &k->a2, k->yd, k->y);
    } else if (k->kind == DC_BWD) {
        cudnnConvolutionBackwardData(k->h, &k->a1, k->wd, k->w, k->yd, k->x, k->c,
                                     (cudnnConvolutionBwdDataAlgo_t)k->algo, k->ws,
                                     k->ws_size, &k->a2, k->xd, k->y);
    } else {
        cudnnConvolutionBiasActivationForward(
            k->h, &k->a1, k->xd, k->x, k->wd, k->w, k->c, (cudnnConvolutionFwdAlgo_t)k->algo,
            k->ws, k->ws_size, &k->a2, k->zd, k->z, k->bd, k->bias, k->ad, k->yd, k->y);
    }
    replaying = 0;
}
