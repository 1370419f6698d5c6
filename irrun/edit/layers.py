"""New layers for edited documents: Parameters, Constants and Results as OpenVINO
writes them, and fresh layer ids.
"""

from __future__ import annotations

import numpy as np

from ..core.documents import partial_shape_text
from ..ir.dims import Shape
from ..ir.element_types import ElementType, encode
from ..ir.records import IRDocument, Layer, Port


def next_id(doc: IRDocument) -> int:
    """An id above every numeric layer id of ``doc``."""
    return 1 + max((int(layer.id) for layer in doc.layers if layer.id.isdigit()), default=-1)


def _dims(shape: Shape | None) -> tuple:
    return tuple(shape) if shape is not None else ()


def parameter(lid: str, name: str, shape: Shape | None, et: ElementType,
              names: tuple[str, ...] = ()) -> Layer:  # fmt: skip
    """A Parameter (opset1) of ``shape`` and ``et`` whose output tensor has ``names``."""
    return Layer(lid, name, "Parameter", "opset1", 0,
                 data={"shape": partial_shape_text(shape), "element_type": et.name},
                 outputs=[Port(0, 0, et, names, _dims(shape))])  # fmt: skip


def constant(lid: str, name: str, value: np.ndarray, et: ElementType,
             names: tuple[str, ...] = ()) -> Layer:  # fmt: skip
    """A Const (opset1) holding ``value`` as ``et``; its bytes go to the new ``.bin``."""
    blob = encode(value, et)
    shape = tuple(int(d) for d in np.shape(value))
    return Layer(lid, name, "Const", "opset1", 0,
                 data={"element_type": et.name, "shape": partial_shape_text(shape),
                       "offset": "0", "size": str(len(blob))},
                 outputs=[Port(0, 0, et, names, shape)], blob=blob)  # fmt: skip


def result(lid: str, name: str, shape: Shape | None, et: ElementType | None) -> Layer:
    """A Result (opset1) taking a tensor of ``shape`` and ``et``."""
    return Layer(lid, name, "Result", "opset1", 0,
                 inputs=[Port(0, 0, et, (), _dims(shape))])  # fmt: skip
