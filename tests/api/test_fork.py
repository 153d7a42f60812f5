"""A context copied into a child process by fork() has no timeline thread
there: its work fails with InvalidStateError in the child (never hangs), the
child can release it and exit, and a new context made in the child works.
The parent's context is unaffected."""
import os
import sys
import time

import numpy as np
import pytest

import webnn

pytestmark = pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux",
                                reason="needs fork()")


def _f32(shape, **kw):
    return dict(dataType="float32", shape=list(shape), **kw)


def _wait(pid, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_context_inherited_through_fork():
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.relu(b.input("x", _f32([4])))})
    tx = ctx.create_tensor(_f32([4], writable=True))
    ty = ctx.create_tensor(_f32([4], readable=True))
    x = np.array([-1, 2, -3, 4], np.float32)
    ctx.write_tensor(tx, x)
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.maximum(x, 0))
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code, never raise out
        code = 0
        try:
            for call in (lambda: ctx.read_tensor(ty),
                         lambda: ctx.dispatch(g, {"x": tx}, {"y": ty}) or ctx.read_tensor(ty),
                         lambda: ctx.create_tensor(_f32([2], readable=True))):
                try:
                    call()
                    code = 10
                except webnn.InvalidStateError as e:
                    if "another process" not in str(e):
                        code = 11
                except BaseException:
                    code = 12
            # a context made here works
            c2 = webnn.ml.create_context(device_type="cpu")
            b2 = webnn.MLGraphBuilder(c2)
            g2 = b2.build({"y": b2.neg(b2.input("x", _f32([4])))})
            out = c2.compute(g2, {"x": x})["y"]
            if not np.array_equal(out, -x):
                code = 13
            del ctx, g, tx, ty, b  # releasing the inherited objects must not hang
        except BaseException:
            code = 14
        os._exit(code)
    assert _wait(pid) == 0
    # the parent's context still works
    ctx.write_tensor(tx, -x)
    ctx.dispatch(g, {"x": tx}, {"y": ty})
    np.testing.assert_array_equal(ctx.read_tensor(ty), np.maximum(-x, 0))
