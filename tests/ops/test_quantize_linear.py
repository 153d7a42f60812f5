"""quantizeLinear(input, scale, zeroPoint).

Reference (float64, the spec's formula): scale and zeroPoint blockwise
broadcast to input's shape (each element repeated input.shape[d] /
scale.shape[d] times along d), then
    y = clip(rint(x / scale) + zeroPoint, type min, type max)
with rint rounding half to even; NaN gives 0 (as the kernel documents).
Integer results are compared exactly.

The helpers (expand, ref_quantize, ref_dequantize, scale_shapes) are shared
with test_dequantize_linear.py.
"""
import numpy as np
import pytest

from .conftest import f64, npdt, op_dtypes, rng_for
from .test_gather import build_one, raises_msg

IN_TYPES = op_dtypes("quantizeLinear", "input")
Q_TYPES = op_dtypes("quantizeLinear", "zeroPoint")


# ---- shared helpers ----------------------------------------------------------
def expand(a, shape):
    """Blockwise broadcast (#blockwise-broadcasting) of a to shape."""
    a = np.asarray(a)
    for d in range(a.ndim):
        a = np.repeat(a, shape[d] // a.shape[d], axis=d)
    return a


def ref_quantize(x, s, z, odt):
    with np.errstate(all="ignore"):
        v = np.rint(f64(x) / expand(f64(s), x.shape)) + expand(f64(z), x.shape)
        info = np.iinfo(npdt(odt))
        v = np.where(np.isnan(v), 0.0, np.clip(v, info.min, info.max))
    # exact: integer-valued doubles within the type's range
    return np.array([int(t) for t in v.reshape(-1)], dtype=object).reshape(v.shape) \
        .astype(npdt(odt))


def ref_dequantize(x, s, z, odt):
    v = (f64(x) - expand(f64(z), x.shape)) * expand(f64(s), x.shape)
    with np.errstate(over="ignore"):  # float16 overflows to Inf
        return v.astype(npdt(odt))


def scale_shapes(rng, shape):
    """Per-tensor, per-axis (each axis) and a random block-wise shape."""
    out = [tuple(1 for _ in shape)]
    for d in range(len(shape)):
        out.append(tuple(shape[d] if k == d else 1 for k in range(len(shape))))
    divs = []
    for n in shape:
        ds = [k for k in range(1, n + 1) if n % k == 0]
        divs.append(int(rng.choice(ds)))
    out.append(tuple(divs))
    out.append(tuple(shape))  # one scale per element
    return out


def random_scales(rng, shape, dt):
    """Positive scales, about half of them powers of two (exact ties)."""
    e = rng.uniform(-6, 3, size=shape)
    e = np.where(rng.random(shape) < 0.5, np.rint(e), e)
    return (2.0 ** e).astype(npdt(dt))


def random_q(rng, shape, qt):
    info = np.iinfo(npdt(qt))
    return rng.integers(int(info.min), int(info.max), size=shape, endpoint=True,
                        dtype=npdt(qt))


def run_q(run, x, s, z):
    return run(lambda b, x, s, z: b.quantize_linear(x, s, z), {"x": x, "s": s, "z": z})


def check_int(got, exp):
    assert got.dtype == exp.dtype and got.shape == exp.shape, (got.dtype, got.shape, exp.shape)
    if not np.array_equal(got, exp):
        bad = np.argwhere(got != exp)[:5]
        pytest.fail(f"{int(np.count_nonzero(got != exp))} differ; at "
                    f"{[tuple(int(i) for i in b) for b in bad]}: got "
                    f"{[got[tuple(b)] for b in bad]}, expected {[exp[tuple(b)] for b in bad]}",
                    pytrace=False)


def inputs_for(rng, shape, s, z, dt, qt):
    """Inputs spread over the quantized range and beyond it (saturation),
    with exact ties (k + 0.5) * scale for power-of-two scales."""
    info = np.iinfo(npdt(qt))
    se, ze = expand(f64(s), shape), expand(f64(z), shape)
    lo, hi = float(info.min) - ze, float(info.max) - ze
    span = np.maximum(hi - lo, 1.0)
    k = rng.uniform(lo - 0.05 * span, hi + 0.05 * span)
    k = np.where(rng.random(shape) < 0.3, np.round(np.clip(k, -3000, 3000)) + 0.5, k)
    v = k * se
    if dt == "float16":  # keep most values finite (Inf is tested separately)
        v = np.clip(v, -65000.0, 65000.0)
    return v.astype(npdt(dt))


# ---- tests -----------------------------------------------------------------------
@pytest.mark.parametrize("dt", IN_TYPES)
@pytest.mark.parametrize("qt", Q_TYPES)
def test_per_tensor_per_axis_blockwise(run, dt, qt):
    rng = rng_for("quantizeLinear", dt, qt)
    for shape in [(6,), (4, 6), (2, 4, 6), (2, 3, 2, 4), (3, 1, 4, 1, 2, 2)]:
        for ss in scale_shapes(rng, shape):
            s = random_scales(rng, ss, dt)
            z = random_q(rng, ss, qt)
            x = inputs_for(rng, shape, s, z, dt, qt)
            check_int(run_q(run, x, s, z), ref_quantize(x, s, z, qt))


@pytest.mark.parametrize("dt", IN_TYPES)
@pytest.mark.parametrize("qt", Q_TYPES)
def test_rank0_and_specials(run, dt, qt):
    rng = rng_for("quantizeLinear specials", dt, qt)
    x = np.array(3.75, npdt(dt))
    s = np.array(0.5, npdt(dt))
    z = np.array(1, npdt(qt))
    got = run_q(run, x, s, z)
    assert got.shape == () and got.dtype == npdt(qt)
    assert got == 9  # rint(7.5) = 8 (half to even), + 1
    fin = np.finfo(npdt(dt))
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, fin.max, -fin.max, fin.tiny,
                  0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, 127.5, 128.5, -128.5, 255.5, 256.0],
                 npdt(dt))
    s = np.ones(1, npdt(dt))
    for zv in (0, 1):
        z = np.array([zv], npdt(qt))
        check_int(run_q(run, x, s, z), ref_quantize(x, s, z, qt))
    z = random_q(rng, (1,), qt)
    check_int(run_q(run, x, s, z), ref_quantize(x, s, z, qt))


