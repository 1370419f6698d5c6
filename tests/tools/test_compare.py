"""``irrun compare`` end to end: against OpenVINO, against files, and what a failure reports.

References that must fail are built from OpenVINO's own per-layer values (with the
openvino API here, not through irrun's mapping), with one value perturbed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG

import irrun
from irrun.cli import main
from irrun.errors import UsageError
from irrun.tools.compare import compare, compare_arrays

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
BUNDLED = sorted(p.stem for p in MODELS.glob("*.xml"))


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["compare", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def tensor_lines(out: str) -> list[list[str]]:
    """The per-tensor lines, split into fields (the summary line is the last PASSED/FAILED)."""
    lines = [ln.split(" | ") for ln in out.splitlines() if ln.startswith(("PASSED |", "FAILED |"))]
    return lines[:-1]


def summary(out: str) -> str:
    return next(ln for ln in reversed(out.splitlines()) if ln.startswith(("PASSED |", "FAILED |")))


def computed_tensors(model: irrun.Model) -> list[str]:
    """Every tensor irrun computes, in run order: what --mark-all compares."""
    return [
        name for ref, _, names in model.layers()
        if ref.type not in ("Parameter", "Const", "Result", "Assign") for name in names
    ]  # fmt: skip


def openvino_values(name: str, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """OpenVINO's value of every single-output layer, by layer name (tensor name if it has one)."""
    ov = pytest.importorskip("openvino")
    core = ov.Core()
    model = core.read_model(MODELS / f"{name}.xml")
    wanted = {}
    for op in model.get_ordered_ops():
        if op.get_type_name() in ("Parameter", "Constant", "Result") or op.get_output_size() != 1:
            continue
        names = op.output(0).get_names()
        wanted[min(names) if names else op.get_friendly_name()] = op.output(0)
    model.add_outputs(list(wanted.values()))
    compiled = core.compile_model(model, "CPU", CPU_CONFIG)
    results = compiled(feeds)
    by_source = {}
    for i, result in enumerate(model.get_results()):
        src = result.input_value(0)
        by_source[(src.get_node().get_friendly_name(), src.get_index())] = results[i]
    return {
        key: np.array(by_source[(out.get_node().get_friendly_name(), out.get_index())])
        for key, out in wanted.items()
    }


def bundled_inputs(name: str) -> dict[str, np.ndarray]:
    with np.load(MODELS / f"{name}.inputs.npz") as f:
        return dict(f)


@pytest.fixture
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


# ------------------------------------------------------------------ against OpenVINO


@pytest.mark.parametrize("mark_all", [False, True], ids=["outputs", "mark-all"])
@pytest.mark.parametrize("name", BUNDLED)
def test_openvino_backend_passes_on_every_bundled_model(name, mark_all, capsys):
    pytest.importorskip("openvino")
    model = irrun.load(MODELS / f"{name}.xml")
    extra = ["--mark-all"] if mark_all else []
    rc, out, err = run_cli(capsys, str(MODELS / f"{name}.xml"), "--ref-backend", "openvino", *extra)
    assert (rc, err) == (0, ""), out
    lines = tensor_lines(out)
    expected = computed_tensors(model) if mark_all else [s.name for s in model.outputs]
    assert [f[1] for f in lines] == expected  # every layer listed, in run order
    assert all(f[0] == "PASSED" for f in lines)
    n = len(expected)
    assert summary(out) == (
        f"PASSED | {n} of {n} tensor{'s' * (n != 1)} passed | atol 1e-05, rtol 1e-05 | "
        "irrun vs OpenVINO CPU (f32)"
    )
    # Each line names the layer that computed the tensor, with its shape and type.
    layers = {t: ref for ref, _, names in model.layers() for t in names}
    for fields in lines:
        assert fields[2] == str(layers[fields[1]])
        assert fields[4].startswith("max abs ")


def test_bundled_expected_files_pass_as_references(capsys):
    for name in BUNDLED:
        xml = str(MODELS / f"{name}.xml")
        inputs = str(MODELS / f"{name}.inputs.npz")
        ref = str(MODELS / f"{name}.expected.npz")
        rc, out, _ = run_cli(capsys, xml, "--input", inputs, "--ref", ref)
        assert rc == 0, out
        assert summary(out).startswith("PASSED | ")
        with np.load(ref) as f:
            assert [fl[1] for fl in tensor_lines(out)] == [
                s.name for s in irrun.load(xml).outputs
            ] and set(f.files) == {s.name for s in irrun.load(xml).outputs}


