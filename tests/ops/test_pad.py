"""pad: np.pad as the reference, bit-exact, every data type, ranks 0 to 5
and the largest, every MLPaddingMode of the spec ("constant" -> np.pad
'constant', "edge" -> 'edge', "reflection" -> 'reflect'; the spec has no
symmetric mode), reflection at its largest padding (size - 1 on both
sides), options.value absent (0) and cast to the input's type (the spec's
"cast": float32/float16 round to nearest, integers round half to even and
saturate, NaN -> 0; 64-bit integers exact); plus the validation steps of
#api-mlgraphbuilder-pad."""
import math

import numpy as np
import pytest

from .conftest import npdt, op_dtypes, op_max_rank, rng_for
from .test_concat import builder, data, desc, same, type_error

DTYPES = op_dtypes("pad", "input")
MAX_RANK = min(op_max_rank("pad", "input"), 8)
NP_MODE = {"constant": "constant", "edge": "edge", "reflection": "reflect"}


def cast_value(v, dt):
    """The spec's cast of an MLNumber to dt, independently of the C code."""
    t = npdt(dt)
    if t.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(float(v), np.float64).astype(t)
    info = np.iinfo(t)
    if isinstance(v, float):
        if math.isnan(v):
            return np.array(0, t)
        v = min(max(v, float(info.min)), float(info.max))
        v = round(v)  # half to even
    return np.array(min(max(int(v), int(info.min)), int(info.max)), t)


def ref_pad(x, begin, end, mode="constant", value=None):
    if x.ndim == 0:
        return x.copy()
    width = list(zip(begin, end))
    if mode == "constant":
        v = cast_value(0 if value is None else value, str(x.dtype))
        out = np.empty(tuple(b + d + e for b, d, e in zip(begin, x.shape, end)), x.dtype)
        out[...] = v        # (np.pad's constant_values goes through a cast of its own)
        out[tuple(slice(b, b + d) for b, d in zip(begin, x.shape))] = x
        return out
    return np.pad(x, width, mode=NP_MODE[mode])


def run_pad(run, x, begin, end, mode=None, value=None, constant=False):
    opts = {}
    if mode is not None:
        opts["mode"] = mode
    if value is not None:
        opts["value"] = value
    f = lambda b, x: b.pad(x, list(begin), list(end), opts)  # noqa: E731
    return run(f, {}, constants={"x": x}) if constant else run(f, {"x": x})


def random_padding(rng, shape, mode):
    if mode == "reflection":  # at most size - 1; often the largest
        pick = lambda d: int(rng.choice([0, d - 1, int(rng.integers(0, d))]))  # noqa: E731
    else:
        pick = lambda d: int(rng.integers(0, 4))  # noqa: E731
    return [pick(d) for d in shape], [pick(d) for d in shape]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflection"])
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, mode, rank):
    rng = rng_for("pad", dt, mode, rank)
    x = data(rng, [int(d) for d in rng.integers(1, 5, size=rank)], dt)
    for k in range(2):
        begin, end = random_padding(rng, x.shape, mode)
        value = None if mode != "constant" or k == 0 else [3, 1.5, -7][rank % 3]
        same(run_pad(run, x, begin, end, None if k == 0 and mode == "constant" else mode,
                     value, constant=k == 1 and rank > 0),
             ref_pad(x, begin, end, mode, value),
             f"pad {dt} {x.shape} {begin} {end} {mode} value={value}")


@pytest.mark.parametrize("dt", DTYPES)
def test_reflection_largest(run, dt):
    """Reflection padding of size - 1 on both sides of every dimension."""
    rng = rng_for("pad-reflect", dt)
    for shape in [(1,), (2,), (5,), (3, 4), (1, 3, 2), (2, 3, 4, 5)]:
        x = data(rng, shape, dt)
        begin = end = [d - 1 for d in shape]
        same(run_pad(run, x, begin, end, "reflection"), ref_pad(x, begin, end, "reflection"),
             f"pad {dt} {shape} reflection {begin}")


def test_spec_example(run):
    """The spec's example, hand-checked."""
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    expected = {
        "constant": [[0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0],
                     [0, 0, 0, 0, 0, 0, 0]],
        "edge": [[1, 1, 1, 2, 3, 3, 3], [1, 1, 1, 2, 3, 3, 3], [4, 4, 4, 5, 6, 6, 6],
                 [4, 4, 4, 5, 6, 6, 6]],
        "reflection": [[6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4],
                       [3, 2, 1, 2, 3, 2, 1]],
    }
    for mode, e in expected.items():
        same(run_pad(run, x, [1, 2], [1, 2], mode), np.array(e, np.float32), f"spec {mode}")


VALUES = [0, 1, -1, 2.5, 3.5, -2.5, 0.1, -0.0, 1e39, -1e39, 65519.0, 65520.0, 2**24 + 1,
          math.inf, -math.inf, math.nan, 127, 128, -129, 255.5, 2**31, -2**31 - 1, 2**32,
          2**53 + 1, 2**63 - 1, 2**63, -2**63, 2**64 - 1, 2**64, -2**64, 1e30, -1e30]


