"""Issue 14: builder methods have real signatures and docstrings made from
the operator table (the signature the core parsed), and the committed type
stubs are what scripts/gen_stubs.py writes; mypy flags a misspelt operator
or option."""
import importlib.util
import inspect
import os
import subprocess
import sys
import textwrap

import pytest

import webnn
from webnn import _core

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = _core.op_table()


def _gen_stubs():
    spec = importlib.util.spec_from_file_location("gen_stubs",
                                                  os.path.join(ROOT, "scripts", "gen_stubs.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("row", ROWS, ids=[r["camel"] for r in ROWS])
def test_signature_from_the_table(row):
    ctx = webnn.ml.create_context(device_type="cpu")
    b = webnn.MLGraphBuilder(ctx)
    sig = inspect.signature(getattr(b, row["snake"]))
    names = list(sig.parameters)
    positional = [p[0] for p in row["params"]]
    assert names[:len(positional)] == positional
    assert names[len(positional)] == "options"
    assert names[-1] == "label"
    kw = {n for n, p in sig.parameters.items() if p.kind == p.KEYWORD_ONLY}
    positional_fields = {p[3] for p in row["params"] if p[2] == "value"}
    assert kw == {f[0] for i, f in enumerate(row["fields"]) if i not in positional_fields} | {"label"}
    for i, (snake, _, _) in enumerate(row["fields"]):
        if snake in kw and row["defaults"][i] is not None:
            assert sig.parameters[snake].default == row["defaults"][i]
    # the camelCase alias is the same method
    assert getattr(b, row["camel"]) is getattr(b, row["snake"])
    doc = getattr(b, row["snake"]).__doc__
    assert "https://www.w3.org/TR/webnn/#api-mlgraphbuilder-" in doc
    assert "Parameters" in doc and "Returns" in doc and "Data types" in doc
    assert "%" not in doc.split("Parameters")[0]    # no internal markers
    ctx.destroy()


def test_signature_examples():
    b = webnn.MLGraphBuilder(webnn.ml.create_context(device_type="cpu"))
    s = inspect.signature(b.conv2d)
    assert str(s).startswith("(input: 'MLOperand', filter: 'MLOperand', options:")
    assert s.parameters["groups"].default == 1
    assert s.parameters["input_layout"].default == "nchw"
    s = inspect.signature(b.lstm)
    assert list(s.parameters)[:5] == ["input", "weight", "recurrent_weight", "steps", "hidden_size"]
    assert s.return_annotation == "List[MLOperand]"
    assert "Union[int, Sequence[int]]" in str(inspect.signature(b.split).parameters["splits"])
    assert inspect.signature(b.clamp).parameters["min_value"].default == float("-inf")
    assert "2-D convolution" in b.conv2d.__doc__
    # the methods of the classes have docstrings too
    for cls in (webnn.MLContext, webnn.MLTensor, webnn.MLGraph, webnn.MLGraphBuilder, webnn.ML):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(getattr(cls, name)):
                assert getattr(cls, name).__doc__, f"{cls.__name__}.{name} has no docstring"


def test_error_prefix_is_the_cores():
    b = webnn.MLGraphBuilder(webnn.ml.create_context(device_type="cpu"))
    x = b.input("x", {"dataType": "float32", "shape": [2]})
    with pytest.raises(TypeError, match=r"^add \(label 'a\?b'\): argument 'b': missing"):
        b.add(x, label="a\x01b")
    assert _core.op_prefix("conv2d", "stem") == "conv2d (label 'stem')"


def test_committed_stubs_are_generated():
    gen = _gen_stubs()
    for path, text in gen.generated().items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            assert f.read() == text, f"{path} is out of date: run python scripts/gen_stubs.py"
    assert os.path.exists(os.path.join(ROOT, "webnn", "py.typed"))


def test_mypy_flags_misspellings(tmp_path):
    pytest.importorskip("mypy")
    good = tmp_path / "good.py"
    bad = tmp_path / "bad.py"
    good.write_text(textwrap.dedent("""
        import numpy as np
        import webnn
        ctx = webnn.ml.create_context(device_type="cpu")
        b = webnn.MLGraphBuilder(ctx)
        x = b.input("x", {"dataType": "float32", "shape": [1, 3, 8, 8]})
        y = b.conv2d(x, b.constant(np.ones((4, 3, 3, 3), np.float32)), padding=[1, 1, 1, 1])
        z = b.split(b.relu(y), 2, axis=1)[0]
        g = b.build({"z": z})
        out: np.ndarray = ctx.compute(g, {"x": np.ones((1, 3, 8, 8), np.float32)})["z"]
    """))
    bad.write_text(textwrap.dedent("""
        import webnn
        b = webnn.MLGraphBuilder(webnn.ml.create_context())
        x = b.input("x", {"dataType": "float32", "shape": [2]})
        y = b.reluu(x)
        z = b.conv2d(x, x, paddding=[1, 1, 1, 1])
        w = b.conv2d(x, x, {"paddding": [1, 1, 1, 1]})
        v = b.cast(x, "float23")
    """))
    env = dict(os.environ, PYTHONPATH=ROOT, MYPYPATH=ROOT)
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                        "--cache-dir", str(tmp_path / "cache"), str(good), str(bad)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    out = r.stdout
    assert "good.py" not in out, out
    assert '"MLGraphBuilder" has no attribute "reluu"' in out, out
    assert 'Unexpected keyword argument "paddding"' in out, out
    assert 'bad.py:7: error: Argument 3 to "conv2d"' in out, out    # the options dict's key
    assert "float23" in out, out


def test_api_reference_covers_the_public_api():
    text = ""
    for name in ("api.rst", "operators.rst", "testing.rst"):
        with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
            text += f.read()
    for name in webnn.__all__:
        if name == "ml":
            assert ".. data:: ml" in text
            continue
        assert f":: {name}\n" in text, f"docs/api.rst does not document webnn.{name}"
    for name in ("webnn.testing", "webnn.testing.plugin", "webnn.testing.wpt"):
        assert f"automodule:: {name}\n" in text
