/* conv2d.c -- CPU kernels of conv2d and convTranspose2d
 * (#api-mlgraphbuilder-conv2d, #api-mlgraphbuilder-convtranspose2d).
 *
 * Everything is computed in float32 (float16 operands are widened first and
 * the result rounded back once).  conv2d takes one of these paths:
 *
 *   depthwise  groups == input channels, one input channel per group (any
 *              channel multiplier): direct kernels, vectorised along the
 *              width on a zero-padded copy of each plane (nchw) or along
 *              the channels with the 3x3 weights in registers (nhwc).
 *   winograd   3x3 filters, strides and dilations 1, groups 1, >= 16
 *              channels in and out, on a CPU with AVX-512: Winograd
 *              F(2x2, 3x3) (16 products per 2 x 2 outputs instead of 36),
 *              its 16 channel sums on the micro-kernel below; inputs with
 *              infinities, NaN or huge values take the direct kernel.
 *   direct     groups 1 on a CPU with AVX-512: a register-blocked
 *              micro-kernel (6 x 4 vectors of accumulators; a broadcast
 *              value times 4 vectors per step) with no im2col and no
 *              packing.  nhwc: 6 output pixels x 64 output channels, any
 *              filter size, strides, dilations, padding (the border pixels
 *              take only their valid taps).  nchw 1x1 with strides 1 and no
 *              padding: the product W (O x C) X (C x HW), 6 output channels
 *              x 64 pixels.  nchw with larger filters: the input transposed
 *              to nhwc and the result back (vectorised 16 x 16 transposes;
 *              two cheap passes next to the work).  WEBNN_CONV_DIRECT=0 in
 *              the environment turns this path off.
 *   general    everything else (grouped convolutions, strided or padded
 *              1x1 in nchw, CPUs without AVX-512): im2col of a band of
 *              output rows into a per-thread buffer (sized for L2), then a
 *              single-threaded BLIS product per band; 1x1 filters with
 *              strides 1 and no padding use the input as the matrix,
 *              without im2col.  When there are fewer bands than threads,
 *              the product is cut across the threads instead.
 *
 * Work is cut into tasks (rows, bands, planes) that the pool's threads take
 * dynamically, so that a thread held up by another process does not keep
 * the others waiting; the bias is added in the kernels (no extra pass).  The
 * filter is used in place when its layout is the one a path wants and is
 * otherwise reordered once per call.
 *
 * convTranspose2d: per image and group, one product (cut across the
 * threads) gives every (output channel, ky, kx) contribution of every input
 * pixel; then, starting from the bias, each nchw output plane adds its
 * contributions row by row, and each nhwc output pixel gathers its own (no
 * write conflicts; threaded over planes / rows).
 *
 * Every index into the input is checked against its bounds or comes from a
 * range computed to stay inside it (padding reads zeros), whatever the
 * options; vector loads never run past a buffer. */
#include <blis.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"

/* a * b + c may be one fused multiply-add (-std=c11 turns contraction off
 * in GCC) */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")
#endif

/* Hot loops are compiled for AVX-512, AVX2 + FMA and baseline x86-64, picked
 * at load time.  The x86-64-v4 / -v3 ISA levels are chosen by CPU features;
 * "arch=skylake-avx512" / "arch=haswell" clones would be chosen by CPU model
 * (__builtin_cpu_is) and never run on AMD processors. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES) && __GNUC__ >= 12
#define HOT __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define HOT
#endif

/* 16 floats; loads and stores through it may be unaligned.  In the
 * AVX-512 clones one register, in the others two or four. */
typedef float v16 __attribute__((vector_size(64), aligned(4), may_alias));
/* f in every lane (f - 0 is f for every f, -0 included, and folds away) */
#define bcast(f) ((float)(f) - (v16){ 0 })

typedef int v16i __attribute__((vector_size(64)));
/* the even / odd elements of the 32 in a, b */
#if defined(__clang__)
#define EVEN(a, b) __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, \
                                           18, 20, 22, 24, 26, 28, 30)
#define ODD(a, b) __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, \
                                          19, 21, 23, 25, 27, 29, 31)
#else
#define SHUF2(a, b, m) __builtin_shuffle(a, b, m)
#define EVEN(a, b) __builtin_shuffle(a, b, (v16i){ 0, 2, 4, 6, 8, 10, 12, 14, 16, \
                                                   18, 20, 22, 24, 26, 28, 30 })
#define ODD(a, b) __builtin_shuffle(a, b, (v16i){ 1, 3, 5, 7, 9, 11, 13, 15, 17, \
                                                  19, 21, 23, 25, 27, 29, 31 })
#endif

/* ---- helpers ------------------------------------------------------------- */

/* Row-major C = op(A) * op(B) on one thread: called from inside pool
 * regions, where BLIS must not start threads of its own. */
static void
sgemm_1t(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
         int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    float one = 1.0f, zero = 0.0f;
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_sgemm_ex(ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE,
                 tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, m, n, k, &one,
                 (float *)a, lda, 1, (float *)b, ldb, 1, &zero, c, ldc, 1,
                 NULL, &rntm);
}

typedef struct sgpar_job {
    bool ta;
    bool tb;
    int64_t m;
    int64_t n;
    int64_t k;
    const float *a;
    int64_t lda;
    const float *b;
    int64_t ldb;
    float *c;
    int64_t ldc;
    bool split_m;
    int64_t len;
    int64_t step;
} sgpar_job;

static void
sgpar_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const sgpar_job *j_ = p_;
    bool ta = j_->ta;
    bool tb = j_->tb;
    int64_t m = j_->m;
    int64_t n = j_->n;
    int64_t k = j_->k;
    const float *a = j_->a;
    int64_t lda = j_->lda;
    const float *b = j_->b;
    int64_t ldb = j_->ldb;
    float *c = j_->c;
    int64_t ldc = j_->ldc;
    bool split_m = j_->split_m;
    int64_t len = j_->len;
    int64_t step = j_->step;
    for (int64_t i = (int64_t)b_; i < (int64_t)e_; i++) {
        int64_t lo = i * step, cnt = len - lo < step ? len - lo : step;
        if (split_m) {
            /* rows lo.. of op(A) and of C */
            sgemm_1t(ta, tb, cnt, n, k, a + (ta ? lo : lo * lda), lda, b, ldb,
                     c + lo * ldc, ldc);
        } else {
            /* columns lo.. of op(B) and of C */
            sgemm_1t(ta, tb, m, cnt, k, a, lda, b + (tb ? lo * ldb : lo), ldb,
                     c + lo, ldc);
        }
    }
}

/* Row-major C = op(A) * op(B) on nt threads: the larger of m and n is cut
 * into pieces that the threads take dynamically, each a single-threaded
 * BLIS product (BLIS's own threads wait for each other at spinning
 * barriers, which goes badly when other processes share the cores). */
static void
sgemm_par(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
          int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
          int nt)
{
    if (nt <= 1) {
        sgemm_1t(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
        return;
    }
    bool split_m = m >= n;
    int64_t len = split_m ? m : n;
    int64_t pieces = 4 * (int64_t)nt, step = (len + pieces - 1) / pieces;
    step = step < 32 ? 32 : (step + 15) / 16 * 16;
    pieces = (len + step - 1) / step;
    {
        sgpar_job j_ = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .a = a,
                        .lda = lda, .b = b, .ldb = ldb, .c = c, .ldc = ldc,
                        .split_m = split_m, .len = len, .step = step};
        cpu_parallel_for_dynamic((int64_t)(pieces), 1, nt, sgpar_body, &j_);
    }
}

static int64_t
ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static int64_t
clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* The range [lo, hi) of outputs o in [0, n) whose input o * s + off falls in
 * [0, len). */
static void
valid_range(int64_t n, int64_t s, int64_t off, int64_t len, int64_t *lo,
            int64_t *hi)
{
    int64_t a = ceil_div(-off, s), b = ceil_div(len - off, s);
    *lo = clamp64(a, 0, n);
    *hi = clamp64(b, *lo, n);
}

static int
threads_for(double flops)
{
    return flops < 2e6 ? 1 : cpu_num_threads();
}

/* Operand data as float32: the pointer itself, or a widened copy in *own. */
static const float *
as_f32(const void *p, wnn_dtype t, uint64_t n, float **own)
{
    *own = NULL;
    if (t == WNN_FLOAT32) {
        return p;
    }
    *own = cpu_to_f32(p, t, n);
    return *own;
}

/* A filter with dimensions (o, i, h, w) of sizes d[4] and element strides
 * s[4], copied to the layout with strides t[4]. */
static void
reorder(const float *src, const int64_t *s, float *dst, const int64_t *t,
        const int64_t *d)
{
    for (int64_t o = 0; o < d[0]; o++) {
        for (int64_t i = 0; i < d[1]; i++) {
            for (int64_t h = 0; h < d[2]; h++) {
                for (int64_t w = 0; w < d[3]; w++) {
                    dst[o * t[0] + i * t[1] + h * t[2] + w * t[3]] =
                        src[o * s[0] + i * s[1] + h * s[2] + w * s[3]];
                }
            }
        }
    }
}

/* ---- conv2d geometry ------------------------------------------------------ */
typedef struct geom {
    int64_t N, C, H, W;     /* input                                  */
    int64_t O, OH, OW;      /* output channels and size               */
    int64_t KH, KW;         /* filter size                            */
    int64_t G, Cg, Og;      /* groups, channels per group in and out  */
    int64_t pt, pl;         /* padding at the top and left            */
    int64_t sh, sw, dh, dw; /* strides, dilations                     */
    bool nhwc;
    bool direct_ok, winograd_ok; /* kernel choice (cpu/config.h)  */
} geom;

/* Strides of a conv2d filter layout, in (o, i, h, w) order. */
static void
conv_filter_strides(int layout, const geom *g, int64_t *s)
{
    int64_t O = g->O, I = g->Cg, KH = g->KH, KW = g->KW;
    switch (layout) {
    case WNN_CONV_HWIO: s[0] = 1, s[1] = O, s[2] = KW * I * O, s[3] = I * O; break;
    case WNN_CONV_OHWI: s[0] = KH * KW * I, s[1] = 1, s[2] = KW * I, s[3] = I; break;
    case WNN_CONV_IHWO: s[0] = 1, s[1] = KH * KW * O, s[2] = KW * O, s[3] = O; break;
    default: s[0] = I * KH * KW, s[1] = KH * KW, s[2] = KW, s[3] = 1; break;
    }
}

/* ---- depthwise ------------------------------------------------------------ */

/* One output plane of an nchw depthwise convolution: xp is the input plane
 * (H x W), wk the KH x KW filter, yp the output plane (OH x OW). */
