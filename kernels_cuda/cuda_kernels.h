/* cuda_kernels.h -- the interface between the CUDA backend's host code
 * (backend_cuda.c and the cu_*.c files, plain C, which read the graph IR)
 * and its kernels (*.cu, C++, which never see the IR).  Every launcher takes
 * the node's parameter block as the core's lowering made it (g->lowered,
 * csrc/compiler/lower/; the CPU kernels read the same blocks) or, for the
 * fused epilogue, as the backend filled it from the schedule's step -- the
 * types are the kernel ABI's, csrc/include/wnn_kernel_abi.h, read by both
 * compilers --,
 * with the per-node extras (wnn_kernel_args: data types, element count, op
 * code, epsilon), the device pointers of the node's operands and the
 * backend's stream; it only enqueues work (no synchronisation) and returns
 * cudaGetLastError().
 *
 * The semantics of every kernel are those of the CPU kernels in cpu/kernels/
 * (see the comment at the top of each .cu file); element counts are below
 * 2^31 (the builder's "valid dimension" rule), so flat indices are
 * decomposed with 32-bit arithmetic and offsets are int64. */
#ifndef WNN_CUDA_KERNELS_H
#define WNN_CUDA_KERNELS_H
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "../csrc/include/wnn_kernel_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- run launchers: one per launcher kind ---------------------------------- */
/* The per-node extras beside the kernel's wnn_kernel_args (the backend's
 * cu_ops.c prep_node fills them at compile from the node's options and
 * descriptors) */
typedef struct cu_node_extras {
    uint32_t scale, bias; /* optional operands (normalization's scale and
                           * bias, conv's bias): node input + 1, 0 absent */
    uint64_t bytes;       /* copy: the output's bytes; scatter: input 0's,
                           * copied to the output first */
} cu_node_extras;

/* What a kind's run launcher takes (cu_launch.c run_node): the node's
 * lowered block (g->lowered) as it is, its extras, the device pointers of
 * its operands (in node order), the compiled graph's scratch (at least the
 * node's bytes) and the backend's stream. */
typedef struct cu_launch_args {
    const wnn_kernel_args *k;
    const wnn_lowered *l;
    const cu_node_extras *x;
    void *const *in;
    void *const *out;
    void *scratch;
    cudaStream_t s;
} cu_launch_args;

/* An optional operand (cu_node_extras scale / bias): its pointer or NULL. */
static inline const void *
cu_opt_in(const cu_launch_args *a, uint32_t in1)
{
    return in1 ? a->in[in1 - 1] : NULL;
}

/* cudaError_t ck_run_<name>(const cu_launch_args *a) of each CU_KIND row of
 * cuda_ops.h: a thin adapter, next to the family's ck_* launcher in its .cu
 * file, that unpacks `a` and calls it (only enqueues work) */
#define CU_OP(ID, kind, code)
#define CU_KIND(KIND, run, dtypes) cudaError_t run(const cu_launch_args *a);
#include "cuda_ops.h"
#undef CU_OP
#undef CU_KIND

/* ---- element-wise (elementwise.cu) --------------------------------------- */
/* op codes generated from cuda_ops.h, in its rows' order */
#define CU_OP(ID, kind, code)
#define CU_UNARY(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_U_IDENTITY
};
#undef CU_OP

/* k: op, dt (input), to (output), n, sp (alpha, beta, clamp bounds already
 * cast to the input type) */
cudaError_t ck_unary(const wnn_kernel_args *k, const void *x, void *y,
                     cudaStream_t s);

#define CU_OP(ID, kind, code)
#define CU_BINARY(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_B_COUNT
};
#undef CU_OP

/* Output element i (row-major over it->shape) reads operand k at
 * sum(index[d] * it->st[k][d]).  k: op, dt, to, n. */
cudaError_t ck_binary(const wnn_kernel_args *k, const wnn_broadcast_params *it,
                      const void *a, const void *b, void *y, cudaStream_t s);
/* k: es (element size of the values), n */
cudaError_t ck_where(const wnn_kernel_args *k, const wnn_broadcast_params *it,
                     const void *cond, const void *t, const void *f, void *y,
                     cudaStream_t s);

