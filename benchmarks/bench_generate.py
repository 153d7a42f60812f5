"""Decode speed of webnn.llm against ONNX Runtime on a machine others share.

    python benchmarks/bench_generate.py smollm.onnx --pairs 8 --limit 240

The model: an export by webnn.llm.export (examples/generate.py --config smollm-135m
--save-onnx smollm.onnx).  In one process, webnn's CausalLM and ONNX Runtime (the same
model, I/O binding: examples/generate.py's ort_greedy) generate the same greedy tokens
in turns, a pair at a time; a pair counts only when the other processes on the machine
used less than --quiet of its CPUs while it ran (/proc/stat less this process's own
time), so that a build or a test suite of someone else's does not land in the numbers.
Prints min / median / max of tokens/s, of the ratio per pair and of first-token
latency.  Linux only (/proc)."""
import argparse
import os
import statistics
import sys
import time
from typing import List, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))


def _busy() -> Tuple[int, int]:
    """(busy, total) jiffies of all CPUs."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)


def _own() -> int:
    """this process's user + system jiffies (all its threads)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("onnx", help="an export by webnn.llm.export")
    p.add_argument("--pairs", type=int, default=8, help="quiet pairs to collect")
    p.add_argument("--limit", type=float, default=300, help="give up after this many s")
    p.add_argument("--quiet", type=float, default=0.05,
                   help="the most of the CPUs other processes may use during a pair")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--prompt-ids", default="5,17,99,3,250,11,42,7")
    p.add_argument("--new-tokens", type=int, default=64)
    a = p.parse_args()
    os.environ["WEBNN_NUM_THREADS"] = str(a.threads)
    import onnx

    import generate
    import webnn.llm as llm
    proto = llm.prepare(onnx.load(a.onnx))
    prompt = [int(t) for t in a.prompt_ids.split(",")]
    cap = len(prompt) + a.new_tokens
    lm = llm.CausalLM(proto, capacity=cap)
    ref = lm.generate(prompt, a.new_tokens)
    if generate.ort_greedy(proto, prompt, a.new_tokens, cap, lm.prefill_bucket,
                           a.threads)[0] != ref:
        print("ONNX Runtime's tokens differ from webnn's")
        return 1
    ours: List[Tuple[float, float]] = []
    theirs: List[Tuple[float, float]] = []
    tried, end = 0, time.time() + a.limit
    while len(ours) < a.pairs and time.time() < end:
        tried += 1
        b0, t0 = _busy()
        s0 = _own()
        tokens = lm.generate(prompt, a.new_tokens)
        t = lm.timings
        ort_tokens, first, per = generate.ort_greedy(proto, prompt, a.new_tokens, cap,
                                                     lm.prefill_bucket, a.threads)
        b1, t1 = _busy()
        others = ((b1 - b0) - (_own() - s0)) / max(t1 - t0, 1)
        if tokens != ref or ort_tokens != ref:
            print("the tokens changed between runs")
            return 1
        if others < a.quiet:
            ours.append((t.decode_tokens_per_s, t.first_token * 1e3))
            theirs.append((len(per) / sum(per), first * 1e3))
        else:
            time.sleep(1.0)

    def mmm(v: List[float], f: str = ".1f") -> str:
        return (f"{min(v):{f}} / {statistics.median(v):{f}} / {max(v):{f}}")
    print(f"{len(ours)} of {tried} pairs quiet (others < {a.quiet:.0%} of the CPUs); "
          f"{a.threads} threads, prompt {len(prompt)}, {a.new_tokens} new; min / median / max")
    if not ours:
        return 2
    print(f"  webnn         decode {mmm([w for w, _ in ours])} tokens/s   "
          f"first token {mmm([f for _, f in ours])} ms")
    print(f"  ONNX Runtime  decode {mmm([o for o, _ in theirs])} tokens/s   "
          f"first token {mmm([f for _, f in theirs])} ms")
    print(f"  webnn / ONNX Runtime per pair: decode "
          f"{mmm([w / o for (w, _), (o, _) in zip(ours, theirs)], '.2f')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