HOT static void
dw_plane_nchw(const geom *g, const float *xp, const float *wk, float bias,
              float *yp, const float *zeros)
{
    const int64_t H = g->H, W = g->W, OW = g->OW, KH = g->KH, KW = g->KW;
    const int64_t sh = g->sh, sw = g->sw, dh = g->dh, dw = g->dw;
    /* columns whose taps are all inside the row */
    int64_t lo, hi, lo2, hi2;
    valid_range(OW, sw, -g->pl, W, &lo, &hi);
    valid_range(OW, sw, -g->pl + (KW - 1) * dw, W, &lo2, &hi2);
    lo = lo2 > lo ? lo2 : lo;
    hi = hi2 < hi ? hi2 : hi;
    if (hi < lo) {
        hi = lo;
    }
    for (int64_t oh = 0; oh < g->OH; oh++) {
        float *yr = yp + oh * OW;
        int64_t ih0 = oh * sh - g->pt;
        /* borders: every tap checked */
        for (int64_t ow = 0; ow < OW; ow++) {
            if (ow == lo) {
                ow = hi;
                if (ow >= OW) {
                    break;
                }
            }
            float s = bias;
            for (int64_t kh = 0; kh < KH; kh++) {
                int64_t ih = ih0 + kh * dh;
                if (ih < 0 || ih >= H) {
                    continue;
                }
                for (int64_t kw = 0; kw < KW; kw++) {
                    int64_t iw = ow * sw - g->pl + kw * dw;
                    if (iw >= 0 && iw < W) {
                        s += wk[kh * KW + kw] * xp[ih * W + iw];
                    }
                }
            }
            yr[ow] = s;
        }
        if (hi <= lo) {
            continue;
        }
        if (KH == 3 && KW == 3) {
            /* rows outside the input read a row of zeros */
            const float *r[3];
            for (int kh = 0; kh < 3; kh++) {
                int64_t ih = ih0 + kh * dh;
                r[kh] = (ih < 0 || ih >= H ? zeros : xp + ih * W) - g->pl;
            }
            const float w0 = wk[0], w1 = wk[1], w2 = wk[2], w3 = wk[3],
                        w4 = wk[4], w5 = wk[5], w6 = wk[6], w7 = wk[7],
                        w8 = wk[8];
            const float *r0 = r[0], *r1 = r[1], *r2 = r[2];
            if (sw == 1) {
                const int64_t d1 = dw, d2 = 2 * dw;
                for (int64_t ow = lo; ow < hi; ow++) {
                    yr[ow] = bias + w0 * r0[ow] + w1 * r0[ow + d1] +
                             w2 * r0[ow + d2] + w3 * r1[ow] +
                             w4 * r1[ow + d1] + w5 * r1[ow + d2] +
                             w6 * r2[ow] + w7 * r2[ow + d1] + w8 * r2[ow + d2];
                }
            } else if (sw == 2 && dw == 1) {
                for (int64_t ow = lo; ow < hi; ow++) {
                    int64_t i = 2 * ow;
                    yr[ow] = bias + w0 * r0[i] + w1 * r0[i + 1] +
                             w2 * r0[i + 2] + w3 * r1[i] + w4 * r1[i + 1] +
                             w5 * r1[i + 2] + w6 * r2[i] + w7 * r2[i + 1] +
                             w8 * r2[i + 2];
                }
            } else {
                const int64_t d1 = dw, d2 = 2 * dw;
                for (int64_t ow = lo; ow < hi; ow++) {
                    int64_t i = ow * sw;
                    yr[ow] = bias + w0 * r0[i] + w1 * r0[i + d1] +
                             w2 * r0[i + d2] + w3 * r1[i] + w4 * r1[i + d1] +
                             w5 * r1[i + d2] + w6 * r2[i] + w7 * r2[i + d1] +
                             w8 * r2[i + d2];
                }
            }
            continue;
        }
        for (int64_t ow = lo; ow < hi; ow++) {
            yr[ow] = bias;
        }
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t ih = ih0 + kh * dh;
            if (ih < 0 || ih >= H) {
                continue;
            }
            for (int64_t kw = 0; kw < KW; kw++) {
                const float wv = wk[kh * KW + kw];
                const float *rr = xp + ih * W - g->pl + kw * dw;
                if (sw == 1) {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        yr[ow] += wv * rr[ow];
                    }
                } else {
                    for (int64_t ow = lo; ow < hi; ow++) {
                        yr[ow] += wv * rr[ow * sw];
                    }
                }
            }
        }
    }
}

/* One output row (image n, row oh) of an nhwc depthwise convolution with
 * channel multiplier 1: wk is [KH][KW][C]. */
#define DW_CB 64
HOT static void
dw_row_nhwc(const geom *g, const float *x, const float *wk, const float *b,
            float *y, int64_t n, int64_t oh)
{
    const int64_t C = g->C, H = g->H, W = g->W, OW = g->OW, KW = g->KW;
    int64_t kh_lo, kh_hi;
    /* ih = oh*sh - pt + kh*dh in [0, H) */
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, H, &kh_lo, &kh_hi);
    const float *xn = x + n * H * W * C;
    float *yr = y + (n * g->OH + oh) * OW * C;
    for (int64_t ow = 0; ow < OW; ow++) {
        int64_t kw_lo, kw_hi;
        valid_range(KW, g->dw, ow * g->sw - g->pl, W, &kw_lo, &kw_hi);
        int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
        float *yo = yr + ow * C;
        int64_t c0 = 0;
        for (; c0 + DW_CB <= C; c0 += DW_CB) {
            float acc[DW_CB];
            for (int j = 0; j < DW_CB; j++) {
                acc[j] = b ? b[c0 + j] : 0.0f;
            }
            for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
                const float *xr = xn + (ih0 + kh * g->dh) * W * C + c0;
                const float *wr = wk + kh * KW * C + c0;
                for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                    const float *xp = xr + (iw0 + kw * g->dw) * C;
                    const float *wp = wr + kw * C;
                    for (int j = 0; j < DW_CB; j++) {
                        acc[j] += xp[j] * wp[j];
                    }
                }
            }
            for (int j = 0; j < DW_CB; j++) {
                yo[c0 + j] = acc[j];
            }
        }
        if (c0 < C) {
            int64_t cb = C - c0;
            for (int64_t j = 0; j < cb; j++) {
                yo[c0 + j] = b ? b[c0 + j] : 0.0f;
            }
            for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
                const float *xr = xn + (ih0 + kh * g->dh) * W * C + c0;
                const float *wr = wk + kh * KW * C + c0;
                for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                    const float *xp = xr + (iw0 + kw * g->dw) * C;
                    const float *wp = wr + kw * C;
                    for (int64_t j = 0; j < cb; j++) {
                        yo[c0 + j] += xp[j] * wp[j];
                    }
                }
            }
        }
    }
}

/* nhwc depthwise with a channel multiplier m > 1: output channel o reads
 * input channel o / m.  wk is [KH][KW][O]. */
static void
dw_row_nhwc_mult(const geom *g, const float *x, const float *wk,
                 const float *b, float *y, int64_t n, int64_t oh)
{
    const int64_t C = g->C, O = g->O, m = g->O / g->C, H = g->H, W = g->W;
    int64_t kh_lo, kh_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, H, &kh_lo, &kh_hi);
    for (int64_t ow = 0; ow < g->OW; ow++) {
        int64_t kw_lo, kw_hi;
        valid_range(g->KW, g->dw, ow * g->sw - g->pl, W, &kw_lo, &kw_hi);
        float *yo = y + ((n * g->OH + oh) * g->OW + ow) * O;
        for (int64_t o = 0; o < O; o++) {
            yo[o] = b ? b[o] : 0.0f;
        }
        for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                const float *xp = x + ((n * H + ih) * W + iw) * C;
                const float *wp = wk + (kh * g->KW + kw) * O;
                for (int64_t c = 0; c < C; c++) {
                    for (int64_t j = 0; j < m; j++) {
                        yo[c * m + j] += xp[c] * wp[c * m + j];
                    }
                }
            }
        }
    }
}

/* nchw depthwise on a zero-padded copy of the input plane: no bounds checks
 * and whole vectors.  pad is PH x PW (PW >= (OWR - 1) * sw + (KW - 1) * dw
 * + 1, OWR = OW rounded up to 16), row is OWR floats of scratch. */
typedef struct dw_pad {
    int64_t PH, PW, OWR;
} dw_pad;

static bool
dw_pad_dims(const geom *g, dw_pad *d)
{
    d->OWR = (g->OW + 15) / 16 * 16;
    d->PH = (g->OH - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    d->PW = (d->OWR - 1) * g->sw + (g->KW - 1) * g->dw + 1;
    /* keep the copy small and cheap next to the work (pathological
     * paddings, strides or dilations take the checked kernel) */
    double copy = (double)d->PH * d->PW, work = (double)g->OH * g->OW * g->KH * g->KW;
    return copy <= (1 << 22) && copy <= 4.0 * work + 4096;
}

HOT static void
dw_plane_nchw_padded(const geom *g, const dw_pad *d, const float *xp,
                     const float *wk, float bias, float *yp, float *pad,
                     float *row)
{
    const int64_t H = g->H, W = g->W, OW = g->OW, KH = g->KH, KW = g->KW;
    const int64_t PH = d->PH, PW = d->PW, OWR = d->OWR;
    const int64_t sh = g->sh, sw = g->sw, dh = g->dh, dw = g->dw;
    /* pad[r][c] = x[r - pt][c - pl], zero outside (plain loops: the rows
     * are short, library calls would cost more than the copies) */
    int64_t c_lo = clamp64(g->pl, 0, PW), c_hi = clamp64(g->pl + W, c_lo, PW);
    const int64_t sx = c_lo - g->pl;
    for (int64_t r = 0; r < PH; r++) {
        float *pr = pad + r * PW;
        int64_t ih = r - g->pt;
        if (ih < 0 || ih >= H) {
            for (int64_t c = 0; c < PW; c++) {
                pr[c] = 0.0f;
            }
            continue;
        }
        const float *xr = xp + ih * W + sx;
        for (int64_t c = 0; c < c_lo; c++) {
            pr[c] = 0.0f;
        }
        for (int64_t c = c_lo; c < c_hi; c++) {
            pr[c] = xr[c - c_lo];
        }
        for (int64_t c = c_hi; c < PW; c++) {
            pr[c] = 0.0f;
        }
    }
    for (int64_t oh = 0; oh < g->OH; oh++) {
        /* whole vectors: a row may spill into the rows after it, which are
         * computed later; the last rows of the plane go through `row` */
        float *out = oh * OW + OWR <= g->OH * OW ? yp + oh * OW : row;
        const float *base = pad + oh * sh * PW;
        if (KH == 3 && KW == 3) {
            const float *r0 = base, *r1 = base + dh * PW, *r2 = base + 2 * dh * PW;
            v16 w[9];
            for (int t = 0; t < 9; t++) {
                w[t] = (v16){ 0 } + wk[t];
            }
            const v16 bv = (v16){ 0 } + bias;
            if (sw == 1) {
                const int64_t d1 = dw, d2 = 2 * dw;
#define L(p) (*(const v16 *)(p))
                for (int64_t ow = 0; ow < OWR; ow += 16) {
                    v16 a = bv + L(r0 + ow) * w[0] + L(r0 + ow + d1) * w[1] +
                            L(r0 + ow + d2) * w[2];
                    v16 b = L(r1 + ow) * w[3] + L(r1 + ow + d1) * w[4] +
                            L(r1 + ow + d2) * w[5];
                    v16 c = L(r2 + ow) * w[6] + L(r2 + ow + d1) * w[7] +
                            L(r2 + ow + d2) * w[8];
                    *(v16 *)(out + ow) = a + (b + c);
                }
            } else if (sw == 2 && dw == 1) {
                /* x[2 ow], x[2 ow + 1], x[2 ow + 2]: the even and odd
                 * elements of 32 loaded ones, and the even ones 2 further */
                v16 acc;
                for (int64_t ow = 0; ow < OWR; ow += 16) {
                    const int64_t i = 2 * ow;
                    acc = bv;
                    const float *rr[3] = { r0 + i, r1 + i, r2 + i };
                    for (int kh = 0; kh < 3; kh++) {
                        v16 lo = L(rr[kh]), hi = L(rr[kh] + 16);
                        v16 lo2 = L(rr[kh] + 2), hi2 = L(rr[kh] + 18);
                        acc += EVEN(lo, hi) * w[3 * kh] +
                               ODD(lo, hi) * w[3 * kh + 1] +
                               EVEN(lo2, hi2) * w[3 * kh + 2];
                    }
                    *(v16 *)(out + ow) = acc;
                }
#undef L
            } else {
                const int64_t d1 = dw, d2 = 2 * dw;
                for (int64_t ow = 0; ow < OWR; ow++) {
                    int64_t i = ow * sw;
                    float a = bias + wk[0] * r0[i] + wk[1] * r0[i + d1] + wk[2] * r0[i + d2];
                    float b = wk[3] * r1[i] + wk[4] * r1[i + d1] + wk[5] * r1[i + d2];
                    float c = wk[6] * r2[i] + wk[7] * r2[i + d1] + wk[8] * r2[i + d2];
                    out[ow] = a + (b + c);
                }
            }
        } else {
            for (int64_t ow = 0; ow < OWR; ow++) {
                out[ow] = bias;
            }
            for (int64_t kh = 0; kh < KH; kh++) {
                for (int64_t kw = 0; kw < KW; kw++) {
                    const float wv = wk[kh * KW + kw];
                    const float *rr = base + kh * dh * PW + kw * dw;
                    if (sw == 1) {
                        for (int64_t ow = 0; ow < OWR; ow++) {
                            out[ow] += wv * rr[ow];
                        }
                    } else {
                        for (int64_t ow = 0; ow < OWR; ow++) {
                            out[ow] += wv * rr[ow * sw];
                        }
                    }
                }
            }
        }
        if (out == row) {
            for (int64_t ow = 0; ow < OW; ow++) {
                yp[oh * OW + ow] = row[ow];
            }
        }
    }
}

/* nhwc 3x3 depthwise (multiplier 1), output row oh of image n: taps of rows
 * outside the input read `zeros` (a row of W * C zeros); columns whose taps
 * all fall inside the row run 16 channels at a time with the 9 weights in
 * registers, the others check every tap. */
HOT static void
dw3_row_nhwc(const geom *g, const float *x, const float *wk, const float *b,
             float *y, int64_t n, int64_t oh, const float *zeros, int64_t lo,
             int64_t hi)
{
    const int64_t C = g->C, H = g->H, W = g->W, OW = g->OW;
    const int64_t sw = g->sw, dw = g->dw, pl = g->pl;
    const float *r[3];
    for (int kh = 0; kh < 3; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        r[kh] = ih < 0 || ih >= H ? zeros : x + (n * H + ih) * W * C;
    }
    float *yr = y + (n * g->OH + oh) * OW * C;
    const int64_t C16 = C / 16 * 16;
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
        v16 w[9];
        for (int t = 0; t < 9; t++) {
            w[t] = *(const v16 *)(wk + t * C + c0);
        }
        v16 bv = b ? *(const v16 *)(b + c0) : (v16){ 0 };
        const float *r0 = r[0] + c0, *r1 = r[1] + c0, *r2 = r[2] + c0;
        const int64_t s1 = dw * C, s2 = 2 * dw * C;
        for (int64_t ow = lo; ow < hi; ow++) {
            int64_t i = (ow * sw - pl) * C;
            v16 a = bv + *(const v16 *)(r0 + i) * w[0] +
                    *(const v16 *)(r0 + i + s1) * w[1] +
                    *(const v16 *)(r0 + i + s2) * w[2];
            v16 bb = *(const v16 *)(r1 + i) * w[3] +
                     *(const v16 *)(r1 + i + s1) * w[4] +
                     *(const v16 *)(r1 + i + s2) * w[5];
            v16 cc = *(const v16 *)(r2 + i) * w[6] +
                     *(const v16 *)(r2 + i + s1) * w[7] +
                     *(const v16 *)(r2 + i + s2) * w[8];
            *(v16 *)(yr + ow * C + c0) = a + (bb + cc);
        }
    }
    /* the border columns (all channels) and the last C % 16 channels of the
     * interior ones */
    for (int64_t ow = 0; ow < OW; ow++) {
        int64_t cs = ow >= lo && ow < hi ? C16 : 0;
        if (cs == C) {
            continue;
        }
        float *yo = yr + ow * C;
        for (int64_t c = cs; c < C; c++) {
            yo[c] = b ? b[c] : 0.0f;
        }
        for (int64_t kw = 0; kw < 3; kw++) {
            int64_t iw = ow * sw - pl + kw * dw;
            if (iw < 0 || iw >= W) {
                continue;
            }
            for (int kh = 0; kh < 3; kh++) {
                const float *xp = r[kh] + iw * C;
                const float *wp = wk + (kh * 3 + kw) * C;
                for (int64_t c = cs; c < C; c++) {
                    yo[c] += xp[c] * wp[c];
                }
            }
        }
    }
}

