/* reduce.c -- the runs of the reductions and the [outer, n, inner] view of
 * the operators along one axis (lower.h), once per node at compile;
 * cpu/kernels/reduce/ and the CUDA backend read them. */
#include "../../ops/ops_internal.h"
#include "lower.h"

void
wnn_lower_reduce(wnn_reduce_params *p, const wnn_desc *x, uint32_t mask)
{
    uint64_t sz[WNN_MAX_RANK], st[WNN_MAX_RANK];
    bool red[WNN_MAX_RANK];
    uint32_t m = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (x->shape[d] == 1) {
            continue;
        }
        bool r = (mask >> d & 1u) != 0;
        if (m > 0 && red[m - 1] == r) {
            sz[m - 1] *= x->shape[d];
        } else {
            sz[m] = x->shape[d];
            red[m] = r;
            m++;
        }
    }
    uint64_t s = 1;
    for (uint32_t j = m; j-- > 0;) {
        st[j] = s;
        s *= sz[j];
    }
    p->nk = p->nr = 0;
    p->O = p->R = 1;
    for (uint32_t j = 0; j < m; j++) {
        if (red[j]) {
            p->rext[p->nr] = sz[j];
            p->rst[p->nr++] = st[j];
            p->R *= sz[j];
        } else {
            p->kext[p->nk] = sz[j];
            p->kst[p->nk++] = st[j];
            p->O *= sz[j];
        }
    }
    p->inner_red = m > 0 && red[m - 1];
    if (p->nr == 0) { /* nothing reduced: one group of size 1 */
        p->rext[0] = 1;
        p->rst[0] = 0;
        p->nr = 1;
    }
}

void
wnn_lower_axis(wnn_axis_params *p, const wnn_desc *x, uint32_t axis)
{
    p->axis = axis;
    p->outer = p->inner = 1;
    for (uint32_t d = 0; d < x->rank; d++) {
        if (d < axis) {
            p->outer *= x->shape[d];
        } else if (d > axis) {
            p->inner *= x->shape[d];
        }
    }
    p->n = axis < x->rank ? x->shape[axis] : 1;
}

bool
wnn_lower_axis_of(const wnn_node *node, uint32_t *axis)
{
    switch (node->op) {
    case WNN_OP_ARG_MIN: case WNN_OP_ARG_MAX:
        *axis = ((const wnn_arg_min_max_options *)node->options)->axis;
        return true;
    case WNN_OP_CUMULATIVE_SUM:
        *axis = ((const wnn_cumulative_sum_options *)node->options)->axis;
        return true;
    case WNN_OP_SOFTMAX:
        *axis = ((const wnn_softmax_options *)node->options)->axis;
        return true;
    case WNN_OP_BATCH_NORMALIZATION:
        *axis = ((const wnn_batch_normalization_options *)node->options)->axis;
        return true;
    default:
        return false;
    }
}
