"""Export round trip over the WPT vectors: every graph of tests/wpt/data is
built with webnn, computed, exported with webnn.onnx.export, run in ONNX
Runtime, and ORT's outputs are compared with webnn's within the case's WPT
tolerance (and with the vector's expected values).  Cases where ONNX Runtime
has no kernel for a data type are listed in ORT_GAPS with the reason."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "wpt_harness", Path(__file__).parent.parent / "wpt" / "test_wpt.py")
wpt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(wpt)

# (regex on "<file>/<case name>", reason): ONNX Runtime lacks the kernel.
ORT_GAPS = [
    (r"^reduce_l1/.*uint32", "ONNX Runtime 1.2x/1.3x has no ReduceL1 kernel for uint32 "
     "(NOT_IMPLEMENTED); the exported ReduceL1 node is valid ONNX"),
    (r"^relu/.*int64", "ONNX Runtime has no Relu kernel for int64 (NOT_IMPLEMENTED); the "
     "exported Relu node is valid ONNX"),
]


def _gap(case_id):
    for pattern, why in ORT_GAPS:
        if re.search(pattern, case_id):
            return why
    return None


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context()


def _build(ctx, case):
    g = case["graph"]
    builder = webnn.MLGraphBuilder(ctx)
    operands, feeds = {}, {}
    for name, spec in g["inputs"].items():
        data = wpt.tensor_data(spec)
        if spec["constant"]:
            operands[name] = builder.constant(spec["descriptor"], data)
        else:
            operands[name] = builder.input(name, spec["descriptor"])
            feeds[name] = data
    for op in g["operators"]:
        args = [wpt.resolve(v, operands) for arg in op["arguments"] for v in arg.values()]
        result = getattr(builder, op["name"])(*args)
        if isinstance(op["outputs"], str):
            operands[op["outputs"]] = result
        else:
            operands.update(zip(op["outputs"], result, strict=True))
    graph = builder.build({name: operands[name] for name in g["expectedOutputs"]})
    return graph, feeds


def _distance_ok(actual, reference, tolerance):
    """The WPT rule, with `reference` (webnn's result) as the expected values."""
    if actual.dtype != reference.dtype or actual.shape != reference.shape:
        return f"dtype/shape {actual.dtype}{actual.shape} vs {reference.dtype}{reference.shape}"
    bad = np.flatnonzero(actual != reference)
    if bad.size == 0:
        return None
    a, e = actual.reshape(-1)[bad], reference.reshape(-1)[bad]
    if actual.dtype.kind == "f":
        metric, limit = tolerance["metric"], tolerance["value"]
        d = wpt.ulp_distance(a, e) if metric == "ULP" else wpt.abs_distance(a, e)
    else:
        metric, limit, d = "exact", 0, np.ones(a.size)
    over = np.flatnonzero(d > limit)
    if over.size == 0:
        return None
    k = over[np.argmax(d[over])]
    return (f"{over.size} of {actual.size} elements beyond {limit} {metric}: "
            f"ORT {a[k]!r} vs webnn {e[k]!r} (distance {d[k]:g})")


@pytest.mark.parametrize("case", wpt.CASES)
def test_export_roundtrip(ctx, case, request):
    case_id = request.node.callspec.id
    why = _gap(case_id)
    if why:
        pytest.skip(why)
    graph, feeds = _build(ctx, case)
    ours = ctx.compute(graph, feeds)
    model = webnn.onnx.export(graph)
    import onnx
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    theirs = dict(zip([o.name for o in sess.get_outputs()],
                      sess.run(None, {n: feeds[n] for n in names})))
    messages = []
    for name, spec in case["graph"]["expectedOutputs"].items():
        m = _distance_ok(np.asarray(theirs[name]), ours[name], case["tolerance"])
        if m:
            messages.append(f"{name}: ORT vs webnn: {m}")
        m = wpt.compare(name, np.asarray(theirs[name]), spec, case["tolerance"])
        if m:
            messages.append(f"{name}: ORT vs the WPT expected values: {m}")
    graph.destroy()
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
