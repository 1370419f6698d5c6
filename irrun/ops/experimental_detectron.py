"""Detectron's ops: ExperimentalDetectronPriorGridGenerator-6, ExperimentalDetectronTopKROIs-6,
ExperimentalDetectronROIFeatureExtractor-6.

ExperimentalDetectronPriorGridGenerator shifts every prior ``[x1, y1, x2, y2]`` to the
centre of every cell of a grid: the cell ``(h, w)`` adds ``step_w * (w + 0.5)`` to the x
coordinates and ``step_h * (h + 0.5)`` to the y ones.  The grid has the feature map's
``H x W`` cells, or ``h x w`` where those attributes are not 0; its steps are the
image's size over the grid's (in f32), or ``stride_x``/``stride_y`` where those are not
0.  The rows run cell by cell (row-major), each cell's priors in order; ``flatten``
gives them as ``[H * W * priors, 4]``, else as ``[H, W, priors, 4]``.  The output's shape
always follows the feature map: a grid smaller than it (``0 < h < H`` or ``0 < w < W``)
fills the first ``h * w * priors`` rows of the output (in its memory order) and leaves
the rest undefined by the specification (garbage in the CPU plugin): irrun gives 0
there.  A grid larger than the feature map is refused (the plugin would write past its
output).

ExperimentalDetectronTopKROIs keeps the ``max_rois`` regions of highest probability,
highest first (equal probabilities by index, as the CPU plugin orders them; the
reference kernel's ``std::sort`` leaves their order open).  The output always has
``max_rois`` rows: with fewer regions the rows after them are 0 in irrun (the CPU
plugin leaves them unwritten).

ExperimentalDetectronROIFeatureExtractor pools each region from the level of a feature
pyramid that suits its size, with ROIAlign's bilinear sampling (see its kernel).

OpenVINO's reference kernels of these ops do not run from ``ov.Model.evaluate``; the
tests compare with the CPU plugin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, Shape
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element, static_shape
from ._shapes import merge_dims
from .detection import SAMPLES_AT_ONCE, pool_regions

REALS = ("bf16", "f16", "f32", "f64")


def _may_be(d: Dim, n: int) -> bool:
    return d == n if isinstance(d, int) else d.contains(n)


def _product(*dims: Dim) -> Dim:
    """The product of dims, bound by bound."""
    lo, hi = 1, 1
    for d in dims:
        d_lo, d_hi = (d, d) if isinstance(d, int) else (d.lo, d.hi)
        lo *= d_lo
        hi = None if hi is None or d_hi is None else hi * d_hi
    if hi == 0:
        return 0
    return lo if lo == hi else Interval(lo, hi)


def _check_rank(shape: Shape | None, rank: int, what: str) -> None:
    if shape is not None and len(shape) != rank:
        raise ShapeError(f"{what} must be {rank}-D, got shape {list(shape)}")


# --------------------------------------------------------------------------- PriorGridGenerator

GRID_ATTRS = (
    Attr("flatten", "bool", True),
    Attr("h", "int", 0),
    Attr("w", "int", 0),
    Attr("stride_x", "float", 0.0),
    Attr("stride_y", "float", 0.0),
)


def _check_grid(a: SimpleNamespace) -> None:
    if a.h < 0 or a.w < 0:
        raise KernelError(f"h and w must not be negative, got {a.h} and {a.w}")


def _grid_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    priors, featmap, image = (i.shape for i in inputs)
    _check_rank(priors, 2, "priors")
    _check_rank(featmap, 4, "feature_map")
    _check_rank(image, 4, "im_data")
    if priors is not None and not _may_be(priors[1], 4):
        raise ShapeError(f"priors' dim 1 must be 4, got {priors[1]}")
    if featmap is not None and image is not None:
        merge_dims(featmap[0], image[0], "feature_map and im_data must have the same batch")
    if featmap is not None:
        for attr, size in (("h", featmap[2]), ("w", featmap[3])):
            cells = getattr(a, attr)
            if isinstance(size, int) and cells > size:
                raise ShapeError(f"{attr}={cells} is more cells than the feature map's {size}")
    count = DYNAMIC if priors is None else priors[0]
    rows, cols = (DYNAMIC, DYNAMIC) if featmap is None else (featmap[2], featmap[3])
    if a.flatten:
        shape: Shape = (_product(rows, cols, count) if featmap is not None and priors is not None
                        else DYNAMIC, 4)  # fmt: skip
    else:
        shape = (rows, cols, count, 4)
    return [TensorInfo(shape, inputs[0].element_type)]


def _grid_kernel(a: SimpleNamespace, priors: np.ndarray, featmap: np.ndarray,
                 image: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    if priors.ndim != 2 or priors.shape[1] != 4 or featmap.ndim != 4 or image.ndim != 4:
        raise ShapeError(f"priors {list(priors.shape)}, feature_map {list(featmap.shape)} and "
                         f"im_data {list(image.shape)} must be [N, 4], 4-D and 4-D")  # fmt: skip
    height, width = featmap.shape[2:]
    if a.h > height or a.w > width:
        raise KernelError(f"a grid of {a.h} x {a.w} cells is larger than the feature map's "
                          f"{height} x {width}")  # fmt: skip
    rows, cols = a.h or height, a.w or width
    f32 = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        step_w = f32(a.stride_x) if a.stride_x else f32(image.shape[3]) / f32(cols)
        step_h = f32(a.stride_y) if a.stride_y else f32(image.shape[2]) / f32(rows)
    shift_x = step_w * (np.arange(cols, dtype=f32) + f32(0.5))  # [W]
    shift_y = step_h * (np.arange(rows, dtype=f32) + f32(0.5))  # [H]
    p = priors.astype(f32)
    grid = np.empty((rows, cols, len(p), 4), f32)
    grid[..., 0::2] = p[None, None, :, 0::2] + shift_x[None, :, None, None]
    grid[..., 1::2] = p[None, None, :, 1::2] + shift_y[:, None, None, None]
    out = np.zeros(height * width * len(p) * 4, priors.dtype)
    out[: grid.size] = grid.reshape(-1)
    shape = (height * width * len(p), 4) if a.flatten else (height, width, len(p), 4)
    return (out.reshape(shape),)


register(OpDef(type="ExperimentalDetectronPriorGridGenerator", version=6, since_opset=6,
               attrs=GRID_ATTRS, infer=_grid_infer, kernel=_grid_kernel, inputs=(3, 3),
               check=_check_grid, input_types=(REALS, None, None),
               shape_attrs=("h", "w"), scratch=per_element(4)))  # fmt: skip


# --------------------------------------------------------------------------- TopKROIs


def _check_topk(a: SimpleNamespace) -> None:
    if a.max_rois < 0:
        raise KernelError(f"max_rois must not be negative, got {a.max_rois}")


def _topk_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    rois, probs = inputs[0].shape, inputs[1].shape
    rois_et, probs_et = inputs[0].element_type, inputs[1].element_type
    if rois_et is not None and probs_et is not None and rois_et != probs_et:
        raise ShapeError(f"input_rois and rois_probs must have the same element type, got "
                         f"{rois_et.name} and {probs_et.name}")  # fmt: skip
    _check_rank(rois, 2, "input_rois")
    _check_rank(probs, 1, "rois_probs")
    if rois is not None:
        if not _may_be(rois[1], 4):
            raise ShapeError(f"input_rois' dim 1 must be 4, got {rois[1]}")
        if probs is not None:
            merge_dims(rois[0], probs[0], "input_rois and rois_probs must have as many rows")
    return [TensorInfo((a.max_rois, 4), rois_et)]


def _topk_kernel(a: SimpleNamespace, rois: np.ndarray,
                 probs: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    if rois.ndim != 2 or rois.shape[1] != 4 or probs.shape != rois.shape[:1]:
        raise ShapeError(f"input_rois {list(rois.shape)} and rois_probs {list(probs.shape)} "
                         "must be [N, 4] and [N]")  # fmt: skip
    # Highest first, equal probabilities by index (a stable sort of the negated values).
    order = np.argsort(-probs.astype(np.float64), kind="stable")[: a.max_rois]
    out = np.zeros((a.max_rois, 4), rois.dtype)
    out[: len(order)] = rois[order]
    return (out,)


register(OpDef(type="ExperimentalDetectronTopKROIs", version=6, since_opset=6,
               attrs=(Attr("max_rois", "int", 0),), infer=_topk_infer, kernel=_topk_kernel,
               inputs=(2, 2), check=_check_topk, input_types=(REALS, REALS),
               shape_attrs=("max_rois",), scratch=per_element(8)))  # fmt: skip


# --------------------------------------------------------------------------- ROIFeatureExtractor

FEATURE_ATTRS = (
    Attr("output_size", "int"),
    Attr("sampling_ratio", "int"),
    Attr("pyramid_scales", "ints"),
    Attr("aligned", "bool", False),
)


def _check_features(a: SimpleNamespace) -> None:
    if a.output_size < 0:
        raise KernelError(f"output_size must not be negative, got {a.output_size}")
    if a.sampling_ratio < 0:
        raise KernelError(f"sampling_ratio must not be negative, got {a.sampling_ratio}")
    if any(scale <= 0 for scale in a.pyramid_scales):
        raise KernelError(f"pyramid_scales must be positive, got {list(a.pyramid_scales)}")


def _features_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    rois = inputs[0].shape
    _check_rank(rois, 2, "input_rois")
    count: Dim = DYNAMIC
    if rois is not None:
        if not _may_be(rois[1], 4):
            raise ShapeError(f"input_rois' dim 1 must be 4, got {rois[1]}")
        count = rois[0]
    levels = len(inputs) - 1
    if len(a.pyramid_scales) < levels:
        raise ShapeError(f"{levels} feature maps but only {len(a.pyramid_scales)} "
                         "pyramid_scales (OpenVINO would read past them)")  # fmt: skip
    channels: Dim | None = None
    types = {i.element_type for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"input_rois and the feature maps must have one element type, got "
                         f"{sorted(t.name for t in types)}")  # fmt: skip
    for level, info in enumerate(inputs[1:]):
        shape = info.shape
        _check_rank(shape, 4, f"feature map {level}")
        if shape is None:
            continue
        if not _may_be(shape[0], 1):
            raise ShapeError(f"feature map {level}'s dim 0 must be 1, got {shape[0]}")
        channels = shape[1] if channels is None else merge_dims(
            channels, shape[1], "every feature map must have as many channels")  # fmt: skip
    et = inputs[0].element_type
    size = a.output_size
    return [TensorInfo((count, DYNAMIC if channels is None else channels, size, size), et),
            TensorInfo((count, 4), et)]  # fmt: skip


def _features_kernel(a: SimpleNamespace, rois: np.ndarray,
                     *maps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each region ``[x1, y1, x2, y2]`` is pooled from one level of the pyramid: level
    ``floor(2 + log2(sqrt(area) / 224 + 1e-6))`` clamped to the levels there are (its
    area in f32).  A region of no positive area goes to no level: its features are 0,
    in the CPU plugin and the reference alike.  A level pools as ROIAlign does
    (avg): the region scaled by ``1 / pyramid_scales[level]`` (then shifted by -0.5 if
    ``aligned``) and made at least 1 x 1, ``output_size`` bins a side, each of
    ``sampling_ratio`` (or, for 0, ``ceil`` of the bin's size) bilinear samples a side
    at ``start + bin * (k + (j + 0.5) / samples)``.  The second output is the regions.
    Only the first image of a feature map's batch is read (the specification has one).
    Computed in f32; f16 and bf16 results are rounded once."""
    levels = len(maps)
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ShapeError(f"input_rois must be [N, 4], got {list(rois.shape)}")
    if len(a.pyramid_scales) < levels:
        raise KernelError(f"{levels} feature maps but {len(a.pyramid_scales)} pyramid_scales")
    if any(m.ndim != 4 or m.shape[1] != maps[0].shape[1] or m.shape[0] < 1 for m in maps):
        raise ShapeError(f"the feature maps {[list(m.shape) for m in maps]} must be "
                         "[1, C, H, W] with one C")  # fmt: skip
    f32 = np.float32
    r = rois.astype(f32)
    size = a.output_size
    out = np.zeros((len(r), maps[0].shape[1], size, size), f32)
    area = (r[:, 2] - r[:, 0]) * (r[:, 3] - r[:, 1])
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = np.log2(np.sqrt(area) / f32(224) + f32(1e-6)) + f32(2)
    level = np.where(area > 0, np.clip(np.floor(np.nan_to_num(raw, nan=0.0)), 0, levels - 1),
                     levels).astype(np.int64)  # fmt: skip
    if out.size == 0:
        return out.astype(rois.dtype), rois.copy()
    offset = f32(0.5) if a.aligned else f32(0)
    for index, fmap in enumerate(maps):
        part = np.flatnonzero(level == index)
        if not len(part):
            continue
        if fmap.shape[2] == 0 or fmap.shape[3] == 0:
            raise KernelError(f"feature map {index} of size {list(fmap.shape[2:])} has no pixels")
        scaled = r[part] * (f32(1) / f32(a.pyramid_scales[index])) - offset
        start_x, start_y = scaled[:, 0], scaled[:, 1]
        one = f32(1)
        size_x = np.maximum(scaled[:, 2] - start_x, one)
        size_y = np.maximum(scaled[:, 3] - start_y, one)
        bin_x, bin_y = size_x / f32(size), size_y / f32(size)
        if a.sampling_ratio > 0:
            count_x = count_y = np.full(len(part), a.sampling_ratio)
        else:
            count_x = np.ceil(size_x / f32(size)).astype(np.int64)
            count_y = np.ceil(size_y / f32(size)).astype(np.int64)

        def positions(sub, sy, sx, start_y=start_y, start_x=start_x, bin_y=bin_y, bin_x=bin_x):
            ys = _spread(start_y[sub], bin_y[sub], sy, size)
            xs = _spread(start_x[sub], bin_x[sub], sx, size)
            return ys[:, None, :, :, None], xs[None, :, :, None, :]

        pooled = out[part]
        pool_regions(fmap[:1], np.zeros(len(part), np.int64), count_y, count_x, positions,
                     "avg", pooled)  # fmt: skip
        out[part] = pooled
    return out.astype(rois.dtype), rois.copy()


