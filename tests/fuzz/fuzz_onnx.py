"""A coverage-guided fuzzer of the ONNX importer (issue 31), on Atheris.

Each input picks a seed model (built here with onnx.helper: convolutions,
Gemm, Resize, Gather, Reshape, Loop, If, Scan, a local function, OneHot,
DFT, QuantizeLinear/DequantizeLinear, ConstantOfShape ...), mutates it as an
attacker would -- attribute values (ints, floats, strings, tensors, huge and
negative numbers), input and initializer dims and data, op types, names,
opset versions, external-data references, node order, then bytes of the
serialized ModelProto -- and loads it with webnn.onnx.load (as bytes or as a
ModelProto) under a small ImportBudget, then runs it on random inputs when
they are small.

The only outcomes allowed are a result or the exceptions the importer
documents: TypeError, webnn.NotSupportedError, MemoryError (and the spec's
webnn.DOMException subclasses that run() raises); anything else (an
IndexError, KeyError, RecursionError, UnicodeDecodeError ..., a crash, a
hang past -timeout, a file read outside the model) is a finding.

Run (make fuzz-onnx: FUZZ_ONNX_TIME seconds from tests/fuzz/onnx_corpus/,
new inputs to build/fuzz-onnx-corpus/, findings to build/fuzz-onnx-crashes/):
    python tests/fuzz/fuzz_onnx.py -max_total_time=60 build/fuzz-onnx-corpus tests/fuzz/onnx_corpus
Replay one input: python tests/fuzz/fuzz_onnx.py path/to/crash
"""
import os
import sys
import warnings

import atheris

with atheris.instrument_imports(include=["webnn"]):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    import webnn
    import webnn.onnx

warnings.simplefilter("ignore")
F, I64 = TensorProto.FLOAT, TensorProto.INT64
ALLOWED = (TypeError, webnn.NotSupportedError, MemoryError, webnn.DOMException)
BUDGET = dict(max_nodes=5000, max_const_bytes=64 << 20)
MAX_RUN_ELEMENTS = 1 << 18
CTX = webnn.ml.create_context(device_type="cpu")
MARKER = "fuzz_onnx_marker.bin"   # planted in the working directory: never read


def _vi(n, t, s):
    return helper.make_tensor_value_info(n, t, s)


def _c(a, name):
    return numpy_helper.from_array(np.asarray(a), name)


def _m(nodes, ins, outs, inits=(), opset=17, functions=()):
    g = helper.make_graph(nodes, "seed", ins, outs, list(inits))
    ops = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("local", 1)]
                                               if functions else [])
    return helper.make_model(g, opset_imports=ops, functions=list(functions))


def _seeds():
    x4 = [_vi("x", F, [1, 2, 5, 5])]
    y = [onnx.ValueInfoProto(name="y")]
    w = _c(np.ones((3, 2, 3, 3), np.float32), "w")
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Add", ["v", "v"], ["vo"]),
         helper.make_node("Identity", ["v"], ["so"])], "body",
        [_vi("i", I64, []), _vi("c", TensorProto.BOOL, []), _vi("v", F, [2])],
        [_vi("co", TensorProto.BOOL, []), _vi("vo", F, [2]), _vi("so", F, [2])])
    then_g = helper.make_graph([helper.make_node("Neg", ["x"], ["o"])], "t", [], [_vi("o", F, [2])])
    else_g = helper.make_graph([helper.make_node("Abs", ["x"], ["o2"])], "e", [], [_vi("o2", F, [2])])
    fn = helper.make_function("local", "f", ["a"], ["b"],
                              [helper.make_node("Relu", ["a"], ["t"]),
                               helper.make_node("Mul", ["t", "t"], ["b"])],
                              [helper.make_opsetid("", 17)])
    return [
        _m([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], strides=[1, 1])],
           x4, y, [w]),
        _m([helper.make_node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5)],
           [_vi("a", F, [2, 3])], y, [_c(np.ones((4, 3), np.float32), "b"),
                                      _c(np.ones(4, np.float32), "c")]),
        _m([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="cubic")], x4, y,
           [_c(np.array([1, 1, 2, 2], np.float32), "s")], opset=19),
        _m([helper.make_node("Gather", ["x", "i"], ["y"], axis=1)], [_vi("x", F, [3, 4])], y,
           [_c(np.array([0, -1, 7], np.int64), "i")]),
        _m([helper.make_node("Reshape", ["x", "s"], ["y"])], [_vi("x", F, [2, 6])], y,
           [_c(np.array([3, -1], np.int64), "s")]),
        _m([helper.make_node("Loop", ["M", "", "x"], ["y", "z"], body=body)], [_vi("x", F, [2])],
           [onnx.ValueInfoProto(name="y"), onnx.ValueInfoProto(name="z")],
           [_c(np.array(3, np.int64), "M")]),
        _m([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
           [_vi("x", F, [2])], y, [_c(np.array(True), "c")]),
        _m([helper.make_node("f", ["x"], ["y"], domain="local")], [_vi("x", F, [2, 2])], y,
           functions=[fn]),
        _m([helper.make_node("OneHot", ["i", "d", "v"], ["y"], axis=-1)],
           [_vi("i", I64, [3])], y, [_c(np.array([5], np.int64), "d"),
                                     _c(np.array([0, 1], np.float32), "v")]),
        _m([helper.make_node("DFT", ["x", "n"], ["y"], axis=1)], [_vi("x", F, [1, 8, 2])], y,
           [_c(np.array(8, np.int64), "n")]),
        _m([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
           [_vi("x", F, [2, 3])], y, [_c(np.array(0.1, np.float32), "s"),
                                      _c(np.array(3, np.uint8), "z")], opset=13),
        _m([helper.make_node("ConstantOfShape", ["s"], ["c"], value=_c(np.array([2.0], np.float32),
                                                                           "v")),
            helper.make_node("Add", ["x", "c"], ["y"])], [_vi("x", F, [2, 3])], y,
           [_c(np.array([2, 3], np.int64), "s")]),
        _m([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])], [_vi("x", F, [4, 5])], y,
           [_c(np.array([1], np.int64), "st"), _c(np.array([-1], np.int64), "en"),
            _c(np.array([1], np.int64), "ax")]),
        _m([helper.make_node("Constant", [], ["k"], value=_c(np.arange(4, dtype=np.float32), "kv")),
            helper.make_node("Pad", ["x", "p"], ["t"], mode="reflect"),
            helper.make_node("Add", ["t", "k"], ["y"])], [_vi("x", F, [2, 2])], y,
           [_c(np.array([0, 1, 0, 1], np.int64), "p")]),
    ]


