"""Speed of the webnn data movement kernels on the CPU, against NumPy (and
PyTorch when it can be imported), in the same process.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_movement.py

Cases (float32):

* transpose  x[8, 128, 12, 64] with permutation [0, 2, 1, 3] (the attention
  head split of a BERT-base layer) -> [8, 12, 128, 64].
  NumPy: ``np.ascontiguousarray(x.transpose(0, 2, 1, 3))``;
  torch: ``x.permute(0, 2, 1, 3).contiguous()``.
* concat     two [8, 128, 768] along the last axis -> [8, 128, 1536].
  NumPy: ``np.concatenate((a, b), axis=-1)``; torch: ``torch.cat((a, b), -1)``.

and the same two at transformer-training sizes ([32, 512, 12, 64] and
2 x [32, 512, 768]: 48 MiB per operand), which no cache holds.

webnn is timed two ways:

* ``webnn``: the spec's round trip.  The input tensors are created and
  written once; every timed call is ``ctx.dispatch(graph, inputs, outputs)``
  followed by ``ctx.read_tensor(out, preallocated_array)`` (read_tensor waits
  for the dispatch, so the time covers the queued execution plus the copy of
  the result out of the tensor, which NumPy and torch do not pay).
* ``kernel``: the operator as a step inside a graph: K dispatches back to
  back, then one read of a one-element tensor (which waits for them), per
  dispatch.  This is what the operator costs where it sits between other
  operators.

``memcpy`` is ``np.copyto`` of one output's bytes (read once, written once),
the bandwidth a copy gets on this machine.  torch runs with
``torch.set_num_threads(2)``.  The last column is the time of ``read_tensor``
alone (the copy of the output out of its tensor).

GB/s counts useful traffic only, the same for every library: every input read
once plus the output written once (transpose 2 x 3 MiB, concat 4 x 3 MiB).

Method: each callable is warmed up, then timed in samples; in a sample it runs
back to back until at least 0.1 s have passed and the time per call is kept.
The libraries alternate sample by sample (order reversed every other round).
The table shows the median over the samples.  On a small shared machine the
timings vary a lot between runs; compare columns of one run.  Results are checked against
NumPy before timing.
"""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place

import numpy as np  # noqa: E402

import webnn  # noqa: E402

try:
    import torch  # noqa: E402
    torch.set_num_threads(2)
except Exception:  # pragma: no cover - torch is optional
    torch = None

SAMPLES = 9
SAMPLE_SECONDS = 0.1
WARMUP = 3


def measure(fns, samples=SAMPLES, target=SAMPLE_SECONDS, warmup=WARMUP):
    """{name: [seconds per call, one per sample]} (see the module doc)."""
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


def f32(shape, **flags):
    d = {"dataType": "float32", "shape": list(shape)}
    d.update(flags)
    return d


def spec_path(ctx, graph, inputs, out_shape):
    """Input tensors created and written once; returns (run, out array, keep)
    where run() is dispatch + read_tensor into the preallocated array,
    run.read_only() the read alone and run.kernel() K dispatches then a
    one-element read (run.k = K)."""
    tin = {}
    for name, arr in inputs.items():
        t = ctx.create_tensor(f32(arr.shape, writable=True))
        ctx.write_tensor(t, arr)
        tin[name] = t
    tout = ctx.create_tensor(f32(out_shape, readable=True))
    out = np.empty(out_shape, np.float32)
    touts = {"y": tout}

    def run():
        ctx.dispatch(graph, tin, touts)
        ctx.read_tensor(tout, out)

    def read_only():
        ctx.read_tensor(tout, out)

    sync = ctx.create_tensor(f32([1], readable=True))
    sync_out = np.empty(1, np.float32)
    k = 20

    def kernel():
        for _ in range(k):
            ctx.dispatch(graph, tin, touts)
        ctx.read_tensor(sync, sync_out)

    run.read_only = read_only
    run.kernel = kernel
    run.k = k
    return run, out, (tin, tout, sync)


