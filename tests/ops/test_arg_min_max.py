"""argMin / argMax.

Reference: numpy.argmin / numpy.argmax on the same values (float64 for float
types, the native integers otherwise).  Documented semantics (the spec says
ties are implementation dependent): ties give the first (smallest) index; NaN
counts as both the largest and the smallest value, so the index of the first
NaN is returned -- both as NumPy does.  The default outputDataType is int32.
"""
import numpy as np
import pytest

import webnn

from .conftest import check_exact, is_float, npdt, op_dtypes, rng_for

OPS = ["argMin", "argMax"]
SNAKE = {"argMin": "arg_min", "argMax": "arg_max"}
ALL = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]
CASES = [(op, dt) for op in OPS for dt in op_dtypes(op)]


def ref(op, x, axis, keep):
    x = np.asarray(x)
    if is_float(x.dtype.name):
        x = x.astype(np.float64)
    f = np.argmax if op == "argMax" else np.argmin
    r = f(x, axis=axis)
    return np.expand_dims(r, axis) if keep else r


def values(rng, dt, shape):
    """Few distinct values, so that ties are frequent; the extremes of the
    type included."""
    if is_float(dt):
        pool = np.array([-3.5, -1.0, 0.0, 0.5, 2.0, 7.25, -np.inf, np.inf], np.float64)
    else:
        info = np.iinfo(npdt(dt))
        pool = np.array(sorted({int(info.min), int(info.min) + 1, 0, 1, 5,
                                int(info.max) - 1, int(info.max)}), dtype=object)
    idx = rng.integers(0, len(pool), size=shape)
    return np.array(pool[idx].tolist() if shape else pool[idx].item(),
                    dtype=npdt(dt)).reshape(shape)


def run_configs(ctx, op, dt, configs, xs):
    """configs: (shape, axis, keep, outputDataType or None)"""
    b = webnn.MLGraphBuilder(ctx)
    outs, feeds = {}, {}
    for i, ((shape, axis, keep, odt), x) in enumerate(zip(configs, xs)):
        xi = b.input(f"x{i}", {"dataType": dt, "shape": list(shape)})
        opts = {}
        if keep is not None:
            opts["keepDimensions"] = keep
        if odt is not None:
            opts["outputDataType"] = odt
        y = getattr(b, SNAKE[op])(xi, axis, opts)
        exp = list(shape)
        if keep:
            exp[axis] = 1
        else:
            del exp[axis]
        assert y.shape == tuple(exp), (y.shape, exp)
        assert y.data_type == (odt or "int32")
        outs[f"y{i}"] = y
        feeds[f"x{i}"] = x
    res = ctx.compute(b.build(outs), feeds)
    return [res[f"y{i}"] for i in range(len(configs))]


def check_all(op, dt, configs, xs, got):
    for (shape, axis, keep, odt), x, y in zip(configs, xs, got):
        check_exact(y, ref(op, x, axis, bool(keep)), odt or "int32",
                    what=f"{op} {dt} shape={shape} axis={axis} keep={keep} out={odt}")


@pytest.mark.parametrize("op,dt", CASES)
def test_random(ctx, op, dt):
    rng = rng_for("argminmax", op, dt)
    configs = []
    for rank in range(1, 6):
        for _ in range(3):
            shape = tuple(int(d) for d in rng.integers(1, 5, size=rank))
            axis = int(rng.integers(0, rank))
            keep = [None, False, True][int(rng.integers(0, 3))]
            odt = [None, "int32", "int64"][int(rng.integers(0, 3))]
            configs.append((shape, axis, keep, odt))
    configs += [((7,), 0, None, None), ((7,), 0, True, "int64"), ((3, 1, 4), 1, False, "int32"),
                ((1,), 0, False, None)]
    xs = [values(rng, dt, s) for s, _, _, _ in configs]
    check_all(op, dt, configs, xs, run_configs(ctx, op, dt, configs, xs))


@pytest.mark.parametrize("op", OPS)
def test_every_axis_rank4(ctx, op):
    rng = rng_for("every axis", op)
    shape = (3, 4, 5, 6)
    for dt in ("float32", "int8"):
        configs = [(shape, a, k, o) for a in range(4) for k in (False, True)
                   for o in ("int32", "int64")]
        xs = [values(rng, dt, shape) for _ in configs]
        check_all(op, dt, configs, xs, run_configs(ctx, op, dt, configs, xs))


