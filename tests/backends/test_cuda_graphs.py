"""CUDA graph replay in the GPU backend (kernels_cuda/cu_launch.c, "graph
replay"): a compiled graph's launches are captured on the second dispatch
with the bindings of the previous one and replayed with one cudaGraphLaunch
while the bindings stay the same.

Every test dispatches one graph many times through the tensor API, with its
inputs rewritten before each dispatch (so a stale replay, or one that read
the inputs at capture time, gives a wrong answer), switches to other tensors
(the bindings change: eager, then a re-capture that updates the executable
graph), then back; each result is checked against the CPU backend or NumPy.
They run on a GPU and on the CPU emulation (kernels_cuda/emu/, where a
capture records the emulated launches and a replay re-runs them); on the
emulation they also count the replays (wnn_emu_graph_launches), and its knob
wnn_emu_graph_fail makes each graph API call fail in turn: the dispatches
must then run eagerly with the same results.
"""
import ctypes
import os

import numpy as np
import pytest

import webnn
from webnn import _core

GPU = _core.device_available("gpu")
pytestmark = pytest.mark.skipif(not GPU, reason="no usable GPU context")
LIB = os.environ.get("WEBNN_CUDA_LIBRARY", "")
EMU = GPU and "emu" in os.path.basename(LIB)
RNG = np.random.default_rng(7)


def _emu():
    if not EMU:
        return None
    lib = ctypes.CDLL(LIB)  # the library the backend loaded: the same counters
    lib.wnn_emu_graph_launches.restype = ctypes.c_longlong
    lib.wnn_emu_graph_fail.argtypes = [ctypes.c_int]
    return lib


E = _emu()


def _dnn():
    if not EMU or "0" in (os.environ.get("WEBNN_CUDNN"), os.environ.get("WEBNN_CUDA_FUSION")):
        return None
    path = os.environ.get("WEBNN_CUDNN_LIBRARY") or os.path.join(os.path.dirname(LIB),
                                                                "libcudnn_emu.so")
    if not os.path.exists(path):
        return None
    d = ctypes.CDLL(path)
    d.cudnn_emu_set.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return d


DNN = _dnn()
# replay on unless the run turns it off for the whole process
REPLAY = os.environ.get("WEBNN_CUDA_GRAPHS") != "0"


def launches():
    return E.wnn_emu_graph_launches() if E else 0

# (gctx, cctx: tests/backends/conftest.py)


def _build(ctx, build, specs, consts):
    b = webnn.MLGraphBuilder(ctx)
    ops = {n: b.input(n, {"dataType": "float32", "shape": list(s)}) for n, s in specs.items()}
    for n, arr in consts.items():
        ops[n] = b.constant({"dataType": "float32", "shape": list(arr.shape)},
                            np.ascontiguousarray(arr, dtype=np.float32))
    return b.build(build(b, **ops))


def _tensors(ctx, specs, out_shapes):
    ins = {n: ctx.create_tensor({"dataType": "float32", "shape": list(s), "writable": True})
           for n, s in specs.items()}
    outs = {n: ctx.create_tensor({"dataType": "float32", "shape": list(s), "readable": True})
            for n, s in out_shapes.items()}
    return ins, outs


# the bindings of each dispatch (A, B: two sets of tensors) and the replays
# the policy gives: A1 eager, A2 captured + launched, A3.. launched; B1 eager
# (other bindings), B2 re-captured (the exec updated) + launched, B3 launched;
# back to A: A1 eager, A2 re-captured + launched, A3 launched
SEQUENCE = "AAAAA" + "BBB" + "AAA"
REPLAYS = 4 + 2 + 2


