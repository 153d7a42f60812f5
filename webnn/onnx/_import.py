"""ONNX import: an onnx.ModelProto -> an MLGraph on a context.

Values flow through the converter as either
  * a NumPy array: known at import (initializers, Constant nodes, anything
    folded: Shape of a static shape, ConstantOfShape, Range, any node whose
    inputs are all known, evaluated with onnx.reference);
  * a _Fill: a large ConstantOfShape result, made at run time by expand();
  * an MLOperand: computed by the graph.
ONNX bool travels as uint8 inside the graph (WebNN's logical operators do
the same); the model's own inputs and outputs of a type WebNN lacks (double,
bool, string, ...) raise NotSupportedError."""
from __future__ import annotations

import asyncio
import math
import os
import threading
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import webnn
from webnn import NotSupportedError

from . import _guard, _source, _weights
from ._guard import ImportBudget, InvalidModel

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

_ELEM = {
    TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16",
    TensorProto.INT32: "int32", TensorProto.UINT32: "uint32",
    TensorProto.INT64: "int64", TensorProto.UINT64: "uint64",
    TensorProto.INT8: "int8", TensorProto.UINT8: "uint8",
}


def _elem_name(t):
    try:
        return TensorProto.DataType.Name(t)
    except ValueError:
        return str(t)


class _NeedStatic(NotSupportedError):
    """An operand that WebNN needs at build time (a shape, axes, pads...) is
    a runtime input of the model.  The backend binds such inputs at run time."""

    def __init__(self, msg, names):
        super().__init__(msg)
        self.input_names = (names,) if isinstance(names, str) else tuple(names)


class _NeedShapes(NotSupportedError):
    """An input has a dynamic dimension that input_shapes does not fix (the
    backend fixes it from the inputs of each run)."""


class _Seq(list):
    """An ONNX sequence inside the graph: a list of values, known at import."""


class _Fill:
    def __init__(self, shape, value):
        self.shape, self.value = tuple(int(d) for d in shape), value  # value: 0-d array

    @property
    def dtype(self):
        return self.value.dtype


_FILL_MATERIALIZE = 1 << 16     # ConstantOfShape results up to this size are folded


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
        """The graph on the context's timeline, with tensors made at the
        first run and reused (one run at a time per model)."""
        ctx, g = self.context, self.graph
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


# ---------------------------------------------------------------------------
def _attrs(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        try:
            if isinstance(v, bytes):
                v = v.decode("utf-8")
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [x.decode("utf-8") for x in v]
        except UnicodeDecodeError:
            raise InvalidModel(f"attribute {a.name!r} is not valid UTF-8") from None
        out[a.name] = v
    return out


def _np_dt(dt):
    return webnn.DATA_TYPES[dt]


def _dt_of_np(dtype):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return "uint8"
    for k, v in webnn.DATA_TYPES.items():
        if v == dtype:
            return k
    return None


class _Converter:
    def __init__(self, proto, ctx, input_shapes, bound, budget=None, weights=None):
        self.proto, self.ctx = proto, ctx
        self.weights = weights  # the main graph's initializers without copies: _weights
        self.budget = budget if budget is not None else ImportBudget()
        self.where = "the model"  # the node being converted, for errors
        self.input_shapes, self.bound = input_shapes, bound
        self.opset = 1
        for imp in proto.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        self.b = _Labelled(webnn.MLGraphBuilder(ctx))
        self.vals = {}          # name -> ndarray | _Fill | MLOperand
        self.bools = set()      # names whose values are bool carried as uint8
        self._consts = {}       # id(ndarray) -> operand (cache)
        self.deps = {}          # name -> the model inputs a computed value depends on
        self.shape_like = set() # int64 inputs of rank <= 1: shapes, axes, pads ...
        self._evaluators = {}   # fold(): canonical node -> ReferenceEvaluator
        self.node = None

    # ---- errors ----------------------------------------------------------
    def fail(self, why):
        raise NotSupportedError(why)

    # ---- values -----------------------------------------------------------
    def has(self, node, i):
        return i < len(node.input) and node.input[i] != ""

    def is_static(self, name):
        v = self.vals[name]
        return isinstance(v, np.ndarray)

    def seq(self, name):
        v = self.vals[name]
        if not isinstance(v, _Seq):
            raise NotSupportedError(f"{name!r} is not a sequence")
        return v

    def static(self, name, what="this input"):
        v = self.vals[name]
        if isinstance(v, np.ndarray):
            return v
        if isinstance(v, _Fill):
            self.budget.add_bytes(_guard.nbytes_of(v.shape, v.dtype.itemsize), self.where,
                                  f"the constant {name!r}")
            return np.full(v.shape, v.value, v.dtype)
        if name in self.graph_input_names:
            raise _NeedStatic(f"{what} ({name!r}) must be known when the graph is built, "
                              f"but it is an input of the model", name)
        shape_like = sorted(n for n in self.deps.get(name, ()) if n in self.shape_like)
        if shape_like:
            raise _NeedStatic(f"{what} ({name!r}) must be known when the graph is built, "
                              f"but it is computed from the model's input(s) "
                              f"{', '.join(map(repr, shape_like))}", shape_like)
        self.fail(f"{what} ({name!r}) must be known when the graph is built, but it is "
                  f"computed by the graph")

    def shape(self, name):
        v = self.vals[name]
        return tuple(int(d) for d in v.shape)

    def dtype(self, name):
        """The WebNN data type of a value (bool -> 'uint8')."""
        v = self.vals[name]
        if isinstance(v, (np.ndarray, _Fill)):
            dt = _dt_of_np(v.dtype)
            if dt is None:
                self.fail(f"value {name!r} has data type {v.dtype}, which WebNN lacks")
            return dt
        return v.data_type

    def const(self, array):
        """An operand for a NumPy array (bool -> uint8)."""
        a = np.asarray(array)
        if a.dtype == np.bool_:
            a = a.astype(np.uint8)
        if _dt_of_np(a.dtype) is None:
            self.fail(f"a constant of data type {a.dtype}, which WebNN lacks")
        return self.b.constant(np.require(a, requirements="C"))

    def scalar(self, value, dt):
        return self.b.constant(np.array(value, dtype=_np_dt(dt)))

    def opnd(self, name):
        v = self.vals[name]
        if isinstance(v, np.ndarray):
            key = id(v)
            if key not in self._consts:
                self._consts[key] = (v, self.const(v))
            return self._consts[key][1]
        if isinstance(v, _Fill):
            dt = _dt_of_np(v.dtype)
            if dt is None:
                self.fail(f"a constant of data type {v.dtype}, which WebNN lacks")
            c = self.b.constant(np.full([1] * len(v.shape), v.value, _np_dt(dt)))
            op = self.b.expand(c, list(v.shape)) if v.shape else self.b.reshape(c, [])
            self.vals[name] = op
            return op
        return v

    def opnd_of(self, v):
        """An operand for a value that has no name (ndarray, _Fill, operand)."""
        if isinstance(v, np.ndarray):
            return self.const(v)
        if isinstance(v, _Fill):
            dt = _dt_of_np(v.dtype)
            c = self.b.constant(np.full([1] * len(v.shape), v.value, _np_dt(dt)))
            return self.b.expand(c, list(v.shape)) if v.shape else self.b.reshape(c, [])
        return v

    def ints(self, name, what):
        return [int(x) for x in np.asarray(self.static(name, what)).reshape(-1)]

    # ---- model ------------------------------------------------------------
    def convert(self):
        g = self.proto.graph
        self.local_functions = {(f.domain, f.name): f for f in self.proto.functions}
        for imp in self.proto.opset_import:
            if imp.domain not in ("", "ai.onnx") and any(
                    n.domain == imp.domain and (n.domain, n.op_type) not in self.local_functions
                    for n in g.node):
                self.fail(f"operator set domain {imp.domain!r} is not supported (only the "
                          f"standard ONNX domain and the model's own functions)")
        inits = {}
        for t in g.initializer:
            # a view of the file's bytes where the layout allows (no copy)
            a = self.weights.array(t) if self.weights else None
            if a is None:
                a = _guard.to_array(t, f"initializer {t.name!r}")
            a.flags.writeable = False   # the export record keeps it without a copy
            inits[t.name] = a
        for t in g.sparse_initializer:
            self.fail(f"sparse initializer {t.values.name!r} is not supported")
        self.graph_input_names = set()
        inputs = {}
        dim_params = {k: v for k, v in self.input_shapes.items() if not isinstance(v, (list, tuple))}
        for vi in g.input:
            if vi.name in inits:
                continue
            if vi.name in self.bound:
                self.vals[vi.name] = np.asarray(self.bound[vi.name])
                continue
            tt = vi.type.tensor_type
            if not vi.type.HasField("tensor_type"):
                self.fail(f"input {vi.name!r}: only tensor inputs are supported "
                          f"(got {vi.type.WhichOneof('value')})")
            if tt.elem_type not in _ELEM:
                self.fail(f"input {vi.name!r} has data type {_elem_name(tt.elem_type)}, "
                          f"which WebNN lacks")
            dt = _ELEM[tt.elem_type]
            if vi.name in self.input_shapes and isinstance(self.input_shapes[vi.name], (list, tuple)):
                shape = [int(d) for d in self.input_shapes[vi.name]]
            else:
                if not tt.HasField("shape"):
                    self.fail(f"input {vi.name!r} has no shape: give it in input_shapes")
                shape = []
                for i, d in enumerate(tt.shape.dim):
                    if d.HasField("dim_value"):
                        shape.append(int(d.dim_value))
                    elif d.dim_param and d.dim_param in dim_params:
                        shape.append(int(dim_params[d.dim_param]))
                    else:
                        raise _NeedShapes(f"input {vi.name!r}: dimension {i} "
                                  f"({d.dim_param or 'unnamed'!r}) is dynamic: give it in "
                                  f"input_shapes")
            if 0 in shape:
                raise _NeedStatic(f"input {vi.name!r} has shape {shape}: WebNN has no "
                                  f"zero-sized tensors", vi.name)
            inputs[vi.name] = (dt, tuple(shape))
            self.graph_input_names.add(vi.name)
            self.deps[vi.name] = frozenset([vi.name])
            if dt == "int64" and len(shape) <= 1:
                self.shape_like.add(vi.name)
            self.vals[vi.name] = self.b.input(vi.name, {"dataType": dt, "shape": shape})
        for name, arr in inits.items():
            self.vals[name] = arr
        for i, node in enumerate(g.node):
            self.node = node
            self.convert_node(node, i)
        # outputs
        outputs, gout, const_out, build = {}, {}, {}, {}
        used = []
        for vo in g.output:
            name = vo.name
            if name not in self.vals:
                self.fail(f"output {name!r} is not produced by any node")
            v = self.vals[name]
            if isinstance(v, _Seq):
                self.fail(f"output {name!r} is a sequence, which WebNN lacks")
            is_bool = name in self.bools or (isinstance(v, np.ndarray) and v.dtype == np.bool_)
            tt = vo.type.tensor_type
            if is_bool or (tt.elem_type and tt.elem_type not in _ELEM):
                et = TensorProto.BOOL if is_bool else tt.elem_type
                self.fail(f"output {name!r} has data type {_elem_name(et)}, which WebNN lacks")
            if isinstance(v, np.ndarray):
                if _dt_of_np(v.dtype) is None:
                    self.fail(f"output {name!r} has data type {v.dtype}, which WebNN lacks")
                const_out[name] = v
                outputs[name] = (_dt_of_np(v.dtype), tuple(v.shape))
                continue
            op = self.opnd(name)
            self._check_declared(vo, op.data_type, tuple(op.shape))
            if name in self.graph_input_names or any(op is u for u in used):
                op = self.b.identity(op)
            used.append(op)
            gname = name
            build[gname] = op
            gout[name] = gname
            outputs[name] = (op.data_type, tuple(op.shape))
        graph = self.b.build(build) if build else None
        return OnnxModel(self.ctx, graph, inputs, outputs, gout, const_out, self.proto)

    # ---- nodes ------------------------------------------------------------
    def convert_node(self, node, index):
        op = node.op_type
        where = f"node {node.name or '#' + str(index)!r} ({op})"
        if node.domain not in ("", "ai.onnx"):
            fn = self.local_functions.get((node.domain, node.op_type))
            if fn is None:
                raise NotSupportedError(f"{where}: domain {node.domain!r} is not supported")
            try:
                self.expand(node, index, where, fn)
            except _NeedStatic as e:
                raise _NeedStatic(f"{where}: {e}", e.input_names) from None
            except NotSupportedError as e:
                raise NotSupportedError(f"{where}: {e}") from None
            return
        for n in node.input:
            if n and n not in self.vals:
                raise NotSupportedError(f"{where}: input {n!r} is not defined (before this node)")
        self.budget.add_nodes(1, where)
        self.where = where
        self.b.label = node.name or None
        try:
            statics = all(self.is_static(n) for n in node.input if n)
            if statics and op not in _NO_FOLD and op not in _SEQ_OPS and not any(
                    a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                    for a in node.attribute):
                outs = self.fold(node)
            else:
                fn = _OPS.get(op)
                if fn is None:
                    if op in _NO_FOLD or op in _WHY:
                        raise NotSupportedError(_WHY.get(op, "no WebNN mapping"))
                    if self.expand(node, index, where):
                        return
                    raise NotSupportedError("no WebNN mapping for this operator (and no "
                                            "ONNX function body to expand)")
                self.node = node
                outs = fn(self, node, _attrs(node))
        except _NeedStatic as e:
            raise _NeedStatic(f"{where}: {e}", e.input_names) from None
        except NotSupportedError as e:
            raise NotSupportedError(f"{where}: {e}") from None
        except MemoryError as e:
            msg = str(e)
            raise MemoryError(msg if msg.startswith(where) else
                              f"{where}: out of memory at import: {msg}") from None
        except InvalidModel as e:
            raise TypeError(f"{where}: {e}") from None
        except KeyError as e:
            raise TypeError(f"{where}: attribute or value {e} is missing") from None
        except RecursionError:
            raise NotSupportedError(f"{where}: nested too deeply") from None
        except (TypeError, ValueError, IndexError, AttributeError, ZeroDivisionError,
                OverflowError, NameError, webnn.DataError, webnn.OperationError) as e:
            # WebNN's own validation (TypeError), or a node this importer
            # cannot read: reported, never a crash
            raise NotSupportedError(f"{where}: {type(e).__name__}: {e}") from None
        if not isinstance(outs, (list, tuple)) or isinstance(outs, _Seq):
            outs = [outs]
        dep = frozenset().union(*(self.deps.get(n, ()) for n in node.input if n))
        for i, name in enumerate(node.output):
            if not name:
                continue
            if dep:
                self.deps[name] = dep
            if i >= len(outs) or outs[i] is None:
                raise NotSupportedError(f"{where}: output {i} ({name!r}) is not supported")
            self.vals[name] = outs[i]

    def _type_proto(self, name):
        v = self.vals[name]
        if name in self.bools or (isinstance(v, np.ndarray) and v.dtype == np.bool_):
            elem = TensorProto.BOOL
        elif isinstance(v, (np.ndarray, _Fill)):
            elem = helper.np_dtype_to_tensor_dtype(np.dtype(v.dtype))
        else:
            elem = {d: e for e, d in _ELEM.items()}[v.data_type]
        return helper.make_tensor_type_proto(elem, list(self.shape(name)))

    def expand(self, node, index, where, fn=None):
        """Convert a node through its ONNX function body (the schema's
        definition in terms of other operators, or the model's own function
        `fn`), if it has one."""
        if fn is not None:
            schema = None
        else:
            try:
                schema = onnx.defs.get_schema(node.op_type, self.opset, node.domain or "")
            except Exception:
                return False
        if schema is None:
            pass
        elif schema.has_function:
            versions = [v for v in schema.function_opset_versions if v <= self.opset]
            fn = schema.get_function_with_opset_version(max(versions)) if versions \
                else schema.function_body
            if isinstance(fn, bytes):
                parsed = onnx.FunctionProto()
                parsed.ParseFromString(fn)
                fn = parsed
        elif schema.has_context_dependent_function:
            versions = [v for v in schema.context_dependent_function_opset_versions
                        if v <= self.opset]
            types = [self._type_proto(n).SerializeToString() if n else
                     onnx.TypeProto().SerializeToString() for n in node.input]
            try:
                raw = schema.get_context_dependent_function_with_opset_version(
                    max(versions), node.SerializeToString(), types) if versions else \
                    schema.get_context_dependent_function(node.SerializeToString(), types)
            except Exception as e:
                raise NotSupportedError(f"its ONNX function body could not be built: {e}")
            fn = onnx.FunctionProto()
            fn.ParseFromString(raw)
        if fn is None or not fn.node:
            return False
        prefix = f"__{node.op_type}{index}_"
        rename = {}
        for formal, actual in zip(fn.input, list(node.input) + [""] * len(fn.input)):
            rename[formal] = actual
        for formal, actual in zip(fn.output, node.output):
            rename[formal] = actual if actual else prefix + formal
        attrs = {a.name: a for a in node.attribute}
        defaults = {a.name: a for a in fn.attribute_proto}
        saved = self.opset
        for imp in fn.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        try:
            for k, inner in enumerate(fn.node):
                n = onnx.NodeProto()
                n.CopyFrom(inner)
                del n.input[:]
                n.input.extend(rename.get(i, prefix + i) if i else "" for i in inner.input)
                del n.output[:]
                n.output.extend(rename.get(o, prefix + o) if o else "" for o in inner.output)
                del n.attribute[:]
                for a in inner.attribute:
                    if a.type == onnx.AttributeProto.GRAPH and not a.ref_attr_name:
                        b = onnx.AttributeProto()
                        b.CopyFrom(a)
                        _rename_graph(b.g, lambda x: rename.get(x, prefix + x))
                        n.attribute.append(b)
                        continue
                    if a.ref_attr_name:
                        src = attrs.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                        if src is None:
                            continue
                        b = onnx.AttributeProto()
                        b.CopyFrom(src)
                        b.name = a.name
                        n.attribute.append(b)
                    else:
                        n.attribute.append(a)
                n.name = f"{node.name or node.op_type}/{inner.op_type}{k}"
                self.convert_node(n, f"{index}.{k}")
        except _NeedStatic as e:
            raise _NeedStatic(f"expanded into its ONNX function: {e}", e.input_names) from None
        except NotSupportedError as e:
            raise NotSupportedError(f"expanded into its ONNX function: {e}") from None
        finally:
            self.opset = saved
        return True

    def _check_declared(self, vo, dt, shape):
        """The model's declared output type and static shape must be what the
        import computed (a guard against a wrong answer)."""
        tt = vo.type.tensor_type
        if tt.elem_type and _ELEM.get(tt.elem_type) != dt:
            self.fail(f"output {vo.name!r}: the import computed {dt}, the model declares "
                      f"{_elem_name(tt.elem_type)}")
        if tt.HasField("shape"):
            dims = tt.shape.dim
            declared = [d.dim_value if d.HasField("dim_value") else None for d in dims]
            if len(declared) != len(shape) or any(
                    d is not None and d != s for d, s in zip(declared, shape)):
                self.fail(f"output {vo.name!r}: the import computed shape {list(shape)}, the "
                          f"model declares {['?' if d is None else d for d in declared]}")

    def fold(self, node):
        """The node evaluated by onnx.reference on its static inputs.  The
        evaluator is made once per distinct node (op, attributes, inputs'
        positions: the names made canonical) and reused: a transformer's
        layers fold the same shape arithmetic hundreds of times."""
        from onnx.reference import ReferenceEvaluator
        native = _NATIVE_FOLD.get(node.op_type)
        if native is not None:
            feeds = [self.static(n) for n in node.input]
            self.budget.add_bytes(_guard.fold_bytes(node, dict(zip(node.input, feeds)),
                                                    list(node.input)),
                                  self.where, "folding it at import")
            outs = [np.asarray(native(node, *feeds))]
            self.budget.add_bytes(sum(_guard.array_bytes(o) for o in outs), self.where,
                                  "its folded value")
            return outs
        ins = list(dict.fromkeys(n for n in node.input if n))
        canon = {n: f"i{k}" for k, n in enumerate(ins)}
        cn = onnx.NodeProto(op_type=node.op_type, domain=node.domain)
        cn.attribute.extend(node.attribute)
        cn.input.extend(canon[n] if n else "" for n in node.input)
        cn.output.extend(f"o{k}" if o else "" for k, o in enumerate(node.output))
        key = (cn.SerializeToString(), self.opset)
        ev = self._evaluators.get(key)
        if ev is None:
            vi = [helper.make_tensor_value_info(canon[n], 0, None) for n in ins]
            vo = [helper.make_tensor_value_info(o, 0, None) for o in cn.output if o]
            g = helper.make_graph([cn], "fold", vi, vo)
            opsets = list(self.proto.opset_import)
            if node.op_type in _FOLD_AT and self.opset < _FOLD_AT[node.op_type]:
                # onnx.reference implements only the newer versions of these,
                # whose semantics on the older versions' types are the same
                opsets = [o for o in opsets if o.domain not in ("", "ai.onnx")] + \
                    [helper.make_opsetid("", _FOLD_AT[node.op_type])]
            m = helper.make_model(g, opset_imports=opsets,
                                  ir_version=self.proto.ir_version or onnx.IR_VERSION)
            try:
                ev = ReferenceEvaluator(m)
            except Exception as e:  # the reference implementation's own refusal
                raise NotSupportedError(f"folding at import failed: {type(e).__name__}: {e}")
            self._evaluators[key] = ev
        feeds = {n: self.static(n) for n in ins}
        self.budget.add_bytes(_guard.fold_bytes(node, feeds, ins), self.where,
                              "folding it at import")
        try:
            res = ev.run(None, {canon[n]: v for n, v in feeds.items()})
        except MemoryError:
            raise MemoryError(f"{self.where}: folding it at import ran out of memory") from None
        except Exception as e:  # the reference implementation's own refusal
            raise NotSupportedError(f"folding at import failed: {type(e).__name__}: {e}")
        it = iter(res)
        outs = [np.asarray(next(it)) if o else None for o in node.output]
        self.budget.add_bytes(sum(_guard.array_bytes(o) for o in outs), self.where,
                              "its folded value")
        return outs


# ---------------------------------------------------------------------------
# Operator conversions: fn(conv, node, attrs) -> output value(s)

_OPS = {}


_LABELLED = frozenset(webnn.OPERATORS) | frozenset(webnn._api.snake_case(o)
                                                  for o in webnn.OPERATORS)


class _Labelled:
    """The builder as the converters see it: every operator call labelled
    with the ONNX node's name (MLOperatorOptions.label; `label` set by
    convert_node), so that summary(), the picture and profile() name the
    model's nodes, and a fused chain's row the nodes it ran."""

    def __init__(self, builder):
        self._b = builder
        self.label = None

    def __getattr__(self, name):
        attr = getattr(self._b, name)
        label = self.label
        if label is None or name not in _LABELLED:
            return attr

        def call(*args, **kw):
            if "label" not in kw and not (args and isinstance(args[-1], dict)
                                          and "label" in args[-1]):
                kw["label"] = label
            return attr(*args, **kw)
        return call


def _fold_gather_elements(node, data, indices):
    """GatherElements in NumPy (onnx.reference's fails past 64 distinct
    values along the axis: np.choose's limit, then a fallback that reshapes
    wrongly -- BERT's token type ids as transformers 5 exports them)."""
    axis = _norm_axis(_attrs(node).get("axis", 0), data.ndim)
    idx = np.asarray(indices, np.int64)
    n = data.shape[axis]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise NotSupportedError(f"folding at import failed: indices outside [-{n}, {n}) "
                                f"along axis {axis}")
    if idx.ndim != data.ndim or any(i > d for k, (i, d) in enumerate(zip(idx.shape, data.shape))
                                    if k != axis):
        raise NotSupportedError(f"folding at import failed: indices of shape {idx.shape} "
                                f"for data of shape {data.shape}")
    # (the other dimensions of the indices may be shorter than the data's)
    part = data[tuple(slice(None) if k == axis else slice(0, i) for k, i in enumerate(idx.shape))]
    return np.take_along_axis(part, np.where(idx < 0, idx + n, idx), axis)


#: Folded here rather than by onnx.reference.
_NATIVE_FOLD = {"GatherElements": _fold_gather_elements}
#: Folded with onnx.reference at this opset when the model's is older.
_FOLD_AT = {"DequantizeLinear": 19, "QuantizeLinear": 19}
_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
            "Multinomial", "Bernoulli"}
