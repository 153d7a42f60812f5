/* reduce.c -- the runs of the reductions, the groups of instance and layer
 * normalization and the [outer, n, inner] view of the operators along one
 * axis (lower.h), once per node at compile; cpu/kernels/reduce/,
 * cpu/kernels/normalization/ and the CUDA backend read them. */
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

/* the family REDUCE (reduce*) */
WNN_LOWER_FN(wnn_lower_op_reduce)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_REDUCE;
    wnn_lower_reduce(&l->u.reduce, &ir->operands[node->in[0]].desc,
                     ((const wnn_reduce_options *)node->options)->axes_mask);
    return WNN_OK;
}

/* the family AXIS: argMin, argMax, cumulativeSum, softmax,
 * batchNormalization -- the `axis` field of the options (through the
 * row's field table) */
WNN_LOWER_FN(wnn_lower_op_axis)
{
    (void)views, (void)err;
    uint32_t axis;
    if (!wnn_options_u32(node->op, node->options, "axis", &axis)) {
        return WNN_OK; /* (every row of the family has one) */
    }
    l->kind = WNN_LOWER_AXIS;
    wnn_lower_axis(&l->u.axis, &ir->operands[node->in[0]].desc, axis);
    return WNN_OK;
}

/* the family NORM (instanceNormalization, layerNormalization) */
WNN_LOWER_FN(wnn_lower_op_norm)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_NORM;
    wnn_lower_norm(&l->u.norm, node, &ir->operands[node->in[0]].desc);
    return WNN_OK;
}

void
wnn_lower_norm(wnn_norm_params *p, const wnn_node *node, const wnn_desc *x)
{
    int64_t st[WNN_MAX_RANK], s = 1;
    for (int i = (int)x->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= x->shape[i];
    }
    if (node->op == WNN_OP_INSTANCE_NORMALIZATION) {
        const wnn_instance_normalization_options *o = node->options;
        bool nhwc = o->layout != 0;
        int64_t N = x->shape[0];
        int64_t C = nhwc ? x->shape[3] : x->shape[1];
        int64_t H = nhwc ? x->shape[1] : x->shape[2];
        int64_t W = nhwc ? x->shape[2] : x->shape[3];
        p->nk = 2;
        p->kext[0] = N;
        p->kext[1] = C;
        p->kst[0] = st[0];
        p->kst[1] = nhwc ? 1 : st[1];
        p->nr = 2;
        p->rext[0] = H;
        p->rext[1] = W;
        p->rst[0] = nhwc ? st[1] : st[2];
        p->rst[1] = nhwc ? st[2] : 1;
        p->per_channel = C;
        p->G = N * C;
        p->S = H * W;
        return;
    }
    const wnn_layer_normalization_options *o = node->options;
    bool red[WNN_MAX_RANK] = { false };
    for (uint32_t i = 0; i < o->axes.n; i++) {
        red[o->axes.v[i]] = true;
    }
    p->nk = p->nr = 0;
    p->G = p->S = 1;
    for (uint32_t i = 0; i < x->rank; i++) {
        if (!red[i]) {
            p->kext[p->nk] = x->shape[i];
            p->kst[p->nk++] = st[i];
            p->G *= x->shape[i];
        }
    }
    for (uint32_t i = 0; i < o->axes.n; i++) {
        uint32_t a = o->axes.v[i];
        p->rext[p->nr] = x->shape[a];
        p->rst[p->nr++] = st[a];
        p->S *= x->shape[a];
    }
    p->per_channel = 0;
}
