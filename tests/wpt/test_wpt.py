"""WebNN conformance tests from the Web Platform Tests (WPT).

One pytest case per test vector in ``data/*.json``, with the id
``<file>/<test name>`` (for example ``add/add float32 1D constant tensors``).
The vectors are the WPT ``webnn/conformance_tests/*.https.any.js`` cases,
converted to JSON (via rustnn/pywebnn) and normalized; they are BSD-3-Clause
licensed. ``data/README.md`` gives their provenance and license, and the
vector set's README (shared/wpt/README.md) defines the layout, the value
encodings and the tolerance rules that this harness follows:

* inputs with ``constant: true`` become ``builder.constant(descriptor, data)``;
  the others ``builder.input(name, descriptor)``, fed to ``ctx.compute``;
* operators are applied in order by calling the builder method with the IDL
  camelCase name, arguments positionally; a string naming an operand (also in
  a list, or as an ``options`` member) is replaced by that operand, and
  "Infinity", "-Infinity" and "NaN" become floats;
* float data are rounded to their dtype (round-to-nearest-even, as JS typed
  arrays do); int64/uint64 data stay exact Python ints; a scalar ``data`` for
  a non-empty shape is a fill value;
* each computed output is compared with the case's ``tolerance``: ULP distance
  on the output dtype's bit patterns, or absolute error (ATOL). NaN matches
  only NaN, and integer outputs must match exactly.

Cases whose operator is not in ``webnn.OPERATORS`` are skipped, so that they
start to run as soon as the operator is implemented.
"""
import json
import math
from pathlib import Path

import numpy as np
import pytest

import webnn

DATA_DIR = Path(__file__).parent / "data"

SPECIAL_FLOATS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}

# Float dtype -> the signed integer type of the same width, for ULP distances.
_BITS_AS_INT = {np.dtype(np.float32): np.dtype(np.int32),
                np.dtype(np.float16): np.dtype(np.int16)}


# ---- loading the vectors ------------------------------------------------------
def _load_cases():
    params = []
    for path in sorted(DATA_DIR.glob("*.json")):
        with open(path, encoding="utf-8") as f:
            vectors = json.load(f)
        for case in vectors["tests"]:
            params.append(pytest.param(case, id=f"{path.stem}/{case['name']}"))
    return params


CASES = _load_cases()


# ---- value decoding -----------------------------------------------------------
def decode_number(value):
    """A JSON tensor element or option number: the special strings become floats."""
    if isinstance(value, str):
        return SPECIAL_FLOATS[value]
    return value


def tensor_data(spec):
    """The ndarray that a JSON ``{"data", "descriptor"}`` entry describes."""
    desc = spec["descriptor"]
    dtype = webnn.DATA_TYPES[desc["dataType"]]
    shape = tuple(desc["shape"])
    data = spec["data"]
    if not isinstance(data, list):  # one number: the element, or a fill value
        return np.full(shape, decode_number(data), dtype=dtype)
    values = [decode_number(v) for v in data]
    if dtype.kind == "f":
        # double -> dtype in one rounding step (round-to-nearest-even)
        array = np.array(values, dtype=np.float64).astype(dtype)
    else:
        array = np.array(values, dtype=dtype)  # exact, from Python ints
    return array.reshape(shape)


def resolve(value, operands):
    """An argument value with operand names replaced by the operands."""
    if isinstance(value, str):
        if value in operands:
            return operands[value]
        return SPECIAL_FLOATS.get(value, value)
    if isinstance(value, list):
        return [resolve(v, operands) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, operands) for k, v in value.items()}
    return value


# ---- distances ----------------------------------------------------------------
def ulp_distance(actual, expected):
    """Elementwise ULP distance between two arrays of the same float dtype, as
    float64: steps between the values' positions in the ordered set of the
    dtype's values (+0 and -0 coincide); NaN vs NaN is 0, NaN vs other inf."""
    itype = _BITS_AS_INT[actual.dtype]
    magnitude = np.int64((1 << (8 * itype.itemsize - 1)) - 1)

    def ordinal(a):
        b = a.view(itype).astype(np.int64)
        return np.where(b >= 0, b, -(b & magnitude))

    distance = np.abs(ordinal(actual) - ordinal(expected)).astype(np.float64)
    return _nan_rule(distance, actual, expected)


def abs_distance(actual, expected):
    """Elementwise |actual - expected| in float64; NaN matches only NaN."""
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    # equal infinities are filtered out before (they compare equal); inf - inf
    # of opposite signs is inf already
    return _nan_rule(distance, actual, expected)


