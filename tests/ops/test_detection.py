"""NonMaxSuppression-1/3/4/5/9 and ROIAlign-3/9 against OpenVINO, by hand, and as torchvision
converts them.

``ov.Model.evaluate`` cannot run either op (OpenVINO's core has no evaluate for
them; their reference kernels live in the template plugin, which the pip wheel
lacks), so the differential tests compare with the CPU plugin, and the cases where
the plugin and the reference kernels disagree are checked by hand against the
reference's rules (see ``irrun/ops/detection.py``), next to a test that pins down
what the plugin does there.

Since the reference kernels cannot be run, NonMaxSuppression is also compared with a
port of the reference algorithm (its priority queue, box by box) kept here.

Tolerances: hard-NMS scores are input scores, compared exactly.  Soft-NMS scores
are products of ``exp`` weights, which the plugin computes with its vectorized exp
and in another order: rtol 1e-5.  ROIAlign sums four bilinear terms and then the
samples of a bin in f32, where the plugin rounds in its own order: rtol 1e-5 plus
atol 1e-6 for values that cancel to near zero.  f16 ROIAlign: irrun computes in
f32 and rounds once; the plugin rounds its f32 result too: one f16 ulp (rtol 1e-3).
"""

from __future__ import annotations

import heapq
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset3, opset4, opset5, opset9, opset11, opset15
from support.ov_oneop import (
    CORE,
    CPU_CONFIG,
    assert_close,
    one_op_model,
    run_both,
    run_cpu,
    run_reference,
    run_saved,
)
from support.ov_shapes import from_ov_shape
from support.typed import refusals, run_irrun, run_openvino

import irrun
from irrun.ir import element_types
from irrun.ir.dims import Interval
from irrun.ir.element_types import FLOATS
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops.detection import BATCH_INDICES, NMS_COUNTS

ET = element_types.ELEMENT_TYPES
MODELS = Path(__file__).resolve().parents[1] / "detection_models"


def const(value, dtype=np.float32):
    return opset1.constant(np.asarray(value, dtype))


def nms_builder(version, per_class=4, iou=0.5, score=0.0, sigma=0.0, encoding="corner",
                descending=True, output_type="i64", scalar_dtype=np.float32):  # fmt: skip
    factory = opset5.non_max_suppression if version == 5 else opset9.non_max_suppression

    def build(boxes, scores):
        return factory(boxes, scores, const(per_class, np.int64), const(iou, scalar_dtype),
                       const(score, scalar_dtype), const(sigma, scalar_dtype), encoding,
                       descending, output_type)  # fmt: skip

    return build


def run_nms(tmp_path, boxes, scores, version, **kw):
    return run_both(nms_builder(version, **kw), [boxes, scores], tmp_path, outputs=3)


def random_boxes(rng, batches, n, encoding="corner", identical=False):
    if encoding == "center":
        centre = rng.random((batches, n, 2)) * 4
        size = rng.random((batches, n, 2)) * 2 + 0.1
        return np.concatenate([centre, size], -1).astype(np.float32)
    corners = (rng.random((batches, n, 4)) * 4).astype(np.float32)  # any diagonal pair
    if identical:
        corners[:, 1::3] = corners[:, :1]
    return corners


# --------------------------------------------------------------------------- NMS sweep

NMS_VARIANTS = {
    "plain": {},
    "unsorted": dict(descending=False),
    "center": dict(encoding="center"),
    "tied-scores": dict(ties=True),
    "tied-unsorted": dict(ties=True, descending=False),
    "identical-boxes": dict(identical=True, iou=0.4),
    "score-threshold": dict(score=0.6, per_class=10),
    "negative-threshold": dict(score=-1.0, output_type="i32"),
    "one-per-class": dict(per_class=1),
    "more-than-boxes": dict(per_class=100, iou=0.7),
    "f16": dict(f16=True),
    "soft": dict(sigma=0.5),
    "soft-threshold": dict(sigma=0.3, score=0.3, iou=0.2),
}


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize("variant", NMS_VARIANTS)
@pytest.mark.parametrize("seed", range(3))
def test_nms_matches_the_plugin(version, variant, seed, tmp_path):
    kw = dict(NMS_VARIANTS[variant])
    ties, identical, f16 = kw.pop("ties", False), kw.pop("identical", False), kw.pop("f16", False)
    rng = np.random.default_rng(seed)
    batches, classes, n = [(1, 1, 7), (2, 3, 8), (3, 2, 9)][seed]
    boxes = random_boxes(rng, batches, n, kw.get("encoding", "corner"), identical)
    scores = rng.random((batches, classes, n)).astype(np.float32)
    if ties:
        scores = np.round(scores * 4) / 4
    if f16:
        boxes, scores = boxes.astype(np.float16), scores.astype(np.float16)
        kw["scalar_dtype"] = np.float16
    got, want = run_nms(tmp_path, boxes, scores, version, **kw)
    if kw.get("sigma", 0) > 0:
        # Scores decay by products of exp: the plugin's differ in the last bits, which
        # may swap boxes whose scores are nearly equal.  Compare row sets, then scores.
        assert_close(got[2], want[2], what="valid_outputs")
        key = lambda rows: np.lexsort(rows[:, ::-1].T)  # noqa: E731
        g, w = key(got[0]), key(want[0])
        assert_close(got[0][g], want[0][w], what="selected_indices")
        assert_close(got[1][g], want[1][w], rtol=1e-5, what="selected_scores")
        if kw.get("descending", True):
            assert (np.diff(got[1][:, 2]) <= 0).all()
        return
    for name, g, w in zip(("selected_indices", "selected_scores", "valid_outputs"), got, want,
                          strict=True):  # fmt: skip
        assert_close(g, w, what=name)


# --------------------------------------------------------------------------- NMS vs the reference


def reference_nms(boxes, scores, per_class, iou_threshold, score_threshold, sigma, version):
    """OpenVINO's reference algorithm, box by box with its priority queue (from
    src/core/reference/src/op/non_max_suppression.cpp), on ordered corner boxes: the
    oracle where the plugin differs.  Two documented departures, which irrun shares
    with the plugin and the specification: version 5 soft NMS drops no box by IoU,
    and the result is sorted by score (then batch, class, box), not reversed."""
    f32 = np.float32
    thr, low, soft = f32(iou_threshold), f32(score_threshold), sigma > 0
    scale = f32(-0.5) / f32(sigma) if soft else f32(0)

    def iou(a, b):
        area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
        if area_a <= 0 or area_b <= 0:
            return f32(0)
        h = max(min(a[2], b[2]) - max(a[0], b[0]), f32(0))
        w = max(min(a[3], b[3]) - max(a[1], b[1]), f32(0))
        return f32(h * w) / f32(area_a + area_b - f32(h * w))

    rows = []
    for batch, class_scores in enumerate(scores):
        for cls, row in enumerate(class_scores):
            queue = [(-row[i], i, 0) for i in range(len(row)) if row[i] > low]
            heapq.heapify(queue)
            chosen = []
            while queue and len(chosen) < per_class:
                negative, i, begin = heapq.heappop(queue)
                score = original = f32(-negative)
                dropped = False
                for j in range(len(chosen) - 1, begin - 1, -1):
                    v = iou(boxes[batch, i], boxes[batch, chosen[j][0]])
                    hard = not soft and (v >= thr if version == 5 else v > thr)
                    score = f32(0) if hard else f32(score * np.exp(f32(scale * v) * v))
                    if hard:
                        dropped = True
                        break
                    if score <= low:
                        break
                if dropped:
                    continue
                if score == original:
                    chosen.append((i, score))
                elif score > low:
                    heapq.heappush(queue, (-score, i, len(chosen)))
            rows += [(batch, cls, i, score) for i, score in chosen]
    rows.sort(key=lambda r: (-r[3], r[0], r[1], r[2]))
    selected = np.array([r[:3] for r in rows], np.int64).reshape(-1, 3)
    return selected, np.array([r[3] for r in rows], np.float32)


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize(("iou", "sigma", "identical"), [
    (0.0, 0.0, False),  # disjoint boxes have IoU 0 = the threshold
    (1.0, 0.0, True),  # identical boxes have IoU 1 = the threshold
    (0.45, 0.0, True),
    (0.3, 0.4, False),
    (0.9, 0.2, True),
])  # fmt: skip
@pytest.mark.parametrize("seed", range(4))
def test_nms_matches_the_reference_algorithm(version, iou, sigma, identical, seed):
    rng = np.random.default_rng(seed)
    boxes = random_boxes(rng, 2, 10, identical=identical)
    scores = np.round(rng.random((2, 3, 10)).astype(np.float32) * 8) / 8
    op = resolve("NonMaxSuppression", f"opset{version}")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i64"])  # fmt: skip
    idx, rows, valid = op.kernel(attrs, boxes, scores, np.int64(6), np.float32(iou),
                                 np.float32(0.1), np.float32(sigma))  # fmt: skip
    corners = np.concatenate([np.minimum(boxes[..., :2], boxes[..., 2:]),
                              np.maximum(boxes[..., :2], boxes[..., 2:])], -1)  # fmt: skip
    want_idx, want_scores = reference_nms(corners, scores, 6, iou, 0.1, sigma, version)
    if sigma > 0:  # products of weights, rounded in another order: compare as sets
        g, w = np.lexsort(idx[:, ::-1].T), np.lexsort(want_idx[:, ::-1].T)
        assert idx[g].tolist() == want_idx[w].tolist()
        np.testing.assert_allclose(rows[g, 2], want_scores[w], rtol=1e-6)
    else:
        assert idx.tolist() == want_idx.tolist()
        assert rows[:, 2].tolist() == want_scores.tolist()
    assert valid.tolist() == [len(want_idx)]


