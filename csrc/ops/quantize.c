/* quantize.c -- tensor limits and checkers of quantizeLinear and
 * dequantizeLinear (options: MLOperatorOptions only). */
#include "ops_internal.h"

#define N WNN_MAX_RANK
#define F WNN_DT_FLOAT
#define Q (WNN_DT(WNN_UINT8) | WNN_DT(WNN_INT8) | WNN_DT(WNN_UINT32) | \
           WNN_DT(WNN_INT32))

/* #tensor-limits-quantizelinear (scale: same type as input; scale and
 * zeroPoint: same rank as input -- checked below) */
const wnn_op_limits wnn_limits_quantize_linear = {
    3, 4, { { "input", F, 0, N }, { "scale", F, 0, N },
            { "zeroPoint", Q, 0, N }, { "output", Q, 0, N } } };
/* #tensor-limits-dequantizelinear (zeroPoint: same type as input) */
const wnn_op_limits wnn_limits_dequantize_linear = {
    3, 4, { { "input", Q, 0, N }, { "scale", F, 0, N },
            { "zeroPoint", Q, 0, N }, { "output", F, 0, N } } };

/* The steps common to both operators after the data type checks: ranks,
 * scale's shape == zeroPoint's shape, and blockwise broadcasting of both to
 * input's shape (#blockwise-broadcasting: same rank, and every dimension of
 * input an exact multiple of the other's). */
static wnn_status
check_scale_zero_point(wnn_check *c, wnn_dtype out_type)
{
    char s1[96], s2[96];
    const wnn_desc *in = &c->in[0], *sc = &c->in[1], *zp = &c->in[2];
    if (sc->rank != in->rank) {
        return wnn_fail(c, "scale", "rank %u is not input's rank %u",
                        sc->rank, in->rank);
    }
    if (zp->rank != in->rank) {
        return wnn_fail(c, "zeroPoint", "rank %u is not input's rank %u",
                        zp->rank, in->rank);
    }
    for (uint32_t i = 0; i < sc->rank; i++) {
        if (sc->shape[i] != zp->shape[i]) {
            return wnn_fail(c, "zeroPoint", "shape %s is not scale's shape %s",
                            wnn_shape_str(zp->shape, zp->rank, s1, sizeof(s1)),
                            wnn_shape_str(sc->shape, sc->rank, s2,
                                          sizeof(s2)));
        }
    }
    const char *names[2] = { "scale", "zeroPoint" };
    const wnn_desc *d[2] = { sc, zp };
    for (int k = 0; k < 2; k++) {
        for (uint32_t i = 0; i < in->rank; i++) {
            if (in->shape[i] % d[k]->shape[i] != 0) {
                return wnn_fail(
                    c, names[k],
                    "shape %s is not blockwise broadcastable to input's "
                    "shape %s (dimension %u: %u is not a multiple of %u)",
                    wnn_shape_str(d[k]->shape, d[k]->rank, s1, sizeof(s1)),
                    wnn_shape_str(in->shape, in->rank, s2, sizeof(s2)), i,
                    in->shape[i], d[k]->shape[i]);
            }
        }
    }
    c->out[0] = *in;
    c->out[0].dtype = out_type;
    c->n_out = 1;
    return WNN_OK;
}

/* quantizeLinear -- #api-mlgraphbuilder-quantizelinear */
wnn_status
wnn_check_quantize_linear(wnn_check *c)
{
    if (wnn_check_same_dtype(c, 0, 1, "input", "scale") != WNN_OK) {
        return WNN_ERR;
    }
    return check_scale_zero_point(c, c->in[2].dtype);
}

/* dequantizeLinear -- #api-mlgraphbuilder-dequantizelinear */
wnn_status
wnn_check_dequantize_linear(wnn_check *c)
{
    if (wnn_check_same_dtype(c, 0, 2, "input", "zeroPoint") != WNN_OK) {
        return WNN_ERR;
    }
    return check_scale_zero_point(c, c->in[1].dtype);
}
