/* pair.c -- a conv pair (compiler/fuse.h, WNN_FUSE_CONV_PAIR) in one pass:
 * the 1x1 expansion of an inverted residual block and the 3x3 depthwise
 * convolution that reads it, both nhwc float32
 * (#api-mlgraphbuilder-conv2d).
 *
 * Run one after the other, the expansion writes its whole output (6 times
 * the block's input: 4.8 MB for MobileNetV2's 112 x 112 x 96) and the
 * depthwise convolution reads it back from memory.  Here each thread walks
 * down a band of the depthwise output's rows; the expansion rows a row
 * needs (three, strides and dilations aside) are computed into a small
 * ring of rows per thread -- each row once, as the band moves down, kept
 * while the rows below still read it -- and the depthwise row is computed
 * from the ring while it is in L1 / L2.  The expansion's output is never
 * stored.
 *
 * Both steps are the kernels of the unfused path (conv_1x1_span of
 * direct.c, conv_dw3_row of depthwise.c) on the same values in the same
 * order, with the same epilogues: the results are bit for bit those of
 * the two convolutions run apart (tests/ops/test_fusion.py checks). */
#include "conv.h"

#if HAVE_DIRECT
/* Where the pair runs fused: an expansion output of 512 KiB or more (a
 * smaller one stays in L2 between the two layers anyway) and rows of 20
 * pixels or more.  Measured on 2 threads, pair / apart (us): 112 x 112 x
 * 16 -> 96 stride 2: 315 / 344; 56 x 56 x 24 -> 144: 229 / 251; 28 x 28 x
 * 32 -> 192: 92 / 105; 8 x 56 x 56 x 24 -> 144: 1988 / 3454; but 14 x 14 x
 * 64 -> 384: 87 / 81 and 7 x 7 x 160 -> 960: 133 / 94, where the rows the
 * threads' bands both need are a large share and the micro-kernel runs
 * short spans of pixels. */
#define PAIR_MIN_BYTES (512u << 10)
#define PAIR_MIN_WIDTH 20

bool
cpu_conv_pair_fuses(const cpu_config *cfg, const wnn_conv_params *a,
                    const wnn_conv_params *b)
{
    geom ga;
    geom_from(&ga, a);
    ga.direct_ok = cfg->conv_direct;
    /* the ring: 2 dh + 1 rows of W x E floats a thread */
    double ring = (2.0 * (double)b->dh + 1) * (double)a->W * (double)a->O * 4;
    return direct_usable(&ga) && a->nhwc && b->nhwc && b->KH == 3 &&
           b->KW == 3 && b->C == a->O && b->O == b->C && b->G == b->C &&
           4.0 * (double)a->N * (double)a->H * (double)a->W * (double)a->O >=
               PAIR_MIN_BYTES &&
           a->W >= PAIR_MIN_WIDTH && ring <= 4.0 * (1 << 20);
}

typedef struct pair_job {
    const geom *ga, *gb;
    const float *x;          /* the expansion's input             */
    const float *wt, *bp;    /* its packed filter and padded bias */
    int64_t OP;
    const float *res_a;      /* its residual addend, or NULL      */
    const float *cl_a;       /* its clamp in registers, or NULL   */
    const cpu_epi *epi_a;    /* its other epilogue, or NULL       */
    const float *wk, *bias;  /* the depthwise filter and bias     */
    const float *cl_b;       /* its clamp in registers, or NULL   */
    const cpu_epi *epi_b;    /* its other epilogue, or NULL       */
    float *y;
    const float *zeros;      /* a row of W x E zeros              */
    float *rings;            /* per thread: RS rows of W x E      */
    int64_t *tags;           /* per thread: RS row ids, -1: none  */
    int64_t RS, ring_floats;
    int64_t lo, hi;
} pair_job;

/* expansion row ih of image n (row id n H + ih) into yr */
static void
pair_expand_row(const pair_job *j, int64_t n, int64_t ih, float *yr)
{
    const geom *ga = j->ga;
    const int64_t W = ga->W, C = ga->C, E = ga->O;
    const int64_t row = n * ga->H + ih;
    const float *xr = j->x + row * W * C;
    const float *res = j->res_a ? j->res_a + row * W * E : NULL;
    for (int64_t ob = 0; ob < (j->OP + 63) / 64; ob++) {
        conv_1x1_span(xr, C, 0, W, j->wt, j->OP, E, ob, j->bp, yr,
                      row * W * E, res, j->cl_a, j->epi_a, 0);
    }
}

