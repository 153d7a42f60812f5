"""Shared helpers for the operator tests in tests/ops.

Every test compares the output of a WebNN graph with an independent reference
computed by NumPy in float64 (or in exact Python-integer arithmetic) from the
*same* input values, then rounded to the output data type.

Helpers (import them with ``from .conftest import ...``):

* ``ctx`` / ``run`` fixtures -- a context, and ``run(build_fn, inputs)``.
* ``op_dtypes(op, operand)`` -- data types from ``ctx.op_support_limits()``.
* random shapes / broadcast shapes / values, special (edge) values.
* ``check_float`` / ``check_exact`` -- comparison with per-op tolerances and a
  failure message listing the first mismatching elements with their inputs.
* ``cpu_level()`` / ``cpu_runs_avx512()`` -- the level the hand-written CPU
  kernels run at here (the CPU's, capped by WEBNN_CPU_ISA).

Set WEBNN_TEST_DEVICE=cpu|gpu to choose the context's device (default: the
package's default context).  Operators that a GPU context does not support
(a backend that does not run them yet) are skipped; on the CPU, which runs
every operator, they fail.
"""
import functools
import os
import platform
import zlib

import numpy as np
import pytest

import webnn

NP_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "int32": np.int32,
    "uint32": np.uint32,
    "int64": np.int64,
    "uint64": np.uint64,
    "int8": np.int8,
    "uint8": np.uint8,
}
FLOAT_TYPES = ("float32", "float16")
INT_TYPES = ("int32", "uint32", "int64", "uint64", "int8", "uint8")
ALL_TYPES = tuple(NP_DTYPES)


def cpu_level():
    """the level the hand-written CPU kernels run at: "avx512", "avx2" or
    "baseline" (the CPU's, capped by WEBNN_CPU_ISA)"""
    if platform.machine() not in ("x86_64", "AMD64"):
        return "baseline"
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((ln for ln in f if ln.startswith("flags")), "").split())
    except OSError:
        return "baseline"
    cap = os.environ.get("WEBNN_CPU_ISA", "").lower()
    has = ["baseline"]
    if {"avx2", "fma", "bmi2"} <= flags:
        has.append("avx2")
        if {"avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512cd"} <= flags:
            has.append("avx512")
    if cap in ("avx2", "baseline") and cap in has:
        return cap
    return has[-1]


def cpu_runs_avx512():
    """the level of the AVX-512-only CPU kernels (cpu_level)"""
    return cpu_level() == "avx512"


def npdt(dt):
    return np.dtype(NP_DTYPES[dt])


def dt_name(np_dtype):
    np_dtype = np.dtype(np_dtype)
    for k, v in NP_DTYPES.items():
        if np.dtype(v) == np_dtype:
            return k
    raise KeyError(np_dtype)


def is_float(dt):
    return dt in FLOAT_TYPES


# ---------------------------------------------------------------------------
# context and support limits
# ---------------------------------------------------------------------------
def _make_context():
    dev = os.environ.get("WEBNN_TEST_DEVICE")
    if dev:
        return webnn.ml.create_context(device_type=dev)
    return webnn.ml.create_context()


@functools.lru_cache(maxsize=None)
def _limits():
    return _make_context().op_support_limits()


def _snake(name):
    """Operator names: the core's own table (camelCase -> snake_case);
    operand names: the python-api.md rule."""
    table = {row["camel"]: row["snake"] for row in webnn._core.op_table()}
    if name in table:
        return table[name]
    return webnn._api.snake_case(name)


def op_dtypes(op, operand=None):
    """Data types allowed for `operand` (default: the op's first operand) of
    operator `op` (camelCase or snake_case), from ctx.op_support_limits()."""
    lim = _limits().get(_snake(op))
    if lim is None:  # not supported by this context: no cases
        return []
    if operand is None:
        operand = next(k for k in lim if k != "output")
    return list(lim[_snake(operand)]["data_types"])


def op_max_rank(op, operand=None):
    lim = _limits().get(_snake(op))
    if lim is None:  # not supported by this context
        return 0
    if operand is None:
        operand = next(k for k in lim if k != "output")
    return lim[_snake(operand)]["rank_range"]["max"]


