"""WPT webnn/conformance_tests/ files that are not vector tables, ported by
hand: parallel-dispatch, inputs-are-not-modified, scalars,
inputs-with-special-names, operations-with-special-names, cast-storage,
float16-transport's feedback loops, resample2d-gather-shape-divergence,
graph_devices.  Test names follow the upstream names; expected values are
upstream's (exact: every one is exactly representable).

Contract adjustments: a float16 bit pattern written as a Uint16Array upstream
is a uint8 view here (docs/python-api.md, Data; the spec's Uint8Array rule);
readTensor promises are synchronous read_tensor calls, issued in the order
upstream issues the promises, so the timeline order is the one tested."""
import numpy as np
import pytest

import webnn

from ._known import spec_difference

F1 = {"dataType": "float32", "shape": [1]}
RW1 = dict(F1, readable=True, writable=True)


def _mul_graph(ctx, multiplier):
    b = webnn.MLGraphBuilder(ctx)
    return b.build({"output": b.mul(b.input("input", F1),
                                    b.constant(F1, np.array([multiplier], np.float32)))})


def _write(ctx, t, v):
    ctx.write_tensor(t, np.array([v], np.float32))


def _read(ctx, t):
    return float(ctx.read_tensor(t)[0])


# ---- parallel-dispatch ----------------------------------------------------------------
def test_dispatch_queues_behind_read_tensor(ml_context):
    g = _mul_graph(ml_context, 2)
    t1, t2, out = (ml_context.create_tensor(RW1) for _ in range(3))
    _write(ml_context, t1, 1)
    _write(ml_context, t2, 10)
    ml_context.dispatch(g, {"input": t1}, {"output": out})
    first = _read(ml_context, out)
    ml_context.dispatch(g, {"input": t2}, {"output": out})
    assert [first, _read(ml_context, out)] == [2, 20]


def test_same_graph_write_dispatch_read_repeated(ml_context):
    g = _mul_graph(ml_context, 3)
    got = []
    for v in [1, 2, 3, 4]:
        tin, tout = ml_context.create_tensor(RW1), ml_context.create_tensor(RW1)
        _write(ml_context, tin, v)
        ml_context.dispatch(g, {"input": tin}, {"output": tout})
        got.append(_read(ml_context, tout))
    assert got == [3, 6, 9, 12]


@pytest.mark.parametrize("reads_last", [False, True],
                         ids=["dispatch-read-dispatch-read", "dispatch-dispatch-read-read"])
def test_same_graph_write_write_then_dispatch_and_read(ml_context, reads_last):
    g = _mul_graph(ml_context, 9 if reads_last else 10)
    pairs = [(ml_context.create_tensor(RW1), ml_context.create_tensor(RW1)) for _ in range(4)]
    for v, (tin, _) in zip([1, 2, 3, 4], pairs):
        _write(ml_context, tin, v)
    got = []
    for tin, tout in pairs:
        ml_context.dispatch(g, {"input": tin}, {"output": tout})
        if not reads_last:
            got.append(_read(ml_context, tout))
    if reads_last:
        got = [_read(ml_context, tout) for _, tout in pairs]
    assert got == ([9, 18, 27, 36] if reads_last else [10, 20, 30, 40])


def test_same_graph_serial_inputs(ml_context):
    g = _mul_graph(ml_context, 2)
    ts = [ml_context.create_tensor(RW1) for _ in range(5)]
    _write(ml_context, ts[0], 1)
    for i in range(4):
        ml_context.dispatch(g, {"input": ts[i]}, {"output": ts[i + 1]})
    assert [_read(ml_context, t) for t in ts] == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("reads_last", [False, True])
def test_different_graphs_write_write_then_dispatch_and_read(ml_context, reads_last):
    factor = 2 if reads_last else 1
    items = [(_mul_graph(ml_context, v * factor), ml_context.create_tensor(RW1),
              ml_context.create_tensor(RW1)) for v in [1, 2, 3, 4]]
    for v, (_, tin, _) in zip([1, 2, 3, 4], items):
        _write(ml_context, tin, v)
    got = []
    for g, tin, tout in items:
        ml_context.dispatch(g, {"input": tin}, {"output": tout})
        if not reads_last:
            got.append(_read(ml_context, tout))
    if reads_last:
        got = [_read(ml_context, tout) for _, _, tout in items]
    assert got == ([2, 8, 18, 32] if reads_last else [1, 4, 9, 16])


