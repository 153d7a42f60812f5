"""Scale-out: an ONNX model over a large batch of inputs on a Dask
distributed cluster, every worker loading and compiling the model once.

    python examples/onnx_dask.py [--model model.onnx] [--images N] [--workers W]
                                 [--scheduler tcp://host:8786]

Without --scheduler it starts a LocalCluster of W worker processes.  Without
--model it exports LeNet (examples/zoo, trained weights in
examples/data/lenet) to an ONNX file with batch CHUNK and classifies N noisy
copies of the ten MNIST digits.

How: a distributed WorkerPlugin (WebNNModel) carries the model's bytes to
every worker, present and future, and its setup() runs webnn.onnx.load
there once: that worker's context compiles the graph once.  The batch is cut
into chunks of the model's batch size; client.map runs one task per chunk
and each task only calls model.run on its worker's compiled model.  The
results are gathered in order and compared with a single-process run."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any, Dict, Literal, Mapping, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

if TYPE_CHECKING:
    from distributed import Client, LocalCluster, Worker, WorkerPlugin

    from webnn.onnx import OnnxModel
else:
    try:
        from distributed import WorkerPlugin
    except ImportError:  # pragma: no cover
        WorkerPlugin = object

#: {output name: array}
Outputs = Dict[str, npt.NDArray[Any]]

CHUNK = 32


class WebNNModel(WorkerPlugin):
    """Loads and compiles one ONNX model on each worker, once."""

    name = "webnn-onnx-model"

    def __init__(self, model_bytes: bytes, input_shapes: Optional[Mapping[str, Any]] = None,
                 device: Optional[Literal["cpu", "gpu"]] = None) -> None:
        self.model_bytes = model_bytes
        self.input_shapes = input_shapes
        self.device = device

    def setup(self, worker: Worker) -> None:
        import webnn.onnx
        ctx = webnn.ml.create_context(device_type=self.device) if self.device else \
            webnn.ml.create_context()
        # the plugin's own attributes on the worker (Worker does not declare them)
        worker.webnn_model = webnn.onnx.load(  # type: ignore[attr-defined]
            self.model_bytes, context=ctx, input_shapes=self.input_shapes)
        worker.webnn_loads = getattr(worker, "webnn_loads", 0) + 1  # type: ignore[attr-defined]


def infer_chunk(index: int, chunk: npt.NDArray[Any]
                ) -> Tuple[int, Outputs, str, int]:
    """One task: run the worker's model on one chunk (padded to the batch)."""
    from distributed import get_worker
    worker = get_worker()
    model: OnnxModel = worker.webnn_model  # type: ignore[attr-defined]  # set by setup()
    (name, (dt, shape)), = model.inputs.items()
    n = chunk.shape[0]
    if n < shape[0]:
        pad = np.zeros((shape[0] - n,) + chunk.shape[1:], chunk.dtype)
        chunk = np.concatenate([chunk, pad])
    outs = model.run({name: chunk})
    loads: int = worker.webnn_loads  # type: ignore[attr-defined]  # set by setup()
    return index, {k: v[:n] for k, v in outs.items()}, worker.address, loads


def run_distributed(client: Client, model_bytes: bytes, images: npt.NDArray[Any],
                    input_shapes: Optional[Mapping[str, Any]] = None
                    ) -> Tuple[Outputs, Dict[str, int]]:
    """{output name: ndarray over all images}, {worker address: loads}."""
    plugin = WebNNModel(model_bytes, input_shapes)
    if hasattr(client, "register_plugin"):
        client.register_plugin(plugin)
    else:  # distributed before 2023.9
        client.register_worker_plugin(plugin)  # type: ignore[attr-defined]  # gone in 2023.9
    batch = _batch_of(model_bytes, input_shapes)
    chunks = [images[i:i + batch] for i in range(0, len(images), batch)]
    futures = client.map(infer_chunk, range(len(chunks)), chunks, pure=False)
    gathered: list[Tuple[int, Outputs, str, int]] = \
        client.gather(futures)  # type: ignore[no-untyped-call]  # Client.gather is unannotated
    results = sorted(gathered, key=lambda r: r[0])
    loads: Dict[str, int] = {}
    for _, _, addr, n in results:
        loads[addr] = n
    names = results[0][1].keys()
    return {k: np.concatenate([r[1][k] for r in results]) for k in names}, loads


