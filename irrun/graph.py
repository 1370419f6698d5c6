"""The layer graph: a networkx DAG keyed by layer id, edges carrying port ids."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from .errors import Diagnostic, IrrunError, Location
from .reader import IRDocument, Layer


@dataclass(frozen=True)
class Source:
    """Where an input port's tensor comes from."""

    layer: str
    port: int


@dataclass
class LayerGraph:
    doc: IRDocument
    graph: nx.MultiDiGraph
    layers: dict[str, Layer]
    order: list[str]  # topological, ties broken by XML order
    sources: dict[tuple[str, int], Source]  # (layer id, input port id) -> producer
    problems: list[Diagnostic]

    def consumers(self, layer_id: str) -> list[tuple[str, int, int]]:
        """(consumer id, from port, to port) for each edge leaving ``layer_id``."""
        return [
            (dst, data["from_port"], data["to_port"])
            for _, dst, data in self.graph.out_edges(layer_id, data=True)
        ]


def build_graph(doc: IRDocument) -> LayerGraph:
    """Build the DAG; wiring problems are collected, a cycle raises.

    Problems that leave the graph usable (a dangling edge, a port fed twice or
    never) are returned as diagnostics so that ``validate`` can report them all.
    """
    loc = doc.location
    graph = nx.MultiDiGraph()
    layers: dict[str, Layer] = {}
    problems: list[Diagnostic] = []
    for layer in doc.layers:
        if layer.id in layers:
            first = layers[layer.id]
            problems.append(
                Diagnostic(
                    "error", "duplicate-layer-id",
                    f"layer id {layer.id} is used again (first at line {first.line})",
                    loc(layer.line), layer.ref(),
                )
            )  # fmt: skip
            continue
        layers[layer.id] = layer
        graph.add_node(layer.id)

    sources: dict[tuple[str, int], Source] = {}
    for edge in doc.edges:
        where = loc(edge.line)
        src, dst = layers.get(edge.from_layer), layers.get(edge.to_layer)
        ends = ((edge.from_layer, src), (edge.to_layer, dst))
        missing = [lid for lid, lay in ends if lay is None]
        if missing:
            problems.append(
                Diagnostic("error", "bad-edge",
                           f"edge from layer {edge.from_layer} port {edge.from_port} to layer "
                           f"{edge.to_layer} port {edge.to_port}: there is no layer with id "
                           f"{missing[0]}", where)
            )  # fmt: skip
            continue
        assert src is not None and dst is not None
        if not any(p.id == edge.from_port for p in src.outputs):
            problems.append(
                Diagnostic("error", "bad-edge",
                           f"edge to layer {dst.id} port {edge.to_port} leaves output port "
                           f"{edge.from_port}, but the layer has {_ports(src.outputs, 'output')}",
                           where, src.ref())
            )  # fmt: skip
            continue
        if not any(p.id == edge.to_port for p in dst.inputs):
            problems.append(
                Diagnostic("error", "bad-edge",
                           f"edge from layer {src.id} port {edge.from_port} enters input port "
                           f"{edge.to_port}, but the layer has {_ports(dst.inputs, 'input')}",
                           where, dst.ref())
            )  # fmt: skip
            continue
        key = (dst.id, edge.to_port)
        if key in sources:
            problems.append(
                Diagnostic("error", "port-fed-twice",
                           f"input port {edge.to_port} is fed by two edges", where, dst.ref(),
                           edge.to_port)
            )  # fmt: skip
            continue
        sources[key] = Source(src.id, edge.from_port)
        graph.add_edge(src.id, dst.id, from_port=edge.from_port, to_port=edge.to_port)

    for layer in layers.values():
        for port in layer.inputs:
            if (layer.id, port.id) not in sources:
                problems.append(
                    Diagnostic("error", "port-not-fed", f"input port {port.id} has no edge",
                               loc(port.line), layer.ref(), port.id)
                )  # fmt: skip

    position = {lid: i for i, lid in enumerate(layers)}
    try:
        order = list(nx.lexicographical_topological_sort(graph, key=position.__getitem__))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(graph)
        ids = [u for u, *_ in cycle]
        path = " -> ".join(f"{i} '{layers[i].name}'" for i in [*ids, ids[0]])
        first = layers[ids[0]]
        raise IrrunError(
            f"the graph has a cycle: layers {path}", Location(str(doc.path), first.line)
        ) from None
    return LayerGraph(doc, graph, layers, order, sources, problems)


def _ports(ports: list, kind: str) -> str:
    """``output ports 1, 2`` / ``no input ports``, for edge messages."""
    if not ports:
        return f"no {kind} ports"
    ids = ", ".join(str(p.id) for p in ports)
    return f"{kind} port{'s' * (len(ports) != 1)} {ids}"
