"""ONNX shape and tensor manipulation: Shape, Size, Constant(OfShape),
Concat, Reshape, Flatten, (Un)Squeeze, Transpose, Expand, Slice, Split,
Tile, Pad, Gather / Scatter, DepthToSpace / SpaceToDepth, Trilu, CumSum,
Dropout, Range, EyeLike, OneHot, ReverseSequence."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

import webnn
from webnn import NotSupportedError

from .. import _guard
from .._convert import _ELEM, _FILL_MATERIALIZE, _Fill, _bcast, _elem_name, _norm_axis, _reg
from .._guard import InvalidModel


@_reg("Shape")
def _shape(c, node, at):
    s = np.array(c.shape(node.input[0]), np.int64)
    start, end = at.get("start", 0), at.get("end")
    return s[start:end]


@_reg("Size")
def _size(c, node, at):
    return np.array(int(np.prod(c.shape(node.input[0]), dtype=np.int64)), np.int64)


@_reg("ConstantOfShape")
def _const_of_shape(c, node, at):
    shape = c.ints(node.input[0], "shape")
    value = at.get("value")
    value = _guard.to_array(value, "attribute 'value'").reshape(-1)[0] \
        if value is not None else np.float32(0)
    value = np.asarray(value)
    if any(d < 0 for d in shape):
        raise InvalidModel(f"input 'shape' {shape} has a negative dimension")
    if _guard.nbytes_of(shape, 1) <= _FILL_MATERIALIZE:
        return np.full(shape, value, value.dtype)
    return _Fill(shape, value)


@_reg("Constant")
def _constant(c, node, at):
    return c.fold(node)[0]


@_reg("Concat")
def _concat(c, node, at):
    ins = [n for n in node.input if n]
    rank = len(c.shape(ins[0]))
    axis = _norm_axis(at.get("axis", 0 if c.opset < 4 else None), rank)
    ops = [c.opnd(n) for n in ins if 0 not in c.shape(n) or len(ins) == 1]
    return c.b.concat(ops, axis)


def _reshape_to(c, name, shape):
    x = c.opnd(name)
    if list(x.shape) == list(shape):
        return c.b.identity(x)
    return c.b.reshape(x, [int(d) for d in shape])


@_reg("Reshape")
def _reshape(c, node, at):
    in_shape = c.shape(node.input[0])
    if c.opset < 5:
        shape = list(at["shape"])
    else:
        shape = c.ints(node.input[1], "shape")
    allowzero = at.get("allowzero", 0)
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            d = in_shape[i]
        out.append(d)
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(in_shape, dtype=np.int64))
        out[out.index(-1)] = total // known if known else 0
    return _reshape_to(c, node.input[0], out)


@_reg("Flatten")
def _flatten(c, node, at):
    s = c.shape(node.input[0])
    axis = int(at.get("axis", 1))
    if axis < 0:
        axis += len(s)
    return _reshape_to(c, node.input[0], [int(np.prod(s[:axis], dtype=np.int64)),
                                          int(np.prod(s[axis:], dtype=np.int64))])


@_reg("Squeeze")
def _squeeze(c, node, at):
    s = c.shape(node.input[0])
    if c.opset >= 13:
        axes = c.ints(node.input[1], "axes") if c.has(node, 1) else None
    else:
        axes = at.get("axes")
    if axes is None:
        axes = [i for i, d in enumerate(s) if d == 1]
    axes = {_norm_axis(a, len(s)) for a in axes}
    return _reshape_to(c, node.input[0], [d for i, d in enumerate(s) if i not in axes])


@_reg("Unsqueeze")
def _unsqueeze(c, node, at):
    s = list(c.shape(node.input[0]))
    axes = c.ints(node.input[1], "axes") if c.opset >= 13 else list(at["axes"])
    r = len(s) + len(axes)
    axes = sorted(_norm_axis(a, r) for a in axes)
    for a in axes:
        s.insert(a, 1)
    return _reshape_to(c, node.input[0], s)


@_reg("Transpose")
def _transpose(c, node, at):
    x = c.opnd(node.input[0])
    perm = at.get("perm")
    if perm is None:
        perm = list(range(len(x.shape)))[::-1]
    return c.b.transpose(x, permutation=[int(p) for p in perm])


@_reg("Expand")
def _expand(c, node, at):
    x = c.opnd(node.input[0])
    shape = _bcast(x.shape, c.ints(node.input[1], "shape"))
    return c.b.expand(x, list(shape))


@_reg("Slice")
def _slice(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    rank = len(shape)
    if c.opset < 10:
        starts, ends = list(at["starts"]), list(at["ends"])
        axes = list(at.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = c.ints(node.input[1], "starts")
        ends = c.ints(node.input[2], "ends")
        axes = c.ints(node.input[3], "axes") if c.has(node, 3) else list(range(len(starts)))
        steps = c.ints(node.input[4], "steps") if c.has(node, 4) else [1] * len(starts)
    b_starts, b_sizes, b_strides = [0] * rank, list(shape), [1] * rank
    rev = []
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        ax = _norm_axis(ax, rank)
        n = shape[ax]
        if sp == 0:
            raise NotSupportedError("step 0")
        s0, e0, _ = slice(st, en, sp).indices(n)
        if sp > 0:
            size = max(0, -(-(e0 - s0) // sp))
            b_starts[ax], b_sizes[ax], b_strides[ax] = s0, size, sp
        else:
            size = max(0, -(-(s0 - e0) // -sp))
            rev.append(ax)
            b_starts[ax], b_sizes[ax], b_strides[ax] = n - 1 - s0, size, -sp
    if 0 in b_sizes:
        raise NotSupportedError("an empty result (WebNN has no zero-sized tensors)")
    # WebNN's sizes are the extent of the window in the input
    b_sizes = [(k - 1) * st + 1 for k, st in zip(b_sizes, b_strides)]
    if rev:
        x = c.b.reverse(x, axes=sorted(rev))
    return c.b.slice(x, b_starts, b_sizes, strides=b_strides)


@_reg("Split")
def _split(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    n_out = len(node.output)
    if c.opset >= 13 and c.has(node, 1):
        splits = c.ints(node.input[1], "split")
    elif "split" in at:
        splits = list(at["split"])
    elif c.opset < 13 and c.has(node, 1):
        splits = c.ints(node.input[1], "split")
    else:
        dim = x.shape[axis]
        n = int(at.get("num_outputs", n_out))
        chunk = -(-dim // n)
        splits = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    return c.b.split(x, [int(s) for s in splits], axis=axis)


@_reg("Tile")
def _tile(c, node, at):
    return c.b.tile(c.opnd(node.input[0]), c.ints(node.input[1], "repeats"))


_PAD_MODE = {"constant": "constant", "reflect": "reflection", "edge": "edge"}


@_reg("Pad")
def _pad(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    mode = at.get("mode", "constant")
    if mode not in _PAD_MODE:
        raise NotSupportedError(f"mode {mode!r}")
    if c.opset < 11:
        pads = list(at.get("pads", at.get("paddings", [])))
        value = float(at.get("value", 0.0))
        axes = list(range(rank))
    else:
        pads = c.ints(node.input[1], "pads")
        value = 0
        if c.has(node, 2):
            if not c.is_static(node.input[2]) and mode == "constant":
                return _pad_dynamic_value(c, node, x, pads)
            value = c.static(node.input[2], "constant_value").reshape(-1)[0].item()
        axes = c.ints(node.input[3], "axes") if c.has(node, 3) else list(range(rank))
    k = len(axes)
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        a = _norm_axis(a, rank)
        begin[a], end[a] = pads[i], pads[i + k]
    if any(p < 0 for p in begin + end):
        raise NotSupportedError("negative pads (cropping)")
    opts = {"mode": _PAD_MODE[mode]}
    if mode == "constant":
        opts["value"] = value
    return c.b.pad(x, begin, end, **opts)


def _indices(c, name, dim, out_dt="int64"):
    """Indices with ONNX's negative values made positive."""
    if c.is_static(name):
        i = c.static(name).astype(np.int64)
        # the runtime rule (the kernels'): negative counts from the end, then
        # clamped to [0, dim - 1]
        i = np.clip(np.where(i < 0, i + dim, i), 0, dim - 1)
        return c.const(i.astype(np.int32 if dim < 2 ** 31 else np.int64))
    i = c.opnd(name)
    dt = i.data_type
    i = c.b.where(c.b.lesser(i, c.scalar(0, dt)), c.b.add(i, c.scalar(dim, dt)), i)
    # clamped here too: the kernels would count a still negative index from
    # the end a second time
    return c.b.clamp(i, min_value=0, max_value=dim - 1)