# --------------------------------------------------------------------------- NMS by hand

# Boxes [y1, x1, y2, x2]; IoU(0, 1) = 2/4 = 0.5 exactly; box 2 overlaps neither.
HAND_BOXES = np.array([[[0, 0, 1, 3], [0, 1, 1, 4], [5, 5, 6, 6]]], np.float32)
HAND_SCORES = np.array([[[0.5, 0.25, 0.125]]], np.float32)


@pytest.mark.parametrize(("version", "iou", "kept"), [
    (9, 0.5, [0, 1, 2]),  # v9 keeps a box whose IoU equals the threshold
    (5, 0.5, [0, 2]),  # v5 drops it
    (9, 0.49, [0, 2]),
    (5, 0.51, [0, 1, 2]),
    (9, 0.0, [0, 2]),  # threshold 0: only boxes that do not overlap at all survive
])  # fmt: skip
def test_nms_by_hand(version, iou, kept):
    op = resolve("NonMaxSuppression", f"opset{version}")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i64"])  # fmt: skip
    idx, rows, valid = op.kernel(attrs, HAND_BOXES, HAND_SCORES, np.int64(5), np.float32(iou),
                                 np.float32(0), np.float32(0))  # fmt: skip
    assert idx.tolist() == [[0, 0, k] for k in kept]
    assert rows.tolist() == [[0.0, 0.0, float(HAND_SCORES[0, 0, k])] for k in kept]
    assert valid.tolist() == [len(kept)] and valid.dtype == np.int64


def test_the_plugin_drops_equal_iou_in_nms9(tmp_path):
    """The plugin compares IoU >= threshold in version 9 too (the reference and the
    specification keep the box); at threshold 0 it keeps one box per class even
    when no two boxes overlap.  irrun follows the reference."""
    _, want = run_nms(tmp_path, HAND_BOXES, HAND_SCORES, 9, per_class=5, iou=0.5)
    assert want[0].tolist() == [[0, 0, 0], [0, 0, 2]]
    _, want = run_nms(tmp_path, HAND_BOXES, HAND_SCORES, 9, per_class=5, iou=0.0)
    assert want[0].tolist() == [[0, 0, 0]]


@pytest.mark.parametrize("version", [5, 9])
def test_soft_nms_by_hand(version, tmp_path):
    # sigma 0.5: weight exp(-0.5 / 0.5 * 0.5**2) = exp(-0.25) for box 1 after box 0; the
    # IoU threshold (0.3 < 0.5) does not drop it, in either version.
    got, want = run_nms(tmp_path, HAND_BOXES, HAND_SCORES, version, per_class=5, iou=0.3,
                        sigma=0.5)  # fmt: skip
    decayed = np.float32(0.25) * np.float32(np.exp(np.float32(-0.25)))
    assert got[0].tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]] == want[0].tolist()
    np.testing.assert_allclose(got[1][:, 2], [0.5, decayed, 0.125], rtol=1e-6)
    # A score threshold above the decayed score drops the box.
    got, _ = run_nms(tmp_path, HAND_BOXES, HAND_SCORES, version, per_class=5, score=0.2,
                     sigma=0.5)  # fmt: skip
    assert got[0].tolist() == [[0, 0, 0]]


def test_nms_corner_order_and_center_encoding(tmp_path):
    flipped = HAND_BOXES[:, :, [2, 3, 0, 1]]
    for boxes in (flipped, HAND_BOXES[:, :, [0, 3, 2, 1]]):
        got, want = run_nms(tmp_path, boxes, HAND_SCORES, 9, per_class=5, iou=0.49)
        assert got[0].tolist() == [[0, 0, 0], [0, 0, 2]] == want[0].tolist()
    # The same boxes as [x_center, y_center, width, height].
    y1, x1, y2, x2 = np.moveaxis(HAND_BOXES, -1, 0)
    center = np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], -1)
    got, want = run_nms(tmp_path, center, HAND_SCORES, 9, per_class=5, iou=0.49,
                        encoding="center")  # fmt: skip
    assert got[0].tolist() == [[0, 0, 0], [0, 0, 2]] == want[0].tolist()


def test_nms_output_order(tmp_path):
    # Two batches, two classes; the same boxes, scores chosen so that sorting matters.
    boxes = np.repeat(HAND_BOXES, 2, axis=0)
    scores = np.array([[[0.1, 0.9, 0.3], [0.8, 0.2, 0.3]],
                       [[0.3, 0.2, 0.6], [0.3, 0.1, 0.2]]], np.float32)  # fmt: skip
    got, want = run_nms(tmp_path, boxes, scores, 9, per_class=5, iou=0.45, descending=False)
    selection = [[0, 0, 1], [0, 0, 2], [0, 1, 0], [0, 1, 2], [1, 0, 2], [1, 0, 0],
                 [1, 1, 0], [1, 1, 2]]  # fmt: skip
    assert got[0].tolist() == selection == want[0].tolist()
    got, want = run_nms(tmp_path, boxes, scores, 9, per_class=5, iou=0.45)
    # By score; the three 0.3s by batch, class, then box.
    ranked = [[0, 0, 1], [0, 1, 0], [1, 0, 2], [0, 0, 2], [0, 1, 2], [1, 0, 0], [1, 1, 0],
              [1, 1, 2]]  # fmt: skip
    assert got[0].tolist() == ranked == want[0].tolist()
    assert got[1][:, :2].tolist() == [row[:2] for row in ranked]


@pytest.mark.parametrize("per_class", [0, -1])
def test_nms_selects_nothing_for_no_boxes_per_class(per_class, tmp_path):
    model = one_op_model(nms_builder(9, per_class=per_class), [HAND_BOXES, HAND_SCORES], 3)
    got = run_saved(model, [HAND_BOXES, HAND_SCORES], tmp_path)
    assert [g.shape for g in got] == [(0, 3), (0, 3), (1,)]
    assert got[2].tolist() == [0]
    if per_class == 0:
        # The plugin leaves valid_outputs unwritten; for -1 it also corrupts its heap (a
        # later inference in the same process crashes), so it is not run there.
        want = run_cpu(model, [HAND_BOXES, HAND_SCORES])
        assert [w.shape for w in want] == [(0, 3), (0, 3), (1,)]


def test_nms_absent_inputs_select_nothing():
    op = resolve("NonMaxSuppression", "opset9")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i32"])  # fmt: skip
    idx, _, valid = op.kernel(attrs, HAND_BOXES, HAND_SCORES)
    assert idx.shape == (0, 3) and idx.dtype == np.int32 and valid.tolist() == [0]


