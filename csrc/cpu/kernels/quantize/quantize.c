/* quantize.c -- CPU kernels of quantizeLinear and dequantizeLinear.
 *
 * scale and zeroPoint are blockwise broadcast to input's shape
 * (#blockwise-broadcasting): along dimension d, each of their elements
 * covers input.shape[d] / scale.shape[d] consecutive input elements.  This
 * covers per-tensor (all ones), per-axis (input's size along one axis, ones
 * elsewhere) and block-wise quantization.
 *
 *   quantizeLinear:   y = saturate(roundEven(x / scale) + zeroPoint)
 *   dequantizeLinear: y = (x - zeroPoint) * scale
 *
 * Both are computed in double precision from the exact input values (float16
 * values widened exactly), which is the float64 formula rounded once:
 *   - quantize: x / scale is rounded to double, roundEven is rint() (round
 *     half to even), the zero point is added exactly, then the result is
 *     saturated to the output type's range ([0, 255] for uint8, [-128, 127]
 *     for int8, the full int32 / uint32 ranges); +-Inf saturate, NaN gives 0
 *     (as the spec's emulation through cast, which maps NaN to 0 here).
 *   - dequantize: x - zeroPoint is exact in double; the product with scale is
 *     rounded to double, then to float32, or to float16 in one correct
 *     rounding (double -> float32 rounded to odd, then -> float16 to nearest
 *     even, which equals a direct double -> float16 rounding).
 * scale should be positive (the spec leaves other values to the
 * implementation): 0 gives +-Inf / NaN in the division, saturated as above. */
#include <math.h>
#include <string.h>

#include "../../cpu.h"

#define QCH 1024 /* elements per chunk */

/* ---- blockwise broadcasting map ----------------------------------------- */
typedef struct qmap {
    uint32_t rank;               /* >= 1 after merging */
    uint64_t shape[WNN_MAX_RANK]; /* input's dimensions */
    uint64_t block[WNN_MAX_RANK]; /* input dim / scale dim */
    uint64_t sstride[WNN_MAX_RANK]; /* scale's element strides */
} qmap;

/* The merged shapes lowered at compile (compiler/lower/quantize.c). */
static void
qmap_from(qmap *m, const wnn_quant_params *q)
{
    m->rank = q->rank;
    for (uint32_t d = 0; d < q->rank; d++) {
        m->shape[d] = q->shape[d];
        m->block[d] = q->block[d];
        m->sstride[d] = q->sstride[d];
    }
}

/* Offset in scale / zeroPoint of the first element of input row `row` (all
 * dimensions but the last). */
static uint64_t
qmap_row(const qmap *m, uint64_t row)
{
    uint64_t off = 0;
    for (int d = (int)m->rank - 2; d >= 0; d--) {
        uint64_t i = row % m->shape[d];
        row /= m->shape[d];
        off += (i / m->block[d]) * m->sstride[d];
    }
    return off;
}

/* Runs body(x_offset, n, scale, zero) over every run of input elements that
 * share one scale / zeroPoint element.  The work is cut into tasks of about
 * QCH elements: a long block (per-tensor, per-axis with a long inner run) is
 * split into chunks, short blocks are grouped, so that every layout spreads
 * over the threads. */
typedef void (*run_fn)(const cpu_call *k, uint64_t off, uint64_t n, double s,
                       double z);

typedef struct qblock_job {
    const cpu_call *k;
    run_fn body;
    qmap m;
    uint64_t last;
    uint64_t bl;
    uint64_t nb;
    uint64_t sstep;
    const void *sp;
    const void *zp;
    wnn_dtype st;
    wnn_dtype zt;
    bool split;
    uint64_t cpb;
    uint64_t bpc;
    uint64_t per_row;
} qblock_job;

