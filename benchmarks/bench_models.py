"""MobileNetV2 (the backbone of examples/data/mobilenetv2) and LeNet latency:
webnn on the default CPU context against the same network, the same weights
and the same input in PyTorch on the CPU, in the same process.

webnn times are dispatch + read_tensor into a preallocated array (the spec's
path; read_tensor waits for the work), PyTorch's a forward pass under
torch.inference_mode() with torch.set_num_threads(number of cores).  Each
figure is the median of several runs after warm-up; the outputs of the two
are compared before timing.  Run: .venv/bin/python benchmarks/bench_models.py"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import webnn  # noqa: E402
from zoo import lenet, mobilenetv2  # noqa: E402


def median_ms(fn, warmup=3, repeats=15):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def webnn_runner(ctx, graph, in_name, x, out_name, out_shape):
    tx = ctx.create_tensor({"dataType": "float32", "shape": list(x.shape), "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": list(out_shape), "readable": True})
    out = np.empty(out_shape, np.float32)
    ctx.write_tensor(tx, x)

    def run():
        ctx.dispatch(graph, {in_name: tx}, {out_name: ty})
        ctx.read_tensor(ty, out)
        return out
    return run


def main():
    try:
        import torch
    except ImportError:
        torch = None
    ctx = webnn.ml.create_context(device_type="cpu")
    threads = os.cpu_count() or 1
    rows = []
    mw = mobilenetv2.load_weights()
    for batch in (1, 8):
        b = webnn.MLGraphBuilder(ctx)
        g = b.build({"f": mobilenetv2.build(b, mw, batch=batch)})
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        run = webnn_runner(ctx, g, "input", x, "f", (batch, 1280))
        t_w = median_ms(run, repeats=15 if batch == 1 else 7)
        t_t = None
        if torch is not None:
            torch.set_num_threads(threads)
            fwd = mobilenetv2.torch_forward(torch, mw)
            xt = torch.from_numpy(x)
            with torch.inference_mode():
                ref = fwd(xt).numpy()
                err = float(np.max(np.abs(ref - run())))
                assert err < 1e-3 * max(1, np.abs(ref).max()), err
                t_t = median_ms(lambda: fwd(xt), repeats=15 if batch == 1 else 7)
        rows.append((f"MobileNetV2 batch {batch}", 0.2995 * 2 * batch, t_w, t_t))
    lw = lenet.load_weights()
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"p": lenet.build(b, lw, batch=1)[1]})
    run = webnn_runner(ctx, g, "input", lenet.load_digit(3), "p", (1, 10))
    rows.append(("LeNet batch 1", 0.0023 * 2, median_ms(run, repeats=50), None))

    print(f"threads: webnn {threads} (webnn pool + BLIS), torch "
          f"{threads if torch else '-'}; torch {'%s' % torch.__version__ if torch else 'not installed'}")
    print(f"{'model':<22} {'webnn ms':>9} {'GFLOP/s':>8} {'torch ms':>9} {'torch/webnn':>12}")
    for name, gflop, tw, tt in rows:
        ratio = f"{tt / tw:12.2f}" if tt else f"{'-':>12}"
        print(f"{name:<22} {tw:9.2f} {gflop / tw * 1e3:8.1f} "
              f"{(f'{tt:9.2f}' if tt else f'{chr(45):>9}')} {ratio}")
    print("torch/webnn > 1 means webnn is faster (target: not slower).")


if __name__ == "__main__":
    main()