def test_nms_skips_nan_scores_and_empty_boxes(tmp_path):
    scores = HAND_SCORES.copy()
    scores[0, 0, 0] = np.nan
    boxes = HAND_BOXES.copy()
    boxes[0, 2] = [5, 5, 5, 9]  # no area: its IoU with anything is 0
    got, want = run_nms(tmp_path, boxes, scores, 9, per_class=5, iou=0.1)
    assert got[0].tolist() == [[0, 0, 1], [0, 0, 2]] == want[0].tolist()


def test_nms_takes_one_element_vectors_and_empty_inputs(tmp_path):
    def build(boxes, scores):
        return opset9.non_max_suppression(boxes, scores, const([2], np.int64), const([0.4]))

    got, want = run_both(build, [HAND_BOXES, HAND_SCORES], tmp_path, outputs=3)
    assert got[0].tolist() == [[0, 0, 0], [0, 0, 2]] == want[0].tolist()
    empty = [HAND_BOXES[:, :0], HAND_SCORES[:, :, :0]]
    got, want = run_both(build, empty, tmp_path, outputs=3)
    assert got[0].shape == want[0].shape == (0, 3) and got[2].tolist() == [0]


# --------------------------------------------------------------------------- NMS shapes


def nms_shapes(version, boxes, scores, per_class):
    """OpenVINO's and irrun's output shapes and types for the given input shapes."""
    factory = opset5.non_max_suppression if version == 5 else opset9.non_max_suppression
    b = opset1.parameter(ov.PartialShape(boxes), ov.Type.f32)
    s = opset1.parameter(ov.PartialShape(scores), ov.Type.f32)
    limit = opset1.parameter([], ov.Type.i64) if per_class is None else const(per_class, np.int64)
    node = factory(b, s, limit, const(0.5), const(0.0), const(0.0), output_type="i32")
    want = [(from_ov_shape(o.get_partial_shape()), o.get_element_type().get_type_name())
            for o in node.outputs()]  # fmt: skip
    infos = [TensorInfo(from_ov_shape(ov.PartialShape(boxes)), ET["f32"]),
             TensorInfo(from_ov_shape(ov.PartialShape(scores)), ET["f32"]),
             TensorInfo((), ET["i64"], None if per_class is None else np.int64(per_class)),
             TensorInfo((), ET["f32"]), TensorInfo((), ET["f32"]), TensorInfo((), ET["f32"])]  # fmt: skip
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i32"])  # fmt: skip
    got = [(o.shape, o.element_type.name) for o in
           resolve("NonMaxSuppression", f"opset{version}").infer(attrs, infos)]  # fmt: skip
    return got, want


@pytest.mark.parametrize("version", [5, 9])
@pytest.mark.parametrize(("boxes", "scores", "per_class", "selected"), [
    ([2, 6, 4], [2, 3, 6], 4, Interval(0, 24)),
    ([2, 6, 4], [2, 3, 6], 10, Interval(0, 36)),
    ([2, 6, 4], [2, 3, 6], 0, 0),
    ([2, 6, 4], [2, 3, 6], -3, Interval(0, None)),
    ([2, 6, 4], [2, 3, 6], None, Interval(0, None)),
    ([2, -1, 4], [2, 3, -1], 4, Interval(0, None)),
    ([-1, 6, 4], [-1, 3, 6], 4, Interval(0, None)),
    ([2, 6, 4], [(1, 3), (2, 5), 6], 4, Interval(0, 60)),
])  # fmt: skip
def test_nms_shape_rule_matches_openvino(version, boxes, scores, per_class, selected):
    got, want = nms_shapes(version, boxes, scores, per_class)
    assert got == [((selected, 3), "i32"), ((selected, 3), "f32"), ((1,), "i32")]
    if per_class is not None and per_class < 0:
        # OpenVINO multiplies the negative bound through and shows a dim "?" whose lower
        # bound reads -1; irrun's is 0.
        assert [shape[0].hi for shape, _ in want[:2]] == [None, None]
        want = got
    assert got == want


@pytest.mark.parametrize(("boxes", "scores", "limit", "says"), [
    ((2, 6), (2, 3, 6), (), "boxes must be 3-D"),
    ((2, 6, 4), (2, 6), (), "scores must be 3-D"),
    ((2, 6, 5), (2, 3, 6), (), "last dim must be 4"),
    ((2, 6, 4), (3, 3, 6), (), "same number of batches"),
    ((2, 6, 4), (2, 3, 7), (), "number of boxes"),
    ((2, 6, 4), (2, 3, 6), (2,), "max_output_boxes_per_class must be a scalar"),
])  # fmt: skip
def test_nms_shape_rule_errors(boxes, scores, limit, says):
    op = resolve("NonMaxSuppression", "opset9")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i64"])  # fmt: skip
    infos = [TensorInfo(boxes, ET["f32"]), TensorInfo(scores, ET["f32"]),
             TensorInfo(limit, ET["i64"])]  # fmt: skip
    with pytest.raises(ShapeError, match=says):
        op.infer(attrs, infos)
    with pytest.raises(ShapeError, match="which NonMaxSuppression-v9 does not take"):
        op.infer(attrs, [TensorInfo((1, 2, 4), ET["i32"]), TensorInfo((1, 1, 2), ET["f32"])])


# --------------------------------------------------------------------------- NMS-1, -3, -4

OLD_NMS = {1: opset1.non_max_suppression, 3: opset3.non_max_suppression,
           4: opset4.non_max_suppression}  # fmt: skip


def old_nms_builder(version, per_class=4, iou=0.5, score=0.0, encoding="corner",
                    descending=True, output_type="i64", scalar_dtype=np.float32):  # fmt: skip
    extra = {} if version == 1 else {"output_type": output_type}

    def build(boxes, scores):
        return OLD_NMS[version](boxes, scores, const(per_class, np.int64),
                                const(iou, scalar_dtype), const(score, scalar_dtype),
                                encoding, descending, **extra)  # fmt: skip

    return build


OLD_NMS_VARIANTS = {
    "plain": {},
    "unsorted": dict(descending=False),
    "center": dict(encoding="center"),
    "tied-scores": dict(ties=True),
    "tied-unsorted": dict(ties=True, descending=False),
    "identical-boxes": dict(identical=True, iou=0.4),
    "score-threshold": dict(score=0.6, per_class=10),
    "i32": dict(output_type="i32", per_class=2),
    "one-per-class": dict(per_class=1),
    "more-than-boxes": dict(per_class=100, iou=0.7),
    "f16": dict(f16=True),
}


@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize("variant", OLD_NMS_VARIANTS)
@pytest.mark.parametrize("seed", range(3))
def test_old_nms_matches_the_plugin(version, variant, seed, tmp_path):
    kw = dict(OLD_NMS_VARIANTS[variant])
    ties, identical, f16 = kw.pop("ties", False), kw.pop("identical", False), kw.pop("f16", False)
    rng = np.random.default_rng(seed)
    batches, classes, n = [(1, 1, 7), (2, 3, 8), (3, 2, 9)][seed]
    boxes = random_boxes(rng, batches, n, kw.get("encoding", "corner"), identical)
    scores = rng.random((batches, classes, n)).astype(np.float32)
    if ties:
        scores = np.round(scores * 4) / 4
    if f16:
        boxes, scores = boxes.astype(np.float16), scores.astype(np.float16)
        kw["scalar_dtype"] = np.float16
    got, want = run_both(old_nms_builder(version, **kw), [boxes, scores], tmp_path)
    if version == 4:
        assert_close(got, want)
        return
    # Versions 1 and 3 keep the first min(num_boxes, per_class * classes) rows, as the
    # reference kernel and the specification do; the plugin returns every row.
    rows = min(n, kw.get("per_class", 4) * classes)
    assert len(got) == min(rows, len(want))
    assert_close(got, want[: len(got)])


