"""Data movement and lookup: Reverse, ReverseSequence, BatchToSpace, SpaceToBatch, Eye,
Bucketize, SearchSorted, GRN, Unique and ExtractImagePatches.

* Reverse-1 (opset1 only) flips the axes its second input names: integer axes in
  ``index`` mode (negative ones count from the end, repeats flip once), one boolean
  per axis in ``mask`` mode.
* ReverseSequence-1 flips, for each index ``b`` along ``batch_axis``, the first
  ``seq_lengths[b]`` elements along ``seq_axis``; a length of 0 acts as 1 and one
  above the axis's size is an error, as in the reference kernel.
* BatchToSpace-2 and SpaceToBatch-2 move blocks between the batch axis and the
  spatial axes as TensorFlow's ops of the same names, with crops and pads per axis.
  OpenVINO's shape rule ignores ``block_shape[0]`` and the batch axis's crops and
  pads while its kernels use them, so irrun refuses values other than 1 and 0 there.
* Eye-9 builds ``batch_shape + [num_rows, num_columns]`` matrices with ones on the
  diagonal ``diagonal_index`` (positive: above the main one).
* Bucketize-3 gives each value the index of its bucket among the sorted
  ``buckets``: ``lower_bound`` with ``with_right_bound`` (``b[i-1] < x <= b[i]``),
  ``upper_bound`` without.  NaN compares false, so it lands in bucket 0 with the
  right bound and in the last bucket without it, as in the CPU plugin.
* SearchSorted-15 is ``lower_bound`` (``right_mode`` false) or ``upper_bound`` of
  each value in the innermost rows of ``sorted_sequence``; NaN values give 0 in both
  modes, as in the plugin (it counts ``s < v`` or ``s <= v``).
* GRN-1 divides by ``sqrt(sum over axis 1 of x**2 + bias)``, f16 in f32; the plugin
  sums in another order, hence a few ulp of difference.
* Unique-10 finds the distinct elements (or slices along ``axis``), in ascending
  (lexicographic for slices) order with ``sorted`` or in order of first occurrence,
  with the first occurrence's index, each element's index into the result and the
  counts.  -0.0 and 0.0 are one value (the first one seen is kept); each NaN is
  distinct and, sorted, comes last.  irrun follows the specification where the
  plugin errs: its sorted output is not even unique when the input holds NaN, along
  an axis other than 0 it leaves duplicate slices, and with u8 data along an axis
  its index outputs are garbage.  The output length depends on the data: the shape rule
  gives ``1..N`` unless the input is a known constant.
* ExtractImagePatches-3 gathers ``sizes`` patches of an NCHW image, ``strides``
  apart, taps ``rates`` apart, into channels ordered (patch row, patch column,
  channel); taps outside the image read 0.  ``same_*`` pads as OpenVINO's kernel
  does (no padding where the total would reach the patch's span).

The reference kernels of ReverseSequence, Bucketize, SearchSorted, GRN and Unique
cannot be run from Python (``Model.evaluate`` fails), so the tests compare those with
the CPU plugin only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, Shape, format_shape
from ..ir.element_types import ELEMENT_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .unary import float_compute

INTEGER = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
INDEX_TYPES = ("i32", "i64")
NUMERIC = ("f64", "f32", "f16", "bf16", *INTEGER)


def _check_index_type(et) -> None:
    if et.name not in INDEX_TYPES:
        raise KernelError(f"the output type must be i32 or i64, got {et.name}")


def _known_ints(info: TensorInfo) -> list[int] | None:
    if info.value is None:
        return None
    return [int(v) for v in np.asarray(info.value).reshape(-1)]


def _one_d(info: TensorInfo, what: str) -> None:
    if info.shape is not None and len(info.shape) != 1:
        raise ShapeError(f"{what} must be 1-D, got shape {format_shape(info.shape)}")


def _axis(axis: int, rank: int, what: str) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range for rank {rank} "
                         f"(allowed {-rank}..{rank - 1})")  # fmt: skip
    return axis % rank


def _as_dim(lo: int, hi: int | None) -> Dim:
    return lo if lo == hi else Interval(lo, hi)


# --------------------------------------------------------------------------- Reverse


def _reverse_axes(mode: str, axes: Sequence, rank: int) -> tuple[int, ...]:
    if mode == "mask":
        if len(axes) != rank:
            raise ShapeError(f"the mask has {len(axes)} values, not one per axis of the "
                             f"rank-{rank} input")  # fmt: skip
        return tuple(i for i, m in enumerate(axes) if m)
    return tuple(sorted({_axis(int(v), rank, "reversed axis") for v in axes}))


def _reverse_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, axes = inputs
    _one_d(axes, "reversed_axes")
    et = axes.element_type
    if et is not None:
        if a.mode == "mask" and et.name != "boolean":
            raise ShapeError(f"in 'mask' mode reversed_axes must be boolean, got {et.name}")
        if a.mode == "index" and et.name not in INTEGER:
            raise ShapeError(f"in 'index' mode reversed_axes must be integers, got {et.name}")
    if data.shape is not None:
        rank = len(data.shape)
        if axes.value is not None:
            _reverse_axes(a.mode, np.asarray(axes.value).reshape(-1).tolist(), rank)
        elif (a.mode == "mask" and axes.shape and isinstance(axes.shape[0], int)
              and axes.shape[0] != rank):  # fmt: skip
            raise ShapeError(f"the mask has {axes.shape[0]} values, not one per axis of "
                             f"the rank-{rank} input")  # fmt: skip
    return [TensorInfo(data.shape, data.element_type)]


def _reverse(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    try:
        flip = _reverse_axes(a.mode, axes.reshape(-1).tolist(), x.ndim)
    except ShapeError as e:
        raise KernelError(str(e)) from None
    return (np.flip(x, flip).copy() if flip else x.copy(),)


register(
    OpDef(type="Reverse", version=1, since_opset=1,
          attrs=(Attr("mode", "enum", choices=("index", "mask")),),
          infer=_reverse_infer, kernel=_reverse, inputs=(2, 2), shape_attrs=("mode",))
)  # fmt: skip


# --------------------------------------------------------------------------- ReverseSequence


def _reverse_sequence_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data, lengths = inputs
    _one_d(lengths, "seq_lengths")
    shape = data.shape
    if shape is None:
        return [TensorInfo(None, data.element_type)]
    if len(shape) < 2:
        raise ShapeError(f"data must have rank 2 or more, got shape {format_shape(shape)}")
    batch = _axis(a.batch_axis, len(shape), "batch_axis")
    _axis(a.seq_axis, len(shape), "seq_axis")
    out = list(shape)
    if lengths.shape is not None:
        n, d = lengths.shape[0], shape[batch]
        if isinstance(n, int) and isinstance(d, int) and n != d:
            raise ShapeError(f"seq_lengths has {n} values, not one per index of batch axis "
                             f"{batch} (size {d})")  # fmt: skip
        if isinstance(n, int) and not isinstance(d, int):
            if not d.contains(n):
                raise ShapeError(f"seq_lengths has {n} values; batch axis {batch} is {d}")
            out[batch] = n
    return [TensorInfo(tuple(out), data.element_type)]


def _reverse_sequence(a: SimpleNamespace, x: np.ndarray, lengths: np.ndarray):
    batch, seq = a.batch_axis % x.ndim, a.seq_axis % x.ndim
    n = x.shape[seq]
    if lengths.shape != (x.shape[batch],):
        raise KernelError(f"seq_lengths {list(lengths.shape)} does not match batch axis "
                         f"{batch} of size {x.shape[batch]}")  # fmt: skip
    lens = lengths.astype(np.float64) if lengths.dtype.kind == "f" else lengths
    lens = np.trunc(lens).astype(np.int64)
    if (lens < 0).any() or (lens > n).any():
        raise KernelError(f"seq_lengths {lens.tolist()} must lie in 0..{n} (the size of "
                         f"seq_axis {seq})")  # fmt: skip
    lens = np.maximum(lens, 1)
    pos = np.arange(n)
    # src[b, s]: where output position s along the sequence reads from, for batch b.
    src = np.where(pos[None, :] < lens[:, None], lens[:, None] - 1 - pos[None, :], pos[None, :])
    shape = [1] * x.ndim
    shape[batch], shape[seq] = x.shape[batch], n
    if batch > seq:
        src = src.T
    index = np.broadcast_to(src.reshape(shape), x.shape)
    return (np.take_along_axis(x, index, axis=seq),)


register(
    OpDef(type="ReverseSequence", version=1, since_opset=1,
          attrs=(Attr("batch_axis", "int", 0), Attr("seq_axis", "int", 1)),
          infer=_reverse_sequence_infer, kernel=_reverse_sequence, inputs=(2, 2),
          input_types=(None, NUMERIC), shape_attrs=("batch_axis", "seq_axis"))
)  # fmt: skip


# --------------------------------------------------------------------------- BatchToSpace


def _block_params(inputs: Sequence[TensorInfo], names: tuple[str, str]):
    """Checks the three 1-D parameters; their values (None when unknown)."""
    data, block, begin, end = inputs
    n = None
    for info, what in zip((block, begin, end), ("block_shape", *names), strict=True):
        _one_d(info, what)
        if info.shape is not None and isinstance(info.shape[0], int):
            if n is not None and info.shape[0] != n:
                raise ShapeError(f"block_shape, {names[0]} and {names[1]} must have the "
                                 f"same length")  # fmt: skip
            n = info.shape[0]
    if data.shape is not None:
        if len(data.shape) < 2:
            raise ShapeError(f"data must have rank 2 or more, got shape "
                             f"{format_shape(data.shape)}")  # fmt: skip
        if n is not None and n != len(data.shape):
            raise ShapeError(f"block_shape, {names[0]} and {names[1]} must have one value "
                             f"per axis of the rank-{len(data.shape)} data, got {n}")  # fmt: skip
    values = [_known_ints(i) for i in (block, begin, end)]
    if any(v is None for v in values):
        return None
    b, pb, pe = values
    if any(v < 1 for v in b):
        raise ShapeError(f"block_shape {b} must be 1 or more")
    if any(v < 0 for v in pb + pe):
        raise ShapeError(f"{names[0]} {pb} and {names[1]} {pe} must not be negative")
    if b[0] != 1 or pb[0] != 0 or pe[0] != 0:
        raise ShapeError(f"block_shape[0] must be 1 and {names[0]}[0], {names[1]}[0] 0 "
                         f"(OpenVINO's shape rule and kernels disagree otherwise); got "
                         f"{b[0]}, {pb[0]}, {pe[0]}")  # fmt: skip
    return b, pb, pe


def _divide(d: Dim, k: int, what: str) -> Dim:
    if isinstance(d, int):
        if d % k:
            raise ShapeError(f"{what} {d} is not a multiple of {k}")
        return d // k
    if d.lo == 0 and d.hi is None:
        return DYNAMIC
    lo, hi = -(-d.lo // k), None if d.hi is None else d.hi // k
    if hi is not None and hi < lo:
        raise ShapeError(f"{what} {d} holds no multiple of {k}")
    return _as_dim(lo, hi)


def _shift(d: Dim, mul: int, add: int) -> Dim:
    if isinstance(d, int):
        return d * mul + add
    return _as_dim(max(d.lo * mul + add, 0), None if d.hi is None else d.hi * mul + add)


def _batch_to_space_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data = inputs[0]
    params = _block_params(inputs, ("crops_begin", "crops_end"))
    if data.shape is None:
        return [TensorInfo(None, data.element_type)]
    if params is None:
        return [TensorInfo((DYNAMIC,) * len(data.shape), data.element_type)]
    b, cb, ce = params
    out = [_divide(data.shape[0], math.prod(b), "batch")]
    for i in range(1, len(b)):
        d = data.shape[i]
        crop = cb[i] + ce[i]
        if isinstance(d, int) and crop > d * b[i]:
            raise ShapeError(f"crops {cb[i]} + {ce[i]} on axis {i} exceed its size "
                             f"{d} * {b[i]}")  # fmt: skip
        out.append(_shift(d, b[i], -crop))
    return [TensorInfo(tuple(out), data.element_type)]


def _space_to_batch_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data = inputs[0]
    params = _block_params(inputs, ("pads_begin", "pads_end"))
    if data.shape is None:
        return [TensorInfo(None, data.element_type)]
    if params is None:
        return [TensorInfo((DYNAMIC,) * len(data.shape), data.element_type)]
    b, pb, pe = params
    out = [_shift(data.shape[0], math.prod(b), 0)]
    for i in range(1, len(b)):
        padded = _shift(data.shape[i], 1, pb[i] + pe[i])
        out.append(_divide(padded, b[i], f"padded axis {i}"))
    return [TensorInfo(tuple(out), data.element_type)]


def _run_params(x: np.ndarray, arrays, infer, names) -> tuple[list[int], ...]:
    infos = [TensorInfo(x.shape, None)] + [
        TensorInfo(v.shape, None, v) for v in arrays]  # fmt: skip
    try:
        _block_params(infos, names)
        infer(SimpleNamespace(), infos)
    except ShapeError as e:
        raise KernelError(str(e)) from None
    return tuple([int(v) for v in arr.reshape(-1)] for arr in arrays)


def _batch_to_space(a: SimpleNamespace, x, block, begin, end) -> tuple[np.ndarray, ...]:
    b, cb, ce = _run_params(x, (block, begin, end), _batch_to_space_infer,
                            ("crops_begin", "crops_end"))  # fmt: skip
    k = x.ndim - 1
    n = x.shape[0] // math.prod(b)
    # The batch is [b1, ..., bk, n] with b1 outermost; each b_i joins spatial axis i.
    v = x.reshape(*b[1:], n, *x.shape[1:])
    order = [k]
    for i in range(k):
        order += [k + 1 + i, i]
    v = v.transpose(order).reshape(n, *(x.shape[i] * b[i] for i in range(1, x.ndim)))
    crop = tuple(slice(cb[i], v.shape[i] - ce[i]) for i in range(x.ndim))
    return (np.ascontiguousarray(v[crop]),)


def _space_to_batch(a: SimpleNamespace, x, block, begin, end) -> tuple[np.ndarray, ...]:
    b, pb, pe = _run_params(x, (block, begin, end), _space_to_batch_infer,
                            ("pads_begin", "pads_end"))  # fmt: skip
    k = x.ndim - 1
    v = np.pad(x, list(zip(pb, pe, strict=True)))
    n = v.shape[0]
    split = [n]
    for i in range(1, x.ndim):
        split += [v.shape[i] // b[i], b[i]]
    v = v.reshape(split)
    order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
    v = v.transpose(order).reshape(n * math.prod(b), *(v.shape[1 + 2 * i] for i in range(k)))
    return (np.ascontiguousarray(v),)


for _type, _infer, _kernel, _names in (
    ("BatchToSpace", _batch_to_space_infer, _batch_to_space, ("crops_begin", "crops_end")),
    ("SpaceToBatch", _space_to_batch_infer, _space_to_batch, ("pads_begin", "pads_end")),
):
    register(
        OpDef(type=_type, version=2, since_opset=2, attrs=(), infer=_infer, kernel=_kernel,
              inputs=(4, 4), input_types=(None, INDEX_TYPES, INDEX_TYPES, INDEX_TYPES))
    )  # fmt: skip


# --------------------------------------------------------------------------- Eye


def _scalar_like(info: TensorInfo, what: str) -> int | None:
    if info.shape is not None and (len(info.shape) > 1 or (
            len(info.shape) == 1 and info.shape[0] != 1)):  # fmt: skip
        raise ShapeError(f"{what} must be 0-D or hold one value, got shape "
                         f"{format_shape(info.shape)}")  # fmt: skip
    values = _known_ints(info)
    return None if values is None else values[0]


def _eye_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    dims: list[Dim] = []
    for info, what in zip(inputs[:2], ("num_rows", "num_columns"), strict=True):
        v = _scalar_like(info, what)
        if v is not None and v < 0:
            raise ShapeError(f"{what} must not be negative, got {v}")
        dims.append(DYNAMIC if v is None else v)
    _scalar_like(inputs[2], "diagonal_index")
    batch: tuple[Dim, ...] | None = ()
    if len(inputs) == 4:
        info = inputs[3]
        _one_d(info, "batch_shape")
        values = _known_ints(info)
        if values is not None:
            if any(v < 0 for v in values):
                raise ShapeError(f"batch_shape {values} must not be negative")
            batch = tuple(values)
        elif info.shape is not None and isinstance(info.shape[0], int):
            batch = (DYNAMIC,) * info.shape[0]
        else:
            batch = None
    shape = None if batch is None else (*batch, *dims)
    return [TensorInfo(shape, a.output_type)]


def _eye(a: SimpleNamespace, rows, cols, diagonal, batch=None) -> tuple[np.ndarray, ...]:
    r, c, k = (int(np.asarray(v).reshape(-1)[0]) for v in (rows, cols, diagonal))
    if r < 0 or c < 0:
        raise KernelError(f"num_rows {r} and num_columns {c} must not be negative")
    out = np.eye(r, c, k, dtype=a.output_type.dtype)
    if batch is not None:
        shape = tuple(int(v) for v in batch.reshape(-1))
        out = np.ascontiguousarray(np.broadcast_to(out, shape + out.shape))
    return (out,)


register(
    OpDef(type="Eye", version=9, since_opset=9,
          attrs=(Attr("output_type", "element_type"),), infer=_eye_infer, kernel=_eye,
          inputs=(3, 4), input_types=(INDEX_TYPES,) * 4)
)  # fmt: skip


# --------------------------------------------------------------------------- Bucketize


def _common(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.result_type(x.dtype, y.dtype)
    if t.kind == "f" and t.itemsize < 4:
        t = np.dtype(np.float32)
    return x.astype(t, copy=False), y.astype(t, copy=False)


def _bucketize_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data, buckets = inputs
    _one_d(buckets, "buckets")
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
          input_types=(NUMERIC, NUMERIC), check=lambda a: _check_index_type(a.output_type))
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
    return _as_dim(lo, hi)


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
          input_types=(NUMERIC, NUMERIC), check=lambda a: _check_index_type(a.output_type))
)  # fmt: skip


# --------------------------------------------------------------------------- GRN


def _grn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    if data.shape is not None and not 2 <= len(data.shape) <= 4:
        raise ShapeError(f"GRN's input must have rank 2, 3 or 4, got shape "
                         f"{format_shape(data.shape)}")  # fmt: skip
    return [TensorInfo(data.shape, data.element_type)]


def _grn(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    def fn(v: np.ndarray) -> np.ndarray:
        norm = np.sqrt(np.sum(v * v, axis=1, keepdims=True) + v.dtype.type(a.bias))
        return v / norm

    return (float_compute(x, fn),)


register(
    OpDef(type="GRN", version=1, since_opset=1, attrs=(Attr("bias", "float"),),
          infer=_grn_infer, kernel=_grn)
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
    v = _scalar_like(info, "axis")
    return True, v


def _unique_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0]
    it, ct = a.index_element_type, a.count_element_type
    has_axis, axis = _unique_axis(a, inputs)
    shape = data.shape
    if has_axis and axis is not None and shape is not None:
        axis = _axis(axis, max(len(shape), 1), "axis")
    if data.value is not None and (not has_axis or axis is not None):
        outs = _unique(a, np.asarray(data.value), *(
            [np.array(axis)] if has_axis else []))  # fmt: skip
        return [TensorInfo(o.shape, t) for o, t in zip(outs, (data.element_type, it, it, ct),
                                                       strict=True)]  # fmt: skip
    total = None
    if shape is not None and all(isinstance(d, int) for d in shape):
        total = math.prod(shape)  # type: ignore[arg-type]
    some = DYNAMIC if not total else _as_dim(1, total)
    if not has_axis:
        out0: Shape | None = (some,)
        rev: Dim = total if total else DYNAMIC
    elif shape is None or axis is None:
        out0, rev = (None if shape is None else (DYNAMIC,) * len(shape)), DYNAMIC
    else:
        d = shape[axis]
        out0 = tuple(
            (DYNAMIC if not isinstance(d, int) else d if d == 0 else _as_dim(1, d))
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


register(
    OpDef(type="Unique", version=10, since_opset=10,
          attrs=(Attr("sorted", "bool", True),
                 Attr("index_element_type", "element_type", ELEMENT_TYPES["i64"]),
                 Attr("count_element_type", "element_type", ELEMENT_TYPES["i64"])),
          infer=_unique_infer, kernel=_unique, inputs=(1, 2),
          input_types=(None, INDEX_TYPES), check=_check_unique)
)  # fmt: skip


# --------------------------------------------------------------------------- ExtractImagePatches

PATCH_PADS = ("valid", "same_upper", "same_lower")


def _check_patches(a: SimpleNamespace) -> None:
    for name in ("sizes", "strides", "rates"):
        values = getattr(a, name)
        if len(values) != 2:
            raise KernelError(f"{name} must hold [rows, cols], got {list(values)}")
        if name != "sizes" and min(values) < 1:
            raise KernelError(f"{name} {list(values)} must be 1 or more")


def _patch_count(size: int, k: int, stride: int, rate: int, pad: str) -> int:
    if pad == "valid":
        n = size - rate * (k - 1) - 1
        out = n // stride + 1 if n >= 0 else 0
    else:
        out = 1 + (size - 1) // stride
    return max(out, 0)


def _patches_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    if x.shape is None:
        return [TensorInfo((DYNAMIC,) * 4, x.element_type)]
    if len(x.shape) != 4:
        raise ShapeError(f"the input must be 4-D, got shape {format_shape(x.shape)}")
    n, c, h, w = x.shape
    depth = _shift(c, a.sizes[0] * a.sizes[1], 0)
    rows, cols = (
        _patch_count(d, a.sizes[i], a.strides[i], a.rates[i], a.auto_pad)
        if isinstance(d, int) else DYNAMIC for i, d in enumerate((h, w)))  # fmt: skip
    return [TensorInfo((n, depth, rows, cols), x.element_type)]


def _patch_taps(size: int, out: int, k: int, stride: int, rate: int, pad: str):
    """(index, valid) arrays of shape [out, k]: which input row each tap reads."""
    span = k + (rate - 1) * (k - 1)
    begin = 0
    if pad != "valid":
        total = (-(-size // stride) - 1) * stride + span - size
        if 0 < total < span:
            begin = (total + 1) // 2 if pad == "same_lower" else total // 2
    taps = np.arange(out)[:, None] * stride - begin + np.arange(k)[None, :] * rate
    valid = (taps >= 0) & (taps < size)
    return np.clip(taps, 0, max(size - 1, 0)), valid


def _extract_image_patches(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    (info,) = _patches_infer(a, [TensorInfo(x.shape, None)])
    shape = tuple(int(d) for d in info.shape)  # type: ignore[union-attr, arg-type]
    h, w = x.shape[2:]
    if x.size == 0 or 0 in shape:
        return (np.zeros(shape, x.dtype),)
    (kh, kw), (sh, sw), (rh, rw) = a.sizes, a.strides, a.rates
    rows, rows_ok = _patch_taps(h, shape[2], kh, sh, rh, a.auto_pad)
    cols, cols_ok = _patch_taps(w, shape[3], kw, sw, rw, a.auto_pad)
    # [N, C, OH, KH, OW, KW]; taps outside the image read 0.
    got = x[:, :, rows[:, :, None, None], cols[None, None, :, :]]
    ok = rows_ok[:, :, None, None] & cols_ok[None, None, :, :]
    got = np.where(ok, got, x.dtype.type(0))
    # Output channel (kh * KW + kw) * C + c, as OpenVINO orders patches.
    out = got.transpose(0, 3, 5, 1, 2, 4).reshape(shape)
    return (np.ascontiguousarray(out),)


register(
    OpDef(type="ExtractImagePatches", version=3, since_opset=3,
          attrs=(Attr("sizes", "ints"), Attr("strides", "ints"), Attr("rates", "ints"),
                 Attr("auto_pad", "enum", choices=PATCH_PADS)),
          infer=_patches_infer, kernel=_extract_image_patches, check=_check_patches,
          shape_attrs=("sizes", "strides", "rates", "auto_pad"))
)  # fmt: skip
