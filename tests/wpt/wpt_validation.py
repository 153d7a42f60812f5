"""Replays one case of the WPT validation data (validation_upstream/cases/*.json)
through the public Python API, as docs/python-api.md maps the IDL (the data
set's README, "Mapping to the Python contract").

A case is a list of steps: ``builder`` (a new MLGraphBuilder), ``call`` (a
builder method that must not raise; its result is kept under ``out``),
``throws`` (calls of which one must raise, the first exception a TypeError)
and ``check`` (an operand's data type or shape, or a sequence's length).
:func:`replay` returns None when every step holds, else a message naming the
step that did not.
"""
import datetime
import json
import math
from pathlib import Path

import numpy as np

import webnn

_NUMS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}
_TYPED = {"Float32Array": np.float32, "Float64Array": np.float64, "Float16Array": np.float16,
          "Int8Array": np.int8, "Uint8Array": np.uint8, "Uint8ClampedArray": np.uint8,
          "Int16Array": np.int16, "Uint16Array": np.uint16, "Int32Array": np.int32,
          "Uint32Array": np.uint32, "BigInt64Array": np.int64, "BigUint64Array": np.uint64}
_UNDEFINED = object()


def load(path):
    """The cases of one data file (a list of dicts)."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)["cases"]


def _typed(v):
    dtype = _TYPED[v["$typed"]]
    if "data" in v:
        return np.array(v["data"], dtype=dtype)
    return np.full(v["length"], v.get("fill", 0), dtype=dtype)


def decode(value, objects):
    """A JSON argument as the Python value the contract takes (``_UNDEFINED``
    for JavaScript's undefined)."""
    if isinstance(value, list):
        return [decode(v, objects) for v in value]
    if not isinstance(value, dict):
        return value
    if "$operand" in value:
        obj = objects[value["$operand"]]
        return obj[value["index"]] if "index" in value else obj
    if "$undefined" in value:
        return _UNDEFINED
    if "$bigint" in value:
        return int(value["$bigint"])
    if "$num" in value:
        return _NUMS[value["$num"]]
    if "$buffer" in value:
        return bytearray(value["byteLength"])
    if "$typed" in value:
        return _typed(value)
    if "$object" in value:
        return datetime.datetime.fromisoformat(value["iso"].replace("Z", "+00:00"))
    out = {}
    for k, v in value.items():
        v = decode(v, objects)
        if v is not _UNDEFINED:
            out[k] = v
    if "dataType" in out and "dimensions" in out and "shape" not in out:
        out["shape"] = out.pop("dimensions")          # the older revisions' member name
    if "dataType" in out and isinstance(out.get("shape"), list):
        # [EnforceRange] unsigned long hands the API the integer part
        out["shape"] = [int(d) if isinstance(d, float) and math.isfinite(d) else d
                        for d in out["shape"]]
    return out


def _args(raw, objects):
    args = [decode(a, objects) for a in raw]
    while args and args[-1] is _UNDEFINED:           # a trailing undefined is left out
        args.pop()
    return [None if a is _UNDEFINED else a for a in args]


def _call(step, builders, objects):
    builder = builders[step["b"]]
    result = getattr(builder, step["method"])(*_args(step["args"], objects))
    objects[step["out"]] = result


def _value(ref, path, objects):
    if isinstance(ref, str) and "." in ref:
        base, index = ref.split(".", 1)
        obj = objects[int(base)][int(index)]
    else:
        obj = objects[ref]
    head, rest = path[0], path[1:]
    if head == "dataType":
        value = obj.data_type
    elif head == "shape":
        value = list(obj.shape)
    elif head == "length":
        value = len(obj)
    else:
        raise AssertionError(f"unknown check path {path!r}")
    for i in rest:
        value = len(value) if i == "length" else value[i]
    return value


def _describe(step):
    calls = step["calls"] if step["kind"] == "throws" else [step]
    return "; ".join(f"{c['method']}({', '.join(_short(a) for a in c['args'])})" for c in calls)


def _short(a):
    text = json.dumps(a)
    return text if len(text) <= 80 else text[:77] + "..."


def unique_input_names(case):
    """The case with every repeated input() name of a builder made unique
    (what the spec allows: input() step 3 throws on a repeated name)."""
    steps, seen = [], {}
    for step in case["steps"]:
        if step["kind"] == "call" and step["method"] == "input" and step["args"] \
                and isinstance(step["args"][0], str):
            names = seen.setdefault(step["b"], set())
            name = step["args"][0]
            k = 1
            while name in names:
                name, k = f"{step['args'][0]}_{k}", k + 1
            names.add(name)
            step = dict(step, args=[name] + step["args"][1:])
        steps.append(step)
    return dict(case, steps=steps)


def has_repeated_input_names(case):
    """Whether a builder of the case gets two input() calls of one name
    outside a throws step."""
    seen = set()
    for step in case["steps"]:
        if step["kind"] == "call" and step["method"] == "input" and step["args"] \
                and isinstance(step["args"][0], str):
            key = (step["b"], step["args"][0])
            if key in seen:
                return True
            seen.add(key)
    return False


def replay(ctx, case):
    """Run the case's steps on ``ctx``; None when all hold, else the message."""
    builders, objects = {}, {}
    for n, step in enumerate(case["steps"]):
        kind = step["kind"]
        where = f"step {n} ({kind})"
        if kind == "builder":
            builders[step["b"]] = webnn.MLGraphBuilder(ctx)
        elif kind == "call":
            try:
                _call(step, builders, objects)
            except Exception as e:                      # noqa: BLE001 - reported
                return f"{where}: {_describe(step)} raised {type(e).__name__}: {e}"
        elif kind == "throws":
            raised = None
            for call in step["calls"]:
                try:
                    _call(call, builders, objects)
                except Exception as e:                  # noqa: BLE001 - checked below
                    raised = e
                    break
            if raised is None:
                return f"{where}: {_describe(step)} did not raise (expected TypeError)"
            if not isinstance(raised, TypeError):
                return (f"{where}: {_describe(step)} raised {type(raised).__name__} "
                        f"(expected TypeError): {raised}")
        elif kind == "check":
            try:
                got = _value(step["ref"], step["path"], objects)
            except Exception as e:                      # noqa: BLE001 - reported
                return f"{where}: reading {step['ref']}.{step['path']}: {type(e).__name__}: {e}"
            if got != step["expected"]:
                return (f"{where}: {'.'.join(map(str, step['path']))} of {step['ref']} is "
                        f"{got!r}, expected {step['expected']!r}")
        else:
            return f"{where}: unknown step kind {kind!r}"
    return None


def case_files(folder):
    """The data files of the validation set, sorted."""
    return sorted(Path(folder).glob("*.json"))