def test_old_nms_is_version_5_without_its_other_outputs(tmp_path):
    """Random sweeps: versions 1, 3, 4 select as version 5 does (in irrun and the plugin)."""
    rng = np.random.default_rng(7)
    boxes = random_boxes(rng, 2, 12)
    scores = np.round(rng.random((2, 3, 12)) * 8).astype(np.float32) / 8
    for descending in (True, False):
        five = nms_builder(5, per_class=3, iou=0.3, score=0.1, descending=descending)
        model = one_op_model(five, [boxes, scores], 3)
        want = run_cpu(model, [boxes, scores])[0]
        for version in (1, 3, 4):
            build = old_nms_builder(version, per_class=3, iou=0.3, score=0.1,
                                    descending=descending)  # fmt: skip
            got = run_saved(one_op_model(build, [boxes, scores]), [boxes, scores], tmp_path)[0]
            rows = len(want) if version == 4 else min(12, 3 * 3)
            assert_close(got, want[:rows])


@pytest.mark.parametrize("version", [1, 3, 4])
def test_old_nms_drops_a_box_at_the_threshold(version, tmp_path):
    """HAND_BOXES 0 and 1 overlap by IoU 0.5: dropped at 0.5 (both OpenVINO engines run
    version 5's rule), though the specification drops only above it."""
    got, want = run_both(old_nms_builder(version, iou=0.5), [HAND_BOXES, HAND_SCORES], tmp_path)
    assert got.tolist() == want.tolist() == [[0, 0, 0], [0, 0, 2]]
    got, want = run_both(old_nms_builder(version, iou=0.51), [HAND_BOXES, HAND_SCORES], tmp_path)
    assert got.tolist() == want.tolist() == [[0, 0, 0], [0, 0, 1], [0, 0, 2]]


def test_old_nms_truncates_as_the_reference_does():
    """Version 1's output holds min(num_boxes, per_class * classes) rows: 3 of the 4
    boxes selected in two batches, highest scores first (sorted across batches)."""
    boxes = np.concatenate([HAND_BOXES, HAND_BOXES + 10])
    scores = np.array([[[0.5, 0.25, 0.125]], [[0.75, 0.0625, 0.375]]], np.float32)
    op = resolve("NonMaxSuppression", "opset1")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True)
    got = op.kernel(attrs, boxes, scores, np.int64(3), np.float32(0.4), np.float32(0.0))[0]
    assert got.tolist() == [[1, 0, 0], [0, 0, 0], [1, 0, 2]] and got.dtype == np.int64
    attrs.sort_result_descending = False
    got = op.kernel(attrs, boxes, scores, np.int64(3), np.float32(0.4), np.float32(0.0))[0]
    assert got.tolist() == [[0, 0, 0], [0, 0, 2], [1, 0, 0]]
    # Without max_output_boxes_per_class nothing is selected.
    assert op.kernel(attrs, boxes, scores)[0].shape == (0, 3)


def old_nms_shapes(version, boxes, scores, per_class):
    b = opset1.parameter(ov.PartialShape(boxes), ov.Type.f32)
    s = opset1.parameter(ov.PartialShape(scores), ov.Type.f32)
    limit = opset1.parameter([], ov.Type.i64) if per_class is None else const(per_class, np.int64)
    extra = {} if version == 1 else {"output_type": "i32"}
    node = OLD_NMS[version](b, s, limit, const(0.5), const(0.0), **extra)
    want = from_ov_shape(node.get_output_partial_shape(0))
    infos = [TensorInfo(from_ov_shape(ov.PartialShape(boxes)), ET["f32"]),
             TensorInfo(from_ov_shape(ov.PartialShape(scores)), ET["f32"]),
             TensorInfo((), ET["i64"], None if per_class is None else np.int64(per_class)),
             TensorInfo((), ET["f32"]), TensorInfo((), ET["f32"])]  # fmt: skip
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True)
    if version > 1:
        attrs.output_type = ET["i32"]
    (out,) = resolve("NonMaxSuppression", f"opset{version}").infer(attrs, infos)
    assert out.element_type.name == ("i64" if version == 1 else "i32")
    return out.shape, want


@pytest.mark.parametrize("version", [1, 3, 4])
@pytest.mark.parametrize(("boxes", "scores", "per_class", "bounds"), [
    ([2, 6, 4], [2, 3, 6], 4, (6, 6, 24)),
    ([2, 6, 4], [2, 3, 6], 1, (3, 3, 6)),
    ([2, 6, 4], [2, 3, 6], 10, (6, 6, 36)),
    ([3, 20, 4], [3, 2, 20], 4, (8, 8, 24)),
    ([2, 6, 4], [2, 3, 6], 0, (0, 0, 0)),
    # OpenVINO's version 1 and 3 give "?" here: irrun's bound is the same rule's.
    ([2, 6, 4], [(1, 3), (2, 5), 6], 4, (6, 6, 60)),
    ([2, -1, 4], [2, 3, -1], 4, (None, None, None)),
    ([2, 6, 4], [2, 3, 6], None, (None, None, None)),
    ([-1, 6, 4], [-1, -1, 6], 4, (None, None, None)),
])  # fmt: skip
def test_old_nms_shape_rule(version, boxes, scores, per_class, bounds):
    """OpenVINO declares a static size (where it can); irrun's is that size as an upper
    bound, for the rows are only those selected."""
    got, want = old_nms_shapes(version, boxes, scores, per_class)
    bound = bounds[[1, 3, 4].index(version)]
    assert got == (0 if bound == 0 else Interval(0, bound), 3)
    if isinstance(want[0], int):
        assert want[0] == bound
    else:
        assert want[0] == Interval(0, None)


@pytest.mark.parametrize("version", [1, 3, 4])
def test_old_nms_shape_rule_errors(version):
    op = resolve("NonMaxSuppression", f"opset{version}")
    attrs = SimpleNamespace(box_encoding="corner", sort_result_descending=True,
                            output_type=ET["i64"])  # fmt: skip
    f32, i64 = ET["f32"], ET["i64"]
    with pytest.raises(ShapeError, match="max_output_boxes_per_class must be a scalar"):
        op.infer(attrs, [TensorInfo((1, 3, 4), f32), TensorInfo((1, 1, 3), f32),
                         TensorInfo((1,), i64)])  # fmt: skip
    with pytest.raises(RuntimeError, match="Expected a scalar"):
        b, s = opset1.parameter([1, 3, 4], np.float32), opset1.parameter([1, 1, 3], np.float32)
        OLD_NMS[version](b, s, const([1], np.int64))
    with pytest.raises(ShapeError, match="last dim must be 4"):
        op.infer(attrs, [TensorInfo((1, 3, 5), f32), TensorInfo((1, 1, 3), f32)])
    with pytest.raises(ShapeError, match="number of boxes"):
        op.infer(attrs, [TensorInfo((1, 3, 4), f32), TensorInfo((1, 1, 4), f32)])


def test_validate_checks_old_nms(tmp_path):
    model = one_op_model(old_nms_builder(4, per_class=2), [HAND_BOXES, HAND_SCORES])
    bad = saved(model, tmp_path, lambda t: t.replace('output_type="i64"', 'output_type="f32"'))
    found = layer_named(irrun.validate(bad), "NonMaxSuppression")
    assert [d.message for d in found] == ["output_type must be i32 or i64, got f32"]
    model = one_op_model(old_nms_builder(1, per_class=2), [HAND_BOXES, HAND_SCORES])
    bad = saved(model, tmp_path, lambda t: t.replace('box_encoding="corner"',
                                                     'box_encoding="diagonal"'))  # fmt: skip
    found = layer_named(irrun.validate(bad), "NonMaxSuppression")
    assert [d.code for d in found] == ["bad-attribute"]


# --------------------------------------------------------------------------- tie order


def test_nms_tie_order_matches_the_plugin(tmp_path):
    """Scores drawn from a few values (and values one ulp apart): selection among equal
    scores goes by lowest box index, the sorted output by batch, class, box index."""
    rng = np.random.default_rng(3)
    values = np.array([0.5, 0.25, 0.75, np.nextafter(np.float32(0.5), np.float32(1))],
                      np.float32)  # fmt: skip
    for _ in range(4):
        boxes = random_boxes(rng, 2, 20)
        scores = rng.choice(values, (2, 3, 20))
        for version in (5, 9):
            for descending in (True, False):
                got, want = run_nms(tmp_path, boxes, scores, version, per_class=6, iou=0.3,
                                    descending=descending)  # fmt: skip
                assert_close(got[0], want[0])
                assert_close(got[1], want[1])


