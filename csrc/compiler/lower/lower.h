/* lower.h -- lowering: each node of a compiled graph turned, once, into a
 * typed, fully resolved parameter block that every backend's kernels and
 * launchers read instead of re-deriving it (at compile or per dispatch).
 *
 * The core's pipeline (core/compile.c) calls wnn_lower_graph() after the
 * memory plan and before backend->compile; the result is g->lowered, one
 * wnn_lowered per node id.  Backends include this header for the types
 * only: the functions are the compiler's (compiler/lower/<family>.c).
 *
 * What lowers a node is its ops.def row: its family (WNN_FAMILY_*) and its
 * lowering (the lower column: wnn_lower_op_<family>, or for the views one
 * function per operator); wnn_lower_graph() calls it, switching on no
 * operator.  The families lowered:
 *   broadcast.c   element-wise binary operators, prelu, where: the
 *                 broadcast iterator (NumPy broadcasting, size-1 dimensions
 *                 dropped, neighbours merged where every operand stays
 *                 contiguous) -- read by cpu/kernels/elementwise/elementwise.c and the CUDA
 *                 backend's binary / where launchers.
 *   conv.c        conv2d, convTranspose2d: the geometry (sizes of both
 *                 layouts, filter size from its layout, groups, padding,
 *                 strides, dilations) -- read by cpu/kernels/conv/ and the
 *                 CUDA backend's direct-kernel launcher.
 *   pool.c        averagePool2d, l2Pool2d, maxPool2d: the window geometry --
 *                 read by cpu/kernels/pool2d/ and the CUDA pool launcher.
 *   reduce.c      reduce*: the runs (size-1 dimensions dropped, neighbours
 *                 of the same group, kept or reduced, merged); argMin /
 *                 argMax / cumulativeSum / softmax / batchNormalization: the
 *                 input as [outer, n, inner] around the axis -- read by
 *                 cpu/kernels/reduce/ and the CUDA reduce / axis / softmax /
 *                 batchNormalization launchers; instanceNormalization /
 *                 layerNormalization: the groups (kept dimensions, memory
 *                 order) and the reduced dimensions (layerNormalization:
 *                 in the order of axes, the order of scale and bias) --
 *                 read by cpu/kernels/normalization/ and the CUDA norm
 *                 launcher.
 *   gather.c      gather, gatherElements, scatterElements, gatherND,
 *                 scatterND: the extents and strides around the axis or of
 *                 the coordinate tuples -- read by cpu/kernels/gather_scatter/
 *                 and the CUDA gather / scatter launchers.
 *   quantize.c    quantizeLinear, dequantizeLinear: input and scale shapes
 *                 merged for blockwise broadcasting -- read by
 *                 cpu/kernels/quantize/ and the CUDA quantize launcher.
 *   views.c       transpose, expand, slice, tile, reverse, split, concat:
 *                 one strided copy per output (split) or input (concat),
 *                 simplified (size-1 dimensions dropped, contiguous
 *                 neighbours merged) -- read by cpu/kernels/movement/ and
 *                 the CUDA view launcher.
 *   views.c also  pad: the input's strides, the paddings, the mode and the
 *                 padding value's bits in the input's type -- read by
 *                 cpu/kernels/movement/ and the CUDA pad launcher.
 *   matmul.c      matmul: M, N, K and the batch (one tall product, strided
 *                 or broadcast both ways); gemm: sizes, transposes, the
 *                 scalars in the output's type and c's broadcast -- read by
 *                 cpu/blis/gemm.c and the CUDA cuBLAS launchers. */
#ifndef WNN_LOWER_H
#define WNN_LOWER_H
#include "../../core/internal.h"

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
    int mode;               /* WNN_PAD_* (ops/options) */
    uint64_t value;         /* the padding value's bytes, in the input's type */
    int64_t ist[WNN_MAX_RANK];
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
    } u;
};
typedef struct wnn_lowered wnn_lowered;

/* One wnn_lowered per node id of g (kind NONE for nodes not lowered). */
wnn_status wnn_lower_graph(const wnn_graph *g, wnn_lowered **out,
                           wnn_error *err);

