/* triangular.c -- the family TRIANGULAR (lower.h): the input as
 * [n / (h w), h, w], the diagonal and the part kept, once per node at
 * compile; cpu/kernels/movement/ and the CUDA triangular launcher read
 * it. */
#include "../../ops/ops_internal.h"
#include "lower.h"

WNN_LOWER_FN(wnn_lower_op_triangular)
{
    (void)views, (void)err;
    const wnn_triangular_options *o = node->options;
    const wnn_desc *d = &ir->operands[node->in[0]].desc;
    wnn_tri_params *p = &l->u.tri;
    l->kind = WNN_LOWER_TRI;
    p->h = d->shape[d->rank - 2];
    p->w = d->shape[d->rank - 1];
    p->diag = o->diagonal;
    p->upper = o->upper ? 1 : 0;
    return WNN_OK;
}
