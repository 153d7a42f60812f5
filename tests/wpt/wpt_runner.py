"""The WPT runner: every case of the three data sets through the public
Python API, one worker process per data file (at most ``WEBNN_WPT_JOBS``,
default 2, at once), so that a crash or a hang costs the case it happened
in, not the suite.

Data sets (folders of this directory):

* ``data/`` -- ``conformance/`` of shared/wpt (WPT 2c4fe50, 1479 cases);
* ``conformance_upstream/`` -- the upstream files converted directly (1911);
* ``validation_upstream/cases/`` -- the builder-validation tests (923).

A worker (``python wpt_runner.py worker KIND FILE DEVICE START``) runs the
cases of one file from index START on and prints one JSON line per case:
``{"i", "id", "outcome": "passed" | "failed", "message"}``; a duplicate-name
validation case (known_differences.json, ``adjust: unique_input_names``) is
also replayed with unique names, as ``<id> [unique input names]``.  The
parent (:func:`run_all`) reads the lines; when a worker dies or runs past
``FILE_TIMEOUT`` seconds, the case it was in is recorded as crashed (or
hung) and a new worker goes on from the next case.

Run alone: ``python tests/wpt/wpt_runner.py [--device cpu] [--set NAME]`` prints
the counts (and each failure); pytest runs it through test_wpt.py.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SETS = {
    "conformance": ("conformance", HERE / "data"),
    "conformance_upstream": ("conformance", HERE / "conformance_upstream"),
    "validation_upstream": ("validation", HERE / "validation_upstream" / "cases"),
}
KNOWN_FILE = HERE / "known_differences.json"
FILE_TIMEOUT = float(os.environ.get("WEBNN_WPT_FILE_TIMEOUT", 300))
UNIQUE = " [unique input names]"


def known_differences():
    """``{case key: entry}`` of known_differences.json (key: ``<set>/<id>``)."""
    with open(KNOWN_FILE, encoding="utf-8") as fh:
        data = json.load(fh)
    return {c["case"]: dict(data["rules"][c["rule"]], **c) for c in data["cases"]}


def known_on(known, key, device):
    """The known_differences.json entry of ``key`` when it holds on
    ``device`` (an entry with ``devices`` holds on those only), else None."""
    entry = known.get(key)
    if entry and device in entry.get("devices", [device]):
        return entry
    return None


def data_files(name):
    _, folder = SETS[name]
    return [f for f in sorted(folder.glob("*.json")) if f.name != "MANIFEST.json"]


def case_ids(name, path):
    """The case ids of one data file, in order (the extra unique-name replays
    included), without running anything."""
    kind, _ = SETS[name]
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if kind == "conformance":
        return [f"{path.stem}/{c['name']}" for c in data["tests"]]
    known = known_differences()
    ids = []
    for c in data["cases"]:
        ids.append(c["id"])
        if _adjust(known, name, c["id"]) == "unique_input_names":
            ids.append(c["id"] + UNIQUE)
    return ids


def _adjust(known, name, case_id):
    return known.get(f"{name}/{case_id}", {}).get("adjust")


# ---- the worker ---------------------------------------------------------------
def _worker(name, path, device, start):
    sys.path.insert(0, str(HERE))
    sys.path.append(str(ROOT))          # webnn from the source tree, unless installed
    import webnn
    from webnn.testing import wpt
    kind, _ = SETS[name]
    ctx = webnn.ml.create_context(device_type=device)

    def emit(i, case_id, message):
        print(json.dumps({"i": i, "id": case_id, "outcome": "failed" if message else "passed",
                          "message": message or ""}), flush=True)

    def run(fn):
        try:
            return fn()
        except Exception as e:                          # noqa: BLE001 - the case's result
            return f"{type(e).__name__}: {e}"

    # the runner's own tests (test_wpt_runner.py): a case that kills or hangs
    # the worker, as a crash or a deadlock in the package would
    crash, hang = os.environ.get("WEBNN_WPT_TEST_CRASH"), os.environ.get("WEBNN_WPT_TEST_HANG")
    if crash == "*":                    # a worker that cannot start at all
        os.abort()
    if kind == "conformance":
        cases = wpt.load_cases(path)
        for i in range(start, len(cases)):
            c = cases[i]
            if c.id == crash:
                os.abort()
            if c.id == hang:
                time.sleep(3600)
            emit(i, c.id, run(lambda: "\n".join(wpt.run_case(ctx, c)) or None))
        return
    import warnings

    import wpt_validation as validation
    known = known_differences()
    cases = validation.load(path)
    for i in range(start, len(cases)):
        c = cases[i]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", webnn.UnknownOptionWarning)
            emit(i, c["id"], run(lambda: validation.replay(ctx, c)))
            if _adjust(known, name, c["id"]) == "unique_input_names":
                unique = validation.unique_input_names(c)
                emit(i, c["id"] + UNIQUE, run(lambda: validation.replay(ctx, unique)))


# ---- the parent ---------------------------------------------------------------
def run_file(name, path, device, env=None, timeout=None):
    """``{case id: (outcome, message)}`` for one data file, restarting the
    worker after the case a crash or a hang was in."""
    ids = case_ids(name, path)
    kind, _ = SETS[name]
    n_cases = len(json.loads(path.read_text(encoding="utf-8"))[
        "tests" if kind == "conformance" else "cases"])
    results, start, empty_runs = {}, 0, 0
    while start < n_cases:
        cmd = [sys.executable, str(Path(__file__).resolve()), "worker", name, str(path),
               device, str(start)]
        errfile = tempfile.TemporaryFile(mode="w+")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errfile, text=True,
                                env=env, cwd=str(ROOT))
        timer = threading.Timer(timeout or FILE_TIMEOUT, proc.kill)
        timer.start()
        last = start - 1
        try:
            for line in proc.stdout:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue                            # stray output of a case
                results[r["id"]] = (r["outcome"], r["message"])
                last = r["i"]
            rc = proc.wait()
            errfile.seek(0)
            err = errfile.read()
            errfile.close()
        finally:
            timed_out = not timer.is_alive() and proc.returncode not in (0, None)
            timer.cancel()
        if rc == 0 and last == n_cases - 1:
            break
        # the case after the last one reported crashed the worker (or hung)
        bad = last + 1 if last + 1 < n_cases else last
        what = (f"hung (no result in {timeout or FILE_TIMEOUT:g} s)" if timed_out
                else f"crashed the worker (exit status {rc})")
        for case_id in _ids_of_case(ids, kind, bad, path):
            results.setdefault(case_id, ("failed", f"{what}: {err[-2000:]}"))
        # two workers in a row with no result: they cannot start (a broken
        # build, say); the file's other cases fail with that, not one by one
        empty_runs = empty_runs + 1 if last < start else 0
        if empty_runs >= 2:
            for case_id in ids:
                results.setdefault(case_id, ("failed", f"no worker could start: {err[-2000:]}"))
            break
        start = bad + 1
    for case_id in ids:                                 # every id has a result
        results.setdefault(case_id, ("failed", "no result from the worker"))
    return results


def _ids_of_case(ids, kind, index, path):
    """The ids (the case and its unique-name replay) of the case at ``index``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if kind == "conformance":
        return [f"{path.stem}/{data['tests'][index]['name']}"]
    cid = data["cases"][index]["id"]
    return [i for i in ids if i in (cid, cid + UNIQUE)]


