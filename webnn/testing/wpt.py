"""WPT-format WebNN conformance vectors as test cases.

The JSON layout is the one of the Web Platform Tests' WebNN conformance
tests converted to JSON (``{"tests": [{"name", "graph": {"inputs",
"operators", "expectedOutputs"}, "tolerance": {"metric", "value"}}]}``,
see ``tests/wpt/data/README.md``):

* inputs with ``constant: true`` become ``builder.constant(descriptor, data)``,
  the others ``builder.input(name, descriptor)`` fed to ``compute()``;
* operators are applied in order by calling the builder method of the IDL
  name with the arguments positionally; a string naming an operand (also in
  a list or an options member) is that operand; ``"Infinity"``,
  ``"-Infinity"`` and ``"NaN"`` are floats;
* float data are rounded to their data type once; a scalar ``data`` for a
  non-empty shape is a fill value;
* outputs are compared with :func:`webnn.testing.assert_close` and the
  case's tolerance.

Use::

    from webnn.testing import wpt
    CASES = wpt.load_cases("path/to/vectors")        # a file or a folder

    @pytest.mark.parametrize("case", wpt.pytest_params(CASES))
    def test_vector(ml_context, case):
        wpt.check_case(ml_context, case)
"""
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import DATA_TYPES, mismatch

SPECIAL_FLOATS = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


@dataclass
class WptCase:
    """One test vector: ``id`` is ``<file stem>/<test name>``."""
    id: str
    name: str
    graph: dict
    tolerance: dict
    source: str = ""
    operators: list = field(default_factory=list)


def load_cases(path):
    """The cases of a WPT JSON file, or of every ``*.json`` file of a folder
    (sorted by file name)."""
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    cases = []
    for f in files:
        with open(f, encoding="utf-8") as fh:
            vectors = json.load(fh)
        for case in vectors.get("tests", []):
            cases.append(WptCase(id=f"{f.stem}/{case['name']}", name=case["name"],
                                 graph=case["graph"], tolerance=case.get("tolerance", {}),
                                 source=vectors.get("source", ""),
                                 operators=[op["name"] for op in case["graph"]["operators"]]))
    return cases


def pytest_params(cases):
    """``pytest.param(case, id=case.id)`` for each case."""
    import pytest
    return [pytest.param(c, id=c.id) for c in cases]


def decode_number(value):
    """A JSON tensor element or option number: the special strings become floats."""
    if isinstance(value, str):
        return SPECIAL_FLOATS[value]
    return value


def tensor_data(spec):
    """The ndarray that a JSON ``{"data", "descriptor"}`` entry describes."""
    desc = spec["descriptor"]
    if desc["dataType"] not in DATA_TYPES:          # int4, uint4: not in the spec's enum
        raise TypeError(f"data type {desc['dataType']!r} is not an MLOperandDataType "
                        f"({', '.join(DATA_TYPES)})")
    dtype = DATA_TYPES[desc["dataType"]]
    shape = tuple(desc["shape"])
    data = spec["data"]
    if not isinstance(data, list):          # one number: the element, or a fill value
        return np.full(shape, decode_number(data), dtype=dtype)
    values = [decode_number(v) for v in data]
    if dtype.kind == "f":
        array = np.array(values, dtype=np.float64).astype(dtype)   # one rounding
    else:
        array = np.array(values, dtype=dtype)                      # exact ints
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


def run_case(ctx, case):
    """Build and compute the case's graph on ``ctx``; the mismatch messages
    (an empty list when every output matches)."""
    import webnn
    g = case.graph if isinstance(case, WptCase) else case["graph"]
    tolerance = case.tolerance if isinstance(case, WptCase) else case["tolerance"]
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
            outs = list(op["outputs"])
            if len(outs) != len(result):
                raise AssertionError(f"{op['name']}: {len(result)} outputs, "
                                     f"the vector names {len(outs)}")
            operands.update(zip(outs, result))
    graph = builder.build({name: operands[name] for name in g["expectedOutputs"]})
    try:
        results = ctx.compute(graph, feeds)
    finally:
        graph.destroy()
    del feeds
    messages = []
    for name, spec in g["expectedOutputs"].items():
        expected = tensor_data(spec)
        metric = tolerance.get("metric", "ULP")
        msg = mismatch(results.pop(name), expected, data_type=spec["descriptor"]["dataType"],
                       metric=metric, tolerance=tolerance.get("value", 0),
                       name=f"output {name!r}")
        if msg:
            messages.append(msg)
    return messages


def check_case(ctx, case):
    """Run a case; skip (pytest) when an operator is not implemented, fail
    with every mismatch otherwise."""
    import pytest

    import webnn
    for name in case.operators:
        if name not in webnn.OPERATORS:
            pytest.skip(f"operator {name} is not implemented")
    messages = run_case(ctx, case)
    if messages:
        pytest.fail(f"{'/'.join(case.operators)} {case.name!r}:\n" + "\n".join(messages),
                    pytrace=False)
