"""Validation steps of the reductions (#api-mlgraphbuilder-reduce), argMin /
argMax, cumulativeSum, and the recurrent networks gru, gruCell, lstm,
lstmCell (#api-mlgraphbuilder-gru ...).  Operators not in this build are
skipped (they come from other branches)."""
import pytest

from .conftest import OK, V, params, run_case, x

REDUCE = ("reduceL1", "reduceL2", "reduceLogSum", "reduceLogSumExp", "reduceMax", "reduceMean",
          "reduceMin", "reduceProduct", "reduceSum", "reduceSumSquare")

TABLE = []
for _op in REDUCE:
    def _r(b, L, inp=(2, 3, 4), op=_op, **o):
        return getattr(b, op)(x(b, inp), label=L, **o)
    TABLE += [
        V(_op, "axis-out-of-range", lambda b, L, r=_r: r(b, L, axes=[3]), "axes"),
        V(_op, "axis-duplicate", lambda b, L, r=_r: r(b, L, axes=[1, 1]), "axes"),
        V(_op, "axes-on-scalar", lambda b, L, r=_r: r(b, L, inp=(), axes=[0]), "axes"),
        OK(_op, "all-axes", lambda b, L, r=_r: r(b, L), ()),
        OK(_op, "all-axes-kept", lambda b, L, r=_r: r(b, L, keepDimensions=True), (1, 1, 1)),
        OK(_op, "one-axis", lambda b, L, r=_r: r(b, L, axes=[1]), (2, 4)),
        OK(_op, "one-axis-kept", lambda b, L, r=_r: r(b, L, axes=[1], keepDimensions=True), (2, 1, 4)),
        OK(_op, "axes-in-any-order", lambda b, L, r=_r: r(b, L, axes=[2, 0]), (3,)),
        OK(_op, "no-axes", lambda b, L, r=_r: r(b, L, axes=[]), (2, 3, 4)),
        OK(_op, "scalar", lambda b, L, r=_r: r(b, L, inp=()), ()),
        OK(_op, "size1", lambda b, L, r=_r: r(b, L, inp=(1,), keepDimensions=True), (1,)),
    ]

for _op in ("argMin", "argMax"):
    def _a(b, L, axis=1, inp=(2, 3, 4), op=_op, **o):
        return getattr(b, op)(x(b, inp), axis, label=L, **o)
    TABLE += [
        V(_op, "axis-equals-rank", lambda b, L, a=_a: a(b, L, axis=3), "axis"),
        V(_op, "outputDataType-float32", lambda b, L, a=_a: a(b, L, outputDataType="float32"), "outputDataType"),
        V(_op, "outputDataType-unknown", lambda b, L, a=_a: a(b, L, outputDataType="int128"), "outputDataType"),
        OK(_op, "default", lambda b, L, a=_a: a(b, L), (2, 4), "int32"),
        OK(_op, "kept", lambda b, L, a=_a: a(b, L, keepDimensions=True), (2, 1, 4), "int32"),
        OK(_op, "int64", lambda b, L, a=_a: a(b, L, axis=0, outputDataType="int64"), (3, 4), "int64"),
        OK(_op, "size1", lambda b, L, a=_a: a(b, L, axis=0, inp=(1,)), (), "int32"),
    ]

TABLE += [
    V("cumulativeSum", "axis-equals-rank", lambda b, L: b.cumulativeSum(x(b, [2, 3]), 2, label=L), "axis"),
    OK("cumulativeSum", "axis1", lambda b, L: b.cumulativeSum(x(b, [2, 3]), 1, exclusive=True, reversed=True, label=L), (2, 3)),
    OK("cumulativeSum", "size1", lambda b, L: b.cumulativeSum(x(b, [1]), 0, label=L), (1,)),
]

# ---- recurrent: hidden size 4, input size 3, batch 2 --------------------------------
H, I, N = 4, 3, 2


def gru_cell(b, L, w=(3 * H, I), rw=(3 * H, H), hs=(N, H), h=H, **o):
    return b.gruCell(x(b, [N, I]), x(b, w), x(b, rw), x(b, hs), h, label=L, **o)


def lstm_cell(b, L, w=(4 * H, I), rw=(4 * H, H), hs=(N, H), cs=(N, H), h=H, **o):
    return b.lstmCell(x(b, [N, I]), x(b, w), x(b, rw), x(b, hs), x(b, cs), h, label=L, **o)


