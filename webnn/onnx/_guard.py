"""Guards of the ONNX import against untrusted models (issue 31).

An .onnx file from a hub is input from a stranger, as ONNX Runtime treats it:
  * external data is read only from the model's own folder (onnx's guards:
    no absolute path, no '..', no symlink leaving the folder, offsets and
    lengths within the file), wherever the tensor sits (initializers,
    Constant values, subgraphs, local functions); a model given as bytes or
    a ModelProto has no folder, so its external tensors are refused unless
    the caller names one (base_dir=);
  * the whole onnx.checker runs (full_check), and the importer checks what it
    cannot: names that are not UTF-8, the opset range, the nesting of local
    functions;
  * one import budget (ImportBudget) bounds the nodes made by inlining and
    unrolling and the bytes of constants made at import, checked before the
    work or the allocation, the error naming the node and the limit."""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

import numpy as np
import onnx
from onnx import TensorProto, external_data_helper, helper

import webnn

#: Local functions calling each other deeper than this are refused (their
#: inlining recurses once per level).
MAX_FUNCTION_DEPTH = 64


class InvalidModel(TypeError):
    """A node the model gives wrong (a malformed tensor, an attribute that is
    not UTF-8, an impossible size): re-raised as a TypeError naming the node."""


class ImportBudget:
    """Limits of one import: `max_nodes` nodes converted after inlining local
    functions and function bodies and unrolling Loop / Scan, and
    `max_const_bytes` bytes of constants made at import (folded values,
    interpolation and DFT matrices, one-hot ramps ...).  Exceeding one is a
    MemoryError naming the node and the limit; pass a larger budget to
    load(budget=ImportBudget(...)) for a model that needs it."""

    def __init__(self, max_nodes: int = 1_000_000, max_const_bytes: int = 4 << 30) -> None:
        if int(max_nodes) <= 0 or int(max_const_bytes) <= 0:
            raise TypeError("ImportBudget: max_nodes and max_const_bytes must be positive")
        self.max_nodes = int(max_nodes)
        self.max_const_bytes = int(max_const_bytes)
        self.nodes = 0
        self.const_bytes = 0

    def __repr__(self) -> str:
        return (f"ImportBudget(max_nodes={self.max_nodes}, "
                f"max_const_bytes={self.max_const_bytes})")

    def add_nodes(self, n: int, where: str) -> None:
        """Reserve n more nodes (before converting them)."""
        if self.nodes + n > self.max_nodes:
            raise MemoryError(
                f"{where}: the import would convert {self.nodes + n} nodes after inlining "
                f"and unrolling, over the budget of {self.max_nodes} "
                f"(load(..., budget=webnn.onnx.ImportBudget(max_nodes=...)) raises it)")
        self.nodes += n

    def check_nodes(self, n: int, where: str, what: str) -> None:
        """Refuse, before doing it, work that would convert n more nodes."""
        if self.nodes + n > self.max_nodes:
            raise MemoryError(
                f"{where}: {what} would convert {n} more nodes, over the budget of "
                f"{self.max_nodes} nodes after inlining and unrolling "
                f"(load(..., budget=webnn.onnx.ImportBudget(max_nodes=...)) raises it)")

    def add_bytes(self, n: int, where: str, what: str = "a constant") -> None:
        """Reserve n bytes of constants made at import (before allocating them)."""
        if n < 0 or self.const_bytes + n > self.max_const_bytes:
            raise MemoryError(
                f"{where}: {what} of {n} bytes would bring the constants made at import "
                f"to {self.const_bytes + n} bytes, over the budget of {self.max_const_bytes} "
                f"(load(..., budget=webnn.onnx.ImportBudget(max_const_bytes=...)) raises it)")
        self.const_bytes += n


def nbytes_of(shape: Iterable[Any], itemsize: int = 8) -> int:
    """Bytes of an array of `shape` (Python ints: no overflow)."""
    n = itemsize
    for d in shape:
        n *= max(int(d), 0)
    return n


# ---- every tensor of a model ------------------------------------------------
def _graph_tensors(g: onnx.GraphProto, where: str) -> Iterator[Tuple[str, TensorProto]]:
    for t in g.initializer:
        yield f"{where}initializer {t.name!r}", t
    for s in g.sparse_initializer:
        yield f"{where}sparse initializer {s.values.name!r}", s.values
        yield f"{where}sparse initializer {s.values.name!r} (indices)", s.indices
    yield from _node_tensors(g.node, where)


