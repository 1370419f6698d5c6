"""The ``irrun`` command line: the commands of :mod:`irrun.tools`, assembled.

``irrun MODEL.xml ...`` is short for ``irrun run MODEL.xml ...``.  Errors are one
line on stderr with exit code 1 (2 for misuse of the command line, then a one-line
usage); ``--debug`` shows the traceback instead.

Only the module of the command given is imported: NumPy, networkx and the kernels take
most of a second to import, and ``irrun --help`` and ``irrun --version`` need none of
them (``irrun --help`` lists the commands from :data:`COMMANDS`).

``irrun validate`` prints one line per finding and a summary, and exits 0 when
there is no error (1 with errors, or with warnings under ``--strict``).
"""

from __future__ import annotations

import argparse
import difflib
import functools
import importlib
import os
import sys
import textwrap
from collections.abc import Sequence
from typing import Any, NoReturn

from .errors import InternalError, IrrunError, UsageError
from .version import __version__

# The commands, in the order --help lists them, with the line it lists them with.  The
# module irrun.tools.NAME of each adds its parser and handler (its register()).
COMMANDS: dict[str, str] = {
    "run": "run a model and show or save its outputs",
    "validate": "check an IR file and report every problem",
    "inspect": "show a model's inputs, outputs, layers, weights and rt_info",
    "compare": "compare irrun's values with a reference",
    "benchmark": "time a model's runs: latency median, average, min, max, p90 and throughput",
    "graph": "draw the model's graph (DOT, SVG, PNG, PDF)",
    "generate": "decode a causal LM greedily, token by token",
    "ops": "list OpenVINO's op types and versions, and which irrun runs",
    "extract": "write the subgraph between some tensors and others as a new IR",
    "reduce": "shrink a model to the smallest subgraph that still fails a check",
    "cleanup": "remove dead layers, unused outputs and duplicate constants; renumber",
    "fold": "fold constant layers into constants, shapes made static with --shape",
    "reshape": "write the model with new input shapes",
    "convert-precision": "convert a model's f32 weights to f16 (or back), as OpenVINO does",
}
# The module of a command whose name is no Python name.
MODULES = {"convert-precision": "precision"}

# What users of other tools type for a command that irrun names otherwise (Polygraphy's
# `check`, onnx's checker), where spelling alone would not lead to it.
SYNONYMS = {"check": "validate", "lint": "validate", "info": "inspect", "show": "inspect"}

_HELP_FIRST = ("-h", "--help", "-V", "--version")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Paragraphs filled to the terminal's width; a paragraph with indented lines (the
    examples) kept as written, so that each example stays one line to copy."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(
            "\n".join(indent + line for line in block.splitlines())
            if any(line.startswith(" ") for line in block.splitlines())
            else "\n".join(indent + line for line in self._split_lines(block, width - len(indent)))
            for block in text.split("\n\n")
        )

    def _split_lines(self, text: str, width: int) -> list[str]:
        # Not at hyphens, which argparse breaks at: "--mark-" and "all" on two lines.
        words = self._whitespace_matcher.sub(" ", text).strip()
        return textwrap.wrap(words, width, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a usage error says what is wrong first, then one line of
    usage (argparse prints the whole usage, eight lines for ``run``, before it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n{usage_hint(self)}\n")


def usage_hint(parser: argparse.ArgumentParser) -> str:
    """``usage: irrun validate MODEL.xml [options] (irrun validate --help for more)``."""
    formatter = parser._get_formatter()
    words = [formatter._format_args(a, a.dest) for a in parser._get_positional_actions()]
    if not parser._subparsers:
        words.append("[options]")
    return f"usage: {' '.join([parser.prog, *words])} ({parser.prog} --help for more)"


def _parser(command: str | None = None) -> tuple[Parser, Any]:
    """The parser, with ``command``'s sub-parser built by its module; the others are
    names and help lines only, enough for ``irrun --help``.  Returns the parser and its
    sub-parsers' action."""
    parser = Parser(
        prog="irrun",
        description="Run and check OpenVINO IR models (model.xml + model.bin) with NumPy.",
        epilog="'irrun MODEL.xml ...' is short for 'irrun run MODEL.xml ...'.\n\n"
        "examples:\n"
        "  irrun model.xml                                 # run on seeded random inputs\n"
        "  irrun model.xml --input x.npy -o out.npz\n"
        "  irrun validate model.xml\n"
        "  irrun compare model.xml --ref-backend openvino\n"
        "  irrun COMMAND --help                            # a command's options and examples",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"irrun {__version__}")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND",
        parser_class=functools.partial(Parser, formatter_class=HelpFormatter),
    )  # fmt: skip
    shared = None
    for name, help_line in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=help_line, add_help=False)
            continue
        from .tools.common import parents  # NumPy and the model: only for a command

        shared = shared or parents()
        module = importlib.import_module(f"{__package__}.tools.{MODULES.get(name, name)}")
        module.register(_Named(sub), shared)
    return parser, sub


