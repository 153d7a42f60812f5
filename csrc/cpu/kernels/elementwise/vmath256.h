/* vmath256.h -- AVX2 + FMA intrinsics twins of vmath.h's exp, sigmoid,
 * gelu, tanh and erf, for the element-wise loops (elementwise.c) on CPUs without
 * AVX-512 (and under WEBNN_CPU_ISA=avx2).  Only on x86-64 with
 * GCC-compatible compilers; the callers check cpu_isa() first.
 *
 * The same sequences as vmath.h's functions compiled in a VM_HOT clone
 * with FMA (the x86-64-v3 and v4 clones: a * b + c contracted, the same
 * Cephes reduction and polynomials), 2^n by vm_scale2's two multiplies
 * (AVX2 has no vscalefps) or, for exp where every lane's n is in a normal
 * float's range, by one product with the same rounding, for sigmoid (n <=
 * 0) by 2^(n + 64) and 2^-64, two products with that rounding, the
 * selects by blendv: the results are bit for bit those clones' but for the
 * payload of a NaN that exp and sigmoid pass through (tests/ops/
 * test_vector_math.py compares the levels on a grid of bit patterns; every
 * 61st pattern, 70 M values, checked once).  What they save is the compiler's: against
 * GCC's vectorisation of vmath.h's loops built for x86-64-v3 (one thread,
 * 4 Mi float32, Zen 4, min of 30): sigmoid 2.74 -> 2.34 ms, gelu 3.95 ->
 * 3.72, exp 1.95 -> 1.80, tanh 3.23 -> 2.84, erf 5.55 -> 4.44.
 * WEBNN_CPU_VM_TWINS=0 runs those loops instead (their build for the
 * level cpu_isa() picks: cpu.h's CPU_HOT_VOID), as the tests do to compare
 * the two. */
#ifndef WNN_CPU_VMATH256_H
#define WNN_CPU_VMATH256_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "vmath.h"

#define EXP256 __attribute__((target("arch=x86-64-v3"), always_inline)) static inline

/* Lock step: the _n functions below take k vectors (k <= 4, a constant
 * where they are inlined) and run each step of their chain for the k in
 * turn; the plain functions are their k = 1.  Written one vector after the
 * other, four calls of a long chain (exp's: some 30 operations, about 70
 * cycles) left the out-of-order core of a Zen 3, whose floating-point
 * scheduler holds about one such chain, working on about two vectors at
 * once; in lock step it holds the same step of four.  Zen 3, 2 threads,
 * min of 30 in three alternating processes a build, k = 4 against four
 * calls: sigmoid of 16 Mi 4.70-5.44 -> 4.09-4.64 ms, of 256 Ki
 * 0.095-0.104 -> 0.069-0.096, x sigmoid(x) of 4 Mi 1.32-1.56 -> 1.26-1.37,
 * softmax of 9000 x 1500 (softmax_k.h) 7.5-8.3 -> 6.9-7.3; a row of 1500 in
 * L1 alone, one thread: 0.73 -> 0.61 ns a value (eight the same as four,
 * three and six a little slower).  The bits are the same for every k. */
#define VM_XN(j, k) _Pragma("GCC unroll 4") for (int j = 0; j < (k); j++)
#define VM_X4(j) VM_XN(j, 4)

/* vm_exp_split: c = n ln2 + r; returns r, n in *n, and in *t the sum
 * n + 1.5 2^23 whose low bits hold n (pow2_256) */
EXP256 __m256
exp256_split(__m256 c, __m256 *n, __m256 *t)
{
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    *t = _mm256_fmadd_ps(c, _mm256_set1_ps(1.44269504088896341f), magic);
    *n = _mm256_sub_ps(*t, magic); /* round(c / ln 2), ties to even */
    __m256 r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(0.693359375f), c);
    return _mm256_fnmadd_ps(*n, _mm256_set1_ps(-2.12194440e-4f), r);
}

/* 2^n as a float from split's t, for n in [-126, 127]: (n + 127) << 23,
 * the bits of 1.5 2^23 shifted out */
EXP256 __m256
pow2_256(__m256 t)
{
    __m256i e = _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
}

/* true where no lane's n is below -126 (a NaN n: not below), so that
 * v 2^n is one product, rounded as vm_scale2's two round it (the first of
 * those is exact while v 2^(n >> 1) stays normal) */
EXP256 bool
n_normal256(__m256 n)
{
    return _mm256_movemask_ps(_mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_LT_OQ)) == 0;
}

