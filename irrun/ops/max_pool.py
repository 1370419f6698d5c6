"""MaxPool-1, MaxPool-8 and MaxPool-14.

Semantics (OpenVINO's reference kernel and CPU plugin agree): padded taps are
skipped, not read as -inf; the running maximum starts at the dtype's lowest
value and is replaced only by a strictly greater element, so NaN never wins,
ties go to the first tap in row-major order, and a window with no valid tap
yields the lowest value with the index of the start of its (n, c) plane.
Indices are flat over the whole input, taken modulo ``prod(shape[axis:])``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from .. import element_types
from ..attributes import Attr
from ..registry import OpDef, ShapeError, TensorInfo, register
from ..window import (
    AUTO_PADS,
    ROUNDING_TYPES,
    Windows,
    check_pool_attributes,
    pooled_shape,
    with_defaults,
)

COMMON_ATTRS = (
    Attr("strides", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("kernel", "ints"),
    Attr("rounding_type", "enum", "floor", ROUNDING_TYPES),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
)
V8_ATTRS = (
    *COMMON_ATTRS,
    Attr("dilations", "ints", ()),
    Attr("index_element_type", "element_type", element_types.ELEMENT_TYPES["i64"]),
    Attr("axis", "int", 0),
)
SHAPE_ATTRS = ("kernel", "strides", "dilations", "pads_begin", "pads_end", "auto_pad",
               "rounding_type")  # fmt: skip


def lowest(dtype: np.dtype) -> np.generic:
    """The start value of a running maximum, as OpenVINO's CPU plugin has it.

    Floats use f32's lowest finite value (which becomes -inf in f16); integers their
    minimum, except i64, which the plugin computes as i32.

    >>> lowest(np.dtype(np.float16)), lowest(np.dtype(np.uint8)), lowest(np.dtype(np.int64))
    (np.float16(-inf), np.uint8(0), np.int64(-2147483648))
    """
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(np.finfo(np.float32).min).astype(dtype)[()]
    if dtype == np.int64:
        return np.array(np.iinfo(np.int32).min, dtype)[()]
    return np.array(np.iinfo(dtype).min, dtype)[()]


def _check(version: int):
    def check(a: SimpleNamespace) -> None:
        check_pool_attributes(with_defaults(a), allow_ceil_torch=version >= 14)
        if version >= 8 and a.index_element_type.name not in ("i32", "i64"):
            raise ValueError(
                f"index_element_type must be i32 or i64, got {a.index_element_type.name}"
            )

    return check


def _normalized_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range for a rank-{rank} input")
    return axis % rank


def infer_max_pool(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    a = with_defaults(a)
    out_shape = pooled_shape(x.shape, a)
    values = TensorInfo(out_shape, x.element_type)
    if not hasattr(a, "index_element_type"):
        return [values]
    if x.shape is not None:
        _normalized_axis(a.axis, len(x.shape))
    return [values, TensorInfo(out_shape, a.index_element_type)]


def max_pool(
    x: np.ndarray, a: SimpleNamespace, with_indices: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """Max-pool ``x`` (N, C, *spatial); return values and flat int64 indices.

    >>> a = SimpleNamespace(kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(0,),
    ...                     rounding_type="floor", auto_pad="explicit")
    >>> v, i = max_pool(np.array([[[1., np.nan, 3., 3.]]], np.float32), a)
    >>> v.tolist(), i.tolist()
    ([[[1.0, 3.0, 3.0]]], [[[0, 2, 2]]])
    """
    a = with_defaults(a)
    w = Windows.of(x.shape[2:], a)
    low = lowest(x.dtype)
    xp = w.padded(x, low)
    out_shape = x.shape[:2] + w.out
    best = np.full(out_shape, low, dtype=x.dtype)
    index = np.zeros(out_shape, np.int64) if with_indices else None
    start = w.start_index() if with_indices else None
    for tap in w.taps():
        v = w.tap_view(xp, tap)
        # Strictly greater: NaN never wins and the first of equal values stays.
        better = v > best
        np.copyto(best, v, where=better)
        if index is not None:
            np.copyto(index, start + w.tap_offset(tap), where=better)
    if index is not None:
        plane = int(np.prod(x.shape[2:], dtype=np.int64))
        offsets = np.arange(x.shape[0] * x.shape[1], dtype=np.int64) * plane
        index += offsets.reshape(x.shape[:2] + (1,) * len(w.out))
    return best, index


def _kernel(version: int):
    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        if version == 1:
            values, _ = max_pool(x, a, with_indices=False)
            return (values,)
        values, index = max_pool(x, a)
        axis = _normalized_axis(a.axis, x.ndim)
        if axis != 0:
            index %= int(np.prod(x.shape[axis:], dtype=np.int64))
        return values, index.astype(a.index_element_type.dtype)

    return kernel


for _version, _since, _attrs in ((1, 1, COMMON_ATTRS), (8, 8, V8_ATTRS), (14, 14, V8_ATTRS)):
    register(
        OpDef(
            type="MaxPool",
            version=_version,
            since_opset=_since,
            attrs=_attrs,
            infer=infer_max_pool,
            kernel=_kernel(_version),
            check=_check(_version),
            shape_attrs=SHAPE_ATTRS,
        )
    )
