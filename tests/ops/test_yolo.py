"""RegionYolo-1 and ReorgYolo-2 against OpenVINO's CPU plugin, by hand, and their shapes.

Neither op has an ``evaluate`` in OpenVINO's core (their reference kernels live in the
template plugin, which the wheel lacks), so values are compared with the CPU plugin and
with loops written here after the reference kernels.  RegionYolo's logistic and softmax
are computed with another exp and summed in another order by the plugin: rtol 1e-5
(f16: the plugin's f32 result rounded, one f16 ulp).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset2, opset4, opset9
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape
from support.typed import assert_same, refusals, run_irrun, run_openvino, sample

import irrun
from irrun.errors import KernelError
from irrun.ir import element_types
from irrun.ir.dims import Interval
from irrun.ir.element_types import ANY, FLOATS
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ET = element_types.ELEMENT_TYPES


def region(coords, classes, num, softmax, mask=(), axis=1, end_axis=3):
    def build(x):
        return opset1.region_yolo(x, coords, classes, num, softmax, list(mask), axis, end_axis)

    return build


def region_input(rng, n, coords, classes, regions, h, w, dtype=np.float32):
    c = regions * (coords + classes + 1)
    return (rng.standard_normal((n, c, h, w)) * 4).astype(dtype)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(1, 3), coords=st.integers(2, 6), classes=st.integers(1, 12),
    num=st.integers(1, 5), softmax=st.booleans(), h=st.integers(1, 5), w=st.integers(1, 5),
    axes=st.sampled_from([(1, 3), (0, 3), (1, 2), (2, 3), (0, 0), (-3, -1)]),
    mask_size=st.integers(1, 4), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_region_yolo_matches_the_plugin(n, coords, classes, num, softmax, h, w, axes,
                                        mask_size, seed, tmp_path_factory):  # fmt: skip
    rng = np.random.default_rng(seed)
    mask = list(range(mask_size))
    regions = num if softmax else mask_size
    x = region_input(rng, n, coords, classes, regions, h, w)
    got, want = run_both(region(coords, classes, num, softmax, mask, *axes), [x],
                         tmp_path_factory.mktemp("ry"))  # fmt: skip
    assert_close(got, want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("softmax", [True, False])
def test_region_yolo_f16(softmax, tmp_path):
    x = region_input(np.random.default_rng(1), 2, 4, 5, 3, 4, 4, np.float16)
    got, want = run_both(region(4, 5, 3, softmax, [0, 1, 2]), [x], tmp_path)
    assert_close(got, want, rtol=1e-3, atol=1e-4)


def region_by_hand(x, coords, classes, regions, softmax):
    """The reference kernel's loops, in float64."""
    out = x.astype(np.float64).copy()
    n, _, h, w = x.shape
    entries = coords + classes + 1
    for b in range(n):
        for r in range(regions):
            base = r * entries
            for e in (0, 1, coords):
                out[b, base + e] = 1 / (1 + np.exp(-out[b, base + e]))
            for i in range(h):
                for j in range(w):
                    z = x[b, base + coords + 1 : base + entries, i, j].astype(np.float64)
                    if softmax:
                        out[b, base + coords + 1 : base + entries, i, j] = (
                            np.exp(z - z.max()) / np.exp(z - z.max()).sum()
                        )
                    else:
                        out[b, base + coords + 1 : base + entries, i, j] = 1 / (1 + np.exp(-z))
    return out


@pytest.mark.parametrize("softmax", [True, False])
def test_region_yolo_by_hand(softmax, tmp_path):
    x = region_input(np.random.default_rng(2), 2, 4, 3, 2, 2, 3)
    model = one_op_model(region(4, 3, 2, softmax, [0, 1], 1, 3), [x])
    got = run_saved(model, [x], tmp_path)[0]
    want = region_by_hand(x, 4, 3, 2, softmax)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-7)
    # w and h (coords 2 and 3) pass through
    assert (got.reshape(x.shape)[:, 2:4] == x[:, 2:4]).all()


def test_region_yolo_refuses_a_map_of_other_channels():
    op = resolve("RegionYolo", "opset1")
    attrs = SimpleNamespace(coords=4, classes=3, num=2, do_softmax=True, mask=(), axis=1,
                            end_axis=3, anchors=())  # fmt: skip
    with pytest.raises(KernelError, match="has 17 channels, but 2 regions"):
        op.kernel(attrs, np.zeros((1, 17, 2, 2), np.float32))


