"""where(condition, trueValue, falseValue): non-zero condition picks trueValue;
three-way NumPy broadcasting; values are copied bit-exactly."""
import numpy as np
import pytest

from .conftest import (broadcast_shapes, check_shape_dtype, float_specials, int_specials,
                       is_float, npdt, op_dtypes, random_values, rng_for)

DTYPES = op_dtypes("where", "true_value")
assert op_dtypes("where", "condition") == ["uint8"]

PATTERNS = [
    ((), (), ()),
    ((3,), (), ()),
    ((), (2, 3), (3,)),
    ((2, 1), (1, 3), ()),
    ((1,), (4,), (1,)),
    ((4, 1, 2), (3, 1), (1, 1, 2)),
    ((1, 1, 1, 1, 1), (2, 1, 3), (4, 1)),
    ((2, 3, 4, 5, 2), (5, 1), (1, 4, 1, 2)),
    ((5, 1), (2, 3, 4, 1, 6), ()),
]


def _where(bld, c, t, f):
    return bld.where(c, t, f)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def check(c, t, f, got, dt):
    shape = np.broadcast_shapes(c.shape, t.shape, f.shape)
    check_shape_dtype(got, dt, shape)
    ref = np.where(c != 0, t, f)  # numpy's where copies the selected values
    bad = bits(got) != bits(ref)
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        cc, tt, ff = (np.broadcast_to(a, shape)[idx] for a in (c, t, f))
        pytest.fail(f"where {dt}: {int(bad.sum())} of {bad.size} differ; first at {idx}: got "
                    f"{got[idx]!r}, expected {ref[idx]!r} [condition={cc!r}, "
                    f"trueValue={tt!r}, falseValue={ff!r}]", pytrace=False)


def cond(rng, shape):
    return rng.choice(np.array([0, 0, 1, 2, 255], np.uint8), size=shape)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_random(run, dt, rank):
    rng = rng_for("where", dt, rank)
    for _ in range(2):
        _, (sc, st, sf) = broadcast_shapes(rng, 3, rank)
        c, t, f = cond(rng, sc), random_values(rng, st, dt), random_values(rng, sf, dt)
        check(c, t, f, run(_where, {"c": c, "t": t, "f": f}), dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_patterns(run, dt):
    rng = rng_for("where-p", dt)
    for i, (sc, st, sf) in enumerate(PATTERNS):
        c, t, f = cond(rng, sc), random_values(rng, st, dt), random_values(rng, sf, dt)
        if i % 3 == 1:
            got = run(_where, {"c": c}, constants={"t": t, "f": f})
        elif i % 3 == 2:
            got = run(_where, {"t": t, "f": f}, constants={"c": c})
        else:
            got = run(_where, {"c": c, "t": t, "f": f})
        check(c, t, f, got, dt)


@pytest.mark.parametrize("dt", DTYPES)
def test_special_values(run, dt):
    """NaN (with payload), +-0, +-Inf, subnormals, INT extremes pass through
    unchanged; every non-zero condition byte counts as true."""
    s = float_specials(dt) if is_float(dt) else int_specials(dt)
    if is_float(dt):
        payload = np.array([0x7FC12345, 0xFFC00001] if dt == "float32" else [0x7E15, 0xFE01],
                           np.uint32 if dt == "float32" else np.uint16).view(npdt(dt))
        s = np.concatenate([s, payload])
    n = s.size
    c = np.arange(256, dtype=np.uint8)[:, None]       # [256, 1]
    t = s[None, :]                                    # [1, n]
    f = s[::-1][None, :].copy()
    check(c, t, f, run(_where, {"c": c, "t": t, "f": f}), dt)
    assert n > 5


def test_large(run):
    rng = rng_for("where-large")
    c = cond(rng, (7, 1, 1000))
    t = rng.standard_normal((1, 33, 1000)).astype(np.float32)
    f = np.float32(-1) * np.ones((7, 33, 1), np.float32)
    check(c, t, f, run(_where, {"c": c, "t": t, "f": f}), "float32")


@pytest.mark.parametrize("dt", ["float32", "int32", "float16", "int8"])
@pytest.mark.parametrize("shapes", [((3, 20000), (), (3, 20000)), ((3, 20000), (3, 20000), ()),
                                    ((2, 9000), (2, 9000), (2, 9000)), ((17000,), (1,), (17000,)),
                                    ((2, 8193), (2, 8193), (2, 8193))])
def test_long_rows(run, dt, shapes):
    """rows longer than one task's piece (8192 elements), the condition
    contiguous and each value contiguous or one element (attention's
    where(isNaN(p), 0, p)): every piece, every element size"""
    rng = rng_for("where-long", dt, shapes)
    sc, st, sf = shapes
    c, t, f = cond(rng, sc), random_values(rng, st, dt), random_values(rng, sf, dt)
    check(c, t, f, run(_where, {"c": c, "t": t, "f": f}), dt)
