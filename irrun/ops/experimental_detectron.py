"""Detectron's ops: ExperimentalDetectronPriorGridGenerator-6, ExperimentalDetectronTopKROIs-6,
ExperimentalDetectronROIFeatureExtractor-6, ExperimentalDetectronGenerateProposalsSingleImage-6,
ExperimentalDetectronDetectionOutput-6, GenerateProposals-9.

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

ExperimentalDetectronGenerateProposalsSingleImage decodes anchors with box deltas, keeps
the best by score and thins them with greedy NMS (see its kernel).  Boxes of equal
score (those ``min_size`` drops score 0) keep their order in irrun; OpenVINO's order of
them is open.  The CPU plugin crashes for ``post_nms_count`` 0, which irrun answers
with empty outputs.

ExperimentalDetectronDetectionOutput decodes each region's box per class, thins each
class with greedy NMS and keeps the best detections (see its kernel).  Where it keeps
more than ``max_detections_per_image`` it sorts them by score, then region; a region's
detections in two classes of equal score come in either order (the CPU plugin puts the
higher class first, irrun the lower).  OpenVINO's reference kernel takes
``max_detections_per_image`` for the number of regions; irrun, like the plugin, reads
the regions there are.

GenerateProposals is ExperimentalDetectronGenerateProposalsSingleImage for a batch of
images, with sizes ``normalized`` or not, ``min_size`` scaled by the image's scale and
outputs of the boxes kept, image after image (see its kernel).

Element types: every input of these ops is one float type (f64, f32, f16 or bf16), as
OpenVINO checks (it also takes the 8- and 4-bit floats, which irrun refuses: nothing here
compares them with OpenVINO).

OpenVINO's reference kernels of these ops do not run from ``ov.Model.evaluate``; the
tests compare with the CPU plugin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval, Shape
from ..ir.element_types import FLOATS, INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element, static_shape
from ._shapes import merge_dims, try_merge_dims
from .detection import SAMPLES_AT_ONCE, pool_regions


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
    types = {i.element_type for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"priors, feature_map and im_data must have one element type, got "
                         f"{', '.join(sorted(t.name for t in types))}")  # fmt: skip
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
               check=_check_grid, input_types=(FLOATS, FLOATS, FLOATS),
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
               inputs=(2, 2), check=_check_topk, input_types=(FLOATS, FLOATS),
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
               inputs=(2, 1 << 30), check=_check_features, input_types=(FLOATS, FLOATS),
               shape_attrs=("output_size",), scratch=_features_scratch))  # fmt: skip


# ---------------------------------------------------------- GenerateProposalsSingleImage

PROPOSAL_ATTRS = (
    Attr("min_size", "float"),
    Attr("nms_threshold", "float"),
    Attr("post_nms_count", "int"),
    Attr("pre_nms_count", "int"),
)
# Detectron's bound on the predicted log-scale of a box's width and height.
MAX_DELTA_LOG_WH = np.float32(np.log(1000.0 / 16.0))


def _check_proposals(a: SimpleNamespace) -> None:
    if a.post_nms_count < 0 or a.pre_nms_count < 0:
        raise KernelError(f"pre_nms_count and post_nms_count must not be negative, got "
                          f"{a.pre_nms_count} and {a.post_nms_count}")  # fmt: skip


def _proposals_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    im_info, anchors, deltas, scores = (i.shape for i in inputs)
    types = {i.element_type for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"the inputs must have one element type, got "
                         f"{sorted(t.name for t in types)}")  # fmt: skip
    _check_rank(im_info, 1, "im_info")
    if im_info is not None and not _may_be(im_info[0], 3):
        raise ShapeError(f"im_info must hold 3 values (height, width, scale), got {im_info[0]}")
    _check_rank(anchors, 2, "anchors")
    if anchors is not None and not _may_be(anchors[1], 4):
        raise ShapeError(f"anchors' dim 1 must be 4, got {anchors[1]}")
    _check_rank(deltas, 3, "deltas")
    _check_rank(scores, 3, "scores")
    if deltas is not None and scores is not None:
        merge_dims(deltas[1], scores[1], "deltas and scores must have the same height")
        merge_dims(deltas[2], scores[2], "deltas and scores must have the same width")
    et = inputs[0].element_type
    return [TensorInfo((a.post_nms_count, 4), et), TensorInfo((a.post_nms_count,), et)]


def refine_anchors(anchors: np.ndarray, deltas: np.ndarray, height: np.float32,
                   width: np.float32, offset: np.float32,
                   max_delta: np.float32) -> np.ndarray:  # fmt: skip
    """Boxes ``[..., 4]`` (x1, y1, x2, y2) of anchors ``[..., 4]`` moved by deltas ``[..., 4]``
    (dx, dy, d log w, d log h) as Detectron does, in f32, clipped to the image; box sizes
    count ``offset`` (1 or 0) pixels beyond x2 - x1."""
    f32, half = np.float32, np.float32(0.5)
    x0, y0, x1, y1 = (anchors[..., k] for k in range(4))
    ww, hh = x1 - x0 + offset, y1 - y0 + offset
    ctr_x, ctr_y = x0 + half * ww, y0 + half * hh
    pred_x = deltas[..., 0] * ww + ctr_x
    pred_y = deltas[..., 1] * hh + ctr_y
    with np.errstate(over="ignore"):
        pred_w = np.exp(np.minimum(deltas[..., 2], max_delta)) * ww
        pred_h = np.exp(np.minimum(deltas[..., 3], max_delta)) * hh
    zero = f32(0)
    boxes = np.stack([
        np.maximum(zero, np.minimum(pred_x - half * pred_w, width - offset)),
        np.maximum(zero, np.minimum(pred_y - half * pred_h, height - offset)),
        np.maximum(zero, np.minimum(pred_x + half * pred_w - offset, width - offset)),
        np.maximum(zero, np.minimum(pred_y + half * pred_h - offset, height - offset)),
    ], axis=-1)  # fmt: skip
    return boxes.astype(f32)


def greedy_nms(boxes: np.ndarray, threshold: np.float32, limit: int,
               offset: np.float32) -> np.ndarray:  # fmt: skip
    """Indices of the boxes ``[N, 4]`` (in order of preference) that greedy NMS keeps, at
    most ``limit``: each kept box drops every later one whose IoU with it is above
    ``threshold`` and that touches it (IoU as Detectron computes it, box sizes counting
    ``offset`` pixels beyond x2 - x1)."""
    alive = np.ones(len(boxes), bool)
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    areas = (x1 - x0 + offset) * (y1 - y0 + offset)
    zero = np.float32(0)
    kept = []
    while len(kept) < limit:
        rest = np.flatnonzero(alive)
        if not len(rest):
            break
        i = rest[0]
        kept.append(i)
        alive[i] = False
        w = np.minimum(x1[i], x1) - np.maximum(x0[i], x0) + offset
        h = np.minimum(y1[i], y1) - np.maximum(y0[i], y0) + offset
        inter = np.maximum(zero, w) * np.maximum(zero, h)
        with np.errstate(divide="ignore", invalid="ignore"):
            iou = inter / (areas[i] + areas - inter)
        touch = (x0[i] <= x1) & (y0[i] <= y1) & (x0 <= x1[i]) & (y0 <= y1[i])
        alive &= ~((threshold < iou) & touch)
    return np.array(kept, np.int64)


def _proposals_kernel(a: SimpleNamespace, im_info: np.ndarray, anchors: np.ndarray,
                      deltas: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """The anchors ``[H * W * A, 4]`` (cell by cell, A anchors each) moved by ``deltas
    [A * 4, H, W]`` (Detectron's box decoding with sizes of x2 - x1 + 1 and the log-size
    deltas capped at log(1000 / 16)) and clipped to the image ``im_info[:2]`` (height,
    width); a box narrower or lower than ``min_size`` gets score 0.  The
    ``pre_nms_count`` best boxes by ``scores [A, H, W]`` go through greedy NMS (IoU
    with sizes of x2 - x1, above ``nms_threshold`` drops a touching box) until
    ``post_nms_count`` are kept; the outputs are their boxes and scores, padded with 0.
    Equal scores keep their order (cell by cell, anchor by anchor): the reference's
    ``std::partial_sort`` leaves it open; the CPU plugin sorts them as irrun does
    (boxes of score 0, which ``min_size`` drops, are the usual ties).  Computed in f32."""
    if im_info.size < 2 or anchors.ndim != 2 or anchors.shape[1] != 4:
        raise ShapeError(f"im_info {list(im_info.shape)} and anchors {list(anchors.shape)} "
                         "must be [3] and [N, 4]")  # fmt: skip
    if deltas.ndim != 3 or scores.ndim != 3 or deltas.shape[1:] != scores.shape[1:]:
        raise ShapeError(f"deltas {list(deltas.shape)} and scores {list(scores.shape)} must be "
                         "[4A, H, W] and [A, H, W]")  # fmt: skip
    count, height, width = scores.shape
    if deltas.shape[0] != 4 * count or anchors.shape[0] != count * height * width:
        raise KernelError(f"deltas {list(deltas.shape)} and anchors {list(anchors.shape)} do not "
                          f"fit scores {list(scores.shape)}: they must be [4A, H, W] and "
                          "[H * W * A, 4]")  # fmt: skip
    f32 = np.float32
    info = im_info.astype(f32).reshape(-1)
    # [A * 4, H, W] -> [H, W, A, 4] -> the anchors' order, cell by cell.
    d = deltas.astype(f32).reshape(count, 4, height, width).transpose(2, 3, 0, 1).reshape(-1, 4)
    s = scores.astype(f32).transpose(1, 2, 0).reshape(-1)
    boxes = refine_anchors(anchors.astype(f32), d, info[0], info[1], f32(1), MAX_DELTA_LOG_WH)
    size_ok = ((f32(a.min_size) <= boxes[:, 2] - boxes[:, 0] + f32(1))
               & (f32(a.min_size) <= boxes[:, 3] - boxes[:, 1] + f32(1)))  # fmt: skip
    s = np.where(size_ok, s, f32(0))
    order = np.argsort(-s, kind="stable")[: a.pre_nms_count]
    kept = order[greedy_nms(boxes[order], f32(a.nms_threshold), a.post_nms_count, f32(0))]
    out_boxes = np.zeros((a.post_nms_count, 4), f32)
    out_scores = np.zeros(a.post_nms_count, f32)
    out_boxes[: len(kept)], out_scores[: len(kept)] = boxes[kept], s[kept]
    return out_boxes.astype(anchors.dtype), out_scores.astype(anchors.dtype)


register(OpDef(type="ExperimentalDetectronGenerateProposalsSingleImage", version=6,
               since_opset=6, attrs=PROPOSAL_ATTRS, infer=_proposals_infer,
               kernel=_proposals_kernel, inputs=(4, 4), check=_check_proposals,
               input_types=(FLOATS, FLOATS, FLOATS, FLOATS), shape_attrs=("post_nms_count",),
               scratch=per_element(48)))  # fmt: skip


# --------------------------------------------------------------------------- DetectionOutput

DETECTION_ATTRS = (
    Attr("score_threshold", "float"),
    Attr("nms_threshold", "float"),
    Attr("max_delta_log_wh", "float"),
    Attr("num_classes", "int"),
    Attr("post_nms_count", "int"),
    Attr("max_detections_per_image", "int"),
    Attr("class_agnostic_box_regression", "bool", False),
    Attr("deltas_weights", "floats"),
)


def _check_detection(a: SimpleNamespace) -> None:
    if a.num_classes < 1 or a.max_detections_per_image < 0 or a.post_nms_count < 0:
        raise KernelError(f"num_classes must be positive and max_detections_per_image and "
                          f"post_nms_count not negative, got {a.num_classes}, "
                          f"{a.max_detections_per_image} and {a.post_nms_count}")  # fmt: skip
    if len(a.deltas_weights) != 4:
        raise KernelError(f"deltas_weights must hold 4 values, got {list(a.deltas_weights)}")


def _detection_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    rois, deltas, scores, im_info = (i.shape for i in inputs)
    types = {i.element_type for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"the inputs must have one element type, got "
                         f"{sorted(t.name for t in types)}")  # fmt: skip
    for shape, what, width in ((rois, "input_rois", 4), (deltas, "input_deltas", 4 * a.num_classes),
                               (scores, "input_scores", a.num_classes)):  # fmt: skip
        _check_rank(shape, 2, what)
        if shape is not None and not _may_be(shape[1], width):
            raise ShapeError(f"{what}' dim 1 must be {width}, got {shape[1]}")
    if im_info is not None and (len(im_info) != 2 or not _may_be(im_info[0], 1)
                                or not _may_be(im_info[1], 3)):  # fmt: skip
        raise ShapeError(f"input_im_info must be [1, 3], got shape {list(im_info)}")
    if rois is not None and deltas is not None and scores is not None:
        rows = merge_dims(rois[0], deltas[0], "input_rois, input_deltas and input_scores must "
                                              "have as many rows")  # fmt: skip
        merge_dims(rows, scores[0], "input_rois, input_deltas and input_scores must have as "
                                    "many rows")  # fmt: skip
    et, count = inputs[0].element_type, a.max_detections_per_image
    return [TensorInfo((count, 4), et), TensorInfo((count,), element_types.ELEMENT_TYPES["i32"]),
            TensorInfo((count,), et)]  # fmt: skip


def _jaccard_nms(boxes: np.ndarray, areas: np.ndarray, threshold: np.float32,
                 limit: int) -> np.ndarray:  # fmt: skip
    """Greedy NMS over boxes in order of preference, as Detectron's detection output does
    it: the overlap of boxes that do not touch is 0, else their intersection (sizes
    x2 - x1 + 1, 0 if not positive) over the union of their ``areas``; a box whose
    overlap with a kept one is above ``threshold`` is dropped."""
    alive = np.ones(len(boxes), bool)
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    one, zero = np.float32(1), np.float32(0)
    kept = []
    while len(kept) < limit:
        rest = np.flatnonzero(alive)
        if not len(rest):
            break
        i = rest[0]
        kept.append(i)
        alive[i] = False
        apart = (x0 > x1[i]) | (x1 < x0[i]) | (y0 > y1[i]) | (y1 < y0[i])
        w = np.minimum(x1[i], x1) - np.maximum(x0[i], x0) + one
        h = np.minimum(y1[i], y1) - np.maximum(y0[i], y0) + one
        inter = w * h
        with np.errstate(divide="ignore", invalid="ignore"):
            overlap = np.where(apart | (w <= 0) | (h <= 0), zero,
                               inter / (areas[i] + areas - inter))  # fmt: skip
        alive &= ~(overlap > threshold)
    return np.array(kept, np.int64)


def _detection_kernel(a: SimpleNamespace, rois: np.ndarray, deltas: np.ndarray,
                      scores: np.ndarray, im_info: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each region ``[x1, y1, x2, y2]`` with positive width and height is moved, for each
    class but the background 0, by that class's deltas ``[N, classes * 4]`` (divided by
    ``deltas_weights``; Detectron's decoding with sizes of x2 - x1 + 1 and log-sizes
    capped at ``max_delta_log_wh``), and its corners are clamped at 0 (not to the image:
    ``im_info`` plays no part, as in OpenVINO).  A region of no width or height scores 0
    in every class, at a box of zeros.  Per class, the boxes scoring above
    ``score_threshold`` go by score (equal scores by region) through greedy NMS
    (overlap above ``nms_threshold`` drops a box) to at most ``post_nms_count``.  If more
    than ``max_detections_per_image`` are kept, the best are taken by score (then
    region); else they stay class by class.  Outputs (boxes, classes i32, scores) are
    padded with 0.  ``class_agnostic_box_regression`` is ignored, as by both OpenVINO
    engines.  OpenVINO's reference kernel reads ``max_detections_per_image`` regions,
    whatever their number (past the end of its inputs when there are fewer); the CPU
    plugin and irrun read the regions there are.  Computed in f32."""
    n = rois.shape[0] if rois.ndim == 2 else -1
    classes = a.num_classes
    if (rois.shape != (n, 4) or deltas.shape != (n, 4 * classes)
            or scores.shape != (n, classes) or im_info.size != 3):  # fmt: skip
        raise ShapeError(f"input_rois {list(rois.shape)}, input_deltas {list(deltas.shape)}, "
                         f"input_scores {list(scores.shape)} and input_im_info "
                         f"{list(im_info.shape)} must be [N, 4], [N, {4 * classes}], "
                         f"[N, {classes}] and [1, 3]")  # fmt: skip
    f32, half, one, zero = np.float32, np.float32(0.5), np.float32(1), np.float32(0)
    r = rois.astype(f32)
    valid = (r[:, 2] - r[:, 0] > 0) & (r[:, 3] - r[:, 1] > 0)
    weights = np.asarray(a.deltas_weights, f32)
    d = deltas.astype(f32).reshape(n, classes, 4) / weights  # [N, classes, 4]
    ww, hh = r[:, 2] - r[:, 0] + one, r[:, 3] - r[:, 1] + one
    ctr_x, ctr_y = (r[:, 0] + half * ww)[:, None], (r[:, 1] + half * hh)[:, None]
    ww, hh = ww[:, None], hh[:, None]
    pred_x, pred_y = d[..., 0] * ww + ctr_x, d[..., 1] * hh + ctr_y
    cap = f32(a.max_delta_log_wh)
    with np.errstate(over="ignore", invalid="ignore"):
        pred_w = np.exp(np.minimum(d[..., 2], cap)) * ww
        pred_h = np.exp(np.minimum(d[..., 3], cap)) * hh
    boxes = np.stack([np.maximum(zero, pred_x - half * pred_w),
                      np.maximum(zero, pred_y - half * pred_h),
                      np.maximum(zero, pred_x + half * pred_w - one),
                      np.maximum(zero, pred_y + half * pred_h - one)], axis=-1)  # fmt: skip
    boxes = np.where(valid[:, None, None], boxes, zero).astype(f32)  # [N, classes, 4]
    with np.errstate(over="ignore", invalid="ignore"):
        areas = ((boxes[..., 2] - boxes[..., 0] + one) * (boxes[..., 3] - boxes[..., 1] + one))
    areas = np.where(valid[:, None], areas, zero)
    s = np.where(valid[:, None], scores.astype(f32), zero)
    picked_class, picked_roi = [], []
    threshold = f32(a.score_threshold)
    for c in range(1, classes):
        candidates = np.flatnonzero(s[:, c] > threshold)
        order = candidates[np.argsort(-s[candidates, c], kind="stable")]
        kept = order[_jaccard_nms(boxes[order, c], areas[order, c], f32(a.nms_threshold),
                                  a.post_nms_count)]  # fmt: skip
        picked_class.append(np.full(len(kept), c))
        picked_roi.append(kept)
    cls = np.concatenate(picked_class) if picked_class else np.zeros(0, np.int64)
    roi = np.concatenate(picked_roi) if picked_roi else np.zeros(0, np.int64)
    score = s[roi, cls]
    limit = a.max_detections_per_image
    if len(roi) > limit:
        best = np.lexsort((roi, -score))[:limit]  # by score, then region (then class)
        cls, roi, score = cls[best], roi[best], score[best]
    out_boxes = np.zeros((limit, 4), f32)
    out_classes = np.zeros(limit, np.int32)
    out_scores = np.zeros(limit, f32)
    out_boxes[: len(roi)], out_classes[: len(roi)] = boxes[roi, cls], cls
    out_scores[: len(roi)] = score
    return out_boxes.astype(rois.dtype), out_classes, out_scores.astype(rois.dtype)


