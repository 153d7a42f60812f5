"""Concurrency beyond tests/api/test_threads.py (which covers one matmul
graph on shared and separate contexts, the GIL, and destroy() with pending
reads):

* 8 threads running graphs of every operator family on one shared context
  and on contexts of their own, checked against NumPy;
* the builder from several threads: two build() calls at once and operators
  added while build() runs (regression: two graphs were built over one IR,
  then freed twice -- a segfault), a caller's dict mutated during build();
* one tensor written and read by 8 threads: every read is one whole write;
* destroy() of a context while 8 threads have work queued: each thread ends
  promptly with results or InvalidStateError / AbortError, none hangs;
* many coroutines on one context (compute_async).

Every wait has a timeout: a deadlock fails the test instead of hanging."""
import asyncio
import threading
import time

import numpy as np
import pytest

import webnn

N_THREADS = 8
JOIN_S = 120


def run_threads(target, n=N_THREADS, timeout=JOIN_S):
    errors, results = [], [None] * n
    barrier = threading.Barrier(n)

    def wrap(i):
        try:
            barrier.wait(timeout=30)
            results[i] = target(i)
        except BaseException as e:  # noqa: BLE001 -- reported below
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


# ---- graphs of several families, with NumPy references --------------------------
def _has(*ops):
    return all(op in webnn.OPERATORS for op in ops)


def _families():
    """(name, build(b, x) -> operand, reference(x) -> ndarray) for a [4, 6]
    float32 input; only operators of this build."""
    fams = [
        ("binary", lambda b, x: b.sub(b.mul(x, x), b.add(x, b.constant("float32", 1.0))),
         lambda x: x * x - (x + 1)),
        ("unary", lambda b, x: b.tanh(b.abs(b.neg(x))), lambda x: np.tanh(np.abs(-x))),
        ("compare", lambda b, x: b.cast(b.greater(x, b.constant("float32", 0.5)), "float32"),
         lambda x: (x > 0.5).astype(np.float32)),
        ("matmul", lambda b, x: b.matmul(x, b.constant(np.eye(6, 3, dtype=np.float32))),
         lambda x: x @ np.eye(6, 3, dtype=np.float32)),
    ]
    if _has("transpose", "concat", "slice"):
        fams.append(("movement", lambda b, x: b.concat([b.slice(x, [0, 1], [4, 2]), b.transpose(b.slice(x, [0, 0], [2, 4]))], 1),
                     lambda x: np.concatenate([x[:, 1:3], x[:2, :4].T], 1)))
    if _has("softmax"):
        fams.append(("softmax", lambda b, x: b.softmax(x, 1),
                     lambda x: np.exp(x - x.max(1, keepdims=True)) / np.exp(x - x.max(1, keepdims=True)).sum(1, keepdims=True)))
    if _has("gather"):
        fams.append(("gather", lambda b, x: b.gather(x, b.constant(np.array([3, 0, 2], np.int32)), axis=0),
                     lambda x: x[[3, 0, 2]]))
    if _has("reduceSum"):
        fams.append(("reduce", lambda b, x: b.reduce_sum(x, axes=[1]), lambda x: x.sum(1)))
    if _has("conv2d"):
        fams.append(("conv2d", lambda b, x: b.reshape(b.conv2d(b.reshape(x, [1, 1, 4, 6]),
                                                               b.constant(np.ones((1, 1, 1, 1), np.float32))), [4, 6]),
                     lambda x: x))
    return fams


def _family_work(ctx, i, rounds=6):
    rng = np.random.default_rng(i)
    fams = _families()
    for r in range(rounds):
        name, build, ref = fams[(i + r) % len(fams)]
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", {"dataType": "float32", "shape": [4, 6]})
        g = b.build({"y": build(b, x)})
        xv = rng.standard_normal((4, 6)).astype(np.float32)
        got = ctx.compute(g, {"x": xv})["y"]
        np.testing.assert_allclose(got, ref(xv), rtol=1e-5, atol=1e-6, err_msg=f"thread {i} {name}")
        # the spec path too, on the same graph
        tx = ctx.create_tensor({"dataType": "float32", "shape": [4, 6], "writable": True})
        ty = ctx.create_tensor({"dataType": "float32", "shape": list(got.shape), "readable": True})
        ctx.write_tensor(tx, xv)
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        np.testing.assert_array_equal(ctx.read_tensor(ty), got)
        tx.destroy()
        ty.destroy()
        g.destroy()
    return i


