"""The Python face of WebNN (../shared/docs/python-api.md): thin classes over
the C core's handles.  This module only converts arguments and results; every
rule of the spec is checked in the core, which raises through webnn._core.

The MLGraphBuilder operator methods are generated from the core's operator
table (csrc/ops/ops.def), so adding an operator adds no code here."""
import concurrent.futures
import re
import types

import numpy as np

from . import _core
from ._errors import (AbortError, DataError, InvalidStateError,
                      NotSupportedError, OperationError, UnknownError)

_core.set_errors({
    _core.TYPE_ERROR: TypeError,
    _core.INVALID_STATE: InvalidStateError,
    _core.DATA_ERROR: DataError,
    _core.NOT_SUPPORTED: NotSupportedError,
    _core.OPERATION_ERROR: OperationError,
    _core.UNKNOWN_ERROR: UnknownError,
    _core.ABORT_ERROR: AbortError,
})

MLOperand = _core.MLOperand

DATA_TYPES = {
    "float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
    "int32": np.dtype(np.int32), "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64), "uint64": np.dtype(np.uint64),
    "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
}
_NP_TO_DT = {v: k for k, v in DATA_TYPES.items()}


def snake_case(name):
    """The python-api.md rule: '_' before an uppercase letter that follows a
    lowercase letter or a digit; runs of capitals stay one word."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def camel_case(name):
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


class _Method:
    """A method reachable under its snake_case and camelCase names; the bound
    method is cached on the instance so both names give the same object."""

    def __init__(self, func, names):
        self.func, self.names = func, names
        self.__doc__ = func.__doc__

    def __set_name__(self, owner, name):
        self.__name__ = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self.func
        bound = types.MethodType(self.func, obj)
        for n in self.names:
            obj.__dict__[n] = bound
        return bound


def _aliased(cls):
    """Give every public method of cls its camelCase alias."""
    for name, func in list(vars(cls).items()):
        if name.startswith("_") or not callable(func) or isinstance(func, type):
            continue
        camel = camel_case(name)
        d = _Method(func, (name, camel))
        setattr(cls, name, d)
        if camel != name:
            setattr(cls, camel, d)
    return cls


def _get(d, snake, default=None):
    """A member of an options dict under either spelling."""
    camel = camel_case(snake)
    if snake in d and camel in d and snake != camel:
        raise TypeError(f"'{snake}' and '{camel}' name the same member")
    return d.get(snake, d.get(camel, default))


def _options(options, kw, method):
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"{method}: options must be a dict, got {type(options).__name__}")
    merged = dict(options)
    merged.update(kw)
    return merged


async def _in_thread(fn, *args):
    import asyncio  # here, not at import: asyncio is most of `import webnn`'s time

    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _usv(s, what):
    """A name or label as the IDL's USVString: lone surrogates become U+FFFD
    (the WebIDL conversion); a NUL character, which the core's C strings
    cannot carry, is a TypeError."""
    if not isinstance(s, str):
        return s            # the core's own TypeError names the argument
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "\0" in s:
        raise TypeError(f"{what}: the name contains a NUL character")
    return s


def _usv_keys(d, what):
    if not isinstance(d, dict):
        return d
    out = {_usv(k, what): v for k, v in d.items()}
    if len(out) != len(d):
        raise TypeError(f"{what}: two names are the same USVString")
    return out


def _desc(descriptor):
    if not isinstance(descriptor, dict):
        raise TypeError(f"descriptor must be a dict, got {type(descriptor).__name__}")
    return descriptor


# ---- ML ---------------------------------------------------------------------
_POWER = ("default", "high-performance", "low-power")


@_aliased
class ML:
    """navigator.ml: creates contexts."""

    def create_context(self, options=None, **kw):
        """Create an MLContext.  Options: power_preference, accelerated (spec),
        device_type ('cpu' or 'gpu', an extension of this package)."""
        o = _options(options, kw, "createContext")
        unknown = set(o) - {"power_preference", "powerPreference", "accelerated",
                            "device_type", "deviceType"}
        if unknown:
            raise TypeError(f"createContext: unknown option(s) {sorted(unknown)}")
        power = _get(o, "power_preference", "default")
        if power not in _POWER:
            raise TypeError(f"createContext: argument 'powerPreference': {power!r} is not "
                            f"one of {_POWER}")
        accelerated = _get(o, "accelerated", True)
        if not isinstance(accelerated, bool):
            raise TypeError("createContext: argument 'accelerated': expected a bool")
        device = _get(o, "device_type")
        if device is None:
            device = "gpu" if accelerated and _core.device_available("gpu") else "cpu"
        elif device not in ("cpu", "gpu"):
            raise TypeError(f"createContext: argument 'deviceType': {device!r} is not 'cpu' or 'gpu'")
        return MLContext(_core.context_create(device), power)

    async def create_context_async(self, options=None, **kw):
        return await _in_thread(lambda: self.create_context(options, **kw))


ml = ML()


# ---- MLContext --------------------------------------------------------------
@_aliased
class MLContext:
    """A context: the device, its timeline, its tensors and graphs."""

    def __init__(self, handle, power_preference="default"):
        self._h = handle
        info = _core.context_info(handle)
        self._accelerated = info["accelerated"]
        self._device_type = info["device_type"]
        self._max_bytes = info["max_tensor_byte_length"]
        self._power = power_preference
        self._lost = concurrent.futures.Future()

    @property
    def accelerated(self):
        return self._accelerated

    @property
    def device_type(self):
        return self._device_type

    deviceType = device_type

    @property
    def power_preference(self):
        return self._power

    @property
    def lost(self):
        """A concurrent.futures.Future resolving to {'message': ...}."""
        return self._lost

    def destroy(self):
        """Lose the context: queued work fails, later calls raise InvalidStateError."""
        if self._lost.done():
            return
        _core.context_destroy(self._h, "destroy() was called")
        self._lost.set_result({"message": _core.context_info(self._h)["lost_message"]})

    def _tensor(self, tensor, method):
        if not isinstance(tensor, MLTensor):
            raise TypeError(f"{method}: argument 'tensor': expected an MLTensor, "
                            f"got {type(tensor).__name__}")
        return tensor._h

    def create_tensor(self, descriptor):
        d = _desc(descriptor)
        readable = _get(d, "readable", False)
        writable = _get(d, "writable", False)
        if not isinstance(readable, bool) or not isinstance(writable, bool):
            raise TypeError("createTensor: readable and writable must be bools")
        return MLTensor(self, _core.tensor_create(self._h, d, readable, writable, None))

    async def create_tensor_async(self, descriptor):
        return await _in_thread(self.create_tensor, descriptor)

    def create_constant_tensor(self, descriptor, input_data):
        return MLTensor(self, _core.tensor_create(self._h, _desc(descriptor), False, False,
                                                  input_data))

    async def create_constant_tensor_async(self, descriptor, input_data):
        return await _in_thread(self.create_constant_tensor, descriptor, input_data)

    def write_tensor(self, tensor, input_data):
        _core.tensor_write(self._h, self._tensor(tensor, "writeTensor"), input_data)

    def read_tensor(self, tensor, output_data=None):
        """Return the tensor's data as an ndarray, or fill `output_data`."""
        h = self._tensor(tensor, "readTensor")
        if output_data is not None:
            _core.tensor_read(self._h, h, output_data)
            return None
        dt, shape, readable, _, _, destroyed = _core.tensor_info(h)
        if tensor._ctx is not self or destroyed or not readable:
            _core.tensor_read(self._h, h, b"")  # raises the spec's TypeError
        out = np.empty(shape, DATA_TYPES[dt])
        _core.tensor_read(self._h, h, out)
        return out

    async def read_tensor_async(self, tensor, output_data=None):
        return await _in_thread(self.read_tensor, tensor, output_data)

    def dispatch(self, graph, inputs, outputs):
        if not isinstance(graph, MLGraph):
            raise TypeError(f"dispatch: argument 'graph': expected an MLGraph, "
                            f"got {type(graph).__name__}")
        for what, d in (("inputs", inputs), ("outputs", outputs)):
            if not isinstance(d, dict):
                raise TypeError(f"dispatch: argument '{what}': expected a dict")
            for v in d.values():
                if not isinstance(v, MLTensor):
                    raise TypeError(f"dispatch: argument '{what}': expected MLTensor values, "
                                    f"got {type(v).__name__}")
        inputs = _usv_keys(inputs, "dispatch: argument 'inputs'")
        outputs = _usv_keys(outputs, "dispatch: argument 'outputs'")
        _core.dispatch(self._h, graph._h, {k: v._h for k, v in inputs.items()},
                       {k: v._h for k, v in outputs.items()})

    def compute(self, graph, inputs):
        """Convenience outside the spec: NumPy arrays in, NumPy arrays out.

        On the CPU the graph runs straight on the given arrays and writes
        into the arrays it returns (no tensors, no copies, the GIL released
        while it runs); on other devices it goes through tensors."""
        if not isinstance(graph, MLGraph):
            raise TypeError("compute: argument 'graph': expected an MLGraph")
        if not isinstance(inputs, dict):
            raise TypeError("compute: argument 'inputs': expected a dict")
        inputs = _usv_keys(inputs, "compute: argument 'inputs'")
        extra = set(inputs) - set(graph._inputs)
        missing = set(graph._inputs) - set(inputs)
        if extra or missing:
            raise TypeError(f"compute: inputs {sorted(missing)} missing, "
                            f"{sorted(extra)} not inputs of the graph")
        outs = {name: np.empty(shape, DATA_TYPES[dt]) for name, (dt, shape) in graph._outputs.items()}
        if _core.compute(self._h, graph._h, [inputs[n] for n in graph._inputs], list(outs.values())):
            return outs
        return self._compute_with_tensors(graph, inputs)

    def _compute_with_tensors(self, graph, inputs):
        made = []
        try:
            tin = {}
            for name, (dt, shape) in graph._inputs.items():
                t = self.create_tensor({"dataType": dt, "shape": shape, "writable": True})
                made.append(t)
                self.write_tensor(t, inputs[name])
                tin[name] = t
            tout = {}
            for name, (dt, shape) in graph._outputs.items():
                t = self.create_tensor({"dataType": dt, "shape": shape, "readable": True})
                made.append(t)
                tout[name] = t
            self.dispatch(graph, tin, tout)
            return {name: self.read_tensor(t) for name, t in tout.items()}
        finally:
            for t in made:
                t.destroy()

    async def compute_async(self, graph, inputs):
        return await _in_thread(self.compute, graph, inputs)

    def op_support_limits(self):
        """MLOpSupportLimits: what this context really supports."""
        ranks = {"min": 0, "max": _core.MAX_RANK}
        all_types = list(DATA_TYPES)
        out = {
            "preferred_input_layout": "nchw",
            "max_tensor_byte_length": self._max_bytes,
            "input": {"data_types": all_types, "rank_range": dict(ranks)},
            "constant": {"data_types": all_types, "rank_range": dict(ranks)},
            "output": {"data_types": all_types, "rank_range": dict(ranks)},
        }
        for op_id, limits in _core.context_op_limits(self._h).items():
            row = _OPS[op_id]
            out[row["snake"]] = {
                snake_case(name): {"data_types": dts, "rank_range": {"min": lo, "max": hi}}
                for name, dts, lo, hi in limits
            }
        return out


