/* pair.c -- linked conv pairs (compiler/fuse.h, WNN_FUSE_CONV_PAIR) in one
 * pass: the 1x1 expansion of an inverted residual block, the 3x3 depthwise
 * convolution that reads it and the 1x1 projection that reads that (the
 * expansion or the projection may be absent), nhwc float32
 * (#api-mlgraphbuilder-conv2d).
 *
 * Run one after the other, the expansion writes its whole output (6 times
 * the block's input: 4.8 MB for MobileNetV2's 112 x 112 x 96) and the
 * depthwise convolution reads it back from memory, then writes its own for
 * the projection to read.  Here each thread walks down a band of the
 * depthwise output's rows; the expansion rows a row needs (three, strides
 * and dilations aside) are computed into a small ring of rows per thread
 * -- each row once, as the band moves down, kept while the rows below still
 * read it -- the depthwise row is computed from the ring while it is in L1
 * / L2, and projected at once from a one-row buffer.  Neither intermediate
 * is stored.  The "expansion" may also be an image's first convolution (a
 * dense one of few channels, 3 -> 32 stride 2 in MobileNetV2), its rows
 * computed by the direct kernel into the ring the same way.  On rows too
 * narrow for bands (14 x 14, 7 x 7), a depthwise convolution and its
 * projection without an expansion run in chunks of pixels instead.
 *
 * Every step is the kernel of the unfused path (conv_1x1_span and
 * conv_direct_prow of direct.c, conv_dw3_row / conv_dw3_span of
 * depthwise.c) on the same values in the same order, with
 * the same epilogues: the results are bit for bit those of the
 * convolutions run apart (tests/ops/test_fusion.py checks). */
#include "conv.h"

#if HAVE_DIRECT
/* Where an expansion runs inside its depthwise convolution: an expansion
 * output of 512 KiB or more (a smaller one stays in L2 between the two
 * layers anyway) and rows of 20 pixels or more.  Measured on 2 threads,
 * pair / apart (us): 112 x 112 x 16 -> 96 stride 2: 315 / 344; 56 x 56 x
 * 24 -> 144: 229 / 251; 28 x 28 x 32 -> 192: 92 / 105; 8 x 56 x 56 x 24 ->
 * 144: 1988 / 3454; but 14 x 14 x 64 -> 384: 87 / 81 and 7 x 7 x 160 ->
 * 960: 133 / 94, where the rows the threads' bands both need are a large
 * share and the micro-kernel runs short spans of pixels. */
#define PAIR_MIN_BYTES (512u << 10)
#define PAIR_MIN_WIDTH 20
#define PAIR_STEM_MAX_C 8
/* A depthwise convolution and its projection on rows narrower than
 * PAIR_MIN_WIDTH (14 x 14, 7 x 7 at batch 1): tasks of a chunk of
 * pixels each, as the 1x1 product's (direct.c) -- the chunk's depthwise
 * pixels, then their projection while they are in L1 / L2: one parallel
 * region for the two layers, and the depthwise output never stored; where
 * the projection's packed filter is at most this. */
#define PAIR_CHUNK_MAX_BYTES (640u << 10)

static bool
direct_ok(const cpu_config *cfg, const wnn_conv_params *p)
{
    geom g;
    geom_from(&g, p);
    g.direct_ok = cfg->conv_direct;
    return direct_usable(&g);
}

