"""Channel-layout shuffles: DepthToSpace, SpaceToDepth and ShuffleChannels (all v0, opset1).

ShuffleChannels came with Python's opset3, but OpenVINO's C++ opset1 table holds it too
(``save_model`` writes it as ``opset1``), and opset3 onwards; only opset2's lacks it.
irrun, whose versions are ranges, accepts it in opset2 as well.

All three are a reshape, a transpose and a reshape, so they are exact for every
element type and agree bit for bit with the CPU plugin and the reference kernels.

- **DepthToSpace** moves ``block_size**K`` channel blocks of a ``[N, C, D1..DK]`` input
  (rank 3 or more) into space: ``[N, C / bs**K, D1 * bs, ..., DK * bs]``.  With
  ``blocks_first`` the channel axis is read as ``[bs, ..., bs, C']``, with ``depth_first``
  as ``[C', bs, ..., bs]``.
- **SpaceToDepth** is its inverse: ``[N, C * bs**K, D1 / bs, ...]``, each spatial dim a
  multiple of ``bs``.
- **ShuffleChannels** splits the dim at ``axis`` into ``[group, d / group]``, swaps the
  two and merges them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval, Shape, map_bounds
from ..ir.element_types import ANY
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import nothing
from ._shapes import fmt, normalize_axis

MODES = ("blocks_first", "depth_first")


def _divide(d: Dim, by: int, what: str) -> Dim:
    """``d / by``, which must be whole; for an interval, the sizes that divide evenly."""
    if isinstance(d, int):
        if d % by:
            raise ShapeError(f"{what} {d} is not a multiple of {by}")
        return d // by
    lo = -(-d.lo // by)
    hi = None if d.hi is None else d.hi // by
    if hi is not None and hi < lo:
        raise ShapeError(f"{what} {d} holds no multiple of {by}")
    return lo if lo == hi else Interval(lo, hi)


def _check_rank(shape: Shape, op: str) -> None:
    if len(shape) < 3:
        raise ShapeError(f"{op} needs an input of rank 3 or more, got {fmt(shape)}")


def _check_block(a: SimpleNamespace) -> None:
    if a.block_size < 1:
        raise KernelError(f"block_size must be at least 1, got {a.block_size}")


# --------------------------------------------------------------------------- DepthToSpace


def _d2s_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    _check_rank(x.shape, "DepthToSpace")
    bs, k = a.block_size, len(x.shape) - 2
    c = _divide(x.shape[1], bs**k, f"channels (block_size {bs} ** {k} spatial dims):")
    spatial = [map_bounds(d, lambda v: v * bs) for d in x.shape[2:]]
    return [TensorInfo((x.shape[0], c, *spatial), x.element_type)]


def _d2s(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    _check_rank(x.shape, "DepthToSpace")
    bs, k = a.block_size, x.ndim - 2
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    c_out = _divide(c, bs**k, f"channels (block_size {bs} ** {k} spatial dims):")
    assert isinstance(c_out, int)
    if a.mode == "blocks_first":
        split = x.reshape(n, *([bs] * k), c_out, *spatial)
        block_axis, c_axis = 1, k + 1
    else:
        split = x.reshape(n, c_out, *([bs] * k), *spatial)
        block_axis, c_axis = 2, 1
    # [N, C', D1, b1, D2, b2, ...]
    order = [0, c_axis]
    for i in range(k):
        order += [k + 2 + i, block_axis + i]
    out = split.transpose(order).reshape(n, c_out, *(d * bs for d in spatial))
    return (np.ascontiguousarray(out),)


# --------------------------------------------------------------------------- SpaceToDepth


def _s2d_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    _check_rank(x.shape, "SpaceToDepth")
    bs, k = a.block_size, len(x.shape) - 2
    spatial = [_divide(d, bs, f"spatial dim {i + 2}:") for i, d in enumerate(x.shape[2:])]
    c = map_bounds(x.shape[1], lambda v: v * bs**k)
    return [TensorInfo((x.shape[0], c, *spatial), x.element_type)]


def _s2d(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    _check_rank(x.shape, "SpaceToDepth")
    bs, k = a.block_size, x.ndim - 2
    n, c = x.shape[0], x.shape[1]
    small = [_divide(d, bs, f"spatial dim {i + 2}:") for i, d in enumerate(x.shape[2:])]
    split = x.reshape(n, c, *[v for d in small for v in (d, bs)])  # [N, C, D1, b1, D2, b2...]
    blocks = [3 + 2 * i for i in range(k)]
    dims = [2 + 2 * i for i in range(k)]
    order = [0, *blocks, 1, *dims] if a.mode == "blocks_first" else [0, 1, *blocks, *dims]
    out = split.transpose(order).reshape(n, c * bs**k, *small)
    return (np.ascontiguousarray(out),)


# --------------------------------------------------------------------------- ShuffleChannels


def _shuffle_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.shape is None:
        return [TensorInfo(None, x.element_type)]
    if not x.shape:
        raise ShapeError("ShuffleChannels needs an input of rank 1 or more, got a scalar")
    axis = normalize_axis(a.axis, len(x.shape))
    _divide(x.shape[axis], a.group, f"dim {axis} (axis {a.axis}):")
    return [TensorInfo(x.shape, x.element_type)]


def _shuffle(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.ndim == 0:
        raise ShapeError("ShuffleChannels needs an input of rank 1 or more, got a scalar")
    axis = normalize_axis(a.axis, x.ndim)
    d = x.shape[axis]
    _divide(d, a.group, f"dim {axis} (axis {a.axis}):")
    split = x.reshape(*x.shape[:axis], a.group, d // a.group, *x.shape[axis + 1 :])
    out = np.swapaxes(split, axis, axis + 1).reshape(x.shape)
    return (np.ascontiguousarray(out),)


def _check_group(a: SimpleNamespace) -> None:
    if a.group < 1:
        raise KernelError(f"group must be at least 1, got {a.group}")


# --------------------------------------------------------------------------- registration

# An absent mode is blocks_first in OpenVINO; an absent block_size is 0, which it refuses.
_BLOCK_ATTRS = (Attr("mode", "enum", "blocks_first", MODES), Attr("block_size", "int"))

register(OpDef(type="DepthToSpace", version=0, since_opset=1,
               attrs=_BLOCK_ATTRS,
               infer=_d2s_infer, kernel=_d2s, check=_check_block,
               shape_attrs=("mode", "block_size"), input_types=(ANY,),
               scratch=nothing))  # fmt: skip
register(OpDef(type="SpaceToDepth", version=0, since_opset=1,
               attrs=_BLOCK_ATTRS,
               infer=_s2d_infer, kernel=_s2d, check=_check_block,
               shape_attrs=("mode", "block_size"), input_types=(ANY,),
               scratch=nothing))  # fmt: skip
register(OpDef(type="ShuffleChannels", version=0, since_opset=1,
               attrs=(Attr("axis", "int", 1), Attr("group", "int", 1)),
               infer=_shuffle_infer, kernel=_shuffle, check=_check_group,
               shape_attrs=("axis", "group"), input_types=(ANY,),
               scratch=nothing))  # fmt: skip