# ------------------------------------------------------------------ a perturbed reference


@pytest.fixture
def perturbed(tmp_path):
    """demo's per-layer values from OpenVINO, conv2's perturbed by +0.5 at one element."""
    feeds = bundled_inputs("demo")
    values = openvino_values("demo", feeds)
    assert "conv2" in values and "probabilities" in values
    where = (0, 5, 3, 7)
    values["conv2"][where] += 0.5
    path = tmp_path / "ref.npz"
    np.savez(path, **values)
    return path, where


def test_a_perturbed_layer_fails_and_is_the_first_diverging_layer(perturbed, capsys, in_root):
    ref, where = perturbed
    args = ["models/demo.xml", "--input", "models/demo.inputs.npz", "--ref", str(ref)]
    rc, out, err = run_cli(capsys, *args, "--mark-all")
    assert (rc, err) == (1, "")
    lines = tensor_lines(out)
    failed = [f for f in lines if f[0] == "FAILED"]
    assert [f[1] for f in failed] == ["conv2"]  # later layers have OpenVINO's own values
    fields = failed[0]
    assert fields[2] == "layer 8 'conv2' (Convolution-v1)"
    assert fields[3] == "[1, 32, 16, 16] float32"
    assert fields[4] == "1 of 8192 elements differ (atol 1e-05, rtol 1e-05)"
    worst = re.fullmatch(r"max abs (\S+) at \[(.*)\] \(irrun (\S+), reference (\S+)\)", fields[5])
    assert worst, fields[5]
    assert tuple(int(i) for i in worst.group(2).split(", ")) == where
    assert float(worst.group(1)) == pytest.approx(0.5, abs=1e-5)
    assert float(worst.group(4)) - float(worst.group(3)) == pytest.approx(0.5, abs=1e-5)
    assert summary(out).startswith(f"FAILED | 1 of {len(lines)} tensors failed | ")
    assert out.splitlines()[-1] == (
        "first diverging layer: 8 'conv2' (Convolution-v1) at models/demo.xml:143"
    )
    # The JSON report has the same, with exact numbers.
    rc, out, _ = run_cli(capsys, *args, "--mark-all", "--json")
    report = json.loads(out)
    assert rc == 1 and report["passed"] is False
    bad = [t for t in report["tensors"] if not t["passed"]]
    assert [t["name"] for t in bad] == ["conv2"] and bad[0]["worst"] == list(where)
    irrun_value, ref_value = bad[0]["worst_values"]
    assert bad[0]["max_abs"] == pytest.approx(abs(ref_value - irrun_value), rel=1e-12)
    assert bad[0]["max_abs"] == pytest.approx(0.5, abs=1e-5)
    assert report["first_diverging_layer"] == {
        "id": "8", "name": "conv2", "type": "Convolution", "version": 1, "opset": None,
        "tensor": "conv2", "line": 143,
    }  # fmt: skip


def test_fail_fast_stops_at_the_first_diverging_layer(perturbed, capsys, in_root):
    ref, _ = perturbed
    rc, out, _ = run_cli(
        capsys, "models/demo.xml", "--input", "models/demo.inputs.npz", "--ref", str(ref),
        "--mark-all", "--fail-fast",
    )  # fmt: skip
    assert rc == 1
    lines = tensor_lines(out)
    assert lines[-1][:2] == ["FAILED", "conv2"]
    assert all(f[0] == "PASSED" for f in lines[:-1])
    assert "(--fail-fast: stopped at the first failure)" in summary(out)


def test_without_mark_all_only_outputs_are_compared_and_the_layer_is_unknown(tmp_path, capsys):
    feeds = bundled_inputs("demo")
    values = openvino_values("demo", feeds)
    values["probabilities"][0, 2] -= 0.25
    ref = tmp_path / "ref.npz"
    np.savez(ref, **values)
    rc, out, _ = run_cli(
        capsys, str(MODELS / "demo.xml"), "--input", str(MODELS / "demo.inputs.npz"),
        "--ref", str(ref),
    )  # fmt: skip
    assert rc == 1
    assert [f[:2] for f in tensor_lines(out)] == [["FAILED", "probabilities"]]
    assert "max abs 0.25 at [0, 2]" in out
    assert "note: the reference has 14 more of irrun's tensors" in out
    assert out.splitlines()[-1] == (
        "first diverging layer: unknown; run again with --mark-all to compare every layer"
    )


