/* cuda_kernels.h -- the interface between the CUDA backend's host code
 * (backend_cuda.c, plain C, which reads the graph IR) and its kernels
 * (*.cu, C++, which never see the IR).  Every launcher takes a parameter
 * struct that backend_cuda.c fills once at compile(), the device pointers of
 * the node's operands and the backend's stream; it only enqueues work (no
 * synchronisation) and returns cudaGetLastError().
 *
 * The semantics of every kernel are those of the CPU kernels in cpu/kernels/
 * (see the comment at the top of each .cu file); element counts are below
 * 2^31 (the builder's "valid dimension" rule), so flat indices are
 * decomposed with 32-bit arithmetic and offsets are int64. */
#ifndef WNN_CUDA_KERNELS_H
#define WNN_CUDA_KERNELS_H
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Data types: the numbering of wnn_dtype (webnn_core.h); backend_cuda.c
 * checks that the two agree at compile time. */
enum { CK_F32 = 0, CK_F16, CK_I32, CK_U32, CK_I64, CK_U64, CK_I8, CK_U8 };

#define CK_RANK 8  /* WNN_MAX_RANK */
#define CK_VR 18   /* view rank: tile needs 2 * rank */

/* Offsets of up to 3 operands broadcast to an output shape (NumPy rules),
 * adjacent dimensions merged where all operands stay contiguous: output
 * element i (row-major over shape) reads operand k at
 * sum(index[d] * st[k][d]). */
typedef struct ck_bcast {
    int rank; /* >= 1 */
    uint32_t shape[CK_RANK];
    int64_t st[3][CK_RANK];
} ck_bcast;

/* ---- element-wise (elementwise.cu) --------------------------------------- */
/* op codes generated from cuda_ops.h, in its rows' order */
#define CU_OP(ID, kind, code)
#define CU_UNARY(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_U_IDENTITY
};
#undef CU_OP

typedef struct ck_unary_p {
    int op, ti, to;
    int64_t n;
    float a, b;            /* alpha, beta, already cast to the input type */
    float lo, hi;          /* clamp bounds, float domain                 */
    int64_t ilo, ihi;      /* clamp bounds, int64 domain                 */
    uint64_t ulo, uhi;     /* clamp bounds, uint64 domain                */
} ck_unary_p;
cudaError_t ck_unary(const ck_unary_p *p, const void *x, void *y,
                     cudaStream_t s);

#define CU_OP(ID, kind, code)
#define CU_BINARY(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_B_COUNT
};
#undef CU_OP

typedef struct ck_binary_p {
    int op, ti, to;
    int64_t n;
    ck_bcast it;
} ck_binary_p;
cudaError_t ck_binary(const ck_binary_p *p, const void *a, const void *b,
                      void *y, cudaStream_t s);

typedef struct ck_where_p {
    int es; /* element size of the values */
    int64_t n;
    ck_bcast it;
} ck_where_p;
cudaError_t ck_where(const ck_where_p *p, const void *cond, const void *t,
                     const void *f, void *y, cudaStream_t s);

cudaError_t ck_cast(int ti, int to, int64_t n, const void *x, void *y,
                    cudaStream_t s);

/* ---- data movement (movement.cu) ----------------------------------------- */
/* Strided copy: element (i...) of the view goes from in[sum i*is] to
 * out[sum i*os]; `in` and `out` point at element (0, ..., 0) (strides may be
 * 0 for broadcasts, negative for reversed dimensions). */
typedef struct ck_view_p {
    int rank, es;
    int64_t n;
    uint32_t shape[CK_VR];
    int64_t is[CK_VR], os[CK_VR];
} ck_view_p;
cudaError_t ck_copy_view(const ck_view_p *p, const void *in, void *out,
                         cudaStream_t s);

enum { CK_PAD_CONSTANT = 0, CK_PAD_EDGE, CK_PAD_REFLECTION };
typedef struct ck_pad_p {
    int rank, es, mode;
    int64_t n;
    uint32_t ishape[CK_RANK], oshape[CK_RANK];
    int64_t begin[CK_RANK], ist[CK_RANK];
    uint64_t value; /* the padding value's bits, cast to the type */
} ck_pad_p;
cudaError_t ck_pad(const ck_pad_p *p, const void *x, void *y, cudaStream_t s);

typedef struct ck_tri_p {
    int es, upper;
    int64_t n, h, w, diag;
} ck_tri_p;
cudaError_t ck_triangular(const ck_tri_p *p, const void *x, void *y,
                          cudaStream_t s);

/* gather: output[o, j, r] = input[o, index(j), r] */
typedef struct ck_gather_p {
    int es, it; /* element size, indices' data type */
    int64_t n, dim, inner, n_idx;
} ck_gather_p;
cudaError_t ck_gather(const ck_gather_p *p, const void *x, const void *idx,
                      void *y, cudaStream_t s);

