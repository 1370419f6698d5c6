"""BinaryConvolution-1 against OpenVINO's CPU plugin (``evaluate`` has no kernel for it) over
strides, pads, dilations, auto_pad and pad values; a case by hand; the shape rule against
OpenVINO's, dynamic dims included; validate's findings.

The plugin reads a u1 filter's bits least significant first within each byte, unlike
OpenVINO's u1 (most significant first, as its Convert reads them and irrun does): it is
given the filter with each byte's bits reversed, so that both compute the same filter.  It
binarizes pad values other than 1 and <= 0 otherwise than the data, and is wrong when the
channels are not a multiple of 8 (irrun/ops/binary_convolution.py): those cases are
checked by hand and against Convolution's reference instead.
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
from openvino import opset1  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402


def _lsb_first(bits: np.ndarray) -> np.ndarray:
    """The 0/1 filter the plugin reads as ``bits``: each byte's 8 bits reversed."""
    flat = bits.reshape(-1)
    n = flat.size
    padded = np.concatenate([flat, np.zeros(-n % 8, np.uint8)]).reshape(-1, 8)[:, ::-1]
    return padded.reshape(-1)[:n].reshape(bits.shape)


def _build(bits, s, pb, pe, d, auto_pad, pad_value):
    def build(p):
        w = opset1.constant(bits, dtype=ov.Type.u1)
        return opset1.binary_convolution(p, w, list(s), list(pb), list(pe), list(d),
                                         "xnor-popcount", pad_value, auto_pad)  # fmt: skip

    return build


def _compare(x, bits, s, pb, pe, d, auto_pad, pad_value, tmp_path):
    args = (s, pb, pe, d, auto_pad, pad_value)
    got = run_saved(one_op_model(_build(bits, *args), [x]), [x], tmp_path)[0]
    want = run_cpu(one_op_model(_build(_lsb_first(bits), *args), [x]), [x])[0]
    assert_close(got, want, what=str(args))


VALUES = [-1.5, -1.0, -0.0, 0.0, 0.25, 1.0, 2.0]


