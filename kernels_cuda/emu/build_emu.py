"""Build the CPU emulation of the CUDA backend: build/cuda-emu/libwebnn_cuda_emu.so.

The real backend's host code (kernels_cuda/backend_cuda.c) and kernels
(kernels_cuda/*.cu, compiled as C++ with -DCK_HOST_EMU) linked against a fake
CUDA runtime and cuBLAS (emu/cuda_emu.c) instead of libcudart / libcublas.
Only the CUDA headers are needed (no nvcc, no GPU, no driver).  Load it with
WEBNN_CUDA_LIBRARY=<path> to run the GPU tests on the CPU:

    python kernels_cuda/emu/build_emu.py        # prints the library's path
    WEBNN_CUDA_LIBRARY=$(python kernels_cuda/emu/build_emu.py) \\
        WEBNN_TEST_DEVICE=gpu python -m pytest tests/ops tests/backends

WEBNN_EMU_SANITIZE=1 builds libwebnn_cuda_emu_asan.so with AddressSanitizer and
UBSan instead (run Python with LD_PRELOAD=$(gcc -print-file-name=libasan.so)
ASAN_OPTIONS=detect_leaks=0); the fake cudaMalloc then allocates exact sizes,
so a kernel reading or writing past a buffer is reported.

Exit status 2 (and a message on stderr) when no CUDA headers are found.
"""
import concurrent.futures
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KDIR = os.path.join(ROOT, "kernels_cuda")
SANITIZE = os.environ.get("WEBNN_EMU_SANITIZE", "") not in ("", "0")
OUT_DIR = os.path.join(ROOT, "build", "cuda-emu-asan" if SANITIZE else "cuda-emu")
LIB = os.path.join(OUT_DIR, "libwebnn_cuda_emu_asan.so" if SANITIZE else "libwebnn_cuda_emu.so")
# The emulated cuDNN (emu/cudnn_emu.c): its own shared object, which the
# emulated backend dlopens by default (WNN_CUDNN_EMU_PATH) as the real one
# loads libcudnn.so.9; WEBNN_CUDNN_LIBRARY still overrides it.  Built only
# where cuDNN's headers are (the emulation is compiled against cudnn.h).
DNN_LIB = os.path.join(OUT_DIR, "libcudnn_emu.so")
SAN_FLAGS = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-DCK_EMU_EXACT_MALLOC"]


def cuda_include():
    cands = []
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            cands.append(os.path.join(os.environ[var], "include"))
    nvcc = shutil.which("nvcc")
    if nvcc:
        cands.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))),
                                  "include"))
    cands += ["/usr/local/cuda/include", "/usr/include"]
    for c in cands:
        if os.path.isfile(os.path.join(c, "cuda_runtime_api.h")) and \
                os.path.isfile(os.path.join(c, "cublas_v2.h")):
            return c
    return None


def cudnn_include(inc):
    """The folder with cudnn.h: the CUDA toolkit's, or the system's (Debian
    and Ubuntu's cuDNN packages put it in /usr/include or its multiarch
    folder)."""
    for c in (inc, "/usr/include", "/usr/include/x86_64-linux-gnu"):
        if os.path.isfile(os.path.join(c, "cudnn.h")):
            return c
    return None


def newest(paths):
    return max((os.path.getmtime(p) for p in paths), default=0.0)


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stderr.write(" ".join(cmd) + "\n" + r.stdout)
        raise SystemExit(1)


