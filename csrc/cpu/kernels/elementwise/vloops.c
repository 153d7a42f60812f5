/* vloops.c -- the element-wise loops written per ISA level with intrinsics
 * (vloops.h): vmath.h's exp, sigmoid, gelu, tanh and erf (and x sigmoid(x))
 * through their intrinsics twins, vmath512.h at AVX-512 and vmath256.h at
 * AVX2 + FMA, bit for bit the compiler's FMA clones of vmath.h's loops
 * (tests/ops/test_vector_math.py); the same with streaming stores for a
 * large output; streamed copies and add / sub / mul / div; and pow at
 * AVX-512.  The level is cpu_isa()'s (WEBNN_CPU_ISA caps it).  Elsewhere
 * (not x86-64, not a GCC-compatible compiler, baseline) every entry says
 * it did nothing and elementwise.c's portable loops run. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../cpu.h"
#include "vloops.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#include "vmath256.h"
#include "vmath512.h"

/* y[i] = fn(x[i]) at level L (512: AVX-512, 256: AVX2 + FMA, by the
 * VL<L>_ macros below): the whole vectors four at a time through fn_x4
 * (independent chains for the out-of-order core: 10-15 % faster than one
 * at a time; sigmoid and x sigmoid(x) at AVX2 in lock step, vmath256.h),
 * the last partial one masked.  STORE is the level's storeu, or its stream
 * for a large output written straight to memory (ALIGN: the loop then
 * starts with a masked vector up to y's vector boundary; y must be 4-byte
 * aligned). */
#define VL512_TARGET __attribute__((target("avx512f")))
#define VL512_W 16
#define VL512_T __m512
#define VL512_LOAD _mm512_loadu_ps
#define VL512_MASK_T __mmask16
#define VL512_MASK(r) ((__mmask16)((1u << (r)) - 1))
#define VL512_MLOAD(m, p) _mm512_maskz_loadu_ps(m, p)
#define VL512_MSTORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define VL256_TARGET __attribute__((target("arch=x86-64-v3")))
#define VL256_W 8
#define VL256_T __m256
#define VL256_LOAD _mm256_loadu_ps
#define VL256_MASK_T __m256i
#define VL256_MASK(r)                                                         \
    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(r)),                           \
                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define VL256_MLOAD(m, p) _mm256_maskload_ps(p, m)
#define VL256_MSTORE(p, m, v) _mm256_maskstore_ps(p, m, v)
#define VL_LOOP(L, name, fn, STORE, ALIGN)                                    \
    VL##L##_TARGET static void name(size_t n, const float *x, float *y)       \
    {                                                                         \
        const size_t W = VL##L##_W;                                           \
        size_t i = ALIGN ? (((uintptr_t)0 - (uintptr_t)y) & (4 * W - 1)) / 4 : 0; \
        if (i > n) {                                                          \
            i = n;                                                            \
        }                                                                     \
        if (i) {                                                              \
            const VL##L##_MASK_T m = VL##L##_MASK(i);                         \
            VL##L##_MSTORE(y, m, fn(VL##L##_MLOAD(m, x)));                    \
        }                                                                     \
        for (; i + 4 * W <= n; i += 4 * W) {                                  \
            VL##L##_T v[4] = {VL##L##_LOAD(x + i), VL##L##_LOAD(x + i + W),   \
                              VL##L##_LOAD(x + i + 2 * W),                    \
                              VL##L##_LOAD(x + i + 3 * W)}, u[4];             \
            fn##_x4(v, u);                                                    \
            STORE(y + i, u[0]);                                               \
            STORE(y + i + W, u[1]);                                           \
            STORE(y + i + 2 * W, u[2]);                                       \
            STORE(y + i + 3 * W, u[3]);                                       \
        }                                                                     \
        for (; i + W <= n; i += W) {                                          \
            STORE(y + i, fn(VL##L##_LOAD(x + i)));                            \
        }                                                                     \
        if (i < n) {                                                          \
            const VL##L##_MASK_T m = VL##L##_MASK(n - i);                     \
            VL##L##_MSTORE(y + i, m, fn(VL##L##_MLOAD(m, x + i)));            \
        }                                                                     \
    }

/* x * sigmoid(x) in registers: sigmoid512's value times x, as the separate
 * sigmoid and mul round it (cpu_gate_f32; silu256 in vmath256.h) */
EXP512 __m512
silu512(__m512 x)
{
    return _mm512_mul_ps(x, sigmoid512(x));
}

/* relu as elementwise.c's loop computes it, (x > 0 || x is NaN) ? x : +0,
 * for the streamed loop of a large output */
EXP512 __m512
relu512(__m512 x)
{
    return _mm512_maskz_mov_ps(
        _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_NLE_UQ), x);
}

__attribute__((target("arch=x86-64-v3"), always_inline)) static inline __m256
relu256(__m256 x)
{
    return _mm256_and_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_NLE_UQ), x);
}