# ---- MLTensor and MLGraph ---------------------------------------------------
@_aliased
class MLTensor:
    """A tensor on a context's timeline (spec: MLTensor)."""

    def __init__(self, ctx, handle):
        self._ctx, self._h = ctx, handle
        dt, shape, self._readable, self._writable, self._constant, _ = _core.tensor_info(handle)
        self._dt, self._shape = dt, shape

    data_type = property(lambda self: self._dt)
    dataType = data_type
    shape = property(lambda self: self._shape)
    readable = property(lambda self: self._readable)
    writable = property(lambda self: self._writable)
    constant = property(lambda self: self._constant)

    def destroy(self):
        _core.tensor_destroy(self._h)

    def __repr__(self):
        return (f"MLTensor(data_type={self._dt!r}, shape={self._shape}, "
                f"readable={self._readable}, writable={self._writable}, constant={self._constant})")


@_aliased
class MLGraph:
    """A built graph (spec: MLGraph)."""

    def __init__(self, ctx, handle):
        self._ctx, self._h = ctx, handle
        ins, outs, _ = _core.graph_info(handle)
        self._inputs = {n: (dt, shape) for n, dt, shape in ins}
        self._outputs = {n: (dt, shape) for n, dt, shape in outs}

    @property
    def input_descriptors(self):
        """{name: {'data_type', 'shape'}} of the graph's inputs (spec [[inputDescriptors]])."""
        return {n: {"data_type": dt, "shape": list(s)} for n, (dt, s) in self._inputs.items()}

    @property
    def output_descriptors(self):
        return {n: {"data_type": dt, "shape": list(s)} for n, (dt, s) in self._outputs.items()}

    def destroy(self):
        _core.graph_destroy(self._h)


