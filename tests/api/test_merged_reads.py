"""Reads merged into dispatches (csrc/core/timeline_merge.c): for a graph of
element-wise operators with one output, the timeline runs the graph straight
into the buffer of the read_tensor() that follows its dispatch, leaves the
output tensor "owed" and runs the graph again when the tensor's content is
needed.  Every result a caller can see must be the unmerged timeline's: the
tests below build each state that the bookkeeping tracks (a read merged,
then the tensor read again, used as an input, overwritten, destroyed,
released; its inputs written, overwritten by a dispatch, destroyed) and
compare with NumPy in float64, and they check through the context's
counters that the merge they depend on did happen."""
import gc
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import webnn
from webnn import _core

N = 65539  # 256 KiB (the smallest output merged) + a tail after every vector width


def counts(ctx):
    info = _core.context_info(ctx._h)
    return info["merged_reads"], info["owed_reruns"]


def f32(shape, **flags):
    return {"dataType": "float32", "shape": list(shape), **flags}


@pytest.fixture
def add_relu(ctx):
    """y = relu(a + b) over [N], its tensors, and a float64 reference."""
    b = webnn.MLGraphBuilder(ctx)
    a_, b_ = b.input("a", f32([N])), b.input("b", f32([N]))
    g = b.build({"y": b.relu(b.add(a_, b_))})
    ta = ctx.create_tensor(f32([N], writable=True, readable=True))
    tb = ctx.create_tensor(f32([N], writable=True, readable=True))
    ty = ctx.create_tensor(f32([N], writable=True, readable=True))

    def ref(a, b):
        return np.maximum(a.astype(np.float64) + b, 0).astype(np.float32)
    return g, ta, tb, ty, ref


def values(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(N).astype(np.float32)
    a[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return a


def merged_read(ctx, g, ins, ty, out, tries=1000):
    """dispatch + read_tensor(ty, out) until the read was merged (it is, unless
    the calling thread took over 50 us between the two calls)."""
    for _ in range(tries):
        m0, _ = counts(ctx)
        ctx.dispatch(g, ins, {"y": ty})
        ctx.read_tensor(ty, out)
        if counts(ctx)[0] == m0 + 1:
            return
    pytest.fail("no read was merged into its dispatch in %d tries" % tries)


def owe(ctx, add_relu, seed_a, seed_b):
    """Inputs a, b written, and y = relu(a + b) read through a merged read:
    y is owed.  Returns a, b."""
    g, ta, tb, ty, _ = add_relu
    a, b = values(seed_a), values(seed_b)
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    merged_read(ctx, g, {"a": ta, "b": tb}, ty, np.empty(N, np.float32))
    return a, b


def test_merged_read_values(ctx, add_relu):
    g, ta, tb, ty, ref = add_relu
    out = np.empty(N, np.float32)
    for i in range(5):
        a, b = values(i), values(i + 100)
        ctx.write_tensor(ta, a)
        ctx.write_tensor(tb, b)
        merged_read(ctx, g, {"a": ta, "b": tb}, ty, out)
        np.testing.assert_array_equal(out, ref(a, b))
    # the returning form of read_tensor merges too
    m0, _ = counts(ctx)
    for _ in range(1000):
        ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
        got = ctx.read_tensor(ty)
        if counts(ctx)[0] > m0:
            break
    assert counts(ctx)[0] > m0
    np.testing.assert_array_equal(got, ref(a, b))


def test_owed_tensor_read_again(ctx, add_relu):
    """A second read of an owed tensor runs the graph again into its buffer."""
    g, ta, tb, ty, ref = add_relu
    a, b = values(1), values(2)
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    out = np.empty(N, np.float32)
    merged_read(ctx, g, {"a": ta, "b": tb}, ty, out)
    _, r0 = counts(ctx)
    out2 = np.full(N, 7, np.float32)
    ctx.read_tensor(ty, out2)
    np.testing.assert_array_equal(out2, ref(a, b))
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))
    assert counts(ctx)[1] == r0 + 2
    # the first buffer is the caller's: changing it changes nothing
    out[:] = 5
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))


