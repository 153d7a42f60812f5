"""Reduction operations: reduceL1 reduceL2 reduceLogSum reduceLogSumExp
reduceMax reduceMean reduceMin reduceProduct reduceSum reduceSumSquare.

Reference: float64 NumPy for float types (rounded once to the output type),
exact Python-integer arithmetic wrapped to the output type for integer types.
Documented semantics (the spec leaves them open): integer sums, sums of
squares, L1 norms and products wrap around (two's complement); reduceMax /
reduceMin propagate NaN; reduceLogSumExp is max + log(sum(exp(x - max))), so
it does not overflow, and is the max itself when the max is +-Inf or NaN.
The kernels accumulate float32/float16 in double, so results are within one
ULP of the float64 reference (cases below would fail with float32
accumulation).
"""
import itertools

import numpy as np
import pytest

import webnn

from .conftest import (as_pyints, check_exact, check_float, is_float, npdt, op_dtypes,
                       random_floats, random_ints, rng_for, wrap_int)

REDUCE = ["reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax",
          "reduceMean", "reduceMin", "reduceProduct", "reduceSum", "reduceSumSquare"]
SNAKE = {"reduceL1": "reduce_l1", "reduceL2": "reduce_l2", "reduceLogSum": "reduce_log_sum",
         "reduceLogSumExp": "reduce_log_sum_exp", "reduceMax": "reduce_max",
         "reduceMean": "reduce_mean", "reduceMin": "reduce_min",
         "reduceProduct": "reduce_product", "reduceSum": "reduce_sum",
         "reduceSumSquare": "reduce_sum_square"}
CASES = [(op, dt) for op in REDUCE for dt in op_dtypes(op)]

SUM_TYPES = ["float32", "float16", "int32", "uint32", "int64", "uint64"]
FLOAT_ONLY = ["float32", "float16"]
ALL = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]
# the spec's tensor-limits tables
SPEC_TYPES = {"reduceL1": SUM_TYPES, "reduceSum": SUM_TYPES, "reduceSumSquare": SUM_TYPES,
              "reduceL2": FLOAT_ONLY, "reduceLogSum": FLOAT_ONLY,
              "reduceLogSumExp": FLOAT_ONLY, "reduceMean": FLOAT_ONLY,
              "reduceMax": ALL, "reduceMin": ALL, "reduceProduct": SUM_TYPES}


# ---- references -------------------------------------------------------------
def _axes(x, axes):
    return tuple(range(np.ndim(x))) if axes is None else tuple(axes)


def ref_float(op, x, axes, keep):
    x = np.asarray(x, np.float64)
    ax = _axes(x, axes)
    with np.errstate(all="ignore"):
        if op == "reduceL1":
            return np.sum(np.abs(x), axis=ax, keepdims=keep)
        if op == "reduceL2":
            return np.sqrt(np.sum(x * x, axis=ax, keepdims=keep))
        if op == "reduceLogSum":
            return np.log(np.sum(x, axis=ax, keepdims=keep))
        if op == "reduceLogSumExp":
            m = np.max(x, axis=ax, keepdims=True)
            ms = np.where(np.isfinite(m), m, 0.0)
            r = np.where(np.isfinite(m), m + np.log(np.sum(np.exp(x - ms), axis=ax,
                                                           keepdims=True)), m)
            return r if keep else np.squeeze(r, axis=ax)
        if op == "reduceMax":
            return np.max(x, axis=ax, keepdims=keep)
        if op == "reduceMean":
            return np.mean(x, axis=ax, keepdims=keep)
        if op == "reduceMin":
            return np.min(x, axis=ax, keepdims=keep)
        if op == "reduceProduct":
            return np.prod(x, axis=ax, keepdims=keep)
        if op == "reduceSum":
            return np.sum(x, axis=ax, keepdims=keep)
        if op == "reduceSumSquare":
            return np.sum(x * x, axis=ax, keepdims=keep)
    raise KeyError(op)


