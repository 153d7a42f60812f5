/* normalization.c -- CPU kernels of batchNormalization, instanceNormalization,
 * layerNormalization and softmax.
 *
 * float16 operands are converted to float32 copies first and the result is
 * rounded back at the end; everything below works on float32 arrays.
 *
 * Statistics (mean and variance of instance / layer normalization) are
 * computed in one pass in double precision, shifted by the first element of
 * the group (sum of d and d^2 with d = x - x0), which keeps the variance
 * accurate when the mean is large against the spread; the variance is the
 * population variance (divided by the group size), as in the spec's
 * emulation.  The normalized value (x - mean) * rstd * scale + bias is also
 * computed in double and rounded once: two passes over the group (statistics,
 * then the write).  Softmax subtracts the maximum of each group before exp
 * (the spec's emulation; exp is vmath.h's vm_exp, every input range, so no
 * scalar fix-up), sums in double and multiplies by the reciprocal of the sum.
 * A contiguous group that fits in cache takes the maximum, then exp and the
 * sum in one pass writing y, then y *= 1 / sum; a longer one (more than
 * SM_PART elements) is split into parts over the threads: each part's
 * maximum and sum (re-read from L2), combined, then one write pass: x read
 * twice from memory, y written once.
 *
 * Layouts handled without gathering:
 *   rows     the reduced elements of a group are one contiguous run (layer
 *            normalization over trailing axes, instance normalization nchw,
 *            softmax over the last axis);
 *   columns  the reduced block is followed by kept dimensions, so a group is
 *            a column of a [R, W] block (instance normalization nhwc, layer
 *            normalization over leading or middle axes, softmax over any other
 *            axis): statistics are accumulated for up to CW columns at once,
 *            vectorised across the columns.
 * Any other set of layer-normalization axes (several separate blocks, or
 * axes whose order differs from memory order when scale / bias are given) is
 * gathered per group into a contiguous buffer in the order of `axes`, which
 * is also the order of the scale / bias elements.
 *
 * Work is split over groups (or column blocks) on the thread pool above
 * CPU_PARALLEL_MIN elements, in dynamic chunks of about CHUNK_ELEMS elements.
 * The hot loops are compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA)
 * and baseline x86-64, picked at load time by ISA level (so AMD CPUs get the
 * AVX-512 / AVX2 clones too).
 *
 * Special values follow the float64 reference formulas: a NaN or infinity in
 * a group makes its statistics NaN and so every output of the group NaN;
 * a negative batchNormalization variance below -epsilon gives NaN; softmax
 * of a group holding NaN or +Inf, or only -Inf, is NaN. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../cpu.h"
#include "../elementwise/vmath.h"
#include "../elementwise/vmath256.h"
#include "../elementwise/vmath512.h"


#define CW 64   /* columns per work item in the column layouts */

static int
threads_for(uint64_t work)
{
    return work >= CPU_PARALLEL_MIN ? cpu_num_threads() : 1;
}

/* Work items per dynamic-schedule chunk, for items of `size` elements:
 * about CHUNK_ELEMS elements per chunk.  Dynamic chunks keep all threads
 * busy when one of them is slowed down (cores shared with other work). */
#define CHUNK_ELEMS 16384
static int64_t
chunk_of(int64_t size)
{
    int64_t c = CHUNK_ELEMS / (size > 0 ? size : 1);
    return c < 1 ? 1 : c;
}

/* ---- float32 views of the operands -------------------------------------- */
typedef struct f32buf {
    const float *p;
    float *owned;
} f32buf;

/* float32 data of node input i: the input itself, or a float32 copy of a
 * float16 input (false when out of memory). */
static bool
input_f32(const cpu_call *k, uint32_t i, f32buf *b)
{
    const wnn_desc *d = &k->in_desc[i];
    b->owned = NULL;
    if (d->dtype == WNN_FLOAT32) {
        b->p = k->in[i];
        return true;
    }
    b->owned = cpu_to_f32(k->in[i], d->dtype, wnn_desc_elements(d));
    b->p = b->owned;
    return b->owned != NULL;
}

/* Optional operand (options field value: node input index + 1, 0 absent). */
static bool
option_f32(const cpu_call *k, uint32_t field, f32buf *b)
{
    if (!field) {
        b->p = NULL;
        b->owned = NULL;
        return true;
    }
    return input_f32(k, field - 1, b);
}

/* Where the float32 result goes: the output itself, or a buffer for float16. */
static float *
output_f32(const cpu_call *k, float **owned)
{
    *owned = NULL;
    if (k->out_desc[0].dtype == WNN_FLOAT32) {
        return k->out[0];
    }
    *owned = malloc(sizeof(float) * (size_t)wnn_desc_elements(&k->out_desc[0]));
    return *owned;
}

static void
output_done(const cpu_call *k, float *owned)
{
    if (owned) {
        cpu_from_f32(owned, k->out[0], k->out_desc[0].dtype,
                     wnn_desc_elements(&k->out_desc[0]));
        free(owned);
    }
}

static wnn_status
oom(const cpu_call *k, wnn_error *err)
{
    return cpu_fail(k, err, "out of memory");
}

