/* conv2d.c -- field tables, tensor limits and checkers of conv2d and
 * convTranspose2d (#api-mlgraphbuilder-conv2d,
 * #api-mlgraphbuilder-convtranspose2d).
 *
 * The checkers follow the spec's steps in order.  They store the padding,
 * strides and dilations with their defaults applied in the options struct
 * (pad / stride / dilation), which is what the kernels read. */
#include <stdio.h>

#include "ops_internal.h"

#define F WNN_DT_FLOAT

static const char *const input_layouts[] = { "nchw", "nhwc", NULL };
static const char *const conv2d_filter_layouts[] = { "oihw", "hwio", "ohwi",
                                                     "ihwo", NULL };
static const char *const conv_transpose2d_filter_layouts[] = { "iohw", "hwoi",
                                                               "ohwi", NULL };

WNN_OPTIONS_TABLE(wnn_conv2d_options, WNN_CONV2D_OPTIONS);

WNN_OPTIONS_TABLE(wnn_conv_transpose2d_options, WNN_CONV_TRANSPOSE2D_OPTIONS);

/* #tensor-limits-conv2d */
const wnn_op_limits wnn_limits_conv2d = {
    3, 4, { { "input", F, 4, 4 }, { "filter", F, 4, 4 }, { "bias", F, 1, 1 },
            { "output", F, 4, 4 } } };
/* #tensor-limits-convTranspose2d */
const wnn_op_limits wnn_limits_conv_transpose2d = {
    3, 4, { { "input", F, 4, 4 }, { "filter", F, 4, 4 }, { "bias", F, 1, 1 },
            { "output", F, 4, 4 } } };

/* ---- shared steps -------------------------------------------------------- */

/* "If options.<name> does not exist, set it to the list <dflt>; otherwise,
 * if its size is not n, throw" (and, for strides and dilations, "if any
 * item is 0, throw").  Writes the values to out[0..n). */
static wnn_status
list_option(wnn_check *c, const wnn_u32_list *l, const char *arg, uint32_t n,
            uint32_t dflt, bool nonzero, uint32_t *out)
{
    if (!l->present) {
        for (uint32_t i = 0; i < n; i++) {
            out[i] = dflt;
        }
        return WNN_OK;
    }
    if (l->n != n) {
        return wnn_fail(c, arg, "has %u items, expected %u", l->n, n);
    }
    for (uint32_t i = 0; i < n; i++) {
        if (nonzero && l->v[i] == 0) {
            return wnn_fail(c, arg, "item %u is 0", i);
        }
        out[i] = l->v[i];
    }
    return WNN_OK;
}

/* Padding, strides and dilations: the steps both operators share. */
static wnn_status
common_options(wnn_check *c, const wnn_u32_list *padding,
               const wnn_u32_list *strides, const wnn_u32_list *dilations,
               uint32_t *pad, uint32_t *stride, uint32_t *dilation)
{
    if (list_option(c, padding, "options.padding", 4, 0, false, pad) !=
            WNN_OK ||
        list_option(c, strides, "options.strides", 2, 1, true, stride) !=
            WNN_OK ||
        list_option(c, dilations, "options.dilations", 2, 1, true,
                    dilation) != WNN_OK) {
        return WNN_ERR;
    }
    return WNN_OK;
}

static wnn_status
check_bias(wnn_check *c, uint32_t bias, uint32_t out_channels)
{
    char s[64];
    if (!bias) {
        return WNN_OK;
    }
    const wnn_desc *b = &c->in[bias - 1];
    if (b->rank != 1 || b->shape[0] != out_channels) {
        return wnn_fail(c, "options.bias", "shape %s is not [%u] (output "
                        "channels)", wnn_shape_str(b->shape, b->rank, s,
                                                   sizeof(s)), out_channels);
    }
    return wnn_check_same_dtype(c, 0, bias - 1, "input", "options.bias");
}

static void
set_output(wnn_check *c, int layout, uint32_t batches, uint32_t channels,
           uint32_t h, uint32_t w)
{
    wnn_desc *o = &c->out[0];
    o->dtype = c->in[0].dtype;
    o->rank = 4;
    o->shape[0] = batches;
    if (layout == WNN_LAYOUT_NCHW) {
        o->shape[1] = channels;
        o->shape[2] = h;
        o->shape[3] = w;
    } else {
        o->shape[1] = h;
        o->shape[2] = w;
        o->shape[3] = channels;
    }
    c->n_out = 1;
}

/* #api-mlgraphbuilder-conv2d "calculate conv output size", then floor and
 * "valid dimension": 0 and the size in *out, or -1 after wnn_fail. */
