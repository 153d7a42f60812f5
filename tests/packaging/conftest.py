"""setup.py loaded as a module (setup() runs only as __main__), for the tests
of its functions (test_build_messages.py, test_build_cache.py)."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_setup_py():
    """setup.py as a module, its flags as the environment now makes them"""
    spec = importlib.util.spec_from_file_location("webnn_setup_py", ROOT / "setup.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def setup_py():
    return load_setup_py()


@pytest.fixture
def setup_py_loader():
    return load_setup_py