def exercise(gctx, cctx, build, specs, consts=None, rtol=1e-5, atol=1e-5,
             ctx_replays=True, sequence=SEQUENCE, scale=1.0):
    """Dispatches the graph in `sequence` with fresh inputs each time; checks
    every output against the CPU backend; returns the replays counted on the
    emulation."""
    consts = consts or {}
    g = _build(gctx, build, specs, consts)
    c = _build(cctx, build, specs, consts)
    first = {n: RNG.uniform(-scale, scale, s).astype(np.float32) for n, s in specs.items()}
    out_shapes = {n: v.shape for n, v in cctx.compute(c, first).items()}
    sets = {k: _tensors(gctx, specs, out_shapes) for k in "AB"}
    before = launches()
    for i, k in enumerate(sequence):
        ins, outs = sets[k]
        vals = {n: RNG.uniform(-scale, scale, s).astype(np.float32) + 0.25 * i
                for n, s in specs.items()}
        for n, v in vals.items():
            gctx.write_tensor(ins[n], v)
        gctx.dispatch(g, ins, outs)
        ref = cctx.compute(c, vals)
        for n, t in outs.items():
            got = gctx.read_tensor(t)
            np.testing.assert_allclose(got, ref[n], rtol=rtol, atol=atol,
                                       err_msg=f"dispatch {i} ({k}) output {n}")
    got_replays = launches() - before
    g.destroy()
    c.destroy()
    return got_replays


def expect(replays, n=REPLAYS):
    if E:
        assert replays == (n if REPLAY else 0), replays


def test_elementwise_chain(gctx, cctx):
    # the 3-op graph of the host-bound measurement (mul, add, relu)
    def build(b, x, y):
        return {"out": b.relu(b.add(b.mul(x, y), x))}
    expect(exercise(gctx, cctx, build, {"x": (1, 256), "y": (1, 256)}))


def test_matmul_cublas(gctx, cctx):
    def build(b, x, w):
        return {"out": b.matmul(x, w)}
    expect(exercise(gctx, cctx, build, {"x": (8, 32)}, {"w": RNG.standard_normal((32, 16))},
                    rtol=1e-4, atol=1e-4))


def test_matmul_broadcast_batches(gctx, cctx):
    # batch dimensions broadcast both ways: the pointer-array kernel, then a
    # batched cuBLAS call reading the arrays from scratch at replay
    def build(b, x, y):
        return {"out": b.matmul(x, y)}
    expect(exercise(gctx, cctx, build, {"x": (2, 1, 4, 8), "y": (1, 3, 8, 5)},
                    rtol=1e-4, atol=1e-4))


def test_gemm_with_c(gctx, cctx):
    def build(b, x, w, c):
        return {"out": b.gemm(x, w, {"c": c, "alpha": 0.5, "beta": 2.0})}
    expect(exercise(gctx, cctx, build, {"x": (4, 8), "c": (4, 6)},
                    {"w": RNG.standard_normal((8, 6))}, rtol=1e-4, atol=1e-4))


def test_fused_chain_matmul_add_relu(gctx, cctx):
    # a producer with its epilogue (add, activation): one chain step
    def build(b, x, w, r):
        return {"out": b.relu(b.add(b.matmul(x, w), r))}
    expect(exercise(gctx, cctx, build, {"x": (16, 24), "r": (16, 12)},
                    {"w": RNG.standard_normal((24, 12))}, rtol=1e-4, atol=1e-4))


def test_conv2d_bias_relu(gctx, cctx):
    # cuDNN (its fused call, or conv + the epilogue kernel), or the direct
    # kernel where cuDNN is off
    def build(b, x, w, bias, r):
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias})
        return {"out": b.relu(b.add(y, r))}
    expect(exercise(gctx, cctx, build, {"x": (1, 3, 8, 8), "r": (1, 4, 8, 8)},
                    {"w": RNG.standard_normal((4, 3, 3, 3)),
                     "bias": RNG.standard_normal((4,))}, rtol=1e-4, atol=1e-4))