def case_transpose(ctx, rng, batch=8, seq=128):
    shape, perm = (batch, seq, 12, 64), (0, 2, 1, 3)
    x = rng.standard_normal(shape, dtype=np.float32)
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.transpose(b.input("x", f32(shape)), permutation=list(perm))})
    out_shape = tuple(shape[p] for p in perm)
    run, out, keep = spec_path(ctx, g, {"x": x}, out_shape)
    fns = {"webnn": run, "numpy": lambda: np.ascontiguousarray(x.transpose(perm))}
    ref = np.ascontiguousarray(x.transpose(perm))
    run()
    assert np.array_equal(out, ref), "webnn transpose differs from NumPy"
    if torch is not None:
        xt = torch.from_numpy(x)
        fns["torch"] = lambda: xt.permute(*perm).contiguous()
        assert np.array_equal(fns["torch"]().numpy(), ref)
    traffic = 2 * x.nbytes
    out_like = np.empty_like(x)
    fns["memcpy"] = lambda: np.copyto(out_like, x)
    return f"transpose [{batch},{seq},12,64] perm [0,2,1,3]", fns, traffic, keep


def case_concat(ctx, rng, batch=8, seq=128):
    shape = (batch, seq, 768)
    a = rng.standard_normal(shape, dtype=np.float32)
    c = rng.standard_normal(shape, dtype=np.float32)
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.concat([b.input("a", f32(shape)), b.input("b", f32(shape))], 2)})
    out_shape = (batch, seq, 1536)
    run, out, keep = spec_path(ctx, g, {"a": a, "b": c}, out_shape)
    fns = {"webnn": run, "numpy": lambda: np.concatenate((a, c), axis=-1)}
    ref = np.concatenate((a, c), axis=-1)
    run()
    assert np.array_equal(out, ref), "webnn concat differs from NumPy"
    if torch is not None:
        at, ct = torch.from_numpy(a), torch.from_numpy(c)
        fns["torch"] = lambda: torch.cat((at, ct), -1)
        assert np.array_equal(fns["torch"]().numpy(), ref)
    traffic = 2 * a.nbytes + 2 * a.nbytes
    src = np.concatenate((a, c), axis=-1)
    dst = np.empty_like(src)
    fns["memcpy"] = lambda: np.copyto(dst, src)
    return f"concat 2 x [{batch},{seq},768] axis 2", fns, traffic, keep


def main():
    ctx = webnn.ml.create_context()
    rng = np.random.default_rng(0)
    libs = ["webnn", "kernel", "numpy"] + (["torch"] if torch is not None else []) + ["memcpy"]
    print(f"numpy {np.__version__}"
          + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)" if torch else
             ", torch not available")
          + f", {os.cpu_count()} CPUs")
    print("GB/s of useful traffic (inputs read once + output written once; memcpy: one "
          "output's bytes read + written); microseconds per call")
    head = (f"{'case':38s}" + "".join(f"{lib + ' GB/s':>12s}{'us':>8s}" for lib in libs)
            + f"{'read_tensor us':>15s}")
    print(head)
    print("-" * len(head))
    cases = [(case_transpose, {}), (case_concat, {}),
             (case_transpose, {"batch": 32, "seq": 512}), (case_concat, {"batch": 32, "seq": 512})]
    for make, kw in cases:
        name, fns, traffic, keep = make(ctx, rng, **kw)
        run = fns["webnn"]
        fns["read_tensor"] = run.read_only
        fns["kernel"] = run.kernel
        t = measure(fns)
        t["kernel"] = [v / run.k for v in t["kernel"]]
        row = f"{name:38s}"
        for lib in libs:
            med = statistics.median(t[lib])
            row += f"{traffic / med / 1e9:12.2f}{med * 1e6:8.0f}"
        row += f"{statistics.median(t['read_tensor']) * 1e6:15.0f}"
        print(row, flush=True)
        del keep, fns


if __name__ == "__main__":
    main()
