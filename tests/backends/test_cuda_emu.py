"""The CUDA backend on the CPU emulation (kernels_cuda/emu): the backend's
host code and the kernels' sources, compiled for the CPU and linked with a
fake CUDA runtime and cuBLAS (and the emulated cuDNN subset, dlopen'd by the
backend as the real one is), run test_gpu.py's cross-backend tests in a
subprocess (WEBNN_CUDA_LIBRARY=the emulated library), and
test_backend_ops.py's generated cases of every operator against the CPU.  This checks the
backend's graph compilation, the kernels' index arithmetic and semantics and
the row-major / column-major mapping of the cuBLAS calls on any machine with
the CUDA headers; what only a GPU shows (warp and block reductions, the tiled
transpose, asynchronous copies, real cuBLAS) is left to test_gpu.py on a GPU.
test_dlpack_gpu.py (DLPack export of device memory, device-to-device imports)
runs there too, reading the emulation's copy and allocation counters, and
test_cuda_graphs.py (CUDA graph replay: the emulation records a capture and
replays it), with replay on and with WEBNN_CUDA_GRAPHS=0.
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


@pytest.fixture(scope="module")
def emu_env():
    """The environment that loads the emulated backend (built here)."""
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
    return env


def test_cuda_backend_on_the_cpu_emulation(emu_env):
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                        str(ROOT / "tests" / "backends" / "test_gpu.py"), "-k", "not wpt"],
                       env=emu_env, capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    assert " passed" in tail and "skipped" not in tail.splitlines()[-1], tail


def test_backend_ops_on_the_cpu_emulation(emu_env):
    """test_backend_ops.py: every operator of the table, generated cases, on
    the emulated GPU context against the CPU (no case skipped: the backend
    supports every operator, data type and rank of the CPU)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        "--webnn-device=gpu",
                        str(ROOT / "tests" / "backends" / "test_backend_ops.py")],
                       env=emu_env, capture_output=True, text=True, timeout=600, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    last = tail.splitlines()[-1]
    assert " passed" in last and "skipped" not in last, tail
    assert int(last.split(" passed")[0].split()[-1]) >= 1000, tail


@pytest.mark.parametrize("graphs", ["1", "0"], ids=["replay", "graphs-off"])
def test_cuda_graphs_on_the_cpu_emulation(emu_env, graphs):
    """test_cuda_graphs.py: repeated dispatches replayed as a captured CUDA
    graph (counted by the emulation), each graph API call failing in turn;
    with WEBNN_CUDA_GRAPHS=0 every dispatch runs eagerly."""
    env = dict(emu_env, WEBNN_CUDA_GRAPHS=graphs)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        str(ROOT / "tests" / "backends" / "test_cuda_graphs.py")],
                       env=env, capture_output=True, text=True, timeout=600, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    assert " passed" in tail.splitlines()[-1], tail


def test_dlpack_on_the_cpu_emulation(emu_env):
    """test_dlpack_gpu.py: DLPack export of device memory and device-to-device
    imports, on the emulation (every test but the real-GPU PyTorch ones)."""
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                        str(ROOT / "tests" / "backends" / "test_dlpack_gpu.py")],
                       env=emu_env, capture_output=True, text=True, timeout=600, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-30:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    last = tail.splitlines()[-1]
    assert " passed" in last and int(last.split(" passed")[0].split()[-1]) >= 20, tail
    # the only skips are the tests that need a real GPU with PyTorch
    skips = [ln for ln in r.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert all("real GPU and PyTorch" in ln for ln in skips), tail


def test_wpt_vectors_on_the_cpu_emulation(emu_env):
    """The WPT conformance vectors (the project's set and upstream's, every
    operator) on the emulated GPU backend, through the same runner and known
    differences as on the CPU (the builder-validation cases are the core's
    and run on the CPU suite)."""
    env = dict(emu_env, WEBNN_WPT_SETS="conformance,conformance_upstream")
    # the plugin (and its --webnn-device) comes from tests/conftest.py or, with
    # webnn installed, from the pytest11 entry point; naming it with -p too
    # registers it twice where the entry point exists
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--webnn-device=gpu",
                        str(ROOT / "tests" / "wpt" / "test_wpt.py")],
                       env=env, capture_output=True, text=True, timeout=900, cwd=str(ROOT))
    tail = "\n".join(r.stdout.splitlines()[-12:])
    assert r.returncode == 0, tail + r.stderr[-2000:]
    assert "WPT conformance: 1479 run, 1479 passed" in tail, tail
    assert "WPT conformance_upstream: 1911 run" in tail and ", 0 failed" in tail, tail
