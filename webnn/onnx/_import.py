"""ONNX import: an onnx.ModelProto -> an MLGraph on a context.

load() reads and checks the model (_source.py, _guard.py) and converts it
with the machinery of _convert.py (_Converter, the operator table _OPS);
each operator's conversion is in the family modules of _ops/ (element-wise,
nn, normalization, tensor, sampling, quantization, recurrent, control,
sequence, signal).  The result is an OnnxModel."""
from __future__ import annotations

import asyncio
import os
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import onnx

import webnn

from . import _source
# the machinery's names, importable from here as before the split
from ._convert import (_OPS, _Converter, _Fill, _NeedShapes, _NeedStatic,  # noqa: F401
                       _Seq, _attrs, _reg)
from ._guard import ImportBudget, InvalidModel  # noqa: F401

if TYPE_CHECKING:
    import numpy.typing as npt

    #: What load() takes as a model: a path, the bytes of an .onnx file, or
    #: an onnx.ModelProto.
    ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, onnx.ModelProto]
    #: An input or output of an OnnxModel: (WebNN data type, shape).
    ValueInfo = Tuple[str, Tuple[int, ...]]
    #: load()'s input_shapes: {input name: shape (a list or tuple)} and/or
    #: {dim_param name: size}.
    InputShapes = Mapping[str, Union[List[int], Tuple[int, ...], int]]


class OnnxModel:
    """An imported ONNX model: .graph (the MLGraph), .inputs / .outputs
    (ONNX name -> (WebNN data type, shape)), .run(feeds), .run_async(feeds)."""

    #: The context the graph was compiled for.
    context: webnn.MLContext
    #: The compiled graph (None when every output is a constant of the model).
    graph: Optional[webnn.MLGraph]
    #: The model's inputs, ONNX name -> (WebNN data type, shape).
    inputs: Dict[str, ValueInfo]
    #: The model's outputs in the model's order, ONNX name -> (WebNN data type, shape).
    outputs: Dict[str, ValueInfo]
    #: The imported model.
    model_proto: onnx.ModelProto

    def __init__(self, context: webnn.MLContext, graph: Optional[webnn.MLGraph],
                 inputs: Dict[str, ValueInfo], outputs: Dict[str, ValueInfo],
                 graph_outputs: Dict[str, str], const_outputs: Dict[str, npt.NDArray[Any]],
                 proto: onnx.ModelProto) -> None:
        self.context = context
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self._graph_outputs = graph_outputs   # ONNX name -> graph output name
        self._const = const_outputs           # ONNX name -> ndarray
        self.model_proto = proto
        self._tensors: Optional[Tuple[Dict[str, Any], Dict[str, Any]]] = None
        # (inputs, outputs): MLTensors made once
        self._lock = threading.Lock()

    def _compute(self, feeds):
        """The graph on the CPU: compute() on the caller's arrays, results
        written straight into the arrays returned (no tensors, no copies:
        a GPT-2 decode step's 19 MB of cache in and out took 2 ms of its 19
        copied through tensors).  Elsewhere on the context's timeline, with
        tensors made at the first run and reused (one run at a time per
        model)."""
        ctx, g = self.context, self.graph
        if ctx.backend == "cpu":
            return ctx.compute(g, feeds)
        with self._lock:
            if self._tensors is None:
                tin = {n: ctx.create_tensor({"dataType": dt, "shape": list(shape),
                                             "writable": True})
                       for n, (dt, shape) in g._inputs.items()}
                tout = {n: ctx.create_tensor({"dataType": dt, "shape": list(shape),
                                              "readable": True})
                        for n, (dt, shape) in g._outputs.items()}
                self._tensors = (tin, tout)
            tin, tout = self._tensors
            for n, t in tin.items():
                ctx.write_tensor(t, feeds[n])
            ctx.dispatch(g, tin, tout)
            return {n: ctx.read_tensor(t) for n, t in tout.items()}

    def run(self, feeds: Dict[str, Any]) -> Dict[str, npt.NDArray[Any]]:
        """feeds: {input name: array} -> {output name: ndarray}, in the model's output order."""
        if not isinstance(feeds, dict):
            raise TypeError("run: feeds must be a dict of input name -> array")
        self._check_feeds(feeds)
        results = {}
        if self.graph is not None:
            results = self._compute(self._graph_inputs(feeds))
        out = {}
        for name in self.outputs:
            if name in self._const:
                out[name] = self._const[name].copy()
            else:
                out[name] = results[self._graph_outputs[name]]
        return out

    def profile(self, feeds: Dict[str, Any], runs: int = 10, warmup: int = 1) -> Any:
        """The time of every step of the compiled graph over `runs` runs on
        `feeds` (MLGraph.profile: rows labelled with the ONNX nodes' names; a
        fused chain as one row).  CPU contexts."""
        if not isinstance(feeds, dict):
            raise TypeError("profile: feeds must be a dict of input name -> array")
        self._check_feeds(feeds)
        if self.graph is None:
            raise ValueError("profile: every output of the model is a constant (folded at "
                             "import): there is no graph to time")
        return self.graph.profile(self._graph_inputs(feeds), runs=runs, warmup=warmup)

    def _check_feeds(self, feeds: Dict[str, Any]) -> None:
        extra = set(feeds) - set(self.inputs)
        missing = set(self.inputs) - set(feeds)
        if extra or missing:
            raise TypeError(f"run: inputs {sorted(missing)} missing, {sorted(extra)} not "
                            f"inputs of the model")

    def _graph_inputs(self, feeds: Dict[str, Any]) -> Dict[str, Any]:
        """run()'s feeds checked and converted: the graph's inputs."""
        assert self.graph is not None
        gin = {}
        for name, (dt, shape) in self.inputs.items():
            if name not in self.graph._inputs:
                continue  # an input the outputs do not depend on
            a = np.asarray(feeds[name])
            want = webnn.DATA_TYPES[dt]
            if a.dtype != want:
                if not np.can_cast(a.dtype, want, "same_kind"):
                    raise TypeError(f"run: input {name!r} must be {dt}, got {a.dtype}")
                if want.kind in "iu" and a.dtype.kind in "iu" and a.size and \
                        not np.can_cast(a.dtype, want, "safe"):
                    info = np.iinfo(want)
                    out = np.flatnonzero((a < info.min) | (a > info.max))
                    if out.size:
                        bad = int(a.reshape(-1)[out[0]])
                        raise TypeError(f"run: input {name!r} is {dt}, but the value "
                                        f"{bad} is out of its range [{info.min}, "
                                        f"{info.max}]")
                a = a.astype(want)
            if tuple(a.shape) != tuple(shape):
                raise TypeError(f"run: input {name!r} must have shape {list(shape)}, "
                                f"got {list(a.shape)}")
            gin[name] = np.require(a, requirements="C")
        return gin

    async def run_async(self, feeds: Dict[str, Any]) -> Dict[str, npt.NDArray[Any]]:
        """run() in the event loop's default executor: awaits {output name: ndarray}."""
        return await asyncio.get_running_loop().run_in_executor(None, self.run, feeds)

    def __repr__(self) -> str:
        return f"OnnxModel(inputs={self.inputs}, outputs={self.outputs})"


