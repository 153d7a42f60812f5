"""The decode loop on WebNN: a prefill graph and a decode graph, compiled once, and a
fixed-capacity key/value cache that stays in MLTensors on the context's timeline."""
import os
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt
import onnx

import webnn
import webnn.onnx
from webnn.onnx._source import Weights, as_proto

from ._graph import LMInterface, describe, prepare, step_feeds

__all__ = ["CausalLM", "Timings", "sampling_probs"]

ModelSource = Union[str, "os.PathLike[str]", bytes, onnx.ModelProto]


@dataclass
class Timings:
    """Seconds of the last generation: `first_token` from the call to the first token
    (prefill included), then one entry per later token in `per_token`."""
    prompt_tokens: int = 0
    first_token: float = 0.0
    per_token: List[float] = field(default_factory=list)

    @property
    def decode_tokens_per_s(self) -> float:
        """New tokens after the first, per second of decoding."""
        total = sum(self.per_token)
        return len(self.per_token) / total if total > 0 else 0.0


def sampling_probs(logits: npt.ArrayLike, temperature: float, top_k: int = 0,
                   top_p: float = 1.0) -> npt.NDArray[np.float64]:
    """The distribution a sampled step draws from (float64, sums to 1): softmax of
    logits / temperature over the `top_k` largest (0: all), then the smallest set of
    most likely tokens whose probability reaches `top_p` (transformers' order)."""
    x = np.asarray(logits, np.float64).reshape(-1)
    with np.errstate(over="ignore"):
        z = x / temperature
    if np.any(np.isinf(z) & np.isfinite(x)):   # a temperature so small it overflows: greedy
        one: npt.NDArray[np.float64] = np.zeros(x.size)
        one[int(np.argmax(x))] = 1.0
        return one
    if 0 < top_k < z.size:
        kth = np.partition(z, z.size - top_k)[z.size - top_k]
        z = np.where(z < kth, -np.inf, z)
    p: npt.NDArray[np.float64] = np.exp(z - z.max())
    p /= p.sum()
    if top_p < 1.0:
        order = np.argsort(-p, kind="stable")
        before = np.cumsum(p[order]) - p[order]      # mass of the more likely tokens
        drop = order[before >= top_p]
        p[drop] = 0.0
        p /= p.sum()
    return p


class _Phase:
    """One compiled graph: `tokens` new tokens against a cache of `capacity` slots."""

    def __init__(self, ctx: webnn.MLContext, proto: onnx.ModelProto, weights: Weights,
                 info: LMInterface, tokens: int, capacity: int) -> None:
        shapes: Dict[str, List[int]] = {
            "input_ids": [1, tokens], "position_ids": [1, tokens],
            "attention_mask": [1, capacity + tokens], "cache_index": [capacity],
            "logits_index": [1]}
        for n in info.past_names:
            shapes[n] = [1, info.kv_heads, capacity, info.head_dim]
        self.tokens = tokens
        self.model = webnn.onnx.load(proto, ctx, shapes, _weights=weights)
        graph = self.model.graph
        assert graph is not None
        self.graph = graph
        ins, outs = graph.input_descriptors, graph.output_descriptors
        self.feeds = {n: ctx.create_tensor({"data_type": d["data_type"], "shape": d["shape"],
                                            "writable": True})
                      for n, d in ins.items() if not n.startswith("past.")}
        names: Dict[str, str] = self.model._graph_outputs   # ONNX name -> graph output
        self.out_name = {n: names[n] for n in ("next_token", "next_logits")}
        self.cache_out = [names[n] for n in info.cache_names]
        self.past_in = info.past_names   # all read: the new cache gathers from them
        self.results = {n: ctx.create_tensor({"data_type": d["data_type"],
                                              "shape": d["shape"], "readable": True})
                        for n, d in outs.items() if n in self.out_name.values()}


