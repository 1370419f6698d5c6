"""A model in another format than OpenVINO IR (ONNX, TensorFlow, PyTorch...) or an IR's .bin
given as the model: one line saying what it is and how to convert it, for run and validate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, value: int | str | bytes) -> bytes:
    """One protobuf field: a varint, or a length-delimited string or message."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    data = value.encode() if isinstance(value, str) else value
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _tensor_info(name: str, dims: tuple[int, ...]) -> bytes:
    shape = b"".join(_field(1, _field(1, d)) for d in dims)  # TensorShapeProto.dim.dim_value
    return _field(1, name) + _field(2, _field(1, _field(1, 1) + _field(2, shape)))  # f32


def onnx_relu(dims: tuple[int, ...] = (1, 3)) -> bytes:
    """A real ONNX ModelProto (ir_version 8, opset 13): y = Relu(x), written field by field
    as the onnx package serializes it (this machine has no onnx package)."""
    node = _field(1, "x") + _field(2, "y") + _field(4, "Relu")
    graph = (_field(1, node) + _field(2, "g") + _field(11, _tensor_info("x", dims))
             + _field(12, _tensor_info("y", dims)))  # fmt: skip
    opset = _field(1, "") + _field(2, 13)
    return _field(1, 8) + _field(2, "pytorch") + _field(3, "2.5.0") + _field(7, graph) + \
        _field(8, opset)


CONVERT = "irrun reads IR (.xml + .bin); convert it with OpenVINO's converter: "


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("model.onnx", onnx_relu(), "an ONNX model, not OpenVINO IR: " + CONVERT +
         'ovc model.onnx, or in Python ov.save_model(ov.convert_model("model.onnx"), '
         '"model.xml")'),
        # By content: an ONNX file under an IR's name.
        ("model.xml", onnx_relu(), "an ONNX model, not OpenVINO IR: " + CONVERT +
         'ovc model.xml, or in Python ov.save_model(ov.convert_model("model.xml"), '
         '"model.xml")'),
        # Text that would be "malformed XML": the extension tells.
        ("frozen.pb", b"\n\x05input\x12\x0bPlaceholder", "a TensorFlow model, not OpenVINO IR: "
         + CONVERT + 'ovc frozen.pb, or in Python ov.save_model(ov.convert_model("frozen.pb"), '
         '"frozen.xml")'),
        # A SavedModel starts as an ONNX file does (field 1 a varint, then field 2).
        # ovc reads it as its directory.
        ("sm/saved_model.pb", b"\x08\x01\x12\x80\x01\n\x06serve", "a TensorFlow model, not "
         "OpenVINO IR: " + CONVERT + 'ovc sm, or in Python ov.save_model('
         'ov.convert_model("sm"), "sm.xml")'),
        ("m.tflite", b"\x1c\x00\x00\x00TFL3\x00\x00", "a TensorFlow Lite model, not OpenVINO IR: "
         + CONVERT + 'ovc m.tflite, or in Python ov.save_model(ov.convert_model("m.tflite"), '
         '"m.xml")'),
        ("net.pdmodel", b"\n\xb1\x02\n\x1f\n\x04feed", "a PaddlePaddle model, not OpenVINO IR: "
         + CONVERT + 'ovc net.pdmodel, or in Python ov.save_model(ov.convert_model('
         '"net.pdmodel"), "net.xml")'),
        ("net.pt", b"PK\x03\x04archive/data.pkl", "a PyTorch file, not OpenVINO IR: irrun reads "
         "IR (.xml + .bin); load the module and convert it in Python: ov.save_model("
         'ov.convert_model(module, example_input=...), "net.xml")'),
        ("net.h5", b"\x89HDF\r\n\x1a\n\x00\x00", "an HDF5 file (a Keras model?), not OpenVINO IR: "
         "irrun reads IR (.xml + .bin); load the model and convert it in Python: "
         'ov.save_model(ov.convert_model(keras_model), "net.xml")'),
        ("net.blob", b"\x00\x01\x02\x03compiled", "a compiled OpenVINO blob, not OpenVINO IR: "
         "irrun reads IR (.xml + .bin); pass the IR it was compiled from"),
        # A path with a space is quoted for the shell.
        ("my model.onnx", onnx_relu(), "an ONNX model, not OpenVINO IR: " + CONVERT +
         "ovc 'my model.onnx', or in Python ov.save_model(ov.convert_model(\"my model.onnx\"), "
         '"my model.xml")'),
    ],
    ids=["onnx", "onnx-named-xml", "tf-pb", "tf-saved-model", "tflite", "paddle", "torch",
         "keras-h5", "blob", "space-in-name"],
)  # fmt: skip
def test_another_format_is_named_with_how_to_convert(tmp_path, monkeypatch, capsys, name,
                                                     content, said):  # fmt: skip
    (tmp_path / name).parent.mkdir(exist_ok=True)
    (tmp_path / name).write_bytes(content)
    monkeypatch.chdir(tmp_path)
    assert main([name]) == 1
    assert capsys.readouterr() == ("", f"irrun: error: {name}: {said}\n")
    assert main(["validate", name, "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["code"], finding["message"], finding["line"]) == ("not-ir", said, None)
    with pytest.raises(irrun.IrrunError, match="not OpenVINO IR") as caught:
        irrun.load(name)
    assert caught.value.code == "not-ir"
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [tmp_path / name]  # no output


def test_a_large_onnx_file_is_named_before_the_size_limit(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRRUN_MAX_XML_MB", "0.001")
    (tmp_path / "big.onnx").write_bytes(onnx_relu() + bytes(5000))
    monkeypatch.chdir(tmp_path)
    assert main(["big.onnx"]) == 1
    assert capsys.readouterr().err.startswith("irrun: error: big.onnx: an ONNX model, not OpenVINO")


def test_an_ir_under_another_extension_is_still_read(tmp_path, capsys):
    # The content decides: XML is read as IR whatever the file is called.
    (tmp_path / "demo.onnx").write_bytes((MODELS / "demo.xml").read_bytes())
    (tmp_path / "demo.bin").write_bytes((MODELS / "demo.bin").read_bytes())
    assert [o.name for o in irrun.load(tmp_path / "demo.onnx").outputs] == ["probabilities"]


def test_the_weights_given_as_the_model(tmp_path, capsys):
    (tmp_path / "lonely.bin").write_bytes(bytes(range(256)))
    assert main(["validate", str(tmp_path / "lonely.bin"), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["code"] == "not-ir"
    assert finding["message"] == ("binary data, not an IR .xml file (the weights file? pass the "
                                  ".xml: irrun reads IR as the .xml with its .bin beside it)")


def test_the_advice_converts_the_onnx_model_into_an_ir_irrun_runs(tmp_path, monkeypatch):
    ov = pytest.importorskip("openvino")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.onnx").write_bytes(onnx_relu((2, 3)))
    ov.save_model(ov.convert_model("model.onnx"), "model.xml")  # as the message says
    x = np.array([[-1.5, 0.0, 2.0], [3.0, -0.25, 1e-3]], np.float32)
    (y,) = irrun.load("model.xml").run({"x": x}).values()
    np.testing.assert_array_equal(y, np.array([[0.0, 0.0, 2.0], [3.0, 0.0, 1e-3]], np.float32))