_WHY = {
    "RandomNormal": "random operators are not expressible in WebNN",
    "RandomUniform": "random operators are not expressible in WebNN",
    "RandomNormalLike": "random operators are not expressible in WebNN",
    "RandomUniformLike": "random operators are not expressible in WebNN",
    "Multinomial": "random operators are not expressible in WebNN",
    "Bernoulli": "random operators are not expressible in WebNN",
    "NonZero": "the output shape depends on the data (WebNN shapes are static)",
    "Unique": "the output shape depends on the data (WebNN shapes are static)",
    "NonMaxSuppression": "the output shape depends on the data (WebNN shapes are static)",
    "StringNormalizer": "strings are not a WebNN data type",
    "RegexFullMatch": "strings are not a WebNN data type",
    "StringConcat": "strings are not a WebNN data type",
    "StringSplit": "strings are not a WebNN data type",
}


def _reg(*names):
    def deco(fn):
        for n in names:
            _OPS[n] = fn
        return fn
    return deco


def _norm_axis(axis, rank):
    axis = int(axis)
    if axis < 0:
        axis += rank
    if not 0 <= axis < max(rank, 1):
        raise NotSupportedError(f"axis {axis} is out of range for rank {rank}")
    return axis


def _bcast(a, b):
    return tuple(np.broadcast_shapes(tuple(a), tuple(b)))


_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow"}
_COMPARE = {"Equal": "equal", "Greater": "greater", "Less": "lesser",
            "GreaterOrEqual": "greaterOrEqual", "LessOrEqual": "lesserOrEqual"}
_LOGIC = {"And": "logicalAnd", "Or": "logicalOr", "Xor": "logicalXor"}


def _legacy_bcast(c, node, at, b_op, a_shape):
    """Opset < 7 'broadcast' with 'axis': align b's shape at axis of a."""
    if at.get("broadcast") and "axis" in at:
        bs = list(b_op.shape)
        axis = _norm_axis(at["axis"], len(a_shape))
        shape = [1] * axis + bs + [1] * (len(a_shape) - axis - len(bs))
        return c.b.reshape(b_op, shape)
    return b_op


@_reg(*_BINARY)
def _binary(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    b = _legacy_bcast(c, node, at, b, a.shape)
    if node.op_type == "Pow" and a.data_type != b.data_type:
        b = c.b.cast(b, a.data_type)
    return getattr(c.b, _BINARY[node.op_type])(a, b)


@_reg(*_COMPARE)
def _compare(c, node, at):
    c.bools.add(node.output[0])
    return getattr(c.b, _COMPARE[node.op_type])(c.opnd(node.input[0]), c.opnd(node.input[1]))


@_reg(*_LOGIC)
def _logic(c, node, at):
    c.bools.add(node.output[0])
    return getattr(c.b, _LOGIC[node.op_type])(c.opnd(node.input[0]), c.opnd(node.input[1]))


@_reg("Not")
def _not(c, node, at):
    c.bools.add(node.output[0])
    return c.b.logical_not(c.opnd(node.input[0]))


@_reg("Max", "Min", "Sum", "Mean")
def _variadic(c, node, at):
    ops = [c.opnd(n) for n in node.input if n]
    fn = {"Max": c.b.max, "Min": c.b.min, "Sum": c.b.add, "Mean": c.b.add}[node.op_type]
    r = ops[0]
    for o in ops[1:]:
        r = fn(r, o)
    if len(ops) == 1:
        r = c.b.identity(r)
    if node.op_type == "Mean":
        r = c.b.div(r, c.scalar(len(ops), r.data_type))
    return r


_UNARY = {"Abs": "abs", "Ceil": "ceil", "Cos": "cos", "Erf": "erf", "Exp": "exp",
          "Floor": "floor", "Identity": "identity", "Log": "log", "Neg": "neg",
          "Reciprocal": "reciprocal", "Round": "roundEven", "Sin": "sin", "Sign": "sign",
          "Sqrt": "sqrt", "Tan": "tan", "Relu": "relu", "Sigmoid": "sigmoid",
          "Softplus": "softplus", "Softsign": "softsign", "Tanh": "tanh",
          "HardSwish": "hardSwish"}


@_reg(*_UNARY)
def _unary(c, node, at):
    return getattr(c.b, _UNARY[node.op_type])(c.opnd(node.input[0]))


@_reg("IsNaN")
def _isnan(c, node, at):
    c.bools.add(node.output[0])
    return c.b.is_nan(c.opnd(node.input[0]))


@_reg("IsInf")
def _isinf(c, node, at):
    c.bools.add(node.output[0])
    x = c.opnd(node.input[0])
    r = c.b.is_infinite(x)
    pos, neg = at.get("detect_positive", 1), at.get("detect_negative", 1)
    zero = c.scalar(0, x.data_type)
    if pos and not neg:
        r = c.b.logical_and(r, c.b.greater(x, zero))
    elif neg and not pos:
        r = c.b.logical_and(r, c.b.lesser(x, zero))
    elif not pos and not neg:
        r = c.b.logical_and(r, c.b.logical_not(r))
    return r


@_reg("Elu")
def _elu(c, node, at):
    return c.b.elu(c.opnd(node.input[0]), alpha=float(at.get("alpha", 1.0)))


@_reg("LeakyRelu")
def _leaky(c, node, at):
    return c.b.leaky_relu(c.opnd(node.input[0]), alpha=float(at.get("alpha", 0.01)))


@_reg("HardSigmoid")
def _hsig(c, node, at):
    return c.b.hard_sigmoid(c.opnd(node.input[0]), alpha=float(at.get("alpha", 0.2)),
                            beta=float(at.get("beta", 0.5)))


@_reg("Selu")
def _selu(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.67326319217681884765625))
    gamma = float(at.get("gamma", 1.05070102214813232421875))
    return c.b.mul(c.b.elu(x, alpha=alpha), c.scalar(gamma, x.data_type))


@_reg("Celu")
def _celu(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.0))
    a = c.scalar(alpha, x.data_type)
    return c.b.mul(c.b.elu(c.b.div(x, a), alpha=1.0), a)


@_reg("Gelu")
def _gelu(c, node, at):
    x = c.opnd(node.input[0])
    if at.get("approximate", "none") == "none":
        return c.b.gelu(x)
    dt = x.data_type
    inner = c.b.mul(c.scalar(math.sqrt(2 / math.pi), dt),
                    c.b.add(x, c.b.mul(c.scalar(0.044715, dt), c.b.mul(x, c.b.mul(x, x)))))
    return c.b.mul(c.b.mul(c.scalar(0.5, dt), x), c.b.add(c.scalar(1, dt), c.b.tanh(inner)))


@_reg("Mish")
def _mish(c, node, at):
    x = c.opnd(node.input[0])
    return c.b.mul(x, c.b.tanh(c.b.softplus(x)))


