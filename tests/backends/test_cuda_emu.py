"""The CUDA backend on the CPU emulation (kernels_cuda/emu): the backend's
host code and the kernels' sources, compiled for the CPU and linked with a
fake CUDA runtime and cuBLAS (and the emulated cuDNN subset, dlopen'd by the
backend as the real one is), run test_gpu.py's cross-backend tests in a
subprocess (WEBNN_CUDA_LIBRARY=the emulated library).  This checks the
backend's graph compilation, the kernels' index arithmetic and semantics and
the row-major / column-major mapping of the cuBLAS calls on any machine with
the CUDA headers; what only a GPU shows (warp and block reductions, the tiled
transpose, asynchronous copies, real cuBLAS) is left to test_gpu.py on a GPU.
Skipped without the CUDA headers or a C/C++ compiler."""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import webnn

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
BUILD = ROOT / "kernels_cuda" / "emu" / "build_emu.py"
PKG = pathlib.Path(webnn.__file__).resolve().parent


def test_cuda_backend_on_the_cpu_emulation():
    if not BUILD.exists():
        pytest.skip("kernels_cuda/emu is not in this tree")
    if not (shutil.which(os.environ.get("CC", "gcc")) and shutil.which(os.environ.get("CXX", "g++"))):
        pytest.skip("no C / C++ compiler")
    r = subprocess.run([sys.executable, str(BUILD)], capture_output=True, text=True, timeout=600)
    if r.returncode == 2:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    lib = r.stdout.strip().splitlines()[-1]
    # the emulated backend loads the emulated cuDNN by default (never a real
    # libcudnn: scripts/gpu_check.sh may point WEBNN_CUDNN_LIBRARY at one)
    env = dict(os.environ, WEBNN_CUDA_LIBRARY=lib, WEBNN_CUDNN_LIBRARY="")
    env["PYTHONPATH"] = str(PKG.parent) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        str(ROOT / "tests" / "backends" / "test_gpu.py"), "-k", "not wpt"],
                       env=env, capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    assert " passed" in tail and "skipped" not in tail.splitlines()[-1], tail