def test_topk_tie_order_matches_the_reference(tmp_path):
    """TopK takes equal values lowest index first, as OpenVINO's reference kernel does
    (stable or not); the CPU plugin does so only for a stable TopK-11 sorted by value
    (with ``sort="index"`` and ``mode="min"`` even its stable TopK picks other ones
    among equal values)."""
    rng = np.random.default_rng(4)
    x = rng.choice(np.array([1, 2, 3], np.float32), (4, 40))
    for mode in ("max", "min"):
        for sort in ("value", "index"):
            for stable in (False, True):
                def build(a, mode=mode, sort=sort, stable=stable):
                    return opset11.topk(a, const(9, np.int64), 1, mode, sort, "i32", stable)

                model = one_op_model(build, [x], 2)
                got = run_saved(model, [x], tmp_path)
                plugin = stable and sort == "value"
                for want in [run_reference(model, [x])] + ([run_cpu(model, [x])] if plugin else []):
                    assert_close(got[0], want[0])
                    assert_close(got[1], want[1])


# --------------------------------------------------------------------------- ROIAlign sweep


def roi_inputs(seed, index_dtype=np.int32, dtype=np.float32):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((2, 3, 7, 9)).astype(dtype)
    corner = rng.uniform(-6, 16, (6, 2))
    rois = np.concatenate([corner, corner + rng.uniform(-1, 10, (6, 2))], 1).astype(dtype)
    rois[0] = [1, 1, 4, 3]  # inside the map
    rois[1] = [-4, -3, 5, 20]  # partly outside
    return [data, rois, rng.integers(0, 2, 6).astype(index_dtype)]


ROI_CASES = [(3, mode, "asymmetric") for mode in ("avg", "max")] + [
    (9, mode, aligned) for mode in ("avg", "max")
    for aligned in ("asymmetric", "half_pixel_for_nn", "half_pixel")
]  # fmt: skip


@pytest.mark.parametrize(("version", "mode", "aligned"), ROI_CASES)
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2, 3])
@pytest.mark.parametrize("seed", range(2))
def test_roi_align_matches_the_plugin(version, mode, aligned, sampling_ratio, seed, tmp_path):
    scale = (0.5, 1.0)[seed]
    inputs = roi_inputs(seed, (np.int32, np.int64)[seed])

    def build(data, rois, indices):
        if version == 3:
            return opset3.roi_align(data, rois, indices, 3, 2, sampling_ratio, scale, mode)
        return opset9.roi_align(data, rois, indices, 3, 2, sampling_ratio, scale, mode, aligned)

    got, want = run_both(build, inputs, tmp_path)
    # A region with y2 < y1 (or x2 < x1) in an aligned mode has adaptive bins of no
    # samples: the plugin averages them to NaN, the reference (and torchvision) to 0.
    empty = np.isnan(want)
    assert (got[empty] == 0).all()
    assert_close(got, np.where(empty, np.float32(0), want), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_f16(mode, tmp_path):
    inputs = roi_inputs(3, dtype=np.float16)

    def build(data, rois, indices):
        return opset9.roi_align(data, rois, indices, 2, 2, 0, 0.5, mode, "half_pixel")

    got, want = run_both(build, inputs, tmp_path)
    assert_close(got, want, rtol=1e-3, atol=1e-3)


# --------------------------------------------------------------------------- ROIAlign by hand


def roi_align(data, rois, indices, version=9, **attrs):
    values = dict(pooled_h=1, pooled_w=1, sampling_ratio=1, spatial_scale=1.0, mode="avg",
                  aligned_mode="asymmetric") | attrs  # fmt: skip
    op = resolve("ROIAlign", f"opset{version}")
    return op.kernel(SimpleNamespace(**values), np.asarray(data, np.float32),
                     np.asarray(rois, np.float32), np.asarray(indices, np.int32))[0]  # fmt: skip


MAP = np.array([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]], np.float32)


def test_roi_align_by_hand():
    # One sample at the centre (1, 1) of the region [0, 0]..[2, 2]: the pixel value 5.
    assert roi_align(MAP, [[0, 0, 2, 2]], [0]).tolist() == [[[[5.0]]]]
    # Centre (0.75, 1.25): bilinear between 1, 2, 4, 5 and 2, 3, 5, 6... = 2 + 0.75 + 1.25*3.
    assert roi_align(MAP, [[0.5, 1, 1, 1.5]], [0], aligned_mode="half_pixel_for_nn").tolist() == [
        [[[1 + 0.25 + 0.75 * 3]]]
    ]
    # half_pixel: ((x + 0.5) * 2 - 0.5) = 1 and 3 for x = 0.25, 1.25: the centre is at 2.
    got = roi_align(MAP, [[0.25, 0.25, 1.25, 1.25]], [0], spatial_scale=2.0,
                    aligned_mode="half_pixel")  # fmt: skip
    assert got.tolist() == [[[[9.0]]]]
    # asymmetric makes a point region 1x1: samples at 1.25 and 1.75 (value 1 + 3y + x).
    got = roi_align(MAP, [[1, 1, 1, 1]], [0], pooled_h=2, pooled_w=2, sampling_ratio=1)
    assert got.tolist() == [[[[6.0, 6.5], [7.5, 8.0]]]]
    # Adaptive sampling: a 2x2 bin takes 2x2 samples, at 0.5 and 1.5: their mean is the centre.
    assert roi_align(MAP, [[0, 0, 2, 2]], [0], sampling_ratio=0).tolist() == [[[[5.0]]]]
    assert roi_align(MAP, [[0, 0, 2, 2]], [0], sampling_ratio=0, mode="max").tolist() == [
        [[[7.0]]]  # the sample at (1.5, 1.5): (5 + 6 + 8 + 9) / 4
    ]


def test_roi_align_bins_without_samples_are_zero():
    # half_pixel_for_nn keeps y2 < y1: bins of height -0.5 take ceil(-0.5) = 0 samples.
    got = roi_align(MAP, [[0, 2, 2, 1]], [0], sampling_ratio=0, pooled_h=2,
                    aligned_mode="half_pixel_for_nn")  # fmt: skip
    assert got.tolist() == [[[[0.0], [0.0]]]]


def test_roi_align_edges_by_hand():
    # Samples beyond one pixel outside count 0; within it they are clamped to the border.
    assert roi_align(MAP, [[5, 5, 7, 7]], [0]).tolist() == [[[[0.0]]]]
    assert roi_align(MAP, [[-1.5, -1.5, 0.5, 0.5]], [0]).tolist() == [[[[1.0]]]]
    assert roi_align(MAP, [[2, 2, 4, 4]], [0]).tolist() == [[[[9.0]]]]  # centre (3, 3)
    # max starts from 0, as in the reference kernel (and the plugin).
    assert roi_align(-MAP, [[0, 0, 2, 2]], [0], mode="max").tolist() == [[[[0.0]]]]


def test_roi_align_max_of_negative_maps_is_zero_in_the_plugin(tmp_path):
    data, rois, indices = roi_inputs(0)
    data = -np.abs(data) - 1

    def build(d, r, i):
        return opset9.roi_align(d, r, i, 2, 2, 2, 1.0, "max", "asymmetric")

    got, want = run_both(build, [data, rois, indices], tmp_path)
    assert (want == 0).all() and (got == 0).all()


def test_roi_align_refuses_negative_sampling_ratio(tmp_path):
    inputs = roi_inputs(0)

    def build(d, r, i):
        return opset9.roi_align(d, r, i, 2, 2, -1, 1.0, "avg", "asymmetric")

    model = one_op_model(build, inputs)
    assert (run_cpu(model, inputs)[0] == 0).all()  # the plugin's zeros
    with pytest.raises(irrun.IrrunError, match="sampling_ratio -1 is negative"):
        run_saved(model, inputs, tmp_path)


def test_roi_align_empty_outputs(tmp_path):
    inputs = roi_inputs(0)
    inputs[1], inputs[2] = inputs[1][:0], inputs[2][:0]

    def build(d, r, i):
        return opset9.roi_align(d, r, i, 2, 2, 0, 1.0, "avg", "asymmetric")

    got, want = run_both(build, inputs, tmp_path)
    assert got.shape == want.shape == (0, 3, 2, 2)
    assert roi_align(MAP, [[0, 0, 2, 2]], [0], pooled_h=0).shape == (1, 1, 0, 1)


