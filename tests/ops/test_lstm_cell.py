"""lstmCell: one step of a long short-term memory cell.

Reference: the spec's emulation sketch (#api-mlgraphbuilder-lstmcell) in
float64 NumPy, generalised to both layouts ("iofg": input, output, forget,
cell; "ifgo": input, forget, cell, output) and to any activations (f for the
i, f and o gates, g for the cell gate, h for the new cell state):

    i = f(c * pi + ((bi + rbi) + (x Wi^T + h Ri^T)))
    f = f(c * pf + ((bf + rbf) + (x Wf^T + h Rf^T)))
    g = g((bg + rbg) + (x Wg^T + h Rg^T))
    o = f(c * po + ((bo + rbo) + (x Wo^T + h Ro^T)))
    c' = f * c + i * g
    h' = o * h(c')

with the peephole weights always ordered i, o, f and, as in the sketch, the
output gate's peephole applied to the previous cell state c.  Outputs
[h', c'].  The kernel computes in float32; the tolerance is a float32
dot-product bound (loosely propagated) plus 1 ulp of the output type.
lstm (test_lstm.py) is built on this reference, as in the spec.
"""
import math

import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, rng_for

DTYPES = op_dtypes("lstmCell", "input")
ACTS = {
    "relu": lambda v: np.maximum(v, 0.0),
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "tanh": np.tanh,
}
EPS32 = 2.0**-23


def gate(a, layout, name, hidden):
    k = {"iofg": "iofg", "ifgo": "ifgo"}[layout].index(name)
    return a[k * hidden:(k + 1) * hidden]


def lstm_cell_ref(x, w, r, h, c, hidden, bias=None, rbias=None, peephole=None,
                  layout="iofg", activations=None):
    """float64 reference of lstmCell: (h', c', bound of h', bound of c')."""
    x, w, r, h, c = (np.asarray(v, np.float64) for v in (x, w, r, h, c))
    fa, ga, ha = (ACTS[a] for a in (activations or ("sigmoid", "tanh", "tanh")))
    zero = np.zeros(hidden)
    b = (lambda q: zero) if bias is None else \
        (lambda q: gate(np.asarray(bias, np.float64), layout, q, hidden))
    rb = (lambda q: zero) if rbias is None else \
        (lambda q: gate(np.asarray(rbias, np.float64), layout, q, hidden))
    p = (lambda k: zero) if peephole is None else \
        (lambda k: np.asarray(peephole, np.float64)[k * hidden:(k + 1) * hidden])
    W = lambda q: gate(w, layout, q, hidden)  # noqa: E731
    R = lambda q: gate(r, layout, q, hidden)  # noqa: E731
    with np.errstate(over="ignore"):
        i = fa(c * p(0) + ((b("i") + rb("i")) + (x @ W("i").T + h @ R("i").T)))
        f = fa(c * p(2) + ((b("f") + rb("f")) + (x @ W("f").T + h @ R("f").T)))
        g = ga((b("g") + rb("g")) + (x @ W("g").T + h @ R("g").T))
        o = fa(c * p(1) + ((b("o") + rb("o")) + (x @ W("o").T + h @ R("o").T)))
    ct = f * c + i * g
    ht = o * ha(ct)
    # float32 error bound, to first order: the pre-activations are dot
    # products of length input + hidden plus the peephole product and the
    # bias additions; the activations' slopes are at most 1 (and they round
    # their result); then c' and h' propagate the gates' errors.
    mag = sum(np.abs(x) @ np.abs(gate(w, layout, q, hidden)).T +
              np.abs(h) @ np.abs(gate(r, layout, q, hidden)).T for q in "iofg")
    k = x.shape[1] + h.shape[1] + 8
    pre = k * EPS32 * (mag + 4 + np.abs(c) * 3)
    err = {name: pre + 4 * EPS32 * (1 + np.abs(v))
           for name, v in (("i", i), ("f", f), ("g", g), ("o", o))}
    c_bound = (np.abs(c) * err["f"] + np.abs(g) * err["i"] + np.abs(i) * err["g"] +
               4 * EPS32 * (np.abs(f * c) + np.abs(i * g) + np.abs(ct)))
    h_bound = (np.abs(ha(ct)) * err["o"] + np.abs(o) * c_bound +
               4 * EPS32 * (np.abs(ht) + np.abs(o)))
    return ht, ct, h_bound, c_bound


