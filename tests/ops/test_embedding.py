"""EmbeddingBagOffsets(Sum), EmbeddingBagPacked(Sum) and EmbeddingSegmentsSum against OpenVINO's
CPU plugin (OpenVINO's reference kernels have no ``evaluate`` for them): hypothesis sweeps of
sizes, empty bags, weights, default indices, reductions and element types; cases by hand for
what the plugin leaves unspecified (an empty last bag, out-of-range indices); shape rules
against OpenVINO's shape inference, dynamic dims included; validate's findings."""

from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openvino import opset1, opset3, opset15
from support.ov_oneop import assert_close, one_op_model, run_cpu, run_irrun, run_saved
from support.ov_shapes import from_ov_shape, to_ov_shape

import irrun
from irrun.errors import ShapeError
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import TensorInfo, attrs_namespace, resolve

DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "i8": np.int8, "f64": np.float64}  # fmt: skip


def table_values(rng, shape, dt):
    if dt.startswith("f"):
        return rng.normal(0, 3, shape).astype(DTYPES[dt])
    lo = 0 if dt == "u8" else -20
    return rng.integers(lo, 20, shape).astype(DTYPES[dt])


def weight_values(rng, n, dt):
    if dt.startswith("f"):
        return rng.normal(0, 1, n).astype(DTYPES[dt])
    return rng.integers(0 if dt == "u8" else -3, 4, n).astype(DTYPES[dt])


