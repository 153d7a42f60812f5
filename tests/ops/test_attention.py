"""Attention blocks fused into one CPU step (WNN_FUSE_ATTENTION,
compiler/fuse_attention.c, cpu/attention.c):

    matmul(q, kt) -> [mul | div by c] -> [add(mask)] -> softmax(last axis)
        -> [where(isNaN(p), 0, p)] -> matmul(p, v)

Each case runs on a context that fuses it and on one with
WEBNN_CPU_ATTENTION=0 (the operators one by one); both are checked against
NumPy float64 and against each other, NaN for NaN.  The graphs that must not
fuse are checked to keep their operators and their values."""
import numpy as np
import pytest

import webnn

from .conftest import rng_for
from .test_fusion import make_context


@pytest.fixture(scope="module")
def contexts():
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_ATTENTION="1"),
            make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_ATTENTION="0"))


def f32(shape):
    return {"dataType": "float32", "shape": list(shape)}


def kinds(g):
    return [s["kind"] for s in webnn._core.graph_view(g._h)["steps"]]


def reference(q, kt, v, mask=None, guard=False, scale=1.0):
    """float64: softmax(q kt scale + mask) v, NaN where a row's softmax is
    NaN (a row of -inf only) unless guarded (then 0)"""
    s = q.astype(np.float64) @ kt.astype(np.float64) * scale
    if mask is not None:
        s = s + mask
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    if guard:
        p = np.where(np.isnan(p), 0.0, p)
    return p @ v.astype(np.float64)


def block(b, ops, mask=True, guard=False, axis=None, zero=0.0, scale=None, ident=False):
    s = b.matmul(ops["q"], ops["kt"])
    if ident:  # identities on the way (a decode graph's Dropout)
        s = b.identity(s)
    if scale is not None:  # ("mul" | "div", c, shape of c)
        op, c, shape = scale
        s = getattr(b, op)(s, b.constant(f32(shape), np.full(shape, c, np.float32)))
    if mask and "m" in ops:
        s = b.add(s, ops["m"])
    rank = len(ops["q"].shape)
    p = b.softmax(s, rank - 1 if axis is None else axis)
    if guard:
        z = b.constant(f32([]), np.array(zero, np.float32))
        p = b.where(b.is_nan(p), z, p)
    if ident:
        p = b.identity(b.identity(p))
    return b.matmul(p, ops["v"])


def run(ctx, inputs, make):
    b = webnn.MLGraphBuilder(ctx)
    ops = {k: b.input(k, f32(a.shape)) for k, a in inputs.items()}
    out = make(b, ops)
    g = b.build(out if isinstance(out, dict) else {"y": out})
    return g, ctx.compute(g, inputs)


def case(name, batch, S, T, D, Dv, mshape=None, masked=0.3, rows_off=()):
    rng = rng_for("attention", name)
    inputs = {"q": rng.standard_normal(batch + [S, D]).astype(np.float32),
              "kt": rng.standard_normal(batch + [D, T]).astype(np.float32),
              "v": rng.standard_normal(batch + [T, Dv]).astype(np.float32)}
    if mshape is not None:
        m = np.where(rng.random(mshape) < masked, -np.inf,
                     rng.standard_normal(mshape)).astype(np.float32)
        for idx in rows_off:  # rows masked whole: their softmax is NaN
            m[idx] = -np.inf
        inputs["m"] = m
    return inputs


CASES = {
    # name: (batch, S, T, D, Dv, mask shape, rows masked whole)
    "vit": ([2, 3], 50, 50, 16, 16, None, ()),
    "bert_padding": ([2, 4], 33, 33, 8, 8, [2, 1, 1, 33], ()),
    "gpt2_causal": ([1, 2], 40, 40, 16, 16, [40, 40], ()),
    "full_mask": ([2, 2], 17, 23, 5, 7, [2, 2, 17, 23], ()),
    "row_mask": ([3], 9, 130, 12, 3, [3, 9, 1], ()),
    "scalar_mask": ([2], 6, 5, 4, 4, [], ()),
    "decode_one_row": ([1, 12], 1, 73, 64, 64, [1, 1, 1, 73], ()),
    "no_batch": ([], 70, 1, 3, 9, [70, 1], ()),
    "long_keys": ([1, 2], 130, 3000, 16, 8, [1, 1, 130, 3000], ()),
    "odd_head": ([2, 1], 67, 67, 17, 33, [2, 1, 67, 67], ()),
    "masked_rows": ([2, 2], 6, 10, 4, 4, [2, 2, 6, 10], [(0, 1, 3), (1, 0, 0)]),
    "masked_batch": ([2, 2], 6, 10, 4, 4, [2, 1, 1, 10], [(1, 0, 0)]),
}


