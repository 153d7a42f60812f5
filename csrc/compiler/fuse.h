/* fuse.h -- epilogue fusion analysis (compiler/fuse.c), backend-neutral.
 *
 * For a producer node (conv2d, convTranspose2d, matmul, gemm) it finds the
 * chain that follows it and can run as one operation:
 *
 *     producer -> [add(., addend)] -> [activation]
 *
 * where every intermediate result (the producer's output, the add's output
 * when an activation follows) is used by exactly one input of the next node
 * of the chain and is not a graph output.  The add's other input (the
 * addend) must either have the producer output's shape (a residual) or be a
 * per-channel bias: after numpy broadcasting, 1 everywhere except the
 * channel axis (nchw: 1, nhwc: 3 for the convolutions, the last axis for
 * matmul / gemm), where it has the output's size.  The add's output must
 * have the producer output's shape.  The activation is one of the float
 * unary activations: the operators whose ops.def row has the trait
 * WNN_TR_ACTIVATION; the producers are those with WNN_TR_PRODUCER.
 *
 * A backend that runs a chain computes it when it reaches the chain's last
 * node (all the chain's inputs are computed by then) and writes the chain's
 * result; the other nodes of the chain do nothing.  The memory plan of
 * such a backend must keep the chain's inputs alive up to that node, and
 * gives the results of the chain's other nodes no storage:
 * wnn_plan_make_fused() (plan.c).  Both are called by the pipeline
 * (core/compile.c) for a backend that declares WNN_FUSE_EPILOGUE
 * (backend.h), never by a backend.  The CPU and CUDA backends run these
 * chains; the CPU also runs element-wise chains and conv pairs (below).
 *
 * Conv pairs (WNN_FUSE_CONV_PAIR): an epilogue chain whose result is read
 * only by the producer of a second epilogue chain, both nhwc float32, where
 * either the first producer is a conv2d with groups 1 (a 1x1 expansion, or
 * any other filter: an image's first convolution) and the second a 3x3
 * depthwise conv2d (groups = input channels = output channels) -- an
 * expansion and its depthwise convolution -- or the
 * first is such a depthwise convolution and the second such a 1x1 -- a
 * depthwise convolution and its projection: the convolutions of an
 * inverted residual block.  The first chain's `into` names the second and
 * `pair` which pair it is (1, 2), where the backend's conv_pair
 * (backend.h) says it runs the first inside the second, band of rows by
 * band of rows, without storing its result whole: then it must, as the
 * plan gives that result no storage (WNN_SLOT_FUSED).  A chain is the first of one
 * pair and the second of one at most, and a projection is not also an
 * expansion, so linked pairs run at most expansion -> depthwise ->
 * projection.  The plan keeps a chain's inputs alive to the end of the
 * last chain it runs inside.
 *
 * Batch normalization (WNN_FUSE_BN): for a backend that declares it, a
 * float32 batchNormalization over the producer's channel axis (mean,
 * variance, scale, bias float32 [C]) that is the sole reader of the
 * producer's result joins the chain right after the producer:
 * producer -> [bn] -> [add] -> [activation] (wnn_epilogue.bn).  The CPU
 * computes it on each tile as its batchNormalization kernel does (the same
 * double-precision expression per element), so the results stay equal to
 * the unfused graph's; conv2d -> batchNormalization -> relu is how ONNX
 * exports of ResNet, ShuffleNet and DenseNet arrive.
 *
 * Gates (WNN_FUSE_GATE): for a backend that declares it, the chain may end
 * in SiLU instead of an activation: t -> sigmoid(t) -> mul(t, sigmoid(t)),
 * float32, t (the producer's, bn's or add's result) read by the sigmoid and
 * the mul only and no graph output (wnn_epilogue.gate; act is the sigmoid,
 * last the mul) -- how EfficientNet's exports write swish after each
 * convolution.
 *
 * Programs (WNN_FUSE_EPI_PROG): for a backend that declares it, the chain
 * may end in a program instead of an activation or a gate: float32
 * element-wise nodes (not batchNormalization) of t's shape, in the plan's
 * order, each reading t (the producer's, bn's or add's result), results of
 * the nodes before it and float32 constants of one value only -- the
 * longest such run, up to WNN_EPI_PROG_MAX nodes, in which every value but
 * the last result (t included) is read inside the run only and is no graph
 * output (wnn_epilogue.n_prog, prog; `last` its last node).  A reshape
 * that is t's only reader may come first (prog_view): the program reads
 * its result as t.  GPT-2's tanh gelu (t read three times: mul, pow,
 * add), hard-swish, Mish, a query scaled by a constant.  The CPU runs the
 * nodes on each tile with the element-wise chains' loops, so the results
 * stay the unfused graph's.
 *
 * Input scales (WNN_FUSE_IN_SCALE): for a backend that declares it, a
 * float32 conv2d of groups 1 whose input is mul(x, s), s one value per
 * input channel (1 everywhere but at the input's channel axis), the mul's
 * result read by that conv2d alone and no graph output, starts a chain
 * with the mul before the producer (wnn_epilogue.in_scale; a chain of the
 * mul and the conv2d alone is recorded too): the backend computes
 * conv(x, W diag(s)) instead of conv(x * s, W), the filter's input channels
 * scaled per dispatch, x * s never stored -- the end of a
 * squeeze-and-excitation block (EfficientNet, MobileNetV3, RegNetY),
 * which scales the depthwise convolution's output by a sigmoid per
 * channel before the projection.  Only where the input has four times as
 * many pixels as the filter has values per input channel or more (N H W
 * >= 4 O KH KW), where the scaled filter is the cheaper pass. */
