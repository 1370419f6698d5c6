"""Reshape, Unsqueeze, Squeeze and Broadcast with their output shape kept per input
shape and target.

Each of these gives its data in another shape worked out from the data's shape, its
second input (a target shape or axes) and its attributes; in a decode step of a tiny
transformer that work in Python (3-5 us) is most of the call.  Here the shape the
reference gave is kept in a table keyed by the data's shape, the second input's type,
shape and bytes and the attributes the rule reads, and a call the table knows is
``x.reshape(shape)``: what the reference returns, a view where NumPy can give one.  A key
not in the table runs the reference (and raises its errors).  Each table holds at most
:data:`KEPT` shapes and is emptied when full.

Broadcast keeps the shape its data takes before broadcasting (its dims at the places the
mode and the axes give) and the output's, and a known call is the reference's copy of
its data placed and filled into the output shape, without the checks that found them.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np

from ..ir.registry import Kernel, supported_ops
from ..ops._shapes import flat_ints
from ..ops.movement import _aligned_shape, _filled
from .registry import FastKernel, register_fast

KEPT = 512

# What of an op's attributes its shape rule reads.
ATTRIBUTES: dict[str, Callable[[SimpleNamespace], object]] = {
    "Reshape": lambda a: a.special_zero,
    "Unsqueeze": lambda a: None,
    "Squeeze": lambda a: getattr(a, "allow_axis_skip", None),
}
APPLIES = "always: the output shape kept per data shape, target (or axes) and attributes"


def _bits(v: np.ndarray | None) -> tuple | None:
    return None if v is None else (v.dtype.str, v.shape, v.tobytes())


def kept_shape(reference: Kernel, attributes: Callable[[SimpleNamespace], object]) -> Kernel:
    """``reference`` (one output, ``x`` in another shape), its shapes kept (see above)."""
    table: dict[tuple, tuple[int, ...]] = {}

    def run(attrs: SimpleNamespace, x: np.ndarray, arg: np.ndarray | None = None):
        try:
            key = (x.shape, _bits(arg), attributes(attrs))
        except AttributeError:  # a second input that is not an array: the reference reads it
            return NotImplemented
        shape = table.get(key)
        if shape is None:
            out = reference(attrs, x) if arg is None else reference(attrs, x, arg)
            if len(table) >= KEPT:
                table.clear()
            table[key] = out[0].shape
            return out
        return (x.reshape(shape),)

    run.table = table  # type: ignore[attr-defined]  # (for tests)
    return run


def kept_broadcast(reference: Kernel) -> Kernel:
    """Broadcast's ``reference``, its shapes kept (see above)."""
    table: dict[tuple, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def run(attrs: SimpleNamespace, x: np.ndarray, target: np.ndarray,
            axes: np.ndarray | None = None):  # fmt: skip
        try:
            key = (x.shape, _bits(target), _bits(axes), attrs.mode)
        except AttributeError:
            return NotImplemented
        shapes = table.get(key)
        if shapes is None:
            out = reference(attrs, x, target) if axes is None else reference(attrs, x, target, axes)
            if attrs.mode == "bidirectional":
                placed = x.shape
            else:
                t = flat_ints(target)
                at = _aligned_shape(attrs, x.shape, t, None if axes is None else flat_ints(axes))
                dims = [1] * len(t)
                for d, p in zip(x.shape, at, strict=True):
                    dims[p] = d
                placed = tuple(dims)
            if len(table) >= KEPT:
                table.clear()
            table[key] = (placed, out[0].shape)
            return out
        placed, shape = shapes
        return (_filled(shape, x.reshape(placed)),)  # the reference's own copy

    run.table = table  # type: ignore[attr-defined]  # (for tests)
    return run


for _op in supported_ops():
    if _op.type in ATTRIBUTES:
        register_fast(FastKernel(_op.type, (_op.version,), APPLIES,
                                 kept_shape(_op.kernel, ATTRIBUTES[_op.type])))  # fmt: skip
    elif _op.type == "Broadcast":
        register_fast(FastKernel(_op.type, (_op.version,), "always: the shapes kept per data "
                                 "shape, target, axes and mode; the reference's copy",
                                 kept_broadcast(_op.kernel)))  # fmt: skip
