"""``irrun compare --report``: the HTML page of a comparison, and the JSON it is drawn from.

The reference is OpenVINO's value of every layer of a converted torch model (read with the
openvino API here, not through irrun's mapping), with one intermediate tensor moved by a
known amount: that layer must top the table with that error, be the one red node of the
graph, and the JSON must hold the numbers the page shows.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import lxml.html as lxml_html
import numpy as np
import pytest
from lxml import etree

import irrun
from irrun.cli import main
from irrun.tools.compare_report import FAIL_COLOUR, TOP, render_html

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "tests" / "torch_models" / "resnet_stem.xml"
SHAPE = [1, 3, 64, 64]  # tests/torch_models/shapes.json
PERTURBED = "8"  # the output of layer 3 'aten::relu/Relu'
WHERE = (0, 5, 10, 20)
INJECTED = 0.25


def openvino_layer_values(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's value of every output of every layer but Parameters, Constants and Results,
    under irrun's name of that tensor (found by layer name and output index)."""
    ov = pytest.importorskip("openvino")
    from support.ov_oneop import CPU_CONFIG

    core = ov.Core()
    model = core.read_model(MODEL)
    model.reshape({model.inputs[0]: SHAPE})
    names = {ref.name: names for ref, _, names in _irrun_model().layers()}
    wanted = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() in ("Parameter", "Constant", "Result"):
            continue
        if op.get_friendly_name() not in names:
            continue  # made by OpenVINO's reshape (the flatten's shape, computed)
        for k in range(op.get_output_size()):
            wanted[names[op.get_friendly_name()][k]] = op.output(k)
    model.add_outputs(list(wanted.values()))
    compiled = core.compile_model(model, "CPU", CPU_CONFIG)
    values = compiled(feeds)
    by_source = {}
    for i, result in enumerate(model.get_results()):
        src = result.input_value(0)
        by_source[(src.get_node().get_friendly_name(), src.get_index())] = values[i]
    return {
        name: np.array(by_source[(out.get_node().get_friendly_name(), out.get_index())])
        for name, out in wanted.items()
    }


def _irrun_model() -> irrun.Model:
    model = irrun.load(MODEL)
    model.reshape({"x": SHAPE})
    return model


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """inputs.npz and ref.npz: OpenVINO's per-layer values, PERTURBED moved by INJECTED."""
    where = tmp_path_factory.mktemp("reference")
    feeds = {"x": np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32)}
    values = openvino_layer_values(feeds)
    values[PERTURBED] = values[PERTURBED].copy()
    values[PERTURBED][WHERE] += np.float32(INJECTED)
    np.savez(where / "inputs.npz", **feeds)
    np.savez(where / "ref.npz", **values)
    return where


@pytest.fixture(scope="module")
def written(reference, tmp_path_factory):
    """The report of the perturbed comparison: the HTML page, its JSON, and irrun's exit
    code, stdout and stderr."""
    out = tmp_path_factory.mktemp("report")
    args = [
        "compare", str(MODEL), "--shape", "x[1,3,64,64]", "--input",
        str(reference / "inputs.npz"), "--ref", str(reference / "ref.npz"), "--mark-all",
        "--report", str(out / "report.html"), "-o", str(out / "report.json"),
    ]  # fmt: skip
    return out, args


@pytest.fixture(scope="module")
def page(written):
    out, args = written
    rc = main(args)
    text = (out / "report.html").read_text(encoding="utf-8")
    data = json.loads((out / "report.json").read_text())
    return rc, text, lxml_html.fromstring(text), data


def computed_tensors() -> list[str]:
    return [
        name for ref, _, names in _irrun_model().layers()
        if ref.type not in ("Parameter", "Const", "Result") for name in names
    ]  # fmt: skip


def _value(text: str) -> float:
    return float(text)  # "inf" and "nan" included


# ------------------------------------------------------------------ the file


def test_the_report_is_one_self_contained_file(page, written):
    rc, text, _, _ = page
    out, _ = written
    assert rc == 1  # the perturbed tensor fails
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]
    assert text.startswith("<!DOCTYPE html>")
    for outside in ("http:", "https:", "src=", "<link", "<img", "@import", "<iframe"):
        assert outside not in text
    # The only references are to the page's own arrow marker.
    assert set(re.findall(r'(?:href|url)\(?="?([^")]*)', text)) <= {"#arrow"}
    assert set(re.findall(r"url\(([^)]*)\)", text)) == {"#arrow"}
    # Well-formed XML as well as HTML: every element closed, every name escaped.
    etree.fromstring(text.removeprefix("<!DOCTYPE html>").encode("utf-8"))


