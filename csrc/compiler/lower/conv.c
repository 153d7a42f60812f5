/* conv.c -- the geometry of conv2d and convTranspose2d (lower.h), once per
 * node at compile; cpu/kernels/conv/ and the CUDA backend read it. */
#include "../../ops/ops_internal.h"
#include "lower.h"

void
wnn_lower_conv(wnn_conv_params *p, const wnn_node *node, const wnn_desc *x,
               const wnn_desc *filter, const wnn_desc *y)
{
    const uint32_t *pad, *stride, *dil;
    uint32_t groups;
    int il;
    p->transpose = node->op == WNN_OP_CONV_TRANSPOSE2D;
    if (p->transpose) {
        const wnn_conv_transpose2d_options *o = node->options;
        pad = o->pad, stride = o->stride, dil = o->dilation;
        groups = o->groups, p->bias = o->bias, il = o->input_layout;
        p->filter_layout = o->filter_layout;
    } else {
        const wnn_conv2d_options *o = node->options;
        pad = o->pad, stride = o->stride, dil = o->dilation;
        groups = o->groups, p->bias = o->bias, il = o->input_layout;
        p->filter_layout = o->filter_layout;
    }
    bool nhwc = p->nhwc = il == WNN_LAYOUT_NHWC;
    const uint32_t *is = x->shape, *os = y->shape, *fs = filter->shape;
    p->N = is[0];
    p->C = is[nhwc ? 3 : 1];
    p->H = is[nhwc ? 1 : 2];
    p->W = is[nhwc ? 2 : 3];
    p->O = os[nhwc ? 3 : 1];
    p->OH = os[nhwc ? 1 : 2];
    p->OW = os[nhwc ? 2 : 3];
    int fl = p->filter_layout;
    if (p->transpose) { /* iohw, hwoi, ohwi */
        p->KH = fl == WNN_CONVT_HWOI ? fs[0] : fl == WNN_CONVT_OHWI ? fs[1] : fs[2];
        p->KW = fl == WNN_CONVT_HWOI ? fs[1] : fl == WNN_CONVT_OHWI ? fs[2] : fs[3];
    } else { /* oihw, hwio, ohwi, ihwo */
        p->KH = fl == WNN_CONV_HWIO ? fs[0] : fl == WNN_CONV_OIHW ? fs[2] : fs[1];
        p->KW = fl == WNN_CONV_HWIO ? fs[1] : fl == WNN_CONV_OIHW ? fs[3] : fs[2];
    }
    p->G = groups;
    p->Cg = p->C / p->G;
    p->Og = p->O / p->G;
    for (int i = 0; i < 4; i++) {
        p->pad[i] = pad[i];
    }
    p->sh = stride[0], p->sw = stride[1];
    p->dh = dil[0], p->dw = dil[1];
}

/* the family CONV (conv2d, convTranspose2d) */
WNN_LOWER_FN(wnn_lower_op_conv)
{
    (void)views;
    l->kind = WNN_LOWER_CONV;
    wnn_lower_conv(&l->u.conv, node, &ir->operands[node->in[0]].desc,
                   &ir->operands[node->in[1]].desc,
                   &ir->operands[node->out[0]].desc);
    if (l->u.conv.C % l->u.conv.G != 0) {
        /* convTranspose2d: the builder accepts it as the spec does (no
         * divisibility step), but the spec defines no result. */
        long long c = l->u.conv.C, grp = l->u.conv.G;
        return wnn_failk(err, WNN_NOT_SUPPORTED, "convTranspose2d",
                         node->label, "options.groups",
                         "input channels %lld / groups %lld is not an "
                         "integer: the spec's builder accepts it but "
                         "defines no computation for it",
                         c, grp);
    }
    return WNN_OK;
}
