"""ONNX quantization: QuantizeLinear, DequantizeLinear and the
integer-accumulating operators (MatMulInteger, ConvInteger, QLinearMatMul,
QLinearConv), exact in float32 when their sums are bounded."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto

import webnn
from webnn import NotSupportedError

from .._convert import _ELEM, _elem_name, _norm_axis, _reg
from .nn import _spatial_pads, _webnn_padding


def _param(c, name):
    """a scale or zero point: its array when known at import (reshaped in
    NumPy below: constants, which compiler/fuse_qdq.c reads), else its
    operand"""
    return c.vals[name] if c.is_static(name) else c.opnd(name)


@_reg("DequantizeLinear")
def _dq(c, node, at):
    x = c.opnd(node.input[0])
    scale = _param(c, node.input[1])
    rank = len(x.shape)
    if c.has(node, 2):
        zp = _param(c, node.input[2])
    else:
        zp = np.zeros(scale.shape, webnn.DATA_TYPES[x.data_type])
    scale, zp = _q_params(c, at, rank, scale, zp)
    return c.b.dequantize_linear(x, scale, zp)


@_reg("QuantizeLinear")
def _q(c, node, at):
    x = c.opnd(node.input[0])
    scale = _param(c, node.input[1])
    rank = len(x.shape)
    if c.has(node, 2):
        zp = _param(c, node.input[2])
    else:
        odt = at.get("output_dtype", 0) or TensorProto.UINT8
        if odt not in _ELEM:
            raise NotSupportedError(f"output type {_elem_name(odt)}")
        zp = np.zeros(scale.shape, webnn.DATA_TYPES[_ELEM[odt]])
    scale, zp = _q_params(c, at, rank, scale, zp)
    return c.b.quantize_linear(x, scale, zp)


def _q_params(c, at, rank, scale, zp):
    """ONNX's per-tensor (scalar) or per-axis (1-D) scale and zero point as
    operands of the input's rank (WebNN broadcasts them, at equal rank);
    arrays become constants of that shape, operands are reshaped."""
    def out(v, shape=None):
        if isinstance(v, np.ndarray):
            return c.const(v.reshape(shape) if shape is not None else v)
        return c.b.reshape(v, shape) if shape is not None else v
    block = int(at.get("block_size", 0) or 0)
    if block:
        # blocked: scale has the input's rank, the axis divided in blocks;
        # WebNN's blockwise broadcast is the same where the blocks divide it
        x_shape = list(c.vals[c.node.input[0]].shape)
        axis = _norm_axis(at.get("axis", 1), rank)
        if len(scale.shape) != rank or x_shape[axis] % block or \
                scale.shape[axis] * block != x_shape[axis]:
            raise NotSupportedError("blocked quantization whose blocks do not divide the axis")
        return out(scale), out(zp)
    if len(scale.shape) == rank and list(zp.shape) == list(scale.shape):
        return out(scale), out(zp)
    shape = [1] * rank
    if len(scale.shape) == 1 and scale.shape[0] != 1 and rank:
        shape[_norm_axis(at.get("axis", 1), rank)] = scale.shape[0]
    if len(scale.shape) > 1:
        raise NotSupportedError("blocked quantization")
    return out(scale, shape), out(zp, shape)


# ---- integer-accumulating operators, exact in float32 when bounded ---------
_F32_EXACT = 1 << 24


def _int_operand_minus_zp(c, node, i_x, i_zp, zp_shape=None):
    """(x - zero point) as float32, and a bound of its magnitude.  zp_shape:
    how a zero point per channel broadcasts against x (None: per tensor only)."""
    x = c.opnd(node.input[i_x])
    dt = x.data_type
    if dt not in ("int8", "uint8"):
        raise NotSupportedError(f"data type {dt}")
    xf = c.b.cast(x, "float32")
    if c.is_static(node.input[i_x]):
        v = c.static(node.input[i_x]).astype(np.int64)
    else:
        info = np.iinfo(webnn.DATA_TYPES[dt])
        v = np.array([info.min, info.max], np.int64)
    if c.has(node, i_zp):
        zp = c.static(node.input[i_zp], "the zero point").astype(np.int64)
        if zp.size == 1:
            z = int(zp.reshape(-1)[0])
            xf = c.b.sub(xf, c.scalar(z, "float32"))
        elif zp_shape is not None:
            z = zp.reshape(zp_shape)
            xf = c.b.sub(xf, c.const(z.astype(np.float32)))
        else:
            raise NotSupportedError("a zero point per channel")
    else:
        z = 0
    return xf, v - z


@_reg("MatMulInteger")
def _matmul_integer(c, node, at):
    a, av = _int_operand_minus_zp(c, node, 0, 2)
    b, bv = _int_operand_minus_zp(c, node, 1, 3, [-1])
    k = a.shape[-1]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise NotSupportedError("a 1-D operand")
    if c.is_static(node.input[1]):
        bound = int(np.abs(av).max()) * int(np.abs(bv).sum(axis=-2).max())
    else:
        bound = int(np.abs(av).max()) * int(np.abs(bv).max()) * k
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers "
                                f"(WebNN's matmul is float only)")
    return c.b.cast(c.b.matmul(a, b), "int32")


@_reg("ConvInteger")
def _conv_integer(c, node, at):
    x, xv = _int_operand_minus_zp(c, node, 0, 2)
    wshape = list(c.vals[node.input[1]].shape)
    w, wv = _int_operand_minus_zp(c, node, 1, 3, [wshape[0]] + [1] * (len(wshape) - 1))
    if len(x.shape) != 4:
        raise NotSupportedError("a ConvInteger other than 2-D")
    if c.is_static(node.input[1]):
        per_out = np.abs(wv).reshape(wv.shape[0], -1).sum(axis=1)
        bound = int(np.abs(xv).max()) * int(per_out.max())
    else:
        bound = int(np.abs(xv).max()) * int(np.abs(wv).max()) * int(np.prod(w.shape[1:]))
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers "
                                f"(WebNN's conv2d is float only)")
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    # ONNX pads x with its zero point: 0 after the subtraction, WebNN's padding
    y = c.b.conv2d(x, w, padding=_webnn_padding(pb, pe), strides=strides, dilations=dil,
                   groups=int(at.get("group", 1)))
    return c.b.cast(y, "int32")


def _requantize(c, acc, multiplier, zp_name, out_dt):
    """round(acc * multiplier) + zero point, saturated, as the output type."""
    y = c.b.mul(acc, multiplier)
    y = c.b.round_even(y)
    if zp_name:
        zp = c.static(zp_name, "the output zero point").astype(np.float32)
        y = c.b.add(y, c.const(zp.reshape(-1)[0] if zp.size == 1 else zp))
    info = np.iinfo(webnn.DATA_TYPES[out_dt])
    y = c.b.clamp(y, min_value=float(info.min), max_value=float(info.max))
    return c.b.cast(y, out_dt)


def _scale(c, name):
    return c.static(name, "a scale").astype(np.float32)


@_reg("QLinearMatMul")
def _qlinear_matmul(c, node, at):
    a, av = _int_operand_minus_zp(c, node, 0, 2)
    b, bv = _int_operand_minus_zp(c, node, 3, 5, [-1])
    if c.is_static(node.input[3]):
        bound = int(np.abs(av).max()) * int(np.abs(bv).sum(axis=-2).max())
    else:
        bound = int(np.abs(av).max()) * int(np.abs(bv).max()) * a.shape[-1]
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers")
    acc = c.b.matmul(a, b)
    mult = _scale(c, node.input[1]) * _scale(c, node.input[4]) / _scale(c, node.input[6])
    out_dt = c.dtype(node.input[7]) if c.has(node, 7) else c.dtype(node.input[0])
    return _requantize(c, acc, c.const(mult.reshape(-1)[0] if mult.size == 1 else mult),
                       node.input[7] if c.has(node, 7) else None, out_dt)


@_reg("QLinearConv")
def _qlinear_conv(c, node, at):
    x, xv = _int_operand_minus_zp(c, node, 0, 2)
    wshape = list(c.vals[node.input[3]].shape)
    w, wv = _int_operand_minus_zp(c, node, 3, 5, [wshape[0]] + [1] * (len(wshape) - 1))
    if len(x.shape) != 4:
        raise NotSupportedError("a QLinearConv other than 2-D")
    if c.is_static(node.input[3]):
        per_out = np.abs(wv).reshape(wv.shape[0], -1).sum(axis=1)
        bound = int(np.abs(xv).max()) * int(per_out.max())
    else:
        bound = int(np.abs(xv).max()) * int(np.abs(wv).max()) * int(np.prod(wshape[1:]))
    bias = None
    if c.has(node, 8):
        bv_ = c.static(node.input[8], "the bias").astype(np.int64)
        bound += int(np.abs(bv_).max())
        bias = c.const(bv_.astype(np.float32))
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers")
    kernel = wshape[2:]
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides, "dilations": dil,
            "groups": int(at.get("group", 1))}
    if bias is not None:
        opts["bias"] = bias
    acc = c.b.conv2d(x, w, **opts)
    ws = _scale(c, node.input[4])
    mult = _scale(c, node.input[1]) * ws / _scale(c, node.input[6])
    m = c.const(mult.reshape(1, -1, 1, 1) if mult.size > 1 else mult.reshape(-1)[0])
    out_dt = c.dtype(node.input[7]) if c.has(node, 7) else c.dtype(node.input[0])
    return _requantize(c, acc, m, node.input[7] if c.has(node, 7) else None, out_dt)
