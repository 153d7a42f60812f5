"""gruCell: one step of a gated recurrent unit.

Reference: the spec's emulation sketch (#api-mlgraphbuilder-grucell) in
float64 NumPy, generalised to both layouts ("zrn": update, reset, new;
"rzn": reset, update, new) and to any activations:

    z = f(bz + rbz + (x Wz^T + h Rz^T))
    r = f(br + rbr + (x Wr^T + h Rr^T))
    resetAfter:  n = g(bn + (x Wn^T + r * (rbn + h Rn^T)))
    otherwise:   n = g((bn + rbn) + (x Wn^T + (r * h) Rn^T))
    h' = z * h + n * (1 - z)

The kernel computes in float32 (float16 operands widened, the result rounded
once); the tolerance is a float32 dot-product bound propagated loosely (the
activations are 1-Lipschitz at most, relu included), plus 1 ulp of the output
type.  gru (test_gru.py) is built on this reference, as in the spec.
"""
import math

import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, rng_for

DTYPES = op_dtypes("gruCell", "input")
ACTS = {
    "relu": lambda v: np.maximum(v, 0.0),
    "sigmoid": lambda v: 1.0 / (1.0 + np.exp(-v)),
    "tanh": np.tanh,
}
EPS32 = 2.0**-23


def gate(a, layout, name, hidden):
    """Rows (or entries) of gate `name` in a [3 * hidden, ...] tensor."""
    k = layout.index(name)
    return a[k * hidden:(k + 1) * hidden]


def gru_cell_ref(x, w, r, h, hidden, bias=None, rbias=None, reset_after=True,
                 layout="zrn", activations=None):
    """float64 reference of gruCell; also returns a bound of the float32
    rounding error of the kernel (per element)."""
    x, w, r, h = (np.asarray(v, np.float64) for v in (x, w, r, h))
    f, g = (ACTS[a] for a in (activations or ("sigmoid", "tanh")))
    zero = np.zeros(hidden)
    b = (lambda q: zero) if bias is None else \
        (lambda q: gate(np.asarray(bias, np.float64), layout, q, hidden))
    rb = (lambda q: zero) if rbias is None else \
        (lambda q: gate(np.asarray(rbias, np.float64), layout, q, hidden))
    W = lambda q: gate(w, layout, q, hidden)  # noqa: E731
    R = lambda q: gate(r, layout, q, hidden)  # noqa: E731
    with np.errstate(over="ignore"):
        z = f(b("z") + rb("z") + (x @ W("z").T + h @ R("z").T))
        rr = f(b("r") + rb("r") + (x @ W("r").T + h @ R("r").T))
        if reset_after:
            n = g(b("n") + (x @ W("n").T + rr * (rb("n") + h @ R("n").T)))
        else:
            n = g((b("n") + rb("n")) + (x @ W("n").T + (rr * h) @ R("n").T))
    out = z * h + n * (1.0 - z)
    # error bound: each gate's pre-activation is a dot product of length
    # input + hidden plus a few additions, in float32
    mag = np.abs(x) @ np.abs(w).T
    mag = mag[:, :hidden] + mag[:, hidden:2 * hidden] + mag[:, 2 * hidden:]
    rmag = np.abs(h) @ np.abs(r).T
    rmag = rmag[:, :hidden] + rmag[:, hidden:2 * hidden] + rmag[:, 2 * hidden:]
    k = x.shape[1] + h.shape[1] + 8
    bound = k * EPS32 * (mag + rmag + 4) * (1 + np.abs(h)) + 8 * EPS32 * (1 + np.abs(out))
    return out, bound


def random_case(rng, dt, batch, input_size, hidden, scale=0.5):
    t = npdt(dt)
    u = lambda *s: rng.uniform(-scale, scale, size=s).astype(t)  # noqa: E731
    return {
        "input": rng.uniform(-1, 1, size=(batch, input_size)).astype(t),
        "weight": u(3 * hidden, input_size),
        "recurrentWeight": u(3 * hidden, hidden),
        "hiddenState": rng.uniform(-1, 1, size=(batch, hidden)).astype(t),
        "bias": u(3 * hidden),
        "recurrentBias": u(3 * hidden),
    }


