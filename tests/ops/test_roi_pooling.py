"""ROIPooling-2 and PSROIPooling-1 against OpenVINO's CPU plugin, by hand, and their shapes.

Neither op has an ``evaluate`` in OpenVINO's core, so values are compared with the CPU
plugin (see irrun/ops/roi_pooling.py for where its reference kernels differ).
Tolerances: max pooling and bilinear taps exactly or to 1e-6 (the plugin interpolates
in its own order); PSROIPooling's averages to 1e-5 relative (irrun sums from an f64
integral image, the plugin in f32); f16: one f16 ulp.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset2
from support.ov_oneop import assert_close, one_op_model, run_both, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.errors import KernelError
from irrun.ir import element_types
from irrun.ir.dims import Interval
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES


def roi_pool(pooled, scale, method):
    def build(x, rois):
        return opset2.roi_pooling(x, rois, output_roi=list(pooled), spatial_scale=scale,
                                  method=method)  # fmt: skip

    return build


def psroi_pool(output_dim, group, scale, bins_x, bins_y, mode):
    def build(x, rois):
        return opset1.psroi_pooling(x, rois, output_dim, group, scale, bins_x, bins_y, mode)

    return build


def random_rois(rng, count, batches, low, high, dtype=np.float32):
    corner = rng.uniform(low, high, (count, 2))
    size = rng.uniform(-0.2 * (high - low), high - low, (count, 2))
    ids = rng.integers(0, batches, (count, 1))
    return np.concatenate([ids, corner, corner + size], 1).astype(dtype)


def scaled(rois, factor):
    """The regions with their corners (not their batch ids) times ``factor``."""
    out = rois.copy()
    out[:, 1:] *= factor
    return out


EDGE_ROIS = np.array([[0, 1, 1, 6, 6], [1, 0, 0, 15, 15], [1, -4, 3, 2, 20], [0, 5, 5, 3, 3],
                      [1, 2.5, 3.5, 7.49, 9.5], [0, 1.5, -2.5, 30, 30]], np.float32)  # fmt: skip


@pytest.mark.parametrize("method", ["max", "bilinear"])
@pytest.mark.parametrize("pooled", [(2, 3), (1, 1), (7, 7), (1, 4)])
@pytest.mark.parametrize("scale", [0.5, 1.0, 0.0625])
def test_roi_pooling_matches_the_plugin(method, pooled, scale, tmp_path):
    rng = np.random.default_rng(sum(pooled))
    x = rng.standard_normal((2, 3, 8, 9)).astype(np.float32)
    factor = 16 if method == "max" else 1
    rois = np.concatenate([scaled(EDGE_ROIS, 1 / 16 * factor),
                           scaled(random_rois(rng, 6, 2, -0.2, 1.2), factor)])  # fmt: skip
    got, want = run_both(roi_pool(pooled, scale, method), [x, rois], tmp_path)
    assert_close(got, want, rtol=1e-6, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(
    method=st.sampled_from(["max", "bilinear"]), ph=st.integers(1, 6), pw=st.integers(1, 6),
    scale=st.sampled_from([1.0, 0.5, 0.25, 0.125]), h=st.integers(1, 12), w=st.integers(1, 12),
    count=st.integers(1, 8), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_roi_pooling_sweep(method, ph, pw, scale, h, w, count, seed, tmp_path_factory):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, 3, h, w)).astype(np.float32)
    span = 1.0 if method == "bilinear" else max(h, w) / scale
    rois = random_rois(rng, count, 2, -0.1 * span, 1.1 * span)
    got, want = run_both(roi_pool((ph, pw), scale, method), [x, rois],
                         tmp_path_factory.mktemp("rp"))  # fmt: skip
    assert_close(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("method", ["max", "bilinear"])
def test_roi_pooling_f16(method, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 8, 9)).astype(np.float16)
    rois = (EDGE_ROIS if method == "max" else scaled(EDGE_ROIS, 1 / 16)).astype(np.float16)
    got, want = run_both(roi_pool((3, 2), 0.5, method), [x, rois], tmp_path)
    assert_close(got, want, rtol=1e-3, atol=1e-3)


def test_roi_pooling_by_hand(tmp_path):
    """x = 10 * row + column on a 4x4 map; region (0, 0)..(3, 3) in 2x2 bins: the max of
    each 2x2 quarter is its bottom-right pixel.  Region (1, 2)..(1, 2) is one pixel."""
    x = (10 * np.arange(4)[:, None] + np.arange(4)).astype(np.float32)[None, None]
    rois = np.array([[0, 0, 0, 3, 3], [0, 1, 2, 1, 2]], np.float32)
    got = run_saved(one_op_model(roi_pool((2, 2), 1.0, "max"), [x, rois]), [x, rois],
                    tmp_path)[0]  # fmt: skip
    assert got[0, 0].tolist() == [[11, 13], [31, 33]]
    assert got[1, 0].tolist() == [[21, 21], [21, 21]]
    # bilinear: corners at fractions of the map; 2x2 samples at (0, 0), (0, 3), (3, 0), (3, 3)
    rois = np.array([[0, 0, 0, 1, 1], [0, 0.5, 0.5, 0.5, 0.5]], np.float32)
    got = run_saved(one_op_model(roi_pool((2, 2), 1.0, "bilinear"), [x, rois]), [x, rois],
                    tmp_path)[0]  # fmt: skip
    assert got[0, 0].tolist() == [[0, 3], [30, 33]]
    assert got[1, 0].tolist() == [[16.5, 16.5], [16.5, 16.5]]


@pytest.mark.parametrize("mode", ["average", "bilinear"])
@pytest.mark.parametrize(("output_dim", "group", "bins_x", "bins_y"), [
    (2, 3, 1, 1), (3, 2, 2, 3), (1, 1, 1, 1), (2, 4, 3, 2),
])  # fmt: skip
@pytest.mark.parametrize("scale", [1.0, 0.5, 0.25])
def test_psroi_pooling_matches_the_plugin(mode, output_dim, group, bins_x, bins_y, scale,
                                          tmp_path):  # fmt: skip
    rng = np.random.default_rng(group)
    channels = output_dim * (group * group if mode == "average" else bins_x * bins_y)
    x = rng.standard_normal((2, channels, 8, 9)).astype(np.float32)
    edge = np.concatenate([EDGE_ROIS, [[1, -3, -2, 4, 5], [0, -10, -10, -2, -3],
                                       [1, 6, 6, 2, 2]]]).astype(np.float32)  # fmt: skip
    rois = edge if mode == "average" else scaled(edge, 1 / 16)
    got, want = run_both(psroi_pool(output_dim, group, scale, bins_x, bins_y, mode), [x, rois],
                         tmp_path)  # fmt: skip
    assert_close(got, want, rtol=1e-5, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(
    mode=st.sampled_from(["average", "bilinear"]), output_dim=st.integers(1, 3),
    group=st.integers(1, 4), bins=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    scale=st.sampled_from([1.0, 0.5, 0.0625]), h=st.integers(1, 10), w=st.integers(1, 10),
    count=st.integers(1, 6), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_psroi_pooling_sweep(mode, output_dim, group, bins, scale, h, w, count, seed,
                             tmp_path_factory):  # fmt: skip
    rng = np.random.default_rng(seed)
    channels = output_dim * (group * group if mode == "average" else bins[0] * bins[1])
    x = rng.standard_normal((2, channels, h, w)).astype(np.float32)
    span = 1.0 if mode == "bilinear" else max(h, w) / scale
    rois = random_rois(rng, count, 2, -0.1 * span, 1.1 * span)
    build = psroi_pool(output_dim, group, scale, *bins, mode)
    got, want = run_both(build, [x, rois], tmp_path_factory.mktemp("ps"))
    assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_psroi_pooling_f16(tmp_path):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 8, 6, 6)).astype(np.float16)
    rois = np.array([[0, 0, 0, 5, 5], [0, 1, 2, 4, 3]], np.float16)
    got, want = run_both(psroi_pool(2, 2, 1.0, 1, 1, "average"), [x, rois], tmp_path)
    assert_close(got, want, rtol=1e-3, atol=1e-3)


def test_psroi_pooling_by_hand(tmp_path):
    """One output channel, 2x2 groups on a 4x4 map: channel k = 2 * ph + pw holds k * 100
    plus the pixel's index; bin (ph, pw) averages its 2x2 quarter of channel k."""
    pixel = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = np.stack([k * 100 + pixel for k in range(4)])[None]
    rois = np.array([[0, 0, 0, 3, 3]], np.float32)
    got = run_saved(one_op_model(psroi_pool(1, 2, 1.0, 1, 1, "average"), [x, rois]),
                    [x, rois], tmp_path)[0]  # fmt: skip
    quarters = [[np.mean(pixel[:2, :2]), np.mean(pixel[:2, 2:])],
                [np.mean(pixel[2:, :2]), np.mean(pixel[2:, 2:])]]  # fmt: skip
    want = np.array(quarters) + np.array([[0, 100], [200, 300]])
    np.testing.assert_allclose(got[0, 0], want, rtol=1e-6)


