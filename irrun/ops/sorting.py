"""Sorting and searching sorted values: Bucketize-3, SearchSorted-15 and Unique-10.

* Bucketize-3 gives each value the index of its bucket among the sorted
  ``buckets``: ``lower_bound`` with ``with_right_bound`` (``b[i-1] < x <= b[i]``),
  ``upper_bound`` without.  NaN compares false, so it lands in bucket 0 with the
  right bound and in the last bucket without it, as in the CPU plugin.
* SearchSorted-15 is ``lower_bound`` (``right_mode`` false) or ``upper_bound`` of
  each value in the innermost rows of ``sorted_sequence``; NaN values give 0 in both
  modes, as in the plugin (it counts ``s < v`` or ``s <= v``).
* Unique-10 finds the distinct elements (or slices along ``axis``), in ascending
  (lexicographic for slices) order with ``sorted`` or in order of first occurrence,
  with the first occurrence's index, each element's index into the result and the
  counts.  -0.0 and 0.0 are one value (the first one seen is kept); each NaN is
  distinct and, sorted, comes last.  irrun follows the specification where the
  plugin errs: its sorted output is not even unique when the input holds NaN, along
  an axis other than 0 it leaves duplicate slices, and with u8 data along an axis
  its index outputs are garbage.  The output length depends on the data: the shape rule
  gives ``1..N`` unless the input is a known constant.

The reference kernels of these three cannot be run from Python (``Model.evaluate``
fails), so the tests compare them with the CPU plugin only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Shape, format_shape
from ..ir.element_types import ELEMENT_TYPES, INDEX_TYPES, LOW_FLOATS, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import bounded_dim, normalize_axis, one_d, scalar_like


def _check_index_type(et) -> None:
    if et.name not in INDEX_TYPES:
        raise KernelError(f"the output type must be i32 or i64, got {et.name}")


# --------------------------------------------------------------------------- Bucketize


def _common(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.result_type(x.dtype, y.dtype)
    if t.kind == "f" and t.itemsize < 4:
        t = np.dtype(np.float32)
    return x.astype(t, copy=False), y.astype(t, copy=False)


def _bucketize_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data, buckets = inputs
    one_d(buckets, "buckets")
    return [TensorInfo(data.shape, a.output_type)]


def _bucketize(a: SimpleNamespace, x: np.ndarray, buckets: np.ndarray):
    if buckets.ndim != 1:
        raise KernelError(f"buckets must be 1-D, got shape {list(buckets.shape)}")
    xv, bv = _common(x, buckets)
    side = "left" if a.with_right_bound else "right"
    out = np.searchsorted(bv, xv, side=side)
    if xv.dtype.kind == "f":
        out = np.where(np.isnan(xv), 0 if a.with_right_bound else bv.size, out)
    return (out.astype(a.output_type.dtype),)


register(
    OpDef(type="Bucketize", version=3, since_opset=3,
          attrs=(Attr("output_type", "element_type", ELEMENT_TYPES["i64"]),
                 Attr("with_right_bound", "bool", True)),
          infer=_bucketize_infer, kernel=_bucketize, inputs=(2, 2),
          input_types=(NUMBERS, NUMBERS), check=lambda a: _check_index_type(a.output_type),
          scratch=per_element(14, 20))
)  # fmt: skip


def _search_sorted_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    seq, values = inputs
    if seq.element_type is not None and values.element_type is not None and (
            seq.element_type.name != values.element_type.name):  # fmt: skip
        raise ShapeError(f"sorted_sequence is {seq.element_type.name} and values "
                         f"{values.element_type.name}: they must be one type")  # fmt: skip
    out = values.shape
    if seq.shape is not None and len(seq.shape) == 0:
        raise ShapeError("sorted_sequence must have rank 1 or more, got a scalar")
    if seq.shape is not None and len(seq.shape) > 1 and values.shape is not None:
        if len(values.shape) != len(seq.shape):
            raise ShapeError(f"sorted_sequence {format_shape(seq.shape)} and values "
                             f"{format_shape(values.shape)} must have one rank")  # fmt: skip
        merged = []
        for i, (s, v) in enumerate(zip(seq.shape[:-1], values.shape[:-1], strict=True)):
            m = _merge(s, v)
            if m is None:
                raise ShapeError(f"sorted_sequence {format_shape(seq.shape)} and values "
                                 f"{format_shape(values.shape)} differ on axis {i}")  # fmt: skip
            merged.append(m)
        out = (*merged, values.shape[-1])
    return [TensorInfo(out, a.output_type)]


def _merge(s: Dim, v: Dim) -> Dim | None:
    (slo, shi), (vlo, vhi) = ((d, d) if isinstance(d, int) else (d.lo, d.hi) for d in (s, v))
    lo = max(slo, vlo)
    hi = shi if vhi is None else vhi if shi is None else min(shi, vhi)
    if hi is not None and hi < lo:
        return None
    return bounded_dim(lo, hi)


def search_rows(s: np.ndarray, v: np.ndarray, right: bool) -> np.ndarray:
    """For each row r, ``searchsorted(s[r], v[r])``: one stable sort of all rows merged.

    Sorted by (row, value, tag), a value is preceded in its row by exactly the
    sequence entries below it (left) or not above it (right): the tag puts values
    before equal sequence entries on the left, after them on the right.
    """
    rows, n = s.shape
    m = v.shape[1]
    if n == 0 or m == 0:
        return np.zeros((rows, m), np.int64)
    width = n + m
    merged = np.concatenate([s, v], axis=1)
    tag = np.concatenate([np.full(n, 0 if right else 1), np.full(m, 1 if right else 0)])
    row = np.repeat(np.arange(rows), width)
    order = np.lexsort((np.tile(tag, rows), merged.reshape(-1), row))
    is_value = order % width >= n
    seq_before = np.cumsum(~is_value.reshape(rows, width), axis=1).reshape(-1)
    out = np.empty(rows * m, np.int64)
    src = order[is_value]
    out[(src // width) * m + src % width - n] = seq_before[is_value]
    return out.reshape(rows, m)


def _search_sorted(a: SimpleNamespace, seq: np.ndarray, values: np.ndarray):
    s, v = _common(seq, values)
    if s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1]):
        raise KernelError(f"sorted_sequence {list(s.shape)} and values {list(v.shape)} do not "
                         f"match")  # fmt: skip
    side = "right" if a.right_mode else "left"
    if s.ndim == 1:
        out = np.searchsorted(s, v, side=side)
    else:
        rows = math.prod(s.shape[:-1])
        out = search_rows(s.reshape(rows, s.shape[-1]), v.reshape(rows, v.shape[-1]),
                                a.right_mode).reshape(v.shape)  # fmt: skip
    if v.dtype.kind == "f":
        out = np.where(np.isnan(v), 0, out)
    return (out.astype(a.output_type.dtype),)


register(
    OpDef(type="SearchSorted", version=15, since_opset=15,
          attrs=(Attr("right_mode", "bool", False),
                 Attr("output_type", "element_type", ELEMENT_TYPES["i64"])),
          infer=_search_sorted_infer, kernel=_search_sorted, inputs=(2, 2),
          input_types=(NUMBERS, NUMBERS), check=lambda a: _check_index_type(a.output_type),
          scratch=per_element(128))
)  # fmt: skip


# --------------------------------------------------------------------------- Unique


def unique_rows(rows: np.ndarray, sort: bool):
    """Distinct rows of a 2-D array: (first-occurrence indices, inverse, counts).

    Rows compare element by element as numbers (so -0.0 equals 0.0 and NaN equals
    nothing); sorted ascending lexicographically, else in order of first occurrence.
    """
    n = rows.shape[0]
    if n == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    # Stable: within a group of equal rows the first occurrence comes first.
    order = np.lexsort(rows.T[::-1]) if rows.shape[1] else np.arange(n)
    ordered = rows[order]
    starts = np.ones(n, bool)
    if n > 1:
        starts[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    group = np.cumsum(starts) - 1  # group of each sorted position
    first = order[starts]
    counts = np.diff(np.append(np.flatnonzero(starts), n))
    inverse = np.empty(n, np.int64)
    inverse[order] = group
    if not sort:
        by_first = np.argsort(first, kind="stable")
        rank = np.empty_like(by_first)
        rank[by_first] = np.arange(by_first.size)
        first, counts, inverse = first[by_first], counts[by_first], rank[inverse]
    return first, inverse, counts


def _unique_axis(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> tuple[bool, int | None]:
    """(has an axis, the axis when known)."""
    if len(inputs) < 2:
        return False, None
    info = inputs[1]
    v = scalar_like(info, "axis")
    return True, v


def _unique_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    it, ct = a.index_element_type, a.count_element_type
    has_axis, axis = _unique_axis(a, inputs)
    shape = data.shape
    if has_axis and axis is not None and shape is not None:
        axis = normalize_axis(axis, max(len(shape), 1), "axis")
    if data.value is not None and (not has_axis or axis is not None):
        outs = _unique(a, np.asarray(data.value), *(
            [np.array(axis)] if has_axis else []))  # fmt: skip
        return [TensorInfo(o.shape, t) for o, t in zip(outs, (data.element_type, it, it, ct),
                                                       strict=True)]  # fmt: skip
    total = None
    if shape is not None and all(isinstance(d, int) for d in shape):
        total = math.prod(shape)  # type: ignore[arg-type]
    some = DYNAMIC if not total else bounded_dim(1, total)
    if not has_axis:
        out0: Shape | None = (some,)
        rev: Dim = total if total else DYNAMIC
    elif shape is None or axis is None:
        out0, rev = (None if shape is None else (DYNAMIC,) * len(shape)), DYNAMIC
    else:
        d = shape[axis]
        out0 = tuple(
            (DYNAMIC if not isinstance(d, int) else d if d == 0 else bounded_dim(1, d))
            if i == axis else s for i, s in enumerate(shape))  # fmt: skip
        rev = d if isinstance(d, int) else DYNAMIC
    return [TensorInfo(out0, data.element_type), TensorInfo((some,), it),
            TensorInfo((rev,), it), TensorInfo((some,), ct)]  # fmt: skip


def _check_unique(a: SimpleNamespace) -> None:
    _check_index_type(a.index_element_type)
    _check_index_type(a.count_element_type)


def _unique(a: SimpleNamespace, x: np.ndarray, axis: np.ndarray | None = None):
    if axis is None:
        rows = x.reshape(-1, 1)
        first, inverse, counts = unique_rows(rows, a.sorted)
        out = x.reshape(-1)[first]
    else:
        ax = int(np.asarray(axis).reshape(-1)[0])
        if not -x.ndim <= ax < x.ndim:
            raise KernelError(f"axis {ax} is out of range for rank {x.ndim}")
        moved = np.moveaxis(x, ax, 0)
        first, inverse, counts = unique_rows(moved.reshape(moved.shape[0], -1), a.sorted)
        out = np.moveaxis(moved[first], 0, ax)
    it, ct = a.index_element_type.dtype, a.count_element_type.dtype
    return (np.ascontiguousarray(out), first.astype(it), inverse.astype(it), counts.astype(ct))


# OpenVINO takes any data; irrun's unique values are compared with OpenVINO's for the
# numbers, the f8 floats and booleans (no OpenVINO kernel runs f4e2m1 or packed data).
UNIQUE_TYPES = (*NUMBERS, *LOW_FLOATS[:3], "boolean")

register(
    OpDef(type="Unique", version=10, since_opset=10,
          attrs=(Attr("sorted", "bool", True),
                 Attr("index_element_type", "element_type", ELEMENT_TYPES["i64"]),
                 Attr("count_element_type", "element_type", ELEMENT_TYPES["i64"])),
          infer=_unique_infer, kernel=_unique, inputs=(1, 2),
          input_types=(UNIQUE_TYPES, INDEX_TYPES), check=_check_unique,
          scratch=per_element(64))
)  # fmt: skip
