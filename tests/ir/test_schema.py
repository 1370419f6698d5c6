"""irrun's XML Schema of IR v10/v11 (schemas/ir.xsd) and ``irrun.ir.schema.check_structure``.

Valid IR is what OpenVINO writes: the bundled models, models written by ``ov.save_model``
for more kinds of layers (sub-graphs, rt_info, compressed weights, preprocessing) and
hand-edited v10 files.  Broken IR is made by editing the text of the bundled ``pooling_chain.xml``;
each case states the line of the offending element, the layer it is in, a key phrase of
the message, and whether OpenVINO itself refuses the file (where it does not, the schema
is deliberately stricter: see the schema's header).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from lxml import etree

from irrun.errors import LayerRef
from irrun.ir.schema import check_structure
from irrun.ir.xml_file import parse_xml

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO_XML = (MODELS / "pooling_chain.xml").read_text()
DEMO_BIN = (MODELS / "pooling_chain.bin").read_bytes()

IMAGE = LayerRef("0", "image", "Parameter", 1)
STEM = LayerRef("1", "stem_pool", "MaxPool", 8)
AVG = LayerRef("2", "avg_pool", "AvgPool", 14)
EDGE_0_1 = '<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />'
STEM_DATA = '<data strides="2, 2" dilations="1, 1" pads_begin="1, 1" pads_end="1, 1" kernel="3, 3" rounding_type="floor" auto_pad="explicit" index_element_type="i32" axis="0" />'


def line_of(text: str, *needles: str) -> int:
    """1-based line of the last needle, each searched after the start of the one before."""
    pos = -1
    for needle in needles:
        pos = text.index(needle, pos + 1)
    return text.count("\n", 0, pos) + 1


def write_ir(directory: Path, xml: str, name: str = "bad") -> Path:
    path = directory / f"{name}.xml"
    path.write_text(xml)
    path.with_suffix(".bin").write_bytes(DEMO_BIN)
    return path


def check(path: Path) -> list:
    return check_structure(parse_xml(path), path)


@pytest.fixture(scope="module")
def ov():
    return pytest.importorskip("openvino")


def openvino_reads(ov, path: Path) -> bool:
    try:
        ov.Core().read_model(str(path))
    except Exception:
        return False
    return True


# --- valid IR ------------------------------------------------------------------------------


@pytest.mark.parametrize("xml", sorted(MODELS.glob("*.xml")), ids=lambda p: p.stem)
def test_bundled_models_are_valid(xml: Path):
    assert check(xml) == []


def test_takes_a_tree_or_its_root():
    tree = etree.parse(str(MODELS / "pooling_chain.xml"))
    assert check_structure(tree, "pooling_chain.xml") == []
    assert check_structure(tree.getroot(), "pooling_chain.xml") == []


def test_schema_says_whose_it_is():
    from irrun.ir import schema

    text = schema._schema_bytes().decode("utf-8")
    header = " ".join(etree.fromstring(text.encode()).findtext(".//{*}documentation").split())
    assert "irrun's own" in header
    assert "OpenVINO publishes no XML Schema" in header


def _sub_graph_model(ov):
    """A Loop, an If and a TensorIterator (port maps, back edges, bodies)."""
    import openvino.opset8 as o8

    x = o8.parameter([2, 3, 4], np.float32, name="x")
    h = o8.parameter([1, 4], np.float32, name="h")
    c = o8.parameter([], bool, name="c")
    # TensorIterator: slices x along axis 0, carries h around a back edge.
    bx, bh = o8.parameter([1, 3, 4], np.float32), o8.parameter([1, 4], np.float32)
    step = o8.add(o8.reduce_sum(bx, o8.constant(np.array([1], np.int64)), False), bh)
    ti = o8.tensor_iterator()
    ti.set_body(ov.Model([o8.result(step)], [bx, bh]))
    ti.set_sliced_input(bx, x.output(0), 0, 1, 1, -1, 0)
    ti.set_merged_input(bh, h.output(0), step.output(0))
    ti_out = ti.get_iter_value(step.output(0), -1)
    # Loop: three iterations of a Relu, with an execution condition.
    lx = o8.parameter([1, 4], np.float32)
    relu = o8.relu(lx)
    loop = o8.loop(o8.constant(np.int64(3)), o8.constant(True, dtype=bool))
    loop.set_function(ov.Model([o8.result(relu), o8.result(o8.constant(True, dtype=bool))], [lx]))
    loop.set_invariant_input(lx, ti_out)
    loop.set_special_body_ports([-1, 1])
    loop_out = loop.get_iter_value(relu.output(0), -1)
    # If: Relu or Sigmoid.
    tp, ep = o8.parameter([1, 4], np.float32), o8.parameter([1, 4], np.float32)
    then_body = ov.Model([o8.result(o8.relu(tp))], [tp])
    else_body = ov.Model([o8.result(o8.sigmoid(ep))], [ep])
    branch = o8.if_op(c)
    branch.set_then_body(then_body)
    branch.set_else_body(else_body)
    branch.set_input(loop_out, tp, ep)
    out = branch.set_output(then_body.get_results()[0], else_body.get_results()[0])
    return ov.Model([o8.result(out)], [x, h, c], "sub_graphs")


def _conv_model(ov):
    """Convolution, Concat, Softmax, TopK; f32 weights saved as f16 with a decompressing
    Convert (layer rt_info); dynamic dims (-1); u8/i32/i64/boolean ports; net rt_info."""
    import openvino.opset8 as o8
    import openvino.opset13 as o13

    x = o8.parameter([-1, 3, 8, 8], np.float32, name="x")
    w = o8.constant(np.full((4, 3, 3, 3), 0.5, np.float32))
    conv = o8.convolution(x, w, [1, 1], [1, 1], [1, 1], [1, 1])
    cat = o8.concat([conv, o8.relu(conv)], 1)
    soft = o8.softmax(cat, 1)
    topk = o8.topk(soft, o8.constant(np.int64(2)), 1, "max", "value", "i32")
    mask = o13.greater(topk.output(0), o8.constant(np.float32(0.1)))
    small_in = o8.parameter([2], np.uint8, name="small")
    small = o8.convert(small_in, "i64")
    results = [topk.output(0), topk.output(1), mask, small]
    model = ov.Model([o8.result(r) for r in results], [x, small_in], "conv")
    model.set_rt_info("pytorch", ["conversion_parameters", "framework"])
    model.set_rt_info("2024.0", ["MO_version"])
    return model


def _preprocessing_model(ov):
    """A layout and an element type set by the pre-processor: per-port rt_info."""
    import openvino.opset8 as o8
    from openvino.preprocess import PrePostProcessor

    x = o8.parameter([1, 3, 4, 4], np.float32, name="x")
    ppp = PrePostProcessor(ov.Model([o8.result(o8.relu(x))], [x]))
    ppp.input().tensor().set_layout(ov.Layout("NHWC")).set_element_type(ov.Type.u8)
    ppp.input().model().set_layout(ov.Layout("NCHW"))
    return ppp.build()


@pytest.mark.parametrize("make", [_sub_graph_model, _conv_model, _preprocessing_model],
                         ids=["sub-graphs", "conv-f16-rt_info", "preprocessing"])  # fmt: skip
def test_ir_written_by_openvino_is_valid(ov, tmp_path: Path, make):
    path = tmp_path / "model.xml"
    ov.save_model(make(ov), str(path))  # compresses f32 constants to f16 by default
    text = path.read_text()
    assert check(path) == []
    assert openvino_reads(ov, path)
    if make is _sub_graph_model:
        assert all(tag in text for tag in ("<port_map>", "<back_edges>", "<then_body>"))
    if make is _conv_model:
        assert '<attribute name="decompression"' in text and "<MO_version" in text
    if make is _preprocessing_model:
        assert re.search(r"</dim>\s*<rt_info>\s*<attribute name=\"layout\"", text)


V10_LEGACY_SECTIONS = """
	<meta_data>
		<MO_version value="2021.4.2-3976-0943ed67223-refs/pull/539/head" />
		<cli_parameters>
			<input_shape value="[1,3,16,16]" />
			<unset unset_cli_parameters="batch, disable_fusing" />
		</cli_parameters>
	</meta_data>
	<quantization_parameters>
		<config>{
		'compression': {'algorithms': [{'name': 'DefaultQuantization'}]}
		}</config>
		<version value="1.0" />
	</quantization_parameters>
