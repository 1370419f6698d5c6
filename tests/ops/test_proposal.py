"""Proposal-1 and -4 against OpenVINO's CPU plugin, by hand, and against its shape
inference.

``ov.Model.evaluate`` cannot run Proposal (its reference kernel lives in the template
plugin, which the pip wheel lacks), so values are compared with the CPU plugin.  The
foreground scores are distinct (a permutation) and ``pre_nms_topn`` stays below the
number of boxes with a positive score: OpenVINO picks the best boxes with
``std::partial_sort`` on the score alone, whose order of equal scores is unspecified.
The plugin leaves version 4's scores after the last box unwritten (the reference
kernel, and irrun, write zeros), so those are checked by hand.  The plugin crashes
(a segmentation fault) when fewer than 8 boxes reach its NMS (``min(pre_nms_topn,
A * H * W) < 8``), so every case compared with it has more.

Boxes agree to 1e-5 relative (the plugin's ``exp`` may differ from NumPy's by an ulp).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset4
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved
from support.ov_shapes import from_ov_shape

import irrun
from irrun.ir import element_types
from irrun.ir.attributes import REQUIRED
from irrun.ir.dims import Interval
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES
U = np.uint32
UINT_ATTRS = ("base_size", "pre_nms_topn", "post_nms_topn", "feat_stride", "min_size")


def make_inputs(rng, images=2, height=4, width=5, anchors=6, image=(200, 250, 1.0),
                dtype=np.float32):  # fmt: skip
    n = images * 2 * anchors * height * width
    probs = (rng.permutation(n) + 1).reshape(images, 2 * anchors, height, width) / n
    deltas = rng.normal(0, 0.3, (images, 4 * anchors, height, width))
    return [probs.astype(dtype), deltas.astype(dtype), np.array(image, dtype)]


def attributes(**values):
    a = {"base_size": 16, "pre_nms_topn": 30, "post_nms_topn": 12, "nms_thresh": 0.5,
         "feat_stride": 16, "min_size": 4, "ratio": [0.5, 1.0, 2.0], "scale": [8.0, 16.0]}  # fmt: skip
    a.update(values)
    return {k: U(v) if k in UINT_ATTRS else v for k, v in a.items()}


def builder(version, **values):
    factory = opset1.proposal if version == 1 else opset4.proposal
    a = attributes(**values)
    return lambda *p: factory(*p, a)


def check(tmp_path, version, seed=0, images=2, height=4, width=5, image=(200, 250, 1.0),
          dtype=np.float32, **values):  # fmt: skip
    a = attributes(**values)
    anchors = len(a["ratio"]) * len(a["scale"])
    inputs = make_inputs(np.random.default_rng(seed), images, height, width, anchors, image,
                         dtype)  # fmt: skip
    outputs = 1 if version == 1 else 2
    model = one_op_model(builder(version, **values), inputs, outputs)
    got, want = run_saved(model, inputs, tmp_path), run_cpu(model, inputs)
    rois, want_rois = got[0].astype(np.float64), want[0].astype(np.float64)
    assert got[0].shape == want[0].shape and got[0].dtype == want[0].dtype
    assert_close(rois[:, 0], want_rois[:, 0], what="images")
    tol = 1e-3 if dtype == np.float16 else 1e-5
    assert_close(rois[:, 1:], want_rois[:, 1:], rtol=tol, atol=tol, what=f"boxes {values}")
    if version == 4:
        post = int(a["post_nms_topn"])
        written = np.ones(len(rois), bool)  # the plugin's scores up to each image's marker
        for i in range(images):
            block = rois[i * post:(i + 1) * post, 0]
            end = np.nonzero(block == -1)[0]
            if len(end):
                written[i * post + end[0]:(i + 1) * post] = False
        assert got[1].shape == want[1].shape and got[1].dtype == want[1].dtype
        assert_close(got[1][written], want[1][written], what="scores")
        assert not got[1][~written].any()
    return got


CASES = [
    {},
    {"framework": "tensorflow"},
    {"framework": "tensorflow", "clip_after_nms": True, "normalize": True},
    {"framework": "tensorflow", "clip_before_nms": False, "image": (150, 260, 1.0)},
    {"clip_before_nms": False},
    {"clip_after_nms": True},
    {"clip_before_nms": False, "clip_after_nms": True},
    {"normalize": True},
    {"box_size_scale": 2.0, "box_coordinate_scale": 3.0},
    {"image": (200, 250, 2.0, 0.5)},
    {"min_size": 40},
    {"pre_nms_topn": 90, "post_nms_topn": 100},
    {"post_nms_topn": 1},
    {"nms_thresh": 0.95},
    {"nms_thresh": 0.1},
    {"images": 1},
    {"ratio": [0.7], "scale": [3.0]},
    {"ratio": [1.5, 0.3], "scale": [2.0, 4.0, 6.0], "framework": "tensorflow"},
    {"base_size": 7, "feat_stride": 5},
    {"height": 1, "width": 2, "pre_nms_topn": 8},
]


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_matches_cpu_plugin(version, case, tmp_path):
    check(tmp_path, version, **case)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_element_types(dtype, tmp_path):
    got = check(tmp_path, 4, dtype=dtype, image=(60, 80, 1.0), feat_stride=4, scale=[2.0])
    assert got[0].dtype == got[1].dtype == dtype


def test_bf16_is_computed_in_f32(tmp_path):
    """bf16 inputs: irrun computes in f32 and rounds once, as the plugin does with f32;
    compared with the plugin's f32 result on the same (bf16-exact) values, rounded."""
    bf16 = ml_dtypes.bfloat16
    # 48 scores k / 48: distinct in bf16 too.
    inputs = [x.astype(bf16) for x in make_inputs(np.random.default_rng(5), 1, 2, 2)]
    values = {"pre_nms_topn": 12, "min_size": 1}
    params = [opset1.parameter(list(x.shape), ov.Type.bf16, name=f"in{i}")
              for i, x in enumerate(inputs)]  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model(builder(4, **values)(*params).outputs(), params), path,
                  compress_to_fp16=False)  # fmt: skip
    got = list(irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)}).values())
    wide = [x.astype(np.float32) for x in inputs]
    want = run_cpu(one_op_model(builder(4, **values), wide, 2), wide)
    assert_close(got[0], want[0].astype(bf16))
    kept = int(np.argmax(got[0][:, 0] == -1)) or len(got[0])  # the plugin writes only these
    assert kept > 2
    assert_close(got[1][:kept], want[1][:kept].astype(bf16))
    assert not got[1][kept:].astype(np.float32).any()


