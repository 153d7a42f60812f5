/* conv2d.c -- conv2d: the choice of path (conv.h has the overview and the
 * files of each algorithm). */
#include <math.h>

#include "conv.h"

/* ---- input scales (cpu_call.in_scale) ------------------------------------ */
/* conv(x * s, W) computed as conv(x, W diag(s)), s per input channel: the
 * end of a squeeze-and-excitation block (compiler/fuse.h,
 * WNN_FUSE_IN_SCALE), without the pass over x.  Each term is then rounded
 * as x (w s) instead of (x s) w: the same but for the last bit of some
 * terms where no w s overflows or falls into the subnormals: every |s| <= 1
 * (a sigmoid's, a hardSigmoid's) and 0 or >= 2^-64; a NaN makes every
 * output NaN both ways. */
static bool
scale_exact(const float *s, int64_t C)
{
    for (int64_t c = 0; c < C; c++) {
        float a = fabsf(s[c]);
        if (!(isnan(a) || a == 0.0f || (a <= 1.0f && a >= 0x1p-64f))) {
            return false;
        }
    }
    return true;
}

/* x * s as the mul computes it (another s), channel c of element i:
 * (i / cs) % C */
static float *
scaled_input(const float *x, const float *s, const geom *g)
{
    const uint64_t n = (uint64_t)(g->N * g->C * g->H * g->W),
                   cs = g->nhwc ? 1 : (uint64_t)(g->H * g->W);
    float *d = falloc(n);
    for (uint64_t i = 0; d && i < n; i++) {
        d[i] = x[i] * s[(i / cs) % (uint64_t)g->C];
    }
    return d;
}

/* W diag(s) in W's layout (groups 1), for the paths other than the direct
 * nhwc one (which scales its packed filter: direct.c) */
static float *
scaled_filter(const float *w, const float *s, const geom *g, int layout)
{
    int64_t st[4], d[4] = { g->O, g->C, g->KH, g->KW };
    conv_filter_strides(layout, g, st);
    float *o = falloc((size_t)(g->O * g->C * g->KH * g->KW));
    for (int64_t a = 0; o && a < d[0]; a++) {
        for (int64_t c = 0; c < d[1]; c++) {
            for (int64_t h = 0; h < d[2]; h++) {
                for (int64_t v = 0; v < d[3]; v++) {
                    int64_t i = a * st[0] + c * st[1] + h * st[2] + v * st[3];
                    o[i] = w[i] * s[c];
                }
            }
        }
    }
    return o;
}

/* ---- conv2d --------------------------------------------------------------- */
/* the paths (conv.h), in the order they are tried */
enum { P_DEPTHWISE, P_WINOGRAD, P_DIRECT_NHWC, P_DIRECT_1X1_NCHW,
       P_DIRECT_NCHW, P_GEMM };

static int
conv_path(const cpu_call *k, const geom *g, const float *x, const float *w)
{
    if (g->G == g->C && g->Cg == 1) {
        return P_DEPTHWISE;
    }
#if HAVE_DIRECT
    if (g->nhwc && winograd_usable(k, g, x, w)) {
        /* (also where the direct kernel would not run: AVX2 on rows
         * narrower than its blocks, 14 x 14 3x3 convolutions) */
        return P_WINOGRAD;
    }
    if ((direct_usable(g) || direct_grouped_usable(g) ||
         conv_direct_gathered(g)) && g->nhwc) {
        return P_DIRECT_NHWC;
    }
    if (direct_usable(g) && g->KH == 1 && g->KW == 1 && g->sh == 1 &&
        g->sw == 1 && g->pt == 0 && g->pl == 0 && g->OH == g->H &&
        g->OW == g->W) {
        return P_DIRECT_1X1_NCHW;
    }
    if (direct_usable(g) && g->KH * g->KW > 1) {
        return P_DIRECT_NCHW;
    }
#else
    (void)k, (void)x, (void)w;
#endif
    return P_GEMM;
}

wnn_status
cpu_conv2d(const cpu_call *k, wnn_error *err)
{
    const wnn_conv2d_options *o = k->options;
    const wnn_desc *xd = &k->in_desc[0], *wd = &k->in_desc[1],
                   *yd = &k->out_desc[0];
    wnn_dtype t = yd->dtype;
    geom g;
    geom_from(&g, &k->lowered->u.conv);
    g.direct_ok = k->config->conv_direct;
    g.winograd_ok = k->config->conv_direct && k->config->conv_winograd;
    g.gather_ok = k->config->conv_direct && k->config->conv_gather;
    g.epi = t == WNN_FLOAT32 ? k->epi : NULL;

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
    /* an input scale (float32 only, as fuse.c fuses it): an s outside the
     * exact range multiplies x before the path is chosen (Winograd's scan
     * must see x * s) */
    cpu_call ks;
    float *sx = NULL, *sw = NULL;
    const bool scaled = k->in_scale && t == WNN_FLOAT32;
    if (scaled && x && !scale_exact(k->in_scale, g.C)) {
        x = sx = scaled_input(x, k->in_scale, &g);
    }
    wnn_status st;
    if (!x || !w || (o->bias && !b) || !y) {
        st = cpu_fail(k, err, "out of memory");
        goto done;
    }
    const int path = conv_path(k, &g, x, w);
    if (scaled && !sx) {
        /* the direct nhwc path scales its packed constant filter per call
         * (groups 1); the others read a scaled copy (Winograd chose from
         * the filter's scan: |w s| <= |w|) */
        if (path == P_DIRECT_NHWC && g.G == 1 && (k->const_in & 2u)) {
            g.in_scale = k->in_scale;
        } else {
            w = sw = scaled_filter(w, k->in_scale, &g, o->filter_layout);
            ks = *k;
            ks.const_in &= ~2u; /* a filter of this call only */
            k = &ks;
            if (!w) {
                st = cpu_fail(k, err, "out of memory");
                goto done;
            }
        }
    }
    switch (path) {
    case P_DEPTHWISE:
        st = conv_depthwise(k, err, &g, o->filter_layout, x, w, b, y);
        break;
#if HAVE_DIRECT
    case P_WINOGRAD:
        st = conv_winograd_nhwc(k, err, &g, o->filter_layout, x, w, b, y);
        break;
    case P_DIRECT_NHWC:
        st = conv_direct_nhwc(k, err, &g, o->filter_layout, x, w, b, y);
        break;
    case P_DIRECT_1X1_NCHW:
        st = conv_direct_1x1_nchw(k, err, &g, o->filter_layout, x, w, b, y);
        break;
    case P_DIRECT_NCHW:
        st = conv_direct_nchw(k, err, &g, o->filter_layout, x, w, b, y);
        break;
#endif
    default:
        st = conv_gemm(k, err, &g, o->filter_layout, x, w, b, y);
        break;
    }
    if (st == WNN_OK && oy) {
        cpu_from_f32(oy, k->out[0], t, ny);
    }
done:
    free(ox);
    free(ow);
    free(sx);
    free(sw);
    free(ob);
    free(oy);
    return st;
}
