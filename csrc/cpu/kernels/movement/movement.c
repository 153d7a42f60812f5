/* movement.c -- CPU kernels of the data movement operators: concat expand
 * transpose slice split tile reverse triangular pad.
 *
 * None of them computes on values: every data type is moved by its element
 * size (1, 2, 4 or 8 bytes), so all eight types share one code path.
 *
 * Most of them are one strided copy: each output element comes from the
 * input at  base + sum(index[d] * in_stride[d])  (strides in elements, 0 for
 * a broadcast dimension, negative for a reversed one), and goes to the output
 * at  sum(index[d] * out_stride[d]).
 *   transpose  permuted input strides
 *   expand     0 strides where the input's dimension is 1 (or missing)
 *   slice      strides times the step, base at the starts
 *   reverse    negated strides, base at the last element
 *   tile       a view of rank 2r: [rep0, d0, rep1, d1, ...] with strides
 *              [0, s0, 0, s1, ...] (an expand of the reshaped input)
 *   split      one slice per output
 *   concat     each input written into its part of the output (strided out)
 * The views are made once at compile (compiler/lower/views.c, which also
 * drops size-1 dimensions and merges dimensions contiguous on both sides;
 * the CUDA backend reads the same views); copy_view() copies rows of the innermost dimension with
 * memcpy (contiguous), a fill (broadcast), a 2-D blocked transpose (when the
 * input is contiguous along another output dimension), or a strided gather.
 * Large copies are split across the pool's threads by contiguous ranges of
 * rows (long rows are cut into chunks), each thread walking its range with an
 * odometer, so no per-element index arithmetic is done.
 *
 * pad and triangular have kernels of their own, also row by row. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

#include "../../cpu.h"

#define VR WNN_VIEW_RANK /* view rank: tile needs 2r (lower.h) */
#define CHUNK 16384               /* elements per unit of a long row */
#define TB 32                     /* block edge of the 2-D transpose */

/* Threads for a copy of `elements`: one below CPU_PARALLEL_MIN, else all. */
static int
threads_for(uint64_t elements)
{
    return elements >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
}

/* ---- element helpers ------------------------------------------------------ */
static inline void
copy_elem(unsigned char *dst, const unsigned char *src, size_t es)
{
    switch (es) {
    case 1: *dst = *src; break;
    case 2: *(uint16_t *)dst = *(const uint16_t *)src; break;
    case 4: *(uint32_t *)dst = *(const uint32_t *)src; break;
    default: *(uint64_t *)dst = *(const uint64_t *)src; break;
    }
}