@pytest.mark.parametrize("pad_value", [1.0, -1.0, -3.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_matches_the_cpu_plugin(pad_value, dtype, tmp_path):
    rng = np.random.default_rng(int(pad_value) + 7)
    for c, k, co, s, p, d in ((8, (3, 3), 4, (1, 1), (1, 1), (1, 1)),
                              (16, (2, 3), 3, (2, 1), (0, 2), (1, 2)),
                              (24, (1, 1), 5, (1, 1), (0, 0), (1, 1))):  # fmt: skip
        x = rng.choice(VALUES, size=(2, c, 6, 7)).astype(dtype)
        bits = rng.integers(0, 2, (co, c, *k)).astype(np.uint8)
        _compare(x, bits, s, p, p[::-1], d, "explicit", pad_value, tmp_path)


@settings(max_examples=25, deadline=None)
@given(size=st.tuples(st.integers(1, 6), st.integers(1, 6)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       d=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       pb=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       pe=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       auto_pad=st.sampled_from(["explicit", "valid", "same_upper", "same_lower"]),
       c=st.sampled_from([8, 16]), co=st.integers(1, 3), pad_value=st.sampled_from([1.0, -1.0]),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_hypothesis_sweep(size, k, s, d, pb, pe, auto_pad, c, co, pad_value, seed,
                          tmp_path_factory):  # fmt: skip
    spans = [size[i] + pb[i] + pe[i] - d[i] * (k[i] - 1) - 1 for i in range(2)]
    if auto_pad == "explicit" and min(spans) < 0:
        return
    if auto_pad == "valid" and min(size[i] - d[i] * (k[i] - 1) for i in range(2)) < 1:
        return
    rng = np.random.default_rng(seed)
    x = rng.choice(VALUES, size=(1, c, *size)).astype(np.float32)
    bits = rng.integers(0, 2, (co, c, *k)).astype(np.uint8)
    _compare(x, bits, s, pb, pe, d, auto_pad, pad_value, tmp_path_factory.mktemp("bc"))


def _run(x, bits, pads, pad_value, tmp_path):
    build = _build(bits, (1, 1), pads, pads, (1, 1), "explicit", pad_value)
    return run_saved(one_op_model(build, [x]), [x], tmp_path)[0]


def test_by_hand(tmp_path):
    # One channel, a 1x2 filter of bits 1 0 (+1, -1) over x = [2, 0, -1, 0.5]: signs
    # + - - +, so the windows give (+1)(+1) + (-1)(-1) = 2, (-1) - (-1) = 0, -1 - 1 = -2.
    x = np.array([2.0, 0.0, -1.0, 0.5], np.float32).reshape(1, 1, 1, 4)
    bits = np.array([1, 0], np.uint8).reshape(1, 1, 1, 2)
    assert _run(x, bits, (0, 0), 1.0, tmp_path).ravel().tolist() == [2.0, 0.0, -2.0]
    # Padded by one column each side: the pad's sign meets the filter's first tap (+1) at
    # the start and its second (-1) at the end.
    assert _run(x, bits, (0, 1), 1.0, tmp_path).ravel().tolist() == [0.0, 2.0, 0.0, -2.0, 0.0]
    for pad_value in (0.0, -2.0):  # binarized to -1 (the plugin: 0 contributes nothing)
        got = _run(x, bits, (0, 1), pad_value, tmp_path).ravel().tolist()
        assert got == [-2.0, 2.0, 0.0, -2.0, 2.0]
    got = _run(x, bits, (0, 1), 0.5, tmp_path).ravel().tolist()  # +1 (the plugin: -1)
    assert got == [0.0, 2.0, 0.0, -2.0, 0.0]


def test_channels_not_a_multiple_of_8_follow_the_definition(tmp_path):
    # The sum of sign(x) * sign(w) over the taps: Convolution's reference on the signs.
    rng = np.random.default_rng(4)
    x = rng.choice(VALUES, size=(2, 3, 5, 4)).astype(np.float32)
    bits = rng.integers(0, 2, (2, 3, 2, 2)).astype(np.uint8)
    signs = np.where(x > 0, 1.0, -1.0).astype(np.float32)
    padded = np.pad(signs, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=1.0)
    w = opset1.constant(np.where(bits > 0, 1.0, -1.0).astype(np.float32))
    conv = lambda p: opset1.convolution(p, w, [1, 1], [0, 0], [0, 0], [1, 1])  # noqa: E731
    want = run_cpu(one_op_model(conv, [padded]), [padded])[0]
    assert_close(_run(x, bits, (1, 1), 1.0, tmp_path), want)


def test_shape_rule():
    rule = resolve("BinaryConvolution", "opset1")
    attrs = attrs_namespace({"strides": (2, 1), "dilations": (1, 1), "pads_begin": (1, 0),
                             "pads_end": (0, 1), "auto_pad": "explicit",
                             "mode": "xnor-popcount", "pad_value": 1.0})  # fmt: skip
    for data, filt in (((2, 8, 7, 6), (4, 8, 3, 2)), ((DYNAMIC, 8, Interval(3, 9), 6), (4, 8, 3, 2)),
                       (None, (4, 8, 3, 2)), ((2, 8, 7, 6), (4, DYNAMIC, 3, 2)), ((2, DYNAMIC, 7, 6), (DYNAMIC, 8, 3, 2))):  # fmt: skip
        want = opset1.binary_convolution(opset1.parameter(to_ov_shape(data), ov.Type.f16),
                                         opset1.parameter(to_ov_shape(filt), ov.Type.u1),
                                         [2, 1], [1, 0], [0, 1], [1, 1], "xnor-popcount", 1.0)  # fmt: skip
        (out,) = rule.infer(attrs, [TensorInfo(data, ET["f16"]), TensorInfo(filt, ET["u1"])])
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), (data, filt)
        assert out.element_type == ET["f16"]
    for data, filt, message in (((2, 8, 7), (4, 8, 3), "rank 4"),
                                ((2, 8, 7, 6), (4, 6, 3, 2), "channels")):  # fmt: skip
        with pytest.raises(RuntimeError):  # OpenVINO refuses them too
            opset1.binary_convolution(opset1.parameter(list(data), ov.Type.f32),
                                      opset1.parameter(list(filt), ov.Type.u1), [2, 1][:len(data) - 2],
                                      [1, 0][:len(data) - 2], [0, 1][:len(data) - 2],
                                      [1, 1][:len(data) - 2], "xnor-popcount", 1.0)  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(data, ET["f32"]), TensorInfo(filt, ET["u1"])])
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(
            attrs, [TensorInfo((2, 8, 7, 6), ET["f32"]), TensorInfo((4, 8, 3, 2), ET["f32"])]
        )


def test_validate(tmp_path):
    x = np.zeros((1, 8, 4, 4), np.float32)
    bits = np.ones((2, 8, 3, 3), np.uint8)
    path = tmp_path / "m.xml"
    build = _build(bits, (1, 1), (1, 1), (1, 1), (1, 1), "explicit", 1.0)
    ov.save_model(one_op_model(build, [x]), path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    for old, new in (('mode="xnor-popcount"', 'mode="and"'), ('strides="1, 1"', 'strides="1"'),
                     ('pad_value="1"', 'pad_value="one"')):  # fmt: skip
        assert old in text, (old, re.findall(r"<data [^>]*mode[^>]*>", text))
        path.write_text(text.replace(old, new, 1))
        assert any(f.level == "error" for f in irrun.validate(path)), (old, new)
