"""Indexing and index-making ops: Slice-v8, Range-v0/v4, Tile-v0, Roll-v7, OneHot-v1/v16
and NonZero-v3 (OpenVINO's C++ versions; Range-v0 is opset1's, Range-v4 opset4's).

Semantics, as OpenVINO computes them:

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
- **Range** makes ``ceil(|stop - start| / |step|)`` values (0 when the step points away
  from ``stop``), counted in double precision from the inputs' values.  Range-v0 takes
  three scalars of one type, which is the output type; Range-v4 takes any numeric types
  and has ``output_type``: for an integer output type start, stop and step are first
  truncated toward zero (so a step such as 0.7 becomes 0 and the range is empty), and
  the values wrap into the type (``u8`` from -2 is 254).  Value ``i`` is
  ``start + T(i) * step`` computed in the output type ``T`` (f16 and bf16 in f32, rounded
  once), as the reference kernel does.
  The output length is static only when all three inputs are constants; otherwise it is
  known only when the kernel runs.
- **Tile-v0** repeats ``data`` by ``repeats`` (aligned at the end; the shorter of the two
  is padded with ones in front).  A negative repeat counts as 0, as OpenVINO's shape
  inference says (its kernels disagree, see below).
- **Roll-v7** shifts elements cyclically along ``axes``; a repeated axis adds its shifts.
  A 1-D shift needs axes of its size.  A scalar shift is accepted by the shape rule with
  any axes, but at run time only with a single axis: the specification would apply it to
  every axis, yet the plugin refuses more than one (and the reference kernel any scalar).
- **OneHot** puts ``on_value`` where the new axis's position equals the index and
  ``off_value`` elsewhere; the output has ``on_value``'s type.  An index outside
  ``[0, depth)`` gives a row of ``off_value``: OneHot-v1 (and OneHot-v16's default
  ``ignore_negative``) ignores negative indices; OneHot-v16 with ``normalize`` first adds
  ``depth`` to an index in ``[-depth, -1]``.
- **NonZero-v3** lists the coordinates of the non-zero elements (NaN counts, -0.0 does
  not) as a ``[rank, count]`` tensor of ``output_type``, in row-major order.  ``count``
  is data-dependent: the shape rule gives ``[rank, 0..N]`` with N the input's element
  count (its upper bound when dims are dynamic), which the memory plan uses as a bound.

Tolerance against the CPU plugin: exact, except Range with a float output type, whose
values the plugin computes in another order (one unit in the last place).  Kernels of
inputs that are not constants check what the shape rule could not (a step of 0, shift
and axes of different lengths) and raise at the layer.

Where irrun follows OpenVINO's reference kernels rather than the CPU plugin:

- Range-v4 with non-integer inputs and an integer ``output_type``: the plugin counts and
  computes in floating point and rounds each value to nearest (start 2.9, stop 7.9, step
  1.9 as i64 gives ``[3, 5, 7]``), where the reference kernels and OpenVINO's shape
  inference (and so constant folding) truncate the inputs first (``[2, 3, 4, 5, 6]``).
  Range with f32 values near 1e8: the plugin accumulates the step (1e8 + 1 + 1 ... stays
  1e8), the reference computes each value from its index.
- Tile with a negative repeat: the plugin returns uninitialised memory, the reference a
  tensor of the input's shape; shape inference says the dim is 0, which irrun follows.
- Range (both versions) where the step points away from ``stop`` (0 to 10 by -1): the
  plugin makes ``|stop - start| / |step|`` values (0, -1, ... -9), the reference none.
- Range-v4 to u8 of negative values: the plugin saturates them to 0, the reference wraps
  them (-3 is 253).
- Slice with a stop of INT64_MAX given at run time (not a constant): the plugin narrows
  it to 32 bits (-1) and drops the last element.
- Roll with a scalar shift: the reference kernel fails; irrun runs it as the plugin does
  (with one axis).

And where it follows the plugin: NonZero of a scalar gives ``[1, count]`` as the plugin
does; the reference kernel gives ``[0, 0]`` for a zero scalar.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, Shape, map_bounds
from ..ir.element_types import ELEMENT_TYPES, ElementType
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .movement import (
    check_vector,
    flat_ints,
    fmt,
    int_values,
    normalize_axis,
    resolve_slice,
    vector_length,
)

INTEGERS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
NUMBERS = ("f64", "f32", "f16", "bf16", *INTEGERS)
INDEX_TYPES = ("i32", "i64")
# The largest a dim can be (64-bit signed, as in OpenVINO and NumPy): an interval with
# no upper bound is searched up to it, and a bound near it means no bound.
_LARGEST = (1 << 63) - 1


def _hi(d: Dim) -> int | None:
    return d if isinstance(d, int) else d.hi


def _interval(lo: int, hi: int | None) -> Dim:
    if hi is not None and hi >= 1 << 62:
        hi = None
    return lo if lo == hi else Interval(lo, hi)


def _up_to(d: Dim) -> Dim:
    """A dim that may be anything from 0 to ``d``'s upper bound."""
    return _interval(0, _hi(d))


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
    return _interval(min(lengths), max(lengths))


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
        check_vector(info, what, allow_scalar=False)
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


