"""The Python face of WebNN (../shared/docs/python-api.md): thin classes over
the C core's handles.  This module only converts arguments and results; every
rule of the spec is checked in the core, which raises through webnn._core.

The MLGraphBuilder operator methods are generated from the core's operator
table (csrc/ops/ops.def), so adding an operator adds no code here."""
import concurrent.futures
import inspect
import math
import re
import sys
import types
import warnings
from typing import Literal

import numpy as np

from . import _core
from ._errors import (AbortError, DataError, InvalidStateError, UnknownOptionWarning,
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
#: The spec's MLOperandDataType, for annotations.
DataType = Literal["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]


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


def _options(options, kw, method, known=None):
    """The options dict and the keyword arguments, merged; with ``known`` (the
    member names, both spellings), unknown dict members are dropped with an
    UnknownOptionWarning and unknown keywords are a TypeError."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise TypeError(f"{method}: options must be a dict, got {type(options).__name__}")
    if known is None:
        merged = dict(options)
    else:
        merged = _known_members(options, known, method, stacklevel=4)
        _check_keywords(kw, known, method)
    merged.update(kw)
    return merged


def _nearest(name, known):
    """' (nearest known member: 'x')': the known name most like ``name``."""
    import difflib
    if not known:
        return ""
    key = str(name).lower()
    best = max(sorted(known), key=lambda m: difflib.SequenceMatcher(None, key, m.lower()).ratio())
    return f" (nearest known member: {best!r})"


def _known_members(members, known, where, stacklevel=3, hints=None):
    """``members`` without the keys ``known`` lacks: WebIDL ignores the
    members a dictionary does not define; each one ignored is an
    UnknownOptionWarning naming it and the nearest known member."""
    out = {}
    for k, v in members.items():
        if k in known:
            out[k] = v
        else:
            warnings.warn(UnknownOptionWarning(
                f"{where}: options member {k!r} is not defined by the IDL dictionary and is "
                f"ignored{_nearest(k, hints or known)}"), stacklevel=stacklevel)
    return out


def _check_keywords(kw, known, where, hints=None):
    """An unknown keyword argument is a TypeError, as in any Python call."""
    for k in kw:
        if k not in known:
            raise TypeError(f"{where}: unexpected keyword argument {k!r}"
                            f"{_nearest(k, hints or known)}")


async def _in_thread(fn, *args):
    import asyncio  # here, not at import: asyncio is most of `import webnn`'s time

    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def _usv(s, what, core=True):
    """A name or label as the IDL's USVString: lone surrogates become U+FFFD
    (the WebIDL conversion).  With ``core``, the name as the core keeps it
    (_core_name: a NUL character, which its C strings cannot carry, escaped)."""
    if not isinstance(s, str):
        return s            # the core's own TypeError names the argument
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _core_name(s) if core else s


# A USVString may hold NUL (upstream WPT: "tensor names can include null
# bytes"); the core's names are C strings.  Names cross into the core with
# U+0001 as an escape character (U+0001 -> U+0001 U+0001, NUL -> U+0001 U+0002),
# a one-to-one map that leaves every other name unchanged, and come back
# through _user_name (MLGraph's input and output names).
_ESCAPED = re.compile("\x01(.)", re.S)


def _core_name(s):
    if "\0" in s or "\x01" in s:
        return s.replace("\x01", "\x01\x01").replace("\0", "\x01\x02")
    return s


def _user_name(s):
    if "\x01" in s:
        return _ESCAPED.sub(lambda m: "\x01" if m.group(1) == "\x01" else "\0", s)
    return s


def _usv_keys(d, what, core=True):
    if not isinstance(d, dict):
        return d
    out = {_usv(k, what, core): v for k, v in d.items()}
    if len(out) != len(d):
        raise TypeError(f"{what}: two names are the same USVString")
    return out


def _tensor_handles(d, what):
    """dispatch()'s record<USVString, MLTensor> -> {name: handle}, in one
    pass (the per-dispatch cost of small graphs)."""
    if not isinstance(d, dict):
        raise TypeError(f"dispatch: argument '{what}': expected a dict")
    out = {}
    for k, v in d.items():
        if not isinstance(v, MLTensor):
            raise TypeError(f"dispatch: argument '{what}': expected MLTensor values, "
                            f"got {type(v).__name__}")
        if type(k) is not str or not k.isascii():
            if not isinstance(k, str):
                raise TypeError(f"dispatch: argument '{what}': names must be strings, "
                                f"got {type(k).__name__}")
            k = _usv(k, f"dispatch: argument '{what}'")
        elif "\0" in k or "\x01" in k:
            k = _core_name(k)
        out[k] = v._h
    if len(out) != len(d):
        raise TypeError(f"dispatch: argument '{what}': two names are the same USVString")
    return out


def _desc(descriptor):
    if not isinstance(descriptor, dict):
        raise TypeError(f"descriptor must be a dict, got {type(descriptor).__name__}")
    return descriptor


# ---- interop: arrays of any byte order, buffers, __array_interface__, DLPack -
_DLPACK_CPU = 1
_DLPACK_CUDA = 2
# DLPack's (type code, bits) of each MLOperandDataType (lanes 1)
_DLPACK_DTYPES = {
    (2, 32): "float32", (2, 16): "float16", (0, 32): "int32", (1, 32): "uint32",
    (0, 64): "int64", (1, 64): "uint64", (0, 8): "int8", (1, 8): "uint8",
}
_DLPACK_CODES = {0: "int", 1: "uint", 2: "float", 3: "opaque handle", 4: "bfloat",
                 5: "complex", 6: "bool"}
# The stream a CUDA producer is asked to make its data ready on: the legacy
# default stream (the array API's 1); the GPU backend then waits for the
# whole device before copying (kernels_cuda/backend_cuda.c).
_DLPACK_LEGACY_STREAM = 1


class _DeviceData:
    """A CUDA DLPack producer's memory, validated: the capsule (which keeps
    the memory alive while it is copied), its address, shape and data type."""

    __slots__ = ("capsule", "addr", "shape", "dt", "nbytes")

    def __init__(self, capsule, addr, shape, dt):
        self.capsule, self.addr, self.shape, self.dt = capsule, addr, shape, dt
        self.nbytes = int(np.prod(shape, dtype=np.int64)) * DATA_TYPES[dt].itemsize


def _device_data(obj, what, ctx):
    """A CUDA DLPack producer given to a GPU context: asks for its capsule
    (ready on the legacy default stream) and checks the device, data type
    and strides (C-contiguous).  Nothing is copied here."""
    _, dev_id = obj.__dlpack_device__()
    if dev_id != ctx._device_id:
        raise TypeError(f"{what}: the DLPack producer's memory is on CUDA device {dev_id}, "
                        f"the context's is device {ctx._device_id}")
    try:
        try:
            cap = obj.__dlpack__(stream=_DLPACK_LEGACY_STREAM, max_version=(1, 0))
        except TypeError:       # a producer older than DLPack 1.0's protocol
            cap = obj.__dlpack__(stream=_DLPACK_LEGACY_STREAM)
    except (TypeError, BufferError, RuntimeError, ValueError) as e:
        raise TypeError(f"{what}: the DLPack producer could not be read: {e}") from None
    kind, dev, addr, (code, bits, lanes), shape, strides, _ = _core.dlpack_info(cap)
    if (kind, dev) != (_DLPACK_CUDA, ctx._device_id):
        raise TypeError(f"{what}: the DLPack capsule's memory is on device ({kind}, {dev}), "
                        f"not CUDA device {ctx._device_id}")
    dt = _DLPACK_DTYPES.get((code, bits)) if lanes == 1 else None
    if dt is None:
        lanes_s = f"x{lanes}" if lanes != 1 else ""
        name = f"{_DLPACK_CODES.get(code, f'code {code}')}{bits}{lanes_s}"
        raise TypeError(f"{what}: the DLPack producer's data type {name} is not an "
                        f"MLOperandDataType ({', '.join(DATA_TYPES)}); cast it first")
    if strides is not None:
        want, acc = [], 1
        for n in reversed(shape):
            want.append(acc)
            acc *= n
        want.reverse()
        if any(n != 1 and st != w for n, st, w in zip(shape, strides, want)):
            raise TypeError(f"{what}: the DLPack producer is not C-contiguous: strides "
                            f"{tuple(strides)} (in elements) for shape {tuple(shape)}, "
                            f"expected {tuple(want)}; make it contiguous first "
                            f"(e.g. tensor.contiguous())")
    return _DeviceData(cap, addr, tuple(shape), dt)


def _check_device_data(d, dt, shape, what):
    """A CUDA producer given for data of dt (and of shape, when given): its
    data type must be dt's, or uint8 (raw bytes)."""
    if d.dt != dt and d.dt != "uint8":
        raise TypeError(f"{what}: data type {d.dt} does not match the expected data type "
                        f"{dt} (cast it first)")
    if shape is not None and d.dt == dt and tuple(d.shape) != tuple(shape) and not (
            int(np.prod(d.shape)) == 1 and int(np.prod(shape)) == 1):
        raise TypeError(f"{what}: array shape {tuple(d.shape)} does not match the "
                        f"graph's input shape {tuple(shape)}")


def _native(a):
    """The array in native byte order (a copy only when it is not)."""
    if a.dtype.byteorder not in ("=", "|") and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _result_array(shape, dtype):
    """A new array for a result (compute(), read_tensor()): a large one on
    memory that the results of earlier calls gave back (``_core.out_buffer``:
    reused instead of fresh pages the kernel must fault in and zero), a small
    one from np.empty."""
    n = math.prod(shape) * dtype.itemsize
    if n >= _RESULT_BUFFER_MIN:
        buf = _core.out_buffer(n)
        if buf is not None:
            return np.frombuffer(buf, dtype, n // dtype.itemsize).reshape(shape)
    return np.empty(shape, dtype)


_RESULT_BUFFER_MIN = 1 << 20
_TENSOR_SETS = 2  # compute()'s tensor sets kept per graph (non-host contexts)


def _as_data(obj, what, ctx=None):
    """What the core takes as data: an ndarray in native byte order, or a
    buffer.  DLPack producers (PyTorch, JAX, CuPy on the CPU) and objects with
    __array_interface__ / __array__ become ndarrays; a buffer whose format
    has a non-native byte order is converted through NumPy.  A CUDA DLPack
    producer given to a GPU context `ctx` becomes a _DeviceData (copied
    device to device by the caller); elsewhere it is a TypeError."""
    if isinstance(obj, np.ndarray):
        return _native(obj)
    if isinstance(obj, _DeviceData):
        return obj
    if isinstance(obj, MLTensor):
        raise TypeError(f"{what}: an MLTensor is not a buffer; read it with "
                        f"read_tensor() or use it in dispatch()")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, (bytes, bytearray, memoryview)):
        dev = getattr(obj, "__dlpack_device__", None)
        if dev is not None:
            kind = dev()[0]
            if kind == _DLPACK_CUDA and ctx is not None and ctx._device_type == "gpu":
                return _device_data(obj, what, ctx)
            if kind != _DLPACK_CPU:
                where = "a CPU context" if ctx is not None and ctx._device_type == "cpu" \
                    else "host data"
                raise TypeError(
                    f"{what}: the DLPack producer's memory is on device type {kind} "
                    f"(not the CPU), given as {where}; copy it to the host first "
                    f"(e.g. tensor.cpu()) or use a GPU context (device_type='gpu'); "
                    f"see the README, 'Interop'")
        try:
            return _native(np.from_dlpack(obj))
        except (TypeError, BufferError, RuntimeError) as e:
            raise TypeError(f"{what}: the DLPack producer could not be read: {e}") from None
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__array_struct__") or \
            (hasattr(obj, "__array__") and not _has_buffer(obj)):
        return _native(np.asarray(obj))
    if _has_buffer(obj):
        fmt = memoryview(obj).format
        if fmt[:1] in (">", "!") and sys.byteorder == "little" or \
                fmt[:1] == "<" and sys.byteorder == "big":
            return _native(np.asarray(memoryview(obj)))
    return obj


def _has_buffer(obj):
    try:
        memoryview(obj)
    except (TypeError, ValueError):     # ValueError: a released memoryview
        return False
    return True


def _check_dtype(a, dt, what):
    """An ndarray given for data of MLOperandDataType dt: its dtype must be
    dt's, or uint8 (raw bytes, as the spec's Uint8Array)."""
    native = a.dtype.newbyteorder("=") if isinstance(a, np.ndarray) else None
    if native is not None and native != DATA_TYPES[dt] and native != np.uint8:
        got = _NP_TO_DT.get(native, str(a.dtype))
        raise TypeError(f"{what}: data type {got} does not match the expected data type "
                        f"{dt} (cast it first, e.g. a.astype(np.{DATA_TYPES[dt].name}))")


# ---- ML ---------------------------------------------------------------------
_POWER = ("default", "high-performance", "low-power")


@_aliased
class ML:
    """``navigator.ml``: creates contexts (spec: `ML
    <https://www.w3.org/TR/webnn/#api-ml>`_).  ``webnn.ml`` is the singleton."""

    def create_context(self, options=None, **kw):
        """Create an :class:`MLContext` (spec: ``ML.createContext()``).

        Parameters
        ----------
        options : dict, optional
            ``MLContextOptions`` as in JavaScript; keywords work too.
        power_preference : {'default', 'high-performance', 'low-power'}
            A hint (spec member ``powerPreference``).
        accelerated : bool
            ``True`` (default) picks the GPU backend when one is usable.
        device_type : {'cpu', 'gpu'}, optional
            An extension of this package: ask for one backend explicitly;
            ``'gpu'`` without a usable GPU raises :class:`NotSupportedError`.

        Returns
        -------
        MLContext
        """
        o = _options(options, kw, "createContext",
                     {"power_preference", "powerPreference", "accelerated",
                      "device_type", "deviceType"})
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
        """Awaitable twin of :meth:`create_context` (the spec's Promise)."""
        return await _in_thread(lambda: self.create_context(options, **kw))

    def __repr__(self):
        return "webnn.ml"


ml = ML()


class _LostFuture(concurrent.futures.Future):
    """``MLContext.lost``: a :class:`concurrent.futures.Future` (as
    python-api.md says) that can also be awaited in asyncio code."""

    def __await__(self):
        import asyncio  # here, not at import (see _in_thread)
        return asyncio.wrap_future(self).__await__()


# ---- MLContext --------------------------------------------------------------
@_aliased
class MLContext:
    """A context: the device, its timeline, its tensors and graphs (spec:
    `MLContext <https://www.w3.org/TR/webnn/#api-mlcontext>`_).  Made by
    :meth:`ML.create_context`."""

    def __init__(self, handle, power_preference="default"):
        self._h = handle
        info = _core.context_info(handle)
        self._accelerated = info["accelerated"]
        self._device_type = info["device_type"]
        self._device_id = info["device_id"]
        self._max_bytes = info["max_tensor_byte_length"]
        self._backend, self._threads = _core.context_backend(handle)
        self._power = power_preference
        self._lost = _LostFuture()

    @property
    def accelerated(self):
        """Whether the context runs on an accelerator (spec: ``accelerated``)."""
        return self._accelerated

    @property
    def device_type(self):
        """``'cpu'`` or ``'gpu'``: the backend chosen (an extension)."""
        return self._device_type

    deviceType = device_type

    @property
    def power_preference(self):
        """The ``powerPreference`` the context was created with."""
        return self._power

    @property
    def backend(self):
        """The backend's name (``'cpu'``, ``'cuda'``), an extension."""
        return self._backend

    @property
    def threads(self):
        """Threads of the CPU backend (0 on other devices), an extension."""
        return self._threads

    @property
    def lost(self):
        """A :class:`concurrent.futures.Future` resolving to ``{'message': ...}``
        when the context is destroyed or lost; ``await ctx.lost`` works too.
        (A loss the core found by itself resolves it when ``lost`` is next
        read.)"""
        if not self._lost.done():
            info = _core.context_info(self._h)
            if info["lost"]:
                try:
                    self._lost.set_result({"message": info["lost_message"]})
                except concurrent.futures.InvalidStateError:
                    pass            # resolved by another thread meanwhile
        return self._lost

    def __repr__(self):
        state = ", lost" if self._lost.done() else ""
        threads = f", threads={self._threads}" if self._device_type == "cpu" else ""
        return (f"MLContext(device_type={self._device_type!r}, backend={self._backend!r}"
                f"{threads}, accelerated={self._accelerated}, "
                f"power_preference={self._power!r}{state})")

    def destroy(self):
        """Lose the context: queued work fails, later calls raise
        :class:`InvalidStateError`, :attr:`lost` resolves (spec: ``destroy()``)."""
        if self._lost.done():
            return
        _core.context_destroy(self._h, "destroy() was called")
        try:
            self._lost.set_result({"message": _core.context_info(self._h)["lost_message"]})
        except concurrent.futures.InvalidStateError:
            pass

    def _tensor(self, tensor, method):
        if not isinstance(tensor, MLTensor):
            raise TypeError(f"{method}: argument 'tensor': expected an MLTensor, "
                            f"got {type(tensor).__name__}")
        return tensor._h

    def create_tensor(self, descriptor):
        """Create an :class:`MLTensor` on the context's timeline (spec:
        ``createTensor()``).

        Parameters
        ----------
        descriptor : dict
            ``MLTensorDescriptor``: ``data_type``, ``shape``, and ``readable``,
            ``writable`` (bools, default ``False``); either spelling of each key.

        Returns
        -------
        MLTensor
        """
        d = _desc(descriptor)
        readable = _get(d, "readable", False)
        writable = _get(d, "writable", False)
        if not isinstance(readable, bool) or not isinstance(writable, bool):
            raise TypeError("createTensor: readable and writable must be bools")
        return MLTensor(self, _core.tensor_create(self._h, d, readable, writable, None))

    async def create_tensor_async(self, descriptor):
        """Awaitable twin of :meth:`create_tensor`."""
        return await _in_thread(self.create_tensor, descriptor)

    def create_constant_tensor(self, descriptor, input_data):
        """Create a constant :class:`MLTensor` holding a copy of ``input_data``
        (spec: ``createConstantTensor()``), usable with
        :meth:`MLGraphBuilder.constant`.

        Parameters
        ----------
        descriptor : dict
            ``MLOperandDescriptor``: ``data_type`` and ``shape``.
        input_data : buffer, ndarray, array-like or DLPack producer
            Exactly the descriptor's byte length; copied.  On a GPU context
            a CUDA DLPack producer (a PyTorch / CuPy tensor on the context's
            device) is copied device to device.
        """
        what = "createConstantTensor: argument 'inputData'"
        data = _as_data(input_data, what, self)
        dt = _get(_desc(descriptor), "data_type")
        if isinstance(data, _DeviceData):
            return MLTensor(self, self._constant_device(descriptor, data, what))
        if isinstance(dt, str) and dt in DATA_TYPES:
            _check_dtype(data, dt, what)
        return MLTensor(self, _core.tensor_create(self._h, _desc(descriptor), False, False,
                                                  data))

    def _constant_device(self, descriptor, data, what):
        """A constant tensor's handle copied device to device from a CUDA
        producer's memory (_DeviceData)."""
        dt = _get(_desc(descriptor), "data_type")
        if isinstance(dt, str) and dt in DATA_TYPES:
            _check_device_data(data, dt, None, what)
            shape = _get(descriptor, "shape")
            try:
                want = int(np.prod([int(n) for n in shape], dtype=np.int64)) * \
                    DATA_TYPES[dt].itemsize
            except (TypeError, ValueError):
                want = None     # the core names what is wrong with the shape
            if want is not None and want != data.nbytes:
                raise TypeError(f"{what}: byte length {data.nbytes} differs from the "
                                f"descriptor's {want}")
        return _core.tensor_create_constant_device(self._h, _desc(descriptor), data.addr)

    async def create_constant_tensor_async(self, descriptor, input_data):
        """Awaitable twin of :meth:`create_constant_tensor`."""
        return await _in_thread(self.create_constant_tensor, descriptor, input_data)

    def write_tensor(self, tensor, input_data):
        """Queue a write of a copy of ``input_data`` into a writable tensor
        (spec: ``writeTensor()``); returns at once.

        Parameters
        ----------
        tensor : MLTensor
        input_data : buffer, ndarray, array-like or DLPack producer
            The tensor's byte length; an ndarray must have the tensor's dtype
            (or be ``uint8`` raw bytes), any byte order (converted).  On a GPU
            context a CUDA DLPack producer (a C-contiguous PyTorch / CuPy
            tensor on the context's device) is copied device to device, with
            no host round trip; that write waits for the copy (the producer's
            memory may be reused when it returns).  A CUDA producer given to
            a CPU context is a TypeError.
        """
        h = self._tensor(tensor, "writeTensor")
        what = "writeTensor: argument 'inputData'"
        data = _as_data(input_data, what, self)
        if isinstance(data, _DeviceData):
            _, _, _, writable, _, destroyed = _core.tensor_info(h)
            if tensor._ctx is not self or destroyed or not writable:
                _core.tensor_write(self._h, h, b"")  # the spec's TypeError, first
            _check_device_data(data, tensor._dt, None, what)
            _core.tensor_write_device(self._h, h, data.addr, data.nbytes)
            return
        _check_dtype(data, tensor._dt, what)
        _core.tensor_write(self._h, h, data)

    def read_tensor(self, tensor, output_data=None):
        """Wait for the work queued before and return the tensor's data
        (spec: ``readTensor()``).

        Parameters
        ----------
        tensor : MLTensor
            A readable tensor of this context.
        output_data : writable buffer, optional
            The bring-your-own-buffer form: filled, and ``None`` returned.

        Returns
        -------
        numpy.ndarray or None
            An array of the tensor's dtype and shape.
        """
        if (type(output_data) is np.ndarray and type(tensor) is MLTensor
                and output_data.dtype is DATA_TYPES[tensor._dt]):
            _core.tensor_read(self._h, tensor._h, output_data)  # the common case, checked in C
            return None
        h = self._tensor(tensor, "readTensor")
        if output_data is not None:
            if isinstance(output_data, np.ndarray):
                _check_dtype(output_data, tensor._dt, "readTensor: argument 'outputData'")
                if not output_data.dtype.isnative:
                    # read in native order, then store in the array's own
                    tmp = np.empty(output_data.shape, output_data.dtype.newbyteorder("="))
                    _core.tensor_read(self._h, h, tmp)
                    output_data[...] = tmp
                    return None
            _core.tensor_read(self._h, h, output_data)
            return None
        dt, shape, readable, _, _, destroyed = _core.tensor_info(h)
        if tensor._ctx is not self or destroyed or not readable:
            _core.tensor_read(self._h, h, b"")  # raises the spec's TypeError
        out = _result_array(shape, DATA_TYPES[dt])
        _core.tensor_read(self._h, h, out)
        return out

    async def read_tensor_async(self, tensor, output_data=None):
        """Awaitable twin of :meth:`read_tensor`."""
        return await _in_thread(self.read_tensor, tensor, output_data)

    def dispatch(self, graph, inputs, outputs):
        """Queue an execution of ``graph`` on the context's timeline (spec:
        ``dispatch()``); returns at once.

        Parameters
        ----------
        graph : MLGraph
        inputs : dict of str to MLTensor
            One tensor per graph input, of its descriptor.
        outputs : dict of str to MLTensor
            One tensor per graph output, of its descriptor.
        """
        if not isinstance(graph, MLGraph):
            raise TypeError(f"dispatch: argument 'graph': expected an MLGraph, "
                            f"got {type(graph).__name__}")
        # MLTensor values under plain ASCII names are read in C; anything
        # else comes back NotImplemented, converted (and reported) here
        if _core.dispatch_tensors(self._h, graph._h, inputs, outputs) is NotImplemented:
            _core.dispatch(self._h, graph._h, _tensor_handles(inputs, "inputs"),
                           _tensor_handles(outputs, "outputs"))

    def compute(self, graph, inputs):
        """Convenience outside the spec: arrays in, NumPy arrays out.

        On the CPU the graph runs straight on the given arrays and writes
        into the arrays it returns (no tensors, no copies, the GIL released
        while it runs); on other devices it goes through tensors.  Results of
        1 MiB or more reuse the memory of earlier results whose arrays are
        gone (``WEBNN_RESULT_CACHE_MB``).

        Parameters
        ----------
        graph : MLGraph
        inputs : dict of str to array
            One value per graph input: an ndarray (any byte order) of the
            input's dtype and shape, a buffer of its byte length, or an
            array-like / DLPack producer (PyTorch CPU tensors, JAX arrays;
            on a GPU context also CUDA tensors of its device, copied device to
            device into the input tensors).

        Returns
        -------
        dict of str to numpy.ndarray
        """
        if not isinstance(graph, MLGraph):
            raise TypeError("compute: argument 'graph': expected an MLGraph")
        # the common case (ndarrays of the inputs' dtypes and shapes) in C;
        # NotImplemented: anything to convert or report is done below
        out = _core.compute_dict(self._h, graph._h, inputs, graph._compute_spec)
        if out is not NotImplemented:
            return out
        data = self._host_inputs(graph, inputs, "compute")
        outs = {name: alloc(shape, npdt) for name, alloc, shape, npdt in graph._compute_spec[1]}
        if _core.compute(self._h, graph._h, list(data.values()), list(outs.values())):
            return outs
        return self._compute_with_tensors(graph, data)

    def _host_inputs(self, graph, inputs, op):
        # compute()'s and MLGraph.profile()'s inputs, checked and converted:
        # {name: array or _DeviceData} in graph order
        if not isinstance(inputs, dict):
            raise TypeError(f"{op}: argument 'inputs': expected a dict")
        if inputs.keys() != graph._inputs.keys():  # (equal: the graph's names, valid)
            inputs = _usv_keys(inputs, f"{op}: argument 'inputs'", core=False)
            extra = set(inputs) - set(graph._inputs)
            missing = set(graph._inputs) - set(inputs)
            if extra or missing:
                raise TypeError(f"{op}: inputs {sorted(missing)} missing, "
                                f"{sorted(extra)} not inputs of the graph")
        data = {}
        for name, npdt, shape in graph._in_specs:
            v = inputs[name]
            if type(v) is np.ndarray and v.dtype == npdt and v.shape == shape:
                data[name] = v          # the common case: nothing to convert or check
                continue
            dt = graph._inputs[name][0]
            what = f"{op}: input {name!r}"
            v = _as_data(v, what, self)
            if isinstance(v, _DeviceData):
                _check_device_data(v, dt, shape, what)
                data[name] = v
                continue
            _check_dtype(v, dt, what)
            # (one element for a one-element input is accepted whatever its
            # shape: np.ascontiguousarray makes 0-d arrays 1-d)
            if isinstance(v, np.ndarray) and v.dtype == DATA_TYPES[dt] and \
                    tuple(v.shape) != tuple(shape) and not (v.size == 1 and
                                                            int(np.prod(shape)) == 1):
                raise TypeError(f"{what}: array shape {tuple(v.shape)} does not match the "
                                f"graph's input shape {tuple(shape)}")
            data[name] = v
        return data

    def _compute_with_tensors(self, graph, data):
        # A set of input and output tensors made once and kept on the graph
        # (at most _TENSOR_SETS, for concurrent callers; list.pop / append
        # hand each to one caller), not created and destroyed on every call:
        # on a GPU each is a device allocation on the timeline.  A set that
        # saw an error is destroyed; MLGraph.destroy() destroys the kept ones.
        sets = graph._tensor_sets
        try:
            tin, tout = sets.pop()
        except IndexError:
            tin, tout = self._tensor_set(graph)
        kept = False
        try:
            for name, t in tin.items():
                self.write_tensor(t, data[name])
            self.dispatch(graph, tin, tout)
            out = {name: self.read_tensor(t) for name, t in tout.items()}
            if len(sets) < _TENSOR_SETS:
                sets.append((tin, tout))
                kept = True
            return out
        finally:
            if not kept:
                for t in (*tin.values(), *tout.values()):
                    t.destroy()

    def _tensor_set(self, graph):
        tin, tout = {}, {}
        try:
            for name, (dt, shape) in graph._inputs.items():
                tin[name] = self.create_tensor({"dataType": dt, "shape": shape, "writable": True})
            for name, (dt, shape) in graph._outputs.items():
                tout[name] = self.create_tensor({"dataType": dt, "shape": shape, "readable": True})
        except BaseException:
            for t in (*tin.values(), *tout.values()):
                t.destroy()
            raise
        return tin, tout

    async def compute_async(self, graph, inputs):
        """Awaitable twin of :meth:`compute`."""
        return await _in_thread(self.compute, graph, inputs)

    def op_support_limits(self):
        """``MLOpSupportLimits``: the data types and ranks this context really
        supports, per operator and operand (snake_case keys)."""
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
    """A tensor on a context's timeline (spec: `MLTensor
    <https://www.w3.org/TR/webnn/#api-mltensor>`_).  Made by
    :meth:`MLContext.create_tensor`.  ``np.asarray(tensor)`` reads a readable
    tensor (waiting for the work queued before)."""

    def __init__(self, ctx, handle):
        self._ctx, self._h = ctx, handle
        dt, shape, self._readable, self._writable, self._constant, _ = _core.tensor_info(handle)
        self._dt, self._shape = dt, shape

    data_type = property(lambda self: self._dt, doc="The tensor's data type.")
    dataType = data_type
    shape = property(lambda self: self._shape, doc="The tensor's shape (tuple).")
    readable = property(lambda self: self._readable, doc="Whether read_tensor() may read it.")
    writable = property(lambda self: self._writable, doc="Whether write_tensor() may write it.")
    constant = property(lambda self: self._constant, doc="Whether it is a constant tensor.")

    @property
    def context(self):
        """The :class:`MLContext` the tensor belongs to."""
        return self._ctx

    def destroy(self):
        """Release the tensor's memory (spec: ``destroy()``)."""
        _core.tensor_destroy(self._h)

    def __array__(self, dtype=None, copy=None):
        if not self._readable:
            raise TypeError("MLTensor is not readable: create it with readable=True to read "
                            "it as an array (np.asarray(tensor) calls read_tensor())")
        a = self._ctx.read_tensor(self)
        return a if dtype is None else a.astype(dtype, copy=False)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """DLPack export of a readable tensor, for ``torch.from_dlpack(t)``,
        ``cupy.from_dlpack(t)`` or ``np.from_dlpack(t)``.

        On a GPU context the capsule points at the tensor's own device memory
        (``kDLCUDA``, no copy): the work queued before on the context's
        timeline and every stream of the device are waited for first, so the
        data is ready on any consumer ``stream``.  The capsule keeps the
        tensor's memory alive (a ``destroy()`` meanwhile is deferred until
        the consumer releases it); writes through it by the consumer are
        seen by the context.  ``copy=True`` exports a device copy instead;
        ``dl_device=(1, 0)`` (the CPU) a host copy.

        On a CPU context it is a host copy read from the timeline
        (``copy=False`` is refused for that reason).

        Parameters
        ----------
        stream : int, optional
            The consumer's stream (the array API's convention: ``None``,
            ``-1``, ``1``, ``2`` or a ``cudaStream_t`` address); the export
            synchronises the whole device, so every stream is served.
        max_version : tuple of int, optional
            ``(1, 0)`` or later: a versioned capsule
            (``DLManagedTensorVersioned``, ``"dltensor_versioned"``).
        dl_device : tuple, optional
            The device to export to: the tensor's own, or ``(1, 0)`` for a
            host copy; another one is a :class:`BufferError`.
        copy : bool, optional
            ``True``: always a copy; ``False``: never (a CPU context's
            export is a :class:`BufferError`).
        """
        if not self._readable:
            raise TypeError("MLTensor.__dlpack__: the tensor is not readable: create it with "
                            "readable=True to export it")
        if stream is not None and (not isinstance(stream, int) or isinstance(stream, bool)):
            raise TypeError(f"MLTensor.__dlpack__: argument 'stream': expected an int or None, "
                            f"got {type(stream).__name__}")
        if stream is not None and (stream == 0 or stream < -1):
            raise ValueError(f"MLTensor.__dlpack__: argument 'stream': {stream} is not a "
                             f"stream (the array API disallows 0; -1, 1, 2 or a "
                             f"cudaStream_t address)")
        mine = self.__dlpack_device__()
        if dl_device is not None:
            try:
                dl_device = (int(dl_device[0]), int(dl_device[1]))
            except (TypeError, ValueError, IndexError):
                raise TypeError(f"MLTensor.__dlpack__: argument 'dl_device': expected a "
                                f"(device_type, device_id) tuple, got {dl_device!r}") from None
        to_host = dl_device == (_DLPACK_CPU, 0)
        host = mine[0] == _DLPACK_CPU or to_host
        if dl_device is not None and dl_device != mine and not (to_host and copy is not False):
            raise BufferError(f"MLTensor.__dlpack__: cannot export to device {dl_device}: "
                              f"the tensor is on {mine}"
                              + (" (copy=False)" if dl_device == (_DLPACK_CPU, 0) else ""))
        if host:
            if copy is False:
                raise BufferError("MLTensor: a DLPack export of a CPU context's tensor (or to "
                                  "the host) is always a copy read from the context's timeline")
            a = self.__array__()
            kw = {} if max_version is None else {"max_version": max_version}
            return a.__dlpack__(**kw)
        versioned = max_version is not None and tuple(max_version)[:1] >= (1,)
        if not copy:
            return _core.tensor_dlpack(self._ctx._h, self._h, versioned, False)
        # copy=True: a fresh tensor, copied device to device, exported, and
        # destroyed at once (deferred until the consumer releases it)
        ctx = self._ctx
        t = ctx.create_tensor({"dataType": self._dt, "shape": list(self._shape),
                               "readable": True, "writable": True})
        try:
            src = _core.tensor_dlpack(ctx._h, self._h, False, False)
            addr = _core.dlpack_info(src)[2]
            nbytes = int(np.prod(self._shape, dtype=np.int64)) * DATA_TYPES[self._dt].itemsize
            _core.tensor_write_device(ctx._h, t._h, addr, nbytes)
            del src                  # the deleter unpins this tensor
            return _core.tensor_dlpack(ctx._h, t._h, versioned, True)
        finally:
            t.destroy()

    def __dlpack_device__(self):
        """``(2, device_id)`` (``kDLCUDA``) for a GPU context's tensor, ``(1, 0)``
        (``kDLCPU``) for a CPU context's (its export is a host copy)."""
        if self._ctx._device_type == "gpu":
            return (_DLPACK_CUDA, self._ctx._device_id)
        return (_DLPACK_CPU, 0)

    def __repr__(self):
        destroyed = _core.tensor_info(self._h)[5]
        flags = [f for f, on in (("readable", self._readable), ("writable", self._writable),
                                 ("constant", self._constant), ("destroyed", destroyed)) if on]
        return (f"MLTensor(data_type={self._dt!r}, shape={self._shape}, "
                f"device={self._ctx.device_type!r}"
                f"{', ' + ', '.join(flags) if flags else ''})")


# dispatch_tensors reads MLTensor values, compute_dict ndarrays, in C
_core.set_types(MLTensor, np.ndarray)


@_aliased
class MLGraph:
    """A built graph (spec: `MLGraph <https://www.w3.org/TR/webnn/#api-mlgraph>`_).
    Made by :meth:`MLGraphBuilder.build`; run it with :meth:`MLContext.dispatch`
    or :meth:`MLContext.compute`.  In Jupyter it shows a picture of itself;
    :meth:`summary` tells its operators, shapes, bytes and FLOPs."""

    def __init__(self, ctx, handle):
        self._ctx, self._h = ctx, handle
        ins, outs, _ = _core.graph_info(handle)
        ins = [(_user_name(n), dt, shape) for n, dt, shape in ins]
        outs = [(_user_name(n), dt, shape) for n, dt, shape in outs]
        self._inputs = {n: (dt, shape) for n, dt, shape in ins}
        self._outputs = {n: (dt, shape) for n, dt, shape in outs}
        # compute()'s per-call work, made once: (name, NumPy dtype, shape)
        self._in_specs = [(n, DATA_TYPES[dt], shape) for n, (dt, shape) in self._inputs.items()]
        # _core.compute_dict's (and the Python path's outputs): the input
        # names in graph order; per output its name, allocator (np.empty, or
        # the result cache's from 1 MiB), shape and NumPy dtype
        outs = []
        for n, (dt, shape) in self._outputs.items():
            npdt = DATA_TYPES[dt]
            big = math.prod(shape) * npdt.itemsize >= _RESULT_BUFFER_MIN
            outs.append((n, _result_array if big else np.empty, tuple(shape), npdt))
        self._compute_spec = (tuple(self._inputs), tuple(outs))
        # compute()'s input and output tensors where the context's tensors
        # are not host memory (MLContext._compute_with_tensors)
        self._tensor_sets = []

    @property
    def context(self):
        """The :class:`MLContext` the graph was built for."""
        return self._ctx

    @property
    def input_descriptors(self):
        """``{name: {'data_type', 'shape'}}`` of the graph's inputs."""
        return {n: {"data_type": dt, "shape": list(s)} for n, (dt, s) in self._inputs.items()}

    @property
    def output_descriptors(self):
        """``{name: {'data_type', 'shape'}}`` of the graph's outputs."""
        return {n: {"data_type": dt, "shape": list(s)} for n, (dt, s) in self._outputs.items()}

    def destroy(self):
        """Release the graph (spec: ``destroy()``)."""
        _core.graph_destroy(self._h)
        while self._tensor_sets:  # compute()'s tensors (non-host contexts)
            try:
                tin, tout = self._tensor_sets.pop()
            except IndexError:
                break
            for t in (*tin.values(), *tout.values()):
                t.destroy()

    def summary(self):
        """A table of the graph: every operator with its label, inputs and
        outputs (data types and shapes), estimated FLOPs, the constants'
        bytes, the plan's peak intermediate memory and the chains a fusing
        backend runs as one.  Returns a :class:`webnn._display.GraphSummary`
        (``str()`` is the table; its fields hold the numbers)."""
        from . import _display
        return _display.summary(self)

    def profile(self, inputs, runs=10, warmup=1):
        """Per-step times of the compiled graph, outside the spec.

        Runs the graph ``warmup`` times untimed, then ``runs`` times on
        ``inputs`` (as :meth:`MLContext.compute` takes them), timing every
        step the backend runs: an operator, or a fused chain or conv pair as
        one row.  Returns a :class:`webnn._profile.GraphProfile`: ``str()``
        is a table (step, operators, output shape, median / min time, share),
        ``rows`` holds the numbers, ``total_ms`` the whole graph's median.
        CPU contexts only (``NotSupportedError`` elsewhere)."""
        from . import _profile
        return _profile.profile(self, inputs, runs, warmup)

    def to_dot(self):
        """The graph in Graphviz's DOT language (str)."""
        from . import _display
        return _display.to_dot(self)

    def _repr_svg_(self):
        from . import _display
        return _display.svg(self)

    def _repr_mimebundle_(self, include=None, exclude=None):
        from . import _display
        return _display.mimebundle(self)

    def __repr__(self):
        def d(items):
            return "{" + ", ".join(f"{n!r}: {dt}{list(s)}" for n, (dt, s) in items.items()) + "}"
        destroyed = ", destroyed" if _core.graph_info(self._h)[2] else ""
        view = _core.graph_view(self._h)
        nodes = f", operators={len(view['order'])}" if view else ""
        return (f"MLGraph(inputs={d(self._inputs)}, outputs={d(self._outputs)}{nodes}, "
                f"device={self._ctx.device_type!r}{destroyed})")


# ---- MLGraphBuilder ---------------------------------------------------------
@_aliased
class MLGraphBuilder:
    """Builds a graph for a context (spec: `MLGraphBuilder
    <https://www.w3.org/TR/webnn/#api-mlgraphbuilder>`_).  Every operator of
    the spec is a method (snake_case, with its camelCase alias); see
    :data:`webnn.OPERATORS`."""

    def __init__(self, context):
        if not isinstance(context, MLContext):
            raise TypeError(f"MLGraphBuilder: argument 'context': expected an MLContext, "
                            f"got {type(context).__name__}")
        self._ctx = context
        self._h = _core.builder_create(context._h)
        self._built = False

    @property
    def context(self):
        """The :class:`MLContext` the builder builds for."""
        return self._ctx

    def __repr__(self):
        return (f"MLGraphBuilder(device={self._ctx.device_type!r}, "
                f"{'built' if self._built else 'building'})")

    def input(self, name, descriptor):
        """An input operand (spec: ``input()``).

        Parameters
        ----------
        name : str
            The name used in ``dispatch()`` / ``compute()``.
        descriptor : dict
            ``MLOperandDescriptor``: ``data_type`` and ``shape``.

        Returns
        -------
        MLOperand
        """
        if not isinstance(name, str):
            raise TypeError("input: argument 'name': expected a string")
        name = _usv(name, "input: argument 'name'")
        return _core.builder_input(self._h, name, _desc(descriptor))

    def constant(self, *args, **kw):
        """A constant operand (spec: ``constant()``), in four forms:
        ``constant(descriptor, buffer)``, ``constant(tensor)`` (a constant
        :class:`MLTensor`), ``constant(data_type, value)`` (a scalar) and
        ``constant(ndarray)`` (descriptor from the array).  Data is copied;
        arrays of any byte order, buffers, array-likes and CPU DLPack
        producers are accepted; on a GPU context a CUDA DLPack producer of
        its device (a PyTorch / CuPy tensor) is copied device to device into
        a constant tensor.

        Returns
        -------
        MLOperand
        """
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
            if not isinstance(a, (str, dict, bytes, bytearray, memoryview)) and (
                    isinstance(a, np.ndarray) or hasattr(a, "__dlpack__")
                    or hasattr(a, "__array_interface__") or hasattr(a, "__array__")):
                a = _as_data(a, "constant: argument 'buffer'", self._ctx)
                if isinstance(a, _DeviceData):
                    return self._constant_device(
                        {"dataType": a.dt, "shape": list(a.shape)}, a)
                dt = _NP_TO_DT.get(a.dtype)
                if dt is None:
                    raise TypeError(f"constant: data type {a.dtype} is not an MLOperandDataType "
                                    f"({', '.join(DATA_TYPES)})")
                return _core.builder_constant(
                    self._h, {"dataType": dt, "shape": list(a.shape)}, a)
            raise TypeError(f"constant: expected an MLTensor or an ndarray, got {type(a).__name__}")
        if len(args) == 2:
            a, b = args
            if isinstance(a, dict):
                data = _as_data(b, "constant: argument 'buffer'", self._ctx)
                if isinstance(data, _DeviceData):
                    return self._constant_device(a, data)
                dt = _get(a, "data_type")
                if isinstance(dt, str) and dt in DATA_TYPES:
                    _check_dtype(data, dt, "constant: argument 'buffer'")
                return _core.builder_constant(self._h, a, data)
            if isinstance(a, str):
                return _core.builder_constant_scalar(self._h, a, b)
            raise TypeError("constant: expected (descriptor, buffer) or (data_type, value)")
        raise TypeError(f"constant: takes 1 or 2 arguments, got {len(args)}")

    def _constant_device(self, descriptor, data):
        """constant() of a CUDA producer's memory on a GPU context: a
        constant tensor copied device to device (the operand holds it)."""
        h = self._ctx._constant_device(descriptor, data, "constant: argument 'buffer'")
        return _core.builder_constant_tensor(self._h, h)

    def build(self, outputs):
        """Build the graph (spec: ``build()``); a builder builds once.

        Parameters
        ----------
        outputs : dict of str to MLOperand

        Returns
        -------
        MLGraph
        """
        if not isinstance(outputs, dict):
            raise TypeError(f"build: argument 'outputs': expected a dict of name -> MLOperand, "
                            f"got {type(outputs).__name__}")
        outputs = _usv_keys(outputs, "build: argument 'outputs'")
        g = MLGraph(self._ctx, _core.builder_build(self._h, outputs))
        self._built = True
        return g

    async def build_async(self, outputs):
        """Awaitable twin of :meth:`build`."""
        return await _in_thread(self.build, outputs)


def _where(camel, label):
    """'conv2d (label 'L')': the core writes the prefix (_core.op_prefix)."""
    if isinstance(label, str) and label:
        return _core.op_prefix(camel, label.replace("\0", "?"))
    return camel


# ---- operator methods: made from the operator table -----------------------
_DATA_TYPE_LITERAL = "DataType"
_ANNOTATION = {
    "double": "float", "number": "float", "bool": "bool", "u32": "int", "i32": "int",
    "u32_list": "Sequence[int]", "i32_list": "Sequence[int]", "f32_list": "Sequence[float]",
    "dtype": _DATA_TYPE_LITERAL, "operand": "Optional[MLOperand]",
}
_SHORT_DT = {"float32": "float32", "float16": "float16", "int32": "int32", "uint32": "uint32",
             "int64": "int64", "uint64": "uint64", "int8": "int8", "uint8": "uint8"}


def _field_annotation(row, i):
    """The Python type of option field i of an operator row (a string)."""
    kind = row["field_types"][i]
    snake, _, enum = row["fields"][i]
    if kind == "enum":
        return "Literal[" + ", ".join(repr(v) for v in enum) + "]"
    if kind == "enum_list":
        return "Sequence[Literal[" + ", ".join(repr(v) for v in enum) + "]]"
    if snake in row["list_or_one"]:
        return "Union[int, Sequence[int]]"
    return _ANNOTATION.get(kind, "Any")


def _op_signature(row):
    """(inspect.Signature, [(name, annotation, default, doc key)]) of an
    operator method: the positional parameters of the table's signature, the
    options dict, then every option as a keyword-only parameter."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    positional_fields = set()
    for snake, camel, kind, field in row["params"]:
        if kind == "operand":
            ann = "MLOperand"
        elif kind == "sequence":
            ann = "Sequence[MLOperand]"
        else:
            ann = _field_annotation(row, field)
            positional_fields.add(field)
        params.append(P(snake, P.POSITIONAL_OR_KEYWORD, annotation=ann))
    params.append(P("options", P.POSITIONAL_OR_KEYWORD, default=None,
                    annotation="Optional[Mapping[str, Any]]"))
    for i, (snake, camel, enum) in enumerate(row["fields"]):
        if i in positional_fields:
            continue
        default = row["defaults"][i]
        ann = _field_annotation(row, i)
        if default is None and not ann.startswith("Optional"):
            ann = f"Optional[{ann}]"
        params.append(P(snake, P.KEYWORD_ONLY, default=default, annotation=ann))
    params.append(P("label", P.KEYWORD_ONLY, default=None, annotation="Optional[str]"))
    ret = "List[MLOperand]" if row["returns_list"] else "MLOperand"
    return inspect.Signature(params, return_annotation=ret)


def _dtypes_text(dts):
    return ", ".join(dts) if len(dts) < len(DATA_TYPES) else "any data type"


def _wrap(text, indent="    "):
    import textwrap
    return textwrap.wrap(text, 76, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False, break_long_words=False)


def _op_doc(row, sig):
    """The method's docstring: the spec's one-line meaning, parameters and
    defaults, what it returns (the output shape rule), the data types and
    ranks of the spec's tensor limits, and the spec section's link."""
    from ._opdocs import OPDOCS
    camel = row["camel"]
    spec = OPDOCS.get(camel, {})
    summary = spec.get("summary") or f"The spec's MLGraphBuilder.{camel}()."
    if not summary.endswith("."):
        summary += "."
    lines = _wrap(summary, "") + [""]
    lines += _wrap(f"Spec: `MLGraphBuilder.{camel}() "
                   f"<{spec.get('url', 'https://www.w3.org/TR/webnn/')}>`_"
                   + (f" (camelCase alias: ``{camel}``)." if camel != row["snake"] else "."), "")
    lines += ["", "Parameters", "----------"]
    argdocs = spec.get("arguments", {})
    optdocs = spec.get("options", {})

    def describe(text):
        text = re.sub(r"^an? (MLOperand|unsigned long|long|sequence|MLOperandDataType|"
                      r"double|float)[^.]*?\.\s*", "", text)
        return text or "See the spec."

    for p in list(sig.parameters.values())[1:]:
        if p.name == "options":
            lines += ["options : dict, optional"] + _wrap(
                "The options dictionary as in JavaScript (either spelling of each "
                "member); the keywords below work too.")
            continue
        if p.name == "label":
            lines += ["label : str, optional",
                      "    A label that error messages and the graph's picture show."]
            continue
        camel_name = camel_case(p.name)
        ann = p.annotation if isinstance(p.annotation, str) else ""
        ann = ann[len("Optional["):-1] if ann.startswith("Optional[") else ann
        if p.kind == p.KEYWORD_ONLY:
            dflt = "optional" if p.default is None else f"default {p.default!r}"
            head = f"{p.name} : {ann}, {dflt}"
            text = optdocs.get(camel_name, "")
        else:
            head = f"{p.name} : {ann}"
            text = argdocs.get(camel_name, "")
        alias = f" (also ``{camel_name}``)" if camel_name != p.name else ""
        lines += [head] + _wrap(describe(text) + alias)
    lines += ["", "Returns", "-------", str(sig.return_annotation)]
    ret = spec.get("returns", "")
    ret = re.sub(r"^(an MLOperand|sequence)\.\s*", "", ret)
    if ret:
        lines += _wrap(ret)
    # data types and ranks: the spec's tensor limits table, as the core has it
    lims = []
    for name, dts, lo, hi in row["limits"]:
        rank = f"rank {lo}" if lo == hi else f"rank {lo}-{hi}"
        lims.append(f"- ``{snake_case(name)}``: {_dtypes_text(dts)}; {rank}")
    lines += ["", "Notes", "-----",
              "Data types and ranks (the spec's tensor limits; "
              "``MLContext.op_support_limits()`` tells what a context supports):", ""]
    lines += lims
    return "\n".join(lines)


def _make_op(row):
    params = row["params"]
    returns_list = row["returns_list"]
    camel, op_id = row["camel"], row["id"]
    n = len(params)
    # the names an options dict or a keyword may use: the dictionary's
    # members, label, and the positional parameters (as keywords)
    members = frozenset([k for f in row["fields"] for k in f[:2]] + ["label"])
    known = members | frozenset(k for p in params for k in p[:2])

    def method(self, *args, **kw):
        args = list(args)
        options = {}
        if len(args) > n:
            extra = args.pop()
            if len(args) != n or not (extra is None or isinstance(extra, dict)):
                label = extra.get("label") if isinstance(extra, dict) else None
                raise TypeError(f"{_where(camel, kw.get('label', label))}: takes {n} positional "
                                f"arguments and an options dict, got {len(args) + 1}")
            options = dict(extra or {})
        if "options" in kw and not any(p[0] == "options" for p in params):
            extra = kw.pop("options")
            if extra is not None and not isinstance(extra, dict):
                raise TypeError(f"{_where(camel, kw.get('label'))}: argument 'options': "
                                f"expected a dict, got {type(extra).__name__}")
            options.update(extra or {})
        if not known.issuperset(options):
            options = _known_members(options, known, _where(camel, options.get("label")),
                                     hints=members)
        if not known.issuperset(kw):
            _check_keywords(kw, known, _where(camel, kw.get("label", options.get("label"))),
                            hints=members)
        options.update(kw)
        operands = []
        for i, (snake, name, kind, _field) in enumerate(params):
            if i < len(args):
                v = args[i]
            else:
                keys = [k for k in (name, snake) if k in options]
                if not keys:
                    raise TypeError(f"{_where(camel, options.get('label'))}: argument '{name}': "
                                    f"missing required argument")
                v = options.pop(keys[0])
            if kind == "operand":
                operands.append(v)
            elif kind == "sequence":
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

    sig = _op_signature(row)
    method.__name__ = row["snake"]
    method.__qualname__ = f"MLGraphBuilder.{row['snake']}"
    method.__signature__ = sig
    # made ahead by scripts/gen_stubs.py (webnn/_opdoc_text.py, checked to be
    # current by tests/api/test_signatures.py): writing 95 docstrings at
    # import would cost ~20 ms; an operator not there yet gets them now
    method.__doc__ = _DOC_TEXT.get(row["snake"]) or _op_doc(row, sig)
    return method


try:
    from ._opdoc_text import DOCS as _DOC_TEXT
except ImportError:         # a checkout before scripts/gen_stubs.py ran
    _DOC_TEXT = {}
_OPS = {row["id"]: row for row in _core.op_table()}
OPERATORS = tuple(row["camel"] for row in _OPS.values())
for _row in _OPS.values():
    _d = _Method(_make_op(_row), (_row["snake"], _row["camel"]))
    setattr(MLGraphBuilder, _row["snake"], _d)
    setattr(MLGraphBuilder, _row["camel"], _d)
