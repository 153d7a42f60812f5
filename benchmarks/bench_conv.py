"""Speed of webnn's conv2d on the CPU, against PyTorch when it is installed.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_conv.py

Cases (float32, bias included, filters constant as in a real model):

    3x3 64->64 at 56x56, padding 1     (ResNet-style general convolution)
    1x1 256->64 at 56x56               (pointwise: a plain matrix product)
    depthwise 3x3 144 ch at 56x56, padding 1 (MobileNetV2)

each at batch 1 and 8, in nchw (filter oihw) and nhwc (filter ohwi; the
depthwise filter ihwo, [1, 3, 3, 144], as TFLite stores it).

webnn runs the spec's way: the input tensor is created and written once;
every timed call is ``ctx.dispatch(graph, ...)`` then
``ctx.read_tensor(out, array)`` into a preallocated array (read_tensor waits
for the dispatch, so the time covers the execution and the copy out).
PyTorch: ``torch.nn.functional.conv2d`` with ``torch.set_num_threads(2)``
under ``torch.no_grad()``, nchw contiguous or channels_last for nhwc (torch
returns a new tensor each call).  Results are checked against each other (or
against NumPy when torch is missing) before timing.

Each callable is warmed up, then timed in samples of at least 0.1 s; webnn
and torch alternate sample by sample.  Rates are 2 * MACs / median time in
GFLOP/s; the ratio is the median of the paired per-sample ratios
(webnn / torch > 1 means webnn is faster).

Caveat: with 2 threads on 2 cores, any other busy process makes both sides
wait for descheduled threads; the load average is printed before and after.
On a loaded machine the medians vary several-fold from run to run, and only
runs on a quiet machine compare the implementations.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place

import numpy as np  # noqa: E402

import webnn  # noqa: E402

try:
    import torch  # noqa: E402
    torch.set_num_threads(2)
except ImportError:  # pragma: no cover - depends on the environment
    torch = None

SAMPLES = 7
SAMPLE_SECONDS = 0.1
WARMUP = 3

# name, C, O, K, groups, H (=W), padding
CASES = [
    ("3x3 64->64", 64, 64, 3, 1, 56, 1),
    ("1x1 256->64", 256, 64, 1, 1, 56, 0),
    ("dw 3x3 144", 144, 144, 3, 144, 56, 1),
]
BATCHES = (1, 8)
LAYOUTS = ("nchw", "nhwc")


def measure(fns):
    for fn in fns.values():
        for _ in range(WARMUP):
            fn()
    per_call = {name: [] for name in fns}
    names = list(fns)
    for s in range(SAMPLES):
        for name in (names if s % 2 == 0 else names[::-1]):
            fn = fns[name]
            count = 0
            t0 = time.perf_counter()
            while True:
                fn()
                count += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= SAMPLE_SECONDS:
                    break
            per_call[name].append(elapsed / count)
    return per_call


def numpy_conv(x, w, b, pad, groups):
    """float64 NumPy reference, NCHW / OIHW, stride 1."""
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    o, cg, k, _ = w.shape
    n, c, h, wd = x.shape
    oh, ow = h - k + 1, wd - k + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        for i in range(k):
            for j in range(k):
                patch = x[:, g * cg:(g + 1) * cg, i:i + oh, j:j + ow]
                out[:, g * og:(g + 1) * og] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * og:(g + 1) * og, :, i, j].astype(np.float64))
    return out + b.astype(np.float64)[None, :, None, None]


def webnn_case(ctx, x_nchw, w_oihw, bias, pad, groups, layout):
    builder = webnn.MLGraphBuilder(ctx)
    if layout == "nchw":
        x = x_nchw
        w = w_oihw
        flayout = "oihw"
    else:
        x = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1))
        if groups > 1:
            w = np.ascontiguousarray(w_oihw.transpose(1, 2, 3, 0))  # ihwo
            flayout = "ihwo"
        else:
            w = np.ascontiguousarray(w_oihw.transpose(0, 2, 3, 1))  # ohwi
            flayout = "ohwi"
    xi = builder.input("x", {"dataType": "float32", "shape": list(x.shape)})
    wi = builder.constant({"dataType": "float32", "shape": list(w.shape)}, w)
    bi = builder.constant({"dataType": "float32", "shape": list(bias.shape)}, bias)
    y = builder.conv2d(xi, wi, padding=[pad] * 4, groups=groups, input_layout=layout,
                       filter_layout=flayout, bias=bi)
    graph = builder.build({"y": y})
    tx = ctx.create_tensor({"dataType": "float32", "shape": list(x.shape), "writable": True})
    ctx.write_tensor(tx, x)
    ty = ctx.create_tensor({"dataType": "float32", "shape": list(y.shape), "readable": True})
    out = np.empty(y.shape, np.float32)

    def run():
        ctx.dispatch(graph, {"x": tx}, {"y": ty})
        ctx.read_tensor(ty, out)

    run.keep = (graph, tx, ty)
    if layout == "nhwc":
        return run, lambda: out.transpose(0, 3, 1, 2)
    return run, lambda: out


def torch_case(x_nchw, w_oihw, bias, pad, groups, layout):
    x = torch.from_numpy(x_nchw)
    w = torch.from_numpy(w_oihw)
    b = torch.from_numpy(bias)
    if layout == "nhwc":
        x = x.contiguous(memory_format=torch.channels_last)
        w = w.contiguous(memory_format=torch.channels_last)
    res = {}

    def run():
        with torch.no_grad():
            res["y"] = torch.nn.functional.conv2d(x, w, b, 1, pad, 1, groups)

    return run, lambda: res["y"].numpy()


def main():
    ctx = webnn.ml.create_context(device_type="cpu")
    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()[0]:.2f} (other processes share the cores: "
          "see the caveat in the docstring)")
    print(f"webnn conv2d, float32, {os.cpu_count()} CPUs; "
          + (f"torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch
             else "torch is not installed: webnn alone"))
    head = f"{'case':<14} {'batch':>5} {'layout':>6} {'webnn ms':>9} {'webnn GFLOP/s':>14}"
    if torch:
        head += f" {'torch ms':>9} {'torch GFLOP/s':>14} {'webnn/torch':>12}"
    print(head)
    print("-" * len(head))
    for name, c, o, k, groups, hw, pad in CASES:
        for n in BATCHES:
            x = rng.standard_normal((n, c, hw, hw), dtype=np.float32)
            w = (rng.standard_normal((o, c // groups, k, k), dtype=np.float32)
                 / np.float32(np.sqrt(c // groups * k * k)))
            bias = rng.standard_normal((o,), dtype=np.float32)
            flops = 2.0 * n * o * hw * hw * (c // groups) * k * k
            ref = numpy_conv(x[:1], w, bias, pad, groups) if torch is None else None
            for layout in LAYOUTS:
                fns, results = {}, {}
                fns["webnn"], results["webnn"] = webnn_case(ctx, x, w, bias, pad, groups, layout)
                if torch:
                    fns["torch"], results["torch"] = torch_case(x, w, bias, pad, groups, layout)
                for fn in fns.values():
                    fn()
                got = results["webnn"]()
                want = results["torch"]() if torch else ref
                cmp = got if torch else got[:1]
                if not np.allclose(cmp, want, rtol=1e-3, atol=1e-3):
                    sys.exit(f"{name} batch {n} {layout}: webnn and the reference differ "
                             f"(max |diff| {np.max(np.abs(cmp - want)):.3g})")
                t = measure(fns)
                tw = statistics.median(t["webnn"])
                line = (f"{name:<14} {n:>5} {layout:>6} {tw * 1e3:>9.3f} "
                        f"{flops / tw / 1e9:>14.1f}")
                if torch:
                    tt = statistics.median(t["torch"])
                    ratio = statistics.median(b / a for a, b in zip(t["webnn"], t["torch"]))
                    line += f" {tt * 1e3:>9.3f} {flops / tt / 1e9:>14.1f} {ratio:>12.2f}"
                print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
