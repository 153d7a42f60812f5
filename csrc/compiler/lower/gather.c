/* gather.c -- extents and strides of the gather and scatter operators
 * (lower.h), once per node at compile; cpu/kernels/gather_scatter/ and the
 * CUDA backend read them. */
#include "../../ops/ops_internal.h"
#include "lower.h"

static uint64_t
prod(const uint32_t *shape, uint32_t lo, uint32_t hi)
{
    uint64_t p = 1;
    for (uint32_t i = lo; i < hi; i++) {
        p *= shape[i];
    }
    return p;
}

void
wnn_lower_gather(wnn_gather_params *p, const wnn_node *node,
                 const wnn_desc *x, const wnn_desc *ix)
{
    p->n_idx = prod(ix->shape, 0, ix->rank);
    if (node->op == WNN_OP_GATHER_ND || node->op == WNN_OP_SCATTER_ND) {
        p->coord = ix->rank ? ix->shape[ix->rank - 1] : 0;
        p->tuples = prod(ix->shape, 0, ix->rank ? ix->rank - 1 : 0);
        p->slice = prod(x->shape, p->coord, x->rank);
        p->n_slices = prod(x->shape, 0, p->coord);
        uint64_t s = 1;
        for (int d = (int)p->coord - 1; d >= 0; d--) {
            p->dims[d] = x->shape[d];
            p->strides[d] = s;
            s *= x->shape[d];
        }
        return;
    }
    /* MLGatherOptions and MLScatterOptions: one axis field */
    uint32_t axis = 0;
    wnn_options_u32(node->op, node->options, "axis", &axis);
    p->axis = axis;
    p->outer = prod(x->shape, 0, axis);
    p->dim = x->shape[axis];
    p->inner = prod(x->shape, axis + 1, x->rank);
    p->a_n = node->op == WNN_OP_GATHER ? 0 : ix->shape[axis];
}

/* the family GATHER (gather*, scatter*) */
WNN_LOWER_FN(wnn_lower_op_gather)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_GATHER;
    wnn_lower_gather(&l->u.gather, node, &ir->operands[node->in[0]].desc,
                     &ir->operands[node->in[1]].desc);
    return WNN_OK;
}
