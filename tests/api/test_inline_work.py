"""Small work on the caller's thread (csrc/core/timeline.c, wnn_enqueue): when the
timeline is idle, reads and writes of up to 64 KiB and dispatches of small
element-wise graphs run on the calling thread instead of being handed to
the timeline thread.  The order must stay the timeline's: small work that
comes while other work is queued or running must wait for it.  The tests
compare with NumPy and check through the context's counters that the
shortcut they depend on was (or was not) taken."""
import threading

import numpy as np
import pytest

import webnn
from webnn import _core


def inline_runs(ctx):
    return _core.context_info(ctx._h)["inline_runs"]


def f32(shape, **flags):
    return {"dataType": "float32", "shape": list(shape), **flags}


def test_small_dispatch_and_read_inline(ctx):
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.mul(b.add(b.input("a", f32([5])), b.input("b", f32([5]))),
                            b.constant("float32", 0.5))})
    ta, tb = (ctx.create_tensor(f32([5], writable=True)) for _ in range(2))
    ty = ctx.create_tensor(f32([5], readable=True))
    out = np.empty(5, np.float32)
    n0 = inline_runs(ctx)
    for i in range(50):
        a = np.arange(5, dtype=np.float32) * i
        b_ = np.full(5, np.nan if i == 7 else -i, np.float32)
        ctx.write_tensor(ta, a)
        ctx.write_tensor(tb, b_)
        ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
        ctx.read_tensor(ty, out)
        np.testing.assert_array_equal(out, ((a.astype(np.float64) + b_) * 0.5).astype(np.float32))
    # writes, dispatches and reads: nearly all on this thread (a task may
    # find the timeline thread still finishing the one before)
    assert inline_runs(ctx) - n0 >= 100


def test_small_work_waits_for_queued_work(ctx):
    """A large dispatch reads a small input; a write into that input right
    after it must not run before it, nor a read of its output."""
    n = 1 << 22
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32([4]))
    big = b.build({"y": b.sqrt(b.abs(b.expand(b.reshape(x, [4, 1]), [4, n // 4])))})
    tx = ctx.create_tensor(f32([4], writable=True))
    ty = ctx.create_tensor(f32([4, n // 4], readable=True))
    b2 = webnn.MLGraphBuilder(ctx)
    small = b2.build({"z": b2.neg(b2.input("x", f32([4])))})
    tz = ctx.create_tensor(f32([4], readable=True))
    for i in range(5):
        old = np.array([1, 4, 9, 16], np.float32) * (i + 1)
        ctx.write_tensor(tx, old)
        ctx.dispatch(big, {"x": tx}, {"y": ty})
        ctx.write_tensor(tx, np.full(4, -1, np.float32))  # queued behind the dispatch
        ctx.dispatch(small, {"x": tx}, {"z": tz})
        np.testing.assert_array_equal(ctx.read_tensor(tz), np.ones(4, np.float32))
        got = ctx.read_tensor(ty)
        np.testing.assert_array_equal(got[:, 0], np.sqrt(old))
        np.testing.assert_array_equal(got[:, -1], np.sqrt(old))


def test_threads_mix_small_and_large(ctx):
    """Threads sharing a context, some with small graphs (inline when the
    timeline is idle) and one with a large one (queued): each read sees its
    own thread's last dispatch."""
    b = webnn.MLGraphBuilder(ctx)
    gs = b.build({"y": b.add(b.input("a", f32([16])), b.constant("float32", 1.0))})
    b = webnn.MLGraphBuilder(ctx)
    gl = b.build({"y": b.add(b.input("a", f32([1 << 20])), b.constant("float32", 1.0))})
    errors = []

    def work(g, n, seed):
        try:
            ta = ctx.create_tensor(f32([n], writable=True))
            ty = ctx.create_tensor(f32([n], readable=True))
            rng = np.random.default_rng(seed)
            for _ in range(150 if n > 16 else 1500):
                a = rng.standard_normal(n).astype(np.float32)
                ctx.write_tensor(ta, a)
                ctx.dispatch(g, {"a": ta}, {"y": ty})
                np.testing.assert_array_equal(ctx.read_tensor(ty), a + np.float32(1))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(gs, 16, 1)),
          threading.Thread(target=work, args=(gs, 16, 2)),
          threading.Thread(target=work, args=(gl, 1 << 20, 3))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors


def test_not_inline(ctx):
    """Large reads and writes, and graphs that are not element-wise, go to
    the timeline thread."""
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.matmul(b.input("a", f32([4, 4])), b.constant(np.eye(4, dtype=np.float32)))})
    ta = ctx.create_tensor(f32([4, 4], writable=True, readable=True))
    ty = ctx.create_tensor(f32([4, 4], readable=True))
    big = ctx.create_tensor(f32([1 << 15], writable=True, readable=True))
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    ctx.write_tensor(ta, a)
    ctx.read_tensor(ta)
    n0 = inline_runs(ctx)
    for _ in range(5):
        ctx.dispatch(g, {"a": ta}, {"y": ty})
        ctx.write_tensor(big, np.ones(1 << 15, np.float32))
        ctx.read_tensor(big)
    assert inline_runs(ctx) == n0
    np.testing.assert_array_equal(ctx.read_tensor(ty), a)


def test_destroyed_context_small_work(ctx):
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.relu(b.input("a", f32([3])))})
    ta = ctx.create_tensor(f32([3], writable=True))
    ty = ctx.create_tensor(f32([3], readable=True))
    ctx.destroy()
    with pytest.raises(webnn.InvalidStateError):
        ctx.dispatch(g, {"a": ta}, {"y": ty})
    with pytest.raises((webnn.InvalidStateError, TypeError)):
        ctx.read_tensor(ty)


def test_small_compute_inline(ctx):
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.sigmoid(b.input("a", f32([7])))})
    a = np.array([-np.inf, -3, -0.0, 0, 2.5, np.inf, np.nan], np.float32)
    n0 = inline_runs(ctx)
    for _ in range(20):
        got = ctx.compute(g, {"a": a})["y"]
    with np.errstate(over="ignore"):
        want = 1 / (1 + np.exp(-a.astype(np.float64)))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert inline_runs(ctx) - n0 >= 15