def _node_tensors(nodes: Iterable[onnx.NodeProto], where: str) -> Iterator[Tuple[str, TensorProto]]:
    for i, n in enumerate(nodes):
        here = f"{where}node {n.name or '#' + str(i)!r} ({n.op_type})"
        for a in n.attribute:
            if a.HasField("t"):
                yield f"{here} attribute {a.name!r}", a.t
            for t in a.tensors:
                yield f"{here} attribute {a.name!r}", t
            if a.HasField("sparse_tensor"):
                yield f"{here} attribute {a.name!r}", a.sparse_tensor.values
                yield f"{here} attribute {a.name!r} (indices)", a.sparse_tensor.indices
            for st in a.sparse_tensors:
                yield f"{here} attribute {a.name!r}", st.values
                yield f"{here} attribute {a.name!r} (indices)", st.indices
            if a.HasField("g"):
                yield from _graph_tensors(a.g, f"{here} subgraph {a.name!r}: ")
            for sub in a.graphs:
                yield from _graph_tensors(sub, f"{here} subgraph {a.name!r}: ")


def all_tensors(proto: onnx.ModelProto) -> Iterator[Tuple[str, TensorProto]]:
    """(where, tensor) for every TensorProto of the model: initializers,
    attribute tensors, subgraphs, local functions."""
    yield from _graph_tensors(proto.graph, "")
    for f in proto.functions:
        yield from _node_tensors(f.node, f"function {f.name!r}: ")


def _is_external(t: TensorProto) -> bool:
    return t.data_location == TensorProto.EXTERNAL or len(t.external_data) > 0


def _check_location(where: str, t: TensorProto, base_dir: str) -> None:
    info = {e.key: e.value for e in t.external_data}
    loc = info.get("location", "")
    parts = loc.replace("\\", "/").split("/")
    if not loc or os.path.isabs(loc) or loc.startswith(("/", "\\")) or ".." in parts or \
            (len(loc) > 1 and loc[1] == ":"):
        raise TypeError(f"load: {where} (tensor {t.name!r}): external data location {loc!r} "
                        f"is not a path inside the model's folder")
    base = os.path.realpath(base_dir)
    full = os.path.realpath(os.path.join(base, loc))
    if os.path.commonpath([base, full]) != base:
        raise TypeError(f"load: {where} (tensor {t.name!r}): external data {loc!r} leaves "
                        f"the model's folder (a symbolic link?)")


def resolve_external(proto: onnx.ModelProto, base_dir: Optional[str], copy: bool) -> onnx.ModelProto:
    """Every external tensor of the model read from `base_dir` with onnx's
    guards (the proto copied first when `copy`), or a TypeError naming the
    first one when there is no folder."""
    ext = [(w, t) for w, t in all_tensors(proto) if _is_external(t)]
    if not ext:
        return proto
    if base_dir is None:
        w, t = ext[0]
        raise TypeError(f"load: {w} (tensor {t.name!r}) keeps its data in an external file, "
                        f"but a model given as bytes or a ModelProto has no folder to read it "
                        f"from: load it from its path, or pass base_dir=")
    if copy:
        p = onnx.ModelProto()
        p.CopyFrom(proto)
        proto = p
        ext = [(w, t) for w, t in all_tensors(proto) if _is_external(t)]
    for w, t in ext:
        _check_location(w, t, base_dir)
        try:
            external_data_helper.load_external_data_for_tensor(t, base_dir)
        except (OSError, ValueError, onnx.checker.ValidationError) as e:
            raise TypeError(f"load: {w} (tensor {t.name!r}): its external data cannot be "
                            f"read: {e}") from None
    return proto


