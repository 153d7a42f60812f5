/* vmath.h -- float32 exp, expm1, log, log1p, erf, erfc and the activations
 * built on them, written so that GCC vectorises a loop calling them: no
 * branches (every path computed, the result picked with ternaries), no
 * calls, integer work by conversion and bit patterns.  Compiled inside a
 * CPU_HOT loop (cpu.h) they run 16 lanes wide on AVX-512, 8 on AVX2 and 4
 * on the baseline (SSE2) clone; the same source is the portable path.
 *
 * Every function takes every float: NaN gives NaN, infinities and the
 * subnormal range follow the mathematical limits (exp underflows through the
 * subnormals to 0, overflows to +Inf), so callers need no scalar fix-up.
 * Accuracy against float64, measured on every 61st float32 bit pattern
 * (tests/ops/test_vector_math.py checks edges, tails and a bit grid):
 *   vm_exp, vm_log                 <= 1 ulp
 *   vm_expm1 (elu)                 <= 3.5 ulp
 *   vm_erf, vm_sigmoid, vm_tanh    <= 2.7 ulp
 *   vm_softplus                    <= 2 ulp
 *   vm_gelu                        <= 7.7 ulp (AVX-512 and AVX2 clones, on
 *                                  every 7th bit pattern), 8.1 (SSE2); from
 *                                  erfc for every x, so x << 0 keeps its
 *                                  relative accuracy (the spec's formula in
 *                                  float32 would not)
 * exp, sigmoid, gelu, tanh and erf run an AVX-512 intrinsics twin of
 * vm_exp / vm_sigmoid / vm_gelu / vm_tanh / vm_erf where the CPU has it
 * (elementwise.c: the same roundings, 2^n by vscalefps; bit-equal to the
 * AVX-512 clones, gelu, tanh and erf checked on every 61st bit pattern),
 * and an AVX2 one where it has AVX2 only
 * (vmath256.h; bit-equal to the v3 and v4 clones).
 * Polynomials: exp and log are Cephes' (as wnn_exp_core, wnn_numerics.h); erf's and
 * gelu's are least-squares fits made for this file: erf(x) / x in x^2 on
 * [0, 1], erfc(a) exp(a^2) in 1 / a on [1, 10] (erf) and in
 * 1 / (1 + 0.38 a) on [0, 11] (gelu). */
#ifndef WNN_CPU_VMATH_H
#define WNN_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../../include/wnn_numerics.h"

#define VM_INLINE static inline __attribute__((always_inline))

/* The extra attributes of a loop calling these functions (CPU_HOT_VOID's
 * A): a * b + c contracted to FMA where the level has it (v3, v4) and no
 * -ftrapping-math, which would keep GCC from if-converting the selects (it
 * masks them on AVX-512 and gives up on SSE2).  Neither changes what a
 * function means: FMA only rounds less; nothing here reads the FP flags. */
#if defined(__GNUC__) && !defined(__clang__)
#define VM_ATTRS __attribute__((optimize("fp-contract=fast", "no-trapping-math")))
#else
#define VM_ATTRS
#endif

VM_INLINE float
vm_from_bits(int32_t i)
{
    float f;
    memcpy(&f, &i, 4);
    return f;
}

VM_INLINE int32_t
vm_to_bits(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i;
}

/* |x| and copysign by the sign bit (vectorises; fabsf does too) */
VM_INLINE float
vm_copysign(float mag, float sgn)
{
    return vm_from_bits((vm_to_bits(mag) & 0x7fffffff) |
                        (vm_to_bits(sgn) & (int32_t)0x80000000u));
}

/* the reduction c = n ln2 + r and expm1(r)'s polynomial: the ones of
 * wnn_exp_core (wnn_numerics.h), so that the two agree bit for bit */
#define vm_exp_split wnn_exp_split
#define vm_expm1_poly wnn_expm1_poly

/* The reduction shared by exp and expm1: x = n ln2 + r, |r| <= ln2 / 2,
 * x clamped to [-104, 88.8] (exp is 0 below, +Inf above); returns
 * q = expm1(r) and n. */
VM_INLINE float
vm_exp_reduce(float x, int32_t *n_out)
{
    float c = x < 88.8f ? x : 88.8f;
    c = c > -104.0f ? c : -104.0f;
    float n, r = vm_exp_split(c, &n);
    *n_out = (int32_t)n;
    return vm_expm1_poly(r);
}

/* 2^n as two factors 2^n1 * 2^n2, each a normal float for n in
 * [-150, 128]: the product reaches the subnormals and +Inf with one
 * rounding. */
