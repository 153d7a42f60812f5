"""The behaviour tests' known spec differences: entries of
../known_differences.json with the set "behaviour" (one list for the whole
WPT suite).  ``spec_difference(case)`` marks a test xfail(strict=True) with
the rule's reason and spec text; a case missing from the list is an error
at import, so the two cannot drift apart."""
import json
from pathlib import Path

import pytest

_FILE = Path(__file__).resolve().parent.parent / "known_differences.json"
_DATA = json.loads(_FILE.read_text(encoding="utf-8"))
_CASES = {c["case"]: c["rule"] for c in _DATA["cases"]}


def spec_difference(case):
    """The xfail(strict=True) mark of ``behaviour/<case>``."""
    key = f"behaviour/{case}"
    if key not in _CASES:
        raise KeyError(f"{key} is not in {_FILE.name}")
    rule = _DATA["rules"][_CASES[key]]
    return pytest.mark.xfail(strict=True, reason=(
        f"known spec difference '{_CASES[key]}': upstream expects {rule['upstream expects']}; "
        f"spec: {rule['spec']}"))