/* fn_x4 for the functions that run one vector after the other: fn of
 * each of x[0..4) (sigmoid256_x4 and silu256_x4, in lock step, are
 * vmath256.h's) */
#define VL_SEQ4(T, TARGET, fn)                                                \
    TARGET void fn##_x4(const T *x, T *y)                                     \
    {                                                                         \
        for (int j = 0; j < 4; j++) {                                         \
            y[j] = fn(x[j]);                                                  \
        }                                                                     \
    }
#define VL_SEQ512(fn) VL_SEQ4(__m512, EXP512, fn)
#define VL_SEQ256(fn) VL_SEQ4(__m256, EXP256, fn)
VL_SEQ512(exp512)
VL_SEQ512(sigmoid512)
VL_SEQ512(gelu512)
VL_SEQ512(tanh512)
VL_SEQ512(erf512)
VL_SEQ512(silu512)
VL_SEQ512(relu512)
VL_SEQ256(exp256)
VL_SEQ256(gelu256)
VL_SEQ256(tanh256)
VL_SEQ256(erf256)
VL_SEQ256(relu256)
#undef VL_SEQ512
#undef VL_SEQ256
#undef VL_SEQ4

/* rows of a tile in place, y_r[i] = fn(y_r[i] + b[i]) for r < rows, y_r =
 * y + r ys, i < n: an epilogue's bias add and activation in one pass (the
 * float32 add, then fn, as the unfused add and activation round them;
 * cpu_act_rows_f32).  The whole vectors four at a time (fn_x4), the last
 * partial one masked. */