def _spread(start: np.ndarray, bin_size: np.ndarray, count: int, bins: int) -> np.ndarray:
    """Sample positions ``[count, rois, bins]`` along one axis, as Detectron's ROIAlign
    puts them: ``start + k * bin + (j + 0.5) * bin / count``."""
    f32 = np.float32
    k = np.arange(bins, dtype=f32)[None, None, :]
    j = np.arange(count, dtype=f32)[:, None, None] + f32(0.5)
    b = bin_size[None, :, None]
    return (start[None, :, None] + k * b) + j * b / f32(count)


def _features_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                      outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The f32 output and one level's regions (a copy), the largest map channels last in
    f32, and up to SAMPLES_AT_ONCE samples of about 24 bytes each a channel (an adaptive
    sampling ratio counted for regions within the map)."""
    shapes = [static_shape(i) for i in inputs]
    if any(s is None for s in shapes) or len(shapes[0]) != 2:
        return 0
    rois = shapes[0][0]
    biggest = max((4 * math.prod(s[1:]) for s in shapes[1:]), default=0)
    channels = shapes[1][1] if len(shapes) > 1 else 0
    size = a.output_size
    sy = a.sampling_ratio or max((-(-s[2] // max(size, 1)) + 1 for s in shapes[1:]), default=1)
    sx = a.sampling_ratio or max((-(-s[3] // max(size, 1)) + 1 for s in shapes[1:]), default=1)
    per_roi = channels * size * size * sy * sx
    at_once = max(min(SAMPLES_AT_ONCE, rois * per_roi), per_roi)
    taps = 112 * (at_once // max(channels, 1) + 1)
    return 8 * rois * channels * size * size + biggest + 24 * at_once + taps


register(OpDef(type="ExperimentalDetectronROIFeatureExtractor", version=6, since_opset=6,
               attrs=FEATURE_ATTRS, infer=_features_infer, kernel=_features_kernel,
               inputs=(2, 1 << 30), check=_check_features, input_types=(REALS,),
               shape_attrs=("output_size",), scratch=_features_scratch))  # fmt: skip
