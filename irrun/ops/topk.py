"""TopK-1, TopK-3 and TopK-11: the ``k`` largest or smallest values along an axis
and their indices (``torch.topk``, and ``argmax`` as PyTorch's converter writes it).

Values are ordered largest first (``mode="max"``) or smallest first (``min``),
or by index (``sort="index"``); ``sort="none"`` is ordered as ``value``.  Equal
values go lowest index first, which is what TopK-11's ``stable`` promises and
what the CPU plugin does with it; without it the plugin's order of equal values
depends on its algorithm.  NaN counts as larger than any number (the plugin's
result around NaN depends on its algorithm too).  A ``k`` larger than the axis
is refused, as the plugin refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval
from ..ir.element_types import ALL_NUMBERS, INDEX_TYPES, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import check_vector, flat_ints, int_values, normalize_axis

MODES = ("max", "min")
SORTS = ("value", "index", "none")


def _attrs(version: int) -> tuple[Attr, ...]:
    attrs = (
        Attr("axis", "int"),
        Attr("mode", "enum", choices=MODES),
        Attr("sort", "enum", choices=SORTS),
        Attr("index_element_type", "element_type", element_types.ELEMENT_TYPES["i32"]),
    )
    return attrs + ((Attr("stable", "bool", False),) if version >= 11 else ())


def _check(a: SimpleNamespace) -> None:
    if a.index_element_type.name not in INDEX_TYPES:
        raise KernelError(f"index_element_type must be i32 or i64, got {a.index_element_type.name}")


def _k_dim(k: int | None, d: Dim) -> Dim:
    """The output's size on the axis: ``k``, or up to the axis's size while unknown."""
    if k is None:
        return Interval(0, d if isinstance(d, int) else d.hi)
    if k < 0:
        raise ShapeError(f"k must not be negative, got {k}")
    if isinstance(d, int) and k > d:
        raise ShapeError(f"k = {k} is more than the {d} values on the axis")
    return k


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, k_info = inputs
    check_vector(k_info, "k")
    values = int_values(k_info)
    if values is not None and len(values) != 1:
        raise ShapeError(f"k must be one value, got {values}")
    if x.shape is None:
        shape = None
    else:
        if len(x.shape) == 0:
            raise ShapeError("TopK needs an input of rank 1 or more, got a scalar")
        axis = normalize_axis(a.axis, len(x.shape))
        k = None if values is None else values[0]
        shape = tuple(_k_dim(k, d) if i == axis else d for i, d in enumerate(x.shape))
    return [TensorInfo(shape, x.element_type), TensorInfo(shape, a.index_element_type)]


def top_k(x: np.ndarray, k: int, axis: int, largest: bool, by_index: bool) -> np.ndarray:
    """Indices of the ``k`` largest (or smallest) values along ``axis``, ties lowest
    index first, then ordered by index if ``by_index``.

    >>> top_k(np.array([3, 1, 3, 2]), 3, 0, True, False).tolist()
    [0, 2, 3]
    """
    n = x.shape[axis]
    if largest:
        # Descending, ties by ascending index: an ascending stable sort of the
        # reversed axis, read backwards.
        order = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
        order = (n - 1) - order
    else:
        order = np.argsort(x, axis=axis, kind="stable")
    chosen = np.take(order, np.arange(k), axis=axis)
    return np.sort(chosen, axis=axis) if by_index else chosen


def _kernel(a: SimpleNamespace, x: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.ndim == 0:
        raise ShapeError("TopK needs an input of rank 1 or more, got a scalar")
    axis = normalize_axis(a.axis, x.ndim)
    count = _k_dim(flat_ints(k)[0], x.shape[axis])
    assert isinstance(count, int)
    chosen = top_k(x, count, axis, a.mode == "max", a.sort == "index")
    values = np.take_along_axis(x, chosen, axis=axis)
    return values, chosen.astype(a.index_element_type.dtype)


# OpenVINO takes any data; irrun orders the numbers and booleans (not nf4's codes, whose
# order is not their values').  k: TopK-1 takes i8, i32 and i64, the later ones any integer.
TOPK_TYPES = (*ALL_NUMBERS, "boolean")
K_TYPES = {1: ("i64", "i32", "i8"), 3: INTEGERS, 11: INTEGERS}

for _version in (1, 3, 11):
    register(OpDef(type="TopK", version=_version, since_opset=_version, attrs=_attrs(_version),
                   infer=_infer, kernel=_kernel, inputs=(2, 2), check=_check,
                   shape_attrs=("axis",), scratch=per_element(24),
                   input_types=(TOPK_TYPES, K_TYPES[_version])))  # fmt: skip
