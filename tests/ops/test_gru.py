"""gru: a gated recurrent unit network over a sequence.

Reference: the spec's emulation sketch (#api-mlgraphbuilder-gru) in float64
NumPy: per direction, gruCell (test_gru_cell.gru_cell_ref) over the steps,
"backward" (and the second direction of "both") from the last step to the
first; outputs: the last hidden state [numDirections, batch, hidden] and,
with returnSequence, every step's hidden state [steps, numDirections, batch,
hidden], indexed by the input's step for both directions.

Tolerance: the per-step float32 bound of gru_cell_ref, accumulated over the
steps (the update is a convex combination of the previous state and n, so
earlier errors do not grow), plus 1 ulp of the output type.
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
from .test_gru_cell import gru_cell_ref

DTYPES = op_dtypes("gru", "input")


def gru_ref(x, w, r, steps, hidden, bias=None, rbias=None, h0=None, reset_after=True,
            direction="forward", layout="zrn", activations=None):
    dirs = 2 if direction == "both" else 1
    batch = x.shape[1]
    h_all = np.zeros((dirs, batch, hidden)) if h0 is None else np.asarray(h0, np.float64)
    seq = np.zeros((steps, dirs, batch, hidden))
    seq_bound = np.zeros_like(seq)
    last, last_bound = [], []
    for d in range(dirs):
        h = h_all[d]
        acc = np.zeros_like(h)
        for s in range(steps):
            t = steps - 1 - s if (d == 1 or direction == "backward") else s
            h, bound = gru_cell_ref(x[t], w[d], r[d], h, hidden,
                                    None if bias is None else bias[d],
                                    None if rbias is None else rbias[d],
                                    reset_after, layout, activations)
            acc = acc + bound
            seq[t, d] = h
            seq_bound[t, d] = acc
        last.append(h)
        last_bound.append(acc)
    return np.stack(last), np.stack(last_bound), seq, seq_bound


def random_net(rng, dt, steps, batch, input_size, hidden, dirs, scale=0.5):
    t = npdt(dt)
    u = lambda *s: rng.uniform(-scale, scale, size=s).astype(t)  # noqa: E731
    return {
        "input": rng.uniform(-1, 1, size=(steps, batch, input_size)).astype(t),
        "weight": u(dirs, 3 * hidden, input_size),
        "recurrentWeight": u(dirs, 3 * hidden, hidden),
        "bias": u(dirs, 3 * hidden),
        "recurrentBias": u(dirs, 3 * hidden),
        "initialHiddenState": rng.uniform(-1, 1, size=(dirs, batch, hidden)).astype(t),
    }


OPTIONAL = ("bias", "recurrentBias", "initialHiddenState")


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
        outs = bld.gru(ops["input"], ops["weight"], ops["recurrentWeight"], steps, hidden, o)
        assert isinstance(outs, list) and len(outs) == (2 if ret else 1)
        return {"h": outs[0], "seq": outs[1]} if ret else {"h": outs[0]}

    return run(build, inputs, constants=consts)


def check_net(got, data, dt, steps, hidden, opts, present, what):
    last, last_bound, seq, seq_bound = gru_ref(
        data["input"].astype(np.float64), data["weight"].astype(np.float64),
        data["recurrentWeight"].astype(np.float64), steps, hidden,
        *(data[k].astype(np.float64) if k in present else None for k in OPTIONAL),
        reset_after=opts.get("resetAfter", True), direction=opts.get("direction", "forward"),
        layout=opts.get("layout", "zrn"), activations=opts.get("activations"))
    check_float(got["h"], last, dt, last.shape, ulps=1, atol=last_bound, what=what + " output0")
    if opts.get("returnSequence", False):
        check_float(got["seq"], seq, dt, seq.shape, ulps=1, atol=seq_bound,
                    what=what + " output1 (sequence)")
    else:
        assert set(got) == {"h"}


# ---- every option ------------------------------------------------------------
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("direction", [None, "forward", "backward", "both"])
@pytest.mark.parametrize("return_sequence", [None, False, True])
@pytest.mark.parametrize("reset_after", [True, False])
def test_directions(run, dt, direction, return_sequence, reset_after):
    rng = rng_for("gru", dt, direction, return_sequence, reset_after)
    steps, batch, input_size, hidden = 4, 3, 5, 6
    dirs = 2 if direction == "both" else 1
    data = random_net(rng, dt, steps, batch, input_size, hidden, dirs)
    opts = {"resetAfter": reset_after}
    if direction is not None:
        opts["direction"] = direction
    if return_sequence is not None:
        opts["returnSequence"] = return_sequence
    got = run_net(run, data, steps, hidden, opts, OPTIONAL)
    check_net(got, data, dt, steps, hidden, opts, OPTIONAL,
              f"gru {dt} direction={direction} returnSequence={return_sequence} "
              f"resetAfter={reset_after}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", [None, "zrn", "rzn"])
@pytest.mark.parametrize("present", [(), ("bias",), ("recurrentBias",), ("initialHiddenState",),
                                     ("bias", "recurrentBias"), OPTIONAL],
                         ids=lambda p: "+".join(p) or "none")
def test_optional_inputs(run, dt, layout, present):
    rng = rng_for("gru-opt", dt, layout, present)
    steps, batch, input_size, hidden = 3, 2, 3, 4
    data = random_net(rng, dt, steps, batch, input_size, hidden, 2)
    opts = {"direction": "both", "returnSequence": True}
    if layout is not None:
        opts["layout"] = layout
    for reset_after in (True, False):
        opts["resetAfter"] = reset_after
        got = run_net(run, data, steps, hidden, opts, present)
        check_net(got, data, dt, steps, hidden, opts, present,
                  f"gru {dt} layout={layout} resetAfter={reset_after} {present}")


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("activations", [["sigmoid", "tanh"], ["relu", "tanh"],
                                         ["tanh", "sigmoid"], ["relu", "relu"]],
                         ids=lambda a: "-".join(a))
def test_activations(run, dt, activations):
    rng = rng_for("gru-act", dt, tuple(activations))
    steps, batch, input_size, hidden = 3, 2, 3, 4
    data = random_net(rng, dt, steps, batch, input_size, hidden, 2, scale=0.4)
    for reset_after in (True, False):
        opts = {"direction": "both", "returnSequence": True, "activations": activations,
                "resetAfter": reset_after, "layout": "rzn"}
        got = run_net(run, data, steps, hidden, opts, OPTIONAL)
        check_net(got, data, dt, steps, hidden, opts, OPTIONAL, f"gru {dt} {activations}")


# steps, batch, input, hidden: one thread; hidden units split between threads
# (a slice ending mid-panel); a batch that is not a multiple of the
# micro-kernel's rows; a long sequence whose projection is shared by the
# threads while the steps are too small to share; a batch too large for the
# micro-kernel (cpu_product); a step product large enough for BLIS's threads
# (gate math threaded over the batch).
SIZES = [(1, 1, 1, 1), (2, 8, 16, 210), (3, 11, 7, 64), (64, 8, 64, 16), (2, 65, 3, 8),
         (2, 72, 8, 160)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("direction", ["forward", "both"])
@pytest.mark.parametrize("reset_after", [True, False])
def test_sizes(run, dt, size, direction, reset_after):
    steps, batch, input_size, hidden = size
    dirs = 2 if direction == "both" else 1
    rng = rng_for("gru-size", dt, size, direction, reset_after)
    data = random_net(rng, dt, steps, batch, input_size, hidden, dirs, scale=0.15)
    opts = {"direction": direction, "returnSequence": True, "resetAfter": reset_after}
    got = run_net(run, data, steps, hidden, opts, OPTIONAL,
                  constants=("weight", "recurrentWeight", "bias", "recurrentBias"))
    check_net(got, data, dt, steps, hidden, opts, OPTIONAL, f"gru {dt} {size} {direction}")


@pytest.mark.parametrize("dt", DTYPES)
def test_backward_sequence_order(run, dt):
    """hidden 1, weights making the hidden state count the steps seen: a
    backward network's sequence output at step t is its state after it has
    consumed the input from the last step down to t."""
    t = npdt(dt)
    steps = 4
    x = np.array([1.0, 0.0, 0.0, 0.0], t).reshape(steps, 1, 1)
    w = np.array([[[0.0], [0.0], [4.0]]], t)     # z = 0.5, r = 0.5, n = tanh(4 x)
    r = np.zeros((1, 3, 1), t)
    out = run(lambda bld, x, w, r: dict(zip(("h", "seq"), bld.gru(
        x, w, r, steps, 1, {"direction": "backward", "returnSequence": True}))),
        {"x": x, "w": w, "r": r})
    # backward: steps 3, 2, 1 see x = 0 (h stays 0), step 0 sees x = 1
    n = np.tanh(4.0)
    expect = np.array([0.5 * n, 0.0, 0.0, 0.0]).reshape(steps, 1, 1, 1)
    check_float(out["seq"], expect, dt, (steps, 1, 1, 1), ulps=2, what="gru backward sequence")
    check_float(out["h"], expect[0, 0], dt, (1, 1, 1), ulps=2, what="gru backward last")


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
        o.update({k: ops[k] for k in ("bias", "recurrentBias", "initialHiddenState")})
        h, seq = b.gru(ops["input"], ops["weight"], ops["recurrentWeight"], steps, hidden, o)
        res = ctx.compute(b.build({"h": h, "seq": seq}), feeds)
        out[f"{i}.h"], out[f"{i}.seq"] = res["h"], res["seq"]
    np.savez(sys.argv[3], **out)
""")


