"""webnn.onnx against hostile models (issue 31), built in code with
onnx.helper: no file read outside the model's folder, no crash, hang or
runaway memory, no silent wrong answer.  Every failure is a TypeError,
webnn.NotSupportedError or MemoryError naming what is wrong."""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402
import webnn.onnx.backend  # noqa: E402

F, I64, I32 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32
MARKER = np.array([1234.5, -777.25, 42.0, 9.75], np.float32)   # what the planted file holds


def _vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def _model(nodes, inputs, outputs, inits=(), opset=17, functions=()):
    g = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    ops = [helper.make_opsetid("", opset)]
    if functions:
        ops.append(helper.make_opsetid("local", 1))
    return helper.make_model(g, opset_imports=ops, functions=list(functions))


def _untyped(name):
    return onnx.ValueInfoProto(name=name)


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context(device_type="cpu")


# ---- 1. external data: only from the model's own folder ---------------------
_opened = []


def _audit(event, args):
    if event == "open" and _opened and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened[0].append(os.fspath(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A marker file in the working directory (not the model's folder), and
    the list of every file the process opens while the test runs."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "marker.bin").write_bytes(MARKER.tobytes())
    monkeypatch.chdir(cwd)
    seen = []
    _opened.append(seen)
    yield seen
    _opened.clear()


def _never_read(seen):
    assert not [p for p in seen if p.endswith("marker.bin")], seen


def _external(name, location="marker.bin", n=4):
    t = TensorProto(name=name, data_type=F, dims=[n])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "0"), ("length", str(4 * n))):
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def _add_model(w):
    return _model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", F, [4])],
                  [_vi("y", F, [4])], [w])


