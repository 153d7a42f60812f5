"""Case generator for test_backend_ops.py: small valid graphs of one operator,
made from the operator table (webnn._core.op_table()).

Knowledge of one operator is taken from its row wherever the row has it:

* the data types and ranks of every operand (row["limits"]): a case is made
  for every data type of the operator's leading operand (or, for the few
  operators whose interesting type is another operand's, of that one), with a
  rank inside the operand's rank range;
* the options (row["fields"], row["field_types"], row["defaults"]): every
  enum option gets a case per non-default value and every bool option a case
  with its default negated, one option at a time, on top of the default case;
  a recipe that cannot honour an option value it has not seen raises
  NoCase, so a new option value fails the test instead of passing unseen;
* the shape rules are per *family* (row["family"]): a recipe per family
  builds inputs for any operator of the family; what differs inside a family
  (an input domain, a NumPy reference) is in small per-operator tables.

Each case carries a NumPy float64 (or exact) reference where a simple one
exists; otherwise the CPU's result is only checked for shape, data type and
finiteness (tests/ops checks those operators against NumPy in depth).

WEBNN_BACKEND_OPS=long makes the shapes bigger (more than one block / warp /
vector of the kernels) and adds a second random draw of every case.
"""
import math
import os
import zlib
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

import webnn
from webnn import _core

LONG = os.environ.get("WEBNN_BACKEND_OPS", "") == "long"
FLOATS = ("float32", "float16")
ROWS = {row["camel"]: row for row in _core.op_table()}


class NoCase(Exception):
    """The recipe cannot make a valid case for these options."""


@dataclass
class Case:
    op: str
    key: str                      # the data type key in the test id
    variant: str                  # "default" or the non-default options
    inputs: dict                  # name -> ndarray (graph inputs)
    build: Callable               # build(builder, ops) -> operand, list or dict
    operand_types: dict           # limits operand name (snake) -> (data type, rank)
    ref: Optional[Callable] = None  # ref(inputs) -> float64 / exact array (or list)
    exact: bool = False           # backends must agree bit for bit
    accum: bool = False           # sums of several products: magnitude-scaled tolerance
    constants: tuple = ()         # inputs baked in as constants
    ulps: Optional[int] = None    # override of the float tolerance in ulps
    finite: bool = True           # the CPU's result is finite for these inputs

    @property
    def id(self):
        return f"{self.op}-{self.key}-{self.variant}"


# ---- random data -----------------------------------------------------------------
def rng_for(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def rand(rng, shape, dt, lo=-4.0, hi=4.0):
    """Uniform values in [lo, hi] of data type dt (integers: rounded, clipped to
    the type's range)."""
    t = np.dtype(dt)
    if t.kind == "f":
        return rng.uniform(lo, hi, size=shape).astype(t)
    info = np.iinfo(t)
    lo, hi = max(int(math.ceil(lo)), int(info.min)), min(int(math.floor(hi)), int(info.max))
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(t)


def dim(rng, lo=2, hi=5):
    if LONG:
        lo, hi = lo * 4 + 3, hi * 8 + 5
    return int(rng.integers(lo, hi + 1))


def shape_of_rank(rng, rank):
    return tuple(dim(rng) for _ in range(rank))


def pick_rank(row, operand=0, want=3):
    _, _, lo, hi = row["limits"][operand]
    return max(lo, min(hi, want))


def limits_of(row, name):
    for n, dts, lo, hi in row["limits"]:
        if n == name:
            return dts, lo, hi
    raise KeyError(name)


def snake(name):
    return webnn._api.snake_case(name)


# ---- option variants (generic, from the row) -------------------------------------------
def option_variants(row):
    """[(name, {option: value})]: the defaults, then each enum option at each
    other value and each bool option negated, one at a time."""
    out = [("default", {})]
    for i, (sn, camel, enum) in enumerate(row["fields"]):
        kind, default = row["field_types"][i], row["defaults"][i]
        if kind == "enum":
            for v in enum:
                if v != default:
                    out.append((f"{camel}={v}", {sn: v}))
        elif kind == "bool":
            out.append((f"{camel}={not default}", {sn: not default}))
    return out


# ---- NumPy references ------------------------------------------------------------
def f64(a):
    return np.asarray(a).astype(np.float64)


_erf = np.vectorize(math.erf, otypes=[np.float64])

UNARY_REF = {
    "abs": np.abs, "ceil": np.ceil, "cos": np.cos, "erf": _erf, "exp": np.exp,
    "floor": np.floor, "log": np.log, "neg": np.negative, "reciprocal": lambda x: 1.0 / x,
    "roundEven": np.rint, "sin": np.sin, "sign": np.sign, "sqrt": np.sqrt, "tan": np.tan,
    "identity": lambda x: x, "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "tanh": np.tanh,
    "softplus": lambda x: np.log1p(np.exp(x)), "softsign": lambda x: x / (1 + np.abs(x)),
    "gelu": lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "hardSwish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "isNaN": np.isnan, "isInfinite": np.isinf, "logicalNot": lambda x: x == 0,
}
UNARY_OPT_REF = {  # operators with options: ref(x, options with defaults filled)
    "clamp": lambda x, o: np.clip(x, o["min_value"], o["max_value"]),
    "elu": lambda x, o: np.where(x > 0, x, o["alpha"] * (np.exp(x) - 1)),
    "leakyRelu": lambda x, o: np.where(x >= 0, x, o["alpha"] * x),
    "linear": lambda x, o: o["alpha"] * x + o["beta"],
    "hardSigmoid": lambda x, o: np.clip(o["alpha"] * x + o["beta"], 0, 1),
}
UNARY_DOMAIN = {  # (lo, hi) of the random inputs
    "log": (0.05, 8), "sqrt": (0, 8), "reciprocal": (0.1, 8), "tan": (-1.2, 1.2),
    "exp": (-8, 8), "softplus": (-8, 8), "logicalNot": (0, 3),
}
UNARY_EXTRA = {  # non-default numeric options worth a case
    "clamp": [("minValue=1,maxValue=3", {"min_value": 1, "max_value": 3})],
    "elu": [("alpha=0.5", {"alpha": 0.5})],
    "leakyRelu": [("alpha=0.25", {"alpha": 0.25})],
    "linear": [("alpha=2,beta=-1", {"alpha": 2.0, "beta": -1.0})],
    "hardSigmoid": [("alpha=0.5,beta=0.25", {"alpha": 0.5, "beta": 0.25})],
}


def _trunc_div(a, b):
    return np.trunc(a / b)


BINARY_REF = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
    "min": np.minimum, "pow": np.power, "equal": np.equal, "notEqual": np.not_equal,
    "greater": np.greater, "greaterOrEqual": np.greater_equal, "lesser": np.less,
    "lesserOrEqual": np.less_equal,
    "logicalAnd": lambda a, b: (a != 0) & (b != 0), "logicalOr": lambda a, b: (a != 0) | (b != 0),
    "logicalXor": lambda a, b: (a != 0) ^ (b != 0),
    "prelu": lambda x, s: np.where(x >= 0, x, x * s),
}