def compare(build, inputs, tmp_path, rtol=0.0):
    model = one_op_model(build, inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    want = run_cpu(model, inputs)[0]
    assert_close(got, want, rtol=rtol, atol=rtol)
    return got


SWEEP_TYPES = ["f32", "f16", "f64", "i32", "i64", "u8", "i8"]
# The plugin runs f64 in f32; irrun keeps f64, as the reference does.  Every other type
# agrees exactly: f32 sums run in index order, f16 ones in f32 with one rounding, both
# as the plugin's do.
F64_RTOL = {"f64": 1e-6}


@st.composite
def bag_case(draw):
    dt = draw(st.sampled_from(SWEEP_TYPES))
    idx_dt = draw(st.sampled_from([np.int32, np.int64]))
    num_emb = draw(st.integers(1, 6))
    emb_dims = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n_idx = draw(st.integers(1, 12))
    # The last bag is never empty: the CPU plugin leaves such a row unspecified.
    offsets = sorted(draw(st.lists(st.integers(0, n_idx - 1), min_size=0, max_size=5)))
    return dt, idx_dt, num_emb, emb_dims, n_idx, offsets, draw(st.integers(0, 2**32 - 1))


@settings(max_examples=40, deadline=None)
@given(case=bag_case(), version=st.sampled_from([3, 15]), reduction=st.sampled_from(["sum", "mean"]),
       extra=st.sampled_from(["none", "default", "weights"]), default=st.integers(-1, 5))  # fmt: skip
def test_offsets_sweep(case, version, reduction, extra, default, tmp_path_factory):
    dt, idx_dt, num_emb, emb_dims, n_idx, offsets, seed = case
    if version == 3:
        reduction = "sum"
    if reduction == "mean" and extra == "weights":
        extra = "default"
    rng = np.random.default_rng(seed)
    inputs = [table_values(rng, (num_emb, *emb_dims), dt),
              rng.integers(0, num_emb, n_idx).astype(idx_dt), np.array(offsets, idx_dt)]  # fmt: skip
    if extra != "none":
        inputs.append(np.array(min(default, num_emb - 1), idx_dt))
    if extra == "weights":
        inputs.append(weight_values(rng, n_idx, dt))

    def build(*p):
        if version == 3:
            return opset3.embedding_bag_offsets_sum(*p)
        return opset15.embedding_bag_offsets(*p, *[None] * (5 - len(p)), reduction=reduction)

    compare(build, inputs, tmp_path_factory.mktemp("e"), F64_RTOL.get(dt, 0.0))


@settings(max_examples=30, deadline=None)
@given(dt=st.sampled_from(SWEEP_TYPES), idx_dt=st.sampled_from([np.int32, np.int64]),
       num_emb=st.integers(1, 5), emb_dims=st.lists(st.integers(1, 3), max_size=2),
       batch=st.integers(0, 4), per_bag=st.integers(1, 4), version=st.sampled_from([3, 15]),
       reduction=st.sampled_from(["sum", "mean"]), weights=st.booleans(),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_packed_sweep(dt, idx_dt, num_emb, emb_dims, batch, per_bag, version, reduction,
                      weights, seed, tmp_path_factory):  # fmt: skip
    if version == 3 or weights:
        reduction = "sum"
    rng = np.random.default_rng(seed)
    inputs = [table_values(rng, (num_emb, *emb_dims), dt),
              rng.integers(0, num_emb, (batch, per_bag)).astype(idx_dt)]  # fmt: skip
    if weights:
        inputs.append(weight_values(rng, (batch, per_bag), dt))

    def build(*p):
        if version == 3:
            return opset3.embedding_bag_packed_sum(*p)
        return opset15.embedding_bag_packed(*p, *[None] * (3 - len(p)), reduction=reduction)

    compare(build, inputs, tmp_path_factory.mktemp("p"), F64_RTOL.get(dt, 0.0))


@settings(max_examples=40, deadline=None)
@given(dt=st.sampled_from(SWEEP_TYPES), idx_dt=st.sampled_from([np.int32, np.int64]),
       num_emb=st.integers(1, 5), emb_dims=st.lists(st.integers(1, 3), max_size=2),
       n_idx=st.integers(1, 10), num_segments=st.integers(1, 6),
       extra=st.sampled_from(["none", "default", "weights"]), default=st.integers(0, 4),
       seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_segments_sweep(dt, idx_dt, num_emb, emb_dims, n_idx, num_segments, extra, default, seed,
                        tmp_path_factory):  # fmt: skip
    """Sorted ids, as the spec asks: test_unsorted_segment_ids has the others."""
    # No indices or no segments crash the CPU plugin: test_segments_of_nothing has them.
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, num_segments, n_idx)
    inputs = [table_values(rng, (num_emb, *emb_dims), dt),
              rng.integers(0, num_emb, n_idx).astype(idx_dt),
              np.sort(ids).astype(idx_dt), np.array(num_segments, idx_dt)]  # fmt: skip
    if extra != "none":
        inputs.append(np.array(min(default, num_emb - 1), idx_dt))
    if extra == "weights":
        inputs.append(weight_values(rng, n_idx, dt))
    compare(opset3.embedding_segments_sum, inputs, tmp_path_factory.mktemp("s"),
            F64_RTOL.get(dt, 0.0))  # fmt: skip


def test_f32_sums_equal_the_plugin_bit_for_bit(tmp_path):
    rng = np.random.default_rng(5)
    table = rng.normal(0, 100, (7, 33)).astype(np.float32)
    idx = rng.integers(0, 7, 200).astype(np.int32)
    weights = rng.normal(0, 1, 200).astype(np.float32)
    offsets = np.array([0, 3, 3, 90, 150], np.int32)
    compare(lambda *p: opset15.embedding_bag_offsets(*p, reduction="sum"),
            [table, idx, offsets, np.array(-1, np.int32), weights], tmp_path)  # fmt: skip
    compare(lambda *p: opset15.embedding_bag_offsets(*p, None, None, reduction="mean"),
            [table, idx, offsets], tmp_path)  # fmt: skip


# --------------------------------------------------------------------------- by hand

SPEC_TABLE = np.array([[-0.2, -0.6], [-0.1, -0.4], [-1.9, -1.8], [-1.0, 1.5], [0.8, -0.7]],
                      np.float32)  # fmt: skip


def test_the_spec_examples(tmp_path):
    idx, offsets = np.array([0, 2, 3, 4], np.int32), np.array([0, 2, 2], np.int32)
    half = np.full(4, 0.5, np.float32)
    got = run_irrun(lambda *p: opset15.embedding_bag_offsets(*p, reduction="sum"),
                    [SPEC_TABLE, idx, offsets, np.array(0, np.int32), half], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-1.05, -1.2], [-0.2, -0.6], [-0.1, 0.4]], rtol=1e-6)
    w = np.array([0.5, 0.2, -2, 1], np.float32)
    got = run_irrun(lambda *p: opset15.embedding_bag_offsets(*p, reduction="sum"),
                    [SPEC_TABLE, idx, offsets, np.array(-1, np.int32), w], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-0.48, -0.66], [0, 0], [2.8, -3.7]], rtol=1e-6)
    got = run_irrun(lambda *p: opset15.embedding_bag_offsets(*p, None, None, reduction="mean"),
                    [SPEC_TABLE, idx, offsets], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-1.05, -1.2], [0, 0], [-0.1, 0.4]], rtol=1e-6)
    packed = np.array([[0, 2], [1, 2], [3, 4]], np.int32)
    got = run_irrun(lambda *p: opset15.embedding_bag_packed(*p, None, reduction="sum"),
                    [SPEC_TABLE, packed], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-2.1, -2.4], [-2.0, -2.2], [-0.2, 0.8]], rtol=1e-6)
    got = run_irrun(lambda *p: opset15.embedding_bag_packed(*p, None, reduction="mean"),
                    [SPEC_TABLE, packed], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-1.05, -1.2], [-1.0, -1.1], [-0.1, 0.4]], rtol=1e-6)
    got = run_irrun(opset3.embedding_segments_sum,
                    [SPEC_TABLE, idx, np.array([0, 0, 2, 2], np.int32), np.array(3, np.int32),
                     np.array(0, np.int32), half], tmp_path)  # fmt: skip
    np.testing.assert_allclose(got, [[-1.05, -1.2], [-0.2, -0.6], [-0.1, 0.4]], rtol=1e-6)


