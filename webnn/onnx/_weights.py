"""Weights taken from an .onnx file's bytes without a copy (issue 31's load
speed): the offsets of the main graph's initializers' raw_data in the file,
found by walking the protobuf wire format (ModelProto.graph = 7,
GraphProto.initializer = 5, TensorProto.name = 8, raw_data = 9), so that each
becomes a read-only NumPy view of the bytes the file was read into instead
of a copy made by TensorProto.raw_data.  Anything unexpected (a group, a
second graph field, a repeated name, a truncated field) gives no offsets:
the caller falls back to onnx.numpy_helper."""
from __future__ import annotations

import sys
from typing import Dict, Iterator, Optional, Tuple

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
