"""The PyTorch side (needs torch and transformers, imported on first use): build a
GPT-2 or Llama causal LM from a config (seeded random weights) or a local checkpoint
folder, export it to ONNX with its key/value cache, and transformers' own greedy tokens
as the reference.  Nothing is downloaded."""
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Union

import onnx

from ._graph import prepare

__all__ = ["CONFIGS", "make_config", "make_model", "export", "hf_greedy"]

#: Named configs: tiny ones for tests and fixtures, and the SmolLM-135M geometry.
CONFIGS: Dict[str, Dict[str, Any]] = {
    "gpt2-tiny": dict(arch="gpt2", n_embd=64, n_layer=2, n_head=4, vocab_size=512,
                      n_positions=256, initializer_range=0.2),
    "llama-tiny": dict(arch="llama", hidden_size=64, intermediate_size=160,
                       num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                       vocab_size=512, max_position_embeddings=256,
                       tie_word_embeddings=True, initializer_range=0.2),
    "gpt2": dict(arch="gpt2"),  # transformers' GPT2Config() defaults: GPT-2 small
    "smollm-135m": dict(arch="llama", hidden_size=576, intermediate_size=1536,
                        num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                        vocab_size=49152, max_position_embeddings=2048,
                        tie_word_embeddings=True, rope_theta=10000.0, rms_norm_eps=1e-5),
}


def make_config(name: str, **overrides: Any) -> Any:
    """A transformers config from CONFIGS[name] (keys of the config class), updated by
    `overrides`."""
    import transformers
    if name not in CONFIGS:
        raise ValueError(f"webnn.llm: unknown config {name!r}; known: {sorted(CONFIGS)}")
    kw = dict(CONFIGS[name])
    kw.update(overrides)
    arch = kw.pop("arch")
    cls = transformers.GPT2Config if arch == "gpt2" else transformers.LlamaConfig
    return cls(**kw)


def make_model(config: Union[str, Any] = "llama-tiny", *, folder: Optional[str] = None,
               seed: int = 0, initializer_range: Optional[float] = None) -> Any:
    """A causal LM in eval mode: from `folder` (a local checkpoint saved by
    save_pretrained) when given, else from `config` (a CONFIGS name or a transformers
    config) with random weights drawn under `seed`."""
    import torch
    import transformers
    if folder is not None:
        if not os.path.isdir(folder):
            raise ValueError(f"webnn.llm: model folder {folder!r} is not a directory")
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, attn_implementation="eager",
            dtype=torch.float32)
        return model.eval()
    cfg = make_config(config) if isinstance(config, str) else config
    if initializer_range is not None:
        cfg.initializer_range = initializer_range
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    cls = (transformers.GPT2LMHeadModel if cfg.model_type == "gpt2"
           else transformers.AutoModelForCausalLM)
    model = cls(cfg) if cls is transformers.GPT2LMHeadModel else cls.from_config(cfg)
    return model.eval()


def _wrapper(model: Any) -> Any:
    import torch
    from transformers import DynamicCache

    class _WithCache(torch.nn.Module):  # type: ignore[misc,unused-ignore]
        """Flat tensors in and out: (ids, mask, positions, *past) -> (logits, *present)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, position_ids: Any,
                    *past: Any) -> Any:
            cache = DynamicCache(config=self.model.config)
            for i in range(len(past) // 2):
                cache.update(past[2 * i], past[2 * i + 1], i)
            out = self.model(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, past_key_values=cache,
                             use_cache=True)
            present = []
            for layer in out.past_key_values.layers:
                present += [layer.keys, layer.values]
            return (out.logits, *present)

    return _WithCache()


def export(model: Any, path: Optional[str] = None, *, opset: int = 17) -> onnx.ModelProto:
    """Export `model` (from make_model) with its cache as in webnn.llm._graph's
    docstring, prepared (cache_index / next_token added); saved to `path` when given."""
    import io

    import torch
    cfg = model.config
    layers = cfg.num_hidden_layers
    heads = cfg.num_attention_heads
    kv_heads = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    past_len, new = 4, 3
    past = [torch.zeros(1, kv_heads, past_len, head_dim) for _ in range(2 * layers)]
    ids = torch.zeros(1, new, dtype=torch.int64)
    mask = torch.ones(1, past_len + new, dtype=torch.int64)
    pos = torch.arange(new)[None]
    pnames = [f"past.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    onames = ["logits"] + [f"present.{i}.{kv}" for i in range(layers)
                           for kv in ("key", "value")]
    dyn: Dict[str, Dict[int, str]] = {"input_ids": {1: "seq"},
                                      "attention_mask": {1: "total"},
                                      "position_ids": {1: "seq"}}
    dyn.update({n: {2: "past"} for n in pnames})
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the tracer's notes on Python-side branches
        torch.onnx.export(_wrapper(model), (ids, mask, pos, *past), buf,
                          input_names=["input_ids", "attention_mask", "position_ids"]
                          + pnames, output_names=onames, dynamic_axes=dyn,
                          opset_version=opset, dynamo=False)
    model.eval()  # the exporter leaves the model in training mode (dropout on)
    proto = prepare(onnx.load_from_string(buf.getvalue()))
    meta = {"webnn.llm.model_type": str(cfg.model_type)}
    if cfg.model_type == "gpt2":   # learned positions: a table of n_positions rows
        meta["webnn.llm.max_positions"] = str(cfg.n_positions)
    onnx.helper.set_model_props(proto, meta)
    if path is not None:
        onnx.save(proto, path)
    return proto


def hf_greedy(model: Any, prompt: Sequence[int], new_tokens: int) -> List[int]:
    """transformers' own generate(do_sample=False): the new token ids (on the model's
    device)."""
    import torch
    ids = torch.tensor([list(prompt)], dtype=torch.int64, device=model.device)
    gc = model.generation_config
    eos = gc.eos_token_id
    gc.eos_token_id = None  # all `new_tokens` tokens, none suppressed (no min_new_tokens)
    try:
        with torch.no_grad():
            out = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                 max_new_tokens=new_tokens, pad_token_id=0)
    finally:
        gc.eos_token_id = eos
    return [int(t) for t in out[0, len(prompt):]]
