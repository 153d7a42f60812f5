/* matmul.c -- the products' shapes (lower.h), once per node at compile:
 * matmul's batch (#api-mlgraphbuilder-matmul: the batch dimensions
 * broadcast, the last two multiplied) and gemm's dimensions, scalars and
 * the broadcast of c (#api-mlgraphbuilder-gemm).  cpu/blis/gemm.c and the
 * CUDA backend's cuBLAS launchers read them. */
#include <string.h>

#include "../../ops/ops_internal.h"
#include "lower.h"

void
wnn_lower_matmul(wnn_matmul_params *p, const wnn_desc *a, const wnn_desc *b,
                 const wnn_desc *y)
{
    memset(p, 0, sizeof(*p));
    p->M = a->shape[a->rank - 2];
    p->K = a->shape[a->rank - 1];
    p->N = b->shape[b->rank - 1];
    p->batch = (int64_t)(wnn_desc_elements(y) / ((uint64_t)p->M * p->N));
    /* a's and b's matrices (the products of their batch dimensions) */
    int64_t na = (int64_t)(wnn_desc_elements(a) / ((uint64_t)p->M * p->K));
    int64_t nb = (int64_t)(wnn_desc_elements(b) / ((uint64_t)p->K * p->N));
    uint32_t rb = p->rb = y->rank - 2;
    int64_t acc_a = 1, acc_b = 1;
    for (int d = (int)rb - 1; d >= 0; d--) {
        int da = d - (int)(rb - (a->rank - 2));
        int db = d - (int)(rb - (b->rank - 2));
        int64_t xa = da >= 0 ? a->shape[da] : 1;
        int64_t xb = db >= 0 ? b->shape[db] : 1;
        p->bshape[d] = y->shape[d];
        p->sa[d] = xa == 1 ? 0 : acc_a;
        p->sb[d] = xb == 1 ? 0 : acc_b;
        acc_a *= xa;
        acc_b *= xb;
    }
    if (nb == 1 && na == p->batch) {
        p->mode = WNN_MM_ONE;
    } else if ((na == 1 || na == p->batch) && (nb == 1 || nb == p->batch)) {
        p->mode = WNN_MM_STRIDED;
    } else {
        p->mode = WNN_MM_BROADCAST;
    }
    p->ma = na == 1 ? 0 : p->M * p->K;
    p->mb = nb == 1 ? 0 : p->K * p->N;
}

void
wnn_lower_gemm(wnn_gemm_params *p, const wnn_node *node, const wnn_desc *a,
               const wnn_desc *b, const wnn_desc *c, const wnn_desc *y)
{
    const wnn_gemm_options *o = node->options;
    memset(p, 0, sizeof(*p));
    p->ta = o->a_transpose;
    p->tb = o->b_transpose;
    p->M = y->shape[0];
    p->N = y->shape[1];
    p->K = o->a_transpose ? a->shape[0] : a->shape[1];
    p->lda = a->shape[1];
    p->ldb = b->shape[1];
    /* the scalars as the output's type holds them (float16: rounded) */
    p->alpha = wnn_cast_float(o->alpha, y->dtype);
    p->beta = wnn_cast_float(o->beta, y->dtype);
    if (o->c && c && p->beta != 0.0f) {
        /* c (rank 0 to 2) unidirectionally broadcast to [M, N] */
        int64_t r0 = c->rank == 2 ? c->shape[0] : 1;
        int64_t r1 = c->rank >= 1 ? c->shape[c->rank - 1] : 1;
        p->c = o->c;
        p->cs0 = r0 == 1 ? 0 : r1;
        p->cs1 = r1 == 1 ? 0 : 1;
    } else {
        p->beta = 0.0f; /* beta * c is 0: c is not read */
    }
}

/* the family MATMUL */
WNN_LOWER_FN(wnn_lower_op_matmul)
{
    (void)views, (void)err;
    l->kind = WNN_LOWER_MATMUL;
    wnn_lower_matmul(&l->u.matmul, &ir->operands[node->in[0]].desc,
                     &ir->operands[node->in[1]].desc,
                     &ir->operands[node->out[0]].desc);
    return WNN_OK;
}

/* the family GEMM */
WNN_LOWER_FN(wnn_lower_op_gemm)
{
    (void)views, (void)err;
    const wnn_gemm_options *o = node->options;
    l->kind = WNN_LOWER_GEMM;
    wnn_lower_gemm(&l->u.gemm, node, &ir->operands[node->in[0]].desc,
                   &ir->operands[node->in[1]].desc,
                   o->c ? &ir->operands[node->in[o->c - 1]].desc : NULL,
                   &ir->operands[node->out[0]].desc);
    return WNN_OK;
}
