"""Activations: clamp elu gelu hardSigmoid hardSwish leakyRelu linear prelu relu
sigmoid softplus softsign tanh.

Reference: the spec's formula evaluated in float64 on the same input values
(float options cast to the input's data type first, as the spec says), then
rounded to the output type.  Exact integer arithmetic with wrap-around for
the integer types of clamp / relu / prelu.

Tolerances: float32 ~1e-6 relative for transcendental functions plus, where
the spec's formula itself cancels (elu's exp(x) - 1 near 0, softplus's
ln(1 + exp(x)) for x << 0, gelu's 1 + erf(.) for x << 0, alpha * x + beta),
an absolute term of one rounding of the cancelling quantity.  float16: one or
two float16 ulps of the correctly rounded value.
"""
import math

import numpy as np
import pytest

from .conftest import (BROADCAST_CASES, as_pyints, broadcast_shapes, cast_param, check_exact,
                       check_float, float_specials, int_specials, is_float, npdt, op_dtypes,
                       random_floats, random_ints, random_shape, rng_for)

_erf = np.vectorize(math.erf, otypes=[np.float64])


def eps(dt):
    return float(np.finfo(npdt(dt)).eps)


# ---- references (float64, spec formulas) ---------------------------------------
def ref_elu(x, alpha):
    # max(0, x) + alpha * (exp(min(0, x)) - 1)
    return np.maximum(0, x) + alpha * np.expm1(np.minimum(0, x))


def ref_gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def ref_hard_sigmoid(x, alpha, beta):
    return np.maximum(np.minimum(alpha * x + beta, 1), 0)


def ref_hard_swish(x):
    return x * np.maximum(0, np.minimum(6, x + 3)) / 6


def ref_leaky_relu(x, alpha):
    # max(0, x) + alpha * min(0, x): x for x >= 0, alpha * x below, NaN stays NaN
    return np.where(np.isnan(x) | (x >= 0), x, alpha * x)


def ref_linear(x, alpha, beta):
    return alpha * x + beta


def ref_sigmoid(x):
    # 1 / (exp(-x) + 1), evaluated without overflow
    return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def ref_softplus(x):
    return np.logaddexp(0, x)  # ln(1 + exp(x))


def ref_softsign(x):
    return x / (1 + np.abs(x))


SINGLE = {
    # op: (reference(x64, options cast to the data type), list of options to try)
    "elu": (lambda x, o: ref_elu(x, o.get("alpha", 1.0)),
            [{}, {"alpha": 0.5}, {"alpha": 2.0}, {"alpha": 0.3}]),
    "gelu": (lambda x, o: ref_gelu(x), [{}]),
    "hardSigmoid": (lambda x, o: ref_hard_sigmoid(x, o.get("alpha", 0.2), o.get("beta", 0.5)),
                    [{}, {"alpha": 0.25, "beta": 0.25}, {"alpha": -0.5, "beta": 0.75},
                     {"alpha": 1.0, "beta": 0.0}]),
    "hardSwish": (lambda x, o: ref_hard_swish(x), [{}]),
    "leakyRelu": (lambda x, o: ref_leaky_relu(x, o.get("alpha", 0.01)),
                  [{}, {"alpha": 0.2}, {"alpha": -0.5}, {"alpha": 0.0}]),
    "linear": (lambda x, o: ref_linear(x, o.get("alpha", 1.0), o.get("beta", 0.0)),
               [{}, {"alpha": 1.5, "beta": -2.25}, {"alpha": -0.3, "beta": 0.7},
                {"alpha": 0.0, "beta": 3.0}]),
    "sigmoid": (lambda x, o: ref_sigmoid(x), [{}]),
    "softplus": (lambda x, o: ref_softplus(x), [{}]),
    "softsign": (lambda x, o: ref_softsign(x), [{}]),
    "tanh": (lambda x, o: np.tanh(x), [{}]),
}
PARAMS = {"elu": ("alpha",), "hardSigmoid": ("alpha", "beta"), "leakyRelu": ("alpha",),
          "linear": ("alpha", "beta")}
DEFAULTS = {"elu": {"alpha": 1.0}, "hardSigmoid": {"alpha": 0.2, "beta": 0.5},
            "leakyRelu": {"alpha": 0.01}, "linear": {"alpha": 1.0, "beta": 0.0}}


