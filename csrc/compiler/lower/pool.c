/* pool.c -- the window geometry of averagePool2d, l2Pool2d and maxPool2d
 * (lower.h), once per node at compile; cpu/kernels/pool2d/ and the CUDA
 * backend read it. */
#include "../../ops/ops_internal.h"
#include "lower.h"

void
wnn_lower_pool(wnn_pool_params *p, const wnn_node *node, const wnn_desc *x,
               const wnn_desc *y)
{
    const wnn_pool2d_options *o = node->options;
    bool nhwc = p->nhwc = o->layout != 0;
    p->N = x->shape[0];
    p->C = x->shape[nhwc ? 3 : 1];
    p->H = x->shape[nhwc ? 1 : 2];
    p->W = x->shape[nhwc ? 2 : 3];
    p->OH = y->shape[nhwc ? 1 : 2];
    p->OW = y->shape[nhwc ? 2 : 3];
    p->kh = o->window[0];
    p->kw = o->window[1];
    p->sh = o->stride[0];
    p->sw = o->stride[1];
    p->dh = o->dilation[0];
    p->dw = o->dilation[1];
    for (int i = 0; i < 4; i++) {
        p->pad[i] = o->pad[i];
    }
}

/* the family POOL (averagePool2d, l2Pool2d, maxPool2d) */
WNN_LOWER_FN(wnn_lower_op_pool)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_POOL;
    wnn_lower_pool(&l->u.pool, node, &ir->operands[node->in[0]].desc,
                   &ir->operands[node->out[0]].desc);
    return WNN_OK;
}
