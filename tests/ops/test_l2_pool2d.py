"""l2Pool2d: sqrt of the sum of squares of the valid taps of each window
(padding never counts; a window with no valid tap gives 0).

Reference: float64 (pool_ref in test_average_pool2d.py).  The kernel sums the
squares in float64 and rounds once, so one ulp of the output type covers it
(two for float16: float64 -> float32 -> float16 rounds twice).
"""
import numpy as np
import pytest

from .conftest import check_float, check_shape_dtype, op_dtypes, random_floats, rng_for
from .test_average_pool2d import CASES, expected_shape, pool_ref, run_pool

OP = "l2Pool2d"
DTYPES = op_dtypes(OP)


def ulps(dt):
    return 2 if dt == "float16" else 1


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,shape,options", CASES, ids=[c[0] for c in CASES])
def test_options(run, name, shape, options, dt, layout):
    rng = rng_for(OP, name, dt, layout)
    x = random_floats(rng, shape, dt)
    ref, _ = pool_ref(x, "l2", options)
    got = run_pool(run, "l2_pool2d", x, options, layout)
    check_shape_dtype(got.transpose(0, 2, 3, 1) if layout == "nhwc" else got, dt,
                      expected_shape(shape, options, layout))
    check_float(got, ref, dt, ulps=ulps(dt))


def test_hand_checked(run):
    # 3-4-12-84 chain: sqrt(3^2 + 4^2) = 5, sqrt(5^2 + 12^2) = 13
    x = np.array([[[[3, 4], [0, 0]], [[12, 0], [0, 5]]]], np.float32)  # [1, 2, 2, 2]
    got = run_pool(run, "l2_pool2d", x, {}, "nchw")
    np.testing.assert_array_equal(got.reshape(-1), [5.0, 13.0])
    got = run_pool(run, "l2_pool2d", x, {"windowDimensions": [1, 2], "padding": [0, 0, 1, 0]},
                   "nchw")
    # windows per row: [pad, a] and [a, b]
    np.testing.assert_array_equal(got.reshape(2, 2, 2),
                                  [[[3, 5], [0, 0]], [[12, 12], [0, 5]]])


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt, layout):
    # large values whose squares overflow float32 (summed in float64), tiny
    # ones, +-inf (square is +inf) and NaN
    rng = rng_for(OP, "special", dt, layout)
    x = random_floats(rng, (1, 2, 6, 6), dt, -2, 2)
    big = np.finfo(np.dtype(dt)).max
    x[0, 0, 0, 0] = big
    x[0, 0, 0, 1] = -big / 2
    x[0, 0, 3, 3] = np.finfo(np.dtype(dt)).tiny
    x[0, 0, 5, 5] = -np.inf
    x[0, 1, 2, 2] = np.nan
    opts = {"windowDimensions": [2, 3], "strides": [1, 2], "padding": [1, 0, 0, 1]}
    ref, _ = pool_ref(x, "l2", opts)
    got = run_pool(run, "l2_pool2d", x, opts, layout)
    check_float(got, ref, dt, ulps=ulps(dt))


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape,options", [
    ((2, 24, 33, 35), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((2, 600, 7, 7), {}),
    # above the kernel's threading threshold (128 Ki units of work)
    ((8, 32, 64, 64), {"windowDimensions": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1]}),
    ((24, 1280, 7, 7), {}),
])
def test_large(run, shape, options, layout):
    rng = rng_for(OP, "large", shape, layout)
    x = random_floats(rng, shape, "float32")
    ref, _ = pool_ref(x, "l2", options)
    got = run_pool(run, "l2_pool2d", x, options, layout)
    check_float(got, ref, "float32", ulps=1)
