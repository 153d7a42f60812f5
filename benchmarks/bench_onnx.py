"""ONNX models: webnn.onnx against ONNX Runtime (CPU execution provider) in
the same process, on the same inputs.

    python benchmarks/bench_onnx.py [--repeats N] [--threads T]

Models: the light_* files the onnx package ships (their weights are constant
fills, their compute is the real networks') and MobileNetV2 with its trained
weights, exported from examples/zoo.  Prints load+compile time, median
latency of each, their ratio, and the largest difference between the two."""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402


def _median(fn, repeats):
    for _ in range(3):  # constants prepared, caches and pages warm
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def models(folder):
    light = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    for name in ("light_squeezenet", "light_shufflenet", "light_resnet50", "light_inception_v1",
                 "light_densenet121"):
        yield name, os.path.join(light, name + ".onnx")
    from zoo import mobilenetv2
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"features": mobilenetv2.build(b, mobilenetv2.load_weights())})
    path = os.path.join(folder, "mobilenetv2.onnx")
    onnx.save(webnn.onnx.export(g), path)
    yield "mobilenetv2 (exported)", path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--threads", type=int, default=0, help="ORT intra-op threads (0: its default)")
    args = p.parse_args()
    ctx = webnn.ml.create_context()
    print(f"{'model':26} {'load webnn':>11} {'run webnn':>10} {'run ORT':>10} {'ratio':>6} "
          f"{'max |diff|':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for name, path in models(folder):
            t0 = time.perf_counter()
            m = webnn.onnx.load(path, context=ctx)
            t_load = time.perf_counter() - t0
            (iname, (dt, shape)), = m.inputs.items()
            x = np.random.default_rng(0).random(shape, dtype=np.float32)
            so = ort.SessionOptions()
            if args.threads:
                so.intra_op_num_threads = args.threads
            sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
            ours = m.run({iname: x})
            theirs = sess.run(None, {iname: x})
            diff = max(float(np.max(np.abs(a - b))) for a, b in zip(ours.values(), theirs))
            t_w = _median(lambda: m.run({iname: x}), args.repeats)
            t_o = _median(lambda: sess.run(None, {iname: x}), args.repeats)
            print(f"{name:26} {t_load * 1e3:9.0f}ms {t_w * 1e3:8.2f}ms {t_o * 1e3:8.2f}ms "
                  f"{t_w / t_o:6.2f} {diff:10.2g}")


if __name__ == "__main__":
    main()