/* vm_expm1_poly: expm1(r) for |r| <= ln2 / 2, of r[0..k) into p[0..k) */
EXP256 void
expm1_poly256_n(const __m256 *r, __m256 *p, int k)
{
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(_mm256_set1_ps(1.9875691500E-4f), r[j],
                                       _mm256_set1_ps(1.3981999507E-3f));
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(8.3334519073E-3f));
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(4.1665795894E-2f));
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(1.6666665459E-1f));
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(p[j], r[j], _mm256_set1_ps(5.0000001201E-1f));
    VM_XN(j, k) p[j] = _mm256_fmadd_ps(_mm256_mul_ps(p[j], r[j]), r[j], r[j]);
}

EXP256 __m256
expm1_poly256(__m256 r)
{
    __m256 p;
    expm1_poly256_n(&r, &p, 1);
    return p;
}

/* vm_scale2: v 2^n as v 2^n1 2^n2, n1 = n >> 1, n2 = n - n1 (n integral,
 * in [-150, 128]) */
EXP256 __m256
scale2_256(__m256 v, __m256 n)
{
    const __m256i bias = _mm256_set1_epi32(127);
    __m256i ni = _mm256_cvttps_epi32(n);
    __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
    __m256 f1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 f2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, f1), f2);
}

/* For n <= 0 (exp of c <= 0, as sigmoid takes it): split
 * with the magic number 1.5 2^23 + 191, so that t's low bits hold n + 191
 * and t << 23 is 2^(n + 64), a normal float for n in [-190, 63] (the same n
 * as exp256_split's: c / ln 2 is never a half-integer for |c| < 2^22, so the
 * magic's parity does not change the rounding): of c[0..k), t[j] (n + 191
 * in its low bits) and the reduced r[j] = c[j] - n ln 2 */
EXP256 void
exp256_split64_n(const __m256 *c, __m256 *t, __m256 *r, int k)
{
    const __m256 magic = _mm256_set1_ps(12583103.0f); /* 1.5 2^23 + 191 */
    VM_XN(j, k) t[j] = _mm256_fmadd_ps(c[j], _mm256_set1_ps(1.44269504088896341f), magic);
    VM_XN(j, k) {
        __m256 n = _mm256_sub_ps(t[j], magic);
        r[j] = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), c[j]);
        r[j] = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r[j]);
    }
}

/* v 2^n from split64's t, for n in [-190, 0] and v 2^(n + 64) normal: v
 * 2^(n + 64) is exact, and the product by 2^-64 rounds once, where the
 * result is subnormal, as vm_scale2's second product does (its first is
 * exact there too); no branch on the range of n (pow2_256's fast path
 * needed every lane's n >= -126: a compare, a movemask and a branch a
 * vector, and scale2_256's nine operations where a lane's was below).
 * sigmoid: 62.1-62.7 -> 59.3-59.9 us for 256 Ki values, x sigmoid(x)
 * 67.1 -> 64.3 (2 threads, Zen 4, min of 7 x 200, alternating builds); the
 * same for gelu and tanh measured 3-4 % slower and 0-6 % slower: not used
 * there (their n_normal256 branch is taken the same way for nearly every
 * vector). */
EXP256 __m256
scale_neg256(__m256 v, __m256 t)
{
    __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
    return _mm256_mul_ps(_mm256_mul_ps(v, s), _mm256_set1_ps(0x1p-64f));
}

/* exp(c), c in [-104, 88.8] (clamped by the caller; neg: c <= 0).  Where
 * every lane's n = round(c / ln 2) is in [-126, 127] (c in [-87, 88], or
 * NaN), 2^n is a normal float made from the bits of split's t (n + 1.5
 * 2^23: n in its low bits), and p 2^n is one product rounded once, as
 * vm_scale2's two products round it (the first is exact): six operations
 * fewer than scale2_256, whose conversion, shifts and products the other
 * vectors take. */
EXP256 __m256
exp256_core(__m256 c)
{
    __m256 n, t, r = exp256_split(c, &n, &t);
    __m256 p = _mm256_add_ps(expm1_poly256(r), _mm256_set1_ps(1.0f));
    __m256 far = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f),
                                                _mm256_sub_ps(c, _mm256_set1_ps(0.5f))),
                               _mm256_set1_ps(87.5f), _CMP_GT_OQ);
    if (__builtin_expect(_mm256_movemask_ps(far) == 0, 1)) {
        return _mm256_mul_ps(p, pow2_256(t));
    }
    return scale2_256(p, n);
}