# ---- names and structure ------------------------------------------------------
def _not_str(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return next((x for x in map(_not_str, v) if x is not None), None)
    return None if isinstance(v, str) else v


def _utf8(where: str, getter: Callable[[], Any]) -> None:
    """protobuf gives a proto2 string field that is not UTF-8 as bytes (upb)
    or raises UnicodeDecodeError (the other implementations)."""
    try:
        bad = _not_str(getter())
    except UnicodeDecodeError:
        bad = b"?"
    if bad is not None:
        raise TypeError(f"load: {where} is not valid UTF-8 ({bytes(bad)[:40]!r})")


def _check_nodes(nodes: Iterable[onnx.NodeProto], where: str) -> None:
    for i, n in enumerate(nodes):
        here = f"{where}node #{i}"
        _utf8(f"{here}: its name", lambda: n.name)
        _utf8(f"{here}: its op type", lambda: n.op_type)
        _utf8(f"{here}: its domain", lambda: n.domain)
        here = f"{where}node {n.name or '#' + str(i)!r} ({n.op_type})"
        _utf8(f"{here}: an input name", lambda: list(n.input))
        _utf8(f"{here}: an output name", lambda: list(n.output))
        for k, a in enumerate(n.attribute):
            _utf8(f"{here}: attribute #{k}'s name", lambda: (a.name, a.ref_attr_name))
            if a.HasField("g"):
                _check_graph(a.g, f"{here} subgraph {a.name!r}: ")
            for sub in a.graphs:
                _check_graph(sub, f"{here} subgraph {a.name!r}: ")


def _tensor_types(tp: onnx.TypeProto) -> Iterator[Any]:
    """The tensor types in a type, sequences', optionals' and maps' included."""
    if tp.HasField("tensor_type"):
        yield tp.tensor_type
    elif tp.HasField("sparse_tensor_type"):
        yield tp.sparse_tensor_type
    elif tp.HasField("sequence_type"):
        yield from _tensor_types(tp.sequence_type.elem_type)
    elif tp.HasField("optional_type"):
        yield from _tensor_types(tp.optional_type.elem_type)
    elif tp.HasField("map_type"):
        yield from _tensor_types(tp.map_type.value_type)


def _check_value_infos(vis: Iterable[onnx.ValueInfoProto], kind: str, where: str) -> None:
    """Names UTF-8, and no negative dimension: onnx's shape inference (run by
    the checker) aborts the process on one (a C++ assertion in Slice's)."""
    for i, vi in enumerate(vis):
        _utf8(f"{where}{kind} #{i}'s name", lambda: vi.name)
        for tt in _tensor_types(vi.type):
            for d in tt.shape.dim:
                _utf8(f"{where}{kind} {vi.name!r}: a dim_param", lambda: d.dim_param)
                if d.HasField("dim_value") and d.dim_value < 0:
                    raise TypeError(f"load: {where}{kind} {vi.name!r} has the negative "
                                    f"dimension {d.dim_value}")


def _check_graph(g: onnx.GraphProto, where: str) -> None:
    _utf8(f"{where}the graph's name", lambda: g.name)
    for kind, vis in (("input", g.input), ("output", g.output), ("value_info", g.value_info)):
        _check_value_infos(vis, kind, where)
    for i, t in enumerate(g.initializer):
        _utf8(f"{where}initializer #{i}'s name", lambda: t.name)
        if any(d < 0 for d in t.dims):
            raise TypeError(f"load: {where}initializer {t.name!r} has a negative dimension: "
                            f"{list(t.dims)}")
    _check_nodes(g.node, where)


def check_names(proto: onnx.ModelProto) -> None:
    """Every name the importer reads is UTF-8 (protobuf leaves proto2 strings
    unchecked; reading one is a bare UnicodeDecodeError), and no declared
    dimension is negative (onnx's shape inference aborts on one)."""
    for i, imp in enumerate(proto.opset_import):
        _utf8(f"opset import #{i}'s domain", lambda: imp.domain)
    _check_graph(proto.graph, "")
    for i, f in enumerate(proto.functions):
        _utf8(f"function #{i}'s name", lambda: (f.name, f.domain, list(f.input),
                                                list(f.output), list(f.attribute)))
        _check_nodes(f.node, f"function {f.name!r}: ")
        _check_value_infos(getattr(f, "value_info", ()), "value_info", f"function {f.name!r}: ")


def check_opset(proto: onnx.ModelProto) -> int:
    """The standard domain's opset, within 1 .. the newest onnx knows (the
    importer keeps the old semantics: legacy broadcast, Softmax's 2-D
    coercion, ...)."""
    newest = onnx.defs.onnx_opset_version()
    found = None
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            found = int(imp.version)
    if found is None:
        return 1
    if not 1 <= found <= newest:
        raise webnn.NotSupportedError(f"load: the model's opset is {found}: supported are the "
                                  f"opsets 1 to {newest} of the standard ONNX domain")
    return found


def check_functions(proto: onnx.ModelProto) -> None:
    """Local functions must not call themselves (directly or not) nor nest
    deeper than MAX_FUNCTION_DEPTH (iterative: any depth of hostile chain)."""
    fns = {(f.domain, f.name): f for f in proto.functions}

    def calls(nodes: Iterable[onnx.NodeProto]) -> Set[Tuple[str, str]]:
        out = set()
        todo = list(nodes)
        while todo:
            n = todo.pop()
            if (n.domain, n.op_type) in fns:
                out.add((n.domain, n.op_type))
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    todo.extend(g.node)
        return out

    callees = {k: calls(f.node) for k, f in fns.items()}
    height: Dict[Tuple[str, str], int] = {}   # function -> the depth of its call tree (1: calls none)
    for root in fns:
        if root in height:
            continue
        stack, on_path = [(root, iter(callees[root]))], {root}
        while stack:
            k, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_path.discard(k)
                height[k] = 1 + max((height[c] for c in callees[k]), default=0)
                if height[k] > MAX_FUNCTION_DEPTH:
                    raise webnn.NotSupportedError(
                        f"load: local function {k[1]!r} nests calls {height[k]} deep, "
                        f"deeper than {MAX_FUNCTION_DEPTH}")
                continue
            if nxt in on_path:
                raise TypeError(f"load: local function {nxt[1]!r} calls itself (through "
                                f"{' -> '.join(repr(s[0][1]) for s in stack)})")
            if nxt not in height:
                if len(stack) >= MAX_FUNCTION_DEPTH:
                    raise webnn.NotSupportedError(
                        f"load: local functions nest deeper than {MAX_FUNCTION_DEPTH} "
                        f"(from {root[1]!r})")
                on_path.add(nxt)
                stack.append((nxt, iter(callees[nxt])))


def expanded_nodes(proto: onnx.ModelProto, cap: int, nodes: Optional[Iterable[onnx.NodeProto]] = None,
                   known: Optional[Dict[str, int]] = None) -> Tuple[int, Optional[str]]:
    """An estimate from below of the nodes the import converts: local
    functions inlined (each call counts its body), Loop and Scan bodies times
    their trip counts where those are constants of the model.  Returns
    (count, the node that brings it over `cap`, or None); stops there."""
    fns = {(f.domain, f.name): f for f in proto.functions}
    consts = {}
    for t in proto.graph.initializer:
        if t.data_type == TensorProto.INT64 and not _is_external(t) and len(t.dims) <= 1:
            try:
                consts[t.name] = int(onnx.numpy_helper.to_array(t).reshape(-1)[0])
            except Exception:
                pass
    consts.update(known or {})
    memo: Dict[Tuple[str, str], Optional[int]] = {}

    def const_nodes(nodes: Iterable[onnx.NodeProto]) -> None:
        for n in nodes:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
                for a in n.attribute:
                    if a.name == "value" and a.t.data_type == TensorProto.INT64 and \
                            not _is_external(a.t):
                        try:
                            consts[n.output[0]] = int(
                                onnx.numpy_helper.to_array(a.t).reshape(-1)[0])
                        except Exception:
                            pass
                    elif a.name == "value_int":
                        consts[n.output[0]] = int(a.i)

    def count(nodes: Iterable[onnx.NodeProto]) -> int:
        const_nodes(nodes)
        total = 0
        for n in nodes:
            k = 1
            key = (n.domain, n.op_type)
            if key in fns:
                if key not in memo:
                    memo[key] = None
                    memo[key] = count(fns[key].node)
                k = memo[key] or 1
            subs = []
            for a in n.attribute:
                if a.HasField("g"):
                    subs.append(a.g)
                subs.extend(a.graphs)
            if subs:
                body = sum(count(g.node) for g in subs)
                trips = 1
                if n.op_type == "Loop" and n.input and n.input[0] in consts:
                    trips = max(1, min(consts[n.input[0]], 1 << 40))
                k += body * trips
            total += k
            if total > cap:
                return cap + 1
        return total

    total = 0
    for i, n in enumerate(proto.graph.node if nodes is None else nodes):
        total += count([n])
        if total > cap:
            return total, f"node {n.name or '#' + str(i)!r} ({n.op_type})"
    return total, None


def to_array(t: TensorProto, where: str) -> np.ndarray:
    """numpy_helper.to_array, its failures (data that does not fill the dims,
    an unknown data type ...) a TypeError naming the tensor.  Never reads
    external data: resolve_external has read it all, from the model's folder."""
    if _is_external(t):
        raise InvalidModel(f"{where}: tensor {t.name!r} keeps its data in an external file "
                        f"that the model's folder did not provide")
    try:
        return onnx.numpy_helper.to_array(t)
    except MemoryError:
        raise MemoryError(f"{where}: tensor {t.name!r} does not fit in memory") from None
    except Exception as e:
        raise InvalidModel(f"{where}: tensor {t.name!r} is malformed: {e}") from None


def _copy_fields(src: Any, dst: Any, but: str) -> None:
    """Every field of the message src set in dst, but the one named `but`."""
    for field, value in src.ListFields():
        if field.name == but:
            continue
        if field.is_repeated:
            getattr(dst, field.name).extend(value)
        elif field.message_type is not None:
            getattr(dst, field.name).CopyFrom(value)
        else:
            setattr(dst, field.name, value)


def skeleton(proto: onnx.ModelProto, big: int = 1 << 12) -> onnx.ModelProto:
    """The model for onnx.checker without copying its weights: the main
    graph's initializers over `big` bytes become graph inputs of the same
    type and shape (what shape inference reads of them), so that checking a
    model of hundreds of MB does not serialize them (ByteSize and
    SerializeToString of a BERT-base cost 2 s).  The checker reads no weight
    values; small ones (shape inference's integers) stay; the importer checks
    each tensor's data against its dims itself (to_array).  A tensor whose
    type or dims are invalid stays, for the checker to refuse."""
    g = proto.graph
    valid = set(TensorProto.DataType.values()) - {TensorProto.UNDEFINED}
    # (sizes from the dims: a message's ByteSize walks its data)
    moved = [t for t in g.initializer if t.data_type in valid and
             all(d >= 0 for d in t.dims) and nbytes_of(t.dims, 4) > big]
    if not moved:
        return proto
    moved_names = {t.name for t in moved}
    sk = onnx.ModelProto()
    _copy_fields(proto, sk, "graph")
    sg = sk.graph
    _copy_fields(g, sg, "initializer")
    sg.initializer.extend(t for t in g.initializer if t.name not in moved_names)
    inputs = {vi.name for vi in g.input}
    for t in moved:
        if t.name not in inputs:
            sg.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    return sk


def array_bytes(v: Any) -> int:
    return int(getattr(v, "nbytes", 0) or 0) if isinstance(v, np.ndarray) else 0


__all__ = ["ImportBudget", "resolve_external", "check_names", "check_opset",
           "check_functions", "expanded_nodes", "all_tensors", "nbytes_of"]


def _first_ints(a: Any) -> List[int]:
    return [int(x) for x in np.asarray(a).reshape(-1)[:64]]


# convolutions and pools: output sizes from attributes (pads, strides,
# dilations, output_padding, output_shape) -- a Conv of constants with a pad
# of 2^31 - 1 folded into terabytes (the ONNX fuzzer, 2026-11-28)
_WINDOWED = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3, "ConvTranspose": 1,
             "MaxPool": None, "AveragePool": None, "LpPool": None, "MaxUnpool": None}