def test_empty_last_bags_follow_the_spec(tmp_path):
    # offsets[-1] == len(indices): the plugin leaves the row unspecified, the reference
    # refuses it; the spec's bag is empty (zeros, or the default row).
    table = np.arange(10, dtype=np.float32).reshape(5, 2)
    idx, offsets = np.array([0, 2, 3, 4], np.int32), np.array([1, 3, 4, 4], np.int32)
    got = run_irrun(lambda *p: opset15.embedding_bag_offsets(*p, None, None, reduction="mean"),
                    [table, idx, offsets], tmp_path)  # fmt: skip
    # Index 0 (before offsets[0]) belongs to no bag.
    np.testing.assert_array_equal(got, [[5, 6], [8, 9], [0, 0], [0, 0]])
    got = run_irrun(lambda *p: opset15.embedding_bag_offsets(*p, None, reduction="sum"),
                    [table, np.zeros(0, np.int32), np.array([0, 0], np.int32),
                     np.array(3, np.int32)], tmp_path)  # fmt: skip
    np.testing.assert_array_equal(got, [[6, 7], [6, 7]])


def test_integer_means_truncate_toward_zero(tmp_path):
    table = np.array([[1], [2], [-3], [4], [7]], np.int32)
    got = compare(lambda *p: opset15.embedding_bag_offsets(*p, None, None, reduction="mean"),
                  [table, np.array([0, 2, 3, 4], np.int32), np.array([0, 2, 3], np.int32)],
                  tmp_path)  # fmt: skip
    assert got.ravel().tolist() == [-1, 4, 7]  # (1 - 3) / 2 = -1, 4, 7
    got = compare(lambda *p: opset15.embedding_bag_packed(*p, None, reduction="mean"),
                  [table, np.array([[1, 2], [0, 2, ]], np.int64)], tmp_path)  # fmt: skip
    assert got.ravel().tolist() == [0, -1]  # -1 / 2 -> 0, -2 / 2 -> -1


