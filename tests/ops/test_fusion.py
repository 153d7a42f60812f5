"""Fused epilogues on the CPU (compiler/fuse.c, cpu/epilogue.c): every chain
producer -> [batchNormalization] -> [add] -> [activation] that the pipeline
fuses gives exactly the
results of the same graph run operator by operator (a context created with
WEBNN_CPU_FUSION=0), on random data and on edge values (NaN, +-Inf, values
on and beyond the clamp bounds), for every producer path (1x1 / 3x3 / strided
/ grouped / depthwise convolutions in both layouts, convTranspose2d, matmul,
gemm), residual and per-channel addends of several broadcast shapes, every
fusable activation, float32 and float16.  Each test also checks from the
graph's summary that the chain was (or, for the patterns that must not
fuse, was not) fused.  The unfused operators are checked against NumPy in
their own tests; one case here checks the fused result against NumPy float64
directly."""
import zlib

import numpy as np
import pytest

import webnn

ACTS = {
    "relu": {}, "clamp": {"min_value": -0.5, "max_value": 0.75}, "sigmoid": {},
    "tanh": {}, "gelu": {}, "elu": {"alpha": 0.7}, "hard_swish": {},
    "hard_sigmoid": {"alpha": 0.3, "beta": 0.4}, "leaky_relu": {"alpha": 0.2},
    "linear": {"alpha": 1.5, "beta": -0.25}, "softplus": {}, "softsign": {},
}


def make_context(**env):
    """A CPU context created with the given WEBNN_CPU_* switches (read at
    creation), the environment restored afterwards."""
    import os
    old = {k: os.environ.get(k) for k in env}
    try:
        os.environ.update(env)
        return webnn.ml.create_context(device_type="cpu")
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def contexts():
    """(fused, unfused); layout planning off in both (test_layout.py), and
    no batchNormalization folded into a convolution's constants (that is
    not bit-exact: test_batch_norm_folded)"""
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_FOLD_BN="0"),
            make_context(WEBNN_CPU_FUSION="0", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_FOLD_BN="0"))


@pytest.fixture(scope="module")
def fold_contexts():
    """(folded, unfused)"""
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_FOLD_BN="1"),
            make_context(WEBNN_CPU_FUSION="0", WEBNN_CPU_LAYOUT="0", WEBNN_CPU_FOLD_BN="1"))