REDUCE_REF = {
    "reduceL1": lambda x, ax, k: np.sum(np.abs(x), axis=ax, keepdims=k),
    "reduceL2": lambda x, ax, k: np.sqrt(np.sum(x * x, axis=ax, keepdims=k)),
    "reduceLogSum": lambda x, ax, k: np.log(np.sum(x, axis=ax, keepdims=k)),
    "reduceLogSumExp": lambda x, ax, k: np.log(np.sum(np.exp(x), axis=ax, keepdims=k)),
    "reduceMax": lambda x, ax, k: np.max(x, axis=ax, keepdims=k),
    "reduceMean": lambda x, ax, k: np.mean(x, axis=ax, keepdims=k),
    "reduceMin": lambda x, ax, k: np.min(x, axis=ax, keepdims=k),
    "reduceProduct": lambda x, ax, k: np.prod(x, axis=ax, keepdims=k),
    "reduceSum": lambda x, ax, k: np.sum(x, axis=ax, keepdims=k),
    "reduceSumSquare": lambda x, ax, k: np.sum(x * x, axis=ax, keepdims=k),
}
REDUCE_DOMAIN = {"reduceLogSum": (0.1, 4), "reduceProduct": (0.5, 1.5),
                 "reduceMax": (-100, 100), "reduceMin": (-100, 100)}


def specials(rng, shape, dt):
    """Random values over the whole type (integers: its full range, type min
    and max included; floats: +-1e4) with the edge values NaN, +-Inf, +-0,
    tiny and subnormal ones, halves (ties) written over the first elements."""
    t = np.dtype(dt)
    if t.kind == "f":
        x = rng.uniform(-1e4 if t == np.float32 else -3e4, 1e4 if t == np.float32 else 3e4,
                        size=shape).astype(t)
        edge = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -100.0, 100.0, 2.5, -0.5, 255.5,
                float(np.finfo(t).smallest_subnormal), float(np.finfo(t).max)]
    else:
        info = np.iinfo(t)
        x = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=t)
        edge = [int(info.min), int(info.max), 0, 1] + ([-1] if info.min < 0 else [])
    flat = x.reshape(-1)
    with np.errstate(all="ignore"):
        flat[: min(len(edge), flat.size)] = np.array(edge[: flat.size], dtype=np.float64 if
                                                     t.kind == "f" else object).astype(t)
    return x


def _call(b, row, *args, **opts):
    return getattr(b, row["snake"])(*args, **opts)


def _case(row, key, variant, inputs, build, ref=None, *, types=None, **kw):
    """A case whose operand types default to the inputs' (by input name)."""
    ot = {}
    for name, arr in inputs.items():
        ot[name] = (str(arr.dtype), arr.ndim)
    ot.update(types or {})
    return Case(row["camel"], key, variant, inputs, build, ot, ref, **kw)


def _defaults(row, opts):
    d = {sn: row["defaults"][i] for i, (sn, _, _) in enumerate(row["fields"])}
    d.update(opts)
    return d


# ---- recipes per family ----------------------------------------------------------------
def r_unary(row, dt, variant, opts, rng):
    op = row["camel"]
    name = row["params"][0][0]
    x_shape = shape_of_rank(rng, pick_rank(row, want=3))
    lo, hi = UNARY_DOMAIN.get(op, (-6, 6))
    if np.dtype(dt).kind == "u":
        lo = max(lo, 0)
    x = rand(rng, x_shape, dt, lo, hi)
    if op in ("isNaN", "isInfinite"):
        x.flat[: 3] = [np.nan, np.inf, -np.inf]
    if op == "sign" and x.size > 1:
        x.flat[0] = 0
    if op == "roundEven" and x.size > 2:
        x.flat[:2] = [2.5, -0.5]
    extra = dict(opts)
    if extra.pop("specials", False):
        x = specials(rng, (3, 17) if not LONG else (5, 4099), dt)
        return [_case(row, dt, variant, {name: x},
                      lambda b, o: _call(b, row, o[name], **extra), None, finite=False,
                      exact=np.dtype(dt).kind != "f" or op in (
                          "abs", "ceil", "floor", "neg", "roundEven", "sign", "relu", "identity",
                          "clamp", "isNaN", "isInfinite", "logicalNot"))]
    if op in UNARY_OPT_REF:
        full = _defaults(row, extra)
        ref = (lambda i, f=UNARY_OPT_REF[op], o=full: f(f64(i[name]), o))
    elif op in UNARY_REF:
        ref = (lambda i, f=UNARY_REF[op]: f(f64(i[name])))
    else:
        ref = None
    exact = np.dtype(dt).kind != "f" or op in (
        "abs", "ceil", "floor", "neg", "roundEven", "sign", "relu", "identity", "clamp",
        "isNaN", "isInfinite", "logicalNot")
    return [_case(row, dt, variant, {name: x},
                  lambda b, o: _call(b, row, o[name], **extra), ref, exact=exact)]


def unary_variants(row):
    return (option_variants(row) + UNARY_EXTRA.get(row["camel"], [])
            + [("specials", {"specials": True})])


