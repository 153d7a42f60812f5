"""lstm: a long short-term memory network over a sequence.

Reference: the spec's emulation sketch (#api-mlgraphbuilder-lstm) in float64
NumPy: per direction, lstmCell (test_lstm_cell.lstm_cell_ref) over the
steps, "backward" (and the second direction of "both") from the last step to
the first; outputs: the last hidden state and the last cell state
[numDirections, batch, hidden] and, with returnSequence, every step's hidden
state [steps, numDirections, batch, hidden], indexed by the input's step.

Tolerance: the per-step float32 bounds of lstm_cell_ref, accumulated over
the steps with a growth factor for the recurrence, plus 1 ulp of the output
type (the weights are small, so the recurrence contracts).
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import webnn

from .conftest import check_float, npdt, op_dtypes, rng_for
from .test_lstm_cell import lstm_cell_ref

DTYPES = op_dtypes("lstm", "input")
OPTIONAL = ("bias", "recurrentBias", "peepholeWeight", "initialHiddenState", "initialCellState")


def lstm_ref(x, w, r, steps, hidden, bias=None, rbias=None, peephole=None, h0=None, c0=None,
             direction="forward", layout="iofg", activations=None):
    dirs = 2 if direction == "both" else 1
    batch = x.shape[1]
    hs = np.zeros((dirs, batch, hidden)) if h0 is None else np.asarray(h0, np.float64)
    cs = np.zeros((dirs, batch, hidden)) if c0 is None else np.asarray(c0, np.float64)
    seq = np.zeros((steps, dirs, batch, hidden))
    seq_bound = np.zeros_like(seq)
    out = {"h": [], "c": [], "hb": [], "cb": []}
    for d in range(dirs):
        h, c = hs[d], cs[d]
        hacc = np.zeros_like(h)
        cacc = np.zeros_like(c)
        for s in range(steps):
            t = steps - 1 - s if (d == 1 or direction == "backward") else s
            h, c, hb, cb = lstm_cell_ref(x[t], w[d], r[d], h, c, hidden,
                                         None if bias is None else bias[d],
                                         None if rbias is None else rbias[d],
                                         None if peephole is None else peephole[d],
                                         layout, activations)
            # errors of the previous states feed the next step (through the
            # small weights, and c' = f * c + ...): loosely, doubled
            hacc, cacc = 2 * (hacc + cacc) + hb, 2 * (hacc + cacc) + cb
            seq[t, d] = h
            seq_bound[t, d] = hacc
        out["h"].append(h)
        out["c"].append(c)
        out["hb"].append(hacc)
        out["cb"].append(cacc)
    return ({k: np.stack(v) for k, v in out.items()}, seq, seq_bound)


def random_net(rng, dt, steps, batch, input_size, hidden, dirs, scale=0.5):
    t = npdt(dt)
    u = lambda *s: rng.uniform(-scale, scale, size=s).astype(t)  # noqa: E731
    return {
        "input": rng.uniform(-1, 1, size=(steps, batch, input_size)).astype(t),
        "weight": u(dirs, 4 * hidden, input_size),
        "recurrentWeight": u(dirs, 4 * hidden, hidden),
        "bias": u(dirs, 4 * hidden),
        "recurrentBias": u(dirs, 4 * hidden),
        "peepholeWeight": u(dirs, 3 * hidden),
        "initialHiddenState": rng.uniform(-1, 1, size=(dirs, batch, hidden)).astype(t),
        "initialCellState": rng.uniform(-1, 1, size=(dirs, batch, hidden)).astype(t),
    }


def run_net(run, data, steps, hidden, opts, present, constants=()):
    names = ["input", "weight", "recurrentWeight"] + [k for k in OPTIONAL if k in present]
    inputs = {k: data[k] for k in names if k not in constants}
    consts = {k: data[k] for k in names if k in constants}
    ret = opts.get("returnSequence", False)

    def build(bld, **ops):
        o = dict(opts)
        for k in OPTIONAL:
            if k in present:
                o[k] = ops[k]
        outs = bld.lstm(ops["input"], ops["weight"], ops["recurrentWeight"], steps, hidden, o)
        assert isinstance(outs, list) and len(outs) == (3 if ret else 2)
        return dict(zip(("h", "c", "seq"), outs))

    return run(build, inputs, constants=consts)


def check_net(got, data, dt, steps, hidden, opts, present, what):
    ref, seq, seq_bound = lstm_ref(
        data["input"].astype(np.float64), data["weight"].astype(np.float64),
        data["recurrentWeight"].astype(np.float64), steps, hidden,
        *(data[k].astype(np.float64) if k in present else None for k in OPTIONAL),
        direction=opts.get("direction", "forward"), layout=opts.get("layout", "iofg"),
        activations=opts.get("activations"))
    check_float(got["h"], ref["h"], dt, ref["h"].shape, ulps=1, atol=ref["hb"],
                what=what + " output0 (h)")
    check_float(got["c"], ref["c"], dt, ref["c"].shape, ulps=1, atol=ref["cb"],
                what=what + " output1 (c)")
    if opts.get("returnSequence", False):
        check_float(got["seq"], seq, dt, seq.shape, ulps=1, atol=seq_bound,
                    what=what + " output2 (sequence)")
    else:
        assert set(got) == {"h", "c"}


# ---- every option ------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("direction", [None, "forward", "backward", "both"])
@pytest.mark.parametrize("return_sequence", [None, False, True])
@pytest.mark.parametrize("layout", [None, "iofg", "ifgo"])
def test_directions(run, dt, direction, return_sequence, layout):
    rng = rng_for("lstm", dt, direction, return_sequence, layout)
    steps, batch, input_size, hidden = 4, 3, 5, 6
    dirs = 2 if direction == "both" else 1
    data = random_net(rng, dt, steps, batch, input_size, hidden, dirs)
    opts = {}
    for k, v in (("direction", direction), ("returnSequence", return_sequence),
                 ("layout", layout)):
        if v is not None:
            opts[k] = v
    got = run_net(run, data, steps, hidden, opts, OPTIONAL)
    check_net(got, data, dt, steps, hidden, opts, OPTIONAL,
              f"lstm {dt} direction={direction} returnSequence={return_sequence} "
              f"layout={layout}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("present", [(), ("bias",), ("recurrentBias",), ("peepholeWeight",),
                                     ("initialHiddenState",), ("initialCellState",),
                                     ("bias", "peepholeWeight", "initialCellState"), OPTIONAL],
                         ids=lambda p: "+".join(p) or "none")
def test_optional_inputs(run, dt, present):
    rng = rng_for("lstm-opt", dt, present)
    steps, batch, input_size, hidden = 3, 2, 3, 4
    data = random_net(rng, dt, steps, batch, input_size, hidden, 2)
    for layout in ("iofg", "ifgo"):
        opts = {"direction": "both", "returnSequence": True, "layout": layout}
        got = run_net(run, data, steps, hidden, opts, present)
        check_net(got, data, dt, steps, hidden, opts, present, f"lstm {dt} {layout} {present}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("activations", [["sigmoid", "tanh", "tanh"], ["relu", "tanh", "sigmoid"],
                                         ["tanh", "relu", "relu"], ["sigmoid", "sigmoid", "relu"]],
                         ids=lambda a: "-".join(a))
def test_activations(run, dt, activations):
    rng = rng_for("lstm-act", dt, tuple(activations))
    steps, batch, input_size, hidden = 3, 2, 3, 4
    data = random_net(rng, dt, steps, batch, input_size, hidden, 2, scale=0.3)
    opts = {"direction": "both", "returnSequence": True, "activations": activations,
            "layout": "ifgo"}
    got = run_net(run, data, steps, hidden, opts, OPTIONAL)
    check_net(got, data, dt, steps, hidden, opts, OPTIONAL, f"lstm {dt} {activations}")


# steps, batch, input, hidden: one thread; hidden units split between threads
# (a slice ending mid-panel); a batch that is not a multiple of the
# micro-kernel's rows; a long sequence whose projection is shared by the
# threads while the steps are too small to share; a batch too large for the
# micro-kernel (cpu_product on R^T); a step product large enough for BLIS's
# threads (gate math threaded over the batch).
SIZES = [(1, 1, 1, 1), (2, 8, 16, 180), (3, 11, 7, 64), (64, 8, 64, 16), (2, 65, 3, 8),
         (2, 72, 8, 128)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("direction", ["backward", "both"])
def test_sizes(run, dt, size, direction):
    steps, batch, input_size, hidden = size
    dirs = 2 if direction == "both" else 1
    rng = rng_for("lstm-size", dt, size, direction)
    data = random_net(rng, dt, steps, batch, input_size, hidden, dirs, scale=0.1)
    opts = {"direction": direction, "returnSequence": True}
    got = run_net(run, data, steps, hidden, opts, OPTIONAL,
                  constants=("weight", "recurrentWeight", "peepholeWeight"))
    check_net(got, data, dt, steps, hidden, opts, OPTIONAL, f"lstm {dt} {size} {direction}")


@pytest.mark.parametrize("dt", DTYPES)
def test_backward_sequence_order(run, dt):
    """hidden 1, i = o = f = sigmoid(0) = 0.5, g = tanh(4 x): the backward
    network's sequence output at step t is its state after it has consumed
    the input from the last step down to t."""
    t = npdt(dt)
    steps = 3
    x = np.array([1.0, 0.0, 0.0], t).reshape(steps, 1, 1)
    w = np.array([[[0.0], [0.0], [0.0], [4.0]]], t)     # iofg
    r = np.zeros((1, 4, 1), t)
    out = run(lambda bld, x, w, r: dict(zip(("h", "c", "seq"), bld.lstm(
        x, w, r, steps, 1, {"direction": "backward", "returnSequence": True}))),
        {"x": x, "w": w, "r": r})
    c = 0.5 * np.tanh(4.0)
    h = 0.5 * np.tanh(c)
    expect = np.array([h, 0.0, 0.0]).reshape(steps, 1, 1, 1)
    check_float(out["seq"], expect, dt, (steps, 1, 1, 1), ulps=2, what="lstm backward sequence")
    check_float(out["h"], expect[0, 0], dt, (1, 1, 1), ulps=2, what="lstm backward h")
    check_float(out["c"], np.array([[[c]]]), dt, (1, 1, 1), ulps=2, what="lstm backward c")


SUBPROCESS_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    import webnn
    data = dict(np.load(sys.argv[2]))
    cases = json.loads(sys.argv[4])
    ctx = webnn.ml.create_context()
    out = {}
    for i, (steps, hidden, opts) in enumerate(cases):
        b = webnn.MLGraphBuilder(ctx)
        feeds = {k[len(f"{i}."):]: v for k, v in data.items() if k.startswith(f"{i}.")}
        ops = {k: b.input(k, {"dataType": str(v.dtype), "shape": list(v.shape)})
               for k, v in feeds.items()}
        o = dict(opts)
        o.update({k: ops[k] for k in ("bias", "recurrentBias", "peepholeWeight",
                                      "initialHiddenState", "initialCellState")})
        h, c, seq = b.lstm(ops["input"], ops["weight"], ops["recurrentWeight"], steps,
                           hidden, o)
        res = ctx.compute(b.build({"h": h, "c": c, "seq": seq}), feeds)
        for k in ("h", "c", "seq"):
            out[f"{i}.{k}"] = res[k]
    np.savez(sys.argv[3], **out)
""")


