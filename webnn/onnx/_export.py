"""Export: a built MLGraph (or a builder's outputs) as an onnx.ModelProto.

Reads the record of builder calls (_record.py) and writes one or more ONNX
nodes per WebNN operator (opset 21, the standard domain).  WebNN's uint8
results of comparisons and logical operators are written as ONNX bool
results cast to uint8, so the exported model has WebNN's types exactly."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Dict, Tuple, Union

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import webnn
from webnn import NotSupportedError

if TYPE_CHECKING:
    import onnx

    #: What export() takes: an MLGraph, {output name: MLOperand}, or
    #: (builder, {output name: MLOperand}).
    ExportSource = Union[webnn.MLGraph, Dict[str, webnn.MLOperand],
                         Tuple[webnn.MLGraphBuilder, Dict[str, webnn.MLOperand]]]

OPSET = 21

_TO_ONNX = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
            "int32": TensorProto.INT32, "uint32": TensorProto.UINT32,
            "int64": TensorProto.INT64, "uint64": TensorProto.UINT64,
            "int8": TensorProto.INT8, "uint8": TensorProto.UINT8}


def export(graph_or_outputs: ExportSource, name: str = "webnn") -> onnx.ModelProto:
    """An MLGraph built after ``import webnn.onnx``, or the outputs a builder
    would build ({name: MLOperand}, or (builder, {name: MLOperand})), as an
    onnx.ModelProto."""
    rec = None
    outputs = None
    if isinstance(graph_or_outputs, webnn.MLGraph):
        rec = getattr(graph_or_outputs, "_onnx_record", None)
        if rec is None:
            raise NotSupportedError("export: this graph has no record of its builder calls "
                                    "(it was built before webnn.onnx was imported)")
        outputs = rec.outputs
    elif isinstance(graph_or_outputs, dict):
        outputs = graph_or_outputs
        rec = _record_of_operands(list(outputs.values()))
    elif isinstance(graph_or_outputs, tuple) and len(graph_or_outputs) == 2:
        builder, outputs = graph_or_outputs
        rec = getattr(builder, "_onnx_record", None)
        if rec is None:
            raise NotSupportedError("export: this builder was made before webnn.onnx was "
                                    "imported")
    else:
        raise TypeError("export: expected an MLGraph or (builder, {name: MLOperand})")
    return _Writer(rec).write(outputs, name)


def _record_of_operands(operands):
    from . import _record
    want = {id(o) for o in operands}
    for rec in list(_record._by_builder.values()):
        made = set()
        for e in rec.entries:
            if e[0] in ("input", "constant", "constant_tensor"):
                made.add(id(e[1]))
            elif e[0] == "op":
                made.update(id(o) for o in e[4])
        if want <= made:
            return rec
    raise NotSupportedError("export: these operands come from no builder made after "
                            "webnn.onnx was imported")


class _Writer:
    def __init__(self, rec):
        self.rec = rec
        self.names = {}      # id(operand) -> onnx value name
        self.nodes, self.inits, self.inputs = [], [], []
        self.n = 0
        self.keep = []       # operands whose ids are in self.names

    def fresh(self, hint="v"):
        self.n += 1
        return f"{hint}_{self.n}"

    def name(self, op):
        try:
            return self.names[id(op)]
        except KeyError:
            raise NotSupportedError("export: an operand that is not in the builder's record")

    def bind(self, op, name):
        self.names[id(op)] = name
        self.keep.append(op)

    def const(self, array, hint="c"):
        n = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.require(array, requirements="C"), n))
        return n

    def node(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           **{k: v for k, v in attrs.items() if v is not None}))
        return outs[0] if n_out == 1 else outs

    def write(self, outputs, graph_name):
        for entry in self.rec.entries:
            kind = entry[0]
            if kind == "input":
                _, op, name = entry
                self.bind(op, name)
                self.inputs.append(helper.make_tensor_value_info(
                    name, _TO_ONNX[op.data_type], list(op.shape)))
            elif kind == "constant":
                _, op, arr = entry
                self.bind(op, self.const(arr, "const"))
            elif kind == "constant_tensor":
                self.bind(entry[1], None)
            elif kind == "broken":
                raise NotSupportedError("export: a builder call could not be recorded")
            else:
                _, row, operands, options, outs = entry
                fn = _OPS.get(row["camel"])
                if fn is None:
                    raise NotSupportedError(f"export: {row['camel']} has no ONNX mapping")
                results = fn(self, row, operands, options, outs)
                if not isinstance(results, (list, tuple)):
                    results = [results]
                for o, r in zip(outs, results):
                    self.bind(o, r)
        outs_vi = []
        for out_name, op in outputs.items():
            n = self.name(op)
            if n is None:
                raise NotSupportedError("export: a constant made from an MLTensor "
                                        "(its data cannot be read back)")
            self.nodes.append(helper.make_node("Identity", [n], [out_name]))
            outs_vi.append(helper.make_tensor_value_info(out_name, _TO_ONNX[op.data_type],
                                                         list(op.shape)))
        for node in self.nodes:
            for i in node.input:
                if i == "None":
                    raise NotSupportedError("export: a constant made from an MLTensor")
        g = helper.make_graph(self.nodes, graph_name, self.inputs, outs_vi, self.inits)
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="webnn")
        model.ir_version = min(model.ir_version, 10)
        return model


# ---------------------------------------------------------------------------
_OPS = {}


def _reg(*names):
    def deco(fn):
        for n in names:
            _OPS[n] = fn
        return fn
    return deco


def _opt(options, snake, default=None):
    camel = webnn._api.camel_case(snake)
    if snake in options:
        return options[snake]
    return options.get(camel, default)


def _np(dt):
    return webnn.DATA_TYPES[dt]


def _cast_u8(w, x):
    return w.node("Cast", [x], to=TensorProto.UINT8)


def _to_bool(w, x):
    return w.node("Cast", [x], to=TensorProto.BOOL)


_SAME = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow",
         "max": "Max", "min": "Min", "abs": "Abs", "ceil": "Ceil", "cos": "Cos", "erf": "Erf",
         "exp": "Exp", "floor": "Floor", "identity": "Identity", "log": "Log", "neg": "Neg",
         "reciprocal": "Reciprocal", "roundEven": "Round", "sin": "Sin", "sign": "Sign",
         "sqrt": "Sqrt", "tan": "Tan", "relu": "Relu", "sigmoid": "Sigmoid",
         "softplus": "Softplus", "softsign": "Softsign", "tanh": "Tanh",
         "hardSwish": "HardSwish", "gelu": "Gelu", "matmul": "MatMul", "prelu": "PRelu"}


@_reg(*_SAME)
def _same(w, row, ins, o, outs):
    names = [w.name(i) for i in ins]
    camel = row["camel"]
    if camel == "div" and ins[0].data_type not in ("float32", "float16"):
        # WebNN integer division truncates toward zero like ONNX's Div
        pass
    if camel == "pow" and ins[0].data_type not in ("float32", "float16"):
        # ORT has no integer Pow kernels for every type: compute in double
        a = w.node("Cast", [names[0]], to=TensorProto.DOUBLE)
        b = w.node("Cast", [names[1]], to=TensorProto.DOUBLE)
        return w.node("Cast", [w.node("Pow", [a, b])], to=_TO_ONNX[ins[0].data_type])
    return w.node(_SAME[camel], names)


_CMP = {"equal": "Equal", "greater": "Greater", "greaterOrEqual": "GreaterOrEqual",
        "lesser": "Less", "lesserOrEqual": "LessOrEqual"}


@_reg(*_CMP, "notEqual")
def _cmp(w, row, ins, o, outs):
    a, b = w.name(ins[0]), w.name(ins[1])
    if row["camel"] == "notEqual":
        return _cast_u8(w, w.node("Not", [w.node("Equal", [a, b])]))
    return _cast_u8(w, w.node(_CMP[row["camel"]], [a, b]))


@_reg("logicalNot")
def _lnot(w, row, ins, o, outs):
    return _cast_u8(w, w.node("Not", [_to_bool(w, w.name(ins[0]))]))


@_reg("logicalAnd", "logicalOr", "logicalXor")
def _logic(w, row, ins, o, outs):
    op = {"logicalAnd": "And", "logicalOr": "Or", "logicalXor": "Xor"}[row["camel"]]
    return _cast_u8(w, w.node(op, [_to_bool(w, w.name(ins[0])), _to_bool(w, w.name(ins[1]))]))


@_reg("isNaN")
def _isnan(w, row, ins, o, outs):
    return _cast_u8(w, w.node("IsNaN", [w.name(ins[0])]))


@_reg("isInfinite")
def _isinf(w, row, ins, o, outs):
    return _cast_u8(w, w.node("IsInf", [w.name(ins[0])]))


def _scalar(w, value, dt):
    return w.const(np.array(value, dtype=_np(dt)))


@_reg("clamp")
def _clamp(w, row, ins, o, outs):
    x = ins[0]
    dt = x.data_type
    lo, hi = _opt(o, "min_value"), _opt(o, "max_value")
    if dt in ("float32", "float16"):
        lo = -math.inf if lo is None else lo
        hi = math.inf if hi is None else hi
    else:
        info = np.iinfo(_np(dt))
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
    return w.node("Clip", [w.name(x), _scalar(w, lo, dt), _scalar(w, hi, dt)])


@_reg("elu")
def _elu(w, row, ins, o, outs):
    return w.node("Elu", [w.name(ins[0])], alpha=float(_opt(o, "alpha", 1.0)))


@_reg("leakyRelu")
def _leaky(w, row, ins, o, outs):
    return w.node("LeakyRelu", [w.name(ins[0])], alpha=float(_opt(o, "alpha", 0.01)))


@_reg("hardSigmoid")
def _hsig(w, row, ins, o, outs):
    return w.node("HardSigmoid", [w.name(ins[0])], alpha=float(_opt(o, "alpha", 0.2)),
                  beta=float(_opt(o, "beta", 0.5)))


@_reg("linear")
def _linear(w, row, ins, o, outs):
    dt = ins[0].data_type
    y = w.node("Mul", [w.name(ins[0]), _scalar(w, _opt(o, "alpha", 1.0), dt)])
    return w.node("Add", [y, _scalar(w, _opt(o, "beta", 0.0), dt)])


@_reg("cast")
def _cast(w, row, ins, o, outs):
    return w.node("Cast", [w.name(ins[0])], to=_TO_ONNX[_opt(o, "data_type")])


@_reg("reshape")
def _reshape(w, row, ins, o, outs):
    return w.node("Reshape", [w.name(ins[0]),
                              w.const(np.array(list(outs[0].shape), np.int64))])


@_reg("where")
def _where(w, row, ins, o, outs):
    return w.node("Where", [_to_bool(w, w.name(ins[0])), w.name(ins[1]), w.name(ins[2])])


@_reg("gemm")
def _gemm(w, row, ins, o, outs):
    names = [w.name(ins[0]), w.name(ins[1])]
    c = _opt(o, "c")
    if c is not None:
        names.append(w.name(c))
    return w.node("Gemm", names, alpha=float(_opt(o, "alpha", 1.0)),
                  beta=float(_opt(o, "beta", 1.0)),
                  transA=int(bool(_opt(o, "a_transpose", False))),
                  transB=int(bool(_opt(o, "b_transpose", False))))


def _to_nchw(w, x, layout):
    return w.node("Transpose", [x], perm=[0, 3, 1, 2]) if layout == "nhwc" else x


def _from_nchw(w, y, layout):
    return w.node("Transpose", [y], perm=[0, 2, 3, 1]) if layout == "nhwc" else y


_FILTER_TO_OIHW = {"oihw": None, "hwio": [3, 2, 0, 1], "ohwi": [0, 3, 1, 2],
                   "ihwo": [3, 0, 1, 2]}
_FILTER_TO_IOHW = {"iohw": None, "hwoi": [3, 2, 0, 1], "ohwi": [3, 0, 1, 2]}


def _pads(padding):
    t, b, l, r = padding if padding else (0, 0, 0, 0)
    return [int(t), int(l), int(b), int(r)]


@_reg("conv2d")
def _conv2d(w, row, ins, o, outs):
    layout = _opt(o, "input_layout", "nchw")
    x = _to_nchw(w, w.name(ins[0]), layout)
    f = w.name(ins[1])
    perm = _FILTER_TO_OIHW[_opt(o, "filter_layout", "oihw")]
    if perm:
        f = w.node("Transpose", [f], perm=perm)
    names = [x, f]
    if _opt(o, "bias") is not None:
        names.append(w.name(_opt(o, "bias")))
    y = w.node("Conv", names, pads=_pads(_opt(o, "padding")),
               strides=list(_opt(o, "strides", [1, 1])),
               dilations=list(_opt(o, "dilations", [1, 1])),
               group=int(_opt(o, "groups", 1)))
    return _from_nchw(w, y, layout)


@_reg("convTranspose2d")
def _convt(w, row, ins, o, outs):
    layout = _opt(o, "input_layout", "nchw")
    x = _to_nchw(w, w.name(ins[0]), layout)
    f = w.name(ins[1])
    flayout = _opt(o, "filter_layout", "iohw")
    perm = _FILTER_TO_IOHW[flayout]
    if perm:
        f = w.node("Transpose", [f], perm=perm)
    names = [x, f]
    if _opt(o, "bias") is not None:
        names.append(w.name(_opt(o, "bias")))
    strides = list(_opt(o, "strides", [1, 1]))
    dil = list(_opt(o, "dilations", [1, 1]))
    pads = _pads(_opt(o, "padding"))
    outpad = list(_opt(o, "output_padding", [0, 0]))
    sizes = _opt(o, "output_sizes")
    in_shape = list(ins[0].shape)
    fshape = list(ins[1].shape)
    if sizes is not None:
        ih, iw = (in_shape[2], in_shape[3]) if layout == "nchw" else (in_shape[1], in_shape[2])
        kh, kw = {"iohw": (fshape[2], fshape[3]), "hwoi": (fshape[0], fshape[1]),
                  "ohwi": (fshape[1], fshape[2])}[flayout]
        outpad = []
        for n, k, s, d, pb, pe, want in zip((ih, iw), (kh, kw), strides, dil,
                                            (pads[0], pads[1]), (pads[2], pads[3]), sizes):
            outpad.append(int(want) - ((n - 1) * s + (k - 1) * d + 1 - pb - pe))
    y = w.node("ConvTranspose", names, pads=pads, strides=strides, dilations=dil,
               group=int(_opt(o, "groups", 1)), output_padding=outpad)
    return _from_nchw(w, y, layout)


@_reg("averagePool2d", "maxPool2d", "l2Pool2d")
def _pool(w, row, ins, o, outs):
    layout = _opt(o, "layout", "nchw")
    x = _to_nchw(w, w.name(ins[0]), layout)
    shape = list(ins[0].shape)
    spatial = shape[2:] if layout == "nchw" else shape[1:3]
    window = list(_opt(o, "window_dimensions", spatial))
    strides = list(_opt(o, "strides", [1, 1]))
    dil = list(_opt(o, "dilations", [1, 1]))
    pads = _pads(_opt(o, "padding"))
    out = list(outs[0].shape)
    out_sp = out[2:] if layout == "nchw" else out[1:3]
    floor_sp = [(n + pads[i] + pads[i + 2] - ((k - 1) * d + 1)) // s + 1
                for i, (n, k, s, d) in enumerate(zip(spatial, window, strides, dil))]
    ceil_mode = int(out_sp != floor_sp)
    kw = {"kernel_shape": window, "pads": pads, "strides": strides}
    if ceil_mode:
        kw["ceil_mode"] = 1
    camel = row["camel"]
    if camel == "averagePool2d":
        if dil != [1, 1]:
            kw["dilations"] = dil
        y = w.node("AveragePool", [x], **kw)
    elif camel == "maxPool2d":
        y = w.node("MaxPool", [x], dilations=dil, **kw)
    else:
        if dil != [1, 1]:
            kw["dilations"] = dil
        y = w.node("LpPool", [x], p=2, **kw)
    return _from_nchw(w, y, layout)


def _bshape(rank, axis, n):
    s = [1] * rank
    s[axis] = n
    return s


@_reg("batchNormalization")
def _bn(w, row, ins, o, outs):
    x, mean, var = ins
    rank = len(x.shape)
    axis = int(_opt(o, "axis", 1))
    dt = x.data_type
    n = x.shape[axis] if rank else 1
    eps = float(_opt(o, "epsilon", 1e-5))
    # decomposed: ONNX's BatchNormalization needs the channels at axis 1
    shp = w.const(np.array(_bshape(rank, axis, n), np.int64))
    r = lambda v: w.node("Reshape", [v, shp])  # noqa: E731
    d = w.node("Sub", [w.name(x), r(w.name(mean))])
    den = w.node("Sqrt", [w.node("Add", [r(w.name(var)), _scalar(w, eps, dt)])])
    y = w.node("Div", [d, den])
    if _opt(o, "scale") is not None:
        y = w.node("Mul", [y, r(w.name(_opt(o, "scale")))])
    if _opt(o, "bias") is not None:
        y = w.node("Add", [y, r(w.name(_opt(o, "bias")))])
    return y


@_reg("instanceNormalization")
def _inorm(w, row, ins, o, outs):
    layout = _opt(o, "layout", "nchw")
    x = ins[0]
    ch = x.shape[1] if layout == "nchw" else x.shape[3]
    dt = x.data_type
    xn = _to_nchw(w, w.name(x), layout)
    scale = w.name(_opt(o, "scale")) if _opt(o, "scale") is not None else \
        w.const(np.ones([ch], _np(dt)))
    bias = w.name(_opt(o, "bias")) if _opt(o, "bias") is not None else \
        w.const(np.zeros([ch], _np(dt)))
    y = w.node("InstanceNormalization", [xn, scale, bias],
               epsilon=float(_opt(o, "epsilon", 1e-5)))
    return _from_nchw(w, y, layout)


@_reg("layerNormalization")
def _lnorm(w, row, ins, o, outs):
    x = ins[0]
    rank = len(x.shape)
    dt = x.data_type
    axes = _opt(o, "axes")
    axes = list(range(1, rank)) if axes is None else [int(a) for a in axes]
    eps = float(_opt(o, "epsilon", 1e-5))
    xn = w.name(x)
    if axes:
        ax = w.const(np.array(axes, np.int64))
        mean = w.node("ReduceMean", [xn, ax], keepdims=1)
        d = w.node("Sub", [xn, mean])
        var = w.node("ReduceMean", [w.node("Mul", [d, d]), ax], keepdims=1)
        y = w.node("Div", [d, w.node("Sqrt", [w.node("Add", [var, _scalar(w, eps, dt)])])])
    else:
        y = w.node("Mul", [xn, _scalar(w, 0, dt)])   # nothing to normalize over: 0

    def place(v):
        # WebNN's scale/bias have the sizes of `axes` in that order
        order = sorted(range(len(axes)), key=lambda i: axes[i])
        if order != list(range(len(axes))):
            v = w.node("Transpose", [v], perm=order)
        shape = [x.shape[i] if i in axes else 1 for i in range(rank)]
        return w.node("Reshape", [v, w.const(np.array(shape, np.int64))])
    if _opt(o, "scale") is not None:
        y = w.node("Mul", [y, place(w.name(_opt(o, "scale")))])
    if _opt(o, "bias") is not None:
        y = w.node("Add", [y, place(w.name(_opt(o, "bias")))])
    return y


@_reg("softmax")
def _softmax(w, row, ins, o, outs):
    return w.node("Softmax", [w.name(ins[0])], axis=int(_opt(o, "axis")))


_REDUCE = {"reduceL1": "ReduceL1", "reduceL2": "ReduceL2", "reduceLogSum": "ReduceLogSum",
           "reduceLogSumExp": "ReduceLogSumExp", "reduceMax": "ReduceMax",
           "reduceMean": "ReduceMean", "reduceMin": "ReduceMin",
           "reduceProduct": "ReduceProd", "reduceSum": "ReduceSum",
           "reduceSumSquare": "ReduceSumSquare"}


@_reg(*_REDUCE)
def _reduce(w, row, ins, o, outs):
    x = ins[0]
    rank = len(x.shape)
    axes = _opt(o, "axes")
    axes = list(range(rank)) if axes is None else [int(a) for a in axes]
    keep = int(bool(_opt(o, "keep_dimensions", False)))
    op = _REDUCE[row["camel"]]
    xn = w.name(x)
    if not axes:
        # no axis: the element-wise part of the reduction only
        if op in ("ReduceL1",):
            return w.node("Abs", [xn])
        if op == "ReduceSumSquare":
            return w.node("Mul", [xn, xn])
        if op == "ReduceLogSum":
            return w.node("Log", [xn])
        if op == "ReduceL2":
            return w.node("Sqrt", [w.node("Mul", [xn, xn])])
        return w.node("Identity", [xn])
    return w.node(op, [xn, w.const(np.array(axes, np.int64))], keepdims=keep)


@_reg("argMin", "argMax")
def _arg(w, row, ins, o, outs):
    op = "ArgMin" if row["camel"] == "argMin" else "ArgMax"
    y = w.node(op, [w.name(ins[0])], axis=int(_opt(o, "axis")),
               keepdims=int(bool(_opt(o, "keep_dimensions", False))))
    dt = _opt(o, "output_data_type", "int32")
    return y if dt == "int64" else w.node("Cast", [y], to=_TO_ONNX[dt])


@_reg("cumulativeSum")
def _cumsum(w, row, ins, o, outs):
    return w.node("CumSum", [w.name(ins[0]), w.const(np.array(int(_opt(o, "axis")), np.int64))],
                  exclusive=int(bool(_opt(o, "exclusive", False))),
                  reverse=int(bool(_opt(o, "reversed", False))))


@_reg("resample2d")
def _resample(w, row, ins, o, outs):
    mode = _opt(o, "mode", "nearest-neighbor")
    sizes = np.array(list(outs[0].shape), np.int64)
    kw = {"coordinate_transformation_mode": "half_pixel"}
    if mode == "linear":
        kw["mode"] = "linear"
    else:
        kw["mode"] = "nearest"
        kw["nearest_mode"] = "round_prefer_floor"
    return w.node("Resize", [w.name(ins[0]), "", "", w.const(sizes)], **kw)


@_reg("concat")
def _concat(w, row, ins, o, outs):
    return w.node("Concat", [w.name(i) for i in ins], axis=int(_opt(o, "axis")))


@_reg("expand")
def _expand(w, row, ins, o, outs):
    return w.node("Expand", [w.name(ins[0]), w.const(np.array(list(outs[0].shape), np.int64))])


@_reg("transpose")
def _transpose(w, row, ins, o, outs):
    perm = _opt(o, "permutation")
    if perm is None:
        perm = list(range(len(ins[0].shape)))[::-1]
    if not perm:
        return w.node("Identity", [w.name(ins[0])])
    return w.node("Transpose", [w.name(ins[0])], perm=[int(p) for p in perm])


@_reg("slice")
def _slice(w, row, ins, o, outs):
    starts = [int(s) for s in _opt(o, "starts")]
    if not starts:
        return w.node("Identity", [w.name(ins[0])])
    sizes = [int(s) for s in _opt(o, "sizes")]
    strides = [int(s) for s in (_opt(o, "strides") or [1] * len(starts))]
    ends = [s + n for s, n in zip(starts, sizes)]
    return w.node("Slice", [w.name(ins[0]), w.const(np.array(starts, np.int64)),
                            w.const(np.array(ends, np.int64)),
                            w.const(np.array(range(len(starts)), np.int64)),
                            w.const(np.array(strides, np.int64))])


@_reg("split")
def _split(w, row, ins, o, outs):
    axis = int(_opt(o, "axis", 0))
    sizes = [int(out.shape[axis]) for out in outs]
    return w.node("Split", [w.name(ins[0]), w.const(np.array(sizes, np.int64))],
                  n_out=len(outs), axis=axis) if len(outs) > 1 else \
        [w.node("Identity", [w.name(ins[0])])]


@_reg("tile")
def _tile(w, row, ins, o, outs):
    return w.node("Tile", [w.name(ins[0]),
                           w.const(np.array([int(r) for r in _opt(o, "repetitions")], np.int64))])


@_reg("reverse")
def _reverse(w, row, ins, o, outs):
    rank = len(ins[0].shape)
    axes = _opt(o, "axes")
    axes = list(range(rank)) if axes is None else [int(a) for a in axes]
    if not axes:
        return w.node("Identity", [w.name(ins[0])])
    k = len(axes)
    return w.node("Slice", [w.name(ins[0]), w.const(np.full(k, -1, np.int64)),
                            w.const(np.full(k, -(2 ** 63), np.int64)),
                            w.const(np.array(axes, np.int64)), w.const(np.full(k, -1, np.int64))])


@_reg("triangular")
def _tri(w, row, ins, o, outs):
    return w.node("Trilu", [w.name(ins[0]),
                            w.const(np.array(int(_opt(o, "diagonal", 0)), np.int64))],
                  upper=int(bool(_opt(o, "upper", True))))


@_reg("pad")
def _pad(w, row, ins, o, outs):
    begin = [int(p) for p in _opt(o, "beginning_padding")]
    end = [int(p) for p in _opt(o, "ending_padding")]
    mode = _opt(o, "mode", "constant")
    x = ins[0]
    if mode == "symmetric":
        return _pad_symmetric(w, w.name(x), list(x.shape), begin, end)
    onnx_mode = {"constant": "constant", "edge": "edge", "reflection": "reflect"}[mode]
    names = [w.name(x), w.const(np.array(begin + end, np.int64))]
    if mode == "constant":
        names.append(_scalar(w, _opt(o, "value", 0), x.data_type))
    return w.node("Pad", names, mode=onnx_mode)


def _pad_symmetric(w, x, shape, begin, end):
    """'symmetric' (the edge repeated): slices, reversed and concatenated."""
    for axis, (b, e) in enumerate(zip(begin, end)):
        parts = []

        def part(start, stop):
            return w.node("Slice", [x, w.const(np.array([start], np.int64)),
                                    w.const(np.array([stop], np.int64)),
                                    w.const(np.array([axis], np.int64))])
        if b:
            parts.append(_reverse_axis(w, part(0, b), axis))
        parts.append(x)
        if e:
            parts.append(_reverse_axis(w, part(shape[axis] - e, shape[axis]), axis))
        if len(parts) > 1:
            x = w.node("Concat", parts, axis=axis)
            shape[axis] += b + e
    return x


def _reverse_axis(w, x, axis):
    return w.node("Slice", [x, w.const(np.array([-1], np.int64)),
                            w.const(np.array([-(2 ** 63)], np.int64)),
                            w.const(np.array([axis], np.int64)),
                            w.const(np.array([-1], np.int64))])


def _int64_indices(w, ins, i):
    n = w.name(ins[i])
    return w.node("Cast", [n], to=TensorProto.INT64) if ins[i].data_type != "int64" else n


def _clamp_indices(w, idx, dim):
    """WebNN clamps out-of-range indices to [-dim, dim - 1]; ONNX rejects them."""
    lo = w.const(np.array(-dim, np.int64))
    hi = w.const(np.array(dim - 1, np.int64))
    return w.node("Clip", [idx, lo, hi])


@_reg("gather")
def _gather(w, row, ins, o, outs):
    axis = int(_opt(o, "axis", 0))
    idx = _clamp_indices(w, _int64_indices(w, ins, 1), ins[0].shape[axis])
    return w.node("Gather", [w.name(ins[0]), idx], axis=axis)


@_reg("gatherElements")
def _gather_el(w, row, ins, o, outs):
    axis = int(_opt(o, "axis", 0))
    idx = _clamp_indices(w, _int64_indices(w, ins, 1), ins[0].shape[axis])
    return w.node("GatherElements", [w.name(ins[0]), idx], axis=axis)


@_reg("gatherND")
def _gather_nd(w, row, ins, o, outs):
    return w.node("GatherND", [w.name(ins[0]), _int64_indices(w, ins, 1)])


@_reg("scatterElements")
def _scatter_el(w, row, ins, o, outs):
    axis = int(_opt(o, "axis", 0))
    return w.node("ScatterElements", [w.name(ins[0]), _int64_indices(w, ins, 1),
                                      w.name(ins[2])], axis=axis)


@_reg("scatterND")
def _scatter_nd(w, row, ins, o, outs):
    return w.node("ScatterND", [w.name(ins[0]), _int64_indices(w, ins, 1), w.name(ins[2])])


@_reg("dequantizeLinear")
def _dq(w, row, ins, o, outs):
    x, scale, zp = ins
    ft = _TO_ONNX[scale.data_type]
    xs = w.node("Cast", [w.name(x)], to=ft)
    z = w.node("Cast", [w.name(zp)], to=ft)
    return w.node("Mul", [w.node("Sub", [xs, _blockwise(w, z, zp, x)]),
                          _blockwise(w, w.name(scale), scale, x)])


@_reg("quantizeLinear")
def _q(w, row, ins, o, outs):
    x, scale, zp = ins
    dt = zp.data_type
    info = np.iinfo(_np(dt))
    ft = x.data_type
    y = w.node("Round", [w.node("Div", [w.name(x), _blockwise(w, w.name(scale), scale, x)])])
    y = w.node("Add", [y, _blockwise(w, w.node("Cast", [w.name(zp)], to=_TO_ONNX[ft]), zp, x)])
    y = w.node("Clip", [y, _scalar(w, info.min, ft), _scalar(w, info.max, ft)])
    return w.node("Cast", [y], to=_TO_ONNX[dt])


def _blockwise(w, name, op, x):
    """WebNN's blockwise broadcast of scale / zeroPoint to the input's shape."""
    if list(op.shape) == list(x.shape):
        return name
    reps = []
    for a, b in zip(x.shape, op.shape):
        reps.append(a // b if b else 1)
    if all(r == 1 or b == 1 for r, b in zip(reps, op.shape)):
        return name  # plain broadcasting
    # repeat each element reps[i] times along axis i
    shp = list(op.shape)
    for axis, r in enumerate(reps):
        if r > 1 and op.shape[axis] > 1:
            # [.., n, ..] -> [.., n, 1, ..] -> expand [.., n, r, ..] -> [.., n*r, ..]
            pre = shp[:axis + 1] + [1] + shp[axis + 1:]
            name = w.node("Reshape", [name, w.const(np.array(pre, np.int64))])
            ex = shp[:axis + 1] + [r] + shp[axis + 1:]
            name = w.node("Expand", [name, w.const(np.array(ex, np.int64))])
            shp[axis] *= r
            name = w.node("Reshape", [name, w.const(np.array(shp, np.int64))])
    return name


# ---- recurrent networks: unrolled into their cells' arithmetic ---------------
_ACT = {"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}


def _sl(w, x, axis, start, size):
    return w.node("Slice", [x, w.const(np.array([start], np.int64)),
                            w.const(np.array([start + size], np.int64)),
                            w.const(np.array([axis], np.int64))])


def _squeeze0(w, x):
    return w.node("Squeeze", [x, w.const(np.array([0], np.int64))])


def _unsq0(w, x):
    return w.node("Unsqueeze", [x, w.const(np.array([0], np.int64))])


def _gates(w, x, wt, h, rt, b, rb, n_gates, hid):
    """x W^T (+ b) and h R^T (+ rb), each [batch, n_gates * hid]."""
    xw = w.node("MatMul", [x, w.node("Transpose", [wt], perm=[1, 0])])
    if b is not None:
        xw = w.node("Add", [xw, b])
    hr = w.node("MatMul", [h, w.node("Transpose", [rt], perm=[1, 0])])
    if rb is not None:
        hr = w.node("Add", [hr, rb])
    return xw, hr


def _lstm_cell(w, x, wt, rt, h, c, hid, b, rb, peep, layout, acts):
    xw, hr = _gates(w, x, wt, h, rt, b, rb, 4, hid)
    s = w.node("Add", [xw, hr])
    pos = {"iofg": {"i": 0, "o": 1, "f": 2, "g": 3},
           "ifgo": {"i": 0, "f": 1, "g": 2, "o": 3}}[layout]
    gate = {k: _sl(w, s, 1, v * hid, hid) for k, v in pos.items()}
    if peep is not None:
        for k, at in (("i", 0), ("o", 1), ("f", 2)):
            gate[k] = w.node("Add", [gate[k], w.node("Mul", [c, _sl(w, peep, 0, at * hid, hid)])])
    f_act, g_act, h_act = (_ACT[a] for a in acts)
    i = w.node(f_act, [gate["i"]])
    f = w.node(f_act, [gate["f"]])
    o = w.node(f_act, [gate["o"]])
    g = w.node(g_act, [gate["g"]])
    c2 = w.node("Add", [w.node("Mul", [f, c]), w.node("Mul", [i, g])])
    h2 = w.node("Mul", [o, w.node(h_act, [c2])])
    return h2, c2


def _gru_cell(w, x, wt, rt, h, hid, b, rb, reset_after, layout, acts):
    pos = {"zrn": {"z": 0, "r": 1, "n": 2}, "rzn": {"r": 0, "z": 1, "n": 2}}[layout]
    f_act, n_act = (_ACT[a] for a in acts)
    xw, hr = _gates(w, x, wt, h, rt, b, rb if reset_after else None, 3, hid)
    xg = {k: _sl(w, xw, 1, v * hid, hid) for k, v in pos.items()}
    hg = {k: _sl(w, hr, 1, v * hid, hid) for k, v in pos.items()}
    if not reset_after and rb is not None:
        for k in ("z", "r"):
            hg[k] = w.node("Add", [hg[k], _sl(w, rb, 0, pos[k] * hid, hid)])
    z = w.node(f_act, [w.node("Add", [xg["z"], hg["z"]])])
    r = w.node(f_act, [w.node("Add", [xg["r"], hg["r"]])])
    if reset_after:
        n = w.node(n_act, [w.node("Add", [xg["n"], w.node("Mul", [r, hg["n"]])])])
    else:
        rn = _sl(w, rt, 0, pos["n"] * hid, hid)
        hn = w.node("MatMul", [w.node("Mul", [r, h]), w.node("Transpose", [rn], perm=[1, 0])])
        if rb is not None:
            hn = w.node("Add", [hn, _sl(w, rb, 0, pos["n"] * hid, hid)])
        n = w.node(n_act, [w.node("Add", [xg["n"], hn])])
    # h' = (1 - z) * n + z * h = n + z * (h - n)
    return w.node("Add", [n, w.node("Mul", [z, w.node("Sub", [h, n])])])


def _opt_name(w, o, key):
    v = _opt(o, key)
    return None if v is None else w.name(v)


@_reg("lstmCell")
def _lstm_cell_op(w, row, ins, o, outs):
    x, wt, rt, h, c = (w.name(i) for i in ins)
    hid = int(_opt(o, "hidden_size"))
    acts = _opt(o, "activations") or ["sigmoid", "tanh", "tanh"]
    return list(_lstm_cell(w, x, wt, rt, h, c, hid, _opt_name(w, o, "bias"),
                           _opt_name(w, o, "recurrent_bias"), _opt_name(w, o, "peephole_weight"),
                           _opt(o, "layout", "iofg"), acts))


@_reg("gruCell")
def _gru_cell_op(w, row, ins, o, outs):
    x, wt, rt, h = (w.name(i) for i in ins)
    hid = int(_opt(o, "hidden_size"))
    acts = _opt(o, "activations") or ["sigmoid", "tanh"]
    return _gru_cell(w, x, wt, rt, h, hid, _opt_name(w, o, "bias"),
                     _opt_name(w, o, "recurrent_bias"), bool(_opt(o, "reset_after", True)),
                     _opt(o, "layout", "zrn"), acts)


def _rnn(w, ins, o, outs, kind):
    x = w.name(ins[0])
    steps, batch, _ = ins[0].shape
    hid = int(_opt(o, "hidden_size"))
    direction = _opt(o, "direction", "forward")
    ndir = 2 if direction == "both" else 1
    dt = ins[0].data_type
    zeros = w.const(np.zeros([ndir, batch, hid], _np(dt)))
    h0 = _opt_name(w, o, "initial_hidden_state") or zeros
    c0 = (_opt_name(w, o, "initial_cell_state") or zeros) if kind == "lstm" else None
    hs, cs, seqs = [], [], []
    for d in range(ndir):
        pick = lambda v: None if v is None else _squeeze0(w, _sl(w, v, 0, d, 1))  # noqa: E731
        wt, rt = pick(w.name(ins[1])), pick(w.name(ins[2]))
        b, rb = pick(_opt_name(w, o, "bias")), pick(_opt_name(w, o, "recurrent_bias"))
        h = pick(h0)
        c = pick(c0)
        backward = d == 1 or direction == "backward"
        seq = [None] * steps
        for step in range(steps):
            t = steps - 1 - step if backward else step
            xt = _squeeze0(w, _sl(w, x, 0, t, 1))
            if kind == "lstm":
                h, c = _lstm_cell(w, xt, wt, rt, h, c, hid, b, rb,
                                  pick(_opt_name(w, o, "peephole_weight")),
                                  _opt(o, "layout", "iofg"),
                                  _opt(o, "activations") or ["sigmoid", "tanh", "tanh"])
            else:
                h = _gru_cell(w, xt, wt, rt, h, hid, b, rb, bool(_opt(o, "reset_after", True)),
                              _opt(o, "layout", "zrn"), _opt(o, "activations") or
                              ["sigmoid", "tanh"])
            seq[t] = h
        hs.append(_unsq0(w, h))
        if kind == "lstm":
            cs.append(_unsq0(w, c))
        seqs.append(seq)
    cat = lambda parts: parts[0] if len(parts) == 1 else w.node("Concat", parts, axis=0)  # noqa
    results = [cat(hs)]
    if kind == "lstm":
        results.append(cat(cs))
    if _opt(o, "return_sequence", False):
        per_step = []
        for t in range(steps):
            per_step.append(_unsq0(w, cat([_unsq0(w, seqs[d][t]) for d in range(ndir)])))
        results.append(cat(per_step))
    return results


@_reg("lstm")
def _lstm_op(w, row, ins, o, outs):
    return _rnn(w, ins, o, outs, "lstm")


@_reg("gru")
def _gru_op(w, row, ins, o, outs):
    return _rnn(w, ins, o, outs, "gru")