/* gatherElements (n: indices' elements) and scatterElements (n: outer *
 * inner pairs, each walking a_n updates in order) */
typedef struct ck_gather_el_p {
    int es, it;
    int64_t n, dim, a_n, inner;
} ck_gather_el_p;
cudaError_t ck_gather_elements(const ck_gather_el_p *p, const void *x,
                               const void *idx, void *y, cudaStream_t s);
cudaError_t ck_scatter_elements(const ck_gather_el_p *p, const void *idx,
                                const void *upd, void *y, cudaStream_t s);

/* gatherND / scatterND: tuples of `coord` indices address slices of `slice`
 * elements; n_slices = prod(dims[0..coord)). */
typedef struct ck_nd_p {
    int es, it, coord;
    int64_t tuples, slice, n_slices;
    int64_t dims[CK_RANK], strides[CK_RANK];
} ck_nd_p;
cudaError_t ck_gather_nd(const ck_nd_p *p, const void *x, const void *idx,
                         void *y, cudaStream_t s);
/* `winner`: scratch of n_slices int32 (the last tuple writing each slice) */
cudaError_t ck_scatter_nd(const ck_nd_p *p, const void *idx, const void *upd,
                          void *y, int32_t *winner, cudaStream_t s);

/* Pointer arrays of a broadcast batched matmul: for output matrix i,
 * ptrs[i] = a + off_a(i), ptrs[batch + i] = b + off_b(i),
 * ptrs[2 batch + i] = c + i * mc (offsets in bytes). */
typedef struct ck_bptr_p {
    int rb;
    int64_t batch, ma, mb, mc;
    uint32_t oshape[CK_RANK];
    int64_t sa[CK_RANK], sb[CK_RANK];
} ck_bptr_p;
cudaError_t ck_batch_pointers(const ck_bptr_p *p, const void *a,
                              const void *b, void *c, void **ptrs,
                              cudaStream_t s);

/* ---- normalization (normalization.cu) ------------------------------------- */
/* G groups of S elements: group g starts at sum(kidx[d] * kst[d]) over the
 * kept dimensions (g decomposed over kext), element j of a group (in axes
 * order) is at + sum(ridx[d] * rst[d]) (j decomposed over rext).  Scale and
 * bias: per element j (per_channel == 0: layerNormalization) or one value
 * per group, index g % per_channel (instanceNormalization). */
typedef struct ck_norm_p {
    int dt, nk, nr;
    int64_t per_channel;
    int64_t G, S;
    uint32_t kext[CK_RANK], rext[CK_RANK];
    int64_t kst[CK_RANK], rst[CK_RANK];
    double eps;
} ck_norm_p;
cudaError_t ck_norm(const ck_norm_p *p, const void *x, const void *scale,
                    const void *bias, void *y, cudaStream_t s);

typedef struct ck_bn_p {
    int dt;
    int64_t n, C, inner;
    double eps;
} ck_bn_p;
/* coef: scratch of 3 * C doubles */
cudaError_t ck_batch_norm(const ck_bn_p *p, const void *x, const void *mean,
                          const void *var, const void *scale, const void *bias,
                          void *y, double *coef, cudaStream_t s);

typedef struct ck_softmax_p {
    int dt;
    int64_t outer, C, inner;
} ck_softmax_p;
cudaError_t ck_softmax(const ck_softmax_p *p, const void *x, void *y,
                       cudaStream_t s);

/* ---- quantization (normalization.cu) -------------------------------------- */
/* Blockwise broadcasting: input element (i...) uses scale / zeroPoint
 * element sum((i[d] / block[d]) * sstride[d]). */
typedef struct ck_quant_p {
    int dequant, it, st, zt, ot, rank;
    int64_t n;
    uint32_t shape[CK_RANK], block[CK_RANK];
    int64_t sstride[CK_RANK];
} ck_quant_p;
cudaError_t ck_quantize(const ck_quant_p *p, const void *x, const void *scale,
                        const void *zero, void *y, cudaStream_t s);

/* ---- reductions and pooling (reduce.cu) ------------------------------------ */
/* reduce*: G outputs (row-major over the kept dimensions kext, at input
 * offsets sum(kidx * kst)) of S reduced elements each (over rext / rst). */
#define CU_OP(ID, kind, code)
#define CU_REDUCE(ID, code) code,
enum {
#include "cuda_ops.h"
    CK_R_COUNT
};
#undef CU_OP
typedef struct ck_reduce_p {
    int op, dt, nk, nr;
    int64_t G, S;
    uint32_t kext[CK_RANK], rext[CK_RANK];
    int64_t kst[CK_RANK], rst[CK_RANK];
} ck_reduce_p;
cudaError_t ck_reduce(const ck_reduce_p *p, const void *x, void *y,
                      cudaStream_t s);

