"""Reading an untrusted ONNX model (issue 31): its bytes from a path, bytes or
a ModelProto, its external data from its own folder only, then the checks:
what onnx.checker cannot check or not in bounded time (_guard), and the whole
checker (full check) on a copy without the weights."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple, Union

import onnx

from . import _guard, _weights

#: the main graph's initializers as arrays (_weights.Weights), or None
Weights = Optional[_weights.Weights]


def as_proto(model: Any, base_dir: Optional[Union[str, "os.PathLike[str]"]],
             strip: bool = False) -> Tuple[onnx.ModelProto, Weights]:
    """(the ModelProto, its weights) -- the external data read from the
    model's own folder (a path's, or base_dir) with onnx's guards
    (_guard.resolve_external); weights: the main graph's initializers as
    arrays that need no copy (_weights.Weights) or None.  With `strip`, a
    path's large plain initializers are read straight from the file into the
    arrays and left out of the ModelProto (their TensorProtos keep name, type
    and dims but no data: read them through the Weights only)."""
    if base_dir is not None:
        base_dir = os.fspath(base_dir)
    if isinstance(model, onnx.ModelProto):
        return _guard.resolve_external(model, base_dir, copy=True), None
    if isinstance(model, (bytes, bytearray, memoryview)):
        buf = bytes(model)
        try:
            proto = onnx.ModelProto()
            proto.ParseFromString(buf)
        except Exception as e:  # protobuf's DecodeError
            raise TypeError(f"load: the bytes are not an ONNX model: {e}") from None
        return _guard.resolve_external(proto, base_dir, copy=False), _weights_of(proto, buf)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        try:
            with open(path, "rb") as f:
                found = _weights.scan(f.fileno(), os.fstat(f.fileno()).st_size) \
                    if strip else None
                if found is not None:
                    skeleton, stripped = found
                    arrays = _weights.read_stripped(f.fileno(), stripped)
                else:
                    buf = f.read()
            proto = onnx.ModelProto()
            proto.ParseFromString(skeleton if found is not None else buf)
        except OSError as e:
            raise TypeError(f"load: cannot read {path!r}: {e}") from None
        except Exception as e:  # protobuf's DecodeError
            raise TypeError(f"load: {path!r} is not an ONNX model: {e}") from None
        folder = base_dir if base_dir is not None else \
            os.path.dirname(os.path.abspath(path))
        weights = _weights.Weights(arrays) if found is not None else _weights_of(proto, buf)
        return _guard.resolve_external(proto, folder, copy=False), weights
    raise TypeError(f"load: model must be a path, bytes or an onnx.ModelProto, "
                    f"got {type(model).__name__}")


def _weights_of(proto: onnx.ModelProto, buf: bytes) -> Weights:
    """The raw initializers' offsets in buf, those stored outside the file
    left out (read by resolve_external instead)."""
    offsets = _weights.raw_offsets(buf)
    for t in proto.graph.initializer:
        if t.name in offsets and (t.data_location == onnx.TensorProto.EXTERNAL or
                                  len(t.external_data)):
            del offsets[t.name]
    return _weights.Weights(buf=buf, offsets=offsets) if offsets else None


def _untyped(vo: onnx.ValueInfoProto) -> bool:
    kind = vo.type.WhichOneof("value")
    if kind is None:
        return True
    if kind == "tensor_type":
        return not vo.type.tensor_type.elem_type or not vo.type.tensor_type.HasField("shape")
    return False


def _typed_outputs(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The model for the checker, which requires graph outputs with a type and
    a shape (ONNX Runtime does without): those lacking one typed by shape
    inference (a copy)."""
    if not any(_untyped(vo) for vo in proto.graph.output):
        return proto
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    except Exception as e:
        raise TypeError(f"load: the model is not valid ONNX: {e}") from None
    # what inference cannot type (a Loop's outputs, some local functions'):
    # left out of the checker's copy only, every node is still checked
    keep = [vo for vo in inferred.graph.output if not _untyped(vo)]
    del inferred.graph.output[:]
    inferred.graph.output.extend(keep)
    return inferred


def check(proto: onnx.ModelProto, source: Any, budget: _guard.ImportBudget) -> None:
    """What onnx.checker cannot check, or not in bounded time (_guard: UTF-8
    names, the opset range, recursive or deep local functions, the nodes
    after inlining and unrolling: its shape inference inlines every call),
    then the whole onnx.checker (full check: shape inference in strict mode).
    An invalid model is a TypeError."""
    _guard.check_names(proto)
    _guard.check_opset(proto)
    _guard.check_functions(proto)
    n, where = _guard.expanded_nodes(proto, budget.max_nodes)
    if where is not None:
        raise MemoryError(f"load: {where}: the model expands to at least {n} nodes after "
                          f"inlining its functions and unrolling its loops, over the budget "
                          f"of {budget.max_nodes} nodes (load(..., budget=webnn.onnx."
                          f"ImportBudget(max_nodes=...)) raises it)")
    try:
        onnx.checker.check_model(_typed_outputs(_guard.skeleton(proto)), full_check=True)
    except RecursionError:
        raise TypeError("load: the model nests too deeply to be checked") from None
    except (MemoryError, TypeError):
        raise
    except Exception as e:   # ValidationError, InferenceError, ValueError (a bad data type)
        raise TypeError(f"load: the model is not valid ONNX: {' '.join(str(e).split())}") \
            from None