int
cpu_conv_pair_fuses(const cpu_config *cfg, const wnn_conv_params *a,
                    const wnn_conv_params *b, bool a_linked)
{
    /* which of the two pairs (fuse.c): b the 3x3 depthwise convolution
     * (then a, groups 1, its expansion), or a (then b its 1x1 projection).
     * Not a's groups: a depthwise convolution of one channel has groups 1
     * too. */
    if (b->C < 2) { /* b's input: the depthwise convolution's channels */
        /* a depthwise convolution of one channel: paired, its results
         * differed from the unfused layers' in the last bit (found with
         * tests/ops/test_fusion.py's dw1_proj, not understood yet) */
        return 0;
    }
    if (b->KH == 3 && b->KW == 3 && b->G == b->C && b->O == b->C) {
        /* the ring: 2 dh + 1 rows of OW x E floats a thread.  A producer
         * other than a 1x1 runs row by row on the direct kernel (conv.h,
         * conv_direct_prow): only with few input channels (an image's
         * first convolution, 3 -> 32 stride 2 in MobileNetV2: its 12.8 MB
         * result at batch 8 no longer goes through memory), where the
         * direct kernel is what it would run apart too */
        double ring = (2.0 * (double)b->dh + 1) * (double)a->OW * (double)a->O * 4;
        bool pw = a->KH == 1 && a->KW == 1 && a->sh == 1 && a->sw == 1 &&
                  !a->pad[0] && !a->pad[2];
        return direct_ok(cfg, a) && (pw || a->C <= PAIR_STEM_MAX_C) &&
               4.0 * (double)a->N * (double)a->OH * (double)a->OW * (double)a->O >=
                   PAIR_MIN_BYTES &&
               a->OW >= PAIR_MIN_WIDTH && ring <= 4.0 * (1 << 20) ? 1 : 0;
    }
    /* a depthwise convolution a, its projection b: rows of 20 pixels or
     * more (the same spans of the micro-kernel).  Measured, with the
     * expansion (us, linked / apart): 112 x 112 x 16 -> 96 stride 2 -> 24:
     * 415 / 474 (the pair alone 315 / 344); 56 x 56 x 24 -> 144 -> 24:
     * 344 / 370; 28 x 28 x 32 -> 192 -> 32: 132 / 141.  Narrower rows run
     * in chunks of pixels (pair_body) where the projection's packed filter
     * stays in L2 from one chunk to the next (each chunk reads all of it)
     * -- unless a runs inside its expansion's pair already (a_linked). */
    const double wbytes = 4.0 * (double)b->C * (double)((b->O + 15) / 16 * 16);
    return direct_ok(cfg, b) &&
           (a->OW >= PAIR_MIN_WIDTH ||
            (!a_linked && wbytes <= PAIR_CHUNK_MAX_BYTES)) ? 2 : 0;
}

/* a dense convolution's packed filter and bias and its epilogue (the
 * expansion's -- a 1x1, or an image's first convolution computed row by
 * row -- or the projection's, a 1x1) */
typedef struct pw_part {
    const float *wt;         /* conv_direct_pack                  */
    float *bp;               /* the bias, zero-padded to OP       */
    int64_t C, O, OP;
    const float *res;        /* its residual addend, or NULL      */
    const float *cl;         /* its clamp in registers, or NULL   */
    const cpu_epi *epi;      /* its other epilogue, or NULL       */
    float clamp[3];
    float *own;
    /* a producer other than a 1x1 without strides or padding (the
     * expansion only): its geometry and interior columns */
    bool rows;
    geom g;
    int64_t lo, hi;
} pw_part;

static bool
pw_make(pw_part *p, const cpu_call *k, const geom *g)
{
    const wnn_conv2d_options *o = k->options;
    memset(p, 0, sizeof(*p));
    p->C = g->C, p->O = g->O, p->OP = (g->O + 15) / 16 * 16;
    p->wt = conv_direct_pack(k, g, o->filter_layout, k->in[1], &p->own);
    p->bp = fcalloc((size_t)p->OP + 16);
    if (!p->wt || !p->bp) {
        return false;
    }
    if (o->bias) {
        memcpy(p->bp, k->in[o->bias - 1], (size_t)g->O * sizeof(float));
    }
    if (!reg_epi_of(g->epi, p->clamp, &p->res, &p->cl)) {
        p->epi = g->epi; /* applied on each block just stored */
    }
    p->rows = !(g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 &&
                !g->pt && !g->pl && g->OH == g->H && g->OW == g->W);
    if (p->rows) {
        p->g = *g;
        conv_direct_cols(g, &p->lo, &p->hi);
    }
    return true;
}

static void
pw_free(pw_part *p)
{
    free(p->own);
    free(p->bp);
}

/* pixels [0, np) of x (C channels each) -> y (O each), whose first
 * element is element `off` of the part's output */
static void
pw_run(const pw_part *p, const float *x, int64_t np, float *y, int64_t off)
{
    const float *res = p->res ? p->res + off : NULL;
    for (int64_t ob = 0; ob < (p->OP + 63) / 64; ob++) {
        conv_1x1_span(x, p->C, p->C, 0, np, p->wt, p->OP, p->O, p->O, ob,
                      p->bp, y, off, 0, res, p->cl, p->epi, 0);
    }
}

typedef struct pair_job {
    const geom *gd;          /* the depthwise convolution          */
    const pw_part *e, *p;    /* expansion, projection (or NULL)    */
    const float *x;          /* the expansion's input, or the depthwise
                              * convolution's when there is no expansion */
    const float *wk, *bias;  /* the depthwise filter and bias      */
    const float *cl_d;       /* its clamp in registers, or NULL    */
    const cpu_epi *epi_d;    /* its other epilogue, or NULL        */
    float *y;                /* the depthwise output, or the projection's */
    const float *zeros;      /* a row of W x E zeros               */
    float *scratch;          /* per thread: ring rows, then a row  */
    int64_t *tags;           /* per thread: RS row ids, -1: none   */
    int64_t RS, per;         /* ring rows, floats per thread       */
    int64_t lo, hi;
    int64_t nch;             /* chunks of pixels (no expansion), or 0 */
} pair_job;