def test_conv2d_nhwc_filter_relayout(gctx, cctx):
    # nhwc with an ohwi filter given as an input: relaid out into scratch at
    # every dispatch (the relayout is captured with the convolution)
    def build(b, x, w):
        return {"out": b.clamp(b.conv2d(x, w, {"inputLayout": "nhwc", "filterLayout": "ohwi"}),
                               {"minValue": 0.0, "maxValue": 6.0})}
    expect(exercise(gctx, cctx, build, {"x": (1, 6, 6, 3), "w": (5, 3, 3, 3)},
                    rtol=1e-4, atol=1e-4))


def test_conv_transpose(gctx, cctx):
    def build(b, x, w):
        return {"out": b.conv_transpose2d(x, w, {"strides": [2, 2]})}
    expect(exercise(gctx, cctx, build, {"x": (1, 2, 4, 4)},
                    {"w": RNG.standard_normal((2, 3, 3, 3))}, rtol=1e-4, atol=1e-4))


def test_multi_output_and_copies(gctx, cctx):
    # two outputs, one of them also named twice (the plan's output copy)
    def build(b, x, y):
        s = b.softmax(b.add(x, y), 1)
        m = b.reduce_mean(b.mul(x, y), {"axes": [1]})
        return {"s": s, "s2": s, "m": m, "t": b.transpose(x)}
    expect(exercise(gctx, cctx, build, {"x": (8, 40), "y": (8, 40)}))


def test_recurrent(gctx, cctx):
    # gru: cuBLAS products and gate kernels per step, all captured
    def build(b, x, w, r):
        return {"out": b.gru(x, w, r, 3, 4)[0]}
    expect(exercise(gctx, cctx, build, {"x": (3, 2, 5)},
                    {"w": RNG.uniform(-0.5, 0.5, (1, 12, 5)),
                     "r": RNG.uniform(-0.5, 0.5, (1, 12, 4))}, rtol=1e-4, atol=1e-5))


def test_graphs_off_switch(cctx, monkeypatch):
    monkeypatch.setenv("WEBNN_CUDA_GRAPHS", "0")
    ctx = webnn.ml.create_context(device_type="gpu")
    monkeypatch.delenv("WEBNN_CUDA_GRAPHS")
    try:
        def build(b, x, w):
            return {"out": b.relu(b.matmul(x, w))}
        n = exercise(ctx, cctx, build, {"x": (4, 8)}, {"w": RNG.standard_normal((8, 4))},
                     rtol=1e-4, atol=1e-4)
        if E:
            assert n == 0
    finally:
        ctx.destroy()


def test_compute_and_one_off_dispatches(gctx, cctx):
    # MLContext.compute: new tensors per call never replay a stale graph
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [3, 5]})
    g = b.build({"out": b.tanh(b.mul(x, x))})
    for k in range(4):
        xv = RNG.standard_normal((3, 5)).astype(np.float32) + k
        got = gctx.compute(g, {"x": xv})["out"]
        np.testing.assert_allclose(got, np.tanh(xv.astype(np.float64) ** 2),
                                   rtol=1e-5, atol=1e-6)
    g.destroy()


@pytest.mark.skipif(not E, reason="the emulation's knob")
@pytest.mark.parametrize("where", [1, 2, 3, 4],
                         ids=["begin", "end", "instantiate", "launch"])
def test_graph_api_failure_runs_eagerly(gctx, cctx, where):
    def build(b, x, w, r):
        return {"out": b.relu(b.add(b.matmul(x, w), r)), "x2": b.mul(x, x)}
    E.wnn_emu_graph_fail(where)
    try:
        n = exercise(gctx, cctx, build, {"x": (6, 10), "r": (6, 7)},
                     {"w": RNG.standard_normal((10, 7))}, rtol=1e-4, atol=1e-4)
    finally:
        E.wnn_emu_graph_fail(0)
    assert n == 0  # the first failure turned replay off for the graph


