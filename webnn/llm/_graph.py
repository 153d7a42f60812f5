"""The ONNX side of generation: what an exported decoder-only LM looks like, and the
few nodes added to it so that one graph serves every position of a fixed-capacity cache.

An export by ``webnn.llm.export`` (or any model with the same interface) has
inputs ``input_ids``, ``attention_mask``, ``position_ids`` (int64, [1, T] / [1, P + T])
and ``past.<i>.key`` / ``past.<i>.value`` ([1, kv heads, P, head dim]); outputs ``logits``
([1, T, vocab]) and ``present.<i>.key`` / ``.value`` ([1, kv heads, P + T, head dim]: the
past followed by the T new entries).  `prepare` adds:

- an input ``cache_index`` (int32, [P]) and, per cache, an output ``cache.<i>.key`` =
  Gather(present, cache_index, axis 2): the new cache of the same capacity P.  Slot s keeps
  its past (index s) or takes new entry j (index P + j): the keys and values of the new
  tokens are written at their positions inside the graph, on the context's timeline;
- an input ``logits_index`` (int32, [1]) and outputs ``next_logits`` ([1, 1, vocab], the
  logits of that one position) and ``next_token`` ([1, 1] int64, their argmax), so a greedy
  step reads back one integer.
"""
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

import onnx
from onnx import TensorProto, helper

__all__ = ["LMInterface", "describe", "prepare", "step_feeds"]

_PAST = re.compile(r"^past\.(\d+)\.(key|value)$")


@dataclass(frozen=True)
class LMInterface:
    """What the generation loop needs to know about a prepared model."""
    layers: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    #: positions the model has (GPT-2's learned table); None: not limited (RoPE)
    max_positions: Optional[int] = None

    @property
    def past_names(self) -> List[str]:
        return [f"past.{i}.{kv}" for i in range(self.layers) for kv in ("key", "value")]

    @property
    def cache_names(self) -> List[str]:
        return [f"cache.{i}.{kv}" for i in range(self.layers) for kv in ("key", "value")]


def _dims(vi: onnx.ValueInfoProto) -> List[Union[str, int]]:
    return [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in vi.type.tensor_type.shape.dim]


def describe(proto: onnx.ModelProto) -> LMInterface:
    """Read the layer count, cache geometry and vocabulary of an exported LM; a model
    without the interface of the module docstring raises ValueError naming what is off."""
    g = proto.graph
    inputs = {vi.name: vi for vi in g.input}
    outputs = {vi.name: vi for vi in g.output}
    for name in ("input_ids", "attention_mask", "position_ids"):
        if name not in inputs:
            raise ValueError(f"webnn.llm: the model has no input {name!r} (inputs: "
                             f"{sorted(inputs)})")
    past = sorted((int(m.group(1)), m.group(2)) for m in map(_PAST.match, inputs) if m)
    layers = len(past) // 2
    if layers == 0 or past != [(i, kv) for i in range(layers) for kv in ("key", "value")]:
        raise ValueError("webnn.llm: the model's past inputs must be past.<i>.key and "
                         "past.<i>.value for i = 0 .. layers - 1")
    shape = _dims(inputs["past.0.key"])
    if len(shape) != 4 or not isinstance(shape[1], int) or not isinstance(shape[3], int):
        raise ValueError(f"webnn.llm: past.0.key must have shape [1, kv heads, past, head "
                         f"dim] with static heads and head dim, got {shape}")
    vocab = None
    if "logits" in outputs:
        vocab = _dims(outputs["logits"])[-1]
    elif "next_logits" in outputs:
        vocab = _dims(outputs["next_logits"])[-1]
    if not isinstance(vocab, int):
        raise ValueError("webnn.llm: the model needs an output 'logits' of shape "
                         "[1, T, vocab] with a static vocabulary size")
    props = {p.key: p.value for p in proto.metadata_props}
    limit = props.get("webnn.llm.max_positions")
    return LMInterface(layers, int(shape[1]), int(shape[3]), vocab,
                       int(limit) if limit else None)


def is_prepared(proto: onnx.ModelProto) -> bool:
    return any(vi.name == "cache_index" for vi in proto.graph.input)


def prepare(proto: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `proto` with the cache write and the next-token outputs of the module
    docstring (a model that has them already is returned unchanged)."""
    if is_prepared(proto):
        return proto
    info = describe(proto)
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    g = out.graph
    names = {vi.name for vi in g.output}
    for i in range(info.layers):
        for kv in ("key", "value"):
            if f"present.{i}.{kv}" not in names:
                raise ValueError(f"webnn.llm: the model has no output 'present.{i}.{kv}'")
    past_dim = _dims(g.input[[vi.name for vi in g.input].index("past.0.key")])[2]
    g.input.append(helper.make_tensor_value_info("cache_index", TensorProto.INT32, [past_dim]))
    g.input.append(helper.make_tensor_value_info("logits_index", TensorProto.INT32, [1]))
    keep: List[onnx.ValueInfoProto] = []
    new_outputs: List[Tuple[str, int, List[Union[str, int]]]] = []
    for vo in g.output:
        m = re.match(r"^present\.(\d+)\.(key|value)$", vo.name)
        if m:
            name = f"cache.{m.group(1)}.{m.group(2)}"
            g.node.append(helper.make_node("Gather", [vo.name, "cache_index"], [name],
                                           axis=2, name=f"write_{name}"))
            new_outputs.append((name, TensorProto.FLOAT,
                                [1, info.kv_heads, past_dim, info.head_dim]))
        elif vo.name != "logits":
            keep.append(vo)
    g.node.append(helper.make_node("Gather", ["logits", "logits_index"], ["next_logits"],
                                   axis=1, name="pick_logits"))
    g.node.append(helper.make_node("ArgMax", ["next_logits"], ["next_token"], axis=2,
                                   keepdims=0, name="next_token_argmax"))
    del g.output[:]
    g.output.extend(keep)
    g.output.append(helper.make_tensor_value_info("next_token", TensorProto.INT64, [1, 1]))
    g.output.append(helper.make_tensor_value_info("next_logits", TensorProto.FLOAT,
                                                  [1, 1, info.vocab_size]))
    for name, dt, shape in new_outputs:
        g.output.append(helper.make_tensor_value_info(name, dt, shape))
    return out


def step_feeds(tokens: Sequence[int], pos: int, width: int, capacity: int
               ) -> Dict[str, npt.NDArray[np.generic]]:
    """The small inputs of one run of a prepared model compiled for `width` new tokens
    and `capacity` cache slots: feed `tokens` (at most `width`, the rest padding) at
    positions pos, pos + 1, ...; their keys and values go to the cache's slots pos, ...;
    slots from pos on are masked out (not written yet, or stale); the next token's
    logits are those of the last token given."""
    n = len(tokens)
    ids = np.zeros((1, width), np.int64)
    ids[0, :n] = tokens
    positions = np.minimum(pos + np.arange(width, dtype=np.int64), pos + n - 1)[None]
    mask = np.zeros((1, capacity + width), np.int64)
    mask[0, :pos] = 1
    mask[0, capacity:capacity + n] = 1
    index = np.arange(capacity, dtype=np.int32)
    index[pos:pos + n] = capacity + np.arange(n, dtype=np.int32)
    return {"input_ids": ids, "position_ids": positions, "attention_mask": mask,
            "cache_index": index, "logits_index": np.array([n - 1], np.int32)}
