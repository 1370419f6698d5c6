"""Detection ops: NonMaxSuppression-1, -3, -4, -5 and -9, ROIAlign-3 and -9, ROIAlignRotated-15.

NonMaxSuppression works per (batch, class): boxes scoring above
``score_threshold`` are candidates; the best candidate (highest score, then
lowest box index) is selected and every other candidate is compared with it.
Corner boxes ``[y1, x1, y2, x2]`` are first put in order (min, max) per axis;
center boxes ``[xc, yc, w, h]`` become corners by ``c -/+ size / 2``.  The IoU of
two boxes is 0 when either area is not positive.

* Hard NMS (``soft_nms_sigma`` <= 0): a candidate whose IoU with the selected box
  is above ``iou_threshold`` is dropped; version 5 drops it also at an IoU equal to
  the threshold (its reference kernel and the plugin agree), version 9 does not.
* Soft NMS (sigma > 0): a candidate's score is multiplied by
  ``exp(-0.5 / sigma * iou**2)`` and the candidate is dropped once its score is
  not above ``score_threshold``; ``iou_threshold`` plays no part.

At most ``max_output_boxes_per_class`` boxes are selected per (batch, class).
The outputs hold the selections batch by batch, class by class, in order of
selection, or, with ``sort_result_descending``, all of them by score (highest
first; equal scores by batch, class, then box index).  ``selected_indices`` and
``selected_scores`` have exactly as many rows as were selected (as the CPU
plugin and the reference return them; the shape rule gives only the upper bound
``min(num_boxes, max_output_boxes_per_class) * batches * classes``), and
``selected_scores`` rows are ``[batch, class, score]`` in f32 for every input type.
Absent optional inputs are 0, so a layer with only boxes and scores selects nothing.

Where OpenVINO's CPU plugin and its reference kernels disagree, irrun follows the
one that agrees with the specification:

* Version 9 at an IoU equal to ``iou_threshold``: the plugin drops the candidate, as
  for version 5; the reference and the specification keep it (``iou <= threshold``
  keeps a box), and so does irrun.  This matters at ``iou_threshold=0``, where the
  plugin keeps one box per class even if no two boxes overlap, and for identical
  boxes at threshold 1.
* Version 5 soft NMS: the reference still drops candidates at IoU >= ``iou_threshold``;
  the plugin and the specification do not, nor does irrun.
* ``sort_result_descending`` of version 9: the reference merely reverses the
  selection order (``std::reverse``), which is no sort; irrun sorts, as the plugin
  and the specification do.  Version 5's reference sorts, but treats scores within
  1e-6 as equal; irrun, like the plugin, compares them exactly.
* A negative ``max_output_boxes_per_class`` selects nothing, as the plugin does (the
  reference refuses it: it would size its output negatively).  The plugin then leaves
  ``valid_outputs`` unwritten and corrupts its memory (the next inference of the
  process may crash); irrun gives 0.

The kernel selects one box per (batch, class) at a time, for all of them at once,
and computes IoU against every candidate in one vectorized step.  Soft NMS scales
the candidates' scores eagerly, one selected box at a time, where the reference
scales them lazily when they reach the top of its queue: the same boxes are
selected, but the product of the weights may be rounded differently, so soft-NMS
scores agree with the plugin to about 1e-6 relative (the plugin's vectorized exp
differs from NumPy's by a few ulp as well).  Hard-NMS scores are the input scores.

NonMaxSuppression-1, -3 and -4 take no ``soft_nms_sigma`` (hard NMS only) and have
one output, ``selected_indices`` (i64 for version 1, ``output_type`` for 3 and 4).
Both OpenVINO engines run them as version 5 (the template plugin with version 5's
reference kernel, the CPU plugin by converting the layer): a candidate at an IoU
equal to ``iou_threshold`` is dropped, so is irrun's, though their specification
drops only a candidate above it.  Their inputs after the scores must be scalars
(version 5 also takes one-element vectors).  The specification sizes the output
``min(num_boxes, max_output_boxes_per_class * num_classes)`` rows for versions 1 and
3 and ``min(num_boxes, max_output_boxes_per_class) * num_batches * num_classes`` for
4, padded with -1; OpenVINO's shape inference declares those static sizes, but both
engines return only the rows selected, without padding, and so does irrun (its shape
rule gives the size as an upper bound).  Versions 1 and 3's size is no bound (it
ignores the batches, and the classes once ``num_boxes`` is smaller): OpenVINO's
reference kernel, like the specification, keeps only that many rows, the first
ones of the (sorted) selection; the CPU plugin returns them all.  irrun follows the
reference and the specification, and truncates.

ROIAlign pools each region of interest ``[x1, y1, x2, y2]`` (scaled by
``spatial_scale``) of the image ``batch_indices[r]`` into ``pooled_h x pooled_w``
bins; each bin takes ``sampling_ratio`` (or, for 0, ``ceil(bin size)``) samples
per axis at the centres of a regular grid, each sample bilinear between the four
nearest pixels, and averages them (``avg``) or takes their maximum (``max``).
``aligned_mode`` (version 9) shifts the region: ``half_pixel_for_nn`` by -0.5
after scaling, ``half_pixel`` by +0.5 before and -0.5 after scaling; the
``asymmetric`` mode (and version 3) makes the region at least 1x1.  A sample
more than one pixel outside the map counts as 0; one less than a pixel outside
is clamped to the border.  As in the reference kernel, ``max`` starts from 0,
so a bin whose samples are all negative pools to 0.  A negative
``sampling_ratio``, or an adaptive one that comes out negative (``aligned_mode``
other than asymmetric with x2 < x1 - pooled_w), is refused at run time as the
reference kernel refuses it (the plugin returns zeros).  A bin with no samples
(adaptive sampling of a region with y2 < y1 or x2 < x1, which the aligned modes
keep) pools to 0, as in the reference and torchvision; the plugin's average of it
is NaN.  f32 results agree with the
plugin to about 1e-5 relative (it sums the bilinear terms in its own order);
f16 and bf16 inputs are computed in f32 and rounded once, as the plugin does (the
reference kernel computes in the input's type).

Element types: NonMaxSuppression's boxes, scores and thresholds f32, f16 or bf16
(versions 5 and 9 refuse f64; 1, 3 and 4 check no type, but the plugin runs none of them
in f64), its ``max_output_boxes_per_class`` any number or boolean (OpenVINO checks no
type; the value is truncated to an integer).  ROIAlign's and ROIAlignRotated's data and
regions one float type of f64, f32, f16 and bf16 (OpenVINO also takes the 8- and 4-bit
floats, which irrun refuses: nothing here compares them with OpenVINO), their
``batch_indices`` any integer type, the packed ones too, as OpenVINO's check.

ROIAlignRotated pools rotated regions ``[x_c, y_c, w, h, angle]`` with ROIAlign's
sampling (``avg`` only; see its kernel's docstring); the samples are rotated about
the region's centre into the map.  Its values agree with the CPU plugin to about 1e-7
(f32); ``ov.Model.evaluate`` does not run it, so the tests compare with the plugin.
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
from ..ir.element_types import FLOATS, INDEX_TYPES, INTEGERS, NUMBERS, PACKED_INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import int_values, merge_dims

# NonMaxSuppression's boxes, scores and thresholds: not f64, which versions 5 and 9
# refuse (versions 1, 3 and 4 check no type, but the CPU plugin does not run them in f64).
NMS_FLOATS = ("f32", "f16", "bf16")
# max_output_boxes_per_class: OpenVINO checks no type; its value is read as an integer.
NMS_COUNTS = (*NUMBERS, "boolean")
# ROIAlign's batch_indices: any integral number (as OpenVINO's check).
BATCH_INDICES = (*INTEGERS, *PACKED_INTEGERS)

# --------------------------------------------------------------------------- NonMaxSuppression

NMS_ATTRS = (
    Attr("box_encoding", "enum", "corner", ("corner", "center")),
    Attr("sort_result_descending", "bool", True),
    Attr("output_type", "element_type", element_types.ELEMENT_TYPES["i64"]),
)
NMS_INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
              "score_threshold", "soft_nms_sigma")  # fmt: skip


def _check_nms(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")


def _may_be(d: Dim, n: int) -> bool:
    return d == n if isinstance(d, int) else d.contains(n)


def _max_length(d: Dim) -> int | None:
    return d if isinstance(d, int) else d.hi


def _nms_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    boxes, scores = inputs[0].shape, inputs[1].shape
    if boxes is not None and len(boxes) != 3:
        raise ShapeError(f"boxes must be 3-D [batches, boxes, 4], got shape {list(boxes)}")
    if scores is not None and len(scores) != 3:
        raise ShapeError(f"scores must be 3-D [batches, classes, boxes], got shape {list(scores)}")
    for port in range(2, len(inputs)):
        shape = inputs[port].shape
        one_value = shape is None or len(shape) == 0 or (len(shape) == 1 and _may_be(shape[0], 1))
        if not one_value:
            raise ShapeError(f"{NMS_INPUTS[port]} must be a scalar or hold one value, "
                             f"got shape {list(shape)}")  # fmt: skip
    selected: Dim = DYNAMIC
    if boxes is not None:
        if scores is not None:
            merge_dims(boxes[0], scores[0], "boxes and scores must have the same number of batches")
            merge_dims(boxes[1], scores[2], "boxes' dim 1 and scores' dim 2 (the number of "
                                            "boxes) must be equal")  # fmt: skip
        if not _may_be(boxes[2], 4):
            raise ShapeError(f"boxes' last dim must be 4, got {boxes[2]}")
        limit = int_values(inputs[2]) if len(inputs) > 2 else None
        per_class = limit[0] if limit else -1
        if isinstance(boxes[1], int):
            bound = min(boxes[1], per_class)
            selected = Interval(0, None) if bound < 0 else Interval(0, bound)
            if scores is not None:
                factors = [_max_length(scores[0]), _max_length(scores[1])]
                if bound < 0 or None in factors:
                    selected = Interval(0, None)
                else:
                    selected = Interval(0, bound * factors[0] * factors[1])
            if selected.hi == 0:
                selected = 0
    out = (selected, 3)
    return [TensorInfo(out, a.output_type), TensorInfo(out, element_types.ELEMENT_TYPES["f32"]),
            TensorInfo((1,), a.output_type)]  # fmt: skip


def _corners(boxes: np.ndarray, encoding: str) -> np.ndarray:
    """``[..., 4]`` boxes as ordered corners ``y1, x1, y2, x2`` (f32)."""
    b = boxes.astype(np.float32)
    if encoding == "center":
        half_w, half_h = b[..., 2] / np.float32(2), b[..., 3] / np.float32(2)
        xc, yc = b[..., 0], b[..., 1]
        return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=-1)
    y = np.sort(b[..., 0::2], axis=-1)
    x = np.sort(b[..., 1::2], axis=-1)
    return np.stack([y[..., 0], x[..., 0], y[..., 1], x[..., 1]], axis=-1)


def box_iou(boxes: np.ndarray, areas: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """IoU of every box ``[G, N, 4]`` with its group's chosen box ``[G, 4]``, as
    OpenVINO computes it in f32 (0 where either area is not positive).

    >>> b = np.array([[[0, 0, 2, 2], [1, 1, 3, 3], [0, 0, 0, 5]]], np.float32)
    >>> areas = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    >>> box_iou(b, areas, b[:, 0]).tolist()
    [[1.0, 0.1428571492433548, 0.0]]
    """
    c = chosen[:, None, :]
    c_area = (c[..., 2] - c[..., 0]) * (c[..., 3] - c[..., 1])
    h = np.maximum(np.minimum(boxes[..., 2], c[..., 2]) - np.maximum(boxes[..., 0], c[..., 0]),
                   np.float32(0))  # fmt: skip
    w = np.maximum(np.minimum(boxes[..., 3], c[..., 3]) - np.maximum(boxes[..., 1], c[..., 1]),
                   np.float32(0))  # fmt: skip
    inter = h * w
    iou = inter / (areas + c_area - inter)
    return np.where((areas <= 0) | (c_area <= 0), np.float32(0), iou)


def non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    per_class: int,
    iou_threshold: float,
    score_threshold: float,
    sigma: float,
    version: int,
    encoding: str = "corner",
) -> tuple[np.ndarray, np.ndarray]:
    """The selections ``(batch, class, box)`` and their scores, batch by batch,
    class by class, in order of selection.

    >>> b = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]], np.float32)
    >>> s = np.array([[[0.5, 0.375, 0.25]]], np.float32)
    >>> sel, score = non_max_suppression(b, s, 3, 0.5, 0.0, 0.0, 9)
    >>> sel.tolist(), score.tolist()
    ([[0, 0, 0], [0, 0, 2]], [0.5, 0.25])
    """
    batches, classes, n = scores.shape
    groups = batches * classes
    corners = np.broadcast_to(_corners(boxes, encoding)[:, None], (batches, classes, n, 4))
    corners = corners.reshape(groups, n, 4)
    areas = (corners[..., 2] - corners[..., 0]) * (corners[..., 3] - corners[..., 1])
    current = scores.astype(np.float32).reshape(groups, n).copy()
    thr_iou, thr_score = np.float32(iou_threshold), np.float32(score_threshold)
    soft = sigma > 0
    scale = np.float32(-0.5) / np.float32(sigma) if soft else np.float32(0)
    alive = current > thr_score
    rows = np.arange(groups)
    picks, picked_scores, steps = [], [], []
    limit = max(0, min(per_class, n))
    for _ in range(limit):
        has = alive.any(axis=1)
        if not has.any():
            break
        # argmax takes the first of equal scores: the lowest box index, as OpenVINO does.
        pick = np.argmax(np.where(alive, current, np.float32(-np.inf)), axis=1)
        steps.append(has)
        picks.append(pick)
        picked_scores.append(current[rows, pick])
        alive[rows, pick] = False
        iou = box_iou(corners, areas, corners[rows, pick])
        if soft:
            weight = np.exp(scale * iou * iou).astype(np.float32)
            current = np.where(alive, current * weight, current)
            alive &= current > thr_score
        else:
            alive &= ~((iou >= thr_iou) if version == 5 else (iou > thr_iou))
        alive &= has[:, None]
    if not steps:
        return np.zeros((0, 3), np.int64), np.zeros((0,), np.float32)
    # [step, group] -> group-major order: batch by batch, class by class, by step.
    taken = np.stack(steps, axis=1)
    group = np.broadcast_to(rows[:, None], taken.shape)[taken]
    box = np.stack(picks, axis=1)[taken]
    score = np.stack(picked_scores, axis=1)[taken]
    selected = np.stack([group // classes, group % classes, box], axis=1).astype(np.int64)
    return selected, score


def _scalar(x: np.ndarray | None, default, dtype):
    if x is None:
        return default
    values = np.asarray(x).reshape(-1)
    if values.size != 1:
        raise ShapeError(f"expected one value, got {values.size}")
    return dtype(values[0])


def _nms_kernel(version: int):
    def kernel(a: SimpleNamespace, boxes: np.ndarray, scores: np.ndarray,
               *rest: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
        args = list(rest) + [None] * (4 - len(rest))
        per_class = _scalar(args[0], 0, int)
        iou = _scalar(args[1], 0.0, np.float32)
        score = _scalar(args[2], 0.0, np.float32)
        sigma = _scalar(args[3], 0.0, np.float32)
        if boxes.ndim != 3 or scores.ndim != 3 or boxes.shape[2] != 4:
            raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} must "
                             "be [batches, boxes, 4] and [batches, classes, boxes]")  # fmt: skip
        if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2]:
            raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} "
                             "disagree on the number of batches or boxes")  # fmt: skip
        selected, chosen = non_max_suppression(
            boxes, scores, per_class, iou, score, sigma, version, a.box_encoding
        )
        return nms_outputs(a, selected, chosen)

    return kernel


def nms_outputs(a: SimpleNamespace, selected: np.ndarray, chosen: np.ndarray) -> tuple:
    """NonMaxSuppression-5/9's three outputs from the selected (batch, class, box) rows and
    their scores in selection order: sorted by score when ``sort_result_descending``."""
    if a.sort_result_descending and len(chosen):
        order = np.lexsort((selected[:, 2], selected[:, 1], selected[:, 0], -chosen))
        selected, chosen = selected[order], chosen[order]
    itype = a.output_type.dtype
    rows = np.concatenate([selected[:, :2].astype(np.float32), chosen[:, None]], axis=1)
    return (selected.astype(itype), rows.astype(np.float32),
            np.array([len(selected)], dtype=itype))  # fmt: skip


def _nms_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                 outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score (a box in a class): its corners, area and state in f32, one step's
    IoU temporaries, and what each selection step keeps (at most one per box)."""
    scores = static_shape(inputs[1])
    return 128 * math.prod(scores) if scores is not None else 0


