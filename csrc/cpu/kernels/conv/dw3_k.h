/* dw3_k.h -- the interior and border columns of the nhwc 3x3 depthwise
 * row (conv_dw3_span, depthwise.c) with intrinsics, included by depthwise.c
 * once per vector width:
 *
 *   DW3_VT, DW3_VW  the vector type and its width in floats
 *   DW3_TARGET      the function attribute of its ISA level
 *   DW3_NAME(s)     the name of function s at this width
 *   DW3_LOAD, DW3_FMA, DW3_MUL, DW3_ADD, DW3_ZERO: the operations;
 *   DW3_STORE(yo, v, cl): v clamped in registers (cl: reg_epi_of's, NULL:
 *   none; max then min, a NaN kept) and stored at yo
 *
 * The same products and sums in the same order at every width, so the
 * AVX2 rows equal the AVX-512 ones bit for bit.  The parameters are
 * undefined at the end. */

/* one interior column: the taps of the three rows (left, middle, right)
 * times the weights, bias first, row sums added as (a + (b + c)), the
 * clamp in registers, stored at yo */
DW3_TARGET static inline __attribute__((always_inline)) void
DW3_NAME(column)(DW3_VT x00, DW3_VT x01, DW3_VT x02, DW3_VT x10, DW3_VT x11,
           DW3_VT x12, DW3_VT x20, DW3_VT x21, DW3_VT x22, const DW3_VT w[9],
           DW3_VT bv, const float *cl, float *yo)
{
    DW3_VT a = DW3_FMA(x00, w[0], bv);
    a = DW3_FMA(x01, w[1], a);
    a = DW3_FMA(x02, w[2], a);
    DW3_VT bb = DW3_MUL(x10, w[3]);
    bb = DW3_FMA(x11, w[4], bb);
    bb = DW3_FMA(x12, w[5], bb);
    DW3_VT cc = DW3_MUL(x20, w[6]);
    cc = DW3_FMA(x21, w[7], cc);
    cc = DW3_FMA(x22, w[8], cc);
    DW3_VT v = DW3_ADD(a, DW3_ADD(bb, cc));
    DW3_STORE(yo, v, cl);
}

/* a border column ow: the taps inside the row only */
DW3_TARGET static inline __attribute__((always_inline)) void
DW3_NAME(border)(const float *r0, const float *r1, const float *r2,
                  int64_t C, int64_t W, int64_t sw, int64_t pl, int64_t dw,
                  const DW3_VT w[9], DW3_VT bv, float *yo, int64_t ow,
                  const float *cl)
{
    DW3_VT a = bv, bb = DW3_ZERO, cc = DW3_ZERO;
    for (int kw = 0; kw < 3; kw++) {
        int64_t iw = ow * sw - pl + kw * dw;
        if (iw < 0 || iw >= W) {
            continue;
        }
        a = DW3_FMA(DW3_LOAD(r0 + iw * C), w[kw], a);
        bb = DW3_FMA(DW3_LOAD(r1 + iw * C), w[3 + kw], bb);
        cc = DW3_FMA(DW3_LOAD(r2 + iw * C), w[6 + kw], cc);
    }
    DW3_VT v = DW3_ADD(a, DW3_ADD(bb, cc));
    DW3_STORE(yo, v, cl);
}

/* the interior columns [lo, hi) and the border ones, DW3_VW channels at
 * a time (the first CV, a multiple of DW3_VW) */