def edge_values(rng, shape, dtype):
    """Random normal values with NaN, +-Inf, huge values and values around
    the clamp bounds sprinkled in."""
    a = rng.standard_normal(shape) * 2
    flat = a.reshape(-1)
    k = max(1, flat.size // 50)
    idx = rng.choice(flat.size, size=min(flat.size, 6 * k), replace=False)
    specials = [np.nan, np.inf, -np.inf, 1e30, -1e30, 0.75, -0.5, 0.0, -0.0, 88.5, -88.5, 1e-40]
    for n, i in enumerate(idx):
        flat[i] = specials[n % len(specials)]
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def run_in(contexts, make, inputs):
    """make(builder, operands) -> an output operand or a dict of them, built
    and computed in each context: (the results, the graphs' summaries), one
    per context"""
    outs, summaries = [], []
    for ctx in contexts:
        b = webnn.MLGraphBuilder(ctx)
        ops = {name: b.input(name, {"dataType": str(a.dtype), "shape": list(a.shape)})
               for name, a in inputs.items()}
        y = make(b, ops)
        if not isinstance(y, dict):
            y = {"y": y}
        g = b.build(y)
        outs.append(ctx.compute(g, inputs))
        summaries.append(g.summary())
    return outs, summaries


def run_both(contexts, make, inputs):
    """make(builder, dtype) -> output operand; returns (fused, unfused)
    results and the fused graph's summary."""
    outs, summaries = run_in(contexts, make, inputs)
    return outs[0], outs[1], summaries[0]


def assert_same(fused, plain):
    for name in plain:
        np.testing.assert_array_equal(fused[name], plain[name], err_msg=name)


def conv_case(rng, dt, layout, groups, cin, cout, k, stride, pad, hw=9, n=2):
    if layout == "nchw":
        xs = (n, cin, hw, hw)
        ws = (cout, cin // groups, k, k)
    else:
        xs = (n, hw, hw, cin)
        ws = (cout, k, k, cin // groups)  # ohwi
    x = edge_values(rng, xs, dt)
    w = (rng.standard_normal(ws) * 0.3).astype(dt)
    bias = rng.standard_normal(cout).astype(dt)
    opts = {"strides": [stride, stride], "padding": [pad] * 4, "groups": groups,
            "input_layout": layout}
    if layout == "nhwc":
        opts["filter_layout"] = "ohwi"
    return x, w, bias, opts


CONVS = {
    # name: (layout, groups, cin, cout, k, stride, pad)
    "1x1_nchw": ("nchw", 1, 8, 20, 1, 1, 0),
    "3x3_nchw": ("nchw", 1, 8, 16, 3, 1, 1),
    "3x3_s2_nchw": ("nchw", 1, 6, 10, 3, 2, 1),
    "dw_nchw": ("nchw", 12, 12, 12, 3, 1, 1),
    "dw_s2_nchw": ("nchw", 12, 12, 12, 3, 2, 1),
    "grouped_nchw": ("nchw", 2, 8, 6, 3, 1, 1),
    "1x1_nhwc": ("nhwc", 1, 8, 20, 1, 1, 0),
    # exactly 24 output channels: the 16 + 8 lane micro-kernel (direct.c)
    "1x1_24_nhwc": ("nhwc", 1, 40, 24, 1, 1, 0),
    "3x3_nhwc": ("nhwc", 1, 8, 24, 3, 1, 1),
    "winograd_nhwc": ("nhwc", 1, 16, 32, 3, 1, 1),
    "dw_nhwc": ("nhwc", 12, 12, 12, 3, 1, 1),
    # 16-channel vectors and a tail of 8 (the per-row epilogue of the
    # depthwise kernel), strides 1 and 2
    "dw40_nhwc": ("nhwc", 40, 40, 40, 3, 1, 1),
    "dw40_s2_nhwc": ("nhwc", 40, 40, 40, 3, 2, 1),
    # 5x5 depthwise (depthwise_k.h): 9 x 9 rows in table blocks, a tail of
    # 8 channels; strided
    "dw5_40_nhwc": ("nhwc", 40, 40, 40, 5, 1, 2),
    "dw5_48_s2_nhwc": ("nhwc", 48, 48, 48, 5, 2, 2),
    # grouped nhwc on the direct kernel, group by group (direct.c): 4
    # groups of 6 -> 10 channels (a partial vector each), and a strided 3x3
    # with 2 groups of 4 -> 18 (a vector and a partial one)
    "grouped_nhwc": ("nhwc", 4, 24, 40, 1, 1, 0),
    "grouped3x3_nhwc": ("nhwc", 2, 8, 36, 3, 2, 1),
}


def out_shape(x, opts, cout, k):
    nchw = opts["input_layout"] == "nchw"
    n, hw = x.shape[0], x.shape[2] if nchw else x.shape[1]
    s, p = opts["strides"][0], opts["padding"][0]
    o = (hw + 2 * p - k) // s + 1
    return (n, cout, o, o) if nchw else (n, o, o, cout)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("conv", sorted(CONVS))
@pytest.mark.parametrize("epi", ["clamp", "relu", "add", "add_relu", "chan_clamp", "add_sigmoid",
                                 "silu", "add_silu"])
def test_conv2d_chains(contexts, conv, dt, epi):
    rng = np.random.default_rng(zlib.crc32(f"{conv}-{dt}-{epi}".encode()))
    layout, groups, cin, cout, k, stride, pad = CONVS[conv]
    x, w, bias, opts = conv_case(rng, dt, layout, groups, cin, cout, k, stride, pad)
    ys = out_shape(x, opts, cout, k)
    inputs = {"x": x}
    if epi.startswith("add"):
        inputs["r"] = edge_values(rng, ys, dt)
    if epi.startswith("chan"):
        inputs["c"] = edge_values(rng, (cout, 1, 1) if layout == "nchw" else (cout,), dt)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        if "r" in ops:
            y = b.add(ops["r"], y) if epi == "add_sigmoid" else b.add(y, ops["r"])
        if "c" in ops:
            y = b.add(y, ops["c"])
        act = epi.split("_")[-1]
        if act in ACTS:
            y = getattr(b, act)(y, **ACTS[act])
        if act == "silu":  # the gate y * sigmoid(y) (epilogue.c, cpu_gate_f32)
            y = b.mul(y, b.sigmoid(y)) if epi == "silu" else b.mul(b.sigmoid(y), y)
        return y

    fused, plain, summary = run_both(contexts, make, inputs)
    # (float16: conv + add, then the gate as a chain of its own)
    groups = 2 if epi == "add_silu" and dt == "float16" else 1
    assert summary.fuses and len(summary.fused_groups) == groups, summary
    assert_same(fused, plain)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("act", sorted(ACTS))
def test_every_activation(contexts, act, dt):
    """1x1 nchw and a matmul (both tile epilogues on AVX-512 CPUs) with a
    per-channel add and each activation."""
    rng = np.random.default_rng(7)
    x, w, bias, opts = conv_case(rng, dt, "nchw", 1, 8, 20, 1, 1, 0)
    a = edge_values(rng, (3, 17, 24), dt)
    bm = (rng.standard_normal((24, 40)) * 0.3).astype(dt)
    c = edge_values(rng, (1, 20, 1, 1), dt)
    cm = edge_values(rng, (40,), dt)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        y = getattr(b, act)(b.add(y, ops["c"]), **ACTS[act])
        z = b.matmul(ops["a"], b.constant(bm))
        z = getattr(b, act)(b.add(z, ops["cm"]), **ACTS[act])
        return {"y": y, "z": z}

    fused, plain, summary = run_both(contexts, make, {"x": x, "c": c, "a": a, "cm": cm})
    assert len(summary.fused_groups) == 2, summary
    assert_same(fused, plain)


@pytest.mark.parametrize("act", ["gelu", "sigmoid", "tanh", "silu"])
@pytest.mark.parametrize("rows,k,n", [(1, 16, 24), (7, 96, 64), (50, 96, 150), (33, 40, 200)])
@pytest.mark.parametrize("addend", ["channel", "none"])
def test_activation_rows(contexts, act, rows, k, n, addend):
    """matmul -> [per-channel add] -> activation on the row epilogue
    (cpu_epi_rows: every row of a block of up to 64 columns in one pass,
    the add and the activation in one loop where the level has one): a
    single row, blocks of 64 with a partial one, a column count that is
    not a multiple of the vector, edge values in the input and the
    addend; the same values as operator by operator."""
    rng = np.random.default_rng(zlib.crc32(f"{act}-{rows}-{k}-{n}-{addend}".encode()))
    a = edge_values(rng, (rows, k), "float32")
    w = (rng.standard_normal((k, n)) * 0.3).astype(np.float32)
    inputs = {"a": a}
    if addend == "channel":
        inputs["c"] = edge_values(rng, (n,), "float32")

    def make(b, ops):
        y = b.matmul(ops["a"], b.constant(w))
        if "c" in ops:
            y = b.add(y, ops["c"])
        if act == "silu":
            return b.mul(y, b.sigmoid(y))
        return getattr(b, act)(y)

    fused, plain, summary = run_both(contexts, make, inputs)
    assert len(summary.fused_groups) == 1, summary
    assert_same(fused, plain)


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_conv_transpose_gemm_chains(contexts, dt):
    rng = np.random.default_rng(3)
    x = edge_values(rng, (2, 6, 5, 5), dt)
    w = (rng.standard_normal((6, 4, 3, 3)) * 0.3).astype(dt)
    a = edge_values(rng, (9, 11), dt)
    bg = (rng.standard_normal((11, 13)) * 0.3).astype(dt)
    r = edge_values(rng, (2, 4, 11, 11), dt)
    rg = edge_values(rng, (9, 13), dt)

    def make(b, ops):
        y = b.conv_transpose2d(ops["x"], b.constant(w), strides=[2, 2])
        y = b.hard_swish(b.add(y, ops["r"]))
        z = b.gemm(ops["a"], b.constant(bg), alpha=0.5)
        z = b.clamp(b.add(ops["rg"], z), min_value=-1, max_value=1)
        return {"y": y, "z": z}

    fused, plain, summary = run_both(contexts, make, {"x": x, "r": r, "a": a, "rg": rg})
    assert len(summary.fused_groups) == 2, summary
    assert_same(fused, plain)


def test_fused_matches_numpy(contexts):
    """matmul + bias + relu fused, against NumPy float64."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 33, 70)).astype(np.float32)
    w = rng.standard_normal((70, 50)).astype(np.float32)
    bias = rng.standard_normal(50).astype(np.float32)
    b = webnn.MLGraphBuilder(contexts[0])
    x = b.input("a", {"dataType": "float32", "shape": [4, 33, 70]})
    y = b.relu(b.add(b.matmul(x, b.constant(w)), b.constant(bias)))
    g = b.build({"y": y})
    assert g.summary().fused_groups == [["matmul", "add", "relu"]]
    got = contexts[0].compute(g, {"a": a})["y"]
    want = np.maximum(a.astype(np.float64) @ w.astype(np.float64) + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_broadcast_addends_that_are_not_per_channel(contexts):
    """An addend that broadcasts along other axes than the channel (a
    spatial map, a scalar) is not fused into the conv's epilogue; the add
    and the activation then form an element-wise chain.  Results equal."""
    rng = np.random.default_rng(5)
    x, w, bias, opts = conv_case(rng, "float32", "nchw", 1, 8, 16, 1, 1, 0)
    s = edge_values(rng, (1, 1, 9, 9), "float32")
    z = edge_values(rng, (1,), "float32")

    def make(b, ops):
        y = b.relu(b.add(b.conv2d(ops["x"], b.constant(w), **opts), ops["s"]))
        u = b.relu(b.add(b.conv2d(ops["x"], b.constant(w), **opts), ops["z"]))
        return {"y": y, "u": u}

    fused, plain, summary = run_both(contexts, make, {"x": x, "s": s, "z": z})
    assert summary.fused_groups == [["add", "relu"], ["add", "relu"]], summary
    assert_same(fused, plain)


def test_patterns_that_must_not_fuse(contexts):
    """An intermediate that is also a graph output, or that has a second
    reader, ends the chain before it: the conv's own output stays
    observable and unclamped."""
    rng = np.random.default_rng(9)
    x, w, bias, opts = conv_case(rng, "float32", "nchw", 1, 8, 16, 1, 1, 0)
    r = edge_values(rng, (2, 16, 9, 9), "float32")

    def make(b, ops):
        c1 = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        y1 = b.clamp(c1, min_value=0, max_value=0.5)           # c1 is an output
        c2 = b.conv2d(ops["x"], b.constant(w), **opts)
        y2 = b.relu(c2)
        y3 = b.sigmoid(c2)                                      # c2 read twice
        c3 = b.conv2d(ops["x"], b.constant(w), **opts)
        a3 = b.add(c3, ops["r"])
        y4 = b.relu(a3)
        y5 = b.neg(a3)                                          # add read twice
        c4 = b.conv2d(ops["x"], b.constant(w), **opts)
        y6 = b.add(c4, c4)                                      # addend is itself
        return {"c1": c1, "y1": y1, "y2": y2, "y3": y3, "y4": y4, "y5": y5, "y6": y6}

    fused, plain, summary = run_both(contexts, make, {"x": x, "r": r})
    # conv c3 + add fuses (the add's output has two readers, so relu and
    # neg stay apart); c4 + c4 is no residual add (its addend would be the
    # tile being written) but a program of one add, both operands the
    # running value (test_epi_program.py)
    assert summary.fused_groups == [["conv2d", "add"], ["conv2d", "add"]], \
        summary.fused_groups
    assert_same(fused, plain)
    assert (fused["c1"] > 0.5).any() and (fused["c1"] < 0).any()
    np.testing.assert_array_equal(fused["y1"], np.clip(fused["c1"], 0, 0.5))


def test_switch_off(contexts):
    b = webnn.MLGraphBuilder(contexts[1])
    x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
    g = b.build({"y": b.relu(b.matmul(x, b.constant(np.ones((3, 3), np.float32))))})
    s = g.summary()
    assert not s.fuses and s.fused_groups == [["matmul", "relu"]]
    assert "fusion is off" in str(s)


# ---- element-wise chains (WNN_FUSE_ELTWISE) --------------------------------
BCAST = {
    "same": lambda s: s,
    "scalar": lambda s: (),
    "one": lambda s: (1,),
    "last": lambda s: s[-1:],
    "column": lambda s: s[:-1] + (1,),
    "middle": lambda s: (s[0], 1) + s[2:] if len(s) > 1 else (1,),
    "lead1": lambda s: (1,) + s[1:],
}


def _chain(b, ops, names):
    """x -> add(x, p0) -> sigmoid -> sub(p1, .) -> mul(., p2) -> clamp ->
    div(p3, .) -> max(., p4) -> pow(., p5) -> prelu(., p6) -> tanh"""
    y = b.add(ops["x"], ops["p0"])
    y = b.sigmoid(y)
    y = b.sub(ops["p1"], y)
    y = b.mul(y, ops["p2"])
    y = b.clamp(y, min_value=-2, max_value=3)
    y = b.div(ops["p3"], y)
    y = b.max(y, ops["p4"])
    y = b.pow(y, ops["p5"])
    y = b.prelu(y, ops["p6"])
    return b.tanh(y)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("shape", [(3,), (2, 3, 5), (2, 7, 5, 9), (3, 4099), (1, 2049)])
@pytest.mark.parametrize("bc", sorted(BCAST))
def test_eltwise_chain(contexts, shape, bc, dt):
    rng = np.random.default_rng(zlib.crc32(f"{shape}-{bc}-{dt}".encode()))
    inputs = {"x": edge_values(rng, shape, dt)}
    for i in range(7):
        s = BCAST[bc](shape) if i % 2 else BCAST["same"](shape)
        inputs[f"p{i}"] = edge_values(rng, s, dt)
    inputs["p5"] = np.round(inputs["p5"]).astype(dt)  # integral exponents too
    fused, plain, summary = run_both(contexts, lambda b, ops: _chain(b, ops, None), inputs)
    assert summary.fused_groups == [["add", "sigmoid", "sub", "mul", "clamp", "div",
                                     "max", "pow", "prelu", "tanh"]], summary
    assert_same(fused, plain)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow", "max"])
@pytest.mark.parametrize("value", [3.0, 2.0, -1.0, 0.5, 0.0, -0.0, np.inf, np.nan])
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_eltwise_chain_scalar_operands(contexts, op, value, dt):
    """One-element operands (GPT-2's tanh gelu: x + 0.044715 x^3, times
    0.5 and sqrt(2 / pi)) on either side of the first step and of later
    ones, read as a value, not a filled chunk (chain.c,
    cpu_binary_scalar_f32); pow by a small integer and by other
    exponents; the same values as the operators one by one."""
    rng = np.random.default_rng(zlib.crc32(f"{op}-{value}-{dt}".encode()))
    x = edge_values(rng, (3, 4099), dt)
    inputs = {"x": x, "s": np.array(value, dt), "t": np.array([[value]], dt)}

    def make(b, ops):
        f = getattr(b, op)
        y = {"first_s": f(ops["x"], ops["s"]), "s_first": f(ops["t"], ops["x"])}
        y["first_s"] = f(b.tanh(y["first_s"]), ops["t"])    # later: scalar second
        y["s_first"] = b.sigmoid(f(ops["s"], b.neg(y["s_first"])))  # scalar first
        return y

    fused, plain, summary = run_both(contexts, make, inputs)
    assert len(summary.fused_groups) == 2, summary
    assert_same(fused, plain)


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_eltwise_chain_first_node_broadcasts_both(contexts, dt):
    """The first node reads two broadcast operands ([1,5] + [4,1] -> [4,5]);
    every unary operator in a chain; the result is also right against
    NumPy float64 for the float32 case."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1, 5)).astype(dt)
    c = rng.standard_normal((4, 1)).astype(dt)
    unary = ["abs", "neg", "exp", "log", "sqrt", "reciprocal", "floor", "ceil",
             "round_even", "sign", "sin", "cos", "tan", "erf", "elu", "gelu",
             "hard_sigmoid", "hard_swish", "leaky_relu", "linear", "relu",
             "softplus", "softsign"]

    def make(b, ops):
        y = b.add(ops["a"], ops["c"])
        for u in unary:
            y = getattr(b, u)(y, **ACTS.get(u, {}))
        return y

    fused, plain, summary = run_both(contexts, make, {"a": a, "c": c})
    assert summary.fused_groups == [["add"] + [u.replace("_", "") if False else
                                              _camel(u) for u in unary]], summary
    assert_same(fused, plain)


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def test_eltwise_chain_against_numpy(contexts):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    r = rng.standard_normal((1000,)).astype(np.float32)
    b = webnn.MLGraphBuilder(contexts[0])
    xi = b.input("x", {"dataType": "float32", "shape": [3, 1000]})
    ri = b.input("r", {"dataType": "float32", "shape": [1000]})
    y = b.sigmoid(b.mul(b.sub(xi, ri), ri))
    g = b.build({"y": y})
    assert g.summary().fused_groups == [["sub", "mul", "sigmoid"]]
    got = contexts[0].compute(g, {"x": x, "r": r})["y"]
    x64, r64 = x.astype(np.float64), r.astype(np.float64)
    want = 1 / (1 + np.exp(-((x64 - r64) * r64)))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_eltwise_chains_that_must_stop(contexts):
    """A chain ends at an intermediate that is a graph output or has a
    second reader, and before a node whose output is larger than the
    chain's (the running value would broadcast)."""
    rng = np.random.default_rng(4)
    x = edge_values(rng, (4, 6), "float32")
    big = edge_values(rng, (3, 4, 6), "float32")

    def make(b, ops):
        a = b.relu(b.neg(ops["x"]))                 # a: an output
        c = b.exp(a)
        d = b.abs(b.sigmoid(ops["x"]))              # d read twice
        e = b.tanh(d)
        f = b.sqrt(d)
        h = b.add(b.floor(ops["x"]), ops["big"])   # grows to [3,4,6]
        k = b.relu(h)
        return {"a": a, "c": c, "e": e, "f": f, "k": k}

    fused, plain, summary = run_both(contexts, make, {"x": x, "big": big})
    assert sorted(summary.fused_groups) == [["add", "relu"], ["neg", "relu"],
                                            ["sigmoid", "abs"]], summary.fused_groups
    assert_same(fused, plain)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(fused["c"], np.exp(fused["a"].astype(np.float64)), rtol=2e-7)


# ---- conv pairs (WNN_FUSE_CONV_PAIR, cpu/kernels/conv/pair.c) ---------------
# A 1x1 expansion chain whose result only a 3x3 depthwise chain reads runs
# inside that chain, band of rows by band of rows, on expansion outputs of
# 512 KiB or more with rows of 20 pixels or more: the results must be those
# of the two chains run apart (WEBNN_CPU_CONV_PAIRS=0), bit for bit.

@pytest.fixture(scope="module")
def pair_contexts():
    """(pairs on, pairs off), fusion on in both"""
    return (make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_CONV_PAIRS="1", WEBNN_CPU_FOLD_BN="0"),
            make_context(WEBNN_CPU_FUSION="1", WEBNN_CPU_CONV_PAIRS="0", WEBNN_CPU_FOLD_BN="0"))


def _filter(w_ohwi, layout):
    """an ohwi filter in another conv2d filter layout"""
    perm = {"ohwi": (0, 1, 2, 3), "oihw": (0, 3, 1, 2), "hwio": (1, 2, 3, 0),
            "ihwo": (3, 1, 2, 0)}[layout]
    return np.ascontiguousarray(w_ohwi.transpose(perm))


def _act(b, y, name):
    """an activation of ACTS, or "silu": y * sigmoid(y) (a gate)"""
    return b.mul(y, b.sigmoid(y)) if name == "silu" else getattr(b, name)(y, **ACTS[name])


def _pair(b, ops, p):
    """x -> conv 1x1 (+ bias) -> [add r] -> act_a -> depthwise 3x3 ->
    [add r2 / per-channel c] -> act_b"""
    y = ops["x"]
    if p["wa"] is not None:  # the expansion (none: the depthwise reads x)
        wa = ops["wa"] if p.get("wa_input") else b.constant(p["wa"])
        stem = p.get("stem")  # an image's first convolution: 3x3, strided
        y = b.conv2d(y, wa, bias=b.constant(p["ba"]), input_layout="nhwc",
                     filter_layout=p["la"], **(stem or {}))
        if "r" in ops:
            y = b.add(y, ops["r"])
        if p["act_a"]:
            y = _act(b, y, p["act_a"])
    e = p["E"]
    y = b.conv2d(y, b.constant(p["wb"]), bias=b.constant(p["bb"]) if p["bb"] is not None else None,
                 strides=[p["s"]] * 2, padding=p["pad"], dilations=[p["d"]] * 2, groups=e,
                 input_layout="nhwc", filter_layout=p["lb"])
    if "r2" in ops:
        y = b.add(ops["r2"], y)
    if "c" in ops:
        y = b.add(y, ops["c"])
    if p["act_b"]:
        y = _act(b, y, p["act_b"])
    if p.get("P"):  # the projection: 1x1 -> [residual add of x | act]
        y = b.conv2d(y, b.constant(p["wp"]), bias=b.constant(p["bp"]), input_layout="nhwc",
                     filter_layout=p["lp"])
        if p["act_p"] == "residual":
            y = b.add(y, ops["x"])
        elif p["act_p"]:
            y = getattr(b, p["act_p"])(y, **ACTS[p["act_p"]])
    return y


PAIRS = {
    # name: N, H, W, C, E, stride, padding, dilation, act_a, act_b, extra
    "mbv2_s1": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "clamp", "clamp", ""),
    "mbv2_s2": (2, 25, 31, 16, 96, 2, [1, 1, 1, 1], 1, "clamp", "clamp", ""),
    "tail40": (2, 40, 42, 8, 40, 1, [1, 1, 1, 1], 1, "relu", "relu", ""),
    "tail40_s2": (1, 61, 57, 8, 40, 2, [0, 1, 1, 0], 1, "relu", "clamp", ""),
    "nopad": (2, 26, 28, 12, 96, 1, [0, 0, 0, 0], 1, "clamp", "relu", ""),
    "asym_pad": (2, 26, 28, 12, 96, 1, [2, 0, 1, 2], 1, "clamp", "clamp", ""),
    "dilated": (2, 26, 28, 12, 96, 1, [2, 2, 2, 2], 2, "relu", "clamp", ""),
    "dilated_s2": (2, 27, 29, 12, 96, 2, [3, 1, 0, 2], 3, "clamp", "clamp", ""),
    "sigmoid_a": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "sigmoid", "hard_swish", ""),
    # a bare 1x1 convolution is no chain: not paired
    "no_act_a": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, None, "clamp", ""),
    "residual_a": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "relu", "clamp", "r"),
    "residual_b": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "clamp", "relu", "r2"),
    "channel_b": (2, 24, 30, 16, 96, 2, [1, 1, 1, 1], 1, "clamp", "gelu", "c"),
    "no_bias_b": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "nobias"),
    "filter_input": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "wa_input"),
    # below the pair kernel's sizes (run apart): the same results
    "narrow": (8, 14, 14, 64, 160, 1, [1, 1, 1, 1], 1, "clamp", "clamp", ""),
    "small": (1, 8, 24, 8, 32, 1, [1, 1, 1, 1], 1, "clamp", "clamp", ""),
    # with the projection (extra "p<O>:<epilogue>"): expansion ->
    # depthwise -> projection in one kernel
    "block_residual": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "p16:residual"),
    "block_s2": (2, 25, 41, 16, 96, 2, [1, 1, 1, 1], 1, "clamp", "clamp", "p24:"),
    "block_tail": (2, 40, 42, 8, 40, 1, [1, 1, 1, 1], 1, "relu", "relu", "p20:sigmoid"),
    "block_wide": (1, 30, 28, 32, 192, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "p72:clamp"),
    "block_dilated": (2, 26, 28, 12, 96, 2, [3, 1, 0, 2], 3, "clamp", "relu", "p8:relu"),
    # EfficientNet's SiLU (t * sigmoid(t), a gate) after the expansion and
    # the depthwise convolution
    "silu": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "silu", "silu", ""),
    "silu_s2_c": (1, 25, 31, 16, 96, 2, [1, 1, 1, 1], 1, "silu", "silu", "c"),
    "silu_block": (2, 24, 30, 16, 96, 1, [1, 1, 1, 1], 1, "silu", "silu", "p24:"),
    "block_narrow": (2, 14, 14, 64, 384, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "p64:residual"),
    # no expansion: depthwise -> projection
    "dw_proj": (2, 40, 44, 32, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p32:residual"),
    "dw_proj_bare": (2, 40, 44, 32, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p16:"),
    "dw_proj_s2": (1, 57, 57, 40, None, 2, [1, 1, 1, 1], 1, None, "relu", "p24:relu"),
    # rows narrower than 20 pixels: depthwise -> projection in chunks of
    # pixels that cross rows and images, channels not a multiple of 16, a
    # stride, an epilogue outside the registers (sigmoid); an expansion linked
    # to its depthwise convolution keeps its projection apart
    "dw_proj_narrow": (3, 7, 7, 40, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p40:residual"),
    "dw_proj_narrow_s2": (2, 14, 13, 48, None, 2, [1, 0, 1, 1], 1, None, "relu", "p24:"),
    "dw_proj_narrow_sigmoid": (2, 14, 14, 64, None, 1, [1, 1, 1, 1], 1, None, "sigmoid", "p80:clamp"),
    "block_narrow_s2": (1, 28, 28, 32, 192, 2, [1, 1, 1, 1], 1, "clamp", "clamp", "p64:"),
    # an image's first convolution (3x3 stride 2 of 3 channels: rows of the
    # direct kernel) as the producer: -> depthwise [-> projection]
    "stem": (2, 96, 100, 3, 32, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "stem"),
    "stem_block": (2, 95, 90, 3, 32, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "stem p16:"),
    "stem_tf_pad_s2": (1, 120, 121, 4, 48, 2, [0, 1, 1, 1], 1, "relu", "relu", "stem_tf p24:relu"),
    # a depthwise convolution of one channel (groups 1, like a dense one)
    # and its projection; one channel expanded into a depthwise of one (run
    # apart: pair.c declines one channel); two, eight, 17 channels
    "dw1_proj": (2, 40, 44, 1, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p16:relu"),
    "expand_to_1": (2, 96, 100, 4, 1, 1, [1, 1, 1, 1], 1, "clamp", "clamp", "p8:"),
    "dw8_proj": (2, 40, 44, 8, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p16:relu"),
    "dw17_proj": (2, 40, 44, 17, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p16:relu"),
    "dw2_proj": (2, 40, 44, 2, None, 1, [1, 1, 1, 1], 1, None, "clamp", "p16:relu"),
}


def _pair_case(name, la="ohwi", lb="ohwi", lp="ohwi"):
    n, h, w, c, e, s, pad, d, act_a, act_b, extra = PAIRS[name]
    rng = np.random.default_rng(zlib.crc32(f"{name}-{la}-{lb}-{lp}".encode()))
    x = edge_values(rng, (n, h, w, c), "float32")
    expand = e is not None
    e = e if expand else c
    stem = None
    if extra.startswith("stem"):  # a 3x3 stride 2 producer, then the rest
        stem = {"strides": [2, 2],
                "padding": [0, 1, 0, 1] if extra.startswith("stem_tf") else [1, 1, 1, 1]}
        extra = extra.split(" ")[1] if " " in extra else ""
        h = (h + sum(stem["padding"][:2]) - 3) // 2 + 1
        w = (w + sum(stem["padding"][2:]) - 3) // 2 + 1
    ka = 3 if stem else 1
    wa = (rng.standard_normal((e, ka, ka, c)) * 0.4).astype(np.float32)
    wb = (rng.standard_normal((e, 3, 3, 1)) * 0.4).astype(np.float32)
    proj, act_p = (int(extra[1:].split(":")[0]), extra.split(":")[1]) if extra.startswith("p") else (0, None)
    wp = (rng.standard_normal((max(proj, 1), 1, 1, e)) * 0.2).astype(np.float32)
    p = {"wa": _filter(wa, la) if expand else None, "ba": rng.standard_normal(e).astype(np.float32),
         "P": proj, "wp": _filter(wp, lp), "bp": rng.standard_normal(max(proj, 1)).astype(np.float32),
         "lp": lp, "act_p": act_p,
         "wb": _filter(wb, lb), "la": la, "lb": lb, "E": e, "s": s, "pad": pad, "d": d,
         "act_a": act_a, "act_b": act_b,
         "bb": None if extra == "nobias" else rng.standard_normal(e).astype(np.float32),
         "wa_input": extra == "wa_input", "stem": stem}
    oh = (h + pad[0] + pad[1] - (2 * d + 1)) // s + 1
    ow = (w + pad[2] + pad[3] - (2 * d + 1)) // s + 1
    inputs = {"x": x}
    if extra == "r":
        inputs["r"] = edge_values(rng, (n, h, w, e), "float32")
    if extra == "r2":
        inputs["r2"] = edge_values(rng, (n, oh, ow, e), "float32")
    if extra == "c":
        inputs["c"] = edge_values(rng, (e,), "float32")
    if extra == "wa_input":
        inputs["wa"] = p["wa"]
    return p, inputs, (n, oh, ow, proj or e)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_conv_pair(pair_contexts, name):
    p, inputs, ys = _pair_case(name)
    fused, plain, summary = run_both(pair_contexts, lambda b, ops: _pair(b, ops, p), inputs)
    assert fused["y"].shape == ys
    # the expansion's chain (none without an activation or add), the
    # depthwise one, the projection's (none for a bare 1x1)
    chains = ((p["wa"] is not None and (p["act_a"] is not None or "r" in inputs))
              + 1 + bool(p["act_p"]))
    assert summary.fuses and len(summary.fused_groups) == chains, summary
    assert_same(fused, plain)
    assert np.isfinite(fused["y"]).any()


@pytest.mark.parametrize("la", ["oihw", "hwio", "ihwo"])
@pytest.mark.parametrize("lb", ["oihw", "hwio", "ihwo"])
@pytest.mark.parametrize("lp", ["oihw", "ihwo"])
def test_conv_pair_filter_layouts(pair_contexts, la, lb, lp):
    p, inputs, _ = _pair_case("block_s2", la, lb, lp)
    fused, plain, _ = run_both(pair_contexts, lambda b, ops: _pair(b, ops, p), inputs)
    assert_same(fused, plain)


def test_conv_pair_matches_numpy(pair_contexts):
    """The pair against NumPy float64 (finite data)."""
    rng = np.random.default_rng(12)
    n, h, w, c, e = 2, 24, 30, 16, 96
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    wa = (rng.standard_normal((e, 1, 1, c)) * 0.4).astype(np.float32)
    wb = (rng.standard_normal((e, 3, 3, 1)) * 0.4).astype(np.float32)
    ba, bb = rng.standard_normal(e).astype(np.float32), rng.standard_normal(e).astype(np.float32)
    p = {"wa": wa, "ba": ba, "wb": wb, "bb": bb, "la": "ohwi", "lb": "ohwi", "E": e,
         "s": 2, "pad": [1, 1, 1, 1], "d": 1, "act_a": "clamp", "act_b": "relu"}
    b = webnn.MLGraphBuilder(pair_contexts[0])
    g = b.build({"y": _pair(b, {"x": b.input("x", {"dataType": "float32", "shape": list(x.shape)})}, p)})
    got = pair_contexts[0].compute(g, {"x": x})["y"]
    t = np.clip(np.einsum("nhwc,ec->nhwe", x.astype(np.float64), wa[:, 0, 0, :].astype(np.float64)) + ba,
                -0.5, 0.75)
    tp = np.pad(t, ((0, 0), (1, 1), (1, 1), (0, 0)))
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    want = np.zeros((n, oh, ow, e)) + bb
    for kh in range(3):
        for kw in range(3):
            want += tp[:, kh:kh + 2 * oh:2, kw:kw + 2 * ow:2, :] * wb[:, kh, kw, 0]
    np.testing.assert_allclose(got, np.maximum(want, 0), rtol=1e-5, atol=1e-5)


def test_conv_pairs_that_must_not_pair(pair_contexts):
    """The expansion's result also a graph output, or read by a second node:
    it is computed and stored whole, and every result is that of the
    operators run apart."""
    p, inputs, _ = _pair_case("mbv2_s1")

    def make(b, ops):
        y = b.clamp(b.conv2d(ops["x"], b.constant(p["wa"]), bias=b.constant(p["ba"]),
                             input_layout="nhwc", filter_layout="ohwi"), min_value=0, max_value=6)
        z = b.conv2d(y, b.constant(p["wb"]), padding=[1, 1, 1, 1], groups=p["E"],
                     input_layout="nhwc", filter_layout="ohwi")
        y2 = b.relu(b.conv2d(ops["x"], b.constant(p["wa"]), input_layout="nhwc",
                             filter_layout="ohwi"))
        z2 = b.clamp(b.conv2d(y2, b.constant(p["wb"]), padding=[1, 1, 1, 1], groups=p["E"],
                              input_layout="nhwc", filter_layout="ohwi"), min_value=0, max_value=1)
        z3 = b.neg(y2)  # y2 read twice
        return {"y": y, "z": b.relu(z), "z2": z2, "z3": z3}

    fused, plain, _ = run_both(pair_contexts, make, inputs)
    assert_same(fused, plain)
    np.testing.assert_array_equal(fused["z3"], -plain["z3"] * -1)
    assert (fused["y"] == 6).any()


def test_conv_pair_switch(pair_contexts):
    """WEBNN_CPU_CONV_PAIRS=0 leaves fusion on (the chains stay fused)."""
    p, inputs, _ = _pair_case("mbv2_s1")
    b = webnn.MLGraphBuilder(pair_contexts[1])
    ops = {k: b.input(k, {"dataType": "float32", "shape": list(v.shape)}) for k, v in inputs.items()}
    s = b.build({"y": _pair(b, ops, p)}).summary()
    assert s.fuses and s.fused_groups == [["conv2d", "clamp"], ["conv2d", "clamp"]]


# ---- batchNormalization in the chain (WNN_FUSE_BN) -------------------------
def bn_params(rng, c, with_scale=True, with_bias=True):
    """mean, variance (positive, one tiny: 1 / sqrt(var + eps) large), scale
    and bias of c channels, float32; scale and bias may be left out"""
    mean = (rng.standard_normal(c) * 2).astype(np.float32)
    var = (rng.random(c) * 3 + 0.05).astype(np.float32)
    var[0] = 1e-7
    scale = rng.standard_normal(c).astype(np.float32) if with_scale else None
    bias = rng.standard_normal(c).astype(np.float32) if with_bias else None
    return mean, var, scale, bias


def bn_apply(b, y, p, axis):
    mean, var, scale, bias = p
    opts = {"axis": axis, "epsilon": 1e-3}
    if scale is not None:
        opts["scale"] = b.constant(scale)
    if bias is not None:
        opts["bias"] = b.constant(bias)
    return b.batch_normalization(y, b.constant(mean), b.constant(var), **opts)


BN_TAILS = ["bn", "bn_relu", "bn_add_relu", "bn_clamp", "bn_chan_hard_swish", "bn_plain"]


@pytest.mark.parametrize("conv", ["1x1_nchw", "3x3_nchw", "1x1_nhwc", "1x1_24_nhwc", "3x3_nhwc",
                                  "dw40_nhwc", "dw_nchw", "grouped_nchw", "winograd_nhwc",
                                  "grouped_nhwc", "grouped3x3_nhwc"])
@pytest.mark.parametrize("tail", BN_TAILS)
def test_batch_norm_chains(contexts, conv, tail):
    """conv2d -> batchNormalization (over the channel axis) -> [add] ->
    [activation] runs as one chain, the normalization on each tile as its
    own kernel computes it (double precision per element): the same bits as
    the unfused graph, on edge values; 'plain': no scale, no bias."""
    rng = np.random.default_rng(zlib.crc32(f"bn-{conv}-{tail}".encode()))
    layout, groups, cin, cout, k, stride, pad = CONVS[conv]
    x, w, bias, opts = conv_case(rng, "float32", layout, groups, cin, cout, k, stride, pad)
    ys = out_shape(x, opts, cout, k)
    axis = 1 if layout == "nchw" else 3
    p = bn_params(rng, cout, tail != "bn_plain", tail != "bn_plain")
    inputs = {"x": x}
    if "add" in tail:
        inputs["r"] = edge_values(rng, ys, "float32")
    if "chan" in tail:
        inputs["c"] = edge_values(rng, (cout, 1, 1) if layout == "nchw" else (cout,), "float32")

    def make(b, ops):
        y = bn_apply(b, b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts), p, axis)
        if "r" in ops:
            y = b.add(y, ops["r"])
        if "c" in ops:
            y = b.add(y, ops["c"])
        if tail.endswith("relu"):
            y = b.relu(y)
        elif tail.endswith("clamp"):
            y = b.clamp(y, **ACTS["clamp"])
        elif tail.endswith("hard_swish"):
            y = b.hard_swish(y)
        return y

    fused, plain, summary = run_both(contexts, make, inputs)
    assert len(summary.fused_groups) == 1 and "batchNormalization" in summary.fused_groups[0], summary
    assert_same(fused, plain)


def test_batch_norm_after_matmul_and_pairs(contexts, pair_contexts):
    """matmul -> batchNormalization over the last axis -> relu; and an
    inverted residual block with a normalization after each convolution
    (the conv pairs run the chains with it): fused equals unfused."""
    rng = np.random.default_rng(21)
    a = edge_values(rng, (37, 24), "float32")
    wm = (rng.standard_normal((24, 40)) * 0.3).astype(np.float32)
    p = bn_params(rng, 40)

    def make(b, ops):
        return b.relu(bn_apply(b, b.matmul(ops["a"], b.constant(wm)), p, 1))

    fused, plain, summary = run_both(contexts, make, {"a": a})
    assert summary.fused_groups == [["matmul", "batchNormalization", "relu"]], summary
    assert_same(fused, plain)
    x = edge_values(rng, (1, 64, 64, 16), "float32")  # both links of the pairs
    we = (rng.standard_normal((48, 1, 1, 16)) * 0.3).astype(np.float32)
    wd = (rng.standard_normal((48, 3, 3, 1)) * 0.3).astype(np.float32)
    wp = (rng.standard_normal((16, 1, 1, 48)) * 0.3).astype(np.float32)
    pe, pd, pp = bn_params(rng, 48), bn_params(rng, 48), bn_params(rng, 16)

    def block(b, ops):
        o = {"input_layout": "nhwc", "filter_layout": "ohwi"}
        y = b.clamp(bn_apply(b, b.conv2d(ops["x"], b.constant(we), **o), pe, 3), min_value=0, max_value=6)
        y = b.clamp(bn_apply(b, b.conv2d(y, b.constant(wd), padding=[1, 1, 1, 1], groups=48, **o), pd, 3),
                    min_value=0, max_value=6)
        return b.add(bn_apply(b, b.conv2d(y, b.constant(wp), **o), pp, 3), ops["x"])

    fused, plain, summary = run_both(pair_contexts, block, {"x": x})
    assert len(summary.fused_groups) == 3, summary
    assert_same(fused, plain)
    fused, plain, _ = run_both((pair_contexts[0], contexts[1]), block, {"x": x})
    assert_same(fused, plain)


def test_batch_norm_matches_numpy(contexts):
    """conv2d -> batchNormalization -> relu fused, against NumPy float64."""
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 6, 8, 8)).astype(np.float32)
    w = (rng.standard_normal((10, 6, 3, 3)) * 0.3).astype(np.float32)
    mean, var, scale, bias = bn_params(rng, 10)
    b = webnn.MLGraphBuilder(contexts[0])
    xi = b.input("x", {"dataType": "float32", "shape": list(x.shape)})
    y = b.relu(bn_apply(b, b.conv2d(xi, b.constant(w), padding=[1, 1, 1, 1]), (mean, var, scale, bias), 1))
    g = b.build({"y": y})
    assert g.summary().fused_groups == [["conv2d", "batchNormalization", "relu"]]
    got = contexts[0].compute(g, {"x": x})["y"]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x64, ((0, 0), (0, 0), (1, 1), (1, 1)))
    conv = np.zeros((2, 10, 8, 8))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8, j:j + 8], w64[:, :, i, j])
    c = lambda v: v.astype(np.float64)[None, :, None, None]  # noqa: E731
    want = np.maximum((conv - c(mean)) / np.sqrt(c(var) + 1e-3) * c(scale) + c(bias), 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_batch_norm_patterns_that_must_not_fuse(contexts):
    """Not in the conv's chain: a normalization over another axis than the
    producer's channels, one whose input is also a graph output, and
    float16 (the fused normalization is float32 only); results equal.  (The
    float32 ones still join the relu after them in an element-wise chain.)"""
    rng = np.random.default_rng(29)
    x, w, bias, opts = conv_case(rng, "float32", "nchw", 1, 8, 16, 3, 1, 1)
    p16 = bn_params(rng, 16)
    p9 = bn_params(rng, 9)

    def other_axis(b, ops):
        return b.relu(bn_apply(b, b.conv2d(ops["x"], b.constant(w), **opts), p9, 2))

    fused, plain, summary = run_both(contexts, other_axis, {"x": x})
    assert not any("conv2d" in grp and "batchNormalization" in grp
               for grp in summary.fused_groups), summary
    assert_same(fused, plain)

    def also_output(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), **opts)
        return {"y": y, "z": b.relu(bn_apply(b, y, p16, 1))}

    fused, plain, summary = run_both(contexts, also_output, {"x": x})
    assert not any("conv2d" in grp and "batchNormalization" in grp
               for grp in summary.fused_groups), summary
    assert_same(fused, plain)
    with np.errstate(over="ignore"):
        x16, w16 = x.astype(np.float16), w.astype(np.float16)
    p = tuple(v.astype(np.float16) for v in p16)

    def half(b, ops):
        return b.relu(bn_apply(b, b.conv2d(ops["x"], b.constant(w16), **opts), p, 1))

    fused, plain, summary = run_both(contexts, half, {"x": x16})
    assert not any("conv2d" in grp and "batchNormalization" in grp
               for grp in summary.fused_groups), summary
    assert_same(fused, plain)