static int
conv_output_size(wnn_check *c, const char *what, uint32_t input,
                 uint32_t filter, uint32_t begin, uint32_t end,
                 uint32_t stride, uint32_t dilation, uint32_t *out)
{
    /* ( filterSize - 1 ) * dilation + 1 < 2^63; every term fits in int64 */
    int64_t effective = (int64_t)(filter - 1) * dilation + 1;
    int64_t num = (int64_t)input + begin + end - effective;
    if (num < 0) {
        /* (num / stride + 1) < 1: floor is 0 or negative */
        wnn_fail(c, "filter",
                 "effective filter %s %lld (filter %u, dilation %u) is larger "
                 "than the padded input %s %lld, so the output %s is not a "
                 "valid dimension", what, (long long)effective, filter,
                 dilation, what, (long long)input + begin + end, what);
        return -1;
    }
    int64_t size = num / stride + 1;
    if (size > (int64_t)WNN_MAX_DIM) {
        wnn_fail(c, "options.padding",
                 "output %s %lld is not a valid dimension (larger than %u)",
                 what, (long long)size, WNN_MAX_DIM);
        return -1;
    }
    *out = (uint32_t)size;
    return 0;
}

/* ---- conv2d -- #api-mlgraphbuilder-conv2d --------------------------------- */
wnn_status
wnn_check_conv2d(wnn_check *c)
{
    wnn_conv2d_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0], *f = &c->in[1];
    /* input and filter: data types and ranks by the limits table; the
     * filter's type is "same as input" */
    if (wnn_check_same_dtype(c, 0, 1, "input", "filter") != WNN_OK) {
        return WNN_ERR;
    }
    if (common_options(c, &r->padding, &r->strides, &r->dilations, r->pad,
                       r->stride, r->dilation) != WNN_OK) {
        return WNN_ERR;
    }
    if (r->groups == 0) {
        return wnn_fail(c, "options.groups", "groups is 0");
    }
    /* Calculate the output shape. */
    uint32_t batches, in_c, in_h, in_w;
    if (r->input_layout == WNN_LAYOUT_NCHW) {
        batches = in->shape[0], in_c = in->shape[1], in_h = in->shape[2],
        in_w = in->shape[3];
    } else {
        batches = in->shape[0], in_h = in->shape[1], in_w = in->shape[2],
        in_c = in->shape[3];
    }
    uint32_t f_h, f_w, f_in, out_c;
    const uint32_t *fs = f->shape;
    switch (r->filter_layout) {
    case WNN_CONV_HWIO: f_h = fs[0], f_w = fs[1], f_in = fs[2], out_c = fs[3]; break;
    case WNN_CONV_OHWI: out_c = fs[0], f_h = fs[1], f_w = fs[2], f_in = fs[3]; break;
    case WNN_CONV_IHWO: f_in = fs[0], f_h = fs[1], f_w = fs[2], out_c = fs[3]; break;
    default: out_c = fs[0], f_in = fs[1], f_h = fs[2], f_w = fs[3]; break;
    }
    if (in_c % r->groups != 0) {
        return wnn_fail(c, "options.groups",
                        "input channels %u / groups %u is not an integer",
                        in_c, r->groups);
    }
    if (in_c / r->groups != f_in) {
        return wnn_fail(c, "filter",
                        "input channels %u (in the %s filter layout) are not "
                        "input channels %u / groups %u",
                        f_in, conv2d_filter_layouts[r->filter_layout], in_c,
                        r->groups);
    }
    if (out_c % r->groups != 0) {
        return wnn_fail(c, "options.groups",
                        "output channels %u / groups %u is not an integer",
                        out_c, r->groups);
    }
    if (check_bias(c, r->bias, out_c) != WNN_OK) {
        return WNN_ERR;
    }
    uint32_t out_h, out_w;
    if (conv_output_size(c, "height", in_h, f_h, r->pad[0], r->pad[1],
                         r->stride[0], r->dilation[0], &out_h) != 0 ||
        conv_output_size(c, "width", in_w, f_w, r->pad[2], r->pad[3],
                         r->stride[1], r->dilation[1], &out_w) != 0) {
        return WNN_ERR;
    }
    set_output(c, r->input_layout, batches, out_c, out_h, out_w);
    return WNN_OK;
}

/* ---- convTranspose2d -- #api-mlgraphbuilder-convtranspose2d --------------- */

/* "calculate convtranspose output size", in 128 bits (the products of two
 * 32-bit numbers and their sums do not fit in 64). */
static __int128
conv_transpose_size(uint32_t input, uint32_t filter, uint32_t begin,
                    uint32_t end, uint32_t stride, uint32_t dilation)
{
    __int128 effective = (__int128)(filter - 1) * dilation + 1;
    return ((__int128)input - 1) * stride + effective - begin - end;
}

/* A 128-bit integer in decimal. */
static const char *
i128_str(__int128 v, char *buf, size_t n)
{
    char tmp[48];
    int k = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        tmp[k++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && k < 45);
    size_t j = 0;
    if (neg && j + 1 < n) {
        buf[j++] = '-';
    }
    while (k > 0 && j + 1 < n) {
        buf[j++] = tmp[--k];
    }
    buf[j] = '\0';
    return buf;
}

