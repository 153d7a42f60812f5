"""Builds webnn._core: the C core (csrc/) and the CPython layer
(webnn/_webnn.c) in one extension, linked against BLIS (Debian's
libblis-dev) and OpenMP.  The CUDA backend (kernels_cuda/) is a separate
shared object loaded at run time only when a GPU is asked for."""
import glob
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
core_sources = sorted(glob.glob(os.path.join("csrc", "**", "*.c"), recursive=True))
core_sources = [s for s in core_sources if os.sep + "tests" + os.sep not in s
                and os.sep + "fuzz" + os.sep not in s]

blis_inc = "/usr/include/x86_64-linux-gnu"
extra_compile = ["-std=c11", "-O3", "-fopenmp", "-D_GNU_SOURCE", "-fvisibility=hidden",
                 "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"]
extra_link = ["-fopenmp"]
if os.environ.get("WEBNN_SANITIZE"):
    extra_compile += ["-O1", "-g", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]
    extra_link += ["-fsanitize=address,undefined"]

core = Extension(
    "webnn._core",
    sources=core_sources + ["webnn/_webnn.c"],
    include_dirs=["csrc/include", blis_inc],
    libraries=["blis", "m", "pthread", "dl"],
    extra_compile_args=extra_compile,
    extra_link_args=extra_link,
)

setup(ext_modules=[core])
