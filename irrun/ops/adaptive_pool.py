"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8.

Output ``o`` of an axis of size ``H`` pooled to ``O`` covers
``[floor(o*H/O), ceil((o+1)*H/O))``; windows may overlap and differ in length.
The average sums in f32 in row-major order and divides once.  The maximum
starts from the window's first element (so a leading NaN is returned) and is
replaced only by a strictly greater one; its index is flat within the (n, c)
plane.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .avg_pool import accumulator_dtype, to_input_type
from .window import plane_chunks


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


# Bytes of input per chunk of planes (see max_pool.CHUNK_BYTES).
CHUNK_BYTES = 1 << 22


class _Plan:
    """The windows of one adaptive pool, as flat positions in the plane, per tap.

    Tap ``t`` (row-major over the largest window) of output ``o`` is input position
    ``taps[t][o]`` of the plane.  A window shorter than the largest on some axis
    has taps past its end: for the average they point at position ``plane``, a
    zero the caller appends (adding +0.0 to a sum that starts at +0.0 changes
    nothing); for the maximum at the window's last element, which a first strict
    maximum never picks twice.

    Planes are worked on transposed, one row per position: a tap is then one
    gather of whole contiguous rows instead of one element per plane.
    """

    def __init__(self, shape: tuple[int, ...], outs: tuple[int, ...], pad_index: bool) -> None:
        sizes = shape[2:]
        self.planes = shape[0] * shape[1]
        self.plane = int(np.prod(sizes, dtype=np.int64))
        self.outs = outs
        self.out_count = int(np.prod(outs, dtype=np.int64))
        steps = np.cumprod([1, *sizes[:0:-1]])[::-1]
        per_axis, counts = [], np.ones((), np.int64)
        for axis, (size, out) in enumerate(zip(sizes, outs, strict=True)):
            start, end = window_bounds(size, out)
            shape_a = [1] * len(sizes)
            shape_a[axis] = out
            counts = counts * (end - start).reshape(shape_a)
            taps = []
            for j in range(int((end - start).max())):
                pos = start + j
                inside = pos < end
                pos = np.where(inside, pos, end - 1)
                taps.append(((pos * steps[axis]).reshape(shape_a), inside.reshape(shape_a)))
            per_axis.append(taps)
        self.taps = []
        for combo in itertools.product(*per_axis):
            index = np.broadcast_to(sum(p for p, _ in combo), outs).reshape(-1)
            if pad_index:
                inside = functools.reduce(np.logical_and, [i for _, i in combo])
                index = np.where(np.broadcast_to(inside, outs).reshape(-1), index, self.plane)
            self.taps.append(np.ascontiguousarray(index, np.intp))
        self.counts = counts.reshape(-1, 1)
        self.chunks = plane_chunks(self.planes, self.plane * 8, CHUNK_BYTES)


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple[int, ...], outs: tuple[int, ...], pad_index: bool) -> _Plan:
    return _Plan(shape, outs, pad_index)


def _rows(xc: np.ndarray, plane: int, dtype: np.dtype, zero_row: bool) -> np.ndarray:
    """Planes ``xc`` transposed to one row per position (and a row of zeros after)."""
    rows = np.empty((plane + zero_row, xc.shape[0]), dtype)
    np.copyto(rows[:plane], xc.reshape(xc.shape[0], plane).T, casting="unsafe")
    if zero_row:
        rows[plane] = 0
    return rows


