"""ONNX models end to end (part of `make demo`; also runs alone:
python examples/onnx_models.py).

1. MobileNetV2 (the trained network of examples/zoo, weights in
   examples/data/mobilenetv2) is exported to an .onnx file with
   webnn.onnx.export, imported back with webnn.onnx.load, and run on the
   red-panda photo: its features must equal the hand-built graph's, and ONNX
   Runtime running the same file must agree.
2. ResNet-50 as the onnx package ships it (light_resnet50.onnx, an ONNX file
   made by Caffe2's exporter, opset 9) is loaded and run, and compared with
   the output the onnx package stores beside it.

Returns False (exits non-zero alone) when a check fails."""
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import webnn  # noqa: E402


def run_mobilenet_onnx(ctx: webnn.MLContext, folder: str) -> bool:
    import onnx
    import webnn.onnx
    from zoo import mobilenetv2
    w = mobilenetv2.load_weights()
    x = mobilenetv2.load_image()
    b = webnn.MLGraphBuilder(ctx)
    graph = b.build({"features": mobilenetv2.build(b, w)})
    direct = ctx.compute(graph, {"input": x})["features"]
    path = os.path.join(folder, "mobilenetv2.onnx")
    onnx.save(webnn.onnx.export(graph), path)
    t0 = time.perf_counter()
    m = webnn.onnx.load(path, context=ctx)
    t_load = time.perf_counter() - t0
    times = []
    for _ in range(6):
        t0 = time.perf_counter()
        out = m.run({"input": x})["features"]
        times.append(time.perf_counter() - t0)
    same = np.array_equal(out, direct)
    print(f"MobileNetV2 -> {os.path.basename(path)} ({os.path.getsize(path) / 1e6:.1f} MB, "
          f"{len(onnx.load(path, load_external_data=False).graph.node)} ONNX nodes) -> "
          f"webnn.onnx.load:")
    print(f"  load+compile {t_load * 1e3:.0f} ms, run median {statistics.median(times[1:]) * 1e3:.1f} ms; "
          f"features equal to the hand-built graph's: {same}")
    ok = same
    try:
        import onnxruntime as ort   # no type information: its calls are Any
    except ImportError:
        print("  (onnxruntime not installed: no comparison)")
        return ok
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ref = sess.run(None, {"input": x})[0]
    err = float(np.max(np.abs(ref - out)))
    print(f"  ONNX Runtime on the same file: max |difference| {err:.3g}; top channels "
          f"webnn {np.argsort(out[0])[::-1][:3].tolist()}, ORT {np.argsort(ref[0])[::-1][:3].tolist()}")
    return ok and err <= 1e-3 * max(1.0, float(np.max(np.abs(ref))))


def run_shipped_resnet(ctx: webnn.MLContext) -> bool:
    import onnx
    from onnx import numpy_helper
    import webnn.onnx
    folder = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    path = os.path.join(folder, "light_resnet50.onnx")
    t0 = time.perf_counter()
    m = webnn.onnx.load(path, context=ctx)
    t_load = time.perf_counter() - t0
    (name, (dt, shape)), = m.inputs.items()
    n = int(np.prod(shape))
    x = (np.arange(n).reshape(shape) / n).astype(np.float32)   # the suite's input
    t0 = time.perf_counter()
    out = m.run({name: x})
    t_run = time.perf_counter() - t0
    (oname, y), = out.items()
    expected = numpy_helper.to_array(onnx.load_tensor(os.path.join(folder,
                                                                   "light_resnet50_output_0.pb")))
    err = float(np.max(np.abs(y - expected)))
    print(f"light_resnet50.onnx (shipped in the onnx package, opset 9, "
          f"{len(m.model_proto.graph.node)} nodes):")
    print(f"  {name} {dt}{list(shape)} -> {oname} {list(y.shape)}; load+compile "
          f"{t_load * 1e3:.0f} ms, run {t_run * 1e3:.0f} ms; max |difference| from the stored "
          f"output {err:.3g}")
    return err <= 1e-5


def main() -> bool:
    try:
        import onnx  # noqa: F401
    except ImportError:
        print("ONNX: the onnx package is not installed (pip install webnn[onnx]); skipped")
        return True
    ctx = webnn.ml.create_context()
    with tempfile.TemporaryDirectory() as folder:
        ok = run_mobilenet_onnx(ctx, folder)
    print()
    ok = run_shipped_resnet(ctx) and ok
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