def _windowed_bytes(node: onnx.NodeProto, by_name: Dict[str, Any], first: Any) -> int:
    """From above: batch x channels x, per spatial axis, the input's extent
    plus both pads (a stride of 1 and a kernel of 1 give at most that), or
    for ConvTranspose / MaxUnpool, stride x (extent + 1) + output padding +
    dilation x kernel + pads, or the output_shape asked for."""
    wi = _WINDOWED[node.op_type]
    w = by_name.get(node.input[wi]) if wi is not None and len(node.input) > wi and \
        node.input[wi] else None
    wshape = [int(d) for d in np.asarray(w).shape] if w is not None else []
    return _windowed_elements(node, [int(d) for d in np.asarray(first).shape], wshape,
                              by_name) * 8


def _windowed_elements(node: onnx.NodeProto, shape: List[int], wshape: List[int],
                       by_name: Dict[str, Any]) -> int:
    """_windowed_bytes's count of elements, from the input's and the
    weights' shapes (by_name: the static inputs, for MaxUnpool's shape)."""
    from onnx import helper
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    r = len(shape) - 2
    if r < 0:
        return 0
    channels = shape[1]
    if node.op_type == "ConvTranspose" and len(wshape) >= 2:
        channels = wshape[1] * max(1, abs(int(attrs.get("group", 1))))
    elif wshape:
        channels = wshape[0]
    ints = lambda k: [abs(int(x)) for x in attrs.get(k, [])]  # noqa: E731
    pads, strides, dil = ints("pads"), ints("strides"), ints("dilations")
    outpad, outshape, ks = ints("output_padding"), ints("output_shape"), ints("kernel_shape")
    grows = node.op_type in ("ConvTranspose", "MaxUnpool")
    if node.op_type == "MaxUnpool" and len(node.input) > 2 and node.input[2]:
        asked = by_name.get(node.input[2])   # the output's shape, an input
        if asked is not None:
            return nbytes_of(_first_ints(np.abs(np.asarray(asked, np.int64))), 1)
    total = shape[0] * channels
    for i in range(r):
        ext = shape[2 + i] + (pads[i] if i < len(pads) else 0) + \
            (pads[r + i] if r + i < len(pads) else 0) + 1
        if grows:
            k = ks[i] if i < len(ks) else (wshape[2 + i] if len(wshape) > 2 + i else 1)
            ext = (strides[i] if i < len(strides) else 1) * (ext + 1) + \
                (outpad[i] if i < len(outpad) else 0) + \
                (dil[i] if i < len(dil) else 1) * k
            ext = max(ext, outshape[i] if i < len(outshape) else 0)
        total *= ext
    return min(total, 1 << 59)


