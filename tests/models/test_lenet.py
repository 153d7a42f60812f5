"""LeNet end to end: every MNIST sample classified as its digit, and the
logits equal to a float64 NumPy run of the same network."""
import numpy as np
import pytest

import webnn
from zoo import lenet


@pytest.fixture(scope="module")
def weights():
    return lenet.load_weights()


@pytest.fixture(scope="module")
def graph(ctx, weights):
    b = webnn.MLGraphBuilder(ctx)
    logits, probs = lenet.build(b, weights, batch=10)
    return b.build({"logits": logits, "probabilities": probs})


def test_every_digit_is_classified_correctly(ctx, graph, weights):
    x = np.concatenate([lenet.load_digit(d) for d in range(10)])
    out = ctx.compute(graph, {"input": x})
    assert out["probabilities"].shape == (10, 10)
    assert out["probabilities"].argmax(1).tolist() == list(range(10))
    np.testing.assert_allclose(out["probabilities"].sum(1), 1, rtol=1e-5)
    ref_logits, ref_probs = lenet.reference(weights, x)
    # float32 accumulation over at most 800 terms of magnitude ~1e2..1e3
    np.testing.assert_allclose(out["logits"], ref_logits, rtol=1e-4,
                               atol=1e-4 * np.abs(ref_logits).max())
    np.testing.assert_allclose(out["probabilities"], ref_probs, atol=1e-5)


def test_loaders_reject_bad_files(tmp_path):
    (tmp_path / "3.idx").write_bytes(b"\0" * 800)
    with pytest.raises(ValueError):
        lenet.load_digit(3, str(tmp_path))
    (tmp_path / "lenet.bin").write_bytes(b"\0" * 10)
    with pytest.raises(ValueError):
        lenet.load_weights(str(tmp_path / "lenet.bin"))
