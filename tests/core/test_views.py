"""Every view of a run runs the same plan: the same bits, however the run is asked for.

A plain ``Model.run``, ``intermediate=True``, ``on_layer=`` (what ``--dump-dir`` and
``compare --mark-all`` use), the profile's run (the layers a run executes, no values) and
``irrun compare`` give bit-identical outputs, at one thread and at two, on every model
bundled in ``models/`` and kept under ``tests/``.  And each model's reference run
(``reference=True``: reference kernels, no pass, one thread) agrees with the default one
within the bounds the fast kernels state.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.tools.compare import compare

ROOT = Path(__file__).resolve().parents[2]
# roi_default is a model irrun refuses to load, by design (tests/ops/test_detection.py).
MODELS = sorted(
    p for folder in ("models", "tests") for p in (ROOT / folder).rglob("*.xml")
    if "demo_batch" not in p.parts and p.stem != "roi_default"
)
TORCH_SHAPES = json.loads((ROOT / "tests" / "torch_models" / "shapes.json").read_text())


def _feeds(model: irrun.Model, path: Path) -> dict[str, np.ndarray]:
    """The inputs the model's tests run it on (its dynamic dims at 1 would not fit some)."""
    names = [s.name for s in model.inputs]
    rng = np.random.default_rng(0)
    if path.parent.name == "torch_models":
        return {names[0]: rng.standard_normal(TORCH_SHAPES[path.stem]).astype(np.float32)}
    if path.parent.name == "detection_models":
        with np.load(path.parent / "expected.npz") as f:
            return dict(zip(names, (f[f"{path.stem}.in0"], f[f"{path.stem}.in1"]), strict=True))
    if path.parent.name == "sequence_models":
        with np.load(path.parent / "expected.npz") as f:
            return {k.split("/")[2]: f[k] for k in f.files if k.startswith(f"{path.stem}/in/")}
    if path.stem == "torchvision_patterns":  # as tests/core/test_subgraphs.py feeds it
        xy = rng.random((6, 2)) * 12
        boxes = np.concatenate([xy, xy + 2 + rng.random((6, 2)) * 8], 1).astype(np.float32)
        inputs = [boxes, rng.random(6).astype(np.float32), rng.integers(0, 3, 6),
                  rng.random((6, 1, 7, 7)).astype(np.float32)]
        return dict(zip(names, inputs, strict=True))
    for kept in (path.with_suffix(".inputs.npz"), path.parent / "inputs.npz"):
        if not kept.is_file():
            continue
        with np.load(kept) as f:
            given = dict(f)
        found = {}
        for spec in model.inputs:
            key = next((n for n in (spec.name, *spec.names) if n in given), None)
            if key is None and len(model.inputs) == len(given) == 1:
                key = next(iter(given))
            if key is not None:
                found[spec.name] = given[key]
        if len(found) == len(model.inputs):
            return found
    return model.random_inputs(0)


def assert_same_bits(got: dict[str, np.ndarray], want: dict[str, np.ndarray], what: str) -> None:
    assert got.keys() >= want.keys(), what
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, strict=True, err_msg=f"{what}: {name}")


@pytest.fixture(scope="module", params=MODELS, ids=lambda p: str(p.relative_to(ROOT)))
def model_and_feeds(request):
    path = request.param
    model = irrun.load(path)
    return path, model, _feeds(model, path)


@pytest.mark.parametrize("threads", [1, 2])
def test_every_view_gives_the_plain_runs_bits(model_and_feeds, threads):
    _, model, feeds = model_and_feeds
    model.threads = threads
    plain = model.run(feeds)
    assert_same_bits(model.run(feeds), plain, "a second plain run")
    assert_same_bits(model.run(feeds, intermediate=True), plain, "intermediate=True")
    seen: list = []
    assert_same_bits(model.run(feeds, on_layer=seen.append), plain, "on_layer")
    assert seen
    profiled, _ = model._execute(feeds, on_layer=lambda layer: None, every_layer=False,
                                 values=False)
    assert_same_bits(profiled, plain, "the profile's run")
    report = compare(model, feeds, plain, mark_all=True, atol=0.0, rtol=0.0)
    outputs = {s.name for s in model.outputs}
    assert [str(r) for r in report.results if r.name in outputs and not r.passed] == []


