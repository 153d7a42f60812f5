/* direct.c -- conv2d's register-blocked direct kernels (AVX-512 and AVX2 +
 * FMA), nhwc and nchw, and the products with a constant b (conv.h has the
 * overview). */
#include "conv.h"

#include <sys/mman.h>

#if HAVE_DIRECT
#include <immintrin.h>
/* The micro-kernel: acc[p][j] (PB x NV vectors of 16) += x0[p ps + c] *
 * w[c OP + 16 j] over the taps and c.  For nhwc convolution: p runs over
 * output pixels (x0: input pixel of output pixel 0 at the first tap; ps: to
 * the next output pixel's; rs, cs: to the next tap row / column), j over
 * output channels (w: the weights of the first tap and output channel o0).
 * For the nchw 1x1 product it is a GEMM with p over output channels and j
 * over pixels.  The accumulators start at the bias: vectors bias[16 j] or,
 * when bias_p, scalars bias_p[p].  y: where acc[0][0] goes, ys: to the next
 * p; nvalid: lanes (of the NV * 16) that exist.  Before the store, a fused
 * epilogue (conv.h, reg_epi_of): + res[same offset] when res, then clamp to
 * [cl[0], cl[1]] (NaN kept) + cl[2] when cl.  The epilogue has two
 * unrolled copies, whole blocks and a partial last block: one loop with
 * per-vector lane masks (and the store chosen by mask) measured 3-10 %
 * slower single-thread (1x1 16 -> 128 channels 38.5 against 35-36.5 us,
 * 32 -> 16 at 112 x 112 146 against 138 us). */
/* The AVX2 kernels of 3 pixels or more over C >= 128 rows of weights ask
 * for each row's lines DIRECT2_PF_ROWS rows ahead (2 KiB where the weights
 * are packed one vector wide, conv_direct_bw; the address is computed as
 * an integer: it may lie past the weights, which a prefetch may read).
 * Their loop reads one 64-byte line a step of 12 multiply-adds, so that
 * the out-of-order window holds about 16 lines in flight where the
 * AVX-512 kernels' (one 256-byte row a step of 24) hold about 36: weights
 * from L3 or memory (a model's) came too slowly.  In-process A/B at WEBNN_CPU_ISA=avx2, 2 threads, Zen 4, min of
 * 16 runs, ms, without / with (the blocks of one vector): SmolLM-135M 64
 * tokens 103.1 / 98.0, BERT-base 120.4 / 115.8, GPT-2 prefill 175.8 /
 * 168.1, ResNet-50 40.5 / 39.3, ConvNeXt-T 52.2 / 51.3, EfficientNet-B0
 * 7.60 / 7.54; 16 and 64 rows ahead within 1.5 % of 32.  The rows OP apart
 * of Winograd's products too: ResNet-50's 14 x 14 256 -> 256 0.89 -> 0.79
 * ms.  At AVX-512 the same measured 1-3 % slower (Winograd's even),
 * with fewer rows (ConvNeXt's 96 channels) 1-3 % slower, and so did the
 * blocks of 1 or 2 pixels of a decode step (which stream at the speed of
 * memory anyway): none of them asks.  The sums are the same. */
#define DIRECT2_PF_ROWS 32
#define DIRECT_BLOCK_AT(N, S, TGT, VT, VW, NV, PB)                             \
    TGT static void N##_##NV##_##PB(                                           \
        const float *x0, int64_t ps, int64_t rs, int64_t cs, int64_t nkh,      \
        int64_t nkw, int64_t KW, int64_t C, const float *w, int64_t OP,        \
        const float *bias, const float *bias_p, float *y, int64_t ys,          \
        int64_t nvalid, const float *res, const float *cl, int nt)             \
    {                                                                          \
        VT acc[PB][NV * 16 / VW];                                              \
        _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)                  \
        {                                                                      \
            _Pragma("GCC unroll 8") for (int j = 0; j < NV * 16 / VW; j++)     \
            {                                                                  \
                if (bias_p) {                                                  \
                    acc[p][j] = (float)bias_p[p] - (VT){ 0 };                  \
                } else {                                                       \
                    acc[p][j] = *(const VT *)(bias + VW * j);                  \
                }                                                              \
            }                                                                  \
        }                                                                      \
        for (int64_t kh = 0; kh < nkh; kh++) {                                 \
            for (int64_t kw = 0; kw < nkw; kw++) {                             \
                const float *xp = x0 + kh * rs + kw * cs;                      \
                const float *wp = w + (kh * KW + kw) * C * OP;                 \
                const bool pf_ = VW == 8 && PB >= 3 && C >= 128;               \
                for (int64_t c = 0; c < C; c++) {                              \
                    VT wv[NV * 16 / VW];                                       \
                    if (pf_) {                                                 \
                        _Pragma("GCC unroll 8") for (int j = 0; j < NV; j++)   \
                            __builtin_prefetch(                                \
                                (const void *)((uintptr_t)(wp + c * OP + 16 * j) + \
                                               (uintptr_t)(DIRECT2_PF_ROWS * OP * 4)), \
                                0, 3);                                         \
                    }                                                          \
                    _Pragma("GCC unroll 8") for (int j = 0; j < NV * 16 / VW; j++) wv[j] = \
                        *(const VT *)(wp + c * OP + VW * j);                   \
                    _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)      \
                    {                                                          \
                        VT xb = xp[p * ps + c] - (VT){ 0 };                    \
                        _Pragma("GCC unroll 8") for (int j = 0; j < NV * 16 / VW; j++) \
                            acc[p][j] += xb * wv[j];                           \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
        /* the epilogue, unrolled: the accumulators stay in registers (a       \
         * loop over p kept them on the stack, stored and reloaded: with 16    \
         * input channels a quarter of the kernel's time went there) */        \
        if (nvalid >= 16 * NV) {                                               \
            _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)              \
            {                                                                  \
                float *yp = y + p * ys;                                        \
                const float *rp = res ? res + p * ys : NULL;                   \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV * 16 / VW; j++) \
                    S##_full(yp + VW * j, acc[p][j],                           \
                                 rp ? rp + VW * j : NULL, cl, nt);             \
            }                                                                  \
        } else { /* a partial block: the last vector through a lane mask */    \
            _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)              \
            {                                                                  \
                float *yp = y + p * ys;                                        \
                const float *rp = res ? res + p * ys : NULL;                   \
                _Pragma("GCC unroll 8") for (int j = 0; j < NV * 16 / VW; j++) \
                    S##_part(yp + VW * j, acc[p][j],                           \
                                 rp ? rp + VW * j : NULL, nvalid - VW * j, cl); \
            }                                                                  \
        }                                                                      \
    }
/* the stores of the AVX-512 kernels: a whole vector (streamed when nt), or
 * its first rem lanes (none when rem <= 0) through a lane mask */
DIRECT static inline __attribute__((always_inline)) void
st_full(float *yp, v16 a, const float *rp, const float *cl, int nt)
{
    __m512 v = reg_epi512((__m512)a, rp, (__mmask16)0xffff, cl);
    if (nt) {
        _mm512_stream_ps(yp, v);
    } else {
        _mm512_storeu_ps(yp, v);
    }
}
DIRECT static inline __attribute__((always_inline)) void
st_part(float *yp, v16 a, const float *rp, int64_t rem, const float *cl)
{
    __mmask16 m = rem >= 16 ? (__mmask16)0xffff
                  : rem > 0 ? (__mmask16)((1u << rem) - 1)
                            : (__mmask16)0;
    _mm512_mask_storeu_ps(yp, m, reg_epi512((__m512)a, rp, m, cl));
}
#define DIRECT_BLOCK(NV, PB) DIRECT_BLOCK_AT(direct, st, DIRECT, v16, 16, NV, PB)
#define DIRECT_PBS(NV)                                                         \
    DIRECT_BLOCK(NV, 1)                                                        \
    DIRECT_BLOCK(NV, 2)                                                        \
    DIRECT_BLOCK(NV, 3) DIRECT_BLOCK(NV, 4) DIRECT_BLOCK(NV, 5) DIRECT_BLOCK(NV, 6)
DIRECT_PBS(1)
DIRECT_PBS(2)
DIRECT_PBS(3)
DIRECT_PBS(4)
/* taller blocks for 16 and 32 output channels (a broadcast value feeds
 * only one or two vectors there, so more pixels share each weight load):
 * up to DIRECT_TOP1 x 1 and DIRECT_TOP2 x 2 vectors of accumulators, every
 * height, so that a span is cut into equal blocks (conv_direct_pick).
 * Taller blocks (24 x 1 and 12 x 2, before) ran out of general registers
 * for the pixels' input offsets and reloaded them from the stack in the
 * inner loop: 112 x 112 32 -> 16 alone 82 -> 72 us, 56 x 56 144 -> 24 120
 * -> 114 us with these; MobileNetV2 1.6 % faster at batch 1 and 8
 * (in-process A/B, results bit for bit the same). */