def run_in_subprocess(tmp_path, env, cases, key):
    """Runs the cases [(size, opts)] in a fresh process with `env` added
    (environment variables read at start-up) and checks them."""
    rng = rng_for("gru-sub", key)
    data, feeds, spec = [], {}, []
    for i, (size, opts) in enumerate(cases):
        steps, batch, input_size, hidden = size
        dirs = 2 if opts.get("direction") == "both" else 1
        d = random_net(rng, "float32", steps, batch, input_size, hidden, dirs, scale=0.15)
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
        check_net({"h": got[f"{i}.h"], "seq": got[f"{i}.seq"]}, data[i], "float32", steps,
                  hidden, dict(opts, returnSequence=True), OPTIONAL, f"gru {env} {size} {opts}")


SUBPROCESS_CASES = [((2, 8, 16, 210), {"resetAfter": True}),
                    ((2, 8, 16, 210), {"resetAfter": False}),
                    ((3, 7, 5, 20), {"resetAfter": False, "direction": "both"}),
                    ((4, 9, 6, 48), {"direction": "both"}),
                    ((3, 13, 5, 40), {"direction": "backward", "layout": "rzn"})]


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs a team of threads")
def test_fewer_threads_than_planned(tmp_path):
    """With OMP_THREAD_LIMIT=1 the team of threads that the kernel plans for
    hidden units split in slices gets one thread: it falls back to running
    every direction itself, unsliced (in a fresh process, as the limit is
    read at start-up)."""
    run_in_subprocess(tmp_path, {"OMP_THREAD_LIMIT": "1"}, SUBPROCESS_CASES, "threads")


