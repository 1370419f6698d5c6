"""Comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual), logical ops
(LogicalAnd, LogicalOr, LogicalXor, Xor, LogicalNot) and Select: the boolean tensors of
shape arithmetic and masks (``torch.chunk``, ``torch.where`` and the like convert to them).

Equal, NotEqual, Less, LessEqual, Greater and GreaterEqual compare two inputs of
one element type, broadcast by ``auto_broadcast`` as arithmetic is (NaN compares
unequal to everything), and give booleans.  LogicalNot, LogicalAnd, LogicalOr
and LogicalXor take and give booleans.  Xor (``v0::Xor``, opset1 only; opset2 on have
LogicalXor) is LogicalXor under its old name: booleans only, ``auto_broadcast`` alike.
The comparisons take numbers and booleans (OpenVINO's shape rule takes nf4 codes and
strings too); LogicalNot booleans only (OpenVINO builds it of any type, and gives that type).
Select picks ``then`` where ``cond`` is true and ``else`` elsewhere, the three
broadcast together (``numpy`` or ``none``; OpenVINO cannot build or compile a ``pdpd``
Select consistently); ``then`` and ``else`` may be of any type, strings and nf4 codes too.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.element_types import ALL_NUMBERS, ANY, ELEMENT_TYPES
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import nothing
from ._shapes import BROADCAST_ATTR, broadcast_shapes, same_element_type
from .arithmetic import binary_kernel

BOOLEAN = ELEMENT_TYPES["boolean"]

COMPARE = {
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
    "Greater": np.greater, "GreaterEqual": np.greater_equal,
}
LOGICAL = {"LogicalAnd": np.logical_and, "LogicalOr": np.logical_or,
           "LogicalXor": np.logical_xor}


# What the comparisons take: numbers and booleans (OpenVINO's shape rule takes nf4 codes
# and strings too, which no kernel of it compares).
COMPARABLE = (*ALL_NUMBERS, "boolean")
BOOLEANS = ("boolean",)


def _compare_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, y = inputs
    same_element_type(inputs)
    return [TensorInfo(broadcast_shapes(x.shape, y.shape, a.auto_broadcast), BOOLEAN)]


def _not_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, BOOLEAN)]


def _not(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.asarray(np.logical_not(x)),)


# OpenVINO's own shape inference rejects pdpd Selects in one place or another
# (building the node or compiling it), so no file can show what they compute.
SELECT_BROADCAST = Attr("auto_broadcast", "enum", "numpy", ("none", "explicit", "numpy"))


def _select_shape(cond, then, other, mode: str):
    """Select's result shape: the three broadcast alike."""
    return broadcast_shapes(broadcast_shapes(then, other, mode), cond, mode)


def _select_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    cond, then, other = inputs
    et = same_element_type([then, other])
    return [TensorInfo(_select_shape(cond.shape, then.shape, other.shape, a.auto_broadcast), et)]


def _select(a: SimpleNamespace, cond: np.ndarray, then: np.ndarray,
            other: np.ndarray) -> tuple[np.ndarray, ...]:
    if then.dtype != other.dtype:
        raise KernelError(f"then is {then.dtype} but else is {other.dtype}")
    _select_shape(cond.shape, then.shape, other.shape, a.auto_broadcast)  # raises if not
    return (np.where(cond.astype(bool, copy=False), then, other),)


for _table, _types in ((COMPARE, COMPARABLE), (LOGICAL, BOOLEANS)):
    for _type, _fn in _table.items():
        register(OpDef(type=_type, version=1, since_opset=1, attrs=(BROADCAST_ATTR,),
                       infer=_compare_infer,
                       kernel=binary_kernel(lambda a, x, y, f=_fn: f(x, y), True),
                       inputs=(2, 2), shape_attrs=("auto_broadcast",),
                       input_types=(_types, _types), elementwise=True, scratch=nothing))
register(OpDef(type="Xor", version=0, since_opset=1, attrs=(BROADCAST_ATTR,), infer=_compare_infer,
               kernel=binary_kernel(lambda a, x, y: np.logical_xor(x, y), True),
               inputs=(2, 2), shape_attrs=("auto_broadcast",), input_types=(BOOLEANS, BOOLEANS),
               elementwise=True, scratch=nothing))
register(OpDef(type="LogicalNot", version=1, since_opset=1, attrs=(), infer=_not_infer,
               kernel=_not, input_types=(BOOLEANS,), elementwise=True, scratch=nothing))
register(OpDef(type="Select", version=1, since_opset=1, attrs=(SELECT_BROADCAST,),
               infer=_select_infer, kernel=_select, inputs=(3, 3),
               input_types=(BOOLEANS, ANY, ANY),
               shape_attrs=("auto_broadcast",), elementwise=True,
               scratch=nothing))
