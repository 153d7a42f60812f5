/* wnn_kernel_abi.h -- the kernel ABI: the parameter blocks every backend's
 * kernels read, in one plain-C header with no core include (only <stdint.h>
 * and <stdbool.h>), so that the C compiler (the core, the CPU kernels, the
 * CUDA backend's host code) and nvcc / the C++ compiler (the .cu files of
 * kernels_cuda/ and their CPU emulation) read the same definitions.
 *
 *   - the lowered parameter blocks (wnn_*_params, the wnn_lowered union):
 *     what the core's lowering (csrc/compiler/lower/, lower.h) computes once
 *     per node; the CPU kernels read them from g->lowered, the CUDA
 *     launchers (kernels_cuda/cuda_kernels.h) take them as they are;
 *   - wnn_scalar_params: the element-wise operators' scalar options cast to
 *     the input's type (wnn_scalar_params_of, webnn_core.h);
 *   - wnn_kernel_args: the per-node extras a kernel needs beside its block
 *     (data types, element count, op code, epsilon, ...), explicit launcher
 *     arguments filled by the backend from the node's descriptors;
 *   - the fused epilogue's block (wnn_epi_params): filled by the CUDA
 *     backend from the schedule's step (its extents: wnn_step epi_n,
 *     epi_c, epi_inner) and the chain.
 *
 * Data types are numbered as wnn_dtype (webnn_core.h: WNN_KDT_* here, both
 * checked equal where both are seen, lower.h).  Sizes are int64 / uint64
 * (element counts are below 2^31, the builder's "valid dimension" rule: a
 * kernel may decompose flat indices in 32 bits). */
#ifndef WNN_KERNEL_ABI_H
#define WNN_KERNEL_ABI_H
#include <stdbool.h>
#include <stdint.h>

#ifndef WNN_MAX_RANK
#define WNN_MAX_RANK 8 /* = webnn_core.h's (the same definition) */
#endif

/* wnn_dtype's numbering */
enum {
    WNN_KDT_F32 = 0,
    WNN_KDT_F16,
    WNN_KDT_I32,
    WNN_KDT_U32,
    WNN_KDT_I64,
    WNN_KDT_U64,
    WNN_KDT_I8,
    WNN_KDT_U8
};

/* pad modes (= WNN_PAD_* of ops/defs/movement.def) */
enum { WNN_KPAD_CONSTANT = 0, WNN_KPAD_EDGE, WNN_KPAD_REFLECTION };

/* The scalar options of the element-wise operators, cast to the input's
 * data type as their spec steps say (alpha/beta of elu, leakyRelu,
 * hardSigmoid, linear; clamp's bounds), shared by every backend. */
typedef struct wnn_scalar_params {
    float a, b;         /* alpha, beta                                  */
    float lo, hi;       /* clamp bounds, float32 / float16 inputs       */
    int64_t ilo, ihi;   /* clamp bounds, integer inputs but uint64      */
    uint64_t ulo, uhi;  /* clamp bounds, uint64 inputs                  */
} wnn_scalar_params;

/* ---- the lowered blocks (csrc/compiler/lower/, lower.h) ------------------- */
#define WNN_BCAST_MAX_OPERANDS 3

/* Element i of the output (row-major over shape[0..rank)) reads operand k
 * at sum(index[d] * st[k][d]) elements (st 0: broadcast). */
typedef struct wnn_broadcast_params {
    uint32_t rank;      /* after merging, >= 1 */
    uint32_t n;         /* operands */
    uint64_t shape[WNN_MAX_RANK];
    int64_t st[WNN_BCAST_MAX_OPERANDS][WNN_MAX_RANK];
} wnn_broadcast_params;

