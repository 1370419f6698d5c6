"""Model outputs whose tensors have no name (usual for ``ov.convert_model`` of a torch module):
irrun names them after their Result, and compares them with OpenVINO's Result of that name,
or with a reference file's array where only one can be meant.

The IRs are bundled models with the names of the tensors feeding their Results removed; the
expected values are OpenVINO's, read here through its own API by the Result's position.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG

import irrun
from irrun.cli import main
from irrun.tools.compare import compare
from irrun.tools.compare_references import _outputs_by_result

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

# Each bundled model's outputs and the Result layers that take them.
RESULTS = {
    "demo": {"probabilities": "probabilities_result"},
    "pooling_chain": {"pooled": "pooled_result", "indices": "indices_result"},
}
# The layers that compute them (read in the IRs).
PRODUCERS = {
    "probabilities": "'softmax' (SoftMax-v8)",
    "pooled": "'head_pool' (AdaptiveMaxPool-v8)",
    "indices": "'head_pool' (AdaptiveMaxPool-v8)",
}


def unnamed(tmp_path: Path, name: str, strip: tuple[str, ...] | None = None) -> Path:
    """The bundled model ``name`` with the tensor names of the outputs ``strip`` (all by
    default) removed, as OpenVINO writes a model whose outputs have none."""
    text = (MODELS / f"{name}.xml").read_text()
    for output in strip if strip is not None else tuple(RESULTS[name]):
        text, n = re.subn(rf' (output_)?names="{output}"', "", text)
        assert n == 2, (output, n)  # the port's names and the Result's output_names
    xml = tmp_path / f"{name}.xml"
    xml.write_text(text)
    (tmp_path / f"{name}.bin").write_bytes((MODELS / f"{name}.bin").read_bytes())
    return xml


def inputs(name: str) -> dict[str, np.ndarray]:
    with np.load(MODELS / f"{name}.inputs.npz") as f:
        return dict(f)


def openvino_outputs(xml: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ov = pytest.importorskip("openvino")
    compiled = ov.Core().compile_model(str(xml), "CPU", CPU_CONFIG)
    results = compiled(feeds)
    return [np.array(results[i]) for i in range(len(compiled.outputs))]


def test_irrun_names_an_unnamed_output_after_its_result(tmp_path):
    model = irrun.load(unnamed(tmp_path, "pooling_chain"))
    assert [(o.name, o.names) for o in model.outputs] == [
        ("pooled_result", ()), ("indices_result", ())
    ]  # fmt: skip


@pytest.mark.parametrize("mark_all", [False, True], ids=["outputs", "mark-all"])
@pytest.mark.parametrize(
    ("name", "strip"),
    [("demo", None), ("pooling_chain", None), ("pooling_chain", ("indices",))],
    ids=["demo", "pooling_chain", "pooling_chain-one-named"],
)
def test_unnamed_outputs_are_compared_with_openvinos(tmp_path, capsys, name, strip, mark_all):
    xml = unnamed(tmp_path, name, strip)
    feeds = inputs(name)
    expected = openvino_outputs(xml, feeds)  # by position, in Result order
    stripped = strip if strip is not None else tuple(RESULTS[name])
    names = [RESULTS[name][o] if o in stripped else o for o in RESULTS[name]]
    got = irrun.load(xml).run(feeds)
    assert list(got) == names
    for value, want in zip(got.values(), expected, strict=True):
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)

    args = ["compare", str(xml), "--ref-backend", "openvino", "--input",
            str(MODELS / f"{name}.inputs.npz")] + ["--mark-all"] * mark_all  # fmt: skip
    rc = main(args)
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "missing" not in out and "not compared" not in out
    lines = {ln.split(" | ")[1]: ln for ln in out.splitlines() if ln.startswith("PASSED | ")}
    for output in names:
        assert "max abs" in lines[output]  # compared, values and all
    # Under the Result's name, an output is still the tensor its layer computes.
    for output, shown in zip(RESULTS[name], names, strict=True):
        assert PRODUCERS[output] in lines[shown]


def test_an_unnamed_output_that_differs_from_openvino_fails(tmp_path, monkeypatch):
    pytest.importorskip("openvino")
    xml = unnamed(tmp_path, "demo")
    feeds = inputs("demo")
    model = irrun.load(xml)
    real_run = irrun.Model.run

    def off_by_one(self, *args, **kwargs):
        out = real_run(self, *args, **kwargs)
        return {k: v + 1 for k, v in out.items()}

    monkeypatch.setattr(irrun.Model, "run", off_by_one)
    report = compare(model, feeds, backend="openvino")
    [result] = report.results
    assert (result.name, result.passed, result.problem) == ("probabilities_result", False, None)
    assert result.max_abs == pytest.approx(1.0, abs=1e-5)


def test_a_reference_file_keyed_otherwise_is_used_where_only_one_array_fits(tmp_path, capsys):
    xml = unnamed(tmp_path, "demo")
    feeds = inputs("demo")
    [probabilities] = openvino_outputs(xml, feeds)
    ref = tmp_path / "ov.npz"
    # As a script saving OpenVINO's outputs by index writes them, with the input beside.
    np.savez(ref, image=feeds["image"], output_0=probabilities, logits_shape=np.array([1, 10]))
    rc = main(["compare", str(xml), "--ref", str(ref), "--input", str(MODELS / "demo.inputs.npz")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.splitlines()[0].startswith("PASSED | probabilities_result | ")
    assert ("note: output 'probabilities_result' is not in the reference: compared with its "
            "'output_0', the one array there of that shape that irrun has no tensor of") in out
    assert "logits_shape" in out  # the other stranger is still named as not compared


def test_a_reference_file_keyed_otherwise_is_not_guessed_when_two_arrays_fit(tmp_path, capsys):
    # pooled and indices have one shape: which array is which cannot be told.
    xml = unnamed(tmp_path, "pooling_chain")
    feeds = inputs("pooling_chain")
    pooled, indices = openvino_outputs(xml, feeds)
    ref = tmp_path / "ov.npz"
    np.savez(ref, output_0=pooled, output_1=indices)
    rc = main(["compare", str(xml), "--ref", str(ref), "--input",
               str(MODELS / "pooling_chain.inputs.npz")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1
    assert out.count("missing in the reference") == 2
    assert ("note: the reference has 2 tensors irrun does not, not compared: output_0, output_1; "
            "irrun names an output whose tensor has no name after its Result: save the "
            "reference's outputs as pooled_result, indices_result") in out
    # Named as the note says, they pass.
    np.savez(ref, pooled_result=pooled, indices_result=indices)
    assert main(["compare", str(xml), "--ref", str(ref), "--input",
                 str(MODELS / "pooling_chain.inputs.npz")]) == 0  # fmt: skip


def _results(*names: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(get_friendly_name=lambda n=n: n) for n in names]


@pytest.mark.parametrize(
    ("friendly", "want"),
    [
        (("pooled_result", "indices_result"), {0: "pooled_result", 1: "indices_result"}),
        (("indices_result", "pooled_result"), {0: "indices_result", 1: "pooled_result"}),
        # Two Results of one name: the position tells.
        (("r", "r"), {0: "pooled_result", 1: "indices_result"}),
        # One name matches; position 1 is indices_result, taken already: left unmatched.
        (("indices_result", "renamed"), {0: "indices_result"}),
    ],
    ids=["names", "names-reordered", "duplicate-names", "one-name"],
)
def test_openvino_results_are_matched_by_name_then_position(tmp_path, friendly, want):
    model = irrun.load(unnamed(tmp_path, "pooling_chain"))
    assert _outputs_by_result(model, _results(*friendly)) == want


@pytest.mark.parametrize("name", ["demo", "pooling_chain"])
def test_a_dump_and_an_output_file_name_an_unnamed_output_alike(tmp_path, name):
    # irrun net.xml --input x --dump-dir dump -o out.npz; irrun compare net.xml --ref dump
    # failed with "missing in the reference": -o keyed the output by its Result, the dump by
    # the layer that computes it.
    xml = unnamed(tmp_path, name)
    x = str(MODELS / f"{name}.inputs.npz")
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    dump, out = tmp_path / "dump", tmp_path / "out.npz"
    done = subprocess.run(
        [sys.executable, "-m", "irrun", str(xml), "--input", x, "--dump-dir", str(dump),
         "-o", str(out)], capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = list(RESULTS[name].values())
    with np.load(out) as saved:
        assert list(saved) == results
        outputs = dict(saved)
    manifest = json.loads((dump / "manifest.json").read_text())
    by_name = {t["name"]: t for t in manifest["tensors"]}
    for output, result in RESULTS[name].items():
        assert by_name[result]["layer"]["name"] in PRODUCERS[output]
        np.testing.assert_array_equal(np.load(dump / by_name[result]["file"]), outputs[result])
    # Both are references for compare, each on its own and against OpenVINO's values.
    expected = openvino_outputs(xml, inputs(name))
    for want, got in zip(expected, outputs.values(), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for ref in (dump, out):
        report = compare(irrun.load(xml), inputs(name), ref)
        assert report.passed and [r.name for r in report.results] == results
        assert all(r.max_abs == 0 for r in report.results)


def test_an_unnamed_tensor_feeding_two_results_is_found_in_a_dump_under_the_first(tmp_path):
    ov = pytest.importorskip("openvino")
    ops = pytest.importorskip("openvino.opset13")
    x = ops.parameter([1, 4], np.float32, name="x")
    relu = ops.relu(x)
    first, second = ops.result(relu), ops.result(relu)
    first.set_friendly_name("first")
    second.set_friendly_name("second")
    xml = tmp_path / "two.xml"
    ov.save_model(ov.Model([first, second], [x], "two"), xml)
    # As a converter leaves it: no name on the tensor the Results take.
    text, n = re.subn(r' names="first"', "", xml.read_text())
    assert n == 1
    xml.write_text(text)
    model = irrun.load(xml)
    assert [o.name for o in model.outputs] == ["first", "second"]
    feeds = {"x": np.array([[-2.0, -1.0, 0.5, 3.0]], np.float32)}
    dump = tmp_path / "dump"
    assert main([str(xml), "--input", f"x={_npy(tmp_path, feeds['x'])}", "-q",
                 "--dump-dir", str(dump)]) == 0  # fmt: skip
    manifest = json.loads((dump / "manifest.json").read_text())
    assert [t["name"] for t in manifest["tensors"]] == ["first"]
    report = compare(model, None, dump)
    assert report.passed and [r.name for r in report.results] == ["first", "second"]
    # ReLU by hand.
    np.testing.assert_array_equal(np.load(dump / manifest["tensors"][0]["file"]),
                                  [[0.0, 0.0, 0.5, 3.0]])  # fmt: skip


def _npy(directory: Path, array: np.ndarray) -> Path:
    path = directory / "x.npy"
    np.save(path, array)
    return path
