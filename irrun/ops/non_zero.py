"""Coordinates of the non-zero elements: NonZero-v3.

NonZero-v3 lists the coordinates of the non-zero elements (NaN counts, -0.0 does not)
as a ``[rank, count]`` tensor of ``output_type``, in row-major order.  ``count`` is
data-dependent: the shape rule gives ``[rank, 0..N]`` with N the input's element count
(its upper bound when dims are dynamic), which the memory plan uses as a bound.

Its data may be of any number type or boolean.  OpenVINO's check lets any type through,
but its kernels count no nf4 or string elements (the reference kernel counts neither the
low-precision floats nor the packed integers, the CPU plugin the packed ones): irrun
refuses nf4 and strings, whose zero no kernel defines.

Where irrun follows the CPU plugin rather than OpenVINO's reference kernel: NonZero of a
scalar gives ``[1, count]`` as the plugin does; the reference kernel gives ``[0, 0]`` for
a zero scalar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC
from ..ir.element_types import ALL_NUMBERS, ELEMENT_TYPES, INDEX_TYPES
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import per_element
from ._shapes import dim_within, upper_bound


def _non_zero_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    et = a.output_type
    if x.shape is None:
        return [TensorInfo((DYNAMIC, DYNAMIC), et)]
    rank = max(len(x.shape), 1)  # a scalar's coordinates are listed as those of a [1]
    if x.value is not None:  # a constant: the count is known (and propagation folds it)
        return [TensorInfo((rank, int(np.count_nonzero(x.value))), et)]
    his = [upper_bound(d) for d in x.shape]
    if any(h is None for h in his):
        return [TensorInfo((rank, DYNAMIC), et)]
    most = math.prod(his)  # type: ignore[arg-type]
    return [TensorInfo((rank, dim_within(0, most)), et)]


def _non_zero(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    coords = np.nonzero(x.reshape(1) if x.ndim == 0 else x)  # NaN != 0, -0.0 == 0
    dtype = a.output_type.dtype
    if not coords:
        return (np.zeros((1, 0), dtype),)
    return (np.stack(coords).astype(dtype).reshape(len(coords), -1),)


def _check_index_type(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")


register(OpDef(type="NonZero", version=3, since_opset=3,
               attrs=(Attr("output_type", "element_type", ELEMENT_TYPES["i64"]),),
               infer=_non_zero_infer, kernel=_non_zero, check=_check_index_type,
               input_types=((*ALL_NUMBERS, "boolean"),),
               scratch=per_element(24)))  # fmt: skip