cudaError_t ck_cast(int ti, int to, int64_t n, const void *x, void *y,
                    cudaStream_t s);

/* ---- data movement (movement.cu) ----------------------------------------- */
/* Strided copy of a view (v->in_off and v->out_off not applied: `in` and
 * `out` point at element (0, ..., 0); strides may be 0 for broadcasts,
 * negative for reversed dimensions); es: element size. */
cudaError_t ck_copy_view(const wnn_view *v, int es, const void *in, void *out,
                         cudaStream_t s);

/* k: es, n (output elements) */
cudaError_t ck_pad(const wnn_kernel_args *k, const wnn_pad_params *p,
                   const void *x, void *y, cudaStream_t s);

/* k: es, n; p: lowered (compiler/lower/triangular.c) */
cudaError_t ck_triangular(const wnn_kernel_args *k, const wnn_tri_params *p,
                          const void *x, void *y, cudaStream_t s);

/* gather: output[o, j, r] = input[o, index(j), r]; k: es, it (indices'
 * type), n (output elements) */
cudaError_t ck_gather(const wnn_kernel_args *k, const wnn_gather_params *p,
                      const void *x, const void *idx, void *y, cudaStream_t s);
/* gatherElements (one thread per index: p->n_idx) and scatterElements (one
 * per outer * inner pair, each walking a_n updates in order); k: es, it */
cudaError_t ck_gather_elements(const wnn_kernel_args *k,
                               const wnn_gather_params *p, const void *x,
                               const void *idx, void *y, cudaStream_t s);
cudaError_t ck_scatter_elements(const wnn_kernel_args *k,
                                const wnn_gather_params *p, const void *idx,
                                const void *upd, void *y, cudaStream_t s);
/* gatherND / scatterND: tuples of `coord` indices address slices of `slice`
 * elements; k: es, it.  `winner`: scratch of n_slices int32 (the last
 * tuple writing each slice). */
cudaError_t ck_gather_nd(const wnn_kernel_args *k, const wnn_gather_params *p,
                         const void *x, const void *idx, void *y,
                         cudaStream_t s);
cudaError_t ck_scatter_nd(const wnn_kernel_args *k, const wnn_gather_params *p,
                          const void *idx, const void *upd, void *y,
                          int32_t *winner, cudaStream_t s);

/* Pointer arrays of a broadcast batched matmul (p->mode WNN_MM_BROADCAST):
 * for output matrix i, ptrs[i] = a's matrix sum(idx * sa), ptrs[batch + i]
 * = b's sum(idx * sb), ptrs[2 batch + i] = c's matrix i; es: element size. */
cudaError_t ck_batch_pointers(const wnn_matmul_params *p, int es,
                              const void *a, const void *b, void *c,
                              void **ptrs, cudaStream_t s);

/* ---- normalization (normalization.cu) ------------------------------------- */
/* instanceNormalization / layerNormalization (wnn_norm_params); k: dt, eps */
cudaError_t ck_norm(const wnn_kernel_args *k, const wnn_norm_params *p,
                    const void *x, const void *scale, const void *bias,
                    void *y, cudaStream_t s);

/* batchNormalization: the input as [outer, C = p->n, inner]; k: dt, n
 * (elements), eps; coef: scratch of 3 * C doubles */
cudaError_t ck_batch_norm(const wnn_kernel_args *k, const wnn_axis_params *p,
                          const void *x, const void *mean, const void *var,
                          const void *scale, const void *bias, void *y,
                          double *coef, cudaStream_t s);

/* softmax along p->axis; k: dt */
cudaError_t ck_softmax(const wnn_kernel_args *k, const wnn_axis_params *p,
                       const void *x, void *y, cudaStream_t s);

/* ---- quantization (normalization.cu) -------------------------------------- */
/* k: flags (WNN_KF_DEQUANT), dt (input), it (scale), zt (zeroPoint), to
 * (output), n (input elements) */
cudaError_t ck_quantize(const wnn_kernel_args *k, const wnn_quant_params *p,
                        const void *x, const void *scale, const void *zero,
                        void *y, cudaStream_t s);

