"""Reductions (ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL1,
ReduceL2, ReduceLogicalAnd, ReduceLogicalOr) and CumSum.

Reductions take their axes from the second input (a scalar or 1-D list of
integers; negative values count from the end, repeats are harmless, an empty list
reduces nothing, as the reference kernels do; the CPU plugin refuses to compile
some such models, ReduceMax and ReduceMin among them).  ReduceLogicalAnd/Or take
and give booleans; the others take any number type, but not booleans.  An empty
reduced axis gives the reduction's start value: 0 (Sum, Mean, L1, L2), 1 (Prod),
true (LogicalAnd), false (LogicalOr).

Numerics, as OpenVINO's reference kernels compute them:

* f16 (and other floats narrower than f32) are reduced in f32 and rounded once,
  so ``60000 + 60000 - 60000`` is 60000, not inf.  The CPU plugin does the same.
* Integer Sum, Prod, L1, Mean's sum and CumSum wrap in the input's type (``abs``
  of the minimum is the minimum).  The CPU plugin differs: it reduces i32 in f32
  (an overflowing sum becomes i32's minimum), saturates 8-bit partial sums (so
  ``(47 + 102) - 30`` is 97 when its vector code adds in that order), and runs
  i64 as i32 (``2**40`` reads as 0).  Integer Mean truncates toward zero.
* Integer L2 is ``floor(sqrt(sum of squares))``, the squares summed in the input's
  type; a sum that wrapped negative gives the type's minimum.  OpenVINO's
  reference has no integer L2; this is what the plugin computes whenever the sum
  of squares fits.
* ReduceMax starts from the type's lowest value (f32's -3.4028235e38, not -inf;
  an f16 reduction gives -inf after rounding) and ReduceMin from +inf (the
  integer maximum for integers), each replaced only by a strictly larger
  (smaller) element, so NaN never wins: an all-NaN or empty slice gives the start
  value.  The plugin's NaN handling depends on the element's position (``max(3,
  NaN, 1)`` is 1 there, an all-NaN slice NaN), and its ReduceMin of an empty f32
  slice is 3.4028235e38; both are irrun following the reference.
* Float Sum, Mean, L1, L2 and CumSum add in another order than the plugin's
  vector code: results agree within the summation error bound,
  ``(n - 1) * 2**-24 * sum(|x|)`` for n terms in f32 (Prod: relative
  ``(n - 1) * 2**-24``).  Max, Min and the logical reductions are exact.

CumSum (opset3) sums along the axis its second input gives (a scalar i32 or i64;
OpenVINO's IR reader cannot build the one-input form of its C++ API; a 1-D axis
of one value is read as the reference reads it, though the plugin refuses it).
``exclusive`` leaves each element out of its own sum, ``reverse`` sums from the
end.  Floats narrower than f32 are summed in f32 and each output rounded once, as
the plugin does; integers wrap, as in the plugin (which runs i64 as i32);
booleans are summed as u8.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC
from ..ir.element_types import (
    ALL_NUMBERS,
    ELEMENT_TYPES,
    INDEX_TYPES,
    INTEGERS,
    LOW_FLOATS,
    PACKED_INTEGERS,
    ElementType,
)
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import check_vector, flat_ints, int_values, normalize_axis, vector_length
from .convert import convert


def reduction_axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    """The axes a reduction's second input names, each once, counted from 0, in order."""
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _reduce_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes_info = inputs
    _record_type(a, x)
    check_vector(axes_info, "axes")
    values = int_values(axes_info)
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    rank = len(x.shape)
    if values is None:
        if a.keep_dims:
            return [TensorInfo((DYNAMIC,) * rank, x.element_type)]
        # One unknown axis removes one dim; more may repeat one, as OpenVINO reasons.
        n = vector_length(axes_info)
        out = (DYNAMIC,) * (rank - 1) if n == 1 and rank else None
        return [TensorInfo(out, x.element_type)]
    axes = reduction_axes(values, rank)
    if a.keep_dims:
        out = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        out = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return [TensorInfo(out, x.element_type)]


_SMALL_FLOATS = {ELEMENT_TYPES[name].dtype for name in LOW_FLOATS}


def _record_type(a: SimpleNamespace, x: TensorInfo) -> None:
    """The kernels see a u4 or i4 array as u8 or i8: the shape rule records the data's
    element type on the layer, for the kernels to wrap packed integers to their bits."""
    a.data_type = x.element_type


def _packed(a: SimpleNamespace) -> ElementType | None:
    et = getattr(a, "data_type", None)
    return et if et is not None and et.name in PACKED_INTEGERS else None


def _reduce_kernel(fn):
    def kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        ax = reduction_axes(flat_ints(axes), x.ndim)
        # f16 rounds its f32 result: ReduceMax of nothing gives -inf.
        with np.errstate(over="ignore", invalid="ignore"):
            return (_restored(fn(_widened(x, a), ax, a.keep_dims), x.dtype, _packed(a)),)

    return kernel


