"""``irrun compare --report``: a comparison as one self-contained HTML page.

The page is drawn from the JSON report (:meth:`Report.as_dict
<irrun.tools.compare_results.Report.as_dict>`, what ``--json`` prints), which it also
embeds, so the picture and the numbers cannot disagree.  It shows

1. the error of every compared tensor along the model's order: its largest absolute and
   relative errors on a log scale, a point per tensor, green when it passed and red when
   it failed, with the tensor's tolerance marked beside it and its layer in a tooltip;
2. the worst tensors (failures first, then by largest absolute error) in a table;
3. the layer graph, each layer filled by its largest absolute error on ``irrun graph
   --color-by error``'s scale and outlined red when it failed, laid out here
   (:func:`~irrun.tools.drawing.layered_layout`) rather than by Graphviz.

Everything is inline (SVG and CSS, no script but the JSON): the file can be mailed or
attached to a bug and opened offline.  Every text from the model (layer and tensor names,
types) is escaped.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import Any

from .common import write_atomically
from .drawing import (
    LAYER_FILLS,
    UNCOLORED,
    dark,
    error_fill,
    error_legend,
    folded_constants,
    layered_layout,
)

# How many tensors the table of the worst shows (the JSON ranks them all).
TOP = 20
PASS_COLOUR = "#2ca02c"
FAIL_COLOUR = "#d62728"

# Characters XML 1.0 cannot hold, which a name could still carry from a hand-made file.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.passed { color: #2ca02c; font-weight: bold; } .failed { color: #d62728; font-weight: bold; }
.hint { background: #fff8e1; border-left: 4px solid #fecc5c; padding: .4em .8em; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.fail td { background: #fde0dd; }
.scroll { overflow: auto; max-height: 80vh; border: 1px solid #eee; }
.swatch { display: inline-block; width: 1em; height: 1em; vertical-align: middle;
  border: 1px solid #999; margin: 0 .3em 0 .8em; }
"""


def render_html(data: dict[str, Any]) -> str:
    """The HTML page of a comparison's JSON report (see the module's docstring)."""
    tensors = data["tensors"]
    summary = data["summary"]
    failed, total = summary["failed"], summary["compared"]
    verdict = (
        f'<span class="failed">FAILED</span>: {failed} of {total} tensors failed'
        if failed
        else f'<span class="passed">PASSED</span>: {total} of {total} tensors passed'
    )
    if summary["stopped_early"]:
        verdict += " (--fail-fast: stopped at the first failure)"
    title = f"irrun compare: {Path(data['model']).name}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8"/>',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
        f"<p>{verdict}. irrun against {_e(data['reference'])}; {_e(_tolerance_text(data))}.</p>",
        f"<p>Model: <code>{_e(data['model'])}</code>{_e(_inputs_text(data))}</p>",
    ]
    first = data.get("first_diverging_layer")
    if first is not None:
        out.append(
            f"<p>First diverging layer: {_e(_layer_text(first))}, tensor "
            f"<code>{_e(first['tensor'])}</code> (line {_e(first['line'])}).</p>"
        )
    if not data["mark_all"]:
        out.append(
            '<p class="hint">Only the model\'s outputs were compared: run <code>irrun compare '
            "--mark-all</code> for the error of every layer along the graph.</p>"
        )
    notes = ([data["tolerance_note"]] if data.get("tolerance_note") else []) + data["notes"]
    if data["not_in_reference"]:
        n = len(data["not_in_reference"])
        notes.append(f"{n} of irrun's tensors not in the reference, not compared")
    if notes:
        out.append("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")

    out.append("<h2>Error along the graph</h2>")
    if tensors:
        out.append(
            "<p>Each tensor compared, in the model's order "
            f'(<span class="swatch" style="background:{PASS_COLOUR}"></span>passed'
            f'<span class="swatch" style="background:{FAIL_COLOUR}"></span>failed; '
            "grey dashes: the tensor's tolerance). Hover a point for its layer.</p>"
        )
        out.append(_plot(tensors, "max_abs", "atol", "largest absolute error", "abs"))
        out.append(_plot(tensors, "max_rel", "rtol", "largest relative error", "rel"))
    else:
        out.append("<p>No tensor was compared.</p>")

    out.append("<h2>Worst layers</h2>")
    worst = data.get("worst_first", list(range(len(tensors))))
    shown = min(TOP, len(worst))
    out.append(f"<p>The {shown} worst of {len(tensors)} tensors: failures first, then by "
               "largest absolute error.</p>")  # fmt: skip
    out.append(_table(tensors, worst[:TOP], "worst"))

    out.append("<h2>The graph, coloured by error</h2>")
    if data.get("layers"):
        out.append(_graph_legend())
        out.append('<div class="scroll">' + _graph(data["layers"], tensors) + "</div>")
    else:
        out.append("<p>The report holds no layer graph (it was not made by compare()).</p>")

    out.append("<details><summary>Every tensor compared</summary>")
    out.append(_table(tensors, list(range(len(tensors))), "all"))
    out.append("</details>")
    out.append(f'<script type="application/json" id="irrun-compare-data">{_json(data)}</script>')
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def write_html(data: dict[str, Any], path: Path) -> None:
    """Write :func:`render_html` of ``data`` to ``path``, whole or not at all."""
    page = render_html(data)
    write_atomically(path, lambda f: f.write(page))


