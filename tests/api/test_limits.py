"""MLContext.opSupportLimits(): its shape, and that it tells the truth --
every advertised data type (and rank bound) builds, every other data type is
a TypeError."""
import pytest

import webnn

from ._helpers import (ALL_TYPES, OPS, RANK_SHAPES, SHAPES, Recipe, default_types, group_of,
                       op_limits, output_names,
                       parse_signature, raises, snake_case)


def _tensor_limits(entry, where):
    assert set(entry) >= {"data_types", "rank_range"}, where
    dts = entry["data_types"]
    assert isinstance(dts, list) and dts, where
    assert len(set(dts)) == len(dts), f"{where}: duplicates in {dts}"
    assert set(dts) <= set(ALL_TYPES), f"{where}: {dts}"
    rr = entry["rank_range"]
    assert set(rr) == {"min", "max"}, where
    assert isinstance(rr["min"], int) and isinstance(rr["max"], int), where
    assert 0 <= rr["min"] <= rr["max"], f"{where}: {rr}"


def test_top_level_members(ctx):
    lim = ctx.op_support_limits()
    assert lim["preferred_input_layout"] in ("nchw", "nhwc")
    assert isinstance(lim["max_tensor_byte_length"], int) and lim["max_tensor_byte_length"] > 0
    for k in ("input", "constant", "output"):
        _tensor_limits(lim[k], k)
        assert set(lim[k]["data_types"]) == set(ALL_TYPES), k
    # snake_case keys only (python-api.md: dictionaries that the package returns)
    assert "preferredInputLayout" not in lim and "maxTensorByteLength" not in lim


def test_returns_a_fresh_dict(ctx):
    a = ctx.op_support_limits()
    a["input"]["data_types"].clear()
    assert ctx.op_support_limits()["input"]["data_types"]


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_member_for_every_operator(ctx, op):
    lim = ctx.op_support_limits()
    snake = snake_case(op)
    assert snake in lim, f"op_support_limits() has no member {snake!r}"
    member = lim[snake]
    outs = output_names(op)
    assert outs and all(snake_case(n) in member for n in outs), f"{snake}: no output entry"
    sig = parse_signature(OPS[op])
    for kind, name in sig:
        if kind != "value":
            assert snake_case(name) in member, f"{snake}: no entry for operand {name!r}"
    for key, entry in member.items():
        assert key == snake_case(key), f"{snake}: key {key!r} is not snake_case"
        _tensor_limits(entry, f"{snake}.{key}")


def _cases():
    out = []
    for op in webnn.OPERATORS:
        for name in op_limits(op):
            for dt in ALL_TYPES:
                out.append(pytest.param(op, name, dt, id=f"{op}-{name}-{dt}"))
    return out


@pytest.mark.parametrize("op,name,dt", _cases())
def test_advertised_data_types_are_true(ctx, limits, op, name, dt):
    """An advertised data type of an operand builds; any other is a TypeError
    that names the operator.  Operands that the spec ties together ("same
    as") get the tested type too."""
    advertised = limits[snake_case(op)][snake_case(name)]["data_types"]
    b = webnn.MLGraphBuilder(ctx)
    types = default_types(op, name, dt)
    sig_names = {n for _, n in parse_signature(OPS[op])}
    include = () if name in sig_names else (name,)
    recipe = Recipe(b, op, types=types, include=include)
    if dt in advertised:
        out = recipe()
        outs = out if isinstance(out, list) else [out]
        out_names = [snake_case(n) for n in output_names(op)]
        for i, o in enumerate(outs):
            entry = out_names[min(i, len(out_names) - 1)]
            out_types = limits[snake_case(op)][entry]["data_types"]
            assert o.data_type in out_types, f"{op}: output type {o.data_type} not advertised"
        b.build({f"o{i}": o for i, o in enumerate(outs)})
    else:
        with raises(TypeError, op):
            recipe()


def test_groups_are_spec_same_as():
    """Sanity of the recipe: operands the spec ties by "same as"."""
    if "add" in webnn.OPERATORS:
        assert group_of("add", "a") == ["a", "b"]
    if "where" in webnn.OPERATORS:
        assert group_of("where", "trueValue") == ["trueValue", "falseValue"]
    if "gemm" in webnn.OPERATORS:
        assert set(group_of("gemm", "a")) == {"a", "b", "c"}