def build():
    inc = cuda_include()
    if not inc:
        sys.stderr.write("build_emu: no CUDA headers (cuda_runtime_api.h, cublas_v2.h)\n")
        raise SystemExit(2)
    os.makedirs(OUT_DIR, exist_ok=True)
    cc = os.environ.get("CC") or "gcc"
    cxx = os.environ.get("CXX") or "g++"
    incs = ["-I" + os.path.join(ROOT, "csrc", "include"), "-I" + KDIR, "-I" + inc]
    dnn_inc = cudnn_include(inc)
    have_dnn = dnn_inc is not None
    cflags = [cc, "-std=c11", "-O1", "-g", "-fPIC", "-fvisibility=hidden", "-D_GNU_SOURCE",
              "-Wall", "-Wno-unused-parameter", "-Wno-format-truncation"] + incs
    cxxflags = [cxx, "-x", "c++", "-std=c++17", "-O1", "-g", "-fPIC", "-fvisibility=hidden",
                "-DCK_HOST_EMU", "-Wall", "-Wno-unused-function"] + incs
    if SANITIZE:
        cflags += SAN_FLAGS
        cxxflags += SAN_FLAGS
    # the emulated cuDNN exports its functions (no -fvisibility=hidden)
    dnn_flags = [f for f in cflags if f != "-fvisibility=hidden"] + ["-Wno-deprecated-declarations"]
    if have_dnn and dnn_inc != inc:
        dnn_flags += ["-I" + dnn_inc]
    # the backend's cudnn_dl.c loads the emulated cuDNN only, never a real
    # one (none at all when cudnn.h is missing: the direct kernels then)
    cflags += ["-DWNN_CUDNN_EMU", '-DWNN_CUDNN_EMU_PATH="%s"' % (DNN_LIB if have_dnn else "")]
    headers = (glob.glob(os.path.join(ROOT, "csrc", "**", "*.h"), recursive=True)
               + glob.glob(os.path.join(ROOT, "csrc", "**", "*.def"), recursive=True)
               + glob.glob(os.path.join(KDIR, "*.h")) + glob.glob(os.path.join(KDIR, "*.cuh"))
               + glob.glob(os.path.join(HERE, "*.h")))
    # csrc/core/dtype.c: the float16 conversions of the fake cuBLAS
    # (cuda_emu.c; the kernels' are wnn_numerics.h's, what cuda_fp16.h is on
    # a GPU); the backend itself gets the core's services through the
    # load-time table
    srcs = (sorted(glob.glob(os.path.join(KDIR, "*.c")))
            + [os.path.join(HERE, "cuda_emu.c"), os.path.join(ROOT, "csrc", "core", "dtype.c")]
            + sorted(glob.glob(os.path.join(KDIR, "*.cu"))))
    stamp = newest(headers + [os.path.abspath(__file__)])
    jobs, objs = [], []
    for src in srcs:
        obj = os.path.join(OUT_DIR, os.path.relpath(src, ROOT).replace(os.sep, "_") + ".o")
        objs.append(obj)
        if not os.path.exists(obj) or os.path.getmtime(obj) < max(stamp, os.path.getmtime(src)):
            flags = cxxflags if src.endswith(".cu") else cflags
            jobs.append(flags + ["-c", src, "-o", obj])
    if jobs:
        with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as ex:
            for f in [ex.submit(run, j) for j in jobs]:
                f.result()
    if jobs or not os.path.exists(LIB) or os.path.getmtime(LIB) < newest(objs):
        run([cxx, "-shared", "-o", LIB] + objs + (SAN_FLAGS[:1] if SANITIZE else [])
            + ["-lm", "-lpthread", "-ldl", "-Wl,--no-undefined"])
    if have_dnn:
        src = os.path.join(HERE, "cudnn_emu.c")
        chk = os.path.join(HERE, "cudnn_abi_check.c")
        deps = [src, chk, os.path.join(KDIR, "cudnn_dl.h"), os.path.abspath(__file__)]
        if not os.path.exists(DNN_LIB) or os.path.getmtime(DNN_LIB) < newest(deps):
            # cudnn_dl.h's declarations against the real headers
            run(dnn_flags + ["-fsyntax-only", chk])
            run(dnn_flags + ["-shared", "-o", DNN_LIB, src, "-lm", "-Wl,--no-undefined"]
                + (SAN_FLAGS[:1] if SANITIZE else []))
    return LIB


if __name__ == "__main__":
    print(build())