SEEDS = [m.SerializeToString() for m in _seeds()]
HUGE = [0, 1, -1, 2, 3, 7, 64, 255, 4096, 65536, 2 ** 31 - 1, 2 ** 31, -2 ** 31, 2 ** 40,
        2 ** 62, -2 ** 62, 2 ** 63 - 1]
STRINGS = ["", "nearest", "linear", "cubic", "reflect", "edge", "constant", "NOTSET", "SAME_UPPER",
           "bidirectional", "\x1b[2J", "x" * 300, "\udcff"]
OP_TYPES = ["Relu", "Conv", "Gemm", "Loop", "If", "Resize", "Gather", "Reshape", "OneHot", "DFT",
            "Constant", "Expand", "Tile", "Range", "Split", "Concat", "TopK", "Einsum", "Scan",
            "LSTM", "CumSum", "Pad", "Transpose", "Softmax", "MaxPool", "f", "NoSuchOp",
            "QuantizeLinear", "DequantizeLinear", "ConstantOfShape", "Size", "Shape",
            "MatMul", "Gather", "GatherND", "GridSample", "ConvTranspose", "AveragePool",
            "DeformConv", "ScatterND", "GRU", "AffineGrid", "RoiAlign"]


def _pick(fdp, seq):
    return seq[fdp.ConsumeIntInRange(0, len(seq) - 1)]


def _nodes(m):
    out = list(m.graph.node)
    for f in m.functions:
        out.extend(f.node)
    for n in list(out):
        for a in n.attribute:
            if a.HasField("g"):
                out.extend(a.g.node)
    return out


def _mutate_attr(fdp, n):
    if not n.attribute:
        n.attribute.append(helper.make_attribute(_pick(fdp, ["axis", "mode", "perm", "size"]),
                                                 _pick(fdp, HUGE)))
        return
    a = _pick(fdp, list(n.attribute))
    k = fdp.ConsumeIntInRange(0, 6)
    if k == 0:
        a.i = _pick(fdp, HUGE)
    elif k == 1:
        a.f = fdp.ConsumeFloat()
    elif k == 2:
        a.s = _pick(fdp, STRINGS).encode("utf-8", "surrogateescape")
    elif k == 3:
        del a.ints[:]
        a.ints.extend(_pick(fdp, HUGE) for _ in range(fdp.ConsumeIntInRange(0, 6)))
    elif k == 4:
        a.type = fdp.ConsumeIntInRange(0, 14)
    elif k == 5:
        a.name = _pick(fdp, ["axis", "axes", "mode", "perm", "pads", "to", "body", "value", "x"])
    else:
        n.attribute.remove(a)


