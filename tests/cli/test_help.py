"""The command line's help, version and start-up: every command explains itself with
examples that parse, and ``--help``/``--version`` import none of the heavy modules."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import run_cli

import irrun
from irrun import cli

ENV = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}

# What `irrun --help` and `irrun --version` must not import: NumPy and networkx alone take
# over half a second, and irrun's layers below the face pull them in.
HEAVY = ("numpy", "networkx", "lxml", "irrun.core", "irrun.tools", "irrun.ir", "irrun.ops")


def imported(*args: str) -> set[str]:
    """The modules a fresh Python has loaded after ``irrun ARGS`` (sys.modules, not
    ``-X importtime``, which does not see what importlib.import_module loads)."""
    code = (
        "import sys\n"
        "from irrun.cli import main\n"
        "try:\n"
        f"    main({list(args)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=ENV, timeout=60)  # fmt: skip
    return set(proc.stderr.split())


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_help_and_version_import_nothing_heavy(flag):
    modules = imported(flag)
    assert {"irrun", "irrun.cli", "irrun.errors"} <= modules
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    assert heavy == []


def test_a_command_imports_its_own_module_not_the_others():
    tools = {m for m in imported("validate", "--help") if m.startswith("irrun.tools.")}
    assert "irrun.tools.validate" in tools
    assert not tools & {f"irrun.tools.{c}" for c in cli.COMMANDS if c != "validate"}


def test_import_irrun_is_lazy_but_complete():
    """`import irrun` gives the errors at once and the rest on first use, as before."""
    code = (
        "import sys, irrun\n"
        "before = 'irrun.core.model' in sys.modules\n"
        "from irrun import Model, load\n"
        "print(before, Model.__module__, load is irrun.load, sorted(set(irrun.__all__) - set(dir(irrun))))\n"
    )  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV,
                          timeout=60)  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == "False irrun.core.model True []\n"
    with pytest.raises(AttributeError, match="module 'irrun' has no attribute 'nothing'"):
        irrun.nothing  # noqa: B018


def test_version_as_a_process():
    for flag in ("-V", "--version"):
        proc = subprocess.run([sys.executable, "-m", "irrun", flag], capture_output=True,
                              text=True, env=ENV, timeout=60)  # fmt: skip
        assert (proc.returncode, proc.stderr) == (0, "")
        assert proc.stdout == f"irrun {irrun.__version__}\n"


def test_a_mistyped_command_as_a_process(tmp_path):
    (tmp_path / "net.xml").write_text("<net/>")
    proc = subprocess.run(
        [sys.executable, "-m", "irrun", "valdiate", "net.xml"],
        capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "irrun: error: unknown command 'valdiate' (did you mean 'validate'?)\n"
        "usage: irrun validate MODEL.xml [options] (irrun validate --help for more)\n"
    )


def help_text(capsys, *args: str) -> str:
    rc, out, err = run_cli(capsys, *args, "--help")
    assert (rc, err) == (0, "")
    return out


def examples(text: str) -> list[str]:
    """The lines of the help's "examples:" section."""
    section = text.split("\nexamples:\n", 1)[1]
    return [line.strip() for line in section.splitlines() if line.startswith("  ")]


def test_the_command_list(capsys):
    text = help_text(capsys)
    assert run_cli(capsys, "help") == (0, text, "")
    assert run_cli(capsys, "help", "validate") == (0, help_text(capsys, "validate"), "")
    # A name too long for the column (convert-precision) has its help on the next line.
    listed = re.findall(r"^    ([\w-]+)\s+(\S.*)$", text, re.M)
    assert [name for name, _ in listed] == list(cli.COMMANDS)
    assert text.startswith("usage: irrun [-h] [-V] COMMAND ...\n")
    assert "irrun validate model.xml" in examples(text)


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_command_has_a_description_and_examples(command, capsys):
    text = help_text(capsys, command)
    usage, description, *_ = text.split("\n\n")
    assert usage.startswith(f"usage: irrun {command} ")
    assert len(description.split()) >= 10, description  # a sentence, not the usage again
    lines = examples(text)
    assert 2 <= len(lines) <= 4, lines
    assert all(line.startswith("irrun ") for line in lines), lines


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_the_examples_are_command_lines_irrun_accepts(command, capsys):
    """Each example parses, as the command it illustrates (files need not exist)."""
    for line in examples(help_text(capsys, command)):
        words = shlex.split(line, comments=True)
        if ">" in words:
            words = words[: words.index(">")]
        args = words[1:]
        named = cli._command(args)  # puts 'run' first for the shorthand
        parser, _ = cli._parser(named)
        assert parser.parse_args(args).command == command, line


def test_the_misuse_docs_cli_md_shows_is_what_irrun_prints(capsys, monkeypatch):
    root = Path(irrun.__file__).parents[1]
    monkeypatch.chdir(root)
    text = (root / "docs" / "cli.md").read_text()
    block = text.split("\n$ irrun valdiate models/demo.xml\n", 1)[1].split("\n```", 1)[0]
    shown = re.split(r"^\$ irrun (.*)\n", "$ irrun valdiate models/demo.xml\n" + block, flags=re.M)
    assert len(shown) == 5  # two commands, each with its output
    for command, output in zip(shown[1::2], shown[2::2], strict=True):
        assert run_cli(capsys, *command.split()) == (2, "", output.rstrip("\n") + "\n")


def test_an_option_of_another_command_is_not_taken_for_a_typo():
    parser = cli.Parser(prog="irrun validate")
    parser.add_argument("--select")
    parser.add_argument("--strict", action="store_true")
    assert cli._unrecognized(parser, ["--seed", "1"]) == "unrecognized arguments: --seed 1"
    assert cli._unrecognized(parser, ["--strcit"]) == (
        "unrecognized arguments: --strcit (did you mean --strict?)"
    )