def test_batch_norm_parameters_as_inputs(contexts):
    """mean, variance, scale and bias given as graph inputs: the fused
    normalization reads them at each dispatch (two dispatches, different
    values)."""
    rng = np.random.default_rng(31)
    x, w, bias, opts = conv_case(rng, "float32", "nhwc", 1, 8, 16, 1, 1, 0)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        return b.relu(b.batch_normalization(y, ops["m"], ops["v"], scale=ops["s"], bias=ops["b"],
                                            axis=3))

    for seed in (1, 2):
        mean, var, scale, bb = bn_params(np.random.default_rng(seed), 16)
        inputs = {"x": x, "m": mean, "v": var, "s": scale, "b": bb}
        fused, plain, summary = run_both(contexts, make, inputs)
        assert summary.fused_groups == [["conv2d", "batchNormalization", "relu"]], summary
        assert_same(fused, plain)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_batch_norm_after_conv_transpose_and_gemm(contexts, layout):
    """convTranspose2d -> batchNormalization -> hard_swish (the epilogue
    applied over the whole output, channel by channel), and gemm ->
    batchNormalization -> add -> clamp: fused equals unfused."""
    rng = np.random.default_rng(37 if layout == "nchw" else 41)
    xs = (2, 6, 5, 5) if layout == "nchw" else (2, 5, 5, 6)
    x = edge_values(rng, xs, "float32")
    w = (rng.standard_normal((6, 4, 3, 3) if layout == "nchw" else (4, 3, 3, 6)) * 0.3).astype(np.float32)
    p4 = bn_params(rng, 4)
    a = edge_values(rng, (9, 11), "float32")
    bg = (rng.standard_normal((11, 13)) * 0.3).astype(np.float32)
    p13 = bn_params(rng, 13)
    r = edge_values(rng, (9, 13), "float32")

    def make(b, ops):
        opts = {"strides": [2, 2], "input_layout": layout}
        if layout == "nhwc":
            opts["filter_layout"] = "ohwi"
        y = b.conv_transpose2d(ops["x"], b.constant(w), **opts)
        y = b.hard_swish(bn_apply(b, y, p4, 1 if layout == "nchw" else 3))
        z = b.gemm(ops["a"], b.constant(bg))
        z = b.clamp(b.add(bn_apply(b, z, p13, 1), ops["r"]), min_value=-1, max_value=1)
        return {"y": y, "z": z}

    fused, plain, summary = run_both(contexts, make, {"x": x, "a": a, "r": r})
    assert sorted(summary.fused_groups) == sorted([
        ["convTranspose2d", "batchNormalization", "hardSwish"],
        ["gemm", "batchNormalization", "add", "clamp"]]), summary
    assert_same(fused, plain)