VM_INLINE float
vm_scale2(float v, int32_t n)
{
    int32_t n1 = n >> 1, n2 = n - n1;
    return v * vm_from_bits((n1 + 127) << 23) * vm_from_bits((n2 + 127) << 23);
}

VM_INLINE float
vm_exp(float x)
{
    int32_t n;
    float q = vm_exp_reduce(x, &n);
    float y = vm_scale2(q + 1.0f, n);
    return x == x ? y : x;
}

/* exp(x) - 1 without the cancellation near 0 */
VM_INLINE float
vm_expm1(float x)
{
    int32_t n;
    float q = vm_exp_reduce(x, &n);
    float y = n == 0 ? q : vm_scale2(q + 1.0f, n) - 1.0f;
    return x == x ? y : x;
}

/* natural log; x < 0 or NaN: NaN, 0: -Inf, +Inf: +Inf; subnormals scaled */
VM_INLINE float
vm_log(float x)
{
    float xb = x * 8388608.0f;
    float xs = x < 1.17549435e-38f ? xb : x;
    float eoff = x < 1.17549435e-38f ? 150.0f : 127.0f;
    int32_t ix = vm_to_bits(xs);
    float m = vm_from_bits((ix & 0x007fffff) | 0x3f800000); /* [1, 2) */
    float mh = m * 0.5f;
    float fe = (float)((ix >> 23) & 0xff) - eoff;
    float fe1 = fe + 1.0f;
    fe = m > 1.41421356f ? fe1 : fe;
    m = m > 1.41421356f ? mh : m;
    float f = m - 1.0f, z = f * f;
    float y = 7.0376836292E-2f;
    y = y * f - 1.1514610310E-1f;
    y = y * f + 1.1676998740E-1f;
    y = y * f - 1.2420140846E-1f;
    y = y * f + 1.4249322787E-1f;
    y = y * f - 1.6668057665E-1f;
    y = y * f + 2.0000714765E-1f;
    y = y * f - 2.4999993993E-1f;
    y = y * f + 3.3333331174E-1f;
    y = y * f * z;
    y += fe * -2.12194440e-4f;
    y += -0.5f * z;
    float r = f + y + fe * 0.693359375f;
    /* 0: -Inf; +Inf: +Inf; negative or NaN: NaN */
    r = x == INFINITY ? x : r;
    r = x == 0.0f ? -INFINITY : r;
    r = x < 0.0f ? NAN : r;
    return x == x ? r : x;
}

/* log(1 + u) for u >= 0 (softplus): log(w) corrected by the rounding of
 * w = 1 + u */
VM_INLINE float
vm_log1p_pos(float u)
{
    float w = 1.0f + u;
    return vm_log(w) + (u - (w - 1.0f)) / w;
}

/* erf(x) / x = P(x^2) on [0, 1] */
VM_INLINE float
vm_erf_small(float x, float z)
{
    float p = 7.898210122e-05f;
    p = p * z - 8.024354105e-04f;
    p = p * z + 5.190053575e-03f;
    p = p * z - 2.685480854e-02f;
    p = p * z + 1.128361243e-01f;
    p = p * z - 3.761262884e-01f;
    p = p * z + 1.128379167e+00f;
    return x * p;
}

/* v^2 = *lo + returned value exactly (Dekker: v split into two 12-bit
 * halves, each product exact) */
VM_INLINE float
vm_square2(float v, float *lo)
{
    float vh = vm_from_bits(vm_to_bits(v) & (int32_t)0xfffff000u);
    float vl = v - vh;
    float p = v * v;
    *lo = ((vh * vh - p) + 2.0f * vh * vl) + vl * vl;
    return p;
}

/* erfc(a) for a in [1, 11]: exp(-a^2) S(1 / a), with a^2 = s2 + s2lo given
 * exactly by the caller (so that the rounding of a^2, up to 2^-24 * 121,
 * does not reach the result: exp(-s2) * (1 - s2lo)) */
VM_INLINE float
vm_erfc_big(float a, float s2, float s2lo)
{
    float t = 1.0f / a;
    float s = -4.873406585e-02f;
    s = s * t + 3.309363213e-01f;
    s = s * t - 9.941723831e-01f;
    s = s * t + 1.717764817e+00f;
    s = s * t - 1.824263491e+00f;
    s = s * t + 1.103826083e+00f;
    s = s * t - 1.629176260e-01f;
    s = s * t - 2.566951490e-01f;
    s = s * t - 2.485033736e-03f;
    s = s * t + 5.643273883e-01f;
    s = s * t - 3.285703782e-06f;
    return vm_exp(-s2) * (s - s * s2lo);
}