def test_roi_pooling_refuses_bad_batch_ids():
    op = resolve("ROIPooling", "opset2")
    a = SimpleNamespace(output_size=(), output_roi=(), pooled_h=2, pooled_w=2,
                        spatial_scale=1.0, method="max")  # fmt: skip
    with pytest.raises(KernelError, match="batch ids"):
        op.kernel(a, np.zeros((1, 1, 4, 4), np.float32), np.array([[1, 0, 0, 1, 1]], np.float32))


def shapes_of(build, x_shape, rois_shape, op, attrs):
    infos = [TensorInfo(x_shape, ET["f32"]), TensorInfo(rois_shape, ET["f32"])]
    got = resolve(*op).infer(SimpleNamespace(**attrs), infos)[0].shape
    p = [opset1.parameter(to_ov_shape(s), ov.Type.f32) for s in (x_shape, rois_shape)]
    return got, from_ov_shape(build(*p).get_output_partial_shape(0))


ROI_ATTRS = dict(output_size=(), output_roi=(), pooled_h=2, pooled_w=3, spatial_scale=0.5,
                 method="max")  # fmt: skip
PS_ATTRS = dict(output_dim=2, group_size=3, spatial_scale=0.5, mode="average",
                spatial_bins_x=1, spatial_bins_y=1)  # fmt: skip


