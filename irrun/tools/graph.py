"""``irrun graph``: draw a model's graph, as DOT or rendered by Graphviz.

Each layer is a node showing its name, op (type and version) and key attributes;
each edge carries the tensor's element type and shape, as ``irrun inspect`` infers
them.  The DOT is written here, with no dependency; SVG, PNG and PDF are made by
Graphviz's ``dot`` program when it is on PATH.  Without it, asking for a picture is
a one-line error saying how to get it, and nothing is written.

Like ``irrun inspect``, a model with errors is drawn as far as it can be read: its
layers with errors get a red border, and the edges the graph could not take are left
out.  The file is written only once the picture is complete, whole or not at all.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import IrrunError, Location, UsageError, one_line
from .common import Parents, check_output_path, say_written, shapes, write_atomically
from .inspect import attributes_text, inspect_model, shape_text

# The format each output file name ending gives, when --format does not say.
FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf"}

# Fill colours by layer type: inputs green, outputs orange, constants grey.
_FILL = {"Parameter": "#d9ead3", "Result": "#fce5cd", "Const": "#eeeeee"}


def register(sub: Any, parents: Parents) -> None:
    """Add the ``graph`` subcommand to the parser ``cli`` builds."""
    parser = sub.add_parser(
        "graph", parents=[parents.model],
        description="Draw the model's graph: a node per layer (name, op, key attributes), an "
        "edge per tensor (element type and shape). DOT is written directly; SVG, PNG and PDF "
        "need Graphviz's dot program (apt-get install graphviz).",
        epilog="examples:\n"
        "  irrun graph model.xml -o graph.svg\n"
        "  irrun graph model.xml > graph.dot\n"
        "  irrun graph model.xml --shape [1,3,64,64] -o graph.png",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", default="-", metavar="FILE",
        help="graph.svg, graph.png, graph.pdf or graph.dot (the format follows the "
        "extension); - for stdout (the default, DOT unless --format says otherwise)",
    )  # fmt: skip
    parser.add_argument(
        "--format", choices=sorted(set(FORMATS.values())),
        help="the output's format, whatever its extension",
    )  # fmt: skip
    parser.add_argument(
        "--shape", type=shapes, metavar="SHAPES",
        help="give the inputs new shapes first and draw the shapes that follow, in "
        "OpenVINO's syntax: x[8,3,224,224],y[1,4], or [1,3,224,224] for one input",
    )  # fmt: skip
    parser.set_defaults(handler=_handle)


def output_format(output: str, given: str | None) -> str:
    """The format to write: ``given``, else the one ``output``'s extension names.

    >>> output_format("net.SVG", None), output_format("-", None), output_format("x", "png")
    ('svg', 'dot', 'png')
    """
    if given is not None:
        return given
    if output == "-":
        return "dot"
    fmt = FORMATS.get(Path(output).suffix.lower())
    if fmt is None:
        known = ", ".join(FORMATS)
        raise UsageError(
            f"-o {output}: cannot tell the format from the file name (known endings: {known}); "
            "add --format"
        )
    return fmt


def _handle(args: argparse.Namespace) -> int:
    out = None if args.output == "-" else Path(args.output)
    if out is not None:  # before any work, so that nothing is drawn for a file never written
        check_output_path(out)
    fmt = output_format(args.output, args.format)
    program = None
    if fmt != "dot":
        program = shutil.which("dot")
        if program is None:
            raise IrrunError(
                f"drawing {fmt.upper()} needs Graphviz's dot program, which is not on PATH: "
                "install Graphviz (apt-get install graphviz) or write DOT (-o graph.dot)"
            )
    text = to_dot(inspect_model(args.model, args.weights, args.shape))
    if program is None and out is None:
        sys.stdout.write(text)
        return 0
    data = text.encode("utf-8") if program is None else render(text, fmt, program, args.output)
    if out is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        write_atomically(out, lambda f: f.write(data), binary=True)
        say_written(f"the graph ({fmt.upper()})", out)
    return 0


def render(text: str, fmt: str, program: str, output: str) -> bytes:
    """Run Graphviz's ``dot`` on the DOT ``text``; the picture's bytes, or an error line."""
    try:
        # The program is Graphviz's dot as found on PATH, its arguments fixed: no shell.
        done = subprocess.run(
            [program, f"-T{fmt}"], input=text.encode("utf-8"), capture_output=True, check=False
        )
    except OSError as exc:
        raise IrrunError(f"cannot run Graphviz's dot ({program}): {exc.strerror or exc}",
                         Location(output)) from None  # fmt: skip
    if done.returncode != 0 or not done.stdout:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = f": {said[0]}" if said else f" (exit code {done.returncode})"
        raise IrrunError(f"Graphviz's dot failed{detail}", Location(output))
    return done.stdout


def quote(text: str) -> str:
    """A DOT double-quoted ID: the same ID for the same text, whatever it holds.

    >>> print(quote('a "b" \\\\'))
    "a \\"b\\" \\\\"
    """
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def quote_text(lines: list[str]) -> str:
    """A label or tooltip: each line shown as written, joined by Graphviz's line break.

    Graphviz reads backslash escapes (``\\N`` is the node's name) and HTML entities
    (``&amp;``) in these strings: both are escaped, so a name is never rewritten; a
    line break within one is shown as ``\\n``, as irrun shows it everywhere.

    >>> print(quote_text(['a "b" \\\\N &amp;', "x\\ny"]))
    "a \\"b\\" \\\\N &amp;amp;\\nx\\\\ny"
    """
    escaped = (
        one_line(line).replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')
        for line in lines
    )
    return '"' + "\\n".join(escaped) + '"'


def to_dot(report: dict[str, Any]) -> str:
    """The DOT text of the graph in an :func:`~irrun.tools.inspect.inspect_model` document.

    >>> text = to_dot(inspect_model("models/pooling_chain.xml"))
    >>> print(text.splitlines()[6])
      "0" [label="image\\nParameter-v1", fillcolor="#d9ead3", tooltip="models/pooling_chain.xml:4"];
    >>> print(next(line for line in text.splitlines() if '"1" -> "2"' in line))
      "1" -> "2" [label="port 1\\nf32[1,3,8,8]"];
    """
    lines = [
        f"digraph {quote(report['name'])} {{",
        "  // irrun graph " + one_line(report["file"]),
        '  graph [rankdir=TB, fontname="Helvetica"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", '
        "fontsize=10];",
        '  edge [fontname="Helvetica", fontsize=9];',
        "",
    ]
    by_id = {layer["id"]: layer for layer in report["layers"]}
    for layer in report["layers"]:
        text = [layer["name"], layer["op"], *attributes_text(layer["attributes"])]
        errors = layer["problems"]["errors"]
        attrs = []
        if errors:
            text.append(f"{errors} error{'s' * (errors != 1)} (irrun validate)")
            attrs += ['color="#cc0000"', "penwidth=2"]
        fill = _FILL.get(layer["type"])
        if fill:
            attrs.append(f'fillcolor="{fill}"')
        where = f"{report['file']}:{layer['line']}"
        attrs.append(f"tooltip={quote_text([where])}")
        lines.append(f'  {quote(layer["id"])} [label={quote_text(text)}, {", ".join(attrs)}];')
    lines.append("")
    for layer in report["layers"]:
        for tensor in layer["inputs"]:
            src = tensor["from"]
            if src is None:
                continue
            producer = by_id[src["layer"]]
            text = [shape_text(tensor)]
            if len(producer["outputs"]) > 1:
                port = next(p for p in producer["outputs"] if p["port"] == src["port"])
                text.insert(0, port["names"][0] if port["names"] else f"port {src['port']}")
            lines.append(
                f'  {quote(src["layer"])} -> {quote(layer["id"])} [label={quote_text(text)}];'
            )
    lines.append("}")
    return "\n".join(lines) + "\n"
