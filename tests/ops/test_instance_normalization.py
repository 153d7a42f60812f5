"""instanceNormalization: for each sample and channel, mean and population
variance over the spatial dimensions, then scale[c] * (x - mean) /
sqrt(var + epsilon) + bias[c]; layout "nchw" (default, channels at axis 1)
or "nhwc" (axis 3).

Reference: float64 NumPy on the same values, epsilon first cast to the
input's data type (spec step).  The kernel computes in double and rounds
once: one ulp, plus a tiny absolute allowance.
"""
import itertools

import numpy as np
import pytest

import webnn

from .conftest import cast_param, check_float, npdt, op_dtypes, rng_for

DTYPES = op_dtypes("instanceNormalization", "input")
LAYOUTS = [None, "nchw", "nhwc"]


def in_ref(x, scale, bias, eps, layout):
    x64 = x.astype(np.float64)
    nhwc = layout == "nhwc"
    axes = (1, 2) if nhwc else (2, 3)
    cshape = (1, 1, 1, -1) if nhwc else (1, -1, 1, 1)
    with np.errstate(all="ignore"):
        mean = x64.mean(axis=axes, keepdims=True)
        var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x64 - mean) / np.sqrt(var + eps)
        if scale is not None:
            y = y * np.asarray(scale, np.float64).reshape(cshape)
        mag = np.abs(y)
        if bias is not None:
            b = np.asarray(bias, np.float64).reshape(cshape)
            y = y + b
            mag = mag + np.abs(b)
    return y, np.nan_to_num(mag, nan=0.0, posinf=0.0)


def run_in(run, x, scale=None, bias=None, eps=None, layout=None, const=False):
    opts = {}
    if eps is not None:
        opts["epsilon"] = eps
    if layout is not None:
        opts["layout"] = layout
    inputs, consts = {"x": x}, {}
    if scale is not None:
        (consts if const else inputs)["scale"] = scale
    if bias is not None:
        (consts if const else inputs)["bias"] = bias

    def build(b, x, scale=None, bias=None):
        o = dict(opts)
        if scale is not None:
            o["scale"] = scale
        if bias is not None:
            o["bias"] = bias
        return b.instance_normalization(x, o)

    return run(build, inputs, constants=consts)


def check(run, x, scale, bias, eps, layout, dt, const=False):
    got = run_in(run, x, scale, bias, eps, layout, const)
    ref, mag = in_ref(x, scale, bias, cast_param(1e-5 if eps is None else eps, dt), layout)
    check_float(got, ref, dt, x.shape, ulps=1, atol=1e-10 * mag,
                what=f"instanceNormalization {dt} shape={x.shape} layout={layout} eps={eps} "
                     f"scale={scale is not None} bias={bias is not None}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_options(run, dt, layout):
    rng = rng_for("in-options", dt, layout)
    t = npdt(dt)
    for i, (ws, wb) in enumerate(itertools.product([False, True], repeat=2)):
        for shape in [(1, 1, 1, 1), (2, 3, 4, 5), (3, 2, 1, 7), (1, 5, 3, 1)]:
            x = rng.uniform(-10, 10, size=shape).astype(t)
            c = shape[3] if layout == "nhwc" else shape[1]
            scale = rng.uniform(-2, 2, c).astype(t) if ws else None
            bias = rng.uniform(-2, 2, c).astype(t) if wb else None
            eps = [None, 1e-3, 0.5, 1e-6][i]
            check(run, x, scale, bias, eps, layout, dt, const=bool(i % 2))


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    t = npdt(dt)
    # [1, 2, 1, 2] nchw: channel 0 = [1, 3], channel 1 = [-4, 4]
    x = np.array([1.0, 3.0, -4.0, 4.0], t).reshape(1, 2, 1, 2)
    got = run_in(run, x, np.array([2.0, 1.0], t), np.array([0.5, -1.0], t), eps=0.0)
    np.testing.assert_array_equal(got.reshape(-1), np.array([-1.5, 2.5, -2.0, 0.0], t))
    # the same data read as nhwc [1, 1, 2, 2]: channel 0 = [1, -4], channel 1 = [3, 4]
    got = run_in(run, x.reshape(1, 1, 2, 2), eps=0.0, layout="nhwc")
    np.testing.assert_array_equal(got.reshape(-1), np.array([1.0, -1.0, -1.0, 1.0], t))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_epsilon_is_cast(run, dt, layout):
    t = npdt(dt)
    x = np.array([0.0, 2.0**-12], t).reshape(1, 1, 1, 2)
    if layout == "nhwc":
        x = x.reshape(1, 1, 2, 1)
    got = run_in(run, x, eps=1e-7, layout=layout)
    ref, _ = in_ref(x, None, None, cast_param(1e-7, dt), layout)
    check_float(got, ref, dt, x.shape, ulps=1, what="epsilon cast")
    if dt == "float16":
        wrong, _ = in_ref(x, None, None, 1e-7, layout)
        assert not np.allclose(got.astype(np.float64), wrong, rtol=1e-2)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_special_values(run, dt, layout):
    t = npdt(dt)
    rng = rng_for("in-special", dt, layout)
    x = rng.uniform(-5, 5, size=(2, 4, 3, 4)).astype(t)
    if layout == "nhwc":
        x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))  # [2, 3, 4, 4]
        x[0, 1, 1, 0], x[0, 2, 0, 1], x[1, 0, 3, 2] = np.nan, np.inf, -np.inf
        x[1, :, :, 3] = 2.0
    else:
        x[0, 0, 1, 1], x[0, 1, 2, 0], x[1, 2, 0, 3] = np.nan, np.inf, -np.inf
        x[1, 3] = 2.0
    got = run_in(run, x, layout=layout)
    ref, mag = in_ref(x, None, None, cast_param(1e-5, dt), layout)
    assert np.isnan(ref).sum() == 3 * 12
    check_float(got, ref, dt, x.shape, ulps=1, atol=1e-10 * mag, what="specials")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", [(2, 32, 64, 64), (1, 3, 100, 150), (3, 130, 9, 11)])
