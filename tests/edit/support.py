"""What the edit tests share: the models they cut, their inputs, and OpenVINO's values
of any tensor of a model (its expected values)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from irrun.edit.extract import TensorIndex

ROOT = Path(__file__).resolve().parents[2]
TORCH = ROOT / "tests" / "torch_models"
CORPUS = ROOT / "tests" / "corpus"
SEQUENCE = ROOT / "tests" / "sequence_models"
SHAPES = json.loads((TORCH / "shapes.json").read_text())
CPU = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}


def model_inputs(xml: Path) -> dict[str, np.ndarray]:
    """Inputs of a test model by name: the corpus's own, or seeded random ones of the
    shape tests/torch_models/shapes.json gives."""
    if xml.parent == CORPUS:
        with np.load(xml.with_suffix(".inputs.npz")) as f:
            return dict(f)
    if xml.parent == SEQUENCE:
        prefix = f"{xml.stem}/in/"
        with np.load(SEQUENCE / "expected.npz") as f:
            return {k.removeprefix(prefix): f[k] for k in f.files if k.startswith(prefix)}
    rng = np.random.default_rng(7)
    return {"x": rng.standard_normal(SHAPES[xml.stem]).astype(np.float32)}


def ov_values(core, xml: Path, feeds: dict[str, np.ndarray], tensors: list[str],
              model) -> dict[str, np.ndarray]:  # fmt: skip
    """OpenVINO's values of ``tensors`` (irrun names, looked up in ``model``, the irrun
    model of ``xml``) for ``feeds``: the model with those tensors added as outputs."""
    ovm = core.read_model(str(xml))
    ops = {op.get_friendly_name(): op for op in ovm.get_ordered_ops()}
    wanted = []
    index = TensorIndex(model)
    for name in tensors:
        lid, port = index.find(name, "tensor")
        layer = model._graph.layers[lid]
        wanted.append(ops[layer.name].output([p.id for p in layer.outputs].index(port)))
    ovm.add_outputs(wanted)
    position = {}  # (producer name, output index) -> the model output that is it
    for i, res in enumerate(ovm.get_results()):
        src = res.input_value(0)
        position.setdefault((src.get_node().get_friendly_name(), src.get_index()), i)
    compiled = core.compile_model(ovm, "CPU", CPU)
    inputs = {}
    for i, param in enumerate(ovm.get_parameters()):
        keys = {param.get_friendly_name(), *param.output(0).get_names()}
        inputs[i] = next(feeds[k] for k in keys if k in feeds)
    got = compiled.infer_new_request(inputs)
    return {
        name: np.array(
            got[compiled.outputs[position[(out.get_node().get_friendly_name(), out.get_index())]]]
        )
        for name, out in zip(tensors, wanted, strict=True)
    }