@pytest.mark.parametrize("isa", ["avx2", "baseline"])
def test_other_isa(tmp_path, isa):
    """The AVX2 micro-kernel (6 x 16, for CPUs without AVX-512) and the
    cpu_product (BLIS) path (CPUs without AVX2 + FMA), chosen with WEBNN_CPU_ISA."""
    run_in_subprocess(tmp_path, {"WEBNN_CPU_ISA": isa}, SUBPROCESS_CASES, isa)


def test_output_descriptors(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float16", "shape": [7, 3, 4]})
    w = b.input("w", {"dataType": "float16", "shape": [2, 15, 4]})
    r = b.input("r", {"dataType": "float16", "shape": [2, 15, 5]})
    outs = b.gru(x, w, r, 7, 5, {"direction": "both", "returnSequence": True})
    assert [list(o.shape) for o in outs] == [[2, 3, 5], [7, 2, 3, 5]]
    assert all(o.data_type == "float16" for o in outs)
    outs = b.gru(x, w, r, 7, 5, direction="both")
    assert len(outs) == 1 and list(outs[0].shape) == [2, 3, 5]


# ---- validation (#api-mlgraphbuilder-gru) -----------------------------------------
def expect_type_error(build, *words):
    with pytest.raises(TypeError) as info:
        build()
    msg = str(info.value)
    for word in ("gru",) + words:
        assert word.lower() in msg.lower(), f"{msg!r} does not mention {word!r}"


def make(ctx, dt="float32", dirs=1, steps=2, batch=3, input_size=4, hidden=5, **shapes):
    b = webnn.MLGraphBuilder(ctx)
    default = {"input": [steps, batch, input_size], "weight": [dirs, 3 * hidden, input_size],
               "recurrentWeight": [dirs, 3 * hidden, hidden], "bias": [dirs, 3 * hidden],
               "recurrentBias": [dirs, 3 * hidden],
               "initialHiddenState": [dirs, batch, hidden]}
    default.update(shapes)
    types = {k: dt for k in default}
    for k, v in list(default.items()):
        if isinstance(v, tuple):
            types[k], default[k] = v
    ops = {k: b.input(k, {"dataType": types[k], "shape": s}) for k, s in default.items()}

    def call(steps=steps, hidden=hidden, **opts):
        o = {k: ops[k] for k in OPTIONAL}
        o.update(opts)
        return b.gru(ops["input"], ops["weight"], ops["recurrentWeight"], steps, hidden, o)

    return call


@pytest.mark.parametrize("name,shape,arg", [
    ("weight", [1, 15, 3], "weight"),
    ("weight", [1, 12, 4], "weight"),
    ("weight", [2, 15, 4], "weight"),           # two directions for "forward"
    ("recurrentWeight", [1, 15, 4], "recurrentWeight"),
    ("recurrentWeight", [2, 15, 5], "recurrentWeight"),
    ("bias", [1, 14], "options.bias"),
    ("bias", [2, 15], "options.bias"),
    ("recurrentBias", [1, 16], "options.recurrentBias"),
    ("initialHiddenState", [1, 2, 5], "options.initialHiddenState"),
    ("initialHiddenState", [2, 3, 5], "options.initialHiddenState"),
    ("initialHiddenState", [1, 3, 4], "options.initialHiddenState"),
])
def test_bad_shapes(ctx, name, shape, arg):
    call = make(ctx, **{name: shape})
    expect_type_error(lambda: call(label="net-7"), arg, "net-7")


def test_direction_both_needs_two(ctx):
    make(ctx, dirs=2)(direction="both")
    expect_type_error(lambda: make(ctx, dirs=1)(direction="both"), "weight")
    expect_type_error(lambda: make(ctx, dirs=2)(direction="backward"), "weight")


@pytest.mark.parametrize("name,shape,arg", [
    ("input", [2, 3], "input"),
    ("weight", [15, 4], "weight"),
    ("recurrentWeight", [1, 1, 15, 5], "recurrentWeight"),
    ("bias", [15], "options.bias"),
    ("recurrentBias", [1, 1, 15], "options.recurrentBias"),
    ("initialHiddenState", [3, 5], "options.initialHiddenState"),
])
def test_bad_ranks(ctx, name, shape, arg):
    call = make(ctx, **{name: shape})
    expect_type_error(call, arg, "rank")


@pytest.mark.parametrize("name,arg", [
    ("weight", "weight"), ("recurrentWeight", "recurrentWeight"), ("bias", "options.bias"),
    ("recurrentBias", "options.recurrentBias"),
    ("initialHiddenState", "options.initialHiddenState"),
])
def test_data_type_mismatch(ctx, name, arg):
    shapes = {"weight": [1, 15, 4], "recurrentWeight": [1, 15, 5], "bias": [1, 15],
              "recurrentBias": [1, 15], "initialHiddenState": [1, 3, 5]}
    call = make(ctx, **{name: ("float16", shapes[name])})
    expect_type_error(call, arg, "float16")


@pytest.mark.parametrize("dt", ["int32", "uint32", "int8"])
def test_unsupported_data_type(ctx, dt):
    expect_type_error(make(ctx, dt=dt), "input", dt)


def test_steps(ctx):
    call = make(ctx, steps=2)
    expect_type_error(lambda: call(steps=3), "steps")
    expect_type_error(lambda: call(steps=1), "steps")
    expect_type_error(lambda: call(steps=0), "steps")
    with pytest.raises(TypeError):
        call(steps=-1)


def test_hidden_size(ctx):
    call = make(ctx)
    for hs in (4, 6, 0):
        expect_type_error(lambda: call(hidden=hs), "weight")
    with pytest.raises(TypeError):
        call(hidden=2**32)


@pytest.mark.parametrize("activations", [[], ["tanh"], ["sigmoid", "tanh", "tanh"]])
def test_activations_size(ctx, activations):
    expect_type_error(lambda: make(ctx)(activations=activations), "activations")


@pytest.mark.parametrize("opts,word", [
    ({"activations": ["sigmoid", "softmax"]}, "activations"),
    ({"direction": "sideways"}, "direction"),
    ({"direction": "bidirectional"}, "direction"),
    ({"layout": "ifgo"}, "layout"),
    ({"returnSequence": "no"}, "returnSequence"),
])
def test_bad_option_values(ctx, opts, word):
    expect_type_error(lambda: make(ctx)(**opts), word)


@pytest.mark.parametrize("name", OPTIONAL)
def test_option_operand_of_another_builder(ctx, name):
    """"validating operand" for the operand-valued options too."""
    other = webnn.MLGraphBuilder(ctx)
    shape = {"bias": [1, 15], "recurrentBias": [1, 15], "initialHiddenState": [1, 3, 5]}[name]
    foreign = other.input("foreign", {"dataType": "float32", "shape": shape})
    expect_type_error(lambda: make(ctx)(**{name: foreign}), name, "another")


def test_other_operators_option_is_ignored(ctx):
    """An options dict member of another operator is not in this one's IDL
    dictionary: ignored as WebIDL says, with an UnknownOptionWarning naming
    it (the operator still builds)."""
    with pytest.warns(webnn.UnknownOptionWarning, match="'peepholeWeight'"):
        out = make(ctx)(**{"peepholeWeight": None})
    assert out is not None
