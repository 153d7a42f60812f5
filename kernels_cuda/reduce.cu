/* reduce.cu -- CUDA kernels of the reduction family (the ten reduce* ops,
 * argMin / argMax, cumulativeSum) and of pooling (averagePool2d, l2Pool2d,
 * maxPool2d), with the semantics of cpu/kernels/reduce/reduce.c and cpu/kernels/pool2d/pool2d.c:
 *
 *   - reduce*: float data (float16 widened exactly) accumulate in double,
 *     rounded once to the output type (float16 through a round-to-odd
 *     float32, so that the rounding is correct); integers in uint64
 *     (two's-complement wrap-around of sums, products, squares, abs of the
 *     most negative value), max / min comparing as signed or unsigned, the
 *     low bits stored; max / min propagate NaN; logSumExp is
 *     m + log(sum(exp(x - m))) with the CPU's double exp polynomial, m itself
 *     when m is not finite;
 *   - argMin / argMax: the first index of the extreme; NaN counts as better
 *     than every number (the first NaN wins);
 *   - cumulativeSum: running sums in double (floats) or wrapping uint64,
 *     exclusive / reversed;
 *   - pooling: only taps inside the input count (averagePool2d divides by
 *     the number of valid taps, 0 when there is none; maxPool2d gives -Inf /
 *     the type's smallest value for an empty window and propagates NaN);
 *     averagePool2d sums in float32, l2Pool2d in double.
 * A reduction / window is done by one thread, or by a block of 256 threads
 * (tree combination in a fixed order) when there are few long ones (global
 * pooling, whole-tensor reductions); summation orders differ from the CPU's,
 * so float sums agree to rounding, everything else exactly. */
#include <math.h>
#include <string.h>

#include "ck_common.cuh"

namespace {

#ifdef CK_HOST_EMU
#define RTEAM_BIG 1
#else
#define RTEAM_BIG CK_THREADS
#endif

enum { P_SUM, P_ABS, P_SQ, P_EXP, P_PROD, P_MAX, P_MIN };

__device__ __forceinline__ int
pass_of(int op)
{
    switch (op) {
    case CK_R_L1: return P_ABS;
    case CK_R_L2: case CK_R_SUM_SQUARE: return P_SQ;
    case CK_R_LOG_SUM_EXP: case CK_R_MAX: return P_MAX;
    case CK_R_MIN: return P_MIN;
    case CK_R_PRODUCT: return P_PROD;
    default: return P_SUM;
    }
}

__device__ __forceinline__ bool
is_unsigned(int t)
{
    return t == WNN_KDT_U8 || t == WNN_KDT_U32 || t == WNN_KDT_U64;
}

__device__ __forceinline__ void
store_d(void *y, int t, int64_t i, double v)
{
    if (t == WNN_KDT_F32) {
        ((float *)y)[i] = (float)v;
    } else {
        ((uint16_t *)y)[i] = wnn_f64_to_f16(v);
    }
}

/* ---- accumulation domains ---------------------------------------------------- */
__device__ __forceinline__ double
init_d(int p)
{
    switch (p) {
    case P_PROD: return 1.0;
    case P_MAX: return -INFINITY;
    case P_MIN: return INFINITY;
    default: return -0.0;
    }
}

__device__ __forceinline__ double
comb_d(int p, double a, double v)
{
    switch (p) {
    case P_PROD: return a * v;
    case P_MAX: return ((v > a) | (v != v)) ? v : a;
    case P_MIN: return ((v < a) | (v != v)) ? v : a;
    default: return a + v;
    }
}

__device__ __forceinline__ double
term_d(int p, double v, double shift)
{
    switch (p) {
    case P_ABS: return fabs(v);
    case P_SQ: return v * v;
    case P_EXP: return wnn_exp_nonpos(v - shift);
    default: return v;
    }
}

__device__ __forceinline__ uint64_t
init_u(int p, bool uns)
{
    switch (p) {
    case P_PROD: return 1;
    case P_MAX: return uns ? 0 : (uint64_t)INT64_MIN;
    case P_MIN: return uns ? UINT64_MAX : (uint64_t)INT64_MAX;
    default: return 0;
    }
}

__device__ __forceinline__ uint64_t
comb_u(int p, bool uns, uint64_t a, uint64_t v)
{
    switch (p) {
    case P_PROD: return a * v;
    case P_MAX: return (uns ? v > a : (int64_t)v > (int64_t)a) ? v : a;
    case P_MIN: return (uns ? v < a : (int64_t)v < (int64_t)a) ? v : a;
    default: return a + v;
    }
}

__device__ __forceinline__ uint64_t
term_u(int p, bool uns, uint64_t v)
{
    switch (p) {
    case P_ABS: return (!uns && (int64_t)v < 0) ? 0 - v : v;
    case P_SQ: return v * v;
    default: return v;
    }
}

__device__ __forceinline__ int64_t
group_base(const wnn_reduce_params &p, int64_t g)
{
    uint32_t r = (uint32_t)g;
    int64_t off = 0;
    for (int d = (int)p.nk - 1; d >= 0; d--) {
        uint32_t q = r / (uint32_t)p.kext[d];
        off += (int64_t)(r - q * (uint32_t)p.kext[d]) * (int64_t)p.kst[d];
        r = q;
    }
    return off;
}

__device__ __forceinline__ int64_t
elem_off(const wnn_reduce_params &p, int64_t j)
{
    uint32_t r = (uint32_t)j;
    int64_t off = 0;
    for (int d = (int)p.nr - 1; d >= 0; d--) {
        uint32_t q = r / (uint32_t)p.rext[d];
        off += (int64_t)(r - q * (uint32_t)p.rext[d]) * (int64_t)p.rst[d];
        r = q;
    }
    return off;
}

/* Tree combination over the block (TEAM == CK_THREADS) in a fixed order;
 * every thread gets the result.  TEAM == 1: the value itself. */
template <int TEAM, typename T, typename F>
__device__ __forceinline__ T
team_comb(T v, T *sh, F comb)
{
    if (TEAM == 1) {
        return v;
    }
    __syncthreads();
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int o = TEAM / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) {
            sh[threadIdx.x] = comb(sh[threadIdx.x], sh[threadIdx.x + o]);
        }
        __syncthreads();
    }
    T r = sh[0];
    __syncthreads();
    return r;
}

