"""The NMS family beside NonMaxSuppression: MulticlassNms-8 and -9, MatrixNms-8, NMSRotated-13.

MulticlassNms works per (image, class), skipping ``background_class``: boxes scoring at
least ``score_threshold`` are candidates; the ``nms_top_k`` best of them (highest score,
then lowest box index; -1: all) are taken in that order, and each is selected unless its
IoU with a box already selected in that class is at or above the (adaptive) IoU threshold.
The threshold starts at ``iou_threshold``; with ``nms_eta`` below 1 it is multiplied by
``nms_eta`` after each selection while it is above 0.5, and a candidate is compared with
the threshold of its own turn.  IoU takes the boxes as given (no reordering of corners);
with ``normalized=false`` every side is one longer (pixel boxes).  It is 0 where either
area is not positive.

The selections of an image are sorted by score (highest first, then class, then box
index) and cut to ``keep_top_k`` (-1: all).  ``sort_result_type`` then orders them:
``score`` and ``none`` keep that order, ``classid`` sorts by class, then score, then box;
with ``sort_result_across_batch`` the images are mixed: ``score`` sorts all by score, then
image, class, box; ``classid`` by class, then image, score, box (``none`` keeps image by
image).  ``selected_outputs`` rows are ``[class, score, x1, y1, x2, y2]`` in the boxes'
element type, ``selected_indices`` the box's row in the flattened boxes, and
``valid_outputs`` the count of each image.  Outputs have exactly as many rows as were
selected (OpenVINO's shape rule gives the upper bound).

Two input forms: boxes ``[N, M, 4]`` shared by the classes with scores ``[N, C, M]``
(both versions), or (version 9 only) per-class boxes ``[C, M, 4]``, scores ``[C, M]`` and
``roisnum [N]``: image ``n`` owns the ``roisnum[n]`` boxes after those of the images before
it.  In that form the index is ``(first box of the image + box) * C + class``.

Where irrun differs from OpenVINO's MulticlassNms:

* Ties: OpenVINO's sorts after NMS treat scores within 1e-6 as equal (a comparison that is
  no order, so their result depends on the sort's path); irrun compares scores exactly.
* A candidate scoring exactly ``score_threshold``: OpenVINO's reference kernel, and its CPU
  plugin when ``nms_eta < 1``, compare it with the last selected box only (their loop stops
  once the score is not above the threshold); irrun compares it with every selected box, as
  the plugin does with ``nms_eta = 1``.
* ``nms_top_k = 0`` selects nothing; the plugin's kernel then returns before writing
  ``valid_outputs`` (it held zeros where tested).  With no boxes at all,
  ``valid_outputs`` holds a 0 per image; the plugin leaves it unwritten.
* The shape rule bounds the rows by ``nms_top_k`` even when the number of boxes is
  unbounded; OpenVINO's then gives no bound.
* A negative ``roisnum`` or ``roisnum`` summing past M is refused (the kernels read out of
  range or skip the image inconsistently).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval
from ..ir.element_types import INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._shapes import merge_dims
from .detection import FLOATS, INTEGERS, _nms_infer

I64 = element_types.ELEMENT_TYPES["i64"]

MULTICLASS_ATTRS = (
    Attr("sort_result_type", "enum", "none", ("score", "classid", "none")),
    Attr("sort_result_across_batch", "bool", False),
    Attr("output_type", "element_type", I64),
    Attr("iou_threshold", "float", 0.0),
    Attr("score_threshold", "float", 0.0),
    Attr("nms_top_k", "int", -1),
    Attr("keep_top_k", "int", -1),
    Attr("background_class", "int", -1),
    Attr("nms_eta", "float", 1.0),
    Attr("normalized", "bool", True),
)


def _check_multiclass(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")
    for name in ("nms_top_k", "keep_top_k", "background_class"):
        if getattr(a, name) < -1:
            raise KernelError(f"{name} must be -1 or more, got {getattr(a, name)}")
    if not 0 <= a.nms_eta <= 1:
        raise KernelError(f"nms_eta must lie in [0, 1], got {a.nms_eta}")


def _hi(d: Dim) -> int | None:
    return d if isinstance(d, int) else d.hi


def _multiclass_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    boxes, scores = inputs[0].shape, inputs[1].shape
    types = [i.element_type for i in inputs[:2] if i.element_type is not None]
    if len(types) == 2 and types[0] != types[1]:
        raise ShapeError(f"boxes and scores must have the same element type, got "
                         f"{types[0].name} and {types[1].name}")  # fmt: skip
    rois = len(inputs) == 3
    if boxes is not None and len(boxes) != 3:
        raise ShapeError(f"boxes must be 3-D, got shape {list(boxes)}")
    if scores is not None and len(scores) != (2 if rois else 3):
        form = "[classes, boxes] with roisnum" if rois else "[batches, classes, boxes]"
        raise ShapeError(f"scores must be {form}, got shape {list(scores)}")
    roisnum = inputs[2].shape if rois else None
    if roisnum is not None and len(roisnum) != 1:
        raise ShapeError(f"roisnum must be 1-D, got shape {list(roisnum)}")
    selected: Dim = DYNAMIC
    images: Dim = DYNAMIC
    if boxes is not None:
        if boxes[2] != 4 and not (isinstance(boxes[2], Interval) and boxes[2].contains(4)):
            raise ShapeError(f"boxes' last dim must be 4, got {boxes[2]}")
        if scores is not None:
            merge_dims(boxes[0], scores[0], "boxes and scores must agree on dim 0 (the "
                       + ("classes)" if rois else "batches)"))
            merge_dims(boxes[1], scores[1 if rois else 2], "boxes and scores must agree on "
                                                           "the number of boxes")  # fmt: skip
        images = (roisnum[0] if roisnum is not None else DYNAMIC) if rois else boxes[0]
        if scores is not None and not rois:
            images = merge_dims(boxes[0], scores[0], "batches")
        classes = boxes[0] if rois else (scores[1] if scores is not None else DYNAMIC)
        per_class = a.nms_top_k if a.nms_top_k > -1 else None
        m = _hi(boxes[1])
        if m is not None:
            per_class = m if per_class is None else min(per_class, m)
        if scores is not None and (not rois or roisnum is not None):
            bound = None if per_class is None or _hi(classes) is None else per_class * _hi(classes)
            if a.keep_top_k > -1 and (bound is None or a.keep_top_k < bound):
                bound = a.keep_top_k
            n = _hi(images)
            selected = Interval(0, None if bound is None or n is None else bound * n)
            if selected.hi == 0:
                selected = 0
    out_type = inputs[0].element_type or inputs[1].element_type
    return [TensorInfo((selected, 6), out_type), TensorInfo((selected, 1), a.output_type),
            TensorInfo((images,), a.output_type)]  # fmt: skip


def pair_iou(a: np.ndarray, b: np.ndarray, normalized: bool) -> np.ndarray:
    """IoU of boxes ``a [..., 4]`` and ``b [..., 4]`` (broadcast), taken as given, in f32
    as OpenVINO's MulticlassNms computes it: sides one longer unless ``normalized``, and
    0 where either area is not positive.

    >>> b = np.array([[0, 0, 2, 2], [1, 1, 3, 3]], np.float32)
    >>> pair_iou(b[0], b[1], True).item(), pair_iou(b[0], b[1], False).item()
    (0.1428571492433548, 0.2857142984867096)
    """
    norm = np.float32(0 if normalized else 1)
    area_a = (a[..., 2] - a[..., 0] + norm) * (a[..., 3] - a[..., 1] + norm)
    area_b = (b[..., 2] - b[..., 0] + norm) * (b[..., 3] - b[..., 1] + norm)
    zero = np.float32(0)
    h = np.maximum(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + norm, zero)
    w = np.maximum(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + norm, zero)
    inter = h * w
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_a + area_b - inter)
    return np.where((area_a <= 0) | (area_b <= 0), zero, iou).astype(np.float32)


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, candidate: np.ndarray, top_k: int,
               iou_threshold: float, eta: float, normalized: bool) -> np.ndarray:  # fmt: skip
    """Which boxes each group keeps: ``boxes [G, M, 4]``, ``scores [G, M]``, ``candidate
    [G, M]`` (bool); the candidates in order of score (then index), the first ``top_k``
    (-1: all), each kept unless its IoU with a kept box reaches the threshold of its turn.
    Returns ``kept [G, M]`` (bool)."""
    groups, m = scores.shape
    order = np.lexsort((np.broadcast_to(np.arange(m), (groups, m)), -scores.astype(np.float64),
                        ~candidate), axis=-1)  # fmt: skip
    count = candidate.sum(axis=1)
    if top_k > -1:
        count = np.minimum(count, top_k)
    kept = np.zeros((groups, m), bool)
    threshold = np.full(groups, np.float32(iou_threshold), np.float32)
    rows = np.arange(groups)
    adaptive = eta < 1
    for k in range(int(count.max(initial=0))):
        turn = k < count
        c = order[:, k]
        iou = pair_iou(boxes[rows, c][:, None, :], boxes, normalized)
        suppressed = (kept & (iou >= threshold[:, None])).any(axis=1)
        take = turn & ~suppressed
        kept[rows[take], c[take]] = True
        if adaptive:
            shrink = take & (threshold > np.float32(0.5))
            threshold = np.where(shrink, threshold * np.float32(eta), threshold)
    return kept


def _multiclass_kernel(a: SimpleNamespace, boxes: np.ndarray, scores: np.ndarray,
                       roisnum: np.ndarray | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
    shared = roisnum is None
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != (3 if shared else 2):
        raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} do not "
                         "fit MulticlassNms")  # fmt: skip
    f32 = boxes.astype(np.float32)
    s32 = scores.astype(np.float32)
    if shared:
        images, classes, m = s32.shape
        if boxes.shape[:2] != (images, m):
            raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} "
                             "disagree")  # fmt: skip
        # [image, class, box]: the boxes shared by the classes of an image.
        group_boxes = np.broadcast_to(f32[:, None], (images, classes, m, 4))
        group_scores = s32
        valid = np.ones((images, classes, m), bool)
    else:
        classes, total = s32.shape
        if boxes.shape[:2] != (classes, total):
            raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} "
                             "disagree")  # fmt: skip
        counts = roisnum.astype(np.int64).reshape(-1)
        if (counts < 0).any() or counts.sum() > total:
            raise KernelError(f"roisnum {counts.tolist()} must be counts summing to at most "
                              f"{total} boxes")  # fmt: skip
        images = len(counts)
        m = int(counts.max(initial=0))
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        local = np.arange(m)
        valid_im = local[None, :] < counts[:, None]  # [image, box]
        column = np.where(valid_im, first[:, None] + local[None, :], 0)
        group_boxes = f32[:, column].transpose(1, 0, 2, 3)  # [image, class, box, 4]
        group_scores = s32[:, column].transpose(1, 0, 2)
        valid = np.broadcast_to(valid_im[:, None, :], (images, classes, m))
    candidate = valid & (group_scores >= np.float32(a.score_threshold))
    if 0 <= a.background_class < classes:
        candidate[:, a.background_class] = False
    if a.nms_top_k == 0:
        candidate[:] = False
    groups = images * classes
    kept = greedy_nms(group_boxes.reshape(groups, m, 4), group_scores.reshape(groups, m),
                      candidate.reshape(groups, m), a.nms_top_k, a.iou_threshold, a.nms_eta,
                      a.normalized).reshape(images, classes, m)  # fmt: skip
    image, cls, box = np.nonzero(kept)
    score = group_scores[image, cls, box]
    if shared:
        index, coords = image * m + box, boxes[image, box]
    else:
        index = (first[image] + box) * classes + cls
        coords = boxes[cls, first[image] + box]
    return _sorted_outputs(a, boxes, image, cls, box, score, images, index, coords, True)


def _multiclass_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                        outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score (a box in a class): its box and score in f32 gathered per group, its
    order, one step's IoU temporaries, and the selected rows (at most one per score)."""
    shape = inputs[1].shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return 0
    if len(inputs) == 2:
        return 200 * math.prod(shape)
    # The roisnum form pads every image to the largest: at most all boxes per image.
    images = inputs[2].shape
    if images is None or not isinstance(images[0], int):
        return 0
    return 200 * math.prod(shape) * max(1, images[0])