@_reg("Gather")
def _gather(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.gather(x, _indices(c, node.input[1], x.shape[axis]), axis=axis)


@_reg("GatherElements")
def _gather_el(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.gather_elements(x, _indices(c, node.input[1], x.shape[axis]), axis=axis)


@_reg("GatherND")
def _gather_nd(c, node, at):
    if at.get("batch_dims", 0):
        raise NotSupportedError("batch_dims other than 0")
    x = c.opnd(node.input[0])
    idx = node.input[1]
    if c.is_static(idx):
        i = c.static(idx).astype(np.int64)
        dims = np.array(x.shape[:i.shape[-1]], np.int64)
        # the runtime rule (the kernels'): negative counts from the end, then clamped
        i = np.clip(np.where(i < 0, i + dims, i), 0, dims - 1)
        return c.b.gather_nd(x, c.const(i))
    return c.b.gather_nd(x, c.opnd(idx))


@_reg("ScatterElements", "Scatter")
def _scatter_el(c, node, at):
    if at.get("reduction", "none") != "none":
        raise NotSupportedError(f"reduction {at['reduction']!r}")
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.scatter_elements(x, _indices(c, node.input[1], x.shape[axis]),
                                c.opnd(node.input[2]), axis=axis)


@_reg("ScatterND")
def _scatter_nd(c, node, at):
    if at.get("reduction", "none") != "none":
        raise NotSupportedError(f"reduction {at['reduction']!r}")
    return c.b.scatter_nd(c.opnd(node.input[0]), c.opnd(node.input[1]),
                          c.opnd(node.input[2]))


@_reg("DepthToSpace")
def _d2s(c, node, at):
    x = c.opnd(node.input[0])
    n, ch, h, w = x.shape
    bs = int(at["blocksize"])
    if at.get("mode", "DCR") == "DCR":
        t = c.b.reshape(x, [n, bs, bs, ch // (bs * bs), h, w])
        t = c.b.transpose(t, permutation=[0, 3, 4, 1, 5, 2])
    else:
        t = c.b.reshape(x, [n, ch // (bs * bs), bs, bs, h, w])
        t = c.b.transpose(t, permutation=[0, 1, 4, 2, 5, 3])
    return c.b.reshape(t, [n, ch // (bs * bs), h * bs, w * bs])


@_reg("SpaceToDepth")
def _s2d(c, node, at):
    x = c.opnd(node.input[0])
    n, ch, h, w = x.shape
    bs = int(at["blocksize"])
    t = c.b.reshape(x, [n, ch, h // bs, bs, w // bs, bs])
    perm = [0, 1, 3, 5, 2, 4] if at.get("mode", "DCR") == "CRD" else [0, 3, 5, 1, 2, 4]
    t = c.b.transpose(t, permutation=perm)
    return c.b.reshape(t, [n, ch * bs * bs, h // bs, w // bs])


@_reg("Trilu")
def _trilu(c, node, at):
    k = c.ints(node.input[1], "k")[0] if c.has(node, 1) else 0
    return c.b.triangular(c.opnd(node.input[0]), upper=bool(at.get("upper", 1)), diagonal=k)


@_reg("CumSum")
def _cumsum(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(c.ints(node.input[1], "axis")[0], len(x.shape))
    return c.b.cumulative_sum(x, axis, exclusive=bool(at.get("exclusive", 0)),
                              reversed=bool(at.get("reverse", 0)))


@_reg("Dropout")
def _dropout(c, node, at):
    if c.has(node, 2):
        training = c.static(node.input[2], "training_mode")
        if bool(np.asarray(training).reshape(-1)[0]):
            raise NotSupportedError("training mode (random)")
    if at.get("is_test", 1) == 0 and c.opset < 7:
        raise NotSupportedError("training mode (random)")
    x = c.opnd(node.input[0])
    if len(node.output) > 1 and node.output[1]:
        # inference: nothing is dropped, the mask is all true
        c.bools.add(node.output[1])
        return [c.b.identity(x), _Fill(x.shape, np.array(True))]
    return c.b.identity(x)


@_reg("Range")
def _range(c, node, at):
    for i in range(3):
        c.static(node.input[i], ("start", "limit", "delta")[i])
    return c.fold(node)[0]


@_reg("EyeLike")
def _eyelike(c, node, at):
    shape = c.shape(node.input[0])
    dt = at.get("dtype")
    np_dt = webnn.DATA_TYPES[_ELEM[dt]] if dt in _ELEM else \
        (np.dtype(bool) if dt == TensorProto.BOOL else None)
    if dt is None:
        np_dt = webnn.DATA_TYPES[c.dtype(node.input[0])]
    if np_dt is None:
        raise NotSupportedError(f"data type {_elem_name(dt)}, which WebNN lacks")
    return np.eye(shape[0], shape[1], k=int(at.get("k", 0)), dtype=np_dt)


def _pad_dynamic_value(c, node, x, pads):
    """Pad with a value computed by the graph: pad with 0, then where() a
    static mask of the padded region picks the value."""
    rank = len(x.shape)
    axes = [_norm_axis(a, rank) for a in (c.ints(node.input[3], "axes") if c.has(node, 3)
                                          else range(rank))]
    k = len(axes)
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + k]
    if any(p < 0 for p in begin + end):
        raise NotSupportedError("negative pads (cropping)")
    y = c.b.pad(x, begin, end, mode="constant", value=0)
    mask = np.pad(np.zeros(x.shape, np.uint8), list(zip(begin, end)), constant_values=1)
    v = c.b.reshape(c.opnd(node.input[2]), [1] * rank) if rank else c.opnd(node.input[2])
    return c.b.where(c.const(mask), c.b.expand(v, list(y.shape)), y)


@_reg("OneHot")
def _onehot(c, node, at):
    depth = int(c.static(node.input[1], "depth").reshape(-1)[0])
    values = c.opnd(node.input[2])
    idx = c.opnd(node.input[0])
    rank = len(idx.shape)
    axis = int(at.get("axis", -1))
    if axis < 0:
        axis += rank + 1
    idt = idx.data_type
    if idt not in ("int32", "int64"):
        idx = c.b.cast(idx, "int32" if idt in ("float32", "float16", "int8", "uint8") else "int64")
        idt = idx.data_type
    # negative indices count from the end
    idx = c.b.where(c.b.lesser(idx, c.scalar(0, idt)), c.b.add(idx, c.scalar(depth, idt)), idx)
    shape = list(idx.shape)
    shape.insert(axis, 1)
    idx = c.b.reshape(idx, shape)
    iota_shape = [1] * (rank + 1)
    iota_shape[axis] = depth
    if depth < 1:
        raise InvalidModel(f"depth (input 1) is {depth}; it must be at least 1")
    c.budget.add_bytes(_guard.nbytes_of([depth], 8), c.where, f"a ramp of depth {depth}")
    iota = c.const(np.arange(depth, dtype=webnn.DATA_TYPES[idt]).reshape(iota_shape))
    hot = c.b.equal(idx, iota)
    off = c.b.reshape(c.b.slice(values, [0], [1]), [])
    on = c.b.reshape(c.b.slice(values, [1], [1]), [])
    out_shape = list(idx.shape)
    out_shape[axis] = depth
    return c.b.where(hot, c.b.expand(on, out_shape), c.b.expand(off, out_shape))


@_reg("ReverseSequence")
def _reverse_sequence(c, node, at):
    """With the lengths known at import: a gather of static indices."""
    x = c.opnd(node.input[0])
    lens = c.ints(node.input[1], "sequence_lens")
    rank = len(x.shape)
    taxis = _norm_axis(at.get("time_axis", 0), rank)
    baxis = _norm_axis(at.get("batch_axis", 1), rank)
    steps, batch = x.shape[taxis], x.shape[baxis]
    idx = np.empty((steps, batch), np.int32)
    for b, n in enumerate(lens):
        n = min(max(int(n), 0), steps)
        idx[:, b] = np.concatenate([np.arange(n)[::-1], np.arange(n, steps)])
    shape = [1] * rank
    shape[taxis], shape[baxis] = steps, batch
    full = idx if taxis < baxis else idx.T
    full = np.broadcast_to(full.reshape(shape), x.shape).copy()
    return c.b.gather_elements(x, c.const(full), axis=taxis)
