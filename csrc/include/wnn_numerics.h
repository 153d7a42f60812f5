/* wnn_numerics.h -- the scalar numerics the CPU kernels (csrc/cpu/) and the
 * CUDA kernels (the .cu files of kernels_cuda/) share, defined once: static inline
 * functions, __host__ __device__ under nvcc, so that both sides compute the
 * same operations in the same order and get the same bits.
 *
 * The CPU's vectorised loops call these where GCC vectorises them as they
 * are (inlined, no calls left: the activation loops of the recurrent
 * kernels, the quantize loops); where a SIMD twin of a formula exists (the
 * AVX-512 / AVX2 intrinsics, vmath.h's vectorisable functions, quantize.c's
 * QFAST min / max form) it computes the same double / float operations and
 * the scalar paths call the function here.  CUDA builds with -fmad=false
 * (no contraction into FMA) and without fast-math, GCC in ISO C mode does
 * not contract either, so the float32 roundings agree.
 *
 * Data types are the kernel ABI's numbering (wnn_kernel_abi.h, = wnn_dtype).
 * The float16 conversions here are the core's (wnn_f16_to_f32 /
 * wnn_f32_to_f16 call them).
 * Plain C and C++ (the CUDA emulation compiles the .cu files as C++). */
#ifndef WNN_NUMERICS_H
#define WNN_NUMERICS_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "wnn_kernel_abi.h"

#ifdef __CUDACC__
#include <cuda_fp16.h>
#endif

#ifdef __CUDACC__
#define WNN_HD static inline __host__ __device__
#elif defined(__GNUC__)
#define WNN_HD static inline __attribute__((always_inline))
#else
#define WNN_HD static inline
#endif

/* ---- bits ---------------------------------------------------------------- */
WNN_HD float
wnn_f32_from_bits(int32_t b)
{
#ifdef __CUDA_ARCH__
    return __int_as_float(b);
#else
    float f;
    memcpy(&f, &b, 4);
    return f;
#endif
}

WNN_HD uint32_t
wnn_f32_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
#endif
}

/* ---- float16 ------------------------------------------------------------- */
/* IEEE binary16 <-> binary32, round to nearest even (the device's own
 * instructions on a GPU: the same values, the conversion being exact one
 * way and correctly rounded the other; a NaN stays a NaN) */
WNN_HD float
wnn_half_to_float(uint16_t h)
{
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                man <<= 1;
            } while ((man & 0x400) == 0);
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) |
                   ((man & 0x3ff) << 13);
        }
    } else if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    return wnn_f32_from_bits((int32_t)bits);
#endif
}

WNN_HD uint16_t
wnn_float_to_half(float f)
{
#ifdef __CUDA_ARCH__
    return __half_as_ushort(__float2half_rn(f));
#else
    uint32_t x = wnn_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u) { /* Inf or NaN */
        return (uint16_t)(sign | 0x7c00 | (absx > 0x7f800000u ? 0x200 : 0));
    }
    if (absx >= 0x477ff000u) { /* rounds to >= 65520: overflow to Inf */
        return (uint16_t)(sign | 0x7c00);
    }
    if (absx < 0x38800000u) { /* below 2^-14: subnormal or zero */
        if (absx < 0x33000000u) { /* < 2^-25: rounds to 0 */
            return (uint16_t)sign;
        }
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffff) | 0x800000;
        uint32_t shift = 126 - e; /* 14..24 */
        uint32_t half = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1))) {
            half++;
        }
        return (uint16_t)(sign | half);
    }
    uint32_t r = absx - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13;
    uint32_t rem = r & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) {
        h++;
    }
    return (uint16_t)(sign | h);
#endif
}

/* element i of p (data type t) as a double: quantize's scales and zero
 * points, normalization's inputs, biases */
