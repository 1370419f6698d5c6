"""GRN-1, global response normalization: ``x / sqrt(sum over axis 1 of x**2 + bias)``.

Computed in f32 for f16 data; the plugin sums in another order, hence a few ulp of
difference.  Its reference kernel cannot be run from Python (``Model.evaluate`` fails),
so the tests compare it with the CPU plugin only.  (A normalization: it is to join
:mod:`irrun.ops.normalization` once that module's rework has landed.)
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from .unary import REAL, float_compute


def _grn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    if data.shape is not None and not 2 <= len(data.shape) <= 4:
        raise ShapeError(f"GRN's input must have rank 2, 3 or 4, got shape "
                         f"{format_shape(data.shape)}")  # fmt: skip
    return [TensorInfo(data.shape, data.element_type)]


def _grn(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    def fn(v: np.ndarray) -> np.ndarray:
        norm = np.sqrt(np.sum(v * v, axis=1, keepdims=True) + v.dtype.type(a.bias))
        return v / norm

    return (float_compute(x, fn),)


register(
    OpDef(type="GRN", version=1, since_opset=1, attrs=(Attr("bias", "float"),),
          infer=_grn_infer, kernel=_grn, input_types=(REAL,),
          scratch=per_element(4, 12))
)  # fmt: skip