typedef struct dw_nchw_job {
    float *scratch;
    int64_t per;
    const geom *g;
    const float *x;
    const float *w;
    const float *b;
    float *y;
    int64_t m;
    dw_pad pd;
    float *zeros;
} dw_nchw_job;

static void
dw_nchw_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    const dw_nchw_job *j_ = p_;
    float *scratch = j_->scratch;
    int64_t per = j_->per;
    const geom *g = j_->g;
    const float *x = j_->x;
    const float *w = j_->w;
    const float *b = j_->b;
    float *y = j_->y;
    int64_t m = j_->m;
    dw_pad pd = j_->pd;
    float *zeros = j_->zeros;
    for (int64_t p = (int64_t)b_; p < (int64_t)e_; p++) {
        float *pad = scratch ? scratch + tid_ * per : NULL;
        int64_t n = p / g->O, o = p % g->O;
        const float *xp = x + (n * g->C + o / m) * g->H * g->W;
        const float *wk = w + o * g->KH * g->KW;
        float bv = b ? b[o] : 0.0f, *yp = y + p * g->OH * g->OW;
        if (pad) {
            dw_plane_nchw_padded(g, &pd, xp, wk, bv, yp, pad,
                                 pad + pd.PH * pd.PW);
        } else {
            dw_plane_nchw(g, xp, wk, bv, yp, zeros);
        }
    }
}

typedef struct dw_nhwc_job {
    const geom *g;
    const float *x;
    const float *w;
    const float *b;
    float *y;
    bool k3;
    bool mult;
    float *zeros;
    int64_t lo;
    int64_t hi;
} dw_nhwc_job;

static void
dw_nhwc_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const dw_nhwc_job *j_ = p_;
    const geom *g = j_->g;
    const float *x = j_->x;
    const float *w = j_->w;
    const float *b = j_->b;
    float *y = j_->y;
    bool k3 = j_->k3;
    bool mult = j_->mult;
    float *zeros = j_->zeros;
    int64_t lo = j_->lo;
    int64_t hi = j_->hi;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        if (k3) {
            dw3_row_nhwc(g, x, w, b, y, r / g->OH, r % g->OH, zeros, lo, hi);
        } else if (mult) {
            dw_row_nhwc_mult(g, x, w, b, y, r / g->OH, r % g->OH);
        } else {
            dw_row_nhwc(g, x, w, b, y, r / g->OH, r % g->OH);
        }
    }
}

static wnn_status
conv_depthwise(const cpu_call *k, wnn_error *err, const geom *g, int layout,
               const float *x, const float *w, const float *b, float *y)
{
    /* wanted: [O][KH][KW] for nchw, [KH][KW][O] for nhwc */
    int64_t s[4], t[4], d[4] = { g->O, 1, g->KH, g->KW };
    conv_filter_strides(layout, g, s);
    bool direct = g->nhwc ? (layout == WNN_CONV_HWIO || layout == WNN_CONV_IHWO)
                          : (layout == WNN_CONV_OIHW || layout == WNN_CONV_OHWI);
    float *wc = NULL;
    if (!direct) {
        wc = malloc((size_t)(g->O * g->KH * g->KW) * sizeof(float) + 64);
        if (!wc) {
            return cpu_fail(k, err, "out of memory");
        }
        if (g->nhwc) {
            t[0] = 1, t[1] = 0, t[2] = g->KW * g->O, t[3] = g->O;
        } else {
            t[0] = g->KH * g->KW, t[1] = 0, t[2] = g->KW, t[3] = 1;
        }
        reorder(w, s, wc, t, d);
        w = wc;
    }
    double flops = 2.0 * g->N * g->O * g->OH * g->OW * g->KH * g->KW;
    int nt = threads_for(flops);
    if (!g->nhwc) {
        int64_t planes = g->N * g->O, m = g->O / g->C;
        dw_pad pd;
        float *scratch = NULL;
        int64_t per = 0;
        if (dw_pad_dims(g, &pd)) {
            per = pd.PH * pd.PW + pd.OWR + 16;
            scratch = malloc((size_t)(per * nt) * sizeof(float));
        }
        float *zeros = scratch ? NULL : calloc((size_t)g->W + 16, sizeof(float));
        if (!scratch && !zeros) {
            free(wc);
            return cpu_fail(k, err, "out of memory");
        }
        {
            dw_nchw_job j_ = {.scratch = scratch, .per = per, .g = g, .x = x,
                              .w = w, .b = b, .y = y, .m = m, .pd = pd,
                              .zeros = zeros};
            cpu_parallel_for_dynamic((int64_t)(planes), 4, nt, dw_nchw_body, &j_);
        }
        free(scratch);
        free(zeros);
    } else {
        int64_t rows = g->N * g->OH;
        bool mult = g->O != g->C, k3 = g->KH == 3 && g->KW == 3 && !mult;
        float *zeros = NULL;
        int64_t lo = 0, hi = 0;
        if (k3) {
            zeros = calloc((size_t)(g->W * g->C) + 16, sizeof(float));
            if (!zeros) {
                free(wc);
                return cpu_fail(k, err, "out of memory");
            }
            /* columns whose three taps are inside the row */
            int64_t lo2, hi2;
            valid_range(g->OW, g->sw, -g->pl, g->W, &lo, &hi);
            valid_range(g->OW, g->sw, -g->pl + 2 * g->dw, g->W, &lo2, &hi2);
            lo = lo2 > lo ? lo2 : lo;
            hi = hi2 < hi ? hi2 : hi;
            if (hi < lo) {
                hi = lo;
            }
        }
        {
            dw_nhwc_job j_ = {.g = g, .x = x, .w = w, .b = b, .y = y, .k3 = k3,
                              .mult = mult, .zeros = zeros, .lo = lo,
                              .hi = hi};
            cpu_parallel_for_dynamic((int64_t)(rows), 2, nt, dw_nhwc_body, &j_);
        }
        free(zeros);
    }
    free(wc);
    return WNN_OK;
}

/* ---- im2col --------------------------------------------------------------- */

/* nchw: row kidx = (ci, kh, kw) of the column matrix for output rows
 * [oh0, oh1) of image n, group gi: P = (oh1 - oh0) * OW columns. */
HOT static void
im2col_nchw_row(const geom *g, const float *x, int64_t n, int64_t gi,
                int64_t kidx, int64_t oh0, int64_t oh1, float *dst)
{
    int64_t kw = kidx % g->KW, kh = (kidx / g->KW) % g->KH,
            ci = kidx / (g->KW * g->KH);
    const float *src = x + (n * g->C + gi * g->Cg + ci) * g->H * g->W;
    int64_t iw0 = kw * g->dw - g->pl, lo, hi;
    valid_range(g->OW, g->sw, iw0, g->W, &lo, &hi);
    for (int64_t oh = oh0; oh < oh1; oh++) {
        float *d = dst + (oh - oh0) * g->OW;
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        if (ih < 0 || ih >= g->H) {
            memset(d, 0, (size_t)g->OW * sizeof(float));
            continue;
        }
        const float *r = src + ih * g->W + iw0;
        for (int64_t ow = 0; ow < lo; ow++) {
            d[ow] = 0.0f;
        }
        if (g->sw == 1) {
            memcpy(d + lo, r + lo, (size_t)(hi - lo) * sizeof(float));
        } else if (g->sw == 2) {
            for (int64_t ow = lo; ow < hi; ow++) {
                d[ow] = r[2 * ow];
            }
        } else {
            for (int64_t ow = lo; ow < hi; ow++) {
                d[ow] = r[ow * g->sw];
            }
        }
        for (int64_t ow = hi; ow < g->OW; ow++) {
            d[ow] = 0.0f;
        }
    }
}