WNN_HD double
wnn_load_num(const void *p, int t, uint64_t i)
{
    switch (t) {
    case WNN_KDT_F32: return ((const float *)p)[i];
    case WNN_KDT_F16: return wnn_half_to_float(((const uint16_t *)p)[i]);
    case WNN_KDT_I32: return ((const int32_t *)p)[i];
    case WNN_KDT_U32: return ((const uint32_t *)p)[i];
    case WNN_KDT_I8: return ((const int8_t *)p)[i];
    case WNN_KDT_U8: return ((const uint8_t *)p)[i];
    case WNN_KDT_I64: return (double)((const int64_t *)p)[i];
    case WNN_KDT_U64: return (double)((const uint64_t *)p)[i];
    default: return 0;
    }
}

/* ---- exp --------------------------------------------------------------- */
/* exp for x in [WNN_EXP_LO, WNN_EXP_HI] (clamped outside), Cephes-style:
 * 2^n * p(r), ~1 ulp, written so that GCC vectorises it (ternary clamps in
 * this order, the integer part by conversion, the scale by building the
 * exponent bits).  Callers redo out-of-range or NaN arguments with expf
 * (wnn_exp). */
#define WNN_EXP_LO -87.3365478515625f
#define WNN_EXP_HI 88.3762626647949f

/* c = n ln2 + r, |r| <= ln2 / 2 (for |c| up to a few hundred): returns r,
 * and n in *n_out (round(c / ln 2), ties to even; n * 0.693359375 is exact:
 * the constant has few bits).  Shared with the CPU's vector math
 * (cpu/kernels/elementwise/vmath.h). */
WNN_HD float
wnn_exp_split(float c, float *n_out)
{
    float t = c * 1.44269504088896341f + 12582912.0f;
    float n = t - 12582912.0f;
    *n_out = n;
    float r = c - n * 0.693359375f;
    return r - n * -2.12194440e-4f;
}

/* expm1(r) for |r| <= ln2 / 2 (Cephes' polynomial) */
WNN_HD float
wnn_expm1_poly(float r)
{
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    return p * r * r + r;
}

WNN_HD float
wnn_exp_core(float x)
{
    x = x < WNN_EXP_HI ? x : WNN_EXP_HI;
    x = x > WNN_EXP_LO ? x : WNN_EXP_LO;
    float n, r = wnn_exp_split(x, &n);
    int32_t ni = (int32_t)n;
    return (wnn_expm1_poly(r) + 1.0f) * wnn_f32_from_bits((ni + 127) << 23);
}

/* exp of every float: wnn_exp_core in its range, expf outside (and NaN) */
WNN_HD float
wnn_exp(float x)
{
    bool in_range = x <= WNN_EXP_HI && x >= WNN_EXP_LO;
    return in_range ? wnn_exp_core(x) : expf(x);
}

/* ---- the recurrent networks' activations (gru, lstm) --------------------- */
/* sigmoid by wnn_exp_core: for x >= -87 and not NaN (wnn_sigmoid_libm
 * below that: results under FLT_MIN) */
WNN_HD float
wnn_sigmoid_core(float x)
{
    return 1.0f / (1.0f + wnn_exp_core(-x));
}

