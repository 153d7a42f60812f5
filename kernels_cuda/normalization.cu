/* normalization.cu -- CUDA kernels of batchNormalization,
 * instanceNormalization, layerNormalization, softmax, quantizeLinear and
 * dequantizeLinear, with the semantics of cpu/kernels/normalization/normalization.c and
 * cpu/kernels/quantize/quantize.c:
 *
 *   - statistics of a group: one pass in double precision, shifted by the
 *     group's first element (sums of d and d^2 with d = x - x0), population
 *     variance clamped at 0 (NaN stays NaN); the normalized value
 *     (x - mean) * rstd * scale + bias is computed in double and rounded
 *     once to float32 (then to float16 for float16 data, as the CPU);
 *   - softmax: the maximum of the group (NaN skipped, as the CPU's loop) is
 *     subtracted with its rounding error kept (TwoSum), exp is the CPU's
 *     float32 exp, the sum is in double and the result is e * (float)(1 /
 *     sum);
 *   - quantizeLinear: roundEven(x / scale) + zeroPoint in double, saturated
 *     to the output type, NaN -> 0; dequantizeLinear: (x - zeroPoint) *
 *     scale in double, rounded once to float32 or float16.
 * A group is reduced by a team of threads: one warp when it has at most
 * 1024 elements, else a block of 256; the sums are combined in a fixed
 * order, so results do not depend on timing. */
#include <math.h>

#include "ck_common.cuh"