def test_roi_align_refuses_what_openvino_cannot_compute():
    with pytest.raises(ValueError, match="batch_indices"):
        roi_align(MAP, [[0, 0, 2, 2]], [1])
    with pytest.raises(ValueError, match="negative adaptive sampling ratio"):
        roi_align(MAP, [[4, 0, 0, 2]], [0], sampling_ratio=0, aligned_mode="half_pixel")
    with pytest.raises(ValueError, match="feature map of size"):
        roi_align(MAP[:, :, :0], [[0, 0, 2, 2]], [0])


# --------------------------------------------------------------------------- ROIAlign shapes


@pytest.mark.parametrize(("data", "rois", "indices"), [
    ([2, 3, 7, 9], [5, 4], [5]),
    ([-1, -1, -1, -1], [-1, 4], [-1]),
    ([2, 3, 7, 9], [-1, 4], [5]),
    ([2, (2, 4), 7, 9], [(1, 8), 4], [(3, 10)]),
])  # fmt: skip
def test_roi_align_shape_rule_matches_openvino(data, rois, indices):
    params = [opset1.parameter(ov.PartialShape(s), t)
              for s, t in ((data, ov.Type.f32), (rois, ov.Type.f32), (indices, ov.Type.i32))]  # fmt: skip
    node = opset9.roi_align(*params, 3, 2, 0, 0.5, "avg", "half_pixel")
    want = from_ov_shape(node.get_output_partial_shape(0))
    infos = [TensorInfo(from_ov_shape(p.get_output_partial_shape(0)),
                        ET["i32" if i == 2 else "f32"]) for i, p in enumerate(params)]  # fmt: skip
    attrs = SimpleNamespace(pooled_h=3, pooled_w=2, sampling_ratio=0, spatial_scale=0.5,
                            mode="avg", aligned_mode="half_pixel")  # fmt: skip
    got = resolve("ROIAlign", "opset9").infer(attrs, infos)
    assert got[0].shape == want and got[0].element_type.name == "f32"


@pytest.mark.parametrize(("shapes", "types", "says"), [
    (((2, 3, 7), (5, 4), (5,)), ("f32", "f32", "i32"), "data must be 4-D"),
    (((2, 3, 7, 9), (5, 5), (5,)), ("f32", "f32", "i32"), "rois' dim 1 must be 4"),
    (((2, 3, 7, 9), (5, 4), (6,)), ("f32", "f32", "i32"), "as many rows"),
    (((2, 3, 7, 9), (5, 4), (5, 1)), ("f32", "f32", "i32"), "batch_indices must be 1-D"),
    (((2, 3, 7, 9), (5, 4), (5,)), ("f32", "f16", "i32"), "same element type"),
    (((2, 3, 7, 9), (5, 4), (5,)), ("f32", "f32", "f32"), "does not take"),
    (((2, 3, 7, 9), (5, 4), (5,)), ("i32", "i32", "i32"), "does not take"),
])  # fmt: skip
def test_roi_align_shape_rule_errors(shapes, types, says):
    attrs = SimpleNamespace(pooled_h=3, pooled_w=2, sampling_ratio=0, spatial_scale=0.5,
                            mode="avg")  # fmt: skip
    infos = [TensorInfo(s, ET[t]) for s, t in zip(shapes, types, strict=True)]
    with pytest.raises(ShapeError, match=says):
        resolve("ROIAlign", "opset3").infer(attrs, infos)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def layer_named(found, type_name):
    return [d for d in found if d.layer is not None and d.layer.type == type_name]


def test_validate_names_the_layer(tmp_path):
    model = one_op_model(nms_builder(9, per_class=2), [HAND_BOXES, HAND_SCORES], 3)
    bad = saved(model, tmp_path, lambda t: t.replace('box_encoding="corner"',
                                                     'box_encoding="diagonal"'))  # fmt: skip
    found = layer_named(irrun.validate(bad), "NonMaxSuppression")
    assert [d.code for d in found] == ["bad-attribute"] and "box_encoding" in found[0].message
    bad = saved(model, tmp_path, lambda t: t.replace('output_type="i64"', 'output_type="i16"'))
    found = layer_named(irrun.validate(bad), "NonMaxSuppression")
    assert [d.message for d in found] == ["output_type must be i32 or i64, got i16"]

    # The bound is min(3 boxes, 2) * 1 * 1 = 2: a declared 7 cannot be.
    def wrong_dim(text):
        return re.sub(r'(precision="I64" names="out0">\s*<dim>)-1(</dim>)', r"\g<1>7\2", text)

    found = layer_named(irrun.validate(saved(model, tmp_path, wrong_dim)), "NonMaxSuppression")
    assert len(found) == 1 and found[0].level == "error" and "7" in found[0].message

    inputs = roi_inputs(0)
    model = one_op_model(
        lambda d, r, i: opset9.roi_align(d, r, i, 3, 2, 0, 0.5, "avg", "half_pixel"), inputs
    )
    bad = saved(model, tmp_path, lambda t: t.replace('mode="avg"', 'mode="sum"'))
    found = layer_named(irrun.validate(bad), "ROIAlign")
    assert [d.code for d in found] == ["bad-attribute"] and "mode" in found[0].message
    bad = saved(model, tmp_path, lambda t: t.replace('aligned_mode="half_pixel"',
                                                     'aligned_mode="half"'))  # fmt: skip
    assert [d.code for d in layer_named(irrun.validate(bad), "ROIAlign")] == ["bad-attribute"]
    bad = saved(model, tmp_path, lambda t: t.replace('pooled_h="3"', 'pooled_h="-1"'))
    found = layer_named(irrun.validate(bad), "ROIAlign")
    assert [d.code for d in found] == ["bad-attribute"]
    assert "must not be negative" in found[0].message
    # A negative sampling_ratio loads in OpenVINO, whose kernels then refuse it or give
    # zeros: validate says so, rather than the run alone.
    bad = saved(model, tmp_path, lambda t: t.replace('sampling_ratio="0"', 'sampling_ratio="-1"'))
    found = layer_named(irrun.validate(bad), "ROIAlign")
    assert [d.code for d in found] == ["bad-attribute"]
    assert "sampling_ratio -1 is negative" in found[0].message


# --------------------------------------------------------------------------- torchvision

EXPECTED = np.load(MODELS / "expected.npz")


def run_model(name, case=None):
    case = case or name
    inputs = [EXPECTED[f"{case}.in0"], EXPECTED[f"{case}.in1"]]
    model = irrun.load(MODELS / f"{name}.xml")
    got = list(model.run(dict(zip([p.name for p in model.inputs], inputs, strict=True))).values())
    want = CORE.compile_model(MODELS / f"{name}.xml", "CPU", CPU_CONFIG)(inputs)[0]
    return got[0], np.asarray(want), EXPECTED[f"{case}.out"]


def test_torchvision_nms():
    got, plugin, torch_out = run_model("nms")
    assert_close(got, plugin)
    np.testing.assert_array_equal(got, torch_out)


def test_torchvision_nms_keeps_a_box_at_the_threshold():
    """torchvision suppresses above the IoU threshold only, as NonMaxSuppression-9's
    reference does; the plugin also drops the box whose IoU equals it."""
    got, plugin, torch_out = run_model("nms", "nms_tie")
    assert got.tolist() == torch_out.tolist() == [0, 1, 2]
    assert plugin.tolist() == [0, 2]


def test_torchvision_roi_align():
    got, plugin, torch_out = run_model("roi_heads")
    assert_close(got, plugin, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, torch_out, rtol=1e-5, atol=1e-6)


def test_torchvision_default_sampling_ratio_is_refused():
    """torchvision's roi_align default (sampling_ratio=-1, adaptive) converts to
    sampling_ratio="-1", which the reference kernel refuses and the plugin turns
    into zeros: irrun refuses it too, with a message that says why."""
    inputs = [EXPECTED["roi_default.in0"], EXPECTED["roi_default.in1"]]
    with pytest.raises(irrun.IrrunError, match="sampling_ratio -1"):
        irrun.load(MODELS / "roi_default.xml")
    plugin = CORE.compile_model(MODELS / "roi_default.xml", "CPU", CPU_CONFIG)(inputs)[0]
    assert (plugin == 0).all() and np.abs(EXPECTED["roi_default.out"]).max() > 0.1