def test_large(run, dt, layout, shape):
    rng = rng_for("in-large", dt, layout, shape)
    t = npdt(dt)
    x = (rng.standard_normal(size=shape) * 3 + 2).astype(t)
    c = shape[3] if layout == "nhwc" else shape[1]
    check(run, x, rng.uniform(-2, 2, c).astype(t), rng.uniform(-2, 2, c).astype(t), None,
          layout, dt, const=True)


# ---- validation ----------------------------------------------------------------
_names = itertools.count()


def _operand(b, dt, shape):
    return b.input(f"v{next(_names)}", {"dataType": dt, "shape": list(shape)})


def _err(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in ("instanceNormalization",) + words:
        assert w in msg, f"{msg!r} does not mention {w!r}"


def test_validation(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = _operand(b, "float32", [2, 3, 4, 5])
    c3 = _operand(b, "float32", [3])
    c5 = _operand(b, "float32", [5])
    h3 = _operand(b, "float16", [3])
    # input data type and rank 4
    _err(lambda: b.instance_normalization(_operand(b, "int32", [2, 3, 4, 5]), label="I0"),
         "I0", "input")
    _err(lambda: b.instance_normalization(_operand(b, "float32", [2, 3, 4])), "input")
    _err(lambda: b.instance_normalization(_operand(b, "float32", [2, 3, 4, 5, 6])), "input")
    # scale / bias: data type, rank 1, size of the channel dimension per layout
    _err(lambda: b.instance_normalization(x, scale=h3, label="I1"), "I1", "options.scale")
    _err(lambda: b.instance_normalization(x, scale=c5), "options.scale")
    _err(lambda: b.instance_normalization(x, scale=c3, layout="nhwc"), "options.scale")
    _err(lambda: b.instance_normalization(x, scale=_operand(b, "float32", [1, 3])),
         "options.scale")
    _err(lambda: b.instance_normalization(x, bias=h3, label="I2"), "I2", "options.bias")
    _err(lambda: b.instance_normalization(x, bias=c3, layout="nhwc"), "options.bias")
    _err(lambda: b.instance_normalization(x, scale=c3, bias=c5), "options.bias")
    # layout must be one of the enum values; epsilon finite
    with pytest.raises(TypeError):
        b.instance_normalization(x, layout="ncwh")
    with pytest.raises(TypeError):
        b.instance_normalization(x, epsilon=float("-inf"))
    # valid forms
    assert b.instance_normalization(x, scale=c3, bias=c3).shape == (2, 3, 4, 5)
    assert b.instance_normalization(x, scale=c5, bias=c5, layout="nhwc").shape == (2, 3, 4, 5)
