"""Validation steps of batchNormalization, instanceNormalization,
layerNormalization (#api-mlgraphbuilder-batchnorm, -instancenorm,
-layernorm) and softmax (#api-mlgraphbuilder-softmax-method)."""
import pytest

from .conftest import OK, V, params, run_case, x


def bn(b, L, shape=(2, 3), mean=(3,), var=(3,), dt="float32", mean_dt=None, var_dt=None, **opts):
    return b.batch_normalization(x(b, shape, dt), x(b, mean, mean_dt or dt), x(b, var, var_dt or dt),
                                 label=L, **opts)


TABLE = [
    # ---- batchNormalization ----------------------------------------------------
    V("batchNormalization", "axis-equals-rank", lambda b, L: bn(b, L, axis=2), "axis"),
    V("batchNormalization", "mean-shape", lambda b, L: bn(b, L, mean=(2,)), "mean"),
    V("batchNormalization", "mean-rank2", lambda b, L: bn(b, L, mean=(1, 3)), "mean"),
    V("batchNormalization", "variance-shape", lambda b, L: bn(b, L, var=(4,)), "variance"),
    V("batchNormalization", "mean-dtype", lambda b, L: bn(b, L, mean_dt="float16"), "mean"),
    V("batchNormalization", "variance-dtype", lambda b, L: bn(b, L, var_dt="float16"), "variance"),
    V("batchNormalization", "input-int32", lambda b, L: bn(b, L, dt="int32"), "input"),
    V("batchNormalization", "input-rank0", lambda b, L: bn(b, L, shape=()), "input"),
    V("batchNormalization", "scale-shape", lambda b, L: bn(b, L, scale=x(b, [2])), "scale"),
    V("batchNormalization", "scale-dtype", lambda b, L: bn(b, L, scale=x(b, [3], "float16")), "scale"),
    V("batchNormalization", "bias-shape", lambda b, L: bn(b, L, bias=x(b, [1])), "bias"),
    V("batchNormalization", "bias-dtype", lambda b, L: bn(b, L, bias=x(b, [3], "float16")), "bias"),
    V("batchNormalization", "shape-follows-axis", lambda b, L: bn(b, L, shape=(2, 3), mean=(3,), var=(3,), axis=0), "mean"),
    V("batchNormalization", "epsilon-nan", lambda b, L: bn(b, L, epsilon=float("nan")), "epsilon"),
    OK("batchNormalization", "rank1", lambda b, L: bn(b, L, shape=(1,), mean=(1,), var=(1,), axis=0), (1,)),
    OK("batchNormalization", "axis-last", lambda b, L: bn(b, L, shape=(2, 1, 4), mean=(4,), var=(4,), axis=2,
                                                       scale=x(b, [4]), bias=x(b, [4])), (2, 1, 4)),
    OK("batchNormalization", "float16", lambda b, L: bn(b, L, dt="float16", epsilon=1e-30), (2, 3), "float16"),
    # ---- instanceNormalization -------------------------------------------------
    V("instanceNormalization", "rank3", lambda b, L: b.instance_normalization(x(b, [1, 2, 3]), label=L), "input"),
    V("instanceNormalization", "int8", lambda b, L: b.instance_normalization(x(b, [1, 2, 3, 4], "int8"), label=L), "input"),
    V("instanceNormalization", "scale-shape-nchw", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), scale=x(b, [4]), label=L), "scale"),
    V("instanceNormalization", "scale-shape-nhwc", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), scale=x(b, [2]), layout="nhwc", label=L), "scale"),
    V("instanceNormalization", "bias-shape", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), bias=x(b, [3]), label=L), "bias"),
    V("instanceNormalization", "bias-dtype", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), bias=x(b, [2], "float16"), label=L), "bias"),
    V("instanceNormalization", "scale-rank2", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), scale=x(b, [1, 2]), label=L), "scale"),
    V("instanceNormalization", "unknown-layout", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4]), layout="nchw4", label=L), "layout"),
    OK("instanceNormalization", "ones", lambda b, L: b.instance_normalization(x(b, [1, 1, 1, 1]), label=L), (1, 1, 1, 1)),
    OK("instanceNormalization", "nhwc", lambda b, L: b.instance_normalization(
        x(b, [1, 2, 3, 4], "float16"), scale=x(b, [4], "float16"), bias=x(b, [4], "float16"), layout="nhwc", label=L),
       (1, 2, 3, 4), "float16"),
    # ---- layerNormalization ----------------------------------------------------
    V("layerNormalization", "axis-out-of-range", lambda b, L: b.layer_normalization(x(b, [2, 3]), axes=[2], label=L), "axes"),
    V("layerNormalization", "axis-duplicate", lambda b, L: b.layer_normalization(x(b, [2, 3]), axes=[1, 1], label=L), "axes"),
    V("layerNormalization", "axes-on-scalar", lambda b, L: b.layer_normalization(x(b, []), axes=[0], label=L), "axes"),
    V("layerNormalization", "uint8", lambda b, L: b.layer_normalization(x(b, [2], "uint8"), label=L), "input"),
    V("layerNormalization", "scale-rank", lambda b, L: b.layer_normalization(x(b, [2, 3]), scale=x(b, [2, 3]), label=L), "scale"),
    V("layerNormalization", "scale-shape", lambda b, L: b.layer_normalization(x(b, [2, 3]), scale=x(b, [2]), label=L), "scale"),
    V("layerNormalization", "bias-shape-follows-axes", lambda b, L: b.layer_normalization(
        x(b, [2, 3, 4]), axes=[2, 0], bias=x(b, [2, 4]), label=L), "bias"),
    V("layerNormalization", "bias-dtype", lambda b, L: b.layer_normalization(x(b, [2, 3]), bias=x(b, [3], "float16"), label=L),
      "bias"),
    OK("layerNormalization", "scalar", lambda b, L: b.layer_normalization(x(b, []), label=L), ()),
    OK("layerNormalization", "scalar-with-scalar-scale", lambda b, L: b.layer_normalization(
        x(b, []), scale=x(b, []), bias=x(b, []), label=L), ()),
    OK("layerNormalization", "rank1-default-axes", lambda b, L: b.layer_normalization(x(b, [5]), scale=x(b, []), label=L), (5,)),
    OK("layerNormalization", "empty-axes", lambda b, L: b.layer_normalization(x(b, [2, 3]), axes=[], label=L), (2, 3)),
    OK("layerNormalization", "axes-in-any-order", lambda b, L: b.layer_normalization(
        x(b, [2, 3, 4], "float16"), axes=[2, 0], scale=x(b, [4, 2], "float16"), label=L), (2, 3, 4), "float16"),
    # ---- softmax ---------------------------------------------------------------
    V("softmax", "axis-equals-rank", lambda b, L: b.softmax(x(b, [2, 3]), 2, label=L), "axis"),
    V("softmax", "rank0", lambda b, L: b.softmax(x(b, []), 0, label=L), "input"),
    V("softmax", "int32", lambda b, L: b.softmax(x(b, [2], "int32"), 0, label=L), "input"),
    V("softmax", "axis-negative", lambda b, L: b.softmax(x(b, [2]), -1, label=L), "axis"),
    OK("softmax", "size1", lambda b, L: b.softmax(x(b, [1]), 0, label=L), (1,)),
    OK("softmax", "rank8-last", lambda b, L: b.softmax(x(b, [1] * 7 + [3], "float16"), 7, label=L), (1,) * 7 + (3,), "float16"),
]


@pytest.mark.parametrize("case", params(TABLE))
def test_normalization_validation(ctx, case):
    run_case(ctx, case)
