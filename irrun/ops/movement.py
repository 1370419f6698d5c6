"""Data movement: Reshape, Concat, Split, VariadicSplit, Squeeze, Unsqueeze,
Transpose, ShapeOf, Broadcast, Pad, Tile and Roll.

Their data may be of any element type: strings, nf4 codes and the packed and low-precision
types move like the others (Pad fills strings with "" and other types with all-bits-zero
elements, as OpenVINO does, and pads strings in constant mode only).  Their shape-like
inputs take every integer type, the packed ones too (OpenVINO's checks let nf4 and string
through as well, which hold no integers); Roll's shift and axes i32 or i64.

Shape rules read the values of their shape-like inputs (target shapes, axes, pads)
when they are known constants; propagation folds small constant subgraphs through
the kernels, so a ShapeOf -> Gather -> Concat -> Reshape chain on a static input
stays static.  An unknown value leaves the affected dims dynamic, as OpenVINO does.

- **Tile-v0** repeats ``data`` by ``repeats`` (aligned at the end; the shorter of the two
  is padded with ones in front).  A negative repeat counts as 0, as OpenVINO's shape
  inference says (its kernels disagree, see below).
- **Roll-v7** shifts elements cyclically along ``axes``; a repeated axis adds its shifts.
  A 1-D shift needs axes of its size.  A scalar shift is accepted by the shape rule with
  any axes, but at run time only with a single axis: the specification would apply it to
  every axis, yet the plugin refuses more than one (and the reference kernel any scalar).

Roll's kernel, for inputs that are not constants, checks what the shape rule could not
(shift and axes of different lengths) and raises at the layer.  Where Tile and Roll
part from OpenVINO's kernels:

- Tile with a negative repeat: the plugin returns uninitialised memory, the reference a
  tensor of the input's shape; shape inference says the dim is 0, which irrun follows.
- Roll with a scalar shift: the reference kernel fails; irrun runs it as the plugin does
  (with one axis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, Shape, map_bounds
from ..ir.element_types import ANY, ELEMENT_TYPES, INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import (
    ALL_INTEGERS,
    add_dims,
    flat_ints,
    fmt,
    int_values,
    may_be_one,
    merge_dims,
    normalize_axis,
    same_element_type,
    vector_length,
    vector_rank,
    zeros,
)

MANY = 1 << 30  # no upper bound on the number of inputs
# Target shapes, axes, pads, repeats: any integer type (OpenVINO's checks let nf4 and
# string through as well, which hold no integers).
SHAPE_TYPES = ALL_INTEGERS


# --------------------------------------------------------------------------- Reshape


def reshape_target(in_shape: Shape, target: Sequence[int], special_zero: bool) -> Shape:
    """The output of Reshape-1 for a known target (dims of ``in_shape`` may be dynamic)."""
    out: list[Dim] = []
    minus_one = None
    copied = set()
    for i, v in enumerate(target):
        if v == 0 and special_zero:
            if i >= len(in_shape):
                raise ShapeError(
                    f"special_zero copies dim {i}, but the input {fmt(in_shape)} has rank "
                    f"{len(in_shape)} (target {list(target)})"
                )
            copied.add(i)
            out.append(in_shape[i])
        elif v == -1:
            if minus_one is not None:
                raise ShapeError(f"target shape {list(target)} has more than one -1")
            minus_one = i
            out.append(DYNAMIC)
        elif v < -1:
            raise ShapeError(f"target shape {list(target)} has a negative dim {v}")
        else:
            out.append(v)
    # A dim copied through special_zero is the same on both sides, so it cancels even
    # when dynamic: a [?,3,4] reshaped to [0,-1] is [?,12].
    rest_in = [d for i, d in enumerate(in_shape) if i not in copied]
    rest_out = [d for i, d in enumerate(out) if i not in copied and i != minus_one]
    static_in = all(isinstance(d, int) for d in rest_in)
    num = math.prod(rest_in) if static_in else None  # type: ignore[arg-type]
    den = math.prod(rest_out)  # type: ignore[arg-type]
    if minus_one is not None:
        if num is None:
            return tuple(out)
        if den == 0:
            # OpenVINO makes the -1 a 1 when both sides hold no element.
            if num != 0:
                raise ShapeError(f"cannot reshape {fmt(in_shape)} to {list(target)}")
            out[minus_one] = 1
        elif num % den:
            raise ShapeError(
                f"cannot reshape {fmt(in_shape)} to {list(target)}: {num} elements are not "
                f"divisible by {den}"
            )
        else:
            out[minus_one] = num // den
    elif num is not None and num != den:
        raise ShapeError(
            f"cannot reshape {fmt(in_shape)} ({num} elements) to {list(target)} ({den} elements)"
        )
    return tuple(out)


def _reshape_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, target = inputs
    vector_rank(target, "target shape")
    values = int_values(target)
    if values is not None and x.shape is not None:
        out: Shape | None = reshape_target(x.shape, values, a.special_zero)
    elif values is not None:
        out = tuple(v if v > 0 or (v == 0 and not a.special_zero) else DYNAMIC for v in values)
    else:
        n = vector_length(target)
        out = None if n is None else (DYNAMIC,) * n
    return [TensorInfo(out, x.element_type)]


def _reshape(a: SimpleNamespace, x: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
    shape = reshape_target(x.shape, flat_ints(target), a.special_zero)
    return (x.reshape(shape),)


# --------------------------------------------------------------------------- Concat


def _concat_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    known = [i.shape for i in inputs if i.shape is not None]
    et = same_element_type(inputs)
    if not known:
        return [TensorInfo(None, et)]
    rank = len(known[0])
    if rank == 0:
        raise ShapeError("Concat inputs must have rank at least 1, got a scalar")
    for s in known:
        if len(s) != rank:
            raise ShapeError(
                f"Concat inputs must have the same rank, got {', '.join(fmt(k) for k in known)}"
            )
    axis = normalize_axis(a.axis, rank)
    out = list(known[0])
    for s in known[1:]:
        for d in range(rank):
            if d == axis:
                out[d] = add_dims(out[d], s[d])
            else:
                what = f"Concat inputs differ in dim {d} (axis {a.axis})"
                out[d] = merge_dims(out[d], s[d], what)
    if len(known) < len(inputs):
        out[axis] = add_dims(out[axis], DYNAMIC)
    return [TensorInfo(tuple(out), et)]


def _concat(a: SimpleNamespace, *xs: np.ndarray) -> tuple[np.ndarray, ...]:
    axis = normalize_axis(a.axis, xs[0].ndim)
    return (np.concatenate(xs, axis=axis),)


# --------------------------------------------------------------------------- Split, VariadicSplit


def _split_axis(x: TensorInfo, axis: TensorInfo) -> int | None:
    """The split axis of ``x`` (None while it or ``x``'s rank is unknown)."""
    vector_rank(axis, "axis")
    if axis.shape is not None and len(axis.shape) != 0:
        raise ShapeError(f"axis must be a scalar, got shape {list(axis.shape)}")
    values = int_values(axis)
    if values is None or x.shape is None:
        return None
    if len(x.shape) == 0:
        raise ShapeError("cannot split a scalar")
    return normalize_axis(values[0], len(x.shape))


def _with_dim(shape: Shape, axis: int, d: Dim) -> Shape:
    return tuple(d if i == axis else s for i, s in enumerate(shape))


def _split_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axis_info = inputs
    axis, n, et = _split_axis(x, axis_info), a.num_splits, x.element_type
    if x.shape is None:
        return [TensorInfo(None, et)] * n
    if axis is None:
        return [TensorInfo((DYNAMIC,) * len(x.shape), et)] * n
    d = x.shape[axis]
    if isinstance(d, int):
        if d % n:
            raise ShapeError(f"dim {d} of axis {axis} does not split into {n} equal parts")
        part: Dim = d // n
    else:  # the sizes that divide evenly
        lo, hi = -(-d.lo // n), None if d.hi is None else d.hi // n
        part = lo if lo == hi else Interval(lo, hi)
    return [TensorInfo(_with_dim(x.shape, axis, part), et)] * n


def _check_split(a: SimpleNamespace) -> None:
    if a.num_splits < 1:
        raise KernelError(f"num_splits must be at least 1, got {a.num_splits}")


def _split(a: SimpleNamespace, x: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = normalize_axis(flat_ints(axis)[0], x.ndim)
    if x.shape[ax] % a.num_splits:
        raise ShapeError(f"dim {x.shape[ax]} of axis {ax} does not split into "
                         f"{a.num_splits} equal parts")  # fmt: skip
    return tuple(np.ascontiguousarray(p) for p in np.split(x, a.num_splits, axis=ax))


def _split_lengths(lengths: Sequence[int], d: Dim) -> list[Dim]:
    """Each output's dim on the axis: ``lengths`` with a -1 given what the others leave."""
    if any(v < -1 for v in lengths) or list(lengths).count(-1) > 1:
        raise ShapeError(f"split_lengths {list(lengths)} may hold sizes and one -1 only")
    known = sum(v for v in lengths if v != -1)
    lo, hi = (d, d) if isinstance(d, int) else (d.lo, d.hi)
    if -1 not in lengths:
        if known < lo or (hi is not None and known > hi):
            raise ShapeError(f"split_lengths {list(lengths)} add up to {known}, not {d}")
        return list(lengths)
    if hi is not None and known > hi:
        raise ShapeError(f"split_lengths {list(lengths)} add up to more than {d}")
    # What is left of a dim known only within bounds is unknown, as OpenVINO infers it.
    rest = d - known if isinstance(d, int) else DYNAMIC
    return [rest if v == -1 else v for v in lengths]


def _variadic_split_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axis_info, lengths_info = inputs
    vector_rank(lengths_info, "split_lengths", allow_scalar=False)
    axis, et = _split_axis(x, axis_info), x.element_type
    n = vector_length(lengths_info)
    if n is None:
        raise ShapeError("the number of split_lengths (its input's length) must be known")
    lengths = int_values(lengths_info)
    if x.shape is None:
        return [TensorInfo(None, et)] * n
    if axis is None:
        return [TensorInfo((DYNAMIC,) * len(x.shape), et)] * n
    if lengths is None:
        return [TensorInfo(_with_dim(x.shape, axis, DYNAMIC), et)] * n
    dims = _split_lengths(lengths, x.shape[axis])
    return [TensorInfo(_with_dim(x.shape, axis, d), et) for d in dims]


def _variadic_split(a: SimpleNamespace, x: np.ndarray, axis: np.ndarray,
                    lengths: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
    ax = normalize_axis(flat_ints(axis)[0], x.ndim)
    sizes = _split_lengths(flat_ints(lengths), x.shape[ax])
    cuts = np.cumsum(sizes[:-1], dtype=np.int64)
    return tuple(np.ascontiguousarray(p) for p in np.split(x, cuts, axis=ax))


# --------------------------------------------------------------------------- Squeeze


def _squeeze_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        x = inputs[0]
        skip = version >= 15 and a.allow_axis_skip
        if x.shape is None:
            return [TensorInfo(None, x.element_type)]
        rank = len(x.shape)
        axes: list[int] | None = []
        if len(inputs) == 2:
            vector_rank(inputs[1], "axes")
            axes = int_values(inputs[1])
        if axes is None:
            return [TensorInfo(None, x.element_type)]
        keep: list[Dim] = []
        if not axes:
            # Without axes every 1 goes; a dynamic dim that may be 1 makes the rank unknown.
            if any(isinstance(d, Interval) and d.contains(1) for d in x.shape):
                return [TensorInfo(None, x.element_type)]
            keep = [d for d in x.shape if d != 1]
            return [TensorInfo(tuple(keep), x.element_type)]
        chosen = {normalize_axis(v, rank, "axes value") for v in axes}
        for i, d in enumerate(x.shape):
            if i not in chosen or not may_be_one(d):
                keep.append(d)  # a dim that cannot be 1 is left in place, as OpenVINO does
            elif skip and isinstance(d, Interval):
                return [TensorInfo(None, x.element_type)]  # only the run decides
        return [TensorInfo(tuple(keep), x.element_type)]

    return infer


def _squeeze(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray | None = None):
    if axes is None or axes.size == 0:
        return (x.reshape([d for d in x.shape if d != 1]),)
    chosen = {normalize_axis(v, x.ndim, "axes value") for v in flat_ints(axes)}
    return (x.reshape([d for i, d in enumerate(x.shape) if i not in chosen or d != 1]),)


# --------------------------------------------------------------------------- Unsqueeze


def _unsqueeze_axes(axes: Sequence[int], rank: int) -> set[int]:
    # A repeated axis inserts one dim; negative axes count from the end of that rank.
    out_rank = rank + len(set(axes))
    return {normalize_axis(v, out_rank, "axes value") for v in axes}


def _unsqueeze_shape(shape: Shape, chosen: set[int]) -> Shape:
    out_rank = len(shape) + len(chosen)
    if any(c >= out_rank for c in chosen):
        raise ShapeError(f"axes {sorted(chosen)} do not fit an output of rank {out_rank}")
    rest = iter(shape)
    return tuple(1 if i in chosen else next(rest) for i in range(out_rank))


def _unsqueeze_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes_info = inputs
    vector_rank(axes_info, "axes")
    axes = int_values(axes_info)
    if x.shape is None or axes is None:
        return [TensorInfo(None, x.element_type)]
    if not axes:
        raise ShapeError("axes must not be empty")
    return [TensorInfo(_unsqueeze_shape(x.shape, _unsqueeze_axes(axes, len(x.shape))),
                       x.element_type)]  # fmt: skip


def _unsqueeze(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    values = flat_ints(axes)
    if not values:
        raise ShapeError("axes must not be empty")
    return (x.reshape(_unsqueeze_shape(x.shape, _unsqueeze_axes(values, x.ndim))),)


# --------------------------------------------------------------------------- Transpose


def _permutation(order: Sequence[int], rank: int) -> list[int]:
    if not order:
        return list(range(rank))[::-1]
    if sorted(order) != list(range(rank)):
        raise ShapeError(f"order {list(order)} is not a permutation of 0..{rank - 1}")
    return list(order)


def _transpose_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, order_info = inputs
    vector_rank(order_info, "order", allow_scalar=False)
    order = int_values(order_info)
    if x.shape is None:
        n = vector_length(order_info)
        return [TensorInfo(None if not n else (DYNAMIC,) * n, x.element_type)]
    if order is None:
        return [TensorInfo((DYNAMIC,) * len(x.shape), x.element_type)]
    perm = _permutation(order, len(x.shape))
    return [TensorInfo(tuple(x.shape[p] for p in perm), x.element_type)]


def _transpose(a: SimpleNamespace, x: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.ascontiguousarray(x.transpose(_permutation(flat_ints(order), x.ndim))),)


# --------------------------------------------------------------------------- ShapeOf


def _shape_of_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    et = getattr(a, "output_type", ELEMENT_TYPES["i64"])
    if x.shape is None:
        return [TensorInfo((DYNAMIC,), et)]
    value = None
    if all(isinstance(d, int) for d in x.shape):
        value = np.array(x.shape, et.dtype).reshape(len(x.shape))
    return [TensorInfo((len(x.shape),), et, value)]


def _shape_of(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    et = getattr(a, "output_type", ELEMENT_TYPES["i64"])
    return (np.array(x.shape, et.dtype).reshape(x.ndim),)


def _check_shape_of(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")


# --------------------------------------------------------------------------- Broadcast

BROADCAST_V1_MODES = ("numpy", "explicit", "none", "pdpd")
BROADCAST_V3_MODES = ("numpy", "explicit", "none", "bidirectional", "pdpd")


def _bidirectional(a: Shape, b: Shape) -> Shape:
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out: list[Dim] = []
    for x, y in zip(a, b, strict=True):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif isinstance(x, int) and isinstance(y, int):
            if x != y:
                raise ShapeError(f"shapes {fmt(a)} and {fmt(b)} do not broadcast: {x} vs {y}")
            out.append(x)
        elif isinstance(x, int) or isinstance(y, int):
            out.append(x if isinstance(x, int) else y)  # the other must be it or 1
        else:
            out.append(DYNAMIC)
    return tuple(out)


def _aligned_shape(a: SimpleNamespace, data: Shape, target: Sequence[int], axes) -> list[int]:
    """Where each data dim lands in the target (numpy, pdpd, explicit), checked."""
    mode = "explicit" if a.mode == "none" else a.mode
    if mode == "explicit":
        if axes is None:
            raise ShapeError("explicit mode needs an axes_mapping input")
        if len(axes) != len(data):
            raise ShapeError(f"axes_mapping {list(axes)} must have one value per data dim "
                             f"(data {fmt(data)})")  # fmt: skip
        if list(axes) != sorted(axes):
            raise ShapeError(f"axes_mapping {list(axes)} must be increasing")
        positions = list(axes)
    elif mode == "pdpd":
        # The IR carries no pdpd axis and OpenVINO reads it as 0: data aligns at the front.
        positions = list(range(len(data)))
    else:
        positions = list(range(len(target) - len(data), len(target)))
    if len(data) > len(target) or any(not 0 <= p < len(target) for p in positions):
        raise ShapeError(f"data {fmt(data)} does not fit target shape {list(target)} "
                         f"in {mode} mode")  # fmt: skip
    for d, p in zip(data, positions, strict=True):
        t = target[p]
        ok = d == t or d == 1 if isinstance(d, int) else d.contains(t) or d.contains(1)
        if not ok:
            raise ShapeError(f"data dim {d} cannot be broadcast to {t} in {mode} mode "
                             f"(data {fmt(data)}, target {list(target)})")  # fmt: skip
    return positions


def _broadcast_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, t_info = inputs[:2]
    vector_rank(t_info, "target_shape", allow_scalar=False)
    target = int_values(t_info)
    axes = int_values(inputs[2]) if len(inputs) > 2 else None
    if target is not None and any(v < 0 for v in target):
        raise ShapeError(f"target_shape {target} has a negative dim")
    if a.mode == "bidirectional":
        if target is None or x.shape is None:
            return [TensorInfo(None, x.element_type)]
        return [TensorInfo(_bidirectional(x.shape, tuple(target)), x.element_type)]
    if target is None:
        n = vector_length(t_info)
        return [TensorInfo(None if n is None else (DYNAMIC,) * n, x.element_type)]
    if x.shape is not None and (a.mode not in ("explicit", "none") or axes is not None):
        _aligned_shape(a, x.shape, target, axes)
    return [TensorInfo(tuple(target), x.element_type)]


def _broadcast(a: SimpleNamespace, x: np.ndarray, target: np.ndarray, axes=None):
    t = flat_ints(target)
    if a.mode == "bidirectional":
        return (_filled(_bidirectional(x.shape, tuple(t)), x),)
    positions = _aligned_shape(a, x.shape, t, None if axes is None else flat_ints(axes))
    shape = [1] * len(t)
    for d, p in zip(x.shape, positions, strict=True):
        shape[p] = d
    return (_filled(t, x.reshape(shape)),)


def _filled(shape: Sequence[int], x: np.ndarray) -> np.ndarray:
    """A new array of ``shape`` holding ``x`` broadcast to it.  (``np.array`` of a
    ``np.broadcast_to`` view copies the same values element by element through its
    zero strides: 60 us where this takes 5, for an LLM's keys repeated over 4 heads.)"""
    out = np.empty(shape, x.dtype)
    out[...] = x
    return out


# --------------------------------------------------------------------------- Pad

PAD_MODES = ("constant", "edge", "reflect", "symmetric")


def _pad_lists(rank: int, begin: list[int], end: list[int]):
    if len(begin) != rank or len(end) != rank:
        raise ShapeError(f"pads_begin {begin} and pads_end {end} must have {rank} values")
    return begin, end


def _check_pad_dim(mode: str, d: Dim, pb: int, pe: int) -> None:
    if not isinstance(d, int):
        return
    limit = {"reflect": d - 1, "symmetric": d}.get(mode)
    if limit is not None and (pb > limit or pe > limit):
        raise ShapeError(
            f"{mode} padding needs pads not greater than {limit} for a dim of size {d}, "
            f"got {pb} and {pe}"
        )
    if mode == "edge" and d == 0 and (pb > 0 or pe > 0):
        raise ShapeError("edge padding cannot pad a dim of size 0")


def _pad_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, b_info, e_info = inputs[:3]
    vector_rank(b_info, "pads_begin", allow_scalar=False)
    vector_rank(e_info, "pads_end", allow_scalar=False)
    if len(inputs) > 3 and inputs[3].shape not in (None, ()):
        raise ShapeError(f"pad_value must be a scalar, got {fmt(inputs[3].shape)}")
    if len(inputs) > 3 and None not in (x.element_type, inputs[3].element_type) and (
            x.element_type != inputs[3].element_type):  # fmt: skip
        raise ShapeError(f"pad_value is {inputs[3].element_type} but data is {x.element_type}; "
                         "they must be the same type")  # fmt: skip
    if a.pad_mode != "constant" and x.element_type is not None and (
            x.element_type.name == "string"):  # fmt: skip
        raise ShapeError(f"{a.pad_mode} padding does not take strings (only constant padding)")
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    begin, end = int_values(b_info), int_values(e_info)
    if begin is None or end is None:
        return [TensorInfo((DYNAMIC,) * len(x.shape), x.element_type)]
    begin, end = _pad_lists(len(x.shape), begin, end)
    out = []
    for d, pb, pe in zip(x.shape, begin, end, strict=True):
        _check_pad_dim(a.pad_mode, d, pb, pe)
        # OpenVINO clamps a crop past the whole dim to an empty dim.
        out.append(map_bounds(d, lambda v, pb=pb, pe=pe: max(v + pb + pe, 0)))
    return [TensorInfo(tuple(out), x.element_type)]


def pad_source(mode: str, out: int, size: int, before: int) -> np.ndarray:
    """For each output position on one axis, the input position it copies (constant
    mode: -1 where the fill value goes).

    Positions are those of the unpadded input, so a negative pad crops and the
    mirror modes reflect about the original edges, as OpenVINO does.

    >>> pad_source("reflect", 6, 3, 2).tolist(), pad_source("symmetric", 5, 2, 2).tolist()
    ([2, 1, 0, 1, 2, 1], [1, 0, 0, 1, 1])
    """
    src = np.arange(out, dtype=np.int64) - before
    if mode == "constant":
        return np.where((src >= 0) & (src < size), src, -1)
    if mode == "edge":
        return np.clip(src, 0, size - 1)
    if mode == "reflect":
        if size == 1:
            return np.zeros_like(src)
        period = 2 * (size - 1)
        m = src % period
        return np.where(m >= size, period - m, m)
    period = 2 * size
    m = src % period
    return np.where(m >= size, period - 1 - m, m)


def _pad(a: SimpleNamespace, x: np.ndarray, pb: np.ndarray, pe: np.ndarray, value=None):
    begin, end = _pad_lists(x.ndim, flat_ints(pb), flat_ints(pe))
    for d, b, e in zip(x.shape, begin, end, strict=True):
        _check_pad_dim(a.pad_mode, d, b, e)
    sources = [
        pad_source(a.pad_mode, max(d + b + e, 0), d, b)
        for d, b, e in zip(x.shape, begin, end, strict=True)
    ]
    if a.pad_mode != "constant":
        return (x[np.ix_(*sources)] if x.ndim else x.copy(),)
    out = zeros([len(s) for s in sources], x.dtype)
    if value is not None:
        out[...] = value
    inside = [np.flatnonzero(s >= 0) for s in sources]
    if x.ndim == 0:
        return (x.copy(),)
    out[np.ix_(*inside)] = x[np.ix_(*[s[i] for s, i in zip(sources, inside, strict=True)])]
    return (out,)


# --------------------------------------------------------------------------- Tile


def _tile_shapes(shape: Shape, repeats: Sequence[int]) -> tuple[Shape, list[int]]:
    """The data shape and the repeats (negative ones as 0) aligned to one rank."""
    rank = max(len(shape), len(repeats))
    aligned = (1,) * (rank - len(shape)) + tuple(shape)
    reps = [1] * (rank - len(repeats)) + [max(r, 0) for r in repeats]
    return aligned, reps


def _tile_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, r_info = inputs
    vector_rank(r_info, "repeats", allow_scalar=False)
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
    vector_rank(shift_i, "shift")
    vector_rank(axes_i, "axes")
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


# --------------------------------------------------------------------------- registration

register(OpDef(type="Reshape", version=1, since_opset=1,
               attrs=(Attr("special_zero", "bool"),),
               infer=_reshape_infer, kernel=_reshape, inputs=(2, 2),
               shape_attrs=("special_zero",), input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Concat", version=0, since_opset=1, attrs=(Attr("axis", "int"),),
               infer=_concat_infer, kernel=_concat, inputs=(1, MANY),
               shape_attrs=("axis",), input_types=(ANY,),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Squeeze", version=0, since_opset=1, attrs=(),
               infer=_squeeze_infer(0), kernel=_squeeze, inputs=(1, 2),
               input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Squeeze", version=15, since_opset=15,
               attrs=(Attr("allow_axis_skip", "bool", False),),
               infer=_squeeze_infer(15), kernel=_squeeze, inputs=(1, 2),
               shape_attrs=("allow_axis_skip",), input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Unsqueeze", version=0, since_opset=1, attrs=(),
               infer=_unsqueeze_infer, kernel=_unsqueeze, inputs=(2, 2),
               input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Transpose", version=1, since_opset=1, attrs=(),
               infer=_transpose_infer, kernel=_transpose, inputs=(2, 2),
               input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="ShapeOf", version=0, since_opset=1, attrs=(),
               infer=_shape_of_infer, kernel=_shape_of, input_types=(ANY,),
               scratch=nothing))  # fmt: skip
register(OpDef(type="ShapeOf", version=3, since_opset=3,
               attrs=(Attr("output_type", "element_type", ELEMENT_TYPES["i64"]),),
               infer=_shape_of_infer, kernel=_shape_of, check=_check_shape_of,
               input_types=(ANY,),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Broadcast", version=1, since_opset=1,
               attrs=(Attr("mode", "enum", "numpy", BROADCAST_V1_MODES),),
               infer=_broadcast_infer, kernel=_broadcast, inputs=(2, 3),
               shape_attrs=("mode",), input_types=(ANY, SHAPE_TYPES, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Broadcast", version=3, since_opset=3,
               attrs=(Attr("mode", "enum", "numpy", BROADCAST_V3_MODES),),
               infer=_broadcast_infer, kernel=_broadcast, inputs=(2, 3),
               shape_attrs=("mode",), input_types=(ANY, SHAPE_TYPES, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
for _version, _since in ((1, 1), (12, 12)):
    register(OpDef(type="Pad", version=_version, since_opset=_since,
                   attrs=(Attr("pad_mode", "enum", "constant", PAD_MODES),),
                   infer=_pad_infer, kernel=_pad, inputs=(3, 4),
                   shape_attrs=("pad_mode",), input_types=(ANY, SHAPE_TYPES, SHAPE_TYPES, ANY),
                   scratch=per_element(16)))  # fmt: skip
register(OpDef(type="Split", version=1, since_opset=1, attrs=(Attr("num_splits", "int"),),
               infer=_split_infer, kernel=_split, inputs=(2, 2), check=_check_split,
               shape_attrs=("num_splits",), input_types=(ANY, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="VariadicSplit", version=1, since_opset=1, attrs=(),
               infer=_variadic_split_infer, kernel=_variadic_split, inputs=(3, 3),
               input_types=(ANY, SHAPE_TYPES, SHAPE_TYPES),
               scratch=nothing))  # fmt: skip
register(OpDef(type="Tile", version=0, since_opset=1, attrs=(), infer=_tile_infer,
               kernel=_tile, inputs=(2, 2), input_types=(ANY, SHAPE_TYPES),
               scratch=per_element(4)))  # fmt: skip
register(OpDef(type="Roll", version=7, since_opset=7, attrs=(), infer=_roll_infer,
               kernel=_roll, inputs=(3, 3),
               input_types=(ANY, INDEX_TYPES, INDEX_TYPES),
               scratch=per_element(1)))  # fmt: skip
