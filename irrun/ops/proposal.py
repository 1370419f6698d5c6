"""Region proposals of Faster R-CNN: Proposal-1 and Proposal-4.

Inputs: ``class_probs`` ``[N, 2 * A, H, W]`` (background then foreground scores of
``A`` anchors per point of an ``H x W`` map), ``bbox_deltas`` ``[N, 4 * A, H, W]``
(``dx, dy, d_log_w, d_log_h`` per anchor; OpenVINO's shape inference does not
check the map sizes agree, the kernels read the deltas with the scores' layout: irrun
refuses other sizes at run time) and ``image_shape`` ``[image_height,
image_width, scale_h(, scale_w)]`` (one for every image; ``scale_w`` defaults to
``scale_h``).

Anchors (``A`` must be ``len(ratio) * len(scale)``, ratio by ratio, scale by scale):
for a ``base_size`` box and ratio ``r``, the width ``sqrt(base_size**2 / r)`` and
height ``width * r`` (both rounded, except for ``framework`` "tensorflow"), scaled by
each scale, centred on ``(base_size - offset) / 2``, where the coordinate offset is 1
(0 for "tensorflow", whose anchors are also moved by ``-base_size / 2``).  The anchor
at point ``(h, w)`` is moved by ``(w, h) * feat_stride`` (``(h, w)`` for
"tensorflow", which also first clips it to the image).

Each anchor box is moved by its deltas (``dx``, ``dy`` divided by
``box_coordinate_scale``, the log sizes by ``box_size_scale``): the centre by ``d *
size``, the size multiplied by ``exp(d_log)``, sizes counting ``offset`` extra;
``clip_before_nms`` clips it to ``[0, image_width - offset]`` and ``[0, image_height -
offset]``.  A box narrower or lower than ``min_size`` times the image scale scores 0.
Per image the ``pre_nms_topn`` best boxes are taken (by score; equal scores by the
proposals' order, point by point, anchor by anchor), and NMS keeps each in turn unless
its IoU (sizes counting ``offset``) with a box already kept is above ``nms_thresh``,
up to ``post_nms_topn`` boxes.

Output 0, ``[N * post_nms_topn, 5]``: per image its boxes ``[image, x0, y0, x1, y1]``
(clipped to the image with ``clip_after_nms``, divided by its size with
``normalize``), then zero rows, the first of them with image -1.  Version 4's output
1, ``[N * post_nms_topn]``: the boxes' scores, zeros after them.

Everything is computed in f32 (f16 and bf16 inputs are widened, the outputs rounded
once, as the plugin does).  The NMS loops over the boxes it keeps, for all images at
once.

``ov.Model.evaluate`` cannot run the op; irrun agrees with the CPU plugin on every case
tested (boxes to an ulp of ``exp``).  Where the plugin and the reference kernel differ:

* ``framework`` "tensorflow" swaps x and y (x runs along the map's height): the plugin
  bounds x by the image height and y by its width (clipping, ``normalize``), the
  reference the other way round.  irrun follows the plugin, which is consistent.
* Version 4's scores after an image's last box: the reference writes zeros, the
  plugin leaves them unwritten; irrun writes zeros.
* The plugin crashes (a segmentation fault) when fewer than 8 boxes reach its NMS
  (``min(pre_nms_topn, A * H * W) < 8``); the reference and irrun do not.
* ``framework`` other than "" and "tensorflow": the reference takes it for Caffe, the
  plugin refuses the layer; irrun refuses it.
* Equal scores: both take the best boxes with ``std::partial_sort`` on the score alone,
  which leaves the order of equal scores unspecified; irrun keeps the proposals' order.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import affine_dim, merge_dims

# f32, f16 and bf16: OpenVINO's checks take f64 too (and the CPU plugin runs it), but
# irrun's kernel has not been tested in f64 here.
FLOATS_NO_F64 = ("f32", "f16", "bf16")
F32 = np.float32

ATTRS = (
    Attr("base_size", "int"),
    Attr("pre_nms_topn", "int"),
    Attr("post_nms_topn", "int"),
    Attr("nms_thresh", "float"),
    Attr("feat_stride", "int"),
    Attr("min_size", "int"),
    Attr("ratio", "floats"),
    Attr("scale", "floats"),
    Attr("clip_before_nms", "bool", True),
    Attr("clip_after_nms", "bool", False),
    Attr("normalize", "bool", False),
    Attr("box_size_scale", "float", 1.0),
    Attr("box_coordinate_scale", "float", 1.0),
    Attr("framework", "str", ""),
)


def _check(a: SimpleNamespace) -> None:
    for name in ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size"):
        if getattr(a, name) < 0:
            raise KernelError(f"{name} must not be negative, got {getattr(a, name)}")
    if not a.ratio or not a.scale:
        raise KernelError("ratio and scale must each hold at least one value")
    if a.framework not in ("", "tensorflow"):
        raise KernelError(f"framework must be empty (Caffe) or tensorflow, got {a.framework!r} "
                          "(the CPU plugin refuses other names)")  # fmt: skip


# ------------------------------------------------------------------------------ shape rule


def _infer(version: int):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        probs, deltas, image = (i.shape for i in inputs)
        for shape, rank, what in ((probs, 4, "class_probs"), (deltas, 4, "bbox_deltas"),
                                  (image, 1, "image_shape")):  # fmt: skip
            if shape is not None and len(shape) != rank:
                raise ShapeError(f"{what} must be {rank}-D, got shape {list(shape)}")
        images: Dim = DYNAMIC
        if probs is not None:
            images = probs[0]
        if deltas is not None:
            images = merge_dims(images, deltas[0], "class_probs and bbox_deltas' dim 0 (images)")
        if probs is not None and deltas is not None:
            merge_dims(deltas[1], affine_dim(probs[1], 2, 0), "bbox_deltas' dim 1 (4 * anchors) "
                       "and class_probs' dim 1 (2 * anchors)")  # fmt: skip
        if image is not None and isinstance(image[0], int) and image[0] not in (3, 4):
            raise ShapeError(f"image_shape must hold 3 or 4 values, got {image[0]}")
        rows = affine_dim(images, a.post_nms_topn, 0)
        et = inputs[0].element_type
        out = [TensorInfo((rows, 5), et)]
        return [*out, TensorInfo((rows,), et)] if version == 4 else out

    return infer


# ------------------------------------------------------------------------------ kernel


def _anchors(a: SimpleNamespace) -> np.ndarray:
    """``[A, 4]`` anchors ``x0, y0, x1, y1``, ratio by ratio, scale by scale."""
    tf = a.framework == "tensorflow"
    offset = F32(0 if tf else 1)
    base = F32(a.base_size)
    area = F32(a.base_size * a.base_size)
    ratios = np.array(a.ratio, F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.sqrt(area / ratios)
        if tf:
            height = width * ratios
        else:
            width = np.floor(width + F32(0.5))  # C's roundf: halves away from zero (>= 0 here)
            height = np.floor(width * ratios + F32(0.5))
    scales = np.array(a.scale, F32)
    half_w = F32(0.5) * (width[:, None] * scales[None] - offset)
    half_h = F32(0.5) * (height[:, None] * scales[None] - offset)
    centre = F32(0.5) * (base - offset)
    boxes = np.stack([centre - half_w, centre - half_h, centre + half_w, centre + half_h], -1)
    if tf:
        boxes = boxes - base * F32(0.5)
    return boxes.reshape(-1, 4).astype(F32)


def _iou(boxes: np.ndarray, chosen: np.ndarray, offset: np.float32) -> np.ndarray:
    """IoU (sizes counting ``offset``) of boxes ``[G, K, 4]`` with each group's chosen
    box ``[G, 4]``; 0 where they do not overlap."""
    c = chosen[:, None, :]
    overlap = ((c[..., 0] <= boxes[..., 2]) & (c[..., 1] <= boxes[..., 3])
               & (boxes[..., 0] <= c[..., 2]) & (boxes[..., 1] <= c[..., 3]))  # fmt: skip
    w = np.maximum(np.minimum(c[..., 2], boxes[..., 2]) - np.maximum(c[..., 0], boxes[..., 0])
                   + offset, F32(0))  # fmt: skip
    h = np.maximum(np.minimum(c[..., 3], boxes[..., 3]) - np.maximum(c[..., 1], boxes[..., 1])
                   + offset, F32(0))  # fmt: skip
    inter = w * h
    area_c = (c[..., 2] - c[..., 0] + offset) * (c[..., 3] - c[..., 1] + offset)
    area_b = (boxes[..., 2] - boxes[..., 0] + offset) * (boxes[..., 3] - boxes[..., 1] + offset)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area_c + area_b - inter)
    return np.where(overlap, iou, F32(0))


def _kernel(version: int):
    def kernel(a: SimpleNamespace, probs: np.ndarray, deltas: np.ndarray,
               image: np.ndarray) -> tuple[np.ndarray, ...]:  # fmt: skip
        out_type = probs.dtype
        images, two_a, height, width = probs.shape
        n_anchors = two_a // 2
        anchors = _anchors(a)
        if len(anchors) != n_anchors or two_a % 2:
            raise KernelError(f"class_probs has {two_a} channels: 2 * {len(anchors)} anchors "
                              f"(len(ratio) * len(scale)) expected")  # fmt: skip
        if deltas.shape != (images, 4 * n_anchors, height, width):
            raise ShapeError(f"bbox_deltas {list(deltas.shape)} must be "
                             f"{[images, 4 * n_anchors, height, width]}")  # fmt: skip
        if image.shape not in ((3,), (4,)):
            raise ShapeError(f"image_shape must hold 3 or 4 values, got {list(image.shape)}")
        info = image.astype(F32)
        img_h, img_w, scale_h = info[0], info[1], info[2]
        scale_w = info[3] if len(info) == 4 else scale_h
        min_h, min_w = F32(a.min_size) * scale_h, F32(a.min_size) * scale_w
        tf = a.framework == "tensorflow"
        if tf:  # x runs along the map's height: it is bounded by the image height (the plugin)
            img_h, img_w = img_w, img_h
        offset = F32(0 if tf else 1)
        # Proposals point by point (h, w), anchor by anchor: [N, H, W, A].
        score = probs[:, n_anchors:].astype(F32).transpose(0, 2, 3, 1)
        d = deltas.astype(F32).reshape(images, n_anchors, 4, height, width).transpose(0, 3, 4, 1, 2)
        hs = np.arange(height, dtype=F32)[:, None, None] * F32(a.feat_stride)
        ws = np.arange(width, dtype=F32)[None, :, None] * F32(a.feat_stride)
        sx, sy = (hs, ws) if tf else (ws, hs)
        x0, y0 = sx + anchors[:, 0], sy + anchors[:, 1]  # [H, W, A]
        x1, y1 = sx + anchors[:, 2], sy + anchors[:, 3]
        if tf:
            x0, x1 = (np.clip(v, F32(0), img_w) for v in (x0, x1))
            y0, y1 = (np.clip(v, F32(0), img_h) for v in (y0, y1))
        ww, hh = x1 - x0 + offset, y1 - y0 + offset
        cx, cy = x0 + F32(0.5) * ww, y0 + F32(0.5) * hh
        with np.errstate(over="ignore", invalid="ignore"):
            dx = d[..., 0] / F32(a.box_coordinate_scale)
            dy = d[..., 1] / F32(a.box_coordinate_scale)
            dw = d[..., 2] / F32(a.box_size_scale)
            dh = d[..., 3] / F32(a.box_size_scale)
            pcx, pcy = dx * ww + cx, dy * hh + cy
            pw, ph = np.exp(dw) * ww, np.exp(dh) * hh
            box = np.stack([pcx - F32(0.5) * pw, pcy - F32(0.5) * ph,
                            pcx + F32(0.5) * pw, pcy + F32(0.5) * ph], -1)  # fmt: skip
            if a.clip_before_nms:
                limit = np.array([img_w, img_h, img_w, img_h], F32) - offset
                box = np.maximum(F32(0), np.minimum(box, limit))
            big = ((min_w <= box[..., 2] - box[..., 0] + offset)
                   & (min_h <= box[..., 3] - box[..., 1] + offset))  # fmt: skip
            score = big.astype(F32) * score
        box = box.reshape(images, -1, 4).astype(F32)
        score = score.reshape(images, -1)
        # The pre_nms_topn best, by score then proposal order.
        keep = min(box.shape[1], max(a.pre_nms_topn, 0))
        order = np.argsort(-score, axis=1, kind="stable")[:, :keep]
        box = np.take_along_axis(box, order[..., None], axis=1)
        score = np.take_along_axis(score, order, axis=1)
        kept = _nms(box, F32(a.nms_thresh), offset, a.post_nms_topn)
        rows = a.post_nms_topn
        rois = np.zeros((images, rows, 5), F32)
        scores = np.zeros((images, rows), F32)
        count = kept.sum(axis=1)
        img, pos = np.nonzero(kept)
        slot = pos if not len(pos) else np.cumsum(kept, axis=1)[img, pos] - 1
        chosen = box[img, pos]
        if a.clip_after_nms:
            chosen = np.maximum(F32(0), np.minimum(chosen, np.array([img_w, img_h] * 2, F32)))
        if a.normalize:
            chosen = chosen / np.array([img_w, img_h] * 2, F32)
        rois[img, slot, 0] = img
        rois[img, slot, 1:] = chosen
        scores[img, slot] = score[img, pos]
        short = np.nonzero(count < rows)[0]
        rois[short, count[short], 0] = -1
        out = (rois.reshape(-1, 5).astype(out_type),)
        return (*out, scores.reshape(-1).astype(out_type)) if version == 4 else out

    return kernel


def _nms(boxes: np.ndarray, threshold: np.float32, offset: np.float32, limit: int) -> np.ndarray:
    """Greedy NMS per image over boxes ``[N, K, 4]`` in order: which are kept (at most
    ``limit`` per image).  The first box left is kept; it removes those overlapping it."""
    images, k = boxes.shape[:2]
    rows = np.arange(images)
    alive = np.ones((images, k), bool)
    kept = np.zeros((images, k), bool)
    for _ in range(min(limit, k)):
        has = alive.any(axis=1)
        if not has.any():
            break
        first = np.argmax(alive, axis=1)
        kept[rows[has], first[has]] = True
        alive[rows, first] = False
        alive &= ~(_iou(boxes, boxes[rows, first], offset) > threshold) | ~has[:, None]
    return kept


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per proposal: its deltas, box, score and sort order, and one NMS step's IoU
    temporaries, in f32 and i64."""
    deltas = static_shape(inputs[1])
    return 0 if deltas is None else 48 * int(np.prod(deltas))


for _version in (1, 4):
    register(OpDef(type="Proposal", version=_version, since_opset=_version, attrs=ATTRS,
                   infer=_infer(_version), kernel=_kernel(_version), inputs=(3, 3),
                   check=_check, input_types=(FLOATS_NO_F64,) * 3, scratch=_scratch))  # fmt: skip