def _elements(dims: Iterable[Any]) -> int:
    return nbytes_of(dims, 1)


def _shape_of(v: Any) -> Tuple[int, ...]:
    """The shape of a static value (an array, or the importer's stand-ins
    with a shape); () for an omitted input (None)."""
    return () if v is None else tuple(getattr(v, "shape", None) or np.asarray(v).shape)


def _einsum_elements(equation: str, shapes: List[List[int]]) -> int:
    """The elements of Einsum's output: the product of its letters' extents
    (the explicit output's, or the letters used once) times the ellipsis's
    broadcast extent; -1 for an equation it cannot read."""
    lhs, arrow, out = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        return -1
    ext: Dict[str, int] = {}
    ell: List[int] = []
    for term, shape in zip(terms, shapes):
        head, dots, tail = term.partition("...")
        if not (head + tail).isalpha() and head + tail:
            return -1
        n_ell = len(shape) - len(head) - len(tail)
        if n_ell < 0 or (n_ell and not dots):
            return -1
        e = shape[len(head):len(head) + n_ell]
        r = max(len(e), len(ell))
        ell = [max(x, y) for x, y in zip([1] * (r - len(ell)) + ell, [1] * (r - len(e)) + e)]
        for c, d in zip(head + tail, shape[:len(head)] + shape[len(head) + n_ell:]):
            ext[c] = max(ext.get(c, 1), int(d))
    if not arrow:
        used = lhs.replace("...", "").replace(",", "")
        out = "".join(c for c in sorted(set(used)) if used.count(c) == 1)
    n = 1
    for c in out.replace("...", ""):
        n *= max(ext.get(c, 1), 0)
    for d in ell:
        n *= max(d, 0)
    return n