# ---- batchNormalization in element-wise chains ------------------------------
# A float32 batchNormalization that no convolution's epilogue takes (after a
# concat, an add, a pool: DenseNet's pre-activation batchNormalization ->
# relu) joins the element-wise chain around it (chain.c: the kernel's own
# double arithmetic per element, so the bits equal the unfused graph's).
BN_CHAINS = {
    # name: (input shape, axis, the chain)
    "nchw_bn_relu": ((2, 24, 9, 11), 1, "bn_relu"),
    "nhwc_bn_relu": ((2, 9, 11, 24), 3, "bn_relu"),
    "nchw_neg_bn_add_sigmoid": ((1, 5, 7, 6), 1, "neg_bn_add_sigmoid"),
    # chunks of 2048 elements that start inside a channel's run (3136 a
    # run), threaded
    "nchw_large": ((2, 40, 56, 56), 1, "bn_relu"),
    "nhwc_large_odd_channels": ((1, 61, 57, 37), 3, "bn_relu"),
    # rank 1: the parameters have the input's shape (the running value
    # must be input 0 still)
    "rank1": ((33,), 0, "neg_bn_add_sigmoid"),
}


@pytest.mark.parametrize("name", sorted(BN_CHAINS))
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_in_eltwise_chains(contexts, name, affine):
    shape, axis, kind = BN_CHAINS[name]
    rng = np.random.default_rng(zlib.crc32(f"bn-chain-{name}-{affine}".encode()))
    a = edge_values(rng, shape, "float32")
    b_in = edge_values(rng, shape, "float32")
    p = bn_params(rng, shape[axis], affine, affine)

    def make(b, ops):
        x = b.add(ops["a"], ops["b"])  # not a convolution: no epilogue takes the bn
        if kind.startswith("neg"):
            x = b.neg(x)
        y = bn_apply(b, x, p, axis)
        if "add" in kind:
            y = b.sigmoid(b.add(y, ops["b"]))
        else:
            y = b.relu(y)
        return y

    fused, plain, summary = run_both(contexts, make, {"a": a, "b": b_in})
    assert any("batchNormalization" in grp for grp in summary.fused_groups), summary
    assert_same(fused, plain)
    # and against NumPy in float64
    mean, var, scale, bias = (None if v is None else v.astype(np.float64) for v in p)
    bshape = [1] * len(shape)
    bshape[axis] = shape[axis]
    with np.errstate(invalid="ignore", over="ignore"):
        x = a.astype(np.float64) + b_in.astype(np.float64)
        if kind.startswith("neg"):
            x = -x
        k = (scale if scale is not None else 1.0) / np.sqrt(var + 1e-3)
        y = (x - mean.reshape(bshape)) * np.reshape(k, bshape)
        if bias is not None:
            y = y + bias.reshape(bshape)
        if "add" in kind:
            ref = 1 / (1 + np.exp(-(y + b_in.astype(np.float64))))
        else:
            ref = np.maximum(y, 0)
    got = fused["y"].astype(np.float64)
    finite = np.isfinite(ref) & (np.abs(ref) < 1e30)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=1e-5, atol=1e-5)
    assert np.array_equal(np.isnan(got), np.isnan(ref))


