"""The suite uses webnn's own pytest plugin (webnn.testing.plugin: the
ml_context fixture).  Installed with pip, the package registers it through
its pytest11 entry point; run from the source tree, it is loaded here."""
import collections
from importlib import metadata


def _entry_point_registered():
    try:
        eps = metadata.entry_points()
        group = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", [])
    except Exception:
        return False
    return any(ep.value.strip() == "webnn.testing.plugin" for ep in group)


if not _entry_point_registered():
    pytest_plugins = ["webnn.testing.plugin"]


def pytest_configure(config):
    """An options-dict member the IDL does not define is ignored with a
    webnn.UnknownOptionWarning (WebIDL); in the suite it is an error, so that
    no code of the package or of a test passes one unnoticed (pytest.warns
    still catches the expected ones).  Without a built extension the suite
    reports that itself."""
    try:
        import webnn  # noqa: F401
    except ImportError:
        return
    config.addinivalue_line("filterwarnings", "error::webnn.UnknownOptionWarning")


def _wpt_set(nodeid):
    """the WPT data set (or behaviour file group) a test belongs to, or None"""
    nodeid = nodeid.replace("\\", "/")
    if "tests/wpt/behaviour/" in nodeid:
        return "behaviour (tests/wpt/behaviour)"
    if "tests/wpt/test_wpt.py::test_wpt[" in nodeid:
        # test_wpt[<device>-<set>/<file>/<case>] (tests/wpt/wpt_runner.py's SETS)
        head = nodeid.split("[", 1)[1].split("/", 1)[0]
        return head.split("-", 1)[-1] or "?"
    return None


def pytest_terminal_summary(terminalreporter):
    """The WPT suite's summary lines, at the end of the output: per data set,
    cases run, passed, known spec differences (known_differences.json) and
    failed.  (Here, not in tests/wpt/: pytest-xdist's controller, which
    prints the summary, loads only the conftest files above the paths it is
    given.)"""
    counts = collections.defaultdict(collections.Counter)
    for outcome in ("passed", "failed", "xfailed", "xpassed"):
        for rep in terminalreporter.stats.get(outcome, []):
            name = _wpt_set(rep.nodeid)
            if name:
                counts[name][outcome] += 1
    for name, c in sorted(counts.items()):
        terminalreporter.write_line(
            f"WPT {name}: {sum(c.values())} run, {c['passed']} passed, {c['xfailed']} known spec "
            f"differences (tests/wpt/known_differences.json), "
            f"{c['failed'] + c['xpassed']} failed")
