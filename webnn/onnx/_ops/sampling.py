"""ONNX resampling: Resize / Upsample (resample2d where its sampling is
ONNX's, otherwise static gathers and interpolation matrices along each
resized axis) and GridSample."""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

from webnn import NotSupportedError

from .. import _guard
from .._convert import _norm_axis, _reg


@_reg("Resize", "Upsample")
def _resize(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    rank = len(shape)
    mode = at.get("mode", "nearest")
    roi = None
    given_sizes = False
    if node.op_type == "Upsample" or c.opset < 11:
        ctm = "asymmetric"
        nearest_mode = "floor"
        if "scales" in at:
            scales = list(at["scales"])
        else:
            scales = [float(s) for s in c.static(node.input[1], "scales").reshape(-1)]
        sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
    else:
        ctm = at.get("coordinate_transformation_mode", "half_pixel")
        nearest_mode = at.get("nearest_mode", "round_prefer_floor")
        axes = at.get("axes")
        axes = [_norm_axis(a, rank) for a in axes] if axes is not None else list(range(rank))
        scales = sizes = None
        if ctm == "tf_crop_and_resize" and c.has(node, 1):
            r = [float(v) for v in c.static(node.input[1], "roi").reshape(-1)]
            k = len(r) // 2
            roi = {a: (r[i], r[i + k]) for i, a in enumerate(axes)}
        if c.has(node, 3):
            sz = c.ints(node.input[3], "sizes")
            policy = at.get("keep_aspect_ratio_policy", "stretch")
            sizes = list(shape)
            if policy == "stretch":
                for a, s in zip(axes, sz):
                    sizes[a] = s
                scales = [s / n for s, n in zip(sizes, shape)]
                given_sizes = True
            else:
                # one scale for the given axes (ONNX: round(scale * size)),
                # sampled with that scale
                ratios = [s / shape[a] for a, s in zip(axes, sz)]
                k = min(ratios) if policy == "not_larger" else max(ratios)
                scales = [1.0] * rank
                for a in axes:
                    scales[a] = k
                    sizes[a] = int(np.round(k * shape[a]))
        elif c.has(node, 2):
            sc = [float(s) for s in c.static(node.input[2], "scales").reshape(-1)]
            scales = [1.0] * rank
            for a, s in zip(axes, sc):
                scales[a] = s
            sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
        else:
            raise NotSupportedError("neither scales nor sizes")
    changed = [i for i in range(rank) if sizes[i] != shape[i] or scales[i] != 1.0 or
               (roi and i in roi and roi[i] != (0.0, 1.0))]
    if not changed:
        return c.b.identity(x)
    # WebNN's resample2d where its sampling is ONNX's
    pair = list(changed)
    if len(pair) == 1:
        a = pair[0]
        pair = [a - 1, a] if a > 0 else [a, a + 1]
    native = len(pair) == 2 and pair[1] == pair[0] + 1 and pair[1] < rank and \
        not at.get("antialias", 0) and roi is None and \
        not any(abs(scales[i] - sizes[i] / shape[i]) > 1e-6 for i in changed)
    if native and mode == "nearest":
        native = (ctm in ("half_pixel", "pytorch_half_pixel") and
                  nearest_mode == "round_prefer_floor" and all(sizes[i] > 1 for i in changed)) \
            or (ctm == "asymmetric" and nearest_mode == "floor" and
                all(float(scales[i]).is_integer() and scales[i] >= 1 for i in changed))
        wmode = "nearest-neighbor"
    elif native and mode == "linear":
        native = ctm in ("half_pixel", "pytorch_half_pixel") and all(sizes[i] > 1 for i in changed)
        wmode = "linear"
    else:
        native = False
    if native:
        return c.b.resample2d(x, mode=wmode, sizes=[sizes[i] for i in pair], axes=pair)
    # otherwise: separable, one axis at a time, with the 1-D sampling that
    # ONNX's reference Resize gives (nearest: a gather of static indices;
    # linear and cubic: a product with a static interpolation matrix)
    y = x
    for a in changed:
        c.budget.add_bytes(_guard.nbytes_of([shape[a], shape[a] + 2 * sizes[a]], 8), c.where,
                           f"an interpolation matrix of {shape[a]} x {sizes[a]}")
        m = _resize_matrix(node, at, shape[a], sizes[a], scales[a], given_sizes,
                           roi.get(a) if roi else None, ctm, c.opset)
        y = _apply_axis(c, y, a, m, mode == "nearest")
    return y


def _resize_matrix(node, at, n_in, n_out, scale, given_sizes, roi, ctm, opset):
    """[n_in, n_out]: column j holds the weights of the inputs in output j."""
    from onnx.reference import ReferenceEvaluator
    keep = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
            "exclude_outside", "antialias", "extrapolation_value")
    attrs = {k: v for k, v in at.items() if k in keep}
    if node.op_type == "Upsample" or opset < 11:
        attrs = {"mode": at.get("mode", "nearest"),
                 "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    ins = [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [n_in, n_in]),
           helper.make_tensor_value_info("roi", TensorProto.FLOAT, None),
           helper.make_tensor_value_info("scales", TensorProto.FLOAT, None),
           helper.make_tensor_value_info("sizes", TensorProto.INT64, None)]
    feeds = {"x": np.eye(n_in, dtype=np.float64),
             "roi": np.array([0, roi[0], 1, roi[1]] if roi else [], np.float32)}
    if given_sizes:
        feeds["scales"] = np.array([], np.float32)
        feeds["sizes"] = np.array([n_in, n_out], np.int64)
    else:
        feeds["scales"] = np.array([1.0, scale], np.float32)
        feeds["sizes"] = np.array([], np.int64)
    outs = []
    for ev in (0.0, 1.0):
        if ctm == "tf_crop_and_resize":
            attrs["extrapolation_value"] = ev
        n = helper.make_node("Resize", ["x", "roi", "scales", "sizes"] if given_sizes
                             else ["x", "roi", "scales"], ["y"], **attrs)
        g = helper.make_graph([n], "r", ins if given_sizes else ins[:3],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
        f = {k: v for k, v in feeds.items() if given_sizes or k != "sizes"}
        outs.append(ReferenceEvaluator(model).run(None, f)[0])
        if ctm != "tf_crop_and_resize":
            break
    if len(outs) == 2 and not np.array_equal(outs[0], outs[1]):
        raise NotSupportedError("tf_crop_and_resize with outputs outside the region of interest")
    m = outs[0]
    if m.shape != (n_in, n_out):
        raise NotSupportedError(f"unexpected resize of {n_in} to {m.shape[1]}, not {n_out}")
    return m


def _apply_axis(c, y, axis, m, nearest):
    rank = len(y.shape)
    if nearest:
        if not np.all((m == 0) | (m == 1)) or not np.all(m.sum(0) == 1):
            raise NotSupportedError("nearest sampling that is not a selection")
        idx = np.argmax(m, axis=0).astype(np.int32)
        return c.b.gather(y, c.const(idx), axis=axis)
    dt = y.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"interpolating {dt} data")
    perm = [i for i in range(rank) if i != axis] + [axis]
    t = c.b.transpose(y, permutation=perm) if axis != rank - 1 else y
    if dt == "float16":
        t = c.b.cast(t, "float32")
    shape = list(t.shape)
    flat = c.b.reshape(t, [int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]])
    r = c.b.matmul(flat, c.const(m.astype(np.float32)))
    r = c.b.reshape(r, shape[:-1] + [m.shape[1]])
    if dt == "float16":
        r = c.b.cast(r, "float16")
    if axis != rank - 1:
        inv = [0] * rank
        for i, p in enumerate(perm):
            inv[p] = i
        r = c.b.transpose(r, permutation=inv)
    return r


