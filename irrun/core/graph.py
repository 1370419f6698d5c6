"""The layer graph: layers keyed by id, edges carrying port ids.

Building it checks the wiring and collects every problem as a :class:`Diagnostic`:
duplicate layer and port ids, edges that name a missing layer or port, input ports
fed twice or never, cycles (each listed with its layers), as warnings layers from
which no Result can be reached (OpenVINO reads a model backwards from its Results and
drops them), and as info output ports nothing reads.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import networkx as nx

from ..errors import Diagnostic, Level
from ..ir.records import Edge, IRDocument, Layer, Port

# OpenVINO collects a model's layers by walking back from these.
SINK_TYPES = ("result", "assign")


class Source(NamedTuple):
    """Where an input port's tensor comes from (a tuple: one is made per edge)."""

    layer: str
    port: int


@dataclass
class LayerGraph:
    doc: IRDocument
    layers: dict[str, Layer]
    # Topological, ties broken by XML order; layers on a cycle come last, in XML order.
    order: list[str]
    sources: dict[tuple[str, int], Source]  # (layer id, input port id) -> producer
    problems: list[Diagnostic]
    cyclic: set[str] = field(default_factory=set)  # layers on a cycle
    # (producer, consumer, from port, to port) of each edge in the graph, in file order.
    edges: list[tuple[str, str, int, int]] = field(default_factory=list)
    # The warnings about layers and outputs no Result needs, when put off (see build_graph).
    unneeded: Callable[[], list[Diagnostic]] | None = None

    @property
    def graph(self) -> nx.MultiDiGraph:
        """The wiring as a networkx MultiDiGraph, built on each call: a node per layer id
        (in file order), an edge per ``<edge>`` keyed ``(from_port, to_port)`` with both
        as attributes.  :mod:`irrun.core.graph_view` adds what a script reads to it."""
        return _nx_graph(self.layers, self.edges)

    def consumers(self, layer_id: str) -> list[tuple[str, int, int]]:
        """(consumer id, from port, to port) for each edge leaving ``layer_id``."""
        return [(dst, fp, tp) for src, dst, fp, tp in self.edges if src == layer_id]


def _nx_graph(layers, edges) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(layers)
    for src, dst, fp, tp in edges:
        # An input port is fed once, so the port pair names one edge between two layers.
        graph.add_edge(src, dst, key=(fp, tp), from_port=fp, to_port=tp)
    return graph


def build_graph(doc: IRDocument, unneeded: bool = True) -> LayerGraph:
    """Build the graph and collect every wiring problem; never raises for a bad file.

    ``unneeded=False`` puts off the warnings about layers and outputs that no Result
    needs: they stop nothing, and a model converted with unused outputs (every
    MaxPool-8's indices) has hundreds of them.  ``LayerGraph.unneeded`` then gives them.
    """
    builder = _Builder(doc)
    if not doc.layers:
        # OpenVINO reads it as a model with no inputs and no outputs; irrun would run it
        # and write an empty .npz.  A file with nothing in it is a mistake.
        builder.report("no-layers", "the model has no layers: there is nothing to run", 0)
    builder.add_layers()
    builder.add_edges()
    builder.check_inputs_fed()
    cyclic = builder.check_cycles()
    later = None
    if unneeded:
        builder.problems += builder.check_reachability()
    else:
        later = builder.check_reachability
    return LayerGraph(doc, builder.layers, builder.order(cyclic), builder.sources,
                      builder.problems, cyclic, builder.edges, later)  # fmt: skip