/* nhwc: the rows of the column matrix for output row oh of image n, group
 * gi: OW rows of K = KH * KW * Cg values in (kh, kw, ci) order. */
static void
im2col_nhwc_row(const geom *g, const float *x, int64_t n, int64_t gi,
                int64_t oh, float *dst)
{
    const int64_t Cg = g->Cg, K = g->KH * g->KW * Cg;
    for (int64_t ow = 0; ow < g->OW; ow++) {
        float *d = dst + ow * K;
        for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t ih = oh * g->sh - g->pt + kh * g->dh;
            for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t iw = ow * g->sw - g->pl + kw * g->dw;
                float *dd = d + (kh * g->KW + kw) * Cg;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) {
                    memset(dd, 0, (size_t)Cg * sizeof(float));
                } else {
                    memcpy(dd,
                           x + ((n * g->H + ih) * g->W + iw) * g->C + gi * Cg,
                           (size_t)Cg * sizeof(float));
                }
            }
        }
    }
}

/* ---- GEMM paths ----------------------------------------------------------- */

/* Adds the bias to an nchw band: rows o0 .. o0+m of length len, ld apart. */
HOT static void
bias_rows(float *y, int64_t ld, int64_t m, int64_t len, const float *b)
{
    for (int64_t o = 0; o < m; o++) {
        float bv = b[o], *r = y + o * ld;
        for (int64_t p = 0; p < len; p++) {
            r[p] += bv;
        }
    }
}

/* Adds the bias to an nhwc band: rows of m channels, ld apart. */
HOT static void
bias_cols(float *y, int64_t ld, int64_t rows, int64_t m, const float *b)
{
    for (int64_t r = 0; r < rows; r++) {
        float *p = y + r * ld;
        for (int64_t o = 0; o < m; o++) {
            p[o] += b[o];
        }
    }
}

/* The product of one task: image n, group gi, output rows [oh0, oh1).
 * col is the column matrix of the band (or NULL when the input itself is
 * the matrix: 1x1, strides 1, no padding).  w is oihw for nchw; for nhwc it
 * is hwio, or ohwi when w_ohwi. */
static void
band_gemm(const geom *g, const float *x, const float *w, bool w_ohwi,
          const float *b, float *y, int64_t n, int64_t gi, int64_t oh0,
          int64_t oh1, const float *col, bool threaded)
{
    const int64_t K = g->Cg * g->KH * g->KW, P = (oh1 - oh0) * g->OW;
    const int64_t OHW = g->OH * g->OW;
    if (!g->nhwc) {
        const float *a = w + gi * g->Og * K;
        float *c = y + (n * g->O + gi * g->Og) * OHW + oh0 * g->OW;
        const float *bm = col;
        int64_t ldb = P;
        if (!col) {
            bm = x + (n * g->C + gi * g->Cg) * g->H * g->W + oh0 * g->OW;
            ldb = g->H * g->W;
        }
        if (threaded) {
            sgemm_par(false, false, g->Og, P, K, a, K, bm, ldb, c, OHW,
                      cpu_num_threads());
        } else {
            sgemm_1t(false, false, g->Og, P, K, a, K, bm, ldb, c, OHW);
        }
        if (b) {
            bias_rows(c, OHW, g->Og, P, b + gi * g->Og);
        }
    } else {
        const float *am = col;
        int64_t lda = K;
        if (!col) {
            am = x + (n * OHW + oh0 * g->OW) * g->C + gi * g->Cg;
            lda = g->C;
        }
        const float *bm = w_ohwi ? w + gi * g->Og * K : w + gi * g->Og;
        int64_t ldb = w_ohwi ? K : g->O;
        float *c = y + (n * OHW + oh0 * g->OW) * g->O + gi * g->Og;
        if (threaded) {
            sgemm_par(false, w_ohwi, P, g->Og, K, am, lda, bm, ldb, c, g->O,
                      cpu_num_threads());
        } else {
            sgemm_1t(false, w_ohwi, P, g->Og, K, am, lda, bm, ldb, c, g->O);
        }
        if (b) {
            bias_cols(c, g->O, P, g->Og, b + gi * g->Og);
        }
    }
}

typedef struct i2c_nchw_job {
    const geom *g;
    const float *x;
    int64_t n;
    int64_t gi;
    float *cols;
} i2c_nchw_job;

static void
i2c_nchw_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const i2c_nchw_job *j_ = p_;
    const geom *g = j_->g;
    const float *x = j_->x;
    int64_t n = j_->n;
    int64_t gi = j_->gi;
    float *cols = j_->cols;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        im2col_nchw_row(g, x, n, gi, r, 0, g->OH,
                        cols + r * g->OH * g->OW);
    }
}

typedef struct i2c_nhwc_job {
    const geom *g;
    const float *x;
    int64_t n;
    int64_t gi;
    float *cols;
    int64_t K;
} i2c_nhwc_job;

static void
i2c_nhwc_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const i2c_nhwc_job *j_ = p_;
    const geom *g = j_->g;
    const float *x = j_->x;
    int64_t n = j_->n;
    int64_t gi = j_->gi;
    float *cols = j_->cols;
    int64_t K = j_->K;
    for (int64_t oh = (int64_t)b_; oh < (int64_t)e_; oh++) {
        im2col_nhwc_row(g, x, n, gi, oh,
                        cols + oh * g->OW * K);
    }
}

typedef struct bands_job {
    const geom *g;
    const float *x;
    const float *w;
    const float *b;
    float *y;
    bool plain;
    float *cols;
    int64_t col_floats;
    int64_t bands;
    int64_t rows_per;
    int64_t K;
    bool w_ohwi;
} bands_job;

static void
bands_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    const bands_job *j_ = p_;
    const geom *g = j_->g;
    const float *x = j_->x;
    const float *w = j_->w;
    const float *b = j_->b;
    float *y = j_->y;
    bool plain = j_->plain;
    float *cols = j_->cols;
    int64_t col_floats = j_->col_floats;
    int64_t bands = j_->bands;
    int64_t rows_per = j_->rows_per;
    int64_t K = j_->K;
    bool w_ohwi = j_->w_ohwi;
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        float *col = plain ? NULL : cols + tid_ * col_floats;
        int64_t img = tsk / bands, band = tsk % bands;
        int64_t n = img / g->G, gi = img % g->G;
        int64_t oh0 = band * rows_per;
        int64_t oh1 = oh0 + rows_per < g->OH ? oh0 + rows_per : g->OH;
        if (!plain) {
            if (!g->nhwc) {
                int64_t P = (oh1 - oh0) * g->OW;
                for (int64_t r = 0; r < K; r++) {
                    im2col_nchw_row(g, x, n, gi, r, oh0, oh1,
                                    col + r * P);
                }
            } else {
                for (int64_t oh = oh0; oh < oh1; oh++) {
                    im2col_nhwc_row(g, x, n, gi, oh,
                                    col + (oh - oh0) * g->OW * K);
                }
            }
        }
        band_gemm(g, x, w, w_ohwi, b, y, n, gi, oh0, oh1, col, false);
    }
}

static wnn_status
conv_gemm(const cpu_call *k, wnn_error *err, const geom *g, int layout,
          const float *x, const float *w, const float *b, float *y)
{
    const int64_t K = g->Cg * g->KH * g->KW;
    bool plain = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 &&
                 g->pt == 0 && g->pl == 0 && g->OH == g->H && g->OW == g->W;
    /* the filter as the path wants it */
    bool w_ohwi = false, direct;
    int64_t s[4], t[4], d[4] = { g->O, g->Cg, g->KH, g->KW };
    if (!g->nhwc) {
        direct = layout == WNN_CONV_OIHW;
        t[0] = g->Cg * g->KH * g->KW, t[1] = g->KH * g->KW, t[2] = g->KW,
        t[3] = 1;
    } else {
        w_ohwi = layout == WNN_CONV_OHWI;
        direct = layout == WNN_CONV_HWIO || layout == WNN_CONV_OHWI;
        t[0] = 1, t[1] = g->O, t[2] = g->KW * g->Cg * g->O,
        t[3] = g->Cg * g->O;
    }
    float *wc = NULL;
    if (!direct) {
        wc = malloc((size_t)(g->O * K) * sizeof(float) + 64);
        if (!wc) {
            return cpu_fail(k, err, "out of memory");
        }
        conv_filter_strides(layout, g, s);
        reorder(w, s, wc, t, d);
        w = wc;
    }

    /* Bands of output rows.  A band's column matrix should fit in L2
     * (P_MAX_FLOATS); there should be TASKS_PER_THREAD tasks per thread
     * (dynamically scheduled, so that a thread delayed by another process
     * does not hold the others up), but not bands so thin that the
     * products lose speed (P_MIN columns). */
    enum { P_MAX_FLOATS = 262144, P_MIN = 192, TASKS_PER_THREAD = 4 };
    double flops = 2.0 * g->N * g->O * g->OH * g->OW * K;
    int nt = threads_for(flops);
    int64_t images = g->N * g->G;
    int64_t rows_max = plain ? g->OH : (P_MAX_FLOATS / K) / g->OW;
    rows_max = clamp64(rows_max, 1, g->OH);
    int64_t bands_min = (g->OH + rows_max - 1) / rows_max;
    int64_t bands_cap = clamp64(g->OH * g->OW / P_MIN, bands_min, g->OH);
    int64_t want = (TASKS_PER_THREAD * (int64_t)nt + images - 1) / images;
    int64_t nb = clamp64(want, bands_min, bands_cap);
    int64_t rows_per = (g->OH + nb - 1) / nb;
    int64_t bands = (g->OH + rows_per - 1) / rows_per;
    int64_t tasks = images * bands;
    bool threaded = nt > 1 && tasks < nt;
    if (threaded) {
        rows_per = g->OH;
        bands = 1;
        tasks = images;
    }
    int64_t col_floats = plain ? 0 : rows_per * g->OW * K;
    float *cols = NULL;
    if (!plain) {
        int nbuf = threaded ? 1 : nt;
        cols = malloc((size_t)(col_floats * nbuf) * sizeof(float) + 64);
        if (!cols) {
            free(wc);
            return cpu_fail(k, err, "out of memory");
        }
    }
    if (threaded) {
        /* one band per image: im2col on every thread, BLIS threads the
         * product */
        for (int64_t tsk = 0; tsk < tasks; tsk++) {
            int64_t n = tsk / g->G, gi = tsk % g->G;
            if (!plain) {
                if (!g->nhwc) {
                    {
                        i2c_nchw_job j_ = {.g = g, .x = x, .n = n, .gi = gi,
                                           .cols = cols};
                        cpu_parallel_for((int64_t)(K), nt, i2c_nchw_body, &j_);
                    }
                } else {
                    {
                        i2c_nhwc_job j_ = {.g = g, .x = x, .n = n, .gi = gi,
                                           .cols = cols, .K = K};
                        cpu_parallel_for((int64_t)(g->OH), nt, i2c_nhwc_body, &j_);
                    }
                }
            }
            band_gemm(g, x, w, w_ohwi, b, y, n, gi, 0, g->OH, cols, true);
        }
    } else {
        {
            bands_job j_ = {.g = g, .x = x, .w = w, .b = b, .y = y,
                            .plain = plain, .cols = cols,
                            .col_floats = col_floats, .bands = bands,
                            .rows_per = rows_per, .K = K, .w_ohwi = w_ohwi};
            cpu_parallel_for_dynamic((int64_t)(tasks), 1, nt, bands_body, &j_);
        }
    }
    free(cols);
    free(wc);
    return WNN_OK;
}

