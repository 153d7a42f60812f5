"""destroy() of tensors, graphs and contexts raced against dispatch, build,
read_tensor, write_tensor, compute and garbage collection from several
threads (issue 16).

Every race here has two honest outcomes (the operation saw the destroy and
failed with the spec's error, or it ran before the destroy took effect) and
no third one: no crash, no hang, no wrong value, no other exception.  The
suite runs in the normal pytest run and again against a ThreadSanitizer
build of the core and the extension (`make test-tsan`), where any data race
in the paths it drives fails the run.

WEBNN_RACE_ROUNDS scales the number of rounds (default 1; CI's TSan run uses
the default, a long local soak e.g. 50)."""
import gc
import os
import random
import threading

import numpy as np
import pytest

import webnn

ROUNDS = int(os.environ.get("WEBNN_RACE_ROUNDS", "1"))
ERRORS = (TypeError, webnn.InvalidStateError, webnn.OperationError)
N = 4096


@pytest.fixture(autouse=True)
def _frozen_heap():
    """The objects made before the test moved out of the collector's reach
    (gc.freeze): the collections raced here then traverse what the test
    makes, not the whole suite's heap -- after 18,000 tests a collection
    took long enough that these tests ran 7 times slower than alone (42 s
    against 6 under ASan).  What the test makes is collected as before."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


def desc(shape, **flags):
    return {"dataType": "float32", "shape": list(shape), **flags}


def add_graph(ctx, n=N):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", desc([n]))
    y = b.input("y", desc([n]))
    return b.build({"z": b.add(x, y)})


def run_threads(fns, seconds=None):
    errors = []

    def wrap(fn):
        try:
            fn()
        except BaseException as e:  # noqa: BLE001 -- reported below
            errors.append(e)

    ths = [threading.Thread(target=wrap, args=(f,)) for f in fns]
    for t in ths:
        t.start()
    for t in ths:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread hangs"
    if errors:
        raise errors[0]


def expect_ok_or_spec_error(fn, *args):
    try:
        return fn(*args), None
    except ERRORS as e:
        return None, e


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_tensor_destroy_races_dispatch_read_write(round_):
    ctx = webnn.ml.create_context()
    g = add_graph(ctx)
    a = np.arange(N, dtype=np.float32)
    stop = threading.Event()
    pool = []
    lock = threading.Lock()

    def make():
        tx = ctx.create_tensor(desc([N], writable=True))
        ty = ctx.create_tensor(desc([N], writable=True))
        tz = ctx.create_tensor(desc([N], readable=True, writable=True))
        ctx.write_tensor(tx, a)
        ctx.write_tensor(ty, a)
        return tx, ty, tz

    for _ in range(4):
        pool.append(make())

    def worker(seed):
        rnd = random.Random(seed)
        for _ in range(150):
            with lock:
                tx, ty, tz = pool[rnd.randrange(len(pool))]
            _, e = expect_ok_or_spec_error(ctx.dispatch, g, {"x": tx, "y": ty}, {"z": tz})
            if e is None:
                out, e = expect_ok_or_spec_error(ctx.read_tensor, tz)
                if out is not None:
                    # either the sum, or what a racing write_tensor left in z
                    assert np.array_equal(out, a + a) or np.array_equal(out, a)
            expect_ok_or_spec_error(ctx.write_tensor, tx, a)

    def destroyer():
        rnd = random.Random(99)
        while not stop.is_set():
            with lock:
                i = rnd.randrange(len(pool))
                victim = pool[i]
                pool[i] = make()
            for t in victim:
                if rnd.random() < 0.7:
                    t.destroy()
            if rnd.random() < 0.3:
                gc.collect()

    def writer_to_z():
        for _ in range(100):
            with lock:
                _, _, tz = pool[0]
            expect_ok_or_spec_error(ctx.write_tensor, tz, a)

    d = threading.Thread(target=destroyer)
    d.start()
    try:
        run_threads([lambda s=s: worker(s) for s in range(3)] + [writer_to_z])
    finally:
        stop.set()
        d.join()
    ctx.destroy()


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_graph_destroy_races_dispatch(round_):
    ctx = webnn.ml.create_context()
    a = np.ones(N, np.float32)
    tx = ctx.create_tensor(desc([N], writable=True))
    ty = ctx.create_tensor(desc([N], writable=True))
    tz = ctx.create_tensor(desc([N], readable=True))
    ctx.write_tensor(tx, a)
    ctx.write_tensor(ty, a)
    graphs = [add_graph(ctx) for _ in range(8)]

    def dispatcher():
        for i in range(200):
            expect_ok_or_spec_error(ctx.dispatch, graphs[i % 8], {"x": tx, "y": ty}, {"z": tz})

    def destroyer():
        for i in range(40):
            g = graphs[i % 8]
            graphs[i % 8] = add_graph(ctx)
            g.destroy()
            del g
            if i % 10 == 0:
                gc.collect()

    run_threads([dispatcher, dispatcher, destroyer])
    ctx.dispatch(graphs[0], {"x": tx, "y": ty}, {"z": tz})
    np.testing.assert_array_equal(ctx.read_tensor(tz), a + a)
    ctx.destroy()


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_constant_tensor_destroy_races_build(round_):
    ctx = webnn.ml.create_context()
    data = np.arange(N, dtype=np.float32)
    results = []

    def builder():
        for _ in range(30):
            t = ctx.create_constant_tensor(desc([N]), data)
            b = webnn.MLGraphBuilder(ctx)
            x = b.input("x", desc([N]))
            y = b.mul(x, b.constant(t))
            killer = threading.Thread(target=t.destroy)
            killer.start()
            g, e = expect_ok_or_spec_error(b.build, {"y": y})
            killer.join()
            if g is not None:
                out = ctx.compute(g, {"x": np.full(N, 2, np.float32)})["y"]
                results.append(np.array_equal(out, data * 2))
                g.destroy()

    run_threads([builder, builder])
    assert all(results)
    ctx.destroy()


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_context_destroy_races_everything(round_):
    """A context destroyed while other threads build, dispatch, read, write
    and compute on it: each of them finishes or fails with the spec's error,
    and nothing runs after the context's resources are gone."""
    for k in range(6):
        ctx = webnn.ml.create_context()
        g = add_graph(ctx)
        a = np.ones(N, np.float32)
        go = threading.Event()

        def user(seed):
            rnd = random.Random(seed)
            go.wait()
            for _ in range(40):
                what = rnd.randrange(5)
                if what == 0:
                    expect_ok_or_spec_error(add_graph, ctx)
                elif what == 1:
                    expect_ok_or_spec_error(ctx.compute, g, {"x": a, "y": a})
                elif what == 2:
                    t, _ = expect_ok_or_spec_error(ctx.create_tensor, desc([N], writable=True, readable=True))
                    if t is not None:
                        expect_ok_or_spec_error(ctx.write_tensor, t, a)
                        expect_ok_or_spec_error(ctx.read_tensor, t)
                elif what == 3:
                    gc.collect()
                else:
                    def build_one():
                        b = webnn.MLGraphBuilder(ctx)
                        x = b.input("x", desc([N]))
                        return b.build({"y": b.relu(x)})
                    expect_ok_or_spec_error(build_one)  # any step may see the loss

        def killer():
            go.wait()
            threading.Event().wait(0.002 * k)
            ctx.destroy()

        run_threads([lambda s=s: user(s) for s in range(3)] + [killer, go.set])
        with pytest.raises(webnn.InvalidStateError):
            ctx.compute(g, {"x": a, "y": a})


def test_tensors_dropped_by_gc_while_dispatching():
    """MLTensor objects that only a cycle keeps alive, collected on another
    thread while their dispatch is queued: the queued work holds its own
    references, the result is right."""
    ctx = webnn.ml.create_context()
    g = add_graph(ctx)
    a = np.arange(N, dtype=np.float32)
    outs = []

    def producer():
        for _ in range(100):
            tx = ctx.create_tensor(desc([N], writable=True))
            ty = ctx.create_tensor(desc([N], writable=True))
            tz = ctx.create_tensor(desc([N], readable=True))
            ctx.write_tensor(tx, a)
            ctx.write_tensor(ty, a)
            cyc = {"x": tx, "y": ty}
            cyc["self"] = cyc  # only the collector frees it
            ctx.dispatch(g, {"x": tx, "y": ty}, {"z": tz})
            del tx, ty, cyc
            outs.append(tz)

    def collector():
        for _ in range(100):
            gc.collect()

    run_threads([producer, collector])
    for tz in outs:
        np.testing.assert_array_equal(ctx.read_tensor(tz), a + a)
    ctx.destroy()