def _pos_shape(pos: List[Any], k: int) -> List[int]:
    """The shape of input k of a node's inputs by position ([] where omitted)."""
    return [int(d) for d in _shape_of(pos[k])] if k < len(pos) else []


def _shaped_elements(op: str, pos: List[Any], attrs: Dict[str, Any]) -> int:
    """The elements of the output of ops whose size comes from their inputs'
    shapes but not as a broadcast of them (-1: not one of these); each was
    folded into its full size before the budget saw it (a MatMul of [n, 2]
    by [2, n], a Gather of many indices, Concat(a, a, ...))."""
    shape = functools.partial(_pos_shape, pos)
    if op == "Concat":
        return sum(_elements(_shape_of(v)) for v in pos)
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul", "Gemm"):
        a, b = shape(0), shape(3 if op == "QLinearMatMul" else 1)
        if op == "Gemm" and len(a) == 2 and len(b) == 2:
            return (a[1] if attrs.get("transA") else a[0]) * \
                (b[0] if attrs.get("transB") else b[1])
        rows = a[-2] if len(a) >= 2 else 1
        cols = b[-1] if len(b) >= 2 else 1
        ba, bb = a[:-2], b[:-2]
        r = max(len(ba), len(bb))
        batch = [max(x, y) for x, y in zip([1] * (r - len(ba)) + ba, [1] * (r - len(bb)) + bb)]
        return _elements(batch) * rows * cols
    if op == "Gather":
        d = shape(0)
        if not d:
            return _elements(shape(1))
        return _elements(d) // max(d[int(attrs.get("axis", 0)) % len(d)], 1) * \
            _elements(shape(1))
    if op == "GatherND":
        d, i = shape(0), shape(1)
        if not i:
            return _elements(d)
        b = int(attrs.get("batch_dims", 0))
        return _elements(i[:-1]) * _elements(d[b + i[-1]:])
    if op == "Einsum":
        eq = attrs.get("equation", b"")
        eq = eq.decode("utf-8", "replace") if isinstance(eq, bytes) else str(eq)
        return _einsum_elements(eq, [shape(k) for k in range(len(pos))])
    if op == "AffineGrid":
        size = [abs(int(x)) for x in np.asarray(pos[1]).reshape(-1)[:6]] \
            if len(pos) > 1 and isinstance(pos[1], np.ndarray) else []
        return _elements(size[:1] + size[2:]) * max(len(size) - 2, 1)
    if op == "GridSample":
        x, g = shape(0), shape(1)
        return _elements(x[:2]) * _elements(g[1:-1])
    if op in ("Resize", "Upsample") and pos and pos[0] is not None:
        # the sizes asked for, or the input's extents times the scales
        in_shape = shape(0)
        sizes = pos[3] if len(pos) > 3 and isinstance(pos[3], np.ndarray) else None
        if sizes is not None and sizes.size:
            return _elements(abs(x) for x in _first_ints(sizes))
        k = 2 if op == "Resize" and len(pos) > 2 else 1
        sc = pos[k] if len(pos) > k and isinstance(pos[k], np.ndarray) else None
        if sc is not None and sc.size == len(in_shape):
            return int(min(float(np.prod([float(d) * abs(float(x)) for d, x in zip(
                in_shape, sc.reshape(-1))], dtype=np.float64)) + 1, float(1 << 59)))
        return 0
    if op in ("RoiAlign", "MaxRoiPool"):
        x, r = shape(0), shape(1)
        if op == "RoiAlign":
            out = [abs(int(attrs.get("output_height", 1))), abs(int(attrs.get("output_width", 1)))]
        else:
            out = [abs(int(v)) for v in attrs.get("pooled_shape", [])]
        return (r[0] if r else 1) * (x[1] if len(x) > 1 else 1) * _elements(out)
    return -1


