"""ONNX matrix products and windows: MatMul, Gemm, Einsum, Conv and
ConvTranspose, the pools (MaxPool with indices, MaxUnpool, Lp and global
pools); 1-D and 3-D convolutions and pools over 2-D ones."""
from __future__ import annotations

import math

import numpy as np

import webnn
from webnn import NotSupportedError

from .._convert import _reg


@_reg("MatMul")
def _matmul(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    ra, rb = len(a.shape), len(b.shape)
    if ra == 1:
        a = c.b.reshape(a, [1, a.shape[0]])
    if rb == 1:
        b = c.b.reshape(b, [b.shape[0], 1])
    y = c.b.matmul(a, b)
    if ra == 1 or rb == 1:
        shape = list(y.shape)
        if rb == 1:
            shape.pop(-1)
        if ra == 1:
            shape.pop(-2 if rb != 1 else -1)
        y = c.b.reshape(y, shape)
    return y


@_reg("Gemm")
def _gemm(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    opts = {"alpha": float(at.get("alpha", 1.0)), "beta": float(at.get("beta", 1.0)),
            "a_transpose": bool(at.get("transA", 0)), "b_transpose": bool(at.get("transB", 0))}
    if c.has(node, 2):
        opts["c"] = c.opnd(node.input[2])
    return c.b.gemm(a, b, **opts)


def _same_pads(auto_pad, in_sizes, kernel, strides, dilations):
    pads_b, pads_e = [], []
    for n, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        if auto_pad == "SAME_UPPER":
            pads_b.append(total // 2)
            pads_e.append(total - total // 2)
        else:
            pads_b.append(total - total // 2)
            pads_e.append(total // 2)
    return pads_b, pads_e


def _spatial_pads(at, in_sizes, kernel, strides, dilations):
    auto_pad = at.get("auto_pad", "NOTSET")
    nd = len(in_sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return _same_pads(auto_pad, in_sizes, kernel, strides, dilations)
    if auto_pad == "VALID":
        return [0] * nd, [0] * nd
    pads = list(at.get("pads", [0] * (2 * nd)))
    return pads[:nd], pads[nd:]


def _webnn_padding(pb, pe):
    # WebNN: [beginH, endH, beginW, endW]
    return [pb[0], pe[0], pb[1], pe[1]]


def _to_2d(c, x, extra_dims):
    """A rank-3 NC(W) operand as NC1W for the 2-D operators."""
    if extra_dims:
        return c.b.reshape(x, list(x.shape[:2]) + [1] + list(x.shape[2:]))
    return x


@_reg("Conv")
def _conv(c, node, at):
    x, w = c.opnd(node.input[0]), c.opnd(node.input[1])
    rank = len(x.shape)
    if rank == 5:
        return _conv3d(c, node, at, x, w)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D convolution (WebNN has conv2d only)")
    one_d = rank == 3
    nd = 2
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1] * (rank - 2)))
    dil = list(at.get("dilations", [1] * (rank - 2)))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    if one_d:
        x, w = _to_2d(c, x, True), _to_2d(c, w, True)
        kernel, strides, dil, pb, pe = [1] + kernel, [1] + strides, [1] + dil, [0] + pb, [0] + pe
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides[:nd], "dilations": dil[:nd],
            "groups": int(at.get("group", 1))}
    if c.has(node, 2):
        opts["bias"] = c.opnd(node.input[2])
    y = c.b.conv2d(x, w, **opts)
    if one_d:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


@_reg("ConvTranspose")
def _convt(c, node, at):
    x, w = c.opnd(node.input[0]), c.opnd(node.input[1])
    rank = len(x.shape)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D transposed convolution (WebNN has "
                                f"convTranspose2d only)")
    nd = rank - 2
    groups = int(at.get("group", 1))
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    outpad = list(at.get("output_padding", [0] * nd))
    in_sizes = list(x.shape[2:])
    out_shape = at.get("output_shape")
    auto_pad = at.get("auto_pad", "NOTSET")
    if out_shape is not None:
        out_shape = list(out_shape)[-nd:]
    if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if out_shape is None:
            out_shape = [n * s for n, s in zip(in_sizes, strides)]
        pb, pe = [], []
        for i in range(nd):
            total = strides[i] * (in_sizes[i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 \
                - out_shape[i]
            if auto_pad == "SAME_UPPER":
                pb.append(total // 2)
                pe.append(total - total // 2)
            else:
                pb.append(total - total // 2)
                pe.append(total // 2)
    elif auto_pad == "VALID":
        pb, pe = [0] * nd, [0] * nd
    else:
        pads = list(at.get("pads", [0] * (2 * nd)))
        pb, pe = pads[:nd], pads[nd:]
    if any(p < 0 for p in pb + pe):
        raise NotSupportedError("negative padding")
    if nd == 1:
        x, w = _to_2d(c, x, True), _to_2d(c, w, True)
        kernel, strides, dil, outpad = [1] + kernel, [1] + strides, [1] + dil, [0] + outpad
        pb, pe = [0] + pb, [0] + pe
        if out_shape is not None:
            out_shape = [1] + out_shape
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides, "dilations": dil,
            "groups": groups, "output_padding": outpad, "filter_layout": "iohw"}
    if out_shape is not None:
        opts["output_sizes"] = list(out_shape)
        opts.pop("output_padding")
    if c.has(node, 2):
        opts["bias"] = c.opnd(node.input[2])
    y = c.b.conv_transpose2d(x, w, **opts)
    if nd == 1:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


def _pool(c, node, at, kind, x=None):
    x = c.opnd(node.input[0]) if x is None else x
    rank = len(x.shape)
    if rank == 5 and kind in ("max", "average"):
        return _pool3d(c, node, at, x, kind)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D pooling (WebNN pools in 2-D only)")
    if len([o for o in node.output if o]) > 1:
        if kind != "max" or rank != 4:
            raise NotSupportedError("the Indices output of a pool other than a 2-D MaxPool")
        return _maxpool_with_indices(c, node, at, x)
    if at.get("storage_order", 0):
        raise NotSupportedError("storage_order 1")
    nd = rank - 2
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    ceil_mode = bool(at.get("ceil_mode", 0))
    if nd == 1:
        x = _to_2d(c, x, True)
        kernel, strides, dil, pb, pe = [1] + kernel, [1] + strides, [1] + dil, [0] + pb, [0] + pe
    if kind == "average" and at.get("count_include_pad", 0) and any(pb + pe):
        # padding counts: pad with zeros first, pool without padding
        x = c.b.pad(x, [0, 0] + pb, [0, 0] + pe, mode="constant", value=0.0)
        if ceil_mode:
            raise NotSupportedError("count_include_pad with ceil_mode")
        pb, pe = [0, 0], [0, 0]
    opts = {"window_dimensions": kernel, "padding": _webnn_padding(pb, pe),
            "strides": strides, "dilations": dil}
    if ceil_mode:
        opts["output_shape_rounding"] = "ceil"
        # ONNX drops a last window that would start in the end padding
        sizes = []
        for i in range(2):
            n = x.shape[2 + i] + pb[i] + pe[i]
            ek = (kernel[i] - 1) * dil[i] + 1
            o = -(-(n - ek) // strides[i]) + 1
            if (o - 1) * strides[i] >= x.shape[2 + i] + pb[i]:
                o -= 1
            sizes.append(o)
        opts["output_sizes"] = sizes
        del opts["output_shape_rounding"]
    fn = {"max": c.b.max_pool2d, "average": c.b.average_pool2d, "l2": c.b.l2_pool2d}[kind]
    y = fn(x, **opts)
    if nd == 1:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


@_reg("MaxPool")
def _maxpool(c, node, at):
    return _pool(c, node, at, "max")


@_reg("AveragePool")
def _avgpool(c, node, at):
    return _pool(c, node, at, "average")


@_reg("LpPool")
def _lppool(c, node, at):
    p = int(at.get("p", 2))
    x = c.opnd(node.input[0])
    if p == 2 and len(x.shape) != 5:
        return _pool(c, node, at, "l2")
    # (sum over the window of |x|^p)^(1/p): an average pool that counts the
    # padding, times the window size
    dt = x.data_type
    xp = c.b.pow(c.b.abs(x), c.scalar(p, dt)) if p != 1 else c.b.abs(x)
    at2 = dict(at, count_include_pad=1)
    y = _pool(c, node, at2, "average", xp)
    k = int(np.prod(at["kernel_shape"]))
    y = c.b.mul(y, c.scalar(k, dt))
    return y if p == 1 else c.b.pow(y, c.scalar(1.0 / p, dt))


@_reg("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _gpool(c, node, at):
    x = c.opnd(node.input[0])
    axes = list(range(2, len(x.shape)))
    if node.op_type == "GlobalAveragePool":
        return c.b.reduce_mean(x, axes=axes, keep_dimensions=True)
    if node.op_type == "GlobalMaxPool":
        return c.b.reduce_max(x, axes=axes, keep_dimensions=True)
    p = int(at.get("p", 2))
    if p == 2:
        return c.b.reduce_l2(x, axes=axes, keep_dimensions=True)
    if p == 1:
        return c.b.reduce_l1(x, axes=axes, keep_dimensions=True)
    raise NotSupportedError(f"p = {p}")


def _depth_slices(c, x, k, d, s, n_out):
    """For each kernel depth index: x[:, :, kd*d :: s][:n_out] ([N, C, n_out, H, W])."""
    n, ch, _, h, w = x.shape
    out = []
    for kd in range(k):
        out.append(c.b.slice(x, [0, 0, kd * d, 0, 0], [n, ch, (n_out - 1) * s + 1, h, w],
                             strides=[1, 1, s, 1, 1]))
    return out


def _as_2d_batch(c, t):
    """[N, C, D, H, W] -> [N*D, C, H, W]."""
    n, ch, dd, h, w = t.shape
    t = c.b.transpose(t, permutation=[0, 2, 1, 3, 4])
    return c.b.reshape(t, [n * dd, ch, h, w])


def _from_2d_batch(c, t, n, dd):
    """[N*D, C, H, W] -> [N, C, D, H, W]."""
    _, ch, h, w = t.shape
    t = c.b.reshape(t, [n, dd, ch, h, w])
    return c.b.transpose(t, permutation=[0, 2, 1, 3, 4])


def _conv3d(c, node, at, x, w):
    """3-D convolution as a sum over the kernel's depth of 2-D convolutions,
    the output depth folded into the batch."""
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1, 1, 1]))
    dil = list(at.get("dilations", [1, 1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    if pb[0] or pe[0]:
        x = c.b.pad(x, [0, 0, pb[0], 0, 0], [0, 0, pe[0], 0, 0], mode="constant", value=0.0)
    n = x.shape[0]
    od = (x.shape[2] - ((kernel[0] - 1) * dil[0] + 1)) // strides[0] + 1
    y = None
    for kd, xs in enumerate(_depth_slices(c, x, kernel[0], dil[0], strides[0], od)):
        wk = c.b.reshape(c.b.slice(w, [0, 0, kd, 0, 0], [w.shape[0], w.shape[1], 1] +
                                   kernel[1:]), [w.shape[0], w.shape[1]] + kernel[1:])
        yk = c.b.conv2d(_as_2d_batch(c, xs), wk, padding=[pb[1], pe[1], pb[2], pe[2]],
                        strides=strides[1:], dilations=dil[1:], groups=int(at.get("group", 1)))
        y = yk if y is None else c.b.add(y, yk)
    y = _from_2d_batch(c, y, n, od)
    if c.has(node, 2):
        b = c.opnd(node.input[2])
        y = c.b.add(y, c.b.reshape(b, [1, b.shape[0], 1, 1, 1]))
    return y


def _pool3d(c, node, at, x, kind):
    if len([o for o in node.output if o]) > 1:
        raise NotSupportedError("the Indices output (WebNN's maxPool2d has none)")
    if at.get("ceil_mode", 0):
        raise NotSupportedError("ceil_mode in 3-D pooling")
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1, 1, 1]))
    dil = list(at.get("dilations", [1, 1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    padded = any(pb + pe)
    if kind == "average" and padded and not at.get("count_include_pad", 0):
        raise NotSupportedError("3-D average pooling with padding that does not count")
    if padded:
        value = 0.0 if kind == "average" else -math.inf
        if x.data_type not in ("float32", "float16") and kind == "max":
            value = float(np.iinfo(webnn.DATA_TYPES[x.data_type]).min)
        x = c.b.pad(x, [0, 0] + pb, [0, 0] + pe, mode="constant", value=value)
    n, ch, dd = x.shape[:3]
    fn = c.b.max_pool2d if kind == "max" else c.b.average_pool2d
    t = fn(_as_2d_batch(c, x), window_dimensions=kernel[1:], strides=strides[1:],
           dilations=dil[1:])
    t = _from_2d_batch(c, t, n, dd)
    od = (dd - ((kernel[0] - 1) * dil[0] + 1)) // strides[0] + 1
    y = None
    for s in _depth_slices(c, t, kernel[0], dil[0], strides[0], od):
        y = s if y is None else (c.b.max(y, s) if kind == "max" else c.b.add(y, s))
    if kind == "average":
        y = c.b.div(y, c.scalar(kernel[0], y.data_type))
    return y


def _einsum_terms(eq, ranks):
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise NotSupportedError("the equation's inputs do not match the node's")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in eq]
    n_ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t),
                default=0)
    ell = "".join(free[:n_ell])
    out_terms = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            k = r - len(t.replace("...", ""))
            t = t.replace("...", ell[n_ell - k:])
        if len(t) != r:
            raise NotSupportedError(f"term {t!r} does not match rank {r}")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in out_terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch not in ell))
    return out_terms, out


@_reg("Einsum")
def _einsum(c, node, at):
    ops = [c.opnd(n) for n in node.input]
    terms, out = _einsum_terms(at["equation"], [len(o.shape) for o in ops])
    for t in terms:
        if len(set(t)) != len(t):
            raise NotSupportedError("a repeated index within one input (a diagonal)")
    if any(o.data_type not in ("float32", "float16") for o in ops):
        raise NotSupportedError("Einsum on integers (WebNN's matmul is float only)")
    dims = {}
    for t, o in zip(terms, ops):
        for ch, d in zip(t, o.shape):
            if dims.setdefault(ch, d) != d:
                raise NotSupportedError(f"index {ch!r} has sizes {dims[ch]} and {d} "
                                        f"(broadcasting in Einsum)")

    def reduce_unused(x, t, keep):
        axes = [i for i, ch in enumerate(t) if ch not in keep]
        if axes:
            x = c.b.reduce_sum(x, axes=axes)
            t = "".join(ch for ch in t if ch in keep)
        return x, t

    x, tx = ops[0], terms[0]
    for k in range(1, len(ops) + 1):
        later = set(out) | set("".join(terms[k + 1:]))
        if k == len(ops):
            x, tx = reduce_unused(x, tx, set(out))
            break
        y, ty = ops[k], terms[k]
        x, tx = reduce_unused(x, tx, later | set(ty))
        y, ty = reduce_unused(y, ty, later | set(tx))
        batch = [ch for ch in tx if ch in ty and ch in later]
        contract = [ch for ch in tx if ch in ty and ch not in later]
        left = [ch for ch in tx if ch not in ty]
        right = [ch for ch in ty if ch not in tx]
        size = lambda chs: int(np.prod([dims[ch] for ch in chs], dtype=np.int64))  # noqa
        xa = c.b.transpose(x, permutation=[tx.index(ch) for ch in batch + left + contract]) \
            if tx else x
        ya = c.b.transpose(y, permutation=[ty.index(ch) for ch in batch + contract + right]) \
            if ty else y
        xa = c.b.reshape(xa, [size(batch), size(left), size(contract)])
        ya = c.b.reshape(ya, [size(batch), size(contract), size(right)])
        z = c.b.matmul(xa, ya)
        tz = "".join(batch + left + right)
        x = c.b.reshape(z, [dims[ch] for ch in tz])
        tx = tz
    if sorted(tx) != sorted(out):
        raise NotSupportedError(f"cannot form output {out!r} from {tx!r}")
    if tx != out:
        x = c.b.transpose(x, permutation=[tx.index(ch) for ch in out])
    elif len(ops) == 1:
        x = c.b.identity(x)
    return x


def _maxpool_with_indices(c, node, at, x):
    """MaxPool and its Indices: the windows gathered with static indices,
    reduceMax and argMax over each, the argMax mapped to ONNX's flat index."""
    n, ch, h, w = x.shape
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, [h, w], kernel, strides, dil)
    ceil_mode = bool(at.get("ceil_mode", 0))
    out = []
    for i, size in enumerate((h, w)):
        span = size + pb[i] + pe[i] - ((kernel[i] - 1) * dil[i] + 1)
        o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= size + pb[i]:
            o -= 1
        out.append(o)
    oh, ow = out
    # positions of every window element, in padded coordinates
    hp = max(h + pb[0] + pe[0], (oh - 1) * strides[0] + (kernel[0] - 1) * dil[0] + 1)
    wp = max(w + pb[1] + pe[1], (ow - 1) * strides[1] + (kernel[1] - 1) * dil[1] + 1)
    ys = (np.arange(oh) * strides[0]).reshape(oh, 1, 1, 1) + \
        (np.arange(kernel[0]) * dil[0]).reshape(1, 1, kernel[0], 1)
    xs = (np.arange(ow) * strides[1]).reshape(1, ow, 1, 1) + \
        (np.arange(kernel[1]) * dil[1]).reshape(1, 1, 1, kernel[1])
    ys, xs = np.broadcast_arrays(ys, xs)                     # [oh, ow, kh, kw]
    k = kernel[0] * kernel[1]
    flat_padded = (ys * wp + xs).reshape(oh * ow * k).astype(np.int32)
    uy, ux = ys - pb[0], xs - pb[1]
    flat = np.where((uy >= 0) & (uy < h) & (ux >= 0) & (ux < w), uy * w + ux, 0)
    flat = flat.reshape(1, 1, oh, ow, k).astype(np.int64)
    dt = x.data_type
    low = -np.inf if dt in ("float32", "float16") else \
        float(np.iinfo(webnn.DATA_TYPES[dt]).min)
    xp = x
    if hp != h or wp != w:
        xp = c.b.pad(x, [0, 0, pb[0], pb[1]], [0, 0, hp - h - pb[0], wp - w - pb[1]],
                     mode="constant", value=low)
    g = c.b.gather(c.b.reshape(xp, [n, ch, hp * wp]), c.const(flat_padded), axis=2)
    g = c.b.reshape(g, [n, ch, oh, ow, k])
    values = c.b.reduce_max(g, axes=[4])
    am = c.b.arg_max(g, 4, keep_dimensions=True, output_data_type="int32")
    table = c.const(np.broadcast_to(flat, (n, ch, oh, ow, k)).copy())
    spatial = c.b.reshape(c.b.gather_elements(table, am, axis=4), [n, ch, oh, ow])
    if at.get("storage_order", 0):
        # column-major: h + w * H
        sy = np.where((uy >= 0) & (uy < h) & (ux >= 0) & (ux < w), uy + ux * h, 0)
        table = c.const(np.broadcast_to(sy.reshape(1, 1, oh, ow, k).astype(np.int64),
                                        (n, ch, oh, ow, k)).copy())
        spatial = c.b.reshape(c.b.gather_elements(table, am, axis=4), [n, ch, oh, ow])
    offset = (np.arange(n * ch, dtype=np.int64) * h * w).reshape(n, ch, 1, 1)
    return [values, c.b.add(spatial, c.const(offset))]


@_reg("MaxUnpool")
def _maxunpool(c, node, at):
    """The values scattered to their flat indices in a zero tensor."""
    x = c.opnd(node.input[0])
    ind = c.opnd(node.input[1])
    shape = list(x.shape)
    nd = len(shape) - 2
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1] * nd))
    pads = list(at.get("pads", [0] * (2 * nd)))
    default = shape[:2] + [(shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] -
                           pads[i + nd] for i in range(nd)]
    total = int(np.prod(default, dtype=np.int64))
    zeros = c.const(np.zeros([total], webnn.DATA_TYPES[x.data_type]))
    size = int(np.prod(shape, dtype=np.int64))
    y = c.b.scatter_elements(zeros, c.b.reshape(ind, [size]), c.b.reshape(x, [size]), axis=0)
    y = c.b.reshape(y, default)
    if c.has(node, 2):
        # the indices address the default shape; a larger output_shape pads at the end
        out_shape = c.ints(node.input[2], "output_shape")
        extra = [int(o) - d for o, d in zip(out_shape, default)]
        if any(e < 0 for e in extra):
            raise NotSupportedError("an output_shape smaller than the unpooled shape")
        if any(extra):
            y = c.b.pad(y, [0] * len(extra), extra, mode="constant", value=0)
    return y
