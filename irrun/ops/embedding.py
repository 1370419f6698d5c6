"""Embedding bags: EmbeddingBagOffsetsSum-3, EmbeddingBagOffsets-15, EmbeddingBagPackedSum-3,
EmbeddingBagPacked-15 and EmbeddingSegmentsSum-3.

Each op gathers rows of ``emb_table`` (``[num_emb, d1, d2, ...]``) by ``indices``, multiplies
each by its ``per_sample_weights`` value where that input is given, and reduces the rows of a
bag to one output row (``[bags, d1, d2, ...]``):

* **EmbeddingBagOffsets(Sum)**: bag ``b`` holds ``indices[offsets[b]:offsets[b + 1]]`` (the
  last bag runs to the end); indices before ``offsets[0]`` belong to no bag.  Offsets must
  not decrease and must lie in ``0..len(indices)``.
* **EmbeddingBagPacked(Sum)**: ``indices`` is ``[batch, indices_per_bag]``, a bag per row.
* **EmbeddingSegmentsSum**: index ``i`` goes to bag ``segment_ids[i]`` of ``num_segments``;
  the ids need not be sorted.

The version-15 ops take ``reduction`` ``sum`` or ``mean`` (``mean`` takes no weights); the
others sum.  A bag with no index is the row ``emb_table[default_index]`` where that input is
given (EmbeddingBagOffsets: and not negative; ``-1`` is the spec's "none"), else zeros; a
mean never divides it.  Integer means truncate toward zero (the C++ division of both
OpenVINO kernels); integer sums and products wrap in the table's type.  Sums run in index
order, one ``+`` after another (``np.add.at``), so f32 results equal the CPU plugin's.
EmbeddingBagPacked's ``mean`` over bags of no index is ``0/0``: NaN for floats, as the
reference kernel gives, and an error for integers.

An index, segment id or default index outside its range is an error (KernelError), as are
decreasing offsets or offsets past the end of ``indices``.

Where irrun departs from OpenVINO:
* f16 and bf16 tables are summed in f32 and rounded once at the end, as the CPU plugin does;
  OpenVINO's reference kernels round after every step in the table's type.
* An empty last bag of EmbeddingBagOffsets (``offsets[-1] == len(indices)``, so also any
  bag when ``indices`` is empty) is empty, as the spec says: the CPU plugin leaves that row
  as unspecified memory and the reference kernel refuses it.
* Out-of-range indices, segment ids, default indices and decreasing offsets: the CPU plugin
  returns unspecified memory or skips them; the reference refuses most of them, and irrun
  refuses them all.  EmbeddingBagOffsets with a default index below ``-1`` fills empty bags
  with zeros as the reference does (the plugin reads outside the table); EmbeddingSegmentsSum
  refuses any negative default index, as its reference does (the plugin, again, reads
  unspecified memory).
* EmbeddingBagPacked with ``indices_per_bag`` 0: the plugin returns unspecified memory.
* EmbeddingSegmentsSum with unsorted segment ids (the spec asks for sorted ones): each
  index adds to its own segment, as in the reference; the plugin takes runs of equal ids
  for segments, so ids ``[0, 1, 0]`` over rows 1, 10, 100 give ``[11, 10]`` there, not
  ``[101, 10]``.
* f64 tables: the plugin computes in f32; irrun in f64, as the reference.
* A ``num_segments`` known to be negative is a shape error; OpenVINO's shape inference
  makes it 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, format_shape
from ..ir.element_types import INDEX_TYPES, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import merge_dims, normalized_indices, scalar_like

REDUCTIONS = ("sum", "mean")


# --------------------------------------------------------------------------- shape rules


def _rank(info: TensorInfo, rank: int, what: str) -> None:
    if info.shape is not None and len(info.shape) != rank:
        kind = "a scalar" if rank == 0 else f"{rank}-D"
        raise ShapeError(f"{what} must be {kind}, got shape {format_shape(info.shape)}")


def _same_shape(a: TensorInfo, b: TensorInfo, what: str) -> None:
    if a.shape is None or b.shape is None:
        return
    if len(a.shape) != len(b.shape):
        raise ShapeError(f"{what}: {format_shape(a.shape)} and {format_shape(b.shape)}")
    for x, y in zip(a.shape, b.shape, strict=True):
        merge_dims(x, y, f"{what}: {format_shape(a.shape)} and {format_shape(b.shape)}")


def _same_type(a: TensorInfo, b: TensorInfo, what_a: str, what_b: str) -> None:
    ta, tb = a.element_type, b.element_type
    if ta is not None and tb is not None and ta.name != tb.name:
        raise ShapeError(f"{what_a} are {tb.name} but {what_b} are {ta.name}; they must match")


def _output(table: TensorInfo, bags) -> list[TensorInfo]:
    if table.shape is None:
        return [TensorInfo(None, table.element_type)]
    if len(table.shape) == 0:
        raise ShapeError("emb_table must have rank 1 or more, got a scalar")
    return [TensorInfo((bags, *table.shape[1:]), table.element_type)]


def _weights(a: SimpleNamespace, inputs: Sequence[TensorInfo], port: int, indices: TensorInfo):
    if len(inputs) <= port:
        return
    weights = inputs[port]
    if getattr(a, "reduction", "sum") != "sum":
        raise ShapeError(f"per_sample_weights are taken only with reduction sum, not "
                         f"{a.reduction}")  # fmt: skip
    _same_type(inputs[0], weights, "per_sample_weights", "emb_table")
    _same_shape(indices, weights, "indices and per_sample_weights must have the same shape")


def _offsets_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    table, indices, offsets = inputs[:3]
    _rank(indices, 1, "indices")
    _rank(offsets, 1, "offsets")
    _same_type(indices, offsets, "offsets", "indices")
    if len(inputs) > 3:
        _rank(inputs[3], 0, "default_index")
        _same_type(indices, inputs[3], "default_index", "indices")
    _weights(a, inputs, 4, indices)
    return _output(table, DYNAMIC if offsets.shape is None else offsets.shape[0])


def _packed_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    table, indices = inputs[:2]
    _rank(indices, 2, "indices")
    _weights(a, inputs, 2, indices)
    batch = DYNAMIC if indices.shape is None else indices.shape[0]
    if len(inputs) > 2 and inputs[2].shape is not None and len(inputs[2].shape) == 2:
        batch = merge_dims(batch, inputs[2].shape[0], "indices and per_sample_weights")
    return _output(table, batch)


def _segments_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    table, indices, segment_ids, num_segments = inputs[:4]
    _rank(indices, 1, "indices")
    _rank(segment_ids, 1, "segment_ids")
    _same_shape(indices, segment_ids, "indices and segment_ids must have the same shape")
    _same_type(indices, segment_ids, "segment_ids", "indices")
    _rank(num_segments, 0, "num_segments")
    _same_type(indices, num_segments, "num_segments", "indices")
    if len(inputs) > 4:
        _rank(inputs[4], 0, "default_index")
        _same_type(indices, inputs[4], "default_index", "indices")
    _weights(a, inputs, 5, indices)
    n = scalar_like(num_segments, "num_segments")
    if n is not None and n < 0:
        raise ShapeError(f"num_segments is {n}; it must not be negative")
    return _output(table, DYNAMIC if n is None else n)


# --------------------------------------------------------------------------- kernels


def _reduce_bags(a: SimpleNamespace, table: np.ndarray, indices: np.ndarray, bag: np.ndarray,
                 n_bags: int, weights: np.ndarray | None,
                 default_index: int | None) -> tuple[np.ndarray]:  # fmt: skip
    """Rows ``table[indices[i]] * weights[i]`` summed into bag ``bag[i]`` of ``n_bags``.

    A bag no index goes to takes row ``default_index`` (None: zeros).
    """
    if table.ndim == 0:
        raise KernelError("emb_table must have rank 1 or more, got a scalar")
    num_emb = table.shape[0]
    rows = normalized_indices(indices, num_emb, "index", negative=False)
    flat = table.reshape(num_emb, -1)
    narrow = table.dtype.kind == "V" or (table.dtype.kind == "f" and table.dtype.itemsize < 4)
    acc_type = np.dtype(np.float32) if narrow else table.dtype
    gathered = flat[rows].astype(acc_type, copy=False)
    if weights is not None:
        gathered = gathered * weights.reshape(-1, 1).astype(acc_type, copy=False)
    out = np.zeros((n_bags, flat.shape[1]), acc_type)
    np.add.at(out, bag, gathered)
    counts = np.bincount(bag, minlength=n_bags)
    if getattr(a, "reduction", "sum") == "mean":
        filled = np.flatnonzero(counts)
        n = counts[filled].reshape(-1, 1)
        if acc_type.kind == "f":
            out[filled] = out[filled] / n.astype(acc_type)
        else:  # C++ division: toward zero
            wide = np.int64 if acc_type.kind == "i" else np.uint64
            sums = out[filled].astype(wide)
            quotient = np.abs(sums) // n.astype(wide)
            out[filled] = np.where(sums < 0, -quotient, quotient).astype(acc_type)
    if default_index is not None:
        out[counts == 0] = flat[default_index].astype(acc_type, copy=False)
    return (out.astype(table.dtype, copy=False).reshape(n_bags, *table.shape[1:]),)


def _default(default_index: np.ndarray | None, num_emb: int, negative_means_none: bool):
    """The default row's index, or None for zeros."""
    if default_index is None:
        return None
    value = int(np.asarray(default_index).reshape(-1)[0])
    if value < 0 and negative_means_none:
        return None
    if not 0 <= value < num_emb:
        raise KernelError(f"default_index {value} is out of range for an emb_table of "
                          f"{num_emb} rows (allowed 0..{num_emb - 1})")  # fmt: skip
    return value


