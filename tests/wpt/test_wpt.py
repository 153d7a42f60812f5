"""WebNN conformance tests from the Web Platform Tests (WPT).

One pytest case per test vector in ``data/*.json`` and device, with the id
``<file>/<test name>-<device>`` (for example ``add/add float32 1D constant
tensors-cpu``).  The vectors are the WPT ``webnn/conformance_tests/*.https.any.js``
cases, converted to JSON (via rustnn/pywebnn) and normalized; they are
BSD-3-Clause licensed.  ``data/README.md`` gives their provenance and license,
and the vector set's README (shared/wpt/README.md) defines the layout, the
value encodings and the tolerance rules.

The loading, running and comparing is the package's own
:mod:`webnn.testing.wpt` (what users run on vectors of their own), the
contexts come from the webnn pytest plugin's ``ml_context`` fixture (every
available device).  Cases whose operator is not in ``webnn.OPERATORS`` are
skipped.
"""
from pathlib import Path

import pytest

from webnn.testing import wpt

DATA_DIR = Path(__file__).parent / "data"
CASES = wpt.load_cases(DATA_DIR)


@pytest.mark.parametrize("case", wpt.pytest_params(CASES))
def test_wpt(ml_context, case):
    wpt.check_case(ml_context, case)
