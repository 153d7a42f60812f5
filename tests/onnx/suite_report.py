"""Run ONNX's backend test suite against webnn.onnx.backend without the
exclusion list and print each failing test with the last line of its error:
the raw material of excluded.txt.   python tests/onnx/suite_report.py [regex]"""
import os
import re
import sys
import tempfile
import unittest

os.environ.setdefault("ONNX_HOME", os.path.join(tempfile.gettempdir(), "webnn_onnx_home"))
import onnx.backend.test  # noqa: E402

import webnn.onnx.backend as backend  # noqa: E402


def main():
    bt = onnx.backend.test.BackendTest(backend, "suite_report")
    bt.include(sys.argv[1] if len(sys.argv) > 1 else "_cpu$")
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for case in bt.test_cases.values():
        suite.addTests(loader.loadTestsFromTestCase(case))
    result = unittest.TestResult()
    suite.run(result)
    rows = []
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
