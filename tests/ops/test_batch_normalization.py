"""batchNormalization: scale * (x - mean) / sqrt(variance + epsilon) + bias
along `axis` (default 1), mean / variance / scale / bias 1-D of size
input.shape[axis].

Reference: the spec's formula in float64 NumPy on the same values, epsilon
first cast to the input's data type (spec step).  The kernel computes each
element in double and rounds once: one ulp, plus a tiny absolute allowance.
"""
import itertools

import numpy as np
import pytest

import webnn

from .conftest import cast_param, check_float, npdt, op_dtypes, random_shape, rng_for

DTYPES = op_dtypes("batchNormalization", "input")


def bn_ref(x, mean, var, scale, bias, axis, eps):
    shape = [1] * x.ndim
    shape[axis] = x.shape[axis]

    def r(a):
        return np.asarray(a, np.float64).reshape(shape)

    with np.errstate(all="ignore"):
        y = (x.astype(np.float64) - r(mean)) / np.sqrt(r(var) + eps)
        if scale is not None:
            y = r(scale) * y
        mag = np.abs(y)
        if bias is not None:
            y = y + r(bias)
            mag = mag + np.abs(r(bias))
    return y, np.nan_to_num(mag, nan=0.0, posinf=0.0)


def run_bn(run, x, mean, var, scale=None, bias=None, axis=None, eps=None, const=False):
    opts = {}
    if axis is not None:
        opts["axis"] = axis
    if eps is not None:
        opts["epsilon"] = eps
    named = {"mean": mean, "var": var, "scale": scale, "bias": bias}
    inputs, consts = {"x": x}, {}
    for k, v in named.items():
        if v is not None:
            (consts if const else inputs)[k] = v

    def build(b, x, mean, var, scale=None, bias=None):
        o = dict(opts)
        if scale is not None:
            o["scale"] = scale
        if bias is not None:
            o["bias"] = bias
        return b.batch_normalization(x, mean, var, o)

    return run(build, inputs, constants=consts)


def params(rng, c, dt, ws=True, wb=True):
    t = npdt(dt)
    mean = rng.uniform(-3, 3, c).astype(t)
    var = rng.uniform(0.01, 4, c).astype(t)
    scale = rng.uniform(-2, 2, c).astype(t) if ws else None
    bias = rng.uniform(-2, 2, c).astype(t) if wb else None
    return mean, var, scale, bias


def check(run, x, mean, var, scale, bias, axis, eps, dt, const=False):
    got = run_bn(run, x, mean, var, scale, bias, axis, eps, const)
    ref, mag = bn_ref(x, mean, var, scale, bias, 1 if axis is None else axis,
                      cast_param(1e-5 if eps is None else eps, dt))
    check_float(got, ref, dt, x.shape, ulps=1, atol=1e-12 * mag,
                what=f"batchNormalization {dt} shape={x.shape} axis={axis} eps={eps} "
                     f"scale={scale is not None} bias={bias is not None}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5, 8])
def test_every_axis(run, dt, rank):
    """Every axis (default and explicit), scale / bias absent or present,
    mean etc. as inputs or constants."""
    rng = rng_for("bn-axis", dt, rank)
    max_dim = 3 if rank == 8 else 5
    for axis in [None] + list(range(rank)):
        if axis is None and rank < 2:
            continue  # the default axis 1 needs rank >= 2
        a = 1 if axis is None else axis
        x = rng.uniform(-10, 10, size=random_shape(rng, rank, max_dim)).astype(npdt(dt))
        for i, (ws, wb) in enumerate(itertools.product([False, True], repeat=2)):
            mean, var, scale, bias = params(rng, x.shape[a], dt, ws, wb)
            eps = [None, 1e-3, 0.0, 0.25][i]
            check(run, x, mean, var, scale, bias, axis, eps, dt, const=bool(i % 2))


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    t = npdt(dt)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], t)
    mean = np.array([1.0, 2.0], t)
    var = np.array([4.0, 0.25], t)
    got = run_bn(run, x, mean, var, np.array([2.0, 1.0], t), np.array([1.0, -1.0], t), eps=0.0)
    np.testing.assert_array_equal(got, np.array([[1.0, -1.0], [3.0, 3.0]], t))
    # axis 0: row 0 uses mean 1 / var 4, row 1 mean 2 / var 0.25
    got = run_bn(run, x, mean, var, axis=0, eps=0.0)
    np.testing.assert_array_equal(got, np.array([[0.0, 0.5], [2.0, 4.0]], t))


