"""Text generation with a decoder-only language model on WebNN (webnn.llm), against
ONNX Runtime running the same exported model (I/O binding) and transformers' eager
PyTorch.

    python examples/generate.py --arch llama --new-tokens 64 --check
    python examples/generate.py --config smollm-135m --threads 2 --prompt-ids 1,2,3,4
    python examples/generate.py --onnx smollm.onnx --threads 2 --rounds 8

The model is a transformers GPT-2 or Llama built from a config with seeded random
weights, or read from a local checkpoint folder (--model-folder; nothing is
downloaded), exported with torch.onnx.export (needs torch and transformers), or an
export saved before (--onnx, which needs neither).  Prints the tokens, the first-token
latency and decode tokens/s of each runtime; with --check, exits 0 only when webnn's
greedy tokens equal transformers' generate(do_sample=False)."""
import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    m = p.add_argument_group("model")
    m.add_argument("--arch", choices=["llama", "gpt2"], default="llama",
                   help="architecture (the config is <arch>-tiny unless --config)")
    m.add_argument("--config", default=None,
                   help="a webnn.llm.CONFIGS name: gpt2-tiny, llama-tiny, gpt2, smollm-135m")
    m.add_argument("--model-folder", default=None,
                   help="a local checkpoint folder (save_pretrained) instead of random weights")
    m.add_argument("--onnx", default=None,
                   help="an exported model (webnn.llm.export) to load; no torch needed")
    m.add_argument("--save-onnx", default=None, help="save the export to this path")
    m.add_argument("--seed", type=int, default=0,
                   help="seed of the random weights and of sampling")
    g = p.add_argument_group("generation")
    g.add_argument("--prompt-ids", default="5,17,99,3,250,11,42,7",
                   help="comma-separated prompt token ids")
    g.add_argument("--new-tokens", type=int, default=64)
    g.add_argument("--capacity", type=int, default=0,
                   help="cache slots (0: prompt + new tokens)")
    g.add_argument("--prefill-bucket", type=int, default=32,
                   help="tokens per prefill run (a longer prompt goes in chunks)")
    s = p.add_argument_group("sampling (default: greedy)")
    s.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    s.add_argument("--top-k", type=int, default=0, help="0: off")
    s.add_argument("--top-p", type=float, default=1.0, help="1: off")
    r = p.add_argument_group("runtime")
    r.add_argument("--device", choices=["cpu", "gpu"], default="cpu",
                   help="webnn context device (gpu: the cache in device memory)")
    r.add_argument("--threads", type=int, default=0,
                   help="CPU threads of webnn, ONNX Runtime and PyTorch (0: their default)")
    r.add_argument("--rounds", type=int, default=1,
                   help="timed generations of webnn and ONNX Runtime, taken in turns "
                        "in this process (more than 1: min / median / max of the rounds)")
    r.add_argument("--check", action="store_true",
                   help="exit 1 unless webnn's greedy tokens equal transformers'")
    r.add_argument("--no-compare", action="store_true",
                   help="time webnn only (no ONNX Runtime, no transformers)")
    return p.parse_args(argv)


def timed_loop(step: Callable[[List[int], int, int], int], prompt: List[int], new: int,
               bucket: int) -> Tuple[List[int], float, List[float]]:
    """The shared shape of a generation: prompt in chunks (`step(tokens, pos, width)` ->
    next token), then one token at a time; returns tokens, first latency, per-token s."""
    t0 = time.perf_counter()
    pos, token = 0, -1
    while pos < len(prompt):
        chunk = prompt[pos:pos + bucket]
        token = step(chunk, pos, 1 if len(chunk) == 1 else bucket)
        pos += len(chunk)
    first = time.perf_counter() - t0
    tokens, per = [token], []
    for _ in range(new - 1):
        t = time.perf_counter()
        token = step([token], pos, 1)
        pos += 1
        per.append(time.perf_counter() - t)
        tokens.append(token)
    return tokens, first, per


