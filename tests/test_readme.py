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
        "irrun inspect models/pooling_chain.xml",
        "irrun graph models/pooling_chain.xml",
        "irrun compare models/pooling_chain.xml --ref-backend openvino --mark-all",
        "irrun compare models/pooling_chain.xml --ref models/pooling_chain.expected.npz --seed 1",
        "irrun models/demo.xml --input-dir models/demo_batch --output-dir out -v",
    ],
)
def test_readme_output_is_current(command, capsys, monkeypatch, tmp_path):
    if "--ref-backend openvino" in command:
        pytest.importorskip("openvino")
    # In a directory that links to everything at the top of the repository, so that the
    # commands read the repository's files as shown and what they write stays out of it.
    for entry in ROOT.iterdir():
        (tmp_path / entry.name).symlink_to(entry)
    monkeypatch.chdir(tmp_path)
    args = [a.strip('"') for a in re.findall(r'"[^"]*"|\S+', command)[1:]]
    main(args)
    assert _timeless(capsys.readouterr().out.rstrip("\n")) == _timeless(_shown(command))


def test_readme_dump_example(capsys, monkeypatch, tmp_path):
    # Run where the README's relative "dump" goes to a scratch directory.
    for name in ("demo.xml", "demo.bin"):
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / name).write_bytes((ROOT / "models" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    command = "irrun models/demo.xml --dump-dir dump --dump-type MaxPool,AvgPool"
    main(command.split()[1:])
    captured = capsys.readouterr()
    shown = _shown(command).split("\n$ ls dump\n")
    assert captured.out + captured.err == shown[0] + "\n"
    assert "  ".join(sorted(p.name for p in (tmp_path / "dump").iterdir())) == shown[1]


def test_readme_profile_example_has_the_layers_and_format_irrun_prints(capsys, monkeypatch):
    # Times differ from run to run, and so does the order; the rows and their format do not.
    monkeypatch.chdir(ROOT)
    command = "irrun models/demo.xml --profile --iterations 20"
    main(command.split()[1:])
    printed = capsys.readouterr().out.rstrip("\n").split("\n")
    shown = _shown(command).split("\n")
    assert len(printed) == len(shown)
    assert printed[:3] == shown[:3]  # the outputs table and the blank line
    assert printed[3].split() == shown[3].split() == ["layer", "type", "ms", "share"]

    def rows(lines: list[str]) -> list[tuple[str, ...]]:
        return sorted(tuple(line.split()[:2]) for line in lines)

    assert rows(printed[4:-1]) == rows(shown[4:-1])
    number = r"\d+\.\d{3}"
    pattern = rf"total: 22 layers, {number} ms in layers, {number} ms per run \(median of 20 runs\)"
    assert re.fullmatch(pattern, printed[-1]) and re.fullmatch(pattern, shown[-1])