def test_bags_of_no_index_in_packed(tmp_path):
    table = np.ones((3, 2), np.float32)
    idx = np.zeros((2, 0), np.int32)
    got = run_irrun(lambda *p: opset3.embedding_bag_packed_sum(*p), [table, idx], tmp_path)
    np.testing.assert_array_equal(got, np.zeros((2, 2), np.float32))
    got = run_irrun(lambda *p: opset15.embedding_bag_packed(*p, None, reduction="mean"),
                    [table, idx], tmp_path)  # fmt: skip
    assert np.isnan(got).all() and got.shape == (2, 2)
    with pytest.raises(Exception, match="divides int32 by zero"):
        run_irrun(lambda *p: opset15.embedding_bag_packed(*p, None, reduction="mean"),
                  [table.astype(np.int32), idx], tmp_path)  # fmt: skip


def test_unsorted_segment_ids(tmp_path):
    # Each index adds to its segment, as the reference kernel adds them; the CPU plugin
    # takes runs of equal ids for segments and gives [11, 10] here.
    table = np.array([[1], [10], [100]], np.float32)
    inputs = [table, np.array([0, 1, 2], np.int32), np.array([0, 1, 0], np.int32),
              np.array(2, np.int32)]  # fmt: skip
    got = run_irrun(opset3.embedding_segments_sum, inputs, tmp_path)
    assert got.ravel().tolist() == [101, 10]
    model = one_op_model(opset3.embedding_segments_sum, inputs)
    assert run_cpu(model, inputs)[0].ravel().tolist() == [11, 10]


def test_segments_of_nothing(tmp_path):
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    none = np.zeros(0, np.int32)
    got = run_irrun(opset3.embedding_segments_sum, [table, none, none, np.array(2, np.int32),
                                                     np.array(1, np.int32)], tmp_path)  # fmt: skip
    np.testing.assert_array_equal(got, [[2, 3], [2, 3]])
    got = run_irrun(opset3.embedding_segments_sum, [table, none, none, np.array(0, np.int32)],
                    tmp_path)  # fmt: skip
    assert got.shape == (0, 2)


def test_bf16_sums_in_f32():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    op = resolve("EmbeddingBagPackedSum", "opset3")
    table = np.array([[256.0], [1.0]], bf16)
    # 256 + 1 + 1 is 258 in f32 and one rounding; bf16 steps would give 256 + 1 = 256 twice.
    (got,) = op.kernel(attrs_namespace({}), table, np.array([[0, 1, 1]], np.int32))
    assert got.dtype == bf16 and float(got[0, 0]) == 258.0


# --------------------------------------------------------------------------- errors

OFFSETS15 = lambda *p: opset15.embedding_bag_offsets(*p, *[None] * (5 - len(p)))  # noqa: E731
T = np.zeros((4, 2), np.float32)
BAD = [
    ("index", OFFSETS15, [T, np.array([0, 4], np.int32), np.array([0], np.int32)],
     "index 4 at \\[1\\] is out of range"),
    ("negative index", OFFSETS15, [T, np.array([-1, 0], np.int32), np.array([0], np.int32)],
     "index -1"),
    ("offset", OFFSETS15, [T, np.array([0, 1], np.int32), np.array([0, 3], np.int32)],
     "offset 3 at \\[1\\] is out of range for 2 indices"),
    ("falling offsets", OFFSETS15, [T, np.array([0, 1], np.int32), np.array([1, 0], np.int32)],
     "must not decrease"),
    ("default", OFFSETS15, [T, np.array([0, 1], np.int32), np.array([0, 0], np.int32),
                            np.array(4, np.int32)], "default_index 4"),
    ("segment id", opset3.embedding_segments_sum,
     [T, np.array([0, 1], np.int32), np.array([0, 2], np.int32), np.array(2, np.int32)],
     "segment id 2 at \\[1\\]"),
    ("negative default", opset3.embedding_segments_sum,
     [T, np.array([0, 1], np.int32), np.array([0, 0], np.int32), np.array(2, np.int32),
      np.array(-1, np.int32)], "default_index -1"),
    ("packed index", lambda *p: opset3.embedding_bag_packed_sum(*p),
     [T, np.array([[0, 9]], np.int64)], "index 9"),
]  # fmt: skip