/* argMin / argMax (is_max) and cumulativeSum along one axis: the input is
 * [outer, n, inner]. */
typedef struct ck_axis_p {
    int dt, to, is_max, exclusive, reversed;
    int64_t outer, n, inner;
} ck_axis_p;
cudaError_t ck_arg_min_max(const ck_axis_p *p, const void *x, void *y,
                           cudaStream_t s);
cudaError_t ck_cumulative_sum(const ck_axis_p *p, const void *x, void *y,
                              cudaStream_t s);

/* averagePool2d / l2Pool2d / maxPool2d, nchw or nhwc */
enum { CK_POOL_AVG, CK_POOL_L2, CK_POOL_MAX };
typedef struct ck_pool_p {
    int op, dt, nhwc;
    int64_t n; /* output elements */
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, dh, dw, pt, pl;
} ck_pool_p;
cudaError_t ck_pool2d(const ck_pool_p *p, const void *x, void *y,
                      cudaStream_t s);

/* The fused epilogue of a product or convolution (elementwise.cu), in
 * place on its float32 / float16 output y of n elements, with the rounding
 * of the unfused nodes (float16: every step rounded as its own node would):
 *   y = act(((y + b1[c]) + addend) )  (each part optional)
 * b1: a per-channel bias (the convolution's own, when the convolution ran
 * without it); addend: add 1 = same shape as y, 2 = per channel; the channel
 * of element i is (i / inner) % C; act: CK_U_* (with u's parameters) or -1. */
typedef struct ck_epi_p {
    int dt, bias, add, act;
    int64_t n, C, inner;
    ck_unary_p u;
} ck_epi_p;
cudaError_t ck_epilogue(const ck_epi_p *p, const void *b1, const void *addend,
                        void *y, cudaStream_t s);

/* ---- convolutions (conv.cu) ------------------------------------------------ */
/* conv2d (transpose 0; filter layouts WNN_CONV_*) and convTranspose2d
 * (transpose 1; WNN_CONVT_*): one thread per output element, float32 sums. */
typedef struct ck_conv_p {
    int dt, transpose, nhwc, flayout, has_bias;
    int64_t n; /* output elements */
    int64_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, groups;
} ck_conv_p;
cudaError_t ck_conv2d(const ck_conv_p *p, const void *x, const void *f,
                      const void *bias, void *y, cudaStream_t s);

/* resample2d (conv.cu): rank-4 input, resampled axes ya < xa */
typedef struct ck_resample_p {
    int dt, linear, ya, xa;
    int64_t n;
    int64_t in[4], out[4];
} ck_resample_p;
cudaError_t ck_resample2d(const ck_resample_p *p, const void *x, void *y,
                          cudaStream_t s);

/* ---- recurrent networks (recurrent.cu) ------------------------------------- */
/* gru / gruCell (lstm 0) and lstm / lstmCell (lstm 1) in float32 (float16
 * operands widened, outputs rounded once), as cpu/kernels/recurrent/recurrent.c: G gate
 * blocks of H units (G = 3 or 4), D directions, T steps, batch B.  The host
 * runs the products on cuBLAS: xw [T * B, D * G * H] = x W^T once, and per
 * step hr [D][B, G * H] = h R^T; these kernels do the rest. */
enum { CK_RNN_RELU = 0, CK_RNN_SIGMOID, CK_RNN_TANH };      /* = WNN_RNN_* */
enum { CK_RNN_FORWARD = 0, CK_RNN_BACKWARD, CK_RNN_BOTH }; /* = WNN_RNN_* */
typedef struct ck_rnn_p {
    int dt, lstm, reset_after, direction, D;
    int act_f, act_g, act_h;  /* CK_RNN_RELU / SIGMOID / TANH */
    int gz, gr;               /* gru: blocks of z and r (n is block 2)   */
    int gi, go, gf, gg;       /* lstm: blocks of i, o, f, g              */
    int64_t T, B, H;
} ck_rnn_p;
/* bsum [D * G * H] = bias + recurrent bias (without gru resetAfter's n
 * block: that goes to rbn [D * H]); h [D * B * H] = h0 or 0; c likewise
 * (lstm).  Absent operands are NULL. */
cudaError_t ck_rnn_init(const ck_rnn_p *p, const void *bias,
                        const void *rbias, const void *h0, const void *c0,
                        float *bsum, float *rbn, float *h, float *c,
                        cudaStream_t s);
/* Gate math of step k (0 .. T-1, in run order) for every direction: phase
 * 0: lstm, gru with resetAfter, or gru's z and r (r * h into rh, the
 * activated z kept in hr); phase 1: gru without resetAfter after
 * (r * h) Rn.  hp / cp: the states before the step, hn / cn after;
 * seq (output data type) [T, D, B, H] or NULL; peep (operand) or NULL. */
cudaError_t ck_rnn_gates(const ck_rnn_p *p, int phase, int64_t k,
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
