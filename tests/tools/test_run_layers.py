"""Per-layer values, dumps, profiles and reshape: Python API and ``irrun run`` flags.

Per-layer values are checked against OpenVINO's, which it returns for every op
output made a model output (``Model.add_outputs``); irrun names a tensor by its
port's first tensor name, else by its layer's name (``NAME:PORT`` when the layer
has several outputs).
"""

from __future__ import annotations

import json
import pickle
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import openvino as ov
import pytest

import irrun
import irrun.tools.run
from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
BUNDLED = sorted(p.stem for p in MODELS.glob("*.xml"))


def _feeds(name: str) -> dict[str, np.ndarray]:
    with np.load(MODELS / f"{name}.inputs.npz") as f:
        return dict(f)


def openvino_layer_values(name: str, feeds: dict[str, np.ndarray]) -> dict[tuple[str, int], tuple[str, np.ndarray]]:
    """Every computed op output (not Parameter, Const, Result) as OpenVINO's CPU plugin gives it.

    Keyed by (friendly name, output index) -> (op type, value).
    """
    core = ov.Core()
    model = core.read_model(MODELS / f"{name}.xml")
    wanted = [
        (op, i)
        for op in model.get_ordered_ops()
        if op.get_type_name() not in ("Parameter", "Constant", "Result")
        for i in range(op.get_output_size())
    ]
    ports = model.add_outputs([op.output(i) for op, i in wanted])
    results = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(feeds)
    return {
        (op.get_friendly_name(), i): (op.get_type_name(), results[model.outputs.index(port)])
        for (op, i), port in zip(wanted, ports, strict=True)
    }


def _computed_layers(model: irrun.Model) -> list:
    """The model's layers in run order, Parameters left out (they are given, not computed)."""
    graph = model._graph
    return [graph.layers[lid] for lid in graph.order if graph.layers[lid].type != "Parameter"]


def _close(got: np.ndarray, want: np.ndarray, kind: str, exact: bool) -> None:
    """Pools of exact inputs are bit-exact; after a convolution, within its rounding."""
    assert got.shape == want.shape
    if got.dtype.kind in "iub" or (exact and kind in ("MaxPool", "AdaptiveMaxPool")):
        np.testing.assert_array_equal(got, want.astype(got.dtype))
    else:
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4 * scale)


# --- Model.run(intermediate=True), on_layer ------------------------------------------


@pytest.mark.parametrize("name", ["demo", "pooling_chain", "maxpool_example4", "adaptive_example"])
def test_intermediate_values_equal_openvinos(name):
    model = irrun.load(MODELS / f"{name}.xml")
    feeds = _feeds(name)
    got = model.run(feeds, intermediate=True)
    ov_values = openvino_layer_values(name, feeds)
    by_layer = {}
    for (lid, port), tensor in model.tensor_names.items():
        by_layer[tensor] = (model._graph.layers[lid].name, lid, port)
    compared = 0
    for tensor, value in got.items():
        layer_name, lid, port = by_layer[tensor]
        layer = model._graph.layers[lid]
        if layer.type == "Convert" and layer.name.startswith("Constant_"):
            continue  # OpenVINO folds weight decompression into its consumer
        index = [p.id for p in layer.outputs].index(port)
        kind, want = ov_values[(layer_name, index)]
        _close(value, want, kind, name != "demo")
        compared += 1
    # Every op output OpenVINO computes is among irrun's intermediate values.
    assert compared >= len([k for k, (t, _) in ov_values.items() if t != "Convert"])


def test_intermediate_includes_outputs_and_leaves_out_parameters_and_consts():
    model = irrun.load(MODELS / "demo.xml")
    values = model.run(_feeds("demo"), intermediate=True)
    types = {model._graph.layers[lid].type for (lid, _), t in model.tensor_names.items() if t in values}
    assert "Parameter" not in types and "Const" not in types
    assert {"Convolution", "MaxPool", "AvgPool", "SoftMax"} <= types
    with np.load(MODELS / "demo.expected.npz") as expected:
        np.testing.assert_allclose(values["probabilities"], expected["probabilities"], atol=1e-6)


