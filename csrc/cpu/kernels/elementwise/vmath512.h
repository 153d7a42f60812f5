/* vmath512.h -- AVX-512 intrinsics twins of vmath.h's functions, for the
 * element-wise loops (elementwise.c) and the softmax rows
 * (normalization.c).  Only on x86-64 with GCC-compatible compilers; the
 * callers check cpu_has_avx512() before calling into code built with
 * these. */
#ifndef WNN_CPU_VMATH512_H
#define WNN_CPU_VMATH512_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "vmath.h"

/* exp, sigmoid, gelu, tanh and erf on AVX-512, with intrinsics: vmath.h's
 * sequences (the same reduction, the same Cephes polynomial, the same
 * roundings) but 2^n by one vscalefps instead of vm_scale2's conversion,
 * shifts, adds and two multiplies (scalef rounds a result in the subnormals
 * once, as the second multiply does there), and the clamp, the NaN select
 * and the selects between branches on mask registers: a sigmoid of 16 Mi
 * float32 went from compute-bound to about the time of relu; gelu 1.07 ->
 * 0.59 ns; on [8, 128, 3072] (2 threads) tanh 0.91 -> 0.63 ms, erf
 * 1.42 -> 1.12 ms. */
#define EXP512 __attribute__((target("avx512f"), always_inline)) static inline

/* vm_exp_split: c = n ln2 + r; returns r, n in *n */
EXP512 __m512
exp512_split(__m512 c, __m512 *n)
{
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    __m512 t = _mm512_fmadd_ps(c, _mm512_set1_ps(1.44269504088896341f), magic);
    *n = _mm512_sub_ps(t, magic); /* round(c / ln 2), ties to even */
    __m512 r = _mm512_fnmadd_ps(*n, _mm512_set1_ps(0.693359375f), c);
    return _mm512_fnmadd_ps(*n, _mm512_set1_ps(-2.12194440e-4f), r);
}

/* vm_expm1_poly: expm1(r) for |r| <= ln2 / 2 */
EXP512 __m512
expm1_poly512(__m512 r)
{
    __m512 p = _mm512_set1_ps(1.9875691500E-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
    return _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r);
}

/* exp(c), c in [-104, 88.8] (clamped by the caller) */
EXP512 __m512
exp512_clamped(__m512 c)
{
    __m512 n, r = exp512_split(c, &n);
    return _mm512_scalef_ps(_mm512_add_ps(expm1_poly512(r), _mm512_set1_ps(1.0f)), n);
}

EXP512 __m512
exp512(__m512 x)
{
    /* min / max return their second operand for a NaN: x here, so a NaN
     * runs through and comes out a NaN (as exp256) */
    __m512 c = _mm512_min_ps(_mm512_set1_ps(88.8f), x);
    c = _mm512_max_ps(_mm512_set1_ps(-104.0f), c);
    return exp512_clamped(c);
}

/* vm_sigmoid: (x >= 0 ? 1 : e) / (1 + e), e = exp(-|x|); a NaN runs
 * through (as exp512): x sigmoid(x) 0.316 -> 0.293 ns a value on one Zen 4
 * core without the NaN select */