def test_per_tensor_tolerances(perturbed, capsys, in_root):
    ref, _ = perturbed
    args = ["models/demo.xml", "--input", "models/demo.inputs.npz", "--ref", str(ref), "--mark-all"]
    rc, out, _ = run_cli(capsys, *args, "--atol", "conv2:0.6")
    assert rc == 0, out
    assert summary(out).startswith("PASSED | ") and "atol 1e-05 conv2:0.6, rtol 1e-05" in out
    rc, out, _ = run_cli(capsys, *args, "--atol", "conv2:0.4")
    assert rc == 1 and "1 of 8192 elements differ (atol 0.4, rtol 1e-05)" in out
    # A tolerance for one tensor overrides the one for all: 0.6 for all but conv2.
    rc, out, _ = run_cli(capsys, *args, "--atol", "0.6", "--atol", "conv2:0.1", "--rtol", "0")
    assert rc == 1
    assert [f[1] for f in tensor_lines(out) if f[0] == "FAILED"] == ["conv2"]
    assert "1 of 8192 elements differ (atol 0.1, rtol 0)" in out
    assert "| atol 0.6 conv2:0.1, rtol 0 |" in summary(out)


def test_a_tolerance_for_an_unknown_tensor_is_a_usage_error(capsys, in_root):
    rc, _, err = run_cli(
        capsys, "models/demo.xml", "--ref", "models/demo.expected.npz", "--atol", "conv9:1"
    )
    assert rc == 2
    assert err == (
        "irrun: error: tolerance for 'conv9': no tensor of that name in demo.xml "
        "(irrun compare --mark-all lists them)\n"
    )


@pytest.mark.parametrize("bad", ["abc", "conv1:", ":1e-3", "-1", "x:nan", "inf"])
def test_bad_tolerance_syntax_exits_2(bad, capsys, in_root):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "models/demo.xml", "--ref", "models/demo.expected.npz", "--atol", bad])
    assert exc.value.code == 2
    assert f"argument --atol: invalid tolerance value: '{bad}'" in capsys.readouterr().err


def test_a_tolerance_name_may_hold_colons(capsys, tmp_path, in_root):
    # The value follows the last colon: stem_pool:2 is the name of stem_pool's port 2.
    feeds = bundled_inputs("pooling_chain")
    ref = irrun.load("models/pooling_chain.xml").run(feeds, intermediate=True)
    ref["stem_pool:2"] = ref["stem_pool:2"] + 1
    np.savez(tmp_path / "ref.npz", **ref)
    args = ["models/pooling_chain.xml", "--input", "models/pooling_chain.inputs.npz",
            "--ref", str(tmp_path / "ref.npz"), "--mark-all"]  # fmt: skip
    assert run_cli(capsys, *args)[0] == 1
    rc, out, _ = run_cli(capsys, *args, "--atol", "stem_pool:2:1")
    assert rc == 0 and "atol 1e-05 stem_pool:2:1" in out


# ------------------------------------------------------------------ mismatches and missing values


def _pooling_ref(tmp_path: Path, **changes) -> Path:
    ref = irrun.load(MODELS / "pooling_chain.xml").run(bundled_inputs("pooling_chain"))
    for name, value in changes.items():
        if value is None:
            del ref[name]
        else:
            ref[name] = value
    path = tmp_path / "ref.npz"
    np.savez(path, **ref)
    return path


def _compare_pooling(capsys, ref: Path, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        capsys, str(MODELS / "pooling_chain.xml"), "--input",
        str(MODELS / "pooling_chain.inputs.npz"), "--ref", str(ref), *extra,
    )  # fmt: skip


