"""Slicing: Slice-v8, SliceScatter-v15 and StridedSlice-v1.

- **Slice-v8** slices ``data`` along ``axes`` (default ``0..len(start)-1``; negative axes
  count from the end, repeats are an error) much as Python slices: a negative start or
  stop counts from the end, then both are clamped into the dim, so ``stop=INT64_MAX``
  means "to the end" and ``stop=INT64_MIN`` with a negative step "through element 0", as
  converted models write.  Unlike Python, with a negative step a start before the dim is
  clamped to element 0 (which is then taken: ``[-9:-9:-1]`` of 4 elements is ``[x0]``),
  and the stop to "before element 0"; StridedSlice shares this rule.
  A step of 0 is an error.  For a dim known only within bounds the output dim is the
  exact range of lengths over those bounds (OpenVINO at times gives up and says ``?``;
  both agree with any declared dim that can occur).
- **SliceScatter-v15** is Slice's inverse: a copy of ``data`` whose slice (the elements
  Slice would take, by the same rule) is replaced by ``updates``, which must have that
  slice's shape and ``data``'s element type.  With a negative step, ``updates[0]`` goes to
  the slice's first element, the one nearest the end of the dim.  OpenVINO's shape
  inference lets ``updates`` of another element type through; irrun refuses them, as the
  spec gives both one type.
- **StridedSlice-v1** slices by ``begin``, ``end`` and ``strides`` (1 where absent) as
  NumPy's basic indexing does, under its masks: a bit of ``begin_mask`` or ``end_mask``
  leaves that bound out, ``new_axis_mask`` inserts a dim of 1, ``shrink_axis_mask`` takes
  the element at ``begin`` and drops the dim, and ``ellipsis_mask`` (one bit at most)
  stands for the dims the spec does not name.

Where irrun follows OpenVINO's reference kernels rather than the CPU plugin: Slice with a
stop of INT64_MAX given at run time (not a constant): the plugin narrows it to 32 bits
(-1) and drops the last element.  SliceScatter with start, stop or step given at run time
(not constants): the plugin returns the data unchanged (2026.4) or crashes; it crashes on
an empty slice too.  irrun writes the slice as the spec says (OpenVINO's
``evaluate`` has no SliceScatter to compare with).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval
from ..ir.element_types import ANY
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing
from ._shapes import (
    ALL_INTEGERS,
    dim_within,
    flat_ints,
    fmt,
    int_values,
    merge_dims,
    normalize_axis,
    upper_bound,
    vector_length,
    vector_rank,
)

# The largest a dim can be (64-bit signed, as in OpenVINO and NumPy): an interval with
# no upper bound is searched up to it, and a bound near it means no bound.
_LARGEST = (1 << 63) - 1


def _up_to(d: Dim) -> Dim:
    """A dim that may be anything from 0 to ``d``'s upper bound."""
    return dim_within(0, upper_bound(d))


# --------------------------------------------------------------------------- Slice


def slice_length(d: int, start: int, stop: int, step: int) -> int:
    """How many elements ``[start:stop:step]`` takes from a dim of size ``d``.

    >>> slice_length(5, 1, (1 << 63) - 1, 1), slice_length(5, -1, -(1 << 63), -1)
    (4, 5)
    >>> slice_length(4, -9, -9, -1)  # Python would take nothing
    1
    """
    r = resolve_slice(slice(start, stop, step), d)
    return len(range(r.start, -1 if r.stop is None else r.stop, r.step))


def slice_dim(d: Dim, start: int, stop: int, step: int) -> Dim:
    """The output dim of slicing a dim that may be an interval.

    The length is monotonic in the dim between the sizes where clamping a bound starts or
    stops (near ``|start|`` and ``|stop|``), so its range over an interval is found by
    trying the interval's ends and those sizes.
    """
    if isinstance(d, int):
        return slice_length(d, start, stop, step)
    lo, hi = d.lo, _LARGEST if d.hi is None else d.hi
    sizes = {lo, hi}
    for edge in (abs(start), abs(stop)):
        sizes.update(v for v in (edge - 1, edge, edge + 1, edge + 2) if lo <= v <= hi)
    lengths = [slice_length(v, start, stop, step) for v in sizes]
    return dim_within(min(lengths), max(lengths))


