"""maxPool2d: the maximum of the valid taps of each window (padding never
counts; a window with no valid tap gives -Infinity, or the type's smallest
value for integers; NaN propagates).  Every data type of the spec's table.

Reference: pool_ref in test_average_pool2d.py (float64 for floats, the
input's own type for integers).  Max is exact: no tolerance.
"""
import numpy as np
import pytest

import webnn

from .conftest import (check_exact, check_float, check_shape_dtype, is_float, op_dtypes,
                       random_values, rng_for, specials)
from .test_average_pool2d import CASES, expected_shape, pool_ref, run_pool

OP = "maxPool2d"
DTYPES = op_dtypes(OP)


def check(got, ref, dt):
    if is_float(dt):
        check_float(got, ref, dt)
    else:
        check_exact(got, ref, dt)


def test_all_types_supported():
    assert set(DTYPES) == {"float32", "float16", "int32", "uint32", "int64", "uint64",
                           "int8", "uint8"}


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,shape,options", CASES, ids=[c[0] for c in CASES])
def test_options(run, name, shape, options, dt, layout):
    rng = rng_for(OP, name, dt, layout)
    x = random_values(rng, shape, dt)
    ref, _ = pool_ref(x, "max", options)
    got = run_pool(run, "max_pool2d", x, options, layout)
    check_shape_dtype(got.transpose(0, 2, 3, 1) if layout == "nhwc" else got, dt,
                      expected_shape(shape, options, layout))
    check(got, ref, dt)


def test_hand_checked(run):
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    got = run_pool(run, "max_pool2d", x, {"windowDimensions": [3, 3]}, "nchw")
    np.testing.assert_array_equal(got.reshape(-1), [11, 12, 15, 16])
    # negative values: the padding must not contribute zeros
    got = run_pool(run, "max_pool2d", -x, {"windowDimensions": [2, 2], "padding": [1, 1, 1, 1],
                                           "strides": [2, 2]}, "nhwc")
    np.testing.assert_array_equal(got.reshape(-1), [-1, -2, -4, -5, -6, -8, -13, -14, -16])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt, layout):
    # the type's extremes (and NaN, +-inf, -0 for floats) in every window
    rng = rng_for(OP, "special", dt, layout)
    sp = specials(dt)
    # 21 channels: in nhwc, float32 runs 8 at a time in registers, then 5
    x = random_values(rng, (2, 21 if layout == "nhwc" else 3, 7, 6), dt)
    flat = x.reshape(-1)
    idx = rng.choice(flat.size, size=min(flat.size, 3 * sp.size), replace=False)
    flat[idx] = np.resize(sp, idx.size)
    for opts in ({"windowDimensions": [2, 2]},
                 {"windowDimensions": [3, 2], "strides": [2, 3], "padding": [1, 1, 0, 1],
                  "outputShapeRounding": "ceil"}):
        ref, _ = pool_ref(x, "max", opts)
        got = run_pool(run, "max_pool2d", x, opts, layout)
        check(got, ref, dt)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", ["float32", "int8", "uint64"])
@pytest.mark.parametrize("shape,options", [
    ((8, 16, 56, 56), {"windowDimensions": [3, 3], "strides": [2, 2]}),
    ((2, 24, 33, 35), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((2, 600, 7, 7), {}),
    # above the kernel's threading threshold (128 Ki units of work)
    ((8, 32, 64, 64), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((24, 1280, 7, 7), {}),
    ((1, 3, 40, 41), {"windowDimensions": [5, 4], "strides": [3, 2], "dilations": [2, 3],
                      "padding": [2, 0, 1, 3], "outputShapeRounding": "ceil"}),
])
def test_large(run, shape, options, layout, dt):
    rng = rng_for(OP, "large", shape, layout, dt)
    x = random_values(rng, shape, dt)
    ref, _ = pool_ref(x, "max", options)
    got = run_pool(run, "max_pool2d", x, options, layout)
    check(got, ref, dt)


def test_integer_types_from_support_limits(ctx):
    lim = ctx.op_support_limits()["max_pool2d"]
    assert set(lim["input"]["data_types"]) == set(DTYPES)
    assert lim["input"]["rank_range"]["min"] == 4 and lim["input"]["rank_range"]["max"] == 4
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "uint64", "shape": [1, 1, 3, 3]})
    assert b.max_pool2d(x).data_type == "uint64"
