"""irrun fold: folded models run by OpenVINO give the original's outputs bit for bit,
have fewer layers, keep their compressed weights compressed, and respect the cap."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from support.cli import run_cli

import irrun
from irrun.edit.fold import fold, folded

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

TESTS = Path(__file__).resolve().parents[1]
TORCH_SHAPES = json.loads((TESTS / "torch_models" / "shapes.json").read_text())
# f32 hints, and no dynamic quantization of compressed weights' activations (the CPU
# plugin's default for int8/int4 weights), which would round the activations.
CPU = {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": "0",
       "INFERENCE_NUM_THREADS": 1}  # fmt: skip
COMPACT = {"f16", "i8", "u8", "i4", "u4"}


def _case(name: str) -> tuple[Path, dict[str, np.ndarray]]:
    """A model and inputs for it: the corpus's own, or seeded ones of shapes.json's shape."""
    corpus = TESTS / "corpus" / f"{name}.xml"
    if corpus.exists():
        with np.load(corpus.with_suffix(".inputs.npz")) as f:
            return corpus, dict(f)
    path = TESTS / "torch_models" / f"{name}.xml"
    x = np.random.default_rng(len(name)).standard_normal(TORCH_SHAPES[name]).astype(np.float32)
    return path, {ov.Core().read_model(path).inputs[0].any_name: x}


def _ov_outputs(path: Path, inputs: dict[str, np.ndarray], shapes=None) -> dict[str, np.ndarray]:
    """OpenVINO's outputs (reshaped first to ``shapes``), by each output's names and its
    position (``#0``...)."""
    model = ov.Core().read_model(path)
    if shapes:
        model.reshape(shapes)
    compiled = ov.Core().compile_model(model, "CPU", CPU)
    got = compiled(inputs)
    return {name: np.asarray(got[out]) for i, out in enumerate(compiled.outputs)
            for name in (*out.names, f"#{i}")}  # fmt: skip


def _consts(path: Path) -> list[tuple[str, str, int]]:
    """(element type, shape, size) of each Const in the file."""
    root = etree.parse(str(path)).getroot()
    return [(d.get("element_type"), d.get("shape"), int(d.get("size")))
            for d in root.iterfind("./layers/layer[@type='Const']/data")]  # fmt: skip


def _write(doc, model, path: Path) -> Path:
    from irrun.ir.writer import write_ir

    write_ir(doc, path, model.weights)
    return path


# Where float math folds, NumPy's float32 sin and cos (SIMD, within an ulp or so) and
# the C library's OpenVINO folds with round some values the other way: llama's rotary
# table, once the sequence length is static.  Elsewhere the folded values are integers
# (shapes) or copies (Reshape, Convert, Concat of constants): the same bits.
FLOAT_MATH = {("llama", True)}
FOLDED = [
    "bert",
    "bert_int8_asym",
    "gpt2_int4_sym",
    "llama",
    "swin",
    "t5",
    "cnn_int8_maxpool",
    "resnet_stem",
    "attention",
    "channel_shuffle",
    "segmentation",
]


@pytest.mark.parametrize("static", [False, True], ids=["as-is", "static"])
@pytest.mark.parametrize("name", FOLDED)
def test_folded_model_gives_the_originals_outputs(name, static, tmp_path):
    path, inputs = _case(name)
    shapes = {k: list(v.shape) for k, v in inputs.items()} if static else None
    model = irrun.load(path, fold_constants=False)
    doc, done = folded(model, shapes=shapes)
    out = _write(doc, model, tmp_path / "folded.xml")
    want = _ov_outputs(path, inputs, shapes)
    # The same bits: the folded values are the bits the layers computed (integer shape
    # arithmetic; the float ones are copies, reshapes and converts), and OpenVINO runs the
    # rest of the graph as it ran it.
    got = _ov_outputs(out, inputs)
    assert got.keys() == want.keys()
    for key in want:
        if (name, static) in FLOAT_MATH:
            scale = float(np.max(np.abs(want[key])))
            np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6 * scale)
        else:
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    # irrun reads and runs the file: its values as its own on the original are to
    # OpenVINO's (the corpus's tolerances for compressed weights, whose products the CPU
    # plugin sums in another order).
    mine = irrun.load(out).run(inputs)
    for i, spec in enumerate(irrun.load(out).outputs):
        w = want[f"#{i}"]
        scale = float(np.max(np.abs(w))) or 1.0
        np.testing.assert_allclose(mine[spec.name], w, rtol=1e-4, atol=2e-3 * scale,
                                   err_msg=spec.name)  # fmt: skip
    assert done.layers_after == len(doc.layers)
    if static and "ShapeOf" in {layer.type for layer in model.document().layers}:
        assert done.layers_after < done.layers_before and done.shape_ofs > 0
        assert "ShapeOf" not in {layer.type for layer in doc.layers}
        assert all(isinstance(d, int) for spec in irrun.load(out).outputs for d in spec.shape)
    else:
        assert done.layers_after <= done.layers_before


