"""Validation steps of reshape (#api-mlgraphbuilder-reshape-method), where
(#api-mlgraphbuilder-where), matmul (#api-mlgraphbuilder-matmul) and gemm
(#api-mlgraphbuilder-gemm), one case per spec step, plus the edge cases the
spec accepts."""
import pytest

from .conftest import OK, V, params, run_case, x

TABLE = [
    # ---- reshape ---------------------------------------------------------------
    V("reshape", "newShape-rank9", lambda b, L: b.reshape(x(b, [1]), [1] * 9, label=L), "newShape"),
    V("reshape", "newShape-item-0", lambda b, L: b.reshape(x(b, [2]), [2, 0], label=L), "newShape"),
    V("reshape", "newShape-item-too-large", lambda b, L: b.reshape(x(b, [2]), [2 ** 31], label=L), "newShape"),
    V("reshape", "count-differs", lambda b, L: b.reshape(x(b, [2, 3]), [5], label=L), "newShape"),
    V("reshape", "count-differs-scalar", lambda b, L: b.reshape(x(b, [2]), [], label=L), "newShape"),
    V("reshape", "count-overflows", lambda b, L: b.reshape(x(b, [2]), [65536, 65536, 2], label=L), "newShape"),
    V("reshape", "bare-integer", lambda b, L: b.reshape(x(b, [4]), 4, label=L), "newShape"),
    OK("reshape", "to-scalar", lambda b, L: b.reshape(x(b, [1, 1]), [], label=L), ()),
    OK("reshape", "from-scalar", lambda b, L: b.reshape(x(b, [], "int64"), [1, 1, 1], label=L), (1, 1, 1), "int64"),
    OK("reshape", "rank8", lambda b, L: b.reshape(x(b, [6]), [1, 1, 1, 2, 1, 3, 1, 1], label=L), (1, 1, 1, 2, 1, 3, 1, 1)),
    OK("reshape", "same", lambda b, L: b.reshape(x(b, [2, 3], "uint8"), [2, 3], label=L), (2, 3), "uint8"),
    # ---- where -----------------------------------------------------------------
    V("where", "condition-not-uint8", lambda b, L: b.where(x(b, [2], "int8"), x(b, [2]), x(b, [2]), label=L), "condition"),
    V("where", "values-dtype-mismatch", lambda b, L: b.where(x(b, [2], "uint8"), x(b, [2]), x(b, [2], "int32"), label=L), "falseValue"),
    V("where", "values-do-not-broadcast", lambda b, L: b.where(x(b, [2], "uint8"), x(b, [2]), x(b, [3]), label=L), "falseValue"),
    V("where", "condition-does-not-broadcast", lambda b, L: b.where(x(b, [4], "uint8"), x(b, [2, 1]), x(b, [3]), label=L), "condition"),
    OK("where", "scalars", lambda b, L: b.where(x(b, [], "uint8"), x(b, [], "int64"), x(b, [], "int64"), label=L), (), "int64"),
    OK("where", "three-way-broadcast", lambda b, L: b.where(x(b, [4, 1, 1], "uint8"), x(b, [2, 1]), x(b, [3]), label=L), (4, 2, 3)),
    OK("where", "condition-larger", lambda b, L: b.where(x(b, [2, 3], "uint8"), x(b, []), x(b, [1]), label=L), (2, 3)),
    # ---- matmul ----------------------------------------------------------------
    V("matmul", "a-rank1", lambda b, L: b.matmul(x(b, [3]), x(b, [3, 2]), label=L), "a"),
    V("matmul", "b-rank1", lambda b, L: b.matmul(x(b, [2, 3]), x(b, [3]), label=L), "b"),
    V("matmul", "a-int32", lambda b, L: b.matmul(x(b, [2, 3], "int32"), x(b, [3, 2], "int32"), label=L), "a"),
    V("matmul", "dtype-mismatch", lambda b, L: b.matmul(x(b, [2, 3]), x(b, [3, 2], "float16"), label=L), "b"),
    V("matmul", "inner-mismatch", lambda b, L: b.matmul(x(b, [2, 3]), x(b, [4, 2]), label=L), "b"),
    V("matmul", "batch-no-broadcast", lambda b, L: b.matmul(x(b, [2, 2, 3]), x(b, [3, 3, 2]), label=L), "b"),
    OK("matmul", "2d", lambda b, L: b.matmul(x(b, [2, 3]), x(b, [3, 4]), label=L), (2, 4)),
    OK("matmul", "ones", lambda b, L: b.matmul(x(b, [1, 1], "float16"), x(b, [1, 1], "float16"), label=L), (1, 1), "float16"),
    OK("matmul", "batch-broadcast", lambda b, L: b.matmul(x(b, [2, 1, 3, 4]), x(b, [5, 4, 2]), label=L), (2, 5, 3, 2)),
    OK("matmul", "batch-rank-differs", lambda b, L: b.matmul(x(b, [3, 4]), x(b, [1, 1, 1, 1, 1, 2, 4, 2]), label=L),
       (1, 1, 1, 1, 1, 2, 3, 2)),
    # ---- gemm ------------------------------------------------------------------
    V("gemm", "a-rank3", lambda b, L: b.gemm(x(b, [1, 2, 3]), x(b, [3, 2]), label=L), "a"),
    V("gemm", "b-rank1", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3]), label=L), "b"),
    V("gemm", "a-int64", lambda b, L: b.gemm(x(b, [2, 3], "int64"), x(b, [3, 2], "int64"), label=L), "a"),
    V("gemm", "dtype-mismatch", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 2], "float16"), label=L), "b"),
    V("gemm", "inner-mismatch", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [2, 3]), label=L), "b"),
    V("gemm", "inner-mismatch-aTranspose", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 2]), a_transpose=True, label=L), "b"),
    V("gemm", "inner-mismatch-bTranspose", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 2]), b_transpose=True, label=L), "b"),
    V("gemm", "c-not-broadcastable", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), c=x(b, [3]), label=L), "c"),
    V("gemm", "c-bidirectional-only", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 1]), c=x(b, [2, 4]), label=L), "c"),
    V("gemm", "c-rank3", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), c=x(b, [1, 2, 4]), label=L), "c"),
    V("gemm", "c-dtype", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), c=x(b, [4], "float16"), label=L), "c"),
    V("gemm", "c-int32", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), c=x(b, [4], "int32"), label=L), "c"),
    V("gemm", "alpha-nan", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), alpha=float("nan"), label=L), "alpha"),
    V("gemm", "beta-infinite", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), beta=float("inf"), label=L), "beta"),
    OK("gemm", "plain", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), label=L), (2, 4)),
    OK("gemm", "both-transposed", lambda b, L: b.gemm(x(b, [3, 2]), x(b, [4, 3]), a_transpose=True, b_transpose=True, label=L), (2, 4)),
    OK("gemm", "c-scalar", lambda b, L: b.gemm(x(b, [1, 1]), x(b, [1, 1]), c=x(b, []), label=L), (1, 1)),
    OK("gemm", "c-row", lambda b, L: b.gemm(x(b, [2, 3], "float16"), x(b, [3, 4], "float16"), c=x(b, [1, 4], "float16"), label=L),
       (2, 4), "float16"),
    OK("gemm", "c-full", lambda b, L: b.gemm(x(b, [2, 3]), x(b, [3, 4]), c=x(b, [2, 4]), alpha=0, beta=0, label=L), (2, 4)),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_shape_and_matmul_validation(ctx, case):
    run_case(ctx, case)