def run_single(model_bytes: bytes, images: npt.NDArray[Any],
               input_shapes: Optional[Mapping[str, Any]] = None) -> Outputs:
    """The same work in this process, for comparison."""
    import webnn.onnx
    model = webnn.onnx.load(model_bytes, input_shapes=input_shapes)
    (name, (dt, shape)), = model.inputs.items()
    batch = shape[0]
    parts: list[Outputs] = []
    for i in range(0, len(images), batch):
        chunk = images[i:i + batch]
        n = chunk.shape[0]
        if n < batch:
            chunk = np.concatenate([chunk, np.zeros((batch - n,) + chunk.shape[1:], chunk.dtype)])
        parts.append({k: v[:n] for k, v in model.run({name: chunk}).items()})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _batch_of(model_bytes: bytes, input_shapes: Optional[Mapping[str, Any]]) -> int:
    import onnx
    m = onnx.load_from_string(model_bytes)
    inits = {t.name for t in m.graph.initializer}
    (vi,) = [i for i in m.graph.input if i.name not in inits]
    if input_shapes and vi.name in input_shapes:
        return int(input_shapes[vi.name][0])
    d = vi.type.tensor_type.shape.dim[0]
    if d.HasField("dim_value"):
        return int(d.dim_value)
    # input_shapes is None here only for a model whose batch is dynamic and
    # not given: a TypeError, as it should be
    return int(input_shapes[d.dim_param])  # type: ignore[index]


def lenet_onnx(batch: int = CHUNK) -> bytes:
    """LeNet exported to ONNX bytes (batch `batch`)."""
    import onnx  # noqa: F401
    import webnn.onnx
    from zoo import lenet
    ctx = webnn.ml.create_context()
    b = webnn.MLGraphBuilder(ctx)
    _, probs = lenet.build(b, lenet.load_weights(), batch=batch)
    data: bytes = webnn.onnx.export(b.build({"probabilities": probs})).SerializeToString()
    return data   # (protobuf's Message methods are untyped: Any)


def mnist_batch(n: int, seed: int = 0) -> Tuple[npt.NDArray[np.float32], npt.NDArray[Any]]:
    """n noisy copies of the ten MNIST digits (float32 [n, 1, 28, 28]) and their labels."""
    from zoo import lenet
    digits = np.concatenate([lenet.load_digit(d) for d in range(10)])
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 10
    noise = rng.normal(0, 20, (n, 1, 28, 28)).astype(np.float32)
    return np.clip(digits[labels] + noise, 0, 255).astype(np.float32), labels


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="an .onnx file (default: LeNet exported)")
    p.add_argument("--images", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--scheduler", help="address of a running scheduler")
    args = p.parse_args(argv)

    from distributed import Client, LocalCluster
    import cloudpickle
    # this module is not importable on the workers: send its code by value
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    if args.model:
        # any model with one input: random inputs of its shape, the first
        # dimension taken as the batch
        import webnn.onnx
        with open(args.model, "rb") as f:
            model_bytes = f.read()
        (dt, shape), = webnn.onnx.load(model_bytes).inputs.values()
        rng = np.random.default_rng(0)
        images = rng.random((args.images,) + tuple(shape[1:])).astype(webnn.DATA_TYPES[dt])
        labels = None
    else:
        model_bytes = lenet_onnx()
        images, labels = mnist_batch(args.images)

    cluster = None
    t0 = time.perf_counter()
    if args.scheduler:
        client = Client(args.scheduler)  # type: ignore[no-untyped-call]  # unannotated
    else:
        # (Client's and LocalCluster's constructors are unannotated)
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=args.workers, threads_per_worker=1, processes=True,
            dashboard_address=None, local_directory=tempfile.gettempdir())
        client = Client(cluster)  # type: ignore[no-untyped-call]
    try:
        t1 = time.perf_counter()
        dist, loads = run_distributed(client, model_bytes, images)
        t2 = time.perf_counter()
    finally:
        client.close()  # type: ignore[no-untyped-call]  # unannotated
        if cluster is not None:
            cluster.close()
    t3 = time.perf_counter()
    single = run_single(model_bytes, images)
    t4 = time.perf_counter()

    name = next(iter(dist))
    equal = all(np.array_equal(dist[k], single[k]) for k in single)
    print(f"{len(images)} images in chunks of {_batch_of(model_bytes, None)} on "
          f"{len(loads)} workers (cluster start {t1 - t0:.1f} s): {t2 - t1:.2f} s; "
          f"one process: {t4 - t3:.2f} s")
    print(f"model loads per worker: {loads}")
    if labels is not None:
        pred = dist[name].argmax(1)
        print(f"accuracy on the noisy digits: {(pred == labels).mean() * 100:.1f}%")
    print(f"results equal to the single-process run: {equal}")
    return 0 if equal and all(n == 1 for n in loads.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