@pytest.mark.parametrize("name", ["bert_int8_asym", "gpt2_int4_sym", "bert_int4_asym"])
def test_compressed_weights_stay_compressed(name, tmp_path):
    path, inputs = _case(name)
    model = irrun.load(path, fold_constants=False)
    doc, done = folded(model, shapes={k: list(v.shape) for k, v in inputs.items()})
    out = _write(doc, model, tmp_path / "folded.xml")
    before, after = _consts(path), _consts(out)
    weights = {c for c in before if c[0] in COMPACT and c[2] >= 256}
    assert weights and weights <= set(after), "a compressed weight was decompressed"
    # No weight came back as f32: the f32 constants grew by the few shapes folded.
    f32 = [sum(c[2] for c in consts if c[0] == "f32") for consts in (before, after)]
    assert f32[1] <= f32[0] + 1024
    assert done.compressed >= len(weights)
    assert out.with_suffix(".bin").stat().st_size <= path.with_suffix(".bin").stat().st_size + 1024


def _broadcast_model(directory: Path) -> Path:
    """y = x + Broadcast(2, [512, 512]) + (Const(3) * Const(4)): a constant of 1 MiB, and
    one a Multiply of two makes."""
    x = ops.parameter([512, 512], np.float32, name="x")
    big = ops.broadcast(ops.constant(np.float32([[2.0]])), ops.constant(np.int64([512, 512])))
    small = ops.multiply(ops.constant(np.float32([3.0])), ops.constant(np.float32([4.0])))
    y = ops.add(ops.add(x, big), small)
    y.output(0).get_tensor().set_names({"y"})
    path = directory / "broadcast.xml"
    ov.save_model(ov.Model([ops.result(y)], [x]), path, compress_to_fp16=False)
    return path


@pytest.mark.parametrize("cap, kept", [("512K", True), ("1M", False), (None, False)])
def test_a_value_above_the_cap_stays_computed(cap, kept, tmp_path):
    path = _broadcast_model(tmp_path)
    model = irrun.load(path, fold_constants=False)
    doc, done = folded(model, cap=cap)
    types = [layer.type for layer in doc.layers]
    assert ("Broadcast" in types) is kept and "Multiply" not in types
    assert len(done.over_cap) == kept
    out = _write(doc, model, tmp_path / "folded.xml")
    x = np.random.default_rng(0).standard_normal((512, 512)).astype(np.float32)
    want = _ov_outputs(path, {"x": x})["y"]
    np.testing.assert_array_equal(_ov_outputs(out, {"x": x})["y"], want)
    np.testing.assert_allclose(want, x + 14, rtol=1e-6)
    assert out.with_suffix(".bin").stat().st_size == (
        4 + 16 + 4 if kept else 512 * 512 * 4 + 4)  # fmt: skip


