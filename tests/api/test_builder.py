"""MLGraphBuilder: constructor, input(), the constant() overloads, build(),
and the spec's checks on descriptors ("check dimensions")."""
import numpy as np
import pytest

import webnn

from ._helpers import OPS, Recipe, parse_signature, raises

F32 = {"dataType": "float32", "shape": [2, 3]}


# ---- constructor --------------------------------------------------------------
def test_constructor_needs_a_context():
    with raises(TypeError, "MLGraphBuilder", "context"):
        webnn.MLGraphBuilder("not a context")
    with raises(TypeError, "MLGraphBuilder"):
        webnn.MLGraphBuilder(None)


# ---- a builder builds once ----------------------------------------------------
def test_second_build_is_invalid_state(builder):
    x = builder.input("x", F32)
    y = builder.relu(x)
    builder.build({"y": y})
    with raises(webnn.InvalidStateError, "build", "already"):
        builder.build({"y": y})
    with raises(webnn.InvalidStateError, "build"):
        builder.build({"z": y})


def test_build_async_once(builder):
    import asyncio
    x = builder.input("x", F32)
    y = builder.relu(x)
    g = asyncio.run(builder.build_async({"y": y}))
    assert isinstance(g, webnn.MLGraph)
    with raises(webnn.InvalidStateError, "build"):
        asyncio.run(builder.build_async({"y": y}))


def test_input_after_build(builder):
    x = builder.input("x", F32)
    builder.build({"y": builder.relu(x)})
    with raises(webnn.InvalidStateError, "input"):
        builder.input("x2", F32)