def load(model: ModelSource, context: Optional[webnn.MLContext] = None,
         input_shapes: Optional[InputShapes] = None, *,
         base_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
         budget: Optional[ImportBudget] = None,
         _bound: Optional[Mapping[str, Any]] = None,
         _weights: Optional[Any] = None) -> OnnxModel:
    """Import an ONNX model (a path, bytes or an onnx.ModelProto) into `context`
    (default: a new default context).  `input_shapes` fixes dynamic dimensions:
    {input name: shape} and/or {dim_param name: size}.

    The model is untrusted input: external data is read only from the model's
    folder (a model given as bytes or a ModelProto has none: pass `base_dir`),
    the whole onnx.checker runs, and `budget` (an ImportBudget; default
    ImportBudget()) bounds the nodes made by inlining and unrolling and the
    bytes of constants made at import.  A failure is a TypeError (an invalid
    model or input), a webnn.NotSupportedError (what WebNN cannot express) or
    a MemoryError (over the budget)."""
    budget = ImportBudget() if budget is None else budget
    if not isinstance(budget, ImportBudget):
        raise TypeError(f"load: budget must be a webnn.onnx.ImportBudget, "
                        f"got {type(budget).__name__}")
    budget = ImportBudget(budget.max_nodes, budget.max_const_bytes)   # counts of this import
    try:
        proto, weights = _source.as_proto(model, base_dir, strip=True)
        # (webnn.llm: a model read once by as_proto(strip=True), then prepared
        # and loaded for several shapes, gives its weights here: every graph's
        # constants are then the same host blocks)
        weights = _weights if _weights is not None else weights
        _source.check(proto, model, budget)
    except RecursionError:   # the walks over subgraphs nested hundreds deep
        raise TypeError("load: the model nests subgraphs too deeply") from None
    if context is None:
        context = webnn.ml.create_context()
    return _Converter(proto, context, input_shapes or {}, _bound or {}, budget,
                      weights).convert()
