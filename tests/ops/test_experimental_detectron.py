"""Detectron's ops against OpenVINO's CPU plugin (their reference kernels do not run from
``ov.Model.evaluate``), against OpenVINO's shape inference, and by hand."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset9
from openvino.utils.node_factory import NodeFactory
from support.ov_oneop import assert_close, one_op_model, run_both
from support.ov_shapes import from_ov_shape
from support.typed import assert_same, refusals, run_irrun, run_openvino

import irrun
import irrun.ops  # registers the ops that resolve looks up
from irrun.ir import element_types
from irrun.ir.dims import Interval
from irrun.ir.element_types import FLOATS
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES
FACTORY = NodeFactory("opset6")
OV_TYPES = {"f32": ov.Type.f32, "f16": ov.Type.f16, "f64": ov.Type.f64, "i32": ov.Type.i32,
            "i64": ov.Type.i64}  # fmt: skip


def make(op, *args, **attrs):
    return FACTORY.create(f"ExperimentalDetectron{op}", [x.output(0) for x in args], attrs)


def pshape(s):
    return ov.PartialShape.dynamic() if s is None else ov.PartialShape(s)


def shapes_of(op, attrs, shapes, types):
    """OpenVINO's and irrun's output shapes for inputs of the given (partial) shapes."""
    params = [opset1.parameter(pshape(s), OV_TYPES[t]) for s, t in zip(shapes, types, strict=True)]
    node = make(op, *params, **attrs)
    want = [from_ov_shape(o.get_partial_shape()) for o in node.outputs()]
    infos = [TensorInfo(None if s is None else from_ov_shape(pshape(s)), ET[t])
             for s, t in zip(shapes, types, strict=True)]  # fmt: skip
    got = resolve(f"ExperimentalDetectron{op}", "opset6").infer(SimpleNamespace(**attrs), infos)
    return [o.shape for o in got], want


def irrun_infer(op, attrs, shapes, types):
    infos = [TensorInfo(s, ET[t]) for s, t in zip(shapes, types, strict=True)]
    return resolve(f"ExperimentalDetectron{op}", "opset6").infer(SimpleNamespace(**attrs), infos)


def saved_edit(model, tmp_path, edit):
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def findings(path, type_name):
    return [d for d in irrun.validate(path) if d.layer is not None and d.layer.type == type_name]


# --------------------------------------------------------------------------- PriorGridGenerator

GRID = dict(flatten=True, h=0, w=0, stride_x=0.0, stride_y=0.0)


def grid_inputs(seed, dtype=np.float32, featmap=(1, 4, 3, 5), image=(1, 3, 30, 41)):
    rng = np.random.default_rng(seed)
    half = rng.uniform(1, 20, (3, 2))
    priors = np.concatenate([-half, half], 1).astype(dtype)
    return [priors, np.zeros(featmap, dtype), np.zeros(image, dtype)]


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize(("h", "w"), [(0, 0), (3, 5), (2, 4), (0, 3), (1, 0)])
@pytest.mark.parametrize(("stride_x", "stride_y"), [(0.0, 0.0), (4.0, 7.5), (0.0, 2.0)])
def test_prior_grid_matches_the_plugin(flatten, h, w, stride_x, stride_y, tmp_path):
    attrs = dict(flatten=flatten, h=h, w=w, stride_x=stride_x, stride_y=stride_y)
    inputs = grid_inputs(h + w)
    got, want = run_both(lambda *x: make("PriorGridGenerator", *x, **attrs), inputs, tmp_path)
    assert got.shape == want.shape
    # A grid smaller than the map fills the output's first rows; the plugin leaves the
    # rest unwritten, irrun writes 0.
    filled = (h or 3) * (w or 5) * 3 * 4
    assert_close(got.reshape(-1)[:filled], want.reshape(-1)[:filled], rtol=0, atol=0)
    assert (got.reshape(-1)[filled:] == 0).all()


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_prior_grid_types(dtype, tmp_path):
    inputs = grid_inputs(1, dtype)
    got, want = run_both(lambda *x: make("PriorGridGenerator", *x, **GRID), inputs, tmp_path)
    assert got.dtype == want.dtype == dtype
    assert_close(got, want, rtol=1e-3, atol=0)


def test_prior_grid_by_hand():
    op = resolve("ExperimentalDetectronPriorGridGenerator", "opset6")
    priors = np.array([[-1, -2, 1, 2]], np.float32)
    # A 2 x 3 map of an image 20 high and 30 wide: steps 10 by 10, centres 5, 15, 25.
    out = op.kernel(SimpleNamespace(**GRID), priors, np.zeros((1, 1, 2, 3)),
                    np.zeros((1, 3, 20, 30)))[0]  # fmt: skip
    want = [[x - 1, y - 2, x + 1, y + 2] for y in (5, 15) for x in (5, 15, 25)]
    assert out.tolist() == want
    # A 1 x 2 grid with strides 4 and 6 in a 2 x 3 map: two rows, then zeros.
    attrs = dict(GRID, h=1, w=2, stride_x=4.0, stride_y=6.0, flatten=False)
    out = op.kernel(SimpleNamespace(**attrs), priors, np.zeros((1, 1, 2, 3)),
                    np.zeros((1, 3, 20, 30)))[0]  # fmt: skip
    assert out.shape == (2, 3, 1, 4)
    assert out.reshape(-1, 4).tolist() == [[1, 1, 3, 5], [5, 1, 7, 5]] + [[0] * 4] * 4
    with pytest.raises(ValueError, match="larger than the feature map"):
        op.kernel(SimpleNamespace(**dict(GRID, h=3)), priors, np.zeros((1, 1, 2, 3)),
                  np.zeros((1, 3, 20, 30)))  # fmt: skip


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize(("priors", "featmap", "image"), [
    ([3, 4], [1, 4, 3, 5], [1, 3, 30, 40]),
    ([-1, 4], [1, 4, 3, 5], [1, 3, 30, 40]),
    ([3, 4], [1, 4, -1, 5], [-1, 3, -1, -1]),
    ([(2, 4), 4], [1, 4, (1, 3), 5], [1, 3, 30, 40]),
    (None, [1, 4, 3, 5], None),
    ([3, 4], None, [1, 3, 30, 40]),
    ([3, -1], [-1, -1, 3, 5], [1, 3, 30, 40]),
])  # fmt: skip
def test_prior_grid_shape_rule_matches_openvino(flatten, priors, featmap, image):
    got, want = shapes_of("PriorGridGenerator", dict(GRID, flatten=flatten),
                          [priors, featmap, image], ["f32"] * 3)  # fmt: skip
    assert got == want


@pytest.mark.parametrize(("shapes", "says"), [
    (([3, 4, 1], [1, 4, 3, 5], [1, 3, 30, 40]), "priors must be 2-D"),
    (([3, 5], [1, 4, 3, 5], [1, 3, 30, 40]), "priors' dim 1 must be 4"),
    (([3, 4], [4, 3, 5], [1, 3, 30, 40]), "feature_map must be 4-D"),
    (([3, 4], [1, 4, 3, 5], [3, 30, 40]), "im_data must be 4-D"),
    (([3, 4], [1, 4, 3, 5], [2, 3, 30, 40]), "same batch"),
])  # fmt: skip
def test_prior_grid_shape_rule_errors(shapes, says):
    with pytest.raises(ShapeError, match=says):
        irrun_infer("PriorGridGenerator", GRID, shapes, ["f32"] * 3)
    with pytest.raises(RuntimeError):
        make("PriorGridGenerator", *[opset1.parameter(s, np.float32) for s in shapes], **GRID)


def test_validate_checks_prior_grid(tmp_path):
    model = one_op_model(lambda *x: make("PriorGridGenerator", *x, **dict(GRID, h=2)),
                         grid_inputs(0))  # fmt: skip
    bad = saved_edit(model, tmp_path, lambda t: t.replace(' h="2"', ' h="4"'))
    found = findings(bad, "ExperimentalDetectronPriorGridGenerator")
    assert len(found) == 1 and "h=4 is more cells than the feature map's 3" in found[0].message
    bad = saved_edit(model, tmp_path, lambda t: t.replace(' h="2"', ' h="-1"'))
    found = findings(bad, "ExperimentalDetectronPriorGridGenerator")
    assert len(found) == 1 and "must not be negative" in found[0].message


# --------------------------------------------------------------------------- TopKROIs


def topk_inputs(seed, n=9, dtype=np.float32, ties=False):
    rng = np.random.default_rng(seed)
    rois = rng.uniform(0, 50, (n, 4)).astype(dtype)
    probs = (rng.integers(0, 3, n) / 4 if ties else rng.uniform(0, 1, n)).astype(dtype)
    return [rois, probs]


@pytest.mark.parametrize("max_rois", [0, 1, 4, 9, 12])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_topk_rois_matches_the_plugin(max_rois, ties, dtype, tmp_path):
    inputs = topk_inputs(max_rois, dtype=dtype, ties=ties)
    got, want = run_both(lambda r, p: make("TopKROIs", r, p, max_rois=max_rois), inputs,
                         tmp_path)  # fmt: skip
    assert got.shape == want.shape == (max_rois, 4) and got.dtype == want.dtype
    # Rows past the regions are unwritten in the plugin, 0 in irrun.
    kept = min(max_rois, 9)
    assert (got[:kept] == want[:kept]).all() and (got[kept:] == 0).all()


def test_topk_rois_by_hand():
    op = resolve("ExperimentalDetectronTopKROIs", "opset6")
    rois = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = op.kernel(SimpleNamespace(max_rois=3), rois, np.float32([0.2, 0.9, 0.2, 0.5]))[0]
    assert out.tolist() == [rois[1].tolist(), rois[3].tolist(), rois[0].tolist()]


@pytest.mark.parametrize(("rois", "probs"), [
    ([9, 4], [9]), ([-1, 4], [-1]), ([-1, -1], None), (None, [(2, 5)]), (None, None),
])  # fmt: skip
def test_topk_rois_shape_rule_matches_openvino(rois, probs):
    got, want = shapes_of("TopKROIs", dict(max_rois=5), [rois, probs], ["f32", "f32"])
    assert got == want == [(5, 4)]


@pytest.mark.parametrize(("shapes", "types", "says"), [
    (([9, 4, 1], [9]), ("f32", "f32"), "input_rois must be 2-D"),
    (([9, 5], [9]), ("f32", "f32"), "dim 1 must be 4"),
    (([9, 4], [9, 1]), ("f32", "f32"), "rois_probs must be 1-D"),
    (([9, 4], [8]), ("f32", "f32"), "as many rows"),
    (([9, 4], [9]), ("f32", "f16"), "same element type"),
])  # fmt: skip
def test_topk_rois_shape_rule_errors(shapes, types, says):
    with pytest.raises(ShapeError, match=says):
        irrun_infer("TopKROIs", dict(max_rois=5), shapes, types)
    if "element type" not in says:
        with pytest.raises(RuntimeError):
            make("TopKROIs", *[opset1.parameter(s, np.float32) for s in shapes], max_rois=5)


def test_validate_checks_topk_rois(tmp_path: Path):
    model = one_op_model(lambda r, p: make("TopKROIs", r, p, max_rois=3), topk_inputs(0))
    bad = saved_edit(model, tmp_path, lambda t: t.replace('max_rois="3"', 'max_rois="-3"'))
    found = findings(bad, "ExperimentalDetectronTopKROIs")
    assert len(found) == 1 and "max_rois must not be negative" in found[0].message


# --------------------------------------------------------------------------- ROIFeatureExtractor

SCALES = [4, 8, 16, 32]


def feature_inputs(seed, levels=4, dtype=np.float32, n=14):
    rng = np.random.default_rng(seed)
    maps = [rng.standard_normal((1, 3, 2 + 80 // 2**k, 3 + 80 // 2**k)).astype(dtype)
            for k in range(levels)]  # fmt: skip
    corner = rng.uniform(-40, 320, (n, 2))
    size = np.exp(rng.uniform(np.log(4), np.log(900), (n, 2)))  # every level's sizes
    rois = np.concatenate([corner, corner + size], 1).astype(dtype)
    rois[0] = [10, 10, 10, 30]  # no area: no level, features 0
    rois[1] = [50, 60, 40, 90]  # negative area
    return [rois, *maps]


def features_op(**attrs):
    return lambda r, *maps: make("ROIFeatureExtractor", r, *maps, **attrs)


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("sampling_ratio", [0, 1, 2])
@pytest.mark.parametrize(("levels", "output_size"), [(4, 3), (2, 7), (1, 1)])
def test_roi_features_match_the_plugin(aligned, sampling_ratio, levels, output_size, tmp_path):
    inputs = feature_inputs(levels * 10 + sampling_ratio, levels)
    attrs = dict(output_size=output_size, sampling_ratio=sampling_ratio,
                 pyramid_scales=SCALES[:levels], aligned=aligned)  # fmt: skip
    got, want = run_both(features_op(**attrs), inputs, tmp_path, outputs=2)
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert (got[1] == want[1]).all() and (got[0][:2] == 0).all()


def test_roi_features_f16(tmp_path):
    inputs = feature_inputs(5, dtype=np.float16)
    attrs = dict(output_size=2, sampling_ratio=0, pyramid_scales=SCALES, aligned=True)
    got, want = run_both(features_op(**attrs), inputs, tmp_path, outputs=2)
    assert got[0].dtype == want[0].dtype == np.float16
    assert_close(got[0], want[0], rtol=1e-2, atol=1e-2)


def test_roi_features_by_hand():
    op = resolve("ExperimentalDetectronROIFeatureExtractor", "opset6")
    ramp = np.arange(64, dtype=np.float32).reshape(1, 1, 8, 8)  # value 8y + x
    attrs = SimpleNamespace(output_size=1, sampling_ratio=1, pyramid_scales=[2, 4],
                            aligned=False)  # fmt: skip
    # sqrt(area) 8: level floor(2 + log2(8 / 224)) < 0 -> 0, scale 1/2: the region
    # [1, 2]..[5, 6] of the map, one sample at its centre (3, 4): 8 * 4 + 3.
    rois = np.float32([[2, 4, 10, 12], [0, 0, 1000, 1000], [3, 3, 1, 5]])
    feats, out_rois = op.kernel(attrs, rois, ramp, ramp * 2)
    assert feats[0].tolist() == [[[35.0]]] and (out_rois == rois).all()
    # sqrt(area) 1000: level 1 (the last), scale 1/4: centre (125, 125) is outside: 0.
    assert feats[1].tolist() == [[[0.0]]] and feats[2].tolist() == [[[0.0]]]
    # aligned shifts by -0.5: centre (2.5, 3.5) -> 8 * 3.5 + 2.5.
    feats, _ = op.kernel(SimpleNamespace(**dict(vars(attrs), aligned=True)), rois[:1], ramp, ramp)
    assert feats.tolist() == [[[[30.5]]]]


@pytest.mark.parametrize(("rois", "maps", "channels"), [
    ([9, 4], [[1, 3, 20, 20], [1, 3, 10, 10]], 3),
    ([-1, 4], [[1, -1, 20, 20], [1, 3, -1, -1]], 3),
    ([(2, 5), -1], [[-1, (2, 6), 20, 20], [1, (4, 8), -1, -1]], Interval(4, 6)),
    (None, [None, [1, 5, 3, 3]], 5),
    ([9, 4], [None, None], None),
])  # fmt: skip
def test_roi_features_shape_rule_matches_openvino(rois, maps, channels):
    attrs = dict(output_size=3, sampling_ratio=0, pyramid_scales=[4, 8], aligned=False)
    got, want = shapes_of("ROIFeatureExtractor", attrs, [rois, *maps], ["f32"] * 3)
    count = rois[0] if rois is not None else None
    # OpenVINO gives the unknown number of regions or channels as an unbounded interval.
    assert got == [(want[0][0], want[0][1], 3, 3), (want[1][0], 4)] if count is None else (
        got == want)  # fmt: skip
    if channels is not None:
        assert got[0][1] == channels


@pytest.mark.parametrize(("shapes", "types", "says"), [
    (([9, 4, 1], [1, 3, 8, 8]), ("f32", "f32"), "input_rois must be 2-D"),
    (([9, 5], [1, 3, 8, 8]), ("f32", "f32"), "dim 1 must be 4"),
    (([9, 4], [3, 8, 8]), ("f32", "f32"), "feature map 0 must be 4-D"),
    (([9, 4], [2, 3, 8, 8]), ("f32", "f32"), "dim 0 must be 1"),
    (([9, 4], [1, 3, 8, 8], [1, 4, 8, 8]), ("f32", "f32", "f32"), "as many channels"),
    (([9, 4], [1, 3, 8, 8]), ("f32", "f16"), "one element type"),
    (([9, 4], [1, 3, 8, 8], [1, 3, 4, 4], [1, 3, 2, 2]), ("f32",) * 4, "only 2 pyramid_scales"),
])  # fmt: skip
def test_roi_features_shape_rule_errors(shapes, types, says):
    attrs = dict(output_size=3, sampling_ratio=0, pyramid_scales=[4, 8], aligned=False)
    with pytest.raises(ShapeError, match=says):
        irrun_infer("ROIFeatureExtractor", attrs, shapes, types)
    if "type" not in says and "pyramid" not in says:
        with pytest.raises(RuntimeError):
            make("ROIFeatureExtractor", *[opset1.parameter(s, np.float32) for s in shapes],
                 **attrs)  # fmt: skip


def test_validate_checks_roi_features(tmp_path):
    attrs = dict(output_size=2, sampling_ratio=2, pyramid_scales=SCALES, aligned=False)
    model = one_op_model(features_op(**attrs), feature_inputs(0), 2)
    bad = saved_edit(model, tmp_path, lambda t: t.replace('sampling_ratio="2"',
                                                          'sampling_ratio="-1"'))  # fmt: skip
    found = findings(bad, "ExperimentalDetectronROIFeatureExtractor")
    assert len(found) == 1 and "sampling_ratio must not be negative" in found[0].message
    bad = saved_edit(model, tmp_path, lambda t: t.replace('"4, 8, 16, 32"', '"4, 8"'))
    found = findings(bad, "ExperimentalDetectronROIFeatureExtractor")
    assert len(found) == 1 and "only 2 pyramid_scales" in found[0].message


# --------------------------------------------------------------------------- GenerateProposalsSingleImage


def proposal_inputs(seed, anchors=3, height=4, width=5, dtype=np.float32):
    rng = np.random.default_rng(seed)
    n = height * width * anchors
    corner, size = rng.uniform(0, 60, (n, 2)), rng.uniform(2, 30, (n, 2))
    boxes = np.concatenate([corner, corner + size], 1).astype(dtype)
    deltas = rng.normal(0, 0.5, (anchors * 4, height, width))
    deltas[2::4] *= 4  # some log-widths past the cap of log(1000 / 16)
    deltas[3, 0, 0] = 7
    scores = rng.permutation(n).reshape(anchors, height, width) / n + 0.01  # no ties
    return [np.array([50, 60, 1], dtype), boxes, deltas.astype(dtype), scores.astype(dtype)]


def single_image_op(**attrs):
    return lambda *x: make("GenerateProposalsSingleImage", *x, **attrs)


def assert_same_proposals(got, want, rtol=1e-5):
    """Equal boxes and scores where the plugin's score is positive; the rest score 0 in
    both (boxes of score 0 are ties, whose order the plugin leaves open)."""
    positive = want[1] > 0
    assert (got[1] > 0).tolist() == positive.tolist()
    assert_close(got[0][positive], want[0][positive], rtol=rtol, atol=1e-4)
    assert_close(got[1], want[1], rtol=rtol, atol=0)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("min_size", "nms", "post", "pre"), [
    (0.0, 0.7, 10, 30), (8.0, 0.3, 40, 1000), (1.0, 0.5, 70, 60), (0.0, 1.0, 5, 5),
    (0.0, 0.0, 20, 60), (3.0, 0.6, 1, 10),  # post_nms_count 0 crashes the plugin
])  # fmt: skip
def test_single_image_proposals_match_the_plugin(seed, min_size, nms, post, pre, tmp_path):
    attrs = dict(min_size=min_size, nms_threshold=nms, post_nms_count=post, pre_nms_count=pre)
    inputs = proposal_inputs(seed, *[(3, 4, 5), (1, 6, 7), (5, 2, 3)][seed])
    got, want = run_both(single_image_op(**attrs), inputs, tmp_path, outputs=2)
    assert got[0].shape == want[0].shape == (post, 4)
    assert_same_proposals(got, want)


def test_single_image_proposals_f16(tmp_path):
    attrs = dict(min_size=0.0, nms_threshold=0.7, post_nms_count=10, pre_nms_count=30)
    inputs = proposal_inputs(1, dtype=np.float16)
    got, want = run_both(single_image_op(**attrs), inputs, tmp_path, outputs=2)
    assert got[0].dtype == want[0].dtype == np.float16
    assert_same_proposals(got, want, rtol=1e-2)


def test_single_image_proposals_by_hand():
    op = resolve("ExperimentalDetectronGenerateProposalsSingleImage", "opset6")
    attrs = SimpleNamespace(min_size=0.0, nms_threshold=0.5, post_nms_count=3,
                            pre_nms_count=10)  # fmt: skip
    # One cell, two anchors: 0..9 (size 10 with the +1) moved right by half its size
    # to 5..14, and 0..19 doubled about its centre 10 to -10..29, clipped to 0..29.
    anchors = np.float32([[0, 0, 9, 9], [0, 0, 19, 19]])
    deltas = np.float32([0.5, 0, 0, 0, 0, 0, np.log(2), np.log(2)]).reshape(8, 1, 1)
    scores = np.float32([0.25, 0.75]).reshape(2, 1, 1)
    boxes, out_scores = op.kernel(attrs, np.float32([40, 40, 1]), anchors, deltas, scores)
    assert boxes.tolist() == [[0, 0, 29, 29], [5, 0, 14, 9], [0, 0, 0, 0]]
    assert out_scores.tolist() == [0.75, 0.25, 0.0]  # IoU 100 / 841: both kept
    attrs.post_nms_count = 0
    assert op.kernel(attrs, np.float32([40, 40, 1]), anchors, deltas, scores)[0].shape == (0, 4)
    attrs.post_nms_count = 3
    attrs.min_size = 11.0  # the 10-wide box scores 0
    assert op.kernel(attrs, np.float32([40, 40, 1]), anchors, deltas, scores)[1].tolist() == [
        0.75, 0.0, 0.0]  # fmt: skip


@pytest.mark.parametrize(("shapes", "ok"), [
    (([3], [60, 4], [12, 4, 5], [3, 4, 5]), True),
    (([-1], [-1, 4], [-1, -1, -1], [-1, -1, -1]), True),
    ((None, None, None, None), True),
    (([3], [60, 4], [12, 4, 5], [3, 4, 6]), False),
    (([3], [60, 4], [12, 3, 5], [3, 4, 5]), False),
    (([4], [60, 4], [12, 4, 5], [3, 4, 5]), False),
    (([3, 1], [60, 4], [12, 4, 5], [3, 4, 5]), False),
    (([3], [60, 5], [12, 4, 5], [3, 4, 5]), False),
    (([3], [60, 4], [12, 4, 5, 1], [3, 4, 5]), False),
    (([3], [60, 4], [12, 4, 5], [3, 4]), False),
])  # fmt: skip
def test_single_image_proposals_shape_rule(shapes, ok):
    attrs = dict(min_size=0.0, nms_threshold=0.7, post_nms_count=10, pre_nms_count=30)
    if ok:
        got, want = shapes_of("GenerateProposalsSingleImage", attrs, shapes, ["f32"] * 4)
        assert got == want == [(10, 4), (10,)]
        return
    with pytest.raises(ShapeError):
        irrun_infer("GenerateProposalsSingleImage", attrs, shapes, ["f32"] * 4)
    with pytest.raises(RuntimeError):
        make("GenerateProposalsSingleImage", *[opset1.parameter(s, np.float32) for s in shapes],
             **attrs)  # fmt: skip


def test_single_image_proposals_refuse_what_does_not_fit(tmp_path):
    attrs = dict(min_size=0.0, nms_threshold=0.7, post_nms_count=10, pre_nms_count=30)
    inputs = proposal_inputs(0)
    inputs[1] = inputs[1][:50]  # 50 anchors for 3 x 4 x 5 scores
    model = one_op_model(single_image_op(**attrs), inputs, 2)
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    with pytest.raises(irrun.IrrunError, match="do not fit"):
        irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})
    bad = saved_edit(model, tmp_path, lambda t: t.replace('pre_nms_count="30"',
                                                          'pre_nms_count="-1"'))  # fmt: skip
    found = findings(bad, "ExperimentalDetectronGenerateProposalsSingleImage")
    assert len(found) == 1 and "must not be negative" in found[0].message


# --------------------------------------------------------------------------- DetectionOutput


def detection_inputs(seed, n=30, classes=5, dtype=np.float32, ties=False):
    rng = np.random.default_rng(seed)
    corner = rng.uniform(0, 80, (n, 2))
    rois = np.concatenate([corner, corner + rng.uniform(-3, 40, (n, 2))], 1).astype(dtype)
    deltas = rng.normal(0, 3, (n, classes * 4)).astype(dtype)
    scores = rng.uniform(0, 1, (n, classes))
    if ties:
        scores = np.round(scores * 4) / 4
    return [rois, deltas, scores.astype(dtype), np.array([[100, 90, 1]], dtype)]


def detection_attrs(**kw):
    return dict(score_threshold=0.05, nms_threshold=0.5, max_delta_log_wh=1.5, num_classes=5,
                post_nms_count=10, max_detections_per_image=20,
                class_agnostic_box_regression=False, deltas_weights=[10.0, 10.0, 5.0, 5.0]) | kw


def detection_op(**kw):
    return lambda *x: make("DetectionOutput", *x, **detection_attrs(**kw))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("limit", "post", "score", "nms"), [
    (5, 3, 0.3, 0.5), (100, 10, 0.05, 0.3), (20, 100, 0.5, 0.0), (7, 4, -0.1, 1.0),
    (40, 40, 0.0, 0.7),
])  # fmt: skip
def test_detection_output_matches_the_plugin(seed, limit, post, score, nms, tmp_path):
    attrs = dict(max_detections_per_image=limit, post_nms_count=post, score_threshold=score,
                 nms_threshold=nms, class_agnostic_box_regression=seed == 1,
                 deltas_weights=[[10.0, 10.0, 5.0, 5.0], [1.0, 2.0, 1.0, 0.5]][seed % 2])  # fmt: skip
    got, want = run_both(detection_op(**attrs), detection_inputs(seed, ties=seed == 2), tmp_path,
                         outputs=3)  # fmt: skip
    assert [g.dtype for g in got] == [w.dtype for w in want] == [np.float32, np.int32, np.float32]
    if seed == 2:
        # Ties: detections of one region in two classes with equal scores come in either
        # order (the plugin's partial sort puts the higher class first, irrun the lower).
        got, want = (sorted_rows(*x) for x in (got, want))
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert (got[1] == want[1]).all()
    assert (got[2] == want[2]).all()


def sorted_rows(boxes, classes, scores):
    order = np.lexsort((classes, -scores))
    return boxes[order], classes[order], scores[order]


def test_detection_output_f16(tmp_path):
    got, want = run_both(detection_op(), detection_inputs(4, dtype=np.float16), tmp_path,
                         outputs=3)  # fmt: skip
    assert got[0].dtype == want[0].dtype == np.float16
    assert_close(got[0], want[0], rtol=1e-2, atol=1e-2)
    assert (got[1] == want[1]).all() and (got[2] == want[2]).all()


def test_detection_output_by_hand():
    op = resolve("ExperimentalDetectronDetectionOutput", "opset6")
    attrs = SimpleNamespace(**detection_attrs(num_classes=2, deltas_weights=[1.0] * 4,
                                              max_detections_per_image=3))  # fmt: skip
    # Region 0..9 (size 10): class 1 moves it right by 0.5 of its size: 5..14.  Region 1
    # has no width: it scores 0.  Region 2 is region 0 again, scoring less: NMS drops it.
    rois = np.float32([[0, 0, 9, 9], [4, 4, 4, 8], [0, 0, 9, 9]])
    deltas = np.float32([[0, 0, 0, 0, 0.5, 0, 0, 0]] * 3)
    scores = np.float32([[0.1, 0.8], [0.9, 0.9], [0.2, 0.7]])
    boxes, classes, out_scores = op.kernel(attrs, rois, deltas, scores, np.float32([[1, 1, 1]]))
    assert boxes.tolist() == [[5, 0, 14, 9], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert classes.tolist() == [1, 0, 0] and out_scores.tolist() == [np.float32(0.8), 0, 0]


@pytest.mark.parametrize(("shapes", "ok"), [
    (([30, 4], [30, 20], [30, 5], [1, 3]), True),
    (([-1, 4], [-1, 20], [-1, 5], [1, 3]), True),
    (([-1, -1], [(2, 40), -1], [30, -1], [-1, -1]), True),
    ((None, None, None, None), True),
    (([30, 4], [30, 16], [30, 5], [1, 3]), False),
    (([30, 4], [30, 20], [30, 4], [1, 3]), False),
    (([30, 5], [30, 20], [30, 5], [1, 3]), False),
    (([30, 4], [29, 20], [30, 5], [1, 3]), False),
    (([30, 4], [30, 20], [31, 5], [1, 3]), False),
    (([30, 4], [30, 20], [30, 5], [3]), False),
    (([30, 4], [30, 20], [30, 5], [2, 3]), False),
    (([30, 4, 1], [30, 20], [30, 5], [1, 3]), False),
])  # fmt: skip
def test_detection_output_shape_rule(shapes, ok):
    attrs = detection_attrs()
    if ok:
        got, want = shapes_of("DetectionOutput", attrs, shapes, ["f32"] * 4)
        assert got == want == [(20, 4), (20,), (20,)]
        return
    with pytest.raises(ShapeError):
        irrun_infer("DetectionOutput", attrs, shapes, ["f32"] * 4)
    with pytest.raises(RuntimeError):
        make("DetectionOutput", *[opset1.parameter(s, np.float32) for s in shapes], **attrs)


def test_validate_checks_detection_output(tmp_path):
    model = one_op_model(detection_op(), detection_inputs(0), 3)
    bad = saved_edit(model, tmp_path, lambda t: t.replace('deltas_weights="10, 10, 5, 5"',
                                                          'deltas_weights="10, 10"'))  # fmt: skip
    found = findings(bad, "ExperimentalDetectronDetectionOutput")
    assert len(found) == 1 and "deltas_weights must hold 4 values" in found[0].message


# --------------------------------------------------------------------------- GenerateProposals-9


def generate_inputs(seed, images=2, anchors=3, height=4, width=5, info=3, dtype=np.float32):
    rng = np.random.default_rng(seed)
    im_info = np.array([[50, 60, 1.0, 1.5], [40, 70, 0.5, 2.0], [30, 30, 1, 1]][:images])
    cells = (height, width, anchors, 2)
    corner, size = rng.uniform(0, 60, cells), rng.uniform(2, 30, cells)
    boxes = np.concatenate([corner, corner + size], -1)
    deltas = rng.normal(0, 0.5, (images, anchors * 4, height, width))
    deltas[:, 2::4] *= 4
    total = images * anchors * height * width
    scores = rng.permutation(total).reshape(images, anchors, height, width) / total + 0.01
    return [x.astype(dtype) for x in (im_info[:, :info], boxes, deltas, scores)]


def generate_op(**attrs):
    return lambda *x: opset9.generate_proposals(*x, **attrs)


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize(("min_size", "nms", "pre", "post", "normalized"), [
    (0.0, 0.7, 30, 10, True), (8.0, 0.3, 1000, 40, False), (3.0, 0.5, 20, 15, True),
    (1.0, 0.0, 60, 60, False), (0.0, 1.0, 5, 7, True),
])  # fmt: skip
@pytest.mark.parametrize("roi_num_type", ["i32", "i64"])
def test_generate_proposals_match_the_plugin(seed, min_size, nms, pre, post, normalized,
                                             roi_num_type, tmp_path):  # fmt: skip
    attrs = dict(min_size=min_size, nms_threshold=nms, pre_nms_count=pre, post_nms_count=post,
                 normalized=normalized, roi_num_type=roi_num_type)  # fmt: skip
    inputs = generate_inputs(seed, *[(2, 3, 4, 5, 3), (3, 2, 6, 3, 4)][seed])
    got, want = run_both(generate_op(**attrs), inputs, tmp_path, outputs=3)
    assert [g.shape for g in got] == [w.shape for w in want]
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-4)
    assert (got[1] == want[1]).all()
    assert got[2].dtype == want[2].dtype == np.dtype(roi_num_type.replace("i", "int"))
    assert (got[2] == want[2]).all()


def test_generate_proposals_f16(tmp_path):
    attrs = dict(min_size=1.0, nms_threshold=0.7, pre_nms_count=30, post_nms_count=10)
    got, want = run_both(generate_op(**attrs), generate_inputs(3, dtype=np.float16), tmp_path,
                         outputs=3)  # fmt: skip
    assert got[0].dtype == want[0].dtype == np.float16
    assert_close(got[0], want[0], rtol=1e-2, atol=1e-2)
    assert (got[2] == want[2]).all()


def test_generate_proposals_by_hand():
    op = resolve("GenerateProposals", "opset9")
    attrs = SimpleNamespace(min_size=0.0, nms_threshold=0.5, pre_nms_count=10,
                            post_nms_count=3, normalized=True, nms_eta=1.0,
                            roi_num_type=ET["i32"])  # fmt: skip
    # One cell, two anchors, normalized sizes (x2 - x1): 0..10 moved right by half its
    # size to 5..15; 0..20 doubled about its centre 10 to -10..30, clipped to 0..30.
    anchors = np.float32([[0, 0, 10, 10], [0, 0, 20, 20]]).reshape(1, 1, 2, 4)
    deltas = np.float32([0.5, 0, 0, 0, 0, 0, np.log(2), np.log(2)]).reshape(1, 8, 1, 1)
    scores = np.float32([0.25, 0.75]).reshape(1, 2, 1, 1)
    info = np.float32([[40, 40, 1]])
    boxes, out_scores, counts = op.kernel(attrs, info, anchors, deltas, scores)
    assert boxes.tolist() == [[0, 0, 30, 30], [5, 0, 15, 10]]
    assert out_scores.tolist() == [0.75, 0.25] and counts.tolist() == [2]
    assert counts.dtype == np.int32
    # min_size 6 at scale 2 drops the 10-wide box (without scoring it 0).
    attrs.min_size = 6.0
    boxes, _, counts = op.kernel(attrs, np.float32([[40, 40, 2]]), anchors, deltas, scores)
    assert boxes.tolist() == [[0, 0, 30, 30]] and counts.tolist() == [1]


@pytest.mark.parametrize(("shapes", "ok"), [
    (([2, 3], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), True),
    (([2, 4], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), True),
    (([-1, -1], [-1, -1, -1, 4], [-1, 12, -1, -1], [-1, 3, -1, -1]), True),
    (([(1, 3), 3], [4, 5, 3, 4], [-1, 12, 4, 5], [2, 3, 4, 5]), True),
    (([-1, 3], [4, 5, 3, 4], [-1, -1, 4, 5], [(1, 5), -1, 4, 5]), True),
    ((None, None, None, None), True),
    (([2, 5], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 5, 3, 5], [2, 12, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 5, 3, 4], [2, 8, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 5, 3, 4], [3, 12, 4, 5], [2, 3, 4, 5]), False),
    (([1, 3], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 6, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 5, 2, 4], [2, 12, 4, 5], [2, 3, 4, 5]), False),
    (([2, 3], [4, 5, 3, 4], [2, 12, 4, 6], [2, 3, 4, 5]), False),
    (([2, 3, 1], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]), False),
])  # fmt: skip
def test_generate_proposals_shape_rule(shapes, ok):
    attrs = dict(min_size=0.0, nms_threshold=0.7, pre_nms_count=30, post_nms_count=10,
                 normalized=True, nms_eta=1.0, roi_num_type=ET["i32"])  # fmt: skip
    infos = [TensorInfo(None if s is None else from_ov_shape(pshape(s)), ET["f32"])
             for s in shapes]  # fmt: skip
    infer = resolve("GenerateProposals", "opset9").infer
    params = [opset1.parameter(pshape(s), np.float32) for s in shapes]
    ov_attrs = {k: v for k, v in attrs.items() if k not in ("nms_eta", "roi_num_type")}
    if not ok:
        with pytest.raises(ShapeError):
            infer(SimpleNamespace(**attrs), infos)
        with pytest.raises(RuntimeError):
            opset9.generate_proposals(*params, **ov_attrs, roi_num_type="i32")
        return
    got = [(o.shape, o.element_type.name) for o in infer(SimpleNamespace(**attrs), infos)]
    node = opset9.generate_proposals(*params, **ov_attrs, roi_num_type="i32")
    want = [(from_ov_shape(o.get_partial_shape()), o.get_element_type().get_type_name())
            for o in node.outputs()]  # fmt: skip
    assert got == want


def test_validate_checks_generate_proposals(tmp_path):
    attrs = dict(min_size=0.0, nms_threshold=0.7, pre_nms_count=30, post_nms_count=10)
    model = one_op_model(generate_op(**attrs), generate_inputs(0), 3)
    for old, new, says in (('nms_eta="1"', 'nms_eta="0.5"', "nms_eta must be 1.0"),
                           ('post_nms_count="10"', 'post_nms_count="0"', "must be positive"),
                           ('roi_num_type="i64"', 'roi_num_type="f32"', "i32 or i64")):  # fmt: skip
        assert old in model_text(model, tmp_path)
        bad = saved_edit(model, tmp_path, lambda t, old=old, new=new: t.replace(old, new))
        found = findings(bad, "GenerateProposals")
        assert len(found) == 1 and says in found[0].message


def model_text(model, tmp_path):
    path = tmp_path / "plain.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path.read_text()


# --------------------------------------------------------------------------- sweeps


@settings(max_examples=15, deadline=None)
@given(
    levels=st.integers(1, 4), size=st.integers(1, 5), ratio=st.integers(0, 3),
    aligned=st.booleans(), count=st.integers(2, 12), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_roi_features_sweep(levels, size, ratio, aligned, count, seed, tmp_path_factory):
    inputs = feature_inputs(seed, levels, n=count)
    attrs = dict(output_size=size, sampling_ratio=ratio, pyramid_scales=SCALES[:levels],
                 aligned=aligned)  # fmt: skip
    got, want = run_both(features_op(**attrs), inputs, tmp_path_factory.mktemp("fe"), outputs=2)
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(
    images=st.integers(1, 3), anchors=st.integers(1, 4), height=st.integers(1, 6),
    width=st.integers(1, 6), min_size=st.sampled_from([0.0, 2.0, 10.0]),
    nms=st.sampled_from([0.0, 0.3, 0.7, 1.0]), pre=st.integers(1, 100),
    post=st.integers(1, 40), normalized=st.booleans(), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_proposals_sweep(images, anchors, height, width, min_size, nms, pre, post, normalized,
                         seed, tmp_path_factory):  # fmt: skip
    attrs = dict(min_size=min_size, nms_threshold=nms, pre_nms_count=pre, post_nms_count=post)
    tmp = tmp_path_factory.mktemp("gp")
    inputs = generate_inputs(seed, images, anchors, height, width, 3 + seed % 2)
    got, want = run_both(generate_op(**attrs, normalized=normalized), inputs, tmp, outputs=3)
    assert [g.shape for g in got] == [w.shape for w in want]
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-4)
    assert (got[1] == want[1]).all() and (got[2] == want[2]).all()
    single = [inputs[0][0, :3], inputs[1].reshape(-1, 4), inputs[2][0], inputs[3][0]]
    got, want = run_both(single_image_op(**attrs), single, tmp, outputs=2)
    assert_same_proposals(got, want)


@settings(max_examples=15, deadline=None)
@given(
    count=st.integers(1, 40), classes=st.integers(1, 6), limit=st.integers(1, 30),
    post=st.integers(0, 20), score=st.sampled_from([-0.1, 0.0, 0.3, 0.9]),
    nms=st.sampled_from([0.0, 0.4, 1.0]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_detection_output_sweep(count, classes, limit, post, score, nms, seed,
                                tmp_path_factory):  # fmt: skip
    attrs = dict(num_classes=classes, max_detections_per_image=limit, post_nms_count=post,
                 score_threshold=score, nms_threshold=nms)  # fmt: skip
    got, want = run_both(detection_op(**attrs), detection_inputs(seed, count, classes),
                         tmp_path_factory.mktemp("do"), outputs=3)  # fmt: skip
    assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert (got[1] == want[1]).all() and (got[2] == want[2]).all()


# --------------------------------------------------------------------------- element types


def typed_both(build, inputs, types, tmp_path, outputs=1):
    """irrun's and the plugin's outputs of ``build`` on parameters of ``types``."""
    params = []
    for i, (x, t) in enumerate(zip(inputs, types, strict=True)):
        p = opset1.parameter(list(x.shape), getattr(ov.Type, t), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    node = build(*params)
    model = ov.Model([node.output(k) for k in range(outputs)], params, "typed")
    return run_irrun(model, inputs, tmp_path), run_openvino(model, inputs, types, "cpu")


# Per type: (rtol, atol) against the plugin, which computes in f32 (f64 too) and rounds
# once; irrun computes bf16 and f16 in f32 and f64 in f64.
TYPE_TOLERANCES = {"f64": (1e-5, 1e-4), "f32": (1e-5, 1e-4), "f16": (1e-2, 1e-2),
                   "bf16": (2**-6, 2**-4)}  # fmt: skip


def _cast(inputs, et):
    return [x.astype(np.float32).astype(ET[et].dtype) for x in inputs]


@pytest.mark.parametrize("et", FLOATS)
def test_prior_grid_every_type(et, tmp_path):
    inputs = _cast(grid_inputs(2), et)
    got, want = typed_both(lambda *x: make("PriorGridGenerator", *x, **GRID), inputs, [et] * 3,
                           tmp_path)  # fmt: skip
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    rtol, atol = TYPE_TOLERANCES[et]
    np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64),
                               rtol=rtol, atol=atol)  # fmt: skip


@pytest.mark.parametrize("et", FLOATS)
def test_topk_rois_every_type(et, tmp_path):
    inputs = _cast(topk_inputs(9), et)
    got, want = typed_both(lambda r, p: make("TopKROIs", r, p, max_rois=4), inputs, [et] * 2,
                           tmp_path)  # fmt: skip
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    assert_same(got[0], want[0], et)  # rows picked, not computed


@pytest.mark.parametrize("et", FLOATS)
def test_roi_features_every_type(et, tmp_path):
    inputs = _cast(feature_inputs(6, levels=2), et)
    attrs = dict(output_size=2, sampling_ratio=2, pyramid_scales=SCALES[:2], aligned=False)
    got, want = typed_both(features_op(**attrs), inputs, [et] * 3, tmp_path, outputs=2)
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    rtol, atol = TYPE_TOLERANCES[et]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol)  # fmt: skip


@pytest.mark.parametrize("et", FLOATS)
def test_single_image_proposals_every_type(et, tmp_path):
    attrs = dict(min_size=0.0, nms_threshold=0.7, post_nms_count=10, pre_nms_count=30)
    inputs = _cast(proposal_inputs(2), et)
    got, want = typed_both(single_image_op(**attrs), inputs, [et] * 4, tmp_path, outputs=2)
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    rtol = TYPE_TOLERANCES[et][0]
    assert_same_proposals([g.astype(np.float64) for g in got],
                          [w.astype(np.float64) for w in want], rtol=rtol)  # fmt: skip


@pytest.mark.parametrize("et", FLOATS)
def test_detection_output_every_type(et, tmp_path):
    inputs = _cast(detection_inputs(7), et)
    got, want = typed_both(detection_op(), inputs, [et] * 4, tmp_path, outputs=3)
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    rtol, atol = TYPE_TOLERANCES[et]
    np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64),
                               rtol=rtol, atol=atol * 10)  # fmt: skip
    assert (got[1] == want[1]).all()
    np.testing.assert_allclose(got[2].astype(np.float64), want[2].astype(np.float64),
                               rtol=rtol, atol=0)  # fmt: skip


@pytest.mark.parametrize("et", FLOATS)
def test_generate_proposals_every_type(et, tmp_path):
    attrs = dict(min_size=1.0, nms_threshold=0.7, pre_nms_count=30, post_nms_count=10)
    inputs = _cast(generate_inputs(4), et)
    got, want = typed_both(generate_op(**attrs), inputs, [et] * 4, tmp_path, outputs=3)
    assert got[0].dtype == want[0].dtype == ET[et].dtype
    rtol, atol = TYPE_TOLERANCES[et]
    for g, w in zip(got[:2], want[:2], strict=True):
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                   atol=atol * 10)  # fmt: skip
    assert (got[2] == want[2]).all()


DETECTRON_CASES = {
    "ExperimentalDetectronPriorGridGenerator-v6": (
        lambda *x: make("PriorGridGenerator", *x, **GRID), [[3, 4], [1, 4, 3, 5], [1, 3, 30, 41]]),
    "ExperimentalDetectronTopKROIs-v6": (
        lambda r, p: make("TopKROIs", r, p, max_rois=4), [[9, 4], [9]]),
    "ExperimentalDetectronROIFeatureExtractor-v6": (
        features_op(output_size=2, sampling_ratio=2, pyramid_scales=SCALES[:2], aligned=False),
        [[5, 4], [1, 3, 42, 43], [1, 3, 22, 23]]),
    "ExperimentalDetectronGenerateProposalsSingleImage-v6": (
        single_image_op(min_size=0.0, nms_threshold=0.7, post_nms_count=10, pre_nms_count=30),
        [[3], [60, 4], [12, 4, 5], [3, 4, 5]]),
    "ExperimentalDetectronDetectionOutput-v6": (detection_op(), [[30, 4], [30, 20], [30, 5],
                                                                 [1, 3]]),
    "GenerateProposals-v9": (
        generate_op(min_size=1.0, nms_threshold=0.7, pre_nms_count=30, post_nms_count=10),
        [[2, 3], [4, 5, 3, 4], [2, 12, 4, 5], [2, 3, 4, 5]]),
}  # fmt: skip


@pytest.mark.parametrize("label", DETECTRON_CASES)
@pytest.mark.parametrize("bad", ["i32", "f8e4m3"])
def test_types_not_taken_are_found(label, bad, tmp_path):
    build, shapes = DETECTRON_CASES[label]
    params = []
    for i, shape in enumerate(shapes):
        p = opset1.parameter(shape, ov.Type.f32, name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    node = build(*params)
    model = ov.Model(list(node.outputs()), params, "m")
    last = len(shapes) - 1  # the last port: PriorGrid's im_data, a feature map...
    found = [str(d) for d in refusals(model, tmp_path, {last: bad})
             if "does not take" in d.message]  # fmt: skip
    assert len(found) == 1 and f"input {last} is {bad}, which {label} does not take" in found[0]


def test_prior_grid_inputs_share_one_type():
    """As OpenVINO checks: the feature map and the image have the priors' type."""
    op = resolve("ExperimentalDetectronPriorGridGenerator", "opset6")
    infos = [TensorInfo((3, 4), ET["f32"]), TensorInfo((1, 4, 3, 5), ET["f16"]),
             TensorInfo((1, 3, 30, 41), ET["f32"])]  # fmt: skip
    with pytest.raises(ShapeError, match="one element type, got f16, f32"):
        op.infer(SimpleNamespace(**GRID), infos)
    with pytest.raises(RuntimeError):  # OpenVINO refuses it too
        make("PriorGridGenerator", opset1.parameter([3, 4], ov.Type.f32),
             opset1.parameter([1, 4, 3, 5], ov.Type.f16),
             opset1.parameter([1, 3, 30, 41], ov.Type.f32), **GRID)  # fmt: skip
