"""Reductions, SoftMax and LogSoftmax split over the run's threads.

A block is a range of the outermost axis before every reduced one (before SoftMax's
axis) that is longer than one, so that it holds whole runs along the reduced axes laid
out as in the whole: NumPy reduces it in the same order, and the reference kernel on the
block gives the whole's values for its part, bit for bit (see :mod:`.blocks`).  Only for
C-contiguous inputs: in another layout, a block's innermost axis in memory may be
another than the whole's, and NumPy would sum it in another order.

At one thread, ReduceSum and ReduceMean of f32 or f64 data call the reference's
``np.sum`` (and its division by the count) directly: the same calls, bit for bit.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .. import threads
from ..ir.registry import supported_ops
from ..ops._shapes import flat_ints
from ..ops.reduction import reduction_axes
from ..ops.softmax import softmax_axis
from . import blocks
from .registry import FastKernel, register_fast

APPLIES = ("more than one thread, a C-contiguous input of at least 2**20 elements and an axis "
           "longer than one before the reduced ones: the reference on blocks of that axis")
REDUCTIONS = ("ReduceMean", "ReduceMax", "ReduceSum", "ReduceProd", "ReduceMin", "ReduceL1",
              "ReduceL2", "ReduceLogicalAnd", "ReduceLogicalOr")


def _reduction(reference):
    def run(attrs: SimpleNamespace, x: np.ndarray, axes: np.ndarray):
        if not (blocks.worth_splitting(x.size) and x.flags.c_contiguous):
            return NotImplemented
        ax = reduction_axes(flat_ints(axes), x.ndim)
        shape = tuple(1 if i in ax else d for i, d in enumerate(x.shape)
                      if attrs.keep_dims or i not in ax)

        def compute(v: np.ndarray) -> np.ndarray:
            return reference(attrs, v, axes)[0]

        return (blocks.reduced(compute, x, ax, shape, x.dtype),)

    return run


def _along_axis(reference, version: int):
    def run(attrs: SimpleNamespace, x: np.ndarray):
        if not (blocks.worth_splitting(x.size) and x.flags.c_contiguous):
            return NotImplemented
        axis = softmax_axis(attrs.axis, x.ndim, version)
        return (blocks.across(lambda v: reference(attrs, v)[0], x, axis, x.dtype),)

    return run


DIRECT = ("at one thread, f32 or f64 data: the reference's np.sum (and division by the "
          "count) called directly")


def _direct_sum(reference, mean: bool):
    """ReduceSum (ReduceMean with ``mean``) at one thread of f32 or f64 data: the
    reference's NumPy calls without its work around them (packed and narrow types, NumPy's
    error state, which a run has set), bit for bit; otherwise the split."""
    split = _reduction(reference)

    def run(attrs: SimpleNamespace, x: np.ndarray, axes: np.ndarray):
        if threads.current() != 1 or x.dtype not in _WIDE:
            return split(attrs, x, axes)
        ax = reduction_axes(flat_ints(axes), x.ndim)
        total = np.sum(x, axis=ax, keepdims=attrs.keep_dims, dtype=x.dtype)
        if mean:
            count = math.prod(x.shape[i] for i in ax)
            if count:
                total = total / np.asarray(count, x.dtype)
        return (np.asarray(total),)

    return run


_WIDE = (np.dtype(np.float32), np.dtype(np.float64))

for _op in supported_ops():
    if _op.type in ("ReduceSum", "ReduceMean"):
        register_fast(FastKernel(_op.type, (_op.version,), f"{DIRECT}; {APPLIES}",
                                 _direct_sum(_op.kernel, _op.type == "ReduceMean")))  # fmt: skip
    elif _op.type in REDUCTIONS:
        register_fast(FastKernel(_op.type, (_op.version,), APPLIES, _reduction(_op.kernel)))
    elif _op.type in ("SoftMax", "LogSoftmax"):
        register_fast(FastKernel(_op.type, (_op.version,), APPLIES.replace("reduced ones", "axis"),
                                 _along_axis(_op.kernel, _op.version)))
