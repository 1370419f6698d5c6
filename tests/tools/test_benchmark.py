"""``irrun benchmark``: limits, warm-up, statistics, text and JSON output, errors, progress.

Timings vary from run to run and machine to machine: the tests check the output's
structure and counts, and the statistics on latencies given by hand (a fake clock),
never a measured value.  (tests/tools/test_benchmark_scripts.py tests the benchmarks/ scripts.)
"""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.cli import TWO_INPUTS_IR, run_cli

import irrun
from irrun.errors import UsageError
from irrun.tools import benchmark as bm

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DEMO = str(MODELS / "demo.xml")
REPORT_KEYS = {
    "irrun_version", "model", "inputs", "input_source", "threads", "limits", "load_ms",
    "reshape_ms", "iterations", "duration_ms", "warmup", "first_inference_ms", "latency_ms",
    "throughput", "batch", "latencies_ms",
}  # fmt: skip
STAT_KEYS = {"median", "average", "min", "max", "p90"}
LABELS = [
    "Model:", "Inputs:", "Threads:", "Read model took", "Warm-up:", "First inference took",
    "Count:", "Duration:", "Latency:", "   Median:", "   Average:", "   Min:", "   Max:",
    "   90 percentile:", "Throughput:",
]  # fmt: skip


def bench_json(capsys, *args: str) -> dict:
    rc, out, err = run_cli(capsys, "benchmark", *args, "--json")
    assert rc == 0, err
    return json.loads(out)


# --- statistics: benchmark_app's definitions ------------------------------------------------


def test_percentiles_by_hand():
    # Nearest rank, sorted[ceil(n * p / 100) - 1]: the median of an even count is the
    # lower middle value, not the mean of the two.
    assert bm.percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert bm.percentile([1.0, 2.0, 3.0], 50) == 2.0
    assert bm.percentile(list(range(1, 11)), 90) == 9  # ceil(9.0) = 9th value
    assert bm.percentile(list(range(1, 12)), 90) == 10  # ceil(9.9) = 10th value
    assert bm.percentile(list(range(1, 21)), 90) == 18
    assert bm.percentile([7.0], 50) == bm.percentile([7.0], 90) == 7.0
    assert bm.percentile([1, 2, 3], 100) == 3
    assert bm.percentile([1, 2, 3], 1) == 1
    assert bm.percentile(list(range(1, 11)), 12.5) == 2  # ceil(1.25) = 2nd value


def test_latency_stats_by_hand():
    stats = bm.latency_stats([5.0, 1.0, 4.0, 2.0, 3.0])
    # sorted 1..5: median ceil(2.5) = 3rd, p90 ceil(4.5) = 5th, mean 15 / 5.
    assert stats == {"median": 3.0, "average": 3.0, "min": 1.0, "max": 5.0, "p90": 5.0}
    stats = bm.latency_stats([10.0, 40.0, 20.0, 30.0])
    assert stats == {"median": 20.0, "average": 25.0, "min": 10.0, "max": 40.0, "p90": 40.0}


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 10, 11, 19, 20, 21, 99, 100, 101, 1000])
@pytest.mark.parametrize("p", [1, 10, 25, 50, 75, 90, 95, 99, 100])
def test_percentile_is_benchmark_apps(n, p):
    # The function the Python benchmark_app of the installed OpenVINO reports with.
    ov_bench = pytest.importorskip("openvino.tools.benchmark.benchmark")
    values = sorted(np.random.default_rng(n * 1000 + p).random(n).tolist())
    assert bm.percentile(values, p) == ov_bench.percentile(values, p)


def test_percentile_refuses_what_has_none():
    with pytest.raises(ValueError, match="no values"):
        bm.percentile([], 50)
    for p in (0, -5, 101):
        with pytest.raises(ValueError, match="percent"):
            bm.percentile([1.0], p)
    with pytest.raises(ValueError, match="no latencies"):
        bm.latency_stats([])


# --- the loop, on a fake clock --------------------------------------------------------------


class FakeClock:
    """time.perf_counter for a model whose runs take the seconds given, in turn."""

    def __init__(self, run_seconds: list[float]) -> None:
        self.now = 100.0
        self.run_seconds = list(run_seconds)
        self.runs = 0

    def __call__(self) -> float:
        return self.now

    def run(self, feeds):  # the model's run
        self.now += self.run_seconds[self.runs % len(self.run_seconds)]
        self.runs += 1
        return {}


