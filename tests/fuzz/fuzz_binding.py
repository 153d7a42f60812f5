"""A coverage-guided fuzzer of the Python binding (issue 16), on Atheris.

Each input drives a fresh context through a random sequence of API calls:
input(), constant(), every operator of the operator table with random
operands and options, build(), create_tensor(), write_tensor(),
read_tensor(), dispatch(), compute(), constant(tensor), destroy() of
tensors, graphs and contexts, and garbage collection.  Every argument is
drawn from adversarial values: objects whose __index__ / __float__ /
__len__ / __getitem__ / __iter__ mutate the container they sit in, raise,
re-enter the builder or the context (build(), destroy(), another operator),
collect garbage, or return odd types; NumPy arrays of every dtype, byte
order, stride and rank; huge and negative integers, NaN, strings, dicts.

The only outcomes allowed are a result or one of the exceptions the API
documents (TypeError, ValueError, OverflowError, MemoryError, the spec's
webnn.DOMException subclasses) or the fuzzer's own EvilError; anything else
(SystemError, AttributeError, a crash, an ASan/UBSan report, a hang) is a
finding.

Run (make fuzz-py builds the extension with clang, ASan + UBSan and
libFuzzer's coverage, then runs this for FUZZ_PY_TIME seconds):
    python tests/fuzz/fuzz_binding.py -max_total_time=60 build/fuzz-py-corpus tests/fuzz/corpus
Replay one input: python tests/fuzz/fuzz_binding.py path/to/crash
"""
import gc
import sys
import warnings

import atheris

with atheris.instrument_imports(include=["webnn"]):
    import numpy as np
    import webnn
    from webnn import _core

OPS = _core.op_table()
DTYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
NP_DTYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8",
             "float64", "bool", "int16", ">f4", ">i4", ">f2", ">u8", "<f4", "complex64")
ALLOWED = (TypeError, ValueError, OverflowError, MemoryError, webnn.DOMException)
# an unknown options-dict member is ignored with a warning (WebIDL): an
# allowed outcome, not one worth a line of output per fuzzed call
warnings.simplefilter("ignore", webnn.UnknownOptionWarning)


class EvilError(Exception):
    """Raised on purpose by the adversarial objects."""


class State:
    """What one input has made so far (everything the actions pick from)."""

    def __init__(self, fdp):
        self.fdp = fdp
        self.ctx = webnn.ml.create_context()
        self.contexts = [self.ctx]
        self.builders = [webnn.MLGraphBuilder(self.ctx)]
        self.operands = []
        self.graphs = []
        self.tensors = []
        self.depth = 0

    def pick(self, seq):
        return seq[self.fdp.ConsumeIntInRange(0, len(seq) - 1)] if seq else None

    def close(self):
        for c in self.contexts:
            c.destroy()


# ---- adversarial values -------------------------------------------------------
def side_effect(st, holder):
    """Something an adversarial dunder does before it answers."""
    k = st.fdp.ConsumeIntInRange(0, 9)
    if k == 0 and holder is not None:
        holder.clear()
    elif k == 1 and holder is not None:
        holder.extend([1] * st.fdp.ConsumeIntInRange(0, 300))
    elif k == 2:
        raise EvilError("raised by __index__")
    elif k == 3:
        gc.collect()
    elif k == 4 and st.depth < 2:
        st.depth += 1
        try:
            action(st)  # re-enter the API: build(), destroy(), another operator...
        except ALLOWED + (EvilError,):
            pass
        finally:
            st.depth -= 1
    elif k == 5 and st.builders:
        b = st.pick(st.builders)
        outs = {f"o{i}": o for i, o in enumerate(st.operands[-3:])}
        try:
            st.graphs.append(b.build(outs))
        except ALLOWED:
            pass
    elif k == 6 and st.tensors:
        st.pick(st.tensors).destroy()
    elif k == 7 and st.graphs:
        st.pick(st.graphs).destroy()