def _constant_model(location="marker.bin"):
    node = helper.make_node("Constant", [], ["w"], value=_external("cw", location))
    return _model([node, helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", F, [4])],
                  [_vi("y", F, [4])])


def _function_subgraph_model(location="marker.bin"):
    """The external tensor is an initializer of an If branch inside a
    model-local function."""
    then_g = helper.make_graph([helper.make_node("Identity", ["wt"], ["o"])], "then", [],
                               [_vi("o", F, [4])], [_external("wt", location)])
    else_g = helper.make_graph([helper.make_node("Identity", ["xx"], ["o2"])], "else", [],
                               [_vi("o2", F, [4])])
    fn = helper.make_function(
        "local", "pick", ["xx", "cond"], ["out"],
        [helper.make_node("If", ["cond"], ["out"], then_branch=then_g, else_branch=else_g)],
        [helper.make_opsetid("", 17)])
    cond = numpy_helper.from_array(np.array(True), "c")
    return _model([helper.make_node("pick", ["x", "c"], ["y"], domain="local")],
                  [_vi("x", F, [4])], [_vi("y", F, [4])], [cond], functions=[fn])


@pytest.mark.parametrize("make", [lambda: _add_model(_external("w")), _constant_model,
                                  _function_subgraph_model],
                         ids=["initializer", "constant", "function_subgraph"])
@pytest.mark.parametrize("form", ["bytes", "proto", "backend"])
def test_external_data_without_a_folder_is_refused(ctx, planted, make, form):
    m = make()
    with pytest.raises(TypeError, match=r"tensor '(w|cw|wt)'.*external.*base_dir"):
        if form == "bytes":
            webnn.onnx.load(m.SerializeToString(), ctx)
        elif form == "proto":
            webnn.onnx.load(m, ctx)
        else:
            webnn.onnx.backend.prepare(m).run([np.zeros(4, np.float32)])
    _never_read(planted)


@pytest.mark.parametrize("make", [lambda loc: _add_model(_external("w", loc)), _constant_model,
                                  _function_subgraph_model],
                         ids=["initializer", "constant", "function_subgraph"])
def test_external_data_from_a_path_is_read_from_the_models_folder(ctx, planted, tmp_path, make):
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(make("marker.bin"), folder / "m.onnx")
    # the folder lacks marker.bin: the one in the working directory is not used
    with pytest.raises(TypeError, match=r"external data cannot be read"):
        webnn.onnx.load(folder / "m.onnx", ctx)
    _never_read([p for p in planted if not p.startswith(str(folder))])
    # with the file in the model's folder, its values are the model's
    own = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    (folder / "marker.bin").write_bytes(own.tobytes())
    x = np.full(4, 0.5, np.float32)
    out = webnn.onnx.load(str(folder / "m.onnx"), ctx).run({"x": x})["y"]
    want = own + x if "Add" in [n.op_type for n in make("m").graph.node] else own
    np.testing.assert_array_equal(out, want)
    _never_read([p for p in planted if not p.startswith(str(folder))])


def test_external_data_with_base_dir(ctx, planted, tmp_path):
    folder = tmp_path / "weights"
    folder.mkdir()
    own = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    (folder / "w.bin").write_bytes(own.tobytes())
    m = _add_model(_external("w", "w.bin"))
    x = np.full(4, 0.25, np.float32)
    for src in (m, m.SerializeToString()):
        out = webnn.onnx.load(src, ctx, base_dir=folder).run({"x": x})["y"]
        np.testing.assert_array_equal(out, own + x)
    # the caller's ModelProto is left as it was (still external)
    assert m.graph.initializer[0].data_location == TensorProto.EXTERNAL
    _never_read(planted)


@pytest.mark.parametrize("location", ["/etc/hostname", "../cwd/marker.bin", "sub/../../x.bin",
                                      "link.bin"])
def test_external_data_cannot_leave_the_folder(ctx, planted, tmp_path, location):
    folder = tmp_path / "model"
    folder.mkdir()
    os.symlink(tmp_path / "cwd" / "marker.bin", folder / "link.bin")
    onnx.save(_add_model(_external("w", location)), folder / "m.onnx")
    with pytest.raises(TypeError, match=r"'w'.*(not a path inside|leaves the model's folder)"):
        webnn.onnx.load(folder / "m.onnx", ctx)
    _never_read(planted)


def test_external_data_beyond_the_file(ctx, tmp_path):
    (tmp_path / "w.bin").write_bytes(b"\0" * 8)
    onnx.save(_add_model(_external("w", "w.bin")), tmp_path / "m.onnx")
    with pytest.raises(TypeError, match=r"'w'.*external data cannot be read"):
        webnn.onnx.load(tmp_path / "m.onnx", ctx)


# ---- 2. the whole checker, and what it cannot check --------------------------
def _fn(name, nodes, domains=("",)):
    return helper.make_function("local", name, ["x"], ["y"], nodes,
                                [helper.make_opsetid(d, 1 if d else 17) for d in domains])


def _call(name, i="x", o="y"):
    return helper.make_node(name, [i], [o], domain="local")


def test_recursive_local_function(ctx):
    fn = _fn("f", [_call("f")], ("", "local"))
    m = _model([_call("f")], [_vi("x", F, [2])], [_untyped("y")], functions=[fn])
    with pytest.raises(TypeError, match=r"local function 'f' calls itself"):
        webnn.onnx.load(m, ctx)


def test_chain_of_3000_functions(ctx):
    fns = [_fn(f"f{k}", [_call(f"f{k + 1}")], ("", "local")) for k in range(2999)]
    fns.append(_fn("f2999", [helper.make_node("Relu", ["x"], ["y"])]))
    m = _model([_call("f0")], [_vi("x", F, [2])], [_untyped("y")], functions=fns)
    t = time.perf_counter()
    with pytest.raises(webnn.NotSupportedError, match=r"nest deeper than 64"):
        webnn.onnx.load(m, ctx)
    assert time.perf_counter() - t < 5


def test_two_nodes_writing_one_name(ctx):
    m = _model([helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Neg", ["x"], ["y"])],
               [_vi("x", F, [2])], [_untyped("y")])
    with pytest.raises(TypeError, match=r"single static assignment.*'y'"):
        webnn.onnx.load(m, ctx)


def test_initializer_with_negative_dim(ctx):
    w = TensorProto(name="w", data_type=F, dims=[-1, 2])
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", F, [2])],
               [_untyped("y")], [w])
    with pytest.raises(TypeError, match=r"initializer 'w' has a negative dimension"):
        webnn.onnx.load(m, ctx)


def test_untyped_output_still_runs(ctx):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [3])], [_untyped("y")])
    x = np.array([-1, 0, 2], np.float32)
    np.testing.assert_array_equal(webnn.onnx.load(m, ctx).run({"x": x})["y"], np.maximum(x, 0))


def _not_utf8(m, placeholder):
    return m.SerializeToString().replace(placeholder.encode(), b"\xff\xfe" +
                                         placeholder.encode()[2:])


def test_names_that_are_not_utf8(ctx):
    m = _model([helper.make_node("Relu", ["x"], ["y"], name="NNNN")], [_vi("x", F, [2])],
               [_vi("y", F, [2])])
    with pytest.raises(TypeError, match=r"node #0: its name is not valid UTF-8"):
        webnn.onnx.load(_not_utf8(m, "NNNN"), ctx)
    m = _model([helper.make_node("Relu", ["xxxx"], ["y"])], [_vi("xxxx", F, [2])],
               [_vi("y", F, [2])])
    with pytest.raises(TypeError, match=r"not valid UTF-8"):
        webnn.onnx.load(_not_utf8(m, "xxxx"), ctx)


