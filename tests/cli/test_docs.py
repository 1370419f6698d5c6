"""The command-line output shown in the README and in docs/ is what irrun prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from irrun.cli import main

ROOT = Path(__file__).resolve().parents[2]
# The pages that show commands with their output: the README's tour and the docs.
PAGES = {
    path.relative_to(ROOT).as_posix(): path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}


def _shown(command: str) -> str:
    """The output shown under ``$ command``, on whichever pages show it: the same on each."""
    shown = {
        page: block.group(1)
        for page, text in PAGES.items()
        for block in re.finditer(r"\$ " + re.escape(command) + r"\n(.*?)\n```", text, re.S)
    }
    assert shown, f"neither README.md nor docs/ shows output for {command!r}"
    assert len(set(shown.values())) == 1, f"{sorted(shown)} show {command!r} differently"
    return next(iter(shown.values()))


def _timeless(text: str) -> str:
    """Durations (``3.0 ms``, ``0.03 s``) and rates (``150.2 tokens/s``, ``96.1 FPS``) as
    ``T``: they differ from run to run."""
    return re.sub(r"\b\d+\.\d+ (ms|s|tokens/s|FPS|inferences/s)\b", r"T \1", text)


# A printed float: digits with a point or an exponent (integers, such as lines and shapes,
# are compared exactly).
FLOAT = re.compile(r"(?<![\w.])-?\d+(?:\.(\d+))?(?:e([-+]\d+))?(?![\w.])")


def _last_digit(token: re.Match) -> float | None:
    """The value of one unit in the last digit ``token`` shows, or None for an integer."""
    decimals, exponent = token.group(1), token.group(2)
    if decimals is None and exponent is None:
        return None
    return 10.0 ** (int(exponent or 0) - len(decimals or ""))


def assert_same_output(printed: str, shown: str) -> None:
    """``printed`` is ``shown``, but for floats one unit apart in their last digit.

    The demo's convolutions go through OpenBLAS, which sums them in an order that
    depends on the kernel it picks for the CPU (Haswell, SkylakeX, Zen...): the outputs
    move by about 1e-7 relative, which can carry a value shown to 5 significant digits
    across a rounding boundary. Everything else, integers included, must be as shown.

    >>> assert_same_output("min 4.8929e-05 at 3", "min 4.8928e-05 at 3")
    >>> assert_same_output("at 4", "at 3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: ...
    """
    printed, shown = _timeless(printed), _timeless(shown)
    if printed == shown:
        return
    # Without its floats each text must be the same; then each float pair is compared.
    assert FLOAT.sub("F", printed) == FLOAT.sub("F", shown), f"{printed}\n!=\n{shown}"
    for got, want in zip(FLOAT.finditer(printed), FLOAT.finditer(shown), strict=True):
        unit = _last_digit(want)
        if unit is None or _last_digit(got) is None:
            assert got.group() == want.group(), f"{got.group()} != {want.group()}"
            continue
        assert abs(float(got.group()) - float(want.group())) <= unit * 1.000001, (
            f"{got.group()} is not {want.group()} to its last digit"
        )


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
    assert_same_output(capsys.readouterr().out.rstrip("\n"), _shown(command))


def test_readme_dump_example(capsys, monkeypatch, tmp_path):
    # Run where docs/cli.md's relative "dump" goes to a scratch directory.
    for name in ("demo.xml", "demo.bin"):
        (tmp_path / "models").mkdir(exist_ok=True)
        (tmp_path / "models" / name).write_bytes((ROOT / "models" / name).read_bytes())
    monkeypatch.chdir(tmp_path)
    command = "irrun models/demo.xml --dump-dir dump --dump-type MaxPool,AvgPool"
    main(command.split()[1:])
    captured = capsys.readouterr()
    shown = _shown(command).split("\n$ ls dump\n")
    assert_same_output(captured.out + captured.err, shown[0] + "\n")
    assert "  ".join(sorted(p.name for p in (tmp_path / "dump").iterdir())) == shown[1]


def test_readme_profile_example_has_the_layers_and_format_irrun_prints(capsys, monkeypatch):
    # Times differ from run to run, and so does the order; the rows and their format do not.
    monkeypatch.chdir(ROOT)
    command = "irrun models/demo.xml --profile --iterations 20"
    main(command.split()[1:])
    printed = capsys.readouterr().out.rstrip("\n").split("\n\n")
    shown = _shown(command).split("\n\n")
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
    assert (captured.out, captured.err.rstrip("\n")) == ("", _shown(command))
