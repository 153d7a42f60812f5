"""Fixtures of the API tests (tests/api): CPU contexts, builders, and a
watchdog so that a hang in the core fails the run instead of stalling it."""
import faulthandler
import sys

import pytest

import webnn

# A test that runs longer than this dumps every thread's stack and exits:
# the tests wait on threads with timeouts, this is only the last resort.
WATCHDOG_S = 300


@pytest.fixture(autouse=True)
def _watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=sys.stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def ctx():
    c = webnn.ml.create_context(device_type="cpu")
    yield c
    c.destroy()


@pytest.fixture
def ctx2():
    c = webnn.ml.create_context(device_type="cpu")
    yield c
    c.destroy()


@pytest.fixture
def builder(ctx):
    return webnn.MLGraphBuilder(ctx)


@pytest.fixture(scope="module")
def limits():
    c = webnn.ml.create_context(device_type="cpu")
    lim = c.op_support_limits()
    c.destroy()
    return lim
