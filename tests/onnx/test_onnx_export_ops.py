"""Export round trip for the operators that the WPT vectors do not exercise
(every WebNN operator is then covered by a round trip): small graphs with
seeded random inputs, computed by webnn and by ONNX Runtime on the exported
model, compared element-wise."""
import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402

F32 = {"dataType": "float32"}


def _rand(shape, dtype=np.float32, lo=-2.0, hi=2.0, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(lo, hi, shape).astype(dtype)
    return rng.integers(int(lo), int(hi), shape).astype(dtype)


def _inp(b, name, a):
    return b.input(name, {"dataType": webnn._api._NP_TO_DT[a.dtype], "shape": list(a.shape)})


# name -> function(builder, arrays) -> (outputs dict, feeds dict)
CASES = {}


def case(fn):
    CASES[fn.__name__] = fn
    return fn


def unary(opname, lo=-2.0, hi=2.0):
    def fn(b):
        x = _rand([2, 3, 4], lo=lo, hi=hi)
        return {"y": getattr(b, opname)(_inp(b, "x", x))}, {"x": x}
    fn.__name__ = opname
    return case(fn)


for _op in ("cos", "sin", "erf", "gelu", "identity", "roundEven", "sign", "softplus",
            "softsign"):
    unary(_op)
unary("tan", -1.2, 1.2)
unary("reciprocal", 0.5, 3.0)


@case
def arg_min_max(b):
    x = _rand([3, 4, 5])
    xi = _inp(b, "x", x)
    return {"a": b.arg_max(xi, 1), "b": b.arg_min(xi, 2, keep_dimensions=True,
                                                   output_data_type="int64")}, {"x": x}


@case
def pools(b):
    x = _rand([1, 2, 7, 9])
    xi = _inp(b, "x", x)
    return {"avg": b.average_pool2d(xi, window_dimensions=[3, 3], padding=[1, 1, 1, 1],
                                    strides=[2, 2]),
            "max": b.max_pool2d(xi, window_dimensions=[2, 3], strides=[2, 2],
                                output_shape_rounding="ceil"),
            "l2": b.l2_pool2d(xi, window_dimensions=[3, 2]),
            "nhwc": b.max_pool2d(b.transpose(xi, permutation=[0, 2, 3, 1]),
                                 window_dimensions=[2, 2], layout="nhwc")}, {"x": x}


@case
def cumulative_sum(b):
    x = _rand([3, 5])
    xi = _inp(b, "x", x)
    return {"a": b.cumulative_sum(xi, 1), "b": b.cumulative_sum(xi, 0, exclusive=True,
                                                                reversed=True)}, {"x": x}


@case
def quantize(b):
    x = _rand([2, 4], lo=-1, hi=1)
    scale = b.constant(np.array([[0.01, 0.02]], np.float32))
    zp = b.constant(np.array([[3, 250]], np.uint8))
    xi = _inp(b, "x", x)
    q = b.quantize_linear(xi, scale, zp)
    return {"q": q, "dq": b.dequantize_linear(q, scale, zp)}, {"x": x}


@case
def gathers_scatters(b):
    x = _rand([3, 4])
    xi = _inp(b, "x", x)
    ie = b.constant(np.array([[0, 2, 1, 0], [2, 1, 0, 1]], np.int32))
    ind = b.constant(np.array([[1, 2], [0, 3]], np.int64))
    upd = b.constant(np.array([5.0, 7.0], np.float32))
    return {"ge": b.gather_elements(xi, ie, axis=0),
            "gnd": b.gather_nd(xi, ind),
            "se": b.scatter_elements(xi, b.constant(np.array([[2, 0, 1, 1]], np.int32)),
                                     b.constant(np.ones([1, 4], np.float32)), axis=0),
            "snd": b.scatter_nd(xi, ind, upd)}, {"x": x}


@case
def gemm(b):
    a, c = _rand([4, 3]), _rand([5])
    w = _rand([5, 3], seed=1)
    ai = _inp(b, "a", a)
    return {"y": b.gemm(ai, b.constant(w), c=b.constant(c), alpha=0.5, beta=2.0,
                        b_transpose=True)}, {"a": a}


@case
def logic(b):
    x, y = _rand([2, 5], np.int32, -2, 3), _rand([2, 5], np.int32, -2, 3, seed=1)
    xi, yi = _inp(b, "x", x), _inp(b, "y", y)
    t, u = b.greater(xi, yi), b.equal(xi, yi)
    return {"and": b.logical_and(t, u), "or": b.logical_or(t, u), "xor": b.logical_xor(t, u),
            "ne": b.not_equal(xi, yi), "where": b.where(t, xi, yi)}, {"x": x, "y": y}


@case
def nan_inf(b):
    x = np.array([0.0, np.inf, -np.inf, np.nan, 1.0, -3.0], np.float32)
    xi = _inp(b, "x", x)
    return {"nan": b.is_nan(xi), "inf": b.is_infinite(xi)}, {"x": x}


@case
def pad_modes(b):
    x = _rand([2, 3, 4])
    xi = _inp(b, "x", x)
    return {m: b.pad(xi, [1, 0, 2], [0, 2, 1], mode=m, **({"value": 1.5} if m == "constant"
                                                            else {}))
            for m in ("constant", "edge", "reflection")}, {"x": x}


@case
def prelu(b):
    x = _rand([2, 3, 4])
    return {"y": b.prelu(_inp(b, "x", x), b.constant(_rand([3, 1], seed=2)))}, {"x": x}


@case
def resample(b):
    x = _rand([1, 2, 3, 4])
    xi = _inp(b, "x", x)
    return {"near": b.resample2d(xi, sizes=[6, 8]),
            "lin": b.resample2d(xi, mode="linear", scales=[2.0, 1.5]),
            "axes": b.resample2d(xi, mode="linear", sizes=[5, 6], axes=[1, 2])}, {"x": x}


@case
def reverse_tile_tri(b):
    x = _rand([3, 4])
    xi = _inp(b, "x", x)
    return {"rev": b.reverse(xi, axes=[1]), "revall": b.reverse(xi),
            "tile": b.tile(xi, [2, 3]), "triu": b.triangular(xi, upper=True, diagonal=1),
            "tril": b.triangular(xi, upper=False, diagonal=-1)}, {"x": x}


@case
def conv_layouts(b):
    x = _rand([1, 5, 6, 3])
    xi = _inp(b, "x", x)
    f = b.constant(_rand([2, 3, 3, 4], seed=3))          # hwio
    ft = b.constant(_rand([4, 2, 2, 3], seed=4))         # ohwi for convTranspose
    return {"conv": b.conv2d(xi, f, input_layout="nhwc", filter_layout="hwio",
                             padding=[1, 0, 0, 1], strides=[2, 1]),
            "convt": b.conv_transpose2d(xi, ft, input_layout="nhwc", filter_layout="ohwi",
                                        strides=[2, 2], output_sizes=[11, 13])}, {"x": x}


@case
def gru(b):
    steps, batch, inp, hid = 3, 2, 4, 5
    x = _rand([steps, batch, inp])
    xi = _inp(b, "x", x)
    w = b.constant(_rand([2, 3 * hid, inp], seed=5, lo=-0.5, hi=0.5))
    r = b.constant(_rand([2, 3 * hid, hid], seed=6, lo=-0.5, hi=0.5))
    bias = b.constant(_rand([2, 3 * hid], seed=7))
    rb = b.constant(_rand([2, 3 * hid], seed=8))
    outs = b.gru(xi, w, r, steps, hid, bias=bias, recurrent_bias=rb, return_sequence=True,
                 direction="both")
    outs2 = b.gru(xi, b.constant(_rand([1, 3 * hid, inp], seed=9)),
                  b.constant(_rand([1, 3 * hid, hid], seed=10)), steps, hid,
                  reset_after=False, layout="rzn")
    return {"h": outs[0], "seq": outs[1], "h2": outs2[0]}, {"x": x}


@case
def gru_cell(b):
    batch, inp, hid = 2, 3, 4
    x, h = _rand([batch, inp]), _rand([batch, hid], seed=1)
    return {"h": b.gru_cell(_inp(b, "x", x), b.constant(_rand([3 * hid, inp], seed=2)),
                            b.constant(_rand([3 * hid, hid], seed=3)), _inp(b, "h0", h), hid,
                            bias=b.constant(_rand([3 * hid], seed=4)))}, {"x": x, "h0": h}


@case
def lstm(b):
    steps, batch, inp, hid = 3, 2, 4, 3
    x = _rand([steps, batch, inp])
    xi = _inp(b, "x", x)
    outs = b.lstm(xi, b.constant(_rand([2, 4 * hid, inp], seed=5, lo=-.5, hi=.5)),
                  b.constant(_rand([2, 4 * hid, hid], seed=6, lo=-.5, hi=.5)), steps, hid,
                  bias=b.constant(_rand([2, 4 * hid], seed=7)),
                  peephole_weight=b.constant(_rand([2, 3 * hid], seed=8)),
                  return_sequence=True, direction="both")
    outs2 = b.lstm(xi, b.constant(_rand([1, 4 * hid, inp], seed=9)),
                   b.constant(_rand([1, 4 * hid, hid], seed=10)), steps, hid, layout="ifgo",
                   direction="backward")
    return {"h": outs[0], "c": outs[1], "seq": outs[2], "h2": outs2[0], "c2": outs2[1]}, \
        {"x": x}


@case
def lstm_cell(b):
    batch, inp, hid = 2, 3, 4
    x, h, c = _rand([batch, inp]), _rand([batch, hid], seed=1), _rand([batch, hid], seed=2)
    outs = b.lstm_cell(_inp(b, "x", x), b.constant(_rand([4 * hid, inp], seed=3)),
                       b.constant(_rand([4 * hid, hid], seed=4)), _inp(b, "h0", h),
                       _inp(b, "c0", c), hid, bias=b.constant(_rand([4 * hid], seed=5)))
    return {"h": outs[0], "c": outs[1]}, {"x": x, "h0": h, "c0": c}


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context()


@pytest.mark.parametrize("name", sorted(CASES))
def test_export_op(ctx, name):
    b = webnn.MLGraphBuilder(ctx)
    outputs, feeds = CASES[name](b)
    graph = b.build(outputs)
    ours = ctx.compute(graph, feeds)
    model = webnn.onnx.export(graph)
    import onnx
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    for k, v in ours.items():
        t = np.asarray(theirs[k])
        assert t.dtype == v.dtype and t.shape == v.shape, (k, t.dtype, t.shape, v.dtype, v.shape)
        if v.dtype.kind == "f":
            np.testing.assert_allclose(t, v, rtol=1e-5, atol=1e-5, err_msg=k)
        else:
            np.testing.assert_array_equal(t, v, err_msg=k)


def test_export_builder_outputs_and_errors(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 2]})
    y = b.relu(b.add(x, b.constant(np.ones((2, 2), np.float32))))
    m1 = webnn.onnx.export({"y": y})
    m2 = webnn.onnx.export((b, {"y": y}))
    assert [n.op_type for n in m1.graph.node] == [n.op_type for n in m2.graph.node]
    assert [o.name for o in m1.graph.output] == ["y"]
    with pytest.raises(TypeError):
        webnn.onnx.export("graph")


def test_export_constants_from_any_buffer(ctx):
    """Constants given as non-contiguous arrays, raw uint8 bytes or bytes
    objects are exported with their values."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    c1 = b.constant({"dataType": "float32", "shape": [2, 3]}, base[:2, :3])   # a view
    raw = np.arange(6, dtype=np.float32).view(np.uint8)
    c2 = b.constant({"dataType": "float32", "shape": [2, 3]}, raw)            # Uint8Array form
    c3 = b.constant({"dataType": "float32", "shape": [2, 3]}, np.ones(6, np.float32).tobytes())
    g = b.build({"y": b.add(b.add(b.add(x, c1), c2), c3)})
    feeds = {"x": np.zeros((2, 3), np.float32)}
    ours = ctx.compute(g, feeds)["y"]
    sess = ort.InferenceSession(webnn.onnx.export(g).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    np.testing.assert_array_equal(sess.run(None, feeds)[0], ours)
