"""cast between every pair of supported data types.

Reference (exact, independent of NumPy's own casts where they could double
round):
* float -> float: nearest representable value (ties to even), +-Inf when out
  of range (float64 value rounded once to the target).
* int -> float:   nearest representable value, computed exactly from the
  Python integer (no double rounding through float64 for 64-bit values).
* int -> int:     lowest N bits reinterpreted (two's complement), like astype.
* float -> int:   truncated toward zero when in range (spec); out of range
  and NaN are implementation-defined -- this package documents saturation
  and NaN -> 0 (test_float_to_int_saturates).
"""
import math

import numpy as np
import pytest

from .conftest import (as_pyints, check_exact, check_float, float_specials, int_specials,
                       is_float, npdt, op_dtypes, random_floats, random_ints, random_shape,
                       rng_for, wrap_int)

SRC = op_dtypes("cast", "input")
DST = op_dtypes("cast", "output")
PAIRS = [(s, d) for s in SRC for d in DST]


def round_int_to_float(v, dt):
    """Correctly rounded (ties to even) conversion of a Python int."""
    t = npdt(dt).type
    fmax = int(np.finfo(t).max)
    fm = np.finfo(t).max
    big = fmax + (fmax - int(np.nextafter(fm, t(0))))  # 2**(emax+1): the overflow value
    a = abs(v)
    if a >= fmax:
        # between fmax and `big` (the would-be next value): ties go to `big`
        # (even mantissa), i.e. Inf
        r = np.inf if 2 * a >= fmax + big else float(fmax)
        return math.copysign(r, v) if v else 0.0
    with np.errstate(all="ignore"):
        f = np.asarray(float(a)).astype(t)
    cands = {float(f), float(np.nextafter(f, t(np.inf))), float(np.nextafter(f, t(0)))}
    cands = [c for c in cands if math.isfinite(c)]

    def key(c):
        d = abs(int(c) - a) if c >= 1 or c == 0 else abs(c - a)
        odd = int(np.asarray(c, t).view(np.uint32 if dt == "float32" else np.uint16)) & 1
        return (d, odd)

    r = min(cands, key=key)
    return -r if v < 0 else r


def ref_cast(x, src, dst):
    if is_float(src) and is_float(dst):
        return x.astype(np.float64)  # rounded to dst by check_float
    if not is_float(src) and is_float(dst):
        flat = [round_int_to_float(int(v), dst) for v in x.reshape(-1)]
        return np.array(flat, dtype=np.float64).reshape(x.shape)
    if not is_float(src):
        return as_pyints(x)  # wrapped by check_exact
    # float -> int, in range only
    return np.array([math.trunc(float(v)) for v in x.reshape(-1)], dtype=object).reshape(x.shape)


def in_range_floats(rng, shape, src, dst):
    """Float values whose truncation fits in the integer type dst."""
    info = np.iinfo(npdt(dst))
    fmax = float(np.finfo(npdt(src)).max)
    lo, hi = max(float(info.min), -fmax), min(float(info.max), fmax)
    wide = rng.uniform(lo, hi, size=shape)
    small = rng.uniform(max(lo, -300.0), min(hi, 300.0), size=shape)
    tiny = rng.uniform(-0.99, 0.99, size=shape)  # truncates to (-)0
    pick = rng.random(shape)
    v = np.where(pick < 0.3, wide, np.where(pick < 0.85, small, tiny))
    with np.errstate(all="ignore"):
        v = np.asarray(v).astype(npdt(src))
    # drop values that rounding pushed out of range
    t = np.trunc(v.astype(np.float64))
    ok = (t >= float(info.min)) & (t <= float(info.max)) & (t < 2.0**(info.bits - (info.min < 0)))
    return np.where(ok, v, np.zeros((), npdt(src))).astype(npdt(src))


def gen(rng, shape, src, dst):
    if is_float(src) and not is_float(dst):
        return in_range_floats(rng, shape, src, dst)
    if is_float(src):
        if src == "float32" and dst == "float16":
            v = np.where(rng.random(shape) < 0.7, rng.uniform(-70000, 70000, size=shape),
                         rng.uniform(-1e-4, 1e-4, size=shape))
            return np.asarray(v).astype(np.float32)
        return random_floats(rng, shape, src, -1000, 1000)
    return random_ints(rng, shape, src)


def check(src, dst, x, got):
    ref = ref_cast(x, src, dst)
    what = f"cast {src}->{dst}"
    if is_float(dst):
        check_float(got, ref, dst, x.shape, zero_sign=is_float(src), inputs={"x": x}, what=what)
    else:
        check_exact(got, ref, dst, x.shape, inputs={"x": x}, what=what)


def _cast(dst):
    return lambda bld, x: bld.cast(x, dst)


@pytest.mark.parametrize("src,dst", PAIRS)
def test_random(run, src, dst):
    rng = rng_for("cast", src, dst)
    for rank in range(6):
        x = gen(rng, random_shape(rng, rank, max_dim=5), src, dst)
        check(src, dst, x, run(_cast(dst), {"x": x}))
    x = gen(rng, (4, 1025), src, dst)
    check(src, dst, x, run(_cast(dst), {"x": x}))


