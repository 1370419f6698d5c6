"""``irrun graph``: draw a model's graph, as DOT or rendered by Graphviz.

Each layer is a node showing its name, op (type and version) and key attributes;
each edge carries the tensor's element type and shape, as ``irrun inspect`` infers
them.  The DOT is written here, with no dependency; SVG, PNG and PDF are made by
Graphviz's ``dot`` program when it is on PATH.  Without it, asking for a picture is
a one-line error saying how to get it, and nothing is written.

Like ``irrun inspect``, a model with errors is drawn as far as it can be read: its
layers with errors get a red border, and the edges the graph could not take are left
out.  The file is written only once the picture is complete, whole or not at all.

As Netron does, constants are folded into the layers that use them: a Const, and a
Convert of one (weights stored in f16 or int8), is a line in its consumer's box
(``weight: f16->f32[16,3,3,3]``) rather than a box of its own; ``--constants`` draws
them all.  ``--color-by time`` fills each layer by its share of a profiled run's time
(as ``irrun run --profile`` measures it), ``--color-by error`` by its largest absolute
difference from a reference run (as ``irrun compare --mark-all`` finds it: irrun's
reference kernels, or OpenVINO with ``--ref-backend openvino``), both on seeded random
inputs or ``--input``; a legend says what each colour means.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import IrrunError, Location, UsageError, one_line
from ..text import count
from .common import (
    Parents,
    check_output_path,
    int_at_least,
    read_inputs,
    say_written,
    shapes,
    write_atomically,
)
from .drawing import (
    LAYER_FILLS,
    SCALE,
    UNCOLORED,
    dark,
    error_fill,
    error_legend,
    folded_constants,
    scale_bin,
    scale_legend,
)
from .inspect import attributes_text, inspect_model, shape_text

# The format each output file name ending gives, when --format does not say.
FORMATS = {".dot": "dot", ".gv": "dot", ".svg": "svg", ".png": "png", ".pdf": "pdf"}

# A layer's share of the time: below 1%, 5%, 10%, 25%, and from 25%.
TIME_BINS = (0.01, 0.05, 0.10, 0.25)


@dataclass
class Coloring:
    """What ``--color-by`` adds to the picture: a fill and a label line per layer id, and
    the legend (its title and each colour's meaning)."""

    title: str
    fills: dict[str, str] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    legend: list[tuple[str, str]] = field(default_factory=list)


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
    parser.add_argument(
        "--constants", action="store_true",
        help="draw every Const (and Convert of one) as a box of its own, instead of as a line "
        "in the box of the layer that uses it",
    )  # fmt: skip
    parser.add_argument(
        "--color-by", choices=("time", "error"),
        help="fill each layer by its share of a profiled run's time, or by its largest "
        "absolute error against a reference run (see --ref-backend); with a legend",
    )  # fmt: skip
    parser.add_argument(
        "--ref-backend", choices=("reference", "openvino"),
        help="--color-by error: the run to compare with, irrun's reference kernels (the "
        "default) or OpenVINO's CPU plugin",
    )  # fmt: skip
    parser.add_argument(
        "-i", "--input", action="append", default=[], metavar="[NAME=]PATH",
        help="--color-by: an input (.npy, NAME=x.npy, or an .npz by input name); default: "
        "seeded random inputs",
    )  # fmt: skip
    parser.add_argument(
        "--seed", type=int_at_least(0, "--seed"),
        help="--color-by: the seed of the random inputs (default 0)",
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
    if args.color_by is None:
        for flag, given in (("--ref-backend", args.ref_backend), ("--input", args.input),
                            ("--seed", args.seed)):  # fmt: skip
            if given not in (None, []):
                raise UsageError(f"{flag} only applies with --color-by")
    elif args.color_by == "time" and args.ref_backend is not None:
        raise UsageError("--ref-backend only applies with --color-by error")
    if args.input and args.seed is not None:
        raise UsageError("--seed makes random inputs, but the inputs come from --input")
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
    report = inspect_model(args.model, args.weights, args.shape)
    coloring = None
    if args.color_by is not None:
        coloring = color_by(args.color_by, args.model, args.weights, args.shape, args.input,
                            args.seed or 0, args.ref_backend or "reference")  # fmt: skip
    text = to_dot(report, constants=args.constants, coloring=coloring)
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


def color_by(
    what: str,
    xml: str,
    weights: str | None = None,
    shape: str | None = None,
    inputs: list[str] | None = None,
    seed: int = 0,
    backend: str = "reference",
) -> Coloring:
    """The :class:`Coloring` of ``--color-by time`` or ``--color-by error``: one run of the
    model on ``inputs`` (``--input`` values) or on random inputs of ``seed``."""
    from ..core.model import load

    model = load(xml, weights)
    if shape:
        model.reshape(shape)
    feeds = read_inputs(model, inputs) if inputs else model.random_inputs(seed)
    origin = "--input" if inputs else f"random inputs, seed {seed}"
    if what == "time":
        return _time_coloring(model, feeds, origin)
    return _error_coloring(model, feeds, origin, backend)


def _time_coloring(model: Any, feeds: dict[str, Any], origin: str) -> Coloring:
    from .profile import Profile

    profile = Profile(model.folding)
    model.run(feeds)  # the first run's set-up is charged to no layer, as --profile does
    profile.start_run(time.perf_counter())
    model._execute(feeds, on_layer=profile, every_layer=False, values=False)
    profile.end_run(time.perf_counter())
    total = sum(t.median for t in profile.layers.values())
    coloring = Coloring(f"time per layer: share of {total * 1e3:.3f} ms ({origin})")
    for lid, times in profile.layers.items():
        share = times.median / total if total > 0 else 0.0
        coloring.fills[lid] = SCALE[scale_bin(share, TIME_BINS)]
        coloring.notes[lid] = f"{times.median * 1e3:.3f} ms ({share:.1%})"
    edges = [f"{b:.0%}" for b in TIME_BINS]
    coloring.legend = [*scale_legend(edges), ("not timed", UNCOLORED)]
    return coloring


def _error_coloring(model: Any, feeds: dict[str, Any], origin: str, backend: str) -> Coloring:
    from .compare import compare

    report = compare(model, feeds, backend=backend, mark_all=True)
    worst = {lid: (e.max_abs, e.passed) for lid, e in report.layer_errors().items()}
    what = "OpenVINO" if backend == "openvino" else "irrun's reference kernels"
    coloring = Coloring(f"largest absolute error against {what} ({origin})")
    for lid, (error, passed) in worst.items():
        coloring.fills[lid] = error_fill(error)
        coloring.notes[lid] = f"max abs error {error:.2g}" + ("" if passed else " (FAILED)")
    coloring.legend = error_legend()
    return coloring


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


def _constant_text(by_id: dict[str, dict[str, Any]], tensor: dict[str, Any]) -> str:
    """A folded input's line: the name of the layer that feeds it, the Const's element type
    if converted, the shape the consumer gets, and its value when the file holds a short one."""
    layer = by_id[tensor["from"]["layer"]]
    name = layer["name"]
    while layer["type"] == "Convert":
        layer = by_id[layer["inputs"][0]["from"]["layer"]]
    stored = layer["outputs"][0]["element_type"] if layer["outputs"] else None
    text = shape_text(tensor)
    if stored and tensor["element_type"] and stored != tensor["element_type"]:
        text = f"{stored}->{text}"
    line = f"{name}: {text}"
    if "value" in layer["attributes"]:
        line += " = " + attributes_text({"v": layer["attributes"]["value"]})[0][2:]
    return line


def to_dot(
    report: dict[str, Any], constants: bool = False, coloring: Coloring | None = None
) -> str:
    """The DOT text of the graph in an :func:`~irrun.tools.inspect.inspect_model` document.

    Constants are folded into their consumers unless ``constants``; ``coloring`` fills
    the layers and adds a legend.

    >>> text = to_dot(inspect_model("models/pooling_chain.xml"))
    >>> print(next(line for line in text.splitlines() if line.startswith('  "0" ')))
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
    hidden = set() if constants else folded_constants(report["layers"])
    if hidden:
        lines.insert(5, f"  // {count(len(hidden), 'constant layer')} folded into the layers "
                     "that use them (--constants draws them)")  # fmt: skip
    for layer in report["layers"]:
        if layer["id"] in hidden:
            continue
        text = [layer["name"], layer["op"], *attributes_text(layer["attributes"])]
        text += [_constant_text(by_id, t) for t in layer["inputs"]
                 if t["from"] is not None and t["from"]["layer"] in hidden]  # fmt: skip
        errors = layer["problems"]["errors"]
        attrs = []
        if errors:
            text.append(f"{errors} error{'s' * (errors != 1)} (irrun validate)")
            attrs += ['color="#cc0000"', "penwidth=2"]
        fill = LAYER_FILLS.get(layer["type"])
        if coloring is not None and layer["id"] in coloring.notes:
            text.append(coloring.notes[layer["id"]])
            fill = coloring.fills[layer["id"]]
        if fill:
            attrs.append(_fill(fill))
        where = f"{report['file']}:{layer['line']}"
        attrs.append(f"tooltip={quote_text([where])}")
        lines.append(f"  {quote(layer['id'])} [label={quote_text(text)}, {', '.join(attrs)}];")
    lines.append("")
    for layer in report["layers"]:
        for tensor in layer["inputs"]:
            src = tensor["from"]
            if src is None or src["layer"] in hidden:
                continue
            producer = by_id[src["layer"]]
            text = [shape_text(tensor)]
            if len(producer["outputs"]) > 1:
                port = next(p for p in producer["outputs"] if p["port"] == src["port"])
                text.insert(0, port["names"][0] if port["names"] else f"port {src['port']}")
            lines.append(
                f"  {quote(src['layer'])} -> {quote(layer['id'])} [label={quote_text(text)}];"
            )
    if coloring is not None:
        lines += ["", *_legend_dot(coloring)]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _legend_dot(coloring: Coloring) -> list[str]:
    """The legend: a row of coloured boxes, one per colour, titled with what they measure."""
    lines = [
        '  subgraph "cluster_legend" {',
        f"    label={quote_text([coloring.title])};",
        '    style="rounded"; fontname="Helvetica"; fontsize=10;',
    ]
    names = [f"legend {i}" for i in range(len(coloring.legend))]
    for name, (text, colour) in zip(names, coloring.legend, strict=True):
        lines.append(f"    {quote(name)} [label={quote_text([text])}, {_fill(colour)}];")
    # One rank, in order: a row under the title.
    lines.append("    { rank=same; " + " ".join(f"{quote(n)};" for n in names) + " }")
    lines += [f"    {quote(a)} -> {quote(b)} [style=invis];"
              for a, b in itertools.pairwise(names)]  # fmt: skip
    lines.append("  }")
    return lines


def _fill(colour: str) -> str:
    """A fill, with white text on the darkest colours of the scale."""
    return f'fillcolor="{colour}"' + (', fontcolor="#ffffff"' if dark(colour) else "")
