"""Weights taken from an .onnx file's bytes without a copy (issue 31's load
speed): the offsets of the main graph's initializers' raw_data in the file,
found by walking the protobuf wire format (ModelProto.graph = 7,
GraphProto.initializer = 5, TensorProto.name = 8, raw_data = 9), so that each
becomes a read-only NumPy view of the bytes the file was read into instead
of a copy made by TensorProto.raw_data.  Anything unexpected (a group, a
second graph field, a repeated name, a truncated field) gives no offsets:
the caller falls back to onnx.numpy_helper."""
from __future__ import annotations

import os
import sys
from typing import Dict, Iterator, List, Optional, Tuple

import numpy as np
from onnx import TensorProto, helper


class _Bad(Exception):
    pass


def _varint(buf: bytes, i: int, end: int) -> Tuple[int, int]:
    v, shift = 0, 0
    while True:
        if i >= end or shift > 63:
            raise _Bad()
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


def _fields(buf: bytes, i: int, end: int) -> Iterator[Tuple[int, int, int, int]]:
    """(field number, wire type, start of the value, end of the value)."""
    while i < end:
        tag, i = _varint(buf, i, end)
        field, wt = tag >> 3, tag & 7
        if wt == 0:
            _, j = _varint(buf, i, end)
            yield field, wt, i, j
        elif wt == 1:
            j = i + 8
            yield field, wt, i, j
        elif wt == 5:
            j = i + 4
            yield field, wt, i, j
        elif wt == 2:
            n, i = _varint(buf, i, end)
            j = i + n
            yield field, wt, i, j
        else:
            raise _Bad()   # groups: not ONNX
        if j > end:
            raise _Bad()
        i = j


def raw_offsets(buf: bytes) -> Dict[str, Tuple[int, int]]:
    """{initializer name: (offset, length) of its raw_data in buf}."""
    out: Dict[str, Tuple[int, int]] = {}
    try:
        graphs = [(s, e) for f, wt, s, e in _fields(buf, 0, len(buf)) if f == 7 and wt == 2]
        if len(graphs) != 1:
            return {}
        seen = set()
        for f, wt, s, e in _fields(buf, *graphs[0]):
            if f != 5 or wt != 2:
                continue
            name: Optional[str] = None
            raw: Optional[Tuple[int, int]] = None
            n_raw = 0
            for tf, twt, ts, te in _fields(buf, s, e):
                if tf == 8 and twt == 2:
                    name = bytes(buf[ts:te]).decode("utf-8")
                elif tf == 9 and twt == 2:
                    raw, n_raw = (ts, te - ts), n_raw + 1
            if name is None:
                continue
            if name in seen:
                out.pop(name, None)
                continue
            seen.add(name)
            if raw is not None and n_raw == 1:
                out[name] = raw
    except (_Bad, UnicodeDecodeError):
        return {}
    return out


def view(buf: bytes, offsets: Dict[str, Tuple[int, int]], t: TensorProto) -> Optional[np.ndarray]:
    """The initializer t as a read-only view of buf, or None (fall back)."""
    where = offsets.get(t.name)
    if where is None or sys.byteorder != "little" or t.data_location != TensorProto.DEFAULT:
        return None
    if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED, TensorProto.BFLOAT16) or \
            t.data_type not in _PLAIN:
        return None
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type))
    n = 1
    for d in t.dims:
        if d < 0:
            return None
        n *= int(d)
    off, length = where
    if n * dtype.itemsize != length:
        return None
    return np.frombuffer(buf, dtype=dtype, count=n, offset=off).reshape(tuple(t.dims))


_PLAIN = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT8,
          TensorProto.UINT8, TensorProto.INT16, TensorProto.UINT16, TensorProto.INT32,
          TensorProto.UINT32, TensorProto.INT64, TensorProto.UINT64, TensorProto.BOOL}


# ---- a model file read without its weights ------------------------------------
#: bytes per element of the data types whose raw_data is taken as is
_ITEMSIZE = {TensorProto.FLOAT: 4, TensorProto.FLOAT16: 2, TensorProto.DOUBLE: 8,
             TensorProto.INT8: 1, TensorProto.UINT8: 1, TensorProto.INT16: 2,
             TensorProto.UINT16: 2, TensorProto.INT32: 4, TensorProto.UINT32: 4,
             TensorProto.INT64: 8, TensorProto.UINT64: 8, TensorProto.BOOL: 1}