def _slice_axes(inputs: Sequence[TensorInfo], rank: int, n: int) -> list[int] | None:
    """The axes the i-th start/stop/step apply to (None: not known before running)."""
    if len(inputs) < 5:
        return list(range(n))
    values = int_values(inputs[4])
    if values is None:
        return None
    return _checked_axes(values, rank)


def _checked_axes(values: Sequence[int], rank: int) -> list[int]:
    axes = [normalize_axis(v, rank, "axes value") for v in values]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"axes {list(values)} must be unique")
    return axes


def _check_slice_params(start, stop, step, rank: int) -> None:
    if not len(start) == len(stop) == len(step):
        raise ShapeError(f"start {list(start)}, stop {list(stop)} and step {list(step)} "
                         "must have the same length")  # fmt: skip
    if len(start) > rank:
        raise ShapeError(f"start {list(start)} has more values than the data's rank {rank}")
    if any(s == 0 for s in step):
        raise ShapeError(f"step {list(step)} must not contain 0")


def _slice_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    names = ("start", "stop", "step", "axes")
    for info, what in zip(inputs[1:], names, strict=False):
        vector_rank(info, what, allow_scalar=False)
    lengths = {n for n in (vector_length(i) for i in inputs[1:]) if n is not None}
    if len(lengths) > 1:
        raise ShapeError(f"start, stop, step and axes must have the same length, got "
                         f"{', '.join(fmt(i.shape or ()) for i in inputs[1:])}")  # fmt: skip
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    rank = len(x.shape)
    n = lengths.pop() if lengths else None
    if n is not None and n > rank:
        raise ShapeError(f"start has {n} values, more than the data's rank {rank}")
    start, stop, step = (int_values(i) for i in inputs[1:4])
    if step is not None and 0 in step:
        raise ShapeError(f"step {step} must not contain 0")
    axes = _slice_axes(inputs, rank, n) if n is not None else None
    if axes is None:  # any dim may be sliced
        return [TensorInfo(tuple(_up_to(d) for d in x.shape), x.element_type)]
    out = list(x.shape)
    if start is None or stop is None or step is None:
        for ax in axes:
            out[ax] = _up_to(x.shape[ax])
        return [TensorInfo(tuple(out), x.element_type)]
    _check_slice_params(start, stop, step, rank)
    for ax, b, e, s in zip(axes, start, stop, step, strict=True):
        out[ax] = slice_dim(x.shape[ax], b, e, s)
    return [TensorInfo(tuple(out), x.element_type)]


def _slice_index(x: np.ndarray, start, stop, step, axes) -> tuple[slice, ...]:
    """The NumPy index of Slice's elements of ``x``."""
    b, e, s = flat_ints(start), flat_ints(stop), flat_ints(step)
    _check_slice_params(b, e, s, x.ndim)
    ax = list(range(len(b))) if axes is None else _checked_axes(flat_ints(axes), x.ndim)
    if len(ax) != len(b):
        raise ShapeError(f"axes {flat_ints(axes)} and start {b} must have the same length")
    index: list[slice] = [slice(None)] * x.ndim
    for i, bi, ei, si in zip(ax, b, e, s, strict=True):
        index[i] = resolve_slice(slice(bi, ei, si), x.shape[i])
    return tuple(index)


def _slice(a: SimpleNamespace, x, start, stop, step, axes=None) -> tuple[np.ndarray, ...]:
    return (np.ascontiguousarray(x[_slice_index(x, start, stop, step, axes)]),)


# --------------------------------------------------------------------------- SliceScatter


