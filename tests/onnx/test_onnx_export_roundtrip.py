"""Export round trip over the WPT vectors: every graph of tests/wpt/data is
built with webnn, computed, exported with webnn.onnx.export, run in ONNX
Runtime, and ORT's outputs are compared with webnn's within the case's WPT
tolerance (and with the vector's expected values).  Cases where ONNX Runtime
has no kernel for a data type are listed in ORT_GAPS with the reason."""
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402
from webnn.testing import mismatch, wpt  # noqa: E402

CASES = wpt.load_cases(Path(__file__).parent.parent / "wpt" / "data")

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
    g = case.graph
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


@pytest.mark.parametrize("case", wpt.pytest_params(CASES))
def test_export_roundtrip(ctx, case):
    why = _gap(case.id)
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
    metric = case.tolerance.get("metric", "ULP")
    value = case.tolerance.get("value", 0)
    for name, spec in case.graph["expectedOutputs"].items():
        dt = spec["descriptor"]["dataType"]
        for what, reference in (("webnn", ours[name]), ("the WPT expected values", wpt.tensor_data(spec))):
            m = mismatch(np.asarray(theirs[name]), reference, data_type=dt, metric=metric,
                         tolerance=value, name=f"output {name!r}: ORT vs {what}")
            if m:
                messages.append(m)
    graph.destroy()
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