def test_different_graphs_serial_inputs(ml_context):
    graphs = [_mul_graph(ml_context, 3), _mul_graph(ml_context, 2)]
    ts = [ml_context.create_tensor(RW1) for _ in range(5)]
    _write(ml_context, ts[0], 1)
    for i in range(4):
        ml_context.dispatch(graphs[i % 2], {"input": ts[i]}, {"output": ts[i + 1]})
    assert [_read(ml_context, t) for t in ts] == [1, 3, 6, 18, 36]


def test_different_graphs_using_the_same_tensors(ml_context):
    graphs = [_mul_graph(ml_context, 2), _mul_graph(ml_context, 3)]
    ts = [ml_context.create_tensor(RW1) for _ in range(2)]
    _write(ml_context, ts[0], 1)
    for i in range(6):
        ml_context.dispatch(graphs[i % 2], {"input": ts[i % 2]}, {"output": ts[(i + 1) % 2]})
    assert [_read(ml_context, t) for t in ts] == [216, 72]


# ---- inputs-are-not-modified ----------------------------------------------------------
@pytest.mark.parametrize("op", ["hardSwish", "mul"])
def test_input_tensor_is_not_modified(ml_context, op):
    b = webnn.MLGraphBuilder(ml_context)
    d = {"dataType": "float32", "shape": [4]}
    x = b.input("input", d)
    if op == "hardSwish":
        data = np.array([-4, -1, 1, 4], np.float32)
        y = b.identity(b.hard_swish(x))
    else:
        data = np.array([1, 2, 3, 4], np.float32)
        c = b.constant(d, np.array([-2, 0, 3, 4], np.float32))
        y = b.add(b.mul(x, c), c)
    g = b.build({"output": y})
    tin = ml_context.create_tensor(dict(d, readable=True, writable=True))
    tout = ml_context.create_tensor(dict(d, readable=True))
    ml_context.write_tensor(tin, data)
    ml_context.dispatch(g, {"input": tin}, {"output": tout})
    ml_context.read_tensor(tout)
    np.testing.assert_array_equal(ml_context.read_tensor(tin), data)


# ---- scalars --------------------------------------------------------------------------
def _run1(ctx, g, dt, shape, data, out_shape):
    tin = ctx.create_tensor({"dataType": dt, "shape": shape, "writable": True})
    tout = ctx.create_tensor({"dataType": dt, "shape": out_shape, "readable": True})
    ctx.write_tensor(tin, np.array(data, dt).reshape(shape))
    ctx.dispatch(g, {"input": tin}, {"output": tout})
    return ctx.read_tensor(tout)


