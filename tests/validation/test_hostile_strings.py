"""Strings that C cannot take as they are: names and labels are USVStrings
(lone surrogates become U+FFFD, as WebIDL converts them), a NUL character
in a name is a TypeError (the core's C strings cannot carry it), and every
other string argument with such characters (data types, enum values,
option names) is a TypeError -- never a UnicodeEncodeError or ValueError.
Labels with control and bidirectional-override characters are sanitised in
messages; very long labels are truncated."""
import numpy as np
import pytest

import webnn

from .conftest import x

F32 = {"dataType": "float32", "shape": [2]}


def test_names_with_lone_surrogates_are_usv_strings(ctx):
    b = webnn.MLGraphBuilder(ctx)
    v = b.input("x\ud800", F32)
    g = b.build({"y\udfff": b.relu(v, label="L\udc00")})
    assert list(g.input_descriptors) == ["x\ufffd"]
    assert list(g.output_descriptors) == ["y\ufffd"]
    out = ctx.compute(g, {"x\ud800": np.array([-1, 2], np.float32)})
    np.testing.assert_array_equal(out["y\ufffd"], [0, 2])
    tx = ctx.create_tensor(dict(F32, writable=True))
    ty = ctx.create_tensor(dict(F32, readable=True))
    ctx.write_tensor(tx, np.array([3, -3], np.float32))
    ctx.dispatch(g, {"x\ud800": tx}, {"y\udfff": ty})
    np.testing.assert_array_equal(ctx.read_tensor(ty), [3, 0])


def test_names_equal_after_conversion_collide(ctx):
    b = webnn.MLGraphBuilder(ctx)
    b.input("a\ud800", F32)
    with pytest.raises(TypeError, match="input"):
        b.input("a\udfff", F32)        # both are "a\ufffd"
    y = b.relu(x(b, [2]))
    with pytest.raises(TypeError, match="build"):
        b.build({"o\ud800": y, "o\udfff": y})


@pytest.mark.parametrize("call", [
    lambda ctx, b: b.input("a\0b", F32),
    lambda ctx, b: b.build({"y\0": b.relu(x(b, [2]))}),
    lambda ctx, b: ctx.dispatch(_graph(ctx), {"x\0": ctx.create_tensor(dict(F32, writable=True))}, {}),
    lambda ctx, b: ctx.compute(_graph(ctx), {"x\0": np.zeros(2, np.float32)}),
], ids=["input", "build", "dispatch", "compute"])
def test_nul_in_names_is_type_error(ctx, call):
    with pytest.raises(TypeError) as info:
        call(ctx, webnn.MLGraphBuilder(ctx))
    assert not isinstance(info.value, webnn.DOMException)


def _graph(ctx):
    b = webnn.MLGraphBuilder(ctx)
    return b.build({"y": b.relu(b.input("x", F32))})


@pytest.mark.parametrize("call,where", [
    (lambda ctx, b: b.input("q", {"dataType": "float\ud832", "shape": [1]}), "input"),
    (lambda ctx, b: b.constant("\ud800", 1), "constant"),
    (lambda ctx, b: b.constant({"dataType": "\ud800", "shape": [1]}, b"\0" * 4), "constant"),
    (lambda ctx, b: ctx.create_tensor({"dataType": "\ud800", "shape": [1]}), "createTensor"),
    (lambda ctx, b: b.cast(x(b, [1]), "\ud800"), "cast"),
    (lambda ctx, b: b.pad(x(b, [1]), [0], [0], mode="\ud800"), "pad"),
    (lambda ctx, b: b.relu(x(b, [1]), **{"\ud800": 1}), "relu"),
    (lambda ctx, b: b.instance_normalization(x(b, [1, 1, 1, 1]), layout="nchw\0"), "instanceNormalization"),
], ids=["input-dataType", "constant-dataType", "constant-descriptor", "createTensor", "cast", "pad-mode",
        "option-name", "enum-with-nul"])
def test_other_strings_with_odd_characters_are_type_errors(ctx, call, where):
    with pytest.raises(TypeError) as info:
        call(ctx, webnn.MLGraphBuilder(ctx))
    assert not isinstance(info.value, (webnn.DOMException, UnicodeError))
    assert where in str(info.value)


def test_labels_are_sanitised_and_truncated(ctx):
    b = webnn.MLGraphBuilder(ctx)
    v = x(b, [2])
    bad = "a\nb\x1b[31m\u202eevil\u2066\x00z"
    with pytest.raises(TypeError) as info:
        b.add(v, x(b, [3]), label=bad)
    msg = str(info.value)
    assert "\n" not in msg and "\x1b" not in msg and "\u202e" not in msg and "\u2066" not in msg
    assert "label 'a?b?[31m?evil?" in msg
    with pytest.raises(TypeError) as info:
        b.add(v, x(b, [3]), label="L" * 100_000)
    assert len(str(info.value)) < 600
    out = b.relu(v, label="\ud800" * 10_000)             # builds: a label is only a label
    assert out.shape == (2,)


def test_an_odd_unknown_options_member_is_ignored_with_a_readable_warning(ctx):
    """WebIDL ignores a dictionary member it does not define, whatever its
    name; the warning shows the name escaped."""
    b = webnn.MLGraphBuilder(ctx)
    with pytest.warns(webnn.UnknownOptionWarning) as record:
        y = b.relu(x(b, [1]), {"\ud800\n": 1})
    assert y.shape == (1,)
    msg = str(record[0].message)
    assert "\\ud800\\n" in msg and "\n" not in msg, msg