def random_case(rng, dt, batch, input_size, hidden, scale=0.5):
    t = npdt(dt)
    u = lambda *s: rng.uniform(-scale, scale, size=s).astype(t)  # noqa: E731
    return {
        "input": rng.uniform(-1, 1, size=(batch, input_size)).astype(t),
        "weight": u(4 * hidden, input_size),
        "recurrentWeight": u(4 * hidden, hidden),
        "hiddenState": rng.uniform(-1, 1, size=(batch, hidden)).astype(t),
        "cellState": rng.uniform(-1, 1, size=(batch, hidden)).astype(t),
        "bias": u(4 * hidden),
        "recurrentBias": u(4 * hidden),
        "peepholeWeight": u(3 * hidden),
    }


OPTIONAL = ("bias", "recurrentBias", "peepholeWeight")


def run_cell(run, data, hidden, opts, present, constants=()):
    names = ["input", "weight", "recurrentWeight", "hiddenState", "cellState"]
    names += [k for k in OPTIONAL if k in present]
    inputs = {k: data[k] for k in names if k not in constants}
    consts = {k: data[k] for k in names if k in constants}

    def build(bld, **ops):
        o = dict(opts)
        for k in OPTIONAL:
            if k in present:
                o[k] = ops[k]
        outs = bld.lstm_cell(ops["input"], ops["weight"], ops["recurrentWeight"],
                             ops["hiddenState"], ops["cellState"], hidden, o)
        assert isinstance(outs, list) and len(outs) == 2
        return {"h": outs[0], "c": outs[1]}

    return run(build, inputs, constants=consts)


def check_cell(got, data, dt, hidden, opts, present, what):
    ht, ct, hb, cb = lstm_cell_ref(
        data["input"], data["weight"], data["recurrentWeight"], data["hiddenState"],
        data["cellState"], hidden, *(data[k] if k in present else None for k in OPTIONAL),
        layout=opts.get("layout", "iofg"), activations=opts.get("activations"))
    check_float(got["h"], ht, dt, ht.shape, ulps=1, atol=hb, what=what + " output0 (h)")
    check_float(got["c"], ct, dt, ct.shape, ulps=1, atol=cb, what=what + " output1 (c)")


# ---- every option ------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", [None, "iofg", "ifgo"])
@pytest.mark.parametrize("present", [(), ("bias",), ("recurrentBias",), ("peepholeWeight",),
                                     ("bias", "recurrentBias"), OPTIONAL],
                         ids=lambda p: "+".join(p) or "none")
def test_options(run, dt, layout, present):
    rng = rng_for("lstmCell", dt, layout, present)
    hidden = 5
    data = random_case(rng, dt, 3, 4, hidden)
    opts = {} if layout is None else {"layout": layout}
    got = run_cell(run, data, hidden, opts, present)
    check_cell(got, data, dt, hidden, opts, present, f"lstmCell {dt} layout={layout} {present}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("activations", [["sigmoid", "tanh", "tanh"], ["relu", "relu", "relu"],
                                         ["tanh", "sigmoid", "relu"],
                                         ["sigmoid", "relu", "sigmoid"]],
                         ids=lambda a: "-".join(a))
