"""benchmarks/all.py and the class scripts' --json: how targets are judged, what a missing
class prints, and short runs of the tiny-model scripts end to end (their times are machine
noise and are not checked; their agreement with OpenVINO is)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NAMES = ("all", "tiny_transformers", "llm_decode", "run")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def scripts():
    # The scripts set one-thread BLAS variables for themselves: processes spawned by later
    # tests must not inherit them (a convolution sums in another order with other threads).
    environment = dict(os.environ)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield {name: _load(name) for name in NAMES}
    finally:
        for name in NAMES:
            sys.modules.pop(f"benchmark_{name}", None)
        sys.path.remove(str(BENCHMARKS))
        os.environ.clear()
        os.environ.update(environment)


def _rows(ratios: dict[str, float]) -> list[dict]:
    return [{"model": m, "ratio": r} for m, r in ratios.items()]


def test_median_and_worst_decide_the_tiny_targets(scripts):
    a = scripts["all"]
    test = a._median_worst(2, 4)
    met, text = test(a._stats(_rows({"x": 1.0, "y": 2.0, "z": 3.9}), "ratio"))
    assert met and "median 2.00" in text and "worst 3.90 (z" in text
    assert not test(a._stats(_rows({"x": 1.0, "y": 2.5, "z": 3.0}), "ratio"))[0]  # median 2.5
    assert not test(a._stats(_rows({"x": 1.0, "y": 1.0, "z": 4.1}), "ratio"))[0]  # one over 4


def test_geomean_decides_the_cnn_targets(scripts):
    a = scripts["all"]
    s = a._stats(_rows({"a": 1.0, "b": 4.0}), "ratio")
    assert s["geomean"] == pytest.approx(2.0) and s["median"] == pytest.approx(2.5)
    assert not a._geo_worst(1.5, 2.5)(s)[0]
    assert a._geo_worst(2.0, None)(s)[0]
    assert not a._geo_worst(2.0, 3.0)(s)[0]  # b is over 3
    assert a._each(4)(s)[0] and not a._each(3.9)(s)[0]


def test_cpu_time_ratios_are_taken_where_every_row_has_one(scripts):
    a = scripts["all"]
    assert a._ratio_key([{"ratio": 2, "cpu_ratio": 3}]) == "cpu_ratio"
    assert a._ratio_key([{"ratio": 2, "cpu_ratio": 3}, {"ratio": 2, "cpu_ratio": None}]) == "ratio"
    assert a._ratio_key([]) == "ratio"


def test_only_the_flags_a_script_takes_are_passed(scripts):
    a = scripts["all"]
    help_text = "usage: x [--runs RUNS] [--json PATH]\n  --runs RUNS  runs\n  --json PATH\n"
    assert a._taken(["--runs", "3"], help_text) == ["--runs", "3"]
    assert a._taken(["--quick"], help_text) == []
    assert a._taken(["--quick", "--runs", "3", "--tokens", "4"], help_text) == ["--runs", "3"]


def test_a_class_without_its_script_or_models_says_how_to_get_them(scripts, tmp_path):
    a = scripts["all"]
    missing = a.Class("x", "X", "no_such_script.py", [], [], "", "python make_x.py")
    r = a.run_class(missing, "default", True, tmp_path, None)
    assert r["skipped"].startswith("benchmarks/no_such_script.py is not in this checkout")
    assert "python make_x.py" in r["skipped"]
    no_models = a.Class("x", "X", "run.py", [], [], "no_such_folder/*.xml", "python make_x.py")
    r = a.run_class(no_models, "default", True, tmp_path, None)
    assert r == {"skipped": "no benchmarks/models/no_such_folder/*.xml: run `python make_x.py`"}


def test_the_fast_engine_is_switched_on_only_in_its_runs(scripts):
    a = scripts["all"]
    default, fast = a._env("default"), a._env("fast")
    assert default["IRRUN_JIT"] == "0"  # the default install: NumPy only
    assert all(fast[k] == v for k, v in a.FAST_ENV.items())


def test_a_table_judges_each_engine_against_its_targets(scripts, capsys):
    a = scripts["all"]
    cnn = next(c for c in a.CLASSES if c.key == "cnn")
    rows = {"default": _rows({"m1": 1.2, "m2": 1.6}), "fast": _rows({"m1": 0.8, "m2": 1.1})}
    results = {e: {"rows": [dict(r, threads=1) for r in v], "command": "c", "seconds": 1}
               for e, v in rows.items()}  # fmt: skip
    lines = a.report_class(cnn, results, ["default", "fast"], None)
    assert lines[0].startswith("cnn [default] geomean <= 1.5x, none over 2.5x: met: geomean 1.39")
    assert lines[1].startswith("cnn [fast] geomean <= 1.0x: met: geomean 0.94")
    out = capsys.readouterr().out
    assert "m2" in out and "0.69" in out  # fast over default for m2: 1.1 / 1.6


def test_the_llama_table_judges_the_fast_engine_per_token_and_by_memory(scripts, capsys):
    a = scripts["all"]
    llama = next(c for c in a.CLASSES if c.key == "llama")
    row = {"irrun_ms": 50.0, "openvino_ms": 40.0, "ratio": 1.25, "bin_mb": 100.0, "kv_mb": 20.0}
    results = {"default": {"rows": [dict(row, model="f32", peak_mb=900.0)], "command": "c",
                           "seconds": 1},
               "fast": {"rows": [dict(row, model="f32", peak_mb=900.0),
                                 dict(row, model="int4", ratio=2.5, peak_mb=150.0)],
                        "command": "c", "seconds": 1}}  # fmt: skip
    lines = a.report_class(llama, results, ["default", "fast"], None)
    assert lines == ["llama [fast] f32 <= 1.3x per token: met: 1.25x",
                     "llama [fast] int4 <= 2.0x per token, peak <= 1.5x (.bin + KV): NOT met: "
                     "2.50x, peak 1.25x"]  # fmt: skip
    assert "20.0" in capsys.readouterr().out  # tokens/s: 1000 / 50 ms


def test_tiny_transformers_agree_with_openvino_and_write_json(scripts, tmp_path):
    pytest.importorskip("openvino")
    out = tmp_path / "tiny.json"
    assert scripts["tiny_transformers"].main(["--dir", str(tmp_path), "--only", "corpus/bert",
                                              "--runs", "2", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert row["model"] == "corpus/bert" and row["error"] < 1e-5
    assert row["ratio"] == pytest.approx(row["irrun_ms"] / row["openvino_ms"])
    assert data["summary"]["models"] == 1 and data["summary"]["worst_model"] == "corpus/bert"


def test_llm_decode_agrees_with_openvino_and_writes_json(scripts, tmp_path):
    pytest.importorskip("openvino")
    out = tmp_path / "llm.json"
    assert scripts["llm_decode"].main(["--only", "gpt2", "--tokens", "4", "--repeats", "1",
                                       "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert row["model"] == "gpt2" and row["error"] < 1e-5  # the last step's logits
    assert row["cpu_ratio"] == pytest.approx(row["irrun_cpu_ms"] / row["openvino_cpu_ms"])


def test_llm_decode_profiles_a_decode_step_by_op_type(scripts, capsys):
    pytest.importorskip("openvino")
    assert scripts["llm_decode"].main(["--only", "gpt2", "--tokens", "4", "--repeats", "1",
                                       "--profile"]) == 0
    out = capsys.readouterr().out
    assert "gpt2: a decode step, median of steps 3 to 5" in out
    assert "layers; the step runs" in out and "ms in kernels" in out
    assert "memo (miss: runs its shape-only layers)" in out  # the growing mask's memos
    assert "ScaledDotProductAttention" in out


def test_the_pooling_run_writes_its_rows_and_targets(scripts, tmp_path):
    pytest.importorskip("openvino")
    out = tmp_path / "run.json"
    assert scripts["run"].main(["--runs", "2", "--only", "W5", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert row["model"] == "W5" and row["mismatches"] == 0  # bit-exact with OpenVINO
    assert "[met] bit-exact with OpenVINO on every pooling workload" in data["summary"]["targets"]
