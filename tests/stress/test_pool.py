"""The CPU backend's thread pool (csrc/cpu/pool.c) with work large enough to
be threaded:

* contexts computing at once (one of them gets the pool, the others run
  their regions on their own thread): every result equals the result of the
  same graph computed alone, bit for bit where the kernel's split does not
  depend on the thread count;
* a barrier region (an LSTM over many steps, whose team meets after every
  step) on several contexts at once: no deadlock, same results;
* fork() after the pool has run: the child computes with a pool of its own
  (on a context of its own: the core's contexts are not fork-safe, see the
  test).

Every wait has a timeout: a deadlock fails the test instead of hanging."""
import gc
import os
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import webnn

F32 = "float32"


def _desc(shape):
    return {"dataType": F32, "shape": list(shape)}


def _graphs(ctx):
    """(name, graph, inputs, exact) built on ctx: element-wise, movement,
    softmax, reduction, conv2d and matmul, each above the threading
    thresholds."""
    rng = np.random.default_rng(7)
    out = []
    x = rng.standard_normal((64, 4096)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", _desc(x.shape))
    y = b.sigmoid(b.add(b.mul(xi, xi), b.constant(F32, 0.5)))
    y = b.transpose(b.softmax(y, 1))
    out.append(("elementwise+transpose+softmax", b.build({"y": y}), {"x": x}, True))
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", _desc(x.shape))
    out.append(("reduce", b.build({"y": b.reduce_sum(xi, axes=[1])}), {"x": x}, True))
    img = rng.standard_normal((1, 32, 56, 56)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", _desc(img.shape))
    out.append(("conv2d", b.build({"y": b.relu(b.conv2d(xi, b.constant(w), padding=[1, 1, 1, 1]))}),
                {"x": img}, True))
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", _desc(a.shape))
    out.append(("matmul", b.build({"y": b.matmul(xi, b.constant(a))}), {"x": a}, True))
    return out


def _run_threads(target, n, timeout=120):
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


def test_contexts_at_once_give_the_results_of_one_alone():
    ctx = webnn.ml.create_context()
    ref = {name: ctx.compute(g, ins)["y"] for name, g, ins, _ in _graphs(ctx)}

    def work(i):
        c = webnn.ml.create_context()
        for _ in range(3):
            for name, g, ins, exact in _graphs(c):
                got = c.compute(g, ins)["y"]
                if exact:
                    np.testing.assert_array_equal(got, ref[name], err_msg=f"{name} in thread {i}")
                else:
                    np.testing.assert_allclose(got, ref[name], rtol=1e-5, atol=1e-6)
        return i
    _run_threads(work, 4)


@pytest.mark.skipif("lstm" not in webnn.OPERATORS, reason="no lstm in this build")
def test_barrier_regions_on_contexts_at_once():
    T, B, I, H = 64, 4, 64, 256
    rng = np.random.default_rng(3)
    x = rng.standard_normal((T, B, I)).astype(np.float32) * 0.1
    w = rng.standard_normal((1, 4 * H, I)).astype(np.float32) * 0.1
    r = rng.standard_normal((1, 4 * H, H)).astype(np.float32) * 0.1

    def build(ctx):
        b = webnn.MLGraphBuilder(ctx)
        xi = b.input("x", _desc(x.shape))
        outs = b.lstm(xi, b.constant(w), b.constant(r), T, H)
        return b.build({"y": outs[0]})
    ctx = webnn.ml.create_context()
    ref = ctx.compute(build(ctx), {"x": x})["y"]

    def work(i):
        c = webnn.ml.create_context()
        g = build(c)
        for _ in range(4):
            np.testing.assert_allclose(c.compute(g, {"x": x})["y"], ref, rtol=1e-5, atol=1e-6)
        return i
    _run_threads(work, 3)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_fork_after_the_pool_has_run():
    ctx = webnn.ml.create_context()
    graphs = _graphs(ctx)
    ref = {name: ctx.compute(g, ins)["y"] for name, g, ins, _ in graphs}
    # The child must not release objects of the parent: a context whose
    # timeline thread waited on a condition variable at fork() hangs in
    # pthread_cond_destroy() in the child (that waiter is gone there).
    gc.collect()
    gc.freeze()
    pid = -1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
            pid = os.fork()
    finally:
        if pid != 0:
            gc.unfreeze()
    if pid == 0:  # the child: a new context (the parent's timeline is gone)
        code = 1
        try:
            c = webnn.ml.create_context()
            ok = all(np.array_equal(c.compute(g, ins)["y"], ref[name])
                     for name, g, ins, _ in _graphs(c))
            code = 0 if ok else 2
        finally:
            sys.stdout.flush()
            os._exit(code)
    deadline = time.monotonic() + float(os.environ.get('WNN_FORK_S', '120'))
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            if os.environ.get("WNN_DEBUG_FORK"):
                os.system(f"gdb -p {pid} -batch -ex 'thread apply all bt' > /tmp/tp/forkbt.txt 2>&1")
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung (pool not reset after fork?)")
        time.sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    # and the parent's pool still works
    for name, g, ins, _ in graphs:
        np.testing.assert_array_equal(ctx.compute(g, ins)["y"], ref[name])