static void
pair_body(void *p_, int64_t b_, int64_t e_, int tid)
{
    const pair_job *j = p_;
    const geom *gb = j->gb;
    const int64_t H = gb->H, W = gb->W, E = gb->C, OW = gb->OW;
    float *ring = j->rings + (int64_t)tid * j->ring_floats;
    int64_t *tags = j->tags + (int64_t)tid * j->RS;
    for (int64_t r = b_; r < e_; r++) {
        int64_t n = r / gb->OH, oh = r % gb->OH;
        const float *rows[3];
        for (int kh = 0; kh < 3; kh++) {
            int64_t ih = oh * gb->sh - gb->pt + kh * gb->dh;
            if (ih < 0 || ih >= H) {
                rows[kh] = j->zeros;
                continue;
            }
            int64_t slot = ih % j->RS, id = n * H + ih;
            float *sr = ring + slot * W * E;
            if (tags[slot] != id) {
                pair_expand_row(j, n, ih, sr);
                tags[slot] = id;
            }
            rows[kh] = sr;
        }
        float *yr = j->y + r * OW * E;
        conv_dw3_row(gb, rows, j->wk, j->bias, yr, j->lo, j->hi, j->cl_b);
        if (j->epi_b && j->epi_b->add_kind != WNN_EPI_ADD_CHANNEL) {
            cpu_epi_tile(j->epi_b, yr, r * OW * E, OW * E, 0, 1);
        } else if (j->epi_b) { /* pixel by pixel: channels 0 .. E - 1 */
            for (int64_t ow = 0; ow < OW; ow++) {
                cpu_epi_tile(j->epi_b, yr + ow * E, (r * OW + ow) * E, E, 0, 1);
            }
        }
    }
}

wnn_status
cpu_conv_pair(const cpu_call *ka, const cpu_call *kb, wnn_error *err)
{
    const wnn_conv2d_options *oa = ka->options, *ob = kb->options;
    geom ga, gb;
    geom_from(&ga, &ka->lowered->u.conv);
    geom_from(&gb, &kb->lowered->u.conv);
    ga.epi = ka->epi;
    gb.epi = kb->epi;
    const int64_t E = ga.O, OP = (E + 15) / 16 * 16, W = ga.W;
    float *own_a = NULL, *own_b = NULL;
    const float *wt = conv_direct_pack(ka, &ga, oa->filter_layout, ka->in[1],
                                       &own_a);
    const float *wk = conv_dw_filter(kb, &gb, ob->filter_layout, kb->in[1],
                                     &own_b);
    float *bp = fcalloc((size_t)OP + 16);
    float *zeros = fcalloc((size_t)(W * E) + 16);
    int nt = cpu_num_threads();
    int64_t RS = 2 * gb.dh + 1, ring_floats = (RS * W * E + 15) / 16 * 16 + 16;
    float *rings = falloc((size_t)(ring_floats * nt));
    int64_t *tags = malloc(sizeof(int64_t) * (size_t)(RS * nt));
    wnn_status st = WNN_OK;
    if (!wt || !wk || !bp || !zeros || !rings || !tags) {
        st = cpu_fail(kb, err, "out of memory");
        goto done;
    }
    if (oa->bias) {
        memcpy(bp, ka->in[oa->bias - 1], (size_t)E * sizeof(float));
    }
    for (int64_t i = 0; i < RS * nt; i++) {
        tags[i] = -1;
    }
    float clamp_a[3], clamp_b[3];
    const float *res_a, *cl_a, *res_b, *cl_b;
    bool reg_a = reg_epi_of(ga.epi, clamp_a, &res_a, &cl_a);
    bool reg_b = reg_epi_of(gb.epi, clamp_b, &res_b, &cl_b) && !res_b;
    if (!reg_b) {
        cl_b = NULL;
    }
    pair_job j = {.ga = &ga, .gb = &gb, .x = ka->in[0], .wt = wt, .bp = bp,
                  .OP = OP, .res_a = res_a, .cl_a = cl_a,
                  .epi_a = reg_a ? NULL : ga.epi, .wk = wk,
                  .bias = ob->bias ? kb->in[ob->bias - 1] : NULL,
                  .cl_b = cl_b, .epi_b = reg_b ? NULL : gb.epi,
                  .y = kb->out[0], .zeros = zeros, .rings = rings,
                  .tags = tags, .RS = RS, .ring_floats = ring_floats};
    conv_dw3_cols(&gb, &j.lo, &j.hi);
    /* rows of the depthwise output; each thread's own run is one band
     * (cpu_parallel_for_dynamic), the rows it steals cost their own
     * expansion rows */
    cpu_parallel_for_dynamic(gb.N * gb.OH, 1, nt, pair_body, &j);
    if (ga.epi) {
        ga.epi->applied = true;
    }
    if (gb.epi) {
        gb.epi->applied = true;
    }
done:
    free(own_a);
    free(own_b);
    free(bp);
    free(zeros);
    free(rings);
    free(tags);
    return st;
}
#else
bool
cpu_conv_pair_fuses(const cpu_config *cfg, const wnn_conv_params *a,
                    const wnn_conv_params *b)
{
    (void)cfg, (void)a, (void)b;
    return false;
}

wnn_status
cpu_conv_pair(const cpu_call *ka, const cpu_call *kb, wnn_error *err)
{
    (void)ka;
    return cpu_fail(kb, err, "conv pairs need the direct kernels");
}
#endif
