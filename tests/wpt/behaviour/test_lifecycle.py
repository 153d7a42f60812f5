"""WPT webnn/validation_tests/ files that test building, contexts and graphs
rather than builder validation, ported by hand to the Python contract
(docs/python-api.md): build-more-than-once, constant-changed-buffer,
createContext, destroyContext, destroyGraph, opSupportLimits,
unprintableNames.  Test names follow the upstream names.

Not portable (no Python counterpart): "Create context with GPUDevice"
(WebGPU), detaching an ArrayBuffer (``transfer()``; a Python buffer cannot be
detached: a released memoryview stands in, see test_tensor.py), promises
left un-awaited (the Python calls are synchronous).  destroyContext's
MLBuffer calls (createBuffer / readBuffer / writeBuffer, the API before
MLTensor) are ported to the tensor methods that replaced them."""
import numpy as np
import pytest

import webnn

F2 = {"dataType": "float32", "shape": [2]}
F1 = {"dataType": "float32", "shape": [1]}


def _new_context(ml_context):
    return webnn.ml.create_context(device_type=ml_context.device_type)


def _add_graph_parts(b):
    a, c = b.input("a", F2), b.input("b", F2)
    return a, c, b.add(a, c)


# ---- build-more-than-once -------------------------------------------------------------
def test_throw_if_attempting_to_build_a_second_graph_with_an_mlgraphbuilder(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    _, _, c = _add_graph_parts(b)
    b.build({"c": c})
    with pytest.raises(webnn.InvalidStateError):
        b.build({"c": c})


def test_throw_if_attempting_to_build_a_second_graph_without_awaiting_the_first(ml_context):
    import asyncio

    async def both():
        b = webnn.MLGraphBuilder(ml_context)
        _, _, c = _add_graph_parts(b)
        return await asyncio.gather(b.build_async({"c": c}), b.build_async({"c": c}),
                                    return_exceptions=True)
    results = asyncio.run(both())
    assert sum(isinstance(r, webnn.MLGraph) for r in results) == 1, results
    assert sum(isinstance(r, webnn.InvalidStateError) for r in results) == 1, results


def test_throw_if_an_operand_yielding_method_is_called_on_a_built_mlgraphbuilder(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    a, c2, c = _add_graph_parts(b)
    b.build({"c": c})
    with pytest.raises(webnn.InvalidStateError):
        b.sub(a, c2)
    with pytest.raises(webnn.InvalidStateError):
        b.input("d", F2)
    with pytest.raises(webnn.InvalidStateError):
        b.constant(F2, np.zeros(2, np.float32))


def test_an_mlgraphbuilder_remains_unbuilt_if_build_is_called_with_invalid_parameters(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    a, _, c = _add_graph_parts(b)
    with pytest.raises(TypeError):
        b.build({"a": a})                    # an input is not an output
    b.build({"c": c})
    with pytest.raises(webnn.InvalidStateError):
        b.build({"c": c})


def test_build_two_graphs_with_separate_builders_from_the_same_and_different_contexts(
        ml_context):
    other = _new_context(ml_context)
    for ctx in (ml_context, other):
        b1, b2 = webnn.MLGraphBuilder(ml_context), webnn.MLGraphBuilder(ctx)
        g1 = b1.build({"c1": _add_graph_parts(b1)[2]})
        g2 = b2.build({"c2": _add_graph_parts(b2)[2]})
        x = {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32)}
        np.testing.assert_array_equal(ml_context.compute(g1, x)["c1"], [4, 6])
        np.testing.assert_array_equal(ctx.compute(g2, x)["c2"], [4, 6])
    other.destroy()


# ---- constant-changed-buffer ----------------------------------------------------------
def _dispatch_add(ctx, b, a):
    x = b.input("b", F2)
    g = b.build({"c": b.add(a, x)})
    tb = ctx.create_tensor(dict(F2, writable=True))
    tc = ctx.create_tensor(dict(F2, readable=True))
    ctx.write_tensor(tb, np.array([5, 7], np.float32))
    ctx.dispatch(g, {"b": tb}, {"c": tc})
    return ctx.read_tensor(tc)


def test_constant_data_is_unaffected_by_changes_to_the_buffer_contents(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    data = np.array([2, 3], np.float32)
    a = b.constant(F2, data)
    data[:] = [10, 20]
    np.testing.assert_array_equal(_dispatch_add(ml_context, b, a), [7, 10])


def test_constant_data_is_unaffected_by_releasing_the_buffer(ml_context):
    """Upstream detaches the ArrayBuffer (transfer()); the Python analogue is
    a bytearray whose memoryview is released and which is then cleared."""
    b = webnn.MLGraphBuilder(ml_context)
    raw = bytearray(np.array([2, 3], np.float32).tobytes())
    view = memoryview(raw)
    a = b.constant(F2, view)
    view.release()
    raw[:] = bytes(8)
    np.testing.assert_array_equal(_dispatch_add(ml_context, b, a), [7, 10])


def test_constant_data_cannot_use_a_detached_buffer_which_is_empty(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    view = memoryview(bytearray(8))
    view.release()
    with pytest.raises(TypeError):
        b.constant(F2, view)
    with pytest.raises(TypeError):
        b.constant(F2, b"")                  # what a detached buffer holds


# ---- createContext --------------------------------------------------------------------
@pytest.mark.parametrize("options", [
    {}, {"deviceType": "cpu"}, {"powerPreference": "default"},
    {"powerPreference": "high-performance"}, {"powerPreference": "low-power"},
    {"deviceType": "cpu", "powerPreference": "high-performance"},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_create_context(options):
    ctx = webnn.ml.create_context(options)
    assert isinstance(ctx, webnn.MLContext)
    if "deviceType" in options:
        assert ctx.device_type == options["deviceType"]
    ctx.destroy()


@pytest.mark.parametrize("options", [{"deviceType": "xpu"}, {"powerPreference": "auto"}])
def test_throw_if_an_enum_value_is_not_valid_when_creating_the_context(options):
    with pytest.raises(TypeError, match=next(iter(options))):
        webnn.ml.create_context(options)


# ---- destroyContext -------------------------------------------------------------------
def test_context_will_be_lost_by_destroyed_and_can_be_destroyed_twice(ml_context):
    ctx = _new_context(ml_context)
    ctx.destroy()
    ctx.destroy()
    assert "message" in ctx.lost.result(timeout=10)


def test_destroyed_context_can_not_build_operator_or_create_a_builder(ml_context):
    ctx = _new_context(ml_context)
    b = webnn.MLGraphBuilder(ctx)
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        b.input("input", F1)
    with pytest.raises(webnn.InvalidStateError):
        webnn.MLGraphBuilder(ctx)


def _mul_graph_parts(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("input", F1)
    return b, b.mul(x, b.constant(F1, np.array([2], np.float32)))


def test_destroyed_context_can_not_build_graph(ml_context):
    ctx = _new_context(ml_context)
    b, y = _mul_graph_parts(ctx)
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        b.build({"output": y})


def test_destroyed_context_can_not_compute_or_dispatch(ml_context):
    ctx = _new_context(ml_context)
    b, y = _mul_graph_parts(ctx)
    g = b.build({"output": y})
    tin = ctx.create_tensor(dict(F1, writable=True))
    tout = ctx.create_tensor(dict(F1, readable=True))
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        ctx.compute(g, {"input": np.array([1], np.float32)})
    with pytest.raises(webnn.InvalidStateError):
        ctx.dispatch(g, {"input": tin}, {"output": tout})


def test_executing_dispatch_before_context_destroyed_is_ok(ml_context):
    ctx = _new_context(ml_context)
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"output": b.sub(b.input("lhs", F1), b.input("rhs", F1))})
    ts = [ctx.create_tensor(F1) for _ in range(3)]
    ctx.dispatch(g, {"lhs": ts[0], "rhs": ts[1]}, {"output": ts[2]})
    ctx.destroy()
    assert ctx.lost.result(timeout=10)


def test_destroyed_context_can_not_create_read_or_write_tensors(ml_context):
    ctx = _new_context(ml_context)
    another = _new_context(ml_context)
    another.destroy()                        # destroying another context changes nothing
    readable = ctx.create_tensor(dict(F1, readable=True))
    writable = ctx.create_tensor(dict(F1, writable=True))
    ctx.write_tensor(writable, np.zeros(1, np.float32))
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        ctx.create_tensor(F1)
    with pytest.raises(webnn.InvalidStateError):
        ctx.read_tensor(readable)
    with pytest.raises(webnn.InvalidStateError):
        ctx.write_tensor(writable, np.zeros(4, np.uint8))


# ---- destroyGraph ---------------------------------------------------------------------
def test_graph_can_be_destroyed_twice(ml_context):
    b, y = _mul_graph_parts(ml_context)
    g = b.build({"output": y})
    g.destroy()
    g.destroy()


def test_destroyed_graph_can_not_dispatch(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    g = b.build({"output": b.mul(b.input("lhs", F1), b.input("rhs", F1))})
    ts = [ml_context.create_tensor(F1) for _ in range(3)]
    g.destroy()
    with pytest.raises(webnn.InvalidStateError):
        ml_context.dispatch(g, {"lhs": ts[0], "rhs": ts[1]}, {"output": ts[2]})


def test_destroying_graph_after_dispatch_and_before_read_tensor_is_ok(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    g = b.build({"output": b.mul(b.input("lhs", F1), b.input("rhs", F1))})
    lhs, rhs = (ml_context.create_tensor(dict(F1, writable=True)) for _ in range(2))
    out = ml_context.create_tensor(dict(F1, readable=True))
    ml_context.write_tensor(lhs, np.array([2], np.float32))
    ml_context.write_tensor(rhs, np.array([2], np.float32))
    ml_context.dispatch(g, {"lhs": lhs, "rhs": rhs}, {"output": out})
    g.destroy()
    np.testing.assert_array_equal(ml_context.read_tensor(out), [4])


# ---- opSupportLimits ------------------------------------------------------------------
@pytest.mark.parametrize("op, operands", [
    ("logicalAnd", ("a", "b", "output")), ("logicalOr", ("a", "b", "output")),
    ("logicalXor", ("a", "b", "output")), ("logicalNot", ("a", "output")),
])
def test_check_op_support_limits_data_types(ml_context, op, operands):
    import re
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op).lower()
    limits = ml_context.op_support_limits()[snake]
    for name in operands:
        assert limits[name]["data_types"], (op, name)
        assert set(limits[name]["data_types"]) <= {"uint8"}, (op, name, limits[name])


# ---- unprintableNames -----------------------------------------------------------------
def test_tensor_names_can_include_null_bytes(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input\0tensor", F1)
    g = b.build({"output\0tensor": b.mul(x, b.constant(F1, np.array([2], np.float32)))})
    tin = ml_context.create_tensor(dict(F1, writable=True))
    tout = ml_context.create_tensor(dict(F1, readable=True))
    ml_context.write_tensor(tin, np.array([1], np.float32))
    ml_context.dispatch(g, {"input\0tensor": tin}, {"output\0tensor": tout})
    assert ml_context.read_tensor(tout)[0] == 2
