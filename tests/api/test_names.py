"""python-api.md "Names": snake_case and camelCase spellings, operator
options (trailing dict, keywords, both; either spelling), `label`, unknown
options, and the `_async` twins."""
import asyncio

import numpy as np
import pytest

import webnn

from ._helpers import OPS, Recipe, first_operand, raises, snake_case

F32 = {"dataType": "float32", "shape": [2, 3]}


# ---- operator names -------------------------------------------------------------
@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_operator_has_both_names(builder, op):
    snake = snake_case(op)
    assert OPS[op]["snake"] == snake, f"{op}: table says {OPS[op]['snake']!r}, rule gives {snake!r}"
    assert hasattr(webnn.MLGraphBuilder, op) and hasattr(webnn.MLGraphBuilder, snake)
    m1, m2 = getattr(builder, op), getattr(builder, snake)
    assert m1 is m2, f"builder.{op} is not builder.{snake}"
    # and the other order of first access
    b2 = webnn.MLGraphBuilder(builder._ctx)
    assert getattr(b2, snake) is getattr(b2, op)


@pytest.mark.parametrize("camel,snake", [
    ("gatherND", "gather_nd"), ("isNaN", "is_nan"), ("isInfinite", "is_infinite"),
    ("greaterOrEqual", "greater_or_equal"), ("lesserOrEqual", "lesser_or_equal"),
    ("notEqual", "not_equal"), ("logicalNot", "logical_not"), ("roundEven", "round_even"),
    ("hardSigmoid", "hard_sigmoid"), ("hardSwish", "hard_swish"), ("leakyRelu", "leaky_relu"),
    ("convTranspose2d", "conv_transpose2d"), ("reduceL1", "reduce_l1"),
    ("l2Pool2d", "l2_pool2d"), ("averagePool2d", "average_pool2d"), ("lstmCell", "lstm_cell"),
    ("argMin", "arg_min"), ("scatterND", "scatter_nd"), ("reduceLogSumExp", "reduce_log_sum_exp"),
])
def test_documented_spellings(builder, camel, snake):
    if camel not in webnn.OPERATORS:
        pytest.skip(f"{camel} is not implemented yet")
    assert getattr(builder, camel) is getattr(builder, snake)


def test_every_spelling_is_one_callable_per_instance(ctx):
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    assert b1.add is b1.add
    assert b1.add is not b2.add      # bound to its own builder
    assert b1.isNaN is b1.is_nan and b2.is_nan is b2.isNaN


def test_method_aliases_of_other_interfaces(ctx, builder):
    assert ctx.createTensor is ctx.create_tensor
    assert ctx.createConstantTensor is ctx.create_constant_tensor
    assert ctx.readTensor is ctx.read_tensor
    assert ctx.writeTensor is ctx.write_tensor
    assert ctx.opSupportLimits is ctx.op_support_limits
    assert webnn.ml.createContext is webnn.ml.create_context
    assert builder.build is builder.build
    t = ctx.create_tensor(F32)
    assert t.dataType == t.data_type


def test_descriptor_keys_in_either_spelling(ctx, builder):
    a = builder.input("a", {"dataType": "int32", "shape": [2]})
    b = builder.input("b", {"data_type": "int32", "shape": [2]})
    assert a.data_type == b.data_type == "int32"
    t = ctx.create_tensor({"data_type": "int8", "shape": [1], "readable": True})
    assert t.data_type == "int8"


# ---- options: dict, keywords, both, either spelling ------------------------------
def _run(ctx, build, x):
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", {"dataType": "float32", "shape": list(x.shape)})
    g = b.build({"y": build(b, xi)})
    return ctx.compute(g, {"x": x})["y"]


X = np.array([[-2.0, -0.5, 0.0], [0.25, 1.0, 3.0]], np.float32)