/* n copies of the element at val */
static void
fill(unsigned char *dst, int64_t n, const unsigned char *val, size_t es)
{
    switch (es) {
    case 1:
        memset(dst, *val, (size_t)n);
        break;
    case 2: {
        uint16_t v = *(const uint16_t *)val, *d = (uint16_t *)dst;
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    case 4: {
        uint32_t v = *(const uint32_t *)val, *d = (uint32_t *)dst;
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    default: {
        uint64_t v = *(const uint64_t *)val, *d = (uint64_t *)dst;
        for (int64_t i = 0; i < n; i++) d[i] = v;
        break;
    }
    }
}

/* dst[i * ds] = src[i * ss] for i < n (strides in elements) */
static void
gather(unsigned char *dst, int64_t ds, const unsigned char *src, int64_t ss,
       int64_t n, size_t es)
{
#define GATHER(T)                                                  \
    {                                                              \
        T *d = (T *)dst;                                           \
        const T *s = (const T *)src;                               \
        for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];     \
    }
    switch (es) {
    case 1: GATHER(uint8_t) break;
    case 2: GATHER(uint16_t) break;
    case 4: GATHER(uint32_t) break;
    default: GATHER(uint64_t) break;
    }
#undef GATHER
}

/* One block of a 2-D transpose: dst[i * dk + c] = src[i + co[c]] for
 * i < ni, c < nc (offsets in elements): the input is contiguous along i,
 * the output along c; co[] holds the input offset of each output column.
 * With SSE2, 4-byte elements move in 4 x 4 register transposes, 2-byte ones
 * in 8 x 8 and 8-byte ones in 2 x 2; the edges and 1-byte elements one by
 * one. */
#define SCALAR_BLOCK(T, i0, c0)                                          \
    {                                                                    \
        T *dd = (T *)dst;                                                \
        const T *ss = (const T *)src;                                    \
        for (int64_t i = 0; i < ni; i++)                                 \
            for (int64_t c = (i < (i0) ? (c0) : 0); c < nc; c++)         \
                dd[i * dk + c] = ss[i + co[c]];                          \
    }

static void
block_transpose(unsigned char *dst, int64_t dk, const unsigned char *src,
                const int64_t *co, int64_t ni, int64_t nc, size_t es)
{
    if (es == 4 && dk == nc && (nc == 2 || nc == 3)) {
        /* interleaving 2 or 3 planes (nchw -> nhwc of an RGB image):
         * contiguous rows out, in one loop the compiler vectorises */
        uint32_t *d = (uint32_t *)dst;
        const uint32_t *s0 = (const uint32_t *)src + co[0];
        const uint32_t *s1 = (const uint32_t *)src + co[1];
        if (nc == 2) {
            for (int64_t i = 0; i < ni; i++) {
                d[2 * i] = s0[i];
                d[2 * i + 1] = s1[i];
            }
        } else {
            const uint32_t *s2 = (const uint32_t *)src + co[2];
            for (int64_t i = 0; i < ni; i++) {
                d[3 * i] = s0[i];
                d[3 * i + 1] = s1[i];
                d[3 * i + 2] = s2[i];
            }
        }
        return;
    }
#if defined(__SSE2__)
    if (es == 4) {
        float *d = (float *)dst;
        const float *s = (const float *)src;
        int64_t mi = ni & ~(int64_t)3, mc = nc & ~(int64_t)3;
        for (int64_t i = 0; i < mi; i += 4) {
            for (int64_t c = 0; c < mc; c += 4) {
                __m128 r0 = _mm_loadu_ps(s + i + co[c]);
                __m128 r1 = _mm_loadu_ps(s + i + co[c + 1]);
                __m128 r2 = _mm_loadu_ps(s + i + co[c + 2]);
                __m128 r3 = _mm_loadu_ps(s + i + co[c + 3]);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                float *q = d + i * dk + c;
                _mm_storeu_ps(q, r0);
                _mm_storeu_ps(q + dk, r1);
                _mm_storeu_ps(q + 2 * dk, r2);
                _mm_storeu_ps(q + 3 * dk, r3);
            }
        }
        /* rows i < mi from column mc on, and rows i >= mi entirely */
        SCALAR_BLOCK(uint32_t, mi, mc)
        return;
    }
    if (es == 2) {
        uint16_t *d = (uint16_t *)dst;
        const uint16_t *s = (const uint16_t *)src;
        int64_t mi = ni & ~(int64_t)7, mc = nc & ~(int64_t)7;
        for (int64_t i = 0; i < mi; i += 8) {
            for (int64_t c = 0; c < mc; c += 8) {
                __m128i r[8], t[8], u[8];
                for (int k = 0; k < 8; k++) {
                    r[k] = _mm_loadu_si128((const __m128i *)(s + i + co[c + k]));
                }
                /* t[2k], t[2k+1]: columns 2k, 2k+1 interleaved, rows 0-3 and
                 * 4-7 */
                for (int k = 0; k < 4; k++) {
                    t[2 * k] = _mm_unpacklo_epi16(r[2 * k], r[2 * k + 1]);
                    t[2 * k + 1] = _mm_unpackhi_epi16(r[2 * k], r[2 * k + 1]);
                }
                for (int k = 0; k < 2; k++) {
                    for (int h = 0; h < 2; h++) {
                        __m128i x = t[4 * k + h], y = t[4 * k + 2 + h];
                        u[4 * k + 2 * h] = _mm_unpacklo_epi32(x, y);
                        u[4 * k + 2 * h + 1] = _mm_unpackhi_epi32(x, y);
                    }
                }
                /* u[4k + m]: columns 4k..4k+3 of rows 2m, 2m+1 */
                uint16_t *q = d + i * dk + c;
                for (int m = 0; m < 4; m++) {
                    __m128i lo = _mm_unpacklo_epi64(u[m], u[4 + m]);
                    __m128i hi = _mm_unpackhi_epi64(u[m], u[4 + m]);
                    _mm_storeu_si128((__m128i *)(q + (2 * m) * dk), lo);
                    _mm_storeu_si128((__m128i *)(q + (2 * m + 1) * dk), hi);
                }
            }
        }
        SCALAR_BLOCK(uint16_t, mi, mc)
        return;
    }
    if (es == 8) {
        double *d = (double *)dst;
        const double *s = (const double *)src;
        int64_t mi = ni & ~(int64_t)1, mc = nc & ~(int64_t)1;
        for (int64_t i = 0; i < mi; i += 2) {
            for (int64_t c = 0; c < mc; c += 2) {
                __m128d r0 = _mm_loadu_pd(s + i + co[c]);
                __m128d r1 = _mm_loadu_pd(s + i + co[c + 1]);
                double *q = d + i * dk + c;
                _mm_storeu_pd(q, _mm_unpacklo_pd(r0, r1));
                _mm_storeu_pd(q + dk, _mm_unpackhi_pd(r0, r1));
            }
        }
        SCALAR_BLOCK(uint64_t, mi, mc)
        return;
    }
#endif
    switch (es) {
    case 1: SCALAR_BLOCK(uint8_t, 0, 0) break;
    case 2: SCALAR_BLOCK(uint16_t, 0, 0) break;
    case 4: SCALAR_BLOCK(uint32_t, 0, 0) break;
    default: SCALAR_BLOCK(uint64_t, 0, 0) break;
    }
}
#undef SCALAR_BLOCK

/* ---- the strided copy ----------------------------------------------------- */
/* compiler/lower/views.c: simplified, rank >= 1 */
typedef wnn_view view;

/* Rows of the innermost dimension, chunked; a thread copies units
 * [u0, u1) of rows * cpr units. */
static void
copy_rows(const view *v, const unsigned char *in, unsigned char *out,
          size_t es, int64_t cpr, int64_t u0, int64_t u1)
{
    int L = v->rank - 1;
    int64_t n = v->shape[L], isl = v->is[L], osl = v->os[L];
    int64_t idx[VR], row = u0 / cpr, c = u0 % cpr;
    int64_t io = 0, oo = 0;
    for (int d = L - 1; d >= 0; d--) {
        idx[d] = row % v->shape[d];
        row /= v->shape[d];
        io += idx[d] * v->is[d];
        oo += idx[d] * v->os[d];
    }
    for (int64_t u = u0; u < u1; u++) {
        int64_t j0 = c * CHUNK, m = n - j0 < CHUNK ? n - j0 : CHUNK;
        const unsigned char *s = in + (io + j0 * isl) * (int64_t)es;
        unsigned char *t = out + (oo + j0 * osl) * (int64_t)es;
        if (osl == 1 && isl == 1) {
            memcpy(t, s, (size_t)m * es);
        } else if (osl == 1 && isl == 0) {
            fill(t, m, s, es);
        } else {
            gather(t, osl, s, isl, m, es);
        }
        if (++c < cpr) {
            continue;
        }
        c = 0;
        for (int d = L - 1; d >= 0; d--) {
            io += v->is[d];
            oo += v->os[d];
            if (++idx[d] < v->shape[d]) {
                break;
            }
            io -= v->is[d] * v->shape[d];
            oo -= v->os[d] * v->shape[d];
            idx[d] = 0;
        }
    }
}

typedef struct blocked_job {
    const view *v;
    int k;
    int L;
    int m;
    int64_t nk;
    int64_t nl;
    int64_t bk;
    int64_t bc;
    int64_t tk;
    int64_t tc;
    int64_t ncols;
    int64_t osk;
    int64_t isl;
    int64_t ism;
    const unsigned char *in;
    unsigned char *out;
    size_t es;
} blocked_job;

static void
blocked_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const blocked_job *j_ = p_;
    const view *v = j_->v;
    int k = j_->k;
    int L = j_->L;
    int m = j_->m;
    int64_t nk = j_->nk;
    int64_t nl = j_->nl;
    int64_t bk = j_->bk;
    int64_t bc = j_->bc;
    int64_t tk = j_->tk;
    int64_t tc = j_->tc;
    int64_t ncols = j_->ncols;
    int64_t osk = j_->osk;
    int64_t isl = j_->isl;
    int64_t ism = j_->ism;
    const unsigned char *in = j_->in;
    unsigned char *out = j_->out;
    size_t es = j_->es;
    for (int64_t u = (int64_t)b_; u < (int64_t)e_; u++) {
        int64_t q = u, cb = q % tc;
        q /= tc;
        int64_t ib = q % tk, o = q / tk;
        int64_t io = 0, oo = 0;
        for (int d = L - 1; d >= 0; d--) {
            if (d == k || d == m) {
                continue;
            }
            int64_t i = o % v->shape[d];
            o /= v->shape[d];
            io += i * v->is[d];
            oo += i * v->os[d];
        }
        int64_t i0 = ib * bk, c0 = cb * bc;
        int64_t ni = nk - i0 < bk ? nk - i0 : bk;
        int64_t nc = ncols - c0 < bc ? ncols - c0 : bc;
        int64_t co[TB + TB];
        for (int64_t c = 0; c < nc; c++) {
            int64_t cc = c0 + c;
            co[c] = m >= 0 ? (cc / nl) * ism + (cc % nl) * isl : cc * isl;
        }
        /* column c0 starts at output offset c0 (os[L] = 1, os[m] = nl) */
        block_transpose(out + (oo + i0 * osk + c0) * (int64_t)es, osk,
                        in + (io + i0) * (int64_t)es, co, ni, nc, es);
    }
}

