"""The GPU (CUDA) backend against the CPU backend and the WPT vectors.

Every test here needs a GPU context and is skipped cleanly (marker `gpu`)
when none can be created: no libwebnn_cuda.so, no driver, no device.  To run
them without a GPU, point WEBNN_CUDA_LIBRARY at the CPU emulation of the
backend (kernels_cuda/emu/build_emu.py; test_cuda_emu.py does that).

* test_wpt_on_gpu: every WPT conformance vector (tests/wpt/data) on a GPU
  context, with the harness of tests/wpt/test_wpt.py; cases whose operators
  the GPU context does not support are skipped.
* cross-backend tests: one graph built on both contexts from the same data;
  the results must agree exactly for everything that moves or compares
  values and for integer arithmetic, and within a few ulps for float math
  (CUDA's libm and cuBLAS's summation order differ from glibc's and BLIS's).
  The shapes are chosen to reach the GPU-only code paths (warp and block
  reductions, the tiled transpose, the matmul batch modes, the pinned
  staging chunks).
* the tensor API on the GPU: create / write / dispatch / read, repeated
  dispatches, outputs named twice, two contexts on two threads.

Every operator in every data type and option value, generated from the
operator table, runs on the GPU against the CPU in test_backend_ops.py (an
operator the GPU backend lacks is a skipped case named "...-unsupported");
the cases here are the ones that reach GPU-specific paths.  The
NumPy-reference operator tests run on the GPU with
`WEBNN_TEST_DEVICE=gpu pytest tests/ops` (tests/ops/conftest.py).
"""
import concurrent.futures
import ctypes
import importlib.util
import os
import pathlib

import numpy as np
import pytest

import webnn
from webnn import _core

GPU = _core.device_available("gpu")
gpu = pytest.mark.skipif(not GPU, reason="no usable GPU context (libwebnn_cuda.so, "
                                          "driver or device missing)")
pytestmark = gpu

# ---- contexts -----------------------------------------------------------------

# (gctx, cctx: tests/backends/conftest.py)


def run(ctx, build, inputs, constants=None):
    """Build with build(builder, **operands) -> operand or {name: operand} and
    compute; returns an array or a dict of arrays."""
    b = webnn.MLGraphBuilder(ctx)
    ops = {}
    for name, arr in inputs.items():
        ops[name] = b.input(name, {"dataType": str(arr.dtype), "shape": list(arr.shape)})
    for name, arr in (constants or {}).items():
        ops[name] = b.constant({"dataType": str(arr.dtype), "shape": list(arr.shape)},
                               np.ascontiguousarray(arr))
    out = build(b, **ops)
    single = not isinstance(out, dict)
    g = b.build({"out": out} if single else out)
    res = ctx.compute(g, {k: np.ascontiguousarray(v) for k, v in inputs.items()})
    g.destroy()
    return res["out"] if single else res


def ulp_diff(a, b):
    """ULP distance between two float arrays of one dtype (NaN == NaN)."""
    it = {np.dtype(np.float32): np.int32, np.dtype(np.float16): np.int16}[a.dtype]
    mag = (1 << (8 * a.dtype.itemsize - 1)) - 1

    def ordinal(x):
        v = x.view(it).astype(np.int64)
        return np.where(v >= 0, v, -(v & mag))

    d = np.abs(ordinal(a) - ordinal(b)).astype(np.float64)
    na, nb = np.isnan(a), np.isnan(b)
    d[na | nb] = np.inf
    d[na & nb] = 0
    return d


def same(g, c, ulps=0, what=""):
    """GPU result g against CPU result c: exact, or within `ulps` for floats."""
    assert g.dtype == c.dtype and g.shape == c.shape, (g.dtype, g.shape, c.dtype, c.shape)
    g, c = np.atleast_1d(g), np.atleast_1d(c)
    if g.dtype.kind == "f" and ulps:
        d = ulp_diff(g, c)
        bad = d > ulps
    elif g.dtype.kind == "f":
        bad = ~((g == c) | (np.isnan(g) & np.isnan(c)))
    else:
        bad = g != c
    if np.any(bad):
        i = tuple(int(x) for x in np.argwhere(bad)[0])
        pytest.fail(f"{what}: {int(bad.sum())} of {g.size} elements differ; first at {i}: "
                    f"gpu {g[i]!r}, cpu {c[i]!r}", pytrace=False)


def both(gctx, cctx, build, inputs, constants=None, ulps=0, what=""):
    g = run(gctx, build, inputs, constants)
    c = run(cctx, build, inputs, constants)
    if isinstance(g, dict):
        for k in g:
            same(g[k], c[k], ulps, f"{what} [{k}]")
    else:
        same(g, c, ulps, what)
    return g


RNG = np.random.default_rng(1234)
ALL = ["float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8"]


def rand(shape, dt, lo=-10, hi=10):
    dt = np.dtype(dt)
    if dt.kind == "f":
        return RNG.uniform(lo, hi, size=shape).astype(dt)
    info = np.iinfo(dt)
    return RNG.integers(info.min, info.max, size=shape, endpoint=True, dtype=dt)


# ---- the WPT vectors on the GPU ------------------------------------------------
from webnn.testing import wpt as _wpt  # noqa: E402

_CASES = _wpt.load_cases(pathlib.Path(__file__).resolve().parent.parent / "wpt" / "data")
_SNAKE = {row["camel"]: row["snake"] for row in _core.op_table()}


@pytest.mark.parametrize("case", _wpt.pytest_params(_CASES))
def test_wpt_on_gpu(gctx, case):
    limits = gctx.op_support_limits()
    for name in case.operators:
        if name not in webnn.OPERATORS:
            pytest.skip(f"operator {name} is not implemented yet")
        if _SNAKE.get(name, name) not in limits:
            pytest.skip(f"operator {name} is not supported by the GPU backend")
    messages = _wpt.run_case(gctx, case)
    if messages:
        pytest.fail(f"{case.name!r} on the GPU:\n" + "\n".join(messages), pytrace=False)


# ---- what the GPU context reports ----------------------------------------------
def test_gpu_limits_are_within_the_spec(gctx, cctx):
    g, c = gctx.op_support_limits(), cctx.op_support_limits()
    for op, operands in g.items():
        if not isinstance(operands, dict) or "data_types" in operands:
            continue
        for name, lim in operands.items():
            if isinstance(lim, dict) and name in c.get(op, {}):
                assert set(lim["data_types"]) <= set(c[op][name]["data_types"]), (op, name)


# ---- element-wise -------------------------------------------------------------
# Every element-wise operator, cast, where, the logical operators, prelu, the
# movement operators (expand, slice, tile, reverse, triangular, pad, concat,
# split, reshape, identity) and quantize / dequantize in every data type and
# option value, with edge values, run in test_backend_ops.py (generated from the
# operator table); what stays here reaches GPU-only paths (sizes, block teams).
def test_binary_large_flat_float32(gctx, cctx):
    a, b = rand((1 << 20) + 3, "float32"), rand((1 << 20) + 3, "float32")
    for op in ("add", "sub", "mul", "div"):
        both(gctx, cctx, lambda bl, a, b: getattr(bl, op)(a, b), {"a": a, "b": b}, what=op)


