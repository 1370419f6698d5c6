"""Which inputs ``irrun compare`` runs on when given no ``--input``, and what a failure on
random ones says: their seed and shapes, and where the reference's inputs may be.

Reference values come from OpenVINO's CPU plugin (through its own API) on inputs made here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG

import irrun
from irrun.cli import main
from irrun.tools.compare import compare

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

# The bundled models' inputs: one each, of these shapes.
INPUTS = {"pooling_chain": ("image", [1, 3, 16, 16]), "demo": ("image", [1, 3, 32, 32])}


def openvino_outputs(name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    ov = pytest.importorskip("openvino")
    compiled = ov.Core().compile_model(str(MODELS / f"{name}.xml"), "CPU", CPU_CONFIG)
    results = compiled({0: x})
    return {out.get_any_name(): np.array(results[i]) for i, out in enumerate(compiled.outputs)}


def made_up_input(name: str) -> np.ndarray:
    # Not what any seed gives: a ramp with a sign pattern.
    shape = INPUTS[name][1]
    x = np.linspace(-3.0, 5.0, int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x[..., ::3] *= -1
    return x


def compare_cli(capsys, *args: str) -> tuple[int, str]:
    rc = main(["compare", *map(str, args)])
    return rc, capsys.readouterr().out


def notes(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("note: ")]


@pytest.mark.parametrize("seed", [None, 1, 5])
@pytest.mark.parametrize("name", ["pooling_chain", "demo"])
def test_a_failure_on_random_inputs_says_so(tmp_path, capsys, name, seed):
    x = made_up_input(name)
    ref = tmp_path / "expected.npz"
    np.savez(ref, **openvino_outputs(name, x))
    model = tmp_path / f"{name}.xml"
    for suffix in (".xml", ".bin"):
        shutil.copy(MODELS / f"{name}{suffix}", model.with_suffix(suffix))
    seed_args = ["--seed", str(seed)] if seed is not None else []
    rc, out = compare_cli(capsys, model, "--ref", ref, *seed_args)
    assert rc == 1
    input_name, shape = INPUTS[name]
    assert notes(out) == [
        f"note: irrun ran on random inputs (seed {seed or 0}: {input_name} {shape} float32), not "
        "on those the reference was made from: give those with --input"
    ]
    # With them it passes.
    np.save(tmp_path / "x.npy", x)
    rc, out = compare_cli(capsys, model, "--ref", ref, "--input", tmp_path / "x.npy")
    assert rc == 0 and notes(out) == []


def test_the_note_points_to_inputs_kept_beside_the_reference(tmp_path, capsys):
    shutil.copy(MODELS / "pooling_chain.expected.npz", tmp_path / "pooling_chain.expected.npz")
    np.savez(tmp_path / "pooling_chain.inputs.npz", image=made_up_input("pooling_chain"))
    rc, out = compare_cli(capsys, MODELS / "pooling_chain.xml", "--ref",
                          tmp_path / "pooling_chain.expected.npz", "--seed", "3")  # fmt: skip
    assert rc == 1
    assert notes(out)[-1].endswith(
        f"give those with --input, perhaps --input {tmp_path / 'pooling_chain.inputs.npz'}"
    )


def test_a_reference_holding_its_inputs_is_compared_on_them(tmp_path, capsys):
    x = made_up_input("pooling_chain")
    ref = tmp_path / "ov.npz"
    np.savez(ref, image=x, **openvino_outputs("pooling_chain", x))
    rc, out = compare_cli(capsys, MODELS / "pooling_chain.xml", "--ref", ref, "--json")
    report = json.loads(out)
    assert rc == 0 and report["passed"]
    assert report["inputs"] == {
        "source": "reference", "seed": None, "hint": None,
        "tensors": [{"name": "image", "shape": [1, 3, 16, 16], "dtype": "float32"}],
    }  # fmt: skip
    # --seed asks for random inputs: they are not the reference's, and both notes say so.
    rc, out = compare_cli(capsys, MODELS / "pooling_chain.xml", "--ref", ref, "--seed", "0")
    assert rc == 1
    assert notes(out)[0].startswith("note: the reference's input 'image' is not the input given")
    assert notes(out)[1].startswith("note: irrun ran on random inputs (seed 0: image ")


def test_a_reference_lacking_an_input_is_not_taken_for_the_inputs(tmp_path):
    # pooling_chain has one input; a reference with another array of another name only.
    x = made_up_input("pooling_chain")
    ref = {"not_image": x, **openvino_outputs("pooling_chain", x)}
    report = compare(MODELS / "pooling_chain.xml", reference=ref)
    assert report.inputs["source"] == "random" and report.inputs["seed"] == 0
    assert not report.passed


def test_a_dump_without_its_inputs_file_says_it_is_missing(tmp_path, capsys):
    dump = tmp_path / "dump"
    assert main([str(MODELS / "demo.xml"), "--seed", "7", "--dump-dir", str(dump), "-q"]) == 0
    capsys.readouterr()
    (dump / "inputs.npz").unlink()
    rc, out = compare_cli(capsys, MODELS / "demo.xml", "--ref", dump)
    assert rc == 1
    assert notes(out)[-1] == (
        "note: irrun ran on random inputs (seed 0: image [1, 3, 32, 32] float32), not on those "
        f"the reference was made from: give those with --input (the dump's {dump / 'inputs.npz'} "
        "is missing)"
    )


def test_a_backend_failure_on_random_inputs_names_them(monkeypatch, capsys):
    pytest.importorskip("openvino")
    real_run = irrun.Model.run
    monkeypatch.setattr(irrun.Model, "run", lambda self, *a, **k: {
        n: v + 1 for n, v in real_run(self, *a, **k).items()})  # fmt: skip
    rc, out = compare_cli(capsys, MODELS / "demo.xml", "--ref-backend", "openvino", "--seed", "2")
    assert rc == 1
    assert notes(out) == [
        "note: both ran on the same random inputs (seed 2: image [1, 3, 32, 32] float32); "
        "--input gives others"
    ]


def test_passing_on_random_inputs_adds_no_note(capsys):
    pytest.importorskip("openvino")
    rc, out = compare_cli(capsys, MODELS / "demo.xml", "--ref-backend", "openvino")
    assert rc == 0 and notes(out) == []
