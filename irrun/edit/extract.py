"""Extracting a subgraph: the layers between some tensors (which become Parameters) and
others (which become outputs), as a document the writer saves.

A tensor is named by any of its tensor names, by the name irrun shows it under (see
:func:`irrun.core.names.tensor_name`), by its layer's name (that layer's first output)
or by ``LAYER:PORT``.  Only the layers the outputs need are kept: walking back from the
outputs stops at the cut tensors, and reaches constants and the original Parameters
the outputs still need, which are kept as they were.

Each cut tensor becomes a Parameter with the shape and element type irrun inferred for
it and its tensor names (the name irrun shows it under when it has none), each output
gets a Result and keeps its tensor names, so the extracted model's inputs and outputs
answer to the names they had in the full model.

Layers are kept whole: a sub-graph op (If, Loop, TensorIterator) with its bodies, a
ReadValue with its initialiser.  An Assign is kept when everything it needs is in the
subgraph already; otherwise the extracted model reads its variables' initial values
on every run (what the full model computes on its first).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..core.documents import with_inferred_shapes
from ..core.graph import LayerGraph
from ..core.model import Model
from ..errors import UsageError
from ..ir.records import Edge, IRDocument, Layer
from ..ir.registry import TensorInfo
from .layers import next_id, parameter, result

Tensor = tuple[str, int]  # (layer id, output port id)


@dataclass
class Extracted:
    """What :func:`extract_tensors` made: the document, and what it kept."""

    doc: IRDocument
    layers: list[str]  # ids of the source's layers kept (Parameters and constants too)
    inputs: list[str]  # the extracted model's inputs, by name, new and original
    outputs: list[str]  # its outputs, by name

    def compute_layers(self, model: Model) -> list[str]:
        """The kept layers that compute something: neither Parameter nor constant."""
        consts = constant_layers(model)
        return [lid for lid in self.layers
                if lid not in consts and model._graph.layers[lid].type != "Parameter"]  # fmt: skip


def extract(model: Model, inputs: Sequence[str], outputs: Sequence[str]) -> IRDocument:
    """The subgraph of ``model`` that computes ``outputs`` from ``inputs`` (tensor or
    layer names, see the module's docstring) and from the original Parameters and
    constants the outputs need.

    Raises :class:`~irrun.errors.UsageError` for a name that is no tensor of the model
    (with the names close to it), for an input that no output needs, and for a tensor
    given as both an input and an output.

    >>> from irrun import load
    >>> m = load("models/pooling_chain.xml")
    >>> doc = extract(m, ["stem_pool:1"], ["avg_pool"])
    >>> [(layer.type, layer.name) for layer in doc.layers]
    [('Parameter', 'stem_pool:1'), ('AvgPool', 'avg_pool'), ('Result', 'avg_pool/sink_port_1')]
    """
    names = TensorIndex(model)
    cuts = [names.find(n, "input") for n in inputs]
    outs = [names.find(n, "output") for n in outputs]
    labels = dict(zip(cuts + outs, [*inputs, *outputs], strict=True))
    return extract_tensors(model, cuts, outs, labels).doc


class TensorIndex:
    """Every name a tensor of ``model``'s top-level graph answers to."""

    def __init__(self, model: Model) -> None:
        lg = model._graph
        self.path = model.path
        self.by_name: dict[str, Tensor] = {}
        shown = model.tensor_names
        for lid in lg.order:  # tensor names first: a layer may be named as another's tensor
            for port in lg.layers[lid].outputs:
                for name in port.names:
                    self.by_name.setdefault(name, (lid, port.id))
        for key, name in shown.items():
            self.by_name.setdefault(name, key)
        for lid in lg.order:
            layer = lg.layers[lid]
            if layer.type == "Result" and layer.inputs:
                src = lg.sources.get((lid, layer.inputs[0].id))
                if src is not None:
                    self.by_name.setdefault(layer.name, (src.layer, src.port))
            elif layer.outputs:
                self.by_name.setdefault(layer.name, (lid, layer.outputs[0].id))
            for port in layer.outputs:
                self.by_name.setdefault(f"{layer.name}:{port.id}", (lid, port.id))

    def find(self, name: str, what: str) -> Tensor:
        found = self.by_name.get(name)
        if found is not None:
            return found
        near = difflib.get_close_matches(name, list(self.by_name), 3)
        hint = f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
        raise UsageError(
            f"{what} '{name}': no tensor or layer of that name in {self.path.name}{hint}"
        )


def constant_layers(model: Model) -> set[str]:
    """Ids of the layers whose values need no input: Consts and the layers computed from
    them alone (what irrun folds at load, shapes aside)."""
    lg = model._graph
    found: set[str] = set()
    for lid in lg.order:
        layer = lg.layers[lid]
        if layer.type == "Const":
            found.add(lid)
            continue
        if layer.type in ("Parameter", "ReadValue", "Assign", "Result") or not layer.inputs:
            continue
        if all(
            (src := lg.sources.get((lid, p.id))) is not None and src.layer in found
            for p in layer.inputs
        ):
            found.add(lid)
    return found


def walk_back(lg: LayerGraph, outputs: Iterable[Tensor],
              inside: Callable[[Tensor], bool]) -> tuple[set[str], list[Tensor]]:  # fmt: skip
    """The layers met walking back from ``outputs`` through the tensors ``inside`` says
    are inside, and the tensors read across the border (those it says are not), in the
    order met."""
    met: set[str] = set()
    crossing: dict[Tensor, None] = {}
    stack = [lid for lid, _ in outputs]
    while stack:
        lid = stack.pop()
        if lid in met:
            continue
        met.add(lid)
        for port in lg.layers[lid].inputs:
            src = lg.sources.get((lid, port.id))
            if src is None:
                continue
            if inside((src.layer, src.port)):
                stack.append(src.layer)
            else:
                crossing[(src.layer, src.port)] = None
    return met, list(crossing)


def label(model: Model, tensor: Tensor) -> str:
    """A tensor by its layer's name: ``NAME``, or ``NAME:PORT`` for a layer with several
    outputs (the names :class:`TensorIndex` finds it by)."""
    layer = model._graph.layers[tensor[0]]
    return layer.name if len(layer.outputs) == 1 else f"{layer.name}:{tensor[1]}"


def extract_tensors(model: Model, cuts: Iterable[Tensor], outputs: Iterable[Tensor],
                    labels: dict[Tensor, str] | None = None,
                    source: IRDocument | None = None) -> Extracted:  # fmt: skip
    """:func:`extract` by (layer id, port id), the ports of the top-level graph.

    ``labels`` are the names the tensors were given by, for messages and for the new
    Parameters' layer names (by default :func:`label`).  ``source`` is the document the
    layers are copied from, :func:`source_document` (given by a caller that extracts
    many subgraphs of one model, to make it once).
    """
    lg = model._graph
    cuts, outputs = list(dict.fromkeys(cuts)), list(dict.fromkeys(outputs))
    if not outputs:
        raise UsageError("no outputs given: name at least one tensor to extract up to")
    shown = model.tensor_names
    named = {t: (labels or {}).get(t) or label(model, t) for t in cuts + outputs}
    both = [t for t in outputs if t in cuts]
    if both:
        raise UsageError(f"'{named[both[0]]}' is both an input and an output")

    cut_set = set(cuts)
    kept, crossing = walk_back(lg, outputs, lambda t: t not in cut_set)
    used = set(crossing)
    unused = [t for t in cuts if t not in used]
    if unused:
        outs = ", ".join(f"'{named[t]}'" for t in outputs)
        raise UsageError(f"input '{named[unused[0]]}' is not needed by the outputs ({outs})")
    kept |= _assigns(model, kept, set(cuts))

    source = source or source_document(model)
    by_id = {layer.id: layer for layer in source.layers}
    fresh = next_id(source)
    params: list[Layer] = []
    param_of: dict[Tensor, str] = {}
    for tensor in cuts:
        lid, port_id = tensor
        port = lg.layers[lid].output_port(port_id)
        info = model._infos.get(tensor, TensorInfo(None, None))
        et = info.element_type or (port.precision if port is not None else None)
        if et is None:
            raise UsageError(f"input '{named[tensor]}': its element type is unknown")
        names = (port.names if port is not None and port.names else ()) or (shown[tensor],)
        shape = info.shape
        if shape is None and port is not None and port.dims and not model._input_shapes:
            # irrun could not infer even the rank (a dynamic input's dims lost on the way):
            # the dims the file declares, which OpenVINO inferred, say more.
            shape = port.dims
        # Named as the user named it, who finds it by that name in the subgraph too.
        new = parameter(str(fresh), named[tensor], shape, et, tuple(names))
        param_of[tensor] = new.id
        params.append(new)
        fresh += 1

    layers = [copy.deepcopy(by_id[layer.id]) for layer in source.layers if layer.id in kept]
    mine = {layer.id: layer for layer in layers}
    for lid, port_id in cuts:  # a kept producer's other outputs: the name is the Parameter's
        if lid in mine:
            port = mine[lid].output_port(port_id)
            if port is not None:
                port.names = ()
    edges = []
    for layer in layers:
        for port in layer.inputs:
            src = lg.sources.get((layer.id, port.id))
            if src is None:
                continue
            tensor = (src.layer, src.port)
            if tensor in param_of:
                edges.append(Edge(param_of[tensor], 0, layer.id, port.id, 0))
            else:
                edges.append(Edge(src.layer, src.port, layer.id, port.id, 0))

    results: list[Layer] = []
    for tensor in outputs:
        lid, port_id = tensor
        port = mine[lid].output_port(port_id)
        assert port is not None
        if not port.names:  # named, so that both engines find it by irrun's name for it
            port.names = (shown[tensor],)
        original = _result_of(model, tensor)
        if original is not None:
            res = copy.deepcopy(by_id[original])
            res.id = str(fresh)
        else:
            info = model._infos.get(tensor, TensorInfo(None, None))
            res = result(str(fresh), f"{mine[lid].name}/sink_port_{port_id}", info.shape,
                         info.element_type or port.precision)  # fmt: skip
        fresh += 1
        results.append(res)
        edges.append(Edge(lid, port_id, res.id, res.inputs[0].id, 0))
    doc = IRDocument(source.path, source.ir_version, source.name, params + layers + results,
                     edges, copy.deepcopy(source.rt_info))  # fmt: skip
    inputs = [named[t] for t in cuts] + [
        layer.name for layer in layers if layer.type == "Parameter"
    ]
    position = {lid: i for i, lid in enumerate(lg.order)}
    return Extracted(doc, sorted(kept, key=position.__getitem__), inputs,
                     [named[t] for t in outputs])  # fmt: skip


def source_document(model: Model) -> IRDocument:
    """The records subgraphs of ``model`` are copied from: those read, or for a reshaped
    model a copy with the shapes it now has in every port."""
    if model._input_shapes:
        return with_inferred_shapes(model._graph, model._infos, model._input_shapes)
    return model._graph.doc


def _result_of(model: Model, tensor: Tensor) -> str | None:
    """The id of the first Result of ``model`` that takes ``tensor``, if one does."""
    lg = model._graph
    for lid in lg.order:
        layer = lg.layers[lid]
        if (
            layer.type == "Result"
            and layer.inputs
            and lg.sources.get((lid, layer.inputs[0].id)) == tensor
        ):
            return lid
    return None


def _assigns(model: Model, kept: set[str], cuts: set[Tensor]) -> set[str]:
    """The Assigns of the variables whose ReadValue is kept, with what they need, when
    everything they need beyond themselves is kept already: a subgraph that can update
    its state as the full model does.  Other Assigns are left out (see the module's
    docstring)."""
    lg = model._graph
    variables = {lg.layers[lid].data.get("variable_id") for lid in kept
                 if lg.layers[lid].type == "ReadValue"}  # fmt: skip
    found: set[str] = set()
    for lid in lg.order:
        layer = lg.layers[lid]
        if layer.type != "Assign" or layer.data.get("variable_id") not in variables:
            continue
        sources = [lg.sources.get((lid, p.id)) for p in layer.inputs]
        if all(s is not None and ((s.layer, s.port) in cuts or s.layer in kept)
               for s in sources):  # fmt: skip
            found.add(lid)
    return found
