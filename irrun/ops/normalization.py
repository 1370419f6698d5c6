"""BatchNormInference-1/5, MVN-0/6, NormalizeL2-0, LRN-0 and GroupNormalization-12.

``y = gamma * (x - mean) / sqrt(variance + epsilon) + beta`` per channel (axis 1).
The two versions differ only in input order: version 1 takes
``gamma, beta, data, mean, variance``, version 5 ``data, gamma, beta, mean, variance``.
Computed in the input's float type (f16 in f32); the CPU plugin folds the
statistics into one scale and shift, so values agree within a few ulps.

MVN-6 (what PyTorch's LayerNorm becomes) subtracts the mean over the axes its
second input lists and, with ``normalize_variance``, divides by
``sqrt(variance + eps)`` (``eps_mode="inside_sqrt"``) or ``sqrt(variance) + eps``
(``outside_sqrt``), the variance being the mean of the squared differences.
MVN-0 does the same with eps inside the root, over ``reduction_axes`` when the
layer gives them (``across_channels`` is then ignored, as OpenVINO rebuilds the
op from them), else over every axis from 1 (``across_channels``) or 2 on.

NormalizeL2-0 divides by ``sqrt(sum(x**2) + eps)`` (``eps_mode="add"``) or
``sqrt(max(sum(x**2), eps))`` (``max``) over its constant axes.  With no axes
OpenVINO's reference gives 1 for every non-zero element and 0 for zeros; the
CPU plugin does so at ranks 2 to 4 but computes ``x / sqrt(x**2 + eps)`` at
ranks 1 and 5: irrun follows the reference at every rank.

LRN-0 divides by ``(bias + alpha / size**len(axes) * s) ** beta``, ``s`` the sum
of squares over the box ``[i - (size-1)//2, i + (size-1)//2]`` on each axis
(clipped; an even size reaches as far as size - 1).  irrun follows OpenVINO's
reference kernel where the CPU plugin differs: the plugin truncates ``bias`` to
an integer (1.5 acts as 1), runs only axes {1} or all spatial axes, and
computes something else for {1, 2, 3}.

GroupNormalization-12 normalizes each of ``num_groups`` channel groups of every
sample (variance inside the root with ``epsilon``), then applies per-channel
``scale`` and ``bias``.

All of them take floats, the low-precision ones too (computed in f32 and rounded as Convert
rounds to them), their statistics of the data's type; axes any integer type.  (OpenVINO
builds MVN, NormalizeL2, LRN and GroupNormalization of any type, but no kernel of it
computes integers.)

None of these four has a kernel behind OpenVINO's ``Model.evaluate``: the CPU
plugin is the oracle of their tests.  Tolerance against it: f32 sums in another
order agree to ~1e-5 of the output's magnitude; f16 is computed in f32 and
rounded once, as the plugin does (one f16 ulp).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.element_types import INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import check_vector, flat_ints, int_values, normalize_axis, try_merge_dims
from .unary import REAL, to_float

NAMES = ("gamma", "beta", "mean", "variance")
# Position of the data input, and of gamma/beta/mean/variance, per version.
ORDER = {1: (2, (0, 1, 3, 4)), 5: (0, (1, 2, 3, 4))}


def _split(version: int, items: Sequence):
    data_at, stats_at = ORDER[version]
    return items[data_at], [items[i] for i in stats_at]


def _check(a: SimpleNamespace) -> None:
    if not a.epsilon >= 0:
        raise KernelError(f"epsilon must be at least 0, got {a.epsilon}")


def _infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, stats = _split(version, inputs)
        types = {i.element_type.name for i in inputs if i.element_type is not None}
        if len(types) > 1:
            raise ShapeError(f"inputs have different element types: {', '.join(sorted(types))}")
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
            merged = info.shape[0] if channels is None else try_merge_dims(channels, info.shape[0])
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
            raise KernelError(f"{name} has shape {list(v.shape)}, expected [{x.shape[1]}]")
    work = x.dtype if x.dtype.itemsize >= 4 else np.dtype(np.float32)
    shape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
    g, b, m, v = (np.asarray(s, work).reshape(shape) for s in (gamma, beta, mean, variance))
    with np.errstate(all="ignore"):
        y = g * (x.astype(work, copy=False) - m) / np.sqrt(v + work.type(epsilon)) + b
    return to_float(y, x.dtype)


def _kernel(version: int):
    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        data, stats = _split(version, arrays)
        if data.ndim < 2:
            raise KernelError(f"data must have rank 2 or more, got shape {list(data.shape)}")
        return (batch_norm(data, *stats, a.epsilon),)

    return kernel


for _version in (1, 5):
    register(
        OpDef(
            type="BatchNormInference", version=_version, since_opset=_version,
            attrs=(Attr("epsilon", "float"),), infer=_infer(_version), kernel=_kernel(_version),
            inputs=(5, 5), check=_check, shape_attrs=("epsilon",), input_types=(REAL,) * 5,
            scratch=per_element(14, 10),
        )
    )


# --------------------------------------------------------------------------- MVN-6


def _mvn_axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    # A repeated axis counts once, as in the plugin.
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _mvn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes = inputs
    check_vector(axes, "axes", allow_scalar=False)
    values = int_values(axes)
    if values is not None and x.shape is not None:
        _mvn_axes(values, len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def mvn(x: np.ndarray, axes: tuple[int, ...], normalize_variance: bool, eps: float,
        inside_sqrt: bool) -> np.ndarray:
    """Mean-variance normalization of ``x`` over ``axes`` (f16 computed in f32).

    >>> mvn(np.array([[1.0, 3.0], [0.0, 0.0]], np.float32), (1,), True, 0.0, True).tolist()
    [[-1.0, 1.0], [nan, nan]]
    """
    if x.size == 0:
        return x.copy()  # no mean to take (and NumPy would warn of an empty slice)
    work = x.dtype if x.dtype.itemsize >= 4 else np.dtype(np.float32)
    v = x.astype(work, copy=False)
    with np.errstate(all="ignore"):
        d = v - np.mean(v, axis=axes, keepdims=True, dtype=work)
        if normalize_variance:
            var = np.mean(d * d, axis=axes, keepdims=True, dtype=work)
            e = work.type(eps)
            d = d / (np.sqrt(var + e) if inside_sqrt else np.sqrt(var) + e)
    return to_float(d, x.dtype)


def _mvn_check(a: SimpleNamespace) -> None:
    if not a.eps >= 0:
        raise KernelError(f"eps must be at least 0, got {a.eps}")


def _mvn_kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    ax = _mvn_axes(flat_ints(axes), x.ndim)
    return (mvn(x, ax, a.normalize_variance, a.eps, a.eps_mode == "inside_sqrt"),)


register(
    OpDef(
        type="MVN", version=6, since_opset=6,
        attrs=(Attr("normalize_variance", "bool"), Attr("eps", "float"),
               Attr("eps_mode", "enum", choices=("inside_sqrt", "outside_sqrt"))),
        infer=_mvn_infer, kernel=_mvn_kernel, inputs=(2, 2), check=_mvn_check,
        input_types=(REAL, INTEGERS), fresh_output=True, scratch=per_element(14),
    )
)


# --------------------------------------------------------------------------- shared checks


def _work_type(dtype: np.dtype) -> np.dtype:
    # f16 is computed in f32 and rounded once, as the CPU plugin does.
    return dtype if dtype.itemsize >= 4 else np.dtype(np.float32)


# --------------------------------------------------------------------------- NormalizeL2-0


def _l2_axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _l2_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes = inputs
    check_vector(axes, "axes")
    values = int_values(axes)
    if values is None:
        # OpenVINO: "Input axes must be Constant type".
        raise ShapeError("axes must be a constant (OpenVINO needs its value to build the op)")
    if x.shape is not None:
        _l2_axes(values, len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def normalize_l2(x: np.ndarray, axes: tuple[int, ...], eps: float, add: bool) -> np.ndarray:
    """``x / sqrt(sum(x**2 over axes) + eps)`` (``max(sum, eps)`` when not ``add``).

    No axes divides every element by itself: 1, or 0 for a zero (OpenVINO's rule).

    >>> normalize_l2(np.array([[3.0, 4.0], [0.0, 0.0]], np.float32), (1,), 0.0, True).tolist()
    [[0.6000000238418579, 0.800000011920929], [nan, nan]]
    >>> normalize_l2(np.array([-2.0, 0.0], np.float32), (), 1.0, True).tolist()
    [1.0, 0.0]
    """
    if not axes:
        return to_float((x != 0).astype(np.float32), x.dtype)
    work = _work_type(x.dtype)
    v = x.astype(work, copy=False)
    with np.errstate(all="ignore"):
        total = np.sum(v * v, axis=axes, keepdims=True, dtype=work)
        e = work.type(np.float32(eps))
        y = v / np.sqrt(total + e if add else np.maximum(total, e))
    return to_float(y, x.dtype)


def _l2_kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    return (normalize_l2(x, _l2_axes(flat_ints(axes), x.ndim), a.eps, a.eps_mode == "add"),)


register(
    OpDef(
        type="NormalizeL2", version=0, since_opset=1,
        attrs=(Attr("eps", "float"), Attr("eps_mode", "enum", choices=("add", "max"))),
        infer=_l2_infer, kernel=_l2_kernel, inputs=(2, 2), input_types=(REAL, INTEGERS),
        scratch=per_element(4, 10),
    )
)


# --------------------------------------------------------------------------- LRN-0


def _lrn_axes(values: Sequence[int], rank: int) -> tuple[int, ...]:
    return tuple(sorted({normalize_axis(v, rank, "axes value") for v in values}))


def _lrn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, axes = inputs
    check_vector(axes, "axes", allow_scalar=False)
    if x.shape is not None and axes.shape is not None:
        n = axes.shape[0]
        if isinstance(n, int) and n > len(x.shape):
            raise ShapeError(f"axes has {n} values but data has rank {len(x.shape)}")
    values = int_values(axes)
    if values is not None and x.shape is not None:
        _lrn_axes(values, len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def _window_sums(v: np.ndarray, axis: int, half: int) -> np.ndarray:
    """Sum of ``v`` over ``[i - half, i + half]`` along ``axis``, clipped to the axis."""
    n = v.shape[axis]
    csum = np.cumsum(v, axis=axis)
    csum = np.concatenate([np.zeros_like(np.take(csum, [0], axis=axis)), csum], axis=axis)
    i = np.arange(n)
    hi = np.minimum(n, i + half + 1)
    lo = np.maximum(0, i - half)
    return np.take(csum, hi, axis=axis) - np.take(csum, lo, axis=axis)


def lrn(x: np.ndarray, axes: tuple[int, ...], alpha: float, beta: float, bias: float,
        size: int) -> np.ndarray:
    """Local response normalization as OpenVINO's reference kernel computes it.

    ``x / (bias + alpha / size**len(axes) * s) ** beta`` where ``s`` sums ``x**2``
    over the box ``[i - (size-1)//2, i + (size-1)//2]`` on every axis in ``axes``
    (clipped to the data; an even size gives the window of size - 1).

    >>> x = np.array([1.0, 2.0, 2.0], np.float32)
    >>> [round(float(v), 4) for v in lrn(x, (0,), 3.0, 1.0, 1.0, 3)]  # 1/6, 2/10, 2/9
    [0.1667, 0.2, 0.2222]
    """
    work = _work_type(x.dtype)
    v = x.astype(np.float64)
    s = v * v
    half = (size - 1) // 2
    for axis in axes:
        s = _window_sums(s, axis, half)
    scale = np.float64(work.type(alpha) / work.type(float(size) ** len(axes)))
    with np.errstate(all="ignore"):
        y = v / np.power(np.float64(work.type(bias)) + scale * s, np.float64(work.type(beta)))
    return to_float(y, x.dtype)


def _lrn_check(a: SimpleNamespace) -> None:
    if a.size < 1:
        raise KernelError(f"size must be at least 1, got {a.size}")


def _lrn_kernel(a: SimpleNamespace, x: np.ndarray, axes: np.ndarray) -> tuple[np.ndarray, ...]:
    return (lrn(x, _lrn_axes(flat_ints(axes), x.ndim), a.alpha, a.beta, a.bias, a.size),)


register(
    OpDef(
        type="LRN", version=0, since_opset=1,
        attrs=(Attr("alpha", "float"), Attr("beta", "float"), Attr("bias", "float"),
               Attr("size", "int")),
        infer=_lrn_infer, kernel=_lrn_kernel, inputs=(2, 2), check=_lrn_check,
        shape_attrs=(), input_types=(REAL, INTEGERS), scratch=per_element(48),  # window sums in f64
    )
)


# --------------------------------------------------------------------------- MVN-0


def _mvn0_axes(a: SimpleNamespace, rank: int) -> tuple[int, ...]:
    """``reduction_axes`` when given (OpenVINO then ignores ``across_channels``), else
    every axis from 1 (across channels) or 2 on."""
    if a.reduction_axes:
        return tuple(sorted({normalize_axis(v, rank, "reduction_axes value")
                             for v in a.reduction_axes}))
    return tuple(range(1 if a.across_channels else 2, rank))


def _mvn0_check(a: SimpleNamespace) -> None:
    if not a.eps >= 0:
        raise KernelError(f"eps must be at least 0, got {a.eps}")
    if a.across_channels is None and not a.reduction_axes:
        raise KernelError("MVN-0 needs across_channels or reduction_axes")


def _mvn0_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.shape is not None:
        _mvn0_axes(a, len(x.shape))
    return [TensorInfo(x.shape, x.element_type)]


def _mvn0_kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (mvn(x, _mvn0_axes(a, x.ndim), a.normalize_variance, a.eps, True),)


register(
    OpDef(
        type="MVN", version=0, since_opset=2,
        attrs=(Attr("eps", "float"), Attr("across_channels", "bool", None),
               Attr("normalize_variance", "bool"), Attr("reduction_axes", "ints", ())),
        infer=_mvn0_infer, kernel=_mvn0_kernel, check=_mvn0_check,
        shape_attrs=("across_channels", "reduction_axes"), input_types=(REAL,), fresh_output=True,
        scratch=per_element(14),
    )
)


# --------------------------------------------------------------------------- GroupNormalization-12


def _gn_check(a: SimpleNamespace) -> None:
    if a.num_groups < 1:
        raise KernelError(f"num_groups must be a positive integer, got {a.num_groups}")


def _gn_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, scale, bias = inputs
    types = {i.element_type.name for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"inputs have different element types: {', '.join(sorted(types))}")
    for name, info in (("scale", scale), ("bias", bias)):
        if info.shape is not None and len(info.shape) != 1:
            raise ShapeError(f"{name} must be 1-D, got {format_shape(info.shape)}")
    channels = None
    if x.shape is not None:
        if len(x.shape) < 2:
            raise ShapeError(f"data must have rank 2 or more, got {format_shape(x.shape)}")
        channels = x.shape[1]
        if isinstance(channels, int):
            if a.num_groups > channels:
                raise ShapeError(f"num_groups {a.num_groups} exceeds the {channels} channels")
            if channels % a.num_groups:
                raise ShapeError(
                    f"{channels} channels do not split into num_groups {a.num_groups} groups"
                )
    for name, info in (("scale", scale), ("bias", bias)):
        if info.shape is None:
            continue
        merged = info.shape[0] if channels is None else try_merge_dims(channels, info.shape[0])
        if merged is None:
            raise ShapeError(f"{name} has {info.shape[0]} values but data has {channels} channels")
        channels = merged
    shape = x.shape
    if shape is not None and channels is not None:
        shape = (shape[0], channels, *shape[2:])
    return [TensorInfo(shape, x.element_type)]


def group_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, groups: int,
               epsilon: float) -> np.ndarray:
    """Normalize each of ``groups`` channel groups of every sample, then scale and shift
    per channel (the variance is the mean of squared differences).

    >>> x = np.array([[[1.0], [3.0], [5.0], [5.0]]], np.float32)
    >>> one = np.ones(4, np.float32)
    >>> group_norm(x, one, one * 0, 2, 0.0).ravel().tolist()
    [-1.0, 1.0, nan, nan]
    """
    n, c = x.shape[:2]
    if c % groups:
        raise KernelError(f"{c} channels do not split into {groups} groups")
    for name, v in (("scale", scale), ("bias", bias)):
        if v.shape != (c,):
            raise KernelError(f"{name} has shape {list(v.shape)}, expected [{c}]")
    if x.size == 0:
        return x.copy()
    work = _work_type(x.dtype)
    g = x.astype(work, copy=False).reshape(n, groups, -1)
    with np.errstate(all="ignore"):
        d = g - np.mean(g, axis=2, keepdims=True, dtype=work)
        var = np.mean(d * d, axis=2, keepdims=True, dtype=work)
        y = (d / np.sqrt(var + work.type(epsilon))).reshape(x.shape)
        shape = (1, c) + (1,) * (x.ndim - 2)
        y = y * scale.astype(work).reshape(shape) + bias.astype(work).reshape(shape)
    return to_float(y, x.dtype)


def _gn_kernel(a: SimpleNamespace, x: np.ndarray, scale: np.ndarray,
               bias: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.ndim < 2:
        raise KernelError(f"data must have rank 2 or more, got shape {list(x.shape)}")
    return (group_norm(x, scale, bias, a.num_groups, a.epsilon),)


register(
    OpDef(
        type="GroupNormalization", version=12, since_opset=12,
        attrs=(Attr("num_groups", "int"), Attr("epsilon", "float")),
        infer=_gn_infer, kernel=_gn_kernel, inputs=(3, 3), check=_gn_check,
        shape_attrs=("num_groups",), input_types=(REAL, REAL, REAL), scratch=per_element(32, 24),
    )
)
