"""Speed of the recurrent networks (lstm, gru) on the CPU, against PyTorch.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_recurrent.py

Sizes: sequence 64, batch 8, input 256, hidden 256, float32; one direction
("forward") and both ("both").  The webnn graph has the input sequence as a
graph input and the weights and biases as constants, returnSequence true (so
it produces what torch.nn.LSTM / torch.nn.GRU produce: the whole output
sequence and the last hidden (and cell) state).  The graph's layouts are
PyTorch's gate orders: "ifgo" for the LSTM and "rzn" for the GRU, whose
n gate PyTorch computes the resetAfter way.

webnn: the spec's way: the input tensor is created and written once; every
timed call is ``ctx.dispatch(graph, ...)`` followed by ``ctx.read_tensor``
of every output into preallocated NumPy arrays (read_tensor waits for the
dispatch, so the time covers the whole queued execution plus the copies).

PyTorch (if ``import torch`` works): ``torch.nn.LSTM`` / ``torch.nn.GRU``
with the same weights, ``torch.set_num_threads(2)``, under
``torch.no_grad()``, in the same process.  Before timing, the outputs of
both are compared.

Method (as benchmarks/bench_core.py): every callable is warmed up, then
timed in samples of at least 0.1 s each; webnn and PyTorch alternate sample
by sample (order reversed every other sample), the table shows medians, and
the ratio is the median of the paired per-sample ratios torch / webnn:
> 1 means webnn is faster; the target is >= 1 (not slower).
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place

import numpy as np  # noqa: E402

import webnn  # noqa: E402  (before torch: it sets the OpenMP spin count)

try:
    import torch  # noqa: E402
except Exception:  # noqa: BLE001 -- any import failure means "no torch"
    torch = None

STEPS, BATCH, INPUT, HIDDEN = 64, 8, 256, 256
SAMPLES = 9
SAMPLE_SECONDS = 0.1
WARMUP = 3


def measure(fns, samples=SAMPLES, target=SAMPLE_SECONDS, warmup=WARMUP):
    """{name: [seconds per call, one per sample]}; callables alternate."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    per_call = {name: [] for name in fns}
    names = list(fns)
    clock = time.perf_counter
    for s in range(samples):
        for name in (names if s % 2 == 0 else names[::-1]):
            fn = fns[name]
            count = 0
            t0 = clock()
            while True:
                fn()
                count += 1
                elapsed = clock() - t0
                if elapsed >= target:
                    break
            per_call[name].append(elapsed / count)
    return per_call


def f32(shape, **flags):
    d = {"dataType": "float32", "shape": list(shape)}
    d.update(flags)
    return d


def make_weights(rng, kind, dirs):
    gates = 4 if kind == "lstm" else 3
    s = 1.0 / np.sqrt(HIDDEN)
    u = lambda *shape: rng.uniform(-s, s, size=shape).astype(np.float32)  # noqa: E731
    return {"weight": u(dirs, gates * HIDDEN, INPUT),
            "recurrentWeight": u(dirs, gates * HIDDEN, HIDDEN),
            "bias": u(dirs, gates * HIDDEN),
            "recurrentBias": u(dirs, gates * HIDDEN)}


def webnn_runner(ctx, kind, direction, w, x):
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", f32(x.shape))
    c = {k: b.constant(f32(v.shape), v) for k, v in w.items()}
    opts = {"bias": c["bias"], "recurrentBias": c["recurrentBias"],
            "returnSequence": True, "direction": direction}
    if kind == "lstm":
        opts["layout"] = "ifgo"
        outs = b.lstm(xi, c["weight"], c["recurrentWeight"], STEPS, HIDDEN, opts)
        names = ["h", "c", "seq"]
    else:
        opts["layout"] = "rzn"
        opts["resetAfter"] = True
        outs = b.gru(xi, c["weight"], c["recurrentWeight"], STEPS, HIDDEN, opts)
        names = ["h", "seq"]
    g = b.build(dict(zip(names, outs)))
    tx = ctx.create_tensor(f32(x.shape, writable=True))
    ctx.write_tensor(tx, x)
    touts, arrays = {}, {}
    for name, o in zip(names, outs):
        touts[name] = ctx.create_tensor(f32(o.shape, readable=True))
        arrays[name] = np.empty(o.shape, np.float32)

    def run():
        ctx.dispatch(g, {"x": tx}, touts)
        for name, t in touts.items():
            ctx.read_tensor(t, arrays[name])

    run.keep = (g, tx, touts)
    return run, arrays


def torch_runner(kind, direction, w, x):
    dirs = 2 if direction == "both" else 1
    cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    m = cls(INPUT, HIDDEN, num_layers=1, bias=True, batch_first=False,
            bidirectional=dirs == 2)
    with torch.no_grad():
        for d in range(dirs):
            sfx = "_reverse" if d == 1 else ""
            getattr(m, "weight_ih_l0" + sfx).copy_(torch.from_numpy(w["weight"][d]))
            getattr(m, "weight_hh_l0" + sfx).copy_(torch.from_numpy(w["recurrentWeight"][d]))
            getattr(m, "bias_ih_l0" + sfx).copy_(torch.from_numpy(w["bias"][d]))
            getattr(m, "bias_hh_l0" + sfx).copy_(torch.from_numpy(w["recurrentBias"][d]))
    m.eval()
    tx = torch.from_numpy(x)
    result = {}

    def run():
        with torch.no_grad():
            result["out"] = m(tx)

    return run, result


def torch_outputs(kind, result):
    out = result["out"]
    seq = out[0].numpy()  # [T, B, D * H]
    seq = seq.reshape(STEPS, BATCH, -1, HIDDEN).transpose(0, 2, 1, 3)
    if kind == "lstm":
        h, c = out[1]
        return {"h": h.numpy(), "c": c.numpy(), "seq": seq}
    return {"h": out[1].numpy(), "seq": seq}


def main():
    ctx = webnn.ml.create_context()
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(STEPS, BATCH, INPUT)).astype(np.float32)
    if torch is not None:
        torch.set_num_threads(2)
    print(f"lstm / gru, float32: steps {STEPS}, batch {BATCH}, input {INPUT}, "
          f"hidden {HIDDEN}; {os.cpu_count()} CPUs; torch: "
          f"{torch.__version__ if torch is not None else 'not available'}")
    print("webnn: dispatch + read_tensor of every output into preallocated "
          "arrays; median ms per call")
    header = f"{'network':<6} {'direction':<10} {'webnn ms':>9}"
    if torch is not None:
        header += f" {'torch ms':>9} {'torch/webnn':>12}"
    print(header)
    for kind in ("lstm", "gru"):
        for direction in ("forward", "both"):
            dirs = 2 if direction == "both" else 1
            w = make_weights(rng, kind, dirs)
            wrun, warr = webnn_runner(ctx, kind, direction, w, x)
            fns = {"webnn": wrun}
            if torch is not None:
                trun, tres = torch_runner(kind, direction, w, x)
                wrun()
                trun()
                ref = torch_outputs(kind, tres)
                for name, arr in warr.items():
                    err = float(np.max(np.abs(arr - ref[name])))
                    if err > 1e-4:
                        sys.exit(f"{kind} {direction}: output {name} differs "
                                 f"from torch by {err}")
                fns["torch"] = trun
            t = measure(fns)
            line = f"{kind:<6} {direction:<10} {statistics.median(t['webnn']) * 1e3:9.3f}"
            if torch is not None:
                ratio = statistics.median(a / b for a, b in zip(t["torch"], t["webnn"]))
                line += (f" {statistics.median(t['torch']) * 1e3:9.3f}"
                         f" {ratio:12.2f}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
