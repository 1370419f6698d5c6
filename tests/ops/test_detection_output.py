"""DetectionOutput-1 and -8 against OpenVINO's CPU plugin, by hand, and in an SSD-style
graph with PriorBox.

``ov.Model.evaluate`` cannot run DetectionOutput (its reference kernel lives in the
template plugin, which the pip wheel lacks), so the values are compared with the CPU
plugin; the cases where the plugin and the reference kernel differ are described in
``irrun/ops/detection_output.py``.  Scores are drawn from a few values so that equal
scores are common: equal scores across priors test the tie order.  Equal (score, prior)
pairs in different classes are avoided where ``keep_top_k`` cuts: OpenVINO orders them
with ``std::sort``, which leaves their order unspecified.

Boxes are compared to 1e-6 (the plugin's ``exp`` may differ from NumPy's by an ulp);
labels, images and scores exactly.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset8
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved
from support.ov_shapes import from_ov_shape

import irrun
from irrun.ir import element_types
from irrun.ir.attributes import REQUIRED
from irrun.ir.dims import Interval
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES
CENTER = "caffe.PriorBoxParameter.CENTER_SIZE"


def make_inputs(rng, images=2, priors=6, classes=4, prior_batch=1, five=False,
                dtype=np.float32, **attrs):  # fmt: skip
    """Random inputs for the attributes; scores from eight levels, distinct within a prior."""
    loc_classes = 1 if attrs.get("share_location", True) else classes
    size = 4 if attrs.get("normalized", False) else 5
    rows = 1 if attrs.get("variance_encoded_in_target", False) else 2
    loc = rng.normal(0, 0.5, (images, priors * loc_classes * 4))
    levels = np.argsort(rng.random((images, priors, 8)), -1)[..., :classes]
    conf = levels.reshape(images, priors * classes) / 8
    prior = np.empty((prior_batch, rows, priors, size))
    prior[:, 0] = rng.uniform(0, 1, (prior_batch, priors, size))
    corners = np.sort(rng.uniform(0, 1, (prior_batch, priors, 2, 2)), axis=2)
    prior[:, 0, :, size - 4:] = corners.transpose(0, 1, 3, 2).reshape(prior_batch, priors, 4)
    if rows == 2:
        prior[:, 1] = rng.uniform(0.05, 0.3, (prior_batch, priors, size))
    inputs = [loc, conf, prior.reshape(prior_batch, rows, priors * size)]
    if five:
        inputs += [rng.uniform(0, 1, (images, priors * 2)),
                   rng.normal(0, 0.3, (images, priors * loc_classes * 4))]  # fmt: skip
    return [x.astype(dtype) for x in inputs]


def builder(version, classes=4, **attrs):
    a = {"keep_top_k": [-1], "nms_threshold": 0.5, **attrs}
    if version == 1:
        a["num_classes"] = classes
        return lambda *p: opset1.detection_output(*p[:3], a, *p[3:])
    return lambda *p: opset8.detection_output(*p[:3], a, *p[3:])


def check(tmp_path, version, seed=0, images=2, priors=6, classes=4, prior_batch=1, five=False,
          dtype=np.float32, **attrs):  # fmt: skip
    rng = np.random.default_rng(seed)
    inputs = make_inputs(rng, images, priors, classes, prior_batch, five, dtype, **attrs)
    model = one_op_model(builder(version, classes, **attrs), inputs)
    got, want = run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0]
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    g, w = got.reshape(-1, 7).astype(np.float64), want.reshape(-1, 7).astype(np.float64)
    top_k, keep = attrs.get("top_k", -1), attrs.get("keep_top_k", [-1])[0]
    if keep == 0 and top_k > 0:  # the plugin writes only images * top_k * classes rows
        written = images * top_k * classes
        assert not g[written:].any()
        g, w = g[:written], w[:written]
    assert_close(g[:, :3], w[:, :3], what=f"labels and scores {attrs}")
    assert_close(g[:, 3:], w[:, 3:], atol=1e-6, rtol=1e-6, what=f"boxes {attrs}")
    return got


CASES = [
    {},
    {"normalized": True},
    {"share_location": False},
    {"code_type": CENTER},
    {"code_type": CENTER, "normalized": True, "share_location": False},
    {"variance_encoded_in_target": True},
    {"variance_encoded_in_target": True, "code_type": CENTER},
    {"top_k": 3},
    {"top_k": 0},
    {"keep_top_k": [4]},
    {"keep_top_k": [0]},
    {"keep_top_k": [0], "top_k": 2},
    {"keep_top_k": [4], "top_k": 2},
    {"keep_top_k": [3], "share_location": False},
    {"clip_before_nms": True},
    {"clip_after_nms": True},
    {"clip_before_nms": True, "code_type": CENTER},
    {"decrease_label_id": True},
    {"decrease_label_id": True, "top_k": 3},
    {"decrease_label_id": True, "keep_top_k": [3], "share_location": False},
    {"background_label_id": -1},
    {"background_label_id": 2},
    {"background_label_id": 3, "share_location": False},
    {"confidence_threshold": 0.3},
    {"nms_threshold": 0.1},
    {"nms_threshold": 0.0},
    {"input_height": 3, "input_width": 2},
    {"input_height": 3, "input_width": 2, "code_type": CENTER},
    {"prior_batch": 2},
    {"prior_batch": 2, "variance_encoded_in_target": True},
    {"five": True, "objectness_score": 0.4},
    {"five": True, "objectness_score": 0.4, "prior_batch": 2, "normalized": True},
    {"five": True, "objectness_score": 0.6, "share_location": False, "code_type": CENTER},
    {"five": True, "objectness_score": 0.5, "decrease_label_id": True, "keep_top_k": [5]},
]


@pytest.mark.parametrize("version", [1, 8])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_matches_cpu_plugin(version, case, tmp_path):
    check(tmp_path, version, **case)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_element_types(dtype, tmp_path):
    got = check(tmp_path, 8, dtype=dtype, normalized=True, code_type=CENTER, keep_top_k=[5])
    assert got.dtype == dtype


def test_bf16_is_computed_in_f32(tmp_path):
    """bf16 inputs: irrun computes in f32 and rounds once, as the plugin does with f32;
    compared with the plugin's f32 result on the same (bf16-exact) values, rounded."""
    bf16 = ml_dtypes.bfloat16
    attrs = {"normalized": True, "code_type": CENTER, "keep_top_k": [6]}
    inputs = [x.astype(bf16) for x in make_inputs(np.random.default_rng(5), **attrs)]
    params = [opset1.parameter(list(x.shape), ov.Type.bf16, name=f"in{i}")
              for i, x in enumerate(inputs)]  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([builder(8, **attrs)(*params)], params), path,
                  compress_to_fp16=False)  # fmt: skip
    feeds = {f"in{i}": x for i, x in enumerate(inputs)}
    got = next(iter(irrun.load(path).run(feeds).values()))
    wide = [x.astype(np.float32) for x in inputs]
    want = run_cpu(one_op_model(builder(8, **attrs), wide), wide)[0].astype(bf16)
    assert_close(got, want)


