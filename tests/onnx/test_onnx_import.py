"""webnn.onnx.load: the API (path, bytes, ModelProto, input_shapes by name and
by dim_param, run, run_async, inputs/outputs/graph), external data, folding,
and NotSupportedError for what WebNN cannot express (naming node, op type
and why)."""
import asyncio

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402


def _model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


F = TensorProto.FLOAT


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context()


def _gemm_model():
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "w")
    b = numpy_helper.from_array(np.ones(4, np.float32), "b")
    return _model([helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1, alpha=0.5)],
                  [_vi("x", F, ["batch", 3])], [_vi("y", F, None)], [w, b])


def test_load_path_bytes_proto(ctx, tmp_path):
    m = _gemm_model()
    path = tmp_path / "gemm.onnx"
    onnx.save(m, path)
    x = np.random.default_rng(0).random((5, 3), dtype=np.float32)
    want = 0.5 * x @ np.arange(12, dtype=np.float32).reshape(4, 3).T + 1
    for source in (m, m.SerializeToString(), str(path), path):
        model = webnn.onnx.load(source, context=ctx, input_shapes={"batch": 5})
        assert model.inputs == {"x": ("float32", (5, 3))}
        assert model.outputs == {"y": ("float32", (5, 4))}
        assert isinstance(model.graph, webnn.MLGraph)
        out = model.run({"x": x})
        assert list(out) == ["y"]
        np.testing.assert_allclose(out["y"], want, rtol=1e-6)
    by_name = webnn.onnx.load(m, context=ctx, input_shapes={"x": [2, 3]})
    assert by_name.inputs["x"] == ("float32", (2, 3))
    out = asyncio.run(by_name.run_async({"x": x[:2]}))
    np.testing.assert_allclose(out["y"], want[:2], rtol=1e-6)


def test_default_context():
    m = webnn.onnx.load(_gemm_model(), input_shapes={"batch": 1})
    assert m.context.device_type in ("cpu", "gpu")


def test_dynamic_dim_needs_a_shape(ctx):
    with pytest.raises(webnn.NotSupportedError, match="'batch'.*input_shapes"):
        webnn.onnx.load(_gemm_model(), context=ctx)


def test_external_data(ctx, tmp_path):
    m = _gemm_model()
    onnx.save(m, tmp_path / "ext.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.bin", size_threshold=0)
    assert (tmp_path / "ext.bin").exists()
    model = webnn.onnx.load(tmp_path / "ext.onnx", context=ctx, input_shapes={"batch": 1})
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(model.run({"x": x})["y"],
                               webnn.onnx.load(_gemm_model(), ctx, {"batch": 1}).run({"x": x})["y"])


def test_shape_ops_fold(ctx):
    # y = Reshape(x, Concat(Shape(x)[0], -1)) + ConstantOfShape(Shape(x)) + Range
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["r"]),
        helper.make_node("Shape", ["r"], ["rs"]),
        helper.make_node("ConstantOfShape", ["rs"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Add", ["r", "ones"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "zero1"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1")]
    m = webnn.onnx.load(_model(nodes, [_vi("x", F, [2, 3, 4])], [_vi("y", F, None)], inits),
                        context=ctx)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(m.run({"x": x})["y"], x.reshape(2, 12) + 1)


def test_old_softmax_axis_semantics(ctx):
    # opset < 13: the input is coerced to 2-D at `axis`
    m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [_vi("x", F, [2, 3, 4])],
               [_vi("y", F, None)], opset=11)
    x = np.random.default_rng(1).random((2, 3, 4), dtype=np.float32)
    e = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(1, keepdims=True))
    want = (e / e.sum(1, keepdims=True)).reshape(2, 3, 4)
    np.testing.assert_allclose(webnn.onnx.load(m, ctx).run({"x": x})["y"], want, rtol=1e-5)


@pytest.mark.parametrize("elem, word", [(TensorProto.DOUBLE, "DOUBLE"), (TensorProto.BOOL, "BOOL"),
                                        (TensorProto.STRING, "STRING")])
def test_types_webnn_lacks(ctx, elem, word):
    m = _model([helper.make_node("Identity", ["x"], ["y"])], [_vi("x", elem, [2])],
               [_vi("y", elem, None)])
    with pytest.raises(webnn.NotSupportedError, match=f"'x'.*{word}.*WebNN lacks"):
        webnn.onnx.load(m, ctx)


