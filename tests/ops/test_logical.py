"""Element-wise logical operations: comparisons (output uint8 0/1), logicalNot
/And/Or/Xor (uint8, non-zero is true), isNaN, isInfinite."""
import numpy as np
import pytest

from .conftest import (BROADCAST_CASES, broadcast_shapes, check_exact, float_specials,
                       int_specials, is_float, npdt, op_dtypes, random_floats, random_ints,
                       random_shape, rng_for)

COMPARE = {
    "equal": np.equal, "notEqual": np.not_equal, "greater": np.greater,
    "greaterOrEqual": np.greater_equal, "lesser": np.less, "lesserOrEqual": np.less_equal,
}
LOGICAL = {"logicalAnd": np.logical_and, "logicalOr": np.logical_or,
           "logicalXor": np.logical_xor}
CMP_CASES = [(op, dt) for op in COMPARE for dt in op_dtypes(op, "a")]
LOG_CASES = [(op, dt) for op in LOGICAL for dt in op_dtypes(op, "a")]


def ref_compare(op, a, b):
    """Exact comparison: float types in float64, integers as Python ints
    (object arrays), so uint64 / int64 never lose precision."""
    if is_float(a.dtype.name):
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
    else:
        a64, b64 = a.astype(object), b.astype(object)
    with np.errstate(all="ignore"):
        return COMPARE[op](a64, b64).astype(np.uint8)


def cmp_operands(rng, dt, sa, sb):
    if is_float(dt):
        a = random_floats(rng, sa, dt, -3, 3)
        b = random_floats(rng, sb, dt, -3, 3)
        # round to a coarse grid so that ties happen often
        a = np.round(a * 2).astype(npdt(dt)) / np.array(2, npdt(dt))
        b = np.round(b * 2).astype(npdt(dt)) / np.array(2, npdt(dt))
        return a.astype(npdt(dt)), b.astype(npdt(dt))
    a = random_ints(rng, sa, dt)
    b = random_ints(rng, sb, dt)
    if rng.random() < 0.5:
        info = np.iinfo(npdt(dt))
        lo = max(int(info.min), -3)
        a = random_ints(rng, sa, dt, lo, lo + 6)
        b = random_ints(rng, sb, dt, lo, lo + 6)
    return a, b


def bool_operands(rng, shape):
    return rng.choice(np.array([0, 0, 0, 1, 1, 2, 7, 128, 255], np.uint8), size=shape)


def _b2(op):
    return lambda bld, a, b: getattr(bld, op)(a, b)