namespace {

#define WARPS (CK_THREADS / 32)

/* Team sizes: a warp for small groups, the block for large ones (the CPU
 * emulation runs one thread per team). */
#ifdef CK_HOST_EMU
#define TEAM_SMALL 1
#define TEAM_BIG 1
#else
#define TEAM_SMALL 32
#define TEAM_BIG CK_THREADS
#endif

/* Sum over a team of TEAM threads (32: a warp; CK_THREADS: the block).
 * Every thread of the team gets the total.  `sh`: WARPS doubles of shared
 * memory (TEAM == CK_THREADS only). */
template <int TEAM>
__device__ __forceinline__ double
team_sum(double v, double *sh)
{
    if (TEAM == 1) {
        return v;
    }
    for (int o = 16; o > 0; o >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, o);
    }
    if (TEAM == 32) {
        return v;
    }
    if ((threadIdx.x & 31) == 0) {
        sh[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    double t = 0.0;
    for (int w = 0; w < WARPS; w++) {
        t += sh[w];
    }
    __syncthreads();
    return t;
}

/* Maximum over a team with the CPU's rule m = x > m ? x : m (values are
 * never NaN here: NaN inputs were skipped). */
template <int TEAM>
__device__ __forceinline__ float
team_max(float v, float *sh)
{
    if (TEAM == 1) {
        return v;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = w > v ? w : v;
    }
    if (TEAM == 32) {
        return v;
    }
    if ((threadIdx.x & 31) == 0) {
        sh[threadIdx.x >> 5] = v;
    }
    __syncthreads();
    float t = sh[0];
    for (int w = 1; w < WARPS; w++) {
        t = sh[w] > t ? sh[w] : t;
    }
    __syncthreads();
    return t;
}

/* ---- instance / layer normalization ---------------------------------------- */
__device__ __forceinline__ int64_t
group_base(const wnn_norm_params &p, int64_t g)
{
    uint32_t r = (uint32_t)g;
    int64_t off = 0;
    for (int d = (int)p.nk - 1; d >= 0; d--) {
        uint32_t q = r / (uint32_t)p.kext[d];
        off += (int64_t)(r - q * (uint32_t)p.kext[d]) * p.kst[d];
        r = q;
    }
    return off;
}

__device__ __forceinline__ int64_t
elem_off(const wnn_norm_params &p, int64_t j)
{
    uint32_t r = (uint32_t)j;
    int64_t off = 0;
    for (int d = (int)p.nr - 1; d >= 0; d--) {
        uint32_t q = r / (uint32_t)p.rext[d];
        off += (int64_t)(r - q * (uint32_t)p.rext[d]) * p.rst[d];
        r = q;
    }
    return off;
}

template <int TEAM>
__global__ void
k_norm(wnn_kernel_args k, wnn_norm_params p, const void *__restrict__ x, const void *__restrict__ scale,
       const void *__restrict__ bias, void *__restrict__ y)
{
    __shared__ double sh[2][WARPS];
    const int teams = (int)blockDim.x / TEAM;
    int team = threadIdx.x / TEAM, lane = threadIdx.x % TEAM;
    for (int64_t g0 = (int64_t)blockIdx.x * teams; g0 < p.G;
         g0 += (int64_t)gridDim.x * teams) {
        int64_t g = g0 + team;
        if (g >= p.G) { /* only for warp teams: whole warps skip */
            continue;
        }
        int64_t base = group_base(p, g);
        double k0 = ck_ldf(x, k.dt, base);
        double s1 = 0.0, s2 = 0.0;
        for (int64_t j = lane; j < p.S; j += TEAM) {
            double d = (double)ck_ldf(x, k.dt, base + elem_off(p, j)) - k0;
            s1 += d;
            s2 += d * d;
        }
        s1 = team_sum<TEAM>(s1, sh[0]);
        s2 = team_sum<TEAM>(s2, sh[1]);
        double m = s1 / (double)p.S;
        double v = s2 / (double)p.S - m * m;
        double mean = k0 + m;
        v = v < 0.0 ? 0.0 : v;
        double rstd = 1.0 / sqrt(v + k.eps);
        if (p.per_channel) {
            int64_t c = g % p.per_channel;
            double a = rstd * (scale ? (double)ck_ldf(scale, k.dt, c) : 1.0);
            double b = bias ? (double)ck_ldf(bias, k.dt, c) : 0.0;
            for (int64_t j = lane; j < p.S; j += TEAM) {
                int64_t off = base + elem_off(p, j);
                double xv = ck_ldf(x, k.dt, off);
                ck_stf(y, k.dt, off, (float)((xv - mean) * a + b));
            }
        } else {
            for (int64_t j = lane; j < p.S; j += TEAM) {
                int64_t off = base + elem_off(p, j);
                double xv = ck_ldf(x, k.dt, off), r;
                if (scale && bias) {
                    r = (xv - mean) * rstd * (double)ck_ldf(scale, k.dt, j) +
                        (double)ck_ldf(bias, k.dt, j);
                } else if (scale) {
                    r = (xv - mean) * rstd * (double)ck_ldf(scale, k.dt, j);
                } else if (bias) {
                    r = (xv - mean) * rstd + (double)ck_ldf(bias, k.dt, j);
                } else {
                    r = (xv - mean) * rstd + 0.0;
                }
                ck_stf(y, k.dt, off, (float)r);
            }
        }
    }
}

/* ---- batchNormalization ------------------------------------------------------ */
__global__ void
k_bn_coef(wnn_kernel_args k, wnn_axis_params p, const void *__restrict__ mean, const void *__restrict__ var,
          const void *__restrict__ scale, const void *__restrict__ bias,
          double *coef)
{
    const int64_t C = (int64_t)p.n;
    CK_LOOP(c, C)
    {
        coef[c] = ck_ldf(mean, k.dt, c);
        coef[C + c] = (scale ? (double)ck_ldf(scale, k.dt, c) : 1.0) /
                        sqrt((double)ck_ldf(var, k.dt, c) + k.eps);
        coef[2 * C + c] = bias ? (double)ck_ldf(bias, k.dt, c) : 0.0;
    }
}

__global__ void
k_bn_apply(wnn_kernel_args k, wnn_axis_params p, const void *__restrict__ x,
           const double *__restrict__ coef, void *__restrict__ y)
{
    const int64_t C = (int64_t)p.n, inner = (int64_t)p.inner;
    CK_LOOP(i, k.n)
    {
        int64_t c = (i / inner) % C;
        double xv = ck_ldf(x, k.dt, i);
        ck_stf(y, k.dt, i,
               (float)((xv - coef[c]) * coef[C + c] + coef[2 * C + c]));
    }
}

/* ---- softmax ---------------------------------------------------------------- */
__device__ __forceinline__ float
sm_exp(float x, float m)
{
    float lo, v = wnn_two_diff(x, m, &lo);
    float e = wnn_exp(v);
    return e + e * lo;
}

/* one team per group of C contiguous elements (inner == 1) */
template <int TEAM>
__global__ void
k_softmax_rows(wnn_kernel_args k, wnn_axis_params p, const void *__restrict__ x, void *__restrict__ y)
{
    const int64_t C = (int64_t)p.n, outer = (int64_t)p.outer;
    __shared__ double shd[WARPS];
    __shared__ float shf[WARPS];
    const int teams = (int)blockDim.x / TEAM;
    int team = threadIdx.x / TEAM, lane = threadIdx.x % TEAM;
    for (int64_t g0 = (int64_t)blockIdx.x * teams; g0 < outer;
         g0 += (int64_t)gridDim.x * teams) {
        int64_t g = g0 + team;
        if (g >= outer) {
            continue;
        }
        int64_t base = g * C;
        float m = -INFINITY;
        for (int64_t j = lane; j < C; j += TEAM) {
            float v = ck_ldf(x, k.dt, base + j);
            m = v > m ? v : m;
        }
        m = team_max<TEAM>(m, shf);
        double s = 0.0;
        for (int64_t j = lane; j < C; j += TEAM) {
            s += sm_exp(ck_ldf(x, k.dt, base + j), m);
        }
        s = team_sum<TEAM>(s, shd);
        float inv = (float)(1.0 / s);
        for (int64_t j = lane; j < C; j += TEAM) {
            ck_stf(y, k.dt, base + j, sm_exp(ck_ldf(x, k.dt, base + j), m) * inv);
        }
    }
}

/* one thread per column (inner > 1): groups are C elements inner apart */
__global__ void
k_softmax_cols(wnn_kernel_args k, wnn_axis_params p, const void *__restrict__ x, void *__restrict__ y)
{
    const int64_t C = (int64_t)p.n, outer = (int64_t)p.outer;
    const int64_t inner = (int64_t)p.inner;
    int64_t cols = outer * inner;
    CK_LOOP(t, cols)
    {
        int64_t o = t / inner, w = t - o * inner;
        int64_t base = o * C * inner + w;
        float m = -INFINITY;
        for (int64_t c = 0; c < C; c++) {
            float v = ck_ldf(x, k.dt, base + c * inner);
            m = v > m ? v : m;
        }
        double s = 0.0;
        for (int64_t c = 0; c < C; c++) {
            s += sm_exp(ck_ldf(x, k.dt, base + c * inner), m);
        }
        float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < C; c++) {
            int64_t off = base + c * inner;
            ck_stf(y, k.dt, off, sm_exp(ck_ldf(x, k.dt, off), m) * inv);
        }
    }
}

/* ---- quantizeLinear / dequantizeLinear --------------------------------------- */
__global__ void
k_quantize(wnn_kernel_args k, wnn_quant_params p, const void *__restrict__ x,
           const void *__restrict__ scale, const void *__restrict__ zero,
           void *__restrict__ y)
{
    CK_LOOP(i, k.n)
    {
        uint32_t r = (uint32_t)i;
        int64_t so = 0;
        for (int d = (int)p.rank - 1; d >= 0; d--) {
            uint32_t q = r / (uint32_t)p.shape[d];
            uint32_t idx = r - q * (uint32_t)p.shape[d];
            r = q;
            so += (int64_t)(idx / (uint32_t)p.block[d]) * (int64_t)p.sstride[d];
        }
        double s = wnn_load_num(scale, k.it, so), z = wnn_load_num(zero, k.zt, so);
        if (!(k.flags & WNN_KF_DEQUANT)) {
            double v = wnn_quantize_value((double)ck_ldf(x, k.dt, i), s, z);
            switch (k.to) {
            case WNN_KDT_U8:
                ((uint8_t *)y)[i] = (uint8_t)wnn_saturate(v, 0.0, 255.0);
                break;
            case WNN_KDT_I8:
                ((int8_t *)y)[i] = (int8_t)wnn_saturate(v, -128.0, 127.0);
                break;
            case WNN_KDT_U32:
                ((uint32_t *)y)[i] = (uint32_t)wnn_saturate(v, 0.0, 4294967295.0);
                break;
            default: /* int32 */
                ((int32_t *)y)[i] =
                    (int32_t)wnn_saturate(v, -2147483648.0, 2147483647.0);
                break;
            }
        } else {
            double v = wnn_dequantize_value(wnn_load_num(x, k.dt, i), z, s);
            if (k.to == WNN_KDT_F32) {
                ((float *)y)[i] = (float)v;
            } else {
                ((uint16_t *)y)[i] = wnn_f64_to_f16(v);
            }
        }
    }
}

inline unsigned
team_blocks(int64_t groups, int team)
{
    int64_t per_block = CK_THREADS / team;
    int64_t b = (groups + per_block - 1) / per_block;
    return b > 65536 ? 65536u : b < 1 ? 1u : (unsigned)b;
}

} // namespace

