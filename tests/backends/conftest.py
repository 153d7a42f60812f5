"""Fixtures of the GPU backend's tests: one GPU and one CPU context per test
module (the tests that use them are marked to skip without a usable GPU)."""
import pytest

import webnn


@pytest.fixture(scope="module")
def gctx():
    ctx = webnn.ml.create_context(device_type="gpu")
    assert ctx.device_type == "gpu" and ctx.accelerated
    yield ctx
    ctx.destroy()


@pytest.fixture(scope="module")
def cctx():
    ctx = webnn.ml.create_context(device_type="cpu")
    yield ctx
    ctx.destroy()
