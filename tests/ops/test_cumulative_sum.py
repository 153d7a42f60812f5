"""cumulativeSum(input, axis, {exclusive, reversed}).

Reference: float64 running sums (numpy.cumsum) rounded once to the output
type for float types; exact Python-integer running sums wrapped to the output
type for integer types (documented: integer sums wrap around).  The kernel
keeps float32/float16 running sums in double, so each output is within one
ULP of the float64 reference.
"""
import numpy as np
import pytest

import webnn

from .conftest import (as_pyints, check_exact, check_float, is_float, npdt, op_dtypes,
                       random_floats, random_ints, rng_for)

TYPES = op_dtypes("cumulativeSum")
SPEC_TYPES = ["float32", "float16", "int32", "uint32", "int64", "uint64"]


def ref(x, axis, exclusive, reversed_):
    x = np.asarray(x)
    if is_float(x.dtype.name):
        v = x.astype(np.float64)
    elif x.size <= 5000:
        v = as_pyints(x)  # exact
    else:
        v = x.astype(np.uint64)  # exact modulo 2^64 (NumPy arrays wrap), faster
    if reversed_:
        v = np.flip(v, axis)
    with np.errstate(all="ignore"):
        c = np.cumsum(v, axis=axis, dtype=v.dtype)
    if exclusive:
        zero = np.zeros_like(np.take(c, [0], axis=axis))
        c = np.concatenate([zero, np.take(c, range(c.shape[axis] - 1), axis=axis)], axis=axis)
    if reversed_:
        c = np.flip(c, axis)
    return c


def tolerance(x, axis):
    mag = np.cumsum(np.abs(np.asarray(x, np.float64)), axis=axis)
    return dict(ulps=1, atol=1e-12 * np.maximum(mag, np.flip(np.cumsum(np.flip(
        np.abs(np.asarray(x, np.float64)), axis), axis=axis), axis)))


def run_configs(ctx, dt, configs, xs):
    """configs: (shape, axis, exclusive or None, reversed or None)"""
    b = webnn.MLGraphBuilder(ctx)
    outs, feeds = {}, {}
    for i, ((shape, axis, exc, rev), x) in enumerate(zip(configs, xs)):
        xi = b.input(f"x{i}", {"dataType": dt, "shape": list(shape)})
        opts = {}
        if exc is not None:
            opts["exclusive"] = exc
        if rev is not None:
            opts["reversed"] = rev
        y = b.cumulative_sum(xi, axis, opts)
        assert y.shape == tuple(shape) and y.data_type == dt
        outs[f"y{i}"] = y
        feeds[f"x{i}"] = x
    res = ctx.compute(b.build(outs), feeds)
    return [res[f"y{i}"] for i in range(len(configs))]


def values(rng, dt, shape):
    return random_floats(rng, shape, dt) if is_float(dt) else random_ints(rng, shape, dt)


def check_all(dt, configs, xs, got):
    for (shape, axis, exc, rev), x, y in zip(configs, xs, got):
        what = f"cumulativeSum {dt} shape={shape} axis={axis} exclusive={exc} reversed={rev}"
        r = ref(x, axis, bool(exc), bool(rev))
        if is_float(dt):
            check_float(y, r, dt, what=what, **tolerance(x, axis))
        else:
            check_exact(y, r, dt, what=what)


@pytest.mark.parametrize("dt", TYPES)
def test_random(ctx, dt):
    rng = rng_for("cumsum", dt)
    configs = []
    for rank in range(1, 6):
        for _ in range(4):
            shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
            axis = int(rng.integers(0, rank))
            exc = [None, False, True][int(rng.integers(0, 3))]
            rev = [None, False, True][int(rng.integers(0, 3))]
            configs.append((shape, axis, exc, rev))
    configs += [((4,), 0, exc, rev) for exc in (None, True) for rev in (None, True)]
    configs += [((1,), 0, True, True), ((1,), 0, False, False)]
    xs = [values(rng, dt, s) for s, _, _, _ in configs]
    check_all(dt, configs, xs, run_configs(ctx, dt, configs, xs))


@pytest.mark.parametrize("dt", ["float32", "int64"])
def test_every_axis_and_option(ctx, dt):
    rng = rng_for("cumsum every", dt)
    shape = (3, 4, 5, 6)
    configs = [(shape, a, e, r) for a in range(4) for e in (False, True) for r in (False, True)]
    xs = [values(rng, dt, shape) for _ in configs]
    check_all(dt, configs, xs, run_configs(ctx, dt, configs, xs))