def test_shape_mismatch_fails(tmp_path, capsys):
    ref = _pooling_ref(tmp_path, pooled=np.zeros((1, 3, 2, 3), np.float32))
    rc, out, _ = _compare_pooling(capsys, ref)
    assert rc == 1
    assert tensor_lines(out)[0] == [
        "FAILED", "pooled", "layer 4 'head_pool' (AdaptiveMaxPool-v8)", "[1, 3, 2, 2] float32",
        "shape mismatch: irrun [1, 3, 2, 2], reference [1, 3, 2, 3]",
    ]  # fmt: skip
    assert tensor_lines(out)[1][0] == "PASSED"


def test_element_type_mismatch_fails_but_still_compares_values(tmp_path, capsys):
    expected = irrun.load(MODELS / "pooling_chain.xml").run(bundled_inputs("pooling_chain"))
    ref = _pooling_ref(tmp_path, indices=expected["indices"].astype(np.int64))
    rc, out, _ = _compare_pooling(capsys, ref)
    assert rc == 1
    fields = tensor_lines(out)[1]
    assert fields[:5] == [
        "FAILED", "indices", "layer 4 'head_pool' (AdaptiveMaxPool-v8)", "[1, 3, 2, 2] int32",
        "element type mismatch: irrun int32, reference int64",
    ]  # fmt: skip
    assert fields[5] == "max abs 0"


def test_a_model_output_missing_in_the_reference_fails(tmp_path, capsys):
    ref = _pooling_ref(tmp_path, indices=None)
    rc, out, _ = _compare_pooling(capsys, ref)
    assert rc == 1
    lines = tensor_lines(out)
    assert lines[0][:2] == ["PASSED", "pooled"]
    assert lines[1] == [
        "FAILED", "indices", "layer 4 'head_pool' (AdaptiveMaxPool-v8)", "[1, 3, 2, 2] int32",
        "missing in the reference",
    ]  # fmt: skip
    assert summary(out).startswith("FAILED | 1 of 2 tensors failed")
    assert "first diverging layer" not in out  # nothing diverged: a value is missing


def test_reference_tensors_irrun_does_not_have_are_named(tmp_path, capsys):
    ref = _pooling_ref(tmp_path, conv7=np.zeros(3, np.float32))
    rc, out, _ = _compare_pooling(capsys, ref)
    assert rc == 0
    assert (
        "note: the reference has 1 tensor irrun does not, not compared: conv7 "
        "(irrun's names: irrun compare --mark-all lists them)"
    ) in out.splitlines()


def test_mark_all_with_outputs_only_reference_says_what_was_not_compared(capsys):
    rc, out, _ = _compare_pooling(capsys, MODELS / "pooling_chain.expected.npz", "--mark-all")
    assert rc == 0
    assert (
        "note: 3 of irrun's tensors not in the reference, not compared: stem_pool:1, "
        "stem_pool:2, avg_pool"
    ) in out.splitlines()


def test_a_reference_made_from_other_inputs_is_pointed_out(tmp_path, capsys):
    ref = _pooling_ref(tmp_path, image=np.zeros((1, 3, 16, 16), np.float32))
    rc, out, _ = _compare_pooling(capsys, ref)
    assert rc == 0  # the outputs still agree; the warning is about the inputs
    assert "note: the reference's input 'image' is not the input given (max abs difference" in out


def test_nan_equals_nan_at_the_same_position():
    a = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    assert compare_arrays(a, a.copy()).passed
    r = compare_arrays(a, np.array([1.0, 1.0, np.inf, -np.inf], np.float32))
    assert (r.passed, r.mismatches, r.worst, r.max_abs) == (False, 1, (0,), float("inf"))
    r = compare_arrays(np.array([5.0]), np.array([np.inf]), atol=1.0, rtol=1.0)
    assert not r.passed  # an infinite error never passes, even against |ref| = inf
    r = compare_arrays(np.array([1e-9, 0.0]), np.array([0.0, 0.0]))
    assert r.passed and r.max_rel == float("inf")  # within atol; relative to 0 is infinite