/* One group per TEAM threads: TEAM 1 (a thread per output) or the block. */
template <int TEAM>
__global__ void
k_reduce_f(wnn_kernel_args ka, wnn_reduce_params p, const void *__restrict__ x, void *__restrict__ y)
{
    const int64_t G = (int64_t)p.O, S = (int64_t)p.R;
    __shared__ double sh[TEAM];
    const int teams = (int)blockDim.x / TEAM;
    const int lane = (int)threadIdx.x % TEAM;
    const int pa = pass_of(ka.op);
    for (int64_t g0 = (int64_t)blockIdx.x * teams; g0 < G;
         g0 += (int64_t)gridDim.x * teams) {
        int64_t g = g0 + (int64_t)threadIdx.x / TEAM;
        bool live = g < G; /* TEAM == 1 only: no barrier below */
        if (TEAM == 1 && !live) {
            continue;
        }
        int64_t base = group_base(p, g);
        double a = init_d(pa);
        for (int64_t j = lane; j < S; j += TEAM) {
            a = comb_d(pa, a, term_d(pa, ck_ldf(x, ka.dt, base + elem_off(p, j)), 0.0));
        }
        a = team_comb<TEAM>(a, sh, [pa](double u, double v) { return comb_d(pa, u, v); });
        double v = a;
        if (ka.op == CK_R_LOG_SUM_EXP) {
            double m = a, shift = isfinite(m) ? m : 0.0, s = -0.0;
            for (int64_t j = lane; j < S; j += TEAM) {
                s += term_d(P_EXP, ck_ldf(x, ka.dt, base + elem_off(p, j)), shift);
            }
            s = team_comb<TEAM>(s, sh, [](double u, double w) { return u + w; });
            v = isfinite(m) ? m + log(s) : m;
        } else if (ka.op == CK_R_L2) {
            v = sqrt(a);
        } else if (ka.op == CK_R_LOG_SUM) {
            v = log(a);
        } else if (ka.op == CK_R_MEAN) {
            v = a / (double)S;
        }
        if (lane == 0) {
            store_d(y, ka.dt, g, v);
        }
    }
}

template <int TEAM>
__global__ void
k_reduce_i(wnn_kernel_args ka, wnn_reduce_params p, const void *__restrict__ x, void *__restrict__ y)
{
    const int64_t G = (int64_t)p.O, S = (int64_t)p.R;
    __shared__ uint64_t sh[TEAM];
    const int teams = (int)blockDim.x / TEAM;
    const int lane = (int)threadIdx.x % TEAM;
    const int pa = pass_of(ka.op);
    const bool uns = is_unsigned(ka.dt);
    for (int64_t g0 = (int64_t)blockIdx.x * teams; g0 < G;
         g0 += (int64_t)gridDim.x * teams) {
        int64_t g = g0 + (int64_t)threadIdx.x / TEAM;
        if (TEAM == 1 && g >= G) {
            continue;
        }
        int64_t base = group_base(p, g);
        uint64_t a = init_u(pa, uns);
        for (int64_t j = lane; j < S; j += TEAM) {
            uint64_t v = (uint64_t)ck_ldi(x, ka.dt, base + elem_off(p, j));
            a = comb_u(pa, uns, a, term_u(pa, uns, v));
        }
        a = team_comb<TEAM>(a, sh, [pa, uns](uint64_t u, uint64_t v) {
            return comb_u(pa, uns, u, v);
        });
        if (lane == 0) {
            ck_sti(y, ka.dt, g, (int64_t)a);
        }
    }
}

