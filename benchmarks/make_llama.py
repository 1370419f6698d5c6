"""Write the mid-size Llama of ``benchmarks/llama_decode.py``: random-init, exported by
optimum-intel, f32 and int4.

    python -m venv /work/optvenv
    /work/optvenv/bin/pip install torch==2.14.1 transformers==4.57.6 optimum-intel==1.27.0 \\
        nncf==3.4.0 openvino==2026.4.1
    CI=true /work/optvenv/bin/python benchmarks/make_llama.py   # under a minute

Needs torch, transformers, optimum-intel, nncf and openvino (the benchmark itself needs only
irrun and openvino).  A ``LlamaForCausalLM`` of ``CONFIG`` (hidden 1024, intermediate 2816,
10 layers, 16 attention heads over 4 KV heads, vocabulary 32000, untied embeddings: 177 M
parameters) is initialised from torch seed ``SEED`` with transformers' own init (normal,
std 0.02), saved with ``save_pretrained`` and exported twice with
``OVModelForCausalLM.from_pretrained(export=True, stateful=True)`` (the KV cache in
ReadValue/Assign variables, as ``tests/stateful/make_stateful.py`` exports its tiny models):

- ``benchmarks/models/llama_mid/f32/``: the weights in f32 (optimum compresses nothing by
  default below a billion parameters; the script checks that no weight is f16 or integer);
- ``benchmarks/models/llama_mid/int4/``: ``OVWeightQuantizationConfig(bits=4, sym=False,
  group_size=128, ratio=1.0)``: every linear layer's weight u4 asymmetric in groups of 128
  (an f16 scale and a u4 zero point per group), except the embedding and the lm_head, which
  NNCF keeps in 8 bits (u8, asymmetric, per channel).

Each folder holds what optimum writes (``openvino_model.xml``/``.bin``, ``config.json``,
``generation_config.json``, ``openvino_config.json``); the torch checkpoint stays in a
temporary folder.  ``benchmarks/models/`` is gitignored.  The script prints each ``.bin``'s
size and the weight constants by element type.
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

os.environ.setdefault("CI", "true")  # no telemetry from the converters

OUT = Path(__file__).resolve().parent / "models" / "llama_mid"
SEED = 28
CONFIG = dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=10,
              num_attention_heads=16, num_key_value_heads=4, vocab_size=32000,
              max_position_embeddings=2048, tie_word_embeddings=False)  # fmt: skip
INT4 = dict(bits=4, sym=False, group_size=128, ratio=1.0)
VARIANTS = {"f32": None, "int4": INT4}


def weight_types(xml: Path) -> Counter:
    """Const layers of at least 4 KiB (weights, not shape constants), by element type."""
    root = ElementTree.parse(xml).getroot()
    return Counter(
        lay.find("data").get("element_type")
        for lay in root.iter("layer")
        if lay.get("type") == "Const" and int(lay.find("data").get("size", 0)) >= 4096
    )


def main(names: list[str]) -> None:
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM, OVWeightQuantizationConfig

    cfg = transformers.LlamaConfig(**CONFIG)
    torch.manual_seed(SEED)
    model = transformers.LlamaForCausalLM(cfg).eval()
    params = sum(p.numel() for p in model.parameters())
    print(f"LlamaForCausalLM {CONFIG}: {params / 1e6:.1f} M parameters, seed {SEED}")
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(f"{tmp}/torch")
        del model
        for name in names:
            quant = VARIANTS[name]
            kwargs = {}
            if quant is not None:
                kwargs["quantization_config"] = OVWeightQuantizationConfig(**quant)
            out = OUT / name
            out.mkdir(parents=True, exist_ok=True)
            ov_model = OVModelForCausalLM.from_pretrained(
                f"{tmp}/torch", export=True, compile=False, stateful=True, **kwargs
            )
            ov_model.save_pretrained(out)
            del ov_model
            types = weight_types(out / "openvino_model.xml")
            if quant is None and set(types) != {"f32"}:
                sys.exit(f"{out}: expected f32 weights only, found {dict(types)}")
            size = (out / "openvino_model.bin").stat().st_size
            print(f"{name}: {out / 'openvino_model.bin'} {size / 2**20:.1f} MiB; "
                  f"weight constants by type {dict(sorted(types.items()))}; "
                  f"quantization {quant}")  # fmt: skip


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(VARIANTS)
    unknown = [n for n in chosen if n not in VARIANTS]
    if unknown:
        sys.exit(f"unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    main(chosen)