@pytest.mark.parametrize("layout", ["iofg", "ifgo"])
def test_activations(run, dt, activations, layout):
    rng = rng_for("lstmCell-act", dt, tuple(activations), layout)
    hidden = 4
    data = random_case(rng, dt, 2, 3, hidden)
    opts = {"activations": activations, "layout": layout}
    got = run_cell(run, data, hidden, opts, OPTIONAL)
    check_cell(got, data, dt, hidden, opts, OPTIONAL, f"lstmCell {dt} {activations}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (16, 64, 128), (64, 32, 160)], ids=str)
def test_sizes(run, dt, shape):
    """Hidden units split between threads (16 x 128); a product large enough
    for BLIS threads, the gate math threaded over the batch (64 x 160)."""
    batch, input_size, hidden = shape
    rng = rng_for("lstmCell-size", dt, shape)
    data = random_case(rng, dt, batch, input_size, hidden, scale=0.2)
    got = run_cell(run, data, hidden, {}, OPTIONAL,
                   constants=("weight", "recurrentWeight", "peepholeWeight"))
    check_cell(got, data, dt, hidden, {}, OPTIONAL, f"lstmCell {dt} {shape}")


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    """batch 1, input 1, hidden 1, layout iofg, x = 1, h = 0, c = 0.5:
    i = sigmoid(1 + 0.5 * 0.25), o = sigmoid(-1 + 0.5 * 0.5),
    f = sigmoid(2 + 0.5 * 1), g = tanh(0.5); c' = f c + i g, h' = o tanh(c')
    (the output gate's peephole reads the previous cell state)."""
    t = npdt(dt)
    x = np.array([[1.0]], t)
    w = np.array([[1.0], [-1.0], [2.0], [0.5]], t)     # i, o, f, g
    r = np.zeros((4, 1), t)
    h = np.array([[0.0]], t)
    c = np.array([[0.5]], t)
    p = np.array([0.25, 0.5, 1.0], t)                  # i, o, f
    sig = lambda v: 1 / (1 + math.exp(-v))  # noqa: E731
    i, o, f, g = sig(1.125), sig(-0.75), sig(2.5), math.tanh(0.5)
    ct = f * 0.5 + i * g
    ht = o * math.tanh(ct)
    outs = run(lambda bld, x, w, r, h, c, p: dict(zip("hc", bld.lstm_cell(
        x, w, r, h, c, 1, {"peepholeWeight": p}))),
        {"x": x, "w": w, "r": r, "h": h, "c": c, "p": p})
    check_float(outs["h"], np.array([[ht]]), dt, (1, 1), ulps=2, what="lstmCell h hand-checked")
    check_float(outs["c"], np.array([[ct]]), dt, (1, 1), ulps=2, what="lstmCell c hand-checked")
    # layout ifgo: rows are i, f, g, o
    w2 = w[[0, 2, 3, 1]]
    outs = run(lambda bld, x, w, r, h, c, p: dict(zip("hc", bld.lstm_cell(
        x, w, r, h, c, 1, {"peepholeWeight": p, "layout": "ifgo"}))),
        {"x": x, "w": w2, "r": r, "h": h, "c": c, "p": p})
    check_float(outs["h"], np.array([[ht]]), dt, (1, 1), ulps=2, what="lstmCell ifgo hand-checked")


@pytest.mark.parametrize("dt", DTYPES)
def test_relu_hand_checked(run, dt):
    """All-relu cell with zero states: c' = relu(xWi + b) * relu(xWg + b),
    h' = relu(xWo + b) * relu(c')."""
    t = npdt(dt)
    x = np.array([[1.0, 2.0], [2.0, 1.0]], t)
    w = np.array([[1.0, -1.0], [2.0, -2.0]] * 4, t)     # every gate: [1, -1], [2, -2]
    r = np.full((8, 2), 0.1, t)
    zeros = np.zeros((2, 2), t)
    bias = np.array([1.0, 2.0] * 4, t)
    outs = run(lambda bld, x, w, r, h, c, b: dict(zip("hc", bld.lstm_cell(
        x, w, r, h, c, 2, {"bias": b, "recurrentBias": b,
                           "activations": ["relu", "relu", "relu"]}))),
        {"x": x, "w": w, "r": r, "h": zeros, "c": zeros, "b": bias})
    # pre-activation of every gate: x @ [[1, 2], [-1, -2]] + 2 * [1, 2]
    #   row 0: [-1 + 2, -2 + 4] = [1, 2]; row 1: [1 + 2, 2 + 4] = [3, 6]
    # c' = i * g = pre^2, h' = o * c' = pre^3
    check_float(outs["c"], np.array([[1.0, 4.0], [9.0, 36.0]]), dt, (2, 2), what="relu c")
    check_float(outs["h"], np.array([[1.0, 8.0], [27.0, 216.0]]), dt, (2, 2), what="relu h")


@pytest.mark.parametrize("dt", DTYPES)
def test_extreme_values(run, dt):
    """Saturated gates and NaN propagation."""
    t = npdt(dt)
    hidden = 2
    rng = rng_for("lstmCell-ext", dt)
    data = random_case(rng, dt, 3, 2, hidden)
    data["bias"] = np.array([-1e4, 1e4, -95.0, 95.0, 200.0, -200.0, 30.0, -1e4], t)
    got = run_cell(run, data, hidden, {}, OPTIONAL)
    check_cell(got, data, dt, hidden, {}, OPTIONAL, f"lstmCell {dt} saturated")
    data["cellState"][2, 1] = np.nan
    got = run_cell(run, data, hidden, {}, OPTIONAL)
    assert np.isnan(got["c"][2, 1]) and np.isnan(got["h"][2, 1]), got
    assert not np.any(np.isnan(got["c"][:2])), got


def test_output_descriptors(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float16", "shape": [3, 4]})
    w = b.input("w", {"dataType": "float16", "shape": [20, 4]})
    r = b.input("r", {"dataType": "float16", "shape": [20, 5]})
    h = b.input("h", {"dataType": "float16", "shape": [3, 5]})
    c = b.input("c", {"dataType": "float16", "shape": [3, 5]})
    outs = b.lstmCell(x, w, r, h, c, 5)
    assert isinstance(outs, list) and len(outs) == 2
    assert all(list(o.shape) == [3, 5] and o.data_type == "float16" for o in outs)


# ---- validation (#api-mlgraphbuilder-lstmcell) ------------------------------------
def expect_type_error(build, *words):
    with pytest.raises(TypeError) as info:
        build()
    msg = str(info.value)
    for word in ("lstmCell",) + words:
        assert word.lower() in msg.lower(), f"{msg!r} does not mention {word!r}"


def make(ctx, dt="float32", batch=3, input_size=4, hidden=5, **shapes):
    b = webnn.MLGraphBuilder(ctx)
    default = {"input": [batch, input_size], "weight": [4 * hidden, input_size],
               "recurrentWeight": [4 * hidden, hidden], "hiddenState": [batch, hidden],
               "cellState": [batch, hidden], "bias": [4 * hidden],
               "recurrentBias": [4 * hidden], "peepholeWeight": [3 * hidden]}
    default.update(shapes)
    types = {k: dt for k in default}
    for k, v in list(default.items()):
        if isinstance(v, tuple):
            types[k], default[k] = v
    ops = {k: b.input(k, {"dataType": types[k], "shape": s}) for k, s in default.items()}

    def call(hidden=hidden, **opts):
        o = {k: ops[k] for k in OPTIONAL}
        o.update(opts)
        return b.lstm_cell(ops["input"], ops["weight"], ops["recurrentWeight"],
                           ops["hiddenState"], ops["cellState"], hidden, o)

    return call


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [20, 3], "weight"),
    ("weight", [15, 4], "weight"),
    ("recurrentWeight", [20, 4], "recurrentWeight"),
    ("hiddenState", [2, 5], "hiddenState"),
    ("cellState", [3, 6], "cellState"),
    ("bias", [15], "options.bias"),
    ("recurrentBias", [21], "options.recurrentBias"),
    ("peepholeWeight", [20], "options.peepholeWeight"),
])
def test_bad_shapes(ctx, name, shape, arg):
    expect_type_error(lambda: make(ctx, **{name: shape})(label="c-3"), arg, "c-3")