@pytest.mark.skipif(DNN is None, reason="the emulated cuDNN's knobs")
def test_fused_call_refused_while_captured(gctx, cctx):
    # cuDNN accepts the fused call at the eager first run, refuses it while
    # the second dispatch is captured: the backend's fallback (conv, then the
    # epilogue with the bias) is what the graph holds
    def build(b, x, w, bias):
        return {"out": b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias}))}
    specs = {"x": (1, 3, 6, 6)}
    consts = {"w": RNG.standard_normal((4, 3, 3, 3)), "bias": RNG.standard_normal((4,))}
    g = _build(gctx, build, specs, consts)
    c = _build(cctx, build, specs, consts)
    ins, outs = _tensors(gctx, specs, {"out": (1, 4, 6, 6)})
    before = launches()
    try:
        for i in range(5):
            if i == 1:
                DNN.cudnn_emu_set(b"reject_fused", 1)
            if i == 3:
                DNN.cudnn_emu_set(b"reject_fused", 0)
            xv = RNG.uniform(-1, 1, specs["x"]).astype(np.float32)
            gctx.write_tensor(ins["x"], xv)
            gctx.dispatch(g, ins, outs)
            np.testing.assert_allclose(gctx.read_tensor(outs["out"]),
                                       cctx.compute(c, {"x": xv})["out"],
                                       rtol=1e-4, atol=1e-4, err_msg=f"dispatch {i}")
    finally:
        DNN.cudnn_emu_set(b"reject_fused", 0)
    if REPLAY:
        assert launches() - before == 4
    g.destroy()
    c.destroy()


def test_many_replays_without_reads(gctx):
    # dispatches queued back to back (the host-bound case): first through
    # two tensors swapped, each dispatch reading the previous one's output
    # (alternating bindings A, B, A, B: never captured), then one set kept
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 256]})
    g = b.build({"y": b.add(b.mul(x, b.constant({"dataType": "float32", "shape": [1]},
                                                np.array([0.5], np.float32))),
                            b.constant({"dataType": "float32", "shape": [1]},
                                       np.array([1.0], np.float32)))})
    desc = {"dataType": "float32", "shape": [1, 256], "readable": True, "writable": True}
    t0, t1, t2 = (gctx.create_tensor(desc) for _ in range(3))
    x0 = RNG.standard_normal((1, 256)).astype(np.float32)
    gctx.write_tensor(t0, x0)
    ref = x0.astype(np.float64)
    a, c = t0, t1
    for _ in range(6):  # ping-pong
        gctx.dispatch(g, {"x": a}, {"y": c})
        ref = ref * 0.5 + 1.0
        a, c = c, a
    np.testing.assert_allclose(gctx.read_tensor(a), ref, rtol=1e-6)
    # the same bindings 50 times, the input rewritten before each (no read
    # in between): the last replay must see the last write
    before = launches()
    for k in range(50):
        gctx.write_tensor(t2, x0 + k)
        gctx.dispatch(g, {"x": t2}, {"y": t1})
    np.testing.assert_allclose(gctx.read_tensor(t1), (x0 + 49) * 0.5 + 1.0, rtol=1e-6)
    if E and REPLAY:
        assert launches() - before == 49
    g.destroy()


