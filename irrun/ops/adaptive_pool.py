"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8.

Output ``o`` of an axis of size ``H`` pooled to ``O`` covers
``[floor(o*H/O), ceil((o+1)*H/O))``; windows may overlap and differ in length.
The average sums in f32 in row-major order and divides once.  The maximum
starts from the window's first element (so a leading NaN is returned) and is
replaced only by a strictly greater one; its index is flat within the (n, c)
plane.  An integer average to an all-ones output is the plugin's ReduceMean
(see :func:`_integer_mean`).  Windows longer than there are windows go
through :mod:`.pool_windows`, one window at a time.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import pool_windows
from .avg_pool import accumulator_dtype, to_input_type
from .window import POOL_TYPES, computed, each_chunk, plane_chunks, restored


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
                boolean = x.element_type is not None and x.element_type.name == "boolean"
                if boolean and not with_indices and all(s == 1 for s in spatial):
                    # The plugin makes it a ReduceMean (see _integer_mean), which
                    # refuses booleans: the model does not compile.
                    raise ShapeError(
                        "a boolean average to an all-ones output_shape is a ReduceMean in "
                        "OpenVINO's CPU plugin, which takes numbers only"
                    )
            else:
                spatial = (DYNAMIC,) * (len(x.shape) - 2)
            out = (*x.shape[:2], *spatial)
        infos = [TensorInfo(out, x.element_type)]
        if with_indices:
            infos.append(TensorInfo(out, a.index_element_type))
        return infos

    return infer


# Bytes of input per chunk of planes (see max_pool.CHUNK_BYTES).
CHUNK_BYTES = 1 << 20


def window_by_window(taps: int, windows: int) -> bool:
    """Whether the windows go through :mod:`.pool_windows` (more taps than windows)."""
    return taps > max(windows, 1)


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
        self.chunks = plane_chunks(self.planes, self.plane * 8, CHUNK_BYTES)
        bounds = [window_bounds(size, out) for size, out in zip(sizes, outs, strict=True)]
        # A tap per position of the largest window is a NumPy call each: with more taps
        # than windows (a window of a million elements), window by window instead.
        taps = int(np.prod([int((end - start).max()) for start, end in bounds], dtype=object))
        self.general = None
        if window_by_window(taps, self.out_count):
            self.general = pool_windows.Windows(
                sizes, [(start, end - start, 1) for start, end in bounds])
            return
        steps = np.cumprod([1, *sizes[:0:-1]])[::-1]
        per_axis, counts = [], np.ones((), np.int64)
        for axis, ((start, end), out) in enumerate(zip(bounds, outs, strict=True)):
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
    if x.dtype.kind in "iu" and all(o == 1 for o in out_sizes) and x.size:
        return _integer_mean(x)
    plan = _plan(x.shape, tuple(out_sizes), True)
    acc_dtype = accumulator_dtype(x.dtype)
    if plan.general is not None:
        return _adaptive_avg_windows(plan, x, acc_dtype)
    xp = x.reshape(plan.planes, plan.plane)
    out = np.empty((plan.planes, plan.out_count), acc_dtype)
    counts = plan.counts.astype(acc_dtype)

    def average(ch: slice) -> None:
        # inf - inf and overflow to inf are the IEEE results OpenVINO gives too, not errors.
        with np.errstate(invalid="ignore", over="ignore"):
            rows = _rows(xp[ch], plan.plane, acc_dtype, zero_row=True)
            acc = np.take(rows, plan.taps[0], axis=0)
            acc += 0.0  # the plugin's sum starts at +0.0: no -0.0 total
            gathered = np.empty_like(acc)
            for index in plan.taps[1:]:
                np.take(rows, index, axis=0, out=gathered)
                acc += gathered
            acc /= counts
            np.copyto(out[ch], acc.T)

    each_chunk(plan.planes, plan.plane * 8, plan.chunks, average, CHUNK_BYTES)
    return to_input_type(out, x.dtype).reshape(x.shape[:2] + tuple(out_sizes))


