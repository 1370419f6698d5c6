"""New input shapes written into a document (``irrun reshape``), as OpenVINO's
``Model.reshape`` then ``save_model`` write them: each Parameter's ``shape`` attribute
(``1,3,224,224``; ``?`` for a dynamic dim, ``1..10`` for a range) and every port's dims
inferred again (see :func:`irrun.core.documents.with_inferred_shapes`).  The model
reshaped is left as it was.
"""

from __future__ import annotations

from typing import Any

from ..core.documents import with_inferred_shapes
from ..core.model import Model
from ..core.propagation import Infos
from ..core.reshape import input_shapes, reshape_infos
from ..ir.dims import Shape
from ..ir.records import IRDocument


def reshape(model: Model, shapes: Any) -> IRDocument:
    """A copy of ``model``'s document with the inputs' new ``shapes`` (what
    :meth:`Model.reshape <irrun.Model.reshape>` takes: ``{"x": [1, 3, 224, 224]}``,
    ``"x[1,3,224,224]"``...) written in; raises :class:`IrrunError` naming the first
    layer the new shapes break."""
    infos, inputs = reshaped(model, shapes)
    return with_inferred_shapes(model._graph, infos, inputs)


def reshaped(model: Model, shapes: Any) -> tuple[Infos, dict[str, Shape | None]]:
    """The infos of ``model``'s tensors with the inputs' new ``shapes`` (on top of
    those it was reshaped to, if it was), and the Parameters' shapes by layer id;
    ``shapes`` None gives the model's own."""
    lg, nodes = model._graph, model._nodes
    if shapes is None:
        return model._infos, dict(model._input_shapes)
    new = input_shapes(lg, nodes, model._shape_spec(shapes))
    infos, merged = reshape_infos(lg, nodes, model._input_shapes, new)
    return infos, {lid: info.shape for lid, info in merged.items()}
