"""Speed of the webnn core on the CPU, against the libraries it should match.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_core.py        (or: make bench)

Two tables are printed.

1. matmul, float32, a[n, n] @ b[n, n] for n = 256, 512, 1024, 2048.
   webnn: a graph with both operands as inputs, run the way the spec runs it:
   the input tensors are created and written once, then every timed call is
   ``ctx.dispatch(graph, ...)`` followed by ``ctx.read_tensor(out, array)``
   into a preallocated NumPy array (read_tensor waits for the dispatch, so
   the time covers the whole queued execution plus the copy out).
   BLIS: ``bli_sgemm`` of the very libblis the package links (libblis.so.4),
   called through ctypes in the same process on the same arrays.  webnn is
   imported and one webnn matmul runs FIRST, so that BLIS initialises after
   the package has chosen its kernels (it sets BLIS_ARCH_TYPE=skx on AVX-512
   machines unless the variable is already set) and with the thread count
   the package gave it (one per online CPU); both therefore use the same
   kernels and threads (unless BLIS_NUM_THREADS or OMP_NUM_THREADS is set:
   see benchmarks/README.md).
   The BLIS_ARCH_TYPE in effect and the kernel set BLIS reports are printed.
   NumPy: ``np.matmul(a, b, out=c)`` (NumPy's own BLAS, usually OpenBLAS),
   for information only.  Rates are 2 n^3 / time, in GFLOP/s.  The target is
   webnn / BLIS >= 0.9 at n = 2048.

2. element-wise on 16 Mi float32 elements: add (two inputs), relu, sigmoid.
   webnn: dispatch + read_tensor into a preallocated array, as above; and,
   for information, ``ctx.compute`` (which also creates, writes and destroys
   tensors on every call and returns fresh arrays).
   NumPy: ``np.add(a, b, out=o)``, ``np.maximum(a, 0, out=o)`` and sigmoid
   as 1 / (1 + exp(-x)) computed in place in ``o`` with ``out=`` arguments.
   GB/s counts useful traffic only: every input read once plus the output
   written once (add: 3 x 64 MiB, relu and sigmoid: 2 x 64 MiB), the same
   for both.  The ratio numpy ms / webnn ms is > 1 when webnn is faster; the
   target is >= 1 (not slower).  Note the webnn time includes read_tensor's
   copy of the 64 MiB result out of the tensor, which NumPy does not pay;
   its cost alone is printed under the table.

Method: every callable is warmed up, then timed in samples: in each sample
it runs back to back until at least 0.1 s have passed, and the time per call
is kept.  webnn and BLIS (and webnn and NumPy for the element-wise ops)
alternate sample by sample, in alternating order, so that sample i of both
saw the same machine; the rates shown are medians over the samples and the
ratios are medians of the paired per-sample ratios (robust when the machine
is noisy: with 2 threads on a small VM single samples can be several times
slower than their neighbours).  NumPy's matmul is timed in its own block,
away from the others, because OpenBLAS threads keep spinning for a while
after each call and would steal cores.  Every result is checked against the
others before timing.  The whole run takes about 30 s on 2 cores.
"""
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place

import numpy as np  # noqa: E402

import webnn  # noqa: E402

MATMUL_SIZES = (256, 512, 1024, 2048)
ELEMENTS = 16 * 1024 * 1024
SAMPLES = 7           # timed samples per callable; the median is reported
MATMUL_SAMPLES = 9    # more for matmul, whose 2-thread timings vary most
SAMPLE_SECONDS = 0.1  # each sample repeats the call for at least this long
WARMUP = 2