def region_shapes(shape, **attrs):
    kw = dict(coords=4, classes=3, num=2, softmax=True, mask=[0, 1], axis=1, end_axis=3)
    kw.update(attrs)
    a = SimpleNamespace(coords=kw["coords"], classes=kw["classes"], num=kw["num"],
                        do_softmax=kw["softmax"], mask=tuple(kw["mask"]), axis=kw["axis"],
                        end_axis=kw["end_axis"], anchors=())  # fmt: skip
    got = resolve("RegionYolo", "opset1").infer(a, [TensorInfo(shape, ET["f32"])])[0].shape
    p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
    ov_node = region(kw["coords"], kw["classes"], kw["num"], kw["softmax"], kw["mask"],
                     kw["axis"], kw["end_axis"])(p)  # fmt: skip
    return got, from_ov_shape(ov_node.get_output_partial_shape(0))


@pytest.mark.parametrize(("shape", "attrs"), [
    ((1, 16, 5, 5), {}),
    ((2, 16, 5, 5), dict(axis=0, end_axis=3)),
    ((2, 16, 5, 5), dict(axis=2, end_axis=3)),
    ((2, 16, 5, 5), dict(axis=1, end_axis=1)),
    ((2, 16, 5, 5), dict(axis=-2, end_axis=-1)),
    ((2, 16, 5, 5), dict(softmax=False, mask=[0, 1, 2])),
    ((Interval(1, 4), 16, -1, 5), {}),
    ((Interval(1, 4), 16, -1, 5), dict(axis=2)),
    ((-1, -1, 7, Interval(2, 3)), dict(softmax=False)),
])  # fmt: skip
def test_region_yolo_shape_rule_matches_openvino(shape, attrs):
    shape = tuple(Interval(0, None) if d == -1 else d for d in shape)
    got, want = region_shapes(shape, **attrs)
    assert got == want


def test_region_yolo_shape_rule_errors():
    with pytest.raises(ShapeError, match="must be 4-D"):
        region_shapes((1, 16, 5))
    with pytest.raises(ShapeError, match="axis 4 is out of range"):
        region_shapes((1, 16, 5, 5), axis=4)
    with pytest.raises(RuntimeError, match="rank 4"):  # OpenVINO refuses it too
        region(4, 3, 2, True)(opset1.parameter([1, 16, 5], ov.Type.f32))


# --------------------------------------------------------------------------- ReorgYolo


def reorg_by_hand(x, s):
    """The reference kernel's loops."""
    n, c, h, w = x.shape
    flat, out = x.reshape(-1), np.empty(x.size, x.dtype)
    groups = c // (s * s)
    for b in range(n):
        for ch in range(c):
            for i in range(h):
                for j in range(w):
                    k, g = ch // groups, ch % groups
                    src = ((b * groups + g) * h * s + i * s + k // s) * w * s + j * s + k % s
                    out[((b * c + ch) * h + i) * w + j] = flat[src]
    return out.reshape(n, c * s * s, h // s, w // s)


@pytest.mark.parametrize(("shape", "stride"), [
    ((1, 8, 4, 6), 2), ((2, 18, 6, 3), 3), ((1, 4, 2, 2), 2), ((1, 3, 5, 5), 1),
    ((1, 64, 26, 26), 2),
])  # fmt: skip
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.uint8])
def test_reorg_yolo_matches_the_plugin(shape, stride, dtype, tmp_path):
    x = (np.random.default_rng(3).standard_normal(shape) * 50).astype(dtype)
    got, want = run_both(lambda p: opset2.reorg_yolo(p, [stride]), [x], tmp_path)
    assert_close(got, want)
    if x.size < 2000:
        assert_close(got, reorg_by_hand(x, stride))


def test_reorg_yolo_by_hand(tmp_path):
    """[1, 4, 2, 2] with stride 2: one group; channel k takes pixel (k // 2, k % 2) of
    each 2x2 block of the input read as [1, 1, 4, 4]."""
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    got = run_saved(one_op_model(lambda p: opset2.reorg_yolo(p, [2]), [x]), [x], tmp_path)[0]
    assert got.reshape(-1).tolist() == [0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15]


def reorg_shapes(shape, stride):
    a = SimpleNamespace(stride=(stride,))
    got = resolve("ReorgYolo", "opset2").infer(a, [TensorInfo(shape, ET["f32"])])[0].shape
    p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
    return got, from_ov_shape(opset2.reorg_yolo(p, [stride]).get_output_partial_shape(0))


