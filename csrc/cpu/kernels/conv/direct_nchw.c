/* direct_nchw.c -- nchw convolutions on the direct kernels (conv.h): a
 * filter larger than 1x1 through the nhwc kernel between two transposes,
 * and the nchw 1x1 product on the micro-kernel with output channels as
 * its rows and pixels as its vectors. */
#include "conv.h"

#if HAVE_DIRECT
#include <immintrin.h>

/* dst (16 x 16, rows ldd apart) = src (16 x 16, rows lds apart)^T: four
 * rounds of swapping the off-diagonal blocks of size 8, 4, 2, 1. */
CPU_HOT_VOID(static, , transpose16,
             (const float *src, int64_t lds, float *dst, int64_t ldd),
             (src, lds, dst, ldd))
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

/* nchw through the nhwc kernel: the input transposed to nhwc, the result
 * transposed back (two passes, small next to a convolution with a filter
 * larger than 1x1). */
wnn_status
conv_direct_nchw(const cpu_call *k, wnn_error *err, const geom *g, int layout,
                 const float *x, const float *w, const float *b, float *y)
{
    int64_t nx = g->N * g->C * g->H * g->W, ny = g->N * g->O * g->OH * g->OW;
    float *xt = falloc((size_t)nx);
    float *yt = falloc((size_t)ny);
    wnn_status st = WNN_ERR;
    if (!xt || !yt) {
        st = cpu_fail(k, err, "out of memory");
    } else {
        geom gt = *g;
        gt.nhwc = true;
        gt.epi = NULL; /* offsets of the nhwc result: applied by the backend */
        transpose_images(x, g->N, g->C, g->H * g->W, xt, threads_for(nx * 8.0));
        st = winograd_usable(k, &gt, xt, w)
                 ? conv_winograd_nhwc(k, err, &gt, layout, xt, w, b, yt)
                 : conv_direct_nhwc(k, err, &gt, layout, xt, w, b, yt);
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
    const cpu_epi *epi;
    int64_t ostep;   /* output channels per task (a multiple of DIRECT_PB) */
    int64_t nob;     /* tasks per pixel block                             */
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
    float clamp[3];
    const float *res, *cl;
    bool reg = reg_epi_of(j_->epi, clamp, &res, &cl);
    for (int64_t t_ = (int64_t)b_; t_ < (int64_t)e_; t_++) {
        float *sc = scratch + tid_ * C * 64;
        int64_t t = t_ / j_->nob, ob = t_ % j_->nob;
        int64_t o_lo = ob * j_->ostep;
        int64_t o_hi = o_lo + j_->ostep < O ? o_lo + j_->ostep : O;
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
        for (int64_t o = o_lo; o < o_hi; o += DIRECT_PB) {
            int64_t pb = o_hi - o < DIRECT_PB ? o_hi - o : DIRECT_PB;
            conv_direct_fn(nv, pb)(w + o * C, C, 0, 0, 1, 1, 1, C, xb, ldx,
                               NULL, bias + o, yb + o * P, P, valid,
                               res ? res + (yb - y) + o * P : NULL, cl, 0);
            if (j_->epi && !reg) { /* the rows just stored, still in L1 */
                for (int64_t q = o; q < o + pb; q++) {
                    cpu_epi_tile(j_->epi, yb + q * P, (n * O + q) * P + p0,
                                 valid, q, 0);
                }
            }
        }
    }
}

/* nchw 1x1 convolution, strides 1, no padding, groups 1: per image the
 * product Y (O x P) = W (O x C) X (C x P) + bias, P = H W, with the
 * micro-kernel above (6 output channels x 64 pixels in registers).  w is
 * O x C; the last, partial block of pixels is copied to zero-padded scratch
 * so that no load reads past the input. */
wnn_status
conv_direct_1x1_nchw(const cpu_call *k, wnn_error *err, const geom *g,
                     int layout, const float *x, const float *w,
                     const float *b, float *y)
{
    const int64_t C = g->C, O = g->O, P = g->H * g->W;
    const bool o_by_c = layout == WNN_CONV_OIHW || layout == WNN_CONV_OHWI;
    const float *wp = o_by_c ? NULL : cpu_prep_get(k, 1, CPU_PREP_1X1);
    float *wc = o_by_c || wp ? NULL : falloc((size_t)(O * C));
    float *zb = b ? NULL : fcalloc((size_t)O + 16);
    int64_t nblk = (P + 63) / 64, tasks = g->N * nblk;
    double flops = 2.0 * g->N * O * P * C;
    int nt = threads_for(flops);
    /* Few pixel blocks (small images: 7 x 7 is one block) would leave
     * threads idle: cut the output channels too, so that there are about
     * 4 tasks per thread (each a multiple of the micro-kernel's rows). */
    int64_t nob = 1, ostep = O;
    if (nt > 1 && tasks < 4 * (int64_t)nt) {
        int64_t want = (4 * (int64_t)nt + tasks - 1) / tasks;
        int64_t rows = (O + DIRECT_PB - 1) / DIRECT_PB;
        nob = want < rows ? want : rows;
        ostep = (rows + nob - 1) / nob * DIRECT_PB;
        nob = (O + ostep - 1) / ostep;
    }
    tasks *= nob;
    float *scratch = falloc((size_t)(C * 64 * nt));
    if ((!o_by_c && !wp && !wc) || (!b && !zb) || !scratch) {
        free(wc);
        free(zb);
        free(scratch);
        return cpu_fail(k, err, "out of memory");
    }
    if (wp) {
        w = wp;
    } else if (wc) { /* [C][O] -> [O][C], once for a constant filter */
        for (int64_t o = 0; o < O; o++) {
            for (int64_t c = 0; c < C; c++) {
                wc[o * C + c] = w[c * O + o];
            }
        }
        w = wc;
        if (cpu_prep_keep(k, 1, CPU_PREP_1X1, wc)) {
            wc = NULL;
        }
    }
    const float *bias = b ? b : zb;
    {
        d1nchw_job j_ = {.scratch = scratch, .C = C, .nblk = nblk, .P = P,
                         .x = x, .O = O, .w = w, .bias = bias, .y = y,
                         .epi = g->epi, .ostep = ostep, .nob = nob};
        cpu_parallel_for_dynamic((int64_t)(tasks), 1, nt, d1nchw_body, &j_);
    }
    if (g->epi) {
        g->epi->applied = true;
    }
    free(wc);
    free(zb);
    free(scratch);
    return WNN_OK;
}
#endif