/* ---- argMin / argMax, cumulativeSum ------------------------------------------------ */
__global__ void
k_arg(wnn_kernel_args ka, wnn_axis_params p, const void *__restrict__ x,
      void *__restrict__ y)
{
    const int64_t outer = (int64_t)p.outer, n = (int64_t)p.n;
    const int64_t inner = (int64_t)p.inner;
    const bool is_max = ka.op != 0;
    const bool fl = ka.dt == WNN_KDT_F32 || ka.dt == WNN_KDT_F16;
    const bool uns = is_unsigned(ka.dt);
    CK_LOOP(o, outer * inner)
    {
        int64_t oo = o / inner, k = o - oo * inner;
        int64_t base = oo * n * inner + k;
        int64_t bi = 0;
        if (fl) {
            float bv = ck_ldf(x, ka.dt, base);
            for (int64_t j = 1; j < n; j++) {
                float v = ck_ldf(x, ka.dt, base + j * inner);
                bool u = is_max ? ((v > bv) | ((v != v) & (bv == bv)))
                                  : ((v < bv) | ((v != v) & (bv == bv)));
                if (u) {
                    bv = v;
                    bi = j;
                }
            }
        } else {
            uint64_t bv = (uint64_t)ck_ldi(x, ka.dt, base);
            for (int64_t j = 1; j < n; j++) {
                uint64_t v = (uint64_t)ck_ldi(x, ka.dt, base + j * inner);
                bool u = uns ? (is_max ? v > bv : v < bv)
                             : (is_max ? (int64_t)v > (int64_t)bv
                                         : (int64_t)v < (int64_t)bv);
                if (u) {
                    bv = v;
                    bi = j;
                }
            }
        }
        if (ka.to == WNN_KDT_I64) {
            ((int64_t *)y)[o] = bi;
        } else {
            ((int32_t *)y)[o] = (int32_t)bi;
        }
    }
}

__global__ void
k_cumsum(wnn_kernel_args ka, wnn_axis_params p, const void *__restrict__ x,
         void *__restrict__ y)
{
    const int64_t outer = (int64_t)p.outer, n = (int64_t)p.n;
    const int64_t inner = (int64_t)p.inner;
    const bool excl = (ka.flags & WNN_KF_EXCLUSIVE) != 0;
    const bool rev = (ka.flags & WNN_KF_REVERSED) != 0;
    const bool fl = ka.dt == WNN_KDT_F32 || ka.dt == WNN_KDT_F16;
    CK_LOOP(o, outer * inner)
    {
        int64_t oo = o / inner, k = o - oo * inner;
        int64_t base = oo * n * inner + k;
        double s = 0.0;
        uint64_t u = 0;
        for (int64_t q = 0; q < n; q++) {
            int64_t j = rev ? n - 1 - q : q;
            int64_t off = base + j * inner;
            if (fl) {
                double v = ck_ldf(x, ka.dt, off);
                if (excl) {
                    store_d(y, ka.dt, off, s);
                    s += v;
                } else {
                    s += v;
                    store_d(y, ka.dt, off, s);
                }
            } else {
                uint64_t v = (uint64_t)ck_ldi(x, ka.dt, off);
                if (excl) {
                    ck_sti(y, ka.dt, off, (int64_t)u);
                    u += v;
                } else {
                    u += v;
                    ck_sti(y, ka.dt, off, (int64_t)u);
                }
            }
        }
    }
}

/* ---- pooling ------------------------------------------------------------------ */
/* The valid taps [first, first + cnt) of window o along one dimension. */
__device__ __forceinline__ void
taps(int64_t o, int64_t st, int64_t pad, int64_t dil, int64_t k, int64_t size,
     int64_t *first, int64_t *cnt)
{
    int64_t s0 = o * st - pad; /* input index of tap 0 */
    int64_t lo = 0, hi = k;    /* taps t with 0 <= s0 + t * dil < size */
    if (s0 < 0) {
        lo = (-s0 + dil - 1) / dil;
    }
    if (s0 + (k - 1) * dil >= size) {
        hi = s0 >= size ? 0 : (size - 1 - s0) / dil + 1;
    }
    if (hi < lo) {
        hi = lo;
    }
    *first = lo;
    *cnt = hi - lo;
}

