/* depthwise_k.h -- the nhwc depthwise kernel for any filter size, stride and
 * dilation (multiplier 1), included by depthwise.c once per vector width:
 *
 *   DWK_VT      the vector type (VW floats, loads and stores unaligned)
 *   DWK_VW      its width in floats
 *   DWK_TARGET  the function attribute that compiles it for its ISA level
 *   DWK_NAME(s) the name of the function s at this width
 *
 * One output row at a time, VW channels at a time.  The columns whose taps
 * all fall inside the row run DWK_P at once: each tap's weight vector is
 * loaded once for the DWK_P columns' fused multiply-adds, whose sums stay in
 * registers (the portable kernel kept 64 channels of sums in memory and
 * took 3-4 times ORT's time on EfficientNet's 5x5 layers).  The other
 * columns run one at a time with only their taps inside the row, four
 * vectors of channels at once (independent sums: a 7 x 7 image has few
 * interior columns, and one chain of 25 dependent multiply-adds a vector
 * waited on each one's latency).  Every output is bias + the taps in
 * (kh, kw) order, in the kernel's rows and columns alike. */

#define DWK_P 8

/* one column ow, channels [c0, c0 + NV * VW): the taps inside the image */
#define DWK_COLUMN_BODY(NV)                                                   \
    do {                                                                      \
        DWK_VT acc[NV];                                                       \
        for (int v = 0; v < NV; v++) {                                        \
            acc[v] = b ? *(const DWK_VT *)(b + c0 + v * DWK_VW)               \
                       : (DWK_VT){ 0 };                                       \
        }                                                                     \
        for (int64_t kh = kh_lo; kh < kh_hi; kh++) {                          \
            const float *xr = xn + (ih0 + kh * g->dh) * W * C + c0;           \
            const float *wr = wk + kh * KW * C + c0;                          \
            for (int64_t kw = kw_lo; kw < kw_hi; kw++) {                      \
                const float *xp = xr + (iw0 + kw * g->dw) * C;                \
                const float *wp = wr + kw * C;                                \
                for (int v = 0; v < NV; v++) {                                \
                    acc[v] += *(const DWK_VT *)(xp + v * DWK_VW) *            \
                              *(const DWK_VT *)(wp + v * DWK_VW);             \
                }                                                             \
            }                                                                 \
        }                                                                     \
        for (int v = 0; v < NV; v++) {                                        \
            *(DWK_VT *)(yo + c0 + v * DWK_VW) = acc[v];                       \
        }                                                                     \
    } while (0)

/* output column ow of row oh (image n), channels [cs, C), taps checked */
DWK_TARGET static void
DWK_NAME(column)(const geom *g, const float *xn, const float *wk,
                 const float *b, float *yo, int64_t oh, int64_t ow,
                 int64_t cs)
{
    const int64_t C = g->C, W = g->W, KW = g->KW;
    const int64_t CV = C / DWK_VW * DWK_VW;
    int64_t kh_lo, kh_hi, kw_lo, kw_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, g->H, &kh_lo, &kh_hi);
    valid_range(KW, g->dw, ow * g->sw - g->pl, W, &kw_lo, &kw_hi);
    const int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
    int64_t c0 = cs;
    for (; c0 + 4 * DWK_VW <= CV; c0 += 4 * DWK_VW) {
        DWK_COLUMN_BODY(4);
    }
    for (; c0 < CV; c0 += DWK_VW) {
        DWK_COLUMN_BODY(1);
    }
    /* the last C % VW channels */
    for (int64_t c = c0 > CV ? c0 : CV; c < C; c++) {
        float s = b ? b[c] : 0.0f;
        for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
            for (int64_t kw = kw_lo; kw < kw_hi; kw++) {
                s += xn[((ih0 + kh * g->dh) * W + iw0 + kw * g->dw) * C + c] *
                     wk[(kh * KW + kw) * C + c];
            }
        }
        yo[c] = s;
    }
}

/* DWK_P interior columns ow .. ow + DWK_P - 1 of row oh, the first CV
 * channels (every tap inside the row; rows outside the image skipped) */
DWK_TARGET static void
DWK_NAME(block)(const geom *g, const float *xn, const float *wk,
                const float *b, float *yo, int64_t oh, int64_t ow)
{
    const int64_t C = g->C, W = g->W, KW = g->KW, xs = g->sw * C;
    const int64_t CV = C / DWK_VW * DWK_VW;
    int64_t kh_lo, kh_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, g->H, &kh_lo, &kh_hi);
    const int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
    for (int64_t c0 = 0; c0 < CV; c0 += DWK_VW) {
        const DWK_VT bv = b ? *(const DWK_VT *)(b + c0) : (DWK_VT){ 0 };
        DWK_VT a0 = bv, a1 = bv, a2 = bv, a3 = bv, a4 = bv, a5 = bv, a6 = bv,
               a7 = bv;
        for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
            const float *xr = xn + ((ih0 + kh * g->dh) * W + iw0) * C + c0;
            const float *wr = wk + kh * KW * C + c0;
            for (int64_t kw = 0; kw < KW; kw++) {
                const float *xp = xr + kw * g->dw * C;
                const DWK_VT w = *(const DWK_VT *)(wr + kw * C);
#define X(p) (*(const DWK_VT *)(xp + (p) * xs))
                a0 += X(0) * w, a1 += X(1) * w, a2 += X(2) * w;
                a3 += X(3) * w, a4 += X(4) * w, a5 += X(5) * w;
                a6 += X(6) * w, a7 += X(7) * w;
#undef X
            }
        }
        float *y = yo + c0;
        *(DWK_VT *)(y) = a0, *(DWK_VT *)(y + C) = a1;
        *(DWK_VT *)(y + 2 * C) = a2, *(DWK_VT *)(y + 3 * C) = a3;
        *(DWK_VT *)(y + 4 * C) = a4, *(DWK_VT *)(y + 5 * C) = a5;
        *(DWK_VT *)(y + 6 * C) = a6, *(DWK_VT *)(y + 7 * C) = a7;
    }
}

/* output row oh of image n: interior columns [lo, hi) in blocks of DWK_P,
 * the rest one by one */
DWK_TARGET static void
DWK_NAME(row)(const geom *g, const float *x, const float *wk, const float *b,
              float *y, int64_t n, int64_t oh, int64_t lo, int64_t hi)
{
    const int64_t C = g->C, OW = g->OW;
    const int64_t CV = C / DWK_VW * DWK_VW;
    const float *xn = x + n * g->H * g->W * C;
    float *yr = y + (n * g->OH + oh) * OW * C;
    for (int64_t ow = 0; ow < OW;) {
        if (ow >= lo && ow + DWK_P <= hi && CV > 0) {
            DWK_NAME(block)(g, xn, wk, b, yr + ow * C, oh, ow);
            /* the block's last C % VW channels */
            for (int64_t p = 0; p < DWK_P && CV < C; p++) {
                DWK_NAME(column)(g, xn, wk, b, yr + (ow + p) * C, oh, ow + p,
                                 CV);
            }
            ow += DWK_P;
        } else {
            DWK_NAME(column)(g, xn, wk, b, yr + ow * C, oh, ow, 0);
            ow++;
        }
    }
}

#undef DWK_COLUMN_BODY
#undef DWK_P
