"""``irrun run``: its threads on a busy machine, ``--dump-type`` checked against the model,
``-o -`` (stdout), and ``--json``.

(Per-layer values, dumps and profiles: tests/tools/test_run_layers.py.)
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli

import irrun
from irrun import threads
from irrun.errors import IrrunError

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DEMO = str(MODELS / "demo.xml")
TREE = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}


def busy_message(load: float, cores: int) -> str:
    plural = "s" if cores != 1 else ""
    return (f"irrun: warning: the machine is busy (load {load:.1f} on {cores} core{plural}): "
            "timings are unreliable")  # fmt: skip


# --- threads on a busy machine ----------------------------------------------------------------


def test_a_busy_machine_runs_on_one_thread_and_profile_says_it_is_busy():
    # The process's load average is made up (9.5: busy whatever the machine's cores), as
    # the command sees it from os.getloadavg.
    code = ("import os, runpy, sys; os.getloadavg = lambda: (9.5, 9.0, 8.0); "
            "sys.argv[0] = 'irrun'; runpy.run_module('irrun', run_name='__main__')")  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", code, DEMO, "--profile", "-v"],
        capture_output=True, text=True, env=TREE, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.splitlines()
    assert busy_message(9.5, threads.available()) in err
    # The default thread count is the idle cores', at least one.
    ran = [line for line in err if line.startswith("irrun: ran 1 time")]
    assert len(ran) == 1 and ran[0].endswith(" ms on 1 thread"), err
    assert "op type" in proc.stdout  # the profile's table


def test_profile_warns_of_a_busy_machine_but_not_when_quiet(capsys, monkeypatch):
    cores = threads.available()
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 0.75, 1.0, 1.0))
    rc, out, err = run_cli(capsys, DEMO, "--profile")
    assert (rc, err) == (0, busy_message(cores + 0.75, cores) + "\n")
    rc, out, err = run_cli(capsys, DEMO, "--profile", "-q")
    assert (rc, err) == (0, "")
    rc, out, err = run_cli(capsys, DEMO)  # no timings, no word on them
    assert (rc, err) == (0, "")
    monkeypatch.setattr(os, "getloadavg", lambda: (float(cores), 1.0, 1.0))
    rc, out, err = run_cli(capsys, DEMO, "--profile")
    assert (rc, err) == (0, "")
    assert "op type" in out


# --- --dump-type names types the model has -----------------------------------------------------

# demo.xml's layer types, as its <layer type="..."> attributes spell them.
# Parameter and Result are not among them: a run computes nothing for them.
DEMO_TYPES = ("AdaptiveAvgPool, Add, AvgPool, Const, Convert, Convolution, MatMul, MaxPool, "
              "ReLU, Reshape, SoftMax")  # fmt: skip


def test_an_unknown_dump_type_is_a_usage_error_naming_the_models_types(tmp_path):
    out = tmp_path / "dump"
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "run", DEMO, "--dump-dir", str(out), "--dump-type", "Foo"],
        capture_output=True, text=True, env=TREE, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr == (f"irrun: error: --dump-type Foo: demo.xml has no layer of that type "
                           f"(its types: {DEMO_TYPES})\n")  # fmt: skip
    assert proc.stdout == ""
    assert not out.exists()  # refused before anything is written


def test_a_dump_type_near_one_of_the_models_is_suggested(capsys, tmp_path):
    out = str(tmp_path / "dump")
    rc, _, err = run_cli(capsys, DEMO, "--dump-dir", out, "--dump-type", "maxpool")
    assert rc == 2
    assert err == (f"irrun: error: --dump-type maxpool: demo.xml has no layer of that type "
                   f"(its types: {DEMO_TYPES}); did you mean MaxPool?\n")  # fmt: skip
    rc, _, err = run_cli(capsys, DEMO, "--dump-dir", out, "--dump-type", "MaxPool,Relu",
                         "--dump-type", "Softmax,Foo")  # fmt: skip
    assert rc == 2
    assert err == (f"irrun: error: --dump-type Relu, Softmax, Foo: demo.xml has no layers of "
                   f"these types (its types: {DEMO_TYPES}); did you mean Relu -> ReLU, "
                   "Softmax -> SoftMax?\n")  # fmt: skip
    # Types the model has, Const included, are dumped as before: 1 MaxPool and 6 Consts.
    rc, _, err = run_cli(capsys, DEMO, "--dump-dir", out, "--dump-type", "MaxPool,Const")
    assert rc == 0 and err.startswith("irrun: wrote 7 tensors of 7 layers to ")


def test_dump_types_a_run_computes_nothing_for_are_refused(capsys, tmp_path):
    out = str(tmp_path / "dump")
    rc, _, err = run_cli(capsys, DEMO, "--dump-dir", out, "--dump-type", "Parameter,MaxPool",
                         "--dump-type", "Result")  # fmt: skip
    assert rc == 2
    assert err == ("irrun: error: --dump-type Parameter, Result: a dump holds what layers "
                   "compute: the inputs (Parameters) are in inputs.npz in the dump's directory, "
                   "and a Result's value is the output of the layer that feeds it\n")  # fmt: skip


# --- -o - is stdout ----------------------------------------------------------------------------


def test_o_dash_streams_the_npz_to_stdout(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "run", DEMO, "--input", str(MODELS / "demo.inputs.npz"),
         "-o", "-"],
        capture_output=True, env=TREE, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == b"irrun: wrote 1 output to stdout\n"
    assert list(tmp_path.iterdir()) == []  # no file named -
    with np.load(io.BytesIO(proc.stdout)) as got, np.load(MODELS / "demo.expected.npz") as want:
        assert list(got) == list(want) == ["probabilities"]
        # OpenVINO's values for these inputs, to its f32 rounding.
        np.testing.assert_allclose(got["probabilities"], want["probabilities"], rtol=1e-5,
                                   atol=1e-7)  # fmt: skip


def test_o_dash_is_refused_on_a_terminal_and_with_the_profile_table(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    rc, out, err = run_cli(capsys, DEMO, "-o", "-")
    assert (rc, out) == (2, "")
    assert err == ("irrun: error: -o -: the outputs' .npz is binary and stdout is a terminal: "
                   "redirect it (> out.npz), pipe it, or give a file name\n")  # fmt: skip
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    rc, out, err = run_cli(capsys, DEMO, "-o", "-", "--profile")
    assert (rc, out) == (2, "")
    assert err == ("irrun: error: -o - writes the outputs to stdout, where --profile prints its "
                   "table: give -o a file, or write the profile with --profile-json\n")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


REFUSED = ("irrun: error: - means stdout, which this output does not take: give a file name "
           "(--json prints the report on stdout)\n")  # fmt: skip


def test_other_outputs_take_dash_as_stdout_or_refuse_it(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    for args in (
        ["validate", DEMO, "-o", "-"],
        [DEMO, "--profile-json", "-"],
        ["compare", DEMO, "--ref", str(MODELS / "demo.expected.npz"), "-o", "-"],
    ):
        assert run_cli(capsys, *args) == (2, "", REFUSED), args
    # benchmark's report: - is stdout, as --json prints it.
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "2", "--report", "-")
    assert (rc, err) == (0, "")
    assert json.loads(out)["iterations"] == 2
    assert list(tmp_path.iterdir()) == []


# --- --json ------------------------------------------------------------------------------------


def run_json(capsys, *args: str) -> tuple[int, dict, str]:
    rc, out, err = run_cli(capsys, *args, "--json")
    return rc, json.loads(out), err


def test_json_reports_the_outputs():
    inputs = str(MODELS / "demo.inputs.npz")
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "run", DEMO, "--input", inputs, "--json", "--threads", "1"],
        capture_output=True, text=True, env=TREE, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    report = json.loads(proc.stdout)  # stdout is the report alone
    assert report["irrun_version"] == irrun.__version__ and report["model"] == DEMO
    # The settings as benchmark --json gives them.
    assert report["inputs"] == [
        {"name": "image", "shape": [1, 3, 32, 32], "element_type": "f32", "dtype": "float32"}
    ]
    assert (report["input_source"], report["threads"]) == (f"--input {inputs}", 1)
    assert (report["output_file"], report["profile"]) == (None, None)
    with np.load(MODELS / "demo.expected.npz") as f:  # OpenVINO's outputs for these inputs
        want = f["probabilities"].astype(np.float64)
    [out] = report["outputs"]
    assert (out["name"], out["shape"], out["dtype"]) == ("probabilities", [1, 10], "float32")
    got = [out["min"], out["max"], out["mean"]]
    np.testing.assert_allclose(got, [want.min(), want.max(), want.mean()], rtol=1e-5)


def test_json_with_o_saves_the_outputs_and_reports_them(capsys, tmp_path):
    path = str(tmp_path / "out.npz")
    rc, report, err = run_json(capsys, DEMO, "-o", path, "--seed", "2")
    assert (rc, err) == (0, f"irrun: wrote 1 output to {path}\n")
    assert (report["output_file"], report["input_source"]) == (path, "random, seed 2")
    with np.load(path) as f:
        saved = f["probabilities"]
    [out] = report["outputs"]
    assert [out["min"], out["max"]] == [float(saved.min()), float(saved.max())]
    assert out["mean"] == float(saved.astype(np.float64).mean())


def test_profile_json_has_the_tables_rows(capsys):
    rc, report, _ = run_json(capsys, DEMO, "--profile", "--iterations", "3")
    assert rc == 0
    prof = report["profile"]
    assert (prof["runs"], prof["warmup_runs"]) == (3, 1)
    layers, kinds = prof["layers"], prof["op_types"]
    # demo.xml's computed layers (not Parameter, Const, Result, nor its 4 f16 weights'
    # Converts, which are done once at load).
    assert sorted(t["name"] for t in layers) == sorted([
        "conv1", "Relu_58069", "pool1", "conv2", "Relu_58073", "pool2", "global_pool",
        "Reshape_58078", "MatMul_58081", "fc", "softmax",
    ])  # fmt: skip
    assert [t["type"] for t in prof["computed_at_load"]] == ["Convert-v1"] * 4
    assert {t["name"]: t["type"] for t in layers}["pool2"] == "AvgPool-v14"
    assert {t["name"]: t["outputs"] for t in layers}["conv1"] == [[1, 16, 32, 32]]  # its <output>
    # Most expensive first; shares of the sum over layers; a type's time is its layers'.
    assert [t["ms"] for t in layers] == sorted((t["ms"] for t in layers), reverse=True)
    assert sum(t["share"] for t in layers) == pytest.approx(1.0)
    assert sum(t["ms"] for t in layers) == pytest.approx(prof["layers_ms"])
    for kind in kinds:
        members = [t for t in layers if t["type"] == kind["type"]]
        assert kind["layers"] == len(members)
        assert kind["ms"] == pytest.approx(sum(t["ms"] for t in members))
    assert sum(k["layers"] for k in kinds) == 11


def test_json_errors_are_json_with_the_exit_code(tmp_path):
    missing = str(tmp_path / "missing.xml")
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", missing, "--json"],
        capture_output=True, text=True, env=TREE, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (1, "")
    with pytest.raises(IrrunError) as raised:
        irrun.load(missing)
    assert json.loads(proc.stdout) == {"error": {
        "message": "no such file", "file": missing, "line": None, "layer": None, "port": None,
        "code": raised.value.code,
    }}  # fmt: skip


def test_json_errors_name_the_layer_and_misuse_is_exit_2(capsys):
    # pool2's 2x2 window does not fit the 1x1 it gets from a 2x2 image.
    rc, report, err = run_json(capsys, DEMO, "--shape", "[1,3,2,2]")
    assert (rc, err) == (1, "")
    error = report["error"]
    assert (error["file"], error["line"], error["code"]) == (DEMO, 186, "shape-error")
    assert error["layer"] == {"id": "10", "name": "pool2", "type": "AvgPool", "version": 14,
                              "opset": None}  # fmt: skip
    assert error["message"].startswith("reshape to image[1,3,2,2]: ")
    for args, message in (
        (["--dump-type", "MaxPool"], "--dump-type and --dump-name select what --dump-dir "
         "writes: give it"),
        (["-o", "-"], "-o - and --json both write to stdout: give -o a file"),
        (["--input-dir", "x", "--output-dir", "y"], "--json and --input-dir do not go "
         "together: --json reports one run"),
    ):  # fmt: skip
        rc, report, err = run_json(capsys, DEMO, *args)
        assert (rc, err) == (2, "")
        assert report == {"error": {"message": message, "file": None, "line": None,
                                    "layer": None, "port": None, "code": "usage"}}  # fmt: skip


def test_string_outputs_are_named_string(capsys, tmp_path):
    ov = pytest.importorskip("openvino")
    x = ov.opset1.parameter([3], ov.Type.string, name="x")
    x.output(0).get_tensor().set_names({"x"})
    path = tmp_path / "strings.xml"
    twice = ov.opset1.concat([x, x], 0)
    twice.output(0).get_tensor().set_names({"twice"})
    ov.save_model(ov.Model([twice], [x], "s"), path)
    np.save(tmp_path / "x.npy", np.array(["a", "bb", "ccc"]))
    rc, out, _ = run_cli(capsys, str(path), "--input", str(tmp_path / "x.npy"))
    assert rc == 0 and out.splitlines()[1].split() == ["twice", "[6]", "string", "-", "-", "-"]
    rc, out, _ = run_cli(capsys, str(path), "--input", str(tmp_path / "x.npy"), "--json")
    assert json.loads(out)["outputs"][0] == {"name": "twice", "shape": [6], "dtype": "string",
                                             "min": None, "max": None, "mean": None}  # fmt: skip