@settings(max_examples=25, deadline=None)
@given(version=st.sampled_from([1, 4]), images=st.integers(1, 3), height=st.integers(1, 6),
       width=st.integers(1, 6), ratios=st.integers(1, 3), scales=st.integers(1, 2),
       tf=st.booleans(), clip=st.sampled_from(["", "before", "after", "both"]),
       normalize=st.booleans(), post=st.integers(1, 20), nms=st.sampled_from([0.3, 0.7, 0.99]),
       four=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_hypothesis(version, images, height, width, ratios, scales, tf, clip, normalize, post,
                    nms, four, seed, tmp_path_factory):  # fmt: skip
    anchors = ratios * scales
    if anchors * height * width < 16:
        return  # the plugin crashes with fewer than 8 boxes in its NMS
    values = dict(ratio=[0.5, 1.0, 2.0][:ratios], scale=[4.0, 8.0][:scales],
                  framework="tensorflow" if tf else "", clip_before_nms=clip in ("before", "both"),
                  clip_after_nms=clip in ("after", "both"), normalize=normalize,
                  post_nms_topn=post, nms_thresh=nms, min_size=1,
                  pre_nms_topn=anchors * height * width // 2)  # fmt: skip
    image = (120, 100, 1.0, 1.5) if four else (120, 100, 1.0)
    check(tmp_path_factory.mktemp("prop"), version, seed, images, height, width, image,
          **values)  # fmt: skip


def test_by_hand(tmp_path):
    """One point, one anchor (base 16, ratio 1, scale 1: the box 0..15, 16 wide counting
    the offset 1, centred on 8), zero deltas: the box 8 -/+ 16 / 2 = 0..16, scoring
    0.75; a second image's box is twice as wide: 8 -/+ 16 = -8..24."""
    probs = np.array([0.25, 0.75, 0.5, 0.5], np.float32).reshape(2, 2, 1, 1)
    deltas = np.zeros((2, 4, 1, 1), np.float32)
    deltas[1, 2] = np.log(2)
    image = np.array([100, 100, 1], np.float32)
    build = builder(4, ratio=[1.0], scale=[1.0], post_nms_topn=2, pre_nms_topn=1,
                    clip_before_nms=False)  # fmt: skip
    model = one_op_model(build, [probs, deltas, image], 2)
    rois, scores = run_saved(model, [probs, deltas, image], tmp_path)
    want = np.array([[0, 0, 0, 16, 16], [-1, 0, 0, 0, 0],
                     [1, -8, 0, 24, 16], [-1, 0, 0, 0, 0]], np.float32)  # fmt: skip
    assert_close(rois, want, rtol=1e-6, atol=1e-5)
    assert_close(scores, np.array([0.75, 0, 0.5, 0], np.float32))
    # The CPU plugin cannot check this: it crashes with fewer than 8 boxes in its NMS.


# --------------------------------------------------------------------------- shapes


SHAPES = [
    ([2, 6, 4, 5], [2, 12, 4, 5], [3]),
    ([2, 6, 4, 5], [2, 12, 4, 6], [4]),
    ([-1, 6, 4, 5], [-1, -1, -1, -1], [-1]),
    ([-1, -1, -1, -1], [3, 12, 4, 5], [3]),
    ([ov.Dimension(1, 5), 6, 4, 5], [ov.Dimension(2, 8), 12, 4, 5], [3]),
    (None, None, None),
]


@pytest.mark.parametrize("version", [1, 4])
@pytest.mark.parametrize(("probs", "deltas", "image"), SHAPES)
def test_shape_rule_matches_openvino(version, probs, deltas, image):
    shapes = [ov.PartialShape.dynamic() if s is None else ov.PartialShape(s)
              for s in (probs, deltas, image)]  # fmt: skip
    params = [opset1.parameter(s, ov.Type.f32) for s in shapes]
    node = builder(version)(*params)
    want = [from_ov_shape(o.get_partial_shape()) for o in node.outputs()]
    op = resolve("Proposal", f"opset{version}")
    infos = [TensorInfo(from_ov_shape(s), ET["f32"]) for s in shapes]
    assert [o.shape for o in op.infer(namespace(op), infos)] == want


def namespace(op):
    base = {a.name: a.default for a in op.attrs if a.default is not REQUIRED}
    base.update({k: (int(v) if k in UINT_ATTRS else v) for k, v in attributes().items()})
    base["ratio"], base["scale"] = tuple(base["ratio"]), tuple(base["scale"])
    return SimpleNamespace(**base)


@pytest.mark.parametrize(("probs", "deltas", "image", "says"), [
    ([2, 6, 4], [2, 12, 4, 5], [3], "class_probs must be 4-D"),
    ([2, 6, 4, 5], [2, 10, 4, 5], [3], "4 \\* anchors"),
    ([2, 6, 4, 5], [3, 12, 4, 5], [3], "images"),
    ([2, 6, 4, 5], [2, 12, 4, 5], [5], "3 or 4 values"),
    ([2, 6, 4, 5], [2, 12, 4, 5], [1, 3], "image_shape must be 1-D"),
])  # fmt: skip
def test_shape_rule_refuses(probs, deltas, image, says):
    op = resolve("Proposal", "opset4")
    infos = [TensorInfo(tuple(s), ET["f32"]) for s in (probs, deltas, image)]
    with pytest.raises(ShapeError, match=says):
        op.infer(namespace(op), infos)
    with pytest.raises(RuntimeError):
        builder(4)(*[opset1.parameter(s, np.float32) for s in (probs, deltas, image)])


def test_run_refuses_mismatched_anchors(tmp_path):
    """Seven channels (3.5 anchors) pass OpenVINO's shape inference; the kernel refuses
    them, as it refuses anchors other than len(ratio) * len(scale)."""
    inputs = [np.zeros((1, 7, 2, 2), np.float32), np.zeros((1, 14, 2, 2), np.float32),
              np.array([100, 100, 1], np.float32)]  # fmt: skip
    model = one_op_model(builder(1), inputs)
    with pytest.raises(irrun.errors.IrrunError, match="anchors"):
        run_saved(model, inputs, tmp_path)


# --------------------------------------------------------------------------- validate


def saved(model: ov.Model, tmp_path, edit) -> Path:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    path.write_text(edit(path.read_text()))
    return path


def test_validate_reports_bad_attributes(tmp_path):
    inputs = make_inputs(np.random.default_rng(0))
    model = one_op_model(builder(4), inputs, 2)

    def findings(edit):
        found = irrun.validate(saved(model, tmp_path, edit))
        return [d for d in found if d.layer is not None and d.layer.type == "Proposal"]

    found = findings(lambda t: t.replace('framework=""', 'framework="mxnet"'))
    assert len(found) == 1 and "framework" in found[0].message
    found = findings(lambda t: t.replace('ratio="0.5, 1, 2"', 'ratio=""'))
    assert found and "ratio" in found[0].message
    found = findings(lambda t: t.replace('post_nms_topn="12"', 'post_nms_topn="-3"'))
    assert found and "post_nms_topn" in found[0].message
    assert not findings(lambda t: t)


def test_versions_follow_factories():
    from support.ov_oneop import assert_versions_follow_factories

    assert_versions_follow_factories("Proposal", "proposal")


def test_unbounded_images():
    op = resolve("Proposal", "opset4")
    infos = [TensorInfo((Interval(0, None), 6, 4, 5), ET["f32"]),
             TensorInfo((Interval(0, None), 12, 4, 5), ET["f32"]), TensorInfo((3,), ET["f32"])]
    out = op.infer(namespace(op), infos)
    assert [o.shape for o in out] == [(Interval(0, None), 5), (Interval(0, None),)]