#define DIRECT_TOP1 12
#define DIRECT_TOP2 8
DIRECT_BLOCK(1, 7) DIRECT_BLOCK(1, 8) DIRECT_BLOCK(1, 9) DIRECT_BLOCK(1, 10)
DIRECT_BLOCK(1, 11) DIRECT_BLOCK(1, 12)
DIRECT_BLOCK(2, 7) DIRECT_BLOCK(2, 8)
/* direct_fns[nv][pb] */
const direct_fn conv_direct_fns[5][7] = {
    { NULL },
    { NULL, direct_1_1, direct_1_2, direct_1_3, direct_1_4, direct_1_5, direct_1_6 },
    { NULL, direct_2_1, direct_2_2, direct_2_3, direct_2_4, direct_2_5, direct_2_6 },
    { NULL, direct_3_1, direct_3_2, direct_3_3, direct_3_4, direct_3_5, direct_3_6 },
    { NULL, direct_4_1, direct_4_2, direct_4_3, direct_4_4, direct_4_5, direct_4_6 },
};

/* 24 output channels (MobileNetV2's 56 x 56 projections): per pixel a
 * vector of 16 accumulators and one of 8 (a 256-bit half), so that no lane
 * computes a padding channel (two 16-lane vectors wasted a quarter of the
 * multiply-adds; on CPUs that split 512-bit operations in two, as Zen 4
 * does, the 8-lane one costs half).  The 1x1 product only (no taps, no
 * bias_p), nvalid 24, no streaming stores; the same sums in the same order
 * as direct_2_PB's first 24 lanes. */
#define DIRECT_BLOCK24(PB)                                                     \
    DIRECT static void direct_24_##PB(                                         \
        const float *x0, int64_t ps, int64_t rs, int64_t cs, int64_t nkh,      \
        int64_t nkw, int64_t KW, int64_t C, const float *w, int64_t OP,        \
        const float *bias, const float *bias_p, float *y, int64_t ys,          \
        int64_t nvalid, const float *res, const float *cl, int nt)             \
    {                                                                          \
        (void)rs, (void)cs, (void)nkh, (void)nkw, (void)KW, (void)bias_p;      \
        (void)nvalid, (void)nt;                                                \
        __m512 a[PB];                                                          \
        __m256 h[PB];                                                          \
        _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)                   \
        {                                                                      \
            a[p] = _mm512_loadu_ps(bias);                                      \
            h[p] = _mm256_loadu_ps(bias + 16);                                 \
        }                                                                      \
        for (int64_t c = 0; c < C; c++) {                                      \
            const __m512 w0 = _mm512_loadu_ps(w + c * OP);                     \
            const __m256 w1 = _mm256_loadu_ps(w + c * OP + 16);                \
            _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)               \
            {                                                                  \
                const __m512 xb = _mm512_set1_ps(x0[p * ps + c]);              \
                a[p] = _mm512_fmadd_ps(xb, w0, a[p]);                          \
                h[p] = _mm256_fmadd_ps(_mm512_castps512_ps256(xb), w1, h[p]);  \
            }                                                                  \
        }                                                                      \
        _Pragma("GCC unroll 24") for (int p = 0; p < PB; p++)                   \
        {                                                                      \
            float *yp = y + p * ys;                                            \
            __m512 v = a[p];                                                   \
            __m256 u = h[p];                                                   \
            v = reg_epi512(v, res ? res + p * ys : NULL, (__mmask16)0xffff, cl); \
            if (res) {                                                         \
                u = _mm256_add_ps(u, _mm256_loadu_ps(res + p * ys + 16));      \
            }                                                                  \
            if (cl) {                                                          \
                u = _mm256_max_ps(_mm256_set1_ps(cl[0]), u);                   \
                u = _mm256_min_ps(_mm256_set1_ps(cl[1]), u);                   \
                u = _mm256_add_ps(u, _mm256_set1_ps(cl[2]));                   \
            }                                                                  \
            _mm512_storeu_ps(yp, v);                                           \
            _mm256_storeu_ps(yp + 16, u);                                      \
        }                                                                      \
    }
DIRECT_BLOCK24(1) DIRECT_BLOCK24(2) DIRECT_BLOCK24(3) DIRECT_BLOCK24(4)
DIRECT_BLOCK24(5) DIRECT_BLOCK24(6) DIRECT_BLOCK24(7) DIRECT_BLOCK24(8)
/* A run of nb blocks of pb pixels of the 1x1 product: the block kernel
 * inlined in the loop (flatten), its taps' loops gone (one tap), instead
 * of a call with 18 arguments per block -- with 16 input channels a block
 * is 384 multiply-adds, and the call cost a sixth of them.  The same sums
 * in the same order as the block kernel's. */
typedef void (*span_fn)(const float *x, int64_t xs, int64_t C, const float *w,
                        int64_t OP, const float *bias, float *y, int64_t ys,
                        int64_t nvalid, const float *res, const float *cl,
                        int nt, int64_t nb);
#define DIRECT_SPAN(NAME, PB)                                                  \
    DIRECT __attribute__((flatten)) static void span_##NAME(                   \
        const float *x, int64_t xs, int64_t C, const float *w, int64_t OP,     \
        const float *bias, float *y, int64_t ys, int64_t nvalid,               \
        const float *res, const float *cl, int nt, int64_t nb)                 \
    {                                                                          \
        for (int64_t b = 0; b < nb; b++) {                                     \
            direct_##NAME(x + b * PB * xs, xs, 0, 0, 1, 1, 1, C, w, OP, bias,  \
                          NULL, y + b * PB * ys, ys, nvalid,                   \
                          res ? res + b * PB * ys : NULL, cl, nt);             \
        }                                                                      \
    }
