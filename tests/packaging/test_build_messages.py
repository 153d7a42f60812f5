"""Building without BLIS stops at once with a message that says what to
install or how to point at it (setup.py's find_blis)."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def assert_says_what_to_install(msg):
    for hint in ("apt-get install libblis-dev", "dnf install blis-devel",
                 "conda install -c conda-forge blis", "BLIS_DIR=", "pip install webnn"):
        assert hint in msg, msg


def test_no_blis_anywhere(setup_py, tmp_path):
    with pytest.raises(setup_py.BlisNotFound) as e:
        setup_py.find_blis({}, system_includes=[str(tmp_path)])
    assert "blis.h was not found" in str(e.value)
    assert_says_what_to_install(str(e.value))


def test_blis_dir_without_blis(setup_py, tmp_path):
    with pytest.raises(setup_py.BlisNotFound) as e:
        setup_py.find_blis({"BLIS_DIR": str(tmp_path)}, system_includes=[])
    assert f"BLIS_DIR={tmp_path} has no include/blis.h" in str(e.value)
    assert_says_what_to_install(str(e.value))


def fake_prefix(root, nested):
    inc = root / "include" / ("blis" if nested else "")
    inc.mkdir(parents=True)
    (inc / "blis.h").write_text("/* */\n")
    (root / "lib").mkdir()
    (root / "lib" / "libblis.so").write_bytes(b"")
    return str(inc.resolve()), str((root / "lib").resolve())


@pytest.mark.parametrize("nested", [False, True], ids=["include", "include-blis"])
def test_blis_dir(setup_py, tmp_path, nested):
    inc, lib = fake_prefix(tmp_path, nested)
    assert setup_py.find_blis({"BLIS_DIR": str(tmp_path)}, system_includes=[]) == \
        ([inc.rstrip("/")], [lib], [lib])


def test_conda_prefix(setup_py, tmp_path):
    inc, lib = fake_prefix(tmp_path, True)
    assert setup_py.find_blis({"CONDA_PREFIX": str(tmp_path)}, system_includes=[]) == \
        ([inc], [lib], [lib])


def test_system_fedora_layout(setup_py, tmp_path):
    (tmp_path / "blis").mkdir()
    (tmp_path / "blis" / "blis.h").write_text("")
    assert setup_py.find_blis({}, system_includes=[str(tmp_path)]) == \
        ([str(tmp_path / "blis")], [], [])


def test_debian_prefix_without_blis(setup_py, tmp_path):
    with pytest.raises(setup_py.BlisNotFound) as e:
        setup_py.find_blis({"WEBNN_BLIS_PREFIX": str(tmp_path)}, system_includes=[])
    assert "WEBNN_BLIS_PREFIX=" in str(e.value)


def test_build_stops_with_the_message(tmp_path):
    """setup.py itself: build_ext with a BLIS_DIR that holds no BLIS stops
    before compiling anything, the message on stderr."""
    env = dict(os.environ, BLIS_DIR=str(tmp_path / "none"), WEBNN_NO_CUDA="1")
    r = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--build-lib",
                        str(tmp_path / "lib"), "--build-temp", str(tmp_path / "tmp")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "webnn: BLIS was not found" in r.stderr, r.stderr
    assert_says_what_to_install(r.stderr)
    assert not (tmp_path / "tmp").exists() or not list((tmp_path / "tmp").rglob("*.o"))
