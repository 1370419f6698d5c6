"""SegmentMax-16 and SparseFillEmptyRows-16 against OpenVINO's CPU plugin (OpenVINO's reference
kernels have no ``evaluate`` for them): hypothesis sweeps of sizes, empty segments and rows,
fill modes and element types; cases by hand for NaN, the lowest values and what the plugin
gets wrong; shape rules against OpenVINO's shape inference, dynamic dims included; validate's
findings."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset16
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_irrun, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "i8": np.int8}  # fmt: skip


def data_values(rng, shape, dt):
    if dt.startswith("f"):
        return rng.normal(0, 3, shape).astype(DTYPES[dt])
    return rng.integers(0 if dt == "u8" else -50, 50, shape).astype(DTYPES[dt])


def compare(build, inputs, tmp_path, outputs=1):
    model = one_op_model(build, inputs, outputs)
    got, want = run_saved(model, inputs, tmp_path), run_cpu(model, inputs)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w)
    return got


# --------------------------------------------------------------------------- SegmentMax


@settings(max_examples=50, deadline=None)
@given(dt=st.sampled_from(list(DTYPES)), idx_dt=st.sampled_from([np.int32, np.int64]),
       num_dt=st.sampled_from([np.int32, np.int64]), rows=st.integers(1, 10),
       inner=st.lists(st.integers(1, 3), max_size=2), extra=st.integers(-2, 3),
       given_num=st.booleans(), fill=st.sampled_from(["ZERO", "LOWEST"]),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_segment_max_sweep(dt, idx_dt, num_dt, rows, inner, extra, given_num, fill, seed,
                           tmp_path_factory):  # fmt: skip
    if dt in ("f16", "i64") and fill == "LOWEST":
        fill = "ZERO"  # the plugin's lowest f16 is -inf, its lowest i64 -2**31: test_lowest_values
    rng = np.random.default_rng(seed)
    ids = np.sort(rng.integers(0, rows + 2, rows)).astype(idx_dt)
    inputs = [data_values(rng, (rows, *inner), dt), ids]
    if given_num:
        # Past the last id (more empty segments) or before it (ids left out), never 0.
        inputs.append(np.array(max(int(ids[-1]) + 1 + extra, 1), num_dt))
    compare(lambda *p: opset16.segment_max(*p, *[None] * (3 - len(p)), fill_mode=fill), inputs,
            tmp_path_factory.mktemp("m"))  # fmt: skip


def test_segment_max_by_hand(tmp_path):
    data = np.array([[1, 2], [5, -1], [3, 3], [0, 7], [-4, -4]], np.float32)
    ids = np.array([0, 0, 2, 2, 4], np.int32)
    got = run_irrun(lambda d, s: opset16.segment_max(d, s, None, "ZERO"), [data, ids], tmp_path)
    np.testing.assert_array_equal(got, [[5, 2], [0, 0], [3, 7], [0, 0], [-4, -4]])
    got = run_irrun(lambda d, s: opset16.segment_max(d, s, np.int64(2), "LOWEST"), [data, ids],
                    tmp_path)  # fmt: skip
    lowest = np.finfo(np.float32).min
    np.testing.assert_array_equal(got, [[5, 2], [lowest, lowest]])


def test_nan_never_wins(tmp_path):
    # The reference keeps std::max(current, x), which keeps current against a NaN.
    data = np.array([1, np.nan, np.nan, np.nan, 2], np.float32)
    ids = np.array([0, 0, 1, 1, 2], np.int64)
    got = compare(lambda d, s: opset16.segment_max(d, s, None, "LOWEST"), [data, ids], tmp_path)
    np.testing.assert_array_equal(got[0], [1, np.finfo(np.float32).min, 2])


def test_lowest_values(tmp_path):
    build = lambda d, s: opset16.segment_max(d, s, None, "LOWEST")  # noqa: E731
    ids = np.array([0, 2], np.int32)
    for dt, lowest in ((np.int8, -128), (np.uint8, 0), (np.int32, -(2**31))):
        got = compare(build, [np.array([1, 2], dt), ids], tmp_path)
        assert got[0].tolist() == [1, lowest, 2]
    # The reference's lowest f16 is -65504, its lowest i64 -2**63; the plugin gives -inf
    # and -2**31 (it runs i64 as i32).
    for dt, lowest, plugin in ((np.float16, -65504, -np.inf), (np.int64, -(2**63), -(2**31))):
        inputs = [np.array([1, 2], dt), ids]
        assert run_irrun(build, inputs, tmp_path).tolist() == [1, lowest, 2]
        assert run_cpu(one_op_model(build, inputs), inputs)[0].tolist() == [1, plugin, 2]


def test_segment_max_bf16_by_hand():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    op = resolve("SegmentMax", "opset16")
    data = np.array([1.5, -3, 2], ml_dtypes.bfloat16)
    (got,) = op.kernel(attrs_namespace({"fill_mode": "lowest"}), data, np.array([0, 0, 2]))
    assert got.dtype == ml_dtypes.bfloat16
    assert got.astype(np.float32).tolist() == [1.5, float(ml_dtypes.finfo(got.dtype).min), 2]


def test_segment_max_of_nothing(tmp_path):
    # No rows (the plugin crashes on them): no segments, or num_segments empty ones.
    build = lambda d, s, n: opset16.segment_max(d, s, n, "ZERO")  # noqa: E731
    none = [np.zeros((0, 2), np.float32), np.zeros(0, np.int32)]
    assert run_irrun(build, [*none, np.array(3, np.int32)], tmp_path).tolist() == [[0, 0]] * 3
    got = run_irrun(lambda d, s: opset16.segment_max(d, s, None, "LOWEST"), none, tmp_path)
    assert got.shape == (0, 2)


SEGMENT_ERRORS = [
    ("unsorted", [np.ones(3, np.float32), np.array([1, 0, 2], np.int32)], "must be sorted"),
    ("negative", [np.ones(3, np.float32), np.array([-1, 0, 2], np.int32)], "segment id -1"),
]  # fmt: skip


@pytest.mark.parametrize("case", SEGMENT_ERRORS, ids=lambda c: c[0])
def test_bad_segment_ids_are_errors(case, tmp_path):
    _, inputs, message = case
    with pytest.raises(Exception, match=message) as info:
        run_irrun(lambda d, s: opset16.segment_max(d, s, None, "ZERO"), inputs, tmp_path)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- SparseFillEmptyRows


@settings(max_examples=50, deadline=None)
@given(dt=st.sampled_from(list(DTYPES)), idx_dt=st.sampled_from([np.int32, np.int64]),
       rows=st.integers(1, 8), cols=st.integers(1, 5), m=st.integers(0, 12),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_sparse_fill_empty_rows_sweep(dt, idx_dt, rows, cols, m, seed, tmp_path_factory):
    rng = np.random.default_rng(seed)
    indices = np.stack([rng.integers(0, rows, m), rng.integers(0, cols, m)], axis=1)
    inputs = [data_values(rng, m, dt), np.array([rows, cols], idx_dt), indices.astype(idx_dt),
              data_values(rng, (), dt)]  # fmt: skip
    compare(opset16.sparse_fill_empty_rows, inputs, tmp_path_factory.mktemp("f"), outputs=3)


def test_the_spec_example(tmp_path):
    inputs = [np.array([1, 2, 3, 4], np.float32), np.array([5, 6], np.int64),
              np.array([[0, 1], [0, 3], [2, 0], [3, 1]], np.int64), np.array(42, np.float32)]  # fmt: skip
    model = one_op_model(opset16.sparse_fill_empty_rows, inputs, 3)
    idx, values, empty = run_saved(model, inputs, tmp_path)
    assert idx.tolist() == [[0, 1], [0, 3], [1, 0], [2, 0], [3, 1], [4, 0]]
    assert values.tolist() == [1, 2, 42, 3, 4, 42]
    assert empty.tolist() == [False, True, False, False, True]


def test_unsorted_and_repeated_positions_by_hand(tmp_path):
    # Row-major order; the two values at [0, 3] keep their input order, as in the plugin.
    inputs = [np.array([1, 2, 3, 4], np.int8), np.array([4, 6], np.int32),
              np.array([[3, 1], [0, 3], [0, 3], [0, 0]], np.int32), np.array(-7, np.int8)]  # fmt: skip
    idx, values, empty = compare(opset16.sparse_fill_empty_rows, inputs, tmp_path, outputs=3)
    assert idx.tolist() == [[0, 0], [0, 3], [0, 3], [1, 0], [2, 0], [3, 1]]
    assert values.tolist() == [4, 2, 3, -7, -7, 1]
    assert empty.tolist() == [False, True, True, False]


def test_no_entries_at_all(tmp_path):
    inputs = [np.zeros(0, np.float32), np.array([3, 6], np.int32), np.zeros((0, 2), np.int32),
              np.array(42, np.float32)]  # fmt: skip
    idx, values, empty = compare(opset16.sparse_fill_empty_rows, inputs, tmp_path, outputs=3)
    assert idx.tolist() == [[0, 0], [1, 0], [2, 0]] and values.tolist() == [42] * 3
    assert empty.all()


@pytest.mark.parametrize(("index", "message"), [([3, 1], "row 3"), ([1, 6], "column 6"),
                                                ([-1, 0], "row -1")])  # fmt: skip
def test_indices_outside_the_dense_shape_are_errors(index, message, tmp_path):
    inputs = [np.array([1, 2], np.float32), np.array([3, 6], np.int32),
              np.array([[0, 0], index], np.int32), np.array(42, np.float32)]  # fmt: skip
    with pytest.raises(Exception, match=message) as info:
        run_irrun(opset16.sparse_fill_empty_rows, inputs, tmp_path)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------- shape rules

F32, I32, I64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"], ELEMENT_TYPES["i64"]
I = Interval  # noqa: E741


def _param_or_const(shape, et, value):
    if value is not None:
        return opset1.constant(np.array(value, et.dtype))
    return opset1.parameter(to_ov_shape(shape), ov.Type(et.dtype))


def _info(shape, et, value):
    if value is not None:
        v = np.array(value, et.dtype)
        return TensorInfo(v.shape, et, v)
    return TensorInfo(shape, et)


SEGMENT_SHAPES = [
    [((5, 3), F32, None), ((5,), I32, None)],
    [((5, 3), F32, None), (None, I32, [0, 0, 2, 2, 3])],
    [((5, 3), F32, None), ((5,), I32, None), (None, I64, 7)],
    [((5, 3), F32, None), (None, I32, [0, 0, 2, 2, 3]), (None, I64, 2)],
    [((DYNAMIC, I(2, 4)), F32, None), ((DYNAMIC,), I64, None), ((), I32, None)],
    [(None, F32, None), ((4,), I64, None)],
    [((DYNAMIC,), F32, None), (None, I64, [0, 1, 1, 4])],
]  # fmt: skip


@pytest.mark.parametrize("spec", SEGMENT_SHAPES)
def test_segment_max_shape_rule_matches_openvino(spec):
    node = opset16.segment_max(*[_param_or_const(*s) for s in spec], *[None] * (3 - len(spec)),
                               fill_mode="ZERO")  # fmt: skip
    got = resolve("SegmentMax", "opset16").infer(attrs_namespace({"fill_mode": "zero"}),
                                                 [_info(*s) for s in spec])[0]  # fmt: skip
    assert got.shape == from_ov_shape(node.get_output_partial_shape(0))
    assert got.element_type == F32


FILL_SHAPES = [
    [((4,), F32, None), ((2,), I64, None), ((4, 2), I64, None), ((), F32, None)],
    [((4,), F32, None), (None, I64, [5, 6]), (None, I64, [[0, 1], [0, 3], [2, 0], [3, 1]]),
     ((), F32, None)],
    [((4,), F32, None), (None, I32, [5, 6]), ((4, 2), I32, None), ((), F32, None)],
    [((DYNAMIC,), F32, None), ((2,), I32, None), ((DYNAMIC, 2), I32, None), ((), F32, None)],
    [(None, F32, None), (None, I32, None), (None, I32, None), (None, F32, None)],
]  # fmt: skip


@pytest.mark.parametrize("spec", FILL_SHAPES)
def test_sparse_fill_shape_rule_matches_openvino(spec):
    node = opset16.sparse_fill_empty_rows(*[_param_or_const(*s) for s in spec])
    got = resolve("SparseFillEmptyRows", "opset16").infer(attrs_namespace({}),
                                                          [_info(*s) for s in spec])  # fmt: skip
    for k in range(3):
        assert got[k].shape == from_ov_shape(node.get_output_partial_shape(k)), k
        assert got[k].element_type.name == node.get_output_element_type(k).get_type_name(), k


SHAPE_ERRORS = [
    ("SegmentMax", {"fill_mode": "zero"}, [((5, 3), F32, None), ((4,), I32, None)],
     "an id per row"),
    ("SegmentMax", {"fill_mode": "zero"}, [((5, 3), F32, None), ((5, 1), I32, None)], "1-D"),
    ("SegmentMax", {"fill_mode": "zero"}, [((), F32, None), ((5,), I32, None)], "scalar"),
    ("SegmentMax", {"fill_mode": "zero"}, [((5,), F32, None), ((5,), I32, None),
                                           ((1,), I32, None)], "num_segments must be a scalar"),
    ("SegmentMax", {"fill_mode": "zero"}, [((3,), F32, None), (None, I32, [2, 0, 1])],
     "must be sorted"),
    ("SegmentMax", {"fill_mode": "zero"}, [((3,), F32, None), ((3,), F32, None)], "does not take"),
    ("SparseFillEmptyRows", {}, [((3,), F32, None), ((2,), I64, None), ((4, 2), I64, None),
                                 ((), F32, None)], "a row per value"),
    ("SparseFillEmptyRows", {}, [((4,), F32, None), ((2,), I64, None), ((4, 3), I64, None),
                                 ((), F32, None)], "must be [M,2]"),
    ("SparseFillEmptyRows", {}, [((4,), F32, None), ((3,), I64, None), ((4, 2), I64, None),
                                 ((), F32, None)], "hold 2 values"),
    ("SparseFillEmptyRows", {}, [((4,), F32, None), ((2,), I64, None), ((4, 2), I64, None),
                                 ((1,), F32, None)], "default_value must be a scalar"),
    ("SparseFillEmptyRows", {}, [((4,), F32, None), ((2,), I32, None), ((4, 2), I64, None),
                                 ((), F32, None)], "must match"),
]  # fmt: skip


@pytest.mark.parametrize(("type_", "attrs", "spec", "message"), SHAPE_ERRORS)
def test_shape_errors_openvino_shares(type_, attrs, spec, message):
    with pytest.raises(ShapeError, match=message.replace("[", "\\[")):
        resolve(type_, "opset16").infer(attrs_namespace(attrs), [_info(*s) for s in spec])
    params = [_param_or_const(*s) for s in spec]
    with pytest.raises(Exception):  # noqa: B017 - OpenVINO refuses it too
        if type_ == "SegmentMax":
            opset16.segment_max(*params, *[None] * (3 - len(params)), fill_mode="ZERO")
        else:
            opset16.sparse_fill_empty_rows(*params)


def test_fill_mode_is_required(tmp_path):
    data = opset1.parameter([3], ov.Type.f32, name="in0")
    node = opset16.segment_max(data, opset1.constant(np.array([0, 1, 1], np.int32)), None, "ZERO")
    node.output(0).get_tensor().set_names({"out"})
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node.output(0)], [data], "m"), path)
    text = path.read_text()
    assert 'fill_mode="zero"' in text
    path.write_text(text.replace(' fill_mode="zero"', ""))
    found = [d for d in irrun.validate(path) if d.level == "error"]
    assert any("fill_mode" in str(d) for d in found)


def test_dynamic_dims_in_the_file(tmp_path):
    data = opset1.parameter(ov.PartialShape([-1, 2]), ov.Type.f32, name="in0")
    ids = opset1.parameter(ov.PartialShape([-1]), ov.Type.i64, name="in1")
    node = opset16.segment_max(data, ids, None, "LOWEST")
    node.output(0).get_tensor().set_names({"out"})
    model = ov.Model([node.output(0)], [data, ids], "dyn")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    inputs = [np.arange(12, dtype=np.float32).reshape(6, 2), np.array([0, 0, 1, 3, 3, 3])]
    assert_close(run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0])
