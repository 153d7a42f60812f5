"""Helpers for verifying WebNN behaviour with pytest.

- :func:`assert_close`: compare results with the tolerance metrics of the
  Web Platform Tests (WPT): distance in ULPs (units in the last place, on
  the data type's bit patterns) or absolute error; integers compare exactly;
  NaN matches only NaN.
- :mod:`webnn.testing.plugin`: a pytest plugin (registered through the
  ``pytest11`` entry point when the package is installed) with an
  ``ml_context`` fixture parametrised over the devices that are available.
- :mod:`webnn.testing.wpt`: turns WPT-format JSON test vectors into test
  cases and runs them.

A test of one's own::

    import numpy as np
    from webnn import MLGraphBuilder
    from webnn.testing import assert_close

    def test_gelu(ml_context):                       # the plugin's fixture
        b = MLGraphBuilder(ml_context)
        x = b.input("x", {"data_type": "float32", "shape": [3]})
        g = b.build({"y": b.gelu(x)})
        y = ml_context.compute(g, {"x": np.array([-1, 0, 1], np.float32)})["y"]
        expected = [-0.15865525, 0.0, 0.84134475]
        assert_close(y, expected, tolerance=18)      # float32 from y: 18 ULP
"""
import numpy as np

__all__ = ["assert_close", "ulp_distance", "abs_distance", "infer_data_type", "DATA_TYPES"]

DATA_TYPES = {
    "float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
    "int32": np.dtype(np.int32), "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64), "uint64": np.dtype(np.uint64),
    "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
}

# float dtype -> the signed integer type of the same width, for ULP distances
_BITS_AS_INT = {np.dtype(np.float32): np.dtype(np.int32),
                np.dtype(np.float16): np.dtype(np.int16)}


def ulp_distance(actual, expected):
    """Elementwise ULP distance between two arrays of the same float dtype
    (float32 or float16), as float64: the steps between the values'
    positions in the ordered set of the dtype's values (+0 and -0
    coincide); NaN vs NaN is 0, NaN vs anything else is inf."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    itype = _BITS_AS_INT[actual.dtype]
    magnitude = np.int64((1 << (8 * itype.itemsize - 1)) - 1)

    def ordinal(a):
        b = a.view(itype).astype(np.int64)
        return np.where(b >= 0, b, -(b & magnitude))

    distance = np.abs(ordinal(actual) - ordinal(expected)).astype(np.float64)
    return _nan_rule(distance, actual, expected)


def abs_distance(actual, expected):
    """Elementwise ``|actual - expected|`` in float64; NaN matches only NaN,
    equal infinities are 0 apart."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    with np.errstate(invalid="ignore", over="ignore"):
        distance = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    distance[(actual == expected)] = 0.0
    return _nan_rule(distance, actual, expected)


def _nan_rule(distance, actual, expected):
    distance = np.array(distance, dtype=np.float64, copy=True).reshape(np.shape(actual))
    a_nan, e_nan = np.isnan(actual), np.isnan(expected)
    distance[a_nan | e_nan] = np.inf
    distance[a_nan & e_nan] = 0.0
    return distance


def _show(x):
    """A NumPy scalar for failure messages; floats with their bit pattern."""
    if x.dtype.kind == "f" and x.dtype in _BITS_AS_INT:
        bits = x.view(_BITS_AS_INT[x.dtype]).item() & ((1 << (8 * x.dtype.itemsize)) - 1)
        return f"{float(x)!r} [0x{bits:0{2 * x.dtype.itemsize}x}]"
    return repr(x.item())


_NAMES = {dtype: name for name, dtype in DATA_TYPES.items()}


def infer_data_type(actual, expected):
    """The ``MLOperandDataType`` the arrays are compared in: ``actual``'s
    dtype when it is one of the eight (a WebNN result always is), else
    ``expected``'s (a NumPy array of one of them); a TypeError otherwise
    (Python floats or float64 on both sides say nothing of the precision)."""
    for side in (actual, expected):
        dtype = getattr(side, "dtype", None)
        if dtype is not None and np.dtype(dtype) in _NAMES:
            return _NAMES[np.dtype(dtype)]
    kinds = [str(np.asarray(a).dtype) for a in (actual, expected)]
    raise TypeError(f"assert_close: cannot infer the data type from dtypes {kinds[0]} and "
                    f"{kinds[1]} (neither is one of {', '.join(DATA_TYPES)}); pass data_type=")


