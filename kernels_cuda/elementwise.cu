/* elementwise.cu -- CUDA kernels of the element-wise operators: unary (and
 * logicalNot, isNaN, isInfinite, the activations, clamp), binary with
 * broadcasting (arithmetic, comparisons, logical and/or/xor, prelu), where
 * and cast.  The semantics are those of cpu/kernels/elementwise/elementwise.c:
 *
 *   - three computation domains: float32 (float32 and float16, whose values
 *     are widened exactly and rounded back to nearest even), int64 (int8
 *     uint8 int32 uint32 int64) and uint64; integer results are stored with
 *     two's-complement wrap-around;
 *   - div: truncation toward zero, x / 0 = 0, INT_MIN / -1 wraps;
 *   - pow on integers: wrap-around; a negative exponent gives 1 / x
 *     truncated (0 unless |x| == 1, and 0 ** negative = 0);
 *   - max / min propagate NaN from either side (as numpy.maximum), relu
 *     keeps NaN, sign(NaN) = 0;
 *   - cast float -> integer truncates toward zero and saturates, NaN -> 0;
 *     integer -> integer keeps the low bits; integer -> float16 rounds to
 *     float32 first (as the CPU).
 * exp and sigmoid use a Cephes float32 exp (wnn_exp, wnn_numerics.h) and sigmoid the CPU's
 * formula (within 2 ulp of the CPU's vmath.h, which contracts to FMA); the
 * other transcendental functions are CUDA's (within a few ulp of glibc's). */
#include <math.h>

#include "ck_common.cuh"

