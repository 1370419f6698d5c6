"""The command-line output shown in the README is what irrun prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irrun.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _shown(command: str) -> str:
    block = re.search(r"\$ " + re.escape(command) + r"\n(.*?)\n```", README, re.S)
    assert block, f"README shows no output for {command!r}"
    return block.group(1)


def _timeless(text: str) -> str:
    """Durations (``3.0 ms``, ``0.03 s``) as ``T``: they differ from run to run."""
    return re.sub(r"\b\d+\.\d+ (ms|s)\b", r"T \1", text)


@pytest.mark.parametrize(
    "command",
    [
        "irrun models/demo.xml",
        'irrun validate models/pooling_chain.xml --shape "image[1,3,2,2]"',
        "irrun models/demo.xml --input-dir models/demo_batch --output-dir out -v",
    ],
)
def test_readme_output_is_current(command, capsys, monkeypatch, tmp_path):
    # In a directory that links to everything at the top of the repository, so that the
    # commands read the repository's files as shown and what they write stays out of it.
    for entry in ROOT.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)[1:]]
    main(args)
    assert _timeless(capsys.readouterr().out.rstrip("\n")) == _timeless(_shown(command))
