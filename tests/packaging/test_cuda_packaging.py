"""The GPU backend finds CUDA without naming the build machine's: its RUNPATH
points only into the NVIDIA wheels of `pip install webnn[cuda]`
(site-packages/nvidia/cu13/lib, nvidia/cudnn/lib), and registry.c falls back
to a CUDA toolkit's folders ($CUDA_HOME, /usr/local/cuda) when the loader's
own search does not find the libraries.  No GPU is needed: the library loads,
then the missing driver or device gives NotSupportedError naming the cause."""
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

import webnn

PKG = pathlib.Path(webnn.__file__).resolve().parent
CUDA_LIB = PKG / "libwebnn_cuda.so"
CORES = sorted(PKG.glob("_core*.so"))
needs_lib = pytest.mark.skipif(not CUDA_LIB.exists(), reason="libwebnn_cuda.so was not built")
needs_no_gpu = pytest.mark.skipif(bool(CORES) and webnn._core.device_available("gpu"),
                                  reason="a usable GPU is present")

GPU_SCRIPT = textwrap.dedent("""
    import webnn
    try:
        webnn.ml.create_context(device_type="gpu")
    except webnn.NotSupportedError as e:
        print("NotSupportedError:", e)
    else:
        print("GPU context")
    maps = {l.split(maxsplit=5)[5].strip() for l in open("/proc/self/maps")
            if len(l.split(maxsplit=5)) == 6}
    for p in sorted(maps):
        if "libcudart" in p or "libcublas" in p or "libwebnn_cuda" in p:
            print("mapped:", p)
""")


def readelf_dynamic(path):
    readelf = shutil.which("readelf")
    if not readelf:
        pytest.skip("no readelf")
    return subprocess.run([readelf, "-d", str(path)], capture_output=True, text=True,
                          check=True).stdout


@needs_lib
def test_runpath_is_only_the_nvidia_wheels():
    d = readelf_dynamic(CUDA_LIB)
    runpath = [line for line in d.splitlines() if "(RUNPATH)" in line or "(RPATH)" in line]
    assert len(runpath) == 1, runpath
    dirs = runpath[0].split("[", 1)[1].rstrip("]").split(":")
    assert dirs == ["$ORIGIN/../nvidia/cu13/lib", "$ORIGIN/../nvidia/cudnn/lib"], dirs
    assert "/usr/local/cuda" not in d


def system_cuda_libs():
    """The CUDA libraries libwebnn_cuda.so needs, from a toolkit on this machine."""
    d = readelf_dynamic(CUDA_LIB)
    needed = [line.split("[", 1)[1].rstrip("]") for line in d.splitlines() if "(NEEDED)" in line]
    cuda = [n for n in needed if n.startswith(("libcudart", "libcublas"))]
    out = {}
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        for sub in ("lib64", "targets/x86_64-linux/lib"):
            for n in cuda + [n.replace("libcublas", "libcublasLt") for n in cuda
                             if n.startswith("libcublas")]:
                p = pathlib.Path(root or "/nonexistent", sub, n)
                if n not in out and p.exists():
                    out[n] = p.resolve()
    if len(out) < len(cuda) + 1:
        pytest.skip("no CUDA toolkit libraries on this machine to lay out as wheels")
    return out


def run_in(site, env_extra=None, prefix=()):
    env = dict(os.environ)
    for k in ("WEBNN_CUDA_LIBRARY", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH"):
        env.pop(k, None)
    env["PYTHONPATH"] = str(site)
    env.update(env_extra or {})
    return subprocess.run(list(prefix) + [sys.executable, "-c", GPU_SCRIPT], env=env, cwd="/",
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def site(tmp_path):
    """site-packages as pip lays it out: webnn/ (the Python files, the core,
    libwebnn_cuda.so) and nvidia/cu13/lib/ (what nvidia-cuda-runtime and
    nvidia-cublas install; here links to this machine's toolkit)."""
    s = tmp_path / "site-packages"
    (s / "webnn").mkdir(parents=True)
    for f in list(PKG.glob("*.py")) + CORES + [CUDA_LIB]:
        shutil.copy(f, s / "webnn")
    return s


@needs_lib
@needs_no_gpu
def test_finds_the_nvidia_wheel_layout(site):
    libs = system_cuda_libs()
    lib = site / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    for name, real in libs.items():
        (lib / name).symlink_to(real)
    r = run_in(site, {"LD_DEBUG": "libs"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert "NotSupportedError: createContext" in r.stdout and "no usable GPU: CUDA" in r.stdout, r.stdout
    # the loader took each CUDA library from the wheel layout, through the RUNPATH
    for name in libs:
        want = f"{site}/webnn/../nvidia/cu13/lib/{name}"
        assert f"trying file={want}" in r.stderr, (name, r.stderr[-3000:])
        assert f"calling init: {want}" in r.stderr, (name, r.stderr[-3000:])


def private_ld_cache_without_cuda(tmp_path):
    """(prefix, setup) to run a command where the loader's cache and paths do
    not know the CUDA toolkit: a private mount namespace (root) with an
    ld.so.cache built from ld.so.conf minus the CUDA folders."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ldconfig"):
        pytest.skip("needs root, unshare and ldconfig")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    dirs = []
    for conf in sorted(pathlib.Path("/etc/ld.so.conf.d").glob("*.conf")):
        for line in conf.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#") and "cuda" not in line:
                dirs.append(line)
    conf = tmp_path / "ld.so.conf"
    conf.write_text("\n".join(dirs) + "\n")
    cache = tmp_path / "ld.so.cache"
    subprocess.run(["ldconfig", "-f", str(conf), "-C", str(cache)], check=True,
                   capture_output=True)
    return cache


@needs_lib
@needs_no_gpu
def test_system_toolkit_outside_the_loader_path(tmp_path):
    """A toolkit that is not in ld.so.conf: registry.c loads the libraries from
    /usr/local/cuda (or $CUDA_HOME); with no toolkit there either, the error
    names the missing library and what to install."""
    system_cuda_libs()
    cache = private_ld_cache_without_cuda(tmp_path)
    script = f"mount --bind {cache} /etc/ld.so.cache && exec \"$@\""
    prefix = ["unshare", "-m", "sh", "-c", script, "sh"]
    r = run_in(PKG.parent, prefix=prefix)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no usable GPU: CUDA" in r.stdout, r.stdout  # loaded, then no driver / device
    assert any(line.startswith("mapped:") and "libcudart" in line for line in r.stdout.splitlines())
    # also hide /usr/local/cuda: nothing left to find
    empty = tmp_path / "empty"
    empty.mkdir()
    script = (f"mount --bind {cache} /etc/ld.so.cache && mount --bind {empty} "
              f"$(readlink -f /usr/local/cuda) && exec \"$@\"")
    r = run_in(PKG.parent, prefix=["unshare", "-m", "sh", "-c", script, "sh"])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no usable GPU: cannot load" in r.stdout and "not found (pip install 'webnn[cuda]'" \
        in r.stdout, r.stdout