static void
qblock_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const qblock_job *j_ = p_;
    const cpu_call *k = j_->k;
    run_fn body = j_->body;
    qmap m = j_->m;
    uint64_t last = j_->last;
    uint64_t bl = j_->bl;
    uint64_t nb = j_->nb;
    uint64_t sstep = j_->sstep;
    const void *sp = j_->sp;
    const void *zp = j_->zp;
    wnn_dtype st = j_->st;
    wnn_dtype zt = j_->zt;
    bool split = j_->split;
    uint64_t cpb = j_->cpb;
    uint64_t bpc = j_->bpc;
    uint64_t per_row = j_->per_row;
    for (uint64_t t = (uint64_t)b_; t < (uint64_t)e_; t++) {
        uint64_t row = t / per_row, c = t % per_row;
        uint64_t s0 = qmap_row(&m, row), x0 = row * last;
        if (split) {
            uint64_t b = c / cpb, e = (c % cpb) * QCH;
            uint64_t n = bl - e < QCH ? bl - e : QCH;
            uint64_t so = s0 + b * sstep;
            body(k, x0 + b * bl + e, n, wnn_load_num(sp, st, so),
                 wnn_load_num(zp, zt, so));
        } else {
            uint64_t b1 = (c + 1) * bpc < nb ? (c + 1) * bpc : nb;
            for (uint64_t b = c * bpc; b < b1; b++) {
                uint64_t so = s0 + b * sstep;
                body(k, x0 + b * bl, bl, wnn_load_num(sp, st, so),
                     wnn_load_num(zp, zt, so));
            }
        }
    }
}

static void
for_each_block(const cpu_call *k, run_fn body)
{
    qmap m;
    qmap_from(&m, &k->lowered->u.quant);
    uint64_t last = m.shape[m.rank - 1], bl = m.block[m.rank - 1];
    uint64_t nb = last / bl, total = wnn_desc_elements(&k->in_desc[0]);
    uint64_t rows = total / last, sstep = m.sstride[m.rank - 1];
    const void *sp = k->in[1], *zp = k->in[2];
    wnn_dtype st = k->in_desc[1].dtype, zt = k->in_desc[2].dtype;
    bool split = bl >= QCH;                          /* chunks of one block */
    uint64_t cpb = split ? (bl + QCH - 1) / QCH : 1; /* chunks per block    */
    uint64_t bpc = split ? 1 : QCH / bl;             /* blocks per chunk    */
    uint64_t per_row = split ? nb * cpb : (nb + bpc - 1) / bpc;
    uint64_t tasks = rows * per_row;
    int nt = total >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
    if ((uint64_t)nt > tasks) {
        nt = (int)tasks;
    }
    {
        qblock_job j_ = {.k = k, .body = body, .m = m, .last = last, .bl = bl,
                         .nb = nb, .sstep = sstep, .sp = sp, .zp = zp,
                         .st = st, .zt = zt, .split = split, .cpb = cpb,
                         .bpc = bpc, .per_row = per_row};
        cpu_parallel_for((int64_t)(tasks), nt, qblock_body, &j_);
    }
}

/* ---- quantizeLinear ----------------------------------------------------- */
/* v in range -> (T)v; below -> lo; above -> hi; NaN -> 0 */
#define QLOOP(T, LO, HI)                                                  \
    do {                                                                  \
        T *y = (T *)k->out[0] + off + c;                                  \
        for (size_t j = 0; j < n1; j++) {                                 \
            double v = wnn_quantize_value((double)xf[j], s, z);           \
            y[j] = (T)wnn_saturate(v, (LO), (HI));                        \
        }                                                                 \
    } while (0)

/* float32 -> uint8 / int8, the loop above in a form GCC vectorises (rint
 * as a rounding instruction on the v3 / v4 clones, the saturation as
 * min / max, NaN -> 0 by a comparison with itself), chunk by chunk, by a
 * multiplication with 1 / scale and by the division only where a quotient
 * is within reach of a tie (QUANT_TIE, cpu.h): the same results.  A
 * quantized region's producers write float32 here (ResNet's activations
 * between regions). */
#define QFAST(NAME, T, LO, HI)                                                 \
    CPU_HOT_RET(static, , int, NAME##_chunk,                                   \
                (const float *x, T *y, size_t n, double s, double is,          \
                 double z),                                                    \
                (x, y, n, s, is, z))                                           \
    {                                                                          \
        int near = 0;                                                          \
        (void)s;                                                               \
        (void)is;                                                              \
        for (size_t j = 0; j < n; j++) {                                       \
            double q = QDIV, v = __builtin_rint(q);                            \
            near += __builtin_fabs(q - v) > QUANT_TIE;                         \
            v += z;                                                            \
            double c = v < (LO) ? (LO) : v;                                    \
            c = c > (HI) ? (HI) : c;                                           \
            c = c == c ? c : 0.0;                                              \
            y[j] = (T)(int32_t)c;                                              \
        }                                                                      \
        return near;                                                           \
    }