def test_bool_output_is_not_supported_but_internal_bool_is(ctx):
    nodes = [helper.make_node("Greater", ["x", "y"], ["g"]),
             helper.make_node("Where", ["g", "x", "y"], ["m"])]
    ins = [_vi("x", F, [4]), _vi("y", F, [4])]
    m = webnn.onnx.load(_model(nodes, ins, [_vi("m", F, None)]), ctx)
    x, y = np.array([1, 5, 2, 8], np.float32), np.array([3, 1, 2, 9], np.float32)
    np.testing.assert_array_equal(m.run({"x": x, "y": y})["m"], np.maximum(x, y))
    with pytest.raises(webnn.NotSupportedError, match="output 'g'.*BOOL"):
        webnn.onnx.load(_model(nodes, ins, [_vi("g", TensorProto.BOOL, None)]), ctx)


def test_unmappable_operator_names_node_and_op(ctx):
    m = _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")],
               [_vi("x", F, [5])], [_vi("y", TensorProto.INT64, None)])
    with pytest.raises(webnn.NotSupportedError, match=r"node 'nz' \(NonZero\): .*depends on the data"):
        webnn.onnx.load(m, ctx)
    m = _model([helper.make_node("Det", ["x"], ["y"])], [_vi("x", F, [3, 3])], [_vi("y", F, None)])
    with pytest.raises(webnn.NotSupportedError, match=r"\(Det\): no WebNN mapping"):
        webnn.onnx.load(m, ctx)


def test_runtime_shape_input_is_not_supported_by_load(ctx):
    m = _model([helper.make_node("Reshape", ["x", "s"], ["y"])],
               [_vi("x", F, [2, 3]), _vi("s", TensorProto.INT64, [2])], [_vi("y", F, None)])
    with pytest.raises(webnn.NotSupportedError, match=r"\(Reshape\): shape \('s'\) must be known"):
        webnn.onnx.load(m, ctx)


def test_conv_auto_pad_and_gemm_transposes_against_onnxruntime(ctx):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.random((4, 3, 3, 3), dtype=np.float32), "w")
    g = numpy_helper.from_array(rng.random((16, 5), dtype=np.float32), "g")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], auto_pad="SAME_LOWER",
                              strides=[2, 2]),
             helper.make_node("LRN", ["p"], ["l"], size=3),
             helper.make_node("Flatten", ["l"], ["f"]),
             helper.make_node("Gemm", ["g", "f"], ["y"], transA=1, transB=1)]
    m = _model(nodes, [_vi("x", F, [2, 3, 7, 7])], [_vi("y", F, None)], [w, g])
    # g^T [5, 16] times f^T [16, 2]: y [5, 2]
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    x = rng.random((2, 3, 7, 7), dtype=np.float32)
    ours = webnn.onnx.load(m, ctx).run({"x": x})["y"]
    np.testing.assert_allclose(ours, sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["light_inception_v1", "light_shufflenet", "light_resnet50"])
def test_shipped_model_reexported_runs_in_onnxruntime(ctx, name):
    """Import a model the onnx package ships, export the MLGraph it became,
    and run that in ONNX Runtime: the same outputs.  (Not SqueezeNet: with the
    light models' constant weights its logits reach 1e7 and are equal in exact
    arithmetic, so the last-bit differences of any two implementations decide
    its softmax.)"""
    ort = pytest.importorskip("onnxruntime")
    import os
    path = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        name + ".onnx")
    m = webnn.onnx.load(path, context=ctx)
    (iname, (dt, shape)), = m.inputs.items()
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    ours = m.run({iname: x})
    proto = webnn.onnx.export(m.graph)
    onnx.checker.check_model(proto)
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = sess.run(None, {iname: x})
    for (k, v), t in zip(ours.items(), theirs):
        np.testing.assert_allclose(t, v, rtol=1e-4, atol=1e-6, err_msg=k)


