/* views.c -- the strided copies of the data movement operators transpose,
 * expand, slice, tile, reverse, split and concat (lower.h), once per node at
 * compile; cpu/kernels/movement/ and the CUDA backend read them.
 *   transpose  permuted input strides
 *   expand     0 strides where the input's dimension is 1 (or missing)
 *   slice      strides times the step, base at the starts
 *   reverse    negated strides, base at the last element
 *   tile       a view of rank 2r: [rep0, d0, rep1, d1, ...] with strides
 *              [0, s0, 0, s1, ...] (an expand of the reshaped input)
 *   split      one slice per output
 *   concat     each input written into its part of the output (strided out)
 * Then size-1 dimensions are dropped and neighbours contiguous on both
 * sides merged.  Also pad's strides, paddings and value. */
#include <string.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

uint32_t
wnn_lower_view_count(const wnn_node *node)
{
    /* one per output (split) or input (concat); the others have one of
     * each */
    if (wnn_op_family(node->op) != WNN_FAMILY_VIEWS) {
        return 0;
    }
    return node->n_in > node->n_out ? node->n_in : node->n_out;
}

static void
contiguous_strides(const wnn_desc *d, int64_t *st)
{
    int64_t s = 1;
    for (int i = (int)d->rank - 1; i >= 0; i--) {
        st[i] = s;
        s *= d->shape[i];
    }
}

/* Drop size-1 dimensions, merge neighbours that are contiguous on both
 * sides.  Leaves rank >= 1 (lower.h). */
void
wnn_view_simplify(wnn_view *v)
{
    int r = 0;
    for (int d = 0; d < v->rank; d++) {
        if (v->shape[d] == 1) {
            continue;
        }
        if (r > 0 && v->is[r - 1] == v->is[d] * v->shape[d] &&
            v->os[r - 1] == v->os[d] * v->shape[d]) {
            v->shape[r - 1] *= v->shape[d];
            v->is[r - 1] = v->is[d];
            v->os[r - 1] = v->os[d];
            continue;
        }
        v->shape[r] = v->shape[d];
        v->is[r] = v->is[d];
        v->os[r] = v->os[d];
        r++;
    }
    if (r == 0) {
        v->shape[0] = 1;
        v->is[0] = v->os[0] = 1;
        r = 1;
    }
    v->rank = r;
    v->n = 1;
    for (int d = 0; d < r; d++) {
        v->n *= v->shape[d];
    }
}

/* The view operators' lowering (ops.def's lower column): v zeroed, the
 * operator's own view(s) filled in, then each simplified and l pointed at
 * them. */
static wnn_view *
views_begin(wnn_view *v, uint32_t n)
{
    memset(v, 0, sizeof(*v) * n);
    return v;
}

static wnn_status
views_end(wnn_lowered *l, wnn_view *v, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++) {
        wnn_view_simplify(&v[j]);
    }
    l->kind = WNN_LOWER_VIEWS;
    l->u.views.n = n;
    l->u.views.v = v;
    return WNN_OK;
}