@pytest.fixture
def clock(monkeypatch):
    def make(run_seconds: list[float]) -> FakeClock:
        fake = FakeClock(run_seconds)
        monkeypatch.setattr(bm.time, "perf_counter", fake)
        return fake

    return make


def test_warmup_runs_are_timed_but_not_counted(clock):
    fake = clock([5.0, 1.0, 2.0, 3.0, 4.0])
    result = bm.benchmark(fake, {}, iterations=4, warmup=1)
    assert fake.runs == 5
    assert result.warmup == (5.0,)
    assert result.latencies == (1.0, 2.0, 3.0, 4.0)
    assert result.first_inference == 5.0
    assert (result.iterations, result.duration) == (4, 10.0)
    stats = (result.median, result.average, result.min, result.max, result.p90)
    assert stats == (2.0, 2.5, 1.0, 4.0, 4.0)
    assert result.throughput == 0.4
    ms = {"median": 2000.0, "average": 2500.0, "min": 1000.0, "max": 4000.0, "p90": 4000.0}
    assert result.summary()["latency_ms"] == ms


def test_no_warmup_counts_the_first_run(clock):
    fake = clock([5.0, 1.0])
    result = bm.benchmark(fake, {}, iterations=2, warmup=0)
    assert (fake.runs, result.latencies, result.warmup) == (2, (5.0, 1.0), ())
    assert result.first_inference == 5.0
    fake = clock([1.0])
    assert len(bm.benchmark(fake, {}, iterations=3, warmup=3).warmup) == fake.runs - 3 == 3


def test_time_limit_finishes_the_run_that_crosses_it(clock):
    fake = clock([0.1])
    result = bm.benchmark(fake, {}, seconds=0.35, warmup=0)
    assert result.iterations == 4  # elapsed 0.1, 0.2, 0.3 < 0.35, then 0.4
    assert math.isclose(result.duration, 0.4)


def test_both_limits_must_be_reached(clock):
    # benchmark_app's loop: while iteration < niter or elapsed < duration.
    assert bm.benchmark(clock([0.1]), {}, iterations=2, seconds=0.35, warmup=0).iterations == 4
    assert bm.benchmark(clock([0.1]), {}, iterations=6, seconds=0.35, warmup=0).iterations == 6


def test_default_limit_is_ten_seconds(clock):
    result = bm.benchmark(clock([1.5]), {}, warmup=0)
    assert bm.DEFAULT_SECONDS == 10.0
    assert result.iterations == 7  # 6 runs make 9 s, the 7th 10.5 s


def test_fps_counts_the_batch(clock):
    result = bm.benchmark(clock([0.25]), {}, iterations=4, warmup=0, batch=8)
    assert (result.throughput, result.fps) == (4.0, 32.0)
    assert result.summary()["throughput"] == {"inferences_per_second": 4.0, "fps": 32.0}


def test_on_run_sees_each_measured_run(clock):
    seen: list[float] = []
    bm.benchmark(clock([3.0, 1.0, 2.0]), {}, iterations=2, on_run=seen.append)
    assert seen == [1.0, 2.0]


@pytest.mark.parametrize("kwargs", [
    {"iterations": 0}, {"iterations": -1}, {"iterations": True}, {"iterations": 2.0},
    {"seconds": 0}, {"seconds": -1.0}, {"seconds": math.nan}, {"seconds": math.inf},
    {"seconds": "1"}, {"warmup": -1}, {"batch": 0},
])  # fmt: skip
def test_api_refuses_bad_limits(kwargs):
    with pytest.raises(UsageError):
        bm.benchmark(FakeClock([1.0]), {}, **kwargs)


def test_api_on_a_real_model():
    model = irrun.load(DEMO)
    result = bm.benchmark(model, model.random_inputs(seed=1), iterations=3, warmup=2)
    assert (result.iterations, len(result.warmup)) == (3, 2)
    assert all(t > 0 for t in result.latencies)
    assert result.duration >= sum(result.latencies)
    timed = bm.benchmark(model, model.random_inputs(seed=1), seconds=0.2, warmup=0)
    assert timed.iterations >= 1 and timed.duration >= 0.2


# --- batches -------------------------------------------------------------------------------