__device__ __forceinline__ void
pool_pos(const wnn_pool_params &p, int64_t i, int64_t *base, int64_t *cst,
         int64_t *oh, int64_t *ow)
{
    int64_t n, c;
    if (p.nhwc) {
        c = i % p.C;
        int64_t r = i / p.C;
        *ow = r % p.OW;
        r /= p.OW;
        *oh = r % p.OH;
        n = r / p.OH;
        *base = n * p.H * p.W * p.C + c;
        *cst = p.C;
    } else {
        *ow = i % p.OW;
        int64_t r = i / p.OW;
        *oh = r % p.OH;
        r /= p.OH;
        c = r % p.C;
        n = r / p.C;
        *base = (n * p.C + c) * p.H * p.W;
        *cst = 1;
    }
}

__device__ __forceinline__ int64_t
int_min_of(int t)
{
    switch (t) {
    case WNN_KDT_I8: return -128;
    case WNN_KDT_I32: return INT32_MIN;
    case WNN_KDT_I64: return INT64_MIN;
    default: return 0;
    }
}

/* One output per TEAM threads (TEAM > 1: float data only). */
template <int TEAM>
__global__ void
k_pool_f(wnn_kernel_args ka, wnn_pool_params p, const void *__restrict__ x, void *__restrict__ y)
{
    __shared__ double sh[TEAM];
    const int teams = (int)blockDim.x / TEAM;
    const int lane = (int)threadIdx.x % TEAM;
    for (int64_t i0 = (int64_t)blockIdx.x * teams; i0 < ka.n;
         i0 += (int64_t)gridDim.x * teams) {
        int64_t i = i0 + (int64_t)threadIdx.x / TEAM;
        if (TEAM == 1 && i >= ka.n) {
            continue;
        }
        int64_t base, cst, oh, ow, fh, nh, fw, nw;
        pool_pos(p, i, &base, &cst, &oh, &ow);
        taps(oh, p.sh, p.pad[0], p.dh, p.kh, p.H, &fh, &nh);
        taps(ow, p.sw, p.pad[2], p.dw, p.kw, p.W, &fw, &nw);
        int64_t cnt = nh * nw;
        int64_t ih0 = oh * p.sh - p.pad[0] + fh * p.dh;
        int64_t iw0 = ow * p.sw - p.pad[2] + fw * p.dw;
        float r;
        if (ka.op == WNN_KPOOL_MAX) {
            float a = -INFINITY;
            for (int64_t t = lane; t < cnt; t += TEAM) {
                int64_t th = t / nw, tw = t - th * nw;
                float v = ck_ldf(x, ka.dt, base + ((ih0 + th * p.dh) * p.W +
                                                  iw0 + tw * p.dw) * cst);
                a = ((v > a) | (v != v)) ? v : a;
            }
            double ad = team_comb<TEAM>((double)a, sh, [](double u, double v) {
                return ((v > u) | (v != v)) ? v : u;
            });
            r = (float)ad;
        } else if (ka.op == WNN_KPOOL_AVG) {
            float a = 0.0f;
            for (int64_t t = lane; t < cnt; t += TEAM) {
                int64_t th = t / nw, tw = t - th * nw;
                a = a + ck_ldf(x, ka.dt, base + ((ih0 + th * p.dh) * p.W +
                                                iw0 + tw * p.dw) * cst);
            }
            if (TEAM > 1) {
                /* partial sums in double, rounded once to float32 */
                a = (float)team_comb<TEAM>((double)a, sh, [](double u, double v) {
                    return u + v;
                });
            }
            r = cnt != 0 ? a / (float)cnt : 0.0f;
        } else {
            double a = 0.0;
            for (int64_t t = lane; t < cnt; t += TEAM) {
                int64_t th = t / nw, tw = t - th * nw;
                double v = ck_ldf(x, ka.dt, base + ((ih0 + th * p.dh) * p.W +
                                                   iw0 + tw * p.dw) * cst);
                a = a + v * v;
            }
            a = team_comb<TEAM>(a, sh, [](double u, double v) { return u + v; });
            r = (float)sqrt(a);
        }
        if (lane == 0) {
            ck_stf(y, ka.dt, i, r);
        }
    }
}

