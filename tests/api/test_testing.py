"""Issue 14: webnn.testing (assert_close with the WPT metrics), the pytest
plugin's ml_context fixture, the WPT JSON loader."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import webnn
from webnn.testing import assert_close, ulp_distance, wpt
from webnn.testing.plugin import available_devices



def test_ulp():
    one = np.float32(1)
    nxt = np.nextafter(one, np.float32(2))
    assert ulp_distance(np.array([nxt]), np.array([one]))[0] == 1
    assert ulp_distance(np.array([0.0], np.float32), np.array([-0.0], np.float32))[0] == 0
    assert ulp_distance(np.array([np.nan], np.float32), np.array([np.nan], np.float32))[0] == 0
    assert_close(np.array([nxt]), [1.0], data_type="float32", metric="ulp", tolerance=1)
    with pytest.raises(AssertionError, match="1 of 1 elements off, tolerance 0 ULP"):
        assert_close(np.array([nxt]), [1.0], data_type="float32")
    h = np.array([1.0], np.float16)
    assert_close(np.nextafter(h, np.float16(2)), [1.0], data_type="float16", tolerance=1)


def test_atol_and_integers():
    assert_close(np.array([1.0, 2.0], np.float32), [1.001, 2.0], data_type="float32",
                 metric="atol", tolerance=1e-2)
    with pytest.raises(AssertionError, match=r"index 1 \(0, 1\)"):
        assert_close(np.array([[1.0, 2.5]], np.float32), [[1.0, 2.0]], data_type="float32",
                     metric="atol", tolerance=0.1)
    with pytest.raises(AssertionError, match="got dtype float64"):
        assert_close(np.array([1.0]), [1.0], data_type="float32")
    with pytest.raises(AssertionError):     # integers are exact whatever the tolerance
        assert_close(np.array([3], np.int32), [4], data_type="int32", tolerance=5)
    assert_close(np.array([2 ** 62 + 1], np.int64), [2 ** 62 + 1], data_type="int64")
    with pytest.raises(AssertionError, match="NaN|nan"):
        assert_close(np.array([np.nan], np.float32), [1.0], data_type="float32", tolerance=1e9)


def test_ml_context_fixture(ml_context, request):
    assert isinstance(ml_context, webnn.MLContext)
    assert ml_context.device_type in available_devices()
    assert f"[{ml_context.device_type}]" in request.node.name


def test_wpt_loader(tmp_path, ml_context):
    case = {"name": "relu small", "graph": {
        "inputs": {"x": {"data": [-1, 2], "descriptor": {"shape": [2], "dataType": "float32"},
                         "constant": False}},
        "operators": [{"name": "relu", "arguments": [{"input": "x"}], "outputs": "y"}],
        "expectedOutputs": {"y": {"data": [0, 2],
                                  "descriptor": {"shape": [2], "dataType": "float32"}}}},
        "tolerance": {"metric": "ULP", "value": 0}}
    wrong = json.loads(json.dumps(case))
    wrong["name"] = "relu wrong"
    wrong["graph"]["expectedOutputs"]["y"]["data"] = [0, 3]
    (tmp_path / "relu.json").write_text(json.dumps({"tests": [case, wrong]}))
    cases = wpt.load_cases(tmp_path)
    assert [c.id for c in cases] == ["relu/relu small", "relu/relu wrong"]
    assert cases[0].operators == ["relu"]
    assert wpt.run_case(ml_context, cases[0]) == []
    msgs = wpt.run_case(ml_context, cases[1])
    assert len(msgs) == 1 and "output 'y'" in msgs[0] and "expected 3.0" in msgs[0]


def test_readme_user_test_runs_with_the_plugin(tmp_path):
    """The README's ten-line test, run by pytest with the plugin."""
    (tmp_path / "test_user.py").write_text(textwrap.dedent('''
        import numpy as np
        from webnn import MLGraphBuilder
        from webnn.testing import assert_close

        def test_gelu(ml_context):
            b = MLGraphBuilder(ml_context)
            x = b.input("x", {"data_type": "float32", "shape": [3]})
            g = b.build({"y": b.gelu(x)})
            y = ml_context.compute(g, {"x": np.array([-1, 0, 1], np.float32)})["y"]
            assert_close(y, [-0.15865525, 0.0, 0.84134475], data_type="float32", tolerance=18)
    '''))
    # the webnn this run imports (the checkout, or a sanitizer's or another
    # Python version's build of it)
    import webnn
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(webnn.__file__))))
    env.pop("WEBNN_TEST_DEVICE", None)
    # the plugin by name, entry points off: what the subprocess can import
    # decides, not what this process's metadata says is installed
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    plugin = ["-p", "webnn.testing.plugin"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        *plugin, "--webnn-device", "cpu", str(tmp_path / "test_user.py")],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


