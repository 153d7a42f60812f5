"""ONNX recurrent networks: LSTM and GRU (WebNN's lstm and gru; LSTM step by
step where they differ), RNN (unrolled)."""
from __future__ import annotations

import numpy as np

import webnn
from webnn import NotSupportedError

from .._convert import _reg


_RNN_ACT = {"sigmoid": "sigmoid", "tanh": "tanh", "relu": "relu"}


_RNN_DIR = {"forward": "forward", "reverse": "backward", "bidirectional": "both"}


def _rnn_common(c, node, at, n_gates, default_acts):
    if at.get("clip") is not None:
        raise NotSupportedError("clip (WebNN's recurrent operators do not clip)")
    if at.get("activation_alpha") or at.get("activation_beta"):
        raise NotSupportedError("activations with alpha/beta")
    direction = _RNN_DIR[at.get("direction", "forward")]
    ndir = 2 if direction == "both" else 1
    acts = [a.lower() for a in at.get("activations", default_acts * ndir)]
    k = len(default_acts)
    if ndir == 2 and acts[:k] != acts[k:]:
        raise NotSupportedError("different activations per direction")
    acts = acts[:k]
    if any(a not in _RNN_ACT for a in acts):
        raise NotSupportedError(f"activations {acts} (WebNN has sigmoid, tanh, relu)")
    layout = int(at.get("layout", 0))
    x = c.opnd(node.input[0])
    if layout:
        x = c.b.transpose(x, permutation=[1, 0, 2])
    steps, batch = x.shape[0], x.shape[1]
    if c.has(node, 4):
        lens = c.static(node.input[4], "sequence_lens").reshape(-1)
        if not np.all(lens == steps):
            raise NotSupportedError("sequence_lens shorter than the sequence")
    hid = int(at["hidden_size"])
    opts = {}
    if c.has(node, 3):
        b = c.opnd(node.input[3])
        opts["bias"] = c.b.slice(b, [0, 0], [ndir, n_gates * hid])
        opts["recurrent_bias"] = c.b.slice(b, [0, n_gates * hid], [ndir, n_gates * hid])
    if c.has(node, 5):
        h0 = c.opnd(node.input[5])
        opts["initial_hidden_state"] = c.b.transpose(h0, permutation=[1, 0, 2]) if layout else h0
    return x, steps, batch, hid, direction, acts, layout, opts


def _rnn_outputs(c, node, layout, seq, states):
    outs = []
    if len(node.output) > 0 and node.output[0]:
        outs.append(c.b.transpose(seq, permutation=[2, 0, 1, 3]) if layout else seq)
    else:
        outs.append(None)
    for s in states:
        outs.append(c.b.transpose(s, permutation=[1, 0, 2]) if layout else s)
    return outs


@_reg("LSTM")
def _lstm(c, node, at):
    needs_unrolled = at.get("input_forget", 0) or at.get("clip") is not None
    if c.has(node, 7):
        p = c.static(node.input[7], "P")
        hid_ = int(at["hidden_size"])
        needs_unrolled = needs_unrolled or np.any(p.reshape(p.shape[0], 3, hid_)[:, 1] != 0)
    if needs_unrolled:
        return _lstm_unrolled(c, node, at)
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at, 4, ["sigmoid", "tanh", "tanh"])
    if c.has(node, 6):
        h0 = c.opnd(node.input[6])
        opts["initial_cell_state"] = c.b.transpose(h0, permutation=[1, 0, 2]) if layout else h0
    if c.has(node, 7):
        p = c.static(node.input[7], "P")
        hid_ = hid
        if np.any(p.reshape(p.shape[0], 3, hid_)[:, 1] != 0):
            raise NotSupportedError("an output-gate peephole (ONNX applies it to the new cell "
                                    "state, WebNN's lstm to the previous one)")
        opts["peephole_weight"] = c.opnd(node.input[7])
    want_seq = len(node.output) > 0 and bool(node.output[0])
    res = c.b.lstm(x, c.opnd(node.input[1]), c.opnd(node.input[2]), steps, hid,
                   return_sequence=want_seq, direction=direction, layout="iofg",
                   activations=acts, **opts)
    h, cell = res[0], res[1]
    return _rnn_outputs(c, node, layout, res[2] if want_seq else None, [h, cell])


@_reg("GRU")
def _gru(c, node, at):
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at, 3, ["sigmoid", "tanh"])
    want_seq = len(node.output) > 0 and bool(node.output[0])
    res = c.b.gru(x, c.opnd(node.input[1]), c.opnd(node.input[2]), steps, hid,
                  return_sequence=want_seq, direction=direction, layout="zrn",
                  reset_after=bool(at.get("linear_before_reset", 0)), activations=acts, **opts)
    return _rnn_outputs(c, node, layout, res[1] if want_seq else None, [res[0]])