def _slice_scatter_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, updates = inputs[:2]
    td, tu = data.element_type, updates.element_type
    if td is not None and tu is not None and td.name != tu.name:
        raise ShapeError(f"updates are {tu.name} but data is {td.name}; they must be the same type")
    (want,) = _slice_infer(a, [data, *inputs[2:]])
    if want.shape is not None and updates.shape is not None:
        what = f"updates {fmt(updates.shape)} must have the slice's shape {fmt(want.shape)}"
        if len(want.shape) != len(updates.shape):
            raise ShapeError(what)
        for w, u in zip(want.shape, updates.shape, strict=True):
            merge_dims(w, u, what)
    elif (data.shape is not None and updates.shape is not None
          and len(data.shape) != len(updates.shape)):  # fmt: skip
        raise ShapeError(f"updates {fmt(updates.shape)} must have the rank of data "
                         f"{fmt(data.shape)}")  # fmt: skip
    return [TensorInfo(data.shape, td)]


def _slice_scatter(a: SimpleNamespace, data, updates, start, stop, step, axes=None):
    index = _slice_index(data, start, stop, step, axes)
    out = data.copy()
    target = out[index]
    if target.shape != updates.shape:
        raise KernelError(f"updates {list(updates.shape)} must have the slice's shape "
                          f"{list(target.shape)}")  # fmt: skip
    out[index] = updates
    return (out,)


# --------------------------------------------------------------------------- StridedSlice


def _mask_set(mask: Sequence[int]) -> set[int]:
    return {i for i, v in enumerate(mask) if v}


def slice_plan(a: SimpleNamespace, rank: int, begin, end, strides) -> list:
    """One entry per item of the slice spec, ellipsis expanded, in NumPy's terms:
    ``None`` (new axis), an int (shrink) or a ``slice`` per consumed input dim."""
    n = len(begin)
    if len(end) != n or (strides is not None and len(strides) != n):
        raise ShapeError(
            f"begin {list(begin)}, end {list(end)} and strides "
            f"{list(strides or [])} must have the same length"
        )
    strides = strides if strides is not None else [1] * n
    if any(s == 0 for s in strides):
        raise ShapeError(f"strides {list(strides)} must not contain 0")
    begin_m, end_m = _mask_set(a.begin_mask), _mask_set(a.end_mask)
    new_m, shrink_m = _mask_set(a.new_axis_mask), _mask_set(a.shrink_axis_mask)
    ellipsis_m = {i for i in _mask_set(a.ellipsis_mask) if i < n}
    if len(ellipsis_m) > 1:
        raise ShapeError(f"ellipsis_mask {list(a.ellipsis_mask)} sets more than one ellipsis")
    consumed = sum(1 for i in range(n) if i not in new_m and i not in ellipsis_m)
    plan: list = []
    for i in range(n):
        if i in ellipsis_m:
            plan.extend([slice(None, None, 1)] * max(rank - consumed, 0))
        elif i in new_m:
            plan.append(None)
        elif i in shrink_m:
            # The CPU plugin reads a masked begin as 0 here, whatever the stride.
            plan.append(0 if i in begin_m else int(begin[i]))
        else:
            plan.append(slice(None if i in begin_m else int(begin[i]),
                              None if i in end_m else int(end[i]), int(strides[i])))  # fmt: skip
    used = sum(1 for p in plan if p is not None)
    if used > rank:
        raise ShapeError(f"the slice spec addresses {used} dims of a rank-{rank} input")
    plan.extend([slice(None, None, 1)] * (rank - used))
    return plan


def resolve_slice(item: slice, d: int) -> slice:
    """A slice with OpenVINO's bounds for a dim of size ``d``.

    Negative bounds count from the end and are then clamped into the dim, so unlike
    NumPy a begin before the start with a negative stride still takes element 0.

    >>> resolve_slice(slice(-7, None, -1), 1), resolve_slice(slice(-7, 2, 1), 5)
    (slice(0, None, -1), slice(0, 2, 1))
    """
    begin, end, step = item.start, item.stop, item.step
    if begin is not None and begin < 0:
        begin += d
    if end is not None and end < 0:
        end += d
    if step > 0:
        begin = 0 if begin is None else min(max(begin, 0), d)
        end = d if end is None else min(max(end, 0), d)
        return slice(begin, end, step)
    begin = d - 1 if begin is None else min(max(begin, 0), d - 1)
    end = -1 if end is None else min(max(end, -1), d - 1)
    # A stop of -1 means "through element 0", which a slice can only say with None.
    return slice(begin, None if end < 0 else end, step)