# onnx.reference's cost of folding, in ns per output element, for the
# operators it evaluates element by element in Python (fold_seconds has the
# scatters', TfIdfVectorizer's and the RNNs' per index row, update, input
# element and time step), measured on one Zen 4 core
# with onnx 1.23 (a 64 x 64 GridSample of 16 channels took 3.2 s, a
# 128 x 128 3x3 MaxPool of 8 channels 0.8 s, a 32 x 32 3x3 DeformConv of 4
# channels 27 s); the pools' costs are per kernel element, ConvTranspose's
# per filter tap, _FOLD_CONVS' per kernel element and input channel of a group
_FOLD_NS = {"GridSample": 55000, "RoiAlign": 300, "Resize": 100, "Upsample": 100,
            "MaxUnpool": 40, "MaxPool": 1300, "AveragePool": 1300, "LpPool": 1300,
            "Conv": 25, "ConvInteger": 25, "QLinearConv": 25, "ConvTranspose": 3000,
            "DeformConv": 180000}
_FOLD_POOLS = {"MaxPool", "AveragePool", "LpPool"}
_FOLD_CONVS = {"Conv", "ConvInteger", "QLinearConv", "DeformConv"}
#: the fold-time estimate over which a node is not folded (FOLD_SECONDS)
FOLD_SECONDS = 0.5


def fold_seconds(node: onnx.NodeProto, pos: List[Any]) -> float:
    """An estimate of the seconds onnx.reference takes to fold `node`, from
    its static inputs by position (arrays or stand-ins with a shape; None
    where omitted): 0 for the operators it evaluates with whole-array NumPy
    operations."""
    op = node.op_type
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    shape = functools.partial(_pos_shape, pos)

    try:
        if op in ("ScatterND", "ScatterElements"):
            idx = shape(1)
            rows = _elements(idx[:-1]) if op == "ScatterND" else _elements(idx)
            return rows * (1500 if op == "ScatterND" else 500) / 1e9
        if op == "TfIdfVectorizer":
            return _elements(shape(0)) * 2000 / 1e9
        if op in ("RNN", "GRU", "LSTM"):
            x = shape(0)
            steps = x[1 if attrs.get("layout", 0) else 0] if len(x) >= 2 else 1
            return steps * 30000 / 1e9
        if op not in _FOLD_NS:
            return 0.0
        if op in _WINDOWED:
            wi = _WINDOWED[op]
            out = _windowed_elements(node, shape(0), shape(wi) if wi is not None else [],
                                     {n: v for n, v in zip(node.input, pos)
                                      if isinstance(v, np.ndarray)})
        elif op == "DeformConv":
            x, w, off = shape(0), shape(1), shape(2)
            out = _elements(x[:1] + w[:1] + off[2:])
        else:
            out = max(_shaped_elements(op, pos, attrs), 0)
        taps = 1
        if op in _FOLD_POOLS:
            taps = _elements(abs(int(k)) for k in attrs.get("kernel_shape", []))
        elif op == "ConvTranspose":
            taps = _elements(shape(1)[2:])   # (its channels run as whole arrays)
        elif op in _FOLD_CONVS:
            taps = _elements(shape(3 if op == "QLinearConv" else 1)[1:])
        return out * taps * _FOLD_NS[op] / 1e9
    except (ValueError, TypeError, OverflowError, IndexError, ZeroDivisionError):
        return 0.0


#: ImageDecoder's formats (the ONNX operator's list, as Pillow names them):
#: any other Pillow plugin could hand the bytes to an outside program
#: (EPS to Ghostscript) or decode what the operator does not define
IMAGE_FORMATS = ("BMP", "JPEG", "JPEG2000", "TIFF", "PNG", "WEBP", "PPM")


def open_image(encoded: Any) -> Any:
    """A Pillow image of ImageDecoder's encoded bytes, its header read only
    (no pixel decoded yet), tried against IMAGE_FORMATS alone; NotSupportedError
    for anything else (or without Pillow)."""
    import io
    try:
        import PIL.Image
    except ImportError:
        raise webnn.NotSupportedError("folding ImageDecoder at import needs Pillow "
                                      "(pip install pillow)") from None
    data = np.asarray(encoded).tobytes()
    try:
        return PIL.Image.open(io.BytesIO(data), formats=IMAGE_FORMATS)
    except PIL.Image.DecompressionBombError as e:
        raise MemoryError(f"its image is over Pillow's decompression-bomb limit: {e}") from None
    except Exception as e:  # the parsers' own errors, on the model's bytes
        raise webnn.NotSupportedError(
            f"its {len(data)} encoded bytes are not an image of the formats ImageDecoder "
            f"decodes ({', '.join(IMAGE_FORMATS)}): {type(e).__name__}") from None


