"""Issue 14: MLGraph's picture (SVG through Graphviz, text without it),
to_dot() and summary() from the core's read-only view of the graph."""
import os

import numpy as np
import pytest

import webnn
from webnn import _display


def _graph(ctx):
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
    w = b.constant(np.ones((4, 3, 3, 3), np.float32))
    bias = b.constant(np.ones((1, 4, 1, 1), np.float32))
    y = b.relu(b.add(b.conv2d(x, w, padding=[1, 1, 1, 1], label="stem"), bias))
    z = b.reduce_mean(y, axes=[2, 3])
    m = b.matmul(z, b.constant(np.ones((4, 5), np.float32)))
    return b.build({"y": y, "m": m})


def test_summary(ctx):
    s = _graph(ctx).summary()
    ops = [r["operator"] for r in s.rows]
    assert ops == ["conv2d", "add", "relu", "reduceMean", "matmul"]
    assert s.rows[0]["label"] == "stem"
    assert s.rows[0]["inputs"] == ["float32[1, 3, 8, 8]", "float32[4, 3, 3, 3]"]
    assert s.rows[0]["outputs"] == ["float32[1, 4, 8, 8]"]
    assert s.rows[0]["flops"] == 2 * 4 * 8 * 8 * 27          # multiply-adds count 2
    assert s.rows[4]["flops"] == 2 * 5 * 4
    assert s.constant_bytes == (4 * 27 + 4 + 20) * 4
    assert s.fused_groups == [["conv2d", "add", "relu"]]
    assert s.peak_bytes > 0
    text = str(s)
    for word in ("conv2d", "stem", "FLOPs", "constants", "peak intermediate memory",
                 "conv2d -> add -> relu"):
        assert word in text


def test_dot_and_svg(ctx):
    g = _graph(ctx)
    dot = g.to_dot()
    assert 'label="input x"' in dot and 'label="output y"' in dot and 'label="output m"' in dot
    assert "constant float32[4, 3, 3, 3]" in dot
    assert "conv2d\\n'stem'" in dot or "conv2d\n'stem'" in dot
    assert 'label="float32[1, 4, 8, 8]"' in dot
    assert "cluster_fused_1" in dot
    if not _display.graphviz_available():
        pytest.skip("graphviz (package and dot) not installed")
    svg = g._repr_svg_()
    if svg is None and os.environ.get("LD_PRELOAD"):
        # sanitizer runs preload their runtime into `dot` too, which then
        # fails on its own libraries' reports: the text fallback is used
        pytest.skip("dot cannot run under the sanitizer's LD_PRELOAD")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "conv2d" in svg
    bundle = g._repr_mimebundle_()
    assert "image/svg+xml" in bundle and bundle["text/plain"] == repr(g)


def test_text_fallback_without_graphviz(ctx, monkeypatch):
    g = _graph(ctx)
    monkeypatch.setattr(_display, "graphviz_available", lambda: False)
    assert g._repr_svg_() is None
    bundle = g._repr_mimebundle_()
    assert "image/svg+xml" not in bundle
    assert "conv2d" in bundle["text/html"] and "text/plain" in bundle