def test_batch_is_guessed_from_image_inputs_as_benchmark_app_does():
    z = np.zeros
    assert bm.batch_of({"x": z((8, 3, 32, 32))}) == 8  # NCHW
    assert bm.batch_of({"x": z((8, 32, 32, 3))}) == 8  # NHWC
    assert bm.batch_of({"x": z((8, 16, 32, 32))}) == 1  # 16 channels: no layout guessed
    assert bm.batch_of({"x": z((8, 3, 4))}) == 1
    assert bm.batch_of({"x": z((2, 3, 8, 8)), "y": z((4, 3, 8, 8))}) == 1  # they disagree
    assert bm.batch_of({"x": z((2, 3, 8, 8)), "n": z(4)}) == 2


# --- the command: text ---------------------------------------------------------------------


def test_text_output(capsys):
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "5")
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    labels = [next((lab for lab in LABELS if line.startswith(lab)), None) for line in lines]
    assert [lab for lab in labels if lab] == LABELS
    assert lines[0] == f"Model:                {DEMO}"
    assert lines[1] == "Inputs:               random, seed 0"
    assert lines[2] == "   image              f32 [1,3,32,32]"
    assert re.fullmatch(r"Threads: +\d+", lines[3])
    text = "\n".join(lines)
    assert re.search(r"^Count: +5 iterations$", text, re.M)
    assert re.search(r"^Warm-up: +1 run, not counted$", text, re.M)
    for label in ("Read model took", "First inference took", "Duration:", "   Median:",
                  "   Average:", "   Min:", "   Max:", "   90 percentile:"):  # fmt: skip
        assert re.search(rf"^{label} +\d+\.\d\d ms$", text, re.M), label
    assert re.search(r"^Throughput: +\d+\.\d\d FPS$", text, re.M)
    assert "Reshape model took" not in text


def test_shape_reshapes_and_fps_counts_the_batch(capsys):
    rc, out, _ = run_cli(capsys, "benchmark", DEMO, "-niter", "2", "--shape", "[2,3,32,32]")
    assert rc == 0
    assert "   image              f32 [2,3,32,32]" in out.splitlines()
    assert re.search(r"^Reshape model took +\d+\.\d\d ms$", out, re.M)
    assert re.search(r"^Throughput: +\d+\.\d\d FPS \(batch 2, \d+\.\d\d inferences/s\)$", out, re.M)
    report = bench_json(capsys, DEMO, "-niter", "2", "-shape", "image[2,3,16,16]")
    assert report["inputs"][0]["shape"] == [2, 3, 16, 16]
    assert report["batch"] == 2 and report["reshape_ms"] >= 0
    speed = report["throughput"]
    assert math.isclose(speed["fps"], 2 * speed["inferences_per_second"])


def test_b_sets_the_batch(capsys, tmp_path):
    report = bench_json(capsys, DEMO, "-niter", "1", "-b", "3")
    assert (report["inputs"][0]["shape"], report["batch"]) == ([3, 3, 32, 32], 3)
    # After --shape, and on inputs whose first dim is 1 (not images here).
    (tmp_path / "two.xml").write_text(TWO_INPUTS_IR)
    report = bench_json(capsys, str(tmp_path / "two.xml"), "-niter", "1", "--batch", "2")
    assert [i["shape"] for i in report["inputs"]] == [[2, 1, 4, 4], [2, 1, 4, 4]]
    assert report["batch"] == 2
    report = bench_json(capsys, DEMO, "-niter", "1", "--shape", "[2,3,16,16]", "-b", "4")
    assert report["inputs"][0]["shape"] == [4, 3, 16, 16]


def test_b_without_a_batch_dim_is_refused(capsys, tmp_path):
    (tmp_path / "two.xml").write_text(TWO_INPUTS_IR)
    rc, out, err = run_cli(capsys, "benchmark", str(tmp_path / "two.xml"), "--shape",
                           "a[3,1,4,4],b[3,1,4,4]", "-b", "2", "-niter", "1")  # fmt: skip
    assert (rc, out) == (1, "")
    assert err == ("irrun: error: -b 2: no input has a batch dim, a first dim that is dynamic "
                   "or 1 or an image's (inputs: a [3,1,4,4], b [3,1,4,4]); give the shapes "
                   "with --shape\n")  # fmt: skip


def test_threads_and_no_warmup(capsys):
    rc, out, _ = run_cli(capsys, "benchmark", DEMO, "-niter", "2", "-nthreads", "1", "--no-warmup")
    assert rc == 0
    assert re.search(r"^Threads: +1$", out, re.M)
    assert re.search(r"^Warm-up: +none$", out, re.M)
    report = bench_json(capsys, DEMO, "-niter", "2", "--threads", "1", "-no_warmup")
    assert (report["threads"], report["warmup"]) == (1, 0)
    assert report["first_inference_ms"] == report["latencies_ms"][0]
    report = bench_json(capsys, DEMO, "-niter", "1", "--warmup", "3")
    assert report["warmup"] == 3


