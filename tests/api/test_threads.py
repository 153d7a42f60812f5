"""Python threads: shared and separate contexts, the GIL released during long
work, and destroy() while work is queued.  Every wait has a timeout so that a
deadlock in the core fails the test instead of hanging the run."""
import asyncio
import threading
import time

import numpy as np
import pytest

import webnn

N_THREADS = 8
JOIN_S = 120


def _run_threads(target, n=N_THREADS, timeout=JOIN_S):
    errors, results = [], [None] * n
    barrier = threading.Barrier(n)

    def wrap(i):
        try:
            barrier.wait(timeout=30)
            results[i] = target(i)
        except BaseException as e:       # noqa: BLE001 -- reported below
            errors.append((i, e))
    threads = [threading.Thread(target=wrap, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    hung = [i for i, t in enumerate(threads) if t.is_alive()]
    assert not hung, f"threads {hung} still running after {timeout}s (deadlock?)"
    assert not errors, f"errors in threads: {errors!r}"
    return results


def _work(ctx, i, rounds=10):
    """Build a small graph private to this thread and run it many ways."""
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [16, 16]})
    w = b.constant(np.full((16, 16), i + 1, np.float32))
    y = b.add(b.matmul(x, w), b.constant("float32", float(i)))
    g = b.build({"y": y})
    tx = ctx.create_tensor({"dataType": "float32", "shape": [16, 16], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [16, 16], "readable": True})
    for r in range(rounds):
        xv = np.full((16, 16), r, np.float32)
        expected = xv @ np.full((16, 16), i + 1, np.float32) + i
        ctx.write_tensor(tx, xv)
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        got = ctx.read_tensor(ty)
        np.testing.assert_array_equal(got, expected, err_msg=f"thread {i} round {r}")
        got = ctx.compute(g, {"x": xv})["y"]
        np.testing.assert_array_equal(got, expected, err_msg=f"thread {i} round {r} (compute)")
    return i


def test_threads_share_one_context():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        assert _run_threads(lambda i: _work(ctx, i)) == list(range(N_THREADS))
    finally:
        ctx.destroy()


def test_threads_on_separate_contexts():
    def target(i):
        ctx = webnn.ml.create_context(device_type="cpu")
        try:
            return _work(ctx, i)
        finally:
            ctx.destroy()
    assert _run_threads(target) == list(range(N_THREADS))


def test_threads_share_one_graph_with_own_tensors():
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "int32", "shape": [64]})
    g = b.build({"y": b.mul(x, b.constant("int32", 3))})

    def target(i):
        tx = ctx.create_tensor({"dataType": "int32", "shape": [64], "writable": True})
        ty = ctx.create_tensor({"dataType": "int32", "shape": [64], "readable": True})
        for r in range(50):
            v = np.arange(64, dtype=np.int32) + 1000 * i + r
            ctx.write_tensor(tx, v)
            ctx.dispatch(g, {"x": tx}, {"y": ty})
            np.testing.assert_array_equal(ctx.read_tensor(ty), v * 3)
        return i
    try:
        assert _run_threads(target) == list(range(N_THREADS))
    finally:
        ctx.destroy()


# ---- the GIL is released during long work -----------------------------------------
N = 2048


def _long_graph(ctx, depth=3):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [N, N]})
    w = b.constant(np.full((N, N), 1.0 / N, np.float32))
    y = x
    for _ in range(depth):
        y = b.matmul(y, w)
    return b.build({"y": y})


def _count_while(fn, timeout=JOIN_S):
    """Run fn() in a thread; count Python loop iterations in this thread
    meanwhile.  Returns (count, seconds, error)."""
    done = threading.Event()
    err = []

    def target():
        try:
            fn()
        except BaseException as e:       # noqa: BLE001
            err.append(e)
        finally:
            done.set()
    t = threading.Thread(target=target, daemon=True)
    count = 0
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        count += 1
        if time.perf_counter() - start > timeout:
            break
    elapsed = time.perf_counter() - start
    t.join(5)
    assert not t.is_alive(), "work did not finish"
    assert not err, err
    return count, elapsed


def _baseline_rate():
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        n += 1
    return n / (time.perf_counter() - t0)


def test_gil_released_during_compute():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        g = _long_graph(ctx)
        xv = np.ones((N, N), np.float32)
        ctx.compute(g, {"x": xv})            # warm up
        rate = _baseline_rate()
        out = {}
        count, elapsed = _count_while(lambda: out.update(ctx.compute(g, {"x": xv})))
        np.testing.assert_allclose(out["y"][:2, :2], np.ones((2, 2)), rtol=1e-4)
        assert elapsed > 0.1, f"the work took only {elapsed:.3f}s: too short to tell"
        # Holding the GIL for the whole computation would leave this thread a
        # handful of iterations (one per switch interval at best);
        # a released GIL lets it run at a good fraction of its free rate.
        assert count > 0.05 * rate * elapsed, (
            f"only {count} iterations in {elapsed:.3f}s (free rate {rate:.0f}/s): "
            "the GIL is held during compute")
    finally:
        ctx.destroy()