def ref_int(op, x, axes, keep):
    """Exact Python integers (object array); wrapped by check_exact."""
    ax = _axes(x, axes)
    if op in ("reduceMax", "reduceMin"):
        f = np.max if op == "reduceMax" else np.min
        return np.asarray(as_pyints(f(x, axis=ax, keepdims=keep)), dtype=object)
    v = as_pyints(x)
    if op == "reduceL1":
        v = np.abs(v)
    elif op == "reduceSumSquare":
        v = v * v
    if op == "reduceProduct":
        # exact products modulo 2^64 (wrap_int keeps the low bits of those),
        # one axis at a time: bignum products of long inputs would be slow
        out = v
        for a in sorted(ax, reverse=True):
            out = _MUL64.reduce(out, axis=a, keepdims=True)
        if not keep:
            out = np.squeeze(out, axis=ax)
    else:
        out = np.sum(v, axis=ax, keepdims=keep)
    return np.asarray(out, dtype=object)


_MUL64 = np.frompyfunc(lambda a, b: (a * b) & ((1 << 64) - 1), 2, 1)


def float_tolerance(op, x, axes, keep):
    """One ULP of the result (double accumulation, one rounding), plus a
    negligible absolute term for the double-precision summation error."""
    with np.errstate(all="ignore"):
        mag = np.asarray(x, np.float64)
        if op in ("reduceL2", "reduceSumSquare"):
            mag = mag * mag
        scale = np.sum(np.abs(np.nan_to_num(mag, posinf=0, neginf=0)), axis=_axes(x, axes),
                       keepdims=keep)
    return dict(ulps=1, atol=1e-12 * scale)


def input_values(rng, op, dt, shape):
    if not is_float(dt):
        return random_ints(rng, shape, dt)
    if op == "reduceLogSum":
        return random_floats(rng, shape, dt, 0.05, 10.0)
    if op == "reduceProduct":
        v = random_floats(rng, shape, dt, 0.5, 2.0)
        return (v * rng.choice([-1, 1], size=shape)).astype(npdt(dt))
    if op == "reduceLogSumExp":
        return random_floats(rng, shape, dt, -30.0, 30.0)
    return random_floats(rng, shape, dt)


def check(op, dt, x, axes, keep, got, what=""):
    what = f"{op} {dt} shape={np.shape(x)} axes={axes} keep={keep} {what}"
    if is_float(dt):
        check_float(got, ref_float(op, x, axes, keep), dt, what=what,
                    **float_tolerance(op, x, axes, keep))
    else:
        check_exact(got, ref_int(op, x, axes, keep), dt, what=what)


def out_shape(shape, axes, keep):
    ax = set(range(len(shape))) if axes is None else set(axes)
    if keep:
        return tuple(1 if i in ax else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in ax)


def call(builder, op, x, axes, keep, **kw):
    opts = {} if keep is None else {"keepDimensions": keep}
    if axes is not None:
        opts["axes"] = list(axes)
    return getattr(builder, SNAKE[op])(x, opts, **kw)


def run_configs(ctx, op, dt, configs, values):
    """One graph with one input and one output per (shape, axes, keep)."""
    b = webnn.MLGraphBuilder(ctx)
    outs, feeds = {}, {}
    for i, ((shape, axes, keep), x) in enumerate(zip(configs, values)):
        xi = b.input(f"x{i}", {"dataType": dt, "shape": list(shape)})
        y = call(b, op, xi, axes, keep)
        exp_shape = out_shape(shape, axes, bool(keep))
        assert y.shape == exp_shape and y.data_type == dt
        outs[f"y{i}"] = y
        feeds[f"x{i}"] = x
    g = b.build(outs)
    res = ctx.compute(g, feeds)
    return [res[f"y{i}"] for i in range(len(configs))]


