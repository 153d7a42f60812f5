"""layerNormalization: mean and variance over `axes` (default: all but the
first; empty: nothing reduced), then (x - mean) / sqrt(var + epsilon) * scale
+ bias, with scale / bias of shape [input.shape[a] for a in axes] (in the
order of `axes`).

Reference: float64 NumPy on the same input values, epsilon first cast to the
input's data type (spec step), the population variance (as the spec's
emulation: reduceMean of the squared differences).  The kernel computes the
statistics and the normalized value in double and rounds once, so the result
must be within one ulp of the correctly rounded reference (plus a tiny
absolute allowance for the double-precision statistics).
"""
import itertools

import numpy as np
import pytest

import webnn

from .conftest import cast_param, check_float, npdt, op_dtypes, random_shape, rng_for

DTYPES = op_dtypes("layerNormalization", "input")


def expand(p, rank, axes):
    """scale / bias (dims in axes order) -> broadcastable to the input."""
    p = np.asarray(p, np.float64)
    axes = list(axes)
    if not axes:
        return p.reshape([1] * rank)
    order = np.argsort(axes)
    p = p.transpose(order)
    shape = [1] * rank
    for a, n in zip(sorted(axes), p.shape):
        shape[a] = n
    return p.reshape(shape)


def ln_ref(x, axes, scale, bias, eps):
    x64 = x.astype(np.float64)
    rank = x.ndim
    ax = tuple(axes)
    with np.errstate(all="ignore"):
        mean = np.mean(x64, axis=ax, keepdims=True) if ax else x64
        var = np.mean((x64 - mean) ** 2, axis=ax, keepdims=True) if ax else np.zeros_like(x64)
        y = (x64 - mean) / np.sqrt(var + eps)
        mag = np.abs(y)
        if scale is not None:
            y = y * expand(scale, rank, axes)
            mag = np.abs(y)
        if bias is not None:
            b = expand(bias, rank, axes)
            y = y + b
            mag = mag + np.abs(b)
    return y, np.nan_to_num(mag, nan=0.0, posinf=0.0)


def run_ln(run, x, axes=None, scale=None, bias=None, eps=None, const=False, label=None):
    opts = {}
    if axes is not None:
        opts["axes"] = list(axes)
    if eps is not None:
        opts["epsilon"] = eps
    if label is not None:
        opts["label"] = label
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
        return b.layer_normalization(x, o)

    return run(build, inputs, constants=consts)


def check(run, x, axes, scale, bias, eps, dt, const=False, what=""):
    got = run_ln(run, x, axes, scale, bias, eps, const)
    eff_axes = list(range(1, x.ndim)) if axes is None else list(axes)
    ref, mag = ln_ref(x, eff_axes, scale, bias, cast_param(1e-5 if eps is None else eps, dt))
    check_float(got, ref, dt, x.shape, ulps=1, atol=1e-10 * mag,
                what=f"layerNormalization {dt} shape={x.shape} axes={axes} "
                     f"scale={scale is not None} bias={bias is not None} eps={eps} {what}")


