#!/usr/bin/env bash
# gpu_check.sh -- build webnn from source on a GPU host and check the CUDA
# backend: the GPU test suite, a benchmark against PyTorch, and
# compute-sanitizer on a few tests.  Logs go to $OUT (default ./gpu_check_out).
#
# The host needs: nvcc (CUDA 12 or 13; the backend is built for sm_90 + PTX),
# gcc/g++, Python 3 with NumPy and pytest (setuptools optional), PyTorch with
# CUDA (for the benchmark only).  BLIS is NOT needed on the host: the
# package's CPU backend links Debian's BLIS from .gpu_deps/root (the
# packages libblis4-openmp and libblis-openmp-dev unpacked with `dpkg -x`;
# made by `make gpu-deps` on a Debian machine, git-ignored, so carry it to
# the host with the tree).  No network access is needed.
#
# usage: scripts/gpu_check.sh [step ...]
#   steps: build      the package from source (core + libwebnn_cuda.so)
#          test       tests/backends (WPT on the GPU, GPU vs CPU, loading,
#                     emulation) and WEBNN_TEST_DEVICE=gpu tests/ops
#          test-rest  tests/wpt tests/api tests/models with the GPU present
#          bench      benchmarks/bench_gpu.py (against PyTorch)
#          sanitize   compute-sanitizer on a selection of tests/backends
#          variants   the GPU tests of convolutions, products and fusion again
#                     with cuDNN from the nvidia-cudnn-cu13 wheel, with
#                     WEBNN_CUDNN=0 (direct kernels), WEBNN_CUDA_FUSION=0 and
#                     WEBNN_CUDNN_FIND=0 (cuDNN's heuristic algorithms) and
#                     WEBNN_CUDA_GRAPHS=0 (no CUDA graph replay)
#   default: all, in that order; every step after `build` needs its outputs.
# environment: PYTHON (default python3), OUT, BENCH_ARGS (e.g. "--quick"),
#   BUDGET (seconds for all the steps: each step's time limit is cut to what
#   is left, a step is skipped when less than 20 s are left, so that one
#   device command ends by itself, logs complete), PYTEST_N (pytest-xdist
#   workers for the test steps; default 8 where pytest-xdist is installed,
#   0 = none), JUNIT=0 (no JUnit XML next to the logs: fewer files),
#   SANITIZE_TOOLS (default "memcheck racecheck synccheck initcheck"),
#   WEBNN_CUDNN_LIBRARY (default: libcudnn.so.9 on the loader path, else the
#   one of PyTorch's nvidia-cudnn wheel, found below), WEBNN_CUDNN=0 (run
#   every convolution on the backend's direct kernels instead)
#
# Exit status: 0 when every step that ran passed; 1 otherwise (see
# $OUT/summary.txt).  Every step has a time limit; `build test`, `bench`
# (at most ~7 min: matmul to n = 8192, ResNet-50 convolutions, MobileNetV2)
# and `sanitize test-rest` each fit in the 10 minutes of one device command
# on an H200 host with 16 cores (see kernels_cuda/README.md).
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$(pwd)
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/gpu_check_out}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
STATUS=0
STEPS=${*:-build test test-rest bench sanitize variants}
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1

note() { echo "$*" | tee -a "$SUMMARY"; }

# ---- cuDNN: the backend dlopens libcudnn.so.9 (kernels_cuda/cudnn_dl.c); on a
# host without a system cuDNN, PyTorch's wheel (nvidia-cudnn-cu12 / -cu13) has
# one under site-packages/nvidia/cudnn/lib.  Its sub-libraries are found
# through LD_LIBRARY_PATH.
wheel_cudnn() { # the libcudnn.so.9 of the nvidia-cudnn-cu13 (or -cu12) wheel, if any
    "$PY" -c '
import os
import nvidia.cudnn
for d in list(getattr(nvidia.cudnn, "__path__", [])):
    p = os.path.join(d, "lib", "libcudnn.so.9")
    if os.path.exists(p):
        print(p)
        break
' 2>/dev/null
}
find_cudnn() {
    if [ -n "${WEBNN_CUDNN_LIBRARY:-}" ] || [ "${WEBNN_CUDNN:-}" = "0" ]; then
        return
    fi
    if "$PY" -c 'import ctypes; ctypes.CDLL("libcudnn.so.9")' 2>/dev/null; then
        return
    fi
    local lib
    lib=$(wheel_cudnn)
    if [ -n "$lib" ]; then
        export WEBNN_CUDNN_LIBRARY=$lib
        export LD_LIBRARY_PATH=$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    fi
}
find_cudnn
# libwebnn_cuda.so's RUNPATH names only the nvidia-* wheels' folders (pip
# install webnn[cuda]); a toolkit outside the loader's path is found through
# $CUDA_HOME (csrc/backend/registry.c): this nvcc's, unless set.
if [ -z "${CUDA_HOME:-}" ] && command -v nvcc >/dev/null 2>&1; then
    export CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