def test_constant_forms_after_build(ctx, builder):
    x = builder.input("x", F32)
    tensor = ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32))
    builder.build({"y": builder.relu(x)})
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant(F32, np.ones((2, 3), np.float32))
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant({"data_type": "float32", "shape": [2, 3]},
                         np.ones((2, 3), np.float32).tobytes())
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant("float32", 1.5)
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant("int64", 2**40)
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant(tensor)
    with raises(webnn.InvalidStateError, "constant"):
        builder.constant(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_operator_with_valid_args_builds(ctx, op):
    """The recipe used by the other tests is valid: the operator accepts it
    and the result builds into a graph."""
    b = webnn.MLGraphBuilder(ctx)
    out = Recipe(b, op)()
    outs = out if isinstance(out, list) else [out]
    assert all(isinstance(o, webnn.MLOperand) for o in outs)
    g = b.build({f"out{i}": o for i, o in enumerate(outs)})
    assert isinstance(g, webnn.MLGraph)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_operator_after_build_is_invalid_state(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    recipe = Recipe(b, op)          # operands made before build
    keep = b.input("keep", F32)
    b.build({"k": b.identity(keep)})
    with raises(webnn.InvalidStateError, op):
        recipe()
    snake = OPS[op]["snake"]
    with raises(webnn.InvalidStateError, op):
        getattr(b, snake)(*recipe.args, **recipe.options)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_operator_with_operand_of_another_builder(ctx, op):
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    ok = Recipe(b1, op)
    foreign = Recipe(b2, op)
    # replace the first operand argument by one of the other builder
    args = list(ok.args)
    for i, a in enumerate(args):
        if isinstance(a, webnn.MLOperand):
            args[i] = foreign.args[i]
            break
        if isinstance(a, list):
            args[i] = [a[0], foreign.args[i][0]]
            break
    with raises(TypeError, op, "builder"):
        getattr(b1, op)(*args)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_operand_of_another_builder_names_the_argument(ctx, op):
    """python-api.md: messages name the operator, the argument and what was
    wrong -- the argument by its IDL name ('a', 'input', ...)."""
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    ok, foreign = Recipe(b1, op), Recipe(b2, op)
    params = [(k, n) for k, n in parse_signature(OPS[op]) if k != "value"]
    for i, (kind, name) in enumerate(params):
        args = list(ok.args)
        args[i] = foreign.args[i]
        # an item of a sequence is named with its index: 'inputs[0]'
        with raises(TypeError, op, f"'{name}[" if kind == "seq" else f"'{name}'", "builder"):
            getattr(b1, op)(*args)


def test_binary_operand_of_another_builder_either_side(ctx):
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    x = b1.input("x", F32)
    z = b2.input("z", F32)
    with raises(TypeError, "add", "builder"):
        b1.add(x, z)
    with raises(TypeError, "add", "builder"):
        b1.add(z, x)
    c = b2.constant("float32", 1.0)
    with raises(TypeError, "mul", "builder"):
        b1.mul(x, c)


def test_build_with_operand_of_another_builder(ctx):
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    x = b1.input("x", F32)
    z = b2.input("z", F32)
    with raises(TypeError, "build", "builder"):
        b1.build({"y": b1.relu(x), "w": b2.relu(z)})
    # the failed build does not use up the builder
    assert isinstance(b1.build({"y": b1.relu(x)}), webnn.MLGraph)


def test_gemm_option_operand_of_another_builder(ctx):
    b1, b2 = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    a = b1.input("a", {"dataType": "float32", "shape": [2, 2]})
    c = b2.input("c", {"dataType": "float32", "shape": [2, 2]})
    with raises(TypeError, "gemm", "builder"):
        b1.gemm(a, a, {"c": c})


# ---- input() ------------------------------------------------------------------
def test_duplicate_input_name(builder):
    builder.input("x", F32)
    with raises(TypeError, "input", "'x'"):
        builder.input("x", {"dataType": "int32", "shape": [1]})


def test_empty_input_name(builder):
    with raises(TypeError, "input", "name"):
        builder.input("", F32)


def test_input_name_must_be_string(builder):
    with raises(TypeError, "input"):
        builder.input(3, F32)


def test_input_operand_attributes(builder):
    x = builder.input("x", {"data_type": "int8", "shape": [4, 1, 2]})
    assert x.data_type == "int8"
    assert x.dataType == "int8"
    assert x.shape == (4, 1, 2)
    s = builder.input("s", {"dataType": "float16", "shape": []})
    assert s.shape == ()


# ---- descriptors: "check dimensions" ------------------------------------------
BAD_DESCRIPTORS = [
    ({"dataType": "float32", "shape": [0]}, ["dimension"]),
    ({"dataType": "float32", "shape": [2, 0, 3]}, ["dimension"]),
    ({"dataType": "float32", "shape": [-1]}, []),
    ({"dataType": "float32", "shape": [3, -2]}, []),
    ({"dataType": "uint8", "shape": [2**31]}, ["dimension"]),
    ({"dataType": "uint8", "shape": [2**32 + 1]}, []),
    ({"dataType": "uint8", "shape": [2**16, 2**16]}, ["element"]),
    ({"dataType": "uint8", "shape": [2**31 - 1, 2]}, ["element"]),
    ({"dataType": "uint8", "shape": [65536, 32768]}, ["element"]),
    ({"dataType": "float64", "shape": [2]}, ["float64"]),
    ({"dataType": "bool", "shape": [2]}, ["bool"]),
    ({"dataType": "Float32", "shape": [2]}, ["Float32"]),
    ({"dataType": "", "shape": [2]}, []),
    ({"dataType": "float32"}, ["shape"]),
    ({"shape": [2]}, ["dataType"]),
]


def _ids(cases):
    return [f"{d.get('dataType', '-')}-{d.get('shape', '-')}" for d, _ in cases]


@pytest.mark.parametrize("desc,words", BAD_DESCRIPTORS, ids=_ids(BAD_DESCRIPTORS))
def test_bad_descriptor_input(builder, desc, words):
    with raises(TypeError, "input", *words):
        builder.input("x", desc)


@pytest.mark.parametrize("desc,words", BAD_DESCRIPTORS, ids=_ids(BAD_DESCRIPTORS))
def test_bad_descriptor_constant(builder, desc, words):
    with raises(TypeError, "constant", *words):
        builder.constant(desc, b"\0" * 8)


@pytest.mark.parametrize("desc,words", BAD_DESCRIPTORS, ids=_ids(BAD_DESCRIPTORS))
def test_bad_descriptor_create_tensor(ctx, desc, words):
    with raises(TypeError, "createTensor", *words):
        ctx.create_tensor(dict(desc, readable=True))


@pytest.mark.parametrize("desc,words", BAD_DESCRIPTORS, ids=_ids(BAD_DESCRIPTORS))
def test_bad_descriptor_create_constant_tensor(ctx, desc, words):
    with raises(TypeError, "createConstantTensor", *words):
        ctx.create_constant_tensor(desc, b"\0" * 8)


def test_rank_above_max(ctx, builder, limits):
    top = limits["input"]["rank_range"]["max"]
    ok = {"dataType": "float32", "shape": [1] * top}
    bad = {"dataType": "float32", "shape": [1] * (top + 1)}
    builder.input("ok", ok)
    with raises(TypeError, "input", "rank"):
        builder.input("bad", bad)
    with raises(TypeError, "constant", "rank"):
        builder.constant(bad, np.zeros([1] * (top + 1), np.float32))
    with raises(TypeError, "constant", "rank"):
        builder.constant(np.zeros([1] * (top + 1), np.float32))
    with raises(TypeError, "createTensor", "rank"):
        ctx.create_tensor(bad)
    with raises(TypeError, "createConstantTensor", "rank"):
        ctx.create_constant_tensor(bad, np.zeros([1] * (top + 1), np.float32))


def _too_many_bytes(limits):
    """A descriptor with a valid element count whose byte length exceeds
    max_tensor_byte_length, and one exactly at it."""
    top = limits["max_tensor_byte_length"]
    for dt, size in (("int64", 8), ("float32", 4), ("float16", 2), ("uint8", 1)):
        n = top // size + 1
        if n <= 2**31 - 1:
            at = [top // size] if top % size == 0 else None
            return dt, [n], at
    pytest.skip("max_tensor_byte_length is above what a valid element count can reach")


def test_byte_length_above_max(ctx, builder, limits):
    dt, shape, _ = _too_many_bytes(limits)
    desc = {"dataType": dt, "shape": shape}
    with raises(TypeError, "input", "byte"):
        builder.input("x", desc)
    with raises(TypeError, "constant", "byte"):
        builder.constant(desc, b"")
    with raises(TypeError, "createTensor", "byte"):
        ctx.create_tensor(dict(desc, readable=True))
    with raises(TypeError, "createConstantTensor", "byte"):
        ctx.create_constant_tensor(desc, b"")


def test_byte_length_at_max_is_accepted_by_input(builder, limits):
    dt, _, at = _too_many_bytes(limits)
    if at is None or at[0] > 2**31 - 1:
        pytest.skip("no valid element count hits max_tensor_byte_length exactly")
    x = builder.input("x", {"dataType": dt, "shape": at})
    assert x.shape == tuple(at)


def test_large_valid_dimension_is_accepted(builder):
    x = builder.input("x", {"dataType": "uint8", "shape": [2**31 - 1]})
    assert x.shape == (2**31 - 1,)


# ---- build() ------------------------------------------------------------------
def test_empty_outputs(builder):
    builder.input("x", F32)
    with raises(TypeError, "build", "output"):
        builder.build({})


def test_empty_output_name(builder):
    x = builder.input("x", F32)
    with raises(TypeError, "build", "name"):
        builder.build({"": builder.relu(x)})


def test_output_is_an_input(builder):
    x = builder.input("x", F32)
    y = builder.relu(x)
    with raises(TypeError, "build", "'x_out'", "input"):
        builder.build({"y": y, "x_out": x})


@pytest.mark.parametrize("form", ["buffer", "scalar", "ndarray", "tensor"])
def test_output_is_a_constant(ctx, builder, form):
    x = builder.input("x", F32)
    if form == "buffer":
        c = builder.constant(F32, np.ones((2, 3), np.float32))
    elif form == "scalar":
        c = builder.constant("float32", 2.0)
    elif form == "ndarray":
        c = builder.constant(np.ones((2, 3), np.float32))
    else:
        c = builder.constant(ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32)))
    with raises(TypeError, "build", "'c'", "constant"):
        builder.build({"y": builder.relu(x), "c": c})
    # the builder is still usable
    g = builder.build({"y": builder.add(x, c)})
    assert isinstance(g, webnn.MLGraph)


def test_output_not_an_operand(builder):
    x = builder.input("x", F32)
    with raises(TypeError, "build"):
        builder.build({"y": builder.relu(x), "z": 3})
    with raises(TypeError, "build"):
        builder.build([builder.relu(x)])


def test_graph_without_inputs(ctx, builder):
    c = builder.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    g = builder.build({"y": builder.neg(c)})
    out = ctx.compute(g, {})
    np.testing.assert_array_equal(out["y"], -np.arange(6, dtype=np.float32).reshape(2, 3))


def test_graph_descriptors(builder):
    x = builder.input("x", F32)
    u = builder.input("unused", {"dataType": "int32", "shape": [1]})
    del u
    g = builder.build({"y": builder.relu(x), "e": builder.equal(x, x)})
    # only the inputs the outputs depend on are graph inputs (spec: build())
    assert g.input_descriptors == {"x": {"data_type": "float32", "shape": [2, 3]}}
    assert g.output_descriptors == {"y": {"data_type": "float32", "shape": [2, 3]},
                                    "e": {"data_type": "uint8", "shape": [2, 3]}}


# ---- constant(descriptor, buffer) ---------------------------------------------
def test_constant_buffer_checks(builder):
    with raises(TypeError, "constant", "byte length"):
        builder.constant(F32, np.ones((2, 2), np.float32))
    with raises(TypeError, "constant", "float32"):
        builder.constant(F32, np.ones((2, 3), np.int32))     # same byte length, wrong type
    with raises(TypeError, "constant", "float32"):
        builder.constant(F32, np.ones((3,), np.float64))     # same byte length, wrong type
    # raw uint8 bytes of the right length stand for any type
    c = builder.constant(F32, np.ones((2, 3), np.float32).view(np.uint8))
    assert c.shape == (2, 3) and c.data_type == "float32"
    c = builder.constant(F32, bytearray(24))
    assert c.data_type == "float32"
    c = builder.constant(F32, memoryview(bytes(24)))
    assert c.data_type == "float32"


def test_constant_ndarray_descriptor(builder):
    for dt in ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"):
        c = builder.constant(np.zeros((3, 1), dt))
        assert c.data_type == dt and c.shape == (3, 1)
    with raises(TypeError, "constant", "float64"):
        builder.constant(np.zeros(3, np.float64))
    with raises(TypeError, "constant", "bool"):
        builder.constant(np.zeros(3, np.bool_))


# ---- constant(tensor) -----------------------------------------------------------
def test_constant_tensor_rules(ctx, ctx2, builder):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    other = ctx2.create_constant_tensor(F32, data)
    with raises(TypeError, "constant", "context"):
        builder.constant(other)
    plain = ctx.create_tensor({**F32, "readable": True, "writable": True})
    with raises(TypeError, "constant", "constant"):
        builder.constant(plain)
    dead = ctx.create_constant_tensor(F32, data)
    dead.destroy()
    with raises(TypeError, "constant", "destroyed"):
        builder.constant(dead)


def test_constant_tensor_destroyed_after_build(ctx, builder):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ctx.create_constant_tensor(F32, data)
    assert t.constant and not t.readable and not t.writable
    x = builder.input("x", F32)
    g = builder.build({"y": builder.add(x, builder.constant(t))})
    t.destroy()
    out = ctx.compute(g, {"x": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(out, data + 1)


def test_constant_tensor_destroyed_before_build(ctx, builder):
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ctx.create_constant_tensor(F32, data)
    x = builder.input("x", F32)
    y = builder.add(x, builder.constant(t))
    t.destroy()
    # spec build(): only an *output* whose [[constantTensor]] is destroyed is a
    # TypeError; here the graph either builds and computes the data or fails
    # with an error that says the tensor is destroyed -- never garbage.
    try:
        g = builder.build({"y": y})
    except TypeError as e:
        assert "destroy" in str(e)
        return
    out = ctx.compute(g, {"x": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(out, data + 1)


# ---- constant(data_type, value): the spec's "cast" ------------------------------
def _scalar(ctx, dt, value):
    b = webnn.MLGraphBuilder(ctx)
    c = b.constant(dt, value)
    assert c.data_type == dt and c.shape == ()
    g = b.build({"y": b.identity(c)})
    out = ctx.compute(g, {})["y"]
    assert out.dtype == np.dtype(dt) and out.shape == ()
    return out[()]


CASTS = [
    ("int8", 300, 127), ("int8", -300, -128), ("int8", 127, 127), ("int8", 2.5, 2),
    ("int8", 3.5, 4), ("int8", -2.5, -2), ("int8", -0.5, 0), ("int8", 1e300, 127),
    ("int8", float("inf"), 127), ("int8", float("-inf"), -128),
    ("uint8", -5, 0), ("uint8", 300, 255), ("uint8", 254.5, 254), ("uint8", 0.5, 0),
    ("uint8", 1.5, 2),
    ("int32", float("nan"), 0), ("int32", float("inf"), 2**31 - 1),
    ("int32", -1e20, -2**31), ("int32", 2**31, 2**31 - 1), ("int32", -123456, -123456),
    ("uint32", 12345, 12345), ("uint32", float("nan"), 0), ("uint32", 7.5, 8),
    ("int64", 2**63 - 1, 2**63 - 1), ("int64", -2**63, -2**63),
    ("int64", 2**70, 2**63 - 1), ("int64", -2**70, -2**63),
    ("int64", 2**53 + 1, 2**53 + 1), ("int64", 1e300, 2**63 - 1),
    ("int64", float("nan"), 0), ("int64", -7.5, -8),
    ("uint64", 2**64 - 1, 2**64 - 1), ("uint64", 2**63 + 1, 2**63 + 1),
    ("uint64", 2**64 + 5, 2**64 - 1), ("uint64", -1, 0), ("uint64", float("nan"), 0),
    ("uint64", 18446744073709551615, 18446744073709551615),
    ("uint8", float("nan"), 0), ("int8", float("nan"), 0),
]


@pytest.mark.parametrize("dt,value,expected", CASTS,
                         ids=[f"{d}-{v!r}" for d, v, _ in CASTS])
def test_constant_scalar_cast_int(ctx, dt, value, expected):
    got = _scalar(ctx, dt, value)
    assert int(got) == expected, f"constant({dt!r}, {value!r}) gave {got!r}, expected {expected}"


FLOAT_CASTS = [
    ("float16", 0.1, np.float16(0.1)),
    ("float16", 65504.0, np.float16(65504.0)),
    ("float16", 65519.0, np.float16(65504.0)),     # rounds down to the largest finite
    ("float16", 65520.0, np.float16(np.inf)),      # tie -> 2**16 ("even") -> +Infinity
    ("float16", 1e6, np.float16(np.inf)),
    ("float16", -1e6, np.float16(-np.inf)),
    ("float16", 1.0 + 2**-11, np.float16(1.0)),    # tie to even
    ("float16", 1.0 + 3 * 2**-11, np.float16(1.0 + 2**-9)),
    ("float16", 2**-25, np.float16(0.0)),          # tie between 0 and the smallest subnormal
    ("float16", 2**-24, np.float16(2**-24)),
    ("float16", 3.0, np.float16(3.0)),
    ("float16", 2049, np.float16(2048)),           # integer input, tie to even
    ("float32", 0.1, np.float32(0.1)),
    ("float32", 1e40, np.float32(np.inf)),
    ("float32", -1e40, np.float32(-np.inf)),
    ("float32", 2**24 + 1, np.float32(2**24)),
    ("float32", 2**64 - 1, np.float32(2**64)),     # big integer stays a number
    ("float32", 1 + 2**-24, np.float32(1.0)),
    ("float32", float("inf"), np.float32(np.inf)),
    ("float32", -3.25, np.float32(-3.25)),
    # "the number in S closest to x": one rounding from the exact value, no
    # double rounding through float64 (big integers) or float32 (float16)
    ("float32", 2**60 + 2**36 + 1, np.float32(2**60 + 2**37)),
    ("float32", -(2**60 + 2**36 + 1), np.float32(-(2**60 + 2**37))),
    ("float16", 1 + 2**-11 + 2**-40, np.float16(1 + 2**-10)),
    ("float16", 2**-25 + 2**-50, np.float16(2**-24)),
]


@pytest.mark.parametrize("dt,value,expected", FLOAT_CASTS,
                         ids=[f"{d}-{v!r}" for d, v, _ in FLOAT_CASTS])
def test_constant_scalar_cast_float(ctx, dt, value, expected):
    got = _scalar(ctx, dt, value)
    assert got.dtype == np.dtype(dt)
    assert got == expected or (np.isnan(got) and np.isnan(expected)), (
        f"constant({dt!r}, {value!r}) gave {got!r}, expected {expected!r}")


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_constant_scalar_nan_and_negative_zero(ctx, dt):
    assert np.isnan(_scalar(ctx, dt, float("nan")))
    z = _scalar(ctx, dt, -0.0)
    assert z == 0 and np.signbit(z)
    tiny = _scalar(ctx, dt, -1e-300)        # rounds to zero from below: -0
    assert tiny == 0 and np.signbit(tiny)


def test_constant_scalar_bad_type(builder):
    with raises(TypeError, "constant", "float64"):
        builder.constant("float64", 1.0)
    with raises(TypeError, "constant"):
        builder.constant("float32", "one")
    with raises(TypeError, "constant"):
        builder.constant("float32", None)


def test_constant_wrong_arity(builder):
    with raises(TypeError, "constant"):
        builder.constant()
    with raises(TypeError, "constant"):
        builder.constant(F32, b"\0" * 24, 3)
    with raises(TypeError, "constant"):
        builder.constant(3)


def test_constant_keywords(builder, ctx):
    c = builder.constant(descriptor=F32, buffer=np.ones((2, 3), np.float32))
    assert c.shape == (2, 3)
    c = builder.constant(data_type="int8", value=3)
    assert c.data_type == "int8"
    c = builder.constant(dataType="uint8", value=3)
    assert c.data_type == "uint8"
    c = builder.constant(tensor=ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32)))
    assert c.shape == (2, 3)


def test_scalar_constant_broadcasts(ctx, builder):
    x = builder.input("x", F32)
    g = builder.build({"y": builder.mul(x, builder.constant("float32", 0.5))})
    out = ctx.compute(g, {"x": np.full((2, 3), 4, np.float32)})["y"]
    np.testing.assert_array_equal(out, np.full((2, 3), 2, np.float32))
