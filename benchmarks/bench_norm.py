"""Speed of webnn's layerNormalization and softmax on transformer-sized inputs.

Run from the repository root (after `make build`):

    .venv/bin/python benchmarks/bench_norm.py

Cases (float32):
  layerNormalization  input [8, 128, 768], axes [2] (the last axis), with
                      scale [768] and bias [768], epsilon 1e-5
  softmax             input [8, 12, 128, 128], axis 3 (the last axis)

webnn runs the spec's way (as in bench_core.py): the input tensors are
created and written once, then every timed call is ``ctx.dispatch(graph,
...)`` followed by ``ctx.read_tensor(out, array)`` into a preallocated NumPy
array, so the time covers the queued execution plus the copy out.

Comparison: if PyTorch can be imported, torch.nn.functional.layer_norm /
torch.softmax in this process with ``torch.set_num_threads(2)``, on tensors
that share memory with the same NumPy arrays (``out=`` where torch has it);
the ratio column is torch time / webnn time (> 1: webnn is faster).  Without
torch, a plain NumPy float32 implementation is timed instead, for
information only (NumPy is single-threaded and makes temporaries).

GB/s counts useful traffic: the input read once plus the output written once
(scale and bias are negligible).  Every callable is warmed up and timed in
samples (each at least 0.1 s of back-to-back calls); times are medians over
the samples, ratios medians of paired per-sample ratios.  Results are checked
against a float64 NumPy reference before timing.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package is built in place
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import webnn  # noqa: E402
from bench_core import f32, measure, paired_ratio, spec_path  # noqa: E402

try:
    import torch
    torch.set_num_threads(2)
except Exception:  # noqa: BLE001 -- any failure means "no torch"
    torch = None

LN_SHAPE = (8, 128, 768)
SM_SHAPE = (8, 12, 128, 128)
EPS = 1e-5


def ln_ref(x, scale, bias):
    x = x.astype(np.float64)
    m = x.mean(axis=-1, keepdims=True)
    v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
    return (x - m) / np.sqrt(v + EPS) * scale + bias


def sm_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_ln(x, scale, bias, out):
    m = x.mean(axis=-1, keepdims=True)
    np.subtract(x, m, out=out)
    v = np.mean(out * out, axis=-1, keepdims=True)
    out *= 1.0 / np.sqrt(v + np.float32(EPS))
    out *= scale
    out += bias


def numpy_sm(x, out):
    np.subtract(x, x.max(axis=-1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=-1, keepdims=True)


def case_layer_norm(ctx, rng):
    x = rng.standard_normal(LN_SHAPE, dtype=np.float32) * 3 + 1
    scale = rng.uniform(0.5, 1.5, LN_SHAPE[-1]).astype(np.float32)
    bias = rng.uniform(-1, 1, LN_SHAPE[-1]).astype(np.float32)
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", f32(LN_SHAPE))
    s = b.constant(f32(scale.shape), scale)
    bb = b.constant(f32(bias.shape), bias)
    g = b.build({"y": b.layer_normalization(xi, {"axes": [2], "scale": s, "bias": bb,
                                                 "epsilon": EPS})})
    run, out, keep = spec_path(ctx, g, {"x": x}, "y", LN_SHAPE)
    run()
    ref = ln_ref(x, scale, bias)
    assert np.allclose(out, ref, rtol=1e-5, atol=1e-5), "webnn layerNormalization is wrong"
    other_out = np.empty_like(x)
    if torch is not None:
        tx, ts, tb = torch.from_numpy(x), torch.from_numpy(scale), torch.from_numpy(bias)
        to = torch.from_numpy(other_out)

        def other():
            to.copy_(torch.nn.functional.layer_norm(tx, (LN_SHAPE[-1],), ts, tb, EPS))
    else:
        def other():
            numpy_ln(x, scale, bias, other_out)
    other()
    assert np.allclose(other_out, ref, rtol=1e-4, atol=1e-4), "comparison layer_norm is wrong"
    return "layerNormalization [8,128,768] axes=[2]", run, other, 2 * x.nbytes, keep


def case_softmax(ctx, rng):
    x = rng.standard_normal(SM_SHAPE, dtype=np.float32) * 4
    b = webnn.MLGraphBuilder(ctx)
    xi = b.input("x", f32(SM_SHAPE))
    g = b.build({"y": b.softmax(xi, 3)})
    run, out, keep = spec_path(ctx, g, {"x": x}, "y", SM_SHAPE)
    run()
    ref = sm_ref(x)
    assert np.allclose(out, ref, rtol=1e-5, atol=1e-9), "webnn softmax is wrong"
    other_out = np.empty_like(x)
    if torch is not None:
        tx, to = torch.from_numpy(x), torch.from_numpy(other_out)

        def other():
            torch.softmax(tx, dim=3, out=to)
    else:
        def other():
            numpy_sm(x, other_out)
    other()
    assert np.allclose(other_out, ref, rtol=1e-4, atol=1e-8), "comparison softmax is wrong"
    return "softmax [8,12,128,128] axis=3", run, other, 2 * x.nbytes, keep


def main():
    ctx = webnn.ml.create_context()
    rng = np.random.default_rng(0)
    other_name = f"torch {torch.__version__} (2 threads)" if torch is not None else \
        f"numpy {np.__version__} (torch not importable)"
    print(f"webnn vs {other_name}; {os.cpu_count()} CPUs; float32")
    rows = []
    for make in (case_layer_norm, case_softmax):
        name, run, other, traffic, _keep = make(ctx, rng)
        t = measure({"webnn": run, "other": other})
        tw, to = statistics.median(t["webnn"]), statistics.median(t["other"])
        rows.append((name, tw * 1e3, traffic / tw / 1e9, to * 1e3, traffic / to / 1e9,
                     paired_ratio(t["other"], t["webnn"])))
    other_col = "torch" if torch is not None else "numpy"
    head = (f"{'case':<40} {'webnn ms':>9} {'webnn GB/s':>11} {other_col + ' ms':>9} "
            f"{other_col + ' GB/s':>11} {other_col + '/webnn':>12}")
    print(head)
    print("-" * len(head))
    for name, wms, wgb, oms, ogb, ratio in rows:
        print(f"{name:<40} {wms:9.3f} {wgb:11.2f} {oms:9.3f} {ogb:11.2f} {ratio:12.2f}")
    print(f"({other_col}/webnn > 1 means webnn is faster; GB/s = (input + output bytes) / time)")


if __name__ == "__main__":
    main()
