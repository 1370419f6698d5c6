"""``irrun inspect``: what a model is made of, without running it.

The IR version and the opsets it uses, its inputs and outputs, every layer with its
shapes and key attributes, the weights by element type, and the model's
``<rt_info>``; ``--json`` gives the same as one JSON document.

A model with errors is still shown as far as it can be read: shapes irrun could not
infer are shown as the file declares them (marked ``*``), and the last line says how
many problems ``irrun validate`` finds.  Like ``polygraphy inspect model``, the exit
code says whether the model could be inspected (0), not whether it is valid:
that is ``irrun validate``'s job.  Only a file that cannot be read as IR at all (no
XML, no ``<net>``, an IR version irrun does not read) is an error (exit 1).

:func:`inspect_model` builds the JSON document; the text and ``irrun graph``'s
picture (:mod:`irrun.tools.graph`) are both made from it, so they never disagree.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.binding import Node
from ..core.check import Checked, _weights_path, check_ir
from ..core.graph import LayerGraph
from ..core.reshape import describe
from ..errors import one_line
from ..ir.dims import Interval, Shape
from ..ir.element_types import ElementType
from ..ir.records import Layer, Port
from ..ir.registry import TensorInfo, opset_number
from ..ir.weights import Weights
from ..text import count
from .common import Parents, shapes

# Integer constants up to this many elements (axes, target shapes) are shown by value.
SHOWN_VALUES = 8


def register(sub: Any, parents: Parents) -> None:
    """Add the ``inspect`` subcommand to the parser ``cli`` builds."""
    parser = sub.add_parser(
        "inspect", parents=[parents.model],
        description="Show a model's IR version, opsets, inputs and outputs, layers (shapes and "
        "key attributes), weights and rt_info. A model with errors is shown as far as it "
        "can be read; exit 0 whenever it could be inspected (irrun validate checks it), "
        "1 when the file cannot be read as IR.",
        epilog="examples:\n"
        "  irrun inspect model.xml\n"
        "  irrun inspect model.xml --shape [1,3,224,224]\n"
        "  irrun inspect model.xml --wide                # names and attributes whole\n"
        "  irrun inspect model.xml --json",
    )  # fmt: skip
    parser.add_argument(
        "--wide", action="store_true",
        help="show long names and attributes whole (on a terminal they are shortened to "
        "fit its width, $COLUMNS or what the terminal says)",
    )  # fmt: skip
    parser.add_argument(
        "--shape", type=shapes, metavar="SHAPES",
        help="give the inputs new shapes first and show the shapes that follow, in "
        "OpenVINO's syntax: x[8,3,224,224],y[1,4], or [1,3,224,224] for one input",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print a JSON document instead")
    parser.set_defaults(handler=_handle)


def _handle(args: argparse.Namespace) -> int:
    report = inspect_model(args.model, args.weights, args.shape)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_report(report, None if args.wide else terminal_width()))
    return 0


def terminal_width() -> int | None:
    """The width the text is fitted to on a terminal; None (no limit) for a file or a
    pipe, where a whole name is what grep and diff need."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def read_checked(
    xml: str | Path, weights: str | Path | None = None, shapes: str | None = None
) -> tuple[Checked, Weights]:
    """Check ``xml`` as ``irrun validate`` does, raising only when there is no graph to show."""
    bin_file = Weights(_weights_path(Path(xml), weights))
    checked = check_ir(xml, bin_file, shapes)
    if checked.graph is None:
        # Nothing was read: the first problem (the file, its XML, its <net>) says why.
        raise checked.blocking[0].as_error()
    return checked, bin_file