def test_hand_checked_saturation_and_rounding(run):
    x = np.array([-1000, -128.5, -0.5, 0.5, 1.5, 2.5, 126.6, 1000], np.float32)
    s = np.ones(1, np.float32)
    np.testing.assert_array_equal(run_q(run, x, s, np.zeros(1, np.int8)),
                                  [-128, -128, 0, 0, 2, 2, 127, 127])
    np.testing.assert_array_equal(run_q(run, x, s, np.full(1, 128, np.uint8)),
                                  [0, 0, 128, 128, 130, 130, 255, 255])
    big = np.array([-3e9, 3e9, 5e9], np.float32)
    np.testing.assert_array_equal(run_q(run, big, s, np.zeros(1, np.int32)),
                                  [-2**31, 2**31 - 1, 2**31 - 1])
    np.testing.assert_array_equal(run_q(run, big, s, np.zeros(1, np.uint32)),
                                  [0, 3000000000, 2**32 - 1])


@pytest.mark.parametrize("dt", IN_TYPES)
@pytest.mark.parametrize("qt", Q_TYPES)
def test_round_trip_at_limits(run, dt, qt):
    """quantize(dequantize(q)) in one graph: identity for every int8/uint8
    value with power-of-two scales; at the int32/uint32 limits, the float
    rounding of the middle value saturates back to the limit."""
    rng = rng_for("round trip", dt, qt)
    info = np.iinfo(npdt(qt))
    if npdt(qt).itemsize == 1:
        q = np.arange(int(info.min), int(info.max) + 1).astype(npdt(qt)).reshape(16, 16)
    else:
        vals = [int(info.min), int(info.min) + 1, -1, 0, 1, 2, 1000, int(info.max) - 1,
                int(info.max)]
        q = np.array([v for v in vals if info.min <= v <= info.max] * 2,
                     npdt(qt)).reshape(2, -1)
    s = (2.0 ** rng.integers(-3, 3, size=(q.shape[0], 1))).astype(npdt(dt))
    z = random_q(rng, (q.shape[0], 1), qt)
    if npdt(qt).itemsize > 1:
        s[:], z[:] = 1, 0

    def build(b, q, s, z):
        return b.quantize_linear(b.dequantize_linear(q, s, z), s, z)

    got = run(build, {"q": q, "s": s, "z": z})
    exp = ref_quantize(ref_dequantize(q, s, z, dt), s, z, qt)
    check_int(got, exp)
    if npdt(qt).itemsize == 1:
        check_int(got, q)
    else:
        assert got.reshape(-1)[0] == info.min and got.reshape(-1)[-1] == info.max