def test_fold_leaves_the_model_as_it_was():
    path, inputs = _case("bert")
    model = irrun.load(path)
    shapes = [spec.partial_shape for spec in model.inputs]
    doc = fold(model, shapes={k: list(v.shape) for k, v in inputs.items()})
    assert [spec.partial_shape for spec in model.inputs] == shapes
    assert len(doc.layers) < len(model.document().layers)


def test_fold_command(capsys, tmp_path):
    path, inputs = _case("gpt2_int4_sym")
    out = tmp_path / "folded.xml"
    rc, printed, err = run_cli(capsys, "fold", str(path), "--shape",
                               "input_ids[2,8],attention_mask[2,8]", "-o", str(out))  # fmt: skip
    assert rc == 0, err
    lines = printed.splitlines()
    assert lines[0] == "layers: 211 -> 148; constants' bytes: 20.9 KiB -> 21.1 KiB"
    assert lines[1] == "folded 49 layers, 3 ShapeOfs among them into 8 constants (240 bytes)"
    assert (
        lines[2]
        == "kept 12 constants compressed (weights, zero points, scales: their decompression Converts stay)"
    )
    assert err == f"irrun: wrote 148 layers to {out} and folded.bin\n"
    want = _ov_outputs(path, inputs, {k: list(v.shape) for k, v in inputs.items()})
    np.testing.assert_array_equal(_ov_outputs(out, inputs)["logits"], want["logits"])


@pytest.mark.parametrize("args, rc, message", [
    (["--cap", "3X"], 2, "argument --cap: '3X' is not a size"),
    (["--shape", "nope[1,2]"], 2, "nope"),
    (["--shape", "x[1,2]"], 1, "reshape to x[1,2]"),
])  # fmt: skip
def test_fold_command_errors(args, rc, message, capsys, tmp_path):
    out = tmp_path / "folded.xml"
    got, _, err = run_cli(capsys, "fold", str(TESTS / "torch_models" / "resnet_stem.xml"),
                          *args, "-o", str(out))  # fmt: skip
    assert got == rc and message in err and len(err.splitlines()) <= 2
    assert not list(tmp_path.iterdir())  # nothing half-written


def _two_steps(path: Path) -> list[np.ndarray]:
    """The logits of a prompt and of one more token, the KV cache kept in the state."""
    request = ov.Core().compile_model(path, "CPU", CPU).create_infer_request()
    logits = []
    for ids, past in (([3, 17, 42, 99], 0), ([5], 4)):
        n = past + len(ids)
        request.infer({"input_ids": np.array([ids]), "attention_mask": np.ones((1, n), np.int64),
                       "position_ids": np.arange(past, n)[None], "beam_idx": np.zeros(1, np.int32)})  # fmt: skip
        logits.append(request.get_output_tensor(0).data.copy())
    return logits


def test_stateful_int4_model_folds_and_keeps_its_state(tmp_path):
    path = TESTS / "stateful" / "llama_int4" / "openvino_model.xml"
    model = irrun.load(path, fold_constants=False)
    doc, done = folded(model)
    out = _write(doc, model, tmp_path / "folded.xml")
    assert done.layers_after < done.layers_before and done.compressed > 0
    assert {layer.type for layer in doc.layers} >= {"ReadValue", "Assign"}
    for got, want in zip(_two_steps(out), _two_steps(path), strict=True):
        np.testing.assert_array_equal(got, want)


DOCS = TESTS.parent / "docs" / "cli.md"


@pytest.mark.parametrize("command", [
    "irrun cleanup tests/corpus/bert.xml -o clean.xml",
    'irrun fold tests/corpus/gpt2_int4_sym.xml --shape "input_ids[1,8],attention_mask[1,8]" '
    "-o folded.xml",
    'irrun reshape tests/torch_models/resnet_stem.xml --shape "x[1,3,224,224]" -o static.xml',
])  # fmt: skip
def test_docs_show_what_the_commands_print(command, capsys, monkeypatch, tmp_path):
    """docs/cli.md's examples of cleanup, fold and reshape, run where they write to a
    scratch directory (as tests/cli/test_docs.py runs the others)."""
    shown = re.search(r"\$ " + re.escape(command) + r"\n(.*?)\n```", DOCS.read_text(), re.S)
    assert shown, f"docs/cli.md shows no output for {command!r}"
    (tmp_path / "tests").symlink_to(TESTS)
    monkeypatch.chdir(tmp_path)
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)[1:]]
    rc, printed, _ = run_cli(capsys, *args)
    assert rc == 0 and printed.rstrip("\n") == shown.group(1)
    written = re.search(r"-o (\S+)\.xml", command).group(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["tests", f"{written}.xml", f"{written}.bin"])  # fmt: skip


