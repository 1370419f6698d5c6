"""What irrun's pictures of a graph share: which layers get a box of their own, the colours
of error and time, and a layered layout for drawing a graph without Graphviz.

``irrun graph`` writes DOT for Graphviz to lay out; ``irrun compare --report`` draws its
SVG itself, with :func:`layered_layout`.  Both fold constants into the layers that use
them (:func:`folded_constants`) and colour layers on the same scales.

A layer here is a dict as ``irrun inspect`` and ``irrun compare --json`` describe it:
``{"id", "type", "inputs": [{"port", "from": {"layer", "port"} or None}], ...}``.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

# Fill colours by layer type: inputs green, outputs orange, constants grey.
LAYER_FILLS = {"Parameter": "#d9ead3", "Result": "#fce5cd", "Const": "#eeeeee"}

# Light to dark (ColorBrewer's YlOrRd), the cheapest or closest first.
SCALE = ("#ffffb2", "#fecc5c", "#fd8d3c", "#f03b20", "#bd0026")
# A layer's largest absolute error: 0, then below 1e-6, 1e-5, 1e-4, 1e-3, and from 1e-3.
ERROR_BINS = (1e-6, 1e-5, 1e-4, 1e-3)
EQUAL = "#b6d7a8"  # an error of exactly 0
UNCOLORED = "#ffffff"


def scale_bin(value: float, bins: Sequence[float]) -> int:
    """The index in :data:`SCALE` of ``value`` on a scale of ``bins`` (ascending edges).

    >>> scale_bin(0.0, ERROR_BINS), scale_bin(1e-5, ERROR_BINS), scale_bin(float("inf"), ERROR_BINS)
    (0, 2, 4)
    """
    return sum(value >= b for b in bins)


def scale_legend(edges: list[str]) -> list[tuple[str, str]]:
    """``< 1%``, ``1% to 5%``, ... ``>= 25%`` with their colours.

    >>> scale_legend(["1", "2", "3", "4"])[:2]
    [('< 1', '#ffffb2'), ('1 to 2', '#fecc5c')]
    """
    labels = [f"< {edges[0]}"]
    labels += [f"{lo} to {hi}" for lo, hi in itertools.pairwise(edges)]
    labels.append(f">= {edges[-1]}")
    return list(zip(labels, SCALE, strict=True))


def error_fill(error: float) -> str:
    """The colour of a layer whose largest absolute error is ``error`` (inf: no values).

    >>> error_fill(0.0), error_fill(3e-6), error_fill(0.5)
    ('#b6d7a8', '#fecc5c', '#bd0026')
    """
    return EQUAL if error == 0 else SCALE[scale_bin(error, ERROR_BINS)]


def error_legend() -> list[tuple[str, str]]:
    """The error scale's labels and colours, exactly 0 first, then not compared."""
    edges = [f"{b:.0e}".replace("e-0", "e-") for b in ERROR_BINS]
    return [("0", EQUAL), *scale_legend(edges), ("not compared", UNCOLORED)]


def dark(colour: str) -> bool:
    """Whether text on ``colour`` is better white: the darkest colours of the scale."""
    return colour in SCALE[3:]


def folded_constants(layers: Iterable[dict[str, Any]]) -> set[str]:
    """The ids of the layers drawn as lines in their consumers' boxes: each Const, and
    each Convert of one, that feeds layers other than Results.

    >>> from irrun.tools.inspect import inspect_model
    >>> sorted(folded_constants(inspect_model("models/demo.xml")["layers"]), key=int)
    ['1', '2', '6', '7', '11', '13', '15', '16', '18', '19']
    """
    layers = list(layers)
    by_id = {layer["id"]: layer for layer in layers}
    consumers: dict[str, list[dict[str, Any]]] = {}
    for layer in layers:
        for tensor in layer["inputs"]:
            if tensor["from"] is not None:
                consumers.setdefault(tensor["from"]["layer"], []).append(layer)

    def constant(layer: dict[str, Any]) -> bool:
        if layer["type"] == "Const":
            return True
        if layer["type"] != "Convert" or len(layer["inputs"]) != 1:
            return False
        src = layer["inputs"][0]["from"]
        return src is not None and constant(by_id[src["layer"]])

    folded: dict[str, bool] = {}

    def fold(layer: dict[str, Any]) -> bool:
        lid = layer["id"]
        if lid not in folded:
            users = consumers.get(lid, [])
            folded[lid] = (constant(layer) and bool(users) and all(
                u["type"] != "Result" and (not constant(u) or fold(u)) for u in users))  # fmt: skip
        return folded[lid]

    return {layer["id"] for layer in layers if fold(layer)}


