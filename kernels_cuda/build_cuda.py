"""Build the CUDA backend: kernels_cuda/*.cu (nvcc) and *.c into
libwebnn_cuda.so.  No source of the core is linked in: the core exports
nothing, and gives the library the services it needs (the operator table,
errors, data type sizes) through a versioned table at load time
(wnn_core_services, csrc/backend/backend.h).  cuDNN is not linked:
kernels_cuda/cudnn_dl.c loads it at run time.
setup.py's build_ext calls build() after the core; this file also runs on
its own (no setuptools needed):

    python kernels_cuda/build_cuda.py [--out webnn/libwebnn_cuda.so] [--obj build/cuda]

Environment:
  WEBNN_NO_CUDA=1      skip (also: no nvcc found)
  NVCC, CUDA_HOME      where nvcc is (else nvcc on PATH, /usr/local/cuda/bin)
  WEBNN_CUDA_ARCHS     compute capabilities (default "90": sm_90 code plus
                       compute_90 PTX), e.g. "80 90"
  WEBNN_NVCC_FLAGS     extra nvcc flags (e.g. -allow-unsupported-compiler)
  CC, CXX              host compilers (gcc, g++)
  WEBNN_VERBOSE=1      print every command
Without nvcc the build is skipped with a message (and a library older than
the core's headers is removed, so that a stale one is never loaded); with
nvcc, any compile or link error raises.
The library's RUNPATH points only into the environment's NVIDIA wheels
(RUNPATH below), never at the CUDA it was built with.
"""
import argparse
import concurrent.futures
import glob
import os
import shlex
import shutil
import subprocess
import sys

KDIR = os.path.dirname(os.path.abspath(__file__))
HERE = os.path.dirname(KDIR)  # the repository root
CUDA_LIB = "libwebnn_cuda.so"
# Where `pip install webnn[cuda]` puts NVIDIA's libraries, relative to
# site-packages/webnn/libwebnn_cuda.so: nvidia-cuda-runtime and nvidia-cublas
# (CUDA 13) in nvidia/cu13/lib, nvidia-cudnn-cu13 in nvidia/cudnn/lib (cuDNN is
# dlopen'd by kernels_cuda/cudnn_dl.c, which this RUNPATH also serves).
RUNPATH = ["$ORIGIN/../nvidia/cu13/lib", "$ORIGIN/../nvidia/cudnn/lib"]


def find_nvcc():
    if os.environ.get("WEBNN_NO_CUDA", "") not in ("", "0"):
        return None, "WEBNN_NO_CUDA is set"
    cands = []
    if os.environ.get("NVCC"):
        cands.append(os.environ["NVCC"])
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands.append(os.path.join(os.environ[var], "bin", "nvcc"))
    if shutil.which("nvcc"):
        cands.append(shutil.which("nvcc"))
    cands.append("/usr/local/cuda/bin/nvcc")
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.realpath(c), None
    return None, "nvcc was not found ($NVCC, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin)"


def cuda_dirs(nvcc):
    root = os.path.dirname(os.path.dirname(nvcc))
    incs = [d for d in (os.path.join(root, "include"),
                        os.path.join(root, "targets", "x86_64-linux", "include"))
            if os.path.isdir(d)]
    libs = []
    for d in (os.path.join(root, "lib64"), os.path.join(root, "lib"),
              os.path.join(root, "targets", "x86_64-linux", "lib")):
        if glob.glob(os.path.join(d, "libcudart.so*")) and \
                os.path.realpath(d) not in [os.path.realpath(x) for x in libs]:
            libs.append(d)
    return root, incs, libs


def _newest(paths):
    return max((os.path.getmtime(p) for p in paths), default=0.0)


def _run(cmd, what):
    print(f"webnn: {what}", flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or (r.stdout and os.environ.get("WEBNN_VERBOSE")):
        print(" ".join(shlex.quote(c) for c in cmd), flush=True)
    if r.stdout:
        print(r.stdout, end="", flush=True)
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} failed (exit {r.returncode}) on {what}")


