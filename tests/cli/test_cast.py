"""``--cast``: float64 inputs (what ``np.save`` writes by default) are refused with a note on
``--cast``, and converted with it, refused when a value does not fit the input's type.

Expected values are OpenVINO's (``models/demo.expected.npz``, written by
``models/make_models.py`` from its CPU plugin on ``demo.inputs.npz``, whose float32 values
float64 holds exactly).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from support.cli import run_cli

import irrun

MODELS = Path(__file__).resolve().parents[2] / "models"
DEMO = str(MODELS / "demo.xml")


def _inputs() -> np.ndarray:
    with np.load(MODELS / "demo.inputs.npz") as f:
        return f["image"]


def _expected() -> np.ndarray:
    with np.load(MODELS / "demo.expected.npz") as f:
        return f["probabilities"]


def test_float64_is_refused_then_cast_through_the_process(tmp_path):
    np.save(tmp_path / "x.npy", _inputs().astype(np.float64))
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}

    def irrun_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "irrun", *args], capture_output=True,
                              text=True, cwd=tmp_path, env=env, timeout=120)  # fmt: skip

    refused = irrun_cli(DEMO, "-i", "x.npy", "-o", "out.npz")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1
    assert "input 'image' has element type f64, expected f32 (numpy float32)" in refused.stderr
    assert "(--cast on the command line)" in refused.stderr
    assert not (tmp_path / "out.npz").exists()
    cast = irrun_cli(DEMO, "-i", "x.npy", "--cast", "-o", "out.npz")
    assert cast.returncode == 0, cast.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out["probabilities"], _expected(), rtol=1e-5, atol=1e-7)


def test_compare_and_benchmark_cast_too(tmp_path, capsys):
    np.save(tmp_path / "x.npy", _inputs().astype(np.float64))
    ref = str(MODELS / "demo.expected.npz")
    rc, out, err = run_cli(capsys, "compare", DEMO, "-i", str(tmp_path / "x.npy"), "--ref", ref)
    assert rc == 1 and "--cast" in err
    rc, out, err = run_cli(capsys, "compare", DEMO, "-i", str(tmp_path / "x.npy"), "--cast",
                           "--ref", ref)  # fmt: skip
    assert rc == 0, err
    assert "PASSED" in out
    rc, out, err = run_cli(capsys, "benchmark", DEMO, "-i", str(tmp_path / "x.npy"), "--cast",
                           "-niter", "2")  # fmt: skip
    assert rc == 0, err


def test_cast_refuses_what_the_input_type_cannot_hold(tmp_path, capsys):
    big = _inputs().astype(np.float64)
    big[0, 1, 2, 3] = 1e300
    np.save(tmp_path / "big.npy", big)
    rc, out, err = run_cli(capsys, DEMO, "-i", str(tmp_path / "big.npy"), "--cast")
    assert rc == 1 and out == ""
    assert err == (f"irrun: error: {DEMO}:4: layer 0 'image' (Parameter-v1): input 'image': "
                   "cannot cast f64 to f32: value 1e+300 is out of f32's range (it would "
                   "become inf)\n")  # fmt: skip


def test_cast_and_input_dir_do_not_go_together(tmp_path, capsys):
    rc, _, err = run_cli(capsys, DEMO, "--input-dir", str(tmp_path), "--output-dir",
                         str(tmp_path / "out"), "--cast")  # fmt: skip
    assert rc == 2
    assert "--cast and --input-dir do not go together" in err
