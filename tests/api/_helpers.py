"""Shared helpers of the API tests: exception/message checks and "recipes"
that call any operator of webnn.OPERATORS with valid arguments.

The recipes are generic: they read the operator's signature and its tensor
limits from the core's operator table (the same table that generates the
MLGraphBuilder methods), give every operand a shape of valid rank ([2] * rank,
which is valid for nearly all spec operators), and fill the non-operand
positional parameters (axis, newShape, ...) with valid values.  Operators
whose shapes need more care (recurrent networks, scatterND, ...) have explicit
shape tables below."""
import contextlib
import re

import numpy as np
import pytest

from webnn import _core

ALL_TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
NP = {dt: np.dtype(dt) for dt in ALL_TYPES}

OPS = {row["camel"]: row for row in _core.op_table()}


# ---- error checks -----------------------------------------------------------
@contextlib.contextmanager
def raises(exc, *words):
    """pytest.raises(exc) that also checks the message mentions every word
    (case-insensitive substring).  Yields the ExceptionInfo."""
    with pytest.raises(exc) as info:
        yield info
    msg = str(info.value)
    missing = [w for w in words if w.lower() not in msg.lower()]
    assert not missing, f"message {msg!r} does not mention {missing}"


def snake_case(name):
    """python-api.md's rule, with the explicit examples of the document taking
    precedence (isNaN -> is_nan although the letter rule gives is_na_n)."""
    explicit = {"isNaN": "is_nan", "gatherND": "gather_nd", "scatterND": "scatter_nd",
                "reduceL1": "reduce_l1", "reduceL2": "reduce_l2", "l2Pool2d": "l2_pool2d",
                "convTranspose2d": "conv_transpose2d", "averagePool2d": "average_pool2d",
                "lstmCell": "lstm_cell", "argMin": "arg_min", "argMax": "arg_max"}
    if name in explicit:
        return explicit[name]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


# ---- operator recipes -------------------------------------------------------
def parse_signature(row):
    """[(kind, name)] with kind in operand / seq / value: the operator's
    positional parameters as the core parsed them (op_table()'s "params"),
    camelCase names."""
    kinds = {"operand": "operand", "sequence": "seq", "value": "value"}
    return [(kinds[kind], camel) for _snake, camel, kind, _field in row["params"]]


def op_limits(op):
    """{operand name (camelCase, as in the table): (data_types, lo, hi)},
    without the outputs ('output', or split's 'outputs', gru's 'output0'...)."""
    lim = OPS[op]["limits"][:OPS[op]["n_inputs"]]
    return {n: (list(dts), lo, hi) for n, dts, lo, hi in lim}


def output_names(op):
    """The limits entries of the outputs: 'output' for most operators, the
    spec's dictionary member names for the others (split: 'outputs')."""
    return [n for n, _, _, _ in OPS[op]["limits"][OPS[op]["n_inputs"]:]]


# Shapes that the generic [2] * rank rule would get wrong.
SHAPES = {
    # steps 1, batch 2, input size 2, hidden size 2, one direction
    "gru": {"input": [1, 2, 2], "weight": [1, 6, 2], "recurrentWeight": [1, 6, 2],
            "bias": [1, 6], "recurrentBias": [1, 6], "initialHiddenState": [1, 2, 2]},
    "gruCell": {"input": [2, 2], "weight": [6, 2], "recurrentWeight": [6, 2],
                "hiddenState": [2, 2], "bias": [6], "recurrentBias": [6]},
    "lstm": {"input": [1, 2, 2], "weight": [1, 8, 2], "recurrentWeight": [1, 8, 2],
             "bias": [1, 8], "recurrentBias": [1, 8], "peepholeWeight": [1, 6],
             "initialHiddenState": [1, 2, 2], "initialCellState": [1, 2, 2]},
    "lstmCell": {"input": [2, 2], "weight": [8, 2], "recurrentWeight": [8, 2],
                 "hiddenState": [2, 2], "cellState": [2, 2], "bias": [8],
                 "recurrentBias": [8], "peepholeWeight": [6]},
    "scatterND": {"input": [2, 2], "indices": [2, 2], "updates": [2]},
    "gatherND": {"input": [2, 2], "indices": [2, 2]},
    "layerNormalization": {"input": [2, 2], "scale": [2], "bias": [2]},
    "instanceNormalization": {"input": [2, 2, 2, 2], "scale": [2], "bias": [2]},
    "batchNormalization": {"input": [2, 2], "mean": [2], "variance": [2],
                           "scale": [2], "bias": [2]},
    "dequantizeLinear": {"input": [2, 2], "scale": [2, 2], "zeroPoint": [2, 2]},
    "quantizeLinear": {"input": [2, 2], "scale": [2, 2], "zeroPoint": [2, 2]},
}

