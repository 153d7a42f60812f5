"""WEBNN_NUM_THREADS sets the CPU backend's threads (its pool of helpers
and BLIS); without it the process's CPU affinity decides.  Checked in fresh
interpreters: the results are the same, and the process runs N - 1 more
helper threads with N threads than with one."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = r"""
import json, os, numpy as np, webnn
ctx = webnn.ml.create_context(device_type="cpu")
b = webnn.MLGraphBuilder(ctx)
n = 1 << 20
x = b.input("x", {"dataType": "float32", "shape": [n]})
g = b.build({"y": b.sigmoid(b.add(x, x))})
v = np.linspace(-4, 4, n, dtype=np.float32)
y = ctx.compute(g, {"x": v})["y"]
print(json.dumps({"threads": len(os.listdir("/proc/self/task")),
                  "sum": float(y.astype(np.float64).sum())}))
"""


def _run(threads, pin=None):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("WEBNN_NUM_THREADS", None)
    if threads is not None:
        env["WEBNN_NUM_THREADS"] = str(threads)
    code = CHILD if pin is None else f"import os; os.sched_setaffinity(0, {{{pin}}}); exec({CHILD!r})"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/task")
def test_num_threads_env():
    one, four = _run(1), _run(4)
    assert one["sum"] == four["sum"]
    assert four["threads"] - one["threads"] == 3


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or not sys.platform.startswith("linux"),
                    reason="needs sched_setaffinity and /proc")
def test_affinity_decides_by_default():
    # one CPU allowed (NumPy's own BLAS threads follow the same mask in both
    # runs): by default no helper thread, as with WEBNN_NUM_THREADS=1; with
    # WEBNN_NUM_THREADS=2 one helper more
    cpu = sorted(os.sched_getaffinity(0))[0]
    pinned, one, two = _run(None, cpu), _run(1, cpu), _run(2, cpu)
    assert pinned["threads"] == one["threads"]
    assert two["threads"] == one["threads"] + 1
    assert pinned["sum"] == two["sum"]