#define QDIV (double)x[j] * is
QFAST(quantize_f32_u8_mul, uint8_t, 0.0, 255.0)
QFAST(quantize_f32_s8_mul, int8_t, -128.0, 127.0)
#undef QDIV
#define QDIV (double)x[j] / s
QFAST(quantize_f32_u8_div, uint8_t, 0.0, 255.0)
QFAST(quantize_f32_s8_div, int8_t, -128.0, 127.0)
#undef QDIV

/* The same loop in AVX-512: 16 floats (two vectors of doubles) to 16 int32
 * lanes; four of those packed to 64 bytes (vpackssdw, vpackuswb /
 * vpacksswb, exact on values already saturated, then the 128-bit lanes'
 * interleave undone by one permutation) and stored at once (a masked
 * vpmovdb store is slow on AMD's cores); the tail masked.  True where a
 * quotient came within reach of a tie. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
typedef struct q8v {
    __m512d is, z, lo, hi, tie;
    __m512 isf, zf, lof, hif, tief;
} q8v;

/* the constants of either level's loop (P: the intrinsics' prefix) */
#define Q8_CONSTS(P)                                                           \
    { P##_set1_pd(is), P##_set1_pd(z), P##_set1_pd(sgn ? -128.0 : 0.0),        \
      P##_set1_pd(sgn ? 127.0 : 255.0), P##_set1_pd(QUANT_TIE),                \
      P##_set1_ps((float)is), P##_set1_ps((float)z),                           \
      P##_set1_ps(sgn ? -128.0f : 0.0f), P##_set1_ps(sgn ? 127.0f : 255.0f),   \
      P##_set1_ps(Q8F_TIE) }

__attribute__((target("arch=x86-64-v4"), always_inline)) static inline __m512i
q8_16(const q8v *c, __m512 xv, __mmask8 *near)
{
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m512d h[2] = { _mm512_cvtps_pd(_mm512_castps512_ps256(xv)),
                     _mm512_cvtps_pd(_mm256_castpd_ps(
                         _mm512_extractf64x4_pd(_mm512_castps_pd(xv), 1))) };
    __m256i r[2];
    for (int k = 0; k < 2; k++) {
        const __m512d q = _mm512_mul_pd(h[k], c->is);
        __m512d v = _mm512_roundscale_pd(q, rn);
        *near |= _mm512_cmp_pd_mask(_mm512_abs_pd(_mm512_sub_pd(q, v)), c->tie,
                                    _CMP_GT_OQ);
        v = _mm512_add_pd(v, c->z);
        const __mmask8 nan = _mm512_cmp_pd_mask(v, v, _CMP_UNORD_Q);
        v = _mm512_min_pd(_mm512_max_pd(v, c->lo), c->hi);
        v = _mm512_mask_mov_pd(v, nan, _mm512_setzero_pd());
        r[k] = _mm512_cvttpd_epi32(v);
    }
    return _mm512_inserti64x4(_mm512_castsi256_si512(r[0]), r[1], 1);
}

/* The same 16 lanes in float32 first: x * (float)(1 / s) is within
 * 2^-22 |q| of the quotient, so it rounds as the quotient does wherever it
 * is more than Q8F_TIE from a half-integer and |q| < 1024 (beyond, every
 * 8-bit result saturates either way); a vector with a lane nearer a tie
 * takes the double path above.  (Only where 1 / s is a finite float32.) */
#define Q8F_TIE 0.499f
__attribute__((target("arch=x86-64-v4"), always_inline)) static inline __m512i
q8_16f(const q8v *c, __m512 xv, __mmask8 *near)
{
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 q = _mm512_mul_ps(xv, c->isf);
    __m512 v = _mm512_roundscale_ps(q, rn);
    if (_mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(q, v)), c->tief, _CMP_GT_OQ)) {
        return q8_16(c, xv, near);
    }
    v = _mm512_add_ps(v, c->zf);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    v = _mm512_min_ps(_mm512_max_ps(v, c->lof), c->hif);
    v = _mm512_mask_mov_ps(v, nan, _mm512_setzero_ps());
    return _mm512_cvttps_epi32(v);
}

