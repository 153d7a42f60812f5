"""Speed of the pooling kernels on the CPU, against PyTorch when available.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_pool.py

Cases (float32):
  maxPool2d 3x3 stride 2 on [8, 64, 112, 112] (nchw) and the same data as
      [8, 112, 112, 64] (nhwc); output 55 x 55.
  global averagePool2d on [8, 1280, 7, 7] (nchw; MobileNetV2's last pool)
      and on [8, 7, 7, 1280] (nhwc).
webnn: dispatch + read_tensor into a preallocated array (the spec's path,
input tensor written once), as bench_core.py does.
torch (if `import torch` works): torch.nn.functional.max_pool2d(x, 3, 2) and
adaptive_avg_pool2d(x, 1) in the same process with torch.set_num_threads(2);
nhwc rows use channels_last tensors (the same memory layout as webnn's
nhwc input).  torch allocates its output on every call; webnn copies its
output out of the tensor on every call.
GB/s = (input bytes + output bytes) / median time; both sides are counted
the same.  webnn/torch is the median of paired per-sample ratios of the
rates: > 1 means webnn is faster.  Results are checked against each other
(and against NumPy) before timing.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import webnn  # noqa: E402
from bench_core import f32, measure, median, paired_ratio, spec_path  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(2)
except Exception:  # noqa: BLE001 -- any failure means "no torch"
    torch = None


def pool_graph(ctx, op, shape, options):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32(shape))
    y = getattr(b, op)(x, options)
    return b.build({"y": y}), tuple(y.shape)


def numpy_check(op, x_nchw, got_nchw):
    """Independent check of the webnn result (float64)."""
    if op == "average_pool2d":
        ref = x_nchw.astype(np.float64).mean(axis=(2, 3), keepdims=True)
        np.testing.assert_allclose(got_nchw, ref, rtol=1e-5, atol=1e-6)
    else:
        n, c, h, w = x_nchw.shape
        oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
        ref = np.full((n, c, oh, ow), -np.inf, np.float32)
        for i in range(3):
            for j in range(3):
                ref = np.maximum(ref, x_nchw[:, :, i:i + 2 * oh:2, j:j + 2 * ow:2])
        np.testing.assert_array_equal(got_nchw, ref)


CASES = [
    # (label, op, nchw shape, layout, webnn options, torch fn)
    ("maxPool2d 3x3 s2 [8,64,112,112]", "max_pool2d", (8, 64, 112, 112), "nchw",
     {"windowDimensions": [3, 3], "strides": [2, 2]},
     lambda x: F.max_pool2d(x, 3, 2)),
    ("maxPool2d 3x3 s2 [8,112,112,64]", "max_pool2d", (8, 64, 112, 112), "nhwc",
     {"windowDimensions": [3, 3], "strides": [2, 2], "layout": "nhwc"},
     lambda x: F.max_pool2d(x, 3, 2)),
    ("global avgPool [8,1280,7,7]", "average_pool2d", (8, 1280, 7, 7), "nchw", {},
     lambda x: F.adaptive_avg_pool2d(x, 1)),
    ("global avgPool [8,7,7,1280]", "average_pool2d", (8, 1280, 7, 7), "nhwc",
     {"layout": "nhwc"},
     lambda x: F.adaptive_avg_pool2d(x, 1)),
]


def main():
    t_start = time.perf_counter()
    ctx = webnn.ml.create_context(device_type="cpu")
    rng = np.random.default_rng(0)
    print(f"webnn {getattr(webnn, '__version__', '?')}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch else 'not available'}, "
          f"{os.cpu_count()} CPUs")
    print("float32; webnn = dispatch + read_tensor into a preallocated array; "
          "GB/s = (input + output bytes) / median time")
    head = f"{'case':<34} {'layout':>6} {'webnn ms':>9} {'webnn GB/s':>11}"
    if torch:
        head += f" {'torch ms':>9} {'torch GB/s':>11} {'webnn/torch':>12}"
    print(head)
    for label, op, shape, layout, options, tfn in CASES:
        x_nchw = rng.standard_normal(shape, dtype=np.float32)
        x_in = np.ascontiguousarray(x_nchw.transpose(0, 2, 3, 1)) if layout == "nhwc" else x_nchw
        graph, out_shape = pool_graph(ctx, op, x_in.shape, options)
        run, out, tensors = spec_path(ctx, graph, {"x": x_in}, "y", out_shape)
        run()
        got_nchw = out.transpose(0, 3, 1, 2) if layout == "nhwc" else out
        numpy_check(op, x_nchw, got_nchw)
        nbytes = x_in.nbytes + out.nbytes
        fns = {"webnn": run}
        if torch:
            xt = torch.from_numpy(x_nchw)
            if layout == "nhwc":
                xt = xt.contiguous(memory_format=torch.channels_last)
            yt = tfn(xt).numpy()
            np.testing.assert_allclose(yt.reshape(got_nchw.shape), got_nchw,
                                       rtol=1e-5, atol=1e-6)
            fns["torch"] = lambda xt=xt, tfn=tfn: tfn(xt)
        t = measure(fns)
        wm = median(t["webnn"])
        line = f"{label:<34} {layout:>6} {wm * 1e3:>9.3f} {nbytes / wm / 1e9:>11.2f}"
        if torch:
            tm = median(t["torch"])
            ratio = paired_ratio(t["torch"], t["webnn"])  # rate ratio = time ratio
            line += f" {tm * 1e3:>9.3f} {nbytes / tm / 1e9:>11.2f} {ratio:>12.2f}"
        print(line)
        for tensor in tensors:
            tensor.destroy()
        graph.destroy()
    print(f"total time {time.perf_counter() - t_start:.1f} s")


if __name__ == "__main__":
    main()
