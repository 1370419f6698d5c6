"""Interpolate-0 (opset1), Interpolate-4 (opset4) and Interpolate-11 (opset11).

Tolerance against the CPU plugin: irrun sums in f64, the plugin in f32, so
floating results agree to a few f32 ulps of the output's magnitude (f16: one f16
ulp); nearest is exact.

The input is zero-padded (``pads_begin``/``pads_end``), then resized one axis at a
time: every mode here is separable.  An output coordinate ``x`` maps to an input
coordinate by the coordinate transformation, computed in f32 as the CPU plugin
does (so nearest picks the same element at exact ties), with the plugin's
shortcut that an axis whose size does not change maps ``x`` to itself:

* nearest rounds it by ``nearest_mode`` and clamps it into the axis;
* linear_onnx clamps it into the axis and mixes its two neighbours;
* linear weighs the inputs within one element with a triangle, dropping taps
  outside the axis and renormalising.  With ``antialias``, OpenVINO's reference
  kernel, once any axis shrinks, scales every resized axis's triangle by that
  axis's scale (wider where it shrinks, narrower where it grows); the CPU plugin
  ignores the attribute, and irrun computes what the CPU plugin computes;
* cubic takes four neighbours (clamped indices) with Keys' kernel, ``cube_coeff``.

Interpolate-0 runs as OpenVINO converts it to Interpolate-4: sizes mode,
nearest_mode simple, asymmetric coordinates (align_corners when set; half_pixel
for linear unless pads are set or the input is 4-D with axes {2,3}), and linear
becomes linear_onnx below rank 5.  Its "area" mode is read, but OpenVINO has no
kernel for it (the CPU plugin runs only Interpolate-4/11 and OpenVINO's conversion
to them skips area; the reference kernels have no area either), so validate reports
it and load refuses it rather than guess.

Interpolate-11's bilinear_pillow and bicubic_pillow resample as Pillow does
(OpenVINO's reference kernel is a port of Pillow 9.4's Resample.c): an output
``i`` is centred at ``(i + 0.5) * in/out`` whatever the coordinate mode, the
filter (triangle of support 1, or Keys' cubic of support 2) is stretched by
``in/out`` on a downscale (always antialiased; the ``antialias`` attribute is
not read), weights are normalised, and the axes are resized last to first (W,
then H), each pass summed in f64 and stored in the element type: integers are
rounded half away from zero and clamped after each pass, as in the reference.
Where the two OpenVINO kernels differ, irrun follows:

* the reference for bicubic_pillow's ``cube_coeff`` (the CPU plugin always uses
  Pillow's -0.5, whatever the attribute says);
* the reference for integers (the plugin's u8/i8 results are off by 1-2);
* the plugin for axes given out of order (e.g. [3, 2]: the reference transposes
  the result back wrongly) and for more than two axes of which at most two change
  size (the reference refuses; more than two changing axes is an error here, the
  plugin returns garbage).  pads apply before resizing, as in other modes.

Interpolate-4/11 refuse negative axes, as OpenVINO's shape inference does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, map_bounds
from ..ir.element_types import FLOATS, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import check_vector, flat_ints, int_values, normalize_axis

MODES = ("nearest", "linear", "linear_onnx", "cubic")
V11_MODES = (*MODES, "bilinear_pillow", "bicubic_pillow")
PILLOW = {"bilinear_pillow": (1.0, "bilinear"), "bicubic_pillow": (2.0, "bicubic")}
# OpenVINO reads "linear_onnx" in Interpolate-0 too (its mode names are shared).
V0_MODES = ("nearest", "linear", "linear_onnx", "cubic", "area")
SHAPE_MODES = ("sizes", "scales")
COORDINATE_MODES = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
                    "align_corners")  # fmt: skip
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
F32 = np.float32


# --------------------------------------------------------------------------- configuration


def _pads(values: Sequence[int], rank: int, name: str) -> list[int]:
    if len(values) > rank:
        raise ShapeError(f"{name} {list(values)} has more values than the input rank {rank}")
    if any(v < 0 for v in values):
        raise ShapeError(f"{name} {list(values)} must not be negative")
    return list(values) + [0] * (rank - len(values))


def _v4_attrs(a: SimpleNamespace, rank: int) -> SimpleNamespace:
    """Interpolate-0's attributes in Interpolate-4's terms (OpenVINO's own conversion)."""
    if a.version != 0:
        return a
    mode = a.mode
    if mode == "linear":
        mode = "linear_onnx" if rank < 5 else "linear"
    coordinate = "asymmetric"
    if a.align_corners:
        coordinate = "align_corners"
    elif (
        mode in ("linear", "linear_onnx")
        and not any(a.pads_begin)
        and not any(a.pads_end)
        and not (rank == 4 and sorted(a.axes) == [2, 3])
    ):
        coordinate = "half_pixel"
    return SimpleNamespace(
        version=0, mode=mode, shape_calculation_mode="sizes", nearest_mode="simple",
        coordinate_transformation_mode=coordinate, antialias=a.antialias, cube_coeff=-0.75,
        pads_begin=a.pads_begin, pads_end=a.pads_end,
    )  # fmt: skip


def _split_inputs(a: SimpleNamespace, inputs: Sequence):
    """(data, sizes or None, scales or None, axes or None) from the version's inputs."""
    if a.version == 0:
        return inputs[0], inputs[1], None, None
    if a.version == 4:
        return inputs[0], inputs[1], inputs[2], inputs[3] if len(inputs) > 3 else None
    target = inputs[1]
    axes = inputs[2] if len(inputs) > 2 else None
    if a.shape_calculation_mode == "sizes":
        return inputs[0], target, None, axes
    return inputs[0], None, target, axes


def _axes(a: SimpleNamespace, axes_values: list[int] | None, rank: int, count: int) -> list[int]:
    if a.version == 0:
        values = list(a.axes)
    elif axes_values is None:
        values = list(range(rank))
    else:
        values = axes_values
    if a.version and any(v < 0 for v in values):
        # Interpolate-4/11 compare the axes with the rank unsigned: -1 is out of range.
        raise ShapeError(f"axes {values} must not be negative (rank {rank})")
    axes = [normalize_axis(v, rank, "axes value") for v in values]
    if len(set(axes)) != len(axes):
        raise ShapeError(f"axes {values} repeat an axis")
    if count != len(axes):
        what = "sizes" if a.shape_calculation_mode == "sizes" else "scales"
        raise ShapeError(f"{what} has {count} values but there are {len(axes)} axes {values}")
    return axes


def scaled_size(size: int, scale: float) -> int:
    """Output size in scales mode: ``floor(size * scale + 1e-5)`` in f32, as OpenVINO.

    >>> scaled_size(5, 0.6), scaled_size(3, 1.5)
    (3, 4)
    """
    return int(np.floor(F32(size) * F32(scale) + F32(1e-5)))


# --------------------------------------------------------------------------- shape rule


def _infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        a = SimpleNamespace(**vars(a), version=version)
        x, sizes, scales, axes_info = _split_inputs(a, inputs)
        for info, what in ((sizes, "sizes"), (scales, "scales"), (axes_info, "axes")):
            if info is not None:
                check_vector(info, what, allow_scalar=False, integers=what != "scales")
        if x.shape is None:
            return [TensorInfo(None, x.element_type)]
        rank = len(x.shape)
        v4 = _v4_attrs(a, rank)
        pb = _pads(v4.pads_begin, rank, "pads_begin")
        pe = _pads(v4.pads_end, rank, "pads_end")
        out: list[Dim] = [
            map_bounds(d, lambda v, b=b, e=e: v + b + e) for d, b, e in zip(x.shape, pb, pe,
                                                                           strict=True)
        ]  # fmt: skip
        by_sizes = v4.shape_calculation_mode == "sizes"
        source = sizes if by_sizes else scales
        assert source is not None
        axes_values = None
        if axes_info is not None:
            axes_values = int_values(axes_info)
            if axes_values is None:
                return [TensorInfo((DYNAMIC,) * rank, x.element_type)]
        if source.value is None:
            n = len(a.axes) if version == 0 else len(axes_values or range(rank))
            for axis in _axes(a, axes_values, rank, n):
                out[axis] = DYNAMIC
            return [TensorInfo(tuple(out), x.element_type)]
        values = np.asarray(source.value).reshape(-1)
        axes = _axes(a, axes_values, rank, values.size)
        padded = list(out)
        for axis, v in zip(axes, values, strict=True):
            if by_sizes:
                if int(v) < 0:
                    raise ShapeError(f"sizes {values.tolist()} must not be negative")
                out[axis] = int(v)
            else:
                out[axis] = map_bounds(out[axis], lambda d, s=float(v): scaled_size(d, s))
        changed = [i for i in axes if not (isinstance(out[i], int) and out[i] == padded[i])]
        _check_pillow_axes(v4.mode, axes, changed)
        return [TensorInfo(tuple(out), x.element_type)]

    return infer


def _check_pillow_axes(mode: str, axes: Sequence[int], changed: Sequence[int]) -> None:
    # OpenVINO's shape inference lets more through, but its reference kernel takes
    # exactly two axes and the CPU plugin returns garbage when three change size.
    if mode in PILLOW and len(changed) > 2:
        raise ShapeError(
            f"mode {mode} resizes at most two axes, but axes {list(axes)} change "
            f"{len(changed)}: {list(changed)}"
        )


# --------------------------------------------------------------------------- per-axis maps


def input_coordinates(mode: str, out_len: int, in_len: int, scale: np.float32) -> np.ndarray:
    """Input coordinate (f32) of every output position on one axis.

    >>> input_coordinates("half_pixel", 4, 2, np.float32(2)).tolist()
    [-0.25, 0.25, 0.75, 1.25]
    """
    x = np.arange(out_len, dtype=F32)
    if scale == 1 or in_len == out_len:
        return x
    half = F32(0.5)
    if mode == "half_pixel":
        return (x + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (x + half) / scale - half if out_len > 1 else np.zeros(out_len, F32)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    if out_len > 1:  # align_corners
        return x * (F32(in_len - 1) / F32(out_len - 1))
    return np.zeros(out_len, F32)


def nearest_index(mode: str, coords: np.ndarray, in_len: int, downsample: bool) -> np.ndarray:
    """Round input coordinates to indices and clamp them into the axis.

    >>> c = np.array([0.5, 1.5, 2.2], np.float32)
    >>> [nearest_index(m, c, 3, False).tolist() for m in ("round_prefer_floor", "ceil")]
    [[0, 1, 2], [1, 2, 2]]
    """
    if mode == "round_prefer_floor":
        tie = coords == np.trunc(coords) + F32(0.5)
        idx = np.where(tie, np.floor(coords), _round_away(coords))
    elif mode == "round_prefer_ceil":
        idx = _round_away(coords)
    elif mode == "floor":
        idx = np.floor(coords)
    elif mode == "ceil":
        idx = np.ceil(coords)
    else:  # simple
        idx = np.ceil(coords) if downsample else np.trunc(coords)
    return np.clip(idx.astype(np.int64), 0, in_len - 1)


def _round_away(v: np.ndarray) -> np.ndarray:
    """C's round(): halves go away from zero (NumPy's round goes to even)."""
    return np.sign(v) * np.floor(np.abs(v) + F32(0.5))


def _linear_onnx_weights(coords: np.ndarray, in_len: int) -> np.ndarray:
    c = np.clip(coords, 0, in_len - 1).astype(np.float64)
    i0 = np.floor(c).astype(np.int64)
    i1 = np.minimum(i0 + 1, in_len - 1)
    w1 = c - i0
    weights = np.zeros((coords.size, in_len))
    rows = np.arange(coords.size)
    np.add.at(weights, (rows, i0), 1 - w1)
    np.add.at(weights, (rows, i1), w1)
    return weights


def _linear_weights(coords: np.ndarray, in_len: int) -> np.ndarray:
    dx = coords.astype(np.float64)[:, None] - np.arange(in_len)[None, :]
    w = np.maximum(0.0, 1.0 - np.abs(dx))
    total = w.sum(axis=1, keepdims=True)
    # No tap in reach (a coordinate far outside the axis) gives 0, as in OpenVINO.
    return np.divide(w, total, out=np.zeros_like(w), where=total > 0)


def _cubic_weights(coords: np.ndarray, in_len: int, a: float) -> np.ndarray:
    c = coords.astype(np.float64)
    i0 = np.floor(c)
    t = c - i0
    # Keys' cubic convolution at distances 1+t, t, 1-t, 2-t.
    taps = (
        ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
        ((a + 2) * t - (a + 3)) * t * t + 1,
        ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
        ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a,
    )
    weights = np.zeros((coords.size, in_len))
    rows = np.arange(coords.size)
    for k, coeff in enumerate(taps):
        idx = np.clip(i0.astype(np.int64) + k - 1, 0, in_len - 1)
        np.add.at(weights, (rows, idx), coeff)
    return weights


def _pillow_filter(kind: str, x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    if kind == "bilinear":
        return np.where(x < 1, 1 - x, 0.0)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def pillow_taps(mode: str, in_len: int, out_len: int,
                a: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """First input index, weights (out_len, taps) and tap count of each output of
    Pillow's resampling on one axis.

    Pillow (and OpenVINO's reference) centres output ``i`` at ``(i + 0.5) * in/out``;
    on a downscale the filter is stretched by ``in/out`` (antialiasing).  Weights are
    normalised to sum to 1, taps past the axis dropped.

    >>> first, w, count = pillow_taps("bilinear_pillow", 4, 2, -0.75)
    >>> first.tolist(), (w * 7).round(6).tolist(), count.tolist()  # half-width 2 at 1 and 3
    ([0, 1], [[3.0, 3.0, 1.0, 0.0, 0.0], [1.0, 3.0, 3.0, 0.0, 0.0]], [3, 3])
    """
    support, kind = PILLOW[mode]
    scale = float(F32(in_len)) / out_len
    stretch = max(scale, 1.0)
    support *= stretch
    taps = int(np.ceil(support)) * 2 + 1
    center = (np.arange(out_len) + 0.5) * scale
    # C casts truncate toward zero; the bounds are then clamped into the axis.
    lo = np.maximum(0, np.trunc(center - support + 0.5).astype(np.int64))
    hi = np.minimum(in_len, np.trunc(center + support + 0.5).astype(np.int64))
    k = np.arange(taps)
    count = np.maximum(hi - lo, 0)
    # Multiplied by the reciprocal, not divided by the stretch: Pillow's rounding.
    w = _pillow_filter(
        kind, (lo[:, None] + k[None, :] - center[:, None] + 0.5) * (1.0 / stretch), a
    )
    w = np.where(k[None, :] < count[:, None], w, 0.0)
    total = np.zeros((out_len, 1))
    for column in w.T:  # tap by tap, as Pillow sums (NumPy's sum would pair them)
        total[:, 0] += column
    w = np.divide(w, total, out=w, where=total != 0)
    return lo, w, count


def _pillow_pass(x: np.ndarray, axis: int, out_len: int, mode: str, a: float,
                 out_dtype: np.dtype) -> np.ndarray:  # fmt: skip
    """One Pillow pass along ``axis``, summed tap by tap in f64 as Pillow does, the result
    stored in ``out_dtype`` (integers rounded half away from zero and clamped)."""
    in_len = x.shape[axis]
    lo, w, count = pillow_taps(mode, in_len, out_len, a)
    moved = np.moveaxis(x, axis, -1)
    total = np.zeros((*moved.shape[:-1], out_len))
    for k in range(w.shape[1]):
        idx = np.minimum(lo + k, in_len - 1)
        # Taps past an output's window are skipped, not weighted 0 (a NaN there stays out).
        term = moved[..., idx].astype(np.float64) * w[:, k]
        total += np.where(k < count, term, 0.0)
    if out_dtype.kind in "iu":
        info = np.iinfo(out_dtype)
        total = np.clip(np.trunc(total + np.copysign(0.5, total)), info.min, info.max)
    return np.moveaxis(total.astype(out_dtype), -1, axis)


def _apply_weights(x: np.ndarray, weights: np.ndarray, axis: int) -> np.ndarray:
    moved = np.moveaxis(x, axis, -1).astype(np.float64)
    return np.moveaxis(moved @ weights.T, -1, axis)


# --------------------------------------------------------------------------- kernel


def _kernel(version: int):
    def kernel(a: SimpleNamespace, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        a = SimpleNamespace(**vars(a), version=version)
        x, sizes, scales, axes_arr = _split_inputs(a, arrays)
        rank = x.ndim
        v4 = _v4_attrs(a, rank)
        pb = _pads(v4.pads_begin, rank, "pads_begin")
        pe = _pads(v4.pads_end, rank, "pads_end")
        y = np.pad(x, list(zip(pb, pe, strict=True))) if any(pb) or any(pe) else x
        by_sizes = v4.shape_calculation_mode == "sizes"
        source = np.asarray(sizes if by_sizes else scales).reshape(-1)
        axes = _axes(a, None if axes_arr is None else flat_ints(axes_arr), rank, source.size)
        if v4.mode in PILLOW:
            return (_pillow(v4, x, y, axes, source, by_sizes),)
        result = y.astype(np.float64) if v4.mode != "nearest" else y
        for axis, v in zip(axes, source, strict=True):
            in_len = y.shape[axis]
            if by_sizes:
                out_len = int(v)
                # Interpolate-0's scales are taken against the unpadded input.
                base = x.shape[axis] if version == 0 else in_len
                scale = F32(out_len) / F32(base)
            else:
                scale = F32(v)
                out_len = scaled_size(in_len, float(v))
            if out_len == 0 or in_len == 0:
                shape = list(result.shape)
                shape[axis] = out_len
                if out_len and not in_len:
                    raise ShapeError(f"cannot resize an empty axis {axis} to {out_len}")
                result = np.zeros(shape, result.dtype)
                continue
            coords = input_coordinates(v4.coordinate_transformation_mode, out_len, in_len, scale)
            if v4.mode == "nearest":
                idx = nearest_index(v4.nearest_mode, coords, in_len, bool(scale < 1))
                result = np.take(result, idx, axis=axis)
                continue
            if v4.mode == "linear_onnx":
                weights = _linear_onnx_weights(coords, in_len)
            elif v4.mode == "linear":
                weights = _linear_weights(coords, in_len)
            else:
                weights = _cubic_weights(coords, in_len, v4.cube_coeff)
            result = _apply_weights(result, weights, axis)
        if result.dtype != x.dtype:
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                # The plugin computes integers in f32: a value that is a tie there (27.5)
                # but a hair below it in f64 rounds as that tie does.
                near = np.abs(result) < 2.0**24
                result = np.where(near, result.astype(F32).astype(np.float64), result)
                result = np.clip(np.rint(result), info.min, info.max)
            result = result.astype(x.dtype)
        return (np.ascontiguousarray(result),)

    return kernel


def _pillow(v4: SimpleNamespace, x: np.ndarray, y: np.ndarray, axes: list[int],
            source: np.ndarray, by_sizes: bool) -> np.ndarray:  # fmt: skip
    """Resize (padded) ``y`` over ``axes`` (H, W) as Pillow: W first, then H.

    Floats are computed in f32 between the passes (the CPU plugin's precision; f64 stays
    f64); integers are rounded after each pass, as in OpenVINO's reference.
    """
    work = x.dtype if x.dtype.kind in "iu" or x.dtype.itemsize >= 4 else np.dtype(F32)
    out = y
    lengths = [(axis, y.shape[axis], int(v) if by_sizes else scaled_size(y.shape[axis], float(v)))
               for axis, v in zip(axes, source, strict=True)]  # fmt: skip
    _check_pillow_axes(v4.mode, axes, [axis for axis, n, m in lengths if n != m])
    for axis, in_len, out_len in reversed(lengths):
        if out_len == in_len:
            continue  # Pillow skips a pass that keeps the size
        if in_len == 0:
            raise ShapeError(f"cannot resize an empty axis {axis} to {out_len}")
        if out_len == 0:
            shape = list(out.shape)
            shape[axis] = 0
            out = np.zeros(shape, work)
            continue
        out = _pillow_pass(out, axis, out_len, v4.mode, v4.cube_coeff, work)
    return np.ascontiguousarray(out.astype(x.dtype, copy=False))


def _check_v0(a: SimpleNamespace) -> None:
    # OpenVINO reads mode area, but neither its CPU plugin nor its reference kernels
    # compute it: said here, so that validate reports it rather than a run alone.
    if a.mode == "area":
        raise KernelError(
            "mode area has no kernel in OpenVINO (neither the CPU plugin nor its reference "
            "implementation computes it), so irrun cannot run it"
        )
    # OpenVINO's Interpolate-0 shape inference ignores pads while its conversion to
    # Interpolate-4 (what the plugins run) applies them: such a layer has no one meaning.
    if any(a.pads_begin) or any(a.pads_end):
        raise KernelError(
            f"pads_begin {list(a.pads_begin)} and pads_end {list(a.pads_end)} must be zero "
            "for Interpolate-0"
        )


V4_ATTRS = (
    Attr("mode", "enum", choices=MODES),
    Attr("shape_calculation_mode", "enum", choices=SHAPE_MODES),
    Attr("coordinate_transformation_mode", "enum", "half_pixel", COORDINATE_MODES),
    Attr("nearest_mode", "enum", "round_prefer_floor", NEAREST_MODES),
    Attr("antialias", "bool", False),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("cube_coeff", "float", -0.75),
)
SHAPE_ATTRS = ("mode", "shape_calculation_mode", "pads_begin", "pads_end")

def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The kernel's most: the padded input, a few f64 copies of the largest stage of the
    resizing (each axis of a stage is the padded input's or the output's, whichever
    order the axes come in) and one axis's weight matrices (output by input length)."""
    x, y = static_shape(inputs[0]), static_shape(outputs[0])
    if x is None or y is None or len(x) != len(y):
        return 0
    pb = [*a.pads_begin, *[0] * len(x)][: len(x)]
    pe = [*a.pads_end, *[0] * len(x)][: len(x)]
    padded = [d + b + e for d, b, e in zip(x, pb, pe, strict=True)]
    stage = math.prod(max(p, o) for p, o in zip(padded, y, strict=True))
    weights = max((p * o for p, o in zip(padded, y, strict=True)), default=0)
    itemsize = inputs[0].element_type.dtype.itemsize if inputs[0].element_type else 8
    return math.prod(padded) * itemsize + 48 * stage + 40 * weights


# Element types: OpenVINO's own lists for Interpolate-4 and -11 (data f32, f16, bf16,
# f64, i8, u8, i32, i64; sizes and axes i32, i64, u32, u64; scales f32, f16, bf16;
# Interpolate-11's second input is sizes or scales by shape_calculation_mode, which the
# shape rule checks).  Interpolate-0 builds with any data and integer sizes, but OpenVINO
# runs it as the Interpolate-4 it converts it to, which takes only those data types.
DATA_TYPES = (*FLOATS, "i64", "i32", "i8", "u8")
V0_TYPES = DATA_TYPES
SIZES_TYPES = ("i64", "i32", "u64", "u32")
SCALES_TYPES = ("f32", "f16", "bf16")

register(OpDef(
    type="Interpolate", version=0, since_opset=1,
    attrs=(Attr("axes", "ints"), Attr("mode", "enum", choices=V0_MODES),
           Attr("align_corners", "bool", False), Attr("antialias", "bool", False),
           Attr("pads_begin", "ints", ()), Attr("pads_end", "ints", ())),
    infer=_infer(0), kernel=_kernel(0), inputs=(2, 2), check=_check_v0,
    shape_attrs=("axes", "mode", "pads_begin", "pads_end"), scratch=_scratch,
    input_types=(V0_TYPES, INTEGERS),
))  # fmt: skip
register(OpDef(type="Interpolate", version=4, since_opset=4, attrs=V4_ATTRS, infer=_infer(4),
               kernel=_kernel(4), inputs=(3, 4), shape_attrs=SHAPE_ATTRS,
               input_types=(DATA_TYPES, SIZES_TYPES, SCALES_TYPES, SIZES_TYPES),
               scratch=_scratch))  # fmt: skip
V11_ATTRS = (Attr("mode", "enum", choices=V11_MODES), *V4_ATTRS[1:])
register(OpDef(type="Interpolate", version=11, since_opset=11, attrs=V11_ATTRS, infer=_infer(11),
               kernel=_kernel(11), inputs=(2, 3), shape_attrs=SHAPE_ATTRS,
               input_types=(DATA_TYPES, (*SIZES_TYPES, *SCALES_TYPES), SIZES_TYPES),
               scratch=_scratch))  # fmt: skip