def test_scalar_input(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input", {"dataType": "int32", "shape": []})
    c = b.constant({"dataType": "int32", "shape": [4]}, np.array([3, 2, 1, 7], np.int32))
    g = b.build({"output": b.add(x, c)})
    assert _run1(ml_context, g, "int32", [], 4, [4]).tolist() == [7, 6, 5, 11]


@pytest.mark.parametrize("dt", ["float32", "int32"])
def test_scalar_input_constant_and_output(ml_context, dt):
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input", {"dataType": dt, "shape": []})
    c = b.constant({"dataType": dt, "shape": []}, np.array(3, dt))
    g = b.build({"output": b.add(x, c)})
    out = _run1(ml_context, g, dt, [], 4, [])
    assert out.shape == () and out.dtype == np.dtype(dt) and out.item() == 7


@pytest.mark.parametrize("dt, value, op, data, expected", [
    ("float32", 3.0, "add", 2.0, 5.0), ("int32", 42, "mul", 3, 126)])
def test_scalar_constant_created_with_constant_type_value(ml_context, dt, value, op, data,
                                                          expected):
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input", {"dataType": dt, "shape": []})
    g = b.build({"output": getattr(b, op)(x, b.constant(dt, value))})
    assert _run1(ml_context, g, dt, [], data, []).item() == expected


def test_multiple_scalar_constants_in_expression_float16(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input", {"dataType": "float16", "shape": [3]})
    y = b.add(b.mul(x, b.constant("float16", 2.0)), b.constant("float16", -1.0))
    g = b.build({"output": y})
    assert _run1(ml_context, g, "float16", [3], [1, 2, 3], [3]).tolist() == [1, 3, 5]


# ---- inputs-with-special-names / operations-with-special-names ------------------------
SPECIAL_NAMES = ["12-L#!.\u263a", "\U0001f926\U0001f3fc\u2642\ufe0f124DS#!F",
                 "hello\n\t\r\b\f\v'\"\0\\webnn", "\x41\x41\x41",
                 "\u00a9\xa9\u2665\u2026", "\U0001f600"]


@pytest.mark.parametrize("name", SPECIAL_NAMES, ids=range(len(SPECIAL_NAMES)))
def test_abs_input_with_special_character_name(ml_context, name):
    b = webnn.MLGraphBuilder(ml_context)
    d = {"dataType": "float32", "shape": [4]}
    g = b.build({"output": b.abs(b.input(name, d))})
    tin = ml_context.create_tensor(dict(d, readable=True, writable=True))
    tout = ml_context.create_tensor(dict(d, readable=True))
    ml_context.write_tensor(tin, np.array([-2, -1, 1, 2], np.float32))
    ml_context.dispatch(g, {name: tin}, {"output": tout})
    assert ml_context.read_tensor(tout).tolist() == [2, 1, 1, 2]
    assert ml_context.compute(g, {name: np.array([-3, 0, 3, -0.5], np.float32)})[
        "output"].tolist() == [3, 0, 3, 0.5]


@pytest.mark.parametrize("labels", [
    ("12-L#!.\u263a", "\U0001f926\U0001f3fc\u2642\ufe0f124DS#!F"), ("\0node_a", "\0node_b"),
    ("node\0a", "node\0b"), ("\x41\x41\x41", "\x42\x42\x42"),
    ("\u00a9\xa9\u2665\u2026", "\U0001f600")], ids=range(5))
def test_add_nodes_with_special_character_name(ml_context, labels):
    b = webnn.MLGraphBuilder(ml_context)
    d = {"dataType": "float32", "shape": [1, 2, 2, 2]}
    half = np.full((1, 2, 2, 2), 0.5, np.float32)
    i1, i2 = b.input("input1", d), b.input("input2", d)
    y = b.mul(b.add(b.constant(d, half), i1, {"label": labels[0]}),
              b.add(b.constant(d, half), i2, {"label": labels[1]}))
    g = b.build({"output": y})
    ones = np.ones((1, 2, 2, 2), np.float32)
    tins = {k: ml_context.create_tensor(dict(d, writable=True)) for k in ("input1", "input2")}
    for t in tins.values():
        ml_context.write_tensor(t, ones)
    tout = ml_context.create_tensor(dict(d, readable=True))
    ml_context.dispatch(g, tins, {"output": tout})
    assert ml_context.read_tensor(tout).ravel().tolist() == [2.25] * 8


# ---- cast-storage ---------------------------------------------------------------------
HALF_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x8400,
             0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0xfe00]
WIDENED_BITS = [0x00000000, 0x80000000, 0x33800000, 0xb3800000, 0x387fc000, 0xb87fc000,
                0x38800000, 0xb8800000, 0x3f800000, 0xbf800000, 0x477fe000, 0xc77fe000,
                0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000]
FLOAT_VALUES = np.array([0, -0.0, 1.0003, -1.0003, 2.0 ** -149, -(2.0 ** -149), 65504, -65504,
                         1, -1, 3.4e38, -3.4e38, np.inf, -np.inf, np.nan, -np.nan], np.float32)
UNDERFLOW = np.array([0, -0.0, 2.0 ** -26, -(2.0 ** -26), 2.0 ** -25, -(2.0 ** -25),
                      3 * 2.0 ** -25, -3 * 2.0 ** -25, 5 * 2.0 ** -25, -5 * 2.0 ** -25,
                      1.00048828125, -1.00048828125], np.float32)
STORAGE = [
    ("float16 identity", "identity", "float16", "float16",
     np.array(HALF_BITS, np.uint16).view(np.uint8), HALF_BITS),
    ("same-type float16 cast", "cast", "float16", "float16",
     np.array(HALF_BITS, np.uint16).view(np.uint8), HALF_BITS),
    ("float16 to float32 cast", "cast", "float16", "float32",
     np.array(HALF_BITS, np.uint16).view(np.uint8), WIDENED_BITS),
    ("same-type float32 cast", "cast", "float32", "float32", FLOAT_VALUES,
     FLOAT_VALUES.view(np.uint32).tolist()),
    ("float32 to float16 signed underflow and ties", "cast", "float32", "float16", UNDERFLOW,
     [0, 0x8000, 0, 0x8000, 0, 0x8000, 2, 0x8002, 2, 0x8002, 0x3c00, 0xbc00]),
]


def _storage_params():
    for name, op, src, dst, data, expected in STORAGE:
        for shape in ([[16], [1, 2, 2, 4]] if len(expected) == 16 else [[12]]):
            for constant in (False, True):
                yield pytest.param(op, src, dst, data, expected, shape, constant,
                                   id=f"{name}, {'constant' if constant else 'runtime'}, "
                                      f"shape {shape}")


@pytest.mark.parametrize("op, src, dst, data, expected, shape, constant", list(_storage_params()))
def test_cast_storage(ml_context, op, src, dst, data, expected, shape, constant):
    b = webnn.MLGraphBuilder(ml_context)
    desc = {"dataType": src, "shape": shape}
    x = b.constant(desc, data) if constant else b.input("input", desc)
    g = b.build({"result": b.identity(x) if op == "identity" else b.cast(x, dst)})
    out = ml_context.create_tensor({"dataType": dst, "shape": shape, "readable": True})
    inputs = {}
    if not constant:
        inputs["input"] = ml_context.create_tensor(dict(desc, writable=True))
        ml_context.write_tensor(inputs["input"], data)
    bits = np.uint16 if dst == "float16" else np.uint32
    mask, inf = (0x7fff, 0x7c00) if dst == "float16" else (0x7fffffff, 0x7f800000)
    for _ in range(2):
        ml_context.dispatch(g, inputs, {"result": out})
        got = ml_context.read_tensor(out).view(bits).ravel().tolist()
        assert len(got) == len(expected)
        for i, (a, e) in enumerate(zip(got, expected)):
            if (e & mask) > inf:                 # NaN: any NaN (payloads are free)
                assert (a & mask) > inf, f"element {i}: 0x{a:x} is not NaN"
            else:
                assert a == e, f"element {i}: 0x{a:x}, expected 0x{e:x}"


# ---- float16-transport: the feedback loops --------------------------------------------
STATE_BITS = [0x0000, 0x8000, 0x0001, 0x8001, 0x0003, 0x8003, 0x03ff, 0x83ff, 0x0400, 0x8400]


@pytest.mark.parametrize("shape", [[10], [1, 2, 1, 5]], ids=str)
@pytest.mark.parametrize("op", ["identity", "cast"])
def test_float16_signed_subnormal_state_ping_pong(ml_context, op, shape):
    b = webnn.MLGraphBuilder(ml_context)
    desc = {"dataType": "float16", "shape": shape}
    x = b.input("input", desc)
    g = b.build({"result": b.identity(x) if op == "identity" else b.cast(x, "float16")})
    first, second = (ml_context.create_tensor(dict(desc, readable=True, writable=True))
                     for _ in range(2))
    for bits in (STATE_BITS, STATE_BITS[::-1]):
        ml_context.write_tensor(first, np.array(bits, np.uint16).view(np.uint8))
        current, nxt = first, second
        for step in range(8):
            ml_context.dispatch(g, {"input": current}, {"result": nxt})
            assert ml_context.read_tensor(nxt).view(np.uint16).ravel().tolist() == bits, step
            assert ml_context.read_tensor(current).view(np.uint16).ravel().tolist() == bits, step
            current, nxt = nxt, current


# ---- resample2d-gather-shape-divergence -----------------------------------------------
def test_resample2d_output_shape_matches_backend_allocation_at_the_2_24_boundary(ml_context):
    n = 2 ** 24 + 1                              # float32 cannot hold it
    b = webnn.MLGraphBuilder(ml_context)
    x = b.input("input", {"dataType": "float32", "shape": [1, 1, n, 1]})
    r = b.resample2d(x, mode="nearest-neighbor", scales=[1, 1], axes=[2, 3])
    assert r.shape[2] == n
    idx = b.input("indices", {"dataType": "int32", "shape": [1]})
    gathered = b.gather(r, idx, axis=2)
    assert list(gathered.shape) == [1, 1, 1, 1]
    g = b.build({"resampled": r, "gathered": gathered})
    data = np.zeros((1, 1, n, 1), np.float32)
    data[0, 0, n - 2, 0], data[0, 0, n - 1, 0] = 5, 42
    out = ml_context.compute(g, {"input": data, "indices": np.array([n - 1], np.int32)})
    assert out["gathered"].ravel()[0] == out["resampled"][0, 0, n - 1, 0]
    assert out["gathered"].ravel()[0] == 42


# ---- graph_devices --------------------------------------------------------------------
@spec_difference("graph_devices::graph.devices is not empty")
def test_graph_devices_is_not_empty(ml_context):
    b = webnn.MLGraphBuilder(ml_context)
    a = b.input("A", {"dataType": "float32", "shape": []})
    g = b.build({"o": b.add(a, a)})
    assert len(g.devices) > 0
