"""``irrun convert-precision`` and :mod:`irrun.edit.precision`, against OpenVINO.

The oracle is OpenVINO's own ``save_model(model, path, compress_to_fp16=True)`` on the
same f32 model: the same constants converted (by name), the same f16 bytes, and the
CPU plugin computing the same outputs from irrun's file as from OpenVINO's.
"""

from __future__ import annotations

import filecmp
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from irrun.cli import main
from irrun.edit.precision import convert_document, keep_reason, to_f16
from irrun.ir.reader import read_ir
from irrun.ir.weights import Weights
from irrun.ir.writer import write_ir

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

TESTS = Path(__file__).resolve().parents[1]
TORCH = sorted((TESTS / "torch_models").glob("*.xml"))
CORPUS = [TESTS / "corpus" / f"{n}.xml" for n in
          ("bert", "gpt2", "llama", "t5", "swin", "whisper_encoder", "lppool")]  # fmt: skip
QUANTIZED = [TESTS / "corpus" / f"{n}.xml" for n in ("bert_int8_asym", "cnn_int8_avgpool",
                                                      "gpt2_int4_sym")]  # fmt: skip
SUBGRAPHS = [TESTS / "sequence_models" / "keras_rnn.xml",
             TESTS / "subgraph_models" / "torchvision_patterns.xml"]  # fmt: skip
# Every model of tests/ that OpenVINO compresses (the quantized ones it leaves as they are).
EVERY = sorted({*TORCH, *SUBGRAPHS, *(TESTS / "sequence_models").glob("*.xml"),
                *(TESTS / "detection_models").glob("*.xml"),
                *(p for p in (TESTS / "stateful").glob("*/openvino_model.xml") if "int" not in str(p)),
                *(TESTS / "stateless").glob("*/openvino_model.xml"),
                *(p for p in (TESTS / "corpus").glob("*.xml") if p not in QUANTIZED
                  and "int" not in p.stem)})  # fmt: skip
CPU = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}


def _convert(xml: Path, out: Path, to: str) -> tuple[Path, object]:
    conversion = convert_document(read_ir(xml), Weights(xml.with_suffix(".bin")), to)
    write_ir(conversion.document, out, Weights(xml.with_suffix(".bin")))
    return out, conversion


def _f16_constants(model, acc=None) -> dict[str, bytes]:
    """Name -> bytes of every f16 Constant, bodies included."""
    acc = {} if acc is None else acc
    for op in model.get_ordered_ops():
        if op.get_type_name() == "Constant" and op.get_element_type() == ov.Type.f16:
            acc[op.get_friendly_name()] = op.get_data().tobytes()
        if hasattr(op, "get_internal_subgraphs_size"):
            for i in range(op.get_internal_subgraphs_size()):
                _f16_constants(op.get_function(i), acc)
    return acc


def _marked(path: Path) -> list[str]:
    """The layers marked to stay in f32 (DisablePrecisionConversion), by name."""
    # With its version and value: OpenVINO ignores the attribute without them.
    mark = (
        "rt_info/attribute[@name='DisablePrecisionConversion'][@version='0'][@value='dynamic:f16']"
    )
    return sorted(el.get("name") for el in etree.parse(str(path)).iter("layer")
                  if el.find(mark) is not None)  # fmt: skip


def _decompressions(path: Path) -> int:
    return len(re.findall(r'<attribute name="decompression" version="0" ?/>', path.read_text()))


def _inputs(xml: Path) -> dict:
    """The model's bundled inputs (corpus), else one input of the shape it was made for."""
    bundled = xml.with_name(f"{xml.stem}.inputs.npz")
    if bundled.exists():
        with np.load(bundled) as data:
            return {k: data[k] for k in data.files}
    shapes = json.loads((TESTS / "torch_models" / "shapes.json").read_text())
    shape = {**shapes, "keras_rnn": [2, 7, 4]}[xml.stem]
    return {0: np.random.default_rng(0).standard_normal(shape).astype(np.float32)}