def make_params(rng, x, axes, dt, with_scale, with_bias):
    shape = [x.shape[a] for a in axes]
    t = npdt(dt)
    scale = rng.uniform(-2, 2, size=shape).astype(t) if with_scale else None
    bias = rng.uniform(-3, 3, size=shape).astype(t) if with_bias else None
    return scale, bias


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_default_axes(run, dt, rank):
    """axes absent: 1 .. rank-1 (empty for rank 0 and 1)."""
    rng = rng_for("ln-default", dt, rank)
    x = rng.uniform(-10, 10, size=random_shape(rng, rank, 5)).astype(npdt(dt))
    axes = list(range(1, rank))
    for ws, wb in itertools.product([False, True], repeat=2):
        scale, bias = make_params(rng, x, axes, dt, ws, wb)
        check(run, x, None, scale, bias, None, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_axes_subsets(run, dt, rank):
    """Every subset of the axes (empty included), in a random order, with and
    without scale / bias; size-1 dimensions now and then."""
    rng = rng_for("ln-axes", dt, rank)
    subsets = [list(c) for k in range(rank + 1) for c in itertools.combinations(range(rank), k)]
    if rank == 5:
        subsets = [subsets[i] for i in rng.choice(len(subsets), 12, replace=False)]
    for i, axes in enumerate(subsets):
        axes = list(rng.permutation(axes)) if i % 2 else axes
        axes = [int(a) for a in axes]
        shape = list(random_shape(rng, rank, 4))
        if rank > 1 and i % 3 == 0:
            shape[int(rng.integers(0, rank))] = 1
        x = rng.uniform(-10, 10, size=shape).astype(npdt(dt))
        ws, wb = bool(i % 2), bool((i // 2) % 2)
        scale, bias = make_params(rng, x, axes, dt, ws, wb)
        eps = [None, 1e-3, 0.5][i % 3]
        check(run, x, axes, scale, bias, eps, dt, const=bool(i % 4 == 1))


@pytest.mark.parametrize("dt", DTYPES)
def test_axes_order_matters_for_scale(run, dt):
    """Scale / bias follow the order of `axes`: axes [2, 1] on [2, 3, 4] has
    scale [4, 3]; the WPT pattern axes [3, 1, 2] and [0, 3, 1]."""
    rng = rng_for("ln-order", dt)
    for shape, axes in [((2, 3, 4), [2, 1]), ((2, 3, 4), [1, 2]), ((2, 3, 4, 5), [3, 1, 2]),
                        ((2, 3, 4, 5), [0, 3, 1]), ((3, 4), [1, 0]), ((2, 3, 4), [2, 0])]:
        x = rng.uniform(-5, 5, size=shape).astype(npdt(dt))
        scale, bias = make_params(rng, x, axes, dt, True, True)
        check(run, x, axes, scale, bias, 1e-4, dt)
        check(run, x, axes, scale, None, None, dt)
        check(run, x, axes, None, bias, None, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_empty_axes(run, dt):
    """axes = []: every element is its own group: mean = x, variance 0, so
    the output is bias (or 0), NaN where x is not finite."""
    rng = rng_for("ln-empty", dt)
    t = npdt(dt)
    x = rng.uniform(-10, 10, size=(3, 4)).astype(t)
    x[0, 0], x[1, 1], x[2, 2] = np.inf, -np.inf, np.nan
    bias = np.array(1.5, t)
    got = run_ln(run, x, [], None, bias)
    expect = np.full((3, 4), 1.5)
    expect[0, 0] = expect[1, 1] = expect[2, 2] = np.nan
    check_float(got, expect, dt, (3, 4), what="layerNormalization axes=[] with bias")
    got = run_ln(run, x, [], np.array(2.0, t), None)
    expect = np.where(np.isfinite(x), 0.0, np.nan)
    check_float(got, expect, dt, (3, 4), what="layerNormalization axes=[] with scale")
    check(run, x, [], None, None, None, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    t = npdt(dt)
    x = np.array([[1.0, 3.0], [-2.0, 6.0]], t)
    got = run_ln(run, x, eps=0.0)
    np.testing.assert_array_equal(got, np.array([[-1.0, 1.0], [-1.0, 1.0]], t))
    got = run_ln(run, x, scale=np.array([2.0, -1.0], t), bias=np.array([0.5, 0.25], t), eps=0.0)
    np.testing.assert_array_equal(got, np.array([[-1.5, -0.75], [-1.5, -0.75]], t))
    # over the first axis: columns [1, -2] and [3, 6]
    got = run_ln(run, x, axes=[0], eps=0.0)
    np.testing.assert_array_equal(got, np.array([[1.0, -1.0], [-1.0, 1.0]], t))


@pytest.mark.parametrize("dt", DTYPES)
def test_epsilon_is_cast(run, dt):
    """Spec: epsilon is cast to the input's data type first.  For float16,
    1e-7 becomes 2 * 2**-24 (1.19e-7); with a variance of that order the
    difference shows."""
    t = npdt(dt)
    x = np.array([0.0, 2.0**-12], t)
    eps = 1e-7
    got = run_ln(run, x, axes=[0], eps=eps)
    ref, _ = ln_ref(x, [0], None, None, cast_param(eps, dt))
    check_float(got, ref, dt, x.shape, ulps=1, what="epsilon cast")
    if dt == "float16":
        wrong, _ = ln_ref(x, [0], None, None, eps)
        assert not np.allclose(got.astype(np.float64), wrong, rtol=1e-2)


@pytest.mark.parametrize("dt", DTYPES)
def test_large_offset_precision(run, dt):
    """A mean large against the spread (catastrophic cancellation for a naive
    E[x^2] - E[x]^2 in float)."""
    rng = rng_for("ln-offset", dt)
    big = 1000.0 if dt == "float32" else 100.0
    x = (big + rng.uniform(-1, 1, size=(4, 300))).astype(npdt(dt))
    check(run, x, [1], None, None, None, dt)
    check(run, x, [0], None, None, None, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt):
    """NaN or +-Inf in a group makes the whole group NaN (as the float64
    formulas); other groups are unaffected."""
    t = npdt(dt)
    rng = rng_for("ln-special", dt)
    x = rng.uniform(-5, 5, size=(5, 6)).astype(t)
    x[0, 2] = np.nan
    x[1, 0] = np.inf
    x[2, 5] = -np.inf
    x[3, :] = 7.0  # constant group: variance 0, output 0
    got = run_ln(run, x, [1])
    ref, mag = ln_ref(x, [1], None, None, cast_param(1e-5, dt))
    assert np.isnan(got[:3]).all()
    check_float(got, ref, dt, x.shape, ulps=1, atol=1e-10 * mag, what="specials")
    got = run_ln(run, np.full((2, 3), np.finfo(t).max, t), [1])
    assert not np.isnan(got).any() and (got == 0).all()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape,axes", [
    ((8, 128, 768), [2]),          # transformer: rows, threaded
    ((8, 128, 768), None),         # default axes [1, 2]
    ((256, 1024), [0]),            # columns (reduced block before kept)
    ((4, 64, 256), [1]),           # columns with an outer block
    ((16, 64, 8, 16), [0, 2]),     # gathered (two separate reduced blocks)
    ((8, 64, 128), [2, 1]),        # reversed order with scale: gathered
])
def test_large(run, dt, shape, axes):
    rng = rng_for("ln-large", dt, shape, str(axes))
    x = (rng.standard_normal(size=shape) * 3 + 1).astype(npdt(dt))
    eff = list(range(1, len(shape))) if axes is None else axes
    scale, bias = make_params(rng, x, eff, dt, True, True)
    check(run, x, axes, scale, bias, None, dt, const=True)


# ---- validation ----------------------------------------------------------------
def _err(fn, *words):
    with pytest.raises(TypeError) as info:
        fn()
    msg = str(info.value)
    for w in ("layerNormalization",) + words:
        assert w in msg, f"{msg!r} does not mention {w!r}"


_names = itertools.count()


def _operand(b, dt, shape):
    return b.input(f"v{next(_names)}", {"dataType": dt, "shape": list(shape)})


def test_validation(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = _operand(b, "float32", [2, 3, 4])
    s34 = _operand(b, "float32", [3, 4])
    # input data type
    xi = _operand(b, "int32", [2, 3])
    _err(lambda: b.layer_normalization(xi, label="L1"), "L1", "input")
    # axes: out of range, duplicates, a bare number
    _err(lambda: b.layer_normalization(x, axes=[3], label="L2"), "L2", "options.axes")
    _err(lambda: b.layer_normalization(x, axes=[1, 1], label="L3"), "L3", "options.axes")
    _err(lambda: b.layer_normalization(x, axes=[0, 2, 0]), "options.axes")
    _err(lambda: b.layer_normalization(x, axes=2), "options.axes")
    with pytest.raises(TypeError):
        b.layer_normalization(x, axes=[-1])
    # scale / bias: data type, rank against the axes, shape per axis
    s16 = _operand(b, "float16", [3, 4])
    _err(lambda: b.layer_normalization(x, scale=s16, label="L4"), "L4", "options.scale")
    _err(lambda: b.layer_normalization(x, bias=s16, label="L5"), "L5", "options.bias")
    s4 = _operand(b, "float32", [4])
    _err(lambda: b.layer_normalization(x, scale=s4), "options.scale")
    _err(lambda: b.layer_normalization(x, bias=s4), "options.bias")
    _err(lambda: b.layer_normalization(x, axes=[2, 1], scale=s34), "options.scale")
    _err(lambda: b.layer_normalization(x, axes=[1, 2], scale=s34, bias=s4), "options.bias")
    s43 = _operand(b, "float32", [4, 3])
    _err(lambda: b.layer_normalization(x, axes=[1, 2], bias=s43), "options.bias")
    # empty axes: scale / bias must be scalars
    _err(lambda: b.layer_normalization(x, axes=[], scale=s4), "options.scale")
    # epsilon must be finite
    with pytest.raises(TypeError):
        b.layer_normalization(x, epsilon=float("inf"))
    # the valid forms build
    out = b.layer_normalization(x, axes=[2, 1], scale=s43, bias=s43)
    assert out.shape == (2, 3, 4) and out.data_type == "float32"
    out = b.layer_normalization(x, scale=s34, bias=s34)
    assert out.shape == (2, 3, 4)
    sc = _operand(b, "float32", [])
    assert b.layer_normalization(x, axes=[], scale=sc, bias=sc).shape == (2, 3, 4)
    r1 = _operand(b, "float32", [5])
    assert b.layer_normalization(r1, scale=sc).shape == (5,)  # default axes []
    _err(lambda: b.layer_normalization(r1, scale=_operand(b, "float32", [5])), "options.scale")
