"""SSD's detection head: DetectionOutput-1 and DetectionOutput-8.

Inputs: box logits ``[N, P * L * 4]`` (``L`` = 1 with ``share_location``, else the
number of classes ``C``), class predictions ``[N, P * C]``, prior boxes ``[1 or N,
2, P * S]`` (``S`` = 4 with ``normalized``, else 5: each prior then has a leading
value that is skipped; the second row, the variances, is absent (dim 1 is 1) with
``variance_encoded_in_target``) and, for a two-stage detector (RefineDet), the
objectness predictions ``[N, P * 2]`` and the first stage's box logits ``[N, P * L *
4]``.  Version 1 takes ``C`` from ``num_classes``; version 8 from the class
predictions' width divided by ``P``.

Decoding (vectorized over images, priors and location classes): the prior box
``[xmin, ymin, xmax, ymax]`` (divided by ``input_width``/``input_height`` unless
``normalized``) is moved by the logits scaled by the variances (1 with
``variance_encoded_in_target``): with ``CORNER`` coding each coordinate adds
``variance * logit``; with ``CENTER_SIZE`` the centre moves by ``variance * logit *
size`` and the size is multiplied by ``exp(variance * logit)``.
``clip_before_nms`` clips the decoded boxes to [0, 1].  With five inputs, the priors
are first decoded with the first stage's logits (and clipped with
``clip_before_nms``), then decoded again with the box logits; a prior whose
objectness (the second value of its pair) is below ``objectness_score`` scores 1 for
``background_label_id`` and 0 for every other class.

Caffe's selection (``decrease_label_id`` false): for each image and each class other
than ``background_label_id``, the priors scoring above ``confidence_threshold`` are
ordered by score (equal scores by prior index), the first ``top_k`` kept (all for
``top_k`` -1), and NMS keeps each in turn unless its IoU with a box already kept is
above ``nms_threshold``.  MXNet's (``decrease_label_id`` true): each prior takes its
best class among 1..C-1 (background excluded; the first of equal scores; a best
score must be above -1 and at least ``confidence_threshold``), the image's
candidates are ordered by score then prior and the first ``top_k`` kept, and NMS is
per class; labels are output less 1.  Then, where ``keep_top_k[0]`` is not -1 and
the image has more detections, only that many are kept, the best scores (equal
scores by prior index, then label).  The IoU is 0 unless the boxes overlap with
positive width and height; a box with ``xmax < xmin`` or ``ymax < ymin`` has area 0.

Output ``[1, 1, R, 7]``: rows ``[image, label, score, xmin, ymin, xmax, ymax]``
(clipped to [0, 1] with ``clip_after_nms``), image by image, label by label, then by
score and prior; after the last detection a row whose image is -1, the rest zeros.
``R`` is ``N * keep_top_k[0]`` when that is positive, else ``N * top_k * C`` when
``keep_top_k[0]`` is -1 and ``top_k`` positive, else ``N * P * C``.

Everything is computed in f32 (f16 and bf16 inputs are widened, the output rounded
once, as the plugin does).  The NMS loops over the boxes it keeps, for every (image,
class) at once.

``ov.Model.evaluate`` cannot run the op; irrun agrees exactly with the CPU plugin on
every case tested (boxes to an ulp of ``exp``).  Where the plugin and the reference
kernel differ:

* Without ``normalized``, the plugin takes a prior whose leading value is -1 for the
  end of the priors (a Proposal layer's output marks its end so): neither it nor the
  priors after it are candidates.  The reference and the specification use every
  prior.  irrun follows the plugin, which is what such models (R-FCN, Faster R-CNN
  with a Proposal layer) rely on.
* MXNet's per-image ``top_k``: the plugin orders equal scores by class, then prior;
  the reference by prior alone.  irrun follows the plugin.
* Equal score and prior in different classes where ``keep_top_k`` cuts: both sort
  with ``std::sort``, whose order of equal elements is unspecified (the plugin's
  small sorts keep the lower label first); irrun keeps the lower label.
* ``decrease_label_id`` with ``background_label_id`` other than 0: the plugin refuses
  the layer; the reference (and irrun) leaves the background class out of each prior's
  best class.
* ``top_k`` or ``keep_top_k[0]`` below -1: the reference keeps all, the plugin selects
  nothing or leaves its output unwritten; irrun refuses them.
* ``keep_top_k[0]`` 0 with ``top_k`` positive: the output has ``N * P * C`` rows, of
  which the plugin writes only the first ``N * top_k * C`` (zeros, and the end marker
  -1), and past its output (a crash) where ``top_k > P``; the reference and irrun
  write zeros to every row.
* Five inputs with one prior batch for several images: the reference reads past the
  priors; the plugin (and irrun) uses them for every image.
* ``code_type`` must be one of the two names exactly: the plugin ignores case, the
  reference decodes nothing for another spelling; irrun refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, Interval
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import affine_dim, merge_dims

# f32, f16 and bf16: OpenVINO's checks take f64 too (and the CPU plugin runs it), but
# irrun's kernel has not been tested in f64 here.
FLOATS_NO_F64 = ("f32", "f16", "bf16")
F32 = np.float32
CORNER = "caffe.PriorBoxParameter.CORNER"
CENTER_SIZE = "caffe.PriorBoxParameter.CENTER_SIZE"

COMMON_ATTRS = (
    Attr("background_label_id", "int", 0),
    Attr("top_k", "int", -1),
    Attr("variance_encoded_in_target", "bool", False),
    Attr("keep_top_k", "ints"),
    Attr("code_type", "str", CORNER),
    Attr("share_location", "bool", True),
    Attr("nms_threshold", "float"),
    Attr("confidence_threshold", "float", 0.0),
    Attr("clip_after_nms", "bool", False),
    Attr("clip_before_nms", "bool", False),
    Attr("decrease_label_id", "bool", False),
    Attr("normalized", "bool", False),
    Attr("input_height", "int", 1),
    Attr("input_width", "int", 1),
    Attr("objectness_score", "float", 0.0),
)


def _check(a: SimpleNamespace) -> None:
    if not a.keep_top_k:
        raise KernelError("keep_top_k must hold at least one value")
    if a.top_k < -1 or a.keep_top_k[0] < -1:
        raise KernelError(f"top_k ({a.top_k}) and keep_top_k ({a.keep_top_k[0]}) must be -1 "
                          "(keep all) or more: the CPU plugin selects nothing below -1, or "
                          "leaves its output unwritten")  # fmt: skip
    if a.code_type not in (CORNER, CENTER_SIZE):
        raise KernelError(f"code_type must be {CORNER} or {CENTER_SIZE}, got {a.code_type!r}")
    if getattr(a, "num_classes", 1) <= 0:
        raise KernelError(f"num_classes must be positive, got {a.num_classes}")
    if not a.normalized and (a.input_height <= 0 or a.input_width <= 0):
        raise KernelError(f"input_height and input_width must be positive without normalized, "
                          f"got {a.input_height} and {a.input_width}")  # fmt: skip


# ------------------------------------------------------------------------------ shape rule


def _known(d: Dim) -> int | None:
    return d if isinstance(d, int) else None


def _rank(info: TensorInfo, rank: int, what: str):
    if info.shape is not None and len(info.shape) != rank:
        raise ShapeError(f"{what} must be {rank}-D, got shape {list(info.shape)}")
    return info.shape


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    loc = _rank(inputs[0], 2, "box logits")
    conf = _rank(inputs[1], 2, "class predictions")
    priors = _rank(inputs[2], 3, "prior boxes")
    five = len(inputs) == 5
    arm_conf = _rank(inputs[3], 2, "objectness predictions") if five else None
    arm_loc = _rank(inputs[4], 2, "first-stage box logits") if five else None
    size = 4 if a.normalized else 5
    classes = getattr(a, "num_classes", None)
    n_priors = None
    if priors is not None and _known(priors[2]) is not None:
        if priors[2] % size:
            raise ShapeError(f"prior boxes' dim 2 ({priors[2]}) must be a multiple of {size}")
        n_priors = priors[2] // size
    if n_priors is None and arm_conf is not None and _known(arm_conf[1]) is not None:
        n_priors = arm_conf[1] // 2
    if n_priors is None and classes is not None and loc is not None and _known(loc[1]):
        per = 4 * (1 if a.share_location else classes)
        if loc[1] % per:
            raise ShapeError(f"box logits' dim 1 ({loc[1]}) must be a multiple of {per}")
        n_priors = loc[1] // per
    if n_priors is None and classes is not None and conf is not None and _known(conf[1]):
        if conf[1] % classes:
            raise ShapeError(f"class predictions' dim 1 ({conf[1]}) must be a multiple of "
                             f"num_classes ({classes})")  # fmt: skip
        n_priors = conf[1] // classes
    if n_priors is not None and n_priors <= 0:
        raise ShapeError("the number of prior boxes must be positive")
    if classes is None and n_priors:
        if conf is not None and _known(conf[1]) is not None:
            if conf[1] % n_priors:
                raise ShapeError(f"class predictions' dim 1 ({conf[1]}) must be a multiple of "
                                 f"the number of priors ({n_priors})")  # fmt: skip
            classes = conf[1] // n_priors
        elif not a.share_location:
            for logits in (loc, arm_loc):
                if logits is not None and _known(logits[1]) is not None:
                    if logits[1] % (4 * n_priors):
                        raise ShapeError(f"box logits' dim 1 ({logits[1]}) must be a "
                                         f"multiple of 4 * {n_priors} priors")  # fmt: skip
                    classes = logits[1] // (4 * n_priors)
                    break
    images: Dim = DYNAMIC
    named = ((loc, "box logits"), (conf, "class predictions"),
             (arm_conf, "objectness predictions"), (arm_loc, "first-stage box logits"))  # fmt: skip
    for info, what in named:
        if info is not None:
            images = merge_dims(images, info[0], f"{what}' dim 0 (the images)")
    if n_priors is not None and classes is not None:
        wants = [(loc, 4 * n_priors * (1 if a.share_location else classes), "box logits"),
                 (conf, n_priors * classes, "class predictions"),
                 (arm_conf, 2 * n_priors, "objectness predictions"),
                 (arm_loc, 4 * n_priors * (1 if a.share_location else classes),
                  "first-stage box logits")]  # fmt: skip
        for info, want, what in wants:
            if info is not None:
                merge_dims(info[1], want, f"{what}' dim 1")
    if priors is not None:
        if not (_may_be(priors[0], 1) or _may_overlap(priors[0], images)):
            raise ShapeError(f"prior boxes' dim 0 ({priors[0]}) must be 1 or the number of "
                             f"images ({images})")  # fmt: skip
        merge_dims(priors[1], 1 if a.variance_encoded_in_target else 2, "prior boxes' dim 1")
    if priors is not None and n_priors is not None:
        merge_dims(priors[2], size * n_priors, "prior boxes' dim 2")
    keep, top_k = a.keep_top_k[0], a.top_k
    if keep > 0:
        rows = affine_dim(images, keep, 0)
    elif keep == -1 and top_k > 0:
        rows = affine_dim(images, top_k * classes, 0) if classes else _unknown_product(images)
    elif n_priors and classes:
        rows = affine_dim(images, n_priors * classes, 0)
    else:
        rows = _unknown_product(images)
    return [TensorInfo((1, 1, rows, 7), inputs[0].element_type)]


def _may_be(d: Dim, n: int) -> bool:
    return d == n if isinstance(d, int) else d.contains(n)


def _may_overlap(a: Dim, b: Dim) -> bool:
    try:
        merge_dims(a, b, "")
    except ShapeError:
        return False
    return True


def _unknown_product(images: Dim) -> Dim:
    return 0 if images == 0 else Interval(0, None)


# ------------------------------------------------------------------------------ kernel


def _decode(a: SimpleNamespace, prior: np.ndarray, var: np.ndarray | None,
            logits: np.ndarray) -> np.ndarray:  # fmt: skip
    """Boxes ``[..., 4]`` from priors and logits broadcast against each other."""
    p = prior
    if not a.normalized:
        p = p / np.array([a.input_width, a.input_height] * 2, F32)
    v = logits if var is None else var * logits
    if a.code_type == CORNER:
        out = p + v
    else:
        pw, ph = p[..., 2] - p[..., 0], p[..., 3] - p[..., 1]
        pcx, pcy = (p[..., 0] + p[..., 2]) / F32(2), (p[..., 1] + p[..., 3]) / F32(2)
        cx, cy = v[..., 0] * pw + pcx, v[..., 1] * ph + pcy
        w, h = np.exp(v[..., 2]) * pw, np.exp(v[..., 3]) * ph
        out = np.stack([cx - w / F32(2), cy - h / F32(2), cx + w / F32(2), cy + h / F32(2)], -1)
    if a.clip_before_nms:
        out = np.clip(out, F32(0), F32(1))
    return out.astype(F32)


def _iou(boxes: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """IoU of boxes ``[G, K, 4]`` with each group's chosen box ``[G, 4]``."""
    c = chosen[:, None, :]
    w = np.minimum(boxes[..., 2], c[..., 2]) - np.maximum(boxes[..., 0], c[..., 0])
    h = np.minimum(boxes[..., 3], c[..., 3]) - np.maximum(boxes[..., 1], c[..., 1])

    def area(b):
        bw, bh = b[..., 2] - b[..., 0], b[..., 3] - b[..., 1]
        return np.where((bw < 0) | (bh < 0), F32(0), bw * bh)

    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area(boxes) + area(c) - inter)
    return np.where((w > 0) & (h > 0), iou, F32(0))