/* the depthwise epilogue other than a clamp in registers, on np pixels
 * at yo, element off of its output */
static void
dw_epilogue(const pair_job *j, float *yo, int64_t off, int64_t np)
{
    const int64_t E = j->gd->C;
    if (j->epi_d && !cpu_epi_per_channel(j->epi_d)) {
        cpu_epi_tile(j->epi_d, yo, off, np * E, 0, 1);
    } else if (j->epi_d) { /* pixel by pixel: channels 0 .. E - 1 */
        cpu_epi_rows(j->epi_d, yo, E, np, off, E, 0);
    }
}

/* chunk ci of the N OH OW output pixels (nch chunks of about the same
 * size): the depthwise convolution of its pixels into buf, row part by
 * row part, then their projection */
static void
chunk_task(const pair_job *j, int64_t ci, float *buf)
{
    const geom *gd = j->gd;
    const int64_t H = gd->H, W = gd->W, E = gd->C, OW = gd->OW;
    const int64_t P = gd->N * gd->OH * OW, q = P / j->nch, rm = P % j->nch;
    const int64_t p0 = ci * q + (ci < rm ? ci : rm), p1 = p0 + q + (ci < rm);
    for (int64_t p = p0; p < p1;) {
        const int64_t r = p / OW, a = p % OW;
        const int64_t e = OW - a < p1 - p ? OW : a + (p1 - p);
        const int64_t n = r / gd->OH, oh = r % gd->OH;
        const float *rows[3];
        for (int kh = 0; kh < 3; kh++) {
            int64_t ih = oh * gd->sh - gd->pt + kh * gd->dh;
            rows[kh] = ih < 0 || ih >= H ? j->zeros : j->x + (n * H + ih) * W * E;
        }
        float *yo = buf + (p - p0) * E;
        conv_dw3_span(gd, rows, j->wk, j->bias, yo, j->lo, j->hi, j->cl_d, a, e);
        dw_epilogue(j, yo, p * E, e - a);
        p += e - a;
    }
    pw_run(j->p, buf, p1 - p0, j->y + p0 * j->p->O, p0 * j->p->O);
}

static void
pair_body(void *p_, int64_t b_, int64_t e_, int tid)
{
    const pair_job *j = p_;
    const geom *gd = j->gd;
    const int64_t H = gd->H, W = gd->W, E = gd->C, OW = gd->OW;
    float *ring = j->scratch + (int64_t)tid * j->per;
    float *row = ring + j->RS * W * E; /* the depthwise row before projection */
    int64_t *tags = j->tags + (int64_t)tid * j->RS;
    if (j->nch) {
        for (int64_t t = b_; t < e_; t++) {
            chunk_task(j, t, ring);
        }
        return;
    }
    for (int64_t r = b_; r < e_; r++) {
        int64_t n = r / gd->OH, oh = r % gd->OH;
        const float *rows[3];
        for (int kh = 0; kh < 3; kh++) {
            int64_t ih = oh * gd->sh - gd->pt + kh * gd->dh;
            if (ih < 0 || ih >= H) {
                rows[kh] = j->zeros;
            } else if (!j->e) {
                rows[kh] = j->x + (n * H + ih) * W * E;
            } else {
                int64_t slot = ih % j->RS, id = n * H + ih;
                float *sr = ring + slot * W * E;
                if (tags[slot] != id && j->e->rows) {
                    conv_direct_prow(&j->e->g, j->x, j->e->wt, j->e->bp, sr,
                                     n, ih, j->e->lo, j->e->hi);
                    tags[slot] = id;
                } else if (tags[slot] != id) {
                    pw_run(j->e, j->x + id * W * j->e->C, W, sr, id * W * E);
                    tags[slot] = id;
                }
                rows[kh] = sr;
            }
        }
        float *yr = j->p ? row : j->y + r * OW * E;
        conv_dw3_row(gd, rows, j->wk, j->bias, yr, j->lo, j->hi, j->cl_d);
        dw_epilogue(j, yr, r * OW * E, OW);
        if (j->p) {
            pw_run(j->p, row, OW, j->y + r * OW * j->p->O, r * OW * j->p->O);
        }
    }
}