/* ---- launchers ------------------------------------------------------------ */
extern "C" cudaError_t
ck_norm(const wnn_kernel_args *k, const wnn_norm_params *p, const void *x,
        const void *scale, const void *bias, void *y, cudaStream_t s)
{
    if (p->S <= 1024) {
        CK_LAUNCH(k_norm<TEAM_SMALL>, team_blocks(p->G, TEAM_SMALL), CK_THREADS,
                  s, *k, *p, x, scale, bias, y);
    } else {
        CK_LAUNCH(k_norm<TEAM_BIG>, team_blocks(p->G, TEAM_BIG), CK_THREADS, s,
                  *k, *p, x, scale, bias, y);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_norm(const cu_launch_args *a)
{
    return ck_norm(a->k, &a->l->u.norm, a->in[0], cu_opt_in(a, a->x->scale),
                   cu_opt_in(a, a->x->bias), a->out[0], a->s);
}

extern "C" cudaError_t
ck_batch_norm(const wnn_kernel_args *k, const wnn_axis_params *p,
              const void *x, const void *mean, const void *var,
              const void *scale, const void *bias, void *y, double *coef,
              cudaStream_t s)
{
    CK_LAUNCH(k_bn_coef, ck_blocks((int64_t)p->n), CK_THREADS, s, *k, *p, mean,
              var, scale, bias, coef);
    CK_LAUNCH(k_bn_apply, ck_blocks(k->n), CK_THREADS, s, *k, *p, x, coef, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_batch_norm(const cu_launch_args *a)
{
    return ck_batch_norm(a->k, &a->l->u.axis, a->in[0], a->in[1], a->in[2],
                         cu_opt_in(a, a->x->scale), cu_opt_in(a, a->x->bias),
                         a->out[0], (double *)a->scratch, a->s);
}

extern "C" cudaError_t
ck_softmax(const wnn_kernel_args *k, const wnn_axis_params *p, const void *x,
           void *y, cudaStream_t s)
{
    int64_t outer = (int64_t)p->outer, inner = (int64_t)p->inner;
    if (inner > 1) {
        CK_LAUNCH(k_softmax_cols, ck_blocks(outer * inner), CK_THREADS, s, *k,
                  *p, x, y);
    } else if (p->n <= 1024) {
        CK_LAUNCH(k_softmax_rows<TEAM_SMALL>, team_blocks(outer, TEAM_SMALL),
                  CK_THREADS, s, *k, *p, x, y);
    } else {
        CK_LAUNCH(k_softmax_rows<TEAM_BIG>, team_blocks(outer, TEAM_BIG),
                  CK_THREADS, s, *k, *p, x, y);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_softmax(const cu_launch_args *a)
{
    return ck_softmax(a->k, &a->l->u.axis, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_quantize(const wnn_kernel_args *k, const wnn_quant_params *p, const void *x,
            const void *scale, const void *zero, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_quantize, ck_blocks(k->n), CK_THREADS, s, *k, *p, x, scale,
              zero, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_quantize(const cu_launch_args *a)
{
    return ck_quantize(a->k, &a->l->u.quant, a->in[0], a->in[1], a->in[2],
                       a->out[0], a->s);
}
