/* broadcast.c -- the broadcast iterator of element-wise operators (lower.h),
 * computed once per node at compile; cpu/kernels/elementwise/elementwise.c and the CUDA
 * backend read it. */
#include <string.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

/* the family BROADCAST (element-wise binary operators, prelu, where) */
WNN_LOWER_FN(wnn_lower_op_broadcast)
{
    (void)views, (void)err;
    if (node->n_in < 2 || node->n_in > WNN_BCAST_MAX_OPERANDS) {
        return WNN_OK;
    }
    const wnn_desc *in[WNN_BCAST_MAX_OPERANDS];
    for (uint32_t j = 0; j < node->n_in; j++) {
        in[j] = &ir->operands[node->in[j]].desc;
    }
    l->kind = WNN_LOWER_BROADCAST;
    wnn_lower_broadcast(&l->u.bcast, &ir->operands[node->out[0]].desc, in,
                        node->n_in);
    return WNN_OK;
}

/* Strides of each input broadcast to the output shape, with adjacent
 * dimensions merged where every operand stays contiguous across them. */
void
wnn_lower_broadcast(wnn_broadcast_params *it, const wnn_desc *out,
                    const wnn_desc *const *in, uint32_t n)
{
    uint32_t r = out->rank;
    int64_t st[WNN_BCAST_MAX_OPERANDS][WNN_MAX_RANK];
    memset(it, 0, sizeof(*it));
    for (uint32_t k = 0; k < n; k++) {
        int64_t s = 1;
        for (int d = (int)r - 1; d >= 0; d--) {
            int di = d - (int)(r - in[k]->rank);
            uint32_t dim = di >= 0 ? in[k]->shape[di] : 1;
            st[k][d] = dim == 1 ? 0 : s;
            s *= dim;
        }
    }
    it->n = n;
    it->rank = 0;
    for (uint32_t d = 0; d < r; d++) {
        if (out->shape[d] == 1) {
            continue;
        }
        if (it->rank > 0) {
            uint32_t p = it->rank - 1;
            bool merge = true;
            for (uint32_t k = 0; k < n; k++) {
                if (it->st[k][p] != st[k][d] * (int64_t)out->shape[d]) {
                    merge = false;
                }
            }
            if (merge) {
                it->shape[p] *= out->shape[d];
                for (uint32_t k = 0; k < n; k++) {
                    it->st[k][p] = st[k][d];
                }
                continue;
            }
        }
        it->shape[it->rank] = out->shape[d];
        for (uint32_t k = 0; k < n; k++) {
            it->st[k][it->rank] = st[k][d];
        }
        it->rank++;
    }
    if (it->rank == 0) { /* a scalar or all-ones shape */
        it->rank = 1;
        it->shape[0] = 1;
        for (uint32_t k = 0; k < n; k++) {
            it->st[k][0] = 0;
        }
    }
}