SWEEP = sorted({*TESTS.glob("**/*.xml"), *(TESTS.parent / "models").glob("*.xml")})


@pytest.mark.parametrize("path", SWEEP, ids=[str(p.relative_to(TESTS.parent)) for p in SWEEP])
def test_every_model_folds_and_cleans_up(path, tmp_path):
    """Each model of tests/ and models/ that irrun loads, folded and cleaned up: OpenVINO
    reads both files, and for inputs it can be fed at random (static float ones) computes
    the source's outputs from them bit for bit."""
    from irrun.edit.cleanup import clean

    try:
        model = irrun.load(path, fold_constants=False)
    except irrun.IrrunError:
        pytest.skip("irrun does not load it (a test of an invalid file)")
    fed = all(s.dtype.kind == "f" and all(isinstance(d, int) for d in s.shape)
              for s in model.inputs)  # fmt: skip
    feeds = model.random_inputs(0) if fed else None
    want = _ov_outputs(path, feeds) if fed else None
    for edit in (lambda: folded(model)[0], lambda: clean(model)[0]):
        out = _write(edit(), model, tmp_path / "edited.xml")
        ov.Core().read_model(out)
        if fed:
            got = _ov_outputs(out, feeds)
            for i in range(len(model.outputs)):
                np.testing.assert_array_equal(got[f"#{i}"], want[f"#{i}"])


def test_f16_weights_stay_f16(tmp_path):
    """A model saved with OpenVINO's compress_to_fp16 (each weight f16, a Convert to f32
    marked ``decompression``): folded with static shapes, no weight comes back as f32."""
    path, inputs = _case("resnet_stem")
    source = tmp_path / "f16.xml"
    ov.save_model(ov.Core().read_model(path), source, compress_to_fp16=True)
    model = irrun.load(source, fold_constants=False)
    doc, done = folded(model, shapes={k: list(v.shape) for k, v in inputs.items()})
    out = _write(doc, model, tmp_path / "folded.xml")
    before, after = _consts(source), _consts(out)
    assert sorted(c for c in before if c[0] == "f16") == sorted(c for c in after if c[0] == "f16")
    assert sum(c[2] for c in after if c[0] == "f32") <= sum(c[2] for c in before if c[0] == "f32")
    assert done.compressed == sum(c[0] == "f16" for c in before) > 0
    for key, want in _ov_outputs(
        source, inputs, {k: list(v.shape) for k, v in inputs.items()}
    ).items():
        np.testing.assert_array_equal(_ov_outputs(out, inputs)[key], want)


def test_folded_constants_keep_the_names_of_what_they_replace():
    path, inputs = _case("gpt2_int4_sym")
    model = irrun.load(path, fold_constants=False)
    doc = fold(model, shapes={k: list(v.shape) for k, v in inputs.items()})
    source = {layer.name: layer for layer in model.document().layers}
    made = [layer for layer in doc.layers if layer.blob is not None]
    assert made
    named = 0
    for layer in made:
        if layer.name in source:
            was = source[layer.name]
            port = was.outputs[0]
        else:  # output N of several: "name.N"
            name, _, index = layer.name.rpartition(".")
            was = source[name]
            port = was.outputs[int(index)]
        assert was.type != "Const"  # a layer computed, now a Const of its value
        assert set(port.names) <= set(layer.outputs[0].names)
        named += bool(layer.outputs[0].names)
    assert named  # some of them had names to keep