def test_the_plot_has_a_point_per_compared_tensor(page):
    _, _, doc, data = page
    names = computed_tensors()
    assert [t["name"] for t in data["tensors"]] == names
    for kind, key in (("abs", "max_abs"), ("rel", "max_rel")):
        (svg,) = doc.xpath(f"//svg[@class='plot {kind}']")
        points = svg.xpath(".//circle[contains(@class, 'point')]")
        assert [p.get("data-tensor") for p in points] == names
        assert [_value(p.get("data-value")) for p in points] == [
            _value(t[key]) for t in data["tensors"]
        ]
        failed = [p.get("data-tensor") for p in points if "fail" in p.get("class").split()]
        assert failed == [PERTURBED]
        colours = {p.get("data-tensor"): p.get("fill") for p in points}
        assert colours.pop(PERTURBED) == FAIL_COLOUR and FAIL_COLOUR not in colours.values()
        # Each point's tooltip names its layer.
        tooltip = points[names.index(PERTURBED)].findtext("title")
        assert "layer 3 'aten::relu/Relu' (ReLU-v1)" in tooltip


def table_rows(doc, kind: str) -> list[dict[str, str]]:
    (table,) = doc.xpath(f"//table[@class='{kind}']")
    heads = [th.text_content() for th in table.xpath(".//thead//th")]
    rows = []
    for tr in table.xpath(".//tbody/tr"):
        cells = tr.xpath("./td")
        row = dict(zip(heads, (c.text_content() for c in cells), strict=True))
        row.update({c.get("data-key"): c.get("data-value") for c in cells if c.get("data-key")})
        row["class"] = tr.get("class")
        rows.append(row)
    return rows


def test_the_worst_layer_is_the_perturbed_one_with_the_injected_error(page):
    doc = page[2]
    rows = table_rows(doc, "worst")
    assert len(rows) == min(TOP, len(computed_tensors()))
    first = rows[0]
    assert (first["tensor"], first["layer"], first["name"], first["op"]) == (
        PERTURBED, "3", "aten::relu/Relu", "ReLU-v1")  # fmt: skip
    assert first["shape"] == "[1, 16, 32, 32] float32" and first["class"] == "fail"
    assert first["result"].startswith("FAILED")
    # Only one element moved: its error is the largest, and irrun agrees with OpenVINO
    # elsewhere to far below the injected amount.
    assert _value(first["max_abs"]) == pytest.approx(INJECTED, abs=1e-5)
    assert _value(first["mean_abs"]) == pytest.approx(INJECTED / (16 * 32 * 32), abs=1e-6)
    assert all(r["class"] == "pass" for r in rows[1:])
    assert all(_value(r["max_abs"]) < 1e-5 for r in rows[1:])
    # The rest, worst first.
    errors = [_value(r["max_abs"]) for r in rows[1:]]
    assert errors == sorted(errors, reverse=True)


def test_the_json_has_the_numbers_of_the_table(page):
    _, _, doc, data = page
    rows = table_rows(doc, "worst")
    ranked = [data["tensors"][i] for i in data["worst_first"]]
    assert [r["tensor"] for r in rows] == [t["name"] for t in ranked][:TOP]
    for row, tensor in zip(rows, ranked, strict=False):
        for key in ("max_abs", "max_rel", "mean_abs", "mean_rel"):
            assert _value(row[key]) == _value(tensor[key])
        assert row["layer"] == tensor["layer"]["id"]
    assert data["worst_first"][0] == computed_tensors().index(PERTURBED)
    worst = ranked[0]
    assert worst["worst"] == list(WHERE) and worst["max_abs"] == pytest.approx(INJECTED, abs=1e-5)
    # Each tensor's place in the model's run order, and the layers' errors.
    assert [t["order"] for t in data["tensors"]] == sorted(t["order"] for t in data["tensors"])
    layer = data["layers"][worst["order"]]
    assert layer["id"] == "3" and layer["passed"] is False
    assert layer["max_abs"] == worst["max_abs"]
    # The page embeds the same JSON.
    (script,) = doc.xpath("//script[@id='irrun-compare-data']")
    assert json.loads(script.text) == data
    # The JSON keeps the keys it always had.
    kept = {"model", "reference", "passed", "summary", "first_diverging_layer", "tensors"}
    assert kept <= set(data)


