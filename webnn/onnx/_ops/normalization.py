"""ONNX normalizations (batch, instance, layer, group, RMS, Lp, LRN,
mean-variance), Softmax / LogSoftmax / Hardmax, the reductions, ArgMax /
ArgMin and TopK."""
from __future__ import annotations

import numpy as np

from webnn import NotSupportedError

from .._convert import _norm_axis, _reg


@_reg("BatchNormalization")
def _bn(c, node, at):
    x = c.opnd(node.input[0])
    if at.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        if c.opset < 14:
            raise NotSupportedError("the statistics outputs before opset 14")
        # batch statistics (deterministic): normalize with them, and update
        # the running mean and variance with `momentum`
        rank = len(x.shape)
        axes = [0] + list(range(2, rank))
        bshape = [1, x.shape[1]] + [1] * (rank - 2)
        mean = c.b.reduce_mean(x, axes=axes)
        d = c.b.sub(x, c.b.reshape(mean, bshape))
        var = c.b.reduce_mean(c.b.mul(d, d), axes=axes)
        y = c.b.batch_normalization(x, mean, var, scale=c.opnd(node.input[1]),
                                    bias=c.opnd(node.input[2]),
                                    epsilon=float(at.get("epsilon", 1e-5)))
        mom = float(at.get("momentum", 0.9))
        dt = x.data_type
        m_in, v_in = c.opnd(node.input[3]), c.opnd(node.input[4])
        run_mean = c.b.add(c.b.mul(m_in, c.scalar(mom, dt)), c.b.mul(mean, c.scalar(1 - mom, dt)))
        run_var = c.b.add(c.b.mul(v_in, c.scalar(mom, dt)), c.b.mul(var, c.scalar(1 - mom, dt)))
        return [y, run_mean, run_var]
    opts = {"scale": c.opnd(node.input[1]), "bias": c.opnd(node.input[2]),
            "epsilon": float(at.get("epsilon", 1e-5)), "axis": 1}
    return c.b.batch_normalization(x, c.opnd(node.input[3]), c.opnd(node.input[4]), **opts)


