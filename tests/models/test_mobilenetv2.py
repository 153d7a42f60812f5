"""MobileNetV2 backbone end to end: the 1280-wide features of the photo (and
of a batch of random inputs) equal a float64 NumPy run of the same network
within a float32 tolerance."""
import numpy as np
import pytest

import webnn
from zoo import mobilenetv2


@pytest.fixture(scope="module")
def weights():
    return mobilenetv2.load_weights()


def _features(ctx, weights, x):
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"f": mobilenetv2.build(b, weights, batch=x.shape[0])})
    return ctx.compute(g, {"input": x})["f"]


def _check(got, ref):
    assert got.shape == ref.shape and got.dtype == np.float32
    # 52 float32 convolutions in a row: errors of ~1e-6 relative per layer
    # compound to ~1e-5..1e-4 of the feature scale; a wrong layer is O(1).
    scale = np.abs(ref).max()
    np.testing.assert_allclose(got, ref, rtol=1e-3, atol=2e-4 * scale)
    cos = (got * ref).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(ref, axis=1)
    assert np.all(cos > 0.99999)


def test_photo_features_match_float64_reference(ctx, weights):
    pytest.importorskip("PIL")
    x = mobilenetv2.load_image()
    _check(_features(ctx, weights, x), mobilenetv2.reference(weights, x))


def test_batch_of_random_inputs(ctx, weights):
    x = np.random.default_rng(7).standard_normal((2, 3, 224, 224)).astype(np.float32)
    got = _features(ctx, weights, x)
    _check(got, mobilenetv2.reference(weights, x))
    # the two images of the batch are independent
    assert not np.allclose(got[0], got[1])


def test_profile_accounts_for_every_node(ctx, weights):
    """MLGraph.profile() on the whole network: every node of the plan in
    exactly one row (linked conv pairs as one row that lists their three
    convolutions), and the rows' sum within the whole run's time."""
    if ctx.device_type != "cpu":
        pytest.skip("profile() times CPU contexts")
    b = webnn.MLGraphBuilder(ctx)
    g = b.build({"f": mobilenetv2.build(b, weights)})
    x = np.random.default_rng(3).standard_normal((1, 3, 224, 224)).astype(np.float32)
    p = g.profile({"input": x}, runs=3)
    view = webnn._core.graph_view(g._h)
    listed = sorted(op for r in p.rows for op in r["operators"])
    listed += [u["operator"] for u in p.untimed]
    assert sorted(listed) == sorted(view["nodes"][n]["operator"] for n in view["order"])
    assert sum(r["operators"].count("conv2d") for r in p.rows) == 52
    assert p.steps_ms <= p.total_ms