register(OpDef(type="ExperimentalDetectronDetectionOutput", version=6, since_opset=6,
               attrs=DETECTION_ATTRS, infer=_detection_infer, kernel=_detection_kernel,
               inputs=(4, 4), check=_check_detection, input_types=(FLOATS, FLOATS, FLOATS, FLOATS),
               shape_attrs=("num_classes", "max_detections_per_image"),
               scratch=per_element(64)))  # fmt: skip


# --------------------------------------------------------------------------- GenerateProposals

GENERATE_ATTRS = (
    Attr("min_size", "float"),
    Attr("nms_threshold", "float"),
    Attr("pre_nms_count", "int"),
    Attr("post_nms_count", "int"),
    Attr("normalized", "bool", True),
    Attr("nms_eta", "float", 1.0),
    Attr("roi_num_type", "element_type", element_types.ELEMENT_TYPES["i64"]),
)


def _check_generate(a: SimpleNamespace) -> None:
    # OpenVINO refuses counts of 0 here (ExperimentalDetectron's single-image op takes them).
    if a.pre_nms_count <= 0 or a.post_nms_count <= 0:
        raise KernelError(f"pre_nms_count and post_nms_count must be positive, got "
                          f"{a.pre_nms_count} and {a.post_nms_count}")  # fmt: skip
    if a.nms_eta != 1.0:
        raise KernelError(f"nms_eta must be 1.0 (OpenVINO has no adaptive NMS), got {a.nms_eta}")
    if a.roi_num_type.name not in INDEX_TYPES:
        raise KernelError(f"roi_num_type must be i32 or i64, got {a.roi_num_type.name}")