#define DIRECT_SPANS6(NV)                                                      \
    DIRECT_SPAN(NV##_1, 1) DIRECT_SPAN(NV##_2, 2) DIRECT_SPAN(NV##_3, 3)       \
    DIRECT_SPAN(NV##_4, 4) DIRECT_SPAN(NV##_5, 5) DIRECT_SPAN(NV##_6, 6)
#define DIRECT_SPANS8(NV)                                                      \
    DIRECT_SPANS6(NV) DIRECT_SPAN(NV##_7, 7) DIRECT_SPAN(NV##_8, 8)
#define DIRECT_SPANS12(NV)                                                     \
    DIRECT_SPANS8(NV) DIRECT_SPAN(NV##_9, 9) DIRECT_SPAN(NV##_10, 10)          \
    DIRECT_SPAN(NV##_11, 11) DIRECT_SPAN(NV##_12, 12)
DIRECT_SPANS12(1)
DIRECT_SPANS8(2)
DIRECT_SPANS6(3)
DIRECT_SPANS6(4)
DIRECT_SPANS8(24)
#define SPANS6(NV) span_##NV##_1, span_##NV##_2, span_##NV##_3, span_##NV##_4, \
                   span_##NV##_5, span_##NV##_6
#define SPANS8(NV) SPANS6(NV), span_##NV##_7, span_##NV##_8
#define SPANS12(NV) SPANS8(NV), span_##NV##_9, span_##NV##_10, span_##NV##_11, \
                    span_##NV##_12

/* ---- the same kernels at AVX2 + FMA --------------------------------------
 * The same source on 8-lane vectors (two per 16-lane vector of the packed
 * weights, whose blocks are one vector wide at this level: conv_direct_bw)
 * and the same sums in the same order, so the results are bit for bit
 * those of the AVX-512 kernels.  With 16
 * vector registers, not 32, a block holds at most 12 of accumulators: the
 * native blocks are 1 vector of 16 channels x up to 6 pixels (the shape of
 * BLIS's haswell kernel); a wider or taller block runs as those, vector by
 * vector, each cut into rows of about the same height.  Measured against
 * 2 x 3 native blocks (12 accumulators too, half the broadcasts) on 2
 * threads, AVX2 on Zen 4: 128 x 768 x 3072 3.7 against 4.4 ms, 1x1 14 x
 * 14 1024 -> 256 0.50 against 0.72 ms -- each weight vector feeds 6 pixels,
 * not 3, so half as many bytes of weights come from L2 per multiply-add. */
#define DIRECT2 CPU_TARGET_V3
#define DIRECT2_TOP1 6
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
typedef int v8i __attribute__((vector_size(32)));
/* reg_clamp16 on 8 lanes */
DIRECT2 static inline __attribute__((always_inline)) v8
clamp8(v8 v, const float *cl)
{
    const v8 lo = cl[0] - (v8){ 0 }, hi = cl[1] - (v8){ 0 };
    v8i m = v < lo;
    v8 r = (v8)((m & (v8i)lo) | (~m & (v8i)v));
    m = r > hi;
    r = (v8)((m & (v8i)hi) | (~m & (v8i)r));
    return r + cl[2];
}
/* the stores of the AVX2 kernels, as st_full and st_part */
DIRECT2 static inline __attribute__((always_inline)) void
st2_full(float *yp, v8 a, const float *rp, const float *cl, int nt)
{
    if (rp) {
        a += *(const v8 *)rp;
    }
    if (cl) {
        a = clamp8(a, cl);
    }
    if (nt) {
        _mm256_stream_ps(yp, (__m256)a);
    } else {
        *(v8 *)yp = a;
    }
}
DIRECT2 static inline __attribute__((always_inline)) void
st2_part(float *yp, v8 a, const float *rp, int64_t rem, const float *cl)
{
    if (rem <= 0) {
        return;
    }
    const __m256i m = _mm256_cmpgt_epi32(
        _mm256_set1_epi32(rem > 8 ? 8 : (int)rem),
        _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    if (rp) {
        a += (v8)_mm256_maskload_ps(rp, m);
    }
    if (cl) {
        a = clamp8(a, cl);
    }
    _mm256_maskstore_ps(yp, m, (__m256)a);
}
#define DIRECT2_BLOCK(NV, PB) DIRECT_BLOCK_AT(direct2n, st2, DIRECT2, v8, 8, NV, PB)
DIRECT2_BLOCK(1, 1) DIRECT2_BLOCK(1, 2) DIRECT2_BLOCK(1, 3)
DIRECT2_BLOCK(1, 4) DIRECT2_BLOCK(1, 5) DIRECT2_BLOCK(1, 6)
DIRECT2_BLOCK(2, 1) DIRECT2_BLOCK(2, 2) DIRECT2_BLOCK(2, 3)
DIRECT2_BLOCK(3, 1) DIRECT2_BLOCK(4, 1)
static const direct_fn direct2_native[5][DIRECT2_TOP1 + 1] = {
    { NULL },
    { NULL, direct2n_1_1, direct2n_1_2, direct2n_1_3, direct2n_1_4,
      direct2n_1_5, direct2n_1_6 },
    { NULL, direct2n_2_1, direct2n_2_2, direct2n_2_3 },
    { NULL, direct2n_3_1 },
    { NULL, direct2n_4_1 },
};
/* an nv x pb block: native where there is one; else as native ones, in
 * columns of 2 vectors (the last of 1) where pb <= 3, vector by vector
 * in rows of about the same height otherwise (a block of few rows, as the
 * decode step's, reads each 64-column block of weights in one or two
 * passes rather than four, each a 64-byte line of every 256) */
DIRECT2 static inline __attribute__((always_inline)) void
direct2_cut(int nv, int pb, const float *x0, int64_t ps, int64_t rs,
            int64_t cs, int64_t nkh, int64_t nkw, int64_t KW, int64_t C,
            const float *w, int64_t OP, const float *bias,
            const float *bias_p, float *y, int64_t ys, int64_t nvalid,
            const float *res, const float *cl, int nt)
{
    if (pb <= DIRECT2_TOP1 && direct2_native[nv][pb]) {
        direct2_native[nv][pb](x0, ps, rs, cs, nkh, nkw, KW, C, w, OP, bias,
                               bias_p, y, ys, nvalid, res, cl, nt);
        return;
    }
    const int step = pb <= 3 ? 2 : 1;
    const int nb = (pb + DIRECT2_TOP1 - 1) / DIRECT2_TOP1;
    for (int j = 0; j < nv && nvalid - 16 * j > 0; j += step) {
        const int cv = nv - j < step ? nv - j : step;
        for (int b = 0, p0 = 0, h; b < nb; b++, p0 += h) {
            h = pb / nb + (b < pb % nb);
            direct2_native[cv][h](
                x0 + p0 * ps, ps, rs, cs, nkh, nkw, KW, C, w + 16 * j, OP,
                bias_p ? bias : bias + 16 * j, bias_p ? bias_p + p0 : NULL,
                y + p0 * ys + 16 * j, ys, nvalid - 16 * j,
                res ? res + p0 * ys + 16 * j : NULL, cl, nt);
        }
    }
}
#define DIRECT2_CUT(NV, PB)                                                    \
    DIRECT2 static void direct2_##NV##_##PB(                                   \
        const float *x0, int64_t ps, int64_t rs, int64_t cs, int64_t nkh,      \
        int64_t nkw, int64_t KW, int64_t C, const float *w, int64_t OP,        \
        const float *bias, const float *bias_p, float *y, int64_t ys,          \
        int64_t nvalid, const float *res, const float *cl, int nt)             \
    {                                                                          \
        direct2_cut(NV, PB, x0, ps, rs, cs, nkh, nkw, KW, C, w, OP, bias,      \
                    bias_p, y, ys, nvalid, res, cl, nt);                       \
    }
#define DIRECT2_CUTS(NV)                                                       \
    DIRECT2_CUT(NV, 1) DIRECT2_CUT(NV, 2) DIRECT2_CUT(NV, 3)                   \
    DIRECT2_CUT(NV, 4) DIRECT2_CUT(NV, 5) DIRECT2_CUT(NV, 6)
DIRECT2_CUTS(1) DIRECT2_CUTS(2) DIRECT2_CUTS(3) DIRECT2_CUTS(4)
/* a run of nb blocks of pb pixels of the 1x1 product, as the AVX-512
 * spans, but vector by vector of output channels (one vector where the
 * blocks of the packed weights are one vector wide: conv_direct_bw), each
 * over all the blocks, so that one vector's column of weights is read by
 * every block while it is in L1 / L2; the sums those of the AVX-512
 * kernels, in the same order.  (Until 2026-11-29 the input channels past
 * 512 ran in slices of about 256, each slice's sums added to the stored
 * ones: 128 x 3072 x 768 5.8 -> 3.6-4.4 ms before the kernels asked for
 * their weights ahead (DIRECT2_PF_ROWS); with that, unsliced measured the
 * same or 1-4 % faster -- 128 x 3072 x 768 2.78 against 2.87 ms, 1500 x
 * 1536 x 384 7.97 against 8.29, whole models within 1 % -- and the slices
 * summed otherwise than the kernels of a block with an epilogue, so a
 * fused activation changed the product's bits at this level.) */
#define DIRECT2_SPAN(NV, PB)                                                   \
    DIRECT2 __attribute__((flatten)) static void span2_##NV##_##PB(            \
        const float *x, int64_t xs, int64_t C, const float *w, int64_t OP,     \
        const float *bias, float *y, int64_t ys, int64_t nvalid,               \
        const float *res, const float *cl, int nt, int64_t nb)                 \
    {                                                                          \
        for (int j = 0; j < NV && nvalid - 16 * j > 0; j++) {                  \
            for (int64_t b = 0; b < nb; b++) {                                 \
                float *yb = y + b * PB * ys + 16 * j;                          \
                direct2n_1_##PB(x + b * PB * xs, xs, 0, 0, 1, 1, 1, C,         \
                                w + 16 * j, OP, bias + 16 * j, NULL, yb, ys,   \
                                nvalid - 16 * j,                               \
                                res ? res + b * PB * ys + 16 * j : NULL, cl,   \
                                nt);                                           \
            }                                                                  \
        }                                                                      \
    }
#define DIRECT2_SPANS(NV)                                                      \
    DIRECT2_SPAN(NV, 1) DIRECT2_SPAN(NV, 2) DIRECT2_SPAN(NV, 3)                \
    DIRECT2_SPAN(NV, 4) DIRECT2_SPAN(NV, 5) DIRECT2_SPAN(NV, 6)
DIRECT2_SPANS(1) DIRECT2_SPANS(2) DIRECT2_SPANS(3) DIRECT2_SPANS(4)

/* ---- the kernels of the CPU's level ---------------------------------------
 * fn[nv][pb]: the nv x pb micro-kernel (every nv of 1 to 4 and pb of 1 to
 * DIRECT_PB; taller ones up to top[nv]); span[nv][pb]: runs of them on
 * the 1x1 product; w24, span24: the 16 + 8 lane kernels of exactly 24
 * channels (AVX-512 only; NULL: the 2-vector ones).  Chosen once per
 * process by cpu_isa() (WEBNN_CPU_ISA caps it). */
typedef struct direct_kset {
    direct_fn fn[5][DIRECT_TOP1 + 1];
    span_fn span[5][DIRECT_TOP1 + 1];
    direct_fn w24[DIRECT_TOP2 + 1];
    span_fn span24[DIRECT_TOP2 + 1];
    int64_t top[5];
} direct_kset;

static const direct_kset direct_ks512 = {
    .fn = {
        { NULL },
        { NULL, direct_1_1, direct_1_2, direct_1_3, direct_1_4, direct_1_5,
          direct_1_6, direct_1_7, direct_1_8, direct_1_9, direct_1_10,
          direct_1_11, direct_1_12 },
        { NULL, direct_2_1, direct_2_2, direct_2_3, direct_2_4, direct_2_5,
          direct_2_6, direct_2_7, direct_2_8 },
        { NULL, direct_3_1, direct_3_2, direct_3_3, direct_3_4, direct_3_5,
          direct_3_6 },
        { NULL, direct_4_1, direct_4_2, direct_4_3, direct_4_4, direct_4_5,
          direct_4_6 },
    },
    .span = {
        { NULL },
        { NULL, SPANS12(1) },
        { NULL, SPANS8(2) },
        { NULL, SPANS6(3) },
        { NULL, SPANS6(4) },
    },
    .w24 = { NULL, direct_24_1, direct_24_2, direct_24_3, direct_24_4,
             direct_24_5, direct_24_6, direct_24_7, direct_24_8 },
    .span24 = { NULL, SPANS8(24) },
    .top = { 0, DIRECT_TOP1, DIRECT_TOP2, DIRECT_PB, DIRECT_PB },
};

#define DIRECT2_ROW(NV) { NULL, direct2_##NV##_1, direct2_##NV##_2,           \
                          direct2_##NV##_3, direct2_##NV##_4,                  \
                          direct2_##NV##_5, direct2_##NV##_6 }
#define SPAN2_ROW(NV) { NULL, span2_##NV##_1, span2_##NV##_2, span2_##NV##_3, \
                        span2_##NV##_4, span2_##NV##_5, span2_##NV##_6 }
static const direct_kset direct_ks256 = {
    .fn = { { NULL }, DIRECT2_ROW(1), DIRECT2_ROW(2), DIRECT2_ROW(3),
            DIRECT2_ROW(4) },
    .span = { { NULL }, SPAN2_ROW(1), SPAN2_ROW(2), SPAN2_ROW(3),
              SPAN2_ROW(4) },
    .top = { 0, DIRECT2_TOP1, DIRECT2_TOP1, DIRECT2_TOP1, DIRECT2_TOP1 },
};

static const direct_kset *
direct_ks(void)
{
    return cpu_has_avx512() ? &direct_ks512 : &direct_ks256;
}

/* The packed weights' block width (direct_pack_strided) for weights of
 * `taps` rows (KH KW input channels): 64 output channels, 4 vectors, where
 * the AVX-512 kernels run (a block of up to 4 vectors reads each row of
 * weights as one 256-byte run).  At AVX2, whose native blocks are one
 * vector wide, 16 from DIRECT2_BW16_TAPS rows on: each block's weights
 * one contiguous stream, not a 64-byte line of every 256 (a column of
 * more than 128 of those falls in a quarter of L1's sets and does not stay
 * there while the blocks of pixels reuse it; weights from memory come in
 * four strided passes).  AVX2, 2 threads, min of alternating processes:
 * 2048^3 107 -> 89 ms, 128 x 3072 x 768 3.75 -> 3.01, 64 x 576 x 49152
 * 25.5 -> 21.1, 9 x 768 x 768 0.076 -> 0.064.  Fewer rows keep 64: with 16
 * to 40 channels the column stays in L1 anyway, and one-vector blocks
 * measured slower there (3136 x 24 x 144 with SiLU 0.29 against 0.34 ms).
 * The sums are the same either way. */
#define DIRECT2_BW16_TAPS 128
int64_t
conv_direct_bw(int64_t taps)
{
    return cpu_has_avx512() || taps < DIRECT2_BW16_TAPS ? 64 : 16;
}

/* The micro-kernel for the next block of a span of n >= 1 pixels (n >= 1)
 * of nv vectors of output channels (w24: the 16 + 8 lane kernels of
 * exactly 24 channels), in *pb the block's height.  The span is cut into
 * as few blocks as the tallest kernel allows (DIRECT_TOP1 pixels for nv 1,
 * DIRECT_TOP2 for nv 2 and the 24-channel kernels, DIRECT_PB for nv 3 and
 * 4), all of
 * about the same height: a 56-pixel row of 4 vectors runs as 6 x 6 + 4 x
 * 5 rather than 9 x 6 + 2, a 7 x 7 image's 49 pixels as 4 x 6 + 5 x 5
 * rather than 8 x 6 + 1 -- the short block reads the block's weights as
 * the tall ones do for a fraction of their multiply-adds.  The sums of
 * each output are the same, in the same order, whatever the height. */
direct_fn
conv_direct_fn(int nv, int64_t pb)
{
    return direct_ks()->fn[nv][pb];
}

direct_fn
conv_direct_pick(int nv, bool w24, int64_t n, int64_t *pb)
{
    const direct_kset *ks = direct_ks();
    w24 = w24 && ks->w24[1];
    const int64_t top = w24 ? DIRECT_TOP2 : ks->top[nv];
    const int64_t nb = (n + top - 1) / top;
    *pb = (n + nb - 1) / nb;
    return w24 ? ks->w24[*pb] : ks->fn[nv][*pb];
}

/* AVX-512; or AVX2 but for filters larger than 1x1 on rows narrower than
 * DIRECT2_MIN_OW (6-pixel blocks of one vector each read the block's
 * weights from L2 for few multiply-adds there: 3x3 512 -> 512 on 7 x 7
 * 2.4 against im2col + BLIS's 2.0 ms, 256 -> 256 on 14 x 14 even, 64 -> 64
 * on 56 x 56 1.16 against 1.45) */
#define DIRECT2_MIN_OW 16
/* strided, from 7 output columns (im2col + BLIS gathers the strided taps
 * into a column matrix first; AVX2 on Zen 4, 2 threads, min of 30, three
 * alternations: ResNet-50's 3x3 stride 2 14 x 14 512 -> 512 1.59 -> 1.25
 * ms, 28 x 28 256 -> 256 1.29 -> 1.20, 14 x 14 64 -> 64 0.046 -> 0.026,
 * 20 x 20 128 -> 96 0.21 -> 0.13; 8 x 8 1024 -> 1024 to 4 x 4 stays on
 * BLIS: 3.6 against 5.5) */
#define DIRECT2_MIN_OW_STRIDED 7
static bool
direct_isa_ok(const geom *g)
{
    return cpu_has_avx512() ||
           (cpu_isa() >= CPU_ISA_AVX2 &&
            (g->KH * g->KW <= 1 || g->OW >= DIRECT2_MIN_OW ||
             (g->sw > 1 && g->OW >= DIRECT2_MIN_OW_STRIDED)));
}

bool
direct_usable(const geom *g)
{
    /* faster than im2col + BLIS for every channel count measured (1 to
     * 256 in, 8 to 256 out); WEBNN_CONV_DIRECT=0 turns it off (the tests
     * use it to run the portable paths too) */
    return direct_isa_ok(g) && g->G == 1 && g->direct_ok;
}

/* grouped nhwc convolutions (not depthwise) on the same kernel, group by
 * group: each group's Cg input channels are read in place from the
 * pixel's C, its Og outputs written in place (a partial last vector
 * through a lane mask).  Measured on 2 threads against im2col + BLIS per
 * group (us): ShuffleNet's 1x1 28 x 28 136 -> 136 in 4 groups 61 / 156,
 * 14 x 14 272 -> 272 46 / 99, 56 x 56 24 -> 112 51 / 212; ResNeXt's 3x3
 * 28 x 28 128 -> 128 in 32 groups of 4 189 / 912; 1x1 in 8 groups of 8
 * 27 / 115. */
bool
direct_grouped_usable(const geom *g)
{
    return direct_isa_ok(g) && g->direct_ok && g->nhwc && g->G > 1;
}

/* Short rows gathered: an nhwc convolution (groups 1, not a plain 1x1)
 * whose output rows are narrower than GATHER_OW pixels copies its taps into
 * a column matrix (im2col.c's rows: each pixel's KH KW C taps in the packed
 * filter's row order, zeros in the padding) and runs the 1x1 product over
 * all N OH OW pixels at once, with the same packed filter read as KH KW C
 * rows.  Row by row, a 7-pixel row ran as blocks of 4 + 3 pixels, each
 * reading the block's weights for few multiply-adds, and the border
 * columns as 1-pixel blocks (their taps clipped), whose two accumulator
 * chains at AVX2 keep a quarter of the FMA units busy; over the flat pixels
 * the 49 of a 7 x 7 image run as 4 x 6 + 5 x 5.  The column matrix is at
 * most GATHER_MAX_BYTES, in the node's scratch.  The sums are those of the
 * row kernel, in the same (kh, kw, c) order, plus the padding's zero
 * products. */
#define GATHER_MAX_BYTES ((int64_t)4 << 20)
/* the widest rows gathered: at AVX-512 only 7 x 7 outputs pay (a 1-pixel
 * block of 4 vectors keeps the FMA units busy there; 14-pixel rows gathered
 * measured 1-5 % slower), at AVX2 rows of 7 and 14 (28: within 2 %) */
static int64_t
gather_ow(void)
{
    return cpu_has_avx512() ? 8 : 16;
}

bool
conv_direct_gathered(const geom *g)
{
    const int64_t P = g->N * g->OH * g->OW, K = g->KH * g->KW * g->C;
    const bool plain = g->KH == 1 && g->KW == 1 && g->sh == 1 &&
                       g->sw == 1 && g->pt == 0 && g->pl == 0 &&
                       g->OH == g->H && g->OW == g->W;
    return cpu_isa() >= CPU_ISA_AVX2 && g->gather_ok && g->nhwc &&
           g->G == 1 && !plain && g->OW < gather_ow() && P > 0 &&
           (double)P * K * sizeof(float) <= (double)GATHER_MAX_BYTES;
}

/* direct_row's block of nv vectors, OP wide (the rows of its weights OP
 * floats apart), without the epilogue that is not in registers */
static void
direct_row_block(const geom *g, const float *x, const float *wt, int64_t OP,
                 const float *bp, float *y, int64_t n, int64_t oh, int64_t gi,
                 int64_t o0, int nv, int64_t lo, int64_t hi, float *yrow)
{
    const int64_t C = g->C, Cg = g->Cg, W = g->W, KW = g->KW;
    int64_t kh_lo, kh_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, g->H, &kh_lo, &kh_hi);
    int64_t nkh = kh_hi - kh_lo, ih = oh * g->sh - g->pt + kh_lo * g->dh;
    const float *xrow = x + (n * g->H + (nkh > 0 ? ih : 0)) * W * C + gi * Cg;
    /* wt: the block of output channels o0 of group gi (see
     * conv_direct_nhwc), OP wide */
    const float *wk = wt + kh_lo * KW * Cg * OP;
    const int64_t ps = g->sw * C, rs = g->dh * W * C, cs = g->dw * C;
    const int64_t oc = gi * g->Og + o0; /* the block's first channel */
    /* the row's offset in the output (the epilogue's addends are read at
     * it); the row itself there, or at yrow (a conv pair's ring) */
    const int64_t roff = (n * g->OH + oh) * g->OW * g->O + oc;
    float *yr = yrow ? yrow + oc : y + roff;
    int64_t nvalid = g->Og - o0 < 16 * nv ? g->Og - o0 : 16 * nv;
    float clamp[3];
    const float *res, *cl;
    reg_epi_of(g->epi, clamp, &res, &cl);
    /* 16 and 32 output channels: the tall blocks (up to DIRECT_TOP1 x 1,
     * DIRECT_TOP2 x 2 vectors), as the 1x1 product does (MobileNetV2's
     * first convolution, 3 -> 32: 264 -> 242 us on one thread with 12 x 2
     * blocks, the same with 8 x 2) */
    /* In the interior columns, with no dilation across and no groups, a
     * filter row's taps (kw, c) are KW C consecutive floats of the input
     * row, and its weights KW C consecutive rows of the packed filter: one
     * run of KW C "channels" per filter row (MobileNetV2's first
     * convolution, 3 channels: 3 x 9 iterations instead of 3 x 3 x 3, each
     * kw's loop set-up around 3 multiply-adds a pixel cost a fifth of its
     * time) -- the same products, summed in the same order. */
    const bool runs = g->dw == 1 && Cg == C;
    for (int64_t ow = lo, pb; ow < hi; ow += pb) {
        conv_direct_pick(nv, false, hi - ow, &pb)(
            xrow + (ow * g->sw - g->pl) * C, ps, rs, cs, nkh, runs ? 1 : KW,
            runs ? 1 : KW, runs ? KW * Cg : Cg, wk, OP, bp + o0, NULL,
            yr + ow * g->O, g->O, nvalid,
            res ? res + roff + ow * g->O : NULL, cl, 0);
    }
    /* border columns: only the taps inside the row */
    for (int64_t o = 0; o < g->OW; o++) {
        if (o == lo) {
            o = hi;
            if (o >= g->OW) {
                break;
            }
        }
        int64_t kw_lo, kw_hi;
        valid_range(KW, g->dw, o * g->sw - g->pl, W, &kw_lo, &kw_hi);
        int64_t iw = o * g->sw - g->pl + kw_lo * g->dw;
        direct_ks()->fn[nv][1](xrow + (kw_hi > kw_lo ? iw : 0) * C, ps, rs, cs, nkh,
                          kw_hi - kw_lo, KW, Cg, wk + kw_lo * Cg * OP, OP,
                          bp + o0, NULL, yr + o * g->O, g->O, nvalid,
                          res ? res + roff + o * g->O : NULL, cl, 0);
    }
}

/* Output row oh of image n, output channels [o0, o0 + 16 nv) of group gi
 * (its Cg input channels, from channel gi Cg of each pixel's C, give its
 * Og output channels, from channel gi Og of each pixel's O); wt: their
 * packed weights (one block of 16 nv columns, or nv one-vector blocks at
 * AVX2: conv_direct_bw), run block by block, the epilogue over all 16 nv
 * channels of each pixel after them. */
static void
direct_row(const geom *g, const float *x, const float *wt, const float *bp,
           float *y, int64_t n, int64_t oh, int64_t gi, int64_t o0, int nv,
           int64_t lo, int64_t hi, float *yrow)
{
    const int sub = conv_direct_bw(g->KH * g->KW * g->Cg) >= 16 * nv
                        ? nv : 1; /* vectors a block */
    for (int j = 0; j < nv && g->Og - o0 - 16 * j > 0; j += sub) {
        direct_row_block(g, x, wt + 16 * j * g->KH * g->KW * g->Cg, 16 * sub,
                         bp, y, n, oh, gi, o0 + 16 * j, sub, lo, hi, yrow);
    }
    float clamp[3];
    const float *res, *cl;
    if (g->epi && !reg_epi_of(g->epi, clamp, &res, &cl)) {
        /* the row's pixels, channels [oc, oc + nvalid) */
        const int64_t oc = gi * g->Og + o0;
        const int64_t roff = (n * g->OH + oh) * g->OW * g->O + oc;
        float *yr = yrow ? yrow + oc : y + roff;
        int64_t nvalid = g->Og - o0 < 16 * nv ? g->Og - o0 : 16 * nv;
        cpu_epi_rows(g->epi, yr, g->O, g->OW, roff, nvalid, oc);
    }
}





/* The 1x1 product (strides 1, no padding) for pixels [p0, p1) and output
 * channel block ob (channels [64 ob, 64 ob + 64) of the O computed): the
 * C input channels of pixel p start at x + p xs, its O output channels at
 * y + p ys (and those of res, NULL: none, at res + p ys); wt, OP, bp as
 * packed by conv_direct_pack.  cl: a clamp applied in registers
 * (reg_epi_of), epi: an epilogue applied to each block just stored (NULL:
 * none), at element offset off + p ys + o0 of its output and channel
 * ch0 + o0 (a group's first channel, 0 without groups); nt: streaming
 * stores. */
void
conv_1x1_span(const float *x, int64_t C, int64_t xs, int64_t p0, int64_t p1,
              const float *wt, int64_t OP, int64_t O, int64_t ys, int64_t ob,
              const float *bp, float *y, int64_t off, int64_t ch0,
              const float *res, const float *cl, const cpu_epi *epi, int nt)
{
    /* the group's width; its blocks' (conv_direct_bw), sub vectors each */
    const int64_t o0 = ob * 64, gw = OP - o0 < 64 ? OP - o0 : 64;
    const int sub = conv_direct_bw(C) >= gw ? (int)(gw / 16) : 1;
    const int64_t sw = 16 * sub, gvalid = O - o0 < gw ? O - o0 : gw;
    /* exactly 24 channels in a block of 32: the 16 + 8 lane kernels */
    const direct_kset *ks = direct_ks();
    const bool w24 = sub == 2 && gvalid == 24 && !nt && ks->w24[1];
    if (!epi && p1 > p0) {
        /* the blocks conv_direct_pick would cut, as two runs: nb blocks,
         * the first r of them one pixel taller */
        const int64_t n = p1 - p0;
        const int64_t top = w24 ? DIRECT_TOP2 : ks->top[sub];
        const int64_t nb = (n + top - 1) / top, q = n / nb, r = n % nb;
        const span_fn *fns = w24 ? ks->span24 : ks->span[sub];
        for (int64_t oj = o0; oj < o0 + gvalid; oj += sw) {
            const int64_t nvalid = O - oj < sw ? O - oj : sw;
            const float *wo = wt + oj * C, *bo = bp + oj;
            for (int part = 0; part < 2; part++) {
                const int64_t pb = part ? q : q + 1, cnt = part ? nb - r : r;
                const int64_t p = part ? p0 + r * (q + 1) : p0;
                if (cnt) {
                    fns[pb](x + p * xs, xs, C, wo, sw, bo, y + p * ys + oj,
                            ys, nvalid, res ? res + p * ys + oj : NULL, cl,
                            nt, cnt);
                }
            }
        }
        return;
    }
    for (int64_t p = p0, pb = 1; p < p1; p += pb) {
        for (int64_t oj = o0; oj < o0 + gvalid; oj += sw) {
            const int64_t nvalid = O - oj < sw ? O - oj : sw;
            conv_direct_pick(sub, w24, p1 - p, &pb)(
                x + p * xs, xs, 0, 0, 1, 1, 1, C, wt + oj * C, sw, bp + oj,
                NULL, y + p * ys + oj, ys, nvalid,
                res ? res + p * ys + oj : NULL, cl, nt);
        }
        /* the epilogue over the group's channels of each pixel */
        if (epi) {
            cpu_epi_rows(epi, y + p * ys + o0, ys, pb, off + p * ys + o0,
                         gvalid, ch0 + o0);
        }
    }
}

typedef struct d1x1_job {
    int64_t nob;     /* blocks of 64 output channels: G of nobg each */
    int64_t nobg;
    int64_t chunk;
    int64_t grp; /* chunks of pixels per group (see d1x1_body) */
    int pix;     /* task t: chunk t / nob, block t % nob (direct_1x1) */
    int nt;      /* streaming stores (a large, 64-byte aligned output) */
    int64_t P;
    int64_t OP;      /* a group's output channels, padded to 16 */
    int64_t O, Og;   /* output channels, of a group             */
    int64_t C, Cg;   /* input channels, of a group              */
    const float *x;
    const float *wt;
    const float *bp;
    float *y;
    const cpu_epi *epi;
} d1x1_job;

/* block ob (of d1x1_job's nob) of pixels [p0, p1) */
static void
d1x1_block(const d1x1_job *j, int64_t p0, int64_t p1, int64_t ob,
           const float *res, const float *cl, bool reg)
{
    const int64_t gi = ob / j->nobg, oc = gi * j->Og;
    conv_1x1_span(j->x + gi * j->Cg, j->Cg, j->C, p0, p1,
                  j->wt + gi * j->Cg * j->OP, j->OP, j->Og, j->O,
                  ob % j->nobg, j->bp + gi * j->OP, j->y + oc, oc, oc,
                  res ? res + oc : NULL, cl, reg ? NULL : j->epi, j->nt);
}

static void
d1x1_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const d1x1_job *j_ = p_;
    int64_t nob = j_->nob;
    int64_t chunk = j_->chunk;
    int64_t P = j_->P;
    float clamp[3];
    const float *res, *cl;
    bool reg = reg_epi_of(j_->epi, clamp, &res, &cl);
    const int64_t nch = (P + chunk - 1) / chunk, grp = j_->grp;
    const int64_t q = P / nch, r_ = P % nch;
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        /* groups of grp chunks of pixels; in a group, block of output
         * channels after block, each over the group's chunks: the threads
         * working at the same time write different pixels' rows (the same
         * rows' neighbouring 256-byte blocks written from two cores halved
         * the speed), and the group's input stays in cache for its blocks */
        /* chunk ci: pixels [ci q + min(ci, r), + q or q + 1): nch chunks
         * of about the same size (a last chunk of 1 pixel of 49 ran a
         * whole block's weights for one pixel) */
        if (j_->pix) {
            int64_t ci = tsk / nob, ob = tsk % nob;
            int64_t p0 = ci * q + (ci < r_ ? ci : r_);
            d1x1_block(j_, p0, p0 + q + (ci < r_), ob, res, cl, reg);
            continue;
        }
        int64_t g0 = tsk / (nob * grp) * grp, r = tsk % (nob * grp);
        int64_t gn = nch - g0 < grp ? nch - g0 : grp;
        if (r >= nob * gn) {
            continue; /* past the last, partial group */
        }
        int64_t ci = g0 + r % gn, ob = r / gn;
        int64_t p0 = ci * q + (ci < r_ ? ci : r_);
        d1x1_block(j_, p0, p0 + q + (ci < r_), ob, res, cl, reg);
    }
    if (j_->nt) {
        cpu_nt_fence();
    }
}

