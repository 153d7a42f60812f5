"""Every operator on every backend against the CPU (ggml's test-backend-ops).

The cases are generated from the operator table (tests/backends/opgen.py):
one or more small valid graphs per operator, data type and option value,
with seeded random inputs in each operator's domain.  Each case runs

* on the CPU, against a NumPy float64 (or exact) reference where opgen has a
  simple one, otherwise checked for shape, data type and finite values;
* on every other device of this process (webnn.testing.plugin's devices:
  ``--webnn-device`` / ``WEBNN_TEST_DEVICE`` / every available one), against
  the CPU's result for the same inputs: bit for bit where the operator only
  moves, compares or exactly rounds values (and for integers), otherwise
  within a few ulps per data type plus, for operators that sum products, a
  tolerance scaled by the result's magnitude.

A case whose operator, data type or rank the device's
``op_support_limits()`` does not list is skipped, the reason in its id
(``gpu-gru-float16-default-unsupported``).  An operator of the table with no
generated case fails test_every_operator_has_cases unless opgen's
ALLOW_NO_CASES lists it with a reason, so a new operator is never skipped
silently.  test_cuda_emu.py runs this file on the CPU emulation of the CUDA
backend; WEBNN_BACKEND_OPS=long adds bigger shapes and a second draw.
"""
import numpy as np
import pytest

import webnn
from webnn.testing import plugin

from . import opgen

CASES = {}      # op -> [Case]
NO_CASES = {}   # op -> why none
for _op in webnn.OPERATORS:
    try:
        CASES[_op] = opgen.cases_for(_op)
    except opgen.NoCase as _e:
        NO_CASES[_op] = str(_e)

_CONTEXTS = {}


def context(device):
    if device not in _CONTEXTS:
        _CONTEXTS[device] = webnn.ml.create_context(device_type=device)
    return _CONTEXTS[device]


@pytest.fixture(scope="module", autouse=True)
def _destroy_contexts():
    yield
    for c in _CONTEXTS.values():
        c.destroy()
    _CONTEXTS.clear()


def unsupported(limits, case):
    """Why the context with these op_support_limits cannot run the case (None
    when it can)."""
    row = opgen.ROWS[case.op]
    lim = limits.get(row["snake"])
    if lim is None:
        return "unsupported"
    for name, (dt, rank) in case.operand_types.items():
        ol = lim.get(opgen.snake(name))
        if not isinstance(ol, dict):
            continue
        if dt not in ol["data_types"]:
            return f"unsupported-{dt}-{opgen.snake(name)}"
        rr = ol["rank_range"]
        if not rr["min"] <= rank <= rr["max"]:
            return f"unsupported-rank{rank}-{opgen.snake(name)}"
    return None


def pytest_generate_tests(metafunc):
    if "case" not in metafunc.fixturenames:
        return
    params = []
    for device in plugin._devices(metafunc.config):
        limits = None
        if device != "cpu":
            try:
                limits = context(device).op_support_limits()
            except webnn.NotSupportedError as e:
                params.append(pytest.param(device, None, id=f"{device}-no-context",
                                           marks=pytest.mark.skip(reason=str(e))))
                continue
        for op in webnn.OPERATORS:
            for c in CASES.get(op, []):
                why = unsupported(limits, c) if limits is not None else None
                pid = f"{device}-{c.id}" + (f"-{why}" if why else "")
                marks = [pytest.mark.skip(reason=f"{device}: {why}")] if why else []
                params.append(pytest.param(device, c, id=pid, marks=marks))
    metafunc.parametrize("device,case", params)