@pytest.mark.parametrize("dt", DTYPES)
def test_value_cast(run, dt):
    """options.value is cast to the input's type (exact 64-bit integers for
    int64/uint64: 2**63 - 1 and 2**64 - 1 survive, beyond them saturates)."""
    x = data(rng_for("pad-value", dt), (2,), dt)
    for v in VALUES:
        if isinstance(v, int) and npdt(dt).kind == "f" and abs(v) >= 2**53:
            continue  # int -> float rounding of huge integers: see test_value_float_ints
        same(run_pad(run, x, [1], [2], "constant", v), ref_pad(x, [1], [2], "constant", v),
             f"pad {dt} value {v!r}")


def test_value_hand_checked(run):
    x = np.zeros((1,), np.int64)
    got = run_pad(run, x, [1], [1], value=2**63 - 1)
    assert got.tolist() == [2**63 - 1, 0, 2**63 - 1]
    got = run_pad(run, np.zeros((1,), np.uint64), [1], [0], value=2**64 - 1)
    assert got.tolist() == [2**64 - 1, 0]
    got = run_pad(run, np.zeros((1,), np.uint64), [1], [0], value=-5)
    assert got.tolist() == [0, 0]
    got = run_pad(run, np.zeros((1,), np.int8), [2], [2], value=2.5)
    assert got.tolist() == [2, 2, 0, 2, 2]
    got = run_pad(run, np.zeros((1,), np.uint8), [1], [1], value=300)
    assert got.tolist() == [255, 0, 255]
    got = run_pad(run, np.zeros((1,), np.float16), [1], [1], value=1e6)
    assert np.isinf(got[0]) and got[0] > 0
    got = run_pad(run, np.zeros((1,), np.float32), [1], [0], value=-0.0)
    assert np.signbit(got[0])


def test_value_float_ints(run):
    """Integers beyond 2**53 for float types: one rounding to the type."""
    x = np.zeros((1,), np.float32)
    got = run_pad(run, x, [1], [0], value=2**63 - 1)
    assert got[0] == np.float32(2.0**63)
    got = run_pad(run, x, [1], [0], value=2**24 + 1)
    assert got[0] == np.float32(2.0**24)


def test_max_rank(run):
    rng = rng_for("pad-max")
    x = data(rng, (2,) * MAX_RANK, "uint64")
    for mode in ("constant", "edge", "reflection"):
        begin, end = [1, 0] * (MAX_RANK // 2), [0, 1] * (MAX_RANK // 2)
        same(run_pad(run, x, begin, end, mode, 7 if mode == "constant" else None),
             ref_pad(x, begin, end, mode, 7 if mode == "constant" else None),
             f"pad max rank {mode}")


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64"])
def test_large(run, dt):
    rng = rng_for("pad-large", dt)
    x = data(rng, (31, 43, 57), dt)
    for mode in ("constant", "edge", "reflection"):
        begin, end = [3, 0, 56], [30, 2, 5]
        same(run_pad(run, x, begin, end, mode, -3 if mode == "constant" else None),
             ref_pad(x, begin, end, mode, -3 if mode == "constant" else None),
             f"pad {dt} {mode}")


# ---- validation (#api-mlgraphbuilder-pad) ----------------------------------
def test_validation(ctx):
    b = builder(ctx)
    x = b.input("x", desc("float32", [2, 3]))
    p = lambda bp, ep, **o: lambda l: b.pad(x, bp, ep, o, label=l)  # noqa: E731
    type_error(p([1], [1, 1]), "pad", "beginningPadding")          # size != rank
    type_error(p([1, 1], [1]), "pad", "endingPadding")
    type_error(p([1, 1, 1], [1, 1, 1]), "pad", "beginningPadding")
    type_error(p([2, 0], [0, 0], mode="reflection"), "pad", "beginningPadding")  # >= size
    type_error(p([0, 0], [0, 3], mode="reflection"), "pad", "endingPadding")
    type_error(p([0, 0], [0, 0], mode="symmetric"), "pad", "mode")  # not in MLPaddingMode
    type_error(p([0, 0], [0, 0], mode="reflect"), "pad", "mode")
    type_error(p([0, 2**31 - 3], [0, 1]), "pad", "endingPadding")   # not a valid dimension
    type_error(p([0, 2**32 - 1], [0, 2**32 - 1]), "pad", "endingPadding")
    type_error(p(1, [1, 1]), "pad", "beginningPadding")             # not a sequence
    type_error(p([0, -1], [0, 0]), "pad", "beginningPadding")       # EnforceRange
    type_error(p([0, 0], [0, 0], value="1"), "pad", "value")
    assert tuple(b.pad(x, [1, 2], [1, 2], {"mode": "reflection"}).shape) == (4, 7)
    assert tuple(b.pad(x, [5, 5], [5, 5], {"mode": "edge"}).shape) == (12, 13)
    r = b.input("r", desc("uint8", [1, 3]))
    assert tuple(b.pad(r, [0, 2**31 - 4], [0, 0]).shape) == (1, 2**31 - 1)
