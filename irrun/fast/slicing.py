"""Slice-8 with its NumPy index worked out once per data shape and bounds.

A transformer's Slices take constant bounds (the halves a rotary embedding swaps, a
mask's columns) from tensors whose shapes repeat from call to call; the reference works
the index out of start, stop, step and axes at every call (8-10 us in Python, for a copy
of a few elements).  Here the index is kept in a table keyed by the data's shape and the
bounds' types, shapes and bytes, so that a call is a look-up and the reference's copy
``x[index]``: the same elements, bit for bit.  A key not in the table runs the
reference's rule (and raises its errors); the table holds at most :data:`KEPT` indices
and is emptied when full (a model slicing ever other shapes).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ops.slicing import _slice_index
from .registry import FastKernel, register_fast

KEPT = 512
_INDEX: dict[tuple, tuple[slice, ...]] = {}


def _bits(v: np.ndarray) -> tuple:
    return (v.dtype.str, v.shape, v.tobytes())


def _slice(a: SimpleNamespace, x: np.ndarray, start: np.ndarray, stop: np.ndarray,
           step: np.ndarray, axes: np.ndarray | None = None):  # fmt: skip
    try:
        key = (x.shape, _bits(start), _bits(stop), _bits(step),
               None if axes is None else _bits(axes))  # fmt: skip
    except AttributeError:  # bounds given as lists, not arrays: the reference reads them
        return NotImplemented
    index = _INDEX.get(key)
    if index is None:
        index = _slice_index(x, start, stop, step, axes)
        if len(_INDEX) >= KEPT:
            _INDEX.clear()
        _INDEX[key] = index
    return (np.ascontiguousarray(x[index]),)


register_fast(FastKernel(
    "Slice", (8,), "always: the index kept per data shape and bounds, the reference's copy",
    _slice))  # fmt: skip
