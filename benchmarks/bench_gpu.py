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
   ``sync(torch)``.  Both compute float32 products in float32
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
4. conv2d (with bias) on the convolution shapes of ResNet-50 (batch 32,
   torchvision's v1.5 layout: stride 2 on the 3x3 convolutions), float32 in
   NCHW (no TF32 on either side) and float16 in NCHW and NHWC, against
   torch.nn.functional.conv2d on the same GPU with
   torch.backends.cudnn.benchmark = True (cuDNN's fastest algorithm for each
   shape; NHWC = torch's channels_last).  webnn: k back-to-back dispatches
   of the one-operator graph, then a one-element read.  TFLOP/s counts
   2 * N * OH * OW * OC * IC * KH * KW.
5. MobileNetV2 (examples/zoo/mobilenetv2.py, the weights in examples/data)
   at batch 1 and 32, float32: webnn's graph against the same network
   written with torch.nn.functional on the GPU (mobilenetv2.torch_forward),
   k back-to-back runs then a sync; the outputs are compared first.

Targets (issue 6): matmul and conv >= 0.9x the library (torch/webnn >= 0.9),
MobileNetV2 batch 32 within 1.2x PyTorch (torch/webnn >= 0.83).

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
DEV = "cuda"  # --torch-device cpu: a smoke test of this script on the CUDA emulation


def smoke():
    """A check of this script (torch on the CPU, webnn on the emulation)."""
    return DEV != "cuda"


def sync(torch):
    if DEV == "cuda":
        torch.cuda.synchronize()


def timed(fn, k):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) / k


def alternate(fns, samples=SAMPLES):
    """{name: (fn, k)} -> {name: median seconds per unit}; fn does k units."""
    samples = 1 if smoke() else samples
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
            da, db = torch.from_numpy(a).to(DEV), torch.from_numpy(b).to(DEV)
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
            k = 1 if smoke() else max(1, min(200, int(2e11 / (2.0 * n ** 3))))  # ~0.2 TFLOP a sample

            def run_webnn():
                for _ in range(k):
                    ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
                ctx.read_tensor(sync_t)

            def run_torch():
                for _ in range(k):
                    torch.matmul(da, db, out=dc)
                sync(torch)

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
    dx, dw, dc = (torch.from_numpy(v).to(DEV) for v in (xv, w, c))
    k = 20 if smoke() else 2000

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
        sync(torch)

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
    da, db = torch.from_numpy(a).to(DEV), torch.from_numpy(b).to(DEV)
    dc = torch.empty_like(da)
    k = 1 if smoke() else 20

    def run_webnn():
        for _ in range(k):
            ctx.dispatch(g, {"a": ta, "b": tb}, {"c": tc})
        ctx.read_tensor(sync_t)

    def run_torch():
        for _ in range(k):
            torch.add(da, db, out=dc)
        sync(torch)

    t = alternate({"webnn": (run_webnn, k), "torch": (run_torch, k)})
    gb = 3 * 4 * n / 1e9
    for t_ in (ta, tb, tc, sync_t):
        t_.destroy()
    g.destroy()
    return [{"what": f"add float32 {n / 2**20:g}Mi", "webnn_gbs": gb / t["webnn"],
             "torch_gbs": gb / t["torch"], "webnn_ms": t["webnn"] * 1e3,
             "torch_ms": t["torch"] * 1e3}]


# ResNet-50's convolutions: (name, in channels, out channels, kernel, stride,
# padding, input size)
RESNET50_CONVS = [
    ("conv1 7x7/2", 3, 64, 7, 2, 3, 224),
    ("layer1 1x1 64-64", 64, 64, 1, 1, 0, 56),
    ("layer1 3x3 64", 64, 64, 3, 1, 1, 56),
    ("layer1 1x1 64-256", 64, 256, 1, 1, 0, 56),
    ("layer2 3x3/2 128", 128, 128, 3, 2, 1, 56),
    ("layer2 1x1 512-128", 512, 128, 1, 1, 0, 28),
    ("layer2 3x3 128", 128, 128, 3, 1, 1, 28),
    ("layer3 3x3 256", 256, 256, 3, 1, 1, 14),
    ("layer3 1x1 1024-256", 1024, 256, 1, 1, 0, 14),
    ("layer4 3x3 512", 512, 512, 3, 1, 1, 7),
    ("layer4 1x1 512-2048", 512, 2048, 1, 1, 0, 7),
]


def conv_rows(ctx, torch, batch, variants):
    F = torch.nn.functional
    rows = []
    sync_t = ctx.create_tensor({"dataType": "float32", "shape": [1], "readable": True})
    for dt, layout in variants:
        for name, ic, oc, k, st, pad, size in RESNET50_CONVS:
            if smoke() and size > 14:
                continue
            rng = np.random.default_rng(ic * 7 + oc + k)
            oh = (size + 2 * pad - k) // st + 1
            x = rng.uniform(-1, 1, (batch, ic, size, size)).astype(dt)
            w = (rng.uniform(-1, 1, (oc, ic, k, k)) / np.sqrt(ic * k * k)).astype(dt)
            bias = rng.uniform(-1, 1, oc).astype(dt)
            bl = webnn.MLGraphBuilder(ctx)
            if layout == "nhwc":
                xin = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
                wl = np.ascontiguousarray(w.transpose(0, 2, 3, 1))  # ohwi
                opts = {"inputLayout": "nhwc", "filterLayout": "ohwi"}
                out_shape = [batch, oh, oh, oc]
            else:
                xin, wl, opts, out_shape = x, w, {}, [batch, oc, oh, oh]
            ix = bl.input("x", {"dataType": dt, "shape": list(xin.shape)})
            y = bl.conv2d(ix, bl.constant(wl), bias=bl.constant(bias),
                          strides=[st, st], padding=[pad] * 4, **opts)
            g = bl.build({"y": y})
            tx = ctx.create_tensor({"dataType": dt, "shape": list(xin.shape), "writable": True})
            ty = ctx.create_tensor({"dataType": dt, "shape": out_shape, "readable": True})
            ctx.write_tensor(tx, xin)
            dx, dw, db = (torch.from_numpy(v).to(DEV) for v in (x, w, bias))
            if layout == "nhwc":
                dx = dx.contiguous(memory_format=torch.channels_last)
                dw = dw.contiguous(memory_format=torch.channels_last)
            ctx.dispatch(g, {"x": tx}, {"y": ty})
            got = ctx.read_tensor(ty).astype(np.float64)
            ref = F.conv2d(dx, dw, db, st, pad).float().cpu().numpy().astype(np.float64)
            if layout == "nhwc":
                ref = ref.transpose(0, 2, 3, 1)
            err = float(np.max(np.abs(got - ref)))
            tol = 1e-4 if dt == "float32" else 2e-2
            flops = 2.0 * batch * oh * oh * oc * ic * k * k
            reps = 1 if smoke() else max(1, min(200, int(2e11 / flops)))

            def run_webnn():
                for _ in range(reps):
                    ctx.dispatch(g, {"x": tx}, {"y": ty})
                ctx.read_tensor(sync_t)

            def run_torch():
                for _ in range(reps):
                    F.conv2d(dx, dw, db, st, pad)
                sync(torch)

            t = alternate({"webnn": (run_webnn, reps), "torch": (run_torch, reps)})
            rows.append({"dtype": dt, "layout": layout, "conv": name, "batch": batch,
                         "webnn_ms": t["webnn"] * 1e3, "torch_ms": t["torch"] * 1e3,
                         "webnn_tflops": flops / t["webnn"] / 1e12,
                         "torch_tflops": flops / t["torch"] / 1e12,
                         "ratio": t["torch"] / t["webnn"], "max_abs_diff": err,
                         "check_ok": bool(err <= tol)})
            tx.destroy()
            ty.destroy()
            g.destroy()
    sync_t.destroy()
    return rows


def mobilenet_rows(ctx, torch, batches):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
    from zoo import mobilenetv2
    mw = mobilenetv2.load_weights()
    fwd = mobilenetv2.torch_forward(torch, mw, device=DEV)
    rows = []
    sync_t = ctx.create_tensor({"dataType": "float32", "shape": [1], "readable": True})
    for batch in batches:
        bl = webnn.MLGraphBuilder(ctx)
        g = bl.build({"f": mobilenetv2.build(bl, mw, batch=batch)})
        x = np.random.default_rng(batch).standard_normal((batch, 3, 224, 224)).astype(np.float32)
        tx = ctx.create_tensor({"dataType": "float32", "shape": list(x.shape), "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": [batch, 1280], "readable": True})
        ctx.write_tensor(tx, x)
        ctx.dispatch(g, {"input": tx}, {"f": ty})
        got = ctx.read_tensor(ty)
        dx = torch.from_numpy(x).to(DEV)
        with torch.inference_mode():
            ref = fwd(dx).cpu().numpy()
        err = float(np.max(np.abs(got.astype(np.float64) - ref)))
        reps = 1 if smoke() else (50 if batch == 1 else 10)

        def run_webnn():
            for _ in range(reps):
                ctx.dispatch(g, {"input": tx}, {"f": ty})
            ctx.read_tensor(sync_t)

        def run_torch():
            with torch.inference_mode():
                for _ in range(reps):
                    fwd(dx)
            sync(torch)

        def latency_webnn():
            out = np.empty((batch, 1280), np.float32)
            for _ in range(reps):
                ctx.dispatch(g, {"input": tx}, {"f": ty})
                ctx.read_tensor(ty, out)

        t = alternate({"webnn": (run_webnn, reps), "torch": (run_torch, reps),
                       "webnn_latency": (latency_webnn, reps)})
        rows.append({"batch": batch, "webnn_ms": t["webnn"] * 1e3, "torch_ms": t["torch"] * 1e3,
                     "webnn_latency_ms": t["webnn_latency"] * 1e3,
                     "ratio": t["torch"] / t["webnn"], "max_abs_diff": err,
                     "check_ok": bool(err <= 1e-3 * max(1.0, float(np.abs(ref).max())))})
        tx.destroy()
        ty.destroy()
        g.destroy()
    sync_t.destroy()
    return rows


# ---- whole models through webnn.onnx --------------------------------------------
# (family key of bench_families.py, batch): exported there with random
# weights, the same ONNX file for webnn and ONNX Runtime
MODELS = [("mobilenetv2", 1), ("mobilenetv2", 32), ("resnet50", 1), ("resnet50", 32),
          ("bert", 1)]


def kernel_table(torch, fn, top=8, runs=1):
    """([(kernel name, us per run, calls per run)], all kernels' us per run)
    of the CUDA kernels fn() ran (fn = `runs` runs), from torch.profiler
    (CUPTI records every kernel of the process, webnn's and cuDNN's /
    cuBLAS's included); ([], 0) when the profiler records none."""
    from torch.profiler import ProfilerActivity, profile
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            sync(torch)
        tot = {}
        for e in prof.events():
            if getattr(e, "device_type", None) is not None and str(e.device_type).endswith("CUDA"):
                t, c = tot.get(e.name, (0.0, 0))
                tot[e.name] = (t + e.device_time, c + 1)  # device_time: us
        rows = sorted(((n, t / runs, c / runs) for n, (t, c) in tot.items()),
                      key=lambda r: -r[1])
        return rows[:top], sum(r[1] for r in rows)
    except Exception as e:  # pragma: no cover - a profiler that does not run here
        return [(f"(profiler: {type(e).__name__}: {e})", 0.0, 0)], 0.0


def ort_cuda(path, feeds):
    """ONNX Runtime's CUDA provider on the same file: (run, outputs) or None
    when onnxruntime-gpu is not installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CUDAExecutionProvider"])
    io = sess.io_binding()
    for n, v in feeds.items():
        io.bind_ortvalue_input(n, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
    for o in sess.get_outputs():
        io.bind_output(o.name, "cuda")
    sess.run_with_iobinding(io)
    return lambda: sess.run_with_iobinding(io), io.copy_outputs_to_cpu()


def model_rows(ctx, torch, models, cache, profile_top):
    """Each model's ONNX export through webnn.onnx on the GPU context against
    the same torch module eager on the GPU (and ORT's CUDA provider)."""
    sys.path.insert(0, HERE)
    import bench_families
    import webnn.onnx
    rows = []
    for key, batch in models:
        path, feeds, module, tin_torch = bench_families.export(key, cache, batch, True)
        m = webnn.onnx.load(path, context=ctx)
        g = m.graph
        gin = m._graph_inputs(feeds)
        tin = {n: ctx.create_tensor({"dataType": dt, "shape": list(sh), "writable": True})
               for n, (dt, sh) in g._inputs.items()}
        tout = {n: ctx.create_tensor({"dataType": dt, "shape": list(sh), "readable": True})
                for n, (dt, sh) in g._outputs.items()}
        for n, t in tin.items():
            ctx.write_tensor(t, gin[n])
        sync_t = ctx.create_tensor({"dataType": "float32", "shape": [1], "readable": True})
        t0 = time.perf_counter()
        ctx.dispatch(g, tin, tout)
        got = ctx.read_tensor(next(iter(tout.values())))
        first = time.perf_counter() - t0
        module = module.to(DEV)
        targs = tuple(v.to(DEV) for v in tin_torch.values())
        with torch.inference_mode():
            ref = module(*targs)
            ref = (ref[0] if isinstance(ref, (tuple, list)) else ref).float().cpu().numpy()
        scale = max(1e-30, float(np.abs(ref).max()))
        err = float(np.max(np.abs(got.astype(np.float64) - ref))) / scale
        reps = 1 if smoke() else (20 if batch == 1 else 5)

        def run_webnn():
            for _ in range(reps):
                ctx.dispatch(g, tin, tout)
            ctx.read_tensor(sync_t)

        def run_torch():
            with torch.inference_mode():
                for _ in range(reps):
                    module(*targs)
            sync(torch)

        fns = {"webnn": (run_webnn, reps), "torch": (run_torch, reps)}
        oc = None if smoke() else ort_cuda(path, feeds)
        if oc is not None:
            ort_run = oc[0]

            def run_ort():
                for _ in range(reps):
                    ort_run()
            fns["ort"] = (run_ort, reps)
        t = alternate(fns)
        row = {"model": (bench_families.FAMILIES.get(key) or bench_families.EXTRA[key])[0],
               "batch": batch, "webnn_ms": t["webnn"] * 1e3, "torch_ms": t["torch"] * 1e3,
               "ort_ms": t["ort"] * 1e3 if "ort" in t else None,
               "ratio": t["torch"] / t["webnn"], "first_run_s": first, "max_rel_diff": err,
               "check_ok": bool(err <= 1e-2)}
        if profile_top and not smoke():
            row["kernels"], row["kernel_us"] = kernel_table(torch, run_webnn, profile_top, reps)
        rows.append(row)
        for t_ in list(tin.values()) + list(tout.values()) + [sync_t]:
            t_.destroy()
        g.destroy()
        del module, targs
        torch.cuda.empty_cache() if DEV == "cuda" else None
    return rows


def probe_rows(ctx, torch):
    """Which kernels a conv2d + bias + relu / relu6 (clamp 0..6) graph runs:
    one cuDNN call (cudnnConvolutionBiasActivationForward took the
    activation: RELU, CLIPPED_RELU) or the convolution and webnn's epilogue."""
    rows = []
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (8, 64, 28, 28)).astype(np.float32)
    w = (rng.uniform(-1, 1, (64, 64, 3, 3)) / 24).astype(np.float32)
    bias = rng.uniform(-1, 1, 64).astype(np.float32)
    ref = torch.nn.functional.conv2d(*(torch.from_numpy(v).double() for v in (x, w, bias)),
                                     padding=1).numpy()
    for act in ("relu", "relu6"):
        bl = webnn.MLGraphBuilder(ctx)
        ix = bl.input("x", {"dataType": "float32", "shape": list(x.shape)})
        y = bl.conv2d(ix, bl.constant(w), bias=bl.constant(bias), padding=[1] * 4)
        y = bl.relu(y) if act == "relu" else bl.clamp(y, minValue=0.0, maxValue=6.0)
        g = bl.build({"y": y})
        tx = ctx.create_tensor({"dataType": "float32", "shape": list(x.shape), "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": list(ref.shape),
                                "readable": True})
        ctx.write_tensor(tx, x)
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        got = ctx.read_tensor(ty)
        want = np.maximum(ref, 0) if act == "relu" else np.clip(ref, 0, 6)
        err = float(np.max(np.abs(got - want)))

        def run():
            for _ in range(3):
                ctx.dispatch(g, {"x": tx}, {"y": ty})
            ctx.read_tensor(ty)
        ks = [] if smoke() else kernel_table(torch, run, 10, 3)[0]
        rows.append({"graph": f"conv2d + bias + {act}", "kernels": ks, "max_abs_diff": err,
                     "check_ok": bool(err <= 1e-4)})
        tx.destroy()
        ty.destroy()
        g.destroy()
    return rows


def copy_gbs(torch, n):
    """The card's device-to-device copy bandwidth through torch (bytes read
    + written), the yardstick of the element-wise add."""
    a = torch.empty(n, dtype=torch.float32, device=DEV)
    b = torch.empty_like(a)
    k = 1 if smoke() else 20

    def run():
        for _ in range(k):
            b.copy_(a)
        sync(torch)
    t = alternate({"copy": (run, k)})["copy"]
    del a, b
    return 2 * 4 * n / 1e9 / t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", help="n <= 2048 only")
    ap.add_argument("--sizes", help="matmul sizes, e.g. 1024,4096 (default 1024..8192)")
    ap.add_argument("--only", help="comma-separated tables: matmul,overhead,eltwise,conv,"
                    "mobilenet,models,probe (default all)")
    ap.add_argument("--models", help="models table: family:batch,... (default "
                    + ",".join(f"{k}:{b}" for k, b in MODELS) + ")")
    ap.add_argument("--cache", default=os.path.join(os.path.dirname(HERE), "build",
                                                     "bench-families"),
                    help="where the models' ONNX exports are kept")
    ap.add_argument("--profile-top", type=int, default=6,
                    help="models table: the N slowest kernels of webnn's run (torch.profiler)")
    ap.add_argument("--torch-device", default="cuda",
                    help="cpu: check this script on the CUDA emulation (no GPU; tiny sizes)")
    ap.add_argument("--conv-batch", type=int, default=32, help="batch of the conv table")
    ap.add_argument("--elements", type=int, default=64 * 1024 * 1024,
                    help="elements of the element-wise add (default 64 Mi)")
    args = ap.parse_args()
    global DEV
    DEV = args.torch_device
    # webnn's GPU context first, so that libwebnn_cuda.so binds the CUDA
    # libraries it was built with before torch loads its own copies
    ctx = webnn.ml.create_context(device_type="gpu")
    import torch
    if DEV == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_gpu: torch sees no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    info = {"device": torch.cuda.get_device_name(0) if DEV == "cuda" else "torch on the CPU",
            "torch": torch.__version__, "torch_cuda": torch.version.cuda}
    print(f"device: {info['device']}  torch {info['torch']} (CUDA {info['torch_cuda']})")
    sizes = (1024, 2048) if args.quick else (1024, 2048, 4096, 8192)
    if args.sizes:
        sizes = tuple(int(v) for v in args.sizes.split(","))
    only = set(args.only.split(",")) if args.only else {
        "matmul", "overhead", "eltwise", "conv", "mobilenet", "models", "probe"}
    torch.backends.cudnn.benchmark = True
    res = {"info": info}
    checks = []
    if "matmul" in only:
        mm = res["matmul"] = matmul_rows(ctx, torch, ("float32", "float16"), sizes)
        checks += mm
        print("\nmatmul a[n,n] @ b[n,n]       webnn ms   torch ms   webnn TF/s  torch TF/s"
              "  torch/webnn  max|diff|")
        for r in mm:
            print(f"  {r['dtype']:8s} n={r['n']:5d}   {r['webnn_ms']:9.3f}  {r['torch_ms']:9.3f}"
                  f"   {r['webnn_tflops']:9.1f}  {r['torch_tflops']:9.1f}   {r['ratio']:9.2f}"
                  f"   {r['max_abs_diff']:.2e}{'' if r['check_ok'] else '  MISMATCH'}", flush=True)
    if "overhead" in only:
        ov = res["overhead"] = overhead_rows(ctx, torch)
        print("\nsmall graph (mul, add, relu on [1, 256])      webnn us   torch us")
        for r in ov:
            print(f"  {r['what']:42s} {r['webnn_us']:9.1f}  {r['torch_us']:9.1f}", flush=True)
    if "eltwise" in only:
        el = res["eltwise"] = eltwise_rows(ctx, torch, args.elements)
        cp = res["copy_gbs"] = copy_gbs(torch, args.elements)
        print(f"\nelement-wise                  webnn GB/s  torch GB/s  webnn / copy"
              f" (copy: {cp:.0f} GB/s)")
        for r in el:
            r["of_copy"] = r["webnn_gbs"] / cp
            print(f"  {r['what']:26s}  {r['webnn_gbs']:9.1f}  {r['torch_gbs']:9.1f}"
                  f"  {r['of_copy']:9.0%}", flush=True)
    if "conv" in only:
        variants = [("float32", "nchw"), ("float16", "nchw"), ("float16", "nhwc")]
        if args.quick:
            variants = variants[:1]
        print(f"\nconv2d, ResNet-50 shapes, batch {args.conv_batch}"
              "          webnn ms  torch ms  webnn TF/s torch TF/s torch/webnn max|diff|")
        cv = res["conv"] = []
        for v in variants:
            for r in conv_rows(ctx, torch, args.conv_batch, [v]):
                cv.append(r)
                print(f"  {r['dtype']:7s} {r['layout']} {r['conv']:22s} {r['webnn_ms']:9.3f}"
                      f" {r['torch_ms']:9.3f} {r['webnn_tflops']:9.1f} {r['torch_tflops']:9.1f}"
                      f" {r['ratio']:9.2f}   {r['max_abs_diff']:.1e}"
                      f"{'' if r['check_ok'] else '  MISMATCH'}", flush=True)
        checks += cv
    if "mobilenet" in only:
        mb = res["mobilenet"] = mobilenet_rows(ctx, torch, (1, 2) if smoke() else (1, 32))
        checks += mb
        print("\nMobileNetV2 float32       webnn ms  torch ms  torch/webnn  webnn dispatch+read ms"
              "  max|diff|")
        for r in mb:
            print(f"  batch {r['batch']:3d}            {r['webnn_ms']:9.3f} {r['torch_ms']:9.3f}"
                  f"   {r['ratio']:9.2f}   {r['webnn_latency_ms']:12.3f}            "
                  f"{r['max_abs_diff']:.1e}{'' if r['check_ok'] else '  MISMATCH'}", flush=True)
    if "probe" in only:
        pr = res["probe"] = probe_rows(ctx, torch)
        checks += pr
        print("\nwhich kernels run a fused convolution (torch.profiler, per run)")
        for r in pr:
            print(f"  {r['graph']}: max|diff| {r['max_abs_diff']:.1e}"
                  f"{'' if r['check_ok'] else '  MISMATCH'}")
            for name, us, calls in r["kernels"]:
                print(f"      {calls:5.1f} x  {us / max(calls, 1):8.1f} us  {name[:110]}")
    if "models" in only:
        todo = MODELS
        if args.models:
            todo = [(v.split(":")[0], int(v.split(":")[1]) if ":" in v else 1)
                    for v in args.models.split(",")]
        print("\nmodels through webnn.onnx (float32)   webnn ms   torch ms  ORT-CUDA ms"
              "  torch/webnn  first run s  max rel diff")
        mr = res["models"] = []
        for key, batch in todo:
            try:
                rs = model_rows(ctx, torch, [(key, batch)], args.cache, args.profile_top)
            except Exception as e:  # one model failing: say so, go on
                print(f"  {key} batch {batch}: failed: {type(e).__name__}: {str(e)[:300]}",
                      flush=True)
                mr.append({"model": key, "batch": batch, "error": str(e)[:300],
                           "check_ok": False})
                continue
            for r in rs:
                mr.append(r)
                ortms = f"{r['ort_ms']:9.2f}" if r["ort_ms"] is not None else "      n/a"
                print(f"  {r['model'][:22]:22s} b{r['batch']:<3d} {r['webnn_ms']:9.2f} "
                      f"{r['torch_ms']:9.2f}    {ortms}   {r['ratio']:9.2f}  "
                      f"{r['first_run_s']:9.2f}   {r['max_rel_diff']:.1e}"
                      f"{'' if r['check_ok'] else '  MISMATCH'}", flush=True)
                if "kernels" in r:
                    print(f"      GPU kernels: {r['kernel_us'] / 1e3:.2f} ms of each run's "
                          f"{r['webnn_ms']:.2f} ms; the longest, per run:")
                for name, us, calls in r.get("kernels", []):
                    print(f"      {calls:6.1f} x {us / max(calls, 1):8.1f} us = {us / 1e3:7.3f} ms"
                          f"  {name[:100]}", flush=True)
        checks += mr
    ctx.destroy()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if not all(r["check_ok"] for r in checks):
        sys.exit("bench_gpu: webnn and torch results differ (see MISMATCH)")

if __name__ == "__main__":
    main()