def _nan_rule(distance, actual, expected):
    a_nan, e_nan = np.isnan(actual), np.isnan(expected)
    distance[a_nan | e_nan] = np.inf
    distance[a_nan & e_nan] = 0.0
    return distance


# ---- comparison ---------------------------------------------------------------
def _show(x):
    """A NumPy scalar for failure messages; floats with their bit pattern."""
    if x.dtype.kind == "f":
        bits = x.view(_BITS_AS_INT[x.dtype]).item() & ((1 << (8 * x.dtype.itemsize)) - 1)
        return f"{float(x)!r} [0x{bits:0{2 * x.dtype.itemsize}x}]"
    return repr(x.item())


def compare(name, actual, spec, tolerance):
    """None if output ``name`` matches its expected ``spec``, else a message."""
    expected = tensor_data(spec)
    dtype = expected.dtype
    head = f"output {name!r} ({spec['descriptor']['dataType']}, shape {list(expected.shape)})"
    if actual.dtype != dtype or actual.shape != expected.shape:
        return (f"{head}: got dtype {actual.dtype}, shape {list(actual.shape)}")
    if dtype.kind == "f":
        metric, limit = tolerance["metric"], tolerance["value"]
    else:
        metric, limit = "exact", 0  # integer outputs: always exact
    unit = {"ULP": " ULP", "ATOL": " (ATOL)", "exact": ""}[metric]

    # Only elements that differ (NaN always differs) need a distance.
    candidates = np.flatnonzero(actual != expected)
    if candidates.size == 0:
        return None
    a, e = actual.reshape(-1)[candidates], expected.reshape(-1)[candidates]
    if metric == "ULP":
        distance = ulp_distance(a, e)
    elif metric == "ATOL":
        distance = abs_distance(a, e)
    else:
        distance = np.array([abs(int(x) - int(y)) for x, y in zip(a.tolist(), e.tolist())],
                            dtype=np.float64)
    bad = np.flatnonzero(distance > limit)
    if bad.size == 0:
        return None

    def where(k):
        i = int(candidates[k])
        at = f"index {i}"
        if expected.ndim > 1:
            at += f" {tuple(int(j) for j in np.unravel_index(i, expected.shape))}"
        return f"{at}: got {_show(a[k])}, expected {_show(e[k])}, distance {distance[k]:g}{unit}"

    worst = int(bad[np.argmax(distance[bad])])
    lines = [f"{head}: {bad.size} of {expected.size} elements off, "
             f"tolerance {limit:g}{unit}",
             f"  first at {where(int(bad[0]))}"]
    if worst != bad[0]:
        lines.append(f"  worst at {where(worst)}")
    return "\n".join(lines)


# ---- running a case -----------------------------------------------------------
def run_case(ctx, case):
    """Build and compute the case's graph; return the mismatch messages."""
    g = case["graph"]
    builder = webnn.MLGraphBuilder(ctx)
    operands, feeds = {}, {}
    for name, spec in g["inputs"].items():
        data = tensor_data(spec)
        if spec["constant"]:
            operands[name] = builder.constant(spec["descriptor"], data)
        else:
            operands[name] = builder.input(name, spec["descriptor"])
            feeds[name] = data
        del data

    for op in g["operators"]:
        args = [resolve(v, operands) for arg in op["arguments"] for v in arg.values()]
        result = getattr(builder, op["name"])(*args)
        if isinstance(op["outputs"], str):
            operands[op["outputs"]] = result
        else:
            operands.update(zip(op["outputs"], result, strict=True))

    graph = builder.build({name: operands[name] for name in g["expectedOutputs"]})
    try:
        results = ctx.compute(graph, feeds)
    finally:
        graph.destroy()
    del feeds
    messages = []
    for name, spec in g["expectedOutputs"].items():
        message = compare(name, results.pop(name), spec, case["tolerance"])
        if message:
            messages.append(message)
    return messages


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context()


@pytest.mark.parametrize("case", CASES)
def test_wpt(ctx, case):
    ops = [op["name"] for op in case["graph"]["operators"]]
    for name in ops:
        if name not in webnn.OPERATORS:
            pytest.skip(f"operator {name} is not implemented yet")
    messages = run_case(ctx, case)  # big arrays are freed when it returns
    if messages:
        pytest.fail(f"{'/'.join(ops)} {case['name']!r}:\n" + "\n".join(messages),
                    pytrace=False)