@pytest.mark.parametrize("op", OPS)
def test_max_rank(ctx, op):
    rng = rng_for("rank 8", op)
    shape = (2, 1, 3, 2, 1, 2, 3, 2)
    configs = [(shape, a, k, None) for a in (0, 1, 4, 6, 7) for k in (False, True)]
    xs = [values(rng, "float32", shape) for _ in configs]
    check_all(op, "float32", configs, xs, run_configs(ctx, op, "float32", configs, xs))


@pytest.mark.parametrize("op", OPS)
def test_ties_and_nan(ctx, op):
    nan, inf = np.nan, np.inf
    x = np.array([[1, 1, 1, 1], [2, nan, 3, nan], [nan, 2, nan, 1], [-inf, inf, -inf, inf],
                  [5, 0, 5, 0], [0, 0, -0.0, -0.0]], np.float32)
    got = run_configs(ctx, op, "float32", [(x.shape, 1, False, None)], [x])[0]
    check_exact(got, ref(op, x, 1, False), "int32")
    first = {"argMax": [0, 1, 0, 1, 0, 0], "argMin": [0, 1, 0, 0, 1, 0]}[op]
    assert got.tolist() == first
    # along axis 0 (rows accumulated element-wise)
    got0 = run_configs(ctx, op, "float32", [(x.shape, 0, True, "int64")], [x])[0]
    check_exact(got0, ref(op, x, 0, True), "int64")


LARGE = [((1, 100000), 1), ((100000,), 0), ((50000, 3), 0), ((5, 30000), 1),
         ((200, 300), 1), ((300, 200), 0), ((4, 3000, 5), 1)]


@pytest.mark.parametrize("op,dt", [("argMax", "float32"), ("argMin", "float16"),
                                   ("argMax", "int32"), ("argMin", "uint64")])
def test_large(ctx, op, dt):
    rng = rng_for("large", op, dt)
    configs = [(s, a, False, "int64") for s, a in LARGE]
    xs = [values(rng, dt, s) for s, _, _, _ in configs]
    check_all(op, dt, configs, xs, run_configs(ctx, op, dt, configs, xs))
    # the extreme value twice, in the second half: the first one wins
    x = rng.integers(10, 1000, size=(120000,)).astype(npdt(dt))
    ext = 5000 if op == "argMax" else 1
    x[-1] = ext
    x[70000] = ext
    got = run_configs(ctx, op, dt, [(x.shape, 0, False, None)], [x])[0]
    assert int(got) == 70000


def test_support_limits(ctx):
    lim = ctx.op_support_limits()
    for op in OPS:
        l = lim[SNAKE[op]]
        assert sorted(l["input"]["data_types"]) == sorted(ALL)
        assert sorted(l["output"]["data_types"]) == ["int32", "int64"]
        assert l["input"]["rank_range"]["min"] == 1
        assert l["input"]["rank_range"]["max"] >= 5


def _raises(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w.lower() in msg.lower(), f"{msg!r} does not mention {w!r}"


@pytest.mark.parametrize("op", OPS)
def test_validation(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3, 4]})
    f = getattr(b, SNAKE[op])
    _raises(lambda: f(x, 3, label="ax"), op, "ax", "axis", "3")
    _raises(lambda: f(x, -1), op, "axis")
    _raises(lambda: f(x, 2 ** 32), op, "axis")
    for odt in ("float32", "float16", "uint32", "uint64", "int8", "uint8"):
        _raises(lambda: f(x, 0, output_data_type=odt, label="odt"), op, "odt",
                "outputDataType", odt)
    _raises(lambda: f(x, 0, output_data_type="int33"), op)
    s = b.input("s", {"dataType": "float32", "shape": []})
    _raises(lambda: f(s, 0, label="scalar"), op, "scalar", "input", "rank")
    # spellings
    assert getattr(b, op)(x, 1, {"keepDimensions": True, "outputDataType": "int64"}).shape \
        == (2, 1, 4)
    assert f(x, 2, keep_dimensions=False).data_type == "int32"
    assert f(x, 0).shape == (3, 4)