__global__ void
k_pool_max_i(wnn_kernel_args ka, wnn_pool_params p, const void *__restrict__ x, void *__restrict__ y)
{
    const bool uns = is_unsigned(ka.dt);
    CK_LOOP(i, ka.n)
    {
        int64_t base, cst, oh, ow, fh, nh, fw, nw;
        pool_pos(p, i, &base, &cst, &oh, &ow);
        taps(oh, p.sh, p.pad[0], p.dh, p.kh, p.H, &fh, &nh);
        taps(ow, p.sw, p.pad[2], p.dw, p.kw, p.W, &fw, &nw);
        int64_t ih0 = oh * p.sh - p.pad[0] + fh * p.dh;
        int64_t iw0 = ow * p.sw - p.pad[2] + fw * p.dw;
        uint64_t a = uns ? 0 : (uint64_t)int_min_of(ka.dt);
        for (int64_t th = 0; th < nh; th++) {
            for (int64_t tw = 0; tw < nw; tw++) {
                uint64_t v = (uint64_t)ck_ldi(x, ka.dt, base + ((ih0 + th * p.dh) * p.W +
                                                               iw0 + tw * p.dw) * cst);
                bool u = uns ? v > a : (int64_t)v > (int64_t)a;
                a = u ? v : a;
            }
        }
        ck_sti(y, ka.dt, i, (int64_t)a);
    }
}

unsigned
team_blocks(int64_t groups, int team)
{
    int64_t per_block = CK_THREADS / team;
    int64_t b = (groups + per_block - 1) / per_block;
    return b > 65536 ? 65536u : b < 1 ? 1u : (unsigned)b;
}

/* A block per group when there are few long groups. */
bool
use_block(int64_t groups, int64_t len)
{
    return len >= 512 && groups < 8192;
}

} // namespace

/* ---- launchers ------------------------------------------------------------ */
extern "C" cudaError_t
ck_reduce(const wnn_kernel_args *k, const wnn_reduce_params *p, const void *x,
          void *y, cudaStream_t s)
{
    bool fl = k->dt == WNN_KDT_F32 || k->dt == WNN_KDT_F16;
    int64_t G = (int64_t)p->O;
    if (use_block(G, (int64_t)p->R)) {
        if (fl) {
            CK_LAUNCH(k_reduce_f<RTEAM_BIG>, team_blocks(G, RTEAM_BIG),
                      CK_THREADS, s, *k, *p, x, y);
        } else {
            CK_LAUNCH(k_reduce_i<RTEAM_BIG>, team_blocks(G, RTEAM_BIG),
                      CK_THREADS, s, *k, *p, x, y);
        }
    } else if (fl) {
        CK_LAUNCH(k_reduce_f<1>, team_blocks(G, 1), CK_THREADS, s, *k, *p, x, y);
    } else {
        CK_LAUNCH(k_reduce_i<1>, team_blocks(G, 1), CK_THREADS, s, *k, *p, x, y);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_reduce(const cu_launch_args *a)
{
    return ck_reduce(a->k, &a->l->u.reduce, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_arg_min_max(const wnn_kernel_args *k, const wnn_axis_params *p,
               const void *x, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_arg, ck_blocks((int64_t)(p->outer * p->inner)), CK_THREADS, s,
              *k, *p, x, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_arg_min_max(const cu_launch_args *a)
{
    return ck_arg_min_max(a->k, &a->l->u.axis, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_cumulative_sum(const wnn_kernel_args *k, const wnn_axis_params *p,
                  const void *x, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_cumsum, ck_blocks((int64_t)(p->outer * p->inner)), CK_THREADS,
              s, *k, *p, x, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_cumulative_sum(const cu_launch_args *a)
{
    return ck_cumulative_sum(a->k, &a->l->u.axis, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_pool2d(const wnn_kernel_args *k, const wnn_pool_params *p, const void *x,
          void *y, cudaStream_t s)
{
    bool fl = k->dt == WNN_KDT_F32 || k->dt == WNN_KDT_F16;
    if (!fl) {
        CK_LAUNCH(k_pool_max_i, ck_blocks(k->n), CK_THREADS, s, *k, *p, x, y);
    } else if (use_block(k->n, p->kh * p->kw)) {
        CK_LAUNCH(k_pool_f<RTEAM_BIG>, team_blocks(k->n, RTEAM_BIG), CK_THREADS,
                  s, *k, *p, x, y);
    } else {
        CK_LAUNCH(k_pool_f<1>, team_blocks(k->n, 1), CK_THREADS, s, *k, *p, x,
                  y);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_pool2d(const cu_launch_args *a)
{
    return ck_pool2d(a->k, &a->l->u.pool, a->in[0], a->out[0], a->s);
}
