"""How building, compiling and dispatching scale with the size of a graph.

Three shapes of graph, each at several sizes n (the README's scaling claim:
near-linear up to 10^5):
  wide-inputs   n inputs, each through relu, all into concats (n inputs,
                about n nodes, 1 output)
  wide-outputs  one input, n relu nodes off it, each a graph output
  chain         one input through a chain of n relu nodes

For each: seconds to declare the inputs (input()), to add the operators, to
build() (validate + plan + compile), and one dispatch() + read of every
output; the last column is the time per element of n for the whole round,
which stays flat when the cost is linear.

  python benchmarks/bench_scaling.py [--sizes 1000,10000,100000]
"""
import argparse
import time

import numpy as np

import webnn


def run(shape, n):
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    t = {}
    t0 = time.perf_counter()
    if shape == "wide-inputs":
        xs = [b.input(f"x{i}", {"dataType": "float32", "shape": [1]}) for i in range(n)]
        t["input"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ys = [b.relu(x) for x in xs]
        # concat takes at most 8192 operands: a two-level tree
        parts = [b.concat(ys[i:i + 4096], 0) for i in range(0, n, 4096)]
        outs = {"y": b.concat(parts, 0) if len(parts) > 1 else parts[0]}
    elif shape == "wide-outputs":
        x = b.input("x", {"dataType": "float32", "shape": [1]})
        t["input"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        outs = {f"y{i}": b.relu(x) for i in range(n)}
    else:
        x = b.input("x", {"dataType": "float32", "shape": [1]})
        t["input"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        y = x
        for _ in range(n):
            y = b.relu(y)
        outs = {"y": y}
    t["ops"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    g = b.build(outs)
    t["build"] = time.perf_counter() - t0
    ins = {name: ctx.create_tensor({"dataType": "float32", "shape": [1], "writable": True})
           for name in g.input_descriptors}
    for v in ins.values():
        ctx.write_tensor(v, np.ones(1, np.float32))
    tout = {name: ctx.create_tensor({"dataType": d["dataType"] if "dataType" in d else d["data_type"],
                                     "shape": list(d["shape"]), "readable": True})
            for name, d in g.output_descriptors.items()}
    t0 = time.perf_counter()
    ctx.dispatch(g, ins, tout)
    for v in tout.values():
        ctx.read_tensor(v)
    t["dispatch+read"] = time.perf_counter() - t0
    g.destroy()
    ctx.destroy()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--shapes", default="wide-inputs,wide-outputs,chain")
    a = ap.parse_args()
    cols = ["input", "ops", "build", "dispatch+read"]
    print(f"{'graph':<13} {'n':>7} " + " ".join(f"{c + ' s':>14}" for c in cols) + f" {'us per n':>9}")
    for shape in a.shapes.split(","):
        for n in (int(s) for s in a.sizes.split(",")):
            t = run(shape, n)
            total = sum(t.values())
            print(f"{shape:<13} {n:>7} " + " ".join(f"{t[c]:>14.4f}" for c in cols)
                  + f" {total / n * 1e6:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