@pytest.mark.parametrize(("shape", "stride"), [
    ((1, 8, 4, 6), 2), ((2, 18, 6, 3), 3),
    ((-1, 8, 4, 6), 2), ((1, -1, -1, 6), 2), ((1, Interval(4, 9), Interval(3, 9), 6), 2),
    ((1, 9, Interval(5, 7), 6), 3),
])  # fmt: skip
def test_reorg_yolo_shape_rule_matches_openvino(shape, stride):
    shape = tuple(Interval(0, None) if d == -1 else d for d in shape)
    got, want = reorg_shapes(shape, stride)
    assert got == want


@pytest.mark.parametrize(("shape", "stride", "says"), [
    ((1, 8, 5, 6), 2, "H 5 is not a multiple of the stride 2"),
    ((1, 8, 4, 7), 2, "W 7 is not a multiple"),
    ((1, 3, 4, 4), 2, "C = 3 must be at least"),
    ((1, 8, 4), 2, "must be 4-D"),
    ((1, 9, Interval(4, 5), 3), 3, "holds no multiple of the stride 3"),
])  # fmt: skip
def test_reorg_yolo_shape_rule_errors(shape, stride, says):
    with pytest.raises(ShapeError, match=says):
        reorg_shapes(shape, stride)
    with pytest.raises(RuntimeError):  # OpenVINO refuses them too
        p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
        opset2.reorg_yolo(p, [stride])


def test_reorg_yolo_refuses_channels_not_a_multiple():
    op = resolve("ReorgYolo", "opset2")
    with pytest.raises(KernelError, match="C a multiple of 4"):
        op.kernel(SimpleNamespace(stride=(2,)), np.zeros((1, 6, 4, 4), np.float32))


