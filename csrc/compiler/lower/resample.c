/* resample.c -- the family RESAMPLE (lower.h): resample2d's shapes, its
 * resampled axes in order and its mode, once per node at compile;
 * cpu/kernels/resample2d/ and the CUDA resample launcher read it. */
#include "../../ops/ops_internal.h"
#include "lower.h"

WNN_LOWER_FN(wnn_lower_op_resample)
{
    (void)views, (void)err;
    const wnn_resample2d_options *o = node->options;
    const wnn_desc *x = &ir->operands[node->in[0]].desc;
    const wnn_desc *y = &ir->operands[node->out[0]].desc;
    wnn_resample_params *p = &l->u.resample;
    l->kind = WNN_LOWER_RESAMPLE;
    p->linear = o->mode == 1;
    uint32_t a = o->axis[0], c = o->axis[1];
    p->ya = (int32_t)(a < c ? a : c);
    p->xa = (int32_t)(a < c ? c : a);
    for (int d = 0; d < 4; d++) {
        p->in[d] = x->shape[d];
        p->out[d] = y->shape[d];
    }
    return WNN_OK;
}