typedef struct drows_job {
    int64_t nob;     /* blocks of 64 output channels of a group */
    int64_t OP;      /* a group's output channels, padded to 16 */
    const geom *g;
    const float *x;
    const float *wt;
    float *bp;
    float *y;
    int64_t lo;
    int64_t hi;
} drows_job;

static void
drows_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const drows_job *j_ = p_;
    int64_t nob = j_->nob;
    int64_t OP = j_->OP;
    const geom *g = j_->g;
    const float *x = j_->x;
    const float *wt = j_->wt;
    float *bp = j_->bp;
    float *y = j_->y;
    int64_t lo = j_->lo;
    int64_t hi = j_->hi;
    const int64_t taps = g->KH * g->KW * g->Cg; /* per output channel */
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        /* task: row r, group gi, its block ob */
        int64_t r = tsk / (nob * g->G), gi = tsk / nob % g->G, ob = tsk % nob;
        int64_t o0 = ob * 64, nv = (OP - o0) / 16 < 4 ? (OP - o0) / 16 : 4;
        direct_row(g, x, wt + (gi * OP + o0) * taps, bp + gi * OP, y,
                   r / g->OH, r % g->OH, gi, o0, (int)nv, lo, hi, NULL);
    }
}

/* falloc for packed weights: a block of 1 MiB and more in whole 2 MiB
 * pages, asked of the kernel as transparent huge pages (where THP is
 * "madvise", as on many distributions, a plain allocation gets 4 KiB
 * pages).  A decode step streams every weight from memory once; on 4 KiB
 * pages, a TLB miss every 4 KiB.  Measured on one token's products (2
 * threads, weights well past the L3): 576 x 576 33.9 against 31.7 GB/s,
 * 576 x 1536 33.5 / 30.7, 1536 x 576 30.2 / 21.9, the 576 x 49152 head
 * 34.2 / 31.0.  The price: each such block rounded up to 2 MiB (SmolLM-135M's
 * decode graph, 540 MB of packed weights: about 60 MB more, counted).
 * Only where the product streams its weights (`streamed`: few rows). */