/* ---- statistics and the normalization of one contiguous group ----------- */
/* mean and population variance of x[0..n), shifted one-pass sums in double */
CPU_HOT_VOID(static, , row_stats,
             (const float *x, int64_t n, double *mean, double *var),
             (x, n, mean, var))
{
    double k0 = x[0], s1 = 0.0, s2 = 0.0;
#pragma omp simd reduction(+ : s1, s2)
    for (int64_t i = 0; i < n; i++) {
        double d = (double)x[i] - k0;
        s1 += d;
        s2 += d * d;
    }
    double m = s1 / (double)n;
    double v = s2 / (double)n - m * m;
    *mean = k0 + m;
    *var = v < 0.0 ? 0.0 : v; /* rounding; NaN stays NaN */
}

/* y = (x - mean) * a + b */
CPU_HOT_VOID(static, , row_apply_const,
             (const float *x, float *y, int64_t n, double mean, double a,
              double b),
             (x, y, n, mean, a, b))
{
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        y[i] = (float)(((double)x[i] - mean) * a + b);
    }
}

/* y = (x - mean) * rstd * scale[i] + bias[i]; scale / bias may be NULL */
CPU_HOT_VOID(static, , row_apply_vec,
             (const float *x, float *y, int64_t n, double mean, double rstd,
              const float *scale, const float *bias),
             (x, y, n, mean, rstd, scale, bias))
{
    if (scale && bias) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            y[i] = (float)(((double)x[i] - mean) * rstd * (double)scale[i] +
                           (double)bias[i]);
        }
    } else if (scale) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            y[i] = (float)(((double)x[i] - mean) * rstd * (double)scale[i]);
        }
    } else if (bias) {
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            y[i] = (float)(((double)x[i] - mean) * rstd + (double)bias[i]);
        }
    } else {
        row_apply_const(x, y, n, mean, rstd, 0.0);
    }
}

static double
rstd_of(double var, double eps)
{
    return 1.0 / sqrt(var + eps);
}

typedef struct nrows_job {
    const float *x;
    float *y;
    int64_t S;
    double eps;
    const float *scale;
    const float *bias;
    int64_t per_group;
} nrows_job;

static void
nrows_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const nrows_job *j_ = p_;
    const float *x = j_->x;
    float *y = j_->y;
    int64_t S = j_->S;
    double eps = j_->eps;
    const float *scale = j_->scale;
    const float *bias = j_->bias;
    int64_t per_group = j_->per_group;
    for (int64_t g = (int64_t)b_; g < (int64_t)e_; g++) {
        const float *xg = x + g * S;
        float *yg = y + g * S;
        double mean, var;
        row_stats(xg, S, &mean, &var);
        double rstd = rstd_of(var, eps);
        if (per_group) {
            int64_t c = g % per_group;
            row_apply_const(xg, yg, S, mean,
                            rstd * (scale ? (double)scale[c] : 1.0),
                            bias ? (double)bias[c] : 0.0);
        } else {
            row_apply_vec(xg, yg, S, mean, rstd, scale, bias);
        }
    }
}

/* Rows layout: G groups of S contiguous elements.  Scale / bias either per
 * element of the group (per_group == 0: layer normalization) or one value per
 * group, indexed by g % C (per_group == C: instance normalization nchw). */
static void
norm_rows(const float *x, float *y, int64_t G, int64_t S, double eps,
          const float *scale, const float *bias, int64_t per_group)
{
    int64_t ch = chunk_of(S);
    {
        nrows_job j_ = {.x = x, .y = y, .S = S, .eps = eps, .scale = scale,
                        .bias = bias, .per_group = per_group};
        cpu_parallel_for_shared((int64_t)(G), ch, threads_for((uint64_t)(G * S)), nrows_body, &j_);
    }
}

/* Columns layout, one work item: the columns [w0, w0 + wc) (wc <= CW) of
 * the [R, W] block at x / y; each column is a group.  Scale / bias per column
 * (per_col: instance normalization nhwc) or per row r (layer normalization,
 * the reduced index). */
CPU_HOT_VOID(static, , col_block,
             (const float *x, float *y, int64_t R, int64_t W, int64_t w0,
              int64_t wc, double eps, const float *scale, const float *bias,
              bool per_col),
             (x, y, R, W, w0, wc, eps, scale, bias, per_col))
{
    double k0[CW], s1[CW], s2[CW], mean[CW], a[CW], b[CW];
    for (int64_t j = 0; j < wc; j++) {
        k0[j] = x[w0 + j];
        s1[j] = 0.0;
        s2[j] = 0.0;
    }
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * W + w0;
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            double d = (double)xr[j] - k0[j];
            s1[j] += d;
            s2[j] += d * d;
        }
    }
    for (int64_t j = 0; j < wc; j++) {
        double m = s1[j] / (double)R;
        double v = s2[j] / (double)R - m * m;
        v = v < 0.0 ? 0.0 : v;
        mean[j] = k0[j] + m;
        a[j] = rstd_of(v, eps);
        b[j] = 0.0;
        if (per_col) {
            a[j] *= scale ? (double)scale[w0 + j] : 1.0;
            b[j] = bias ? (double)bias[w0 + j] : 0.0;
        }
    }
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * W + w0;
        float *yr = y + r * W + w0;
        double sr = (!per_col && scale) ? (double)scale[r] : 1.0;
        double br = (!per_col && bias) ? (double)bias[r] : 0.0;
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            yr[j] = (float)(((double)xr[j] - mean[j]) * a[j] * sr + b[j] + br);
        }
    }
}

