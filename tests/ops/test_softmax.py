"""softmax(input, axis): exp(x - max) / sum(exp(x - max)) along `axis` (a
required argument in this version of the spec).

Reference: float64 NumPy on the same values, with the maximum subtracted
(the spec's emulation), rounded to the output type.  The kernel evaluates
exp in float32 (about 1 ulp), sums in double and multiplies by the rounded
reciprocal: within 4 float32 ulps; float16 results (computed in float32)
within one float16 ulp.  Special values follow the same float64 formulas: a
NaN or +Inf in a group, or a group of -Inf only, gives NaN for the whole
group.
"""
import itertools

import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, random_shape, rng_for

DTYPES = op_dtypes("softmax", "input")
ULPS = {"float32": 4, "float16": 1}


def sm_ref(x, axis):
    x64 = x.astype(np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(x64 - np.max(x64, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)


def run_sm(run, x, axis, label=None):
    if label is None:
        return run(lambda b, x: b.softmax(x, axis), {"x": x})
    return run(lambda b, x: b.softmax(x, axis, label=label), {"x": x})


def check(run, x, axis, dt, what=""):
    got = run_sm(run, x, axis)
    check_float(got, sm_ref(x, axis), dt, x.shape, ulps=ULPS[dt],
                what=f"softmax {dt} shape={x.shape} axis={axis} {what}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_every_axis(run, dt, rank):
    rng = rng_for("softmax-axis", dt, rank)
    for axis in range(rank):
        for lo, hi in [(-10, 10), (-1, 1), (50, 60)]:
            x = rng.uniform(lo, hi, size=random_shape(rng, rank, 6)).astype(npdt(dt))
            check(run, x, axis, dt, f"range=({lo}, {hi})")


def test_rank_8(run):
    rng = rng_for("softmax-rank8")
    x = rng.uniform(-5, 5, size=(2, 1, 3, 2, 1, 2, 3, 2)).astype(np.float32)
    for axis in (0, 4, 7):
        check(run, x, axis, "float32")


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    t = npdt(dt)
    x = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 200.0, 0.0]], t)
    got = run_sm(run, x, 1)
    expect = np.array([[0.25] * 4, [0.0, 0.0, 1.0, 0.0]], t)
    np.testing.assert_array_equal(got, expect)
    got = run_sm(run, np.array([[3.0, 5.0], [3.0, 5.0]], t), 0)
    np.testing.assert_array_equal(got, np.full((2, 2), 0.5, t))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_special_values(run, dt, axis):
    t = npdt(dt)
    fmax = float(np.finfo(t).max)
    groups = [
        [0.0, 1.0, 2.0, 3.0],
        [np.nan, 1.0, 2.0, 3.0],          # NaN: whole group NaN
        [np.inf, 1.0, 2.0, 3.0],          # +Inf: inf - inf = NaN
        [-np.inf, 1.0, -np.inf, 3.0],     # -Inf: exp(-inf) = 0
        [-np.inf] * 4,                    # all -Inf: NaN
        [fmax, -fmax, 0.0, fmax],         # huge values, no overflow
        [0.0, -90.0, -100.0, -104.0],     # exp underflows to float32 subnormals
        [0.0, -200.0, -1e30, 5.0],        # and to zero
        [7.0, 7.0, 7.0, 7.0],
    ]
    with np.errstate(over="ignore"):  # -1e30 is -Inf in float16
        x = np.array(groups, dtype=np.float64).astype(t)
    if axis == 0:
        x = np.ascontiguousarray(x.T)
    check(run, x, axis, dt, "specials")
    got = run_sm(run, x, axis)
    rows = got if axis == 1 else got.T
    assert np.isnan(rows[[1, 2, 4]]).all() and not np.isnan(rows[[0, 3, 5, 6, 7, 8]]).any()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,axis", [
    ((8, 12, 128, 128), 3),   # attention scores: last axis, threaded
    ((8, 12, 128, 128), 2),   # strided (columns), threaded
    ((3, 70000), 1),          # long rows
    ((2, 5000, 40), 1),       # long columns, narrow block
    ((100000, 3), 0),
])
def test_large(run, dt, shape, axis):
    rng = rng_for("softmax-large", dt, shape, axis)
    x = (rng.standard_normal(size=shape) * 4).astype(npdt(dt))
    check(run, x, axis, dt)


# ---- validation ----------------------------------------------------------------
_names = itertools.count()


def _operand(b, dt, shape):
    return b.input(f"v{next(_names)}", {"dataType": dt, "shape": list(shape)})


def _err(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in ("softmax",) + words:
        assert w in msg, f"{msg!r} does not mention {w!r}"


def test_validation(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = _operand(b, "float32", [2, 3, 4])
    # axis in [0, rank)
    _err(lambda: b.softmax(x, 3, label="S1"), "S1", "axis")
    _err(lambda: b.softmax(x, 100), "axis")
    with pytest.raises(TypeError):
        b.softmax(x, -1)
    # axis is required
    _err(lambda: b.softmax(x), "axis")
    # input: data type, rank >= 1
    _err(lambda: b.softmax(_operand(b, "int32", [2, 3]), 1, label="S2"), "S2", "input")
    _err(lambda: b.softmax(_operand(b, "float32", []), 0, label="S3"), "S3", "input")
    # valid forms (the axis also as a keyword / in the options)
    assert b.softmax(x, 2).shape == (2, 3, 4)
    assert b.softmax(x, axis=0).shape == (2, 3, 4)
    out = b.softmax(_operand(b, "float16", [5]), 0)
    assert out.data_type == "float16" and out.shape == (5,)
