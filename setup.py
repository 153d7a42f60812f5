"""Builds webnn._core: the C core (csrc/) and the CPython layer
(webnn/_webnn.c) in one extension, linked against BLIS (Debian's
libblis-dev) and OpenMP.

The CUDA backend (kernels_cuda/) is a separate shared object,
webnn/libwebnn_cuda.so, loaded at run time (dlopen) only when a GPU is asked
for, so the core never links against CUDA.  `build_ext` builds it after the
core when nvcc is found ($NVCC, $CUDA_HOME/bin/nvcc, nvcc on PATH, or
/usr/local/cuda/bin/nvcc): sm_90 code plus compute_90 PTX, linked with
-lcudart -lcublas.  Without nvcc (or with WEBNN_NO_CUDA=1) the step is
skipped with a message; with nvcc, a compile or link error fails the build.

Environment:
  WEBNN_NO_CUDA=1        skip the CUDA backend
  NVCC, CUDA_HOME        where nvcc is
  WEBNN_CUDA_ARCHS       compute capabilities to build for (default "90":
                         sm_90 + compute_90 PTX), e.g. "80 90"
  WEBNN_BLIS_PREFIX      a folder holding Debian's BLIS packages unpacked with
                         `dpkg -x` (usr/include/..., usr/lib/...), for hosts
                         without libblis-dev (scripts/gpu_check.sh)
  WEBNN_SANITIZE=1       ASan + UBSan build of the core
"""
import concurrent.futures
import glob
import os
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
core_sources = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))
core_sources = [s for s in core_sources if os.sep + "tests" + os.sep not in s
                and os.sep + "fuzz" + os.sep not in s]

include_dirs = ["csrc/include", "/usr/include/x86_64-linux-gnu"]
library_dirs = []
runtime_dirs = []
blis_prefix = os.environ.get("WEBNN_BLIS_PREFIX")
if blis_prefix:
    # Debian's layout: the OpenMP flavour under blis-openmp/ (the plain
    # paths are update-alternatives links, which dpkg -x does not make).
    p = os.path.abspath(blis_prefix)
    for flavour in ("blis-openmp", "blis-pthread", "blis-serial", ""):
        inc = os.path.join(p, "usr/include/x86_64-linux-gnu", flavour)
        lib = os.path.join(p, "usr/lib/x86_64-linux-gnu", flavour)
        if os.path.isfile(os.path.join(inc, "blis.h")):
            include_dirs.insert(1, inc)
        if glob.glob(os.path.join(lib, "libblis.so*")):
            library_dirs.append(lib)
            runtime_dirs.append(lib)
    if not library_dirs:
        sys.exit(f"WEBNN_BLIS_PREFIX={blis_prefix}: no libblis.so under "
                 f"{p}/usr/lib/x86_64-linux-gnu/blis-*")

extra_compile = ["-std=c11", "-O3", "-fopenmp", "-D_GNU_SOURCE", "-fvisibility=hidden",
                 "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"]
extra_link = ["-fopenmp"]
if os.environ.get("WEBNN_SANITIZE"):
    extra_compile += ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    extra_link += ["-fsanitize=address,undefined"]

core = Extension(
    "webnn._core",
    sources=core_sources + ["webnn/_webnn.c"],
    include_dirs=include_dirs,
    library_dirs=library_dirs,
    runtime_library_dirs=runtime_dirs,
    libraries=["blis", "m", "pthread", "dl"],
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
)


# ---- the CUDA backend ------------------------------------------------------
CUDA_LIB = "libwebnn_cuda.so"


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


class BuildExtWithCuda(build_ext):
    """build_ext, then kernels_cuda/ into libwebnn_cuda.so next to the core."""

    def run(self):
        super().run()
        self.build_cuda()

    def build_cuda(self):
        out_dir = os.path.dirname(self.get_ext_fullpath("webnn._core"))
        target = os.path.join(out_dir, CUDA_LIB)
        core_headers = (glob.glob(os.path.join(HERE, "csrc", "**", "*.h"), recursive=True)
                        + glob.glob(os.path.join(HERE, "csrc", "**", "*.def"), recursive=True))
        nvcc, why = find_nvcc()
        if not nvcc:
            print(f"webnn: not building the CUDA backend: {why}", flush=True)
            # A library built against older core headers must not be loaded.
            if os.path.exists(target) and os.path.getmtime(target) < _newest(core_headers):
                print(f"webnn: removing the stale {target}", flush=True)
                os.remove(target)
            return
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
        kdir = os.path.join(HERE, "kernels_cuda")
        obj_dir = os.path.join(os.path.abspath(self.build_temp), "cuda")
        os.makedirs(obj_dir, exist_ok=True)
        inc_flags = ["-I" + os.path.join(HERE, "csrc", "include")] + ["-I" + d for d in incs]
        cflags = [cc, "-std=c11", "-O2", "-fPIC", "-fvisibility=hidden", "-D_GNU_SOURCE",
                  "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"] + inc_flags
        nvflags = [nvcc, "-O3", "-std=c++17", "-fmad=false", "-Xcompiler",
                   "-fPIC,-fvisibility=hidden", "-I" + kdir] + gencode
        # The C files: the backend and its own copy of the operator registry.
        c_srcs = (sorted(glob.glob(os.path.join(kdir, "*.c")))
                  + sorted(glob.glob(os.path.join(HERE, "csrc", "ops", "*.c")))
                  + [os.path.join(HERE, "csrc", "core", "dtype.c")])
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
        link += ["-L" + d for d in libs] + ["-Wl,-rpath," + d for d in libs]
        link += ["-lcublas", "-lcudart", "-lpthread", "-lm", "-Wl,--no-undefined"]
        if (force or jobs or not os.path.exists(target)
                or os.path.getmtime(target) < _newest(objs)):
            _run(link, "link " + os.path.relpath(target, HERE))
        print(f"webnn: built the CUDA backend {target} with {nvcc}", flush=True)


setup(ext_modules=[core], cmdclass={"build_ext": BuildExtWithCuda})