def test_8_threads_every_family_shared_context():
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        assert run_threads(lambda i: _family_work(ctx, i)) == list(range(N_THREADS))
    finally:
        ctx.destroy()


def test_8_threads_every_family_own_contexts():
    def target(i):
        ctx = webnn.ml.create_context(device_type="cpu")
        try:
            return _family_work(ctx, i, rounds=4)
        finally:
            ctx.destroy()
    assert run_threads(target) == list(range(N_THREADS))


# ---- one builder, several threads ------------------------------------------------------
def _long_chain(b, n):
    x = b.input("x", {"dataType": "float32", "shape": [2, 2]})
    y = x
    for _ in range(n):
        y = b.relu(y)
    return x, y


def test_concurrent_build_of_one_builder_builds_one_graph():
    """Regression (double free): two threads calling build() on one builder
    both built a graph over the same IR, and a third adding operators raced
    with them.  Now one build() wins; the other calls are InvalidStateError."""
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        for it in range(6):
            b = webnn.MLGraphBuilder(ctx)
            x, y = _long_chain(b, 6000)
            results, lock = [], threading.Lock()
            barrier = threading.Barrier(3)

            def build():
                barrier.wait(timeout=30)
                try:
                    r = b.build({"y": y})
                except webnn.InvalidStateError as e:
                    r = e
                with lock:
                    results.append(r)

            def add_ops():
                barrier.wait(timeout=30)
                for _ in range(300):
                    try:
                        b.relu(x)
                    except webnn.InvalidStateError:
                        pass

            threads = [threading.Thread(target=f, daemon=True) for f in (build, build, add_ops)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(JOIN_S)
            assert not any(t.is_alive() for t in threads)
            graphs = [r for r in results if isinstance(r, webnn.MLGraph)]
            assert len(graphs) == 1, f"iteration {it}: {results}"
            out = ctx.compute(graphs[0], {"x": np.array([[-1, 2], [3, -4]], np.float32)})["y"]
            np.testing.assert_array_equal(out, [[0, 2], [3, 0]])
            with pytest.raises(webnn.InvalidStateError):
                b.relu(x)
    finally:
        ctx.destroy()


def test_outputs_dict_mutated_during_build():
    """build() keeps its own copy of the names: another thread emptying the
    caller's dict meanwhile changes nothing."""
    ctx = webnn.ml.create_context(device_type="cpu")
    try:
        for _ in range(4):
            b = webnn.MLGraphBuilder(ctx)
            x, y = _long_chain(b, 4000)
            outputs = {f"name-{k}-" + "x" * 100: y for k in range(20)}
            stop = threading.Event()

            def mutate():
                while not stop.is_set():
                    for k in list(outputs):
                        outputs.pop(k, None)
                    time.sleep(0)
            t = threading.Thread(target=mutate, daemon=True)
            snapshot = dict(outputs)
            t.start()
            try:
                g = b.build(snapshot)
                snapshot.clear()
            finally:
                stop.set()
                t.join(30)
            assert len(g.output_descriptors) == 20
    finally:
        ctx.destroy()


# ---- one tensor, many writers and readers ------------------------------------------------
def test_many_threads_write_and_read_one_tensor():
    ctx = webnn.ml.create_context(device_type="cpu")
    shape = (64, 64)
    t = ctx.create_tensor({"dataType": "int32", "shape": list(shape), "readable": True, "writable": True})
    try:
        def target(i):
            for r in range(40):
                v = np.full(shape, i * 1000 + r, np.int32)
                ctx.write_tensor(t, v)
                got = ctx.read_tensor(t)
                # a read sees one whole write (the timeline orders them)
                assert (got == got.flat[0]).all(), f"torn read in thread {i}"
                assert got.flat[0] % 1000 < 40 and got.flat[0] // 1000 < N_THREADS
            return i
        run_threads(target)
    finally:
        ctx.destroy()


# ---- destroy() while 8 threads have work queued ------------------------------------------
LOST = (webnn.InvalidStateError, webnn.AbortError)


def test_destroy_context_while_8_threads_dispatch():
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [192, 192]})
    w = b.constant(np.full((192, 192), 1 / 192, np.float32))
    y = x
    for _ in range(6):
        y = b.matmul(y, w)
    g = b.build({"y": y})
    started = threading.Barrier(N_THREADS + 1)
    outcome = [None] * N_THREADS

    def target(i):
        tx = ty = None
        try:
            tx = ctx.create_tensor({"dataType": "float32", "shape": [192, 192], "writable": True})
            ty = ctx.create_tensor({"dataType": "float32", "shape": [192, 192], "readable": True})
            started.wait(timeout=30)
            n = 0
            while True:
                ctx.write_tensor(tx, np.full((192, 192), i, np.float32))
                for _ in range(3):
                    ctx.dispatch(g, {"x": tx}, {"y": ty})
                got = ctx.read_tensor(ty)
                np.testing.assert_allclose(got, np.full((192, 192), i, np.float32), rtol=1e-4)
                n += 1
        except LOST as e:
            outcome[i] = ("lost", type(e).__name__)
        except BaseException as e:  # noqa: BLE001
            outcome[i] = ("error", repr(e))

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    started.wait(timeout=30)
    time.sleep(0.3)
    t0 = time.perf_counter()
    ctx.destroy()
    for t in threads:
        t.join(60)
    waited = time.perf_counter() - t0
    assert not any(t.is_alive() for t in threads), "a thread hangs after destroy()"
    assert all(o is not None and o[0] == "lost" for o in outcome), outcome
    assert waited < 30, f"threads took {waited:.1f}s to end after destroy()"
    # and everything after is an InvalidStateError, at once
    with pytest.raises(webnn.InvalidStateError):
        ctx.create_tensor({"dataType": "float32", "shape": [1]})
    with pytest.raises(webnn.InvalidStateError):
        webnn.MLGraphBuilder(ctx)


