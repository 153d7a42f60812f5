"""ONNX element-wise operators: arithmetic, comparison and logic (with the
broadcasting of old opsets), unary math, the activations, Clip, Cast, Mod
and BitShift."""
from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto

from webnn import NotSupportedError

from .._convert import _ELEM, _Fill, _elem_name, _norm_axis, _reg


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}


_COMPARE = {"Equal": "equal", "Greater": "greater", "Less": "lesser",
            "GreaterOrEqual": "greaterOrEqual", "LessOrEqual": "lesserOrEqual"}


_LOGIC = {"And": "logicalAnd", "Or": "logicalOr", "Xor": "logicalXor"}


def _legacy_bcast(c, node, at, b_op, a_shape):
    """Opset < 7 'broadcast' with 'axis': align b's shape at axis of a."""
    if at.get("broadcast") and "axis" in at:
        bs = list(b_op.shape)
        axis = _norm_axis(at["axis"], len(a_shape))
        shape = [1] * axis + bs + [1] * (len(a_shape) - axis - len(bs))
        return c.b.reshape(b_op, shape)
    return b_op


@_reg(*_BINARY)
def _binary(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    b = _legacy_bcast(c, node, at, b, a.shape)
    if node.op_type == "Pow" and a.data_type != b.data_type:
        b = c.b.cast(b, a.data_type)
    return getattr(c.b, _BINARY[node.op_type])(a, b)


@_reg(*_COMPARE)
def _compare(c, node, at):
    c.bools.add(node.output[0])
    return getattr(c.b, _COMPARE[node.op_type])(c.opnd(node.input[0]), c.opnd(node.input[1]))


@_reg(*_LOGIC)
def _logic(c, node, at):
    c.bools.add(node.output[0])
    return getattr(c.b, _LOGIC[node.op_type])(c.opnd(node.input[0]), c.opnd(node.input[1]))


@_reg("Not")
def _not(c, node, at):
    c.bools.add(node.output[0])
    return c.b.logical_not(c.opnd(node.input[0]))


@_reg("Max", "Min", "Sum", "Mean")
def _variadic(c, node, at):
    ops = [c.opnd(n) for n in node.input if n]
    fn = {"Max": c.b.max, "Min": c.b.min, "Sum": c.b.add, "Mean": c.b.add}[node.op_type]
    r = ops[0]
    for o in ops[1:]:
        r = fn(r, o)
    if len(ops) == 1:
        r = c.b.identity(r)
    if node.op_type == "Mean":
        r = c.b.div(r, c.scalar(len(ops), r.data_type))
    return r


_UNARY = {"Abs": "abs", "Ceil": "ceil", "Cos": "cos", "Erf": "erf", "Exp": "exp",
          "Floor": "floor", "Identity": "identity", "Log": "log", "Neg": "neg",
          "Reciprocal": "reciprocal", "Round": "roundEven", "Sin": "sin", "Sign": "sign",
          "Sqrt": "sqrt", "Tan": "tan", "Relu": "relu", "Sigmoid": "sigmoid",
          "Softplus": "softplus", "Softsign": "softsign", "Tanh": "tanh",
          "HardSwish": "hardSwish"}


@_reg(*_UNARY)
def _unary(c, node, at):
    return getattr(c.b, _UNARY[node.op_type])(c.opnd(node.input[0]))


@_reg("IsNaN")
def _isnan(c, node, at):
    c.bools.add(node.output[0])
    return c.b.is_nan(c.opnd(node.input[0]))


@_reg("IsInf")
def _isinf(c, node, at):
    c.bools.add(node.output[0])
    x = c.opnd(node.input[0])
    r = c.b.is_infinite(x)
    pos, neg = at.get("detect_positive", 1), at.get("detect_negative", 1)
    zero = c.scalar(0, x.data_type)
    if pos and not neg:
        r = c.b.logical_and(r, c.b.greater(x, zero))
    elif neg and not pos:
        r = c.b.logical_and(r, c.b.lesser(x, zero))
    elif not pos and not neg:
        r = c.b.logical_and(r, c.b.logical_not(r))
    return r


@_reg("Elu")
def _elu(c, node, at):
    return c.b.elu(c.opnd(node.input[0]), alpha=float(at.get("alpha", 1.0)))


@_reg("LeakyRelu")
def _leaky(c, node, at):
    return c.b.leaky_relu(c.opnd(node.input[0]), alpha=float(at.get("alpha", 0.01)))


@_reg("HardSigmoid")
def _hsig(c, node, at):
    return c.b.hard_sigmoid(c.opnd(node.input[0]), alpha=float(at.get("alpha", 0.2)),
                            beta=float(at.get("beta", 0.5)))


@_reg("Selu")
def _selu(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.67326319217681884765625))
    gamma = float(at.get("gamma", 1.05070102214813232421875))
    return c.b.mul(c.b.elu(x, alpha=alpha), c.scalar(gamma, x.data_type))


