/* cu_epilogue.c -- fused epilogues: a producer (conv2d, convTranspose2d,
 * matmul, gemm) run with its chain (bias, add, activation) at the chain's
 * last node; the chains come from the core's pipeline (g->fusion)
 * (cu_internal.h has the overview). */
#include "cu_internal.h"

/* A producer with its epilogue (bias, fused add, activation) or a
 * convolution on cuDNN: writes cn->result. */
wnn_status
run_fused(cu_backend *b, const wnn_graph *g, cu_compiled *c, cu_node *cn,
          void *const *in, void *const *out, wnn_error *err)
{
    const wnn_node *node = cn->node;
    for (uint32_t j = 0; j < node->n_in; j++) {
        c->ptr_in[j] = cu_resolve(g, c, node->in[j], in, out);
    }
    void *y = cu_resolve(g, c, cn->result, in, out);
    const void *addend = cn->addend != UINT32_MAX
                             ? cu_resolve(g, c, cn->addend, in, out) : NULL;
    c->ptr_out[0] = y;
    bool done = false;
    wnn_status st;
    if (cn->dnn) {
        st = run_dnn(b, c, cn, c->ptr_in, y, addend, c->scratch, &done, err);
    } else {
        st = run_node(b, cn, c->ptr_in, c->ptr_out, c->scratch, err);
    }
    if (st != WNN_OK || done || !cn->epi_on) {
        return st;
    }
    const void *b1 = cn->epi.bias ? c->ptr_in[cn->bias - 1] : NULL;
    cudaError_t e = ck_epilogue(&cn->epi, b1, addend, y, b->stream);
    if (e != cudaSuccess) {
        return cuda_error(err, WNN_OPERATION_ERROR, cu_core->op_get(node->op)->camel,
                          node->label, e, "kernel launch");
    }
    return WNN_OK;
}
