"""Real converters' and compressors' IR files run in irrun as in OpenVINO.

``tests/corpus`` holds tiny randomly initialised models as ``ov.convert_model`` writes them
(BERT, GPT-2, RoBERTa, ViT, the Whisper encoder, wav2vec2, Swin, MaxViT), NNCF's INT8
post-training-quantized CNNs (FakeQuantize; max and average pooling), NNCF's int8/int4
weight-compressed transformers (u8/u4/i4 weights with Convert, Subtract, Multiply) and ONNX
LpPool as OpenVINO's ONNX frontend decomposes it.  ``make_corpus.py`` there regenerates them
(it needs torch, transformers and nncf; these tests need only the files and openvino), and
``manifest.json`` says per model where it comes from, how its expected values were computed and
the tolerance, with its reason:

- f32 models against the CPU plugin (f32, 1 thread): 1e-5 of each output's largest magnitude,
  for matrix products, convolutions and normalisation sums taken in another order than oneDNN's
  over a few layers;
- weight-compressed models against the CPU plugin with ``DYNAMIC_QUANTIZATION_GROUP_SIZE`` 0
  (otherwise it quantizes activations to int8 on the fly): 1e-3, because NNCF writes the
  decompression in f16 (u8/u4/i4 to f16, minus the zero point, times the f16 scale, to f32),
  whose product OpenVINO's reference kernels and irrun round to f16 while the plugin keeps it in
  f32: every weight may differ by half an f16 ulp (measured ~3e-4 of the outputs' scale);
- FakeQuantize models against OpenVINO's reference kernels op by op (the CPU plugin runs int8
  kernels; the manifest records its deviation): 1e-5, as no quantization level flips on these
  inputs (the sums before each FakeQuantize differ from the reference's only by ~1e-7).

The first test compares with the committed expected values, the second with the OpenVINO
installed now computed the same way, the third runs ``irrun validate``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.cli import main

HERE = Path(__file__).resolve().parents[1] / "corpus"
MANIFEST = json.loads((HERE / "manifest.json").read_text())
NAMES = sorted(MANIFEST)


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return dict(f)


def _inputs(name: str) -> dict[str, np.ndarray]:
    return _npz(HERE / f"{name}.inputs.npz")


def _assert_matches(got: dict, want: dict, name: str) -> float:
    """Within the manifest's tolerance of each output's largest magnitude; the worst scaled
    error is returned."""
    tol = MANIFEST[name]["tolerance"]["scaled"]
    assert sorted(got) == sorted(want), name
    worst = 0.0
    for key, w in want.items():
        g = got[key]
        assert g.shape == w.shape and g.dtype == w.dtype, f"{name} {key}: {g.shape} {g.dtype}"
        if w.dtype.kind != "f" or tol == 0:
            np.testing.assert_array_equal(g, w, err_msg=f"{name} {key}")
            continue
        scale = float(np.max(np.abs(w))) or 1.0
        err = float(np.max(np.abs(g.astype(np.float64) - w))) / scale if w.size else 0.0
        worst = max(worst, err)
        assert err <= tol, f"{name} {key}: error {err:.3g} of the largest magnitude > {tol:g}"
    return worst


def test_manifest_lists_every_file():
    stems = {p.name.split(".")[0] for p in HERE.iterdir() if p.suffix in (".xml", ".bin", ".npz")}
    assert stems == set(NAMES)
    for name in NAMES:
        for ext in ("xml", "bin"):
            data = (HERE / f"{name}.{ext}").read_bytes()
            assert hashlib.sha256(data).hexdigest() == MANIFEST[name]["sha256"][ext], name


def test_corpus_stays_small():
    total = sum(p.stat().st_size for p in HERE.iterdir())
    assert total < 4 * 2**20, f"{total} bytes"


def test_corpus_has_the_promised_ops():
    ops = {name: set(entry["ops"]) for name, entry in MANIFEST.items()}
    for name in ("bert", "gpt2", "vit", "whisper_encoder", "wav2vec2"):
        assert "ScaledDotProductAttention-opset13" in ops[name], name
    assert {"Roll-opset7", "ScatterNDUpdate-opset4"} <= ops["swin"]
    assert "Einsum-opset7" in ops["maxvit"]
    for name in ("cnn_int8_maxpool", "cnn_int8_avgpool"):
        assert "FakeQuantize-opset1" in ops[name], name
    assert "MaxPool-opset14" in ops["cnn_int8_maxpool"]
    assert "AvgPool-opset14" in ops["cnn_int8_avgpool"]
    assert {"Power-opset1", "AvgPool-opset1"} <= ops["lppool"]
    weights = {name: (HERE / f"{name}.xml").read_text() for name in ("bert_int8_asym",
               "bert_int4_asym", "gpt2_int4_sym")}  # fmt: skip
    assert 'element_type="u8"' in weights["bert_int8_asym"]
    assert 'element_type="u4"' in weights["bert_int4_asym"]
    assert 'element_type="i4"' in weights["gpt2_int4_sym"]


def _run_irrun(name: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """irrun's outputs keyed as the corpus keys them: by any of a tensor's names (irrun uses
    its first, which for converted models is often TorchScript's number)."""
    model = irrun.load(HERE / f"{name}.xml")
    aliases = {alias: spec.name for spec in model.inputs for alias in (spec.name, *spec.names)}
    got = model.run({aliases[key]: value for key, value in inputs.items()})
    return {alias: got[spec.name] for spec in model.outputs for alias in (spec.name, *spec.names)}


@pytest.mark.parametrize("name", NAMES)
def test_corpus_model_matches_expected(name):
    want = _npz(HERE / f"{name}.expected.npz")
    got = _run_irrun(name, _inputs(name))
    _assert_matches({key: got[key] for key in want if key in got}, want, name)


def _oracle():
    """make_corpus.py's way of running OpenVINO (it imports torch and the rest only to make
    models, not at import time)."""
    spec = importlib.util.spec_from_file_location("make_corpus", HERE / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_corpus_model_matches_openvino_now(name):
    ov = pytest.importorskip("openvino")
    oracle = _oracle()
    inputs = _inputs(name)
    saved = ov.Core().read_model(HERE / f"{name}.xml")
    method = MANIFEST[name]["expected"]["method"]
    if method == "reference":
        want, _, _ = oracle._layerwise(saved, inputs)
    else:
        assert MANIFEST[name]["expected"]["config"] == oracle.CONFIGS[method]
        want = oracle._run(saved, inputs, method)
    got = _run_irrun(name, inputs)
    _assert_matches({key: got[key] for key in want if key in got}, want, name)


@pytest.mark.parametrize("name", NAMES)
def test_corpus_model_validates(name, capsys):
    found = irrun.validate(HERE / f"{name}.xml")
    assert [f"{d.level} {d.code} {d.layer and d.layer.name}" for d in found
            if d.level == "error"] == []  # fmt: skip
    assert main(["validate", str(HERE / f"{name}.xml")]) == 0
    capsys.readouterr()