# --------------------------------------------------------------------------- MatrixNms

MATRIX_ATTRS = (
    Attr("sort_result_type", "enum", "none", ("score", "classid", "none")),
    Attr("sort_result_across_batch", "bool", False),
    Attr("output_type", "element_type", I64),
    Attr("score_threshold", "float", 0.0),
    Attr("nms_top_k", "int", -1),
    Attr("keep_top_k", "int", -1),
    Attr("background_class", "int", -1),
    Attr("decay_function", "enum", "linear", ("gaussian", "linear")),
    Attr("gaussian_sigma", "float", 2.0),
    Attr("post_threshold", "float", 0.0),
    Attr("normalized", "bool", True),
)
# Candidate pairs MatrixNms decays at once ([groups, K, K] IoU and decay matrices).
PAIRS_AT_ONCE = 1 << 22


def _check_matrix(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")
    for name in ("nms_top_k", "keep_top_k", "background_class"):
        if getattr(a, name) < -1:
            raise KernelError(f"{name} must be -1 or more, got {getattr(a, name)}")


def matrix_iou(a: np.ndarray, b: np.ndarray, normalized: bool) -> np.ndarray:
    """IoU of boxes ``a`` and ``b`` ``[..., 4]`` (broadcast) as MatrixNms takes it, f32:
    0 if they do not touch, a reversed box's area 0, NaN or inf where the union is 0."""
    norm = np.float32(0 if normalized else 1)
    zero = np.float32(0)

    def area(x):
        w, h = x[..., 2] - x[..., 0], x[..., 3] - x[..., 1]
        return np.where((w < 0) | (h < 0), zero, (w + norm) * (h + norm))

    apart = ((b[..., 0] > a[..., 2]) | (b[..., 2] < a[..., 0]) | (b[..., 1] > a[..., 3])
             | (b[..., 3] < a[..., 1]))  # fmt: skip
    w = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]) + norm
    h = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]) + norm
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iou = inter / (area(a) + area(b) - inter)
    return np.where(apart, zero, iou).astype(np.float32)