def _run(core, path: Path, inputs) -> list[np.ndarray]:
    model = core.read_model(path)
    compiled = core.compile_model(model, "CPU", CPU)
    result = compiled(inputs)
    # Copies: the results are views on the request's memory, gone with the compiled model.
    return [np.array(result[k], copy=True) for k in range(len(model.outputs))]


@pytest.mark.parametrize(
    "xml", EVERY, ids=lambda p: p.parent.name if p.stem == "openvino_model" else p.stem
)
def test_f16_converts_what_openvino_converts_to_the_same_bytes(xml, tmp_path, core):
    ours, conversion = _convert(xml, tmp_path / "irrun.xml", "f16")
    ov.save_model(core.read_model(xml), tmp_path / "ov.xml", compress_to_fp16=True)
    before = _f16_constants(core.read_model(xml))
    mine = {k: v for k, v in _f16_constants(core.read_model(ours)).items() if k not in before}
    theirs = {k: v for k, v in _f16_constants(core.read_model(tmp_path / "ov.xml")).items()
              if k not in before}  # fmt: skip
    assert sorted(mine) == sorted(theirs)
    assert all(mine[k] == theirs[k] for k in mine)
    assert _decompressions(ours) == _decompressions(tmp_path / "ov.xml")
    assert _marked(ours) == _marked(tmp_path / "ov.xml")
    assert len(conversion.converted) == _decompressions(ours) - _decompressions(xml)


