"""``irrun validate --strict`` passes on every IR file in tests/ and models/ that OpenVINO reads
and compiles cleanly: what converters write (MaxPool-14's indices, a Split piece nothing reads)
is info, never a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run_cli

import irrun
from irrun.core.check import FINDING_LEVELS

ov = pytest.importorskip("openvino")

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p.relative_to(ROOT).as_posix()
               for folder in ("tests", "models") for p in (ROOT / folder).rglob("*.xml"))  # fmt: skip
# OpenVINO compiles these, yet irrun reports an error on purpose (the finding's code, and why).
KNOWN_ERRORS = {
    # sampling_ratio -1: OpenVINO's reference kernel refuses it and its CPU plugin returns
    # zeros (tests/ops/test_detection.py), so irrun refuses the model.
    "tests/detection_models/roi_default.xml": "bad-attribute",
}
CORE = ov.Core()


def _openvino_reads(path: Path) -> None:
    try:
        CORE.compile_model(CORE.read_model(path), "CPU")
    except RuntimeError as exc:
        pytest.skip(f"OpenVINO refuses it: {str(exc).splitlines()[0]}")


def test_the_sweep_covers_the_models():
    # What the issue counted: the torch models, the corpus, the bundled examples, LLM folders.
    assert sum(f.startswith("tests/torch_models/") for f in FILES) == 11
    assert len(FILES) >= 50 and "models/pooling_chain.xml" in FILES


@pytest.mark.parametrize("name", FILES)
def test_strict_passes_on_what_openvino_reads(name, capsys, monkeypatch):
    _openvino_reads(ROOT / name)
    monkeypatch.chdir(ROOT)
    # A fixed memory budget: over-budget warnings must not follow the machine's load.
    rc, out, err = run_cli(capsys, "validate", name, "--strict", "--max-memory", "4G", "--json")
    found = json.loads(out)["findings"]
    for f in found:  # every finding's code is documented, at its level
        assert f["code"] in FINDING_LEVELS, f
        assert f["level"] == FINDING_LEVELS[f["code"]] or f["code"] == "variable-unpaired", f
    shown = [
        (f["level"], f["code"], f["line"], f["message"]) for f in found if f["level"] != "info"
    ]
    if name in KNOWN_ERRORS:
        assert [(level, code) for level, code, *_ in shown] == [("error", KNOWN_ERRORS[name])]
        return
    assert (rc, err, shown) == (0, "", [])


def test_strict_passes_on_a_converted_model_through_the_command_line():
    """pools.xml, converted from PyTorch by ov.convert_model, has four ports nothing reads
    (MaxPool-14 indices, AdaptiveMaxPool's): info findings, hidden without -v."""
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "validate", "tests/torch_models/pools.xml", "--strict"],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        "tests/torch_models/pools.xml: valid (4 info findings hidden: -v shows them)\n"
    )
