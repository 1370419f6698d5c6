"""The checker's corpus: broken IR made by mutating valid IR, each with every finding it gives.

Each case edits the text of a valid model (the bundled ``pooling_chain.xml``, or a small CNN that
OpenVINO saves at test time) and lists every finding ``irrun.validate`` must report, in
order: its level, code, line (found by needles in the edited text) and layer id and port.
A list that is complete also shows that nothing is reported twice or echoed downstream.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.cli import main

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO_XML = (MODELS / "pooling_chain.xml").read_text()
DEMO_BIN = (MODELS / "pooling_chain.bin").read_bytes()


def line_of(text: str, *needles: str) -> int:
    """1-based line of the last needle, each searched after the start of the one before."""
    pos = -1
    for needle in needles:
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


@dataclass(frozen=True)
class F:
    """An expected finding."""

    code: str
    at: tuple[str, ...]  # needles leading to its line in the edited text
    layer: str | None = None  # the layer's id
    port: int | None = None
    level: str = "error"
    says: str = ""  # a phrase of its message


@dataclass(frozen=True)
class Case:
    id: str
    edits: tuple[tuple[str, str], ...]  # (old, new), each replacing the first occurrence
    expect: tuple[F, ...]
    base: str = "demo"
    weights: bytes | None = b"same"  # the .bin: the base's, these bytes, or none

    def text(self, base_text: str) -> str:
        text = base_text
        for old, new in self.edits:
            assert old in text, f"{self.id}: {old!r} is not in the {self.base} model"
            text = text.replace(old, new, 1)
        return text


# --- pooling_chain.xml: Parameter, MaxPool-8, AvgPool-14, Const, AdaptiveMaxPool-8, two Results ------

EDGE_0_1 = '<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />'
STEM = ('name="stem_pool"',)
STEM_DATA = ('name="stem_pool"', "<data ")
AVG = ('name="avg_pool"',)
AVG_DATA = ('name="avg_pool"', "<data ")
CONST_DATA = ('name="head_size"', "<data ")
# demo never reads stem_pool's indices: an info finding wherever the graph is wired up.
UNUSED = F("unused-output", ('name="stem_pool"', '<port id="2"'), "1", 2, "info")
SPARE_LAYER = """		<layer id="7" name="spare" type="MaxPool" version="opset1">
			<data strides="2, 2" pads_begin="0, 0" pads_end="0, 0" kernel="2, 2" rounding_type="floor" auto_pad="explicit" />
			<input><port id="0" precision="FP32"><dim>1</dim><dim>3</dim><dim>16</dim><dim>16</dim></port></input>
			<output><port id="1" precision="FP32"><dim>1</dim><dim>3</dim><dim>8</dim><dim>8</dim></port></output>
		</layer>
	</layers>"""

DEMO_CASES = [
    # 1. Structure, against irrun's schema (the reader's own complaint about it is dropped).
    Case("schema-unknown-element",
         (('auto_pad="explicit" index_element_type="i32" axis="0" />',
           'auto_pad="explicit" index_element_type="i32" axis="0" />\n\t\t\t<blobs />'),),
         (F("schema", ("<blobs",), "1", says="<blobs> is not allowed in <layer>"), UNUSED)),
    Case("schema-port-without-id",
         (('<port id="1" precision="FP32">', '<port precision="FP32">'),),
         (F("schema", (*STEM, '<port precision="FP32">'), "1",
            says="missing the mandatory attribute 'id'"),)),
    Case("schema-bad-precision",
         (('precision="FP32" names="image"', 'precision="FP33" names="image"'),),
         (F("schema", ('precision="FP33"',), "0", 0, says="is not an element type"), UNUSED)),
    Case("schema-edge-port-not-a-number",
         ((EDGE_0_1, EDGE_0_1.replace('from-port="0"', 'from-port="a"')),),
         (F("schema", ('from-port="a"',), says="is not an unsigned integer"),)),
    Case("schema-bad-dim", (("<dim>16</dim>", "<dim>abc</dim>"),),
         (F("schema", ("<dim>abc",), "0", 0, says="<dim>abc</dim> is not a dimension"), UNUSED)),
    Case("schema-text-in-edges", (("<edges>", "<edges>\n\t\tto do"),),
         (UNUSED, F("schema", ("<edges>",), says='contains text "to do"'))),
    Case("malformed-xml", (("</output>", "</outptu>"),),
         (F("malformed-xml", ("</outptu>",), says="Opening and ending tag mismatch"),)),
    Case("root-not-net", (("<net ", "<network "), ("</net>", "</network>")),
         (F("schema", ("<network",), says="root element is <network>, expected <net>"),)),
    Case("ir-version-12", (('version="11"', 'version="12"'),),
         (F("schema", ("<net ",), says="is not a supported IR version"),)),
    # 2. Identity and wiring.
    Case("duplicate-layer-id", (('<layer id="2" ', '<layer id="1" '),),
         (F("duplicate-layer-id", AVG, "1", says="(first at line 15)"),
          F("bad-edge", ('to-layer="2"',), says="there is no layer with id 2"),
          F("bad-edge", ('from-layer="2"',), says="there is no layer with id 2"))),
    Case("duplicate-port-id",
         (('<port id="2" precision="I32">', '<port id="1" precision="I32">'),),
         (F("duplicate-port-id", ('<port id="1" precision="I32">',), "1", 1,
            says="output port id 1 is used again (first at line 26)"),)),
    Case("edge-to-missing-layer", ((EDGE_0_1, EDGE_0_1.replace('from-layer="0"',
                                                                'from-layer="9"')),),
         (F("bad-edge", ('from-layer="9"',), says="there is no layer with id 9"),)),
    Case("edge-from-missing-port", ((EDGE_0_1, EDGE_0_1.replace('from-port="0"',
                                                                 'from-port="5"')),),
         (F("bad-edge", ('from-port="5"',), "0", says="leaves output port 5"),)),
    Case("edge-to-missing-port", ((EDGE_0_1, EDGE_0_1.replace('to-port="0"', 'to-port="7"')),),
         (F("port-not-fed", (*STEM, '<port id="0"'), "1", 0),
          F("bad-edge", ('to-port="7"',), "1", says="enters input port 7"))),
    Case("port-fed-twice",
         (('<edge from-layer="3" from-port="0" to-layer="4" to-port="1" />',
           '<edge from-layer="3" from-port="0" to-layer="4" to-port="0" />'),),
         (F("port-not-fed", ('name="head_pool"', '<port id="1"'), "4", 1),
          F("port-fed-twice", ('<edge from-layer="3"',), "4", 0))),
    Case("port-not-fed",
         (('<edge from-layer="4" from-port="3" to-layer="6" to-port="0" />', ""),),
         (F("port-not-fed", ('name="indices_result"', '<port id="0"'), "6", 0,
            says="input port 0 has no edge"),)),
    Case("unused-output",
         (('<edge from-layer="4" from-port="3" to-layer="6" to-port="0" />',
           '<edge from-layer="4" from-port="2" to-layer="6" to-port="0" />'),),
         (UNUSED, F("unused-output", ('name="head_pool"', '<port id="3"'), "4", 3, "info"))),
    Case("dead-layer",
         (("\t</layers>", SPARE_LAYER),
          ("\t</edges>", '\t\t<edge from-layer="0" from-port="0" to-layer="7" to-port="0" />'
                         "\n\t</edges>")),
         (UNUSED, F("dead-layer", ('name="spare"',), "7", level="warning",
                    says="reaches no Result: OpenVINO drops it"))),
    # A cycle no longer stops the check: the other findings come with it.
    Case("cycle-and-more",
         ((EDGE_0_1, '<edge from-layer="2" from-port="1" to-layer="1" to-port="0" />'),
          ('kernel="3, 3"', 'kernel="3, x"')),
         (F("dead-layer", ('name="image"',), "0", level="warning",
            says="reaches no Result; OpenVINO keeps it as a model input"),
          F("cycle", STEM, "1", says="layers 1 'stem_pool' -> 2 'avg_pool' -> 1 'stem_pool'"),
          F("bad-attribute", STEM_DATA, "1", says="attribute 'kernel'=\"3, x\""),
          UNUSED)),
    Case("self-loop",
         ((EDGE_0_1, '<edge from-layer="1" from-port="1" to-layer="1" to-port="0" />'),),
         (F("dead-layer", ('name="image"',), "0", level="warning"),
          F("cycle", STEM, "1", says="layers 1 'stem_pool' -> 1 'stem_pool'"), UNUSED)),
    # 3. Ops and attributes.
    Case("unsupported-op", (('type="MaxPool"', 'type="MaxPoolX"'),),
         (F("unsupported-op", STEM, "1", says="op MaxPoolX (opset8) is not an op of any OpenVINO opset (did you mean MaxPool?)"),
          UNUSED)),
    Case("op-not-in-opset", (('type="AdaptiveMaxPool" version="opset8"',
                              'type="AdaptiveMaxPool" version="opset7"'),),
         (UNUSED, F("unknown-opset", ('name="head_pool"',), "4",
                    says="opset7 has no op AdaptiveMaxPool (irrun supports AdaptiveMaxPool-v8"))),
    Case("unknown-opset", (('type="MaxPool" version="opset8"',
                            'type="MaxPool" version="opset99"'),),
         (F("unknown-opset", STEM, "1", says="unsupported opset 'opset99'"), UNUSED)),
    Case("missing-attribute", ((' kernel="3, 3"', ""),),
         (F("missing-attribute", STEM_DATA, "1", says="attribute 'kernel' is required"),
          UNUSED)),
    Case("unknown-attribute", (('kernel="3, 3"', 'kernel="3, 3" colour="blue"'),),
         (F("unknown-attribute", STEM_DATA, "1", level="warning",
            says="unknown attribute 'colour' is ignored"), UNUSED)),
    Case("bad-enum", (('rounding_type="floor"', 'rounding_type="round"'),),
         (F("bad-attribute", STEM_DATA, "1", says="expected one of floor, ceil, ceil_torch"),
          UNUSED)),
    Case("rounding-type-not-in-version", (('rounding_type="floor"',
                                           'rounding_type="ceil_torch"'),),
         (F("bad-attribute", STEM_DATA, "1", says="rounding_type ceil_torch needs MaxPool-14"),
          UNUSED)),
    Case("zero-stride", (('strides="2, 2" dilations', 'strides="0, 2" dilations'),),
         (F("bad-attribute", STEM_DATA, "1", says="strides must be positive, got [0, 2]"),
          UNUSED)),
    Case("negative-stride", (('strides="2, 2" dilations', 'strides="-2, 2" dilations'),),
         (F("bad-attribute", STEM_DATA, "1", says="strides must be positive, got [-2, 2]"),
          UNUSED)),
    Case("kernel-zero", (('kernel="3, 3"', 'kernel="0, 3"'),),
         (F("bad-attribute", STEM_DATA, "1", says="kernel must be positive, got [0, 3]"),
          UNUSED)),
    Case("axis-out-of-range", (('axis="0"', 'axis="4"'),),
         (F("shape-error", STEM, "1", says="axis 4 is out of range for a rank-4 input"),
          UNUSED)),
    Case("index-element-type-f32", (('index_element_type="i32" axis',
                                     'index_element_type="f32" axis'),),
         (F("bad-attribute", STEM_DATA, "1",
            says="index_element_type must be i32 or i64, got f32"), UNUSED)),
    Case("list-lengths-disagree", (('kernel="3, 3"', 'kernel="3"'),),
         (F("bad-attribute", STEM_DATA, "1", says="strides has 2 values [2, 2] but kernel has 1"),
          UNUSED)),
    Case("lists-do-not-fit-the-rank",
         (('strides="2, 2" dilations="1, 1" pads_begin="1, 1" pads_end="1, 1" kernel="3, 3"',
           'strides="2" dilations="1" pads_begin="1" pads_end="1" kernel="3"'),),
         (F("shape-error", STEM, "1",
            says="kernel [3] has 1 values but the input has 2 spatial dims"), UNUSED)),
    Case("exclude-pad-absent", ((' exclude-pad="true"', ""),),
         (UNUSED, F("absent-attribute", AVG_DATA, "2", level="warning",
                    says="exclude-pad is absent; OpenVINO uses true"))),
    Case("exclude-pad-unreadable", (('exclude-pad="true"', 'exclude-pad="yes"'),),
         (UNUSED, F("lenient-attribute", AVG_DATA, "2", level="warning",
                    says="OpenVINO ignores it and uses true"))),
    Case("several-attribute-errors", (('kernel="3, 3"', 'kernel="3, x"'),
                                      ('rounding_type="floor"', 'rounding_type="round"')),
         (F("bad-attribute", STEM_DATA, "1", says="'kernel'"),
          F("bad-attribute", STEM_DATA, "1", says="'rounding_type'"), UNUSED)),
    Case("input-count",
         (('exclude-pad="true" auto_pad="explicit" rounding_type="ceil_torch" />\n\t\t\t<input>',
           'exclude-pad="true" auto_pad="explicit" rounding_type="ceil_torch" />\n\t\t\t<input>'
           '\n\t\t\t\t<port id="5" precision="FP32"><dim>2</dim></port>'),),
         (F("input-count", AVG, "2", says="has 2 input ports, expected 1"),
          F("port-not-fed", ('<port id="5"',), "2", 5))),
    Case("output-count", (('</port>\n\t\t\t\t<port id="2" precision="I32">', '</port>\n<!--'),
                          ("</port>\n\t\t\t</output>\n\t\t</layer>\n\t\t<layer id=\"2\"",
                           "</port>-->\n\t\t\t</output>\n\t\t</layer>\n\t\t<layer id=\"2\"")),
         (F("output-count", STEM, "1", says="has 1 output ports, MaxPool-v8 produces 2"),)),
    Case("parameter-element-type", (('element_type="f32"', 'element_type="FP32"'),),
         (F("bad-attribute", ('name="image"', "<data "), "0",
            says="expected an element type such as f32 or i64"), UNUSED)),
    # 4. Weights.
    # One finding about the file, at the first Const that reads it (not one per Const).
    Case("no-bin", (), (UNUSED, F("bad-weights", CONST_DATA, None, says="does not exist (1 Const "
                                  "layer read from it; give its path with --weights")),
         weights=None),
    Case("const-past-end", (('offset="0" size="16"', 'offset="8" size="16"'),),
         (UNUSED, F("bad-weights", CONST_DATA, "3",
                    says="offset 8 + size 16 = 24 is past the end of bad.bin (16 bytes)"))),
    Case("const-size-too-small", (('size="16"', 'size="8"'),),
         (UNUSED, F("bad-weights", CONST_DATA, "3",
                    says="size 8 bytes is too small for shape [2] of i64 (needs 16 bytes)"))),
    Case("const-size-too-large", (('size="16"', 'size="24"'),),
         (UNUSED, F("const-size", CONST_DATA, "3", level="warning",
                    says="size 24 bytes is more than shape [2] of i64 needs (16 bytes)")),
         weights=DEMO_BIN + bytes(8)),
    # 5. Types: a precision OpenVINO's serializer would never write.
    Case("precision-mismatch",
         (('<port id="2" precision="I32">', '<port id="2" precision="I64">'),),
         (UNUSED, F("type-mismatch", ('name="stem_pool"', '<port id="2"'), "1", 2,
                    says="precision i64, but the tensor is i32"))),
    Case("const-precision-mismatch", (('precision="I64">\n\t\t\t\t\t<dim>2</dim>',
                                       'precision="FP32">\n\t\t\t\t\t<dim>2</dim>'),),
         (UNUSED, F("type-mismatch", ('name="head_size"', "<port"), "3", 0,
                    says="precision f32, but the tensor is i64"))),
    # 6. Shapes: every declared dim, dynamic ones included, and pooling's own checks.
    Case("declared-dim", (("<dim>8</dim>", "<dim>9</dim>"),),
         (F("shape-mismatch", ('name="stem_pool"', '<port id="1"'), "1", 1,
            says="declared [1,3,9,8], inferred [1,3,8,8] (kernel=[3,3], strides=[2,2]"),
          UNUSED)),
    Case("declared-rank", (("<dim>16</dim>\n\t\t\t\t</port>",
                            "<dim>16</dim>\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t</port>"),),
         (F("shape-mismatch", ('name="image"', "<port"), "0", 0,
            says="declared [1,3,16,16,1], inferred [1,3,16,16]"), UNUSED)),
    Case("declared-dim-vs-interval", (('shape="1,3,16,16"', 'shape="1,3,16..32,16"'),
                                      ("<dim>8</dim>", "<dim>17</dim>")),
         (F("shape-mismatch", ('name="stem_pool"', '<port id="1"'), "1", 1,
            says="declared [1,3,17,8], inferred [1,3,8..16,8]"), UNUSED)),
    Case("declared-range-excludes", (("<dim>16</dim>", "<dim>1..8</dim>"),),
         (F("shape-mismatch", ('name="image"', "<port"), "0", 0,
            says="declared [1,3,1..8,16], inferred [1,3,16,16]"), UNUSED)),
    Case("kernel-larger-than-input", (('kernel="3, 3"', 'kernel="30, 30"'),),
         (F("shape-error", STEM, "1", says="kernel after dilation has size 30, larger than the "
            "input after padding (16 + 1 + 1 = 18) at spatial axis 0"), UNUSED)),
    Case("window-in-padding-with-exclude-pad",
         (('strides="2, 2" pads_begin="0, 0" pads_end="0, 0" exclude-pad',
           'strides="2, 2" pads_begin="2, 2" pads_end="0, 0" exclude-pad'),),
         (UNUSED, F("shape-error", AVG, "2", says="kernel after dilation (2) lies entirely in the "
                    "padding (pads 2/0) at spatial axis 0, which exclude-pad forbids"))),
    Case("empty-windows-from-ceil",
         (('kernel="2, 2" strides="2, 2"', 'kernel="1, 1" strides="3, 3"'),
          ('rounding_type="ceil_torch"', 'rounding_type="ceil"')),
         (UNUSED,
          F("empty-window", AVG, "2", level="warning", says="1 window on spatial axis 0 holds "
            "no input element (output 3 starts at 9; input size 8, kernel 1, stride 3"),
          F("empty-window", AVG, "2", level="warning", says="on spatial axis 1"))),
]  # fmt: skip


# --- a CNN saved by OpenVINO: Convolution, Add, ReLU, Reshape ------------------------------

CNN_CASES = [
    Case("cnn-broadcast-fails", (('shape="1, 4, 1, 1" offset="432" size="16"',
                                  'shape="1, 5, 1, 1" offset="432" size="20"'),),
         (F("shape-mismatch", ('name="bias"', "<port"), "3", 0),
          F("shape-error", ('name="add"',), "4"),
          F("shape-mismatch", ('name="add"', '<port id="1"'), "4", 1)), base="cnn"),
    Case("cnn-missing-attribute", ((' special_zero="false"', ""),),
         (F("missing-attribute", ('name="flatten"', "<data"), "7",
            says="attribute 'special_zero' is required"),), base="cnn"),
    Case("cnn-unknown-attribute", (('auto_pad="explicit" />', 'auto_pad="explicit" foo="1" />'),),
         (F("unknown-attribute", ('name="conv"', "<data"), "2", level="warning"),), base="cnn"),
    Case("cnn-weights-past-end", (('offset="0" size="432"', 'offset="64" size="432"'),),
         (F("bad-weights", ('name="conv_w"', "<data"), "1", says="is past the end of bad.bin"),),
         base="cnn"),
    # relu's output is the only output port with id 1.
    Case("cnn-precision-mismatch", (('<output>\n\t\t\t\t<port id="1" precision="FP32">',
                                     '<output>\n\t\t\t\t<port id="1" precision="FP16">'),),
         (F("type-mismatch", ('name="relu"', '<port id="1"'), "5", 1,
            says="precision f16, but the tensor is f32"),), base="cnn"),
    Case("cnn-unsupported-op", (('type="ReLU"', 'type="BinaryConvolution"'),),
         (F("unsupported-op", ('name="relu"',), "5", says="op BinaryConvolution (opset1) is not supported"),),
         base="cnn"),
    Case("cnn-declared-dim", (("<dim>256</dim>", "<dim>255</dim>"),),
         (F("shape-mismatch", ('name="flatten"', '<port id="2"'), "7", 2,
            says="declared [1,255], inferred [1,256]"),), base="cnn"),
]  # fmt: skip

CASES = DEMO_CASES + CNN_CASES


@pytest.fixture(autouse=True)
def _ops_irrun_lacks(without_ops):
    """The cases of unsupported ops use BinaryConvolution and DeformablePSROIPooling: every
    test here runs as if irrun lacked them, whatever ops it runs."""
    without_ops("BinaryConvolution", "DeformablePSROIPooling")


@pytest.fixture(scope="session")
def cnn_base(tmp_path_factory) -> tuple[str, bytes]:
    ov = pytest.importorskip("openvino")
    import openvino.opset1 as o1

    x = o1.parameter([1, 3, 8, 8], np.float32, name="x")
    w = o1.constant(np.full((4, 3, 3, 3), 0.25, np.float32), name="conv_w")
    conv = o1.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1], name="conv")
    bias = o1.constant(np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1), name="bias")
    relu = o1.relu(o1.add(conv, bias, name="add"), name="relu")
    flat = o1.reshape(relu, o1.constant(np.array([1, -1], np.int64), name="target"), False,
                      name="flatten")  # fmt: skip
    path = tmp_path_factory.mktemp("cnn") / "cnn.xml"
    ov.save_model(ov.Model([o1.result(flat, name="out")], [x], "cnn"), str(path),
                  compress_to_fp16=False)  # fmt: skip
    return path.read_text(), path.with_suffix(".bin").read_bytes()


def write_case(case: Case, directory: Path, request) -> tuple[Path, str]:
    base_text, base_bin = (DEMO_XML, DEMO_BIN) if case.base == "demo" else request.getfixturevalue(
        "cnn_base"
    )
    text = case.text(base_text)
    path = directory / "bad.xml"
    path.write_text(text)
    weights = base_bin if case.weights == b"same" else case.weights
    if weights is not None:
        path.with_suffix(".bin").write_bytes(weights)
    return path, text


def test_the_corpus_is_large_and_covers_every_kind_of_problem():
    assert len(CASES) >= 40
    codes = {f.code for case in CASES for f in case.expect}
    assert codes >= {
        "schema", "malformed-xml", "duplicate-layer-id", "duplicate-port-id", "bad-edge",
        "port-fed-twice", "port-not-fed", "unused-output", "dead-layer", "cycle",
        "unsupported-op", "unknown-opset", "missing-attribute", "unknown-attribute",
        "bad-attribute", "absent-attribute", "lenient-attribute", "input-count", "output-count",
        "bad-weights", "const-size", "type-mismatch", "shape-mismatch", "shape-error",
        "empty-window",
    }  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_broken_ir(case: Case, tmp_path, request):
    path, text = write_case(case, tmp_path, request)
    found = irrun.validate(path)
    got = [(d.level, d.code, d.line, d.layer.id if d.layer else None, d.port) for d in found]
    want = [(f.level, f.code, line_of(text, *f.at), f.layer, f.port) for f in case.expect]
    assert got == want
    for d, f in zip(found, case.expect, strict=True):
        assert f.says in d.message
        assert d.location is not None and d.location.file == str(path)
        # One line: file, line, level, then the layer (and port) it is about.
        layer = f"layer {f.layer} '" if f.layer is not None else ""
        assert str(d).startswith(f"{path}:{d.line}: {f.level}: {layer}")
        assert "\n" not in str(d)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_command_line_prints_the_same_findings(case: Case, tmp_path, request, capsys):
    path, _ = write_case(case, tmp_path, request)
    found = irrun.validate(path)
    rc = main(["validate", "-v", str(path)])  # -v: the info findings too
    out = capsys.readouterr().out.splitlines()
    errors = sum(d.level == "error" for d in found)
    assert rc == (1 if errors else 0)
    assert out[:-1] == [str(d) for d in found]
    assert out[-1].startswith(f"{path}: ")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_load_refuses_exactly_when_a_blocking_error_is_found(case: Case, tmp_path, request):
    path, _ = write_case(case, tmp_path, request)
    found = irrun.validate(path)
    # Declared dims and precisions do not stop a model: OpenVINO re-infers both.
    informational = {"shape-mismatch", "type-mismatch", "schema"}
    blocking = [d for d in found if d.level == "error" and d.code not in informational]
    structural = [d for d in found if d.code == "schema"]
    try:
        model = irrun.load(path)
    except irrun.IrrunError as exc:
        assert blocking or structural
        assert exc.location is not None and exc.location.file == str(path)
        assert exc.location.line in {d.line for d in found if d.level == "error"}
    else:
        assert not blocking
        assert model.validate() == found


def test_reader_duplicates_are_dropped_in_favour_of_the_schema(tmp_path):
    # The reader cannot read the port's precision either; only the schema's finding shows.
    path = tmp_path / "m.xml"
    path.write_text(DEMO_XML.replace('precision="FP32" names="image"',
                                     'precision="FP99" names="image"'))  # fmt: skip
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    codes = [d.code for d in irrun.validate(path) if d.level == "error"]
    assert codes == ["schema"]
    with pytest.raises(irrun.IrrunError, match='precision="FP99" is not an element type'):
        irrun.load(path)


def test_stricter_than_openvino_structure_does_not_stop_a_run(tmp_path):
    """An element OpenVINO ignores is an error to the checker, but the model still runs."""
    path = tmp_path / "m.xml"
    path.write_text(DEMO_XML.replace("<edges>", "<edges>\n\t\tto do"))
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    assert [d.code for d in irrun.validate(path) if d.level == "error"] == ["schema"]
    model = irrun.load(path)
    assert sorted(model.run(model.random_inputs())) == ["indices", "pooled"]


# --- ops irrun does not support ------------------------------------------------------------


def _three_unsupported(tmp_path) -> Path:
    text = (DEMO_XML.replace('type="MaxPool"', 'type="BinaryConvolution"')
            .replace('name="avg_pool" type="AvgPool" version="opset14"',
                     'name="avg_pool" type="BinaryConvolution" version="opset4"')
            .replace('type="Result" version="opset1" output_names="indices"',
                     'type="DeformablePSROIPooling" version="opset4"'))  # fmt: skip
    path = tmp_path / "m.xml"
    path.write_text(text)
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    return path


def test_load_names_every_unsupported_layer_and_where_to_look(tmp_path, capsys):
    path = _three_unsupported(tmp_path)
    with pytest.raises(irrun.IrrunError) as info:
        irrun.load(path)
    message = str(info.value)
    assert message == (
        f"{path}:15: 3 layers have ops irrun does not support: BinaryConvolution (opset8): layer 1 "
        "'stem_pool' (line 15); BinaryConvolution (opset4): layer 2 'avg_pool' (line 40); "
        "DeformablePSROIPooling (opset4): "
        "layer 6 'indices_result' (line 105) ('irrun ops' lists the ops irrun runs)"
    )
    # The run command refuses before computing anything, in one line.
    rc = main([str(path), "-o", str(tmp_path / "out.npz")])
    err = capsys.readouterr().err
    assert rc == 1 and err == f"irrun: error: {message}\n"
    assert not (tmp_path / "out.npz").exists()


def test_validate_names_each_unsupported_op_by_type_and_opset(tmp_path):
    found = [d for d in irrun.validate(_three_unsupported(tmp_path)) if d.level == "error"]
    assert [(d.code, str(d.layer)) for d in found] == [
        ("unsupported-op", "layer 1 'stem_pool' (BinaryConvolution, opset8)"),
        ("unsupported-op", "layer 2 'avg_pool' (BinaryConvolution, opset4)"),
        ("unsupported-op", "layer 6 'indices_result' (DeformablePSROIPooling, opset4)"),
    ]
    assert found[1].message == (
        "op BinaryConvolution (opset4) is not supported by irrun (OpenVINO has it in opset1..16; "
        "'irrun ops' lists the ops irrun runs)"
    )


def test_one_unsupported_layer_is_its_own_finding(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text(DEMO_XML.replace('type="MaxPool"', 'type="BinaryConvolution"'))
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    with pytest.raises(irrun.IrrunError) as info:
        irrun.load(path)
    assert str(info.value).startswith(
        f"{path}:15: layer 1 'stem_pool' (BinaryConvolution, opset8): op BinaryConvolution (opset8) is not supported"
    )


# --- the net as a whole ----------------------------------------------------------------------


def test_a_model_without_a_result(tmp_path):
    text = re.sub(r'\t\t<layer id="5".*?</layer>\n\t\t<layer id="6".*?</layer>\n', "", DEMO_XML,
                  flags=re.S)  # fmt: skip
    text = re.sub(r'\t\t<edge from-layer="4"[^\n]*\n', "", text)
    path = tmp_path / "m.xml"
    path.write_text(text)
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    found = irrun.validate(path)
    assert [(d.level, d.code, d.line, d.layer) for d in found] == [
        ("warning", "no-result", 4, None)
    ]
    assert found[0].message == "the model has no Result layer: OpenVINO keeps none of its layers"


def test_two_cycles_are_two_findings(tmp_path):
    # Two separate loops: 1 <-> 2 and 4 <-> 4 (head_pool's values fed back into it).
    text = (DEMO_XML.replace(EDGE_0_1, '<edge from-layer="2" from-port="1" to-layer="1" '
                             'to-port="0" />')
            .replace('<edge from-layer="2" from-port="1" to-layer="4" to-port="0" />',
                     '<edge from-layer="4" from-port="2" to-layer="4" to-port="0" />'))  # fmt: skip
    path = tmp_path / "m.xml"
    path.write_text(text)
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    cycles = [d for d in irrun.validate(path) if d.code == "cycle"]
    assert [(d.line, d.layer.id) for d in cycles] == [(15, "1"), (67, "4")]
    assert cycles[1].message == "the graph has a cycle: layers 4 'head_pool' -> 4 'head_pool'"


# --- pooling windows with no input element ---------------------------------------------------


def _pool_attrs(**changes):
    from types import SimpleNamespace

    attrs = dict(kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(0,), auto_pad="explicit",
                 rounding_type="floor")  # fmt: skip
    attrs.update(changes)
    return SimpleNamespace(**attrs)


@pytest.mark.parametrize(
    ("changes", "size", "expected"),
    [
        # MaxPool allows pads as large as the kernel: the first and last windows are empty.
        (dict(pads_begin=(2,), pads_end=(2,)), 3,
         ["2 windows on spatial axis 0 hold no input element (outputs 0, 5 start at -2, 3; input "
          "size 3, kernel 2, stride 1, dilation 1, pads 2/2, rounding_type=floor): OpenVINO gives "
          "the lowest value of the element type there (-3.4e38 for f32)"]),
        # Dilated taps can straddle the input: -2 and 3, -1 and 4 on an input of size 3.
        (dict(kernel=(2,), dilations=(5,), pads_begin=(3,), pads_end=(3,)), 3,
         ["2 windows on spatial axis 0 hold no input element (outputs 1, 2 start at -2, -1; "
          "input size 3, kernel 2, stride 1, dilation 5, pads 3/3, rounding_type=floor): OpenVINO "
          "gives the lowest value of the element type there (-3.4e38 for f32)"]),
        # AvgPool counting the padding: the average of an empty window is 0, not NaN.
        (dict(kernel=(1,), strides=(2,), pads_begin=(1,), pads_end=(1,), exclude_pad=False,
              rounding_type="ceil"), 2,
         ["2 windows on spatial axis 0 hold no input element (outputs 0, 2 start at -1, 3; input "
          "size 2, kernel 1, stride 2, dilation 1, pads 1/1, rounding_type=ceil): their average "
          "is 0 (the divisor counts the padding)"]),
        # valid padding with ceil rounding: the last window starts inside the input (the
        # docs' "valid + ceil" example), at its end, or past it; no pad is counted.
        (dict(kernel=(2,), strides=(2,), auto_pad="valid", exclude_pad=False,
              rounding_type="ceil"), 3, []),
        (dict(kernel=(1,), strides=(2,), auto_pad="valid", exclude_pad=False,
              rounding_type="ceil"), 2,
         ["1 window on spatial axis 0 holds no input element (output 1 starts at 2; input size "
          "2, kernel 1, stride 2, dilation 1, pads 0/0, rounding_type=ceil): OpenVINO's CPU "
          "plugin gives NaN or -0.0 there (its reference implementation 0)"]),
        (dict(kernel=(1,), strides=(3,), auto_pad="valid", exclude_pad=False,
              rounding_type="ceil"), 5,
         ["1 window on spatial axis 0 holds no input element (output 2 starts at 6; input size "
          "5, kernel 1, stride 3, dilation 1, pads 0/0, rounding_type=ceil): OpenVINO's CPU "
          "plugin gives NaN or -0.0 there (its reference implementation 0)"]),
        (dict(kernel=(3,), strides=(2,), pads_begin=(1,), pads_end=(1,)), 16, []),
    ],
    ids=["maxpool-pads", "dilation-straddles", "avgpool-counts-pads", "valid-ceil-inside",
         "valid-ceil-at-the-end", "valid-ceil-past-the-end", "ordinary"],
)  # fmt: skip
def test_empty_windows(changes, size, expected):
    from irrun.ops.pool_checks import empty_windows

    assert empty_windows(_pool_attrs(**changes), (1, 1, size)) == expected


def test_empty_windows_skip_unknown_sizes():
    from irrun.ir.dims import DYNAMIC
    from irrun.ops.pool_checks import empty_windows

    attrs = _pool_attrs(pads_begin=(2,), pads_end=(2,))
    assert empty_windows(attrs, (1, 1, DYNAMIC)) == []
    assert empty_windows(attrs, None) == []
    assert empty_windows(attrs, (1, 1, 4, 4)) == []  # the shape rule reports the rank


def test_empty_windows_are_the_pools_warn_hook():
    # Propagation asks each op's warn hook (OpDef.warn); the sliding-window pools have one.
    from irrun.ir.registry import TensorInfo, supported_ops

    warned = {op.label for op in supported_ops() if op.warn is not None}
    assert warned >= {"MaxPool-v1", "MaxPool-v8", "MaxPool-v14", "AvgPool-v1", "AvgPool-v14",
                      "AvgPool-v16"}
    op = next(op for op in supported_ops() if op.label == "MaxPool-v8")
    attrs = _pool_attrs(pads_begin=(2,), pads_end=(2,))
    assert op.warn(attrs, [TensorInfo((1, 1, 3), None)])[0].startswith("2 windows on spatial")