def cast_opts(op, opts, dt):
    full = dict(DEFAULTS.get(op, {}))
    full.update(opts)
    return {k: cast_param(v, dt) for k, v in full.items()}


def tolerance(op, dt, x, o):
    """x: float64 input values, o: options already cast to dt."""
    e = eps(dt)
    ulps = 1 if dt == "float32" else 2
    if op == "elu":
        return dict(ulps=ulps, rtol=1e-6 if dt == "float32" else 0,
                    atol=abs(o["alpha"]) * e)          # exp(x) - 1 near x = 0
    if op == "gelu":
        return dict(ulps=ulps, rtol=1e-6 if dt == "float32" else 0,
                    atol=np.abs(x) * e)                # 1 + erf(.) for x << 0
    if op == "softplus":
        return dict(ulps=ulps, rtol=1e-6 if dt == "float32" else 0,
                    atol=e / 2)                        # ln(1 + tiny)
    if op in ("sigmoid", "tanh"):
        return dict(ulps=ulps, rtol=1e-6 if dt == "float32" else 0)
    if op in ("hardSigmoid", "linear"):
        # one rounding of alpha * x may be lost to cancellation with beta
        return dict(ulps=1, atol=np.abs(o["alpha"] * x) * e)
    if op == "hardSwish":
        return dict(ulps=2 if dt == "float32" else 1, atol=np.abs(x) * e * 0.5)
    if op == "softsign":
        return dict(ulps=2 if dt == "float32" else 1)
    if op == "leakyRelu":
        return dict(ulps=0)
    raise AssertionError(op)


def gen(rng, op, dt, shape):
    if op in ("sigmoid", "tanh", "softplus"):
        return random_floats(rng, shape, dt, -20, 20) if rng.random() < 0.5 \
            else random_floats(rng, shape, dt, -4, 4)
    if op == "softsign":
        return random_floats(rng, shape, dt, -100, 100)
    if op == "gelu":
        return random_floats(rng, shape, dt, -6, 6)
    if op == "hardSwish":
        v = random_floats(rng, shape, dt, -8, 8)
        return np.where(rng.random(shape) < 0.1, np.round(v), v).astype(npdt(dt))
    return random_floats(rng, shape, dt, -10, 10)


# the spec formula and the mathematical limit disagree: skip these inputs
AMBIGUOUS = {
    "gelu": lambda x: x == -np.inf,       # -inf * 0
    "hardSwish": lambda x: x == -np.inf,  # -inf * 0
    "softsign": np.isinf,                 # inf / inf
}


def check_single(op, dt, x, opts, got):
    o = cast_opts(op, opts, dt)
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        ref = SINGLE[op][0](x64, o)
        tol = tolerance(op, dt, x64, o)
    check_float(got, ref, dt, x.shape, inputs={"x": x}, what=f"{op} {dt} {opts}", **tol)


SINGLE_CASES = [(op, dt) for op in SINGLE for dt in op_dtypes(op, "input")]


def _b(op, opts):
    return lambda bld, x: getattr(bld, op)(x, dict(opts)) if opts else getattr(bld, op)(x)