def _slice(a: SimpleNamespace, x, start, stop, step, axes=None) -> tuple[np.ndarray, ...]:
    b, e, s = flat_ints(start), flat_ints(stop), flat_ints(step)
    _check_slice_params(b, e, s, x.ndim)
    ax = list(range(len(b))) if axes is None else _checked_axes(flat_ints(axes), x.ndim)
    if len(ax) != len(b):
        raise ShapeError(f"axes {flat_ints(axes)} and start {b} must have the same length")
    index: list[slice] = [slice(None)] * x.ndim
    for i, bi, ei, si in zip(ax, b, e, s, strict=True):
        index[i] = resolve_slice(slice(bi, ei, si), x.shape[i])
    return (np.ascontiguousarray(x[tuple(index)]),)


# --------------------------------------------------------------------------- Range


def _scalar(info: TensorInfo, what: str) -> float | None:
    if info.shape is not None and len(info.shape) != 0:
        raise ShapeError(f"'{what}' must be a scalar, got shape {fmt(info.shape)}")
    if info.value is None:
        return None
    value = float(np.asarray(info.value, np.float64).reshape(-1)[0])
    if not math.isfinite(value):
        raise ShapeError(f"'{what}' is {value}; it must be finite")
    return value


def range_count(start: float, stop: float, step: float, integral: bool) -> int:
    """The length of a Range, computed in double precision as OpenVINO does.

    >>> range_count(0.1, 1.0, 0.1, False), range_count(2.9, 7.9, 1.9, True)
    (9, 5)
    """
    if integral:
        start, stop, step = math.trunc(start), math.trunc(stop), math.trunc(step)
    if step == 0:
        # Only an integer output type's truncation gets here: OpenVINO makes no values.
        return 0
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        return 0
    return math.ceil(abs(float(stop) - float(start)) / abs(float(step)))


def _range_values(start: float, step: float, n: int, et: ElementType) -> np.ndarray:
    dtype = et.dtype
    if dtype.kind == "f" or (dtype.itemsize == 2 and dtype.kind not in "iu"):
        # start + T(i) * step in T, as the reference kernel does; OpenVINO's 16-bit floats
        # compute in f32 and round once.
        wide = np.dtype(np.float32) if dtype.itemsize < 4 else dtype
        first, delta = np.asarray(start, wide), np.asarray(step, wide)
        return (first + np.arange(n, dtype=np.float64).astype(wide) * delta).astype(dtype)
    first, delta = math.trunc(start), math.trunc(step)
    values = first + np.arange(n, dtype=np.int64) * np.int64(delta)
    return values.astype(dtype)  # wraps, as the C++ casts do


def _range_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        start_i, stop_i, step_i = inputs
        if version == 0:
            types = {i.element_type.name for i in inputs if i.element_type is not None}
            if len(types) > 1:
                raise ShapeError(f"start, stop and step must have one element type, got "
                                 f"{', '.join(sorted(types))}")  # fmt: skip
            et = inputs[0].element_type
        else:
            et = a.output_type
        start = _scalar(start_i, "start")
        stop = _scalar(stop_i, "stop")
        step = _scalar(step_i, "step")
        if step == 0 and version == 0:
            raise ShapeError("'step' must not be 0")
        if start is None or stop is None or step is None:
            return [TensorInfo((DYNAMIC,), et)]
        integral = et is not None and et.dtype.kind in "iu"
        return [TensorInfo((range_count(start, stop, step, integral),), et)]

    return infer


def _range(version: int):
    def kernel(a: SimpleNamespace, start, stop, step) -> tuple[np.ndarray, ...]:
        et = a.output_type if version == 4 else ELEMENT_TYPES[_type_name(start)]
        values = [float(np.asarray(v, np.float64).reshape(-1)[0]) for v in (start, stop, step)]
        if not all(math.isfinite(v) for v in values):
            raise ShapeError(f"start, stop and step must be finite, got {values}")
        if values[2] == 0 and version == 0:
            raise ShapeError("'step' must not be 0")
        integral = et.dtype.kind in "iu"
        if integral:
            values = [math.trunc(v) for v in values]
        n = range_count(*values, integral)
        return (_range_values(values[0], values[2], n, et),)

    return kernel


