"""MulticlassNms-8 and -9, MatrixNms-8 and NMSRotated-13 against OpenVINO's CPU plugin, by hand, and their shape rules.

``ov.Model.evaluate`` cannot run either (OpenVINO's core has no evaluate for them), so the
values are compared with the CPU plugin.  MulticlassNms scores are drawn from multiples of
1/8, so that ties are frequent and exact (the plugin's sorts treat scores within 1e-6 as
equal, which irrun does not; see ``irrun/ops/nms_family.py``), and all outputs are
compared exactly: the selected scores and boxes are input values.  MatrixNms scores are
drawn without ties within a class (the plugin's order among equal scores is unspecified),
and its decayed scores compared to rtol 1e-6 (gaussian decays go through exp).
NMSRotated is compared exactly: its scores are input scores, and its IoUs (which differ
from OpenVINO's by rounding) decide nothing in random data.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset8, opset9, opset13
from support.ov_oneop import assert_close, one_op_model, run_both, run_saved
from support.ov_shapes import from_ov_shape

import irrun
from irrun.ir import element_types
from irrun.ir.dims import Interval
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES
OUTPUTS = ("selected_outputs", "selected_indices", "valid_outputs")


def assert_same(got, want):
    for name, g, w in zip(OUTPUTS, got, want, strict=True):
        assert_close(g, w, what=name)


def random_case(rng, images, classes, m, rois=False, dtype=np.float32):
    """Boxes [x1, y1, x2, y2] (some reversed or empty), scores in multiples of 1/8, and for
    the roisnum form the counts of the images (zeros included)."""
    lead = (classes, m) if rois else (images, m)
    corner = rng.random((*lead, 2)) * 4
    size = rng.random((*lead, 2)) * 3 * rng.choice([1, 1, 1, -0.2, 0], size=(*lead, 1))
    boxes = np.concatenate([corner, corner + size], -1).astype(dtype)
    scores = (np.round(rng.random((classes, m) if rois else (images, classes, m)) * 8) / 8)
    if not rois:
        return [boxes, scores.astype(dtype)]
    cuts = np.sort(rng.integers(0, m + 1, images))
    counts = np.diff(np.concatenate([[0], cuts]))
    return [boxes, scores.astype(dtype), counts]


ATTRS = st.fixed_dictionaries({
    "sort_result_type": st.sampled_from(["none", "score", "classid"]),
    "sort_result_across_batch": st.booleans(),
    "output_type": st.sampled_from(["i32", "i64"]),
    "iou_threshold": st.sampled_from([0.0, 0.25, 0.5, 0.7, 1.0]),
    "score_threshold": st.sampled_from([0.0, 0.2, 0.55]),
    "nms_top_k": st.sampled_from([-1, 0, 1, 3, 20]),
    "keep_top_k": st.sampled_from([-1, 0, 2, 5]),
    "background_class": st.sampled_from([-1, 0, 2, 7]),
    "nms_eta": st.sampled_from([1.0, 0.9, 0.5, 0.0]),
    "normalized": st.booleans(),
})  # fmt: skip


def multiclass(version, **kw):
    factory = opset8.multiclass_nms if version == 8 else opset9.multiclass_nms
    return lambda *inputs: factory(*inputs, **kw)


@settings(max_examples=40, deadline=None)
@given(attrs=ATTRS, version=st.sampled_from([8, 9]), seed=st.integers(0, 2**32 - 1),
       dims=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 9)))  # fmt: skip
def test_shared_boxes_match_the_plugin(attrs, version, seed, dims, tmp_path_factory):
    if attrs["nms_top_k"] == 0:
        attrs["nms_top_k"] = -1  # the plugin leaves its outputs unwritten
    inputs = random_case(np.random.default_rng(seed), *dims)
    got, want = run_both(multiclass(version, **attrs), inputs, tmp_path_factory.mktemp("m"), 3)
    assert_same(got, want)


@settings(max_examples=40, deadline=None)
@given(attrs=ATTRS, seed=st.integers(0, 2**32 - 1), rois_type=st.sampled_from([np.int32, np.int64]),
       dims=st.tuples(st.integers(1, 4), st.integers(1, 4), st.integers(1, 9)))  # fmt: skip
def test_roisnum_form_matches_the_plugin(attrs, seed, rois_type, dims, tmp_path_factory):
    if attrs["nms_top_k"] == 0:
        attrs["nms_top_k"] = -1
    boxes, scores, counts = random_case(np.random.default_rng(seed), *dims, rois=True)
    inputs = [boxes, scores, counts.astype(rois_type)]
    got, want = run_both(multiclass(9, **attrs), inputs, tmp_path_factory.mktemp("m"), 3)
    assert_same(got, want)


@pytest.mark.parametrize("version", [8, 9])
def test_f16_matches_the_plugin(version, tmp_path):
    inputs = random_case(np.random.default_rng(3), 2, 3, 8, dtype=np.float16)
    got, want = run_both(multiclass(version, iou_threshold=0.4, sort_result_type="score",
                                    sort_result_across_batch=True), inputs, tmp_path, 3)  # fmt: skip
    assert got[0].dtype == np.float16
    assert_same(got, want)


def test_tie_order_matches_the_plugin(tmp_path):
    """Equal scores everywhere: per image by class, then box; across images by image."""
    rng = np.random.default_rng(0)
    boxes = np.concatenate([np.arange(6)[:, None] * 3.0 + np.zeros((6, 2)),
                            np.arange(6)[:, None] * 3.0 + 1 + np.zeros((6, 2))], 1)  # fmt: skip
    boxes = np.stack([boxes, boxes[::-1]]).astype(np.float32)
    scores = np.full((2, 3, 6), 0.5, np.float32)
    scores[1, 1, rng.integers(0, 6, 3)] = 0.75
    for sort in ("none", "score", "classid"):
        for across in (False, True):
            for keep in (-1, 4):
                got, want = run_both(multiclass(8, sort_result_type=sort, keep_top_k=keep,
                                                sort_result_across_batch=across, iou_threshold=0.5),
                                     [boxes, scores], tmp_path, 3)  # fmt: skip
                assert_same(got, want)


# --------------------------------------------------------------------------- by hand

HAND_BOXES = np.array([[[0, 0, 2, 2], [1, 1, 3, 3], [0, 0, 2, 2.2]]], np.float32)
HAND_SCORES = np.array([[[0.9, 0.8, 0.7], [0.1, 0.6, 0.95]]], np.float32)


@pytest.mark.parametrize(("attrs", "rows"), [
    # class 0: b0 kept, b1 (IoU 1/7 with b0) kept, b2 (IoU 4/4.4 with b0) dropped;
    # class 1: b2 kept, b1 (IoU 1.2/7.2 with b2) kept, b0 dropped.
    ({}, [(1, 0.95, 2), (0, 0.9, 0), (0, 0.8, 1), (1, 0.6, 1)]),
    ({"sort_result_type": "classid"}, [(0, 0.9, 0), (0, 0.8, 1), (1, 0.95, 2), (1, 0.6, 1)]),
    ({"keep_top_k": 3}, [(1, 0.95, 2), (0, 0.9, 0), (0, 0.8, 1)]),
    ({"background_class": 0}, [(1, 0.95, 2), (1, 0.6, 1)]),
    ({"score_threshold": 0.85}, [(1, 0.95, 2), (0, 0.9, 0)]),
    ({"nms_top_k": 1}, [(1, 0.95, 2), (0, 0.9, 0)]),
    # IoU threshold 0.95: nothing overlaps that much, every box stays.
    ({"iou_threshold": 0.95, "sort_result_type": "classid"},
     [(0, 0.9, 0), (0, 0.8, 1), (0, 0.7, 2), (1, 0.95, 2), (1, 0.6, 1), (1, 0.1, 0)]),
])  # fmt: skip
def test_by_hand(attrs, rows, tmp_path):
    attrs = {"iou_threshold": 0.5, **attrs}
    model = one_op_model(multiclass(8, **attrs), [HAND_BOXES, HAND_SCORES], 3)
    out, index, valid = run_saved(model, [HAND_BOXES, HAND_SCORES], tmp_path)
    want = np.array([[c, s, *HAND_BOXES[0, b]] for c, s, b in rows], np.float32)
    np.testing.assert_array_equal(out, want)
    assert index.ravel().tolist() == [b for _, _, b in rows] and valid.tolist() == [len(rows)]


def test_by_hand_roisnum_form(tmp_path):
    """Two images of the per-class boxes: image 0 owns box 0, image 1 boxes 1 and 2; the
    index is (box + first box of the image) * classes + class."""
    boxes = np.concatenate([HAND_BOXES, HAND_BOXES])
    scores = HAND_SCORES[0]
    inputs = [boxes, scores, np.array([1, 2], np.int64)]
    model = one_op_model(multiclass(9, iou_threshold=0.5), inputs, 3)
    out, index, valid = run_saved(model, inputs, tmp_path)
    # image 0: b0 in both classes; image 1: class 0 b1, b2 (IoU 1.2/7.2); class 1 b2, b1.
    rows = [(0, 0.9, 0), (1, 0.1, 0), (1, 0.95, 2), (0, 0.8, 1), (0, 0.7, 2), (1, 0.6, 1)]
    assert out[:, :2].tolist() == [[c, np.float32(s)] for c, s, _ in rows]
    assert index.ravel().tolist() == [b * 2 + c for c, _, b in rows] and valid.tolist() == [2, 4]


def test_nms_eta_shrinks_the_threshold(tmp_path):
    """Threshold 0.9 then 0.45 after the first selection: b1 (IoU 0.58 with b0) is dropped,
    though it would stay with nms_eta = 1."""
    boxes = np.array([[[0, 0, 2, 2], [0, 0.5, 2, 2.5], [5, 5, 6, 6]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.7]]], np.float32)
    for eta, kept in ((1.0, [0, 1, 2]), (0.5, [0, 2])):
        model = one_op_model(multiclass(8, iou_threshold=0.9, nms_eta=eta), [boxes, scores], 3)
        got = run_saved(model, [boxes, scores], tmp_path)
        assert got[1].ravel().tolist() == kept
        got, want = run_both(multiclass(8, iou_threshold=0.9, nms_eta=eta), [boxes, scores],
                             tmp_path, 3)  # fmt: skip
        assert_same(got, want)


def test_score_at_the_threshold_meets_every_selected_box(tmp_path):
    """Box 2 scores exactly score_threshold and overlaps box 0 (IoU 4/4.2), not box 1:
    irrun drops it, as the plugin does with nms_eta = 1; with nms_eta < 1 the plugin
    (like the reference) compares it with the last selected box only and keeps it."""
    boxes = np.array([[[0, 0, 2, 2], [5, 5, 6, 6], [0, 0, 2, 2.1]]], np.float32)
    scores = np.array([[[0.9, 0.8, 0.5]]], np.float32)
    for eta, plugin in ((1.0, [0, 1]), (0.99, [0, 1, 2])):
        build = multiclass(8, iou_threshold=0.5, score_threshold=0.5, nms_eta=eta)
        got, want = run_both(build, [boxes, scores], tmp_path, 3)
        assert got[1].ravel().tolist() == [0, 1] and want[1].ravel().tolist() == plugin


# --------------------------------------------------------------------------- shapes


def shapes(version, boxes, scores, rois=None, **attrs):
    params = [opset1.parameter(ov.PartialShape(boxes), ov.Type.f32),
              opset1.parameter(ov.PartialShape(scores), ov.Type.f32)]  # fmt: skip
    if rois is not None:
        params.append(opset1.parameter(ov.PartialShape(rois), ov.Type.i32))
    node = multiclass(version, **attrs)(*params)
    want = [from_ov_shape(o.get_partial_shape()) for o in node.outputs()]
    full = dict(sort_result_type="none", sort_result_across_batch=False, output_type=ET["i32"],
                iou_threshold=0.0, score_threshold=0.0, nms_top_k=-1, keep_top_k=-1,
                background_class=-1, nms_eta=1.0, normalized=True)  # fmt: skip
    full.update({k: ET[v] if k == "output_type" else v for k, v in attrs.items()})
    infos = [TensorInfo(from_ov_shape(p.get_output_partial_shape(0)), ET["i32" if i == 2 else "f32"])
             for i, p in enumerate(params)]  # fmt: skip
    op = resolve("MulticlassNms", f"opset{version}")
    got = [o.shape for o in op.infer(SimpleNamespace(**full), infos)]
    return got, want


@pytest.mark.parametrize(("args", "attrs", "selected"), [
    (([2, 6, 4], [2, 3, 6]), {}, Interval(0, 36)),
    (([2, 6, 4], [2, 3, 6]), {"nms_top_k": 4}, Interval(0, 24)),
    (([2, 6, 4], [2, 3, 6]), {"nms_top_k": 4, "keep_top_k": 5}, Interval(0, 10)),
    (([2, 6, 4], [2, 3, 6]), {"keep_top_k": 50, "background_class": 1}, Interval(0, 36)),
    (([2, 6, 4], [2, 3, 6]), {"keep_top_k": 0}, 0),
    (([2, -1, 4], [2, 3, -1]), {}, Interval(0, None)),
    # OpenVINO takes min(max length, nms_top_k) of an unbounded dim as -1: no bound.
    (([2, -1, 4], [2, 3, -1]), {"nms_top_k": 3}, Interval(0, 18)),
    (([(1, 3), 6, 4], [(1, 3), 3, 6]), {}, Interval(0, 54)),
    (([3, 6, 4], [3, 6], [2]), {}, Interval(0, 36)),
    (([3, 6, 4], [3, 6], [-1]), {}, Interval(0, None)),
    (([3, 6, 4], [3, 6], [4]), {"keep_top_k": 2}, Interval(0, 8)),
])  # fmt: skip
def test_shape_rule_matches_openvino(args, attrs, selected):
    version = 9 if len(args) == 3 else 8
    got, want = shapes(version, *args, **attrs)
    assert got[0][0] == got[1][0] == selected
    if args[0][1] == -1 and "nms_top_k" in attrs:
        assert [shape[0] for shape in want[:2]] == [Interval(0, None)] * 2
        want = got
    assert got == want


@pytest.mark.parametrize(("args", "says"), [
    (([2, 6], [2, 3, 6]), "boxes must be 3-D"),
    (([2, 6, 4], [2, 6]), "scores must be"),
    (([2, 6, 5], [2, 3, 6]), "last dim must be 4"),
    (([2, 6, 4], [3, 3, 6]), "dim 0"),
    (([2, 6, 4], [2, 3, 7]), "number of boxes"),
    (([2, 6, 4], [2, 3, 6], [2]), "scores must be"),
    (([2, 6, 4], [2, 6], [2, 1]), "roisnum must be 1-D"),
])  # fmt: skip
def test_shape_rule_errors(args, says):
    op = resolve("MulticlassNms", "opset9")
    attrs = SimpleNamespace(output_type=ET["i64"], nms_top_k=-1, keep_top_k=-1,
                            background_class=-1)  # fmt: skip
    infos = [TensorInfo(s, ET["i32" if i == 2 else "f32"]) for i, s in enumerate(args)]
    with pytest.raises(ShapeError, match=says):
        op.infer(attrs, infos)
    with pytest.raises(RuntimeError):
        shapes(9, *args)


def test_empty_inputs_select_nothing(tmp_path):
    """No boxes: nothing selected, each image counts 0 (the plugin leaves valid_outputs
    unwritten)."""
    inputs = [np.zeros((2, 0, 4), np.float32), np.zeros((2, 0), np.float32),
              np.zeros(3, np.int32)]  # fmt: skip
    model = one_op_model(multiclass(9), inputs, 3)
    out, index, valid = run_saved(model, inputs, tmp_path)
    assert out.shape == (0, 6) and index.shape == (0, 1) and valid.tolist() == [0, 0, 0]


# --------------------------------------------------------------------------- MatrixNms

MATRIX_ATTRS = st.fixed_dictionaries({
    "sort_result_type": st.sampled_from(["none", "score", "classid"]),
    "sort_result_across_batch": st.booleans(),
    "output_type": st.sampled_from(["i32", "i64"]),
    "score_threshold": st.sampled_from([0.0, 0.2, 0.55]),
    "post_threshold": st.sampled_from([0.0, 0.1, 0.3]),
    "nms_top_k": st.sampled_from([-1, 1, 3, 20]),
    "keep_top_k": st.sampled_from([-1, 2, 5]),
    "background_class": st.sampled_from([-1, 0, 2, 7]),
    "decay_function": st.sampled_from(["linear", "gaussian"]),
    "gaussian_sigma": st.sampled_from([2.0, 0.5]),
    "normalized": st.booleans(),
})  # fmt: skip


def matrix(**kw):
    return lambda *inputs: opset8.matrix_nms(*inputs, **kw)


def assert_matrix_same(got, want):
    assert_close(got[0], want[0], rtol=1e-6, what="selected_outputs")
    assert_close(got[1], want[1], what="selected_indices")
    assert_close(got[2], want[2], what="valid_outputs")


@settings(max_examples=50, deadline=None)
@given(attrs=MATRIX_ATTRS, seed=st.integers(0, 2**32 - 1),
       dims=st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(1, 30)))  # fmt: skip
def test_matrix_nms_matches_the_plugin(attrs, seed, dims, tmp_path_factory):
    # Every image selects a box: where none does, the plugin corrupts its memory and a
    # later inference of the process crashes.
    if dims[1] == 1 and attrs["background_class"] == 0:
        attrs["background_class"] = -1
    boxes, _ = random_case(np.random.default_rng(seed), *dims)
    scores = np.random.default_rng(seed + 1).random((dims[0], dims[1], dims[2]), np.float32)
    scores[:, 1 if attrs["background_class"] == 0 else 0, 0] = 0.99
    got, want = run_both(matrix(**attrs), [boxes, scores], tmp_path_factory.mktemp("m"), 3)
    assert_matrix_same(got, want)


def test_matrix_nms_f16_matches_the_plugin(tmp_path):
    rng = np.random.default_rng(1)
    boxes = np.sort(rng.random((2, 7, 4)), -1).astype(np.float16)
    scores = rng.random((2, 3, 7)).astype(np.float16)
    got, want = run_both(matrix(decay_function="gaussian"), [boxes, scores], tmp_path, 3)
    assert got[0].dtype == np.float16
    assert_matrix_same(got, want)


@pytest.mark.parametrize(("attrs", "rows"), [
    # Sorted b0, b1, b2; max IoU with a better box: 0, 1/7, 4/4.4 (b2 with b0).
    # linear: b1 0.8 * (1 - 1/7); b2 0.7 * min((1 - 4/4.4) / 1, (1 - 1/6) / (1 - 1/7)).
    ({"decay_function": "linear"}, [(0.9, 0), (0.8 * 6 / 7, 1), (0.7 * 0.4 / 4.4, 2)]),
    ({"decay_function": "linear", "post_threshold": 0.1}, [(0.9, 0), (0.8 * 6 / 7, 1)]),
    # gaussian (sigma 2): b1 0.8 * exp(-2 / 49); b2 0.7 * exp(-2 * (4 / 4.4)**2).
    ({"decay_function": "gaussian", "post_threshold": 0.1},
     [(0.9, 0), (0.8 * np.exp(-2 / 49), 1), (0.7 * np.exp(-2 * (4 / 4.4) ** 2), 2)]),
    ({"decay_function": "linear", "nms_top_k": 2}, [(0.9, 0), (0.8 * 6 / 7, 1)]),
])  # fmt: skip
def test_matrix_nms_by_hand(attrs, rows, tmp_path):
    scores = HAND_SCORES[:, :1]
    model = one_op_model(matrix(**attrs), [HAND_BOXES, scores], 3)
    out, index, valid = run_saved(model, [HAND_BOXES, scores], tmp_path)
    np.testing.assert_allclose(out[:, 1], [s for s, _ in rows], rtol=1e-6)
    np.testing.assert_array_equal(out[:, 2:], HAND_BOXES[0, [b for _, b in rows]])
    assert index.ravel().tolist() == [b for _, b in rows] and valid.tolist() == [len(rows)]
    got, want = run_both(matrix(**attrs), [HAND_BOXES, scores], tmp_path, 3)
    assert_matrix_same(got, want)


def test_matrix_nms_shape_rule_matches_openvino():
    cases = [([2, 7, 4], [2, 3, 7], {}), ([2, 7, 4], [2, 3, 7], {"nms_top_k": 4, "keep_top_k": 5}),
             ([-1, 7, 4], [-1, 3, 7], {"background_class": 1})]  # fmt: skip
    for boxes, scores, attrs in cases:
        b = opset1.parameter(ov.PartialShape(boxes), ov.Type.f32)
        s = opset1.parameter(ov.PartialShape(scores), ov.Type.f32)
        want = [from_ov_shape(o.get_partial_shape()) for o in matrix(**attrs)(b, s).outputs()]
        full = dict(output_type=ET["i64"], nms_top_k=-1, keep_top_k=-1, background_class=-1)
        full.update(attrs)
        infos = [TensorInfo(from_ov_shape(ov.PartialShape(x)), ET["f32"]) for x in (boxes, scores)]
        got = [o.shape for o in resolve("MatrixNms", "opset8").infer(SimpleNamespace(**full), infos)]
        assert got == want


def test_validate_checks_matrix_nms(tmp_path):
    model = one_op_model(matrix(), [HAND_BOXES, HAND_SCORES], 3)
    bad = saved(model, tmp_path, lambda t: t.replace('keep_top_k="-1"', 'keep_top_k="-3"'))
    found = [d for d in irrun.validate(bad) if d.layer is not None
             and d.layer.type == "MatrixNms"]  # fmt: skip
    assert [d.message for d in found] == ["keep_top_k must be -1 or more, got -3"]
    bad = saved(model, tmp_path, lambda t: t.replace('decay_function="linear"',
                                                     'decay_function="cosine"'))  # fmt: skip
    found = [d for d in irrun.validate(bad) if d.layer is not None
             and d.layer.type == "MatrixNms"]  # fmt: skip
    assert [d.code for d in found] == ["bad-attribute"]


# --------------------------------------------------------------------------- NMSRotated


def rotated(per_class=4, iou=0.5, score=0.0, **kw):
    def build(boxes, scores):
        return opset13.nms_rotated(boxes, scores, opset1.constant(np.int64(per_class)),
                                   opset1.constant(np.float32(iou)),
                                   opset1.constant(np.float32(score)), **kw)  # fmt: skip

    return build


def rotated_boxes(rng, batches, n, dtype=np.float32):
    centre = rng.random((batches, n, 2)) * 4
    size = rng.random((batches, n, 2)) * 3 + 0.2
    angle = (rng.random((batches, n, 1)) - 0.5) * 4
    return np.concatenate([centre, size, angle], -1).astype(dtype)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), per_class=st.sampled_from([1, 3, 20]),
       iou=st.sampled_from([0.0, 0.3, 0.5, 0.8]), score=st.sampled_from([0.0, 0.3]),
       descending=st.booleans(), clockwise=st.booleans(),
       output_type=st.sampled_from(["i32", "i64"]),
       dims=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 12)))  # fmt: skip
def test_nms_rotated_matches_the_plugin(seed, per_class, iou, score, descending, clockwise,
                                        output_type, dims, tmp_path_factory):  # fmt: skip
    rng = np.random.default_rng(seed)
    boxes = rotated_boxes(rng, dims[0], dims[2])
    scores = rng.random(dims).astype(np.float32)
    if seed % 3 == 0:
        scores = np.round(scores * 4) / 4  # ties
    build = rotated(per_class, iou, score, sort_result_descending=descending,
                    clockwise=clockwise, output_type=output_type)  # fmt: skip
    got, want = run_both(build, [boxes, scores], tmp_path_factory.mktemp("m"), 3)
    for name, g, w in zip(("selected_indices", "selected_scores", "valid_outputs"), got, want,
                          strict=True):  # fmt: skip
        assert_close(g, w, what=name)


def test_nms_rotated_f16_matches_the_plugin(tmp_path):
    rng = np.random.default_rng(5)
    boxes, scores = rotated_boxes(rng, 2, 9, np.float16), rng.random((2, 2, 9)).astype(np.float16)
    got, want = run_both(rotated(5, 0.3), [boxes, scores], tmp_path, 3)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


@pytest.mark.parametrize(("clockwise", "kept"), [(True, [0]), (False, [0, 1])])
def test_nms_rotated_turns_as_told(clockwise, kept, tmp_path):
    """Box 1 overlaps box 0 by IoU 0.396 when the angles turn clockwise (in the image's
    y-down frame) and 0.374 when they turn counterclockwise: threshold 0.385 tells."""
    boxes = np.array([[[1, 1, 2, 1, 0.5], [1.5, 1.2, 2, 1, -0.3]]], np.float32)
    scores = np.array([[[0.9, 0.8]]], np.float32)
    got, want = run_both(rotated(5, 0.385, clockwise=clockwise), [boxes, scores], tmp_path, 3)
    assert got[0][:, 2].tolist() == kept
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)


def test_nms_rotated_zero_per_class_selects_nothing(tmp_path):
    """The plugin leaves valid_outputs unwritten there; irrun counts 0."""
    boxes, scores = rotated_boxes(np.random.default_rng(0), 1, 3), HAND_SCORES
    model = one_op_model(rotated(0), [boxes, scores], 3)
    got = run_saved(model, [boxes, scores], tmp_path)
    assert [g.shape for g in got] == [(0, 3), (0, 3), (1,)] and got[2].tolist() == [0]


def test_rotated_intersection_by_hand():
    """Two unit squares, one turned by 45 degrees about the same centre: their
    intersection is a regular octagon of area 2 * (sqrt(2) - 1); a square and itself
    shifted by half a side overlap by half."""
    from irrun.ops.nms_family import intersection_area, rotated_corners

    a = np.array([[0, 0, 1, 1, 0], [0, 0, 1, 1, 0]], np.float32)
    b = np.array([[0, 0, 1, 1, np.pi / 4], [0.5, 0, 1, 1, 0]], np.float32)
    area = intersection_area(rotated_corners(a, True), rotated_corners(b, True))
    np.testing.assert_allclose(area, [2 * (np.sqrt(2) - 1), 0.5], rtol=1e-6)


@pytest.mark.parametrize(("boxes", "says"), [
    ((2, 6, 4), "last dim must be 5"),
    ((2, 6), "boxes must be 3-D"),
])  # fmt: skip
def test_nms_rotated_shape_rule(boxes, says):
    op = resolve("NMSRotated", "opset13")
    attrs = SimpleNamespace(sort_result_descending=True, output_type=ET["i32"], clockwise=True)
    f32 = ET["f32"]
    infos = [TensorInfo((2, 6, 5), f32), TensorInfo((2, 3, 6), f32),
             TensorInfo((), ET["i64"], np.int64(4)), TensorInfo((), f32), TensorInfo((), f32)]
    got = [(o.shape, o.element_type.name) for o in op.infer(attrs, infos)]
    b = opset1.parameter([2, 6, 5], ov.Type.f32)
    s = opset1.parameter([2, 3, 6], ov.Type.f32)
    node = rotated(4, output_type="i32")(b, s)
    assert got == [(from_ov_shape(o.get_partial_shape()), o.get_element_type().get_type_name())
                   for o in node.outputs()]  # fmt: skip
    with pytest.raises(ShapeError, match=says):
        op.infer(attrs, [TensorInfo(boxes, f32), *infos[1:]])


def test_validate_checks_nms_rotated(tmp_path):
    boxes = np.zeros((1, 3, 5), np.float32)
    model = one_op_model(rotated(2), [boxes, HAND_SCORES], 3)
    bad = saved(model, tmp_path, lambda t: t.replace('output_type="i64"', 'output_type="f32"'))
    found = [d for d in irrun.validate(bad) if d.layer is not None
             and d.layer.type == "NMSRotated"]  # fmt: skip
    assert [d.message for d in found] == ["output_type must be i32 or i64, got f32"]


def test_roisnum_out_of_range_is_refused(tmp_path):
    boxes, scores = np.zeros((2, 3, 4), np.float32), np.zeros((2, 3), np.float32)
    model = one_op_model(multiclass(9), [boxes, scores, np.array([2, 2], np.int32)], 3)
    with pytest.raises(irrun.errors.IrrunError, match=r"roisnum .* summing to at most 3"):
        run_saved(model, [boxes, scores, np.array([2, 2], np.int32)], tmp_path)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


@pytest.mark.parametrize(("edit", "says"), [
    (('nms_top_k="-1"', 'nms_top_k="-2"'), "nms_top_k must be -1 or more, got -2"),
    (('nms_eta="1"', 'nms_eta="1.5"'), "nms_eta must lie in [0, 1], got 1.5"),
    (('output_type="i64"', 'output_type="i16"'), "output_type must be i32 or i64, got i16"),
])  # fmt: skip
def test_validate_checks_attributes(edit, says, tmp_path):
    model = one_op_model(multiclass(8), [HAND_BOXES, HAND_SCORES], 3)
    bad = saved(model, tmp_path, lambda t: t.replace(*edit))
    found = [d for d in irrun.validate(bad) if d.layer is not None
             and d.layer.type == "MulticlassNms"]  # fmt: skip
    assert [d.message for d in found] == [says]


def test_validate_checks_the_selected_bound(tmp_path):
    model = one_op_model(multiclass(8, keep_top_k=2), [HAND_BOXES, HAND_SCORES], 3)

    def wrong_dim(text):
        return re.sub(r'(names="out0">\s*<dim>)-1(</dim>)', r"\g<1>7\2", text)

    found = [d for d in irrun.validate(saved(model, tmp_path, wrong_dim))
             if d.layer is not None and d.layer.type == "MulticlassNms"]  # fmt: skip
    assert len(found) == 1 and found[0].level == "error" and "7" in found[0].message
