"""Element-wise binary operations: add sub mul div max min pow.

Reference: float64 NumPy for float types (rounded to the output type), exact
Python-integer arithmetic wrapped to the output type for integer types.
Documented integer semantics (the spec leaves them open): div truncates toward
zero, x / 0 == 0, INT_MIN / -1 wraps to INT_MIN; pow with a negative exponent
gives 0 unless the base is +-1 (0 ** negative == 0).
"""
import numpy as np
import pytest

import webnn

from .conftest import (BROADCAST_CASES, as_pyints, broadcast_shapes, check_exact, check_float,
                       float_specials, int_specials, is_float, npdt, op_dtypes, random_floats,
                       random_ints, rng_for, wrap_int)

BINARY = ["add", "sub", "mul", "div", "max", "min", "pow"]
CASES = [(op, dt) for op in BINARY for dt in op_dtypes(op, "a")]


# ---- references -------------------------------------------------------------
def _trunc_div(x, y):
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


def _int_pow(dt):
    bits = npdt(dt).itemsize * 8

    def f(x, e):
        if e < 0:
            if x == 1:
                return 1
            if x == -1:
                return -1 if e % 2 else 1
            return 0
        return pow(x, e, 1 << bits)

    return f


def ref_float(op, a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    with np.errstate(all="ignore"):
        return {
            "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
            "max": np.maximum, "min": np.minimum, "pow": np.power,
        }[op](a, b)


def ref_int(op, a, b, dt):
    a, b = as_pyints(a), as_pyints(b)
    if op == "add":
        r = a + b
    elif op == "sub":
        r = a - b
    elif op == "mul":
        r = a * b
    elif op == "div":
        r = np.frompyfunc(_trunc_div, 2, 1)(a, b)
    elif op == "max":
        r = np.frompyfunc(max, 2, 1)(a, b)
    elif op == "min":
        r = np.frompyfunc(min, 2, 1)(a, b)
    elif op == "pow":
        r = np.frompyfunc(_int_pow(dt), 2, 1)(a, b)
    return np.asarray(r, dtype=object)


def tolerance(op, dt):
    if op == "pow":
        return dict(ulps=2, rtol=1e-6) if dt == "float32" else dict(ulps=1)
    # add/sub/mul/div are correctly rounded IEEE operations (and float16
    # through float32 is innocuous double rounding); max/min select.
    return dict(ulps=0, zero_sign=op in ("add", "sub", "mul", "div"))


def check(op, dt, a, b, got):
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    inputs = {"a": a, "b": b}
    if is_float(dt):
        check_float(got, ref_float(op, a, b), dt, shape, inputs=inputs, what=f"{op} {dt}",
                    **tolerance(op, dt))
    else:
        check_exact(got, ref_int(op, a, b, dt), dt, shape, inputs=inputs, what=f"{op} {dt}")


def operands(rng, op, dt, shape_a, shape_b):
    if is_float(dt):
        a = random_floats(rng, shape_a, dt)
        if op == "pow":
            a = random_floats(rng, shape_a, dt, -4, 4)
            bi = rng.integers(-4, 5, size=shape_b).astype(np.float64)
            bf = rng.uniform(-3, 3, size=shape_b)
            b = np.where(rng.random(shape_b) < 0.5, bi, bf).astype(npdt(dt))
        else:
            b = random_floats(rng, shape_b, dt)
        return a, b
    info = np.iinfo(npdt(dt))
    if op == "pow":
        lo = -6 if info.min < 0 else 0
        a = random_ints(rng, shape_a, dt, lo, 6)
        b = random_ints(rng, shape_b, dt, -3 if info.min < 0 else 0, 40)
        return a, b
    a = random_ints(rng, shape_a, dt)
    b = random_ints(rng, shape_b, dt)
    if op == "div":
        small = random_ints(rng, shape_b, dt, max(int(info.min), -10), 10)
        b = np.where(rng.random(shape_b) < 0.5, small, b).astype(npdt(dt))
    if op in ("max", "min"):
        # make some elements equal
        eq = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape))
        if b.shape == eq.shape:
            b = np.where(rng.random(b.shape) < 0.2, eq, b).astype(npdt(dt))
    return a, b


def _build(op):
    return lambda bld, a, b: getattr(bld, op)(a, b)