fi
START=$(date +%s)
left() { # seconds left of $BUDGET (a large number without one)
    if [ -n "${BUDGET:-}" ]; then echo $(( START + BUDGET - $(date +%s) )); else echo 99999; fi
}
lim() { # limit: the step's own limit, cut to the budget left (less 10 s)
    local l; l=$(( $(left) - 10 ))
    [ "$1" -lt "$l" ] && l=$1
    [ "$l" -lt 1 ] && l=1
    echo "$l"
}
if [ -z "${PYTEST_N+x}" ]; then
    "$PY" -c 'import xdist' 2>/dev/null && PYTEST_N=8 || PYTEST_N=0
fi
XDIST=()
[ "$PYTEST_N" -gt 0 ] 2>/dev/null && XDIST=(-n "$PYTEST_N")
result() { # name rc
    if [ "$2" -eq 0 ]; then note "PASS  $1"; else note "FAIL  $1 (exit $2)"; STATUS=1; fi
}

# ---- BLIS from .gpu_deps --------------------------------------------------------
blis_prefix() {
    local root=$ROOT/.gpu_deps/root
    if ! ls "$root"/usr/lib/x86_64-linux-gnu/blis-*/libblis.so* >/dev/null 2>&1; then
        # unpack the .deb files: dpkg -x, or ar + tar where dpkg is missing
        mkdir -p "$root"
        for deb in "$ROOT"/.gpu_deps/debs/*.deb; do
            [ -f "$deb" ] || continue
            if command -v dpkg >/dev/null; then
                dpkg -x "$deb" "$root"
            else
                local t; t=$(mktemp -d)
                (cd "$t" && ar x "$deb" && tar -xf data.tar.* -C "$root")
                rm -rf "$t"
            fi
        done
    fi
    if ls "$root"/usr/lib/x86_64-linux-gnu/blis-*/libblis.so* >/dev/null 2>&1; then
        echo "$root"
    fi
}

# ---- steps ---------------------------------------------------------------------------
step_env() {
    {
        date
        uname -a
        nvidia-smi 2>&1 || echo "(no nvidia-smi)"
        command -v nvcc && nvcc --version || echo "(nvcc not on PATH)"
        ls -d /usr/local/cuda* 2>/dev/null
        gcc --version | head -1
        "$PY" -c 'import sys, numpy, pytest; print(sys.version); print("numpy", numpy.__version__, "pytest", pytest.__version__)'
        "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())' 2>&1
        command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo "(no compute-sanitizer)"
    } > "$OUT/env.txt" 2>&1
}