# ---- MLGraphBuilder ---------------------------------------------------------
@_aliased
class MLGraphBuilder:
    """Builds a graph for a context (spec: MLGraphBuilder)."""

    def __init__(self, context):
        if not isinstance(context, MLContext):
            raise TypeError(f"MLGraphBuilder: argument 'context': expected an MLContext, "
                            f"got {type(context).__name__}")
        self._ctx = context
        self._h = _core.builder_create(context._h)

    def input(self, name, descriptor):
        if not isinstance(name, str):
            raise TypeError("input: argument 'name': expected a string")
        name = _usv(name, "input: argument 'name'")
        return _core.builder_input(self._h, name, _desc(descriptor))

    def constant(self, *args, **kw):
        """constant(descriptor, buffer) | constant(tensor) |
        constant(data_type, value) | constant(ndarray)."""
        if kw:
            names = {"descriptor", "buffer", "tensor", "data_type", "dataType", "value"}
            if set(kw) - names:
                raise TypeError(f"constant: unknown argument(s) {sorted(set(kw) - names)}")
            if "tensor" in kw:
                args = args + (kw["tensor"],)
            elif "value" in kw:
                args = args + tuple(v for v in (_get(kw, "data_type"), kw["value"]) if v is not None)
            else:
                args = args + tuple(kw[k] for k in ("descriptor", "buffer") if k in kw)
        if len(args) == 1:
            (a,) = args
            if isinstance(a, MLTensor):
                return _core.builder_constant_tensor(self._h, a._h)
            if isinstance(a, np.ndarray):
                if a.dtype not in _NP_TO_DT:
                    raise TypeError(f"constant: dtype {a.dtype} is not an MLOperandDataType")
                return _core.builder_constant(
                    self._h, {"dataType": _NP_TO_DT[a.dtype], "shape": list(a.shape)}, a)
            raise TypeError(f"constant: expected an MLTensor or an ndarray, got {type(a).__name__}")
        if len(args) == 2:
            a, b = args
            if isinstance(a, dict):
                return _core.builder_constant(self._h, a, b)
            if isinstance(a, str):
                return _core.builder_constant_scalar(self._h, a, b)
            raise TypeError("constant: expected (descriptor, buffer) or (data_type, value)")
        raise TypeError(f"constant: takes 1 or 2 arguments, got {len(args)}")

    def build(self, outputs):
        if not isinstance(outputs, dict):
            raise TypeError(f"build: argument 'outputs': expected a dict of name -> MLOperand, "
                            f"got {type(outputs).__name__}")
        outputs = _usv_keys(outputs, "build: argument 'outputs'")
        return MLGraph(self._ctx, _core.builder_build(self._h, outputs))

    async def build_async(self, outputs):
        return await _in_thread(self.build, outputs)