@pytest.mark.parametrize("case", BAD, ids=lambda c: c[0])
def test_bad_values_are_one_line_errors(case, tmp_path):
    _, build, inputs, message = case
    with pytest.raises(Exception, match=message) as info:
        run_irrun(build, inputs, tmp_path)
    assert "\n" not in str(info.value)


def test_a_negative_default_below_minus_one_means_zeros(tmp_path):
    # The reference fills with zeros for any negative default; the plugin reads outside
    # the table for -2.
    got = run_irrun(OFFSETS15, [np.ones((3, 1), np.float32), np.array([0], np.int32),
                                np.array([0, 1], np.int32), np.array(-2, np.int32)],
                    tmp_path)  # fmt: skip
    assert got.ravel().tolist() == [1, 0]


# --------------------------------------------------------------------------- shape rules

F32, I32, I64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"], ELEMENT_TYPES["i64"]
I = Interval  # noqa: E741
SHAPES = [
    ("offsets", [(5, 2, 3), (DYNAMIC,), (7,)]),
    ("offsets", [(DYNAMIC, I(2, 4)), (DYNAMIC,), (DYNAMIC,), (), (DYNAMIC,)]),
    ("offsets", [None, (4,), (I(1, 3),)]),
    ("packed", [(5, I(2, 4)), (I(1, 3), DYNAMIC), (2, DYNAMIC)]),
    ("packed", [(5, 2), None]),
    ("segments", [(5, 2), (4,), (4,), ()]),
    ("segments", [(5, DYNAMIC), (DYNAMIC,), (4,), (), (), (DYNAMIC,)]),
]  # fmt: skip


def _ov_node(kind, shapes, num_segments=None):
    types = {"offsets": [ov.Type.f32, ov.Type.i32, ov.Type.i32, ov.Type.i32, ov.Type.f32],
             "packed": [ov.Type.f32, ov.Type.i64, ov.Type.f32],
             "segments": [ov.Type.f32, ov.Type.i32, ov.Type.i32, ov.Type.i32, ov.Type.i32,
                          ov.Type.f32]}[kind]  # fmt: skip
    params = [opset1.parameter(to_ov_shape(s), t) for s, t in zip(shapes, types, strict=False)]
    if num_segments is not None:
        params[3] = opset1.constant(np.array(num_segments, np.int32))
    make = {"offsets": opset15.embedding_bag_offsets, "packed": opset15.embedding_bag_packed,
            "segments": opset3.embedding_segments_sum}[kind]  # fmt: skip
    return make(*params)


def _irrun_infer(kind, shapes, num_segments=None, attrs=None):
    types = {"offsets": [F32, I32, I32, I32, F32], "packed": [F32, I64, F32],
             "segments": [F32, I32, I32, I32, I32, F32]}[kind]  # fmt: skip
    op = resolve({"offsets": "EmbeddingBagOffsets", "packed": "EmbeddingBagPacked",
                  "segments": "EmbeddingSegmentsSum"}[kind], "opset16")  # fmt: skip
    infos = [TensorInfo(s, t) for s, t in zip(shapes, types, strict=False)]
    if num_segments is not None:
        infos[3] = TensorInfo((), I32, np.array(num_segments, np.int32))
    return op.infer(attrs_namespace(attrs or {"reduction": "sum"}), infos)[0]


@pytest.mark.parametrize(("kind", "shapes"), SHAPES)
@pytest.mark.parametrize("num_segments", [None, 3])
def test_shape_rules_match_openvino(kind, shapes, num_segments):
    if kind != "segments" and num_segments is not None:
        pytest.skip("num_segments is EmbeddingSegmentsSum's")
    want = _ov_node(kind, shapes, num_segments)
    got = _irrun_infer(kind, shapes, num_segments)
    assert got.shape == from_ov_shape(want.get_output_partial_shape(0))
    assert got.element_type == F32