@pytest.mark.parametrize("case", [{"keep_top_k": [7]}, {"keep_top_k": [20], "top_k": 10},
                                  {"keep_top_k": [5], "decrease_label_id": True},
                                  {"keep_top_k": [3], "share_location": False}])  # fmt: skip
def test_many_priors_tie_order(case, tmp_path):
    """Thirty priors with scores from eight levels: ties across priors go by prior index
    (and, for MXNet's per-image top_k, by class first)."""
    for seed in range(3):
        check(tmp_path, 8, seed=seed, priors=30, classes=5, **case)


@settings(max_examples=25, deadline=None)
@given(version=st.sampled_from([1, 8]), images=st.integers(1, 3), priors=st.integers(1, 12),
       classes=st.integers(2, 5), share=st.booleans(), normalized=st.booleans(),
       center=st.booleans(), encoded=st.booleans(), top_k=st.sampled_from([-1, 0, 1, 3, 8]),
       keep=st.sampled_from([-1, 0, 2, 5]), mxnet=st.booleans(),
       background=st.integers(-1, 4), clip=st.sampled_from(["", "before", "after"]),
       five=st.booleans(), nms=st.sampled_from([0.0, 0.3, 0.7]),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_hypothesis(version, images, priors, classes, share, normalized, center, encoded,
                    top_k, keep, mxnet, background, clip, five, nms, seed, tmp_path_factory):  # fmt: skip
    if mxnet:
        background = 0  # the plugin refuses another background with decrease_label_id
    if keep == 0 and top_k > priors:
        return  # the plugin writes zeros past its output (and crashes)
    attrs = dict(share_location=share, normalized=normalized, variance_encoded_in_target=encoded,
                 code_type=CENTER if center else "caffe.PriorBoxParameter.CORNER", top_k=top_k,
                 keep_top_k=[keep], decrease_label_id=mxnet, background_label_id=background,
                 clip_before_nms=clip == "before", clip_after_nms=clip == "after",
                 nms_threshold=nms, input_height=2, input_width=3,
                 objectness_score=0.5 if five else 0.0)  # fmt: skip
    check(tmp_path_factory.mktemp("do"), version, seed, images, priors, classes, five=five,
          **attrs)  # fmt: skip


@pytest.mark.parametrize("case", [{}, {"decrease_label_id": True},
                                  {"five": True, "objectness_score": 0.4},
                                  {"share_location": False, "top_k": 2}])  # fmt: skip
@pytest.mark.parametrize("prior_batch", [1, 2])
def test_priors_end_at_minus_one(case, prior_batch, tmp_path):
    """Without ``normalized``, a prior whose leading value is -1 ends the priors (as a
    Proposal layer's output marks its end): the plugin's rule, which irrun follows."""
    for seed in range(3):
        inputs = make_inputs(np.random.default_rng(seed), 2, 6, 3, prior_batch, **case)
        inputs[2][0, 0, 5 * (seed + 1)] = -1
        inputs[2][-1, 0, 5 * (4 - seed)] = -1
        attrs = {k: v for k, v in case.items() if k != "five"}
        model = one_op_model(builder(8, 3, **attrs), inputs)
        got, want = run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0]
        assert_close(got, want, atol=1e-6, rtol=1e-6)
        assert (got[0, 0, :, 0] == -1).any()