typedef struct ncols_job {
    const float *x;
    float *y;
    int64_t chunks;
    int64_t R;
    int64_t W;
    double eps;
    const float *scale;
    const float *bias;
    bool per_col;
} ncols_job;

static void
ncols_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const ncols_job *j_ = p_;
    const float *x = j_->x;
    float *y = j_->y;
    int64_t chunks = j_->chunks;
    int64_t R = j_->R;
    int64_t W = j_->W;
    double eps = j_->eps;
    const float *scale = j_->scale;
    const float *bias = j_->bias;
    bool per_col = j_->per_col;
    for (int64_t it = (int64_t)b_; it < (int64_t)e_; it++) {
        int64_t g = it / chunks, w0 = (it % chunks) * CW;
        int64_t wc = W - w0 < CW ? W - w0 : CW;
        col_block(x + g * R * W, y + g * R * W, R, W, w0, wc, eps, scale,
                  bias, per_col);
    }
}

/* Columns layout: G1 blocks of [R, W]. */
static void
norm_cols(const float *x, float *y, int64_t G1, int64_t R, int64_t W,
          double eps, const float *scale, const float *bias, bool per_col)
{
    int64_t chunks = (W + CW - 1) / CW;
    int64_t items = G1 * chunks;
    int64_t ch = chunk_of(R * CW);
    {
        ncols_job j_ = {.x = x, .y = y, .chunks = chunks, .R = R, .W = W,
                        .eps = eps, .scale = scale, .bias = bias,
                        .per_col = per_col};
        cpu_parallel_for_shared((int64_t)(items), ch, threads_for((uint64_t)(G1 * R * W)), ncols_body, &j_);
    }
}

typedef struct bn_rows_job {
    const float *xp;
    float *y;
    int64_t C;
    const double *m;
    const double *a;
    const double *b;
} bn_rows_job;

static void
bn_rows_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const bn_rows_job *j_ = p_;
    const float *xp = j_->xp;
    float *y = j_->y;
    int64_t C = j_->C;
    const double *m = j_->m;
    const double *a = j_->a;
    const double *b = j_->b;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        const float *xr = xp + r * C;
        float *yr = y + r * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) {
            yr[c] = (float)(((double)xr[c] - m[c]) * a[c] + b[c]);
        }
    }
}

typedef struct bn_inner_job {
    const float *xp;
    float *y;
    int64_t C;
    int64_t inner;
    const double *m;
    const double *a;
    const double *b;
} bn_inner_job;

static void
bn_inner_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const bn_inner_job *j_ = p_;
    const float *xp = j_->xp;
    float *y = j_->y;
    int64_t C = j_->C;
    int64_t inner = j_->inner;
    const double *m = j_->m;
    const double *a = j_->a;
    const double *b = j_->b;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        int64_t c = r % C;
        row_apply_const(xp + r * inner, y + r * inner, inner, m[c], a[c],
                        b[c]);
    }
}

/* ---- batchNormalization -------------------------------------------------- */
/* y = (x - mean) * a + b with a = scale / sqrt(variance + epsilon), per
 * channel, in double: coef = m[C], a[C], b[C] (scale, bias NULL: 1, 0).
 * The kernel below, the fused epilogues and the fold into a conv2d's
 * constants (backend_cpu.c) and the element-wise chains (chain.c) all make
 * them here. */
void
cpu_bn_coefficients(const float *mean, const float *var, const float *scale,
                    const float *bias, double epsilon, int64_t C, double *coef)
{
    double *m = coef, *a = coef + C, *b = coef + 2 * C;
    for (int64_t c = 0; c < C; c++) {
        m[c] = mean[c];
        a[c] = (scale ? (double)scale[c] : 1.0) / sqrt((double)var[c] + epsilon);
        b[c] = bias ? (double)bias[c] : 0.0;
    }
}

/* y[i] = (float)((x[i] - m[c]) * a[c] + b[c]) for the flat elements [f, f
 * + n) of a tensor whose element e is in channel (e / inner) % C: the
 * kernel's own arithmetic (row_apply_const, bn_rows_body), for a fused
 * element-wise chain's chunk (chain.c; x and y may be the same) */
void
cpu_bn_run(const float *x, float *y, uint64_t f, size_t n, int64_t C,
           int64_t inner, const double *coef)
{
    const double *m = coef, *a = coef + C, *b = coef + 2 * C;
    size_t i = 0;
    if (inner == 1) {
        int64_t c = (int64_t)(f % (uint64_t)C);
        while (i < n) {
            size_t run = (size_t)(C - c) < n - i ? (size_t)(C - c) : n - i;
            const float *xr = x + i;
            float *yr = y + i;
            const double *mr = m + c, *ar = a + c, *br = b + c;
#pragma omp simd
            for (size_t k = 0; k < run; k++) {
                yr[k] = (float)(((double)xr[k] - mr[k]) * ar[k] + br[k]);
            }
            i += run;
            c = 0;
        }
        return;
    }
    uint64_t e = f;
    while (i < n) {
        int64_t c = (int64_t)((e / (uint64_t)inner) % (uint64_t)C);
        uint64_t left = (uint64_t)inner - e % (uint64_t)inner;
        size_t run = left < n - i ? (size_t)left : n - i;
        row_apply_const(x + i, y + i, (int64_t)run, m[c], a[c], b[c]);
        i += run;
        e += run;
    }
}

