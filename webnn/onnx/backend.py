"""webnn as an ONNX backend (onnx.backend.base.Backend), so that ONNX's own
backend test runner runs against it:

    import onnx.backend.test, webnn.onnx.backend
    onnx.backend.test.BackendTest(webnn.onnx.backend, __name__)

A model whose shapes, axes, pads ... are fed as inputs (common in ONNX's node
tests) is compiled at the first run, with those inputs bound as constants
(again whenever their values change)."""
import numpy as np
from onnx.backend.base import Backend, BackendRep, Device, DeviceType

import webnn

from ._import import _NeedShapes, _NeedStatic, load


def _context(device):
    dev = Device(device)
    if dev.type == DeviceType.CUDA:
        return webnn.ml.create_context(device_type="gpu")
    return webnn.ml.create_context(device_type="cpu")


class WebNNRep(BackendRep):
    def __init__(self, model, context):
        self.model_proto = model
        self.context = context
        inits = {t.name for t in model.graph.initializer}
        self.input_names = [i.name for i in model.graph.input if i.name not in inits]
        self.output_names = [o.name for o in model.graph.output]
        self._static = set()          # inputs bound as constants
        self._cache = {}              # bound values (and shapes) -> OnnxModel
        self._dynamic = False         # shapes taken from each run's inputs
        self.model = None
        try:
            self.model = load(model, context=context)
        except _NeedShapes:
            self._dynamic = True
        except _NeedStatic as e:
            self._static.update(e.input_names)

    def _compiled(self, feeds):
        if self.model is not None:
            return self.model, feeds
        while True:
            bound = {n: np.asarray(feeds[n]) for n in sorted(self._static)}
            shapes = {n: list(np.shape(v)) for n, v in feeds.items()} if self._dynamic else None
            key = tuple((n, a.dtype.str, a.shape, a.tobytes()) for n, a in bound.items()) + \
                tuple(sorted((n, tuple(v)) for n, v in (shapes or {}).items()))
            if key in self._cache:
                m = self._cache[key]
                break
            try:
                m = load(self.model_proto, context=self.context, input_shapes=shapes,
                         _bound=bound)
            except _NeedShapes:
                if self._dynamic:
                    raise
                self._dynamic = True
                continue
            except _NeedStatic as e:
                if set(e.input_names) <= self._static:
                    raise
                self._static.update(e.input_names)
                continue
            self._cache[key] = m
            break
        return m, {k: v for k, v in feeds.items() if k not in self._static}

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            if len(inputs) > len(self.input_names):
                raise TypeError(f"run: {len(inputs)} inputs given, the model has "
                                f"{len(self.input_names)} ({self.input_names})")
            feeds = dict(zip(self.input_names, inputs))
        feeds = {k: np.asarray(v) for k, v in feeds.items()}
        m, feeds = self._compiled(feeds)
        out = m.run(feeds)
        return tuple(out[n] for n in self.output_names)


class WebNNBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return True

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return WebNNRep(model, _context(device))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        raise NotImplementedError("run_node: build a one-node model and use run_model")

    @classmethod
    def supports_device(cls, device):
        dev = Device(device)
        if dev.type == DeviceType.CPU:
            return True
        if dev.type == DeviceType.CUDA:
            return webnn._core.device_available("gpu")
        return False


prepare = WebNNBackend.prepare
run_model = WebNNBackend.run_model
run_node = WebNNBackend.run_node
supports_device = WebNNBackend.supports_device
is_compatible = WebNNBackend.is_compatible