static float *
falloc_big(size_t n, bool streamed)
{
    const size_t huge = (size_t)2 << 20;
    if (!streamed || n > (SIZE_MAX - huge - 128) / sizeof(float) ||
        n * sizeof(float) < ((size_t)1 << 20)) {
        return falloc(n);
    }
    size_t bytes = (n * sizeof(float) + 64 + huge - 1) / huge * huge;
    void *p = NULL;
    if (posix_memalign(&p, huge, bytes) != 0) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE);
#endif
    return p;
}

/* The filter of each of G groups (C input and O output channels a group)
 * in blocks of bw output channels (conv_direct_bw, or 64 for the products
 * of few rows: DIRECT_SMALL_BW), each [KH][KW][C][bw] (the last
 * [KH][KW][C][OP - bw b], OP = O rounded up to 16), zeros in the padding
 * channels, so that the micro-kernel reads its weights as one contiguous
 * stream; group gi's blocks start at gi KH KW C OP.  Made once for a
 * constant filter (cpu_prep, input 1); otherwise a block in *own for the
 * caller to free.  w's element (o, c, h, w) (o counting the output
 * channels of all groups) is at w[o s[0] + c s[1] + h s[2] + w s[3]].
 * NULL: out of memory. */
static const float *
direct_pack_strided(const cpu_call *k, const float *w, const int64_t s[4],
                    int64_t G, int64_t C, int64_t O, int64_t KH, int64_t KW,
                    int64_t bw, float **own)
{
    const int64_t OP = (O + 15) / 16 * 16;
    *own = NULL;
    float *wt = cpu_prep_get(k, 1, CPU_PREP_DIRECT);
    if (wt) {
        return wt;
    }
    /* huge pages only for the products that stream their weights (a
     * decode step's few rows): asking for them costs the first run the
     * kernel's compaction (BERT-base's load + first run 0.5 -> 0.4-1.6 s),
     * which products of many rows, bound by arithmetic, never win back */
    uint64_t rows = wnn_desc_elements(&k->out_desc[0]) / (uint64_t)(G * O > 0 ? G * O : 1);
    wt = falloc_big((size_t)(G * KH * KW * C * OP), rows <= 8);
    if (!wt) {
        return NULL;
    }
    if (OP != O) {
        memset(wt, 0, (size_t)(G * KH * KW * C * OP) * sizeof(float));
    }
    for (int64_t gi = 0; gi < G; gi++) {
        for (int64_t o0 = 0; o0 < OP; o0 += bw) { /* block by block */
            int64_t wb = OP - o0 < bw ? OP - o0 : bw;
            int64_t t[4] = { 1, wb, KW * C * wb, C * wb },
                    d[4] = { O - o0 < bw ? O - o0 : bw, C, KH, KW };
            reorder(w + (gi * O + o0) * s[0], s,
                    wt + (gi * OP + o0) * KH * KW * C, t, d);
        }
    }
    if (!cpu_prep_keep(k, 1, CPU_PREP_DIRECT, wt)) {
        *own = wt;
    }
    return wt;
}

