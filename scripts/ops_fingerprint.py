"""Bitwise fingerprints of every generated operator case on a device, to show
that a refactor changes no result: tests/backends/opgen.py's cases (one or
more small graphs per operator, data type and option value, seeded inputs;
WEBNN_BACKEND_OPS=long: bigger shapes and a second draw) run on the device,
each case's outputs hashed (sha1 of their bytes).

    python scripts/ops_fingerprint.py cpu before.json      # on the old tree
    python scripts/ops_fingerprint.py cpu after.json       # on the new tree
    python scripts/ops_fingerprint.py --compare before.json after.json

The device is any of webnn's (gpu: the CUDA backend, or its CPU emulation
with WEBNN_CUDA_LIBRARY=$(python kernels_cuda/emu/build_emu.py)); a case the
device's op_support_limits() does not list is left out.  Run from the
repository root (it imports tests.backends)."""
import hashlib
import json
import os
import sys


def fingerprints(device):
    sys.path.insert(0, os.getcwd())
    import numpy as np

    import webnn
    from tests.backends import opgen
    from tests.backends.test_backend_ops import run_case, unsupported

    ctx = webnn.ml.create_context(device_type=device)
    limits = ctx.op_support_limits() if device != "cpu" else None
    out = {}
    for op in webnn.OPERATORS:
        try:
            cases = opgen.cases_for(op)
        except opgen.NoCase:
            continue
        for c in cases:
            if limits is not None and unsupported(limits, c):
                continue
            try:
                res = run_case(ctx, c)
            except Exception as e:  # an error is a result too
                out[c.id] = "error: " + type(e).__name__
                continue
            h = hashlib.sha1()
            for r in res:
                h.update(np.ascontiguousarray(r).tobytes())
            out[c.id] = h.hexdigest()
    ctx.destroy()
    return out


def main(argv):
    if len(argv) == 3 and argv[0] == "--compare":
        a, b = (json.load(open(p)) for p in argv[1:])
        diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
        print(f"{len(a)} / {len(b)} cases, {len(diff)} differ")
        for k in diff[:50]:
            print("  ", k, a.get(k), b.get(k))
        return 1 if diff else 0
    if len(argv) != 2:
        print(__doc__)
        return 2
    fp = fingerprints(argv[0])
    with open(argv[1], "w") as f:
        json.dump(fp, f, indent=0, sort_keys=True)
    print(f"{len(fp)} cases -> {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