@pytest.mark.parametrize("how", [
    lambda b, x: b.clamp(x, {"minValue": 0, "maxValue": 1}),
    lambda b, x: b.clamp(x, {"min_value": 0, "max_value": 1}),
    lambda b, x: b.clamp(x, minValue=0, maxValue=1),
    lambda b, x: b.clamp(x, min_value=0, max_value=1),
    lambda b, x: b.clamp(x, {"minValue": 0}, max_value=1),
    lambda b, x: b.clamp(x, {"max_value": 1}, minValue=0),
    lambda b, x: b.clamp(x, {"min_value": 0, "label": "c1"}, maxValue=1),
    lambda b, x: b.clamp(x, None, minValue=0, maxValue=1, label="c2"),
    lambda b, x: b.clamp(input=x, minValue=0, maxValue=1),
])
def test_clamp_option_spellings(ctx, how):
    np.testing.assert_array_equal(_run(ctx, how, X), np.clip(X, 0, 1))


@pytest.mark.parametrize("how", [
    lambda b, x: b.gemm(x, x, {"aTranspose": True, "alpha": 2.0}),
    lambda b, x: b.gemm(x, x, {"a_transpose": True, "alpha": 2.0}),
    lambda b, x: b.gemm(x, x, a_transpose=True, alpha=2.0),
    lambda b, x: b.gemm(x, x, aTranspose=True, alpha=2.0),
    lambda b, x: b.gemm(x, x, {"alpha": 2.0}, a_transpose=True),
    lambda b, x: b.gemm(x, x, {"aTranspose": True}, alpha=2.0, label="g"),
])
def test_gemm_option_spellings(ctx, how):
    np.testing.assert_allclose(_run(ctx, how, X), 2.0 * X.T @ X, rtol=1e-6)


@pytest.mark.parametrize("how", [
    lambda b, x: b.gemm(x, x, {"bTranspose": True, "beta": 0.5, "c": b.constant("float32", 4.0)}),
    lambda b, x: b.gemm(x, x, b_transpose=True, beta=0.5, c=b.constant("float32", 4.0)),
    lambda b, x: b.gemm(x, x, {"c": b.constant("float32", 4.0)}, bTranspose=True, beta=0.5),
])
def test_gemm_operand_option(ctx, how):
    np.testing.assert_allclose(_run(ctx, how, X), X @ X.T + 2.0, rtol=1e-6)


@pytest.mark.parametrize("op,opts,ref", [
    ("elu", {"alpha": 2.0}, lambda x: np.where(x > 0, x, 2.0 * (np.exp(x) - 1))),
    ("leakyRelu", {"alpha": 0.5}, lambda x: np.where(x > 0, x, 0.5 * x)),
    ("linear", {"alpha": 3.0, "beta": -1.0}, lambda x: 3.0 * x - 1.0),
    ("hardSigmoid", {"alpha": 0.5, "beta": 0.25}, lambda x: np.clip(0.5 * x + 0.25, 0, 1)),
])
def test_activation_options(ctx, op, opts, ref):
    if op not in webnn.OPERATORS:
        pytest.skip(f"{op} not implemented")
    snake = OPS[op]["snake"]
    expected = ref(X.astype(np.float64))
    forms = [
        lambda b, x: getattr(b, op)(x, opts),
        lambda b, x: getattr(b, snake)(x, **opts),
        lambda b, x: getattr(b, op)(x, dict(opts), label="act"),
    ]
    for form in forms:
        np.testing.assert_allclose(_run(ctx, form, X), expected, rtol=1e-5, atol=1e-6)


def test_value_parameters_by_keyword(ctx):
    out = _run(ctx, lambda b, x: b.reshape(x, new_shape=[3, 2]), X)
    np.testing.assert_array_equal(out, X.reshape(3, 2))
    out = _run(ctx, lambda b, x: b.reshape(x, newShape=[6]), X)
    np.testing.assert_array_equal(out, X.reshape(6))
    out = _run(ctx, lambda b, x: b.cast(b.cast(x, data_type="int32"), "float32"), X)
    np.testing.assert_array_equal(out, X.astype(np.int32).astype(np.float32))
    out = _run(ctx, lambda b, x: b.cast(b.cast(x, dataType="int8", label="c"), "float32"), X)
    np.testing.assert_array_equal(out, X.astype(np.int8).astype(np.float32))


