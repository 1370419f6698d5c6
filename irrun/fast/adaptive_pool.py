"""The fast adaptive pools: gathers of whole rows of the transposed planes, tap by tap.

Compute what :func:`irrun.ops.adaptive_pool.adaptive_avg_pool` and
:func:`~irrun.ops.adaptive_pool.adaptive_max_pool` compute, bit for bit: sums add each
window's taps in row-major order from +0.0 and divide once; a maximum is the first
strict one from the window's first element.  Planes are worked on transposed, one row
per position, so a tap is one gather of whole contiguous rows for every plane and
window (see _Plan), over chunks of planes.

Apply where a window has no more taps than there are windows (a tap is a NumPy call; a
window of a million elements goes to the reference, which reduces it whole), and, for
the average, to a float input averaged whole (a sum over each plane, see
:func:`.avg_pool.row_sums`); an integer average to an all-ones output is the plugin's
ReduceMean, which only the reference computes.
"""

from __future__ import annotations

import functools
import itertools
from types import SimpleNamespace

import numpy as np

from ..ops.adaptive_pool import output_sizes, window_bounds
from ..ops.avg_pool import accumulator_dtype, to_input_type
from ..ops.window import computed, computed_type, restored
from .avg_pool import row_sums
from .chunks import each_chunk, in_flight, plane_chunks
from .registry import FastKernel, register_fast

# Bytes of input per chunk of planes (see fast.max_pool.CHUNK_BYTES).
CHUNK_BYTES = 1 << 20


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
def _plan(shape: tuple[int, ...], outs: tuple[int, ...], pad_index: bool) -> _Plan | None:
    """The plan for a pool, or None where the fast kernel does not apply."""
    sizes = shape[2:]
    if 0 in sizes:
        return None
    bounds = [window_bounds(size, out) for size, out in zip(sizes, outs, strict=True)]
    taps = int(np.prod([int((end - start).max()) for start, end in bounds], dtype=object))
    if taps > int(np.prod(outs, dtype=object)):
        return None
    return _Plan(shape, outs, pad_index)


def _rows(xc: np.ndarray, plane: int, dtype: np.dtype, zero_row: bool) -> np.ndarray:
    """Planes ``xc`` transposed to one row per position (and a row of zeros after)."""
    rows = np.empty((plane + zero_row, xc.shape[0]), dtype)
    np.copyto(rows[:plane], xc.reshape(xc.shape[0], plane).T, casting="unsafe")
    if zero_row:
        rows[plane] = 0
    return rows


def adaptive_avg_pool(plan: _Plan, x: np.ndarray) -> np.ndarray:
    """Average over adaptive windows as ``plan`` says (see the module's docstring)."""
    acc_dtype = accumulator_dtype(x.dtype)
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
    return to_input_type(out, x.dtype).reshape(x.shape[:2] + plan.outs)


def _whole_planes(x: np.ndarray) -> np.ndarray:
    """A float average of each whole plane: its elements added in order, divided once."""
    planes = x.shape[0] * x.shape[1]
    acc = accumulator_dtype(x.dtype)
    sums = row_sums(x.reshape(planes, -1).T, acc)
    sums /= np.array(x.size // planes, acc)
    return sums.astype(x.dtype, copy=False).reshape(x.shape[:2] + (1,) * (x.ndim - 2))


def adaptive_max_pool(plan: _Plan, x: np.ndarray, with_indices: bool = True) -> tuple:
    """The first strict maximum of each adaptive window and its index in the plane."""
    shape = x.shape[:2] + plan.outs
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


def _run_avg(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple | object:
    outs = output_sizes(target, x.ndim)
    work = computed_type(x.dtype)
    if work.kind == "f" and all(o == 1 for o in outs) and x.size:
        with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
            return (restored(_whole_planes(computed(x)), x.dtype),)
    plan = None if work.kind in "iu" and all(o == 1 for o in outs) else _plan(x.shape, outs, True)
    if plan is None:
        return NotImplemented
    with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
        return (restored(adaptive_avg_pool(plan, computed(x)), x.dtype),)


def _run_max(a: SimpleNamespace, x: np.ndarray, target: np.ndarray, needed=(True, True)):
    plan = _plan(x.shape, output_sizes(target, x.ndim), False)
    if plan is None:
        return NotImplemented
    with np.errstate(all="ignore"):  # NaN compares as a value here, never a warning
        values, index = adaptive_max_pool(plan, computed(x), with_indices=needed[1])
    index = None if index is None else index.astype(a.index_element_type.dtype)
    return restored(values, x.dtype), index


def scratch(a: SimpleNamespace, inputs, outputs) -> int:
    """A converted copy of the input, the results in the type pooled in (with indices), the
    plan's gather indices (one per window and tap), and per chunk in flight its transposed
    rows, gathered taps and offsets."""
    x = inputs[0]
    size = int(np.prod(x.shape, dtype=object))
    out = int(np.prod(outputs[0].shape, dtype=object))
    outs = outputs[0].shape[2:]
    windows = int(np.prod(outs, dtype=object))
    taps = int(np.prod([-(-n // o) + 1 for n, o in zip(x.shape[2:], outs, strict=True)],
                       dtype=object))
    return size * 8 + out * 16 + windows * taps * 8 + 12 * in_flight(size * 8, CHUNK_BYTES)


register_fast(
    FastKernel(
        "AdaptiveAvgPool", (8,),
        applies="no window longer than there are windows, or a float input averaged whole",
        run=_run_avg, scratch=scratch,
    )
)
register_fast(
    FastKernel(
        "AdaptiveMaxPool", (8,),
        applies="no window longer than there are windows",
        run=_run_max, scratch=scratch,
    )
)