EXP256 __m256
exp256_clamped(__m256 c)
{
    return exp256_core(c);
}

/* x where x is NaN, else y */
EXP256 __m256
keep_nan256(__m256 y, __m256 x)
{
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

EXP256 __m256
exp256(__m256 x)
{
    /* min / max return their second operand for a NaN: x here, so a NaN
     * runs through and comes out a NaN (vm_exp's NaN, but for its payload
     * bits: x quieted) */
    __m256 c = _mm256_min_ps(_mm256_set1_ps(88.8f), x);
    c = _mm256_max_ps(_mm256_set1_ps(-104.0f), c);
    return exp256_clamped(c);
}

/* exp(x) for x <= 0 or NaN (exp256's bits there): split64 and scale_neg,
 * no branch; x below -104 is clamped to it (exp rounds to 0 below about
 * -103.3 either way), a NaN runs through (max returns its second operand).
 * sigmoid's exp(-|x|), and softmax's exp(x - max): with exp256 its row pass
 * spilled two of its four sums to the stack at this level (16 registers;
 * the far test's constants), each a store and a reload an iteration.  Of
 * x[0..k) into e[0..k). */
EXP256 void
exp256_neg_n(const __m256 *x, __m256 *e, int k)
{
    __m256 c[4], t[4], r[4], p[4];
    VM_XN(j, k) c[j] = _mm256_max_ps(_mm256_set1_ps(-104.0f), x[j]);
    exp256_split64_n(c, t, r, k);
    expm1_poly256_n(r, p, k);
    VM_XN(j, k) p[j] = _mm256_add_ps(p[j], _mm256_set1_ps(1.0f));
    VM_XN(j, k) e[j] = scale_neg256(p[j], t[j]);
}

EXP256 __m256
exp256_neg(__m256 x)
{
    __m256 e;
    exp256_neg_n(&x, &e, 1);
    return e;
}

/* vm_sigmoid: (x >= 0 ? 1 : e) / (1 + e), e = exp(-|x|) (a NaN runs
 * through, as in exp256), of x[0..k) into y[0..k) */
EXP256 void
sigmoid256_n(const __m256 *x, __m256 *y, int k)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 a[4], e[4];
    VM_XN(j, k) a[j] = _mm256_or_ps(x[j], _mm256_set1_ps(-0.0f)); /* -|x| */
    exp256_neg_n(a, e, k);
    VM_XN(j, k) {
        __m256 pos = _mm256_cmp_ps(x[j], _mm256_setzero_ps(), _CMP_GE_OQ);
        y[j] = _mm256_div_ps(_mm256_blendv_ps(e[j], one, pos), _mm256_add_ps(one, e[j]));
    }
}

EXP256 __m256
sigmoid256(__m256 x)
{
    __m256 y;
    sigmoid256_n(&x, &y, 1);
    return y;
}

/* x * sigmoid(x), rounded as the separate sigmoid and mul (cpu_gate_f32),
 * of x[0..k) into y[0..k) */
EXP256 void
silu256_n(const __m256 *x, __m256 *y, int k)
{
    sigmoid256_n(x, y, k);
    VM_XN(j, k) y[j] = _mm256_mul_ps(x[j], y[j]);
}

EXP256 __m256
silu256(__m256 x)
{
    return _mm256_mul_ps(x, sigmoid256(x));
}

/* the lock step of four (vloops.c's fn_x4) */
EXP256 void
sigmoid256_x4(const __m256 *x, __m256 *y)
{
    sigmoid256_n(x, y, 4);
}

EXP256 void
silu256_x4(const __m256 *x, __m256 *y)
{
    silu256_n(x, y, 4);
}

/* vm_gelu: the same sequence (fmadd where GCC contracts vm_gelu's
 * a * b + c; x^2 = hi + lo exactly, as vm_square2's split gives it);
 * min returns the second operand for a NaN (15.5: x carries the NaN) */
