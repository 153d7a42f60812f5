/* depthwise.c -- conv2d with one input channel per group (conv.h has the overview). */
#include "conv.h"

/* ---- depthwise ------------------------------------------------------------ */

/* One output plane of an nchw depthwise convolution: xp is the input plane
 * (H x W), wk the KH x KW filter, yp the output plane (OH x OW). */
CPU_HOT_VOID(static, , dw_plane_nchw,
             (const geom *g, const float *xp, const float *wk, float bias,
              float *yp, const float *zeros),
             (g, xp, wk, bias, yp, zeros))
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
CPU_HOT_VOID(static, , dw_row_nhwc,
             (const geom *g, const float *x, const float *wk, const float *b,
              float *y, int64_t n, int64_t oh),
             (g, x, wk, b, y, n, oh))
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

/* the nhwc kernel for any filter (depthwise_k.h) at two widths: 16
 * channels (AVX-512, the CPU's level capped by WEBNN_CPU_ISA) and 8 (AVX2 +
 * FMA); WEBNN_CONV_DIRECT=0 or a lower level takes dw_row_nhwc above */
typedef void (*dwk_row_fn)(const geom *, const float *, const float *,
                           const float *, float *, int64_t, int64_t, int64_t,
                           int64_t, const float *);
#if HAVE_DIRECT
#define DWK_VT v16
#define DWK_VW 16
#define DWK_SP 8
#define DWK_TARGET DIRECT
#define DWK_NAME(s) dwk_##s##_avx512
#include "depthwise_k.h"
#undef DWK_VT
#undef DWK_VW
#undef DWK_SP
#undef DWK_TARGET
#undef DWK_NAME
typedef float v8 __attribute__((vector_size(32), aligned(4), may_alias));
#define DWK_VT v8
#define DWK_VW 8
#define DWK_SP 8
#define DWK_TARGET CPU_TARGET_V3
#define DWK_NAME(s) dwk_##s##_avx2
#include "depthwise_k.h"
#undef DWK_VT
#undef DWK_VW
#undef DWK_SP
#undef DWK_TARGET
#undef DWK_NAME
#endif