def run_cell(run, data, hidden, opts, with_bias, with_rbias, constants=()):
    names = ["input", "weight", "recurrentWeight", "hiddenState"]
    if with_bias:
        names.append("bias")
    if with_rbias:
        names.append("recurrentBias")
    inputs = {k: data[k] for k in names if k not in constants}
    consts = {k: data[k] for k in names if k in constants}

    def build(bld, **ops):
        o = dict(opts)
        if with_bias:
            o["bias"] = ops["bias"]
        if with_rbias:
            o["recurrentBias"] = ops["recurrentBias"]
        return bld.gru_cell(ops["input"], ops["weight"], ops["recurrentWeight"],
                            ops["hiddenState"], hidden, o)

    return run(build, inputs, constants=consts)


def check_cell(got, data, dt, hidden, opts, with_bias, with_rbias, what):
    ref, bound = gru_cell_ref(
        data["input"], data["weight"], data["recurrentWeight"], data["hiddenState"],
        hidden, data["bias"] if with_bias else None,
        data["recurrentBias"] if with_rbias else None,
        opts.get("resetAfter", True), opts.get("layout", "zrn"), opts.get("activations"))
    check_float(got, ref, dt, ref.shape, ulps=1, atol=bound, what=what)


# ---- every option ------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", [None, "zrn", "rzn"])
@pytest.mark.parametrize("reset_after", [None, True, False])
@pytest.mark.parametrize("biases", ["none", "bias", "recurrentBias", "both"])
def test_options(run, dt, layout, reset_after, biases):
    rng = rng_for("gruCell", dt, layout, reset_after, biases)
    batch, input_size, hidden = 3, 4, 5
    data = random_case(rng, dt, batch, input_size, hidden)
    opts = {}
    if layout is not None:
        opts["layout"] = layout
    if reset_after is not None:
        opts["resetAfter"] = reset_after
    wb, wr = biases in ("bias", "both"), biases in ("recurrentBias", "both")
    got = run_cell(run, data, hidden, opts, wb, wr)
    check_cell(got, data, dt, hidden, opts, wb, wr,
               f"gruCell {dt} layout={layout} resetAfter={reset_after} {biases}")


ACTIVATION_CASES = [["sigmoid", "tanh"], ["relu", "tanh"], ["tanh", "relu"],
                    ["sigmoid", "sigmoid"], ["relu", "relu"], ["tanh", "tanh"]]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("activations", ACTIVATION_CASES, ids=lambda a: "-".join(a))