def test_python_api():
    m = irrun.load(MODELS / "pooling_chain.xml")
    feeds = bundled_inputs("pooling_chain")
    ref = m.run(feeds, intermediate=True)
    ref["avg_pool"] = ref["avg_pool"] * 1.001
    report = compare(m, feeds, ref, mark_all=True, rtol={"*": 1e-5, "pooled": 1e-2})
    assert [r.name for r in report.failed] == ["avg_pool"]
    assert report.first_diverging is not None and report.first_diverging.layer.id == "2"
    rtols = {r.name: r.rtol for r in report.results}
    assert rtols == {
        "stem_pool:1": 1e-5,
        "stem_pool:2": 1e-5,
        "avg_pool": 1e-5,
        "pooled": 1e-2,
        "indices": 1e-5,
    }
    with pytest.raises(irrun.IrrunError, match="no tensor of that name"):
        compare(m, feeds, ref, atol={"nope": 1.0})


# ------------------------------------------------------------------ dump directories, reports


def _dump_dir(directory: Path, values: dict[str, np.ndarray], complete: bool = True) -> Path:
    directory.mkdir()
    entries = []
    for i, (name, value) in enumerate(values.items()):
        file = f"{i:04d}_{name.replace(':', '_')}.npy"
        np.save(directory / file, value)
        entries.append({"name": name, "file": file, "shape": list(value.shape),
                        "dtype": str(value.dtype)})  # fmt: skip
    manifest = {"model": "models/pooling_chain.xml", "complete": complete, "tensors": entries}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    return directory


def test_a_dump_directory_is_a_reference(tmp_path, capsys):
    values = irrun.load(MODELS / "pooling_chain.xml").run(
        bundled_inputs("pooling_chain"), intermediate=True
    )
    values["avg_pool"] = values["avg_pool"].copy()
    values["avg_pool"][0, 1, 2, 3] += 2
    ref = _dump_dir(tmp_path / "dump", values, complete=False)
    rc, out, _ = _compare_pooling(capsys, ref, "--mark-all")
    assert rc == 1
    assert [f[1] for f in tensor_lines(out) if f[0] == "FAILED"] == ["avg_pool"]
    assert "max abs 2 at [0, 1, 2, 3]" in out
    assert f"note: {ref / 'manifest.json'} says the dump is incomplete" in out
    assert out.splitlines()[-1].startswith("first diverging layer: 2 'avg_pool' (AvgPool-v14) at ")


def test_a_real_dump_is_reproduced_from_its_own_inputs(tmp_path, capsys):
    # irrun run --dump-dir keeps the random inputs it used; compare takes them from there.
    dump = tmp_path / "dump"
    assert main([str(MODELS / "demo.xml"), "--seed", "7", "--dump-dir", str(dump)]) == 0
    capsys.readouterr()
    rc = main(["compare", str(MODELS / "demo.xml"), "--ref", str(dump), "--mark-all"])
    out = capsys.readouterr().out
    assert rc == 0 and summary(out).startswith("PASSED | 15 of 15 tensors passed")
    # Perturb one dumped layer: it fails, and is named as where the run diverged.
    manifest = json.loads((dump / "manifest.json").read_text())
    entry = next(e for e in manifest["tensors"] if e["name"] == "pool2")
    value = np.load(dump / entry["file"])
    value[0, 5, 1, 2] -= 0.25
    np.save(dump / entry["file"], value)
    rc = main(["compare", str(MODELS / "demo.xml"), "--ref", str(dump), "--mark-all"])
    out = capsys.readouterr().out
    assert rc == 1
    assert next(f[1] for f in tensor_lines(out) if f[0] == "FAILED") == "pool2"
    assert "max abs 0.25 at [0, 5, 1, 2]" in out
    assert out.splitlines()[-1].startswith("first diverging layer: 10 'pool2' (AvgPool-v14) at ")
    # Other inputs than the dump's: compare says so.
    rc = main(["compare", str(MODELS / "demo.xml"), "--ref", str(dump), "-i",
               str(MODELS / "demo.inputs.npz")])  # fmt: skip
    out = capsys.readouterr().out
    assert rc == 1 and "note: the reference's input 'image' is not the input given" in out


def test_bad_references_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    cases = {
        str(MODELS / "demo.xml"): "not a .npz file (no zip header)",
        str(tmp_path / "nothing.npz"): "no such reference file",
        str(tmp_path / "empty"): "no manifest.json",
    }
    for ref, complaint in cases.items():
        rc, out, err = _compare_pooling(capsys, Path(ref))
        assert rc == 1 and out == ""
        assert err.startswith(f"irrun: error: {ref}") and complaint in err
        assert err.count("\n") == 1


