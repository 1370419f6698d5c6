"""MaxPool-1, MaxPool-8 and MaxPool-14.

Semantics (OpenVINO's reference kernel and CPU plugin agree): each window's taps are
scanned in row-major kernel order, and padded taps are skipped, not read as -inf.  The
running maximum starts at :func:`lowest` and is replaced only by a strictly greater
element, so NaN never wins, of equal elements (and of zeros of either sign) the first
wins, and a window with nothing above the start value (no element inside the input, as
``ceil`` rounding or large pads make) yields the start value with the index of the
start of its (n, c) plane.  Indices are flat over the whole input, taken modulo
``prod(shape[axis:])`` (MaxPool-8/14).  Types the plugin pools in another type (bf16,
16-bit and unsigned integers) are pooled as it pools them (see :func:`.window.computed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.element_types import INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .pool_checks import warn_empty_windows
from .window import (
    AUTO_PADS,
    POOL_TYPES,
    ROUNDING_TYPES,
    Windows,
    check_pool_attributes,
    computed,
    computed_type,
    pooled_shape,
    restored,
    spread,
    window_counts,
    window_elements,
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
               "rounding_type")


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
        if version >= 8 and a.index_element_type.name not in INDEX_TYPES:
            raise KernelError(
                f"index_element_type must be i32 or i64, got {a.index_element_type.name}"
            )

    return check


def normalized_axis(axis: int, rank: int) -> int:
    """MaxPool-8's ``axis`` in ``[0, rank)``."""
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
        normalized_axis(a.axis, len(x.shape))
    return [values, TensorInfo(out_shape, a.index_element_type)]


def max_pool(x: np.ndarray, a: SimpleNamespace, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Max-pool ``x`` (N, C, *spatial): the values and their flat indices (int64), modulo
    ``prod(x.shape[axis:])``.

    >>> a = SimpleNamespace(kernel=(2,), strides=(1,), pads_begin=(1,), pads_end=(0,),
    ...                     rounding_type="floor", auto_pad="explicit")
    >>> v, i = max_pool(np.array([[[np.nan, -0.0, 0.0, 3.0]]], np.float32), a)
    >>> v.tolist(), i.tolist()
    ([[[-3.4028234663852886e+38, -0.0, -0.0, 3.0]]], [[[0, 1, 1, 3]]])
    """
    w = Windows.of(x.shape[2:], with_defaults(a))
    low = lowest(x.dtype)
    taps, positions, inverse = window_elements(x, w.clipped(), low)
    # The first tap of the greatest value wins (argmax takes the first); NaN ranks as the
    # start value, which wins nothing.
    ranked = np.where(np.isnan(taps), low, taps) if x.dtype.kind == "f" else taps
    first = np.argmax(ranked, axis=-1)[..., None]
    best = np.take_along_axis(taps, first, -1)[..., 0]
    won = best > low
    within = np.take_along_axis(np.broadcast_to(positions, taps.shape), first, -1)[..., 0]
    plane = int(np.prod(w.sizes, dtype=np.int64))
    starts = (np.arange(len(taps), dtype=np.int64) * plane).reshape(-1, *[1] * len(w.sizes))
    index = (starts + np.where(won, within, 0)) % int(np.prod(x.shape[axis:], dtype=np.int64))
    shape = x.shape[:2] + w.out
    values = np.where(won, best, low)
    return spread(values, inverse).reshape(shape), spread(index, inverse).reshape(shape)


def _kernel(version: int):
    def kernel(a: SimpleNamespace, x: np.ndarray, needed=(True, True)) -> tuple:
        axis = normalized_axis(a.axis, x.ndim) if version >= 8 else 0
        with np.errstate(all="ignore"):  # NaN and infinities are values here
            values, index = max_pool(computed(x), a, axis)
        values = restored(values, x.dtype, truncate=True)
        if version == 1:
            return (values,)
        return values, index.astype(a.index_element_type.dtype)

    return kernel


def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo], outputs) -> int:
    """The input in the type pooled in and as planes with one more element each; every
    distinct window's taps (the elements, their rank, NaN mask and positions); per window
    the winner, its value, position and index; the outputs spread over each axis."""
    (x,) = inputs
    size = int(np.prod(x.shape, dtype=object))
    planes = x.shape[0] * x.shape[1]
    item = computed_type(x.element_type.dtype).itemsize
    windows, taps = window_counts(Windows.of(x.shape[2:], with_defaults(a)))
    out = int(np.prod(outputs[0].shape, dtype=object))
    return (2 * (size + planes) * item + windows * taps * (3 * 8 + 1)
            + planes * windows * (taps * (2 * item + 1 + 8) + 4 * 8 + 2 * item)
            + (len(x.shape) - 1) * out * (item + 8))


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
            optional_outputs=_version >= 8,
            input_types=(POOL_TYPES,),
            scratch=scratch,
            warn=warn_empty_windows,
        )
    )
