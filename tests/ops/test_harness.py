"""Self-tests of the comparison helpers (so that the operator tests can fail)
and of the operator coverage of tests/ops."""
import numpy as np
import pytest

import webnn

from .conftest import _limits, _snake, check_exact, check_float, wrap_int

TESTED = {
    "add", "sub", "mul", "div", "max", "min", "pow",                       # test_binary
    "equal", "notEqual", "greater", "greaterOrEqual", "lesser", "lesserOrEqual",
    "logicalNot", "logicalAnd", "logicalOr", "logicalXor", "isNaN", "isInfinite",  # test_logical
    "abs", "ceil", "cos", "erf", "exp", "floor", "identity", "log", "neg", "reciprocal",
    "roundEven", "sin", "sign", "sqrt", "tan",                             # test_unary
    "clamp", "elu", "gelu", "hardSigmoid", "hardSwish", "leakyRelu", "linear", "prelu",
    "relu", "sigmoid", "softplus", "softsign", "tanh",                      # test_activations
    "cast", "where", "reshape", "matmul", "gemm",
}


def test_tested_operators_are_implemented():
    missing = sorted(TESTED - set(webnn.OPERATORS))
    assert not missing, f"tested but not in webnn.OPERATORS: {missing}"
    lim = _limits()
    assert not [op for op in TESTED if _snake(op) not in lim], "missing op_support_limits entries"


def test_every_implemented_operator_is_tested():
    untested = sorted(set(webnn.OPERATORS) - TESTED)
    if untested:
        pytest.skip(f"operators without tests in tests/ops yet: {untested}")


def _fails(fn, *a, **kw):
    with pytest.raises((pytest.fail.Exception, AssertionError)):
        fn(*a, **kw)


def test_check_float_detects_errors():
    one = np.float32(1)
    up = np.nextafter(one, np.float32(2))
    check_float(np.array([up]), np.array([1.0]), "float32", ulps=1)
    _fails(check_float, np.array([up]), np.array([1.0]), "float32")               # 1 ulp, exact
    _fails(check_float, np.array([np.nan], np.float32), np.array([1.0]), "float32", rtol=1)
    _fails(check_float, np.array([1.0], np.float32), np.array([np.nan]), "float32", rtol=1)
    _fails(check_float, np.array([np.inf], np.float32), np.array([3e38]), "float32", ulps=1)
    _fails(check_float, np.array([np.inf], np.float32), np.array([-np.inf]), "float32", rtol=1)
    _fails(check_float, np.array([0.0], np.float32), np.array([-0.0]), "float32", zero_sign=True,
           atol=1)
    _fails(check_float, np.array([1.0], np.float64), np.array([1.0]), "float32")   # dtype
    _fails(check_float, np.array([1.0, 1.0], np.float32), np.array([[1.0, 1.0]]), "float32",
           (1, 2))                                                                    # shape
    # float16: the reference is rounded to float16 first (ties to even)
    check_float(np.array([2048.0], np.float16), np.array([2049.0]), "float16")
    _fails(check_float, np.array([2050.0], np.float16), np.array([2049.0]), "float16")
    # largest finite vs Inf: one ulp apart at the overflow threshold
    check_float(np.array([np.inf], np.float16), np.array([65504.0]), "float16", ulps=1)
    _fails(check_float, np.array([np.inf], np.float16), np.array([65504.0]), "float16")
    # subnormal results: one ulp is the smallest subnormal
    tiny = np.finfo(np.float32).smallest_subnormal
    _fails(check_float, np.array([0.0], np.float32), np.array([float(tiny) * 3]), "float32", ulps=2)


def test_check_exact_and_wrap():
    np.testing.assert_array_equal(wrap_int(np.array([128, -129, 256, -1], dtype=object), "int8"),
                                  [-128, 127, 0, -1])
    np.testing.assert_array_equal(wrap_int(np.array([-1, 2**64], dtype=object), "uint64"),
                                  np.array([2**64 - 1, 0], np.uint64))
    check_exact(np.array([-128], np.int8), np.array([128], dtype=object), "int8")
    _fails(check_exact, np.array([127], np.int8), np.array([128], dtype=object), "int8")
    _fails(check_exact, np.array([1], np.int32), np.array([1], dtype=object), "int64")