def test_options_must_be_a_dict(builder):
    x = builder.input("x", F32)
    with raises(TypeError, "clamp"):
        builder.clamp(x, [0, 1])
    with raises(TypeError, "relu"):
        builder.relu(x, "label")


# ---- label --------------------------------------------------------------------
@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_label_accepted_on_every_operator(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    out1 = r(label=f"{op}_dict")                              # in the trailing dict
    out2 = getattr(b, op)(*r.args, **r.options, label=f"{op}_kw")   # as a keyword
    out3 = getattr(b, OPS[op]["snake"])(*r.args, {"label": ""})
    for out in (out1, out2, out3):
        assert isinstance(first_operand(out), webnn.MLOperand)


def test_label_in_error_message_add(builder):
    a = builder.input("a", F32)
    b = builder.input("b", {"dataType": "int32", "shape": [2, 3]})
    with raises(TypeError, "add", "mylabel", "b"):
        builder.add(a, b, {"label": "mylabel"})
    with raises(TypeError, "add", "mylabel", "b"):
        builder.add(a, b, label="mylabel")


def test_label_in_error_message_matmul(builder):
    a = builder.input("a", {"dataType": "float32", "shape": [2, 3]})
    b = builder.input("b", {"dataType": "float32", "shape": [2, 3]})
    with raises(TypeError, "matmul", "stem"):
        builder.matmul(a, b, {"label": "stem"})


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_label_in_every_operator_error(ctx, op):
    """An invalid call (an operand of another builder) names the operator and
    its label."""
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    ok, foreign = Recipe(b1, op), Recipe(b2, op)
    args = list(ok.args)
    for i, a in enumerate(args):
        if isinstance(a, webnn.MLOperand):
            args[i] = foreign.args[i]
            break
        if isinstance(a, list):
            args[i] = foreign.args[i]
            break
    label = f"L_{op}_42"
    with raises(TypeError, op, label):
        getattr(b1, op)(*args, {"label": label})


@pytest.mark.parametrize("make_error", [
    pytest.param(lambda b, x: b.relu(x, label="LBL", bogus=1), id="unknown-option"),
    pytest.param(lambda b, x: b.cast(x, "float64", {"label": "LBL"}), id="bad-enum"),
    pytest.param(lambda b, x: b.reshape(x, [7], label="LBL"), id="bad-new-shape"),
    pytest.param(lambda b, x: b.clamp(x, {"minValue": 2, "maxValue": 1, "label": "LBL"}),
                 id="clamp-min-max"),
    pytest.param(lambda b, x: b.matmul(x, x, label="LBL"), id="matmul-shapes"),
    pytest.param(lambda b, x: b.add(x, x, {"label": "LBL"}, alpha=1), id="unknown-kw"),
])
def test_label_in_every_kind_of_error(builder, make_error):
    x = builder.input("x", F32)
    with pytest.raises(TypeError) as info:
        make_error(builder, x)
    assert "LBL" in str(info.value), f"label missing from {str(info.value)!r}"


def test_label_is_sanitized_in_messages(builder):
    """Spec advisement on MLOperatorOptions.label: escape or filter control
    characters (U+202A..U+202E, U+2066..U+2069) in error messages."""
    a = builder.input("a", F32)
    b = builder.input("b", {"dataType": "int32", "shape": [2, 3]})
    label = "ab\u202ecd\u2066ef\ngh"
    with pytest.raises(TypeError) as info:
        builder.add(a, b, label=label)
    msg = str(info.value)
    assert "ab" in msg and "cd" in msg, msg
    bad = [c for c in msg if c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\n"]
    assert not bad, f"raw control characters {bad!r} in {msg!r}"


# ---- unknown options --------------------------------------------------------------
# WebIDL ignores dictionary members it does not define: an unknown member of
# the options dict is dropped with a webnn.UnknownOptionWarning naming it and
# the nearest known member; an unknown keyword argument is a TypeError.
@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_unknown_option(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    with pytest.warns(webnn.UnknownOptionWarning) as record:
        out = first_operand(r(bogusOption=1))
    assert len(record) == 1 and record[0].filename == __file__ or "_helpers" in record[0].filename
    msg = str(record[0].message)
    assert op in msg and "'bogusOption'" in msg and "ignored" in msg, msg
    assert isinstance(out, webnn.MLOperand)
    with raises(TypeError, op, "bogus_option"):
        getattr(b, op)(*r.args, bogus_option=1)
    # the builder is still usable after the error
    assert isinstance(first_operand(r()), webnn.MLOperand)


def test_unknown_option_names_the_nearest_member(builder):
    x = builder.input("x", {"data_type": "float32", "shape": [1, 1, 4, 4]})
    with pytest.warns(webnn.UnknownOptionWarning,
                      match=r"averagePool2d: options member 'roundingType' .* ignored "
                            r"\(nearest known member: 'outputShapeRounding'\)"):
        y = builder.average_pool2d(x, {"roundingType": "ceil", "windowDimensions": [3, 3],
                                       "strides": [2, 2]})
    assert y.shape == (1, 1, 1, 1)          # ignored: the default floor rounding
    with pytest.warns(webnn.UnknownOptionWarning, match="'paddding'.*'padding'"):
        builder.conv2d(x, builder.input("w", {"data_type": "float32", "shape": [1, 1, 3, 3]}),
                       {"paddding": [1, 1, 1, 1]})
    with pytest.raises(TypeError, match="conv2d: unexpected keyword argument 'paddding' "
                                        r"\(nearest known member: 'padding'\)"):
        builder.conv2d(x, x, paddding=[1, 1, 1, 1])
    # createContext's options are a dictionary too
    with pytest.warns(webnn.UnknownOptionWarning, match="'acelerated'.*'accelerated'"):
        webnn.ml.create_context({"acelerated": False, "device_type": "cpu"}).destroy()
    with pytest.raises(TypeError, match="createContext: unexpected keyword argument 'acelerated'"):
        webnn.ml.create_context(acelerated=False)


def test_too_many_positional_arguments(builder):
    x = builder.input("x", F32)
    with raises(TypeError, "relu"):
        builder.relu(x, x, {})
    with raises(TypeError, "add"):
        builder.add(x)


# ---- the _async twins ----------------------------------------------------------------
def test_async_twins_under_asyncio_run():
    async def main():
        ctx = await webnn.ml.create_context_async(device_type="cpu")
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", F32)
        c = b.constant(await ctx.create_constant_tensor_async(F32, np.full((2, 3), 2, np.float32)))
        g = await b.build_async({"y": b.mul(x, c)})
        tx = await ctx.create_tensor_async({**F32, "writable": True})
        ty = await ctx.create_tensor_async({**F32, "readable": True})
        ctx.write_tensor(tx, np.full((2, 3), 3, np.float32))
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        y = await ctx.read_tensor_async(ty)
        out = np.empty((2, 3), np.float32)
        await ctx.read_tensor_async(ty, out)
        many = await asyncio.gather(*[ctx.read_tensor_async(ty) for _ in range(8)])
        ctx.destroy()
        return y, out, many
    y, out, many = asyncio.run(main())
    np.testing.assert_array_equal(y, np.full((2, 3), 6, np.float32))
    np.testing.assert_array_equal(out, y)
    for m in many:
        np.testing.assert_array_equal(m, y)


def test_async_twins_have_camel_aliases(ctx, builder):
    assert ctx.readTensorAsync is ctx.read_tensor_async
    assert ctx.createTensorAsync is ctx.create_tensor_async
    assert builder.buildAsync is builder.build_async
    assert webnn.ml.createContextAsync is webnn.ml.create_context_async