@_reg("InstanceNormalization")
def _inorm(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    if len(shape) < 3:
        raise NotSupportedError(f"rank {len(shape)} input")
    if len(shape) != 4:
        # WebNN's instanceNormalization is 4-D: all spatial dimensions in one
        x = c.b.reshape(x, shape[:2] + [int(np.prod(shape[2:], dtype=np.int64)), 1])
    y = c.b.instance_normalization(x, scale=c.opnd(node.input[1]), bias=c.opnd(node.input[2]),
                                   epsilon=float(at.get("epsilon", 1e-5)))
    return c.b.reshape(y, shape) if len(shape) != 4 else y


@_reg("LayerNormalization")
def _lnorm(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank)
    axes = list(range(axis, rank))
    if len([o for o in node.output if o]) > 1:
        return _lnorm_full(c, node, at, x, axes)
    scale = c.opnd(node.input[1])
    bias = c.opnd(node.input[2]) if c.has(node, 2) else None
    want = list(x.shape[axis:])
    if list(scale.shape) != want:
        scale = c.b.expand(scale, want) if len(scale.shape) <= len(want) else scale
    opts = {"scale": scale, "axes": axes, "epsilon": float(at.get("epsilon", 1e-5))}
    if bias is not None:
        if list(bias.shape) != want:
            bias = c.b.expand(bias, want)
        opts["bias"] = bias
    return c.b.layer_normalization(x, **opts)


@_reg("LRN")
def _lrn(c, node, at):
    x = c.opnd(node.input[0])
    if len(x.shape) != 4:
        raise NotSupportedError("LRN on a rank other than 4")
    dt = x.data_type
    size = int(at["size"])
    alpha, beta, bias = float(at.get("alpha", 1e-4)), float(at.get("beta", 0.75)), \
        float(at.get("bias", 1.0))
    n, ch, h, w = x.shape
    sq = c.b.mul(x, x)
    sq = c.b.reshape(sq, [n, 1, ch, h * w])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = c.b.pad(sq, [0, 0, lo, 0], [0, 0, hi, 0], mode="constant", value=0.0)
    s = c.b.average_pool2d(sq, window_dimensions=[size, 1])
    s = c.b.reshape(s, [n, ch, h, w])  # the mean over the window
    d = c.b.pow(c.b.add(c.scalar(bias, dt), c.b.mul(c.scalar(alpha, dt), s)),
                c.scalar(beta, dt))
    return c.b.div(x, d)


@_reg("MeanVarianceNormalization")
def _mvn(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    axes = [_norm_axis(a, len(x.shape)) for a in at.get("axes", [0, 2, 3])]
    mean = c.b.reduce_mean(x, axes=axes, keep_dimensions=True)
    d = c.b.sub(x, mean)
    var = c.b.reduce_mean(c.b.mul(d, d), axes=axes, keep_dimensions=True)
    return c.b.div(d, c.b.add(c.b.sqrt(var), c.scalar(1e-9, dt)))


def _softmax_frame(c, node, at, x):
    """(x as the operand to normalize, axis, a function restoring the shape)."""
    rank = len(x.shape)
    if c.opset < 13:
        axis = _norm_axis(at.get("axis", 1), rank) if rank else 0
        shape = list(x.shape)
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        inner = int(np.prod(shape[axis:], dtype=np.int64))
        x2 = c.b.reshape(x, [outer, inner])
        return x2, 1, lambda y: c.b.reshape(y, shape)
    return x, _norm_axis(at.get("axis", -1), rank), lambda y: y


@_reg("Softmax")
def _softmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    return back(c.b.softmax(x2, axis))


@_reg("LogSoftmax")
def _logsoftmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    m = c.b.reduce_max(x2, axes=[axis], keep_dimensions=True)
    d = c.b.sub(x2, m)
    lse = c.b.log(c.b.reduce_sum(c.b.exp(d), axes=[axis], keep_dimensions=True))
    return back(c.b.sub(d, lse))


@_reg("Hardmax")
def _hardmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    n = x2.shape[axis]
    idx = c.b.arg_max(x2, axis, keep_dimensions=True, output_data_type="int32")
    shape = [1] * len(x2.shape)
    shape[axis] = n
    iota = c.const(np.arange(n, dtype=np.int32).reshape(shape))
    return back(c.b.cast(c.b.equal(idx, iota), x2.data_type))


_REDUCE = {"ReduceSum": "reduceSum", "ReduceMean": "reduceMean", "ReduceMax": "reduceMax",
           "ReduceMin": "reduceMin", "ReduceProd": "reduceProduct", "ReduceL1": "reduceL1",
           "ReduceL2": "reduceL2", "ReduceLogSum": "reduceLogSum",
           "ReduceLogSumExp": "reduceLogSumExp", "ReduceSumSquare": "reduceSumSquare"}


@_reg(*_REDUCE)
def _reduce(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    keep = bool(at.get("keepdims", 1))
    axes = at.get("axes")
    axes_input = (node.op_type == "ReduceSum" and c.opset >= 13) or c.opset >= 18
    if axes_input:
        axes = c.ints(node.input[1], "axes") if c.has(node, 1) else None
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return c.b.identity(x)
            axes = None
    if axes is not None:
        axes = sorted({_norm_axis(a, rank) for a in axes})
    else:
        axes = list(range(rank))
    return getattr(c.b, _REDUCE[node.op_type])(x, axes=axes, keep_dimensions=keep)


@_reg("ArgMax", "ArgMin")
def _arg(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", 0), rank)
    keep = bool(at.get("keepdims", 1))
    fn = c.b.arg_max if node.op_type == "ArgMax" else c.b.arg_min
    if at.get("select_last_index", 0):
        r = c.b.reverse(x, axes=[axis])
        i = fn(r, axis, keep_dimensions=keep, output_data_type="int64")
        return c.b.sub(c.scalar(x.shape[axis] - 1, "int64"), i)
    return fn(x, axis, keep_dimensions=keep, output_data_type="int64")


@_reg("LpNormalization")
def _lpnorm(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", -1), len(x.shape))
    p = int(at.get("p", 2))
    if p not in (1, 2):
        raise NotSupportedError(f"p = {p}")
    fn = c.b.reduce_l2 if p == 2 else c.b.reduce_l1
    n = fn(x, axes=[axis], keep_dimensions=True)
    zero = c.scalar(0, x.data_type)
    # ONNX: 0 where the norm is 0
    safe = c.b.where(c.b.equal(n, zero), c.scalar(1, x.data_type), n)
    return c.b.where(c.b.equal(n, zero), zero, c.b.div(x, safe))


@_reg("RMSNormalization")
def _rmsnorm(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank)
    axes = list(range(axis, rank))
    dt = x.data_type
    eps = float(at.get("epsilon", 1e-5))
    xs = x
    if at.get("stash_type", 1) == 1 and dt == "float16":
        xs = c.b.cast(x, "float32")
    ms = c.b.reduce_mean(c.b.mul(xs, xs), axes=axes, keep_dimensions=True)
    y = c.b.div(xs, c.b.sqrt(c.b.add(ms, c.scalar(eps, xs.data_type))))
    if xs is not x:
        y = c.b.cast(y, dt)
    return c.b.mul(y, c.opnd(node.input[1]))


@_reg("GroupNormalization")
def _groupnorm(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    g = int(at["num_groups"])
    n, ch = shape[0], shape[1]
    eps = float(at.get("epsilon", 1e-5))
    if c.opset < 21:
        raise NotSupportedError("GroupNormalization before opset 21 (scale and bias per group)")
    t = c.b.reshape(x, [n, g, int(np.prod(shape[1:]) // g)])
    t = c.b.layer_normalization(t, axes=[2], epsilon=eps)
    t = c.b.reshape(t, shape)
    bshape = [1, ch] + [1] * (len(shape) - 2)
    return c.b.add(c.b.mul(t, c.b.reshape(c.opnd(node.input[1]), bshape)),
                   c.b.reshape(c.opnd(node.input[2]), bshape))


def _lnorm_full(c, node, at, x, axes):
    """LayerNormalization with its Mean and InvStdDev outputs, decomposed."""
    dt = x.data_type
    eps = float(at.get("epsilon", 1e-5))
    xs = c.b.cast(x, "float32") if dt == "float16" and at.get("stash_type", 1) == 1 else x
    sdt = xs.data_type
    mean = c.b.reduce_mean(xs, axes=axes, keep_dimensions=True)
    d = c.b.sub(xs, mean)
    var = c.b.reduce_mean(c.b.mul(d, d), axes=axes, keep_dimensions=True)
    inv = c.b.reciprocal(c.b.sqrt(c.b.add(var, c.scalar(eps, sdt))))
    y = c.b.mul(d, inv)
    if sdt != dt:
        y = c.b.cast(y, dt)
    y = c.b.mul(y, c.opnd(node.input[1]))
    if c.has(node, 2):
        y = c.b.add(y, c.opnd(node.input[2]))
    return [y, mean, inv]


@_reg("TopK")
def _topk(c, node, at):
    """Top-k by ranks: each element's rank is the count of elements before it
    in the order (pairwise comparisons, ties by lower index, exact); output
    p is the element of rank p (argMax of rank == p)."""
    x = c.opnd(node.input[0])
    rank_ = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank_)
    if c.opset < 10:
        k = int(at["k"])
    else:
        k = c.ints(node.input[1], "k")[0]
    n = x.shape[axis]
    if not 0 < k <= n:
        raise NotSupportedError(f"k = {k} for an axis of {n}")
    if n > 4096:
        raise NotSupportedError(f"an axis of {n} (pairwise ranks up to 4096)")
    largest = bool(at.get("largest", 1))
    perm = [i for i in range(rank_) if i != axis] + [axis]
    xa = c.b.transpose(x, permutation=perm) if axis != rank_ - 1 else x
    lead = list(xa.shape[:-1])
    a = c.b.reshape(xa, lead + [n, 1])
    b = c.b.reshape(xa, lead + [1, n])
    before = c.b.greater(b, a) if largest else c.b.lesser(b, a)      # [.., i, j]: j before i
    lower = c.const((np.arange(n).reshape(1, n) < np.arange(n).reshape(n, 1)).astype(np.uint8))
    tie = c.b.logical_and(c.b.equal(b, a), lower)
    count = c.b.add(c.b.cast(before, "int32"), c.b.cast(tie, "int32"))
    ranks = c.b.reduce_sum(count, axes=[len(lead) + 1])                # [.., n]
    iota = c.const(np.arange(k, dtype=np.int32).reshape(k, 1))
    hit = c.b.equal(c.b.reshape(ranks, lead + [1, n]), iota)           # [.., k, n]
    idx = c.b.arg_max(hit, len(lead) + 1, output_data_type="int64")    # [.., k]
    vals = c.b.gather_elements(xa, idx, axis=len(lead))
    if axis != rank_ - 1:
        inv = [0] * rank_
        for i, p_ in enumerate(perm):
            inv[p_] = i
        vals = c.b.transpose(vals, permutation=inv)
        idx = c.b.transpose(idx, permutation=inv)
    return [vals, idx]
