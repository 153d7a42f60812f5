"""Make the fixtures of tests/models/test_generate.py (needs torch and transformers):
for each tiny config, the exported model (prepared by webnn.llm.export) and transformers'
own greedy tokens, generate(do_sample=False), for fixed prompts.

    PYTHONPATH=. python scripts/make_generate_fixtures.py [out_dir]

Writes generate_<arch>.onnx and generate_<arch>.json (default out_dir:
tests/models/data).  The json holds the config, the seed, and per prompt the 64 new
tokens, the smallest gap between the best and second-best logit over those steps (how
far a token is from a tie) and the logits of the first new token."""
import json
import os
import sys

import numpy as np
import torch
import transformers

import webnn.llm as llm

NEW_TOKENS = 64
SEED = 0
PROMPTS = [[5, 17, 99, 3, 250, 11, 42, 7], [123], list(range(300, 340))]


def record(model: object, prompt: list) -> dict:
    tokens = llm.hf_greedy(model, prompt, NEW_TOKENS)
    seq = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = model(input_ids=seq).logits[0, len(prompt) - 1:-1].double()
    top2 = torch.topk(logits, 2, dim=-1).values
    assert logits.argmax(-1).tolist() == tokens, "teacher-forced argmax != generate()"
    return {"prompt": prompt, "tokens": tokens,
            "min_margin": float((top2[:, 0] - top2[:, 1]).min()),
            "first_logits": [float(v) for v in logits[0]]}


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "tests", "models", "data")
    os.makedirs(out, exist_ok=True)
    for arch in ("gpt2", "llama"):
        name = f"{arch}-tiny"
        model = llm.make_model(name, seed=SEED)
        path = os.path.join(out, f"generate_{arch}.onnx")
        llm.export(model, path)
        meta = {"config": name, "seed": SEED, "new_tokens": NEW_TOKENS,
                "torch": torch.__version__, "transformers": transformers.__version__,
                "cases": [record(model, p) for p in PROMPTS]}
        with open(os.path.join(out, f"generate_{arch}.json"), "w") as f:
            json.dump(meta, f, indent=1)
        margins = [c["min_margin"] for c in meta["cases"]]
        print(f"{path}: {os.path.getsize(path)} bytes, distinct tokens "
              f"{[len(set(c['tokens'])) for c in meta['cases']]}, min margins "
              f"{np.round(margins, 4).tolist()}")


if __name__ == "__main__":
    main()