/* ---- reductions and pooling (reduce.cu) ------------------------------------ */
/* reduce*: p->O outputs (row-major over the kept groups kext, at input
 * offsets sum(kidx * kst)) of p->R reduced elements each; k: op, dt. */
#define CU_OP(ID, kind, code)
#define CU_REDUCE(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_R_COUNT
};
#undef CU_OP
cudaError_t ck_reduce(const wnn_kernel_args *k, const wnn_reduce_params *p,
                      const void *x, void *y, cudaStream_t s);

/* argMin / argMax (k: op 1 for argMax, dt, to) and cumulativeSum (k: dt,
 * flags) along one axis: the input is [outer, n, inner]. */
cudaError_t ck_arg_min_max(const wnn_kernel_args *k, const wnn_axis_params *p,
                           const void *x, void *y, cudaStream_t s);
cudaError_t ck_cumulative_sum(const wnn_kernel_args *k,
                              const wnn_axis_params *p, const void *x, void *y,
                              cudaStream_t s);

/* averagePool2d / l2Pool2d / maxPool2d, nchw or nhwc; k: op (WNN_KPOOL_*),
 * dt, n (output elements) */
cudaError_t ck_pool2d(const wnn_kernel_args *k, const wnn_pool_params *p,
                      const void *x, void *y, cudaStream_t s);

/* The fused epilogue of a product or convolution (elementwise.cu): see
 * wnn_epi_params. */
cudaError_t ck_epilogue(const wnn_epi_params *p, const void *b1,
                        const void *addend, void *y, cudaStream_t s);

/* ---- convolutions (conv.cu) ------------------------------------------------ */
/* conv2d (transpose 0; filter layouts WNN_CONV_*) and convTranspose2d
 * (transpose 1; WNN_CONVT_*): one thread per output element, float32 sums;
 * k: dt, n (output elements); bias NULL when p->bias is 0. */
cudaError_t ck_conv2d(const wnn_kernel_args *k, const wnn_conv_params *p,
                      const void *x, const void *f, const void *bias, void *y,
                      cudaStream_t s);

/* resample2d (conv.cu); k: dt, n (output elements) */
cudaError_t ck_resample2d(const wnn_kernel_args *k,
                          const wnn_resample_params *p, const void *x, void *y,
                          cudaStream_t s);

/* ---- recurrent networks (recurrent.cu) ------------------------------------- */
/* gru / gruCell and lstm / lstmCell in float32 (float16 operands widened,
 * outputs rounded once), as cpu/kernels/recurrent/recurrent.c.  The host
 * runs the products on cuBLAS: xw [T * B, D * G * H] = x W^T once, and per
 * step hr [D][B, G * H] = h R^T; these kernels do the rest.
 * bsum [D * G * H] = bias + recurrent bias (without gru resetAfter's n
 * block: that goes to rbn [D * H]); h [D * B * H] = h0 or 0; c likewise
 * (lstm).  Absent operands are NULL. */
cudaError_t ck_rnn_init(const wnn_rnn_params *p, const void *bias,
                        const void *rbias, const void *h0, const void *c0,
                        float *bsum, float *rbn, float *h, float *c,
                        cudaStream_t s);
/* Gate math of step k (0 .. T-1, in run order) for every direction: phase
 * 0: lstm, gru with resetAfter, or gru's z and r (r * h into rh, the
 * activated z kept in hr); phase 1: gru without resetAfter after
 * (r * h) Rn.  hp / cp: the states before the step, hn / cn after;
 * seq (output data type) [T, D, B, H] or NULL; peep (operand) or NULL. */
cudaError_t ck_rnn_gates(const wnn_rnn_params *p, int phase, int64_t k,
                         const float *xw, float *hr, const float *bsum,
                         const float *rbn, const void *peep, const float *hp,
                         const float *cp, float *hn, float *cn, float *rh,
                         void *seq, cudaStream_t s);

/* A kernel's attributes: fails (cudaErrorNoKernelImageForDevice) when the
 * device cannot run the code this library was built for. */
cudaError_t ck_probe(void);

#ifdef __cplusplus
}
#endif
#endif