wnn_status
cpu_batch_normalization(const cpu_call *k, wnn_error *err)
{
    const wnn_batch_normalization_options *o = k->options;
    const wnn_axis_params *q = &k->lowered->u.axis; /* compiler/lower/ */
    int64_t C = (int64_t)q->n, outer = (int64_t)q->outer;
    int64_t inner = (int64_t)q->inner;
    f32buf x, mean, var, scale, bias;
    float *yo = NULL;
    double *coef = NULL;
    wnn_status st = WNN_ERR;
    memset(&mean, 0, sizeof(mean));
    var = scale = bias = mean;
    bool ok = input_f32(k, 0, &x) && input_f32(k, 1, &mean) &&
              input_f32(k, 2, &var) && option_f32(k, o->scale, &scale) &&
              option_f32(k, o->bias, &bias);
    float *y = ok ? output_f32(k, &yo) : NULL;
    coef = malloc(sizeof(double) * 3 * (size_t)C);
    if (!ok || !y || !coef) {
        oom(k, err);
        goto done;
    }
    double *m = coef, *a = coef + C, *b = coef + 2 * C;
    cpu_bn_coefficients(mean.p, var.p, scale.p, bias.p, o->epsilon, C, coef);
    const float *xp = x.p;
    int nt = threads_for((uint64_t)(outer * C * inner));
    if (inner == 1) {
        int64_t ch = chunk_of(C);
        {
            bn_rows_job j_ = {.xp = xp, .y = y, .C = C, .m = m, .a = a, .b = b};
            cpu_parallel_for_shared((int64_t)(outer), ch, nt, bn_rows_body, &j_);
        }
    } else {
        int64_t ch = chunk_of(inner);
        {
            bn_inner_job j_ = {.xp = xp, .y = y, .C = C, .inner = inner,
                               .m = m, .a = a, .b = b};
            cpu_parallel_for_shared((int64_t)(outer * C), ch, nt, bn_inner_body, &j_);
        }
    }
    output_done(k, yo);
    yo = NULL;
    st = WNN_OK;
done:
    free(yo);
    free(coef);
    free(x.owned);
    free(mean.owned);
    free(var.owned);
    free(scale.owned);
    free(bias.owned);
    return st;
}

/* ---- instanceNormalization ----------------------------------------------- */
wnn_status
cpu_instance_normalization(const cpu_call *k, wnn_error *err)
{
    const wnn_instance_normalization_options *o = k->options;
    f32buf x, scale, bias;
    float *yo = NULL;
    memset(&scale, 0, sizeof(scale));
    bias = scale;
    x = scale;
    bool ok = input_f32(k, 0, &x) && option_f32(k, o->scale, &scale) &&
              option_f32(k, o->bias, &bias);
    float *y = ok ? output_f32(k, &yo) : NULL;
    if (!ok || !y) {
        free(yo);
        free(x.owned);
        free(scale.owned);
        free(bias.owned);
        return oom(k, err);
    }
    /* the groups lowered at compile (compiler/lower/reduce.c): N x C of
     * H*W elements */
    const wnn_norm_params *q = &k->lowered->u.norm;
    if (o->layout == 0) { /* nchw: groups of H*W contiguous elements */
        norm_rows(x.p, y, q->G, q->S, o->epsilon, scale.p, bias.p,
                  q->per_channel);
    } else { /* nhwc: per sample, a [H*W, C] block, one group per column */
        norm_cols(x.p, y, q->kext[0], q->S, q->per_channel, o->epsilon,
                  scale.p, bias.p, true);
    }
    output_done(k, yo);
    free(x.owned);
    free(scale.owned);
    free(bias.owned);
    return WNN_OK;
}

/* ---- layerNormalization -------------------------------------------------- */
/* General axes: each group gathered in the order of `axes` (the order of the
 * scale / bias elements), normalized, scattered back. */
typedef struct ln_general {
    uint32_t nk, nr;                 /* kept / reduced dimensions */
    int64_t kext[WNN_MAX_RANK], kst[WNN_MAX_RANK];
    int64_t rext[WNN_MAX_RANK], rst[WNN_MAX_RANK]; /* in axes order */
    int64_t G, S;
} ln_general;

/* Visit the S elements of the group at `base` in axes order: gather
 * (dir 0: buf <- x) or scatter (dir 1: y <- buf). */