# --------------------------------------------------------------------------- ROIAlignRotated


def rotated_inputs(seed, index_dtype=np.int32, dtype=np.float32):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((2, 3, 7, 9)).astype(dtype)
    rois = np.concatenate([rng.uniform(-3, 12, (7, 2)), rng.uniform(0, 9, (7, 2)),
                           rng.uniform(-4, 4, (7, 1))], 1).astype(dtype)  # fmt: skip
    rois[0] = [4, 3, 4, 2, 0]  # inside the map, upright
    rois[1] = [4, 3, 0, 2, 1]  # no width: no samples with adaptive sampling
    return [data, rois, rng.integers(0, 2, 7).astype(index_dtype)]


@pytest.mark.parametrize("clockwise", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2, 3])
@pytest.mark.parametrize("seed", range(2))
def test_roi_align_rotated_matches_the_plugin(clockwise, sampling_ratio, seed, tmp_path):
    scale = (0.5, 1.0)[seed]
    inputs = rotated_inputs(seed, (np.int32, np.int64)[seed])

    def build(data, rois, indices):
        return opset15.roi_align_rotated(data, rois, indices, 3, 2, sampling_ratio, scale,
                                         clockwise)  # fmt: skip

    got, want = run_both(build, inputs, tmp_path)
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_roi_align_rotated_other_types(dtype, tmp_path):
    inputs = rotated_inputs(3, dtype=dtype)

    def build(data, rois, indices):
        return opset15.roi_align_rotated(data, rois, indices, 2, 2, 0, 0.5, True)

    got, want = run_both(build, inputs, tmp_path)
    assert got.dtype == want.dtype == dtype
    assert_close(got, want, rtol=1e-3, atol=1e-3)


def roi_align_rotated(data, rois, indices, **attrs):
    values = dict(pooled_h=1, pooled_w=1, sampling_ratio=1, spatial_scale=1.0,
                  clockwise_mode=False) | attrs  # fmt: skip
    op = resolve("ROIAlignRotated", "opset15")
    return op.kernel(SimpleNamespace(**values), np.asarray(data, np.float32),
                     np.asarray(rois, np.float32), np.asarray(indices, np.int32))[0]  # fmt: skip


def test_roi_align_rotated_by_hand():
    # The centre (1.5, 1.5) - 0.5 is the pixel (1, 1): 5, at any angle.
    assert roi_align_rotated(MAP, [[1.5, 1.5, 2, 2, 0.7]], [0]).tolist() == [[[[5.0]]]]
    # A 2x1 box of two bins along x at the centre (1, 1): samples at x = 0.5 and 1.5,
    # values 4.5 and 5.5; turned by pi/2 counterclockwise the samples lie along y
    # (y = -px sin): y = 1.5 and 0.5, values 6.5 and 3.5.  Clockwise the other way.
    rois = [[1.5, 1.5, 2, 1, 0.0]]
    assert roi_align_rotated(MAP, rois, [0], pooled_w=2).tolist() == [[[[4.5, 5.5]]]]
    quarter = [[1.5, 1.5, 2, 1, np.pi / 2]]
    got = roi_align_rotated(MAP, quarter, [0], pooled_w=2)
    np.testing.assert_allclose(got, [[[[6.5, 3.5]]]], rtol=1e-6)
    got = roi_align_rotated(MAP, quarter, [0], pooled_w=2, clockwise_mode=True)
    np.testing.assert_allclose(got, [[[[3.5, 6.5]]]], rtol=1e-6)
    # A box of no size with adaptive sampling has no samples; a negative one is refused.
    assert roi_align_rotated(MAP, [[1, 1, 0, 2, 0]], [0], sampling_ratio=0).tolist() == [
        [[[0.0]]]
    ]
    with pytest.raises(ValueError, match="negative adaptive sampling ratio"):
        roi_align_rotated(MAP, [[1, 1, -2, 2, 0]], [0], sampling_ratio=0)


@pytest.mark.parametrize(("data", "rois", "indices"), [
    ([2, 3, 7, 9], [5, 5], [5]),
    ([-1, -1, -1, -1], [-1, 5], [-1]),
    ([2, 3, 7, 9], [-1, 5], [5]),
    ([2, (2, 4), 7, 9], [(1, 8), 5], [(3, 10)]),
    (None, None, None),
])  # fmt: skip
def test_roi_align_rotated_shape_rule_matches_openvino(data, rois, indices):
    def pshape(s):
        return ov.PartialShape.dynamic() if s is None else ov.PartialShape(s)

    params = [opset1.parameter(pshape(s), t)
              for s, t in ((data, ov.Type.f32), (rois, ov.Type.f32), (indices, ov.Type.i32))]  # fmt: skip
    node = opset15.roi_align_rotated(*params, 3, 2, 0, 0.5, True)
    want = from_ov_shape(node.get_output_partial_shape(0))
    infos = [TensorInfo(None if s is None else from_ov_shape(pshape(s)),
                        ET["i32" if i == 2 else "f32"])
             for i, s in enumerate((data, rois, indices))]  # fmt: skip
    attrs = SimpleNamespace(pooled_h=3, pooled_w=2, sampling_ratio=0, spatial_scale=0.5,
                            clockwise_mode=True)  # fmt: skip
    got = resolve("ROIAlignRotated", "opset15").infer(attrs, infos)
    assert got[0].shape == want and got[0].element_type.name == "f32"


@pytest.mark.parametrize(("shapes", "types", "says"), [
    (((2, 3, 7), (5, 5), (5,)), ("f32", "f32", "i32"), "data must be 4-D"),
    (((2, 3, 7, 9), (5, 4), (5,)), ("f32", "f32", "i32"), "rois' dim 1 must be 5"),
    (((2, 3, 7, 9), (5, 5), (6,)), ("f32", "f32", "i32"), "as many rows"),
    (((2, 3, 7, 9), (5, 5), (5, 1)), ("f32", "f32", "i32"), "batch_indices must be 1-D"),
    (((2, 3, 7, 9), (5, 5), (5,)), ("f32", "f16", "i32"), "same element type"),
    (((2, 3, 7, 9), (5, 5), (5,)), ("f32", "f32", "f32"), "does not take"),
])  # fmt: skip
def test_roi_align_rotated_shape_rule_errors(shapes, types, says):
    attrs = SimpleNamespace(pooled_h=3, pooled_w=2, sampling_ratio=0, spatial_scale=0.5,
                            clockwise_mode=False)  # fmt: skip
    infos = [TensorInfo(s, ET[t]) for s, t in zip(shapes, types, strict=True)]
    with pytest.raises(ShapeError, match=says):
        resolve("ROIAlignRotated", "opset15").infer(attrs, infos)
    if says.startswith(("data", "rois", "as many", "batch")):
        params = [opset1.parameter(list(s), getattr(ov.Type, t))
                  for s, t in zip(shapes, types, strict=True)]  # fmt: skip
        with pytest.raises(RuntimeError):
            opset15.roi_align_rotated(*params, 3, 2, 0, 0.5, False)


def test_validate_checks_roi_align_rotated(tmp_path):
    inputs = rotated_inputs(0)
    model = one_op_model(lambda d, r, i: opset15.roi_align_rotated(d, r, i, 2, 2, 1, 1.0, False),
                         inputs)  # fmt: skip
    bad = saved(model, tmp_path, lambda t: t.replace('sampling_ratio="1"', 'sampling_ratio="-2"'))
    found = layer_named(irrun.validate(bad), "ROIAlignRotated")
    assert len(found) == 1 and "sampling_ratio -2 is negative" in found[0].message