def adaptive_avg_pool(x: np.ndarray, out_sizes: Sequence[int]) -> np.ndarray:
    """Average over adaptive windows, summed in row-major order and divided once.

    >>> adaptive_avg_pool(np.arange(1, 9, dtype=np.float32).reshape(1, 1, 8), (3,)).tolist()
    [[[2.0, 4.5, 7.0]]]
    """
    plan = _plan(x.shape, tuple(out_sizes), True)
    acc_dtype = accumulator_dtype(x.dtype)
    xp = x.reshape(plan.planes, plan.plane)
    out = np.empty((plan.planes, plan.out_count), acc_dtype)
    counts = plan.counts.astype(acc_dtype)
    # inf - inf and overflow to inf are the IEEE results OpenVINO gives too, not errors.
    with np.errstate(invalid="ignore", over="ignore"):
        for ch in plan.chunks:
            if plan.out_count == 1:
                # One window holds the whole plane (global pooling): its positions are
                # the rows, and reducing a C-ordered array over its first axis adds
                # them one row at a time, in the plugin's order, in one call.
                acc = np.add.reduce(_rows(xp[ch], plan.plane, acc_dtype, False), axis=0)
                acc += 0.0  # the plugin's sum starts at +0.0: no -0.0 total
                acc /= counts[0]
                np.copyto(out[ch], acc[:, None])
                continue
            rows = _rows(xp[ch], plan.plane, acc_dtype, zero_row=True)
            acc = np.take(rows, plan.taps[0], axis=0)
            acc += 0.0  # the plugin's sum starts at +0.0: no -0.0 total
            gathered = np.empty_like(acc)
            for index in plan.taps[1:]:
                np.take(rows, index, axis=0, out=gathered)
                acc += gathered
            acc /= counts
            np.copyto(out[ch], acc.T)
    return to_input_type(out, x.dtype).reshape(x.shape[:2] + tuple(out_sizes))


def adaptive_max_pool(
    x: np.ndarray, out_sizes: Sequence[int], with_indices: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """The first strict maximum of each adaptive window and its index in the plane.

    Like the plugin, the running maximum starts at the window's first element, so a
    leading NaN is the result; after it NaN never wins.

    >>> v, i = adaptive_max_pool(np.array([[[1, 3, 3, 2, np.nan, 0]]], np.float32), (2,))
    >>> v.tolist(), i.tolist()
    ([[[3.0, 2.0]]], [[[1, 3]]])
    """
    plan = _plan(x.shape, tuple(out_sizes), False)
    xp = x.reshape(plan.planes, plan.plane)
    values = np.empty((plan.planes, plan.out_count), x.dtype)
    index = np.empty((plan.planes, plan.out_count), np.int64) if with_indices else None
    floats = x.dtype.kind == "f"
    for ch in plan.chunks:
        rows = _rows(xp[ch], plan.plane, x.dtype, zero_row=False)
        taps = [np.take(rows, t, axis=0) for t in plan.taps]
        first = taps[0]
        best = first.copy()
        for t in taps[1:]:
            np.fmax(best, t, out=best)
        if floats:
            nan_first = np.isnan(first)
            if nan_first.any():  # a leading NaN stays: nothing is greater than it
                best[nan_first] = first[nan_first]
        sel = None
        if with_indices or floats:
            # The first tap equal to the maximum (NaN equals nothing: the first tap).
            sel = np.broadcast_to(plan.taps[0][:, None], best.shape).astype(np.int64)
            for t in range(len(taps) - 1, -1, -1):
                diff = plan.taps[t][:, None] - sel
                diff *= np.equal(taps[t], best)
                sel += diff
        if floats:
            zero = best == 0  # fmax may pick either zero of a tie; the first one wins
            if zero.any():
                best[zero] = np.take_along_axis(rows, sel, axis=0)[zero]
        np.copyto(values[ch], best.T)
        if with_indices:
            np.copyto(index[ch], sel.T)
    shape = x.shape[:2] + tuple(out_sizes)
    return values.reshape(shape), (None if index is None else index.reshape(shape))


def _avg_kernel(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    return (adaptive_avg_pool(x, _output_sizes(target, x.ndim)),)


def _max_kernel(
    a: SimpleNamespace, x: np.ndarray, target: np.ndarray, needed=(True, True)
) -> tuple:
    values, index = adaptive_max_pool(x, _output_sizes(target, x.ndim), with_indices=needed[1])
    return values, (None if index is None else index.astype(a.index_element_type.dtype))


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
        optional_outputs=True,
    )
)