def test_run_outputs_by_layer_name_and_port():
    model = irrun.load(MODELS / "pooling_chain.xml")
    feeds = _feeds("pooling_chain")
    ov_values = openvino_layer_values("pooling_chain", feeds)
    picked = model.run(feeds, outputs=["stem_pool:2", "avg_pool"])
    assert list(picked) == ["stem_pool:2", "avg_pool"]
    np.testing.assert_array_equal(picked["stem_pool:2"], ov_values[("stem_pool", 1)][1])
    np.testing.assert_array_equal(picked["avg_pool"], ov_values[("avg_pool", 0)][1])


def test_on_layer_sees_every_layer_in_order_with_times():
    model = irrun.load(MODELS / "pooling_chain.xml")
    seen = []
    model.run(_feeds("pooling_chain"), on_layer=seen.append)
    names = [r.ref.name for r in seen]
    expected = [layer.name for layer in _computed_layers(model)]
    assert names == expected
    assert all(r.seconds >= 0 for r in seen)
    stem = next(r for r in seen if r.ref.name == "stem_pool")
    assert stem.ports == (1, 2) and stem.inputs == ((1, 3, 16, 16),)
    assert [v.shape for v in stem.outputs.values()] == [(1, 3, 8, 8), (1, 3, 8, 8)]


# --- reshape ---------------------------------------------------------------------------


