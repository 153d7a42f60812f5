/* conv2d.c -- conv2d: the choice of path (conv.h has the overview and the
 * files of each algorithm). */
#include "conv.h"

/* ---- conv2d --------------------------------------------------------------- */
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
    wnn_status st;
    if (!x || !w || (o->bias && !b) || !y) {
        st = cpu_fail(k, err, "out of memory");
    } else if (g.G == g.C && g.Cg == 1) {
        st = conv_depthwise(k, err, &g, o->filter_layout, x, w, b, y);
#if HAVE_DIRECT
    } else if (g.nhwc && winograd_usable(k, &g, x, w)) {
        /* (also where the direct kernel would not run: AVX2 on rows
         * narrower than its blocks, 14 x 14 3x3 convolutions) */
        st = conv_winograd_nhwc(k, err, &g, o->filter_layout, x, w, b, y);
    } else if ((direct_usable(&g) || direct_grouped_usable(&g)) && g.nhwc) {
        st = conv_direct_nhwc(k, err, &g, o->filter_layout, x, w, b, y);
    } else if (direct_usable(&g) && g.KH == 1 && g.KW == 1 && g.sh == 1 &&
               g.sw == 1 && g.pt == 0 && g.pl == 0 && g.OH == g.H &&
               g.OW == g.W) {
        st = conv_direct_1x1_nchw(k, err, &g, o->filter_layout, x, w, b, y);
    } else if (direct_usable(&g) && g.KH * g.KW > 1) {
        st = conv_direct_nchw(k, err, &g, o->filter_layout, x, w, b, y);
#endif
    } else {
        st = conv_gemm(k, err, &g, o->filter_layout, x, w, b, y);
    }
    if (st == WNN_OK && oy) {
        cpu_from_f32(oy, k->out[0], t, ny);
    }
    free(ox);
    free(ow);
    free(ob);
    free(oy);
    return st;
}
