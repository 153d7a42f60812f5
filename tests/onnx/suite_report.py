"""Run ONNX's backend test suite against webnn.onnx.backend without the
exclusion list and print each failing test with the last line of its error:
the raw material of excluded.txt.   python tests/onnx/suite_report.py [regex]"""
import os
import sys
import tempfile
import unittest

os.environ.setdefault("ONNX_HOME", os.path.join(tempfile.gettempdir(), "webnn_onnx_home"))
import onnx.backend.test  # noqa: E402

import webnn.onnx.backend as backend  # noqa: E402


def _iter(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _iter(t)
        else:
            yield t


def main():
    bt = onnx.backend.test.BackendTest(backend, "suite_report")
    bt.include(sys.argv[1] if len(sys.argv) > 1 else "_cpu$")
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for case in bt.test_cases.values():
        suite.addTests(loader.loadTestsFromTestCase(case))
    all_ids = [t.id() for t in _iter(suite)]
    result = unittest.TestResult()
    suite.run(result)
    rows = []
    failed_ids = {t.id() for t, _ in result.errors + result.failures}
    skipped_ids = {t.id() for t, _ in result.skipped}
    per_kind = {}
    for tid in all_ids:
        kind = tid.split(".")[-2].replace("OnnxBackend", "").replace("ModelTest", "")
        if tid in skipped_ids:
            continue
        ran_, ok_ = per_kind.get(kind, (0, 0))
        per_kind[kind] = (ran_ + 1, ok_ + (tid not in failed_ids))
    for kind, (ran_, ok_) in sorted(per_kind.items()):
        print(f"# {kind}: {ok_} of {ran_} pass", file=sys.stderr)
    for test, tb in result.errors + result.failures:
        name = test.id().split(".")[-1]
        lines = [ln for ln in tb.strip().splitlines() if ln.strip()]
        last = lines[-1]
        for ln in lines:
            if ln.startswith(("webnn.", "AssertionError", "Mismatched elements",
                              "Max absolute difference")):
                last = ln
                break
        rows.append((name, last[:300]))
    ran = result.testsRun - len(result.skipped)
    print(f"# ran {ran}, failed {len(rows)}, passed {ran - len(rows)}", file=sys.stderr)
    for name, why in sorted(rows):
        print(f"{name}\t{why}")


if __name__ == "__main__":
    main()
