"""Pictures and summaries of graphs: MLGraph._repr_svg_ / _repr_mimebundle_
(Jupyter), MLGraph.to_dot() and MLGraph.summary().

Everything comes from the core's read-only view of a built graph
(_core.graph_view: nodes, operands with descriptors, the plan's order and
scratch bytes, the fusable chains).  The picture is drawn by Graphviz (the
`graphviz` package and its `dot` program); without them the graph shows as
the summary's text."""
import html
import math
import shutil

from . import _core

_BYTES = {"float32": 4, "float16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
          "int8": 1, "uint8": 1}
_ELEMENTWISE_COST = {"erf": 8, "exp": 4, "log": 4, "sin": 4, "cos": 4, "tan": 6, "gelu": 10,
                     "sigmoid": 5, "tanh": 6, "softplus": 6, "elu": 5, "softmax": 5,
                     "pow": 6, "sqrt": 2}


def _numel(shape):
    return math.prod(shape) if shape else 1


def _desc(op):
    return f"{op['data_type']}[{', '.join(map(str, op['shape']))}]"


def _flops(node, ops):
    """An estimate of the node's floating-point operations (multiply-adds
    count 2), from shapes alone."""
    name = node["operator"]
    ins = [ops[i] for i in node["inputs"]]
    outs = [ops[i] for i in node["outputs"]]
    out = sum(_numel(o["shape"]) for o in outs)
    if name in ("conv2d", "convTranspose2d"):
        x, w = ins[0], ins[1]
        fel = _numel(w["shape"])
        # filter elements per output channel: (in/groups) * kh * kw; the
        # output channel count is the filter dimension that the output has
        oshape, fshape = outs[0]["shape"], w["shape"]
        if name == "conv2d":
            cands = [d for d in (fshape[0], fshape[3]) if d in (oshape[1], oshape[3])]
            cout = cands[0] if cands else fshape[0]
            return 2 * out * fel // max(cout, 1)
        return 2 * _numel(x["shape"]) * fel // max(x["shape"][1] if len(x["shape"]) > 1 else 1, 1)
    if name in ("matmul", "gemm"):
        a, b = _numel(ins[0]["shape"]), _numel(ins[1]["shape"])
        k = math.isqrt(max(a * b // max(out, 1), 1)) if name == "gemm" else ins[0]["shape"][-1]
        return 2 * out * k
    if name in ("gru", "lstm", "gruCell", "lstmCell"):
        return 2 * sum(_numel(o["shape"]) for o in ins[1:3]) * max(_numel(ins[0]["shape"][:2]), 1)
    if name.startswith("reduce") or name in ("averagePool2d", "l2Pool2d", "maxPool2d",
                                             "batchNormalization", "instanceNormalization",
                                             "layerNormalization", "cumulativeSum"):
        return 2 * _numel(ins[0]["shape"])
    if name in ("reshape", "expand", "transpose", "slice", "split", "concat", "tile", "pad",
                "reverse", "gather", "gatherElements", "gatherND", "scatterElements",
                "scatterND", "identity", "cast", "triangular"):
        return 0
    return out * _ELEMENTWISE_COST.get(name, 1)


def _int8(group):
    """a quantized region (dequantizeLinear -> conv2d / matmul ->
    quantizeLinear, csrc/compiler/fuse_qdq.c) runs in integer arithmetic"""
    return " (int8)" if "dequantizeLinear" in group else ""


class GraphSummary:
    """What MLGraph.summary() returns: ``str()`` is a table; the fields hold
    the numbers.

    Attributes
    ----------
    rows : list of dict
        One per operator in execution order: ``operator``, ``label``,
        ``inputs``, ``outputs`` (``"float32[1, 3]"`` strings), ``flops``,
        ``fused`` (chain number or 0).
    flops : int
        Estimated floating-point operations of one run.
    constant_bytes : int
        Bytes of the constants the graph keeps.
    io_bytes : int
        Bytes of its inputs and outputs.
    peak_bytes : int
        The plan's scratch memory for intermediate results (after reuse).
    fused_groups : list of list of str
        The chains (producer, add, activation) that the backend runs as one
        operation (``WEBNN_CPU_FUSION=0`` / ``WEBNN_CUDA_FUSION=0`` turn
        fusion off; then the chains it would fuse).
    fuses : bool
        Whether this graph's backend runs those chains fused.
    """

    def __init__(self, graph):
        view = _core.graph_view(graph._h)
        if view is None:
            raise RuntimeError("the graph's structure is no longer available")
        ops, nodes = view["operands"], view["nodes"]
        self.device = graph._ctx.device_type
        # the backends run the chains fused unless WEBNN_CPU_FUSION=0 /
        # WEBNN_CUDA_FUSION=0 when the context was created
        self.fuses = bool(view["fuses"])
        self.rows = []
        for nid in view["order"]:
            n = nodes[nid]
            self.rows.append({
                "operator": n["operator"], "label": n["label"] or "",
                "inputs": [_desc(ops[i]) for i in n["inputs"]],
                "outputs": [_desc(ops[i]) for i in n["outputs"]],
                "flops": _flops(n, ops), "fused": view["fusion"][nid],
            })
        reached = {i for nid in view["order"] for i in nodes[nid]["inputs"]}
        reached |= set(view["outputs"])
        self.constant_bytes = sum(o["constant_bytes"] for i, o in enumerate(ops)
                                  if o and o["kind"] == "constant" and i in reached)
        self.n_constants = sum(1 for i, o in enumerate(ops)
                               if o and o["kind"] == "constant" and i in reached)
        io = list(view["inputs"]) + list(view["outputs"])
        self.io_bytes = sum(_numel(ops[i]["shape"]) * _BYTES[ops[i]["data_type"]] for i in io)
        self.peak_bytes = view["arena_bytes"]
        self.flops = sum(r["flops"] for r in self.rows)
        groups = {}
        for r in self.rows:
            if r["fused"]:
                groups.setdefault(r["fused"], []).append(r["operator"])
        self.fused_groups = [groups[k] for k in sorted(groups)]
        self.inputs = {n: _desc({"data_type": dt, "shape": s})
                       for n, (dt, s) in graph._inputs.items()}
        self.outputs = {n: _desc({"data_type": dt, "shape": s})
                        for n, (dt, s) in graph._outputs.items()}

    def __str__(self):
        head = ("#", "operator", "label", "inputs", "outputs", "FLOPs", "fused")
        body = [(str(i), r["operator"], r["label"], " ".join(r["inputs"]),
                 " ".join(r["outputs"]), _si(r["flops"]), str(r["fused"] or ""))
                for i, r in enumerate(self.rows)]
        widths = [max(len(h), *(len(b[k]) for b in body)) if body else len(h)
                  for k, h in enumerate(head)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
        out = [f"MLGraph on {self.device}: inputs {self.inputs}, outputs {self.outputs}",
               line(head), line(["-" * w for w in widths])]
        out += [line(b) for b in body]
        out.append(f"{len(self.rows)} operators, ~{_si(self.flops)}FLOPs, "
                   f"{self.n_constants} constants ({_bytes(self.constant_bytes)}), "
                   f"inputs+outputs {_bytes(self.io_bytes)}, "
                   f"peak intermediate memory {_bytes(self.peak_bytes)}")
        if self.fused_groups:
            how = ("each run as one operation on this context" if self.fuses else
                   "fusion is off on this context: run one by one")
            out.append(f"fused chains ({how}): "
                       + "; ".join(" -> ".join(g) + _int8(g) for g in self.fused_groups))
        return "\n".join(out)

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        return "<pre>" + html.escape(str(self)) + "</pre>"


def _si(n):
    for unit, k in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n} "


def _bytes(n):
    for unit, k in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if n >= k:
            return f"{n / k:.3g} {unit}"
    return f"{n} B"


def summary(graph):
    return GraphSummary(graph)


def _q(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph):
    """The graph in DOT: inputs (green), constants (grey, with their bytes)
    and outputs (blue) as boxes, operators as ellipses with their labels,
    edges labelled with data types and shapes."""
    view = _core.graph_view(graph._h)
    if view is None:
        return "digraph MLGraph { }"
    ops, nodes = view["operands"], view["nodes"]
    out_names = {}
    for name, oid in zip(graph._outputs, view["outputs"]):
        out_names.setdefault(oid, []).append(name)
    lines = ["digraph MLGraph {", '  rankdir=TB; node [fontname="Helvetica", fontsize=11];',
             '  edge [fontname="Helvetica", fontsize=9];']
    used = set()
    for nid in view["order"]:
        used.update(nodes[nid]["inputs"])
    used.update(view["outputs"])
    for i, o in enumerate(ops):
        if o is None or i not in used:
            continue
        if o["kind"] == "input":
            lines.append(f'  o{i} [shape=box, style="rounded,filled", fillcolor="#d9f2d9", '
                         f'label={_q("input " + o["name"])}];')
        elif o["kind"] == "constant":
            lines.append(f'  o{i} [shape=box, style="filled", fillcolor="#eeeeee", '
                         f'label={_q("constant " + _desc(o) + chr(10) + _bytes(o["constant_bytes"]))}];')
    fused = view["fusion"]
    for nid in view["order"]:
        n = nodes[nid]
        text = n["operator"] + (f"\n'{n['label']}'" if n["label"] else "")
        color = ', style=filled, fillcolor="#fff2cc"' if fused[nid] else ""
        lines.append(f"  n{nid} [shape=ellipse, label={_q(text)}{color}];")
    producer = {}
    for nid in view["order"]:
        for oid in nodes[nid]["outputs"]:
            producer[oid] = nid
    for nid in view["order"]:
        for oid in nodes[nid]["inputs"]:
            src = f"n{producer[oid]}" if oid in producer else f"o{oid}"
            lines.append(f"  {src} -> n{nid} [label={_q(_desc(ops[oid]))}];")
    for oid, names in out_names.items():
        for name in names:
            tag = f"out_{len(lines)}"
            lines.append(f'  {tag} [shape=box, style="rounded,filled", fillcolor="#d6e4f5", '
                         f'label={_q("output " + name)}];')
            src = f"n{producer[oid]}" if oid in producer else f"o{oid}"
            lines.append(f"  {src} -> {tag} [label={_q(_desc(ops[oid]))}];")
    groups = {}
    for nid in view["order"]:
        if fused[nid]:
            groups.setdefault(fused[nid], []).append(nid)
    for g, members in groups.items():
        lines.append(f'  subgraph cluster_fused_{g} {{ label="fusable chain {g}"; style=dashed; '
                     + " ".join(f"n{m};" for m in members) + " }")
    lines.append("}")
    return "\n".join(lines)


def graphviz_available():
    try:
        import graphviz  # noqa: F401
    except ImportError:
        return False
    return shutil.which("dot") is not None


def svg(graph):
    """The graph as SVG text, or None when Graphviz is missing (Jupyter then
    shows the text repr)."""
    if not graphviz_available():
        return None
    import graphviz
    try:
        return graphviz.Source(to_dot(graph)).pipe(format="svg").decode("utf-8")
    except Exception:  # a broken Graphviz install: fall back to text
        return None


def mimebundle(graph):
    bundle = {"text/plain": repr(graph)}
    s = svg(graph)
    if s is not None:
        bundle["image/svg+xml"] = s
    else:
        bundle["text/html"] = ("<pre>" + html.escape(repr(graph) + "\n" + str(summary(graph)))
                               + "</pre>")
    return bundle
