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
 * waited on each one's latency).  Stride 1 across with 5 or 7 taps a row:
 * sliding windows instead (slide5, slide7 below), borders included.  Every
 * output is bias + the taps in (kh, kw) order, in the kernel's rows and
 * columns alike. */

#define DWK_P 8
#define DWK_TAPS 49

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
    /* (pairs: one vector's 25 multiply-adds are one chain of latencies) */
    for (; c0 + 2 * DWK_VW <= CV; c0 += 2 * DWK_VW) {
        DWK_COLUMN_BODY(2);
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

/* up to DWK_P columns ow .. ow + np - 1 of row oh, taps outside the row
 * included: every (kh, kw, column) reads through a table of pointers, a
 * row of zeros (C floats) for a tap outside the row and for the columns
 * past np -- block's loads and sums for the border columns and the rows
 * too narrow for a block (EfficientNet's 7 x 7 x 1152 5x5 layers: 2 loads
 * a multiply-add one column at a time, 9 + 8 pointer loads for 8 here).
 * A tap outside adds 0 * w, as the nchw kernel's zero-padded copy does.
 * tab holds (taps rows) x KW x DWK_P pointers. */
/* the sums of tblock, P (8 or 4, a constant where inlined) columns a
 * vector of channels at a time */
DWK_TARGET static inline __attribute__((always_inline)) void
DWK_NAME(tsums)(int64_t C, int64_t CV, int64_t taps, const float *wr,
                const float *b, const float **tab, float *yo, int64_t np,
                const int P)
{
    for (int64_t c0 = 0; c0 < CV; c0 += DWK_VW) {
        const DWK_VT bv = b ? *(const DWK_VT *)(b + c0) : (DWK_VT){ 0 };
        DWK_VT a[DWK_P];
#pragma GCC unroll 8
        for (int p = 0; p < P; p++) {
            a[p] = bv;
        }
        const float **t = tab;
        for (int64_t i = 0; i < taps; i++, t += P) {
            /* the taps in (kh, kw) order: kh_lo's row of KW, then the next */
            const DWK_VT w = *(const DWK_VT *)(wr + i * C + c0);
#pragma GCC unroll 8
            for (int p = 0; p < P; p++) {
                a[p] += *(const DWK_VT *)(t[p] + c0) * w;
            }
        }
#pragma GCC unroll 8
        for (int p = 0; p < P; p++) {
            if (p < np) {
                *(DWK_VT *)(yo + p * C + c0) = a[p];
            }
        }
    }
}

DWK_TARGET static void
DWK_NAME(tblock)(const geom *g, const float *xn, const float *wk,
                 const float *b, float *yo, int64_t oh, int64_t ow,
                 int64_t np, const float *zeros, const float **tab)
{
    const int64_t C = g->C, W = g->W, KW = g->KW;
    const int64_t CV = C / DWK_VW * DWK_VW;
    /* 4 columns or fewer: blocks of 4 slots (half the loads of 8) */
    const int P = np <= 4 ? 4 : DWK_P;
    int64_t kh_lo, kh_hi;
    valid_range(g->KH, g->dh, oh * g->sh - g->pt, g->H, &kh_lo, &kh_hi);
    const int64_t ih0 = oh * g->sh - g->pt, iw0 = ow * g->sw - g->pl;
    const float **t = tab;
    for (int64_t kh = kh_lo; kh < kh_hi; kh++) {
        const float *xr = xn + (ih0 + kh * g->dh) * W * C;
        for (int64_t kw = 0; kw < KW; kw++) {
            for (int64_t p = 0; p < P; p++) {
                int64_t iw = iw0 + p * g->sw + kw * g->dw;
                *t++ = p < np && iw >= 0 && iw < W ? xr + iw * C : zeros;
            }
        }
    }
    const int64_t taps = (kh_hi - kh_lo) * KW;
    const float *wr = wk + kh_lo * KW * C;
    if (P == 4) {
        DWK_NAME(tsums)(C, CV, taps, wr, b, tab, yo, np, 4);
    } else {
        DWK_NAME(tsums)(C, CV, taps, wr, b, tab, yo, np, DWK_P);
    }
}

/* columns [c0, c1) of row oh, none of them in an interior block: blocks
 * through the pointer table for a run of 3 or more (a row too narrow for
 * an interior block: 7 x 7; 3 border columns in a block of 4 slots), else
 * one at a time (1 or 2 border columns) */
DWK_TARGET static void
DWK_NAME(edge)(const geom *g, const float *xn, const float *wk,
               const float *b, float *yr, int64_t oh, int64_t c0, int64_t c1,
               const float *zeros)
{
    const int64_t C = g->C, CV = C / DWK_VW * DWK_VW;
    const float *tab[DWK_TAPS * DWK_P];
    if (zeros && CV > 0 && g->KH * g->KW <= DWK_TAPS && c1 - c0 >= 3) {
        for (int64_t ow = c0; ow < c1; ow += DWK_P) {
            const int64_t np = c1 - ow < DWK_P ? c1 - ow : DWK_P;
            DWK_NAME(tblock)(g, xn, wk, b, yr + ow * C, oh, ow, np, zeros,
                             tab);
            for (int64_t p = 0; p < np && CV < C; p++) {
                DWK_NAME(column)(g, xn, wk, b, yr + (ow + p) * C, oh, ow + p,
                                 CV);
            }
        }
        return;
    }
    for (int64_t ow = c0; ow < c1; ow++) {
        DWK_NAME(column)(g, xn, wk, b, yr + ow * C, oh, ow, 0);
    }
}

/* Stride 1 and dilation 1 across, KW = KWC (5 or 7), at most DWK_SLIDE_ROWS
 * tap rows (any stride and dilation down): DWK_SP columns ow .. ow +
 * DWK_SP - 1 of row oh (np of them stored), borders included.  Per tap
 * row the window of DWK_SP + KWC - 1 input columns is loaded once (a
 * column of zeros for one outside the row) and serves all KWC x DWK_SP
 * multiply-adds: the interior block loaded every
 * (column, kw) pair again, 9 loads for 8 multiply-adds, and a row of
 * ConvNeXt's 7x7 (56 x 56 x 96) ran whole through the pointer table of
 * tblock (2 loads and a pointer a multiply-add).  The sums: bias + the taps
 * in (kh, kw) order, a tap left or right of the row adding 0 * w (as
 * tblock; tap rows outside the image are skipped). */
#define DWK_SLIDE_ROWS 7
#define DWK_SLIDE(KWC)                                                        \
    DWK_TARGET static void DWK_NAME(slide##KWC)(                              \
        const geom *g, const float *xn, const float *wk, const float *b,     \
        float *yo, int64_t oh, int64_t ow, int64_t np, const float *zeros)   \
    {                                                                         \
        enum { Q = DWK_SP + KWC - 1 };                                        \
        const int64_t C = g->C, W = g->W, CV = C / DWK_VW * DWK_VW;           \
        int64_t kh_lo, kh_hi;                                                 \
        const int64_t ih0 = oh * g->sh - g->pt;                               \
        valid_range(g->KH, g->dh, ih0, g->H, &kh_lo, &kh_hi);                 \
        const int64_t nr = kh_hi - kh_lo, iw0 = ow - g->pl;                   \
        const float *tab[DWK_SLIDE_ROWS][Q];                                  \
        for (int64_t r = 0; r < nr; r++) {                                    \
            const float *xr = xn + (ih0 + (kh_lo + r) * g->dh) * W * C;       \
            for (int q = 0; q < Q; q++) {                                     \
                const int64_t iw = iw0 + q;                                   \
                tab[r][q] = iw >= 0 && iw < W ? xr + iw * C : zeros;          \
            }                                                                 \
        }                                                                     \
        const float *w0 = wk + kh_lo * KWC * C;                               \
        for (int64_t c0 = 0; c0 < CV; c0 += DWK_VW) {                         \
            const DWK_VT bv = b ? *(const DWK_VT *)(b + c0) : (DWK_VT){ 0 };  \
            DWK_VT a[DWK_SP];                                                 \
            _Pragma("GCC unroll 8") for (int p = 0; p < DWK_SP; p++) a[p] = bv; \
            for (int64_t r = 0; r < nr; r++) {                                \
                const float *wr = w0 + r * KWC * C + c0;                      \
                DWK_VT xw[Q];                                                 \
                _Pragma("GCC unroll 16") for (int q = 0; q < Q; q++)          \
                    xw[q] = *(const DWK_VT *)(tab[r][q] + c0);                \
                _Pragma("GCC unroll 8") for (int kw = 0; kw < KWC; kw++)      \
                {                                                             \
                    const DWK_VT w = *(const DWK_VT *)(wr + kw * C);          \
                    _Pragma("GCC unroll 8") for (int p = 0; p < DWK_SP; p++)  \
                        a[p] += xw[p + kw] * w;                               \
                }                                                             \
            }                                                                 \
            _Pragma("GCC unroll 8") for (int p = 0; p < DWK_SP; p++)          \
            {                                                                 \
                if (p < np) {                                                 \
                    *(DWK_VT *)(yo + p * C + c0) = a[p];                      \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }
DWK_SLIDE(5)
DWK_SLIDE(7)

/* output row oh of image n: the interior columns from lo in blocks of
 * DWK_P (every tap inside the row), the columns left and right of them by
 * edge */
DWK_TARGET static void
DWK_NAME(row)(const geom *g, const float *x, const float *wk, const float *b,
              float *y, int64_t n, int64_t oh, int64_t lo, int64_t hi,
              const float *zeros)
{
    const int64_t C = g->C, OW = g->OW;
    const int64_t CV = C / DWK_VW * DWK_VW;
    const float *xn = x + n * g->H * g->W * C;
    float *yr = y + (n * g->OH + oh) * OW * C;
    if (zeros && CV > 0 && g->sw == 1 && g->dw == 1 &&
        (g->KW == 5 || g->KW == 7) && g->KH <= DWK_SLIDE_ROWS) {
        for (int64_t ow = 0; ow < OW; ow += DWK_SP) {
            const int64_t np = OW - ow < DWK_SP ? OW - ow : DWK_SP;
            if (g->KW == 7) {
                DWK_NAME(slide7)(g, xn, wk, b, yr + ow * C, oh, ow, np, zeros);
            } else {
                DWK_NAME(slide5)(g, xn, wk, b, yr + ow * C, oh, ow, np, zeros);
            }
            for (int64_t p = 0; p < np && CV < C; p++) {
                DWK_NAME(column)(g, xn, wk, b, yr + (ow + p) * C, oh, ow + p, CV);
            }
        }
        return;
    }
    int64_t nb = hi > lo && CV > 0 ? (hi - lo) / DWK_P : 0;
    /* the whole row in table blocks where that costs less than the
     * interior blocks and the columns left and right of them one at a time
     * (in blocks of 8 columns: a column alone 0.32, a table block 1.13;
     * 5x5 filters on one Zen 4 core: 14 x 14 x 672 157 -> 136 us, 28 x 28
     * x 240 stays as it is) */
    const int64_t side = lo + (OW - lo - nb * DWK_P);
    if (nb > 0 && zeros && g->KH * g->KW <= DWK_TAPS &&
        113 * ((OW + DWK_P - 1) / DWK_P) < 32 * side + 100 * nb) {
        nb = 0;
    }
    if (nb == 0) {
        DWK_NAME(edge)(g, xn, wk, b, yr, oh, 0, OW, zeros);
        return;
    }
    DWK_NAME(edge)(g, xn, wk, b, yr, oh, 0, lo, zeros);
    for (int64_t ow = lo; ow < lo + nb * DWK_P; ow += DWK_P) {
        DWK_NAME(block)(g, xn, wk, b, yr + ow * C, oh, ow);
        /* the block's last C % VW channels */
        for (int64_t p = 0; p < DWK_P && CV < C; p++) {
            DWK_NAME(column)(g, xn, wk, b, yr + (ow + p) * C, oh, ow + p, CV);
        }
    }
    DWK_NAME(edge)(g, xn, wk, b, yr, oh, lo + nb * DWK_P, OW, zeros);
}

#undef DWK_COLUMN_BODY
#undef DWK_P
#undef DWK_TAPS
#undef DWK_SLIDE
#undef DWK_SLIDE_ROWS