def _rank_cases():
    out = []
    for op in webnn.OPERATORS:
        lim = op_limits(op)
        sig = [n for k, n in parse_signature(OPS[op]) if k != "value"]
        ranges = {(lim[n][1], lim[n][2]) for n in sig}
        if len(ranges) == 1:
            out.append(pytest.param(op, sig, ranges.pop(), id=op))
    return out


@pytest.mark.parametrize("op,names,rng", _rank_cases())
def test_rank_range_is_true(ctx, limits, op, names, rng):
    """For operators whose positional operands share one rank range: the
    advertised min and max ranks build, one outside is a TypeError."""
    lo, hi = rng
    snake = snake_case(op)
    for n in names:
        rr = limits[snake][snake_case(n)]["rank_range"]
        assert (rr["min"], rr["max"]) == (lo, hi)
    for rank, ok in ((lo, True), (hi, True), (lo - 1, False), (hi + 1, False)):
        if rank < 0 or rank > webnn._core.MAX_RANK + 1:
            continue
        b = webnn.MLGraphBuilder(ctx)
        shapes = RANK_SHAPES[op](rank) if op in RANK_SHAPES else {n: [2] * rank for n in names}
        fixed = SHAPES.get(op, {})
        if op not in RANK_SHAPES and ok and all(n in fixed and len(fixed[n]) == rank
                                                for n in names):
            # operands whose sizes are tied together (recurrent networks):
            # the recipe's shapes, which have this rank
            shapes = {n: list(fixed[n]) for n in names}
        if rank > webnn._core.MAX_RANK:
            with pytest.raises(TypeError):
                Recipe(b, op, shapes=shapes)()
            continue
        recipe = Recipe(b, op, shapes=shapes)
        if ok:
            recipe()
        else:
            with raises(TypeError, op):
                recipe()


# ---- every operand, optional ones included: rank bounds, outputs ----------------
def _operand_rank_cases():
    out = []
    for op in webnn.OPERATORS:
        for name, (_, lo, hi) in op_limits(op).items():
            out.append(pytest.param(op, name, lo, hi, id=f"{op}-{name}"))
    return out


@pytest.mark.parametrize("op,name,lo,hi", _operand_rank_cases())
def test_rank_range_of_every_operand_is_enforced(ctx, limits, op, name, lo, hi):
    """For every operand of every operator -- positional or an operand-valued
    option (bias, scale, c, ...) -- the advertised rank range is the one
    enforced: a rank just below or above it is a TypeError naming the
    operand.  (Which ranks inside the range build depends on the other
    operands' shapes: test_rank_range_is_true and tests/validation.)"""
    rr = limits[snake_case(op)][snake_case(name)]["rank_range"]
    assert (rr["min"], rr["max"]) == (lo, hi)
    sig_names = {n for _, n in parse_signature(OPS[op])}
    include = () if name in sig_names else (name,)
    for rank in (lo - 1, hi + 1):
        if rank < 0 or rank > webnn._core.MAX_RANK:
            continue
        b = webnn.MLGraphBuilder(ctx)
        with raises(TypeError, op, name):
            Recipe(b, op, include=include, shapes={name: [2] * rank})()


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_outputs_fit_the_advertised_output_limits(ctx, limits, op):
    """The outputs of a valid call (with every optional operand) have a data
    type and a rank that op_support_limits() advertises for them."""
    sig_names = {n for _, n in parse_signature(OPS[op])}
    include = [n for n in op_limits(op) if n not in sig_names]
    b = webnn.MLGraphBuilder(ctx)
    out = Recipe(b, op, include=include)()
    outs = out if isinstance(out, list) else [out]
    names = [snake_case(n) for n in output_names(op)]
    for i, o in enumerate(outs):
        entry = limits[snake_case(op)][names[min(i, len(names) - 1)]]
        assert o.data_type in entry["data_types"], (op, o.data_type)
        assert entry["rank_range"]["min"] <= len(o.shape) <= entry["rank_range"]["max"], (op, o.shape)