def matrix_decay(boxes: np.ndarray, scores: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Decayed scores ``[G, K]`` of candidates ``boxes [G, K, 4]`` in order of score,
    ``scores [G, K]``; padding beyond a group's candidates may hold anything."""
    k = scores.shape[1]
    iou = matrix_iou(boxes[:, :, None], boxes[:, None, :], a.normalized)  # [G, i, j]
    better = np.tri(k, k, -1, dtype=bool)  # j < i
    iou_max = np.where(better & ~np.isnan(iou), iou, np.float32(0)).max(axis=2, initial=0)
    iou_max = np.maximum(iou_max, np.float32(0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.decay_function == "linear":
            decay = ((1.0 - iou.astype(np.float64))
                     / (1.0 - iou_max.astype(np.float64)[:, None, :] + float(np.float32(1e-10))))
            decay = decay.astype(np.float32)
        else:
            m = iou_max[:, None, :]
            decay = np.exp((m * m - iou * iou) * np.float32(a.gaussian_sigma)).astype(np.float32)
    smallest = np.where(better & ~np.isnan(decay), decay, np.float32(1)).min(axis=2, initial=1)
    return (np.minimum(smallest, np.float32(1)) * scores).astype(np.float32)


def _matrix_kernel(a: SimpleNamespace, boxes: np.ndarray,
                   scores: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
    if boxes.ndim != 3 or boxes.shape[2] != 4 or scores.ndim != 3:
        raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} do not "
                         "fit MatrixNms")  # fmt: skip
    images, classes, m = scores.shape
    if boxes.shape[:2] != (images, m):
        raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} disagree")
    f32 = boxes.astype(np.float32)
    s32 = scores.astype(np.float32).reshape(images * classes, m)
    candidate = s32 > np.float32(a.score_threshold)
    if 0 <= a.background_class < classes:
        candidate.reshape(images, classes, m)[:, a.background_class] = False
    count = candidate.sum(axis=1)
    if a.nms_top_k > -1:
        count = np.minimum(count, a.nms_top_k)
    k = int(count.max(initial=0))
    order = np.lexsort((np.broadcast_to(np.arange(m), s32.shape), -s32.astype(np.float64),
                        ~candidate), axis=-1)[:, :k]  # fmt: skip
    groups = np.arange(images * classes)
    image_of = groups // classes
    decayed = np.zeros((len(groups), k), np.float32)
    step = max(1, PAIRS_AT_ONCE // max(1, k * k))
    for first in range(0, len(groups), step):
        part = groups[first : first + step]
        decayed[part] = matrix_decay(f32[image_of[part][:, None], order[part]],
                                     s32[part[:, None], order[part]], a)  # fmt: skip
    taken = (np.arange(k)[None, :] < count[:, None]) & (decayed > np.float32(a.post_threshold))
    group, rank = np.nonzero(taken)
    image, cls, box = group // classes, group % classes, order[group, rank]
    score = decayed[group, rank]
    return _sorted_outputs(a, boxes, image, cls, box, score, images, image * m + box,
                           boxes[image, box], False)  # fmt: skip


def _sorted_outputs(a, boxes, image, cls, box, score, images, index, coords, by_class):
    """The outputs of selections (image, class, box, score, index, box coordinates):
    per image by score, class, box; ``keep_top_k`` per image; then ``sort_result_type``
    (``classid`` sorts within each image only if ``by_class``)."""
    order = np.lexsort((box, cls, -score.astype(np.float64), image))
    image, cls, box, score = image[order], cls[order], box[order], score[order]
    index, coords = index[order], coords[order]
    if a.keep_top_k > -1:
        keep = np.arange(len(image)) - np.searchsorted(image, image) < a.keep_top_k
        image, cls, box, score, index, coords = (x[keep] for x in (image, cls, box, score,
                                                                   index, coords))  # fmt: skip
    neg = -score.astype(np.float64)
    order = np.arange(len(image))
    if a.sort_result_across_batch:
        if a.sort_result_type == "score":
            order = np.lexsort((box, cls, image, neg))
        elif a.sort_result_type == "classid":
            order = np.lexsort((box, neg, image, cls))
    elif a.sort_result_type == "classid" and by_class:
        order = np.lexsort((box, neg, cls, image))
    image, cls, score, index, coords = (x[order] for x in (image, cls, score, index, coords))
    out = np.concatenate([cls[:, None].astype(np.float32), score[:, None].astype(np.float32),
                          coords.astype(np.float32).reshape(-1, 4)], axis=1)  # fmt: skip
    itype = a.output_type.dtype
    valid_outputs = np.bincount(image, minlength=images).astype(itype)
    return out.astype(boxes.dtype), index[:, None].astype(itype), valid_outputs


def _matrix_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                    outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score: its order, decayed score and the selected rows; and the pair matrices
    (IoU, decay and their temporaries, about 40 bytes a pair) of PAIRS_AT_ONCE pairs, or
    of one group's if more."""
    shape = inputs[1].shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return 0
    k = shape[2] if a.nms_top_k < 0 else min(shape[2], a.nms_top_k)
    pairs = max(min(PAIRS_AT_ONCE, shape[0] * shape[1] * k * k), k * k)
    return 120 * math.prod(shape) + 48 * pairs


register(OpDef(type="MatrixNms", version=8, since_opset=8, attrs=MATRIX_ATTRS,
               infer=_multiclass_infer, kernel=_matrix_kernel, inputs=(2, 2),
               check=_check_matrix, input_types=(FLOATS, FLOATS),
               scratch=_matrix_scratch))  # fmt: skip

for _version in (8, 9):
    register(OpDef(type="MulticlassNms", version=_version, since_opset=_version,
                   attrs=MULTICLASS_ATTRS, infer=_multiclass_infer, kernel=_multiclass_kernel,
                   inputs=(2, 3 if _version == 9 else 2), check=_check_multiclass,
                   input_types=(FLOATS, FLOATS, INDEX_TYPES)[: 3 if _version == 9 else 2],
                   scratch=_multiclass_scratch))  # fmt: skip


# --------------------------------------------------------------------------- NMSRotated

ROTATED_ATTRS = (
    Attr("sort_result_descending", "bool", True),
    Attr("output_type", "element_type", I64),
    Attr("clockwise", "bool", True),
)
ROTATED_INPUTS = ("boxes", "scores", "max_output_boxes_per_class", "iou_threshold",
                  "score_threshold")  # fmt: skip


def _check_rotated(a: SimpleNamespace) -> None:
    if a.output_type.name not in INDEX_TYPES:
        raise KernelError(f"output_type must be i32 or i64, got {a.output_type.name}")


def _rotated_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    boxes = inputs[0].shape
    if boxes is not None:
        if len(boxes) != 3:
            raise ShapeError(f"boxes must be 3-D [batches, boxes, 5], got shape {list(boxes)}")
        if boxes[2] != 5 and not (isinstance(boxes[2], Interval) and boxes[2].contains(5)):
            raise ShapeError(f"boxes' last dim must be 5 (x, y, w, h, angle), got {boxes[2]}")
        # NonMaxSuppression-9's rule, on corner boxes of the same count.
        inputs = [TensorInfo((boxes[0], boxes[1], 4), inputs[0].element_type), *inputs[1:]]
    return _nms_infer(a, inputs)


def rotated_corners(boxes: np.ndarray, clockwise: bool) -> np.ndarray:
    """The corners ``[..., 4, 2]`` of boxes ``[..., 5]``, counterclockwise in x-right,
    y-up terms (f32)."""
    x, y, w, h, angle = (boxes[..., i].astype(np.float32) for i in range(5))
    if not clockwise:
        angle = -angle
    cos, sin = np.cos(angle), np.sin(angle)
    half = np.array([[-0.5, -0.5], [0.5, -0.5], [0.5, 0.5], [-0.5, 0.5]], np.float32)
    dx = half[:, 0] * w[..., None]
    dy = half[:, 1] * h[..., None]
    # A clockwise turn by ``angle`` in the image's y-down frame.
    px = x[..., None] + dx * cos[..., None] - dy * sin[..., None]
    py = y[..., None] + dx * sin[..., None] + dy * cos[..., None]
    return np.stack([px, py], axis=-1).astype(np.float32)


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a[..., 0] - o[..., 0]) * (b[..., 1] - o[..., 1]) - (a[..., 1] - o[..., 1]) * (
        b[..., 0] - o[..., 0])


def _clip_all(poly: np.ndarray, count: np.ndarray, q: np.ndarray, sign: np.ndarray,
              slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Polygons ``poly [P, 8, 2]`` of ``count`` vertices clipped by the four edges of
    ``q`` (inside: the side ``sign`` says)."""
    pairs = poly.shape[0]
    for e in range(4):
        a, b = q[:, e][:, None], q[:, (e + 1) % 4][:, None]
        nxt = np.take_along_axis(poly, ((slots[None] + 1) % np.maximum(count, 1)[:, None])
                                 [..., None].repeat(2, -1), axis=1)  # fmt: skip
        side = _cross(a, b, poly) * sign[:, None]
        side_next = _cross(a, b, nxt) * sign[:, None]
        live = slots[None] < count[:, None]
        inside, inside_next = side >= 0, side_next >= 0
        t = side / (side - side_next)
        crossing = poly + t[..., None] * (nxt - poly)
        keep = np.stack([live & inside, live & (inside != inside_next)], axis=2)  # [P, 8, 2]
        points = np.stack([poly, crossing], axis=2).astype(np.float32)  # [P, 8, 2, 2]
        keep, points = keep.reshape(pairs, 16), points.reshape(pairs, 16, 2)
        order = np.argsort(~keep, axis=1, kind="stable")[:, :8]
        poly = np.take_along_axis(points, order[..., None].repeat(2, -1), axis=1)
        count = np.minimum(keep.sum(axis=1), 8)
    return poly, count


def intersection_area(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Area of the intersection of convex quadrilaterals ``p`` and ``q`` ``[P, 4, 2]``
    (either orientation): ``p`` clipped by each edge of ``q`` in turn."""
    pairs = p.shape[0]
    poly = np.zeros((pairs, 8, 2), np.float32)
    poly[:, :4] = p
    count = np.full(pairs, 4)
    # Which side of q's edges is inside: q's orientation.
    sign = np.where(_cross(q[:, 0], q[:, 1], q[:, 2]) < 0, np.float32(-1), np.float32(1))
    slots = np.arange(8)
    with np.errstate(divide="ignore", invalid="ignore"):
        poly, count = _clip_all(poly, count, q, sign, slots)
        nxt = np.take_along_axis(poly, ((slots[None] + 1) % np.maximum(count, 1)[:, None])
                                 [..., None].repeat(2, -1), axis=1)  # fmt: skip
        terms = poly[..., 0] * nxt[..., 1] - poly[..., 1] * nxt[..., 0]
    area = np.abs(np.where(slots[None] < count[:, None], terms, np.float32(0)).sum(axis=1))
    return np.where(count >= 3, area * np.float32(0.5), np.float32(0)).astype(np.float32)


def rotated_iou(boxes: np.ndarray, corners: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """IoU of every box ``[G, N, 5]`` (corners ``[G, N, 4, 2]``) with its group's chosen
    box index ``[G]``."""
    groups, n = boxes.shape[:2]
    rows = np.arange(groups)
    c = np.broadcast_to(corners[rows, chosen][:, None], corners.shape)
    inter = intersection_area(corners.reshape(-1, 4, 2), c.reshape(-1, 4, 2)).reshape(groups, n)
    area = boxes[..., 2] * boxes[..., 3]
    c_area = area[rows, chosen][:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area + c_area - inter)
    return np.where((area <= 0) | (c_area <= 0), np.float32(0), iou).astype(np.float32)


def _rotated_kernel(a: SimpleNamespace, boxes: np.ndarray, scores: np.ndarray,
                    per_class_in: np.ndarray, iou_in: np.ndarray,
                    score_in: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
    for name, x in zip(ROTATED_INPUTS[2:], (per_class_in, iou_in, score_in), strict=True):
        if np.size(x) != 1:
            raise ShapeError(f"{name} must hold one value, got shape {list(np.shape(x))}")
    if boxes.ndim != 3 or scores.ndim != 3 or boxes.shape[2] != 5:
        raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} must "
                         "be [batches, boxes, 5] and [batches, classes, boxes]")  # fmt: skip
    if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2]:
        raise ShapeError(f"boxes {list(boxes.shape)} and scores {list(scores.shape)} "
                         "disagree on the number of batches or boxes")  # fmt: skip
    per_class = int(np.asarray(per_class_in).reshape(-1)[0])
    thr_iou = np.float32(np.asarray(iou_in).reshape(-1)[0])
    thr_score = np.float32(np.asarray(score_in).reshape(-1)[0])
    batches, classes, n = scores.shape
    groups = batches * classes
    b32 = boxes.astype(np.float32)
    group_boxes = np.broadcast_to(b32[:, None], (batches, classes, n, 5)).reshape(groups, n, 5)
    corners = rotated_corners(group_boxes, a.clockwise)
    current = scores.astype(np.float32).reshape(groups, n)
    alive = current > thr_score
    rows = np.arange(groups)
    picks, steps = [], []
    for _ in range(max(0, min(per_class, n))):
        has = alive.any(axis=1)
        if not has.any():
            break
        pick = np.argmax(np.where(alive, current, np.float32(-np.inf)), axis=1)
        steps.append(has)
        picks.append(pick)
        alive[rows, pick] = False
        alive &= ~(rotated_iou(group_boxes, corners, pick) > thr_iou) & has[:, None]
    itype = a.output_type.dtype
    if not steps:
        return (np.zeros((0, 3), itype), np.zeros((0, 3), np.float32), np.zeros(1, itype))
    taken = np.stack(steps, axis=1)
    group = np.broadcast_to(rows[:, None], taken.shape)[taken]
    box = np.stack(picks, axis=1)[taken]
    score = current[group, box]
    selected = np.stack([group // classes, group % classes, box], axis=1).astype(np.int64)
    if a.sort_result_descending:
        order = np.lexsort((selected[:, 2], selected[:, 1], selected[:, 0], -score))
        selected, score = selected[order], score[order]
    out_scores = np.concatenate([selected[:, :2].astype(np.float32), score[:, None]], axis=1)
    return (selected.astype(itype), out_scores.astype(np.float32),
            np.array([len(selected)], itype))  # fmt: skip


def _rotated_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                     outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score (a box in a class): its box, corners and state, and one step's clipping
    of it against the chosen box (16 candidate points and their masks, about 1 KB)."""
    shape = inputs[1].shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return 0
    return 1536 * math.prod(shape)


register(OpDef(type="NMSRotated", version=13, since_opset=13, attrs=ROTATED_ATTRS,
               infer=_rotated_infer, kernel=_rotated_kernel, inputs=(5, 5),
               check=_check_rotated,
               input_types=(FLOATS, FLOATS, INTEGERS, FLOATS, FLOATS),
               scratch=_rotated_scratch))  # fmt: skip
