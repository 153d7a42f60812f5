"""resample2d: nearest-neighbor and linear resampling of any two distinct
axes of a 4-D tensor, by scales or sizes, in every data type of the spec's
table (float32, float16, int8, uint8).

Reference, from the spec's definitions with exact rational coordinates:
scale = outputSize / inputSize,
c = clamp((o + 0.5) / scale - 0.5, 0, inputSize - 1); nearest takes
ceil(c - 0.5); linear blends floor(c) and ceil(c) with t = c - floor(c),
evaluated in float64 in the spec's order, x being the later of the two axes
and y the earlier one (vy0, vy1, then along y).  Integer outputs round to
nearest, ties to even (the kernel computes the same float64 expression, so
they must match exactly).  Float outputs: a few ulps of float32 (the kernel
blends in float32) plus one ulp of the output type.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import webnn

from .conftest import (check_exact, check_float, check_shape_dtype, is_float, npdt, op_dtypes,
                       random_values, rng_for)

OP = "resample2d"
DTYPES = op_dtypes(OP)
EPS32 = 2.0**-23


def out_shape(shape, options):
    axes = options.get("axes", [2, 3])
    scales = options.get("scales", [1.0, 1.0])
    out = list(shape)
    for i, a in enumerate(axes):
        if "sizes" in options:
            out[a] = options["sizes"][i]
        else:
            # the scale is a float (IDL float): round it first
            out[a] = math.floor(shape[a] * float(np.float32(scales[i])))
    return tuple(out)


def coords(n_in, n_out):
    """[(nearest, x0, x1, t)] per output coordinate, exactly."""
    res = []
    for o in range(n_out):
        c = Fraction(2 * o + 1, 2) * Fraction(n_in, n_out) - Fraction(1, 2)
        c = min(max(c, Fraction(0)), Fraction(n_in - 1))
        x0, x1 = math.floor(c), math.ceil(c)
        res.append((math.ceil(c - Fraction(1, 2)), x0, x1, float(c - x0)))
    return res


def resample_ref(x, options):
    mode = options.get("mode", "nearest-neighbor")
    axes = options.get("axes", [2, 3])
    shape = out_shape(x.shape, options)
    ya, xa = sorted(axes)
    cy = coords(x.shape[ya], shape[ya])
    cx = coords(x.shape[xa], shape[xa])
    xs = x.astype(np.float64)
    if mode == "nearest-neighbor":
        iy = [c[0] for c in cy]
        ix = [c[0] for c in cx]
        return np.take(np.take(xs, iy, axis=ya), ix, axis=xa)

    def pick(iy, ix):
        return np.take(np.take(xs, iy, axis=ya), ix, axis=xa)

    y0, y1 = [c[1] for c in cy], [c[2] for c in cy]
    x0, x1 = [c[1] for c in cx], [c[2] for c in cx]
    bshape = [1] * 4
    bshape[ya] = len(cy)
    ty = np.array([c[3] for c in cy]).reshape(bshape)
    bshape = [1] * 4
    bshape[xa] = len(cx)
    tx = np.array([c[3] for c in cx]).reshape(bshape)
    vy0 = pick(y0, x0) * (1 - tx) + pick(y0, x1) * tx
    vy1 = pick(y1, x0) * (1 - tx) + pick(y1, x1) * tx
    return vy0 * (1 - ty) + vy1 * ty


def check(got, ref, x, dt, shape):
    if is_float(dt):
        check_shape_dtype(got, dt, shape)
        # float32 blending: |err| <= 8 eps * max|x| of the input
        atol = 8 * EPS32 * float(np.max(np.abs(x.astype(np.float64)), initial=0))
        check_float(got, ref, dt, ulps=1, atol=atol)
    else:
        info = np.iinfo(npdt(dt))
        check_exact(got, np.clip(np.rint(ref), info.min, info.max), dt, shape)


def run_resample(run, x, options):
    return run(lambda b, x: b.resample2d(x, options), {"x": x})


AXES = [[2, 3], [3, 2], [1, 2], [2, 1], [0, 1], [0, 3], [1, 3], [3, 0], [0, 2]]

# (name, input shape, options without mode / axes)
CASES = [
    ("default-scales", (2, 3, 4, 5), {}),
    ("up-scales-2x3", (1, 2, 3, 4), {"scales": [2.0, 3.0]}),
    ("down-scales", (2, 2, 8, 9), {"scales": [0.5, 0.34]}),
    ("mixed-scales", (1, 3, 5, 4), {"scales": [1.5, 0.75]}),
    ("noninteger-up", (2, 1, 3, 7), {"scales": [1.7, 1.3]}),
    ("up-sizes", (1, 2, 3, 3), {"sizes": [7, 5]}),
    ("down-sizes", (2, 2, 9, 7), {"sizes": [4, 2]}),
    ("sizes-over-scales", (1, 2, 4, 5), {"sizes": [6, 3], "scales": [99.0, 0.01]}),
    ("to-one", (1, 2, 5, 6), {"sizes": [1, 1]}),
    ("from-one", (2, 1, 1, 1), {"sizes": [3, 4]}),
]


@pytest.mark.parametrize("mode", [None, "nearest-neighbor", "linear"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,shape,options", CASES, ids=[c[0] for c in CASES])
def test_options(run, name, shape, options, dt, mode):
    rng = rng_for(OP, name, dt, mode)
    opts = dict(options)
    if mode:
        opts["mode"] = mode
    x = random_values(rng, shape, dt)
    ref = resample_ref(x, opts)
    got = run_resample(run, x, opts)
    check(got, ref, x, dt, out_shape(shape, opts))


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("axes", AXES, ids=[f"{a}{b}" for a, b in AXES])
def test_axes(run, axes, dt, mode):
    rng = rng_for(OP, "axes", tuple(axes), dt, mode)
    shape = (3, 4, 5, 2)
    for options in ({"scales": [1.5, 2.0]}, {"sizes": [2, 3]}):
        opts = dict(options, axes=axes, mode=mode)
        x = random_values(rng, shape, dt)
        ref = resample_ref(x, opts)
        got = run_resample(run, x, opts)
        check(got, ref, x, dt, out_shape(shape, opts))


def test_hand_checked_spec_example(run):
    # the spec's note: linear [4, 4] -> [8, 8]
    x = np.array([[0, 1, 2, 3], [0, 1, 2, 3], [12, 13, 14, 15], [12, 13, 14, 15]],
                 np.float32).reshape(1, 1, 4, 4)
    got = run_resample(run, x, {"mode": "linear", "sizes": [8, 8]}).reshape(8, 8)
    row = np.array([0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])
    exp = np.stack([row, row, row, row + 3, row + 9, row + 12, row + 12, row + 12])
    np.testing.assert_array_equal(got, exp.astype(np.float32))


def test_hand_checked_nearest(run):
    # half-pixel centres; ties take the smaller index
    x = np.array([10, 20], np.float32).reshape(1, 1, 1, 2)
    got = run_resample(run, x, {"sizes": [1, 3]})
    np.testing.assert_array_equal(got.reshape(-1), [10, 10, 20])
    x = np.array([10, 20, 30], np.float32).reshape(1, 1, 1, 3)
    np.testing.assert_array_equal(run_resample(run, x, {"sizes": [1, 1]}).reshape(-1), [20])
    # scale 1.5 on 3 gives 4 outputs: the coordinates use 4 / 3, not 1.5
    np.testing.assert_array_equal(run_resample(run, x, {"scales": [1.0, 1.5]}).reshape(-1),
                                  [10, 20, 20, 30])
    x = np.array([10, 20, 30, 40], np.float32).reshape(1, 1, 1, 4)
    np.testing.assert_array_equal(run_resample(run, x, {"scales": [1.0, 0.75]}).reshape(-1),
                                  [10, 20, 40])
    # nhwc-style axes, and reversed axes keep the order of sizes
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 2, 3, 2)
    got = run_resample(run, x, {"axes": [3, 2], "sizes": [3, 4]})
    assert got.shape == (1, 2, 4, 3)
    np.testing.assert_array_equal(got[0, 0], [[1, 1, 2], [3, 3, 4], [3, 3, 4], [5, 5, 6]])


def test_integer_rounding(run):
    # uint8 / int8 linear: ties round to even, results stay in range
    x = np.array([0, 1, 254, 255], np.uint8).reshape(1, 1, 1, 4)
    got = run_resample(run, x, {"mode": "linear", "sizes": [1, 8]})
    # coordinates -0.25 0.25 0.75 1.25 1.75 2.25 2.75 3.25 (clamped)
    ref = np.array([0, 0.25, 0.75, 1.0 + 0.25 * 253, 1 + 0.75 * 253, 254.25, 254.75, 255])
    np.testing.assert_array_equal(got.reshape(-1), np.rint(ref).astype(np.uint8))
    # 2 -> 1 samples at 0.5: the mean, ties to even
    x = np.array([1, 2, 2, 3, 4, 5, 7, 6], np.uint8).reshape(1, 4, 1, 2)
    got = run_resample(run, x, {"mode": "linear", "sizes": [1, 1]})
    np.testing.assert_array_equal(got.reshape(-1), [2, 2, 4, 6])
    x = np.array([-3, -2, -128, 127], np.int8).reshape(1, 2, 1, 2)
    got = run_resample(run, x, {"mode": "linear", "sizes": [1, 1]})
    np.testing.assert_array_equal(got.reshape(-1), [-2, 0])
    x = np.array([-128, 127, -3, 4], np.int8).reshape(1, 1, 2, 2)
    got = run_resample(run, x, {"mode": "linear", "sizes": [3, 3]})
    assert got.dtype == np.int8
    check(got, resample_ref(x, {"mode": "linear", "sizes": [3, 3]}), x, "int8", (1, 1, 3, 3))


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
def test_special_values(run, mode):
    # inf / NaN flow through linear blends (inf * 0 is NaN, as the formula says)
    x = np.array([1.0, np.inf, -2.0, np.nan, 3.0, -np.inf, 0.5, 7.0, -1.0],
                 np.float32).reshape(1, 1, 3, 3)
    opts = {"mode": mode, "sizes": [5, 4]}
    with np.errstate(invalid="ignore"):
        ref = resample_ref(x, opts)
    got = run_resample(run, x, opts)
    check_float(got, ref, "float32", ulps=1)


@pytest.mark.parametrize("mode", ["nearest-neighbor", "linear"])
@pytest.mark.parametrize("shape,options", [
    ((2, 16, 40, 40), {"scales": [2.0, 2.0]}),
    ((2, 40, 40, 16), {"sizes": [27, 53], "axes": [1, 2]}),
    ((2, 8, 64, 48), {"sizes": [20, 33]}),
])
def test_large(run, shape, options, mode):
    rng = rng_for(OP, "large", shape, mode)
    opts = dict(options, mode=mode)
    x = random_values(rng, shape, "float32")
    got = run_resample(run, x, opts)
    check(got, resample_ref(x, opts), x, "float32", out_shape(shape, opts))


# ---- validation -------------------------------------------------------------
INVALID = [
    ({"scales": [2.0]}, "scales"),
    ({"scales": [1.0, 1.0, 1.0]}, "scales"),
    ({"scales": [0.0, 1.0]}, "scales"),
    ({"scales": [1.0, -2.0]}, "scales"),
    ({"scales": [0.1, 1.0]}, "scales"),          # floor(4 * 0.1) = 0
    ({"scales": [1e30, 1.0]}, "scales"),         # not a valid dimension
    ({"sizes": [2]}, "sizes"),
    ({"sizes": [2, 2, 2]}, "sizes"),
    ({"sizes": [0, 2]}, "sizes"),
    ({"sizes": [2, 2**31]}, "sizes"),            # not a valid dimension
    ({"axes": [2, 2]}, "axes"),
    ({"axes": [1, 4]}, "axes"),
    ({"axes": [2]}, "axes"),
    ({"axes": [0, 1, 2]}, "axes"),
    ({"sizes": 3}, "sizes"),
    ({"axes": 2}, "axes"),
]


@pytest.mark.parametrize("options,arg", INVALID)
def test_invalid_options(ctx, options, arg):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 2, 4, 4]})
    with pytest.raises(TypeError) as info:
        b.resample2d(x, dict(options, label="rs-label"))
    msg = str(info.value)
    assert "resample2d" in msg and "rs-label" in msg and arg in msg, msg


@pytest.mark.parametrize("options", [{"mode": "bilinear"}, {"mode": "nearest"},
                                     {"scales": [1.0, float("nan")]},
                                     {"scales": [float("inf"), 1.0]},
                                     {"scales": [1.0, 1e39]},  # Infinity as a float
                                     {"scales": 2.0}, {"scales": ["2", 1.0]},
                                     {"sizes": [-1, 2]}, {"axes": [-1, 2]}])
def test_invalid_option_values(ctx, options):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 2, 4, 4]})
    with pytest.raises(TypeError) as info:
        b.resample2d(x, options)
    assert "resample2d" in str(info.value)


@pytest.mark.parametrize("dt", ["int32", "uint32", "int64", "uint64"])
def test_invalid_data_type(ctx, dt):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": dt, "shape": [1, 1, 2, 2]})
    with pytest.raises(TypeError) as info:
        b.resample2d(x, {"label": "dt-label"})
    assert "resample2d" in str(info.value) and "input" in str(info.value)


@pytest.mark.parametrize("shape", [(2, 2, 2), (1, 1, 1, 2, 2), ()])
def test_invalid_rank(ctx, shape):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": list(shape)})
    with pytest.raises(TypeError) as info:
        b.resample2d(x)
    assert "resample2d" in str(info.value) and "input" in str(info.value)


def test_output_shapes(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float16", "shape": [1, 3, 5, 7]})
    assert b.resample2d(x).shape == (1, 3, 5, 7)
    assert b.resample2d(x, scales=[2.0, 0.5]).shape == (1, 3, 10, 3)
    assert b.resample2d(x, {"scales": [1.1, 1.1]}).shape == (1, 3, 5, 7)  # floor(5.5)
    assert b.resample2d(x, sizes=[2, 9], axes=[3, 1]).shape == (1, 9, 5, 2)
    assert b.resample2d(x, sizes=[4, 4], axes=[0, 3]).shape == (4, 3, 5, 4)
    # the float scale is rounded to float32 before the product
    assert b.resample2d(x, scales=[1.0, 0.1 * 10]).shape == (1, 3, 5, 7)
    assert b.resample2d(x, scales=[1, 2]).data_type == "float16"
    assert out_shape((1, 3, 5, 7), {"scales": [0.3, 1.0]}) == (1, 3, 1, 7)