def test_by_hand(tmp_path):
    """Three normalized priors, no variances, zero logits: the boxes are the priors.
    Class 1 scores 0.9, 0.8, 0.3: prior 1 overlaps prior 0 with IoU 0.9 and is dropped;
    prior 2 overlaps it with IoU 0.01 and is kept.  Class 0 is the background."""
    loc = np.zeros((1, 12), np.float32)
    conf = np.array([[0.1, 0.9, 0.2, 0.8, 0.7, 0.3]], np.float32)
    priors = np.array([[[0, 0, 1, 1, 0.1, 0, 1, 1, 0.5, 0.5, 0.6, 0.6]]], np.float32)
    build = builder(8, normalized=True, variance_encoded_in_target=True)
    model = one_op_model(build, [loc, conf, priors])
    got = run_saved(model, [loc, conf, priors], tmp_path)[0]
    want = np.zeros((1, 1, 6, 7), np.float32)  # 1 image * 3 priors * 2 classes rows
    want[0, 0, 0] = [0, 1, 0.9, 0, 0, 1, 1]
    want[0, 0, 1] = [0, 1, 0.3, 0.5, 0.5, 0.6, 0.6]
    want[0, 0, 2, 0] = -1
    assert_close(got, want)
    assert_close(run_cpu(model, [loc, conf, priors])[0], want)