VM_INLINE float
vm_erf(float x)
{
    float a = fabsf(x);
    float small = vm_erf_small(x, x * x);
    float ac = a < 1.0f ? 1.0f : a > 4.0f ? 4.0f : a; /* erf(4) rounds to 1 */
    float lo, hi = vm_square2(ac, &lo);
    float big = vm_copysign(1.0f - vm_erfc_big(ac, hi, lo), x);
    return a < 1.0f ? small : big; /* NaN: big is NaN */
}

/* gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) from one erfc for every
 * x: with a = |x| / sqrt 2 and e2 = erfc(a) / 2, gelu is x (1 - e2) for
 * x > 0 and x e2 below (the spec's value, without the cancellation of
 * 1 + erf for x << 0).  erfc(a) = exp(-a^2) S(t), t = 1 / (1 + p a),
 * p = 0.38, S = t Q(t) with Q of degree 8 (a weighted least-squares fit
 * made for this file by scripts/fit_gelu.py, relative error 4e-8 with the
 * float32 coefficients below, which are Q's halved, on a in [0, 11]);
 * a^2 = x^2 / 2 from x,
 * exactly (hi + lo): exp(-hi / 2 - lo / 2) = 2^n exp(r), r reduced as in
 * vm_exp_reduce with -lo / 2 added to r.  The 2^n scale is applied last,
 * once to S exp(r) (e2) and once to x S exp(r) (the x < 0 result), so that
 * a result in the subnormals is rounded once.  |x| is clamped to 15.5 for
 * the square (exp(-120) is 0) but not in t: x = -Inf gives t = 0, S = 0
 * and -Inf * 0 = NaN, the spec formula's value; +Inf gives +Inf; large
 * finite x gives x or 0 through n.  One path for every x: the previous
 * code computed an erf polynomial and an erfc (in 1 / a) for every element
 * and picked one; elementwise.c's gelu512, the same sequence as this in
 * AVX-512 intrinsics, runs at 0.59 against 1.07 ns per element on one
 * Zen 4 core, and the bound went from 10.4 to 7.7 ulp. */
#define VM_GELU_P 2.687005699e-01f /* 0.38 / sqrt 2 */
VM_INLINE float
vm_gelu(float x)
{
    float ax = fabsf(x);
    float xc = ax < 15.5f ? ax : 15.5f; /* NaN: 15.5, x carries the NaN */
    float t = 1.0f / (1.0f + VM_GELU_P * ax);
    float q = 2.952091582e-02f;
    q = q * t - 1.313298941e-01f;
    q = q * t + 1.823387593e-01f;
    q = q * t - 8.121845871e-02f;
    q = q * t + 1.153678745e-01f;
    q = q * t + 6.916490197e-02f;
    q = q * t + 1.019968837e-01f;
    q = q * t + 1.069531292e-01f;
    q = q * t + 1.072058976e-01f;
    float s = t * q; /* erfc(a) exp(a^2) / 2 */
    float lo, hi = vm_square2(xc, &lo);
    float n, r = vm_exp_split(-0.5f * hi, &n); /* n in [-174, 0] */
    r = r - 0.5f * lo;
    float v = (vm_expm1_poly(r) + 1.0f) * s;
    int32_t ni = (int32_t)n;
    float e2 = vm_scale2(v, ni);
    float neg = vm_scale2(x * v, ni);
    return x > 0.0f ? x * (1.0f - e2) : neg;
}

/* 1 / (1 + exp(-x)), from e = exp(-|x|) in (0, 1]: no overflow, and x << 0
 * gives e / (1 + e) down to the subnormals */
VM_INLINE float
vm_sigmoid(float x)
{
    float e = vm_exp(-fabsf(x));
    /* 1 / (1 + e) for x >= 0, e / (1 + e) below: one division either way
     * (NaN: e is NaN, so is the quotient) */
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* tanh(|x|) = -t / (t + 2), t = expm1(-2 |x|) in (-1, 0] */
VM_INLINE float
vm_tanh(float x)
{
    float t = vm_expm1(-2.0f * fabsf(x));
    return vm_copysign(-t / (t + 2.0f), x);
}

/* log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)) */
VM_INLINE float
vm_softplus(float x)
{
    float y = (x > 0.0f ? x : 0.0f) + vm_log1p_pos(vm_exp(-fabsf(x)));
    return x == x ? y : x;
}

#endif
