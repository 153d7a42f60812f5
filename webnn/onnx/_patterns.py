"""Subgraphs of an ONNX model that are one WebNN operator: found before the
conversion, converted as that operator (the converter's loop asks `Patterns`
which nodes a pattern owns).

gelu: exporters (torch.onnx for BERT, ViT, ConvNeXt, Whisper, ...) write
WebNN's gelu, 0.5 x (1 + erf(x / sqrt 2)), as five nodes: Div(x, sqrt 2) or
Mul(x, 1 / sqrt 2), Erf, Add(., 1), and two Muls taking x and 0.5 in any
order.  Run as an element-wise chain that costs several passes of erf's
polynomial and the arithmetic around it; as gelu, one vectorised pass.  The
result is the same function (the spec's formula) within gelu's accuracy.

A pattern is taken only when each of its intermediate values is used by the
next node of the pattern alone and is no graph output; the converter still
checks the value's type and rank when it meets the pattern (Patterns.gelu)
and converts the nodes one by one otherwise."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Set, Tuple

import numpy as np
import onnx
from onnx import numpy_helper

_SQRT2 = math.sqrt(2.0)


def _scalar(value: Optional[np.ndarray], want: float, rel: float) -> bool:
    if value is None or value.size != 1 or value.ndim > 1 or \
            value.dtype.kind != "f":
        return False
    v = float(value.reshape(-1)[0])
    return abs(v - want) <= rel * abs(want)


_QDQ_READERS = {"Conv": 1, "MatMul": 1, "Gemm": 1}   # op type: the weights' input


class Patterns:
    """The gelu subgraphs of graph `g`: {index of the last node: (x, the
    nodes' indices, the constants' names)}; the other nodes of each are
    `owned` (converted with the last one).

    `keep_dq`: the outputs of the DequantizeLinear nodes of constant int8 /
    uint8 weights that a quantized region reads (issue 30: QDQ models as
    onnxruntime.quantization writes them): DequantizeLinear(W) read only as
    the weights of a Conv, MatMul or Gemm whose input is itself a
    DequantizeLinear's result.  These are not folded to float at import but
    converted to dequantizeLinear of the integer constant, so that the
    compiler finds the region (compiler/fuse_qdq.c) and runs it in integer
    arithmetic; a backend that does not dequantizes them when it runs."""

    def __init__(self, g: onnx.GraphProto, consts: Dict[str, np.ndarray]) -> None:
        self.gelus: Dict[int, Tuple[str, List[int]]] = {}
        self.owned: Set[int] = set()
        self.keep_dq: Set[str] = set()
        self._find(g, consts)
        self._find_qdq_weights(g, consts)

    def _find_qdq_weights(self, g: onnx.GraphProto, consts: Dict[str, np.ndarray]) -> None:
        nodes = list(g.node)
        producer: Dict[str, onnx.NodeProto] = {}
        users: Dict[str, List[Tuple[onnx.NodeProto, int]]] = {}
        constant_out = set(consts)
        for n in nodes:
            for j, name in enumerate(n.input):
                if name:
                    users.setdefault(name, []).append((n, j))
            for name in n.output:
                if name:
                    producer[name] = n
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                constant_out.update(o for o in n.output if o)
        outputs = {vo.name for vo in g.output}
        for n in nodes:
            if n.op_type != "DequantizeLinear" or n.domain not in ("", "ai.onnx") or \
                    len(n.output) != 1 or not n.input or n.input[0] not in constant_out:
                continue
            w = consts.get(n.input[0])
            if w is not None and w.dtype not in (np.int8, np.uint8):
                continue
            out = n.output[0]
            reads = users.get(out, [])
            if len(reads) != 1 or out in outputs:
                continue
            reader, j = reads[0]
            if reader.domain not in ("", "ai.onnx") or _QDQ_READERS.get(reader.op_type) != j:
                continue
            src = producer.get(reader.input[0]) if reader.input else None
            if src is not None and src.op_type == "DequantizeLinear":
                self.keep_dq.add(out)

    # -- finding -----------------------------------------------------------------
    def _find(self, g: onnx.GraphProto, consts: Dict[str, np.ndarray]) -> None:
        nodes = list(g.node)
        producer: Dict[str, int] = {}
        users: Dict[str, List[int]] = {}
        values = dict(consts)
        for i, n in enumerate(nodes):
            for name in n.input:
                if name:
                    users.setdefault(name, []).append(i)
            for name in n.output:
                if name:
                    producer[name] = i
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.output) == 1:
                for a in n.attribute:
                    if a.name == "value" and a.type == onnx.AttributeProto.TENSOR and \
                            not a.t.external_data and a.t.data_type in (
                                onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16,
                                onnx.TensorProto.DOUBLE):
                        try:
                            values[n.output[0]] = numpy_helper.to_array(a.t)
                        except Exception:   # a malformed tensor: no pattern
                            pass
                    elif a.name == "value_float":
                        values[n.output[0]] = np.array(a.f, np.float32)
        outputs = {vo.name for vo in g.output}

        def std(i: int) -> bool:
            return nodes[i].domain in ("", "ai.onnx")

        def only_user(name: str, i: int) -> bool:
            return users.get(name) == [i] and name not in outputs

        def other(n: onnx.NodeProto, name: str) -> Optional[str]:
            ins = list(n.input)
            if len(ins) != 2 or name not in ins or ins[0] == ins[1]:
                return None
            return ins[1] if ins[0] == name else ins[0]

        for e, n in enumerate(nodes):
            if n.op_type != "Erf" or not std(e) or len(n.input) != 1 or len(n.output) != 1:
                continue
            # x / sqrt 2, or x * (1 / sqrt 2)
            d = producer.get(n.input[0])
            if d is None or not std(d) or not only_user(n.input[0], e) or \
                    len(nodes[d].input) != 2:
                continue
            dn = nodes[d]
            if dn.op_type == "Div" and _scalar(values.get(dn.input[1]), _SQRT2, 1e-6):
                x = dn.input[0]
            elif dn.op_type == "Mul":
                x = next((a for a, b in (dn.input, dn.input[::-1])
                          if _scalar(values.get(b), 1 / _SQRT2, 1e-6)), None)
                if x is None:
                    continue
            else:
                continue
            if x in values:
                continue
            # 1 + erf(.)
            erf_out = n.output[0]
            if users.get(erf_out) is None or len(users[erf_out]) != 1 or erf_out in outputs:
                continue
            a = users[erf_out][0]
            an = nodes[a]
            if an.op_type != "Add" or not std(a) or len(an.output) != 1 or \
                    not _scalar(values.get(other(an, erf_out) or ""), 1.0, 0.0):
                continue
            found = self._products(nodes, users, producer, outputs, values, x, an.output[0])
            if found is None:
                continue
            last, muls = found
            idx = [d, e, a] + muls
            if self.owned.intersection(idx) or any(i in self.gelus for i in idx):
                continue
            self.gelus[last] = (x, sorted(idx))
            self.owned.update(i for i in idx if i != last)

    @staticmethod
    def _products(nodes: List[onnx.NodeProto], users: Dict[str, List[int]],
                  producer: Dict[str, int], outputs: Set[str],
                  values: Dict[str, np.ndarray], x: str, one_plus: str
                  ) -> Optional[Tuple[int, List[int]]]:
        """The two Muls that make x * one_plus * 0.5 (any order): (the last
        one's index, both indices), or None."""
        def single(name: str) -> Optional[int]:
            u = users.get(name)
            if not u or len(u) != 1 or name in outputs:
                return None
            j = u[0]
            n = nodes[j]
            if n.op_type != "Mul" or n.domain not in ("", "ai.onnx") or len(n.input) != 2 \
                    or len(n.output) != 1 or n.input[0] == n.input[1]:
                return None
            return j

        def factors(n: onnx.NodeProto, known: str) -> str:
            return n.input[1] if n.input[0] == known else n.input[0]

        half = lambda name: _scalar(values.get(name), 0.5, 0.0)   # noqa: E731
        m1 = single(one_plus)
        if m1 is None:
            return None
        f1 = factors(nodes[m1], one_plus)
        if f1 == x:                       # (x * (1 + erf)) * 0.5
            m2 = single(nodes[m1].output[0])
            if m2 is not None and half(factors(nodes[m2], nodes[m1].output[0])):
                return m2, [m1, m2]
            return None
        if half(f1):                      # x * ((1 + erf) * 0.5)
            m2 = single(nodes[m1].output[0])
            if m2 is not None and factors(nodes[m2], nodes[m1].output[0]) == x:
                return m2, [m1, m2]
            return None
        # (x * 0.5) * (1 + erf): f1 is made by Mul(x, 0.5), used only here
        j = producer.get(f1)          # (its producer: no scan of the nodes)
        if j is None:
            return None
        n = nodes[j]
        if n.op_type == "Mul" and list(n.output) == [f1] and len(n.input) == 2 and \
                n.domain in ("", "ai.onnx") and x in n.input and half(factors(n, x)) and \
                users.get(f1) == [m1] and f1 not in outputs:
            return m1, [j, m1]
        return None

    def owns(self, index: int) -> bool:
        """Is node `index` converted with a later node of its pattern?"""
        return index in self.owned
