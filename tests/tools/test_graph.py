"""``irrun graph`` end to end: the DOT's structure, the pictures Graphviz draws from it, and
the failures (no Graphviz, dot failing, an output that cannot be written)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import openvino as ov
import pytest
from lxml import etree
from support.ov_shapes import from_ov_shape

from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "models").glob("*.xml"))
MODEL_IDS = [p.stem for p in MODELS]

HAVE_DOT = shutil.which("dot") is not None
needs_dot = pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def graph(capsys, *args) -> tuple[int, str, str]:
    rc = main(["graph", *map(str, args)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


# A small reader of the DOT irrun writes: one statement a line, IDs and values quoted.
QUOTED = r'"(?:[^"\\]|\\.)*"'
STATEMENT = re.compile(rf"\s*({QUOTED})(?:\s*->\s*({QUOTED}))?\s*\[(.*)\];")
ATTRIBUTE = re.compile(rf"(\w+)=({QUOTED}|[^,\s]+)")


def unquote(text: str) -> str:
    """A DOT quoted string's text: ``\\"`` is a quote, ``\\\\`` a backslash, ``\\n`` a new line."""
    assert text.startswith('"') and text.endswith('"'), text
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), text[1:-1])


def parse_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict]]]:
    """Nodes (id -> attributes) and edges (tail, head, attributes) of irrun's DOT."""
    lines = text.rstrip("\n").split("\n")
    assert re.fullmatch(rf"digraph {QUOTED} {{", lines[0]) and lines[-1] == "}"
    nodes: dict[str, dict[str, str]] = {}
    edges = []
    for line in lines[1:-1]:
        m = STATEMENT.fullmatch(line)
        if m is None:
            # Blank lines, the comments, the defaults and the legend's frame are all the rest.
            assert line == "" or line.lstrip().startswith(
                ("//", "graph ", "node ", "edge ", "subgraph ", "label=", "style=", "{ rank=", "}")
            ), line
            continue
        tail, head, attrs = m.groups()
        values = {k: unquote(v) if v.startswith('"') else v for k, v in ATTRIBUTE.findall(attrs)}
        for key in ("label", "tooltip"):  # Graphviz reads HTML entities in these
            if key in values:
                values[key] = html.unescape(values[key])
        if head is None:
            assert unquote(tail) not in nodes
            nodes[unquote(tail)] = values
        else:
            edges.append((unquote(tail), unquote(head), values))
    return nodes, edges


def ir_edges(xml: Path) -> list[tuple[str, str, str, str]]:
    root = etree.parse(str(xml)).getroot()
    return [(e.get("from-layer"), e.get("from-port"), e.get("to-layer"), e.get("to-port"))
            for e in root.iter("edge")]  # fmt: skip


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_dot_has_a_node_per_layer_and_an_edge_per_ir_edge(xml, capsys):
    rc, text, err = graph(capsys, xml, "--constants")
    assert (rc, err) == (0, "")
    nodes, edges = parse_dot(text)
    root = etree.parse(str(xml)).getroot()
    layers = {el.get("id"): el for el in root.iter("layer")}
    assert set(nodes) == set(layers)
    for lid, el in layers.items():
        label = nodes[lid]["label"].split("\n")
        assert label[0] == el.get("name")
        assert re.fullmatch(rf"{el.get('type')}-v\d+", label[1])
        assert all("=" in line for line in label[2:])
        assert nodes[lid]["tooltip"] == f"{xml}:{el.sourceline}"
    assert Counter((t, h) for t, h, _ in edges) == Counter((f, t) for f, _, t, _ in ir_edges(xml))


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_edge_labels_are_the_shapes_openvino_infers(xml, capsys):
    _, text, _ = graph(capsys, xml)
    nodes, edges = parse_dot(text)
    ov_model = ov.Core().read_model(xml)
    by_name = {op.get_friendly_name(): op for op in ov_model.get_ordered_ops()}
    name_of = {lid: attrs["label"].split("\n")[0] for lid, attrs in nodes.items()}
    for tail, head, attrs in edges:
        consumer = by_name[name_of[head]]
        # The edge into the consumer: the input fed by the tail's layer (one per pair here).
        [port] = [
            i
            for i in consumer.inputs()
            if i.get_source_output().get_node().get_friendly_name() == name_of[tail]
        ]
        shape = from_ov_shape(port.get_partial_shape())
        et = port.get_element_type().get_type_name()
        label = attrs["label"].split("\n")
        assert label[-1] == f"{et}[{','.join(map(str, shape))}]"
        producer = port.get_source_output().get_node()
        if producer.get_output_size() > 1:  # which of the producer's outputs it is
            assert len(label) == 2
        else:
            assert len(label) == 1