def fold_bytes(node: onnx.NodeProto, feeds: Dict[str, Any], ins: List[str]) -> int:
    """An estimate (from above where it matters) of the bytes that folding
    `node` on `feeds` makes, computed before folding: the ops whose output
    size is set by input values, and the broadcast of the inputs otherwise."""
    op = node.op_type
    vals = [feeds[n] for n in ins]
    by_name = dict(zip(ins, vals))
    # the inputs by position, None where omitted: `ins` names each input
    # once, and a node may read one twice (the fuzzer's Expand(s, s), a
    # shape of [2^31] expanding itself, was estimated as a broadcast of s)
    pos = [by_name.get(n) if n else None for n in node.input]
    first = pos[0] if pos else None

    def given(k: int) -> bool:
        return len(pos) >= k and all(v is not None for v in pos[:k])

    try:
        if op == "ConstantOfShape":
            return nbytes_of(_first_ints(first) if first is not None else [], 8)
        if op == "ImageDecoder" and first is not None:
            # from the header: the decoded pixels (up to 4 bytes each in
            # Pillow) and the [H, W, 3] output -- a 105 KB PNG of 6000 x
            # 6000 decoded into 108 MB before the budget saw it
            w, h = open_image(first).size
            return nbytes_of([w, h], 8)
        if op == "Expand" and given(2):
            shape = list(np.asarray(pos[0]).shape)
            target = [int(x) for x in np.asarray(pos[1]).reshape(-1)]
            r = max(len(shape), len(target))
            shape = [1] * (r - len(shape)) + shape
            target = [1] * (r - len(target)) + target
            return nbytes_of([max(a, b) for a, b in zip(shape, target)], 8)
        if op == "Tile" and given(2):
            reps = [int(x) for x in np.asarray(pos[1]).reshape(-1)]
            return nbytes_of(list(np.asarray(pos[0]).shape) + reps, 8)
        if op == "Range" and given(3):
            start, limit, delta = (float(np.asarray(v).reshape(-1)[0]) for v in pos[:3])
            if delta == 0 or not np.isfinite(start + limit + delta):
                return 0
            return 8 * max(0, int(np.ceil((limit - start) / delta)))
        if op == "OneHot" and given(2):
            depth = abs(int(np.asarray(pos[1]).reshape(-1)[0]))
            return nbytes_of(list(np.asarray(pos[0]).shape) + [depth], 8)
        if op in ("Pad", "CenterCropPad", "EyeLike", "DFT", "STFT", "MelWeightMatrix",
                  "Col2Im", "BlackmanWindow", "HannWindow", "HammingWindow"):
            # output sizes from input values: bounded by the largest input
            # times the largest integer of the (small) other inputs, squared
            # for the two-dimensional makers
            dims: List[float] = []
            for v in pos[1:]:
                if v is None:
                    continue
                a = np.asarray(v)
                if a.size and a.size <= 64 and a.dtype.kind in "iuf":
                    dims.extend(abs(float(x)) for x in a.reshape(-1) if np.isfinite(x))
            big = max([1.0] + dims)
            base = float(max((np.asarray(v).size for v in vals), default=1))
            extra = big * big if op in ("MelWeightMatrix", "DFT", "STFT", "Col2Im") else big
            return int(min((base + 1) * (extra + 1) * 8, float(1 << 62)))
        if op in _WINDOWED and first is not None:
            return _windowed_bytes(node, by_name, first)
        from onnx import helper
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (op == "Cast" and attrs.get("to") == onnx.TensorProto.STRING) or (
                op == "CastLike" and given(2) and np.asarray(pos[1]).dtype.kind in "OSU"):
            # numbers as text: onnx.reference makes 32 characters of 4 bytes
            # an element (<U32), 16 times the estimate of 8 bytes
            return nbytes_of(_shape_of(first), 128)
        n = _shaped_elements(op, pos, attrs)
        if n >= 0:
            return min(n * 8, 1 << 62)
    except (ValueError, TypeError, OverflowError, IndexError):
        return 0
    shapes = [np.asarray(v).shape for v in vals]
    try:
        out = np.broadcast_shapes(*shapes) if shapes else ()
        return nbytes_of(out, 8)
    except ValueError:
        return max((np.asarray(v).nbytes for v in vals), default=0)