def test_validate_reports_bad_yolo_attributes(tmp_path):
    x = region_input(np.random.default_rng(0), 1, 4, 3, 2, 2, 2)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(region(4, 3, 2, True), [x]), path, compress_to_fp16=False)
    path.write_text(path.read_text().replace('coords="4"', 'coords="1"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert [d.code for d in found] == ["bad-attribute"] and "coords" in found[0].message
    x = np.zeros((1, 8, 4, 4), np.float32)
    ov.save_model(one_op_model(lambda p: opset2.reorg_yolo(p, [2]), [x]), path,
                  compress_to_fp16=False)  # fmt: skip
    path.write_text(path.read_text().replace('stride="2"', 'stride="0"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert [d.code for d in found] == ["bad-attribute"] and "stride" in found[0].message


# --------------------------------------------------------------------------- graphs


def yolo_graph(version):
    """A YOLO-style head: a convolution, ReorgYolo of a second branch concatenated in
    (YOLO v2's passthrough), a 1x1 convolution to the regions, RegionYolo (v3's mode),
    its boxes and scores rearranged and fed to NonMaxSuppression (centre boxes)."""
    rng = np.random.default_rng(11)
    classes, regions = 3, 2
    image = opset1.parameter([1, 4, 8, 8], np.float32, name="in0")

    def conv(x, out_channels, size, stride):
        channels = x.get_output_partial_shape(0)[1].get_length()
        weights = rng.standard_normal((out_channels, channels, size, size)).astype(np.float32)
        pad = [size // 2] * 2
        return opset1.convolution(x, opset1.constant(weights * 0.3), [stride] * 2, pad, pad,
                                  [1, 1])  # fmt: skip

    fine = conv(image, 4, 3, 1)  # [1, 4, 8, 8]
    coarse = conv(image, 6, 3, 2)  # [1, 6, 4, 4]
    merged = opset1.concat([opset2.reorg_yolo(fine, [2]), coarse], 1)  # [1, 22, 4, 4]
    head = conv(merged, regions * (4 + 1 + classes), 1, 1)
    region_out = opset1.region_yolo(head, 4, classes, 6, False, [0, 1], 1, 3)

    def i64(*v):
        return opset1.constant(np.array(v, np.int64))

    rows = opset1.reshape(region_out, i64(1, regions, 4 + 1 + classes, 16), False)
    rows = opset1.reshape(opset1.transpose(rows, i64(0, 1, 3, 2)), i64(1, -1, 8), False)
    boxes = opset1.strided_slice(rows, i64(0, 0, 0), i64(0, 0, 4), i64(1, 1, 1), [1, 1, 0],
                                 [1, 1, 0])  # fmt: skip
    scores = opset1.strided_slice(rows, i64(0, 0, 5), i64(0, 0, 8), i64(1, 1, 1), [1, 1, 0],
                                  [1, 1, 0])  # fmt: skip
    scores = opset1.transpose(scores, i64(0, 2, 1))  # [1, classes, boxes]
    limit, iou, score = (
        opset1.constant(np.int64(5)),
        opset1.constant(np.float32(0.3)),
        opset1.constant(np.float32(0.5)),
    )
    if version == 4:
        nms = opset4.non_max_suppression(boxes, scores, limit, iou, score, "center")
    else:
        nms = opset9.non_max_suppression(boxes, scores, limit, iou, score,
                                         opset1.constant(np.float32(0.0)), "center")  # fmt: skip
    region_out.output(0).get_tensor().set_names({"regions"})
    nms.output(0).get_tensor().set_names({"selected"})
    return ov.Model([region_out.output(0), nms.output(0)], [image], "yolo")


@pytest.mark.parametrize("version", [4, 9])
def test_a_yolo_graph_matches_the_plugin(version, tmp_path):
    model = yolo_graph(version)
    x = np.random.default_rng(12).standard_normal((1, 4, 8, 8)).astype(np.float32)
    path = tmp_path / "yolo.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({"in0": x})
    want = run_cpu(model, [x])
    assert_close(got["regions"], want[0], rtol=1e-4, atol=1e-5)
    assert len(got["selected"]) > 2
    assert_close(got["selected"], want[1])


# --------------------------------------------------------------------------- element types

# What the CPU plugin runs ReorgYolo with (f64 computed in f32: values that f32 holds).
REORG_ON_CPU = ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "f8e8m0", "i64", "i32",
                "i16", "i8", "u64", "u32", "u16", "u8", "boolean")  # fmt: skip


def _parameter(shape, et):
    p = opset1.parameter(shape, getattr(ov.Type, et), name="in0")
    p.output(0).get_tensor().set_names({"in0"})
    return p


@pytest.mark.parametrize("et", FLOATS)
@pytest.mark.parametrize("softmax", [True, False])
def test_region_yolo_types_match_the_plugin(et, softmax, tmp_path):
    """Every float type: computed in f32 and rounded once (f64 too, as the plugin
    computes it), so results agree to f32's rtol, to an ulp of f16, and to two of bf16
    (where the plugin's logistic rounds otherwise)."""
    x = region_input(np.random.default_rng(4), 2, 4, 3, 2, 3, 3).astype(ET[et].dtype)
    p = _parameter(list(x.shape), et)
    model = ov.Model([region(4, 3, 2, softmax, [0, 1])(p)], [p], "region")
    (got,) = run_irrun(model, [x], tmp_path)
    (want,) = run_openvino(model, [x], [et], "cpu")
    assert got.dtype == want.dtype == ET[et].dtype
    rtol = {"f16": 1e-3, "bf16": 2**-6}.get(et, 1e-5)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=1e-6, err_msg=et)  # fmt: skip


@pytest.mark.parametrize("et", ANY)
def test_reorg_yolo_types(et, tmp_path):
    """Every type moves as the reference kernel's loops move it, and as the plugin does
    where it runs the type."""
    x = sample(et, (1, 8, 4, 6), np.random.default_rng(len(et)))
    if et == "f64":
        x = x.astype(np.float32).astype(np.float64)
    p = _parameter([1, 8, 4, 6], et)
    model = ov.Model([opset2.reorg_yolo(p, [2])], [p], "reorg")
    (got,) = run_irrun(model, [x], tmp_path)
    assert_same(got, reorg_by_hand(x, 2), et)
    if et in REORG_ON_CPU:
        assert_same(got, run_openvino(model, [x], [et], "cpu")[0], et)


@pytest.mark.parametrize("bad", ["i32", "u8", "f8e4m3", "boolean"])
def test_region_yolo_finds_types_it_does_not_take(bad, tmp_path):
    p = _parameter([1, 12, 3, 3], "f32")
    model = ov.Model([region(4, 1, 2, True, [0, 1])(p)], [p], "region")
    found = [str(d) for d in refusals(model, tmp_path, {0: bad})
             if "does not take" in d.message]  # fmt: skip
    assert len(found) == 1 and f"input 0 is {bad}, which RegionYolo-v1 does not take" in found[0]
    assert "(it takes f64, f32, f16, bf16)" in found[0]