# ---- tests ------------------------------------------------------------------
@pytest.mark.parametrize("op,dt", CASES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random_broadcast(run, op, dt, rank):
    rng = rng_for("binary", op, dt, rank)
    for _ in range(2):
        _, (sa, sb) = broadcast_shapes(rng, 2, rank)
        a, b = operands(rng, op, dt, sa, sb)
        check(op, dt, a, b, run(_build(op), {"a": a, "b": b}))


@pytest.mark.parametrize("op,dt", CASES)
def test_broadcast_patterns(run, op, dt):
    """Fixed patterns: rank-0 and size-1 dimensions on both sides, both as
    graph inputs and with b as a constant."""
    rng = rng_for("binary-bcast", op, dt)
    for i, (sa, sb) in enumerate(BROADCAST_CASES):
        a, b = operands(rng, op, dt, sa, sb)
        if i % 2:
            got = run(_build(op), {"a": a}, constants={"b": b})
        else:
            got = run(_build(op), {"a": a, "b": b})
        check(op, dt, a, b, got)


@pytest.mark.parametrize("op,dt", CASES)
def test_special_values(run, op, dt):
    """All pairs of edge values (NaN, +-Inf, +-0, subnormals, float16 range
    edges / INT_MIN, INT_MAX, -1, 0, ...) via a [n,1] x [1,n] broadcast."""
    s = float_specials(dt) if is_float(dt) else int_specials(dt)
    if not is_float(dt) and op == "pow":
        info = np.iinfo(npdt(dt))
        extra = [0, 1, 2, 3, 31, 32, 33, 63, 64, 65, int(info.max)]
        if info.min < 0:
            extra += [-1, -2, -3, int(info.min)]
        s = np.unique(np.concatenate([s, np.array([v for v in extra if info.min <= v <= info.max],
                                                  dtype=npdt(dt))]))
    a, b = s[:, None], s[None, :]
    check(op, dt, a, b, run(_build(op), {"a": a, "b": b}))


def test_output_descriptor(run):
    """Output type is a's type; shape is the broadcast shape."""
    a = np.ones((3, 1, 2), np.float32)
    b = np.ones((4, 1), np.float32)
    got = run(lambda bld, a, b: bld.add(a, b), {"a": a, "b": b})
    assert got.shape == (3, 4, 2) and got.dtype == np.float32


# ---- hand-checked edge cases (the brief's documented semantics) ---------------
def _one(run, op, dt, x, y):
    a = np.array(x, npdt(dt))
    b = np.array(y, npdt(dt))
    return run(_build(op), {"a": a, "b": b})


HAND = [
    ("add", "int8", [127, -128, 100], [1, -1, 100], [-128, 127, -56]),
    ("sub", "uint8", [0, 5, 0], [1, 6, 255], [255, 255, 1]),
    ("add", "uint32", [4294967295], [1], [0]),
    ("mul", "int32", [65536, 2147483647, -2147483648], [65536, 2, -1],
     [0, -2, -2147483648]),
    ("mul", "int64", [2**62, -2**63], [4, -1], [0, -2**63]),
    ("mul", "uint64", [2**63 + 1], [2], [2]),
    ("div", "int32", [-7, 7, -7, 7, 0], [2, -2, -2, 2, 5], [-3, -3, 3, 3, 0]),
    ("div", "int32", [5, -5, 0, -2147483648], [0, 0, 0, -1], [0, 0, 0, -2147483648]),
    ("div", "int8", [-128, -128, 127, -7], [-1, 0, 0, 2], [-128, 0, 0, -3]),
    ("div", "int64", [-2**63, 9, -9], [-1, 0, 4], [-2**63, 0, -2]),
    ("div", "uint8", [7, 255, 0], [2, 0, 0], [3, 0, 0]),
    ("div", "uint64", [2**64 - 1, 5], [2, 0], [2**63 - 1, 0]),
    ("pow", "int32", [2, 2, 1, -1, -1, 0, 3, -2, 5, 0], [-1, 10, -5, -3, -4, -2, 0, 3, 1, 0],
     [0, 1024, 1, -1, 1, 0, 1, -8, 5, 1]),
    ("pow", "int32", [2, 3], [31, 21], [-2147483648, 3**21]),
    ("pow", "int8", [2, -2, 3], [7, 7, 5], [-128, -128, -13]),
    ("pow", "uint8", [2, 3, 0], [8, 5, 0], [0, 243, 1]),
    ("pow", "uint64", [3, 2, 3, 5], [2**64 - 1, 64, 2**63, 2**63 + 1],
     [pow(3, 2**64 - 1, 2**64), 0, 1, 5]),
    ("pow", "uint32", [3, 7], [2**32 - 1, 2**31 + 1],
     [pow(3, 2**32 - 1, 2**32), pow(7, 2**31 + 1, 2**32)]),
    ("max", "uint64", [2**64 - 1, 0], [2**63, 1], [2**64 - 1, 1]),
    ("min", "int64", [-2**63, 5], [2**63 - 1, -5], [-2**63, -5]),
]


@pytest.mark.parametrize("op,dt,x,y,expected", HAND)
def test_hand_checked(run, op, dt, x, y, expected):
    if dt not in op_dtypes(op, "a"):
        pytest.skip(f"{op} does not support {dt}")
    got = _one(run, op, dt, x, y)
    check_exact(got, np.array(expected, dtype=object), dt,
                inputs={"a": np.array(x, npdt(dt)), "b": np.array(y, npdt(dt))},
                what=f"{op} {dt}")
    # and the independent reference agrees with the hand-checked values
    np.testing.assert_array_equal(
        wrap_int(ref_int(op, np.array(x, npdt(dt)), np.array(y, npdt(dt)), dt), dt),
        wrap_int(np.array(expected, dtype=object), dt))


@pytest.mark.parametrize("dt", [d for d in ("float32", "float16") if d in op_dtypes("max", "a")])
def test_max_min_nan(run, dt):
    a = np.array([np.nan, 1.0, np.nan, -np.inf], npdt(dt))
    b = np.array([1.0, np.nan, np.nan, np.nan], npdt(dt))
    for op in ("max", "min"):
        got = run(_build(op), {"a": a, "b": b})
        assert np.all(np.isnan(got)), f"{op} {dt}: NaN not propagated: {got}"


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_float_hand_checked(run, dt):
    t = npdt(dt)
    cases = [
        ("div", [1.0, -1.0, 0.0, 1.0], [0.0, 0.0, 0.0, -0.0], [np.inf, -np.inf, np.nan, -np.inf]),
        ("pow", [-8.0, 0.0, -0.0, np.nan, 1.0, -2.0, 2.0], [1 / 3, -1.0, -1.0, 0.0, np.nan, 3.0, -2.0],
         [np.nan, np.inf, -np.inf, 1.0, 1.0, -8.0, 0.25]),
        ("add", [np.inf, np.inf, -0.0], [-np.inf, 1.0, -0.0], [np.nan, np.inf, -0.0]),
        ("mul", [0.0, -0.0, np.inf], [np.inf, 3.0, -2.0], [np.nan, -0.0, -np.inf]),
    ]
    for op, x, y, e in cases:
        with np.errstate(all="ignore"):
            a, b = np.array(x, t), np.array(y, t)
        got = _one(run, op, dt, a, b)
        check_float(got, np.array(e), dt, zero_sign=True, inputs={"a": a, "b": b},
                    what=f"{op} {dt}")
    # float16 range edges: overflow to +-Inf, subnormal results
    if dt == "float16":
        a = np.array([65504.0, 65504.0, 65504.0, -65504.0, 2.0**-24, 0.5, 1024.0, 2048.0], t)
        b = np.array([8.0, 16.0, 65504.0, -16.0, 2.0**-24, 2.0**-24, 1.0, 1.0], t)
        got = _one(run, "add", dt, a, b)
        check_float(got, np.array([65504.0, np.inf, np.inf, -np.inf, 2.0**-23, 0.5, 1025.0,
                                   2048.0]), dt, inputs={"a": a, "b": b},
                    what="add float16 edges")


@pytest.mark.parametrize("op,dt", [(op, dt) for op, dt in CASES
                                   if dt in ("float32", "float16", "int32", "uint64", "int8")])
def test_large_broadcast(run, op, dt):
    """Tensors large enough for chunked / vectorised / multi-threaded loops,
    with broadcast strides that do not line up with chunk boundaries."""
    rng = rng_for("binary-large", op, dt)
    for sa, sb in [((3, 1, 1031), (1, 5, 1031)), ((2051,), ()), ((), (2, 1027)),
                   ((7, 1), (1, 1500)), ((4, 3, 1, 257), (3, 5, 1))]:
        a, b = operands(rng, op, dt, sa, sb)
        check(op, dt, a, b, run(_build(op), {"a": a, "b": b}))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "max"])