static void
ln_walk(const ln_general *p, const float *x, float *y, float *buf,
        int64_t base, int dir)
{
    int64_t idx[WNN_MAX_RANK] = { 0 };
    int last = (int)p->nr - 1;
    int64_t inner = p->rext[last], ist = p->rst[last], off = base;
    for (int64_t j = 0; j < p->S; j += inner) {
        if (dir == 0) {
            for (int64_t i = 0; i < inner; i++) {
                buf[j + i] = x[off + i * ist];
            }
        } else {
            for (int64_t i = 0; i < inner; i++) {
                y[off + i * ist] = buf[j + i];
            }
        }
        for (int d = last - 1; d >= 0; d--) {
            off += p->rst[d];
            if (++idx[d] < p->rext[d]) {
                break;
            }
            off -= p->rst[d] * p->rext[d];
            idx[d] = 0;
        }
    }
}

typedef struct ln_job {
    const ln_general *p;
    const float *x;
    float *y;
    double eps;
    const float *scale, *bias;
    int64_t ch;
    _Atomic int64_t next;
    _Atomic bool failed;
} ln_job;

/* each thread a buffer of its own, groups handed out by chunks of ch */
static void
ln_body(void *pv, int tid, int nt)
{
    (void)tid;
    (void)nt;
    ln_job *j = pv;
    const ln_general *p = j->p;
    float *buf = malloc(sizeof(float) * (size_t)p->S);
    if (!buf) {
        atomic_store(&j->failed, true);
        return;
    }
    for (;;) {
        int64_t g0 = atomic_fetch_add_explicit(&j->next, j->ch, memory_order_relaxed);
        if (g0 >= p->G) {
            break;
        }
        int64_t g1 = p->G - g0 < j->ch ? p->G : g0 + j->ch;
        for (int64_t g = g0; g < g1; g++) {
            int64_t base = 0, rem = g;
            for (int d = (int)p->nk - 1; d >= 0; d--) {
                base += (rem % p->kext[d]) * p->kst[d];
                rem /= p->kext[d];
            }
            ln_walk(p, j->x, j->y, buf, base, 0);
            double mean, var;
            row_stats(buf, p->S, &mean, &var);
            row_apply_vec(buf, buf, p->S, mean, rstd_of(var, j->eps), j->scale,
                          j->bias);
            ln_walk(p, j->x, j->y, buf, base, 1);
        }
    }
    free(buf);
}

static wnn_status
ln_general_run(const cpu_call *k, wnn_error *err, const ln_general *p,
               const float *x, float *y, double eps, const float *scale,
               const float *bias)
{
    ln_job j = {p, x, y, eps, scale, bias, chunk_of(p->S), 0, false};
    cpu_parallel(threads_for((uint64_t)(p->G * p->S)), ln_body, &j);
    bool failed = atomic_load(&j.failed);
    return failed ? oom(k, err) : WNN_OK;
}

wnn_status
cpu_layer_normalization(const cpu_call *k, wnn_error *err)
{
    const wnn_layer_normalization_options *o = k->options;
    const wnn_desc *d = &k->in_desc[0];
    uint32_t rank = d->rank;
    f32buf x, scale, bias;
    float *yo = NULL;
    wnn_status st = WNN_OK;
    memset(&scale, 0, sizeof(scale));
    bias = scale;
    x = scale;
    bool ok = input_f32(k, 0, &x) && option_f32(k, o->scale, &scale) &&
              option_f32(k, o->bias, &bias);
    float *y = ok ? output_f32(k, &yo) : NULL;
    if (!ok || !y) {
        st = oom(k, err);
        goto done;
    }
    bool red[WNN_MAX_RANK] = { false };
    for (uint32_t i = 0; i < o->axes.n; i++) {
        red[o->axes.v[i]] = true;
    }
    /* Dimensions of size 1 do not matter; with scale or bias, the reduced
     * dimensions must come in axes order for the rows / columns layouts. */
    bool in_order = true;
    if (scale.p || bias.p) {
        int64_t prev = -1;
        for (uint32_t i = 0; i < o->axes.n; i++) {
            uint32_t a = o->axes.v[i];
            if (d->shape[a] == 1) {
                continue;
            }
            if ((int64_t)a < prev) {
                in_order = false;
            }
            prev = a;
        }
    }
    /* runs of kept (K) / reduced (R) dimensions in memory order */
    int64_t run_size[WNN_MAX_RANK];
    bool run_red[WNN_MAX_RANK];
    int runs = 0;
    for (uint32_t i = 0; i < rank; i++) {
        if (d->shape[i] == 1) {
            continue;
        }
        if (runs > 0 && run_red[runs - 1] == red[i]) {
            run_size[runs - 1] *= d->shape[i];
        } else {
            run_red[runs] = red[i];
            run_size[runs] = d->shape[i];
            runs++;
        }
    }
    int64_t total = (int64_t)wnn_desc_elements(d);
    int n_red_runs = 0;
    for (int i = 0; i < runs; i++) {
        n_red_runs += run_red[i];
    }
    if (n_red_runs == 0) { /* nothing reduced: groups of one element */
        norm_rows(x.p, y, total, 1, o->epsilon, scale.p, bias.p, 0);
    } else if (in_order && n_red_runs == 1 && run_red[runs - 1]) {
        /* [K] R: rows */
        int64_t S = run_size[runs - 1];
        norm_rows(x.p, y, total / S, S, o->epsilon, scale.p, bias.p, 0);
    } else if (in_order && n_red_runs == 1 && runs <= 3 &&
               (run_red[0] || runs == 3)) {
        /* [K] R K: columns, scale / bias indexed by the reduced position */
        int r = run_red[0] ? 0 : 1;
        int64_t G1 = r ? run_size[0] : 1;
        norm_cols(x.p, y, G1, run_size[r], run_size[r + 1], o->epsilon,
                  scale.p, bias.p, false);
    } else {
        /* the groups lowered at compile (compiler/lower/reduce.c) */
        const wnn_norm_params *q = &k->lowered->u.norm;
        ln_general p;
        memset(&p, 0, sizeof(p));
        p.nk = q->nk;
        p.nr = q->nr;
        memcpy(p.kext, q->kext, sizeof(p.kext));
        memcpy(p.kst, q->kst, sizeof(p.kst));
        memcpy(p.rext, q->rext, sizeof(p.rext));
        memcpy(p.rst, q->rst, sizeof(p.rst));
        p.G = q->G;
        p.S = q->S;
        st = ln_general_run(k, err, &p, x.p, y, o->epsilon, scale.p, bias.p);
    }
    if (st == WNN_OK) {
        output_done(k, yo);
        yo = NULL;
    }
done:
    free(yo);
    free(x.owned);
    free(scale.owned);
    free(bias.owned);
    return st;
}

