#!/usr/bin/env bash
# The sdist: `python -m build --sdist`, check that it carries every source the
# build needs, then `pip install webnn-*.tar.gz` into a fresh virtual
# environment (pip's isolated build: setuptools from PyPI, BLIS from the
# system, the CUDA backend too when nvcc is present; WEBNN_NO_CUDA=1 skips it)
# and run tests/packaging/smoke.py there, outside the checkout.
#   tests/packaging/test_sdist.sh [python]     (make test-sdist)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${1:-.venv/bin/python}
unset PYTHONPATH   # the Makefile's (the checkout) must not hide the installed package
T=$(mktemp -d /tmp/webnn-sdist.XXXXXX)
trap 'rm -rf "$T"' EXIT
start=$SECONDS
"$PY" -m build --sdist --no-isolation -o "$T/dist" . > "$T/build.log" 2>&1 || { cat "$T/build.log"; exit 1; }
sdist=$(ls "$T"/dist/webnn-*.tar.gz)
echo "sdist: $(basename "$sdist") ($(du -k "$sdist" | cut -f1) KiB)"
"$PY" - "$sdist" <<'PYEOF'
import sys, tarfile
names = tarfile.open(sys.argv[1]).getnames()
root = names[0].split("/")[0]
rel = {n[len(root) + 1:] for n in names}
need = ["setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "CHANGELOG.md", "LICENSE",
        "webnn/__init__.py", "webnn/_version.py", "webnn/_binding/module.c", "webnn/_binding/binding.h", "csrc/ops/ops.def",
        "csrc/include/webnn_core.h", "csrc/core/internal.h", "csrc/backend/registry.c",
        "kernels_cuda/build_cuda.py", "kernels_cuda/backend_cuda.c", "kernels_cuda/cudnn_dl.h",
        "kernels_cuda/elementwise.cu"]
missing = [n for n in need if n not in rel]
assert not missing, f"the sdist lacks {missing}"
binaries = [n for n in rel if n.endswith((".so", ".o", ".a")) or ".so." in n]
assert not binaries, f"the sdist carries built files: {binaries}"
print(f"sdist: {len(rel)} entries, every needed source is in it, no built file")
PYEOF
"$PY" -m venv "$T/venv"
"$T/venv/bin/python" -m pip install -q --upgrade pip > /dev/null
"$T/venv/bin/python" -m pip install -q "$sdist" > "$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
echo "installed from the sdist: $("$T/venv/bin/python" -m pip list 2>/dev/null | grep -E '^webnn ' | tr -s ' ')," \
  "$(ls "$T"/venv/lib/python3*/site-packages/webnn/ | grep -E '\.so$' | tr '\n' ' ')"
(cd "$T" && "$T/venv/bin/python" "$OLDPWD/tests/packaging/smoke.py")
echo "test-sdist: passed in $((SECONDS - start)) s"
