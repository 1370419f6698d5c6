"""NV12toRGB/BGR and I420toRGB/BGR against OpenVINO's CPU plugin (``evaluate`` has no
kernel for them): one plane and two or three, u8 and the floats; u8 over every (Y, U, V)
triple, where irrun rounds ties half away from zero as the reference kernel does and the
plugin half to even; a case by hand; the shape rules against OpenVINO's, dynamic dims
included; validate's findings.
"""

from __future__ import annotations

from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_reference, run_saved  # noqa: E402
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


# RGBtoNV12-17 and BGRtoNV12-17.  OpenVINO 2026.4 has no Python factory for them and runs
# them neither in its CPU plugin nor in evaluate: the values are checked against a scalar
# transcription of its reference kernel (and the test notices when evaluate learns them),
# the shapes against OpenVINO's shape inference of the IR.

_PRECISION = {"u8": "U8", "f32": "FP32", "f16": "FP16", "bf16": "BF16", "f64": "FP64"}


def _to_nv12_xml(op, single, shape, et="u8"):
    """An IR of Parameter -> ``op`` -> Result(s); ``shape`` as IR dims (ints, "-1", "2..5")."""
    prec = _PRECISION[et]
    dims = "".join(f"<dim>{d}</dim>" for d in shape)
    outs = 1 if single else 2
    layers, edges, ports = [], ['<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>'], ""
    for k in range(outs):
        ports += f'<port id="{k + 1}" precision="{prec}" names="out{k}"/>'
        layers.append(f'<layer id="{2 + k}" name="r{k}" type="Result" version="opset1"><input>'
                      f'<port id="0" precision="{prec}"/></input></layer>')
        edges.append(f'<edge from-layer="1" from-port="{k + 1}" to-layer="{2 + k}" to-port="0"/>')
    return f"""<?xml version="1.0"?>
<net name="m" version="11"><layers>
<layer id="0" name="in0" type="Parameter" version="opset1">
<data shape="{",".join(map(str, shape))}" element_type="{et}"/>
<output><port id="0" precision="{prec}" names="in0">{dims}</port></output></layer>
<layer id="1" name="op" type="{op}" version="opset17"><data single_plane="{str(single).lower()}"/>
<input><port id="0" precision="{prec}">{dims}</port></input><output>{ports}</output></layer>
{"".join(layers)}
</layers><edges>{"".join(edges)}</edges></net>"""


def _ov_to_nv12(op, single, shape, et="u8"):
    return ov.Core().read_model(_to_nv12_xml(op, single, shape, et).encode(), b"")


def _saved_to_nv12(op, single, x, tmp_path):
    """The op's IR (inputs and outputs as OpenVINO infers them) saved for irrun."""
    path = tmp_path / "m.xml"
    ov.save_model(_ov_to_nv12(op, single, list(x.shape), _PRECISION_OF[x.dtype]), path, compress_to_fp16=False)
    return path