# ---- running a case ------------------------------------------------------------------------
def run_case(ctx, case):
    b = webnn.MLGraphBuilder(ctx)
    ops = {}
    feeds = {}
    for name, arr in case.inputs.items():
        desc = {"dataType": str(arr.dtype), "shape": list(arr.shape)}
        if name in case.constants:
            ops[name] = b.constant(desc, np.ascontiguousarray(arr))
        else:
            ops[name] = b.input(name, desc)
            feeds[name] = np.ascontiguousarray(arr)
    out = case.build(b, ops)
    if isinstance(out, (list, tuple)):
        out = {f"out{j}": o for j, o in enumerate(out)}
    elif not isinstance(out, dict):
        out = {"out": out}
    g = b.build(out)
    try:
        res = ctx.compute(g, feeds)
    finally:
        g.destroy()
    return [res[k] for k in sorted(out, key=lambda k: (len(k), k))]


# ---- comparisons ---------------------------------------------------------------------------
DEVICE_ULPS = {"float32": 16, "float16": 2}   # against the CPU
REF_ULPS = {"float32": 16, "float16": 1}      # the CPU against NumPy float64
ACCUM_RTOL = {"float32": 2e-5, "float16": 4e-3}  # of the result's largest magnitude
EPS = {"float32": 2.0 ** -23, "float16": 2.0 ** -10}


def mismatch(got, exp, *, exact, accum, ulps, atol=0.0):
    """A message describing how got differs from exp (same data type), or None."""
    if got.dtype != exp.dtype or got.shape != exp.shape:
        return f"got {got.dtype}{list(got.shape)}, expected {exp.dtype}{list(exp.shape)}"
    g, e = np.atleast_1d(got), np.atleast_1d(exp)
    dt = str(g.dtype)
    if g.dtype.kind != "f":
        bad = g != e
        tol = 0
    else:
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        nan = np.isnan(g64) & np.isnan(e64)
        with np.errstate(all="ignore"):
            same = (g64 == e64) | nan
            if exact:
                bad = ~same
                tol = 0
            else:
                finite = e64[np.isfinite(e64)]
                tol = ulps * np.spacing(np.abs(e).astype(g.dtype)).astype(np.float64) + atol
                if accum:
                    tol = tol + ACCUM_RTOL[dt] * max(1.0, float(np.max(np.abs(finite)))
                                                     if finite.size else 1.0)
                bad = ~(same | (np.abs(g64 - e64) <= tol))
    if not np.any(bad):
        return None
    i = tuple(int(x) for x in np.argwhere(bad)[0])
    t = tol if np.ndim(tol) == 0 else np.broadcast_to(tol, bad.shape)[i]
    return (f"{int(bad.sum())} of {bad.size} elements differ; first at {i}: got {g[i]!r}, "
            f"expected {e[i]!r} (tolerance {float(t):.3g})")


def ref_as(ref, dt):
    """A float64 / bool reference rounded to the output's data type."""
    ref = np.asarray(ref)
    t = np.dtype(dt)
    if t.kind == "f":
        with np.errstate(all="ignore"):
            return ref.astype(t)
    if ref.dtype.kind == "f":
        return np.round(ref).astype(np.int64).astype(t)
    return ref.astype(t)


def check_cpu(case, outs):
    """The CPU's outputs against the case's reference, or plausibility."""
    fails = []
    if case.ref is not None:
        refs = case.ref(case.inputs)
        refs = list(refs) if isinstance(refs, (list, tuple)) else [refs]
        assert len(refs) == len(outs), (len(refs), len(outs))
        for j, (o, r) in enumerate(zip(outs, refs)):
            expected_dt = case.operand_types.get("output", (None,))[0]
            if expected_dt is None:
                expected_dt = "uint8" if np.asarray(r).dtype == bool else str(o.dtype)
            exp = ref_as(r, expected_dt)
            dt = str(o.dtype)
            m = mismatch(o, exp, exact=case.exact, accum=case.accum,
                         ulps=REF_ULPS.get(dt, 0),
                         atol=2 * EPS[dt] if dt in EPS and not case.exact else 0.0)
            if m:
                fails.append(f"output {j} against NumPy: {m}")
    else:
        for j, o in enumerate(outs):
            want = case.operand_types.get("output", (None,))[0]
            outs_lim = [d for n, d, _, _ in opgen.ROWS[case.op]["limits"]
                        if n in ("output", "outputs")]
            if want is None and outs_lim and len(outs_lim[0]) == 1:
                want = outs_lim[0][0]  # comparisons, logical operators: uint8
            if want is None:
                want = str(next(iter(case.inputs.values())).dtype)
            if str(o.dtype) != want:
                fails.append(f"output {j}: data type {o.dtype}, expected {want}")
            if o.dtype.kind == "f" and case.finite and not np.all(np.isfinite(o)):
                fails.append(f"output {j}: {int((~np.isfinite(o)).sum())} values not finite")
            if o.size == 0:
                fails.append(f"output {j}: empty")
    return fails