def test_short_rows_broadcast(run, op):
    """Squeeze-excitation's scale: many short rows times one row repeated
    ([1, H, W, C] and [1, 1, 1, C], either side), float32 -- the loop over
    rows of elementwise.c's binary_rows_f32 (add sub mul div; max takes
    the general loop), on one and two threads, rows of 1 to 40."""
    rng = rng_for("binary-rows", op)
    for sa, sb in [((1, 112, 112, 32), (1, 1, 1, 32)), ((1, 1, 1, 24), (1, 56, 57, 24)),
                   ((2, 9, 5, 7), (7,)), ((3000, 1), (1,)), ((1, 9, 40), (1, 1, 40)),
                   ((5, 33), (5, 1))]:
        a, b = operands(rng, op, "float32", sa, sb)
        check(op, "float32", a, b, run(_build(op), {"a": a, "b": b}))


# ---- float32 pow on AVX-512 (elementwise.c, pow_f32_avx512) ---------------
def _ulps32(got, ref):
    """|got - ref| in float32 ulps (ref float64 rounded to float32 first)."""
    g = np.asarray(got, np.float32).view(np.int32).astype(np.int64)
    with np.errstate(over="ignore"):  # a reference beyond float32's range is its inf
        r = np.asarray(ref, np.float64).astype(np.float32).view(np.int32).astype(np.int64)
    g = np.where(g < 0, -(g & 0x7fffffff), g)
    r = np.where(r < 0, -(r & 0x7fffffff), r)
    return np.abs(g - r)