namespace {

enum { DM_F32, DM_I64, DM_U64 };

inline int
domain_of(int t)
{
    if (t == WNN_KDT_F32 || t == WNN_KDT_F16) {
        return DM_F32;
    }
    return t == WNN_KDT_U64 ? DM_U64 : DM_I64;
}

/* ---- unary ------------------------------------------------------------- */
__device__ __forceinline__ float
unary_f(int op, float x, const wnn_scalar_params &p)
{
    float a = p.a, b = p.b;
    switch (op) {
    case CK_U_ABS: return fabsf(x);
    case CK_U_CEIL: return ceilf(x);
    case CK_U_COS: return cosf(x);
    case CK_U_ERF: return erff(x);
    case CK_U_EXP: return wnn_exp(x);
    case CK_U_FLOOR: return floorf(x);
    case CK_U_LOG: return logf(x);
    case CK_U_NEG: return -x;
    case CK_U_RECIPROCAL: return 1.0f / x;
    case CK_U_ROUND_EVEN: return rintf(x);
    case CK_U_SIN: return sinf(x);
    case CK_U_SIGN: return x > 0 ? 1.0f : x < 0 ? -1.0f : 0.0f;
    case CK_U_SQRT: return sqrtf(x);
    case CK_U_TAN: return tanf(x);
    case CK_U_CLAMP: {
        float v = x < p.lo ? p.lo : x;
        return v > p.hi ? p.hi : v; /* NaN stays NaN */
    }
    case CK_U_ELU: return x > 0 ? x : a * expm1f(x);
    case CK_U_GELU: {
        /* the CPU's split (vmath.h vm_gelu): erfc where |x / sqrt 2| >= 1,
         * so x << 0 keeps its relative accuracy (1 + erf cancels there) */
        float z = x * 0.70710678118654752f, az = fabsf(z);
        if (az < 1.0f) {
            return 0.5f * x * (1.0f + erff(z));
        }
        /* erfc in double from x itself: the rounding of z (2 a^2 times
         * its relative error in erfc's result) must not reach it */
        float e = (float)erfc(fabs((double)x * 0.70710678118654752440));
        return z > 0.0f ? x * (1.0f - 0.5f * e) : 0.5f * x * e;
    }
    case CK_U_HARD_SIGMOID: {
        float v = a * x + b;
        return v < 0 ? 0 : v > 1 ? 1 : v;
    }
    case CK_U_HARD_SWISH: {
        float v = x + 3.0f;
        v = v < 0 ? 0 : v > 6 ? 6 : v;
        return x * v / 6.0f;
    }
    case CK_U_LEAKY_RELU: return x >= 0 ? x : a * x;
    case CK_U_LINEAR: return a * x + b;
    case CK_U_RELU: return (x > 0 || x != x) ? x : 0.0f;
    case CK_U_SIGMOID: {
        /* the CPU's formula (vmath.h vm_sigmoid): e = exp(-|x|) never
         * overflows, and x << 0 gives e / (1 + e) down to the subnormals */
        float e = wnn_exp(-fabsf(x));
        float s = 1.0f / (1.0f + e);
        return x >= 0.0f ? s : e * s;
    }
    case CK_U_SOFTPLUS: return x > 0 ? x + log1pf(expf(-x)) : log1pf(expf(x));
    case CK_U_SOFTSIGN: return x / (1.0f + fabsf(x));
    case CK_U_TANH: return tanhf(x);
    default: return x;
    }
}

__device__ __forceinline__ int64_t
unary_i(int op, int64_t x, const wnn_scalar_params &p)
{
    switch (op) {
    case CK_U_ABS: return x < 0 ? (int64_t)(0 - (uint64_t)x) : x;
    case CK_U_NEG: return (int64_t)(0 - (uint64_t)x);
    case CK_U_SIGN: return (x > 0) - (x < 0);
    case CK_U_RELU: return x > 0 ? x : 0;
    case CK_U_CLAMP: {
        int64_t v = x < p.ilo ? p.ilo : x;
        return v > p.ihi ? p.ihi : v;
    }
    default: return x;
    }
}

__device__ __forceinline__ uint64_t
unary_u(int op, uint64_t x, const wnn_scalar_params &p)
{
    if (op == CK_U_CLAMP) {
        uint64_t v = x < p.ulo ? p.ulo : x;
        return v > p.uhi ? p.uhi : v;
    }
    return x;
}

template <int DM>
__global__ void
k_unary(wnn_kernel_args k, const void *__restrict__ x, void *__restrict__ y)
{
    const wnn_scalar_params &p = k.sp;
    CK_LOOP(i, k.n)
    {
        if (k.op == CK_U_LOGICAL_NOT) {
            ((uint8_t *)y)[i] = ((const uint8_t *)x)[i] == 0;
        } else if (DM == DM_F32) {
            float v = ck_ldf(x, k.dt, i);
            if (k.op == CK_U_IS_NAN) {
                ((uint8_t *)y)[i] = isnan(v) != 0;
            } else if (k.op == CK_U_IS_INFINITE) {
                ((uint8_t *)y)[i] = isinf(v) != 0;
            } else {
                ck_stf(y, k.to, i, unary_f(k.op, v, p));
            }
        } else if (DM == DM_I64) {
            ck_sti(y, k.to, i, unary_i(k.op, ck_ldi(x, k.dt, i), p));
        } else {
            ((uint64_t *)y)[i] = unary_u(k.op, ((const uint64_t *)x)[i], p);
        }
    }
}

/* ---- binary ------------------------------------------------------------ */
__device__ __forceinline__ float
binary_f(int op, float x, float z)
{
    switch (op) {
    case CK_B_ADD: return x + z;
    case CK_B_SUB: return x - z;
    case CK_B_MUL: return x * z;
    case CK_B_DIV: return x / z;
    case CK_B_MAX: return (x != x || x > z) ? x : z;
    case CK_B_MIN: return (x != x || x < z) ? x : z;
    /* x ** 2 is x * x rounded once, as on the CPU (003b706: RMSNorm's
     * square): CUDA's powf is within 2 ulps, not correctly rounded */
    case CK_B_POW: return z == 2.0f ? x * x : powf(x, z);
    case CK_B_PRELU: return x >= 0 ? x : x * z;
    default: return 0.0f;
    }
}

__device__ __forceinline__ uint8_t
compare_f(int op, float x, float z)
{
    switch (op) {
    case CK_B_EQ: return x == z;
    case CK_B_NE: return x != z;
    case CK_B_GT: return x > z;
    case CK_B_GE: return x >= z;
    case CK_B_LT: return x < z;
    case CK_B_LE: return x <= z;
    default: return 0;
    }
}

__device__ __forceinline__ int64_t
binary_i(int op, int64_t x, int64_t z)
{
    switch (op) {
    case CK_B_ADD: return (int64_t)((uint64_t)x + (uint64_t)z);
    case CK_B_SUB: return (int64_t)((uint64_t)x - (uint64_t)z);
    case CK_B_MUL: return (int64_t)((uint64_t)x * (uint64_t)z);
    case CK_B_DIV:
        return z == 0 ? 0 : (z == -1) ? (int64_t)(0 - (uint64_t)x) : x / z;
    case CK_B_MAX: return x > z ? x : z;
    case CK_B_MIN: return x < z ? x : z;
    case CK_B_POW: return wnn_ipow(x, z);
    case CK_B_PRELU: return x >= 0 ? x : (int64_t)((uint64_t)x * (uint64_t)z);
    case CK_B_EQ: return x == z;
    case CK_B_NE: return x != z;
    case CK_B_GT: return x > z;
    case CK_B_GE: return x >= z;
    case CK_B_LT: return x < z;
    case CK_B_LE: return x <= z;
    case CK_B_AND: return (x != 0) && (z != 0);
    case CK_B_OR: return (x != 0) || (z != 0);
    default: return (x != 0) != (z != 0); /* xor */
    }
}

__device__ __forceinline__ uint64_t
binary_u(int op, uint64_t x, uint64_t z)
{
    switch (op) {
    case CK_B_ADD: return x + z;
    case CK_B_SUB: return x - z;
    case CK_B_MUL: return x * z;
    case CK_B_DIV: return z == 0 ? 0 : x / z;
    case CK_B_MAX: return x > z ? x : z;
    case CK_B_MIN: return x < z ? x : z;
    case CK_B_POW: return wnn_upow(x, z);
    case CK_B_PRELU: return x;
    case CK_B_EQ: return x == z;
    case CK_B_NE: return x != z;
    case CK_B_GT: return x > z;
    case CK_B_GE: return x >= z;
    case CK_B_LT: return x < z;
    case CK_B_LE: return x <= z;
    case CK_B_AND: return x && z;
    case CK_B_OR: return x || z;
    default: return (x != 0) != (z != 0);
    }
}

template <int DM>
__global__ void
k_binary(wnn_kernel_args p, wnn_broadcast_params it,
         const void *__restrict__ a, const void *__restrict__ b,
         void *__restrict__ y)
{
    bool cmp = p.op >= CK_B_EQ;
    CK_LOOP(i, p.n)
    {
        int64_t off[3];
        ck_bcast_offsets(it, 2, i, off);
        if (DM == DM_F32) {
            float x = ck_ldf(a, p.dt, off[0]), z = ck_ldf(b, p.dt, off[1]);
            if (cmp) {
                ((uint8_t *)y)[i] = compare_f(p.op, x, z);
            } else {
                ck_stf(y, p.to, i, binary_f(p.op, x, z));
            }
        } else if (DM == DM_I64) {
            int64_t x = ck_ldi(a, p.dt, off[0]), z = ck_ldi(b, p.dt, off[1]);
            ck_sti(y, p.to, i, binary_i(p.op, x, z));
        } else {
            uint64_t x = ((const uint64_t *)a)[off[0]];
            uint64_t z = ((const uint64_t *)b)[off[1]];
            uint64_t v = binary_u(p.op, x, z);
            if (p.to == WNN_KDT_U8) {
                ((uint8_t *)y)[i] = (uint8_t)v;
            } else {
                ((uint64_t *)y)[i] = v;
            }
        }
    }
}

/* float32 add / sub / mul / div of two same-shape operands: the hot case */
template <int OP>
__global__ void
k_binary_f32_flat(int64_t n, const float *__restrict__ a,
                  const float *__restrict__ b, float *__restrict__ y)
{
    CK_LOOP(i, n)
    {
        y[i] = binary_f(OP, a[i], b[i]);
    }
}

/* the same, four elements at a time (16-byte aligned operands) */
template <int OP>
__global__ void
k_binary_f32_flat4(int64_t n4, const float4 *__restrict__ a,
                   const float4 *__restrict__ b, float4 *__restrict__ y)
{
    CK_LOOP(i, n4)
    {
        float4 x = a[i], z = b[i], r;
        r.x = binary_f(OP, x.x, z.x);
        r.y = binary_f(OP, x.y, z.y);
        r.z = binary_f(OP, x.z, z.z);
        r.w = binary_f(OP, x.w, z.w);
        y[i] = r;
    }
}

template <int OP>
cudaError_t
binary_f32_flat(int64_t n, const float *a, const float *b, float *y,
                cudaStream_t s)
{
    int64_t n4 = 0;
    if ((((uintptr_t)a | (uintptr_t)b | (uintptr_t)y) & 15) == 0) {
        n4 = n / 4;
        if (n4) {
            CK_LAUNCH(k_binary_f32_flat4<OP>, ck_blocks(n4), CK_THREADS, s, n4,
                      (const float4 *)a, (const float4 *)b, (float4 *)y);
        }
    }
    int64_t done = 4 * n4;
    if (done < n) {
        CK_LAUNCH(k_binary_f32_flat<OP>, ck_blocks(n - done), CK_THREADS, s,
                  n - done, a + done, b + done, y + done);
    }
    return cudaGetLastError();
}

/* ---- where ------------------------------------------------------------- */
template <typename T>
__global__ void
k_where(int64_t n, wnn_broadcast_params it, const uint8_t *__restrict__ c,
        const T *__restrict__ t, const T *__restrict__ f, T *__restrict__ y)
{
    CK_LOOP(i, n)
    {
        int64_t off[3];
        ck_bcast_offsets(it, 3, i, off);
        y[i] = c[off[0]] ? t[off[1]] : f[off[2]];
    }
}

/* ---- cast ---------------------------------------------------------------- */
/* float -> integer: wnn_f32_to_int_sat / wnn_f32_to_u64_sat (wnn_numerics.h) */
__global__ void
k_cast(int ti, int to, int64_t n, const void *__restrict__ x,
       void *__restrict__ y)
{
    bool fin = ti == WNN_KDT_F32 || ti == WNN_KDT_F16;
    bool fout = to == WNN_KDT_F32 || to == WNN_KDT_F16;
    CK_LOOP(i, n)
    {
        if (fin) {
            float v = ck_ldf(x, ti, i);
            if (fout) {
                ck_stf(y, to, i, v);
            } else if (to == WNN_KDT_U64) {
                ((uint64_t *)y)[i] = wnn_f32_to_u64_sat(v);
            } else {
                ck_sti(y, to, i, wnn_f32_to_int_sat(v, to));
            }
        } else {
            int64_t v = ck_ldi(x, ti, i);
            if (fout) {
                float f = ti == WNN_KDT_U64 ? (float)(uint64_t)v : (float)v;
                ck_stf(y, to, i, f);
            } else {
                ck_sti(y, to, i, v);
            }
        }
    }
}

} // namespace

