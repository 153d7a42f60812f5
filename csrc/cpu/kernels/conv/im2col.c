/* im2col.c -- conv2d's general path: im2col of bands of output rows, BLIS products (conv.h has the overview). */
#include "conv.h"

/* ---- im2col --------------------------------------------------------------- */

/* nchw: row kidx = (ci, kh, kw) of the column matrix for output rows
 * [oh0, oh1) of image n, group gi: P = (oh1 - oh0) * OW columns. */
CPU_HOT_VOID(static, , im2col_nchw_row,
             (const geom *g, const float *x, int64_t n, int64_t gi,
              int64_t kidx, int64_t oh0, int64_t oh1, float *dst),
             (g, x, n, gi, kidx, oh0, oh1, dst))
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
CPU_HOT_VOID(static, , bias_rows,
             (float *y, int64_t ld, int64_t m, int64_t len, const float *b),
             (y, ld, m, len, b))
{
    for (int64_t o = 0; o < m; o++) {
        float bv = b[o], *r = y + o * ld;
        for (int64_t p = 0; p < len; p++) {
            r[p] += bv;
        }
    }
}

/* Adds the bias to an nhwc band: rows of m channels, ld apart. */
CPU_HOT_VOID(static, , bias_cols,
             (float *y, int64_t ld, int64_t rows, int64_t m, const float *b),
             (y, ld, rows, m, b))
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
    int64_t n0;
    int64_t gi;
    float *cols;
} i2c_nhwc_job;

static void
i2c_nhwc_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const i2c_nhwc_job *j_ = p_;
    const geom *g = j_->g;
    const int64_t K = g->KH * g->KW * g->Cg;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) { /* row r of the run */
        im2col_nhwc_row(g, j_->x, j_->n0 + r / g->OH, j_->gi, r % g->OH,
                        j_->cols + r * g->OW * K);
    }
}

void
conv_im2col_nhwc(const geom *g, const float *x, int64_t n0, int64_t nimg,
                 int64_t gi, float *cols, int nt)
{
    i2c_nhwc_job j_ = {.g = g, .x = x, .n0 = n0, .gi = gi, .cols = cols};
    cpu_parallel_for(nimg * g->OH, nt, i2c_nhwc_body, &j_);
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

wnn_status
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
    const float *wp = direct ? NULL : cpu_prep_get(k, 1, CPU_PREP_GEMM);
    if (wp) {
        w = wp;
    } else if (!direct) { /* reordered once for a constant filter */
        wc = falloc((size_t)(g->O * K));
        if (!wc) {
            return cpu_fail(k, err, "out of memory");
        }
        conv_filter_strides(layout, g, s);
        reorder(w, s, wc, t, d);
        w = wc;
        if (cpu_prep_keep(k, 1, CPU_PREP_GEMM, wc)) {
            wc = NULL;
        }
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
        cols = falloc((size_t)(col_floats * nbuf));
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
                    conv_im2col_nhwc(g, x, n, 1, gi, cols, nt);
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