def test_string_attribute_that_is_not_utf8(ctx):
    m = _model([helper.make_node("Resize", ["x", "", "s"], ["y"], name="rs", mode="MMMMMM")],
               [_vi("x", F, [1, 1, 2, 2])], [_untyped("y")],
               [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")])
    with pytest.raises((TypeError, webnn.NotSupportedError), match=r"'rs' \(Resize\)|mode"):
        webnn.onnx.load(_not_utf8(m, "MMMMMM"), ctx)


# ---- 3. one import budget ------------------------------------------------------
def _nested_loops(n):
    inner = helper.make_graph(
        [helper.make_node("Identity", ["c2"], ["co2"]), helper.make_node("Neg", ["v2"], ["vo2"])],
        "inner", [_vi("i2", I64, []), _vi("c2", TensorProto.BOOL, []), _vi("v2", F, [2])],
        [_vi("co2", TensorProto.BOOL, []), _vi("vo2", F, [2])])
    outer = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]),
         helper.make_node("Loop", ["M", "", "v"], ["vo"], body=inner, name="inner_loop")],
        "outer", [_vi("i", I64, []), _vi("c", TensorProto.BOOL, []), _vi("v", F, [2])],
        [_vi("co", TensorProto.BOOL, []), _vi("vo", F, [2])])
    return _model([helper.make_node("Loop", ["M", "", "x"], ["y"], body=outer, name="outer_loop")],
                  [_vi("x", F, [2])], [_vi("y", F, [2])],
                  [numpy_helper.from_array(np.array(n, np.int64), "M")])


def _doubling_functions(depth):
    fns = [_fn(f"g{k}", [_call(f"g{k + 1}", "x", "t"), _call(f"g{k + 1}", "t", "y")],
               ("", "local")) for k in range(depth - 1)]
    fns.append(_fn(f"g{depth - 1}", [helper.make_node("Neg", ["x"], ["y"])]))
    return _model([_call("g0")], [_vi("x", F, [2])], [_untyped("y")], functions=fns)


@pytest.mark.parametrize("bomb", [lambda: _nested_loops(4096), lambda: _doubling_functions(24)],
                         ids=["loop_in_loop", "doubling_functions"])
def test_expansion_bombs_fail_fast(ctx, bomb):
    m = bomb()
    assert m.ByteSize() < 4000
    t = time.perf_counter()
    with pytest.raises(MemoryError, match=r"node '(outer_loop|#0)' \((Loop|g0)\).*budget"):
        webnn.onnx.load(m, ctx)
    assert time.perf_counter() - t < 1.0


@pytest.mark.parametrize("case", ["maxpool", "conv_transpose", "deform_conv"])
def test_slow_folds_run_in_the_graph_or_are_refused(ctx, case):
    """onnx.reference folds some operators element by element in Python (a
    256 x 256 3x3 MaxPool of a constant: 0.7 s; a DeformConv: 0.5 ms an
    output): a large one runs in the WebNN graph where WebNN has the
    operator (the same values), and is refused naming the estimate where
    it has not, instead of folding for minutes."""
    rng = np.random.default_rng(7)
    f32 = lambda a, n: numpy_helper.from_array(a.astype(np.float32), n)  # noqa: E731
    if case == "maxpool":
        a = rng.standard_normal((1, 8, 300, 300))
        m = _one(helper.make_node("MaxPool", ["a"], ["y"], name="hot", kernel_shape=[3, 3]),
                 [], [f32(a, "a")])
        ref = np.lib.stride_tricks.sliding_window_view(a.astype(np.float32), (3, 3),
                                                       axis=(2, 3)).max(axis=(-2, -1))
    elif case == "conv_transpose":
        a, w = rng.standard_normal((1, 4, 256, 256)), rng.standard_normal((4, 3, 3, 3))
        m = _one(helper.make_node("ConvTranspose", ["a", "w"], ["y"], name="hot"), [],
                 [f32(a, "a"), f32(w, "w")])
        ref = np.zeros((1, 3, 258, 258))
        for i in range(3):
            for j in range(3):
                ref[0, :, i:i + 256, j:j + 256] += np.einsum("chw,co->ohw", a[0], w[:, :, i, j])
    else:
        x, w = rng.standard_normal((1, 2, 64, 64)), rng.standard_normal((2, 2, 3, 3))
        m = _one(helper.make_node("DeformConv", ["x", "w", "o"], ["y"], name="hot",
                                  pads=[1, 1, 1, 1]), [],
                 [f32(x, "x"), f32(w, "w"), f32(np.zeros((1, 18, 64, 64)), "o")], opset=19)
    t = time.perf_counter()
    if case == "deform_conv":
        with pytest.raises(webnn.NotSupportedError,
                           match=r"node 'hot' \(DeformConv\).*about [\d.]+ s"):
            webnn.onnx.load(m, ctx)
    else:
        y = webnn.onnx.load(m, ctx).run({})["y"]
        np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    assert time.perf_counter() - t < 2.0


