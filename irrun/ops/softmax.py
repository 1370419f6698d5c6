"""SoftMax-1/8 and LogSoftmax-5 along one axis.

SoftMax is ``exp(x - max) / sum(exp(x - max))`` along ``axis`` (SoftMax-1 takes no
negative axis); LogSoftmax is ``x - max - log(sum(exp(x - max)))``, which stays finite
where SoftMax underflows.  Both take floats (OpenVINO's shape rule takes any type, but
neither its reference kernels nor irrun's compute integers); floats narrower than f32 are
computed in f32 and rounded once.  Subtracting each row's maximum keeps ``exp`` from
overflowing; a row of -inf, or one holding +inf or NaN, gives NaN.  The CPU plugin sums in another
order: values agree within the summation error bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import normalize_axis
from .unary import REAL, to_float


def softmax_axis(axis: int, rank: int, version: int) -> int:
    """The axis a SoftMax (version 1 or 8) or LogSoftmax (5) of ``rank`` runs along."""
    if version == 1 and axis < 0:
        raise ShapeError(f"SoftMax-1 axis {axis} must not be negative (rank {rank})")
    return normalize_axis(axis, rank)


def _infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        (x,) = inputs
        if x.shape is not None:
            softmax_axis(a.axis, len(x.shape), version)
        return [TensorInfo(x.shape, x.element_type)]

    return infer


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


def _work(x: np.ndarray) -> np.ndarray:
    """``x`` in f32 when its floats are narrower (f16, bf16, the low-precision floats)."""
    return x if x.dtype.itemsize >= 4 else x.astype(np.float32)


def _softmax_kernel(version: int):
    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        y = softmax(_work(x), softmax_axis(a.axis, x.ndim, version))
        return (to_float(y, x.dtype),)

    return kernel


def _log_softmax_kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    y = log_softmax(_work(x), softmax_axis(a.axis, x.ndim, 5))
    return (to_float(y, x.dtype),)


for _version in (1, 8):
    register(
        OpDef(type="SoftMax", version=_version, since_opset=_version,
              attrs=(Attr("axis", "int", 1),), infer=_infer(_version),
              kernel=_softmax_kernel(_version), shape_attrs=("axis",), input_types=(REAL,),
              scratch=per_element(20))
    )
register(OpDef(type="LogSoftmax", version=5, since_opset=5, attrs=(Attr("axis", "int", 1),),
               infer=_infer(5), kernel=_log_softmax_kernel, input_types=(REAL,),
               scratch=per_element(20)))
