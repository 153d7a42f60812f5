"""The Web Platform Tests' WebNN suite: every case of the three data sets,
through the public Python API, on every device of the webnn pytest plugin
(``--webnn-device`` / ``WEBNN_TEST_DEVICE``; default every available one).

* ``data/`` -- conformance vectors, WPT 2c4fe50 (shared/wpt ``conformance/``);
* ``conformance_upstream/`` -- the upstream conformance files converted
  directly (all 95 operators, several-operator graphs);
* ``validation_upstream/`` -- the builder-validation tests (which calls must
  throw a TypeError, which must succeed with a given data type and shape),
  replayed as docs/python-api.md maps the IDL.

One pytest case per data-set case and device, with the id
``<set>/<case id>-<device>``.  The cases run in worker processes, one per
data file, two at a time (wpt_runner.py; a crash or hang costs one case),
the first time a case of a device is asked for; each test then reports its
case's result.  Cases whose upstream expectation contradicts the spec in
force are listed, with the spec text that decides, in known_differences.json
(an entry with ``devices`` holds on those devices only): they run and are
expected to fail (strictly: one that starts to pass fails the suite until
it is taken off the list), and they show as ``xfailed`` with the reason.
The data sets' READMEs give their provenance and license (3-Clause BSD).
"""
import os

import pytest

import wpt_runner

KNOWN = wpt_runner.known_differences()
# WEBNN_WPT_SETS (comma-separated set names) narrows the sets, e.g. for the
# other Python versions (tests/packaging/test_pythons.sh: conformance only)
_SETS = [s.strip() for s in os.environ.get("WEBNN_WPT_SETS", "").split(",") if s.strip()]
_UNKNOWN = sorted(set(_SETS) - set(wpt_runner.SETS))
if _UNKNOWN:
    raise ValueError(f"WEBNN_WPT_SETS: unknown data sets {_UNKNOWN}; the sets are "
                     f"{sorted(wpt_runner.SETS)} (the behaviour files are tests of their own)")
PARAMS = []
for _name in _SETS or wpt_runner.SETS:
    for _path in wpt_runner.data_files(_name):
        for _case_id in wpt_runner.case_ids(_name, _path):
            PARAMS.append(pytest.param(_name, _path, _case_id, id=f"{_name}/{_case_id}"))

_RESULTS = {}          # device -> {(set, case id): (outcome, message)}


def pytest_generate_tests(metafunc):
    if "wpt_device" in metafunc.fixturenames:
        from webnn.testing import plugin
        metafunc.parametrize("wpt_device", plugin._devices(metafunc.config), scope="module")


def _results(request, device):
    """Every selected case's result on ``device``: the files the session's
    selected items need run at the first call (all of them for the whole
    suite, a few for ``-k``)."""
    if device not in _RESULTS:
        import webnn
        try:
            webnn.ml.create_context(device_type=device).destroy()
        except webnn.NotSupportedError as e:
            pytest.skip(f"no {device} context: {e}")
        files = {(item.callspec.params["name"], item.callspec.params["path"])
                 for item in request.session.items
                 if getattr(item, "callspec", None) and "path" in item.callspec.params
                 and item.callspec.params.get("wpt_device") == device}
        _RESULTS[device] = wpt_runner.run_files(sorted(files), device, env=dict(os.environ))
    return _RESULTS[device]


@pytest.mark.parametrize("name, path, case_id", PARAMS)
def test_wpt(request, wpt_device, name, path, case_id):
    outcome, message = _results(request, wpt_device)[(name, case_id)]
    known = wpt_runner.known_on(KNOWN, f"{name}/{case_id}", wpt_device)
    if known:          # expected to fail, strictly: passing fails until unlisted
        if outcome == "passed":
            pytest.fail(f"{name}/{case_id} on {wpt_device} passes but is listed in "
                        f"known_differences.json ('{known['rule']}'): take it off the list",
                        pytrace=False)
        pytest.xfail(f"known spec difference '{known['rule']}': upstream expects "
                     f"{known['upstream expects']}; spec: {known['spec']}")
    if outcome != "passed":
        pytest.fail(f"{name}/{case_id} on {wpt_device}:\n{message}", pytrace=False)