def test_ssd_graph(tmp_path):
    """An SSD head: two convolutions over a feature map give the box logits and the
    class scores (softmax over classes), PriorBox the priors from the map's shape."""
    rng = np.random.default_rng(7)
    classes, per_point, h, w = 3, 3, 5, 6
    feature = rng.normal(0, 1, (2, 8, h, w)).astype(np.float32)

    def head(x, outputs, last):
        weights = opset1.constant(rng.normal(0, 0.3, (outputs, 8, 3, 3)).astype(np.float32))
        y = opset1.convolution(x, weights, [1, 1], [1, 1], [1, 1], [1, 1])
        y = opset1.transpose(y, opset1.constant(np.array([0, 2, 3, 1], np.int64)))
        return opset1.reshape(y, opset1.constant(np.array([0, -1, last], np.int64)), True)

    def build(x):
        loc = opset1.reshape(head(x, per_point * 4, 4),
                             opset1.constant(np.array([0, -1], np.int64)), True)  # fmt: skip
        conf = opset8.softmax(head(x, per_point * classes, classes), -1)
        conf = opset1.reshape(conf, opset1.constant(np.array([0, -1], np.int64)), True)
        size = opset8.slice(opset1.shape_of(x), np.array([2]), np.array([4]), np.array([1]))
        priors = opset8.prior_box(size, opset1.constant(np.array([300, 300], np.int64)), {
            "min_size": [60.0], "max_size": [110.0], "aspect_ratio": [2.0], "flip": False,
            "clip": False, "step": 50.0, "offset": 0.5, "variance": [0.1, 0.1, 0.2, 0.2]})
        priors = opset1.unsqueeze(priors, opset1.constant(np.array([0], np.int64)))
        return opset8.detection_output(loc, conf, priors, {
            "keep_top_k": [20], "top_k": 30, "nms_threshold": 0.45, "normalized": True,
            "code_type": CENTER, "confidence_threshold": 0.3, "clip_after_nms": True})

    model = one_op_model(build, [feature])
    got, want = run_saved(model, [feature], tmp_path)[0], run_cpu(model, [feature])[0]
    assert got.shape == want.shape == (1, 1, 40, 7)
    assert (got[0, 0, :, 0] >= 0).sum() > 10  # detections in both images
    assert_close(got[0, 0, :, :2], want[0, 0, :, :2])
    assert_close(got[0, 0, :, 2:], want[0, 0, :, 2:], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- shapes


def attributes(version, **values):
    op = resolve("DetectionOutput", f"opset{version}")
    base = {a.name: a.default for a in op.attrs if a.default is not REQUIRED}
    base.update({"keep_top_k": (-1,), "nms_threshold": 0.5})
    if version == 1:
        base["num_classes"] = 3
    base.update(values)
    return op, SimpleNamespace(**base)


SHAPES = [
    ([2, 16], [2, 12], [1, 2, 20], {}),
    ([-1, 16], [2, -1], [1, 2, 20], {}),
    ([-1, -1], [-1, -1], [1, 2, 20], {}),
    ([2, -1], [2, 12], [1, 2, -1], {}),
    ([3, 48], [3, 12], [3, 2, 16], {"share_location": False, "normalized": True}),
    ([2, 16], [2, 12], [1, 1, 16],
     {"normalized": True, "variance_encoded_in_target": True, "keep_top_k": (5,)}),
    ([2, 16], [2, 12], [1, 2, 20], {"top_k": 7}),
    ([-1, 16], [-1, 12], [1, 2, 20], {"top_k": 7}),
    ([ov.Dimension(1, 4), 16], [2, 12], [1, 2, 20], {"keep_top_k": (3,)}),
]


@pytest.mark.parametrize("version", [1, 8])
@pytest.mark.parametrize(("loc", "conf", "priors", "values"), SHAPES)
def test_shape_rule_matches_openvino(version, loc, conf, priors, values):
    op, a = attributes(version, **values)
    ov_attrs = {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(a).items()}
    factory = opset1.detection_output if version == 1 else opset8.detection_output
    params = [opset1.parameter(ov.PartialShape(s), ov.Type.f32) for s in (loc, conf, priors)]
    node = factory(*params, ov_attrs)
    want = from_ov_shape(node.get_output_partial_shape(0))
    infos = [TensorInfo(from_ov_shape(ov.PartialShape(s)), ET["f32"]) for s in (loc, conf, priors)]
    assert op.infer(a, infos)[0].shape == want


@pytest.mark.parametrize(("loc", "conf", "priors", "says"), [
    ([2, 16, 1], [2, 12], [1, 2, 20], "box logits must be 2-D"),
    ([2, 16], [2, 12], [1, 2, 18], "multiple of 5"),
    ([2, 16], [2, 11], [1, 2, 20], "class predictions' dim 1"),
    ([2, 16], [3, 12], [1, 2, 20], "images"),
    ([2, 16], [2, 12], [1, 1, 20], "prior boxes' dim 1"),
    ([2, 16], [2, 12], [3, 2, 20], "prior boxes' dim 0"),
])  # fmt: skip
def test_shape_rule_refuses(loc, conf, priors, says):
    op, a = attributes(1)
    infos = [TensorInfo(tuple(s), ET["f32"]) for s in (loc, conf, priors)]
    with pytest.raises(ShapeError, match=says):
        op.infer(a, infos)
    with pytest.raises(RuntimeError):
        opset1.detection_output(*[opset1.parameter(s, np.float32) for s in (loc, conf, priors)],
                                {**{k: (list(v) if isinstance(v, tuple) else v)
                                    for k, v in vars(a).items()}})  # fmt: skip


def test_dynamic_classes_give_unknown_rows():
    op, a = attributes(8, top_k=5)
    infos = [TensorInfo((2, Interval(0, None)), ET["f32"]),
             TensorInfo((2, Interval(0, None)), ET["f32"]),
             TensorInfo((1, 2, Interval(0, None)), ET["f32"])]  # fmt: skip
    assert op.infer(a, infos)[0].shape == (1, 1, Interval(0, None), 7)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def test_validate_reports_bad_attributes(tmp_path):
    inputs = make_inputs(np.random.default_rng(0))
    model = one_op_model(builder(8), inputs)

    def findings(edit):
        found = irrun.validate(saved(model, tmp_path, edit))
        return [d for d in found if d.layer is not None and d.layer.type == "DetectionOutput"]

    found = findings(lambda t: t.replace("caffe.PriorBoxParameter.CORNER", "caffe.CORNER"))
    assert len(found) == 1 and "code_type" in found[0].message
    found = findings(lambda t: t.replace('top_k="-1"', 'top_k="-2"', 1))
    assert len(found) == 1 and "must be -1" in found[0].message
    found = findings(lambda t: t.replace('normalized="false"', 'normalized="maybe"'))
    assert found and "normalized" in found[0].message
    # A declared output dim that the rows cannot be: 2 images * 6 priors * 4 classes = 48.
    found = findings(lambda t: re.sub(r"<dim>48</dim>", "<dim>47</dim>", t))
    assert any(d.level == "error" and "48" in d.message for d in found)


def test_versions_follow_factories():
    from support.ov_oneop import assert_versions_follow_factories

    assert_versions_follow_factories("DetectionOutput", "detection_output")
