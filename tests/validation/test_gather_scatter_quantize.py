"""Validation steps of gather, gatherElements, gatherND, scatterElements,
scatterND (#api-mlgraphbuilder-gather ...) and quantizeLinear /
dequantizeLinear (#api-mlgraphbuilder-quantizelinear, -dequantizelinear)."""
import pytest

from .conftest import OK, V, params, run_case, x

I32 = "int32"

TABLE = [
    # ---- gather ----------------------------------------------------------------
    V("gather", "axis-equals-rank", lambda b, L: b.gather(x(b, [2, 3]), x(b, [1], I32), axis=2, label=L), "axis"),
    V("gather", "indices-float", lambda b, L: b.gather(x(b, [2, 3]), x(b, [1]), label=L), "indices"),
    V("gather", "indices-uint64", lambda b, L: b.gather(x(b, [2, 3]), x(b, [1], "uint64"), label=L), "indices"),
    V("gather", "input-rank0", lambda b, L: b.gather(x(b, []), x(b, [], I32), label=L), "input"),
    V("gather", "output-rank9", lambda b, L: b.gather(x(b, [2, 2]), x(b, [1] * 8, I32), label=L), ("indices", "output")),
    OK("gather", "scalar-indices", lambda b, L: b.gather(x(b, [3]), x(b, [], I32), label=L), ()),
    OK("gather", "scalar-indices-middle-axis", lambda b, L: b.gather(x(b, [2, 3, 4]), x(b, [], "int64"), axis=1, label=L), (2, 4)),
    OK("gather", "indices-matrix", lambda b, L: b.gather(x(b, [5, 2], "uint8"), x(b, [3, 1], "uint32"), label=L), (3, 1, 2), "uint8"),
    OK("gather", "output-rank8", lambda b, L: b.gather(x(b, [2, 2]), x(b, [1] * 7, I32), axis=1, label=L), (2,) + (1,) * 7),
    # ---- gatherElements --------------------------------------------------------
    V("gatherElements", "axis-equals-rank", lambda b, L: b.gather_elements(x(b, [2, 3]), x(b, [2, 3], I32), axis=2, label=L), "axis"),
    V("gatherElements", "rank-differs", lambda b, L: b.gather_elements(x(b, [2, 3]), x(b, [3], I32), label=L), "indices"),
    V("gatherElements", "shape-off-axis", lambda b, L: b.gather_elements(x(b, [2, 3]), x(b, [2, 4], I32), label=L), "indices"),
    V("gatherElements", "indices-int8", lambda b, L: b.gather_elements(x(b, [2, 3]), x(b, [2, 3], "int8"), label=L), "indices"),
    OK("gatherElements", "axis-dimension-differs", lambda b, L: b.gather_elements(x(b, [4, 3]), x(b, [2, 3], I32), label=L), (2, 3)),
    OK("gatherElements", "size1", lambda b, L: b.gather_elements(x(b, [1], "int64"), x(b, [1], "int64"), label=L), (1,), "int64"),
    # ---- gatherND --------------------------------------------------------------
    V("gatherND", "coordinate-too-long", lambda b, L: b.gather_nd(x(b, [2, 3]), x(b, [1, 3], I32), label=L), "indices"),
    V("gatherND", "indices-rank0", lambda b, L: b.gather_nd(x(b, [2, 3]), x(b, [], I32), label=L), "indices"),
    V("gatherND", "indices-float16", lambda b, L: b.gather_nd(x(b, [2, 3]), x(b, [1, 2], "float16"), label=L), "indices"),
    V("gatherND", "output-rank9", lambda b, L: b.gather_nd(x(b, [2] * 8), x(b, [1] * 7 + [1], I32), label=L), ("indices", "output")),
    OK("gatherND", "full-coordinates", lambda b, L: b.gather_nd(x(b, [2, 3]), x(b, [4, 2], I32), label=L), (4,)),
    OK("gatherND", "one-coordinate", lambda b, L: b.gather_nd(x(b, [2, 3]), x(b, [1], I32), label=L), (3,)),
    OK("gatherND", "scalar-result", lambda b, L: b.gather_nd(x(b, [2], "int8"), x(b, [1], "uint32"), label=L), (), "int8"),
    # ---- scatterElements -------------------------------------------------------
    V("scatterElements", "updates-dtype", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [1, 3], I32), x(b, [1, 3], "float16"), label=L), "updates"),
    V("scatterElements", "axis-equals-rank", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [2, 3], I32), x(b, [2, 3]), axis=2, label=L), "axis"),
    V("scatterElements", "indices-rank", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [3], I32), x(b, [3]), label=L), "indices"),
    V("scatterElements", "updates-rank", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [1, 3], I32), x(b, [3]), label=L), "updates"),
    V("scatterElements", "indices-shape", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [1, 2], I32), x(b, [1, 2]), label=L), "indices"),
    V("scatterElements", "updates-shape", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [1, 3], I32), x(b, [2, 3]), label=L), "updates"),
    V("scatterElements", "indices-float", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [1, 3]), x(b, [1, 3]), label=L), "indices"),
    OK("scatterElements", "size1", lambda b, L: b.scatter_elements(
        x(b, [1], "uint8"), x(b, [1], "int64"), x(b, [1], "uint8"), label=L), (1,), "uint8"),
    OK("scatterElements", "axis1", lambda b, L: b.scatter_elements(
        x(b, [2, 3]), x(b, [2, 5], I32), x(b, [2, 5]), axis=1, label=L), (2, 3)),
    # ---- scatterND -------------------------------------------------------------
    V("scatterND", "updates-dtype", lambda b, L: b.scatter_nd(
        x(b, [2, 3]), x(b, [1, 2], I32), x(b, [1], "int32"), label=L), "updates"),
    V("scatterND", "coordinate-too-long", lambda b, L: b.scatter_nd(
        x(b, [2, 3]), x(b, [1, 3], I32), x(b, [1]), label=L), "indices"),
    V("scatterND", "updates-shape", lambda b, L: b.scatter_nd(
        x(b, [2, 3]), x(b, [1, 1], I32), x(b, [1, 2]), label=L), "updates"),
    V("scatterND", "input-rank0", lambda b, L: b.scatter_nd(
        x(b, []), x(b, [1, 0 + 1], I32), x(b, [1]), label=L), "input"),
    OK("scatterND", "scalar-updates", lambda b, L: b.scatter_nd(
        x(b, [2, 3]), x(b, [2], I32), x(b, []), label=L), (2, 3)),
    OK("scatterND", "row-updates", lambda b, L: b.scatter_nd(
        x(b, [2, 3], "int64"), x(b, [4, 1], "uint32"), x(b, [4, 3], "int64"), label=L), (2, 3), "int64"),
    # ---- quantizeLinear --------------------------------------------------------
    V("quantizeLinear", "input-int32", lambda b, L: b.quantize_linear(
        x(b, [2], I32), x(b, [2], I32), x(b, [2], "uint8"), label=L), "input"),
    V("quantizeLinear", "scale-dtype-differs", lambda b, L: b.quantize_linear(
        x(b, [2]), x(b, [2], "float16"), x(b, [2], "uint8"), label=L), "scale"),
    V("quantizeLinear", "zeroPoint-float", lambda b, L: b.quantize_linear(
        x(b, [2]), x(b, [2]), x(b, [2]), label=L), "zeroPoint"),
    V("quantizeLinear", "scale-rank", lambda b, L: b.quantize_linear(
        x(b, [2, 2]), x(b, [2]), x(b, [2], "uint8"), label=L), "scale"),
    V("quantizeLinear", "zeroPoint-rank", lambda b, L: b.quantize_linear(
        x(b, [2, 2]), x(b, [2, 2]), x(b, [2], "uint8"), label=L), "zeroPoint"),
    V("quantizeLinear", "shapes-differ", lambda b, L: b.quantize_linear(
        x(b, [2, 2]), x(b, [2, 1]), x(b, [1, 2], "uint8"), label=L), "zeroPoint"),
    V("quantizeLinear", "not-blockwise", lambda b, L: b.quantize_linear(
        x(b, [6]), x(b, [4]), x(b, [4], "int8"), label=L), ("scale", "zeroPoint")),
    V("quantizeLinear", "block-larger", lambda b, L: b.quantize_linear(
        x(b, [2]), x(b, [4]), x(b, [4], "int8"), label=L), ("scale", "zeroPoint")),
    OK("quantizeLinear", "scalars", lambda b, L: b.quantize_linear(
        x(b, []), x(b, []), x(b, [], "int8"), label=L), (), "int8"),
    OK("quantizeLinear", "blockwise", lambda b, L: b.quantize_linear(
        x(b, [6, 4], "float16"), x(b, [3, 1], "float16"), x(b, [3, 1], "uint32"), label=L), (6, 4), "uint32"),
    OK("quantizeLinear", "per-tensor", lambda b, L: b.quantize_linear(
        x(b, [6, 4]), x(b, [1, 1]), x(b, [1, 1], "int32"), label=L), (6, 4), "int32"),
    # ---- dequantizeLinear ------------------------------------------------------
    V("dequantizeLinear", "input-float", lambda b, L: b.dequantize_linear(
        x(b, [2]), x(b, [2]), x(b, [2]), label=L), "input"),
    V("dequantizeLinear", "scale-int", lambda b, L: b.dequantize_linear(
        x(b, [2], "uint8"), x(b, [2], "uint8"), x(b, [2], "uint8"), label=L), "scale"),
    V("dequantizeLinear", "zeroPoint-dtype-differs", lambda b, L: b.dequantize_linear(
        x(b, [2], "uint8"), x(b, [2]), x(b, [2], "int8"), label=L), "zeroPoint"),
    V("dequantizeLinear", "scale-rank", lambda b, L: b.dequantize_linear(
        x(b, [2, 2], "int8"), x(b, [2]), x(b, [2, 2], "int8"), label=L), "scale"),
    V("dequantizeLinear", "not-blockwise", lambda b, L: b.dequantize_linear(
        x(b, [5], "int8"), x(b, [2]), x(b, [2], "int8"), label=L), ("scale", "zeroPoint")),
    OK("dequantizeLinear", "scalars", lambda b, L: b.dequantize_linear(
        x(b, [], "int32"), x(b, [], "float16"), x(b, [], "int32"), label=L), (), "float16"),
    OK("dequantizeLinear", "per-axis", lambda b, L: b.dequantize_linear(
        x(b, [2, 3], "uint8"), x(b, [1, 3]), x(b, [1, 3], "uint8"), label=L), (2, 3), "float32"),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_gather_scatter_quantize_validation(ctx, case):
    run_case(ctx, case)