def test_gil_released_while_reading_a_dispatched_result():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        g = _long_graph(ctx)
        tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
        ctx.write_tensor(tx, np.ones((N, N), np.float32))
        rate = _baseline_rate()
        t0 = time.perf_counter()
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        assert time.perf_counter() - t0 < 0.5, "dispatch() waited for the work"
        got = []
        count, elapsed = _count_while(lambda: got.append(ctx.read_tensor(ty)))
        np.testing.assert_allclose(got[0][:2, :2], np.ones((2, 2)), rtol=1e-4)
        assert count > 0.05 * rate * elapsed, (
            f"only {count} iterations in {elapsed:.3f}s (free rate {rate:.0f}/s): "
            "the GIL is held while read_tensor waits")
    finally:
        ctx.destroy()


def test_gil_released_during_build():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", {"dataType": "float32", "shape": [N, N]})
        w = b.constant(np.full((N, N), 1.0 / N, np.float32))
        y = x
        for _ in range(3):
            y = b.matmul(y, w)
        t0 = time.perf_counter()
        b.build({"y": y})
        # build of this graph is quick; nothing to measure unless it is slow
        assert time.perf_counter() - t0 < 60
    finally:
        ctx.destroy()


def test_async_read_does_not_block_the_event_loop():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        g = _long_graph(ctx)
        tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
        ctx.write_tensor(tx, np.ones((N, N), np.float32))

        async def main():
            ticks = 0
            ctx.dispatch(g, {"x": tx}, {"y": ty})
            task = asyncio.ensure_future(ctx.read_tensor_async(ty))
            t0 = time.perf_counter()
            while not task.done():
                ticks += 1
                await asyncio.sleep(0.001)
                if time.perf_counter() - t0 > JOIN_S:
                    raise TimeoutError
            return ticks, time.perf_counter() - t0, task.result()
        ticks, elapsed, y = asyncio.run(main())
        np.testing.assert_allclose(y[:2, :2], np.ones((2, 2)), rtol=1e-4)
        if elapsed > 0.1:
            assert ticks >= 10, f"event loop ran {ticks} times in {elapsed:.3f}s"
    finally:
        ctx.destroy()


# ---- destroy() while work is queued ---------------------------------------------
def test_destroy_with_queued_work_fails_pending_reads():
    ctx = webnn.ml.create_context(device_type="cpu")
    g = _long_graph(ctx)
    tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
    ctx.write_tensor(tx, np.ones((N, N), np.float32))
    for _ in range(6):                       # a few seconds of queued work
        ctx.dispatch(g, {"x": tx}, {"y": ty})
    outcome = {}

    def reader(key):
        try:
            outcome[key] = ("ok", ctx.read_tensor(ty))
        except BaseException as e:           # noqa: BLE001
            outcome[key] = ("error", e)
    readers = [threading.Thread(target=reader, args=(k,), daemon=True) for k in range(3)]
    for r in readers:
        r.start()
    time.sleep(0.2)
    t0 = time.perf_counter()
    ctx.destroy()
    destroy_s = time.perf_counter() - t0
    for r in readers:
        r.join(JOIN_S)
    assert not any(r.is_alive() for r in readers), "read_tensor hangs after destroy()"
    assert ctx.lost.result(timeout=10)["message"]
    for key, (kind, val) in outcome.items():
        if kind == "error":
            assert isinstance(val, webnn.InvalidStateError), (
                f"reader {key}: expected InvalidStateError, got {type(val).__name__}: {val}")
        else:
            np.testing.assert_allclose(val[:2, :2], np.ones((2, 2)), rtol=1e-4)
    assert destroy_s < 30, f"destroy() took {destroy_s:.1f}s"


def test_destroy_with_queued_work_async_read():
    ctx = webnn.ml.create_context(device_type="cpu")
    g = _long_graph(ctx)
    tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
    ctx.write_tensor(tx, np.ones((N, N), np.float32))
    for _ in range(6):
        ctx.dispatch(g, {"x": tx}, {"y": ty})

    async def main():
        task = asyncio.ensure_future(ctx.read_tensor_async(ty))
        await asyncio.sleep(0.2)
        ctx.destroy()
        return await asyncio.wait_for(task, JOIN_S)
    try:
        y = asyncio.run(main())
        np.testing.assert_allclose(y[:2, :2], np.ones((2, 2)), rtol=1e-4)
    except webnn.InvalidStateError:
        pass


def test_destroy_from_another_thread_while_computing():
    """compute() in a worker, destroy() from the main thread: the worker ends
    with a result or InvalidStateError (or TypeError from a tensor destroyed
    by the loss between two of compute()'s steps), without hanging."""
    ctx = webnn.ml.create_context(device_type="cpu")
    g = _long_graph(ctx, depth=6)
    outcome = []

    def worker():
        try:
            outcome.append(ctx.compute(g, {"x": np.ones((N, N), np.float32)}))
        except BaseException as e:           # noqa: BLE001
            outcome.append(e)
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    time.sleep(0.3)
    ctx.destroy()
    t.join(JOIN_S)
    assert not t.is_alive(), "compute() hangs after destroy()"
    (res,) = outcome
    if isinstance(res, BaseException):
        assert isinstance(res, webnn.InvalidStateError), f"{type(res).__name__}: {res}"