/* conv2d / convTranspose2d (all sizes in elements) */
typedef struct wnn_conv_params {
    bool transpose, nhwc;
    int filter_layout;      /* WNN_CONV_* / WNN_CONVT_* (ops/options) */
    uint32_t bias;          /* node input + 1, 0: none */
    int64_t N, C, H, W;     /* input */
    int64_t O, OH, OW;      /* output channels and size */
    int64_t KH, KW;         /* filter size */
    int64_t G, Cg, Og;      /* groups, channels per group in and out */
    int64_t pad[4];         /* top, bottom, left, right */
    int64_t sh, sw, dh, dw; /* strides, dilations */
} wnn_conv_params;

/* averagePool2d / l2Pool2d / maxPool2d */
typedef struct wnn_pool_params {
    bool nhwc;
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw;          /* window */
    int64_t sh, sw, dh, dw;  /* strides, dilations */
    int64_t pad[4];          /* top, bottom, left, right */
} wnn_pool_params;

/* reduce*: the input (contiguous) as kept and reduced groups, outer first,
 * size-1 dimensions dropped and neighbours of the same group merged.  Output
 * o (row-major over kext) reduces the R elements at
 * sum(kidx * kst) + sum(ridx * rst).  nr >= 1 (one group of size 1, stride
 * 0, when nothing is reduced). */
typedef struct wnn_reduce_params {
    uint32_t nk, nr;
    uint64_t kext[WNN_MAX_RANK], kst[WNN_MAX_RANK];
    uint64_t rext[WNN_MAX_RANK], rst[WNN_MAX_RANK];
    uint64_t O, R;          /* outputs, reduced elements per output */
    bool inner_red;         /* the innermost group is reduced */
} wnn_reduce_params;

/* instanceNormalization / layerNormalization: G groups (row-major over
 * kext, at offsets sum(kidx * kst)) of S elements each (row-major over
 * rext, at sum(ridx * rst); layerNormalization: in the order of axes, the
 * order of the scale / bias elements).  per_channel: instanceNormalization's
 * C (scale / bias element = group % C), 0 for layerNormalization (scale /
 * bias element = position in the group). */
typedef struct wnn_norm_params {
    uint32_t nk, nr;
    int64_t kext[WNN_MAX_RANK], kst[WNN_MAX_RANK];
    int64_t rext[WNN_MAX_RANK], rst[WNN_MAX_RANK];
    int64_t G, S;
    int64_t per_channel;
} wnn_norm_params;

/* An operator along one axis: the input as [outer, n, inner]. */
typedef struct wnn_axis_params {
    uint32_t axis;
    uint64_t outer, n, inner;
} wnn_axis_params;

/* gather (input [outer, dim, inner] around axis; n_idx indices),
 * gatherElements / scatterElements (a_n: the indices' size along axis),
 * gatherND / scatterND (tuples of coord indices address slices of `slice`
 * elements; slice number = sum(index[d] * strides[d]), n_slices of them). */
typedef struct wnn_gather_params {
    uint32_t axis;
    uint64_t outer, dim, inner, n_idx, a_n;
    uint32_t coord;
    uint64_t tuples, slice, n_slices;
    uint64_t dims[WNN_MAX_RANK], strides[WNN_MAX_RANK];
} wnn_gather_params;

/* quantizeLinear / dequantizeLinear: input element (i...) of the merged
 * shape uses scale / zeroPoint element sum((i[d] / block[d]) * sstride[d]);
 * rank >= 1. */
typedef struct wnn_quant_params {
    uint32_t rank;
    uint64_t shape[WNN_MAX_RANK];
    uint64_t block[WNN_MAX_RANK];   /* input dim / scale dim */
    uint64_t sstride[WNN_MAX_RANK]; /* scale's element strides */
} wnn_quant_params;

/* One strided copy: element (i...) goes from input `in` at
 * in_off + sum(i * is) to output `out` at out_off + sum(i * os) (elements;
 * is 0: broadcast, negative: reversed).  Simplified: rank >= 1, no size-1
 * dimension unless rank 1, no two neighbours contiguous on both sides. */
#define WNN_VIEW_RANK (2 * WNN_MAX_RANK + 2) /* tile needs 2 * rank */
typedef struct wnn_view {
    int rank;
    uint32_t in, out;        /* node input / output */
    int64_t n;               /* elements */
    int64_t in_off, out_off; /* elements */
    int64_t shape[WNN_VIEW_RANK];
    int64_t is[WNN_VIEW_RANK], os[WNN_VIEW_RANK];
} wnn_view;

