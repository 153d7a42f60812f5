"""Recording of builder calls, for export.

The C core does not expose a built graph's nodes to Python, so export reads
what the builder was asked to do: importing webnn.onnx wraps the calls that
webnn._api makes into webnn._core (builder_input, builder_constant*,
builder_op, builder_build) and keeps, per MLGraphBuilder, the operators in
call order with their operands, options and results; MLGraph objects built
afterwards carry that record (graph._onnx_record).  A call is recorded only
after the core accepted it, so the record is exactly the valid graph.

Cost: the record keeps a reference to each operand and a copy of each
constant's bytes (a read-only ndarray is kept without copying).  Graphs
built before ``import webnn.onnx`` have no record and cannot be exported."""
import threading
import weakref

import numpy as np

import webnn
from webnn import _api, _core

_OPS = {row["id"]: row for row in _core.op_table()}


class Record:
    """What one builder did.  entries: list of tuples
      ("input", operand, name)
      ("constant", operand, ndarray)
      ("op", op_row, operands, options, outputs)
    outputs: {name: operand} once built."""

    def __init__(self):
        self.entries = []
        self.outputs = None
        self.lock = threading.Lock()


_by_builder = weakref.WeakValueDictionary()   # id(builder handle) -> Record
_pending = {}                                  # id(graph handle) -> Record (until MLGraph wraps it)
_orig = {}


def _record_for(h):
    return _by_builder.get(id(h))


def _desc_get(d, snake):
    return _api._get(d, snake)


def _wrap(name, after):
    orig = getattr(_core, name)
    _orig[name] = orig

    def hooked(*args):
        result = orig(*args)
        rec = _record_for(args[0])
        if rec is not None:
            try:
                after(rec, result, *args)
            except Exception:   # a record that cannot be kept makes the graph unexportable
                rec.entries.append(("broken", None, None))
        return result

    hooked.__name__ = name
    setattr(_core, name, hooked)


def _after_input(rec, op, h, name, desc):
    rec.entries.append(("input", op, name))


def _array(desc, buf):
    dt = webnn.DATA_TYPES[_desc_get(desc, "data_type")]
    shape = tuple(int(d) for d in _desc_get(desc, "shape"))
    if isinstance(buf, np.ndarray) and not buf.flags.writeable and buf.dtype == dt \
            and buf.flags.c_contiguous:
        return buf.reshape(shape)
    if isinstance(buf, np.ndarray):
        raw = np.ascontiguousarray(buf).tobytes()
    else:
        raw = memoryview(buf).tobytes()
    a = np.frombuffer(raw, dtype=dt)
    return a.reshape(shape)


def _after_constant(rec, op, h, desc, buf):
    rec.entries.append(("constant", op, _array(desc, buf)))


def _after_constant_scalar(rec, op, h, dt, value):
    rec.entries.append(("constant", op, np.array(value, dtype=webnn.DATA_TYPES[dt])))


def _after_constant_tensor(rec, op, h, tensor):
    rec.entries.append(("constant_tensor", op, None))


def _after_op(rec, outs, h, op_id, operands, options, label):
    rec.entries.append(("op", _OPS[op_id], list(operands), dict(options or {}), list(outs)))


def _after_build(rec, graph_h, h, outputs):
    rec.outputs = dict(outputs)
    _pending[id(graph_h)] = (graph_h, rec)


_wrap("builder_input", _after_input)
_wrap("builder_constant", _after_constant)
_wrap("builder_constant_scalar", _after_constant_scalar)
_wrap("builder_constant_tensor", _after_constant_tensor)
_wrap("builder_op", _after_op)
_wrap("builder_build", _after_build)

_builder_init = _api.MLGraphBuilder.__init__
_graph_init = _api.MLGraph.__init__


def _builder_init_hook(self, context):
    _builder_init(self, context)
    rec = Record()
    self._onnx_record = rec             # the builder owns its record
    _by_builder[id(self._h)] = rec


def _graph_init_hook(self, ctx, handle):
    _graph_init(self, ctx, handle)
    entry = _pending.pop(id(handle), None)
    if entry is not None and entry[0] is handle:
        self._onnx_record = entry[1]


_api.MLGraphBuilder.__init__ = _builder_init_hook
_api.MLGraph.__init__ = _graph_init_hook