def _infos(*arrays: np.ndarray | None) -> list[TensorInfo]:
    """The given inputs as the shape rule sees them (up to the last one given)."""
    given = list(arrays)
    while given and given[-1] is None:
        given.pop()
    return [TensorInfo(None if x is None else x.shape, None) for x in given]


def _offsets(a: SimpleNamespace, table, indices, offsets, default_index=None, weights=None):
    _offsets_infer(a, _infos(table, indices, offsets, default_index, weights))
    n_idx, starts = indices.shape[0], offsets.astype(np.int64)
    bad = np.flatnonzero((starts < 0) | (starts > n_idx))
    if bad.size:
        raise KernelError(f"offset {int(starts[bad[0]])} at [{int(bad[0])}] is out of range for "
                          f"{n_idx} indices (allowed 0..{n_idx})")  # fmt: skip
    falls = np.flatnonzero(np.diff(starts) < 0)
    if falls.size:
        i = int(falls[0])
        raise KernelError(f"offsets must not decrease, but offset {int(starts[i + 1])} at "
                          f"[{i + 1}] follows {int(starts[i])}")  # fmt: skip
    if weights is not None and weights.shape != indices.shape:
        raise KernelError(f"per_sample_weights {list(weights.shape)} must have the shape of "
                          f"indices {list(indices.shape)}")  # fmt: skip
    # The bag of each index: the last bag whose offset is not after it (none before offsets[0]).
    bag = np.searchsorted(starts, np.arange(n_idx), side="right") - 1
    keep = bag >= 0
    if table.ndim == 0:
        raise KernelError("emb_table must have rank 1 or more, got a scalar")
    return _reduce_bags(a, table, indices[keep], bag[keep], len(starts),
                        None if weights is None else weights[keep],
                        _default(default_index, table.shape[0], True))  # fmt: skip