const float *
conv_direct_pack(const cpu_call *k, const geom *g, int layout, const float *w,
                 float **own)
{
    int64_t s[4];
    conv_filter_strides(layout, g, s);
    return direct_pack_strided(k, w, s, g->G, g->Cg, g->Og, g->KH, g->KW,
                               conv_direct_bw(g->KH * g->KW * g->Cg),
                               own);
}

/* The 1x1 product y [P][O] = x [P][C] times the packed weights wt
 * (direct_pack_strided, KH = KW = 1; G groups of C / G input and O / G
 * output channels) + bp (G OP + 16 floats, OP: a group's output channels
 * rounded up to 16, each group's bias at g OP), on nt threads,
 * with the epilogue epi (NULL: none) applied on each block stored.  The
 * tasks: chunks of 96 pixels (fewer for a small image: 7 x 7, 14 x 14,
 * where a 96-pixel chunk per block of output channels left one thread with
 * half again the other's work: about 4 chunks a thread then, a multiple of
 * 12, the tall blocks' height, which costs nothing, as the micro-kernel
 * reads the block's weights per 6 pixels whatever the chunk) times blocks
 * of 64 output channels. */
static void
direct_1x1(const float *x, int64_t P, int64_t C, int64_t O, int64_t G,
           const float *wt, const float *bp, float *y, const cpu_epi *epi,
           int nt)
{
    const int64_t Og = O / G, OP = (Og + 15) / 16 * 16, nobg = (OP + 63) / 64;
    const int64_t nob = G * nobg;
    int64_t chunk = 16 * DIRECT_PB;
    if (P < 4 * nt * chunk) {
        int64_t want = (P + 4 * nt - 1) / (4 * nt);
        chunk = want < 12 ? 12 : (want + 11) / 12 * 12;
    }
    const int64_t nch = (P + chunk - 1) / chunk;
    float clamp_[3];
    const float *res_, *cl_;
    const bool epi_in_regs = !epi || reg_epi_of(epi, clamp_, &res_, &cl_);
    /* a group's input within about 256 KiB (at least a chunk a thread) */
    int64_t grp = (256 << 10) / (chunk * C * 4);
    grp = grp < nt ? nt : grp > nch ? nch : grp;
    /* Weights past 1 MiB and no more rows than columns (a transformer's
     * products, a CNN's last 1x1 layers): every chunk in one group, so that
     * the threads take whole blocks of columns and each weight is read
     * once, by one thread, while the input (no larger than the weights, at
     * most 16 MiB) is re-read from the caches.  Groups of 256 KiB had each
     * thread stream all the weights, from memory where a model's weights
     * do not fit in L3.  2 threads, Zen 4, both schedules alternating in
     * one process, min of 15-16: BERT-base 143.0 -> 128.7 ms at AVX2,
     * 119.7 -> 115.9 at AVX-512; ViT-B/16 186.3 -> 182.7 and 180.1 -> 170.2; 12
     * layers of 128 x 768 x 3072 and 3072 x 768 (weights from memory) 3.26
     * -> 3.07 ms a product at AVX2, 2.83 -> 2.79 at AVX-512; GPT-2, Llama,
     * ResNet-50, ConvNeXt-T, EfficientNet-B0 and Whisper-tiny within 2 %.
     * The sums are the same either way. */
    if (OP >= P && (double)C * OP * sizeof(float) > (double)(1 << 20) &&
        (double)P * C * sizeof(float) <= (double)(16 << 20)) {
        grp = nch;
    }
    const int64_t ngrp = (nch + grp - 1) / grp;
    d1x1_job j_ = {.nob = nob, .nobg = nobg, .chunk = chunk, .grp = grp,
                   .P = P, .OP = OP,
                   .nt = (double)P * O * sizeof(float) >= (double)cpu_nt_bytes() &&
                         Og % 16 == 0 && ((uintptr_t)y & 63) == 0 && epi_in_regs,
                   .O = O, .Og = Og, .C = C, .Cg = C / G, .x = x, .wt = wt,
                   .bp = bp, .y = y, .epi = epi};
    /* An image too small for a group per thread (14 x 14, 7 x 7 at batch
     * 1): the groups' order would hand each thread its own blocks of
     * output channels of the same pixels (the affinity runs of
     * cpu_parallel_for_dynamic), so that both cores write every pixel's
     * row and the next layer's threads read half their input from the
     * other core.  Chunk by chunk instead, every block of a chunk in turn:
     * each thread writes (and the next layer reads) its own pixels, and
     * re-reads the weights, where they fit in L2.  MobileNetV2 batch 1:
     * its 64 -> 384 expansions 61 -> 55 us, the depthwise layers after
     * them 7-10 %, and 33 % at 7 x 7 (medians of 6 profiles); the whole
     * model 3.80 -> 3.72 ms. */
    j_.pix = ngrp <= nt && (double)C * OP * sizeof(float) <= (double)(1 << 20);
    cpu_parallel_for_dynamic(j_.pix ? nch * nob : ngrp * grp * nob, 1, nt,
                             d1x1_body, &j_);
}

