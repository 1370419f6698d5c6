"""``irrun ops``: which of OpenVINO's ops irrun runs, version by version.

Every op type of OpenVINO's opsets 1 to 16 (``irrun.ir.opsets``, read off OpenVINO's
IR reader) with the opsets that introduced each of its versions, and which of those
versions irrun's registry holds.  A version is named by the opset that introduced it,
as OpenVINO's documentation names them (ScaledDotProductAttention-13, Range-4).
``--markdown`` prints the table docs/ops.md holds (``tests/tools/test_ops.py`` checks
that it is current); ``--json`` is for scripts; ``--missing`` keeps the versions irrun
lacks.  ``--fast`` lists the fast kernels instead (:mod:`irrun.fast`): for each, the op
versions it implements, when it applies, and how close to the reference kernel it is.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..fast import fast_kernels
from ..ir import registry
from ..ir.opsets import OPSETS
from .common import Parents, dump_json


def register(sub: Any, parents: Parents) -> None:
    """Add the ``ops`` subcommand to the parser ``cli`` builds."""
    parser = sub.add_parser(
        "ops",
        description="List every op type of OpenVINO's opsets 1 to 16 with the opsets that "
        "introduced its versions, and the versions irrun runs.",
        epilog="examples:\n"
        "  irrun ops\n"
        "  irrun ops --missing\n"
        "  irrun ops --fast\n"
        "  irrun ops --json > ops.json",
    )  # fmt: skip
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print JSON instead of a table")
    form.add_argument(
        "--markdown", action="store_true", help="print the Markdown table of docs/ops.md"
    )  # fmt: skip
    parser.add_argument(
        "--missing", action="store_true", help="only the versions irrun does not run"
    )  # fmt: skip
    parser.add_argument(
        "--fast", action="store_true",
        help="list the fast kernels: the ops they implement, when they apply, how exact",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.set_defaults(handler=_handle)


def coverage() -> list[dict[str, Any]]:
    """One entry per OpenVINO op type: its versions and the ones irrun runs.

    >>> [e for e in coverage() if e["type"] == "MaxPool"]
    [{'type': 'MaxPool', 'opsets': 'opset1..16', 'versions': [1, 8, 14], 'irrun': [1, 8, 14]}]
    """
    ours: dict[str, set[int]] = {}
    for op in registry.supported_ops():
        name = registry.openvino_type(op.type)
        if name is not None:
            ours.setdefault(name, set()).add(op.since_opset)
    table = []
    for name in sorted(OPSETS, key=str.lower):
        versions = list(OPSETS[name][1])
        table.append({
            "type": name,
            "opsets": registry.describe_opsets(registry.openvino_opsets(name)),
            "versions": versions,
            "irrun": [v for v in versions if v in ours.get(name, ())],
        })  # fmt: skip
    return table


def summary(table: list[dict[str, Any]]) -> str:
    """``irrun runs 120 of 205 op types fully, 3 in part (150 of 240 versions)``."""
    full = sum(e["irrun"] == e["versions"] for e in table)
    part = sum(bool(e["irrun"]) and e["irrun"] != e["versions"] for e in table)
    have = sum(len(e["irrun"]) for e in table)
    total = sum(len(e["versions"]) for e in table)
    return (
        f"irrun runs {full} of {len(table)} op types in every version and {part} in some "
        f"({have} of {total} op versions)"
    )


def _irrun_text(entry: dict[str, Any]) -> str:
    if entry["irrun"] == entry["versions"]:
        return "yes" if len(entry["versions"]) == 1 else "all"
    return ", ".join(map(str, entry["irrun"])) or "-"


def markdown(table: list[dict[str, Any]]) -> str:
    """The table of docs/ops.md: type, versions by opset of introduction, what irrun runs."""
    lines = [
        summary(table) + ".",
        "",
        "| op type | versions (opset that introduced them) | irrun |",
        "|---|---|---|",
    ]
    for e in table:
        irrun = _irrun_text(e)
        mark = f"**{irrun}**" if e["irrun"] else "-"
        lines.append(f"| {e['type']} | {', '.join(map(str, e['versions']))} | {mark} |")
    return "\n".join(lines) + "\n"


def text_table(table: list[dict[str, Any]]) -> str:
    """The table ``irrun ops`` prints, its columns as wide as their longest cell.

    >>> print(text_table([{"type": "NMSRotated", "versions": [13], "irrun": []},
    ...                   {"type": "Pad", "versions": [1, 12], "irrun": [1, 12]}]), end="")
    op type     versions  irrun
    NMSRotated  13        -
    Pad         1, 12     all
    """
    rows = [("op type", "versions", "irrun")]
    rows += [(e["type"], ", ".join(map(str, e["versions"])), _irrun_text(e)) for e in table]
    kind, versions = (max(len(row[i]) for row in rows) for i in (0, 1))
    return "".join(f"{a:<{kind}}  {b:<{versions}}  {c}\n" for a, b, c in rows)


def _missing(table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in table:
        lacking = [v for v in e["versions"] if v not in e["irrun"]]
        if lacking:
            out.append({**e, "versions": lacking, "irrun": []})
    return out


def fast_table() -> list[dict[str, Any]]:
    """One entry per fast kernel, by op type.

    >>> sorted(fast_table()[0])
    ['applies', 'bound', 'exact', 'in_place', 'type', 'versions']
    """
    return [
        {"type": f.op, "versions": list(f.versions), "applies": f.applies,
         "exact": f.exact, "bound": f.bound, "in_place": f.into is not None}
        for f in sorted(fast_kernels(), key=lambda f: (f.op.lower(), f.versions))
    ]


def _handle(args: argparse.Namespace) -> int:
    if args.fast:
        return _handle_fast(args)
    table = coverage()
    shown = _missing(table) if args.missing else table
    if args.json:
        dump_json({"summary": summary(table), "ops": shown}, sys.stdout)
    elif args.markdown:
        sys.stdout.write(markdown(shown))
    else:
        sys.stdout.write(text_table(shown))
        print(summary(table), file=sys.stderr)
    return 0


def _handle_fast(args: argparse.Namespace) -> int:
    table = fast_table()
    if args.json:
        dump_json({"fast_kernels": table}, sys.stdout)
        return 0
    for e in table:
        versions = ", ".join(f"v{v}" for v in e["versions"])
        into = ", and in place" if e["in_place"] else ""
        close = "bit for bit" if e["exact"] else e["bound"]
        sys.stdout.write(f"{e['type']} {versions}{into}\n  applies: {e['applies']}\n"
                         f"  against the reference: {close}\n")
    print(f"{len(table)} fast kernels; every other op runs its reference kernel",
          file=sys.stderr)
    return 0