/* ---- launchers ------------------------------------------------------------ */
extern "C" cudaError_t
ck_unary(const wnn_kernel_args *p, const void *x, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    int dm = p->op == CK_U_LOGICAL_NOT ? DM_I64 : domain_of(p->dt);
    switch (dm) {
    case DM_F32: CK_LAUNCH(k_unary<DM_F32>, nb, CK_THREADS, s, *p, x, y); break;
    case DM_I64: CK_LAUNCH(k_unary<DM_I64>, nb, CK_THREADS, s, *p, x, y); break;
    default: CK_LAUNCH(k_unary<DM_U64>, nb, CK_THREADS, s, *p, x, y); break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_unary(const cu_launch_args *a)
{
    return ck_unary(a->k, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_binary(const wnn_kernel_args *p, const wnn_broadcast_params *bp,
          const void *a, const void *b, void *y, cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    const wnn_broadcast_params &it = *bp;
    bool flat = it.rank == 1 && it.st[0][0] == 1 && it.st[1][0] == 1;
    if (flat && p->dt == WNN_KDT_F32 && p->to == WNN_KDT_F32) {
        const float *fa = (const float *)a, *fb = (const float *)b;
        float *fy = (float *)y;
        switch (p->op) {
        case CK_B_ADD: return binary_f32_flat<CK_B_ADD>(p->n, fa, fb, fy, s);
        case CK_B_SUB: return binary_f32_flat<CK_B_SUB>(p->n, fa, fb, fy, s);
        case CK_B_MUL: return binary_f32_flat<CK_B_MUL>(p->n, fa, fb, fy, s);
        case CK_B_DIV: return binary_f32_flat<CK_B_DIV>(p->n, fa, fb, fy, s);
        default: break;
        }
    }
    switch (domain_of(p->dt)) {
    case DM_F32: CK_LAUNCH(k_binary<DM_F32>, nb, CK_THREADS, s, *p, it, a, b, y); break;
    case DM_I64: CK_LAUNCH(k_binary<DM_I64>, nb, CK_THREADS, s, *p, it, a, b, y); break;
    default: CK_LAUNCH(k_binary<DM_U64>, nb, CK_THREADS, s, *p, it, a, b, y); break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_binary(const cu_launch_args *a)
{
    return ck_binary(a->k, &a->l->u.bcast, a->in[0], a->in[1], a->out[0], a->s);
}

/* ---- fused epilogue ------------------------------------------------------ */
__device__ __forceinline__ float
epi_round(int dt, float v)
{
    /* float16: the value a float16 node would have stored */
    return dt == WNN_KDT_F16 ? ck_h2f(ck_f2h(v)) : v;
}

__global__ void
k_epilogue(wnn_epi_params p, const void *__restrict__ b1, const void *__restrict__ z,
           void *__restrict__ y)
{
    CK_LOOP(i, p.n)
    {
        float v = ck_ldf(y, p.dt, i);
        int64_t c = (i / p.inner) % p.C;
        if (p.bias) {
            v = epi_round(p.dt, v + ck_ldf(b1, p.dt, c));
        }
        if (p.add == 1) {
            v = epi_round(p.dt, v + ck_ldf(z, p.dt, i));
        } else if (p.add == 2) {
            v = epi_round(p.dt, v + ck_ldf(z, p.dt, c));
        }
        if (p.act >= 0) {
            v = unary_f(p.act, v, p.sp);
        }
        ck_stf(y, p.dt, i, v);
    }
}

extern "C" cudaError_t
ck_where(const wnn_kernel_args *p, const wnn_broadcast_params *it,
         const void *cond, const void *t, const void *f, void *y,
         cudaStream_t s)
{
    unsigned nb = ck_blocks(p->n);
    const uint8_t *c = (const uint8_t *)cond;
    switch (p->es) {
    case 1: CK_LAUNCH(k_where<uint8_t>, nb, CK_THREADS, s, p->n, *it, c, (const uint8_t *)t, (const uint8_t *)f, (uint8_t *)y); break;
    case 2: CK_LAUNCH(k_where<uint16_t>, nb, CK_THREADS, s, p->n, *it, c, (const uint16_t *)t, (const uint16_t *)f, (uint16_t *)y); break;
    case 4: CK_LAUNCH(k_where<uint32_t>, nb, CK_THREADS, s, p->n, *it, c, (const uint32_t *)t, (const uint32_t *)f, (uint32_t *)y); break;
    default: CK_LAUNCH(k_where<uint64_t>, nb, CK_THREADS, s, p->n, *it, c, (const uint64_t *)t, (const uint64_t *)f, (uint64_t *)y); break;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_run_where(const cu_launch_args *a)
{
    return ck_where(a->k, &a->l->u.bcast, a->in[0], a->in[1], a->in[2], a->out[0],
                    a->s);
}

extern "C" cudaError_t
ck_epilogue(const wnn_epi_params *p, const void *b1, const void *addend, void *y,
            cudaStream_t s)
{
    if (p->n == 0) {
        return cudaSuccess;
    }
    CK_LAUNCH(k_epilogue, ck_blocks(p->n), CK_THREADS, s, *p, b1, addend, y);
    return cudaGetLastError();
}

extern "C" cudaError_t
ck_cast(int ti, int to, int64_t n, const void *x, void *y, cudaStream_t s)
{
    CK_LAUNCH(k_cast, ck_blocks(n), CK_THREADS, s, ti, to, n, x, y);
    return cudaGetLastError();
}

/* cast to the same type: a copy */
extern "C" cudaError_t
ck_run_cast(const cu_launch_args *a)
{
    const wnn_kernel_args *k = a->k;
    if (k->dt == k->to) {
        return cudaMemcpyAsync(a->out[0], a->in[0], (size_t)k->n * (size_t)k->es,
                               cudaMemcpyDeviceToDevice, a->s);
    }
    return ck_cast(k->dt, k->to, k->n, a->in[0], a->out[0], a->s);
}

extern "C" cudaError_t
ck_probe(void)
{
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, (const void *)k_cast);
}