def _image_decoder(data, **attrs):
    return _one(helper.make_node("ImageDecoder", ["d"], ["y"], name="hot", **attrs), [],
                [numpy_helper.from_array(np.frombuffer(data, np.uint8), "d")], opset=20)


@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_image_decoder_folds_the_operators_formats(ctx, pixel_format):
    """ImageDecoder of constant bytes is folded with Pillow, as the operator
    defines its output ([H, W, 3] RGB / BGR, [H, W, 1] Grayscale, uint8)."""
    PIL = pytest.importorskip("PIL.Image")
    import io
    rgb = np.random.default_rng(5).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    buf = io.BytesIO()
    PIL.fromarray(rgb).save(buf, format="PNG")
    y = webnn.onnx.load(_image_decoder(buf.getvalue(), pixel_format=pixel_format), ctx)
    got = y.run({})["y"]
    if pixel_format == "Grayscale":
        want = np.asarray(PIL.fromarray(rgb).convert("L"))[:, :, None]
    else:
        want = rgb[:, :, ::-1] if pixel_format == "BGR" else rgb
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", ["eps", "gif", "garbage", "bomb", "header_bomb", "truncated"])
def test_image_decoder_hostile_bytes(ctx, case):
    """The encoded bytes are the model's: only the operator's formats are
    tried (an EPS would go to Ghostscript through Pillow's plugin), and a
    small file of a huge image is refused from its header, before any pixel
    is decoded (a 105 KB PNG of 6000 x 6000 decoded into 108 MB)."""
    PIL = pytest.importorskip("PIL.Image")
    import io
    if case == "eps":
        data = (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 8 8\n"
                b"(%stdout) (w) file (pwned) writestring\nshowpage\n%%EOF\n")
    elif case == "gif":
        buf = io.BytesIO()
        PIL.new("RGB", (4, 4)).save(buf, format="GIF")
        data = buf.getvalue()
    elif case == "garbage":
        data = b"\x89PNG\r\n\x1a\n" + b"\xff" * 40
    elif case in ("header_bomb", "truncated"):
        # a PNG header alone: 20000 x 20000 (over Pillow's bomb limit), or
        # 64 x 64 with no pixel data
        import struct
        import zlib

        def chunk(t, d):
            return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
        side = 20000 if case == "header_bomb" else 64
        data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(
            ">IIBBBBB", side, side, 8, 2, 0, 0, 0)) + chunk(b"IEND", b"")
    else:
        buf = io.BytesIO()
        PIL.new("L", (6000, 6000)).save(buf, format="PNG")
        data = buf.getvalue()
        assert len(data) < 200_000
    m = _image_decoder(data)
    t = time.perf_counter()
    if case in ("bomb", "header_bomb"):
        with pytest.raises(MemoryError, match=r"node 'hot' \(ImageDecoder\).*(budget of \d+|bomb)"):
            webnn.onnx.load(m, ctx, budget=webnn.onnx.ImportBudget(max_const_bytes=64 << 20))
    elif case == "truncated":
        with pytest.raises(webnn.NotSupportedError,
                           match=r"node 'hot' \(ImageDecoder\).*decoding its image failed"):
            webnn.onnx.load(m, ctx)
    else:
        with pytest.raises(webnn.NotSupportedError,
                           match=r"node 'hot' \(ImageDecoder\).*not an image of the formats"):
            webnn.onnx.load(m, ctx)
    assert time.perf_counter() - t < 2.0


def test_string_normalizer_does_not_set_the_process_locale(ctx):
    """onnx.reference's StringNormalizer sets the process's locale to the
    node's (locale.setlocale(LC_ALL, ...)): a model must not change it, so
    the node is refused, not folded."""
    import locale
    before = locale.setlocale(locale.LC_ALL)
    words = helper.make_tensor("w", TensorProto.STRING, [2], [b"Hello", b"World"])
    m = _one(helper.make_node("StringNormalizer", ["w"], ["y"], name="hot",
                              case_change_action="LOWER", locale="C.UTF-8"), [], [words])
    try:
        with pytest.raises((webnn.NotSupportedError, TypeError), match=r"StringNormalizer|'y'"):
            webnn.onnx.load(m, ctx)
        assert locale.setlocale(locale.LC_ALL) == before
    finally:
        locale.setlocale(locale.LC_ALL, before)


