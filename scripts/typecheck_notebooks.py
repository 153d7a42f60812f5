"""Type-checks the code of notebooks/ with mypy --strict: the code cells of
each notebook become one module in build/nb_typecheck/ (IPython magics and
shell lines are left out; top-level `await`, which IPython runs, is
allowed), then mypy checks them with examples/ on its path.

    python scripts/typecheck_notebooks.py"""
import glob
import os
import subprocess
import sys

import nbformat

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "build", "nb_typecheck")


def extract(path):
    nb = nbformat.read(path, as_version=4)
    lines = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        lines.append(f"# ---- cell {i}")
        for ln in cell.source.splitlines():
            lines.append("# " + ln if ln.lstrip().startswith(("%", "!")) else ln)
        # a cell's last expression is displayed by IPython, not used
    return "\n".join(lines) + "\n"


def main():
    os.makedirs(OUT, exist_ok=True)
    files = []
    for path in sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb"))):
        name = "nb_" + os.path.splitext(os.path.basename(path))[0] + ".py"
        target = os.path.join(OUT, name)
        with open(target, "w", encoding="utf-8") as f:
            f.write(extract(path))
        files.append(target)
    env = dict(os.environ, MYPYPATH=os.path.join(ROOT, "examples") + os.pathsep + ROOT)
    cmd = [sys.executable, "-m", "mypy", "--strict", "--disable-error-code", "top-level-await",
           "--cache-dir", os.path.join(ROOT, "build", "mypy-cache")] + files
    sys.exit(subprocess.call(cmd, cwd=ROOT, env=env))


if __name__ == "__main__":
    main()