def ort_greedy(proto: Any, prompt: List[int], new: int, capacity: int, bucket: int,
               threads: int) -> Tuple[List[int], float, List[float]]:
    """ONNX Runtime on the same prepared model: the cache in OrtValues swapped each
    step through I/O binding, the same feeds as webnn (webnn.llm.step_feeds)."""
    import numpy as np
    import onnxruntime as ort

    import webnn.llm as llm
    info = llm.describe(proto)
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(proto.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    zeros = np.zeros((1, info.kv_heads, capacity, info.head_dim), np.float32)
    caches = [[ort.OrtValue.ortvalue_from_numpy(zeros.copy()) for _ in info.past_names]
              for _ in range(2)]
    bind = sess.io_binding()

    def step(tokens: List[int], pos: int, width: int) -> int:
        for name, value in llm.step_feeds(tokens, pos, width, capacity).items():
            bind.bind_cpu_input(name, value)
        for name, v in zip(info.past_names, caches[0]):
            bind.bind_ortvalue_input(name, v)
        for name, v in zip(info.cache_names, caches[1]):
            bind.bind_ortvalue_output(name, v)
        bind.bind_output("next_token")
        bind.bind_output("next_logits")
        sess.run_with_iobinding(bind)
        caches.reverse()
        # outputs come in the order bound: the caches, then next_token
        return int(bind.get_outputs()[len(info.cache_names)].numpy().reshape(-1)[0])

    return timed_loop(step, prompt, new, bucket)


def torch_greedy(model: Any, prompt: List[int], new: int) -> Tuple[List[int], float, float]:
    """transformers' generate(do_sample=False): tokens, first-token latency, decode
    tokens/s (from the time of `new` tokens less that of one)."""
    import webnn.llm as llm
    t0 = time.perf_counter()
    llm.hf_greedy(model, prompt, 1)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    tokens = llm.hf_greedy(model, prompt, new)
    total = time.perf_counter() - t0
    return tokens, first, (new - 1) / max(total - first, 1e-9)


def report(name: str, first: float, per: List[float]) -> None:
    tps = len(per) / sum(per) if per and sum(per) > 0 else 0.0
    med = statistics.median(per) * 1e3 if per else 0.0
    print(f"  {name:<24} first token {first * 1e3:8.1f} ms   decode {tps:8.1f} tokens/s "
          f"(median {med:.2f} ms/token)")


def report_rounds(name: str, rounds: List[Tuple[float, List[float]]]) -> None:
    """min / median / max over rounds of (first-token s, per-token s)."""
    if len(rounds) == 1:
        report(name, *rounds[0])
        return
    tps = [len(per) / sum(per) for _, per in rounds]
    first = [f * 1e3 for f, _ in rounds]

    def mmm(v: List[float]) -> str:
        return f"{min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f}"
    print(f"  {name:<24} first token {mmm(first)} ms   decode {mmm(tps)} tokens/s "
          f"(min / median / max of {len(rounds)} rounds)")


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = parse_args(argv)
    if a.threads:   # read once by each runtime: set before they start
        os.environ["WEBNN_NUM_THREADS"] = str(a.threads)
    import onnx

    import webnn
    import webnn.llm as llm
    prompt = [int(t) for t in a.prompt_ids.split(",") if t.strip()]
    capacity = a.capacity or len(prompt) + a.new_tokens
    model: Any = None
    if a.onnx:
        proto = llm.prepare(onnx.load(a.onnx))
    else:
        try:
            import torch
        except ImportError:
            print("generate.py: exporting needs torch and transformers (or give --onnx)")
            return 2
        if a.threads:
            torch.set_num_threads(a.threads)
        model = llm.make_model(a.config or f"{a.arch}-tiny", folder=a.model_folder,
                               seed=a.seed)
        t0 = time.perf_counter()
        proto = llm.export(model, a.save_onnx)
        print(f"exported {a.model_folder or a.config or a.arch + '-tiny'} with "
              f"torch.onnx.export in {time.perf_counter() - t0:.1f} s")
    ctx = webnn.ml.create_context(device_type=a.device)
    t0 = time.perf_counter()
    lm = llm.CausalLM(proto, context=ctx, capacity=capacity,
                      prefill_bucket=a.prefill_bucket)
    info = lm.info
    print(f"webnn.llm.CausalLM: {info.layers} layers, {info.kv_heads} kv heads x "
          f"{info.head_dim}, vocabulary {info.vocab_size}, capacity {capacity}, on "
          f"{ctx.device_type}; two graphs compiled in {time.perf_counter() - t0:.1f} s")
    sampling: Dict[str, Any] = dict(temperature=a.temperature, top_k=a.top_k,
                                    top_p=a.top_p, seed=a.seed)
    print("webnn tokens:", end=" ", flush=True)
    tokens = []
    for t in lm.stream(prompt, a.new_tokens, **sampling):
        tokens.append(t)
        print(t, end=" ", flush=True)
    print()
    greedy = a.temperature == 0
    ours: List[Tuple[float, List[float]]] = []
    theirs: List[Tuple[float, List[float]]] = []
    ort_tokens: Optional[List[int]] = None
    compare = not a.no_compare and greedy
    if compare:
        try:   # a first run, untimed (session creation, first touches)
            ort_tokens = ort_greedy(proto, prompt, a.new_tokens, capacity,
                                    lm.prefill_bucket, a.threads)[0]
        except ImportError:
            print("  (onnxruntime not installed)")
            compare = False
    if greedy:   # warm runs for the timings, in turns with ONNX Runtime's
        for _ in range(max(1, a.rounds)):
            lm.generate(prompt, a.new_tokens)
            ours.append((lm.timings.first_token, lm.timings.per_token))
            if compare:
                ort_tokens, first, per = ort_greedy(proto, prompt, a.new_tokens, capacity,
                                                    lm.prefill_bucket, a.threads)
                theirs.append((first, per))
    else:
        ours.append((lm.timings.first_token, lm.timings.per_token))
    print(f"timings ({a.threads or 'default'} threads, prompt {len(prompt)} tokens, "
          f"{a.new_tokens} new):")
    report_rounds(f"webnn ({ctx.device_type})", ours)
    ok = True
    if theirs:
        report_rounds("ONNX Runtime (CPU)", theirs)
        print(f"    same tokens as webnn: {ort_tokens == tokens}")
    if model is not None and greedy and (a.check or not a.no_compare):
        import torch
        where = "cpu"
        if a.device == "gpu" and torch.cuda.is_available():   # PyTorch on the same card
            model, where = model.to("cuda"), "cuda"
        if a.no_compare:
            ref = llm.hf_greedy(model, prompt, a.new_tokens)
        else:
            ref, first, tps = torch_greedy(model, prompt, a.new_tokens)
            name = f"transformers eager ({where})"
            print(f"  {name:<24} first token {first * 1e3:8.1f} ms   decode {tps:8.1f} tokens/s")
        ok = ref == tokens
        print(f"transformers tokens: {' '.join(map(str, ref))}")
        print(f"webnn's greedy tokens equal transformers': {ok}")
    if a.check:
        if model is None or not greedy:
            print("--check needs a greedy run on a model made here (not --onnx, no "
                  "sampling) and torch")
            return 1
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