wnn_status
cpu_conv_pair(const cpu_call *ke, const cpu_call *kd, const cpu_call *kp,
              wnn_error *err)
{
    const wnn_conv2d_options *od = kd->options;
    geom ge = { 0 }, gd = { 0 }, gp = { 0 };
    geom_from(&gd, &kd->lowered->u.conv);
    gd.epi = kd->epi;
    gd.direct_ok = kd->config->conv_direct;
    if (ke) {
        geom_from(&ge, &ke->lowered->u.conv);
        ge.epi = ke->epi;
        ge.direct_ok = ke->config->conv_direct;
    }
    if (kp) {
        geom_from(&gp, &kp->lowered->u.conv);
        gp.epi = kp->epi;
        gp.direct_ok = kp->config->conv_direct;
    }
    const int64_t E = gd.C, W = gd.W;
    pw_part pe, pp;
    bool e_ok = !ke || pw_make(&pe, ke, &ge);
    bool p_ok = !kp || pw_make(&pp, kp, &gp);
    float *own_d = NULL;
    const float *wk = conv_dw_filter(kd, &gd, od->filter_layout, kd->in[1],
                                     &own_d);
    const float *zeros = cpu_zeros((size_t)(W * E) + 16);
    int nt = cpu_num_threads();
    int64_t RS = ke ? 2 * gd.dh + 1 : 0;
    int64_t per = ((RS * W + (kp ? gd.OW : 0)) * E + 15) / 16 * 16 + 16;
    /* chunks of pixels for narrow rows without an expansion: at least 4 a
     * thread (of 6 pixels or more: a projection's block), at most 36 */
    int64_t nch = 0;
    if (!ke && kp && gd.OW < PAIR_MIN_WIDTH) {
        const int64_t P = gd.N * gd.OH * gd.OW, few = P / 6 < 4 * nt ? P / 6 : 4 * nt;
        nch = (P + 35) / 36 > few ? (P + 35) / 36 : few;
        nch = nch < 1 ? 1 : nch;
        const int64_t big = (P + nch - 1) / nch;
        per = (big * E + 15) / 16 * 16 + 16;
    }
    /* the rows and their tags, kept with the depthwise node */
    void *own_s = NULL;
    float *scratch = cpu_scratch(kd, sizeof(float) * (size_t)(per * nt) +
                                         sizeof(int64_t) * (size_t)(RS * nt + 1),
                                 &own_s);
    int64_t *tags = scratch ? (int64_t *)(scratch + per * nt) : NULL;
    wnn_status st = WNN_OK;
    if (!e_ok || !p_ok || !wk || !zeros || !scratch || !tags) {
        st = cpu_fail(kd, err, "out of memory");
        goto done;
    }
    for (int64_t i = 0; i < RS * nt; i++) {
        tags[i] = -1;
    }
    float clamp_d[3];
    const float *res_d, *cl_d;
    bool reg_d = reg_epi_of(gd.epi, clamp_d, &res_d, &cl_d) && !res_d;
    pair_job j = {.gd = &gd, .e = ke ? &pe : NULL, .p = kp ? &pp : NULL,
                  .x = ke ? ke->in[0] : kd->in[0], .wk = wk,
                  .bias = od->bias ? kd->in[od->bias - 1] : NULL,
                  .cl_d = reg_d ? cl_d : NULL, .epi_d = reg_d ? NULL : gd.epi,
                  .y = kp ? kp->out[0] : kd->out[0], .zeros = zeros,
                  .scratch = scratch, .tags = tags, .RS = RS, .per = per};
    conv_dw3_cols(&gd, &j.lo, &j.hi);
    j.nch = nch;
    /* rows of the depthwise output; each thread's own run is one band
     * (cpu_parallel_for_dynamic), the rows it steals cost their own
     * expansion rows -- or chunks of pixels */
    cpu_parallel_for_dynamic(nch ? nch : gd.N * gd.OH, 1, nt, pair_body, &j);
    const cpu_call *ks[3] = { ke, kd, kp };
    for (int i = 0; i < 3; i++) {
        if (ks[i] && ks[i]->epi) {
            ks[i]->epi->applied = true;
        }
    }
done:
    if (ke) {
        pw_free(&pe);
    }
    if (kp) {
        pw_free(&pp);
    }
    free(own_d);
    free(own_s);
    return st;
}
#else
int
cpu_conv_pair_fuses(const cpu_config *cfg, const wnn_conv_params *a,
                    const wnn_conv_params *b, bool a_linked)
{
    (void)cfg, (void)a, (void)b, (void)a_linked;
    return 0;
}

wnn_status
cpu_conv_pair(const cpu_call *ke, const cpu_call *kd, const cpu_call *kp,
              wnn_error *err)
{
    (void)ke, (void)kp;
    return cpu_fail(kd, err, "conv pairs need the direct kernels");
}
#endif
