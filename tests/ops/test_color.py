"""NV12toRGB/BGR and I420toRGB/BGR against OpenVINO's CPU plugin (``evaluate`` has no
kernel for them): one plane and two or three, u8 and the floats; u8 over every (Y, U, V)
triple, where irrun rounds ties half away from zero as the reference kernel does and the
plugin half to even; a case by hand; the shape rules against OpenVINO's, dynamic dims
included; validate's findings.
"""

from __future__ import annotations

import numpy as np
import pytest

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

OPS = [("nv12", False), ("nv12", True), ("i420", False), ("i420", True)]


def _factory(planes, bgr):
    return getattr(opset8, f"{planes}_to_{'bgr' if bgr else 'rgb'}")


def _type(planes, bgr):
    return f"{planes.upper()}to{'BGR' if bgr else 'RGB'}"


def _planes(rng, planes, split, n, h, w, dtype):
    def make(shape):
        if dtype == np.uint8:
            return rng.integers(0, 256, shape).astype(dtype)
        return rng.uniform(-20, 280, shape).astype(dtype)

    if not split:
        return [make((n, h * 3 // 2, w, 1))]
    if planes == "nv12":
        return [make((n, h, w, 1)), make((n, h // 2, w // 2, 2))]
    return [make((n, h, w, 1)), make((n, h // 2, w // 2, 1)), make((n, h // 2, w // 2, 1))]


def _ties(inputs, planes, got, want):
    """Where irrun and the plugin differ, irrun is one above and the f32 value a tie."""
    diff = got.astype(np.int64) - want.astype(np.int64)
    assert set(np.unique(diff)) <= {0, 1}
    return int(diff.sum())


@pytest.mark.parametrize(("planes", "bgr"), OPS)
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8])
@pytest.mark.parametrize("split", [False, True])
def test_color_matches_cpu_plugin(planes, bgr, dtype, split, tmp_path):
    rng = np.random.default_rng(len(planes) + bgr + split)
    for n, h, w in ((1, 2, 2), (2, 6, 8), (1, 10, 4)):
        inputs = _planes(rng, planes, split, n, h, w, dtype)
        model = one_op_model(_factory(planes, bgr), inputs)
        got, want = run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0]
        if dtype == np.uint8:
            assert got.dtype == want.dtype and got.shape == want.shape
            _ties(inputs, planes, got, want)
        else:
            assert_close(got, want)


@pytest.mark.parametrize(("planes", "bgr"), [("i420", False), ("nv12", True)])
def test_color_u8_every_triple(planes, bgr, tmp_path):
    """Every (U, V) pair with Y in 16 steps: irrun and the plugin agree but at ties."""
    u = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256, 1)[None, ..., None]
    v = np.repeat(np.arange(256, dtype=np.uint8)[None, :], 256, 0)[None, ..., None]
    ties = 0
    for shift in range(0, 64, 4):
        block = (np.arange(4).reshape(2, 2) * 64 + shift).astype(np.uint8)
        y = np.tile(block, (256, 256))[None, ..., None]
        inputs = [y, u, v] if planes == "i420" else [y, np.concatenate([u, v], -1)]
        model = one_op_model(_factory(planes, bgr), inputs)
        got, want = run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0]
        if shift == 0:
            # The ties themselves: recompute in f32 where the two differ.
            where = np.argwhere(got != want)
            f = np.float32
            for _, i, j, ch in where[:50]:
                c, d, e = f(y[0, i, j, 0]) - f(16), f(u[0, i // 2, j // 2, 0]) - f(128), \
                    f(v[0, i // 2, j // 2, 0]) - f(128)  # fmt: skip
                rgb = [f(1.164) * c + f(1.596) * e, f(1.164) * c - f(0.391) * d - f(0.813) * e,
                       f(1.164) * c + f(2.018) * d]  # fmt: skip
                value = rgb[2 - ch if bgr else ch]
                assert value - np.floor(value) == 0.5, value
        ties += _ties(inputs, planes, got, want)
    assert 0 < ties < 0.01 * 3 * 256 * 256 * 4 * 16


def test_color_by_hand(tmp_path):
    # Y 16 U V 128 is black, Y 235 U V 128 white (1.164 * 219 = 254.9 -> 255); a single
    # NV12 plane of a 2x2 image holds 4 Y values then one U, V pair.
    plane = np.array([16, 235, 126, 81, 90, 240], np.uint8).reshape(1, 3, 2, 1)
    got = run_saved(one_op_model(opset8.nv12_to_rgb, [plane]), [plane], tmp_path)[0]
    # U 90, V 240 (a red): d = -38, e = 112.
    f = np.float32
    for k, y in enumerate((16, 235, 126, 81)):
        c = f(y - 16)
        want = [f(1.164) * c + f(1.596) * f(112),
                f(1.164) * c - f(0.391) * f(-38) - f(0.813) * f(112),
                f(1.164) * c + f(2.018) * f(-38)]  # fmt: skip
        want = [min(max(int(np.floor(x + f(0.5))), 0), 255) for x in want]
        assert got[0, k // 2, k % 2].tolist() == want
    assert got[0, 0, 0].tolist() == [179, 0, 0]
    got = run_saved(one_op_model(opset8.i420_to_bgr, [plane.astype(np.float32)]),
                    [plane.astype(np.float32)], tmp_path)[0]  # fmt: skip
    # I420: U is 90 and V 240 too (one value each); BGR reverses the channels.
    assert got[0, 0, 0].tolist() == pytest.approx([0, 0, 178.752], abs=1e-3)


@pytest.mark.parametrize(("planes", "bgr"), OPS)
def test_color_shape_rule(planes, bgr):
    rule = resolve(_type(planes, bgr), "opset8")
    f32 = ELEMENT_TYPES["f32"]
    chroma = 2 if planes == "nv12" else 1
    count = 1 if planes == "nv12" else 2
    cases = [
        [(2, 9, 8, 1)], [(DYNAMIC, DYNAMIC, DYNAMIC, 1)], [(1, Interval(3, 10), Interval(4, 9), 1)],
        [None], [(1, 0, 0, 1)],
        [(2, 6, 8, 1)] + [(2, 3, 4, chroma)] * count,
        [(DYNAMIC, 6, DYNAMIC, 1)] + [(2, DYNAMIC, 4, chroma)] * count,
        [None] + [(2, Interval(2, 5), 4, chroma)] * count,
        [(2, Interval(4, 20), 8, 1)] + [(DYNAMIC, Interval(1, 5), DYNAMIC, DYNAMIC)] * count,
        [None] * (1 + count),
    ]
    for shapes in cases:
        params = [opset1.parameter(to_ov_shape(s), ov.Type.f32) for s in shapes]
        want = _factory(planes, bgr)(*params)
        (out,) = rule.infer(None, [TensorInfo(s, f32) for s in shapes])
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), shapes
        assert out.element_type == f32
    for shapes, message in (
        ([(2, 8, 8, 1)], "multiple of 3"), ([(2, 9, 8, 2)], "1 channel"),
        ([(2, 9, 6)], "4-D"),
        ([(2, 5, 8, 1)] + [(2, DYNAMIC, 4, chroma)] * count, "height 5 must be even"),
        ([(2, 9, 7, 1)], "width 7 must be even"),
        ([(2, 6, 8, 1)] + [(2, 3, 5, chroma)] * count, "inconsistent"),
        ([(2, 6, 8, 1)] + [(2, 3, 4, 3)] * count, "channel"),
    ):  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(None, [TensorInfo(s, f32) for s in shapes])
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(None, [TensorInfo((1, 3, 2, 1), ELEMENT_TYPES["i32"])])
    if planes == "i420":
        with pytest.raises(ShapeError, match="3 \\(Y, U, V\\)"):
            rule.infer(None, [TensorInfo((2, 6, 8, 1), f32), TensorInfo((2, 3, 4, 1), f32)])
        with pytest.raises(ShapeError, match="differ"):
            rule.infer(None, [TensorInfo((2, 6, 8, 1), f32), TensorInfo((2, 3, 4, 1), f32),
                              TensorInfo((2, 2, 4, 1), f32)])  # fmt: skip
    with pytest.raises(ShapeError, match="one element type"):
        rule.infer(None, [TensorInfo((2, 6, 8, 1), f32)]
                   + [TensorInfo((2, 3, 4, chroma), ELEMENT_TYPES["u8"])] * count)


def test_color_validate(tmp_path):
    plane = np.zeros((1, 6, 4, 1), np.uint8)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(opset8.i420_to_rgb, [plane]), path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    # A declared output height that the input's cannot give.
    path.write_text(text.replace("<dim>4</dim>\n\t\t\t\t\t<dim>4</dim>", "<dim>5</dim>\n\t\t\t\t\t<dim>4</dim>"))
    assert path.read_text() != text
    assert any(d.level == "error" for d in irrun.validate(path))