@pytest.mark.parametrize("op,dt", CMP_CASES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_compare_random(run, op, dt, rank):
    rng = rng_for("cmp", op, dt, rank)
    _, (sa, sb) = broadcast_shapes(rng, 2, rank)
    a, b = cmp_operands(rng, dt, sa, sb)
    got = run(_b2(op), {"a": a, "b": b})
    check_exact(got, ref_compare(op, a, b), "uint8", inputs={"a": a, "b": b}, what=f"{op} {dt}")


@pytest.mark.parametrize("op,dt", CMP_CASES)
def test_compare_broadcast_patterns(run, op, dt):
    rng = rng_for("cmp-bcast", op, dt)
    for i, (sa, sb) in enumerate(BROADCAST_CASES):
        a, b = cmp_operands(rng, dt, sa, sb)
        if i % 2:
            got = run(_b2(op), {"b": b}, constants={"a": a})
        else:
            got = run(_b2(op), {"a": a, "b": b})
        check_exact(got, ref_compare(op, a, b), "uint8", inputs={"a": a, "b": b},
                    what=f"{op} {dt} {sa} vs {sb}")


@pytest.mark.parametrize("op,dt", CMP_CASES)
def test_compare_special_values(run, op, dt):
    """All pairs of edge values: NaN compares unequal / unordered (including
    greaterOrEqual and lesserOrEqual), -0 == +0, extremes of integer types."""
    s = float_specials(dt) if is_float(dt) else int_specials(dt)
    a, b = s[:, None], s[None, :]
    got = run(_b2(op), {"a": a, "b": b})
    check_exact(got, ref_compare(op, a, b), "uint8", inputs={"a": a, "b": b}, what=f"{op} {dt}")


def test_compare_hand_checked(run):
    nan = np.nan
    a = np.array([nan, nan, 1.0, 0.0, -np.inf], np.float32)
    b = np.array([nan, 1.0, nan, -0.0, -np.inf], np.float32)
    expect = {
        "equal": [0, 0, 0, 1, 1], "notEqual": [1, 1, 1, 0, 0],
        "greater": [0, 0, 0, 0, 0], "greaterOrEqual": [0, 0, 0, 1, 1],
        "lesser": [0, 0, 0, 0, 0], "lesserOrEqual": [0, 0, 0, 1, 1],
    }
    for op, e in expect.items():
        got = run(_b2(op), {"a": a, "b": b})
        check_exact(got, np.array(e, np.uint8), "uint8", inputs={"a": a, "b": b}, what=op)
    # uint64 / int64 values that differ only below float64 precision
    a = np.array([2**64 - 1, 2**63], np.uint64)
    b = np.array([2**64 - 2, 2**63 + 1], np.uint64)
    got = run(_b2("greater"), {"a": a, "b": b})
    check_exact(got, np.array([1, 0], np.uint8), "uint8", inputs={"a": a, "b": b}, what="greater u64")
    a = np.array([2**63 - 1, -2**63], np.int64)
    b = np.array([2**63 - 2, -2**63 + 1], np.int64)
    got = run(_b2("equal"), {"a": a, "b": b})
    check_exact(got, np.array([0, 0], np.uint8), "uint8", inputs={"a": a, "b": b}, what="equal i64")


@pytest.mark.parametrize("op,dt", LOG_CASES)
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_logical_binary_random(run, op, dt, rank):
    rng = rng_for("logical", op, dt, rank)
    _, (sa, sb) = broadcast_shapes(rng, 2, rank)
    a, b = bool_operands(rng, sa), bool_operands(rng, sb)
    got = run(_b2(op), {"a": a, "b": b})
    check_exact(got, LOGICAL[op](a != 0, b != 0).astype(np.uint8), "uint8",
                inputs={"a": a, "b": b}, what=op)


@pytest.mark.parametrize("op,dt", LOG_CASES)
def test_logical_binary_patterns(run, op, dt):
    rng = rng_for("logical-bcast", op, dt)
    vals = np.array([0, 1, 2, 255], np.uint8)
    a, b = vals[:, None], vals[None, :]
    got = run(_b2(op), {"a": a, "b": b})
    check_exact(got, LOGICAL[op](a != 0, b != 0).astype(np.uint8), "uint8",
                inputs={"a": a, "b": b}, what=op)
    for sa, sb in BROADCAST_CASES:
        a, b = bool_operands(rng, sa), bool_operands(rng, sb)
        got = run(_b2(op), {"a": a, "b": b})
        check_exact(got, LOGICAL[op](a != 0, b != 0).astype(np.uint8), "uint8",
                    inputs={"a": a, "b": b}, what=f"{op} {sa} vs {sb}")


@pytest.mark.parametrize("dt", op_dtypes("logicalNot", "a"))
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_logical_not(run, dt, rank):
    rng = rng_for("not", dt, rank)
    a = bool_operands(rng, random_shape(rng, rank))
    got = run(lambda bld, a: bld.logical_not(a), {"a": a})
    check_exact(got, (a == 0).astype(np.uint8), "uint8", inputs={"a": a}, what="logicalNot")
    a = np.arange(256, dtype=np.uint8)
    got = run(lambda bld, a: bld.logical_not(a), {"a": a})
    check_exact(got, (a == 0).astype(np.uint8), "uint8", inputs={"a": a}, what="logicalNot")


@pytest.mark.parametrize("op", ["isNaN", "isInfinite"])
@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("rank", [0, 1, 2, 3, 4, 5])
def test_is_nan_is_infinite(run, op, dt, rank):
    if dt not in op_dtypes(op, "a"):
        pytest.skip(f"{op} does not support {dt}")
    rng = rng_for(op, dt, rank)
    shape = random_shape(rng, rank)
    s = float_specials(dt)
    a = np.where(rng.random(shape) < 0.5, rng.choice(s, size=shape),
                 random_floats(rng, shape, dt)).astype(npdt(dt))
    fn = np.isnan if op == "isNaN" else np.isinf
    got = run(lambda bld, a: getattr(bld, op)(a), {"a": a})
    check_exact(got, fn(a).astype(np.uint8), "uint8", inputs={"a": a}, what=f"{op} {dt}")
    # every edge value, plus NaNs with other payloads / sign
    bits = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFF800000, 0x7F7FFFFF]
                    if dt == "float32" else [0x7E01, 0xFE00, 0x7C01, 0xFC00, 0x7BFF],
                    np.uint32 if dt == "float32" else np.uint16)
    a = np.concatenate([s, bits.view(npdt(dt))])
    got = run(lambda bld, a: getattr(bld, op)(a), {"a": a})
    check_exact(got, fn(a).astype(np.uint8), "uint8", inputs={"a": a}, what=f"{op} {dt}")


@pytest.mark.parametrize("op", list(COMPARE))
@pytest.mark.parametrize("dt", ["float32", "float16", "int64", "uint8"])
def test_compare_large_broadcast(run, op, dt):
    if dt not in op_dtypes(op, "a"):
        pytest.skip(f"{op} does not support {dt}")
    rng = rng_for("cmp-large", op, dt)
    for sa, sb in [((3, 1, 1031), (1, 5, 1031)), ((2051,), ()), ((7, 1), (1, 1500))]:
        a, b = cmp_operands(rng, dt, sa, sb)
        got = run(_b2(op), {"a": a, "b": b})
        check_exact(got, ref_compare(op, a, b), "uint8", inputs={"a": a, "b": b},
                    what=f"{op} {dt} {sa} vs {sb}")
