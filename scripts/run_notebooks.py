"""Runs every notebook of notebooks/ top to bottom with nbclient (a failing
cell fails the run) and checks that they are stored without outputs.

    python scripts/run_notebooks.py [notebooks/NAME.ipynb ...]

Each runs in notebooks/ (so relative paths work) on the `python3` kernel of
the running interpreter; the outputs are not written back.  Prints the time
each took."""
import glob
import os
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NB_DIR = os.path.join(ROOT, "notebooks")


def stored_clean(nb):
    return all(not c.get("outputs") and c.get("execution_count") is None
               for c in nb.cells if c.cell_type == "code")


def main():
    paths = sys.argv[1:] or sorted(glob.glob(os.path.join(NB_DIR, "*.ipynb")))
    os.environ["PYTHONPATH"] = ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    failed = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        name = os.path.basename(path)
        if not stored_clean(nb):
            failed.append(name)
            print(f"{name}: stored with outputs (clear them: jupyter nbconvert --clear-output)")
            continue
        t0 = time.perf_counter()
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": os.path.dirname(path)}})
        try:
            client.execute()
        except CellExecutionError as e:
            failed.append(name)
            print(f"{name}: FAILED\n{e}")
            continue
        print(f"{name}: ok ({time.perf_counter() - t0:.1f} s, {len(nb.cells)} cells)")
    if failed:
        sys.exit(f"notebooks failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