def _widened(x: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Floats narrower than f32 in f32: OpenVINO reduces them so and rounds once.  Packed
    integers in i64, wrapped to their bits at the end."""
    if _packed(a) is not None:
        return x.astype(np.int64)
    if x.dtype.kind not in "iub" and x.dtype.itemsize < 4:
        return x.astype(np.float32)
    return x


def _restored(values: np.ndarray, dtype: np.dtype, packed: ElementType | None) -> np.ndarray:
    """A result in the data's type: packed integers wrapped to their bits and the small
    floats rounded as OpenVINO's Convert rounds them (irrun.ops.convert), the rest cast."""
    values = np.asarray(values)
    if packed is not None:
        return convert(values, packed)
    if dtype in _SMALL_FLOATS:
        return convert(values, dtype)
    return values.astype(dtype, copy=False)


def _sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _prod(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _l1(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return _sum(np.abs(x), axes, keep)


def _l2(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    squares = _sum(x * x, axes, keep)
    if x.dtype.kind not in "iu":
        return np.sqrt(squares)
    root = np.floor(np.sqrt(np.maximum(squares, 0).astype(np.float64)))
    # The plugin's NaN for a negative (wrapped) sum converts to the minimum.
    return np.where(squares < 0, np.iinfo(x.dtype).min, root.astype(x.dtype))


def _extreme(x: np.ndarray, axes: tuple[int, ...], keep: bool, largest: bool) -> np.ndarray:
    """Max or min from the reference kernel's start value, replaced only by a strictly
    larger (smaller) element: NaN never wins."""
    if x.dtype.kind in "iu":
        info = np.iinfo(x.dtype)
        ufunc, start = (np.maximum, info.min) if largest else (np.minimum, info.max)
    else:
        ufunc = np.fmax if largest else np.fmin
        start = np.finfo(x.dtype).min if largest else np.inf
    return ufunc.reduce(x, axis=axes, keepdims=keep, initial=start)


def _max(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return _extreme(x, axes, keep, largest=True)


def _min(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return _extreme(x, axes, keep, largest=False)


def _mean(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    count = math.prod(x.shape[i] for i in axes)
    total = _sum(x, axes, keep)
    if count == 0:
        return total  # all zeros: OpenVINO's mean of nothing is 0
    if x.dtype.kind in "iu":
        # Integer means truncate toward zero, as OpenVINO divides integers in C++.
        wide = total.astype(np.int64)
        return (np.sign(wide) * (np.abs(wide) // count)).astype(x.dtype)
    return total / np.asarray(count, x.dtype)


def _all(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.all(x, axis=axes, keepdims=keep)


def _any(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.any(x, axis=axes, keepdims=keep)


# --------------------------------------------------------------------------- CumSum


def _cumsum_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axis = inputs
    _record_type(a, x)
    check_vector(axis, "axis")
    n = vector_length(axis)
    if n is not None and n != 1:
        raise ShapeError(f"axis must hold one value, got shape {list(axis.shape)}")
    values = int_values(axis)
    if values is not None and x.shape is not None:
        normalize_axis(values[0], len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def cumsum(x: np.ndarray, axis: int, exclusive: bool = False, reverse: bool = False) -> np.ndarray:
    """Running sums of ``x`` along ``axis`` in ``x``'s type (integers wrap).

    >>> cumsum(np.array([1, 2, 3]), 0, exclusive=True, reverse=True).tolist()
    [5, 3, 0]
    """
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        # Each sum without its own element: the sums shifted one place, 0 first.
        out = np.roll(out, 1, axis=axis)
        first = [slice(None)] * x.ndim
        first[axis] = slice(0, 1)
        out[tuple(first)] = 0
    return np.flip(out, axis) if reverse else out


def _cumsum_kernel(a: SimpleNamespace, x: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, ...]:
    values = flat_ints(axis)
    if len(values) != 1:
        raise KernelError(f"axis must hold one value, got {values}")
    ax = normalize_axis(values[0], x.ndim)
    work = x.view(np.uint8) if x.dtype == np.bool_ else _widened(x, a)
    with np.errstate(over="ignore", invalid="ignore"):
        out = cumsum(work, ax, a.exclusive, a.reverse)
    return (_restored(out, x.dtype, _packed(a)).astype(x.dtype, copy=False),)


# OpenVINO's arithmetic reductions take any number type (nf4 codes too, which irrun does
# not: they are no numbers), its logical ones booleans; the axes any integer.  Packed
# integers wrap to their bits, as Convert wraps them.
ARITHMETIC_TYPES = ALL_NUMBERS
for _type, _fn, _since in (
    ("ReduceMean", _mean, 1), ("ReduceMax", _max, 1), ("ReduceSum", _sum, 1),
    ("ReduceProd", _prod, 1), ("ReduceMin", _min, 1), ("ReduceL1", _l1, 4),
    ("ReduceL2", _l2, 4), ("ReduceLogicalAnd", _all, 1), ("ReduceLogicalOr", _any, 1),
):
    register(
        OpDef(
            type=_type,
            version=_since,
            since_opset=_since,
            attrs=(Attr("keep_dims", "bool", False),),
            infer=_reduce_infer,
            kernel=_reduce_kernel(_fn),
            inputs=(2, 2),
            shape_attrs=("keep_dims",),
            input_types=(("boolean",) if "Logical" in _type else ARITHMETIC_TYPES, INTEGERS),
            # f16 reduced in f32; L1 and L2 take the absolute values or squares first.
            scratch=per_element(10) if _type in ("ReduceL1", "ReduceL2") else per_element(2, 6, 6),
        )
    )
register(
    OpDef(
        type="CumSum",
        version=3,
        since_opset=3,
        attrs=(Attr("exclusive", "bool", False), Attr("reverse", "bool", False)),
        infer=_cumsum_infer,
        kernel=_cumsum_kernel,
        inputs=(2, 2),
        # OpenVINO takes any data; irrun adds the numbers, booleans (as u8, cast back)
        # and all the rest ARITHMETIC_TYPES holds.
        input_types=((*ARITHMETIC_TYPES, "boolean"), INDEX_TYPES),
        scratch=per_element(10, 12, 10),
    )
)