static int
transposed_output_size(wnn_check *c, const char *what, int axis,
                       __int128 calculated, const wnn_conv_transpose2d_options *o,
                       const uint32_t *out_pad, uint32_t *out)
{
    char b1[48], b2[48];
    __int128 size;
    if (o->output_sizes.present) {
        size = o->output_sizes.v[axis];
        if (size < calculated || size >= calculated + o->stride[axis]) {
            wnn_fail(c, "options.outputSizes",
                     "output %s %u is not in [%s, %s) (the calculated size "
                     "and that plus the stride)", what,
                     o->output_sizes.v[axis],
                     i128_str(calculated, b1, sizeof(b1)),
                     i128_str(calculated + o->stride[axis], b2, sizeof(b2)));
            return -1;
        }
    } else {
        size = calculated + out_pad[axis];
    }
    if (size <= 0 || size > (__int128)WNN_MAX_DIM) {
        wnn_fail(c, o->output_sizes.present ? "options.outputSizes"
                                            : "options.padding",
                 "output %s %s is not a valid dimension", what,
                 i128_str(size, b1, sizeof(b1)));
        return -1;
    }
    *out = (uint32_t)size;
    return 0;
}

wnn_status
wnn_check_conv_transpose2d(wnn_check *c)
{
    wnn_conv_transpose2d_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *in = &c->in[0], *f = &c->in[1];
    if (wnn_check_same_dtype(c, 0, 1, "input", "filter") != WNN_OK) {
        return WNN_ERR;
    }
    if (common_options(c, &r->padding, &r->strides, &r->dilations, r->pad,
                       r->stride, r->dilation) != WNN_OK) {
        return WNN_ERR;
    }
    uint32_t out_pad[2];
    if (list_option(c, &r->output_padding, "options.outputPadding", 2, 0,
                    false, out_pad) != WNN_OK) {
        return WNN_ERR;
    }
    if (r->output_sizes.present) {
        if (r->output_sizes.n != 2) {
            return wnn_fail(c, "options.outputSizes",
                            "has %u items, expected 2", r->output_sizes.n);
        }
    } else if (out_pad[0] >= r->stride[0] || out_pad[1] >= r->stride[1]) {
        return wnn_fail(c, "options.outputPadding",
                        "[%u, %u] is not smaller than the strides [%u, %u]",
                        out_pad[0], out_pad[1], r->stride[0], r->stride[1]);
    }
    if (r->groups == 0) {
        return wnn_fail(c, "options.groups", "groups is 0");
    }
    /* Calculate the output shape. */
    uint32_t batches, in_c, in_h, in_w;
    if (r->input_layout == WNN_LAYOUT_NCHW) {
        batches = in->shape[0], in_c = in->shape[1], in_h = in->shape[2],
        in_w = in->shape[3];
    } else {
        batches = in->shape[0], in_h = in->shape[1], in_w = in->shape[2],
        in_c = in->shape[3];
    }
    uint32_t f_h, f_w, f_in, f_out;
    const uint32_t *fs = f->shape;
    switch (r->filter_layout) {
    case WNN_CONVT_HWOI: f_h = fs[0], f_w = fs[1], f_out = fs[2], f_in = fs[3]; break;
    case WNN_CONVT_OHWI: f_out = fs[0], f_h = fs[1], f_w = fs[2], f_in = fs[3]; break;
    default: f_in = fs[0], f_out = fs[1], f_h = fs[2], f_w = fs[3]; break;
    }
    if (in_c != f_in) {
        return wnn_fail(c, "filter",
                        "input channels %u (in the %s filter layout) are not "
                        "the input's %u",
                        f_in, conv_transpose2d_filter_layouts[r->filter_layout],
                        in_c);
    }
    uint64_t out_c = (uint64_t)f_out * r->groups;
    if (out_c > WNN_MAX_DIM) {
        return wnn_fail(c, "options.groups",
                        "output channels %u * groups %u = %llu is not a valid "
                        "dimension", f_out, r->groups,
                        (unsigned long long)out_c);
    }
    if (check_bias(c, r->bias, (uint32_t)out_c) != WNN_OK) {
        return WNN_ERR;
    }
    __int128 calc_h = conv_transpose_size(in_h, f_h, r->pad[0], r->pad[1],
                                          r->stride[0], r->dilation[0]);
    __int128 calc_w = conv_transpose_size(in_w, f_w, r->pad[2], r->pad[3],
                                          r->stride[1], r->dilation[1]);
    uint32_t out_h, out_w;
    if (transposed_output_size(c, "height", 0, calc_h, r, out_pad, &out_h) !=
            0 ||
        transposed_output_size(c, "width", 1, calc_w, r, out_pad, &out_w) !=
            0) {
        return WNN_ERR;
    }
    /* The spec puts no condition on inputChannels % groups here (unlike
     * conv2d): a graph that needs one is refused at build (compiler/lower/
     * lower.c), where no computation of the spec's is defined for it. */
    set_output(c, r->input_layout, batches, (uint32_t)out_c, out_h, out_w);
    return WNN_OK;
}