def implemented(op):
    return op in webnn.OPERATORS


@functools.lru_cache(maxsize=None)
def _is_cpu_context():
    return _make_context().device_type == "cpu"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test of an operator that a non-CPU context's backend does not run
    (the builder's TypeError "... is not supported by this context's <name>
    backend") is reported as skipped.  On the CPU it stays a failure: the CPU
    backend runs every operator, so a missing CPU kernel must not pass as a
    skip."""
    outcome = yield
    rep = outcome.get_result()
    exc = call.excinfo
    if (rep.failed and call.when in ("setup", "call") and exc is not None
            and exc.errisinstance(TypeError)
            and "is not supported by this context" in str(exc.value)
            and not _is_cpu_context()):
        rep.outcome = "skipped"
        rep.longrepr = (str(item.path), item.location[1] or 0, f"Skipped: {exc.value}")


@pytest.fixture(scope="session")
def ctx():
    return _make_context()


def run_graph(ctx, build_fn, inputs, constants=None):
    """Build a graph with one builder and compute it.

    inputs:    {name: ndarray} fed as graph inputs.
    constants: {name: ndarray} baked into the graph as constants.
    build_fn(builder, **operands) returns an MLOperand or {name: MLOperand}.
    Returns the output ndarray (or a dict when build_fn returned a dict).
    """
    constants = constants or {}
    b = webnn.MLGraphBuilder(ctx)
    ops = {}
    for name, arr in inputs.items():
        arr = np.asarray(arr)
        ops[name] = b.input(name, {"dataType": dt_name(arr.dtype), "shape": list(arr.shape)})
    for name, arr in constants.items():
        arr = np.ascontiguousarray(arr)
        ops[name] = b.constant({"dataType": dt_name(arr.dtype), "shape": list(arr.shape)}, arr)
    out = build_fn(b, **ops)
    single = not isinstance(out, dict)
    g = b.build({"out": out} if single else out)
    res = ctx.compute(g, {k: np.ascontiguousarray(v) for k, v in inputs.items()})
    return res["out"] if single else res


@pytest.fixture
def run(ctx):
    """run(build_fn, inputs, constants=None) on the session context."""
    return functools.partial(run_graph, ctx)


# ---------------------------------------------------------------------------
# random data
# ---------------------------------------------------------------------------
def rng_for(*key):
    """A numpy Generator seeded deterministically from the test's key."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def random_shape(rng, rank, max_dim=4):
    return tuple(int(d) for d in rng.integers(1, max_dim + 1, size=rank))


def broadcast_shapes(rng, n, out_rank, max_dim=4):
    """n input shapes that broadcast (NumPy rule) to a random output shape of
    rank out_rank: each input takes a random-length suffix of the output
    shape, some of its dimensions replaced by 1.  At least one input has the
    full rank, so the output rank is out_rank."""
    out = random_shape(rng, out_rank, max_dim)
    shapes = []
    full = int(rng.integers(0, n))
    for i in range(n):
        r = out_rank if i == full else int(rng.integers(0, out_rank + 1))
        s = list(out[out_rank - r:])
        for j in range(len(s)):
            if rng.random() < 0.35:
                s[j] = 1
        shapes.append(tuple(s))
    return np.broadcast_shapes(*shapes) if shapes else out, shapes


# A fixed list of broadcasting patterns that must always be covered (rank-0
# and size-1 dimensions on both sides).
BROADCAST_CASES = [
    ((), ()),
    ((), (3,)),
    ((2, 3), ()),
    ((1,), (4,)),
    ((4,), (1,)),
    ((2, 1), (1, 3)),
    ((1, 3), (2, 1)),
    ((3, 1, 5), (4, 1)),
    ((4, 1), (3, 1, 5)),
    ((2, 3, 4, 5), (5,)),
    ((5,), (2, 3, 4, 5)),
    ((1, 1, 1, 1, 1), (2, 3)),
    ((2, 1, 3, 1, 2), (1, 4, 1, 5, 1)),
    ((1,), ()),
    ((), (1, 1)),
]


def random_floats(rng, shape, dt, lo=-10.0, hi=10.0):
    """Uniform in [lo, hi], rounded to the data type (so exactly representable)."""
    v = rng.uniform(lo, hi, size=shape)
    return np.asarray(v).astype(npdt(dt))


def random_log_floats(rng, shape, dt, lo_exp, hi_exp, signed=True):
    """Magnitudes log-uniform in [10**lo_exp, 10**hi_exp], random signs."""
    v = 10.0 ** rng.uniform(lo_exp, hi_exp, size=shape)
    if signed:
        v = v * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(v).astype(npdt(dt))


def random_ints(rng, shape, dt, lo=None, hi=None):
    info = np.iinfo(npdt(dt))
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return np.asarray(rng.integers(lo, hi, size=shape, endpoint=True, dtype=npdt(dt)))


def random_values(rng, shape, dt, lo=-10.0, hi=10.0):
    if is_float(dt):
        return random_floats(rng, shape, dt, lo, hi)
    return random_ints(rng, shape, dt)


def float_specials(dt):
    """Edge values: NaN, +-Inf, +-0, subnormals, smallest normal, largest
    finite, and a few ordinary values."""
    t = npdt(dt)
    fi = np.finfo(t)
    tiny = fi.smallest_normal
    sub_min = fi.smallest_subnormal
    sub_max = (np.asarray(tiny, t) - np.asarray(sub_min, t)).astype(t)
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, sub_min, -sub_min, sub_max, -sub_max,
            tiny, -tiny, fi.max, -fi.max, 1.0, -1.0, 0.5, -2.5, 3.0, -7.0, 1.5]
    if dt == "float32":
        vals += [1e-20, -3e-30, 1e30, 65504.0, 65520.0, 16777217.0, 0.1]
    else:
        vals += [1e-4, 2048.0, -1000.0, 0.1, 6e-5]
    with np.errstate(all="ignore"):
        return np.array(vals, dtype=np.float64).astype(t)