def _scalar_nv12(x, bgr):
    """OpenVINO's reference kernel transcribed pixel by pixel: Y, U, V of each pixel from
    f32 R, G, B, clipped (u8: std::round first) and stored; each U, V pair the stored
    block's mean, summed in f32."""
    f = np.float32
    dtype = x.dtype

    def store(a):
        if dtype == np.uint8:
            a = f(np.floor(abs(a) + f(0.5))) * (1 if a >= 0 else -1)
        a = min(max(a, f(0)), f(255))
        if dtype == ml_dtypes.bfloat16:
            return _ov_bf16(np.float32(a))
        return np.array(a, np.float32).astype(dtype)

    n, h, w, _ = x.shape
    y = np.zeros((n, h, w), dtype)
    uv = np.zeros((n, h // 2, w // 2, 2), dtype)
    for b in range(n):
        for i in range(0, h, 2):
            for j in range(0, w, 2):
                su, sv = f(0), f(0)
                for di in (0, 1):
                    for dj in (0, 1):
                        px = x[b, i + di, j + dj].astype(f)
                        r, g, bl = (px[2], px[1], px[0]) if bgr else (px[0], px[1], px[2])
                        y[b, i + di, j + dj] = store(f(0.257) * r + f(0.504) * g + f(0.098) * bl + f(16))
                        su = f(su + f(store(f(-0.148) * r - f(0.291) * g + f(0.439) * bl + f(128))))
                        sv = f(sv + f(store(f(0.439) * r - f(0.368) * g - f(0.071) * bl + f(128))))
                uv[b, i // 2, j // 2] = [store(su / f(4)), store(sv / f(4))]
    return y[..., None], uv


def _ov_bf16(a):
    """OpenVINO's bfloat16(float): + 0x8000 only where the kept last bit is 1."""
    bits = int(np.array(a, np.float32).view(np.uint32))
    return np.array((bits + ((bits & 0x10000) >> 1)) >> 16, np.uint16).view(ml_dtypes.bfloat16)


def _image(rng, shape, dtype):
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    x = rng.uniform(-30, 290, shape).astype(np.float32)
    x.flat[::7] = np.round(x.flat[::7])
    return x.astype(dtype)


@pytest.mark.parametrize("bgr", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float16, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("single", [True, False])
def test_to_nv12_matches_reference_kernel(bgr, dtype, single, tmp_path):
    op = "BGRtoNV12" if bgr else "RGBtoNV12"
    rng = np.random.default_rng(3 + bgr + 2 * single)
    for shape in ((1, 2, 2, 3), (2, 6, 8, 3), (1, 4, 10, 3)):
        x = _image(rng, shape, dtype)
        got = list(irrun.load(_saved_to_nv12(op, single, x, tmp_path)).run({"in0": x}).values())
        y, uv = _scalar_nv12(x, bgr)
        n, h, w, _ = shape
        want = [np.concatenate([y[..., 0], uv.reshape(n, h // 2, w)], 1)[..., None]] if single \
            else [y, uv]  # fmt: skip
        model = _ov_to_nv12(op, single, list(shape), _PRECISION_OF[np.dtype(dtype)])
        try:
            want_ov = run_reference(model, [x])
        except RuntimeError:  # OpenVINO 2026.4 has no evaluate for the op
            want_ov = None
        for k, g in enumerate(got):
            assert_close(g, want[k])
            if want_ov is not None:
                assert_close(g, want_ov[k])


_PRECISION_OF = {np.dtype(np.uint8): "u8", np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
                 np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(np.float64): "f64"}  # fmt: skip


def _round_clip(value):
    """std::round (half away from zero) of non-negative f32 values, clipped to u8."""
    value = value.astype(np.float64)
    return np.clip(np.floor(value + 0.5), 0, 255).astype(np.uint8)


def test_to_nv12_u8_every_colour(tmp_path):
    """Y of every u8 (R, G, B) against the formula; U and V of every 16th colour, each
    filling a 2x2 block (so that the block's mean is the pixel's own value)."""
    f = np.float32
    colours = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([colours >> 16, (colours >> 8) & 255, colours & 255], -1).astype(np.uint8)
    model = irrun.load(_saved_to_nv12("RGBtoNV12", False, np.zeros((1, 1024, 1024, 3), np.uint8),
                                      tmp_path))  # fmt: skip
    for part in range(16):
        x = rgb[part << 20: (part + 1) << 20].reshape(1, 1024, 1024, 3)
        y, _ = model.run({"in0": x}).values()
        r, g, b = (x[..., k].astype(f) for k in range(3))
        want = _round_clip(f(0.257) * r + f(0.504) * g + f(0.098) * b + f(16))
        np.testing.assert_array_equal(y[..., 0], want)
    sample = np.arange(1 << 20) * 16 + np.arange(1 << 20) % 16  # every low nibble of B
    x = rgb[sample].reshape(1, 1024, 1024, 1, 1, 3)
    x = np.broadcast_to(x, (1, 1024, 1024, 2, 2, 3)).transpose(0, 1, 3, 2, 4, 5)
    x = np.ascontiguousarray(x).reshape(1, 2048, 2048, 3)
    model = irrun.load(_saved_to_nv12("RGBtoNV12", False, x, tmp_path))
    _, uv = model.run({"in0": x}).values()
    r, g, b = (x[:, ::2, ::2, k].astype(f) for k in range(3))
    np.testing.assert_array_equal(uv[..., 0], _round_clip(f(-0.148) * r - f(0.291) * g + f(0.439) * b + f(128)))
    np.testing.assert_array_equal(uv[..., 1], _round_clip(f(0.439) * r - f(0.368) * g - f(0.071) * b + f(128)))


def test_to_nv12_by_hand(tmp_path):
    # A 2x2 image: white, black, pure red, pure blue.
    x = np.array([[[255, 255, 255], [0, 0, 0]], [[255, 0, 0], [0, 0, 255]]], np.uint8)[None]
    path = _saved_to_nv12("RGBtoNV12", True, x, tmp_path)
    (got,) = irrun.load(path).run({"in0": x}).values()
    # Y: white 0.859 * 255 + 16 = 235.045 -> 235; black 16; red 0.257 * 255 + 16 = 81.535
    # -> 82; blue 0.098 * 255 + 16 = 40.99 -> 41.
    # U per pixel: white 128 + 0 * 255 = 128 (-0.148 - 0.291 + 0.439 = 0; f32 gives
    # 127.99998 -> 128), black 128, red 128 - 37.74 = 90.26 -> 90, blue 128 + 111.945
    # = 239.945 -> 240; mean (128 + 128 + 90 + 240) / 4 = 146.5 -> 147 (half away from 0).
    # V: white 128, black 128, red 128 + 111.945 -> 240, blue 128 - 18.105 = 109.895 ->
    # 110; mean 606 / 4 = 151.5 -> 152.
    assert got.shape == (1, 3, 2, 1)
    assert got[0, :, :, 0].tolist() == [[235, 16], [82, 41], [147, 152]]
    # BGR reads the channels the other way round: red and blue swap places.
    path = _saved_to_nv12("BGRtoNV12", False, x, tmp_path)
    y, uv = irrun.load(path).run({"in0": x}).values()
    assert y[0, :, :, 0].tolist() == [[235, 16], [41, 82]]
    assert uv.tolist() == [[[[147, 152]]]]


def test_to_nv12_shape_rule():
    f32 = ELEMENT_TYPES["f32"]
    for single in (True, False):
        rule = resolve("RGBtoNV12", "opset17")
        attrs = SimpleNamespace(single_plane=single)
        for shape in ((1, 4, 6, 3), (DYNAMIC, DYNAMIC, DYNAMIC, DYNAMIC), (2, 0, 0, 3),
                      (1, Interval(2, 10), Interval(3, 9), 3), (1, Interval(3, 5), 4, 3),
                      (1, Interval(1, 3), 4, DYNAMIC), (DYNAMIC, 8, Interval(5, 13), 3)):  # fmt: skip
            model = _ov_to_nv12("RGBtoNV12", single, [_ir_dim(d) for d in shape], "bf16")
            want = [from_ov_shape(o.get_partial_shape()) for o in model.outputs]
            got = rule.infer(attrs, [TensorInfo(shape, f32)])
            assert [i.shape for i in got] == want, (shape, single)
            assert all(i.element_type == f32 for i in got)
        # An image of unknown rank: OpenVINO's outputs are 4-D of unknown dims.
        got = rule.infer(attrs, [TensorInfo(None, f32)])
        assert got[0].shape == (DYNAMIC, DYNAMIC, DYNAMIC, 1)
        for shape, message in (((1, 5, 6, 3), "height 5 must be even"),
                               ((1, 4, 7, 3), "width 7 must be even"),
                               ((1, 4, 6, 2), "3 channels"), ((4, 6, 3), "4-D")):  # fmt: skip
            with pytest.raises(RuntimeError):
                _ov_to_nv12("RGBtoNV12", single, list(shape))
            with pytest.raises(ShapeError, match=message):
                rule.infer(attrs, [TensorInfo(shape, f32)])
        with pytest.raises(RuntimeError):
            _ov_i32(single)
        with pytest.raises(ShapeError, match="does not take"):
            rule.infer(attrs, [TensorInfo((1, 2, 2, 3), ELEMENT_TYPES["i32"])])


def _ov_i32(single):
    xml = _to_nv12_xml("RGBtoNV12", single, [1, 2, 2, 3], "u8")
    return ov.Core().read_model(xml.replace('"U8"', '"I32"').replace('"u8"', '"i32"').encode(), b"")


def _ir_dim(d):
    if isinstance(d, int):
        return d
    if d == DYNAMIC:
        return -1
    return f"{d.lo}..{'' if d.hi is None else d.hi}"


def test_to_nv12_validate(tmp_path):
    x = np.zeros((1, 4, 6, 3), np.uint8)
    path = _saved_to_nv12("BGRtoNV12", False, x, tmp_path)
    assert irrun.validate(path) == []
    text = path.read_text()
    path.write_text(text.replace('single_plane="false"', 'single_plane="maybe"'))
    assert any(d.level == "error" for d in irrun.validate(path))
    # A declared UV plane of the wrong height.
    path.write_text(text.replace("<dim>2</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t\t<dim>2</dim>",
                                 "<dim>4</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t\t<dim>2</dim>"))  # fmt: skip
    assert path.read_text() != text
    assert any(d.level == "error" for d in irrun.validate(path))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 2), h=st.integers(1, 4), w=st.integers(1, 4), bgr=st.booleans(),
       single=st.booleans(), kind=st.sampled_from(["u8", "f32", "f16", "bf16"]),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_to_nv12_hypothesis(n, h, w, bgr, single, kind, seed, tmp_path):
    """Any even image size, type, order and plane count against the transcription."""
    dtype = {"u8": np.uint8, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}[kind]
    x = _image(np.random.default_rng(seed), (n, 2 * h, 2 * w, 3), dtype)
    op = "BGRtoNV12" if bgr else "RGBtoNV12"
    got = list(irrun.load(_saved_to_nv12(op, single, x, tmp_path)).run({"in0": x}).values())
    y, uv = _scalar_nv12(x, bgr)
    want = [np.concatenate([y[..., 0], uv.reshape(n, h, 2 * w)], 1)[..., None]] if single \
        else [y, uv]  # fmt: skip
    for g, wnt in zip(got, want, strict=True):
        assert_close(g, wnt)
