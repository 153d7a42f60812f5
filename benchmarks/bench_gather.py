"""Speed of webnn's gather over an embedding table, against NumPy and PyTorch.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_gather.py

The case: gather(table, indices) with axis 0, table float32 [50000, 512]
(100 MB), indices 4096 int32 drawn uniformly from [0, 50000): an embedding
lookup.  The output is [4096, 512] float32 (8 MiB).

webnn: the spec's path.  The table and the indices are graph inputs whose
tensors are created and written once; every timed call is
``ctx.dispatch(graph, ...)`` then ``ctx.read_tensor(out, array)`` into a
preallocated NumPy array (read_tensor waits for the dispatch, so a call
covers the queued execution and the copy of the result out of the tensor).
``ctx.compute`` (fresh tensors every call) is timed for information.

NumPy: ``np.take(table, indices, axis=0, out=out)`` into a preallocated
array.  PyTorch (when ``import torch`` works, with torch.set_num_threads(2)):
``torch.index_select(table, 0, indices, out=out)`` into a preallocated tensor
and ``torch.nn.functional.embedding(indices, table)`` (which allocates its
result), on tensors sharing the NumPy arrays' memory.

GB/s counts useful traffic only, the same for every library: the gathered
rows read once plus the output written once (2 x 8 MiB; the 16 KiB of
indices are left out).  Method as in bench_core.py: warm-up, then samples of
at least 0.1 s of back-to-back calls, the callables alternating sample by
sample; medians are reported, and "x numpy" is the median of the paired
per-sample ratios numpy time / library time (> 1: faster than NumPy).
Every result is checked against NumPy's before timing.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import webnn  # noqa: E402
from bench_core import measure, paired_ratio  # noqa: E402

ROWS, WIDTH, N_IDX = 50000, 512, 4096
SAMPLES = 9


def webnn_spec_path(ctx, table, idx):
    b = webnn.MLGraphBuilder(ctx)
    t = b.input("table", {"dataType": "float32", "shape": list(table.shape)})
    i = b.input("indices", {"dataType": "int32", "shape": list(idx.shape)})
    graph = b.build({"out": b.gather(t, i)})
    tt = ctx.create_tensor({"dataType": "float32", "shape": list(table.shape),
                            "writable": True})
    ti = ctx.create_tensor({"dataType": "int32", "shape": list(idx.shape), "writable": True})
    ctx.write_tensor(tt, table)
    ctx.write_tensor(ti, idx)
    out_shape = (idx.shape[0], table.shape[1])
    to = ctx.create_tensor({"dataType": "float32", "shape": list(out_shape), "readable": True})
    out = np.empty(out_shape, np.float32)
    ins, outs = {"table": tt, "indices": ti}, {"out": to}

    def run():
        ctx.dispatch(graph, ins, outs)
        ctx.read_tensor(to, out)

    def compute():
        return ctx.compute(graph, {"table": table, "indices": idx})["out"]

    def read_only():
        ctx.read_tensor(to, out)

    return run, out, compute, read_only


def torch_callables(table, idx):
    try:
        import torch
    except Exception as e:  # noqa: BLE001 -- any import failure: no torch column
        print(f"torch: not available ({type(e).__name__}: {e})")
        return {}, None
    torch.set_num_threads(2)
    tt = torch.from_numpy(table)
    ti = torch.from_numpy(idx)
    out = torch.empty((idx.shape[0], table.shape[1]), dtype=torch.float32)
    try:
        torch.index_select(tt, 0, ti, out=out)
    except (RuntimeError, TypeError):  # older torch: int64 indices only
        ti = ti.to(torch.int64)
    fns = {
        "torch.index_select": lambda: torch.index_select(tt, 0, ti, out=out),
        "torch embedding": lambda: torch.nn.functional.embedding(ti, tt),
    }
    checks = {
        "torch.index_select": lambda: (torch.index_select(tt, 0, ti, out=out), out.numpy())[1],
        "torch embedding": lambda: torch.nn.functional.embedding(ti, tt).numpy(),
    }
    return fns, (torch, checks)


def main():
    rng = np.random.default_rng(0)
    table = rng.standard_normal((ROWS, WIDTH), dtype=np.float32)
    idx = rng.integers(0, ROWS, size=N_IDX).astype(np.int32)
    ref = table[idx]
    nbytes = 2 * ref.nbytes

    ctx = webnn.ml.create_context(device_type="cpu")
    run, out, compute, read_only = webnn_spec_path(ctx, table, idx)
    run()
    assert np.array_equal(out, ref), "webnn gather differs from NumPy"
    assert np.array_equal(compute(), ref)

    np_out = np.empty_like(ref)
    fns = {"webnn": run, "numpy np.take": lambda: np.take(table, idx, axis=0, out=np_out)}
    fns["numpy np.take"]()
    assert np.array_equal(np_out, ref)
    tfns, tinfo = torch_callables(table, idx)
    if tinfo is not None:
        torch, checks = tinfo
        for name, check in checks.items():
            assert np.array_equal(check(), ref), f"{name} differs from NumPy"
        fns.update(tfns)

    times = measure(fns, samples=SAMPLES)
    info = measure({"webnn compute": compute, "read_tensor 8 MiB": read_only}, samples=5)

    print(f"webnn {getattr(webnn, '__version__', '?')}, numpy {np.__version__}"
          + (f", torch {torch.__version__} ({torch.get_num_threads()} threads)"
             if tinfo else "")
          + f", {os.cpu_count()} CPUs")
    print(f"gather: table float32 [{ROWS}, {WIDTH}], {N_IDX} int32 indices, axis 0 -> "
          f"[{N_IDX}, {WIDTH}]; traffic counted {nbytes / 2**20:.0f} MiB per call")
    print()
    print(f"| {'library':<20} | {'ms':>7} | {'GB/s':>6} | {'x numpy':>7} |")
    print(f"|{'-' * 22}|{'-' * 8}:|{'-' * 7}:|{'-' * 8}:|")
    npt = times["numpy np.take"]
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name:<20} | {med * 1e3:7.3f} | {nbytes / med / 1e9:6.2f} | "
              f"{paired_ratio(npt, ts):7.2f} |")
    print()
    print(f"for information: webnn ctx.compute {statistics.median(info['webnn compute']) * 1e3:.3f}"
          f" ms (new tensors, writes the 100 MB table every call); read_tensor of the 8 MiB "
          f"output alone {statistics.median(info['read_tensor 8 MiB']) * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
