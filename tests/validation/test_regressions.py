"""Regression tests, one per bug that the robustness work found (each is
also covered by the generic tables; these name the bug)."""

import numpy as np
import pytest

import webnn

from .conftest import expect_reject, x


def test_reshape_took_a_bare_integer_for_newShape(ctx):
    """newShape is sequence<unsigned long>: reshape(x, 4) was accepted as
    [4].  The builder now rejects a single integer for every sequence field
    except IDL unions (split's splits)."""
    b = webnn.MLGraphBuilder(ctx)
    expect_reject(lambda b, L: b.reshape(x(b, [4]), 4, label=L), TypeError, "reshape", "newShape", b)
    assert [o.shape for o in b.split(x(b, [4]), 2)] == [(2,), (2,)]


def test_clamp_compared_64_bit_bounds_as_doubles(ctx):
    """int64 minValue 2^62 + 1 > maxValue 2^62 was accepted: both round to
    the same double."""
    b = webnn.MLGraphBuilder(ctx)
    expect_reject(lambda b, L: b.clamp(x(b, [2], "int64"), min_value=2 ** 62 + 1, max_value=2 ** 62, label=L),
                  TypeError, "clamp", "minValue", b)
    expect_reject(lambda b, L: b.clamp(x(b, [2], "uint64"), min_value=2 ** 64 - 1, max_value=2 ** 64 - 2, label=L),
                  TypeError, "clamp", "minValue", b)
    v = x(b, [3], "int64")
    g = b.build({"y": b.clamp(v, min_value=2 ** 62, max_value=2 ** 62 + 1)})
    out = ctx.compute(g, {next(iter(g.input_descriptors)): np.array([0, 2 ** 62 + 5, -1], np.int64)})["y"]
    np.testing.assert_array_equal(out, [2 ** 62, 2 ** 62 + 1, 2 ** 62])


def test_huge_integer_for_a_double_option_raised_overflow_error(ctx):
    b = webnn.MLGraphBuilder(ctx)
    expect_reject(lambda b, L: b.elu(x(b, [2]), alpha=10 ** 400, label=L), TypeError, "elu", "alpha", b)


def test_huge_number_for_an_mlnumber_option_is_infinity(ctx):
    """MLNumber is unrestricted: a Fraction beyond double's range is
    +-Infinity (it raised OverflowError)."""
    from fractions import Fraction
    b = webnn.MLGraphBuilder(ctx)
    v = x(b, [2])
    g = b.build({"y": b.clamp(v, min_value=Fraction(-10 ** 400), max_value=Fraction(10 ** 400))})
    out = ctx.compute(g, {next(iter(g.input_descriptors)): np.array([-1e30, 3], np.float32)})["y"]
    np.testing.assert_array_equal(out, np.array([-1e30, 3], np.float32))


def test_a_dict_was_taken_as_a_sequence(ctx):
    b = webnn.MLGraphBuilder(ctx)
    expect_reject(lambda b, L: b.reverse(x(b, [2]), axes={}, label=L), TypeError, "reverse", "axes", b)
    with pytest.raises(TypeError):
        b.input("d", {"dataType": "float32", "shape": {2: 3}})


def test_enum_and_data_type_strings_were_cut_at_nul(ctx):
    """"nchw\\0x" was accepted as "nchw", "float32\\0" as float32."""
    b = webnn.MLGraphBuilder(ctx)
    expect_reject(lambda b, L: b.instance_normalization(x(b, [1, 1, 1, 1]), layout="nchw\0x", label=L),
                  TypeError, "instanceNormalization", "layout", b)
    with pytest.raises(TypeError):
        b.input("q", {"dataType": "float32\0", "shape": [1]})
    with pytest.raises(TypeError):
        b.cast(x(b, [1]), "int8\0")


def test_lone_surrogates_raised_unicode_encode_error(ctx):
    b = webnn.MLGraphBuilder(ctx)
    v = b.input("x\ud800", {"dataType": "float32", "shape": [1]})
    y = b.relu(v, label="\udfff")
    assert list(b.build({"y\ud800": y}).output_descriptors) == ["y\ufffd"]
    with pytest.raises(TypeError):
        ctx.create_tensor({"dataType": "\ud800", "shape": [1]})


def test_nul_in_an_input_name_raised_value_error(ctx):
    """It raised ValueError; then a TypeError; a USVString may hold NUL, so
    now the name works (test_hostile_strings has the round trip)."""
    b = webnn.MLGraphBuilder(ctx)
    v = b.input("a\0b", {"dataType": "float32", "shape": [1]})
    g = b.build({"y": b.relu(v)})
    assert list(g.input_descriptors) == ["a\0b"]


def test_python_level_operator_errors_name_the_label(ctx):
    b = webnn.MLGraphBuilder(ctx)
    with pytest.raises(TypeError, match=r"add \(label 'L1'\): argument 'b'"):
        b.add(x(b, [1]), label="L1")
    with pytest.raises(TypeError, match=r"concat \(label 'L2'\): argument 'inputs'"):
        b.concat(5, 0, label="L2")
