"""Property-based tests (hypothesis):

* random element-wise graphs (chains of binary and unary operators over
  broadcast shapes and several data types) against NumPy;
* random data movement graphs (transpose, slice with strides, reverse, tile,
  expand, concat, pad in every mode, split, reshape) against NumPy, exactly;
* random reductions and softmax against NumPy (reductions once merged);
* random, possibly invalid, builder calls of EVERY operator of
  webnn.OPERATORS (random operands, positional values and options drawn from
  the core's field tables): the only exceptions allowed are TypeError and
  the spec's DOMException subclasses; what builds must compute.

The budget is bounded (max_examples, deadline=None): the file runs in well
under a minute; WEBNN_HYPOTHESIS_SCALE=N multiplies it for a longer search."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import webnn

import os

SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), derandomize=False)
# WEBNN_HYPOTHESIS_SCALE=20 runs 20 times the examples (a longer search)
SCALE = float(os.environ.get("WEBNN_HYPOTHESIS_SCALE", "1"))


def budget(n):
    return max(1, int(n * SCALE))
NP = {"float32": np.float32, "float16": np.float16, "int32": np.int32, "uint32": np.uint32,
      "int64": np.int64, "uint64": np.uint64, "int8": np.int8, "uint8": np.uint8}
ALL = tuple(NP)


@pytest.fixture(scope="module")
def ctx():
    c = webnn.ml.create_context(device_type="cpu")
    yield c
    c.destroy()


def compute(ctx, build, inputs):
    """build(b, {name: operand}) -> operand; inputs {name: ndarray}."""
    b = webnn.MLGraphBuilder(ctx)
    ops = {n: b.input(n, {"dataType": np.dtype(a.dtype).name, "shape": list(a.shape)})
           for n, a in inputs.items()}
    g = b.build({"y": build(b, ops)})
    return ctx.compute(g, {n: a for n, a in inputs.items() if n in g.input_descriptors})["y"]


shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4)


@st.composite
def broadcast_pair(draw):
    """A shape and a shape that broadcasts with it."""
    s = draw(shapes)
    t = [d if draw(st.booleans()) else 1 for d in s]
    drop = draw(st.integers(0, len(t)))
    t = t[drop:]
    if draw(st.booleans()):
        s, t = t, s
    return s, t


def arrays(draw, dt, shape, lo=-8, hi=8):
    d = np.dtype(NP[dt])
    n = int(np.prod(shape, dtype=np.int64))
    if d.kind == "f":
        vals = draw(st.lists(st.floats(lo, hi, allow_nan=False, width=16), min_size=n, max_size=n))
    else:
        info = np.iinfo(d)
        vals = draw(st.lists(st.integers(max(lo, info.min), min(hi, info.max)), min_size=n, max_size=n))
    return np.array(vals, dtype=d).reshape(shape)


# ---- element-wise ----------------------------------------------------------------------
BIN_INT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum, "min": np.minimum}
BIN_FLOAT = dict(BIN_INT, div=np.divide)
UN_FLOAT = {"abs": np.abs, "neg": np.negative, "relu": lambda a: np.maximum(a, 0),
            "exp": np.exp, "tanh": np.tanh, "sigmoid": lambda a: 1 / (1 + np.exp(-a)),
            "floor": np.floor, "ceil": np.ceil, "identity": lambda a: a,
            "softsign": lambda a: a / (1 + np.abs(a))}
UN_INT = {"abs": np.abs, "neg": np.negative, "relu": lambda a: np.maximum(a, 0), "identity": lambda a: a}
# within about an ulp of the exact value, not rounded from it: a floor or ceil
# after them may land on the other side of an integer than the reference's
INEXACT = {"exp", "tanh", "sigmoid", "softsign"}


@settings(max_examples=budget(300), **SETTINGS)
@given(data=st.data())
def test_random_elementwise_graphs(ctx, data):
    dt = data.draw(st.sampled_from(["float32", "int32", "int64", "int8", "float16"]))
    is_float = dt.startswith("float")
    bins, uns = (BIN_FLOAT, UN_FLOAT) if is_float else (BIN_INT, UN_INT)
    s0, s1 = data.draw(broadcast_pair())
    a = arrays(data.draw, dt, s0, -4, 4)
    c = arrays(data.draw, dt, s1, -4, 4)
    if is_float:
        c = np.where(np.abs(c) < 0.25, np.array(1, c.dtype), c)   # no division by ~0
    steps = data.draw(st.lists(st.tuples(st.sampled_from(sorted(bins) + sorted(uns)), st.booleans()),
                               min_size=1, max_size=4))
    wide = np.float64 if is_float else np.int64

    def build(b, o):
        y = o["a"]
        for name, swap in steps:
            if name in bins:
                y = getattr(b, name)(o["c"], y) if swap else getattr(b, name)(y, o["c"])
            else:
                y = getattr(b, name)(y)
        return y

    ref = a.astype(wide)
    cc = c.astype(wide)
    inexact = False  # the runtime's intermediate may differ from ref by ~1 ulp
    with np.errstate(all="ignore"):
        for name, swap in steps:
            if name in bins:
                if name == "div":
                    ref = np.divide(cc, ref) if swap else np.divide(ref, cc)
                else:
                    ref = bins[name](cc, ref) if swap else bins[name](ref, cc)
            else:
                if name in ("floor", "ceil") and inexact:
                    # no value within the error of an integer (exp(6e-8) is
                    # 1 + 2^-23 correctly rounded, 1.0 one ulp below: ceil
                    # 2 against 1); past the step both sides agree exactly
                    tol = 1e-2 if dt == "float16" else 1e-4
                    finite = ref[np.isfinite(ref)]
                    assume(not np.any(np.abs(finite - np.round(finite))
                                      <= tol * np.maximum(1.0, np.abs(finite))))
                    inexact = False
                with np.errstate(over="ignore"):
                    ref = uns[name](ref)
                inexact = inexact or name in INEXACT
            if is_float:
                # the graph rounds every intermediate to the data type
                with np.errstate(over="ignore", invalid="ignore"):
                    ref = ref.astype(NP[dt]).astype(np.float64)
            else:
                ref = ref.astype(NP[dt]).astype(np.int64)     # wraps like the graph
    with np.errstate(divide="ignore", invalid="ignore"):
        got = compute(ctx, build, {"a": a, "c": c})
    assert got.dtype == np.dtype(NP[dt]) and got.shape == ref.shape
    if is_float:
        tol = 1e-2 if dt == "float16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, ref.astype(NP[dt]))


# ---- data movement ------------------------------------------------------------------------
def _has(*ops):
    return all(o in webnn.OPERATORS for o in ops)


@st.composite
def movement_step(draw, shape):
    """(description, build(b, y), ref(a)) of one movement op on `shape`."""
    r = len(shape)
    choices = ["transpose", "reverse", "slice", "tile", "expand", "pad", "reshape", "concat", "split"]
    choices = [c for c in choices if c in webnn.OPERATORS]
    op = draw(st.sampled_from(choices))
    if op == "transpose":
        perm = draw(st.permutations(list(range(r))))
        return op, lambda b, y: b.transpose(y, permutation=list(perm)), lambda a: np.transpose(a, perm), \
            [shape[p] for p in perm]
    if op == "reverse":
        axes = draw(st.lists(st.integers(0, max(r - 1, 0)), unique=True, max_size=r)) if r else []
        return op, lambda b, y: b.reverse(y, axes=axes), lambda a: np.flip(a, axes) if axes else a, shape
    if op == "slice":
        starts, sizes, strides = [], [], []
        for d in shape:
            s0 = draw(st.integers(0, d - 1))
            starts.append(s0)
            sizes.append(draw(st.integers(1, d - s0)))
            strides.append(draw(st.integers(1, 3)))
        idx = tuple(slice(s0, s0 + n, k) for s0, n, k in zip(starts, sizes, strides))
        out = [len(range(s0, s0 + n, k)) for s0, n, k in zip(starts, sizes, strides)]
        return op, lambda b, y: b.slice(y, starts, sizes, strides=strides), lambda a: a[idx], out
    if op == "tile":
        reps = draw(st.lists(st.integers(1, 3), min_size=r, max_size=r))
        return op, lambda b, y: b.tile(y, reps), lambda a: np.tile(a, reps) if r else a, \
            [d * k for d, k in zip(shape, reps)]
    if op == "expand":
        # the output rank stays within the supported maximum (8); chains of
        # expands would otherwise grow it past that (a valid TypeError)
        extra = draw(st.lists(st.integers(1, 3), max_size=max(0, min(2, 8 - r))))
        new = extra + [d if d != 1 else draw(st.integers(1, 3)) for d in shape]
        return op, lambda b, y: b.expand(y, new), lambda a: np.broadcast_to(a, new), new
    if op == "pad":
        mode = draw(st.sampled_from(["constant", "edge", "reflection"]))
        lim = (lambda d: d - 1) if mode == "reflection" else (lambda d: 3)
        beg = [draw(st.integers(0, lim(d))) for d in shape]
        end = [draw(st.integers(0, lim(d))) for d in shape]
        value = draw(st.integers(-3, 3))
        npmode = {"constant": "constant", "edge": "edge", "reflection": "reflect"}[mode]

        def ref(a):
            if not r:
                return a
            v = value   # the spec's cast of an MLNumber: integers saturate
            if a.dtype.kind in "iu":
                v = min(max(value, np.iinfo(a.dtype).min), np.iinfo(a.dtype).max)
            kw = {"constant_values": np.array(v).astype(a.dtype)} if mode == "constant" else {}
            return np.pad(a, list(zip(beg, end)), mode=npmode, **kw)
        return op, lambda b, y: b.pad(y, beg, end, mode=mode, value=value), ref, \
            [d + p + q for d, p, q in zip(shape, beg, end)]
    if op == "reshape":
        n = int(np.prod(shape, dtype=np.int64))
        new = [n] if draw(st.booleans()) else list(reversed(shape))
        return op, lambda b, y: b.reshape(y, new), lambda a: a.reshape(new), new
    if op == "concat":
        if not r:
            return "identity", lambda b, y: b.identity(y), lambda a: a, shape
        axis = draw(st.integers(0, r - 1))
        k = draw(st.integers(1, 3))
        out = list(shape)
        out[axis] *= k
        return op, lambda b, y: b.concat([y] * k, axis), lambda a: np.concatenate([a] * k, axis), out
    # split, then concatenate the pieces back in reverse order
    if not r:
        return "identity", lambda b, y: b.identity(y), lambda a: a, shape
    axis = draw(st.integers(0, r - 1))
    d = shape[axis]
    cut = draw(st.integers(1, d))
    sizes = [cut, d - cut] if cut < d else [d]
    return op, (lambda b, y: b.concat(list(reversed(b.split(y, sizes, axis=axis))), axis)), \
        (lambda a: np.concatenate(list(reversed(np.split(a, [cut], axis)))[-len(sizes):], axis)
         if len(sizes) == 2 else a), shape


@settings(max_examples=budget(400), **SETTINGS)
@given(data=st.data())
def test_random_movement_graphs(ctx, data):
    dt = data.draw(st.sampled_from(ALL))
    shape = data.draw(shapes)
    a = arrays(data.draw, dt, shape, -100, 100)
    steps, cur = [], list(shape)
    for _ in range(data.draw(st.integers(1, 3))):
        if int(np.prod(cur, dtype=np.int64)) > 2000:
            break
        name, build, ref, cur = data.draw(movement_step(cur))
        steps.append((name, build, ref))

    def build(b, o):
        y = o["a"]
        for _, f, _ in steps:
            y = f(b, y)
        return y
    want = a
    for _, _, ref in steps:
        want = ref(want)
    got = compute(ctx, build, {"a": a})
    assert got.shape == want.shape, [s[0] for s in steps]
    np.testing.assert_array_equal(got, want, err_msg=str([s[0] for s in steps]))


# ---- reductions and softmax -------------------------------------------------------------------
REDUCE = {"reduceSum": np.sum, "reduceMax": np.max, "reduceMin": np.min, "reduceMean": np.mean,
          "reduceProduct": np.prod, "reduceL1": lambda a, axis, keepdims: np.sum(np.abs(a), axis, keepdims=keepdims),
          "reduceSumSquare": lambda a, axis, keepdims: np.sum(a * a, axis, keepdims=keepdims)}


@settings(max_examples=budget(150), **SETTINGS)
@given(data=st.data())
def test_random_reductions_and_softmax(ctx, data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    a = arrays(data.draw, "float32", shape, -2, 2)
    ops = [o for o in REDUCE if o in webnn.OPERATORS] + ["softmax"]
    op = data.draw(st.sampled_from(ops))
    if op == "softmax":
        axis = data.draw(st.integers(0, len(shape) - 1))
        e = np.exp(a.astype(np.float64) - a.max(axis, keepdims=True))
        want = e / e.sum(axis, keepdims=True)
        got = compute(ctx, lambda b, o: b.softmax(o["a"], axis), {"a": a})
    else:
        axes = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
        keep = data.draw(st.booleans())
        want = REDUCE[op](a.astype(np.float64), axis=tuple(axes), keepdims=keep)
        got = compute(ctx, lambda b, o: getattr(b, op)(o["a"], axes=axes, keep_dimensions=keep), {"a": a})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


# ---- random (possibly invalid) calls of every operator ---------------------------------------
ROWS = {r["camel"]: r for r in webnn._core.op_table()}


def _value(draw, kind, enum, rank):
    """A value for a field of kind `kind`: mostly plausible, sometimes not."""
    small = st.integers(-2, 6)
    if draw(st.integers(0, 9)) == 0:   # anything at all
        return draw(st.one_of(st.none(), st.text(max_size=3), st.floats(), st.integers(-2 ** 70, 2 ** 70),
                              st.lists(st.integers(-3, 2 ** 33), max_size=10), st.booleans()))
    if kind in ("double", "number"):
        return draw(st.one_of(st.floats(-10, 10), st.integers(-300, 300), st.just(math.nan)))
    if kind == "bool":
        return draw(st.booleans())
    if kind in ("u32", "i32"):
        return draw(small)
    if kind in ("u32_list", "i32_list"):
        n = draw(st.sampled_from([rank, rank, max(rank - 1, 0), rank + 1, 2, 4]))
        return draw(st.lists(small, min_size=n, max_size=n))
    if kind == "dtype":
        return draw(st.sampled_from(ALL + ("float64",)))
    if kind == "enum":
        return draw(st.sampled_from(list(enum) + ["bogus"]))
    if kind == "enum_list":
        return draw(st.lists(st.sampled_from(list(enum) + ["bogus"]), max_size=3))
    return None


@settings(max_examples=budget(1500), **SETTINGS)
@given(data=st.data())
def test_random_calls_raise_only_spec_errors(ctx, data):
    op = data.draw(st.sampled_from(webnn.OPERATORS))
    row = ROWS[op]
    b = webnn.MLGraphBuilder(ctx)
    made = []

    def operand():
        if made and data.draw(st.booleans()):
            return data.draw(st.sampled_from(made))
        dt = data.draw(st.sampled_from(ALL))
        shape = data.draw(st.lists(st.integers(1, 3), max_size=5))
        v = b.input(f"i{len(made)}", {"dataType": dt, "shape": shape})
        made.append(v)
        return v

    args, rank = [], None
    for _snake, camel, kind, i in row["params"]:     # the signature the core parsed
        if kind == "sequence":
            args.append([operand() for _ in range(data.draw(st.integers(0, 3)))])
        elif kind == "value":
            args.append(_value(data.draw, row["field_types"][i], row["fields"][i][2], rank or 0))
        else:
            args.append(operand())
            rank = rank if rank is not None else len(made[-1].shape)
    positional = {camel for _snake, camel, kind, _i in row["params"] if kind == "value"}
    opts = {}
    for (_, camel, enum), kind in zip(row["fields"], row["field_types"]):
        if camel in positional or not data.draw(st.booleans()):
            continue
        opts[camel] = operand() if kind == "operand" else _value(data.draw, kind, enum, rank or 0)
    if data.draw(st.integers(0, 4)) == 0:
        opts["label"] = data.draw(st.text(max_size=8))
    try:
        out = getattr(b, op)(*args, opts)
    except (TypeError, webnn.DOMException):
        return
    outs = out if isinstance(out, list) else [out]
    assume(all(int(np.prod(o.shape, dtype=np.int64)) * 8 <= 1 << 22 for o in outs))
    g = b.build({f"o{i}": o for i, o in enumerate(outs)})
    rng = np.random.default_rng(0)
    inputs = {}
    for name, d in g.input_descriptors.items():
        dt = np.dtype(NP[d["data_type"]])
        raw = rng.integers(0, 256, size=int(np.prod(d["shape"], dtype=np.int64)) * dt.itemsize, dtype=np.uint8)
        inputs[name] = raw.view(dt).reshape(d["shape"])     # any bit pattern: NaN, Inf, extremes
    try:
        res = ctx.compute(g, inputs)
    except webnn.DOMException:
        return
    for i, o in enumerate(outs):
        assert res[f"o{i}"].shape == tuple(o.shape)