def _type_name(x: np.ndarray) -> str:
    for name, et in ELEMENT_TYPES.items():
        if et.dtype == x.dtype and et.bits == 8 * et.dtype.itemsize:
            return name
    raise ShapeError(f"Range does not take {x.dtype}")


def _check_range4(a: SimpleNamespace) -> None:
    if a.output_type.name not in NUMBERS:
        raise KernelError(f"output_type must be a numeric type ({', '.join(NUMBERS)}), "
                         f"got {a.output_type.name}")  # fmt: skip


# --------------------------------------------------------------------------- Tile


def _tile_shapes(shape: Shape, repeats: Sequence[int]) -> tuple[Shape, list[int]]:
    """The data shape and the repeats (negative ones as 0) aligned to one rank."""
    rank = max(len(shape), len(repeats))
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    reps = [1] * (rank - len(repeats)) + [max(r, 0) for r in repeats]
    return aligned, reps


def _tile_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, r_info = inputs
    check_vector(r_info, "repeats", allow_scalar=False)
    repeats = int_values(r_info)
    if repeats is None:
        n = vector_length(r_info)
        if n is None or x.shape is None:
            return [TensorInfo(None, x.element_type)]
        rank = max(n, len(x.shape))
        out = [DYNAMIC] * rank
        return [TensorInfo(tuple(out), x.element_type)]
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    aligned, reps = _tile_shapes(x.shape, repeats)
    out = tuple(map_bounds(d, lambda v, r=r: v * r) for d, r in zip(aligned, reps, strict=True))
    return [TensorInfo(out, x.element_type)]


def _tile(a: SimpleNamespace, x: np.ndarray, repeats: np.ndarray) -> tuple[np.ndarray, ...]:
    aligned, reps = _tile_shapes(x.shape, flat_ints(repeats))
    return (np.tile(x.reshape(aligned), reps),)


# --------------------------------------------------------------------------- Roll


def _roll_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, shift_i, axes_i = inputs
    check_vector(shift_i, "shift")
    check_vector(axes_i, "axes")
    if shift_i.shape and axes_i.shape is not None:
        n_shift, n_axes = vector_length(shift_i), vector_length(axes_i)
        if not axes_i.shape or (n_shift is not None and n_axes is not None and n_shift != n_axes):
            raise ShapeError(f"shift {fmt(shift_i.shape)} is a 1-D vector, so axes must be one "
                             f"of the same size, got {fmt(axes_i.shape)}")  # fmt: skip
    axes = int_values(axes_i)
    if axes is not None and x.shape is not None:
        for v in axes:
            normalize_axis(v, len(x.shape), "axes value")
    return [TensorInfo(x.shape, x.element_type)]


def _roll(a: SimpleNamespace, x: np.ndarray, shift: np.ndarray, axes: np.ndarray):
    ax = [normalize_axis(v, x.ndim, "axes value") for v in flat_ints(axes)]
    shifts = flat_ints(shift)
    if len(shifts) != len(ax):
        # A scalar shift with several axes: the specification shifts each axis by it, but
        # OpenVINO's kernels refuse it (the plugin: "'shift' and 'axes' dimensions mismatch").
        raise ShapeError(f"shift {shifts} must have one value per axis {flat_ints(axes)} "
                         "(OpenVINO's kernels do not spread a scalar shift over axes)")  # fmt: skip
    if x.size == 0 or not ax:
        return (x.copy(),)
    # Reduce each shift first: np.roll would otherwise add huge shifts of repeated axes.
    steps = [s % x.shape[i] for s, i in zip(shifts, ax, strict=True)]
    return (np.roll(x, steps, axis=ax),)


# --------------------------------------------------------------------------- OneHot


def _one_hot_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    idx, depth_i, on_i, off_i = inputs
    for info, what in ((depth_i, "depth"), (on_i, "on_value"), (off_i, "off_value")):
        if info.shape is not None and len(info.shape) != 0:
            raise ShapeError(f"{what} must be a scalar, got shape {fmt(info.shape)}")
    if on_i.element_type is not None and off_i.element_type is not None and \
            on_i.element_type.name != off_i.element_type.name:  # fmt: skip
        raise ShapeError(f"on_value ({on_i.element_type.name}) and off_value "
                         f"({off_i.element_type.name}) must have one type")  # fmt: skip
    depth = int_values(depth_i)
    if depth is not None and depth[0] < 0:
        raise ShapeError(f"depth must not be negative, got {depth[0]}")
    et = on_i.element_type
    if idx.shape is None:
        return [TensorInfo(None, et)]
    axis = normalize_axis(a.axis, len(idx.shape) + 1)
    d: Dim = DYNAMIC if depth is None else depth[0]
    out = (*idx.shape[:axis], d, *idx.shape[axis:])
    return [TensorInfo(out, et)]