def measure(fns, samples=SAMPLES, target=SAMPLE_SECONDS, warmup=WARMUP):
    """Seconds per call of each callable in `fns` (name -> fn), one entry per
    sample: {name: [t0, t1, ...]}.

    Callables are warmed up, then timed in `samples` rounds; in each round
    every callable runs back to back until about `target` seconds have
    passed (at least once), and its time per call is recorded.  Callables
    alternate within a round, in reversed order every other round, so that
    sample i of each callable saw the same machine conditions."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    per_call = {name: [] for name in fns}
    names = list(fns)
    clock = time.perf_counter
    for s in range(samples):
        for name in (names if s % 2 == 0 else names[::-1]):
            fn = fns[name]
            count = 0
            t0 = clock()
            while True:
                fn()
                count += 1
                elapsed = clock() - t0
                if elapsed >= target:
                    break
            per_call[name].append(elapsed / count)
    return per_call


def median(values):
    return statistics.median(values)


def paired_ratio(num, den):
    """Median over rounds of num[i] / den[i] (paired samples)."""
    return statistics.median(x / y for x, y in zip(num, den))


# ---- BLIS through ctypes ----------------------------------------------------
def load_blis():
    """The libblis the package links, with bli_sgemm's prototype:
    bli_sgemm(trans_t transa, trans_t transb, dim_t m, dim_t n, dim_t k,
              float *alpha, float *a, inc_t rsa, inc_t csa,
              float *b, inc_t rsb, inc_t csb,
              float *beta, float *c, inc_t rsc, inc_t csc)
    with trans_t an enum (BLIS_NO_TRANSPOSE = 0) and dim_t, inc_t 64-bit."""
    blis = ctypes.CDLL("libblis.so.4")
    i64, vp = ctypes.c_int64, ctypes.c_void_p
    blis.bli_sgemm.restype = None
    blis.bli_sgemm.argtypes = [ctypes.c_int, ctypes.c_int, i64, i64, i64,
                               vp, vp, i64, i64, vp, i64, i64, vp, vp, i64, i64]
    blis.bli_arch_query_id.restype = ctypes.c_int
    blis.bli_arch_query_id.argtypes = []
    blis.bli_arch_string.restype = ctypes.c_char_p
    blis.bli_arch_string.argtypes = [ctypes.c_int]
    blis.bli_thread_get_num_threads.restype = ctypes.c_int64
    blis.bli_thread_get_num_threads.argtypes = []
    blis.bli_info_get_version_str.restype = ctypes.c_char_p
    blis.bli_info_get_version_str.argtypes = []
    return blis


def blis_sgemm_call(blis, a, b, c):
    """A no-argument callable computing c = a @ b (row-major) with BLIS."""
    m, k = a.shape
    n = b.shape[1]
    one = ctypes.c_float(1.0)
    zero = ctypes.c_float(0.0)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    pone, pzero = ctypes.addressof(one), ctypes.addressof(zero)
    fn = blis.bli_sgemm

    def run():
        fn(0, 0, m, n, k, pone, pa, k, 1, pb, n, 1, pzero, pc, n, 1)

    run.keep = (one, zero, a, b, c)  # keep the buffers alive
    return run


def cpu_idle_fraction(seconds=1.0):
    """Share of all CPUs' time that was idle over the next `seconds` (Linux:
    from /proc/stat), or None where that cannot be read.  Other work on the
    machine makes the 2-thread timings erratic."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v[:8])  # idle + iowait, total (no guest)
    try:
        i0, t0 = sample()
        time.sleep(seconds)
        i1, t1 = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (i1 - i0) / (t1 - t0) if t1 > t0 else None


def c_getenv(name):
    """getenv() as C sees it: the package calls setenv() after Python read
    its environment, so os.environ does not show it."""
    libc = ctypes.CDLL(None)
    libc.getenv.restype = ctypes.c_char_p
    libc.getenv.argtypes = [ctypes.c_char_p]
    v = libc.getenv(name.encode())
    return v.decode() if v is not None else None


# ---- webnn helpers ----------------------------------------------------------
def f32(shape, **flags):
    d = {"dataType": "float32", "shape": list(shape)}
    d.update(flags)
    return d


def matmul_graph(ctx, n):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("a", f32((n, n)))
    y = b.input("b", f32((n, n)))
    return b.build({"c": b.matmul(x, y)})


def spec_path(ctx, graph, inputs, out_name, out_shape):
    """Tensors created and written once; returns (run, out array, tensors)
    where run() is dispatch + read_tensor into the preallocated array."""
    tin = {}
    for name, arr in inputs.items():
        t = ctx.create_tensor(f32(arr.shape, writable=True))
        ctx.write_tensor(t, arr)
        tin[name] = t
    tout = ctx.create_tensor(f32(out_shape, readable=True))
    out = np.empty(out_shape, np.float32)
    touts = {out_name: tout}

    def run():
        ctx.dispatch(graph, tin, touts)
        ctx.read_tensor(tout, out)

    return run, out, list(tin.values()) + [tout]