/* Output contiguous along the last dimension L, input contiguous along
 * dimension k: TB x TB blocks of (k, columns), the other dimensions outside.
 * The columns are dimension L, or, when L is shorter than TB and the output
 * is contiguous across it, dimensions (m, L) with m = L - 1, so that a block
 * still writes TB-element runs (whole cache lines).  Units run over the other
 * dimensions outermost, then blocks along k, then along the columns. */
static void
copy_blocked(const view *v, int k, const unsigned char *in,
             unsigned char *out, size_t es, int nt)
{
    int L = v->rank - 1;
    int m = L - 1;
    int64_t nk = v->shape[k], nl = v->shape[L];
    if (!(nl < TB && m >= 0 && m != k && v->os[m] == nl)) {
        m = -1; /* columns: L only */
    }
    int64_t nm = m >= 0 ? v->shape[m] : 1;
    /* columns per block: TB of L, or bm whole rows of L */
    int64_t bm = m >= 0 ? (TB + nl - 1) / nl : 1;
    bm = bm > nm ? nm : bm;
    int64_t bc = m >= 0 ? bm * nl : (nl < TB ? nl : TB);
    int64_t ncols = nm * nl;
    /* rows per block: TB, or more for few columns (about TB x TB
     * elements a unit, so that the unit's bookkeeping stays small) */
    int64_t bk = bc < TB ? TB * (TB / bc) : TB;
    bk = nk < bk ? nk : bk;
    int64_t tk = (nk + bk - 1) / bk, tc = (ncols + bc - 1) / bc;
    int64_t outer = v->n / (nk * ncols);
    int64_t units = outer * tk * tc;
    int64_t osk = v->os[k], isl = v->is[L], ism = m >= 0 ? v->is[m] : 0;
    {
        blocked_job j_ = {.v = v, .k = k, .L = L, .m = m, .nk = nk, .nl = nl,
                          .bk = bk, .bc = bc, .tk = tk, .tc = tc,
                          .ncols = ncols, .osk = osk, .isl = isl, .ism = ism,
                          .in = in, .out = out, .es = es};
        cpu_parallel_for((int64_t)(units), nt, blocked_body, &j_);
    }
}