def test_budget_can_be_raised(ctx):
    x = np.array([1.5, -2.0], np.float32)
    small = webnn.onnx.ImportBudget(max_nodes=20)
    with pytest.raises(MemoryError, match=r"budget of 20"):
        webnn.onnx.load(_nested_loops(5), ctx, budget=small)
    with pytest.raises(MemoryError, match=r"budget of 20"):
        webnn.onnx.load(_doubling_functions(6), ctx, budget=small)
    big = webnn.onnx.ImportBudget(max_nodes=200)
    # 5 x 5 negations: an odd count
    np.testing.assert_array_equal(
        webnn.onnx.load(_nested_loops(5), ctx, budget=big).run({"x": x})["y"], -x)
    # 2^5 negations: even
    np.testing.assert_array_equal(
        webnn.onnx.load(_doubling_functions(6), ctx, budget=big).run({"x": x})["y"], x)


def _one(node, inputs, inits, opset=17):
    return _model([node], inputs, [_untyped("y")], inits, opset)


@pytest.mark.parametrize("case", ["onehot", "dft", "resize", "constant_of_shape", "expand",
                                  "expand_self", "tile_self", "conv_pads",
                                  "conv_transpose_strides", "pool_pads", "concat_repeated",
                                  "matmul_outer", "gemm_outer", "gather_many", "gathernd_many",
                                  "einsum_outer", "affine_grid", "cast_to_string"])
