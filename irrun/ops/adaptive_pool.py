"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8.

Output ``o`` of an axis of size ``H`` pooled to ``O`` covers
``[floor(o*H/O), ceil((o+1)*H/O))``; windows may overlap and differ in length.
The average sums in f32 in row-major order and divides once.  The maximum
starts from the window's first element (so a leading NaN is returned) and is
replaced only by a strictly greater one; its index is flat within the (n, c)
plane.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from .. import element_types
from ..attributes import Attr
from ..dims import DYNAMIC, Dim
from ..registry import OpDef, ShapeError, TensorInfo, register
from .avg_pool import accumulator_dtype, to_input_type


def window_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) of each adaptive window on one axis.

    >>> [b.tolist() for b in window_bounds(7, 3)]
    [[0, 2, 4], [3, 5, 7]]
    """
    o = np.arange(out, dtype=np.int64)
    return (o * size) // out, -((-(o + 1) * size) // out)


def _output_sizes(value: np.ndarray, rank: int) -> tuple[int, ...]:
    sizes = tuple(int(v) for v in np.asarray(value).reshape(-1))
    if len(sizes) != rank - 2:
        raise ShapeError(
            f"output_shape has {len(sizes)} values {list(sizes)} but the input has "
            f"{rank - 2} spatial dims"
        )
    if any(s <= 0 for s in sizes):
        raise ShapeError(f"output_shape values must be positive, got {list(sizes)}")
    return sizes


def _infer(with_indices: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        x, target = inputs
        if target.shape is not None and len(target.shape) != 1:
            raise ShapeError(f"output_shape must be 1-D, got rank {len(target.shape)}")
        out: tuple[Dim, ...] | None = None  # OpenVINO keeps an unknown rank unknown
        if x.shape is not None:
            if len(x.shape) not in (3, 4, 5):
                raise ShapeError(f"expected a 3D, 4D or 5D input, got rank {len(x.shape)}")
            if target.shape is not None and target.shape[0] != len(x.shape) - 2:
                raise ShapeError(
                    f"output_shape has {target.shape[0]} values but the input has "
                    f"{len(x.shape) - 2} spatial dims"
                )
            if target.value is not None:
                spatial: tuple[Dim, ...] = _output_sizes(target.value, len(x.shape))
            else:
                spatial = (DYNAMIC,) * (len(x.shape) - 2)
            out = (*x.shape[:2], *spatial)
        infos = [TensorInfo(out, x.element_type)]
        if with_indices:
            infos.append(TensorInfo(out, a.index_element_type))
        return infos

    return infer


def _taps(sizes: Sequence[int], outs: Sequence[int], pad_index: bool):
    """Per-axis index arrays, one per tap, broadcastable over the output grid.

    Taps past a window's end point at ``size`` (a zero appended by the caller) when
    ``pad_index``, else repeat the window's last element, which a strict maximum ignores.
    """
    per_axis = []
    for axis, (size, out) in enumerate(zip(sizes, outs, strict=True)):
        start, end = window_bounds(size, out)
        shape = [1] * len(sizes)
        shape[axis] = out
        taps = []
        for j in range(int((end - start).max())):
            pos = start + j
            pos = np.where(pos < end, pos, size if pad_index else end - 1)
            taps.append(pos.reshape(shape))
        per_axis.append(taps)
    return per_axis


def adaptive_avg_pool(x: np.ndarray, out_sizes: Sequence[int]) -> np.ndarray:
    """Average over adaptive windows, summed in row-major order and divided once.

    >>> adaptive_avg_pool(np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8), (3,)).tolist()
    [[[2.0, 4.5, 7.0]]]
    """
    sizes = x.shape[2:]
    acc_dtype = accumulator_dtype(x.dtype)
    # One zero past the end of every spatial axis stands in for taps beyond a window.
    xz = np.pad(x.astype(acc_dtype, copy=False), [(0, 0), (0, 0)] + [(0, 1)] * len(sizes))
    acc = np.zeros(x.shape[:2] + tuple(out_sizes), acc_dtype)
    per_axis = _taps(sizes, out_sizes, pad_index=True)
    # inf - inf and overflow to inf are the IEEE results OpenVINO gives too, not errors.
    with np.errstate(invalid="ignore", over="ignore"):
        for tap in itertools.product(*per_axis):
            np.add(acc, xz[(Ellipsis, *tap)], out=acc)
    count = np.ones((), acc_dtype)
    for axis, (size, out) in enumerate(zip(sizes, out_sizes, strict=True)):
        start, end = window_bounds(size, out)
        shape = [1] * len(sizes)
        shape[axis] = out
        count = count * (end - start).astype(acc_dtype).reshape(shape)
    return to_input_type(acc / count, x.dtype)


def adaptive_max_pool(x: np.ndarray, out_sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    sizes = x.shape[2:]
    flat_strides = np.cumprod((1, *sizes[:0:-1]))[::-1]
    best = index = None
    for tap in itertools.product(*_taps(sizes, out_sizes, pad_index=False)):
        v = x[(Ellipsis, *tap)]
        tap_index = sum(p * int(fs) for p, fs in zip(tap, flat_strides, strict=True))
        if best is None:
            best = v.copy()
            index = np.broadcast_to(tap_index, v.shape).astype(np.int64)
            continue
        better = v > best
        np.copyto(best, v, where=better)
        np.copyto(index, np.broadcast_to(tap_index, v.shape), where=better)
    return best, index


def _avg_kernel(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    return (adaptive_avg_pool(x, _output_sizes(target, x.ndim)),)


def _max_kernel(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    values, index = adaptive_max_pool(x, _output_sizes(target, x.ndim))
    return values, index.astype(a.index_element_type.dtype)


def _check_max(a: SimpleNamespace) -> None:
    if a.index_element_type.name not in ("i32", "i64"):
        raise ValueError(f"index_element_type must be i32 or i64, got {a.index_element_type.name}")


register(
    OpDef(
        type="AdaptiveAvgPool",
        version=8,
        since_opset=8,
        attrs=(),
        infer=_infer(with_indices=False),
        kernel=_avg_kernel,
        inputs=(2, 2),
    )
)
register(
    OpDef(
        type="AdaptiveMaxPool",
        version=8,
        since_opset=8,
        attrs=(Attr("index_element_type", "element_type", element_types.ELEMENT_TYPES["i64"]),),
        infer=_infer(with_indices=True),
        kernel=_max_kernel,
        inputs=(2, 2),
        check=_check_max,
    )
)