WNN_LOWER_FN(wnn_lower_op_transpose)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    const wnn_desc *out = &ir->operands[node->out[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = 1;
    wnn_view *v = views_begin(views, n);
    const wnn_transpose_options *o = node->options;
    contiguous_strides(in, ist);
    contiguous_strides(out, ost);
    v->rank = (int)out->rank;
    for (uint32_t i = 0; i < out->rank; i++) {
        uint32_t p = o->permutation.v[i];
        v->shape[i] = out->shape[i];
        v->is[i] = p < in->rank ? ist[p] : 0;
        v->os[i] = ost[i];
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_expand)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    const wnn_desc *out = &ir->operands[node->out[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = 1;
    wnn_view *v = views_begin(views, n);
    contiguous_strides(in, ist);
    contiguous_strides(out, ost);
    v->rank = (int)out->rank;
    int shift = (int)out->rank - (int)in->rank;
    for (int i = 0; i < (int)out->rank; i++) {
        int j = i - shift;
        v->shape[i] = out->shape[i];
        v->is[i] = j >= 0 && in->shape[j] != 1 ? ist[j] : 0;
        v->os[i] = ost[i];
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_slice)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    const wnn_desc *out = &ir->operands[node->out[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = 1;
    wnn_view *v = views_begin(views, n);
    const wnn_slice_options *o = node->options;
    contiguous_strides(in, ist);
    contiguous_strides(out, ost);
    v->rank = (int)out->rank;
    for (uint32_t i = 0; i < out->rank; i++) {
        v->shape[i] = out->shape[i];
        v->is[i] = ist[i] * (int64_t)o->strides.v[i];
        v->os[i] = ost[i];
        v->in_off += ist[i] * (int64_t)o->starts.v[i];
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_tile)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    const wnn_desc *out = &ir->operands[node->out[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = 1;
    wnn_view *v = views_begin(views, n);
    const wnn_tile_options *o = node->options;
    contiguous_strides(in, ist);
    contiguous_strides(out, ost);
    v->rank = 2 * (int)in->rank;
    for (uint32_t i = 0; i < in->rank; i++) {
        v->shape[2 * i] = o->repetitions.v[i];
        v->is[2 * i] = 0;
        v->os[2 * i] = ost[i] * in->shape[i];
        v->shape[2 * i + 1] = in->shape[i];
        v->is[2 * i + 1] = ist[i];
        v->os[2 * i + 1] = ost[i];
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_reverse)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    int64_t ist[WNN_MAX_RANK];
    uint32_t n = 1;
    wnn_view *v = views_begin(views, n);
    const wnn_reverse_options *o = node->options;
    contiguous_strides(in, ist);
    v->rank = (int)in->rank;
    for (uint32_t i = 0; i < in->rank; i++) {
        v->shape[i] = in->shape[i];
        v->is[i] = ist[i];
        v->os[i] = ist[i];
    }
    for (uint32_t a = 0; a < o->axes.n; a++) {
        uint32_t i = o->axes.v[a];
        if (i < in->rank && v->is[i] > 0) { /* duplicates ignored */
            v->in_off += (int64_t)(in->shape[i] - 1) * ist[i];
            v->is[i] = -ist[i];
        }
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_split)
{
    (void)err;
    const wnn_desc *in = &ir->operands[node->in[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = wnn_lower_view_count(node);
    wnn_view *v = views_begin(views, n);
    const wnn_split_options *o = node->options;
    int64_t start = 0;
    contiguous_strides(in, ist);
    for (uint32_t j = 0; j < n; j++) {
        const wnn_desc *oj = &ir->operands[node->out[j]].desc;
        contiguous_strides(oj, ost);
        v[j].rank = (int)oj->rank;
        for (uint32_t i = 0; i < oj->rank; i++) {
            v[j].shape[i] = oj->shape[i];
            v[j].is[i] = ist[i];
            v[j].os[i] = ost[i];
        }
        v[j].out = j;
        v[j].in_off = start * ist[o->axis];
        start += oj->shape[o->axis];
    }
    return views_end(l, v, n);
}

WNN_LOWER_FN(wnn_lower_op_concat)
{
    (void)err;
    const wnn_desc *out = &ir->operands[node->out[0]].desc;
    int64_t ist[WNN_MAX_RANK], ost[WNN_MAX_RANK];
    uint32_t n = wnn_lower_view_count(node);
    wnn_view *v = views_begin(views, n);
    const wnn_concat_options *o = node->options;
    int64_t start = 0;
    contiguous_strides(out, ost);
    for (uint32_t j = 0; j < n; j++) {
        const wnn_desc *ij = &ir->operands[node->in[j]].desc;
        contiguous_strides(ij, ist);
        v[j].rank = (int)ij->rank;
        for (uint32_t i = 0; i < ij->rank; i++) {
            v[j].shape[i] = ij->shape[i];
            v[j].is[i] = ist[i];
            v[j].os[i] = ost[i];
        }
        v[j].in = j;
        v[j].out_off = start * ost[o->axis];
        start += ij->shape[o->axis];
    }
    return views_end(l, v, n);
}

void
wnn_lower_pad(wnn_pad_params *p, const wnn_node *node, const wnn_desc *x)
{
    const wnn_pad_options *o = node->options;
    p->rank = x->rank;
    p->mode = o->mode;
    p->value = 0;
    wnn_number_store(&o->value, x->dtype, &p->value);
    contiguous_strides(x, p->ist);
    for (uint32_t d = 0; d < x->rank; d++) {
        p->ishape[d] = x->shape[d];
        p->begin[d] = o->beginning_padding.v[d];
        p->end[d] = o->ending_padding.v[d];
    }
}

/* the family PAD */
WNN_LOWER_FN(wnn_lower_op_pad)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_PAD;
    wnn_lower_pad(&l->u.pad, node, &ir->operands[node->in[0]].desc);
    return WNN_OK;
}
