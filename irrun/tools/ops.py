"""``irrun ops``: which of OpenVINO's ops irrun runs, version by version.

Every op type of OpenVINO's opsets 1 to 17 (``irrun.ir.opsets``, read off OpenVINO's
IR reader) with the opsets that introduced each of its versions, which of those
versions irrun's registry holds, and the element types each version's input ports take
(``OpDef.input_types``).  A version is named by the opset that introduced it,
as OpenVINO's documentation names them (ScaledDotProductAttention-13, Range-4).
``--markdown`` prints the table docs/ops.md holds (``tests/tools/test_ops.py`` checks
that it is current); ``--json`` is for scripts; ``--missing`` keeps the versions irrun
lacks, and prints nothing when it lacks none (``--json``: an empty list).  ``--fast``
lists the fast kernels instead (:mod:`irrun.fast`): for each, the op versions it
implements, when it applies, and how close to the reference kernel it is.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..fast import fast_kernels
from ..ir import registry
from ..ir.element_types import describe_types
from ..ir.opsets import OPSETS
from .common import Parents, dump_json


def register(sub: Any, parents: Parents) -> None:
    """Add the ``ops`` subcommand to the parser ``cli`` builds."""
    parser = sub.add_parser(
        "ops",
        description="List every op type of OpenVINO's opsets 1 to 17 with the opsets that "
        "introduced its versions, the versions irrun runs and the element types they take.",
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
        "--fast",
        action="store_true",
        help="list the fast kernels: the ops they implement, when they apply, how exact",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    parser.set_defaults(handler=_handle)


def input_types(op: registry.OpDef) -> str:
    """The element types each input port of ``op`` takes, ports that take the same
    together (``0..``: that port and all after it, on an op of any number of inputs).

    >>> input_types(registry.resolve("CTCLoss", "opset4"))
    '0: floats; 1-4: i64, i32'
    >>> input_types(registry.resolve("Concat", "opset1"))
    '0..: any'
    """
    ports = max(op.inputs[0], len(op.input_types), 1) if op.variadic else op.inputs[1]
    if ports == 0:
        return "-"
    runs: list[tuple[int, int, str]] = []
    for port in range(ports):
        words = describe_types(op.port_types(port))
        if runs and runs[-1][2] == words:
            runs[-1] = (runs[-1][0], port, words)
        else:
            runs.append((port, port, words))
    parts = []
    for first, last, words in runs:
        where = str(first) if first == last else f"{first}-{last}"
        if op.variadic and last == ports - 1:
            where = f"{first}.."
        parts.append(f"{where}: {words}")
    return "; ".join(parts)


def coverage() -> list[dict[str, Any]]:
    """One entry per OpenVINO op type: its versions, the ones irrun runs and the element
    types of their input ports, by version.

    >>> entry = [e for e in coverage() if e["type"] == "MaxPool"][0]
    >>> entry["opsets"], entry["versions"], entry["irrun"]
    ('opset1..16', [1, 8, 14], [1, 8, 14])
    >>> entry["input_types"]["14"]
    '0: numbers, boolean'
    """
    ours: dict[str, dict[int, registry.OpDef]] = {}
    for op in registry.supported_ops():
        name = registry.openvino_type(op.type)
        if name is not None:
            ours.setdefault(name, {})[op.since_opset] = op
    table = []
    for name in sorted(OPSETS, key=str.lower):
        versions = list(OPSETS[name][1])
        have = ours.get(name, {})
        table.append({
            "type": name,
            "opsets": registry.describe_opsets(registry.openvino_opsets(name)),
            "versions": versions,
            "irrun": [v for v in versions if v in have],
            "input_types": {str(v): input_types(have[v]) for v in versions if v in have},
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


def _types_text(entry: dict[str, Any]) -> str:
    by_version = entry["input_types"]
    if len(set(by_version.values())) <= 1:
        return next(iter(by_version.values()), "-")
    return "<br>".join(f"{entry['type']}-{v}: {text}" for v, text in by_version.items())


def markdown(table: list[dict[str, Any]]) -> str:
    """The table of docs/ops.md: type, versions by opset of introduction, what irrun runs,
    and the element types each input port takes."""
    lines = [
        summary(table) + ".",
        "",
        "| op type | versions (opset that introduced them) | irrun | element types by input port |",
        "|---|---|---|---|",
    ]
    for e in table:
        irrun = _irrun_text(e)
        mark = f"**{irrun}**" if e["irrun"] else "-"
        versions = ", ".join(map(str, e["versions"]))
        lines.append(f"| {e['type']} | {versions} | {mark} | {_types_text(e)} |")
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
        {
            "type": f.op,
            "versions": list(f.versions),
            "applies": f.applies,
            "exact": f.exact,
            "bound": f.bound,
            "in_place": f.into is not None,
        }
        for f in sorted(fast_kernels(), key=lambda f: (f.op.lower(), f.versions))
    ]


def _handle(args: argparse.Namespace) -> int:
    if args.fast:
        return _handle_fast(args)
    table = coverage()
    shown = _missing(table) if args.missing else table
    if args.missing and not shown and not args.json:
        return 0
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
        sys.stdout.write(
            f"{e['type']} {versions}{into}\n  applies: {e['applies']}\n"
            f"  against the reference: {close}\n"
        )
    print(f"{len(table)} fast kernels; every other op runs its reference kernel", file=sys.stderr)
    return 0
