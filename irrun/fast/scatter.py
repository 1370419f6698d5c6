"""ScatterElementsUpdate-3 and -12 without reduction where the indices pick whole slices:
one index per slice along the axis, repeated over the other dims (what PyTorch's
``result[idx] = values`` becomes, as torchvision's MultiScaleRoIAlign puts each level's
pooled regions back in place: indices ``[997, 256, 7, 7]`` that hold one row number per
region).

The reference turns every index element into a flat offset and finds, with a sort of
all of them, the last update of each position (12.5 million offsets there: 1.9 s).
Here the indices are checked to be constant along every dim but the axis (one pass
over them); then the slices are written whole, each row's last update winning (a sort
of the rows alone).  The same elements are written with the same values: bit for bit.

It gives way to the reference for a reduction, indices that vary within a slice, and
whatever the reference refuses (indices out of range, shapes that do not fit, types
that differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.registry import TensorInfo
from ..ops._scratch import largest
from .registry import FastKernel, register_fast


def slice_rows(idx: np.ndarray, axis: int) -> np.ndarray | None:
    """The index of each slice of ``idx`` along ``axis`` where it is the same across the
    slice's elements, else None."""
    n = idx.shape[axis]
    moved = np.moveaxis(idx, axis, 0).reshape(n, -1)
    if moved.shape[1] == 0:
        return None
    first = moved[:, :1]
    return first[:, 0] if bool((moved == first).all()) else None


def _scatter_rows(a: SimpleNamespace, data: np.ndarray, idx: np.ndarray, upd: np.ndarray,
                  axis_arr: np.ndarray):  # fmt: skip
    if (getattr(a, "reduction", "none") != "none" or data.ndim == 0 or idx.ndim != data.ndim
            or upd.shape != idx.shape or data.dtype != upd.dtype or np.size(axis_arr) != 1
            or idx.size == 0):  # fmt: skip
        return NotImplemented
    axis = int(np.asarray(axis_arr).reshape(-1)[0])
    if not -data.ndim <= axis < data.ndim:
        return NotImplemented
    axis %= data.ndim
    if any(i != axis and n > d for i, (n, d) in enumerate(zip(idx.shape, data.shape, strict=True))):
        return NotImplemented
    rows = slice_rows(idx, axis)
    if rows is None:
        return NotImplemented
    n = data.shape[axis]
    rows = rows.astype(np.int64)
    rows = np.where(rows < 0, rows + n, rows)
    if bool(((rows < 0) | (rows >= n)).any()):
        return NotImplemented
    _, first_from_end = np.unique(rows[::-1], return_index=True)
    keep = len(rows) - 1 - first_from_end  # each row's last update
    out = data.copy()
    region = tuple(slice(0, m) for i, m in enumerate(idx.shape) if i != axis)
    np.moveaxis(out, axis, 0)[(rows[keep], *region)] = np.moveaxis(upd, axis, 0)[keep]
    return (out,)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The indices' comparison with their first slice (a boolean each), and a copy of the
    indices with the axis first (8 bytes each at most) where it is not."""
    return 9 * largest(inputs[1:2])


register_fast(FastKernel(
    "ScatterElementsUpdate", (3, 12),
    "no reduction, indices the same across each slice along the axis (torch's "
    "result[idx] = values): whole slices written, the last update of a row winning",
    _scatter_rows, scratch=_scratch))  # fmt: skip
