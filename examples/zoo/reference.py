"""Float64 NumPy reference implementations of the layers the example models
use, written from the spec's definitions and independent of webnn."""
from typing import Any, Optional

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


def conv2d_nchw(x: npt.ArrayLike, w: npt.ArrayLike, b: Optional[npt.ArrayLike] = None,
                stride: int = 1, pad: int = 0, groups: int = 1) -> Array:
    """Cross-correlation, x [N,C,H,W], w [O, C/groups, kh, kw] (OIHW)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    # windows: [N, C, oh, ow, kh, kw]
    s = xp.strides
    win = np.lib.stride_tricks.as_strided(
        xp, (n, c, oh, ow, kh, kw),
        (s[0], s[1], s[2] * stride, s[3] * stride, s[2], s[3]), writeable=False)
    og = o // groups
    out = np.empty((n, o, oh, ow))
    for g in range(groups):
        xs = win[:, g * cg:(g + 1) * cg]
        ws = w[g * og:(g + 1) * og]
        out[:, g * og:(g + 1) * og] = np.einsum("ncijkl,ockl->noij", xs, ws, optimize=True)
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out


def depthwise_conv2d_nchw(x: npt.ArrayLike, w: npt.ArrayLike, b: Optional[npt.ArrayLike] = None,
                          stride: int = 1, pad: int = 0) -> Array:
    """groups == channels, w [C,1,kh,kw]: a loop over the taps (fast in NumPy)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    _, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (h + 2 * pad - kh) // stride + 1
    ow = (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, c, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            out += patch * w[None, :, 0, i, j, None, None]
    if b is not None:
        out += np.asarray(b, np.float64)[None, :, None, None]
    return out


def max_pool2d_nchw(x: Array, k: int, stride: int) -> Array:
    n, c, h, w = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, x[:, :, i:i + stride * (oh - 1) + 1:stride,
                                   j:j + stride * (ow - 1) + 1:stride])
    return out


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out: Array = e / np.sum(e, axis=axis, keepdims=True)
    return out
