"""ONNX in and out of webnn (needs the `onnx` package: ``pip install webnn[onnx]``).

    import webnn, webnn.onnx
    ctx = webnn.ml.create_context()
    m = webnn.onnx.load("model.onnx", context=ctx, input_shapes={"x": [1, 3, 224, 224]})
    outs = m.run({"x": array})          # {ONNX output name: ndarray}
    proto = webnn.onnx.export(graph)    # an MLGraph as an onnx.ModelProto

Import maps the standard ONNX domain (opsets 1 to the newest the onnx package
knows) onto WebNN operators, directly or by decomposition, and folds what is
static (Shape, ConstantOfShape, Range, ... and any node whose inputs are all
known) at import.  What WebNN cannot express raises webnn.NotSupportedError
naming the node, its op type and why.  Models are untrusted input
(_guard.py): external data only from the model's folder (or base_dir=), the
full onnx.checker, and an ImportBudget on what inlining, unrolling and folding
make.

Export reads the builder calls that made a graph: importing webnn.onnx starts
recording every MLGraphBuilder's operator calls (see _record.py), so graphs
built after ``import webnn.onnx`` can be exported.
"""
try:
    import onnx  # noqa: F401
except ImportError as e:  # pragma: no cover
    raise ImportError("webnn.onnx needs the 'onnx' package: pip install webnn[onnx]") from e

from . import _record  # noqa: F401  (installs the recording hooks)
from ._guard import ImportBudget
from ._import import OnnxModel, load
from ._export import export

__all__ = ["load", "export", "OnnxModel", "ImportBudget"]