def check_device(case, outs, cpu_outs, device):
    fails = []
    if len(outs) != len(cpu_outs):
        return [f"{len(outs)} outputs, the CPU {len(cpu_outs)}"]
    for j, (o, c) in enumerate(zip(outs, cpu_outs)):
        dt = str(c.dtype)
        m = mismatch(o, c, exact=case.exact, accum=case.accum,
                     ulps=case.ulps if case.ulps is not None else DEVICE_ULPS.get(dt, 0),
                     atol=2 * EPS[dt] if dt in EPS and not case.exact else 0.0)
        if m:
            fails.append(f"output {j}, {device} against the CPU: {m}")
    return fails


def test_op(device, case):
    cpu = run_case(context("cpu"), case)
    if device == "cpu":
        fails = check_cpu(case, cpu)
    else:
        fails = check_device(case, run_case(context(device), case), cpu, device)
    if fails:
        pytest.fail(f"{case.op} {case.key} {case.variant}:\n  " + "\n  ".join(fails),
                    pytrace=False)


# ---- the generator itself ----------------------------------------------------------------
def test_every_operator_has_cases():
    """Every operator of the table has generated cases, or an entry with a
    reason in opgen.ALLOW_NO_CASES."""
    missing = {op: why for op, why in NO_CASES.items() if op not in opgen.ALLOW_NO_CASES}
    missing.update({op: "no cases" for op in webnn.OPERATORS
                    if op in CASES and not CASES[op] and op not in opgen.ALLOW_NO_CASES})
    assert not missing, f"operators without generated cases (tests/backends/opgen.py): {missing}"
    stale = [op for op in opgen.ALLOW_NO_CASES if op not in webnn.OPERATORS or CASES.get(op)]
    assert not stale, f"ALLOW_NO_CASES entries that are not operators or have cases: {stale}"


def test_every_data_type_of_the_table_is_generated():
    """The cases cover every data type the table allows for each operator's
    leading operand (for where: its values; for dequantizeLinear: its input)."""
    gaps = []
    for op, cases in CASES.items():
        row = opgen.ROWS[op]
        name = "trueValue" if op == "where" else row["limits"][0][0]
        want = set(opgen.limits_of(row, name)[0])
        got = {c.operand_types.get(opgen.snake(name), (None,))[0] for c in cases}
        if op == "concat":
            got = {c.operand_types["inputs"][0] for c in cases}
        if want - got:
            gaps.append(f"{op}: {sorted(want - got)}")
    assert not gaps, gaps


def test_cases_cover_the_option_values():
    """Every enum option value and both values of every bool option appear in
    some case of the operator (the generic variants of opgen.option_variants)."""
    gaps = []
    for op, cases in CASES.items():
        row = opgen.ROWS[op]
        for vname, _ in opgen.option_variants(row):
            if vname != "default" and not any(c.variant == vname for c in cases):
                gaps.append(f"{op}: {vname}")
    assert not gaps, gaps


