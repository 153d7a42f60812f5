"""The webnn pytest plugin: registered through the ``pytest11`` entry point
(``webnn = "webnn.testing.plugin"``) when the package is installed, or with
``-p webnn.testing.plugin`` / ``pytest_plugins = ["webnn.testing.plugin"]``.

Fixtures
--------
ml_context
    An :class:`webnn.MLContext`, parametrised over the devices available in
    this process (``cpu``, and ``gpu`` where a usable GPU is present); the
    test id names the device (``test_x[cpu]``).  ``--webnn-device=cpu``
    (repeatable) or the ``WEBNN_TEST_DEVICE`` environment variable picks
    devices.  One context per device and test module; it is destroyed at
    the module's end.
"""
import os

import pytest


def available_devices():
    """The devices this process can create a context on, CPU first."""
    from webnn import _core
    return [d for d in ("cpu", "gpu") if _core.device_available(d)]


def pytest_addoption(parser):
    group = parser.getgroup("webnn")
    group.addoption("--webnn-device", action="append", default=None, choices=("cpu", "gpu"),
                    help="run ml_context tests on this device (repeatable; default: every "
                         "available device, or $WEBNN_TEST_DEVICE)")


def _devices(config):
    chosen = config.getoption("--webnn-device", default=None)
    if chosen:
        return list(dict.fromkeys(chosen))
    env = os.environ.get("WEBNN_TEST_DEVICE")
    if env:
        return [d.strip() for d in env.split(",") if d.strip()]
    return available_devices()


def pytest_generate_tests(metafunc):
    if "ml_context" in metafunc.fixturenames:
        metafunc.parametrize("_webnn_device", _devices(metafunc.config), scope="module")


@pytest.fixture(scope="module")
def _webnn_device(request):
    return request.param


@pytest.fixture(scope="module")
def ml_context(_webnn_device):
    """An MLContext on each available device (see the module's docstring)."""
    import webnn
    try:
        ctx = webnn.ml.create_context(device_type=_webnn_device)
    except webnn.NotSupportedError as e:
        pytest.skip(f"no {_webnn_device} context: {e}")
    yield ctx
    ctx.destroy()