def evil_number(st, holder, as_float):
    ret_kind = st.fdp.ConsumeIntInRange(0, 5)
    rets = [st.fdp.ConsumeIntInRange(0, 8), -1, 2 ** 70, "two", 2.5, None]
    ret = rets[ret_kind]

    class EvilNumber:
        def __index__(self):
            side_effect(st, holder)
            return ret

        def __float__(self):
            side_effect(st, holder)
            return ret if isinstance(ret, float) else float(ret_kind)

        def __int__(self):
            return self.__index__()

    return EvilNumber()


def evil_sequence(st, items):
    lie = st.fdp.ConsumeIntInRange(-2, 3)

    class EvilSeq:
        def __len__(self):
            side_effect(st, items)
            return max(0, len(items) + lie)

        def __getitem__(self, i):
            if st.fdp.ConsumeIntInRange(0, 5) == 0:
                side_effect(st, items)
            return items[i]

        def __iter__(self):
            side_effect(st, items)
            return iter(list(items))

    return EvilSeq()


def np_array(st):
    dt = st.pick(NP_DTYPES)
    rank = st.fdp.ConsumeIntInRange(0, 4)
    shape = [st.fdp.ConsumeIntInRange(0, 4) for _ in range(rank)]
    try:
        a = np.arange(int(np.prod(shape)) if shape else 1).reshape(shape).astype(dt)
    except (TypeError, ValueError):
        a = np.zeros(shape, np.float32)
    if st.fdp.ConsumeBool() and a.ndim and a.shape[-1] > 1:
        a = a[..., ::2]  # not contiguous
    return a


def value(st, depth=0):
    k = st.fdp.ConsumeIntInRange(0, 17)
    if k == 0:
        return st.fdp.ConsumeIntInRange(-3, 10)
    if k == 1:
        return st.pick([2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64, -2 ** 63, 2 ** 80, -1])
    if k == 2:
        return st.pick([0.5, float("nan"), float("inf"), -0.0, 1e300, -2.0])
    if k == 3:
        return st.fdp.ConsumeBool()
    if k == 4:
        return None
    if k == 5:
        return st.pick(["", "nchw", "nhwc", "float32", "same-upper", "floor", "\0", "\ud800"] +
                       [r["camel"] for r in OPS[:5]])
    if k in (6, 7) and depth < 2:
        items = [value(st, depth + 1) for _ in range(st.fdp.ConsumeIntInRange(0, 5))]
        return items if k == 6 else tuple(items)
    if k == 8:
        holder = []
        holder.extend(evil_number(st, holder, False) if st.fdp.ConsumeBool()
                      else st.fdp.ConsumeIntInRange(0, 4)
                      for _ in range(st.fdp.ConsumeIntInRange(0, 5)))
        return holder
    if k == 9:
        return evil_number(st, None, st.fdp.ConsumeBool())
    if k == 10:
        return evil_sequence(st, [st.fdp.ConsumeIntInRange(0, 4) for _ in range(st.fdp.ConsumeIntInRange(0, 4))])
    if k == 11:
        return np_array(st)
    if k == 12:
        return st.pick([np.int64(2), np.float32(1.5), np.array(3), np.uint8(200)])
    if k == 13:
        return st.pick(st.operands) if st.operands else None
    if k == 14:
        return {"dataType": st.pick(DTYPES), "shape": value(st, depth + 1)} if depth < 2 else {}
    if k == 15:
        return st.pick(st.tensors) if st.tensors else b"\0" * 8
    if k == 16:
        return bytearray(st.fdp.ConsumeBytes(st.fdp.ConsumeIntInRange(0, 64)))
    return object()


def shape(st):
    if st.fdp.ConsumeIntInRange(0, 5) == 0:
        return value(st)
    return [st.fdp.ConsumeIntInRange(1, 4) for _ in range(st.fdp.ConsumeIntInRange(0, 4))]


