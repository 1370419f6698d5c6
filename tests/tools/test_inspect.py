"""``irrun inspect`` end to end, checked against what OpenVINO reads from the same files."""

from __future__ import annotations

import json
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

import irrun
from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = sorted((ROOT / "models").glob("*.xml"))
MODEL_IDS = [p.stem for p in MODELS]

# OpenVINO's class names for the IR types that are spelled differently.
OV_TYPES = {"Constant": "Const", "Relu": "ReLU", "Softmax": "SoftMax"}


def inspect(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["inspect", *map(str, args)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def inspect_text(capsys, *args: str) -> str:
    rc, out, err = inspect(capsys, *args)
    assert (rc, err) == (0, "")
    return out


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"


def inspect_json(capsys, *args: str) -> dict:
    rc, out, err = inspect(capsys, *args, "--json")
    assert (rc, err) == (0, "")
    return json.loads(out)


def dims(shape: ov.PartialShape) -> list:
    """OpenVINO's shape as inspect's JSON writes it."""
    return [d if isinstance(d, int) else str(d) for d in from_ov_shape(shape)]


def shape_text(tensor: dict) -> str:
    return f"{tensor['element_type']}[{','.join(map(str, tensor['shape']))}]"


def parse_text(text: str) -> dict[str, list[str]]:
    """inspect's text read back: its blocks (separated by blank lines) by their first word."""
    blocks = text.rstrip("\n").split("\n\n")
    sections = {"head": blocks[0].split("\n")}
    for block in blocks[1:]:
        lines = block.split("\n")
        sections[lines[0].split(":")[0]] = lines
    return sections


LAYER_ROW = re.compile(r"  (\S+)\s+(\S+)\s+(\S+)\s+(.*?)\s*->\s*(.*)$")
TENSOR = re.compile(r"[a-z0-9?]+\[[^\]]*\]\*?")


def layer_rows(text: str) -> list[dict]:
    """The layer table, each row split into id, name, op, input and output tensors, attributes."""
    section = parse_text(text)["layers"]
    rows = []
    for line in section[2:]:
        if line.startswith("  * "):
            continue
        m = LAYER_ROW.fullmatch(line)
        assert m, line
        lid, name, op, ins, rest = m.groups()
        outs = []
        while (t := TENSOR.match(rest)) is not None:
            outs.append(t.group())
            rest = rest[t.end():].lstrip(", ")
        rows.append({"id": lid, "name": name, "op": op, "inputs": TENSOR.findall(ins),
                     "outputs": outs, "attributes": rest.strip()})  # fmt: skip
    return rows


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_layers_are_those_openvino_reads(xml, capsys):
    report = inspect_json(capsys, xml)
    ov_model = ov.Core().read_model(xml)
    ops = ov_model.get_ordered_ops()
    assert len(report["layers"]) == len(ops)
    by_name = {layer["name"]: layer for layer in report["layers"]}
    for op in ops:
        layer = by_name[op.get_friendly_name()]
        info = op.get_type_info()
        assert layer["type"] == OV_TYPES.get(info.name, info.name)
        assert f"opset{layer['version']}" == info.version_id
        assert layer["op"] == f"{layer['type']}-v{layer['version']}"
        got_out = [(t["element_type"], t["shape"], t["inferred"]) for t in layer["outputs"]]
        want_out = [(o.get_element_type().get_type_name(), dims(o.get_partial_shape()), True)
                    for o in op.outputs()]  # fmt: skip
        if info.name == "Result":  # OpenVINO gives a Result an output; the IR does not
            want_out = []
        assert got_out == want_out, layer["name"]
        got_in = [(t["element_type"], t["shape"]) for t in layer["inputs"]]
        want_in = [(i.get_element_type().get_type_name(), dims(i.get_partial_shape()))
                   for i in op.inputs()]  # fmt: skip
        assert got_in == want_in, layer["name"]
        for tensor, port in zip(layer["inputs"], op.inputs(), strict=True):
            source = port.get_source_output()
            producer = by_name[source.get_node().get_friendly_name()]
            assert tensor["from"]["layer"] == producer["id"]
            # OpenVINO numbers a layer's outputs from 0; the IR's ports continue after inputs.
            assert producer["outputs"][source.get_index()]["port"] == tensor["from"]["port"]


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_text_lists_every_layer_as_the_json_does(xml, capsys):
    report = inspect_json(capsys, xml)
    rc, text, err = inspect(capsys, xml)
    assert (rc, err) == (0, "")
    rows = layer_rows(text)
    assert [(r["id"], r["name"], r["op"]) for r in rows] == [
        (layer["id"], layer["name"], layer["op"]) for layer in report["layers"]
    ]
    for row, layer in zip(rows, report["layers"], strict=True):
        assert row["inputs"] == [shape_text(t) for t in layer["inputs"]]
        assert row["outputs"] == [shape_text(t) for t in layer["outputs"]]
        for name, value in layer["attributes"].items():
            shown = (str(value).lower() if isinstance(value, bool)
                     else json.dumps(value, separators=(",", ":")).strip('"'))  # fmt: skip
            assert f"{name}={shown}" in row["attributes"].split(", ")
    head = text.split("\n")[0]
    assert head == (f"{report['name']}: {xml} (IR v{report['ir_version']}), "
                    f"weights {report['weights_file']}")  # fmt: skip
    counts = ", ".join(f"{k} ({n} layer{'s' * (n != 1)})" for k, n in report["opsets"].items())
    assert f"opsets: {counts}" in text.split("\n")
    assert text.rstrip("\n").split("\n")[-1].startswith("validate: valid")


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_header_opsets_and_io_are_those_of_the_file(xml, capsys):
    report = inspect_json(capsys, xml)
    root = etree.parse(str(xml)).getroot()
    assert report["ir_version"] == int(root.get("version"))
    assert report["name"] == root.get("name")
    assert report["opsets"] == dict(Counter(el.get("version") for el in root.iter("layer")))
    assert list(report["opsets"]) == sorted(report["opsets"], key=lambda s: int(s[5:]))
    model = irrun.load(xml)
    ov_model = ov.Core().read_model(xml)
    for specs, mine, theirs in ((report["inputs"], model.inputs, ov_model.inputs),
                                (report["outputs"], model.outputs, ov_model.outputs)):  # fmt: skip
        assert [(s["name"], tuple(s["names"]), tuple(s["shape"]), s["element_type"])
                for s in specs] == [
            (t.name, t.names, t.shape, t.element_type) for t in mine
        ]  # fmt: skip
        assert [(set(s["names"]), s["shape"], s["element_type"]) for s in specs] == [
            (set(o.get_names()), dims(o.get_partial_shape()),
             o.get_element_type().get_type_name()) for o in theirs
        ]  # fmt: skip
    text = inspect_text(capsys, xml)
    for title, specs in (("inputs", report["inputs"]), ("outputs", report["outputs"])):
        section = parse_text(text)[title]
        assert section[0] == f"{title}: {len(specs)}"
        assert [line.split(None, 2) for line in section[2:]] == [
            [s["name"], shape_text(s), ", ".join(s["names"]) or "-"] for s in specs
        ]


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_weights_are_the_consts_sizes_and_fill_the_bin(xml, capsys):
    report = inspect_json(capsys, xml)
    weights = report["weights"]
    consts = [op for op in ov.Core().read_model(xml).get_ordered_ops()
              if op.get_type_name() == "Constant"]  # fmt: skip
    bin_size = xml.with_suffix(".bin").stat().st_size
    assert weights["consts"] == len(consts)
    assert weights["bytes"] == sum(c.get_byte_size() for c in consts)
    # Each bundled model's .bin holds its constants one after the other, nothing else.
    assert weights["bytes"] == weights["bin_bytes"] == bin_size
    by_type: dict[str, dict[str, int]] = {}
    for c in consts:
        group = by_type.setdefault(c.get_element_type().get_type_name(),
                                   {"consts": 0, "elements": 0, "bytes": 0})  # fmt: skip
        group["consts"] += 1
        group["elements"] += int(np.prod(c.get_output_shape(0), dtype=np.int64))
        group["bytes"] += c.get_byte_size()
    assert weights["by_element_type"] == by_type
    assert weights["elements"] == sum(g["elements"] for g in by_type.values())
    text = inspect_text(capsys, xml)
    assert parse_text(text)["weights"][0] == (
        f"weights: {plural(len(consts), 'Const')}, {plural(weights['elements'], 'value')}, "
        f"{plural(weights['bytes'], 'byte')} ({xml.with_suffix('.bin')}: {plural(bin_size, 'byte')})"
    )


def test_the_demo_model_in_full(capsys, monkeypatch):
    """Hand-checked: the weights by type, a small constant's value, f16 decompression."""
    monkeypatch.chdir(ROOT)
    rc, text, _ = inspect(capsys, "models/demo.xml")
    assert rc == 0
    assert parse_text(text)["weights"][1:] == [
        "  f16  4 Consts  5370 values  10740 bytes",
        "  i64  2 Consts  4 values     32 bytes",
    ]
    rows = {r["name"]: r for r in layer_rows(text)}
    assert rows["Constant_58077"]["attributes"] == "offset=10096, size=16, value=[0,-1]"
    assert rows["Constant_58067"]["inputs"] == ["f16[16,3,3,3]"]
    assert rows["Constant_58067"]["outputs"] == ["f32[16,3,3,3]"]
    assert rows["pool1"]["attributes"] == (
        "kernel=[3,3], strides=[2,2], pads_begin=[1,1], pads_end=[1,1], auto_pad=explicit, "
        "rounding_type=floor"
    )
    assert rows["Reshape_58078"]["inputs"] == ["f32[1,32,1,1]", "i64[2]"]
    assert rows["Reshape_58078"]["outputs"] == ["f32[1,32]"]


@pytest.mark.parametrize("xml", MODELS, ids=MODEL_IDS)
def test_rt_info_is_what_openvino_reads(xml, capsys):
    report = inspect_json(capsys, xml)
    rt = ov.Core().read_model(xml).get_rt_info()
    # OpenVINO adds the IR version to what the file holds.
    assert report["rt_info"] == {k: rt[k].astype(str) for k in rt if k != "version"}


def test_nested_rt_info_is_shown_as_nested_lines(tmp_path, capsys):
    param = ov.opset1.parameter([1, 3], np.float32, name="x")
    model = ov.Model([ov.opset1.result(ov.opset1.relu(param))], [param], "rt")
    model.set_rt_info("pytorch", ["conversion_parameters", "framework"])
    model.set_rt_info("[1,3]", ["conversion_parameters", "input_shape"])
    model.set_rt_info("detection", ["model_info", "model_type"])
    model.set_rt_info("v", "a key with spaces")
    ov.save_model(model, tmp_path / "rt.xml")
    rc, text, _ = inspect(capsys, tmp_path / "rt.xml")
    assert rc == 0
    section = parse_text(text)["rt_info"]
    assert sorted(section[1:]) == sorted([
        f"  OpenVINO Runtime: {ov.get_version()}",
        "  a key with spaces: v",
        "  conversion_parameters:",
        "    framework: pytorch",
        "    input_shape: [1,3]",
        "  model_info:",
        "    model_type: detection",
    ])  # fmt: skip
    # In the file's order, each key under its parent.
    shown = "\n".join(section)
    assert "  conversion_parameters:\n    framework: pytorch\n    input_shape: [1,3]" in shown
    assert "  model_info:\n    model_type: detection" in shown
    assert inspect_json(capsys, tmp_path / "rt.xml")["rt_info"]["model_info"] == {
        "model_type": "detection"
    }


@pytest.mark.parametrize(
    ("name", "shapes"),
    [("pooling_chain", "image[2,3,32,32]"), ("demo", "[4,3,64,48]"),
     ("maxpool_example1", "input[1,1,5,7]")],
)  # fmt: skip
def test_shape_shows_the_shapes_openvino_infers_after_reshape(name, shapes, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    xml = f"models/{name}.xml"
    report = inspect_json(capsys, xml, "--shape", shapes)
    ov_model = ov.Core().read_model(xml)
    new_shape = re.search(r"\[(.*)\]", shapes).group(1).split(",")
    ov_model.reshape({ov_model.inputs[0]: ov.PartialShape([int(d) for d in new_shape])})
    ov_ops = {op.get_friendly_name(): op for op in ov_model.get_ordered_ops()}
    for layer in report["layers"]:
        op = ov_ops.get(layer["name"])
        if op is None:  # reshape may replace constants (of a Reshape's target, say)
            assert layer["type"] == "Const"
            continue
        ports = op.inputs() if layer["type"] == "Result" else op.outputs()
        tensors = layer["inputs"] if layer["type"] == "Result" else layer["outputs"]
        assert [t["shape"] for t in tensors] == [dims(p.get_partial_shape()) for p in ports]
        assert all(t["inferred"] for t in tensors)
    assert report["inputs"][0]["shape"] == [int(d) for d in new_shape]
    assert report["validation"] == {"errors": 0, "warnings": report["validation"]["warnings"]}
    text = inspect_text(capsys, xml, "--shape", shapes)
    assert text.split("\n")[1] == f"shapes: {report['shapes']}"
    assert report["shapes"].endswith(f"[{','.join(new_shape)}]")


def test_shape_that_breaks_a_layer_shows_what_could_be_inferred(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, text, err = inspect(capsys, "models/pooling_chain.xml", "--shape", "image[1,3,2,2]")
    assert (rc, err) == (0, "")
    rows = {r["name"]: r for r in layer_rows(text)}
    assert rows["stem_pool"]["outputs"] == ["f32[1,3,1,1]", "i32[1,3,1,1]"]
    # The declared dims are those of the old shapes: not shown as if they still held.
    assert rows["avg_pool"]["outputs"] == ["f32[...]*"]
    assert "  * not inferred (irrun validate says why): unknown after --shape" in text
    assert text.rstrip().split("\n")[-1] == (
        "validate: 1 error, 0 warnings (irrun validate models/pooling_chain.xml "
        "--shape 'image[1,3,2,2]' lists them)"
    )


def test_bad_shape_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    rc, out, err = inspect(capsys, "models/pooling_chain.xml", "--shape", "x[1,3,8,8]")
    assert (rc, out) == (2, "")
    assert err == "irrun: error: --shape: no input named 'x' (inputs: image)\n"


def _broken_copy(tmp_path: Path) -> Path:
    """pooling_chain with its AdaptiveMaxPool in opset7, which lacks it, and a bad dim."""
    text = (ROOT / "models/pooling_chain.xml").read_text()
    text = text.replace('type="AdaptiveMaxPool" version="opset8"',
                        'type="AdaptiveMaxPool" version="opset7"')  # fmt: skip
    xml = tmp_path / "bad.xml"
    xml.write_text(text)
    shutil.copy(ROOT / "models/pooling_chain.bin", tmp_path / "bad.bin")
    return xml


def test_a_model_with_errors_is_shown_as_far_as_it_can_be_read(tmp_path, capsys):
    xml = _broken_copy(tmp_path)
    rc, text, err = inspect(capsys, xml)
    assert (rc, err) == (0, "")
    rows = {r["name"]: r for r in layer_rows(text)}
    assert len(rows) == 7
    assert rows["head_pool"]["op"] == "AdaptiveMaxPool"  # then " (opset7)": one more column
    assert "AdaptiveMaxPool (opset7)" in text
    assert rows["avg_pool"]["outputs"] == ["f32[1,3,4,4]"]
    # Past the layer irrun cannot bind, the shapes are those the file declares.
    assert rows["pooled_result"]["inputs"] == ["f32[1,3,2,2]*"]
    assert "  * not inferred (irrun validate says why): as the file declares it" in text
    assert main(["validate", str(xml)]) == 1
    summary = capsys.readouterr().out.rstrip().split("\n")[-1]
    assert summary == f"{xml}: 1 error, 0 warnings; 1 info finding hidden: -v shows it"
    # The unused MaxPool indices are an info finding, not counted as a warning.
    assert text.rstrip().split("\n")[-1] == (
        f"validate: 1 error, 0 warnings (irrun validate {xml} lists them)"
    )
    report = inspect_json(capsys, xml)
    assert report["validation"] == {"errors": 1, "warnings": 0}
    head = next(layer for layer in report["layers"] if layer["name"] == "head_pool")
    assert head["version"] is None and head["opset"] == "opset7"
    assert head["problems"] == {"errors": 1, "warnings": 0}
    assert [t["inferred"] for t in head["outputs"]] == [False, False]


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, ": no such file"),
     ('<net name="x" version="11">\n<layers>\n</net>\n',
      ":3: malformed XML: Opening and ending tag mismatch: layers line 2 and net (column 7)"),
     ('<net name="x" version="7"><layers/></net>\n',
      ':1: <net> attribute version="7" is not a supported IR version (expected 10 or 11)')],
    ids=["missing", "malformed", "ir-version"],
)  # fmt: skip
def test_a_file_that_is_not_ir_is_one_error_line(tmp_path, capsys, content, message):
    xml = tmp_path / "m.xml"
    if content is not None:
        xml.write_text(content)
    for extra in ([], ["--json"]):
        rc, out, err = inspect(capsys, xml, *extra)
        assert (rc, out) == (1, "")
        assert err == f"irrun: error: {xml}{message}\n"


def test_python_m_irrun_inspect(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "inspect", "models/pooling_chain.xml", "--json"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    report = json.loads(proc.stdout)
    assert [layer["op"] for layer in report["layers"]] == [
        "Parameter-v1", "MaxPool-v8", "AvgPool-v14", "Const-v1", "AdaptiveMaxPool-v8",
        "Result-v1", "Result-v1",
    ]  # fmt: skip
    assert report["outputs"][1]["from"] == {"layer": "4", "port": 3}


def test_a_model_without_layers(tmp_path, capsys):
    xml = tmp_path / "empty.xml"
    xml.write_text('<net name="empty" version="10"><layers/></net>\n')
    assert inspect_text(capsys, xml).split("\n") == [
        f"empty: {xml} (IR v10), weights {tmp_path / 'empty.bin'}",
        "opsets: none",
        "", "inputs: 0",
        "", "outputs: 0",
        "", "layers: 0",
        "", f"weights: 0 Consts, 0 values, 0 bytes ({tmp_path / 'empty.bin'}: missing)",
        "", "rt_info: none",
        "", f"validate: 1 error, 0 warnings (irrun validate {xml} lists them)",
        "",
    ]  # fmt: skip


def test_a_stateful_models_variables(capsys):
    from irrun.tools.inspect import inspect_model

    report = inspect_model("models/running_sum.xml")
    assert report["variables"] == [{"name": "total", "read_by": ["2"], "assigned_by": ["4"],
                                    "shape": [1, 4], "element_type": "f32", "inferred": True}]
    assert inspect_model("models/demo.xml")["variables"] == []
    assert main(["inspect", "models/running_sum.xml"]) == 0
    text = capsys.readouterr().out
    assert "variables: 1\n  name   tensor    read by  assigned by\n  total  f32[1,4]  2        4\n" in text


# --- fitting a terminal ---------------------------------------------------------------------

LONG_LAYER = "encoder.layer.0.attention.output/aten::max_pool2d/MaxPool"
LONG_INPUT = "pixel_values/preprocessed/normalized/input"


@pytest.fixture
def long_names(tmp_path, monkeypatch) -> str:
    """A model whose pool and input have long names, as the current directory's long.xml."""
    from support.cli import net, parameter_layer, pool_layer, result_layer

    layers = [parameter_layer(0, "input", LONG_INPUT), pool_layer(1, LONG_LAYER, 2, 4, "pooled"),
              result_layer(2, "output_result", 2)]  # fmt: skip
    (tmp_path / "long.xml").write_text(net("long", layers, [(0, 0, 1, 0), (1, 1, 2, 0)]))
    monkeypatch.chdir(tmp_path)
    return "long.xml"


def on_a_terminal(monkeypatch, columns: int) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))  # shutil.get_terminal_size reads it first
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)