class _Builder:
    def __init__(self, doc: IRDocument) -> None:
        self.doc = doc
        self.layers: dict[str, Layer] = {}
        self.edges: list[tuple[str, str, int, int]] = []
        self.successors: dict[str, list[str]] = {}  # one entry per edge
        self.predecessors: dict[str, list[str]] = {}
        self.output_ids: dict[str, set[int]] = {}  # the port ids of each layer
        self.input_ids: dict[str, set[int]] = {}
        self.sources: dict[tuple[str, int], Source] = {}
        self.problems: list[Diagnostic] = []
        # Ends of edges left out of the graph (unreadable, or naming a missing layer or
        # port): their ports are not reported as unfed or unused, since the edge is.
        self.fed_by_broken_edge: set[tuple[str | None, int | None]] = set()
        self.read_by_broken_edge: set[tuple[str | None, int | None]] = set()
        self.used_outputs: set[tuple[str, int]] = set()
        # Set by any problem that leaves edges out of the graph: which layers reach a
        # Result is then unknown, and warnings about it would only echo that problem.
        self.wiring_broken = False
        self._position: dict[str, int] | None = None
        self._order: list[str] = []

    def report(self, code: str, message: str, line: int, layer: Layer | None = None,
              port: int | None = None) -> None:  # fmt: skip
        """An error in the wiring."""
        if code != "cycle":
            self.wiring_broken = True
        ref = layer.ref() if layer is not None else None
        self.problems.append(Diagnostic("error", code, message, self.doc.location(line), ref, port))

    def warning(self, code: str, message: str, line: int, layer: Layer | None = None,
                port: int | None = None, level: Level = "warning") -> Diagnostic:  # fmt: skip
        ref = layer.ref() if layer is not None else None
        return Diagnostic(level, code, message, self.doc.location(line), ref, port)

    def add_layers(self) -> None:
        layers, successors, predecessors = self.layers, self.successors, self.predecessors
        output_ids, input_ids = self.output_ids, self.input_ids
        unreadable = False
        for layer in self.doc.layers:
            lid = layer.id
            first = layers.get(lid)
            if first is not None:
                self.report("duplicate-layer-id",
                           f"layer id {lid} is used again (first at line {first.line})",
                           layer.line, layer)  # fmt: skip
                continue
            layers[lid] = layer
            successors[lid] = []
            predecessors[lid] = []
            outputs, inputs = layer.outputs, layer.inputs
            out_ids = output_ids[lid] = {p.id for p in outputs}
            in_ids = input_ids[lid] = {p.id for p in inputs}
            unreadable |= layer.unreadable_ports
            if len(in_ids) != len(inputs):  # some id is repeated
                self._check_port_ids(layer, "input", inputs)
            if len(out_ids) != len(outputs):
                self._check_port_ids(layer, "output", outputs)
        self.wiring_broken |= unreadable

    def _check_port_ids(self, layer: Layer, kind: str, ports: list[Port]) -> None:
        # Input and output ids are separate namespaces in OpenVINO; within one, an edge
        # naming a repeated id could mean either port.
        seen: dict[int, Port] = {}
        for port in ports:
            if port.id in seen:
                self.report("duplicate-port-id",
                           f"{kind} port id {port.id} is used again (first at line "
                           f"{seen[port.id].line})", port.line, layer, port.id)  # fmt: skip
            else:
                seen[port.id] = port

    def add_edges(self) -> None:
        layers, output_ids, input_ids = self.layers, self.output_ids, self.input_ids
        sources, successors, predecessors = self.sources, self.successors, self.predecessors
        use, add_edge = self.used_outputs.add, self.edges.append
        # Source's own __new__ is a Python function; tuple's makes the same tuple for less.
        new, Src = tuple.__new__, Source
        for edge in self.doc.edges:
            # The common case first, with as few lookups as can be: both layers and both
            # ports exist and the input port is not fed yet.
            fl, fp, tl, tp = edge.from_layer, edge.from_port, edge.to_layer, edge.to_port
            key = (tl, tp)
            if (fl in layers and tl in layers and fp in output_ids[fl]  # type: ignore[operator]
                    and tp in input_ids[tl] and key not in sources):  # type: ignore[index] # fmt: skip
                use((fl, fp))
                sources[key] = new(Src, (fl, fp))  # type: ignore[index]
                add_edge((fl, tl, fp, tp))
                successors[fl].append(tl)  # type: ignore[index]
                predecessors[tl].append(fl)  # type: ignore[index]
                continue
            self._add_odd_edge(edge)

    def _add_odd_edge(self, edge: Edge) -> None:
        """An edge that is incomplete, names what is missing, or feeds a port fed already."""
        if not edge.complete:
            self.wiring_broken = True
            self.fed_by_broken_edge.add((edge.to_layer, edge.to_port))
            self.read_by_broken_edge.add((edge.from_layer, edge.from_port))
            return
        assert edge.from_layer is not None and edge.to_layer is not None
        assert edge.from_port is not None and edge.to_port is not None
        src, dst = self.layers.get(edge.from_layer), self.layers.get(edge.to_layer)
        missing = [lid for lid, lay in ((edge.from_layer, src), (edge.to_layer, dst))
                   if lay is None]  # fmt: skip
        if missing:
            self.report("bad-edge",
                       f"edge from layer {edge.from_layer} port {edge.from_port} to layer "
                       f"{edge.to_layer} port {edge.to_port}: there is no layer with id "
                       f"{missing[0]}", edge.line)  # fmt: skip
            # The other end exists: its port is not also reported as unfed or unused.
            self.fed_by_broken_edge.add((edge.to_layer, edge.to_port))
            self.read_by_broken_edge.add((edge.from_layer, edge.from_port))
            return
        assert src is not None and dst is not None
        has_output = edge.from_port in self.output_ids[src.id]
        has_input = edge.to_port in self.input_ids[dst.id]
        ports_missing = not (has_output and has_input)
        if ports_missing and (src.unreadable_ports or dst.unreadable_ports):
            # The edge may name the port the reader could not read (and has reported).
            self.fed_by_broken_edge.add((dst.id, edge.to_port))
            self.read_by_broken_edge.add((src.id, edge.from_port))
            return
        if not has_output:
            self.report("bad-edge",
                       f"edge to layer {dst.id} port {edge.to_port} leaves output port "
                       f"{edge.from_port}, but the layer has {_ports(src.outputs, 'output')}",
                       edge.line, src)  # fmt: skip
            self.fed_by_broken_edge.add((dst.id, edge.to_port))
            return
        if not has_input:
            self.report("bad-edge",
                       f"edge from layer {src.id} port {edge.from_port} enters input port "
                       f"{edge.to_port}, but the layer has {_ports(dst.inputs, 'input')}",
                       edge.line, dst)  # fmt: skip
            self.used_outputs.add((src.id, edge.from_port))
            return
        key = (dst.id, edge.to_port)
        self.used_outputs.add((src.id, edge.from_port))
        if key in self.sources:
            self.report("port-fed-twice", f"input port {edge.to_port} is fed by two edges",
                       edge.line, dst, edge.to_port)  # fmt: skip
            return
        self.sources[key] = Source(src.id, edge.from_port)
        self.edges.append((src.id, dst.id, edge.from_port, edge.to_port))
        self.successors[src.id].append(dst.id)
        self.predecessors[dst.id].append(src.id)

    def check_inputs_fed(self) -> None:
        for layer in self.layers.values():
            for port in layer.inputs:
                key = (layer.id, port.id)
                if key not in self.sources and key not in self.fed_by_broken_edge:
                    self.report("port-not-fed", f"input port {port.id} has no edge", port.line,
                               layer, port.id)  # fmt: skip

    def check_cycles(self) -> set[str]:
        """Report each strongly connected part once, with a cycle through it; return its layers."""
        self._order = self._sorted()
        if len(self._order) == len(self.layers):
            return set()  # every layer sorted: no cycle
        position = self.position()
        graph = _nx_graph(self.layers, self.edges)
        cyclic: set[str] = set()
        parts = [
            part for part in nx.strongly_connected_components(graph)
            if len(part) > 1 or graph.has_edge(next(iter(part)), next(iter(part)))
        ]  # fmt: skip
        for part in sorted(parts, key=lambda p: min(position[i] for i in p)):
            cyclic |= part
            first = min(part, key=position.__getitem__)
            ids = [u for u, *_ in nx.find_cycle(graph.subgraph(part), source=first)]
            start = ids.index(min(ids, key=position.__getitem__))
            ids = ids[start:] + ids[:start]
            path = " -> ".join(f"{i} '{self.layers[i].name}'" for i in [*ids, ids[0]])
            others = sorted(part - set(ids), key=position.__getitem__)
            also = (f" (layers {', '.join(f'{i} {self.layers[i].name!r}' for i in others)} "
                    "are on cycles through them too)") if others else ""  # fmt: skip
            head = self.layers[ids[0]]
            self.report("cycle", f"the graph has a cycle: layers {path}{also}", head.line, head)
        return cyclic

    def _sorted(self, leave_out: set[str] | frozenset[str] = frozenset()) -> list[str]:
        """Layers in topological order, ties broken by file order (the smallest ready
        layer first); layers on or after a cycle, and those in ``leave_out``, are left out.
        """
        position, predecessors, successors = self.position(), self.predecessors, self.successors
        waiting = {lid: 0 for lid in self.layers if lid not in leave_out}
        for lid in waiting:
            n = 0
            for p in predecessors[lid]:
                if p in waiting:
                    n += 1
            waiting[lid] = n  # a value replaced, not a key added: iterating goes on
        ready = [position[lid] for lid, n in waiting.items() if n == 0]
        heapq.heapify(ready)
        pop, push = heapq.heappop, heapq.heappush
        ids = list(self.layers)
        order: list[str] = []
        add = order.append
        while ready:
            lid = ids[pop(ready)]
            add(lid)
            for c in successors[lid]:
                n = waiting.get(c)
                if n is not None:
                    waiting[c] = n - 1
                    if n == 1:
                        push(ready, position[c])
        return order

    def check_reachability(self) -> list[Diagnostic]:
        """Warnings about layers that reach no Result and outputs nothing reads."""
        found: list[Diagnostic] = []
        if self.wiring_broken:
            return found
        sinks = [lid for lid, layer in self.layers.items() if layer.type.lower() in SINK_TYPES]
        if not sinks:
            if self.layers:
                first = next(iter(self.layers.values()))
                found.append(self.warning("no-result", "the model has no Result layer: "
                                          "OpenVINO keeps none of its layers", first.line))
            return found
        live = set(sinks)
        stack = list(sinks)
        while stack:
            for producer in self.predecessors[stack.pop()]:
                if producer not in live:
                    live.add(producer)
                    stack.append(producer)
        for lid, layer in self.layers.items():
            if lid not in live:
                what = ("reaches no Result; OpenVINO keeps it as a model input all the same"
                        if layer.type.lower() == "parameter"
                        else "reaches no Result: OpenVINO drops it")  # fmt: skip
                found.append(self.warning("dead-layer", what, layer.line, layer))
                continue
            if layer.type.lower() in SINK_TYPES:  # an Assign's output is its variable's
                continue
            for port in layer.outputs:
                key = (lid, port.id)
                if key not in self.used_outputs and key not in self.read_by_broken_edge:
                    # Info, not a warning: the layer is live, so another of its outputs is
                    # read, and converters write such ports all the time (MaxPool's
                    # indices, a Split piece a slice dropped).  A layer none of whose
                    # outputs is read is a dead-layer warning above.
                    message = f"output port {port.id} is not used"
                    found.append(self.warning("unused-output", message, port.line, layer,
                                              port.id, "info"))  # fmt: skip
        return found

    def position(self) -> dict[str, int]:
        if self._position is None:
            self._position = {lid: i for i, lid in enumerate(self.layers)}
        return self._position

    def order(self, cyclic: set[str]) -> list[str]:
        if not cyclic:
            return self._order
        position = self.position()
        return self._sorted(cyclic) + sorted(cyclic, key=position.__getitem__)


def _ports(ports: list, kind: str) -> str:
    """``output ports 1, 2`` / ``no input ports``, for edge messages."""
    if not ports:
        return f"no {kind} ports"
    ids = ", ".join(str(p.id) for p in ports)
    return f"{kind} port{'s' * (len(ports) != 1)} {ids}"
