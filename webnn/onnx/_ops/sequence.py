"""ONNX sequences inside the graph: lists of values known at import."""
from __future__ import annotations

import numpy as np

from webnn import NotSupportedError

from .._convert import _Seq, _norm_axis, _reg
from .control import _stack


def _pos(c, node, i, n, default, insert=False):
    if not c.has(node, i):
        return default
    p = c.ints(node.input[i], "the position")[0]
    if p < 0:
        p += n
    if not 0 <= p <= (n if insert else n - 1):
        raise NotSupportedError(f"position {p} out of range for a sequence of {n}")
    return p


@_reg("SequenceEmpty")
def _seq_empty(c, node, at):
    return _Seq()


@_reg("SequenceConstruct")
def _seq_construct(c, node, at):
    return _Seq(c.vals[n] for n in node.input)


@_reg("SequenceInsert")
def _seq_insert(c, node, at):
    s = _Seq(c.seq(node.input[0]))
    s.insert(_pos(c, node, 2, len(s), len(s), insert=True), c.vals[node.input[1]])
    return s


@_reg("SequenceAt")
def _seq_at(c, node, at):
    s = c.seq(node.input[0])
    v = s[_pos(c, node, 1, len(s), None)]
    return v if isinstance(v, np.ndarray) else c.b.identity(c.opnd_of(v))


@_reg("SequenceErase")
def _seq_erase(c, node, at):
    s = _Seq(c.seq(node.input[0]))
    del s[_pos(c, node, 1, len(s), len(s) - 1)]
    return s


@_reg("SequenceLength")
def _seq_length(c, node, at):
    return np.array(len(c.seq(node.input[0])), np.int64)


@_reg("ConcatFromSequence")
def _concat_from_seq(c, node, at):
    s = c.seq(node.input[0])
    if not s:
        raise NotSupportedError("an empty sequence")
    rank = len(s[0].shape)
    if at.get("new_axis", 0):
        return _stack(c, list(s), _norm_axis(at["axis"], rank + 1))
    axis = _norm_axis(at["axis"], rank)
    if all(isinstance(v, np.ndarray) for v in s):
        return np.concatenate(list(s), axis=axis)
    ops = [c.opnd_of(v) for v in s]
    return ops[0] if len(ops) == 1 else c.b.concat(ops, axis)


@_reg("SplitToSequence")
def _split_to_seq(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", 0), rank)
    n = x.shape[axis]
    keep = True
    if c.has(node, 1):
        sp = c.static(node.input[1], "split")
        if sp.ndim == 0:
            k = int(sp)
            sizes = [k] * (n // k) + ([n % k] if n % k else [])
        else:
            sizes = [int(v) for v in sp]
    else:
        sizes = [1] * n
        keep = bool(at.get("keepdims", 1))
    parts = c.b.split(x, sizes, axis=axis) if len(sizes) > 1 else [c.b.identity(x)]
    if not keep:
        parts = [c.b.reshape(p, list(x.shape[:axis]) + list(x.shape[axis + 1:])) for p in parts]
    return _Seq(parts)