def inspect_model(
    xml: str | Path, weights: str | Path | None = None, shapes: str | None = None
) -> dict[str, Any]:
    """The JSON document of ``irrun inspect``.

    >>> report = inspect_model("models/pooling_chain.xml")
    >>> report["ir_version"], report["opsets"]
    (11, {'opset1': 4, 'opset8': 2, 'opset14': 1})
    >>> [(o["name"], o["shape"], o["element_type"]) for o in report["outputs"]]
    [('pooled', [1, 3, 2, 2], 'f32'), ('indices', [1, 3, 2, 2], 'i32')]
    """
    checked, bin_file = read_checked(xml, weights, shapes)
    lg, nodes, infos = checked.graph, checked.nodes or {}, checked.infos or {}
    assert lg is not None
    doc = lg.doc
    # Declared dims describe the shapes the file was written for, not new ones.
    declared = not checked.shapes
    layers = [_layer(lg, nodes.get(lid), lg.layers[lid], infos, declared) for lid in lg.order]
    found = Counter((d.layer.id, d.level) for d in checked.findings if d.layer is not None)
    for entry in layers:
        entry["problems"] = {
            "errors": found[(entry["id"], "error")],
            "warnings": found[(entry["id"], "warning")],
        }
    errors = sum(d.level == "error" for d in checked.findings)
    opsets = Counter(lg.layers[lid].version for lid in lg.order)
    return {
        "file": str(xml),
        "weights_file": str(bin_file.path),
        "name": doc.name,
        "ir_version": doc.ir_version,
        "shapes": describe(lg, checked.shapes) if checked.shapes else None,
        "opsets": dict(sorted(opsets.items(), key=lambda kv: _opset_order(kv[0]))),
        "inputs": _inputs(lg, layers),
        "outputs": _outputs(lg, layers),
        "variables": _variables(layers),
        "layers": layers,
        "weights": _weights(layers, bin_file),
        "rt_info": doc.rt_info,
        "validation": {
            "errors": errors,
            "warnings": sum(d.level == "warning" for d in checked.findings),
        },
    }


def _opset_order(version: str) -> tuple[int, str]:
    # opset2 before opset10; anything OpenVINO would not read as an opset comes last.
    n = opset_number(version)
    return (n if n is not None else 1 << 30, version)


def _layer(
    lg: LayerGraph, node: Node | None, layer: Layer, infos: dict, declared: bool
) -> dict[str, Any]:
    ref = node.ref if node is not None else layer.ref()
    inputs = []
    for port in layer.inputs:
        src = lg.sources.get((layer.id, port.id))
        info = infos.get((src.layer, src.port)) if src is not None else None
        entry = _tensor(port, info, declared)
        entry["from"] = {"layer": src.layer, "port": src.port} if src is not None else None
        inputs.append(entry)
    outputs = []
    for port in layer.outputs:
        entry = _tensor(port, infos.get((layer.id, port.id)), declared)
        entry["names"] = list(port.names)
        outputs.append(entry)
    return {
        "id": layer.id,
        "name": layer.name,
        "type": layer.type,
        "version": ref.version,
        "opset": layer.version,
        "op": _op_label(layer, ref.version),
        "line": layer.line,
        "inputs": inputs,
        "outputs": outputs,
        "attributes": attributes(node, layer),
        "rt_info": layer.rt_info,
    }


def _op_label(layer: Layer, version: int | None) -> str:
    """``MaxPool-v8``; an op irrun cannot resolve is named by what the file says."""
    if version is not None:
        return f"{layer.type}-v{version}"
    return f"{layer.type} ({layer.version})" if layer.version else layer.type


def _tensor(port: Port, info: TensorInfo | None, declared: bool) -> dict[str, Any]:
    """A port's shape and element type: inferred, else as the file declares them (the
    shape only when the inputs have their declared shapes)."""
    if info is not None:
        et, shape, inferred = info.element_type, info.shape, True
    else:
        et, shape, inferred = port.precision, port.dims if declared else None, False
    return {
        "port": port.id,
        "shape": _shape_json(shape),
        "element_type": et.name if et is not None else None,
        "inferred": inferred,
    }


def _shape_json(shape: Shape | None) -> list[int | str] | None:
    """Dims as numbers, dynamic ones as OpenVINO writes them (``?``, ``1..10``); None: unknown."""
    if shape is None:
        return None
    return [d if isinstance(d, int) else str(d) for d in shape]


