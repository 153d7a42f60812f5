"""Validation steps that every operator shares, for EVERY operator of
webnn.OPERATORS (operators merged later are covered without a change here):

* "can build": any operator after build() is an InvalidStateError;
* "validating operand": an operand of another builder, positional or an
  operand-valued option, is a TypeError naming that argument;
* the tensor-limits table: every data type that is not allowed for an
  operand, and a rank just outside the operand's range, is a TypeError naming
  that operand (optional operands included);
* the IDL conversions of every option field, from the core's field table: a
  value of the wrong kind, an [EnforceRange] integer out of range, a double
  that is not finite, an enum string that does not exist, a bare integer for
  a sequence, an unknown option name.

Each rejection must name the operator, the label and the argument.  The
valid calls come from the recipes of tests/api/_helpers.py."""
import math

import pytest

import webnn
from api._helpers import (OPS, Recipe, default_types, group_of, op_limits, parse_signature)

from .conftest import ALL_TYPES, expect_reject

MAX_RANK = webnn._core.MAX_RANK


def _sig(op):
    return parse_signature(OPS[op])


def _operand_names(op):
    """Positional operands and operand-valued options, in limits order."""
    return list(op_limits(op))


def _positional(op):
    return {n for k, n in _sig(op) if k != "value"}


def _call(recipe, args=None, options=None, label=None):
    """Call the recipe's operator with replaced positional args / options."""
    args = list(recipe.args if args is None else args)
    opts = dict(recipe.options if options is None else options)
    if label is not None:
        opts["label"] = label
    return recipe.method()(*args, opts)


def _arg_of(op, name):
    return name if name in _positional(op) else f"options.{name}"


