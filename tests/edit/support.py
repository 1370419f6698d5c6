"""What the edit tests share: the models they cut, their inputs, and OpenVINO's values
of any tensor of a model (its expected values)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from irrun import load
from irrun.edit.extract import TensorIndex
from tests.support.model_inputs import model_inputs as shared_inputs

ROOT = Path(__file__).resolve().parents[2]
TORCH = ROOT / "tests" / "torch_models"
CORPUS = ROOT / "tests" / "corpus"
SEQUENCE = ROOT / "tests" / "sequence_models"
# FakeQuantize in float and products by compressed weights of unquantized activations, as
# irrun computes them (the plugin's INT8 kernels otherwise).
CPU = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1, "LP_TRANSFORMS_MODE": False,
       "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}  # fmt: skip


def model_inputs(xml: Path) -> dict[str, np.ndarray]:
    """Inputs of a test model by input name (see :mod:`tests.support.model_inputs`)."""
    specs = load(xml).inputs
    values = shared_inputs(xml, [({s.name, *s.names}, s.dtype) for s in specs])
    return {s.name: v for s, v in zip(specs, values, strict=True)}


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