# ---- matrix products -------------------------------------------------------------
def mm_tol(a, b, out, dt):
    k = a.shape[-1]
    mag = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
    eps = 2.0 ** -23 if dt == "float32" else 2.0 ** -10
    acc = 2.0 ** -23 * k * mag  # float32 accumulation
    return acc + (eps * np.abs(out) if dt == "float16" else 0)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("sa,sb", [
    ((64, 32), (32, 48)),                 # one product
    ((5, 64, 32), (32, 48)),              # b shared: one tall product
    ((5, 64, 32), (5, 32, 48)),           # strided batch
    ((1, 64, 32), (5, 32, 48)),           # strided, a broadcast (stride 0)
    ((2, 1, 3, 16, 8), (1, 4, 1, 8, 24)), # broadcast both ways: pointer arrays
    ((3, 1, 7, 5), (4, 5, 6)),
])
def test_matmul_modes(gctx, dt, sa, sb):
    a, b = rand(sa, dt, -1, 1), rand(sb, dt, -1, 1)
    got = run(gctx, lambda bl, a, b: bl.matmul(a, b), {"a": a, "b": b})
    ref = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == ref.shape and got.dtype == np.dtype(dt)
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= mm_tol(a, b, ref, dt) + 1e-30), float(err.max())


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("cshape", [None, (), (1,), (24,), (40, 1), (40, 24)])
def test_gemm(gctx, dt, ta, tb, cshape):
    M, N, K = 40, 24, 17
    a = rand((K, M) if ta else (M, K), dt, -1, 1)
    b = rand((N, K) if tb else (K, N), dt, -1, 1)
    opts = {"a_transpose": ta, "b_transpose": tb, "alpha": 0.5, "beta": 2.0}
    inputs = {"a": a, "b": b}
    ref = 0.5 * (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    if cshape is not None:
        c = rand(cshape, dt, -1, 1)
        inputs["c"] = c
        ref = ref + 2.0 * c.astype(np.float64)
        got = run(gctx, lambda bl, a, b, c: bl.gemm(a, b, c=c, **opts), inputs)
    else:
        got = run(gctx, lambda bl, a, b: bl.gemm(a, b, **opts), inputs)
    aa = (a.T if ta else a)
    bb = (b.T if tb else b)
    tol = 0.5 * mm_tol(aa, bb, ref, dt) + (2.0 ** -10 * np.abs(ref) if dt == "float16" else 0)
    err = np.abs(got.astype(np.float64) - ref)
    assert np.all(err <= tol + 4 * np.spacing(np.abs(ref).astype(np.float32))), float(err.max())


# ---- data movement ------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "int64"])
def test_transpose_tiled_and_general(gctx, cctx, dt):
    for shape, perm in [((64, 96), (1, 0)), ((3, 40, 50), (0, 2, 1)),
                        ((40, 3, 50), (2, 1, 0)), ((2, 3, 4, 5, 6), (4, 2, 0, 3, 1)),
                        ((7, 33), (1, 0)), ((1, 9, 1, 100), (3, 1, 2, 0))]:
        x = rand(shape, dt)
        both(gctx, cctx, lambda b, x: b.transpose(x, permutation=list(perm)), {"x": x},
             what=f"transpose {shape} {perm} {dt}")


def test_gather_scatter(gctx, cctx):
    x = rand((40, 7, 9), "float32")
    idx = RNG.integers(-60, 60, size=(5, 3)).astype(np.int64)  # out of range: clamped
    both(gctx, cctx, lambda b, x, i: b.gather(x, i, axis=1), {"x": x, "i": idx}, what="gather")
    ie = RNG.integers(-9, 12, size=(40, 7, 4)).astype(np.int32)
    both(gctx, cctx, lambda b, x, i: b.gather_elements(x, i, axis=2), {"x": x, "i": ie},
         what="gatherElements")
    ind = RNG.integers(-50, 50, size=(11, 2)).astype(np.uint32)
    both(gctx, cctx, lambda b, x, i: b.gather_nd(x, i), {"x": x, "i": ind}, what="gatherND")
    # duplicate indices: the last update wins, as on the CPU
    si = RNG.integers(0, 3, size=(40, 7, 6)).astype(np.int64)
    su = rand((40, 7, 6), "float32")
    both(gctx, cctx, lambda b, x, i, u: b.scatter_elements(x, i, u, axis=2),
         {"x": x, "i": si, "u": su}, what="scatterElements")
    ni = RNG.integers(0, 4, size=(500, 2)).astype(np.int32)
    nu = rand((500, 9), "float32")
    both(gctx, cctx, lambda b, x, i, u: b.scatter_nd(x, i, u), {"x": x, "i": ni, "u": nu},
         what="scatterND")


# ---- normalization ----------------------------------------------------------------------
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_softmax_paths(gctx, cctx, dt):
    ulps = 4 if dt == "float32" else 1
    for shape, axis in [((4, 3000), 1),    # block teams
                        ((300, 16), 1),    # warp teams
                        ((100, 37), 0),    # columns
                        ((3, 50, 7), 1)]:
        x = rand(shape, dt, -20, 20)
        both(gctx, cctx, lambda b, x: b.softmax(x, axis), {"x": x}, ulps=ulps,
             what=f"softmax {shape} {axis}")


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_norms(gctx, cctx, dt):
    ulps = 4 if dt == "float32" else 1
    x = rand((8, 2100), dt, -3, 7)
    s, bb = rand((2100,), dt), rand((2100,), dt)
    both(gctx, cctx, lambda b, x, s, c: b.layer_normalization(x, scale=s, bias=c),
         {"x": x, "s": s, "c": bb}, ulps=ulps, what="layerNorm block teams")
    x = rand((300, 5, 6), dt)
    both(gctx, cctx, lambda b, x: b.layer_normalization(x, axes=[2, 0]), {"x": x},
         ulps=ulps, what="layerNorm general axes")
    x = rand((2, 5, 40, 30), dt)
    s, c = rand((5,), dt), rand((5,), dt)
    for layout, xx in (("nchw", x), ("nhwc", x.transpose(0, 2, 3, 1).copy())):
        both(gctx, cctx, lambda b, x, s, c: b.instance_normalization(
            x, scale=s, bias=c, layout=layout), {"x": xx, "s": s, "c": c}, ulps=ulps,
            what=f"instanceNorm {layout}")
    m, v = rand((5,), dt), rand((5,), dt, 0.1, 3)
    both(gctx, cctx, lambda b, x, m, v, s, c: b.batch_normalization(x, m, v, scale=s, bias=c),
         {"x": x, "m": m, "v": v, "s": s, "c": c}, ulps=ulps, what="batchNorm")


# ---- reductions ---------------------------------------------------------------------------
REDUCE_ALL = ["reduce_sum", "reduce_l1", "reduce_sum_square", "reduce_product",
              "reduce_max", "reduce_min"]
REDUCE_FLOAT = ["reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_mean"]


def _limits_dtypes(ctx, op):
    lim = ctx.op_support_limits()[op]
    return lim["input"]["data_types"]


@pytest.mark.parametrize("dt", ALL)
def test_reductions(gctx, cctx, dt):
    ulps = 2 if dt == "float32" else 1
    cases = [((6, 5, 7), None, False),        # everything
             ((6, 5, 7), [1], True),          # middle axis
             ((6, 5, 7), [0, 2], False),      # two axes, non-adjacent
             ((4, 1, 3, 600), [3], False),    # long rows: block teams
             ((700, 3), [0], True),           # long columns
             ((3, 4), [], False)]             # no axis
    for op in REDUCE_ALL + REDUCE_FLOAT:
        if dt not in _limits_dtypes(gctx, op):
            continue
        for shape, axes, keep in cases:
            if dt.startswith("float"):
                lo, hi = (0.5, 1.5) if op == "reduce_product" else (
                    (0.1, 10) if op == "reduce_log_sum" else (-10, 10))
                x = rand(shape, dt, lo, hi)
            else:
                x = rand(shape, dt)
            opts = {"keepDimensions": keep}
            if axes is not None:
                opts["axes"] = axes
            both(gctx, cctx, lambda b, x: getattr(b, op)(x, opts), {"x": x}, ulps=ulps,
                 what=f"{op} {dt} {shape} {axes}")


def test_reduction_nan_and_inf(gctx, cctx):
    x = rand((5, 300), "float32")
    x[1, 7] = np.nan
    x[2, 9] = np.inf
    x[3, 11] = -np.inf
    for op in ["reduce_max", "reduce_min", "reduce_sum", "reduce_log_sum_exp", "reduce_l1"]:
        both(gctx, cctx, lambda b, x: getattr(b, op)(x, {"axes": [1]}), {"x": x}, ulps=2,
             what=f"{op} special values")


@pytest.mark.parametrize("dt", ALL)
def test_arg_min_max(gctx, cctx, dt):
    for shape, axis in [((6, 5, 7), 1), ((40, 3), 0), ((3, 200), 1), ((9,), 0)]:
        x = rand(shape, dt, -3, 3)
        if dt.startswith("float"):
            x = np.round(x)  # ties
            if x.size > 10:
                x.flat[[4, 9]] = np.nan
        else:
            x = (x % 5).astype(dt)  # ties
        for op in ("arg_min", "arg_max"):
            for keep, odt in ((False, "int32"), (True, "int64")):
                both(gctx, cctx, lambda b, x: getattr(b, op)(
                    x, axis, {"keepDimensions": keep, "outputDataType": odt}), {"x": x},
                    what=f"{op} {dt} {shape} {axis}")


@pytest.mark.parametrize("dt", [d for d in ALL if d not in ("int8", "uint8")])
def test_cumulative_sum(gctx, cctx, dt):
    if dt not in _limits_dtypes(gctx, "cumulative_sum"):
        pytest.skip("not allowed")
    ulps = 2 if dt == "float32" else 1
    for shape, axis in [((6, 5, 7), 1), ((300, 3), 0), ((2, 90), 1)]:
        x = rand(shape, dt, -10, 10)
        for excl in (False, True):
            for rev in (False, True):
                both(gctx, cctx, lambda b, x: b.cumulative_sum(
                    x, axis, {"exclusive": excl, "reversed": rev}), {"x": x}, ulps=ulps,
                    what=f"cumulativeSum {dt} {shape} {axis} {excl} {rev}")


# ---- pooling ---------------------------------------------------------------------------------
POOL_CASES = [
    {"windowDimensions": [3, 3]},
    {"windowDimensions": [3, 2], "strides": [2, 1], "padding": [1, 2, 0, 1]},
    {"windowDimensions": [2, 3], "dilations": [2, 1], "strides": [1, 2],
     "padding": [2, 0, 1, 1], "outputShapeRounding": "ceil"},
    {"windowDimensions": [2, 2], "strides": [3, 3], "padding": [3, 3, 3, 3]},  # empty windows
    {},  # global
]


@pytest.mark.parametrize("dt", ALL)
def test_pooling(gctx, cctx, dt):
    for op in ("average_pool2d", "l2_pool2d", "max_pool2d"):
        if dt not in _limits_dtypes(gctx, op):
            continue
        ulps = 8 if dt == "float32" else 1  # float32 sums in another order
        lo = -10 if op == "max_pool2d" else 0.5  # float32 sums: no cancellation
        for layout in ("nchw", "nhwc"):
            x = rand((2, 3, 9, 11), dt, lo, 10)
            if layout == "nhwc":
                x = x.transpose(0, 2, 3, 1).copy()
            for opts in POOL_CASES:
                o = dict(opts, layout=layout)
                both(gctx, cctx, lambda b, x: getattr(b, op)(x, o), {"x": x}, ulps=ulps,
                     what=f"{op} {dt} {o}")
        if dt.startswith("float"):
            # global pooling of large planes: block teams; NaN in max pooling
            x = rand((2, 3, 40, 50), dt, lo, 10)
            x[0, 1, 5, 5] = np.nan
            # (averagePool2d sums 2000 values in float32 on both, in other orders)
            gu = 64 if op == "average_pool2d" and dt == "float32" else 8
            both(gctx, cctx, lambda b, x: getattr(b, op)(x), {"x": x}, ulps=gu,
                 what=f"{op} {dt} global")


# ---- convolutions ----------------------------------------------------------------------------
def _close(g, c, x_abs_sum, dt, what):
    """float32 sums in different orders: |g - c| within a few roundings of
    the sum of the terms' magnitudes."""
    assert g.dtype == c.dtype and g.shape == c.shape, (g.shape, c.shape)
    eps = 2.0 ** -23 if dt == "float32" else 2.0 ** -10
    tol = 8 * eps * x_abs_sum + (eps * np.abs(c.astype(np.float64)) if dt == "float16" else 0)
    bad = np.abs(g.astype(np.float64) - c.astype(np.float64)) > tol + 1e-30
    assert not np.any(bad), f"{what}: {int(bad.sum())} of {g.size} differ"


_CONV_FILTER = {  # filter layout -> permutation of oihw
    "oihw": (0, 1, 2, 3), "hwio": (2, 3, 1, 0), "ohwi": (0, 2, 3, 1), "ihwo": (1, 2, 3, 0)}
_CONVT_FILTER = {  # layout -> permutation of iohw
    "iohw": (0, 1, 2, 3), "hwoi": (2, 3, 1, 0), "ohwi": (1, 2, 3, 0)}


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("transpose", [False, True])
def test_conv2d(gctx, cctx, dt, transpose):
    cases = [
        dict(C=3, O=4, k=(3, 3), groups=1, strides=[1, 1], dilations=[1, 1], padding=[1, 1, 1, 1]),
        dict(C=4, O=6, k=(2, 3), groups=2, strides=[2, 1], dilations=[1, 2], padding=[0, 1, 2, 0]),
        dict(C=6, O=6, k=(3, 3), groups=6, strides=[2, 2], dilations=[1, 1], padding=[1, 0, 1, 0]),
        dict(C=5, O=3, k=(1, 1), groups=1, strides=[1, 1], dilations=[1, 1], padding=[0, 0, 0, 0]),
    ]
    layouts = _CONVT_FILTER if transpose else _CONV_FILTER
    for case in cases:
        C, O, (kh, kw), grp = case["C"], case["O"], case["k"], case["groups"]
        x = rand((2, C, 7, 8), dt, -2, 2)
        if transpose:
            w = rand((C, O // grp, kh, kw), dt, -2, 2)
        else:
            w = rand((O, C // grp, kh, kw), dt, -2, 2)
        bias = rand((O,), dt, -2, 2)
        for il in ("nchw", "nhwc"):
            xx = x if il == "nchw" else x.transpose(0, 2, 3, 1).copy()
            for fl, perm in layouts.items():
                ww = w.transpose(perm).copy()
                opts = {"groups": grp, "strides": case["strides"], "dilations": case["dilations"],
                        "padding": case["padding"], "inputLayout": il, "filterLayout": fl}
                op = "conv_transpose2d" if transpose else "conv2d"

                def build(b, x, w, c, opts=opts, op=op):
                    return getattr(b, op)(x, w, dict(opts, bias=c))
                ins = {"x": xx, "w": ww, "c": bias}
                g = run(gctx, build, ins)
                c = run(cctx, build, ins)
                # bound of the terms' magnitudes: the same graph on |x|, |w|, |b|
                mags = {k: np.abs(v) for k, v in ins.items()}
                m = run(cctx, build, mags).astype(np.float64)
                _close(g, c, m, dt, f"{op} {dt} {il} {fl} {case}")


# ---- cuDNN and epilogue fusion --------------------------------------------------------
# On the emulation (WEBNN_CUDA_LIBRARY = build/cuda-emu/...), the emulated cuDNN
# (kernels_cuda/emu/cudnn_emu.c) is loaded by the backend with dlopen as the
# real one is on a GPU host; ctypes opens the same object to read its call
# counters.  On a GPU only the results are checked (and that libcudnn is mapped).
def _emu_cudnn():
    lib = os.environ.get("WEBNN_CUDA_LIBRARY", "")
    if "emu" not in os.path.basename(lib):
        return None
    if "0" in (os.environ.get("WEBNN_CUDNN"), os.environ.get("WEBNN_CUDA_FUSION"),
               os.environ.get("WEBNN_CUDNN_FIND")):
        return None  # the counters assert the default path (cuDNN on, fusion on, Find)
    path = os.environ.get("WEBNN_CUDNN_LIBRARY") or os.path.join(os.path.dirname(lib),
                                                                "libcudnn_emu.so")
    if not os.path.exists(path):
        return None
    d = ctypes.CDLL(path)
    if not hasattr(d, "cudnn_emu_calls"):
        return None  # a real cuDNN named by WEBNN_CUDNN_LIBRARY: no counters
    d.cudnn_emu_calls.restype = ctypes.c_size_t
    d.cudnn_emu_calls.argtypes = [ctypes.c_char_p]
    d.cudnn_emu_live.restype = ctypes.c_long
    d.cudnn_emu_set.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return d


DNN = _emu_cudnn() if GPU else None
# the CPU emulation of the backend (with or without the emulated cuDNN: built
# without cuDNN's headers it loads none, and never a real one)
EMU = GPU and "emu" in os.path.basename(os.environ.get("WEBNN_CUDA_LIBRARY", ""))
DNN_FUNCS = ("cudnnConvolutionForward", "cudnnConvolutionBackwardData",
             "cudnnConvolutionBiasActivationForward")


def dnn_calls():
    return {k: DNN.cudnn_emu_calls(k.encode()) for k in DNN_FUNCS} if DNN else {}


def dnn_delta(before):
    return {k: v - before[k] for k, v in dnn_calls().items()}


def _chain_close(gctx, cctx, build, ins, consts, dt, what):
    """GPU against CPU for a graph build(b, act=...) whose last step is an
    activation: tolerance from the magnitudes of the linear part (the same
    graph on |inputs| without the activation) plus a few roundings of the
    result (the activations are at most 1-Lipschitz)."""
    g = run(gctx, build, ins, consts)
    c = run(cctx, build, ins, consts)
    mags = run(cctx, lambda b, **o: build(b, act=False, **o),
               {k: np.abs(v) for k, v in ins.items()},
               {k: np.abs(v) for k, v in (consts or {}).items()}).astype(np.float64)
    eps = 2.0 ** -23 if dt == "float32" else 2.0 ** -10
    tol = 8 * eps * mags + 4 * eps * np.abs(c.astype(np.float64))
    assert g.dtype == c.dtype and g.shape == c.shape, (g.shape, c.shape)
    err = np.abs(g.astype(np.float64) - c.astype(np.float64))
    bad = err > tol + 1e-30
    assert not np.any(bad), f"{what}: {int(bad.sum())} of {g.size} differ, max {err.max()}"
    return g


_CONV_CASES = [  # symmetric padding: cuDNN (when loaded)
    dict(C=3, O=4, k=(3, 3), groups=1, strides=[1, 1], dilations=[1, 1], padding=[1, 1, 1, 1]),
    dict(C=4, O=6, k=(2, 3), groups=2, strides=[2, 1], dilations=[2, 1], padding=[2, 2, 1, 1]),
    dict(C=6, O=6, k=(3, 3), groups=6, strides=[2, 2], dilations=[1, 1], padding=[1, 1, 0, 0]),
]


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("const_filter", [False, True])
def test_conv_cudnn_layouts(gctx, cctx, dt, transpose, const_filter):
    """Every input and filter layout with groups, depthwise, strides and
    dilations, the filter an input (relaid out per dispatch) or a constant
    (relaid out once at build), with bias; cuDNN where it is loaded."""
    layouts = _CONVT_FILTER if transpose else _CONV_FILTER
    op = "conv_transpose2d" if transpose else "conv2d"
    before = dnn_calls()
    n_graphs = 0
    for case in _CONV_CASES:
        C, O, (kh, kw), grp = case["C"], case["O"], case["k"], case["groups"]
        x = rand((2, C, 6, 7), dt, -2, 2)
        w = rand((C, O // grp, kh, kw) if transpose else (O, C // grp, kh, kw), dt, -2, 2)
        bias = rand((O,), dt, -2, 2)
        for il in ("nchw", "nhwc"):
            xx = x if il == "nchw" else x.transpose(0, 2, 3, 1).copy()
            for fl, perm in layouts.items():
                opts = {"groups": grp, "strides": case["strides"],
                        "dilations": case["dilations"], "padding": case["padding"],
                        "inputLayout": il, "filterLayout": fl}
                if transpose and case["strides"] != [1, 1]:
                    opts["outputPadding"] = [s - 1 for s in case["strides"]]
                ww = w.transpose(perm).copy()

                def build(b, x, w, c, act=True, opts=opts):
                    return getattr(b, op)(x, w, dict(opts, bias=c))
                ins = {"x": xx, "c": bias}
                consts = {"w": ww} if const_filter else None
                if not const_filter:
                    ins["w"] = ww
                _chain_close(gctx, cctx, build, ins, consts, dt, f"{op} {dt} {il} {fl} {case}")
                n_graphs += 1
    if DNN:
        # float16 with a bias: the emulated Find measures IMPLICIT_GEMM best, so
        # conv2d runs the convolution and the epilogue kernel adds the bias
        # (the bias-activation call with IDENTITY only takes
        # IMPLICIT_PRECOMP_GEMM: test_cudnn_half_bias_paths); convTranspose2d
        # (backward data has no bias) keeps the direct kernel
        d = dnn_delta(before)
        if transpose:
            assert d["cudnnConvolutionBackwardData"] == (n_graphs if dt == "float32" else 0), d
        else:
            assert d["cudnnConvolutionForward"] == n_graphs, d
            assert d["cudnnConvolutionBiasActivationForward"] == 0, d


def test_conv_asymmetric_padding_uses_the_direct_kernel(gctx, cctx):
    x, w = rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)
    before = dnn_calls()
    for op, ww, extra in (("conv2d", w, {}),
                          ("conv_transpose2d", w.transpose(1, 0, 2, 3).copy(), {})):
        def build(b, x, w, act=True, op=op):
            return getattr(b, op)(x, w, {"padding": [0, 1, 1, 0]})
        _chain_close(gctx, cctx, build, {"x": x, "w": ww}, None, "float32", op)
    if DNN:
        assert not any(dnn_delta(before).values())


@pytest.mark.parametrize("sizes", [None, [11, 13], [12, 14]])
def test_conv_transpose_output_sizes(gctx, cctx, sizes):
    x, w = rand((1, 3, 6, 7), "float32", -1, 1), rand((3, 2, 3, 3), "float32", -1, 1)
    opts = {"strides": [2, 2], "padding": [1, 1, 1, 1]}
    if sizes:
        opts["outputSizes"] = sizes

    def build(b, x, w, act=True):
        return b.conv_transpose2d(x, w, opts)
    g = _chain_close(gctx, cctx, build, {"x": x, "w": w}, None, "float32", str(sizes))
    assert g.shape[2:] == tuple(sizes or (11, 13))


def _relu6(b, y):
    return b.clamp(y, {"minValue": 0, "maxValue": 6})


_ACTS = {
    "relu": lambda b, y: b.relu(y),
    "relu6": _relu6,
    "sigmoid": lambda b, y: b.sigmoid(y),
    "tanh": lambda b, y: b.tanh(y),
    "clamp": lambda b, y: b.clamp(y, {"minValue": -0.5, "maxValue": 0.75}),
    "leakyRelu": lambda b, y: b.leaky_relu(y, {"alpha": 0.1}),
}


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("chain", ["bias+relu", "bias+relu6", "relu6", "residual+relu",
                                   "bias+residual+relu", "channel+sigmoid", "channel",
                                   "residual", "bias+tanh", "channel+relu", "leakyRelu"])
def test_conv_fused_chains(gctx, cctx, dt, layout, chain):
    """conv2d followed by add (residual or per-channel bias) and an activation,
    fused into one operation on the GPU, against the CPU's separate nodes."""
    parts = chain.split("+")
    act = next((p for p in parts if p in _ACTS), None)
    x = rand((2, 4, 6, 5), dt, -2, 2)
    if layout == "nhwc":
        x = x.transpose(0, 2, 3, 1).copy()
    w = rand((6, 4, 3, 3), dt, -1, 1)
    ins = {"x": x}
    if "bias" in parts:
        ins["bias"] = rand((6,), dt, -1, 1)
    if "residual" in parts:
        ins["z"] = rand((2, 6, 6, 5) if layout == "nchw" else (2, 6, 5, 6), dt, -2, 2)
    if "channel" in parts:
        ins["cb"] = rand((6, 1, 1) if layout == "nchw" else (6,), dt, -2, 2)

    def build(b, x, w, act=True, **o):
        opts = {"padding": [1, 1, 1, 1], "inputLayout": layout}
        if "bias" in parts:
            opts["bias"] = o["bias"]
        y = b.conv2d(x, w, opts)
        if "residual" in parts:
            y = b.add(o["z"], y)
        if "channel" in parts:
            y = b.add(y, o["cb"])
        if act and chain_act:
            y = _ACTS[chain_act](b, y)
        return y
    chain_act = act
    before = dnn_calls()
    _chain_close(gctx, cctx, build, ins, {"w": w}, dt, f"{chain} {layout} {dt}")
    if DNN:
        d = dnn_delta(before)
        one_bias = ("bias" in parts) != ("channel" in parts)
        # float16's bias alone: no IDENTITY call, the emulated Find's choice
        # is not IMPLICIT_PRECOMP_GEMM (test_cudnn_half_bias_paths)
        fused = act in ("relu", "relu6") and one_bias
        assert d["cudnnConvolutionBiasActivationForward"] == int(fused), d
        assert d["cudnnConvolutionForward"] == int(not fused), d


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("act", ["relu", "relu6", "sigmoid"])
def test_conv_transpose_fused(gctx, cctx, dt, act):
    x, w = rand((1, 4, 5, 6), dt, -1, 1), rand((4, 3, 3, 3), dt, -1, 1)
    ins = {"x": x, "bias": rand((3,), dt, -1, 1), "z": rand((1, 3, 11, 13), dt, -1, 1)}

    def build(b, x, bias, z, w, act_=act, act=True):
        y = b.conv_transpose2d(x, w, {"strides": [2, 2], "bias": bias})
        y = b.add(y, z)
        return _ACTS[act_](b, y) if act else y
    _chain_close(gctx, cctx, build, ins, {"w": w}, dt, act)


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("chain", ["matmul+bias+relu", "matmul+residual+tanh", "matmul+relu6",
                                   "gemm+sigmoid", "gemm+c+bias+relu", "matmul+bias",
                                   "matmul3d+bias+relu"])
def test_matmul_gemm_fused_chains(gctx, cctx, dt, chain):
    parts = chain.split("+")
    act = next((p for p in parts if p in _ACTS), None)
    M, K, N = 9, 16, 12
    lead = (3,) if parts[0] == "matmul3d" else ()
    ins = {"a": rand(lead + (M, K), dt, -1, 1)}
    if "bias" in parts:
        ins["bias"] = rand((N,), dt, -1, 1)
    if "residual" in parts:
        ins["z"] = rand(lead + (M, N), dt, -1, 1)
    if "c" in parts:
        ins["c"] = rand((1, N), dt, -1, 1)

    def build(b, a, w, act=True, **o):
        if parts[0] == "gemm":
            y = b.gemm(a, w, {"c": o["c"], "alpha": 0.5, "beta": 2.0} if "c" in parts else {})
        else:
            y = b.matmul(a, w)
        if "bias" in parts:
            y = b.add(y, o["bias"])
        if "residual" in parts:
            y = b.add(y, o["z"])
        if act and chain_act:
            y = _ACTS[chain_act](b, y)
        return y
    chain_act = act
    _chain_close(gctx, cctx, build, ins, {"w": rand((K, N), dt, -1, 1)}, dt, chain)


def test_chains_that_must_not_fuse(gctx, cctx):
    """An intermediate that is also a graph output, or has two consumers,
    keeps the chain apart: every output must still be right."""
    x, w = rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)
    bias, z = rand((4,), "float32", -1, 1), rand((1, 4, 6, 6), "float32", -1, 1)

    def outs_conv(b, x, bias, w):
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias})
        return {"y": y, "r": b.relu(y)}            # intermediate is an output

    def two_uses(b, x, z, w):
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1]})
        s = b.add(y, z)
        return {"r": b.relu(s), "m": b.mul(y, s)}  # y and s: two consumers

    def add_output(b, x, z, w):
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1]})
        s = b.add(y, z)
        return {"s": s, "r": b.sigmoid(s)}         # the add's result is an output

    def mm_twice(b, x, w):
        a = b.reshape(x, [6, 18])
        m = b.matmul(a, b.reshape(w, [18, 6]))
        return {"r": b.relu(b.add(m, m))}           # add(m, m): m used twice

    def grows(b, x, z, w):                         # the add broadcasts y up
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1]})
        return {"r": b.relu(b.add(y, b.reshape(b.concat([z, z], 0), [2, 4, 6, 6])))}

    import inspect
    for f in (outs_conv, two_uses, add_output, mm_twice, grows):
        names = inspect.signature(f).parameters
        ins = {k: v for k, v in {"x": x, "bias": bias, "z": z}.items() if k in names}
        g = run(gctx, f, ins, {"w": w})
        c = run(cctx, f, ins, {"w": w})
        for k in c:
            assert np.allclose(g[k], c[k], rtol=1e-5, atol=1e-5), (f.__name__, k)