def test_batch_norm_chain_parameters_as_inputs(contexts):
    """mean, variance, scale and bias as graph inputs: the chain's
    coefficients are made per dispatch (two dispatches, other values)."""
    rng = np.random.default_rng(31)
    x = rng.standard_normal((2, 6, 5, 5)).astype(np.float32)
    outs = []
    for ctx in contexts:
        b = webnn.MLGraphBuilder(ctx)
        xi = b.input("x", {"dataType": "float32", "shape": [2, 6, 5, 5]})
        ps = {k: b.input(k, {"dataType": "float32", "shape": [6]})
              for k in ("m", "v", "s", "c")}
        y = b.relu(b.batch_normalization(b.abs(xi), ps["m"], ps["v"], scale=ps["s"],
                                         bias=ps["c"], epsilon=1e-5))
        g = b.build({"y": y})
        if ctx is contexts[0]:
            assert g.summary().fused_groups == [["abs", "batchNormalization", "relu"]]
        res = []
        for seed in (1, 2):
            r = np.random.default_rng(seed)
            feeds = {"x": x, "m": r.standard_normal(6).astype(np.float32),
                     "v": (r.random(6) + 0.1).astype(np.float32),
                     "s": r.standard_normal(6).astype(np.float32),
                     "c": r.standard_normal(6).astype(np.float32)}
            res.append(ctx.compute(g, feeds)["y"])
            k = feeds["s"] / np.sqrt(feeds["v"].astype(np.float64) + 1e-5)
            ref = np.maximum((np.abs(x) - feeds["m"].reshape(1, 6, 1, 1)) *
                             k.reshape(1, 6, 1, 1) + feeds["c"].reshape(1, 6, 1, 1), 0)
            np.testing.assert_allclose(res[-1], ref, rtol=1e-5, atol=1e-6)
        outs.append(res)
    for f, p_ in zip(outs[0], outs[1]):
        np.testing.assert_array_equal(f, p_)