EXP512 __m512
sigmoid512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_castsi512_ps(_mm512_or_si512(
        _mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
    __m512 e = exp512_clamped(_mm512_max_ps(_mm512_set1_ps(-104.0f), a));
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_div_ps(_mm512_mask_blend_ps(pos, e, one), _mm512_add_ps(one, e));
}

/* vm_erf: x P(x^2) below |x| = 1, else copysign(1 - erfc(a), x) with
 * erfc(a) = exp(-a^2) S(1 / a), a = |x| clamped to [1, 4] (NaN kept: max
 * and min return their second operand for a NaN) */
EXP512 __m512
erf512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_abs_ps(x);
    __m512 z = _mm512_mul_ps(x, x);
    __m512 p = _mm512_set1_ps(7.898210122e-05f);
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-8.024354105e-04f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(5.190053575e-03f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-2.685480854e-02f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.128361243e-01f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.761262884e-01f));
    p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.128379167e+00f));
    __m512 small = _mm512_mul_ps(x, p);
    __m512 ac = _mm512_min_ps(_mm512_set1_ps(4.0f), _mm512_max_ps(one, a));
    __m512 hi = _mm512_mul_ps(ac, ac);
    __m512 lo = _mm512_fmsub_ps(ac, ac, hi); /* a^2 = hi + lo exactly */
    __m512 t = _mm512_div_ps(one, ac);
    __m512 s = _mm512_set1_ps(-4.873406585e-02f);
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(3.309363213e-01f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-9.941723831e-01f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(1.717764817e+00f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-1.824263491e+00f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(1.103826083e+00f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-1.629176260e-01f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-2.566951490e-01f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-2.485033736e-03f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(5.643273883e-01f));
    s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(-3.285703782e-06f));
    /* 1 - exp(-hi) (s - s lo), one rounding as GCC contracts it */
    __m512 big = _mm512_fnmadd_ps(exp512(_mm512_sub_ps(_mm512_setzero_ps(), hi)),
                                  _mm512_fnmadd_ps(s, lo, s), one);
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    big = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(big), _mm512_castps_si512(x), sign, 0xd8)); /* copysign */
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, one, _CMP_LT_OQ), big, small);
}

/* vm_tanh: copysign(-t / (t + 2), x), t = expm1(-2 |x|) as vm_expm1
 * computes it (n == 0: q; else 2^n (q + 1) - 1, the scale by vscalefps,
 * rounded once as vm_scale2's second multiply rounds) */
EXP512 __m512
tanh512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_mul_ps(_mm512_set1_ps(-2.0f), _mm512_abs_ps(x));
    __m512 c = _mm512_max_ps(a, _mm512_set1_ps(-104.0f)); /* a <= 0 */
    __m512 n, q = expm1_poly512(exp512_split(c, &n)); /* expm1(r) */
    __m512 t = _mm512_mask_blend_ps(
        _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_EQ_OQ),
        _mm512_sub_ps(_mm512_scalef_ps(_mm512_add_ps(q, one), n), one), q);
    __m512 y = _mm512_div_ps(_mm512_sub_ps(_mm512_setzero_ps(), t),
                             _mm512_add_ps(t, _mm512_set1_ps(2.0f)));
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    y = _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
        _mm512_castps_si512(y), _mm512_castps_si512(x), sign, 0xd8)); /* copysign */
    return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

/* vm_gelu in intrinsics: the same sequence (fmadd where GCC contracts
 * vm_gelu's a * b + c, the same magic-number rounding of n), with the 2^n
 * scales by vscalefps and the selects on mask registers.  min returns the
 * second operand for a NaN (15.5: x carries the NaN). */
EXP512 __m512
gelu512(__m512 x)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    __m512 ax = _mm512_abs_ps(x);
    __m512 xc = _mm512_min_ps(ax, _mm512_set1_ps(15.5f));
    __m512 t = _mm512_div_ps(one, _mm512_fmadd_ps(_mm512_set1_ps(VM_GELU_P), ax, one));
    __m512 q = _mm512_set1_ps(2.952091582e-02f);
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.313298941e-01f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.823387593e-01f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-8.121845871e-02f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.153678745e-01f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(6.916490197e-02f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.019968837e-01f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.069531292e-01f));
    q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.072058976e-01f));
    __m512 s = _mm512_mul_ps(t, q);
    __m512 hi = _mm512_mul_ps(xc, xc);
    __m512 lo = _mm512_fmsub_ps(xc, xc, hi); /* x^2 = hi + lo exactly */
    __m512 n, r = exp512_split(_mm512_mul_ps(_mm512_set1_ps(-0.5f), hi), &n);
    r = _mm512_fnmadd_ps(_mm512_set1_ps(0.5f), lo, r);
    __m512 em = _mm512_add_ps(expm1_poly512(r), one);
    __m512 v = _mm512_mul_ps(em, s);
    __m512 e2 = _mm512_scalef_ps(v, n); /* erfc(|x| / sqrt 2) / 2 */
    __m512 neg = _mm512_scalef_ps(_mm512_mul_ps(x, v), n);
    __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ);
    return _mm512_mask_blend_ps(pos, neg,
                                _mm512_mul_ps(x, _mm512_sub_ps(one, e2)));
}

#endif /* x86-64, GNU C */
#endif
