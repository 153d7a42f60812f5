"""examples/onnx_dask.py on a LocalCluster of two worker processes: every
worker loads the model once, and the results equal a single-process run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[2]


def test_dask_two_workers_equal_single_process():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "onnx_dask.py"),
                        "--images", "700", "--workers", "2"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "results equal to the single-process run: True" in r.stdout
    loads = [ln for ln in r.stdout.splitlines() if ln.startswith("model loads per worker")]
    assert loads and loads[0].count(": 1") == 2, r.stdout
