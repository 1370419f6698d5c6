"""ReduceMean, ReduceMax, ReduceSum (v1), SoftMax (v1, v8) and LogSoftmax (v5).

Reductions take their axes from the second input (a scalar or 1-D list, negative
values count from the end, repeats are harmless, an empty list reduces nothing).
Float sums are accumulated in the input type, as the CPU plugin does in f32; the
order differs, so results agree to about 1e-6 relative.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .movement import check_vector, flat_ints, int_values, normalize_axis, vector_length


def _axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _reduce_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes_info = inputs
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
    axes = _axes(values, rank)
    if a.keep_dims:
        out = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    else:
        out = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    return [TensorInfo(out, x.element_type)]


def _reduce_kernel(fn):
    def kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
        ax = _axes(flat_ints(axes), x.ndim)
        return (np.asarray(fn(x, ax, a.keep_dims)).astype(x.dtype, copy=False),)

    return kernel


def _sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype)


def _max(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    if not axes:
        return x.copy()
    if any(x.shape[i] == 0 for i in axes):
        raise ShapeError(f"ReduceMax over an empty axis of shape {list(x.shape)}")
    return np.max(x, axis=axes, keepdims=keep)


def _mean(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    total = _sum(x, axes, keep)
    if x.dtype.kind in "iu":
        # Integer means truncate toward zero, as OpenVINO divides integers in C++.
        if count == 0:
            raise ShapeError(f"ReduceMean over an empty axis of shape {list(x.shape)}")
        wide = total.astype(np.int64)
        return (np.sign(wide) * (np.abs(wide) // count)).astype(x.dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return total / np.asarray(count, x.dtype)


def _softmax_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        (x,) = inputs
        if x.shape is not None:
            _softmax_axis(a.axis, len(x.shape), version)
        return [TensorInfo(x.shape, x.element_type)]

    return infer


def _softmax_axis(axis: int, rank: int, version: int) -> int:
    if version == 1 and axis < 0:
        raise ShapeError(f"SoftMax-1 axis {axis} must not be negative (rank {rank})")
    return normalize_axis(axis, rank)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``exp(x - max) / sum``: subtracting the maximum keeps exp from overflowing.

    >>> softmax(np.array([[0.0, np.log(3.0)]], np.float32), 1).tolist()
    [[0.25, 0.75]]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return (e / np.sum(e, axis=axis, keepdims=True, dtype=x.dtype)).astype(x.dtype)


def log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """``x - max - log(sum(exp(x - max)))``, which stays finite where softmax underflows.

    >>> log_softmax(np.array([[0.0, 1000.0]], np.float32), 1).tolist()
    [[-1000.0, 0.0]]
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        total = np.sum(np.exp(shifted), axis=axis, keepdims=True, dtype=x.dtype)
        return (shifted - np.log(total)).astype(x.dtype)


def _log_softmax_kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    work = x if x.dtype.itemsize >= 4 else x.astype(np.float32)
    return (log_softmax(work, _softmax_axis(a.axis, x.ndim, 8)).astype(x.dtype),)


def _log_softmax_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.element_type is not None and x.element_type.dtype.kind != "f":
        raise ShapeError(f"LogSoftmax needs a floating-point input, got {x.element_type.name}")
    return _softmax_infer(8)(a, inputs)


def _softmax_kernel(version: int):
    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (softmax(x, _softmax_axis(a.axis, x.ndim, version)),)

    return kernel


for _type, _fn in (("ReduceMean", _mean), ("ReduceMax", _max), ("ReduceSum", _sum)):
    register(
        OpDef(
            type=_type,
            version=1,
            since_opset=1,
            attrs=(Attr("keep_dims", "bool", False),),
            infer=_reduce_infer,
            kernel=_reduce_kernel(_fn),
            inputs=(2, 2),
            shape_attrs=("keep_dims",),
        )
    )
for _version in (1, 8):
    register(
        OpDef(
            type="SoftMax",
            version=_version,
            since_opset=_version,
            attrs=(Attr("axis", "int", 1),),
            infer=_softmax_infer(_version),
            kernel=_softmax_kernel(_version),
            shape_attrs=("axis",),
        )
    )
register(OpDef(type="LogSoftmax", version=5, since_opset=5, attrs=(Attr("axis", "int", 1),),
               infer=_log_softmax_infer, kernel=_log_softmax_kernel))  # fmt: skip
