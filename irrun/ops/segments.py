"""Segments and sparse rows: SegmentMax-16 and SparseFillEmptyRows-16.

- **SegmentMax-16** takes the maximum of the rows of ``data`` (along its first dim) that
  share a segment id: ``output[s] = max(data[i] for i where segment_ids[i] == s)``.  There
  are ``num_segments`` segments where that input is given (ids from it on are left out, as
  the reference kernel leaves them), else ``max(segment_ids) + 1``.  An empty segment is 0
  (``fill_mode`` ZERO) or the type's lowest finite value (LOWEST: ``-3.4e38`` for f32,
  ``-65504`` for f16).  NaN never wins: the reference starts every segment at the lowest
  value and keeps ``std::max(current, x)``, which keeps ``current`` against a NaN, so a
  segment of NaNs alone is the lowest value (``np.fmax`` from the lowest value).  The ids
  must be sorted and not negative (KernelError otherwise).
- **SparseFillEmptyRows-16** completes a 2-D sparse tensor (``indices`` ``[M, 2]``,
  ``values`` ``[M]``, ``dense_shape`` ``[rows, cols]``): every row with no entry gets one at
  column 0 holding ``default_value``.  The outputs are the entries' indices and values in
  row-major order (entries at the same position keep their input order) and a boolean per
  row that says whether it was empty.  An index outside ``dense_shape`` is a KernelError.

Where irrun departs from OpenVINO's CPU plugin (it follows the reference kernels, which
OpenVINO's ``evaluate`` does not expose for these ops):
* SegmentMax's LOWEST for f16 data is ``-65504`` (the reference's
  ``numeric_limits<float16>::lowest()``), for i64 ``-2**63``; the plugin gives ``-inf`` and
  ``-2**31`` (it runs i64 as i32).
* SegmentMax with unsorted ids is an error; the plugin returns an empty tensor (OpenVINO's
  shape inference refuses unsorted constant ids).  Data with no rows crashes the plugin.
* SparseFillEmptyRows with an index outside ``dense_shape`` is an error: the plugin drops an
  entry whose row is past the last and keeps one whose column is, the reference keeps both.
* A ``num_segments`` known to be negative, or negative constant segment ids, are shape
  errors; OpenVINO's shape inference makes the first 0 and counts segments from the second.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, format_shape
from ..ir.element_types import ELEMENT_TYPES, INDEX_TYPES, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import element_count, int_values, merge_dims

FILL_MODES = ("zero", "lowest")


def _rank(info: TensorInfo, rank: int, what: str) -> None:
    if info.shape is not None and len(info.shape) != rank:
        kind = "a scalar" if rank == 0 else f"{rank}-D"
        raise ShapeError(f"{what} must be {kind}, got shape {format_shape(info.shape)}")


# --------------------------------------------------------------------------- SegmentMax


def _sorted_ids(ids: Sequence[int], error: type[Exception]) -> None:
    ids = np.asarray(ids, np.int64).reshape(-1)
    if ids.size and ids.min() < 0:
        raise error(f"segment id {int(ids.min())} is negative; ids must be 0 or more")
    falls = np.flatnonzero(np.diff(ids) < 0)
    if falls.size:
        i = int(falls[0])
        raise error(f"segment_ids must be sorted, but {int(ids[i + 1])} at [{i + 1}] follows "
                    f"{int(ids[i])}")  # fmt: skip


def _segment_max_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, ids = inputs[:2]
    if data.shape is not None and len(data.shape) == 0:
        raise ShapeError("data must have rank 1 or more, got a scalar")
    _rank(ids, 1, "segment_ids")
    if data.shape is not None and ids.shape is not None:
        merge_dims(data.shape[0], ids.shape[0],
                   f"segment_ids {format_shape(ids.shape)} must have an id per row of data "
                   f"{format_shape(data.shape)}")  # fmt: skip
    n = DYNAMIC
    known_ids = int_values(ids)
    if known_ids is not None:
        _sorted_ids(known_ids, ShapeError)
        n = max(known_ids) + 1 if known_ids else 0
    if len(inputs) > 2:
        _rank(inputs[2], 0, "num_segments")
        values = int_values(inputs[2])
        if values is not None:
            if values[0] < 0:
                raise ShapeError(f"num_segments is {values[0]}; it must not be negative")
            n = values[0]
    if data.shape is None:
        return [TensorInfo(None, data.element_type)]
    return [TensorInfo((n, *data.shape[1:]), data.element_type)]


def _lowest(dtype: np.dtype):
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "V":  # bf16
        import ml_dtypes

        return ml_dtypes.finfo(dtype).min
    return np.finfo(dtype).min


def _segment_max(a: SimpleNamespace, data, segment_ids, num_segments=None):
    infos = [TensorInfo(data.shape, None), TensorInfo(segment_ids.shape, None)]
    if num_segments is not None:
        infos.append(TensorInfo(num_segments.shape, None, num_segments))
    _segment_max_infer(a, infos)
    ids = segment_ids.astype(np.int64)
    _sorted_ids(ids, KernelError)
    if num_segments is not None:
        n = int(np.asarray(num_segments).reshape(-1)[0])
    else:
        n = int(ids[-1]) + 1 if ids.size else 0
    keep = ids < n
    ids = ids[keep]
    rows = data.reshape(data.shape[0], element_count(data.shape[1:]))[keep]
    # bf16 runs in f32: taking a maximum rounds nothing.
    work = rows.astype(np.float32) if data.dtype.kind == "V" else rows
    out = np.full((n, rows.shape[1]), _lowest(data.dtype), work.dtype)
    (np.fmax if work.dtype.kind == "f" else np.maximum).at(out, ids, work)
    if a.fill_mode == "zero":
        out[np.bincount(ids, minlength=n) == 0] = 0
    return (out.astype(data.dtype, copy=False).reshape(n, *data.shape[1:]),)


# --------------------------------------------------------------------------- SparseFillEmptyRows


def _fill_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    values, dense_shape, indices, default = inputs
    _rank(values, 1, "values")
    _rank(dense_shape, 1, "dense_shape")
    _rank(indices, 2, "indices")
    _rank(default, 0, "default_value")
    ta, tb = dense_shape.element_type, indices.element_type
    if ta is not None and tb is not None and ta.name != tb.name:
        raise ShapeError(f"indices are {tb.name} but dense_shape is {ta.name}; they must match")
    if dense_shape.shape is not None:
        merge_dims(dense_shape.shape[0], 2, "dense_shape must hold 2 values (a 2-D tensor)")
    m = DYNAMIC
    if indices.shape is not None:
        merge_dims(indices.shape[1], 2, f"indices {format_shape(indices.shape)} must be [M,2]")
        m = indices.shape[0]
    if values.shape is not None:
        m = merge_dims(m, values.shape[0],
                       f"indices {format_shape(indices.shape or (DYNAMIC, 2))} must have a row "
                       f"per value of values {format_shape(values.shape)}")  # fmt: skip
    shape, known = int_values(dense_shape), int_values(indices)
    rows, count = DYNAMIC, DYNAMIC
    if shape is not None:
        if len(shape) != 2 or min(shape) < 0:
            raise ShapeError(f"dense_shape {shape} must be two sizes of 0 or more")
        rows = shape[0]
        if known is not None:
            pairs = np.asarray(known, np.int64).reshape(-1, 2)
            _check_in_shape(pairs, shape, ShapeError)
            count = len(pairs) + rows - len(np.unique(pairs[:, 0]))
    idx_type = tb or ta
    return [TensorInfo((count, 2), idx_type), TensorInfo((count,), values.element_type),
            TensorInfo((rows,), ELEMENT_TYPES["boolean"])]  # fmt: skip


def _check_in_shape(pairs: np.ndarray, shape: Sequence[int], error: type[Exception]) -> None:
    for col, (size, what) in enumerate(zip(shape, ("row", "column"), strict=True)):
        bad = np.flatnonzero((pairs[:, col] < 0) | (pairs[:, col] >= size))
        if bad.size:
            i = int(bad[0])
            raise error(f"index {pairs[i].tolist()} at [{i}] has {what} {int(pairs[i, col])}, "
                        f"outside dense_shape {list(shape)}")  # fmt: skip


def _fill(a: SimpleNamespace, values, dense_shape, indices, default_value):
    _fill_infer(a, [TensorInfo(x.shape, None) for x in
                    (values, dense_shape, indices, default_value)])  # fmt: skip
    shape = [int(v) for v in dense_shape.reshape(-1)]
    if min(shape) < 0:
        raise KernelError(f"dense_shape {shape} must be two sizes of 0 or more")
    pairs = indices.astype(np.int64).reshape(-1, 2)
    _check_in_shape(pairs, shape, KernelError)
    empty = np.bincount(pairs[:, 0], minlength=shape[0]) == 0
    new_rows = np.flatnonzero(empty)
    rows = np.concatenate([pairs[:, 0], new_rows])
    cols = np.concatenate([pairs[:, 1], np.zeros(len(new_rows), np.int64)])
    fill = np.full(len(new_rows), np.asarray(default_value).astype(values.dtype))
    everything = np.concatenate([values, fill])
    order = np.lexsort((cols, rows))  # stable: equal positions keep their input order
    out_indices = np.stack([rows[order], cols[order]], axis=1).astype(indices.dtype)
    return out_indices, everything[order], empty


# --------------------------------------------------------------------------- registration

register(OpDef(type="SegmentMax", version=16, since_opset=16,
               attrs=(Attr("fill_mode", "enum", choices=FILL_MODES),),
               infer=_segment_max_infer, kernel=_segment_max, inputs=(2, 3),
               shape_attrs=("fill_mode",),
               input_types=(NUMBERS, INDEX_TYPES, INDEX_TYPES),
               scratch=per_element(8, 12, 8)))  # fmt: skip
register(OpDef(type="SparseFillEmptyRows", version=16, since_opset=16, attrs=(),
               infer=_fill_infer, kernel=_fill, inputs=(4, 4),
               input_types=((*NUMBERS, "boolean"), INDEX_TYPES, INDEX_TYPES,
                            (*NUMBERS, "boolean")),
               scratch=per_element(48)))  # fmt: skip