step_build() {
    local prefix
    prefix=$(blis_prefix)
    if [ -z "$prefix" ]; then
        if [ -f /usr/include/x86_64-linux-gnu/blis.h ] || [ -f /usr/include/blis.h ]; then
            note "BLIS: the system's"
        else
            note "BLIS: none in .gpu_deps/ nor on the system (run 'make gpu-deps' on a Debian machine and carry .gpu_deps/)"
            return 1
        fi
    else
        export WEBNN_BLIS_PREFIX=$prefix
        note "BLIS: $prefix"
    fi
    # nvcc refuses host compilers newer than it knows; the code is plain C++17
    export WEBNN_NVCC_FLAGS=${WEBNN_NVCC_FLAGS:--allow-unsupported-compiler}
    if "$PY" -c 'import setuptools' 2>/dev/null; then
        timeout "$(lim 900)" "$PY" setup.py -q build_ext --inplace -j "$(nproc)" || return 1
    else
        # no setuptools: the same build by hand
        note "setuptools missing: building with gcc directly"
        local ext inc blis_inc blis_lib
        ext=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
        inc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
        blis_inc=$(ls -d "${WEBNN_BLIS_PREFIX:-/}"/usr/include/x86_64-linux-gnu/blis-openmp 2>/dev/null || echo /usr/include/x86_64-linux-gnu)
        blis_lib=$(ls -d "${WEBNN_BLIS_PREFIX:-/}"/usr/lib/x86_64-linux-gnu/blis-openmp 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)
        timeout "$(lim 900)" gcc -std=c11 -O3 -fopenmp -D_GNU_SOURCE -fvisibility=hidden -fPIC -shared \
            -Icsrc/include -I"$blis_inc" -I"$inc" \
            $(find csrc -name '*.c' -not -path 'csrc/tests/*' -not -path 'csrc/fuzz/*') webnn/_binding/*.c \
            -o "webnn/_core$ext" -L"$blis_lib" -Wl,-rpath,"$blis_lib" -lblis -lm -lpthread -ldl || return 1
        timeout "$(lim 900)" "$PY" kernels_cuda/build_cuda.py || return 1
    fi
    [ -f webnn/libwebnn_cuda.so ] || { note "webnn/libwebnn_cuda.so was not built (nvcc?)"; return 1; }
    "$PY" - <<'EOF'
import webnn
ctx = webnn.ml.create_context(device_type="gpu")
print("GPU context:", ctx.device_type, ctx.accelerated)
print("default context:", webnn.ml.create_context().device_type)
ops = sorted(k for k, v in ctx.op_support_limits().items() if isinstance(v, dict) and "data_types" not in v)
print(len(ops), "operators on the GPU:", " ".join(ops))
# which convolution path this host gets: cuDNN (dlopen'd when a convolution
# is compiled) or the direct kernels
import numpy as np
b = webnn.MLGraphBuilder(ctx)
x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
w = b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, np.ones((4, 3, 3, 3), np.float32))
ctx.compute(b.build({"y": b.conv2d(x, w)}), {"x": np.ones((1, 3, 8, 8), np.float32)})
libs = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudnn" in l})
print("convolutions on:", "cuDNN " + " ".join(libs) if libs else "the direct kernels (no cuDNN 9 found)")
EOF
    local rc=$?
    note "cuDNN: ${WEBNN_CUDNN_LIBRARY:-libcudnn.so.9 from the loader path, if any} (see build.log)"
    return $rc
}

run_pytest() { # log-name timeout args...
    local name=$1 limit=$2
    shift 2
    local junit=(--junitxml="$OUT/$name.xml")
    [ "${JUNIT:-1}" = 0 ] && junit=()
    timeout "$(lim "$limit")" "$PY" -m pytest -q -p no:cacheprovider -rfEs "${XDIST[@]}" \
        "${junit[@]}" "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    tail -3 "$OUT/$name.log" | sed "s/^/      /" | tee -a "$SUMMARY"
    return $rc
}

step_test() {
    local rc=0
    # the GPU backend: WPT vectors on the GPU, cross-backend checks, tensors
    # (with pytest-xdist: not the emulation suite, whose workers would build
    # the emulated library at once into one folder; CI runs it on every run)
    local emu=()
    [ ${#XDIST[@]} -gt 0 ] && emu=(--ignore=tests/backends/test_cuda_emu.py)
    run_pytest test_backends 270 tests/backends "${emu[@]}" || rc=1
    result "tests/backends (GPU vs CPU, WPT on the GPU)" $rc; rc=0
    # the NumPy-reference operator tests on a GPU context
    WEBNN_TEST_DEVICE=gpu run_pytest test_ops_gpu 240 tests/ops || rc=1
    result "tests/ops on the GPU (WEBNN_TEST_DEVICE=gpu)" $rc
}

step_test_rest() {
    local rc=0
    # everything else with a GPU present (the default context is the GPU)
    run_pytest test_rest 540 tests/wpt tests/api tests/models || rc=1
    result "tests/wpt tests/api tests/models with a GPU present" $rc
}

step_bench() {
    # shellcheck disable=SC2086
    timeout "$(lim 400)" "$PY" benchmarks/bench_gpu.py --json "$OUT/bench_gpu.json" ${BENCH_ARGS:-} \
        > "$OUT/bench_gpu.txt" 2>&1
    local rc=$?
    sed "s/^/      /" "$OUT/bench_gpu.txt" | tail -70 | tee -a "$SUMMARY"
    return $rc
}

step_sanitize() {
    local cs
    cs=$(command -v compute-sanitizer || true)
    [ -z "$cs" ] && [ -x "$(dirname "$(readlink -f "$(command -v nvcc)")")/compute-sanitizer" ] && \
        cs="$(dirname "$(readlink -f "$(command -v nvcc)")")/compute-sanitizer"
    [ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && cs=/usr/local/cuda/bin/compute-sanitizer
    if [ -z "$cs" ]; then
        note "SKIP  compute-sanitizer (not found)"
        return 0
    fi
    local sel=${SANITIZE_K:-"softmax_paths or norms or transpose_tiled or gather_scatter or matmul_modes or movement_ops or binary_broadcast"}
    local rc=0 tool
    for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
        local k=$sel
        # racecheck / synccheck: the kernels with shared memory and barriers
        [ "$tool" = racecheck ] || [ "$tool" = synccheck ] && k="softmax_paths or norms or transpose_tiled"
        # initcheck: not through cuBLAS (its workspace is its own business)
        [ "$tool" = initcheck ] && k="softmax_paths or norms or transpose_tiled or gather_scatter or movement_ops"
        timeout "$(lim 100)" "$cs" --tool "$tool" --error-exitcode 99 --target-processes all \
            "$PY" -m pytest -q -p no:cacheprovider -x ${SANITIZE_FILES:-tests/backends/test_gpu.py} -k "$k" \
            > "$OUT/sanitizer_$tool.log" 2>&1
        local r=$?
        grep -E "ERROR SUMMARY|passed|failed" "$OUT/sanitizer_$tool.log" | tail -2 | sed "s/^/      /" | tee -a "$SUMMARY"
        result "compute-sanitizer --tool $tool" $r
        [ $r -eq 0 ] || rc=1
    done
    return 0
}

# the GPU tests of convolutions, products and fusion under one setting
variant_tests() { # log-name
    local name=$1 rc=0
    run_pytest "${name}_backends" 150 tests/backends/test_gpu.py \
        tests/backends/test_cuda_graphs.py || rc=1
    WEBNN_TEST_DEVICE=gpu run_pytest "${name}_ops" 150 tests/ops/test_conv2d.py \
        tests/ops/test_conv_transpose2d.py tests/ops/test_fusion.py tests/ops/test_matmul.py \
        tests/ops/test_gemm.py || rc=1
    return $rc
}

step_variants() {
    local wheel
    wheel=$(wheel_cudnn)
    if [ -n "$wheel" ]; then
        note "cuDNN from the wheel: $wheel"
        ( export WEBNN_CUDNN_LIBRARY=$wheel
          export LD_LIBRARY_PATH=$(dirname "$wheel")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
          "$PY" -c '
import numpy as np, webnn
ctx = webnn.ml.create_context(device_type="gpu")
b = webnn.MLGraphBuilder(ctx)
x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
w = b.constant({"dataType": "float32", "shape": [4, 3, 3, 3]}, np.ones((4, 3, 3, 3), np.float32))
ctx.compute(b.build({"y": b.conv2d(x, w)}), {"x": np.ones((1, 3, 8, 8), np.float32)})
print("convolutions on:", sorted({l.split()[-1] for l in open("/proc/self/maps") if "libcudnn" in l}))
' 2>&1 | tee -a "$SUMMARY"
          variant_tests variant_cudnn_wheel )
        result "GPU conv / matmul / fusion tests, cuDNN from nvidia-cudnn-cu13" $?
    else
        note "SKIP  cuDNN from the wheel (nvidia.cudnn not importable)"
    fi
    WEBNN_CUDNN=0 variant_tests variant_no_cudnn
    result "GPU conv / matmul / fusion tests, WEBNN_CUDNN=0 (direct kernels)" $?
    WEBNN_CUDA_FUSION=0 variant_tests variant_no_fusion
    result "GPU conv / matmul / fusion tests, WEBNN_CUDA_FUSION=0" $?
    WEBNN_CUDNN_FIND=0 variant_tests variant_no_find
    result "GPU conv / matmul / fusion tests, WEBNN_CUDNN_FIND=0 (cuDNN's heuristics)" $?
    WEBNN_CUDA_GRAPHS=0 variant_tests variant_no_graphs
    result "GPU conv / matmul / fusion tests, WEBNN_CUDA_GRAPHS=0 (no graph replay)" $?
}

note "webnn GPU check, $(date), logs in $OUT${BUDGET:+, budget ${BUDGET} s}, pytest-xdist workers: $PYTEST_N"
step_env
for s in $STEPS; do
    if [ "$(left)" -lt 20 ]; then
        note "SKIP  $s (the budget of $BUDGET s is spent)"
        STATUS=1
        continue
    fi
    case $s in
    build) step_build > "$OUT/build.log" 2>&1; rc=$?; tail -5 "$OUT/build.log" | sed "s/^/      /" | tee -a "$SUMMARY"; result build $rc
           [ $rc -eq 0 ] || { note "build failed: see $OUT/build.log"; exit 1; } ;;
    test) step_test ;;
    test-rest) step_test_rest ;;
    bench) step_bench; result "benchmarks/bench_gpu.py" $? ;;
    sanitize) step_sanitize ;;
    variants) step_variants ;;
    *) note "unknown step $s"; STATUS=1 ;;
    esac
done
note "done: $( [ $STATUS -eq 0 ] && echo all passed || echo FAILURES )"
exit $STATUS
