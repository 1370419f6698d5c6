"""The command-line output the README and docs/ show, and comparing what irrun prints with it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The pages that show commands with their output: the README's tour and the docs.
PAGES = {
    path.relative_to(ROOT).as_posix(): path.read_text()
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
}


def shown_output(command: str) -> str:
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




def page_commands(page: str) -> list[tuple[str, str]]:
    """Each ``$ irrun ...`` line of a page's plain blocks, with the output shown under it."""
    return re.findall(r"^\$ (irrun [^\n]*)\n(.*?)\n```", page, re.S | re.M)