@_reg("ThresholdedRelu")
def _trelu(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    return c.b.where(c.b.greater(x, c.scalar(float(at.get("alpha", 1.0)), dt)), x,
                     c.scalar(0, dt))


@_reg("Shrink")
def _shrink(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    lam, bias = float(at.get("lambd", 0.5)), float(at.get("bias", 0.0))
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    lo = c.b.add(x, c.scalar(bias, dt))
    hi = c.b.sub(x, c.scalar(bias, dt))
    return c.b.where(c.b.lesser(x, c.scalar(-lam, dt)), lo,
                     c.b.where(c.b.greater(x, c.scalar(lam, dt)), hi, c.scalar(0, dt)))


@_reg("Sinh", "Cosh")
def _sinh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    e, em = c.b.exp(x), c.b.exp(c.b.neg(x))
    s = c.b.sub(e, em) if node.op_type == "Sinh" else c.b.add(e, em)
    return c.b.mul(s, c.scalar(0.5, dt))


@_reg("Asinh", "Acosh")
def _asinh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    sign = 1 if node.op_type == "Asinh" else -1
    return c.b.log(c.b.add(x, c.b.sqrt(c.b.add(c.b.mul(x, x), c.scalar(sign, dt)))))


@_reg("Atanh")
def _atanh(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    one = c.scalar(1, dt)
    return c.b.mul(c.scalar(0.5, dt), c.b.log(c.b.div(c.b.add(one, x), c.b.sub(one, x))))


@_reg("PRelu")
def _prelu(c, node, at):
    x, s = c.opnd(node.input[0]), c.opnd(node.input[1])
    if tuple(s.shape) != tuple(x.shape):
        try:
            np.broadcast_to(np.empty(s.shape, np.uint8), x.shape)
        except ValueError:
            # opset < 7: slope [C] against NCHW
            if len(s.shape) == 1 and len(x.shape) > 2 and s.shape[0] == x.shape[1]:
                s = c.b.reshape(s, [s.shape[0]] + [1] * (len(x.shape) - 2))
    return c.b.prelu(x, s)


@_reg("Clip")
def _clip(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    if c.opset < 11:
        lo, hi = at.get("min"), at.get("max")
        opts = {}
        if lo is not None:
            opts["min_value"] = float(lo)
        if hi is not None:
            opts["max_value"] = float(hi)
        return c.b.clamp(x, **opts)
    r = x
    opts = {}
    for i, key, fn in ((1, "min_value", c.b.max), (2, "max_value", c.b.min)):
        if c.has(node, i):
            if c.is_static(node.input[i]):
                v = c.static(node.input[i]).reshape(-1)[0]
                opts[key] = v.item() if dt in ("int64", "uint64") else float(v)
            else:
                r = fn(r, c.opnd(node.input[i]))
    if opts:
        if dt in ("int64", "uint64"):
            # exact: the bounds as constants
            if "min_value" in opts:
                r = c.b.max(r, c.scalar(opts["min_value"], dt))
            if "max_value" in opts:
                r = c.b.min(r, c.scalar(opts["max_value"], dt))
            return r
        return c.b.clamp(r, **opts)
    return r if r is not x else c.b.identity(x)


@_reg("Cast", "CastLike")
def _cast(c, node, at):
    x = c.opnd(node.input[0])
    if node.op_type == "CastLike":
        to = c.dtype(node.input[1])
        like = c.vals[node.input[1]]
        to_bool = node.input[1] in c.bools or (isinstance(like, (np.ndarray, _Fill)) and
                                               like.dtype == np.bool_)
    else:
        t = at["to"]
        to_bool = t == TensorProto.BOOL
        if not to_bool and t not in _ELEM:
            raise NotSupportedError(f"cast to {_elem_name(t)}, which WebNN lacks")
        to = "uint8" if to_bool else _ELEM[t]
    if to_bool:
        c.bools.add(node.output[0])
        if node.input[0] in c.bools:
            return c.b.identity(x)
        return c.b.not_equal(x, c.scalar(0, x.data_type))
    if x.data_type == to:
        return c.b.identity(x)
    return c.b.cast(x, to)


@_reg("MatMul")
def _matmul(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    ra, rb = len(a.shape), len(b.shape)
    if ra == 1:
        a = c.b.reshape(a, [1, a.shape[0]])
    if rb == 1:
        b = c.b.reshape(b, [b.shape[0], 1])
    y = c.b.matmul(a, b)
    if ra == 1 or rb == 1:
        shape = list(y.shape)
        if rb == 1:
            shape.pop(-1)
        if ra == 1:
            shape.pop(-2 if rb != 1 else -1)
        y = c.b.reshape(y, shape)
    return y


@_reg("Gemm")
def _gemm(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    opts = {"alpha": float(at.get("alpha", 1.0)), "beta": float(at.get("beta", 1.0)),
            "a_transpose": bool(at.get("transA", 0)), "b_transpose": bool(at.get("transB", 0))}
    if c.has(node, 2):
        opts["c"] = c.opnd(node.input[2])
    return c.b.gemm(a, b, **opts)


def _same_pads(auto_pad, in_sizes, kernel, strides, dilations):
    pads_b, pads_e = [], []
    for n, k, s, d in zip(in_sizes, kernel, strides, dilations):
        out = -(-n // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        if auto_pad == "SAME_UPPER":
            pads_b.append(total // 2)
            pads_e.append(total - total // 2)
        else:
            pads_b.append(total - total // 2)
            pads_e.append(total // 2)
    return pads_b, pads_e


def _spatial_pads(at, in_sizes, kernel, strides, dilations):
    auto_pad = at.get("auto_pad", "NOTSET")
    nd = len(in_sizes)
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return _same_pads(auto_pad, in_sizes, kernel, strides, dilations)
    if auto_pad == "VALID":
        return [0] * nd, [0] * nd
    pads = list(at.get("pads", [0] * (2 * nd)))
    return pads[:nd], pads[nd:]


def _webnn_padding(pb, pe):
    # WebNN: [beginH, endH, beginW, endW]
    return [pb[0], pe[0], pb[1], pe[1]]


def _to_2d(c, x, extra_dims):
    """A rank-3 NC(W) operand as NC1W for the 2-D operators."""
    if extra_dims:
        return c.b.reshape(x, list(x.shape[:2]) + [1] + list(x.shape[2:]))
    return x


@_reg("Conv")
def _conv(c, node, at):
    x, w = c.opnd(node.input[0]), c.opnd(node.input[1])
    rank = len(x.shape)
    if rank == 5:
        return _conv3d(c, node, at, x, w)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D convolution (WebNN has conv2d only)")
    one_d = rank == 3
    nd = 2
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1] * (rank - 2)))
    dil = list(at.get("dilations", [1] * (rank - 2)))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    if one_d:
        x, w = _to_2d(c, x, True), _to_2d(c, w, True)
        kernel, strides, dil, pb, pe = [1] + kernel, [1] + strides, [1] + dil, [0] + pb, [0] + pe
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides[:nd], "dilations": dil[:nd],
            "groups": int(at.get("group", 1))}
    if c.has(node, 2):
        opts["bias"] = c.opnd(node.input[2])
    y = c.b.conv2d(x, w, **opts)
    if one_d:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


@_reg("ConvTranspose")
def _convt(c, node, at):
    x, w = c.opnd(node.input[0]), c.opnd(node.input[1])
    rank = len(x.shape)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D transposed convolution (WebNN has "
                                f"convTranspose2d only)")
    nd = rank - 2
    groups = int(at.get("group", 1))
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    outpad = list(at.get("output_padding", [0] * nd))
    in_sizes = list(x.shape[2:])
    out_shape = at.get("output_shape")
    auto_pad = at.get("auto_pad", "NOTSET")
    if out_shape is not None:
        out_shape = list(out_shape)[-nd:]
    if out_shape is not None or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        if out_shape is None:
            out_shape = [n * s for n, s in zip(in_sizes, strides)]
        pb, pe = [], []
        for i in range(nd):
            total = strides[i] * (in_sizes[i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 \
                - out_shape[i]
            if auto_pad == "SAME_UPPER":
                pb.append(total // 2)
                pe.append(total - total // 2)
            else:
                pb.append(total - total // 2)
                pe.append(total // 2)
    elif auto_pad == "VALID":
        pb, pe = [0] * nd, [0] * nd
    else:
        pads = list(at.get("pads", [0] * (2 * nd)))
        pb, pe = pads[:nd], pads[nd:]
    if any(p < 0 for p in pb + pe):
        raise NotSupportedError("negative padding")
    if nd == 1:
        x, w = _to_2d(c, x, True), _to_2d(c, w, True)
        kernel, strides, dil, outpad = [1] + kernel, [1] + strides, [1] + dil, [0] + outpad
        pb, pe = [0] + pb, [0] + pe
        if out_shape is not None:
            out_shape = [1] + out_shape
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides, "dilations": dil,
            "groups": groups, "output_padding": outpad, "filter_layout": "iohw"}
    if out_shape is not None:
        opts["output_sizes"] = list(out_shape)
        opts.pop("output_padding")
    if c.has(node, 2):
        opts["bias"] = c.opnd(node.input[2])
    y = c.b.conv_transpose2d(x, w, **opts)
    if nd == 1:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


def _pool(c, node, at, kind, x=None):
    x = c.opnd(node.input[0]) if x is None else x
    rank = len(x.shape)
    if rank == 5 and kind in ("max", "average"):
        return _pool3d(c, node, at, x, kind)
    if rank not in (3, 4):
        raise NotSupportedError(f"{rank - 2}-D pooling (WebNN pools in 2-D only)")
    if len([o for o in node.output if o]) > 1:
        if kind != "max" or rank != 4:
            raise NotSupportedError("the Indices output of a pool other than a 2-D MaxPool")
        return _maxpool_with_indices(c, node, at, x)
    if at.get("storage_order", 0):
        raise NotSupportedError("storage_order 1")
    nd = rank - 2
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    ceil_mode = bool(at.get("ceil_mode", 0))
    if nd == 1:
        x = _to_2d(c, x, True)
        kernel, strides, dil, pb, pe = [1] + kernel, [1] + strides, [1] + dil, [0] + pb, [0] + pe
    if kind == "average" and at.get("count_include_pad", 0) and any(pb + pe):
        # padding counts: pad with zeros first, pool without padding
        x = c.b.pad(x, [0, 0] + pb, [0, 0] + pe, mode="constant", value=0.0)
        if ceil_mode:
            raise NotSupportedError("count_include_pad with ceil_mode")
        pb, pe = [0, 0], [0, 0]
    opts = {"window_dimensions": kernel, "padding": _webnn_padding(pb, pe),
            "strides": strides, "dilations": dil}
    if ceil_mode:
        opts["output_shape_rounding"] = "ceil"
        # ONNX drops a last window that would start in the end padding
        sizes = []
        for i in range(2):
            n = x.shape[2 + i] + pb[i] + pe[i]
            ek = (kernel[i] - 1) * dil[i] + 1
            o = -(-(n - ek) // strides[i]) + 1
            if (o - 1) * strides[i] >= x.shape[2 + i] + pb[i]:
                o -= 1
            sizes.append(o)
        opts["output_sizes"] = sizes
        del opts["output_shape_rounding"]
    fn = {"max": c.b.max_pool2d, "average": c.b.average_pool2d, "l2": c.b.l2_pool2d}[kind]
    y = fn(x, **opts)
    if nd == 1:
        y = c.b.reshape(y, [y.shape[0], y.shape[1], y.shape[3]])
    return y


@_reg("MaxPool")
def _maxpool(c, node, at):
    return _pool(c, node, at, "max")


@_reg("AveragePool")
def _avgpool(c, node, at):
    return _pool(c, node, at, "average")


@_reg("LpPool")
def _lppool(c, node, at):
    p = int(at.get("p", 2))
    x = c.opnd(node.input[0])
    if p == 2 and len(x.shape) != 5:
        return _pool(c, node, at, "l2")
    # (sum over the window of |x|^p)^(1/p): an average pool that counts the
    # padding, times the window size
    dt = x.data_type
    xp = c.b.pow(c.b.abs(x), c.scalar(p, dt)) if p != 1 else c.b.abs(x)
    at2 = dict(at, count_include_pad=1)
    y = _pool(c, node, at2, "average", xp)
    k = int(np.prod(at["kernel_shape"]))
    y = c.b.mul(y, c.scalar(k, dt))
    return y if p == 1 else c.b.pow(y, c.scalar(1.0 / p, dt))


@_reg("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")
def _gpool(c, node, at):
    x = c.opnd(node.input[0])
    axes = list(range(2, len(x.shape)))
    if node.op_type == "GlobalAveragePool":
        return c.b.reduce_mean(x, axes=axes, keep_dimensions=True)
    if node.op_type == "GlobalMaxPool":
        return c.b.reduce_max(x, axes=axes, keep_dimensions=True)
    p = int(at.get("p", 2))
    if p == 2:
        return c.b.reduce_l2(x, axes=axes, keep_dimensions=True)
    if p == 1:
        return c.b.reduce_l1(x, axes=axes, keep_dimensions=True)
    raise NotSupportedError(f"p = {p}")


@_reg("BatchNormalization")
def _bn(c, node, at):
    x = c.opnd(node.input[0])
    if at.get("training_mode", 0) or len([o for o in node.output if o]) > 1:
        if c.opset < 14:
            raise NotSupportedError("the statistics outputs before opset 14")
        # batch statistics (deterministic): normalize with them, and update
        # the running mean and variance with `momentum`
        rank = len(x.shape)
        axes = [0] + list(range(2, rank))
        bshape = [1, x.shape[1]] + [1] * (rank - 2)
        mean = c.b.reduce_mean(x, axes=axes)
        d = c.b.sub(x, c.b.reshape(mean, bshape))
        var = c.b.reduce_mean(c.b.mul(d, d), axes=axes)
        y = c.b.batch_normalization(x, mean, var, scale=c.opnd(node.input[1]),
                                    bias=c.opnd(node.input[2]),
                                    epsilon=float(at.get("epsilon", 1e-5)))
        mom = float(at.get("momentum", 0.9))
        dt = x.data_type
        m_in, v_in = c.opnd(node.input[3]), c.opnd(node.input[4])
        run_mean = c.b.add(c.b.mul(m_in, c.scalar(mom, dt)), c.b.mul(mean, c.scalar(1 - mom, dt)))
        run_var = c.b.add(c.b.mul(v_in, c.scalar(mom, dt)), c.b.mul(var, c.scalar(1 - mom, dt)))
        return [y, run_mean, run_var]
    opts = {"scale": c.opnd(node.input[1]), "bias": c.opnd(node.input[2]),
            "epsilon": float(at.get("epsilon", 1e-5)), "axis": 1}
    return c.b.batch_normalization(x, c.opnd(node.input[3]), c.opnd(node.input[4]), **opts)


@_reg("InstanceNormalization")
def _inorm(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    if len(shape) < 3:
        raise NotSupportedError(f"rank {len(shape)} input")
    if len(shape) != 4:
        # WebNN's instanceNormalization is 4-D: all spatial dimensions in one
        x = c.b.reshape(x, shape[:2] + [int(np.prod(shape[2:], dtype=np.int64)), 1])
    y = c.b.instance_normalization(x, scale=c.opnd(node.input[1]), bias=c.opnd(node.input[2]),
                                   epsilon=float(at.get("epsilon", 1e-5)))
    return c.b.reshape(y, shape) if len(shape) != 4 else y


@_reg("LayerNormalization")
def _lnorm(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank)
    axes = list(range(axis, rank))
    if len([o for o in node.output if o]) > 1:
        return _lnorm_full(c, node, at, x, axes)
    scale = c.opnd(node.input[1])
    bias = c.opnd(node.input[2]) if c.has(node, 2) else None
    want = list(x.shape[axis:])
    if list(scale.shape) != want:
        scale = c.b.expand(scale, want) if len(scale.shape) <= len(want) else scale
    opts = {"scale": scale, "axes": axes, "epsilon": float(at.get("epsilon", 1e-5))}
    if bias is not None:
        if list(bias.shape) != want:
            bias = c.b.expand(bias, want)
        opts["bias"] = bias
    return c.b.layer_normalization(x, **opts)


@_reg("LRN")
def _lrn(c, node, at):
    x = c.opnd(node.input[0])
    if len(x.shape) != 4:
        raise NotSupportedError("LRN on a rank other than 4")
    dt = x.data_type
    size = int(at["size"])
    alpha, beta, bias = float(at.get("alpha", 1e-4)), float(at.get("beta", 0.75)), \
        float(at.get("bias", 1.0))
    n, ch, h, w = x.shape
    sq = c.b.mul(x, x)
    sq = c.b.reshape(sq, [n, 1, ch, h * w])
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    sq = c.b.pad(sq, [0, 0, lo, 0], [0, 0, hi, 0], mode="constant", value=0.0)
    s = c.b.average_pool2d(sq, window_dimensions=[size, 1])
    s = c.b.reshape(s, [n, ch, h, w])  # the mean over the window
    d = c.b.pow(c.b.add(c.scalar(bias, dt), c.b.mul(c.scalar(alpha, dt), s)),
                c.scalar(beta, dt))
    return c.b.div(x, d)


@_reg("MeanVarianceNormalization")
def _mvn(c, node, at):
    x = c.opnd(node.input[0])
    dt = x.data_type
    axes = [_norm_axis(a, len(x.shape)) for a in at.get("axes", [0, 2, 3])]
    mean = c.b.reduce_mean(x, axes=axes, keep_dimensions=True)
    d = c.b.sub(x, mean)
    var = c.b.reduce_mean(c.b.mul(d, d), axes=axes, keep_dimensions=True)
    return c.b.div(d, c.b.add(c.b.sqrt(var), c.scalar(1e-9, dt)))


def _softmax_frame(c, node, at, x):
    """(x as the operand to normalize, axis, a function restoring the shape)."""
    rank = len(x.shape)
    if c.opset < 13:
        axis = _norm_axis(at.get("axis", 1), rank) if rank else 0
        shape = list(x.shape)
        outer = int(np.prod(shape[:axis], dtype=np.int64))
        inner = int(np.prod(shape[axis:], dtype=np.int64))
        x2 = c.b.reshape(x, [outer, inner])
        return x2, 1, lambda y: c.b.reshape(y, shape)
    return x, _norm_axis(at.get("axis", -1), rank), lambda y: y


@_reg("Softmax")
def _softmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    return back(c.b.softmax(x2, axis))


@_reg("LogSoftmax")
def _logsoftmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    m = c.b.reduce_max(x2, axes=[axis], keep_dimensions=True)
    d = c.b.sub(x2, m)
    lse = c.b.log(c.b.reduce_sum(c.b.exp(d), axes=[axis], keep_dimensions=True))
    return back(c.b.sub(d, lse))


@_reg("Hardmax")
def _hardmax(c, node, at):
    x = c.opnd(node.input[0])
    x2, axis, back = _softmax_frame(c, node, at, x)
    n = x2.shape[axis]
    idx = c.b.arg_max(x2, axis, keep_dimensions=True, output_data_type="int32")
    shape = [1] * len(x2.shape)
    shape[axis] = n
    iota = c.const(np.arange(n, dtype=np.int32).reshape(shape))
    return back(c.b.cast(c.b.equal(idx, iota), x2.data_type))


_REDUCE = {"ReduceSum": "reduceSum", "ReduceMean": "reduceMean", "ReduceMax": "reduceMax",
           "ReduceMin": "reduceMin", "ReduceProd": "reduceProduct", "ReduceL1": "reduceL1",
           "ReduceL2": "reduceL2", "ReduceLogSum": "reduceLogSum",
           "ReduceLogSumExp": "reduceLogSumExp", "ReduceSumSquare": "reduceSumSquare"}


@_reg(*_REDUCE)
def _reduce(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    keep = bool(at.get("keepdims", 1))
    axes = at.get("axes")
    axes_input = (node.op_type == "ReduceSum" and c.opset >= 13) or c.opset >= 18
    if axes_input:
        axes = c.ints(node.input[1], "axes") if c.has(node, 1) else None
        if not axes:
            if at.get("noop_with_empty_axes", 0):
                return c.b.identity(x)
            axes = None
    if axes is not None:
        axes = sorted({_norm_axis(a, rank) for a in axes})
    else:
        axes = list(range(rank))
    return getattr(c.b, _REDUCE[node.op_type])(x, axes=axes, keep_dimensions=keep)


@_reg("ArgMax", "ArgMin")
def _arg(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", 0), rank)
    keep = bool(at.get("keepdims", 1))
    fn = c.b.arg_max if node.op_type == "ArgMax" else c.b.arg_min
    if at.get("select_last_index", 0):
        r = c.b.reverse(x, axes=[axis])
        i = fn(r, axis, keep_dimensions=keep, output_data_type="int64")
        return c.b.sub(c.scalar(x.shape[axis] - 1, "int64"), i)
    return fn(x, axis, keep_dimensions=keep, output_data_type="int64")


@_reg("Shape")
def _shape(c, node, at):
    s = np.array(c.shape(node.input[0]), np.int64)
    start, end = at.get("start", 0), at.get("end")
    return s[start:end]


@_reg("Size")
def _size(c, node, at):
    return np.array(int(np.prod(c.shape(node.input[0]), dtype=np.int64)), np.int64)


@_reg("ConstantOfShape")
def _const_of_shape(c, node, at):
    shape = c.ints(node.input[0], "shape")
    value = at.get("value")
    value = _guard.to_array(value, "attribute 'value'").reshape(-1)[0] \
        if value is not None else np.float32(0)
    value = np.asarray(value)
    if any(d < 0 for d in shape):
        raise InvalidModel(f"input 'shape' {shape} has a negative dimension")
    if _guard.nbytes_of(shape, 1) <= _FILL_MATERIALIZE:
        return np.full(shape, value, value.dtype)
    return _Fill(shape, value)


@_reg("Constant")
def _constant(c, node, at):
    return c.fold(node)[0]


@_reg("Concat")
def _concat(c, node, at):
    ins = [n for n in node.input if n]
    rank = len(c.shape(ins[0]))
    axis = _norm_axis(at.get("axis", 0 if c.opset < 4 else None), rank)
    ops = [c.opnd(n) for n in ins if 0 not in c.shape(n) or len(ins) == 1]
    return c.b.concat(ops, axis)


def _reshape_to(c, name, shape):
    x = c.opnd(name)
    if list(x.shape) == list(shape):
        return c.b.identity(x)
    return c.b.reshape(x, [int(d) for d in shape])


@_reg("Reshape")
def _reshape(c, node, at):
    in_shape = c.shape(node.input[0])
    if c.opset < 5:
        shape = list(at["shape"])
    else:
        shape = c.ints(node.input[1], "shape")
    allowzero = at.get("allowzero", 0)
    out = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            d = in_shape[i]
        out.append(d)
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(in_shape, dtype=np.int64))
        out[out.index(-1)] = total // known if known else 0
    return _reshape_to(c, node.input[0], out)


@_reg("Flatten")
def _flatten(c, node, at):
    s = c.shape(node.input[0])
    axis = int(at.get("axis", 1))
    if axis < 0:
        axis += len(s)
    return _reshape_to(c, node.input[0], [int(np.prod(s[:axis], dtype=np.int64)),
                                          int(np.prod(s[axis:], dtype=np.int64))])


@_reg("Squeeze")
def _squeeze(c, node, at):
    s = c.shape(node.input[0])
    if c.opset >= 13:
        axes = c.ints(node.input[1], "axes") if c.has(node, 1) else None
    else:
        axes = at.get("axes")
    if axes is None:
        axes = [i for i, d in enumerate(s) if d == 1]
    axes = {_norm_axis(a, len(s)) for a in axes}
    return _reshape_to(c, node.input[0], [d for i, d in enumerate(s) if i not in axes])


@_reg("Unsqueeze")
def _unsqueeze(c, node, at):
    s = list(c.shape(node.input[0]))
    axes = c.ints(node.input[1], "axes") if c.opset >= 13 else list(at["axes"])
    r = len(s) + len(axes)
    axes = sorted(_norm_axis(a, r) for a in axes)
    for a in axes:
        s.insert(a, 1)
    return _reshape_to(c, node.input[0], s)


@_reg("Transpose")
def _transpose(c, node, at):
    x = c.opnd(node.input[0])
    perm = at.get("perm")
    if perm is None:
        perm = list(range(len(x.shape)))[::-1]
    return c.b.transpose(x, permutation=[int(p) for p in perm])


@_reg("Expand")
def _expand(c, node, at):
    x = c.opnd(node.input[0])
    shape = _bcast(x.shape, c.ints(node.input[1], "shape"))
    return c.b.expand(x, list(shape))


@_reg("Slice")
def _slice(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    rank = len(shape)
    if c.opset < 10:
        starts, ends = list(at["starts"]), list(at["ends"])
        axes = list(at.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    else:
        starts = c.ints(node.input[1], "starts")
        ends = c.ints(node.input[2], "ends")
        axes = c.ints(node.input[3], "axes") if c.has(node, 3) else list(range(len(starts)))
        steps = c.ints(node.input[4], "steps") if c.has(node, 4) else [1] * len(starts)
    b_starts, b_sizes, b_strides = [0] * rank, list(shape), [1] * rank
    rev = []
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        ax = _norm_axis(ax, rank)
        n = shape[ax]
        if sp == 0:
            raise NotSupportedError("step 0")
        s0, e0, _ = slice(st, en, sp).indices(n)
        if sp > 0:
            size = max(0, -(-(e0 - s0) // sp))
            b_starts[ax], b_sizes[ax], b_strides[ax] = s0, size, sp
        else:
            size = max(0, -(-(s0 - e0) // -sp))
            rev.append(ax)
            b_starts[ax], b_sizes[ax], b_strides[ax] = n - 1 - s0, size, -sp
    if 0 in b_sizes:
        raise NotSupportedError("an empty result (WebNN has no zero-sized tensors)")
    # WebNN's sizes are the extent of the window in the input
    b_sizes = [(k - 1) * st + 1 for k, st in zip(b_sizes, b_strides)]
    if rev:
        x = c.b.reverse(x, axes=sorted(rev))
    return c.b.slice(x, b_starts, b_sizes, strides=b_strides)


@_reg("Split")
def _split(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    n_out = len(node.output)
    if c.opset >= 13 and c.has(node, 1):
        splits = c.ints(node.input[1], "split")
    elif "split" in at:
        splits = list(at["split"])
    elif c.opset < 13 and c.has(node, 1):
        splits = c.ints(node.input[1], "split")
    else:
        dim = x.shape[axis]
        n = int(at.get("num_outputs", n_out))
        chunk = -(-dim // n)
        splits = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    return c.b.split(x, [int(s) for s in splits], axis=axis)


@_reg("Tile")
def _tile(c, node, at):
    return c.b.tile(c.opnd(node.input[0]), c.ints(node.input[1], "repeats"))


_PAD_MODE = {"constant": "constant", "reflect": "reflection", "edge": "edge"}


@_reg("Pad")
def _pad(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    mode = at.get("mode", "constant")
    if mode not in _PAD_MODE:
        raise NotSupportedError(f"mode {mode!r}")
    if c.opset < 11:
        pads = list(at.get("pads", at.get("paddings", [])))
        value = float(at.get("value", 0.0))
        axes = list(range(rank))
    else:
        pads = c.ints(node.input[1], "pads")
        value = 0
        if c.has(node, 2):
            if not c.is_static(node.input[2]) and mode == "constant":
                return _pad_dynamic_value(c, node, x, pads)
            value = c.static(node.input[2], "constant_value").reshape(-1)[0].item()
        axes = c.ints(node.input[3], "axes") if c.has(node, 3) else list(range(rank))
    k = len(axes)
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        a = _norm_axis(a, rank)
        begin[a], end[a] = pads[i], pads[i + k]
    if any(p < 0 for p in begin + end):
        raise NotSupportedError("negative pads (cropping)")
    opts = {"mode": _PAD_MODE[mode]}
    if mode == "constant":
        opts["value"] = value
    return c.b.pad(x, begin, end, **opts)


def _indices(c, name, dim, out_dt="int64"):
    """Indices with ONNX's negative values made positive."""
    if c.is_static(name):
        i = c.static(name).astype(np.int64)
        # the runtime rule (the kernels'): negative counts from the end, then
        # clamped to [0, dim - 1]
        i = np.clip(np.where(i < 0, i + dim, i), 0, dim - 1)
        return c.const(i.astype(np.int32 if dim < 2 ** 31 else np.int64))
    i = c.opnd(name)
    dt = i.data_type
    i = c.b.where(c.b.lesser(i, c.scalar(0, dt)), c.b.add(i, c.scalar(dim, dt)), i)
    # clamped here too: the kernels would count a still negative index from
    # the end a second time
    return c.b.clamp(i, min_value=0, max_value=dim - 1)


@_reg("Gather")
def _gather(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.gather(x, _indices(c, node.input[1], x.shape[axis]), axis=axis)


@_reg("GatherElements")
def _gather_el(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.gather_elements(x, _indices(c, node.input[1], x.shape[axis]), axis=axis)


@_reg("GatherND")
def _gather_nd(c, node, at):
    if at.get("batch_dims", 0):
        raise NotSupportedError("batch_dims other than 0")
    x = c.opnd(node.input[0])
    idx = node.input[1]
    if c.is_static(idx):
        i = c.static(idx).astype(np.int64)
        dims = np.array(x.shape[:i.shape[-1]], np.int64)
        # the runtime rule (the kernels'): negative counts from the end, then clamped
        i = np.clip(np.where(i < 0, i + dims, i), 0, dims - 1)
        return c.b.gather_nd(x, c.const(i))
    return c.b.gather_nd(x, c.opnd(idx))


@_reg("ScatterElements", "Scatter")
def _scatter_el(c, node, at):
    if at.get("reduction", "none") != "none":
        raise NotSupportedError(f"reduction {at['reduction']!r}")
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", 0), len(x.shape))
    return c.b.scatter_elements(x, _indices(c, node.input[1], x.shape[axis]),
                                c.opnd(node.input[2]), axis=axis)


@_reg("ScatterND")
def _scatter_nd(c, node, at):
    if at.get("reduction", "none") != "none":
        raise NotSupportedError(f"reduction {at['reduction']!r}")
    return c.b.scatter_nd(c.opnd(node.input[0]), c.opnd(node.input[1]),
                          c.opnd(node.input[2]))


@_reg("Where")
def _where(c, node, at):
    cond = c.opnd(node.input[0])
    if node.input[1] in c.bools and node.input[2] in c.bools:
        c.bools.add(node.output[0])
    return c.b.where(cond, c.opnd(node.input[1]), c.opnd(node.input[2]))


@_reg("Resize", "Upsample")
def _resize(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    rank = len(shape)
    mode = at.get("mode", "nearest")
    roi = None
    given_sizes = False
    if node.op_type == "Upsample" or c.opset < 11:
        ctm = "asymmetric"
        nearest_mode = "floor"
        if "scales" in at:
            scales = list(at["scales"])
        else:
            scales = [float(s) for s in c.static(node.input[1], "scales").reshape(-1)]
        sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
    else:
        ctm = at.get("coordinate_transformation_mode", "half_pixel")
        nearest_mode = at.get("nearest_mode", "round_prefer_floor")
        axes = at.get("axes")
        axes = [_norm_axis(a, rank) for a in axes] if axes is not None else list(range(rank))
        scales = sizes = None
        if ctm == "tf_crop_and_resize" and c.has(node, 1):
            r = [float(v) for v in c.static(node.input[1], "roi").reshape(-1)]
            k = len(r) // 2
            roi = {a: (r[i], r[i + k]) for i, a in enumerate(axes)}
        if c.has(node, 3):
            sz = c.ints(node.input[3], "sizes")
            policy = at.get("keep_aspect_ratio_policy", "stretch")
            sizes = list(shape)
            if policy == "stretch":
                for a, s in zip(axes, sz):
                    sizes[a] = s
                scales = [s / n for s, n in zip(sizes, shape)]
                given_sizes = True
            else:
                # one scale for the given axes (ONNX: round(scale * size)),
                # sampled with that scale
                ratios = [s / shape[a] for a, s in zip(axes, sz)]
                k = min(ratios) if policy == "not_larger" else max(ratios)
                scales = [1.0] * rank
                for a in axes:
                    scales[a] = k
                    sizes[a] = int(np.round(k * shape[a]))
        elif c.has(node, 2):
            sc = [float(s) for s in c.static(node.input[2], "scales").reshape(-1)]
            scales = [1.0] * rank
            for a, s in zip(axes, sc):
                scales[a] = s
            sizes = [int(math.floor(n * s)) for n, s in zip(shape, scales)]
        else:
            raise NotSupportedError("neither scales nor sizes")
    changed = [i for i in range(rank) if sizes[i] != shape[i] or scales[i] != 1.0 or
               (roi and i in roi and roi[i] != (0.0, 1.0))]
    if not changed:
        return c.b.identity(x)
    # WebNN's resample2d where its sampling is ONNX's
    pair = list(changed)
    if len(pair) == 1:
        a = pair[0]
        pair = [a - 1, a] if a > 0 else [a, a + 1]
    native = len(pair) == 2 and pair[1] == pair[0] + 1 and pair[1] < rank and \
        not at.get("antialias", 0) and roi is None and \
        not any(abs(scales[i] - sizes[i] / shape[i]) > 1e-6 for i in changed)
    if native and mode == "nearest":
        native = (ctm in ("half_pixel", "pytorch_half_pixel") and
                  nearest_mode == "round_prefer_floor" and all(sizes[i] > 1 for i in changed)) \
            or (ctm == "asymmetric" and nearest_mode == "floor" and
                all(float(scales[i]).is_integer() and scales[i] >= 1 for i in changed))
        wmode = "nearest-neighbor"
    elif native and mode == "linear":
        native = ctm in ("half_pixel", "pytorch_half_pixel") and all(sizes[i] > 1 for i in changed)
        wmode = "linear"
    else:
        native = False
    if native:
        return c.b.resample2d(x, mode=wmode, sizes=[sizes[i] for i in pair], axes=pair)
    # otherwise: separable, one axis at a time, with the 1-D sampling that
    # ONNX's reference Resize gives (nearest: a gather of static indices;
    # linear and cubic: a product with a static interpolation matrix)
    y = x
    for a in changed:
        c.budget.add_bytes(_guard.nbytes_of([shape[a], shape[a] + 2 * sizes[a]], 8), c.where,
                           f"an interpolation matrix of {shape[a]} x {sizes[a]}")
        m = _resize_matrix(node, at, shape[a], sizes[a], scales[a], given_sizes,
                           roi.get(a) if roi else None, ctm, c.opset)
        y = _apply_axis(c, y, a, m, mode == "nearest")
    return y


def _resize_matrix(node, at, n_in, n_out, scale, given_sizes, roi, ctm, opset):
    """[n_in, n_out]: column j holds the weights of the inputs in output j."""
    from onnx.reference import ReferenceEvaluator
    keep = ("mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a",
            "exclude_outside", "antialias", "extrapolation_value")
    attrs = {k: v for k, v in at.items() if k in keep}
    if node.op_type == "Upsample" or opset < 11:
        attrs = {"mode": at.get("mode", "nearest"),
                 "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    ins = [helper.make_tensor_value_info("x", TensorProto.DOUBLE, [n_in, n_in]),
           helper.make_tensor_value_info("roi", TensorProto.FLOAT, None),
           helper.make_tensor_value_info("scales", TensorProto.FLOAT, None),
           helper.make_tensor_value_info("sizes", TensorProto.INT64, None)]
    feeds = {"x": np.eye(n_in, dtype=np.float64),
             "roi": np.array([0, roi[0], 1, roi[1]] if roi else [], np.float32)}
    if given_sizes:
        feeds["scales"] = np.array([], np.float32)
        feeds["sizes"] = np.array([n_in, n_out], np.int64)
    else:
        feeds["scales"] = np.array([1.0, scale], np.float32)
        feeds["sizes"] = np.array([], np.int64)
    outs = []
    for ev in (0.0, 1.0):
        if ctm == "tf_crop_and_resize":
            attrs["extrapolation_value"] = ev
        n = helper.make_node("Resize", ["x", "roi", "scales", "sizes"] if given_sizes
                             else ["x", "roi", "scales"], ["y"], **attrs)
        g = helper.make_graph([n], "r", ins if given_sizes else ins[:3],
                              [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
        f = {k: v for k, v in feeds.items() if given_sizes or k != "sizes"}
        outs.append(ReferenceEvaluator(model).run(None, f)[0])
        if ctm != "tf_crop_and_resize":
            break
    if len(outs) == 2 and not np.array_equal(outs[0], outs[1]):
        raise NotSupportedError("tf_crop_and_resize with outputs outside the region of interest")
    m = outs[0]
    if m.shape != (n_in, n_out):
        raise NotSupportedError(f"unexpected resize of {n_in} to {m.shape[1]}, not {n_out}")
    return m


def _apply_axis(c, y, axis, m, nearest):
    rank = len(y.shape)
    if nearest:
        if not np.all((m == 0) | (m == 1)) or not np.all(m.sum(0) == 1):
            raise NotSupportedError("nearest sampling that is not a selection")
        idx = np.argmax(m, axis=0).astype(np.int32)
        return c.b.gather(y, c.const(idx), axis=axis)
    dt = y.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"interpolating {dt} data")
    perm = [i for i in range(rank) if i != axis] + [axis]
    t = c.b.transpose(y, permutation=perm) if axis != rank - 1 else y
    if dt == "float16":
        t = c.b.cast(t, "float32")
    shape = list(t.shape)
    flat = c.b.reshape(t, [int(np.prod(shape[:-1], dtype=np.int64)), shape[-1]])
    r = c.b.matmul(flat, c.const(m.astype(np.float32)))
    r = c.b.reshape(r, shape[:-1] + [m.shape[1]])
    if dt == "float16":
        r = c.b.cast(r, "float16")
    if axis != rank - 1:
        inv = [0] * rank
        for i, p in enumerate(perm):
            inv[p] = i
        r = c.b.transpose(r, permutation=inv)
    return r


@_reg("DepthToSpace")
def _d2s(c, node, at):
    x = c.opnd(node.input[0])
    n, ch, h, w = x.shape
    bs = int(at["blocksize"])
    if at.get("mode", "DCR") == "DCR":
        t = c.b.reshape(x, [n, bs, bs, ch // (bs * bs), h, w])
        t = c.b.transpose(t, permutation=[0, 3, 4, 1, 5, 2])
    else:
        t = c.b.reshape(x, [n, ch // (bs * bs), bs, bs, h, w])
        t = c.b.transpose(t, permutation=[0, 1, 4, 2, 5, 3])
    return c.b.reshape(t, [n, ch // (bs * bs), h * bs, w * bs])


@_reg("SpaceToDepth")
def _s2d(c, node, at):
    x = c.opnd(node.input[0])
    n, ch, h, w = x.shape
    bs = int(at["blocksize"])
    t = c.b.reshape(x, [n, ch, h // bs, bs, w // bs, bs])
    perm = [0, 1, 3, 5, 2, 4] if at.get("mode", "DCR") == "CRD" else [0, 3, 5, 1, 2, 4]
    t = c.b.transpose(t, permutation=perm)
    return c.b.reshape(t, [n, ch * bs * bs, h // bs, w // bs])


@_reg("Trilu")
def _trilu(c, node, at):
    k = c.ints(node.input[1], "k")[0] if c.has(node, 1) else 0
    return c.b.triangular(c.opnd(node.input[0]), upper=bool(at.get("upper", 1)), diagonal=k)


@_reg("CumSum")
def _cumsum(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(c.ints(node.input[1], "axis")[0], len(x.shape))
    return c.b.cumulative_sum(x, axis, exclusive=bool(at.get("exclusive", 0)),
                              reversed=bool(at.get("reverse", 0)))


@_reg("Dropout")
def _dropout(c, node, at):
    if c.has(node, 2):
        training = c.static(node.input[2], "training_mode")
        if bool(np.asarray(training).reshape(-1)[0]):
            raise NotSupportedError("training mode (random)")
    if at.get("is_test", 1) == 0 and c.opset < 7:
        raise NotSupportedError("training mode (random)")
    x = c.opnd(node.input[0])
    if len(node.output) > 1 and node.output[1]:
        # inference: nothing is dropped, the mask is all true
        c.bools.add(node.output[1])
        return [c.b.identity(x), _Fill(x.shape, np.array(True))]
    return c.b.identity(x)


@_reg("DequantizeLinear")
def _dq(c, node, at):
    x = c.opnd(node.input[0])
    scale = c.opnd(node.input[1])
    rank = len(x.shape)
    if c.has(node, 2):
        zp = c.opnd(node.input[2])
    else:
        zp = c.const(np.zeros(scale.shape, webnn.DATA_TYPES[x.data_type]))
    scale, zp = _q_params(c, at, rank, scale, zp)
    return c.b.dequantize_linear(x, scale, zp)


@_reg("QuantizeLinear")
def _q(c, node, at):
    x = c.opnd(node.input[0])
    scale = c.opnd(node.input[1])
    rank = len(x.shape)
    if c.has(node, 2):
        zp = c.opnd(node.input[2])
    else:
        odt = at.get("output_dtype", 0) or TensorProto.UINT8
        if odt not in _ELEM:
            raise NotSupportedError(f"output type {_elem_name(odt)}")
        zp = c.const(np.zeros(scale.shape, webnn.DATA_TYPES[_ELEM[odt]]))
    scale, zp = _q_params(c, at, rank, scale, zp)
    return c.b.quantize_linear(x, scale, zp)


def _q_params(c, at, rank, scale, zp):
    """ONNX's per-tensor (scalar) or per-axis (1-D) scale and zero point as
    operands of the input's rank (WebNN broadcasts them, at equal rank)."""
    block = int(at.get("block_size", 0) or 0)
    if block:
        # blocked: scale has the input's rank, the axis divided in blocks;
        # WebNN's blockwise broadcast is the same where the blocks divide it
        x_shape = list(c.vals[c.node.input[0]].shape)
        axis = _norm_axis(at.get("axis", 1), rank)
        if len(scale.shape) != rank or x_shape[axis] % block or \
                scale.shape[axis] * block != x_shape[axis]:
            raise NotSupportedError("blocked quantization whose blocks do not divide the axis")
        return scale, zp
    if len(scale.shape) == rank and list(zp.shape) == list(scale.shape):
        return scale, zp
    shape = [1] * rank
    if len(scale.shape) == 1 and scale.shape[0] != 1 and rank:
        shape[_norm_axis(at.get("axis", 1), rank)] = scale.shape[0]
    if len(scale.shape) > 1:
        raise NotSupportedError("blocked quantization")
    return c.b.reshape(scale, shape), c.b.reshape(zp, shape)


@_reg("Range")
def _range(c, node, at):
    for i in range(3):
        c.static(node.input[i], ("start", "limit", "delta")[i])
    return c.fold(node)[0]


@_reg("EyeLike")
def _eyelike(c, node, at):
    shape = c.shape(node.input[0])
    dt = at.get("dtype")
    np_dt = webnn.DATA_TYPES[_ELEM[dt]] if dt in _ELEM else \
        (np.dtype(bool) if dt == TensorProto.BOOL else None)
    if dt is None:
        np_dt = webnn.DATA_TYPES[c.dtype(node.input[0])]
    if np_dt is None:
        raise NotSupportedError(f"data type {_elem_name(dt)}, which WebNN lacks")
    return np.eye(shape[0], shape[1], k=int(at.get("k", 0)), dtype=np_dt)


@_reg("Swish")
def _swish(c, node, at):
    x = c.opnd(node.input[0])
    alpha = float(at.get("alpha", 1.0))
    return c.b.mul(x, c.b.sigmoid(c.b.mul(x, c.scalar(alpha, x.data_type)) if alpha != 1 else x))


@_reg("LpNormalization")
def _lpnorm(c, node, at):
    x = c.opnd(node.input[0])
    axis = _norm_axis(at.get("axis", -1), len(x.shape))
    p = int(at.get("p", 2))
    if p not in (1, 2):
        raise NotSupportedError(f"p = {p}")
    fn = c.b.reduce_l2 if p == 2 else c.b.reduce_l1
    n = fn(x, axes=[axis], keep_dimensions=True)
    zero = c.scalar(0, x.data_type)
    # ONNX: 0 where the norm is 0
    safe = c.b.where(c.b.equal(n, zero), c.scalar(1, x.data_type), n)
    return c.b.where(c.b.equal(n, zero), zero, c.b.div(x, safe))


@_reg("RMSNormalization")
def _rmsnorm(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank)
    axes = list(range(axis, rank))
    dt = x.data_type
    eps = float(at.get("epsilon", 1e-5))
    xs = x
    if at.get("stash_type", 1) == 1 and dt == "float16":
        xs = c.b.cast(x, "float32")
    ms = c.b.reduce_mean(c.b.mul(xs, xs), axes=axes, keep_dimensions=True)
    y = c.b.div(xs, c.b.sqrt(c.b.add(ms, c.scalar(eps, xs.data_type))))
    if xs is not x:
        y = c.b.cast(y, dt)
    return c.b.mul(y, c.opnd(node.input[1]))


@_reg("Mod")
def _mod(c, node, at):
    a, b = c.opnd(node.input[0]), c.opnd(node.input[1])
    dt = a.data_type
    if dt not in ("float32", "float16"):
        # WebNN's integer div truncates toward zero: a - trunc(a / b) * b is C's fmod
        r = c.b.sub(a, c.b.mul(c.b.div(a, b), b))
        if at.get("fmod", 0) or dt.startswith("uint"):
            return r
        # Python's mod: the sign of the divisor
        zero = c.scalar(0, dt)
        fix = c.b.logical_and(c.b.not_equal(r, zero),
                              c.b.not_equal(c.b.lesser(r, zero), c.b.lesser(b, zero)))
        return c.b.where(fix, c.b.add(r, b), r)
    q = c.b.div(a, b)
    if at.get("fmod", 0):
        t = c.b.mul(c.b.sign(q), c.b.floor(c.b.abs(q)))
        return c.b.sub(a, c.b.mul(t, b))
    # Python's (NumPy's) mod: a - floor(a / b) * b, a zero result takes b's
    # sign, and a finite a against an infinite b gives a (same signs) or b
    r = c.b.sub(a, c.b.mul(c.b.floor(q), b))
    zero = c.scalar(0, dt)
    r = c.b.where(c.b.equal(r, zero), c.b.mul(c.b.sign(b), zero), r)
    same = c.b.equal(c.b.lesser(a, zero), c.b.lesser(b, zero))
    finite_a = c.b.logical_not(c.b.logical_or(c.b.is_nan(a), c.b.is_infinite(a)))
    return c.b.where(c.b.logical_and(c.b.is_infinite(b), finite_a), c.b.where(same, a, b), r)


@_reg("GroupNormalization")
def _groupnorm(c, node, at):
    x = c.opnd(node.input[0])
    shape = list(x.shape)
    g = int(at["num_groups"])
    n, ch = shape[0], shape[1]
    eps = float(at.get("epsilon", 1e-5))
    if c.opset < 21:
        raise NotSupportedError("GroupNormalization before opset 21 (scale and bias per group)")
    t = c.b.reshape(x, [n, g, int(np.prod(shape[1:]) // g)])
    t = c.b.layer_normalization(t, axes=[2], epsilon=eps)
    t = c.b.reshape(t, shape)
    bshape = [1, ch] + [1] * (len(shape) - 2)
    return c.b.add(c.b.mul(t, c.b.reshape(c.opnd(node.input[1]), bshape)),
                   c.b.reshape(c.opnd(node.input[2]), bshape))


def _lnorm_full(c, node, at, x, axes):
    """LayerNormalization with its Mean and InvStdDev outputs, decomposed."""
    dt = x.data_type
    eps = float(at.get("epsilon", 1e-5))
    xs = c.b.cast(x, "float32") if dt == "float16" and at.get("stash_type", 1) == 1 else x
    sdt = xs.data_type
    mean = c.b.reduce_mean(xs, axes=axes, keep_dimensions=True)
    d = c.b.sub(xs, mean)
    var = c.b.reduce_mean(c.b.mul(d, d), axes=axes, keep_dimensions=True)
    inv = c.b.reciprocal(c.b.sqrt(c.b.add(var, c.scalar(eps, sdt))))
    y = c.b.mul(d, inv)
    if sdt != dt:
        y = c.b.cast(y, dt)
    y = c.b.mul(y, c.opnd(node.input[1]))
    if c.has(node, 2):
        y = c.b.add(y, c.opnd(node.input[2]))
    return [y, mean, inv]


def _depth_slices(c, x, k, d, s, n_out):
    """For each kernel depth index: x[:, :, kd*d :: s][:n_out] ([N, C, n_out, H, W])."""
    n, ch, _, h, w = x.shape
    out = []
    for kd in range(k):
        out.append(c.b.slice(x, [0, 0, kd * d, 0, 0], [n, ch, (n_out - 1) * s + 1, h, w],
                             strides=[1, 1, s, 1, 1]))
    return out


def _as_2d_batch(c, t):
    """[N, C, D, H, W] -> [N*D, C, H, W]."""
    n, ch, dd, h, w = t.shape
    t = c.b.transpose(t, permutation=[0, 2, 1, 3, 4])
    return c.b.reshape(t, [n * dd, ch, h, w])


def _from_2d_batch(c, t, n, dd):
    """[N*D, C, H, W] -> [N, C, D, H, W]."""
    _, ch, h, w = t.shape
    t = c.b.reshape(t, [n, dd, ch, h, w])
    return c.b.transpose(t, permutation=[0, 2, 1, 3, 4])


def _conv3d(c, node, at, x, w):
    """3-D convolution as a sum over the kernel's depth of 2-D convolutions,
    the output depth folded into the batch."""
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1, 1, 1]))
    dil = list(at.get("dilations", [1, 1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    if pb[0] or pe[0]:
        x = c.b.pad(x, [0, 0, pb[0], 0, 0], [0, 0, pe[0], 0, 0], mode="constant", value=0.0)
    n = x.shape[0]
    od = (x.shape[2] - ((kernel[0] - 1) * dil[0] + 1)) // strides[0] + 1
    y = None
    for kd, xs in enumerate(_depth_slices(c, x, kernel[0], dil[0], strides[0], od)):
        wk = c.b.reshape(c.b.slice(w, [0, 0, kd, 0, 0], [w.shape[0], w.shape[1], 1] +
                                   kernel[1:]), [w.shape[0], w.shape[1]] + kernel[1:])
        yk = c.b.conv2d(_as_2d_batch(c, xs), wk, padding=[pb[1], pe[1], pb[2], pe[2]],
                        strides=strides[1:], dilations=dil[1:], groups=int(at.get("group", 1)))
        y = yk if y is None else c.b.add(y, yk)
    y = _from_2d_batch(c, y, n, od)
    if c.has(node, 2):
        b = c.opnd(node.input[2])
        y = c.b.add(y, c.b.reshape(b, [1, b.shape[0], 1, 1, 1]))
    return y


def _pool3d(c, node, at, x, kind):
    if len([o for o in node.output if o]) > 1:
        raise NotSupportedError("the Indices output (WebNN's maxPool2d has none)")
    if at.get("ceil_mode", 0):
        raise NotSupportedError("ceil_mode in 3-D pooling")
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1, 1, 1]))
    dil = list(at.get("dilations", [1, 1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    padded = any(pb + pe)
    if kind == "average" and padded and not at.get("count_include_pad", 0):
        raise NotSupportedError("3-D average pooling with padding that does not count")
    if padded:
        value = 0.0 if kind == "average" else -math.inf
        if x.data_type not in ("float32", "float16") and kind == "max":
            value = float(np.iinfo(webnn.DATA_TYPES[x.data_type]).min)
        x = c.b.pad(x, [0, 0] + pb, [0, 0] + pe, mode="constant", value=value)
    n, ch, dd = x.shape[:3]
    fn = c.b.max_pool2d if kind == "max" else c.b.average_pool2d
    t = fn(_as_2d_batch(c, x), window_dimensions=kernel[1:], strides=strides[1:],
           dilations=dil[1:])
    t = _from_2d_batch(c, t, n, dd)
    od = (dd - ((kernel[0] - 1) * dil[0] + 1)) // strides[0] + 1
    y = None
    for s in _depth_slices(c, t, kernel[0], dil[0], strides[0], od):
        y = s if y is None else (c.b.max(y, s) if kind == "max" else c.b.add(y, s))
    if kind == "average":
        y = c.b.div(y, c.scalar(kernel[0], y.data_type))
    return y


# ---- recurrent networks ---------------------------------------------------
_RNN_ACT = {"sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu"}
_RNN_DIR = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}


def _rnn_common(c, node, at, n_gates, default_acts):
    if at.get("clip") is not None:
        raise NotSupportedError("clip (WebNN's recurrent operators do not clip)")
    if at.get("activation_alpha") or at.get("activation_beta"):
        raise NotSupportedError("activations with alpha/beta")
    direction = _RNN_DIR[at.get("direction", "forward")]
    ndir = 2 if direction == "both" else 1
    acts = [a.lower() for a in at.get("activations", default_acts * ndir)]
    k = len(default_acts)
    if ndir == 2 and acts[:k] != acts[k:]:
        raise NotSupportedError("different activations per direction")
    acts = acts[:k]
    if any(a not in _RNN_ACT for a in acts):
        raise NotSupportedError(f"activations {acts} (WebNN has sigmoid, tanh, relu)")
    layout = int(at.get("layout", 0))
    x = c.opnd(node.input[0])
    if layout:
        x = c.b.transpose(x, permutation=[1, 0, 2])
    steps, batch = x.shape[0], x.shape[1]
    if c.has(node, 4):
        lens = c.static(node.input[4], "sequence_lens").reshape(-1)
        if not np.all(lens == steps):
            raise NotSupportedError("sequence_lens shorter than the sequence")
    hid = int(at["hidden_size"])
    opts = {}
    if c.has(node, 3):
        b = c.opnd(node.input[3])
        opts["bias"] = c.b.slice(b, [0, 0], [ndir, n_gates * hid])
        opts["recurrent_bias"] = c.b.slice(b, [0, n_gates * hid], [ndir, n_gates * hid])
    if c.has(node, 5):
        h0 = c.opnd(node.input[5])
        opts["initial_hidden_state"] = c.b.transpose(h0, permutation=[1, 0, 2]) if layout else h0
    return x, steps, batch, hid, direction, acts, layout, opts


def _rnn_outputs(c, node, layout, seq, states):
    outs = []
    if len(node.output) > 0 and node.output[0]:
        outs.append(c.b.transpose(seq, permutation=[2, 0, 1, 3]) if layout else seq)
    else:
        outs.append(None)
    for s in states:
        outs.append(c.b.transpose(s, permutation=[1, 0, 2]) if layout else s)
    return outs


@_reg("LSTM")
def _lstm(c, node, at):
    needs_unrolled = at.get("input_forget", 0) or at.get("clip") is not None
    if c.has(node, 7):
        p = c.static(node.input[7], "P")
        hid_ = int(at["hidden_size"])
        needs_unrolled = needs_unrolled or np.any(p.reshape(p.shape[0], 3, hid_)[:, 1] != 0)
    if needs_unrolled:
        return _lstm_unrolled(c, node, at)
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at, 4, ["sigmoid", "tanh", "tanh"])
    if c.has(node, 6):
        h0 = c.opnd(node.input[6])
        opts["initial_cell_state"] = c.b.transpose(h0, permutation=[1, 0, 2]) if layout else h0
    if c.has(node, 7):
        p = c.static(node.input[7], "P")
        hid_ = hid
        if np.any(p.reshape(p.shape[0], 3, hid_)[:, 1] != 0):
            raise NotSupportedError("an output-gate peephole (ONNX applies it to the new cell "
                                    "state, WebNN's lstm to the previous one)")
        opts["peephole_weight"] = c.opnd(node.input[7])
    want_seq = len(node.output) > 0 and bool(node.output[0])
    res = c.b.lstm(x, c.opnd(node.input[1]), c.opnd(node.input[2]), steps, hid,
                   return_sequence=want_seq, direction=direction, layout="iofg",
                   activations=acts, **opts)
    h, cell = res[0], res[1]
    return _rnn_outputs(c, node, layout, res[2] if want_seq else None, [h, cell])


@_reg("GRU")
def _gru(c, node, at):
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at, 3, ["sigmoid", "tanh"])
    want_seq = len(node.output) > 0 and bool(node.output[0])
    res = c.b.gru(x, c.opnd(node.input[1]), c.opnd(node.input[2]), steps, hid,
                  return_sequence=want_seq, direction=direction, layout="zrn",
                  reset_after=bool(at.get("linear_before_reset", 0)), activations=acts, **opts)
    return _rnn_outputs(c, node, layout, res[1] if want_seq else None, [res[0]])


@_reg("RNN")
def _rnn(c, node, at):
    """The simple RNN (WebNN has none): unrolled, H = f(X W^T + H R^T + Wb + Rb)."""
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(c, node, at, 1, ["tanh"])
    act = getattr(c.b, acts[0])
    ndir = 2 if direction == "both" else 1
    w, r = c.opnd(node.input[1]), c.opnd(node.input[2])
    dt = x.data_type
    h0 = opts.get("initial_hidden_state")
    hs, seqs = [], []
    for d in range(ndir):
        wd = c.b.reshape(c.b.slice(w, [d, 0, 0], [1] + list(w.shape[1:])), list(w.shape[1:]))
        rd = c.b.reshape(c.b.slice(r, [d, 0, 0], [1] + list(r.shape[1:])), list(r.shape[1:]))
        bias = None
        if "bias" in opts:
            bias = c.b.add(c.b.reshape(c.b.slice(opts["bias"], [d, 0], [1, hid]), [hid]),
                           c.b.reshape(c.b.slice(opts["recurrent_bias"], [d, 0], [1, hid]), [hid]))
        h = c.b.reshape(c.b.slice(h0, [d, 0, 0], [1, batch, hid]), [batch, hid]) if h0 is not None \
            else c.const(np.zeros([batch, hid], webnn.DATA_TYPES[dt]))
        seq = [None] * steps
        backward = d == 1 or direction == "backward"
        for step in range(steps):
            t = steps - 1 - step if backward else step
            xt = c.b.reshape(c.b.slice(x, [t, 0, 0], [1, batch, x.shape[2]]), [batch, x.shape[2]])
            s = c.b.add(c.b.gemm(xt, wd, b_transpose=True), c.b.gemm(h, rd, b_transpose=True))
            if bias is not None:
                s = c.b.add(s, bias)
            h = act(s)
            seq[t] = h
        hs.append(c.b.reshape(h, [1, batch, hid]))
        seqs.append(seq)
    y_h = hs[0] if ndir == 1 else c.b.concat(hs, 0)
    seq = None
    if len(node.output) > 0 and node.output[0]:
        per_t = [c.b.concat([c.b.reshape(seqs[d][t], [1, 1, batch, hid]) for d in range(ndir)], 1)
                 if ndir == 2 else c.b.reshape(seqs[0][t], [1, 1, batch, hid])
                 for t in range(steps)]
        seq = per_t[0] if steps == 1 else c.b.concat(per_t, 0)
    return _rnn_outputs(c, node, layout, seq, [y_h])


def _pad_dynamic_value(c, node, x, pads):
    """Pad with a value computed by the graph: pad with 0, then where() a
    static mask of the padded region picks the value."""
    rank = len(x.shape)
    axes = [_norm_axis(a, rank) for a in (c.ints(node.input[3], "axes") if c.has(node, 3)
                                          else range(rank))]
    k = len(axes)
    begin, end = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        begin[a], end[a] = pads[i], pads[i + k]
    if any(p < 0 for p in begin + end):
        raise NotSupportedError("negative pads (cropping)")
    y = c.b.pad(x, begin, end, mode="constant", value=0)
    mask = np.pad(np.zeros(x.shape, np.uint8), list(zip(begin, end)), constant_values=1)
    v = c.b.reshape(c.opnd(node.input[2]), [1] * rank) if rank else c.opnd(node.input[2])
    return c.b.where(c.const(mask), c.b.expand(v, list(y.shape)), y)


@_reg("OneHot")
def _onehot(c, node, at):
    depth = int(c.static(node.input[1], "depth").reshape(-1)[0])
    values = c.opnd(node.input[2])
    idx = c.opnd(node.input[0])
    rank = len(idx.shape)
    axis = int(at.get("axis", -1))
    if axis < 0:
        axis += rank + 1
    idt = idx.data_type
    if idt not in ("int32", "int64"):
        idx = c.b.cast(idx, "int32" if idt in ("float32", "float16", "int8", "uint8") else "int64")
        idt = idx.data_type
    # negative indices count from the end
    idx = c.b.where(c.b.lesser(idx, c.scalar(0, idt)), c.b.add(idx, c.scalar(depth, idt)), idx)
    shape = list(idx.shape)
    shape.insert(axis, 1)
    idx = c.b.reshape(idx, shape)
    iota_shape = [1] * (rank + 1)
    iota_shape[axis] = depth
    if depth < 1:
        raise InvalidModel(f"depth (input 1) is {depth}; it must be at least 1")
    c.budget.add_bytes(_guard.nbytes_of([depth], 8), c.where, f"a ramp of depth {depth}")
    iota = c.const(np.arange(depth, dtype=webnn.DATA_TYPES[idt]).reshape(iota_shape))
    hot = c.b.equal(idx, iota)
    off = c.b.reshape(c.b.slice(values, [0], [1]), [])
    on = c.b.reshape(c.b.slice(values, [1], [1]), [])
    out_shape = list(idx.shape)
    out_shape[axis] = depth
    return c.b.where(hot, c.b.expand(on, out_shape), c.b.expand(off, out_shape))


@_reg("BitShift")
def _bitshift(c, node, at):
    x, s = c.opnd(node.input[0]), c.opnd(node.input[1])
    dt = x.data_type
    if not dt.startswith("uint"):
        raise NotSupportedError(f"data type {dt}")
    # x << s = x * 2^s, x >> s = x / 2^s (WebNN's unsigned div truncates);
    # 2^s as a power of the constant 2
    two = c.scalar(2, dt)
    p = c.b.pow(c.b.expand(two, list(np.broadcast_shapes(tuple(s.shape), ()))) if s.shape else
                two, s)
    if at["direction"] == "LEFT":
        return c.b.mul(x, p)
    return c.b.div(x, p)


@_reg("If")
def _if(c, node, at):
    """An If whose condition is known at import: the chosen branch, inlined."""
    cond = node.input[0]
    if not c.is_static(cond):
        try:
            c.static(cond, "the condition")
        except _NeedStatic:
            raise
        except NotSupportedError:
            pass
        raise NotSupportedError("control flow is not expressible in WebNN (the condition is "
                                "computed by the graph)")
    branch = at["then_branch"] if bool(np.asarray(c.static(cond)).reshape(-1)[0]) \
        else at["else_branch"]
    for t in branch.initializer:
        c.vals[t.name] = _guard.to_array(t, f"branch initializer {t.name!r}")
    for k, inner in enumerate(branch.node):
        c.convert_node(inner, f"{node.name or 'If'}.{k}")
    outs = []
    for o in branch.output:
        if o.name not in c.vals:
            raise NotSupportedError(f"branch output {o.name!r} is not produced")
        outs.append(c.vals[o.name])
    for o, name in zip(branch.output, node.output):
        if o.name in c.bools and name:
            c.bools.add(name)
    return outs


def _rename_graph(g, outer):
    """Rename a subgraph's references to values of the enclosing scope."""
    local = {i.name for i in g.input} | {t.name for t in g.initializer}
    for n in g.node:
        local.update(o for o in n.output if o)
    for n in g.node:
        for i, name in enumerate(n.input):
            if name and name not in local:
                n.input[i] = outer(name)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_graph(a.g, lambda x, _l=local: x if x in _l else outer(x))
    for o in g.output:
        if o.name not in local:
            o.name = outer(o.name)


def _einsum_terms(eq, ranks):
    eq = eq.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise NotSupportedError("the equation's inputs do not match the node's")
    free = [ch for ch in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if ch not in eq]
    n_ell = max((r - len(t.replace("...", "")) for t, r in zip(terms, ranks) if "..." in t),
                default=0)
    ell = "".join(free[:n_ell])
    out_terms = []
    for t, r in zip(terms, ranks):
        if "..." in t:
            k = r - len(t.replace("...", ""))
            t = t.replace("...", ell[n_ell - k:])
        if len(t) != r:
            raise NotSupportedError(f"term {t!r} does not match rank {r}")
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in out_terms:
            for ch in t:
                counts[ch] = counts.get(ch, 0) + 1
        out = ell + "".join(sorted(ch for ch, n in counts.items() if n == 1 and ch not in ell))
    return out_terms, out


@_reg("Einsum")
def _einsum(c, node, at):
    ops = [c.opnd(n) for n in node.input]
    terms, out = _einsum_terms(at["equation"], [len(o.shape) for o in ops])
    for t in terms:
        if len(set(t)) != len(t):
            raise NotSupportedError("a repeated index within one input (a diagonal)")
    if any(o.data_type not in ("float32", "float16") for o in ops):
        raise NotSupportedError("Einsum on integers (WebNN's matmul is float only)")
    dims = {}
    for t, o in zip(terms, ops):
        for ch, d in zip(t, o.shape):
            if dims.setdefault(ch, d) != d:
                raise NotSupportedError(f"index {ch!r} has sizes {dims[ch]} and {d} "
                                        f"(broadcasting in Einsum)")

    def reduce_unused(x, t, keep):
        axes = [i for i, ch in enumerate(t) if ch not in keep]
        if axes:
            x = c.b.reduce_sum(x, axes=axes)
            t = "".join(ch for ch in t if ch in keep)
        return x, t

    x, tx = ops[0], terms[0]
    for k in range(1, len(ops) + 1):
        later = set(out) | set("".join(terms[k + 1:]))
        if k == len(ops):
            x, tx = reduce_unused(x, tx, set(out))
            break
        y, ty = ops[k], terms[k]
        x, tx = reduce_unused(x, tx, later | set(ty))
        y, ty = reduce_unused(y, ty, later | set(tx))
        batch = [ch for ch in tx if ch in ty and ch in later]
        contract = [ch for ch in tx if ch in ty and ch not in later]
        left = [ch for ch in tx if ch not in ty]
        right = [ch for ch in ty if ch not in tx]
        size = lambda chs: int(np.prod([dims[ch] for ch in chs], dtype=np.int64))  # noqa
        xa = c.b.transpose(x, permutation=[tx.index(ch) for ch in batch + left + contract]) \
            if tx else x
        ya = c.b.transpose(y, permutation=[ty.index(ch) for ch in batch + contract + right]) \
            if ty else y
        xa = c.b.reshape(xa, [size(batch), size(left), size(contract)])
        ya = c.b.reshape(ya, [size(batch), size(contract), size(right)])
        z = c.b.matmul(xa, ya)
        tz = "".join(batch + left + right)
        x = c.b.reshape(z, [dims[ch] for ch in tz])
        tx = tz
    if sorted(tx) != sorted(out):
        raise NotSupportedError(f"cannot form output {out!r} from {tx!r}")
    if tx != out:
        x = c.b.transpose(x, permutation=[tx.index(ch) for ch in out])
    elif len(ops) == 1:
        x = c.b.identity(x)
    return x


def _lstm_unrolled(c, node, at):
    """ONNX's LSTM step by step where WebNN's lstm differs: the output gate's
    peephole on the new cell state, clip, input_forget."""
    clip = at.get("clip")
    at2 = {k: v for k, v in at.items() if k != "clip"}
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at2, 4, ["sigmoid", "tanh", "tanh"])
    ndir = 2 if direction == "both" else 1
    dt = x.data_type
    f_act, g_act, h_act = (getattr(c.b, a) for a in acts)
    w, r = c.opnd(node.input[1]), c.opnd(node.input[2])
    pw = c.opnd(node.input[7]) if c.has(node, 7) else None
    c0 = None
    if c.has(node, 6):
        c0 = c.opnd(node.input[6])
        if layout:
            c0 = c.b.transpose(c0, permutation=[1, 0, 2])
    h0 = opts.get("initial_hidden_state")
    zeros = c.const(np.zeros([batch, hid], webnn.DATA_TYPES[dt]))

    def pick(v, d, n):   # [D, n] or [D, B, H] -> direction d
        shape = list(v.shape)
        return c.b.reshape(c.b.slice(v, [d] + [0] * (len(shape) - 1), [1] + shape[1:]), shape[1:])

    def clipped(v):
        return c.b.clamp(v, min_value=-float(clip), max_value=float(clip)) if clip is not None \
            else v
    hs, cs, seqs = [], [], []
    for d in range(ndir):
        wd, rd = pick(w, d, 0), pick(r, d, 0)
        bias = None
        if "bias" in opts:
            bias = c.b.add(pick(opts["bias"], d, 0), pick(opts["recurrent_bias"], d, 0))
        p = pick(pw, d, 0) if pw is not None else None
        h = pick(h0, d, 0) if h0 is not None else zeros
        cell = pick(c0, d, 0) if c0 is not None else zeros
        seq = [None] * steps
        backward = d == 1 or direction == "backward"
        for step in range(steps):
            t = steps - 1 - step if backward else step
            xt = c.b.reshape(c.b.slice(x, [t, 0, 0], [1, batch, x.shape[2]]), [batch, x.shape[2]])
            s = c.b.add(c.b.gemm(xt, wd, b_transpose=True), c.b.gemm(h, rd, b_transpose=True))
            if bias is not None:
                s = c.b.add(s, bias)
            gi, go, gf, gc = (c.b.slice(s, [0, k * hid], [batch, hid]) for k in range(4))
            if p is not None:
                pi, po, pf = (c.b.slice(p, [k * hid], [hid]) for k in range(3))
                gi = c.b.add(gi, c.b.mul(pi, cell))
                gf = c.b.add(gf, c.b.mul(pf, cell))
            i = f_act(clipped(gi))
            f = c.b.sub(c.scalar(1, dt), i) if at.get("input_forget", 0) else f_act(clipped(gf))
            g = g_act(clipped(gc))
            cell = c.b.add(c.b.mul(f, cell), c.b.mul(i, g))
            if p is not None:
                go = c.b.add(go, c.b.mul(po, cell))
            o = f_act(clipped(go))
            h = c.b.mul(o, h_act(cell))
            seq[t] = h
        hs.append(c.b.reshape(h, [1, batch, hid]))
        cs.append(c.b.reshape(cell, [1, batch, hid]))
        seqs.append(seq)
    cat = lambda parts: parts[0] if len(parts) == 1 else c.b.concat(parts, 0)  # noqa: E731
    seq = None
    if len(node.output) > 0 and node.output[0]:
        per_t = [cat([c.b.reshape(seqs[d][t], [1, batch, hid]) for d in range(ndir)])
                 for t in range(steps)]
        seq = cat([c.b.reshape(v, [1, ndir, batch, hid]) for v in per_t])
    return _rnn_outputs(c, node, layout, seq, [cat(hs), cat(cs)])


@_reg("GridSample")
def _gridsample(c, node, at):
    """4-D GridSample, 'linear'/'bilinear' and 'nearest', 'zeros' and
    'border' padding: the corners' values by gatherND, weighted."""
    x, grid = c.opnd(node.input[0]), c.opnd(node.input[1])
    if len(x.shape) != 4:
        raise NotSupportedError(f"a rank-{len(x.shape)} input (only 4-D)")
    mode = at.get("mode", "linear" if c.opset >= 20 else "bilinear")
    mode = {"bilinear": "linear"}.get(mode, mode)
    pad = at.get("padding_mode", "zeros")
    if mode not in ("linear", "nearest"):
        raise NotSupportedError(f"mode {mode!r}")
    if pad not in ("zeros", "border"):
        raise NotSupportedError(f"padding_mode {pad!r}")
    dt = x.data_type
    if dt not in ("float32", "float16") or grid.data_type != dt:
        raise NotSupportedError(f"data type {dt}")
    align = bool(at.get("align_corners", 0))
    n, ch, h, w = x.shape
    _, ho, wo, _ = grid.shape
    one, half = c.scalar(1, dt), c.scalar(0.5, dt)

    def unnorm(g, size):
        if align:
            return c.b.mul(c.b.mul(c.b.add(g, one), half), c.scalar(size - 1, dt))
        return c.b.mul(c.b.sub(c.b.mul(c.b.add(g, one), c.scalar(size, dt)), one), half)
    gx = c.b.reshape(c.b.slice(grid, [0, 0, 0, 0], [n, ho, wo, 1]), [n, ho, wo])
    gy = c.b.reshape(c.b.slice(grid, [0, 0, 0, 1], [n, ho, wo, 1]), [n, ho, wo])
    px, py = unnorm(gx, w), unnorm(gy, h)
    if pad == "border":
        px = c.b.clamp(px, min_value=0.0, max_value=float(w - 1))
        py = c.b.clamp(py, min_value=0.0, max_value=float(h - 1))
    xt = c.b.transpose(x, permutation=[0, 2, 3, 1])          # [N, H, W, C]
    nidx = c.const(np.broadcast_to(np.arange(n, dtype=np.int32).reshape(n, 1, 1),
                                   (n, ho, wo)).copy())

    def corner(ix, iy):
        """Values at integer (float-typed) positions, 0 outside: [N, Ho, Wo, C]."""
        inside = c.b.logical_and(
            c.b.logical_and(c.b.greater_or_equal(ix, c.scalar(0, dt)),
                            c.b.lesser_or_equal(ix, c.scalar(w - 1, dt))),
            c.b.logical_and(c.b.greater_or_equal(iy, c.scalar(0, dt)),
                            c.b.lesser_or_equal(iy, c.scalar(h - 1, dt))))
        cx = c.b.cast(c.b.clamp(ix, min_value=0.0, max_value=float(w - 1)), "int32")
        cy = c.b.cast(c.b.clamp(iy, min_value=0.0, max_value=float(h - 1)), "int32")
        idx = c.b.concat([c.b.reshape(v, [n, ho, wo, 1]) for v in (nidx, cy, cx)], 3)
        vals = c.b.gather_nd(xt, idx)
        keep = c.b.reshape(inside, [n, ho, wo, 1])
        return c.b.where(keep, vals, c.scalar(0, dt))

    if mode == "nearest":
        y = corner(c.b.round_even(px), c.b.round_even(py))
    else:
        x0, y0 = c.b.floor(px), c.b.floor(py)
        x1, y1 = c.b.add(x0, one), c.b.add(y0, one)
        wx1 = c.b.reshape(c.b.sub(px, x0), [n, ho, wo, 1])
        wy1 = c.b.reshape(c.b.sub(py, y0), [n, ho, wo, 1])
        wx0, wy0 = c.b.sub(one, wx1), c.b.sub(one, wy1)
        y = c.b.add(
            c.b.add(c.b.mul(c.b.mul(corner(x0, y0), wx0), wy0),
                    c.b.mul(c.b.mul(corner(x1, y0), wx1), wy0)),
            c.b.add(c.b.mul(c.b.mul(corner(x0, y1), wx0), wy1),
                    c.b.mul(c.b.mul(corner(x1, y1), wx1), wy1)))
    return c.b.transpose(y, permutation=[0, 3, 1, 2])


@_reg("DFT")
def _dft(c, node, at):
    """DFT as products with static cosine and sine matrices."""
    x = c.opnd(node.input[0])
    dt = x.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    rank = len(x.shape)
    if c.opset >= 20:
        axis = c.ints(node.input[2], "axis")[0] if c.has(node, 2) else -2
    else:
        axis = int(at.get("axis", 1))
    axis = _norm_axis(axis, rank)
    if axis == rank - 1:
        raise NotSupportedError("the DFT axis is the complex axis")
    inverse = bool(at.get("inverse", 0))
    onesided = bool(at.get("onesided", 0))
    if inverse and onesided:
        raise NotSupportedError("an inverse one-sided DFT")
    comp = x.shape[-1]
    n = x.shape[axis]
    length = c.ints(node.input[1], "dft_length")[0] if c.has(node, 1) else n
    # the transformed axis just before the complex one
    perm = [i for i in range(rank - 1) if i != axis] + [axis, rank - 1]
    t = c.b.transpose(x, permutation=perm) if perm != list(range(rank)) else x
    shape = list(t.shape)
    lead = shape[:-2]

    def part(k):
        v = c.b.slice(t, [0] * rank, lead + [n, 1]) if k == 0 else \
            c.b.slice(t, [0] * (rank - 1) + [1], lead + [n, 1])
        v = c.b.reshape(v, lead + [n])
        if length < n:
            v = c.b.slice(v, [0] * len(lead) + [0], lead + [length])
        elif length > n:
            v = c.b.pad(v, [0] * (len(lead) + 1), [0] * len(lead) + [length - n],
                        mode="constant", value=0.0)
        if dt == "float16":
            v = c.b.cast(v, "float32")
        return v
    xr = part(0)
    xi = part(1) if comp == 2 else None
    k_out = length // 2 + 1 if onesided else length
    if length < 1:
        raise InvalidModel(f"dft_length is {length}; it must be at least 1")
    c.budget.add_bytes(_guard.nbytes_of([length, k_out], 8 * 3), c.where,
                       f"cosine and sine matrices of {length} x {k_out}")
    tt = np.arange(length, dtype=np.float64).reshape(length, 1)
    kk = np.arange(k_out, dtype=np.float64).reshape(1, k_out)
    ang = (2 * np.pi / length) * tt * kk * (1 if inverse else -1)
    cm = c.const(np.cos(ang).astype(np.float32))
    sm = c.const(np.sin(ang).astype(np.float32))
    if len(lead) == 0:
        raise NotSupportedError("a DFT input without a batch dimension")
    yr = c.b.matmul(xr, cm)
    yi = c.b.matmul(xr, sm)
    if xi is not None:
        yr = c.b.sub(yr, c.b.matmul(xi, sm))
        yi = c.b.add(yi, c.b.matmul(xi, cm))
    if inverse:
        inv = c.scalar(1.0 / length, "float32")
        yr, yi = c.b.mul(yr, inv), c.b.mul(yi, inv)
    y = c.b.concat([c.b.reshape(yr, lead + [k_out, 1]), c.b.reshape(yi, lead + [k_out, 1])],
                   len(lead) + 1)
    if dt == "float16":
        y = c.b.cast(y, "float16")
    if perm != list(range(rank)):
        invp = [0] * rank
        for i, p in enumerate(perm):
            invp[p] = i
        y = c.b.transpose(y, permutation=invp)
    return y


@_reg("STFT")
def _stft(c, node, at):
    """Frames gathered with static indices, windowed, and transformed with
    cosine/sine matrices."""
    x = c.opnd(node.input[0])
    dt = x.data_type
    if dt not in ("float32", "float16"):
        raise NotSupportedError(f"data type {dt}")
    batch, length, comp = x.shape
    step = c.ints(node.input[1], "frame_step")[0]
    window = c.opnd(node.input[2]) if c.has(node, 2) else None
    if c.has(node, 3):
        flen = c.ints(node.input[3], "frame_length")[0]
    elif window is not None:
        flen = window.shape[0]
    else:
        raise NotSupportedError("neither a window nor a frame_length")
    onesided = bool(at.get("onesided", 1))
    if comp == 2 and onesided:
        raise NotSupportedError("a one-sided STFT of a complex signal")
    frames = (length - flen) // step + 1
    idx = (np.arange(frames).reshape(frames, 1) * step + np.arange(flen)).astype(np.int32)
    t = x if dt == "float32" else c.b.cast(x, "float32")
    f = c.b.gather(t, c.const(idx), axis=1)          # [batch, frames, flen, comp]

    def part(k):
        v = c.b.slice(f, [0, 0, 0, k], [batch, frames, flen, 1])
        v = c.b.reshape(v, [batch, frames, flen])
        if window is not None:
            wv = window if window.data_type == "float32" else c.b.cast(window, "float32")
            v = c.b.mul(v, wv)
        return v
    xr = part(0)
    xi = part(1) if comp == 2 else None
    bins = flen // 2 + 1 if onesided else flen
    ang = (-2 * np.pi / flen) * np.arange(flen, dtype=np.float64).reshape(flen, 1) * \
        np.arange(bins, dtype=np.float64).reshape(1, bins)
    cm, sm = c.const(np.cos(ang).astype(np.float32)), c.const(np.sin(ang).astype(np.float32))
    yr, yi = c.b.matmul(xr, cm), c.b.matmul(xr, sm)
    if xi is not None:
        yr = c.b.sub(yr, c.b.matmul(xi, sm))
        yi = c.b.add(yi, c.b.matmul(xi, cm))
    y = c.b.concat([c.b.reshape(yr, [batch, frames, bins, 1]),
                    c.b.reshape(yi, [batch, frames, bins, 1])], 3)
    return y if dt == "float32" else c.b.cast(y, dt)


@_reg("ReverseSequence")
def _reverse_sequence(c, node, at):
    """With the lengths known at import: a gather of static indices."""
    x = c.opnd(node.input[0])
    lens = c.ints(node.input[1], "sequence_lens")
    rank = len(x.shape)
    taxis = _norm_axis(at.get("time_axis", 0), rank)
    baxis = _norm_axis(at.get("batch_axis", 1), rank)
    steps, batch = x.shape[taxis], x.shape[baxis]
    idx = np.empty((steps, batch), np.int32)
    for b, n in enumerate(lens):
        n = min(max(int(n), 0), steps)
        idx[:, b] = np.concatenate([np.arange(n)[::-1], np.arange(n, steps)])
    shape = [1] * rank
    shape[taxis], shape[baxis] = steps, batch
    full = idx if taxis < baxis else idx.T
    full = np.broadcast_to(full.reshape(shape), x.shape).copy()
    return c.b.gather_elements(x, c.const(full), axis=taxis)


# ---- control flow with a length known at import: unrolled -----------------
_MAX_UNROLL = 4096


def _reserve_body(c, body, times, what):
    """Refuse an unrolling over the import budget before starting it."""
    cap = c.budget.max_nodes
    known = {}
    for n in body.node:
        for i in n.input:
            v = c.vals.get(i)
            if isinstance(v, np.ndarray) and v.dtype.kind in "iu" and v.size == 1:
                known[i] = int(v.reshape(-1)[0])
    per = _guard.expanded_nodes(c.proto, cap, nodes=body.node, known=known)[0]
    c.budget.check_nodes(per * times, c.where, f"{what} ({times} x {per} nodes)")


def _inline_body(c, body, formal_values, prefix):
    """Convert a subgraph's nodes with its inputs bound to `formal_values`
    ({formal name: value}); returns the values of its outputs."""
    local = {i.name for i in body.input} | {t.name for t in body.initializer}
    for n in body.node:
        local.update(o for o in n.output if o)

    def name_of(x):
        return prefix + x if x in local else x
    for formal, v in formal_values.items():
        c.vals[prefix + formal] = v
    for t in body.initializer:
        c.vals[prefix + t.name] = _guard.to_array(t, f"subgraph initializer {t.name!r}")
    for k, inner in enumerate(body.node):
        n = onnx.NodeProto()
        n.CopyFrom(inner)
        del n.input[:]
        n.input.extend(name_of(i) if i else "" for i in inner.input)
        del n.output[:]
        n.output.extend(name_of(o) if o else "" for o in inner.output)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_graph(a.g, name_of)
        c.convert_node(n, f"{prefix}{k}")
    outs = []
    for o in body.output:
        nm = name_of(o.name)
        if nm not in c.vals:
            raise NotSupportedError(f"body output {o.name!r} is not produced")
        outs.append((c.vals[nm], nm in c.bools))
    return outs


def _take(c, v, axis, t):
    """Element t along `axis`, the axis removed."""
    if isinstance(v, np.ndarray):
        return np.take(v, t, axis=axis)
    op = c.opnd_of(v)
    shape = list(op.shape)
    starts = [0] * len(shape)
    starts[axis] = t
    sizes = list(shape)
    sizes[axis] = 1
    s = c.b.slice(op, starts, sizes)
    return c.b.reshape(s, shape[:axis] + shape[axis + 1:])


def _stack(c, values, axis):
    if all(isinstance(v, np.ndarray) for v in values):
        return np.stack(values, axis=axis)
    ops = []
    for v in values:
        op = c.opnd_of(v)
        shape = list(op.shape)
        ops.append(c.b.reshape(op, shape[:axis] + [1] + shape[axis:]))
    return ops[0] if len(ops) == 1 else c.b.concat(ops, axis)


@_reg("Scan")
def _scan(c, node, at):
    if c.opset < 9:
        raise NotSupportedError("Scan before opset 9 (with sequence_lens)")
    body = at["body"]
    m = int(at["num_scan_inputs"])
    ins = list(node.input)
    n_state = len(ins) - m
    k_out = len(body.output) - n_state
    in_axes = list(at.get("scan_input_axes", [0] * m))
    in_dirs = list(at.get("scan_input_directions", [0] * m))
    out_axes = list(at.get("scan_output_axes", [0] * k_out))
    out_dirs = list(at.get("scan_output_directions", [0] * k_out))
    scans = [c.vals[n] for n in ins[n_state:]]
    ranks = [len(v.shape) for v in scans]
    in_axes = [_norm_axis(a, r) for a, r in zip(in_axes, ranks)]
    length = int(scans[0].shape[in_axes[0]])
    if length > _MAX_UNROLL:
        raise NotSupportedError(f"a scan of {length} steps (unrolled up to {_MAX_UNROLL})")
    _reserve_body(c, body, length, "unrolling the scan")
    state = [c.vals[n] for n in ins[:n_state]]
    per_step = [[] for _ in range(k_out)]
    for t in range(length):
        formal = {}
        for j, vi in enumerate(body.input[:n_state]):
            formal[vi.name] = state[j]
        for j, vi in enumerate(body.input[n_state:]):
            tt = length - 1 - t if in_dirs[j] else t
            formal[vi.name] = _take(c, scans[j], in_axes[j], tt)
        outs = _inline_body(c, body, formal, f"__{node.name or 'scan'}_{id(node)}_{t}_")
        state = [v for v, _ in outs[:n_state]]
        for j, (v, _) in enumerate(outs[n_state:]):
            per_step[j].append(v)
    results = list(state)
    for j in range(k_out):
        seq = per_step[j][::-1] if out_dirs[j] else per_step[j]
        rank = len(seq[0].shape) + 1
        results.append(_stack(c, seq, _norm_axis(out_axes[j], rank)))
    return results


@_reg("Loop")
def _loop(c, node, at):
    body = at["body"]
    ins = list(node.input)
    if not c.has(node, 0):
        raise NotSupportedError("a loop without a trip count (its length depends on the data)")
    trips = int(np.asarray(c.static(node.input[0], "the trip count")).reshape(-1)[0])
    cond = True
    if c.has(node, 1):
        cond = bool(np.asarray(c.static(node.input[1], "the condition")).reshape(-1)[0])
    if trips > _MAX_UNROLL:
        raise NotSupportedError(f"a loop of {trips} iterations (unrolled up to {_MAX_UNROLL})")
    _reserve_body(c, body, max(trips, 0), "unrolling the loop")
    carried = [c.vals[n] for n in ins[2:]]
    n_carried = len(carried)
    k_out = len(body.output) - 1 - n_carried
    per_step = [[] for _ in range(k_out)]
    for i in range(trips):
        if not cond:
            break
        formal = {body.input[0].name: np.array(i, np.int64),
                  body.input[1].name: np.array(cond)}
        for j, vi in enumerate(body.input[2:]):
            formal[vi.name] = carried[j]
        outs = _inline_body(c, body, formal, f"__{node.name or 'loop'}_{id(node)}_{i}_")
        cv = outs[0][0]
        if not isinstance(cv, np.ndarray):
            raise NotSupportedError("a loop condition computed by the graph")
        cond = bool(np.asarray(cv).reshape(-1)[0])
        carried = [v for v, _ in outs[1:1 + n_carried]]
        for j, (v, _) in enumerate(outs[1 + n_carried:]):
            per_step[j].append(v)
    results = list(carried)
    for j in range(k_out):
        if not per_step[j]:
            raise NotSupportedError("a scan output of a loop that ran no iteration")
        results.append(_stack(c, per_step[j], 0))
    return results


# ---- sequences inside the graph (lists known at import) ---------------------
_SEQ_OPS = {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt",
            "SequenceErase", "SequenceLength", "ConcatFromSequence", "SplitToSequence"}


def _pos(c, node, i, n, default, insert=False):
    if not c.has(node, i):
        return default
    p = c.ints(node.input[i], "the position")[0]
    if p < 0:
        p += n
    if not 0 <= p <= (n if insert else n - 1):
        raise NotSupportedError(f"position {p} out of range for a sequence of {n}")
    return p


@_reg("SequenceEmpty")
def _seq_empty(c, node, at):
    return _Seq()


@_reg("SequenceConstruct")
def _seq_construct(c, node, at):
    return _Seq(c.vals[n] for n in node.input)


@_reg("SequenceInsert")
def _seq_insert(c, node, at):
    s = _Seq(c.seq(node.input[0]))
    s.insert(_pos(c, node, 2, len(s), len(s), insert=True), c.vals[node.input[1]])
    return s


@_reg("SequenceAt")
def _seq_at(c, node, at):
    s = c.seq(node.input[0])
    v = s[_pos(c, node, 1, len(s), None)]
    return v if isinstance(v, np.ndarray) else c.b.identity(c.opnd_of(v))


@_reg("SequenceErase")
def _seq_erase(c, node, at):
    s = _Seq(c.seq(node.input[0]))
    del s[_pos(c, node, 1, len(s), len(s) - 1)]
    return s


@_reg("SequenceLength")
def _seq_length(c, node, at):
    return np.array(len(c.seq(node.input[0])), np.int64)


@_reg("ConcatFromSequence")
def _concat_from_seq(c, node, at):
    s = c.seq(node.input[0])
    if not s:
        raise NotSupportedError("an empty sequence")
    rank = len(s[0].shape)
    if at.get("new_axis", 0):
        return _stack(c, list(s), _norm_axis(at["axis"], rank + 1))
    axis = _norm_axis(at["axis"], rank)
    if all(isinstance(v, np.ndarray) for v in s):
        return np.concatenate(list(s), axis=axis)
    ops = [c.opnd_of(v) for v in s]
    return ops[0] if len(ops) == 1 else c.b.concat(ops, axis)


@_reg("SplitToSequence")
def _split_to_seq(c, node, at):
    x = c.opnd(node.input[0])
    rank = len(x.shape)
    axis = _norm_axis(at.get("axis", 0), rank)
    n = x.shape[axis]
    keep = True
    if c.has(node, 1):
        sp = c.static(node.input[1], "split")
        if sp.ndim == 0:
            k = int(sp)
            sizes = [k] * (n // k) + ([n % k] if n % k else [])
        else:
            sizes = [int(v) for v in sp]
    else:
        sizes = [1] * n
        keep = bool(at.get("keepdims", 1))
    parts = c.b.split(x, sizes, axis=axis) if len(sizes) > 1 else [c.b.identity(x)]
    if not keep:
        parts = [c.b.reshape(p, list(x.shape[:axis]) + list(x.shape[axis + 1:])) for p in parts]
    return _Seq(parts)


def _maxpool_with_indices(c, node, at, x):
    """MaxPool and its Indices: the windows gathered with static indices,
    reduceMax and argMax over each, the argMax mapped to ONNX's flat index."""
    n, ch, h, w = x.shape
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, [h, w], kernel, strides, dil)
    ceil_mode = bool(at.get("ceil_mode", 0))
    out = []
    for i, size in enumerate((h, w)):
        span = size + pb[i] + pe[i] - ((kernel[i] - 1) * dil[i] + 1)
        o = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (o - 1) * strides[i] >= size + pb[i]:
            o -= 1
        out.append(o)
    oh, ow = out
    # positions of every window element, in padded coordinates
    hp = max(h + pb[0] + pe[0], (oh - 1) * strides[0] + (kernel[0] - 1) * dil[0] + 1)
    wp = max(w + pb[1] + pe[1], (ow - 1) * strides[1] + (kernel[1] - 1) * dil[1] + 1)
    ys = (np.arange(oh) * strides[0]).reshape(oh, 1, 1, 1) + \
        (np.arange(kernel[0]) * dil[0]).reshape(1, 1, kernel[0], 1)
    xs = (np.arange(ow) * strides[1]).reshape(1, ow, 1, 1) + \
        (np.arange(kernel[1]) * dil[1]).reshape(1, 1, 1, kernel[1])
    ys, xs = np.broadcast_arrays(ys, xs)                     # [oh, ow, kh, kw]
    k = kernel[0] * kernel[1]
    flat_padded = (ys * wp + xs).reshape(oh * ow * k).astype(np.int32)
    uy, ux = ys - pb[0], xs - pb[1]
    flat = np.where((uy >= 0) & (uy < h) & (ux >= 0) & (ux < w), uy * w + ux, 0)
    flat = flat.reshape(1, 1, oh, ow, k).astype(np.int64)
    dt = x.data_type
    low = -np.inf if dt in ("float32", "float16") else \
        float(np.iinfo(webnn.DATA_TYPES[dt]).min)
    xp = x
    if hp != h or wp != w:
        xp = c.b.pad(x, [0, 0, pb[0], pb[1]], [0, 0, hp - h - pb[0], wp - w - pb[1]],
                     mode="constant", value=low)
    g = c.b.gather(c.b.reshape(xp, [n, ch, hp * wp]), c.const(flat_padded), axis=2)
    g = c.b.reshape(g, [n, ch, oh, ow, k])
    values = c.b.reduce_max(g, axes=[4])
    am = c.b.arg_max(g, 4, keep_dimensions=True, output_data_type="int32")
    table = c.const(np.broadcast_to(flat, (n, ch, oh, ow, k)).copy())
    spatial = c.b.reshape(c.b.gather_elements(table, am, axis=4), [n, ch, oh, ow])
    if at.get("storage_order", 0):
        # column-major: h + w * H
        sy = np.where((uy >= 0) & (uy < h) & (ux >= 0) & (ux < w), uy + ux * h, 0)
        table = c.const(np.broadcast_to(sy.reshape(1, 1, oh, ow, k).astype(np.int64),
                                        (n, ch, oh, ow, k)).copy())
        spatial = c.b.reshape(c.b.gather_elements(table, am, axis=4), [n, ch, oh, ow])
    offset = (np.arange(n * ch, dtype=np.int64) * h * w).reshape(n, ch, 1, 1)
    return [values, c.b.add(spatial, c.const(offset))]


@_reg("MaxUnpool")
def _maxunpool(c, node, at):
    """The values scattered to their flat indices in a zero tensor."""
    x = c.opnd(node.input[0])
    ind = c.opnd(node.input[1])
    shape = list(x.shape)
    nd = len(shape) - 2
    kernel = list(at["kernel_shape"])
    strides = list(at.get("strides", [1] * nd))
    pads = list(at.get("pads", [0] * (2 * nd)))
    default = shape[:2] + [(shape[2 + i] - 1) * strides[i] + kernel[i] - pads[i] -
                           pads[i + nd] for i in range(nd)]
    total = int(np.prod(default, dtype=np.int64))
    zeros = c.const(np.zeros([total], webnn.DATA_TYPES[x.data_type]))
    size = int(np.prod(shape, dtype=np.int64))
    y = c.b.scatter_elements(zeros, c.b.reshape(ind, [size]), c.b.reshape(x, [size]), axis=0)
    y = c.b.reshape(y, default)
    if c.has(node, 2):
        # the indices address the default shape; a larger output_shape pads at the end
        out_shape = c.ints(node.input[2], "output_shape")
        extra = [int(o) - d for o, d in zip(out_shape, default)]
        if any(e < 0 for e in extra):
            raise NotSupportedError("an output_shape smaller than the unpooled shape")
        if any(extra):
            y = c.b.pad(y, [0] * len(extra), extra, mode="constant", value=0)
    return y


# ---- integer-accumulating operators, exact in float32 when bounded ---------
_F32_EXACT = 1 << 24


def _int_operand_minus_zp(c, node, i_x, i_zp, zp_shape=None):
    """(x - zero point) as float32, and a bound of its magnitude.  zp_shape:
    how a zero point per channel broadcasts against x (None: per tensor only)."""
    x = c.opnd(node.input[i_x])
    dt = x.data_type
    if dt not in ("int8", "uint8"):
        raise NotSupportedError(f"data type {dt}")
    xf = c.b.cast(x, "float32")
    if c.is_static(node.input[i_x]):
        v = c.static(node.input[i_x]).astype(np.int64)
    else:
        info = np.iinfo(webnn.DATA_TYPES[dt])
        v = np.array([info.min, info.max], np.int64)
    if c.has(node, i_zp):
        zp = c.static(node.input[i_zp], "the zero point").astype(np.int64)
        if zp.size == 1:
            z = int(zp.reshape(-1)[0])
            xf = c.b.sub(xf, c.scalar(z, "float32"))
        elif zp_shape is not None:
            z = zp.reshape(zp_shape)
            xf = c.b.sub(xf, c.const(z.astype(np.float32)))
        else:
            raise NotSupportedError("a zero point per channel")
    else:
        z = 0
    return xf, v - z


@_reg("MatMulInteger")
def _matmul_integer(c, node, at):
    a, av = _int_operand_minus_zp(c, node, 0, 2)
    b, bv = _int_operand_minus_zp(c, node, 1, 3, [-1])
    k = a.shape[-1]
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise NotSupportedError("a 1-D operand")
    if c.is_static(node.input[1]):
        bound = int(np.abs(av).max()) * int(np.abs(bv).sum(axis=-2).max())
    else:
        bound = int(np.abs(av).max()) * int(np.abs(bv).max()) * k
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers "
                                f"(WebNN's matmul is float only)")
    return c.b.cast(c.b.matmul(a, b), "int32")


@_reg("ConvInteger")
def _conv_integer(c, node, at):
    x, xv = _int_operand_minus_zp(c, node, 0, 2)
    wshape = list(c.vals[node.input[1]].shape)
    w, wv = _int_operand_minus_zp(c, node, 1, 3, [wshape[0]] + [1] * (len(wshape) - 1))
    if len(x.shape) != 4:
        raise NotSupportedError("a ConvInteger other than 2-D")
    if c.is_static(node.input[1]):
        per_out = np.abs(wv).reshape(wv.shape[0], -1).sum(axis=1)
        bound = int(np.abs(xv).max()) * int(per_out.max())
    else:
        bound = int(np.abs(xv).max()) * int(np.abs(wv).max()) * int(np.prod(w.shape[1:]))
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers "
                                f"(WebNN's conv2d is float only)")
    kernel = list(w.shape[2:])
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    # ONNX pads x with its zero point: 0 after the subtraction, WebNN's padding
    y = c.b.conv2d(x, w, padding=_webnn_padding(pb, pe), strides=strides, dilations=dil,
                   groups=int(at.get("group", 1)))
    return c.b.cast(y, "int32")


def _requantize(c, acc, multiplier, zp_name, out_dt):
    """round(acc * multiplier) + zero point, saturated, as the output type."""
    y = c.b.mul(acc, multiplier)
    y = c.b.round_even(y)
    if zp_name:
        zp = c.static(zp_name, "the output zero point").astype(np.float32)
        y = c.b.add(y, c.const(zp.reshape(-1)[0] if zp.size == 1 else zp))
    info = np.iinfo(webnn.DATA_TYPES[out_dt])
    y = c.b.clamp(y, min_value=float(info.min), max_value=float(info.max))
    return c.b.cast(y, out_dt)


def _scale(c, name):
    return c.static(name, "a scale").astype(np.float32)


@_reg("QLinearMatMul")
def _qlinear_matmul(c, node, at):
    a, av = _int_operand_minus_zp(c, node, 0, 2)
    b, bv = _int_operand_minus_zp(c, node, 3, 5, [-1])
    if c.is_static(node.input[3]):
        bound = int(np.abs(av).max()) * int(np.abs(bv).sum(axis=-2).max())
    else:
        bound = int(np.abs(av).max()) * int(np.abs(bv).max()) * a.shape[-1]
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers")
    acc = c.b.matmul(a, b)
    mult = _scale(c, node.input[1]) * _scale(c, node.input[4]) / _scale(c, node.input[6])
    out_dt = c.dtype(node.input[7]) if c.has(node, 7) else c.dtype(node.input[0])
    return _requantize(c, acc, c.const(mult.reshape(-1)[0] if mult.size == 1 else mult),
                       node.input[7] if c.has(node, 7) else None, out_dt)


@_reg("QLinearConv")
def _qlinear_conv(c, node, at):
    x, xv = _int_operand_minus_zp(c, node, 0, 2)
    wshape = list(c.vals[node.input[3]].shape)
    w, wv = _int_operand_minus_zp(c, node, 3, 5, [wshape[0]] + [1] * (len(wshape) - 1))
    if len(x.shape) != 4:
        raise NotSupportedError("a QLinearConv other than 2-D")
    if c.is_static(node.input[3]):
        per_out = np.abs(wv).reshape(wv.shape[0], -1).sum(axis=1)
        bound = int(np.abs(xv).max()) * int(per_out.max())
    else:
        bound = int(np.abs(xv).max()) * int(np.abs(wv).max()) * int(np.prod(wshape[1:]))
    bias = None
    if c.has(node, 8):
        bv_ = c.static(node.input[8], "the bias").astype(np.int64)
        bound += int(np.abs(bv_).max())
        bias = c.const(bv_.astype(np.float32))
    if bound >= _F32_EXACT:
        raise NotSupportedError(f"the sums may reach {bound}, beyond float32's exact integers")
    kernel = wshape[2:]
    strides = list(at.get("strides", [1, 1]))
    dil = list(at.get("dilations", [1, 1]))
    pb, pe = _spatial_pads(at, list(x.shape[2:]), kernel, strides, dil)
    opts = {"padding": _webnn_padding(pb, pe), "strides": strides, "dilations": dil,
            "groups": int(at.get("group", 1))}
    if bias is not None:
        opts["bias"] = bias
    acc = c.b.conv2d(x, w, **opts)
    ws = _scale(c, node.input[4])
    mult = _scale(c, node.input[1]) * ws / _scale(c, node.input[6])
    m = c.const(mult.reshape(1, -1, 1, 1) if mult.size > 1 else mult.reshape(-1)[0])
    out_dt = c.dtype(node.input[7]) if c.has(node, 7) else c.dtype(node.input[0])
    return _requantize(c, acc, m, node.input[7] if c.has(node, 7) else None, out_dt)


@_reg("TopK")
def _topk(c, node, at):
    """Top-k by ranks: each element's rank is the count of elements before it
    in the order (pairwise comparisons, ties by lower index, exact); output
    p is the element of rank p (argMax of rank == p)."""
    x = c.opnd(node.input[0])
    rank_ = len(x.shape)
    axis = _norm_axis(at.get("axis", -1), rank_)
    if c.opset < 10:
        k = int(at["k"])
    else:
        k = c.ints(node.input[1], "k")[0]
    n = x.shape[axis]
    if not 0 < k <= n:
        raise NotSupportedError(f"k = {k} for an axis of {n}")
    if n > 4096:
        raise NotSupportedError(f"an axis of {n} (pairwise ranks up to 4096)")
    largest = bool(at.get("largest", 1))
    perm = [i for i in range(rank_) if i != axis] + [axis]
    xa = c.b.transpose(x, permutation=perm) if axis != rank_ - 1 else x
    lead = list(xa.shape[:-1])
    a = c.b.reshape(xa, lead + [n, 1])
    b = c.b.reshape(xa, lead + [1, n])
    before = c.b.greater(b, a) if largest else c.b.lesser(b, a)      # [.., i, j]: j before i
    lower = c.const((np.arange(n).reshape(1, n) < np.arange(n).reshape(n, 1)).astype(np.uint8))
    tie = c.b.logical_and(c.b.equal(b, a), lower)
    count = c.b.add(c.b.cast(before, "int32"), c.b.cast(tie, "int32"))
    ranks = c.b.reduce_sum(count, axes=[len(lead) + 1])                # [.., n]
    iota = c.const(np.arange(k, dtype=np.int32).reshape(k, 1))
    hit = c.b.equal(c.b.reshape(ranks, lead + [1, n]), iota)           # [.., k, n]
    idx = c.b.arg_max(hit, len(lead) + 1, output_data_type="int64")    # [.., k]
    vals = c.b.gather_elements(xa, idx, axis=len(lead))
    if axis != rank_ - 1:
        inv = [0] * rank_
        for i, p_ in enumerate(perm):
            inv[p_] = i
        vals = c.b.transpose(vals, permutation=inv)
        idx = c.b.transpose(idx, permutation=inv)
    return [vals, idx]