def random_configs(rng, n, max_rank=5, max_dim=4):
    configs = []
    for i in range(n):
        rank = i % (max_rank + 1)
        shape = tuple(int(d) for d in rng.integers(1, max_dim + 1, size=rank))
        kind = rng.integers(0, 4)
        if kind == 0:
            axes = None
        elif kind == 1:
            axes = []
        else:
            k = int(rng.integers(1, rank + 1)) if rank else 0
            axes = [int(a) for a in rng.permutation(rank)[:k]]
        keep = [None, False, True][int(rng.integers(0, 3))]
        configs.append((shape, axes, keep))
    return configs


# ---- every op, every data type, random shapes / axes / keepDimensions --------
@pytest.mark.parametrize("op,dt", CASES)
def test_random(ctx, op, dt):
    rng = rng_for("reduce random", op, dt)
    configs = random_configs(rng, 24)
    # fixed ones: defaults, empty axes, rank 0, all axes explicitly, unordered axes
    configs += [((), None, None), ((), [], True), ((), None, True), ((3, 4), [], False),
                ((2, 3, 4), [2, 0], False), ((2, 3, 4), [2, 0], True),
                ((2, 3, 4), [0, 1, 2], False), ((2, 3, 4), None, True), ((5,), [0], True)]
    values = [input_values(rng, op, dt, s) for s, _, _ in configs]
    got = run_configs(ctx, op, dt, configs, values)
    for (shape, axes, keep), x, y in zip(configs, values, got):
        check(op, dt, x, axes, bool(keep), y)


@pytest.mark.parametrize("op", REDUCE)
def test_every_axes_subset_rank4(ctx, op):
    """All 16 subsets of axes of a rank-4 input (plus the absent default),
    with and without keepDimensions, float32 and the first integer type."""
    for dt in ["float32"] + [d for d in op_dtypes(op) if not is_float(d)][:1]:
        rng = rng_for("subsets", op, dt)
        shape = (2, 3, 4, 5)
        configs = [(shape, list(s), keep) for r in range(5)
                   for s in itertools.combinations(range(4), r) for keep in (False, True)]
        configs += [(shape, None, False), (shape, None, True)]
        values = [input_values(rng, op, dt, shape) for _ in configs]
        got = run_configs(ctx, op, dt, configs, values)
        for (shape, axes, keep), x, y in zip(configs, values, got):
            check(op, dt, x, axes, keep, y)


@pytest.mark.parametrize("op", REDUCE)
def test_max_rank(ctx, op):
    """Rank 8 (the implementation's N) with ones and scattered axes."""
    rng = rng_for("rank8", op)
    shape = (2, 1, 3, 2, 1, 2, 3, 2)
    configs = [(shape, [0, 2, 5, 7], False), (shape, [1, 3, 4, 6], True), (shape, None, False),
               (shape, [7], False), (shape, [0], True)]
    values = [input_values(rng, op, "float32", shape) for _ in configs]
    got = run_configs(ctx, op, "float32", configs, values)
    for (shape, axes, keep), x, y in zip(configs, values, got):
        check(op, "float32", x, axes, keep, y)


# ---- large inputs: every loop shape of the kernel, threaded -------------------
LARGE = [
    ((1 << 17,), None),              # one output, long run (reduced space split)
    ((40000, 3), [0]),               # inner dimension kept, few outputs (split rows)
    ((3000, 40), [1]),               # many outputs, contiguous runs
    ((40, 3000), [0]),               # rows of 3000 accumulated
    ((30, 1000, 5), [1]),            # kept / reduced / kept
    ((6, 50, 7, 40), [0, 3]),        # reduced / kept / reduced: runs with an outer odometer
    ((6, 50, 7, 40), [1, 3]),        # kept / reduced / kept / reduced
    ((6, 50, 7, 40), [0, 2]),        # reduced / kept / reduced / kept
    ((20, 3, 1100), [0, 1]),         # reduced outer, inner row, split over reduced space
]