def _packed(a: SimpleNamespace, table, indices, weights=None):
    _packed_infer(a, _infos(table, indices, weights))
    if weights is not None and weights.shape != indices.shape:
        raise KernelError(f"per_sample_weights {list(weights.shape)} must have the shape of "
                          f"indices {list(indices.shape)}")  # fmt: skip
    batch, per_bag = indices.shape
    if per_bag == 0 and getattr(a, "reduction", "sum") == "mean" and table.dtype.kind in "iu":
        raise KernelError(f"the mean of bags of no index (indices {list(indices.shape)}) divides "
                          f"{table.dtype} by zero")  # fmt: skip
    bag = np.repeat(np.arange(batch), per_bag)
    out = _reduce_bags(a, table, indices.reshape(-1), bag, batch,
                       None if weights is None else weights.reshape(-1), None)  # fmt: skip
    if per_bag == 0 and getattr(a, "reduction", "sum") == "mean":
        return (np.full_like(out[0], np.nan),)  # 0 / 0, as the reference divides
    return out


def _segments(a: SimpleNamespace, table, indices, segment_ids, num_segments, default_index=None,
              weights=None):  # fmt: skip
    infos = _infos(table, indices, segment_ids, num_segments, default_index, weights)
    infos[3] = TensorInfo(num_segments.shape, None, num_segments)
    _segments_infer(a, infos)
    n = int(np.asarray(num_segments).reshape(-1)[0])
    if weights is not None and weights.shape != indices.shape:
        raise KernelError(f"per_sample_weights {list(weights.shape)} must have the shape of "
                          f"indices {list(indices.shape)}")  # fmt: skip
    bag = normalized_indices(segment_ids, n, "segment id", negative=False)
    if table.ndim == 0:
        raise KernelError("emb_table must have rank 1 or more, got a scalar")
    return _reduce_bags(a, table, indices, bag, n, weights,
                        _default(default_index, table.shape[0], False))  # fmt: skip