/* Products of at most DIRECT_SMALL_M rows (a language model's decode step,
 * one token: a matrix-vector product) read each weight once, so they run at
 * the speed of memory, not of the multiply-adds.  The 1x1 product took its
 * thread count from the flops, which kept 576 x 576 and 576 x 1536 at one
 * row on one thread: one core streams about 26-29 GB/s here, both together
 * about 33.  Here the threads follow the bytes of weights (DIRECT_SMALL_MT
 * and more: two threads' start and join cost more than they save on less),
 * and the work is cut into whole 64-column blocks of the packed weights
 * (each a contiguous stream), or, with fewer than two blocks a thread, into
 * 16-column vectors (a piece's columns within a block run on the
 * micro-kernel as they are, its rows OP floats apart).  Each piece runs all
 * m rows, in blocks of conv_direct_pick's heights.  The sums are those of
 * the 1x1 product, in the same order.  The weights are packed in blocks of
 * 64 columns at every level (DIRECT_SMALL_BW): at AVX2, one row against
 * one-vector blocks holds 2 accumulators, too few to hide the
 * multiply-adds' latency, and four blocks read at once as four streams
 * measured 5-10 % slower than one (1 x 576 x 1536, 1 x 576 x 49152, 2
 * threads) -- the AVX2 kernels read a 64-column block two vectors at a time
 * for 1 to 3 rows (direct2_cut). */
#define DIRECT_SMALL_M 8
#define DIRECT_SMALL_MT (1 << 20)
#define DIRECT_SMALL_BW 64

typedef struct dsm_job {
    const float *x, *wt, *bp;
    float *y;
    const cpu_epi *epi;
    int64_t M, C, O, OP, V, unit;
} dsm_job;

static void
dsm_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const dsm_job *j = p_;
    const int64_t M = j->M, C = j->C, O = j->O, OP = j->OP;
    const int64_t bv = DIRECT_SMALL_BW / 16; /* vectors a block */
    float clamp[3];
    const float *res, *cl;
    const bool reg = reg_epi_of(j->epi, clamp, &res, &cl);
    /* units [b_, e_): vectors [v0, v1) of the V */
    int64_t v0 = b_ * j->unit, v1 = e_ * j->unit < j->V ? e_ * j->unit : j->V;
    while (v0 < v1) {
        const int64_t blk = v0 / bv, o0 = 16 * bv * blk;
        const int64_t wb = OP - o0 < 16 * bv ? OP - o0 : 16 * bv; /* its width */
        const int64_t a = v0 - bv * blk;
        const int64_t e = v1 - bv * blk < wb / 16 ? v1 - bv * blk : wb / 16;
        const int nv = (int)(e - a);
        const int64_t oc = o0 + 16 * a; /* the first column */
        const int64_t nvalid = O - oc < 16 * nv ? O - oc : 16 * nv;
        const float *w = j->wt + o0 * C + 16 * a;
        for (int64_t p = 0, pb; p < M; p += pb) {
            conv_direct_pick(nv, false, M - p, &pb)(
                j->x + p * C, C, 0, 0, 1, 1, 1, C, w, wb, j->bp + oc, NULL,
                j->y + p * O + oc, O, nvalid, res ? res + p * O + oc : NULL,
                cl, 0);
            if (!reg && j->epi) {
                cpu_epi_rows(j->epi, j->y + p * O + oc, O, pb, p * O + oc,
                             nvalid, oc);
            }
        }
        v0 = bv * blk + e;
    }
}

/* y [m][n] = x [m][C] wt (packed, 1 group) + bp, m <= DIRECT_SMALL_M */
static void
direct_small_m(const float *x, int64_t m, int64_t C, int64_t n,
               const float *wt, const float *bp, float *y, const cpu_epi *epi)
{
    const int64_t OP = (n + 15) / 16 * 16, V = OP / 16;
    int nt = (double)C * OP * sizeof(float) >= DIRECT_SMALL_MT
                 ? cpu_num_threads()
                 : threads_for(2.0 * m * n * C);
    dsm_job j = {.x = x, .wt = wt, .bp = bp, .y = y, .epi = epi, .M = m,
                 .C = C, .O = n, .OP = OP, .V = V,
                 .unit = (V + 3) / 4 >= 2 * nt ? 4 : 1};
    /* units taken dynamically, with affinity (a thread held up by another
     * process leaves its units to the other) */
    cpu_parallel_for_dynamic((V + j.unit - 1) / j.unit, 1, nt, dsm_body, &j);
}

/* matmul and gemm (cpu/blis/gemm.c) with a constant b on the 1x1 product:
 * measured faster than BLIS at every size tried (2 threads, AVX-512: M x K
 * x N 1024 x 768 x 3072 220 against 197 GFLOP/s with the bias pass; 2048^3
 * 225 against 204; 8 x 768 x 768 0.06 against 0.2 ms, BLIS packing b on
 * every call), and it applies the epilogue while each block is hot. */
bool
cpu_direct_product(const cpu_call *k, const float *a, int64_t m, int64_t kk,
                   int64_t n, const float *b, int64_t sb_k, int64_t sb_n,
                   const float *bias, float *c, cpu_epi *epi,
                   wnn_status *st, wnn_error *err)
{
    geom g = { .G = 1, .direct_ok = k->config->conv_direct };
    /* fewer than 8 columns would leave most of each 16-lane vector idle;
     * a b that is not a constant would be packed on every call (a fresh
     * block, page faults and all: 0.73-0.94x BLIS for n x n x n products,
     * n = 256 to 2048) */
    if (!direct_usable(&g) || n < 8 || m < 1 || kk < 1 ||
        !(k->const_in >> 1 & 1)) {
        return false;
    }
    const int64_t s[4] = { sb_n, sb_k, 0, 0 }, OP = (n + 15) / 16 * 16;
    float *own = NULL;
    const float *wt = direct_pack_strided(
        k, b, s, 1, kk, n, 1, 1,
        m <= DIRECT_SMALL_M ? DIRECT_SMALL_BW : conv_direct_bw(kk), &own);
    float *bp = fcalloc((size_t)OP + 16);
    if (!wt || !bp) {
        free(own);
        free(bp);
        *st = cpu_fail(k, err, "out of memory");
        return true;
    }
    if (bias) {
        memcpy(bp, bias, (size_t)n * sizeof(float));
    }
    if (m <= DIRECT_SMALL_M) {
        direct_small_m(a, m, kk, n, wt, bp, c, epi);
    } else {
        direct_1x1(a, m, kk, n, 1, wt, bp, c, epi,
                   threads_for(2.0 * m * n * kk));
    }
    if (epi) {
        epi->applied = true;
    }
    free(own);
    free(bp);
    *st = WNN_OK;
    return true;
}

