#!/usr/bin/env bash
# Build and test on each supported CPython besides the main one (make test
# runs the whole suite on .venv's, 3.11): for each version, a virtual
# environment build/py<V>/venv (NumPy, pytest, hypothesis, setuptools), the
# extension built out of place into build/py<V>/lib (WEBNN_NO_CUDA=1: the CUDA
# library does not depend on the interpreter), then a large part of the suite
# against it.  Each build's object folder, build/py<V>/temp, starts with a
# copy of the core's objects of `make build` (setup.py keeps an object its own
# compile command would make the same: the core's commands differ at most in
# how the interpreters define overflow, which setup.py makes the same), so
# only webnn/_binding/, which includes Python.h, is compiled for each
# version.
#   tests/packaging/test_pythons.sh [3.10 3.12 3.13]   (make test-pythons)
# Interpreters: python<V> on PATH, else pyenv's ($PYENV_ROOT or ~/.pyenv).
# TESTS overrides the test folders (default below; "tests" for all of it).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
VERSIONS=${*:-3.10 3.12 3.13}
TESTS=${TESTS:-tests/api tests/wpt tests/models tests/validation tests/packaging}
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
# the main build's objects (the Makefile's CORE_TEMP)
TEMP=${CORE_TEMP:-build/temp}
unset PYTHONPATH
start=$SECONDS

find_python() {
  local v=$1 p
  for p in $(command -v "python$v" 2>/dev/null) $(ls -d "$PYENV_ROOT"/versions/"$v".*/bin/python 2>/dev/null | sort -V -r); do
    if [ -x "$p" ] && [ "$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" = "$v" ]; then
      echo "$p"; return 0
    fi
  done
  return 1
}

build_one() {
  local v=$1 base=$2 d=build/py$1
  if [ ! -f "$d/venv/.deps-1" ]; then
    rm -rf "$d/venv"
    "$base" -m venv "$d/venv"
    "$d/venv/bin/python" -m pip install -q --upgrade pip
    "$d/venv/bin/python" -m pip install -q "numpy>=1.23" "pytest>=7" "hypothesis>=6" "setuptools>=77"
    touch "$d/venv/.deps-1"
  fi
  # a folder of its own (the binding's objects differ by version), with the
  # main build's objects of the core (their times kept)
  local temp=$d/temp
  mkdir -p "$temp"
  if [ -d "$TEMP/csrc" ]; then cp -rp "$TEMP/csrc" "$temp/"; fi
  WEBNN_NO_CUDA=1 "$d/venv/bin/python" setup.py -q build_ext --build-lib "$d/lib" --build-temp "$temp"
  # the whole package (subpackages, stubs, py.typed), not this checkout's
  # built libraries
  tar -C webnn --exclude='*.so' --exclude='__pycache__' --exclude='_binding' -cf - . | \
    tar -C "$d/lib/webnn" -xf -
}

for v in $VERSIONS; do
  base=$(find_python "$v") || { echo "test-pythons: no Python $v (python$v on PATH or $PYENV_ROOT/versions/$v.*)"; exit 1; }
  mkdir -p "build/py$v"
  t=$SECONDS
  build_one "$v" "$base" > "build/py$v/build.log" 2>&1 || { cat "build/py$v/build.log"; echo "test-pythons: the build on Python $v failed"; exit 1; }
  echo "Python $v: $base ($("$base" -c 'import sys; print(sys.version.split()[0])')), built in $((SECONDS - t)) s"
done
echo "test-pythons: built on $VERSIONS in $((SECONDS - start)) s"
# The versions' suites side by side (scripts/side_by_side.sh; the builds
# above share objects and run one after the other), each into
# build/pythons/<V>.log.  tests/wpt: the conformance vectors only (all three
# WPT sets run on .venv's Python).
t=$SECONDS
args=()
for v in $VERSIONS; do
  args+=("$v" "cd build/py$v/lib && PYTHONPATH='$ROOT/build/py$v/lib' \
WEBNN_WPT_SETS=${WEBNN_WPT_SETS:-conformance} '$ROOT/build/py$v/venv/bin/python' \
-m pytest -q -p no:cacheprovider $(for x in $TESTS; do printf "'%s' " "$ROOT/$x"; done)")
done
SHOW=3 scripts/side_by_side.sh build/pythons "${args[@]}" || { echo "test-pythons: failed"; exit 1; }
echo "test-pythons: the suites in $((SECONDS - t)) s; passed in $((SECONDS - start)) s"