def test_cudnn_off_and_fused_fallback(gctx, cctx, monkeypatch):
    """WEBNN_CUDNN=0 (read when a context is created) runs the direct kernel;
    a bias-activation call that cuDNN refuses falls back to the convolution
    and the epilogue kernel, for that dispatch and the later ones."""
    x, w, bias = (rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1),
                  rand((4,), "float32", -1, 1))

    def build(b, x, bias, w, act=True):
        y = b.conv2d(x, w, {"padding": [1, 1, 1, 1], "bias": bias})
        return b.relu(y) if act else y
    monkeypatch.setenv("WEBNN_CUDNN", "0")
    ctx = webnn.ml.create_context(device_type="gpu")
    monkeypatch.delenv("WEBNN_CUDNN")
    before = dnn_calls()
    try:
        _chain_close(ctx, cctx, build, {"x": x, "bias": bias}, {"w": w}, "float32", "off")
    finally:
        ctx.destroy()
    if not DNN:
        return
    assert not any(dnn_delta(before).values())
    DNN.cudnn_emu_set(b"reject_fused", 1)
    try:
        b = webnn.MLGraphBuilder(gctx)
        xi = b.input("x", {"dataType": "float32", "shape": [1, 3, 6, 6]})
        bi = b.input("bias", {"dataType": "float32", "shape": [4]})
        wc = b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, w)
        g = b.build({"out": build(b, xi, bi, wc)})
        ref = run(cctx, build, {"x": x, "bias": bias}, {"w": w})
        before = dnn_calls()
        for _ in range(2):
            got = gctx.compute(g, {"x": x, "bias": bias})["out"]
            assert np.allclose(got, ref, rtol=1e-5, atol=1e-5)
        d = dnn_delta(before)
        assert d["cudnnConvolutionBiasActivationForward"] == 1 and \
            d["cudnnConvolutionForward"] == 2, d
        g.destroy()
    finally:
        DNN.cudnn_emu_set(b"reject_fused", 0)