#ifndef WNN_FUSE_H
#define WNN_FUSE_H
#include "../core/internal.h"

/* wnn_epilogue, wnn_fusion: core/internal.h (they are part of a graph). */

/* Finds the chains of the kinds in `kinds` (WNN_FUSE_* of backend.h) in a
 * built graph (g->plan.order must be set).  Only chains with at least two
 * nodes are reported, but for the projections of conv pairs (below): a
 * 1x1 conv2d without an add or activation after it is made a chain of its
 * own (producer == last) where it is the second of a linked pair (never
 * one that runs alone); summary() does not list such chains.
 *
 * Element-wise chains (WNN_FUSE_ELTWISE), found after the epilogue chains
 * among the nodes left: float32 / float16 operators of the trait
 * WNN_TR_ELTWISE (ops.def: unary math, activations and add, sub, mul, div,
 * max, min, pow, prelu),
 * all of one data type, where each node's output has the chain's result
 * shape and is read only by the next node (and is not a graph output);
 * a binary node's other input may broadcast.  A float32
 * batchNormalization is one too (a per-channel affine map of its input,
 * which must be the running value when it is not the first node; its
 * parameters are read whole): DenseNet's pre-activation batchNormalization
 * -> relu after a concat, which no convolution's epilogue takes. */
wnn_status wnn_fusion_find(const wnn_graph *g, uint32_t kinds, wnn_fusion *f,
                           wnn_error *err);
void wnn_fusion_free(wnn_fusion *f);
/* fuse_qdq.c: the WNN_FUSE_QDQ chains (quantized regions), found first;
 * uses / consumer / is_out per operand as wnn_fusion_find counts them */
void wnn_fusion_find_qdq(const wnn_graph *g, const uint32_t *uses,
                         const uint32_t *consumer, const bool *is_out,
                         wnn_fusion *f);

/* fuse_attention.c: the WNN_FUSE_ATTENTION chains (attention blocks),
 * found after the quantized regions and before the epilogue chains (whose
 * matmul -> add would take the scores' mask); first / consumer: the first
 * and the last reader of each operand in the plan's order */
void wnn_fusion_find_attention(const wnn_graph *g, const uint32_t *uses,
                               const uint32_t *first, const uint32_t *consumer,
                               const bool *is_out, wnn_fusion *f);

/* plan.c: the plan of wnn_plan_make() where the inputs of every node of a
 * chain stay alive until the chain's last node (p->order must be set). */
wnn_status wnn_plan_make_fused(const wnn_graph *g, wnn_plan *p,
                               const wnn_fusion *f, wnn_error *err);

#endif
