"""int8 models as people make them: a torchvision ResNet-18 exported with
torch.onnx.export (random weights, seeded; nothing is downloaded) and
quantized with onnxruntime.quantization.quantize_static (QDQ format,
per-channel int8 weights, uint8 activations, calibrated on random images),
run by webnn and by ONNX Runtime on the same files, int8 and float, in one
process, interleaved round by round.

    pip install .[bench]          # torch, torchvision, onnxruntime
    python benchmarks/bench_int8_models.py [--rounds 20] [--threads 2]
        [--cache build/int8-models] [--only resnet18,bert]

And BERT-base (bench_families' export) quantized the same way, every MatMul
(per-tensor weights). The table: min / median / max ms of each runtime on
the int8 and the float model, ORT int8 / webnn int8 (> 1: webnn faster),
webnn float / webnn int8 (> 1: int8 faster), how many of webnn's steps ran
in integer arithmetic (summary's "(int8)" chains), the largest difference
from ONNX Runtime's int8 output relative to the output's largest value, and
the same between ONNX Runtime's int8 and float outputs (the quantization's
own error, for scale).  Above it: the CPU,
the ISA level of webnn's kernels and the machine's load.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import webnn  # noqa: E402
import webnn.onnx  # noqa: E402


def export_resnet18(folder):
    """(float path, int8 path), made once per torch / onnxruntime version"""
    import torch
    import torchvision
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    os.makedirs(folder, exist_ok=True)
    tag = f"torch{torch.__version__.split('+')[0]}-ort{ort.__version__}"
    fp = os.path.join(folder, f"resnet18-{tag}.onnx")
    qp = os.path.join(folder, f"resnet18-int8-{tag}.onnx")
    if not os.path.exists(fp):
        torch.manual_seed(0)
        m = torchvision.models.resnet18(weights=None).eval()
        torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), fp + ".tmp", input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False)
        os.replace(fp + ".tmp", fp)
    if not os.path.exists(qp):
        class Images(CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(0)
                self.it = iter([{"x": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
                                for _ in range(8)])

            def get_next(self):
                return next(self.it, None)
        quantize_static(fp, qp + ".tmp", Images(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        os.replace(qp + ".tmp", qp)
    return fp, qp


def export_bert(folder):
    """BERT-base (bench_families' export, sequence 128) and its int8 QDQ
    version: quantize_static of every MatMul (per-tensor int8 weights, uint8
    activations), calibrated on random token ids"""
    import bench_families
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    fp, feeds = bench_families.export("bert", os.path.join(ROOT, "build", "bench-families"))
    qp = os.path.join(folder, os.path.basename(fp).replace("bert-", "bert-int8-"))
    if not os.path.exists(qp):
        class Tokens(CalibrationDataReader):
            def __init__(self):
                rng = np.random.default_rng(0)
                self.it = iter([{"input_ids": rng.integers(0, 30522, (1, 128)).astype(np.int64),
                                 "attention_mask": np.ones((1, 128), np.int64)}
                                for _ in range(8)])

            def get_next(self):
                return next(self.it, None)
        os.makedirs(folder, exist_ok=True)
        quantize_static(fp, qp + ".tmp", Tokens(), quant_format=QuantFormat.QDQ,
                        per_channel=False, activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
        os.replace(qp + ".tmp", qp)
    return fp, qp, feeds


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def row(ctx, name, fp, qp, feeds, args):
    """one model: the four runtimes interleaved, one table row"""
    wq, wf = webnn.onnx.load(qp, ctx), webnn.onnx.load(fp, ctx)
    oq, of = ort_session(qp, args.threads), ort_session(fp, args.threads)
    first = lambda d: next(iter(d.values()))   # noqa: E731
    runs = {"webnn int8": lambda: first(wq.run(feeds)),
            "ORT int8": lambda: oq.run(None, feeds)[0],
            "webnn float": lambda: first(wf.run(feeds)),
            "ORT float": lambda: of.run(None, feeds)[0]}
    outs = {k: fn() for k, fn in runs.items()}
    for fn in runs.values():  # warm: packed weights, caches
        fn()
    times = {k: [] for k in runs}
    for _ in range(args.rounds):
        for k, fn in runs.items():
            # the previous runtime's spinning worker threads (ORT's) must
            # not share the 2 cores with this one: a short idle pause lets
            # them go to sleep first (as bench_peers.py does)
            time.sleep(0.2)
            t0 = time.perf_counter()
            fn()
            times[k].append((time.perf_counter() - t0) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    n_int8 = str(wq.graph.summary()).count("(int8)")

    def mmm(v):
        return f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
    print(f"| {name} | {mmm(times['webnn int8'])} | {mmm(times['ORT int8'])} "
          f"| {mmm(times['webnn float'])} | {mmm(times['ORT float'])} "
          f"| {med['ORT int8'] / med['webnn int8']:.2f} "
          f"| {med['webnn float'] / med['webnn int8']:.2f} | {n_int8} "
          f"| {rel(outs['webnn int8'], outs['ORT int8']):.1e} "
          f"| {rel(outs['ORT int8'], outs['ORT float']):.1e} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cache", default=os.path.join(ROOT, "build", "int8-models"))
    p.add_argument("--only", default="resnet18,bert",
                   help="comma-separated rows: resnet18, bert")
    args = p.parse_args()
    only = set(args.only.split(","))
    os.environ.setdefault("WEBNN_NUM_THREADS", str(args.threads))
    from bench_families import machine   # (the same CPU and ISA line)
    cpu, isa, load = machine()
    print(f"CPU: {cpu}; webnn kernels: {isa}; threads: {args.threads}; "
          f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"onnxruntime {ort.__version__}; {args.rounds} interleaved rounds\n")
    print("| model | webnn int8 ms | ORT int8 ms | webnn float ms | ORT float ms "
          "| ORT int8 / webnn int8 | webnn float / webnn int8 | int8 steps "
          "| max rel diff vs ORT int8 | ORT int8 vs ORT float |")
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|")
    ctx = webnn.ml.create_context(device_type="cpu")
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    if "resnet18" in only:
        fp, qp = export_resnet18(args.cache)
        row(ctx, "ResNet-18 QDQ, 224", fp, qp, {"x": x}, args)
    if "bert" in only:
        fp, qp, feeds = export_bert(args.cache)
        row(ctx, "BERT-base QDQ (MatMul), seq 128", fp, qp, feeds, args)
    load = os.getloadavg()
    print(f"\nload average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