def test_model_local_function_is_inlined(ctx):
    # y = LocalGelu(x) * 2 with LocalGelu a function of the model (as torch.onnx's
    # dynamo exporter writes them), using an attribute reference
    fn = helper.make_function(
        "my.domain", "Scaled", ["a"], ["b"],
        [helper.make_node("Constant", [], ["k"], value_float=0.0),
         helper.make_node("Relu", ["a"], ["r"]),
         helper.make_node("LeakyRelu", ["a"], ["l"], alpha=0.0),
         helper.make_node("Add", ["r", "l"], ["s"]),
         helper.make_node("Mul", ["s", "two"], ["b"])],
        [helper.make_opsetid("", 17)], attributes=[])
    fn.node[0].attribute[0].f = 0.0
    two = helper.make_node("Constant", [], ["two"], value_float=2.0)
    fn.node.insert(0, two)
    node = helper.make_node("Scaled", ["x"], ["y"], domain="my.domain")
    g = helper.make_graph([node], "g", [_vi("x", F, [4])], [_vi("y", F, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("my.domain", 1)],
                          functions=[fn])
    x = np.array([-2, -1, 1, 3], np.float32)
    out = webnn.onnx.load(m, ctx).run({"x": x})["y"]
    np.testing.assert_allclose(out, 2 * (np.maximum(x, 0) + np.where(x > 0, x, 0)))
    bad = helper.make_node("Other", ["x"], ["y"], domain="my.domain")
    m2 = helper.make_model(helper.make_graph([bad], "g", [_vi("x", F, [4])], [_vi("y", F, None)]),
                           opset_imports=[helper.make_opsetid("", 17),
                                          helper.make_opsetid("my.domain", 1)], functions=[fn])
    with pytest.raises(webnn.NotSupportedError, match="my.domain"):
        webnn.onnx.load(m2, ctx)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i", [(6,), (6,)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 2)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("abc,cd->abd", [(2, 3, 4), (4, 3)]),
])
def test_einsum_float32(ctx, eq, shapes):
    rng = np.random.default_rng(4)
    arrays = [rng.random(s, dtype=np.float32) for s in shapes]
    names = [f"x{i}" for i in range(len(arrays))]
    m = _model([helper.make_node("Einsum", names, ["y"], equation=eq)],
               [_vi(n, F, list(a.shape)) for n, a in zip(names, arrays)], [_vi("y", F, None)],
               opset=12)
    out = webnn.onnx.load(m, ctx).run(dict(zip(names, arrays)))["y"]
    np.testing.assert_allclose(out, np.einsum(eq, *arrays), rtol=1e-5, atol=1e-6)


def test_einsum_diagonal_is_not_supported(ctx):
    m = _model([helper.make_node("Einsum", ["x"], ["y"], equation="ii->i")],
               [_vi("x", F, [3, 3])], [_vi("y", F, None)], opset=12)
    with pytest.raises(webnn.NotSupportedError, match="Einsum.*diagonal"):
        webnn.onnx.load(m, ctx)