def _strided_dim(item, d: Dim) -> Dim | None:
    """Output size of one input dim under one plan item (None: the dim is removed)."""
    if isinstance(item, int):
        if isinstance(d, int) and not -d <= item < d:
            raise ShapeError(f"shrink index {item} is out of range for a dim of size {d}")
        return None
    if isinstance(d, int):
        r = resolve_slice(item, d)
        return len(range(r.start, -1 if r.stop is None else r.stop, r.step))
    if item == slice(None, None, 1):
        return d
    start, stop, step = item.start, item.stop, item.step
    if step > 0 and (start is None or start >= 0) and (stop is None or stop >= 0):
        # With non-negative bounds the length only grows with the dim.
        lo = _strided_dim(item, d.lo)
        if d.hi is not None:
            hi = _strided_dim(item, d.hi)
        elif stop is not None:
            hi = _strided_dim(item, stop)
        else:
            hi = None
        assert isinstance(lo, int)
        return lo if lo == hi else Interval(lo, hi)
    return DYNAMIC


def _strided_slice_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, b_info, e_info = inputs[:3]
    s_info = inputs[3] if len(inputs) > 3 else None
    for info, what in ((b_info, "begin"), (e_info, "end"), (s_info, "strides")):
        if info is not None:
            vector_rank(info, what, allow_scalar=False)
    begin, end = int_values(b_info), int_values(e_info)
    strides = int_values(s_info) if s_info is not None else None
    if x.shape is None or begin is None or end is None or (s_info is not None and strides is None):
        return [TensorInfo(None, x.element_type)]
    plan = slice_plan(a, len(x.shape), begin, end, strides)
    out: list[Dim] = []
    dims = iter(x.shape)
    for item in plan:
        if item is None:
            out.append(1)
            continue
        size = _strided_dim(item, next(dims))
        if size is not None:
            out.append(size)
    return [TensorInfo(tuple(out), x.element_type)]


def _strided_slice(a: SimpleNamespace, x, begin, end, strides=None) -> tuple[np.ndarray, ...]:
    plan = slice_plan(a, x.ndim, flat_ints(begin), flat_ints(end),
                      None if strides is None else flat_ints(strides))  # fmt: skip
    dims = iter(x.shape)
    index = []
    for item in plan:
        if item is not None:
            d = next(dims)
            _strided_dim(item, d)  # raises for a shrink index out of range
            if isinstance(item, slice):
                item = resolve_slice(item, d)
        index.append(item)
    return (np.ascontiguousarray(x[tuple(index)]),)


def _check_strided_slice(a: SimpleNamespace) -> None:
    for name in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask"):
        mask = getattr(a, name)
        if any(v not in (0, 1) for v in mask):
            raise KernelError(f"{name} {list(mask)} must hold only 0 and 1")
    if sum(a.ellipsis_mask) > 1:
        raise KernelError(f"ellipsis_mask {list(a.ellipsis_mask)} sets more than one ellipsis")


# --------------------------------------------------------------------------- registration

register(OpDef(type="Slice", version=8, since_opset=8, attrs=(), infer=_slice_infer,
               kernel=_slice, inputs=(4, 5),
               input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS),
               scratch=nothing))  # fmt: skip
register(OpDef(type="SliceScatter", version=15, since_opset=15, attrs=(),
               infer=_slice_scatter_infer, kernel=_slice_scatter, inputs=(5, 6),
               input_types=(ANY, ANY, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS),
               fresh_output=True, scratch=nothing))  # fmt: skip
register(OpDef(type="StridedSlice", version=1, since_opset=1,
               attrs=(Attr("begin_mask", "ints"), Attr("end_mask", "ints"),
                      Attr("new_axis_mask", "ints", ()), Attr("shrink_axis_mask", "ints", ()),
                      Attr("ellipsis_mask", "ints", ())),
               infer=_strided_slice_infer, kernel=_strided_slice, inputs=(3, 4),
               check=_check_strided_slice,
               shape_attrs=("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask",
                            "ellipsis_mask"),
               input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS),
               scratch=nothing))  # fmt: skip
