"""``irrun validate``: check an IR file and report every problem, one line each.

It prints one line per finding and a summary, and exits 0 when there is no error
(1 with errors, or with warnings under ``--strict``); ``--json`` and ``-o`` give the
report as JSON (:func:`validation_report`).  Info findings (what converters normally
write) are printed with ``-v`` only and never fail; ``--ignore`` and ``--select`` pick
findings by code.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.check import check_ir, finding_codes, internal_error, select_findings
from ..core.reshape import describe
from ..errors import Diagnostic, UsageError
from . import common
from .common import Parents


def register(sub: Any, parents: Parents) -> None:
    """Add ``irrun validate`` to the command line."""
    check = sub.add_parser(
        "validate", parents=[parents.model],
        description="Check an IR file and report every problem, one line each. Exit 0 when "
        "there is no error, 1 when there is one (or a warning, with --strict).",
        epilog="examples:\n"
        "  irrun validate model.xml\n"
        "  irrun validate model.xml --shape [8,3,224,224] --strict\n"
        "  irrun validate model.xml --json -o report.json",
    )  # fmt: skip
    check.add_argument(
        "--shape", type=common.shapes, metavar="SHAPES",
        help="give the inputs new shapes and report what breaks, in OpenVINO's syntax: "
        "x[8,3,224,224],y[1,4], or [1,3,224,224] for a model with one input "
        "(a dim may be ?, -1 or a range 1..10)",
    )  # fmt: skip
    check.add_argument(
        "--strict", action="store_true", help="fail (exit 1) on warnings too (never on info)"
    )
    check.add_argument(
        "--ignore", action="append", type=_codes, default=[], metavar="CODE[,CODE...]",
        help="leave out the findings with these codes (repeatable; docs/cli.md lists the codes)",
    )  # fmt: skip
    check.add_argument(
        "--select", action="append", type=_codes, metavar="CODE[,CODE...]",
        help="report only the findings with these codes (repeatable)",
    )  # fmt: skip
    check.add_argument(
        "-v", "--verbose", action="store_true",
        help="print the info findings too (ports of multi-output ops nothing reads...)",
    )  # fmt: skip
    check.add_argument(
        "--max-memory", type=common.memory_size, default="available", metavar="SIZE",
        help="warn of tensors and runs that need more than SIZE (512M, 4G, 1T, or none; "
        "default: the memory available now)",
    )  # fmt: skip
    check.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of lines"
    )
    check.add_argument(
        "-o", "--output", metavar="REPORT.json", help="also write the report as JSON here"
    )
    check.set_defaults(handler=_handle)


def _codes(text: str) -> list[str]:
    try:
        return finding_codes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _handle(args: argparse.Namespace) -> int:
    if args.output:
        common.check_output_path(Path(args.output))
    shapes_text = None
    try:
        checked = check_ir(args.model, args.weights, args.shape, max_memory=args.max_memory)
    except UsageError:
        raise
    except Exception as exc:
        if args.debug:
            raise
        found = [internal_error(args.model, exc)]  # never a traceback, whatever the file
    else:
        found = checked.findings
        if checked.graph is not None and checked.shapes:
            shapes_text = describe(checked.graph, checked.shapes)
    if args.debug:  # a bug an op's rule hit was reported; the traceback is wanted instead
        for d in found:
            if "exception" in d.extra:
                raise d.extra["exception"]
    select = None if args.select is None else [c for codes in args.select for c in codes]
    found = select_findings(found, [c for codes in args.ignore for c in codes], select)
    errors, warnings, infos = _counts(found)
    failed = bool(errors or (args.strict and warnings))
    report = validation_report(args.model, found, shapes_text, args.strict)
    if args.output:
        common.write_atomically(Path(args.output), lambda f: common.dump_json(report, f))
        findings = f"{common.count(errors, 'error')}, {common.count(warnings, 'warning')}"
        if infos:
            findings += f", {common.count(infos, 'info finding')}"
        common.say_written(f"the report ({findings})", args.output)
    if args.json:
        common.dump_json(report, sys.stdout)
        return int(failed)
    for d in found:
        if d.level != "info" or args.verbose:
            print(d)
    subject = f"{args.model} with {shapes_text}" if shapes_text else args.model
    info = common.count(infos, "info finding") if infos else ""
    if infos and not args.verbose:
        info += f" hidden: -v shows {'it' if infos == 1 else 'them'}"
    if failed:
        strict = "" if errors else " (--strict: warnings fail)"
        info = f"; {info}" if info else ""
        print(f"{subject}: {common.count(errors, 'error')}, "
              f"{common.count(warnings, 'warning')}{strict}{info}")  # fmt: skip
    else:
        notes = [common.count(warnings, "warning")] if warnings else []
        notes += [info] if info else []
        print(f"{subject}: valid" + (f" ({'; '.join(notes)})" if notes else ""))
    return int(failed)


def _counts(found: list[Diagnostic]) -> tuple[int, int, int]:
    """How many errors, warnings and info findings."""
    levels = [d.level for d in found]
    return levels.count("error"), levels.count("warning"), levels.count("info")


def validation_report(
    model: str, found: list[Diagnostic], shapes: str | None = None, strict: bool = False
) -> dict[str, Any]:
    """The JSON report of ``irrun validate``: a summary and every finding.

    Info findings are in the report whatever ``-v`` says; they never fail it.

    >>> validation_report("m.xml", [])["summary"]
    {'passed': True, 'errors': 0, 'warnings': 0, 'info': 0, 'strict': False}
    """
    errors, warnings, infos = _counts(found)
    return {
        "file": model,
        "shapes": shapes,
        "summary": {
            "passed": not errors and not (strict and warnings),
            "errors": errors,
            "warnings": warnings,
            "info": infos,
            "strict": strict,
        },
        "findings": [d.as_dict() for d in found],
    }
