"""Gathers by index tensors: Gather-1, -7 and -8, GatherElements-6, GatherND-5 and -8.

Gather picks the entries of ``axis`` that ``indices`` name, its first ``batch_dims``
dims shared by data and indices.  Its negative indices count from the end (Gather-8;
earlier versions run the same kernel on the CPU plugin); indices still out of range
give zeros.

GatherElements' and GatherND's indices count from the end when negative too; an index
still outside its axis is an error in irrun, one line naming the index, the axis and
its size: OpenVINO's reference kernels refuse such indices too, and the CPU plugin
returns unspecified memory for them.

GatherND's ``batch_dims`` leading dims are shared by data and indices; GatherND-8
keeps them in the output, GatherND-5 folds them into one leading dim.  An index
tuple of length 0 picks the whole (batch's) data, as the reference kernel does; the
plugin returns unspecified memory there.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval
from ..ir.element_types import ANY, INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import largest, per_element
from ._shapes import (
    ALL_INTEGERS,
    element_count,
    flat_ints,
    fmt,
    int_values,
    merge_dims,
    normalize_axis,
    normalized_indices,
    shapes_of,
    vector_length,
    vector_rank,
    zeros,
)


def _prod_dims(dims: Sequence[Dim]) -> Dim:
    if all(isinstance(d, int) for d in dims):
        return int(np.prod(dims, dtype=np.int64))
    lo, hi = 1, 1
    for d in dims:
        d_lo, d_hi = (d, d) if isinstance(d, int) else (d.lo, d.hi)
        lo *= d_lo
        hi = None if hi is None or d_hi is None else hi * d_hi
    return lo if lo == hi else Interval(lo, hi)


# --------------------------------------------------------------------------- Gather


def _gather_params(a: SimpleNamespace, data_rank: int, idx_rank: int, axis_value: int):
    batch = getattr(a, "batch_dims", 0)
    if batch < 0:
        batch += idx_rank
    if not 0 <= batch <= idx_rank:
        raise ShapeError(
            f"batch_dims {a.batch_dims} is out of range for indices of rank {idx_rank}"
        )
    axis = normalize_axis(axis_value, data_rank)
    if batch > axis:
        raise ShapeError(f"batch_dims {a.batch_dims} must not exceed axis {axis_value}")
    return batch, axis


def _gather_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, idx, axis_info = inputs
    vector_rank(axis_info, "axis")
    if vector_length(axis_info) not in (None, 1):
        raise ShapeError(f"axis must hold one value, got shape {list(axis_info.shape or ())}")
    axis_values = int_values(axis_info)
    if data.shape is None or idx.shape is None or axis_values is None:
        return [TensorInfo(None, data.element_type)]
    batch, axis = _gather_params(a, len(data.shape), len(idx.shape), axis_values[0])
    for i in range(batch):
        merge_dims(data.shape[i], idx.shape[i], f"data and indices differ in batch dim {i}")
    out = (*data.shape[:axis], *idx.shape[batch:], *data.shape[axis + 1 :])
    return [TensorInfo(out, data.element_type)]


def _gather(version: int):
    def kernel(a, data: np.ndarray, idx: np.ndarray, axis_arr: np.ndarray):
        batch, axis = _gather_params(a, data.ndim, idx.ndim, flat_ints(axis_arr)[0])
        n = data.shape[axis]
        idx64 = idx.astype(np.int64)
        # Negative indices count from the end (Gather-8; earlier versions run the same
        # kernel on the CPU plugin); indices still out of range give zeros.
        if n == 0:  # every index is out of range, and an empty axis has nothing to pick
            return (zeros((*data.shape[:axis], *idx.shape[batch:], *data.shape[axis + 1 :]),
                          data.dtype),)  # fmt: skip
        idx64 = np.where(idx64 < 0, idx64 + n, idx64)
        valid = (idx64 >= 0) & (idx64 < n)
        safe = np.where(valid, idx64, 0)
        lead = data.shape[:batch]
        b = int(np.prod(lead, dtype=np.int64))
        pre = int(np.prod(data.shape[batch:axis], dtype=np.int64))
        post = data.shape[axis + 1 :]
        d = data.reshape(b, pre, n, *post)
        count = int(np.prod(idx.shape[batch:], dtype=np.int64))
        i = safe.reshape(b, count)
        m = valid.reshape(b, count)
        # (b, pre, I, *post) with one fancy index per leading axis.
        picked = d[np.arange(b)[:, None, None], np.arange(pre)[None, :, None], i[:, None, :]]
        mask = m.reshape(b, 1, count, *([1] * len(post)))
        picked = np.where(mask, picked, zeros((), data.dtype))
        out_shape = (*data.shape[:axis], *idx.shape[batch:], *post)
        return (picked.reshape(out_shape),)

    return kernel


def _gather_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                    outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """16 bytes per element of the indices or of the output, whichever has more (the
    indices as int64, their mask and clamped copy, the values picked before the mask);
    the data's elements only where the kernel's reshape merges its axes (more than one
    batch dim, or more than one axis between the batch dims and ``axis``), which copies
    data that is not contiguous across them.  Otherwise the data is read where it lies:
    an embedding table of ``[32000, 1024]`` gathered for one token holds a row's worth,
    not four tables' worth, which would make every decoding step of an LLM look large
    enough to check against the memory available."""
    data, idx, axis_info = inputs
    need = per_element(16)(a, [idx], outputs)
    axis_values = int_values(axis_info)
    if data.shape is None or idx.shape is None or axis_values is None:
        return need + per_element(16)(a, [data], [])
    batch = getattr(a, "batch_dims", 0)
    if batch < 0:
        batch += len(idx.shape)
    axis = axis_values[0] + len(data.shape) if axis_values[0] < 0 else axis_values[0]
    if batch > 1 or axis - batch > 1:
        need += largest([data]) * (data.element_type.item_bytes if data.element_type else 16)
    return need


# --------------------------------------------------------------------------- GatherElements


def _gather_elements_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, idx = inputs
    et = data.element_type
    axis = None
    if data.shape is not None:
        if len(data.shape) == 0:
            raise ShapeError("data must have rank 1 or more, got a scalar")
        axis = normalize_axis(a.axis, len(data.shape))
    if idx.shape is not None and len(idx.shape) == 0:
        raise ShapeError("indices must have rank 1 or more, got a scalar")
    if data.shape is None:
        return [TensorInfo(idx.shape, et)]
    if idx.shape is None:
        return [TensorInfo(tuple(DYNAMIC if i == axis else d for i, d in enumerate(data.shape)),
                           et)]  # fmt: skip
    if len(idx.shape) != len(data.shape):
        raise ShapeError(f"data {fmt(data.shape)} and indices {fmt(idx.shape)} must have the "
                         "same rank")  # fmt: skip
    out = []
    for i, (d, n) in enumerate(zip(data.shape, idx.shape, strict=True)):
        if i == axis:
            out.append(n)
        else:
            what = (f"data {fmt(data.shape)} and indices {fmt(idx.shape)} differ in dim {i} "
                    f"(only axis {a.axis} may differ)")  # fmt: skip
            out.append(merge_dims(d, n, what))
    return [TensorInfo(tuple(out), et)]


def _gather_elements(a: SimpleNamespace, data: np.ndarray, idx: np.ndarray):
    axis = normalize_axis(a.axis, data.ndim)
    for i, (d, n) in enumerate(zip(data.shape, idx.shape, strict=True)):
        if i != axis and d != n:
            raise ShapeError(f"data {list(data.shape)} and indices {list(idx.shape)} differ in "
                             f"dim {i} (only axis {a.axis} may differ)")  # fmt: skip
    safe = normalized_indices(idx, data.shape[axis], "index")
    return (np.take_along_axis(data, safe, axis=axis),)


# --------------------------------------------------------------------------- GatherND


def _gather_nd_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, idx = inputs
        b, et = a.batch_dims, data.element_type
        for name, info in (("data", data), ("indices", idx)):
            if info.shape is not None:
                if len(info.shape) == 0:
                    raise ShapeError(f"{name} must have rank 1 or more, got a scalar")
                if b >= len(info.shape):
                    raise ShapeError(f"batch_dims {b} must be less than the rank of {name} "
                                     f"{fmt(info.shape)}")  # fmt: skip
        if data.shape is None or idx.shape is None or not isinstance(idx.shape[-1], int):
            return [TensorInfo(None, et)]
        k = idx.shape[-1]
        if b + k > len(data.shape):
            raise ShapeError(f"index tuples of length {k} with batch_dims {b} do not fit data "
                             f"{fmt(data.shape)} (at most {len(data.shape) - b})")  # fmt: skip
        batch = [merge_dims(data.shape[i], idx.shape[i],
                            f"data {fmt(data.shape)} and indices {fmt(idx.shape)} differ in "
                            f"batch dim {i}") for i in range(b)]  # fmt: skip
        rest = (*idx.shape[b:-1], *data.shape[b + k :])
        if version == 5 and b > 1:
            return [TensorInfo((_prod_dims(batch), *rest), et)]
        return [TensorInfo((*batch, *rest), et)]

    return infer


def _gather_nd(version: int):
    def kernel(a: SimpleNamespace, data: np.ndarray, idx: np.ndarray):
        b = a.batch_dims
        (out_info,) = _gather_nd_infer(version)(a, shapes_of(data, idx))
        k = idx.shape[-1]
        nb = element_count(data.shape[:b])
        safe = normalized_indices(idx, np.array(data.shape[b : b + k], np.int64), "index")
        safe = safe.reshape(nb, element_count(idx.shape[b:-1]), k)
        # One flat offset per tuple into the indexed dims, then one fancy index per batch.
        flat = np.zeros(safe.shape[:2], np.int64)
        for j in range(k):
            flat = flat * data.shape[b + j] + safe[:, :, j]
        source = data.reshape(nb, element_count(data.shape[b : b + k]), *data.shape[b + k :])
        picked = source[np.arange(nb)[:, None], flat]
        return (picked.reshape(out_info.shape),)

    return kernel


def _check_batch_dims(a: SimpleNamespace) -> None:
    if a.batch_dims < 0:
        raise KernelError(f"batch_dims must not be negative, got {a.batch_dims}")


# --------------------------------------------------------------------------- registration

register(OpDef(type="Gather", version=1, since_opset=1, attrs=(),
               infer=_gather_infer, kernel=_gather(1), inputs=(3, 3),
               input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS),
               scratch=_gather_scratch))  # fmt: skip
for _version in (7, 8):
    register(OpDef(type="Gather", version=_version, since_opset=_version,
                   attrs=(Attr("batch_dims", "int", 0),),
                   infer=_gather_infer, kernel=_gather(_version), inputs=(3, 3),
                   shape_attrs=("batch_dims",), input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS),
                   scratch=_gather_scratch))  # fmt: skip
register(OpDef(type="GatherElements", version=6, since_opset=6, attrs=(Attr("axis", "int", 0),),
               infer=_gather_elements_infer, kernel=_gather_elements, inputs=(2, 2),
               shape_attrs=("axis",), input_types=(ANY, INDEX_TYPES),
               scratch=per_element(32)))  # fmt: skip
for _version in (5, 8):
    register(OpDef(type="GatherND", version=_version, since_opset=_version,
                   attrs=(Attr("batch_dims", "int", 0),),
                   infer=_gather_nd_infer(_version), kernel=_gather_nd(_version), inputs=(2, 2),
                   check=_check_batch_dims, shape_attrs=("batch_dims",),
                   input_types=(ANY, ALL_INTEGERS),
                   scratch=per_element(4)))  # fmt: skip
