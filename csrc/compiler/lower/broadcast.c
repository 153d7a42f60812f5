/* broadcast.c -- the broadcast iterator of element-wise operators (lower.h),
 * computed once per node at compile; cpu/kernels/elementwise/elementwise.c and the CUDA
 * backend read it. */
#include <string.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

bool
wnn_lower_is_broadcast(wnn_op op)
{
    switch (op) {
    case WNN_OP_ADD: case WNN_OP_SUB: case WNN_OP_MUL: case WNN_OP_DIV:
    case WNN_OP_MAX: case WNN_OP_MIN: case WNN_OP_POW:
    case WNN_OP_EQUAL: case WNN_OP_NOT_EQUAL: case WNN_OP_GREATER:
    case WNN_OP_GREATER_OR_EQUAL: case WNN_OP_LESSER:
    case WNN_OP_LESSER_OR_EQUAL: case WNN_OP_LOGICAL_AND:
    case WNN_OP_LOGICAL_OR: case WNN_OP_LOGICAL_XOR: case WNN_OP_PRELU:
    case WNN_OP_WHERE:
        return true;
    default:
        return false;
    }
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
