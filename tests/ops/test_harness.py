"""Self-tests of the comparison helpers (so that the operator tests can fail)
and of the operator coverage of tests/ops."""
import pathlib

import numpy as np
import pytest

import webnn

from .conftest import _limits, _snake, check_exact, check_float, wrap_int

# Every operator of webnn.OPERATORS -> the file of tests/ops that tests it
# against a NumPy reference.  An operator missing here fails
# test_every_implemented_operator_is_tested (it does not skip): a new row in
# ops.def needs its tests before the suite is green again.
_FILES = {
    "test_binary.py": "add sub mul div max min pow",
    "test_logical.py": "equal notEqual greater greaterOrEqual lesser lesserOrEqual "
                       "logicalNot logicalAnd logicalOr logicalXor isNaN isInfinite",
    "test_unary.py": "abs ceil cos erf exp floor identity log neg reciprocal roundEven sin sign "
                     "sqrt tan",
    "test_activations.py": "clamp elu gelu hardSigmoid hardSwish leakyRelu linear prelu relu "
                           "sigmoid softplus softsign tanh",
    "test_reduce.py": "reduceL1 reduceL2 reduceLogSum reduceLogSumExp reduceMax reduceMean "
                      "reduceMin reduceProduct reduceSum reduceSumSquare",
    "test_arg_min_max.py": "argMin argMax",
}
TESTED = {op: f for f, ops in _FILES.items() for op in ops.split()}
for _op in ("cast", "where", "reshape", "matmul", "gemm", "conv2d", "convTranspose2d",
            "averagePool2d", "l2Pool2d", "maxPool2d", "batchNormalization",
            "instanceNormalization", "layerNormalization", "softmax", "cumulativeSum",
            "resample2d", "concat", "expand", "transpose", "slice", "split", "tile", "reverse",
            "triangular", "pad", "gather", "gatherElements", "gatherND", "scatterElements",
            "scatterND", "quantizeLinear", "dequantizeLinear", "gru", "gruCell", "lstm",
            "lstmCell"):
    TESTED[_op] = None  # test_<snake name>.py


def _test_file(op):
    return pathlib.Path(__file__).with_name(TESTED[op] or f"test_{_snake(op)}.py")


def test_tested_operators_are_implemented():
    missing = sorted(set(TESTED) - set(webnn.OPERATORS))
    assert not missing, f"tested but not in webnn.OPERATORS: {missing}"


def test_every_implemented_operator_is_tested():
    untested = sorted(set(webnn.OPERATORS) - set(TESTED))
    assert not untested, (f"operators without tests in tests/ops: {untested} (add "
                          "tests/ops/test_<op>.py and a TESTED entry)")
    assert len(TESTED) == len(webnn.OPERATORS) == 95


def test_every_tested_operator_is_called_in_its_file():
    """The file named for an operator exists and builds that operator (its
    snake_case method or its camelCase name used through a table)."""
    bad = []
    for op in sorted(TESTED):
        f = _test_file(op)
        if not f.exists():
            bad.append(f"{op}: {f.name} missing")
            continue
        text = f.read_text()
        snake = _snake(op)
        if f".{snake}(" not in text and f'"{op}"' not in text and f'"{snake}"' not in text:
            bad.append(f"{op}: not built in {f.name}")
    assert not bad, bad


def test_every_operator_runs_on_the_cpu():
    """The CPU backend supports every operator (a missing CPU kernel must not
    turn the operator's tests into skips)."""
    cpu = webnn.ml.create_context(device_type="cpu").op_support_limits()
    missing = [op for op in webnn.OPERATORS if _snake(op) not in cpu]
    assert not missing, f"operators the CPU backend does not support: {missing}"


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
