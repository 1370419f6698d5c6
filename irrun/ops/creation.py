"""Tensors made to a pattern: Eye-9.

Eye-9 builds ``batch_shape + [num_rows, num_columns]`` matrices with ones on the
diagonal ``diagonal_index`` (positive: above the main one).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .movement import INDEX_TYPES, int_values, one_d, scalar_like

# --------------------------------------------------------------------------- Eye


def _eye_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    dims: list[Dim] = []
    for info, what in zip(inputs[:2], ("num_rows", "num_columns"), strict=True):
        v = scalar_like(info, what)
        if v is not None and v < 0:
            raise ShapeError(f"{what} must not be negative, got {v}")
        dims.append(DYNAMIC if v is None else v)
    scalar_like(inputs[2], "diagonal_index")
    batch: tuple[Dim, ...] | None = ()
    if len(inputs) == 4:
        info = inputs[3]
        one_d(info, "batch_shape")
        values = int_values(info)
        if values is not None:
            if any(v < 0 for v in values):
                raise ShapeError(f"batch_shape {values} must not be negative")
            batch = tuple(values)
        elif info.shape is not None and isinstance(info.shape[0], int):
            batch = (DYNAMIC,) * info.shape[0]
        else:
            batch = None
    shape = None if batch is None else (*batch, *dims)
    return [TensorInfo(shape, a.output_type)]


def _eye(a: SimpleNamespace, rows, cols, diagonal, batch=None) -> tuple[np.ndarray, ...]:
    r, c, k = (int(np.asarray(v).reshape(-1)[0]) for v in (rows, cols, diagonal))
    if r < 0 or c < 0:
        raise KernelError(f"num_rows {r} and num_columns {c} must not be negative")
    out = np.eye(r, c, k, dtype=a.output_type.dtype)
    if batch is not None:
        shape = tuple(int(v) for v in batch.reshape(-1))
        out = np.ascontiguousarray(np.broadcast_to(out, shape + out.shape))
    return (out,)


register(
    OpDef(type="Eye", version=9, since_opset=9,
          attrs=(Attr("output_type", "element_type"),), infer=_eye_infer, kernel=_eye,
          inputs=(3, 4), input_types=(INDEX_TYPES,) * 4)
)  # fmt: skip