@pytest.mark.parametrize("dt", DTYPES)
def test_epsilon_is_cast(run, dt):
    """float16: epsilon 1e-7 becomes 2**-23 (1.19e-7) before it is used."""
    t = npdt(dt)
    x = np.array([[1.0], [0.0]], t)
    mean = np.array([0.0], t)
    var = np.array([0.0], t)
    got = run_bn(run, x, mean, var, eps=1e-7)
    ref, _ = bn_ref(x, mean, var, None, None, 1, cast_param(1e-7, dt))
    check_float(got, ref, dt, x.shape, ulps=1, what="epsilon cast")
    if dt == "float16":
        assert float(got[0, 0]) == pytest.approx(1 / np.sqrt(2.0**-23), rel=2e-3)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt):
    t = npdt(dt)
    x = np.array([[np.nan, np.inf, -np.inf, 0.0, 1.0, 5.0]], t).reshape(1, 6)
    # per-channel: ordinary; zero variance with zero epsilon; negative variance
    mean = np.array([0, 0, 0, 0, 1, 0], t)
    var = np.array([1, 1, 1, 0, 0, -4], t)
    scale = np.array([1, 2, -1, 1, 1, 1], t)
    bias = np.array([0, 0, 0, 3, 0, 0], t)
    got = run_bn(run, x, mean, var, scale, bias, eps=0.0)
    ref, _ = bn_ref(x, mean, var, scale, bias, 1, 0.0)
    check_float(got, ref, dt, x.shape, what="specials")
    assert np.isnan(got[0, [0, 3, 4, 5]]).all() and got[0, 1] == np.inf and got[0, 2] == np.inf


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,axis", [((8, 64, 32, 32), 1), ((4096, 64), 1),
                                        ((16, 32, 24, 48), 3), ((600, 700), 0)])
def test_large(run, dt, shape, axis):
    rng = rng_for("bn-large", dt, shape, axis)
    x = (rng.standard_normal(size=shape) * 2).astype(npdt(dt))
    mean, var, scale, bias = params(rng, shape[axis], dt)
    check(run, x, mean, var, scale, bias, axis, None, dt, const=True)


# ---- validation ----------------------------------------------------------------
_names = itertools.count()


def _operand(b, dt, shape):
    return b.input(f"v{next(_names)}", {"dataType": dt, "shape": list(shape)})


def _err(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in ("batchNormalization",) + words:
        assert w in msg, f"{msg!r} does not mention {w!r}"


def test_validation(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = _operand(b, "float32", [2, 3, 4])
    c3 = _operand(b, "float32", [3])
    c4 = _operand(b, "float32", [4])
    c2 = _operand(b, "float32", [2])
    h3 = _operand(b, "float16", [3])
    m33 = _operand(b, "float32", [3, 3])
    # input: data type and rank
    _err(lambda: b.batch_normalization(_operand(b, "int32", [2, 3]), c3, c3, label="B0"),
         "B0", "input")
    _err(lambda: b.batch_normalization(_operand(b, "float32", []), c3, c3), "input")
    # axis in [0, rank)
    _err(lambda: b.batch_normalization(x, c3, c3, axis=3, label="B1"), "B1", "options.axis")
    with pytest.raises(TypeError):
        b.batch_normalization(x, c3, c3, axis=-1)
    # mean: data type, rank, shape
    _err(lambda: b.batch_normalization(x, h3, c3, label="B2"), "B2", "mean")
    _err(lambda: b.batch_normalization(x, m33, c3), "mean")
    _err(lambda: b.batch_normalization(x, c4, c3), "mean")
    _err(lambda: b.batch_normalization(x, c3, c3, axis=2), "mean")
    # variance
    _err(lambda: b.batch_normalization(x, c3, h3, label="B3"), "B3", "variance")
    _err(lambda: b.batch_normalization(x, c3, m33), "variance")
    _err(lambda: b.batch_normalization(x, c3, c2), "variance")
    # scale and bias
    _err(lambda: b.batch_normalization(x, c3, c3, scale=h3, label="B4"), "B4", "options.scale")
    _err(lambda: b.batch_normalization(x, c3, c3, scale=c4), "options.scale")
    _err(lambda: b.batch_normalization(x, c3, c3, scale=m33), "options.scale")
    _err(lambda: b.batch_normalization(x, c3, c3, bias=h3, label="B5"), "B5", "options.bias")
    _err(lambda: b.batch_normalization(x, c3, c3, bias=c2), "options.bias")
    _err(lambda: b.batch_normalization(x, c4, c4, axis=2, scale=c4, bias=c3), "options.bias")
    # epsilon must be a finite double
    with pytest.raises(TypeError):
        b.batch_normalization(x, c3, c3, epsilon=float("nan"))
    # valid forms
    assert b.batch_normalization(x, c3, c3, scale=c3, bias=c3).shape == (2, 3, 4)
    assert b.batch_normalization(x, c2, c2, axis=0).shape == (2, 3, 4)
    assert b.batch_normalization(x, c4, c4, axis=2, scale=c4, bias=c4).shape == (2, 3, 4)
    x16 = _operand(b, "float16", [3])
    out = b.batch_normalization(x16, h3, h3, axis=0, scale=h3, bias=h3)
    assert out.data_type == "float16" and out.shape == (3,)