# --------------------------------------------------------------------------- registration

_REDUCTION = Attr("reduction", "enum", "sum", REDUCTIONS)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The gathered rows and their products with the weights (a row per index, in f32 for
    narrow floats), the bags' sums and their means, and a few int64 arrays per index."""
    shapes = [static_shape(i) for i in (inputs[0], inputs[1], outputs[0])]
    if any(s is None for s in shapes) or inputs[0].element_type is None:
        return 0
    table, indices, out = shapes
    dtype = inputs[0].element_type.dtype
    narrow = dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize < 4)
    each = 4 if narrow else dtype.itemsize
    depth, n, bags = math.prod(table[1:]), math.prod(indices), out[0] if out else 0
    return 2 * n * depth * each + 2 * bags * depth * each + 80 * n + 16 * bags


register(OpDef(type="EmbeddingBagOffsetsSum", version=3, since_opset=3, attrs=(),
               infer=_offsets_infer, kernel=_offsets, inputs=(3, 5),
               input_types=(NUMBERS, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES, NUMBERS),
               scratch=_scratch))  # fmt: skip
register(OpDef(type="EmbeddingBagOffsets", version=15, since_opset=15, attrs=(_REDUCTION,),
               infer=_offsets_infer, kernel=_offsets, inputs=(3, 5), shape_attrs=("reduction",),
               input_types=(NUMBERS, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES, NUMBERS),
               scratch=_scratch))  # fmt: skip
register(OpDef(type="EmbeddingBagPackedSum", version=3, since_opset=3, attrs=(),
               infer=_packed_infer, kernel=_packed, inputs=(2, 3),
               input_types=(NUMBERS, INDEX_TYPES, NUMBERS), scratch=_scratch))  # fmt: skip
register(OpDef(type="EmbeddingBagPacked", version=15, since_opset=15, attrs=(_REDUCTION,),
               infer=_packed_infer, kernel=_packed, inputs=(2, 3), shape_attrs=("reduction",),
               input_types=(NUMBERS, INDEX_TYPES, NUMBERS), scratch=_scratch))  # fmt: skip
register(OpDef(type="EmbeddingSegmentsSum", version=3, since_opset=3, attrs=(),
               infer=_segments_infer, kernel=_segments, inputs=(4, 6),
               input_types=(NUMBERS, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES,
                            NUMBERS),
               scratch=_scratch))  # fmt: skip