def _old_nms_infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        for port in range(2, len(inputs)):
            shape = inputs[port].shape
            if shape is not None and len(shape) != 0:
                raise ShapeError(f"{NMS_INPUTS[port]} must be a scalar, got shape {list(shape)}")
        output_type = getattr(a, "output_type", element_types.ELEMENT_TYPES["i64"])
        five = SimpleNamespace(output_type=output_type)
        selected = _nms_infer(five, inputs)[0].shape[0]
        bound = _old_nms_bound(version, inputs)
        if bound is not None:
            selected = 0 if bound <= 0 else Interval(0, bound)
        return [TensorInfo((selected, 3), output_type)]

    return infer


def _old_nms_bound(version: int, inputs: Sequence[TensorInfo]) -> int | None:
    """The most rows versions 1, 3 and 4 return, where the shapes and the constant
    ``max_output_boxes_per_class`` tell it (None where they do not)."""
    boxes, scores = inputs[0].shape, inputs[1].shape
    limit = int_values(inputs[2]) if len(inputs) > 2 else [0]
    if boxes is None or scores is None or not limit or not isinstance(boxes[1], int):
        return None
    per_class = max(limit[0], 0)
    if version == 4:
        factors = [_max_length(scores[0]), _max_length(scores[1])]
        if None in factors:
            return None
        return min(boxes[1], per_class) * factors[0] * factors[1]
    classes = _max_length(scores[1])
    return None if classes is None else min(boxes[1], per_class * classes)