def test_a_broken_result_fails():
    """The comparisons catch one wrong element: bit-exact cases at one ulp,
    float cases beyond their tolerance, a swapped index, a wrong data type."""
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6)
    assert mismatch(x, x.copy(), exact=True, accum=False, ulps=0) is None
    y = x.copy()
    y[2, 3] = np.nextafter(y[2, 3], np.float32(9))
    assert "1 of 24" in mismatch(y, x, exact=True, accum=False, ulps=0)
    assert mismatch(y, x, exact=False, accum=False, ulps=1) is None
    y[1, 1] += np.float32(1e-3)
    assert mismatch(y, x, exact=False, accum=False, ulps=16) is not None
    assert mismatch(y, x, exact=False, accum=True, ulps=16) is not None  # 2e-5 * 3
    n = x.copy()
    n[0, 0] = np.nan
    assert mismatch(n, x, exact=False, accum=True, ulps=16) is not None
    assert mismatch(n, n.copy(), exact=True, accum=False, ulps=0) is None
    i = np.arange(10, dtype=np.int64)
    j = i.copy()
    j[[3, 4]] = j[[4, 3]]
    assert mismatch(j, i, exact=False, accum=True, ulps=16) is not None
    assert mismatch(i.astype(np.int32), i, exact=True, accum=False, ulps=0) is not None


def test_a_wrong_kernel_fails_against_the_reference():
    """A case run through a wrong operator (exp for sin, a perturbed sum)
    fails both checks: against NumPy and against another backend's result."""
    case = next(c for c in CASES["sin"] if c.key == "float32")
    cpu = run_case(context("cpu"), case)
    assert check_cpu(case, cpu) == []
    wrong = opgen.Case(case.op, case.key, case.variant, case.inputs,
                       lambda b, o: b.cos(o["input"]), case.operand_types, case.ref)
    bad = run_case(context("cpu"), wrong)
    assert check_cpu(case, bad)
    assert check_device(case, bad, cpu, "cpu")
    red = next(c for c in CASES["reduceSum"] if c.key == "float32" and c.variant == "axes=1")
    out = run_case(context("cpu"), red)
    assert check_device(red, out, out, "cpu") == []
    out2 = [o.copy() for o in out]
    out2[0].flat[0] += np.float32(0.01) * max(1.0, float(np.abs(out[0]).max()))
    assert check_device(red, out2, out, "cpu")


def test_a_backend_without_an_operator_skips_its_cases_by_name():
    """unsupported() names what a device's op_support_limits() lacks: the
    operator, a data type of an operand, or a rank outside its range."""
    limits = context("cpu").op_support_limits()
    gru = next(c for c in CASES["gru"] if c.key == "float16")
    assert unsupported(limits, gru) is None
    assert unsupported({k: v for k, v in limits.items() if k != "gru"}, gru) == "unsupported"
    fewer = dict(limits, gru=dict(limits["gru"], weight={
        "data_types": ["float32"], "rank_range": {"min": 3, "max": 3}}))
    assert unsupported(fewer, gru) == "unsupported-float16-weight"
    mm = next(c for c in CASES["matmul"] if c.variant == "broadcastBatch")
    low = dict(limits, matmul=dict(limits["matmul"], a={
        "data_types": ["float32", "float16"], "rank_range": {"min": 2, "max": 3}}))
    assert unsupported(low, mm) == "unsupported-rank4-a"


def test_an_operator_the_generator_cannot_serve_fails(monkeypatch):
    """A family without a recipe, or an option value a recipe does not know,
    is a NoCase (which test_every_operator_has_cases reports), not a skip."""
    monkeypatch.delitem(opgen.FAMILIES, "CONV")
    with pytest.raises(opgen.NoCase, match="no recipe for family CONV"):
        opgen.cases_for("conv2d")
    row = opgen.ROWS["maxPool2d"]
    with pytest.raises(opgen.NoCase, match="layout"):
        opgen.r_pool(row, "float32", "v", {"layout": "nchw16c"}, opgen.rng_for(0))
    with pytest.raises(opgen.NoCase, match="filter layout"):
        opgen.r_conv(opgen.ROWS["convTranspose2d"], "float32", "v", {"filter_layout": "oihw"},
                     opgen.rng_for(0))
