"""ONNX signal processing: DFT and STFT (as matrix products)."""
from __future__ import annotations

import numpy as np

from webnn import NotSupportedError

from .. import _guard
from .._convert import _norm_axis, _reg
from .._guard import InvalidModel


@_reg("DFT")
def _dft(c, node, at):
    """DFT as products with static cosine and sine matrices."""
    x = c.opnd(node.input[0])
    dt = x.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    rank = len(x.shape)
    if c.opset >= 20:
        axis = c.ints(node.input[2], "axis")[0] if c.has(node, 2) else -2
    else:
        axis = int(at.get("axis", 1))
    axis = _norm_axis(axis, rank)
    if axis == rank - 1:
        raise NotSupportedError("the DFT axis is the complex axis")
    inverse = bool(at.get("inverse", 0))
    onesided = bool(at.get("onesided", 0))
    if inverse and onesided:
        raise NotSupportedError("an inverse one-sided DFT")
    comp = x.shape[-1]
    n = x.shape[axis]
    length = c.ints(node.input[1], "dft_length")[0] if c.has(node, 1) else n
    # the transformed axis just before the complex one
    perm = [i for i in range(rank - 1) if i != axis] + [axis, rank - 1]
    t = c.b.transpose(x, permutation=perm) if perm != list(range(rank)) else x
    shape = list(t.shape)
    lead = shape[:-2]

    def part(k):
        v = c.b.slice(t, [0] * rank, lead + [n, 1]) if k == 0 else \
            c.b.slice(t, [0] * (rank - 1) + [1], lead + [n, 1])
        v = c.b.reshape(v, lead + [n])
        if length < n:
            v = c.b.slice(v, [0] * len(lead) + [0], lead + [length])
        elif length > n:
            v = c.b.pad(v, [0] * (len(lead) + 1), [0] * len(lead) + [length - n],
                        mode="constant", value=0.0)
        if dt == "float16":
            v = c.b.cast(v, "float32")
        return v
    xr = part(0)
    xi = part(1) if comp == 2 else None
    k_out = length // 2 + 1 if onesided else length
    if length < 1:
        raise InvalidModel(f"dft_length is {length}; it must be at least 1")
    c.budget.add_bytes(_guard.nbytes_of([length, k_out], 8 * 3), c.where,
                       f"cosine and sine matrices of {length} x {k_out}")
    tt = np.arange(length, dtype=np.float64).reshape(length, 1)
    kk = np.arange(k_out, dtype=np.float64).reshape(1, k_out)
    ang = (2 * np.pi / length) * tt * kk * (1 if inverse else -1)
    cm = c.const(np.cos(ang).astype(np.float32))
    sm = c.const(np.sin(ang).astype(np.float32))
    if len(lead) == 0:
        raise NotSupportedError("a DFT input without a batch dimension")
    yr = c.b.matmul(xr, cm)
    yi = c.b.matmul(xr, sm)
    if xi is not None:
        yr = c.b.sub(yr, c.b.matmul(xi, sm))
        yi = c.b.add(yi, c.b.matmul(xi, cm))
    if inverse:
        inv = c.scalar(1.0 / length, "float32")
        yr, yi = c.b.mul(yr, inv), c.b.mul(yi, inv)
    y = c.b.concat([c.b.reshape(yr, lead + [k_out, 1]), c.b.reshape(yi, lead + [k_out, 1])],
                   len(lead) + 1)
    if dt == "float16":
        y = c.b.cast(y, "float16")
    if perm != list(range(rank)):
        invp = [0] * rank
        for i, p in enumerate(perm):
            invp[p] = i
        y = c.b.transpose(y, permutation=invp)
    return y


@_reg("STFT")
def _stft(c, node, at):
    """Frames gathered with static indices, windowed, and transformed with
    cosine/sine matrices."""
    x = c.opnd(node.input[0])
    dt = x.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    batch, length, comp = x.shape
    step = c.ints(node.input[1], "frame_step")[0]
    window = c.opnd(node.input[2]) if c.has(node, 2) else None
    if c.has(node, 3):
        flen = c.ints(node.input[3], "frame_length")[0]
    elif window is not None:
        flen = window.shape[0]
    else:
        raise NotSupportedError("neither a window nor a frame_length")
    onesided = bool(at.get("onesided", 1))
    if comp == 2 and onesided:
        raise NotSupportedError("a one-sided STFT of a complex signal")
    frames = (length - flen) // step + 1
    idx = (np.arange(frames).reshape(frames, 1) * step + np.arange(flen)).astype(np.int32)
    t = x if dt == "float32" else c.b.cast(x, "float32")
    f = c.b.gather(t, c.const(idx), axis=1)          # [batch, frames, flen, comp]

    def part(k):
        v = c.b.slice(f, [0, 0, 0, k], [batch, frames, flen, 1])
        v = c.b.reshape(v, [batch, frames, flen])
        if window is not None:
            wv = window if window.data_type == "float32" else c.b.cast(window, "float32")
            v = c.b.mul(v, wv)
        return v
    xr = part(0)
    xi = part(1) if comp == 2 else None
    bins = flen // 2 + 1 if onesided else flen
    ang = (-2 * np.pi / flen) * np.arange(flen, dtype=np.float64).reshape(flen, 1) * \
        np.arange(bins, dtype=np.float64).reshape(1, bins)
    cm, sm = c.const(np.cos(ang).astype(np.float32)), c.const(np.sin(ang).astype(np.float32))
    yr, yi = c.b.matmul(xr, cm), c.b.matmul(xr, sm)
    if xi is not None:
        yr = c.b.sub(yr, c.b.matmul(xi, sm))
        yi = c.b.add(yi, c.b.matmul(xi, cm))
    y = c.b.concat([c.b.reshape(yr, [batch, frames, bins, 1]),
                    c.b.reshape(yi, [batch, frames, bins, 1])], 3)
    return y if dt == "float32" else c.b.cast(y, dt)