def test_large_threaded(run):
    rng = rng_for("quantize large")
    for shape, ss in [((256, 512), (1, 1)), ((256, 512), (256, 1)), ((64, 2048), (8, 16)),
                      ((256, 512), (1, 512)), ((128, 512), (128, 512)), ((8, 4096), (2, 2))]:
        s = random_scales(rng, ss, "float32")
        z = random_q(rng, ss, "uint8")
        x = inputs_for(rng, shape, s, z, "float32", "uint8")
        check_int(run_q(run, x, s, z), ref_quantize(x, s, z, "uint8"))



@pytest.mark.parametrize("qt", ["int8", "uint8"])
@pytest.mark.parametrize("scale", [0.37, 1 / 3, 2.0 ** -7, 7.5e-3, 1e-40, 3e38])
def test_vector_loops(run, qt, scale):
    """float32 -> int8 / uint8 per tensor runs the vector loop of the CPU's
    level (AVX-512: 64 values a step, AVX2: 32, the tail masked; test-isa
    reruns this capped), float32 first and double near a tie, the chunk
    again by division where a quotient came within reach of one (1e-40:
    1 / scale is no float32, the double path throughout).  Lengths around
    the steps; values near ties, NaN, infinities, zeros, huge ones."""
    rng = rng_for("quantize vector", qt, scale)
    s = np.array([scale], np.float32)
    z = random_q(rng, (1,), qt)
    for n in (1, 7, 8, 15, 31, 32, 33, 63, 64, 65, 100, 1027, 4099):
        k = rng.uniform(-400, 400, n)
        k = np.where(rng.random(n) < 0.4, np.round(k) + 0.5, k)  # ties and near ties
        with np.errstate(over="ignore"):  # 3e38: most overflow to inf
            x = (k * np.float64(s[0])).astype(np.float32)
        specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 3e38, -3e38, 1e-45],
                            np.float32)
        x[rng.integers(0, n, min(n, 4))] = rng.choice(specials, min(n, 4))
        check_int(run_q(run, x, s, z), ref_quantize(x, s, z, qt))

# ---- validation ----------------------------------------------------------------
def shapes(x=("float32", [4, 6]), s=("float32", [2, 3]), z=("uint8", [2, 3])):
    return {"x": x, "s": s, "z": z}


@pytest.mark.parametrize("kw,arg,word", [
    (dict(s=("float16", [2, 3])), "scale", "data type"),
    (dict(x=("int8", [4, 6])), "input", "data type"),
    (dict(z=("int64", [2, 3])), "zeroPoint", "data type"),
    (dict(z=("float32", [2, 3])), "zeroPoint", "data type"),
    (dict(s=("float32", [2, 3, 1])), "scale", "rank"),
    (dict(z=("uint8", [6])), "zeroPoint", "rank"),
    (dict(z=("uint8", [2, 2])), "zeroPoint", "shape"),
    (dict(s=("float32", [3, 4]), z=("uint8", [3, 4])), "scale", "blockwise"),
    (dict(s=("float32", [4, 4]), z=("uint8", [4, 4])), "scale", "blockwise"),
])
def test_validation(ctx, kw, arg, word):
    with raises_msg(TypeError, "quantizeLinear", "q1", arg, word):
        build_one(ctx, "quantize_linear", shapes(**kw), label="q1")


def test_output_descriptor(ctx):
    for qt in Q_TYPES:
        out = build_one(ctx, "quantize_linear", shapes(x=("float16", [4, 6]),
                                                      s=("float16", [1, 6]), z=(qt, [1, 6])))
        assert out.shape == (4, 6) and out.data_type == qt
