"""Col2Im against OpenVINO's CPU plugin (``evaluate`` has no Col2Im kernel) over strides,
dilations, pads, batched and unbatched data and element types, bit for bit; a case by
hand; its shape rule against OpenVINO's own, dynamic dims included; validate's findings.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset15  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

I64 = ELEMENT_TYPES["i64"]


def _blocks(size, k, stride, dilation, pads):
    return (size + pads - dilation * (k - 1) - 1) // stride + 1


def _case(rng, dtype, size, k, s, d, pb, pe, batch, channels=2):
    count = 1
    for i in range(2):
        count *= _blocks(size[i], k[i], s[i], d[i], pb[i] + pe[i])
    shape = (channels * k[0] * k[1], count)
    if batch is not None:
        shape = (batch, *shape)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        data = rng.normal(0, 20, shape).astype(dtype)
    else:
        info = np.iinfo(dtype)
        data = rng.integers(max(info.min, -100), min(info.max, 100), shape).astype(dtype)

    def build(x, index=np.int64):
        return opset15.col2im(x, opset1.constant(np.array(size, index)),
                              opset1.constant(np.array(k, index)), list(s), list(d), list(pb),
                              list(pe))  # fmt: skip

    return data, build


CASES = [
    ((6, 7), (2, 3), (1, 1), (1, 1), (0, 0), (0, 0), 3),
    ((8, 9), (3, 2), (2, 3), (2, 1), (1, 2), (2, 0), None),
    ((5, 5), (2, 2), (2, 2), (1, 1), (0, 0), (1, 1), 2),
    ((4, 4), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1),
    ((3, 10), (1, 4), (3, 2), (1, 3), (0, 1), (2, 0), 2),
    ((2, 2), (3, 3), (1, 1), (1, 1), (2, 2), (2, 2), None),
]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "int8", "int64"])
def test_col2im_matches_cpu_plugin(dtype, tmp_path):
    rng = np.random.default_rng(len(dtype))
    for size, k, s, d, pb, pe, batch in CASES:
        data, build = _case(rng, dtype, size, k, s, d, pb, pe, batch)
        model = one_op_model(build, [data])
        assert_close(run_saved(model, [data], tmp_path)[0], run_cpu(model, [data])[0],
                     what=str((size, k, s, d, pb, pe)))  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(size=st.tuples(st.integers(1, 9), st.integers(1, 9)),
       k=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       s=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       d=st.tuples(st.integers(1, 3), st.integers(1, 3)),
       pb=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       pe=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       batch=st.sampled_from([None, 1, 2]), channels=st.integers(1, 3),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_col2im_hypothesis(size, k, s, d, pb, pe, batch, channels, seed, tmp_path_factory):
    spans = [size[i] + pb[i] + pe[i] - d[i] * (k[i] - 1) - 1 for i in range(2)]
    if min(spans) < 0:
        return  # no block fits: refused (test_col2im_shape_rule)
    data, build = _case(np.random.default_rng(seed), np.float32, size, k, s, d, pb, pe, batch,
                        channels)  # fmt: skip
    model = one_op_model(build, [data])
    got = run_saved(model, [data], tmp_path_factory.mktemp("c2i"))[0]
    assert_close(got, run_cpu(model, [data])[0])


def test_col2im_by_hand(tmp_path):
    # Two 2x2 blocks one column apart on a 2x3 image: the middle column is summed twice.
    data = np.array([[1, 10], [2, 20], [3, 30], [4, 40]], np.float32)
    build = lambda x: opset15.col2im(x, opset1.constant(np.array([2, 3], np.int32)),  # noqa: E731
                                     opset1.constant(np.array([2, 2], np.int32)))  # fmt: skip
    got = run_saved(one_op_model(build, [data]), [data], tmp_path)[0]
    assert got.tolist() == [[[1, 12, 20], [3, 34, 40]]]
    # Padding of 1 all round with a 3x3 kernel, stride 1 on a 2x2 image: 4 blocks, the
    # centre tap of each lands on its own pixel, others on their neighbours or the padding.
    data = np.ones((9, 4), np.int32)
    build = lambda x: opset15.col2im(x, opset1.constant(np.array([2, 2])),  # noqa: E731
                                     opset1.constant(np.array([3, 3])), [1, 1], [1, 1],
                                     [1, 1], [1, 1])  # fmt: skip
    got = run_saved(one_op_model(build, [data]), [data], tmp_path)[0]
    assert got.tolist() == [[[4, 4], [4, 4]]]


def test_col2im_shape_rule():
    rule = resolve("Col2Im", "opset15")
    attrs = attrs_namespace({"strides": [2, 1], "dilations": [1, 2], "pads_begin": [1, 0],
                             "pads_end": [0, 1]})  # fmt: skip
    size, kernel = np.array([7, 8]), np.array([3, 2])
    blocks = _blocks(7, 3, 2, 1, 1) * _blocks(8, 2, 1, 2, 1)
    for data, known in (((2, 12, blocks), True), ((12, blocks), True),
                        ((DYNAMIC, 12, DYNAMIC), True), ((Interval(1, 4), DYNAMIC, blocks), True),
                        ((2, 12, blocks), False), (None, True), ((0, 6, blocks), True)):  # fmt: skip
        p = opset1.parameter(to_ov_shape(data), ov.Type.f32)
        if known:
            size_in, kernel_in = opset1.constant(size), opset1.constant(kernel)
            infos = [TensorInfo((2,), I64, size), TensorInfo((2,), I64, kernel)]
        else:
            size_in, kernel_in = (opset1.parameter([2], ov.Type.i64) for _ in range(2))
            infos = [TensorInfo((2,), I64), TensorInfo((2,), I64)]
        want = opset15.col2im(p, size_in, kernel_in, [2, 1], [1, 2], [1, 0], [0, 1])
        (out,) = rule.infer(attrs, [TensorInfo(data, ELEMENT_TYPES["f32"]), *infos])
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), (data, known)
    f32 = ELEMENT_TYPES["f32"]
    for data, k, message in (((2, 12, blocks + 1), kernel, "number"),
                             ((2, 13, blocks), kernel, "not a multiple"),
                             ((2, 2, 12, blocks), kernel, "2-D .* or 3-D"),
                             ((2, 12, blocks), np.array([3, 2, 1]), "kernel_size must be"),
                             ((2, 12 * 3, 1), np.array([9, 2]), "no block of 9 taps")):
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(data, f32), TensorInfo((2,), I64, size),
                               TensorInfo(k.shape, I64, k)])  # fmt: skip
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(attrs, [TensorInfo((12, blocks), f32), TensorInfo((2,), f32),
                           TensorInfo((2,), I64, kernel)])  # fmt: skip
    with pytest.raises(ValueError, match="strides"):
        rule.check(attrs_namespace({"strides": [0, 1], "dilations": [1, 1],
                                    "pads_begin": [0, 0], "pads_end": [0, 0]}))  # fmt: skip


def test_col2im_validate(tmp_path):
    data = np.zeros((2, 8, 12), np.float32)
    build = lambda x: opset15.col2im(x, opset1.constant(np.array([4, 5])),  # noqa: E731
                                     opset1.constant(np.array([2, 2])))  # fmt: skip
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, [data]), path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    path.write_text(text.replace('dilations="1, 1"', 'dilations="1, 0"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert [d.code for d in found] == ["bad-attribute"] and "dilations" in found[0].message
    path.write_text(text.replace('strides="1, 1"', 'strides="2, 1"'))
    found = [d for d in irrun.validate(path) if d.layer is not None]
    assert found and found[0].level == "error" and "blocks" in found[0].message
