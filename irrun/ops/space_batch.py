"""Blocks between the batch and the spatial axes: BatchToSpace-2 and SpaceToBatch-2.

BatchToSpace-2 and SpaceToBatch-2 move blocks between the batch axis and the spatial
axes as TensorFlow's ops of the same names, with crops and pads per axis.  OpenVINO's
shape rule ignores ``block_shape[0]`` and the batch axis's crops and pads while its
kernels use them, so irrun refuses values other than 1 and 0 there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.dims import DYNAMIC, Dim, format_shape
from ..ir.element_types import ANY
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import ALL_INTEGERS, affine_dim, bounded_dim, int_values, one_d, zeros


def _block_params(inputs: Sequence[TensorInfo], names: tuple[str, str]):
    """Checks the three 1-D parameters; their values (None when unknown)."""
    data, block, begin, end = inputs
    n = None
    for info, what in zip((block, begin, end), ("block_shape", *names), strict=True):
        one_d(info, what)
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
    values = [int_values(i) for i in (block, begin, end)]
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
    return bounded_dim(lo, hi)


def _batch_to_space_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data = inputs[0]
    types = {i.element_type.name for i in inputs[1:] if i.element_type is not None}
    if len(types) > 1:  # OpenVINO's check (SpaceToBatch has none)
        raise ShapeError(f"block_shape, crops_begin and crops_end must have one element type, "
                         f"got {', '.join(sorted(types))}")  # fmt: skip
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
        out.append(affine_dim(d, b[i], -crop))
    return [TensorInfo(tuple(out), data.element_type)]


def _space_to_batch_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]):
    data = inputs[0]
    params = _block_params(inputs, ("pads_begin", "pads_end"))
    if data.shape is None:
        return [TensorInfo(None, data.element_type)]
    if params is None:
        return [TensorInfo((DYNAMIC,) * len(data.shape), data.element_type)]
    b, pb, pe = params
    out = [affine_dim(data.shape[0], math.prod(b), 0)]
    for i in range(1, len(b)):
        padded = affine_dim(data.shape[i], 1, pb[i] + pe[i])
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
    v = zeros([d + b + e for d, b, e in zip(x.shape, pb, pe, strict=True)], x.dtype)
    v[tuple(slice(b, b + d) for d, b in zip(x.shape, pb, strict=True))] = x
    n = v.shape[0]
    split = [n]
    for i in range(1, x.ndim):
        split += [v.shape[i] // b[i], b[i]]
    v = v.reshape(split)
    order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
    v = v.transpose(order).reshape(n * math.prod(b), *(v.shape[1 + 2 * i] for i in range(k)))
    return (np.ascontiguousarray(v),)


register(
    OpDef(type="BatchToSpace", version=2, since_opset=2, attrs=(), infer=_batch_to_space_infer,
          kernel=_batch_to_space, inputs=(4, 4),
          input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS),
          scratch=per_element(12))
)  # fmt: skip
register(
    OpDef(type="SpaceToBatch", version=2, since_opset=2, attrs=(), infer=_space_to_batch_infer,
          kernel=_space_to_batch, inputs=(4, 4),
          input_types=(ANY, ALL_INTEGERS, ALL_INTEGERS, ALL_INTEGERS),
          scratch=per_element(12))
)  # fmt: skip