/* A row's lowering, ops.def's lower column (0: the node is not lowered):
 * fills l -- its kind and parameter block -- for `node`; `views`: room
 * for wnn_lower_view_count(node) views (the movement operators').  An
 * error only where the node has no defined result (convTranspose2d's
 * groups).  One per family, but for the views: one per operator. */
#define WNN_LOWER_FN(name)                                                    \
    wnn_status name(wnn_lowered *l, const wnn_ir *ir, const wnn_node *node, \
                    wnn_view *views, wnn_error *err)
typedef WNN_LOWER_FN((*wnn_lower_fn));
WNN_LOWER_FN(wnn_lower_op_broadcast);
WNN_LOWER_FN(wnn_lower_op_conv);
WNN_LOWER_FN(wnn_lower_op_pool);
WNN_LOWER_FN(wnn_lower_op_reduce);
WNN_LOWER_FN(wnn_lower_op_axis);
WNN_LOWER_FN(wnn_lower_op_norm);
WNN_LOWER_FN(wnn_lower_op_gather);
WNN_LOWER_FN(wnn_lower_op_quant);
WNN_LOWER_FN(wnn_lower_op_pad);
WNN_LOWER_FN(wnn_lower_op_matmul);
WNN_LOWER_FN(wnn_lower_op_gemm);
WNN_LOWER_FN(wnn_lower_op_transpose);
WNN_LOWER_FN(wnn_lower_op_expand);
WNN_LOWER_FN(wnn_lower_op_slice);
WNN_LOWER_FN(wnn_lower_op_tile);
WNN_LOWER_FN(wnn_lower_op_reverse);
WNN_LOWER_FN(wnn_lower_op_split);
WNN_LOWER_FN(wnn_lower_op_concat);

/* broadcast.c */
void wnn_lower_broadcast(wnn_broadcast_params *it, const wnn_desc *out,
                         const wnn_desc *const *in, uint32_t n);

/* conv.c */
void wnn_lower_conv(wnn_conv_params *p, const wnn_node *node,
                    const wnn_desc *x, const wnn_desc *filter,
                    const wnn_desc *y);

/* pool.c */
void wnn_lower_pool(wnn_pool_params *p, const wnn_node *node,
                    const wnn_desc *x, const wnn_desc *y);

/* reduce.c: mask, the reduced dimensions (bit d: dimension d) */
void wnn_lower_reduce(wnn_reduce_params *p, const wnn_desc *x,
                      uint32_t mask);
void wnn_lower_axis(wnn_axis_params *p, const wnn_desc *x, uint32_t axis);
void wnn_lower_norm(wnn_norm_params *p, const wnn_node *node,
                    const wnn_desc *x);

/* gather.c (the gather and scatter operators) */
void wnn_lower_gather(wnn_gather_params *p, const wnn_node *node,
                      const wnn_desc *x, const wnn_desc *indices);

/* quantize.c */
void wnn_lower_quant(wnn_quant_params *p, const wnn_desc *x,
                     const wnn_desc *scale);

/* views.c: views the node needs (0: not of the family VIEWS; its
 * lowering fills that many) */
uint32_t wnn_lower_view_count(const wnn_node *node);
/* a view's size-1 dimensions dropped and its neighbours contiguous on both
 * sides merged (rank >= 1 after); n set.  Also the CUDA backend's own views
 * (through the core services table). */
void wnn_view_simplify(wnn_view *v);
void wnn_lower_pad(wnn_pad_params *p, const wnn_node *node,
                   const wnn_desc *x);

/* matmul.c: c is gemm's c operand's descriptor, NULL when it has none */
void wnn_lower_matmul(wnn_matmul_params *p, const wnn_desc *a,
                      const wnn_desc *b, const wnn_desc *y);
void wnn_lower_gemm(wnn_gemm_params *p, const wnn_node *node,
                    const wnn_desc *a, const wnn_desc *b, const wnn_desc *c,
                    const wnn_desc *y);

#endif