def test_model_controlled_allocations(ctx, case):
    t64 = lambda v, n: numpy_helper.from_array(np.array(v, np.int64), n)  # noqa: E731
    if case == "onehot":
        m = _one(helper.make_node("OneHot", ["i", "d", "v"], ["y"], name="hot"),
                 [_vi("i", I64, [2])],
                 [t64([2 ** 31 - 1], "d"), numpy_helper.from_array(np.array([0, 1], np.float32), "v")])
    elif case == "dft":
        m = _one(helper.make_node("DFT", ["x", "n"], ["y"], name="hot", axis=1),
                 [_vi("x", F, [1, 65536, 1])], [t64(65536, "n")])
    elif case == "resize":
        m = _one(helper.make_node("Resize", ["x", "", "s"], ["y"], name="hot", mode="cubic"),
                 [_vi("x", F, [1, 1, 1, 32768])],
                 [numpy_helper.from_array(np.array([1, 1, 1, 2], np.float32), "s")], opset=19)
    elif case == "constant_of_shape":
        m = _model([helper.make_node("ConstantOfShape", ["s"], ["c"], name="hot"),
                    helper.make_node("Expand", ["c", "s"], ["y"], name="expand")],
                   [], [_untyped("y")], [t64([1 << 20, 1 << 20], "s")])
    elif case in ("expand_self", "tile_self"):
        # one initializer read twice: the data and the target shape (the ONNX
        # fuzzer's finding of 2026-11-29: Expand(s, s), s = [2^31], folded
        # into 16 GiB; the estimate took the inputs by distinct name)
        op = "Expand" if case == "expand_self" else "Tile"
        m = _one(helper.make_node(op, ["s", "s"], ["y"], name="hot"), [],
                 [t64([2 ** 31], "s")])
    elif case in ("concat_repeated", "matmul_outer", "gemm_outer", "gather_many",
                  "gathernd_many", "einsum_outer", "affine_grid"):
        # outputs that come from the inputs' shapes but not as their
        # broadcast: estimated as a broadcast (or the largest input), each
        # was folded in full before the budget saw it
        f32 = lambda shape, n: numpy_helper.from_array(np.zeros(shape, np.float32), n)  # noqa
        i64 = lambda shape, n: numpy_helper.from_array(np.zeros(shape, np.int64), n)  # noqa
        node, inits, opset = {
            "concat_repeated": (helper.make_node("Concat", ["a"] * 1100, ["y"], axis=0),
                                [f32([1 << 20], "a")], 17),
            "matmul_outer": (helper.make_node("MatMul", ["a", "b"], ["y"]),
                             [f32([1 << 16, 2], "a"), f32([2, 1 << 16], "b")], 17),
            "gemm_outer": (helper.make_node("Gemm", ["a", "b"], ["y"], transB=1),
                           [f32([1 << 16, 2], "a"), f32([1 << 16, 2], "b")], 17),
            "gather_many": (helper.make_node("Gather", ["a", "i"], ["y"]),
                            [f32([1000, 1000], "a"), i64([600000], "i")], 17),
            "gathernd_many": (helper.make_node("GatherND", ["a", "i"], ["y"]),
                              [f32([1000, 1000], "a"), i64([600000, 1], "i")], 17),
            "einsum_outer": (helper.make_node("Einsum", ["a", "a"], ["y"], equation="i,j->ij"),
                             [f32([1 << 16], "a")], 17),
            "affine_grid": (helper.make_node("AffineGrid", ["t", "s"], ["y"]),
                            [f32([1, 2, 3], "t"), t64([1, 1, 1 << 16, 1 << 16], "s")], 20),
        }[case]
        node.name = "hot"
        m = _one(node, [], inits, opset)
    elif case == "cast_to_string":
        # numbers as text: 128 bytes an element in onnx.reference (<U32),
        # estimated at 8 before
        m = _model([helper.make_node("ConstantOfShape", ["s"], ["c"]),
                    helper.make_node("Cast", ["c"], ["y"], name="hot", to=TensorProto.STRING)],
                   [], [_untyped("y")], [t64([1 << 25], "s")])
    elif case in ("conv_pads", "conv_transpose_strides", "pool_pads"):
        # a convolution / pool of constants whose attributes ask for
        # terabytes (the ONNX fuzzer's finding of 2026-11-28: pads of 2^31 - 1)
        w = numpy_helper.from_array(np.ones((3, 2, 3, 3), np.float32), "w")
        if case == "conv_pads":
            node = helper.make_node("Conv", ["w", "w"], ["y"], name="hot",
                                    pads=[2 ** 31 - 1, 0, 0, 0])
        elif case == "conv_transpose_strides":
            node = helper.make_node("ConvTranspose", ["w", "w"], ["y"], name="hot",
                                    strides=[2 ** 20, 2 ** 20])
        else:
            node = helper.make_node("MaxPool", ["w"], ["y"], name="hot", kernel_shape=[1, 1],
                                    pads=[0, 0, 2 ** 20, 2 ** 20])
        m = _one(node, [], [w])
    else:
        # a broadcast of two static vectors into 2^36 elements, folded
        m = _model([helper.make_node("Add", ["a", "b"], ["y"], name="hot")], [], [_untyped("y")],
                   [numpy_helper.from_array(np.zeros((1 << 18, 1), np.float32), "a"),
                    numpy_helper.from_array(np.zeros((1, 1 << 18), np.float32), "b")])
    # the convolutions and the pool are not folded (onnx.reference would
    # take hours): WebNN's builder refuses their output sizes instead
    refused = (MemoryError, webnn.NotSupportedError) if case in (
        "conv_pads", "conv_transpose_strides", "pool_pads") else MemoryError
    t = time.perf_counter()
    with pytest.raises(refused, match=r"node 'hot' \(\w+\)") as e:
        webnn.onnx.load(m, ctx)
    assert time.perf_counter() - t < 2.0
    assert re.search(r"budget of \d+" if e.type is MemoryError else
                     r"not a valid dimension|element count exceeds|input channels", str(e.value))


# ---- 5. integers ----------------------------------------------------------------
def test_int_input_out_of_range(ctx):
    m = _model([helper.make_node("Neg", ["x"], ["y"])], [_vi("x", I32, [3])], [_vi("y", I32, [3])])
    model = webnn.onnx.load(m, ctx)
    with pytest.raises(TypeError, match=r"input 'x' is int32.*1099511627781.*range"):
        model.run({"x": np.array([2 ** 40 + 5, -2 ** 35, 7], np.int64)})
    with pytest.raises(TypeError, match=r"-34359738368"):
        model.run({"x": np.array([5, -2 ** 35, 7], np.int64)})
    # in range: converted exactly
    np.testing.assert_array_equal(model.run({"x": np.array([2 ** 31 - 1, -5, 7], np.int64)})["y"],
                                  np.array([-(2 ** 31 - 1), 5, -7], np.int32))


