"""BatchNormInference-1 and BatchNormInference-5; MVN-6.

``y = gamma * (x - mean) / sqrt(variance + epsilon) + beta`` per channel (axis 1).
The two versions differ only in input order: version 1 takes
``gamma, beta, data, mean, variance``, version 5 ``data, gamma, beta, mean, variance``.
Computed in the input's float type (f16 in f32); the CPU plugin folds the
statistics into one scale and shift, so values agree within a few ulps.

MVN-6 (what PyTorch's LayerNorm becomes) subtracts the mean over the axes its
second input lists and, with ``normalize_variance``, divides by
``sqrt(variance + eps)`` (``eps_mode="inside_sqrt"``) or ``sqrt(variance) + eps``
(``outside_sqrt``), the variance being the mean of the squared differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .elementwise import merge_dims
from .movement import check_vector, flat_ints, int_values, normalize_axis

NAMES = ("gamma", "beta", "mean", "variance")
# Position of the data input, and of gamma/beta/mean/variance, per version.
ORDER = {1: (2, (0, 1, 3, 4)), 5: (0, (1, 2, 3, 4))}


def _split(version: int, items: Sequence):
    data_at, stats_at = ORDER[version]
    return items[data_at], [items[i] for i in stats_at]


def _check(a: SimpleNamespace) -> None:
    if not a.epsilon >= 0:
        raise ValueError(f"epsilon must be at least 0, got {a.epsilon}")


def _infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, stats = _split(version, inputs)
        types = {i.element_type.name for i in inputs if i.element_type is not None}
        if len(types) > 1:
            raise ShapeError(f"inputs have different element types: {', '.join(sorted(types))}")
        if data.element_type is not None and data.element_type.dtype.kind != "f":
            raise ShapeError(f"data must be floating-point, got {data.element_type.name}")
        channels = None
        if data.shape is not None:
            if len(data.shape) < 2:
                raise ShapeError(f"data must have rank 2 or more, got {format_shape(data.shape)}")
            channels = data.shape[1]
        for name, info in zip(NAMES, stats, strict=True):
            if info.shape is None:
                continue
            if len(info.shape) != 1:
                raise ShapeError(f"{name} must be 1-D, got {format_shape(info.shape)}")
            merged = info.shape[0] if channels is None else merge_dims(channels, info.shape[0])
            if merged is None:
                raise ShapeError(
                    f"{name} has {info.shape[0]} values but data has {channels} channels"
                )
            channels = merged
        shape = data.shape
        if shape is not None and channels is not None:
            shape = (shape[0], channels, *shape[2:])
        return [TensorInfo(shape, data.element_type)]

    return infer


def batch_norm(x: np.ndarray, gamma, beta, mean, variance, epsilon: float) -> np.ndarray:
    """Normalize ``x`` (N, C, ...) with per-channel statistics.

    >>> x = np.array([[1.0, 4.0], [3.0, 0.0]], np.float32)
    >>> one = np.ones(2, np.float32)
    >>> batch_norm(x, one * 2, one, one * 2, one * 4, 0.0).tolist()
    [[0.0, 3.0], [2.0, -1.0]]
    """
    for name, v in zip(NAMES, (gamma, beta, mean, variance), strict=True):
        if v.shape != (x.shape[1],):
            raise ValueError(f"{name} has shape {list(v.shape)}, expected [{x.shape[1]}]")
    work = x.dtype if x.dtype.itemsize >= 4 else np.dtype(np.float32)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    g, b, m, v = (np.asarray(s, work).reshape(shape) for s in (gamma, beta, mean, variance))
    with np.errstate(all="ignore"):
        y = g * (x.astype(work, copy=False) - m) / np.sqrt(v + work.type(epsilon)) + b
    return y.astype(x.dtype, copy=False)


def _kernel(version: int):
    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        data, stats = _split(version, arrays)
        if data.ndim < 2:
            raise ValueError(f"data must have rank 2 or more, got shape {list(data.shape)}")
        return (batch_norm(data, *stats, a.epsilon),)

    return kernel


for _version in (1, 5):
    register(
        OpDef(
            type="BatchNormInference", version=_version, since_opset=_version,
            attrs=(Attr("epsilon", "float"),), infer=_infer(_version), kernel=_kernel(_version),
            inputs=(5, 5), check=_check, shape_attrs=("epsilon",),
        )
    )  # fmt: skip


# --------------------------------------------------------------------------- MVN-6


def _mvn_axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    # A repeated axis counts once, as in the plugin.
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _mvn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes = inputs
    check_vector(axes, "axes", allow_scalar=False)
    if x.element_type is not None and x.element_type.dtype.kind != "f":
        raise ShapeError(f"MVN needs a floating-point input, got {x.element_type.name}")
    if axes.element_type is not None and axes.element_type.dtype.kind != "i":
        raise ShapeError(f"axes must be i32 or i64, got {axes.element_type.name}")
    values = int_values(axes)
    if values is not None and x.shape is not None:
        _mvn_axes(values, len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def mvn(x: np.ndarray, axes: tuple[int, ...], normalize_variance: bool, eps: float,
        inside_sqrt: bool) -> np.ndarray:  # fmt: skip
    """Mean-variance normalization of ``x`` over ``axes`` (f16 computed in f32).

    >>> mvn(np.array([[1.0, 3.0], [0.0, 0.0]], np.float32), (1,), True, 0.0, True).tolist()
    [[-1.0, 1.0], [nan, nan]]
    """
    work = x.dtype if x.dtype.itemsize >= 4 else np.dtype(np.float32)
    v = x.astype(work, copy=False)
    with np.errstate(all="ignore"):
        d = v - np.mean(v, axis=axes, keepdims=True, dtype=work)
        if normalize_variance:
            var = np.mean(d * d, axis=axes, keepdims=True, dtype=work)
            e = work.type(eps)
            d = d / (np.sqrt(var + e) if inside_sqrt else np.sqrt(var) + e)
    return d.astype(x.dtype, copy=False)


def _mvn_check(a: SimpleNamespace) -> None:
    if not a.eps >= 0:
        raise ValueError(f"eps must be at least 0, got {a.eps}")


def _mvn_kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = _mvn_axes(flat_ints(axes), x.ndim)
    return (mvn(x, ax, a.normalize_variance, a.eps, a.eps_mode == "inside_sqrt"),)


register(
    OpDef(
        type="MVN", version=6, since_opset=6,
        attrs=(Attr("normalize_variance", "bool"), Attr("eps", "float"),
               Attr("eps_mode", "enum", choices=("inside_sqrt", "outside_sqrt"))),
        infer=_mvn_infer, kernel=_mvn_kernel, inputs=(2, 2), check=_mvn_check,
    )
)  # fmt: skip