def test_cudnn_without_an_algorithm_uses_the_direct_kernel(gctx, cctx):
    if not DNN:
        return  # needs the emulated cuDNN's knobs
    x, w = rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)

    def build(b, x, w, act=True):
        return b.relu(b.conv2d(x, w, {"padding": [1, 1, 1, 1]}))
    DNN.cudnn_emu_set(b"no_algo", 1)
    ctx = webnn.ml.create_context(device_type="gpu")  # nothing measured yet
    try:
        before = dnn_calls()
        _chain_close(ctx, cctx, build, {"x": x, "w": w}, None, "float32", "no algorithm")
        assert not any(dnn_delta(before).values())
    finally:
        DNN.cudnn_emu_set(b"no_algo", 0)
        ctx.destroy()


# cuDNN's measured choice (cudnnFind*, cu_dnn.c dnn_find): once per distinct
# convolution shape (dims, strides, pads, dilations, groups, type, layout,
# direction) in a context; WEBNN_CUDNN_FIND=0 keeps the heuristics.
ALGO_FUNCS = ("cudnnFindConvolutionForwardAlgorithm", "cudnnFindConvolutionBackwardDataAlgorithm",
              "cudnnGetConvolutionForwardAlgorithm_v7",
              "cudnnGetConvolutionBackwardDataAlgorithm_v7")