@pytest.mark.parametrize("op,dt", [("reduceSum", "float32"), ("reduceSum", "int32"),
                                   ("reduceMax", "float32"), ("reduceMin", "int8"),
                                   ("reduceLogSumExp", "float32"), ("reduceMean", "float16"),
                                   ("reduceL2", "float32"), ("reduceProduct", "uint64"),
                                   ("reduceL1", "int64")])
def test_large(ctx, op, dt):
    rng = rng_for("large", op, dt)
    configs = [(s, a, k) for (s, a) in LARGE for k in (False,)]
    values = [input_values(rng, op, dt, s) for s, _, _ in configs]
    got = run_configs(ctx, op, dt, configs, values)
    for (shape, axes, keep), x, y in zip(configs, values, got):
        check(op, dt, x, axes, keep, y)


# ---- special values and precision ---------------------------------------------
def _run1(ctx, op, x, axes=None, keep=False):
    dt = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}.get(
        x.dtype, str(x.dtype))
    return run_configs(ctx, op, dt, [(x.shape, axes, keep)], [x])[0]


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_nan_inf(ctx, dt):
    t = npdt(dt)
    nan, inf = np.nan, np.inf
    x = np.array([[1, nan, 3], [-inf, 2, 5], [inf, -inf, 0], [-inf, -inf, -inf],
                  [inf, 1, 2], [-0.0, -0.0, -0.0]], t)
    for op in REDUCE:
        got = _run1(ctx, op, x, [1])
        check(op, dt, x, [1], False, got)
    # spelled out: NaN propagates through max/min, +-Inf maxima for LogSumExp
    assert np.isnan(_run1(ctx, "reduceMax", x, [1])[0])
    assert np.isnan(_run1(ctx, "reduceMin", x, [1])[0])
    lse = _run1(ctx, "reduceLogSumExp", x, [1])
    assert lse[3] == -inf and lse[4] == inf and np.isnan(lse[0])


def test_float32_accumulation_precision(ctx):
    # float32 accumulation would give 0 (1e8 + 1 == 1e8 in float32)
    x = np.array([1e8, 1.0, -1e8], np.float32)
    assert _run1(ctx, "reduceSum", x)[()] == 1.0
    assert _run1(ctx, "reduceMean", x)[()] == np.float32(1.0 / 3.0)
    # squares overflow float32 (1e40), the norm does not
    y = np.array([1e20, 1e20, -1e20, 1e20], np.float32)
    assert _run1(ctx, "reduceL2", y)[()] == np.float32(2e20)
    assert _run1(ctx, "reduceSumSquare", y)[()] == np.inf
    # log-sum-exp of large values: exp overflows, the shifted form does not
    z = np.array([1000.0, 1000.0], np.float32)
    assert _run1(ctx, "reduceLogSumExp", z)[()] == np.float32(1000.0 + np.log(2.0))
    # many small terms
    w = np.full((1 << 20,), 0.1, np.float32)
    got = _run1(ctx, "reduceSum", w)
    check_float(got, np.sum(w.astype(np.float64)), "float32", ulps=0)


def test_float16_single_rounding(ctx):
    # 1 + 2^-11 + 2^-24: rounding to float32 first would give 1 + 2^-11, a
    # float16 tie that rounds to even (1.0); the true sum rounds up.
    x = np.array([1.0, 2.0 ** -11, 2.0 ** -24], np.float16)
    assert _run1(ctx, "reduceSum", x)[()] == np.float16(1.0 + 2.0 ** -10)
    # intermediate values beyond float16's range
    p = np.array([300.0, 300.0, 1.0 / 256.0], np.float16)
    check_float(_run1(ctx, "reduceProduct", p), np.prod(p.astype(np.float64)), "float16",
                ulps=0)
    m = np.array([60000.0, 60000.0, 60000.0], np.float16)
    assert _run1(ctx, "reduceMean", m)[()] == np.float16(60000.0)
    assert _run1(ctx, "reduceL2", m)[()] == np.inf  # 103923 > 65504


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
def test_integer_wraparound(ctx, dt):
    info = np.iinfo(npdt(dt))
    x = np.array([[info.max, info.max, 1], [info.min, info.min, 3],
                  [info.max, 2, 2], [info.min, info.max, 0]], npdt(dt))
    for op in ["reduceSum", "reduceL1", "reduceSumSquare", "reduceProduct"]:
        got = _run1(ctx, op, x, [1])
        check_exact(got, ref_int(op, x, [1], False), dt, what=op)
        # spelled out for sum: the low bits of the exact sum
        if op == "reduceSum":
            assert got[0] == wrap_int([2 * int(info.max) + 1], dt)[0]