@pytest.mark.parametrize("xml", TORCH + CORPUS + SUBGRAPHS[:1], ids=lambda p: p.stem)
def test_openvino_computes_the_same_from_irrun_s_f16_file_as_from_its_own(xml, tmp_path, core):
    ours, _ = _convert(xml, tmp_path / "irrun.xml", "f16")
    ov.save_model(core.read_model(xml), tmp_path / "ov.xml", compress_to_fp16=True)
    inputs = _inputs(xml)
    for a, b in zip(_run(core, ours, inputs), _run(core, tmp_path / "ov.xml", inputs), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("xml", TORCH[:6] + CORPUS[:2], ids=lambda p: p.stem)
def test_f32_undoes_openvino_s_compression_exactly(xml, tmp_path, core):
    ov.save_model(core.read_model(xml), tmp_path / "ov.xml", compress_to_fp16=True)
    compressed = core.read_model(tmp_path / "ov.xml")
    halves = {k[: -len("_compressed")]: np.frombuffer(v, np.float16)
              for k, v in _f16_constants(compressed).items() if k.endswith("_compressed")}  # fmt: skip
    back, conversion = _convert(tmp_path / "ov.xml", tmp_path / "back.xml", "f32")
    assert sorted(conversion.converted) == sorted(halves)
    assert _decompressions(back) == 0
    restored = {op.get_friendly_name(): op.get_data() for op in core.read_model(back).get_ordered_ops()
                if op.get_type_name() == "Constant" and op.get_friendly_name() in halves}  # fmt: skip
    assert sorted(restored) == sorted(halves)
    for name, half in halves.items():
        assert restored[name].dtype == np.float32
        np.testing.assert_array_equal(restored[name].reshape(-1), half.astype(np.float32))
    # The same weights, but the CPU plugin may pick other kernels for f16 weights (convnext's
    # depthwise convolution): equal up to f32 rounding, not bit for bit.
    inputs = _inputs(xml)
    for a, b in zip(_run(core, back, inputs), _run(core, tmp_path / "ov.xml", inputs), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("xml", QUANTIZED, ids=lambda p: p.stem)
def test_a_quantized_model_is_written_unchanged_as_openvino_leaves_it(xml, tmp_path, core):
    out, conversion = _convert(xml, tmp_path / "out.xml", "f16")
    assert conversion.skipped and not conversion.converted
    ov.save_model(core.read_model(xml), tmp_path / "ov.xml", compress_to_fp16=True)
    assert _decompressions(tmp_path / "ov.xml") == _decompressions(xml)
    assert filecmp.cmp(out.with_suffix(".bin"), xml.with_suffix(".bin"), shallow=False)


def _openvino_keeps(values: np.ndarray, tmp_path: Path) -> bool:
    x = ops.parameter([-1] * max(values.ndim, 1), np.float32, name="x")
    c = ops.constant(values)
    c.set_friendly_name("C")
    ov.save_model(ov.Model([ops.add(x, c)], [x]), tmp_path / "c.xml", compress_to_fp16=True)
    return "C_compressed" not in (tmp_path / "c.xml").read_text()


@pytest.mark.parametrize("values", [
    [0.1], [0.5], [1.0001], [1000.1], [5.66], [5.661], [4098.0], [4100.0], [1e-6], [-0.0],
    [np.inf], [np.nan], [65519.0], [0.1, 0.2], [1e-6, 1e-6], [3e-5, 3e-5], [1.4e-5, 1.4e-5],
    [4098.0, 0.5, 0.5, 0.5], [1e-8, 1e-8, 1e-8, 1.0], [1e-8, 1e-8, 1.0, 1.0],
    [1e-6, 1e-6, 1e-6, 1.0], [0.1, 0.1, 0.1, 1.0], [7e4, 7e4, 7e4, 1.0], [np.inf, 0.5],
], ids=str)  # fmt: skip
def test_which_constants_stay_f32_as_openvino_decides(values, tmp_path):
    a = np.asarray(values, np.float32)
    assert (keep_reason(a) is not None) == _openvino_keeps(a, tmp_path)


def test_f16_values_are_rounded_and_clamped_as_openvino_writes_them(tmp_path, core):
    a = np.float32([np.nan, np.inf, -np.inf, 7e4, -65519.0, 1e-8, 3e-8, 0.1, -0.0, 2049.0,
                    0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])  # fmt: skip
    x = ops.parameter([-1], np.float32, name="x")
    c = ops.constant(a)
    c.set_friendly_name("C")
    ov.save_model(ov.Model([ops.add(x, c)], [x]), tmp_path / "c.xml", compress_to_fp16=True)
    written = _f16_constants(core.read_model(tmp_path / "c.xml"))["C_compressed"]
    assert to_f16(a).tobytes() == written
    assert to_f16(a)[:3].view(np.uint16).tolist() == [0x7BFF, 0x7BFF, 0xFBFF]


def test_shape_path_constants_stay_f32_and_are_marked(tmp_path):
    x = ops.parameter([2, 3, 4], np.float32, name="x")
    scale = ops.constant(np.float32([0.5, 2.0]))  # f32 arithmetic on a Reshape's pattern
    pattern = ops.convert(ops.multiply(ops.convert(ops.constant(np.int64([12, 2])), "f32"),
                                       scale), "i64")  # fmt: skip
    weight = ops.constant(np.full((4,), 0.25, np.float32))
    y = ops.multiply(ops.reshape(x, pattern, False), weight)
    ov.save_model(ov.Model([y], [x]), tmp_path / "m.xml", compress_to_fp16=False)
    out, conversion = _convert(tmp_path / "m.xml", tmp_path / "out.xml", "f16")
    assert len(conversion.converted) == 1
    assert [why for _, why in conversion.kept] == ["shape path"]
    text = out.read_text()
    assert text.count('name="DisablePrecisionConversion" version="0" value="dynamic:f16"') == 2


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_cli_converts_and_says_what_it_kept(tmp_path, capsys):
    xml = TESTS / "corpus" / "t5.xml"
    rc, out, err = _cli(["convert-precision", str(xml), "--to", "f16", "-o",
                         str(tmp_path / "t5.xml"), "-v"], capsys)  # fmt: skip
    assert rc == 0
    assert "converted 75 constants to f16, kept 16 as they were (-v lists them)" not in err
    assert "converted 75 constants to f16, kept 16 as they were" in err
    assert "kept Constant_4: f16 would change its value" in out
    assert (tmp_path / "t5.bin").exists()
    rc, _, err = _cli(["convert-precision", str(tmp_path / "t5.xml"), "--to", "f32", "-o",
                       str(tmp_path / "back.xml")], capsys)  # fmt: skip
    assert rc == 0 and "converted 75 constants to f32" in err


@pytest.mark.parametrize(("name", "to", "note"), [
    ("bert_int8_asym", "f16", "nothing converted: its weights are already compressed"),
    ("cnn_int8_avgpool", "f16", "nothing converted: it is quantized (a FakeQuantize"),
    ("bert", "f32", "nothing converted: the model has no f16 constants decompressed to f32 or f64"),
])  # fmt: skip
def test_cli_with_nothing_to_convert_writes_the_model_and_says_why(name, to, note, tmp_path,
                                                                    capsys):  # fmt: skip
    xml = TESTS / "corpus" / f"{name}.xml"
    rc, _, err = _cli(["convert-precision", str(xml), "--to", to, "-o", str(tmp_path / "o.xml")],
                      capsys)  # fmt: skip
    assert rc == 0 and note in err
    assert filecmp.cmp(tmp_path / "o.bin", xml.with_suffix(".bin"), shallow=False)


@pytest.mark.parametrize(("args", "rc", "message"), [
    (["--to", "f16"], 2, "the following arguments are required: -o/--output"),
    (["-o", "OUT/x.xml"], 2, "the following arguments are required: --to"),
    (["--to", "bf16", "-o", "OUT/x.xml"], 2, "invalid choice: 'bf16'"),
    (["--to", "f16", "-o", "OUT/x.bin"], 2, "expected an .xml file name"),
    (["--to", "f16", "-o", "OUT/none/x.xml"], 1, "the output's directory does not exist"),
    (["--to", "f16", "-o", "MODEL"], 2, "is the model itself"),
])  # fmt: skip
def test_cli_misuse(args, rc, message, tmp_path, capsys):
    xml = TESTS / "torch_models" / "classifier.xml"
    args = [a.replace("OUT", str(tmp_path)).replace("MODEL", str(xml)) for a in args]
    try:
        code = main(["convert-precision", str(xml), *args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == rc
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_the_examples_of_docs_cli_md_print_what_they_show(capsys, monkeypatch, tmp_path):
    from tests.support.docs import assert_same_output, shown_output

    # Where the examples' relative paths name the repository's files and a scratch output.
    for entry in TESTS.parent.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    for command in ("irrun convert-precision tests/torch_models/unet.xml --to f16 -o unet_f16.xml -v",
                    "irrun convert-precision unet_f16.xml --to f32 -o unet_f32.xml"):  # fmt: skip
        assert main(command.split()[1:]) == 0
        captured = capsys.readouterr()
        assert_same_output(captured.out + captured.err.rstrip("\n"), shown_output(command))
    source = TESTS / "torch_models" / "unet.bin"
    assert (tmp_path / "unet_f32.bin").stat().st_size == source.stat().st_size


def _openvino_f16(values: np.ndarray, path: Path) -> bytes | None:
    """The f16 bytes OpenVINO writes for a constant of ``values``; None if kept."""
    x = ops.parameter([-1], values.dtype, name="x")
    c = ops.constant(values)
    c.set_friendly_name("C")
    ov.save_model(ov.Model([ops.add(x, c)], [x]), path, compress_to_fp16=True)
    return _f16_constants(ov.Core().read_model(path)).get("C_compressed")


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.floats(width=32), st.floats(-2.0, 2.0, width=32), st.floats(),
                          st.sampled_from([0.1, 1e-6, 1e-8, 3e-8, 1e-300, 4098.0, 7e4, 0.5])),
                min_size=1, max_size=20), st.sampled_from([np.float32, np.float64]))  # fmt: skip
def test_constants_convert_as_openvino_converts_them(values, dtype):
    with np.errstate(over="ignore"):  # f64 values beyond f32's range: f32 infinities
        a = np.array(values, dtype)
    with tempfile.TemporaryDirectory() as d:
        written = _openvino_f16(a, Path(d, "c.xml"))
    assert (keep_reason(a) is not None) == (written is None)
    if written is not None:
        assert to_f16(a).tobytes() == written


def _with_decompression(xml: Path) -> None:
    """Mark the Converts of ``xml`` decompression, as OpenVINO writes the attribute (its
    Python API cannot set it)."""
    text = re.sub(r'(type="Convert" version="opset1">\s*<data destination_type="f32" />)',
                  r'\1<rt_info><attribute name="decompression" version="0" /></rt_info>',
                  xml.read_text())  # fmt: skip
    xml.write_text(text)


def test_shared_constants_convert_once_and_keep_their_other_readers(tmp_path, core):
    x = ops.parameter([3], np.float32, name="x")
    w = ops.constant(np.float32([0.25, -1.5, 3.0]))
    w.set_friendly_name("W")
    h = ops.constant(np.float16([0.5, 1.5, -2.0]))
    h.set_friendly_name("H")
    h.output(0).get_tensor().set_names({"h_names"})
    decompressed = ops.convert(h, "f32")
    y = ops.add(ops.multiply(ops.add(x, w), w), decompressed)
    model = ov.Model([ops.result(y), ops.result(h)], [x])
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    _with_decompression(tmp_path / "m.xml")
    half, c16 = _convert(tmp_path / "m.xml", tmp_path / "half.xml", "f16")
    ov.save_model(core.read_model(tmp_path / "m.xml"), tmp_path / "ov.xml", compress_to_fp16=True)
    assert c16.converted == ["W"]
    assert _f16_constants(core.read_model(half)) == _f16_constants(
        core.read_model(tmp_path / "ov.xml")
    )
    assert _decompressions(half) == _decompressions(tmp_path / "ov.xml") == 2
    full, c32 = _convert(half, tmp_path / "full.xml", "f32")
    assert sorted(c32.converted) == sorted(["W", decompressed.get_friendly_name()])
    back = core.read_model(full)
    assert {op.get_friendly_name(): op.get_element_type().get_type_name()
            for op in back.get_ordered_ops() if op.get_type_name() == "Constant"} == \
        {"W": "f32", "H": "f16", decompressed.get_friendly_name(): "f32"}  # fmt: skip
    assert back.outputs[1].get_names() == {"h_names"}
    inputs = {0: np.float32([1.0, 2.0, -3.0])}
    for a, b in zip(_run(core, full, inputs), _run(core, tmp_path / "m.xml", inputs), strict=True):
        np.testing.assert_array_equal(a, b)


def test_f64_constants_go_to_f16_and_back_to_f64(tmp_path, core):
    x = ops.parameter([4], np.float64, name="x")
    w = ops.constant(np.float64([0.1, -2.5, 1e-300, 3.0]))
    w.set_friendly_name("W")
    ov.save_model(ov.Model([ops.multiply(x, w)], [x]), tmp_path / "m.xml", compress_to_fp16=False)
    half, c16 = _convert(tmp_path / "m.xml", tmp_path / "half.xml", "f16")
    ov.save_model(core.read_model(tmp_path / "m.xml"), tmp_path / "ov.xml", compress_to_fp16=True)
    assert c16.converted == ["W"]
    assert _f16_constants(core.read_model(half)) == _f16_constants(
        core.read_model(tmp_path / "ov.xml")
    )
    assert 'destination_type="f64"' in half.read_text()
    full, c32 = _convert(half, tmp_path / "full.xml", "f32")
    assert c32.converted == ["W"]
    (w_back,) = [
        op for op in core.read_model(full).get_ordered_ops() if op.get_friendly_name() == "W"
    ]
    np.testing.assert_array_equal(
        w_back.get_data(), np.float16([0.1, -2.5, 0.0, 3.0]).astype(np.float64)
    )
    inputs = {0: np.float64([1.0, 2.0, 3.0, 4.0])}
    for a, b in zip(_run(core, half, inputs), _run(core, tmp_path / "ov.xml", inputs), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(("weights", "message"), [
    (None, "cannot read constant 'self.down.weight': unet.bin does not exist"),
    (500, "cannot read constant 'self.down.weight': bytes 0..864 are not in unet.bin"),
])  # fmt: skip
def test_cli_refuses_weights_it_cannot_read_and_writes_nothing(weights, message, tmp_path, capsys):
    src = TESTS / "torch_models" / "unet.xml"
    (tmp_path / "unet.xml").write_bytes(src.read_bytes())
    if weights is not None:
        (tmp_path / "unet.bin").write_bytes(src.with_suffix(".bin").read_bytes()[:weights])
    out = tmp_path / "out" / "o.xml"
    out.parent.mkdir()
    code = main(["convert-precision", str(tmp_path / "unet.xml"), "--to", "f16", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert err == f"irrun: error: {tmp_path / 'unet.xml'}:15: {message}\n"
    assert not list(out.parent.iterdir())


@pytest.mark.parametrize(("attribute", "kept"), [
    ('<attribute name="DisablePrecisionConversion" version="0" value="dynamic:f16" />', True),
    ('<attribute name="precise" version="0" />', True),
    ('<attribute name="DisablePrecisionConversion" version="0" value="dynamic:bf16" />', False),
    ('<attribute name="disable_fp16_compression" version="0" />', False),
])  # fmt: skip
def test_a_constant_the_file_marks_stays_as_openvino_keeps_it(attribute, kept, tmp_path, core):
    src = TESTS / "torch_models" / "classifier.xml"
    data = '<data element_type="f32" shape="5, 32" offset="56" size="640" />'
    assert data in src.read_text()
    (tmp_path / "m.xml").write_text(
        src.read_text().replace(data, f"{data}<rt_info>{attribute}</rt_info>")
    )
    (tmp_path / "m.bin").write_bytes(src.with_suffix(".bin").read_bytes())
    ours, conversion = _convert(tmp_path / "m.xml", tmp_path / "ours.xml", "f16")
    ov.save_model(core.read_model(tmp_path / "m.xml"), tmp_path / "ov.xml", compress_to_fp16=True)
    assert ("self.fc.weight" not in conversion.converted) == kept
    assert _f16_constants(core.read_model(ours)) == _f16_constants(
        core.read_model(tmp_path / "ov.xml")
    )


def _weights_chain(kind: str):
    """A decompression chain of u8 weights, or a FakeQuantize, of the ``kind`` named."""
    w = ops.convert(ops.constant(np.uint8([1, 2, 3, 4])), "f32")
    if "zero point" in kind:
        w = ops.subtract(w, ops.convert(ops.constant(np.uint8([1])), "f32"))
    scale = ops.constant(np.float32([0.5, 0.5, 0.5, 0.5]))
    if "compressed scale" in kind:
        scale = ops.convert(ops.constant(np.float16([0.5, 0.5, 0.5, 0.5])), "f32")
    if kind == "fake quantize":
        lo, hi = ops.constant(np.float32(0)), ops.constant(np.float32(4))
        return ops.fake_quantize(ops.convert(w, "f32"), lo, hi, lo, hi, 16)
    return ops.multiply(scale, w) if "scale first" in kind else ops.multiply(w, scale)


@pytest.mark.parametrize("kind", ["scale", "scale first", "zero point", "zero point, scale first",
                                  "compressed scale", "fake quantize"])  # fmt: skip
def test_a_model_is_left_as_it_is_when_openvino_sees_it_quantized(kind, tmp_path, core):
    x = ops.parameter([4], np.float32, name="x")
    other = ops.constant(np.float32([0.25, 1.0, 2.0, 3.0]))
    other.set_friendly_name("O")
    model = ov.Model([ops.add(ops.add(x, _weights_chain(kind)), other)], [x])
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    _, conversion = _convert(tmp_path / "m.xml", tmp_path / "ours.xml", "f16")
    ov.save_model(core.read_model(tmp_path / "m.xml"), tmp_path / "ov.xml", compress_to_fp16=True)
    openvino_converts = "O_compressed" in (tmp_path / "ov.xml").read_text()
    assert openvino_converts == (kind == "compressed scale")
    assert (conversion.skipped is None) == openvino_converts
    assert ("O" in conversion.converted) == openvino_converts


def _shape_path_model(kind: str):
    """A model whose f32 constant ``S`` feeds a shape input of the ``kind`` named."""
    o10 = pytest.importorskip("openvino.opset10")
    x = ops.parameter([1, 2, 4, 4], np.float32, name="x")
    s = ops.constant(np.float32([1.0, 0.5] if kind.startswith("Reshape") else [2.0, 2.0]))
    s.set_friendly_name("S")
    if kind == "Interpolate-4 scales":
        sizes = ops.constant(np.int64([8, 8]))
        y = o10.interpolate(x, sizes, s, "nearest", "scales", axes=ops.constant(np.int64([2, 3])))
    elif kind == "Interpolate-11 scales":
        y = ops.interpolate(x, s, "nearest", "scales", axes=ops.constant(np.int64([2, 3])))
    elif kind == "Tile repeats":
        repeats = ops.concat([ops.constant(np.int64([1, 1])), ops.convert(s, "i64")], 0)
        y = ops.tile(x, repeats)
    else:  # a Reshape's pattern from ShapeOf, the f32 arithmetic after it
        shape = ops.convert(ops.shape_of(x), "f32")
        pattern = ops.convert(ops.divide(ops.gather(shape, ops.constant(np.int64([0, 1])),
                                                    ops.constant(np.int64(0))), s), "i64")  # fmt: skip
        y = ops.reshape(x, ops.concat([pattern, ops.constant(np.int64([-1]))], 0), False)
    w = ops.constant(np.float32([0.5]))
    w.set_friendly_name("W")
    return ov.Model([ops.multiply(y, w)], [x])


@pytest.mark.parametrize("kind", ["Interpolate-4 scales", "Interpolate-11 scales", "Tile repeats",
                                  "Reshape from ShapeOf"])  # fmt: skip
def test_shape_paths_stay_as_openvino_keeps_them(kind, tmp_path, core):
    ov.save_model(_shape_path_model(kind), tmp_path / "m.xml", compress_to_fp16=False)
    ours, conversion = _convert(tmp_path / "m.xml", tmp_path / "ours.xml", "f16")
    ov.save_model(core.read_model(tmp_path / "m.xml"), tmp_path / "ov.xml", compress_to_fp16=True)
    assert conversion.converted == ["W"]
    assert ("S", "shape path") in conversion.kept
    assert _f16_constants(core.read_model(ours)) == _f16_constants(
        core.read_model(tmp_path / "ov.xml")
    )
    assert _marked(ours) == _marked(tmp_path / "ov.xml")


def test_the_python_function_refuses_another_precision():
    from irrun.errors import UsageError

    xml = TESTS / "torch_models" / "classifier.xml"
    with pytest.raises(UsageError, match="convert to 'f16' or 'f32', not 'bf16'"):
        convert_document(read_ir(xml), Weights(xml.with_suffix(".bin")), "bf16")
