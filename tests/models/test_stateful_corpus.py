"""The stateful corpus is what its manifest says, and OpenVINO still decodes it as committed.

``tests/stateful`` holds tiny randomly initialised causal LMs (llama, gpt2, qwen2; llama and
gpt2 also int8- and int4-weight-compressed) as optimum-intel exports them: stateful IR whose
KV cache lives in ReadValue/Assign variables.  ``make_stateful.py`` there regenerates them (it
needs torch, transformers, optimum-intel and nncf; these tests need only the files, openvino
and numpy).  Per model ``expected.npz`` holds the prompt, OpenVINO's 16 greedy tokens and the
last position's logits of each call (CPU plugin, ``ov_stateful.F32_CONFIG``), and the same from
OpenVINO's reference kernels op by op; the uncompressed models also have ``beams.npz``, a
batch-2 decode whose ``beam_idx`` swaps and copies KV-cache rows.

Tolerances, scale-relative (max |difference| over max |expected| across all 16 steps):

- a live rerun in the installed OpenVINO: tokens exactly, logits 1e-5: 1 vs 2 threads gave
  identical logits, other f32 kernels (another CPU family) move them ~1e-6 (the reference
  run's measured distance), and the smallest top-1/top-2 gap is ~1e-3 of the scale;
- the committed reference run against the plugin's: 1e-5 for f32 models (measured ~1e-6),
  5e-3 for weight-compressed ones, whose f16 decompression the reference rounds to f16 and
  the plugin does not (measured ~1e-3).
"""

from __future__ import annotations

import hashlib
import json
from xml.etree import ElementTree

import numpy as np
import pytest
from support.ov_stateful import (
    F32_CONFIG,
    HERE,
    load_expected,
    manifest,
    openvino_beams,
    openvino_greedy,
)

MANIFEST = manifest()
NAMES = sorted(MANIFEST)
BEAMS = sorted(n for n in NAMES if "beams" in MANIFEST[n])


def _scaled(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want)) / np.max(np.abs(want)))


