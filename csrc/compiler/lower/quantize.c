/* quantize.c -- blockwise broadcasting of quantizeLinear and
 * dequantizeLinear (lower.h), once per node at compile;
 * cpu/kernels/quantize/ and the CUDA backend read it. */
#include "../../ops/ops_internal.h"
#include "lower.h"

/* Input's and scale's shapes with size-1 input dimensions dropped and
 * neighbours merged where both are fully indexed (block 1) or both are
 * broadcast (scale dimension 1), so per-tensor scales give rank 1 and
 * per-axis scales at most 3 dimensions. */
void
wnn_lower_quant(wnn_quant_params *p, const wnn_desc *x, const wnn_desc *sc)
{
    uint64_t ish[WNN_MAX_RANK], ssh[WNN_MAX_RANK];
    uint32_t r = 0;
    for (uint32_t d = 0; d < x->rank; d++) {
        uint64_t i = x->shape[d], s = sc->shape[d];
        if (i == 1) {
            continue;
        }
        if (r > 0) {
            uint64_t pi = ish[r - 1], ps = ssh[r - 1];
            if ((ps == pi && s == i) || (ps == 1 && s == 1)) {
                ish[r - 1] = pi * i;
                ssh[r - 1] = ps * s;
                continue;
            }
        }
        ish[r] = i;
        ssh[r] = s;
        r++;
    }
    if (r == 0) {
        ish[0] = ssh[0] = 1;
        r = 1;
    }
    p->rank = r;
    uint64_t st = 1;
    for (int d = (int)r - 1; d >= 0; d--) {
        p->shape[d] = ish[d];
        p->block[d] = ish[d] / ssh[d];
        p->sstride[d] = st;
        st *= ssh[d];
    }
}

/* the family QUANT (quantizeLinear, dequantizeLinear) */
WNN_LOWER_FN(wnn_lower_op_quant)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_QUANT;
    wnn_lower_quant(&l->u.quant, &ir->operands[node->in[0]].desc,
                    &ir->operands[node->in[1]].desc);
    return WNN_OK;
}