/* ---- direct nhwc convolution (AVX-512) ------------------------------------- */

/* A register-blocked direct convolution for nhwc, groups 1: PB output pixels
 * of a row times NV x 16 output channels stay in registers while the taps
 * and input channels stream by (a broadcast input value times NV weight
 * vectors).  No im2col, no packing; the filter is [KH][KW][C][OP] with the
 * output channels padded to OP, a multiple of 16.  Only where the CPU has
 * AVX-512 (32 vector registers hold the 6 x 4 accumulators); elsewhere the
 * im2col + BLIS path runs. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(WNN_NO_CLONES) && __GNUC__ >= 12
#define HAVE_DIRECT 1
#define DIRECT __attribute__((target("arch=x86-64-v4")))

/* The micro-kernel: acc[p][j] (PB x NV vectors of 16) += x0[p ps + c] *
 * w[c OP + 16 j] over the taps and c.  For nhwc convolution: p runs over
 * output pixels (x0: input pixel of output pixel 0 at the first tap; ps: to
 * the next output pixel's; rs, cs: to the next tap row / column), j over
 * output channels (w: the weights of the first tap and output channel o0).
 * For the nchw 1x1 product it is a GEMM with p over output channels and j
 * over pixels.  The accumulators start at the bias: vectors bias[16 j] or,
 * when bias_p, scalars bias_p[p].  y: where acc[0][0] goes, ys: to the next
 * p; nvalid: lanes (of the NV * 16) that exist. */
#define DIRECT_BLOCK(NV, PB)                                                   \
    DIRECT static void direct_##NV##_##PB(                                     \
        const float *x0, int64_t ps, int64_t rs, int64_t cs, int64_t nkh,      \
        int64_t nkw, int64_t KW, int64_t C, const float *w, int64_t OP,        \
        const float *bias, const float *bias_p, float *y, int64_t ys,          \
        int64_t nvalid)                                                        \
    {                                                                          \
        v16 acc[PB][NV];                                                       \
        _Pragma("GCC unroll 6") for (int p = 0; p < PB; p++)                   \
        {                                                                      \
            _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++)               \
            {                                                                  \
                if (bias_p) {                                                  \
                    acc[p][j] = bcast(bias_p[p]);                              \
                } else {                                                       \
                    acc[p][j] = *(const v16 *)(bias + 16 * j);                 \
                }                                                              \
            }                                                                  \
        }                                                                      \
        for (int64_t kh = 0; kh < nkh; kh++) {                                 \
            for (int64_t kw = 0; kw < nkw; kw++) {                             \
                const float *xp = x0 + kh * rs + kw * cs;                      \
                const float *wp = w + (kh * KW + kw) * C * OP;                 \
                for (int64_t c = 0; c < C; c++) {                              \
                    v16 wv[NV];                                                \
                    _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++) wv[j] = \
                        *(const v16 *)(wp + c * OP + 16 * j);                  \
                    _Pragma("GCC unroll 6") for (int p = 0; p < PB; p++)       \
                    {                                                          \
                        v16 xb = bcast(xp[p * ps + c]);                        \
                        _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++)   \
                            acc[p][j] += xb * wv[j];                           \
                    }                                                          \
                }                                                              \
            }                                                                  \
        }                                                                      \
        for (int p = 0; p < PB; p++) {                                         \
            float *yp = y + p * ys;                                            \
            if (nvalid >= 16 * NV) {                                           \
                _Pragma("GCC unroll 4") for (int j = 0; j < NV; j++)           \
                    *(v16 *)(yp + 16 * j) = acc[p][j];                         \
            } else {                                                           \
                float t[16 * NV];                                              \
                for (int j = 0; j < NV; j++) {                                 \
                    *(v16 *)(t + 16 * j) = acc[p][j];                          \
                }                                                              \
                for (int64_t i = 0; i < nvalid; i++) {                         \
                    yp[i] = t[i];                                              \
                }                                                              \
            }                                                                  \
        }                                                                      \
    }
#define DIRECT_PBS(NV)                                                         \
    DIRECT_BLOCK(NV, 1)                                                        \
    DIRECT_BLOCK(NV, 2)                                                        \
    DIRECT_BLOCK(NV, 3) DIRECT_BLOCK(NV, 4) DIRECT_BLOCK(NV, 5) DIRECT_BLOCK(NV, 6)
DIRECT_PBS(1)
DIRECT_PBS(2)
DIRECT_PBS(3)
DIRECT_PBS(4)
#define DIRECT_PB 6

typedef void (*direct_fn)(const float *, int64_t, int64_t, int64_t, int64_t,
                          int64_t, int64_t, int64_t, const float *, int64_t,
                          const float *, const float *, float *, int64_t,
                          int64_t);
/* direct_fns[nv][pb] */
static const direct_fn direct_fns[5][7] = {
    { NULL },
    { NULL, direct_1_1, direct_1_2, direct_1_3, direct_1_4, direct_1_5, direct_1_6 },
    { NULL, direct_2_1, direct_2_2, direct_2_3, direct_2_4, direct_2_5, direct_2_6 },
    { NULL, direct_3_1, direct_3_2, direct_3_3, direct_3_4, direct_3_5, direct_3_6 },
    { NULL, direct_4_1, direct_4_2, direct_4_3, direct_4_4, direct_4_5, direct_4_6 },
};

/* dst (16 x 16, rows ldd apart) = src (16 x 16, rows lds apart)^T: four
 * rounds of swapping the off-diagonal blocks of size 8, 4, 2, 1. */
HOT static void
transpose16(const float *src, int64_t lds, float *dst, int64_t ldd)
{
#if defined(__clang__)
    for (int i = 0; i < 16; i++) {
        for (int j = 0; j < 16; j++) {
            dst[j * ldd + i] = src[i * lds + j];
        }
    }
#else
    v16 r[16];
    for (int i = 0; i < 16; i++) {
        r[i] = *(const v16 *)(src + i * lds);
    }
    for (int i = 0; i < 16; i++) {
        if (!(i & 8)) {
            v16 a = r[i], b = r[i + 8];
            r[i] = SHUF2(a, b, ((v16i){ 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23 }));
            r[i + 8] = SHUF2(a, b, ((v16i){ 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31 }));
        }
    }
    for (int i = 0; i < 16; i++) {
        if (!(i & 4)) {
            v16 a = r[i], b = r[i + 4];
            r[i] = SHUF2(a, b, ((v16i){ 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27 }));
            r[i + 4] = SHUF2(a, b, ((v16i){ 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31 }));
        }
    }
    for (int i = 0; i < 16; i++) {
        if (!(i & 2)) {
            v16 a = r[i], b = r[i + 2];
            r[i] = SHUF2(a, b, ((v16i){ 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29 }));
            r[i + 2] = SHUF2(a, b, ((v16i){ 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31 }));
        }
    }
    for (int i = 0; i < 16; i++) {
        if (!(i & 1)) {
            v16 a = r[i], b = r[i + 1];
            r[i] = SHUF2(a, b, ((v16i){ 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30 }));
            r[i + 1] = SHUF2(a, b, ((v16i){ 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31 }));
        }
    }
    for (int i = 0; i < 16; i++) {
        *(v16 *)(dst + i * ldd) = r[i];
    }
#endif
}

/* dst (cols x rows) = src (rows x cols)^T, tile (r0, c0) of 64 x 64 */
static void
transpose_tile(const float *src, int64_t rows, int64_t cols, float *dst,
               int64_t r0, int64_t c0)
{
    int64_t r1 = r0 + 64 < rows ? r0 + 64 : rows;
    int64_t c1 = c0 + 64 < cols ? c0 + 64 : cols;
    int64_t r16 = r0 + (r1 - r0) / 16 * 16, c16 = c0 + (c1 - c0) / 16 * 16;
    for (int64_t r = r0; r < r16; r += 16) {
        for (int64_t c = c0; c < c16; c += 16) {
            transpose16(src + r * cols + c, cols, dst + c * rows + r, rows);
        }
    }
    for (int64_t c = c0; c < c1; c++) {
        for (int64_t r = c < c16 ? r16 : r0; r < r1; r++) {
            dst[c * rows + r] = src[r * cols + c];
        }
    }
}

typedef struct timg_job {
    const float *src;
    int64_t rows;
    int64_t cols;
    float *dst;
    int64_t tr;
    int64_t tc;
} timg_job;

static void
timg_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const timg_job *j_ = p_;
    const float *src = j_->src;
    int64_t rows = j_->rows;
    int64_t cols = j_->cols;
    float *dst = j_->dst;
    int64_t tr = j_->tr;
    int64_t tc = j_->tc;
    for (int64_t t = (int64_t)b_; t < (int64_t)e_; t++) {
        int64_t i = t / (tr * tc), rem = t % (tr * tc);
        transpose_tile(src + i * rows * cols, rows, cols,
                       dst + i * rows * cols, rem / tc * 64, rem % tc * 64);
    }
}

static void
transpose_images(const float *src, int64_t n, int64_t rows, int64_t cols,
                 float *dst, int nt)
{
    int64_t tr = (rows + 63) / 64, tc = (cols + 63) / 64;
    {
        timg_job j_ = {.src = src, .rows = rows, .cols = cols, .dst = dst,
                       .tr = tr, .tc = tc};
        cpu_parallel_for_dynamic((int64_t)(n * tr * tc), 4, nt, timg_body, &j_);
    }
}

static bool
direct_usable(const geom *g)
{
    static int avx512 = -1;
    if (avx512 < 0) {
        __builtin_cpu_init();
        avx512 = __builtin_cpu_supports("avx512f") &&
                 __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl");
    }
    /* faster than im2col + BLIS for every channel count measured (1 to
     * 256 in, 8 to 256 out); WEBNN_CONV_DIRECT=0 turns it off (the tests
     * use it to run the portable paths too) */
    return avx512 && g->G == 1 && g->direct_ok;
}

/* Output row oh of image n, output channels [o0, o0 + 16 nv). */
static void
direct_row(const geom *g, const float *x, const float *wt, int64_t OP,
           const float *bp, float *y, int64_t n, int64_t oh, int64_t o0,
           int nv, int64_t lo, int64_t hi)
{
    const int64_t C = g->C, W = g->W, KW = g->KW;
    int64_t kh_lo, kh_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, g->H, &kh_lo, &kh_hi);
    int64_t nkh = kh_hi - kh_lo, ih = oh * g->sh - g->pt + kh_lo * g->dh;
    const float *xrow = x + (n * g->H + (nkh > 0 ? ih : 0)) * W * C;
    const float *wk = wt + kh_lo * KW * C * OP + o0;
    const int64_t ps = g->sw * C, rs = g->dh * W * C, cs = g->dw * C;
    float *yr = y + (n * g->OH + oh) * g->OW * g->O + o0;
    int64_t nvalid = g->O - o0 < 16 * nv ? g->O - o0 : 16 * nv;
    for (int64_t ow = lo; ow < hi; ow += DIRECT_PB) {
        int64_t pb = hi - ow < DIRECT_PB ? hi - ow : DIRECT_PB;
        direct_fns[nv][pb](xrow + (ow * g->sw - g->pl) * C, ps, rs, cs, nkh,
                           KW, KW, C, wk, OP, bp + o0, NULL, yr + ow * g->O,
                           g->O, nvalid);
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
        direct_fns[nv][1](xrow + (kw_hi > kw_lo ? iw : 0) * C, ps, rs, cs, nkh,
                          kw_hi - kw_lo, KW, C, wk + kw_lo * C * OP, OP,
                          bp + o0, NULL, yr + o * g->O, g->O, nvalid);
    }
}

