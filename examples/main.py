"""The main job (README: `make demo`): real models end to end on the default
backend.

1. LeNet (../data/lenet): classifies the ten MNIST digits, printing each
   prediction and its probability.
2. MobileNetV2 backbone (../data/mobilenetv2): extracts the 1280-wide feature
   vector of the red-panda photo, printing a summary and the latency, and
   checks it against a float64 NumPy run of the same network.
3. ONNX (examples/onnx_models.py): MobileNetV2 exported to an .onnx file and
   imported back with webnn.onnx (checked against ONNX Runtime), and the
   ResNet-50 ONNX file shipped in the onnx package.

Exits non-zero if a digit is misclassified or the features disagree."""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import webnn  # noqa: E402
from zoo import lenet, mobilenetv2  # noqa: E402


def run_lenet(ctx: webnn.MLContext) -> bool:
    w = lenet.load_weights()
    b = webnn.MLGraphBuilder(ctx)
    logits, probs = lenet.build(b, w)
    graph = b.build({"probabilities": probs})
    print("LeNet (MNIST):")
    ok = 0
    for digit in range(10):
        x = lenet.load_digit(digit)
        p = ctx.compute(graph, {"input": x})["probabilities"][0]
        pred = int(np.argmax(p))
        ok += pred == digit
        print(f"  {digit}.idx -> predicted {pred}  (p = {p[pred]:.4f})"
              f"{'' if pred == digit else '   WRONG'}")
    print(f"  {ok}/10 digits classified correctly")
    return ok == 10


def run_mobilenet(ctx: webnn.MLContext, repeats: int = 10) -> bool:
    w = mobilenetv2.load_weights()
    x = mobilenetv2.load_image()
    b = webnn.MLGraphBuilder(ctx)
    features = mobilenetv2.build(b, w)
    t0 = time.perf_counter()
    graph = b.build({"features": features})
    t_build = time.perf_counter() - t0
    tx = ctx.create_tensor({"dataType": "float32", "shape": list(x.shape), "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [1, 1280], "readable": True})
    out = np.empty((1, 1280), np.float32)
    ctx.write_tensor(tx, x)
    times = []
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        ctx.dispatch(graph, {"input": tx}, {"features": ty})
        ctx.read_tensor(ty, out)
        times.append(time.perf_counter() - t0)
    ref = mobilenetv2.reference(w, x)
    err = float(np.max(np.abs(out - ref)))
    scale = float(np.max(np.abs(ref)))
    f = out[0]
    print("MobileNetV2 backbone (test.jpg, 1x3x224x224):")
    print(f"  features: shape {out.shape}, mean {f.mean():.5f}, std {f.std():.5f}, "
          f"min {f.min():.5f}, max {f.max():.5f}, nonzero {np.count_nonzero(f)}")
    print(f"  first 8: {np.array2string(f[:8], precision=4)}")
    print(f"  top channels: {np.argsort(f)[::-1][:5].tolist()}")
    print(f"  build {t_build * 1e3:.1f} ms; latency median {statistics.median(times[1:]) * 1e3:.2f} ms, "
          f"first {times[0] * 1e3:.2f} ms (batch 1, {ctx.device_type})")
    print(f"  max |webnn - float64 NumPy| = {err:.3g} (features up to {scale:.3g})")
    return err <= 1e-3 * max(1.0, scale)


def main() -> None:
    ctx = webnn.ml.create_context()
    print(f"webnn {webnn.__version__}: context device_type={ctx.device_type} "
          f"accelerated={ctx.accelerated}\n")
    ok = run_lenet(ctx)
    print()
    ok = run_mobilenet(ctx) and ok
    print()
    import onnx_models
    ok = onnx_models.main() and ok
    if not ok:
        raise SystemExit("FAILED")
    print("\nOK")


if __name__ == "__main__":
    main()