def test_reference_runs_agree_with_default_runs(model_and_feeds):
    path, model, feeds = model_and_feeds
    reference = irrun.load(path, reference=True)
    assert reference.threads == 1 and reference._plan.passes == ()
    want = reference.run(feeds)
    got = model.run(feeds)
    for name, value in want.items():
        # BLAS sums products in orders of its own (blocking, the kernel of the CPU): a
        # float output may differ by a few ulp of the largest value each layer adds up;
        # 1e-5 of the output's scale bounds that for these models' depths.
        if value.dtype.kind == "f":
            scale = max(1.0, float(np.max(np.abs(value), initial=0.0)))
            np.testing.assert_allclose(got[name], value, rtol=0, atol=1e-5 * scale,
                                       err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_a_uniform_classifier_gives_a_uniform_softmax(tmp_path):
    """Issue 25's all-constant AlexNet: a last linear layer whose 1000 rows of weights are
    equal gives 1000 equal logits (the same products, summed alike), so the softmax is
    uniform.  Multiplying by a transposed copy of the weight made BLAS sum 8 edge columns
    in another order, 1 ulp lower: at logits of this size that zeroed their probabilities.
    Every view and the reference run give OpenVINO's answer, 1/1000 each."""
    ov = pytest.importorskip("openvino")
    from openvino import opset8 as ops

    # (Seeded so that the transposed copy's sums did differ, with this CPU's OpenBLAS.)
    rng = np.random.default_rng(6)
    x = ops.parameter([1, 64], np.float32, name="x")
    hidden = ops.relu(ops.matmul(
        x, ops.constant(rng.standard_normal((2048, 64)).astype(np.float32)), False, True))
    logits = ops.add(ops.matmul(hidden, ops.constant(np.full((1000, 2048), 0.01, np.float32)),
                                False, True), ops.constant(np.full(1000, 0.1, np.float32)))
    path = tmp_path / "uniform.xml"
    ov.save_model(ov.Model([ops.softmax(logits, 1)], [x]), path, compress_to_fp16=False)
    feeds = {"x": (rng.random((1, 64)) * 1e4).astype(np.float32)}
    plugin = ov.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds)[0]
    uniform = np.full((1, 1000), np.float32(1) / np.float32(1000), np.float32)
    np.testing.assert_array_equal(plugin, uniform)
    for model in (irrun.load(path), irrun.load(path, reference=True)):
        (got,) = model.run(feeds).values()
        np.testing.assert_array_equal(got, uniform)
        (seen,) = (v for k, v in model.run(feeds, intermediate=True).items()
                   if k in {s.name for s in model.outputs})
        np.testing.assert_array_equal(seen, uniform)


def test_the_command_line_runs_and_compares_with_the_reference(capsys):
    from irrun.cli import main

    demo = str(ROOT / "models" / "demo.xml")
    inputs = str(ROOT / "models" / "demo.inputs.npz")
    assert main([demo, "--reference", "--input", inputs, "-q"]) == 0
    assert capsys.readouterr().out.split()[6:9] == ["probabilities", "[1,", "10]"]
    assert main(["compare", demo, "--input", inputs, "--ref-backend", "reference",
                 "--mark-all"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("irrun vs irrun's reference kernels") and "FAILED" not in out
    assert main([demo, "--reference", "--threads", "2"]) == 2
    assert "a reference model runs on one thread, not 2" in capsys.readouterr().err


def test_irrun_ops_lists_the_fast_kernels(capsys):
    from irrun.cli import main
    from irrun.fast import fast_kernels

    assert main(["ops", "--fast"]) == 0
    out, err = capsys.readouterr()
    assert err == f"{len(fast_kernels())} fast kernels; every other op runs its reference kernel\n"
    blocks = out.rstrip("\n").split("\n")
    heads = [line for line in blocks if not line.startswith("  ")]
    assert len(heads) == len(fast_kernels()) and "MaxPool v8" in heads
    assert sum(line.startswith("  applies: ") for line in blocks) == len(heads)


@pytest.mark.parametrize("path", sorted((ROOT / "models").glob("*.xml")), ids=lambda p: p.stem)
def test_a_dump_and_a_profile_save_the_plain_runs_bits(path, tmp_path, capsys):
    """``irrun run --dump-dir`` and ``--profile`` save what a plain ``irrun run -o`` saves."""
    from irrun.cli import main

    saved = {}
    for name, extra in (("plain", []), ("dump", ["--dump-dir", str(tmp_path / "dump")]),
                        ("profile", ["--profile", "--iterations", "2"])):
        out = tmp_path / f"{name}.npz"
        assert main([str(path), "-q", "-o", str(out), *extra]) == 0
        with np.load(out) as f:
            saved[name] = dict(f)
    capsys.readouterr()
    assert_same_bits(saved["dump"], saved["plain"], "--dump-dir")
    assert_same_bits(saved["profile"], saved["plain"], "--profile")
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["tensors"]
