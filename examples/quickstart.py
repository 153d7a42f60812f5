"""A first graph: build a small graph with webnn, run it
on the default backend through the spec's tensor path, check it against
NumPy, and print what happened.

The graph is a two-layer perceptron with a residual branch:
    h = relu(gemm(x, w1, c=b1))
    y = sigmoid(matmul(h, w2) + b2) * clamp(x_sum, 0, 6)
The main job (examples/main.py) runs real models."""
import time

import numpy as np

import webnn


def main() -> None:
    rng = np.random.default_rng(0)
    ctx = webnn.ml.create_context()
    print(f"context: device_type={ctx.device_type} accelerated={ctx.accelerated}")

    batch, n_in, n_hidden, n_out = 4, 8, 16, 3
    w1 = rng.standard_normal((n_in, n_hidden)).astype(np.float32)
    b1 = rng.standard_normal((n_hidden,)).astype(np.float32)
    w2 = rng.standard_normal((n_hidden, n_out)).astype(np.float32)
    b2 = rng.standard_normal((n_out,)).astype(np.float32)

    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [batch, n_in]})
    h = b.relu(b.gemm(x, b.constant(w1), c=b.constant(b1), label="layer1"))
    logits = b.add(b.matmul(h, b.constant(w2)), b.constant(b2), label="layer2")
    gate = b.clamp(b.reshape(b.gemm(x, b.constant(np.ones((n_in, 1), np.float32))), [batch, 1]),
                   min_value=0.0, max_value=6.0)
    y = b.mul(b.sigmoid(logits), gate)
    t0 = time.perf_counter()
    graph = b.build({"y": y})
    t_build = time.perf_counter() - t0

    xs = rng.standard_normal((batch, n_in)).astype(np.float32)
    tx = ctx.create_tensor({"dataType": "float32", "shape": [batch, n_in], "writable": True})
    ty = ctx.create_tensor({"dataType": "float32", "shape": [batch, n_out], "readable": True})
    ctx.write_tensor(tx, xs)
    t0 = time.perf_counter()
    ctx.dispatch(graph, {"x": tx}, {"y": ty})
    result = ctx.read_tensor(ty)
    t_run = time.perf_counter() - t0

    x64 = xs.astype(np.float64)
    h64 = np.maximum(x64 @ w1 + b1, 0)
    ref = 1 / (1 + np.exp(-(h64 @ w2 + b2))) * np.clip(x64.sum(1, keepdims=True), 0, 6)
    err = float(np.max(np.abs(result - ref)))
    print(f"graph: inputs {graph.input_descriptors} outputs {graph.output_descriptors}")
    print(f"build {t_build * 1e3:.2f} ms, dispatch+read {t_run * 1e3:.2f} ms")
    np.set_printoptions(precision=5, suppress=True)
    print("y =")
    print(result)
    print(f"max |webnn - numpy float64| = {err:.3g}")
    if not err < 1e-5:
        raise SystemExit("FAILED: result differs from the NumPy reference")
    print("OK: matches the float64 NumPy reference")


if __name__ == "__main__":
    main()