static dwk_row_fn
dwk_pick(const geom *g)
{
#if HAVE_DIRECT
    if (!g->direct_ok || g->O != g->C) {
        return NULL;
    }
    if (cpu_has_avx512() && g->C >= 16) {
        return dwk_row_avx512;
    }
    if (cpu_isa() >= CPU_ISA_AVX2 && g->C >= 8) {
        return dwk_row_avx2;
    }
#endif
    (void)g;
    return NULL;
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

CPU_HOT_VOID(static, , dw_plane_nchw_padded,
             (const geom *g, const dw_pad *d, const float *xp,
              const float *wk, float bias, float *yp, float *pad, float *row,
              int64_t off, int64_t ch),
             (g, d, xp, wk, bias, yp, pad, row, off, ch))
{
    const int64_t H = g->H, W = g->W, OW = g->OW, KH = g->KH, KW = g->KW;
    const int64_t PH = d->PH, PW = d->PW, OWR = d->OWR;
    const int64_t sh = g->sh, sw = g->sw, dh = g->dh, dw = g->dw;
    /* a clamp / relu epilogue alone is applied in registers (3x3, strides
     * 1 or 2) */
    float clamp[3];
    const float *res, *cl;
    if (!reg_epi_of(g->epi, clamp, &res, &cl) || res) {
        cl = NULL;
    }
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
                    v16 r = a + (b + c);
                    if (cl) {
                        reg_clamp16(&r, cl);
                    }
                    *(v16 *)(out + ow) = r;
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
                    if (cl) {
                        reg_clamp16(&acc, cl);
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
        if (g->epi && !(cl && KH == 3 && KW == 3 && (sw == 1 || (sw == 2 && dw == 1)))) {
            /* the row just stored, in L1 (or clamped above) */
            cpu_epi_tile(g->epi, yp + oh * OW, off + oh * OW, OW, ch, 0);
        }
    }
}

/* nhwc 3x3 depthwise (multiplier 1), one output row yr from its three
 * input rows r[] (rows outside the input are a row of W * C zeros): columns
 * whose taps all fall inside the row run 16 channels at a time with the 9
 * weights in registers, the others check every tap. */
#if HAVE_DIRECT
/* The interior columns of conv_dw3_row, 16 channels at a time, on AVX-512
 * with intrinsics: the clamp as max / min (the portable code's
 * compare-and-blend pairs took a quarter of a 56 x 56 x 144 row's time;
 * the results differ from the portable loop's by its choice of which
 * products GCC fuses, a rounding here and there).  Every caller of
 * conv_dw3_row (the depthwise kernel and the conv pairs) runs it, so fused
 * and unfused results stay equal.  MobileNetV2 batch 1: 3.48 -> 3.36 ms
 * (medians of 6 profiles), the pairs and depthwise layers 2-7 % faster. */
/* the interior columns of conv_dw3_row at two widths (dw3_k.h): 16
 * channels on AVX-512, 8 on AVX2 + FMA (the portable loop's 16-lane
 * vectors went through the stack at AVX2) */
#define DW3_VT __m512
#define DW3_VW 16
#define DW3_TARGET DIRECT
#define DW3_NAME(s) dw3_##s##_avx512
#define DW3_LOAD _mm512_loadu_ps
#define DW3_FMA _mm512_fmadd_ps
#define DW3_MUL _mm512_mul_ps
#define DW3_ADD _mm512_add_ps
#define DW3_ZERO _mm512_setzero_ps()
#define DW3_STORE(yo, v, cl) _mm512_storeu_ps(yo, reg_epi512(v, NULL, 0, cl))
#include "dw3_k.h"
#define DW3_TARGET CPU_TARGET_V3
/* max(lo, v) then min(hi, v) (a NaN v kept, as reg_epi512) + cl[2] */
DW3_TARGET static inline __attribute__((always_inline)) __m256
dw3_clamp256(__m256 v, const float *cl)
{
    if (cl) {
        v = _mm256_max_ps(_mm256_set1_ps(cl[0]), v);
        v = _mm256_min_ps(_mm256_set1_ps(cl[1]), v);
        v = _mm256_add_ps(v, _mm256_set1_ps(cl[2]));
    }
    return v;
}
#define DW3_VT __m256
#define DW3_VW 8
#define DW3_NAME(s) dw3_##s##_avx2
#define DW3_LOAD _mm256_loadu_ps
#define DW3_FMA _mm256_fmadd_ps
#define DW3_MUL _mm256_mul_ps
#define DW3_ADD _mm256_add_ps
#define DW3_ZERO _mm256_setzero_ps()
#define DW3_STORE(yo, v, cl) _mm256_storeu_ps(yo, dw3_clamp256(v, cl))
#include "dw3_k.h"
#endif

/* cl: a clamp / relu epilogue alone, applied in registers before each
 * store (reg_epi_of; NULL: none here, the caller applies any other) */
CPU_HOT_VOID(, , conv_dw3_span,
             (const geom *g, const float *const r[3], const float *wk,
              const float *b, float *yo, int64_t lo, int64_t hi,
              const float *cl, int64_t a0, int64_t e0),
             (g, r, wk, b, yo, lo, hi, cl, a0, e0))
{
    const int64_t C = g->C, W = g->W;
    const int64_t sw = g->sw, dw = g->dw, pl = g->pl;
    const int64_t C16 = C / 16 * 16;
    int64_t c0_v = 0; /* the channels the loop below computes */
    int64_t c_tail = C16; /* the first channel of the scalar tail */
#if HAVE_DIRECT
    if (g->direct_ok && cpu_has_avx512()) { /* WEBNN_CONV_DIRECT=0: portable */
        dw3_cols_avx512(r, C, C16, sw, pl, dw, W, a0, e0, wk, b, yo, lo, hi,
                        cl);
        c0_v = C16;
        if (C - C16 >= 8) { /* 8 more channels on the 8-lane kernel */
            const float *r8[3] = { r[0] + C16, r[1] + C16, r[2] + C16 };
            dw3_cols_avx2(r8, C, 8, sw, pl, dw, W, a0, e0, wk + C16,
                          b ? b + C16 : NULL, yo + C16, lo, hi, cl);
            c_tail = C16 + 8;
        }
    } else if (g->direct_ok && cpu_isa() >= CPU_ISA_AVX2) {
        const int64_t C8 = C / 8 * 8;
        dw3_cols_avx2(r, C, C8, sw, pl, dw, W, a0, e0, wk, b, yo, lo, hi, cl);
        c0_v = C16;
        c_tail = C8;
    }
#endif
    /* the interior columns of the span */
    const int64_t ilo = lo < a0 ? a0 : lo, ihi = hi > e0 ? e0 : hi;
    for (int64_t c0 = c0_v; c0 < C16; c0 += 16) {
        v16 w[9];
        for (int t = 0; t < 9; t++) {
            w[t] = *(const v16 *)(wk + t * C + c0);
        }
        v16 bv = b ? *(const v16 *)(b + c0) : (v16){ 0 };
        const float *r0 = r[0] + c0, *r1 = r[1] + c0, *r2 = r[2] + c0;
        const int64_t s1 = dw * C, s2 = 2 * dw * C;
        for (int64_t ow = ilo; ow < ihi; ow++) {
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
            v16 v = a + (bb + cc);
            if (cl) {
                reg_clamp16(&v, cl);
            }
            *(v16 *)(yo + (ow - a0) * C + c0) = v;
        }
        /* the border columns: only the taps inside the row (a third of
         * the pixels of a 7 x 7 image, scalar code before) */
        for (int64_t ow = a0; ow < e0; ow++) {
            if (ow == ilo && ihi > ilo) {
                ow = ihi - 1;
                continue;
            }
            v16 acc = bv;
            for (int kw = 0; kw < 3; kw++) {
                int64_t iw = ow * sw - pl + kw * dw;
                if (iw < 0 || iw >= W) {
                    continue;
                }
                acc += *(const v16 *)(r0 + iw * C) * w[kw] +
                       *(const v16 *)(r1 + iw * C) * w[3 + kw] +
                       *(const v16 *)(r2 + iw * C) * w[6 + kw];
            }
            if (cl) {
                reg_clamp16(&acc, cl);
            }
            *(v16 *)(yo + (ow - a0) * C + c0) = acc;
        }
    }
    /* the last channels of every column (C % 16, or C % 8 at AVX2) */
    for (int64_t ow = a0; ow < e0 && c_tail < C; ow++) {
        float *yc = yo + (ow - a0) * C;
        for (int64_t c = c_tail; c < C; c++) {
            yc[c] = b ? b[c] : 0.0f;
        }
        for (int64_t kw = 0; kw < 3; kw++) {
            int64_t iw = ow * sw - pl + kw * dw;
            if (iw < 0 || iw >= W) {
                continue;
            }
            for (int kh = 0; kh < 3; kh++) {
                const float *xp = r[kh] + iw * C;
                const float *wp = wk + (kh * 3 + kw) * C;
                for (int64_t c = c_tail; c < C; c++) {
                    yc[c] += xp[c] * wp[c];
                }
            }
        }
        for (int64_t c = c_tail; cl && c < C; c++) { /* as reg_clamp16 */
            float v = yc[c] < cl[0] ? cl[0] : yc[c];
            yc[c] = (v > cl[1] ? cl[1] : v) + cl[2];
        }
    }
}

void
conv_dw3_row(const geom *g, const float *const r[3], const float *wk,
             const float *b, float *yr, int64_t lo, int64_t hi,
             const float *cl)
{
    conv_dw3_span(g, r, wk, b, yr, lo, hi, cl, 0, g->OW);
}

/* output row oh of image n (see conv_dw3_row) */
static void
dw3_row_nhwc(const geom *g, const float *x, const float *wk, const float *b,
             float *y, int64_t n, int64_t oh, const float *zeros, int64_t lo,
             int64_t hi, const float *cl)
{
    const int64_t C = g->C, H = g->H, W = g->W;
    const float *r[3];
    for (int kh = 0; kh < 3; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        r[kh] = ih < 0 || ih >= H ? zeros : x + (n * H + ih) * W * C;
    }
    conv_dw3_row(g, r, wk, b, y + (n * g->OH + oh) * g->OW * C, lo, hi, cl);
}

void
conv_dw3_cols(const geom *g, int64_t *lo, int64_t *hi)
{
    int64_t lo2, hi2;
    valid_range(g->OW, g->sw, -g->pl, g->W, lo, hi);
    valid_range(g->OW, g->sw, -g->pl + 2 * g->dw, g->W, &lo2, &hi2);
    *lo = lo2 > *lo ? lo2 : *lo;
    *hi = hi2 < *hi ? hi2 : *hi;
    if (*hi < *lo) {
        *hi = *lo;
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
    const float *zeros;
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
    const float *zeros = j_->zeros;
    for (int64_t p = (int64_t)b_; p < (int64_t)e_; p++) {
        float *pad = scratch ? scratch + tid_ * per : NULL;
        int64_t n = p / g->O, o = p % g->O;
        const float *xp = x + (n * g->C + o / m) * g->H * g->W;
        const float *wk = w + o * g->KH * g->KW;
        float bv = b ? b[o] : 0.0f, *yp = y + p * g->OH * g->OW;
        if (pad) {
            dw_plane_nchw_padded(g, &pd, xp, wk, bv, yp, pad,
                                 pad + pd.PH * pd.PW, p * g->OH * g->OW, o);
        } else {
            dw_plane_nchw(g, xp, wk, bv, yp, zeros);
            if (g->epi) { /* the plane just stored */
                cpu_epi_tile(g->epi, yp, p * g->OH * g->OW, g->OH * g->OW, o,
                             0);
            }
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
    dwk_row_fn kk; /* the kernel of depthwise_k.h (NULL: dw_row_nhwc) */
    const float *zeros;
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
    const float *zeros = j_->zeros;
    int64_t lo = j_->lo;
    int64_t hi = j_->hi;
    /* a clamp / relu alone runs in the 3x3 kernel's registers */
    float clamp[3];
    const float *res, *cl;
    if (!k3 || !reg_epi_of(g->epi, clamp, &res, &cl) || res) {
        cl = NULL;
    }
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        if (k3) {
            dw3_row_nhwc(g, x, w, b, y, r / g->OH, r % g->OH, zeros, lo, hi,
                         cl);
            if (cl) {
                continue;
            }
        } else if (j_->kk) {
            j_->kk(g, x, w, b, y, r / g->OH, r % g->OH, lo, hi, zeros);
        } else if (mult) {
            dw_row_nhwc_mult(g, x, w, b, y, r / g->OH, r % g->OH);
        } else {
            dw_row_nhwc(g, x, w, b, y, r / g->OH, r % g->OH);
        }
        if (g->epi && !cpu_epi_per_channel(g->epi)) {
            /* the row of OW pixels x O channels just stored, in one call
             * (nothing here depends on the channel) */
            int64_t off = r * g->OW * g->O;
            cpu_epi_tile(g->epi, y + off, off, g->OW * g->O, 0, 1);
        } else if (g->epi) { /* pixel by pixel: channels 0 .. O - 1 */
            int64_t off = r * g->OW * g->O;
            cpu_epi_rows(g->epi, y + off, g->O, g->OW, off, g->O, 0);
        }
    }
}

const float *
conv_dw_filter(const cpu_call *k, const geom *g, int layout, const float *w,
               float **own)
{
    /* wanted: [O][KH][KW] for nchw, [KH][KW][O] for nhwc */
    int64_t s[4], t[4], d[4] = { g->O, 1, g->KH, g->KW };
    *own = NULL;
    bool direct = g->nhwc ? (layout == WNN_CONV_HWIO || layout == WNN_CONV_IHWO)
                          : (layout == WNN_CONV_OIHW || layout == WNN_CONV_OHWI);
    if (direct) {
        return w;
    }
    const float *wp = cpu_prep_get(k, 1, CPU_PREP_DEPTHWISE);
    if (wp) {
        return wp;
    }
    /* reordered once for a constant filter */
    float *wc = falloc((size_t)(g->O * g->KH * g->KW));
    if (!wc) {
        return NULL;
    }
    conv_filter_strides(layout, g, s);
    if (g->nhwc) {
        t[0] = 1, t[1] = 0, t[2] = g->KW * g->O, t[3] = g->O;
    } else {
        t[0] = g->KH * g->KW, t[1] = 0, t[2] = g->KW, t[3] = 1;
    }
    reorder(w, s, wc, t, d);
    if (!cpu_prep_keep(k, 1, CPU_PREP_DEPTHWISE, wc)) {
        *own = wc;
    }
    return wc;
}

wnn_status
conv_depthwise(const cpu_call *k, wnn_error *err, const geom *g, int layout,
               const float *x, const float *w, const float *b, float *y)
{
    float *wc;
    w = conv_dw_filter(k, g, layout, w, &wc);
    if (!w) {
        return cpu_fail(k, err, "out of memory");
    }
    double flops = 2.0 * g->N * g->O * g->OH * g->OW * g->KH * g->KW;
    /* threaded from 0.2 MFLOP, not conv.h's 2: a depthwise layer does a
     * few flops per byte, and on one thread it read the half of its input
     * that the other thread had just written from that core's cache.
     * MobileNetV2's 14 x 14 x 384 layers in the model: 36-40 -> 15-17 us,
     * 7 x 7 x 960: 17-29 -> 10-16 us, the whole model 4.09 -> 3.90 ms
     * (medians of 10 alternations) */
    int nt = flops < 2e5 ? 1 : cpu_num_threads();
    if (!g->nhwc) {
        int64_t planes = g->N * g->O, m = g->O / g->C;
        dw_pad pd;
        float *scratch = NULL;
        int64_t per = 0;
        if (dw_pad_dims(g, &pd)) {
            per = pd.PH * pd.PW + pd.OWR + 16;
            scratch = falloc((size_t)(per * nt));
        }
        const float *zeros = scratch ? NULL : cpu_zeros((size_t)g->W + 16);
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
    } else {
        int64_t rows = g->N * g->OH;
        bool mult = g->O != g->C, k3 = g->KH == 3 && g->KW == 3 && !mult;
        const float *zeros = NULL;
        int64_t lo = 0, hi = 0;
        if (k3) {
            zeros = cpu_zeros((size_t)(g->W * g->C) + 16);
            if (!zeros) {
                free(wc);
                return cpu_fail(k, err, "out of memory");
            }
            conv_dw3_cols(g, &lo, &hi); /* columns with all taps inside */
        }
        dwk_row_fn kk = k3 ? NULL : dwk_pick(g);
        if (kk) { /* the columns with all taps inside the row */
            int64_t lo2, hi2;
            valid_range(g->OW, g->sw, -g->pl, g->W, &lo, &hi);
            valid_range(g->OW, g->sw, -g->pl + (g->KW - 1) * g->dw, g->W,
                        &lo2, &hi2);
            lo = lo2 > lo ? lo2 : lo;
            hi = hi2 < hi ? hi2 : hi;
            /* the row of zeros of the border blocks (NULL: the columns
             * one by one) */
            zeros = cpu_zeros((size_t)g->C + 16);
        }
        {
            dw_nhwc_job j_ = {.g = g, .x = x, .w = w, .b = b, .y = y, .k3 = k3,
                              .mult = mult, .kk = kk, .zeros = zeros, .lo = lo,
                              .hi = hi};
            /* pairs of rows (neighbours share input rows), single rows
             * for a small image, whose few pairs would not share out
             * evenly */
            cpu_parallel_for_dynamic((int64_t)(rows), rows < 16 * nt ? 1 : 2,
                                     nt, dw_nhwc_body, &j_);
        }
    }
    free(wc);
    if (g->epi) {
        g->epi->applied = true;
    }
    return WNN_OK;
}