def test_dot_of_pooling_chain_in_full(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    _, text, _ = graph(capsys, "models/pooling_chain.xml", "--constants")
    nodes, edges = parse_dot(text)
    assert nodes["1"]["label"].split("\n") == [
        "stem_pool", "MaxPool-v8", "kernel=[3,3]", "strides=[2,2]", "dilations=[1,1]",
        "pads_begin=[1,1]", "pads_end=[1,1]", "auto_pad=explicit", "rounding_type=floor",
        "index_element_type=i32", "axis=0",
    ]  # fmt: skip
    assert nodes["3"]["label"] == "head_size\nConst-v1\noffset=0\nsize=16\nvalue=[2,2]"
    assert [(t, h, a["label"]) for t, h, a in edges] == [
        ("0", "1", "f32[1,3,16,16]"),
        ("1", "2", "port 1\nf32[1,3,8,8]"),
        ("2", "4", "f32[1,3,4,4]"),
        ("3", "4", "i64[2]"),
        ("4", "5", "pooled\nf32[1,3,2,2]"),
        ("4", "6", "indices\ni32[1,3,2,2]"),
    ]
    # By default the Const is a line in the box of the layer that uses it.
    _, text, _ = graph(capsys, "models/pooling_chain.xml")
    folded, folded_edges = parse_dot(text)
    assert set(folded) == set(nodes) - {"3"}
    assert folded["4"]["label"].split("\n") == [
        "head_pool", "AdaptiveMaxPool-v8", "index_element_type=i32", "head_size: i64[2] = [2,2]"
    ]  # fmt: skip
    assert folded_edges == [e for e in edges if e[0] != "3"]
    assert "  // 1 constant layer folded into the layers that use them (--constants draws them)" \
        in text.splitlines()  # fmt: skip


def test_dot_on_stdout_is_the_dot_file(tmp_path, capsys):
    _, text, _ = graph(capsys, MODELS[0])
    assert graph(capsys, MODELS[0], "-o", "-") == (0, text, "")
    for name, fmt in (("g.gv", ()), ("g.txt", ("--format", "dot"))):
        said = f"irrun: wrote the graph (DOT) to {tmp_path / name}\n"
        assert graph(capsys, MODELS[0], "-o", tmp_path / name, *fmt) == (0, "", said)
    assert (tmp_path / "g.gv").read_text() == text == (tmp_path / "g.txt").read_text()


def _odd_names(tmp_path: Path) -> tuple[Path, str]:
    """pooling_chain with a layer name holding quotes, backslashes, a Graphviz escape, a
    line break and markup."""
    name = 'avg "pool" \\N \\\\ <b>&amp;\nend'
    text = (ROOT / "models/pooling_chain.xml").read_text()
    escaped = name.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
    text = text.replace('name="avg_pool"', f'name="{escaped.replace(chr(10), "&#10;")}"')
    xml = tmp_path / "odd.xml"
    xml.write_text(text)
    shutil.copy(ROOT / "models/pooling_chain.bin", tmp_path / "odd.bin")
    return xml, name


def test_names_are_quoted_and_escaped(tmp_path, capsys):
    xml, name = _odd_names(tmp_path)
    rc, text, _ = graph(capsys, xml)
    assert rc == 0
    nodes, _ = parse_dot(text)
    # Shown as written, the line break as \n, as one line everywhere else in irrun.
    assert nodes["2"]["label"].split("\n")[0] == name.replace("\n", "\\n")


@needs_dot
def test_graphviz_reads_the_dot_as_irrun_wrote_it(tmp_path, capsys):
    xml, name = _odd_names(tmp_path)
    _, text, _ = graph(capsys, xml)
    done = subprocess.run(["dot", "-Tjson"], input=text, capture_output=True, text=True,
                          check=True)  # fmt: skip
    drawn = json.loads(done.stdout)
    assert {o["name"] for o in drawn["objects"]} == {str(i) for i in range(7) if i != 3}
    assert len(drawn["edges"]) == 5
    rc, _, _ = graph(capsys, xml, "-o", tmp_path / "odd.svg")
    assert rc == 0
    svg = etree.parse(str(tmp_path / "odd.svg")).getroot()
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert name.replace("\n", "\\n") in texts


@needs_dot
@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_svg_is_xml_with_every_layer_and_edge(xml, tmp_path, capsys):
    out = tmp_path / "graph.svg"
    assert graph(capsys, xml, "-o", out, "--constants") == (
        0,
        "",
        f"irrun: wrote the graph (SVG) to {out}\n",
    )
    svg = etree.parse(str(out)).getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"
    texts = {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    names = {el.get("name") for el in etree.parse(str(xml)).getroot().iter("layer")}
    assert names <= texts
    groups = Counter(g.get("class") for g in svg.iter("{http://www.w3.org/2000/svg}g"))
    assert groups["node"] == len(names)
    assert groups["edge"] == len(ir_edges(xml))
    assert [p.name for p in tmp_path.iterdir()] == ["graph.svg"]  # no temporary file left


@needs_dot
@pytest.mark.parametrize("xml", [ROOT / "models/demo.xml", ROOT / "models/pooling_chain.xml"],
                         ids=["demo", "pooling_chain"])  # fmt: skip
@pytest.mark.parametrize(("suffix", "magic"), [(".png", PNG_SIGNATURE), (".pdf", b"%PDF-")])
def test_png_and_pdf(xml, suffix, magic, tmp_path, capsys):
    out = tmp_path / f"graph{suffix}"
    kind = suffix[1:].upper()
    assert graph(capsys, xml, "-o", out) == (0, "", f"irrun: wrote the graph ({kind}) to {out}\n")
    assert out.read_bytes().startswith(magic)
    # --format wins over the name.
    other = tmp_path / "picture.bin"
    assert graph(capsys, xml, "-o", other, "--format", suffix[1:]) == (
        0, "", f"irrun: wrote the graph ({kind}) to {other}\n")  # fmt: skip
    assert other.read_bytes().startswith(magic)


@needs_dot
def test_svg_on_stdout(capsysbinary):
    assert main(["graph", str(MODELS[0]), "--format", "svg"]) == 0
    out = capsysbinary.readouterr().out
    assert etree.fromstring(out).tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf"])
def test_without_graphviz_a_picture_is_one_line_and_nothing_is_written(
    suffix, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("PATH", "")
    out = tmp_path / f"graph{suffix}"
    rc, stdout, err = graph(capsys, ROOT / "models/demo.xml", "-o", out)
    assert (rc, stdout) == (1, "")
    fmt = suffix[1:].upper()
    assert err == (
        f"irrun: error: drawing {fmt} needs Graphviz's dot program, which is not on PATH: "
        "install Graphviz (apt-get install graphviz) or write DOT (-o graph.dot)\n"
    )
    assert list(tmp_path.iterdir()) == []
    # DOT needs no Graphviz.
    said = f"irrun: wrote the graph (DOT) to {tmp_path / 'graph.dot'}\n"
    assert graph(capsys, ROOT / "models/demo.xml", "-o", tmp_path / "graph.dot") == (0, "", said)


def _fake_dot(tmp_path: Path, script: str) -> str:
    """A PATH on which ``dot`` is ``script``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"
    fake.write_text(f"#!/bin/sh\n{script}\n")
    fake.chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


def test_dot_failing_is_one_line_and_leaves_the_old_file(tmp_path, capsys, monkeypatch):
    path = _fake_dot(tmp_path, "cat >/dev/null; echo 'Error: <stdin>: syntax error in line 3' >&2; "
                               "echo 'more' >&2; exit 1")  # fmt: skip
    monkeypatch.setenv("PATH", path)
    out = tmp_path / "graph.svg"
    out.write_text("the old picture")
    rc, stdout, err = graph(capsys, MODELS[0], "-o", out)
    assert (rc, stdout) == (1, "")
    assert err == (f"irrun: error: {out}: Graphviz's dot failed: Error: <stdin>: syntax error "
                   "in line 3\n")  # fmt: skip
    assert out.read_text() == "the old picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "graph.svg"]


def test_dot_writing_nothing_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(_fake_dot(tmp_path, "cat >/dev/null")))
    rc, _, err = graph(capsys, MODELS[0], "-o", tmp_path / "g.png")
    assert rc == 1
    assert err == f"irrun: error: {tmp_path / 'g.png'}: Graphviz's dot failed (exit code 0)\n"
    assert not (tmp_path / "g.png").exists()


@pytest.mark.parametrize("suffix", [".svg", ".dot"])
def test_an_output_that_cannot_be_written_is_one_line(suffix, tmp_path, capsys):
    missing = tmp_path / "no" / f"graph{suffix}"
    rc, out, err = graph(capsys, MODELS[0], "-o", missing)
    assert (rc, out) == (1, "")
    assert err == f"irrun: error: {missing}: the output's directory does not exist\n"
    a_file = tmp_path / "file"
    a_file.write_text("")
    rc, _, err = graph(capsys, MODELS[0], "-o", a_file / f"graph{suffix}")
    assert rc == 1 and err.count("\n") == 1 and "irrun: error: " in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_directory_is_one_line(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        rc, _, err = graph(capsys, MODELS[0], "-o", locked / "graph.dot")
    finally:
        locked.chmod(0o700)
    assert rc == 1
    assert err == f"irrun: error: {locked / 'graph.dot'}: cannot write: Permission denied\n"


def test_an_unknown_extension_is_a_usage_error(tmp_path, capsys):
    rc, out, err = graph(capsys, MODELS[0], "-o", tmp_path / "graph.jpg")
    assert (rc, out) == (2, "")
    assert err == (
        f"irrun: error: -o {tmp_path / 'graph.jpg'}: cannot tell the format from the file name "
        "(known endings: .dot, .gv, .svg, .png, .pdf); add --format\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_model_with_errors_is_drawn_with_them_marked(tmp_path, capsys):
    text = (ROOT / "models/pooling_chain.xml").read_text()
    xml = tmp_path / "bad.xml"
    xml.write_text(text.replace('type="AdaptiveMaxPool" version="opset8"',
                                'type="AdaptiveMaxPool" version="opset7"'))  # fmt: skip
    shutil.copy(ROOT / "models/pooling_chain.bin", tmp_path / "bad.bin")
    rc, dot_text, err = graph(capsys, xml)
    assert (rc, err) == (0, "")
    nodes, edges = parse_dot(dot_text)
    assert len(nodes) == 6 and len(edges) == 5  # the Const in head_pool's box
    assert nodes["4"]["label"].split("\n") == [
        "head_pool",
        "AdaptiveMaxPool (opset7)",
        "index_element_type=i32",
        "head_size: i64[2] = [2,2]",
        "1 error (irrun validate)",
    ]
    assert nodes["4"]["color"] == "#cc0000"
    assert all("color" not in attrs for lid, attrs in nodes.items() if lid != "4")
    # Past it, the shapes are those the file declares, marked as such.
    assert [a["label"] for t, h, a in edges if t == "4"] == [
        "pooled\nf32[1,3,2,2]*",
        "indices\ni32[1,3,2,2]*",
    ]


def test_a_file_that_is_not_ir_is_one_line(tmp_path, capsys):
    rc, out, err = graph(capsys, tmp_path / "none.xml", "-o", tmp_path / "g.dot")
    assert (rc, out) == (1, "")
    assert err == f"irrun: error: {tmp_path / 'none.xml'}: no such file\n"
    assert list(tmp_path.iterdir()) == []


def test_shape_draws_the_new_shapes(capsys):
    _, text, _ = graph(capsys, ROOT / "models/pooling_chain.xml", "--shape", "image[2,3,32,32]")
    _, edges = parse_dot(text)
    assert [a["label"].split("\n")[-1] for _, _, a in edges] == [
        "f32[2,3,32,32]", "f32[2,3,16,16]", "f32[2,3,8,8]", "f32[2,3,2,2]", "i32[2,3,2,2]",
    ]  # fmt: skip


@needs_dot
def test_python_m_irrun_graph(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "graph", str(ROOT / "models/pooling_chain.xml"), "-o",
         str(tmp_path / "chain.svg")], capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"irrun: wrote the graph (SVG) to {tmp_path / 'chain.svg'}\n"
    svg = etree.parse(str(tmp_path / "chain.svg")).getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg"


# ------------------------------------------------------------------- constants, folded


DEMO_CONSTANTS = {"1", "2", "6", "7", "11", "13", "15", "16", "18", "19"}  # Consts, Converts


def test_weights_and_their_converts_are_lines_in_their_layers_box(capsys):
    """models/demo.xml stores its weights in f16, each decompressed by a Convert: the
    pair is a line in the box of the layer that uses it, as Netron draws it."""
    xml = ROOT / "models/demo.xml"
    _, text, _ = graph(capsys, xml)
    nodes, edges = parse_dot(text)
    root = etree.parse(str(xml)).getroot()
    layers = {el.get("id"): el for el in root.iter("layer")}
    assert {lid for lid, el in layers.items() if el.get("type") in ("Const", "Convert")} == (
        DEMO_CONSTANTS
    )
    assert set(nodes) == set(layers) - DEMO_CONSTANTS
    assert Counter((t, h) for t, h, _ in edges) == Counter(
        (f, t) for f, _, t, _ in ir_edges(xml) if f not in DEMO_CONSTANTS
    )
    lines = {lid: attrs["label"].split("\n") for lid, attrs in nodes.items()}
    # The name is the Convert's (the tensor the layer gets), the types the file's.
    assert lines["3"][-1] == "Constant_58067: f16->f32[16,3,3,3]"
    assert lines["8"][-1] == "Constant_58071: f16->f32[32,16,3,3]"
    assert lines["17"][-1] == "Constant_58080: f16->f32[10,32]"
    assert lines["20"][-1] == "Constant_58079: f16->f32[10]"
    assert lines["14"][-1] == "Constant_58077: i64[2] = [0,-1]"
    _, full, _ = graph(capsys, xml, "--constants")
    assert set(parse_dot(full)[0]) == set(layers)


def test_constants_that_are_outputs_or_shared(tmp_path, capsys):
    """A Const used by two layers is a line in both boxes; a Const (or its Convert) that
    is a model output stays a box, as does every layer on its way to the Result."""
    from openvino import opset1

    x = opset1.parameter([1, 3], np.float32, name="x")
    shared = opset1.constant(np.ones((1, 3), np.float32), name="shared")
    a = opset1.add(x, shared, name="a")
    b = opset1.multiply(a, shared, name="b")
    kept = opset1.constant(np.zeros(3, np.float16), name="kept")
    converted = opset1.convert(kept, "f32", name="converted")
    model = ov.Model([opset1.result(b), opset1.result(converted)], [x], "m")
    xml = tmp_path / "m.xml"
    ov.save_model(model, xml, compress_to_fp16=False)
    _, text, _ = graph(capsys, xml)
    nodes, _ = parse_dot(text)
    names = {attrs["label"].split("\n")[0]: attrs["label"].split("\n") for attrs in nodes.values()}
    assert "shared" not in names and {"kept", "converted"} <= set(names)
    assert names["a"][-1] == names["b"][-1] == "shared: f32[1,3]"


# -------------------------------------------------------------------------- --color-by

SCALE = ("#ffffb2", "#fecc5c", "#fd8d3c", "#f03b20", "#bd0026")
COMPUTED = {"3", "4", "5", "8", "9", "10", "12", "14", "17", "20", "21"}  # in demo.xml


def _legend(nodes: dict) -> list[tuple[str, str]]:
    keys = sorted((k for k in nodes if k.startswith("legend ")), key=lambda k: int(k.split()[1]))
    return [(nodes[k]["label"], nodes[k]["fillcolor"]) for k in keys]


def test_color_by_time_through_a_subprocess():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "irrun", "graph", str(ROOT / "models/demo.xml"),
         "--color-by", "time"],
        capture_output=True, text=True, env=env, check=False, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    nodes, _ = parse_dot(done.stdout)
    assert _legend(nodes) == [("< 1%", SCALE[0]), ("1% to 5%", SCALE[1]),
                              ("5% to 10%", SCALE[2]), ("10% to 25%", SCALE[3]),
                              (">= 25%", SCALE[4]), ("not timed", "#ffffff")]  # fmt: skip
    assert 'label="time per layer: share of ' in done.stdout
    # White text on the two darkest fills, black on the others.
    assert [nodes[f"legend {i}"].get("fontcolor") for i in range(6)] == [
        None, None, None, "#ffffff", "#ffffff", None]  # fmt: skip
    shares = {}
    for lid in COMPUTED:
        last = nodes[lid]["label"].split("\n")[-1]
        m = re.fullmatch(r"(\d+\.\d{3}) ms \((\d+\.\d)%\)", last)
        assert m, last
        share = float(m.group(2)) / 100
        shares[lid] = share
        # Its colour is its share's bin (a share printed at a bin's edge may round across).
        bins = (0.01, 0.05, 0.10, 0.25)
        near = {sum(share + d >= b for b in bins) for d in (-0.0005, 0.0005)}
        assert nodes[lid]["fillcolor"] in {SCALE[i] for i in near}, (lid, share)
    assert abs(sum(shares.values()) - 1) <= 0.0006 * len(shares)
    assert nodes["0"]["fillcolor"] == "#d9ead3" and nodes["22"]["fillcolor"] == "#fce5cd"


def test_color_by_error_against_the_reference_kernels(capsys):
    """Each computed layer's largest error is the one ``irrun compare --mark-all`` finds,
    and its colour the bin of that error."""
    import irrun
    from irrun.tools.compare import compare

    xml = ROOT / "models/demo.xml"
    inputs = ROOT / "models/demo.inputs.npz"
    rc, text, err = graph(capsys, xml, "--color-by", "error", "--input", inputs)
    assert (rc, err) == (0, "")
    nodes, _ = parse_dot(text)
    model = irrun.load(xml)
    with np.load(inputs) as f:
        feeds = dict(f)
    report = compare(model, feeds, backend="reference", mark_all=True)
    errors = {r.layer.id: r.max_abs for r in report.results}
    bins = (1e-6, 1e-5, 1e-4, 1e-3)
    for lid in COMPUTED:
        last = nodes[lid]["label"].split("\n")[-1]
        assert last == f"max abs error {errors[lid]:.2g}", (lid, last)
        want = "#b6d7a8" if errors[lid] == 0 else SCALE[sum(errors[lid] >= b for b in bins)]
        assert nodes[lid]["fillcolor"] == want
    assert _legend(nodes)[0] == ("0", "#b6d7a8") and _legend(nodes)[-1][0] == "not compared"
    assert "largest absolute error against irrun's reference kernels (--input)" in text


def test_color_by_error_of_exact_layers_is_zero(capsys):
    """Max pooling picks values, with no arithmetic: OpenVINO and irrun agree exactly
    (error 0, the first colour)."""
    pytest.importorskip("openvino")
    rc, text, err = graph(capsys, ROOT / "models/pooling_chain.xml", "--color-by", "error",
                          "--ref-backend", "openvino", "--seed", "3")  # fmt: skip
    assert (rc, err) == (0, "")
    nodes, _ = parse_dot(text)
    assert nodes["1"]["label"].split("\n")[-1] == "max abs error 0"
    assert nodes["1"]["fillcolor"] == "#b6d7a8"
    assert "against OpenVINO (random inputs, seed 3)" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ref-backend", "openvino"], "--ref-backend only applies with --color-by"),
        (["--seed", "1"], "--seed only applies with --color-by"),
        (["--color-by", "time", "--ref-backend", "openvino"],
         "--ref-backend only applies with --color-by error"),
        (["--color-by", "time", "--seed", "1", "--input", "models/demo.inputs.npz"],
         "--seed makes random inputs, but the inputs come from --input"),
        (["--color-by", "size"], "invalid choice: 'size'"),
    ],
)  # fmt: skip
def test_color_by_misuse_is_exit_2(args, message, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    try:
        rc = main(["graph", "models/demo.xml", *args])
    except SystemExit as exc:
        rc = exc.code
    captured = capsys.readouterr()
    assert (rc, captured.out) == (2, "")
    assert message in captured.err
