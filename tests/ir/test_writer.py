"""The IR writer: every model in tests/ and models/ read, written and read again.

Round trip: the records read back from the written file are those of the source (but
for the lines they were read from and constants' offsets), the ``.bin`` is the source's
byte for byte, and OpenVINO's CPU plugin and irrun each give the written model's
outputs the same bits as the source's.  Then what the writer does with what it cannot
write: nothing is left half-written.
"""

from __future__ import annotations

import dataclasses
import filecmp
import os
import re
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.errors import IrrunError
from irrun.ir.reader import read_ir
from irrun.ir.records import IRDocument
from irrun.ir.weights import Weights
from irrun.ir.writer import write_ir
from tests.support.bits import same_bits
from tests.support.model_inputs import model_inputs
from tests.support.ov_oneop import CPU_CONFIG

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted(
    str(p.relative_to(ROOT))
    for folder in ("models", "tests")
    for p in (ROOT / folder).rglob("*.xml")
    if ".hypothesis" not in p.parts
)
# irrun refuses to run it (its ROIAlign asks for what OpenVINO's reference refuses), and
# writes it all the same.
NOT_RUN_BY_IRRUN = {"tests/detection_models/roi_default.xml"}
# OpenVINO runs these with compressed-weight kernels that quantize activations unless told not to.
OV_CONFIG = {**CPU_CONFIG, "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0}


def test_the_round_trip_covers_every_model():
    assert len(MODELS) >= 59
    assert {"models/demo.xml", "tests/stateful/llama_int4/openvino_model.xml",
            "tests/sequence_models/keras_rnn.xml"} <= set(MODELS)  # fmt: skip


def records(doc: IRDocument) -> tuple:
    """What a document says, without where it said it (lines) or where constants lie."""
    layers = []
    for layer in doc.layers:
        d = {k: v for k, v in dataclasses.asdict(layer).items()
             if k not in ("line", "data_line", "bodies", "port_maps", "blob")}  # fmt: skip
        for group in ("inputs", "outputs"):
            d[group] = [{k: v for k, v in port.items() if k != "line"} for port in d[group]]
        if layer.type == "Const":
            d["data"] = {k: v for k, v in layer.data.items() if k != "offset"}
        d["port_maps"] = layer.port_maps and {
            tag: [(e.tag, e.attributes) for e in entries] for tag, entries in layer.port_maps.items()
        }
        d["bodies"] = layer.bodies and {tag: records(b) for tag, b in layer.bodies.items()}
        layers.append(d)
    edges = [(e.from_layer, e.from_port, e.to_layer, e.to_port) for e in doc.edges]
    return doc.name, layers, edges, dict(doc.rt_info)


@pytest.mark.parametrize("xml", MODELS)
def test_round_trip_keeps_the_records_and_the_bin(xml, tmp_path):
    new_xml, new_bin = write_ir(read_ir(ROOT / xml), tmp_path / "copy.xml",
                                Weights((ROOT / xml).with_suffix(".bin")))  # fmt: skip
    source_bin = (ROOT / xml).with_suffix(".bin")
    if source_bin.exists():
        assert filecmp.cmp(new_bin, source_bin, shallow=False)
    else:
        assert new_bin.stat().st_size == 0
    assert records(read_ir(new_xml)) == records(read_ir(ROOT / xml))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.bin", "copy.xml"]


def _openvino_outputs(core, xml: Path, feeds: list[np.ndarray]) -> list[np.ndarray]:
    compiled = core.compile_model(core.read_model(xml), "CPU", OV_CONFIG)
    request = compiled.create_infer_request()
    request.infer(feeds)
    request.reset_state()
    request.infer(feeds)  # the second run: a first batched_nms of a Loop is off (test_subgraphs)
    return [np.array(request.get_tensor(out).data) for out in compiled.outputs]


def _feeds(core, xml: Path) -> list[np.ndarray]:
    ports = [(p.get_names(), p.get_element_type().to_dtype()) for p in core.read_model(xml).inputs]
    return model_inputs(xml, ports)


@pytest.mark.parametrize("xml", MODELS)
def test_openvino_runs_the_written_model_as_the_source(xml, tmp_path, core):
    source = ROOT / xml
    new_xml, _ = write_ir(read_ir(source), tmp_path / "copy.xml",
                          Weights(source.with_suffix(".bin")))  # fmt: skip
    feeds = _feeds(core, source)
    want = _openvino_outputs(core, source, feeds)
    got = _openvino_outputs(core, new_xml, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert same_bits(g, w, nan_payloads=True)


@pytest.mark.parametrize("xml", [m for m in MODELS if m not in NOT_RUN_BY_IRRUN])
def test_irrun_runs_the_saved_model_as_the_source(xml, tmp_path):
    model = irrun.load(ROOT / xml)
    new_xml, _ = model.save(tmp_path / "saved.xml")
    again = irrun.load(new_xml)
    assert [(s.name, s.shape, s.element_type) for s in again.inputs] == \
        [(s.name, s.shape, s.element_type) for s in model.inputs]  # fmt: skip
    assert [s.name for s in again.outputs] == [s.name for s in model.outputs]
    values = model_inputs(ROOT / xml, [(set(s.names), s.dtype) for s in model.inputs])
    feeds = {s.name: v for s, v in zip(model.inputs, values, strict=True)}
    want, got = model.run(feeds), again.run(feeds)
    assert list(got) == list(want)
    for name in want:
        assert same_bits(got[name], want[name], nan_payloads=True), name


def test_a_reshaped_model_is_saved_with_its_new_shapes(tmp_path, core):
    model = irrun.load(ROOT / "models/pooling_chain.xml")
    model.reshape({"image": [2, 3, 32, 32]})
    xml, _ = model.save(tmp_path / "reshaped.xml")
    ov_model = core.read_model(xml)
    assert ov_model.inputs[0].get_partial_shape().to_shape() == [2, 3, 32, 32]
    assert [list(o.get_partial_shape().to_shape()) for o in ov_model.outputs] == [[2, 3, 2, 2]] * 2
    doc = read_ir(xml)
    assert doc.layers[0].data["shape"] == "2,3,32,32"
    # OpenVINO's own reshape writes the same dims into every port.
    ov_source = core.read_model(ROOT / "models/pooling_chain.xml")
    ov_source.reshape({"image": [2, 3, 32, 32]})
    for ours, theirs in zip(ov_model.get_ordered_ops(), ov_source.get_ordered_ops(), strict=True):
        assert [o.get_partial_shape() for o in ours.outputs()] == \
            [o.get_partial_shape() for o in theirs.outputs()]  # fmt: skip


def test_a_dynamic_reshape_is_written_as_openvino_writes_it(tmp_path):
    model = irrun.load(ROOT / "models/pooling_chain.xml")
    model.reshape({"image": ["1..4", 3, "?", "?"]})
    xml, _ = model.save(tmp_path / "dynamic.xml")
    assert read_ir(xml).layers[0].data["shape"] == "1..4,3,?,?"
    again = irrun.load(xml)
    assert again.inputs[0].partial_shape == "[1..4,3,?,?]"


def test_start_tag_attributes_and_rt_info_come_back_as_written(tmp_path):
    # OpenVINO writes output_names on a Result's start tag, and versioned attributes.
    source = ROOT / "tests/torch_models/quickstart.xml"
    xml, _ = write_ir(read_ir(source), tmp_path / "q.xml", Weights(source.with_suffix(".bin")))
    text = xml.read_text()
    assert text.count('<attribute name="decompression" version="0"/>') == \
        source.read_text().count('<attribute name="decompression" version="0" />')  # fmt: skip
    results = [layer for layer in read_ir(xml).layers if layer.type == "Result"]
    assert results and all(layer.extra == src.extra for layer, src in zip(
        results, [la for la in read_ir(source).layers if la.type == "Result"], strict=True))


def test_a_new_constant_is_stored_once_after_the_source_bytes(tmp_path):
    from irrun.edit.layers import constant

    source = ROOT / "models/demo.xml"
    doc = read_ir(source)
    const = next(layer for layer in doc.layers if layer.type == "Const")
    shape = tuple(int(d) for d in const.data["shape"].split(","))
    values = np.full(shape, 0.5, const.outputs[0].precision.dtype)
    new = constant(const.id, const.name, values, const.outputs[0].precision)
    new.outputs = const.outputs
    doc.layers[doc.layers.index(const)] = new
    xml, bin_ = write_ir(doc, tmp_path / "d.xml", Weights(source.with_suffix(".bin")))
    again = next(layer for layer in read_ir(xml).layers if layer.id == const.id)
    offset, size = int(again.data["offset"]), int(again.data["size"])
    assert size == values.nbytes
    assert np.array_equal(np.fromfile(bin_, np.uint8)[offset:offset + size].view(values.dtype),
                          values.reshape(-1))  # fmt: skip
    model = irrun.load(xml)
    assert model.run(model.random_inputs())  # it runs


def test_a_missing_bin_writes_nothing(tmp_path):
    source = ROOT / "models/demo.xml"
    target = tmp_path / "out.xml"
    with pytest.raises(IrrunError, match="does not exist"):
        write_ir(read_ir(source), target, Weights(tmp_path / "missing.bin"))
    assert list(tmp_path.iterdir()) == []


def test_a_failed_write_leaves_existing_files_as_they_were(tmp_path, monkeypatch):
    source = ROOT / "models/demo.xml"
    target = tmp_path / "out.xml"
    target.write_text("old xml")
    target.with_suffix(".bin").write_bytes(b"old bin")
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        # The .bin moves into place; the .xml cannot.
        calls.append(Path(dst).name)
        if str(dst).endswith(".xml"):
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(IrrunError, match="No space left on device"):
        write_ir(read_ir(source), target, Weights(source.with_suffix(".bin")))
    monkeypatch.setattr(os, "replace", real_replace)
    assert calls[:2] == ["out.bin", "out.xml"]
    assert target.read_text() == "old xml" and target.with_suffix(".bin").read_bytes() == b"old bin"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "out.xml"]


def test_an_unwritable_directory_is_one_clear_error(tmp_path):
    source = ROOT / "models/demo.xml"
    with pytest.raises(IrrunError, match=r"cannot write out\.xml"):
        write_ir(read_ir(source), tmp_path / "no" / "such" / "out.xml",
                 Weights(source.with_suffix(".bin")))  # fmt: skip


@pytest.mark.parametrize("name", ["pooling_chain", "demo"])
@pytest.mark.parametrize("output_names", [True, False])
def test_a_v10_model_keeps_the_names_openvino_gives_its_outputs(name, output_names, tmp_path, core):
    # OpenVINO also names a v10 model's outputs after the layers making them; v11 does not.
    text = (ROOT / f"models/{name}.xml").read_text().replace('version="11">', 'version="10">', 1)
    if not output_names:  # as files written before OpenVINO 2025
        text = re.sub(r' output_names="[^"]*"', "", text)
    source = tmp_path / "v10.xml"
    source.write_text(text)
    (tmp_path / "v10.bin").write_bytes((ROOT / f"models/{name}.bin").read_bytes())
    xml, _ = irrun.load(source).save(tmp_path / "v11.xml")
    assert 'version="11"' in xml.read_text()
    want = [o.get_names() for o in core.read_model(source).outputs]
    assert [o.get_names() for o in core.read_model(xml).outputs] == want
    assert any(len(names) > 1 for names in want)  # the layer's name is among them


def test_written_files_have_the_mode_open_gives(tmp_path):
    source = ROOT / "models/demo.xml"
    umask = os.umask(0)
    os.umask(umask)
    xml, bin_ = write_ir(read_ir(source), tmp_path / "m.xml", Weights(source.with_suffix(".bin")))
    assert [p.stat().st_mode & 0o777 for p in (xml, bin_)] == [0o666 & ~umask] * 2