@settings(max_examples=20, deadline=None)
@given(
    ph=st.integers(1, 4), pw=st.integers(1, 4), ratio=st.integers(0, 3),
    scale=st.sampled_from([1.0, 0.5, 0.25]), h=st.integers(1, 10), w=st.integers(1, 10),
    count=st.integers(1, 6), clockwise=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_roi_align_rotated_sweep(ph, pw, ratio, scale, h, w, count, clockwise, seed,
                                 tmp_path_factory):  # fmt: skip
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((2, 3, h, w)).astype(np.float32)
    span = max(h, w) / scale
    rois = np.concatenate([rng.uniform(-0.2 * span, 1.2 * span, (count, 2)),
                           rng.uniform(0, span, (count, 2)),
                           rng.uniform(-7, 7, (count, 1))], 1).astype(np.float32)  # fmt: skip
    indices = rng.integers(0, 2, count).astype(np.int32)

    def build(d, r, i):
        return opset15.roi_align_rotated(d, r, i, ph, pw, ratio, scale, clockwise)

    got, want = run_both(build, [data, rois, indices], tmp_path_factory.mktemp("rot"))
    assert_close(got, want, rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------- element types

NMS_FACTORIES = {**OLD_NMS, 5: opset5.non_max_suppression, 9: opset9.non_max_suppression}


def _typed_params(types, shapes):
    out = []
    for i, (t, shape) in enumerate(zip(types, shapes, strict=True)):
        p = opset1.parameter(shape, getattr(ov.Type, t), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        out.append(p)
    return out


def _nms_model(version, types):
    """NMS of ``version`` with all its inputs parameters of ``types``."""
    count = 6 if version in (5, 9) else 5
    params = _typed_params(types[:count], [[2, 6, 4], [2, 3, 6]] + [[]] * (count - 2))
    node = NMS_FACTORIES[version](*params)
    outputs = 3 if version in (5, 9) else 1
    return ov.Model([node.output(k) for k in range(outputs)], params, "nms")


def _nms_inputs(version, et, count_type="i64", seed=0):
    rng = np.random.default_rng(seed)
    dtype = ET[et].dtype
    boxes = np.round(random_boxes(rng, 2, 6) * 8).astype(dtype) / dtype.type(8)
    scores = (np.round(rng.random((2, 3, 6)) * 64) / 64).astype(dtype)
    rest = [np.array(3, ET[count_type].dtype), np.array(0.5, dtype), np.array(0.25, dtype)]
    if version in (5, 9):
        rest.append(np.array(0.0, dtype))
    return [boxes.astype(dtype), scores, *rest]


def _compare_nms(version, got, want):
    if version in (1, 3):  # the plugin's extra rows (see test_old_nms_matches_the_plugin)
        got, want = got[:1], [want[0][: len(got[0])]]
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


@pytest.mark.parametrize("version", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("et", ["f32", "f16", "bf16"])
def test_nms_float_types_match_the_plugin(version, et, tmp_path):
    """Boxes, scores and thresholds of each float type NMS takes (not f64: versions 5 and
    9 refuse it, and the plugin runs none in it), values that every type holds."""
    inputs = _nms_inputs(version, et)
    types = [et, et, "i64"] + [et] * (len(inputs) - 3)
    model = _nms_model(version, types)
    got = run_irrun(model, inputs, tmp_path)
    _compare_nms(version, got, run_openvino(model, inputs, types, "cpu"))


@pytest.mark.parametrize("version", [1, 3, 4, 5, 9])
@pytest.mark.parametrize("count_type", NMS_COUNTS)
def test_nms_count_types(version, count_type, tmp_path):
    """max_output_boxes_per_class of every type it takes (OpenVINO checks none; its value
    counts, truncated): as the plugin selects with the same count as i64."""
    inputs = _nms_inputs(version, "f32", count_type)
    if count_type == "boolean":
        inputs[2] = np.array(True)
    types = ["f32", "f32", count_type] + ["f32"] * (len(inputs) - 3)
    got = run_irrun(_nms_model(version, types), inputs, tmp_path)
    as_i64 = [*inputs[:2], np.array(int(inputs[2]), np.int64), *inputs[3:]]
    i64_types = [*types[:2], "i64", *types[3:]]
    want = run_openvino(_nms_model(version, i64_types), as_i64, i64_types, "cpu")
    _compare_nms(version, got, want)


ROI_BUILDERS = {
    "ROIAlign-v3": lambda d, r, i: opset3.roi_align(d, r, i, 2, 2, 2, 0.5, "avg"),
    "ROIAlign-v9": lambda d, r, i: opset9.roi_align(d, r, i, 2, 2, 0, 0.5, "max", "half_pixel"),
    "ROIAlignRotated-v15": lambda d, r, i: opset15.roi_align_rotated(d, r, i, 2, 2, 0, 0.5, True),
}


def _roi_model(label, types):
    columns = 5 if "Rotated" in label else 4
    params = _typed_params(types, [[2, 3, 7, 9], [6, columns], [6]])
    return ov.Model([ROI_BUILDERS[label](*params)], params, "roi")


def _roi_inputs(label, et="f32", index_type="i32"):
    make = rotated_inputs if "Rotated" in label else roi_inputs
    data, rois, indices = make(5, dtype=np.float32)
    dtype = ET[et].dtype
    return [data.astype(dtype), np.round(rois[:6] * 4).astype(dtype) / dtype.type(4),
            indices[:6].astype(ET[index_type].dtype)]  # fmt: skip


@pytest.mark.parametrize("label", ROI_BUILDERS)
@pytest.mark.parametrize("et", FLOATS)
def test_roi_align_data_types_match_the_plugin(label, et, tmp_path):
    """Every float type of data and regions: computed in f32 (f64 in f64) and rounded
    once; the plugin computes all in f32 and rounds its result.  (The plugin aborts on a
    bf16 ROIAlignRotated: there its f32 result on the same values is rounded here.)"""
    inputs = _roi_inputs(label, et)
    types = [et, et, "i32"]
    model = _roi_model(label, types)
    (got,) = run_irrun(model, inputs, tmp_path)
    if et == "bf16" and "Rotated" in label:
        wide = [x.astype(np.float32) for x in inputs[:2]] + inputs[2:]
        wide_types = ["f32", "f32", "i32"]
        (want,) = run_openvino(_roi_model(label, wide_types), wide, wide_types, "cpu")
        want = want.astype(ET[et].dtype)
    else:
        (want,) = run_openvino(model, inputs, types, "cpu")
    assert got.dtype == want.dtype == ET[et].dtype
    rtol = {"f16": 1e-3, "bf16": 2**-7}.get(et, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol, err_msg=et)  # fmt: skip


@pytest.mark.parametrize("label", ROI_BUILDERS)
@pytest.mark.parametrize("index_type", BATCH_INDICES)
def test_roi_align_index_types(label, index_type, tmp_path):
    """batch_indices of every integral type: as the plugin pools with the same indices
    as i32 (it runs few of the packed types itself)."""
    inputs = _roi_inputs(label, "f32", index_type)
    (got,) = run_irrun(_roi_model(label, ["f32", "f32", index_type]), inputs, tmp_path)
    as_i32 = [*inputs[:2], inputs[2].astype(np.int32)]
    wide_types = ["f32", "f32", "i32"]
    (want,) = run_openvino(_roi_model(label, wide_types), as_i32, wide_types, "cpu")
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("label", "port", "bad"), [
    ("NonMaxSuppression-v1", 0, "f64"), ("NonMaxSuppression-v3", 1, "i32"),
    ("NonMaxSuppression-v4", 3, "f64"), ("NonMaxSuppression-v5", 0, "f64"),
    ("NonMaxSuppression-v9", 2, "string"), ("NonMaxSuppression-v9", 5, "i64"),
    ("ROIAlign-v3", 0, "i32"), ("ROIAlign-v9", 2, "f32"), ("ROIAlignRotated-v15", 2, "boolean"),
])  # fmt: skip
def test_types_not_taken_are_found(label, port, bad, tmp_path):
    if label.startswith("NonMax"):
        version = int(label.split("-v")[1])
        model = _nms_model(version, ["f32", "f32", "i64", "f32", "f32", "f32"])
    else:
        model = _roi_model(label, ["f32", "f32", "i32"])
    found = [str(d) for d in refusals(model, tmp_path, {port: bad})
             if "does not take" in d.message]  # fmt: skip
    assert len(found) == 1 and f"input {port} is {bad}, which {label} does not take" in found[0]
