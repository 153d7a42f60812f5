/* pool2d.c -- field table, tensor limits and checker of averagePool2d,
 * l2Pool2d and maxPool2d -- #api-mlgraphbuilder-pool2d.
 *
 * Two steps of the spec's "create a pooling operation" are not applied as
 * written, because taken literally they reject graphs that the WPT
 * validation tests (webnn/validation_tests/pooling.https.any.js) require to
 * build, and the spec editors call them flaws (webmachinelearning/webnn
 * PR #770 discussion):
 *  - "If options.outputSizes exists, or if options.padding does not exist,
 *    then set options.padding to « 0, 0, 0, 0 »": padding is kept when
 *    outputSizes is given (only an absent padding becomes zeros); WPT's
 *    "[1, 3, 7, 7], window 4, padding 1, strides 2, outputSizes [4, 4]"
 *    must give [1, 3, 4, 4], which needs the padding.
 *  - "If [outputSizes'] items are not smaller than the items at the same
 *    dimension for options.strides, then throw": WPT builds outputSizes
 *    [3, 3] and [4, 4] with strides [2, 2]; outputSizes is instead checked
 *    against the floor/ceil output sizes, as the shape calculation says. */
#include "ops_internal.h"

static const char *const layouts[] = { "nchw", "nhwc", NULL };
static const char *const roundings[] = { "floor", "ceil", NULL };

WNN_OPTIONS_TABLE(wnn_pool2d_options, WNN_POOL2D_OPTIONS);

/* #tensor-limits-pooling-averagepool2d-l2pool2d */
const wnn_op_limits wnn_limits_pool2d_float = {
    1, 2, { { "input", WNN_DT_FLOAT, 4, 4 },
            { "output", WNN_DT_FLOAT, 4, 4 } } };
/* #tensor-limits-pooling-maxpool2d */
const wnn_op_limits wnn_limits_max_pool2d = {
    1, 2, { { "input", WNN_DT_ANY, 4, 4 }, { "output", WNN_DT_ANY, 4, 4 } } };

/* An IDL sequence given as one integer (the Python layer accepts integers
 * for "integer or sequence" unions) is not a sequence here. */
static wnn_status
check_list(wnn_check *c, const wnn_u32_list *l, const char *arg, uint32_t n,
           bool nonzero)
{
    if (l->scalar) {
        return wnn_fail(c, arg, "expected a sequence, got an integer");
    }
    if (l->n != n) {
        return wnn_fail(c, arg, "has %u items, expected %u", l->n, n);
    }
    for (uint32_t i = 0; nonzero && i < n; i++) {
        if (l->v[i] == 0) {
            return wnn_fail(c, arg, "item %u is 0", i);
        }
    }
    return WNN_OK;
}

/* floor / ceil of "calculate conv output size" (#calculate-conv-output-size):
 * (inputSize - effectiveWindow + padBegin + padEnd) / stride + 1, exact in
 * 64-bit integers (every term is below 2^35 or the window does not fit). */
static void
out_sizes(uint32_t in, uint32_t window, uint32_t pb, uint32_t pe, uint32_t s,
          uint32_t d, int64_t *fl, int64_t *ce)
{
    uint64_t eff = (uint64_t)(window - 1) * d + 1; /* < 2^64 */
    uint64_t span = (uint64_t)in + pb + pe;        /* < 2^34 */
    if (eff > span + (uint64_t)s) {
        /* num <= -stride: floor and ceil are both <= 0 */
        *fl = *ce = 0;
        return;
    }
    int64_t num = (int64_t)span - (int64_t)eff; /* > -2^33 */
    if (num >= 0) {
        *fl = num / s + 1;
        *ce = (num + (int64_t)s - 1) / s + 1;
    } else {
        *fl = -((-num + (int64_t)s - 1) / s) + 1;
        *ce = -((-num) / s) + 1;
    }
}

/* "create a pooling operation" -- #api-mlgraphbuilder-pool2d.  The data
 * type (averagePool2d and l2Pool2d: float32 or float16) and rank 4 are
 * checked by the builder from the limits tables. */
