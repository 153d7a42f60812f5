"""Whole graphs against the peers a user would pick instead: ONNX Runtime
(all graph optimisations, I/O binding) and PyTorch eager, in one process, on
the same weights and inputs, outputs compared before anything is timed.

Rows (issue 12): MobileNetV2 backbone at batch 1 and 8; a transformer MLP
block (layerNormalization -> matmul 768x3072 + bias -> gelu -> matmul
3072x768 + bias on [8,128,768]); add, relu and sigmoid of 16 Mi float32;
add of two [4] tensors (per-dispatch cost).  webnn's figure is the spec's
path: dispatch() + read_tensor() into a preallocated array, inputs written
once (as ORT's inputs are bound once); ORT's is run_with_iobinding() with
the inputs and a preallocated output bound; PyTorch's a call under
inference_mode with out= where the operator has it.  Two more rows measure
ctx.compute() (NumPy in, NumPy out) against dispatch + read and against
ORT's session.run() for the tiny graph.

Each figure: R runs (default 5), each the mean time of K calls after
warm-up (K per row, about 100 ms of calls or more: MobileNetV2 batch 1 30
calls, batch 8 4; with 3 calls, a run of batch 1 lasted 10 ms and one
preempted call moved its mean by half), the runtimes' runs interleaved (run 1 of webnn, ORT, PyTorch, then
run 2 ...); the table shows min / median / max over the runs in ms and the
ratio of the medians (peer / webnn: above 1 means webnn is faster).  The
load average before and after is printed: figures taken while another
process ran on one of the 2 cores are not comparable.

  pip install .[bench]       # onnxruntime, onnx, torch
  python benchmarks/bench_peers.py [--runs 5] [--only mobilenet,mlp,...] [--threads 2]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import webnn  # noqa: E402
from zoo import mobilenetv2  # noqa: E402

MI16 = 16 * 1024 * 1024


def timed_interleaved(fns, k, runs, warmup=2):
    """R runs of K calls of each function after warm-up, the runtimes' runs
    interleaved (run i of each, back to back, then run i + 1): a change in
    the machine's speed during a row (these 2-vCPU machines switch between
    modes for minutes at a time) then shows in every runtime's figures
    instead of biasing the ratio.  Returns one list of run times (ms) per
    function."""
    out = [[] for _ in fns]
    for fn in fns:
        for _ in range(warmup):
            fn()
    for _ in range(runs):
        for i, fn in enumerate(fns):
            # the previous runtime's spinning worker threads (ORT's,
            # PyTorch's, OpenBLAS's) must not share the 2 cores with this
            # one: a short idle pause lets them go to sleep first
            time.sleep(0.2)
            # and each run after 50 ms of its own calls: a short graph's
            # first thousands of dispatches after an idle pause ran at half
            # speed (threads and vCPUs waking up)
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.05:
                fn()
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            out[i].append((time.perf_counter() - t0) / k * 1e3)
    return out


def fmt(ts):
    if not ts:
        return "-"
    if max(ts) < 0.1:  # the microsecond rows: in us, so that the digits show
        return (f"{min(ts) * 1e3:.2f} / {statistics.median(ts) * 1e3:.2f} / "
                f"{max(ts) * 1e3:.2f} us")
    return f"{min(ts):.3f} / {statistics.median(ts):.3f} / {max(ts):.3f}"


# ---- webnn ------------------------------------------------------------------
class WebnnRun:
    """dispatch + read_tensor of a built graph, inputs written once."""

    def __init__(self, ctx, graph, inputs):
        self.ctx, self.graph = ctx, graph
        self.tin = {}
        for name, a in inputs.items():
            t = ctx.create_tensor({"dataType": str(a.dtype), "shape": list(a.shape), "writable": True})
            ctx.write_tensor(t, a)
            self.tin[name] = t
        self.tout, self.out = {}, {}
        for name, d in graph.output_descriptors.items():
            dt = d.get("dataType", d.get("data_type"))
            self.tout[name] = ctx.create_tensor({"dataType": dt, "shape": list(d["shape"]), "readable": True})
            self.out[name] = np.empty(d["shape"], dt)
        self.inputs = inputs

    def __call__(self):
        self.ctx.dispatch(self.graph, self.tin, self.tout)
        for name, t in self.tout.items():
            self.ctx.read_tensor(t, self.out[name])
        return self.out

    def compute(self):
        return self.ctx.compute(self.graph, self.inputs)


# ---- ONNX Runtime -------------------------------------------------------------
class OrtRun:
    def __init__(self, model, inputs, threads):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        self.inputs = inputs
        self.bind = self.sess.io_binding()
        for name, a in inputs.items():
            self.bind.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(a))
        self.out = {}
        for o in self.sess.get_outputs():
            shape = [int(d) for d in o.shape]
            self.out[o.name] = np.empty(shape, np.float32)
            self.bind.bind_ortvalue_output(o.name, ort.OrtValue.ortvalue_from_numpy(self.out[o.name]))

    def __call__(self):
        self.sess.run_with_iobinding(self.bind)
        return self.out

    def run(self):
        return self.sess.run(None, self.inputs)


# ---- the rows -------------------------------------------------------------------
def row_mobilenet(ctx, batch):
    from onnx import helper  # noqa: F401 (needs onnx)
    w = mobilenetv2.load_weights()
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"f": mobilenetv2.build(b, w, batch=batch)})
    x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
    model = mobilenetv2.onnx_model(w, batch)

    def torch_fn(torch):
        fwd = mobilenetv2.torch_forward(torch, w)
        xt = torch.from_numpy(x).contiguous(memory_format=torch.channels_last)
        return lambda: fwd(xt)
    return dict(name=f"MobileNetV2 batch {batch}", graph=g, inputs={"input": x}, onnx=model,
                torch=torch_fn, k=30 if batch == 1 else 4, tol=1e-3)


def row_mlp(ctx):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 128, 768)).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(768)).astype(np.float32)
    beta = (0.1 * rng.standard_normal(768)).astype(np.float32)
    w1 = (rng.standard_normal((768, 3072)) / np.sqrt(768)).astype(np.float32)
    b1 = (0.1 * rng.standard_normal(3072)).astype(np.float32)
    w2 = (rng.standard_normal((3072, 768)) / np.sqrt(3072)).astype(np.float32)
    b2 = (0.1 * rng.standard_normal(768)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", {"dataType": "float32", "shape": [8, 128, 768]})
    h = b.layer_normalization(xi, axes=[2], scale=b.constant(gamma), bias=b.constant(beta), epsilon=1e-5)
    h = b.gelu(b.add(b.matmul(h, b.constant(w1)), b.constant(b1)))
    y = b.add(b.matmul(h, b.constant(w2)), b.constant(b2))
    g = b.build({"y": y})
    inits = [numpy_helper.from_array(a, n) for a, n in
             ((gamma, "gamma"), (beta, "beta"), (w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))]
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
             helper.make_node("MatMul", ["ln", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["a1"]),
             helper.make_node("Gelu", ["a1"], ["g1"]),
             helper.make_node("MatMul", ["g1", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128, 768])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 128, 768])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    onnx.checker.check_model(model)

    def torch_fn(torch):
        F = torch.nn.functional
        t = {k: torch.from_numpy(v) for k, v in dict(x=x, gamma=gamma, beta=beta, w1=w1, b1=b1,
                                                      w2=w2, b2=b2).items()}
        return lambda: torch.addmm(t["b2"], F.gelu(torch.addmm(
            t["b1"], F.layer_norm(t["x"], (768,), t["gamma"], t["beta"], 1e-5).view(-1, 768),
            t["w1"])), t["w2"])
    return dict(name="layerNorm+MLP [8,128,768]", graph=g, inputs={"x": x}, onnx=model,
                torch=torch_fn, k=3, tol=1e-3)


def _single(ctx, name, op, shape, k):
    import onnx
    from onnx import TensorProto, helper
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape).astype(np.float32)
    c = rng.standard_normal(shape).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("a", {"dataType": "float32", "shape": list(shape)})
    ins = {"a": a}
    if op == "Add":
        y = b.input("b", {"dataType": "float32", "shape": list(shape)})
        ins["b"] = c
        out = b.add(x, y)
    else:
        out = getattr(b, op.lower())(x)
    g = b.build({"y": out})
    node = helper.make_node(op, list(ins), ["y"])
    graph = helper.make_graph([node], op,
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(shape)) for n in ins],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)

    def torch_fn(torch):
        ta, tc = torch.from_numpy(a), torch.from_numpy(c)
        o = torch.empty(shape)
        f = {"Add": lambda: torch.add(ta, tc, out=o), "Relu": lambda: torch.relu(ta),
             "Sigmoid": lambda: torch.sigmoid(ta, out=o)}[op]
        return f
    return dict(name=name, graph=g, inputs=ins, onnx=model, torch=torch_fn, k=k, tol=1e-5)


ROWS = {
    "mobilenet": lambda ctx: [row_mobilenet(ctx, 1), row_mobilenet(ctx, 8)],
    "mlp": lambda ctx: [row_mlp(ctx)],
    "add": lambda ctx: [_single(ctx, "add 16Mi f32", "Add", (MI16,), 5)],
    "relu": lambda ctx: [_single(ctx, "relu 16Mi f32", "Relu", (MI16,), 5)],
    "sigmoid": lambda ctx: [_single(ctx, "sigmoid 16Mi f32", "Sigmoid", (MI16,), 5)],
    "tiny": lambda ctx: [_single(ctx, "add [4] (dispatch cost)", "Add", (4,), 2000)],
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default=",".join(ROWS))
    ap.add_argument("--no-torch", action="store_true")
    a = ap.parse_args()
    torch = None
    if not a.no_torch:
        try:
            import torch
            torch.set_num_threads(a.threads)
        except ImportError:
            pass
    import onnxruntime as ort
    ctx = webnn.ml.create_context(device_type="cpu")
    load0 = os.getloadavg()
    print(f"webnn {getattr(webnn, '__version__', '?')}, onnxruntime {ort.__version__}, torch "
          f"{torch.__version__ if torch else 'not installed'}; threads {a.threads}; "
          f"load average before: {load0[0]:.2f} {load0[1]:.2f}")
    hdr = (f"{'work':<28} {'webnn ms min/med/max':>28} {'ORT ms min/med/max':>28} "
           f"{'torch ms min/med/max':>28} {'ORT/webnn':>9} {'torch/webnn':>11}")
    print(hdr)
    print("-" * len(hdr))
    compute_rows = []
    for key in a.only.split(","):
        for r in ROWS[key](ctx):
            w = WebnnRun(ctx, r["graph"], r["inputs"])
            o = OrtRun(r["onnx"], r["inputs"], a.threads)
            got, ref = w(), o()
            for name in ref:
                scale = max(1.0, float(np.abs(ref[name]).max()))
                err = float(np.abs(got[name] - ref[name]).max())
                assert err <= r["tol"] * scale, f"{r['name']}: webnn and ORT differ by {err}"
            tt = []
            if torch is not None:
                f = r["torch"](torch)
                with torch.inference_mode():
                    tw, to, tt = timed_interleaved([w, o, f], r["k"], a.runs)
            else:
                tw, to = timed_interleaved([w, o], r["k"], a.runs)
            mw = statistics.median(tw)
            ratio_t = f"{statistics.median(tt) / mw:11.2f}" if tt else f"{'-':>11}"
            print(f"{r['name']:<28} {fmt(tw):>28} {fmt(to):>28} {fmt(tt):>28} "
                  f"{statistics.median(to) / mw:9.2f} {ratio_t}", flush=True)
            if key in ("add", "tiny"):
                tc, tr = timed_interleaved([w.compute, o.run], r["k"], a.runs)
                compute_rows.append((r["name"], tc, tw, tr))
    if compute_rows:
        print()
        print(f"{'compute() (NumPy in/out)':<28} {'compute ms min/med/max':>28} "
              f"{'dispatch+read ms':>28} {'ORT run() ms':>28} {'cmp/disp':>9} {'run/cmp':>11}")
        for name, tc, tw, tr in compute_rows:
            mc = statistics.median(tc)
            print(f"{name:<28} {fmt(tc):>28} {fmt(tw):>28} {fmt(tr):>28} "
                  f"{mc / statistics.median(tw):9.2f} {statistics.median(tr) / mc:11.2f}")
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f} (2 cores: above ~2.2 the figures "
          f"are not comparable)")


if __name__ == "__main__":
    main()