@pytest.mark.parametrize("how", ["write", "dispatch"])
def test_input_changed_after_merge(ctx, add_relu, how):
    """An input of the owed dispatch written (or overwritten by another
    dispatch): the output keeps the content it had."""
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 3, 4)
    _, r0 = counts(ctx)
    if how == "write":
        ctx.write_tensor(ta, np.zeros(N, np.float32))
    else:
        bb = webnn.MLGraphBuilder(ctx)
        gz = bb.build({"z": bb.neg(bb.input("x", f32([N])))})
        ctx.dispatch(gz, {"x": tb}, {"z": ta})
        np.testing.assert_array_equal(ctx.read_tensor(ta), -b)
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))
    # (counted after the reads: writeTensor returns before it has run)
    assert counts(ctx)[1] == r0 + 1  # settled once, before the write


def test_owed_tensor_as_input(ctx, add_relu):
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 5, 6)
    bb = webnn.MLGraphBuilder(ctx)
    gz = bb.build({"z": bb.mul(bb.input("x", f32([N])), bb.constant("float32", 3.0))})
    tz = ctx.create_tensor(f32([N], readable=True))
    ctx.dispatch(gz, {"x": ty}, {"z": tz})
    np.testing.assert_array_equal(ctx.read_tensor(tz), ref(a, b) * np.float32(3))
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))


def test_owed_tensor_overwritten(ctx, add_relu):
    """writeTensor or a dispatch into the owed tensor: no run needed."""
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 7, 8)
    _, r0 = counts(ctx)
    new = values(9)
    ctx.write_tensor(ty, new)
    np.testing.assert_array_equal(ctx.read_tensor(ty), new)
    merged_read(ctx, g, {"a": ta, "b": tb}, ty, np.empty(N, np.float32))
    ctx.dispatch(g, {"a": tb, "b": ta}, {"y": ty})
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(b, a))
    assert counts(ctx)[1] == r0


def test_input_destroyed_while_owed(ctx, add_relu):
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 10, 11)
    ta.destroy()
    tb.destroy()
    del ta, tb
    gc.collect()
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))


def test_owed_tensor_destroyed(ctx, add_relu):
    g, ta, tb, ty, ref = add_relu
    ctx.write_tensor(ta, values(12))
    ctx.write_tensor(tb, values(13))
    merged_read(ctx, g, {"a": ta, "b": tb}, ty, np.empty(N, np.float32))
    ty.destroy()
    with pytest.raises(TypeError):
        ctx.read_tensor(ty)
    ty2 = ctx.create_tensor(f32([N], readable=True))
    merged_read(ctx, g, {"a": ta, "b": tb}, ty2, np.empty(N, np.float32))
    np.testing.assert_array_equal(ctx.read_tensor(ty2), ref(values(12), values(13)))


def test_one_owed_tensor_per_context(ctx, add_relu):
    """While one output is owed, another graph's read is not merged."""
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 14, 15)
    bb = webnn.MLGraphBuilder(ctx)
    gz = bb.build({"z": bb.sigmoid(bb.input("x", f32([N])))})
    tz = ctx.create_tensor(f32([N], readable=True))
    m0, _ = counts(ctx)
    for _ in range(5):
        ctx.dispatch(gz, {"x": ta}, {"z": tz})
        got = ctx.read_tensor(tz)
    assert counts(ctx)[0] == m0
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-a.astype(np.float64))), rtol=1e-6)
    np.testing.assert_array_equal(ctx.read_tensor(ty), ref(a, b))


