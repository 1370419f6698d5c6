"""benchmarks/run.py: its order of runs, its exactness column and a short run end to end
(what it prints about speed is machine noise, and is not checked)."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    # run.py sets one-thread BLAS variables for itself: processes spawned by later tests
    # must not inherit them (a convolution sums in another order with other threads).
    environment = dict(os.environ)
    sys.path.insert(0, str(BENCHMARKS))  # run.py imports networks.py beside it
    try:
        spec = importlib.util.spec_from_file_location("benchmark_run", BENCHMARKS / "run.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("benchmark_run", None)
        sys.path.remove(str(BENCHMARKS))
        os.environ.clear()
        os.environ.update(environment)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_each_backend_follows_each_other_once_a_cycle(bench, n):
    names = [f"b{i}" for i in range(n)]
    order = bench._each_after_each(names)
    assert Counter(order) == {name: max(n - 1, 1) for name in names}
    pairs = Counter((order[i - 1], order[i]) for i in range(len(order)))  # the cycle repeats
    if n > 1:
        assert pairs == {(a, b): 1 for a in names for b in names if a != b}


def test_interleaving_gives_each_backend_its_runs_in_that_order(bench):
    seen = []
    backends = {name: (lambda name=name: seen.append(name)) for name in ("a", "b", "c")}
    medians = bench._interleaved(backends, 5)
    assert set(medians) == {"a", "b", "c"}
    assert seen[:3] == ["a", "b", "c"]  # the warm-up
    assert Counter(seen[3:]) == {"a": 5, "b": 5, "c": 5}
    assert seen[3:9] == bench._each_after_each(["a", "b", "c"])


def test_mismatches_count_differing_bits_and_let_nan_equal_nan(bench):
    want = {"y": np.array([1.0, -0.0, np.nan, 2.0], np.float32)}
    assert bench._mismatches({"y": want["y"].copy()}, want) == 0
    other_nan = np.array([1.0, -0.0, -np.nan, 2.0], np.float32)
    assert bench._mismatches({"y": other_nan}, want) == 0
    signed = np.array([1.0, 0.0, np.nan, np.nextafter(np.float32(2), np.float32(3))], np.float32)
    assert bench._mismatches({"y": signed}, want) == 2  # +0.0 for -0.0, and one ulp
    assert bench._mismatches({"y": want["y"][:3]}, want) == -1  # another shape


def test_a_short_run_compares_with_openvino_and_checks_the_targets(bench, capsys):
    pytest.importorskip("openvino")
    assert bench.main(["--runs", "2", "--only", "W5", "W8"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line.startswith(("W5 ", "W8 "))}  # fmt: skip
    assert set(rows) == {"W5", "W8"}
    assert rows["W5"][-1] == rows["W8"][-1] == "yes"  # bit-exact with OpenVINO
    assert "  [met] bit-exact with OpenVINO on every pooling workload" in out
    assert "W8 at least 10x faster than OpenVINO" in out
    assert "C1" not in out.split("targets:")[1]  # only what was run is judged
