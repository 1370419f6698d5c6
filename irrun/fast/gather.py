"""Gather-1, -7, -8 and GatherND-5, -8 without batch dims, every index in range: one
``np.take``.

Detection post-processing gathers per class from small tensors (torchvision's ssdlite:
``scores[:, label]`` from ``[3234, 91]``, then the boxes and scores NonZero kept, 90
times each), where the reference's work around the gather (its shape rule, index
checks, the fancy index of every leading axis, the mask of out-of-range indices) takes
most of the 40-90 us a call.  ``np.take`` copies the same elements: bit for bit.

``np.take`` copies data that is not C-contiguous and aligned before it picks: Gather's
fast kernel does that only for data of at most :data:`COPIED_UP_TO` bytes (its declared
scratch), and gives larger such data to the reference, which picks where the data lies.
An embedding table (contiguous) is never copied.

They give way to the reference for batch dims, an index out of range (Gather gives
zeros there, GatherND refuses it), index tensors that are not integers, and GatherND's
empty index tuples, empty data or no tuple at all.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ir.registry import ShapeError
from ..ops.gather import _gather_params
from .registry import FastKernel, register_fast

# Data that np.take would copy (not C-contiguous, or unaligned) up to this size.
COPIED_UP_TO = 1 << 20
_FEW = 32  # indices checked one by one


def _copied(data: np.ndarray) -> bool:
    return not (data.flags.c_contiguous and data.flags.aligned)


def _gather_scratch(a: SimpleNamespace, inputs, outputs) -> int:
    """np.take's copy of data it cannot read in place, for data small enough to copy."""
    data = inputs[0]
    if data.shape is None or not all(isinstance(d, int) for d in data.shape):
        return COPIED_UP_TO
    nbytes = int(np.prod(data.shape, dtype=np.int64)) * (
        data.element_type.item_bytes if data.element_type else 16)
    return nbytes if nbytes <= COPIED_UP_TO else 0


def _in_range(idx: np.ndarray, sizes) -> np.ndarray | None:
    """``idx`` as int64, negative ones counted from the end of ``sizes``; None if any is
    still out of range."""
    i = idx.astype(np.int64)
    if not i.size:
        return i
    if i.min() < 0:
        i = np.where(i < 0, i + sizes, i)
    if bool(((i < 0) | (i >= sizes)).any()):
        return None
    return i


def _gather(a: SimpleNamespace, data: np.ndarray, idx: np.ndarray, axis_arr: np.ndarray):
    # (The arrays' own methods: NumPy's functions of the same name cost a microsecond or
    # two more a call, which a tiny model's decode step pays some ten times.)
    axis_arr = np.asarray(axis_arr)
    if idx.dtype.kind not in "iu" or axis_arr.size != 1 or data.ndim == 0:
        return NotImplemented
    try:
        batch, axis = _gather_params(a, data.ndim, idx.ndim, int(axis_arr.reshape(-1)[0]))
    except ShapeError:
        return NotImplemented
    if batch != 0 or data.shape[axis] == 0 or (data.nbytes > COPIED_UP_TO and _copied(data)):
        return NotImplemented
    n = data.shape[axis]
    if idx.size <= _FEW and idx.dtype.kind == "i":
        # A shape's entries, a token's row, a beam's cache: checked in Python, faster
        # than NumPy's checks of a few values; take counts a negative index from the end.
        if all(-n <= v < n for v in idx.reshape(-1).tolist()):
            return (np.asarray(data.take(idx, axis=axis)),)
        return NotImplemented
    i = _in_range(idx, n)
    if i is None:
        return NotImplemented
    return (np.asarray(np.take(data, i, axis=axis)),)


def _gather_nd(a: SimpleNamespace, data: np.ndarray, idx: np.ndarray):
    if a.batch_dims != 0 or idx.ndim == 0 or idx.dtype.kind not in "iu" or not data.size:
        return NotImplemented
    k = idx.shape[-1]
    if not 0 < k <= data.ndim:
        return NotImplemented
    tuples = _in_range(idx.reshape(-1, k), np.array(data.shape[:k], np.int64))
    if tuples is None or not len(tuples):
        return NotImplemented
    if k == 1:
        picked = np.take(data, tuples[:, 0], axis=0)
    else:
        flat = np.ravel_multi_index(tuple(tuples.T), data.shape[:k])
        picked = np.take(data.reshape(-1, *data.shape[k:]), flat, axis=0)
    return (picked.reshape((*idx.shape[:-1], *data.shape[k:])),)


register_fast(FastKernel(
    "Gather", (1, 7, 8), "no batch dims, integer indices all in range, data contiguous or "
    "at most 1 MiB: np.take", _gather, scratch=_gather_scratch))
register_fast(FastKernel(
    "GatherND", (5, 8), "no batch dims, integer indices all in range: np.take of the tuples' "
    "flat offsets", _gather_nd))  # fmt: skip