/* ---- Winograd F(2x2, 3x3), nhwc (AVX-512) --------------------------------

 * 3x3 filters, strides 1, dilations 1: each 2 x 2 block of outputs comes
 * from a 4 x 4 block of inputs through Y = A^T [ (G g G^T) .* (B^T d B) ] A,
 * the channel sums of the 16 products being 16 matrix products (the
 * micro-kernel above) -- 16 multiply-adds per 4 outputs and channel pair
 * instead of 36.  The transforms take only additions and halvings, so the
 * rounding stays close to the direct sum's.  Inputs or filters with an
 * infinity, a NaN or a magnitude above 2^100 take the direct kernel, so
 * special values come out as the direct sum gives them.
 * WEBNN_CONV_WINOGRAD=0 in the environment turns it off. */
#define WINO_TILES 30 /* tiles per task: a multiple of the 6 of a block */

/* True when every |p[i]| <= 2^100: no infinity, no NaN, nothing near
 * overflow.  (The transforms add and subtract inputs: an infinity could
 * become inf - inf = NaN where the direct sum gives an infinity, and sums
 * of huge values could overflow where the direct sum does not.) */
HOT static bool
all_moderate(const float *p, int64_t n)
{
    typedef uint32_t u32a __attribute__((may_alias));
    const u32a *u = (const u32a *)p;
    const uint32_t lim = (127u + 100u) << 23; /* bits of 2^100 */
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        bad |= (u[i] & 0x7fffffffu) > lim;
    }
    return bad == 0;
}

static bool
winograd_usable(const geom *g, const float *x, const float *w)
{
    return g->KH == 3 && g->KW == 3 && g->sh == 1 && g->sw == 1 &&
           g->dh == 1 && g->dw == 1 && g->C >= 16 && g->O >= 16 &&
           g->winograd_ok && all_moderate(w, g->O * g->C * 9) &&
           all_moderate(x, g->N * g->H * g->W * g->C);
}

/* u[xi][c][OP] = (G g G^T)[xi] of the filter g of (o, c), from gt, the
 * filter as [C][3][3][OP] (zeros in the padding channels): 16 output
 * channels at a time. */
DIRECT static void
wino_filter(const float *gt, int64_t C, int64_t OP, float *u)
{
    for (int64_t c = 0; c < C; c++) {
        for (int64_t o = 0; o < OP; o += 16) {
            v16 gk[3][3], t[4][3];
            for (int h = 0; h < 3; h++) {
                for (int q = 0; q < 3; q++) {
                    gk[h][q] = *(const v16 *)(gt + ((c * 3 + h) * 3 + q) * OP + o);
                }
            }
            for (int q = 0; q < 3; q++) {
                t[0][q] = gk[0][q];
                t[1][q] = 0.5f * (gk[0][q] + gk[1][q] + gk[2][q]);
                t[2][q] = 0.5f * (gk[0][q] - gk[1][q] + gk[2][q]);
                t[3][q] = gk[2][q];
            }
            for (int i = 0; i < 4; i++) {
                v16 r[4] = { t[i][0], 0.5f * (t[i][0] + t[i][1] + t[i][2]),
                             0.5f * (t[i][0] - t[i][1] + t[i][2]), t[i][2] };
                for (int q = 0; q < 4; q++) {
                    *(v16 *)(u + ((i * 4 + q) * C + c) * OP + o) = r[q];
                }
            }
        }
    }
}

/* B^T d B of a 4 x 4 block d (rows r, columns q) */
#define WINO_IN(T, d, V)                                                       \
    do {                                                                       \
        T t_[4][4];                                                            \
        for (int q = 0; q < 4; q++) {                                          \
            t_[0][q] = d[0][q] - d[2][q];                                      \
            t_[1][q] = d[1][q] + d[2][q];                                      \
            t_[2][q] = d[2][q] - d[1][q];                                      \
            t_[3][q] = d[1][q] - d[3][q];                                      \
        }                                                                      \
        for (int r = 0; r < 4; r++) {                                          \
            V[r * 4 + 0] = t_[r][0] - t_[r][2];                                \
            V[r * 4 + 1] = t_[r][1] + t_[r][2];                                \
            V[r * 4 + 2] = t_[r][2] - t_[r][1];                                \
            V[r * 4 + 3] = t_[r][1] - t_[r][3];                                \
        }                                                                      \
    } while (0)

/* v[xi][t][C] for tiles t0 .. t0 + nt - 1 of image n, numbered row by
 * row, TW to a row (inputs outside the image are zeros) */
DIRECT static void
wino_input(const geom *g, const float *x, int64_t n, int64_t t0, int64_t nt,
           int64_t TW, float *v)
{
    const int64_t C = g->C, H = g->H, W = g->W, C16 = C / 16 * 16;
    for (int64_t t = 0; t < nt; t++) {
        const int64_t th = (t0 + t) / TW, tw = (t0 + t) % TW;
        const float *p[4][4];
        for (int r = 0; r < 4; r++) {
            int64_t ih = 2 * th - g->pt + r;
            for (int q = 0; q < 4; q++) {
                int64_t iw = 2 * tw - g->pl + q;
                p[r][q] = ih >= 0 && ih < H && iw >= 0 && iw < W
                              ? x + ((n * H + ih) * W + iw) * C
                              : NULL;
            }
        }
        for (int64_t c = 0; c < C16; c += 16) {
            v16 d[4][4], V[16];
            for (int r = 0; r < 4; r++) {
                for (int q = 0; q < 4; q++) {
                    d[r][q] = p[r][q] ? *(const v16 *)(p[r][q] + c) : (v16){ 0 };
                }
            }
            WINO_IN(v16, d, V);
            for (int xi = 0; xi < 16; xi++) {
                *(v16 *)(v + (xi * nt + t) * C + c) = V[xi];
            }
        }
        for (int64_t c = C16; c < C; c++) {
            float d[4][4], V[16];
            for (int r = 0; r < 4; r++) {
                for (int q = 0; q < 4; q++) {
                    d[r][q] = p[r][q] ? p[r][q][c] : 0.0f;
                }
            }
            WINO_IN(float, d, V);
            for (int xi = 0; xi < 16; xi++) {
                v[(xi * nt + t) * C + c] = V[xi];
            }
        }
    }
}

/* y = A^T m A + bias for the tiles of m[xi][t][OP] (as in wino_input) */
DIRECT static void
wino_output(const geom *g, const float *m, int64_t OP, const float *bp,
            float *y, int64_t n, int64_t t0, int64_t nt, int64_t TW)
{
    const int64_t O = g->O, OH = g->OH, OW = g->OW;
    for (int64_t t = 0; t < nt; t++) {
        int64_t oh0 = 2 * ((t0 + t) / TW), ow0 = 2 * ((t0 + t) % TW);
        for (int64_t o = 0; o < OP; o += 16) {
            v16 a[16], s[2][4], out[2][2];
            for (int xi = 0; xi < 16; xi++) {
                a[xi] = *(const v16 *)(m + (xi * nt + t) * OP + o);
            }
            for (int q = 0; q < 4; q++) {
                s[0][q] = a[q] + a[4 + q] + a[8 + q];
                s[1][q] = a[4 + q] - a[8 + q] - a[12 + q];
            }
            v16 bv = *(const v16 *)(bp + o);
            for (int r = 0; r < 2; r++) {
                out[r][0] = bv + (s[r][0] + s[r][1] + s[r][2]);
                out[r][1] = bv + (s[r][1] - s[r][2] - s[r][3]);
            }
            for (int r = 0; r < 2; r++) {
                for (int q = 0; q < 2; q++) {
                    if (oh0 + r >= OH || ow0 + q >= OW) {
                        continue;
                    }
                    float *yp = y + ((n * OH + oh0 + r) * OW + ow0 + q) * O + o;
                    if (o + 16 <= O) {
                        *(v16 *)yp = out[r][q];
                    } else {
                        float tmp[16];
                        *(v16 *)tmp = out[r][q];
                        for (int64_t i = 0; i < O - o; i++) {
                            yp[i] = tmp[i];
                        }
                    }
                }
            }
        }
    }
}

typedef struct wino_job {
    float *buf;
    int64_t vsz;
    int64_t msz;
    int64_t chunks;
    int64_t TT;
    int64_t TW;
    const geom *g;
    const float *x;
    int64_t C;
    int64_t OP;
    float *u;
    float *zb;
    float *bp;
    float *y;
} wino_job;

static void
wino_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    const wino_job *j_ = p_;
    float *buf = j_->buf;
    int64_t vsz = j_->vsz;
    int64_t msz = j_->msz;
    int64_t chunks = j_->chunks;
    int64_t TT = j_->TT;
    int64_t TW = j_->TW;
    const geom *g = j_->g;
    const float *x = j_->x;
    int64_t C = j_->C;
    int64_t OP = j_->OP;
    float *u = j_->u;
    float *zb = j_->zb;
    float *bp = j_->bp;
    float *y = j_->y;
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        float *v = buf + tid_ * (vsz + msz), *m = v + vsz;
        int64_t n = tsk / chunks, t0 = tsk % chunks * WINO_TILES;
        int64_t cnt = TT - t0 < WINO_TILES ? TT - t0 : WINO_TILES;
        wino_input(g, x, n, t0, cnt, TW, v);
        for (int xi = 0; xi < 16; xi++) {
            for (int64_t o0 = 0; o0 < OP; o0 += 64) {
                int nv = (OP - o0) / 16 < 4 ? (int)((OP - o0) / 16) : 4;
                for (int64_t t = 0; t < cnt; t += DIRECT_PB) {
                    int64_t pb = cnt - t < DIRECT_PB ? cnt - t : DIRECT_PB;
                    direct_fns[nv][pb](v + (xi * cnt + t) * C, C, 0, 0, 1,
                                       1, 1, C, u + xi * C * OP + o0, OP,
                                       zb, NULL,
                                       m + (xi * cnt + t) * OP + o0, OP,
                                       16 * nv);
                }
            }
        }
        wino_output(g, m, OP, bp, y, n, t0, cnt, TW);
    }
}

static wnn_status
conv_winograd_nhwc(const cpu_call *k, wnn_error *err, const geom *g,
                   int layout, const float *x, const float *w, const float *b,
                   float *y)
{
    const int64_t C = g->C, O = g->O, OP = (O + 15) / 16 * 16;
    const int64_t TW = (g->OW + 1) / 2, TT = (g->OH + 1) / 2 * TW;
    const int64_t chunks = (TT + WINO_TILES - 1) / WINO_TILES;
    const int64_t tasks = g->N * chunks;
    double flops = 2.0 * g->N * O * g->OH * g->OW * C * 9;
    int nt = threads_for(flops);
    const int64_t vsz = 16 * WINO_TILES * C, msz = 16 * WINO_TILES * OP;
    float *u = malloc((size_t)(16 * C * OP) * sizeof(float) + 64);
    float *gt = calloc((size_t)(9 * C * OP) + 16, sizeof(float));
    float *bp = calloc((size_t)OP + 16, sizeof(float));
    float *zb = calloc(80, sizeof(float));
    float *buf = malloc((size_t)((vsz + msz) * nt) * sizeof(float) + 64);
    if (!u || !gt || !bp || !zb || !buf) {
        free(u);
        free(gt);
        free(bp);
        free(zb);
        free(buf);
        return cpu_fail(k, err, "out of memory");
    }
    /* the filter as [C][3][3][OP], then transformed */
    int64_t s[4], t4[4] = { 1, 9 * OP, 3 * OP, OP }, d[4] = { O, C, 3, 3 };
    conv_filter_strides(layout, g, s);
    reorder(w, s, gt, t4, d);
    wino_filter(gt, C, OP, u);
    free(gt);
    if (b) {
        memcpy(bp, b, (size_t)O * sizeof(float));
    }
    {
        wino_job j_ = {.buf = buf, .vsz = vsz, .msz = msz, .chunks = chunks,
                       .TT = TT, .TW = TW, .g = g, .x = x, .C = C, .OP = OP,
                       .u = u, .zb = zb, .bp = bp, .y = y};
        cpu_parallel_for_dynamic((int64_t)(tasks), 1, nt, wino_body, &j_);
    }
    free(u);
    free(bp);
    free(zb);
    free(buf);
    return WNN_OK;
}