# ----------------------------------------------------------------------------- text


def _e(text: Any) -> str:
    """``text`` safe in HTML and XML, as content or as a quoted attribute."""
    return html.escape(_NOT_XML.sub("\ufffd", str(text)), quote=True)


def _json(data: dict[str, Any]) -> str:
    """``data`` as JSON that cannot end the script element nor be read as markup: ``<``,
    ``>`` and ``&`` written as JSON escapes, which a JSON reader turns back."""
    text = json.dumps(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _float(value: Any) -> float | None:
    """A number of the JSON report: a float, its name of a non-finite one, or None."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _fmt(value: Any) -> str:
    v = _float(value)
    if v is None:
        return "–"
    if math.isnan(v) or math.isinf(v):
        return str(value)
    return "0" if v == 0 else f"{v:.3g}"


def _op(layer: dict[str, Any]) -> str:
    version = layer.get("version")
    return f"{layer['type']}-v{version}" if version is not None else str(layer["type"])


def _layer_text(layer: dict[str, Any]) -> str:
    return f"{layer['id']} '{layer['name']}' ({_op(layer)})"


def _tolerance_text(data: dict[str, Any]) -> str:
    def tol(value: Any) -> str:
        if isinstance(value, dict):
            rest = [f"{n}:{v}" for n, v in value.items() if n != "*"]
            return " ".join([str(value.get("*", "default")), *rest])
        return str(value)

    scale = " x largest magnitude" if data.get("atol_scaled") else ""
    text = f"atol {tol(data['atol'])}{scale}, rtol {tol(data['rtol'])}"
    if data.get("check_error_stat") not in (None, "elemwise"):
        text += f", check {tol(data['check_error_stat'])} error"
    return text


def _inputs_text(data: dict[str, Any]) -> str:
    inputs = data.get("inputs")
    if not inputs:
        return ""
    shapes = ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in inputs["tensors"])
    source = {"given": "given inputs", "reference": "the reference's inputs"}.get(
        inputs["source"], f"random inputs (seed {inputs.get('seed')})"
    )
    return f"; on {source}: {shapes}"


def _tensor_title(i: int, t: dict[str, Any]) -> str:
    layer = t.get("layer")
    lines = [f"#{i} {t['name']}: {'PASSED' if t['passed'] else 'FAILED'}"]
    if layer is not None:
        lines.append(f"layer {_layer_text(layer)}")
    if t.get("shape") is not None:
        lines.append(f"{t['shape']} {t['dtype']}")
    if t.get("problem"):
        lines.append(t["problem"])
    lines.append(f"max abs {_fmt(t['max_abs'])}, max rel {_fmt(t['max_rel'])}, "
                 f"mean abs {_fmt(t['mean_abs'])}")  # fmt: skip
    lines.append(f"atol {_fmt(t['atol'])}, rtol {_fmt(t['rtol'])}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- the plot


def _plot(tensors: list[dict[str, Any]], key: str, tol_key: str, label: str, kind: str) -> str:
    """A log-scale scatter of ``key`` over the tensors, in their order: a band at the foot
    for errors of exactly 0, one at the top for tensors with no values to compare (or an
    infinite error), each tensor's tolerance as a grey dash."""
    n = len(tensors)
    width, height = 960, 250
    left, right, top, bottom = 64, 16, 22, 38
    plot_w, plot_h = width - left - right, height - top - bottom
    values = [_float(t[key]) for t in tensors]
    tols = [_float(t[tol_key]) for t in tensors]
    positive = [v for v in values + tols if v is not None and 0 < v < math.inf]
    lo = math.floor(math.log10(min(positive))) if positive else -6
    hi = math.ceil(math.log10(max(positive))) if positive else 0
    hi = max(hi, lo + 1)
    y_top_band, y_hi = top + 6, top + 22
    y_lo, y_zero = top + plot_h - 22, top + plot_h - 6

    def y_of(v: float | None) -> float:
        if v is None or math.isnan(v) or math.isinf(v):
            return y_top_band
        if v <= 0:
            return y_zero
        return y_lo - (math.log10(v) - lo) / (hi - lo) * (y_lo - y_hi)

    def x_of(i: int) -> float:
        return left + (i + 0.5) * plot_w / n

    out = [
        f'<svg class="plot {kind}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" role="img">',
        f"<title>{_e(label)} of each tensor, in the model's order</title>",
        f'<text x="{left}" y="14" font-weight="bold">{_e(label)} (log scale)</text>',
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        'stroke="#999"/>',
    ]
    step = max(1, math.ceil((hi - lo) / 8))
    for d in range(lo, hi + 1, step):
        y = y_lo - (d - lo) / (hi - lo) * (y_lo - y_hi)
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   'stroke="#eee"/>')  # fmt: skip
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{'1' if d == 0 else f'1e{d}'}</text>")  # fmt: skip
    out.append(f'<text x="{left - 6}" y="{y_zero + 4}" text-anchor="end">0</text>')
    out.append(f'<text x="{left - 6}" y="{y_top_band + 4}" text-anchor="end">inf</text>')
    tick = max(2.0, min(12.0, plot_w / n * 0.8))
    for i, tol in enumerate(tols):
        if tol is not None and tol > 0:
            x, y = x_of(i), y_of(tol)
            out.append(f'<line class="tol" x1="{x - tick / 2:.1f}" x2="{x + tick / 2:.1f}" '
                       f'y1="{y:.1f}" y2="{y:.1f}" stroke="#888" stroke-width="2"/>')  # fmt: skip
    trace = " ".join(f"{x_of(i):.1f},{y_of(v):.1f}" for i, v in enumerate(values))
    out.append(f'<polyline class="trace" points="{trace}" fill="none" stroke="#bbb" '
               'stroke-width="1"/>')  # fmt: skip
    radius = max(1.5, min(4.0, plot_w / n / 2.5))
    for i, (t, v) in enumerate(zip(tensors, values, strict=True)):
        status = "pass" if t["passed"] else "fail"
        colour = PASS_COLOUR if t["passed"] else FAIL_COLOUR
        out.append(
            f'<circle class="point {status}" data-tensor="{_e(t["name"])}" '
            f'data-value="{_e(t[key])}" cx="{x_of(i):.1f}" cy="{y_of(v):.1f}" '
            f'r="{radius:.1f}" fill="{colour}"><title>{_e(_tensor_title(i, t))}</title></circle>'
        )
    every = max(1, math.ceil(n / 20))
    for i in range(0, n, every):
        out.append(f'<text x="{x_of(i):.1f}" y="{top + plot_h + 14}" text-anchor="middle">'
                   f"{i}</text>")  # fmt: skip
    out.append(f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle">'
               "tensor index, in the model's order</text>")  # fmt: skip
    out.append("</svg>")
    return "\n".join(out)