def descriptor(st):
    if st.fdp.ConsumeIntInRange(0, 6) == 0:
        return value(st)
    d = {"dataType" if st.fdp.ConsumeBool() else "data_type": st.pick(DTYPES), "shape": shape(st)}
    if st.fdp.ConsumeIntInRange(0, 6) == 0:
        d["dataType"] = st.pick(DTYPES)
    for flag in ("readable", "writable"):
        if st.fdp.ConsumeBool():
            d[flag] = st.fdp.ConsumeBool() if st.fdp.ConsumeIntInRange(0, 4) else value(st)
    return d


def buffer_for(st, d):
    try:
        dt = d.get("dataType", d.get("data_type"))
        shp = list(d["shape"])
        if int(np.prod([int(v) for v in shp], dtype=np.float64)) > 1 << 22:
            return value(st)  # not a multi-GB array of the harness's own
        if st.fdp.ConsumeIntInRange(0, 3):
            a = np.ones(shp, dt)
            return a if st.fdp.ConsumeIntInRange(0, 3) else a.astype(a.dtype.newbyteorder(">"))
    except Exception:  # noqa: BLE001 -- an adversarial descriptor: any buffer
        pass
    return value(st)


# ---- actions -----------------------------------------------------------------
def act_op(st):
    row = st.pick(OPS)
    b = st.pick(st.builders)
    args = []
    for _snake, _camel, kind, _field in row["params"]:   # the signature the core parsed
        if kind == "sequence":
            n = st.fdp.ConsumeIntInRange(0, 4)
            args.append([st.pick(st.operands) if st.operands and st.fdp.ConsumeIntInRange(0, 5) else value(st)
                         for _ in range(n)])
        elif kind == "value":
            args.append(value(st))
        else:
            args.append(st.pick(st.operands) if st.operands and st.fdp.ConsumeIntInRange(0, 5) else value(st))
    opts = {}
    for snake, camel, _enum in row["fields"]:
        if st.fdp.ConsumeIntInRange(0, 2) == 0:
            opts[snake if st.fdp.ConsumeBool() else camel] = value(st)
    if st.fdp.ConsumeIntInRange(0, 4) == 0:
        opts["label"] = value(st)
    method = getattr(b, row["snake"])
    out = method(*args, opts) if st.fdp.ConsumeBool() else method(*args, **opts)
    st.operands.extend(out if isinstance(out, list) else [out])


def act_input(st):
    st.operands.append(st.pick(st.builders).input(
        value(st) if st.fdp.ConsumeIntInRange(0, 8) == 0 else f"x{len(st.operands)}", descriptor(st)))


def act_constant(st):
    b = st.pick(st.builders)
    k = st.fdp.ConsumeIntInRange(0, 3)
    if k == 0:
        d = descriptor(st)
        st.operands.append(b.constant(d, buffer_for(st, d)))
    elif k == 1:
        st.operands.append(b.constant(st.pick(DTYPES), value(st)))
    elif k == 2:
        st.operands.append(b.constant(np_array(st)))
    else:
        st.operands.append(b.constant(st.pick(st.tensors) if st.tensors else value(st)))


def act_build(st):
    b = st.pick(st.builders)
    outs = {}
    for _ in range(st.fdp.ConsumeIntInRange(0, 4)):
        name = f"y{len(outs)}" if st.fdp.ConsumeIntInRange(0, 6) else value(st)
        outs[name if isinstance(name, (str, int, float, bool, type(None), tuple)) else "z"] = \
            st.pick(st.operands) if st.operands else value(st)
    st.graphs.append(b.build(outs))


def act_tensor(st):
    k = st.fdp.ConsumeIntInRange(0, 2)
    if k == 0:
        st.tensors.append(st.ctx.create_tensor(descriptor(st)))
    elif k == 1:
        d = descriptor(st)
        st.tensors.append(st.ctx.create_constant_tensor(d, buffer_for(st, d)))
    else:
        t = st.pick(st.tensors)
        if t is not None:
            st.ctx.write_tensor(t, buffer_for(st, {"dataType": t.data_type, "shape": t.shape})
                                if st.fdp.ConsumeBool() else value(st))


