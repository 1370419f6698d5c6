"""Binding layers to ops: resolve each layer's op, parse and check its attributes.

Every problem is collected as a :class:`Diagnostic` so that ``validate`` can
show all of them; ``load`` refuses a model with any error among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from .attributes import AttrError, parse_attributes
from .errors import Diagnostic, LayerRef
from .graph import LayerGraph
from .reader import Layer
from .registry import LookupFailure, OpDef, resolve
from .weights import Weights


@dataclass
class Node:
    layer: Layer
    op: OpDef | None  # None when the layer's op could not be resolved or configured
    attrs: SimpleNamespace | None
    ref: LayerRef

    @property
    def ok(self) -> bool:
        return self.op is not None and self.attrs is not None


def bind(lg: LayerGraph, weights: Weights) -> tuple[dict[str, Node], list[Diagnostic]]:
    nodes: dict[str, Node] = {}
    problems: list[Diagnostic] = []
    for lid in lg.order:
        layer = lg.layers[lid]
        node, found = _bind_layer(layer, lg, weights)
        nodes[lid] = node
        problems.extend(found)
    return nodes, problems


def _bind_layer(layer: Layer, lg: LayerGraph, weights: Weights) -> tuple[Node, list[Diagnostic]]:
    loc = lg.doc.location
    try:
        op = resolve(layer.type, layer.version)
    except LookupFailure as exc:
        code = "unknown-opset" if "opset" in str(exc).split("(")[0] else "unknown-op"
        return Node(layer, None, None, layer.ref()), [
            Diagnostic("error", code, str(exc), loc(layer.line), layer.ref())
        ]
    ref = layer.ref(op.version)
    data_loc = loc(layer.data_line or layer.line)
    problems: list[Diagnostic] = []

    n_in = len(layer.inputs)
    if not op.inputs[0] <= n_in <= op.inputs[1]:
        want = op.inputs[0] if op.inputs[0] == op.inputs[1] else f"{op.inputs[0]} to {op.inputs[1]}"
        problems.append(
            Diagnostic("error", "input-count", f"has {n_in} input ports, expected {want}",
                       loc(layer.line), ref)
        )  # fmt: skip

    try:
        parsed = parse_attributes(op.attrs, layer.data)
    except AttrError as exc:
        code = "missing-attribute" if "required" in str(exc) else "bad-attribute"
        problems.append(Diagnostic("error", code, str(exc), data_loc, ref))
        return Node(layer, op, None, ref), problems
    problems.extend(
        Diagnostic("warning", "lenient-attribute", w, data_loc, ref) for w in parsed.warnings
    )
    attrs = SimpleNamespace(**parsed.values)
    if op.check is not None:
        try:
            op.check(attrs)
        except ValueError as exc:
            problems.append(Diagnostic("error", "bad-attribute", str(exc), data_loc, ref))
            return Node(layer, op, None, ref), problems
    if op.type == "Const":
        try:
            attrs.value = weights.read(attrs.offset, attrs.size, attrs.element_type, attrs.shape)
        except ValueError as exc:
            problems.append(Diagnostic("error", "bad-weights", str(exc), data_loc, ref))
            return Node(layer, op, None, ref), problems
    return Node(layer, op, attrs, ref), problems
