"""Files irrun writes: each command says on stderr what it wrote (not under -q), and every
.npz is the same bytes when the values are the same."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"


@pytest.fixture
def work(tmp_path, monkeypatch):
    for name in ("demo.xml", "demo.bin", "demo.inputs.npz", "demo.expected.npz",
                 "pooling_chain.xml", "pooling_chain.bin"):  # fmt: skip
        shutil.copy(MODELS / name, tmp_path / name)
    shutil.copytree(MODELS / "demo_batch", tmp_path / "batch")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# A run of the demo model executes 11 of its 22 layers (docs/cli.md's profile shows them:
# the others are given, or folded at load), and it has 1 output; pooling_chain 2 outputs
# and a shape error at image[1,3,2,2] (the README's validate example), with an info finding.
@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("demo.xml -o out.npz", "irrun: wrote 1 output to out.npz"),
        ("pooling_chain.xml -o out.npz", "irrun: wrote 2 outputs to out.npz"),
        ("run demo.xml -o out.npz --profile-json trace.json",
         "irrun: wrote 1 output to out.npz\nirrun: wrote the trace of 11 layers to trace.json"),
        ("validate demo.xml -o report.json", "irrun: wrote the report (0 errors, 0 warnings) "
         "to report.json"),
        ("validate pooling_chain.xml --shape image[1,3,2,2] -o report.json",
         "irrun: wrote the report (1 error, 0 warnings, 1 info finding) to report.json"),
        ("compare demo.xml --input demo.inputs.npz --ref demo.expected.npz -o report.json",
         "irrun: wrote the report of 1 tensor to report.json"),
        ("graph demo.xml -o graph.dot", "irrun: wrote the graph (DOT) to graph.dot"),
    ],
    ids=["run-o", "run-o-2", "profile-json", "validate-o", "validate-o-errors", "compare-o",
         "graph-o"],
)
def test_a_written_file_is_announced_on_stderr(work, capsys, command, said):
    rc = main(command.split())
    captured = capsys.readouterr()
    assert rc == (1 if "image[1,3,2,2]" in command else 0)
    assert captured.err == said + "\n"
    for word in command.split():
        if word.endswith((".npz", ".json", ".dot")) and "demo." not in word:
            assert (work / word).stat().st_size > 0


def test_quiet_runs_write_silently(work, capsys):
    command = "demo.xml -q -o out.npz --profile-json trace.json"
    assert main(command.split()) == 0
    assert capsys.readouterr() == ("", "")
    assert (work / "out.npz").is_file() and (work / "trace.json").is_file()


def test_the_batch_summary_names_where_the_outputs_went(work, capsys):
    assert main(["demo.xml", "--input-dir", "batch", "--output-dir", "out"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("3 inputs, 3 outputs written to out in ")
    assert main(["demo.xml", "--input-dir", "batch", "--output-dir", "out", "-q"]) == 0
    assert capsys.readouterr() == ("", "")


# --- the same bytes every time ---------------------------------------------------------------

# Two runs two hours apart: a zip member's header has a time stamp, which must not be
# the time of writing (np.savez of numpy < 1.17 stamped it so, and zipfile's write() does).
LATER = 7200.0


def _at(monkeypatch, offset: float) -> None:
    now = 1_790_000_000.0 + offset
    monkeypatch.setattr(time, "time", lambda: now)


@pytest.mark.parametrize(
    ("command", "written"),
    [
        ("demo.xml -o {out}/o.npz", ["o.npz"]),
        ("pooling_chain.xml --seed 3 -o {out}/o.npz", ["o.npz"]),
        ("demo.xml --input-dir batch --output-dir {out} -q", ["cat.npz", "dog.npz", "fish.npz"]),
        ("demo.xml --input-dir batch --output-dir {out} -q -j 2",
         ["cat.npz", "dog.npz", "fish.npz"]),
        ("demo.xml --dump-dir {out} --dump-type MaxPool -q -o o.npz", ["inputs.npz"]),
        ("pooling_chain.xml --dump-dir {out} -q -o o.npz", ["inputs.npz"]),
    ],
    ids=["run-o", "run-o-2-outputs", "batch", "batch-jobs", "dump-inputs", "dump-inputs-2"],
)
def test_npz_files_are_the_same_bytes_on_every_run(work, capsys, monkeypatch, command, written):
    for run, offset in (("first", 0), ("second", LATER)):
        _at(monkeypatch, offset)
        if "--output-dir" not in command and "--dump-dir" not in command:
            (work / run).mkdir()
        assert main(command.format(out=run).split()) == 0
    capsys.readouterr()
    for name in written:
        first, second = work / "first" / name, work / "second" / name
        assert first.read_bytes() == second.read_bytes(), name
        with np.load(first) as loaded, zipfile.ZipFile(first) as archive:
            assert all(i.date_time == (1980, 1, 1, 0, 0, 0) for i in archive.infolist())
            assert all(i.compress_type == zipfile.ZIP_STORED for i in archive.infolist())
            assert [i.filename for i in archive.infolist()] == [f"{k}.npy" for k in loaded.files]
            assert all(loaded[k].size for k in loaded.files)


def test_the_npz_holds_the_outputs_in_the_models_order(work, capsys):
    assert main(["pooling_chain.xml", "-o", "o.npz"]) == 0
    with np.load(work / "o.npz") as loaded:
        assert loaded.files == ["pooled", "indices"]
        assert loaded["pooled"].shape == (1, 3, 2, 2) and loaded["indices"].dtype == np.int32


def test_processes_with_other_hash_seeds_write_the_same_bytes(work):
    # str hashes differ between processes; no set or dict order may reach the file.
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "irrun", "pooling_chain.xml", "-q", "-o", f"o{seed}.npz",
             "--dump-dir", f"d{seed}"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        assert (proc.returncode, proc.stderr) == (0, "")
    assert (work / "o1.npz").read_bytes() == (work / "o2.npz").read_bytes()
    assert (work / "d1/inputs.npz").read_bytes() == (work / "d2/inputs.npz").read_bytes()
