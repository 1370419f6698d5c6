"""Regenerate the stateless twins of ``tests/stateful/gpt2``: the same weights, other exports.

    /work/genvenv/bin/python tests/stateless/make_stateless.py

Needs what ``tests/stateful/make_stateful.py`` needs (it reuses its families, seeds and
renaming).  From the same randomly initialised GPT-2 as ``tests/stateful/gpt2`` it writes:

- ``gpt2_past/``: ``OVModelForCausalLM.from_pretrained(export=True, stateful=False)``, whose
  KV cache is model inputs (``past_key_values.N.key`` ...) and outputs (``present.N.key``);
- ``gpt2_nocache/``: ``use_cache=False``, with no cache at all: each step reruns the sequence.

Greedy decoding of either must give the stateful export's tokens
(``tests/stateful/gpt2/expected.npz``); the tests check that, and compare each step's logits
with the CPU plugin's run of the same file.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "stateful"))

import openvino as ov  # noqa: E402
from make_stateful import FAMILIES, MODELS, _stable_names  # noqa: E402


def export(name: str, use_cache: bool) -> None:
    import torch
    import transformers
    from optimum.intel import OVModelForCausalLM

    family, seed, _, _ = MODELS["gpt2"]
    cfg_name, config = FAMILIES[family]
    cfg = getattr(transformers, cfg_name)(**config)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    out = HERE / name
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(f"{tmp}/torch")
        ov_model = OVModelForCausalLM.from_pretrained(
            f"{tmp}/torch", export=True, compile=False, stateful=False, use_cache=use_cache
        )
        ov_model.save_pretrained(f"{tmp}/ov")
        saved = ov.Core().read_model(f"{tmp}/ov/openvino_model.xml")
        _stable_names(saved)
        saved.set_friendly_name(name)
        ov.save_model(saved, out / "openvino_model.xml", compress_to_fp16=False)
        for f in ("config.json", "generation_config.json"):
            shutil.copy(f"{tmp}/ov/{f}", out / f)
        # The same end-of-sequence id as the stateful export's, which greedy decoding of the
        # test's prompt does not reach.
        shutil.copy(HERE.parent / "stateful" / "gpt2" / "generation_config.json", out)
    print(f"wrote {out}: inputs {[p.get_any_name() for p in saved.inputs][:4]}...")


def main() -> int:
    export("gpt2_past", use_cache=True)
    export("gpt2_nocache", use_cache=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