def _generate_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    im_info, anchors, deltas, scores = (i.shape for i in inputs)
    types = {i.element_type for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"the inputs must have one element type, got "
                         f"{sorted(t.name for t in types)}")  # fmt: skip
    _check_rank(im_info, 2, "im_info")
    _check_rank(anchors, 4, "anchors")
    _check_rank(deltas, 4, "deltas")
    _check_rank(scores, 4, "scores")
    batches: Dim = DYNAMIC
    if im_info is not None:
        if not (_may_be(im_info[1], 3) or _may_be(im_info[1], 4)):
            raise ShapeError(f"im_info's dim 1 must be 3 or 4, got {im_info[1]}")
        batches = im_info[0]
    if anchors is not None and not _may_be(anchors[3], 4):
        raise ShapeError(f"anchors' last dim must be 4, got {anchors[3]}")
    same = "im_info, deltas and scores must have as many images"
    for shape in (deltas, scores):
        if shape is not None:
            batches = merge_dims(batches, shape[0], same)
    if deltas is not None and scores is not None:
        if try_merge_dims(deltas[1], _product(scores[1], 4)) is None:
            raise ShapeError(f"deltas' dim 1 ({deltas[1]}) must be 4 times scores' "
                             f"({scores[1]}), the number of anchors")  # fmt: skip
        merge_dims(deltas[2], scores[2], "deltas and scores must have the same height")
        merge_dims(deltas[3], scores[3], "deltas and scores must have the same width")
    if anchors is not None and scores is not None:
        merge_dims(anchors[0], scores[2], "anchors and scores must have the same height")
        merge_dims(anchors[1], scores[3], "anchors and scores must have the same width")
        merge_dims(anchors[2], scores[1], "anchors and scores must have as many anchors")
    most = _product(batches, a.post_nms_count)
    rois: Dim = Interval(0, most if isinstance(most, int) else most.hi)
    if rois == Interval(0, 0):
        rois = 0
    et = inputs[0].element_type
    return [TensorInfo((rois, 4), et), TensorInfo((rois,), et),
            TensorInfo((batches,), a.roi_num_type)]  # fmt: skip