@pytest.mark.parametrize("guard", [False, True], ids=["plain", "guard"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_attention_fused_matches_float64_and_unfused(contexts, name, guard):
    batch, S, T, D, Dv, mshape, off = CASES[name]
    inputs = case(name, batch, S, T, D, Dv, mshape, rows_off=off)
    (gf, yf), (gp, yp) = [run(c, inputs, lambda b, o: block(b, o, guard=guard))
                          for c in contexts]
    assert kinds(gf).count("attention") == 1 and "attention" not in kinds(gp)
    assert len(kinds(gf)) == 1
    ref = reference(inputs["q"], inputs["kt"], inputs["v"], inputs.get("m"), guard)
    y, p = yf["y"], yp["y"]
    assert y.shape == ref.shape == p.shape
    nan = np.isnan(ref)
    assert np.array_equal(np.isnan(y), nan) and np.array_equal(np.isnan(p), nan)
    assert not (guard and nan.any()) and not (off and not guard and not nan.any())
    tol = 1e-5 * np.sqrt(T * D) * (1 + np.abs(ref[~nan]))
    assert np.all(np.abs(y[~nan] - ref[~nan]) <= tol)
    # the unfused operators' float32 values, up to the products' blocking
    assert np.allclose(y[~nan], p[~nan], rtol=2e-6, atol=2e-6)
    if off and guard:  # a row masked whole attends to nothing: zeros
        zero = (ref == 0).all(-1)
        assert zero.any() and not y[zero].any() and not p[zero].any()


def test_attention_nan_inputs(contexts):
    """a NaN in q makes its row's softmax NaN: NaN out unguarded, 0 guarded;
    a NaN in v reaches every row that weighs it"""
    inputs = case("nan", [1, 2], 8, 8, 4, 4, [1, 1, 1, 8], masked=0.0)
    inputs["q"][0, 1, 2, 0] = np.nan
    inputs["v"][0, 0, 5, 3] = np.nan
    for guard in (False, True):
        ys = [run(c, inputs, lambda b, o: block(b, o, guard=guard))[1]["y"] for c in contexts]
        ref = reference(inputs["q"], inputs["kt"], inputs["v"], inputs["m"], guard)
        for y in ys:
            assert np.array_equal(np.isnan(y), np.isnan(ref))
            ok = ~np.isnan(ref)
            assert np.allclose(y[ok], ref[ok], rtol=1e-5, atol=1e-5)
        assert np.isnan(ref[0, 0, :, 3]).all()
        assert np.isnan(ref[0, 1, 2]).all() != guard


@pytest.mark.parametrize("scale", [("mul", 0.125, []), ("div", 3.0, [1, 1, 1, 1])],
                         ids=["mul", "div"])
def test_attention_scaled_scores(contexts, scale):
    """older exports scale the scores by a constant before the mask"""
    inputs = case("scaled", [2, 3], 20, 24, 8, 8, [2, 1, 1, 24])
    (gf, yf), (gp, yp) = [run(c, inputs, lambda b, o: block(b, o, guard=True, scale=scale))
                          for c in contexts]
    assert kinds(gf) == ["attention"] and "attention" not in kinds(gp)
    c = scale[1] if scale[0] == "mul" else 1 / scale[1]
    ref = reference(inputs["q"], inputs["kt"], inputs["v"], inputs["m"], True, c)
    assert np.allclose(yf["y"], ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(yf["y"], yp["y"], rtol=2e-6, atol=2e-6)


def test_attention_through_identities(contexts):
    """identities between the nodes (GPT-2's decode graph has one after the
    softmax) are part of the block"""
    inputs = case("ident", [1, 3], 1, 40, 16, 16, [1, 1, 1, 40])
    scale = ("mul", 0.25, [])

    def layers(b, o):  # ten blocks, each one's result the next one's q
        for _ in range(10):
            o = dict(o, q=block(b, o, scale=scale, ident=True))
        return o["q"]
    (gf, yf), (gp, yp) = [run(c, inputs, layers) for c in contexts]
    assert kinds(gf) == ["attention"] * 10 and "attention" not in kinds(gp)
    ref = inputs["q"]
    for _ in range(10):
        ref = reference(ref, inputs["kt"], inputs["v"], inputs["m"], False, 0.25)
    assert np.allclose(yf["y"], ref, rtol=1e-5, atol=1e-5)
    assert np.allclose(yf["y"], yp["y"], rtol=2e-6, atol=2e-6)


def test_attention_onnx_export_against_onnxruntime(contexts):
    """an ONNX attention block as BERT's older exports write it (scores
    divided by sqrt(d), a padding mask of -inf, the NaN guard) imports as one
    step and matches ONNX Runtime"""
    helper = pytest.importorskip("onnx.helper")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto
    B, H, S, D = 2, 4, 16, 8
    F = TensorProto.FLOAT
    vi = lambda n, s: helper.make_tensor_value_info(n, F, s)  # noqa: E731
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node("Div", ["s", "c"], ["sd"]),
        helper.make_node("Add", ["sd", "m"], ["sm"]),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "zero", "p"], ["pg"]),
        helper.make_node("MatMul", ["pg", "v"], ["y"]),
    ]
    inits = [helper.make_tensor("c", F, [], [np.sqrt(D)]), helper.make_tensor("zero", F, [], [0.0])]
    g = helper.make_graph(nodes, "attention",
                          [vi("q", [B, H, S, D]), vi("kt", [B, H, D, S]), vi("v", [B, H, S, D]),
                           vi("m", [B, 1, 1, S])], [vi("y", [B, H, S, D])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    inputs = case("onnx", [B, H], S, S, D, D, [B, 1, 1, S], rows_off=[(1, 0, 0)])
    import webnn.onnx
    m = webnn.onnx.load(model, context=contexts[0])
    assert kinds(m.graph) == ["attention"]
    got = m.run(inputs)["y"]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, inputs)[0]
    assert np.allclose(got, want, rtol=1e-5, atol=1e-5)
    assert not np.isnan(got).any() and not got[1].any()  # batch 1 is masked whole


def must_not_fuse():
    """graphs that look like attention but are not one block"""
    def scores_out(b, o):  # the scores are a graph output too
        s = b.matmul(o["q"], o["kt"])
        return {"y": b.matmul(b.softmax(s, 3), o["v"]), "s": s}

    def probs_read_twice(b, o):  # p read by another node
        p = b.softmax(b.matmul(o["q"], o["kt"]), 3)
        return {"y": b.add(b.matmul(p, o["v"]), b.reduce_sum(p, {"axes": [3], "keepDimensions": True}))}

    def broadcast_batch(b, o):  # q's batch broadcasts over kt's
        q = b.slice(o["q"], [0, 0, 0, 0], [1, 2, 8, 4])
        return b.matmul(b.softmax(b.matmul(q, o["kt"]), 3), o["v"])

    def p_as_v(b, o):  # p is the second operand
        p = b.softmax(b.matmul(o["q"], o["kt"]), 3)
        return b.matmul(b.transpose(o["v"], {"permutation": [0, 1, 3, 2]}), p)

    return {
        "softmax_not_last_axis": lambda b, o: block(b, o, axis=2),
        "guard_not_zero": lambda b, o: block(b, o, guard=True, zero=1.0),
        "guard_negative_zero": lambda b, o: block(b, o, guard=True, zero=-0.0),
        "scores_output": scores_out,
        "probs_read_twice": probs_read_twice,
        "broadcast_batch": broadcast_batch,
        "p_as_v": p_as_v,
        "scale_per_column": lambda b, o: block(b, o, scale=("mul", 0.5, [1, 1, 1, 8])),
        "scale_over_scores": lambda b, o: b.matmul(b.softmax(b.div(
            b.constant(f32([]), np.array(2.0, np.float32)), b.matmul(o["q"], o["kt"])), 3), o["v"]),
    }


@pytest.mark.parametrize("name", sorted(must_not_fuse()))
def test_attention_must_not_fuse(contexts, name):
    inputs = case("nofuse", [2, 2], 8, 8, 4, 8)
    make = must_not_fuse()[name]
    (gf, yf), (_, yp) = [run(c, inputs, make) for c in contexts]
    assert "attention" not in kinds(gf)
    for k in yp:
        assert np.array_equal(yf[k], yp[k], equal_nan=True)


def test_attention_switch_and_summary(contexts):
    """WEBNN_CPU_FUSION=0 turns it off with the other fusions; the fused
    block's nodes are one group of the graph's fusion summary"""
    inputs = case("switch", [1, 2], 5, 6, 4, 4, [1, 1, 5, 6])
    off = make_context(WEBNN_CPU_FUSION="0", WEBNN_CPU_ATTENTION="1")
    g, y = run(off, inputs, lambda b, o: block(b, o, guard=True))
    assert "attention" not in kinds(g)
    g2, y2 = run(contexts[0], inputs, lambda b, o: block(b, o, guard=True))
    assert np.allclose(y["y"], y2["y"], rtol=2e-6, atol=2e-6)
    assert "attention" in kinds(g2)