def run_in_subprocess(tmp_path, env, cases, key):
    """Runs the cases [(size, opts)] in a fresh process with `env` added
    (environment variables read at start-up) and checks them."""
    rng = rng_for("lstm-sub", key)
    data, feeds, spec = [], {}, []
    for i, (size, opts) in enumerate(cases):
        steps, batch, input_size, hidden = size
        dirs = 2 if opts.get("direction") == "both" else 1
        d = random_net(rng, "float32", steps, batch, input_size, hidden, dirs, scale=0.1)
        data.append(d)
        feeds.update({f"{i}.{k}": v for k, v in d.items()})
        spec.append([steps, hidden, dict(opts, returnSequence=True)])
    np.savez(tmp_path / "in.npz", **feeds)
    root = os.path.dirname(os.path.dirname(webnn.__file__))
    subprocess.run([sys.executable, "-c", SUBPROCESS_SCRIPT, root, str(tmp_path / "in.npz"),
                    str(tmp_path / "out.npz"), json.dumps(spec)],
                   env=dict(os.environ, **env), check=True, timeout=120)
    got = np.load(tmp_path / "out.npz")
    for i, (size, opts) in enumerate(cases):
        steps, _, _, hidden = size
        check_net({k: got[f"{i}.{k}"] for k in ("h", "c", "seq")}, data[i], "float32", steps,
                  hidden, dict(opts, returnSequence=True), OPTIONAL, f"lstm {env} {size} {opts}")