WNN_HD float
wnn_sigmoid_libm(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* the argument needs wnn_sigmoid_libm */
WNN_HD bool
wnn_sigmoid_needs_libm(float x)
{
    return x < -87.0f || x != x;
}

/* Cephes tanhf: odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) above;
 * NaN propagates through the polynomial branch. */
WNN_HD float
wnn_tanh_cephes(float x)
{
    float a = fabsf(x);
    float e = wnn_exp_core(2.0f * a);
    float big = 1.0f - 2.0f / (e + 1.0f);
    float z = x * x;
    float s = ((((-5.70498872745E-3f * z + 2.06390887954E-2f) * z -
                 5.37397155531E-2f) * z + 1.33314422036E-1f) * z -
               3.33332819422E-1f) * z * x + x;
    return a > 0.625f ? copysignf(big, x) : s;
}

/* ---- cast ------------------------------------------------------------- */
/* float -> integer type `to` (WNN_KDT_I32 U32 I8 U8 I64): truncation toward
 * zero, saturated to the type's range, NaN -> 0; the value in the int64
 * domain (stored with wrap-around, i.e. exactly). */
WNN_HD int64_t
wnn_f32_to_int_sat(float v, int to)
{
    double lo, hi;
    switch (to) {
    case WNN_KDT_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case WNN_KDT_U32: lo = 0; hi = 4294967295.0; break;
    case WNN_KDT_I8: lo = -128; hi = 127; break;
    case WNN_KDT_U8: lo = 0; hi = 255; break;
    default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    }
    if (v != v) {
        return 0;
    }
    double d = trunc((double)v);
    if (d <= lo) {
        return to == WNN_KDT_I64 ? INT64_MIN : (int64_t)lo;
    }
    if (d >= hi) {
        return to == WNN_KDT_I64 ? INT64_MAX : (int64_t)hi;
    }
    return (int64_t)d;
}

/* float -> uint64, the same rules */
WNN_HD uint64_t
wnn_f32_to_u64_sat(float v)
{
    if (v != v || v <= 0) {
        return 0;
    }
    if (v >= 18446744073709551616.0f) {
        return UINT64_MAX;
    }
    return (uint64_t)v;
}

/* ---- quantizeLinear / dequantizeLinear ----------------------------------- */
/* quantizeLinear's value before saturation: roundEven(x / scale) +
 * zeroPoint, in double (x / scale rounded to double, rint) */
WNN_HD double
wnn_quantize_value(double x, double scale, double zero)
{
    return rint(x / scale) + zero;
}

/* v saturated to [lo, hi] (+-Inf too), NaN -> 0: then exactly the integer
 * type's value (v is integral) */
WNN_HD double
wnn_saturate(double v, double lo, double hi)
{
    return v >= lo ? (v <= hi ? v : hi) : (v < lo ? lo : 0.0);
}

/* dequantizeLinear: (x - zeroPoint) * scale in double */
WNN_HD double
wnn_dequantize_value(double x, double zero, double scale)
{
    return (x - zero) * scale;
}

/* double -> float32 rounded to odd: a float32 has 13 more significand bits
 * than a float16, so rounding the result to float16 (nearest even) rounds
 * d once (dequantizeLinear to float16) */
WNN_HD float
wnn_f64_to_f32_odd(double d)
{
    float f = (float)d;
    if ((double)f != d && f == f && !isinf(f)) {
        if (!(wnn_f32_bits(f) & 1u)) {
            f = nextafterf(f, d > (double)f ? INFINITY : -INFINITY);
        }
    }
    return f;
}

/* double -> float16 in one rounding (to nearest even; the same bits as
 * rounding to float32 by truncation then setting the last bit when
 * inexact, the other form of round-to-odd) */
WNN_HD uint16_t
wnn_f64_to_f16(double d)
{
    return wnn_float_to_half(wnn_f64_to_f32_odd(d));
}

/* ---- integer pow ------------------------------------------------------- */
/* int64 base ** e with wrap-around; a negative exponent gives 1 / base
 * truncated (0 unless |base| == 1; 0 ** negative = 0) */
WNN_HD int64_t
wnn_ipow(int64_t base, int64_t e)
{
    if (e < 0) {
        return base == 1 ? 1 : base == -1 ? ((e & 1) ? -1 : 1) : 0;
    }
    uint64_t r = 1, b = (uint64_t)base;
    while (e) {
        if (e & 1) {
            r *= b;
        }
        b *= b;
        e >>= 1;
    }
    return (int64_t)r;
}

/* uint64 b ** e with wrap-around */
WNN_HD uint64_t
wnn_upow(uint64_t b, uint64_t e)
{
    uint64_t r = 1;
    while (e) {
        if (e & 1) {
            r *= b;
        }
        b *= b;
        e >>= 1;
    }
    return r;
}

/* ---- reductions and softmax ---------------------------------------------- */
/* exp(r) for r <= 0 (a value minus the maximum: reduceLogSumExp),
 * vectorisable: r is clamped to -708 (exp(-708) < 1e-307 stands in for
 * smaller terms and -Inf: negligible next to the maximum's own term, 1),
 * then 2^n * e^f with |f| <= ln(2)/2 and a degree-11 Taylor polynomial
 * (relative error below 1e-14). */
WNN_HD double
wnn_exp_nonpos(double r)
{
    const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
    r = r > -708.0 ? r : -708.0;
    double t = r * 1.4426950408889634 + magic;
    double n = t - magic; /* round(r / ln 2), an integer in [-1022, 0] */
    double f = (r - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
    double p = 1.0 / 39916800.0;
    p = p * f + 1.0 / 3628800.0;
    p = p * f + 1.0 / 362880.0;
    p = p * f + 1.0 / 40320.0;
    p = p * f + 1.0 / 5040.0;
    p = p * f + 1.0 / 720.0;
    p = p * f + 1.0 / 120.0;
    p = p * f + 1.0 / 24.0;
    p = p * f + 1.0 / 6.0;
    p = p * f + 0.5;
    p = p * f + 1.0;
    p = p * f + 1.0;
    uint64_t tb, mb;
    memcpy(&tb, &t, 8);
    memcpy(&mb, &magic, 8);
    uint64_t sb = (tb - mb + 1023u) << 52; /* 2^n: t's low bits are n */
    double scale;
    memcpy(&scale, &sb, 8);
    return p * scale;
}

/* x - m rounded, and the rounding error in *lo (TwoSum, exact): softmax's
 * exp(x - m) is then exp(v) * (1 + lo) to within float32 rounding, so the
 * error of the subtraction does not reach the result; lo = 0 where v is
 * NaN or -Inf. */
WNN_HD float
wnn_two_diff(float x, float m, float *lo)
{
    float v = x - m;
    float bx = v - x;
    float e = (x - (v - bx)) + (-m - bx);
    *lo = v == v && v > -INFINITY ? e : 0.0f;
    return v;
}

/* ---- resample2d ---------------------------------------------------------- */
/* Source index / indices and weight of output o along an axis of in -> out
 * elements, in exact integer arithmetic: c = ((2o + 1) in - out) / (2 out),
 * clamped to [0, in - 1]; nearest (linear false): *i0 = *i1, *t = 0. */
WNN_HD void
wnn_resample_src(int64_t in, int64_t out, int64_t o, bool linear, int64_t *i0,
                 int64_t *i1, double *t)
{
    const uint64_t den = 2 * (uint64_t)out;
    /* (2o + 1) * in < 2^32 * 2^31: fits in uint64 */
    const uint64_t num = (2 * (uint64_t)o + 1) * (uint64_t)in;
    *t = 0.0;
    if (!linear) {
        uint64_t idx = (num - 1) / den; /* num >= 1 */
        *i0 = *i1 = idx > (uint64_t)(in - 1) ? in - 1 : (int64_t)idx;
        return;
    }
    if (num <= (uint64_t)out) { /* c <= 0: clamped to 0 */
        *i0 = *i1 = 0;
        return;
    }
    uint64_t m = num - (uint64_t)out, x0 = m / den, rem = m % den;
    if (x0 >= (uint64_t)(in - 1)) { /* c >= in - 1: clamped */
        *i0 = *i1 = in - 1;
        return;
    }
    *i0 = (int64_t)x0;
    *i1 = (int64_t)x0 + (rem != 0);
    *t = (double)rem / (double)den;
}

/* an interpolated int8 / uint8 value: rounded half to even, clamped */
WNN_HD double
wnn_round_clamp(double v, double lo, double hi)
{
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

#endif