def test_pow_float32_accuracy(run):
    """Positive bases across the whole exponent range (subnormals too) and
    exponents that keep the result in range, 8 lanes at a time and a
    ragged tail: within 1 ulp of the correctly rounded value."""
    rng = rng_for("pow-accuracy")
    a = np.exp(rng.uniform(-80, 80, size=4099)).astype(np.float32)
    a[:7] = [1e-40, 1e-45, 1.0, 2.0, 0.5, 3.4e38, 1.1754944e-38]
    b = rng.uniform(-8, 8, size=a.size).astype(np.float32)
    b[::5] = rng.choice(np.array([0.75, -0.75, 0.5, 2, 3, -1, 1 / 3, 0.0], np.float32),
                        size=b[::5].size)
    with np.errstate(over="ignore", under="ignore"):
        ref = np.power(a.astype(np.float64), b.astype(np.float64))
    got = run(_build("pow"), {"a": a, "b": b})
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert _ulps32(got, ref).max() <= 1, np.argmax(_ulps32(got, ref))


def test_pow_float32_special_lanes(run):
    """Every pair of special bases and exponents (zeros of both signs,
    negative bases with integer and other exponents, 1, infinities, NaN,
    results that overflow or go subnormal), mixed into vectors of ordinary
    lanes: C's pow semantics lane by lane."""
    xs = np.array([0.0, -0.0, -2.0, -1.0, 1.0, np.inf, -np.inf, np.nan, 0.5, 2.0,
                   1e-45, 3e38, -0.5, 7.0], np.float32)
    ys = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, 0.5, -0.5, np.inf, -np.inf,
                   np.nan, 127.5, 200.0, -150.0], np.float32)
    a, b = np.meshgrid(xs, ys)
    a, b = a.reshape(-1), b.reshape(-1)
    # interleave with ordinary lanes, so that special ones sit in every lane
    rng = rng_for("pow-specials")
    fill = (rng.random(a.size) * 3 + 0.1).astype(np.float32)
    a2 = np.stack([a, fill]).T.reshape(-1)
    b2 = np.stack([b, np.float32(0.75) + 0 * fill]).T.reshape(-1)
    with np.errstate(all="ignore"):
        ref = np.power(a2.astype(np.float64), b2.astype(np.float64))
    got = run(_build("pow"), {"a": a2, "b": b2})
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert _ulps32(got[ok], ref[ok]).max() <= 1


def test_pow_in_place_chain(run):
    """pow inside a fused element-wise chain, the running value both its
    input and its output, special lanes included."""
    x = np.array([-2.0, 0.0, 4.0, np.nan, 9.0, 1e-3, 2.5, -0.0, 16.0, 3.0, np.inf, 0.25],
                 np.float32)
    got = run(lambda bld, a: bld.neg(bld.pow(bld.abs(a), bld.constant(np.float32(0.75)))),
              {"a": x})
    with np.errstate(all="ignore"):
        ref = -np.power(np.abs(x.astype(np.float64)), 0.75)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert _ulps32(got[ok], ref[ok]).max() <= 1


