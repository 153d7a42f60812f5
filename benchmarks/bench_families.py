"""The models people run, exported the way they export them: webnn.onnx
against ONNX Runtime on the same ONNX files, in one process, interleaved.

    pip install .[bench]          # torch, torchvision, transformers, onnxruntime
    python benchmarks/bench_families.py [--models bert,resnet50] [--rounds 10]
        [--threads 2] [--cache build/bench-families] [--bounds]

Each family is built at bench time from a transformers / torchvision config
with random weights (seeded; nothing is downloaded) and exported with
torch.onnx.export into the cache folder (reused while torch's and
transformers' versions are the same).  Then, per model:

- load: webnn.onnx.load (import + compile) and ONNX Runtime's session
  creation (ORT_ENABLE_ALL), three of each in alternation, the median; and
  the time to the first result (load + the first run, where webnn packs its
  weights and ORT's first run warms up);
- the outputs of both on the same random inputs compared (largest
  difference relative to the output's scale);
- rounds of one webnn ``run()`` and one ORT run with I/O binding (inputs
  bound once, outputs into preallocated arrays), alternating, each timed,
  each after 0.2 s of idle (``--pause``): ORT's pool threads spin for
  20-40 ms after its run, and on a 2-core machine they took a core from the
  webnn run that followed (EfficientNet-B0: 12.0 ms instead of 6.6).

The table: min / median / max ms of each, ORT median / webnn median (> 1:
webnn is faster), the load times, and the geometric mean of the ratios;
above it the CPU model, the ISA level webnn's kernels run at
(WEBNN_CPU_ISA caps it), the threads and the machine's load average.
"""
import argparse
import math
import os
import statistics
import sys
import time
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

try:
    import onnxruntime as ort
    import torch
    import transformers
except ImportError as e:  # pragma: no cover
    sys.exit(f"bench_families needs torch, transformers and onnxruntime "
             f"(pip install .[bench]): {e}")

import webnn  # noqa: E402
import webnn.onnx  # noqa: E402


# ---- the families ------------------------------------------------------------
def _ids(rng, vocab, *shape):
    return torch.from_numpy(rng.integers(0, vocab, shape).astype(np.int64))


class _Hidden(torch.nn.Module):
    """An encoder: input ids and the mask -> the last hidden state."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


def bert(rng):
    cfg = transformers.BertConfig()  # BERT-base: 12 layers, 768 wide, 12 heads
    m = _Hidden(transformers.BertModel(cfg))
    ids = _ids(rng, cfg.vocab_size, 1, 128)
    return m, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, ["last_hidden_state"]


class _Logits(torch.nn.Module):
    """A causal LM without its cache: input ids (and the mask) -> logits."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, input_ids, attention_mask):
        return self.lm(input_ids=input_ids, attention_mask=attention_mask,
                       use_cache=False).logits


def gpt2_prefill(rng):
    cfg = transformers.GPT2Config()  # GPT-2 small
    m = _Logits(transformers.GPT2LMHeadModel(cfg))
    ids = _ids(rng, cfg.vocab_size, 1, 128)
    return m, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, ["logits"]


def llama_smollm(rng):
    cfg = transformers.LlamaConfig(  # SmolLM-135M's architecture
        vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=2048,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True,
        hidden_act="silu")
    m = _Logits(transformers.LlamaForCausalLM(cfg))
    ids = _ids(rng, cfg.vocab_size, 1, 64)
    return m, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, ["logits"]


def gpt2_decode(rng):
    """One decode step of GPT-2 small: 1 new token after 127 cached ones,
    the cache as inputs (exported with webnn.llm's flat wrapper)."""
    from webnn.llm._hf import _wrapper
    cfg = transformers.GPT2Config()
    cfg._attn_implementation = "eager"
    lm = transformers.GPT2LMHeadModel(cfg).eval()
    past = 127
    head = cfg.n_embd // cfg.n_head
    kv = {f"past.{i}.{t}": torch.from_numpy(
        rng.standard_normal((1, cfg.n_head, past, head)).astype(np.float32))
        for i in range(cfg.n_layer) for t in ("key", "value")}
    feeds = {"input_ids": _ids(rng, cfg.vocab_size, 1, 1),
             "attention_mask": torch.ones(1, past + 1, dtype=torch.int64),
             "position_ids": torch.tensor([[past]]), **kv}
    outs = ["logits"] + [f"present.{i}.{t}" for i in range(cfg.n_layer) for t in ("key", "value")]
    return _wrapper(lm), feeds, outs


