"""Speed of the webnn CUDA backend against PyTorch on the same GPU.

Run from the repository root on a machine with an NVIDIA GPU, after the
package is built with nvcc present (`make build`, or scripts/gpu_check.sh):

    python benchmarks/bench_gpu.py [--json out.json] [--quick]

Tables:

1. matmul a[n, n] @ b[n, n], float32 and float16, n = 1024, 2048, 4096, 8192.
   webnn: a graph with both operands as inputs; the input tensors are
   created and written once; a timed call is k back-to-back
   ``ctx.dispatch(graph, ...)`` followed by ``ctx.read_tensor`` of a
   one-element tensor (a read waits for everything queued before it on the
   context's timeline, i.e. the stream), and the time per product is the
   total / k.  PyTorch: ``torch.matmul(a, b, out=c)`` k times then
   ``torch.cuda.synchronize()``.  Both compute float32 products in float32
   (webnn: cuBLAS without TF32; torch: allow_tf32 = False) and float16
   products on tensor cores accumulating in float32 (torch:
   allow_fp16_reduced_precision_reduction = False).  TFLOP/s = 2 n^3 / time.
   The results of both are compared before timing.
2. per-dispatch overhead of a small graph (x[1, 256] -> mul by a constant,
   add a constant, relu): the latency of dispatch + read_tensor (the round
   trip a caller sees), and the throughput of back-to-back dispatches (k
   dispatches, one read), against the same three eager PyTorch ops (with
   .cpu() / synchronize).
3. element-wise add of two 64 Mi-element float32 inputs: GB/s of useful
   traffic (3 x 256 MiB), against torch.add(out=).

Method: warm-up, then SAMPLES timed samples, webnn and torch alternating; the
medians are printed (and written to --json).
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place

import numpy as np  # noqa: E402

import webnn  # noqa: E402

SAMPLES = 5


def timed(fn, k):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) / k


def alternate(fns, samples=SAMPLES):
    """{name: (fn, k)} -> {name: median seconds per unit}; fn does k units."""
    for fn, _ in fns.values():
        fn()  # warm-up
    out = {name: [] for name in fns}
    names = list(fns)
    for s in range(samples):
        for name in (names if s % 2 == 0 else names[::-1]):
            fn, k = fns[name]
            out[name].append(timed(fn, k))
    return {name: statistics.median(v) for name, v in out.items()}


def matmul_rows(ctx, torch, dtypes, sizes):
    rows = []
    tdt = {"float32": torch.float32, "float16": torch.float16}
    sync_t = ctx.create_tensor({"dataType": "float32", "shape": [1], "readable": True,
                                "writable": True})
    for dt in dtypes:
        for n in sizes:
            rng = np.random.default_rng(n)
            a = rng.uniform(-1, 1, (n, n)).astype(dt)
            b = rng.uniform(-1, 1, (n, n)).astype(dt)
            bl = webnn.MLGraphBuilder(ctx)
            ia = bl.input("a", {"dataType": dt, "shape": [n, n]})
            ib = bl.input("b", {"dataType": dt, "shape": [n, n]})
            g = bl.build({"c": bl.matmul(ia, ib)})
            desc = {"dataType": dt, "shape": [n, n]}
            ta = ctx.create_tensor({**desc, "writable": True})
            tb = ctx.create_tensor({**desc, "writable": True})
            tc = ctx.create_tensor({**desc, "readable": True})
            ctx.write_tensor(ta, a)
            ctx.write_tensor(tb, b)
            da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            dc = torch.empty_like(da)
            # check: webnn against torch (sampled rows for big n)
            ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
            got = ctx.read_tensor(tc)
            torch.matmul(da, db, out=dc)
            ref = dc.cpu().numpy()
            rows_chk = slice(None) if n <= 2048 else slice(0, 64)
            tol = (2e-5 if dt == "float32" else 2e-3) * np.sqrt(n) + 1e-6
            err = float(np.max(np.abs(got[rows_chk].astype(np.float64)
                                      - ref[rows_chk].astype(np.float64))))
            k = max(1, min(200, int(2e11 / (2.0 * n ** 3))))  # ~0.2 TFLOP a sample

            def run_webnn():
                for _ in range(k):
                    ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
                ctx.read_tensor(sync_t)

            def run_torch():
                for _ in range(k):
                    torch.matmul(da, db, out=dc)
                torch.cuda.synchronize()

            t = alternate({"webnn": (run_webnn, k), "torch": (run_torch, k)})
            fl = 2.0 * n ** 3
            rows.append({"dtype": dt, "n": n, "webnn_ms": t["webnn"] * 1e3,
                         "torch_ms": t["torch"] * 1e3,
                         "webnn_tflops": fl / t["webnn"] / 1e12,
                         "torch_tflops": fl / t["torch"] / 1e12,
                         "ratio": t["torch"] / t["webnn"], "max_abs_diff": err,
                         "check_ok": bool(err <= tol)})
            for t_ in (ta, tb, tc):
                t_.destroy()
            g.destroy()
            del da, db, dc
            torch.cuda.empty_cache()
    sync_t.destroy()
    return rows


def overhead_rows(ctx, torch):
    n = 256
    w = np.linspace(-1, 1, n).astype(np.float32).reshape(1, n)
    c = np.linspace(0.5, -0.5, n).astype(np.float32).reshape(1, n)
    bl = webnn.MLGraphBuilder(ctx)
    x = bl.input("x", {"dataType": "float32", "shape": [1, n]})
    y = bl.relu(bl.add(bl.mul(x, bl.constant({"dataType": "float32", "shape": [1, n]}, w)),
                       bl.constant({"dataType": "float32", "shape": [1, n]}, c)))
    g = bl.build({"y": y})
    tx = ctx.create_tensor({"dataType": "float32", "shape": [1, n], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [1, n], "readable": True})
    xv = np.linspace(-3, 3, n).astype(np.float32).reshape(1, n)
    ctx.write_tensor(tx, xv)
    out = np.empty((1, n), np.float32)
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    assert np.allclose(ctx.read_tensor(ty), np.maximum(xv * w + c, 0))
    dx, dw, dc = (torch.from_numpy(v).cuda() for v in (xv, w, c))
    k = 2000

    def webnn_roundtrip():
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        ctx.read_tensor(ty, out)

    def torch_roundtrip():
        torch.relu(dx * dw + dc).cpu()

    def webnn_stream():
        for _ in range(k):
            ctx.dispatch(g, {"x": tx}, {"y": ty})
        ctx.read_tensor(ty, out)

    def torch_stream():
        for _ in range(k):
            torch.relu(dx * dw + dc)
        torch.cuda.synchronize()

    lat = alternate({"webnn": (lambda: [webnn_roundtrip() for _ in range(200)], 200),
                     "torch": (lambda: [torch_roundtrip() for _ in range(200)], 200)})
    thr = alternate({"webnn": (webnn_stream, k), "torch": (torch_stream, k)})
    g.destroy()
    return [{"what": "dispatch + read_tensor (latency)", "webnn_us": lat["webnn"] * 1e6,
             "torch_us": lat["torch"] * 1e6},
            {"what": "back-to-back dispatches (per graph)", "webnn_us": thr["webnn"] * 1e6,
             "torch_us": thr["torch"] * 1e6}]


def eltwise_rows(ctx, torch, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    bl = webnn.MLGraphBuilder(ctx)
    ia = bl.input("a", {"dataType": "float32", "shape": [n]})
    ib = bl.input("b", {"dataType": "float32", "shape": [n]})
    g = bl.build({"c": bl.add(ia, ib)})
    desc = {"dataType": "float32", "shape": [n]}
    ta = ctx.create_tensor({**desc, "writable": True})
    tb = ctx.create_tensor({**desc, "writable": True})
    tc = ctx.create_tensor({**desc, "readable": True})
    sync_t = ctx.create_tensor({"dataType": "float32", "shape": [1], "readable": True})
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
    assert np.array_equal(ctx.read_tensor(tc), a + b)
    da, db = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    dc = torch.empty_like(da)
    k = 20

    def run_webnn():
        for _ in range(k):
            ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
        ctx.read_tensor(sync_t)

    def run_torch():
        for _ in range(k):
            torch.add(da, db, out=dc)
        torch.cuda.synchronize()

    t = alternate({"webnn": (run_webnn, k), "torch": (run_torch, k)})
    gb = 3 * 4 * n / 1e9
    for t_ in (ta, tb, tc, sync_t):
        t_.destroy()
    g.destroy()
    return [{"what": f"add float32 {n / 2**20:g}Mi", "webnn_gbs": gb / t["webnn"],
             "torch_gbs": gb / t["torch"], "webnn_ms": t["webnn"] * 1e3,
             "torch_ms": t["torch"] * 1e3}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="n <= 2048 only")
    ap.add_argument("--sizes", help="matmul sizes, e.g. 1024,4096 (default 1024..8192)")
    ap.add_argument("--elements", type=int, default=64 * 1024 * 1024,
                    help="elements of the element-wise add (default 64 Mi)")
    args = ap.parse_args()
    # webnn's GPU context first, so that libwebnn_cuda.so binds the CUDA
    # libraries it was built with before torch loads its own copies
    ctx = webnn.ml.create_context(device_type="gpu")
    import torch
    if not torch.cuda.is_available():
        sys.exit("bench_gpu: torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    info = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "torch_cuda": torch.version.cuda}
    print(f"device: {info['device']}  torch {info['torch']} (CUDA {info['torch_cuda']})")
    sizes = (1024, 2048) if args.quick else (1024, 2048, 4096, 8192)
    if args.sizes:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    mm = matmul_rows(ctx, torch, ("float32", "float16"), sizes)
    print("\nmatmul a[n,n] @ b[n,n]       webnn ms   torch ms   webnn TF/s  torch TF/s"
          "  torch/webnn  max|diff|")
    for r in mm:
        print(f"  {r['dtype']:8s} n={r['n']:5d}   {r['webnn_ms']:9.3f}  {r['torch_ms']:9.3f}"
              f"   {r['webnn_tflops']:9.1f}  {r['torch_tflops']:9.1f}   {r['ratio']:9.2f}"
              f"   {r['max_abs_diff']:.2e}{'' if r['check_ok'] else '  MISMATCH'}")
    ov = overhead_rows(ctx, torch)
    print("\nsmall graph (mul, add, relu on [1, 256])      webnn us   torch us")
    for r in ov:
        print(f"  {r['what']:42s} {r['webnn_us']:9.1f}  {r['torch_us']:9.1f}")
    el = eltwise_rows(ctx, torch, args.elements)
    print("\nelement-wise                  webnn GB/s  torch GB/s")
    for r in el:
        print(f"  {r['what']:26s}  {r['webnn_gbs']:9.1f}  {r['torch_gbs']:9.1f}")
    ctx.destroy()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"info": info, "matmul": mm, "overhead": ov, "eltwise": el}, f, indent=1)
    if not all(r["check_ok"] for r in mm):
        sys.exit("bench_gpu: webnn and torch results differ (see MISMATCH)")


if __name__ == "__main__":
    main()