def test_report_file_and_json(tmp_path, capsys):
    report = tmp_path / "report.json"
    rc, out, _ = _compare_pooling(capsys, MODELS / "pooling_chain.expected.npz", "-o", str(report))
    assert rc == 0 and summary(out).startswith("PASSED | 2 of 2 tensors passed")
    data = json.loads(report.read_text())
    assert data["passed"] is True and data["summary"]["compared"] == 2
    assert [t["name"] for t in data["tensors"]] == ["pooled", "indices"]
    assert data["tensors"][0]["max_abs"] == 0.0 and data["tensors"][0]["shape"] == [1, 3, 2, 2]
    rc, out, _ = _compare_pooling(capsys, MODELS / "pooling_chain.expected.npz", "--json")
    assert json.loads(out) == data


# ------------------------------------------------------------------ OpenVINO's caveats


def test_openvino_missing_is_a_one_line_error(monkeypatch, capsys, in_root):
    monkeypatch.setitem(sys.modules, "openvino", None)  # import openvino raises ImportError
    rc, out, err = run_cli(capsys, "models/demo.xml", "--ref-backend", "openvino")
    assert (rc, out) == (1, "")
    assert err == (
        "irrun: error: --ref-backend openvino needs OpenVINO, which is not installed: "
        "pip install openvino\n"
    )


def test_adaptive_max_pool_with_i64_indices_is_compared_through_i32(tmp_path, capsys):
    ov = pytest.importorskip("openvino")
    from openvino import opset8

    x = opset8.parameter([1, 2, 7, 5], np.float32, name="x")
    pool = opset8.adaptive_max_pool(x, opset8.constant(np.array([3, 2], np.int64)), "i64")
    pool.set_friendly_name("amp")
    pool.output(0).set_names({"values"})
    pool.output(1).set_names({"indices"})
    xml = tmp_path / "amp.xml"
    ov.save_model(ov.Model(pool.outputs(), [x]), xml, compress_to_fp16=False)
    with pytest.raises(RuntimeError, match="does not support i64"):
        ov.Core().compile_model(str(xml), "CPU")  # why the workaround exists
    rc, out, _ = run_cli(capsys, str(xml), "--ref-backend", "openvino", "--mark-all")
    assert rc == 0, out
    assert tensor_lines(out)[1][:4] == [
        "PASSED", "indices", "layer 2 'amp' (AdaptiveMaxPool-v8)", "[1, 2, 3, 2] int64"
    ]  # fmt: skip
    assert (
        "note: OpenVINO's CPU plugin has no i64 indices for AdaptiveMaxPool: 'amp' ran there "
        "with i32 indices, compared as int64"
    ) in out.splitlines()


def test_dynamic_same_pads_max_pool_is_compared_at_static_shapes(tmp_path, capsys):
    ov = pytest.importorskip("openvino")
    from openvino import opset14

    x = opset14.parameter(ov.PartialShape([1, 1, -1]), np.float32, name="x")
    pool = opset14.max_pool(x, [2], [1], [0], [0], [2], "floor", "same_lower", "i32")
    pool.set_friendly_name("pool")
    xml = tmp_path / "pool.xml"
    ov.save_model(ov.Model(pool.outputs(), [x]), xml, compress_to_fp16=False)
    feeds = {"x": np.arange(1, 8, dtype=np.float32).reshape(1, 1, 7)}
    np.savez(tmp_path / "x.npz", **feeds)
    # The plugin's own result on the dynamic model is wrong (pads_begin 0 instead of 1).
    wrong = ov.Core().compile_model(str(xml), "CPU")(feeds)[0]
    assert wrong.ravel().tolist() == [2, 4, 6, 7]
    rc, out, _ = run_cli(
        capsys, str(xml), "--input", str(tmp_path / "x.npz"), "--ref-backend", "openvino"
    )
    assert rc == 0, out
    assert (
        "note: OpenVINO's copy of the model was reshaped to the inputs' shapes x[1,1,7] (its CPU "
        "plugin pads MaxPool-8/14 same_upper/same_lower wrongly on dynamic dims)"
    ) in out.splitlines()


# ------------------------------------------------------------------ as a process


