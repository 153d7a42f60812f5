"""Text generation with a decoder-only language model on WebNN (needs `onnx`).

    import webnn.llm
    proto = webnn.llm.export(webnn.llm.make_model("llama-tiny"))   # needs torch
    lm = webnn.llm.CausalLM(proto, capacity=128)
    tokens = lm.generate([1, 2, 3], 64)                  # greedy
    for t in lm.stream([1, 2, 3], 64, temperature=0.8, top_k=50, top_p=0.9, seed=0):
        print(t, end=" ", flush=True)

CausalLM keeps the key/value cache in MLTensors on the context's timeline, with two
graphs compiled once (prefill, decode); see _generate.py.  make_model / export /
hf_greedy need torch and transformers and import them on first use.
"""
from ._generate import CausalLM, Timings, sampling_probs
from ._graph import LMInterface, describe, prepare, step_feeds
from ._hf import CONFIGS, export, hf_greedy, make_config, make_model

__all__ = ["CausalLM", "Timings", "sampling_probs", "LMInterface", "describe", "prepare",
           "step_feeds", "CONFIGS", "export", "hf_greedy", "make_config", "make_model"]