def _generate_kernel(a: SimpleNamespace, im_info: np.ndarray, anchors: np.ndarray,
                     deltas: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per image, as ExperimentalDetectronGenerateProposalsSingleImage but for: anchors
    ``[H, W, A, 4]``, deltas ``[N, A * 4, H, W]``, scores ``[N, A, H, W]`` and ``im_info
    [N, 3 or 4]`` (height, width, scale of the height, scale of the width, which is the
    height's where absent); box sizes count x2 - x1 + 1 unless ``normalized``, in the
    NMS as well; a box narrower than ``min_size * scale`` (or lower) keeps its score and
    its place among the ``pre_nms_count`` best but is dropped before NMS.  The images'
    kept boxes and scores are concatenated, without padding; ``rois_num`` counts them per
    image.  ``nms_eta`` must be 1 (no adaptive NMS), as OpenVINO requires.  Computed in
    f32."""
    if im_info.ndim != 2 or im_info.shape[1] not in (3, 4) or anchors.ndim != 4:
        raise ShapeError(f"im_info {list(im_info.shape)} and anchors {list(anchors.shape)} "
                         "must be [N, 3 or 4] and [H, W, A, 4]")  # fmt: skip
    images, count, height, width = scores.shape if scores.ndim == 4 else (-1,) * 4
    if (deltas.shape != (images, 4 * count, height, width)
            or anchors.shape != (height, width, count, 4) or len(im_info) != images):  # fmt: skip
        raise ShapeError(f"im_info {list(im_info.shape)}, anchors {list(anchors.shape)}, deltas "
                         f"{list(deltas.shape)} and scores {list(scores.shape)} must be [N, 3], "
                         "[H, W, A, 4], [N, 4A, H, W] and [N, A, H, W]")  # fmt: skip
    f32 = np.float32
    offset = f32(0) if a.normalized else f32(1)
    info = im_info.astype(f32)
    scale_h = info[:, 2]
    scale_w = info[:, 3] if info.shape[1] == 4 else scale_h
    # [N, A * 4, H, W] -> [N, H, W, A, 4] -> cell by cell, anchor by anchor.
    d = deltas.astype(f32).reshape(images, count, 4, height, width).transpose(0, 3, 4, 1, 2)
    d = d.reshape(images, -1, 4)
    s = scores.astype(f32).transpose(0, 2, 3, 1).reshape(images, -1)
    base = anchors.astype(f32).reshape(-1, 4)
    out_boxes, out_scores, numbers = [], [], []
    for image in range(images):
        boxes = refine_anchors(base, d[image], info[image, 0], info[image, 1], offset,
                               MAX_DELTA_LOG_WH)  # fmt: skip
        min_w, min_h = f32(a.min_size) * scale_w[image], f32(a.min_size) * scale_h[image]
        big = ((min_w <= boxes[:, 2] - boxes[:, 0] + offset)
               & (min_h <= boxes[:, 3] - boxes[:, 1] + offset))  # fmt: skip
        order = np.argsort(-s[image], kind="stable")[: a.pre_nms_count]
        order = order[big[order]]
        kept = order[greedy_nms(boxes[order], f32(a.nms_threshold), a.post_nms_count, offset)]
        out_boxes.append(boxes[kept])
        out_scores.append(s[image, kept])
        numbers.append(len(kept))
    dtype = anchors.dtype
    rois = np.concatenate(out_boxes) if out_boxes else np.zeros((0, 4), f32)
    kept_scores = np.concatenate(out_scores) if out_scores else np.zeros(0, f32)
    return (rois.astype(dtype), kept_scores.astype(dtype),
            np.array(numbers, a.roi_num_type.dtype))  # fmt: skip


register(OpDef(type="GenerateProposals", version=9, since_opset=9, attrs=GENERATE_ATTRS,
               infer=_generate_infer, kernel=_generate_kernel, inputs=(4, 4),
               check=_check_generate, input_types=(FLOATS, FLOATS, FLOATS, FLOATS),
               shape_attrs=("post_nms_count",), scratch=per_element(64)))  # fmt: skip