@pytest.mark.parametrize("reset_after", [True, False])
def test_activations(run, dt, activations, reset_after):
    rng = rng_for("gruCell-act", dt, tuple(activations), reset_after)
    hidden = 4
    data = random_case(rng, dt, 2, 3, hidden, scale=1.0)
    opts = {"activations": activations, "resetAfter": reset_after, "layout": "rzn"}
    got = run_cell(run, data, hidden, opts, True, True)
    check_cell(got, data, dt, hidden, opts, True, True, f"gruCell {dt} {activations}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1, 1), (16, 64, 128), (64, 32, 256)], ids=str)
@pytest.mark.parametrize("reset_after", [True, False])
def test_sizes(run, dt, shape, reset_after):
    """Larger cells: the hidden units split between threads (16 x 128), and a
    product large enough for BLIS threads with the gate math threaded over
    the batch (64 x 256)."""
    batch, input_size, hidden = shape
    rng = rng_for("gruCell-size", dt, shape, reset_after)
    data = random_case(rng, dt, batch, input_size, hidden, scale=0.2)
    opts = {"resetAfter": reset_after}
    got = run_cell(run, data, hidden, opts, True, True,
                   constants=("weight", "recurrentWeight", "bias"))
    check_cell(got, data, dt, hidden, opts, True, True, f"gruCell {dt} {shape}")


@pytest.mark.parametrize("dt", DTYPES)
def test_hand_checked(run, dt):
    """batch 1, input 1, hidden 1: z = sigmoid(2), r = sigmoid(0.5 * 0.5),
    n = tanh(2 + r * 0.5 * 0.5) (resetAfter), h' = z h + (1 - z) n."""
    t = npdt(dt)
    x = np.array([[2.0]], t)
    w = np.array([[1.0], [0.0], [1.0]], t)       # z, r, n
    r = np.array([[0.0], [0.5], [0.5]], t)
    h = np.array([[0.5]], t)
    got = run(lambda bld, x, w, r, h: bld.gru_cell(x, w, r, h, 1),
              {"x": x, "w": w, "r": r, "h": h})
    z = 1 / (1 + math.exp(-2.0))
    rr = 1 / (1 + math.exp(-0.25))
    n = math.tanh(2.0 + rr * 0.25)
    expect = z * 0.5 + (1 - z) * n
    check_float(got, np.array([[expect]]), dt, (1, 1), ulps=2, what="gruCell hand-checked")
    # the same with resetAfter false: n = tanh(2 + (r * 0.5) * 0.5)
    got = run(lambda bld, x, w, r, h: bld.gru_cell(x, w, r, h, 1, {"resetAfter": False}),
              {"x": x, "w": w, "r": r, "h": h})
    check_float(got, np.array([[expect]]), dt, (1, 1), ulps=2, what="gruCell hand-checked")
    # layout rzn reads r from the first row and z from the second
    got = run(lambda bld, x, w, r, h: bld.gru_cell(x, w, r, h, 1, {"layout": "rzn"}),
              {"x": x, "w": w, "r": r, "h": h})
    z2 = 1 / (1 + math.exp(-0.25))
    r2 = 1 / (1 + math.exp(-2.0))
    n2 = math.tanh(2.0 + r2 * 0.25)
    check_float(got, np.array([[z2 * 0.5 + (1 - z2) * n2]]), dt, (1, 1), ulps=2,
                what="gruCell rzn hand-checked")


@pytest.mark.parametrize("dt", DTYPES)
def test_extreme_values(run, dt):
    """Saturated gates (|pre-activation| up to 1e4), NaN propagation."""
    t = npdt(dt)
    hidden = 3
    rng = rng_for("gruCell-ext", dt)
    data = random_case(rng, dt, 4, 2, hidden)
    data["bias"] = np.array([-1e4, 1e4, -90.0, 100.0, -100.0, 0.0, 50.0, -50.0, 1e4], t)
    got = run_cell(run, data, hidden, {}, True, True)
    check_cell(got, data, dt, hidden, {}, True, True, f"gruCell {dt} saturated")
    data["input"][1, 0] = np.nan
    got = run_cell(run, data, hidden, {}, True, True)
    assert np.all(np.isnan(got[1])), got
    assert not np.any(np.isnan(got[[0, 2, 3]])), got


def test_output_descriptor(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [3, 4]})
    w = b.input("w", {"dataType": "float32", "shape": [15, 4]})
    r = b.input("r", {"dataType": "float32", "shape": [15, 5]})
    h = b.input("h", {"dataType": "float32", "shape": [3, 5]})
    out = b.gruCell(x, w, r, h, 5)
    assert isinstance(out, webnn.MLOperand)
    assert out.data_type == "float32" and list(out.shape) == [3, 5]


# ---- validation (#api-mlgraphbuilder-grucell) -------------------------------------
def expect_type_error(build, *words):
    with pytest.raises(TypeError) as info:
        build()
    msg = str(info.value)
    for word in ("gruCell",) + words:
        assert word.lower() in msg.lower(), f"{msg!r} does not mention {word!r}"


def operands(ctx, dt="float32", batch=3, input_size=4, hidden=5, **shapes):
    b = webnn.MLGraphBuilder(ctx)
    default = {"input": [batch, input_size], "weight": [3 * hidden, input_size],
               "recurrentWeight": [3 * hidden, hidden], "hiddenState": [batch, hidden],
               "bias": [3 * hidden], "recurrentBias": [3 * hidden]}
    default.update(shapes)
    types = {k: dt for k in default}
    for k, v in list(default.items()):
        if isinstance(v, tuple):  # (data type, shape)
            types[k], default[k] = v
    ops = {k: b.input(k, {"dataType": types[k], "shape": s}) for k, s in default.items()}
    return b, ops


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [15, 3], "weight"),
    ("weight", [12, 4], "weight"),
    ("recurrentWeight", [15, 4], "recurrentWeight"),
    ("recurrentWeight", [10, 5], "recurrentWeight"),
    ("hiddenState", [2, 5], "hiddenState"),
    ("hiddenState", [3, 4], "hiddenState"),
    ("bias", [14], "options.bias"),
    ("recurrentBias", [16], "options.recurrentBias"),
])
def test_bad_shapes(ctx, name, shape, arg):
    b, o = operands(ctx, **{name: shape})
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5,
                                         {"bias": o["bias"], "recurrentBias": o["recurrentBias"],
                                          "label": "cell-1"}),
                      arg, "cell-1")