typedef struct d1x1_job {
    int64_t nob;
    int64_t chunk;
    int64_t P;
    int64_t OP;
    int64_t O;
    int64_t C;
    const float *x;
    float *wt;
    float *bp;
    float *y;
} d1x1_job;

static void
d1x1_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const d1x1_job *j_ = p_;
    int64_t nob = j_->nob;
    int64_t chunk = j_->chunk;
    int64_t P = j_->P;
    int64_t OP = j_->OP;
    int64_t O = j_->O;
    int64_t C = j_->C;
    const float *x = j_->x;
    float *wt = j_->wt;
    float *bp = j_->bp;
    float *y = j_->y;
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        int64_t p0 = tsk / nob * chunk, ob = tsk % nob;
        int64_t p1 = p0 + chunk < P ? p0 + chunk : P;
        int64_t o0 = ob * 64, nv = (OP - o0) / 16 < 4 ? (OP - o0) / 16 : 4;
        int64_t nvalid = O - o0 < 16 * nv ? O - o0 : 16 * nv;
        for (int64_t p = p0; p < p1; p += DIRECT_PB) {
            int64_t pb = p1 - p < DIRECT_PB ? p1 - p : DIRECT_PB;
            direct_fns[nv][pb](x + p * C, C, 0, 0, 1, 1, 1, C, wt + o0, OP,
                               bp + o0, NULL, y + p * O + o0, O, nvalid);
        }
    }
}

typedef struct drows_job {
    int64_t nob;
    int64_t OP;
    const geom *g;
    const float *x;
    float *wt;
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
    float *wt = j_->wt;
    float *bp = j_->bp;
    float *y = j_->y;
    int64_t lo = j_->lo;
    int64_t hi = j_->hi;
    for (int64_t tsk = (int64_t)b_; tsk < (int64_t)e_; tsk++) {
        int64_t r = tsk / nob, ob = tsk % nob;
        int64_t o0 = ob * 64, nv = (OP - o0) / 16 < 4 ? (OP - o0) / 16 : 4;
        direct_row(g, x, wt, OP, bp, y, r / g->OH, r % g->OH, o0, (int)nv, lo,
                   hi);
    }
}

static wnn_status
conv_direct_nhwc(const cpu_call *k, wnn_error *err, const geom *g,
                 int layout, const float *x, const float *w, const float *b,
                 float *y)
{
    if (winograd_usable(g, x, w)) {
        return conv_winograd_nhwc(k, err, g, layout, x, w, b, y);
    }
    const int64_t C = g->C, O = g->O, KH = g->KH, KW = g->KW;
    const int64_t OP = (O + 15) / 16 * 16;
    float *wt = malloc((size_t)(KH * KW * C * OP) * sizeof(float) + 64);
    float *bp = calloc((size_t)OP + 16, sizeof(float));
    if (!wt || !bp) {
        free(wt);
        free(bp);
        return cpu_fail(k, err, "out of memory");
    }
    /* the filter as [KH][KW][C][OP], zeros in the padding channels */
    int64_t s[4], t[4] = { 1, OP, KW * C * OP, C * OP }, d[4] = { O, C, KH, KW };
    conv_filter_strides(layout, g, s);
    if (OP != O) {
        memset(wt, 0, (size_t)(KH * KW * C * OP) * sizeof(float));
    }
    reorder(w, s, wt, t, d);
    if (b) {
        memcpy(bp, b, (size_t)O * sizeof(float));
    }
    /* columns whose taps are all inside the row */
    int64_t lo, hi, lo2, hi2;
    valid_range(g->OW, g->sw, -g->pl, g->W, &lo, &hi);
    valid_range(g->OW, g->sw, -g->pl + (KW - 1) * g->dw, g->W, &lo2, &hi2);
    lo = lo2 > lo ? lo2 : lo;
    hi = hi2 < hi ? hi2 : hi;
    if (hi < lo) {
        hi = lo;
    }
    int64_t nob = (OP + 63) / 64, rows = g->N * g->OH;
    double flops = 2.0 * g->N * O * g->OH * g->OW * C * KH * KW;
    int nt = threads_for(flops);
    if (KH == 1 && KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 &&
        g->pl == 0 && g->OH == g->H && g->OW == g->W) {
        /* 1x1 without strides or padding: one long row of N H W pixels */
        const int64_t P = g->N * g->H * g->W, chunk = 16 * DIRECT_PB;
        const int64_t nch = (P + chunk - 1) / chunk;
        {
            d1x1_job j_ = {.nob = nob, .chunk = chunk, .P = P, .OP = OP,
                           .O = O, .C = C, .x = x, .wt = wt, .bp = bp, .y = y};
            cpu_parallel_for_dynamic((int64_t)(nch * nob), 1, nt, d1x1_body, &j_);
        }
        free(wt);
        free(bp);
        return WNN_OK;
    }
    {
        drows_job j_ = {.nob = nob, .OP = OP, .g = g, .x = x, .wt = wt,
                        .bp = bp, .y = y, .lo = lo, .hi = hi};
        cpu_parallel_for_dynamic((int64_t)(rows * nob), 1, nt, drows_body, &j_);
    }
    free(wt);
    free(bp);
    return WNN_OK;
}

/* nchw through the nhwc kernel: the input transposed to nhwc, the result
 * transposed back (two passes, small next to a convolution with a filter
 * larger than 1x1). */
static wnn_status
conv_direct_nchw(const cpu_call *k, wnn_error *err, const geom *g, int layout,
                 const float *x, const float *w, const float *b, float *y)
{
    int64_t nx = g->N * g->C * g->H * g->W, ny = g->N * g->O * g->OH * g->OW;
    float *xt = malloc((size_t)nx * sizeof(float) + 64);
    float *yt = malloc((size_t)ny * sizeof(float) + 64);
    wnn_status st = WNN_ERR;
    if (!xt || !yt) {
        st = cpu_fail(k, err, "out of memory");
    } else {
        geom gt = *g;
        gt.nhwc = true;
        transpose_images(x, g->N, g->C, g->H * g->W, xt, threads_for(nx * 8.0));
        st = conv_direct_nhwc(k, err, &gt, layout, xt, w, b, yt);
        if (st == WNN_OK) {
            transpose_images(yt, g->N, g->OH * g->OW, g->O, y,
                             threads_for(ny * 8.0));
        }
    }
    free(xt);
    free(yt);
    return st;
}

typedef struct d1nchw_job {
    float *scratch;
    int64_t C;
    int64_t nblk;
    int64_t P;
    const float *x;
    int64_t O;
    const float *w;
    const float *bias;
    float *y;
} d1nchw_job;

static void
d1nchw_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    const d1nchw_job *j_ = p_;
    float *scratch = j_->scratch;
    int64_t C = j_->C;
    int64_t nblk = j_->nblk;
    int64_t P = j_->P;
    const float *x = j_->x;
    int64_t O = j_->O;
    const float *w = j_->w;
    const float *bias = j_->bias;
    float *y = j_->y;
    for (int64_t t = (int64_t)b_; t < (int64_t)e_; t++) {
        float *sc = scratch + tid_ * C * 64;
        int64_t n = t / nblk, p0 = t % nblk * 64;
        int64_t valid = P - p0 < 64 ? P - p0 : 64;
        int nv = (int)((valid + 15) / 16);
        const float *xb = x + n * C * P + p0;
        int64_t ldx = P;
        if (p0 + 16 * nv > P) {
            for (int64_t c = 0; c < C; c++) {
                for (int64_t i = 0; i < 16 * nv; i++) {
                    sc[c * 64 + i] = i < valid ? xb[c * P + i] : 0.0f;
                }
            }
            xb = sc;
            ldx = 64;
        }
        float *yb = y + n * O * P + p0;
        for (int64_t o = 0; o < O; o += DIRECT_PB) {
            int64_t pb = O - o < DIRECT_PB ? O - o : DIRECT_PB;
            direct_fns[nv][pb](w + o * C, C, 0, 0, 1, 1, 1, C, xb, ldx,
                               NULL, bias + o, yb + o * P, P, valid);
        }
    }
}

/* nchw 1x1 convolution, strides 1, no padding, groups 1: per image the
 * product Y (O x P) = W (O x C) X (C x P) + bias, P = H W, with the
 * micro-kernel above (6 output channels x 64 pixels in registers).  w is
 * O x C; the last, partial block of pixels is copied to zero-padded scratch
 * so that no load reads past the input. */
static wnn_status
conv_direct_1x1_nchw(const cpu_call *k, wnn_error *err, const geom *g,
                     int layout, const float *x, const float *w,
                     const float *b, float *y)
{
    const int64_t C = g->C, O = g->O, P = g->H * g->W;
    const bool o_by_c = layout == WNN_CONV_OIHW || layout == WNN_CONV_OHWI;
    float *wc = o_by_c ? NULL : malloc((size_t)(O * C) * sizeof(float) + 64);
    float *zb = b ? NULL : calloc((size_t)O + 16, sizeof(float));
    int64_t nblk = (P + 63) / 64, tasks = g->N * nblk;
    double flops = 2.0 * g->N * O * P * C;
    int nt = threads_for(flops);
    float *scratch = malloc((size_t)(C * 64 * nt) * sizeof(float) + 64);
    if ((!o_by_c && !wc) || (!b && !zb) || !scratch) {
        free(wc);
        free(zb);
        free(scratch);
        return cpu_fail(k, err, "out of memory");
    }
    if (wc) { /* [C][O] -> [O][C] */
        for (int64_t o = 0; o < O; o++) {
            for (int64_t c = 0; c < C; c++) {
                wc[o * C + c] = w[c * O + o];
            }
        }
        w = wc;
    }
    const float *bias = b ? b : zb;
    {
        d1nchw_job j_ = {.scratch = scratch, .C = C, .nblk = nblk, .P = P,
                         .x = x, .O = O, .w = w, .bias = bias, .y = y};
        cpu_parallel_for_dynamic((int64_t)(tasks), 1, nt, d1nchw_body, &j_);
    }
    free(wc);
    free(zb);
    free(scratch);
    return WNN_OK;
}
#endif

/* The batch, channel and spatial sizes of input and output (both layouts),
 * shared by conv2d and convTranspose2d. */
static void
geom_sizes(geom *g, bool nhwc, const wnn_desc *xd, const wnn_desc *yd)
{
    g->nhwc = nhwc;
    g->N = xd->shape[0];
    g->C = xd->shape[nhwc ? 3 : 1];
    g->H = xd->shape[nhwc ? 1 : 2];
    g->W = xd->shape[nhwc ? 2 : 3];
    g->O = yd->shape[nhwc ? 3 : 1];
    g->OH = yd->shape[nhwc ? 1 : 2];
    g->OW = yd->shape[nhwc ? 2 : 3];
}

