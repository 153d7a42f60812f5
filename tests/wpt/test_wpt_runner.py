"""The WPT runner itself (wpt_runner.py): a worker that crashes or hangs
costs the case it was in, the others still run and report; a failing case
reports its mismatch; every case gets a result."""
import json
import os

import pytest

import wpt_runner


def _case(name, a, expected):
    return {"name": name, "graph": {
        "inputs": {"x": {"data": [a], "descriptor": {"shape": [1], "dataType": "float32"},
                         "constant": False}},
        "operators": [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}],
        "expectedOutputs": {"y": {"data": [expected],
                                  "descriptor": {"shape": [1], "dataType": "float32"}}}},
        "tolerance": {"metric": "ULP", "value": 0}}


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "relu.json"
    path.write_text(json.dumps({"tests": [_case("one", -1, 0), _case("two", 2, 2),
                                          _case("three", 3, 3), _case("wrong", 4, 5)]}))
    return path


def _run(path, timeout=None, **env):
    return wpt_runner.run_file("conformance", path, "cpu", env=dict(os.environ, **env),
                               timeout=timeout)


def test_results_of_a_file(data_file):
    r = _run(data_file)
    assert [r[f"relu/{n}"][0] for n in ("one", "two", "three", "wrong")] == \
        ["passed", "passed", "passed", "failed"]
    assert "got 4.0" in r["relu/wrong"][1] and "expected 5.0" in r["relu/wrong"][1]


def test_a_crash_costs_the_case_it_was_in(data_file):
    r = _run(data_file, WEBNN_WPT_TEST_CRASH="relu/two")
    assert r["relu/two"][0] == "failed" and "crashed the worker" in r["relu/two"][1]
    assert r["relu/one"][0] == r["relu/three"][0] == "passed"
    assert r["relu/wrong"][0] == "failed" and "crashed" not in r["relu/wrong"][1]


def test_a_hang_costs_the_case_it_was_in(data_file):
    r = _run(data_file, timeout=4, WEBNN_WPT_TEST_HANG="relu/one")
    assert r["relu/one"][0] == "failed" and "hung" in r["relu/one"][1]
    assert r["relu/two"][0] == r["relu/three"][0] == "passed"


def test_workers_that_cannot_start_fail_the_file_at_once(data_file):
    """A broken installation: every worker dies at once; two tries, then
    every case of the file fails with the reason (not 4000 restarts)."""
    r = _run(data_file, WEBNN_WPT_TEST_CRASH="*")
    assert all(v[0] == "failed" for v in r.values()), r
    assert sum("no worker could start" in v[1] for v in r.values()) >= 2, r


def test_the_summary_counts_known_differences_apart():
    results = {("s", "a"): ("passed", ""), ("s", "b"): ("failed", "x"),
               ("s", "c"): ("failed", "y"), ("s", "d"): ("passed", "")}
    known = {"s/c": {"rule": "r"}, "s/d": {"rule": "r"}, "s/b": {"rule": "r", "devices": ["gpu"]}}
    counts, failures = wpt_runner.summary(results, known, "cpu")
    assert counts == {"run": 4, "passed": 1, "known differences": 1, "failed": 2}
    assert [f[1] for f in failures] == ["b", "d"]      # d: listed, but passes
    counts, failures = wpt_runner.summary(results, known, "gpu")   # b is listed on the gpu
    assert counts == {"run": 4, "passed": 1, "known differences": 2, "failed": 1}


def test_every_listed_known_difference_names_a_case_of_the_data():
    """known_differences.json cannot list a case the data sets do not have."""
    ids = {f"{n}/{i}" for n in wpt_runner.SETS for p in wpt_runner.data_files(n)
           for i in wpt_runner.case_ids(n, p)}
    known = wpt_runner.known_differences()
    missing = [k for k in known if not k.startswith("behaviour/") and k not in ids]
    assert not missing, missing
    for entry in known.values():
        assert entry["spec"] and entry["upstream expects"], entry