def _one_hot(a: SimpleNamespace, idx, depth, on, off) -> tuple[np.ndarray, ...]:
    n = flat_ints(depth)[0]
    if n < 0:
        raise ShapeError(f"depth must not be negative, got {n}")
    axis = normalize_axis(a.axis, idx.ndim + 1)
    i = idx.astype(np.int64)
    if getattr(a, "negative_indices_mode", "ignore_negative") == "normalize":
        i = np.where((i < 0) & (i >= -n), i + n, i)
    hot = i[..., None] == np.arange(n, dtype=np.int64)  # out-of-range indices match nothing
    out = np.where(hot, on.reshape(()), off.reshape(())).astype(on.dtype)
    return (np.ascontiguousarray(np.moveaxis(out, -1, axis)),)


# --------------------------------------------------------------------------- NonZero


def _non_zero_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    et = a.output_type
    if x.shape is None:
        return [TensorInfo((DYNAMIC, DYNAMIC), et)]
    rank = max(len(x.shape), 1)  # a scalar's coordinates are listed as those of a [1]
    if x.value is not None:  # a constant: the count is known (and propagation folds it)
        return [TensorInfo((rank, int(np.count_nonzero(x.value))), et)]
    his = [_hi(d) for d in x.shape]
    if any(h is None for h in his):
        return [TensorInfo((rank, DYNAMIC), et)]
    most = math.prod(his)  # type: ignore[arg-type]
    return [TensorInfo((rank, _interval(0, most)), et)]


def _non_zero(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    coords = np.nonzero(x.reshape(1) if x.ndim == 0 else x)  # NaN != 0, -0.0 == 0
    dtype = a.output_type.dtype
    if not coords:
        return (np.zeros((1, 0), dtype),)
    return (np.stack(coords).astype(dtype).reshape(len(coords), -1),)


def _check_index_type(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")


# --------------------------------------------------------------------------- registration

register(OpDef(type="Slice", version=8, since_opset=8, attrs=(), infer=_slice_infer,
               kernel=_slice, inputs=(4, 5),
               input_types=(None, INTEGERS, INTEGERS, INTEGERS, INTEGERS)))  # fmt: skip
register(OpDef(type="Range", version=0, since_opset=1, attrs=(), infer=_range_infer(0),
               kernel=_range(0), inputs=(3, 3),
               input_types=(NUMBERS, NUMBERS, NUMBERS)))  # fmt: skip
register(OpDef(type="Range", version=4, since_opset=4,
               attrs=(Attr("output_type", "element_type"),),
               infer=_range_infer(4), kernel=_range(4), inputs=(3, 3), check=_check_range4,
               input_types=(NUMBERS, NUMBERS, NUMBERS), shape_attrs=("output_type",)))  # fmt: skip
register(OpDef(type="Tile", version=0, since_opset=1, attrs=(), infer=_tile_infer,
               kernel=_tile, inputs=(2, 2), input_types=(None, INTEGERS)))  # fmt: skip
register(OpDef(type="Roll", version=7, since_opset=7, attrs=(), infer=_roll_infer,
               kernel=_roll, inputs=(3, 3),
               input_types=(None, INDEX_TYPES, INDEX_TYPES)))  # fmt: skip
# OpenVINO leaves an absent OneHot axis uninitialised: irrun requires it.
register(OpDef(type="OneHot", version=1, since_opset=1, attrs=(Attr("axis", "int"),),
               infer=_one_hot_infer, kernel=_one_hot, inputs=(4, 4),
               input_types=(INTEGERS, INTEGERS), shape_attrs=("axis",)))  # fmt: skip
# OpenVINO leaves an absent OneHot axis uninitialised: irrun requires it.
register(OpDef(type="OneHot", version=16, since_opset=16,
               attrs=(Attr("axis", "int"),
                      Attr("negative_indices_mode", "enum", "ignore_negative",
                           ("ignore_negative", "normalize"))),
               infer=_one_hot_infer, kernel=_one_hot, inputs=(4, 4),
               input_types=(INTEGERS, INTEGERS), shape_attrs=("axis",)))  # fmt: skip
register(OpDef(type="NonZero", version=3, since_opset=3,
               attrs=(Attr("output_type", "element_type", ELEMENT_TYPES["i64"]),),
               infer=_non_zero_infer, kernel=_non_zero, check=_check_index_type))  # fmt: skip