# ---- "can build" ------------------------------------------------------------------
@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_after_build_is_invalid_state(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    include = [n for n in _operand_names(op) if n not in _positional(op)]
    r = Recipe(b, op, include=include)
    keep = b.input("keep", {"dataType": "float32", "shape": [1]})
    b.build({"k": b.identity(keep)})
    expect_reject(lambda _b, L: _call(r, label=L), webnn.InvalidStateError, op, None, b)


# ---- validating operand -------------------------------------------------------------
def _operand_cases():
    return [pytest.param(op, n, id=f"{op}-{n}") for op in webnn.OPERATORS
            for n in _operand_names(op)]


@pytest.mark.parametrize("op,name", _operand_cases())
def test_operand_of_another_builder(ctx, op, name):
    b, other = webnn.MLGraphBuilder(ctx), webnn.MLGraphBuilder(ctx)
    include = () if name in _positional(op) else (name,)
    r = Recipe(b, op, include=include)
    foreign_recipe = Recipe(other, op, include=include)
    args, opts = list(r.args), dict(r.options)
    if name in opts:
        opts[name] = foreign_recipe.options[name]
    else:
        i = [n for _, n in _sig(op)].index(name)
        if isinstance(args[i], list):
            args[i] = [args[i][0], foreign_recipe.args[i][0]]
        else:
            args[i] = foreign_recipe.args[i]
    expect_reject(lambda _b, L: _call(r, args, opts, L), TypeError, op, _arg_of(op, name), b)


def _not_an_operand_cases():
    out = []
    for op in webnn.OPERATORS:
        for n in _operand_names(op):
            for bad in ("x", 1.5, None):
                if bad is None and n not in _positional(op):
                    continue  # None for an optional operand means "absent"
                out.append(pytest.param(op, n, bad, id=f"{op}-{n}-{bad!r}"))
    return out


@pytest.mark.parametrize("op,name,bad", _not_an_operand_cases())
def test_not_an_operand(ctx, op, name, bad):
    b = webnn.MLGraphBuilder(ctx)
    include = () if name in _positional(op) else (name,)
    r = Recipe(b, op, include=include)
    args, opts = list(r.args), dict(r.options)
    if name in opts:
        opts[name] = bad
    else:
        i = [n for _, n in _sig(op)].index(name)
        args[i] = [args[i][0], bad] if isinstance(args[i], list) else bad
    expect_reject(lambda _b, L: _call(r, args, opts, L), TypeError, op, _arg_of(op, name), b)


# ---- tensor limits: data types and ranks of every operand ---------------------------
def _dtype_cases():
    out = []
    for op in webnn.OPERATORS:
        for name, (dts, _, _) in op_limits(op).items():
            for dt in ALL_TYPES:
                if dt not in dts:
                    out.append(pytest.param(op, name, dt, id=f"{op}-{name}-{dt}"))
    return out


@pytest.mark.parametrize("op,name,dt", _dtype_cases())
def test_data_type_not_allowed(ctx, op, name, dt):
    """Operands the spec ties together ("same as") get the tested type too;
    the first of them is named."""
    b = webnn.MLGraphBuilder(ctx)
    include = () if name in _positional(op) else (name,)
    types = default_types(op, name, dt)
    group = [n for n in group_of(op, name) if n in _positional(op) or n == name]
    expect_reject(lambda bb, L: Recipe(bb, op, types=types, include=include)(label=L),
                  TypeError, op, [_arg_of(op, n) for n in group], b)


def _rank_cases():
    out = []
    for op in webnn.OPERATORS:
        for name, (_, lo, hi) in op_limits(op).items():
            for rank in (lo - 1, hi + 1):
                if 0 <= rank <= MAX_RANK:
                    out.append(pytest.param(op, name, rank, id=f"{op}-{name}-rank{rank}"))
    return out


@pytest.mark.parametrize("op,name,rank", _rank_cases())
def test_rank_not_allowed(ctx, op, name, rank):
    b = webnn.MLGraphBuilder(ctx)
    include = () if name in _positional(op) else (name,)
    shapes = {name: [2] * rank}
    expect_reject(lambda bb, L: Recipe(bb, op, include=include, shapes=shapes)(label=L),
                  TypeError, op, _arg_of(op, name), b)


# ---- option fields: IDL conversions ------------------------------------------------
def _fields(op):
    row = OPS[op]
    return [(camel, kind, enum) for (_, camel, enum), kind in zip(row["fields"], row["field_types"])]


# values of the wrong kind (or out of the IDL type's range) per field kind
BAD = {
    "double": ["1", [1.0], True, math.nan, math.inf, -math.inf, 10 ** 400],
    "number": ["1", [1], {}],
    "bool": ["yes", [True], 1.5],
    "u32": [-1, 2 ** 32, 1.5, "1", True, [1]],
    "i32": [2 ** 31, -2 ** 31 - 1, 1.5, "1", True],
    "u32_list": ["12", {}, [-1], [2 ** 32], [1.5], ["1"], [True]],
    "i32_list": ["12", {}, [2 ** 31], [1.5], ["1"]],
    "dtype": ["float64", "FLOAT32", 1, None.__class__],
    "enum": ["no-such-value", "", 0, ["x"]],
    "enum_list": ["no-such-value", ["no-such-value"], [0]],
    "operand": ["x", 1, [1]],
}


def _field_cases():
    out = []
    for op in webnn.OPERATORS:
        for camel, kind, enum in _fields(op):
            bads = list(BAD.get(kind, []))
            if kind in ("u32_list", "i32_list", "enum_list") and not (op == "split" and camel == "splits"):
                bads.append(3)   # a bare integer is not a sequence (IDL sequence<...>)
            for i, v in enumerate(bads):
                out.append(pytest.param(op, camel, kind, v, id=f"{op}-{camel}-{kind}-{i}"))
    return out


@pytest.mark.parametrize("op,field,kind,bad", _field_cases())
def test_field_conversion(ctx, op, field, kind, bad):
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    args, opts = list(r.args), dict(r.options)
    names = [n for _, n in _sig(op)]
    if field in names:
        args[names.index(field)] = bad
    else:
        opts[field] = bad
    positional = field in names
    expect_reject(lambda _b, L: _call(r, args, opts, L), TypeError, op,
                  field if positional else f"options.{field}", b)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_unknown_option(ctx, op):
    """An unknown options-dict member is ignored (WebIDL) with a warning; an
    unknown keyword argument is a TypeError naming the operator, label and
    keyword."""
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    opts = dict(r.options, noSuchOption=1)
    with pytest.warns(webnn.UnknownOptionWarning, match=f"{op} .*'noSuchOption'"):
        _call(r, None, opts, "L0")
    expect_reject(lambda _b, L: r.method()(*r.args, r.options, label=L, noSuchOption=1),
                  TypeError, op, "noSuchOption", b)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_label_must_be_a_string(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    with pytest.raises(TypeError) as info:
        r.method()(*r.args, dict(r.options, label=5))
    assert op in str(info.value) and "label" in str(info.value)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_missing_positional_argument(ctx, op):
    b = webnn.MLGraphBuilder(ctx)
    r = Recipe(b, op)
    name = _sig(op)[-1][1]
    expect_reject(lambda _b, L: r.method()(*r.args[:-1], label=L), TypeError, op, name, b)


@pytest.mark.parametrize("op", webnn.OPERATORS)
def test_valid_call_builds_with_every_optional_operand(ctx, op):
    """The recipes with every operand-valued option present build (so the
    rejections above are about the tested argument only)."""
    b = webnn.MLGraphBuilder(ctx)
    include = [n for n in _operand_names(op) if n not in _positional(op)]
    out = Recipe(b, op, include=include)(label="ok")
    outs = out if isinstance(out, list) else [out]
    b.build({f"o{i}": o for i, o in enumerate(outs)})
