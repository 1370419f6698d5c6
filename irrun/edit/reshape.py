"""New input shapes written into a document (``irrun reshape``), as OpenVINO's
``Model.reshape`` then ``save_model`` write them: each Parameter's ``shape`` attribute
(``1,3,224,224``; ``?`` for a dynamic dim, ``1..10`` for a range) and every port's dims
inferred again, a dim that is not a number written -1 (OpenVINO writes a port's range
``1..10`` so too, keeping the range in the Parameter's ``shape`` alone).  The model
reshaped is left as it was.

Static shapes are inferred as OpenVINO infers them.  With dynamic dims, irrun's inference
can know less than OpenVINO's (which carries dims' bounds through shape subgraphs): a
port may be written -1 where OpenVINO writes 1.  The Parameters' shapes are the same,
and OpenVINO infers every port again when it reads the file.
"""

from __future__ import annotations

from typing import Any

from ..core.documents import with_inferred_shapes
from ..core.model import Model
from ..core.propagation import Infos, propagate
from ..core.reshape import describe, input_shapes
from ..errors import IrrunError
from ..ir.dims import DYNAMIC, Shape
from ..ir.records import IRDocument
from ..ir.registry import TensorInfo


def reshape(model: Model, shapes: Any) -> IRDocument:
    """A copy of ``model``'s document with the inputs' new ``shapes`` (what
    :meth:`Model.reshape <irrun.Model.reshape>` takes: ``{"x": [1, 3, 224, 224]}``,
    ``"x[1,3,224,224]"``...) written in; raises :class:`IrrunError` naming the first
    layer the new shapes break."""
    infos, inputs = reshaped(model, shapes)
    return ranges_dynamic(with_inferred_shapes(model._graph, infos, inputs))


def ranges_dynamic(doc: IRDocument) -> IRDocument:
    """``doc`` with every top-level port's range dims made dynamic (-1), in place."""
    for layer in doc.layers:
        for port in (*layer.inputs, *layer.outputs):
            if port.dims:
                port.dims = tuple(d if isinstance(d, int) else DYNAMIC for d in port.dims)
    return doc


def reshaped(model: Model, shapes: Any) -> tuple[Infos, dict[str, Shape | None]]:
    """The infos of ``model``'s tensors with the inputs' new ``shapes`` (on top of
    those it was reshaped to, if it was), and the Parameters' shapes by layer id;
    ``shapes`` None gives the model's own."""
    lg, nodes = model._graph, model._nodes
    if shapes is None:
        return model._infos, dict(model._input_shapes)
    new = input_shapes(lg, nodes, model._shape_spec(shapes))
    merged = {lid: TensorInfo(shape, nodes[lid].attrs.element_type)  # type: ignore[union-attr]
              for lid, shape in model._input_shapes.items()}  # fmt: skip
    merged.update(new)
    infos, problems = propagate(lg, nodes, merged)
    errors = [d for d in problems if d.level == "error"]
    if errors:
        err = errors[0].as_error()
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise IrrunError(f"reshape to {describe(lg, new)}: {err.message}{more}",
                         err.location, err.layer, err.port, err.code)  # fmt: skip
    return infos, {lid: info.shape for lid, info in merged.items()}