def test_the_graph_has_a_node_per_layer_with_the_failing_one_red(page):
    _, _, doc, data = page
    (svg,) = doc.xpath("//svg[contains(@class, 'graph')]")
    nodes = svg.xpath(".//g[contains(@class, 'node')]")
    # Constants are drawn inside their users: a node for every other layer of the file.
    expected = sorted(etree.parse(str(MODEL)).xpath("/net/layers/layer[@type!='Const']/@name"))
    assert len(expected) == 13
    by_id = {layer["id"]: layer["name"] for layer in data["layers"]}
    assert sorted(by_id[n.get("data-layer")] for n in nodes) == expected
    failed = [n for n in nodes if "fail" in n.get("class").split()]
    assert [n.get("data-layer") for n in failed] == ["3"]
    (rect,) = failed[0].xpath("./rect")
    assert rect.get("stroke") == FAIL_COLOUR
    others = [n.xpath("./rect")[0].get("stroke") for n in nodes if n not in failed]
    assert FAIL_COLOUR not in others
    # Inputs and outputs are not compared; every layer that computes is, and passes.
    status = {by_id[n.get("data-layer")]: n.get("class").split()[1] for n in nodes}
    assert status["x"] == status["Result_269"] == "none"
    assert sum(s == "pass" for s in status.values()) == len(expected) - 3
    assert len(svg.xpath(".//path[@class='edge']")) >= len(expected) - 1


# ------------------------------------------------------------------ outputs only, Python


def test_without_mark_all_the_report_shows_the_outputs_and_says_how_to_get_more(tmp_path, capsys):
    pytest.importorskip("openvino")
    path = tmp_path / "out.html"
    rc = main(["compare", str(MODEL), "--shape", "x[1,3,64,64]", "--ref-backend", "openvino",
               "--report", str(path)])  # fmt: skip
    captured = capsys.readouterr()
    assert rc == 0
    assert captured.err == f"irrun: wrote the HTML report of 1 tensor to {path}\n"
    doc = lxml_html.fromstring(path.read_text(encoding="utf-8"))
    (hint,) = doc.xpath("//p[@class='hint']")
    assert "--mark-all" in hint.text_content()
    points = doc.xpath("//svg[contains(@class, 'plot abs')]//circle")
    assert [p.get("data-tensor") for p in points] == ["Result_269"]
    nodes = doc.xpath("//svg[contains(@class, 'graph')]//g[contains(@class, 'node')]")
    status = {n.get("data-layer"): n.get("class").split()[1] for n in nodes}
    assert status.pop("18") == "pass" and set(status.values()) == {"none"}


def test_the_python_report_writes_the_same_page(tmp_path):
    pytest.importorskip("openvino")
    model = _irrun_model()
    report = irrun.compare(model, backend="openvino", mark_all=True)
    path = tmp_path / "page.html"
    report.to_html(str(path))
    assert path.read_text(encoding="utf-8") == report.html() == render_html(report.as_dict())
    doc = lxml_html.fromstring(report.html())
    points = doc.xpath("//svg[contains(@class, 'plot abs')]//circle")
    assert len(points) == len(report.results) == len(computed_tensors())


def test_the_docs_example(tmp_path, capsys, monkeypatch):
    pytest.importorskip("openvino")
    from tests.support.docs import assert_same_output, shown_output

    # Where the repository's files are at hand and what the command writes is not kept.
    for entry in ROOT.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    command = (
        "irrun compare models/pooling_chain.xml --ref-backend openvino --mark-all "
        "--report report.html"
    )
    assert main(command.split()[1:]) == 0
    captured = capsys.readouterr()
    assert_same_output(captured.out + captured.err.rstrip("\n"), shown_output(command))
    doc = lxml_html.fromstring((tmp_path / "report.html").read_text(encoding="utf-8"))
    points = doc.xpath("//svg[@class='plot abs']//circle")
    assert [p.get("data-tensor") for p in points] == [
        "stem_pool:1", "stem_pool:2", "avg_pool", "pooled", "indices"]  # fmt: skip
    # Image, three pools and two Results: a box each.
    assert len(doc.xpath("//svg[@class='graph']//g[contains(@class, 'node')]")) == 6


def test_a_json_name_for_the_page_is_refused(tmp_path, capsys):
    rc = main(["compare", str(ROOT / "models" / "pooling_chain.xml"), "--ref-backend", "openvino",
               "--report", str(tmp_path / "r.json")])  # fmt: skip
    assert rc == 2 and not (tmp_path / "r.json").exists()
    assert capsys.readouterr().err == (
        f"irrun: error: --report {tmp_path / 'r.json'}: --report writes an HTML page "
        "(report.html); -o writes the JSON report\n"
    )


