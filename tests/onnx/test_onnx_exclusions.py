"""The exclusion list stays honest: every excluded node test (except the
'numeric:' ones, which run and differ) still fails with webnn's
NotSupportedError -- or, the 'checker:' ones, with the TypeError of
onnx.checker's full check -- never another exception, never a result -- and
every line names a test that exists."""
import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx.backend.test.loader import load_model_tests  # noqa: E402
from onnx.backend.test.runner import _normalize_tensor  # noqa: E402

import webnn  # noqa: E402
import webnn.onnx.backend as backend  # noqa: E402

import pathlib  # noqa: E402


def _excluded():
    out = {}
    for line in (pathlib.Path(__file__).parent / "excluded.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, why = line.split("\t", 1)
            out[name] = why
    return out


EXCLUDED = _excluded()

NODE = {t.name: t for t in load_model_tests(kind="node")}


def test_every_excluded_name_exists():
    import os
    import onnx
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    models = set()
    for kind in ("real", "simple", "pytorch-converted", "pytorch-operator"):
        models.update(os.listdir(os.path.join(data, kind)))
    unknown = [n for n in EXCLUDED if n not in NODE and n not in models]
    assert not unknown, unknown


@pytest.mark.parametrize("name", sorted(n for n, why in EXCLUDED.items()
                                        if n in NODE and not why.startswith("numeric:")))
def test_excluded_node_test_raises_not_supported(name):
    case = NODE[name]
    # 'checker:' lines: onnx.checker's full check refuses the model (TypeError)
    want = TypeError if EXCLUDED[name].startswith("checker:") else webnn.NotSupportedError
    with pytest.raises(want):
        rep = backend.prepare(case.model, "CPU")
        for inputs, _ in case.data_sets:
            rep.run([_normalize_tensor(np.asarray(i) if not hasattr(i, "SerializeToString")
                                       else i) for i in inputs])
