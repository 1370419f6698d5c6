"""irrun cleanup: dead layers and dropped outputs removed, equal constants merged, ids
renumbered, and OpenVINO computing from the result what it computed from the source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from support.cli import run_cli

import irrun
from irrun.edit.cleanup import clean, cleanup
from irrun.ir.writer import write_ir

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

TESTS = Path(__file__).resolve().parents[1]
CPU = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
       "INFERENCE_NUM_THREADS": 1}  # fmt: skip
X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
ROW = np.float32([[1, 2, 3]])


def _two_outputs(directory: Path) -> Path:
    """y = (x + ROW) * ROW, the two ROWs separate Consts; z = Relu(x - 5)."""
    x = ops.parameter([2, 3], np.float32, name="x")
    y = ops.multiply(ops.add(x, ops.constant(ROW, name="row1"), name="add"),
                     ops.constant(ROW, name="row2"), name="mul")  # fmt: skip
    five = ops.constant(np.full((1, 3), 5, np.float32), name="five")
    z = ops.relu(ops.subtract(x, five, name="sub"), name="relu")
    y.output(0).get_tensor().set_names({"y"})
    z.output(0).get_tensor().set_names({"z"})
    z_out = ops.result(z)
    z_out.set_friendly_name("z_out")
    path = directory / "two.xml"
    ov.save_model(ov.Model([ops.result(y), z_out], [x]), path, compress_to_fp16=False)
    return path


def _with_dead_branch(directory: Path) -> Path:
    """The two-output model with z's Result cut out of the file (its Relu, Subtract and
    Const left with nothing to reach), and the second ROW's bytes moved to an offset of
    their own (OpenVINO stores equal constants' bytes once)."""
    source = _two_outputs(directory)
    tree = etree.parse(str(source))
    layers = tree.getroot().find("layers")
    relu = layers.find("layer[@type='ReLU']").get("id")
    edge = tree.getroot().find(f"edges/edge[@from-layer='{relu}']")
    layers.remove(layers.find(f"layer[@id='{edge.get('to-layer')}']"))
    edge.getparent().remove(edge)
    cut = directory / "cut.xml"
    tree.write(str(cut))
    cut.with_suffix(".bin").write_bytes(source.with_suffix(".bin").read_bytes())
    model = irrun.load(cut)
    doc = model.document()
    next(layer for layer in doc.layers if layer.name == "row2").blob = ROW.tobytes()
    out = directory / "dead.xml"
    write_ir(doc, out, model.weights)
    return out


def _ov(path: Path, inputs) -> list[np.ndarray]:
    compiled = ov.Core().compile_model(path, "CPU", CPU)
    got = compiled(inputs)
    return [np.asarray(got[out]) for out in compiled.outputs]


def _layers(path: Path) -> tuple[list[tuple[str, str, dict]], list[tuple[int, int, int, int]]]:
    """(id, type, data) of each layer and (from, port, to, port) of each edge, as written."""
    root = etree.parse(str(path)).getroot()
    layers = [(e.get("id"), e.get("type"), dict(e.find("data").attrib) if e.find("data")
               is not None else {}) for e in root.iterfind("layers/layer")]  # fmt: skip
    edges = [tuple(int(e.get(k)) for k in ("from-layer", "from-port", "to-layer", "to-port"))
             for e in root.iterfind("edges/edge")]  # fmt: skip
    return layers, edges


def _assert_renumbered(path: Path) -> None:
    layers, edges = _layers(path)
    assert [lid for lid, _, _ in layers] == [str(i) for i in range(len(layers))]
    assert all(src < dst for src, _, dst, _ in edges), "not in topological order"


def test_dead_branch_and_duplicate_constant_go(tmp_path):
    path = _with_dead_branch(tmp_path)
    root = etree.parse(str(path)).getroot()
    offsets = [root.find(f"layers/layer[@name='{n}']/data").get("offset") for n in ("row1", "row2")]
    assert offsets[0] != offsets[1]  # bytes, not offsets, make constants equal
    doc, done = clean(irrun.load(path))
    assert sorted(r.type for r in done.dead) == ["Const", "ReLU", "Subtract"]
    assert len(done.merged) == 1 and done.merged_bytes == 12
    out = tmp_path / "clean.xml"
    write_ir(doc, out, irrun.load(path).weights)
    layers, edges = _layers(out)
    assert [t for _, t, _ in layers] == ["Parameter", "Const", "Add", "Multiply", "Result"]
    assert edges == [(0, 0, 2, 0), (1, 0, 2, 1), (2, 2, 3, 0), (1, 0, 3, 1), (3, 2, 4, 0)]
    assert out.with_suffix(".bin").stat().st_size == 12
    _assert_renumbered(out)
    (got,) = _ov(out, {"x": X})
    np.testing.assert_array_equal(got, (X + ROW) * ROW)
    np.testing.assert_array_equal(got, _ov(path, {"x": X})[0])
    np.testing.assert_array_equal(irrun.load(out).run({"x": X})["y"], got)


@pytest.mark.parametrize("drop", ["z", "z_out"])  # by tensor name, by Result name
def test_dropped_output_goes_with_what_only_it_needed(drop, tmp_path):
    path = _two_outputs(tmp_path)
    model = irrun.load(path)
    doc, done = clean(model, drop_outputs=[drop])
    assert done.dropped == [drop]
    assert sorted(r.type for r in done.dead) == ["Const", "ReLU", "Subtract"]
    out = tmp_path / "clean.xml"
    write_ir(doc, out, model.weights)
    assert [s.name for s in irrun.load(out).outputs] == ["y"]
    (got,) = _ov(out, {"x": X})
    np.testing.assert_array_equal(got, (X + ROW) * ROW)


@pytest.mark.parametrize("name", ["bert", "gpt2_int4_sym", "swin", "llama", "attention"])
def test_real_models_clean_up_and_compute_the_same(name, tmp_path):
    path = TESTS / "corpus" / f"{name}.xml"
    if path.exists():
        with np.load(path.with_suffix(".inputs.npz")) as f:
            inputs = dict(f)
    else:
        path = TESTS / "torch_models" / f"{name}.xml"
        inputs = {"x": np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)}
    model = irrun.load(path, fold_constants=False)
    out = tmp_path / "clean.xml"
    doc, done = clean(model)
    write_ir(doc, out, model.weights)
    _assert_renumbered(out)
    consts = [sum(t == "Const" for _, t, _ in _layers(p)[0]) for p in (path, out)]
    dead_consts = sum(r.type == "Const" for r in done.dead)
    assert consts[1] == consts[0] - len(done.merged) - dead_consts
    assert done.layers_after == len(doc.layers) < done.layers_before
    # The inputs and outputs keep their order (OpenVINO's, by layer id), and the values.
    before, after = ov.Core().read_model(path), ov.Core().read_model(out)
    assert [p.any_name for p in after.inputs] == [p.any_name for p in before.inputs]
    assert [r.names for r in after.outputs] == [r.names for r in before.outputs]
    for got, want in zip(_ov(out, inputs), _ov(path, inputs), strict=True):
        np.testing.assert_array_equal(got, want)