def test_spec_examples(ctx):
    x = np.array([1, 2, 3, 4], np.int32)
    cases = {(False, False): [1, 3, 6, 10], (True, False): [0, 1, 3, 6],
             (False, True): [10, 9, 7, 4], (True, True): [9, 7, 4, 0]}
    configs = [((4,), 0, e, r) for (e, r) in cases]
    got = run_configs(ctx, "int32", configs, [x] * len(configs))
    for (e, r), y in zip(cases, got):
        assert y.tolist() == cases[(e, r)]


def test_max_rank(ctx):
    rng = rng_for("cumsum rank8")
    shape = (2, 1, 3, 2, 1, 2, 3, 2)
    configs = [(shape, a, e, r) for a in (0, 1, 2, 7) for e, r in ((False, False), (True, True))]
    xs = [values(rng, "float32", shape) for _ in configs]
    check_all("float32", configs, xs, run_configs(ctx, "float32", configs, xs))


LARGE = [((100000,), 0), ((1, 70000), 1), ((40000, 3), 0), ((3, 40000), 1), ((300, 300), 1),
         ((300, 300), 0), ((4, 2000, 9), 1)]


@pytest.mark.parametrize("dt", ["float32", "float16", "int32", "uint64"])
def test_large(ctx, dt):
    rng = rng_for("cumsum large", dt)
    configs = [(s, a, e, r) for (s, a) in LARGE for e, r in ((False, False), (True, True))]
    xs = [values(rng, dt, s) if dt != "float16" else random_floats(rng, s, dt, -1, 1)
          for s, _, _, _ in configs]
    check_all(dt, configs, xs, run_configs(ctx, dt, configs, xs))


def test_precision_and_specials(ctx):
    # double running sums: 1e8 + 1 - 1e8 is 1, not 0
    x = np.array([1e8, 1.0, -1e8, 0.5], np.float32)
    y = run_configs(ctx, "float32", [((4,), 0, None, None)], [x])[0]
    assert y.tolist() == [1e8, 1e8, 1.0, 1.5]
    # float16: intermediate sums beyond 65504 come back
    h = np.array([60000, 60000, -60000, -60000], np.float16)
    y = run_configs(ctx, "float16", [((4,), 0, None, None)], [h])[0]
    assert y.tolist() == [60000, np.inf, 60000, 0]
    s = np.array([1, np.nan, 2, np.inf, -np.inf], np.float32)
    y = run_configs(ctx, "float32", [((5,), 0, None, True)], [s])[0]
    check_float(y, ref(s, 0, False, True), "float32")
    # integers wrap around
    i = np.array([2 ** 31 - 1, 1, 1], np.int32)
    y = run_configs(ctx, "int32", [((3,), 0, None, None)], [i])[0]
    assert y.tolist() == [2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1]


def test_support_limits(ctx):
    l = ctx.op_support_limits()["cumulative_sum"]
    assert sorted(l["input"]["data_types"]) == sorted(SPEC_TYPES)
    assert sorted(l["output"]["data_types"]) == sorted(SPEC_TYPES)
    assert l["input"]["rank_range"]["min"] == 1
    assert l["input"]["rank_range"]["max"] >= 5


def _raises(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w.lower() in msg.lower(), f"{msg!r} does not mention {w!r}"


def test_validation(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    _raises(lambda: b.cumulative_sum(x, 2, label="ax"), "cumulativeSum", "ax", "axis", "2")
    _raises(lambda: b.cumulative_sum(x, -1), "cumulativeSum", "axis")
    s = b.input("s", {"dataType": "float32", "shape": []})
    _raises(lambda: b.cumulative_sum(s, 0, label="sc"), "cumulativeSum", "sc", "input", "rank")
    for dt in ("int8", "uint8"):
        i = b.input(f"i{dt}", {"dataType": dt, "shape": [2]})
        _raises(lambda: b.cumulative_sum(i, 0, label="ty"), "cumulativeSum", "ty", "input", dt)
    assert b.cumulativeSum(x, 1, {"exclusive": True, "reversed": True}).shape == (2, 3)
    assert b.cumulative_sum(x, 0, exclusive=False).data_type == "float32"