def build(target, obj_dir):
    """Build libwebnn_cuda.so at `target` (objects in obj_dir); returns the
    path, or None when skipped (no nvcc, WEBNN_NO_CUDA).  Raises on a
    compile or link error."""
    core_headers = (glob.glob(os.path.join(HERE, "csrc", "**", "*.h"), recursive=True)
                    + glob.glob(os.path.join(HERE, "csrc", "**", "*.def"), recursive=True))
    nvcc, why = find_nvcc()
    if not nvcc:
        print(f"webnn: not building the CUDA backend: {why}", flush=True)
        # A library built against older core headers must not be loaded.
        if os.path.exists(target) and os.path.getmtime(target) < _newest(core_headers):
            print(f"webnn: removing the stale {target}", flush=True)
            os.remove(target)
        return None
    root, incs, libs = cuda_dirs(nvcc)
    if not libs:
        raise RuntimeError(f"nvcc at {nvcc} but no libcudart.so under {root}")
    archs = os.environ.get("WEBNN_CUDA_ARCHS", "90").replace(",", " ").split()
    gencode = []
    for a in archs:
        gencode += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    gencode += ["-gencode", f"arch=compute_{archs[-1]},code=compute_{archs[-1]}"]
    cc = os.environ.get("CC") or shutil.which("gcc") or "cc"
    cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
    kdir = KDIR
    os.makedirs(obj_dir, exist_ok=True)
    inc_flags = ["-I" + os.path.join(HERE, "csrc", "include")] + ["-I" + d for d in incs]
    cflags = [cc, "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-D_GNU_SOURCE",
              "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"] + inc_flags
    nvflags = [nvcc, "-O3", "-std=c++17", "-fmad=false", "-Xcompiler",
               "-fPIC,-fvisibility=hidden", "-I" + kdir] + gencode
    nvflags += shlex.split(os.environ.get("WEBNN_NVCC_FLAGS", ""))
    # The C files: the backend only (the core's services come through the
    # table given to wnn_cuda_backend_init at load time, backend.h).
    c_srcs = sorted(glob.glob(os.path.join(kdir, "*.c")))
    cu_srcs = sorted(glob.glob(os.path.join(kdir, "*.cu")))
    k_headers = glob.glob(os.path.join(kdir, "*.h")) + glob.glob(os.path.join(kdir, "*.cuh"))
    stamp = os.path.join(obj_dir, "flags")
    flags_now = repr((cflags, nvflags))
    force = not os.path.exists(stamp) or open(stamp).read() != flags_now
    jobs, objs = [], []
    for src in c_srcs + cu_srcs:
        rel = os.path.relpath(src, HERE).replace(os.sep, "_")
        obj = os.path.join(obj_dir, rel + ".o")
        objs.append(obj)
        is_cu = src.endswith(".cu")
        deps = [src] + k_headers + ([] if is_cu else core_headers)
        if force or not os.path.exists(obj) or os.path.getmtime(obj) < _newest(deps):
            what = ("nvcc " if is_cu else "cc ") + os.path.relpath(src, HERE)
            jobs.append(((nvflags if is_cu else cflags) + ["-c", src, "-o", obj], what))
    # nvcc jobs first: they are the slow ones
    jobs.sort(key=lambda j: not j[1].startswith("nvcc"))
    workers = max(1, min(len(jobs), os.cpu_count() or 1))
    if jobs:
        with concurrent.futures.ThreadPoolExecutor(workers) as ex:
            for f in [ex.submit(_run, *j) for j in jobs]:
                f.result()
    with open(stamp, "w") as f:
        f.write(flags_now)
    link = [cxx, "-shared", "-o", target] + objs
    # RUNPATH: only the environment's NVIDIA wheels, relative to this library
    # (never the build machine's CUDA); a system CUDA is found by the loader's
    # usual search or by csrc/backend/registry.c's fallback ($CUDA_HOME, /usr/local/cuda)
    link += ["-L" + d for d in libs] + ["-Wl,-rpath," + ":".join(RUNPATH)]
    link += ["-lcublas", "-lcudart", "-ldl", "-lpthread", "-lm", "-Wl,--no-undefined"]
    if (force or jobs or not os.path.exists(target)
            or os.path.getmtime(target) < _newest(objs)):
        _run(link, "link " + os.path.relpath(target, HERE))
    print(f"webnn: built the CUDA backend {target} with {nvcc}", flush=True)
    return target


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "webnn", CUDA_LIB))
    ap.add_argument("--obj", default=os.path.join(HERE, "build", "cuda"))
    args = ap.parse_args()
    try:
        build(os.path.abspath(args.out), os.path.abspath(args.obj))
    except RuntimeError as e:
        sys.exit(f"build_cuda: {e}")


if __name__ == "__main__":
    main()