def test_cleanup_takes_a_document_and_leaves_it_as_it_was(tmp_path):
    model = irrun.load(_with_dead_branch(tmp_path))
    doc = model.document()
    ids = [layer.id for layer in doc.layers]
    cleaned = cleanup(doc, model.weights)
    assert [layer.id for layer in doc.layers] == ids and len(cleaned.layers) == 5


def test_cleanup_command(capsys, tmp_path):
    path = _with_dead_branch(tmp_path)
    out = tmp_path / "clean.xml"
    rc, printed, err = run_cli(capsys, "cleanup", str(path), "-o", str(out))
    assert rc == 0, err
    assert printed.splitlines() == [
        "layers: 9 -> 5",
        "removed 3 dead layers: layer 1 'five' (Const-v1), layer 2 'sub' (Subtract-v1), "
        "layer 3 'relu' (ReLU-v1)",
        "merged 1 duplicate constant into the constants they repeat (12 bytes)",
        "renumbered the layers 0..4 in topological order",
    ]
    assert err == f"irrun: wrote 5 layers to {out} and clean.bin\n"


@pytest.mark.parametrize("args, rc, message", [
    (["--drop-outputs", "w"], 2, "--drop-outputs: the model has no output w"),
    (["--drop-outputs", "y", "--drop-outputs", "z"], 1, "leaves the model without an output"),
    (["-o", "clean.onnx"], 2, "expected an .xml file name"),
])  # fmt: skip
def test_cleanup_command_errors(args, rc, message, capsys, tmp_path):
    path = _two_outputs(tmp_path)
    before = sorted(tmp_path.iterdir())
    if "-o" not in args:
        args = [*args, "-o", str(tmp_path / "clean.xml")]
    got, _, err = run_cli(capsys, "cleanup", str(path), *args)
    assert got == rc and message in err and len(err.splitlines()) == 1
    assert sorted(tmp_path.iterdir()) == before  # nothing written, nothing half-written


def test_a_constant_a_result_reads_is_not_merged(tmp_path):
    """y = ROW, an output of its own; z = x + ROW: two outputs never share a tensor."""
    x = ops.parameter([2, 3], np.float32, name="x")
    row = ops.constant(ROW, name="row1")
    row.output(0).get_tensor().set_names({"y"})
    z = ops.add(x, ops.constant(ROW, name="row2"), name="z")
    z.output(0).get_tensor().set_names({"z"})
    path = tmp_path / "row.xml"
    ov.save_model(ov.Model([ops.result(row), ops.result(z)], [x]), path, compress_to_fp16=False)
    model = irrun.load(path)
    doc, done = clean(model)
    assert done.merged == [] and done.dead == []
    out = tmp_path / "clean.xml"
    write_ir(doc, out, model.weights)
    y, z = _ov(out, {"x": X})
    np.testing.assert_array_equal(y, ROW)
    np.testing.assert_array_equal(z, X + ROW)
    assert [o.names for o in ov.Core().read_model(out).outputs] == [{"y"}, {"z"}]