def act_read(st):
    t = st.pick(st.tensors) if st.tensors else value(st)
    if st.fdp.ConsumeBool():
        st.ctx.read_tensor(t)
    else:
        st.ctx.read_tensor(t, np_array(st) if st.fdp.ConsumeBool() else value(st))


def act_dispatch(st):
    g = st.pick(st.graphs) if st.graphs else value(st)
    ins, outs = {}, {}
    if isinstance(g, webnn.MLGraph) and st.fdp.ConsumeIntInRange(0, 3):
        for name, d in g.input_descriptors.items():
            ins[name] = st.ctx.create_tensor({**d, "writable": True}) if st.fdp.ConsumeIntInRange(0, 4) \
                else st.pick(st.tensors)
        for name, d in g.output_descriptors.items():
            outs[name] = st.ctx.create_tensor({**d, "readable": True}) if st.fdp.ConsumeIntInRange(0, 4) \
                else st.pick(st.tensors)
        st.tensors.extend(v for v in list(ins.values()) + list(outs.values()) if v is not None)
    else:
        for _ in range(st.fdp.ConsumeIntInRange(0, 3)):
            ins[f"x{len(ins)}"] = st.pick(st.tensors) if st.tensors else value(st)
    if st.fdp.ConsumeBool():
        st.ctx.dispatch(g, ins, outs)
    else:
        arrays = {}
        if isinstance(g, webnn.MLGraph):
            for name, d in g.input_descriptors.items():
                arrays[name] = buffer_for(st, d)
        st.ctx.compute(g, arrays)


def act_destroy(st):
    k = st.fdp.ConsumeIntInRange(0, 3)
    if k == 0 and st.tensors:
        st.pick(st.tensors).destroy()
    elif k == 1 and st.graphs:
        st.pick(st.graphs).destroy()
    elif k == 2:
        st.pick(st.contexts).destroy()
    else:
        st.ctx = webnn.ml.create_context()
        st.contexts.append(st.ctx)
        st.builders.append(webnn.MLGraphBuilder(st.ctx))


def act_gc(st):
    if st.fdp.ConsumeBool():
        st.operands = st.operands[: st.fdp.ConsumeIntInRange(0, len(st.operands))]
        st.tensors = st.tensors[: st.fdp.ConsumeIntInRange(0, len(st.tensors))]
    gc.collect()


def act_context(st):
    opts = {}
    for key in ("deviceType", "device_type", "powerPreference", "power_preference"):
        if st.fdp.ConsumeIntInRange(0, 3) == 0:
            opts[key] = st.pick(["cpu", "gpu", "npu", "default", "low-power", "high-performance"]) \
                if st.fdp.ConsumeBool() else value(st)
    c = webnn.ml.create_context(opts) if st.fdp.ConsumeBool() else webnn.ml.create_context(**opts)
    st.contexts.append(c)
    if st.fdp.ConsumeBool():
        c.op_support_limits()


def act_builder(st):
    st.builders.append(webnn.MLGraphBuilder(st.pick(st.contexts) if st.fdp.ConsumeIntInRange(0, 3)
                                            else value(st)))


ACTIONS = (act_op, act_op, act_op, act_op, act_input, act_input, act_constant, act_build,
           act_build, act_tensor, act_read, act_dispatch, act_destroy, act_gc, act_builder,
           act_context)


def action(st):
    ACTIONS[st.fdp.ConsumeIntInRange(0, len(ACTIONS) - 1)](st)


def TestOneInput(data):
    fdp = atheris.FuzzedDataProvider(data)
    st = State(fdp)
    try:
        for _ in range(fdp.ConsumeIntInRange(1, 24)):
            try:
                action(st)
            except ALLOWED + (EvilError,):
                pass
    finally:
        st.close()


def main():
    atheris.Setup(sys.argv, TestOneInput)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