# ----------------------------------------------------------------------------- the table


_COLUMNS = ("index", "layer", "name", "op", "tensor", "shape", "max abs", "max rel", "mean abs",
            "mean rel", "result")  # fmt: skip


def _table(tensors: list[dict[str, Any]], rows: list[int], kind: str) -> str:
    """A row per tensor of ``rows`` (positions in ``tensors``); each number's exact value
    is its cell's ``data-value``."""
    out = [f'<table class="{kind}">', "<thead><tr>"
           + "".join(f"<th>{c}</th>" for c in _COLUMNS) + "</tr></thead>", "<tbody>"]  # fmt: skip
    for i in rows:
        t = tensors[i]
        layer = t.get("layer") or {}
        cells = [
            f"<td>{i}</td>",
            f"<td>{_e(layer.get('id', ''))}</td>",
            f"<td>{_e(layer.get('name', ''))}</td>",
            f"<td>{_e(_op(layer)) if layer else ''}</td>",
            f"<td>{_e(t['name'])}</td>",
            f"<td>{_e(t['shape'])} {_e(t['dtype'] or '')}</td>",
        ]
        for key in ("max_abs", "max_rel", "mean_abs", "mean_rel"):
            cells.append(f'<td class="num" data-key="{key}" data-value="{_e(t[key])}">'
                         f"{_fmt(t[key])}</td>")  # fmt: skip
        result = "PASSED" if t["passed"] else "FAILED"
        if t.get("problem"):
            result += f": {t['problem']}"
        cells.append(f"<td>{_e(result)}</td>")
        status = "pass" if t["passed"] else "fail"
        out.append(f'<tr class="{status}" data-tensor="{_e(t["name"])}">' + "".join(cells)
                   + "</tr>")  # fmt: skip
    out += ["</tbody>", "</table>"]
    return "\n".join(out)