def whisper_tiny_encoder(rng):
    cfg = transformers.WhisperConfig(  # whisper-tiny
        d_model=384, encoder_layers=4, encoder_attention_heads=6, encoder_ffn_dim=1536,
        decoder_layers=4, decoder_attention_heads=6, decoder_ffn_dim=1536, num_mel_bins=80)
    enc = transformers.WhisperModel(cfg).get_encoder()

    class Enc(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, input_features):
            return self.enc(input_features).last_hidden_state
    x = torch.from_numpy(rng.standard_normal((1, 80, 3000)).astype(np.float32))
    return Enc(), {"input_features": x}, ["last_hidden_state"]


def _vision(name):
    def make(rng, batch=1):
        import torchvision
        m = getattr(torchvision.models, name)(weights=None)
        for mod in m.modules():  # (torchvision's ViT starts its head at zero)
            if isinstance(mod, torch.nn.Linear) and not mod.weight.any():
                torch.nn.init.normal_(mod.weight, std=0.02)
        x = torch.from_numpy(rng.standard_normal((batch, 3, 224, 224)).astype(np.float32))
        return m, {"x": x}, ["y"]
    return make


FAMILIES = {
    "bert": ("BERT-base, seq 128", bert),
    "gpt2": ("GPT-2 small, prefill 128", gpt2_prefill),
    "gpt2-decode": ("GPT-2 small, one decode step, 127 cached", gpt2_decode),
    "llama": ("Llama (SmolLM-135M config), 64 tokens", llama_smollm),
    "vit": ("ViT-B/16, 224", _vision("vit_b_16")),
    "resnet50": ("ResNet-50, 224", _vision("resnet50")),
    "convnext": ("ConvNeXt-T, 224", _vision("convnext_tiny")),
    "efficientnet": ("EfficientNet-B0, 224", _vision("efficientnet_b0")),
    "whisper": ("Whisper-tiny encoder, 30 s", whisper_tiny_encoder),
}
# models other benchmarks export the same way (bench_gpu.py), not in the
# default list
EXTRA = {
    "mobilenetv2": ("MobileNetV2, 224", _vision("mobilenet_v2")),
}


def export(key, folder, batch=1, with_model=False):
    """The family's ONNX file (exported once per torch / transformers
    version) and its inputs as NumPy arrays; batch > 1: a vision family's
    batch; with_model: also the torch module (eval mode) and its inputs as
    torch tensors."""
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    make = (FAMILIES.get(key) or EXTRA[key])[1]
    model, inputs, outputs = make(rng, batch) if batch != 1 else make(rng)
    tag = f"{key}-torch{torch.__version__}-tf{transformers.__version__}".replace("+", "_")
    if batch != 1:
        tag += f"-b{batch}"
    path = os.path.join(folder, tag + ".onnx")
    if not os.path.exists(path):
        os.makedirs(folder, exist_ok=True)
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation
            torch.onnx.export(model, tuple(inputs.values()), path + ".tmp",
                              input_names=list(inputs), output_names=outputs,
                              opset_version=18, dynamo=False, external_data=False)
        os.replace(path + ".tmp", path)
    model.eval()  # (the exporter leaves the model in training mode)
    feeds = {k: v.numpy() for k, v in inputs.items()}
    return (path, feeds, model, inputs) if with_model else (path, feeds)