@pytest.mark.parametrize("dt", ["int8", "uint8", "int32", "uint32", "int64", "uint64"])
def test_integer_max_min_extremes(ctx, dt):
    info = np.iinfo(npdt(dt))
    x = np.array([[info.min, info.max, 0], [info.min, info.min, info.min],
                  [info.max, info.max, info.max]], npdt(dt))
    for op in ["reduceMax", "reduceMin"]:
        for axes in ([0], [1], None, []):
            check_exact(_run1(ctx, op, x, axes), ref_int(op, x, axes, False), dt, what=op)


# ---- limits and validation ------------------------------------------------------
@pytest.mark.parametrize("op", REDUCE)
def test_support_limits(ctx, op):
    lim = ctx.op_support_limits()[SNAKE[op]]
    assert sorted(lim["input"]["data_types"]) == sorted(SPEC_TYPES[op])
    assert sorted(lim["output"]["data_types"]) == sorted(SPEC_TYPES[op])
    assert lim["input"]["rank_range"]["min"] == 0
    assert lim["input"]["rank_range"]["max"] >= 5


def _builder(ctx, shape=(2, 3, 4), dt="float32"):
    b = webnn.MLGraphBuilder(ctx)
    return b, b.input("x", {"dataType": dt, "shape": list(shape)})


def _raises(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w.lower() in msg.lower(), f"{msg!r} does not mention {w!r}"
    return msg


@pytest.mark.parametrize("op", REDUCE)
def test_validation(ctx, op):
    sn = SNAKE[op]
    b, x = _builder(ctx)
    f = getattr(b, sn)
    # axes out of range, duplicated, not a sequence, negative
    _raises(lambda: f(x, axes=[3], label="L1"), op, "L1", "axes", "3")
    _raises(lambda: f(x, {"axes": [0, 5]}), op, "axes")
    _raises(lambda: f(x, axes=[1, 2, 1], label="dup"), op, "dup", "axes", "more than once")
    _raises(lambda: f(x, axes=1), op, "axes")
    _raises(lambda: f(x, axes=[-1]), op, "axes")
    _raises(lambda: f(x, axes=[2 ** 32]), op, "axes")
    # rank 0: no axis is in range
    s = b.input("s", {"dataType": "float32", "shape": []})
    _raises(lambda: f(s, axes=[0]), op, "axes")
    assert f(s).shape == () and f(s, axes=[]).shape == () and f(s, keep_dimensions=True).shape == ()
    # data types outside the table
    for dt in sorted(set(ALL) - set(SPEC_TYPES[op])):
        bi, xi = _builder(ctx, (2,), dt)
        _raises(lambda: getattr(bi, sn)(xi, label="bad type"), op, "bad type", "input", dt)
    # both spellings and keyword / dict forms
    assert getattr(b, op)(x, {"keepDimensions": True, "axes": [1]}).shape == (2, 1, 4)
    assert f(x, keep_dimensions=True, axes=[0, 2]).shape == (1, 3, 1)
    assert f(x, axes=[]).shape == (2, 3, 4)
    assert f(x).shape == ()


def test_operand_from_other_builder(ctx):
    b1, x1 = _builder(ctx)
    b2, _ = _builder(ctx)
    with pytest.raises(TypeError):
        b2.reduce_sum(x1)
