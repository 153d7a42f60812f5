/* transpose.c -- convTranspose2d (conv.h has the overview). */
#include "conv.h"

/* ---- convTranspose2d ------------------------------------------------------ */

/* nhwc: output row oh of image n, group gi = bias + the contributions
 * col[ih][iw][(kh, kw, oc)] of that image and group that land on it
 * (ih sh + kh dh - pt = oh, iw sw + kw dw - pl = ow). */
CPU_HOT_VOID(static, , gather_row_nhwc,
             (const geom *g, const float *col, const float *b, float *y,
              int64_t n, int64_t gi, int64_t oh),
             (g, col, b, y, n, gi, oh))
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
CPU_HOT_VOID(static, , scatter_plane,
             (const geom *g, const float *cp, float bias, float *yp),
             (g, cp, bias, yp))
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
    geom_from(&g, &k->lowered->u.conv);
    int64_t s[4]; /* filter strides in (i, o, h, w) order */
    switch (o->filter_layout) {
    case WNN_CONVT_HWOI:
        s[0] = 1, s[1] = g.C, s[2] = g.KW * g.Og * g.C, s[3] = g.Og * g.C;
        break;
    case WNN_CONVT_OHWI:
        s[0] = 1, s[1] = g.KH * g.KW * g.C, s[2] = g.KW * g.C, s[3] = g.C;
        break;
    default:
        s[0] = g.Og * g.KH * g.KW, s[1] = g.KH * g.KW, s[2] = g.KW, s[3] = 1;
        break;
    }

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
        y = oy = falloc(ny);
    }
    /* the filter as [C][Og][KH][KW] (nchw) or [C][KH][KW][Og] (nhwc) */
    float *wc = falloc((size_t)(g.C * M));
    float *col = falloc((size_t)(M * HW));
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