# --- the command: JSON ---------------------------------------------------------------------


def test_json_report(capsys):
    report = bench_json(capsys, DEMO, "-niter", "4", "--seed", "3")
    assert set(report) == REPORT_KEYS
    assert report["model"] == DEMO and report["irrun_version"] == irrun.__version__
    assert report["inputs"] == [
        {"name": "image", "shape": [1, 3, 32, 32], "element_type": "f32", "dtype": "float32"}
    ]
    assert report["input_source"] == "random, seed 3"
    assert report["limits"] == {"iterations": 4, "seconds": None}
    assert (report["iterations"], report["warmup"], report["batch"]) == (4, 1, 1)
    assert report["reshape_ms"] is None
    assert len(report["latencies_ms"]) == 4
    latency = report["latency_ms"]
    assert set(latency) == STAT_KEYS
    # The figures are those of the latencies listed, by benchmark_app's definitions.
    assert latency == pytest.approx(bm.latency_stats(report["latencies_ms"]))
    assert latency["min"] <= latency["median"] <= latency["p90"] <= latency["max"]
    assert report["duration_ms"] >= sum(report["latencies_ms"])
    speed = report["throughput"]
    assert set(speed) == {"inferences_per_second", "fps"}
    assert speed["inferences_per_second"] == pytest.approx(4 / report["duration_ms"] * 1e3)


def test_time_limit(capsys):
    report = bench_json(capsys, DEMO, "-t", "0.2")
    assert report["limits"] == {"iterations": None, "seconds": 0.2}
    assert report["iterations"] >= 1 and report["duration_ms"] >= 200
    both = bench_json(capsys, DEMO, "-niter", "3", "--time", "0.05")
    assert both["limits"] == {"iterations": 3, "seconds": 0.05}
    assert both["iterations"] >= 3 and both["duration_ms"] >= 50


def test_default_limit(capsys, monkeypatch):
    monkeypatch.setattr(bm, "DEFAULT_SECONDS", 0.05)  # 10 s in earnest
    report = bench_json(capsys, DEMO)
    assert report["limits"] == {"iterations": None, "seconds": 0.05}
    assert report["iterations"] >= 1 and report["duration_ms"] >= 50


def test_report_file(capsys, tmp_path):
    path = tmp_path / "out.json"
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "2", "--report", str(path))
    assert rc == 0
    assert out.startswith("Model:")
    assert err == f"irrun: wrote the report to {path}\n"
    report = json.loads(path.read_text())
    assert set(report) == REPORT_KEYS and report["iterations"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left
    rc, out, err = run_cli(
        capsys, "benchmark", DEMO, "-niter", "1", "--report", str(path), "--json", "-q"
    )
    assert (rc, err) == (0, "")
    assert json.loads(out) == json.loads(path.read_text())


def test_report_is_refused_before_the_model_is_read(capsys, tmp_path):
    missing = tmp_path / "no" / "out.json"
    rc, out, err = run_cli(
        capsys, "benchmark", str(tmp_path / "absent.xml"), "--report", str(missing)
    )
    assert (rc, out) == (1, "")
    assert err == f"irrun: error: {missing}: the output's directory does not exist\n"


# --- inputs --------------------------------------------------------------------------------


def test_inputs_from_npy_and_npz(capsys, tmp_path):
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    rc, out, _ = run_cli(capsys, "benchmark", DEMO, "-niter", "1", "-i", str(tmp_path / "x.npy"),
                         "--shape", "[2,3,32,32]")  # fmt: skip
    assert rc == 0
    assert f"Inputs:               --input {tmp_path / 'x.npy'}" in out.splitlines()
    npz = str(MODELS / "demo.inputs.npz")
    report = bench_json(capsys, DEMO, "-niter", "1", "--input", npz)
    assert report["input_source"] == f"--input {npz}"
    assert report["inputs"][0]["shape"] == [1, 3, 32, 32]
    report = bench_json(capsys, DEMO, "-niter", "1", "--input", f"image={tmp_path / 'x.npy'}",
                        "-b", "2")  # fmt: skip
    assert report["inputs"][0]["shape"] == [2, 3, 32, 32]


def test_bad_inputs_are_one_line_exit_1(capsys, tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 8, 8), np.float32))
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "1", "-i", str(tmp_path / "x.npy"))
    assert (rc, out) == (1, "")
    assert err.startswith("irrun: error: ") and "expected [1,3,32,32]" in err
    assert err.count("\n") == 1
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-i", str(tmp_path / "none.npy"))
    assert (rc, out) == (1, "")
    assert "no such input file" in err and err.count("\n") == 1