_REPLAY_SCRIPT = r"""
import numpy as np, webnn
ctx = webnn.ml.create_context(device_type="gpu")
rng = np.random.default_rng(1)
def graph(build, specs, consts):
    b = webnn.MLGraphBuilder(ctx)
    ops = {n: b.input(n, {"dataType": "float32", "shape": list(s)}) for n, s in specs.items()}
    for n, a in consts.items():
        ops[n] = b.constant({"dataType": "float32", "shape": list(a.shape)}, a)
    return b.build({"out": build(b, **ops)})
W = lambda *s: rng.standard_normal(s).astype(np.float32)
cases = [
    (lambda b, x, y: b.relu(b.add(b.mul(x, y), x)), {"x": (1, 256), "y": (1, 256)}, {}),
    (lambda b, x, w: b.relu(b.matmul(x, w)), {"x": (8, 32)}, {"w": W(32, 16)}),
    (lambda b, x, w, c: b.gemm(x, w, {"c": c}), {"x": (8, 32)}, {"w": W(32, 16), "c": W(16)}),
    (lambda b, x, w, bias: b.clamp(b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias}),
                                   {"minValue": 0.0, "maxValue": 6.0}),
     {"x": (1, 8, 16, 16)}, {"w": W(16, 8, 3, 3), "bias": W(16)}),
    (lambda b, x, w: b.conv_transpose2d(x, w), {"x": (1, 4, 5, 5)}, {"w": W(4, 3, 3, 3)}),
]
for build, specs, consts in cases:
    g = graph(build, specs, consts)
    ins = {n: ctx.create_tensor({"dataType": "float32", "shape": list(s), "writable": True})
           for n, s in specs.items()}
    y = ctx.compute(g, {n: np.ones(s, np.float32) for n, s in specs.items()})["out"]
    out = {"out": ctx.create_tensor({"dataType": "float32", "shape": list(y.shape),
                                     "readable": True})}
    for _ in range(4):
        ctx.dispatch(g, ins, out)
    ctx.read_tensor(out["out"])
print("ran", len(cases))
"""


@pytest.mark.skipif(not REPLAY, reason="WEBNN_CUDA_GRAPHS=0")
def test_replay_is_not_turned_off(tmp_path):
    """With WEBNN_CUDA_GRAPHS_VERBOSE=1 the backend says on stderr when a
    capture, instantiation or launch failed (the dispatch then ran eagerly,
    with the same results, so only this shows it): none may fail for an
    element-wise chain, cuBLAS products and cuDNN convolutions."""
    import subprocess
    import sys
    env = dict(os.environ, WEBNN_CUDA_GRAPHS_VERBOSE="1")
    r = subprocess.run([sys.executable, "-c", _REPLAY_SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ran 5" in r.stdout
    assert "graph replay off" not in r.stderr, r.stderr[-3000:]


def test_build_while_dispatches_are_captured(gctx, cctx):
    """Graphs built (compile uploads their constants on the context's stream)
    while the timeline thread captures and replays another graph's
    dispatches: the backend keeps the uploads out of the capture (cap_mu), so
    both the new graphs and the replays compute the right values."""
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [32, 32]})
    w0 = RNG.standard_normal((32, 32)).astype(np.float32)
    g = b.build({"y": b.relu(b.matmul(x, b.constant({"dataType": "float32", "shape": [32, 32]},
                                                      w0)))})
    desc = {"dataType": "float32", "shape": [32, 32]}
    tx = gctx.create_tensor({**desc, "writable": True})
    ty = gctx.create_tensor({**desc, "readable": True})
    for k in range(12):
        xv = RNG.standard_normal((32, 32)).astype(np.float32)
        gctx.write_tensor(tx, xv)
        for _ in range(3):
            gctx.dispatch(g, {"x": tx}, {"y": ty})
        # built and run while those dispatches may still be in flight
        cv = RNG.standard_normal((16, 16)).astype(np.float32)
        b2 = webnn.MLGraphBuilder(gctx)
        z = b2.input("z", {"dataType": "float32", "shape": [16, 16]})
        g2 = b2.build({"o": b2.add(z, b2.constant({"dataType": "float32", "shape": [16, 16]},
                                                  cv))})
        zv = RNG.standard_normal((16, 16)).astype(np.float32)
        np.testing.assert_allclose(gctx.compute(g2, {"z": zv})["o"], zv + cv, rtol=1e-6)
        g2.destroy()
        ref = np.maximum(xv.astype(np.float64) @ w0, 0)
        np.testing.assert_allclose(gctx.read_tensor(ty), ref, rtol=1e-4, atol=1e-4)
    g.destroy()
