"""Cleaning a document up: outputs dropped, dead layers removed, duplicate constants
merged, layer ids renumbered (``irrun cleanup``, and the last step of ``irrun fold``).

What each step means for IR (Polygraphy's ``surgeon sanitize`` and OpenVINO's own
cleanup passes do the same for their graphs):

* **Unused outputs** are the model's outputs the caller names in ``drop_outputs`` (by
  tensor name or Result layer name): their Results go, and with them every layer only
  they needed.  Output *ports* that nothing reads stay: a port belongs to its op's
  signature (MaxPool-8's indices, a Split's pieces, an LSTM's cell state), and a layer
  without it is another op, which OpenVINO refuses to read.
* **Dead layers** are those from which no Result and no Assign (OpenVINO's sinks) can
  be reached.  Parameters stay even when nothing reads them: they are the model's
  inputs, and OpenVINO keeps them too (dropping one would change how it is called).
* **Duplicate constants**: Consts with the same element type, shape and bytes (the
  bytes compared, not their offsets) become one, the first in topological order; the
  others' readers read it, and its output port takes the others' tensor names, so that
  every name still finds its tensor.  A Const read by a Result is left alone: merging
  it would give two outputs one tensor.
* **Renumbering**: the layers are written in topological order with ids 0..n-1 (the
  ready layer with the lowest old id first, the Results last), edges following.  The
  Parameters keep their order among themselves, and the Results theirs: OpenVINO orders
  a model's inputs and outputs by their layers' ids.  Bodies of If, Loop and
  TensorIterator keep their own ids (their port maps name them) and are not cleaned.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.documents import copy_document
from ..core.graph import build_graph
from ..core.model import Model
from ..errors import IrrunError, LayerRef, UsageError
from ..ir.records import Edge, IRDocument, Layer
from ..ir.weights import Weights
from ..ir.writer import constant_bytes, is_constant
from ..text import count

_SINKS = ("result", "assign")


@dataclass
class Cleanup:
    """What :func:`clean` did."""

    layers_before: int = 0
    layers_after: int = 0
    dropped: list[str] = field(default_factory=list)  # the outputs dropped, by name
    dead: list[LayerRef] = field(default_factory=list)  # layers removed: nothing needed them
    merged: list[tuple[LayerRef, LayerRef]] = field(default_factory=list)  # (removed, kept)
    merged_bytes: int = 0  # the bytes of the constants merged away
    renumbered: bool = False  # whether any layer's id changed

    def describe(self) -> list[str]:
        """One line for each thing done; none when nothing was."""
        lines = []
        if self.dropped:
            lines.append(f"dropped {count(len(self.dropped), 'output')}: "
                         f"{', '.join(self.dropped)}")  # fmt: skip
        if self.dead:
            lines.append(f"removed {count(len(self.dead), 'dead layer')}: "
                         f"{_refs(self.dead)}")  # fmt: skip
        if self.merged:
            lines.append(f"merged {count(len(self.merged), 'duplicate constant')} into the "
                         f"constants they repeat ({self.merged_bytes} bytes)")  # fmt: skip
        if self.renumbered:
            lines.append(f"renumbered the layers 0..{self.layers_after - 1} in topological order")
        return lines


def _refs(refs: list[LayerRef], most: int = 3) -> str:
    shown = ", ".join(str(r) for r in refs[:most])
    return shown + (f" and {len(refs) - most} more" if len(refs) > most else "")


def cleanup(source: Model | IRDocument, weights: Weights | None = None,
            drop_outputs: Iterable[str] = ()) -> IRDocument:  # fmt: skip
    """A cleaned-up copy of ``source`` (a loaded model, or a document and the
    ``weights`` its Consts read): see the module's docstring; :func:`clean` also says
    what it did."""
    return clean(source, weights, drop_outputs)[0]


def clean(source: Model | IRDocument, weights: Weights | None = None,
          drop_outputs: Iterable[str] = ()) -> tuple[IRDocument, Cleanup]:  # fmt: skip
    """:func:`cleanup`'s document, and a :class:`Cleanup` of what was done.

    Raises :class:`UsageError` for an output to drop that the model does not have, and
    :class:`IrrunError` when dropping would leave it without any."""
    if isinstance(source, Model):
        doc, weights = source.document(), source.weights
    else:
        doc = copy_document(source)
    done = Cleanup(layers_before=len(doc.layers))
    drop = list(drop_outputs)
    if drop:
        _drop_outputs(doc, drop, done)
    _remove_dead(doc, done)
    _merge_constants(doc, weights, done)
    _renumber(doc, done)
    done.layers_after = len(doc.layers)
    return doc, done


def _sources(doc: IRDocument) -> dict[tuple[str, int], tuple[str, int]]:
    """(consumer, input port) -> (producer, output port), for the complete edges."""
    return {(e.to_layer, e.to_port): (e.from_layer, e.from_port)  # type: ignore[misc]
            for e in doc.edges if e.complete}  # fmt: skip


def _output_names(doc: IRDocument) -> dict[str, list[Layer]]:
    """Each name an output is known by (its Result's name, its tensor's names) -> Results."""
    layers = {layer.id: layer for layer in doc.layers}
    sources = _sources(doc)
    names: dict[str, list[Layer]] = {}
    for layer in doc.layers:
        if layer.type.lower() != "result":
            continue
        known = {layer.name}
        src = sources.get((layer.id, layer.inputs[0].id)) if layer.inputs else None
        if src is not None and src[0] in layers:
            port = layers[src[0]].output_port(src[1])
            known.update(port.names if port is not None else ())
        for name in known:
            names.setdefault(name, []).append(layer)
    return names


def _drop_outputs(doc: IRDocument, drop: list[str], done: Cleanup) -> None:
    names = _output_names(doc)
    missing = [n for n in drop if n not in names]
    if missing:
        listed = ", ".join(sorted({r.name for rs in names.values() for r in rs}))
        raise UsageError(f"--drop-outputs: the model has no output {', '.join(missing)} "
                         f"(its Results: {listed})")  # fmt: skip
    gone = {r.id for n in drop for r in names[n]}
    if not any(layer.type.lower() in _SINKS and layer.id not in gone for layer in doc.layers):
        raise IrrunError(f"dropping {', '.join(drop)} leaves the model without an output",
                         doc.location())  # fmt: skip
    done.dropped += drop
    _remove(doc, gone)


def _remove(doc: IRDocument, ids: set[str]) -> None:
    doc.layers = [layer for layer in doc.layers if layer.id not in ids]
    doc.edges = [e for e in doc.edges if e.from_layer not in ids and e.to_layer not in ids]


def _remove_dead(doc: IRDocument, done: Cleanup) -> None:
    """Remove the layers no sink needs (Parameters stay)."""
    producers: dict[str, set[str]] = {}
    for e in doc.edges:
        if e.complete:
            producers.setdefault(e.to_layer, set()).add(e.from_layer)  # type: ignore[arg-type]
    live = set()
    stack = [layer.id for layer in doc.layers if layer.type.lower() in _SINKS]
    while stack:
        lid = stack.pop()
        if lid not in live:
            live.add(lid)
            stack.extend(producers.get(lid, ()))
    dead = {layer.id for layer in doc.layers
            if layer.id not in live and layer.type.lower() != "parameter"}  # fmt: skip
    if dead:
        done.dead += [layer.ref() for layer in doc.layers if layer.id in dead]
        _remove(doc, dead)


def _merge_constants(doc: IRDocument, weights: Weights | None, done: Cleanup) -> None:
    lg = build_graph(doc, unneeded=False)
    layers = lg.layers
    read_by_result = {src for src, dst, _, _ in lg.edges if layers[dst].type.lower() == "result"}
    first: dict[tuple, Layer] = {}
    moved: dict[str, str] = {}  # a duplicate's id -> the id of the Const it repeats
    for lid in lg.order:
        layer = layers[lid]
        if not is_constant(layer) or lid in read_by_result or len(layer.outputs) != 1:
            continue
        data = constant_bytes(layer, weights)
        key = (layer.data.get("element_type"), layer.data.get("shape"),
               len(data), hashlib.sha256(data).digest())  # fmt: skip
        kept = first.setdefault(key, layer)
        if kept is layer:
            continue
        moved[lid] = kept.id
        port = kept.outputs[0]
        port.names = port.names + tuple(n for n in layer.outputs[0].names if n not in port.names)
        done.merged.append((layer.ref(), kept.ref()))
        done.merged_bytes += len(data)
    if moved:
        edges = []
        for e in doc.edges:
            if e.from_layer in moved:
                e = Edge(moved[e.from_layer], layers[moved[e.from_layer]].outputs[0].id,
                         e.to_layer, e.to_port, e.line)  # fmt: skip
            edges.append(e)
        doc.edges = edges
        _remove(doc, set(moved))  # read by none now


def _renumber(doc: IRDocument, done: Cleanup) -> None:
    """Ids 0..n-1 in a topological order that keeps the Parameters, and the Results (put
    last), in the order of their old ids: the order OpenVINO gives the model's inputs
    and outputs."""
    order = _topological(doc)
    if order is None:  # a cycle, or ids not numbers: leave the file as it is
        return
    new = {layer.id: str(i) for i, layer in enumerate(order)}
    done.renumbered = any(lid != n for lid, n in new.items()) or any(
        a is not b for a, b in zip(order, doc.layers, strict=True)
    )
    for layer in order:
        layer.id = new[layer.id]
        layer._ref = None
    doc.layers = order
    edges = [Edge(new[e.from_layer], e.from_port, new[e.to_layer], e.to_port, e.line)  # type: ignore[index]
             for e in doc.edges if e.complete]  # fmt: skip
    doc.edges = sorted(edges, key=lambda e: (int(e.to_layer), e.to_port))  # type: ignore[arg-type]


def _topological(doc: IRDocument) -> list[Layer] | None:
    """Kahn's order, the ready layer with the lowest old id first; Results last."""
    if not all(layer.id.isdigit() for layer in doc.layers):
        return None
    layers = {layer.id: layer for layer in doc.layers}
    if len(layers) != len(doc.layers):
        return None
    waiting = {lid: 0 for lid in layers}
    readers: dict[str, list[str]] = {}
    for e in doc.edges:
        if e.complete and e.from_layer in layers and e.to_layer in layers:
            waiting[e.to_layer] += 1  # type: ignore[index]
            readers.setdefault(e.from_layer, []).append(e.to_layer)  # type: ignore[arg-type]
    results = sorted((lid for lid, layer in layers.items() if layer.type.lower() == "result"),
                     key=int)  # fmt: skip
    ready = [(int(lid), lid) for lid, n in waiting.items() if n == 0 and lid not in results]
    heapq.heapify(ready)
    order = []
    while ready:
        _, lid = heapq.heappop(ready)
        order.append(layers[lid])
        for reader in readers.get(lid, ()):
            waiting[reader] -= 1
            if waiting[reader] == 0 and layers[reader].type.lower() != "result":
                heapq.heappush(ready, (int(reader), reader))
    order += [layers[lid] for lid in results]
    return order if len(order) == len(layers) else None
