"""Shared machinery of the validation tests (tests/validation).

Each family file holds a TABLE of cases, one per validation step of the
spec's method steps ("If ..., then throw a TypeError") plus the edge cases
that the spec accepts.  A case is

    V(op, name, call, arg=..., exc=TypeError)   a call that must be rejected
    OK(op, name, call, shape=..., dtype=...)    a call that must build, with
                                                 that output shape and type

`call(b, L)` makes its operands with the builder `b` (helpers `x`, `f32`...)
and calls the operator with label=L.  A rejected call must raise `exc` and
its message must name the operator, the label ("label 'L<n>'") and the
argument (quoted, with or without "options.": 'options.axis' or 'axis').

Cases of operators that are not in webnn.OPERATORS are skipped, so tables
may list operators that other branches add.
"""
import itertools
import re

import numpy as np
import pytest

import webnn

ALL_TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
FLOATS = ("float32", "float16")
_names = itertools.count()


@pytest.fixture(scope="module")
def ctx():
    c = webnn.ml.create_context(device_type="cpu")
    yield c
    c.destroy()


def x(b, shape, dt="float32"):
    """A fresh graph input of the given shape and data type."""
    return b.input(f"v{next(_names)}", {"dataType": dt, "shape": list(shape)})


def const(b, shape, dt="float32", value=0):
    return b.constant(np.full(shape, value, dtype=np.dtype(dt)))


class V:
    """A call that the spec rejects."""

    def __init__(self, op, name, call, arg, exc=TypeError):
        self.op, self.name, self.call, self.arg, self.exc = op, name, call, arg, exc

    def __repr__(self):
        return f"V({self.op}: {self.name})"


class OK:
    """A call that the spec accepts: output shape (tuple) and data type."""

    def __init__(self, op, name, call, shape, dtype=None):
        self.op, self.name, self.call, self.shape, self.dtype = op, name, call, tuple(shape), dtype

    def __repr__(self):
        return f"OK({self.op}: {self.name})"


def arg_pattern(arg):
    """The argument as it appears in a message: 'options.axis' or 'axis',
    items of a sequence as 'inputs[1]'."""
    base = re.escape(arg[len("options."):] if arg.startswith("options.") else arg)
    return re.compile(rf"'(options\.)?{base}(\[\d+\])?'")


def check_message(msg, op, label, arg):
    """The message names the operator, the label and the argument."""
    assert op in msg, f"message {msg!r} does not name the operator {op!r}"
    if label is not None:
        assert f"label '{label}'" in msg, f"message {msg!r} does not name the label {label!r}"
    if arg is not None:
        args = arg if isinstance(arg, (tuple, list)) else (arg,)
        assert any(arg_pattern(a).search(msg) for a in args), \
            f"message {msg!r} does not name the argument {args}"


_labels = itertools.count(1)


def expect_reject(call, exc, op, arg, builder):
    """Run call(builder, label) and check the exception and its message."""
    label = f"L{next(_labels)}"
    with pytest.raises(exc) as info:
        call(builder, label)
    # exact class: a TypeError must not be a DOMException and vice versa
    if exc is TypeError:
        assert not isinstance(info.value, webnn.DOMException), repr(info.value)
    check_message(str(info.value), op, label, arg)
    return info.value


def expect_build(call, op, shape, dtype, builder):
    label = f"L{next(_labels)}"
    out = call(builder, label)
    outs = out if isinstance(out, list) else [out]
    if isinstance(shape, tuple) and shape and isinstance(shape[0], tuple):
        want = list(shape)
    else:
        want = [shape]
    assert [tuple(o.shape) for o in outs] == [tuple(s) for s in want], \
        f"{op}: shapes {[o.shape for o in outs]} != {want}"
    if dtype is not None:
        assert all(o.data_type == dtype for o in outs), [o.data_type for o in outs]
    # the graph builds too (the builder's output checks pass)
    builder.build({f"o{i}": o for i, o in enumerate(outs)})
    return outs


def params(table):
    """pytest parameters of a table, skipping operators this build lacks."""
    out = []
    seen = set()
    for c in table:
        cid = f"{c.op}-{c.name}"
        assert cid not in seen, f"duplicate case id {cid}"
        seen.add(cid)
        marks = ()
        if c.op not in webnn.OPERATORS:
            marks = (pytest.mark.skip(reason=f"{c.op} is not implemented in this build"),)
        out.append(pytest.param(c, id=cid, marks=marks))
    return out


def run_case(ctx, case):
    b = webnn.MLGraphBuilder(ctx)
    if isinstance(case, V):
        expect_reject(case.call, case.exc, case.op, case.arg, b)
    else:
        expect_build(case.call, case.op, case.shape, case.dtype, b)


def count_cases(tables):
    """{op: (rejected, accepted)} -- for reports."""
    out = {}
    for table in tables:
        for c in table:
            r, a = out.get(c.op, (0, 0))
            out[c.op] = (r + isinstance(c, V), a + isinstance(c, OK))
    return out
