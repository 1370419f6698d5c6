"""GroupedMatMul-17 against OpenVINO.

OpenVINO 2026.4 runs GroupedMatMul nowhere (no ``evaluate``, no CPU kernel: checked
below), so irrun's values are compared with OpenVINO's own MatMul (``transpose_b``) of
each group's rows, built as one model of Slice, Gather, MatMul and Concat and run by the
CPU plugin (f32, one thread); the GroupedMatMul layer itself is saved by OpenVINO as IR
and run by irrun.  Tolerances: f32 rtol 1e-5 (sums in another order), f16 one f16 ulp
(both multiply in f32 and round once), integers exact (small values).  Shapes against
OpenVINO's shape inference, static, dynamic and interval dims included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
import irrun.ops
from irrun.errors import KernelError
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8, opset17  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

OP = resolve("GroupedMatMul", "opset17")
NP = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64, "u8": np.uint8}


def _irrun(inputs, tmp_path):
    model = one_op_model(lambda *p: opset17.grouped_matmul(*p), inputs)
    return run_saved(model, inputs, tmp_path)[0]


def _openvino_by_groups(a, b, offsets):
    """OpenVINO's MatMul of each group's rows with its weights, rows past the last offset 0."""

    def build(pa, pb):
        if a.ndim == 3:
            return opset1.matmul(pa, pb, False, True)
        parts, start = [], 0
        for g, end in enumerate(int(v) for v in offsets):
            if end > start:
                rows = opset8.slice(pa, [start], [end], [1], [0])
                w = opset8.gather(pb, opset1.constant(np.int64(g)), opset1.constant(np.int64(0)))
                parts.append(opset1.matmul(rows, w, False, True))
            start = end
        if start < a.shape[0]:
            parts.append(opset1.constant(np.zeros((a.shape[0] - start, b.shape[1]), a.dtype)))
        return opset1.concat(parts, 0) if len(parts) > 1 else opset1.convert(parts[0], a.dtype)

    return run_cpu(one_op_model(build, [a, b]), [a, b])[0]


def _values(rng, shape, et):
    if et in ("f32", "f16"):
        return rng.standard_normal(shape).astype(NP[et])
    return rng.integers(0, 4, shape).astype(NP[et])


def _tolerance(et):
    return {"f32": (1e-5, 1e-5), "f16": (1e-3, 1e-3)}.get(et, (0, 0))


def test_openvino_2026_4_runs_it_nowhere():
    a, b = np.ones((2, 3, 4), np.float32), np.ones((2, 5, 4), np.float32)
    model = one_op_model(lambda pa, pb: opset17.grouped_matmul(pa, pb), [a, b])
    with pytest.raises(RuntimeError, match="GroupedMatMul"):
        run_cpu(model, [a, b])


@pytest.mark.parametrize("et", ["f32", "f16", "i32", "u8"])
def test_batched_matches_openvino(et, tmp_path):
    rng = np.random.default_rng(3)
    a, b = _values(rng, (3, 5, 8), et), _values(rng, (3, 6, 8), et)
    rtol, atol = _tolerance(et)
    got = _irrun([a, b], tmp_path)
    assert_close(got, _openvino_by_groups(a, b, None), rtol=rtol, atol=atol, what=et)


@pytest.mark.parametrize("oet", ["i32", "i64"])
@pytest.mark.parametrize("et", ["f32", "f16", "i32"])
@pytest.mark.parametrize("ends", [[2, 2, 7], [0, 3, 9], [9, 9, 9], [1, 4, 6], [0, 0, 0]])
def test_moe_forward_matches_openvino(ends, et, oet, tmp_path):
    rng = np.random.default_rng(len(ends) + sum(ends))
    a, b = _values(rng, (9, 8), et), _values(rng, (3, 5, 8), et)
    offsets = np.array(ends, NP[oet])
    rtol, atol = _tolerance(et)
    got = _irrun([a, b, offsets], tmp_path)
    assert_close(got, _openvino_by_groups(a, b, ends), rtol=rtol, atol=atol, what=str(ends))


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(0, 5), min_size=1, max_size=4), tail=st.integers(0, 2),
       k=st.integers(1, 6), n=st.integers(1, 5), seed=st.integers(0, 2**16))  # fmt: skip
def test_moe_forward_sweep(tmp_path_factory, sizes, tail, k, n, seed):
    rng = np.random.default_rng(seed)
    ends = np.cumsum(sizes)
    rows = int(ends[-1]) + tail
    if rows == 0:
        return  # OpenVINO's Concat of nothing: no model to compare with
    a, b = _values(rng, (rows, k), "f32"), _values(rng, (len(sizes), n, k), "f32")
    got = _irrun([a, b, ends.astype(np.int32)], tmp_path_factory.mktemp("gmm"))
    assert_close(got, _openvino_by_groups(a, b, ends), rtol=1e-5, atol=1e-5)


def test_by_hand():
    a = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)
    b = np.array([[[1, 0], [0, 1], [1, 1]], [[2, 0], [0, 0], [1, -1]]], np.float32)  # [G=2, N=3, K=2]
    (out,) = OP.kernel(attrs_namespace({}), a, b, np.array([1, 3], np.int64))
    assert out.tolist() == [[1, 2, 3], [6, 0, -1], [10, 0, -1], [0, 0, 0]]  # row 3: no group
    (batched,) = OP.kernel(attrs_namespace({}), a.reshape(2, 2, 2), b[:, :2])
    assert batched.tolist() == [[[1, 2], [3, 4]], [[10, 0], [14, 0]]]


@pytest.mark.parametrize(
    ("ends", "message"),
    [([1], "1 offsets for 2 groups"), ([3, 1], "offsets\\[1\\] = 1 is below 3"),
     ([-1, 2], "offsets\\[0\\] = -1 is below 0"), ([2, 5], "last offset 5 is past mat_a's 4")],
)  # fmt: skip
def test_bad_offsets_are_refused(ends, message):
    a, b = np.ones((4, 2), np.float32), np.ones((2, 3, 2), np.float32)
    with pytest.raises(KernelError, match=message):
        OP.kernel(attrs_namespace({}), a, b, np.array(ends, np.int32))


D = Interval(0, None)
SHAPES = [
    ((2, 3, 4), (2, 5, 4), None),
    ((2, 3, 4), (2, 5, 4), (2,)),
    ((2, 3, 4), (2, 5, 4), (2, 1)),  # offsets not read, nor checked, in the 3-D case
    ((7, 4), (3, 5, 4), (3,)),
    ((7, 4), (3, 5, 4), (2,)),  # OpenVINO does not compare the offsets' length with G
    ((D, 4), (D, 5, D), (D,)),
    ((D, D, 4), (2, D, D), None),
    ((Interval(1, 4), 3, 4), (Interval(2, 8), 5, 4), None),
    ((7, Interval(2, 6)), (3, 5, Interval(4, 9)), (3,)),
    (None, (3, 5, 4), (3,)),
    ((7, 4), None, (3,)),
    ((7, 4), (3, 5, 4), None),  # needs offsets
    ((2, 3, 4), (2, 5, 6), None),  # K
    ((2, 3, 4), (3, 5, 4), None),  # G
    ((7, 4), (3, 5, 6), (3,)),  # K
    ((7, 4), (3, 5, 4), ()),  # 0-D offsets
    ((1, 2, 3, 4), (2, 5, 4), None),
    ((2, 3, 4), (5, 4), None),
    ((4, 7), (7, 5), (3,)),  # 2-D x 2-D: not in OpenVINO 2026.4
]


@pytest.mark.parametrize(("sa", "sb", "so"), SHAPES)
def test_shape_rule_matches_openvino(sa, sb, so):
    params = [opset1.parameter(to_ov_shape(s), t) for s, t in
              ((sa, ov.Type.f32), (sb, ov.Type.f32), (so, ov.Type.i32)) if t != ov.Type.i32
              or so is not None]  # fmt: skip
    infos = [TensorInfo(sa, ELEMENT_TYPES["f32"]), TensorInfo(sb, ELEMENT_TYPES["f32"])]
    if so is not None:
        infos.append(TensorInfo(so, ELEMENT_TYPES["i32"]))
    try:
        want = from_ov_shape(opset17.grouped_matmul(*params).get_output_partial_shape(0))
    except RuntimeError:
        with pytest.raises(ShapeError):
            OP.infer(attrs_namespace({}), infos)
        return
    (got,) = OP.infer(attrs_namespace({}), infos)
    assert got.shape == want and got.element_type == ELEMENT_TYPES["f32"]


@pytest.mark.parametrize(
    ("ta", "tb", "to", "ok"),
    [("f16", "f16", "i64", True), ("f32", "f16", "i32", False), ("f32", "f32", "f32", False),
     ("f32", "f32", "u8", False), ("i64", "i64", "i32", True), ("bf16", "bf16", "i32", True)],
)  # fmt: skip
def test_element_types_as_openvino(ta, tb, to, ok):
    params = [opset1.parameter([7, 4], getattr(ov.Type, ta)),
              opset1.parameter([3, 5, 4], getattr(ov.Type, tb)),
              opset1.parameter([3], getattr(ov.Type, to))]  # fmt: skip
    infos = [TensorInfo((7, 4), ELEMENT_TYPES[ta]), TensorInfo((3, 5, 4), ELEMENT_TYPES[tb]),
             TensorInfo((3,), ELEMENT_TYPES[to])]  # fmt: skip
    if ok:
        node = opset17.grouped_matmul(*params)
        (got,) = OP.infer(attrs_namespace({}), infos)
        assert got.element_type.name == node.get_output_element_type(0).get_type_name()
    else:
        with pytest.raises(RuntimeError):
            opset17.grouped_matmul(*params)
        with pytest.raises(ShapeError):
            OP.infer(attrs_namespace({}), infos)


def test_saved_ir_says_opset17_and_validate_flags_bad_offsets(tmp_path):
    a = opset1.parameter([6, 4], ov.Type.f32, name="a")
    b = opset1.parameter([3, 5, 4], ov.Type.f32, name="b")
    node = opset17.grouped_matmul(a, b, opset1.constant(np.array([2, 4, 6], np.int32)))
    node.set_friendly_name("experts")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [a, b]), path)
    text = path.read_text()
    assert 'type="GroupedMatMul" version="opset17"' in text
    assert irrun.validate(path) == []
    # The same offsets' data, decreasing: OpenVINO reads the model, the run would fail.
    node2 = opset17.grouped_matmul(a, b, opset1.constant(np.array([4, 2, 6], np.int32)))
    node2.set_friendly_name("experts")
    ov.save_model(ov.Model([node2], [a, b]), path)
    found = [str(d) for d in irrun.validate(path) if d.level == "warning"]
    assert any("'experts'" in m and "offsets[1] = 2 is below 4" in m for m in found), found
    # A wrong inner dim is an error.
    bad = text.replace('shape="6,4"', 'shape="6,3"').replace("<dim>4</dim>", "<dim>3</dim>", 1)
    path.write_text(bad)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'experts'" in m and "inner dims" in m for m in found), found
