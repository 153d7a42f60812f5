"""The WPT suite's summary line: cases run, passed, known spec differences
(known_differences.json), failed -- per data set, at the end of the output."""
import collections

from wpt_runner import SETS


def pytest_terminal_summary(terminalreporter):
    counts = collections.defaultdict(collections.Counter)
    for outcome in ("passed", "failed", "xfailed", "xpassed"):
        for rep in terminalreporter.stats.get(outcome, []):
            nodeid = rep.nodeid.replace("\\", "/")
            if "tests/wpt/behaviour/" in nodeid:
                name = "behaviour (tests/wpt/behaviour)"
            elif "tests/wpt/test_wpt.py::test_wpt[" in nodeid:
                param = nodeid.split("[", 1)[1]
                name = next((n for n in SETS if f"-{n}/" in param or param.startswith(f"{n}/")),
                            "?")
            else:
                continue
            counts[name][outcome] += 1
    for name, c in sorted(counts.items()):
        terminalreporter.write_line(
            f"WPT {name}: {sum(c.values())} run, {c['passed']} passed, {c['xfailed']} known spec "
            f"differences (tests/wpt/known_differences.json), "
            f"{c['failed'] + c['xpassed']} failed")