def algo_calls():
    return {k: DNN.cudnn_emu_calls(k.encode()) for k in ALGO_FUNCS}


def _gpu_context(monkeypatch, **env):
    """A new GPU context (nothing measured yet), env set while it is created."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    try:
        return webnn.ml.create_context(device_type="gpu")
    finally:
        for k in env:
            monkeypatch.delenv(k)


def _conv_build(opts, act=None):
    def build(b, x, w, act_=act, act=True, **o):
        y = b.conv2d(x, w, dict(opts, **({"bias": o["bias"]} if "bias" in o else {})))
        return _ACTS[act_](b, y) if act and act_ else y
    return build


def test_cudnn_find_once_per_shape_and_context(cctx, monkeypatch):
    if not DNN:
        return  # needs the emulated cuDNN's counters
    x, w = rand((2, 4, 7, 6), "float32", -1, 1), rand((5, 4, 3, 3), "float32", -1, 1)
    xt, wt = rand((1, 4, 5, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)
    pad = {"padding": [1, 1, 1, 1]}
    nhwc = x.transpose(0, 2, 3, 1).copy()
    graphs = [  # (build, inputs, measured: a shape not seen before in the context)
        (_conv_build(pad), {"x": x, "w": w}, True),
        (_conv_build(pad), {"x": x, "w": w}, False),            # another graph
        (_conv_build(pad, "relu"), {"x": x, "w": w}, False),    # another chain
        (_conv_build(dict(pad, strides=[2, 2])), {"x": x, "w": w}, True),
        (_conv_build(dict(pad, dilations=[2, 1])), {"x": x, "w": w}, True),
        (_conv_build(dict(pad, inputLayout="nhwc")), {"x": nhwc, "w": w}, True),
        (_conv_build(pad), {"x": x.astype(np.float16), "w": w.astype(np.float16)}, True),
        (_conv_build(pad), {"x": x[:1].copy(), "w": w}, True),  # another batch
    ]

    def convt(b, x, w, act=True):
        return b.conv_transpose2d(x, w, {"strides": [2, 2]})
    ctx = _gpu_context(monkeypatch)
    try:
        before = algo_calls()
        for build, ins, _ in graphs:
            dt = str(ins["x"].dtype)
            _chain_close(ctx, cctx, build, ins, None, dt, "find")
        for _ in range(2):
            _chain_close(ctx, cctx, convt, {"x": xt, "w": wt}, None, "float32", "find t")
        d = {k: v - before[k] for k, v in algo_calls().items()}
        assert d == {"cudnnFindConvolutionForwardAlgorithm": sum(m for *_, m in graphs),
                     "cudnnFindConvolutionBackwardDataAlgorithm": 1,
                     "cudnnGetConvolutionForwardAlgorithm_v7": 0,
                     "cudnnGetConvolutionBackwardDataAlgorithm_v7": 0}, d
    finally:
        ctx.destroy()
    # a new context measures again
    ctx = _gpu_context(monkeypatch)
    try:
        before = algo_calls()
        _chain_close(ctx, cctx, graphs[0][0], graphs[0][1], None, "float32", "again")
        assert algo_calls()["cudnnFindConvolutionForwardAlgorithm"] == \
            before["cudnnFindConvolutionForwardAlgorithm"] + 1
    finally:
        ctx.destroy()


def test_cudnn_find_failure_falls_back_to_the_heuristics(cctx, monkeypatch):
    """A Find that fails (its buffers do not fit, ...) leaves the heuristics'
    algorithm, and is not asked again for that shape in the context."""
    if not DNN:
        return  # needs the emulated cuDNN's knobs
    ins = {"x": rand((1, 3, 6, 6), "float32", -1, 1), "w": rand((4, 3, 3, 3), "float32", -1, 1)}
    DNN.cudnn_emu_set(b"find_fail", 1)
    ctx = _gpu_context(monkeypatch)
    try:
        before, algos = dnn_calls(), algo_calls()
        for _ in range(2):
            _chain_close(ctx, cctx, _conv_build({"padding": [1, 1, 1, 1]}), ins, None,
                         "float32", "find failed")
        d = {k: v - algos[k] for k, v in algo_calls().items()}
        assert d["cudnnFindConvolutionForwardAlgorithm"] == 1, d
        assert d["cudnnGetConvolutionForwardAlgorithm_v7"] == 2, d
        assert dnn_delta(before)["cudnnConvolutionForward"] == 2
    finally:
        DNN.cudnn_emu_set(b"find_fail", 0)
        ctx.destroy()


@pytest.mark.parametrize("path", ["find-implicit-gemm", "find-precomp", "heuristics"])
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("act", [None, "relu", "relu6", "sigmoid"])
def test_cudnn_half_bias_paths(cctx, monkeypatch, path, layout, act):
    """float16 conv2d with a bias against the CPU on each path: the measured
    algorithm (the emulated Find returns IMPLICIT_GEMM, or with the knob
    IMPLICIT_PRECOMP_GEMM) or the heuristics (WEBNN_CUDNN_FIND=0).  The bias
    goes into cuDNN's bias-activation call with relu / relu6 (any algorithm)
    or IDENTITY (IMPLICIT_PRECOMP_GEMM only: the measured best, or always
    with the heuristics); else the convolution, then the epilogue kernel."""
    x = rand((2, 6, 7, 5), "float16", -2, 2)
    if layout == "nhwc":
        x = x.transpose(0, 2, 3, 1).copy()
    ins = {"x": x, "bias": rand((8,), "float16", -1, 1)}
    build = _conv_build({"padding": [1, 1, 1, 1], "inputLayout": layout}, act)
    env = {"WEBNN_CUDNN_FIND": "0"} if path == "heuristics" else {}
    if DNN:
        DNN.cudnn_emu_set(b"find_algo", int(path == "find-precomp"))
    ctx = _gpu_context(monkeypatch, **env)
    try:
        before, algos = dnn_calls(), algo_calls() if DNN else {}
        _chain_close(ctx, cctx, build, ins, {"w": rand((8, 6, 3, 3), "float16", -1, 1)},
                     "float16", f"{path} {layout} {act}")
        if DNN:
            d = dnn_delta(before)
            fused = act in ("relu", "relu6") or path != "find-implicit-gemm"
            assert d["cudnnConvolutionBiasActivationForward"] == int(fused), d
            assert d["cudnnConvolutionForward"] == int(not fused), d
            finds = algo_calls()["cudnnFindConvolutionForwardAlgorithm"] - \
                algos["cudnnFindConvolutionForwardAlgorithm"]
            assert finds == int(path != "heuristics")
    finally:
        ctx.destroy()
        if DNN:
            DNN.cudnn_emu_set(b"find_algo", 0)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("act", [None, "relu", "relu6"])
@pytest.mark.parametrize("path", ["default", "fused-refused", "find-precomp", "heuristics",
                                  "heuristics-refused"])
def test_half_bias_rounds_once(cctx, monkeypatch, layout, act, path):
    """float16 conv2d + bias rounds once, after the bias, as the CPU: sums like
    1024 + 0.75 - 1024 give 0.75 exactly, where rounding the convolution to
    float16 first (1025) and then adding the bias would give 1.  Every path
    (the bias broadcast into y and cuDNN's beta 1, the fused call, the
    fallback when the fused call is refused), on the GPU as on the emulation."""
    if not DNN and path not in ("default", "heuristics"):
        return  # the emulated cuDNN's knobs pick the path
    C, O, N, H = 64, 16, 2, 5
    rng = np.random.default_rng(7)
    x = np.zeros((N, C, H, H), np.float16)
    x[:, 0] = 1024
    x[:, 1] = rng.choice([0.25, 0.5, 0.75, -0.25, -0.75], size=(N, H, H))
    w = np.zeros((O, C, 1, 1), np.float16)
    sign = rng.choice([1.0, -1.0], size=O)
    w[:, 0, 0, 0] = sign
    w[:, 1, 0, 0] = rng.choice([1.0, -1.0, 2.0], size=O)
    bias = (-1024 * sign).astype(np.float16)
    if layout == "nhwc":
        x = x.transpose(0, 2, 3, 1).copy()
    ins = {"x": x, "bias": bias}
    build = _conv_build({"inputLayout": layout}, act)
    env = {"WEBNN_CUDNN_FIND": "0"} if path.startswith("heuristics") else {}
    if DNN:
        DNN.cudnn_emu_set(b"find_algo", int(path == "find-precomp"))
        DNN.cudnn_emu_set(b"reject_fused", int(path.endswith("refused")))
    ctx = _gpu_context(monkeypatch, **env)
    try:
        for _ in range(2):  # a refused fused call: its fallback, then the later dispatches
            g = run(ctx, build, ins, {"w": w})
            c = run(cctx, build, ins, {"w": w})
            assert np.array_equal(g, c), (path, layout, act, g.ravel()[:8], c.ravel()[:8])
    finally:
        ctx.destroy()
        if DNN:
            DNN.cudnn_emu_set(b"find_algo", 0)
            DNN.cudnn_emu_set(b"reject_fused", 0)


def _cuda_emu_lib():
    path = os.environ.get("WEBNN_CUDA_LIBRARY", "")
    if not EMU or not path:
        return None
    try:
        lib = ctypes.CDLL(path)  # the loaded one: dlopen returns its handle
        lib.wnn_emu_blas_workspaces.restype = ctypes.c_ulonglong
    except (OSError, AttributeError):
        return None
    return lib


def test_cublas_workspace(cctx, monkeypatch):
    """Each context's cuBLAS handle gets a workspace of its own (once, with
    the handle); products on it agree with the CPU."""
    lib = _cuda_emu_lib()
    a, w = rand((3, 33, 40), "float32", -1, 1), rand((40, 24), "float32", -1, 1)
    ctx = _gpu_context(monkeypatch)
    try:
        n0 = lib.wnn_emu_blas_workspaces() if lib else 0
        for dt in ("float32", "float16"):
            ins = {"a": a.astype(dt), "w": w.astype(dt)}
            g = run(ctx, lambda b, a, w: b.matmul(a, w), ins)
            c = run(cctx, lambda b, a, w: b.matmul(a, w), ins)
            mags = run(cctx, lambda b, a, w: b.matmul(a, w),
                       {k: np.abs(v) for k, v in ins.items()}).astype(np.float64)
            _close(g, c, mags, dt, f"matmul {dt}")
        if lib:
            assert lib.wnn_emu_blas_workspaces() == n0 + 1
    finally:
        ctx.destroy()


# GPU only (the emulation runs cuDNN's definitions, not its kernels): float16
# convolutions with a bias on ResNet-like shapes, where Find picks among the
# real tensor-core algorithms, against the CPU.
_HALF_SHAPES = [  # (C, O, k, stride, H)
    (64, 64, 1, 1, 14), (64, 256, 1, 1, 14), (128, 128, 3, 1, 14), (64, 128, 3, 2, 16),
    (256, 64, 1, 1, 7),
]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("act", [None, "relu", "relu6"])
@pytest.mark.parametrize("shape", _HALF_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_cudnn_half_bias_on_a_gpu(gctx, cctx, layout, act, shape):
    if EMU:
        return  # GPU only: the emulation is checked by test_cudnn_half_bias_paths
    C, O, k, s, H = shape
    x = rand((4, C, H, H), "float16", -1, 1)
    if layout == "nhwc":
        x = x.transpose(0, 2, 3, 1).copy()
    ins = {"x": x, "bias": rand((O,), "float16", -1, 1)}
    opts = {"padding": [k // 2] * 4, "strides": [s, s], "inputLayout": layout}
    w = rand((O, C, k, k), "float16", -1, 1)
    for _ in range(2):  # the fused call refused once (relu6): the fallback, then again
        _chain_close(gctx, cctx, _conv_build(opts, act), ins, {"w": w}, "float16",
                     f"{shape} {layout} {act}")


def test_cudnn_descriptors_are_freed(gctx):
    if not DNN:
        return  # needs the emulated cuDNN's counters
    x, w = rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)
    import gc
    run(gctx, lambda b, x, w: b.conv2d(x, w), {"x": x, "w": w})  # the handle exists
    gc.collect()
    live = DNN.cudnn_emu_live()
    for _ in range(3):
        run(gctx, lambda b, x, w: b.relu(b.conv2d(x, w, {"bias": b.constant(
            {"dataType": "float32", "shape": [4]}, np.ones(4, np.float32))})),
            {"x": x, "w": w})
    gc.collect()
    assert DNN.cudnn_emu_live() == live


def test_cudnn_is_loaded_on_a_gpu(gctx):
    """On a GPU host with cuDNN 9 (system or PyTorch's wheel, see
    scripts/gpu_check.sh) the convolutions run on it: libcudnn is mapped."""
    if EMU or os.environ.get("WEBNN_CUDNN") == "0":
        return  # the emulation (checked by the counters), or cuDNN turned off
    x, w = rand((1, 3, 6, 6), "float32", -1, 1), rand((4, 3, 3, 3), "float32", -1, 1)
    run(gctx, lambda b, x, w: b.conv2d(x, w), {"x": x, "w": w})
    maps = pathlib.Path("/proc/self/maps").read_text()
    if "libcudnn" in maps:
        return
    # Not mapped: that is right only when this host has no loadable cuDNN 9
    # (the backend's own search: $WEBNN_CUDNN_LIBRARY only when set, else
    # libcudnn.so.9, else libcudnn.so).
    names = ([os.environ["WEBNN_CUDNN_LIBRARY"]] if os.environ.get("WEBNN_CUDNN_LIBRARY")
             else ["libcudnn.so.9", "libcudnn.so"])
    loadable = []
    for name in names:
        try:
            ctypes.CDLL(name)
            loadable.append(name)
        except OSError:
            pass
    if not loadable:
        pytest.skip("no cuDNN found on this host (the direct kernels ran)")
    assert not loadable, (f"{loadable} can be loaded on this host, but conv2d on the GPU "
                          "context did not load cuDNN")


@pytest.mark.parametrize("dt", ["float32", "float16", "int8", "uint8"])
def test_resample2d(gctx, cctx, dt):
    if dt not in _limits_dtypes(gctx, "resample2d"):
        pytest.skip("not allowed")
    x = rand((2, 3, 7, 9), dt, -10, 10)
    for mode in ("nearest-neighbor", "linear"):
        for opts in ({"scales": [2.0, 1.5]}, {"sizes": [3, 20]}, {"sizes": [5, 4], "axes": [3, 1]},
                     {"scales": [0.5, 3.0], "axes": [0, 2]}):
            o = dict(opts, mode=mode)
            ulps = 2 if dt.startswith("float") and mode == "linear" else 0
            both(gctx, cctx, lambda b, x: b.resample2d(x, o), {"x": x}, ulps=ulps,
                 what=f"resample2d {dt} {o}")


# ---- recurrent networks ----------------------------------------------------------------------
# float32 products summed in another order than the CPU's, carried through
# the steps: results agree to a few float32 roundings (float16: to one
# float16 rounding of the same float32 value).
def _rnn_close(g, c, dt, what):
    for k in c:
        gk, ck = g[k], c[k]
        assert gk.dtype == ck.dtype and gk.shape == ck.shape, (k, gk.shape, ck.shape)
        g64, c64 = gk.astype(np.float64), ck.astype(np.float64)
        if dt == "float32":
            tol = 2e-5 * (1 + np.abs(c64))
        else:
            tol = 2.0 ** -10 * (1 + np.abs(c64)) * 1.01
        bad = ~(np.abs(g64 - c64) <= tol)
        assert not np.any(bad), (f"{what} [{k}]: {int(bad.sum())} of {gk.size} differ; "
                                 f"max {np.nanmax(np.abs(g64 - c64))}")


_GRU_ACTS = [None, ["sigmoid", "tanh"], ["relu", "sigmoid"], ["tanh", "relu"]]
_LSTM_ACTS = [None, ["sigmoid", "tanh", "tanh"], ["sigmoid", "relu", "tanh"],
              ["tanh", "sigmoid", "relu"]]


def _rnn_operands(dt, T, B, I, H, D, G, lstm, cell):
    s = 1.0 / np.sqrt(H)
    x = rand((B, I) if cell else (T, B, I), dt, -1, 1)
    w = rand((G * H, I) if cell else (D, G * H, I), dt, -s, s)
    r = rand((G * H, H) if cell else (D, G * H, H), dt, -s, s)
    lead = () if cell else (D,)
    opt = {"bias": rand(lead + (G * H,), dt, -0.5, 0.5),
           "recurrentBias": rand(lead + (G * H,), dt, -0.5, 0.5),
           "hidden": rand(lead + (B, H) if not cell else (B, H), dt, -1, 1)}
    if lstm:
        opt["peepholeWeight"] = rand(lead + (3 * H,), dt, -0.5, 0.5)
        opt["cell"] = rand(lead + (B, H) if not cell else (B, H), dt, -1, 1)
    return x, w, r, opt


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
def test_gru(gctx, cctx, dt, direction):
    D = 2 if direction == "both" else 1
    for T, B, I, H in ((5, 3, 4, 6), (3, 17, 9, 33)):
        x, w, r, opt = _rnn_operands(dt, T, B, I, H, D, 3, False, False)
        i = 0
        for layout in ("zrn", "rzn"):
            for reset_after in (True, False):
                for full in (True, False):
                    acts = _GRU_ACTS[i % len(_GRU_ACTS)]
                    i += 1
                    o = {"layout": layout, "resetAfter": reset_after, "direction": direction,
                         "returnSequence": full}
                    if acts:
                        o["activations"] = acts
                    ins = {"x": x, "w": w, "r": r}
                    if full:
                        ins.update(b=opt["bias"], rb=opt["recurrentBias"], h0=opt["hidden"])

                    def build(bl, x, w, r, b=None, rb=None, h0=None, o=o, T=T, H=H):
                        oo = dict(o)
                        if b is not None:
                            oo.update(bias=b, recurrentBias=rb, initialHiddenState=h0)
                        outs = bl.gru(x, w, r, T, H, oo)
                        return dict(zip(("h", "seq"), outs))
                    g, c = run(gctx, build, ins), run(cctx, build, ins)
                    assert set(g) == set(c) == ({"h", "seq"} if full else {"h"})
                    _rnn_close(g, c, dt, f"gru {dt} {T, B, I, H} {o}")


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("direction", ["forward", "backward", "both"])
def test_lstm(gctx, cctx, dt, direction):
    D = 2 if direction == "both" else 1
    for T, B, I, H in ((5, 3, 4, 6), (3, 17, 9, 33)):
        x, w, r, opt = _rnn_operands(dt, T, B, I, H, D, 4, True, False)
        i = 0
        for layout in ("iofg", "ifgo"):
            for full in (True, False):
                acts = _LSTM_ACTS[i % len(_LSTM_ACTS)]
                i += 1
                o = {"layout": layout, "direction": direction, "returnSequence": full}
                if acts:
                    o["activations"] = acts
                ins = {"x": x, "w": w, "r": r}
                if full:
                    ins.update(b=opt["bias"], rb=opt["recurrentBias"], p=opt["peepholeWeight"],
                               h0=opt["hidden"], c0=opt["cell"])

                def build(bl, x, w, r, b=None, rb=None, p=None, h0=None, c0=None, o=o, T=T, H=H):
                    oo = dict(o)
                    if b is not None:
                        oo.update(bias=b, recurrentBias=rb, peepholeWeight=p,
                                  initialHiddenState=h0, initialCellState=c0)
                    outs = bl.lstm(x, w, r, T, H, oo)
                    return dict(zip(("h", "c", "seq"), outs))
                g, c = run(gctx, build, ins), run(cctx, build, ins)
                assert set(g) == set(c) == ({"h", "c", "seq"} if full else {"h", "c"})
                _rnn_close(g, c, dt, f"lstm {dt} {T, B, I, H} {o}")


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_gru_cell(gctx, cctx, dt):
    B, I, H = 5, 7, 11
    x, w, r, opt = _rnn_operands(dt, 1, B, I, H, 1, 3, False, True)
    i = 0
    for layout in ("zrn", "rzn"):
        for reset_after in (True, False):
            for full in (True, False):
                acts = _GRU_ACTS[i % len(_GRU_ACTS)]
                i += 1
                o = {"layout": layout, "resetAfter": reset_after}
                if acts:
                    o["activations"] = acts
                ins = {"x": x, "w": w, "r": r, "h": opt["hidden"]}
                if full:
                    ins.update(b=opt["bias"], rb=opt["recurrentBias"])

                def build(bl, x, w, r, h, b=None, rb=None, o=o):
                    oo = dict(o)
                    if b is not None:
                        oo.update(bias=b, recurrentBias=rb)
                    return {"h": bl.gru_cell(x, w, r, h, H, oo)}
                _rnn_close(run(gctx, build, ins), run(cctx, build, ins), dt,
                           f"gruCell {dt} {o} {full}")


@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_lstm_cell(gctx, cctx, dt):
    B, I, H = 5, 7, 11
    x, w, r, opt = _rnn_operands(dt, 1, B, I, H, 1, 4, True, True)
    i = 0
    for layout in ("iofg", "ifgo"):
        for full in (True, False):
            acts = _LSTM_ACTS[i % len(_LSTM_ACTS)]
            i += 1
            o = {"layout": layout}
            if acts:
                o["activations"] = acts
            ins = {"x": x, "w": w, "r": r, "h": opt["hidden"], "c": opt["cell"]}
            if full:
                ins.update(b=opt["bias"], rb=opt["recurrentBias"], p=opt["peepholeWeight"])

            def build(bl, x, w, r, h, c, b=None, rb=None, p=None, o=o):
                oo = dict(o)
                if b is not None:
                    oo.update(bias=b, recurrentBias=rb, peepholeWeight=p)
                return dict(zip(("h", "c"), bl.lstm_cell(x, w, r, h, c, H, oo)))
            g, c = run(gctx, build, ins), run(cctx, build, ins)
            assert set(g) == set(c) == {"h", "c"}
            _rnn_close(g, c, dt, f"lstmCell {dt} {o} {full}")


# ---- the tensor API on the GPU --------------------------------------------------------------
def test_big_tensor_round_trip(gctx):
    # larger than the 8 MiB staging buffers, and not a multiple of them
    x = RNG.standard_normal(5_000_003).astype(np.float32)
    t = gctx.create_tensor({"dataType": "float32", "shape": [x.size], "readable": True,
                            "writable": True})
    gctx.write_tensor(t, x)
    assert np.array_equal(gctx.read_tensor(t), x)
    b = webnn.MLGraphBuilder(gctx)
    i = b.input("x", {"dataType": "float32", "shape": [x.size]})
    g = b.build({"y": b.neg(i), "z": b.identity(i)})
    r = gctx.compute(g, {"x": x})
    assert np.array_equal(r["y"], -x) and np.array_equal(r["z"], x)


def test_dispatch_repeated_and_chained(gctx, cctx):
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [64, 64]})
    w = b.constant({"dataType": "float32", "shape": [64, 64]},
                   (np.eye(64) * 0.5).astype(np.float32))
    y = b.add(b.matmul(x, w), b.softmax(x, 1))
    g = b.build({"y": y, "y2": y})  # one operand named twice
    desc = {"dataType": "float32", "shape": [64, 64]}
    tx = gctx.create_tensor({**desc, "writable": True})
    ty = gctx.create_tensor({**desc, "readable": True})
    ty2 = gctx.create_tensor({**desc, "readable": True})
    for k in range(5):
        xv = RNG.standard_normal((64, 64)).astype(np.float32) + k
        gctx.write_tensor(tx, xv)
        gctx.dispatch(g, {"x": tx}, {"y": ty, "y2": ty2})
        e = np.exp(xv - xv.max(1, keepdims=True))
        ref = 0.5 * xv + e / e.sum(1, keepdims=True)
        got = gctx.read_tensor(ty)
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-6)
        assert np.array_equal(gctx.read_tensor(ty2), got)


def test_constant_tensor_on_gpu(gctx):
    c = np.arange(12, dtype=np.float32).reshape(3, 4)
    ct = gctx.create_constant_tensor({"dataType": "float32", "shape": [3, 4]}, c)
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [3, 4]})
    g = b.build({"y": b.mul(x, b.constant(ct))})
    ct.destroy()  # the graph keeps its own copy
    assert np.array_equal(gctx.compute(g, {"x": np.full((3, 4), 2, np.float32)})["y"], 2 * c)


def test_two_gpu_contexts_on_threads(cctx):
    def work(seed):
        ctx = webnn.ml.create_context(device_type="gpu")
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((128, 256)).astype(np.float32)
        bm = rng.standard_normal((256, 64)).astype(np.float32)
        out = run(ctx, lambda b, a, c: b.relu(b.matmul(a, c)), {"a": a, "c": bm})
        ctx.destroy()
        ref = np.maximum(a.astype(np.float64) @ bm.astype(np.float64), 0)
        return float(np.max(np.abs(out - ref)))

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        errs = list(ex.map(work, range(6)))
    assert max(errs) < 1e-3


def test_compute_keeps_its_tensors_per_graph(gctx):
    """compute() on a GPU context goes through tensors: one set per graph,
    kept between calls (not a device allocation per call), at most two for
    concurrent callers, each caller's results its own; destroy() of the
    graph destroys them."""
    import threading
    b = webnn.MLGraphBuilder(gctx)
    x = b.input("x", {"dataType": "float32", "shape": [64, 33]})
    g = b.build({"y": b.mul(b.add(x, x), x), "z": b.neg(x)})
    rng = np.random.default_rng(3)
    for _ in range(3):
        v = rng.standard_normal((64, 33)).astype(np.float32)
        out = gctx.compute(g, {"x": v})
        np.testing.assert_allclose(out["y"], (v + v) * v, rtol=1e-6)
        np.testing.assert_array_equal(out["z"], -v)
    assert len(g._tensor_sets) == 1
    kept = g._tensor_sets[0]
    gctx.compute(g, {"x": np.ones((64, 33), np.float32)})
    assert g._tensor_sets == [kept]             # the same tensors again

    errors = []

    def worker(seed):
        r = np.random.default_rng(seed)
        for _ in range(20):
            v = r.standard_normal((64, 33)).astype(np.float32)
            o = gctx.compute(g, {"x": v})
            if not (np.allclose(o["y"], (v + v) * v, rtol=1e-6) and np.array_equal(o["z"], -v)):
                errors.append(seed)
    threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 1 <= len(g._tensor_sets) <= 2
    # a refused call changes nothing
    with pytest.raises(TypeError):
        gctx.compute(g, {"x": np.ones((64, 33), np.float64)})
    assert 1 <= len(g._tensor_sets) <= 2
    sets = list(g._tensor_sets)
    g.destroy()
    assert g._tensor_sets == []
    for tin, tout in sets:
        for t in (*tin.values(), *tout.values()):
            assert _core.tensor_info(t._h)[5]       # destroyed