def int_specials(dt):
    info = np.iinfo(npdt(dt))
    mx, mn = int(info.max), int(info.min)
    if mn < 0:
        vals = [mn, mn + 1, -7, -2, -1, 0, 1, 2, 3, 7, mx - 1, mx]
    else:
        vals = [0, 1, 2, 3, 7, mx // 2, mx // 2 + 1, mx - 1, mx]
    return np.array(vals, dtype=npdt(dt))


def specials(dt):
    return float_specials(dt) if is_float(dt) else int_specials(dt)


# ---------------------------------------------------------------------------
# exact integer helpers
# ---------------------------------------------------------------------------
def wrap_int(values, dt):
    """Python ints -> dtype with two's-complement wrap-around (low bits)."""
    t = npdt(dt)
    bits = t.itemsize * 8
    mask = (1 << bits) - 1
    signed = np.issubdtype(t, np.signedinteger)

    def w(v):
        v = int(v) & mask
        if signed and v >> (bits - 1):
            v -= 1 << bits
        return v

    arr = np.asarray(values, dtype=object)
    flat = [w(v) for v in arr.reshape(-1)]
    return np.array(flat, dtype=t).reshape(arr.shape)


def as_pyints(a):
    """ndarray -> object array of exact Python ints."""
    a = np.asarray(a)
    return np.array([int(v) for v in a.reshape(-1)], dtype=object).reshape(a.shape)


def cast_param(value, dt):
    """Spec: float options (alpha, beta, ...) are cast to the input's type."""
    return float(np.asarray(value, dtype=np.float64).astype(npdt(dt)))


# ---------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------
def _fmt_inputs(inputs, out_shape, idx):
    parts = []
    for name, arr in (inputs or {}).items():
        arr = np.asarray(arr)
        try:
            v = np.broadcast_to(arr, out_shape)[idx]
        except ValueError:
            continue
        parts.append(f"{name}={v!r}")
    return ", ".join(parts)


def _report(got, exp, bad, inputs, what, extra=""):
    out_shape = got.shape
    idxs = list(zip(*np.nonzero(bad))) if got.ndim else [()]
    lines = [f"{what}: {int(np.count_nonzero(bad))} of {bad.size} elements differ "
             f"(dtype {got.dtype}, shape {got.shape}){extra}"]
    for idx in idxs[:8]:
        idx = tuple(int(i) for i in idx)
        lines.append(f"  at {idx}: got {got[idx]!r}, expected {exp[idx]!r}"
                     f"   [{_fmt_inputs(inputs, out_shape, idx)}]")
    return "\n".join(lines)


def check_shape_dtype(got, dt, shape):
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == npdt(dt), f"dtype: got {got.dtype}, expected {npdt(dt)}"
    assert tuple(got.shape) == tuple(shape), f"shape: got {got.shape}, expected {tuple(shape)}"


def check_exact(got, ref, dt, shape=None, inputs=None, what="result"):
    """Integer (or bit-exact) comparison against `ref` (Python ints or an
    array), after wrapping it to dt."""
    ref = np.asarray(ref)
    if ref.dtype == object:
        ref = wrap_int(ref, dt)
    else:
        ref = ref.astype(npdt(dt))
    check_shape_dtype(got, dt, ref.shape if shape is None else shape)
    bad = got != ref
    if is_float(dt):
        bad &= ~(np.isnan(got) & np.isnan(ref))
    if np.any(bad):
        pytest.fail(_report(got, ref, bad, inputs, what), pytrace=False)


def _inf_to_big(x, dt):
    """+-Inf -> +-(largest finite + 1 ulp), the IEEE overflow threshold."""
    fi = np.finfo(npdt(dt))
    big = 2 * float(fi.max) - float(np.nextafter(fi.max, fi.dtype.type(0)))
    return np.where(np.isinf(x), np.sign(x) * big, x)


def check_float(got, ref64, dt, shape=None, *, ulps=0.0, rtol=0.0, atol=0.0,
                zero_sign=False, inputs=None, what="result"):
    """Compare a float32/float16 output with a float64 reference.

    exp = ref64 rounded to dt (round to nearest even).  An element passes when
    it equals exp (NaN matches NaN), or when
        |got - exp| <= ulps * ulp(exp) + rtol * |ref64| + atol
    (atol may be an array).  Infinities count as the overflow threshold, so
    a finite result only matches Inf within the tolerance.
    zero_sign: also require the sign of zero results to match.
    """
    t = npdt(dt)
    ref64 = np.asarray(ref64, dtype=np.float64)
    if shape is None:
        shape = ref64.shape
    check_shape_dtype(got, dt, shape)
    ref64 = np.broadcast_to(ref64, shape)
    with np.errstate(all="ignore"):
        exp = ref64.astype(t)
        g64 = got.astype(np.float64)
        e64 = exp.astype(np.float64)
        nan_g, nan_e = np.isnan(g64), np.isnan(e64)
        same = (g64 == e64) | (nan_g & nan_e)
        if zero_sign:
            same &= ~((g64 == 0) & (e64 == 0) & (np.signbit(g64) != np.signbit(e64)))
        ulp = np.spacing(np.abs(exp)).astype(np.float64)
        tol = ulps * ulp + rtol * np.abs(ref64) + atol
        err = np.abs(_inf_to_big(g64, dt) - _inf_to_big(e64, dt))
        near = (err <= tol) & ~nan_g & ~nan_e
        near &= ~(np.isinf(g64) & np.isinf(e64))  # inf vs -inf
    bad = ~(same | near)
    if zero_sign:
        # a zero-sign mismatch is not excused by the tolerance
        bad |= (g64 == 0) & (e64 == 0) & (np.signbit(g64) != np.signbit(e64))
    if np.any(bad):
        extra = f"; tolerance ulps={ulps} rtol={rtol} atol={'array' if np.ndim(atol) else atol}"
        pytest.fail(_report(got, exp, bad, inputs, what, extra), pytrace=False)


def check_result(got, ref, dt, shape=None, inputs=None, what="result", **tol):
    """check_float for float types, check_exact for integer types."""
    if is_float(dt):
        return check_float(got, ref, dt, shape, inputs=inputs, what=what, **tol)
    return check_exact(got, ref, dt, shape, inputs=inputs, what=what)


def f64(a):
    return np.asarray(a).astype(np.float64)
