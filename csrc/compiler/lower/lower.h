/* lower.h -- lowering: each node of a compiled graph turned, once, into a
 * typed, fully resolved parameter block that every backend's kernels and
 * launchers read instead of re-deriving it (at compile or per dispatch).
 *
 * The core's pipeline (core/compile.c) calls wnn_lower_graph() after the
 * memory plan and before backend->compile; the result is g->lowered, one
 * wnn_lowered per node id.  Backends include this header for the types
 * only: the functions are the compiler's (compiler/lower/<family>.c).  The
 * types -- the parameter blocks and the wnn_lowered union -- are the kernel
 * ABI's, include/wnn_kernel_abi.h (plain C with no core include, so that
 * nvcc reads them too: the CUDA launchers take the blocks as they are).
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
 *   triangular.c  triangular: the input as [n / (h w), h, w], the diagonal
 *                 and the part kept -- read by cpu/kernels/movement/ and the
 *                 CUDA triangular launcher.
 *   resample.c    resample2d: the shapes, the resampled axes in order, the
 *                 mode -- read by cpu/kernels/resample2d/ and the CUDA
 *                 resample launcher.
 *   recurrent.c   gru, gruCell, lstm, lstmCell: steps, batch, units, input
 *                 features, directions, activations, gate blocks, the
 *                 optional operands' inputs and the outputs -- read by
 *                 cpu/kernels/recurrent/ and the CUDA recurrent launchers.
 *   matmul.c      matmul: M, N, K and the batch (one tall product, strided
 *                 or broadcast both ways); gemm: sizes, transposes, the
 *                 scalars in the output's type and c's broadcast -- read by
 *                 cpu/blis/gemm.c and the CUDA cuBLAS launchers. */
#ifndef WNN_LOWER_H
#define WNN_LOWER_H
#include "../../core/internal.h"

#include "../../include/wnn_kernel_abi.h"
#include "../../ops/options.h"

/* The kernel ABI's constants follow the core's (wnn_kernel_abi.h has no
 * core include). */
_Static_assert((int)WNN_KDT_F32 == (int)WNN_FLOAT32 && (int)WNN_KDT_F16 == (int)WNN_FLOAT16 &&
                   (int)WNN_KDT_I32 == (int)WNN_INT32 && (int)WNN_KDT_U32 == (int)WNN_UINT32 &&
                   (int)WNN_KDT_I64 == (int)WNN_INT64 && (int)WNN_KDT_U64 == (int)WNN_UINT64 &&
                   (int)WNN_KDT_I8 == (int)WNN_INT8 && (int)WNN_KDT_U8 == (int)WNN_UINT8,
               "wnn_kernel_abi.h data types follow wnn_dtype");
_Static_assert((int)WNN_KPAD_CONSTANT == (int)WNN_PAD_CONSTANT &&
                   (int)WNN_KPAD_EDGE == (int)WNN_PAD_EDGE &&
                   (int)WNN_KPAD_REFLECTION == (int)WNN_PAD_REFLECTION,
               "wnn_kernel_abi.h pad modes follow WNN_PAD_*");
_Static_assert((int)WNN_KRNN_RELU == (int)WNN_RNN_RELU && (int)WNN_KRNN_SIGMOID == (int)WNN_RNN_SIGMOID &&
                   (int)WNN_KRNN_TANH == (int)WNN_RNN_TANH &&
                   (int)WNN_KRNN_FORWARD == (int)WNN_RNN_FORWARD &&
                   (int)WNN_KRNN_BACKWARD == (int)WNN_RNN_BACKWARD &&
                   (int)WNN_KRNN_BOTH == (int)WNN_RNN_BOTH,
               "wnn_kernel_abi.h recurrent constants follow WNN_RNN_*");

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
/* Every lowering declared from ops.def's lower column (none by hand;
 * tests/architecture/test_op_table.py checks it): a row's name is
 * declared (again, for the rows of one family: a repeated declaration is
 * plain C), a 0 declares nothing.  WNN_LOWER_IS0(x) is 1 for the token 0,
 * else 0: x pasted onto a probe that only WNN_LOWER_PROBE_0 turns into two
 * arguments. */
#define WNN_LOWER_PROBE_0 ~, 1
#define WNN_LOWER_SECOND(a, b, ...) b
#define WNN_LOWER_IS0_(...) WNN_LOWER_SECOND(__VA_ARGS__, 0, 0)
#define WNN_LOWER_IS0(x) WNN_LOWER_IS0_(WNN_LOWER_PROBE_##x)
#define WNN_LOWER_DECL_0(x) WNN_LOWER_FN(x); /* a name */
#define WNN_LOWER_DECL_1(x)                   /* 0       */
#define WNN_LOWER_DECL_(z, x) WNN_LOWER_DECL_##z(x)
#define WNN_LOWER_DECL(z, x) WNN_LOWER_DECL_(z, x)
#define WNN_OP(ID, camel, snake, sig, opts, check, limits, family, traits, \
               lower, cpu)                                                \
    WNN_LOWER_DECL(WNN_LOWER_IS0(lower), lower)
#include "../../ops/ops.def"
#undef WNN_OP

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