def test_constant_and_runtime_gather_indices_agree(ctx):
    idx = np.array([0, 3, -1, -4, -5, 4, 100, -100, 2 ** 40 + 1, -2 ** 40], np.int64)
    data = np.arange(4 * 2, dtype=np.float32).reshape(4, 2) + 1
    const = _model([helper.make_node("Gather", ["x", "i"], ["y"])], [_vi("x", F, [4, 2])],
                   [_untyped("y")], [numpy_helper.from_array(idx, "i")])
    runtime = _model([helper.make_node("Gather", ["x", "i"], ["y"])],
                     [_vi("x", F, [4, 2]), _vi("i", I64, [len(idx)])], [_untyped("y")])
    a = webnn.onnx.load(const, ctx).run({"x": data})["y"]
    b = webnn.onnx.load(runtime, ctx).run({"x": data, "i": idx})["y"]
    # the runtime rule: negative counts from the end, then clamped to [0, 3]
    want = data[np.clip(np.where(idx < 0, idx + 4, idx), 0, 3)]
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("op", ["GatherElements", "GatherND"])
def test_constant_and_runtime_indices_agree(ctx, op):
    data = np.arange(4 * 3, dtype=np.float32).reshape(4, 3) + 1
    if op == "GatherElements":
        idx = np.array([[0, 3, -1], [-5, 4, 100], [-100, 2 ** 40, -2 ** 40]], np.int64)
        want = np.take_along_axis(data, np.clip(np.where(idx < 0, idx + 4, idx), 0, 3), 0)
        attrs = {"axis": 0}
    else:
        idx = np.array([[0, 2], [-1, -3], [-5, 7], [2 ** 40, -2 ** 40]], np.int64)
        dims = np.array([4, 3])
        norm = np.clip(np.where(idx < 0, idx + dims, idx), 0, dims - 1)
        want = data[norm[:, 0], norm[:, 1]]
        attrs = {}
    node = helper.make_node(op, ["x", "i"], ["y"], **attrs)
    const = _model([node], [_vi("x", F, [4, 3])], [_untyped("y")],
                   [numpy_helper.from_array(idx, "i")])
    runtime = _model([node], [_vi("x", F, [4, 3]), _vi("i", I64, list(idx.shape))],
                     [_untyped("y")])
    a = webnn.onnx.load(const, ctx).run({"x": data})["y"]
    b = webnn.onnx.load(runtime, ctx).run({"x": data, "i": idx})["y"]
    np.testing.assert_array_equal(b, want)
    np.testing.assert_array_equal(a, want)


# ---- 6. opsets, the backend ---------------------------------------------------------
@pytest.mark.parametrize("opset", [99, 29, 0])
def test_opset_outside_the_range(ctx, opset):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [2])], [_vi("y", F, [2])],
               opset=opset)
    with pytest.raises(webnn.NotSupportedError, match=rf"opset is {opset}: supported are the "
                                                       rf"opsets 1 to \d+"):
        webnn.onnx.load(m, ctx)


def test_backend_refuses_extra_inputs():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", F, [2])], [_vi("y", F, [2])])
    rep = webnn.onnx.backend.prepare(m)
    x = np.array([-1, 1], np.float32)
    np.testing.assert_array_equal(rep.run([x])[0], [0, 1])
    with pytest.raises(TypeError, match=r"2 inputs given, the model has 1"):
        rep.run([x, x])


# ---- 7. no internal error as the message ----------------------------------------------
def test_malformed_initializer_names_the_tensor(ctx):
    w = TensorProto(name="w", data_type=F, dims=[4], raw_data=np.ones(5, np.float32).tobytes())
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", F, [4])],
               [_vi("y", F, [4])], [w])
    with pytest.raises(TypeError, match=r"initializer 'w'.*malformed"):
        webnn.onnx.load(m, ctx)


def test_missing_required_attribute(ctx):
    m = _model([helper.make_node("LRN", ["x"], ["y"], name="lrn")], [_vi("x", F, [1, 2, 3, 3])],
               [_vi("y", F, [1, 2, 3, 3])])
    with pytest.raises(TypeError, match=r"Required attribute 'size' is missing.*LRN"):
        webnn.onnx.load(m, ctx)


@pytest.mark.parametrize("node", [
    helper.make_node("Transpose", ["x"], ["y"], name="bad", perm=[5, 0]),
    helper.make_node("Flatten", ["x"], ["y"], name="bad", axis=7),
    helper.make_node("Softmax", ["x"], ["y"], name="bad", axis=-9)])
def test_hostile_attributes(ctx, node):
    m = _model([node], [_vi("x", F, [2, 3])], [_untyped("y")])
    with pytest.raises((TypeError, webnn.NotSupportedError)) as e:
        webnn.onnx.load(m, ctx)
    assert "bad" in str(e.value) and node.op_type in str(e.value)


# ---- 8. the runner ----------------------------------------------------------------
def _runner(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "webnn.onnx", *map(str, args), "--device", "cpu"],
                          capture_output=True, text=True, env=env, timeout=120)