def test_manifest_lists_every_model_and_file():
    folders = {p.name for p in HERE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(NAMES)
    for name in NAMES:
        files = MANIFEST[name]["files"]
        assert {p.name for p in (HERE / name).iterdir()} == set(files), name
        for file, facts in files.items():
            data = (HERE / name / file).read_bytes()
            assert len(data) == facts["bytes"], f"{name}/{file}"
            assert hashlib.sha256(data).hexdigest() == facts["sha256"], f"{name}/{file}"
    total = sum(p.stat().st_size for p in HERE.rglob("*") if p.is_file())
    assert total < 4_000_000


@pytest.mark.parametrize("name", NAMES)
def test_expected_values_agree_with_the_manifest(name):
    entry = MANIFEST[name]
    config = json.loads((HERE / name / "config.json").read_text())
    generation = json.loads((HERE / name / "generation_config.json").read_text())
    steps = entry["generation"]["steps"]
    expected = load_expected(name)
    assert expected["prompt_ids"].dtype == np.int64
    assert expected["prompt_ids"].tolist() == entry["prompt"]["ids"]
    assert expected["tokens"].dtype == np.int64
    assert expected["tokens"].tolist() == entry["generation"]["tokens"]
    assert len(expected["tokens"]) == steps
    vocab = config["vocab_size"]
    for key in ("logits", "reference_logits"):
        assert expected[key].shape == (steps, vocab) and expected[key].dtype == np.float32, key
    assert expected["logits"].argmax(axis=1).tolist() == expected["tokens"].tolist()
    ref = expected["reference_logits"]
    assert ref.argmax(axis=1).tolist() == expected["reference_tokens"].tolist()
    # the reference kernels pick the same tokens, with logits within the manifest's tolerance
    assert expected["reference_tokens"].tolist() == expected["tokens"].tolist()
    assert _scaled(expected["logits"], ref) <= entry["tolerance"]["vs_reference"]
    eos = entry["generation"]["eos_token_id"]
    assert generation["eos_token_id"] == eos
    assert eos not in expected["tokens"], "greedy decoding would stop before 16 tokens"
    assert entry["expected"]["config"] == F32_CONFIG


@pytest.mark.parametrize("name", NAMES)
def test_manifest_describes_the_ir(name):
    entry = MANIFEST[name]
    layers = list(ElementTree.parse(HERE / name / "openvino_model.xml").getroot().iter("layer"))
    ops = sorted({f"{lay.get('type')}-{lay.get('version')}" for lay in layers})
    assert ops == entry["ops"]
    params = {
        lay.get("name"): {
            "element_type": lay.find("data").get("element_type"),
            "partial_shape": lay.find("data").get("shape"),
        }
        for lay in layers
        if lay.get("type") == "Parameter"
    }
    assert params == entry["inputs"]
    read = sorted(
        lay.find("data").get("variable_id") for lay in layers if lay.get("type") == "ReadValue"
    )
    assigned = sorted(
        lay.find("data").get("variable_id") for lay in layers if lay.get("type") == "Assign"
    )
    assert read == assigned == entry["variables"]["ids"]
    assert entry["variables"]["count"] == len(read) == 2 * 2  # key and value per layer
    weights = {
        lay.find("data").get("element_type")
        for lay in layers
        if lay.get("type") == "Const" and int(lay.find("data").get("size")) >= 64
    }
    assert weights == set(entry["weight_constants_by_element_type"])
    # int4: u4 blocks of 16 with f16 scales; the embedding and lm_head stay u8 (NNCF's backup)
    kinds = {"int8": {"u8", "f16"}, "int4": {"u4", "u8", "f16"}}
    assert weights == kinds.get(name.rpartition("_")[2], {"f32"})


def test_the_llama_tokenizer_matches_the_model():
    """Checked on the JSON (the test venv need not have the tokenizers library)."""
    tok = json.loads((HERE / "llama" / "tokenizer.json").read_text())
    config = json.loads((HERE / "llama" / "config.json").read_text())
    vocab = tok["model"]["vocab"]
    assert len(vocab) == config["vocab_size"]
    assert vocab["</s>"] == MANIFEST["llama"]["generation"]["eos_token_id"]
    prompt = MANIFEST["llama"]["prompt"]
    by_id = {i: t for t, i in vocab.items()}
    text = "".join(by_id[i] for i in prompt["ids"]).replace("\u0120", " ")  # ByteLevel space
    assert text == prompt["text"]


@pytest.mark.parametrize("name", NAMES)
def test_openvino_decodes_as_committed(name):
    expected = load_expected(name)
    tokens, logits = openvino_greedy(
        HERE / name / "openvino_model.xml", expected["prompt_ids"], len(expected["tokens"])
    )
    np.testing.assert_array_equal(tokens, expected["tokens"])
    assert logits.dtype == np.float32 and logits.shape == expected["logits"].shape
    assert _scaled(logits, expected["logits"]) <= MANIFEST[name]["tolerance"]["plugin_rerun"]


def test_two_threads_decode_the_same():
    """The tolerance's premise: the thread count does not move the f32 logits measurably."""
    expected = load_expected("llama")
    tokens, logits = openvino_greedy(
        HERE / "llama" / "openvino_model.xml",
        expected["prompt_ids"],
        len(expected["tokens"]),
        config={**F32_CONFIG, "INFERENCE_NUM_THREADS": 2},
    )
    np.testing.assert_array_equal(tokens, expected["tokens"])
    assert _scaled(logits, expected["logits"]) <= 1e-5


def _beams(name: str) -> dict[str, np.ndarray]:
    with np.load(HERE / name / "beams.npz") as f:
        return dict(f)


def test_every_uncompressed_model_has_a_beam_scenario():
    assert [n for n in NAMES if MANIFEST[n]["source"]["weight_quantization"] is None] == BEAMS


@pytest.mark.parametrize("name", BEAMS)
def test_beam_reordering_follows_the_single_decode(name):
    """Row 0 holds the prompt, row 1 its reverse; ``beam_idx`` [1, 0] at calls 3 and 9 swaps
    the cache rows (and the fed tokens), [0, 0] at call 13 copies row 0 into row 1.  So the
    batch-1 decode of the prompt continues in row 0 for calls 0-2, in row 1 for calls 3-8,
    in row 0 from call 9 on, and in both rows from call 13 on: independent evidence that the
    committed beams are right (a different batch size and call sequence)."""
    beams, single = _beams(name), load_expected(name)
    vocab = single["logits"].shape[1]
    assert beams["prompt_ids"].tolist() == [
        single["prompt_ids"].tolist(),
        single["prompt_ids"][::-1].tolist(),
    ]
    assert beams["beam_idx"].dtype == np.int32 and beams["beam_idx"].shape == (16, 2)
    assert beams["tokens"].shape == (16, 2) and beams["tokens"].dtype == np.int64
    assert beams["logits"].shape == (16, 2, vocab) and beams["logits"].dtype == np.float32
    assert (beams["logits"].argmax(axis=2) == beams["tokens"]).all()
    row = np.array([0] * 3 + [1] * 6 + [0] * 7)
    path = beams["logits"][np.arange(16), row]
    np.testing.assert_array_equal(beams["tokens"][np.arange(16), row], single["tokens"])
    assert _scaled(path, single["logits"]) <= 1e-5  # batch 2 vs 1: another sum blocking
    np.testing.assert_array_equal(beams["logits"][13:, 0], beams["logits"][13:, 1])
    assert (beams["tokens"][3:9, 0] != single["tokens"][3:9]).any()  # row 0 went elsewhere


@pytest.mark.parametrize("name", BEAMS)
def test_openvino_reorders_as_committed(name):
    beams = _beams(name)
    tokens, logits = openvino_beams(
        HERE / name / "openvino_model.xml", beams["prompt_ids"], beams["beam_idx"]
    )
    np.testing.assert_array_equal(tokens, beams["tokens"])
    assert _scaled(logits, beams["logits"]) <= MANIFEST[name]["tolerance"]["plugin_rerun"]