class _FileBytes:
    """An open file's bytes, read on demand (pread) through one cached
    window: what the wire-format walk needs of a model without its weights."""
    WINDOW = 1 << 16

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size
        self.base, self.win = 0, b""

    def __len__(self) -> int:
        return self.size

    def _pread(self, off: int, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            b = os.pread(self.fd, n - got, off + got)
            if not b:
                raise _Bad()   # the file is shorter than its fields say
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def __getitem__(self, k):  # type: ignore[no-untyped-def]
        if isinstance(k, slice):
            start, stop = k.start, k.stop
            if self.base <= start and stop <= self.base + len(self.win):
                return self.win[start - self.base:stop - self.base]
            return self._pread(start, stop - start)
        if not self.base <= k < self.base + len(self.win):
            if not 0 <= k < self.size:
                raise _Bad()
            self.base = k
            self.win = self._pread(k, min(self.WINDOW, self.size - k))
        return self.win[k - self.base]


def _fields_at(buf, i: int, end: int) -> Iterator[Tuple[int, int, int, int, int]]:  # type: ignore[no-untyped-def]
    """(field number, wire type, start of the tag, start of the value, end)."""
    while i < end:
        t0 = i
        tag, i = _varint(buf, i, end)
        field, wt = tag >> 3, tag & 7
        if wt == 0:
            _, j = _varint(buf, i, end)
        elif wt == 1:
            j = i + 8
        elif wt == 5:
            j = i + 4
        elif wt == 2:
            n, i = _varint(buf, i, end)
            j = i + n
        else:
            raise _Bad()
        if j > end:
            raise _Bad()
        yield field, wt, t0, i, j
        i = j


def _enc_varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _len_field(field: int, payload: bytes) -> bytes:
    return _enc_varint(field << 3 | 2) + _enc_varint(len(payload)) + payload


#: {initializer name: (offset of its raw_data in the file, length, data type, dims)}
Stripped = Dict[str, Tuple[int, int, int, Tuple[int, ...]]]


def _initializer(buf, s: int, e: int, stripped: Stripped, big: int) -> bytes:  # type: ignore[no-untyped-def]
    """The TensorProto at [s, e) re-encoded without its raw_data when that is
    a plain array over `big` bytes whose size its dims and type agree with
    (recorded in `stripped`), else as it is."""
    dims: List[int] = []
    dtype, name, raw, n_raw, external = 0, None, None, 0, False
    fields = list(_fields_at(buf, s, e))
    for f, wt, t0, vs, ve in fields:
        if f == 1 and wt == 0:
            dims.append(_varint(buf, vs, ve)[0])
        elif f == 1 and wt == 2:
            i = vs
            while i < ve:
                d, i = _varint(buf, i, ve)
                dims.append(d)
        elif f == 2 and wt == 0:
            dtype = _varint(buf, vs, ve)[0]
        elif f == 8 and wt == 2:
            name = bytes(buf[vs:ve]).decode("utf-8")
        elif f == 9 and wt == 2:
            raw, n_raw = (t0, vs, ve), n_raw + 1
        elif f in (13, 14):
            external = True
    n = 1
    for d in dims:
        n *= d          # (a negative dim is a varint of 2^63 and more: no match below)
    size = _ITEMSIZE.get(dtype, 0)
    if name is None or raw is None or n_raw != 1 or external or not size or \
            any(d >= 1 << 62 for d in dims) or n * size != raw[2] - raw[1] or \
            raw[2] - raw[1] <= big or n * 4 <= big:
        return bytes(buf[s:e])
    if name in stripped:
        raise _Bad()    # a repeated name: the plain read decides
    stripped[name] = (raw[1], raw[2] - raw[1], dtype, tuple(dims))
    return b"".join(bytes(buf[t0:ve]) for f, wt, t0, vs, ve in fields if (t0, vs, ve) != raw)


def scan(fd: int, size: int, big: int = 1 << 12) -> Optional[Tuple[bytes, Stripped]]:
    """(the model's bytes without the raw_data of its main graph's plain
    initializers over `big` bytes, those initializers' places in the file),
    read from `fd` without reading those weights; None when there is nothing
    to leave out or anything is unexpected (the caller reads the whole file).
    `big` is _guard.skeleton's threshold: every tensor left out here is one
    the checker sees as a typed input, never as an initializer without data."""
    if sys.byteorder != "little":
        return None
    buf = _FileBytes(fd, size)
    stripped: Stripped = {}
    try:
        top = list(_fields_at(buf, 0, size))
        if sum(1 for f, wt, *_ in top if f == 7) != 1:
            return None
        out = []
        for f, wt, t0, s, e in top:
            if f == 7 and wt == 2:
                parts = []
                for gf, gwt, g0, gs, ge in _fields_at(buf, s, e):
                    if gf == 5 and gwt == 2:
                        parts.append(_len_field(5, _initializer(buf, gs, ge, stripped, big)))
                    else:
                        parts.append(bytes(buf[g0:ge]))
                out.append(_len_field(7, b"".join(parts)))
            else:
                out.append(bytes(buf[t0:e]))
    except (_Bad, UnicodeDecodeError, OSError):
        return None
    if not stripped:
        return None
    return b"".join(out), stripped


def read_stripped(fd: int, stripped: Stripped) -> Dict[str, np.ndarray]:
    """Each left-out initializer read from the file into memory the graph's
    constant can take without a copy (webnn._core.host_buffer): read-only
    arrays, one read of the file's bytes each."""
    from webnn import _core
    out: Dict[str, np.ndarray] = {}
    for name, (off, length, dtype, dims) in stripped.items():
        hb = _core.host_buffer(length)
        mv = memoryview(hb)
        got = 0
        while got < length:
            n = os.preadv(fd, [mv[got:]], off + got)
            if n <= 0:
                raise OSError(f"initializer {name!r}: the file ended inside its data")
            got += n
        a = np.frombuffer(hb, dtype=helper.tensor_dtype_to_np_dtype(dtype)).reshape(dims)
        a.flags.writeable = False
        out[name] = a
    return out


class Weights:
    """The main graph's initializers taken without copying the model's bytes:
    arrays read from the file (read_stripped) by name, or read-only views of
    the bytes the model was given as (view)."""

    def __init__(self, arrays: Optional[Dict[str, np.ndarray]] = None,
                 buf: Optional[bytes] = None,
                 offsets: Optional[Dict[str, Tuple[int, int]]] = None) -> None:
        self.arrays = arrays or {}
        self.buf, self.offsets = buf, offsets or {}

    def array(self, t: TensorProto) -> Optional[np.ndarray]:
        """t's values, or None (the caller converts t itself)."""
        a = self.arrays.get(t.name)
        if a is not None:
            return a
        if self.buf is not None:
            return view(self.buf, self.offsets, t)
        return None
