"""Builds webnn._core: the C core (csrc/) and the CPython layer
(webnn/_webnn.c) in one extension, linked against BLIS (Debian's
libblis-dev); the CPU kernels thread on their own pool (csrc/cpu/pool.c),
OpenMP is only used for `#pragma omp simd` (-fopenmp-simd, no runtime).

The CUDA backend (kernels_cuda/) is a separate shared object,
webnn/libwebnn_cuda.so, loaded at run time (dlopen) only when a GPU is asked
for, so the core never links against CUDA.  `build_ext` builds it after the
core with kernels_cuda/build_cuda.py when nvcc is found ($NVCC,
$CUDA_HOME/bin/nvcc, nvcc on PATH, or /usr/local/cuda/bin/nvcc): sm_90 code
plus compute_90 PTX, linked with -lcudart -lcublas.  Without nvcc (or with
WEBNN_NO_CUDA=1) the step is skipped with a message; with nvcc, a compile or
link error fails the build.  See build_cuda.py for its variables
(WEBNN_NO_CUDA, NVCC, CUDA_HOME, WEBNN_CUDA_ARCHS, WEBNN_NVCC_FLAGS).

Environment:
  WEBNN_BLIS_PREFIX      a folder holding Debian's BLIS packages unpacked with
                         `dpkg -x` (usr/include/..., usr/lib/...), for hosts
                         without libblis-dev (scripts/gpu_check.sh)
  WEBNN_SANITIZE=1       ASan + UBSan build of the core
  WEBNN_SANITIZE=thread  ThreadSanitizer build of the core
  WEBNN_SANITIZE=fuzz    (with CC=clang) ASan + UBSan + libFuzzer coverage, for
                         the binding's fuzzer (tests/fuzz/fuzz_binding.py)
"""
import glob
import os
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

extra_compile = ["-std=c11", "-O3", "-fopenmp-simd", "-D_GNU_SOURCE", "-fvisibility=hidden",
                 "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"]
extra_link = []
sanitize = os.environ.get("WEBNN_SANITIZE")
if sanitize == "fuzz":  # clang: ASan + UBSan + libFuzzer coverage (make fuzz-py)
    extra_compile += ["-O1", "-g", "-fsanitize=address,undefined,fuzzer-no-link",
                      "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer",
                      "-Wno-unknown-warning-option", "-Wno-pass-failed"]
    extra_link += ["-fsanitize=address,undefined,fuzzer-no-link", "-shared-libasan"]
elif sanitize == "thread":  # ThreadSanitizer (make test-tsan)
    extra_compile += ["-O1", "-g", "-fsanitize=thread", "-fno-omit-frame-pointer"]
    extra_link += ["-fsanitize=thread"]
elif sanitize:
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


# ---- the CUDA backend (kernels_cuda/build_cuda.py) ------------------------------
sys.path.insert(0, os.path.join(HERE, "kernels_cuda"))
import build_cuda  # noqa: E402


class BuildExtWithCuda(build_ext):
    """build_ext, then kernels_cuda/ into libwebnn_cuda.so next to the core."""

    def run(self):
        super().run()
        out_dir = os.path.dirname(self.get_ext_fullpath("webnn._core"))
        build_cuda.build(os.path.join(out_dir, build_cuda.CUDA_LIB),
                         os.path.join(os.path.abspath(self.build_temp), "cuda"))


setup(ext_modules=[core], cmdclass={"build_ext": BuildExtWithCuda})