SHAPE_ERRORS = [
    ("offsets", [(), (4,), (3,)], {}, "scalar"),
    ("offsets", [(5, 2), (4, 1), (3,)], {}, "indices must be 1-D"),
    ("offsets", [(5, 2), (4,), (3,), (1,)], {}, "default_index must be a scalar"),
    ("offsets", [(5, 2), (4,), (3,), (), (5,)], {}, "same shape"),
    ("offsets", [(5, 2), (4,), (3,), (), (4,)], {"reduction": "mean"}, "only with reduction sum"),
    ("packed", [(5, 2), (4,)], {}, "indices must be 2-D"),
    ("packed", [(5, 2), (3, 4), (3, 5)], {}, "same shape"),
    ("segments", [(5, 2), (4,), (3,), ()], {}, "same shape"),
    ("segments", [(5, 2), (4,), (4,), (1,)], {}, "num_segments must be a scalar"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "shapes", "attrs", "message"), SHAPE_ERRORS)
def test_shape_errors_that_openvino_shares(kind, shapes, attrs, message):
    with pytest.raises(ShapeError, match=message):
        _irrun_infer(kind, shapes, attrs={"reduction": "sum", **attrs})
    with pytest.raises(Exception):  # noqa: B017 - OpenVINO refuses it too
        if attrs:
            params = [opset1.parameter(list(s), t) for s, t in
                      zip(shapes, [ov.Type.f32, ov.Type.i32, ov.Type.i32, ov.Type.i32,
                                   ov.Type.f32], strict=False)]  # fmt: skip
            opset15.embedding_bag_offsets(*params, reduction=attrs["reduction"])
        else:
            _ov_node(kind, shapes)


def test_type_errors():
    op = resolve("EmbeddingBagOffsets", "opset15")
    a = attrs_namespace({"reduction": "sum"})
    with pytest.raises(ShapeError, match="offsets are i64 but indices are i32"):
        op.infer(a, [TensorInfo((5, 2), F32), TensorInfo((4,), I32), TensorInfo((3,), I64)])
    with pytest.raises(ShapeError, match="does not take"):
        op.infer(a, [TensorInfo((5, 2), F32), TensorInfo((4,), F32), TensorInfo((3,), F32)])
    with pytest.raises(ShapeError, match="per_sample_weights are f16"):
        op.infer(a, [TensorInfo((5, 2), F32), TensorInfo((4,), I32), TensorInfo((3,), I32),
                     TensorInfo((), I32), TensorInfo((4,), ELEMENT_TYPES["f16"])])  # fmt: skip
    seg = resolve("EmbeddingSegmentsSum", "opset3")
    with pytest.raises(ShapeError, match="num_segments is -2"):
        seg.infer(a, [TensorInfo((5, 2), F32), TensorInfo((4,), I32), TensorInfo((4,), I32),
                      TensorInfo((), I32, np.array(-2, np.int32))])  # fmt: skip


def test_dynamic_dims_in_the_file(tmp_path):
    table = opset1.parameter(ov.PartialShape([-1, 3]), ov.Type.f32, name="in0")
    idx = opset1.parameter(ov.PartialShape([-1]), ov.Type.i64, name="in1")
    offsets = opset1.parameter(ov.PartialShape([-1]), ov.Type.i64, name="in2")
    node = opset15.embedding_bag_offsets(table, idx, offsets, reduction="mean")
    node.output(0).get_tensor().set_names({"out"})
    model = ov.Model([node.output(0)], [table, idx, offsets], "dyn")
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    rng = np.random.default_rng(3)
    inputs = [rng.normal(size=(6, 3)).astype(np.float32), rng.integers(0, 6, 9),
              np.array([0, 4, 4, 7])]  # fmt: skip
    assert_close(run_saved(model, inputs, tmp_path)[0], run_cpu(model, inputs)[0], rtol=1e-6)


def test_validate_finds_a_bad_reduction(tmp_path):
    table = opset1.parameter([5, 2], ov.Type.f32, name="in0")
    node = opset15.embedding_bag_packed(table, opset1.constant(np.array([[0, 1]], np.int32)),
                                        None, "mean")  # fmt: skip
    node.output(0).get_tensor().set_names({"out"})
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node.output(0)], [table], "m"), path)
    text = path.read_text()
    assert 'reduction="mean"' in text
    path.write_text(text.replace('reduction="mean"', 'reduction="max"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("reduction" in d and "max" in d for d in found), found