@pytest.mark.parametrize("name,shape,arg", [
    ("input", [3, 4, 1], "input"),
    ("weight", [1, 15, 4], "weight"),
    ("hiddenState", [5], "hiddenState"),
    ("bias", [1, 15], "options.bias"),
])
def test_bad_ranks(ctx, name, shape, arg):
    b, o = operands(ctx, **{name: shape})
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5, {"bias": o["bias"]}),
                      arg, "rank")


@pytest.mark.parametrize("name,arg", [
    ("weight", "weight"), ("recurrentWeight", "recurrentWeight"),
    ("hiddenState", "hiddenState"), ("bias", "options.bias"),
    ("recurrentBias", "options.recurrentBias"),
])
def test_data_type_mismatch(ctx, name, arg):
    """Every operand has the input's data type ("same as input")."""
    other = {"weight": [15, 4], "recurrentWeight": [15, 5], "hiddenState": [3, 5],
             "bias": [15], "recurrentBias": [15]}[name]
    b, o = operands(ctx, **{name: ("float16", other)})
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5,
                                         {"bias": o["bias"], "recurrentBias": o["recurrentBias"]}),
                      arg, "float16")


@pytest.mark.parametrize("dt", ["int32", "uint8", "int64"])
def test_unsupported_data_type(ctx, dt):
    b, o = operands(ctx, dt=dt)
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5), "input", dt)


def test_hidden_size(ctx):
    b, o = operands(ctx)
    # hiddenSize must match the operands' shapes; 0 is not a valid size
    for hs in (4, 6, 0):
        expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                             o["hiddenState"], hs), "weight")
    with pytest.raises(TypeError):
        b.gru_cell(o["input"], o["weight"], o["recurrentWeight"], o["hiddenState"], -1)
    with pytest.raises(TypeError):
        b.gru_cell(o["input"], o["weight"], o["recurrentWeight"], o["hiddenState"], 2**32)


@pytest.mark.parametrize("activations", [[], ["sigmoid"], ["sigmoid", "tanh", "tanh"]])
def test_activations_size(ctx, activations):
    b, o = operands(ctx)
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5, {"activations": activations}),
                      "activations")


@pytest.mark.parametrize("opts,word", [
    ({"activations": ["sigmoid", "gelu"]}, "activations"),
    ({"activations": "sigmoid"}, "activations"),
    ({"layout": "nzr"}, "layout"),
    ({"layout": "iofg"}, "layout"),
    ({"resetAfter": "yes"}, "resetAfter"),
])
def test_bad_option_values(ctx, opts, word):
    b, o = operands(ctx)
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5, opts), word)


@pytest.mark.parametrize("name", ["bias", "recurrentBias"])
def test_option_operand_of_another_builder(ctx, name):
    """"validating operand" for the operand-valued options too."""
    b, o = operands(ctx)
    foreign = webnn.MLGraphBuilder(ctx).input("foreign", {"dataType": "float32", "shape": [15]})
    expect_type_error(lambda: b.gru_cell(o["input"], o["weight"], o["recurrentWeight"],
                                         o["hiddenState"], 5, {name: foreign}), name, "another")


def test_other_operators_option_is_ignored(ctx):
    """An options dict member of another operator is not in this one's IDL
    dictionary: ignored as WebIDL says, with an UnknownOptionWarning naming
    it (the operator still builds)."""
    b, o = operands(ctx)
    with pytest.warns(webnn.UnknownOptionWarning, match="'direction'"):
        out = b.gru_cell(o["input"], o["weight"], o["recurrentWeight"], o["hiddenState"], 5,
                   {"direction": "both"})
    assert out is not None