def test_runner_escapes_names(tmp_path):
    evil = "x\x1b[2J\x1b]0;pwned\x07\n"
    m = _model([helper.make_node("Relu", [evil], ["y\x1b[31m"])], [_vi(evil, F, [2])],
               [_vi("y\x1b[31m", F, [2])])
    onnx.save(m, tmp_path / "m.onnx")
    r = _runner(tmp_path / "m.onnx")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout
    assert "x\\x1b[2J" in r.stdout and "y\\x1b[31m" in r.stdout


@pytest.mark.parametrize("what", ["not_onnx", "invalid", "missing"])
def test_runner_one_line_error(tmp_path, what):
    path = tmp_path / "m.onnx"
    if what == "not_onnx":
        path.write_bytes(b"\x08\x07\xff\xff\xff garbage")
    elif what == "invalid":
        onnx.save(_model([helper.make_node("Relu", ["x"], ["y"]),
                          helper.make_node("Neg", ["x"], ["y\x1b[31m"])],
                         [_vi("x", F, [2])], [_untyped("y")], opset=99), path)
    r = _runner(path)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(("error: ", "not supported: ")), r.stderr
    assert "Traceback" not in r.stderr and "\x1b" not in r.stderr


# ---- the checker sees large weights by type and shape only (load speed) ----------
def test_checker_still_checks_large_weights(ctx):
    """Initializers over 4 KiB reach onnx.checker as typed inputs, not as
    data: a shape that does not fit is still refused, and data that does not
    fill the dims is refused by the importer, naming the tensor."""
    w = numpy_helper.from_array(np.ones((1100, 4), np.float32), "w")
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [_vi("x", F, [2, 3])],
               [_untyped("y")], [w])
    with pytest.raises(TypeError, match=r"not valid ONNX.*MatMul"):
        webnn.onnx.load(m, ctx)
    short = TensorProto(name="w", data_type=F, dims=[3, 1100],
                        raw_data=np.ones(3 * 1100 - 1, np.float32).tobytes())
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [_vi("x", F, [2, 3])],
               [_untyped("y")], [short])
    with pytest.raises(TypeError, match=r"initializer 'w'.*malformed"):
        webnn.onnx.load(m, ctx)
    good = numpy_helper.from_array(np.arange(3 * 1100, dtype=np.float32).reshape(3, 1100), "w")
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_vi("x", F, [2, 3])],
               [_untyped("y")], [good])
    x = np.array([[1, 0, 2], [0, -1, 0]], np.float32)
    np.testing.assert_allclose(webnn.onnx.load(m, ctx).run({"x": x})["y"],
                               x.astype(np.float64) @ numpy_helper.to_array(good), rtol=1e-6)


# ---- negative declared dimensions (a fuzzer finding) ----------------------------
def _slice_model(x_shape, body_input=None):
    st, en, ax = (numpy_helper.from_array(np.array([v], np.int64), n)
                  for v, n in ((1, "st"), (-1, "en"), (1, "ax")))
    return _model([helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])],
                  [_vi("x", F, x_shape)], [_untyped("y")], [st, en, ax])


@pytest.mark.parametrize("where", ["input", "value_info", "loop body", "initializer"])
def test_negative_dimension_is_refused_before_the_checker(ctx, where):
    """A declared dimension of -1 made onnx's shape inference (the checker's)
    abort the whole process (a C++ assertion in Slice's inference): it is a
    TypeError naming the value, before the checker runs."""
    if where == "input":
        m, name = _slice_model([4, -1]), "'x'"
    elif where == "value_info":
        m, name = _slice_model([4, 6]), "'y'"
        m.graph.value_info.append(_vi("y", F, [4, -5]))
    elif where == "initializer":
        m, name = _slice_model([4, 6]), "'w'"
        t = numpy_helper.from_array(np.zeros(2, np.float32), "w")
        del t.dims[:]
        t.dims.extend([-1, -2])
        m.graph.initializer.append(t)
    else:
        body = helper.make_graph([helper.make_node("Identity", ["v"], ["vo"]),
                                  helper.make_node("Identity", ["c"], ["co"])], "body",
                                 [_vi("i", I64, []), _vi("c", TensorProto.BOOL, []),
                                  _vi("v", F, [2, -3])],
                                 [_vi("co", TensorProto.BOOL, []), _vi("vo", F, [2, 3])])
        n = numpy_helper.from_array(np.array(2, np.int64), "n")
        m = _model([helper.make_node("Loop", ["n", "", "x"], ["y"], body=body)],
                   [_vi("x", F, [2, 3])], [_untyped("y")], [n])
        name = "'v'"
    with pytest.raises(TypeError, match=f"{name}.*negative"):
        webnn.onnx.load(m, ctx)
    with pytest.raises(TypeError, match="negative"):
        webnn.onnx.load(m.SerializeToString(), ctx)
