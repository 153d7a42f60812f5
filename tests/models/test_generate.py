"""webnn.llm: greedy tokens equal transformers' generate(do_sample=False), recorded by
scripts/make_generate_fixtures.py for tiny GPT-2 and Llama (GQA, RoPE, RMSNorm, SiLU)
configs; the cache's edges (last slot, 1-token prompt, prompts longer than the prefill
bucket), sampling under a seed, and the errors.  No torch needed (see
test_generate_live.py for the live comparison)."""
import json
import os

import numpy as np
import pytest

pytest.importorskip("onnx.helper", reason="webnn.llm needs the onnx package")

import onnx  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

import webnn  # noqa: E402
import webnn.llm as llm  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "data")
ARCHS = ("gpt2", "llama")


def _fixture(arch):
    with open(os.path.join(DATA, f"generate_{arch}.json")) as f:
        return os.path.join(DATA, f"generate_{arch}.onnx"), json.load(f)


@pytest.fixture(scope="module", params=ARCHS)
def lm(request, ctx):
    path, meta = _fixture(request.param)
    return llm.CausalLM(path, context=ctx, capacity=128, prefill_bucket=16), meta


def test_fixture_geometry():
    # the Llama fixture really is grouped-query (fewer kv heads than heads: 64 / 4 = 16)
    info = llm.describe(onnx.load(_fixture("llama")[0]))
    assert (info.layers, info.kv_heads, info.head_dim, info.vocab_size) == (2, 2, 16, 512)
    info = llm.describe(onnx.load(_fixture("gpt2")[0]))
    assert (info.layers, info.kv_heads, info.head_dim, info.vocab_size) == (2, 4, 16, 512)


@pytest.mark.parametrize("case", [0, 1, 2], ids=["prompt8", "prompt1", "prompt40"])
def test_greedy_equals_transformers(lm, case):
    model, meta = lm
    c = meta["cases"][case]
    assert model.generate(c["prompt"], 64) == c["tokens"]
    # the first new token's logits against transformers' (float64 of the float32 run)
    first = model.generate(c["prompt"], 1)
    assert first == c["tokens"][:1]
    np.testing.assert_allclose(model.last_logits(), c["first_logits"], rtol=0, atol=2e-5)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("bucket", [1, 3, 8, 64])
def test_buckets_and_capacity_edge(ctx, arch, bucket):
    """The prompt in chunks of 1, 3 (the last one padded), 8 (exactly one) or 64 (one
    padded chunk); capacity n + 63: the last fed token lands in the cache's last slot."""
    path, meta = _fixture(arch)
    c = meta["cases"][0]
    n = len(c["prompt"])
    model = llm.CausalLM(path, context=ctx, capacity=n + 63, prefill_bucket=bucket)
    assert model.generate(c["prompt"], 64) == c["tokens"]
    with pytest.raises(ValueError, match=r"need 72 cache slots .* capacity is 71"):
        model.generate(c["prompt"], 65)
    # a 40-token prompt in chunks, then back to the 8-token one: old slots are masked
    long = meta["cases"][2]
    model2 = llm.CausalLM(path, context=ctx, capacity=len(long["prompt"]) + 63,
                          prefill_bucket=bucket)
    assert model2.generate(long["prompt"], 64) == long["tokens"]
    assert model2.generate(c["prompt"], 64) == c["tokens"]


@pytest.mark.parametrize("capacity", [1, 2])
def test_prompt_of_one_token_at_tiny_capacities(ctx, capacity):
    path, meta = _fixture("llama")
    c = meta["cases"][1]
    model = llm.CausalLM(path, context=ctx, capacity=capacity)
    assert model.generate(c["prompt"], capacity) == c["tokens"][:capacity]
    with pytest.raises(ValueError, match=f"capacity is {capacity}"):
        model.generate(c["prompt"], capacity + 1)


def test_cache_stays_on_the_timeline(lm, monkeypatch):
    """Greedy: one read per token of a [1, 1] token id; writes are the step's small
    inputs only (ids, positions, mask, cache index), never a key or value tensor."""
    model, meta = lm
    ctx = model.context
    reads, writes = [], []
    real_read, real_write = ctx.read_tensor, ctx.write_tensor
    monkeypatch.setattr(ctx, "read_tensor",
                        lambda t, *a: reads.append(tuple(t.shape)) or real_read(t, *a))
    monkeypatch.setattr(ctx, "write_tensor",
                        lambda t, d: writes.append(t.data_type) or real_write(t, d))
    c = meta["cases"][0]
    assert model.generate(c["prompt"], 64) == c["tokens"]
    assert reads == [(1, 1)] * 64
    assert "float32" not in writes and len(writes) == 5 * 64