SUBPROCESS_CASES = [((2, 8, 16, 180), {}),
                    ((3, 7, 5, 20), {"direction": "both", "layout": "ifgo"}),
                    ((4, 9, 6, 48), {"direction": "both"}),
                    ((3, 13, 5, 40), {"direction": "backward"})]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a team of threads")
def test_fewer_threads_than_planned(tmp_path):
    """OMP_THREAD_LIMIT=1: the planned team gets one thread, which runs
    everything itself, unsliced (in a fresh process)."""
    run_in_subprocess(tmp_path, {"OMP_THREAD_LIMIT": "1"}, SUBPROCESS_CASES, "threads")


@pytest.mark.parametrize("isa", ["avx2", "baseline"])
def test_other_isa(tmp_path, isa):
    """The AVX2 micro-kernel and the cpu_product (BLIS) path (WEBNN_CPU_ISA)."""
    run_in_subprocess(tmp_path, {"WEBNN_CPU_ISA": isa}, SUBPROCESS_CASES, isa)


def test_output_descriptors(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [7, 3, 4]})
    w = b.input("w", {"dataType": "float32", "shape": [2, 20, 4]})
    r = b.input("r", {"dataType": "float32", "shape": [2, 20, 5]})
    outs = b.lstm(x, w, r, 7, 5, {"direction": "both", "returnSequence": True})
    assert [list(o.shape) for o in outs] == [[2, 3, 5], [2, 3, 5], [7, 2, 3, 5]]
    outs = b.lstm(x, w, r, 7, 5, direction="both", return_sequence=False)
    assert [list(o.shape) for o in outs] == [[2, 3, 5], [2, 3, 5]]


