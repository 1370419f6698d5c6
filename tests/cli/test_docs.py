"""The command-line output shown in the README and in docs/ is what irrun prints."""

from __future__ import annotations

import re

import pytest

from irrun.cli import main
from tests.support.docs import ROOT, assert_same_output, shown_output


@pytest.mark.parametrize(
    "command",
    [
        "irrun models/demo.xml",
        'irrun models/demo.xml --shape "[4,3,64,64]"',
        'irrun validate models/pooling_chain.xml --shape "image[1,3,2,2]"',
        "irrun inspect models/pooling_chain.xml",
        "irrun graph models/pooling_chain.xml",
        "irrun compare models/pooling_chain.xml --ref-backend openvino --mark-all",
        "irrun compare models/pooling_chain.xml --ref models/pooling_chain.expected.npz --seed 1",
        "irrun models/demo.xml --input-dir models/demo_batch --output-dir out -v",
        "irrun generate tests/stateful/gpt2_int4 --input-ids 3,17,42,99,123,200 --max-new-tokens 8",
        "irrun generate tests/stateful/llama --input-ids 293,360,361 --max-new-tokens 6 "
        "--do-sample --top-p 0.9 --seed 3 --no-stream",
        'irrun benchmark models/demo.xml -niter 100 -shape "[8,3,32,32]" --threads 1',
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
    assert_same_output(capsys.readouterr().out.rstrip("\n"), shown_output(command))


def test_readme_dump_example(capsys, monkeypatch, tmp_path):
    # Run where docs/cli.md's relative "dump" goes to a scratch directory.
    for name in ("demo.xml", "demo.bin"):
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / name).write_bytes((ROOT / "models" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    command = "irrun models/demo.xml --dump-dir dump --dump-type MaxPool,AvgPool"
    main(command.split()[1:])
    captured = capsys.readouterr()
    shown = shown_output(command).split("\n$ ls dump\n")
    assert_same_output(captured.out + captured.err, shown[0] + "\n")
    assert "  ".join(sorted(p.name for p in (tmp_path / "dump").iterdir())) == shown[1]


def test_readme_profile_example_has_the_layers_and_format_irrun_prints(capsys, monkeypatch):
    # Times differ from run to run, and so does the order; the rows and their format do not.
    monkeypatch.chdir(ROOT)
    command = "irrun models/demo.xml --profile --iterations 20"
    main(command.split()[1:])
    printed = capsys.readouterr().out.rstrip("\n").split("\n\n")
    shown = shown_output(command).split("\n\n")
    assert len(printed) == len(shown) == 4  # outputs, op types, layers, computed at load
    assert_same_output(printed[0], shown[0])

    def rows(table: str) -> tuple[list[str], list[tuple[str, ...]]]:
        """The header's words, and each row's words but the times and shares, sorted."""
        head, *body = table.split("\n")
        return head.split(), sorted(tuple(w for w in line.split() if not re.fullmatch(
            r"[\d.]+%?", w) or w.isdigit()) for line in body)

    assert rows(printed[1]) == rows(shown[1])
    assert rows(printed[1])[0] == ["op", "type", "layers", "ms", "share"]
    *layers, total = printed[2].split("\n")
    *shown_layers, shown_total = shown[2].split("\n")
    assert rows("\n".join(layers)) == rows("\n".join(shown_layers))
    number = r"\d+\.\d{3}"
    pattern = (rf"total: 11 layers, {number} ms in layers, {number} ms per run \(median of 20 "
               r"runs, after 1 warm-up run\)")
    assert re.fullmatch(pattern, total) and re.fullmatch(pattern, shown_total)
    first, *loaded = printed[3].split("\n")
    shown_first, *shown_loaded = shown[3].split("\n")
    pattern = rf"computed once at load, not in a run: 4 layers, {number} ms"
    assert re.fullmatch(pattern, first) and re.fullmatch(pattern, shown_first)
    assert rows("\n".join(loaded)) == rows("\n".join(shown_loaded))


def test_readme_memory_example(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    command = "irrun models/demo.xml --max-memory 64K"
    assert main(command.split()[1:]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err.rstrip("\n")) == ("", shown_output(command))