def test_exit_codes_as_a_process(tmp_path):
    ref = _pooling_ref(tmp_path, pooled=np.zeros((1, 3, 2, 2), np.float32))
    base = [sys.executable, "-m", "irrun", "compare", str(MODELS / "pooling_chain.xml"),
            "--input", str(MODELS / "pooling_chain.inputs.npz")]  # fmt: skip
    ok = subprocess.run([*base, "--ref", str(MODELS / "pooling_chain.expected.npz")],
                        capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0 and ok.stderr == ""
    bad = subprocess.run([*base, "--ref", str(ref)], capture_output=True, text=True)
    assert bad.returncode == 1 and "FAILED | pooled |" in bad.stdout
    misuse = subprocess.run([*base, "--ref", str(ref), "--rtol", "x"], capture_output=True,
                            text=True)  # fmt: skip
    assert misuse.returncode == 2 and "invalid tolerance value: 'x'" in misuse.stderr
    neither = subprocess.run(base, capture_output=True, text=True)
    assert neither.returncode == 2 and "one of the arguments --ref --ref-backend" in neither.stderr


# ------------------------------------------------------------------ error statistics


@pytest.mark.parametrize(
    ("stat", "atol", "rtol", "passed", "stat_abs", "stat_rel"),
    [
        # errors [0, 0, 0, 1] abs, [0, 0, 0, 0.2] rel: one of four elements off
        ("elemwise", 0.5, 0.05, False, None, None),
        ("max", 0.5, 0.05, False, 1.0, 0.2),
        ("max", 0.5, 0.2, True, 1.0, 0.2),  # the relative error is within rtol
        ("max", 1.0, 0.0, True, 1.0, 0.2),  # the absolute one within atol
        ("mean", 0.25, 0.0, True, 0.25, 0.05),
        ("mean", 0.2, 0.04, False, 0.25, 0.05),
        ("median", 0.0, 0.0, True, 0.0, 0.0),
    ],
)  # fmt: skip
def test_an_error_statistic_passes_by_atol_or_rtol(stat, atol, rtol, passed, stat_abs, stat_rel):
    r = compare_arrays(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0, 5.0]), atol, rtol,
                       "y", stat)  # fmt: skip
    # The elements outside atol + rtol * |ref| are counted whatever decides.
    assert (r.passed, r.mismatches, r.check_error_stat) == (passed, int(atol + rtol * 5 < 1), stat)
    if stat_abs is None:
        assert r.stat_abs is None and r.stat_rel is None
    else:
        assert (r.stat_abs, r.stat_rel) == (pytest.approx(stat_abs), pytest.approx(stat_rel))


def test_a_shape_mismatch_fails_whatever_the_statistic():
    r = compare_arrays(np.zeros(3), np.zeros(4), check_error_stat="median")
    assert not r.passed and r.problem.startswith("shape mismatch")


def test_an_error_statistic_decides_instead_of_each_element(perturbed, capsys, in_root):
    ref, _ = perturbed  # conv2: one element of 8192 off by 0.5
    args = ["models/demo.xml", "--input", "models/demo.inputs.npz", "--ref", str(ref), "--mark-all"]
    assert run_cli(capsys, *args, "--atol", "conv2:1e-4")[0] == 1
    rc, out, _ = run_cli(capsys, *args, "--atol", "conv2:1e-4", "--check-error-stat", "conv2:mean")
    assert rc == 0, out
    conv2 = next(f for f in tensor_lines(out) if f[1] == "conv2")
    assert conv2[0] == "PASSED"
    mean = re.fullmatch(r"mean error abs (\S+) rel (\S+) \(atol 0\.0001, rtol 1e-05\)", conv2[4])
    assert mean and float(mean.group(1)) == pytest.approx(0.5 / 8192, rel=0.05)
    assert "| atol 1e-05 conv2:0.0001, rtol 1e-05, check elemwise conv2:mean error |" in summary(out)
    assert run_cli(capsys, *args, "--check-error-stat", "median")[0] == 0
    rc, out, _ = run_cli(capsys, *args, "--check-error-stat", "max", "--json")
    report = json.loads(out)
    assert rc == 1 and report["check_error_stat"] == "max"
    bad = [t for t in report["tensors"] if not t["passed"]]
    assert [(t["name"], t["check_error_stat"]) for t in bad] == [("conv2", "max")]
    assert bad[0]["stat_abs"] == pytest.approx(0.5, abs=1e-5)