def _mutate_tensor(fdp, t):
    k = fdp.ConsumeIntInRange(0, 5)
    if k == 0:
        del t.dims[:]
        t.dims.extend(_pick(fdp, HUGE) for _ in range(fdp.ConsumeIntInRange(0, 4)))
    elif k == 1:
        t.raw_data = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
    elif k == 2:
        t.data_type = fdp.ConsumeIntInRange(0, 25)
    elif k == 3:
        t.data_location = TensorProto.EXTERNAL
        del t.external_data[:]
        for key, v in (("location", _pick(fdp, [MARKER, "/etc/passwd", "../" + MARKER, ""])),
                       ("offset", str(_pick(fdp, HUGE))), ("length", str(_pick(fdp, HUGE)))):
            e = t.external_data.add()
            e.key, e.value = key, v
    elif k == 4:
        arr = np.asarray([_pick(fdp, HUGE) for _ in range(fdp.ConsumeIntInRange(1, 4))], np.int64)
        t.CopyFrom(numpy_helper.from_array(arr, t.name))
    else:
        t.name = _pick(fdp, ["x", "y", "w", "", "s", t.name + "_"])


def _mutate(fdp, m):
    for _ in range(fdp.ConsumeIntInRange(0, 6)):
        k = fdp.ConsumeIntInRange(0, 9)
        nodes = _nodes(m)
        if k <= 2 and nodes:
            _mutate_attr(fdp, _pick(fdp, nodes))
        elif k == 3 and m.graph.initializer:
            _mutate_tensor(fdp, _pick(fdp, list(m.graph.initializer)))
        elif k == 4 and m.graph.input:
            vi = _pick(fdp, list(m.graph.input))
            dims = vi.type.tensor_type.shape.dim
            if dims:
                d = _pick(fdp, list(dims))
                if fdp.ConsumeBool():
                    d.dim_value = _pick(fdp, HUGE[:12])
                else:
                    d.dim_param = _pick(fdp, ["N", "", "x"])
            vi.type.tensor_type.elem_type = _pick(fdp, [1, 1, 1, 6, 7, 2, 3, 9, 10, 11])
        elif k == 5 and nodes:
            _pick(fdp, nodes).op_type = _pick(fdp, OP_TYPES)
        elif k == 6 and nodes:
            n = _pick(fdp, nodes)
            names = [i for x in nodes for i in list(x.input) + list(x.output)] + ["", "nope"]
            if n.input and fdp.ConsumeBool():
                n.input[fdp.ConsumeIntInRange(0, len(n.input) - 1)] = _pick(fdp, names)
            else:
                n.input.append(_pick(fdp, names))
        elif k == 7:
            m.opset_import[0].version = _pick(fdp, [1, 6, 7, 10, 11, 13, 17, 19, 21, 99, 0])
        elif k == 8 and len(m.graph.node) > 1:
            n = m.graph.node[0]
            rest = list(m.graph.node)[1:]
            del m.graph.node[:]
            m.graph.node.extend(rest + [n])
        elif k == 9 and nodes:
            t = _pick(fdp, nodes)
            for a in t.attribute:
                if a.HasField("t"):
                    _mutate_tensor(fdp, a.t)


def _flip_bytes(fdp, data):
    b = bytearray(data)
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        if b:
            b[fdp.ConsumeIntInRange(0, len(b) - 1)] = fdp.ConsumeIntInRange(0, 255)
    return bytes(b)


def _random_feed(rng, dt, shape):
    dtype = webnn.DATA_TYPES[dt]
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-3, 10, size=shape).astype(dtype)


def TestOneInput(data):
    fdp = atheris.FuzzedDataProvider(data)
    m = onnx.ModelProto()
    m.ParseFromString(_pick(fdp, SEEDS))
    _mutate(fdp, m)
    form = fdp.ConsumeIntInRange(0, 3)   # a ModelProto, bytes, bytes with flipped bytes
    src = m if form == 0 else m.SerializeToString() if form < 3 else \
        _flip_bytes(fdp, m.SerializeToString())
    try:
        model = webnn.onnx.load(src, CTX, budget=webnn.onnx.ImportBudget(**BUDGET))
    except ALLOWED:
        return
    sizes = [int(np.prod(s, dtype=np.float64)) for _, s in list(model.inputs.values()) +
             list(model.outputs.values())]
    if any(s > MAX_RUN_ELEMENTS for s in sizes):
        return
    rng = np.random.default_rng(len(data))
    feeds = {n: _random_feed(rng, dt, s) for n, (dt, s) in model.inputs.items()}
    try:
        model.run(feeds)
    except ALLOWED:
        pass


OPENED = []


def _audit(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes)) and \
            os.path.basename(os.fsdecode(args[0])) == MARKER:
        OPENED.append(args[0])


def TestOneInputGuarded(data):
    TestOneInput(data)
    if OPENED:
        raise AssertionError(f"the importer opened {OPENED[0]!r}, a file outside the model")


def main():
    # a marker in the working directory: a model that opens it is a finding
    with open(MARKER, "wb") as f:
        f.write(b"\0" * 64)
    sys.addaudithook(_audit)
    atheris.Setup(sys.argv, TestOneInputGuarded)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
