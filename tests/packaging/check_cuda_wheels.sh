#!/usr/bin/env bash
# By hand (not in make test: NVIDIA's wheels are about 1 GB): `pip install
# webnn[cuda]` from the repaired wheel in dist/ into a fresh virtual
# environment, then, as root in a private mount namespace where the system's
# CUDA is hidden (an ld.so.cache without its folders, an empty /usr/local/cuda),
# ask for a GPU context: the CUDA libraries must come from
# site-packages/nvidia/cu13/lib (mapped), the result on a machine without a
# GPU or driver being NotSupportedError "no usable GPU: CUDA:
# cudaErrorInsufficientDriver ..."; cuDNN loads from site-packages/nvidia/cudnn/lib.
# Then the same with the nvidia folder hidden too: the message names the
# missing library and `pip install 'webnn[cuda]'`.
#   tests/packaging/check_cuda_wheels.sh [folder of nvidia-*.whl for --find-links]
set -euo pipefail
cd "$(dirname "$0")/../.."
whl=$(ls dist/webnn-*manylinux*.whl | tail -1)
T=$(mktemp -d /tmp/webnn-cuda-wheels.XXXXXX)
trap 'rm -rf "$T"' EXIT
python3 -m venv "$T/venv"
if [ -n "${1:-}" ]; then
  "$T/venv/bin/pip" install -q numpy
  "$T/venv/bin/pip" install -q --no-index --find-links "$1" "$whl[cuda]"
else
  "$T/venv/bin/pip" install -q "$whl[cuda]"
fi
"$T/venv/bin/pip" list 2>/dev/null | grep -E "^(nvidia|webnn)"
cat > "$T/probe.py" <<'PYEOF'
import ctypes, os, sys, webnn
try:
    webnn.ml.create_context(device_type="gpu")
    print("a GPU context")
except webnn.NotSupportedError as e:
    print("NotSupportedError:", e)
maps = {l.split(maxsplit=5)[5].strip() for l in open("/proc/self/maps") if len(l.split(maxsplit=5)) == 6}
cuda = sorted(p for p in maps if "libcudart" in p or "libcublas" in p)
print("\n".join("mapped: " + p for p in cuda))
site = os.path.dirname(os.path.dirname(webnn.__file__))
if sys.argv[1] == "wheels":
    assert cuda and all(p.startswith(os.path.join(site, "nvidia", "cu13", "lib")) for p in cuda), cuda
    d = ctypes.CDLL(os.path.join(site, "nvidia", "cudnn", "lib", "libcudnn.so.9"))
    d.cudnnGetVersion.restype = ctypes.c_size_t
    print("cuDNN from the wheel:", d.cudnnGetVersion())
else:
    assert not cuda, cuda
PYEOF
grep -h -v cuda /etc/ld.so.conf.d/*.conf | grep -v '^#' > "$T/ld.so.conf"
ldconfig -f "$T/ld.so.conf" -C "$T/ld.so.cache"
hide="mount --bind $T/ld.so.cache /etc/ld.so.cache && { [ ! -e /usr/local/cuda ] || mount -t tmpfs none \$(readlink -f /usr/local/cuda); }"
echo "== the system's CUDA hidden:"
unshare -m sh -c "$hide && $T/venv/bin/python $T/probe.py wheels"
echo "== the nvidia wheels hidden too:"
unshare -m sh -c "$hide && mount -t tmpfs none $T/venv/lib/python3*/site-packages/nvidia && $T/venv/bin/python $T/probe.py none"
echo "check-cuda-wheels: passed"