@pytest.mark.parametrize(
    ("given", "complaint"),
    [
        (["--check-error-stat", "avg"], "argument --check-error-stat: invalid error stat value: 'avg'"),
        (["--check-error-stat", ":max"], "argument --check-error-stat: invalid error stat value: ':max'"),
    ],
)  # fmt: skip
def test_a_bad_error_statistic_exits_2(given, complaint, capsys, in_root):
    with pytest.raises(SystemExit) as exc:
        main(["compare", "models/demo.xml", "--ref", "models/demo.expected.npz", *given])
    assert exc.value.code == 2
    assert complaint in capsys.readouterr().err


def test_an_error_statistic_for_an_unknown_tensor_is_a_usage_error(capsys, in_root):
    rc, _, err = run_cli(capsys, "models/demo.xml", "--ref", "models/demo.expected.npz",
                         "--check-error-stat", "conv9:max")  # fmt: skip
    assert rc == 2
    assert err.startswith("irrun: error: error stat for 'conv9': no tensor of that name in demo.xml")


def test_an_error_statistic_from_python_per_tensor():
    m = irrun.load(MODELS / "pooling_chain.xml")
    x = {"image": np.ones((1, 3, 16, 16), np.float32)}
    ref = m.run(x)
    ref["pooled"] = ref["pooled"].copy()
    ref["pooled"].flat[0] += 0.5  # one element of 12 off
    report = compare(m, x, ref, check_error_stat={"pooled": "median"})
    assert report.passed and report.results[0].check_error_stat == "median"
    assert report.results[1].check_error_stat == "elemwise"  # "*" is elemwise unless given
    assert not compare(m, x, ref, check_error_stat="max").passed
    with pytest.raises(UsageError, match="error stat 'avg' is not one of"):
        compare(m, x, ref, check_error_stat="avg")


# ------------------------------------------------------------------ quantized models

CORPUS = ROOT / "tests" / "corpus"


def test_a_fake_quantize_model_gets_the_int8_note(capsys):
    pytest.importorskip("openvino")
    name = CORPUS / "cnn_int8_maxpool"
    rc, out, _ = run_cli(capsys, f"{name}.xml", "--input", f"{name}.inputs.npz",
                         "--ref-backend", "openvino", "--atol", "1e-3")  # fmt: skip
    assert rc == 0, out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert any("5 FakeQuantize layers" in n and "INT8 kernels" in n for n in notes), notes
    # NNCF stores the int8 weights as i8 constants converted to f32: no f16 rounding.
    assert any("compressed weights" in n and "f16" not in n for n in notes), notes


def test_compressed_weights_run_without_dynamic_quantization(capsys):
    pytest.importorskip("openvino")
    name = CORPUS / "bert_int4_asym"
    args = (f"{name}.xml", "--input", f"{name}.inputs.npz", "--ref-backend", "openvino")
    rc, out, _ = run_cli(capsys, *args, "--atol", "2e-3")
    assert rc == 0, out
    notes = [line for line in out.splitlines() if line.startswith("note: ")]
    assert any("DYNAMIC_QUANTIZATION_GROUP_SIZE 0" in n and "decompressed in f16" in n
               for n in notes), notes  # fmt: skip


def test_bf16_outputs_of_openvino_are_read_as_bf16(tmp_path, capsys):
    """OpenVINO hands a bf16 tensor's bits to NumPy as float16; compare reads them as bf16
    (a Convert to bf16 rounds to nearest even in the plugin as in ml_dtypes)."""
    import openvino as ov
    from openvino import opset1

    x = opset1.parameter([2, 8], np.float32, name="x")
    y = opset1.convert(x, "bf16")
    y.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "bf16.xml"
    ov.save_model(ov.Model([y.output(0)], [x], "bf16"), path)
    assert main(["compare", str(path), "--ref-backend", "openvino", "--atol", "0",
                 "--rtol", "0"]) == 0  # fmt: skip
    assert "PASSED | 1 of 1 tensor passed | atol 0, rtol 0" in capsys.readouterr().out