def test_on_a_terminal_long_names_are_elided_in_the_middle(long_names, capsys, monkeypatch):
    wide = inspect_text(capsys, long_names)  # not a terminal: whole names, for grep and diff
    assert wide == inspect_text(capsys, long_names, "--wide")
    assert max(map(len, wide.splitlines())) > 100
    on_a_terminal(monkeypatch, 100)
    text = inspect_text(capsys, long_names)
    assert max(map(len, text.splitlines())) <= 100
    lines = text.splitlines()
    # The inputs' table is 2 + 42 + 2 + 12 + 2 + 42 = 102 wide: the name loses what is
    # too much, keeping its first 19 and last 18 characters in 40; its tensor names stay.
    row = lines[lines.index("inputs: 1") + 2]
    assert row.split() == ["pixel_values/prepro...d/normalized/input", "f32[1,1,4,4]", LONG_INPUT]
    assert lines[lines.index("outputs: 1") + 2].split() == ["pooled", "f32[1,1,2,2]", "pooled"]
    layers = lines[lines.index("layers: 3") + 1 :][:4]
    assert [r.split()[:2] for r in layers] == [
        ["id", "name"], ["0", "input"], ["1", "encoder.l.../MaxPool"], ["2", "output_result"],
    ]  # fmt: skip
    # The shapes stay whole; the attributes, last, are cut at the end to the width.
    assert layers[2].split()[3:6] == ["f32[1,1,4,4]", "->", "f32[1,1,2,2]"]
    whole = next(line for line in wide.splitlines() if LONG_LAYER in line)
    cut, attributes = (r.split("f32[1,1,2,2]", 1)[1].strip() for r in (layers[2], whole))
    assert len(layers[2]) == 100 and cut.endswith("...") and len(cut) < len(attributes)
    assert attributes.startswith(cut.removesuffix("..."))
    # --wide shows everything whole on a terminal too.
    assert inspect_text(capsys, long_names, "--wide") == wide


def test_a_terminal_as_a_process(long_names):
    """`irrun inspect` with its stdout on a pseudo-terminal 100 columns wide."""
    import os
    import pty

    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "irrun", "inspect", long_names],
        stdout=follower, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert (proc.wait(timeout=60), proc.stderr.read()) == (0, b"")
    lines = b"".join(chunks).decode().replace("\r\n", "\n").splitlines()
    assert max(map(len, lines)) <= 100
    assert any(line.split()[:2] == ["1", "encoder.l.../MaxPool"] for line in lines), lines