def test_not_merged(ctx):
    """Graphs that are not element-wise, with two outputs, or whose read is
    not next: plain reads, the same values."""
    s = [256, 256]
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", f32(s))
    g_mm = b.build({"y": b.matmul(x, x)})
    b = webnn.MLGraphBuilder(ctx)
    x2 = b.input("x", f32(s))
    g_two = b.build({"y": b.relu(x2), "z": b.neg(x2)})
    b = webnn.MLGraphBuilder(ctx)
    g_small = b.build({"y": b.relu(b.input("x", f32([s[0] * s[1] // 2 - 1])))})
    tx = ctx.create_tensor(f32(s, writable=True))
    ty = ctx.create_tensor(f32(s, readable=True))
    tz = ctx.create_tensor(f32(s, readable=True))
    txs = ctx.create_tensor(f32([s[0] * s[1] // 2 - 1], writable=True))
    tys = ctx.create_tensor(f32([s[0] * s[1] // 2 - 1], readable=True))
    v = np.random.default_rng(0).standard_normal(s).astype(np.float32)
    ctx.write_tensor(txs, v.ravel()[:s[0] * s[1] // 2 - 1])
    ctx.write_tensor(tx, v)
    m0, _ = counts(ctx)
    for _ in range(10):
        ctx.dispatch(g_mm, {"x": tx}, {"y": ty})
        mm = ctx.read_tensor(ty)
        ctx.dispatch(g_two, {"x": tx}, {"y": ty, "z": tz})
        y, z = ctx.read_tensor(ty), ctx.read_tensor(tz)
        ctx.dispatch(g_small, {"x": txs}, {"y": tys})  # under 256 KiB
        small = ctx.read_tensor(tys)
    assert counts(ctx)[0] == m0
    np.testing.assert_array_equal(small, np.maximum(v.ravel()[:s[0] * s[1] // 2 - 1], 0))
    # (einsum: no BLAS threads, which the TSan run of these tests would flag)
    v64 = v.astype(np.float64)
    np.testing.assert_allclose(mm, np.einsum("ij,jk->ik", v64, v64), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(y, np.maximum(v, 0))
    np.testing.assert_array_equal(z, -v)


def test_rewritten_inputs_stop_merging(ctx, add_relu):
    """A program that writes the inputs before each read of the output forces
    a run per merge: the context stops merging (owed_score), results stay
    right."""
    g, ta, tb, ty, ref = add_relu
    out = np.empty(N, np.float32)
    m0, r0 = counts(ctx)
    # (a merge needs the read within 50 us of its dispatch, which a slow
    # sanitizer run often misses: go on until one merged)
    for i in range(600):
        a, b = values(i % 60), values(i % 60 + 1)
        ctx.write_tensor(ta, a)
        ctx.write_tensor(tb, b)
        ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
        ctx.read_tensor(ty, out)
        np.testing.assert_array_equal(out, ref(a, b))
        if i >= 59 and counts(ctx)[0] > m0:
            break
    m, r = counts(ctx)
    assert m - m0 >= 1
    # every merge costs a forced run (-4) that 4 skips pay back: at most one
    # merge in 5 dispatches, where merging on would merge nearly all
    assert m - m0 <= (i + 1) // 3, (i + 1, m - m0, r - r0)


def test_dtypes_and_broadcast(ctx):
    """int32 and a broadcast operand; cast and where in the graph."""
    b = webnn.MLGraphBuilder(ctx)
    i = b.input("i", {"dataType": "int32", "shape": [3, N]})
    row = b.input("r", {"dataType": "int32", "shape": [N]})
    s = b.add(i, row)
    y = b.where(b.greater(s, b.constant("int32", 0)), b.cast(s, "float32"),
                b.constant("float32", -1.0))
    g = b.build({"y": y})
    iv = np.random.default_rng(1).integers(-50, 50, (3, N)).astype(np.int32)
    rv = np.random.default_rng(2).integers(-50, 50, N).astype(np.int32)
    ti = ctx.create_tensor({"dataType": "int32", "shape": [3, N], "writable": True})
    tr = ctx.create_tensor({"dataType": "int32", "shape": [N], "writable": True})
    ty = ctx.create_tensor(f32([3, N], readable=True))
    ctx.write_tensor(ti, iv)
    ctx.write_tensor(tr, rv)
    out = np.empty((3, N), np.float32)
    merged_read(ctx, g, {"i": ti, "r": tr}, ty, out)
    sv = iv + rv
    want = np.where(sv > 0, sv.astype(np.float32), np.float32(-1))
    np.testing.assert_array_equal(out, want)
    ctx.write_tensor(tr, np.zeros(N, np.int32))
    np.testing.assert_array_equal(ctx.read_tensor(ty), want)


def test_released_owed_tensor_frees_everything(ctx):
    """The owed record holds the graph and the inputs, not the output: when
    the caller lets go of everything, the context goes too (its timeline
    thread ends)."""
    def threads():
        return len(os.listdir("/proc/self/task"))
    gc.collect()
    before = threads()
    for _ in range(5):
        c = webnn.ml.create_context(device_type="cpu")
        b = webnn.MLGraphBuilder(c)
        g = b.build({"y": b.relu(b.input("a", f32([N])))})
        ta = c.create_tensor(f32([N], writable=True))
        ty = c.create_tensor(f32([N], readable=True))
        c.write_tensor(ta, values(0))
        for _ in range(1000):
            m0, _ = counts(c)
            c.dispatch(g, {"a": ta}, {"y": ty})
            c.read_tensor(ty, np.empty(N, np.float32))
            if counts(c)[0] > m0:
                break
        assert counts(c)[0] > 0
        del c, b, g, ta, ty
        gc.collect()
    # A joined thread can stay listed in /proc/self/task for a moment after
    # pthread_join returns (the kernel clears the tid before it reaps the
    # task), longer under a sanitizer: wait for it, but not forever.
    deadline = time.monotonic() + 10
    while threads() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threads() <= before


def test_threads_share_a_context(ctx, add_relu):
    """Two threads dispatching and reading the same graph into their own
    outputs: every read the value of its own dispatch."""
    g, ta, tb, _, ref = add_relu
    a, b = values(20), values(21)
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    want = ref(a, b)
    errors = []

    def work(k):
        try:
            ty = ctx.create_tensor(f32([N], readable=True))
            out = np.empty(N, np.float32)
            for j in range(300):
                ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
                ctx.read_tensor(ty, out)
                np.testing.assert_array_equal(out, want)
                if j % 50 == 0:
                    np.testing.assert_array_equal(ctx.read_tensor(ty), want)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors


def test_switch_off():
    """WEBNN_MERGE_READS=0: no merges, the same values."""
    code = (
        "import numpy as np, webnn\n"
        "from webnn import _core\n"
        "c = webnn.ml.create_context(device_type='cpu')\n"
        "b = webnn.MLGraphBuilder(c)\n"
        "g = b.build({'y': b.relu(b.input('a', {'dataType': 'float32', 'shape': [70000]}))})\n"
        "ta = c.create_tensor({'dataType': 'float32', 'shape': [70000], 'writable': True})\n"
        "ty = c.create_tensor({'dataType': 'float32', 'shape': [70000], 'readable': True})\n"
        "v = np.arange(70000, dtype=np.float32) - 4\n"
        "c.write_tensor(ta, v)\n"
        # a merge needs the read within 50 us of the dispatch: under ASan on a
        # loaded machine most tries miss, so go on until one merged
        "for i in range(3000):\n"
        "    c.dispatch(g, {'a': ta}, {'y': ty})\n"
        "    got = c.read_tensor(ty)\n"
        "    assert (got == np.maximum(v, 0)).all()\n"
        "    if i >= 49 and _core.context_info(c._h)['merged_reads'] > 0:\n"
        "        break\n"
        "print(_core.context_info(c._h)['merged_reads'])\n")
    env = dict(os.environ, WEBNN_MERGE_READS="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"
    env["WEBNN_MERGE_READS"] = "1"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) > 0


def test_small_input_written_inline_while_owed(ctx):
    """y = a * s with s a small broadcast operand: writing s runs on the
    calling thread (small work inline) and must first settle the owed y."""
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.mul(b.input("a", f32([N])), b.input("s", f32([1])))})
    ta = ctx.create_tensor(f32([N], writable=True))
    ts = ctx.create_tensor(f32([1], writable=True))
    ty = ctx.create_tensor(f32([N], readable=True))
    a = values(30)
    ctx.write_tensor(ta, a)
    out = np.empty(N, np.float32)
    inlined = 0
    for k in range(1, 41):  # (until 3 writes ran inline: fewer under a sanitizer)
        ctx.write_tensor(ts, np.float32([k]))
        merged_read(ctx, g, {"a": ta, "s": ts}, ty, out)
        np.testing.assert_array_equal(out, a * np.float32(k))
        time.sleep(0.002)  # the timeline thread done with the read: the write runs here
        n0 = _core.context_info(ctx._h)["inline_runs"]
        ctx.write_tensor(ts, np.float32([-1]))
        inlined += _core.context_info(ctx._h)["inline_runs"] > n0
        np.testing.assert_array_equal(ctx.read_tensor(ty), a * np.float32(k))
        if k >= 5 and inlined >= 3:
            break
    assert inlined >= 3


def test_buffer_not_aligned_to_elements(ctx, add_relu):
    """A read into a buffer 2 bytes past an alignment is not merged (the
    kernels access whole float32 elements): a plain copy, the same values."""
    g, ta, tb, ty, ref = add_relu
    a, b = values(40), values(41)
    ctx.write_tensor(ta, a)
    ctx.write_tensor(tb, b)
    buf = np.zeros(4 * N + 8, np.uint8)
    m0, _ = counts(ctx)
    for _ in range(5):
        ctx.dispatch(g, {"a": ta, "b": tb}, {"y": ty})
        ctx.read_tensor(ty, buf[2:2 + 4 * N])
        np.testing.assert_array_equal(np.frombuffer(buf.data, np.float32, N, 2), ref(a, b))
    assert counts(ctx)[0] == m0


def test_owed_tensor_read_into_unaligned_buffer(ctx, add_relu):
    """An owed output read into a buffer 2 bytes past an alignment: the
    graph runs again into the tensor, which is then copied (and read
    again, plainly)."""
    g, ta, tb, ty, ref = add_relu
    a, b = owe(ctx, add_relu, 42, 43)
    _, r0 = counts(ctx)
    buf = np.zeros(4 * N + 8, np.uint8)
    for _ in range(2):
        ctx.read_tensor(ty, buf[2:2 + 4 * N])
        np.testing.assert_array_equal(np.frombuffer(buf.data, np.float32, N, 2), ref(a, b))
    assert counts(ctx)[1] == r0 + 1  # settled once, then plain copies


def _norm_graphs(ctx):
    """softmax (rows of 768, and rows longer than the kernel's cache-sized
    part), layerNormalization with scale and bias, instanceNormalization
    and batchNormalization (nchw), each with a float64 reference."""
    rng = np.random.default_rng(9)
    out = []

    def add(name, shape, build, ref):
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", f32(shape))
        out.append((name, shape, b.build({"y": build(b, x)}), ref))

    def softmax_ref(x):
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    add("softmax", [96, 768], lambda b, x: b.softmax(x, 1), softmax_ref)
    add("softmax long", [2, 40000], lambda b, x: b.softmax(x, 1), softmax_ref)
    g = (1 + 0.1 * rng.standard_normal(768)).astype(np.float32)
    be = (0.1 * rng.standard_normal(768)).astype(np.float32)

    def ln_ref(x):
        m = x.mean(axis=-1, keepdims=True)
        v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5) * g + be
    add("layerNormalization", [96, 768],
        lambda b, x: b.layer_normalization(x, axes=[1], scale=b.constant(g),
                                           bias=b.constant(be), epsilon=1e-5), ln_ref)

    def in_ref(x):
        m = x.mean(axis=(2, 3), keepdims=True)
        v = ((x - m) ** 2).mean(axis=(2, 3), keepdims=True)
        return (x - m) / np.sqrt(v + 1e-5)
    add("instanceNormalization", [2, 8, 64, 64], lambda b, x: b.instance_normalization(x), in_ref)
    mean = rng.standard_normal(8).astype(np.float32)
    var = (1 + rng.random(8)).astype(np.float32)

    def bn_ref(x):
        return (x - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5)
    add("batchNormalization", [2, 8, 64, 64],
        lambda b, x: b.batch_normalization(x, b.constant(mean), b.constant(var)), bn_ref)
    return out


def test_normalizations_merge(ctx):
    """The normalizations count as a pass over their operands too: a read
    that follows their dispatch is merged (into a buffer 4 bytes past a
    64-byte boundary, so the kernels write to any element-aligned address),
    the output is owed and computed again for a second read, and after the
    input is rewritten the next read has the new values.  The merged result
    is bit for bit the unmerged one (compute()), and right (float64)."""
    rng = np.random.default_rng(10)
    for name, shape, g, ref in _norm_graphs(ctx):
        n = int(np.prod(shape))
        tx = ctx.create_tensor(f32(shape, writable=True))
        ty = ctx.create_tensor(f32(shape, readable=True))
        x = (rng.standard_normal(shape) * 3).astype(np.float32)
        ctx.write_tensor(tx, x)
        raw = np.zeros(4 * n + 128, np.uint8)
        off = (-raw.ctypes.data) % 64 + 4
        out = np.frombuffer(raw.data, np.float32, n, off).reshape(shape)
        merged_read(ctx, g, {"x": tx}, ty, out)
        want = ctx.compute(g, {"x": x})["y"]
        np.testing.assert_array_equal(out, want, err_msg=name)
        np.testing.assert_allclose(out, ref(x.astype(np.float64)), rtol=2e-5, atol=2e-6,
                                   err_msg=name)
        _, r0 = counts(ctx)
        np.testing.assert_array_equal(ctx.read_tensor(ty), want, err_msg=name)
        assert counts(ctx)[1] == r0 + 1, name  # run again into the read's buffer
        x2 = (rng.standard_normal(shape) * 3).astype(np.float32)
        ctx.write_tensor(tx, x2)  # the owed record settles first: then y is x's
        np.testing.assert_array_equal(ctx.read_tensor(ty), want, err_msg=name)
        ctx.dispatch(g, {"x": tx}, {"y": ty})
        np.testing.assert_array_equal(ctx.read_tensor(ty), ctx.compute(g, {"x": x2})["y"],
                                      err_msg=name)
