import os
import sys

import pytest

import webnn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


@pytest.fixture(scope="module")
def ctx():
    return webnn.ml.create_context(device_type=os.environ.get("WEBNN_TEST_DEVICE", "cpu"))
