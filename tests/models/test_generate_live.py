"""webnn.llm against transformers live: export tiny GPT-2 and Llama (GQA) configs with
torch.onnx.export and compare greedy tokens with generate(do_sample=False).  Skipped
where torch or transformers is not installed (CI); run it with them, e.g.

    PYTHONPATH=. /work/tv/bin/python -m pytest tests/models/test_generate_live.py"""
import pytest

pytest.importorskip("onnx.helper", reason="webnn.llm needs the onnx package")
pytest.importorskip("torch", reason="the live comparison exports with torch, which is "
                                    "not installed")
pytest.importorskip("transformers", reason="the live comparison needs transformers, "
                                           "which is not installed")

import webnn.llm as llm  # noqa: E402


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_greedy_equals_transformers_live(ctx, arch):
    model = llm.make_model(f"{arch}-tiny", seed=3)   # not the fixtures' weights
    proto = llm.export(model)
    prompt = [int(t) for t in range(40, 51)]
    lm = llm.CausalLM(proto, context=ctx, capacity=len(prompt) + 63, prefill_bucket=4)
    assert lm.generate(prompt, 64) == llm.hf_greedy(model, prompt, 64)


def test_llama_variant_config(ctx):
    """A Llama config with another GQA ratio (6 heads, 2 kv heads), 3 layers, untied
    embeddings and another rope_theta."""
    cfg = llm.make_config("llama-tiny", hidden_size=48, num_attention_heads=6,
                          num_key_value_heads=2, num_hidden_layers=3,
                          tie_word_embeddings=False, rope_theta=500.0)
    model = llm.make_model(cfg, seed=5, initializer_range=0.2)
    lm = llm.CausalLM(llm.export(model), context=ctx, capacity=80, prefill_bucket=8)
    assert lm.info.kv_heads == 2 and lm.info.layers == 3
    prompt = [7, 8, 9]
    assert lm.generate(prompt, 64) == llm.hf_greedy(model, prompt, 64)


@pytest.mark.parametrize("arch", ["gpt2", "llama"])
def test_example_check_exit_code(arch, monkeypatch, capsys):
    """examples/generate.py --check: 0 when webnn's tokens equal transformers', 1 when
    one token differs (a stream that changes its 5th token)."""
    import generate   # examples/ is on sys.path (conftest.py)
    argv = ["--arch", arch, "--new-tokens", "64", "--check", "--no-compare"]
    assert generate.main(argv) == 0
    assert "equal transformers': True" in capsys.readouterr().out
    real = llm.CausalLM.stream

    def off_by_one(self, *a, **kw):
        for i, t in enumerate(real(self, *a, **kw)):
            yield (t + 1) % self.vocab_size if i == 4 else t

    monkeypatch.setattr(llm.CausalLM, "stream", off_by_one)
    assert generate.main(argv) == 1
    assert "equal transformers': False" in capsys.readouterr().out


def test_from_a_checkpoint_folder(ctx, tmp_path):
    """Weights from a local folder (save_pretrained), read back with local_files_only."""
    saved = llm.make_model("gpt2-tiny", seed=11)
    saved.save_pretrained(tmp_path)
    model = llm.make_model(folder=str(tmp_path))
    lm = llm.CausalLM(llm.export(model), context=ctx, capacity=70)
    prompt = [3, 1, 4, 1, 5, 9]
    tokens = lm.generate(prompt, 64)
    assert tokens == llm.hf_greedy(saved, prompt, 64) == llm.hf_greedy(model, prompt, 64)
    with pytest.raises(ValueError, match="is not a directory"):
        llm.make_model(folder=str(tmp_path / "missing"))