class CausalLM:
    """A decoder-only language model on WebNN, from an ONNX export with a key/value
    cache (see webnn.llm.export)::

        lm = webnn.llm.CausalLM("model.onnx", capacity=256)
        for token in lm.stream([1, 2, 3], 32, temperature=0.8, top_p=0.9, seed=0):
            print(token)

    Two graphs are compiled once: prefill (`prefill_bucket` tokens at a time; a longer
    prompt goes in several chunks) and decode (one token).  The cache has `capacity`
    slots in MLTensors that never leave the context: each step reads one buffer and writes
    the other, and the graph writes the new keys and values at their positions; slots
    not yet written are masked out, so they contribute exactly nothing."""

    def __init__(self, model: ModelSource, *, context: Optional[webnn.MLContext] = None,
                 capacity: int = 256, prefill_bucket: int = 32) -> None:
        for name, v in (("capacity", capacity), ("prefill_bucket", prefill_bucket)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"webnn.llm.CausalLM: {name} must be a positive int, "
                                 f"got {v!r}")
        # read once (external data from its folder; a path's weights straight from the
        # file into memory that both phases' constants share, without a copy)
        proto, weights = as_proto(model, None, strip=True)
        proto = prepare(proto)
        self.info = describe(proto)
        limit = self.info.max_positions
        if limit is not None and capacity > limit:
            raise ValueError(f"webnn.llm.CausalLM: capacity {capacity} is more than the "
                             f"{limit} positions the model has (its position table)")
        self.context = context if context is not None else webnn.ml.create_context()
        self.capacity = capacity
        self.prefill_bucket = min(prefill_bucket, capacity)
        self.vocab_size = self.info.vocab_size
        self._decode = _Phase(self.context, proto, weights, self.info, 1, capacity)
        self._prefill = (self._decode if self.prefill_bucket == 1 else
                         _Phase(self.context, proto, weights, self.info,
                                self.prefill_bucket, capacity))
        shape = [1, self.info.kv_heads, capacity, self.info.head_dim]
        desc: webnn.MLTensorDescriptor = {"data_type": "float32", "shape": shape,
                                          "writable": True}
        zeros = np.zeros(shape, np.float32)
        self._caches: List[List[webnn.MLTensor]] = []
        for _ in range(2):
            bufs = [self.context.create_tensor(desc) for _ in self.info.past_names]
            for t in bufs:   # finite values: a masked slot times its weight 0 is then 0
                self.context.write_tensor(t, zeros)
            self._caches.append(bufs)
        self._run_id = 0
        self._last_phase: Optional[_Phase] = None
        self._destroyed = False
        self.timings = Timings()

    # -- one graph run -----------------------------------------------------------
    def _run(self, phase: _Phase, tokens: Sequence[int], pos: int) -> None:
        """Feed `tokens` at positions pos, pos + 1, ...: their keys and values go into
        the cache's slots pos, ...; the next token's logits are those of the last one."""
        ctx = self.context
        values = step_feeds(tokens, pos, phase.tokens, self.capacity)
        inputs = dict(phase.feeds)
        for name, tensor in phase.feeds.items():
            ctx.write_tensor(tensor, values[name])
        src, dst = self._caches
        inputs.update(zip(phase.past_in, src))
        outputs = dict(phase.results)
        outputs.update(zip(phase.cache_out, dst))
        ctx.dispatch(phase.graph, inputs, outputs)
        self._caches.reverse()
        self._last_phase = phase

    def _next(self, phase: _Phase, rng: Optional[np.random.Generator], temperature: float,
              top_k: int, top_p: float) -> int:
        if rng is None:
            out = self.context.read_tensor(phase.results[phase.out_name["next_token"]])
            return int(out.reshape(-1)[0])
        logits = self.context.read_tensor(phase.results[phase.out_name["next_logits"]])
        p = sampling_probs(logits, temperature, top_k, top_p)
        c = np.cumsum(p)
        return int(min(np.searchsorted(c, rng.random() * c[-1], side="right"), p.size - 1))

    # -- generation --------------------------------------------------------------
    def _check(self, prompt_ids: Sequence[int], max_new_tokens: int, temperature: float,
               top_k: int, top_p: float) -> List[int]:
        where = "webnn.llm.CausalLM.generate"
        if self._destroyed:
            raise webnn.InvalidStateError(f"{where}: the model was destroyed")
        prompt = [int(t) for t in np.asarray(prompt_ids, np.int64).reshape(-1)]
        if not prompt:
            raise ValueError(f"{where}: prompt_ids is empty; give at least one token")
        bad = [t for t in prompt if not 0 <= t < self.vocab_size]
        if bad:
            raise ValueError(f"{where}: prompt token {bad[0]} is outside the vocabulary "
                             f"[0, {self.vocab_size})")
        if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 1:
            raise ValueError(f"{where}: max_new_tokens must be a positive int, got "
                             f"{max_new_tokens!r}")
        need = len(prompt) + int(max_new_tokens) - 1
        if need > self.capacity:
            raise ValueError(f"{where}: a prompt of {len(prompt)} tokens and "
                             f"{max_new_tokens} new tokens need {need} cache slots (all "
                             f"tokens but the last are fed back), but the capacity is "
                             f"{self.capacity}; make the CausalLM with a larger capacity")
        if not temperature >= 0:
            raise ValueError(f"{where}: temperature must be >= 0 (0: greedy), got "
                             f"{temperature!r}")
        if not isinstance(top_k, (int, np.integer)) or top_k < 0:
            raise ValueError(f"{where}: top_k must be an int >= 0 (0: off), got {top_k!r}")
        if not 0 < top_p <= 1:
            raise ValueError(f"{where}: top_p must be in (0, 1], got {top_p!r}")
        return prompt

    def stream(self, prompt_ids: Sequence[int], max_new_tokens: int, *,
               temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0,
               seed: Union[None, int, np.random.Generator] = None,
               eos_token_id: Optional[int] = None) -> Iterator[int]:
        """Yield new token ids as they come: greedy (argmax in the graph, one integer
        read per token) when temperature is 0, else sampled from `sampling_probs` with
        numpy's Generator(`seed`) (the same seed, the same tokens).  Stops after
        `max_new_tokens` or after yielding `eos_token_id`.  Starting another generation
        ends this one.  Timings land in self.timings."""
        prompt = self._check(prompt_ids, max_new_tokens, temperature, top_k, top_p)
        rng = None
        if temperature > 0:
            rng = seed if isinstance(seed, np.random.Generator) else \
                np.random.default_rng(seed)
        return self._loop(prompt, int(max_new_tokens), rng, float(temperature), int(top_k),
                          float(top_p), eos_token_id)

    def _loop(self, prompt: List[int], max_new_tokens: int,
              rng: Optional[np.random.Generator], temperature: float, top_k: int,
              top_p: float, eos_token_id: Optional[int]) -> Iterator[int]:
        self._run_id += 1
        run_id = self._run_id
        timings = self.timings = Timings(prompt_tokens=len(prompt))
        start = time.perf_counter()
        pos, bucket = 0, self.prefill_bucket
        while pos < len(prompt):
            chunk = prompt[pos:pos + bucket]
            phase = self._decode if len(chunk) == 1 else self._prefill
            self._run(phase, chunk, pos)
            pos += len(chunk)
        token = self._next(phase, rng, temperature, top_k, top_p)
        now = time.perf_counter()
        timings.first_token = now - start
        for i in range(max_new_tokens):
            yield token
            if i == max_new_tokens - 1 or token == eos_token_id:
                return
            if self._run_id != run_id:
                raise webnn.InvalidStateError("webnn.llm.CausalLM: another generation "
                                              "started and took over the cache")
            if pos >= self.capacity:   # _check rules this out; never write past the end
                raise ValueError(f"webnn.llm.CausalLM: position {pos} is past the cache "
                                 f"capacity {self.capacity}")
            before = time.perf_counter()
            self._run(self._decode, [token], pos)
            pos += 1
            token = self._next(self._decode, rng, temperature, top_k, top_p)
            timings.per_token.append(time.perf_counter() - before)

    def last_logits(self) -> npt.NDArray[np.float32]:
        """The logits ([vocab]) from which the last token of the last generation was
        chosen (read from the context: a sync point)."""
        phase = self._last_phase
        if phase is None or self._destroyed:
            raise webnn.InvalidStateError("webnn.llm.CausalLM.last_logits: nothing was "
                                          "generated yet (or it was destroyed)")
        out = self.context.read_tensor(phase.results[phase.out_name["next_logits"]])
        return np.asarray(out, np.float32).reshape(-1)

    def destroy(self) -> None:
        """Release the graphs and the cache tensors (the context stays)."""
        for phase in {id(p): p for p in (self._prefill, self._decode)}.values():
            for t in list(phase.feeds.values()) + list(phase.results.values()):
                t.destroy()
            phase.graph.destroy()
        for bufs in self._caches:
            for t in bufs:
                t.destroy()
        self._run_id += 1
        self._destroyed = True

    def generate(self, prompt_ids: Sequence[int], max_new_tokens: int, **options: Any
                 ) -> List[int]:
        """The new token ids as a list (`stream`'s options)."""
        return list(self.stream(prompt_ids, max_new_tokens, **options))