def test_sampling_probs_against_a_reference():
    """sampling_probs against transformers' recipe written out in float64: temperature,
    top-k by sorting, top-p removing the ascending cumulative mass <= 1 - p."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        z = rng.normal(0, 3, 50)
        t, k, p = rng.uniform(0.3, 2), int(rng.integers(0, 20)), rng.uniform(0.05, 1)
        x = z / t
        if k:
            x = np.where(x < np.sort(x)[-k], -np.inf, x)
        e = np.exp(x - x.max())
        q = e / e.sum()
        asc = np.argsort(q, kind="stable")
        remove = np.cumsum(q[asc]) <= 1 - p
        remove[-1] = False
        q[asc[remove]] = 0
        q /= q.sum()
        np.testing.assert_allclose(llm.sampling_probs(z, t, k, p), q, atol=1e-12)


def test_sampling_probs_at_extreme_temperatures():
    z = np.array([1.0, 3.0, 2.0, 3.0 - 1e-6])
    np.testing.assert_array_equal(llm.sampling_probs(z, 1e-320), [0, 1, 0, 0])
    np.testing.assert_allclose(llm.sampling_probs(z, 1e6), np.full(4, 0.25), atol=1e-5)
    z[2] = -np.inf   # a logit already -inf is just never drawn
    np.testing.assert_allclose(llm.sampling_probs(z, 1.0), np.exp(z) / np.exp(z).sum())


def test_sampling_is_deterministic_under_a_seed(lm):
    model, meta = lm
    c = meta["cases"][0]
    opts = dict(temperature=0.9, top_k=40, top_p=0.95)
    a = model.generate(c["prompt"], 32, seed=7, **opts)
    assert model.generate(c["prompt"], 32, seed=7, **opts) == a
    assert model.generate(c["prompt"], 32, seed=8, **opts) != a
    assert all(0 <= t < 512 for t in a) and a != c["tokens"][:32]
    # one token: the draw from transformers' first logits with the same generator
    p = llm.sampling_probs(c["first_logits"], 0.9, 40, 0.95)
    u = np.random.default_rng(7).random()
    assert model.generate(c["prompt"], 1, seed=7, **opts) == \
        [int(np.searchsorted(np.cumsum(p), u * p.sum(), side="right"))]
    # sampling that keeps one token is greedy
    assert model.generate(c["prompt"], 64, temperature=1.0, top_k=1, seed=3) == c["tokens"]
    assert model.generate(c["prompt"], 64, temperature=2.0, top_p=1e-9, seed=3) == \
        c["tokens"]


def test_stream_eos_and_timings(lm):
    model, meta = lm
    c = meta["cases"][0]
    stream = model.stream(c["prompt"], 64)
    assert [next(stream) for _ in range(3)] == c["tokens"][:3]
    eos = c["tokens"][10]
    stop = c["tokens"].index(eos) + 1
    assert model.generate(c["prompt"], 64, eos_token_id=eos) == c["tokens"][:stop]
    with pytest.raises(webnn.InvalidStateError, match="another generation"):
        next(stream)
    model.generate(c["prompt"], 5)
    t = model.timings
    assert t.prompt_tokens == 8 and t.first_token > 0 and len(t.per_token) == 4
    assert t.decode_tokens_per_s > 0


@pytest.mark.parametrize("kw, match", [
    (dict(prompt_ids=[]), "prompt_ids is empty"),
    (dict(prompt_ids=[512]), r"token 512 is outside the vocabulary \[0, 512\)"),
    (dict(prompt_ids=[-1]), "token -1 is outside"),
    (dict(max_new_tokens=0), "max_new_tokens must be a positive int"),
    (dict(temperature=-1.0), "temperature must be >= 0"),
    (dict(temperature=float("nan")), "temperature must be >= 0"),
    (dict(top_k=-2), "top_k must be an int >= 0"),
    (dict(top_p=0.0), r"top_p must be in \(0, 1\]"),
    (dict(max_new_tokens=200), "need 200 cache slots .* capacity is 128"),
])
def test_bad_arguments(lm, kw, match):
    model, _ = lm
    args = dict(prompt_ids=[1], max_new_tokens=4)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        model.stream(args.pop("prompt_ids"), args.pop("max_new_tokens"), **args)


def test_not_a_language_model(ctx):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(ValueError, match="no input 'input_ids'"):
        llm.CausalLM(helper.make_model(g), context=ctx)
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        llm.CausalLM(_fixture("gpt2")[0], context=ctx, capacity=0)


def test_gpt2_capacity_within_its_position_table(ctx):
    """GPT-2's learned positions stop at n_positions (256 here): a larger capacity is an
    error at construction; RoPE (Llama) has no such table."""
    path, meta = _fixture("gpt2")
    assert llm.describe(onnx.load(path)).max_positions == 256
    with pytest.raises(ValueError, match="capacity 257 is more than the 256 positions"):
        llm.CausalLM(path, context=ctx, capacity=257)
    model = llm.CausalLM(path, context=ctx, capacity=256, prefill_bucket=8)
    c = meta["cases"][2]   # 40 prompt tokens at positions up to 103 of 256
    assert model.generate(c["prompt"], 64) == c["tokens"]
    path, meta = _fixture("llama")
    assert llm.describe(onnx.load(path)).max_positions is None
    model = llm.CausalLM(path, context=ctx, capacity=300, prefill_bucket=8)
    assert model.generate(meta["cases"][0]["prompt"], 64) == meta["cases"][0]["tokens"]


def test_destroy(ctx):
    path, meta = _fixture("llama")
    model = llm.CausalLM(path, context=ctx, capacity=80)
    stream = model.stream(meta["cases"][0]["prompt"], 8)
    next(stream)
    model.destroy()
    with pytest.raises(webnn.InvalidStateError, match="another generation"):
        next(stream)
    with pytest.raises(webnn.InvalidStateError, match="the model was destroyed"):
        model.generate([1], 2)
    with pytest.raises(webnn.InvalidStateError, match="nothing was generated yet"):
        model.last_logits()
