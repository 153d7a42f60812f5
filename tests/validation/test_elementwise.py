"""Validation steps of the element-wise families, one case per spec step:
#api-mlgraphbuilder-binary, -logical, -unary, and the activations (clamp,
elu, gelu, hardSigmoid, hardSwish, leakyRelu, linear, prelu, relu, sigmoid,
softplus, softsign, tanh), plus identity and cast.  Rejections name the
operator, the label and the argument; accepted edge cases (rank 0, size-1
dimensions, rank 8) give the spec's output shape and data type."""
import math

import pytest

from .conftest import ALL_TYPES, OK, V, params, run_case, x

BINARY = ("add", "sub", "mul", "div", "max", "min", "pow")
COMPARE = ("equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual")
LOGICAL = ("logicalAnd", "logicalOr", "logicalXor")
FLOAT_UNARY = ("ceil", "cos", "erf", "exp", "floor", "log", "reciprocal", "roundEven", "sin",
               "sqrt", "tan", "elu", "gelu", "hardSigmoid", "hardSwish", "leakyRelu", "linear",
               "sigmoid", "softplus", "softsign", "tanh")
SIGNED_UNARY = ("abs", "neg", "sign", "relu")   # float32 float16 int64 int32 int8
SIGNED = ("float32", "float16", "int64", "int32", "int8")


def _m(b, op):
    return getattr(b, op)


def binary_like(op, out_dt=None, types=ALL_TYPES):
    """a, b: same data type, bidirectionally broadcastable shapes."""
    t0 = types[0]
    other = next(t for t in ALL_TYPES if t != t0)
    out = lambda dt: out_dt or dt
    cases = [
        V(op, "dtype-mismatch", lambda b, L: _m(b, op)(x(b, [2], t0), x(b, [2], other), label=L), "b"),
        V(op, "shapes-do-not-broadcast", lambda b, L: _m(b, op)(x(b, [2, 3], t0), x(b, [4], t0), label=L), "b"),
        V(op, "shapes-swapped", lambda b, L: _m(b, op)(x(b, [2, 3], t0), x(b, [3, 2], t0), label=L), "b"),
        V(op, "rank8-mismatch", lambda b, L: _m(b, op)(x(b, [1] * 7 + [2], t0), x(b, [3], t0), label=L), "b"),
        OK(op, "scalars", lambda b, L: _m(b, op)(x(b, [], t0), x(b, [], t0), label=L), (), out(t0)),
        OK(op, "scalar-and-matrix", lambda b, L: _m(b, op)(x(b, [], t0), x(b, [2, 3], t0), label=L), (2, 3), out(t0)),
        OK(op, "size1-and-scalar", lambda b, L: _m(b, op)(x(b, [1], t0), x(b, [], t0), label=L), (1,), out(t0)),
        OK(op, "column-and-row", lambda b, L: _m(b, op)(x(b, [2, 1], t0), x(b, [3], t0), label=L), (2, 3), out(t0)),
        OK(op, "middle-ones", lambda b, L: _m(b, op)(x(b, [4, 1, 3], t0), x(b, [2, 1], t0), label=L), (4, 2, 3), out(t0)),
        OK(op, "rank8", lambda b, L: _m(b, op)(x(b, [1] * 8, t0), x(b, [5], t0), label=L), (1,) * 7 + (5,), out(t0)),
    ]
    for dt in types[1:]:
        cases.append(OK(op, f"type-{dt}", lambda b, L, dt=dt: _m(b, op)(x(b, [1, 2], dt), x(b, [2], dt), label=L),
                        (1, 2), out(dt)))
    return cases


def unary(op, allowed, arg="input"):
    t0 = allowed[0]
    cases = [
        OK(op, "rank0", lambda b, L: _m(b, op)(x(b, [], t0), label=L), ()),
        OK(op, "size1", lambda b, L: _m(b, op)(x(b, [1], t0), label=L), (1,)),
        OK(op, "rank8", lambda b, L: _m(b, op)(x(b, [1, 2, 1, 2, 1, 2, 1, 2], t0), label=L), (1, 2) * 4),
    ]
    for dt in ALL_TYPES:
        if dt not in allowed:
            cases.append(V(op, f"dtype-{dt}", lambda b, L, dt=dt: _m(b, op)(x(b, [2], dt), label=L), arg))
    return cases


TABLE = []
for _op in BINARY:
    TABLE += binary_like(_op)
for _op in COMPARE:
    TABLE += binary_like(_op, out_dt="uint8")
for _op in LOGICAL:
    TABLE += binary_like(_op, out_dt="uint8", types=("uint8",))
    TABLE += [V(_op, "a-not-uint8", lambda b, L, op=_op: _m(b, op)(x(b, [2], "int8"), x(b, [2], "uint8"), label=L), "a"),
              V(_op, "b-not-uint8", lambda b, L, op=_op: _m(b, op)(x(b, [2], "uint8"), x(b, [2], "float32"), label=L), "b")]
TABLE += unary("logicalNot", ("uint8",), "a")
TABLE += [OK("logicalNot", "output-uint8", lambda b, L: b.logical_not(x(b, [3], "uint8"), label=L), (3,), "uint8")]
for _op in ("isNaN", "isInfinite"):
    TABLE += unary(_op, ("float32", "float16"), "a")
    TABLE += [OK(_op, "output-uint8", lambda b, L, op=_op: _m(b, op)(x(b, [3], "float16"), label=L), (3,), "uint8")]
