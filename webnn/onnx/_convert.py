"""ONNX import's machinery: _Converter walks an onnx.ModelProto's nodes and
builds the MLGraph (load() and OnnxModel: _import.py).  Each operator's
conversion is in the family modules of _ops/, registered by _reg into the
one table _OPS (this module imports them at its end).

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

import numpy as np
import onnx
from onnx import TensorProto, helper

import webnn
from webnn import NotSupportedError

from . import _guard, _patterns
from ._guard import ImportBudget, InvalidModel


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
        self.keep_dq = set()    # DequantizeLinear outputs not folded (_patterns)
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
        patterns = _patterns.Patterns(g, inits)
        self.keep_dq = patterns.keep_dq
        for i, node in enumerate(g.node):
            if patterns.owns(i):
                continue        # converted with its pattern's last node
            self.node = node
            if i in patterns.gelus:
                self.convert_gelu(g, i, *patterns.gelus[i])
                continue
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
        from ._import import OnnxModel   # (the entry module imports this one)
        return OnnxModel(self.ctx, graph, inputs, outputs, gout, const_out, self.proto)

    # ---- nodes ------------------------------------------------------------
    def convert_gelu(self, g, last, x, indices):
        """The nodes `indices` of graph g that compute gelu(x) (_patterns),
        ending at node `last`: one gelu where x is a float tensor the graph
        computes, else each node as it is."""
        v = self.vals.get(x)
        if v is not None and not self.is_static(x) and not isinstance(v, (_Seq, _Fill)) and \
                self.dtype(x) in ("float32", "float16") and len(self.shape(x)) >= 1:
            node = g.node[last]
            gelu = helper.make_node("Gelu", [x], [node.output[0]], name=node.name)
            self.node = gelu
            self.convert_node(gelu, last)
            return
        for j in indices:
            self.node = g.node[j]
            self.convert_node(g.node[j], j)

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
            if op == "DequantizeLinear" and node.output and node.output[0] in self.keep_dq:
                statics = False   # a quantized region's weights stay integer (_patterns)
            fold = statics and op not in _NO_FOLD and op not in _SEQ_OPS and not any(
                a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
                for a in node.attribute)
            if fold:
                # onnx.reference evaluates some operators element by element
                # in Python (a 256 x 256 GridSample: 4 s): a large one runs
                # in the graph instead where WebNN has it, else is refused
                t = _guard.fold_seconds(node, [self.vals[n] if n else None for n in node.input])
                if t > _guard.FOLD_SECONDS:
                    if op not in _OPS:
                        raise NotSupportedError(
                            f"its inputs are constants, and folding it at import would take "
                            f"onnx.reference about {t:.3g} s (over {_guard.FOLD_SECONDS} s: it "
                            f"evaluates {op} element by element)")
                    fold = False
            if fold:
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
# Operator conversions: fn(conv, node, attrs) -> output value(s), registered
# with @_reg(*op_types) by the family modules of _ops/.

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


def _fold_image_decoder(node, encoded):
    """ImageDecoder with Pillow, its formats limited to the operator's
    (onnx.reference lets Pillow try every plugin it has), as the operator
    defines the output: [H, W, 3] RGB or BGR, [H, W, 1] Grayscale, uint8
    (onnx.reference returns a grayscale image's [H, W] for RGB)."""
    fmt = _attrs(node).get("pixel_format", b"RGB")
    fmt = fmt.decode("utf-8", "replace") if isinstance(fmt, bytes) else str(fmt)
    if fmt not in ("RGB", "BGR", "Grayscale"):
        raise NotSupportedError(f"pixel_format {fmt!r} is not RGB, BGR or Grayscale")
    img = _guard.open_image(encoded)
    try:
        a = np.asarray(img.convert("L" if fmt == "Grayscale" else "RGB"), np.uint8)
    except MemoryError:
        raise
    except Exception as e:  # the decoders' own errors, on the model's bytes
        raise NotSupportedError(f"decoding its image failed: {type(e).__name__}: {e}") from None
    return a[:, :, None] if fmt == "Grayscale" else a[:, :, ::-1] if fmt == "BGR" else a


#: Folded here rather than by onnx.reference.
_NATIVE_FOLD = {"GatherElements": _fold_gather_elements, "ImageDecoder": _fold_image_decoder}


#: Folded with onnx.reference at this opset when the model's is older.
_FOLD_AT = {"DequantizeLinear": 19, "QuantizeLinear": 19}


# (StringNormalizer: onnx.reference's calls locale.setlocale(LC_ALL, the
# node's locale) -- folding it changed the whole process's locale; unfolded,
# it is refused as a string operator)
_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
            "Multinomial", "Bernoulli", "StringNormalizer"}


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


#: The sequence operators (_ops/sequence.py): never folded.
_SEQ_OPS = {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceAt",
            "SequenceErase", "SequenceLength", "ConcatFromSequence", "SplitToSequence"}


# The family modules fill _OPS (they import the names above from this module).
from . import _ops  # noqa: E402,F401
