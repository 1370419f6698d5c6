"""Scatters by index tensors: ScatterUpdate-3, ScatterElementsUpdate-3 and -12,
ScatterNDUpdate-4 and -15 (the gathers are in :mod:`irrun.ops.gather`).

Indices count from the end when negative (``-1`` is the last entry of the axis),
except in ScatterUpdate, whose reference kernel refuses negative indices.  An
index still outside its axis is an error in irrun, one line naming the index,
the axis and its size: OpenVINO's reference kernels refuse such indices too
(ScatterNDUpdate's reference only checks the flat offset, so ``[0, 5]`` in a
``[3, 4]`` tensor slips through there as element ``[1, 1]``; irrun refuses it),
and the CPU plugin returns unspecified memory for them.

Duplicate indices are applied in the order the reference kernels apply them:
row-major order of the indices tensor (ScatterNDUpdate: order of the index
tuples).  Without a reduction the last update of a position wins.  With one,
each position folds its updates into its value one by one, in that order, in the
data's own element type: integers wrap, floats round after every step, so f32
sums match the reference bit for bit (NumPy's ``ufunc.at`` applies repeated
indices sequentially, in order); f16 and bf16 fold in f32 and round once at the
end, as both OpenVINO kernels do.  ``use_init_val=false`` first sets
every indexed position to the reduction's neutral value (0 for sum and mean, 1
for prod, the type's largest value for min and its lowest finite value for max,
so a max over only ``-inf`` updates gives ``-3.4e38`` for f32, as OpenVINO's
does).  ``mean`` divides a position's sum by its number of updates, plus one
with ``use_init_val``; integer means round down (the reference's FE_DOWNWARD
rounding, to match torch), so -3/2 is -2.  Booleans reduce logically: sum and
max are ``or``, prod and min are ``and``, ScatterNDUpdate's sub is ``xor``;
ScatterElementsUpdate refuses ``mean`` on booleans.

Where irrun follows the reference kernels rather than the CPU plugin:
* integer ``mean``: the plugin truncates toward zero (-3/2 gives -1), the
  reference rounds down (-2);
* i64 data: the plugin runs it as i32 (2**33 + 5 plus 1 gives 6);
* bf16 reductions: the plugin rounds to bf16 after every step (256 plus eight 1s and
  eight 0.5s gives 256), the reference folds in f32 (268) as it does f16;
* boolean reductions: the plugin reduces booleans as numbers, so ScatterNDUpdate's
  sub of two trues from false gives true (0 - 1 - 1), where the reference's xor
  gives false;
* ScatterNDUpdate with index tuples of length 0: every tuple replaces the whole
  tensor (the reference), where the plugin leaves the data unchanged;
* out-of-range indices (see above).
And where irrun follows the CPU plugin rather than the reference: ScatterUpdate
with indices of rank 2 or more that have a dim of 1 (indices ``[3, 1]``, say)
writes ``updates[..., m, n, ...]`` to ``data[..., indices[m, n], ...]`` as the
specification and the plugin do; the reference kernel reads the updates along a
wrong dim there.
irrun does not reproduce the reference's treatment of NaN in min/max reductions
(``a < b ? a : b`` lets a NaN fall out when a number follows it); NumPy's
minimum and maximum propagate NaN.
Everywhere else, with in-range indices, the results equal the CPU plugin's
exactly, floats too (one thread; the plugin keeps the reference's order).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.element_types import ANY, INDEX_TYPES, NUMBERS, describe_types
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
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
    vector_rank,
)

SEU_REDUCTIONS = ("none", "sum", "prod", "min", "max", "mean")
# The data types of a reduction (without one, a scatter moves elements of any type).
REDUCED_TYPES = (*NUMBERS, "boolean")
SND_REDUCTIONS = ("none", "sum", "sub", "prod", "min", "max")


# --------------------------------------------------------------------------- helpers


def _same_type(a: SimpleNamespace, data: TensorInfo, updates: TensorInfo) -> None:
    """Data and updates of one type, and one that irrun reduces when there is a reduction."""
    t, u = data.element_type, updates.element_type
    if t is not None and u is not None and t.name != u.name:
        raise ShapeError(f"updates are {u.name} but data is {t.name}; they must be the same type")
    reduction = getattr(a, "reduction", "none")
    if reduction != "none" and t is not None and t.name not in REDUCED_TYPES:
        # OpenVINO's checks let any type through; its kernels reduce none of these.
        raise ShapeError(f"reduction {reduction} does not take {t.name} data (irrun reduces "
                         f"{describe_types(REDUCED_TYPES)})")  # fmt: skip


def _axis_value(info: TensorInfo) -> int | None:
    """The known value of a scalar or 1-element axis input."""
    vector_rank(info, "axis")
    n = None if info.shape is None or len(info.shape) != 1 else info.shape[0]
    if n is not None and (n != 1 if isinstance(n, int) else not n.contains(1)):
        raise ShapeError(f"axis must be a scalar or hold one value, got {fmt(info.shape)}")
    values = int_values(info)
    return None if values is None else values[0]


def _last_wins(offsets: np.ndarray) -> np.ndarray:
    """Positions in ``offsets`` of the last occurrence of every distinct offset."""
    _, first_from_end = np.unique(offsets[::-1], return_index=True)
    return len(offsets) - 1 - first_from_end


def _neutral(reduction: str, dtype: np.dtype):
    if reduction in ("sum", "mean", "sub"):
        return np.zeros((), dtype)
    if reduction == "prod":
        return np.ones((), dtype)
    if dtype == np.bool_:
        return np.array(reduction == "min")
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return np.array(info.max if reduction == "min" else info.min, dtype)


_UFUNCS = {"sum": np.add, "mean": np.add, "sub": np.subtract, "prod": np.multiply,
           "min": np.minimum, "max": np.maximum}  # fmt: skip
# Booleans reduce logically; NumPy's add, multiply, minimum and maximum on bool already
# are or, and, and, or; subtract is refused, and OpenVINO's sub is xor.
_BOOL_UFUNCS = {**_UFUNCS, "sub": np.logical_xor}


def _scatter_to(out: np.ndarray, offsets: np.ndarray, values: np.ndarray, reduction: str,
                  use_init_val: bool = True) -> None:  # fmt: skip
    """Apply ``values`` (one row per offset) to rows ``offsets`` of the 2-D ``out``, in order."""
    if len(offsets) == 0:
        return
    if reduction == "none":
        keep = _last_wins(offsets)
        out[offsets[keep]] = values[keep]
        return
    if out.dtype.itemsize == 2 and out.dtype.kind in "fV":  # f16, and bf16 (ml_dtypes: "V")
        # OpenVINO folds f16 (and bf16) in f32 and rounds once at the end.
        wide = out.astype(np.float32)
        _scatter_to(wide, offsets, values.astype(np.float32), reduction, use_init_val)
        out[...] = wide.astype(out.dtype)
        return
    if not use_init_val:
        out[offsets] = _neutral(reduction, out.dtype)
    ufunc = (_BOOL_UFUNCS if out.dtype == np.bool_ else _UFUNCS)[reduction]
    ufunc.at(out, offsets, values)
    if reduction == "mean":
        counts = np.bincount(offsets, minlength=out.shape[0])[:, None]
        touched = np.flatnonzero(counts[:, 0])
        n = counts[touched] + int(use_init_val)
        acc = out[touched]
        if out.dtype.kind == "f":
            out[touched] = (acc / n.astype(out.dtype)).astype(out.dtype)
        else:
            # Round down, as the reference does; the sum has already wrapped in the type.
            out[touched] = np.floor_divide(acc.astype(np.int64), n).astype(out.dtype)


# --------------------------------------------------------------------------- ScatterUpdate


def _scatter_update_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, idx, upd, axis_info = inputs
    _same_type(a, data, upd)
    axis_value = _axis_value(axis_info)
    out = [TensorInfo(data.shape, data.element_type)]
    if data.shape is None or idx.shape is None or upd.shape is None:
        return out
    rank = len(data.shape)
    if len(upd.shape) != rank + len(idx.shape) - 1:
        raise ShapeError(f"updates {fmt(upd.shape)} must have rank {rank + len(idx.shape) - 1}: "
                         f"data {fmt(data.shape)} with its axis replaced by indices "
                         f"{fmt(idx.shape)}")  # fmt: skip
    if axis_value is None:
        return out
    axis = normalize_axis(axis_value, rank)
    want = (*data.shape[:axis], *idx.shape, *data.shape[axis + 1 :])
    for i, (u, w) in enumerate(zip(upd.shape, want, strict=True)):
        merge_dims(
            u,
            w,
            f"updates {fmt(upd.shape)} must be {fmt(want)} (data {fmt(data.shape)} "
            f"with axis {axis_value} replaced by indices {fmt(idx.shape)}), dim {i}",
        )
    return out


def _scatter_update(a: SimpleNamespace, data, idx, upd, axis_arr):
    _scatter_update_infer(a, shapes_of(data, idx, upd, axis=axis_arr))
    axis = normalize_axis(flat_ints(axis_arr)[0], data.ndim)
    n = data.shape[axis]
    # The reference refuses negative indices here, unlike the other scatters.
    rows = normalized_indices(idx.reshape(-1), n, "index", negative=False)
    pre, post = element_count(data.shape[:axis]), element_count(data.shape[axis + 1 :])
    out = data.copy().reshape(pre, n, post)
    values = upd.reshape(pre, rows.size, post)
    keep = _last_wins(rows)
    out[:, rows[keep], :] = values[:, keep, :]
    return (out.reshape(data.shape),)


# --------------------------------------------------------------------------- ScatterElementsUpdate


def _scatter_elements_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, idx, upd, axis_info = inputs
    _same_type(a, data, upd)
    et = data.element_type
    if getattr(a, "reduction", "none") == "mean" and et is not None and et.name == "boolean":
        raise ShapeError("reduction mean does not take boolean data")
    axis_value = _axis_value(axis_info)
    if data.shape is not None and idx.shape is not None and len(idx.shape) != len(data.shape):
        raise ShapeError(f"data {fmt(data.shape)} and indices {fmt(idx.shape)} must have the "
                         "same rank")  # fmt: skip
    if idx.shape is not None and upd.shape is not None:
        what = f"indices {fmt(idx.shape)} and updates {fmt(upd.shape)} must have the same shape"
        if len(idx.shape) != len(upd.shape):
            raise ShapeError(what)
        for d, u in zip(idx.shape, upd.shape, strict=True):
            merge_dims(d, u, what)
    # OpenVINO lets a scalar through here (its kernels then fail); irrun's kernel refuses it.
    if data.shape and axis_value is not None:
        normalize_axis(axis_value, len(data.shape))
    return [TensorInfo(data.shape, et)]


def _scatter_elements(a: SimpleNamespace, data, idx, upd, axis_arr):
    _scatter_elements_infer(a, shapes_of(data, idx, upd, axis=axis_arr))
    if data.ndim == 0:
        raise ShapeError("data must have rank 1 or more, got a scalar")
    axis = normalize_axis(flat_ints(axis_arr)[0], data.ndim)
    for i, (d, n) in enumerate(zip(data.shape, idx.shape, strict=True)):
        if i != axis and n > d:
            raise KernelError(f"indices {list(idx.shape)} are larger than data {list(data.shape)} "
                             f"in dim {i}, which is not the axis {axis}")  # fmt: skip
    rows = normalized_indices(idx, data.shape[axis], "index")
    # Every index element addresses data at its own coordinates with the axis one replaced.
    coords = list(np.indices(idx.shape, sparse=True))
    coords[axis] = rows
    offsets = np.ravel_multi_index(np.broadcast_arrays(*coords), data.shape).reshape(-1)
    out = data.copy().reshape(-1, 1)
    _scatter_to(out, offsets, upd.reshape(-1, 1), getattr(a, "reduction", "none"),
                  getattr(a, "use_init_val", True))  # fmt: skip
    return (out.reshape(data.shape),)


# --------------------------------------------------------------------------- ScatterNDUpdate


def _scatter_nd_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, idx, upd = inputs
    _same_type(a, data, upd)
    out = [TensorInfo(data.shape, data.element_type)]
    for name, info in (("data", data), ("indices", idx)):
        if info.shape is not None and len(info.shape) == 0:
            raise ShapeError(f"{name} must have rank 1 or more, got a scalar")
    if data.shape is None or idx.shape is None or not isinstance(idx.shape[-1], int):
        return out
    k = idx.shape[-1]
    if k > len(data.shape):
        raise ShapeError(f"index tuples of length {k} (indices {fmt(idx.shape)}) do not fit "
                         f"data {fmt(data.shape)}")  # fmt: skip
    if upd.shape is None:
        return out
    want = (*idx.shape[:-1], *data.shape[k:])
    # An update of one element may take any shape, as OpenVINO lets it.
    if len(want) == 0:
        return out
    what = (f"updates {fmt(upd.shape)} must be {fmt(want)}: indices {fmt(idx.shape)} without "
            f"their last dim, then data {fmt(data.shape)} from dim {k}")  # fmt: skip
    if len(upd.shape) != len(want):
        raise ShapeError(what)
    for u, w in zip(upd.shape, want, strict=True):
        merge_dims(u, w, what)
    return out


def _scatter_nd(a: SimpleNamespace, data, idx, upd):
    _scatter_nd_infer(a, shapes_of(data, idx, upd))
    k = idx.shape[-1]
    tuples = normalized_indices(idx, np.array(data.shape[:k], np.int64), "index")
    tuples = tuples.reshape(element_count(idx.shape[:-1]), k)
    offsets = np.zeros(len(tuples), np.int64)
    for j in range(k):
        offsets = offsets * data.shape[j] + tuples[:, j]
    out = data.copy().reshape(element_count(data.shape[:k]), element_count(data.shape[k:]))
    if upd.size != len(tuples) * out.shape[1]:
        raise KernelError(
            f"updates {list(upd.shape)} hold {upd.size} values, not the "
            f"{len(tuples) * out.shape[1]} that indices {list(idx.shape)} address"
        )
    _scatter_to(out, offsets, upd.reshape(len(tuples), out.shape[1]),
                  getattr(a, "reduction", "none"))  # fmt: skip
    return (out.reshape(data.shape),)


# --------------------------------------------------------------------------- registration

register(OpDef(type="ScatterUpdate", version=3, since_opset=3, attrs=(),
               infer=_scatter_update_infer, kernel=_scatter_update, inputs=(4, 4),
               input_types=(ANY, ALL_INTEGERS, ANY, ALL_INTEGERS),
               scratch=per_element(4)))  # fmt: skip
register(OpDef(type="ScatterElementsUpdate", version=3, since_opset=3, attrs=(),
               infer=_scatter_elements_infer, kernel=_scatter_elements, inputs=(4, 4),
               input_types=(ANY, (*ALL_INTEGERS, "boolean"), ANY, ALL_INTEGERS),
               scratch=per_element(48)))  # fmt: skip
register(OpDef(type="ScatterElementsUpdate", version=12, since_opset=12,
               attrs=(Attr("reduction", "enum", "none", SEU_REDUCTIONS),
                      Attr("use_init_val", "bool", True)),
               infer=_scatter_elements_infer, kernel=_scatter_elements, inputs=(4, 4),
               shape_attrs=("reduction",),
               input_types=(ANY, (*ALL_INTEGERS, "boolean"), ANY, ALL_INTEGERS),
               scratch=per_element(48)))  # fmt: skip
register(OpDef(type="ScatterNDUpdate", version=4, since_opset=4, attrs=(),
               infer=_scatter_nd_infer, kernel=_scatter_nd, inputs=(3, 3),
               input_types=(ANY, INDEX_TYPES, ANY),
               scratch=per_element(8, 12)))  # fmt: skip
register(OpDef(type="ScatterNDUpdate", version=15, since_opset=15,
               attrs=(Attr("reduction", "enum", "none", SND_REDUCTIONS),),
               infer=_scatter_nd_infer, kernel=_scatter_nd, inputs=(3, 3),
               input_types=(ANY, INDEX_TYPES, ANY),
               scratch=per_element(8, 12)))  # fmt: skip