def run_files(files, device, jobs=None, env=None):
    """``{(set name, case id): (outcome, message)}`` for ``files`` (pairs of
    set name and data file), ``jobs`` workers at a time (WEBNN_WPT_JOBS,
    default 2)."""
    jobs = jobs or int(os.environ.get("WEBNN_WPT_JOBS", 2))
    # the biggest files first, so that the workers end together
    files = sorted(files, key=lambda nf: -nf[1].stat().st_size)
    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for (n, _), res in zip(files, pool.map(lambda nf: run_file(*nf, device, env), files)):
            results.update({(n, k): v for k, v in res.items()})
    return results


def run_all(names, device, jobs=None, env=None):
    """The results of every file of the named sets (see run_files)."""
    return run_files([(n, f) for n in names for f in data_files(n)], device, jobs, env)


def summary(results, known, device="cpu"):
    """Counts: cases run, passed, known differences (failing as listed),
    failed; and the failures not listed."""
    counts = {"run": 0, "passed": 0, "known differences": 0, "failed": 0}
    failures = []
    for (name, case_id), (outcome, message) in sorted(results.items()):
        counts["run"] += 1
        listed = known_on(known, f"{name}/{case_id}", device) is not None
        if outcome == "passed" and not listed:
            counts["passed"] += 1
        elif outcome == "failed" and listed:
            counts["known differences"] += 1
        else:
            counts["failed"] += 1
            failures.append((name, case_id, "passes but is listed as a known difference"
                             if listed else message))
    return counts, failures


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--set", action="append", choices=sorted(SETS))
    ap.add_argument("--jobs", type=int, default=None)
    a = ap.parse_args(argv)
    names = a.set or list(SETS)
    t0 = time.time()
    results = run_all(names, a.device, a.jobs)
    counts, failures = summary(results, known_differences(), a.device)
    for name, case_id, message in failures:
        print(f"FAILED {name}/{case_id}: {message}")
    print(f"WPT ({', '.join(names)}) on {a.device}: "
          + ", ".join(f"{v} {k}" for k, v in counts.items())
          + f" in {time.time() - t0:.1f} s")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        _worker(sys.argv[2], Path(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(main(sys.argv[1:]))