/* ---- softmax ------------------------------------------------------------- */



/* x - m rounded and its rounding error: wnn_two_diff (wnn_numerics.h) */

#if defined(__x86_64__) && defined(__GNUC__)
/* The exp passes of softmax (softmax_k.h) on AVX-512 and, with the same
 * y bit for bit, at AVX2 (exp256): a row of 1500 (Whisper-tiny's scores)
 * 1.30 -> 1.23 us against GCC's x86-64-v3 build of the portable loop (the
 * sum's order differs). */
enum { SM_STORE, SM_SUM, SM_SCALED };
#define SMK_NAME(s) softmax_##s##_avx512
#define SMK_TARGET __attribute__((target("avx512f")))
#define SMK_VT __m512
#define SMK_VD __m512d
#define SMK_W 16
#define SMK(op) _mm512_##op
#define SMK_EXP(v) exp512(v)
#define SMK_KEEP_GT(a, b, v) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(a, b, _CMP_GT_OQ), v)
#define SMK_LO(r) _mm512_castps512_ps256(r)
#define SMK_HI(r) _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(r), 1))
#define SMK_MASK_T __mmask16
#define SMK_MASK(r) ((__mmask16)((1u << (r)) - 1))
#define SMK_MLOAD(k, p) _mm512_maskz_loadu_ps(k, p)
#define SMK_MSTORE(p, k, v) _mm512_mask_storeu_ps(p, k, v)
#define SMK_MZERO(k, v) _mm512_maskz_mov_ps(k, v)
#define SMK_REDUCE(d) _mm512_reduce_add_pd(d)
#define SMK_PIN(a, b, c, d) (void)0
#include "softmax_k.h" /* (undefines the SMK_ macros) */

#define SMK_NAME(s) softmax_##s##_avx2
#define SMK_TARGET __attribute__((target("arch=x86-64-v3")))
#define SMK_VT __m256
#define SMK_VD __m256d
#define SMK_W 8
#define SMK(op) _mm256_##op
#define SMK_EXP(v) exp256_neg(v)
#define SMK_EXP_X4(v, e) exp256_neg_n(v, e, 4)
#define SMK_KEEP_GT(a, b, v) _mm256_and_ps(_mm256_cmp_ps(a, b, _CMP_GT_OQ), v)
#define SMK_LO(r) _mm256_castps256_ps128(r)
#define SMK_HI(r) _mm256_extractf128_ps(r, 1)
#define SMK_MASK_T __m256i
#define SMK_MASK(r) _mm256_cmpgt_epi32(_mm256_set1_epi32(r), \
                                       _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define SMK_MLOAD(k, p) _mm256_maskload_ps(p, k)
#define SMK_MSTORE(p, k, v) _mm256_maskstore_ps(p, k, v)
#define SMK_MZERO(k, v) _mm256_and_ps(_mm256_castsi256_ps(k), v)
#define SMK_REDUCE(d) sm_reduce256(d)
#define SMK_PIN(a, b, c, d) __asm__("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d))
__attribute__((target("arch=x86-64-v3"))) static inline double
sm_reduce256(__m256d s)
{
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}
#include "softmax_k.h" /* (undefines the SMK_ macros) */
#endif

/* One contiguous group of n elements held in cache: the maximum, then
 * y = exp(x - m) and its sum (double) in one pass, then y *= 1 / sum.
 * vm_exp covers every input, so no lane needs a scalar fix-up.  On AVX-512
 * the exp pass is softmax_exp_avx512 (exp by vscalefps, four independent
 * sums): rows of 768 1.4x faster; a long row's parts use it too; at AVX2
 * softmax_exp_avx2. */
