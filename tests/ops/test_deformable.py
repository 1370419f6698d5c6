"""DeformableConvolution-1 and -8 against OpenVINO's CPU plugin (``evaluate`` has no kernel
for them) over strides, pads, dilations, auto_pad, group, deformable_group, the mask and
bilinear_interpolation_pad, with offsets that reach past the input; a case by hand; the
shape rule against OpenVINO's, dynamic dims included; validate's findings.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES as ET
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

F32 = ET["f32"]


def _out(size, k, s, d, pb, pe, auto_pad):
    if auto_pad in ("same_upper", "same_lower"):
        return -(-size // s)
    if auto_pad == "valid":
        pb = pe = 0
    return (size + pb + pe - d * (k - 1) - 1) // s + 1


def _case(rng, *, n, cpg, g, dg, co_per_g, size, k, s, d, pb, pe, auto_pad, mask, pad, v1,
          spread, dtype=np.float32):  # fmt: skip
    c = cpg * g
    c = c * dg // np.gcd(c, dg)  # a multiple of both groups
    x = rng.standard_normal((n, c, *size)).astype(dtype)
    w = rng.standard_normal((co_per_g * g, c // g, *k)).astype(dtype)
    out = [_out(size[i], k[i], s[i], d[i], pb[i], pe[i], auto_pad) for i in range(2)]
    taps = k[0] * k[1]
    off = (rng.standard_normal((n, 2 * taps * dg, *out)) * spread).astype(dtype)
    # Some offsets land exactly on the grid (integer and half positions).
    off[..., ::2] = np.round(off[..., ::2] * 2) / 2
    inputs = [x, off, w]
    if mask:
        inputs.append(rng.uniform(-1, 2, (n, taps * dg, *out)).astype(dtype))
    geometry = (list(s), list(pb), list(pe), list(d))
    if v1:

        def build(*p):
            return opset1.deformable_convolution(
                *p, *geometry, auto_pad=auto_pad, group=g, deformable_group=dg
            )
    else:

        def build(*p):
            return opset8.deformable_convolution(
                *p[:3],
                *geometry,
                mask=p[3] if mask else None,
                auto_pad=auto_pad,
                group=g,
                deformable_group=dg,
                bilinear_interpolation_pad=pad,
            )

    return inputs, build


def _check(inputs, build, tmp_path, what=""):
    model = one_op_model(build, inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    want = run_cpu(model, inputs)[0]
    assert_close(got, want, rtol=1e-4, atol=1e-4, scaled_atol=True, what=what)


@pytest.mark.parametrize("v1", [True, False])
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("mask", [False, True])
def test_matches_the_cpu_plugin(v1, pad, mask, tmp_path):
    if v1 and (pad or mask):
        pytest.skip("v1 has neither a mask nor bilinear_interpolation_pad")
    rng = np.random.default_rng(int(v1) * 4 + int(pad) * 2 + int(mask))
    for g, dg, spread in ((1, 1, 1.5), (2, 1, 3.0), (1, 2, 0.7), (2, 4, 4.0)):
        inputs, build = _case(rng, n=2, cpg=2, g=g, dg=dg, co_per_g=3, size=(6, 7), k=(3, 2),
                              s=(1, 2), d=(1, 2), pb=(1, 0), pe=(0, 1), auto_pad="explicit",
                              mask=mask, pad=pad, v1=v1, spread=spread)  # fmt: skip
        _check(inputs, build, tmp_path, what=str((g, dg, spread)))


@settings(max_examples=30, deadline=None)
@given(size=st.tuples(st.integers(1, 7), st.integers(1, 7)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pb=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       pe=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       auto_pad=st.sampled_from(["explicit", "valid", "same_upper", "same_lower"]),
       g=st.sampled_from([1, 2]), dg=st.sampled_from([1, 2, 3]), n=st.integers(1, 2),
       mask=st.booleans(), pad=st.booleans(), v1=st.booleans(),
       spread=st.sampled_from([0.0, 0.5, 2.0, 6.0]), seed=st.integers(0, 2**16))  # fmt: skip
def test_hypothesis_sweep(size, k, s, d, pb, pe, auto_pad, g, dg, n, mask, pad, v1, spread,
                          seed, tmp_path_factory):  # fmt: skip
    if min(_out(size[i], k[i], s[i], d[i], pb[i], pe[i], auto_pad) for i in range(2)) < 1:
        return  # no window fits
    inputs, build = _case(np.random.default_rng(seed), n=n, cpg=1, g=g, dg=dg, co_per_g=2,
                          size=size, k=k, s=s, d=d, pb=pb, pe=pe, auto_pad=auto_pad,
                          mask=mask and not v1, pad=pad, v1=v1, spread=spread)  # fmt: skip
    _check(inputs, build, tmp_path_factory.mktemp("dc"))


def _by_hand(y_off, x_off, pad, tmp_path):
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)  # rows 1 2 3 / 4 5 6 / 7 8 9
    w = np.ones((1, 1, 1, 1), np.float32)
    off = np.zeros((1, 2, 3, 3), np.float32)
    off[0, 0], off[0, 1] = y_off, x_off
    build = lambda *p: opset8.deformable_convolution(  # noqa: E731
        *p, [1, 1], [0, 0], [0, 0], [1, 1], bilinear_interpolation_pad=pad
    )
    return run_saved(one_op_model(build, [x, off, w]), [x, off, w], tmp_path)[0][0, 0]


def test_by_hand(tmp_path):
    # A 1x1 filter of weight 1 reads the input at each position plus its offset: x[y, x] =
    # 3y + x + 1 inside, bilinear in between.
    got = _by_hand(0.5, 0.25, False, tmp_path)
    # At (0, 0): (1 + 0.25) + 3 * 0.5 = 2.75; the last row's y = 2.5 is past the last
    # row, whose corners repeat it: 7 + 0.25 = 7.25 at (2, 0); x = 2.25 likewise at (0, 2).
    assert got[0, 0] == 2.75 and got[2, 0] == 7.25 and got[0, 2] == 4.5
    # Without the pad, -0.5 is outside: nothing; with it, half of x[0, 0] (the other
    # corner, row -1, is zero padding).
    assert _by_hand(-0.5, 0.0, False, tmp_path)[0].tolist() == [0.0, 0.0, 0.0]
    assert _by_hand(-0.5, 0.0, True, tmp_path)[0].tolist() == [0.5, 1.0, 1.5]
    # With the pad, y = 2.5 reads half of row 2 and half of the zero row below.
    assert _by_hand(0.5, 0.0, True, tmp_path)[2].tolist() == [3.5, 4.0, 4.5]


SHAPES = [  # data, offsets, filters, mask
    ((2, 4, 6, 7), (2, 24, 4, 6), (6, 2, 3, 2), (2, 12, 4, 6)),
    ((DYNAMIC, 4, 6, 7), (2, DYNAMIC, 4, DYNAMIC), (6, 2, 3, 2), None),
    (
        (Interval(1, 3), 4, DYNAMIC, 7),
        (Interval(2, 5), 24, 4, 6),
        (DYNAMIC, 2, 3, 2),
        (DYNAMIC, 12, DYNAMIC, 6),
    ),
    (None, (2, 24, 4, 6), (6, 2, 3, 2), None),
    ((2, 4, 6, 7), (DYNAMIC, 24, 4, 6), (6, 2, 3, 2), None),
    (None, None, None, None),
    ((2, 4, 6, 7), (2, 24, 4, 6), (6, 2, DYNAMIC, 2), None),
]


def test_shape_rule():
    rule = resolve("DeformableConvolution", "opset8")
    attrs = attrs_namespace({"strides": (1, 1), "dilations": (1, 1), "pads_begin": (0, 0),
                             "pads_end": (0, 0), "auto_pad": "explicit", "group": 2,
                             "deformable_group": 2, "bilinear_interpolation_pad": False})  # fmt: skip
    for shapes in SHAPES:
        params = [opset1.parameter(to_ov_shape(sh), ov.Type.f32) for sh in shapes[:3]]
        mask = None if shapes[3] is None else opset1.parameter(to_ov_shape(shapes[3]), ov.Type.f32)
        want = opset8.deformable_convolution(*params, [1, 1], [0, 0], [0, 0], [1, 1], mask=mask,
                                             group=2, deformable_group=2)  # fmt: skip
        infos = [TensorInfo(sh, F32) for sh in shapes[:3]]
        if shapes[3] is not None:
            infos.append(TensorInfo(shapes[3], F32))
        (out,) = rule.infer(attrs, infos)
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), shapes
        assert out.element_type == F32
    for shapes, message in (
        (((2, 4, 6), (2, 24, 4, 6), (6, 2, 3, 2)), "data .* must have rank 4"),
        (((2, 4, 6, 7), (2, 20, 4, 6), (6, 2, 3, 2)), "offsets .* must have 24 channels"),
        (((2, 4, 6, 7), (2, 24, 4, 5), (6, 2, 3, 2)), "output's spatial dims"),
        (((2, 4, 6, 7), (3, 24, 4, 6), (6, 2, 3, 2)), "batch of data and offsets"),
        (((2, 4, 6, 7), (2, 24, 4, 6), (6, 3, 3, 2)), "expect 6"),
        (((2, 4, 6, 7), (2, 24, 4, 6), (5, 2, 3, 2)), "not a multiple of group 2"),
        (((2, 4, 6, 7), (2, 24, 4, 6), (6, 2, 3, 2), (2, 6, 4, 6)), "mask .* 12 channels"),
    ):  # fmt: skip
        params = [opset1.parameter(list(sh), ov.Type.f32) for sh in shapes]
        with pytest.raises(RuntimeError):  # OpenVINO refuses them too
            opset8.deformable_convolution(*params[:3], [1, 1], [0, 0], [0, 0], [1, 1],
                                          mask=params[3] if len(params) > 3 else None,
                                          group=2, deformable_group=2)  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(sh, F32) for sh in shapes])
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(attrs, [TensorInfo(sh, ET["i32"]) for sh in SHAPES[0][:3]])


def test_validate(tmp_path):
    rng = np.random.default_rng(3)
    inputs, build = _case(rng, n=1, cpg=2, g=1, dg=1, co_per_g=2, size=(5, 5), k=(3, 3),
                          s=(1, 1), d=(1, 1), pb=(0, 0), pe=(0, 0), auto_pad="explicit",
                          mask=True, pad=True, v1=False, spread=1.0)  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, inputs), path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    for old, new in ((' group="1"', ' group="0"'), ('strides="1, 1"', 'strides="1, 1, 1"')):
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
        assert any(f.level == "error" for f in irrun.validate(path)), (old, new)
    # OpenVINO reads a bool it does not know as false: a warning.
    path.write_text(text.replace('bilinear_interpolation_pad="true"',
                                 'bilinear_interpolation_pad="yes"'))  # fmt: skip
    assert [f.code for f in irrun.validate(path)] == ["lenient-attribute"]
    # Offsets of 3 channels where the 3x3 filter needs 18.
    path.write_text(re.sub(r"<dim>18</dim>", "<dim>3</dim>", text))
    assert any(f.level == "error" for f in irrun.validate(path))


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types_match_the_cpu_plugin(dtype, tmp_path):
    # f16 is computed in f32 and rounded once; f64 in f64 here, in f32 by the plugin.
    inputs, build = _case(np.random.default_rng(5), n=1, cpg=2, g=2, dg=2, co_per_g=2,
                          size=(5, 6), k=(3, 3), s=(1, 1), d=(1, 1), pb=(1, 0), pe=(0, 1),
                          auto_pad="explicit", mask=True, pad=False, v1=False, spread=2.0,
                          dtype=dtype)  # fmt: skip
    model = one_op_model(build, inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    rtol = 2e-3 if dtype == np.float16 else 1e-5
    assert_close(got, run_cpu(model, inputs)[0], rtol=rtol, atol=rtol, scaled_atol=True)


# --- DeformablePSROIPooling -----------------------------------------------------------------


def _psroi_case(rng, *, od, g, scale, bins, trans_std, part, classes, offsets, n=2, r=5):
    data = rng.standard_normal((n, od * g * g, 6, 7)).astype(np.float32)
    rois = np.c_[rng.integers(0, n, r), rng.uniform(-3, 15, (r, 4))].astype(np.float32)
    rois[:, 1:] = np.round(rois[:, 1:] * 4) / 4  # some halves: rounded away from zero
    inputs = [data, rois]
    if offsets:
        inputs.append(rng.standard_normal((r, 2 * classes, part, part)).astype(np.float32))

    def build(*p):
        return opset1.deformable_psroi_pooling(
            p[0], p[1], od, scale, g, "bilinear_deformable", bins[0], bins[1], trans_std, part,
            offsets=p[2] if offsets else None)  # fmt: skip

    return inputs, build


@settings(max_examples=25, deadline=None)
@given(od=st.integers(1, 3), g=st.integers(1, 3), scale=st.sampled_from([0.25, 0.5, 1.0]),
       bins=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       trans_std=st.sampled_from([0.0, 0.1, 0.5]), part=st.integers(1, 3),
       classes=st.integers(1, 3), offsets=st.booleans(), seed=st.integers(0, 2**16))  # fmt: skip
def test_psroi_matches_the_cpu_plugin(od, g, scale, bins, trans_std, part, classes, offsets,
                                      seed, tmp_path_factory):  # fmt: skip
    if od % classes:
        classes = 1
    inputs, build = _psroi_case(np.random.default_rng(seed), od=od, g=g, scale=scale,
                                bins=bins, trans_std=trans_std, part=part, classes=classes,
                                offsets=offsets)  # fmt: skip
    _check(inputs, build, tmp_path_factory.mktemp("ps"))


def test_psroi_by_hand(tmp_path):
    # One 1x1 bin over the ROI (0, 0)-(1, 1) at scale 1: x1 = y1 = -0.5, width 2; with 2x2
    # sub-bins the samples are at -0.5 and 0.5 (clamped to 0 and 0.5): the average of
    # x[0, 0], x[0, 0.5], x[0.5, 0], x[0.5, 0.5] = (0 + 0.5 + 1.5 + 2) / 4 on x = [[0, 1],
    # [3, 4]] (x[0.5, 0.5] = 2, x[0, 0.5] = 0.5, x[0.5, 0] = 1.5).
    data = np.array([[[[0.0, 1.0], [3.0, 4.0]]]], np.float32)
    rois = np.array([[0, 0, 0, 1, 1], [-1, 0, 0, 1, 1], [0, 0, 0, 1, 1]], np.float32)
    build = lambda d, r: opset1.deformable_psroi_pooling(d, r, 1, 1.0, 1, spatial_bins_x=2,  # noqa: E731
                                                         spatial_bins_y=2)  # fmt: skip
    got = run_saved(one_op_model(build, [data, rois]), [data, rois], tmp_path)[0]
    # A negative batch index gives zeros for its ROI alone (the plugin: for every later one).
    assert got.ravel().tolist() == [1.0, 0.0, 1.0]


def test_psroi_shape_rule():
    rule = resolve("DeformablePSROIPooling", "opset1")
    attrs = attrs_namespace({"output_dim": 2, "spatial_scale": 1.0, "group_size": 2,
                             "mode": "bilinear_deformable", "spatial_bins_x": 1,
                             "spatial_bins_y": 1, "trans_std": 1.0, "part_size": 1})  # fmt: skip
    for data, rois, offsets in (((DYNAMIC, 8, 5, 5), (DYNAMIC, 5), None),
                                ((2, 8, 5, 5), (3, DYNAMIC), (3, 2, 1, 1)),
                                ((2, 8, 5, 5), (Interval(1, 9), 5), (DYNAMIC,) * 4),
                                (None, None, None)):  # fmt: skip
        params = [opset1.parameter(to_ov_shape(sh), ov.Type.f32) for sh in (data, rois)]
        off = None if offsets is None else opset1.parameter(to_ov_shape(offsets), ov.Type.f32)
        want = opset1.deformable_psroi_pooling(*params, 2, 1.0, 2, offsets=off)
        infos = [TensorInfo(data, F32), TensorInfo(rois, F32)]
        if offsets is not None:
            infos.append(TensorInfo(offsets, F32))
        (out,) = rule.infer(attrs, infos)
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0))
    with pytest.raises(RuntimeError):
        opset1.deformable_psroi_pooling(opset1.parameter([2, 8, 5], ov.Type.f32),
                                        opset1.parameter([3, 5], ov.Type.f32), 2, 1.0, 2)  # fmt: skip
    with pytest.raises(ShapeError, match=r"data .* must have rank 4"):
        rule.infer(attrs, [TensorInfo((2, 8, 5), F32), TensorInfo((3, 5), F32)])
    with pytest.raises(ShapeError, match=r"rois .* must have rank 2"):
        rule.infer(attrs, [TensorInfo((2, 8, 5, 5), F32), TensorInfo((3, 5, 1), F32)])


def test_psroi_validate(tmp_path):
    inputs, build = _psroi_case(np.random.default_rng(2), od=2, g=2, scale=0.5, bins=(2, 2),
                                trans_std=0.1, part=2, classes=1, offsets=True)  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, inputs), path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    for old, new in (
        ('output_dim="2"', 'output_dim="0"'),
        ('mode="bilinear_deformable"', 'mode="average"'),
    ):
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
        assert any(f.level == "error" for f in irrun.validate(path)), (old, new)


def test_nan_offsets_contribute_nothing(tmp_path):
    # (The CPU plugin crashes on them.)  A 1x1 filter of weight 1 over x = 1..9: a NaN in
    # either coordinate drops the tap, in both sampling modes.
    for pad in (False, True):
        got = _by_hand(np.array([[np.nan, 0, 0], [0, 0, 0], [0, 0, 0]]),
                       np.array([[0, 0, 0], [0, np.nan, 0], [0, 0, 0]]), pad, tmp_path)  # fmt: skip
        assert got.tolist() == [[0.0, 2.0, 3.0], [4.0, 0.0, 6.0], [7.0, 8.0, 9.0]]


def test_channels_must_divide_into_deformable_groups():
    # OpenVINO accepts 3 channels in 2 deformable groups; its reference then reads offsets
    # past their end: irrun refuses the layer.
    params = [opset1.parameter(s, ov.Type.f32) for s in ([1, 3, 4, 4], [1, 4, 4, 4], [1, 3, 1, 1])]
    opset8.deformable_convolution(*params, [1, 1], [0, 0], [0, 0], [1, 1], deformable_group=2)
    rule = resolve("DeformableConvolution", "opset8")
    attrs = attrs_namespace({"strides": (1, 1), "dilations": (1, 1), "pads_begin": (0, 0),
                             "pads_end": (0, 0), "auto_pad": "explicit", "group": 1,
                             "deformable_group": 2, "bilinear_interpolation_pad": False})  # fmt: skip
    shapes = ((1, 3, 4, 4), (1, 4, 4, 4), (1, 3, 1, 1))
    with pytest.raises(ShapeError, match="not a multiple of deformable_group 2"):
        rule.infer(attrs, [TensorInfo(s, F32) for s in shapes])


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_psroi_in_other_float_types(dtype, tmp_path):
    inputs, build = _psroi_case(np.random.default_rng(9), od=2, g=2, scale=0.5, bins=(2, 3),
                                trans_std=0.2, part=2, classes=2, offsets=True)  # fmt: skip
    inputs = [x.astype(dtype) for x in inputs]
    model = one_op_model(build, inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    rtol = 3e-3 if dtype == np.float16 else 1e-5
    assert_close(got, run_cpu(model, inputs)[0], rtol=rtol, atol=rtol, scaled_atol=True)
