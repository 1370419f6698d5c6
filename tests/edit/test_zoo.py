"""``extract`` and ``reduce`` on every converted model of tests/ (the corpus, the torch
models, the sequence models): the other edits have sweeps of their own
(test_fold.py folds and cleans every model, test_precision.py converts every compressible
one, tests/ir/test_writer.py writes every one back).

- extract: a subgraph from the middle of each model, cut at a tensor half-way up the
  ancestors of a tensor two thirds through, which OpenVINO runs on its own full model's
  values at the cut and gives that model's values at the output;
- reduce: a check that finds a model bad while it holds a layer of some type shrinks each
  model to one layer of that type, fed the values the full model computes there.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from lxml import etree

from irrun import load
from irrun.edit.extract import constant_layers, extract_tensors, walk_back
from irrun.edit.reduce import reduce
from irrun.ir.writer import write_ir
from tests.edit.support import CORPUS, CPU, SEQUENCE, TORCH, model_inputs, ov_values

MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
ZOO = sorted([*CORPUS.glob("*.xml"), *TORCH.glob("*.xml"), *SEQUENCE.glob("*.xml")])
ENDS = ("Parameter", "Const", "Result", "ReadValue", "Assign")


def test_the_zoo_is_the_converted_models():
    assert len(ZOO) == 33


def _picks(model):
    """(output tensor, cut tensor) of the model's middle: the first output of the
    computing layer two thirds through the run, and a tensor half-way up its ancestors
    that it reads."""
    lg = model._graph
    constants = constant_layers(model)
    computing = [lid for lid in lg.order if lg.layers[lid].type not in ENDS
                 and lid not in constants and lg.layers[lid].outputs]  # fmt: skip
    fq = [lid for lid in computing if lg.layers[lid].type == "FakeQuantize"]
    if fq:
        # A value a hair off a rounding boundary of a FakeQuantize moves a whole step, and
        # the plugin fuses the full model's layers otherwise than the subgraph's: the cut
        # is a FakeQuantize's output, the output the layer that first reads it.
        cut = (fq[len(fq) // 2], lg.layers[fq[len(fq) // 2]].outputs[0].id)
        out_layer = next(lid for lid in computing
                         if any(lg.sources.get((lid, p.id)) == cut for p in lg.layers[lid].inputs))  # fmt: skip
        return (out_layer, lg.layers[out_layer].outputs[0].id), cut
    out_layer = computing[2 * len(computing) // 3]
    out = (out_layer, lg.layers[out_layer].outputs[0].id)
    met, _ = walk_back(lg, [out], lambda t: True)
    ancestors = [lid for lid in computing if lid in met and lid != out_layer]
    read = {(s.layer, s.port) for (lid, _), s in lg.sources.items() if lid in met}
    for lid in ancestors[len(ancestors) // 2 :]:
        cut = next(((lid, p.id) for p in lg.layers[lid].outputs if (lid, p.id) in read), None)
        if cut is not None:
            return out, cut
    return out, None


@pytest.mark.parametrize("xml", ZOO, ids=[p.stem for p in ZOO])
def test_extract_the_middle_of_every_model(xml, core, tmp_path):
    model = load(xml)
    out, cut = _picks(model)
    names = model.tensor_names
    cuts = [cut] if cut is not None else []
    feeds = model_inputs(xml)
    expected = ov_values(core, xml, feeds, [names[t] for t in [*cuts, out]], model)
    made = extract_tensors(model, cuts, [out])
    sub = tmp_path / "sub.xml"
    write_ir(made.doc, sub, model.weights)

    small = load(sub)
    sub_feeds = {small.input_spec(names[t]).name: expected[names[t]] for t in cuts}
    for key, value in feeds.items():  # the model's own inputs the output still needs
        if small.input_spec(key) is not None:
            sub_feeds[small.input_spec(key).name] = value
    assert len(small.inputs) == len(sub_feeds)
    ovm = core.read_model(str(sub))
    arrays = [sub_feeds[small.input_spec(p.get_friendly_name()).name]
              for p in ovm.get_parameters()]  # fmt: skip
    # The CPU plugin fails some passes on the dynamic dims of a cut (see test_extract.py).
    ovm.reshape({i: list(a.shape) for i, a in enumerate(arrays)})
    compiled = core.compile_model(ovm, "CPU", CPU)
    got = np.asarray(compiled(arrays)[compiled.outputs[0]])
    want = expected[names[out]]
    # The plugin fuses the subgraph's layers otherwise than the full model's: the sums of
    # its kernels may come in another order, so within a relative 1e-4 of the tensor's scale.
    scale = float(np.max(np.abs(want), initial=1.0)) if want.dtype.kind == "f" else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * scale)
    ours = small.run(sub_feeds, outputs=[names[out]])[names[out]]
    # irrun against the plugin: as for the whole model, within the corpus's own tolerance
    # (tests/corpus/manifest.json: 1e-3 of the scale for NNCF's f16 weight decompression).
    scaled = max(1e-4, MANIFEST.get(xml.stem, {}).get("tolerance", {}).get("scaled", 0))
    np.testing.assert_allclose(ours, want, rtol=1e-4, atol=scaled * scale)
    assert len(small.layers()) < len(model.layers())


def _types(xml) -> set[str]:
    return {layer.get("type") for layer in etree.parse(str(xml)).iter("layer")}


@pytest.mark.parametrize("xml", ZOO, ids=[p.stem for p in ZOO])
def test_reduce_every_model_to_one_layer_of_a_type(xml, core, tmp_path):
    model = load(xml)
    out, _ = _picks(model)
    kind = model._graph.layers[out[0]].type
    result = reduce(model, lambda candidate, inputs: kind in _types(candidate),
                    feeds=model_inputs(xml))  # fmt: skip
    assert result is not None
    assert [t for _, t in result.layers] == [kind]
    repro, _, npz = result.save(tmp_path / "repro.xml")
    assert kind in _types(repro)
    ovm = core.read_model(str(repro))  # OpenVINO reads the reproducer
    with np.load(npz) as f:
        given = dict(f)
    params = [p.get_friendly_name() for p in ovm.get_parameters()]
    assert sorted(given) == sorted(
        next(n for n in {p.get_friendly_name(), *p.output(0).get_names()} if n in given)
        for p in ovm.get_parameters()
    ), params