/* transpose expand slice tile reverse (one view), split (one per output),
 * concat (one per input); v points into g->lowered's own allocation. */
typedef struct wnn_views_params {
    uint32_t n;
    const wnn_view *v;
} wnn_views_params;

/* pad: output element (i...) reads input element (i - begin...) (mapped
 * by mode where outside) at sum(... * ist), else is `value`. */
typedef struct wnn_pad_params {
    uint32_t rank;
    int mode;               /* WNN_PAD_* (ops/options): WNN_KPAD_* */
    uint64_t value;         /* the padding value's bytes, in the input's type */
    int64_t ist[WNN_MAX_RANK];
    int64_t ishape[WNN_MAX_RANK]; /* the input's shape */
    int64_t begin[WNN_MAX_RANK], end[WNN_MAX_RANK];
} wnn_pad_params;

/* matmul: batch matrices of M x K times K x N.  mode ONE: b is one matrix
 * and a's batch one tall matrix of batch * M rows; STRIDED: a and b each
 * one matrix or one per output matrix (ma, mb: element strides between
 * their matrices, 0: shared); BROADCAST: output matrix i (row-major over
 * bshape[0..rb)) multiplies a's matrix sum(idx * sa) by b's sum(idx * sb)
 * (strides in matrices, 0: broadcast; filled for every mode). */
enum { WNN_MM_ONE = 0, WNN_MM_STRIDED, WNN_MM_BROADCAST };
typedef struct wnn_matmul_params {
    int mode;
    int64_t M, N, K, batch;
    uint32_t rb;
    int64_t bshape[WNN_MAX_RANK], sa[WNN_MAX_RANK], sb[WNN_MAX_RANK];
    int64_t ma, mb;
} wnn_matmul_params;

/* gemm: alpha op(a) op(b) + beta c, op(a) M x K, lda / ldb a's and b's row
 * lengths as stored; alpha, beta as the output's type holds them; c: node
 * input + 1 of c (0: none, or beta is 0 and c is not read), element
 * (i, j) at i * cs0 + j * cs1 (0: broadcast). */
typedef struct wnn_gemm_params {
    bool ta, tb;
    int64_t M, N, K, lda, ldb;
    float alpha, beta;
    uint32_t c;
    int64_t cs0, cs1;
} wnn_gemm_params;

/* triangular (compiler/lower/triangular.c): the input as [n / (h w), h,
 * w]; the part kept above (upper) or below the diagonal `diag` */
typedef struct wnn_tri_params {
    int64_t h, w, diag;
    int32_t upper;
} wnn_tri_params;

/* resample2d (compiler/lower/resample.c): rank-4 input and output shapes,
 * resampled axes ya < xa, linear (else nearest neighbour) */
typedef struct wnn_resample_params {
    int32_t linear, ya, xa;
    int64_t in[4], out[4];
} wnn_resample_params;

/* gru / gruCell (lstm 0) and lstm / lstmCell (lstm 1): G gate blocks of H
 * units (G = 3 or 4), D directions, T steps, batch B, I input features
 * (compiler/lower/recurrent.c); the optional operands as node input + 1
 * (0: absent) and the extra outputs as node output + 1 (0: none). */
enum { WNN_KRNN_RELU = 0, WNN_KRNN_SIGMOID, WNN_KRNN_TANH };      /* = WNN_RNN_* */
enum { WNN_KRNN_FORWARD = 0, WNN_KRNN_BACKWARD, WNN_KRNN_BOTH }; /* = WNN_RNN_* */
typedef struct wnn_rnn_params {
    int32_t dt, lstm, reset_after, direction, D;
    int32_t act_f, act_g, act_h;  /* WNN_KRNN_RELU / SIGMOID / TANH    */
    int32_t gz, gr;               /* gru: blocks of z and r (n is block 2) */
    int32_t gi, go, gf, gg;       /* lstm: blocks of i, o, f, g        */
    int64_t T, B, H, I;
    uint32_t bias, rbias, peep, h0, c0;  /* node inputs + 1            */
    uint32_t out_c, out_seq;             /* node outputs + 1           */
} wnn_rnn_params;