def test_instance_norm_rank5_against_onnxruntime(ctx):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    sc = numpy_helper.from_array(rng.random(3, dtype=np.float32), "s")
    bi = numpy_helper.from_array(rng.random(3, dtype=np.float32), "b")
    m = _model([helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"])],
               [_vi("x", F, [2, 3, 4, 5, 6])], [_vi("y", F, None)], [sc, bi])
    x = rng.random((2, 3, 4, 5, 6), dtype=np.float32)
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(webnn.onnx.load(m, ctx).run({"x": x})["y"],
                               sess.run(None, {"x": x})[0], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("extra", [{}, {"clip": 0.5}, {"input_forget": 1}, {"peephole": True},
                                   {"layout": 1}])
def test_lstm_gru_rnn_against_onnxruntime(ctx, extra):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(6)
    seq, batch, inp, hid, nd = 4, 2, 3, 5, 2
    extra = dict(extra)
    peephole = extra.pop("peephole", False)
    layout = extra.get("layout", 0)
    xs = [seq, batch, inp] if not layout else [batch, seq, inp]
    arr = lambda *s: numpy_helper.from_array(rng.uniform(-1, 1, s).astype(np.float32))  # noqa
    inits = []
    for name, shape in (("W", (nd, 4 * hid, inp)), ("R", (nd, 4 * hid, hid)),
                        ("B", (nd, 8 * hid)), ("P", (nd, 3 * hid)),
                        ("Wg", (nd, 3 * hid, inp)), ("Rg", (nd, 3 * hid, hid)),
                        ("Wr", (nd, hid, inp)), ("Rr", (nd, hid, hid))):
        t = arr(*shape)
        t.name = name
        inits.append(t)
    lstm_in = ["x", "W", "R", "B", "", "", "", "P" if peephole else ""]
    nodes = [helper.make_node("LSTM", lstm_in, ["Y", "Yh", "Yc"], hidden_size=hid,
                              direction="bidirectional", **extra)]
    outs = [_vi("Y", F, None), _vi("Yh", F, None), _vi("Yc", F, None)]
    if not extra.get("clip") and not extra.get("input_forget"):
        nodes.append(helper.make_node("GRU", ["x", "Wg", "Rg"], ["G", "Gh"], hidden_size=hid,
                                      direction="bidirectional", linear_before_reset=1, **extra))
        nodes.append(helper.make_node("RNN", ["x", "Wr", "Rr"], ["S", "Sh"], hidden_size=hid,
                                      direction="bidirectional", **extra))
        outs += [_vi(n, F, None) for n in ("G", "Gh", "S", "Sh")]
    m = _model(nodes, [_vi("x", F, xs)], outs, inits, opset=14)
    x = rng.uniform(-1, 1, xs).astype(np.float32)
    ours = webnn.onnx.load(m, ctx).run({"x": x})
    if layout:   # ORT has no batchwise recurrent kernels: the onnx reference instead
        from onnx.reference import ReferenceEvaluator
        names = [o.name for o in m.graph.output]
        theirs = ReferenceEvaluator(m).run(None, {"x": x})
    else:
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        theirs = sess.run(None, {"x": x})
    for name, t in zip(names, theirs):
        np.testing.assert_allclose(ours[name], t, rtol=1e-4, atol=1e-5, err_msg=name)


def test_loop_with_static_trip_count_is_unrolled(ctx):
    from onnx.reference import ReferenceEvaluator
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Mul", ["acc_out", "i_f"], ["scan_out"])],
        "body",
        [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
         _vi("acc_in", F, [2])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", F, [2]), _vi("scan_out", F, [2])])
    inits = [numpy_helper.from_array(np.array(4, np.int64), "M"),
             numpy_helper.from_array(np.array(True), "cond"),
             numpy_helper.from_array(np.zeros(2, np.float32), "acc0")]
    m = _model([helper.make_node("Loop", ["M", "cond", "acc0"], ["acc", "scan"], body=body)],
               [_vi("x", F, [2])], [_vi("acc", F, None), _vi("scan", F, None)], inits, opset=16)
    x = np.array([1.5, -2.0], np.float32)
    ours = webnn.onnx.load(m, ctx).run({"x": x})
    ref = ReferenceEvaluator(m).run(None, {"x": x})
    np.testing.assert_allclose(ours["acc"], ref[0])
    np.testing.assert_allclose(ours["scan"], ref[1])
    # a condition computed by the graph cannot be unrolled
    body2 = onnx.GraphProto()
    body2.CopyFrom(body)
    body2.node[0].CopyFrom(helper.make_node("Greater", ["acc_out_x", "zero"], ["cond_out"]))
    body2.node.insert(0, helper.make_node("ReduceSum", ["x"], ["acc_out_x"], keepdims=0))
    body2.node.insert(0, helper.make_node("Constant", [], ["zero"], value_float=0.0))
    m2 = _model([helper.make_node("Loop", ["M", "cond", "acc0"], ["acc", "scan"], body=body2)],
                [_vi("x", F, [2])], [_vi("acc", F, None), _vi("scan", F, None)], inits, opset=16)
    with pytest.raises(webnn.NotSupportedError, match="Loop"):
        webnn.onnx.load(m2, ctx)


def test_invalid_models_are_type_errors(ctx):
    with pytest.raises(TypeError, match="not an ONNX model"):
        webnn.onnx.load(b"\xff\xff not protobuf", ctx)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [2])], [_vi("y", F, [2])])
    m.graph.node[0].input[0] = "nowhere"        # an undefined input
    with pytest.raises(TypeError, match="not valid ONNX"):
        webnn.onnx.load(m, ctx)
    with pytest.raises(TypeError):
        webnn.onnx.load(42, ctx)


def test_declared_output_shape_is_checked(ctx):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [2, 3])],
               [_vi("y", F, [3, 2])])
    # onnx.checker's full check (shape inference in strict mode) finds it
    with pytest.raises(TypeError, match=r"Inferred shape and existing shape differ"):
        webnn.onnx.load(m, ctx)


@pytest.mark.parametrize("attrs", [dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
                                   dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1),
                                   dict(kernel_shape=[2, 2], storage_order=1)])
def test_maxpool_indices_against_onnxruntime(ctx, attrs):
    ort = pytest.importorskip("onnxruntime")
    m = _model([helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)],
               [_vi("x", F, [2, 3, 7, 6])], [_vi("y", F, None), _vi("i", TensorProto.INT64, None)],
               opset=12)
    x = np.random.default_rng(7).random((2, 3, 7, 6), dtype=np.float32)
    ours = webnn.onnx.load(m, ctx).run({"x": x})
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    y, i = sess.run(None, {"x": x})
    np.testing.assert_array_equal(ours["y"], y)
    np.testing.assert_array_equal(ours["i"], i)