def test_reshape_repropagates_like_openvino():
    model = irrun.load(MODELS / "demo.xml")
    model.reshape({"image": [3, 3, 64, 48]})
    core = ov.Core()
    ref = core.read_model(MODELS / "demo.xml")
    ref.reshape({"image": [3, 3, 64, 48]})
    assert model.inputs[0].shape == (3, 3, 64, 48)
    assert model.outputs[0].shape == tuple(ref.outputs[0].get_shape())
    x = np.random.default_rng(1).standard_normal((3, 3, 64, 48)).astype(np.float32)
    want = core.compile_model(ref, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    np.testing.assert_allclose(model.run(x)["probabilities"], want, atol=1e-6)
    with pytest.raises(irrun.IrrunError, match=r"input 'image' has shape \[1,3,32,32\], expected \[3,3,64,48\]"):
        model.run(np.zeros((1, 3, 32, 32), np.float32))


def test_reshape_to_dynamic_accepts_any_batch():
    model = irrun.load(MODELS / "pooling_chain.xml")
    model.reshape("image[?,3,16..32,16..32]")
    assert str(model.outputs[0].shape) != "None"
    for batch, size in [(1, 16), (5, 32)]:
        out = model.run(np.ones((batch, 3, size, size), np.float32))
        assert out["pooled"].shape == (batch, 3, 2, 2)
        assert np.all(out["pooled"] == 1)


def test_reshape_that_breaks_a_layer_names_it_and_keeps_the_model():
    model = irrun.load(MODELS / "pooling_chain.xml")
    with pytest.raises(irrun.IrrunError) as err:
        model.reshape({"image": [1, 3, 2, 2]})
    assert "avg_pool" in str(err.value) and "pooling_chain.xml:" in str(err.value)
    assert model.inputs[0].shape == (1, 3, 16, 16)  # unchanged
    assert model.run(_feeds("pooling_chain"))["pooled"].shape == (1, 3, 2, 2)


def test_reshape_survives_pickling():
    model = irrun.load(MODELS / "pooling_chain.xml")
    model.reshape({"image": [2, 3, 24, 24]})
    copy = pickle.loads(pickle.dumps(model))
    assert copy.inputs[0].shape == (2, 3, 24, 24)
    x = np.random.default_rng(0).standard_normal((2, 3, 24, 24)).astype(np.float32)
    np.testing.assert_array_equal(copy.run(x)["pooled"], model.run(x)["pooled"])


def test_run_shape_flag(capsys):
    rc = main([str(MODELS / "pooling_chain.xml"), "--shape", "[4,3,40,40]"])
    out = capsys.readouterr().out
    assert rc == 0
    assert re.search(r"pooled\s+\[4, 3, 2, 2\]", out) and re.search(r"indices\s+\[4, 3, 2, 2\]", out)


def test_run_shape_flag_errors(capsys):
    rc = main([str(MODELS / "pooling_chain.xml"), "--shape", "nope[1,3,8,8]"])
    assert rc == 2 and "--shape: no input named 'nope' (inputs: image)" in capsys.readouterr().err
    rc = main([str(MODELS / "pooling_chain.xml"), "--shape", "[1,3,2,2]"])
    err = capsys.readouterr().err
    assert rc == 1 and err.count("\n") == 1 and "avg_pool" in err


# --- --dump-dir ------------------------------------------------------------------------


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


@pytest.mark.parametrize("name", ["demo", "pooling_chain"])
def test_dump_dir_files_equal_intermediate_values_and_openvino(name, tmp_path, capsys):
    out = tmp_path / "dump"
    inputs = MODELS / f"{name}.inputs.npz"
    assert main([str(MODELS / f"{name}.xml"), "-i", str(inputs), "--dump-dir", str(out)]) == 0
    manifest = _manifest(out)
    assert manifest["complete"] is True
    model = irrun.load(MODELS / f"{name}.xml")
    feeds = _feeds(name)
    values = model.run(feeds, intermediate=True)
    assert [e["name"] for e in manifest["tensors"]] == list(values)
    ov_values = openvino_layer_values(name, feeds)
    for entry in manifest["tensors"]:
        dumped = np.load(out / entry["file"])
        np.testing.assert_array_equal(dumped, values[entry["name"]])
        assert list(dumped.shape) == entry["shape"] and str(dumped.dtype) == entry["dtype"]
        layer = entry["layer"]
        if (layer["name"], 0) in ov_values and not layer["name"].startswith("Constant_"):
            lay = model._graph.layers[layer["id"]]
            index = [p.id for p in lay.outputs].index(entry["port"])
            kind, want = ov_values[(layer["name"], index)]
            _close(dumped, want, kind, name != "demo")
    with np.load(out / "inputs.npz") as saved:
        assert set(saved) == set(feeds)
        for k in feeds:
            np.testing.assert_array_equal(saved[k], feeds[k])


def test_dump_filters_by_type_and_name(tmp_path, capsys):
    model = str(MODELS / "demo.xml")
    out = tmp_path / "d"
    assert main([model, "--dump-dir", str(out), "--dump-type", "MaxPool,AvgPool"]) == 0
    assert [(e["layer"]["type"], e["name"]) for e in _manifest(out)["tensors"]] == [
        ("MaxPool", "pool1"), ("AvgPool", "pool2")]
    # A second dump into the same directory replaces the first one's files.
    assert main([model, "--dump-dir", str(out), "--dump-name", "^conv"]) == 0
    entries = _manifest(out)["tensors"]
    assert [e["name"] for e in entries] == ["conv1", "conv2"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [e["file"] for e in entries] + ["manifest.json", "inputs.npz"])
    assert main([model, "--dump-dir", str(out), "--dump-type", "Const", "--dump-name", "58075"]) == 0
    (entry,) = _manifest(out)["tensors"]
    assert entry["layer"]["type"] == "Const"


def test_dump_usage_errors(tmp_path, capsys):
    model = str(MODELS / "demo.xml")
    assert main([model, "--dump-type", "MaxPool"]) == 2
    assert "--dump-dir" in capsys.readouterr().err
    assert main([model, "--dump-dir", str(tmp_path / "d"), "--dump-name", "("]) == 2
    assert "is not a regular expression" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main([model, "--dump-dir", str(blocker)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "expected a directory" in err


def test_failed_run_leaves_an_incomplete_manifest(tmp_path, capsys, monkeypatch):
    real_load = irrun.tools.run.load

    def load_failing_avgpool(*args):
        model = real_load(*args)
        plan = model._plan
        for i, step in enumerate(plan.steps):
            if step.node.op.type == "AvgPool":
                plan.steps[i] = replace(step, kernel=_fails)
        return model

    monkeypatch.setattr(irrun.tools.run, "load", load_failing_avgpool)
    out = tmp_path / "d"
    assert main([str(MODELS / "demo.xml"), "--dump-dir", str(out)]) == 1
    assert "pool2" in capsys.readouterr().err
    manifest = _manifest(out)
    assert manifest["complete"] is False
    names = [e["name"] for e in manifest["tensors"]]
    assert names[-1] == "Relu_58073" and "pool2" not in names  # all up to the failing layer
    for entry in manifest["tensors"]:
        assert (out / entry["file"]).is_file()
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def _fails(attrs, *args):
    raise ValueError("the kernel failed")


# --- --profile, --profile-json -----------------------------------------------------------


def _run_layers(model: irrun.Model) -> list:
    """The layers a run executes, in the model's order: not the Parameters and Consts (given),
    the Results (nothing to compute), nor the layers folded at load (computed once then)."""
    at_load = {step.node.layer.id for step, _ in model.folding.timings}
    return [layer for layer in _computed_layers(model)
            if layer.type not in ("Const", "Result") and layer.id not in at_load]


def test_profile_lists_every_layer_sorted(capsys):
    model = irrun.load(MODELS / "demo.xml")
    layers = [(layer.name, layer.type) for layer in _run_layers(model)]
    assert main([str(MODELS / "demo.xml"), "--profile", "--iterations", "3"]) == 0
    out = capsys.readouterr().out
    types_table, layer_table, load_table = out[out.index("op type "):].split("\n\n")
    table = layer_table.splitlines()
    rows = [re.split(r"\s{2,}", line.strip()) for line in table[1:-1]]
    assert sorted((r[0], r[1].rsplit("-v", 1)[0]) for r in rows) == sorted(layers)
    times = [float(r[2]) for r in rows]
    assert times == sorted(times, reverse=True)
    shares = [float(r[3].rstrip("%")) for r in rows]
    assert abs(sum(shares) - 100) < 0.1 * len(rows)
    total = re.fullmatch(r"total: (\d+) layers, ([\d.]+) ms in layers, ([\d.]+) ms per run "
                         r"\(median of 3 runs, after 1 warm-up run\)", table[-1])
    assert total and int(total[1]) == len(layers)
    assert abs(float(total[2]) - sum(times)) < 0.01 + 1e-3 * len(times)
    # The summary by op type sums the layers of each type.
    kinds = [re.split(r"\s{2,}", line.strip()) for line in types_table.splitlines()[1:]]
    assert sorted(k[0] for k in kinds) == sorted({r[1] for r in rows})
    type_ms = [float(k[2]) for k in kinds]
    assert type_ms == sorted(type_ms, reverse=True)
    for kind, n, ms, _ in kinds:
        assert int(n) == sum(r[1] == kind for r in rows)
        assert abs(float(ms) - sum(float(r[2]) for r in rows if r[1] == kind)) < 0.002 * int(n)
    # The layers folded at load, apart: the demo's four f16 weights' Converts.
    loaded = load_table.strip().splitlines()
    assert re.fullmatch(r"computed once at load, not in a run: 4 layers, [\d.]+ ms", loaded[0])
    assert sorted(line.split()[1] for line in loaded[2:]) == ["Convert-v1"] * 4
    assert "probabilities" in out[: out.index("op type ")]  # the outputs table comes first


def test_profile_json_is_a_chrome_trace(tmp_path, capsys):
    trace_path = tmp_path / "trace.json"
    out_npz = tmp_path / "out.npz"
    argv = [str(MODELS / "pooling_chain.xml"), "--profile-json", str(trace_path), "--iterations", "2", "-o", str(out_npz)]
    assert main(argv) == 0
    assert capsys.readouterr().out == ""  # no table without --profile, outputs saved
    trace = json.loads(trace_path.read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert trace["displayTimeUnit"] == "ms" and trace["otherData"]["runs"] == 2
    model = irrun.load(MODELS / "pooling_chain.xml")
    layers = [layer.name for layer in _run_layers(model)]
    assert [e["name"] for e in events] == layers * 2
    for e in events:
        assert e["dur"] >= 0 and e["ts"] >= 0 and {"pid", "tid", "cat", "args"} <= set(e)
    runs = [[e for e in events if e["args"]["run"] == r] for r in (0, 1)]
    for run in runs:  # layers run one after the other
        ends = [e["ts"] + e["dur"] for e in run]
        assert all(b["ts"] >= a_end - 1 for a_end, b in zip(ends, run[1:], strict=False))
    stem = next(e for e in events if e["name"] == "stem_pool")
    # Its indices feed nothing: a run does not compute them, and the profile times that run.
    assert stem["cat"] == "MaxPool-v8" and stem["args"]["outputs"] == [[1, 3, 8, 8]]
    assert stem["args"]["inputs"] == [[1, 3, 16, 16]]


def test_profile_usage_errors(tmp_path, capsys):
    model = str(MODELS / "demo.xml")
    assert main([model, "--iterations", "2"]) == 2
    assert "--iterations needs --profile" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main([model, "--profile", "--iterations", "0"])
    assert exit_.value.code == 2 and "invalid count value: '0'" in capsys.readouterr().err
    assert main([model, "--profile-json", str(tmp_path / "missing" / "t.json")]) == 1
    assert "the output's directory does not exist" in capsys.readouterr().err