def test_batch_norm_chain_not_float16(contexts):
    """float16 batchNormalization stays a node of its own."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 4, 3, 3)).astype(np.float16)
    p = tuple(v.astype(np.float16) for v in bn_params(rng, 4))

    def make(b, ops):
        return b.relu(bn_apply(b, b.neg(ops["x"]), p, 1))

    fused, plain, summary = run_both(contexts, make, {"x": x})
    assert all("batchNormalization" not in grp for grp in summary.fused_groups), summary
    assert_same(fused, plain)


# ---- batchNormalization folded into a conv2d's constants -------------------
@pytest.mark.parametrize("conv", ["1x1_nchw", "3x3_nchw", "1x1_nhwc", "1x1_24_nhwc", "3x3_nhwc",
                                  "dw40_nhwc", "dw_nchw", "grouped_nchw", "winograd_nhwc",
                                  "grouped_nhwc", "grouped3x3_nhwc"])
@pytest.mark.parametrize("tail", ["bn", "bn_add_relu", "bn_plain", "bn_nobias"])
def test_batch_norm_folded(fold_contexts, contexts, conv, tail):
    """conv2d (constant filter and bias) -> batchNormalization (constant
    parameters): folded into the filter and bias at compile (backend_cpu.c
    fold_bn), as ONNX Runtime does.  Not bit-exact: against the unfused
    graph within float32 rounding of the convolution's terms, NaN and
    +-Inf where it has them; and unlike the exact chain somewhere (the fold
    happened).  'nobias': the conv has no bias, the fold gives it one."""
    rng = np.random.default_rng(zlib.crc32(f"fold-{conv}-{tail}".encode()))
    layout, groups, cin, cout, k, stride, pad = CONVS[conv]
    x, w, bias, opts = conv_case(rng, "float32", layout, groups, cin, cout, k, stride, pad)
    x = rng.standard_normal(x.shape).astype(np.float32)
    x.reshape(-1)[::997] = np.nan  # sparse: a Winograd tile with one has none but NaN
    x.reshape(-1)[7::1499] = np.inf
    ys = out_shape(x, opts, cout, k)
    axis = 1 if layout == "nchw" else 3
    p = bn_params(rng, cout, tail != "bn_plain", tail != "bn_plain")
    inputs = {"x": x}
    if "add" in tail:
        inputs["r"] = rng.standard_normal(ys).astype(np.float32)

    def make(b, ops):
        cb = {} if tail == "bn_nobias" else {"bias": b.constant(bias)}
        y = bn_apply(b, b.conv2d(ops["x"], b.constant(w), **cb, **opts), p, axis)
        if "r" in ops:
            y = b.relu(b.add(y, ops["r"]))
        return y

    folded, plain, summary = run_both(fold_contexts, make, inputs)
    assert len(summary.fused_groups) == 1 and "batchNormalization" in summary.fused_groups[0], summary
    scale = np.nanmax(np.abs(np.where(np.isinf(plain["y"]), 0, plain["y"])))
    np.testing.assert_allclose(folded["y"], plain["y"], rtol=1e-5, atol=2e-5 * scale)
    assert np.array_equal(np.isnan(folded["y"]), np.isnan(plain["y"]))
    exact, _, _ = run_both(contexts, make, inputs)
    assert_same(exact, plain)
    assert not np.array_equal(folded["y"], exact["y"], equal_nan=True), "not folded"


def test_batch_norm_folded_matches_numpy(fold_contexts):
    """A folded conv2d -> batchNormalization -> relu against NumPy float64."""
    rng = np.random.default_rng(43)
    x = rng.standard_normal((2, 9, 9, 6)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 6, 10)) * 0.3).astype(np.float32)  # hwio
    mean, var, scale, bias = bn_params(rng, 10)
    b = webnn.MLGraphBuilder(fold_contexts[0])
    xi = b.input("x", {"dataType": "float32", "shape": list(x.shape)})
    y = b.relu(bn_apply(b, b.conv2d(xi, b.constant(w), padding=[1, 1, 1, 1], input_layout="nhwc",
                                    filter_layout="hwio"), (mean, var, scale, bias), 3))
    got = fold_contexts[0].compute(b.build({"y": y}), {"x": x})["y"]
    x64 = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((2, 9, 9, 10))
    for i in range(3):
        for j in range(3):
            conv += np.einsum("nhwc,co->nhwo", x64[:, i:i + 9, j:j + 9, :], w[i, j].astype(np.float64))
    want = np.maximum((conv - mean) / np.sqrt(var.astype(np.float64) + 1e-3) * scale + bias, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


def test_batch_norm_not_folded(fold_contexts):
    """Parameters given as graph inputs, or a filter given as an input: no
    fold, the exact chain (the same bits as the unfused graph)."""
    rng = np.random.default_rng(47)
    x, w, bias, opts = conv_case(rng, "float32", "nhwc", 1, 8, 16, 1, 1, 0)
    mean, var, scale, bb = bn_params(rng, 16)

    def params_in(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        return b.relu(b.batch_normalization(y, ops["m"], ops["v"], scale=ops["s"], bias=ops["b"], axis=3))

    fused, plain, _ = run_both(fold_contexts, params_in, {"x": x, "m": mean, "v": var, "s": scale, "b": bb})
    assert_same(fused, plain)

    def filter_in(b, ops):
        return bn_apply(b, b.conv2d(ops["x"], ops["w"], **opts), (mean, var, scale, bb), 3)

    fused, plain, _ = run_both(fold_contexts, filter_in, {"x": x, "w": w})
    assert_same(fused, plain)


# ---- gates: producer -> [bn] -> [add] -> t * sigmoid(t) (SiLU) ---------------
@pytest.mark.parametrize("conv", ["1x1_nchw", "3x3_nchw", "dw_nhwc", "dw40_s2_nhwc",
                                  "winograd_nhwc", "1x1_24_nhwc", "grouped3x3_nhwc"])
@pytest.mark.parametrize("before", ["", "add", "chan", "bn"])
@pytest.mark.parametrize("order", ["t_first", "sig_first"])
def test_silu_gate(contexts, conv, before, order):
    """EfficientNet's swish after each convolution: the chain ends in
    t * sigmoid(t) (both orders of the mul), after a residual, a per-channel
    add or a batchNormalization; bit-equal to the operators one by one."""
    rng = np.random.default_rng(zlib.crc32(f"gate-{conv}-{before}-{order}".encode()))
    layout, groups, cin, cout, k, stride, pad = CONVS[conv]
    x, w, bias, opts = conv_case(rng, "float32", layout, groups, cin, cout, k, stride, pad)
    ys = out_shape(x, opts, cout, k)
    ch = (cout, 1, 1) if layout == "nchw" else (cout,)
    inputs = {"x": x}
    if before == "add":
        inputs["r"] = edge_values(rng, ys, "float32")
    if before == "chan":
        inputs["c"] = edge_values(rng, ch, "float32")
    mean, scale, b0 = (rng.standard_normal(cout).astype(np.float32) for _ in range(3))
    var = (np.abs(rng.standard_normal(cout)) + 0.3).astype(np.float32)

    def make(b, ops):
        y = b.conv2d(ops["x"], b.constant(w), bias=b.constant(bias), **opts)
        if before == "bn":
            y = b.batch_normalization(y, b.constant(mean), b.constant(var),
                                      scale=b.constant(scale), bias=b.constant(b0),
                                      axis=1 if layout == "nchw" else 3)
        if "r" in ops:
            y = b.add(y, ops["r"])
        if "c" in ops:
            y = b.add(y, ops["c"])
        s = b.sigmoid(y)
        return b.mul(y, s) if order == "t_first" else b.mul(s, y)

    fused, plain, summary = run_both(contexts, make, inputs)
    assert len(summary.fused_groups) == 1, summary
    assert "sigmoid -> mul" in str(summary) and "conv2d ->" in str(summary), summary
    assert_same(fused, plain)


def test_silu_gate_on_products_and_against_numpy(contexts):
    rng = np.random.default_rng(77)
    a = rng.standard_normal((5, 24)).astype(np.float32)
    w = rng.standard_normal((24, 33)).astype(np.float32)
    c = rng.standard_normal(33).astype(np.float32)

    def make(b, ops):
        y = b.add(b.matmul(ops["a"], b.constant(w)), b.constant(c))
        g = b.gemm(ops["a"], b.constant(w))
        return {"mm": b.mul(y, b.sigmoid(y)), "gemm": b.mul(b.sigmoid(g), g)}

    fused, plain, summary = run_both(contexts, make, {"a": a})
    assert len(summary.fused_groups) == 2, summary
    assert_same(fused, plain)
    t = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(fused["mm"], (t + c) / (1 + np.exp(-(t + c))), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(fused["gemm"], t / (1 + np.exp(-t)), rtol=2e-5, atol=1e-5)


@pytest.mark.parametrize("case", ["t_out", "s_out", "t_thrice", "mul_other", "float16",
                                  "tanh_gate"])
def test_gates_that_must_not_fuse(contexts, case):
    """No gate where t or the sigmoid's result is read elsewhere or is a
    graph output, where the mul takes another operand, in float16, or with
    another activation: the results are the operators' all the same."""
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    dt = "float16" if case == "float16" else "float32"
    x = edge_values(rng, (2, 6, 5, 5), dt)
    w = (rng.standard_normal((8, 6, 3, 3)) * 0.3).astype(dt)
    o = edge_values(rng, (2, 8, 5, 5), dt)

    def make(b, ops):
        t = b.conv2d(ops["x"], b.constant(w), padding=[1] * 4)
        s = b.tanh(t) if case == "tanh_gate" else b.sigmoid(t)
        y = b.mul(ops["o"] if case == "mul_other" else t, s)
        out = {"y": y}
        if case == "t_out":
            out["t"] = t
        if case == "s_out":
            out["s"] = s
        if case == "t_thrice":
            out["y2"] = b.add(t, y)
        return out

    inputs = {"x": x, "o": o} if case == "mul_other" else {"x": x}
    fused, plain, summary = run_both(contexts, make, inputs)
    assert "conv2d -> sigmoid -> mul" not in str(summary), summary
    assert_same(fused, plain)