def test_matmul_integer_exact_or_not_supported(ctx):
    rng = np.random.default_rng(8)
    U8 = TensorProto.UINT8
    a = rng.integers(0, 256, (3, 40)).astype(np.uint8)
    b = rng.integers(0, 256, (40, 5)).astype(np.uint8)
    m = _model([helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])],
               [_vi("a", U8, [3, 40])], [_vi("y", TensorProto.INT32, None)],
               [numpy_helper.from_array(b, "b"), numpy_helper.from_array(np.array(128, np.uint8), "za"),
                numpy_helper.from_array(np.array(3, np.uint8), "zb")], opset=10)
    out = webnn.onnx.load(m, ctx).run({"a": a})["y"]
    want = (a.astype(np.int64) - 128) @ (b.astype(np.int64) - 3)
    np.testing.assert_array_equal(out, want)
    # sums that could pass 2^24 are refused, not rounded
    big = rng.integers(200, 256, (3000, 5)).astype(np.uint8)
    m.graph.initializer[0].CopyFrom(numpy_helper.from_array(big, "b"))
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 3000
    with pytest.raises(webnn.NotSupportedError, match="exact integers"):
        webnn.onnx.load(m, ctx)


def test_topk_against_onnxruntime(ctx):
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(9)
    x = rng.integers(0, 5, (3, 7, 4)).astype(np.float32)    # many ties
    x[0, 0, 0] = -np.inf
    for largest in (1, 0):
        m = _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)],
                   [_vi("x", F, [3, 7, 4])],
                   [_vi("v", F, None), _vi("i", TensorProto.INT64, None)],
                   [numpy_helper.from_array(np.array([5], np.int64), "k")], opset=11)
        ours = webnn.onnx.load(m, ctx).run({"x": x})
        sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        v, i = sess.run(None, {"x": x})
        np.testing.assert_array_equal(ours["v"], v)
        np.testing.assert_array_equal(ours["i"], i)


@pytest.mark.parametrize("data_shape, idx", [
    # BERT's token type ids as transformers 5 exports them: a [1, 512] buffer
    # gathered at positions 0..127 (onnx.reference fails past 64 values)
    ((1, 512), np.arange(128, dtype=np.int64)[None]),
    ((3, 100), np.array([[-1, 0, 99, -100], [5, 6, 7, 8]], np.int64)),   # negative, shorter rows
])
def test_gather_elements_folds_in_numpy(ctx, data_shape, idx):
    """A GatherElements of constants folds at import (in NumPy) and equals
    ONNX Runtime's result, the model's input added to it so that it runs."""
    import onnxruntime as ort
    data = np.arange(np.prod(data_shape), dtype=np.float32).reshape(data_shape)
    out_shape = list(idx.shape)
    m = _model([helper.make_node("GatherElements", ["d", "i"], ["g"], axis=1),
                helper.make_node("Add", ["g", "x"], ["y"])],
               [_vi("x", F, out_shape)], [_vi("y", F, out_shape)],
               [numpy_helper.from_array(data, "d"), numpy_helper.from_array(idx, "i")])
    x = np.random.default_rng(0).standard_normal(out_shape).astype(np.float32)
    got = webnn.onnx.load(m, ctx).run({"x": x})["y"]
    want = ort.InferenceSession(m.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)


def test_gather_elements_fold_out_of_range(ctx):
    m = _model([helper.make_node("GatherElements", ["d", "i"], ["g"], axis=1),
                helper.make_node("Add", ["g", "x"], ["y"])],
               [_vi("x", F, [1, 2])], [_vi("y", F, [1, 2])],
               [numpy_helper.from_array(np.zeros((1, 4), np.float32), "d"),
                numpy_helper.from_array(np.array([[0, 4]], np.int64), "i")])
    with pytest.raises(webnn.NotSupportedError, match=r"GatherElements.*outside \[-4, 4\)"):
        webnn.onnx.load(m, ctx)


def test_run_results_are_fresh_arrays_of_each_run(ctx):
    """On the CPU run() computes straight into the arrays it returns (no
    tensors in between): results of 1 MiB and more, kept across runs, are
    each their own run's, and the inputs are not written"""
    m = webnn.onnx.load(_model([helper.make_node("Relu", ["x"], ["y"]),
                                helper.make_node("Neg", ["x"], ["z"])],
                               [_vi("x", F, [512, 1024])], [_vi("y", F, None), _vi("z", F, None)]),
                        context=ctx)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((512, 1024)).astype(np.float32) for _ in range(3)]
    keep = [x.copy() for x in xs]
    outs = [m.run({"x": x}) for x in xs]
    del outs[1]  # its memory goes back to the result cache, reused by the next
    outs.append(m.run({"x": xs[1]}))
    for o, x in zip(outs, [keep[0], keep[2], keep[1]]):
        assert np.array_equal(o["y"], np.maximum(x, 0)) and np.array_equal(o["z"], -x)
    assert all(np.array_equal(a, b) for a, b in zip(xs, keep))
    assert len({id(o["y"]) for o in outs} | {id(o["z"]) for o in outs}) == 6
