"""Loading the CUDA backend: the CPU-only paths.

The core never links against CUDA; csrc/backend/registry.c dlopen()s
libwebnn_cuda.so (or WEBNN_CUDA_LIBRARY) only when a GPU is asked for.  Each
case runs in a fresh interpreter (the library is looked up once per process)
and checks that `import webnn` and the CPU work, that the default context
falls back to the CPU, and that device_type="gpu" raises NotSupportedError
naming the reason."""
import glob
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

import webnn

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PKG = pathlib.Path(webnn.__file__).resolve().parent
CUDA_LIB = PKG / "libwebnn_cuda.so"

SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import webnn
    from webnn import _core
    assert not _core.device_available("gpu")
    ctx = webnn.ml.create_context()
    assert ctx.device_type == "cpu", ctx.device_type
    b = webnn.MLGraphBuilder(ctx)
    x = b.input("x", {"dataType": "float32", "shape": [2, 2]})
    g = b.build({"y": b.matmul(x, x)})
    y = ctx.compute(g, {"x": np.array([[1, 2], [3, 4]], np.float32)})["y"]
    assert y.tolist() == [[7, 10], [15, 22]], y
    try:
        webnn.ml.create_context(device_type="gpu")
    except webnn.NotSupportedError as e:
        print("NotSupportedError:", e)
    else:
        sys.exit("a GPU context was created")
""")


def run_script(env_extra):
    env = dict(os.environ)
    env.pop("WEBNN_CUDA_LIBRARY", None)
    env.update(env_extra)
    env["PYTHONPATH"] = str(PKG.parent) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_missing_library(tmp_path):
    out = run_script({"WEBNN_CUDA_LIBRARY": str(tmp_path / "missing.so")})
    assert "no usable GPU" in out and "cannot load" in out and "missing.so" in out


def test_library_that_is_not_a_shared_object(tmp_path):
    bad = tmp_path / "libwebnn_cuda.so"
    bad.write_text("not an ELF file\n")
    out = run_script({"WEBNN_CUDA_LIBRARY": str(bad)})
    assert "no usable GPU" in out and "cannot load" in out


def test_library_without_the_entry_point():
    libm = next(iter(glob.glob("/lib/x86_64-linux-gnu/libm.so.6")
                     + glob.glob("/usr/lib64/libm.so.6")
                     + glob.glob("/lib64/libm.so.6")), None)
    if not libm:
        pytest.skip("no libm.so.6 to load")
    out = run_script({"WEBNN_CUDA_LIBRARY": libm})
    assert "no usable GPU" in out and "no backend entry" in out


@pytest.mark.skipif(not CUDA_LIB.exists(), reason="libwebnn_cuda.so was not built")
@pytest.mark.skipif(webnn._core.device_available("gpu"), reason="a usable GPU is present")
def test_built_library_without_a_gpu():
    # the real library loads, finds no device or driver and says so
    out = run_script({})
    assert "no usable GPU" in out, out


def test_core_does_not_link_cuda():
    cores = glob.glob(str(PKG / "_core*.so"))
    assert cores
    for core in cores:
        data = pathlib.Path(core).read_bytes()
        for name in (b"libcudart", b"libcublas", b"libcudnn", b"libcuda.so"):
            assert name not in data, f"{core} refers to {name!r}"


@pytest.mark.skipif(not CUDA_LIB.exists(), reason="libwebnn_cuda.so was not built")
def test_library_exports_only_the_entry_points():
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("no nm")
    r = subprocess.run([nm, "-D", "--defined-only", str(CUDA_LIB)], capture_output=True,
                       text=True, check=True)
    names = {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}
    names = {n for n in names if not n.startswith("_")}
    # init takes the core's services table at load time (backend.h), create
    # makes a backend
    assert names == {"wnn_cuda_backend_init", "wnn_cuda_backend_create"}, names


@pytest.mark.skipif(not CUDA_LIB.exists(), reason="libwebnn_cuda.so was not built")
def test_library_does_not_need_cudnn():
    """cuDNN is dlopen'd when a convolution is compiled (kernels_cuda/cudnn_dl.c),
    never a load-time dependency: the backend works where cuDNN is absent."""
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("no readelf")
    r = subprocess.run([readelf, "-d", str(CUDA_LIB)], capture_output=True, text=True,
                       check=True)
    needed = [line for line in r.stdout.splitlines() if "(NEEDED)" in line]
    assert needed and not any("cudnn" in line for line in needed), needed
