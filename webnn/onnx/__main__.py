"""Run an ONNX model with webnn:

    python -m webnn.onnx model.onnx [--input-shape x=1,3,224,224] [--device cpu|gpu]
                                    [--bench N] [--profile N] [--compare-onnxruntime]
                                    [--input x=data.npy] [--seed S]

Prints the model's inputs and outputs, runs it once on random inputs (or the
given .npy files), with --bench N the latency over N more runs (min and
median, a progress bar on long runs), with --profile N the time of every
step of the compiled graph over N runs (the ONNX nodes' names as labels, a
fused chain as one row; CPU), and with --compare-onnxruntime the largest
difference of each output from ONNX Runtime's."""
import argparse
import statistics
import sys
import time

import numpy as np

import webnn
import webnn.onnx


def _shape_arg(text):
    name, _, dims = text.partition("=")
    if not name or not dims:
        raise argparse.ArgumentTypeError(f"expected NAME=D1,D2,... got {text!r}")
    values = [int(d) for d in dims.replace("x", ",").split(",") if d]
    return name, values


def _input_arg(text):
    name, _, path = text.partition("=")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE.npy, got {text!r}")
    return name, path


def _random(dt, shape, rng):
    dtype = webnn.DATA_TYPES[dt]
    if dtype.kind == "f":
        return rng.random(shape, dtype=np.float32).astype(dtype)
    return rng.integers(0, 10, size=shape).astype(dtype)


def _safe(text):
    """Model-controlled text made printable: control characters (terminal
    escape sequences included) and line breaks shown as escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in str(text))


def _fmt(shape):
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _bar(done, total, width=30):
    filled = int(width * done / total)
    return f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m webnn.onnx", description=(
        "Run an ONNX model with webnn: print its inputs and outputs, time it, compare it "
        "with ONNX Runtime."))
    p.add_argument("model", help="an .onnx file")
    p.add_argument("--input-shape", action="append", type=_shape_arg, default=[],
                   metavar="NAME=D1,D2,...",
                   help="fix an input's shape (or a dim_param: N=8); repeatable")
    p.add_argument("--input", action="append", type=_input_arg, default=[],
                   metavar="NAME=FILE.npy", help="feed an input from a .npy file; repeatable")
    p.add_argument("--device", choices=("cpu", "gpu"), default=None,
                   help="the context's device (default: the GPU when usable, else the CPU)")
    p.add_argument("--bench", type=int, default=0, metavar="N",
                   help="time N runs after the first (min / median latency)")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="time every step of the compiled graph over N runs (CPU)")
    p.add_argument("--compare-onnxruntime", action="store_true",
                   help="also run ONNX Runtime and print the largest difference per output")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    args = p.parse_args(argv)
    try:
        return _run(p, args)
    except (TypeError, ValueError, OSError, MemoryError, webnn.NotSupportedError,
            webnn.DataError, webnn.OperationError) as e:
        # one line, whatever the model or input: no traceback
        print(f"error: {_safe(type(e).__name__)}: {_safe(e)}", file=sys.stderr)
        return 2


def _run(p, args):
    try:
        ctx = webnn.ml.create_context(device_type=args.device) if args.device else \
            webnn.ml.create_context()
    except webnn.NotSupportedError as e:
        print(f"--device {args.device}: {e}", file=sys.stderr)
        return 2
    import onnx
    try:
        proto = onnx.load(args.model, load_external_data=False)   # names only
    except OSError:
        raise
    except Exception as e:  # protobuf's DecodeError
        raise TypeError(f"{args.model!r} is not an ONNX model: {e}") from None
    input_names = {i.name for i in proto.graph.input} - {t.name for t in proto.graph.initializer}
    fixed = {}   # an input's shape, or (one number, a name that is no input) a dim_param
    for name, dims in args.input_shape:
        if name in input_names:
            fixed[name] = dims
        elif len(dims) == 1:
            fixed[name] = dims[0]
        else:
            p.error(f"--input-shape: {_safe(repr(name))} is not an input of the model")

    t0 = time.perf_counter()
    try:
        model = webnn.onnx.load(args.model, context=ctx, input_shapes=fixed)
    except webnn.NotSupportedError as e:
        print(f"not supported: {_safe(e)}", file=sys.stderr)
        return 2
    t_load = time.perf_counter() - t0
    print(f"{_safe(args.model)}: loaded and compiled in {t_load * 1e3:.1f} ms on "
          f"{ctx.device_type} (opset {max((i.version for i in proto.opset_import if i.domain in ('', 'ai.onnx')), default=0)})")
    print("inputs:")
    for name, (dt, shape) in model.inputs.items():
        print(f"  {_safe(name)}: {dt} {_fmt(shape)}")

    rng = np.random.default_rng(args.seed)
    files = dict(args.input)
    feeds = {}
    for name, (dt, shape) in model.inputs.items():
        if name in files:
            feeds[name] = np.load(files[name]).astype(webnn.DATA_TYPES[dt])
        else:
            feeds[name] = _random(dt, shape, rng)

    t0 = time.perf_counter()
    outs = model.run(feeds)
    t_first = time.perf_counter() - t0
    print("outputs:")
    for name, a in outs.items():
        stats = ""
        if a.size:
            af = a.astype(np.float64)
            stats = f"  min {af.min():.6g}  max {af.max():.6g}  mean {af.mean():.6g}"
        print(f"  {_safe(name)}: {webnn._api._NP_TO_DT.get(a.dtype, a.dtype)} {_fmt(a.shape)}{stats}")
    print(f"first run: {t_first * 1e3:.2f} ms")

    if args.bench > 0:
        times = []
        show_bar = sys.stderr.isatty() or t_first * args.bench > 2.0
        for i in range(args.bench):
            t0 = time.perf_counter()
            model.run(feeds)
            times.append(time.perf_counter() - t0)
            if show_bar:
                print(_bar(i + 1, args.bench), end="", file=sys.stderr, flush=True)
        if show_bar:
            print(file=sys.stderr)
        print(f"latency over {args.bench} runs: min {min(times) * 1e3:.3f} ms, "
              f"median {statistics.median(times) * 1e3:.3f} ms")

    if args.profile > 0:
        prof = model.profile(feeds, runs=args.profile)
        for row in (*prof.rows, *prof.untimed):   # the model's node names, escaped
            if row["label"]:
                row["label"] = _safe(row["label"])
        print(prof)

    if args.compare_onnxruntime:
        try:
            import onnxruntime as ort
        except ImportError:
            print("onnxruntime is not installed: no comparison", file=sys.stderr)
            return 0
        sess = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
        ref = dict(zip([o.name for o in sess.get_outputs()],
                       sess.run(None, {i.name: feeds[i.name] for i in sess.get_inputs()})))
        print("largest difference from ONNX Runtime:")
        for name, a in outs.items():
            r = np.asarray(ref[name])
            if r.shape != a.shape:
                print(f"  {_safe(name)}: shapes differ: webnn {_fmt(a.shape)}, ORT {_fmt(r.shape)}")
                continue
            with np.errstate(invalid="ignore"):
                d = np.abs(a.astype(np.float64) - r.astype(np.float64))
            d = d[~(np.isnan(a.astype(np.float64)) & np.isnan(r.astype(np.float64)))]
            worst = float(d.max()) if d.size else 0.0
            scale = float(np.abs(r.astype(np.float64)).max()) if r.size else 0.0
            rel = worst / scale if scale else 0.0
            print(f"  {_safe(name)}: max abs {worst:.3g} (relative to the largest |value| {rel:.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