@pytest.mark.parametrize("name,shape,arg", [
    ("input", [3], "input"),
    ("cellState", [1, 3, 5], "cellState"),
    ("peepholeWeight", [1, 15], "options.peepholeWeight"),
])
def test_bad_ranks(ctx, name, shape, arg):
    expect_type_error(make(ctx, **{name: shape}), arg, "rank")


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [20, 4], "weight"), ("recurrentWeight", [20, 5], "recurrentWeight"),
    ("hiddenState", [3, 5], "hiddenState"), ("cellState", [3, 5], "cellState"),
    ("bias", [20], "options.bias"), ("recurrentBias", [20], "options.recurrentBias"),
    ("peepholeWeight", [15], "options.peepholeWeight"),
])
def test_data_type_mismatch(ctx, name, shape, arg):
    expect_type_error(make(ctx, **{name: ("float16", shape)}), arg, "float16")


@pytest.mark.parametrize("dt", ["int32", "uint8"])
def test_unsupported_data_type(ctx, dt):
    expect_type_error(make(ctx, dt=dt), "input", dt)


def test_hidden_size(ctx):
    call = make(ctx)
    for hs in (4, 6, 0):
        expect_type_error(lambda: call(hidden=hs), "weight")


@pytest.mark.parametrize("activations", [[], ["sigmoid", "tanh"], ["relu"] * 4])
def test_activations_size(ctx, activations):
    expect_type_error(lambda: make(ctx)(activations=activations), "activations")


@pytest.mark.parametrize("opts,word", [
    ({"activations": ["sigmoid", "tanh", "elu"]}, "activations"),
    ({"layout": "zrn"}, "layout"),
    ({"layout": "IOFG"}, "layout"),
])
def test_bad_option_values(ctx, opts, word):
    expect_type_error(lambda: make(ctx)(**opts), word)


@pytest.mark.parametrize("name", OPTIONAL)
def test_option_operand_of_another_builder(ctx, name):
    """"validating operand" for the operand-valued options too."""
    shape = {"bias": [20], "recurrentBias": [20], "peepholeWeight": [15]}[name]
    foreign = webnn.MLGraphBuilder(ctx).input("foreign", {"dataType": "float32", "shape": shape})
    expect_type_error(lambda: make(ctx)(**{name: foreign}), name, "another")


def test_other_operators_option_is_ignored(ctx):
    """An options dict member of another operator is not in this one's IDL
    dictionary: ignored as WebIDL says, with an UnknownOptionWarning naming
    it (the operator still builds)."""
    with pytest.warns(webnn.UnknownOptionWarning, match="'resetAfter'"):
        out = make(ctx)(**{"resetAfter": True})
    assert out is not None