@pytest.mark.parametrize("op,dt", SINGLE_CASES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_single_random(run, op, dt, rank):
    rng = rng_for("act", op, dt, rank)
    x = gen(rng, op, dt, random_shape(rng, rank, max_dim=5))
    for opts in SINGLE[op][1]:
        check_single(op, dt, x, opts, run(_b(op, opts), {"x": x}))


@pytest.mark.parametrize("op,dt", SINGLE_CASES)
def test_single_large_and_specials(run, op, dt):
    rng = rng_for("act-large", op, dt)
    x = gen(rng, op, dt, (5, 3001))
    for opts in SINGLE[op][1][:2]:
        check_single(op, dt, x, opts, run(_b(op, opts), {"x": x}))
    s = float_specials(dt)
    if op in AMBIGUOUS:
        s = s[~AMBIGUOUS[op](s)]
    for opts in SINGLE[op][1]:
        check_single(op, dt, s, opts, run(_b(op, opts), {"x": s}))


@pytest.mark.parametrize("dt", [d for d in ("float32", "float16")
                                if d in op_dtypes("softplus", "input")])
def test_softplus_tails(run, dt):
    """ln(1 + exp(x)) is ~x for large x and ~exp(x) for very negative x; a
    float32 intermediate exp(x) must not overflow the result to Inf."""
    t = npdt(dt)
    x = np.array([30.0, 50.0, 88.0, 89.0, 100.0, 1000.0, -30.0, -100.0, -1000.0], t) \
        if dt == "float32" else np.array([12.0, 20.0, 100.0, 1000.0, -20.0], t)
    got = run(_b("softplus", {}), {"x": x})
    x64 = x.astype(np.float64)
    check_float(got, ref_softplus(x64), dt, inputs={"x": x}, what=f"softplus {dt} tails",
                **tolerance("softplus", dt, x64, {}))


@pytest.mark.parametrize("dt", [d for d in ("float32", "float16")
                                if d in op_dtypes("tanh", "input")])
def test_tanh_sigmoid_tails(run, dt):
    t = npdt(dt)
    x = np.array([1e-6, -1e-6, 1e-3, 9.0, 20.0, -20.0, 50.0, 100.0, -100.0, 1000.0], t)
    x64 = x.astype(np.float64)
    got = run(_b("tanh", {}), {"x": x})
    check_float(got, np.tanh(x64), dt, inputs={"x": x}, what=f"tanh {dt} tails",
                **tolerance("tanh", dt, x64, {}))
    got = run(_b("sigmoid", {}), {"x": x})
    # sigmoid(-1000) is below the smallest subnormal; sigmoid(-100) = 3.7e-44
    # is a float32 subnormal: allow it to flush (atol: smallest normal)
    check_float(got, ref_sigmoid(x64), dt, inputs={"x": x}, what=f"sigmoid {dt} tails",
                atol=float(np.finfo(t).smallest_normal), **tolerance("sigmoid", dt, x64, {}))


def test_hand_checked(run):
    x = np.array([-4.0, -3.0, -1.0, 0.0, 1.0, 3.0, 4.0], np.float32)
    got = run(_b("hardSwish", {}), {"x": x})
    check_float(got, np.array([0.0, 0.0, -1 / 3, 0.0, 2 / 3, 3.0, 4.0]), "float32", ulps=1,
                inputs={"x": x}, what="hardSwish")
    got = run(_b("hardSigmoid", {}), {"x": x})
    check_float(got, np.array([0.0, 0.0, 0.3, 0.5, 0.7, 1.0, 1.0]), "float32", ulps=1,
                inputs={"x": x}, what="hardSigmoid")
    got = run(_b("elu", {"alpha": 2.0}), {"x": x})
    check_float(got, np.array([2 * (math.exp(-4) - 1), 2 * (math.exp(-3) - 1),
                               2 * (math.exp(-1) - 1), 0.0, 1.0, 3.0, 4.0]), "float32",
                ulps=2, inputs={"x": x}, what="elu")
    got = run(_b("leakyRelu", {"alpha": 0.5}), {"x": x})
    check_float(got, np.array([-2.0, -1.5, -0.5, 0.0, 1.0, 3.0, 4.0]), "float32",
                inputs={"x": x}, what="leakyRelu")


# ---- clamp (all data types) ---------------------------------------------------
CLAMP_CASES = [dt for dt in op_dtypes("clamp", "input")]


def clamp_options(rng, dt):
    if is_float(dt):
        lo, hi = sorted(float(v) for v in rng.uniform(-8, 8, size=2))
        return [{"minValue": lo, "maxValue": hi}, {"minValue": lo}, {"maxValue": hi}, {},
                {"minValue": 0, "maxValue": 6}, {"minValue": hi, "maxValue": hi},
                {"minValue": -np.inf, "maxValue": np.inf}]
    info = np.iinfo(npdt(dt))
    lim_lo, lim_hi = max(int(info.min), -2**52), min(int(info.max), 2**52)
    lo, hi = sorted(int(v) for v in rng.integers(lim_lo, lim_hi, size=2, endpoint=True))
    return [{"minValue": lo, "maxValue": hi}, {"minValue": lo}, {"maxValue": hi}, {},
            {"minValue": 0, "maxValue": 6}, {"minValue": hi, "maxValue": hi},
            {"minValue": int(info.min), "maxValue": int(info.max) if info.max < 2**53 else 2**53}]


def ref_clamp(x, dt, opts):
    if is_float(dt):
        r = x.astype(np.float64)
        with np.errstate(all="ignore"):
            if "minValue" in opts:
                r = np.maximum(r, cast_param(opts["minValue"], dt))
            if "maxValue" in opts:
                r = np.minimum(r, cast_param(opts["maxValue"], dt))
        return r
    r = as_pyints(x)
    if "minValue" in opts:
        r = np.frompyfunc(lambda v: max(v, int(opts["minValue"])), 1, 1)(r)
    if "maxValue" in opts:
        r = np.frompyfunc(lambda v: min(v, int(opts["maxValue"])), 1, 1)(r)
    return np.asarray(r, dtype=object)


def check_clamp(dt, x, opts, got):
    what = f"clamp {dt} {opts}"
    if is_float(dt):
        check_float(got, ref_clamp(x, dt, opts), dt, x.shape, inputs={"x": x}, what=what)
    else:
        check_exact(got, ref_clamp(x, dt, opts), dt, x.shape, inputs={"x": x}, what=what)


@pytest.mark.parametrize("dt", CLAMP_CASES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_clamp_random(run, dt, rank):
    rng = rng_for("clamp", dt, rank)
    shape = random_shape(rng, rank, max_dim=5)
    x = random_floats(rng, shape, dt, -10, 10) if is_float(dt) else random_ints(rng, shape, dt)
    for opts in clamp_options(rng, dt):
        check_clamp(dt, x, opts, run(_b("clamp", opts), {"x": x}))


@pytest.mark.parametrize("dt", CLAMP_CASES)
def test_clamp_specials(run, dt):
    """NaN stays NaN; +-Inf / INT extremes are clamped."""
    rng = rng_for("clamp-s", dt)
    x = float_specials(dt) if is_float(dt) else int_specials(dt)
    for opts in clamp_options(rng, dt):
        check_clamp(dt, x, opts, run(_b("clamp", opts), {"x": x}))


def test_clamp_float16_bounds_cast(run):
    """Bounds are cast to the input type: 0.1 -> float16(0.1)."""
    x = np.array([0.0, 0.05, 0.1, 0.2, 1.0], np.float16)
    opts = {"minValue": 0.1, "maxValue": 0.15}
    check_clamp("float16", x, opts, run(_b("clamp", opts), {"x": x}))


def spec_convert_to_int(x, dt):
    """The spec's ConvertToInt (used to cast MLNumber options): clamp to the
    type's range, then round half to even; NaN -> 0."""
    info = np.iinfo(npdt(dt))
    if isinstance(x, float) and math.isnan(x):
        return 0
    x = min(max(x, int(info.min)), int(info.max))
    return int(round(x)) if isinstance(x, float) else int(x)


@pytest.mark.parametrize("dt", [d for d in CLAMP_CASES if not is_float(d)])
def test_clamp_integer_bounds_cast(run, dt):
    """minValue / maxValue are cast to the input type with the spec's
    ConvertToInt: out-of-range bounds clamp to the type's range, fractional
    bounds round half to even."""
    info = np.iinfo(npdt(dt))
    x = np.unique(np.concatenate([int_specials(dt),
                                  np.arange(max(int(info.min), -10), 11).astype(npdt(dt))]))
    for lo, hi in [(-2.5, 6.5), (-3.5, 7.5), (-1e30, 1e30), (0.4, 0.6), (-1e30, -1e30),
                   (1e30, 1e30)]:
        lo_i, hi_i = spec_convert_to_int(lo, dt), spec_convert_to_int(hi, dt)
        opts = {"minValue": lo, "maxValue": hi}
        got = run(_b("clamp", opts), {"x": x})
        ref = np.frompyfunc(lambda v: min(max(v, lo_i), hi_i), 1, 1)(as_pyints(x))
        check_exact(got, np.asarray(ref, dtype=object), dt, x.shape, inputs={"x": x},
                    what=f"clamp {dt} {opts} (cast bounds {lo_i}, {hi_i})")


# ---- relu (float and integer) -------------------------------------------------
@pytest.mark.parametrize("dt", op_dtypes("relu", "input"))
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_relu(run, dt, rank):
    rng = rng_for("relu", dt, rank)
    shape = random_shape(rng, rank, max_dim=5)
    x = random_floats(rng, shape, dt) if is_float(dt) else random_ints(rng, shape, dt)
    s = float_specials(dt) if is_float(dt) else int_specials(dt)
    if is_float(dt):
        s = s[~np.isnan(s)]  # see test_relu_nan
    for x in (x, s):
        got = run(_b("relu", {}), {"x": x})
        if is_float(dt):
            with np.errstate(all="ignore"):
                ref = np.maximum(0.0, x.astype(np.float64))  # NaN propagates
            check_float(got, ref, dt, x.shape, inputs={"x": x}, what=f"relu {dt}")
        else:
            ref = np.frompyfunc(lambda v: max(v, 0), 1, 1)(as_pyints(x))
            check_exact(got, np.asarray(ref, dtype=object), dt, x.shape, inputs={"x": x},
                        what=f"relu {dt}")


@pytest.mark.parametrize("dt", [d for d in op_dtypes("relu", "input") if is_float(d)])
def test_relu_nan(run, dt):
    """relu(x) = max(0, x) (the spec's emulation), and max propagates NaN
    (as this package documents for max, like numpy.maximum): relu(NaN) is
    NaN, as leakyRelu / prelu / clamp / elu give here."""
    x = np.array([np.nan, -np.nan, 1.0, -1.0], npdt(dt))
    got = run(_b("relu", {}), {"x": x})
    check_float(got, np.array([np.nan, np.nan, 1.0, 0.0]), dt, inputs={"x": x},
                what=f"relu {dt}")


# ---- prelu (broadcasting, float and integer) ------------------------------------
PRELU_DT = op_dtypes("prelu", "input")


def ref_prelu(x, slope, dt):
    if is_float(dt):
        x64, s64 = x.astype(np.float64), slope.astype(np.float64)
        with np.errstate(all="ignore"):
            # max(0, x) + slope * min(0, x), read piecewise: x for x >= 0
            # (whatever the slope), slope * x below, NaN stays NaN
            return np.where(np.isnan(x64) | (x64 >= 0), x64, s64 * x64)
    xi, si = as_pyints(x), as_pyints(slope)
    return np.asarray(np.frompyfunc(lambda v, s: v if v >= 0 else v * s, 2, 1)(xi, si),
                      dtype=object)


def prelu_operands(rng, dt, sx, ss):
    if is_float(dt):
        return random_floats(rng, sx, dt), random_floats(rng, ss, dt, -2, 2)
    info = np.iinfo(npdt(dt))
    return random_ints(rng, sx, dt), random_ints(rng, ss, dt, max(int(info.min), -100), 100)


def check_prelu(dt, x, slope, got):
    shape = np.broadcast_shapes(x.shape, slope.shape)
    inputs = {"x": x, "slope": slope}
    if is_float(dt):
        check_float(got, ref_prelu(x, slope, dt), dt, shape, inputs=inputs, what=f"prelu {dt}")
    else:
        check_exact(got, ref_prelu(x, slope, dt), dt, shape, inputs=inputs, what=f"prelu {dt}")


def _prelu(bld, x, slope):
    return bld.prelu(x, slope)


@pytest.mark.parametrize("dt", PRELU_DT)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_prelu_random(run, dt, rank):
    rng = rng_for("prelu", dt, rank)
    for _ in range(2):
        _, (sx, ss) = broadcast_shapes(rng, 2, rank)
        x, slope = prelu_operands(rng, dt, sx, ss)
        check_prelu(dt, x, slope, run(_prelu, {"x": x, "slope": slope}))


@pytest.mark.parametrize("dt", PRELU_DT)
def test_prelu_patterns_and_specials(run, dt):
    rng = rng_for("prelu-b", dt)
    for i, (sx, ss) in enumerate(BROADCAST_CASES):
        x, slope = prelu_operands(rng, dt, sx, ss)
        if i % 2:
            got = run(_prelu, {"x": x}, constants={"slope": slope})
        else:
            got = run(_prelu, {"x": x, "slope": slope})
        check_prelu(dt, x, slope, got)
    s = float_specials(dt) if is_float(dt) else int_specials(dt)
    x, slope = s[:, None], s[None, :]
    check_prelu(dt, x, slope, run(_prelu, {"x": x, "slope": slope}))


def test_prelu_int_wraps(run):
    if "int8" not in PRELU_DT:
        pytest.skip("prelu int8 unsupported")
    x = np.array([-100, -128, 5, -1], np.int8)
    s = np.array([3, -1, -7, -128], np.int8)
    check_exact(run(_prelu, {"x": x, "slope": s}),
                np.array([-300, 128, 5, 128], dtype=object), "int8",
                inputs={"x": x, "slope": s}, what="prelu int8")