# ---- the benchmarks ---------------------------------------------------------
def bench_matmul(ctx, blis, rng):
    rows = []
    for n in MATMUL_SIZES:
        a = rng.standard_normal((n, n), dtype=np.float32)
        b = rng.standard_normal((n, n), dtype=np.float32)
        graph = matmul_graph(ctx, n)
        run_webnn, out, tensors = spec_path(ctx, graph, {"a": a, "b": b}, "c",
                                            (n, n))
        c_blis = np.empty((n, n), np.float32)
        run_blis = blis_sgemm_call(blis, a, b, c_blis)
        c_np = np.empty((n, n), np.float32)

        def run_numpy():
            np.matmul(a, b, out=c_np)

        run_webnn()
        run_blis()
        run_numpy()
        tol = dict(rtol=1e-3, atol=1e-3 * np.sqrt(n))
        if not (np.allclose(out, c_blis, **tol) and np.allclose(c_np, c_blis, **tol)):
            raise SystemExit(f"matmul n={n}: webnn, BLIS and NumPy disagree")
        t = measure({"webnn": run_webnn, "blis": run_blis},
                    samples=MATMUL_SAMPLES)
        t.update(measure({"numpy": run_numpy}, samples=MATMUL_SAMPLES))
        time.sleep(0.2)  # let OpenBLAS's threads go back to sleep
        flop = 2.0 * n ** 3
        rows.append((n, flop / median(t["webnn"]) / 1e9,
                     flop / median(t["blis"]) / 1e9,
                     paired_ratio(t["blis"], t["webnn"]),
                     flop / median(t["numpy"]) / 1e9))
        for tensor in tensors:
            tensor.destroy()
        graph.destroy()
    return rows


def numpy_sigmoid(x, o):
    np.negative(x, out=o)
    np.exp(o, out=o)
    np.add(o, 1.0, out=o)
    np.divide(1.0, o, out=o)


def bench_elementwise(ctx, rng):
    n = ELEMENTS
    a = rng.uniform(-8.0, 8.0, n).astype(np.float32)
    b = rng.uniform(-8.0, 8.0, n).astype(np.float32)
    o = np.empty(n, np.float32)
    cases = [
        ("add", ("a", "b"), lambda: np.add(a, b, out=o), lambda: a + b),
        ("relu", ("a",), lambda: np.maximum(a, 0, out=o), lambda: np.maximum(a, 0)),
        ("sigmoid", ("a",), lambda: numpy_sigmoid(a, o),
         lambda: (1.0 / (1.0 + np.exp(-a.astype(np.float64)))).astype(np.float32)),
    ]
    data = {"a": a, "b": b}
    rows = []
    read_ms = None
    for op, names, run_numpy, reference in cases:
        bld = webnn.MLGraphBuilder(ctx)
        ins = [bld.input(nm, f32((n,))) for nm in names]
        graph = bld.build({"y": getattr(bld, op)(*ins)})
        inputs = {nm: data[nm] for nm in names}
        run_webnn, out, tensors = spec_path(ctx, graph, inputs, "y", (n,))

        def run_compute():
            return ctx.compute(graph, inputs)

        run_webnn()
        run_numpy()
        want = reference()
        got_c = run_compute()["y"]
        for what, got in (("webnn", out), ("numpy", o), ("compute", got_c)):
            if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                raise SystemExit(f"{op}: {what} result differs from the reference")
        del got_c
        t = measure({"webnn": run_webnn, "numpy": run_numpy})
        t.update(measure({"compute": run_compute}, samples=3))
        if read_ms is None:  # the copy out alone (same for every op)
            tout = tensors[-1]
            read = measure({"read": lambda: ctx.read_tensor(tout, out)})
            read_ms = 1e3 * median(read["read"])
        traffic = (len(names) + 1) * 4.0 * n
        tw, tn = median(t["webnn"]), median(t["numpy"])
        rows.append((op, 1e3 * tw, traffic / tw / 1e9, 1e3 * tn,
                     traffic / tn / 1e9, paired_ratio(t["numpy"], t["webnn"]),
                     1e3 * median(t["compute"])))
        for tensor in tensors:
            tensor.destroy()
        graph.destroy()
    return rows, read_ms


