"""ONNX control flow: If (a branch chosen at import) and Scan / Loop with a
length known at import, unrolled into the graph."""
from __future__ import annotations

import numpy as np
import onnx

from webnn import NotSupportedError

from .. import _guard
from .._convert import _NeedStatic, _norm_axis, _reg, _rename_graph


@_reg("If")
def _if(c, node, at):
    """An If whose condition is known at import: the chosen branch, inlined."""
    cond = node.input[0]
    if not c.is_static(cond):
        try:
            c.static(cond, "the condition")
        except _NeedStatic:
            raise
        except NotSupportedError:
            pass
        raise NotSupportedError("control flow is not expressible in WebNN (the condition is "
                                "computed by the graph)")
    branch = at["then_branch"] if bool(np.asarray(c.static(cond)).reshape(-1)[0]) \
        else at["else_branch"]
    for t in branch.initializer:
        c.vals[t.name] = _guard.to_array(t, f"branch initializer {t.name!r}")
    for k, inner in enumerate(branch.node):
        c.convert_node(inner, f"{node.name or 'If'}.{k}")
    outs = []
    for o in branch.output:
        if o.name not in c.vals:
            raise NotSupportedError(f"branch output {o.name!r} is not produced")
        outs.append(c.vals[o.name])
    for o, name in zip(branch.output, node.output):
        if o.name in c.bools and name:
            c.bools.add(name)
    return outs


_MAX_UNROLL = 4096


def _reserve_body(c, body, times, what):
    """Refuse an unrolling over the import budget before starting it."""
    cap = c.budget.max_nodes
    known = {}
    for n in body.node:
        for i in n.input:
            v = c.vals.get(i)
            if isinstance(v, np.ndarray) and v.dtype.kind in "iu" and v.size == 1:
                known[i] = int(v.reshape(-1)[0])
    per = _guard.expanded_nodes(c.proto, cap, nodes=body.node, known=known)[0]
    c.budget.check_nodes(per * times, c.where, f"{what} ({times} x {per} nodes)")


def _inline_body(c, body, formal_values, prefix):
    """Convert a subgraph's nodes with its inputs bound to `formal_values`
    ({formal name: value}); returns the values of its outputs."""
    local = {i.name for i in body.input} | {t.name for t in body.initializer}
    for n in body.node:
        local.update(o for o in n.output if o)

    def name_of(x):
        return prefix + x if x in local else x
    for formal, v in formal_values.items():
        c.vals[prefix + formal] = v
    for t in body.initializer:
        c.vals[prefix + t.name] = _guard.to_array(t, f"subgraph initializer {t.name!r}")
    for k, inner in enumerate(body.node):
        n = onnx.NodeProto()
        n.CopyFrom(inner)
        del n.input[:]
        n.input.extend(name_of(i) if i else "" for i in inner.input)
        del n.output[:]
        n.output.extend(name_of(o) if o else "" for o in inner.output)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _rename_graph(a.g, name_of)
        c.convert_node(n, f"{prefix}{k}")
    outs = []
    for o in body.output:
        nm = name_of(o.name)
        if nm not in c.vals:
            raise NotSupportedError(f"body output {o.name!r} is not produced")
        outs.append((c.vals[nm], nm in c.bools))
    return outs


def _take(c, v, axis, t):
    """Element t along `axis`, the axis removed."""
    if isinstance(v, np.ndarray):
        return np.take(v, t, axis=axis)
    op = c.opnd_of(v)
    shape = list(op.shape)
    starts = [0] * len(shape)
    starts[axis] = t
    sizes = list(shape)
    sizes[axis] = 1
    s = c.b.slice(op, starts, sizes)
    return c.b.reshape(s, shape[:axis] + shape[axis + 1:])


def _stack(c, values, axis):
    if all(isinstance(v, np.ndarray) for v in values):
        return np.stack(values, axis=axis)
    ops = []
    for v in values:
        op = c.opnd_of(v)
        shape = list(op.shape)
        ops.append(c.b.reshape(op, shape[:axis] + [1] + shape[axis:]))
    return ops[0] if len(ops) == 1 else c.b.concat(ops, axis)