def gru(b, L, steps=1, inp=(1, N, I), w=(1, 3 * H, I), rw=(1, 3 * H, H), h=H, **o):
    return b.gru(x(b, inp), x(b, w), x(b, rw), steps, h, label=L, **o)


def lstm(b, L, steps=1, inp=(1, N, I), w=(1, 4 * H, I), rw=(1, 4 * H, H), h=H, **o):
    return b.lstm(x(b, inp), x(b, w), x(b, rw), steps, h, label=L, **o)


TABLE += [
    V("gruCell", "weight-shape", lambda b, L: gru_cell(b, L, w=(3 * H, I + 1)), "weight"),
    V("gruCell", "recurrentWeight-shape", lambda b, L: gru_cell(b, L, rw=(3 * H, H + 1)), "recurrentWeight"),
    V("gruCell", "hiddenState-shape", lambda b, L: gru_cell(b, L, hs=(N, H + 1)), "hiddenState"),
    V("gruCell", "bias-shape", lambda b, L: gru_cell(b, L, bias=x(b, [3 * H - 1])), "bias"),
    V("gruCell", "recurrentBias-dtype", lambda b, L: gru_cell(b, L, recurrentBias=x(b, [3 * H], "float16")),
      "recurrentBias"),
    V("gruCell", "activations-length-3", lambda b, L: gru_cell(b, L, activations=["sigmoid"] * 3), "activations"),
    V("gruCell", "unknown-activation", lambda b, L: gru_cell(b, L, activations=["sigmoid", "gelu"]), "activations"),
    V("gruCell", "unknown-layout", lambda b, L: gru_cell(b, L, layout="nrz"), "layout"),
    OK("gruCell", "default", lambda b, L: gru_cell(b, L), (N, H)),
    OK("gruCell", "every-option", lambda b, L: gru_cell(b, L, bias=x(b, [3 * H]), recurrentBias=x(b, [3 * H]),
                                                        resetAfter=False, layout="rzn",
                                                        activations=["relu", "tanh"]), (N, H)),
    V("lstmCell", "weight-shape", lambda b, L: lstm_cell(b, L, w=(3 * H, I)), "weight"),
    V("lstmCell", "cellState-shape", lambda b, L: lstm_cell(b, L, cs=(N + 1, H)), "cellState"),
    V("lstmCell", "peepholeWeight-shape", lambda b, L: lstm_cell(b, L, peepholeWeight=x(b, [4 * H])), "peepholeWeight"),
    V("lstmCell", "activations-length-2", lambda b, L: lstm_cell(b, L, activations=["sigmoid", "tanh"]), "activations"),
    OK("lstmCell", "default", lambda b, L: lstm_cell(b, L), ((N, H), (N, H))),
    OK("lstmCell", "peephole", lambda b, L: lstm_cell(b, L, peepholeWeight=x(b, [3 * H]), layout="ifgo"), ((N, H), (N, H))),
    V("gru", "steps-differ", lambda b, L: gru(b, L, steps=2), ("steps", "input")),
    V("gru", "directions-differ", lambda b, L: gru(b, L, direction="both"), ("weight", "direction")),
    V("gru", "initialHiddenState-shape", lambda b, L: gru(b, L, initialHiddenState=x(b, [1, N, H + 1])),
      "initialHiddenState"),
    V("gru", "activations-length-1", lambda b, L: gru(b, L, activations=["tanh"]), "activations"),
    V("gru", "unknown-direction", lambda b, L: gru(b, L, direction="sideways"), "direction"),
    OK("gru", "default", lambda b, L: gru(b, L), ((1, N, H),)),
    OK("gru", "sequence-both", lambda b, L: gru(b, L, steps=2, inp=(2, N, I), w=(2, 3 * H, I), rw=(2, 3 * H, H),
                                                 direction="both", returnSequence=True), ((2, N, H), (2, 2, N, H))),
    V("lstm", "steps-differ", lambda b, L: lstm(b, L, steps=3), ("steps", "input")),
    V("lstm", "initialCellState-shape", lambda b, L: lstm(b, L, initialCellState=x(b, [1, N + 1, H])), "initialCellState"),
    V("lstm", "activations-length-2", lambda b, L: lstm(b, L, activations=["tanh", "tanh"]), "activations"),
    OK("lstm", "default", lambda b, L: lstm(b, L), ((1, N, H), (1, N, H))),
    OK("lstm", "sequence", lambda b, L: lstm(b, L, returnSequence=True), ((1, N, H), (1, N, H), (1, 1, N, H))),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_reduce_recurrent_validation(ctx, case):
    run_case(ctx, case)