def r_broadcast(row, dt, variant, opts, rng):
    op = row["camel"]
    names = [p[0] for p in row["params"]]
    r = pick_rank(row, want=3)
    out = shape_of_rank(rng, r)
    # the second operand: a suffix of the output's shape with some dimensions 1
    sb = list(out[1:])
    if sb:
        sb[int(rng.integers(0, len(sb)))] = 1
    shapes = [out, tuple(sb)] + [tuple(out[-1:])] * (len(names) - 2)
    if op == "where":
        cond = rng.integers(0, 3, size=shapes[1]).astype(np.uint8)
        t, f = rand(rng, shapes[0], dt, -50, 50), rand(rng, shapes[2], dt, -50, 50)
        ins = {"condition": cond, "true_value": t, "false_value": f}
        return [_case(row, dt, variant, ins,
                      lambda b, o: b.where(o["condition"], o["true_value"], o["false_value"]),
                      lambda i: np.where(i["condition"] != 0, i["true_value"], i["false_value"]),
                      exact=True)]
    kind = np.dtype(dt).kind
    if opts.get("specials"):
        # edge values against random ones (integers over the whole type: wrap-
        # around, division by zero and min / -1); compared with the CPU only
        a = specials(rng, (13, 1, 5), dt)
        bb = specials(rng, (4, 1), dt)[::-1].copy() if kind != "f" else rand(rng, (4, 1), dt)
        if kind != "f":
            bb.flat[0] = 0
        if op == "pow" and kind != "f":
            bb = rand(rng, (4, 1), dt, 0, 5)
        ins = {names[0]: a, names[1]: bb}
        return [_case(row, dt, variant, ins,
                      lambda b, o: _call(b, row, o[names[0]], o[names[1]]), None,
                      exact=kind != "f" or op != "pow", finite=False)]
    lo, hi = (-6, 6) if kind != "u" else (0, 12)
    if op.startswith("logical"):
        lo, hi = 0, 3
    a = rand(rng, shapes[0], dt, lo, hi)
    bb = rand(rng, shapes[1], dt, lo, hi)
    if op == "pow":
        if kind == "f":
            a = rand(rng, shapes[0], dt, 0.1, 3)
            bb = rand(rng, shapes[1], dt, -3, 3)
        else:
            a = rand(rng, shapes[0], dt, -3 if kind == "i" else 0, 3)
            bb = rand(rng, shapes[1], dt, 0, 3)
    if op == "div":
        bb = np.where(bb == 0, np.ones_like(bb), bb)  # division by zero: see tests/ops
    if op in ("equal", "notEqual", "greaterOrEqual", "lesserOrEqual") and a.size:
        a.flat[0] = bb.flat[0]  # some ties
    ins = {names[0]: a, names[1]: bb}
    if op == "div":
        ref = (lambda i: (f64(i["a"]) / f64(i["b"])) if kind == "f"
               else _trunc_div(f64(i["a"]), f64(i["b"])))
    else:
        f = BINARY_REF.get(op)
        ref = None if f is None else (lambda i, f=f: f(f64(i[names[0]]), f64(i[names[1]])))
    exact = kind != "f" or op != "pow"  # +-*/ are correctly rounded, the rest moves values
    return [_case(row, dt, variant, ins,
                  lambda b, o: _call(b, row, o[names[0]], o[names[1]], **opts), ref,
                  exact=exact)]


def broadcast_variants(row):
    v = option_variants(row)
    if row["camel"] != "where":
        v.append(("specials", {"specials": True}))
    return v


def broadcast_dtypes(row):
    if row["camel"] == "where":
        return limits_of(row, "trueValue")[0]
    return row["limits"][0][1]


def r_copy(row, dt, variant, opts, rng):
    x = rand(rng, shape_of_rank(rng, pick_rank(row, want=3)), dt, -100, 100)
    if row["camel"] == "reshape":
        new = list(reversed(x.shape)) + [1]
        return [_case(row, dt, variant, {"input": x}, lambda b, o: b.reshape(o["input"], new),
                      lambda i: i["input"].reshape(new), exact=True)]
    return [_case(row, dt, variant, {"input": x},
                  lambda b, o: _call(b, row, o["input"], **opts), lambda i: i["input"],
                  exact=True)]


def r_cast(row, key, variant, opts, rng):
    src, dst = key.split(">")
    if opts.get("specials"):  # out of range: saturation, NaN -> 0 (the CPU's rule)
        x = specials(rng, (4, 9), src)
        return [_case(row, key, variant, {"input": x}, lambda b, o: b.cast(o["input"], dst),
                      None, exact=True, finite=False, types={"output": (dst, x.ndim)})]
    x = rand(rng, shape_of_rank(rng, 2), src, 0, 100)
    if np.dtype(src).kind == "f":
        x = np.round(x).astype(src)  # integers in [0, 100]: exact in every type
    return [_case(row, key, variant, {"input": x}, lambda b, o: b.cast(o["input"], dst),
                  lambda i: i["input"].astype(dst), exact=True,
                  types={"output": (dst, x.ndim)})]


def cast_dtypes(row):
    dts = row["limits"][0][1]
    return [f"{a}>{b}" for a in dts for b in dts]


def _mm_ref(a, b):
    return np.matmul(f64(a), f64(b))


def r_gemm(row, dt, variant, opts, rng):
    M, K, N = dim(rng, 3, 7), dim(rng, 3, 9), dim(rng, 3, 7)
    full = _defaults(row, opts)
    ta, tb = full["a_transpose"], full["b_transpose"]
    a = rand(rng, (K, M) if ta else (M, K), dt, -1, 1)
    bm = rand(rng, (N, K) if tb else (K, N), dt, -1, 1)
    ins = {"a": a, "b": bm}
    extra = dict(opts)
    if "c" in opts:
        ins["c"] = rand(rng, (N,), dt, -1, 1)
        extra.pop("c")

    def build(b, o):
        kw = dict(extra)
        if "c" in o:
            kw["c"] = o["c"]
        return b.gemm(o["a"], o["b"], **kw)

    def ref(i):
        r = full["alpha"] * _mm_ref(i["a"].T if ta else i["a"], i["b"].T if tb else i["b"])
        return r + full["beta"] * f64(i["c"]) if "c" in i else r
    return [_case(row, dt, variant, ins, build, ref, accum=True)]


