/* resample2d.c -- field table, tensor limits and checker of resample2d --
 * #api-mlgraphbuilder-resample2d-method. */
#include <math.h>

#include "ops_internal.h"

static const char *const modes[] = { "nearest-neighbor", "linear", NULL };

WNN_OPTIONS_TABLE(wnn_resample2d_options, WNN_RESAMPLE2D_OPTIONS);

/* #tensor-limits-resample2d */
#define RS_TYPES (WNN_DT_FLOAT | WNN_DT(WNN_UINT8) | WNN_DT(WNN_INT8))
const wnn_op_limits wnn_limits_resample2d = {
    1, 2, { { "input", RS_TYPES, 4, 4 }, { "output", RS_TYPES, 4, 4 } } };

/* #api-mlgraphbuilder-resample2d-method.  Data type and rank 4 are checked
 * by the builder from the limits table.  axes must have 2 items (the
 * member's definition: "A list of length 2"; the shape calculation reads
 * scales[index] and sizes[index] for every index of axes). */
wnn_status
wnn_check_resample2d(wnn_check *c)
{
    wnn_resample2d_options *r = c->resolved; /* c->options stays as given */
    const wnn_desc *x = &c->in[0];
    double scale[2] = { 1.0, 1.0 };

    if (r->scales.present) {
        if (r->scales.n != 2) {
            return wnn_fail(c, "options.scales", "has %u items, expected 2",
                            r->scales.n);
        }
        for (uint32_t i = 0; i < 2; i++) {
            if (!(r->scales.v[i] > 0.0f)) {
                return wnn_fail(c, "options.scales",
                                "item %u (%g) is not greater than 0", i,
                                (double)r->scales.v[i]);
            }
            scale[i] = r->scales.v[i];
        }
    }
    if (r->sizes.present) {
        if (r->sizes.scalar) {
            return wnn_fail(c, "options.sizes",
                            "expected a sequence, got an integer");
        }
        if (r->sizes.n != 2) {
            return wnn_fail(c, "options.sizes", "has %u items, expected 2",
                            r->sizes.n);
        }
        for (uint32_t i = 0; i < 2; i++) {
            if (r->sizes.v[i] == 0) {
                return wnn_fail(c, "options.sizes", "item %u is 0", i);
            }
        }
    }
    if (r->axes.present) {
        if (r->axes.scalar) {
            return wnn_fail(c, "options.axes",
                            "expected a sequence, got an integer");
        }
        if (r->axes.n != 2) {
            return wnn_fail(c, "options.axes", "has %u items, expected 2",
                            r->axes.n);
        }
        for (uint32_t i = 0; i < 2; i++) {
            if (r->axes.v[i] >= x->rank) {
                return wnn_fail(c, "options.axes",
                                "item %u (%u) is not in the range [0, %u)", i,
                                r->axes.v[i], x->rank);
            }
        }
        if (r->axes.v[0] == r->axes.v[1]) {
            return wnn_fail(c, "options.axes", "contains %u twice",
                            r->axes.v[0]);
        }
        r->axis[0] = r->axes.v[0];
        r->axis[1] = r->axes.v[1];
    } else {
        r->axis[0] = 2;
        r->axis[1] = 3;
    }

    /* Calculate the output shape. */
    wnn_desc *y = &c->out[0];
    *y = *x;
    for (uint32_t i = 0; i < 2; i++) {
        uint32_t in = x->shape[r->axis[i]];
        double size;
        if (r->sizes.present) {
            size = r->sizes.v[i];
        } else {
            /* the product of two numbers, as in JavaScript: a double */
            size = floor((double)in * scale[i]);
        }
        if (!(size >= 1.0) || size > (double)WNN_MAX_DIM) {
            return wnn_fail(c, r->sizes.present ? "options.sizes"
                                                : "options.scales",
                            "output size %.17g of axis %u is not a valid "
                            "dimension", size, r->axis[i]);
        }
        y->shape[r->axis[i]] = (uint32_t)size;
    }
    c->n_out = 1;
    return WNN_OK;
}