# ----------------------------------------------------------------------------- the graph


_NODE_W, _NODE_H, _LANE_W, _GAP_X, _GAP_Y, _MARGIN = 190, 50, 6, 16, 40, 12


def _graph_legend() -> str:
    swatches = "".join(
        f'<span class="swatch" style="background:{colour}"></span>{_e(label)}'
        for label, colour in error_legend()
    )
    return (
        f"<p>Each layer filled by the largest absolute error of its tensors:{swatches}; "
        f'<span class="swatch" style="border: 3px solid {FAIL_COLOUR}"></span>failed. '
        "Constants are drawn inside the layers that use them, as irrun graph does.</p>"
    )


def _graph(layers: list[dict[str, Any]], tensors: list[dict[str, Any]]) -> str:
    """The layer graph as SVG: a box per layer (constants folded into their users), top to
    bottom in the model's order; an edge that spans rows passes beside the boxes between."""
    hidden = folded_constants(layers)
    shown = [layer for layer in layers if layer["id"] not in hidden]
    by_id = {layer["id"]: layer for layer in shown}
    edges = [
        (tensor["from"]["layer"], layer["id"])
        for layer in shown for tensor in layer["inputs"]
        if tensor["from"] is not None and tensor["from"]["layer"] in by_id
    ]  # fmt: skip
    layout = layered_layout([layer["id"] for layer in shown], edges)

    def span(node: Any) -> float:
        return _NODE_W if node in by_id else _LANE_W

    def row_width(row: list[Any]) -> float:
        return sum(span(node) for node in row) + _GAP_X * max(0, len(row) - 1)

    rows = layout.rows
    width = 2 * _MARGIN + max((row_width(row) for row in rows), default=_NODE_W)
    height = 2 * _MARGIN + len(rows) * _NODE_H + max(0, len(rows) - 1) * _GAP_Y
    centre: dict[Any, float] = {}  # x of each box's or waypoint's middle
    top_of: list[float] = []
    for r, row in enumerate(rows):
        x = (width - row_width(row)) / 2
        top_of.append(_MARGIN + r * (_NODE_H + _GAP_Y))
        for node in row:
            centre[node] = x + span(node) / 2
            x += span(node) + _GAP_X
    out = [
        f'<svg class="graph" width="{width:.0f}" height="{height}" '
        f'viewBox="0 0 {width:.0f} {height}" font-family="sans-serif" font-size="10" '
        'role="img">',
        "<title>the model's layers, coloured by error</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#777"/></marker>'
        "</defs>",
    ]
    row_of = {node: r for r, row in enumerate(rows) for node in row}
    for i, (src, dst) in enumerate(edges):
        if i not in layout.routes:
            continue  # an edge against the order: none in a valid model
        # Down from the source's bottom, through each waypoint's row, into the target's top.
        x, y = centre[src], top_of[row_of[src]] + _NODE_H
        d = f"M{x:.1f},{y:.1f}"
        for point in [*layout.routes[i], dst]:
            x2, y2 = centre[point], top_of[row_of[point]]
            mid = (y + y2) / 2
            d += f" C{x:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"
            x, y = x2, y2
            if point != dst:
                y += _NODE_H
                d += f" L{x:.1f},{y:.1f}"
        out.append(f'<path class="edge" d="{d}" fill="none" stroke="#777" '
                   'marker-end="url(#arrow)"/>')  # fmt: skip
    for layer in shown:
        corner = (centre[layer["id"]] - _NODE_W / 2, top_of[row_of[layer["id"]]])
        out.append(_node(layer, corner, tensors))
    out.append("</svg>")
    return "\n".join(out)


