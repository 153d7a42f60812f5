"""`import webnn` loads no GPU library (its time is measured by
benchmarks/bench_import.py, not asserted here), and on a broken install says
which library is missing.  Each case runs in a fresh interpreter."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

import webnn

PKG = pathlib.Path(webnn.__file__).resolve().parent
CORES = sorted(PKG.glob("_core*.so"))


def run(code, env_extra=None, path=None):
    env = dict(os.environ)
    env.pop("WEBNN_CUDA_LIBRARY", None)
    env["PYTHONPATH"] = str(path or PKG.parent)
    env.update(env_extra or {})
    # from / : `python -c` puts the working folder first on sys.path
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd="/",
                          capture_output=True, text=True, timeout=120)


def mapped(maps_text):
    return {line.split(maxsplit=5)[5] for line in maps_text.splitlines()
            if len(line.split(maxsplit=5)) == 6}


def test_import_and_cpu_work_load_no_gpu_library():
    r = run("""
        import numpy as np, webnn
        after_import = open("/proc/self/maps").read()
        ctx = webnn.ml.create_context(device_type="cpu")
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", {"dataType": "float32", "shape": [4, 4]})
        g = b.build({"y": b.matmul(x, x)})
        ctx.compute(g, {"x": np.ones((4, 4), np.float32)})
        print(after_import)
        print("=====")
        print(open("/proc/self/maps").read())
    """)
    assert r.returncode == 0, r.stderr
    at_import, after_cpu = r.stdout.split("=====")
    for text in (at_import, after_cpu):
        libs = mapped(text)
        assert any("_core" in p for p in libs)
        bad = [p for p in libs if re.search(r"libwebnn_cuda|libcudart|libcublas|libcudnn|libcuda\.so", p)]
        assert not bad, f"a GPU library is loaded without a GPU context: {bad}"


@pytest.fixture
def package_copy(tmp_path):
    """The Python files of the package in a folder of their own."""
    dst = tmp_path / "webnn"
    dst.mkdir()
    for f in PKG.glob("*.py"):
        shutil.copy(f, dst)
    return dst


def test_unbuilt_checkout(package_copy):
    r = run("import webnn", path=package_copy.parent)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: webnn: the compiled core"), r.stderr
    assert "make build" in last and "pip install" in last, last


@pytest.mark.skipif(not CORES, reason="the core is not built")
def test_missing_blis(package_copy):
    """The core built against BLIS, with BLIS not there: its NEEDED entry is
    renamed in a copy (same length), so the loader cannot find it."""
    data = CORES[0].read_bytes()
    m = re.search(rb"libblis(-[0-9a-f]+)?\.so\.(\d)", data)
    if not m:
        pytest.skip("the core does not name libblis (statically linked?)")
    gone = m.group(0)[:-1] + (b"8" if m.group(0)[-1:] != b"8" else b"7")
    (package_copy / CORES[0].name).write_bytes(data.replace(m.group(0), gone))
    r = run("import webnn", path=package_copy.parent)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: webnn: cannot load the compiled core"), r.stderr
    assert f"the shared library {gone.decode()} is missing" in last, last
    for hint in ("apt-get install libblis4", "dnf install blis", "conda install", "pip install webnn"):
        assert hint in last, last
    # the loader's own message is kept as the cause
    assert "cannot open shared object file" in r.stderr
