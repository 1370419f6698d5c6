"""irrun reshape: the file written is the one OpenVINO's reshape and save_model write
(Parameter shapes, every port's dims), and runs as OpenVINO's reshaped model runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from support.cli import run_cli

import irrun
from irrun.edit.reshape import reshape
from irrun.ir.writer import write_ir

ov = pytest.importorskip("openvino")

TESTS = Path(__file__).resolve().parents[1]
TORCH_SHAPES = json.loads((TESTS / "torch_models" / "shapes.json").read_text())
CPU = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}


def _ports(path: Path) -> dict[str, tuple]:
    """Each layer's Parameter shape (if any) and its ports' dims, by layer name."""
    root = etree.parse(str(path)).getroot()
    found = {}
    for layer in root.iterfind("layers/layer"):
        data = layer.find("data")
        shape = data.get("shape") if layer.get("type") == "Parameter" else None
        ports = tuple(tuple(d.text for d in port.iterfind("dim"))
                      for port in layer.iterfind("*/port"))  # fmt: skip
        found[layer.get("name")] = (shape, ports)
    return found


CASES = [
    ("torch_models/resnet_stem", {"x": [1, 3, 64, 64]}),
    ("torch_models/mobilenet_block", {"x": [2, 3, 32, 32]}),
    ("torch_models/attention", {"x": [2, 5, 8]}),
    ("torch_models/unet", {"x": [1, 3, 16, 16]}),
    ("torch_models/resnet_stem", {"x": "?,3,1..100,-1"}),  # dynamic dims and a range
    ("corpus/bert", {"input_ids": [2, 8], "attention_mask": [2, 8]}),
    ("corpus/gpt2_int4_sym", {"input_ids": [1, 8], "attention_mask": [1, 8]}),
]


@pytest.mark.parametrize("name, shapes", CASES, ids=[f"{n}:{s}" for n, s in CASES])
def test_reshaped_file_is_what_openvino_writes(name, shapes, tmp_path):
    path = TESTS / f"{name}.xml"
    model = irrun.load(path, fold_constants=False)
    mine = tmp_path / "mine.xml"
    write_ir(reshape(model, shapes), mine, model.weights)
    theirs = ov.Core().read_model(path)
    theirs.reshape({k: ov.PartialShape(v if isinstance(v, str) else ",".join(map(str, v)))
                    for k, v in shapes.items()})  # fmt: skip
    ov.save_model(theirs, tmp_path / "theirs.xml", compress_to_fp16=False)
    mine, theirs = _ports(mine), _ports(tmp_path / "theirs.xml")
    # OpenVINO's reshape also runs its SmartReshape passes, which may rewrite a layer or
    # two (resnet_stem's flattening Reshape gets its constant target shape back as a
    # ShapeOf subgraph); every layer both files have is written alike.
    common = mine.keys() & theirs.keys()
    assert len(common) >= 0.9 * len(mine)
    assert {k: mine[k] for k in common} == {k: theirs[k] for k in common}
    assert {k for k, (shape, _) in mine.items() if shape} == set(shapes)
    assert model.inputs == irrun.load(path).inputs  # the model was left as it was


@pytest.mark.parametrize("name", ["resnet_stem", "attention", "segmentation"])
def test_reshaped_model_runs_as_openvinos(name, tmp_path):
    path = TESTS / "torch_models" / f"{name}.xml"
    shape = TORCH_SHAPES[name]
    out = tmp_path / "static.xml"
    model = irrun.load(path, fold_constants=False)
    write_ir(reshape(model, {"x": shape}), out, model.weights)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    again = irrun.load(out)
    assert again.inputs[0].shape == tuple(shape)
    assert all(isinstance(d, int) for spec in again.outputs for d in spec.shape)
    theirs = ov.Core().read_model(path)
    theirs.reshape({"x": shape})
    want = ov.Core().compile_model(theirs, "CPU", CPU)(x)[0]
    np.testing.assert_array_equal(ov.Core().compile_model(out, "CPU", CPU)(x)[0], want)
    got = again.run({"x": x})[again.outputs[0].name]
    scale = float(np.max(np.abs(want)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale)  # as test_torch_models


def test_reshape_command(capsys, tmp_path):
    out = tmp_path / "static.xml"
    path = TESTS / "torch_models" / "resnet_stem.xml"
    rc, printed, err = run_cli(capsys, "reshape", str(path), "--shape", "[1,3,64,64]",
                               "-o", str(out))  # fmt: skip
    assert rc == 0, err
    assert printed == "input x: [?,3,?,?] -> [1,3,64,64]\noutput Result_269: [?,10] -> [1,10]\n"
    assert err == f"irrun: wrote 20 layers to {out} and static.bin\n"
    assert _ports(out)["x"][0] == "1,3,64,64"


@pytest.mark.parametrize("args, rc, message", [
    (["--shape", "[1,3,64]"], 1, "reshape to x[1,3,64]: "),
    (["--shape", "y[1,3,64,64]"], 2, "y"),
    ([], 2, "the following arguments are required: --shape"),
])  # fmt: skip
def test_reshape_command_errors(args, rc, message, capsys, tmp_path):
    got, _, err = run_cli(capsys, "reshape", str(TESTS / "torch_models" / "resnet_stem.xml"),
                          *args, "-o", str(tmp_path / "out.xml"))  # fmt: skip
    assert got == rc and message in err
    assert not list(tmp_path.iterdir())