/* A b that is not a constant, packed by the caller once and used for many
 * products of its rows on one thread each (attention's k^T and v, per head
 * and dispatch): the layout of direct_pack_strided, [OP / 64][kk][64] (the
 * last block [kk][OP - 64 b], OP = n rounded up to 16, zeros in the
 * padding columns).  cpu_direct_packed_floats: its size in floats, 0 where
 * the kernel does not run (no AVX2, WEBNN_CONV_DIRECT=0, fewer than 8
 * columns). */
int64_t
cpu_direct_packed_floats(const cpu_config *cfg, int64_t kk, int64_t n)
{
    geom g = { .G = 1, .direct_ok = cfg->conv_direct };
    return direct_usable(&g) && n >= 8 && kk >= 1 ? kk * ((n + 15) / 16 * 16)
                                                  : 0;
}

int64_t
cpu_direct_block_cols(int64_t kk)
{
    return conv_direct_bw(kk);
}

void
cpu_direct_pack(const float *b, int64_t ldb, int64_t kk, int64_t n,
                float *wt)
{
    const int64_t OP = (n + 15) / 16 * 16, bw = conv_direct_bw(kk);
    for (int64_t o0 = 0; o0 < OP; o0 += bw) {
        const int64_t wb = OP - o0 < bw ? OP - o0 : bw;
        const int64_t nv = n - o0 < wb ? n - o0 : wb;
        float *d = wt + o0 * kk;
        for (int64_t c = 0; c < kk; c++, d += wb) {
            memcpy(d, b + c * ldb + o0, (size_t)nv * sizeof(float));
            memset(d + nv, 0, (size_t)(wb - nv) * sizeof(float));
        }
    }
}

/* c [m][n] (rows ldc apart) = a [m][kk] (rows lda apart) times the packed
 * b, on the calling thread: the 1x1 product's spans, block of 64 columns
 * after block (each block's weights stay in L1 / L2 for all m rows) */
void
cpu_direct_packed_product(const float *a, int64_t lda, int64_t m, int64_t kk,
                          int64_t n, const float *wt, float *c, int64_t ldc)
{
    const int64_t OP = (n + 15) / 16 * 16;
    const float *zero = cpu_zeros((size_t)OP + 16);
    for (int64_t ob = 0; zero && ob * 64 < OP; ob++) {
        conv_1x1_span(a, kk, lda, 0, m, wt, OP, n, ldc, ob, zero, c, 0, 0,
                      NULL, NULL, NULL, 0);
    }
}

void
conv_direct_cols(const geom *g, int64_t *lo, int64_t *hi)
{
    int64_t lo2, hi2;
    valid_range(g->OW, g->sw, -g->pl, g->W, lo, hi);
    valid_range(g->OW, g->sw, -g->pl + (g->KW - 1) * g->dw, g->W, &lo2, &hi2);
    *lo = lo2 > *lo ? lo2 : *lo;
    *hi = hi2 < *hi ? hi2 : *hi;
    if (*hi < *lo) {
        *hi = *lo;
    }
}

void
conv_direct_prow(const geom *g, const float *x, const float *wt,
                 const float *bp, float *yrow, int64_t n, int64_t oh,
                 int64_t lo, int64_t hi)
{
    const int64_t OP = (g->O + 15) / 16 * 16, taps = g->KH * g->KW * g->C;
    for (int64_t o0 = 0; o0 < OP; o0 += 64) {
        int64_t nv = (OP - o0) / 16 < 4 ? (OP - o0) / 16 : 4;
        direct_row(g, x, wt + o0 * taps, bp, NULL, n, oh, 0, o0, (int)nv,
                   lo, hi, yrow);
    }
}

/* The packed filter wt (groups 1) with each input channel c's rows
 * times s[c] (g->in_scale, conv2d.c), into the node's CPU_PREP_SCALED
 * slot (made once, refilled per call; or a block in *own for the caller
 * to free).  Each block of bw columns is [KH][KW][C][wb]: row r is input
 * channel r % C. */
static const float *
direct_scaled(const cpu_call *k, const geom *g, const float *wt, float **own)
{
    const int64_t C = g->C, rows = g->KH * g->KW * C,
                  OP = (g->O + 15) / 16 * 16,
                  bw = conv_direct_bw(rows);
    const float *s = g->in_scale;
    float *d = k->prep ? k->prep->slot[CPU_PREP_SCALED] : NULL;
    if (!d) {
        d = falloc((size_t)(rows * OP));
        if (!d) {
            return NULL;
        }
        if (k->prep) {
            k->prep->slot[CPU_PREP_SCALED] = d;
        } else {
            *own = d;
        }
    }
    for (int64_t o0 = 0; o0 < OP; o0 += bw) {
        const int64_t wb = OP - o0 < bw ? OP - o0 : bw;
        const float *src = wt + o0 * rows;
        float *dst = d + o0 * rows;
        for (int64_t r = 0; r < rows; r++) {
            const float f = s[r % C];
            for (int64_t j = 0; j < wb; j++) {
                dst[r * wb + j] = src[r * wb + j] * f;
            }
        }
    }
    return d;
}

wnn_status
conv_direct_nhwc(const cpu_call *k, wnn_error *err, const geom *g,
                 int layout, const float *x, const float *w, const float *b,
                 float *y)
{
    const int64_t C = g->C, O = g->O, KH = g->KH, KW = g->KW, G = g->G;
    const int64_t Og = g->Og, OP = (Og + 15) / 16 * 16; /* per group */
    float *own = NULL, *own_s = NULL;
    const float *wt = conv_direct_pack(k, g, layout, w, &own);
    if (wt && g->in_scale && G == 1) {
        wt = direct_scaled(k, g, wt, &own_s);
    }
    float *bp = fcalloc((size_t)(G * OP) + 16);
    if (!wt || !bp) {
        free(own);
        free(own_s);
        free(bp);
        return cpu_fail(k, err, "out of memory");
    }
    for (int64_t gi = 0; b && gi < G; gi++) { /* group gi's at gi OP */
        memcpy(bp + gi * OP, b + gi * Og, (size_t)Og * sizeof(float));
    }
    /* columns whose taps are all inside the row */
    int64_t lo, hi;
    conv_direct_cols(g, &lo, &hi);
    int64_t nob = (OP + 63) / 64, rows = g->N * g->OH;
    double flops = 2.0 * g->N * O * g->OH * g->OW * g->Cg * KH * KW;
    int nt = threads_for(flops);
    if (KH == 1 && KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
        g->pl == 0 && g->OH == g->H && g->OW == g->W) {
        /* 1x1 without strides or padding: one long row of N H W pixels */
        direct_1x1(x, g->N * g->H * g->W, C, O, G, wt, bp, y, g->epi, nt);
        if (g->epi) {
            g->epi->applied = true;
        }
        free(own);
        free(own_s);
        free(bp);
        return WNN_OK;
    }
    if (conv_direct_gathered(g)) {
        const int64_t P = g->N * g->OH * g->OW, K = KH * KW * C;
        void *own_c = NULL;
        float *cols = cpu_scratch(k, (size_t)(P * K) * sizeof(float), &own_c);
        if (!cols) {
            free(own);
            free(own_s);
            free(bp);
            return cpu_fail(k, err, "out of memory");
        }
        conv_im2col_nhwc(g, x, 0, g->N, 0, cols, nt);
        direct_1x1(cols, P, K, O, 1, wt, bp, y, g->epi, nt);
        free(own_c);
    } else {
        drows_job j_ = {.nob = nob, .OP = OP, .g = g, .x = x, .wt = wt,
                        .bp = bp, .y = y, .lo = lo, .hi = hi};
        cpu_parallel_for_dynamic((int64_t)(rows * G * nob), 1, nt, drows_body,
                                 &j_);
    }
    if (g->epi) {
        g->epi->applied = true;
    }
    free(own);
    free(own_s);
    free(bp);
    return WNN_OK;
}

#else
bool
cpu_direct_product(const cpu_call *k, const float *a, int64_t m, int64_t kk,
                   int64_t n, const float *b, int64_t sb_k, int64_t sb_n,
                   const float *bias, float *c, cpu_epi *epi,
                   wnn_status *st, wnn_error *err)
{
    (void)k, (void)a, (void)m, (void)kk, (void)n, (void)b, (void)sb_k;
    (void)sb_n, (void)bias, (void)c, (void)epi, (void)st, (void)err;
    return false;
}

int64_t
cpu_direct_block_cols(int64_t kk)
{
    (void)kk;
    return 64;
}

/* no packed kernel here: callers use cpu_product */
int64_t
cpu_direct_packed_floats(const cpu_config *cfg, int64_t kk, int64_t n)
{
    (void)cfg, (void)kk, (void)n;
    return 0;
}

void
cpu_direct_pack(const float *b, int64_t ldb, int64_t kk, int64_t n,
                float *wt)
{
    (void)b, (void)ldb, (void)kk, (void)n, (void)wt;
}

void
cpu_direct_packed_product(const float *a, int64_t lda, int64_t m, int64_t kk,
                          int64_t n, const float *wt, float *c, int64_t ldc)
{
    (void)a, (void)lda, (void)m, (void)kk, (void)n, (void)wt, (void)c;
    (void)ldc;
}
#endif
