"""AvgPool-1, AvgPool-14 (adds ceil_torch) and AvgPool-16 (adds dilations).

Numerics follow OpenVINO's CPU plugin, which is bit-exact with: accumulate the
in-bounds taps in f32 (f64 for f64) in row-major kernel order, starting from +0.0,
then divide once by the count.  The count is every tap of the kernel when
``exclude-pad`` is false *and* some pad anywhere is non-zero; otherwise only the
in-bounds taps.  ``exclude-pad`` is true when absent, as OpenVINO reads it.  8-bit
types multiply by the f32 reciprocal of the count instead of dividing (as the plugin's
8-bit kernel does), integer results are rounded half to even, and f16 is computed in
f32 and rounded once.  A window with no element at all is 0/0 = NaN, which integer
outputs turn into 0 (the plugin gives NaN or -0.0 in floats, its reference 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.registry import OpDef, TensorInfo, register
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
               "rounding_type", "exclude_pad")


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


def sequential_sums(taps: np.ndarray) -> np.ndarray:
    """The sums over the last axis, adding one tap after another from +0.0 as the plugin
    does (``cumsum`` adds in order; ``+ 0.0`` makes a sum of -0.0 taps the plugin's +0.0).

    >>> sequential_sums(np.float32([[1e8, 1, -1e8, 1], [-0.0, -0.0, -0.0, -0.0]])).tolist()
    [1.0, 0.0]
    """
    return np.cumsum(taps, axis=-1)[..., -1] + 0.0


def avg_pool(x: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Average-pool ``x`` (N, C, *spatial).

    >>> a = SimpleNamespace(kernel=(2, 2), strides=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
    ...                     rounding_type="floor", auto_pad="explicit", exclude_pad=False)
    >>> avg_pool(np.array([[[[1., 3.], [7., 11.]]]], np.float32), a)[0, 0, 0].tolist()
    [0.25, 1.0, 0.75]
    """
    w = Windows.of(x.shape[2:], with_defaults(a))
    acc = accumulator_dtype(x.dtype)
    taps, positions, inverse = window_elements(x, w.clipped(), 0, dtype=acc)
    sums = sequential_sums(taps)
    # OpenVINO decides this once for the whole op, not per axis or per window.
    if not a.exclude_pad and any((*w.pads_begin, *w.pads_end)):
        count = np.array(float(np.prod(w.kernel, dtype=object)), acc)  # maybe inf in f32
    else:  # the taps inside the input (the others read the plane's end)
        plane = int(np.prod(w.sizes, dtype=np.int64))
        count = np.count_nonzero(positions < plane, axis=-1).astype(acc)
    if x.dtype.kind in "iu" and x.dtype.itemsize == 1:
        # The 8-bit kernel's reciprocal rounds some exact halves (2475/30) up.
        mean = sums * (np.ones((), acc) / count)
    else:
        mean = sums / count
    return to_input_type(spread(mean, inverse), x.dtype).reshape(x.shape[:2] + w.out)


def _kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
        return (restored(avg_pool(computed(x), a), x.dtype),)


def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo], outputs) -> int:
    """The input in the type pooled in and as planes with one more element each (in the
    accumulator type); every distinct window's taps (with their positions) and their
    running sums; per window the sum, count and mean; the means spread over each axis,
    rounded and cast back."""
    (x,) = inputs
    size = int(np.prod(x.shape, dtype=object))
    planes = x.shape[0] * x.shape[1]
    item = computed_type(x.element_type.dtype).itemsize
    acc = accumulator_dtype(computed_type(x.element_type.dtype)).itemsize
    windows, taps = window_counts(Windows.of(x.shape[2:], with_defaults(a)))
    out = int(np.prod(outputs[0].shape, dtype=object))
    return (size * item + (size + planes) * acc + windows * (taps * (3 * 8 + 1) + 8 + acc)
            + planes * windows * (2 * taps + 3) * acc + (len(x.shape) + 3) * out * acc)


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
            input_types=(POOL_TYPES,),
            scratch=scratch,
            warn=warn_empty_windows,
        )
    )