def test_destroy_context_while_threads_build_and_compute():
    """Threads building and computing on their own graphs of one context:
    destroy() ends each with InvalidStateError (build, tensors, dispatch)."""
    ctx = webnn.ml.create_context(device_type="cpu")
    started = threading.Barrier(N_THREADS + 1)
    outcome = [None] * N_THREADS

    def target(i):
        try:
            started.wait(timeout=30)
            while True:
                _family_work(ctx, i, rounds=1)
        except LOST:
            outcome[i] = "lost"
        except BaseException as e:  # noqa: BLE001
            outcome[i] = repr(e)

    threads = [threading.Thread(target=target, args=(i,), daemon=True) for i in range(N_THREADS)]
    for t in threads:
        t.start()
    started.wait(timeout=30)
    time.sleep(0.2)
    ctx.destroy()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hangs after destroy()"
    assert outcome == ["lost"] * N_THREADS, outcome


# ---- coroutines ------------------------------------------------------------------------------
def test_many_coroutines_on_one_context():
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "int32", "shape": [32]})
    g = b.build({"y": b.add(b.mul(x, b.constant("int32", 3)), b.constant("int32", 1))})

    async def one(i):
        v = np.arange(32, dtype=np.int32) + i
        out = await ctx.compute_async(g, {"x": v})
        np.testing.assert_array_equal(out["y"], v * 3 + 1)
        return i

    async def main():
        return await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(32))), JOIN_S)
    try:
        assert asyncio.run(main()) == list(range(32))
    finally:
        ctx.destroy()
