"""IR documents made from a loaded model, for the writer: copies to edit, and copies
with the shapes irrun inferred written into every port.

A loaded model keeps the records it was read from (:class:`~irrun.ir.records.IRDocument`)
untouched: what it saves, or what surgery changes, is a copy.
"""

from __future__ import annotations

import copy

from ..ir.dims import DYNAMIC, Shape
from ..ir.records import IRDocument, Port
from ..ir.registry import TensorInfo
from .graph import LayerGraph
from .propagation import Infos


def copy_document(doc: IRDocument) -> IRDocument:
    """A copy of ``doc`` to edit: its layers, ports, edges and bodies are its own."""
    return copy.deepcopy(doc)


def partial_shape_text(shape: Shape | None) -> str:
    """A shape as OpenVINO writes it in a Parameter's ``shape``: ``1,?,4..10``,
    ``...`` for an unknown rank.

    >>> from ..ir.dims import Interval
    >>> partial_shape_text((1, Interval(), Interval(4, 10))), partial_shape_text(None)
    ('1,?,4..10', '...')
    """
    return "..." if shape is None else ",".join(str(d) for d in shape)


def with_inferred_shapes(lg: LayerGraph, infos: Infos,
                         inputs: dict[str, Shape | None]) -> IRDocument:  # fmt: skip
    """A copy of ``lg``'s document in which the Parameters listed in ``inputs`` (by layer
    id) have those shapes, and every port of the top-level graph has the shape irrun
    inferred for its tensor, as OpenVINO's ``reshape`` and ``save_model`` write them: a
    dim that is not a number is written -1 (a range ``1..10`` stays in the Parameter's
    ``shape`` alone).  Ports whose tensor irrun could not infer keep their dims.

    With dynamic dims, irrun's inference can know less than OpenVINO's (which carries
    dims' bounds through shape subgraphs): a port may say -1 where OpenVINO's says 1.
    The Parameters' shapes are the same, and OpenVINO infers every port again when it
    reads the file."""
    doc = copy_document(lg.doc)
    for layer in doc.layers:
        if layer.id in inputs:
            layer.data["shape"] = partial_shape_text(inputs[layer.id])
        for port in layer.outputs:
            _set_dims(port, infos.get((layer.id, port.id)))
        for port in layer.inputs:
            source = lg.sources.get((layer.id, port.id))
            if source is not None:
                _set_dims(port, infos.get((source.layer, source.port)))
    return doc


def _set_dims(port: Port, info: TensorInfo | None) -> None:
    if info is not None and info.shape is not None:
        port.dims = tuple(d if isinstance(d, int) else DYNAMIC for d in info.shape)