def attributes(node: Node | None, layer: Layer) -> dict[str, Any]:
    """A layer's attributes as irrun reads them, the ones that explain its shapes first.

    Parameters' and Consts' shape and element type are left out (their output shows
    them), and a small integer constant's value is shown.  A layer irrun could not bind
    shows its ``<data>`` as written.
    """
    if node is None or not node.ok:
        return dict(layer.data)
    assert node.op is not None
    values = vars(node.attrs)
    ordered = [n for n in node.op.shape_attrs if n in values]
    ordered += [n for n in values if n not in ordered]
    skip = {"value"}
    if node.op.type in ("Parameter", "Const"):
        skip |= {"shape", "element_type"}
    out = {name: _jsonable(values[name]) for name in ordered if name not in skip}
    value = values.get("value") if node.op.type == "Const" else None
    if isinstance(value, np.ndarray) and value.dtype.kind in "iub" and value.size <= SHOWN_VALUES:
        out["value"] = value.tolist()
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, ElementType):
        return value.name
    if isinstance(value, Interval):
        return str(value)
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _inputs(lg: LayerGraph, layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Parameters, named as :attr:`irrun.Model.inputs` names them."""
    out = []
    for entry in layers:
        if entry["type"] != "Parameter" or not entry["outputs"]:
            continue
        port = entry["outputs"][0]
        names = port["names"]
        out.append({
            "name": names[0] if names else entry["name"], "names": names,
            "shape": port["shape"], "element_type": port["element_type"],
            "inferred": port["inferred"], "layer": entry["id"],
        })  # fmt: skip
    return out


def _outputs(lg: LayerGraph, layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Results, each named by the first tensor name of the port feeding it."""
    by_id = {entry["id"]: entry for entry in layers}
    out = []
    for entry in layers:
        if entry["type"] != "Result" or not entry["inputs"]:
            continue
        src = entry["inputs"][0]["from"]
        producer = by_id.get(src["layer"]) if src is not None else None
        port = next((p for p in producer["outputs"] if p["port"] == src["port"]), None) \
            if producer is not None else None  # fmt: skip
        names = port["names"] if port is not None else []
        tensor = entry["inputs"][0]
        out.append({
            "name": names[0] if names else entry["name"], "names": names,
            "shape": tensor["shape"], "element_type": tensor["element_type"],
            "inferred": tensor["inferred"], "layer": entry["id"], "from": src,
        })  # fmt: skip
    return out


def _variables(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The variables of a stateful model: each id with the layers that read and write it,
    and its tensor as its (first) ReadValue gives it."""
    found: dict[str, dict[str, Any]] = {}
    for entry in layers:
        if entry["type"] not in ("ReadValue", "Assign"):
            continue
        var = entry["attributes"].get("variable_id")
        if var is None:
            continue
        item = found.setdefault(var, {"name": var, "read_by": [], "assigned_by": []})
        if entry["type"] == "ReadValue":
            item["read_by"].append(entry["id"])
            if entry["outputs"] and "shape" not in item:
                port = entry["outputs"][0]
                item.update(shape=port["shape"], element_type=port["element_type"],
                            inferred=port["inferred"])  # fmt: skip
        else:
            item["assigned_by"].append(entry["id"])
    return list(found.values())


def _weights(layers: list[dict[str, Any]], bin_file: Weights) -> dict[str, Any]:
    """Consts by element type: how many, their values, and the bytes they take in the .bin."""
    by_type: dict[str, dict[str, int]] = {}
    for entry in layers:
        if entry["type"] != "Const" or not entry["outputs"]:
            continue
        port = entry["outputs"][0]
        size = _as_int(entry["attributes"].get("size"))
        shape = port["shape"]
        elements = int(np.prod(shape)) if shape and all(isinstance(d, int) for d in shape) else 0
        if shape == []:
            elements = 1
        group = by_type.setdefault(port["element_type"] or "?", {
            "consts": 0, "elements": 0, "bytes": 0})  # fmt: skip
        group["consts"] += 1
        group["elements"] += elements
        group["bytes"] += size or 0
    ordered = dict(sorted(by_type.items(), key=lambda kv: (-kv[1]["bytes"], kv[0])))
    return {
        "consts": sum(g["consts"] for g in by_type.values()),
        "elements": sum(g["elements"] for g in by_type.values()),
        "bytes": sum(g["bytes"] for g in by_type.values()),
        "by_element_type": ordered,
        "bin_bytes": bin_file.size if bin_file.exists else None,
    }


def _as_int(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


# The text


def shape_text(tensor: dict[str, Any]) -> str:
    """``f32[1,3,16,16]``; ``*`` marks a shape as declared, where irrun could not infer it.

    >>> shape_text({"shape": [1, "?", 4], "element_type": "f32", "inferred": True})
    'f32[1,?,4]'
    >>> shape_text({"shape": None, "element_type": None, "inferred": False})
    '?[...]*'
    """
    shape = tensor["shape"]
    dims = "[...]" if shape is None else "[" + ",".join(str(d) for d in shape) + "]"
    return f"{tensor['element_type'] or '?'}{dims}{'' if tensor['inferred'] else '*'}"


def attributes_text(attrs: dict[str, Any]) -> list[str]:
    """``name=value`` for each attribute, lists as ``[1,1]`` and booleans as ``true``."""
    return [f"{name}={_value_text(value)}" for name, value in attrs.items()]


def _value_text(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_value_text(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def elide(text: str, width: int) -> str:
    """``text`` in ``width`` characters, its middle left out: both ends of a long name
    (``__module.encoder.layer.0/aten::linear/MatMul``) tell most.

    >>> elide("__module.encoder.layer.0/aten::linear/MatMul", 24)
    '__module.en...ear/MatMul'
    """
    if len(text) <= width:
        return text
    keep = max(width - 3, 2)
    return text[: (keep + 1) // 2] + "..." + text[len(text) - keep // 2 :]


# How a column is shortened to ``width``: each takes the column's cells, header first.
Shrink = Callable[[list[str], int], list[str]]


def _middle(cells: list[str], width: int) -> list[str]:
    return [elide(c, width) for c in cells]


def _end(cells: list[str], width: int) -> list[str]:
    return [c if len(c) <= width else c[: max(width - 3, 1)] + "..." for c in cells]


def _arrows(cells: list[str], width: int) -> list[str]:
    """``inputs -> outputs`` cells, the arrows aligned, each side's list of shapes cut
    after a whole shape; the side with the longer lists gets the room the other does
    not need."""
    pairs = [c.partition(" ->") for c in cells]  # a Result's cell ends at its arrow
    room = max(width // 2, width - 4 - max(len(p[2].strip()) for p in pairs))
    ins = [_shapes_in(p[0].strip(), room) for p in pairs]
    room = max(width - 4 - max(map(len, ins)), width // 2)
    outs = [_shapes_in(p[2].strip(), room) for p in pairs]
    pad = max(map(len, ins))
    return [f"{i.rjust(pad)} -> {o}".rstrip() for i, o in zip(ins, outs, strict=True)]


def _shapes_in(text: str, width: int) -> str:
    """The shapes of ``text`` (``f32[1,3], i64[2]``) that fit in ``width`` with ``, ...``
    for the rest; the first whole even if it does not fit (half a shape tells nothing)."""
    shapes = text.split(", ")
    kept = 1
    while kept < len(shapes) and len(", ".join([*shapes[: kept + 1], "..."])) <= width:
        kept += 1
    return text if kept == len(shapes) else ", ".join([*shapes[:kept], "..."])


def _fit(
    rows: list[list[str]], width: int, indent: str, steps: Sequence[tuple[int, int, Shrink]]
) -> list[list[str]]:
    """Shorten columns until the rows fit in ``width`` characters: each step shortens
    one column down to at least its given width, while the rows are too wide.  What
    the steps cannot fit overflows rather than be lost."""
    columns = [list(col) for col in zip(*rows, strict=True)]
    widths = [max(map(len, col)) for col in columns]
    excess = len(indent) + sum(widths) + 2 * (len(columns) - 1) - width
    for col, least, shrink in steps:
        target = max(least, widths[col] - excess)
        if excess <= 0 or target >= widths[col]:
            continue
        columns[col] = shrink(columns[col], target)
        now = max(map(len, columns[col]))
        excess -= widths[col] - now
        widths[col] = now
    return [list(row) for row in zip(*columns, strict=True)]


# On a terminal: names elided down to 20 characters, then attributes cut down to their
# header, then lists of shapes cut down to 40, then names down to 12.
NAMES = (0, 20, _middle)
LAYER_STEPS = ((1, 20, _middle), (4, 10, _end), (3, 40, _arrows), (1, 12, _middle))


def _table(
    rows: list[list[str]],
    indent: str = "  ",
    width: int | None = None,
    steps: Sequence[tuple[int, int, Shrink]] = (),
) -> list[str]:
    """Rows as aligned columns; with ``width``, shortened by ``steps`` to fit it."""
    # A name may hold a line break (&#10; in the XML): each row must stay one line.
    rows = [[one_line(cell) for cell in row] for row in rows]
    if width is not None:
        rows = _fit(rows, width, indent, steps)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]


def format_report(report: dict[str, Any], width: int | None = None) -> str:
    """The text of ``irrun inspect``, from :func:`inspect_model`'s document; with ``width``,
    its tables fit in so many characters (long names elided in the middle)."""
    lines = [one_line(
        f"{report['name']}: {report['file']} (IR v{report['ir_version']}), "
        f"weights {report['weights_file']}"
    )]  # fmt: skip
    if report["shapes"]:
        lines.append(f"shapes: {report['shapes']}")
    opsets = "opsets: " + (", ".join(
        f"{opset or '(none)'} ({count(n, 'layer')})" for opset, n in report["opsets"].items()
    ) or "none")  # fmt: skip
    lines += textwrap.wrap(opsets, width, subsequent_indent="  ") if width else [opsets]
    for title, specs in (("inputs", report["inputs"]), ("outputs", report["outputs"])):
        lines += ["", f"{title}: {len(specs)}"]
        if specs:
            rows = [["name", "tensor", "tensor names"]]
            rows += [[s["name"], shape_text(s), ", ".join(s["names"]) or "-"] for s in specs]
            lines += _table(rows, width=width, steps=(NAMES, (2, 12, _end)))
    if report["variables"]:  # a stateful model's
        lines += ["", f"variables: {len(report['variables'])}"]
        rows = [["name", "tensor", "read by", "assigned by"]]
        rows += [[v["name"], shape_text(v) if "shape" in v else "-",
                  ", ".join(v["read_by"]) or "-", ", ".join(v["assigned_by"]) or "-"]
                 for v in report["variables"]]  # fmt: skip
        lines += _table(rows, width=width, steps=(NAMES, (3, 11, _end)))
    lines += ["", f"layers: {len(report['layers'])}"]
    ins = [", ".join(shape_text(t) for t in e["inputs"]) for e in report["layers"]]
    pad = max((len(s) for s in ins), default=0)
    rows = [["id", "name", "op", f"{'inputs'.rjust(pad)} -> outputs", "attributes"]]
    for entry, shown_in in zip(report["layers"], ins, strict=True):
        outs = ", ".join(shape_text(t) for t in entry["outputs"])
        shapes = f"{shown_in.rjust(pad)} -> {outs}".rstrip()
        rows.append([entry["id"], entry["name"], entry["op"], shapes,
                     ", ".join(attributes_text(entry["attributes"]))])  # fmt: skip
    if report["layers"]:
        lines += _table(rows, width=width, steps=LAYER_STEPS)
    if any(not t["inferred"] for e in report["layers"] for t in (*e["inputs"], *e["outputs"])):
        how = "unknown after --shape" if report["shapes"] else "as the file declares it"
        lines.append(f"  * not inferred (irrun validate says why): {how}")
    lines += ["", *_weights_text(report)]
    lines += ["", "rt_info:" + ("" if report["rt_info"] else " none")]
    lines += _nested(report["rt_info"], "  ")
    lines += ["", _validation_text(report)]
    return "\n".join(lines)


def _weights_text(report: dict[str, Any]) -> list[str]:
    w = report["weights"]
    size = w["bin_bytes"]
    bin_text = f"{report['weights_file']}: " + (
        count(size, "byte") if size is not None else "missing"
    )
    lines = [
        f"weights: {count(w['consts'], 'Const')}, {count(w['elements'], 'value')}, "
        f"{count(w['bytes'], 'byte')} ({bin_text})"
    ]
    if w["by_element_type"]:
        rows = [
            [et, count(g["consts"], "Const"), count(g["elements"], "value"),
             count(g["bytes"], "byte")]
            for et, g in w["by_element_type"].items()
        ]  # fmt: skip
        lines += _table(rows)
    return lines


def _nested(info: dict[str, Any], indent: str) -> list[str]:
    lines = []
    for key, value in info.items():
        if isinstance(value, dict):
            lines.append(one_line(f"{indent}{key}:"))
            lines += _nested(value, indent + "  ")
        else:
            lines.append(one_line(f"{indent}{key}: {value}"))
    return lines


def _validation_text(report: dict[str, Any]) -> str:
    v = report["validation"]
    command = f"irrun validate {shlex.quote(report['file'])}"
    if report["shapes"]:
        command += f" --shape {shlex.quote(report['shapes'])}"
    if v["errors"]:
        counts = f"{count(v['errors'], 'error')}, {count(v['warnings'], 'warning')}"
        return f"validate: {counts} ({command} lists them)"
    if v["warnings"]:
        them = "it" if v["warnings"] == 1 else "them"
        return f"validate: valid, {count(v['warnings'], 'warning')} ({command} lists {them})"
    return "validate: valid"