DW3_TARGET static void
DW3_NAME(cols)(const float *const r[3], int64_t C, int64_t CV, int64_t sw,
                int64_t pl, int64_t dw, int64_t W, int64_t a0, int64_t e0,
                const float *wk, const float *b, float *yr, int64_t lo,
                int64_t hi, const float *cl)
{
    /* columns [a0, e0) (column ow at yr + (ow - a0) C); the interior part */
    lo = lo < a0 ? a0 : lo;
    hi = hi > e0 ? e0 : hi;
    const bool unit = sw == 1 && dw == 1;
    const int64_t s1 = dw * C, s2 = 2 * dw * C;
    for (int64_t c0 = 0; c0 < CV; c0 += DW3_VW) {
    DW3_VT w[9];
    for (int t = 0; t < 9; t++) {
        w[t] = DW3_LOAD(wk + t * C + c0);
    }
    const DW3_VT bv = b ? DW3_LOAD(b + c0) : DW3_ZERO;
    const float *r0 = r[0] + c0, *r1 = r[1] + c0, *r2 = r[2] + c0;
    /* the border columns, with their taps inside the row (the portable
     * loop took 15 % of a 14 x 14 x 384 layer's time for its 2 columns of
     * 14) */
    for (int64_t ow = a0; ow < e0; ow++) {
        if (ow == lo && hi > lo) {
            ow = hi - 1;
            continue;
        }
        DW3_NAME(border)(r0, r1, r2, C, W, sw, pl, dw, w, bv,
                          yr + (ow - a0) * C + c0, ow, cl);
    }
    /* the interior columns: at stride 1 the next column's left and
     * middle taps are this column's middle and right ones, kept in
     * registers (3 loads a column instead of 9), at stride 2 its left ones
     * this column's right ones (6 loads) -- the same products and sums */
    float *yc = yr + c0; /* column ow at yc + (ow - a0) C */
    if (unit && lo < hi) {
        int64_t i = (lo - pl) * C;
        DW3_VT l0 = DW3_LOAD(r0 + i), l1 = DW3_LOAD(r1 + i),
               l2 = DW3_LOAD(r2 + i);
        DW3_VT m0 = DW3_LOAD(r0 + i + C), m1 = DW3_LOAD(r1 + i + C),
               m2 = DW3_LOAD(r2 + i + C);
        for (int64_t ow = lo; ow < hi; ow++, i += C) {
            const DW3_VT n0 = DW3_LOAD(r0 + i + 2 * C),
                         n1 = DW3_LOAD(r1 + i + 2 * C),
                         n2 = DW3_LOAD(r2 + i + 2 * C);
            DW3_NAME(column)(l0, m0, n0, l1, m1, n1, l2, m2, n2, w, bv, cl,
                       yc + (ow - a0) * C);
            l0 = m0, l1 = m1, l2 = m2;
            m0 = n0, m1 = n1, m2 = n2;
        }
    } else if (sw == 2 && dw == 1 && lo < hi) {
        int64_t i = (lo * 2 - pl) * C;
        DW3_VT l0 = DW3_LOAD(r0 + i), l1 = DW3_LOAD(r1 + i),
               l2 = DW3_LOAD(r2 + i);
        for (int64_t ow = lo; ow < hi; ow++, i += 2 * C) {
            const DW3_VT n0 = DW3_LOAD(r0 + i + 2 * C),
                         n1 = DW3_LOAD(r1 + i + 2 * C),
                         n2 = DW3_LOAD(r2 + i + 2 * C);
            DW3_NAME(column)(l0, DW3_LOAD(r0 + i + C), n0, l1,
                       DW3_LOAD(r1 + i + C), n1, l2,
                       DW3_LOAD(r2 + i + C), n2, w, bv, cl,
                       yc + (ow - a0) * C);
            l0 = n0, l1 = n1, l2 = n2;
        }
    } else {
        for (int64_t ow = lo; ow < hi; ow++) {
            const int64_t i = (ow * sw - pl) * C;
            DW3_NAME(column)(DW3_LOAD(r0 + i), DW3_LOAD(r0 + i + s1),
                       DW3_LOAD(r0 + i + s2), DW3_LOAD(r1 + i),
                       DW3_LOAD(r1 + i + s1), DW3_LOAD(r1 + i + s2),
                       DW3_LOAD(r2 + i), DW3_LOAD(r2 + i + s1),
                       DW3_LOAD(r2 + i + s2), w, bv, cl,
                       yc + (ow - a0) * C);
        }
    }
    }
}

#undef DW3_VT
#undef DW3_VW
#undef DW3_TARGET
#undef DW3_NAME
#undef DW3_LOAD
#undef DW3_FMA
#undef DW3_MUL
#undef DW3_ADD
#undef DW3_ZERO
#undef DW3_STORE
