"""dequantizeLinear(input, scale, zeroPoint).

Reference (float64, the spec's formula): scale and zeroPoint blockwise
broadcast to input's shape, then y = (x - zeroPoint) * scale, rounded once
to the output type (float32 or float16).  The kernel computes the same
double and rounds it once, so the comparison is exact.
"""
import numpy as np
import pytest

from .conftest import op_dtypes, rng_for
from .test_gather import assert_bits, build_one, raises_msg
from .test_quantize_linear import random_q, random_scales, ref_dequantize, scale_shapes

Q_TYPES = op_dtypes("dequantizeLinear", "input")
F_TYPES = op_dtypes("dequantizeLinear", "scale")


def run_dq(run, x, s, z):
    return run(lambda b, x, s, z: b.dequantize_linear(x, s, z), {"x": x, "s": s, "z": z})


@pytest.mark.parametrize("qt", Q_TYPES)
@pytest.mark.parametrize("ft", F_TYPES)
def test_per_tensor_per_axis_blockwise(run, qt, ft):
    rng = rng_for("dequantizeLinear", qt, ft)
    for shape in [(6,), (4, 6), (2, 4, 6), (2, 3, 2, 4), (3, 1, 4, 1, 2, 2)]:
        for ss in scale_shapes(rng, shape):
            s = random_scales(rng, ss, ft)
            z = random_q(rng, ss, qt)
            x = random_q(rng, shape, qt)
            assert_bits(run_dq(run, x, s, z), ref_dequantize(x, s, z, ft), ft)


@pytest.mark.parametrize("qt", Q_TYPES)
@pytest.mark.parametrize("ft", F_TYPES)
def test_limits_and_rank0(run, qt, ft):
    """Type extremes for input and zero point (largest differences, overflow
    of float16 to Inf), arbitrary (not power-of-two) scales."""
    info = np.iinfo(np.dtype(qt))
    ext = np.array([int(info.min), int(info.max), 0, 1, int(info.max) - 1], np.dtype(qt))
    x = np.repeat(ext[None, :], 5, axis=0)
    z = ext.reshape(5, 1)
    rng = rng_for("dequantize limits", qt, ft)
    s = rng.uniform(0.01, 3.0, size=(5, 1)).astype(np.dtype(ft))
    assert_bits(run_dq(run, x, s, z), ref_dequantize(x, s, z, ft), ft)
    x0, s0, z0 = np.array(7, np.dtype(qt)), np.array(0.25, np.dtype(ft)), np.array(3, np.dtype(qt))
    got = run_dq(run, x0, s0, z0)
    assert got.shape == () and got.dtype == np.dtype(ft) and got == 1.0


def test_hand_checked(run):
    x = np.array([[0, 128, 255], [1, 2, 3]], np.uint8)
    s = np.array([[0.5], [2.0]], np.float32)
    z = np.array([[128], [2]], np.uint8)
    np.testing.assert_array_equal(run_dq(run, x, s, z), [[-64, 0, 63.5], [-2, 0, 2]])


def test_float16_single_rounding(run):
    """(x - z) * s needing more than float32's precision: rounded once to
    float16.  x = m * 2**20 + 2**19 + d lies just off a float16 midpoint (for
    s = 2**-20), where float32 would round onto the midpoint first and a
    second rounding to float16 would then go the wrong way."""
    rng = rng_for("f16 rounding")
    m = rng.integers(1024, 2048, size=(32, 32))
    d = rng.integers(1, 64, size=(32, 32)) * rng.choice([-1, 1], size=(32, 32))
    sign = rng.choice([-1, 1], size=(32, 32))
    x = (sign * (m * 2**20 + 2**19 + d)).astype(np.int32)
    z = np.zeros((1, 1), np.int32)
    s = np.array([[2.0 ** -20]], np.float16)
    exp = ref_dequantize(x, s, z, "float16")
    twice = (x.astype(np.float64) * 2.0 ** -20).astype(np.float32).astype(np.float16)
    assert np.count_nonzero(twice != exp) > 100  # the case is really exercised
    assert_bits(run_dq(run, x, s, z), exp, "float16")


def test_large_threaded(run):
    rng = rng_for("dequantize large")
    for shape, ss in [((256, 512), (1, 1)), ((256, 512), (1, 512)), ((64, 2048), (8, 16)),
                      ((256, 512), (256, 1)), ((128, 512), (128, 512)), ((8, 4096), (2, 2))]:
        s = random_scales(rng, ss, "float32")
        z = random_q(rng, ss, "int8")
        x = random_q(rng, shape, "int8")
        assert_bits(run_dq(run, x, s, z), ref_dequantize(x, s, z, "float32"), "float32")


# ---- validation ----------------------------------------------------------------
def shapes(x=("uint8", [4, 6]), s=("float32", [2, 3]), z=("uint8", [2, 3])):
    return {"x": x, "s": s, "z": z}


@pytest.mark.parametrize("kw,arg,word", [
    (dict(z=("int8", [2, 3])), "zeroPoint", "data type"),
    (dict(x=("float32", [4, 6])), "input", "data type"),
    (dict(x=("int64", [4, 6]), z=("int64", [2, 3])), "input", "data type"),
    (dict(s=("int32", [2, 3])), "scale", "data type"),
    (dict(s=("float32", [1, 2, 3])), "scale", "rank"),
    (dict(z=("uint8", [6])), "zeroPoint", "rank"),
    (dict(z=("uint8", [2, 1])), "zeroPoint", "shape"),
    (dict(s=("float32", [4, 4]), z=("uint8", [4, 4])), "scale", "blockwise"),
    (dict(s=("float32", [8, 6]), z=("uint8", [8, 6])), "scale", "blockwise"),
])
def test_validation(ctx, kw, arg, word):
    with raises_msg(TypeError, "dequantizeLinear", "dq", arg, word):
        build_one(ctx, "dequantize_linear", shapes(**kw), label="dq")


def test_output_descriptor(ctx):
    for ft in F_TYPES:
        out = build_one(ctx, "dequantize_linear", shapes(x=("int32", [4, 6]), s=(ft, [4, 1]),
                                                        z=("int32", [4, 1])))
        assert out.shape == (4, 6) and out.data_type == ft
