"""Reversing along axes: Reverse-1 and ReverseSequence-1.

* Reverse-1 (opset1 only) flips the axes its second input names: integer axes in
  ``index`` mode (negative ones count from the end, repeats flip once), one boolean
  per axis in ``mask`` mode.
* ReverseSequence-1 flips, for each index ``b`` along ``batch_axis``, the first
  ``seq_lengths[b]`` elements along ``seq_axis``; a length of 0 acts as 1 and one
  above the axis's size is an error, as in the reference kernel.

The reference kernel of ReverseSequence cannot be run from Python (``Model.evaluate``
fails), so the tests compare it with the CPU plugin only.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.element_types import ALL_NUMBERS, ANY
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import ALL_INTEGERS, normalize_axis, one_d

# --------------------------------------------------------------------------- Reverse


def _reverse_axes(mode: str, axes: Sequence, rank: int) -> tuple[int, ...]:
    if mode == "mask":
        if len(axes) != rank:
            raise ShapeError(f"the mask has {len(axes)} values, not one per axis of the "
                             f"rank-{rank} input")  # fmt: skip
        return tuple(i for i, m in enumerate(axes) if m)
    return tuple(sorted({normalize_axis(int(v), rank, "reversed axis") for v in axes}))


def _reverse_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, axes = inputs
    one_d(axes, "reversed_axes")
    # The port takes integers and booleans (input_types); which of the two, the mode says.
    et = axes.element_type
    if et is not None and (a.mode == "mask") != (et.name == "boolean"):
        raise ShapeError(f"in '{a.mode}' mode reversed_axes must be "
                         f"{'boolean' if a.mode == 'mask' else 'integers'}, got {et.name}")
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
          infer=_reverse_infer, kernel=_reverse, inputs=(2, 2), shape_attrs=("mode",),
          input_types=(ANY, (*ALL_INTEGERS, "boolean")),
          scratch=nothing)
)  # fmt: skip


# --------------------------------------------------------------------------- ReverseSequence


def _reverse_sequence_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data, lengths = inputs
    one_d(lengths, "seq_lengths")
    shape = data.shape
    if shape is None:
        return [TensorInfo(None, data.element_type)]
    if len(shape) < 2:
        raise ShapeError(f"data must have rank 2 or more, got shape {format_shape(shape)}")
    batch = normalize_axis(a.batch_axis, len(shape), "batch_axis")
    normalize_axis(a.seq_axis, len(shape), "seq_axis")
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
          input_types=(ANY, ALL_NUMBERS), shape_attrs=("batch_axis", "seq_axis"),
          scratch=per_element(10))
)  # fmt: skip