def _nms(boxes: np.ndarray, valid: np.ndarray, threshold: np.float32) -> np.ndarray:
    """Greedy NMS per group over candidates ``[G, K]`` already in order: which are kept.
    The first candidate left is always kept; each step drops those overlapping it."""
    groups = np.arange(boxes.shape[0])
    alive, kept = valid.copy(), np.zeros_like(valid)
    while alive.any():
        has = alive.any(axis=1)
        first = np.argmax(alive, axis=1)
        kept[groups[has], first[has]] = True
        alive[groups, first] = False
        alive &= ~(_iou(boxes, boxes[groups, first]) > threshold) | ~has[:, None]
    return kept


def _kernel(a: SimpleNamespace, loc: np.ndarray, conf: np.ndarray, priors: np.ndarray,
            arm_conf: np.ndarray | None = None,
            arm_loc: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
    out_type = loc.dtype
    size = 4 if a.normalized else 5
    images, n_priors = loc.shape[0], priors.shape[2] // size
    if n_priors == 0 or priors.shape[2] % size:
        raise KernelError(f"prior boxes' dim 2 ({priors.shape[2]}) must be a positive multiple "
                          f"of {size}")  # fmt: skip
    classes = getattr(a, "num_classes", None) or conf.shape[1] // n_priors
    loc_classes = 1 if a.share_location else classes
    if (loc.shape[1] != n_priors * loc_classes * 4 or conf.shape != (images, n_priors * classes)
            or priors.shape[0] not in (1, images)):  # fmt: skip
        raise ShapeError(f"box logits {list(loc.shape)}, class predictions {list(conf.shape)} "
                         f"and prior boxes {list(priors.shape)} disagree")  # fmt: skip
    p = priors.astype(F32)
    boxes_p = p[:, 0].reshape(-1, n_priors, size)[..., size - 4:][:, :, None, :]  # [B, P, 1, 4]
    var = None
    if not a.variance_encoded_in_target:
        var = p[:, 1, : 4 * n_priors].reshape(-1, n_priors, 1, 4)
    logits = loc.astype(F32).reshape(images, n_priors, loc_classes, 4)
    scores = conf.astype(F32).reshape(images, n_priors, classes)
    if arm_conf is not None:
        first = _decode(a, boxes_p, var, arm_loc.astype(F32).reshape(logits.shape))
        boxes = _decode(a, first, var, logits)
        low = arm_conf.astype(F32).reshape(images, n_priors, 2)[..., 1:] < F32(a.objectness_score)
        background = (np.arange(classes) == a.background_label_id).astype(F32)
        scores = np.where(low, background, scores)
    else:
        boxes = _decode(a, boxes_p, var, logits)  # [N, P, L, 4]
    boxes = np.broadcast_to(boxes, (images, n_priors, loc_classes, 4))
    scores = scores.transpose(0, 2, 1)  # [N, C, P]
    usable = np.ones((images, n_priors), bool)
    if not a.normalized:  # the priors end at the first whose leading value is -1 (the plugin)
        end = p[:, 0].reshape(-1, n_priors, size)[..., 0] == F32(-1)
        actual = np.where(end.any(axis=1), np.argmax(end, axis=1), n_priors)
        usable = np.arange(n_priors) < np.broadcast_to(actual, (images,))[:, None]
    labels = np.arange(classes)
    if not a.decrease_label_id:
        valid = (scores > F32(a.confidence_threshold)) & (labels != a.background_label_id)[:, None]
        valid &= usable[:, None, :]
    else:
        masked = np.where(((labels == 0) | (labels == a.background_label_id))[None, :, None],
                          F32(-np.inf), scores)  # fmt: skip
        best = np.argmax(masked, axis=1)  # [N, P]
        top = np.take_along_axis(masked, best[:, None], axis=1)[:, 0]
        ok = (top > F32(-1)) & (top >= F32(a.confidence_threshold)) & usable
        if a.top_k > -1:  # the image's first top_k candidates: by score, class, prior
            rank = np.empty_like(best)
            key = np.where(ok, -top, np.inf)
            order = np.lexsort((np.arange(n_priors)[None].repeat(images, 0), best, key), axis=1)
            np.put_along_axis(rank, order, np.arange(n_priors)[None], axis=1)
            ok &= rank < a.top_k
        valid = ok[:, None, :] & (labels[None, :, None] == best[:, None, :])
    # Each (image, class)'s candidates in order: score descending, then prior index.
    key = np.where(valid, -scores, np.inf)
    order = np.argsort(key, axis=2, kind="stable")
    count = valid.sum(axis=2)
    if not a.decrease_label_id and a.top_k > -1:
        count = np.minimum(count, a.top_k)
    width = int(count.max()) if count.size else 0
    order = order[..., :width]
    cand_valid = np.arange(width) < count[..., None]  # [N, C, K]
    cand_scores = np.take_along_axis(scores, order, axis=2)
    if a.share_location:
        per_image = boxes[:, :, 0]  # [N, P, 4]
        cand_boxes = np.take_along_axis(per_image[:, None], order[..., None], axis=2)
    else:
        per_class = boxes.transpose(0, 2, 1, 3)  # [N, C, P, 4]
        cand_boxes = np.take_along_axis(per_class, order[..., None], axis=2)
    groups = images * classes
    kept = _nms(cand_boxes.reshape(groups, width, 4), cand_valid.reshape(groups, width),
                F32(a.nms_threshold)).reshape(cand_valid.shape)  # fmt: skip
    img, cls, pos = np.nonzero(kept)  # image by image, label by label, in order
    score = cand_scores[img, cls, pos]
    prior = order[img, cls, pos]
    keep = a.keep_top_k[0]
    if keep > -1 and len(img):
        rank_order = np.lexsort((cls, prior, -score, img))
        start = np.searchsorted(img[rank_order], img[rank_order], side="left")
        rank = np.empty(len(img), np.int64)
        rank[rank_order] = np.arange(len(img)) - start
        chosen = rank < keep
        img, cls, pos, score, prior = (x[chosen] for x in (img, cls, pos, score, prior))
    rows = _rows(a, images, n_priors, classes)
    if len(img) > rows:
        raise KernelError(f"{len(img)} detections do not fit the output's {rows} rows")
    out = np.zeros((rows, 7), F32)
    box = cand_boxes[img, cls, pos]
    if a.clip_after_nms:
        box = np.clip(box, F32(0), F32(1))
    n = len(img)
    out[:n, 0] = img
    out[:n, 1] = cls - 1 if a.decrease_label_id else cls
    out[:n, 2] = score
    out[:n, 3:] = box
    if n < rows:
        out[n, 0] = -1
    return (out.reshape(1, 1, rows, 7).astype(out_type),)


def _rows(a: SimpleNamespace, images: int, n_priors: int, classes: int) -> int:
    keep, top_k = a.keep_top_k[0], a.top_k
    if keep > 0:
        return images * keep
    if keep == -1 and top_k > 0:
        return images * top_k * classes
    return images * n_priors * classes


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Per score (a prior in a class): its decoded box, sort keys and order, the
    candidates' boxes and one NMS step's IoU temporaries, in f32 and i64."""
    conf = static_shape(inputs[1])
    loc = static_shape(inputs[0])
    if conf is None or loc is None:
        return 0
    return 120 * conf[0] * conf[1] + 40 * loc[0] * loc[1]


for _version in (1, 8):
    _attrs = ((Attr("num_classes", "int"),) if _version == 1 else ()) + COMMON_ATTRS
    register(OpDef(type="DetectionOutput", version=_version, since_opset=_version,
                   attrs=_attrs, infer=_infer, kernel=_kernel, inputs=(3, 5), check=_check,
                   input_types=(FLOATS_NO_F64,) * 5, scratch=_scratch))  # fmt: skip