# ------------------------------------------------------------------ names, errors


def test_names_from_the_model_are_escaped(tmp_path):
    pytest.importorskip("openvino")
    name = """<b onclick="x">&amp;'</b>"""
    xml = (ROOT / "models" / "pooling_chain.xml").read_text()
    escaped = name.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    assert xml.count('name="stem_pool"') == 1
    (tmp_path / "m.xml").write_text(xml.replace('name="stem_pool"', f'name="{escaped}"'))
    os.symlink(ROOT / "models" / "pooling_chain.bin", tmp_path / "m.bin")
    report = irrun.compare(tmp_path / "m.xml", backend="openvino", mark_all=True)
    assert report.passed
    text = report.html()
    assert "<b " not in text and 'onclick="x"' not in text
    etree.fromstring(text.removeprefix("<!DOCTYPE html>").encode("utf-8"))
    doc = lxml_html.fromstring(text)
    rows = table_rows(doc, "all")
    assert [r["name"] for r in rows][:2] == [name, name]
    assert [r["tensor"] for r in rows][:2] == [f"{name}:1", f"{name}:2"]
    (script,) = doc.xpath("//script[@id='irrun-compare-data']")
    assert json.loads(script.text)["tensors"][0]["layer"]["name"] == name
    node = doc.xpath("//g[@data-layer='1']")[0]
    assert node.xpath("./text")[0].text == name  # short enough to show whole


def test_a_report_that_cannot_be_written_is_an_error_and_no_file(tmp_path, capsys, monkeypatch):
    pytest.importorskip("openvino")
    base = ["compare", str(ROOT / "models" / "pooling_chain.xml"), "--ref-backend", "openvino"]
    # Refused before any work: a missing directory, a directory.
    refused = {
        tmp_path / "no" / "r.html": "the output's directory does not exist",
        tmp_path: "is a directory, expected a file name such as out.npz",
    }
    for path, why in refused.items():
        assert main([*base, "--report", str(path)]) == 1
        assert capsys.readouterr() == ("", f"irrun: error: {path}: {why}\n")
    # A failure while writing leaves no file, and an older report as it was.
    target = tmp_path / "r.html"
    target.write_text("older")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    assert main([*base, "--report", str(target)]) == 1
    err = capsys.readouterr().err
    assert err == f"irrun: error: {target}: cannot write: No space left on device\n"
    assert target.read_text() == "older"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temporary file left


def test_the_page_survives_odd_values():
    # A report with no layers, a tensor with no values and infinite errors still draws.
    data = {
        "model": "m.xml", "reference": "r.npz", "passed": False, "mark_all": True,
        "atol": 1e-5, "rtol": 1e-5, "check_error_stat": "elemwise", "tolerance_note": None,
        "atol_scaled": False,
        "summary": {"compared": 3, "failed": 2, "not_in_reference": 0, "stopped_early": False},
        "first_diverging_layer": None, "inputs": None, "notes": ["a < b & c"],
        "not_in_reference": [],
        "tensors": [
            {"name": "a", "passed": True, "layer": None, "shape": [2], "dtype": "float32",
             "problem": None, "atol": 1e-5, "rtol": 1e-5, "max_abs": 0.0, "max_rel": 0.0,
             "mean_abs": 0.0, "mean_rel": 0.0},
            {"name": "b", "passed": False, "layer": None, "shape": [2], "dtype": "float32",
             "problem": "missing in the reference", "atol": 1e-5, "rtol": 1e-5,
             "max_abs": None, "max_rel": None, "mean_abs": None, "mean_rel": None},
            {"name": "c", "passed": False, "layer": None, "shape": [2], "dtype": "float32",
             "problem": None, "atol": 1e-5, "rtol": 1e-5, "max_abs": "inf", "max_rel": "inf",
             "mean_abs": "inf", "mean_rel": "nan"},
        ],
        "worst_first": [1, 2, 0], "layers": None,
    }  # fmt: skip
    text = render_html(data)
    doc = lxml_html.fromstring(text)
    points = doc.xpath("//svg[contains(@class, 'plot abs')]//circle")
    assert [p.get("data-tensor") for p in points] == ["a", "b", "c"]
    ys = [float(p.get("cy")) for p in points]
    assert ys[1] == ys[2] < ys[0]  # no values and inf at the top, 0 at the foot
    assert [r["tensor"] for r in table_rows(doc, "worst")] == ["b", "c", "a"]
    assert "a &lt; b &amp; c" in text
    assert not math.isnan(ys[0])