def _node(layer: dict[str, Any], corner: tuple[float, float], tensors: list[dict[str, Any]]) -> str:
    x, y = corner
    passed = layer.get("passed")
    max_abs = _float(layer.get("max_abs"))
    if passed is None:
        status, fill, error = "none", LAYER_FILLS.get(layer["type"], UNCOLORED), ""
    else:
        status = "pass" if passed else "fail"
        fill = error_fill(math.inf if max_abs is None or math.isnan(max_abs) else max_abs)
        error = f"max abs {_fmt(layer.get('max_abs'))}" + ("" if passed else " FAILED")
    stroke, stroke_w = (FAIL_COLOUR, 3) if passed is False else ("#666", 1)
    ink = "#ffffff" if dark(fill) else "#222222"
    title = [f"layer {_layer_text(layer)}, line {layer.get('line')}"]
    for i in layer.get("tensors", []):
        t = tensors[i]
        title.append(f"{t['name']}: {'PASSED' if t['passed'] else 'FAILED'}, max abs "
                     f"{_fmt(t['max_abs'])}, max rel {_fmt(t['max_rel'])}")  # fmt: skip
    if passed is None:
        title.append("not compared")
    cx = x + _NODE_W / 2
    texts = [_short(layer["name"], 30), _op(layer), error]
    lines = "".join(
        f'<text x="{cx:.1f}" y="{y + 15 + 14 * k:.1f}" text-anchor="middle" fill="{ink}">'
        f"{_e(text)}</text>"
        for k, text in enumerate(texts) if text
    )  # fmt: skip
    return (
        f'<g class="node {status}" data-layer="{_e(layer["id"])}">'
        f"<title>{_e(chr(10).join(title))}</title>"
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{_NODE_W}" height="{_NODE_H}" rx="6" '
        f'fill="{fill}" stroke="{stroke}" stroke-width="{stroke_w}"/>{lines}</g>'
    )


def _short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, its end kept (where converted names differ)."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


__all__ = ["FAIL_COLOUR", "PASS_COLOUR", "TOP", "render_html", "write_html"]