@pytest.mark.parametrize("src,dst", PAIRS)
def test_special_values(run, src, dst):
    """Float -> float: NaN, +-Inf, +-0, subnormals, range edges.  Int -> any:
    INT_MIN / INT_MAX and friends (wrap / nearest float).  Float -> int: the
    in-range edge values only."""
    if is_float(src):
        s = float_specials(src)
        if not is_float(dst):
            with np.errstate(all="ignore"):
                t = np.trunc(s.astype(np.float64))
            info = np.iinfo(npdt(dst))
            s = s[np.isfinite(t) & (t >= info.min) & (t <= info.max)
                  & (t < 2.0**(info.bits - (info.min < 0)))]
    else:
        info = np.iinfo(npdt(src))
        extra = [2**24 + 1, 2**24 + 3, 65504, 65519, 65520, 2049, 2051, 2**53 + 1,
                 2**60 + 2**36 + 1, -(2**60 + 2**36 + 1), 2**63 - 1, 2**64 - 1, 255, 256, -129]
        s = np.concatenate([int_specials(src),
                            np.array([v for v in extra if info.min <= v <= info.max],
                                     dtype=npdt(src))])
    check(src, dst, s, run(_cast(dst), {"x": s}))


@pytest.mark.parametrize("src", [s for s in SRC if is_float(s)])
@pytest.mark.parametrize("dst", [d for d in DST if not is_float(d)])
def test_float_to_int_saturates(run, src, dst):
    """Documented (spec: implementation-defined): out-of-range float -> int
    saturates to the type's range, NaN -> 0."""
    info = np.iinfo(npdt(dst))
    with np.errstate(all="ignore"):
        x = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30, float(info.max) * 2 + 4096,
                      float(info.min) * 2 - 4096, -1.0, -300.0, 2.0**63, 2.0**64, 2.0**31,
                      2.0**32, 300.0, -200.0], np.float64).astype(npdt(src))
    x64 = x.astype(np.float64)
    ref = []
    for v in x64:
        if math.isnan(v):
            ref.append(0)
        elif v == math.inf:
            ref.append(int(info.max))
        elif v == -math.inf:
            ref.append(int(info.min))
        else:
            ref.append(min(max(math.trunc(v), int(info.min)), int(info.max)))
    got = run(_cast(dst), {"x": x})
    check_exact(got, np.array(ref, dtype=object), dst, inputs={"x": x},
                what=f"cast {src}->{dst} (saturating)")


def test_hand_checked(run):
    # float32 -> float16: ties to even, overflow, subnormal underflow
    vals = [2049.0, 2051.0, 65519.0, 65520.0, 2.0**-25, 2.0**-25 + 2.0**-35, 1 + 2.0**-11,
            1 + 3 * 2.0**-11, -0.0, 1e-8, -70000.0]
    exp = [2048.0, 2052.0, 65504.0, np.inf, 0.0, 2.0**-24, 1.0, 1 + 2.0**-9, -0.0, 0.0, -np.inf]
    x = np.array(vals, np.float32)
    check_float(run(_cast("float16"), {"x": x}), np.array(exp), "float16", zero_sign=True,
                inputs={"x": x}, what="cast float32->float16")
    # int8 -1 -> uint8 255 (spec NOTE); int32 -> int8 keeps the low bits
    x = np.array([-1, -128, 127], np.int8)
    check_exact(run(_cast("uint8"), {"x": x}), np.array([255, 128, 127], dtype=object), "uint8",
                inputs={"x": x}, what="cast int8->uint8")
    x = np.array([300, -129, 2**31 - 1, -2**31], np.int32)
    check_exact(run(_cast("int8"), {"x": x}), np.array([44, 127, -1, 0], dtype=object), "int8",
                inputs={"x": x}, what="cast int32->int8")
    # float -> int truncates toward zero
    x = np.array([-7.9, -0.5, 0.5, 7.9, -2.0], np.float32)
    check_exact(run(_cast("int32"), {"x": x}), np.array([-7, 0, 0, 7, -2], dtype=object),
                "int32", inputs={"x": x}, what="cast float32->int32")
    # int64 -> float32 rounds once (no double rounding through float64)
    x = np.array([2**60 + 2**36 + 1, 2**24 + 1, 2**24 + 3], np.int64)
    check_float(run(_cast("float32"), {"x": x}), np.array([2.0**60 + 2.0**37, 2.0**24, 2.0**24 + 4]),
                "float32", inputs={"x": x}, what="cast int64->float32")
    assert round_int_to_float(2**60 + 2**36 + 1, "float32") == 2.0**60 + 2.0**37
    assert round_int_to_float(65520, "float16") == math.inf
    assert round_int_to_float(65519, "float16") == 65504.0
    np.testing.assert_array_equal(wrap_int(np.array([300], dtype=object), "int8"), [44])