# Operand shapes of a given rank for test_limits' rank-range test, for the
# operators whose operands can not all be [2] * rank: gatherND's indices end
# in a coordinate size, at most input's rank (and the output's rank is
# rank(indices) - 1 + rank(input) - coordinate size).
RANK_SHAPES = {
    "gatherND": lambda r: ({"input": [2] * r, "indices": [2] * (r - 1) + [r]} if r > 0
                           else {"input": [], "indices": []}),
}

# Non-operand positional parameters: value given the first operand's shape.
VALUES = {
    "dataType": lambda s: "float32",
    "newShape": lambda s: [int(np.prod(s, dtype=np.int64))] if s else [1],
    "axis": lambda s: 0,
    "starts": lambda s: [0] * len(s),
    "sizes": lambda s: [1] * len(s),
    "beginningPadding": lambda s: [0] * len(s),
    "endingPadding": lambda s: [0] * len(s),
    "repetitions": lambda s: [1] * len(s),
    "splits": lambda s: 2,
    "steps": lambda s: 1,
    "hiddenSize": lambda s: 2,
}
# expand's newShape keeps the shape
VALUES_BY_OP = {("expand", "newShape"): lambda s: list(s)}

# Operands that must have the same data type ("same as" in the spec).  By
# default, operands with the same advertised list of data types form a group.
GROUPS = {}


def default_shape(op, name, lo, hi):
    if name in SHAPES.get(op, {}):
        return list(SHAPES[op][name])
    rank = max(lo, min(2, hi))
    return [2] * rank


def groups(op):
    lim = op_limits(op)
    if op in GROUPS:
        return GROUPS[op]
    out = []
    for name, (dts, _, _) in lim.items():
        for g in out:
            if lim[g[0]][0] == dts:
                g.append(name)
                break
        else:
            out.append([name])
    return out


def group_of(op, name):
    for g in groups(op):
        if name in g:
            return g
    return [name]


def default_types(op, tested=None, dtype=None):
    """{operand: data type}: every operand gets its group's first advertised
    type, except the tested operand's group, which gets `dtype`."""
    lim = op_limits(op)
    types = {}
    for g in groups(op):
        dt = lim[g[0]][0][0] if lim[g[0]][0] else "float32"
        for n in g:
            types[n] = dt
    if tested is not None:
        for n in group_of(op, tested):
            types[n] = dtype
    return types


class Recipe:
    """Operands made with `builder`, ready to call operator `op`."""

    def __init__(self, builder, op, types=None, include=(), shapes=None, counter=[0]):
        self.op, self.builder = op, builder
        row = OPS[op]
        lim = op_limits(op)
        types = types or default_types(op)
        shapes = shapes or {}
        self.args, self.options = [], {}
        sig = parse_signature(row)
        sig_names = {n for _, n in sig}
        first_shape = None
        self.operands = {}

        def make(name):
            _, lo, hi = lim[name]
            shape = shapes.get(name, default_shape(op, name, lo, hi))
            counter[0] += 1
            operand = builder.input(f"{name}_{counter[0]}",
                                    {"dataType": types[name], "shape": shape})
            self.operands[name] = operand
            return operand, shape

        for kind, name in sig:
            if kind == "operand":
                operand, shape = make(name)
                first_shape = shape if first_shape is None else first_shape
                self.args.append(operand)
            elif kind == "seq":
                operand, shape = make(name)
                first_shape = shape if first_shape is None else first_shape
                self.args.append([operand, operand])
            else:
                f = VALUES_BY_OP.get((op, name), VALUES.get(name))
                if f is None:
                    raise AssertionError(f"test recipe: no value for parameter {name!r} of {op}")
                self.args.append(f(first_shape or []))
        # operands passed in the options dictionary (bias, c, scale, ...)
        for name in include:
            if name not in sig_names:
                operand, _ = make(name)
                self.options[name] = operand

    def method(self, builder=None):
        return getattr(builder or self.builder, self.op)

    def __call__(self, **extra):
        opts = dict(self.options)
        opts.update(extra)
        if opts:
            return self.method()(*self.args, opts)
        return self.method()(*self.args)


def first_operand(result):
    return result[0] if isinstance(result, list) else result


def sample(dtype, shape, seed=0):
    """Deterministic test data covering each type's extremes."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    d = NP[dtype]
    if d.kind == "f":
        a = rng.standard_normal(n).astype(d)
        special = np.array([0.0, -0.0, 1.0, -1.0, np.finfo(d).max, np.finfo(d).min,
                            np.finfo(d).tiny, np.inf, -np.inf], d)
    else:
        info = np.iinfo(d)
        a = rng.integers(info.min, info.max, size=n, dtype=d, endpoint=True)
        special = np.array([info.min, info.max, 0, 1, info.max - 1], d)
    k = min(n, special.size)
    a[:k] = special[:k]
    return a.reshape(shape)
