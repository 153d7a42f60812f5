"""Smoke test of an installed webnn (a wheel or an sdist install), run by
tests/packaging/test_wheel.sh and test_sdist.sh in a fresh virtual
environment, from a folder outside the checkout:

    python smoke.py [--bundled-blis] [--no-system-blis]

A small graph, a conv2d and a matmul against NumPy on the CPU; then, from
the process's loaded libraries (/proc/self/maps), which BLIS ran them:
  --bundled-blis    the one the wheel carries (site-packages/webnn.libs/),
                    and no other libblis is mapped; on a CPU with AVX-512 that
                    BLIS runs its skx kernels (webnn sets BLIS_ARCH_TYPE=skx
                    before BLIS initialises, csrc/cpu/blis/sgemm.c)
  --no-system-blis  the system's libblis cannot even be opened in this process
                    (test_wheel.sh hides it in a private mount namespace)
The GPU library must not be loaded by any of it (CPU context)."""
import ctypes
import os
import sys
import time

t0 = time.perf_counter()
import numpy as np  # noqa: E402

t1 = time.perf_counter()
import webnn  # noqa: E402

t2 = time.perf_counter()
args = set(sys.argv[1:])
pkg = os.path.dirname(os.path.abspath(webnn.__file__))
here = os.path.dirname(os.path.abspath(__file__))
assert not pkg.startswith(os.path.dirname(os.path.dirname(here))), \
    f"webnn was imported from the checkout ({pkg}), not from the installed package"
print(f"webnn {webnn.__version__} from {pkg}; import numpy {t1 - t0:.3f} s, "
      f"import webnn {t2 - t1:.3f} s")

ctx = webnn.ml.create_context(device_type="cpu")
rng = np.random.default_rng(0)

# a small graph: relu(x @ w + b)
b = webnn.MLGraphBuilder(ctx)
x = b.input("x", {"dataType": "float32", "shape": [2, 3]})
w = rng.standard_normal((3, 4)).astype(np.float32)
bias = rng.standard_normal((4,)).astype(np.float32)
y = b.relu(b.add(b.matmul(x, b.constant({"dataType": "float32", "shape": [3, 4]}, w)),
                 b.constant({"dataType": "float32", "shape": [4]}, bias)))
g = b.build({"y": y})
xv = rng.standard_normal((2, 3)).astype(np.float32)
out = ctx.compute(g, {"x": xv})["y"]
np.testing.assert_allclose(out, np.maximum(xv @ w + bias, 0), rtol=1e-5, atol=1e-6)

# conv2d (nchw, oihw, padding 1) against a direct NumPy loop
b = webnn.MLGraphBuilder(ctx)
inp = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
fv = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
c = b.conv2d(inp, b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, fv),
             {"padding": [1, 1, 1, 1]})
g = b.build({"y": c})
xv = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
out = ctx.compute(g, {"x": xv})["y"]
xp = np.pad(xv.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
ref = np.zeros((1, 4, 8, 8))
for i in range(8):
    for j in range(8):
        ref[0, :, i, j] = np.tensordot(fv, xp[0, :, i:i + 3, j:j + 3], axes=([1, 2, 3], [0, 1, 2]))
np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)

# a matmul large enough to go through BLIS's sgemm
b = webnn.MLGraphBuilder(ctx)
a = b.input("a", {"dataType": "float32", "shape": [256, 192]})
bb = b.input("b", {"dataType": "float32", "shape": [192, 160]})
g = b.build({"c": b.matmul(a, bb)})
av = rng.standard_normal((256, 192)).astype(np.float32)
bv = rng.standard_normal((192, 160)).astype(np.float32)
out = ctx.compute(g, {"a": av, "b": bv})["c"]
np.testing.assert_allclose(out, av.astype(np.float64) @ bv.astype(np.float64), rtol=1e-4, atol=1e-3)
print("graph, conv2d, matmul: match NumPy")

maps = set()
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/"):
            maps.add(parts[5].strip())
blis = sorted(p for p in maps if "libblis" in os.path.basename(p))
print("libblis mapped:", blis)
assert blis, "no libblis is mapped"
assert not any("libwebnn_cuda" in p or "libcudart" in p for p in maps), \
    "the GPU library was loaded for a CPU context"

if "--bundled-blis" in args:
    libs = os.path.join(os.path.dirname(pkg), "webnn.libs")
    assert all(os.path.dirname(p) == libs for p in blis), \
        f"a libblis outside {libs} is mapped: {blis}"
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    lib = ctypes.CDLL(blis[0])  # the same, already loaded, copy
    lib.bli_arch_query_id.restype = ctypes.c_int
    lib.bli_arch_string.restype = ctypes.c_char_p
    lib.bli_arch_string.argtypes = [ctypes.c_int]
    arch = lib.bli_arch_string(lib.bli_arch_query_id()).decode()
    print("BLIS kernels:", arch)
    if {"avx512f", "avx512dq", "avx512bw", "avx512vl"} <= flags and "BLIS_ARCH_TYPE" not in os.environ:
        assert arch == "skx", f"AVX-512 CPU but BLIS runs its {arch} kernels"

if "--no-system-blis" in args:
    for name in ("libblis.so.4", "libblis.so.3", "libblis.so"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        sys.exit(f"the system's {name} can be loaded: the check proves nothing")
    print("the system's libblis cannot be loaded in this process")

print("smoke test passed")