typedef struct rows_job {
    const view *v;
    const unsigned char *in;
    unsigned char *out;
    size_t es;
    int64_t cpr;
    int64_t units;
} rows_job;

static void
rows_body(void *p_, int tid_, int nt_)
{
    const rows_job *j_ = p_;
    const view *v = j_->v;
    const unsigned char *in = j_->in;
    unsigned char *out = j_->out;
    size_t es = j_->es;
    int64_t cpr = j_->cpr;
    int64_t units = j_->units;
    {
        int t = tid_, p = nt_;
        int64_t u0 = units * t / p, u1 = units * (t + 1) / p;
        if (u0 < u1) {
            copy_rows(v, in, out, es, cpr, u0, u1);
        }
    }
}

/* ---- interleaving a few rows ---------------------------------------------
 * [P][A][B] -> [P][B][A] of 4-byte elements with 2 <= A <= 8: per block of
 * A B elements (a pixel), A rows of B interleaved.  This is ShuffleNet's
 * channel shuffle run in nhwc (compiler/layout.c: A groups of B channels
 * per pixel), where the blocked transpose's units (one pixel each, 4 x 4
 * register transposes) cost about three times this loop: with A a
 * constant GCC vectorises the interleave (permutes, whole vectors out). */
#define INTERLEAVE(A)                                                          \
    for (int64_t c = c0; c < c1; c++) {                                        \
        for (int a = 0; a < (A); a++) {                                        \
            d[c * (A) + a] = s[a * B + c];                                     \
        }                                                                      \
    }

