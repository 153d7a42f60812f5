"""MLGraph.profile(): the time of each step of a compiled graph.

The backend times every step it runs (csrc/backend/backend.h,
execute_profiled): one operator, or a fused chain or a linked conv pair as
one step, with the time of the whole chain.  A row here is such a step; the
nodes it ran inside it are listed in its ``operators``.  Nodes that no step
ran on their own (an alias such as a reshape, which needs no work, or the
first chains of a linked conv pair, whose time is the pair's row's) are
listed in ``GraphProfile.untimed``."""
import html
import statistics

from . import _core
from ._display import _desc

# operators the memory plan may turn into aliases of their input (no work)
_ALIASES = ("reshape", "identity")


class GraphProfile:
    """What :meth:`MLGraph.profile` returns: ``str()`` is a table (Jupyter
    shows it as HTML); the fields hold the numbers.

    Attributes
    ----------
    rows : list of dict
        One per step, in execution order: ``step`` (its node's position in
        the plan), ``node`` (node id), ``operator`` (the node's operator),
        ``label``, ``operators`` (every operator the step ran, e.g.
        ``["conv2d", "add", "relu"]``; a linked conv pair's expansion and
        depthwise chains come first), ``output`` (``"float32[1, 8]"``),
        ``median_ms``, ``min_ms``, ``max_ms`` (over the timed runs) and
        ``share`` (of the steps' summed medians, 0..1).
    untimed : list of dict
        Nodes that ran inside another step or needed no work: ``node``,
        ``operator``, ``label``.
    total_ms : float
        The median of the whole execution's time (the steps plus the
        backend's own work between them, such as copies into outputs).
    steps_ms : float
        The median over the runs of the steps' summed times (at most
        ``total_ms``: in every run the steps' sum is at most the whole).
    runs : int
        The timed runs.
    """

    def __init__(self, rows, untimed, totals, step_sums, runs, device):
        self.rows = rows
        self.untimed = untimed
        self.total_ms = statistics.median(totals)
        self.steps_ms = statistics.median(step_sums)
        self.runs = runs
        self.device = device

    def _cells(self):
        head = ["#", "operators", "label", "output", "median ms", "min ms", "share"]
        body = [[str(i + 1), "+".join(r["operators"]), r["label"] or "", r["output"],
                 f"{r['median_ms']:.4f}", f"{r['min_ms']:.4f}", f"{100 * r['share']:.1f}%"]
                for i, r in enumerate(self.rows)]
        return head, body

    def _title(self):
        return (f"GraphProfile ({self.device}): {len(self.rows)} steps, {self.runs} runs; "
                f"whole graph {self.total_ms:.4f} ms (median), steps {self.steps_ms:.4f} ms")

    def __str__(self):
        head, body = self._cells()
        widths = [max(len(c) for c in col) for col in zip(head, *body)]
        right = {0, 4, 5, 6}

        def line(cells):
            return "  ".join(c.rjust(w) if j in right else c.ljust(w)
                             for j, (c, w) in enumerate(zip(cells, widths))).rstrip()
        lines = [self._title(), line(head), line(["-" * w for w in widths])]
        lines += [line(r) for r in body]
        if self.untimed:
            names = ", ".join(u["operator"] + (f" '{u['label']}'" if u["label"] else "")
                              for u in self.untimed)
            lines.append(f"run inside another step or needing no work: {names}")
        return "\n".join(lines)

    def __repr__(self):
        return f"<{self._title()}>"

    def _repr_html_(self):
        head, body = self._cells()
        esc = html.escape
        rows = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in body)
        return (f"<p>{esc(self._title())}</p><table><thead><tr>"
                + "".join(f"<th>{esc(h)}</th>" for h in head)
                + f"</tr></thead><tbody>{rows}</tbody></table>")


def _count(name, value, low):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"profile: argument '{name}': expected an int, got "
                        f"{type(value).__name__}")
    if value < low:
        raise TypeError(f"profile: argument '{name}': must be at least {low}, got {value}")
    return value


def profile(graph, inputs, runs=10, warmup=1):
    runs = _count("runs", runs, 1)
    warmup = _count("warmup", warmup, 0)
    ctx = graph._ctx
    data = ctx._host_inputs(graph, inputs, "profile")
    outs = [alloc(shape, npdt) for _, alloc, shape, npdt in graph._compute_spec[1]]
    args = (ctx._h, graph._h, list(data.values()), outs)
    for _ in range(warmup):
        _core.profile(*args)
    per_step, totals, step_sums, ran = None, [], [], None
    for _ in range(runs):
        ns, r, total = _core.profile(*args)
        if per_step is None:
            per_step, ran = [[] for _ in ns], r
        for i, v in enumerate(ns):
            per_step[i].append(v / 1e6)
        totals.append(total / 1e6)
        step_sums.append(sum(ns) / 1e6)
    view = _core.graph_view(graph._h)
    nodes, ops, order = view["nodes"], view["operands"], view["order"]
    # (the chains a fusing backend would run, where this one does not fuse)
    fusion = view["fusion"] if view["fuses"] else [0] * len(nodes)
    members = {}
    for nid in order:
        if fusion[nid]:
            members.setdefault(fusion[nid], []).append(nid)
    # a step that ran nodes of earlier plan positions inside it (a linked
    # conv pair: its expansion's and depthwise chains) lists them first;
    # the only other nodes no step times are aliases, which need no work
    ran_in = {m for pos, nid in enumerate(order) if ran[pos]
              for m in (members.get(fusion[nid], [nid]) if fusion[nid] else [nid])}
    rows, timed, waiting = [], set(), []
    for pos, nid in enumerate(order):
        if not ran[pos]:
            if nid not in ran_in and nodes[nid]["operator"] not in _ALIASES:
                waiting.append(nid)
            continue
        group = waiting + (members.get(fusion[nid], [nid]) if fusion[nid] else [nid])
        waiting = []
        timed.update(group)
        node = nodes[nid]
        times = per_step[pos]
        rows.append({"step": pos, "node": nid, "operator": node["operator"],
                     "label": next((nodes[m]["label"] for m in group if nodes[m]["label"]),
                                   None),
                     "operators": [nodes[m]["operator"] for m in group],
                     "output": _desc(ops[node["outputs"][0]]),
                     "median_ms": statistics.median(times), "min_ms": min(times),
                     "max_ms": max(times)})
    steps = sum(r["median_ms"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["median_ms"] / steps
    untimed = [{"node": nid, "operator": nodes[nid]["operator"], "label": nodes[nid]["label"]}
               for nid in order if nid not in timed]
    return GraphProfile(rows, untimed, totals, step_sums, runs, ctx.device_type)
