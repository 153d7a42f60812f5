"""MLGraph.profile(): per-step times of a compiled graph (webnn/_profile.py,
the backend's execute_profiled)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import webnn

def _graph(ctx, n=384):
    """conv2d -> add -> relu (one fused chain where the CPU fuses), a
    reshape (an alias: no work), sigmoid, then a large matmul that dominates."""
    rng = np.random.default_rng(0)
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"data_type": "float32", "shape": [1, 3, 18, 18]})
    w = b.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32))
    y = b.relu(b.add(b.conv2d(x, w, label="stem"),
                     b.constant(rng.standard_normal((1, 8, 16, 16)).astype(np.float32))))
    z = b.sigmoid(b.reshape(y, [8, 256]), label="gate")
    a = b.input("a", {"data_type": "float32", "shape": [n, n]})
    m = b.matmul(a, b.constant(rng.standard_normal((n, n)).astype(np.float32)), label="big")
    return b.build({"z": z, "m": m}), {
        "x": rng.standard_normal((1, 3, 18, 18)).astype(np.float32),
        "a": rng.standard_normal((n, n)).astype(np.float32)}


def test_rows_and_fused_chain_once():
    ctx = webnn.ml.create_context(device_type="cpu")
    g, inputs = _graph(ctx)
    p = g.profile(inputs, runs=5)
    ops = [r["operators"] for r in p.rows]
    # the chain is one row that lists its three operators; each node is
    # in exactly one row or in untimed
    assert ["conv2d", "add", "relu"] in ops
    assert ["sigmoid"] in ops and ["matmul"] in ops
    listed = [o for r in p.rows for o in r["operators"]] + [u["operator"] for u in p.untimed]
    assert sorted(listed) == sorted(["conv2d", "add", "relu", "reshape", "sigmoid", "matmul"])
    assert [u["operator"] for u in p.untimed] == ["reshape"]
    chain = next(r for r in p.rows if r["operators"][0] == "conv2d")
    assert chain["label"] == "stem" and chain["output"] == "float32[1, 8, 16, 16]"
    for r in p.rows:
        assert 0 < r["min_ms"] <= r["median_ms"] <= r["max_ms"]
    assert sum(r["share"] for r in p.rows) == pytest.approx(1.0)
    text = str(p)
    assert "conv2d+add+relu" in text and "stem" in text and "5 runs" in text
    assert "<table>" in p._repr_html_()


def test_times_add_up_and_land_on_the_right_step():
    ctx = webnn.ml.create_context(device_type="cpu")
    g, inputs = _graph(ctx)
    p = g.profile(inputs, runs=7, warmup=2)
    # the steps run inside the whole execution: their sum is at most its
    # time in every run (so in the medians), and the loop around them is a
    # small part of it
    assert p.steps_ms <= p.total_ms
    assert p.steps_ms >= 0.7 * p.total_ms
    # a 384^3 product (113 MFLOP) against steps of a few thousand elements
    big = next(r for r in p.rows if r["operators"] == ["matmul"])
    assert big["label"] == "big" and big["share"] > 0.5


def test_results_unchanged_by_profiling():
    ctx = webnn.ml.create_context(device_type="cpu")
    g, inputs = _graph(ctx, n=64)
    before = ctx.compute(g, inputs)
    g.profile(inputs, runs=2)
    after = ctx.compute(g, inputs)
    for k in before:
        np.testing.assert_array_equal(before[k], after[k])
    ref = inputs["a"].astype(np.float64) @ _graph_weight(64)
    np.testing.assert_allclose(after["m"], ref, rtol=1e-4, atol=1e-4)


def _graph_weight(n):
    rng = np.random.default_rng(0)
    rng.standard_normal((8, 3, 3, 3))
    rng.standard_normal((1, 8, 16, 16))
    return rng.standard_normal((n, n)).astype(np.float32).astype(np.float64)


def test_unfused_graph_has_a_row_per_operator(tmp_path):
    # WEBNN_CPU_FUSION is read when a context's backend is made: a child
    # process keeps this one's contexts as they are (it imports the webnn
    # this process runs, and this file by its path)
    code = textwrap.dedent("""
        import importlib.util, sys
        sys.path.insert(0, sys.argv[1])
        import webnn
        spec = importlib.util.spec_from_file_location("tp", sys.argv[2])
        tp = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tp)
        ctx = webnn.ml.create_context(device_type="cpu")
        g, inputs = tp._graph(ctx, n=32)
        p = g.profile(inputs, runs=2)
        print(sorted("+".join(r["operators"]) for r in p.rows))
    """)
    env = dict(os.environ, WEBNN_CPU_FUSION="0")
    root = os.path.dirname(os.path.dirname(webnn.__file__))
    out = subprocess.run([sys.executable, "-c", code, root, os.path.abspath(__file__)], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(sorted(["conv2d", "add", "relu", "sigmoid", "matmul"]))


@pytest.mark.parametrize("kw, msg", [
    ({"runs": 0}, "'runs': must be at least 1"),
    ({"runs": 2.5}, "'runs': expected an int"),
    ({"warmup": -1}, "'warmup': must be at least 0"),
])
def test_bad_arguments(kw, msg):
    ctx = webnn.ml.create_context(device_type="cpu")
    g, inputs = _graph(ctx, n=8)
    with pytest.raises(TypeError, match=msg):
        g.profile(inputs, **kw)


def test_bad_inputs_name_profile():
    ctx = webnn.ml.create_context(device_type="cpu")
    g, inputs = _graph(ctx, n=8)
    with pytest.raises(TypeError, match=r"profile: inputs \['a'\] missing"):
        g.profile({"x": inputs["x"]})
    with pytest.raises(TypeError, match="profile: input 'a'"):
        g.profile({"x": inputs["x"], "a": np.zeros((3, 3), np.float32)})
    g.destroy()
    with pytest.raises(webnn.InvalidStateError, match="profile"):
        g.profile(inputs)