@dataclass
class Layout:
    """A DAG in rows, top to bottom (see :func:`layered_layout`).

    ``rows`` hold the nodes and, for each edge that spans rows, a waypoint in every row it
    crosses: ``(edge index, row)``, so that the edge is drawn beside the nodes it passes
    rather than through them.  ``routes[i]`` lists edge ``i``'s waypoints, top to bottom
    (none for an edge between adjacent rows; an edge left out has no entry).
    """

    rows: list[list[Hashable]]
    routes: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


# Waypoints at most, so that a model with an input every layer reads (an attention mask
# feeding each of a thousand layers) is laid out in a moment: the longest edges go
# without, drawn straight across, once the shorter ones have taken this many.
MAX_WAYPOINTS = 20_000


def layered_layout(
    order: Sequence[str],
    edges: Sequence[tuple[str, str]],
    sweeps: int = 4,
    max_waypoints: int = MAX_WAYPOINTS,
) -> Layout:
    """The nodes of a DAG in rows, top to bottom: each node one row below the lowest of
    its predecessors (the longest path from an input), and within a row in an order that
    keeps edges short and uncrossed.

    ``order`` is a topological order of the nodes; an edge whose source does not come
    before its target there (or is not a node) is left out.  An edge spanning several rows
    gets a waypoint in each row between, the shortest edges first, up to ``max_waypoints``
    in all (the others have none).  Within a row the nodes start in ``order`` and
    are then sorted by the mean position of their neighbours in the row above, then
    below, ``sweeps`` times (the barycentre heuristic of Sugiyama's method): enough to
    untangle the branches of a network without a crossing-minimisation solver.

    >>> layered_layout("abcde", [("a", "c"), ("b", "d"), ("a", "e"), ("d", "e")]).rows
    [['a', 'b'], ['c', (2, 1), 'd'], ['e']]
    >>> layered_layout("abcd", [("a", "d"), ("b", "c")]).rows
    [['a', 'b'], ['d', 'c']]
    >>> layered_layout("abcd", [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "c")],
    ...                max_waypoints=1).routes
    {0: [], 1: [], 2: [], 3: [], 4: [(4, 1)]}
    """
    position = {node: i for i, node in enumerate(order)}
    kept = [
        (i, src, dst) for i, (src, dst) in enumerate(edges)
        if src in position and dst in position and position[src] < position[dst]
    ]  # fmt: skip
    rank: dict[Hashable, int] = {}
    preds: dict[Hashable, list[Hashable]] = {node: [] for node in order}
    for _, src, dst in kept:
        preds[dst].append(src)
    for node in order:
        rank[node] = 1 + max((rank[p] for p in preds[node]), default=-1)
    rows: list[list[Hashable]] = [[] for _ in range(1 + max(rank.values(), default=-1))]
    for node in order:
        rows[rank[node]].append(node)
    # Each edge as a chain of hops between adjacent rows, through its waypoints.
    layout = Layout(rows)
    preds = {node: [] for node in order}
    succs: dict[Hashable, list[Hashable]] = {node: [] for node in order}
    budget = max_waypoints
    for i, src, dst in sorted(kept, key=lambda e: rank[e[2]] - rank[e[1]]):
        span = rank[dst] - rank[src] - 1
        points = [(i, r) for r in range(rank[src] + 1, rank[dst])] if span <= budget else []
        budget -= len(points)
        layout.routes[i] = points
        chain: list[Hashable] = [src, *points, dst]
        for point in points:
            rows[point[1]].append(point)
            preds[point], succs[point] = [], []
        for a, b in itertools.pairwise(chain):
            preds[b].append(a)
            succs[a].append(b)
    layout.routes = dict(sorted(layout.routes.items()))

    def sort_by(row: list[Hashable], neighbours: dict[Hashable, list[Hashable]],
                at: dict[Hashable, int]) -> None:  # fmt: skip
        at_row = {node: i for i, node in enumerate(row)}

        def key(node: Hashable) -> float:
            near = [at[n] for n in neighbours[node] if n in at]
            return sum(near) / len(near) if near else at_row[node]

        row.sort(key=key)  # stable: ties keep their order

    for _ in range(sweeps):
        for above, row in itertools.pairwise(rows):
            sort_by(row, preds, {node: i for i, node in enumerate(above)})
        for row, below in reversed(list(itertools.pairwise(rows))):
            sort_by(row, succs, {node: i for i, node in enumerate(below)})
    return layout