__attribute__((target("arch=x86-64-v4"))) static bool
quantize_f32_8_avx512(const float *x, void *y, size_t n, double is, double z,
                      bool sgn)
{
    const q8v c = Q8_CONSTS(_mm512);
    /* the float32 path where 1 / s is a normal float32 */
    const bool f32 = __builtin_isnormal((float)is);
    const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9,
                                           5, 1, 12, 8, 4, 0);
    __mmask8 near = 0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512i w[4];
        for (int k = 0; k < 4; k++) {
            const __m512 xv = _mm512_loadu_ps(x + i + 16 * k);
            w[k] = f32 ? q8_16f(&c, xv, &near) : q8_16(&c, xv, &near);
        }
        const __m512i p0 = _mm512_packs_epi32(w[0], w[1]);
        const __m512i p1 = _mm512_packs_epi32(w[2], w[3]);
        const __m512i b = sgn ? _mm512_packs_epi16(p0, p1) : _mm512_packus_epi16(p0, p1);
        _mm512_storeu_si512((char *)y + i, _mm512_permutexvar_epi32(order, b));
    }
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xffff
                                        : (__mmask16)((1u << (n - i)) - 1);
        const __m512i w = q8_16(&c, _mm512_maskz_loadu_ps(m, x + i), &near);
        _mm_mask_storeu_epi8((char *)y + i, m, _mm512_cvtepi32_epi8(w));
    }
    return near != 0;
}

/* The same at AVX2 + FMA: 8 floats (two vectors of 4 doubles) to 8 int32
 * lanes, the same float32 first pass and double fallback, the ties as
 * there; four vectors packed to 32 bytes (vpackssdw, vpackuswb /
 * vpacksswb within the 128-bit lanes, undone by one vpermd) and stored at
 * once; the tail through a lane-masked load and a small buffer. */
typedef struct q8v2 {
    __m256d is, z, lo, hi, tie;
    __m256 isf, zf, lof, hif, tief;
} q8v2;

__attribute__((target("arch=x86-64-v3"), always_inline)) static inline __m128i
q8_4d(const q8v2 *c, __m256d h, int *near)
{
    const __m256d q = _mm256_mul_pd(h, c->is);
    __m256d v = _mm256_round_pd(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256d d = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(q, v));
    *near |= _mm256_movemask_pd(_mm256_cmp_pd(d, c->tie, _CMP_GT_OQ));
    v = _mm256_add_pd(v, c->z);
    const __m256d nan = _mm256_cmp_pd(v, v, _CMP_UNORD_Q);
    v = _mm256_min_pd(_mm256_max_pd(v, c->lo), c->hi);
    v = _mm256_andnot_pd(nan, v); /* NaN -> 0 */
    return _mm256_cvttpd_epi32(v);
}