def _integer_mean(x: np.ndarray) -> np.ndarray:
    """The integer average of whole planes, as OpenVINO's CPU plugin computes it.

    With a constant all-ones ``output_shape`` the plugin's AdaptivePoolToReduce pass
    makes the pool a ReduceMean, whose integer kernel differs from the pooling one
    (which rounds an f32 mean half to even): it adds the plane in f32, stores that
    sum in the data type (saturating 8-bit types; i32 gets x86's conversion, whose
    out-of-range result is the minimum), divides it by the count in f32, and
    truncates toward zero.  So u8 [200, 200] averages to 255 / 2 = 127 and i32
    [-1, -2] to -1.  Swept against the plugin (AVX2) for every integer type (16-bit
    and unsigned 32/64-bit run as i32, see :func:`..window.computed`) and every
    output size from 1 to the input's, in 1-D, 2-D and 3-D; only all-ones sizes go
    this way.  Not matched: i8 planes of 2-D and 3-D inputs whose partial sums leave
    i8's range, where the plugin's JIT kernel adds in an order (and with
    intermediate stores) that depends on its vector code; OpenVINO's reference has
    no i8 ReduceMean to settle it.  A non-constant ``output_shape`` keeps the
    pooling kernel in the plugin; irrun cannot tell and takes the constant, usual
    in IR files.  irrun's i64 keeps its range (the plugin runs it as i32).
    """
    planes = x.shape[0] * x.shape[1]
    sums = pool_windows.row_sums(x.reshape(planes, -1).T, np.dtype(np.float32))
    info = np.iinfo(x.dtype)
    if x.dtype.itemsize == 1:
        stored = np.clip(sums, info.min, info.max)
    else:  # out of range (f32's 2**31 included): the type's minimum
        wide = sums.astype(np.float64)  # compared exactly, not in f32
        stored = np.where((wide >= info.min) & (wide <= info.max), sums, info.min)
    count = np.float32(x.size // planes)
    mean = np.trunc(stored.astype(np.float32) / count)
    mean = np.where(mean.astype(np.float64) <= info.max, mean, info.min)  # 2**31 / 1 too
    return mean.astype(x.dtype).reshape(x.shape[:2] + (1,) * (x.ndim - 2))


def _adaptive_avg_windows(plan: _Plan, x: np.ndarray, acc_dtype: np.dtype) -> np.ndarray:
    """:func:`adaptive_avg_pool` window by window (see :mod:`.pool_windows`)."""
    win = plan.general
    xp = x.reshape(plan.planes, *x.shape[2:])
    sums = np.empty((plan.planes, *win.shape), acc_dtype)
    counts = functools.reduce(np.multiply.outer, win.counts).astype(acc_dtype)

    def window_sums(ch: slice) -> None:
        with np.errstate(invalid="ignore", over="ignore"):
            sums[ch] = win.sums(xp[ch].astype(acc_dtype, copy=False), acc_dtype)

    each_chunk(plan.planes, plan.plane * 8, plan.chunks, window_sums, CHUNK_BYTES)
    with np.errstate(invalid="ignore", over="ignore"):
        sums /= counts
    return to_input_type(win.expand(sums), x.dtype).reshape(x.shape[:2] + plan.outs)


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
    shape = x.shape[:2] + tuple(out_sizes)
    if plan.general is not None:
        win = plan.general
        xp = x.reshape(plan.planes, *x.shape[2:])
        values = np.empty((plan.planes, *win.shape), x.dtype)
        where = np.empty((plan.planes, *win.shape), np.int64)

        def maxima(ch: slice) -> None:
            values[ch], where[ch] = win.maxima(xp[ch])

        each_chunk(plan.planes, plan.plane * 8, plan.chunks, maxima, CHUNK_BYTES)
        index = win.expand(where).reshape(shape) if with_indices else None
        return win.expand(values).reshape(shape), index
    xp = x.reshape(plan.planes, plan.plane)
    values = np.empty((plan.planes, plan.out_count), x.dtype)
    index = np.empty((plan.planes, plan.out_count), np.int64) if with_indices else None
    floats = x.dtype.kind == "f"

    def maxima_of(ch: slice) -> None:
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

    each_chunk(plan.planes, plan.plane * 8, plan.chunks, maxima_of, CHUNK_BYTES)
    return values.reshape(shape), (None if index is None else index.reshape(shape))


def _avg_kernel(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
        return (restored(adaptive_avg_pool(computed(x), _output_sizes(target, x.ndim)), x.dtype),)


def _max_kernel(
    a: SimpleNamespace, x: np.ndarray, target: np.ndarray, needed=(True, True)
) -> tuple:
    with np.errstate(all="ignore"):  # NaN compares as a value here, never a warning
        values, index = adaptive_max_pool(computed(x), _output_sizes(target, x.ndim),
                                          with_indices=needed[1])  # fmt: skip
    index = None if index is None else index.astype(a.index_element_type.dtype)
    return restored(values, x.dtype), index


def _check_max(a: SimpleNamespace) -> None:
    if a.index_element_type.name not in ("i32", "i64"):
        raise KernelError(f"index_element_type must be i32 or i64, got {a.index_element_type.name}")


register(
    OpDef(
        type="AdaptiveAvgPool",
        version=8,
        since_opset=8,
        attrs=(),
        infer=_infer(with_indices=False),
        kernel=_avg_kernel,
        inputs=(2, 2),
        # output_shape: OpenVINO reads the values of any type.
        input_types=(POOL_TYPES, None),
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
        input_types=(POOL_TYPES, None),
    )
)
