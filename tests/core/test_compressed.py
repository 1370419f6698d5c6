"""The corpus's and the stateful corpus's compressed models with their weights kept compressed
(``IRRUN_COMPRESSED=1``, irrun.core.compressed) give what they give folded: their expected
files' values within the same tolerances (``tests/models/test_corpus.py``,
``tests/core/test_generation.py``), and every weight chain of theirs is kept compressed.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from models.test_corpus import HERE as CORPUS
from models.test_corpus import _assert_matches, _inputs, _npz

import irrun

STATEFUL = Path(__file__).resolve().parents[1] / "stateful"
COMPRESSED_STATEFUL = sorted(
    name for name, facts in json.loads((STATEFUL / "manifest.json").read_text()).items()
    if facts["source"]["weight_quantization"] is not None)  # fmt: skip
# Per model: the weights kept compressed (its MatMuls' and its embeddings' Gathers').
CORPUS_MODELS = {"bert_int8_asym": 16, "bert_int4_asym": 16, "gpt2_int4_sym": 10}


@pytest.mark.parametrize("name", sorted(CORPUS_MODELS))
def test_corpus_models_match_their_expected_values_compressed(name, monkeypatch):
    monkeypatch.setenv("IRRUN_COMPRESSED", "1")
    model = irrun.load(CORPUS / f"{name}.xml")
    assert model.folding.compressed == CORPUS_MODELS[name]
    assert model._plan.folded == {} or all(v.attrs.value.size < 4096
                                           for v in model._plan.folded.values())  # fmt: skip
    aliases = {alias: spec.name for spec in model.inputs for alias in (spec.name, *spec.names)}
    got = model.run({aliases[k]: v for k, v in _inputs(name).items()})
    got = {alias: got[spec.name] for spec in model.outputs for alias in (spec.name, *spec.names)}
    want = _npz(CORPUS / f"{name}.expected.npz")
    _assert_matches({key: got[key] for key in want if key in got}, want, name)


@pytest.mark.parametrize("name", COMPRESSED_STATEFUL)
def test_stateful_models_decode_as_openvino_compressed(name, monkeypatch):
    """The 16 greedy tokens, and each step's logits within 1e-5 of the reference kernels'
    (OpenVINO's op by op) and 2e-3 of the plugin's, as folded (see test_generation)."""
    monkeypatch.setenv("IRRUN_COMPRESSED", "1")
    model = irrun.load(STATEFUL / name / "openvino_model.xml")
    assert model.folding.compressed >= 10 and model.folding.values <= 20
    with np.load(STATEFUL / name / "expected.npz") as f:
        want = dict(f)
    got = irrun.generate(STATEFUL / name, want["prompt_ids"].tolist(), max_new_tokens=16,
                         ignore_eos=True, keep_logits=True)  # fmt: skip
    assert got.tokens == want["tokens"].tolist()
    logits = np.stack(got.logits)
    for ref, tolerance in (("reference_logits", 1e-5), ("logits", 2e-3)):
        error = np.abs(logits - want[ref]).max(axis=1) / np.abs(want[ref]).max(axis=1)
        assert error.max() <= tolerance, (ref, error)