CPU_HOT_VOID(static, VM_ATTRS, softmax_row,
             (const float *x, float *y, int64_t n),
             (x, y, n))
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; i++) {
        m = x[i] > m ? x[i] : m; /* a NaN is skipped here but propagates below */
    }
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_isa() >= CPU_ISA_AVX2) {
        float inv = (float)(1.0 / (cpu_has_avx512()
                                       ? softmax_row_exp_avx512(x, y, n, m)
                                       : softmax_row_exp_avx2(x, y, n, m)));
#pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            y[i] *= inv;
        }
        return;
    }
#endif
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < n; i++) {
        float lo, v = wnn_two_diff(x[i], m, &lo);
        float e = vm_exp(v);
        float r = e + e * lo;
        y[i] = r;
        s += r;
    }
    float inv = (float)(1.0 / s);
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        y[i] *= inv;
    }
}

void
cpu_softmax_row(const float *x, float *y, int64_t n)
{
    softmax_row(x, y, n);
}

/* Long groups (more than SM_PART elements: out of cache) go in two passes
 * over memory, split in parts of SM_PART elements over the threads: each
 * part's maximum and sum of exp(x - max) (the part re-read from L2), the
 * parts combined (sum of s_p exp(m_p - M)), then y = exp(x - M) / S. */
#define SM_PART 32768

/* the maximum and sum of exp(x - max) of x[0..n) */
CPU_HOT_VOID(static, VM_ATTRS, softmax_part_stats,
             (const float *x, int64_t n, float *m_out, double *s_out),
             (x, n, m_out, s_out))
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < n; i++) {
        m = x[i] > m ? x[i] : m;
    }
    int nan = 0;
#pragma omp simd reduction(| : nan)
    for (int64_t i = 0; i < n; i++) {
        nan |= x[i] != x[i];
    }
    double s = 0.0;
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512()) {
        s = softmax_part_sum_avx512(x, n, m);
    } else if (cpu_isa() >= CPU_ISA_AVX2) {
        s = softmax_part_sum_avx2(x, n, m);
    } else
#endif
    {
#pragma omp simd reduction(+ : s)
        for (int64_t i = 0; i < n; i++) {
            float lo, v = wnn_two_diff(x[i], m, &lo);
            float e = vm_exp(v);
            s += e + e * lo;
        }
    }
    *m_out = nan ? NAN : m;
    *s_out = m == -INFINITY ? 0.0 : s; /* -Inf only: adds nothing (exp -> 0) */
}

/* y = exp(x - m) * inv */
CPU_HOT_VOID(static, VM_ATTRS, softmax_part_write,
             (const float *x, float *y, int64_t n, float m, float inv),
             (x, y, n, m, inv))
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512()) {
        softmax_part_write_avx512(x, y, n, m, inv);
        return;
    }
    if (cpu_isa() >= CPU_ISA_AVX2) {
        softmax_part_write_avx2(x, y, n, m, inv);
        return;
    }
#endif
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        float lo, v = wnn_two_diff(x[i], m, &lo);
        float e = vm_exp(v);
        y[i] = (e + e * lo) * inv;
    }
}

typedef struct sm_long_job {
    const float *x;
    float *y;
    int64_t n;     /* group length */
    int64_t parts; /* per group */
    float *pm;     /* per part: maximum (NaN: the part holds a NaN) */
    double *ps;    /* per part: sum of exp(x - pm) */
    float *gm;     /* per group: maximum */
    float *ginv;   /* per group: 1 / sum */
} sm_long_job;

static void
sm_long_stats_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const sm_long_job *j = p_;
    for (int64_t it = b_; it < e_; it++) {
        int64_t g = it / j->parts, p = it % j->parts, i0 = p * SM_PART;
        int64_t len = j->n - i0 < SM_PART ? j->n - i0 : SM_PART;
        softmax_part_stats(j->x + g * j->n + i0, len, &j->pm[it], &j->ps[it]);
    }
}

static void
sm_long_write_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const sm_long_job *j = p_;
    for (int64_t it = b_; it < e_; it++) {
        int64_t g = it / j->parts, p = it % j->parts, i0 = p * SM_PART;
        int64_t len = j->n - i0 < SM_PART ? j->n - i0 : SM_PART;
        softmax_part_write(j->x + g * j->n + i0, j->y + g * j->n + i0, len,
                           j->gm[g], j->ginv[g]);
    }
}