typedef enum wnn_lowered_kind {
    WNN_LOWER_NONE = 0,     /* the backend reads the node as it is */
    WNN_LOWER_BROADCAST,
    WNN_LOWER_CONV,
    WNN_LOWER_POOL,
    WNN_LOWER_REDUCE,
    WNN_LOWER_AXIS,
    WNN_LOWER_NORM,
    WNN_LOWER_GATHER,
    WNN_LOWER_QUANT,
    WNN_LOWER_VIEWS,
    WNN_LOWER_PAD,
    WNN_LOWER_MATMUL,
    WNN_LOWER_GEMM,
    WNN_LOWER_TRI,
    WNN_LOWER_RESAMPLE,
    WNN_LOWER_RNN,
} wnn_lowered_kind;

struct wnn_lowered {
    wnn_lowered_kind kind;
    union {
        wnn_broadcast_params bcast;
        wnn_conv_params conv;
        wnn_pool_params pool;
        wnn_reduce_params reduce;
        wnn_axis_params axis;
        wnn_norm_params norm;
        wnn_gather_params gather;
        wnn_quant_params quant;
        wnn_views_params views;
        wnn_pad_params pad;
        wnn_matmul_params matmul;
        wnn_gemm_params gemm;
        wnn_tri_params tri;
        wnn_resample_params resample;
        wnn_rnn_params rnn;
    } u;
};
typedef struct wnn_lowered wnn_lowered;

/* ---- per-node extras --------------------------------------------------- */
/* What a kernel needs beside its block, from the node's descriptors and
 * options (the CUDA backend fills one per node at compile: kernels_cuda/
 * cu_ops.c prep_node).  Unused fields are 0. */
typedef struct wnn_kernel_args {
    int32_t op;     /* the kernel's op code (kernels_cuda/cuda_ops.h); pool:
                     * WNN_KPOOL_*; argMin / argMax: 1 for argMax */
    int32_t dt;     /* input 0's data type */
    int32_t to;     /* output 0's data type */
    int32_t it;     /* indices' data type (gather, scatter); quantize: the
                     * scale's */
    int32_t zt;     /* quantize: the zeroPoint's data type */
    int32_t es;     /* element size of input 0 (where: of the values) */
    int32_t flags;  /* WNN_KF_* */
    int64_t n;      /* elements: output 0's (quantize, batchNormalization:
                     * input 0's) */
    double eps;     /* normalization's epsilon */
    wnn_scalar_params sp; /* unary: alpha, beta, clamp bounds */
} wnn_kernel_args;

enum {
    WNN_KF_EXCLUSIVE = 1, /* cumulativeSum */
    WNN_KF_REVERSED = 2,  /* cumulativeSum */
    /* 4: unused (triangular's part kept is wnn_tri_params.upper) */
    WNN_KF_DEQUANT = 8    /* dequantizeLinear (else quantizeLinear) */
};
enum { WNN_KPOOL_AVG = 0, WNN_KPOOL_L2, WNN_KPOOL_MAX };

/* The fused epilogue of a product or convolution, in place on its float32 /
 * float16 output y of n elements, with the rounding of the unfused nodes
 * (float16: every step rounded as its own node would):
 *   y = act((y + b1[c]) + addend)  (each part optional)
 * b1: a per-channel bias (the convolution's own, when the convolution ran
 * without it); add: 1 an addend of y's shape, 2 one per channel; the
 * channel of element i is (i / inner) % C; act: a unary op code (with sp)
 * or -1. */
typedef struct wnn_epi_params {
    int32_t dt, bias, add, act;
    int64_t n, C, inner;
    wnn_scalar_params sp;
} wnn_epi_params;

#endif