@_reg("Celu")
def _celu(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.0))
    a = c.scalar(alpha, x.data_type)
    return c.b.mul(c.b.elu(c.b.div(x, a), alpha=1.0), a)


@_reg("Gelu")
def _gelu(c, node, at):
    x = c.opnd(node.input[0])
    if at.get("approximate", "none") == "none":
        return c.b.gelu(x)
    dt = x.data_type
    inner = c.b.mul(c.scalar(math.sqrt(2 / math.pi), dt),
                    c.b.add(x, c.b.mul(c.scalar(0.044715, dt), c.b.mul(x, c.b.mul(x, x)))))
    return c.b.mul(c.b.mul(c.scalar(0.5, dt), x), c.b.add(c.scalar(1, dt), c.b.tanh(inner)))


@_reg("Mish")
def _mish(c, node, at):
    x = c.opnd(node.input[0])
    return c.b.mul(x, c.b.tanh(c.b.softplus(x)))


@_reg("ThresholdedRelu")
def _trelu(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    return c.b.where(c.b.greater(x, c.scalar(float(at.get("alpha", 1.0)), dt)), x,
                     c.scalar(0, dt))


@_reg("Shrink")
def _shrink(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    lam, bias = float(at.get("lambd", 0.5)), float(at.get("bias", 0.0))
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    lo = c.b.add(x, c.scalar(bias, dt))
    hi = c.b.sub(x, c.scalar(bias, dt))
    return c.b.where(c.b.lesser(x, c.scalar(-lam, dt)), lo,
                     c.b.where(c.b.greater(x, c.scalar(lam, dt)), hi, c.scalar(0, dt)))


@_reg("Sinh", "Cosh")
def _sinh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    e, em = c.b.exp(x), c.b.exp(c.b.neg(x))
    s = c.b.sub(e, em) if node.op_type == "Sinh" else c.b.add(e, em)
    return c.b.mul(s, c.scalar(0.5, dt))


@_reg("Asinh", "Acosh")
def _asinh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    sign = 1 if node.op_type == "Asinh" else -1
    return c.b.log(c.b.add(x, c.b.sqrt(c.b.add(c.b.mul(x, x), c.scalar(sign, dt)))))


@_reg("Atanh")
def _atanh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    one = c.scalar(1, dt)
    return c.b.mul(c.scalar(0.5, dt), c.b.log(c.b.div(c.b.add(one, x), c.b.sub(one, x))))


@_reg("PRelu")
def _prelu(c, node, at):
    x, s = c.opnd(node.input[0]), c.opnd(node.input[1])
    if tuple(s.shape) != tuple(x.shape):
        try:
            np.broadcast_to(np.empty(s.shape, np.uint8), x.shape)
        except ValueError:
            # opset < 7: slope [C] against NCHW
            if len(s.shape) == 1 and len(x.shape) > 2 and s.shape[0] == x.shape[1]:
                s = c.b.reshape(s, [s.shape[0]] + [1] * (len(x.shape) - 2))
    return c.b.prelu(x, s)


@_reg("Clip")
def _clip(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    if c.opset < 11:
        lo, hi = at.get("min"), at.get("max")
        opts = {}
        if lo is not None:
            opts["min_value"] = float(lo)
        if hi is not None:
            opts["max_value"] = float(hi)
        return c.b.clamp(x, **opts)
    r = x
    opts = {}
    for i, key, fn in ((1, "min_value", c.b.max), (2, "max_value", c.b.min)):
        if c.has(node, i):
            if c.is_static(node.input[i]):
                v = c.static(node.input[i]).reshape(-1)[0]
                opts[key] = v.item() if dt in ("int64", "uint64") else float(v)
            else:
                r = fn(r, c.opnd(node.input[i]))
    if opts:
        if dt in ("int64", "uint64"):
            # exact: the bounds as constants
            if "min_value" in opts:
                r = c.b.max(r, c.scalar(opts["min_value"], dt))
            if "max_value" in opts:
                r = c.b.min(r, c.scalar(opts["max_value"], dt))
            return r
        return c.b.clamp(r, **opts)
    return r if r is not x else c.b.identity(x)


@_reg("Cast", "CastLike")
def _cast(c, node, at):
    x = c.opnd(node.input[0])
    if node.op_type == "CastLike":
        to = c.dtype(node.input[1])
        like = c.vals[node.input[1]]
        to_bool = node.input[1] in c.bools or (isinstance(like, (np.ndarray, _Fill)) and
                                               like.dtype == np.bool_)
    else:
        t = at["to"]
        to_bool = t == TensorProto.BOOL
        if not to_bool and t not in _ELEM:
            raise NotSupportedError(f"cast to {_elem_name(t)}, which WebNN lacks")
        to = "uint8" if to_bool else _ELEM[t]
    if to_bool:
        c.bools.add(node.output[0])
        if node.input[0] in c.bools:
            return c.b.identity(x)
        return c.b.not_equal(x, c.scalar(0, x.data_type))
    if x.data_type == to:
        return c.b.identity(x)
    return c.b.cast(x, to)


@_reg("Where")
def _where(c, node, at):
    cond = c.opnd(node.input[0])
    if node.input[1] in c.bools and node.input[2] in c.bools:
        c.bools.add(node.output[0])
    return c.b.where(cond, c.opnd(node.input[1]), c.opnd(node.input[2]))


@_reg("Swish")
def _swish(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.0))
    return c.b.mul(x, c.b.sigmoid(c.b.mul(x, c.scalar(alpha, x.data_type)) if alpha != 1 else x))


@_reg("Mod")
def _mod(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    dt = a.data_type
    if dt not in ("float32", "float16"):
        # WebNN's integer div truncates toward zero: a - trunc(a / b) * b is C's fmod
        r = c.b.sub(a, c.b.mul(c.b.div(a, b), b))
        if at.get("fmod", 0) or dt.startswith("uint"):
            return r
        # Python's mod: the sign of the divisor
        zero = c.scalar(0, dt)
        fix = c.b.logical_and(c.b.not_equal(r, zero),
                              c.b.not_equal(c.b.lesser(r, zero), c.b.lesser(b, zero)))
        return c.b.where(fix, c.b.add(r, b), r)
    q = c.b.div(a, b)
    if at.get("fmod", 0):
        t = c.b.mul(c.b.sign(q), c.b.floor(c.b.abs(q)))
        return c.b.sub(a, c.b.mul(t, b))
    # Python's (NumPy's) mod: a - floor(a / b) * b, a zero result takes b's
    # sign, and a finite a against an infinite b gives a (same signs) or b
    r = c.b.sub(a, c.b.mul(c.b.floor(q), b))
    zero = c.scalar(0, dt)
    r = c.b.where(c.b.equal(r, zero), c.b.mul(c.b.sign(b), zero), r)
    same = c.b.equal(c.b.lesser(a, zero), c.b.lesser(b, zero))
    finite_a = c.b.logical_not(c.b.logical_or(c.b.is_nan(a), c.b.is_infinite(a)))
    return c.b.where(c.b.logical_and(c.b.is_infinite(b), finite_a), c.b.where(same, a, b), r)


@_reg("BitShift")
def _bitshift(c, node, at):
    x, s = c.opnd(node.input[0]), c.opnd(node.input[1])
    dt = x.data_type
    if not dt.startswith("uint"):
        raise NotSupportedError(f"data type {dt}")
    # x << s = x * 2^s, x >> s = x / 2^s (WebNN's unsigned div truncates);
    # 2^s as a power of the constant 2
    two = c.scalar(2, dt)
    p = c.b.pow(c.b.expand(two, list(np.broadcast_shapes(tuple(s.shape), ()))) if s.shape else
                two, s)
    if at["direction"] == "LEFT":
        return c.b.mul(x, p)
    return c.b.div(x, p)
