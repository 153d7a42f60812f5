"""Strings that C cannot take as they are: names and labels are USVStrings
(lone surrogates become U+FFFD, as WebIDL converts them), a NUL character
in a name works (escaped on its way into the core's C strings), and every
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


def test_nul_and_the_escape_character_in_names_round_trip(ctx):
    """A USVString may hold NUL (WPT unprintableNames: "tensor names can
    include null bytes"); the core's C strings cannot, so names cross with
    U+0001 as an escape character -- one to one, so "a\\0b", "a\\x01\\x02b" and
    "a\\x01b" stay three different names."""
    b = webnn.MLGraphBuilder(ctx)
    names = ["a\0b", "a\x01\x02b", "a\x01b", "\0"]
    ins = [b.input(n, F32) for n in names]
    y = ins[0]
    for v in ins[1:]:
        y = b.add(b.mul(y, b.constant(np.full(2, 10, np.float32))), v)
    g = b.build({"y\0": y, "\x01": b.relu(ins[1])})
    assert list(g.input_descriptors) == names
    assert list(g.output_descriptors) == ["y\0", "\x01"]
    feeds = {n: np.full(2, k + 1, np.float32) for k, n in enumerate(names)}
    out = ctx.compute(g, feeds)
    np.testing.assert_array_equal(out["y\0"], [1234, 1234])
    np.testing.assert_array_equal(out["\x01"], [2, 2])
    tins = {n: ctx.create_tensor(dict(F32, writable=True)) for n in names}
    for n, t in tins.items():
        ctx.write_tensor(t, feeds[n])
    touts = {k: ctx.create_tensor(dict(F32, readable=True)) for k in ("y\0", "\x01")}
    ctx.dispatch(g, tins, touts)
    np.testing.assert_array_equal(ctx.read_tensor(touts["y\0"]), [1234, 1234])
    # a name the graph does not have is still a TypeError
    with pytest.raises(TypeError, match="dispatch"):
        ctx.dispatch(g, dict(tins, **{"a\x01\x01\x02b": tins["a\0b"]}), touts)
    with pytest.raises(TypeError, match="compute"):
        ctx.compute(g, {**{n: v for n, v in feeds.items() if n != "\0"}, "\x01\x02": feeds["\0"]})


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
