"""Element-wise and row-normalization kernels against memory bandwidth,
NumPy and ONNX Runtime, all in one process.

For each operator on N float32 elements (default 16 Mi = 64 MiB per
operand) the table shows, in ms, min / median / max over R runs (each run the
mean of K calls after warm-up):

  kernel      K dispatch() calls then one read_tensor(), minus one
              read_tensor(): the kernel alone (plus the per-dispatch cost,
              ~10 us), what the CPU backend itself takes;
  disp+read   dispatch() + read_tensor() into a preallocated array (the row of
              bench_peers.py: the spec's path, which copies the result out of
              the MLTensor once more);
  memcpy      np.copyto of the same bytes as the kernel moves (one input read
              + one output written: a plain 1-in 1-out copy; two inputs for
              binary operators: a + b -> y is timed as np.add on float32,
              which is bandwidth-bound), in this process: the bandwidth floor;
  numpy       the NumPy expression (float32; for erf-based gelu NumPy has no
              erf, so scipy.special.erf when installed, else '-');
  ORT         ONNX Runtime, IOBinding, output bound to a preallocated array.

kernel/memcpy near 1 means the kernel is memory-bound.  The load average is
printed before and after: the machine's cores are shared, compare rows of one
run only.

  python benchmarks/bench_eltwise.py [--n 16777216] [--runs 5] [--only relu,sigmoid,...]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

import webnn

OPS = ["copy", "relu", "add", "sigmoid", "tanh", "gelu", "exp", "log", "erf", "elu",
       "softplus", "softsign", "softmax", "layerNorm"]


def timed(fn, k, runs, warmup=1):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        out.append((time.perf_counter() - t0) / k * 1e3)
    return out


def fmt(ts):
    if not ts:
        return "-"
    return f"{min(ts):7.2f}/{statistics.median(ts):7.2f}/{max(ts):7.2f}"


def med(ts):
    return statistics.median(ts) if ts else float("nan")


def build(ctx, op, n, row):
    b = webnn.MLGraphBuilder(ctx)
    shape = [n // row, row] if op in ("softmax", "layerNorm") else [n]
    desc = {"dataType": "float32", "shape": shape}
    x = b.input("a", desc)
    ins = ["a"]
    if op == "add":
        y = b.add(x, b.input("b", desc))
        ins.append("b")
    elif op == "copy":
        y = b.identity(x)
    elif op == "softmax":
        y = b.softmax(x, 1)
    elif op == "layerNorm":
        y = b.layerNormalization(x, {"axes": [1]})
    else:
        y = getattr(b, op)(x)
    return b.build({"y": y}), shape, ins


def onnx_model(op, shape, ins):
    from onnx import TensorProto, helper
    name = {"copy": "Identity", "relu": "Relu", "add": "Add", "sigmoid": "Sigmoid",
            "tanh": "Tanh", "gelu": "Gelu", "exp": "Exp", "log": "Log", "erf": "Erf",
            "elu": "Elu", "softplus": "Softplus", "softsign": "Softsign",
            "softmax": "Softmax", "layerNorm": "LayerNormalization"}[op]
    attrs = {}
    inputs = list(ins)
    inits = []
    if op == "softmax":
        attrs["axis"] = 1
    if op == "layerNorm":
        attrs["axis"] = 1
        attrs["epsilon"] = 1e-5
        inits.append(helper.make_tensor("scale", TensorProto.FLOAT, [shape[1]],
                                        np.ones(shape[1], np.float32)))
        inputs.append("scale")
    node = helper.make_node(name, inputs, ["y"], **attrs)
    g = helper.make_graph([node], op,
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in ins],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
                          initializer=inits)
    opset = 20 if op == "gelu" else 17
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def ort_fn(model, inputs, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    bind = sess.io_binding()
    for name, a in inputs.items():
        bind.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(a))
    out = np.empty(inputs["a"].shape, np.float32)
    bind.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_numpy(out))
    return lambda: sess.run_with_iobinding(bind)


def numpy_fn(op, a, c, out):
    erf = None
    try:
        from scipy.special import erf
    except ImportError:
        pass
    if op == "copy":
        return lambda: np.copyto(out, a)
    if op == "relu":
        return lambda: np.maximum(a, np.float32(0), out=out)
    if op == "add":
        return lambda: np.add(a, c, out=out)
    if op == "sigmoid":
        def f():
            np.negative(a, out=out)
            np.exp(out, out=out)
            np.add(out, np.float32(1), out=out)
            np.reciprocal(out, out=out)
        return f
    if op in ("tanh", "exp"):
        return lambda: getattr(np, op)(a, out=out)
    if op == "log":
        return lambda: np.log(np.abs(a, out=out), out=out)
    if op == "softsign":
        return lambda: np.divide(a, 1 + np.abs(a), out=out)
    if op == "softplus":
        return lambda: np.logaddexp(a, np.float32(0), out=out)
    if op == "elu":
        return lambda: np.copyto(out, np.where(a > 0, a, np.expm1(a)))
    if op in ("erf", "gelu") and erf is not None:
        if op == "erf":
            return lambda: erf(a, out=out)
        return lambda: np.multiply(a * np.float32(0.5), 1 + erf(a * np.float32(0.70710678)), out=out)
    if op == "softmax":
        def f():
            m = a.max(axis=1, keepdims=True)
            np.subtract(a, m, out=out)
            np.exp(out, out=out)
            np.divide(out, out.sum(axis=1, keepdims=True), out=out)
        return f
    if op == "layerNorm":
        def f():
            m = a.mean(axis=1, keepdims=True)
            v = a.var(axis=1, keepdims=True)
            np.subtract(a, m, out=out)
            np.multiply(out, 1 / np.sqrt(v + 1e-5), out=out)
        return f
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=16 * 1024 * 1024)
    ap.add_argument("--row", type=int, default=768, help="row length of softmax / layerNorm")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--only", default=",".join(OPS))
    ap.add_argument("--no-ort", action="store_true")
    a = ap.parse_args()
    ctx = webnn.ml.create_context(device_type="cpu")
    n = a.n - a.n % a.row
    rng = np.random.default_rng(1)
    load0 = os.getloadavg()
    print(f"n = {n} float32 ({n * 4 / 2**20:.0f} MiB per operand), threads {a.threads}, "
          f"runs {a.runs} x {a.k} calls; load average before: {load0[0]:.2f} {load0[1]:.2f}")
    hdr = (f"{'op':<10} {'kernel':>23} {'disp+read':>23} {'memcpy':>23} {'numpy':>23} "
           f"{'ORT':>23} {'kern/mcpy':>9} {'np/kern':>8} {'ORT/kern':>8} {'ORT/d+r':>8}")
    print("ms min/med/max per call")
    print(hdr)
    print("-" * len(hdr))
    for op in a.only.split(","):
        g, shape, ins = build(ctx, op, n, a.row)
        arrs = {"a": rng.standard_normal(shape).astype(np.float32)}
        if op == "log":
            arrs["a"] = np.abs(arrs["a"])
        if "b" in ins:
            arrs["b"] = rng.standard_normal(shape).astype(np.float32)
        tin = {}
        for name, v in arrs.items():
            t = ctx.create_tensor({"dataType": "float32", "shape": shape, "writable": True})
            ctx.write_tensor(t, v)
            tin[name] = t
        tout = ctx.create_tensor({"dataType": "float32", "shape": shape, "readable": True})
        out = np.empty(shape, np.float32)
        k = a.k

        def disp_read():
            ctx.dispatch(g, tin, {"y": tout})
            ctx.read_tensor(tout, out)

        def disp_k():
            for _ in range(k):
                ctx.dispatch(g, tin, {"y": tout})
            ctx.read_tensor(tout, out)

        def read():
            ctx.read_tensor(tout, out)

        t_dr = timed(disp_read, k, a.runs)
        t_dk = timed(disp_k, 1, a.runs)
        t_rd = timed(read, k, a.runs)
        rd = med(t_rd)
        t_kern = [(t - rd) / k for t in t_dk]
        # bandwidth floor: the same bytes read and written
        src = arrs["a"]
        dst = np.empty_like(src)
        if "b" in ins:
            t_mc = timed(lambda: np.add(src, arrs["b"], out=dst), k, a.runs)
        else:
            t_mc = timed(lambda: np.copyto(dst, src), k, a.runs)
        nf = numpy_fn(op, arrs["a"], arrs.get("b"), dst)
        t_np = timed(nf, k, a.runs) if nf else []
        t_ort = []
        if not a.no_ort:
            try:
                t_ort = timed(ort_fn(onnx_model(op, shape, ins), arrs, a.threads), k, a.runs)
            except Exception as e:  # noqa: BLE001 (an op this ORT lacks)
                print(f"  ({op}: ORT failed: {str(e).splitlines()[0][:80]})")
        kk = med(t_kern)
        print(f"{op:<10} {fmt(t_kern):>23} {fmt(t_dr):>23} {fmt(t_mc):>23} {fmt(t_np):>23} "
              f"{fmt(t_ort):>23} {kk / med(t_mc):9.2f} {med(t_np) / kk:8.2f} "
              f"{med(t_ort) / kk:8.2f} {med(t_ort) / med(t_dr):8.2f}")
        sys.stdout.flush()
    load1 = os.getloadavg()
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f}")


if __name__ == "__main__":
    main()
