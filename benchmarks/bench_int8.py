"""Quantized (QDQ) conv2d and matmul: webnn's integer step against webnn's
float run of the same layer and against ONNX Runtime on the equivalent QDQ
ONNX model, in one process, interleaved.

    python benchmarks/bench_int8.py [--rounds 30] [--threads 2] [--only conv3x3_56,...]

Each layer is built by hand as a WebNN graph in the QDQ pattern the CPU
runs in integer arithmetic (csrc/compiler/fuse_qdq.c, csrc/cpu/qdq.c):

    dequantizeLinear(x: uint8) , dequantizeLinear(w: int8 constant, per
    output channel) -> conv2d (nhwc) / matmul -> add(bias) -> relu ->
    quantizeLinear(-> uint8)

and timed three ways, one dispatch of each per round, alternating:
  - int8:   that graph (its summary says "(int8)");
  - float:  the float32 layer webnn would run without quantization (float
            input, the dequantized weights as float32 constants, conv2d /
            matmul -> add -> relu, float32 output);
  - ORT:    onnxruntime on the same QDQ pattern as an ONNX model built with
            onnx.helper (opset 13: DequantizeLinear per axis, Conv (nchw) /
            MatMul, Add, Relu, QuantizeLinear), ORT_ENABLE_ALL (which turns
            it into QLinearConv / QLinearMatMul), the same data.
The outputs of int8 and ORT are compared (largest difference in steps).
Columns: min / median / max ms, float / int8 and ORT / int8 ratios of the
medians and, in parentheses, of the minima (> 1: the integer step is
faster; on a shared machine the minima are the steadier figure).  webnn's
time is ctx.compute() (output allocated per call), ORT's session.run().  Above: the CPU, the instruction-set level of
the integer kernels (WEBNN_CPU_ISA caps it), threads and load average.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

LAYERS = {
    # name: (kind, geometry)
    "conv3x3_56": ("conv", dict(H=56, W=56, C=64, O=64, K=3)),
    "conv1x1_56": ("conv", dict(H=56, W=56, C=64, O=256, K=1)),
    "conv3x3_28": ("conv", dict(H=28, W=28, C=128, O=128, K=3)),
    "conv3x3_14": ("conv", dict(H=14, W=14, C=256, O=256, K=3)),
    "matmul_768": ("matmul", dict(M=128, K=768, N=768)),
    "matmul_3072": ("matmul", dict(M=128, K=768, N=3072)),
}


def make_data(kind, g, rng):
    if kind == "conv":
        x = rng.integers(0, 256, (1, g["H"], g["W"], g["C"])).astype(np.uint8)
        w = rng.integers(-127, 128, (g["O"], g["K"], g["K"], g["C"])).astype(np.int8)  # ohwi
        O, K = g["O"], g["K"] * g["K"] * g["C"]
    else:
        x = rng.integers(0, 256, (g["M"], g["K"])).astype(np.uint8)
        w = rng.integers(-127, 128, (g["K"], g["N"])).astype(np.int8)
        O, K = g["N"], g["K"]
    sx, zx = np.float32(0.02), np.uint8(120)
    sw = rng.uniform(0.5, 1.5, O).astype(np.float32) / np.float32(127 * np.sqrt(K))
    b32 = rng.integers(-2000, 2000, O).astype(np.int32)
    sy, zy = np.float32(0.01), np.uint8(0)
    return dict(x=x, w=w, sx=sx, zx=zx, sw=sw, b32=b32, sy=sy, zy=zy, O=O)


def webnn_graphs(webnn, ctx, kind, g, d):
    """the QDQ graph and the float graph of one layer"""
    def const(b, a):
        a = np.ascontiguousarray(a)
        return b.constant({"dataType": str(a.dtype), "shape": list(a.shape)}, a)

    bscale = (np.float64(d["sx"]) * d["sw"].astype(np.float64)).astype(np.float32)
    bias_f = (d["b32"].astype(np.float64) * bscale).astype(np.float32)
    wsh = (d["O"], 1, 1, 1) if kind == "conv" else (1, d["O"])
    opts = {"inputLayout": "nhwc", "filterLayout": "ohwi",
            "padding": [g["K"] // 2] * 4} if kind == "conv" else None
    r = d["x"].ndim
    # QDQ
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "uint8", "shape": list(d["x"].shape)})
    dx = b.dequantize_linear(x, const(b, np.full([1] * r, d["sx"])), const(b, np.full([1] * r, d["zx"])))
    dw = b.dequantize_linear(const(b, d["w"]), const(b, d["sw"].reshape(wsh)),
                             const(b, np.zeros(wsh, np.int8)))
    db = b.dequantize_linear(const(b, d["b32"]), const(b, bscale), const(b, np.zeros(d["O"], np.int32)))
    y = b.conv2d(dx, dw, dict(opts, bias=db)) if kind == "conv" else b.add(b.matmul(dx, dw), db)
    y = b.quantize_linear(b.relu(y), const(b, np.full([1] * r, d["sy"])), const(b, np.full([1] * r, d["zy"])))
    gq = b.build({"y": y})
    # float
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": list(d["x"].shape)})
    wf = (d["w"].astype(np.float64) * d["sw"].reshape(wsh)).astype(np.float32)
    y = (b.conv2d(x, const(b, wf), dict(opts, bias=const(b, bias_f))) if kind == "conv"
         else b.add(b.matmul(x, const(b, wf)), const(b, bias_f)))
    gf = b.build({"y": b.relu(y)})
    xf = ((d["x"].astype(np.float32) - np.float32(d["zx"])) * d["sx"]).astype(np.float32)
    return gq, gf, xf


def ort_session(ort, kind, g, d, threads):
    from onnx import TensorProto, helper, numpy_helper
    init = [numpy_helper.from_array(np.array(d["sx"], np.float32), "sx"),
            numpy_helper.from_array(np.array(d["zx"], np.uint8), "zx"),
            numpy_helper.from_array(d["sw"], "sw"),
            numpy_helper.from_array(np.zeros(d["O"], np.int8), "zw"),
            numpy_helper.from_array(d["b32"], "b32"),
            numpy_helper.from_array((np.float64(d["sx"]) * d["sw"]).astype(np.float32), "sb"),
            numpy_helper.from_array(np.zeros(d["O"], np.int32), "zb"),
            numpy_helper.from_array(np.array(d["sy"], np.float32), "sy"),
            numpy_helper.from_array(np.array(d["zy"], np.uint8), "zy")]
    if kind == "conv":
        xs = [1, g["C"], g["H"], g["W"]]
        init.append(numpy_helper.from_array(np.ascontiguousarray(d["w"].transpose(0, 3, 1, 2)), "w"))
        p = g["K"] // 2
        nodes = [helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["dw"], axis=0),
                 helper.make_node("DequantizeLinear", ["b32", "sb", "zb"], ["db"], axis=0),
                 helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["dx"]),
                 helper.make_node("Conv", ["dx", "dw", "db"], ["c"], pads=[p] * 4),
                 helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"])]
    else:
        xs = list(d["x"].shape)
        init.append(numpy_helper.from_array(d["w"], "w"))
        nodes = [helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["dw"], axis=1),
                 helper.make_node("DequantizeLinear", ["b32", "sb", "zb"], ["db"], axis=0),
                 helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["dx"]),
                 helper.make_node("MatMul", ["dx", "dw"], ["m"]),
                 helper.make_node("Add", ["m", "db"], ["c"]),
                 helper.make_node("Relu", ["c"], ["r"]),
                 helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.UINT8, xs)],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    xo = np.ascontiguousarray(d["x"].transpose(0, 3, 1, 2)) if kind == "conv" else d["x"]
    return sess, xo


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    os.environ.setdefault("WEBNN_NUM_THREADS", str(a.threads))
    import onnxruntime as ort
    import webnn
    from webnn import _core  # noqa: F401
    ctx = webnn.ml.create_context()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "?")
    flags = open("/proc/cpuinfo").read()
    isa = os.environ.get("WEBNN_CPU_ISA", "avx512")
    level = ("AVX-512 VNNI" if isa == "avx512" and "avx512_vnni" in flags else
             "AVX2" if isa in ("avx512", "avx2") and "avx2" in flags else "portable")
    print(f"CPU: {cpu}; integer kernels: {level}; threads {a.threads}; "
          f"load average {os.getloadavg()[0]:.2f} (a shared machine: other jobs run)")
    rng = np.random.default_rng(0)
    names = [n for n in LAYERS if not a.only or n in a.only.split(",")]
    rows = []
    for name in names:
        kind, g = LAYERS[name]
        d = make_data(kind, g, rng)
        gq, gf, xf = webnn_graphs(webnn, ctx, kind, g, d)
        assert "(int8)" in str(gq.summary()), "the QDQ layer did not fuse"
        sess, xo = ort_session(ort, kind, g, d, a.threads)
        yq = ctx.compute(gq, {"x": d["x"]})["y"]
        yo = sess.run(None, {"x": xo})[0]
        if kind == "conv":
            yo = yo.transpose(0, 2, 3, 1)
        steps = int(np.abs(yq.astype(np.int32) - yo.astype(np.int32)).max())
        fx = {"x": xf}
        qx = {"x": d["x"]}
        ox = {"x": xo}
        for _ in range(3):
            ctx.compute(gq, qx), ctx.compute(gf, fx), sess.run(None, ox)
        tq, tf, to = [], [], []
        for _ in range(a.rounds):
            tq.append(timed(lambda: ctx.compute(gq, qx)))
            tf.append(timed(lambda: ctx.compute(gf, fx)))
            to.append(timed(lambda: sess.run(None, ox)))
        rows.append((name, tq, tf, to, steps))

    def mmm(t):
        return f"{min(t):7.3f} {statistics.median(t):7.3f} {max(t):7.3f}"

    print(f"{'layer':12} | {'webnn int8 min/med/max ms':25} | {'webnn float32':25} | "
          f"{'ORT QDQ':25} | float/int8 med (min) | ORT/int8 med (min) | max diff vs ORT")
    for name, tq, tf, to, steps in rows:
        mq = statistics.median(tq)
        rf = f"{statistics.median(tf) / mq:.2f} ({min(tf) / min(tq):.2f})"
        ro = f"{statistics.median(to) / mq:.2f} ({min(to) / min(tq):.2f})"
        print(f"{name:12} | {mmm(tq):25} | {mmm(tf):25} | {mmm(to):25} | "
              f"{rf:20} | {ro:18} | {steps} step(s)")


if __name__ == "__main__":
    main()