/* ---- conv2d --------------------------------------------------------------- */
wnn_status
cpu_conv2d(const cpu_call *k, wnn_error *err)
{
    const wnn_conv2d_options *o = k->options;
    const wnn_desc *xd = &k->in_desc[0], *wd = &k->in_desc[1],
                   *yd = &k->out_desc[0];
    wnn_dtype t = yd->dtype;
    geom g;
    geom_sizes(&g, o->input_layout == WNN_LAYOUT_NHWC, xd, yd);
    const uint32_t *fs = wd->shape;
    switch (o->filter_layout) {
    case WNN_CONV_HWIO: g.KH = fs[0], g.KW = fs[1]; break;
    case WNN_CONV_OHWI: case WNN_CONV_IHWO: g.KH = fs[1], g.KW = fs[2]; break;
    default: g.KH = fs[2], g.KW = fs[3]; break;
    }
    g.G = o->groups;
    g.Cg = g.C / g.G;
    g.Og = g.O / g.G;
    g.pt = o->pad[0], g.pl = o->pad[2];
    g.sh = o->stride[0], g.sw = o->stride[1];
    g.dh = o->dilation[0], g.dw = o->dilation[1];
    g.direct_ok = k->config->conv_direct;
    g.winograd_ok = k->config->conv_direct && k->config->conv_winograd;

    uint64_t nx = wnn_desc_elements(xd), nw = wnn_desc_elements(wd),
             ny = wnn_desc_elements(yd);
    float *ox, *ow, *ob = NULL, *oy = NULL;
    const float *x = as_f32(k->in[0], t, nx, &ox);
    const float *w = as_f32(k->in[1], t, nw, &ow);
    const float *b = NULL;
    if (o->bias) {
        b = as_f32(k->in[o->bias - 1], t, g.O, &ob);
    }
    float *y = k->out[0];
    if (t != WNN_FLOAT32) {
        y = oy = malloc(ny * sizeof(float) + 64);
    }
    wnn_status st;
    if (!x || !w || (o->bias && !b) || !y) {
        st = cpu_fail(k, err, "out of memory");
    } else if (g.G == g.C && g.Cg == 1) {
        st = conv_depthwise(k, err, &g, o->filter_layout, x, w, b, y);
#if HAVE_DIRECT
    } else if (direct_usable(&g) && g.nhwc) {
        st = conv_direct_nhwc(k, err, &g, o->filter_layout, x, w, b, y);
    } else if (direct_usable(&g) && g.KH == 1 && g.KW == 1 && g.sh == 1 &&
               g.sw == 1 && g.pt == 0 && g.pl == 0 && g.OH == g.H &&
               g.OW == g.W) {
        st = conv_direct_1x1_nchw(k, err, &g, o->filter_layout, x, w, b, y);
    } else if (direct_usable(&g) && g.KH * g.KW > 1) {
        st = conv_direct_nchw(k, err, &g, o->filter_layout, x, w, b, y);
#endif
    } else {
        st = conv_gemm(k, err, &g, o->filter_layout, x, w, b, y);
    }
    if (st == WNN_OK && oy) {
        cpu_from_f32(oy, k->out[0], t, ny);
    }
    free(ox);
    free(ow);
    free(ob);
    free(oy);
    return st;
}

/* ---- convTranspose2d ------------------------------------------------------ */

/* nhwc: output row oh of image n, group gi = bias + the contributions
 * col[ih][iw][(kh, kw, oc)] of that image and group that land on it
 * (ih sh + kh dh - pt = oh, iw sw + kw dw - pl = ow). */
HOT static void
gather_row_nhwc(const geom *g, const float *col, const float *b, float *y,
                int64_t n, int64_t gi, int64_t oh)
{
    const int64_t KH = g->KH, KW = g->KW, Og = g->Og, H = g->H, W = g->W;
    for (int64_t ow = 0; ow < g->OW; ow++) {
        float *yo = y + ((n * g->OH + oh) * g->OW + ow) * g->O + gi * Og;
        for (int64_t oc = 0; oc < Og; oc++) {
            yo[oc] = b ? b[gi * Og + oc] : 0.0f;
        }
        for (int64_t kh = 0; kh < KH; kh++) {
            int64_t th = oh + g->pt - kh * g->dh;
            if (th < 0) {
                break;
            }
            if (th % g->sh != 0 || th / g->sh >= H) {
                continue;
            }
            int64_t ih = th / g->sh;
            for (int64_t kw = 0; kw < KW; kw++) {
                int64_t tw = ow + g->pl - kw * g->dw;
                if (tw < 0) {
                    break;
                }
                if (tw % g->sw != 0 || tw / g->sw >= W) {
                    continue;
                }
                const float *cp = col + (ih * W + tw / g->sw) * KH * KW * Og +
                                  (kh * KW + kw) * Og;
                for (int64_t oc = 0; oc < Og; oc++) {
                    yo[oc] += cp[oc];
                }
            }
        }
    }
}

/* nchw: output plane yp of one output channel = bias + the contributions
 * cp[(kh, kw)][ih][iw] of that channel, added at (ih sh + kh dh - pt,
 * iw sw + kw dw - pl) where that falls inside the plane. */
HOT static void
scatter_plane(const geom *g, const float *cp, float bias, float *yp)
{
    const int64_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;
    for (int64_t i = 0; i < OH * OW; i++) {
        yp[i] = bias;
    }
    for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih_lo, ih_hi;
        valid_range(H, g->sh, kh * g->dh - g->pt, OH, &ih_lo, &ih_hi);
        for (int64_t kw = 0; kw < g->KW; kw++) {
            int64_t iw_lo, iw_hi, off = kw * g->dw - g->pl;
            valid_range(W, g->sw, off, OW, &iw_lo, &iw_hi);
            const float *c = cp + (kh * g->KW + kw) * H * W;
            for (int64_t ih = ih_lo; ih < ih_hi; ih++) {
                float *yr = yp + (ih * g->sh + kh * g->dh - g->pt) * OW + off;
                const float *cr = c + ih * W;
                if (g->sw == 1) {
                    for (int64_t iw = iw_lo; iw < iw_hi; iw++) {
                        yr[iw] += cr[iw];
                    }
                } else {
                    for (int64_t iw = iw_lo; iw < iw_hi; iw++) {
                        yr[iw * g->sw] += cr[iw];
                    }
                }
            }
        }
    }
}

typedef struct ct_scatter_job {
    geom g;
    float *col;
    const float *b;
    float *y;
    int64_t n;
    int64_t gi;
    int64_t HW;
} ct_scatter_job;

static void
ct_scatter_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const ct_scatter_job *j_ = p_;
    geom g = j_->g;
    float *col = j_->col;
    const float *b = j_->b;
    float *y = j_->y;
    int64_t n = j_->n;
    int64_t gi = j_->gi;
    int64_t HW = j_->HW;
    for (int64_t oc = (int64_t)b_; oc < (int64_t)e_; oc++) {
        scatter_plane(&g, col + oc * g.KH * g.KW * HW,
                      b ? b[gi * g.Og + oc] : 0.0f,
                      y + ((n * g.O) + gi * g.Og + oc) * g.OH * g.OW);
    }
}

typedef struct ct_gather_job {
    geom g;
    float *col;
    const float *b;
    float *y;
    int64_t n;
    int64_t gi;
} ct_gather_job;

static void
ct_gather_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const ct_gather_job *j_ = p_;
    geom g = j_->g;
    float *col = j_->col;
    const float *b = j_->b;
    float *y = j_->y;
    int64_t n = j_->n;
    int64_t gi = j_->gi;
    for (int64_t oh = (int64_t)b_; oh < (int64_t)e_; oh++) {
        gather_row_nhwc(&g, col, b, y, n, gi, oh);
    }
}

wnn_status
cpu_conv_transpose2d(const cpu_call *k, wnn_error *err)
{
    const wnn_conv_transpose2d_options *o = k->options;
    const wnn_desc *xd = &k->in_desc[0], *wd = &k->in_desc[1],
                   *yd = &k->out_desc[0];
    wnn_dtype t = yd->dtype;
    geom g;
    geom_sizes(&g, o->input_layout == WNN_LAYOUT_NHWC, xd, yd);
    const uint32_t *fs = wd->shape;
    int64_t s[4]; /* filter strides in (i, o, h, w) order */
    g.G = o->groups;
    g.Cg = g.C / g.G;
    g.Og = g.O / g.G;
    switch (o->filter_layout) {
    case WNN_CONVT_HWOI:
        g.KH = fs[0], g.KW = fs[1];
        s[0] = 1, s[1] = g.C, s[2] = g.KW * g.Og * g.C, s[3] = g.Og * g.C;
        break;
    case WNN_CONVT_OHWI:
        g.KH = fs[1], g.KW = fs[2];
        s[0] = 1, s[1] = g.KH * g.KW * g.C, s[2] = g.KW * g.C, s[3] = g.C;
        break;
    default:
        g.KH = fs[2], g.KW = fs[3];
        s[0] = g.Og * g.KH * g.KW, s[1] = g.KH * g.KW, s[2] = g.KW, s[3] = 1;
        break;
    }
    g.pt = o->pad[0], g.pl = o->pad[2];
    g.sh = o->stride[0], g.sw = o->stride[1];
    g.dh = o->dilation[0], g.dw = o->dilation[1];

    const int64_t M = g.Og * g.KH * g.KW, HW = g.H * g.W;
    uint64_t nx = wnn_desc_elements(xd), nw = wnn_desc_elements(wd),
             ny = wnn_desc_elements(yd);
    float *ox, *ow, *ob = NULL, *oy = NULL;
    const float *x = as_f32(k->in[0], t, nx, &ox);
    const float *w = as_f32(k->in[1], t, nw, &ow);
    const float *b = NULL;
    if (o->bias) {
        b = as_f32(k->in[o->bias - 1], t, g.O, &ob);
    }
    float *y = k->out[0];
    if (t != WNN_FLOAT32) {
        y = oy = malloc(ny * sizeof(float) + 64);
    }
    /* the filter as [C][Og][KH][KW] (nchw) or [C][KH][KW][Og] (nhwc) */
    float *wc = malloc((size_t)(g.C * M) * sizeof(float) + 64);
    float *col = malloc((size_t)(M * HW) * sizeof(float) + 64);
    wnn_status st = WNN_OK;
    if (!x || !w || (o->bias && !b) || !y || !wc || !col) {
        st = cpu_fail(k, err, "out of memory");
        goto done;
    }
    int64_t tt[4], d[4] = { g.C, g.Og, g.KH, g.KW };
    if (!g.nhwc) {
        tt[0] = M, tt[1] = g.KH * g.KW, tt[2] = g.KW, tt[3] = 1;
    } else {
        tt[0] = M, tt[1] = 1, tt[2] = g.KW * g.Og, tt[3] = g.Og;
    }
    reorder(w, s, wc, tt, d);
    double flops = 2.0 * g.N * g.C * M * HW;
    int nt = threads_for(flops + (double)ny * g.KH * g.KW);
    for (int64_t n = 0; n < g.N; n++) {
        for (int64_t gi = 0; gi < g.G; gi++) {
            const float *a = wc + gi * g.Cg * M;
            if (!g.nhwc) {
                /* col (M x HW) = a^T (M x Cg) * x_g (Cg x HW) */
                sgemm_par(true, false, M, HW, g.Cg, a, M,
                          x + (n * g.C + gi * g.Cg) * HW, HW, col, HW, nt);
                {
                    ct_scatter_job j_ = {.g = g, .col = col, .b = b, .y = y,
                                         .n = n, .gi = gi, .HW = HW};
                    cpu_parallel_for_dynamic((int64_t)(g.Og), 1, nt, ct_scatter_body, &j_);
                }
            } else {
                /* col (HW x M) = x_g (HW x Cg) * a (Cg x M) */
                sgemm_par(false, false, HW, M, g.Cg,
                          x + n * HW * g.C + gi * g.Cg, g.C, a, M, col, M, nt);
                {
                    ct_gather_job j_ = {.g = g, .col = col, .b = b, .y = y,
                                        .n = n, .gi = gi};
                    cpu_parallel_for((int64_t)(g.OH), nt, ct_gather_body, &j_);
                }
            }
        }
    }
    if (oy) {
        cpu_from_f32(oy, k->out[0], t, ny);
    }
done:
    free(ox);
    free(ow);
    free(ob);
    free(oy);
    free(wc);
    free(col);
    return st;
}