EXP256 __m256
gelu256(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 ax = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 xc = _mm256_min_ps(ax, _mm256_set1_ps(15.5f));
    __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(_mm256_set1_ps(VM_GELU_P), ax, one));
    __m256 q = _mm256_set1_ps(2.952091582e-02f);
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-1.313298941e-01f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.823387593e-01f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(-8.121845871e-02f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.153678745e-01f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(6.916490197e-02f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.019968837e-01f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.069531292e-01f));
    q = _mm256_fmadd_ps(q, t, _mm256_set1_ps(1.072058976e-01f));
    __m256 s = _mm256_mul_ps(t, q);
    __m256 hi = _mm256_mul_ps(xc, xc);
    __m256 lo = _mm256_fmsub_ps(xc, xc, hi); /* x^2 = hi + lo exactly */
    __m256 n, tn, r = exp256_split(_mm256_mul_ps(_mm256_set1_ps(-0.5f), hi), &n, &tn);
    r = _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), lo, r);
    __m256 v = _mm256_mul_ps(_mm256_add_ps(expm1_poly256(r), one), s);
    __m256 e2, neg; /* erfc(|x| / sqrt 2) / 2, and x times it */
    if (__builtin_expect(n_normal256(n), 1)) { /* |x| <= 13.2 */
        const __m256 p2 = pow2_256(tn);
        e2 = _mm256_mul_ps(v, p2);
        neg = _mm256_mul_ps(_mm256_mul_ps(x, v), p2);
    } else {
        e2 = scale2_256(v, n);
        neg = scale2_256(_mm256_mul_ps(x, v), n);
    }
    __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_blendv_ps(neg, _mm256_mul_ps(x, _mm256_sub_ps(one, e2)), pos);
}

/* copysign(mag, sgn) by the sign bit */
EXP256 __m256
copysign256(__m256 mag, __m256 sgn)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
}

/* vm_tanh: copysign(-t / (t + 2), x), t = expm1(-2 |x|) as vm_expm1
 * computes it (n == 0: q; else 2^n (q + 1) - 1) */
EXP256 __m256
tanh256(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 a = _mm256_mul_ps(_mm256_set1_ps(-2.0f),
                             _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x));
    __m256 c = _mm256_max_ps(a, _mm256_set1_ps(-104.0f)); /* a <= 0 */
    __m256 n, tn, q = expm1_poly256(exp256_split(c, &n, &tn)); /* expm1(r) */
    __m256 p = _mm256_add_ps(q, one);
    p = __builtin_expect(n_normal256(n), 1) ? _mm256_mul_ps(p, pow2_256(tn))
                                            : scale2_256(p, n);
    __m256 t = _mm256_blendv_ps(_mm256_sub_ps(p, one), q,
                                _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_EQ_OQ));
    __m256 y = _mm256_div_ps(_mm256_sub_ps(_mm256_setzero_ps(), t),
                             _mm256_add_ps(t, _mm256_set1_ps(2.0f)));
    return keep_nan256(copysign256(y, x), x);
}

/* vm_erf: x P(x^2) below |x| = 1, else copysign(1 - erfc(a), x) with
 * erfc(a) = exp(-a^2) S(1 / a), a = |x| clamped to [1, 4] (NaN kept: max
 * and min return their second operand for a NaN) */
EXP256 __m256
erf256(__m256 x)
{
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256 z = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(7.898210122e-05f);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-8.024354105e-04f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(5.190053575e-03f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-2.685480854e-02f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.128361243e-01f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-3.761262884e-01f));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(1.128379167e+00f));
    __m256 small = _mm256_mul_ps(x, p);
    __m256 ac = _mm256_min_ps(_mm256_set1_ps(4.0f), _mm256_max_ps(one, a));
    __m256 hi = _mm256_mul_ps(ac, ac);
    __m256 lo = _mm256_fmsub_ps(ac, ac, hi); /* a^2 = hi + lo exactly */
    __m256 t = _mm256_div_ps(one, ac);
    __m256 s = _mm256_set1_ps(-4.873406585e-02f);
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(3.309363213e-01f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-9.941723831e-01f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(1.717764817e+00f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-1.824263491e+00f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(1.103826083e+00f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-1.629176260e-01f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-2.566951490e-01f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-2.485033736e-03f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(5.643273883e-01f));
    s = _mm256_fmadd_ps(s, t, _mm256_set1_ps(-3.285703782e-06f));
    /* 1 - exp(-hi) (s - s lo), one rounding as GCC contracts it */
    __m256 big = _mm256_fnmadd_ps(exp256(_mm256_sub_ps(_mm256_setzero_ps(), hi)),
                                  _mm256_fnmadd_ps(s, lo, s), one);
    big = copysign256(big, x);
    return _mm256_blendv_ps(big, small, _mm256_cmp_ps(a, one, _CMP_LT_OQ));
}

#endif /* x86-64, GNU C */
#endif