@pytest.mark.parametrize(("x_shape", "rois_shape"), [
    ((2, 18, 8, 9), (5, 5)),
    ((-1, 18, -1, -1), (-1, 5)),
    ((2, -1, 8, 9), (Interval(1, 7), -1)),
    (None, None),
])  # fmt: skip
def test_shape_rules_match_openvino(x_shape, rois_shape):
    def fix(shape):
        return None if shape is None else tuple(Interval(0, None) if d == -1 else d for d in shape)

    x_shape, rois_shape = fix(x_shape), fix(rois_shape)
    got, want = shapes_of(roi_pool((2, 3), 0.5, "max"), x_shape, rois_shape,
                          ("ROIPooling", "opset2"), ROI_ATTRS)  # fmt: skip
    assert got == want
    got, want = shapes_of(psroi_pool(2, 3, 0.5, 1, 1, "average"), x_shape, rois_shape,
                          ("PSROIPooling", "opset1"), PS_ATTRS)  # fmt: skip
    assert got == want


@pytest.mark.parametrize(("x_shape", "rois_shape", "says"), [
    ((2, 18, 8), (5, 5), "must be 4-D"),
    ((2, 18, 8, 9), (5, 4), "must be 5"),
    ((2, 18, 8, 9), (5, 5, 1), "must be 2-D"),
])  # fmt: skip
def test_shape_rule_errors(x_shape, rois_shape, says):
    for op, attrs in (
        (("ROIPooling", "opset2"), ROI_ATTRS),
        (("PSROIPooling", "opset1"), PS_ATTRS),
    ):
        infos = [TensorInfo(x_shape, ET["f32"]), TensorInfo(rois_shape, ET["f32"])]
        with pytest.raises(ShapeError, match=says):
            resolve(*op).infer(SimpleNamespace(**attrs), infos)
    with pytest.raises(RuntimeError):  # and OpenVINO
        p = [opset1.parameter(list(s), ov.Type.f32) for s in (x_shape, rois_shape)]
        roi_pool((2, 3), 0.5, "max")(*p)


def test_psroi_shape_rule_checks_the_channels():
    infos = [TensorInfo((2, 17, 8, 9), ET["f32"]), TensorInfo((5, 5), ET["f32"])]
    with pytest.raises(ShapeError, match="output_dim \\* group_size\\*\\*2 = 18"):
        resolve("PSROIPooling", "opset1").infer(SimpleNamespace(**PS_ATTRS), infos)
    with pytest.raises(RuntimeError, match="channels"):
        p = [opset1.parameter(s, ov.Type.f32) for s in ([2, 17, 8, 9], [5, 5])]
        psroi_pool(2, 3, 0.5, 1, 1, "average")(*p)


def test_validate_reports_bad_attributes(tmp_path):
    x, rois = np.zeros((1, 8, 4, 4), np.float32), np.zeros((2, 5), np.float32)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(roi_pool((2, 2), 1.0, "max"), [x, rois]), path,
                  compress_to_fp16=False)  # fmt: skip
    text = path.read_text()
    path.write_text(text.replace('method="max"', 'method="avg"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert [d.code for d in found] == ["bad-attribute"] and "method" in found[0].message
    path.write_text(text.replace('pooled_h="2"', 'pooled_h="0"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert "pooled_h and pooled_w must be positive" in found[0].message
    ov.save_model(one_op_model(psroi_pool(2, 2, 1.0, 1, 1, "average"), [x, rois]), path,
                  compress_to_fp16=False)  # fmt: skip
    path.write_text(path.read_text().replace('group_size="2"', 'group_size="0"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert found and "group_size must be positive" in found[0].message