class _Named:
    """The sub-parsers' action as a command's register() sees it: add_parser gets the
    command's help line from :data:`COMMANDS`."""

    def __init__(self, sub: Any) -> None:
        self._sub = sub

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        kwargs.setdefault("help", COMMANDS[name])
        parser: argparse.ArgumentParser = self._sub.add_parser(name, **kwargs)
        return parser


def _command(args: list[str]) -> str | None:
    """The command ``args`` name; ``run`` is put first for ``irrun MODEL.xml ...``.

    A first word that is neither a command nor something like a file (an existing path,
    or a name with a dot or a slash) is a mistyped command: :class:`_UnknownCommand`,
    with the nearest command if there is one.
    """
    if args and args[0] == "help":  # irrun help [COMMAND], as git and pip read it
        args[:] = [*args[1:2], "--help"]
    if not args or args[0] in _HELP_FIRST:
        return None
    first = args[0]
    if first in COMMANDS:
        return first
    if first.startswith("-") or os.path.lexists(first) or any(c in first for c in "./\\"):
        args.insert(0, "run")
        return "run"
    near = SYNONYMS.get(first) or next(iter(difflib.get_close_matches(first, COMMANDS, 1)), None)
    if near is not None:
        raise _UnknownCommand(f"unknown command '{first}' (did you mean '{near}'?)", near)
    raise _UnknownCommand(
        f"'{first}' is neither a command nor a file (commands: {', '.join(COMMANDS)})", None
    )


class _UnknownCommand(Exception):
    """A first word that is neither a command nor a file; ``near``: the command meant."""

    def __init__(self, message: str, near: str | None) -> None:
        super().__init__(message)
        self.near = near


def _unrecognized(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """argparse's complaint, with the nearest option of this command for each mistyped one:
    ``unrecognized arguments: --strcit (did you mean --strict?)``."""
    options = {o.lstrip("-"): o for o in parser._option_string_actions}
    hints = []
    for extra in extras:
        if not extra.startswith("-") or extra[1:2].isdigit():
            continue  # a value, or a negative number
        flag = extra.split("=", 1)[0]
        # 0.7, not difflib's 0.6: --seed is no typo of --select (0.6), --strcit is (0.83).
        near = difflib.get_close_matches(flag.lstrip("-"), options, 1, cutoff=0.7)
        if near:
            hints.append((flag, options[near[0]]))
    message = f"unrecognized arguments: {' '.join(extras)}"
    if len(hints) == 1:
        return f"{message} (did you mean {hints[0][1]}?)"
    if hints:
        return f"{message} (did you mean {', '.join(f'{n} for {f}' for f, n in hints)}?)"
    return message


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if len(args_list) == 1 and args_list[0][:1] == "-" and args_list[0] not in _HELP_FIRST:
        # An option alone is not a run (that needs a model): irrun --versoin, say.
        top = _parser()[0]
        top.error(_unrecognized(top, args_list))
    try:
        command = _command(args_list)
    except _UnknownCommand as exc:
        parser, sub = _parser(exc.near)
        hint = usage_hint(sub.choices[exc.near] if exc.near else parser)
        print(f"irrun: error: {exc}\n{hint}", file=sys.stderr)
        return 2
    parser, sub = _parser(command)
    args, extras = parser.parse_known_args(args_list)
    if extras:
        sub.choices[args.command].error(_unrecognized(sub.choices[args.command], extras))
    try:
        rc = int(args.handler(args))
        # What is still buffered (stdout to a pipe is block-buffered) is written here,
        # where a reader that has gone is the BrokenPipeError below, not an error at exit.
        sys.stdout.flush()
        return rc
    except UsageError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 2
    except InternalError as exc:  # a bug in irrun, caught at the layer it surfaced in
        if args.debug:
            raise
        print(f"irrun: internal error: {exc}", file=sys.stderr)
        return 1
    except IrrunError as exc:
        if args.debug:
            raise
        print(f"irrun: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (irrun inspect ... | head): stop quietly, and keep Python's
        # flush of stdout at exit from failing again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as the shell reports a process a pipe killed
    except Exception as exc:  # a bug in irrun: still one line, the traceback with --debug
        if args.debug:
            raise
        print(
            f"irrun: internal error: {type(exc).__name__}: {exc} (a bug in irrun: please "
            "report it; --debug shows the traceback)",
            file=sys.stderr,
        )
        return 1