@_reg("Scan")
def _scan(c, node, at):
    if c.opset < 9:
        raise NotSupportedError("Scan before opset 9 (with sequence_lens)")
    body = at["body"]
    m = int(at["num_scan_inputs"])
    ins = list(node.input)
    n_state = len(ins) - m
    k_out = len(body.output) - n_state
    in_axes = list(at.get("scan_input_axes", [0] * m))
    in_dirs = list(at.get("scan_input_directions", [0] * m))
    out_axes = list(at.get("scan_output_axes", [0] * k_out))
    out_dirs = list(at.get("scan_output_directions", [0] * k_out))
    scans = [c.vals[n] for n in ins[n_state:]]
    ranks = [len(v.shape) for v in scans]
    in_axes = [_norm_axis(a, r) for a, r in zip(in_axes, ranks)]
    length = int(scans[0].shape[in_axes[0]])
    if length > _MAX_UNROLL:
        raise NotSupportedError(f"a scan of {length} steps (unrolled up to {_MAX_UNROLL})")
    _reserve_body(c, body, length, "unrolling the scan")
    state = [c.vals[n] for n in ins[:n_state]]
    per_step = [[] for _ in range(k_out)]
    for t in range(length):
        formal = {}
        for j, vi in enumerate(body.input[:n_state]):
            formal[vi.name] = state[j]
        for j, vi in enumerate(body.input[n_state:]):
            tt = length - 1 - t if in_dirs[j] else t
            formal[vi.name] = _take(c, scans[j], in_axes[j], tt)
        outs = _inline_body(c, body, formal, f"__{node.name or 'scan'}_{id(node)}_{t}_")
        state = [v for v, _ in outs[:n_state]]
        for j, (v, _) in enumerate(outs[n_state:]):
            per_step[j].append(v)
    results = list(state)
    for j in range(k_out):
        seq = per_step[j][::-1] if out_dirs[j] else per_step[j]
        rank = len(seq[0].shape) + 1
        results.append(_stack(c, seq, _norm_axis(out_axes[j], rank)))
    return results


@_reg("Loop")
def _loop(c, node, at):
    body = at["body"]
    ins = list(node.input)
    if not c.has(node, 0):
        raise NotSupportedError("a loop without a trip count (its length depends on the data)")
    trips = int(np.asarray(c.static(node.input[0], "the trip count")).reshape(-1)[0])
    cond = True
    if c.has(node, 1):
        cond = bool(np.asarray(c.static(node.input[1], "the condition")).reshape(-1)[0])
    if trips > _MAX_UNROLL:
        raise NotSupportedError(f"a loop of {trips} iterations (unrolled up to {_MAX_UNROLL})")
    _reserve_body(c, body, max(trips, 0), "unrolling the loop")
    carried = [c.vals[n] for n in ins[2:]]
    n_carried = len(carried)
    k_out = len(body.output) - 1 - n_carried
    per_step = [[] for _ in range(k_out)]
    for i in range(trips):
        if not cond:
            break
        formal = {body.input[0].name: np.array(i, np.int64),
                  body.input[1].name: np.array(cond)}
        for j, vi in enumerate(body.input[2:]):
            formal[vi.name] = carried[j]
        outs = _inline_body(c, body, formal, f"__{node.name or 'loop'}_{id(node)}_{i}_")
        cv = outs[0][0]
        if not isinstance(cv, np.ndarray):
            raise NotSupportedError("a loop condition computed by the graph")
        cond = bool(np.asarray(cv).reshape(-1)[0])
        carried = [v for v, _ in outs[1:1 + n_carried]]
        for j, (v, _) in enumerate(outs[1 + n_carried:]):
            per_step[j].append(v)
    results = list(carried)
    for j in range(k_out):
        if not per_step[j]:
            raise NotSupportedError("a scan output of a loop that ran no iteration")
        results.append(_stack(c, per_step[j], 0))
    return results