"""

VALID_VARIANTS = {
    "v10": lambda t: t.replace('<net name="pooling_chain" version="11">', '<net name="pooling_chain" version="10">'),
    # IR v10 as the Model Optimizer wrote it: legacy sections instead of <rt_info>.
    "v10-legacy-sections": lambda t: re.sub(
        r"\t<rt_info>.*</rt_info>\n", V10_LEGACY_SECTIONS.lstrip("\n"), t, flags=re.S
    ).replace('version="11"', 'version="10"', 1),
    "v11-nested-rt_info": lambda t: t.replace(
        "\t</rt_info>",
        '\t\t<MO_version value="2023.0" />\n\t\t<conversion_parameters>\n'
        '\t\t\t<framework value="pytorch" />\n\t\t</conversion_parameters>\n\t</rt_info>',
    ),
    "layer-rt_info": lambda t: t.replace(
        STEM_DATA,
        STEM_DATA + '\n\t\t\t<rt_info>\n\t\t\t\t<attribute name="fused_names" version="0" '
        'value="a,b" />\n\t\t\t\t<user_data name="k"><user_data name="n" value="1" />'
        "</user_data>\n\t\t\t</rt_info>",
    ),
    "children-in-any-order": lambda t: t.replace(STEM_DATA + "\n", "").replace(
        '\t\t</layer>\n\t\t<layer id="2"', f'\t\t\t{STEM_DATA}\n\t\t</layer>\n\t\t<layer id="2"', 1
    ),
    "edges-before-layers": lambda t: re.sub(
        r"(\t<layers>.*</layers>\n)(\t<edges>.*</edges>\n)", r"\2\1", t, flags=re.S
    ),
    "lower-case-precision": lambda t: t.replace('precision="FP32"', 'precision="f32"'),
    "other-precisions": lambda t: t.replace('precision="I64"', 'precision="i64"').replace(
        '<port id="0" precision="FP32">', '<port id="0" precision="u2">', 1
    ),  # the input port of stem_pool: OpenVINO ignores input precisions
    "dim-range": lambda t: t.replace("<dim>16</dim>", "<dim>1..16</dim>", 1),
    "dim-blanks": lambda t: t.replace("<dim>16</dim>", "<dim> 16 </dim>", 1),
    # OpenVINO reads unsigned integers allowing blanks and a plus sign before the digits.
    "unsigned-with-blanks": lambda t: t.replace(EDGE_0_1, EDGE_0_1.replace('"0" to', '" +0" to')),
    "extra-net-and-layer-attributes": lambda t: t.replace(
        'name="pooling_chain"', 'name="pooling_chain" batch="1"'
    ).replace('<layer id="1"', '<layer precision="FP32" id="1"'),
    "no-edges-no-rt_info": lambda t: re.sub(r"\t<edges>.*</rt_info>\n", "", t, flags=re.S),
}


@pytest.mark.parametrize("variant", VALID_VARIANTS, ids=str)
def test_valid_variants(tmp_path: Path, variant: str):
    text = VALID_VARIANTS[variant](DEMO_XML)
    assert text != DEMO_XML
    assert check(write_ir(tmp_path, text)) == []


# Without edges the structure is sound, but OpenVINO refuses a Result that has no input.
@pytest.mark.parametrize(
    "variant", [v for v in VALID_VARIANTS if v != "no-edges-no-rt_info"], ids=str
)
def test_openvino_reads_the_valid_variants(ov, tmp_path: Path, variant: str):
    assert openvino_reads(ov, write_ir(tmp_path, VALID_VARIANTS[variant](DEMO_XML)))


# --- broken IR -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    old: str  # text of pooling_chain.xml (a regular expression when regex=True) ...
    new: str  # ... replaced (once) by this
    at: tuple[str, ...]  # needles leading to the offending line in the new text (line_of)
    phrase: str  # in the message
    layer: LayerRef | None = None
    port: int | None = None
    openvino_refuses: bool = True  # False: the schema is stricter than OpenVINO here
    regex: bool = False

    def text(self) -> str:
        if self.regex:
            new, n = re.subn(self.old, self.new, DEMO_XML, count=1, flags=re.S)
        else:
            n = DEMO_XML.count(self.old)
            new = DEMO_XML.replace(self.old, self.new, 1)
        assert n >= 1, f"{self.old!r} is not in pooling_chain.xml"
        return new


STEM_LAYER = ('name="stem_pool"',)

CASES = [
    # <net> and its children
    Case("net-version-9", 'version="11"', 'version="9"', ("<net ",),
         '<net> attribute version="9" is not a supported IR version (expected 10 or 11)'),
    Case("net-without-version", ' version="11"', "", ("<net ",),
         "<net> is missing the mandatory attribute 'version'"),
    Case("root-not-net", r"<net (.*)</net>", r"<network \1</network>", ("<network",),
         "root element is <network>, expected <net>", regex=True),
    Case("namespaced-net", "<net ", '<net xmlns="urn:example" ', ("<net ",),
         "root element <net> is in the namespace 'urn:example', IR uses none",
         openvino_refuses=False),
    Case("layers-missing", r"\t<layers>.*</layers>\n", "", ("<net ",),
         "<net> has no <layers>", openvino_refuses=False, regex=True),
    Case("second-layers", "</layers>\n", "</layers>\n\t<layers />\n", ("</layers>", "<layers />"),
         "<net> has a second <layers> (first at line 3); OpenVINO reads only the first",
         openvino_refuses=False),
    Case("unknown-element-in-net", "\t<edges>", "\t<edgez />\n\t<edges>", ("<edgez",),
         "<edgez> is not allowed in <net> (expected layers, edges, rt_info, ",
         openvino_refuses=False),
    Case("layer-directly-in-net", "\t<edges>",
         '\t<layer id="9" name="x" type="Relu" version="opset1" />\n\t<edges>',
         ('<layer id="9"',), "<layer> is not allowed in <net>",
         layer=LayerRef("9", "x", "Relu", 1), openvino_refuses=False),
    Case("text-in-edges", "<edges>", "<edges>\n\t\tto do", ("<edges>",),
         '<edges> contains text "to do" (only elements are allowed in it)',
         openvino_refuses=False),
    # <layer>
    Case("missing-layer-id", '<layer id="1" ', "<layer ", STEM_LAYER,
         "<layer> is missing the mandatory attribute 'id'",
         layer=LayerRef("?", "stem_pool", "MaxPool", 8)),
    Case("layer-id-not-unsigned", '<layer id="1" ', '<layer id="-1" ', STEM_LAYER,
         '<layer> attribute id="-1" is not an unsigned integer',
         layer=LayerRef("-1", "stem_pool", "MaxPool", 8)),
    Case("missing-layer-type", ' type="MaxPool"', "", STEM_LAYER,
         "<layer> is missing the mandatory attribute 'type'",
         layer=LayerRef("1", "stem_pool", "?", opset="opset8")),
    Case("empty-layer-version", 'version="opset8"', 'version=""', STEM_LAYER,
         "<layer> attribute version is empty", layer=LayerRef("1", "stem_pool", "MaxPool")),
    Case("unknown-element-in-layer", STEM_DATA, STEM_DATA + "\n\t\t\t<blobs />", ("<blobs",),
         "<blobs> is not allowed in <layer> (expected data, input, output, rt_info, ",
         layer=STEM, openvino_refuses=False),
    Case("misspelled-output", r'<output>(\n\t\t\t\t<port id="1".*?)</output>',
         r"<outputs>\1</outputs>", ("<outputs>",), "<outputs> is not allowed in <layer>",
         layer=STEM, regex=True),  # OpenVINO then misses the output port of an edge
    Case("text-in-layer", STEM_DATA, STEM_DATA + "\n\t\t\tstray", STEM_LAYER,
         '<layer> contains text "stray"', layer=STEM, openvino_refuses=False),
    Case("data-with-content", STEM_DATA, STEM_DATA.replace(" />", "><kernel>3</kernel></data>"),
         ("<data strides",), "<data> must be empty, but contains <kernel>", layer=STEM,
         openvino_refuses=False),
    Case("second-input", "\t\t\t<output>\n\t\t\t\t<port id=\"1\" precision=\"FP32\">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t\t<dim>8</dim>",
         "\t\t\t<input />\n\t\t\t<output>\n\t\t\t\t<port id=\"1\" precision=\"FP32\">\n\t\t\t\t\t<dim>1</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t\t<dim>8</dim>",
         ("<input />",), "<layer> has a second <input> (first at line 17)", layer=STEM,
         openvino_refuses=False),
    Case("rt_info-attribute-without-version", STEM_DATA,
         STEM_DATA + '\n\t\t\t<rt_info><attribute name="fused_names" value="a" /></rt_info>',
         ("<rt_info><attribute",), "<attribute> is missing the mandatory attribute 'version'",
         layer=STEM, openvino_refuses=False),
    # <port> and <dim>
    Case("missing-port-id", '<port id="1" precision="FP32">', '<port precision="FP32">',
         ("<port precision",), "output <port> is missing the mandatory attribute 'id'",
         layer=STEM),
    Case("output-port-without-precision", '<port id="1" precision="FP32">', '<port id="1">',
         ('<port id="1">',), "output <port> is missing the mandatory attribute 'precision'",
         layer=STEM, port=1),
    Case("bad-precision", 'precision="FP32" names="image"', 'precision="FP33" names="image"',
         ('precision="FP33"',),
         '<port> attribute precision="FP33" is not an element type (expected FP32, f32, FP16',
         layer=IMAGE, port=0),
    Case("precision-is-case-sensitive", 'precision="FP32" names="image"',
         'precision="Fp32" names="image"', ('precision="Fp32"',),
         '<port> attribute precision="Fp32" is not an element type', layer=IMAGE, port=0),
    Case("bad-input-precision", '<input>\n\t\t\t\t<port id="0" precision="FP32">',
         '<input>\n\t\t\t\t<port id="0" precision="float">', ('precision="float"',),
         '<port> attribute precision="float" is not an element type', layer=STEM, port=0,
         openvino_refuses=False),
    Case("unknown-port-attribute", 'names="image"', 'names="image" layout="NCHW"',
         ('layout="NCHW"',), '<port> has an unknown attribute layout="NCHW"', layer=IMAGE,
         port=0, openvino_refuses=False),
    Case("dim-abc", "<dim>16</dim>", "<dim>abc</dim>", ("<dim>abc",),
         "<dim>abc</dim> is not a dimension (expected an integer >= -1 or a range a..b)",
         layer=IMAGE, port=0),
    Case("dim-below-minus-one", "<dim>16</dim>", "<dim>-2</dim>", ("<dim>-2",),
         "<dim>-2</dim> is not a dimension", layer=IMAGE, port=0),
    Case("dim-question-mark", "<dim>16</dim>", "<dim>?</dim>", ("<dim>?",),
         "<dim>?</dim> is not a dimension", layer=IMAGE, port=0),
    Case("element-in-port", "<dim>16</dim>", "<dim>16</dim><shape />", ("<shape",),
         "<shape> is not allowed in <port> (expected dim, rt_info)", layer=IMAGE, port=0,
         openvino_refuses=False),
    Case("dims-split-by-rt_info", "<dim>3</dim>", "<dim>3</dim><rt_info />", ("<dim>16",),
         "<dim> is not allowed here: a port's dims come together, before or after <rt_info>",
         layer=IMAGE, port=0, openvino_refuses=False),
    Case("second-port-rt_info", "<dim>16</dim>\n\t\t\t\t</port>",
         "<dim>16</dim>\n<rt_info />\n<rt_info />\n\t\t\t\t</port>", ("<rt_info />", "<rt_info />"),
         "<port> has a second <rt_info> (first at line 12); OpenVINO reads only the first",
         layer=IMAGE, port=0, openvino_refuses=False),
    # <edges>
    Case("edge-port-not-integer", EDGE_0_1, EDGE_0_1.replace('from-port="0"', 'from-port="0.5"'),
         ('from-port="0.5"',), '<edge> attribute from-port="0.5" is not an unsigned integer'),
    Case("edge-without-to-layer", EDGE_0_1, EDGE_0_1.replace(' to-layer="1"', ""),
         ('<edge from-layer="0" from-port="0" to-port',),
         "<edge> is missing the mandatory attribute 'to-layer'"),
    Case("edge-unknown-attribute", EDGE_0_1, EDGE_0_1.replace(" />", ' type="data" />'),
         ('type="data"',), '<edge> has an unknown attribute type="data"',
         openvino_refuses=False),
    Case("not-an-edge-in-edges", "<edges>", "<edges>\n\t\t<link />", ("<link",),
         "<link> is not allowed in <edges> (expected edge)", openvino_refuses=False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_broken_structure(tmp_path: Path, case: Case):
    text = case.text()
    (d,) = check(write_ir(tmp_path, text))
    assert (d.level, d.code) == ("error", "schema")
    assert d.location is not None and d.location.file == str(tmp_path / "bad.xml")
    assert d.location.line == line_of(text, *case.at)
    assert case.phrase in d.message
    assert "\n" not in d.message and "{" not in d.message.replace("{...}", "")
    assert d.layer == case.layer
    assert d.port == case.port


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_openvino_on_the_broken_structure(ov, tmp_path: Path, case: Case):
    """Where OpenVINO refuses too, and where the schema is stricter (see its header)."""
    assert openvino_reads(ov, write_ir(tmp_path, case.text())) != case.openvino_refuses


def test_every_finding_is_reported_in_file_order(tmp_path: Path):
    text = (
        DEMO_XML.replace('<layer id="1" ', "<layer ")
        .replace("<dim>16</dim>", "<dim>x</dim>", 1)
        .replace(EDGE_0_1, EDGE_0_1.replace('to-port="0"', 'to-port="first"'))
    )
    found = check(write_ir(tmp_path, text))
    assert [d.location.line for d in found] == [
        line_of(text, "<dim>x"), line_of(text, *STEM_LAYER), line_of(text, 'to-port="first"')
    ]
    assert str(found[0]) == (
        f"{tmp_path / 'bad.xml'}:{line_of(text, '<dim>x')}: error: layer 0 'image' "
        "(Parameter-v1) port 0: <dim>x</dim> is not a dimension (expected an integer >= -1 or "
        "a range a..b)"
    )


def test_errors_inside_a_body_name_the_inner_layer(ov, tmp_path: Path):
    path = tmp_path / "sub.xml"
    ov.save_model(_sub_graph_model(ov), str(path))
    text = path.read_text()
    needle = '<layer id="1" name="Relu_'
    inner = re.search(r'<layer id="1" name="(Relu_\d+)"', text).group(1)
    broken = text.replace(needle, '<layer id="one" name="Relu_', 1)
    (d,) = check(write_ir(tmp_path, broken, "sub"))
    assert d.location.line == line_of(broken, '<layer id="one"')
    assert d.layer == LayerRef("one", inner, "ReLU", 1)  # the type is written as ReLU
    assert d.message == '<layer> attribute id="one" is not an unsigned integer'


def test_schema_is_found_from_a_source_checkout(monkeypatch):
    # python -m pytest in the repository imports irrun from the checkout, where the
    # schema is not inside the package (it is installed as irrun.schemas).
    from irrun.ir import schema

    def no_package(name):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(schema, "files", no_package)
    assert schema._schema_bytes().startswith(b"<?xml")