# ---- issue 32: assert_close infers the data type ---------------------------------------
def test_assert_close_infers_the_data_type_from_the_arrays():
    h = np.nextafter(np.array([1.0], np.float16), np.float16(2))      # 1 float16 ULP off
    assert_close(h, [1.0], tolerance=1)                  # float16 ULPs (float32: 8192 ULP)
    with pytest.raises(AssertionError, match=r"\(float16, shape \[1\]\).*tolerance 0 ULP"):
        assert_close(h, [1.0])
    f = np.nextafter(np.array([1.0], np.float32), np.float32(2))
    assert_close(f, [1.0], tolerance=1)
    with pytest.raises(AssertionError, match=r"\(float32"):
        assert_close(f, [1.0])
    # integers: exact whatever the tolerance
    with pytest.raises(AssertionError, match=r"\(int64"):
        assert_close(np.array([3], np.int64), [4], tolerance=5)
    assert_close(np.array([3], np.uint8), [3])
    # a list for actual: expected's dtype decides
    assert_close([1.0], np.array([1.0], np.float32))
    assert webnn.testing.infer_data_type([1], np.array([1], np.uint32)) == "uint32"
    assert webnn.testing.infer_data_type(np.array([1], np.int8), [1.0]) == "int8"
    # nothing to infer from: a TypeError that says so
    with pytest.raises(TypeError, match="cannot infer the data type.*float64.*data_type="):
        assert_close(np.array([1.0]), [1.0])
    with pytest.raises(TypeError, match="cannot infer"):
        assert_close([1.0], [1.0])
    # an explicit data_type still wins
    with pytest.raises(AssertionError, match="got dtype float16"):
        assert_close(h, [1.0], data_type="float32")


def test_the_readme_pytest_example_is_a_first_test_that_passes(ml_context):
    """The README's "Testing with pytest" block, run as written."""
    import re
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md"),
                  encoding="utf-8").read()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    block = next(b for b in blocks if "def test_gelu(ml_context)" in b)
    assert "data_type=" not in block.split("assert_close(", 1)[1].split(")", 1)[0]
    namespace = {}
    exec(compile(block, "README.md", "exec"), namespace)
    namespace["test_gelu"](ml_context)


def test_wpt_tensor_data_of_a_type_outside_the_spec_is_a_type_error():
    with pytest.raises(TypeError, match="'int4' is not an MLOperandDataType"):
        wpt.tensor_data({"data": [1], "descriptor": {"shape": [1], "dataType": "int4"}})


def test_suite_runs_with_the_plugin_installed_and_from_the_tree(tmp_path):
    """tests/conftest.py loads the plugin only where no pytest11 entry point
    does (a pip-installed webnn): a run of the suite must work both ways, with
    --webnn-device on the command line (CI once failed where a subprocess
    named the plugin with -p beside an installed entry point).  Run outside
    the checkout, so that the webnn imported is this run's (another Python
    version's build), never the source tree's."""
    import webnn
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dist = tmp_path / "webnn-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: webnn\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\nwebnn = webnn.testing.plugin\n")
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(webnn.__file__)))
    this = os.path.join(root, "api", "test_testing.py")
    for extra in ([], [str(tmp_path)]):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([pkg_root, *extra]))
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "--webnn-device=cpu",
                            this + "::test_assert_close_infers_the_data_type_from_the_arrays"],
                           capture_output=True, text=True, cwd=str(tmp_path), env=env,
                           timeout=120)
        assert r.returncode == 0 and "1 passed" in r.stdout, (extra, r.stdout[-2000:] + r.stderr[-2000:])