@_reg("RNN")
def _rnn(c, node, at):
    """The simple RNN (WebNN has none): unrolled, H = f(X W^T + H R^T + Wb + Rb)."""
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(c, node, at, 1, ["tanh"])
    act = getattr(c.b, acts[0])
    ndir = 2 if direction == "both" else 1
    w, r = c.opnd(node.input[1]), c.opnd(node.input[2])
    dt = x.data_type
    h0 = opts.get("initial_hidden_state")
    hs, seqs = [], []
    for d in range(ndir):
        wd = c.b.reshape(c.b.slice(w, [d, 0, 0], [1] + list(w.shape[1:])), list(w.shape[1:]))
        rd = c.b.reshape(c.b.slice(r, [d, 0, 0], [1] + list(r.shape[1:])), list(r.shape[1:]))
        bias = None
        if "bias" in opts:
            bias = c.b.add(c.b.reshape(c.b.slice(opts["bias"], [d, 0], [1, hid]), [hid]),
                           c.b.reshape(c.b.slice(opts["recurrent_bias"], [d, 0], [1, hid]), [hid]))
        h = c.b.reshape(c.b.slice(h0, [d, 0, 0], [1, batch, hid]), [batch, hid]) if h0 is not None \
            else c.const(np.zeros([batch, hid], webnn.DATA_TYPES[dt]))
        seq = [None] * steps
        backward = d == 1 or direction == "backward"
        for step in range(steps):
            t = steps - 1 - step if backward else step
            xt = c.b.reshape(c.b.slice(x, [t, 0, 0], [1, batch, x.shape[2]]), [batch, x.shape[2]])
            s = c.b.add(c.b.gemm(xt, wd, b_transpose=True), c.b.gemm(h, rd, b_transpose=True))
            if bias is not None:
                s = c.b.add(s, bias)
            h = act(s)
            seq[t] = h
        hs.append(c.b.reshape(h, [1, batch, hid]))
        seqs.append(seq)
    y_h = hs[0] if ndir == 1 else c.b.concat(hs, 0)
    seq = None
    if len(node.output) > 0 and node.output[0]:
        per_t = [c.b.concat([c.b.reshape(seqs[d][t], [1, 1, batch, hid]) for d in range(ndir)], 1)
                 if ndir == 2 else c.b.reshape(seqs[0][t], [1, 1, batch, hid])
                 for t in range(steps)]
        seq = per_t[0] if steps == 1 else c.b.concat(per_t, 0)
    return _rnn_outputs(c, node, layout, seq, [y_h])


def _lstm_unrolled(c, node, at):
    """ONNX's LSTM step by step where WebNN's lstm differs: the output gate's
    peephole on the new cell state, clip, input_forget."""
    clip = at.get("clip")
    at2 = {k: v for k, v in at.items() if k != "clip"}
    x, steps, batch, hid, direction, acts, layout, opts = _rnn_common(
        c, node, at2, 4, ["sigmoid", "tanh", "tanh"])
    ndir = 2 if direction == "both" else 1
    dt = x.data_type
    f_act, g_act, h_act = (getattr(c.b, a) for a in acts)
    w, r = c.opnd(node.input[1]), c.opnd(node.input[2])
    pw = c.opnd(node.input[7]) if c.has(node, 7) else None
    c0 = None
    if c.has(node, 6):
        c0 = c.opnd(node.input[6])
        if layout:
            c0 = c.b.transpose(c0, permutation=[1, 0, 2])
    h0 = opts.get("initial_hidden_state")
    zeros = c.const(np.zeros([batch, hid], webnn.DATA_TYPES[dt]))

    def pick(v, d, n):   # [D, n] or [D, B, H] -> direction d
        shape = list(v.shape)
        return c.b.reshape(c.b.slice(v, [d] + [0] * (len(shape) - 1), [1] + shape[1:]), shape[1:])

    def clipped(v):
        return c.b.clamp(v, min_value=-float(clip), max_value=float(clip)) if clip is not None \
            else v
    hs, cs, seqs = [], [], []
    for d in range(ndir):
        wd, rd = pick(w, d, 0), pick(r, d, 0)
        bias = None
        if "bias" in opts:
            bias = c.b.add(pick(opts["bias"], d, 0), pick(opts["recurrent_bias"], d, 0))
        p = pick(pw, d, 0) if pw is not None else None
        h = pick(h0, d, 0) if h0 is not None else zeros
        cell = pick(c0, d, 0) if c0 is not None else zeros
        seq = [None] * steps
        backward = d == 1 or direction == "backward"
        for step in range(steps):
            t = steps - 1 - step if backward else step
            xt = c.b.reshape(c.b.slice(x, [t, 0, 0], [1, batch, x.shape[2]]), [batch, x.shape[2]])
            s = c.b.add(c.b.gemm(xt, wd, b_transpose=True), c.b.gemm(h, rd, b_transpose=True))
            if bias is not None:
                s = c.b.add(s, bias)
            gi, go, gf, gc = (c.b.slice(s, [0, k * hid], [batch, hid]) for k in range(4))
            if p is not None:
                pi, po, pf = (c.b.slice(p, [k * hid], [hid]) for k in range(3))
                gi = c.b.add(gi, c.b.mul(pi, cell))
                gf = c.b.add(gf, c.b.mul(pf, cell))
            i = f_act(clipped(gi))
            f = c.b.sub(c.scalar(1, dt), i) if at.get("input_forget", 0) else f_act(clipped(gf))
            g = g_act(clipped(gc))
            cell = c.b.add(c.b.mul(f, cell), c.b.mul(i, g))
            if p is not None:
                go = c.b.add(go, c.b.mul(po, cell))
            o = f_act(clipped(go))
            h = c.b.mul(o, h_act(cell))
            seq[t] = h
        hs.append(c.b.reshape(h, [1, batch, hid]))
        cs.append(c.b.reshape(cell, [1, batch, hid]))
        seqs.append(seq)
    cat = lambda parts: parts[0] if len(parts) == 1 else c.b.concat(parts, 0)  # noqa: E731
    seq = None
    if len(node.output) > 0 and node.output[0]:
        per_t = [cat([c.b.reshape(seqs[d][t], [1, batch, hid]) for d in range(ndir)])
                 for t in range(steps)]
        seq = cat([c.b.reshape(v, [1, ndir, batch, hid]) for v in per_t])
    return _rnn_outputs(c, node, layout, seq, [cat(hs), cat(cs)])
