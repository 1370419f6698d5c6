"""Every kind of bad input gives one line naming the file, the line and the layer, and exit 1.

Broken IR files are made by editing the text of the bundled ``pooling_chain.xml`` (or by writing a
few bytes by hand) in a temporary directory; each case states the exact line of the
offending element and the message irrun prints for it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from lxml import etree
from support.cli import run_cli

import irrun
from irrun.cli import main
from irrun.ir import registry
from irrun.ir.xml_file import _parser

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO_XML = (MODELS / "pooling_chain.xml").read_text()
DEMO_BIN = (MODELS / "pooling_chain.bin").read_bytes()


def line_of(text: str, *needles: str) -> int:
    """1-based line of the last needle, each searched after the one before."""
    pos = 0
    for needle in needles:
        pos = text.index(needle, pos)
    return text.count("\n", 0, pos) + 1


def write_ir(
    directory: Path, xml: str | bytes, name: str = "bad", weights: bytes | None = DEMO_BIN
) -> Path:
    """``NAME.xml`` (and ``NAME.bin`` unless ``weights`` is None) in ``directory``."""
    path = directory / f"{name}.xml"
    if isinstance(xml, str):
        path.write_text(xml)
    else:
        path.write_bytes(xml)
    if weights is not None:
        path.with_suffix(".bin").write_bytes(weights)
    return path


def mutate(old: str, new: str, count: int = 1) -> str:
    assert DEMO_XML.count(old) >= count, f"{old!r} is not in pooling_chain.xml"
    return DEMO_XML.replace(old, new, count)




def assert_one_error(capsys, args: list[str], expected: str) -> None:
    """``irrun ARGS`` fails with exit 1, nothing on stdout, and exactly ``expected`` on stderr."""
    rc, out, err = run_cli(capsys, *args)
    assert (rc, out, err) == (1, "", f"irrun: error: {expected}\n")


# --- the IR file --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    old: str  # text of pooling_chain.xml ...
    new: str  # ... replaced by this
    at: tuple[str, ...]  # needles leading to the offending line (see line_of)
    message: str  # what follows "bad.xml:LINE: "
    exact: bool = True  # False: ``message`` is a prefix (the rest is the op's own wording)


EDGE_0_1 = '<edge from-layer="0" from-port="0" to-layer="1" to-port="0" />'
POOL = ("<layer id=\"1\" name=\"stem_pool\"",)
POOL_DATA = ('<data strides="2, 2" dilations',)
STEM = "layer 1 'stem_pool' (MaxPool-v8)"

CASES = [
    # Attributes: the line is the layer's <data>.
    Case("missing-attribute", ' kernel="3, 3"', "", POOL_DATA,
         f"{STEM}: attribute 'kernel' is required"),
    Case("bad-int-list", 'kernel="3, 3"', 'kernel="3, x"', POOL_DATA,
         f"{STEM}: attribute 'kernel'=\"3, x\": expected a comma-separated list of integers "
         "('x' is not an integer)"),
    Case("empty-field", 'kernel="3, 3"', 'kernel="3,,3"', POOL_DATA,
         f"{STEM}: attribute 'kernel'=\"3,,3\": expected a comma-separated list of integers "
         "(an empty field)"),
    Case("bad-enum", 'rounding_type="floor"', 'rounding_type="round"', POOL_DATA,
         f"{STEM}: attribute 'rounding_type'=\"round\": expected one of floor, ceil, ceil_torch"),
    Case("enum-not-trimmed", 'auto_pad="explicit"', 'auto_pad=" explicit"', POOL_DATA,
         f"{STEM}: attribute 'auto_pad'=\" explicit\": expected one of explicit, same_upper, "
         "same_lower, valid"),
    Case("bad-int", 'axis="0"', 'axis="zero"', POOL_DATA,
         f"{STEM}: attribute 'axis'=\"zero\": expected an integer"),
    Case("kernel-rank", 'kernel="3, 3"', 'kernel="3"', POOL_DATA, f"{STEM}: ", exact=False),
    Case("zero-stride", 'strides="2, 2" dilations', 'strides="0, 2" dilations',
         ('<data strides="0, 2" dilations',), f"{STEM}: ", exact=False),
    Case("bad-element-type", 'element_type="f32"', 'element_type="FP32"', ("<data shape=",),
         "layer 0 'image' (Parameter-v1): attribute 'element_type'=\"FP32\": expected an "
         "element type such as f32 or i64"),
    Case("bad-partial-shape", 'shape="1,3,16,16"', 'shape="1,3,x,16"', ("<data shape=",),
         "layer 0 'image' (Parameter-v1): attribute 'shape'=\"1,3,x,16\": expected a shape "
         "such as 1,3,?,224"),
    Case("const-missing-size", ' size="16"', "", ('<data element_type="i64"',),
         "layer 3 'head_size' (Const-v1): attribute 'size' is required"),
    # Ops and opsets: the line is the <layer>.
    # An op irrun does not support is named by its type and the opset the file gives.
    Case("unknown-op", 'type="MaxPool"', 'type="MaxPoolX"', POOL,
         "layer 1 'stem_pool' (MaxPoolX, opset8): op MaxPoolX (opset8) is not an op of any "
         "OpenVINO opset (did you mean MaxPool?)"),
    Case("unknown-opset", 'version="opset8"', 'version="opset99"', POOL,
         "layer 1 'stem_pool' (MaxPool, opset99): unsupported opset 'opset99' "
         f"(expected opset1 to opset{registry.LATEST_OPSET})"),
    Case("not-an-opset", 'version="opset8"', 'version="v8"', POOL,
         "layer 1 'stem_pool' (MaxPool, v8): unsupported opset 'v8' "
         f"(expected opset1 to opset{registry.LATEST_OPSET})"),
    Case("op-newer-than-opset", 'type="AdaptiveMaxPool" version="opset8"',
         'type="AdaptiveMaxPool" version="opset7"', ('name="head_pool"',),
         "layer 4 'head_pool' (AdaptiveMaxPool, opset7): opset7 has no op AdaptiveMaxPool "
         "(irrun supports AdaptiveMaxPool-v8 (opset8..", exact=False),
    # The structure check reports these; the edges that named the layer dangle now.
    Case("missing-layer-id", '<layer id="1" ', "<layer ", ('name="stem_pool"',),
         "layer ? 'stem_pool' (MaxPool-v8): <layer> is missing the mandatory attribute 'id' "
         "(and 2 more: run 'irrun validate')"),
    Case("missing-layer-version", 'type="MaxPool" version="opset8"', 'type="MaxPool"', POOL,
         "layer 1 'stem_pool' (MaxPool): <layer> is missing the mandatory attribute 'version'"),
    # Ports: the line is the <port> or the <dim>.
    Case("bad-dim", "<dim>8</dim>", "<dim>x</dim>", ("<dim>x</dim>",),
         f"{STEM} port 1: <dim>x</dim> is not a dimension "
         "(expected an integer >= -1 or a range a..b)"),
    Case("dim-below-minus-one", "<dim>8</dim>", "<dim>-2</dim>", ("<dim>-2</dim>",),
         f"{STEM} port 1: <dim>-2</dim> is not a dimension "
         "(expected an integer >= -1 or a range a..b)"),
    Case("output-without-precision", '<port id="1" precision="FP32">', '<port id="1">',
         ('<port id="1">',),
         f"{STEM} port 1: output <port> is missing the mandatory attribute 'precision'"),
    Case("bad-precision", '<port id="1" precision="FP32">', '<port id="1" precision="FP99">',
         ('precision="FP99"',),
         f'{STEM} port 1: <port> attribute precision="FP99" is not an element type (expected '
         "FP32, f32, FP16, f16, BF16, bf16, FP64, f64, I64, i64, I32, i32, I16, i16, I8, i8, "
         "...)"),
    Case("port-id-not-integer", '<port id="1" precision="FP32">',
         '<port id="one" precision="FP32">', ('<port id="one"',),
         f'{STEM}: <port> attribute id="one" is not an unsigned integer'),
    # Edges: the line is the <edge>.
    Case("edge-to-missing-layer", EDGE_0_1,
         '<edge from-layer="9" from-port="0" to-layer="1" to-port="0" />', ('from-layer="9"',),
         "edge from layer 9 port 0 to layer 1 port 0: there is no layer with id 9"),
    Case("edge-from-missing-port", EDGE_0_1,
         '<edge from-layer="0" from-port="5" to-layer="1" to-port="0" />', ('from-port="5"',),
         "layer 0 'image' (Parameter-v1): edge to layer 1 port 0 leaves output port 5, "
         "but the layer has output port 0"),
    Case("edge-to-missing-port", EDGE_0_1,
         '<edge from-layer="0" from-port="0" to-layer="1" to-port="7" />', ('to-port="7"',),
         f"{STEM}: edge from layer 0 port 0 enters input port 7, but the layer has input "
         "port 0 (and 1 more: run 'irrun validate')"),
    Case("edge-without-port", EDGE_0_1, '<edge from-layer="0" to-layer="1" to-port="0" />',
         ('<edge from-layer="0" to-layer',),
         "<edge> is missing the mandatory attribute 'from-port'"),
    Case("edge-port-not-integer", EDGE_0_1,
         '<edge from-layer="0" from-port="a" to-layer="1" to-port="0" />', ('from-port="a"',),
         '<edge> attribute from-port="a" is not an unsigned integer'),
    Case("port-fed-twice", '<edge from-layer="3" from-port="0" to-layer="4" to-port="1" />',
         '<edge from-layer="3" from-port="0" to-layer="4" to-port="0" />',
         ('<edge from-layer="3"',),
         "layer 4 'head_pool' (AdaptiveMaxPool-v8) port 0: input port 0 is fed by two edges "
         "(and 1 more: run 'irrun validate')"),
    Case("result-without-edge", '<edge from-layer="4" from-port="3" to-layer="6" to-port="0" />',
         "", ('name="indices_result"', '<port id="0"'),
         "layer 6 'indices_result' (Result-v1) port 0: input port 0 has no edge"),
    Case("duplicate-layer-id", '<layer id="2" ', '<layer id="1" ', ('name="avg_pool"',),
         "layer 1 'avg_pool' (AvgPool-v14): layer id 1 is used again (first at line 15) "
         "(and 2 more: run 'irrun validate')"),
    # Cycles: the line is the first layer of the cycle, and every layer in it is named.
    Case("cycle", EDGE_0_1, '<edge from-layer="2" from-port="1" to-layer="1" to-port="0" />',
         POOL, f"{STEM}: the graph has a cycle: layers 1 'stem_pool' -> 2 'avg_pool' -> "
         "1 'stem_pool'"),
    Case("cycle-of-three", EDGE_0_1,
         '<edge from-layer="4" from-port="2" to-layer="1" to-port="0" />', POOL,
         f"{STEM}: the graph has a cycle: layers 1 'stem_pool' -> 2 'avg_pool' -> "
         "4 'head_pool' -> 1 'stem_pool'"),
    Case("self-loop", EDGE_0_1, '<edge from-layer="1" from-port="1" to-layer="1" to-port="0" />',
         POOL, f"{STEM}: the graph has a cycle: layers 1 'stem_pool' -> 1 'stem_pool'"),
    # Shapes: an op whose shape rule fails is refused at load.
    Case("kernel-larger-than-input", 'kernel="3, 3"', 'kernel="30, 30"', POOL,
         f"{STEM}: kernel after dilation has size 30", exact=False),
    Case("parameter-without-shape", ' shape="1,3,16,16"', "", POOL,
         f"{STEM}: ", exact=False),
    # Weights: the line is the Const's <data>.
    Case("const-size-too-small", 'size="16"', 'size="8"', ('<data element_type="i64"',),
         "layer 3 'head_size' (Const-v1): size 8 bytes is too small for shape [2] of i64 "
         "(needs 16 bytes)"),
    Case("const-past-end-of-bin", 'offset="0" size="16"', 'offset="8" size="16"',
         ('<data element_type="i64"',),
         "layer 3 'head_size' (Const-v1): offset 8 + size 16 = 24 is past the end of bad.bin "
         "(16 bytes)"),
    Case("const-negative-offset", 'offset="0"', 'offset="-8"', ('<data element_type="i64"',),
         "layer 3 'head_size' (Const-v1): offset -8 and size 16 must not be negative"),
    # The document.
    Case("root-not-net", '<net name="pooling_chain" version="11">', '<network name="demo" version="11">',
         ("<network",), "root element is <network>, expected <net>"),
    Case("ir-version-9", '<net name="pooling_chain" version="11">', '<net name="pooling_chain" version="9">',
         ("<net ",), '<net> attribute version="9" is not a supported IR version '
         "(expected 10 or 11)"),
    Case("ir-version-12", '<net name="pooling_chain" version="11">', '<net name="pooling_chain" version="12">',
         ("<net ",), '<net> attribute version="12" is not a supported IR version '
         "(expected 10 or 11)"),
    Case("no-ir-version", '<net name="pooling_chain" version="11">', '<net name="demo">', ("<net ",),
         "<net> is missing the mandatory attribute 'version'"),
    Case("ir-version-not-a-number", '<net name="pooling_chain" version="11">',
         '<net name="pooling_chain" version="eleven">', ("<net ",),
         '<net> attribute version="eleven" is not a supported IR version (expected 10 or 11)'),
    Case("no-layers", "<layers>", "<stages>", ("<net ",), "<net> has no <layers>"),
    Case("tag-mismatch", "</output>", "</outptu>", ("</outptu>",),
         "malformed XML: Opening and ending tag mismatch: output line 6 and outptu (column 13)"),
    Case("undefined-entity", 'name="stem_pool"', 'name="&pool;"', ('name="&pool;"',),
         "malformed XML: Entity 'pool' not defined", exact=False),
]  # fmt: skip


def _broken(tmp_path: Path, case: Case) -> tuple[Path, int]:
    xml = DEMO_XML.replace(case.old, case.new, 1)
    if case.id == "root-not-net":
        xml = xml.replace("</net>", "</network>")
    if case.id == "no-layers":
        xml = xml.replace("</layers>", "</stages>")
    assert xml != DEMO_XML, case.id
    return write_ir(tmp_path, xml), line_of(xml, *case.at)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_ir_gives_one_line_with_file_line_and_layer(case, tmp_path, monkeypatch, capsys):
    _, line = _broken(tmp_path, case)
    monkeypatch.chdir(tmp_path)  # so that messages name the file as it was given
    rc, out, err = run_cli(capsys, "bad.xml")
    assert (rc, out) == (1, "")
    assert err.count("\n") == 1
    expected = f"irrun: error: bad.xml:{line}: {case.message}"
    if case.exact:
        assert err == expected + "\n"
    else:
        assert err.startswith(expected)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_load_raises_and_validate_reports_the_same_problem(case, tmp_path):
    path, line = _broken(tmp_path, case)
    with pytest.raises(irrun.IrrunError) as info:
        irrun.load(path)
    assert str(info.value).startswith(f"{path}:{line}: {case.message}")
    # validate never raises; it lists the same problem (without load's "and N more").
    message = str(info.value).split(" (and ")[0]
    errors = [d for d in irrun.validate(path) if d.level == "error"]
    assert message in [str(d.as_error()) for d in errors]
    # Printed, a finding says its level after the file and line.
    assert f"{path}:{line}: error: {message.split(': ', 1)[1]}" in [str(d) for d in errors]


def test_truncated_xml_names_the_last_line(tmp_path, monkeypatch, capsys):
    # Cut just after an opening <dim>: the parser runs out of data on that very line.
    cut = DEMO_XML.index("<dim>", DEMO_XML.index('name="avg_pool"')) + len("<dim>")
    write_ir(tmp_path, DEMO_XML[:cut])
    line = DEMO_XML.count("\n", 0, cut) + 1
    monkeypatch.chdir(tmp_path)
    assert_one_error(
        capsys, ["bad.xml"],
        f"bad.xml:{line}: malformed XML: Premature end of data in tag dim line {line} "
        f"(column {len(DEMO_XML[:cut].rsplit(chr(10), 1)[1]) + 1})",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "bad.xml: the file is empty, expected an OpenVINO IR <net> document"),
        (b"  \n\t\n", "bad.xml: the file is empty, expected an OpenVINO IR <net> document"),
        (bytes(range(256)) * 4, "bad.xml: binary data, not an IR .xml file"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "bad.xml: binary data, not an IR .xml file"),
        (b"hello, world\n",
         "bad.xml:1: malformed XML: Start tag expected, '<' not found (column 1)"),
        (b'<?xml version="1.0"?>\n',
         "bad.xml:2: malformed XML: Start tag expected, '<' not found (column 1)"),
    ],
    ids=["empty", "blank", "garbage", "png", "plain-text", "declaration-only"],
)  # fmt: skip
def test_not_an_ir_file(content, expected, tmp_path, monkeypatch, capsys):
    write_ir(tmp_path, content)
    monkeypatch.chdir(tmp_path)
    assert_one_error(capsys, ["bad.xml"], expected)


def test_weights_file_given_as_the_model(capsys):
    assert_one_error(
        capsys, [str(MODELS / "pooling_chain.bin")],
        f"{MODELS / 'pooling_chain.bin'}: binary data, not an IR .xml file "
        f"(the weights file? pass {MODELS / 'pooling_chain.xml'}: irrun reads IR as the .xml "
        "with its .bin beside it)",
    )  # fmt: skip


def test_missing_or_unreadable_model_file(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert_one_error(capsys, ["nope.xml"], "nope.xml: no such file")
    (tmp_path / "adir").mkdir()
    assert_one_error(capsys, ["adir"], "adir: is a directory, expected an IR .xml file")
    assert_one_error(capsys, ["."], ".: is a directory, expected an IR .xml file")


# --- the weights file ---------------------------------------------------------------------


HEAD_SIZE = "layer 3 'head_size' (Const-v1): "
# A missing weights file is one finding about the file, whatever the number of Consts.
NO_BIN = ("weights file {} does not exist (1 Const layer read from it; give its path with "
          "--weights, or weights= in Python)")  # fmt: skip


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (None, NO_BIN.format("bad.bin")),
        (b"", HEAD_SIZE + "offset 0 + size 16 = 16 is past the end of bad.bin (0 bytes)"),
        (DEMO_BIN[:8], HEAD_SIZE + "offset 0 + size 16 = 16 is past the end of bad.bin (8 bytes)"),
    ],
    ids=["missing", "empty", "short"],
)
def test_missing_or_short_bin(weights, message, tmp_path, monkeypatch, capsys):
    write_ir(tmp_path, DEMO_XML, weights=weights)
    line = line_of(DEMO_XML, '<data element_type="i64"')
    monkeypatch.chdir(tmp_path)
    assert_one_error(capsys, ["bad.xml"], f"bad.xml:{line}: {message}")


def test_weights_option_pointing_nowhere(tmp_path, monkeypatch, capsys):
    write_ir(tmp_path, DEMO_XML)
    monkeypatch.chdir(tmp_path)
    line = line_of(DEMO_XML, '<data element_type="i64"')
    assert_one_error(
        capsys, ["bad.xml", "--weights", "other.bin"], f"bad.xml:{line}: {NO_BIN.format('other.bin')}"
    )  # fmt: skip


# --- the XML parser is locked down --------------------------------------------------------

LAUGHS = "\n".join(
    [
        '<?xml version="1.0"?>',
        "<!DOCTYPE net [",
        ' <!ENTITY lol "lol">',
        *(
            f' <!ENTITY lol{i} "{f"&lol{i - 1};" * 10 if i > 2 else "&lol;" * 10}">'
            for i in range(2, 10)
        ),
        "]>",
        '<net name="&lol9;" version="11"><layers><layer id="0" name="&lol9;" type="Parameter" '
        'version="opset1">&lol9;</layer></layers></net>',
    ]
)


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text("TOPSECRET-CONTENT")
    return path


def _xxe_documents(secret: Path) -> dict[str, str]:
    url = secret.resolve().as_uri()
    return {
        "billion-laughs": LAUGHS,
        "external-entity-in-attribute":
            f'<?xml version="1.0"?>\n<!DOCTYPE net [ <!ENTITY x SYSTEM "{url}"> ]>\n'
            '<net name="&x;" version="11"><layers/></net>\n',
        "external-entity-in-text":
            f'<?xml version="1.0"?>\n<!DOCTYPE net [ <!ENTITY x SYSTEM "{url}"> ]>\n'
            '<net version="11"><layers/><rt_info><info name="a">&x;</info></rt_info></net>\n',
        "external-dtd":
            f'<?xml version="1.0"?>\n<!DOCTYPE net SYSTEM "{url}">\n'
            '<net version="11"><layers/></net>\n',
        "parameter-entity":
            f'<?xml version="1.0"?>\n<!DOCTYPE net [ <!ENTITY % p SYSTEM "{url}"> %p; ]>\n'
            '<net version="11"><layers/></net>\n',
        "after-comment-and-bom":
            "\ufeff<?xml version=\"1.0\"?>\n<!-- <net> -->\n<!DOCTYPE net [\n"
            f'<!ENTITY x SYSTEM "{url}"> ]>\n<net name="&x;" version="11"><layers/></net>\n',
    }  # fmt: skip


DOCTYPE_REFUSED = "document type declarations (<!DOCTYPE>, entities) are not allowed in IR files"


@pytest.mark.parametrize(
    "kind",
    ["billion-laughs", "external-entity-in-attribute", "external-entity-in-text",
     "external-dtd", "parameter-entity", "after-comment-and-bom"],
)  # fmt: skip
def test_doctype_is_refused_and_nothing_is_expanded_or_read(kind, secret, monkeypatch, capsys):
    doc = _xxe_documents(secret)[kind]
    path = write_ir(secret.parent, doc.encode("utf-8"), weights=None)
    monkeypatch.chdir(secret.parent)
    line = line_of(doc, "<!DOCTYPE")
    assert_one_error(capsys, ["bad.xml"], f"bad.xml:{line}: {DOCTYPE_REFUSED}")
    rc, out, _ = run_cli(capsys, "validate", "bad.xml")
    assert rc == 1
    assert out.splitlines()[0] == f"bad.xml:{line}: error: {DOCTYPE_REFUSED}"
    assert "TOPSECRET" not in out and "lollol" not in out
    with pytest.raises(irrun.IrrunError, match="not allowed"):
        irrun.load(path)


def test_doctype_in_utf16_is_refused(secret, monkeypatch, capsys):
    doc = _xxe_documents(secret)["external-entity-in-attribute"]
    doc = doc.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>')
    write_ir(secret.parent, doc.encode("utf-16"), weights=None)
    monkeypatch.chdir(secret.parent)
    assert_one_error(capsys, ["bad.xml"], f"bad.xml:2: {DOCTYPE_REFUSED}")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a POSIX named pipe")
def test_external_entity_file_is_never_opened(tmp_path):
    # Opening a named pipe for reading blocks until a writer comes, and none ever does:
    # if irrun opened the entity's file at all, this run would hang until the timeout.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    doc = (
        f'<?xml version="1.0"?>\n<!DOCTYPE net [ <!ENTITY x SYSTEM "{fifo.as_uri()}"> ]>\n'
        '<net version="11"><layers/><rt_info><info name="a">&x;</info></rt_info></net>\n'
    )
    path = write_ir(tmp_path, doc, weights=None)
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert proc.stderr == f"irrun: error: {path}:2: {DOCTYPE_REFUSED}\n"


def test_parser_itself_expands_and_fetches_nothing(secret):
    # Defence in depth, should a DOCTYPE ever get past the prolog check.
    doc = (
        f'<?xml version="1.0"?>\n<!DOCTYPE net [ <!ENTITY x SYSTEM "{secret.as_uri()}">\n'
        '<!ENTITY lol "lol"> <!ENTITY lol2 "&lol;&lol;&lol;&lol;"> ]>\n'
        '<net version="11"><a>&x;</a><b>&lol2;</b></net>'
    )
    root = etree.fromstring(doc.encode(), _parser())
    text = etree.tostring(root, encoding="unicode")
    assert "TOPSECRET" not in text
    assert "lollol" not in text
    assert root.find("a").text is None


# --- inputs -------------------------------------------------------------------------------

IMAGE = np.zeros((1, 3, 16, 16), np.float32)


@pytest.fixture
def inputs_dir(tmp_path, monkeypatch):
    """The demo model and a set of good and bad input files, in the current directory."""
    write_ir(tmp_path, DEMO_XML, name="pooling_chain")
    np.save(tmp_path / "good.npy", IMAGE)
    np.save(tmp_path / "f64.npy", IMAGE.astype(np.float64))
    np.save(tmp_path / "i32.npy", IMAGE.astype(np.int32))
    np.save(tmp_path / "small.npy", IMAGE[:, :, :8, :8])
    np.save(tmp_path / "rank3.npy", IMAGE[0])
    np.save(tmp_path / "object.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "junk.npy").write_bytes(b"this is not numpy")
    (tmp_path / "truncated.npy").write_bytes((tmp_path / "good.npy").read_bytes()[:300])
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    np.savez(tmp_path / "good.npz", image=IMAGE)
    np.savez(tmp_path / "wrong_key.npz", img=IMAGE)
    (tmp_path / "adir").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


PARAM_LINE = line_of(DEMO_XML, 'name="image" type="Parameter"')
IMAGE_REF = f"pooling_chain.xml:{PARAM_LINE}: layer 0 'image' (Parameter-v1)"

INPUT_CASES = {
    "wrong-name": (["-i", "img=good.npy"],
                   "--input img=good.npy: no input named 'img' (inputs: image)"),
    "wrong-npz-key": (["-i", "wrong_key.npz"],
                      "wrong_key.npz: array 'img' is not an input of pooling_chain.xml (inputs: image)"),
    "npz-lacks-name": (["-i", "image=wrong_key.npz"],
                       "wrong_key.npz: no array 'image' in it (it has img)"),
    "wrong-dtype-f64": (["-i", "f64.npy"],
                        f"{IMAGE_REF}: input 'image' has element type f64, expected f32 "
                        "(numpy float32)"),
    "wrong-dtype-i32": (["-i", "image=i32.npy"],
                        f"{IMAGE_REF}: input 'image' has element type i32, expected f32 "
                        "(numpy float32)"),
    "wrong-shape": (["-i", "small.npy"],
                    f"{IMAGE_REF}: input 'image' has shape [1,3,8,8], expected [1,3,16,16]"),
    "wrong-rank": (["-i", "rank3.npy"],
                   f"{IMAGE_REF}: input 'image' has shape [3,16,16], expected [1,3,16,16]"),
    "not-numpy": (["-i", "junk.npy"], "junk.npy: not a .npy or .npz file (no NumPy or zip header)"),
    "truncated-npy": (["-i", "truncated.npy"], "truncated.npy: cannot read as .npy or .npz: "),
    "pickled-objects": (["-i", "object.npy"], "object.npy: cannot read as .npy or .npz: "
                        "Object arrays cannot be loaded when allow_pickle=False"),
    "broken-npz": (["-i", "junk.npz"], "junk.npz: cannot read as .npy or .npz: "),
    "missing-file": (["-i", "nothere.npy"], "nothere.npy: no such input file"),
    "directory": (["-i", "adir"], "adir: is a directory, expected a .npy or .npz file"),
}  # fmt: skip


@pytest.mark.parametrize(("args", "message"), INPUT_CASES.values(), ids=INPUT_CASES.keys())
def test_bad_input_gives_one_line(args, message, inputs_dir, capsys):
    rc, out, err = run_cli(capsys, "pooling_chain.xml", *args, "-o", "out.npz")
    assert (rc, out) == (1, "")
    assert err.startswith(f"irrun: error: {message}")
    assert err.count("\n") == 1
    assert not (inputs_dir / "out.npz").exists()


def test_input_given_twice_is_misuse(inputs_dir, capsys):
    rc, out, err = run_cli(capsys, "pooling_chain.xml", "-i", "good.npy", "-i", "image=good.npy")
    assert (rc, out) == (2, "")
    assert err == (
        "irrun: error: input 'image' is given twice: by --input good.npy and by --input "
        "image=good.npy\n"
    )


# --- no partial output --------------------------------------------------------------------


def _listing(directory: Path) -> set[str]:
    return {p.name for p in directory.iterdir()}


@pytest.mark.parametrize(
    "args",
    [["-i", "small.npy"], ["-i", "junk.npy"], ["--weights", "nothere.bin"]],
    ids=["bad-input", "unreadable-input", "missing-weights"],
)
def test_failed_run_leaves_no_output_file(args, inputs_dir, capsys):
    before = _listing(inputs_dir)
    rc, _, _ = run_cli(capsys, "pooling_chain.xml", *args, "-o", "out.npz")
    assert rc == 1
    assert _listing(inputs_dir) == before
    # An existing output is left as it was.
    (inputs_dir / "out.npz").write_bytes(b"previous")
    rc, _, _ = run_cli(capsys, "pooling_chain.xml", *args, "-o", "out.npz")
    assert rc == 1
    assert (inputs_dir / "out.npz").read_bytes() == b"previous"
    assert _listing(inputs_dir) == before | {"out.npz"}


def test_failure_while_writing_leaves_nothing_behind(inputs_dir, capsys, monkeypatch):
    (inputs_dir / "out.npz").write_bytes(b"previous")
    before = _listing(inputs_dir)

    def half_write(file, arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(irrun.tools.common, "write_npz", half_write)
    assert_one_error(
        capsys, ["pooling_chain.xml", "-o", "out.npz"], "out.npz: cannot write: No space left on device"
    )
    assert _listing(inputs_dir) == before
    assert (inputs_dir / "out.npz").read_bytes() == b"previous"


def test_output_path_that_cannot_be_written(inputs_dir, capsys):
    assert_one_error(capsys, ["pooling_chain.xml", "-o", "adir"],
                     "adir: is a directory, expected a file name such as out.npz")
    assert_one_error(capsys, ["pooling_chain.xml", "-o", "nodir/out.npz"],
                     "nodir/out.npz: the output's directory does not exist")
    assert _listing(inputs_dir / "adir") == set()


# --- the process: exit codes, one line, no traceback unless --debug -----------------------


def _irrun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "irrun", *args], capture_output=True, text=True, cwd=cwd,
        timeout=120,
    )  # fmt: skip


def test_process_prints_one_line_and_exits_1(tmp_path):
    bad = DEMO_XML.replace(' kernel="3, 3"', "")
    write_ir(tmp_path, bad)
    line = line_of(bad, '<data strides="2, 2" dilations')
    proc = _irrun("bad.xml", "-o", "out.npz", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr == (
        f"irrun: error: bad.xml:{line}: layer 1 'stem_pool' (MaxPool-v8): "
        "attribute 'kernel' is required\n"
    )
    assert not (tmp_path / "out.npz").exists()


def test_process_malformed_xml_and_bad_input(tmp_path):
    write_ir(tmp_path, DEMO_XML[: len(DEMO_XML) // 2], name="cut")
    write_ir(tmp_path, DEMO_XML, name="pooling_chain")
    np.save(tmp_path / "small.npy", IMAGE[:, :, :8])
    for args in (["cut.xml"], ["pooling_chain.xml", "-i", "small.npy"]):
        proc = _irrun(*args, cwd=tmp_path)
        assert proc.returncode == 1, args
        assert len(proc.stderr.splitlines()) == 1, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.startswith(f"irrun: error: {args[0]}:")


def test_debug_shows_the_traceback(tmp_path):
    write_ir(tmp_path, DEMO_XML.replace(' kernel="3, 3"', ""))
    proc = _irrun("bad.xml", "--debug", cwd=tmp_path)
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr
    assert "irrun.errors.IrrunError:" in proc.stderr
    assert "attribute 'kernel' is required" in proc.stderr


def test_debug_in_process_raises(tmp_path, monkeypatch):
    write_ir(tmp_path, DEMO_XML.replace(' kernel="3, 3"', ""))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(irrun.IrrunError, match="attribute 'kernel' is required"):
        main(["bad.xml", "--debug"])


def test_a_bug_in_irrun_is_still_one_line(tmp_path, monkeypatch, capsys):
    def broken_run(self, feeds, outputs=None, **options):
        raise RuntimeError("boom")

    write_ir(tmp_path, DEMO_XML, name="pooling_chain")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(irrun.Model, "_execute", broken_run)  # what irrun run calls
    rc, out, err = run_cli(capsys, "pooling_chain.xml", "-o", "out.npz")
    assert (rc, out) == (1, "")
    assert err == ("irrun: internal error: RuntimeError: boom (a bug in irrun: please report "
                   "it; --debug shows the traceback)\n")
    assert not (tmp_path / "out.npz").exists()
    with pytest.raises(RuntimeError, match="boom"):
        main(["pooling_chain.xml", "--debug"])


@pytest.mark.parametrize("version", ["10", "11"])
def test_ir_versions_10_and_11_are_read(version, tmp_path, capsys):
    path = write_ir(tmp_path, mutate('version="11"', f'version="{version}"'))
    # pooling_chain.xml leaves the indices of stem_pool unused: an info finding, no error.
    unused = f"{path}:32: info: {STEM} port 2: output port 2 is not used"
    expected = f"{unused}\n{path}: valid (1 info finding)\n"
    assert run_cli(capsys, "validate", str(path), "-v") == (0, expected, "")


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda: irrun.validate(MODELS / "pooling_chain.xml", shapes="image[1,3"),
         "--shape: cannot read 'image[1,3'"),
        (lambda: irrun.load(MODELS / "pooling_chain.xml").reshape("nosuch[1,3,4,4]"),
         "no input named 'nosuch'"),
    ],
    ids=["validate-bad-shapes", "reshape-unknown-input"],
)
def test_usage_error_is_public_and_catchable(call, says):
    assert "UsageError" in irrun.__all__
    with pytest.raises(irrun.UsageError, match=re.escape(says)):
        call()
    # A script catching every irrun problem catches this one too.
    assert issubclass(irrun.UsageError, irrun.IrrunError)
