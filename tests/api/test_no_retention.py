"""Nothing a caller passes is retained or modified, for EVERY operator of
webnn.OPERATORS (completing test_tensor.py's single-graph checks):

* the input arrays given to compute() are unchanged afterwards, and the
  arrays it returns are fresh (writing into them, or into the inputs, changes
  no later result);
* constants copy their data: arrays given to constant() and
  create_constant_tensor() and then overwritten -- before build() and again
  before compute() -- change nothing;
* the positional values and options given to an operator (lists, dicts) are
  not modified by the call;
* read_tensor(tensor, out) writes `out` only, and write_tensor() copies."""
import copy

import numpy as np
import pytest

import webnn

from ._helpers import OPS, Recipe, op_limits, parse_signature, sample


def _positional(op):
    return {n for k, n in parse_signature(OPS[op]) if k != "value"}


def _full_recipe(b, op):
    include = [n for n in op_limits(op) if n not in _positional(op)]
    return Recipe(b, op, include=include)


def _outputs(out):
    return out if isinstance(out, list) else [out]


def _data(g, seed=0):
    return {name: sample(d["data_type"], d["shape"], seed + i)
            for i, (name, d) in enumerate(sorted(g.input_descriptors.items()))}


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_compute_leaves_inputs_alone(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    outs = _outputs(_full_recipe(b, op)())
    g = b.build({f"o{i}": o for i, o in enumerate(outs)})
    inputs = _data(g)
    before = {k: v.copy() for k, v in inputs.items()}
    first = ctx.compute(g, inputs)
    for k in inputs:
        assert _same(inputs[k], before[k]), f"{op}: compute() wrote into input {k!r}"
    # the results are fresh arrays: scribbling on them, or on the inputs,
    # changes nothing computed later
    kept = {k: v.copy() for k, v in first.items()}
    for v in first.values():
        if v.size:
            v.reshape(-1).view(np.uint8)[:] = 0xA5
    second = ctx.compute(g, before)
    for k in kept:
        assert _same(second[k], kept[k]), f"{op}: output {k!r} changed between identical runs"
    for v in inputs.values():
        v.reshape(-1).view(np.uint8)[:] = 0x5A
    assert all(_same(kept[k], v) for k, v in ctx.compute(g, before).items())


class _Recorder:
    """A builder whose input() calls are recorded (name, descriptor)."""

    def __init__(self, builder):
        self._b, self.inputs = builder, []

    def input(self, name, desc):
        self.inputs.append((name, desc))
        return self._b.input(name, desc)

    def __getattr__(self, name):
        return getattr(self._b, name)


class _Constants(_Recorder):
    """A builder whose input() calls make constants of the given arrays (in
    the order of the calls), then overwrite the caller's array."""

    def __init__(self, builder, ctx, arrays, form):
        super().__init__(builder)
        self._ctx, self._arrays, self._form = ctx, list(arrays), form

    def input(self, name, desc):
        arr = self._arrays.pop(0)
        if self._form == "ndarray":
            c = self._b.constant(arr)
        elif self._form == "descriptor-buffer":
            c = self._b.constant(desc, arr)
        else:
            c = self._b.constant(self._ctx.create_constant_tensor(desc, arr))
        arr.reshape(-1).view(np.uint8)[:] = 0x77     # overwritten right after constant()
        return c


@pytest.mark.parametrize("op", webnn.OPERATORS)
@pytest.mark.parametrize("form", ["ndarray", "descriptor-buffer", "constant-tensor"])
def test_constants_are_copied(ctx, op, form):
    """The same operator on constants: overwriting the caller's arrays after
    constant() and again after build() gives the result of the clean data."""
    include = [n for n in op_limits(op) if n not in _positional(op)]
    rec = _Recorder(webnn.MLGraphBuilder(ctx))
    outs = _outputs(Recipe(rec, op, include=include)())
    g = rec.build({f"o{i}": o for i, o in enumerate(outs)})
    data = {name: sample(d["dataType"], d["shape"], i) for i, (name, d) in enumerate(rec.inputs)}
    want = ctx.compute(g, {k: v for k, v in data.items() if k in g.input_descriptors})

    arrays = [v.copy() for v in data.values()]
    cb = _Constants(webnn.MLGraphBuilder(ctx), ctx, arrays, form)
    outs2 = _outputs(Recipe(cb, op, include=include)())
    g2 = cb.build({f"o{i}": o for i, o in enumerate(outs2)})
    for arr in data.values():
        arr.reshape(-1).view(np.uint8)[:] = 0x33        # and the originals after build()
    got = ctx.compute(g2, {})
    for k in want:
        assert _same(got[k], want[k]), f"{op} ({form}): output {k!r} depends on the caller's array"


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_arguments_are_not_modified(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    r = _full_recipe(b, op)
    args = [list(a) if isinstance(a, list) else a for a in r.args]
    opts = dict(r.options, label="keep")
    snap_args = [copy.copy(a) if isinstance(a, list) else a for a in args]
    snap_opts = dict(opts)
    getattr(b, op)(*args, opts)
    for a, s in zip(args, snap_args):
        if isinstance(a, list):
            assert len(a) == len(s) and all(x is y or x == y for x, y in zip(a, s)), f"{op}: a list changed"
        else:
            assert a is s or a == s
    assert opts.keys() == snap_opts.keys() and all(opts[k] is snap_opts[k] for k in opts), \
        f"{op}: the options dict changed"


def test_read_tensor_into_out_writes_only_out(ctx):
    t = ctx.create_tensor({"dataType": "int32", "shape": [3, 4], "readable": True, "writable": True})
    src = np.arange(12, dtype=np.int32).reshape(3, 4)
    ctx.write_tensor(t, src)
    src[:] = -1                                           # write_tensor copied
    big = np.full(20, 99, np.int32)
    out = big[4:16].reshape(3, 4)                         # a view into a larger array
    ctx.read_tensor(t, out)
    np.testing.assert_array_equal(out, np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(big[:4], 99)
    np.testing.assert_array_equal(big[16:], 99)
    again = ctx.read_tensor(t)
    out[:] = 0
    np.testing.assert_array_equal(again, np.arange(12).reshape(3, 4))
    t.destroy()


def test_dispatch_does_not_write_input_tensors(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [8]})
    g = b.build({"y": b.neg(x)})
    tx = ctx.create_tensor({"dataType": "float32", "shape": [8], "readable": True, "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [8], "readable": True})
    v = np.arange(8, dtype=np.float32)
    ctx.write_tensor(tx, v)
    for _ in range(3):
        ctx.dispatch(g, {"x": tx}, {"y": ty})
    np.testing.assert_array_equal(ctx.read_tensor(tx), v)
    np.testing.assert_array_equal(ctx.read_tensor(ty), -v)
    tx.destroy()
    ty.destroy()