def mismatch(actual, expected, *, data_type=None, metric="ulp", tolerance=0, name="output"):
    """None when ``actual`` is within ``tolerance`` of ``expected``, else a
    message naming the first and the worst elements off (what
    :func:`assert_close` raises)."""
    if data_type is None:
        data_type = infer_data_type(actual, expected)
    if data_type not in DATA_TYPES:
        raise TypeError(f"data_type {data_type!r} is not one of {', '.join(DATA_TYPES)}")
    dtype = DATA_TYPES[data_type]
    metric = metric.lower()
    if metric not in ("ulp", "atol"):
        raise ValueError(f"metric {metric!r} is not 'ulp' or 'atol'")
    def typed(values):       # float values rounded to the data type once
        if dtype.kind == "f":
            return np.asarray(np.asarray(values, dtype=np.float64).astype(dtype))
        return np.asarray(values, dtype=dtype)

    # an array keeps its dtype (a wrong one is reported); a list is typed
    actual = np.asarray(actual) if hasattr(actual, "dtype") else typed(actual)
    expected = typed(expected)
    head = f"{name} ({data_type}, shape {list(expected.shape)})"
    if actual.dtype != dtype or actual.shape != expected.shape:
        return f"{head}: got dtype {actual.dtype}, shape {list(actual.shape)}"
    if dtype.kind != "f":
        metric, tolerance = "exact", 0          # integers: always exact
    unit = {"ulp": " ULP", "atol": " (ATOL)", "exact": ""}[metric]
    candidates = np.flatnonzero(actual != expected)   # NaN always differs
    if candidates.size == 0:
        return None
    a, e = actual.reshape(-1)[candidates], expected.reshape(-1)[candidates]
    if metric == "ulp":
        distance = ulp_distance(a, e)
    elif metric == "atol":
        distance = abs_distance(a, e)
    else:
        distance = np.array([abs(int(x) - int(y)) for x, y in zip(a.tolist(), e.tolist())],
                            dtype=np.float64)
    bad = np.flatnonzero(distance > tolerance)
    if bad.size == 0:
        return None

    def where(k):
        i = int(candidates[k])
        at = f"index {i}"
        if expected.ndim > 1:
            at += f" {tuple(int(j) for j in np.unravel_index(i, expected.shape))}"
        return f"{at}: got {_show(a[k])}, expected {_show(e[k])}, distance {distance[k]:g}{unit}"

    worst = int(bad[np.argmax(distance[bad])])
    lines = [f"{head}: {bad.size} of {expected.size} elements off, tolerance {tolerance:g}{unit}",
             f"  first at {where(int(bad[0]))}"]
    if worst != bad[0]:
        lines.append(f"  worst at {where(worst)}")
    return "\n".join(lines)


def assert_close(actual, expected, *, data_type=None, metric="ulp", tolerance=0):
    """Assert that ``actual`` matches ``expected`` as the WPT conformance
    tests compare results.

    Parameters
    ----------
    actual : array_like
        The computed result; its dtype must be ``data_type``'s.
    expected : array_like
        The expected values (float64 values are rounded to ``data_type``
        once, round-to-nearest-even, as JavaScript typed arrays do).
    data_type : str, optional
        The ``MLOperandDataType`` of the result; by default inferred from
        the arrays (:func:`infer_data_type`: ``actual``'s dtype, else
        ``expected``'s), as ``torch.testing.assert_close`` infers what it
        needs.  It picks the comparison: ULP (or ATOL) for float16 and
        float32, exact equality for the integer types.
    metric : {'ulp', 'atol'}
        ``'ulp'``: distance in units in the last place of ``data_type``;
        ``'atol'``: absolute error.  Integer data types compare exactly.
    tolerance : float
        The largest distance allowed (0: bit-exact, up to +0 == -0).

    Raises
    ------
    AssertionError
        Naming how many elements are off, the first and the worst.
    """
    message = mismatch(actual, expected, data_type=data_type, metric=metric,
                       tolerance=tolerance)
    if message:
        raise AssertionError(message)
