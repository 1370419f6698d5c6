"""Tiny stateful LLMs of more families than tests/stateful holds, for benchmarks/llm_decode.py
(issue 28 names falcon, gpt_neox, phi3, gemma2 and mistral besides llama, qwen2 and gpt2).

    python -m venv /work/optvenv
    /work/optvenv/bin/pip install torch==2.14.1 transformers==4.57.6 optimum-intel==1.27.0 \
        nncf==3.4.0 openvino==2026.4.1
    CI=true /work/optvenv/bin/python benchmarks/make_stateful_llms.py           # every family
    CI=true /work/optvenv/bin/python benchmarks/make_stateful_llms.py mistral   # some

Needs torch, transformers, optimum-intel and openvino (the versions of tests/stateful).  Each
family's causal LM is built from its configuration alone (hidden 32, 2 layers, 4 heads, 2 KV
heads where the family has grouped-query attention, intermediate 64, vocabulary 256, 256
positions; seed 0, weights drawn with std 0.2), exported by
``OVModelForCausalLM.from_pretrained(export=True, stateful=True)`` (the KV cache in
ReadValue/Assign variables, as tests/stateful/make_stateful.py exports its models) and written
to ``benchmarks/models/stateful/NAME/openvino_model.xml`` (gitignored) with optimum's
``config.json``.  A family that fails to build or export is skipped with the reason printed.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from pathlib import Path

os.environ.setdefault("CI", "true")  # no telemetry from the converters

OUT = Path(__file__).resolve().parent / "models" / "stateful"
BASE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=256, vocab_size=256,
            initializer_range=0.2, head_dim=8)  # fmt: skip
FAMILIES = {
    "mistral": ("mistral", BASE),
    "phi3": ("phi3", {**BASE, "pad_token_id": 0}),
    "gemma2": ("gemma2", {**BASE, "sliding_window": 64}),
    "gemma": ("gemma", BASE),
    "qwen3": ("qwen3", BASE),
    "gpt_neox": ("gpt_neox", {k: v for k, v in BASE.items() if k != "num_key_value_heads"}),
    "falcon": ("falcon", {**{k: v for k, v in BASE.items() if k != "head_dim"},
                          "new_decoder_architecture": True, "num_kv_heads": 2}),
    "phi": ("phi", BASE),
    "stablelm": ("stablelm", BASE),
    "starcoder2": ("starcoder2", BASE),
    "olmo": ("olmo", BASE),
    "bloom": ("bloom", {**BASE, "n_layer": 2, "n_head": 4}),
    "opt": ("opt", {**BASE, "ffn_dim": 64, "word_embed_proj_dim": 32}),
}  # fmt: skip


def export(name: str) -> Path:
    import openvino as ov
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM

    model_type, config = FAMILIES[name]
    cfg = transformers.AutoConfig.for_model(model_type, **config)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    out = OUT / name
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(f"{tmp}/torch")
        exported = OVModelForCausalLM.from_pretrained(f"{tmp}/torch", export=True, compile=False,
                                                      stateful=True)  # fmt: skip
        exported.save_pretrained(f"{tmp}/ov")
        saved = ov.Core().read_model(f"{tmp}/ov/openvino_model.xml")
        ov.save_model(saved, out / "openvino_model.xml", compress_to_fp16=False)
        (out / "config.json").write_text(Path(f"{tmp}/ov/config.json").read_text())
    return out / "openvino_model.xml"


def main(argv: list[str]) -> int:
    wanted = argv or list(FAMILIES)
    unknown = [n for n in wanted if n not in FAMILIES]
    if unknown:
        sys.exit(f"unknown families {unknown}; known: {' '.join(FAMILIES)}")
    made, skipped = [], []
    for name in wanted:
        try:
            path = export(name)
        except Exception as e:
            text = str(e).strip().splitlines()
            print(f"  skip {name:12s} {type(e).__name__}: {text[0][:200] if text else ''}",
                  flush=True)  # fmt: skip
            skipped.append(name)
            continue
        made.append(name)
        print(f"  made {name:12s} {path.with_suffix('.bin').stat().st_size / 1024:6.0f} KiB",
              flush=True)  # fmt: skip
    print(f"{len(made)} made, {len(skipped)} skipped: {' '.join(skipped) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