for _op in FLOAT_UNARY:
    TABLE += unary(_op, ("float32", "float16"))
for _op in SIGNED_UNARY:
    TABLE += unary(_op, SIGNED)
TABLE += unary("identity", ALL_TYPES)
TABLE += unary("clamp", ALL_TYPES)

# clamp: "If options.minValue is greater than options.maxValue" after both
# are cast to the input's data type.
TABLE += [
    V("clamp", "min-greater-than-max", lambda b, L: b.clamp(x(b, [2]), min_value=1, max_value=0.5, label=L), "minValue"),
    V("clamp", "min-greater-after-cast-int32", lambda b, L: b.clamp(x(b, [2], "int32"), min_value=1, max_value=0.5, label=L), "minValue"),
    V("clamp", "min-greater-after-cast-uint8", lambda b, L: b.clamp(x(b, [2], "uint8"), min_value=300, max_value=200, label=L), "minValue"),
    V("clamp", "min-greater-int64-exact", lambda b, L: b.clamp(x(b, [2], "int64"), min_value=2 ** 62 + 1, max_value=2 ** 62, label=L), "minValue"),
    V("clamp", "min-infinity", lambda b, L: b.clamp(x(b, [2]), min_value=math.inf, max_value=0, label=L), "minValue"),
    OK("clamp", "infinite-bounds", lambda b, L: b.clamp(x(b, [2]), min_value=math.inf, label=L), (2,)),
    OK("clamp", "min-equals-max", lambda b, L: b.clamp(x(b, [2]), min_value=0.5, max_value=0.5, label=L), (2,), "float32"),
    OK("clamp", "equal-after-cast-uint8", lambda b, L: b.clamp(x(b, [2], "uint8"), min_value=-5, max_value=-1, label=L), (2,), "uint8"),
    OK("clamp", "nan-bounds", lambda b, L: b.clamp(x(b, [2]), min_value=math.nan, max_value=math.nan, label=L), (2,)),
    OK("clamp", "only-min", lambda b, L: b.clamp(x(b, [], "int8"), min_value=-3, label=L), (), "int8"),
    OK("clamp", "only-max", lambda b, L: b.clamp(x(b, [], "uint64"), max_value=2 ** 64 - 1, label=L), (), "uint64"),
]

# elu / hardSigmoid / leakyRelu / linear: IDL doubles, any finite value
for _op, _fields in (("elu", ("alpha",)), ("leakyRelu", ("alpha",)),
                     ("hardSigmoid", ("alpha", "beta")), ("linear", ("alpha", "beta"))):
    for _f in _fields:
        TABLE += [
            V(_op, f"{_f}-nan", lambda b, L, op=_op, f=_f: _m(b, op)(x(b, [2]), {f: math.nan, "label": L}), _f),
            V(_op, f"{_f}-infinity", lambda b, L, op=_op, f=_f: _m(b, op)(x(b, [2]), {f: -math.inf, "label": L}), _f),
            OK(_op, f"{_f}-zero", lambda b, L, op=_op, f=_f: _m(b, op)(x(b, [2], "float16"), {f: 0, "label": L}), (2,), "float16"),
            OK(_op, f"{_f}-huge", lambda b, L, op=_op, f=_f: _m(b, op)(x(b, [2], "float16"), {f: 1e300, "label": L}), (2,), "float16"),
        ]

# prelu: same data type; slope and input bidirectionally broadcast
TABLE += [
    V("prelu", "dtype-mismatch", lambda b, L: b.prelu(x(b, [2]), x(b, [2], "float16"), label=L), "slope"),
    V("prelu", "input-uint8", lambda b, L: b.prelu(x(b, [2], "uint8"), x(b, [2], "uint8"), label=L), "input"),
    V("prelu", "slope-uint32", lambda b, L: b.prelu(x(b, [2], "int32"), x(b, [2], "uint32"), label=L), "slope"),
    V("prelu", "no-broadcast", lambda b, L: b.prelu(x(b, [2, 3]), x(b, [2]), label=L), "slope"),
    OK("prelu", "scalar-slope", lambda b, L: b.prelu(x(b, [2, 3]), x(b, []), label=L), (2, 3)),
    OK("prelu", "bidirectional", lambda b, L: b.prelu(x(b, [2, 1]), x(b, [3]), label=L), (2, 3)),
    OK("prelu", "scalars-int8", lambda b, L: b.prelu(x(b, [], "int8"), x(b, [], "int8"), label=L), (), "int8"),
]

# cast: any type to any type, shape kept
TABLE += [
    V("cast", "unknown-type", lambda b, L: b.cast(x(b, [2]), "float64", label=L), "dataType"),
    V("cast", "type-not-a-string", lambda b, L: b.cast(x(b, [2]), 4, label=L), "dataType"),
]
for _s in ALL_TYPES:
    for _d in ALL_TYPES:
        TABLE.append(OK("cast", f"{_s}-to-{_d}", lambda b, L, s=_s, d=_d: b.cast(x(b, [], s), d, label=L), (), _d))


@pytest.mark.parametrize("case", params(TABLE))
def test_elementwise_validation(ctx, case):
    run_case(ctx, case)
