"""The README's "A model you converted" works as written: its commands, run one after the
other through a shell in a fresh directory, on the model its own conversion code made
(tests/torch_models/quickstart.xml, from tests/torch_models/make_quickstart.py; PyTorch
is not needed here)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import irrun

ROOT = Path(__file__).resolve().parents[2]
TORCH = ROOT / "tests" / "torch_models"


def quickstart_commands() -> list[str]:
    """The README's quick start commands after the conversion, comments dropped."""
    section = (ROOT / "README.md").read_text().split("## A model you converted", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    after = block.split("\nEOF\n", 1)[1]
    return [line.split("  #")[0].strip() for line in after.splitlines() if line.strip()]


def _shell(command: str) -> str:
    """``command`` with ``irrun`` and ``python`` meaning this interpreter and its irrun."""
    python = shlex.quote(sys.executable)
    if command.startswith("irrun "):
        return f"{python} -m irrun {command[len('irrun '):]}"
    if command.startswith("python "):
        return f"{python} {command[len('python '):]}"
    raise AssertionError(f"the quick start runs only irrun and python: {command}")


def test_the_quick_start_runs_as_the_readme_says(tmp_path):
    for suffix in (".xml", ".bin"):
        shutil.copy(TORCH / f"quickstart{suffix}", tmp_path / f"net{suffix}")
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1]), "COLUMNS": "200"}
    commands = quickstart_commands()
    assert [c.split()[:2] for c in commands] == [
        ["irrun", "net.xml"], ["irrun", "net.xml"], ["irrun", "compare"], ["python", "-c"],
        ["irrun", "net.xml"], ["irrun", "compare"], ["irrun", "net.xml"], ["irrun", "graph"],
    ]  # fmt: skip
    done = [subprocess.run(_shell(c), shell=True, cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300) for c in commands]  # fmt: skip
    first, *rest = done
    # The dynamic image is made up as 1x1, too small for the max pool: one line says what to give.
    assert first.returncode == 1 and first.stdout == ""
    assert first.stderr.count("\n") == 1 and "Traceback" not in first.stderr
    assert 'give their shapes, e.g. --shape "input[1,3,' in first.stderr
    for command, result in zip(commands[1:], rest, strict=True):
        assert result.returncode == 0, (command, result.stderr)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    _, against_openvino, _, dump, against_dump, profile, graph = rest
    assert "wrote 18 tensors of 17 layers to dump/" in dump.stderr
    assert "wrote the graph (SVG) to net.svg" in graph.stderr
    with np.load(tmp_path / "out.npz") as saved:
        assert list(saved) == ["Result_248"] and saved["Result_248"].shape == (1, 10)
    assert against_openvino.stdout.splitlines()[-1].startswith(
        "PASSED | 1 of 1 tensor passed")
    manifest = json.loads((tmp_path / "dump" / "manifest.json").read_text())
    assert len(manifest["tensors"]) == 18
    # Every dumped tensor is found again, and the same run gives the same bits.
    lines = against_dump.stdout.splitlines()
    assert lines[-1].startswith("PASSED | 18 of 18 tensors passed")
    assert all(" max abs 0 " in line for line in lines[:-1] if line.startswith("PASSED |"))
    assert "op type" in profile.stdout and "Convolution-v1" in profile.stdout
    svg = (tmp_path / "net.svg").read_text()
    assert svg.startswith("<?xml") and "Convolution" in svg