def test_a_model_that_does_not_load(capsys, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<net")
    rc, out, err = run_cli(capsys, "benchmark", str(bad), "-niter", "1")
    assert (rc, out) == (1, "")
    assert err.startswith(f"irrun: error: {bad}:") and err.count("\n") == 1


# --- misuse --------------------------------------------------------------------------------


@pytest.mark.parametrize("args, message", [
    (["-niter", "0"], "invalid count value: '0'"),
    (["-niter", "-3"], "invalid count value: '-3'"),
    (["-niter", "x"], "invalid count value: 'x'"),
    (["-t", "0"], "invalid -t value: '0'"),
    (["-t", "-1"], "invalid -t value: '-1'"),
    (["-t", "nan"], "invalid -t value: 'nan'"),
    (["--warmup", "-1"], "invalid --warmup value: '-1'"),
    (["--threads", "0"], "invalid count value: '0'"),
    (["-b", "0"], "invalid count value: '0'"),
    (["--shape", "[1,3"], "argument -shape/--shape: cannot read '[1,3'"),
])  # fmt: skip
def test_misuse_is_exit_2(capsys, args, message):
    rc, _, err = run_cli(capsys, "benchmark", DEMO, *args)  # argparse's exit, as its code
    assert rc == 2 and message in err


def test_seed_with_input_is_exit_2(capsys):
    rc, out, err = run_cli(
        capsys, "benchmark", DEMO, "-i", str(MODELS / "demo.inputs.npz"), "--seed", "1"
    )
    assert (rc, out) == (2, "")
    assert err == "irrun: error: --seed makes random inputs, but the inputs come from --input\n"


# --- progress ------------------------------------------------------------------------------


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(capsys, monkeypatch):
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    rc, out, _ = run_cli(capsys, "benchmark", DEMO, "-niter", "3")
    assert rc == 0 and out.startswith("Model:")
    assert " 0/3 [" in terminal.getvalue()
    timed = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", timed)
    assert run_cli(capsys, "benchmark", DEMO, "-t", "0.3")[0] == 0
    # A bar of the seconds run, the runs counted beside it (tqdm redraws every 0.1 s).
    assert "| 0.0/0.3 s\r" in timed.getvalue()
    assert re.search(r"\| 0\.\d/0\.3 s, \d+ runs?\r", timed.getvalue())
    quiet = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", quiet)
    assert run_cli(capsys, "benchmark", DEMO, "-niter", "3", "-q")[0] == 0
    assert quiet.getvalue() == ""
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    assert run_cli(capsys, "benchmark", DEMO, "-niter", "3")[0] == 0
    assert pipe.getvalue() == ""


def test_as_a_process():
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "benchmark", DEMO, "-niter", "2", "--json"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["iterations"] == 2
    # stderr is a pipe: no bar (a warning, when this machine is busy: its real load).
    said = [line for line in proc.stderr.splitlines() if "the machine is busy" not in line]
    assert said == []


def test_a_busy_machine_is_said_before_the_timings(capsys, monkeypatch):
    cores = irrun.threads.available()
    monkeypatch.setattr(irrun.threads.os, "getloadavg", lambda: (cores + 1.25, 1.0, 1.0))
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "1", "--json")
    plural = "s" if cores != 1 else ""
    assert (rc, err) == (0, f"irrun: warning: the machine is busy (load {cores + 1.25:.1f} on "
                            f"{cores} core{plural}): timings are unreliable\n")  # fmt: skip
    assert json.loads(out)["iterations"] == 1  # stdout is the report alone
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "1", "-q")
    assert (rc, err) == (0, "")  # -q: nothing but errors
    monkeypatch.setattr(irrun.threads.os, "getloadavg", lambda: (cores - 0.5, 1.0, 1.0))
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-niter", "1")
    assert (rc, err) == (0, "")


def test_json_errors_are_json(capsys, tmp_path):
    missing = str(tmp_path / "missing.xml")
    rc, out, err = run_cli(capsys, "benchmark", missing, "-niter", "1", "--json")
    assert (rc, err) == (1, "")
    error = json.loads(out)["error"]
    assert (error["message"], error["file"], error["layer"]) == ("no such file", missing, None)