__attribute__((target("arch=x86-64-v3"), always_inline)) static inline __m256i
q8_8(const q8v2 *c, __m256 xv, int *near)
{
    const __m128i lo = q8_4d(c, _mm256_cvtps_pd(_mm256_castps256_ps128(xv)), near);
    const __m128i hi = q8_4d(c, _mm256_cvtps_pd(_mm256_extractf128_ps(xv, 1)), near);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

__attribute__((target("arch=x86-64-v3"), always_inline)) static inline __m256i
q8_8f(const q8v2 *c, __m256 xv, int *near)
{
    const __m256 q = _mm256_mul_ps(xv, c->isf);
    __m256 v = _mm256_round_ps(q, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 d = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(q, v));
    if (_mm256_movemask_ps(_mm256_cmp_ps(d, c->tief, _CMP_GT_OQ))) {
        return q8_8(c, xv, near);
    }
    v = _mm256_add_ps(v, c->zf);
    const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    v = _mm256_min_ps(_mm256_max_ps(v, c->lof), c->hif);
    return _mm256_cvttps_epi32(_mm256_andnot_ps(nan, v));
}

__attribute__((target("arch=x86-64-v3"))) static bool
quantize_f32_8_avx2(const float *x, void *y, size_t n, double is, double z,
                    bool sgn)
{
    const q8v2 c = Q8_CONSTS(_mm256);
    const bool f32 = __builtin_isnormal((float)is);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    int near = 0;
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i w[4];
        for (int k = 0; k < 4; k++) {
            const __m256 xv = _mm256_loadu_ps(x + i + 8 * k);
            w[k] = f32 ? q8_8f(&c, xv, &near) : q8_8(&c, xv, &near);
        }
        const __m256i p0 = _mm256_packs_epi32(w[0], w[1]);
        const __m256i p1 = _mm256_packs_epi32(w[2], w[3]);
        const __m256i b = sgn ? _mm256_packs_epi16(p0, p1) : _mm256_packus_epi16(p0, p1);
        _mm256_storeu_si256((__m256i *)((char *)y + i),
                            _mm256_permutevar8x32_epi32(b, order));
    }
    for (; i < n; i += 8) {
        const int r = n - i < 8 ? (int)(n - i) : 8;
        const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(r),
                                             _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        int32_t w[8];
        _mm256_storeu_si256((__m256i *)w, q8_8(&c, _mm256_maskload_ps(x + i, m), &near));
        for (int k = 0; k < r; k++) { /* saturated already */
            if (sgn) {
                ((int8_t *)y)[i + k] = (int8_t)w[k];
            } else {
                ((uint8_t *)y)[i + k] = (uint8_t)w[k];
            }
        }
    }
    return near != 0;
}
#define QUANT_AVX512 1
#endif

/* chunk by chunk: by multiplication, the chunk again by division where a
 * quotient came within reach of a tie */
#define QRUN(NAME, T, SGN)                                                     \
    static void                                                                \
    NAME(const float *x, T *y, size_t n, double s, double z)                   \
    {                                                                          \
        const double is = 1.0 / s;                                             \
        const int v4 = QUANT_V4;                                               \
        for (size_t c = 0; c < n; c += QCH) {                                  \
            size_t m = n - c < QCH ? n - c : QCH;                              \
            if (v4 ? QUANT_V4_CHUNK(x + c, y + c, m, is, z, SGN)               \
                   : NAME##_mul_chunk(x + c, y + c, m, s, is, z) != 0) {       \
                NAME##_div_chunk(x + c, y + c, m, s, is, z);                   \
            }                                                                  \
        }                                                                      \
    }
#ifdef QUANT_AVX512
/* the vector loop of the CPU's level: AVX-512 (4), AVX2 (3), or none (0) */
#define QUANT_V4 (cpu_isa() >= CPU_ISA_AVX512 ? 4 : cpu_isa() >= CPU_ISA_AVX2 ? 3 : 0)
#define QUANT_V4_CHUNK(x, y, m, is, z, sgn)                                    \
    (v4 == 4 ? quantize_f32_8_avx512(x, y, m, is, z, sgn)                      \
             : quantize_f32_8_avx2(x, y, m, is, z, sgn))
#else
#define QUANT_V4 0
#define QUANT_V4_CHUNK(x, y, m, is, z, sgn) false
#endif
QRUN(quantize_f32_u8, uint8_t, false)
QRUN(quantize_f32_s8, int8_t, true)

void
cpu_quantize_f32_8(const float *x, void *y, size_t n, double s, double z,
                   bool sgn)
{
    if (sgn) {
        quantize_f32_s8(x, y, n, s, z);
    } else {
        quantize_f32_u8(x, y, n, s, z);
    }
}