@pytest.mark.parametrize("how", ["scalar constant", "[1, 1] constant", "input [1]",
                                 "full-shape constant"])
def test_pow_square_exact(ctx, how):
    """x ** 2 (RMSNorm's square) equals x * x rounded once, bit for bit,
    whichever way the exponent 2 comes: a one-element exponent runs as a
    product, a full-shape one through pow; specials and overflow included."""
    rng = rng_for("pow-square")
    x = np.concatenate([np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-30, 3e19,
                                  -2e19, 1.8446743e19, 65504.0, 1.0, -1.0], np.float32),
                        (rng.standard_normal(2997) * 10).astype(np.float32)]).reshape(7, -1)
    b = webnn.MLGraphBuilder(ctx)
    a = b.input("a", {"data_type": "float32", "shape": list(x.shape)})
    inputs = {"a": x}
    if how == "scalar constant":
        e = b.constant(np.float32(2.0))
    elif how == "[1, 1] constant":
        e = b.constant(np.full((1, 1), 2.0, np.float32))
    elif how == "input [1]":
        e = b.input("e", {"data_type": "float32", "shape": [1]})
        inputs["e"] = np.array([2.0], np.float32)
    else:
        e = b.constant(np.full(x.shape, 2.0, np.float32))
    got = ctx.compute(b.build({"y": b.pow(a, e)}), inputs)["y"]
    with np.errstate(all="ignore"):
        ref = (x.astype(np.float64) ** 2).astype(np.float32)
    np.testing.assert_array_equal(got, ref)  # (NaN where ref is NaN)
    assert np.array_equal(np.signbit(got), np.signbit(ref))


def test_pow_near_two_is_not_a_square(ctx):
    """An exponent of 2 + 1 ulp is a pow, not a product."""
    x = np.array([3.0, 10.0, 1e10, 0.5], np.float32)
    e = np.nextafter(np.float32(2.0), np.float32(3.0))
    b = webnn.MLGraphBuilder(ctx)
    a = b.input("a", {"data_type": "float32", "shape": [4]})
    got = ctx.compute(b.build({"y": b.pow(a, b.constant(e))}), {"a": x})["y"]
    ref = np.power(x.astype(np.float64), np.float64(e))
    assert _ulps32(got, ref).max() <= 1
    assert got[2] != np.float32(1e20)  # 1e10 ** 2.4e-7 = 1 + 5.5e-6: not a square


def test_pow_negative_bases_integer_exponents(run):
    """A negative base with an integer exponent is |a|^b with the sign of an
    odd exponent (C's pow), within 1 ulp of float64, in every lane; with an
    exponent that is not an integer it is NaN."""
    rng = rng_for("pow-negative")
    n = 4099
    a = (rng.uniform(-12, 12, n) * np.exp2(rng.integers(-6, 6, n))).astype(np.float32)
    b = rng.choice(np.array([-3, -2, -1, 1, 2, 3, 4, 5, 7, 0.5, 1.5, -0.25], np.float32), n)
    with np.errstate(all="ignore"):
        ref = np.power(a.astype(np.float64), b.astype(np.float64))
    got = run(_build("pow"), {"a": a, "b": b})
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    ok = ~np.isnan(ref)
    assert np.array_equal(np.signbit(got[ok]), np.signbit(ref[ok]))
    assert _ulps32(got[ok], ref[ok]).max() <= 1


def test_gelu_tanh_chain(run):
    """GPT-2's gelu_new as exported (x^3 by pow inside a fused chain) against
    float64 over inputs of both signs."""
    x = np.random.default_rng(5).standard_normal(3 * 1031).astype(np.float32) * 4

    def build(bld, a):
        c = bld.constant
        inner = bld.mul(bld.add(a, bld.mul(bld.pow(a, c(np.float32(3.0))),
                                           c(np.float32(0.044715)))),
                        c(np.float32(0.7978845608028654)))
        return bld.mul(bld.mul(a, c(np.float32(0.5))), bld.add(bld.tanh(inner), c(np.float32(1))))
    got = run(build, {"a": x})
    x64 = x.astype(np.float64)
    ref = 0.5 * x64 * (1 + np.tanh(0.7978845608028654 * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)