#define VL_ROWS(L, name, fn)                                                  \
    VL##L##_TARGET static void name(size_t rows, size_t n, float *y,          \
                                    size_t ys, const float *b)                \
    {                                                                         \
        const size_t W = VL##L##_W;                                           \
        for (size_t r = 0; r < rows; r++, y += ys) {                          \
            size_t i = 0;                                                     \
            for (; i + 4 * W <= n; i += 4 * W) {                              \
                VL##L##_T v[4], u[4];                                         \
                for (int j = 0; j < 4; j++) {                                 \
                    v[j] = VL##L##_ADD(VL##L##_LOAD(y + i + j * W),          \
                                       VL##L##_LOAD(b + i + j * W));         \
                }                                                             \
                fn##_x4(v, u);                                                \
                for (int j = 0; j < 4; j++) {                                 \
                    VL##L##_STORE(y + i + j * W, u[j]);                       \
                }                                                             \
            }                                                                 \
            for (; i + W <= n; i += W) {                                      \
                VL##L##_STORE(y + i, fn(VL##L##_ADD(VL##L##_LOAD(y + i),     \
                                                    VL##L##_LOAD(b + i))));  \
            }                                                                 \
            if (i < n) {                                                      \
                const VL##L##_MASK_T m = VL##L##_MASK(n - i);                 \
                VL##L##_MSTORE(y + i, m,                                      \
                               fn(VL##L##_ADD(VL##L##_MLOAD(m, y + i),       \
                                              VL##L##_MLOAD(m, b + i))));    \
            }                                                                 \
        }                                                                     \
    }
#define VL512_ADD _mm512_add_ps
#define VL512_STORE _mm512_storeu_ps
#define VL256_ADD _mm256_add_ps
#define VL256_STORE _mm256_storeu_ps

/* the loops of level L (suffix S, intrinsics prefix P): exp_S, sigmoid_S,
 * ..., and the streamed exp_S_nt, sigmoid_S_nt, gelu_S_nt, relu_S_nt */
#define VL_LEVEL(L, S, P)                                                     \
    VL_LOOP(L, exp_##S, exp##L, P##_storeu_ps, 0)                             \
    VL_LOOP(L, sigmoid_##S, sigmoid##L, P##_storeu_ps, 0)                     \
    VL_LOOP(L, gelu_##S, gelu##L, P##_storeu_ps, 0)                           \
    VL_LOOP(L, tanh_##S, tanh##L, P##_storeu_ps, 0)                           \
    VL_LOOP(L, erf_##S, erf##L, P##_storeu_ps, 0)                             \
    VL_LOOP(L, silu_##S, silu##L, P##_storeu_ps, 0)                           \
    VL_LOOP(L, exp_##S##_nt, exp##L, P##_stream_ps, 1)                        \
    VL_LOOP(L, sigmoid_##S##_nt, sigmoid##L, P##_stream_ps, 1)                \
    VL_LOOP(L, gelu_##S##_nt, gelu##L, P##_stream_ps, 1)                      \
    VL_LOOP(L, relu_##S##_nt, relu##L, P##_stream_ps, 1)                      \
    VL_ROWS(L, exp_##S##_rows, exp##L)                                        \
    VL_ROWS(L, sigmoid_##S##_rows, sigmoid##L)                                \
    VL_ROWS(L, gelu_##S##_rows, gelu##L)                                      \
    VL_ROWS(L, tanh_##S##_rows, tanh##L)                                      \
    VL_ROWS(L, erf_##S##_rows, erf##L)                                        \
    VL_ROWS(L, silu_##S##_rows, silu##L)
VL_LEVEL(512, avx512, _mm512)
VL_LEVEL(256, avx2, _mm256)
#undef VL_LEVEL

typedef void (*vl_loop)(size_t, const float *, float *);

/* the loop of f at the CPU's level (nt: the streamed one), or NULL */
static vl_loop
vl_pick(vl_fn f, bool nt)
{
    static const vl_loop at512[2][7] = {
        { exp_avx512, sigmoid_avx512, gelu_avx512, tanh_avx512, erf_avx512,
          silu_avx512, NULL },
        { exp_avx512_nt, sigmoid_avx512_nt, gelu_avx512_nt, NULL, NULL, NULL,
          relu_avx512_nt },
    };
    static const vl_loop at256[2][7] = {
        { exp_avx2, sigmoid_avx2, gelu_avx2, tanh_avx2, erf_avx2, silu_avx2,
          NULL },
        { exp_avx2_nt, sigmoid_avx2_nt, gelu_avx2_nt, NULL, NULL, NULL,
          relu_avx2_nt },
    };
    if ((unsigned)f > VL_RELU || !cpu_config_vm_twins()) {
        return NULL;
    }
    if (cpu_has_avx512()) {
        return at512[nt][f];
    }
    return cpu_isa() >= CPU_ISA_AVX2 ? at256[nt][f] : NULL;
}

bool
vl_map(vl_fn f, size_t n, const float *x, float *y)
{
    vl_loop l = vl_pick(f, false);
    if (l) {
        l(n, x, y);
    }
    return l != NULL;
}

bool
vl_map_rows(vl_fn f, size_t rows, size_t n, float *y, size_t ys,
            const float *b)
{
    typedef void (*rows_loop)(size_t, size_t, float *, size_t, const float *);
    static const rows_loop at512[6] = {
        exp_avx512_rows, sigmoid_avx512_rows, gelu_avx512_rows,
        tanh_avx512_rows, erf_avx512_rows, silu_avx512_rows,
    };
    static const rows_loop at256[6] = {
        exp_avx2_rows, sigmoid_avx2_rows, gelu_avx2_rows, tanh_avx2_rows,
        erf_avx2_rows, silu_avx2_rows,
    };
    vl_loop l = vl_pick(f, false); /* NULL: no twin here (or VL_RELU) */
    if (!l) {
        return false;
    }
    if (!b) { /* no add: the plain loop on each row (y + 0 is not y) */
        for (size_t r = 0; r < rows; r++) {
            l(n, y + r * ys, y + r * ys);
        }
        return true;
    }
    (cpu_has_avx512() ? at512 : at256)[f](rows, n, y, ys, b);
    return true;
}

bool
vl_map_nt(vl_fn f, size_t n, const float *x, float *y)
{
    vl_loop l = ((uintptr_t)y & 3) == 0 ? vl_pick(f, true) : NULL;
    if (l) {
        l(n, x, y);
    }
    return l != NULL;
}

/* streamed copies of results just written to an L1 buffer: 64-byte
 * stores at AVX-512, 32-byte at AVX2 (a quarter, a half of the
 * instructions of the SSE2 copy, which is a sixth of a sigmoid's) */
#define COPY_NT(name, TARGET, VW, LOAD, STREAM)                               \
    TARGET static void name(float *dst, const float *src, size_t n)           \
    {                                                                         \
        size_t i = 0;                                                         \
        for (; i < n && ((uintptr_t)(dst + i) & (4 * VW - 1)); i++) {         \
            dst[i] = src[i];                                                  \
        }                                                                     \
        for (; i + VW <= n; i += VW) {                                        \
            STREAM(dst + i, LOAD(src + i));                                   \
        }                                                                     \
        for (; i < n; i++) {                                                  \
            dst[i] = src[i];                                                  \
        }                                                                     \
    }
COPY_NT(copy_nt_avx512, __attribute__((target("avx512f"))), 16,
        _mm512_loadu_ps, _mm512_stream_ps)
COPY_NT(copy_nt_avx2, __attribute__((target("arch=x86-64-v3"))), 8,
        _mm256_loadu_ps, _mm256_stream_ps)
#undef COPY_NT

void
vl_copy_nt(float *dst, const float *src, size_t n)
{
    if (cpu_has_avx512()) {
        copy_nt_avx512(dst, src, n);
    } else if (cpu_isa() >= CPU_ISA_AVX2) {
        copy_nt_avx2(dst, src, n);
    } else {
        cpu_copy_nt(dst, src, n * sizeof(float));
    }
}

/* add sub mul div of float32 with streaming stores (see cpu_nt_bytes);
 * the same operations, so the same results: 64-byte stores on AVX-512,
 * 32-byte on AVX2 (a quarter, a half of the SSE loop's instructions) */
#define NT_LOOP(VW, LOAD, STREAM, vop)                                        \
    for (; i + VW <= n; i += VW) {                                            \
        STREAM(y + i, vop(LOAD(a + i), LOAD(b + i)));                         \
    }
#define NT_BINARY(name, TARGET, VW, P)                                        \
    TARGET static size_t name(int op, size_t n, const float *a,               \
                              const float *b, float *y)                       \
    {                                                                         \
        size_t i = 0;                                                         \
        switch (op) {                                                         \
        case 0: NT_LOOP(VW, P##_loadu_ps, P##_stream_ps, P##_add_ps) break;  \
        case 1: NT_LOOP(VW, P##_loadu_ps, P##_stream_ps, P##_sub_ps) break;  \
        case 2: NT_LOOP(VW, P##_loadu_ps, P##_stream_ps, P##_mul_ps) break;  \
        default: NT_LOOP(VW, P##_loadu_ps, P##_stream_ps, P##_div_ps) break; \
        }                                                                     \
        return i;                                                             \
    }
NT_BINARY(binary_nt512, __attribute__((target("avx512f"))), 16, _mm512)
NT_BINARY(binary_nt256, __attribute__((target("arch=x86-64-v3"))), 8, _mm256)
#undef NT_BINARY
#undef NT_LOOP

size_t
vl_nt_align(void)
{
    return cpu_has_avx512() ? 64 : cpu_isa() >= CPU_ISA_AVX2 ? 32 : 0;
}

size_t
vl_binary_nt(int op, size_t n, const float *a, const float *b, float *y)
{
    if (cpu_has_avx512()) {
        return binary_nt512(op, n, a, b, y);
    }
    return cpu_isa() >= CPU_ISA_AVX2 ? binary_nt256(op, n, a, b, y) : 0;
}

/* GPT-2's tanh gelu in registers (vl_gelu_tanh): each step the float32
 * operation its node computes, in the graph's order -- the cube in double
 * as pow_int_f32 rounds it, the tanh the level's twin, the operands of the
 * two operations of two values in the nodes' order (where both are NaN
 * the first one's payload wins) -- so the values of the operators one by
 * one; every vector through a lane mask (the last one partial) */
__attribute__((target("avx512f"))) static void
tgelu_avx512(const float k[4], int order, size_t n, const float *x, float *y)
{
    const __m512 ka = _mm512_set1_ps(k[0]), kb = _mm512_set1_ps(k[1]);
    const __m512 kc = _mm512_set1_ps(k[2]), kd = _mm512_set1_ps(k[3]);
    for (size_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff
                                        : (__mmask16)((1u << (n - i)) - 1);
        const __m512 t = _mm512_maskz_loadu_ps(m, x + i);
        __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(t));
        __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(
            _mm512_extractf64x4_pd(_mm512_castps_pd(t), 1)));
        lo = _mm512_mul_pd(_mm512_mul_pd(lo, lo), lo);
        hi = _mm512_mul_pd(_mm512_mul_pd(hi, hi), hi);
        const __m512 a = _mm512_castpd_ps(_mm512_insertf64x4(
            _mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
            _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
        const __m512 b = _mm512_mul_ps(a, kb);
        const __m512 c = order & 1 ? _mm512_add_ps(b, t) : _mm512_add_ps(t, b);
        const __m512 e = tanh512(_mm512_mul_ps(c, kc));
        const __m512 g = _mm512_mul_ps(t, ka), f = _mm512_add_ps(e, kd);
        _mm512_mask_storeu_ps(y + i, m, order & 2 ? _mm512_mul_ps(f, g)
                                                  : _mm512_mul_ps(g, f));
    }
}

__attribute__((target("arch=x86-64-v3"))) static void
tgelu_avx2(const float k[4], int order, size_t n, const float *x, float *y)
{
    const __m256 ka = _mm256_set1_ps(k[0]), kb = _mm256_set1_ps(k[1]);
    const __m256 kc = _mm256_set1_ps(k[2]), kd = _mm256_set1_ps(k[3]);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (size_t i = 0; i < n; i += 8) {
        const __m256i m = _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n - i >= 8 ? 8 : (int)(n - i)), lane);
        const __m256 t = _mm256_maskload_ps(x + i, m);
        __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(t));
        __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1));
        lo = _mm256_mul_pd(_mm256_mul_pd(lo, lo), lo);
        hi = _mm256_mul_pd(_mm256_mul_pd(hi, hi), hi);
        const __m256 a = _mm256_insertf128_ps(
            _mm256_castps128_ps256(_mm256_cvtpd_ps(lo)), _mm256_cvtpd_ps(hi), 1);
        const __m256 b = _mm256_mul_ps(a, kb);
        const __m256 c = order & 1 ? _mm256_add_ps(b, t) : _mm256_add_ps(t, b);
        const __m256 e = tanh256(_mm256_mul_ps(c, kc));
        const __m256 g = _mm256_mul_ps(t, ka), f = _mm256_add_ps(e, kd);
        _mm256_maskstore_ps(y + i, m, order & 2 ? _mm256_mul_ps(f, g)
                                                : _mm256_mul_ps(g, f));
    }
}

bool
vl_gelu_tanh(const float k[4], int order, size_t n, const float *x, float *y)
{
    if (!cpu_config_vm_twins()) {
        return false;
    }
    if (cpu_has_avx512()) {
        tgelu_avx512(k, order, n, x, y);
        return true;
    }
    if (cpu_isa() >= CPU_ISA_AVX2) {
        tgelu_avx2(k, order, n, x, y);
        return true;
    }
    return false;
}
#else /* not x86-64 with GCC-compatible intrinsics: the portable loops */
bool
vl_map(vl_fn f, size_t n, const float *x, float *y)
{
    (void)f, (void)n, (void)x, (void)y;
    return false;
}

bool
vl_map_nt(vl_fn f, size_t n, const float *x, float *y)
{
    (void)f, (void)n, (void)x, (void)y;
    return false;
}

bool
vl_map_rows(vl_fn f, size_t rows, size_t n, float *y, size_t ys,
            const float *b)
{
    (void)f, (void)rows, (void)n, (void)y, (void)ys, (void)b;
    return false;
}

void
vl_copy_nt(float *dst, const float *src, size_t n)
{
    cpu_copy_nt(dst, src, n * sizeof(float));
}

size_t
vl_nt_align(void)
{
    return 0;
}

bool
vl_gelu_tanh(const float k[4], int order, size_t n, const float *x, float *y)
{
    (void)k, (void)order, (void)n, (void)x, (void)y;
    return false;
}

size_t
vl_binary_nt(int op, size_t n, const float *a, const float *b, float *y)
{
    (void)op, (void)n, (void)a, (void)b, (void)y;
    return 0;
}
#endif

/* pow of float32 on AVX-512, 8 lanes at a time in double precision:
 * a^b = 2^(b log2 a) with log2 from a's exponent and 2 atanh(s) / ln 2 of
 * its mantissa m in [sqrt(1/2), sqrt(2)), s = (m - 1) / (m + 1) (series to
 * s^15, relative error below 1e-14), and 2^t as 2^round(t) times a Taylor
 * polynomial of degree 11 in (t - round(t)) ln 2 (below 1e-14): the double
 * result is within about 1e-13 of a^b, so rounded to float32 it is the
 * correctly rounded value but for the rare ties of the double rounding (1
 * ulp at most).  A negative base with an integer exponent is |a|^b, negated
 * for an odd exponent, as C's pow says (GELU's tanh form cubes inputs of
 * both signs).  Lanes where a is zero, not finite, or negative with an
 * exponent that is not an integer, b is not finite, or |b log2 |a|| >= 125
 * (results that overflow, go subnormal, or are near either) take powf,
 * which gives C's special cases (pow(x, 0) = 1, pow(1, y) = 1, NaN,
 * infinities, zeros).  ~6x glibc's powf (an LRN's x^0.75 on 580 K
 * elements: 1.69 -> 0.3 ms on 2 threads). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
/* c[0] + x (c[1] + x (... + x c[n - 1])), lane by lane */
__attribute__((target("arch=x86-64-v4"), always_inline)) static inline __m512d
horner_pd(__m512d x, const double *c, int n)
{
    __m512d p = _mm512_set1_pd(c[n - 1]);
    for (int k = n - 2; k >= 0; k--) {
        p = _mm512_fmadd_pd(p, x, _mm512_set1_pd(c[k]));
    }
    return p;
}

/* the series of atanh(s) / s in z = s^2, and of e^f (1 / k!) */
static const double POW_LOG[8] = { 1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7,
                                   1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15 };
static const double POW_EXP[12] = { 1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24,
                                    1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                    1.0 / 40320, 1.0 / 362880,
                                    1.0 / 3628800, 1.0 / 39916800 };

__attribute__((target("arch=x86-64-v4"))) static size_t
pow_f32_avx512(size_t n, const float *a, const float *b, float *y)
{
    const __m512d one = _mm512_set1_pd(1.0), sqrt2 = _mm512_set1_pd(1.4142135623730951);
    const __m512d inv_ln2 = _mm512_set1_pd(1.4426950408889634);
    const __m512d ln2 = _mm512_set1_pd(0.6931471805599453);
    const __m512d lim = _mm512_set1_pd(125.0);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 xa = _mm256_loadu_ps(a + i), xb = _mm256_loadu_ps(b + i);
        __m512d xs = _mm512_cvtps_pd(xa), e = _mm512_cvtps_pd(xb);
        __m512d x = _mm512_abs_pd(xs);
        /* a negative base: an integer exponent (odd: the result negated) */
        __mmask8 neg = _mm512_cmp_pd_mask(xs, _mm512_setzero_pd(), _CMP_LT_OQ);
        const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
        __mmask8 whole = _mm512_cmp_pd_mask(_mm512_roundscale_pd(e, rn), e, _CMP_EQ_OQ);
        __m512d h = _mm512_mul_pd(e, _mm512_set1_pd(0.5));
        __mmask8 odd = whole & _mm512_cmp_pd_mask(_mm512_roundscale_pd(h, rn), h,
                                                  _CMP_NEQ_UQ);
        /* |x| > 0 and finite, e finite (|e| < inf is false for NaN) */
        __mmask8 ok = _mm512_cmp_pd_mask(x, _mm512_setzero_pd(), _CMP_GT_OQ) &
                      _mm512_cmp_pd_mask(x, _mm512_set1_pd(INFINITY), _CMP_LT_OQ) &
                      _mm512_cmp_pd_mask(_mm512_abs_pd(e), _mm512_set1_pd(INFINITY),
                                         _CMP_LT_OQ) &
                      (__mmask8)(~neg | whole);
        /* x = m 2^k, m in [1, 2) -> [sqrt(1/2), sqrt(2)) */
        __m512d k = _mm512_getexp_pd(x);
        __m512d m = _mm512_getmant_pd(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
        __mmask8 big = _mm512_cmp_pd_mask(m, sqrt2, _CMP_GT_OQ);
        m = _mm512_mask_mul_pd(m, big, m, _mm512_set1_pd(0.5));
        k = _mm512_mask_add_pd(k, big, k, one);
        __m512d s = _mm512_div_pd(_mm512_sub_pd(m, one), _mm512_add_pd(m, one));
        __m512d p = horner_pd(_mm512_mul_pd(s, s), POW_LOG, 8);
        /* log2 x = k + 2 s p / ln 2 */
        __m512d l2 = _mm512_fmadd_pd(_mm512_mul_pd(_mm512_add_pd(s, s), p), inv_ln2, k);
        __m512d t = _mm512_mul_pd(e, l2);
        ok &= _mm512_cmp_pd_mask(_mm512_abs_pd(t), lim, _CMP_LT_OQ);
        __m512d r = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m512d f = _mm512_mul_pd(_mm512_sub_pd(t, r), ln2);
        __m512d q = horner_pd(f, POW_EXP, 12);
        __m512d v = _mm512_scalef_pd(q, r);
        v = _mm512_mask_sub_pd(v, neg & odd, _mm512_setzero_pd(), v);
        __m256 res = _mm512_cvtpd_ps(v);
        if (ok != 0xff) { /* y may be a or b: the lanes as loaded */
            float va[8], vb[8], vy[8];
            _mm256_storeu_ps(va, xa);
            _mm256_storeu_ps(vb, xb);
            _mm256_storeu_ps(vy, res);
            for (unsigned l = 0; l < 8; l++) {
                if (!(ok >> l & 1)) {
                    vy[l] = powf(va[l], vb[l]);
                }
            }
            res = _mm256_loadu_ps(vy);
        }
        _mm256_storeu_ps(y + i, res);
    }
    return i;
}

/* The same at AVX2 + FMA on two vectors of 4 doubles: the exponent and
 * mantissa of |a| (a normal double: a float32 widened) from its bits where
 * AVX-512 has getexp / getmant, 2^round(t) built from its bits where it
 * has scalef (the product exact either way: |t| < 125), the masks as
 * lanes of all ones: the same operations in the same order, so the same
 * results bit for bit (tests/ops/test_binary.py's pow tests at every
 * level). */
#define V3 __attribute__((target("arch=x86-64-v3"), always_inline)) static inline
/* pow_f32_avx512's body on NV vectors of 4 lanes, step by step across
 * the vectors: each vector's two Horner chains (19 dependent multiply-adds
 * and a division) are latencies that one vector at a time left the core
 * waiting on.  x^0.75 on 580 K float32 (2 threads, min of 100, in- and
 * output copies included): 8 floats a step 1.16-1.28 ms, 16 a step
 * 0.77-0.92; glibc's powf (baseline) 1.28-1.30, AVX-512 0.57-0.71.
 * ok[v]: the lanes of vector v computed here. */
#define VFOR _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)
V3 void
pow_avx2_lanes(const __m256d *xs, const __m256d *e, __m128 *out, int *ok,
               const int NV)
{
    const __m256d one = _mm256_set1_pd(1.0), zero = _mm256_setzero_pd();
    const __m256d inf = _mm256_set1_pd(INFINITY), sign = _mm256_set1_pd(-0.0);
    const __m256d two52 = _mm256_castsi256_pd(_mm256_set1_epi64x(0x4330000000000000LL));
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m256d x[4], neg[4], odd[4], good[4], k[4], m[4], s[4], t[4], q[4], r[4];
    VFOR {
        x[v] = _mm256_andnot_pd(sign, xs[v]);
        neg[v] = _mm256_cmp_pd(xs[v], zero, _CMP_LT_OQ);
        __m256d whole = _mm256_cmp_pd(_mm256_round_pd(e[v], rn), e[v], _CMP_EQ_OQ);
        __m256d h = _mm256_mul_pd(e[v], _mm256_set1_pd(0.5));
        odd[v] = _mm256_and_pd(whole, _mm256_cmp_pd(_mm256_round_pd(h, rn), h, _CMP_NEQ_UQ));
        __m256d g = _mm256_and_pd(_mm256_cmp_pd(x[v], zero, _CMP_GT_OQ),
                                  _mm256_cmp_pd(x[v], inf, _CMP_LT_OQ));
        g = _mm256_and_pd(g, _mm256_cmp_pd(_mm256_andnot_pd(sign, e[v]), inf, _CMP_LT_OQ));
        /* ~neg | whole */
        good[v] = _mm256_and_pd(g, _mm256_or_pd(_mm256_andnot_pd(neg[v], _mm256_castsi256_pd(
                                                    _mm256_set1_epi64x(-1))), whole));
        /* x = m 2^k: k = the biased exponent - 1023 (as a double by
         * 2^52's mantissa), m = x's mantissa with 1.0's exponent */
        const __m256i bits = _mm256_castpd_si256(x[v]);
        k[v] = _mm256_sub_pd(
            _mm256_or_pd(two52, _mm256_castsi256_pd(_mm256_srli_epi64(bits, 52))),
            _mm256_set1_pd(4503599627370496.0 + 1023.0));
        m[v] = _mm256_castsi256_pd(_mm256_or_si256(
            _mm256_and_si256(bits, _mm256_set1_epi64x(0x000FFFFFFFFFFFFFLL)),
            _mm256_set1_epi64x(0x3FF0000000000000LL)));
        __m256d big = _mm256_cmp_pd(m[v], _mm256_set1_pd(1.4142135623730951), _CMP_GT_OQ);
        m[v] = _mm256_blendv_pd(m[v], _mm256_mul_pd(m[v], _mm256_set1_pd(0.5)), big);
        k[v] = _mm256_blendv_pd(k[v], _mm256_add_pd(k[v], one), big);
        s[v] = _mm256_div_pd(_mm256_sub_pd(m[v], one), _mm256_add_pd(m[v], one));
        t[v] = _mm256_mul_pd(s[v], s[v]);         /* z = s^2 */
        q[v] = _mm256_set1_pd(POW_LOG[7]);
    }
    for (int c = 6; c >= 0; c--) { /* atanh(s) / s in z */
        VFOR {
            q[v] = _mm256_fmadd_pd(q[v], t[v], _mm256_set1_pd(POW_LOG[c]));
        }
    }
    VFOR {
        /* log2 x = k + 2 s p / ln 2; t = e log2 x */
        __m256d l2 = _mm256_fmadd_pd(_mm256_mul_pd(_mm256_add_pd(s[v], s[v]), q[v]),
                                     _mm256_set1_pd(1.4426950408889634), k[v]);
        t[v] = _mm256_mul_pd(e[v], l2);
        good[v] = _mm256_and_pd(good[v], _mm256_cmp_pd(_mm256_andnot_pd(sign, t[v]),
                                                       _mm256_set1_pd(125.0), _CMP_LT_OQ));
        r[v] = _mm256_round_pd(t[v], rn);
        s[v] = _mm256_mul_pd(_mm256_sub_pd(t[v], r[v]), _mm256_set1_pd(0.6931471805599453));
        q[v] = _mm256_set1_pd(POW_EXP[11]);
    }
    for (int c = 10; c >= 0; c--) { /* e^f */
        VFOR {
            q[v] = _mm256_fmadd_pd(q[v], s[v], _mm256_set1_pd(POW_EXP[c]));
        }
    }
    VFOR {
        /* 2^r for the good lanes (|r| <= 125); the others are replaced */
        __m256i ri = _mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(_mm256_and_pd(good[v], r[v])));
        __m256d p2 = _mm256_castsi256_pd(_mm256_slli_epi64(
            _mm256_add_epi64(ri, _mm256_set1_epi64x(1023)), 52));
        __m256d w = _mm256_mul_pd(q[v], p2);
        w = _mm256_blendv_pd(w, _mm256_sub_pd(zero, w), _mm256_and_pd(neg[v], odd[v]));
        ok[v] = _mm256_movemask_pd(good[v]);
        out[v] = _mm256_cvtpd_ps(w);
    }
}
#undef VFOR

/* NV vectors of 4 floats at a and b -> y (y may be a or b) */
V3 void
pow_avx2_step(const float *a, const float *b, float *y, const int NV)
{
    __m256d xs[4], e[4];
    __m128 out[4];
    int ok[4];
    for (int v = 0; v < NV; v++) {
        xs[v] = _mm256_cvtps_pd(_mm_loadu_ps(a + 4 * v));
        e[v] = _mm256_cvtps_pd(_mm_loadu_ps(b + 4 * v));
    }
    pow_avx2_lanes(xs, e, out, ok, NV);
    float va[16], vb[16];
    bool all = true;
    for (int v = 0; v < NV; v++) {
        all = all && ok[v] == 0xf;
    }
    if (!all) { /* the lanes as loaded, before y is written */
        memcpy(va, a, (size_t)NV * 4 * sizeof(float));
        memcpy(vb, b, (size_t)NV * 4 * sizeof(float));
    }
    for (int v = 0; v < NV; v++) {
        _mm_storeu_ps(y + 4 * v, out[v]);
    }
    if (!all) {
        for (int l = 0; l < 4 * NV; l++) {
            if (!(ok[l / 4] >> (l % 4) & 1)) {
                y[l] = powf(va[l], vb[l]);
            }
        }
    }
}

__attribute__((target("arch=x86-64-v3"))) static size_t
pow_f32_avx2(size_t n, const float *a, const float *b, float *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        pow_avx2_step(a + i, b + i, y + i, 4);
    }
    for (; i + 4 <= n; i += 4) {
        pow_avx2_step(a + i, b + i, y + i, 1);
    }
    return i;
}
#undef V3
#endif

size_t
vl_pow(size_t n, const float *a, const float *b, float *y)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (n >= 8 && cpu_has_avx512()) {
        return pow_f32_avx512(n, a, b, y);
    }
    if (n >= 8 && cpu_isa() >= CPU_ISA_AVX2) {
        return pow_f32_avx2(n, a, b, y);
    }
#endif
    (void)n, (void)a, (void)b, (void)y;
    return 0;
}