def test_many_threads_destroying_their_tensors_and_graphs():
    ctx = webnn.ml.create_context(device_type="cpu")

    def target(i):
        for r in range(30):
            b = webnn.MLGraphBuilder(ctx)
            x = b.input("x", {"dataType": "float32", "shape": [8]})
            g = b.build({"y": b.neg(x)})
            tx = ctx.create_tensor({"dataType": "float32", "shape": [8], "writable": True})
            ty = ctx.create_tensor({"dataType": "float32", "shape": [8], "readable": True})
            ctx.write_tensor(tx, np.full(8, r, np.float32))
            ctx.dispatch(g, {"x": tx}, {"y": ty})
            tx.destroy()
            g.destroy()
            np.testing.assert_array_equal(ctx.read_tensor(ty), np.full(8, -r, np.float32))
            ty.destroy()
        return i
    try:
        assert _run_threads(target) == list(range(N_THREADS))
    finally:
        ctx.destroy()


@pytest.mark.parametrize("n_ctx", [16])
def test_create_and_destroy_contexts_concurrently(n_ctx):
    def target(i):
        for _ in range(n_ctx):
            c = webnn.ml.create_context(device_type="cpu")
            c.create_tensor({"dataType": "float32", "shape": [4]})
            c.destroy()
            assert c.lost.result(timeout=10)["message"]
        return i
    assert _run_threads(target) == list(range(N_THREADS))


def test_tensor_destroy_rejects_pending_reads():
    """MLTensor.destroy(): every pending readTensor of the tensor is rejected
    with InvalidStateError (or has already resolved); nothing hangs."""
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        g = _long_graph(ctx)
        tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
        ctx.write_tensor(tx, np.ones((N, N), np.float32))
        for _ in range(4):
            ctx.dispatch(g, {"x": tx}, {"y": ty})
        outcome = []

        def reader():
            try:
                outcome.append(ctx.read_tensor(ty))
            except BaseException as e:       # noqa: BLE001
                outcome.append(e)
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        time.sleep(0.2)
        ty.destroy()
        t.join(JOIN_S)
        assert not t.is_alive(), "read_tensor hangs after the tensor is destroyed"
        (res,) = outcome
        if isinstance(res, BaseException):
            assert isinstance(res, webnn.InvalidStateError), f"{type(res).__name__}: {res}"
        else:
            np.testing.assert_allclose(res[:2, :2], np.ones((2, 2)), rtol=1e-4)
        # the context is still usable
        t2 = ctx.create_tensor({"dataType": "float32", "shape": [2], "readable": True,
                                "writable": True})
        ctx.write_tensor(t2, np.ones(2, np.float32))
        np.testing.assert_array_equal(ctx.read_tensor(t2), np.ones(2, np.float32))
    finally:
        ctx.destroy()


def _time_one_run(ctx, g, tx, ty):
    t0 = time.perf_counter()
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    ctx.read_tensor(ty)
    return time.perf_counter() - t0


@pytest.mark.parametrize("what", ["tensor", "context"])
def test_destroy_rejects_pending_read_promptly(what):
    """Spec: MLTensor.destroy() rejects the pending readTensor promises at
    once, and a lost context aborts its timeline's steps -- a pending read
    must not wait for all the queued work to finish first.  Allowed: the
    dispatch running at the time of destroy() finishes (about one run)."""
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        g = _long_graph(ctx)
        tx = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": [N, N], "readable": True})
        ctx.write_tensor(tx, np.ones((N, N), np.float32))
        one = sorted(_time_one_run(ctx, g, tx, ty) for _ in range(3))[1]   # median
        queued = 30
        for _ in range(queued):
            ctx.dispatch(g, {"x": tx}, {"y": ty})
        outcome = []

        def reader():
            try:
                outcome.append(ctx.read_tensor(ty))
            except BaseException as e:       # noqa: BLE001
                outcome.append(e)
            outcome.append(time.perf_counter())
        t = threading.Thread(target=reader, daemon=True)
        t.start()
        time.sleep(min(0.2, one / 2))
        t_destroy = time.perf_counter()
        (ty if what == "tensor" else ctx).destroy()
        t.join(JOIN_S)
        assert not t.is_alive()
        res, t_end = outcome
        assert isinstance(res, webnn.InvalidStateError), f"{type(res).__name__}: {res}"
        waited = t_end - t_destroy
        assert waited < min(3 * one + 0.5, 0.5 * queued * one), (
            f"the pending read was rejected {waited:.2f}s after {what}.destroy(); one run "
            f"takes {one:.2f}s and {queued} were queued: it waited for the queue")
    finally:
        ctx.destroy()