/* elements [c0, c1) of the B of one block: s, d at the block */
CPU_HOT_VOID(static, , interleave_run,
             (const uint32_t *s, uint32_t *d, int64_t A, int64_t B,
              int64_t c0, int64_t c1),
             (s, d, A, B, c0, c1))
{
    switch (A) {
    case 2: INTERLEAVE(2) break;
    case 3: INTERLEAVE(3) break;
    case 4: INTERLEAVE(4) break;
    case 8: INTERLEAVE(8) break;
    default: INTERLEAVE(A) break;
    }
}
#undef INTERLEAVE

typedef struct ilv_job {
    const uint32_t *s;
    uint32_t *d;
    int64_t A, B, n, grain; /* n: P B */
} ilv_job;

/* tasks of `grain` of the P B columns (a few blocks each, or a part of one
 * large block: an image's nchw -> nhwc with 3 channels is one block) */
static void
ilv_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const ilv_job *j = p_;
    const int64_t A = j->A, B = j->B;
    int64_t t = b_ * j->grain, t1 = e_ * j->grain < j->n ? e_ * j->grain : j->n;
    for (int64_t p = t / B, c = t % B; t < t1; p++, c = 0) {
        int64_t m = B - c < t1 - t ? B - c : t1 - t;
        interleave_run(j->s + p * A * B, j->d + p * A * B, A, B, c, c + m);
        t += m;
    }
}

/* the view is [P][A][B] -> [P][B][A] as above: *P, *A, *B */
static bool
interleave_view(const view *v, size_t es, int64_t *P, int64_t *A, int64_t *B)
{
    int L = v->rank - 1;
    if (es != 4 || L < 1 || L > 2 || v->os[L] != 1 || v->is[L - 1] != 1) {
        return false;
    }
    *A = v->shape[L], *B = v->shape[L - 1];
    *P = L == 2 ? v->shape[0] : 1;
    return *A >= 2 && *A <= 8 && *B >= 2 && v->os[L - 1] == *A &&
           v->is[L] == *B &&
           (L == 1 || (v->os[0] == *A * *B && v->is[0] == *A * *B));
}

/* Copy the view: element (i...) goes from in[sum i*is] to out[sum i*os].
 * `in` and `out` point at element (0, ..., 0). */
static void
copy_view(const view *v, const unsigned char *in, unsigned char *out,
          size_t es)
{
    int L = v->rank - 1;
    int64_t total = v->n;
    int nt = threads_for((uint64_t)total);
    int64_t P, A, B;
    if (interleave_view(v, es, &P, &A, &B)) {
        /* tasks of about 4096 elements */
        ilv_job j = {.s = (const uint32_t *)in, .d = (uint32_t *)out,
                     .A = A, .B = B, .n = P * B, .grain = (4096 + A - 1) / A};
        cpu_parallel_for_dynamic((P * B + j.grain - 1) / j.grain, 1, nt,
                                 ilv_body, &j);
        return;
    }
    if (v->os[L] == 1 && v->is[L] != 1 && v->is[L] != 0 && L > 0 &&
        v->shape[L] >= 2) {
        for (int k = L - 1; k >= 0; k--) {
            if (v->is[k] == 1 && v->shape[k] >= 4) {
                copy_blocked(v, k, in, out, es, nt);
                return;
            }
        }
    }
    int64_t n = v->shape[L], cpr = (n + CHUNK - 1) / CHUNK;
    int64_t units = total / n * cpr;
    if (nt > units) {
        nt = (int)units;
    }
    if (nt <= 1) {
        copy_rows(v, in, out, es, cpr, 0, units);
        return;
    }
    {
        rows_job j_ = {.v = v, .in = in, .out = out, .es = es, .cpr = cpr,
                       .units = units};
        cpu_parallel(nt, rows_body, &j_);
    }
}

