"""Validation steps of the data movement operators: concat, expand,
transpose, slice, split, tile, reverse, triangular, pad -- one case per spec
step (#api-mlgraphbuilder-<op>) plus the edge cases the spec accepts (rank 0
where allowed, size-1 dimensions, rank 8)."""
import pytest

from .conftest import OK, V, params, run_case, x

MAXD = 2 ** 31 - 1

TABLE = [
    # ---- concat ----------------------------------------------------------------
    V("concat", "no-inputs", lambda b, L: b.concat([], 0, label=L), "inputs"),
    V("concat", "axis-equals-rank", lambda b, L: b.concat([x(b, [2, 3]), x(b, [2, 3])], 2, label=L), "axis"),
    V("concat", "axis-huge", lambda b, L: b.concat([x(b, [2])], 2 ** 32 - 1, label=L), "axis"),
    V("concat", "dtype-differs", lambda b, L: b.concat([x(b, [2]), x(b, [2], "int32")], 0, label=L), "inputs"),
    V("concat", "rank-differs", lambda b, L: b.concat([x(b, [2, 1]), x(b, [2])], 0, label=L), "inputs"),
    V("concat", "shape-differs-off-axis", lambda b, L: b.concat([x(b, [2, 3]), x(b, [2, 4])], 0, label=L), "inputs"),
    V("concat", "rank0", lambda b, L: b.concat([x(b, []), x(b, [])], 0, label=L), "inputs"),
    V("concat", "size-not-valid-dimension",
      lambda b, L: b.concat([x(b, [2 ** 30], "uint8")] * 2, 0, label=L), "inputs"),
    OK("concat", "one-input", lambda b, L: b.concat([x(b, [1])], 0, label=L), (1,)),
    OK("concat", "axis-sum", lambda b, L: b.concat([x(b, [2, 1], "int8"), x(b, [2, 3], "int8")], 1, label=L), (2, 4), "int8"),
    OK("concat", "same-operand-twice", lambda b, L: (lambda v: b.concat([v, v, v], 0, label=L))(x(b, [1, 2])), (3, 2)),
    OK("concat", "rank8-last-axis", lambda b, L: b.concat([x(b, [1] * 8), x(b, [1] * 8)], 7, label=L), (1,) * 7 + (2,)),
    # ---- expand ----------------------------------------------------------------
    V("expand", "not-broadcastable", lambda b, L: b.expand(x(b, [2, 3]), [3, 3], label=L), "newShape"),
    V("expand", "fewer-dims", lambda b, L: b.expand(x(b, [2, 3]), [3], label=L), "newShape"),
    V("expand", "item-0", lambda b, L: b.expand(x(b, [1]), [0], label=L), "newShape"),
    V("expand", "item-too-large", lambda b, L: b.expand(x(b, [1]), [2 ** 31], label=L), "newShape"),
    V("expand", "output-rank9", lambda b, L: b.expand(x(b, [1]), [1] * 9, label=L), "newShape"),
    V("expand", "output-too-large", lambda b, L: b.expand(x(b, [1]), [65536, 65536], label=L), "output"),
    OK("expand", "scalar-to-scalar", lambda b, L: b.expand(x(b, []), [], label=L), ()),
    OK("expand", "scalar-to-rank8", lambda b, L: b.expand(x(b, [], "uint32"), [1, 2, 1, 2, 1, 2, 1, 2], label=L),
       (1, 2) * 4, "uint32"),
    OK("expand", "ones-grow", lambda b, L: b.expand(x(b, [2, 1]), [3, 2, 4], label=L), (3, 2, 4)),
    OK("expand", "same", lambda b, L: b.expand(x(b, [2, 3]), [2, 3], label=L), (2, 3)),
    # ---- transpose -------------------------------------------------------------
    V("transpose", "permutation-short", lambda b, L: b.transpose(x(b, [2, 3]), permutation=[0], label=L), "permutation"),
    V("transpose", "permutation-long", lambda b, L: b.transpose(x(b, [2, 3]), permutation=[0, 1, 2], label=L), "permutation"),
    V("transpose", "permutation-out-of-range", lambda b, L: b.transpose(x(b, [2, 3]), permutation=[0, 2], label=L), "permutation"),
    V("transpose", "permutation-duplicate", lambda b, L: b.transpose(x(b, [2, 3]), permutation=[1, 1], label=L), "permutation"),
    V("transpose", "permutation-on-scalar", lambda b, L: b.transpose(x(b, []), permutation=[0], label=L), "permutation"),
    OK("transpose", "default-reverses", lambda b, L: b.transpose(x(b, [2, 3, 4]), label=L), (4, 3, 2)),
    OK("transpose", "scalar", lambda b, L: b.transpose(x(b, [], "int64"), label=L), (), "int64"),
    OK("transpose", "scalar-empty-permutation", lambda b, L: b.transpose(x(b, []), permutation=[], label=L), ()),
    OK("transpose", "rank8", lambda b, L: b.transpose(x(b, [1, 2, 3, 4, 1, 1, 1, 5]), permutation=[7, 0, 1, 2, 3, 4, 5, 6], label=L),
       (5, 1, 2, 3, 4, 1, 1, 1)),
    # ---- slice -----------------------------------------------------------------
    V("slice", "sizes-item-0", lambda b, L: b.slice(x(b, [4]), [0], [0], label=L), "sizes"),
    V("slice", "starts-length", lambda b, L: b.slice(x(b, [4, 4]), [0], [1, 1], label=L), "starts"),
    V("slice", "sizes-length", lambda b, L: b.slice(x(b, [4, 4]), [0, 0], [1], label=L), "sizes"),
    V("slice", "strides-length", lambda b, L: b.slice(x(b, [4, 4]), [0, 0], [1, 1], strides=[1], label=L), "strides"),
    V("slice", "stride-0", lambda b, L: b.slice(x(b, [4]), [0], [2], strides=[0], label=L), "strides"),
    V("slice", "start-beyond", lambda b, L: b.slice(x(b, [4]), [5], [1], label=L), ("starts", "sizes")),
    V("slice", "start-plus-size-beyond", lambda b, L: b.slice(x(b, [4]), [2], [3], label=L), "sizes"),
    V("slice", "start-plus-size-wraps", lambda b, L: b.slice(x(b, [4]), [2 ** 32 - 1], [2], label=L), ("starts", "sizes")),
    OK("slice", "scalar", lambda b, L: b.slice(x(b, []), [], [], label=L), ()),
    OK("slice", "whole", lambda b, L: b.slice(x(b, [4, 3]), [0, 0], [4, 3], label=L), (4, 3)),
    OK("slice", "last-element", lambda b, L: b.slice(x(b, [4]), [3], [1], label=L), (1,)),
    OK("slice", "strided-rounds-up", lambda b, L: b.slice(x(b, [7], "int8"), [0], [7], strides=[3], label=L), (3,), "int8"),
    OK("slice", "stride-larger-than-size", lambda b, L: b.slice(x(b, [7]), [1], [5], strides=[100], label=L), (1,)),
    # ---- split -----------------------------------------------------------------
    V("split", "axis-equals-rank", lambda b, L: b.split(x(b, [4]), 2, axis=1, label=L), "axis"),
    V("split", "count-0", lambda b, L: b.split(x(b, [4]), 0, label=L), "splits"),
    V("split", "count-does-not-divide", lambda b, L: b.split(x(b, [4]), 3, label=L), "splits"),
    V("split", "count-exceeds-dimension", lambda b, L: b.split(x(b, [4]), 8, label=L), "splits"),
    V("split", "empty-list", lambda b, L: b.split(x(b, [4]), [], label=L), "splits"),
    V("split", "item-0", lambda b, L: b.split(x(b, [4]), [4, 0], label=L), "splits"),
    V("split", "sum-differs", lambda b, L: b.split(x(b, [4]), [1, 2], label=L), "splits"),
    V("split", "sum-wraps", lambda b, L: b.split(x(b, [4]), [2 ** 32 - 1, 5], label=L), "splits"),
    V("split", "rank0", lambda b, L: b.split(x(b, []), 1, label=L), "input"),
    V("split", "count-above-valid-tensor-count", lambda b, L: b.split(x(b, [8193]), 8193, label=L), "splits"),
    OK("split", "one", lambda b, L: b.split(x(b, [1]), 1, label=L), ((1,),)),
    OK("split", "even", lambda b, L: b.split(x(b, [2, 6]), 3, axis=1, label=L), ((2, 2),) * 3),
    OK("split", "list", lambda b, L: b.split(x(b, [5, 1], "uint64"), [1, 4], label=L), ((1, 1), (4, 1)), "uint64"),
    OK("split", "list-of-one", lambda b, L: b.split(x(b, [3]), [3], label=L), ((3,),)),
    # ---- tile ------------------------------------------------------------------
    V("tile", "repetitions-length", lambda b, L: b.tile(x(b, [2, 3]), [2], label=L), "repetitions"),
    V("tile", "repetition-0", lambda b, L: b.tile(x(b, [2]), [0], label=L), "repetitions"),
    V("tile", "dimension-too-large", lambda b, L: b.tile(x(b, [2]), [2 ** 30], label=L), ("repetitions", "output")),
    V("tile", "element-count-too-large", lambda b, L: b.tile(x(b, [2, 2]), [65536, 65536], label=L), ("repetitions", "output")),
    OK("tile", "scalar", lambda b, L: b.tile(x(b, []), [], label=L), ()),
    OK("tile", "ones", lambda b, L: b.tile(x(b, [1, 1], "int32"), [1, 1], label=L), (1, 1), "int32"),
    OK("tile", "grow", lambda b, L: b.tile(x(b, [2, 3]), [3, 1], label=L), (6, 3)),
    # ---- reverse ---------------------------------------------------------------
    V("reverse", "axis-out-of-range", lambda b, L: b.reverse(x(b, [2, 3]), axes=[2], label=L), "axes"),
    V("reverse", "axis-duplicate", lambda b, L: b.reverse(x(b, [2, 3]), axes=[1, 1], label=L), "axes"),
    V("reverse", "axes-on-scalar", lambda b, L: b.reverse(x(b, []), axes=[0], label=L), "axes"),
    OK("reverse", "default-all", lambda b, L: b.reverse(x(b, [2, 3]), label=L), (2, 3)),
    OK("reverse", "empty-axes", lambda b, L: b.reverse(x(b, [2, 3]), axes=[], label=L), (2, 3)),
    OK("reverse", "scalar", lambda b, L: b.reverse(x(b, [], "uint8"), label=L), (), "uint8"),
    OK("reverse", "rank8", lambda b, L: b.reverse(x(b, [1] * 8), axes=[7, 0], label=L), (1,) * 8),
    # ---- triangular ------------------------------------------------------------
    V("triangular", "rank1", lambda b, L: b.triangular(x(b, [3]), label=L), "input"),
    V("triangular", "rank0", lambda b, L: b.triangular(x(b, []), label=L), "input"),
    V("triangular", "diagonal-out-of-long", lambda b, L: b.triangular(x(b, [2, 2]), diagonal=2 ** 31, label=L), "diagonal"),
    OK("triangular", "1x1", lambda b, L: b.triangular(x(b, [1, 1]), label=L), (1, 1)),
    OK("triangular", "huge-diagonal", lambda b, L: b.triangular(x(b, [2, 3], "int8"), upper=False, diagonal=-2 ** 31, label=L),
       (2, 3), "int8"),
    OK("triangular", "rank8", lambda b, L: b.triangular(x(b, [1] * 6 + [2, 3]), diagonal=2 ** 31 - 1, label=L), (1,) * 6 + (2, 3)),
    # ---- pad -------------------------------------------------------------------
    V("pad", "beginning-length", lambda b, L: b.pad(x(b, [2, 3]), [1], [1, 1], label=L), "beginningPadding"),
    V("pad", "ending-length", lambda b, L: b.pad(x(b, [2, 3]), [1, 1], [1], label=L), "endingPadding"),
    V("pad", "reflection-beginning-too-large", lambda b, L: b.pad(x(b, [3]), [3], [0], mode="reflection", label=L),
      "beginningPadding"),
    V("pad", "reflection-ending-too-large", lambda b, L: b.pad(x(b, [3]), [0], [3], mode="reflection", label=L),
      "endingPadding"),
    V("pad", "unknown-mode", lambda b, L: b.pad(x(b, [3]), [0], [0], mode="symmetric", label=L), "mode"),
    V("pad", "dimension-too-large", lambda b, L: b.pad(x(b, [3]), [2 ** 31 - 3], [1], label=L),
      ("endingPadding", "beginningPadding", "output")),
    V("pad", "element-count-too-large", lambda b, L: b.pad(x(b, [1, 1]), [65535, 65535], [1, 1], label=L),
      ("endingPadding", "beginningPadding", "output")),
    OK("pad", "scalar", lambda b, L: b.pad(x(b, []), [], [], label=L), ()),
    OK("pad", "zero-padding", lambda b, L: b.pad(x(b, [2], "int64"), [0], [0], value=2 ** 63 - 1, label=L), (2,), "int64"),
    OK("pad", "reflection-largest", lambda b, L: b.pad(x(b, [3]), [2], [2], mode="reflection", label=L), (7,)),
    OK("pad", "edge-size1", lambda b, L: b.pad(x(b, [1]), [5], [5], mode="edge", label=L), (11,)),
    OK("pad", "constant-nan-value", lambda b, L: b.pad(x(b, [1, 2]), [1, 0], [0, 2], value=float("nan"), label=L), (2, 4)),
    OK("pad", "largest-dimension", lambda b, L: b.pad(x(b, [1], "uint8"), [MAXD - 2], [1], label=L), (MAXD,), "uint8"),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_movement_validation(ctx, case):
    run_case(ctx, case)