# ---- timing ------------------------------------------------------------------
LOADS = 3  # loads of each, alternating; the median is reported
PAUSE = 0.2  # s of idle before each timed run (--pause)
# ORT's pool threads spin for 20-40 ms after each run (its default,
# session.intra_op.allow_spinning): one core busy while webnn's run, right
# after it in the same process, wanted both.  EfficientNet-B0 on the 2-core
# EPYC (2026-11-28): webnn 12.0 ms interleaved with spinning ORT, 6.8 with
# --ort-spinning 0 (ORT then 8.4 ms instead of 6.8), 6.6 with no ORT runs.
ORT_SPINNING = "1"


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", ORT_SPINNING)
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_runner(sess, feeds):
    """One ORT run with I/O binding: inputs bound once, outputs written into
    arrays allocated by the first run and bound from then on."""
    io = sess.io_binding()
    for k, v in feeds.items():
        io.bind_cpu_input(k, np.ascontiguousarray(v))
    first = sess.run(None, feeds)
    outs = [np.empty_like(a) for a in first]
    for o, a in zip(sess.get_outputs(), outs):
        io.bind_output(o.name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)

    def run():
        sess.run_with_iobinding(io)
        return outs
    return run, first


def rel_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def bench(key, folder, rounds, threads):
    path, feeds = export(key, folder)
    ctx = webnn.ml.create_context(device_type="cpu")
    shapes = {k: list(v.shape) for k, v in feeds.items()}
    load_w, load_o, first_w, first_o = [], [], [], []
    for _ in range(LOADS):  # alternating, the file in the page cache for both
        m = sess = None     # (the previous ones freed first, as a fresh load would find it)
        t0 = time.perf_counter()
        m = webnn.onnx.load(path, context=ctx, input_shapes=shapes)
        t1 = time.perf_counter()
        m.run(feeds)        # the first result: what load leaves to the first run included
        t2 = time.perf_counter()
        sess = ort_session(path, threads)
        t3 = time.perf_counter()
        sess.run(None, feeds)
        t4 = time.perf_counter()
        load_w.append(t1 - t0)
        first_w.append(t2 - t0)
        load_o.append(t3 - t2)
        first_o.append(t4 - t2)
    load_w, load_o = statistics.median(load_w), statistics.median(load_o)
    first_w, first_o = statistics.median(first_w), statistics.median(first_o)
    run_o, ref = ort_runner(sess, feeds)
    ours = m.run(feeds)
    diff = max(rel_diff(a, b) for a, b in zip(ours.values(), ref))
    for _ in range(2):  # warm: constants prepared, caches and pages
        m.run(feeds)
        run_o()
    tw, to = [], []
    for _ in range(rounds):
        # a pause before each runtime's run (as bench_peers.py and
        # bench_int8_models.py do): ORT's pool threads spin 20-40 ms after
        # its run and would take the second core from webnn's next one
        time.sleep(PAUSE)
        t0 = time.perf_counter()
        m.run(feeds)
        t1 = time.perf_counter()
        time.sleep(PAUSE)
        t2 = time.perf_counter()
        run_o()
        t3 = time.perf_counter()
        tw.append((t1 - t0) * 1e3)
        to.append((t3 - t2) * 1e3)
    return {"model": FAMILIES[key][0], "webnn": tw, "ort": to, "load_webnn": load_w,
            "load_ort": load_o, "first_webnn": first_w, "first_ort": first_o, "diff": diff,
            "ratio": statistics.median(to) / statistics.median(tw)}