@_reg("GridSample")
def _gridsample(c, node, at):
    """4-D GridSample, 'linear'/'bilinear' and 'nearest', 'zeros' and
    'border' padding: the corners' values by gatherND, weighted."""
    x, grid = c.opnd(node.input[0]), c.opnd(node.input[1])
    if len(x.shape) != 4:
        raise NotSupportedError(f"a rank-{len(x.shape)} input (only 4-D)")
    mode = at.get("mode", "linear" if c.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear"}.get(mode, mode)
    pad = at.get("padding_mode", "zeros")
    if mode not in ("linear", "nearest"):
        raise NotSupportedError(f"mode {mode!r}")
    if pad not in ("zeros", "border"):
        raise NotSupportedError(f"padding_mode {pad!r}")
    dt = x.data_type
    if dt not in ("float32", "float16") or grid.data_type != dt:
        raise NotSupportedError(f"data type {dt}")
    align = bool(at.get("align_corners", 0))
    n, ch, h, w = x.shape
    _, ho, wo, _ = grid.shape
    one, half = c.scalar(1, dt), c.scalar(0.5, dt)

    def unnorm(g, size):
        if align:
            return c.b.mul(c.b.mul(c.b.add(g, one), half), c.scalar(size - 1, dt))
        return c.b.mul(c.b.sub(c.b.mul(c.b.add(g, one), c.scalar(size, dt)), one), half)
    gx = c.b.reshape(c.b.slice(grid, [0, 0, 0, 0], [n, ho, wo, 1]), [n, ho, wo])
    gy = c.b.reshape(c.b.slice(grid, [0, 0, 0, 1], [n, ho, wo, 1]), [n, ho, wo])
    px, py = unnorm(gx, w), unnorm(gy, h)
    if pad == "border":
        px = c.b.clamp(px, min_value=0.0, max_value=float(w - 1))
        py = c.b.clamp(py, min_value=0.0, max_value=float(h - 1))
    xt = c.b.transpose(x, permutation=[0, 2, 3, 1])          # [N, H, W, C]
    nidx = c.const(np.broadcast_to(np.arange(n, dtype=np.int32).reshape(n, 1, 1),
                                   (n, ho, wo)).copy())

    def corner(ix, iy):
        """Values at integer (float-typed) positions, 0 outside: [N, Ho, Wo, C]."""
        inside = c.b.logical_and(
            c.b.logical_and(c.b.greater_or_equal(ix, c.scalar(0, dt)),
                            c.b.lesser_or_equal(ix, c.scalar(w - 1, dt))),
            c.b.logical_and(c.b.greater_or_equal(iy, c.scalar(0, dt)),
                            c.b.lesser_or_equal(iy, c.scalar(h - 1, dt))))
        cx = c.b.cast(c.b.clamp(ix, min_value=0.0, max_value=float(w - 1)), "int32")
        cy = c.b.cast(c.b.clamp(iy, min_value=0.0, max_value=float(h - 1)), "int32")
        idx = c.b.concat([c.b.reshape(v, [n, ho, wo, 1]) for v in (nidx, cy, cx)], 3)
        vals = c.b.gather_nd(xt, idx)
        keep = c.b.reshape(inside, [n, ho, wo, 1])
        return c.b.where(keep, vals, c.scalar(0, dt))

    if mode == "nearest":
        y = corner(c.b.round_even(px), c.b.round_even(py))
    else:
        x0, y0 = c.b.floor(px), c.b.floor(py)
        x1, y1 = c.b.add(x0, one), c.b.add(y0, one)
        wx1 = c.b.reshape(c.b.sub(px, x0), [n, ho, wo, 1])
        wy1 = c.b.reshape(c.b.sub(py, y0), [n, ho, wo, 1])
        wx0, wy0 = c.b.sub(one, wx1), c.b.sub(one, wy1)
        y = c.b.add(
            c.b.add(c.b.mul(c.b.mul(corner(x0, y0), wx0), wy0),
                    c.b.mul(c.b.mul(corner(x1, y0), wx1), wy0)),
            c.b.add(c.b.mul(c.b.mul(corner(x0, y1), wx0), wy1),
                    c.b.mul(c.b.mul(corner(x1, y1), wx1), wy1)))
    return c.b.transpose(y, permutation=[0, 3, 1, 2])