def gemm_variants(row):
    return option_variants(row) + [("c,alpha=0.5,beta=2", {"c": True, "alpha": 0.5, "beta": 2.0}),
                                   ("constB", {"const": ("b",)})]


def r_matmul(row, dt, variant, opts, rng):
    K = dim(rng, 3, 9)
    if opts.get("batch"):
        sa, sb = (2, 1, dim(rng), K), (3, K, dim(rng))
    else:
        sa, sb = (dim(rng), K), (K, dim(rng))
    ins = {"a": rand(rng, sa, dt, -1, 1), "b": rand(rng, sb, dt, -1, 1)}
    return [_case(row, dt, variant, ins, lambda b, o: b.matmul(o["a"], o["b"]),
                  lambda i: _mm_ref(i["a"], i["b"]), accum=True)]


def matmul_variants(row):
    return [("default", {}), ("broadcastBatch", {"batch": True}), ("constB", {"const": ("b",)})]


_CONV_FILTER = {"oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1),
                "ihwo": (1, 2, 3, 0)}
_CONVT_FILTER = {"iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


def r_conv(row, dt, variant, opts, rng):
    transpose = row["camel"] == "convTranspose2d"
    full = _defaults(row, opts)
    layouts = _CONVT_FILTER if transpose else _CONV_FILTER
    if full["filter_layout"] not in layouts or full["input_layout"] not in ("nchw", "nhwc"):
        raise NoCase(f"filter layout {full['filter_layout']} / input layout "
                     f"{full['input_layout']}")
    groups = full["groups"]
    N, C, H, W, O = 1, 2 * groups, dim(rng, 4, 7), dim(rng, 4, 7), 3 * groups
    x = rand(rng, (N, C, H, W), dt, -1, 1)
    if full["input_layout"] == "nhwc":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    # the canonical filter: oihw (conv2d), iohw (convTranspose2d)
    w = rand(rng, (C, O // groups, 3, 3) if transpose else (O, C // groups, 3, 3), dt, -1, 1)
    w = np.ascontiguousarray(w.transpose(layouts[full["filter_layout"]]))
    ins = {"input": x, "filter": w}
    kw = {k: v for k, v in opts.items() if k not in ("bias", "const")}
    if opts.get("bias"):
        ins["bias"] = rand(rng, (O,), dt, -1, 1)

    def build(b, o):
        k = dict(kw)
        if "bias" in o:
            k["bias"] = o["bias"]
        return _call(b, row, o["input"], o["filter"], **k)
    return [_case(row, dt, variant, ins, build, None, accum=True)]


def conv_variants(row):
    return option_variants(row) + [
        ("bias,strides=2,padding=1", {"bias": True, "strides": [2, 2], "padding": [1, 1, 1, 1]}),
        ("dilations=2,groups=2", {"dilations": [2, 1], "groups": 2, "padding": [2, 1, 0, 1]}),
        ("constFilter", {"const": ("filter",)}),
    ]


def r_pool(row, dt, variant, opts, rng):
    full = _defaults(row, opts)
    if full["layout"] not in ("nchw", "nhwc") or full["output_shape_rounding"] not in (
            "floor", "ceil"):
        raise NoCase(f"layout {full['layout']} / rounding {full['output_shape_rounding']}")
    lo = 0.25 if row["camel"] != "maxPool2d" else -20
    x = rand(rng, (2, 3, dim(rng, 5, 8), dim(rng, 5, 8)), dt, lo, 20)
    if full["layout"] == "nhwc":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    ref = None
    if full["output_shape_rounding"] != "floor" and "window_dimensions" not in opts:
        opts = dict(opts, window_dimensions=[2, 2], strides=[2, 2])
    elif "window_dimensions" not in opts:  # a global window: a reduction over H and W
        hw = (2, 3) if full["layout"] == "nchw" else (1, 2)
        f = {"maxPool2d": lambda v: v.max(axis=hw, keepdims=True),
             "averagePool2d": lambda v: v.mean(axis=hw, keepdims=True),
             "l2Pool2d": lambda v: np.sqrt((v * v).sum(axis=hw, keepdims=True))}.get(row["camel"])
        ref = None if f is None else (lambda i: f(f64(i["input"])))
    return [_case(row, dt, variant, {"input": x}, lambda b, o: _call(b, row, o["input"], **opts),
                  ref, accum=row["camel"] != "maxPool2d", exact=row["camel"] == "maxPool2d")]


def pool_variants(row):
    return option_variants(row) + [
        ("window=3x2,strides=2,1,padding", {"window_dimensions": [3, 2], "strides": [2, 1],
                                            "padding": [1, 2, 0, 1]}),
        ("window=2x2,dilations=2", {"window_dimensions": [2, 2], "dilations": [2, 1]})]


def r_axis(row, dt, variant, opts, rng):
    op = row["camel"]
    rank = pick_rank(row, want=3)
    x_shape = shape_of_rank(rng, rank)
    full = _defaults(row, opts)
    axis = int(opts.get("axis", 1 if op in ("softmax", "batchNormalization") else 0))
    axis = min(axis, rank - 1)
    kw = {k: v for k, v in opts.items() if k not in ("axis", "scale")}
    if op == "batchNormalization":
        C = x_shape[axis]
        ins = {"input": rand(rng, x_shape, dt, -3, 3), "mean": rand(rng, (C,), dt, -1, 1),
               "variance": rand(rng, (C,), dt, 0.2, 3)}
        if opts.get("scale"):
            ins["scale"] = rand(rng, (C,), dt, -2, 2)
            ins["bias"] = rand(rng, (C,), dt, -2, 2)
        bshape = [1] * rank
        bshape[axis] = C

        def ref(i):
            r = (f64(i["input"]) - f64(i["mean"]).reshape(bshape)) / np.sqrt(
                f64(i["variance"]).reshape(bshape) + full["epsilon"])
            if "scale" in i:
                r = r * f64(i["scale"]).reshape(bshape) + f64(i["bias"]).reshape(bshape)
            return r

        def build(b, o):
            k = dict(kw, axis=axis)
            if "scale" in o:
                k.update(scale=o["scale"], bias=o["bias"])
            return b.batch_normalization(o["input"], o["mean"], o["variance"], **k)
        return [_case(row, dt, variant, ins, build, ref)]
    lo, hi = (-8, 8) if np.dtype(dt).kind != "u" else (0, 16)
    x = rand(rng, x_shape, dt, lo, hi)
    if op == "softmax":
        def ref(i):
            e = np.exp(f64(i["input"]) - np.max(f64(i["input"]), axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)
        return [_case(row, dt, variant, {"input": x},
                      lambda b, o: b.softmax(o["input"], axis, **kw), ref, accum=True)]
    if op in ("argMin", "argMax"):
        if np.dtype(dt).kind == "f":
            x = np.round(x).astype(dt)  # ties: the first index wins
        f = np.argmin if op == "argMin" else np.argmax
        keep = full["keep_dimensions"]
        odt = full["output_data_type"]
        if odt not in ("int32", "int64"):
            raise NoCase(f"outputDataType {odt}")
        return [_case(row, dt, variant, {"input": x},
                      lambda b, o: _call(b, row, o["input"], axis, **kw),
                      lambda i: (np.expand_dims(f(i["input"], axis=axis), axis) if keep
                                 else f(i["input"], axis=axis)).astype(odt),
                      exact=True, types={"output": (odt, rank - (0 if keep else 1))})]
    if op == "cumulativeSum":
        excl, rev = full["exclusive"], full["reversed"]

        def ref(i):
            v = f64(i["input"])
            if rev:
                v = np.flip(v, axis)
            c = np.cumsum(v, axis=axis)
            if excl:
                c = c - v
            return np.flip(c, axis) if rev else c
        return [_case(row, dt, variant, {"input": x},
                      lambda b, o: b.cumulative_sum(o["input"], axis, **kw), ref, accum=True,
                      exact=np.dtype(dt).kind != "f")]
    raise NoCase(f"no AXIS recipe for {op}")


def axis_variants(row):
    v = option_variants(row)
    if row["camel"] == "batchNormalization":
        v += [("scale,bias,axis=2", {"scale": True, "axis": 2}), ("epsilon=0.1", {"epsilon": 0.1})]
    elif row["camel"] in ("softmax", "cumulativeSum", "argMin", "argMax"):
        v += [("axis=2", {"axis": 2})]
        if row["camel"] in ("argMin", "argMax"):
            v += [("outputDataType=int64", {"output_data_type": "int64"})]
    return v


def r_norm(row, dt, variant, opts, rng):
    op = row["camel"]
    full = _defaults(row, opts)
    kw = {k: v for k, v in opts.items() if k != "scale"}
    if op == "instanceNormalization":
        if full["layout"] not in ("nchw", "nhwc"):
            raise NoCase(f"layout {full['layout']}")
        shape = (2, 3, dim(rng, 3, 6), dim(rng, 3, 6))
        if full["layout"] == "nhwc":
            shape = (shape[0], shape[2], shape[3], shape[1])
        caxis = 1 if full["layout"] == "nchw" else 3
        ins = {"input": rand(rng, shape, dt, -3, 5)}
        if opts.get("scale"):
            ins["scale"] = rand(rng, (3,), dt, -2, 2)
            ins["bias"] = rand(rng, (3,), dt, -2, 2)
        axes = tuple(a for a in (1, 2, 3) if a != caxis)
        pshape = [1, 1, 1, 1]
        pshape[caxis] = 3
    else:
        rank = pick_rank(row, want=3)
        shape = shape_of_rank(rng, rank)
        axes = tuple(full["axes"]) if full["axes"] is not None else tuple(range(1, rank))
        ins = {"input": rand(rng, shape, dt, -3, 5)}
        pshape = None
        if opts.get("scale"):
            ps = [shape[a] for a in axes]
            ins["scale"] = rand(rng, ps, dt, -2, 2)
            ins["bias"] = rand(rng, ps, dt, -2, 2)

    def ref(i):
        x = f64(i["input"])
        m = x.mean(axis=axes, keepdims=True)
        v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
        r = (x - m) / np.sqrt(v + full["epsilon"])
        if "scale" in i:
            if pshape is not None:
                s, c = f64(i["scale"]).reshape(pshape), f64(i["bias"]).reshape(pshape)
            else:  # layerNormalization: scale's dimensions are the axes' in order
                bs = [1] * x.ndim
                for a in axes:
                    bs[a] = x.shape[a]
                order = sorted(range(len(axes)), key=lambda j: axes[j])
                s = np.transpose(f64(i["scale"]), order).reshape(bs)
                c = np.transpose(f64(i["bias"]), order).reshape(bs)
            r = r * s + c
        return r

    def build(b, o):
        k = dict(kw)
        if "scale" in o:
            k.update(scale=o["scale"], bias=o["bias"])
        return _call(b, row, o["input"], **k)
    return [_case(row, dt, variant, ins, build, ref, accum=True)]


def norm_variants(row):
    v = option_variants(row) + [("scale,bias", {"scale": True})]
    if row["camel"] == "layerNormalization":
        v += [("axes=2,0,scale", {"axes": [2, 0], "scale": True})]
    return v


def r_reduce(row, dt, variant, opts, rng):
    op = row["camel"]
    full = _defaults(row, opts)
    rank = pick_rank(row, want=3)
    x_shape = shape_of_rank(rng, rank)
    lo, hi = REDUCE_DOMAIN.get(op, (-5, 5))
    kind = np.dtype(dt).kind
    if kind != "f":
        lo, hi = (-3, 3) if op in ("reduceProduct", "reduceSumSquare") else (-50, 50)
        if op == "reduceProduct":
            x_shape = tuple(min(d, 3) for d in x_shape)  # |product| <= 2**27 fits int32
            lo, hi = (-2, 2)
        if kind == "u":
            lo = 0
    x = rand(rng, x_shape, dt, lo, hi)
    axes = full["axes"]
    ax = tuple(range(x.ndim)) if axes is None else tuple(axes)
    keep = full["keep_dimensions"]
    f = REDUCE_REF.get(op)
    def ref(i):  # small integers: no wrap-around
        return f(f64(i["input"]), ax, keep)
    return [_case(row, dt, variant, {"input": x}, lambda b, o: _call(b, row, o["input"], **opts),
                  None if f is None else ref, accum=True,
                  exact=kind != "f" or op in ("reduceMax", "reduceMin"))]


def reduce_variants(row):
    return option_variants(row) + [("axes=1", {"axes": [1]}), ("axes=0,2,keep", {
        "axes": [0, 2], "keep_dimensions": True}), ("axes=[]", {"axes": []})]


def r_resample(row, dt, variant, opts, rng):
    full = _defaults(row, opts)
    if full["mode"] not in ("nearest-neighbor", "linear"):
        raise NoCase(f"mode {full['mode']}")
    x = rand(rng, (1, 2, dim(rng, 3, 5), dim(rng, 3, 5)), dt, -50, 50)
    return [_case(row, dt, variant, {"input": x}, lambda b, o: b.resample2d(o["input"], **opts),
                  None, exact=np.dtype(dt).kind != "f" and full["mode"] == "nearest-neighbor")]


def resample_variants(row):
    v = option_variants(row)
    return v + [("scales=2,1.5", {"scales": [2.0, 1.5]}),
                ("linear,sizes=7,5,axes=2,3", {"mode": "linear", "sizes": [7, 5], "axes": [2, 3]}),
                ("sizes=5,3,axes=1,2", {"sizes": [5, 3], "axes": [1, 2]})]


def r_views(row, dt, variant, opts, rng):
    op = row["camel"]
    rank = pick_rank(row, want=3)
    x = rand(rng, shape_of_rank(rng, rank), dt, -100, 100)
    s = x.shape
    ins = {"input": x}
    if op == "concat":
        axis = min(int(opts.get("axis", 0)), rank - 1)
        parts = []
        for k in range(3):
            ps = list(s)
            ps[axis] = dim(rng, 1, 3)
            parts.append(rand(rng, ps, dt, -100, 100))
        ins = {f"in{k}": p for k, p in enumerate(parts)}
        return [_case(row, dt, variant, ins,
                      lambda b, o: b.concat([o["in0"], o["in1"], o["in2"]], axis),
                      lambda i: np.concatenate([i["in0"], i["in1"], i["in2"]], axis), exact=True,
                      types={"inputs": (dt, rank)})]
    if op == "expand":
        xs = (s[0], 1, s[2]) if rank == 3 else s
        x = x[:, :1] if rank == 3 else x
        new = [2] + list(xs[:1]) + [dim(rng)] + list(xs[2:])
        ins = {"input": np.ascontiguousarray(x)}
        return [_case(row, dt, variant, ins, lambda b, o: b.expand(o["input"], new),
                      lambda i: np.broadcast_to(i["input"], new), exact=True)]
    if op == "transpose":
        perm = opts.get("permutation")
        return [_case(row, dt, variant, ins, lambda b, o: b.transpose(o["input"], **opts),
                      lambda i: np.transpose(i["input"], perm), exact=True)]
    if op == "slice":
        starts = [int(rng.integers(0, d)) for d in s]
        sizes = [int(rng.integers(1, d - st + 1)) for d, st in zip(s, starts)]
        strides = opts.get("strides") or [1] * rank
        sl = tuple(slice(st, st + sz, k) for st, sz, k in zip(starts, sizes, strides))
        return [_case(row, dt, variant, ins,
                      lambda b, o: b.slice(o["input"], starts, sizes, **opts),
                      lambda i: i["input"][sl], exact=True)]
    if op == "split":
        axis = min(int(opts.get("axis", 0)), rank - 1)
        d = s[axis]
        if opts.get("even"):
            splits = 1
        else:
            cut = int(rng.integers(1, d)) if d > 1 else 1
            splits = [cut, d - cut] if d > 1 else [1]

        def ref(i):
            if isinstance(splits, int):
                return np.split(i["input"], splits, axis)
            return np.split(i["input"], np.cumsum(splits)[:-1], axis)
        return [_case(row, dt, variant, ins,
                      lambda b, o: b.split(o["input"], splits, axis=axis), ref, exact=True)]
    if op == "tile":
        reps = [int(rng.integers(1, 4)) for _ in s]
        return [_case(row, dt, variant, ins, lambda b, o: b.tile(o["input"], reps),
                      lambda i: np.tile(i["input"], reps), exact=True)]
    if op == "reverse":
        axes = opts.get("axes")
        return [_case(row, dt, variant, ins, lambda b, o: b.reverse(o["input"], **opts),
                      lambda i: np.flip(i["input"], axes), exact=True)]
    raise NoCase(f"no VIEWS recipe for {op}")


def views_variants(row):
    return {
        "concat": [("default", {}), ("axis=1", {"axis": 1}), ("axis=2", {"axis": 2})],
        "transpose": [("default", {}), ("permutation=2,0,1", {"permutation": [2, 0, 1]}),
                      ("permutation=0,2,1", {"permutation": [0, 2, 1]})],
        "slice": [("default", {}), ("strides=2,1,2", {"strides": [2, 1, 2]})],
        "split": [("default", {}), ("axis=1", {"axis": 1}), ("even", {"even": True})],
        "reverse": [("default", {}), ("axes=0,2", {"axes": [0, 2]}), ("axes=[]", {"axes": []})],
    }.get(row["camel"], [("default", {})])


def r_triangular(row, dt, variant, opts, rng):
    full = _defaults(row, opts)
    x = rand(rng, shape_of_rank(rng, pick_rank(row, want=3)), dt, -100, 100)
    up, k = full["upper"], full["diagonal"]

    def ref(i):
        return np.triu(i["input"], k) if up else np.tril(i["input"], k)
    return [_case(row, dt, variant, {"input": x},
                  lambda b, o: b.triangular(o["input"], **opts), ref, exact=True)]


def triangular_variants(row):
    return option_variants(row) + [("diagonal=-1", {"diagonal": -1}),
                                   ("upper=False,diagonal=2", {"upper": False, "diagonal": 2})]


def r_pad(row, dt, variant, opts, rng):
    full = _defaults(row, opts)
    mode = full["mode"]
    np_mode = {"constant": "constant", "edge": "edge", "reflection": "reflect"}.get(mode)
    if np_mode is None:
        raise NoCase(f"mode {mode}")
    x = rand(rng, shape_of_rank(rng, pick_rank(row, want=3)), dt, -100, 100)
    beg = [int(rng.integers(0, min(3, d))) for d in x.shape]
    end = [int(rng.integers(0, min(3, d))) for d in x.shape]
    value = full["value"]

    def ref(i):
        kw = {"constant_values": value} if np_mode == "constant" else {}
        return np.pad(i["input"], list(zip(beg, end)), mode=np_mode, **kw)
    return [_case(row, dt, variant, {"input": x},
                  lambda b, o: b.pad(o["input"], beg, end, **opts), ref, exact=True)]


def pad_variants(row):
    return option_variants(row) + [("value=7", {"value": 7})]


_INDEX_TYPES = ("int32", "uint32", "int64")


def r_gather(row, key, variant, opts, rng):
    op = row["camel"]
    dt, it = key.split(",")
    idx_dts = limits_of(row, "indices")[0]
    if it not in idx_dts:
        raise NoCase(f"index type {it}")
    rank = pick_rank(row, want=3)
    x = rand(rng, shape_of_rank(rng, rank), dt, -100, 100)
    s = x.shape
    axis = min(int(opts.get("axis", 0)), rank - 1)
    kw = dict(opts)
    oor = kw.pop("outOfRange", False)  # clamped on both backends: compared with the CPU
    lo_i = -2 * s[axis] if oor and np.dtype(it).kind == "i" else 0
    hi_i = 2 * s[axis] if oor else s[axis]
    if op == "gather":
        idx = rng.integers(lo_i, hi_i, size=(2, 3)).astype(it)
        ins = {"input": x, "indices": idx}
        return [_case(row, key, variant, ins, lambda b, o: b.gather(o["input"], o["indices"], **kw),
                      None if oor else (lambda i: np.take(i["input"],
                                                          i["indices"].astype(np.int64), axis)),
                      exact=True)]
    if op == "gatherElements":
        ishape = list(s)
        ishape[axis] = dim(rng, 1, 4)
        idx = rng.integers(lo_i, hi_i, size=ishape).astype(it)
        ins = {"input": x, "indices": idx}
        return [_case(row, key, variant, ins,
                      lambda b, o: b.gather_elements(o["input"], o["indices"], **kw),
                      None if oor else (lambda i: np.take_along_axis(
                          i["input"], i["indices"].astype(np.int64), axis)), exact=True)]
    if op == "gatherND":
        k = 2 if not opts.get("full") else rank
        idx = np.stack([rng.integers(0, s[j], size=(4,)) for j in range(k)], -1).astype(it)
        ins = {"input": x, "indices": idx}
        return [_case(row, key, variant, ins,
                      lambda b, o: b.gather_nd(o["input"], o["indices"]),
                      lambda i: np.stack([i["input"][tuple(int(v) for v in r)]
                                          for r in i["indices"]]), exact=True)]
    if op == "scatterElements":
        # indices: distinct along the axis (duplicates leave the result open)
        ishape = list(s)
        ishape[axis] = max(1, s[axis] - 1)
        perm = np.argsort(rng.random(size=s), axis=axis)
        idx = np.take(perm, range(ishape[axis]), axis=axis).astype(it)
        upd = rand(rng, ishape, dt, -100, 100)
        ins = {"input": x, "indices": idx, "updates": upd}

        def ref(i):
            r = i["input"].copy()
            np.put_along_axis(r, i["indices"].astype(np.int64), i["updates"], axis)
            return r
        return [_case(row, key, variant, ins,
                      lambda b, o: b.scatter_elements(o["input"], o["indices"], o["updates"],
                                                      **kw), ref, exact=True)]
    if op == "scatterND":
        k = 2
        cells = [(a, c) for a in range(s[0]) for c in range(s[1])]
        pick = rng.permutation(len(cells))[: max(1, len(cells) // 2)]
        idx = np.array([cells[p] for p in pick]).astype(it)
        upd = rand(rng, (len(pick),) + s[k:], dt, -100, 100)
        ins = {"input": x, "indices": idx, "updates": upd}

        def ref(i):
            r = i["input"].copy()
            for rw, u in zip(i["indices"], i["updates"]):
                r[tuple(int(v) for v in rw)] = u
            return r
        return [_case(row, key, variant, ins,
                      lambda b, o: b.scatter_nd(o["input"], o["indices"], o["updates"]), ref,
                      exact=True)]
    raise NoCase(f"no GATHER recipe for {op}")


def gather_dtypes(row):
    dts = row["limits"][0][1]
    return [f"{d},{_INDEX_TYPES[k % 3]}" for k, d in enumerate(dts)]


def gather_variants(row):
    v = [("default", {})]
    if any(f[0] == "axis" for f in row["fields"]):
        v.append(("axis=1", {"axis": 1}))
    if row["camel"] == "gatherND":
        v.append(("fullIndex", {"full": True}))
    if row["camel"] in ("gather", "gatherElements"):
        v.append(("outOfRange", {"outOfRange": True}))
    return v


def r_quant(row, key, variant, opts, rng):
    fdt, qdt = key.split(",")
    shape = (2, dim(rng, 2, 4), 4)
    sshape = (2, shape[1], 1) if opts.get("block") else (1, shape[1], 1)
    scale = rand(rng, sshape, fdt, 0.05, 0.5)
    info = np.iinfo(np.dtype(qdt))
    zp = rand(rng, sshape, qdt, max(int(info.min), -20), min(int(info.max), 20))
    if row["camel"] == "quantizeLinear":
        x = rand(rng, shape, fdt, -20, 20)
        ins = {"input": x, "scale": scale, "zero_point": zp}
        return [_case(row, key, variant, ins,
                      lambda b, o: b.quantize_linear(o["input"], o["scale"], o["zero_point"]),
                      None, exact=True, types={"output": (qdt, 3)})]
    q = rand(rng, shape, qdt, max(int(info.min), -100), min(int(info.max), 100))
    ins = {"input": q, "scale": scale, "zero_point": zp}
    rep = shape[2] // sshape[2]

    def ref(i):
        s = np.repeat(f64(i["scale"]), rep, axis=2)
        z = np.repeat(f64(i["zero_point"]), rep, axis=2)
        return (f64(i["input"]) - z) * s
    return [_case(row, key, variant, ins,
                  lambda b, o: b.dequantize_linear(o["input"], o["scale"], o["zero_point"]), ref,
                  types={"output": (fdt, 3)})]


def quant_dtypes(row):
    if row["camel"] == "quantizeLinear":
        return [f"{f},{q}" for f in limits_of(row, "input")[0]
                for q in limits_of(row, "zeroPoint")[0]]
    return [f"{f},{q}" for q in limits_of(row, "input")[0] for f in limits_of(row, "scale")[0]]


def quant_variants(row):
    return [("default", {}), ("blockwise", {"block": True})]


_GATES = {"gru": 3, "gruCell": 3, "lstm": 4, "lstmCell": 4}


def r_recurrent(row, dt, variant, opts, rng):
    op = row["camel"]
    full = _defaults(row, opts)
    G = _GATES[op]
    cell = op.endswith("Cell")
    lstm = op.startswith("lstm")
    direction = full.get("direction", "forward")
    if direction not in ("forward", "backward", "both"):
        raise NoCase(f"direction {direction}")
    if full["layout"] not in ({"iofg", "ifgo"} if lstm else {"zrn", "rzn"}):
        raise NoCase(f"layout {full['layout']}")
    D = 2 if direction == "both" else 1
    T, B, I, H = 3, 2, dim(rng, 2, 4), dim(rng, 2, 4)
    lead = () if cell else (D,)
    ins = {"input": rand(rng, (B, I) if cell else (T, B, I), dt, -1, 1),
           "weight": rand(rng, lead + (G * H, I), dt, -0.5, 0.5),
           "recurrent_weight": rand(rng, lead + (G * H, H), dt, -0.5, 0.5)}
    if cell:
        ins["hidden_state"] = rand(rng, (B, H), dt, -1, 1)
        if lstm:
            ins["cell_state"] = rand(rng, (B, H), dt, -1, 1)
    opt_operands = []
    if opts.get("all"):
        ins["bias"] = rand(rng, lead + (G * H,), dt, -0.5, 0.5)
        ins["recurrent_bias"] = rand(rng, lead + (G * H,), dt, -0.5, 0.5)
        opt_operands += ["bias", "recurrent_bias"]
        if lstm:
            ins["peephole_weight"] = rand(rng, lead + (3 * H,), dt, -0.5, 0.5)
            opt_operands.append("peephole_weight")
        if not cell:
            ins["initial_hidden_state"] = rand(rng, (D, B, H), dt, -1, 1)
            opt_operands.append("initial_hidden_state")
            if lstm:
                ins["initial_cell_state"] = rand(rng, (D, B, H), dt, -1, 1)
                opt_operands.append("initial_cell_state")
    kw = {k: v for k, v in opts.items() if k != "all"}
    types = {snake(n): (dt, a.ndim) for n, a in ins.items()}

    def build(b, o):
        k = dict(kw)
        for n in opt_operands:
            k[n] = o[n]
        pos = [o["input"], o["weight"], o["recurrent_weight"]]
        if cell:
            pos.append(o["hidden_state"])
            if lstm:
                pos.append(o["cell_state"])
            pos.append(H)
        else:
            pos += [T, H]
        r = _call(b, row, *pos, **k)
        return {f"out{j}": v for j, v in enumerate(r if isinstance(r, (list, tuple)) else [r])}
    c = _case(row, dt, variant, ins, build, None, accum=True)
    c.operand_types = types
    return [c]


def recurrent_variants(row):
    acts = [a for a in row["fields"] if a[0] == "activations"][0][2]
    n = 3 if row["camel"].startswith("lstm") else 2
    return option_variants(row) + [
        ("bias,initialState,peephole", {"all": True}),
        ("activations=" + ",".join(acts[:n]), {"activations": list(acts[:n])}),
    ]


# family -> (recipe, variants(row), data type keys(row)); a family missing here
# fails test_every_operator_has_cases.
FAMILIES = {
    "UNARY": (r_unary, unary_variants, None),
    "BROADCAST": (r_broadcast, broadcast_variants, broadcast_dtypes),
    "COPY": (r_copy, lambda row: [("default", {})], None),
    "CAST": (r_cast, lambda row: [("default", {}), ("specials", {"specials": True})],
             cast_dtypes),
    "GEMM": (r_gemm, gemm_variants, None),
    "MATMUL": (r_matmul, matmul_variants, None),
    "CONV": (r_conv, conv_variants, None),
    "POOL": (r_pool, pool_variants, None),
    "AXIS": (r_axis, axis_variants, None),
    "NORM": (r_norm, norm_variants, None),
    "REDUCE": (r_reduce, reduce_variants, None),
    "RESAMPLE": (r_resample, resample_variants, None),
    "VIEWS": (r_views, views_variants, None),
    "TRIANGULAR": (r_triangular, triangular_variants, None),
    "PAD": (r_pad, pad_variants, None),
    "GATHER": (r_gather, gather_variants, gather_dtypes),
    "QUANT": (r_quant, quant_variants, quant_dtypes),
    "RECURRENT": (r_recurrent, recurrent_variants, None),
}

# Operators the table lists but no recipe can make a case for, each with the
# reason (none today).  An operator missing from FAMILIES and from here fails
# test_every_operator_has_cases: a new operator is not skipped silently.
ALLOW_NO_CASES = {
    # "someOp": "why it cannot be generated",
}


def cases_for(op):
    """Every case of operator op (camelCase); raises NoCase (with the reason)
    where the operator's family has no recipe or a recipe cannot honour an
    option value."""
    row = ROWS[op]
    fam = FAMILIES.get(row["family"])
    if fam is None:
        raise NoCase(f"no recipe for family {row['family']}")
    recipe, variants, dtypes = fam
    keys = dtypes(row) if dtypes else list(row["limits"][0][1])
    vlist = variants(row) if variants else option_variants(row)
    out = []
    for key in keys:
        for vname, opts in vlist:
            for draw in range(2 if LONG else 1):
                rng = rng_for(op, key, vname, draw)
                opts = dict(opts)
                const = opts.pop("const", ())
                for c in recipe(row, key, vname + ("" if not draw else f"#{draw}"), opts, rng):
                    c.constants = tuple(const)
                    out.append(c)
    return out
