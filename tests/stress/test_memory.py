"""Resources: 10,000 cycles of build, dispatch, read and destroy keep the
process's resident memory flat.

Each cycle builds a small graph (constants, several operators, an
intermediate reused by the memory plan), makes tensors, writes, dispatches,
reads, runs compute() too, and destroys tensors and graph; every
CONTEXT_EVERY cycles the context itself is destroyed and a new one made
(its timeline thread, backend and BLIS state).  RSS is read from
/proc/self/statm after a warm-up and at the end; the growth must stay under
a few MB (a leak of even 1 KB per cycle would be 10 MB).  The figures are
printed (pytest -s shows them)."""
import gc
import os
import time

import numpy as np
import pytest

import webnn

CYCLES = 10_000
WARMUP = 1_500
CONTEXT_EVERY = 500
MAX_GROWTH_MB = 4.0

PAGE = os.sysconf("SC_PAGE_SIZE")

# AddressSanitizer keeps freed memory in quarantine: RSS says nothing there
# (make test-asan); its leak checks are make leakcheck's job.
pytestmark = pytest.mark.skipif("asan" in os.environ.get("LD_PRELOAD", ""),
                                reason="RSS is not meaningful under AddressSanitizer")


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 2 ** 20


def _graph(ctx, i):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [4, 4]})
    w = b.constant(np.full((4, 4), (i % 7) * 0.25, np.float32))
    h = b.relu(b.add(b.matmul(x, w), b.constant("float32", 1.0)))
    t = b.transpose(h)
    y = b.concat([h, t], 0)
    z = b.reduce_sum(y) if "reduceSum" in webnn.OPERATORS else b.identity(y)
    return b.build({"y": y, "z": z}), w


def _reference(xv, i):
    w = np.full((4, 4), (i % 7) * 0.25, np.float32)
    h = np.maximum(xv @ w + 1, 0)
    return np.concatenate([h, h.T], 0)


def test_cycles_keep_rss_flat():
    ctx = webnn.ml.create_context(device_type="cpu")
    base = None
    t0 = time.perf_counter()
    try:
        for i in range(CYCLES):
            if i and i % CONTEXT_EVERY == 0:
                ctx.destroy()
                ctx = webnn.ml.create_context(device_type="cpu")
            g, _ = _graph(ctx, i)
            xv = np.full((4, 4), i % 5, np.float32)
            tx = ctx.create_tensor({"dataType": "float32", "shape": [4, 4], "writable": True})
            ty = ctx.create_tensor({"dataType": "float32", "shape": [8, 4], "readable": True})
            tz = ctx.create_tensor({"dataType": "float32", "shape": list(g.output_descriptors["z"]["shape"]),
                                    "readable": True})
            ctx.write_tensor(tx, xv)
            ctx.dispatch(g, {"x": tx}, {"y": ty, "z": tz})
            got = ctx.read_tensor(ty)
            if i % 97 == 0:
                np.testing.assert_allclose(got, _reference(xv, i), rtol=1e-6)
                np.testing.assert_allclose(ctx.compute(g, {"x": xv})["y"], got)
            for t in (tx, ty, tz):
                t.destroy()
            g.destroy()
            del g, tx, ty, tz
            if i == WARMUP:
                gc.collect()
                base = rss_mb()
        gc.collect()
        end = rss_mb()
    finally:
        ctx.destroy()
    took = time.perf_counter() - t0
    growth = end - base
    print(f"\n10,000-cycle memory test: RSS {base:.1f} MB after {WARMUP} cycles, {end:.1f} MB after "
          f"{CYCLES} cycles: growth {growth:+.2f} MB ({growth * 1024 / (CYCLES - WARMUP):+.3f} KB/cycle), "
          f"{CYCLES // CONTEXT_EVERY} contexts, {took:.1f}s")
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.2f} MB over {CYCLES - WARMUP} cycles"


def test_failed_calls_keep_rss_flat():
    """Rejected calls (every error path of the builder and the timeline)
    free what they allocated."""
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        def cycle():
            b = webnn.MLGraphBuilder(ctx)
            x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
            for bad in (lambda: b.add(x, b.input("i", {"dataType": "int32", "shape": [2, 3]})),
                        lambda: b.reshape(x, [7]),
                        lambda: b.concat([x, x], 5),
                        lambda: b.expand(x, [65536, 65536, 3]),
                        lambda: b.constant({"dataType": "float32", "shape": [2]}, b"\0" * 4),
                        lambda: b.build({}),
                        lambda: ctx.create_tensor({"dataType": "float32", "shape": [2 ** 31]})):
                with pytest.raises((TypeError, webnn.DOMException)):
                    bad()
            g = b.build({"y": b.relu(x)})
            t = ctx.create_tensor({"dataType": "float32", "shape": [2, 3], "readable": True})
            with pytest.raises(TypeError):
                ctx.dispatch(g, {}, {"y": t})
            with pytest.raises(TypeError):
                ctx.write_tensor(t, np.zeros((2, 3), np.float32))
            t.destroy()
            with pytest.raises(TypeError):
                ctx.read_tensor(t)
        for _ in range(300):
            cycle()
        gc.collect()
        base = rss_mb()
        for _ in range(2000):
            cycle()
        gc.collect()
        growth = rss_mb() - base
    finally:
        ctx.destroy()
    print(f"\nfailed-call cycles: RSS growth {growth:+.2f} MB over 2000 cycles")
    assert growth < MAX_GROWTH_MB
