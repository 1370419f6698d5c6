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


@pytest.mark.parametrize(
    "command",
    [
        "irrun models/demo.xml",
        'irrun validate models/pooling_chain.xml --shape "image[1,3,2,2]"',
        "irrun inspect models/pooling_chain.xml",
        "irrun graph models/pooling_chain.xml",
    ],
)
def test_readme_output_is_current(command, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)[1:]]
    main(args)
    assert capsys.readouterr().out.rstrip("\n") == _shown(command)