def _old_nms_kernel(version: int):
    five = _nms_kernel(5)

    def kernel(a: SimpleNamespace, boxes: np.ndarray, scores: np.ndarray,
               *rest: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
        for name, x in zip(NMS_INPUTS[2:], rest, strict=False):
            if np.ndim(x) != 0:
                raise ShapeError(f"{name} must be a scalar, got shape {list(np.shape(x))}")
        output_type = getattr(a, "output_type", element_types.ELEMENT_TYPES["i64"])
        attrs = SimpleNamespace(box_encoding=a.box_encoding, output_type=output_type,
                                sort_result_descending=a.sort_result_descending)  # fmt: skip
        selected = five(attrs, boxes, scores, *rest)[0]
        if version in (1, 3):
            per_class = _scalar(rest[0], 0, int) if rest else 0
            selected = selected[: max(0, min(boxes.shape[1], per_class * scores.shape[1]))]
        return (selected,)

    return kernel


def _old_nms_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                     outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """As version 5's, whose kernel runs, plus its two other outputs (a row per score
    at most)."""
    scores = static_shape(inputs[1])
    return 176 * math.prod(scores) if scores is not None else 0


for _version in (1, 3, 4):
    register(OpDef(type="NonMaxSuppression", version=_version, since_opset=_version,
                   attrs=NMS_ATTRS[:2] + (NMS_ATTRS[2:] if _version > 1 else ()),
                   infer=_old_nms_infer(_version), kernel=_old_nms_kernel(_version),
                   inputs=(2, 5), check=_check_nms if _version > 1 else None,
                   input_types=(NMS_FLOATS, NMS_FLOATS, NMS_COUNTS, NMS_FLOATS, NMS_FLOATS),
                   scratch=_old_nms_scratch))  # fmt: skip

for _version in (5, 9):
    register(OpDef(type="NonMaxSuppression", version=_version, since_opset=_version,
                   attrs=NMS_ATTRS, infer=_nms_infer, kernel=_nms_kernel(_version),
                   inputs=(2, 6), check=_check_nms,
                   input_types=(NMS_FLOATS, NMS_FLOATS, NMS_COUNTS, NMS_FLOATS, NMS_FLOATS,
                                NMS_FLOATS),
                   scratch=_nms_scratch))  # fmt: skip


# --------------------------------------------------------------------------- ROIAlign

ROI_MODES = ("avg", "max")
# Bilinear samples ROIAlign gathers in one go (each takes four f32 taps and weights).
SAMPLES_AT_ONCE = 1 << 22
ALIGNED_MODES = ("asymmetric", "half_pixel_for_nn", "half_pixel")


def _roi_attrs(version: int) -> tuple[Attr, ...]:
    attrs = (
        Attr("pooled_h", "int"),
        Attr("pooled_w", "int"),
        Attr("sampling_ratio", "int"),
        Attr("spatial_scale", "float"),
        Attr("mode", "enum", choices=ROI_MODES),
    )
    if version >= 9:
        attrs += (Attr("aligned_mode", "enum", "asymmetric", ALIGNED_MODES),)
    return attrs


def _check_roi(a: SimpleNamespace) -> None:
    # OpenVINO takes pooled sizes of 0 (an empty output) and any spatial_scale.  It reads
    # a negative pooled size as a dynamic dim, which its CPU plugin then cannot compile.
    # It also reads a negative sampling_ratio, which its reference kernel refuses when it
    # runs and its CPU plugin answers with zeros: refused here, so that validate says so
    # before a run does.
    if a.sampling_ratio < 0:
        # torchvision's roi_align(sampling_ratio=-1), its default, converts to this.
        raise KernelError(f"sampling_ratio {a.sampling_ratio} is negative, which OpenVINO's "
                         "reference kernel refuses (its CPU plugin returns zeros; for "
                         "torchvision's adaptive sampling it should be 0)")  # fmt: skip
    if a.pooled_h < 0 or a.pooled_w < 0:
        raise KernelError(f"pooled_h and pooled_w must not be negative, got {a.pooled_h} "
                         f"and {a.pooled_w} (OpenVINO reads them as a dynamic dim, which "
                         "its CPU plugin refuses to compile)")  # fmt: skip


def _roi_infer_of(columns: int, fields: str):
    """The shape rule of ROIAlign (regions of 4 ``fields``) and ROIAlignRotated (5): one
    ``[pooled_h, pooled_w]`` map of the data's channels per region."""

    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, rois, indices = (i.shape for i in inputs)
        data_et, rois_et = inputs[0].element_type, inputs[1].element_type
        if data_et is not None and rois_et is not None and data_et != rois_et:
            raise ShapeError(f"data and rois must have the same element type, got "
                             f"{data_et.name} and {rois_et.name}")  # fmt: skip
        if data is not None and len(data) != 4:
            raise ShapeError(f"data must be 4-D [N, C, H, W], got shape {list(data)}")
        if rois is not None and len(rois) != 2:
            raise ShapeError(f"rois must be 2-D [num_rois, {columns}], got shape {list(rois)}")
        if indices is not None and len(indices) != 1:
            raise ShapeError(f"batch_indices must be 1-D [num_rois], got shape {list(indices)}")
        count: Dim = DYNAMIC
        if rois is not None:
            if not _may_be(rois[1], columns):
                raise ShapeError(f"rois' dim 1 must be {columns} ({fields}), got {rois[1]}")
            count = rois[0]
        if indices is not None:
            count = merge_dims(count, indices[0], "rois and batch_indices must have as many rows")
        channels = DYNAMIC if data is None else data[1]
        shape: Shape = (count, channels, a.pooled_h, a.pooled_w)
        return [TensorInfo(shape, data_et if data_et is not None else rois_et)]

    return infer


_roi_infer = _roi_infer_of(4, "x1, y1, x2, y2")


def _roi_kernel(a: SimpleNamespace, data: np.ndarray, rois: np.ndarray,
                batch_indices: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    if data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4 or batch_indices.ndim != 1:
        raise ShapeError(f"data {list(data.shape)}, rois {list(rois.shape)} and batch_indices "
                         f"{list(batch_indices.shape)} must be [N,C,H,W], [R,4], [R]")  # fmt: skip
    if batch_indices.shape[0] != rois.shape[0]:
        raise ShapeError(f"{rois.shape[0]} rois but {batch_indices.shape[0]} batch indices")
    n, channels = data.shape[:2]
    bidx = batch_indices.astype(np.int64)
    if len(bidx) and (bidx.min() < 0 or bidx.max() >= n):
        raise KernelError(f"batch_indices {bidx.tolist()} must lie in 0..{n - 1}")
    out = np.zeros((rois.shape[0], channels, a.pooled_h, a.pooled_w), np.float32)
    if out.size == 0:
        return (out.astype(data.dtype),)
    if data.shape[2] == 0 or data.shape[3] == 0:
        # OpenVINO's kernels would read outside the map (their size - 1 wraps around).
        raise KernelError(f"ROIAlign cannot sample a feature map of size {list(data.shape[2:])}")
    mode = getattr(a, "aligned_mode", "asymmetric")
    src = np.float32(0.5 if mode == "half_pixel" else 0.0)
    dst = np.float32(0.0 if mode == "asymmetric" else -0.5)
    scaled = (rois.astype(np.float32) + src) * np.float32(a.spatial_scale) + dst
    start_x, start_y = scaled[:, 0], scaled[:, 1]
    size_x, size_y = scaled[:, 2] - start_x, scaled[:, 3] - start_y
    if mode == "asymmetric":
        size_x, size_y = np.maximum(size_x, np.float32(1)), np.maximum(size_y, np.float32(1))
    bin_x, bin_y = size_x / np.float32(a.pooled_w), size_y / np.float32(a.pooled_h)
    if a.sampling_ratio > 0:
        count_x = np.full(len(rois), a.sampling_ratio)
        count_y = count_x
    else:
        count_x, count_y = np.ceil(bin_x).astype(np.int64), np.ceil(bin_y).astype(np.int64)
        if (count_x < 0).any() or (count_y < 0).any():
            raise KernelError("a region with x2 < x1 or y2 < y1 has a negative adaptive sampling "
                             "ratio, which OpenVINO's reference kernel refuses (its CPU plugin "
                             "returns -0)")  # fmt: skip

    def positions(part: np.ndarray, sy: int, sx: int) -> tuple[np.ndarray, np.ndarray]:
        ys = _samples(start_y[part], bin_y[part], sy, a.pooled_h)
        xs = _samples(start_x[part], bin_x[part], sx, a.pooled_w)
        # [R, P, S] -> [SY, SX, R, PH, PW] (broadcast): samples first.
        ys, xs = ys.transpose(2, 0, 1), xs.transpose(2, 0, 1)
        return ys[:, None, :, :, None], xs[None, :, :, None, :]

    pool_regions(data, bidx, count_y, count_x, positions, a.mode, out)
    return (out.astype(data.dtype),)


def pool_regions(data: np.ndarray, bidx: np.ndarray, count_y: np.ndarray,
                  count_x: np.ndarray, positions, mode: str, out: np.ndarray) -> None:  # fmt: skip
    """Pool every region into ``out [R, C, PH, PW]``, those with the same number of samples
    per bin together; ``positions(regions, sy, sx)`` gives their samples' ``ys`` and ``xs``,
    which broadcast to ``[SY, SX, R, PH, PW]``."""
    channels, pooled_h, pooled_w = out.shape[1:]
    # Channels last: each bilinear tap gathers the C values of a pixel at once.
    pixels = np.ascontiguousarray(data.astype(np.float32).transpose(0, 2, 3, 1))
    pairs = np.stack([count_y, count_x], axis=1)
    for sy, sx in np.unique(pairs, axis=0):
        if sy == 0 or sx == 0:
            continue  # no samples: the bin stays 0
        group = np.flatnonzero((count_y == sy) & (count_x == sx))
        # A few regions at a time, so that the gathered samples stay small.
        per_roi = channels * pooled_h * pooled_w * int(sy) * int(sx)
        step = max(1, SAMPLES_AT_ONCE // per_roi)
        for first in range(0, len(group), step):
            part = group[first : first + step]
            ys, xs = positions(part, int(sy), int(sx))
            out[part] = _pool(pixels, bidx[part], ys, xs, mode).transpose(0, 3, 1, 2)


def _samples(start: np.ndarray, bin_size: np.ndarray, count: int, bins: int) -> np.ndarray:
    """Sample positions ``[rois, bins, count]`` along one axis, in f32 as OpenVINO has them."""
    step = bin_size / np.float32(count)
    k = np.arange(bins, dtype=np.float32)[None, :, None]
    j = np.arange(count, dtype=np.float32)[None, None, :] + np.float32(0.5)
    return (start[:, None, None] + k * bin_size[:, None, None]) + step[:, None, None] * j


def _taps(pos: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
    """For sample positions along an axis of ``size`` pixels: whether each is inside the
    one-pixel margin, its low and high pixel, and the weights of the two."""
    inside = (pos >= -1) & (pos <= size)
    p = np.maximum(pos, np.float32(0))
    low = np.trunc(p).astype(np.int64)
    edge = low >= size - 1
    low = np.where(edge, size - 1, low)
    high = np.where(edge, low, low + 1)
    p = np.where(edge, low.astype(np.float32), p)
    frac = (p - low.astype(np.float32)).astype(np.float32)
    return inside, np.where(inside, low, 0), np.where(inside, high, 0), frac, np.float32(1) - frac


def _pool(pixels: np.ndarray, bidx: np.ndarray, ys: np.ndarray, xs: np.ndarray,
          mode: str) -> np.ndarray:  # fmt: skip
    """Pool ``[R, PH, PW, C]`` from the channels-last map ``pixels [N, H, W, C]`` with
    samples at ``ys`` and ``xs``, which broadcast to ``[SY, SX, R, PH, PW]``."""
    _, height, width, _ = pixels.shape
    # Every array below broadcasts to [SY, SX, R, PH, PW] (then C), samples first, so
    # that the sum over them runs in OpenVINO's order: row by row of samples.
    in_y, y0, y1, ly, hy = _taps(ys, height)
    in_x, x0, x1, lx, hx = _taps(xs, width)
    b = bidx[None, None, :, None, None]
    inside = in_y & in_x
    zero = np.float32(0)
    w00 = np.where(inside, hy * hx, zero)[..., None]
    w01 = np.where(inside, hy * lx, zero)[..., None]
    w10 = np.where(inside, ly * hx, zero)[..., None]
    w11 = np.where(inside, ly * lx, zero)[..., None]
    value = (w00 * pixels[b, y0, x0] + w01 * pixels[b, y0, x1]
             + w10 * pixels[b, y1, x0] + w11 * pixels[b, y1, x1])  # fmt: skip
    sy, sx = value.shape[:2]
    value = value.reshape(sy * sx, *value.shape[2:])
    if mode == "avg":
        return np.sum(value / np.float32(sy * sx), axis=0, dtype=np.float32)
    # max starts from 0 and a NaN sample never wins, as in OpenVINO's reference.
    return np.maximum(np.where(np.isnan(value), zero, value).max(axis=0), zero)


def _roi_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                 outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The map in f32 channels last, and the samples pooled at once (SAMPLES_AT_ONCE, or
    one region's if more) with their taps and weights.  An adaptive sampling ratio is
    counted for regions within the map (about a bin's size in pixels): a region far
    larger than the map takes more samples than any shape tells."""
    data, rois = static_shape(inputs[0]), static_shape(inputs[1])
    if data is None or rois is None or len(data) != 4 or len(rois) != 2:
        return 0
    _, channels, height, width = data
    if a.sampling_ratio > 0:
        sy = sx = a.sampling_ratio
    else:
        sy, sx = -(-height // max(a.pooled_h, 1)) + 1, -(-width // max(a.pooled_w, 1)) + 1
    per_roi = channels * a.pooled_h * a.pooled_w * sy * sx
    at_once = max(min(SAMPLES_AT_ONCE, rois[0] * per_roi), per_roi)
    return 4 * math.prod(data) + 24 * at_once


for _version in (3, 9):
    register(OpDef(type="ROIAlign", version=_version, since_opset=_version,
                   attrs=_roi_attrs(_version), infer=_roi_infer, kernel=_roi_kernel,
                   inputs=(3, 3), check=_check_roi,
                   input_types=(FLOATS, FLOATS, BATCH_INDICES),
                   shape_attrs=("pooled_h", "pooled_w"), scratch=_roi_scratch))  # fmt: skip


# --------------------------------------------------------------------------- ROIAlignRotated

ROTATED_ATTRS = (
    Attr("pooled_h", "int"),
    Attr("pooled_w", "int"),
    Attr("sampling_ratio", "int"),
    Attr("spatial_scale", "float"),
    Attr("clockwise_mode", "bool", False),
)


_rotated_infer = _roi_infer_of(5, "x_center, y_center, width, height, angle")


def _rotated_kernel(a: SimpleNamespace, data: np.ndarray, rois: np.ndarray,
                    batch_indices: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    """ROIAlignRotated-15: each region ``[x_c, y_c, w, h, angle]`` (centre and size scaled
    by ``spatial_scale``, the centre then shifted by -0.5; the angle in radians,
    counterclockwise unless ``clockwise_mode``) is a ``w x h`` box around its centre,
    rotated by its angle; its bins are sampled as ROIAlign's (``sampling_ratio``, or
    ``ceil`` of the bin's size for 0) in the box's own frame, each sample ``(px, py)``
    rotated into the map at ``x = py sin + px cos + x_c``, ``y = py cos - px sin + y_c``,
    read bilinearly (0 more than a pixel outside the map, clamped to the border within
    it) and averaged.  A region of negative width or height has a negative adaptive
    sampling ratio, which OpenVINO's reference kernel refuses, as irrun does; one of
    size 0 pools to 0 (no samples).  f16 and bf16 are computed in f32 and rounded once."""
    if data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5 or batch_indices.ndim != 1:
        raise ShapeError(f"data {list(data.shape)}, rois {list(rois.shape)} and batch_indices "
                         f"{list(batch_indices.shape)} must be [N,C,H,W], [R,5], [R]")  # fmt: skip
    if batch_indices.shape[0] != rois.shape[0]:
        raise ShapeError(f"{rois.shape[0]} rois but {batch_indices.shape[0]} batch indices")
    n, channels = data.shape[:2]
    bidx = batch_indices.astype(np.int64)
    if len(bidx) and (bidx.min() < 0 or bidx.max() >= n):
        raise KernelError(f"batch_indices {bidx.tolist()} must lie in 0..{n - 1}")
    out = np.zeros((rois.shape[0], channels, a.pooled_h, a.pooled_w), np.float32)
    if out.size == 0:
        return (out.astype(data.dtype),)
    if data.shape[2] == 0 or data.shape[3] == 0:
        raise KernelError(f"ROIAlignRotated cannot sample a feature map of size "
                          f"{list(data.shape[2:])}")  # fmt: skip
    r = rois.astype(np.float32)
    scale, half = np.float32(a.spatial_scale), np.float32(0.5)
    center_x, center_y = r[:, 0] * scale - half, r[:, 1] * scale - half
    width, height = r[:, 2] * scale, r[:, 3] * scale
    angle = -r[:, 4] if a.clockwise_mode else r[:, 4]
    cos, sin = np.cos(angle), np.sin(angle)
    start_x, start_y = -width / np.float32(2), -height / np.float32(2)
    bin_x, bin_y = width / np.float32(a.pooled_w), height / np.float32(a.pooled_h)
    if a.sampling_ratio > 0:
        count_x = count_y = np.full(len(rois), a.sampling_ratio)
    else:
        count_x, count_y = np.ceil(bin_x).astype(np.int64), np.ceil(bin_y).astype(np.int64)
        if (count_x < 0).any() or (count_y < 0).any():
            raise KernelError("a region of negative width or height has a negative adaptive "
                              "sampling ratio, which OpenVINO's reference kernel refuses")

    def positions(part: np.ndarray, sy: int, sx: int) -> tuple[np.ndarray, np.ndarray]:
        # In the box's frame: py [SY, 1, R, PH, 1], px [1, SX, R, 1, PW].
        py = _samples(start_y[part], bin_y[part], sy, a.pooled_h).transpose(2, 0, 1)
        px = _samples(start_x[part], bin_x[part], sx, a.pooled_w).transpose(2, 0, 1)
        py, px = py[:, None, :, :, None], px[None, :, :, None, :]
        c, s = cos[part][:, None, None], sin[part][:, None, None]
        ys = py * c - px * s + center_y[part][:, None, None]
        xs = py * s + px * c + center_x[part][:, None, None]
        return ys, xs

    pool_regions(data, bidx, count_y, count_x, positions, "avg", out)
    return (out.astype(data.dtype),)


def _rotated_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                     outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """ROIAlign's, and the taps of every sample along both axes (each sample has its own
    row and column), about 112 bytes a sample without its channels."""
    base = _roi_scratch(a, inputs, outputs)
    data, rois = static_shape(inputs[0]), static_shape(inputs[1])
    if not base or data is None or rois is None:
        return base
    channels = max(data[1], 1)
    at_once = (base - 4 * math.prod(data)) // 24
    return base + 112 * (at_once // channels + 1)


register(OpDef(type="ROIAlignRotated", version=15, since_opset=15, attrs=ROTATED_ATTRS,
               infer=_rotated_infer, kernel=_rotated_kernel, inputs=(3, 3), check=_check_roi,
               input_types=(FLOATS, FLOATS, BATCH_INDICES),
               shape_attrs=("pooled_h", "pooled_w"), scratch=_rotated_scratch))  # fmt: skip