# ---- validation (#api-mlgraphbuilder-lstm) ----------------------------------------
def expect_type_error(build, *words):
    with pytest.raises(TypeError) as info:
        build()
    msg = str(info.value)
    for word in ("lstm",) + words:
        assert word.lower() in msg.lower(), f"{msg!r} does not mention {word!r}"


def make(ctx, dt="float32", dirs=1, steps=2, batch=3, input_size=4, hidden=5, **shapes):
    b = webnn.MLGraphBuilder(ctx)
    state = [dirs, batch, hidden]
    default = {"input": [steps, batch, input_size], "weight": [dirs, 4 * hidden, input_size],
               "recurrentWeight": [dirs, 4 * hidden, hidden], "bias": [dirs, 4 * hidden],
               "recurrentBias": [dirs, 4 * hidden], "peepholeWeight": [dirs, 3 * hidden],
               "initialHiddenState": state, "initialCellState": state}
    default.update(shapes)
    types = {k: dt for k in default}
    for k, v in list(default.items()):
        if isinstance(v, tuple):
            types[k], default[k] = v
    ops = {k: b.input(k, {"dataType": types[k], "shape": s}) for k, s in default.items()}

    def call(steps=steps, hidden=hidden, **opts):
        o = {k: ops[k] for k in OPTIONAL}
        o.update(opts)
        return b.lstm(ops["input"], ops["weight"], ops["recurrentWeight"], steps, hidden, o)

    return call


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [1, 20, 3], "weight"),
    ("weight", [1, 15, 4], "weight"),
    ("weight", [2, 20, 4], "weight"),
    ("recurrentWeight", [1, 20, 4], "recurrentWeight"),
    ("bias", [1, 15], "options.bias"),
    ("recurrentBias", [2, 20], "options.recurrentBias"),
    ("peepholeWeight", [1, 20], "options.peepholeWeight"),
    ("peepholeWeight", [2, 15], "options.peepholeWeight"),
    ("initialHiddenState", [1, 2, 5], "options.initialHiddenState"),
    ("initialCellState", [1, 3, 6], "options.initialCellState"),
])
def test_bad_shapes(ctx, name, shape, arg):
    expect_type_error(lambda: make(ctx, **{name: shape})(label="seq-2"), arg, "seq-2")


