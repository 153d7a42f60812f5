"""MLContext.dispatch(): the spec's checks, in its order, and results."""
import numpy as np
import pytest

import webnn

from ._helpers import raises

F32 = {"dataType": "float32", "shape": [2, 3]}


@pytest.fixture
def setup(ctx):
    """y = relu(x) + w, z = x * 2 on a (2, 3) float32 graph with two inputs."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", F32)
    w = b.input("w", F32)
    g = b.build({"y": b.add(b.relu(x), w), "z": b.mul(x, b.constant("float32", 2.0))})

    def tensor(**flags):
        return ctx.create_tensor({**F32, **(flags or {"readable": True, "writable": True})})

    tx, tw, ty, tz = tensor(), tensor(), tensor(), tensor()
    ctx.write_tensor(tx, np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
    ctx.write_tensor(tw, np.ones((2, 3), np.float32))
    return g, tensor, {"x": tx, "w": tw}, {"y": ty, "z": tz}


def test_dispatch_works(ctx, setup):
    g, _, ins, outs = setup
    assert ctx.dispatch(g, ins, outs) is None
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    np.testing.assert_array_equal(ctx.read_tensor(outs["y"]), np.maximum(x, 0) + 1)
    np.testing.assert_array_equal(ctx.read_tensor(outs["z"]), x * 2)


def test_dispatch_is_repeatable(ctx, setup):
    g, _, ins, outs = setup
    for i in range(20):
        ctx.write_tensor(ins["w"], np.full((2, 3), i, np.float32))
        ctx.dispatch(g, ins, outs)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    np.testing.assert_array_equal(ctx.read_tensor(outs["y"]), np.maximum(x, 0) + 19)


def test_same_tensor_twice(ctx, setup):
    g, _, ins, outs = setup
    with raises(TypeError, "dispatch", "twice"):
        ctx.dispatch(g, ins, {"y": outs["y"], "z": outs["y"]})
    with raises(TypeError, "dispatch", "twice"):
        ctx.dispatch(g, ins, {"y": ins["x"], "z": outs["z"]})
    with raises(TypeError, "dispatch", "twice"):
        ctx.dispatch(g, {"x": ins["x"], "w": ins["x"]}, outs)


def test_tensor_of_another_context(ctx, ctx2, setup):
    g, _, ins, outs = setup
    foreign = ctx2.create_tensor({**F32, "readable": True, "writable": True})
    with raises(TypeError, "dispatch", "context"):
        ctx.dispatch(g, ins, {"y": foreign, "z": outs["z"]})
    with raises(TypeError, "dispatch", "context"):
        ctx.dispatch(g, {"x": foreign, "w": ins["w"]}, outs)


def test_destroyed_tensor(ctx, setup):
    g, tensor, ins, outs = setup
    dead = tensor()
    dead.destroy()
    with raises(TypeError, "dispatch", "destroyed"):
        ctx.dispatch(g, {"x": dead, "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "destroyed"):
        ctx.dispatch(g, ins, {"y": outs["y"], "z": dead})


def test_constant_tensor(ctx, setup):
    g, _, ins, outs = setup
    c = ctx.create_constant_tensor(F32, np.ones((2, 3), np.float32))
    with raises(TypeError, "dispatch", "constant"):
        ctx.dispatch(g, {"x": c, "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "constant"):
        ctx.dispatch(g, ins, {"y": c, "z": outs["z"]})


def test_missing_and_extra_names(ctx, setup):
    g, tensor, ins, outs = setup
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {"x": ins["x"]}, outs)
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {}, outs)
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {**ins, "extra": tensor()}, outs)
    with raises(TypeError, "dispatch", "inputs", "'q'"):
        ctx.dispatch(g, {"x": ins["x"], "q": ins["w"]}, outs)    # right count, wrong name
    with raises(TypeError, "dispatch", "outputs"):
        ctx.dispatch(g, ins, {"y": outs["y"]})
    with raises(TypeError, "dispatch", "outputs"):
        ctx.dispatch(g, ins, {**outs, "extra": tensor()})
    with raises(TypeError, "dispatch", "outputs", "'q'"):
        ctx.dispatch(g, ins, {"y": outs["y"], "q": outs["z"]})


@pytest.mark.parametrize("desc", [
    {"dataType": "float32", "shape": [3, 2]},
    {"dataType": "float32", "shape": [6]},
    {"dataType": "float32", "shape": [1, 2, 3]},
    {"dataType": "float16", "shape": [2, 3]},
    {"dataType": "int32", "shape": [2, 3]},
])
def test_descriptor_differs(ctx, setup, desc):
    g, _, ins, outs = setup
    t = ctx.create_tensor({**desc, "readable": True, "writable": True})
    with raises(TypeError, "dispatch", "'x'"):
        ctx.dispatch(g, {"x": t, "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "'y'"):
        ctx.dispatch(g, ins, {"y": t, "z": outs["z"]})


def test_destroyed_graph(ctx, setup):
    g, _, ins, outs = setup
    g.destroy()
    g.destroy()     # idempotent
    with raises(webnn.InvalidStateError, "dispatch", "destroyed"):
        ctx.dispatch(g, ins, outs)


def test_graph_of_another_context(ctx, ctx2, setup):
    g, _, _, _ = setup
    t = {n: ctx2.create_tensor({**F32, "readable": True, "writable": True})
         for n in ("x", "w", "y", "z")}
    with raises(TypeError, "dispatch", "context"):
        ctx2.dispatch(g, {"x": t["x"], "w": t["w"]}, {"y": t["y"], "z": t["z"]})


def test_graph_check_comes_first(ctx, ctx2, setup):
    """The spec checks the graph (context, then destroyed) before the
    tensors: a destroyed graph with bad tensors is an InvalidStateError."""
    g, _, _, _ = setup
    g.destroy()
    with raises(webnn.InvalidStateError, "dispatch"):
        ctx.dispatch(g, {}, {})


def test_bad_argument_types(ctx, setup):
    g, _, ins, outs = setup
    with raises(TypeError, "dispatch", "graph"):
        ctx.dispatch("graph", ins, outs)
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {"x": np.ones((2, 3), np.float32), "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "outputs"):
        ctx.dispatch(g, ins, [outs["y"], outs["z"]])


def test_failed_dispatch_changes_nothing(ctx, setup):
    g, _, ins, outs = setup
    ctx.write_tensor(outs["y"], np.full((2, 3), 7, np.float32))
    with pytest.raises(TypeError):
        ctx.dispatch(g, ins, {"y": outs["y"], "z": outs["y"]})
    np.testing.assert_array_equal(ctx.read_tensor(outs["y"]), np.full((2, 3), 7, np.float32))


def test_output_tensor_need_not_be_readable(ctx, setup):
    g, tensor, ins, outs = setup
    y = tensor(writable=True)      # not readable: dispatch still accepts it
    ctx.dispatch(g, ins, {"y": y, "z": outs["z"]})
    # and the result can be piped into another dispatch
    ctx.dispatch(g, {"x": y, "w": ins["w"]}, {"y": outs["y"], "z": outs["z"]})
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    y1 = np.maximum(x, 0) + 1
    np.testing.assert_array_equal(ctx.read_tensor(outs["z"]), y1 * 2)


def test_compute_checks_names(ctx, setup):
    g, _, _, _ = setup
    with raises(TypeError, "compute"):
        ctx.compute(g, {"x": np.ones((2, 3), np.float32)})
    with raises(TypeError, "compute"):
        ctx.compute(g, {"x": np.ones((2, 3), np.float32), "w": np.ones((2, 3), np.float32),
                        "v": np.ones((2, 3), np.float32)})


# ---- the C path for MLTensor values (_core.dispatch_tensors) ---------------------
# Plain ASCII names with MLTensor values are read in C; anything else goes
# back to the Python layer's conversion.  Both must give the same results and
# the same errors, and neither may change the caller's dicts.
def _ascii_and_other_names(ctx):
    b = webnn.MLGraphBuilder(ctx)
    a = b.input("é\u00e0", F32)        # non-ASCII
    c = b.input("plain", F32)
    return b.build({"out\u00e9": b.sub(a, c), "o2": b.add(a, c)})


def test_non_ascii_names_take_the_python_conversion(ctx):
    g = _ascii_and_other_names(ctx)
    t = [ctx.create_tensor({**F32, "readable": True, "writable": True}) for _ in range(4)]
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    ctx.write_tensor(t[0], a)
    ctx.write_tensor(t[1], np.full((2, 3), 0.5, np.float32))
    ctx.dispatch(g, {"é\u00e0": t[0], "plain": t[1]}, {"out\u00e9": t[2], "o2": t[3]})
    np.testing.assert_array_equal(ctx.read_tensor(t[2]), a - 0.5)
    np.testing.assert_array_equal(ctx.read_tensor(t[3]), a + 0.5)


class _Str(str):
    pass


class _Tensor(webnn.MLTensor):
    pass


def test_str_subclass_names_and_dict_subclasses(ctx, setup):
    g, _, ins, outs = setup
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2

    class D(dict):
        pass

    ctx.dispatch(g, D({_Str("x"): ins["x"], "w": ins["w"]}), D(outs))
    np.testing.assert_array_equal(ctx.read_tensor(outs["y"]), np.maximum(x, 0) + 1)


def test_handles_and_nul_names_are_refused(ctx, setup):
    g, _, ins, outs = setup
    # a tensor's private handle is not an MLTensor
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {"x": ins["x"]._h, "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "outputs"):
        ctx.dispatch(g, ins, {"y": outs["y"]._h, "z": outs["z"]})
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {"x\0": ins["x"], "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, {1: ins["x"], "w": ins["w"]}, outs)
    with raises(TypeError, "dispatch", "inputs"):
        ctx.dispatch(g, None, outs)


def test_dispatch_keeps_the_callers_dicts(ctx, setup):
    g, _, ins, outs = setup
    before_in, before_out = dict(ins), dict(outs)
    ctx.dispatch(g, ins, outs)
    assert ins == before_in and outs == before_out
    assert all(type(v) is webnn.MLTensor for v in (*ins.values(), *outs.values()))


def test_lone_surrogate_names_are_usv_converted(ctx):
    """A name with a lone surrogate is a USVString after conversion (U+FFFD),
    through the Python layer; it matches the graph's input of that name."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("a\ufffd", F32)
    g = b.build({"y": b.relu(x)})
    tx = ctx.create_tensor({**F32, "writable": True})
    ty = ctx.create_tensor({**F32, "readable": True})
    v = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    ctx.write_tensor(tx, v)
    ctx.dispatch(g, {"a\ud800": tx}, {"y": ty})
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.maximum(v, 0))
