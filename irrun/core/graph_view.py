"""The model as a networkx graph for scripts (:attr:`irrun.Model.graph`).

:func:`model_graph` takes the wiring :attr:`LayerGraph.graph <irrun.core.graph.LayerGraph.graph>`
builds (a node per layer id, an edge per ``<edge>`` keyed ``(from_port, to_port)``) and
puts on it what a script asks about: each layer's op and ``<data>`` as written, the shapes
and element types shape propagation inferred for its outputs, and on each edge the tensor
it carries.

Node attributes (per output port, the tuples follow the ``<output>`` ports' order):

- ``id``, ``name``, ``type``; ``version``, the op version the layer resolves to (an int,
  None when irrun has no such op) and ``opset``, the version as written (``"opset8"``);
- ``attributes``: the ``<data>`` items as written, strings in OpenVINO's spellings;
- ``rt_info``: the layer's ``<rt_info>``; ``line``: its line in the XML;
- ``inputs`` and ``outputs``: the input and output port ids;
- ``shapes``: the inferred shape of each output, a tuple of ints with an
  :class:`~irrun.ir.dims.Interval` for each dynamic dim (``Interval()`` is ``?``), None for
  an unknown rank; ``shape_texts``: the same as OpenVINO prints partial shapes
  (``"[1,3,?,4..10]"``, ``"[...]"``);
- ``element_types``: each output's element type name (``"f32"``);
- ``tensor_names``: each output's tensor names as written (a tuple of strings per port);
  ``tensors``: the name irrun shows it under (:attr:`irrun.Model.tensor_names`; None in
  a body, whose tensors a run does not show);
- ``bodies``, for If, Loop and TensorIterator only: each body by tag (``then_body``,
  ``else_body``, ``body``) as a graph of the same kind, its shapes inferred from the
  layer's inputs as the op's shape rule gives them to the body (a sliced input's part).

Edge attributes: ``from_port``, ``to_port``, and of the tensor the edge carries
``tensor_names`` (the producing port's), ``tensor``, ``shape``, ``shape_text`` and
``element_type``.  A value unknown (a layer whose op is missing) is None.
"""

from __future__ import annotations

from collections.abc import Mapping

import networkx as nx

from ..ir.dims import format_shape
from ..ir.registry import TensorInfo
from .binding import Node
from .graph import LayerGraph
from .subgraphs import Compiled, body_infos

_UNKNOWN = TensorInfo(None, None)


def model_graph(lg: LayerGraph, nodes: Mapping[str, Node],
                infos: Mapping[tuple[str, int], TensorInfo],
                names: Mapping[tuple[str, int], str] | None = None) -> nx.MultiDiGraph:  # fmt: skip
    """The layer graph ``lg`` with its layers' ops (``nodes``), inferred outputs
    (``infos``, by (layer id, port id)) and irrun's tensor names (``names``) on it."""
    graph = lg.graph
    graph.graph["name"] = lg.doc.name
    for lid, attrs in graph.nodes(data=True):
        layer = lg.layers[lid]
        node = nodes.get(lid)
        ports = tuple(p.id for p in layer.outputs)
        outs = [infos.get((lid, p), _UNKNOWN) for p in ports]
        attrs.update(
            id=lid, name=layer.name, type=layer.type,
            version=node.op.version if node is not None and node.op is not None else None,
            opset=layer.version, attributes=dict(layer.data), rt_info=dict(layer.rt_info),
            line=layer.line, inputs=tuple(p.id for p in layer.inputs), outputs=ports,
            shapes=tuple(i.shape for i in outs),
            shape_texts=tuple(_text(i) for i in outs),
            element_types=tuple(_type(i) for i in outs),
            tensor_names=tuple(p.names for p in layer.outputs),
            tensors=tuple(names.get((lid, p)) for p in ports) if names is not None else
            (None,) * len(ports),
        )  # fmt: skip
        sub = getattr(node.attrs, "sub", None) if node is not None else None
        if isinstance(sub, Compiled):
            attrs["bodies"] = _bodies(lg, lid, sub, infos)
    for src, _, (fp, _), attrs in graph.edges(keys=True, data=True):
        info = infos.get((src, fp), _UNKNOWN)
        port = lg.layers[src].output_port(fp)
        attrs.update(
            tensor_names=port.names if port is not None else (),
            tensor=names.get((src, fp)) if names is not None else None,
            shape=info.shape, shape_text=_text(info), element_type=_type(info),
        )  # fmt: skip
    return graph


def _bodies(lg: LayerGraph, lid: str, sub: Compiled,
            infos: Mapping[tuple[str, int], TensorInfo]) -> dict[str, nx.MultiDiGraph]:  # fmt: skip
    inputs = []
    for port in lg.layers[lid].inputs:
        src = lg.sources.get((lid, port.id))
        inputs.append(_UNKNOWN if src is None else infos.get(src, _UNKNOWN))
    inner = body_infos(sub, inputs)
    return {body.tag: model_graph(body.lg, body.nodes, got)
            for body, got in zip(sub.bodies, inner, strict=True)}  # fmt: skip


def _text(info: TensorInfo) -> str | None:
    if info.shape is None and info.element_type is None:
        return None  # not inferred: unknown, not a dynamic rank
    return format_shape(info.shape)


def _type(info: TensorInfo) -> str | None:
    return None if info.element_type is None else info.element_type.name