def test_direction_both_needs_two(ctx):
    make(ctx, dirs=2)(direction="both")
    expect_type_error(lambda: make(ctx, dirs=1)(direction="both"), "weight")
    expect_type_error(lambda: make(ctx, dirs=2)(direction="forward"), "weight")


@pytest.mark.parametrize("name,shape,arg", [
    ("input", [2, 3, 4, 1], "input"),
    ("recurrentWeight", [20, 5], "recurrentWeight"),
    ("peepholeWeight", [15], "options.peepholeWeight"),
    ("initialCellState", [3, 5], "options.initialCellState"),
])
def test_bad_ranks(ctx, name, shape, arg):
    expect_type_error(make(ctx, **{name: shape}), arg, "rank")


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [1, 20, 4], "weight"), ("recurrentWeight", [1, 20, 5], "recurrentWeight"),
    ("bias", [1, 20], "options.bias"), ("recurrentBias", [1, 20], "options.recurrentBias"),
    ("peepholeWeight", [1, 15], "options.peepholeWeight"),
    ("initialHiddenState", [1, 3, 5], "options.initialHiddenState"),
    ("initialCellState", [1, 3, 5], "options.initialCellState"),
])
def test_data_type_mismatch(ctx, name, shape, arg):
    expect_type_error(make(ctx, **{name: ("float16", shape)}), arg, "float16")


@pytest.mark.parametrize("dt", ["int64", "uint64", "int8"])
def test_unsupported_data_type(ctx, dt):
    expect_type_error(make(ctx, dt=dt), "input", dt)


def test_steps(ctx):
    call = make(ctx, steps=2)
    expect_type_error(lambda: call(steps=0), "steps", "0")
    expect_type_error(lambda: call(steps=3), "steps")
    with pytest.raises(TypeError):
        call(steps=2**32)


def test_hidden_size(ctx):
    call = make(ctx)
    for hs in (4, 6, 0):
        expect_type_error(lambda: call(hidden=hs), "weight")


@pytest.mark.parametrize("activations", [[], ["sigmoid", "tanh"], ["relu"] * 4])
def test_activations_size(ctx, activations):
    expect_type_error(lambda: make(ctx)(activations=activations), "activations")


@pytest.mark.parametrize("opts,word", [
    ({"activations": ["sigmoid", "tanh", 3]}, "activations"),
    ({"direction": "reverse"}, "direction"),
    ({"layout": "rzn"}, "layout"),
])
def test_bad_option_values(ctx, opts, word):
    expect_type_error(lambda: make(ctx)(**opts), word)


@pytest.mark.parametrize("name", OPTIONAL)
def test_option_operand_of_another_builder(ctx, name):
    """"validating operand" for the operand-valued options too."""
    shape = {"bias": [1, 20], "recurrentBias": [1, 20], "peepholeWeight": [1, 15],
             "initialHiddenState": [1, 3, 5], "initialCellState": [1, 3, 5]}[name]
    foreign = webnn.MLGraphBuilder(ctx).input("foreign", {"dataType": "float32", "shape": shape})
    expect_type_error(lambda: make(ctx)(**{name: foreign}), name, "another")


def test_other_operators_option_is_ignored(ctx):
    """An options dict member of another operator is not in this one's IDL
    dictionary: ignored as WebIDL says, with an UnknownOptionWarning naming
    it (the operator still builds)."""
    with pytest.warns(webnn.UnknownOptionWarning, match="'resetAfter'"):
        out = make(ctx)(**{"resetAfter": False})
    assert out is not None
