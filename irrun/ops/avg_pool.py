"""AvgPool-1, AvgPool-14 (adds ceil_torch) and AvgPool-16 (adds dilations).

Numerics follow OpenVINO's CPU plugin, which is bit-exact with: accumulate the
in-bounds taps in f32 in row-major kernel order, then divide once by the count.
The count is every tap of the kernel when ``exclude-pad`` is false *and* some
pad anywhere is non-zero; otherwise only the in-bounds taps.  ``exclude-pad``
is true when absent, as OpenVINO reads it.  Integer results are rounded half
to even; f16 is computed in f32 and rounded once.  A window with no element
at all is 0/0 = NaN, which integer outputs turn into 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..attributes import Attr
from ..registry import OpDef, TensorInfo, register
from ..window import (
    AUTO_PADS,
    ROUNDING_TYPES,
    Windows,
    check_pool_attributes,
    pooled_shape,
    with_defaults,
)

V1_ATTRS = (
    Attr("strides", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("kernel", "ints"),
    Attr("exclude-pad", "bool", True),
    Attr("rounding_type", "enum", "floor", ROUNDING_TYPES),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
)
V16_ATTRS = (*V1_ATTRS, Attr("dilations", "ints", ()))
SHAPE_ATTRS = ("kernel", "strides", "dilations", "pads_begin", "pads_end", "auto_pad",
               "rounding_type", "exclude_pad")  # fmt: skip


def _check(version: int):
    def check(a: SimpleNamespace) -> None:
        check_pool_attributes(with_defaults(a), allow_ceil_torch=version >= 14)

    return check


def infer_avg_pool(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    out = pooled_shape(x.shape, with_defaults(a), exclude_pad=a.exclude_pad)
    return [TensorInfo(out, x.element_type)]


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """f64 keeps its precision; everything else is summed in f32, as the CPU plugin does."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def to_input_type(mean: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast f32 averages back: integers round half to even and saturate.

    NaN (an empty window) has no integer value; the CPU plugin yields 0 for it.

    >>> to_input_type(np.array([2.5, -0.5, 300.0, np.nan], np.float32), np.dtype(np.uint8)).tolist()
    [2, 0, 255, 0]
    """
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        rounded = np.clip(np.rint(np.nan_to_num(mean, nan=0.0)), info.min, info.max)
        return rounded.astype(dtype)
    return mean.astype(dtype, copy=False)


def avg_pool(x: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Average-pool ``x`` (N, C, *spatial).

    >>> a = SimpleNamespace(kernel=(2, 2), strides=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
    ...                     rounding_type="floor", auto_pad="explicit", exclude_pad=False)
    >>> avg_pool(np.array([[[[1., 3.], [7., 11.]]]], np.float32), a)[0, 0, 0].tolist()
    [0.25, 1.0, 0.75]
    """
    a = with_defaults(a)
    w = Windows.of(x.shape[2:], a)
    acc_dtype = accumulator_dtype(x.dtype)
    xp = w.padded(x.astype(acc_dtype, copy=False), 0)
    acc = np.zeros(x.shape[:2] + w.out, acc_dtype)
    # inf - inf and overflow to inf are the IEEE results OpenVINO gives too, not errors.
    with np.errstate(invalid="ignore", over="ignore"):
        for tap in w.taps():
            np.add(acc, w.tap_view(xp, tap), out=acc)
    # OpenVINO decides this once for the whole op, not per axis or per window.
    pads_in_average = not a.exclude_pad and any((*w.pads_begin, *w.pads_end))
    if pads_in_average:
        count = np.array(np.prod(w.kernel), acc_dtype)
    else:
        count = np.ones((), acc_dtype)
        for axis in range(len(w.out)):
            shape = [1] * len(w.out)
            shape[axis] = w.out[axis]
            count = count * w.valid_taps(axis).astype(acc_dtype).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        if x.dtype.kind in "iu" and x.dtype.itemsize == 1:
            # The CPU plugin's 8-bit kernel multiplies by the f32 reciprocal of the
            # count; that rounds some exact halves (2475/30) up before half-to-even.
            mean = acc * (np.ones((), acc_dtype) / count)
        else:
            mean = acc / count
    return to_input_type(mean, x.dtype)


def _kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (avg_pool(x, a),)


for _version, _since, _attrs in ((1, 1, V1_ATTRS), (14, 14, V1_ATTRS), (16, 16, V16_ATTRS)):
    register(
        OpDef(
            type="AvgPool",
            version=_version,
            since_opset=_since,
            attrs=_attrs,
            infer=infer_avg_pool,
            kernel=_kernel,
            check=_check(_version),
            shape_attrs=SHAPE_ATTRS,
        )
    )