def main():
    t_start = time.perf_counter()
    rng = np.random.default_rng(20240601)
    ctx = webnn.ml.create_context()
    # One webnn matmul before anything touches BLIS directly: BLIS then
    # initialises under the package's choice of kernels and threads.
    warm = matmul_graph(ctx, 64)
    x = rng.standard_normal((64, 64), dtype=np.float32)
    ctx.compute(warm, {"a": x, "b": x})
    warm.destroy()
    blis = load_blis()

    arch_env = c_getenv("BLIS_ARCH_TYPE")
    print(f"webnn {webnn.__version__}, NumPy {np.__version__}, "
          f"BLIS {blis.bli_info_get_version_str().decode()}, "
          f"{os.cpu_count()} CPUs")
    print(f"BLIS_ARCH_TYPE in effect: {arch_env or '(unset: BLIS autodetects)'}; "
          f"BLIS kernels in use: {blis.bli_arch_string(blis.bli_arch_query_id()).decode()}; "
          f"BLIS threads: {blis.bli_thread_get_num_threads()}")
    idle = cpu_idle_fraction()
    if idle is not None:
        print(f"CPU idle in the second before the run: {100 * idle:.0f}%"
              + ("  (WARNING: other work is running; timings will be erratic)"
                 if idle < 0.8 else ""))
    print(f"medians of {MATMUL_SAMPLES} (matmul) / {SAMPLES} (element-wise) "
          f"samples of >= {SAMPLE_SECONDS:g} s each, after {WARMUP} warm-up calls; "
          f"ratios are medians of paired samples")
    print()

    rows = bench_matmul(ctx, blis, rng)
    print("matmul float32, a[n,n] @ b[n,n]: webnn = dispatch + read_tensor; "
          "BLIS = bli_sgemm via ctypes")
    print(f"{'n':>6} {'webnn GFLOP/s':>14} {'BLIS GFLOP/s':>13} "
          f"{'webnn/BLIS':>11} {'numpy GFLOP/s':>14}")
    for n, gw, gb, ratio, gn in rows:
        print(f"{n:>6} {gw:>14.1f} {gb:>13.1f} {ratio:>11.3f} {gn:>14.1f}")
    final = rows[-1]
    print(f"target webnn/BLIS >= 0.9 at n={final[0]}: "
          f"{'met' if final[3] >= 0.9 else 'NOT met'} ({final[3]:.3f})")
    print()

    erows, read_ms = bench_elementwise(ctx, rng)
    print(f"element-wise float32, {ELEMENTS} elements (GB/s of useful traffic: "
          f"inputs read + output written)")
    print(f"{'op':<8} {'webnn ms':>9} {'webnn GB/s':>11} {'numpy ms':>9} "
          f"{'numpy GB/s':>11} {'numpy/webnn':>12} {'compute ms':>11}")
    for op, wm, wg, nm, ng, ratio, cm in erows:
        print(f"{op:<8} {wm:>9.2f} {wg:>11.1f} {nm:>9.2f} {ng:>11.1f} "
              f"{ratio:>12.2f} {cm:>11.1f}")
    slower = [r[0] for r in erows if r[5] < 1.0]
    print(f"(webnn ms includes read_tensor's copy of the {4 * ELEMENTS >> 20} MiB "
          f"result: {read_ms:.2f} ms alone; compute ms = ctx.compute, for information)")
    print("target numpy/webnn >= 1 (not slower): "
          + ("met" if not slower else "NOT met for " + ", ".join(slower)))
    print()
    idle = cpu_idle_fraction()
    print(f"total time {time.perf_counter() - t_start:.1f} s"
          + (f"; CPU idle in the second after the run: {100 * idle:.0f}%"
             if idle is not None else ""))


if __name__ == "__main__":
    main()