_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _where(camel, label):
    """'conv2d (label 'L')' as the core writes it (control and bidi characters
    of the label replaced by '?')."""
    if isinstance(label, str) and label:
        return f"{camel} (label '{_UNSAFE.sub('?', label)[:63]}')"
    return camel


def _make_op(row):
    sig = row["signature"].split()
    returns_list = "->list" in sig
    params = [p for p in sig if not p.startswith("->")]
    kinds = [("seq", p[1:]) if p[0] == "*" else ("value", p[1:]) if p[0] == "%" else ("operand", p)
             for p in params]
    camel, op_id = row["camel"], row["id"]

    def method(self, *args, **kw):
        args = list(args)
        n = len(kinds)
        options = {}
        if len(args) > n:
            extra = args.pop()
            if len(args) != n or not (extra is None or isinstance(extra, dict)):
                label = extra.get("label") if isinstance(extra, dict) else None
                raise TypeError(f"{_where(camel, kw.get('label', label))}: takes {n} positional "
                                f"arguments and an options dict, got {len(args) + 1}")
            options = dict(extra or {})
        options.update(kw)
        operands = []
        for i, (kind, name) in enumerate(kinds):
            if i < len(args):
                v = args[i]
            else:
                keys = [k for k in (name, snake_case(name)) if k in options]
                if not keys:
                    raise TypeError(f"{_where(camel, options.get('label'))}: argument '{name}': "
                                    f"missing required argument")
                v = options.pop(keys[0])
            if kind == "operand":
                operands.append(v)
            elif kind == "seq":
                if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__iter__"):
                    raise TypeError(f"{_where(camel, options.get('label'))}: argument '{name}': "
                                    f"must be a sequence of MLOperand")
                operands.extend(v)
            else:
                options[name] = v
        label = options.pop("label", None)
        if isinstance(label, str):
            label = _usv(label.replace("\0", "?"), camel)
        outs = _core.builder_op(self._h, op_id, operands, options, label)
        return outs if returns_list else outs[0]

    method.__name__ = row["snake"]
    method.__qualname__ = f"MLGraphBuilder.{row['snake']}"
    method.__doc__ = (f"{camel}({', '.join(params)}, options) -- the spec's "
                      f"MLGraphBuilder.{camel}(); options: "
                      f"{', '.join(f[0] for f in row['fields']) or 'label only'}.")
    return method


_OPS = {row["id"]: row for row in _core.op_table()}
OPERATORS = tuple(row["camel"] for row in _OPS.values())
for _row in _OPS.values():
    _d = _Method(_make_op(_row), (_row["snake"], _row["camel"]))
    setattr(MLGraphBuilder, _row["snake"], _d)
    setattr(MLGraphBuilder, _row["camel"], _d)