wnn_status
wnn_check_pool2d(wnn_check *c)
{
    wnn_pool2d_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *x = &c->in[0];
    bool nhwc = r->layout == 1;
    uint32_t batches = x->shape[0];
    uint32_t channels = nhwc ? x->shape[3] : x->shape[1];
    uint32_t ih = nhwc ? x->shape[1] : x->shape[2];
    uint32_t iw = nhwc ? x->shape[2] : x->shape[3];

    if (r->window_dimensions.present) {
        if (check_list(c, &r->window_dimensions, "options.windowDimensions", 2,
                       true) != WNN_OK) {
            return WNN_ERR;
        }
        r->window[0] = r->window_dimensions.v[0];
        r->window[1] = r->window_dimensions.v[1];
    } else {
        r->window[0] = ih;
        r->window[1] = iw;
    }
    if (r->padding.present) {
        if (check_list(c, &r->padding, "options.padding", 4, false) != WNN_OK) {
            return WNN_ERR;
        }
        for (int i = 0; i < 4; i++) {
            r->pad[i] = r->padding.v[i];
        }
    } else {
        r->pad[0] = r->pad[1] = r->pad[2] = r->pad[3] = 0;
    }
    if (r->strides.present) {
        if (check_list(c, &r->strides, "options.strides", 2, true) != WNN_OK) {
            return WNN_ERR;
        }
        r->stride[0] = r->strides.v[0];
        r->stride[1] = r->strides.v[1];
    } else {
        r->stride[0] = r->stride[1] = 1;
    }
    if (r->output_sizes.present &&
        check_list(c, &r->output_sizes, "options.outputSizes", 2, false) !=
            WNN_OK) {
        return WNN_ERR;
    }
    if (r->dilations.present) {
        if (check_list(c, &r->dilations, "options.dilations", 2, true) !=
            WNN_OK) {
            return WNN_ERR;
        }
        r->dilation[0] = r->dilations.v[0];
        r->dilation[1] = r->dilations.v[1];
    } else {
        r->dilation[0] = r->dilation[1] = 1;
    }

    /* Calculate the output shape. */
    int64_t fh, chh, fw, cw, oh, ow;
    out_sizes(ih, r->window[0], r->pad[0], r->pad[1], r->stride[0],
              r->dilation[0], &fh, &chh);
    out_sizes(iw, r->window[1], r->pad[2], r->pad[3], r->stride[1],
              r->dilation[1], &fw, &cw);
    if (r->output_sizes.present) {
        oh = r->output_sizes.v[0];
        ow = r->output_sizes.v[1];
        if (!(oh == fh && ow == fw) && !(oh == chh && ow == cw)) {
            return wnn_fail(c, "options.outputSizes",
                            "[%lld, %lld] is neither the floor [%lld, %lld] "
                            "nor the ceil [%lld, %lld] of the output sizes",
                            (long long)oh, (long long)ow, (long long)fh,
                            (long long)fw, (long long)chh, (long long)cw);
        }
    } else if (r->output_shape_rounding == 1) {
        oh = chh;
        ow = cw;
    } else {
        oh = fh;
        ow = fw;
    }
    if (oh < 1 || oh > (int64_t)WNN_MAX_DIM || ow < 1 ||
        ow > (int64_t)WNN_MAX_DIM) {
        return wnn_fail(c, r->output_sizes.present ? "options.outputSizes"
                                                   : "options.windowDimensions",
                        "the output height %lld or width %lld is not a valid "
                        "dimension (input %ux%u, window %ux%u, padding "
                        "[%u, %u, %u, %u], strides [%u, %u], dilations "
                        "[%u, %u])",
                        (long long)oh, (long long)ow, ih, iw, r->window[0],
                        r->window[1], r->pad[0], r->pad[1], r->pad[2],
                        r->pad[3], r->stride[0], r->stride[1], r->dilation[0],
                        r->dilation[1]);
    }
    wnn_desc *y = &c->out[0];
    y->dtype = x->dtype;
    y->rank = 4;
    y->shape[0] = batches;
    if (nhwc) {
        y->shape[1] = (uint32_t)oh;
        y->shape[2] = (uint32_t)ow;
        y->shape[3] = channels;
    } else {
        y->shape[1] = channels;
        y->shape[2] = (uint32_t)oh;
        y->shape[3] = (uint32_t)ow;
    }
    c->n_out = 1;
    return WNN_OK;
}