def copy_gbs(nbytes=256 << 20, rounds=5):
    """The bandwidth of a plain copy (GB/s, bytes read + written), the
    yardstick of a step that reads every weight once."""
    a = np.ones(nbytes // 4, np.float32)
    b = np.empty_like(a)
    best = min(_timed(lambda: np.copyto(b, a)) for _ in range(rounds))
    return 2 * nbytes / best / 1e9


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def weight_bytes(path):
    """Bytes of the float initializers a step reads whole: all but those
    only gathered from (embedding and position tables: one row a token)."""
    import onnx
    m = onnx.load(path)
    readers = {}
    for n in m.graph.node:
        for i in n.input:
            readers.setdefault(i, set()).add(n.op_type)
    return sum(int(np.prod(t.dims, dtype=np.int64)) * 4 for t in m.graph.initializer
               if t.data_type == onnx.TensorProto.FLOAT and readers.get(t.name, set()) - {"Gather"})


def product_gflop(path, feeds):
    """GFLOP of the model's products (Conv, ConvTranspose, MatMul, Gemm: two
    per multiply-add) at the inputs' shapes: what a run must do at least,
    whatever the runtime."""
    import onnx
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    m = onnx.load(path)
    for i in m.graph.input:  # the bench inputs' shapes in place of symbolic dims
        if i.name in feeds:
            dims = i.type.tensor_type.shape.dim
            for d, n in zip(dims, feeds[i.name].shape):
                d.ClearField("dim_param")
                d.dim_value = int(n)
    # (ONNX Runtime's symbolic inference: onnx's own leaves the batch of
    # BERT's attention unknown; onnx's where ORT's fails, as on ViT's reshapes)
    try:
        m = SymbolicShapeInference.infer_shapes(m, auto_merge=True)
    except Exception:  # noqa: BLE001 - its asserts on graphs it does not follow
        m = onnx.shape_inference.infer_shapes(m, data_prop=True)
    shape = {}
    for v in list(m.graph.input) + list(m.graph.value_info) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shape[v.name] = [d.dim_value for d in dims]
    for t in m.graph.initializer:
        shape[t.name] = list(t.dims)
    flop = 0
    for n in m.graph.node:
        y = shape.get(n.output[0]) if n.output else None
        a = shape.get(n.input[0]) if n.input else None
        w = shape.get(n.input[1]) if len(n.input) > 1 else None
        if y is None or a is None or w is None:
            continue
        if n.op_type == "MatMul":
            flop += 2 * int(np.prod(y, dtype=np.int64)) * (a[-1] if len(a) > 1 else a[0])
        elif n.op_type == "Gemm":
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            flop += 2 * int(np.prod(y, dtype=np.int64)) * (a[0] if trans_a else a[-1])
        elif n.op_type == "Conv":  # y [N, O, ...], w [O, C / group, k...]
            flop += 2 * int(np.prod(y, dtype=np.int64)) * int(np.prod(w[1:], dtype=np.int64))
        elif n.op_type == "ConvTranspose":  # x [N, C, ...], w [C, O / group, k...]
            flop += 2 * int(np.prod(a, dtype=np.int64)) * int(np.prod(w[1:], dtype=np.int64))
    return flop / 1e9


def product_peak(threads, n=2048, rounds=5):
    """The fastest float32 product on this machine at these threads, GFLOP/s:
    the best of webnn's matmul and torch's (its BLAS) on n x n x n, min of
    `rounds` runs.  A model whose products are F GFLOP cannot run in less
    than F / this."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"y": b.matmul(b.input("a", {"dataType": "float32", "shape": [n, n]}),
                               b.constant(a))})
    ta = torch.from_numpy(a)
    ctx.compute(g, {"a": a})
    torch.mm(ta, ta)
    best = {"webnn": 1e9, "torch": 1e9}
    for _ in range(rounds):
        best["webnn"] = min(best["webnn"], _timed(lambda: ctx.compute(g, {"a": a})))
        best["torch"] = min(best["torch"], _timed(lambda: torch.mm(ta, ta)))
    return {k: 2 * n ** 3 / t / 1e9 for k, t in best.items()}


def machine():
    model = isa = "?"
    try:
        with open("/proc/cpuinfo") as f:
            info = f.read()
        model = next(line.split(":", 1)[1].strip() for line in info.splitlines()
                     if line.startswith("model name"))
        flags = next(line for line in info.splitlines() if line.startswith("flags")).split()
        cpu = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "baseline"
        cap = os.environ.get("WEBNN_CPU_ISA", "")
        order = ["baseline", "avx2", "avx512"]
        isa = (min(cpu, cap, key=order.index) if cap in order else cpu) + \
            f" (CPU: {cpu}{', WEBNN_CPU_ISA=' + cap if cap else ''})"
    except (OSError, StopIteration):
        pass
    return model, isa, os.getloadavg()


def main():
    global ORT_SPINNING, PAUSE
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(FAMILIES),
                   help=f"comma-separated, of: {', '.join(FAMILIES)}")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pause", type=float, default=PAUSE,
                   help="seconds of idle before each timed run (default 0.2: ORT's "
                        "spinning threads go to sleep before webnn's run)")
    p.add_argument("--ort-spinning", choices=["0", "1"], default="1",
                   help="ORT's session.intra_op.allow_spinning (default 1, ORT's "
                        "own default; its spinning threads slow the interleaved "
                        "webnn runs on few cores, see ORT_SPINNING)")
    p.add_argument("--cache", default=os.path.join(ROOT, "build", "bench-families"))
    p.add_argument("--bounds", action="store_true",
                   help="also each model's product GFLOP, the rate of each runtime and "
                        "the highest ratio the machine's float32 product peak allows")
    args = p.parse_args()
    os.environ.setdefault("WEBNN_NUM_THREADS", str(args.threads))
    ORT_SPINNING = args.ort_spinning
    PAUSE = args.pause
    torch.set_num_threads(args.threads)
    keys = [k for k in args.models.split(",") if k]
    bad = [k for k in keys if k not in FAMILIES]
    if bad:
        p.error(f"unknown models {bad}; choose from {list(FAMILIES)}")
    model, isa, load = machine()
    print(f"CPU: {model}; webnn kernels: {isa}; threads: {args.threads}; "
          f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"onnxruntime {ort.__version__}, torch {torch.__version__}, "
          f"transformers {transformers.__version__}; {args.rounds} interleaved rounds; "
          f"ORT spinning {args.ort_spinning}\n")
    head = (f"| model | webnn ms min / med / max | ORT ms min / med / max | ORT / webnn "
            f"| load webnn s | ORT session s | load ratio | first result webnn s | ORT s "
            f"| ratio | max rel diff |")
    print(head)
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios, done = [], {}
    for k in keys:
        try:
            r = bench(k, args.cache, args.rounds, args.threads)
        except Exception as e:  # a model that does not export or load: say so, go on
            print(f"| {FAMILIES[k][0]} | failed: {type(e).__name__}: {str(e)[:160]} |||||")
            continue
        ratios.append(r["ratio"])
        done[k] = r

        def mmm(v):
            return f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
        print(f"| {r['model']} | {mmm(r['webnn'])} | {mmm(r['ort'])} | {r['ratio']:.2f} "
              f"| {r['load_webnn']:.2f} | {r['load_ort']:.2f} "
              f"| {r['load_webnn'] / r['load_ort']:.2f} | {r['first_webnn']:.2f} "
              f"| {r['first_ort']:.2f} | {r['first_webnn'] / r['first_ort']:.2f} "
              f"| {r['diff']:.1e} |", flush=True)
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\ngeometric mean of ORT / webnn over {len(ratios)} models: {geo:.2f}")
    if args.bounds and done:
        peak = product_peak(args.threads)
        top = max(peak.values())
        print(f"\nWhat the products bound (float32 product peak here, {args.threads} threads, "
              f"2048^3, best of 5: webnn {peak['webnn']:.0f}, torch {peak['torch']:.0f} "
              f"GFLOP/s); the highest ORT / webnn a row can reach is ORT's median over "
              f"the products' time at that peak:\n")
        print("| model | product GFLOP | webnn GFLOP/s | ORT GFLOP/s | webnn % of peak "
              "| ORT % of peak | highest ORT / webnn |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for k, r in done.items():
            f = product_gflop(*export(k, args.cache))
            tw, to = statistics.median(r["webnn"]) / 1e3, statistics.median(r["ort"]) / 1e3
            print(f"| {r['model']} | {f:.2f} | {f / tw:.0f} | {f / to:.0f} "
                  f"| {100 * f / tw / top:.0f} | {100 * f / to / top:.0f} "
                  f"| {to / (f / top):.2f} |")
    if "gpt2-decode" in done:
        gbs = copy_gbs()
        wb = weight_bytes(export("gpt2-decode", args.cache)[0])
        med = statistics.median(done["gpt2-decode"]["webnn"]) / 1e3
        print(f"decode step: {wb / 1e6:.0f} MB of weights in {med * 1e3:.1f} ms = "
              f"{wb / med / 1e9:.1f} GB/s read; a plain copy moves {gbs:.1f} GB/s "
              f"(read + write): {100 * wb / med / 1e9 / gbs:.0f} % of it")
    load = os.getloadavg()
    print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
