"""Load + compile time of ONNX files: webnn.onnx.load (parse, check, import,
build) against ONNX Runtime's InferenceSession creation (CPU provider, the
default graph optimizations), each the median of n runs in this process,
with the ratio (issue 31's target: webnn within 1.5x of ONNX Runtime).

    python benchmarks/bench_onnx_load.py model.onnx [...] [-n 3] [--profile]
"""
import argparse
import cProfile
import pstats
import statistics
import sys
import time

import webnn
import webnn.onnx


def _time(fn, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="cProfile one webnn load")
    args = ap.parse_args()
    import onnxruntime as ort
    ctx = webnn.ml.create_context(device_type="cpu")
    print(f"{'model':28s} {'webnn s':>9s} {'ORT s':>9s} {'ratio':>7s}")
    for path in args.models:
        if args.profile:
            pr = cProfile.Profile()
            pr.enable()
            webnn.onnx.load(path, ctx)
            pr.disable()
            pstats.Stats(pr, stream=sys.stdout).sort_stats("cumulative").print_stats(25)
        w = _time(lambda: webnn.onnx.load(path, ctx), args.n)
        o = _time(lambda: ort.InferenceSession(path, providers=["CPUExecutionProvider"]), args.n)
        print(f"{path.rsplit('/', 1)[-1]:28s} {w:9.3f} {o:9.3f} {w / o:7.2f}", flush=True)


if __name__ == "__main__":
    main()