static void
quantize_run(const cpu_call *k, uint64_t off, uint64_t n, double s, double z)
{
    if (k->in_desc[0].dtype == WNN_FLOAT32 &&
        (k->out_desc[0].dtype == WNN_UINT8 || k->out_desc[0].dtype == WNN_INT8)) {
        const float *x = (const float *)k->in[0] + off;
        if (k->out_desc[0].dtype == WNN_UINT8) {
            quantize_f32_u8(x, (uint8_t *)k->out[0] + off, (size_t)n, s, z);
        } else {
            quantize_f32_s8(x, (int8_t *)k->out[0] + off, (size_t)n, s, z);
        }
        return;
    }
    wnn_dtype it = k->in_desc[0].dtype, ot = k->out_desc[0].dtype;
    for (uint64_t c = 0; c < n; c += QCH) {
        size_t n1 = n - c < QCH ? (size_t)(n - c) : QCH;
        float buf[QCH];
        const float *xf;
        if (it == WNN_FLOAT32) {
            xf = (const float *)k->in[0] + off + c;
        } else {
            const uint16_t *h = (const uint16_t *)k->in[0] + off + c;
            for (size_t j = 0; j < n1; j++) {
                buf[j] = wnn_f16_to_f32(h[j]);
            }
            xf = buf;
        }
        switch (ot) {
        case WNN_UINT8: QLOOP(uint8_t, 0.0, 255.0); break;
        case WNN_INT8: QLOOP(int8_t, -128.0, 127.0); break;
        case WNN_UINT32: QLOOP(uint32_t, 0.0, 4294967295.0); break;
        case WNN_INT32: QLOOP(int32_t, -2147483648.0, 2147483647.0); break;
        default: break;
        }
    }
}

wnn_status
cpu_quantize_linear(const cpu_call *k, wnn_error *err)
{
    (void)err;
    for_each_block(k, quantize_run);
    return WNN_OK;
}

/* ---- dequantizeLinear --------------------------------------------------- */
/* double -> float16 in one rounding: wnn_f64_to_f16 (round to float32 with
 * round-to-odd -- a float32 has 13 more significand bits than a float16, so
 * a second rounding to nearest even is then exact --, then to float16) */

#define DLOAD(T)                                           \
    do {                                                   \
        const T *x = (const T *)k->in[0] + off + c;        \
        for (size_t j = 0; j < n1; j++) {                  \
            v[j] = wnn_dequantize_value((double)x[j], z, s); \
        }                                                  \
    } while (0)

/* uint8 / int8 -> float32 in one vectorised loop: the same double
 * expression rounded once to float32 (the loop above in one pass) */
#define DQFAST(NAME, T)                                                        \
    CPU_HOT_VOID(static, , NAME,                                               \
                 (const T *x, float *y, size_t n, double s, double z),         \
                 (x, y, n, s, z))                                              \
    {                                                                          \
        for (size_t j = 0; j < n; j++) {                                       \
            y[j] = (float)(((double)x[j] - z) * s);                            \
        }                                                                      \
    }
DQFAST(dequantize_u8_f32, uint8_t)
DQFAST(dequantize_s8_f32, int8_t)

static void
dequantize_run(const cpu_call *k, uint64_t off, uint64_t n, double s,
               double z)
{
    wnn_dtype it = k->in_desc[0].dtype, ot = k->out_desc[0].dtype;
    if (ot == WNN_FLOAT32 && (it == WNN_UINT8 || it == WNN_INT8)) {
        float *y = (float *)k->out[0] + off;
        if (it == WNN_UINT8) {
            dequantize_u8_f32((const uint8_t *)k->in[0] + off, y, (size_t)n, s, z);
        } else {
            dequantize_s8_f32((const int8_t *)k->in[0] + off, y, (size_t)n, s, z);
        }
        return;
    }
    for (uint64_t c = 0; c < n; c += QCH) {
        size_t n1 = n - c < QCH ? (size_t)(n - c) : QCH;
        double v[QCH];
        switch (it) {
        case WNN_UINT8: DLOAD(uint8_t); break;
        case WNN_INT8: DLOAD(int8_t); break;
        case WNN_UINT32: DLOAD(uint32_t); break;
        case WNN_INT32: DLOAD(int32_t); break;
        default: memset(v, 0, sizeof(v)); break;
        }
        if (ot == WNN_FLOAT32) {
            float *y = (float *)k->out[0] + off + c;
            for (size_t j = 0; j < n1; j++) {
                y[j] = (float)v[j];
            }
        } else {
            uint16_t *y = (uint16_t *)k->out[0] + off + c;
            for (size_t j = 0; j < n1; j++) {
                y[j] = wnn_f64_to_f16(v[j]);
            }
        }
    }
}

wnn_status
cpu_dequantize_linear(const cpu_call *k, wnn_error *err)
{
    (void)err;
    for_each_block(k, dequantize_run);
    return WNN_OK;
}