/* G groups of n > SM_PART contiguous elements; false when out of memory */
static bool
softmax_long(const float *x, float *y, int64_t G, int64_t n, int nt)
{
    int64_t parts = (n + SM_PART - 1) / SM_PART, items = G * parts;
    sm_long_job j = {.x = x, .y = y, .n = n, .parts = parts};
    j.pm = malloc(sizeof(float) * (size_t)items);
    j.ps = malloc(sizeof(double) * (size_t)items);
    j.gm = malloc(sizeof(float) * (size_t)G);
    j.ginv = malloc(sizeof(float) * (size_t)G);
    bool ok = j.pm && j.ps && j.gm && j.ginv;
    if (ok) {
        cpu_parallel_for_shared(items, 1, nt, sm_long_stats_body, &j);
        for (int64_t g = 0; g < G; g++) {
            const float *pm = j.pm + g * parts;
            const double *ps = j.ps + g * parts;
            float M = -INFINITY;
            bool nan = false;
            for (int64_t p = 0; p < parts; p++) {
                nan |= pm[p] != pm[p];
                M = pm[p] > M ? pm[p] : M;
            }
            double S = 0.0;
            for (int64_t p = 0; p < parts; p++) {
                if (pm[p] != -INFINITY) { /* else ps[p] is 0 */
                    S += ps[p] * exp((double)pm[p] - (double)M);
                }
            }
            /* a NaN, or +Inf (S is NaN then), or -Inf only: all NaN */
            j.gm[g] = nan || M == -INFINITY ? NAN : M;
            j.ginv[g] = (float)(1.0 / S);
        }
        cpu_parallel_for_shared(items, 1, nt, sm_long_write_body, &j);
    }
    free(j.pm);
    free(j.ps);
    free(j.gm);
    free(j.ginv);
    return ok;
}

/* columns [w0, w0 + wc) of a [C, W] block: softmax down each column */
CPU_HOT_VOID(static, VM_ATTRS, softmax_cols,
             (const float *x, float *y, int64_t C, int64_t W, int64_t w0,
              int64_t wc),
             (x, y, C, W, w0, wc))
{
    float m[CW];
    double s[CW];
    for (int64_t j = 0; j < wc; j++) {
        m[j] = -INFINITY;
        s[j] = 0.0;
    }
    for (int64_t c = 0; c < C; c++) {
        const float *xr = x + c * W + w0;
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            m[j] = xr[j] > m[j] ? xr[j] : m[j];
        }
    }
    for (int64_t c = 0; c < C; c++) {
        const float *xr = x + c * W + w0;
        float *yr = y + c * W + w0;
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            float lo, v = wnn_two_diff(xr[j], m[j], &lo);
            float e = vm_exp(v);
            yr[j] = e + e * lo;
        }
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            s[j] += yr[j];
        }
    }
    float inv[CW];
    for (int64_t j = 0; j < wc; j++) {
        inv[j] = (float)(1.0 / s[j]);
    }
    for (int64_t c = 0; c < C; c++) {
        float *yr = y + c * W + w0;
#pragma omp simd
        for (int64_t j = 0; j < wc; j++) {
            yr[j] *= inv[j];
        }
    }
}

typedef struct sm_rows_job {
    const float *xp;
    float *y;
    int64_t C;
} sm_rows_job;

static void
sm_rows_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const sm_rows_job *j_ = p_;
    const float *xp = j_->xp;
    float *y = j_->y;
    int64_t C = j_->C;
    for (int64_t r = (int64_t)b_; r < (int64_t)e_; r++) {
        softmax_row(xp + r * C, y + r * C, C);
    }
}

typedef struct sm_cols_job {
    const float *xp;
    float *y;
    int64_t C;
    int64_t inner;
    int64_t chunks;
} sm_cols_job;

static void
sm_cols_body(void *p_, int64_t b_, int64_t e_, int tid_)
{
    (void)tid_;
    const sm_cols_job *j_ = p_;
    const float *xp = j_->xp;
    float *y = j_->y;
    int64_t C = j_->C;
    int64_t inner = j_->inner;
    int64_t chunks = j_->chunks;
    for (int64_t it = (int64_t)b_; it < (int64_t)e_; it++) {
        int64_t g = it / chunks, w0 = (it % chunks) * CW;
        int64_t wc = inner - w0 < CW ? inner - w0 : CW;
        softmax_cols(xp + g * C * inner, y + g * C * inner, C, inner, w0,
                     wc);
    }
}

wnn_status
cpu_softmax(const cpu_call *k, wnn_error *err)
{
    const wnn_axis_params *q = &k->lowered->u.axis; /* compiler/lower/ */
    int64_t C = (int64_t)q->n, outer = (int64_t)q->outer;
    int64_t inner = (int64_t)q->inner;
    f32buf x;
    float *yo = NULL;
    bool ok = input_f32(k, 0, &x);
    float *y = ok ? output_f32(k, &yo) : NULL;
    if (!ok || !y) {
        free(x.owned);
        return oom(k, err);
    }
    const float *xp = x.p;
    int nt = threads_for((uint64_t)(outer * C * inner));
    if (inner == 1 && C > SM_PART) {
        if (!softmax_long(xp, y, outer, C, nt)) {
            free(yo);
            free(x.owned);
            return oom(k, err);
        }
    } else if (inner == 1) {
        int64_t ch = chunk_of(C);
        {
            sm_rows_job j_ = {.xp = xp, .y = y, .C = C};
            cpu_parallel_for_shared((int64_t)(outer), ch, nt, sm_rows_body, &j_);
        }
    } else {
        int64_t chunks = (inner + CW - 1) / CW;
        int64_t items = outer * chunks, ch = chunk_of(C * CW);
        {
            sm_cols_job j_ = {.xp = xp, .y = y, .C = C, .inner = inner,
                              .chunks = chunks};
            cpu_parallel_for_shared((int64_t)(items), ch, nt, sm_cols_body, &j_);
        }
    }
    output_done(k, yo);
    free(x.owned);
    return WNN_OK;
}