/* ---- transpose expand slice split concat reverse tile ---------------------
 * #api-mlgraphbuilder-transpose, -expand, -slice, -split, -concat,
 * -reverse-method, -tile: the views lowered at compile (compiler/lower/
 * views.c; one per output of split, one per input of concat). */
static wnn_status
copy_views(const cpu_call *k)
{
    const wnn_views_params *q = &k->lowered->u.views;
    size_t es = wnn_dtype_size(k->in_desc[0].dtype);
    for (uint32_t j = 0; j < q->n; j++) {
        const view *v = &q->v[j];
        copy_view(v,
                  (const unsigned char *)k->in[v->in] + v->in_off * (int64_t)es,
                  (unsigned char *)k->out[v->out] + v->out_off * (int64_t)es,
                  es);
    }
    return WNN_OK;
}

wnn_status
cpu_transpose(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_expand(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_slice(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_split(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_concat(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_reverse(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

wnn_status
cpu_tile(const cpu_call *k, wnn_error *err)
{
    (void)err;
    return copy_views(k);
}

typedef struct tri_job {
    int64_t h;
    int64_t w;
    bool upper;
    int64_t diag;
    size_t es;
    const unsigned char *x;
    unsigned char *y;
} tri_job;

static void
tri_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const tri_job *j_ = p_;
    int64_t h = j_->h;
    int64_t w = j_->w;
    bool upper = j_->upper;
    int64_t diag = j_->diag;
    size_t es = j_->es;
    const unsigned char *x = j_->x;
    unsigned char *y = j_->y;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        int64_t i = r % h, lo, hi;
        /* upper keeps j - i >= diagonal, lower keeps j - i <= diagonal */
        if (upper) {
            lo = i + diag;
            hi = w;
        } else {
            lo = 0;
            hi = i + diag + 1;
        }
        lo = lo < 0 ? 0 : lo > w ? w : lo;
        hi = hi < lo ? lo : hi > w ? w : hi;
        size_t off = (size_t)(r * w) * es;
        memset(y + off, 0, (size_t)lo * es);
        memcpy(y + off + (size_t)lo * es, x + off + (size_t)lo * es,
               (size_t)(hi - lo) * es);
        memset(y + off + (size_t)hi * es, 0, (size_t)(w - hi) * es);
    }
}

/* ---- triangular -- #api-mlgraphbuilder-triangular ------------------------- */
wnn_status
cpu_triangular(const cpu_call *k, wnn_error *err)
{
    (void)err;
    /* lowered at compile (compiler/lower/triangular.c) */
    const wnn_tri_params *o = &k->lowered->u.tri;
    const wnn_desc *d = &k->in_desc[0];
    size_t es = wnn_dtype_size(d->dtype);
    int64_t h = o->h, w = o->w;
    int64_t rows = (int64_t)wnn_desc_elements(d) / w;
    const unsigned char *x = k->in[0];
    unsigned char *y = k->out[0];
    int64_t diag = o->diag;
    bool upper = o->upper != 0;
    {
        tri_job j_ = {.h = h, .w = w, .upper = upper, .diag = diag, .es = es,
                      .x = x, .y = y};
        cpu_parallel_for((int64_t)(rows), threads_for(wnn_desc_elements(d)), tri_body, &j_);
    }
    return WNN_OK;
}

/* ---- pad -- #api-mlgraphbuilder-pad --------------------------------------- */
/* Index into [0, n) of output coordinate x - b for edge / reflection
 * (the checker guarantees b, e < n for reflection); -1 for constant
 * padding outside. */
static inline int64_t
pad_source(int mode, int64_t x, int64_t n)
{
    if (x >= 0 && x < n) {
        return x;
    }
    switch (mode) {
    case WNN_PAD_EDGE:
        return x < 0 ? 0 : n - 1;
    case WNN_PAD_REFLECTION: {
        int64_t r = x < 0 ? -x : 2 * (n - 1) - x;
        return r < 0 ? 0 : r >= n ? n - 1 : r; /* n == 1: padding is 0 */
    }
    default:
        return -1;
    }
}

typedef struct pad_job {
    const wnn_pad_params *o;
    const wnn_desc *in;
    const wnn_desc *out;
    size_t es;
    const unsigned char *val;
    const unsigned char *x;
    unsigned char *y;
    int mode;
    int L;
    const int64_t *ist;
    int64_t n;
    int64_t wo;
    int64_t bl;
    int64_t el;
} pad_job;

static void
pad_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const pad_job *j_ = p_;
    const wnn_pad_params *o = j_->o;
    const wnn_desc *in = j_->in;
    const wnn_desc *out = j_->out;
    size_t es = j_->es;
    const unsigned char *val = j_->val;
    const unsigned char *x = j_->x;
    unsigned char *y = j_->y;
    int mode = j_->mode;
    int L = j_->L;
    const int64_t *ist = j_->ist;
    int64_t n = j_->n;
    int64_t wo = j_->wo;
    int64_t bl = j_->bl;
    int64_t el = j_->el;
    for (int64_t row = (int64_t)b_; row < (int64_t)e_; row++) {
        unsigned char *t = y + (size_t)(row * wo) * es;
        int64_t q = row, src = 0;
        bool outside = false;
        for (int d = L - 1; d >= 0; d--) {
            int64_t i = q % out->shape[d];
            q /= out->shape[d];
            int64_t s = pad_source(mode, i - o->begin[d],
                                   in->shape[d]);
            if (s < 0) {
                outside = true;
                break;
            }
            src += s * ist[d];
        }
        if (outside) {
            fill(t, wo, val, es);
            continue;
        }
        const unsigned char *s = x + (size_t)src * es;
        if (mode == WNN_PAD_CONSTANT) {
            fill(t, bl, val, es);
            fill(t + (size_t)(bl + n) * es, el, val, es);
        } else {
            for (int64_t j = 0; j < bl; j++) {
                copy_elem(t + (size_t)j * es,
                          s + (size_t)pad_source(mode, j - bl, n) * es, es);
            }
            for (int64_t j = bl + n; j < wo; j++) {
                copy_elem(t + (size_t)j * es,
                          s + (size_t)pad_source(mode, j - bl, n) * es, es);
            }
        }
        memcpy(t + (size_t)bl * es, s, (size_t)n * es);
    }
}

wnn_status
cpu_pad(const cpu_call *k, wnn_error *err)
{
    (void)err;
    /* lowered at compile (compiler/lower/views.c) */
    const wnn_pad_params *o = &k->lowered->u.pad;
    const wnn_desc *in = &k->in_desc[0], *out = &k->out_desc[0];
    size_t es = wnn_dtype_size(in->dtype);
    unsigned char val[8];
    memcpy(val, &o->value, sizeof(val));
    const unsigned char *x = k->in[0];
    unsigned char *y = k->out[0];
    int mode = o->mode;
    if (in->rank == 0) {
        memcpy(y, x, es);
        return WNN_OK;
    }
    int r = (int)in->rank, L = r - 1;
    const int64_t *ist = o->ist;
    int64_t n = in->shape[L], wo = out->shape[L];
    int64_t bl = o->begin[L], el = o->end[L];
    int64_t rows = (int64_t)wnn_desc_elements(out) / wo;
    {
        pad_job j_ = {.o = o, .in = in, .out = out, .es = es, .val = val,
                      .x = x, .y = y, .mode = mode, .L = L, .ist = ist, .n = n,
                      .wo = wo, .bl = bl, .el = el};
        cpu_parallel_for((int64_t)(rows), threads_for(wnn_desc_elements(out)), pad_body, &j_);
    }
    return WNN_OK;
}
