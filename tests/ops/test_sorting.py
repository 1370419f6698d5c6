"""Bucketize, SearchSorted and Unique against the CPU plugin, by hand, their shape rules
against OpenVINO's own, and properties of their row kernels (hypothesis).

Every op here moves or counts values, so comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.arrays import ET, random_data

from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset10, opset15  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    const,
    one_op_model,
    run_both,
    run_cpu,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

# --------------------------------------------------------------------------- Bucketize


@pytest.mark.parametrize("right", [True, False])
@pytest.mark.parametrize("et, bt", [("f32", "f32"), ("f16", "f16"), ("i32", "i32"),
                                    ("i64", "f32"), ("f32", "i32"), ("u8", "i64")])  # fmt: skip
def test_bucketize_matches_cpu(et, bt, right, tmp_path):
    rng = np.random.default_rng(len(et + bt) + right)
    x = random_data(rng, (3, 41), et)
    if ET[et].dtype.kind == "f":
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    for nb in (0, 1, 7):
        buckets = np.sort(random_data(rng, (nb,), bt))
        if nb:
            x.flat[4 : 4 + nb] = buckets  # on the bounds
        for out in ("i32", "i64"):
            got, want = run_both(lambda p, q, o=out: opset3.bucketize(p, q, o, right),
                                 [x, buckets], tmp_path)  # fmt: skip
            assert_close(got, want, what=f"{nb} {out}")


def test_bucketize_by_hand(tmp_path):
    x = np.array([-1, 0, 0.5, 1, 2, 3, np.nan], np.float32)
    b = np.array([0, 1, 2], np.float32)
    for right, want in ((True, [0, 0, 1, 1, 2, 3, 0]), (False, [0, 1, 1, 2, 3, 3, 3])):
        model = one_op_model(lambda p, q, r=right: opset3.bucketize(p, q, "i64", r), [x, b])
        assert run_saved(model, [x, b], tmp_path)[0].tolist() == want


def test_bucketize_shape_rule():
    rule = resolve("Bucketize", "opset3")
    attrs = attrs_namespace({"output_type": ET["i32"], "with_right_bound": True})
    (out,) = rule.infer(attrs, [TensorInfo((Interval(1, 3), 4), ET["f32"]),
                                TensorInfo((5,), ET["f32"])])  # fmt: skip
    assert out.shape == (Interval(1, 3), 4) and out.element_type.name == "i32"
    with pytest.raises(ShapeError, match="buckets must be 1-D"):
        rule.infer(attrs, [TensorInfo((2,), ET["f32"]), TensorInfo((2, 2), ET["f32"])])
    with pytest.raises(RuntimeError):
        opset3.bucketize(opset1.parameter([2]), opset1.parameter([2, 2]))


# --------------------------------------------------------------------------- SearchSorted


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("et", ["f32", "i32", "f16", "i64"])
def test_search_sorted_matches_cpu(et, right, tmp_path):
    rng = np.random.default_rng(len(et) + 3 * right)
    for seq_shape, val_shape in (((9,), (4, 5)), ((2, 3, 7), (2, 3, 4)), ((4, 6), (4, 1)),
                                 ((5,), ()), ((3, 1), (3, 6)), ((2, 4), (2, 0))):  # fmt: skip
        seq = np.sort(random_data(rng, seq_shape, et), axis=-1)
        seq = np.round(seq) if seq.dtype.kind == "f" else seq // 300  # ties
        values = random_data(rng, val_shape, et)
        values = np.round(values) if values.dtype.kind == "f" else values // 300
        if values.dtype.kind == "f" and values.size > 2:
            values.flat[:2] = [np.nan, -np.inf]
        for out in ("i64", "i32"):
            got, want = run_both(lambda p, q, o=out: opset15.search_sorted(p, q, right, o),
                                 [seq, values], tmp_path)  # fmt: skip
            assert_close(got, want, what=f"{seq_shape} {val_shape} {out}")


def test_search_sorted_by_hand(tmp_path):
    s = np.array([[0, 1, 2, 2, 3], [1, 1, 1, 5, 9]], np.float32)
    v = np.array([[2, -1, 4], [1, 10, 5]], np.float32)
    for right, want in ((False, [[2, 0, 5], [0, 5, 3]]), (True, [[4, 0, 5], [3, 5, 4]])):
        model = one_op_model(lambda p, q, r=right: opset15.search_sorted(p, q, r), [s, v])
        assert run_saved(model, [s, v], tmp_path)[0].tolist() == want
    # Empty rows: every value has 0 entries below it (the plugin returns whatever its
    # output buffer held).
    s, v = np.zeros((2, 0), np.float32), np.ones((2, 3), np.float32)
    model = one_op_model(lambda p, q: opset15.search_sorted(p, q, True), [s, v])
    assert run_saved(model, [s, v], tmp_path)[0].tolist() == [[0, 0, 0], [0, 0, 0]]


def test_search_sorted_shape_rule_matches_openvino():
    rule = resolve("SearchSorted", "opset15")
    attrs = attrs_namespace({"right_mode": False, "output_type": ET["i64"]})
    for seq, val in (((DYNAMIC, 5), (2, DYNAMIC)), ((5,), ()), ((5,), (2, 3, 4)),
                     ((Interval(1, 4), 3), (Interval(2, 8), 7)), (None, (2, 3))):  # fmt: skip
        p = opset1.parameter(to_ov_shape(seq), ov.Type.f32)
        q = opset1.parameter(to_ov_shape(val), ov.Type.f32)
        want = from_ov_shape(opset15.search_sorted(p, q).get_output_partial_shape(0))
        (got,) = rule.infer(attrs, [TensorInfo(seq, ET["f32"]), TensorInfo(val, ET["f32"])])
        assert got.shape == want, (seq, val)
    for seq, val, match in (((2, 5), (3, 4), "differ on axis 0"), ((2, 5), (2,), "one rank")):
        with pytest.raises(ShapeError, match=match):
            rule.infer(attrs, [TensorInfo(seq, ET["f32"]), TensorInfo(val, ET["f32"])])
        with pytest.raises(RuntimeError):
            opset15.search_sorted(opset1.parameter(list(seq)), opset1.parameter(list(val)))
    with pytest.raises(ShapeError, match="one type"):
        rule.infer(attrs, [TensorInfo((5,), ET["f32"]), TensorInfo((2,), ET["i32"])])


# --------------------------------------------------------------------------- Unique


def _unique(p, sorted_, axis=None, it="i64", ct="i64"):
    return opset10.unique(p, None if axis is None else const(axis), sorted_, it, ct)


@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("et", ["f32", "i32", "u8", "i64", "f16"])
def test_unique_matches_cpu(et, sorted_, tmp_path):
    """Along an axis other than 0 the plugin leaves duplicates (and with u8 data along any
    axis its indices are garbage), so slices along axis k are checked against the
    plugin's answer along axis 0 of the data with axis k moved to the front."""
    rng = np.random.default_rng(len(et) + sorted_)
    for shape, axis in (((17,), None), ((3, 4), None), ((5, 3), 0), ((2, 6), 1),
                        ((3, 4, 2), -1), ((4, 2, 3), 1), ((1,), None), ((), None),
                        ((6, 2, 2), 0)):  # fmt: skip
        x = np.abs(random_data(rng, shape, et)).astype(ET[et].dtype)
        if x.ndim:
            x = np.take(x, rng.integers(0, x.shape[0], x.shape[0]), axis=0)  # repeats
        x = (x % 3 if x.dtype.kind != "f" else np.round(x) % 3 + 0).astype(x.dtype)
        if et == "f32" and x.size > 3:
            x.flat[:2] = [-0.0, 0.0]  # one value
        for it, ct in (("i64", "i64"), ("i32", "i64"), ("i64", "i32")):
            model = one_op_model(lambda p, a=axis, i=it, c=ct: _unique(p, sorted_, a, i, c), [x], 4)
            got = run_saved(model, [x], tmp_path)
            if axis is None:
                want = run_cpu(model, [x])
            elif et == "u8":
                continue
            else:
                front = np.ascontiguousarray(np.moveaxis(x, axis, 0))
                front_model = one_op_model(
                    lambda p, i=it, c=ct: _unique(p, sorted_, 0, i, c), [front], 4)
                want = run_cpu(front_model, [front])
                want[0] = np.moveaxis(want[0], 0, axis)
            for k, (g, w) in enumerate(zip(got, want, strict=True)):
                assert_close(g, w, what=f"{shape} {axis} output {k}")


def test_unique_nan_and_zeros(tmp_path):
    x = np.array([3, 1, np.nan, 1, -0.0, 0.0, np.nan, 2, 3], np.float32)
    got, want = run_both(lambda p: _unique(p, False), [x], tmp_path, outputs=4)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    assert np.signbit(got[0][3])  # -0.0 came first
    # Sorted, each NaN is its own value and they come last (the plugin's output has
    # duplicates here, so the expectation is by hand).
    model = one_op_model(lambda p: _unique(p, True), [x], 4)
    values, first, inverse, counts = run_saved(model, [x], tmp_path)
    np.testing.assert_array_equal(values, [-0.0, 1, 2, 3, np.nan, np.nan])
    assert first.tolist() == [4, 1, 7, 0, 2, 6]
    assert inverse.tolist() == [3, 1, 4, 1, 0, 0, 5, 2, 3]
    assert counts.tolist() == [2, 2, 1, 2, 1, 1]
    # Slices compare as numbers too.
    y = np.array([[-0.0, 0.0, 1.0]], np.float32)
    model = one_op_model(lambda p: _unique(p, False, 1), [y], 4)
    values, first, inverse, counts = run_saved(model, [y], tmp_path)
    assert values.tolist() == [[0.0, 1.0]] and np.signbit(values[0, 0])
    assert first.tolist() == [0, 2] and inverse.tolist() == [0, 0, 1]
    assert counts.tolist() == [2, 1]


def test_unique_by_hand(tmp_path):
    x = np.array([[3, 2], [1, 5], [3, 1], [1, 5]], np.int32)
    model = one_op_model(lambda p: _unique(p, True, 0), [x], 4)
    values, first, inverse, counts = run_saved(model, [x], tmp_path)
    assert values.tolist() == [[1, 5], [3, 1], [3, 2]]
    assert first.tolist() == [1, 2, 0] and inverse.tolist() == [2, 0, 1, 0]
    assert counts.tolist() == [2, 1, 1]


def test_unique_shape_rule_matches_openvino():
    rule = resolve("Unique", "opset10")
    attrs = attrs_namespace({"sorted": True, "index_element_type": ET["i64"],
                             "count_element_type": ET["i32"]})  # fmt: skip
    for shape, axis in (((2, 3), None), ((2, 3), 1), ((2, DYNAMIC, 4), 1), ((), None),
                        ((0, 3), None), ((0, 3), 1), ((Interval(1, 4), 3), None),
                        ((2, 3), -2)):  # fmt: skip
        p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
        node = _unique(p, True, axis, "i64", "i32")
        # OpenVINO's empty-input case reports a lower bound of -1: a dynamic dim.
        want = [tuple(DYNAMIC if isinstance(d, Interval) and d.lo < 0 else d for d in shape)
                for shape in (from_ov_shape(node.get_output_partial_shape(k))
                              for k in range(4))]  # fmt: skip
        infos = [TensorInfo(shape, ET["f32"])]
        if axis is not None:
            infos.append(TensorInfo((), ET["i64"], np.array(axis)))
        got = rule.infer(attrs, infos)
        assert [g.shape for g in got] == want, (shape, axis)
        assert [g.element_type.name for g in got] == ["f32", "i64", "i64", "i32"]
    # A constant input gives exact shapes, as OpenVINO's constant folding does.
    known = TensorInfo((3,), ET["i64"], np.array([1, 2, 2]))
    node = _unique(const([1, 2, 2]), True)
    want = [from_ov_shape(node.get_output_partial_shape(k)) for k in range(4)]
    assert [g.shape for g in rule.infer(attrs, [known])] == want
    with pytest.raises(ShapeError, match="axis 2 is out of range"):
        rule.infer(attrs, [TensorInfo((2, 3), ET["f32"]), TensorInfo((), ET["i64"],
                                                                     np.array(2))])


def test_unique_rejects_bad_index_types():
    op = resolve("Unique", "opset10")
    with pytest.raises(ValueError, match="i32 or i64"):
        op.check(attrs_namespace({"sorted": True, "index_element_type": ET["f32"],
                                  "count_element_type": ET["i64"]}))  # fmt: skip


# --------------------------------------------------------------------------- properties


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(-4, 4), min_size=0, max_size=40), st.booleans())
def test_unique_reconstructs_its_input(values, sorted_):
    from irrun.ops.sorting import unique_rows

    x = np.array(values, np.int64).reshape(-1, 1)
    first, inverse, counts = unique_rows(x, sorted_)
    uniq = x[first, 0]
    assert uniq[inverse].tolist() == values
    assert counts.tolist() == [values.count(v) for v in uniq.tolist()]
    assert first.tolist() == [values.index(v) for v in uniq.tolist()]
    assert uniq.tolist() == (sorted(set(values)) if sorted_ else list(dict.fromkeys(values)))


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 4), st.integers(0, 6), st.integers(0, 6), st.booleans(), st.data())
def test_row_search_is_searchsorted_per_row(rows, n, m, right, data):
    from irrun.ops.sorting import search_rows

    ints = st.integers(-3, 3)
    s = np.sort(np.array(data.draw(st.lists(ints, min_size=rows * n, max_size=rows * n)),
                         np.float32).reshape(rows, n), axis=1)  # fmt: skip
    v = np.array(data.draw(st.lists(ints, min_size=rows * m, max_size=rows * m)),
                 np.float32).reshape(rows, m)  # fmt: skip
    side = "right" if right else "left"
    want = [np.searchsorted(s[r], v[r], side=side).tolist() for r in range(rows)]
    assert search_rows(s, v, right).tolist() == want


# --------------------------------------------------------------------------- element types
# Every type Bucketize, SearchSorted and Unique declare (the plugin sweeps above run a few),
# against OpenVINO's reference kernels; validate naming the types they do not take.
# (OpenVINO takes the small floats and packed integers too; irrun does not order them.)

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ir.element_types import INDEX_TYPES, NUMBERS  # noqa: E402
from irrun.ops.sorting import UNIQUE_TYPES  # noqa: E402


@pytest.mark.parametrize(("et", "bt"), [(t, "f32") for t in NUMBERS] + [("f32", t) for t in NUMBERS])
@pytest.mark.parametrize("right", [False, True])
def test_bucketize_every_declared_type(et, bt, right, tmp_path):
    x = convertible(et, (3, 7), seed=1, low=-6, high=6)
    buckets = np.sort(convertible(bt, (4,), seed=2, low=-6, high=6))
    got, want = typed_runs(lambda p, q: opset3.bucketize(p, q, "i32", right), [x, buckets],
                           [et, bt], tmp_path)  # fmt: skip
    assert_typed_close(got, want, rtol=0)


@pytest.mark.parametrize("et", NUMBERS)
@pytest.mark.parametrize("right", [False, True])
def test_search_sorted_every_declared_type(et, right, tmp_path):
    seq = np.sort(convertible(et, (2, 6), seed=3, low=-6, high=6), axis=-1)
    values = convertible(et, (2, 4), seed=4, low=-6, high=6)
    got, want = typed_runs(lambda p, q: opset15.search_sorted(p, q, right), [seq, values],
                           [et, et], tmp_path)  # fmt: skip
    assert_typed_close(got, want, rtol=0)


@pytest.mark.parametrize("et", UNIQUE_TYPES)
@pytest.mark.parametrize("at", [None, *INDEX_TYPES])
def test_unique_every_declared_type(et, at, tmp_path):
    x = convertible(et, (4, 3), seed=5, low=-3, high=3)
    x[2] = x[0]  # a repeated row along axis 0

    def build(p):
        axis = None if at is None else opset1.constant(np.array([0]), getattr(ov.Type, at))
        return opset10.unique(p, axis, True, "i64", "i64")

    got, want = typed_runs(build, [x], [et], tmp_path, outputs=4)
    assert_typed_close(got, want, rtol=0)


@pytest.mark.parametrize(("op", "port", "et"),
                         [("Bucketize", 0, "boolean"), ("Bucketize", 1, "u4"),
                          ("SearchSorted", 0, "f8e4m3"), ("SearchSorted", 1, "boolean"),
                          ("Unique", 0, "u4"), ("Unique", 0, "string")])  # fmt: skip
def test_validate_names_a_type_it_does_not_take(op, port, et, tmp_path):
    x = np.zeros((2, 3), np.float32)
    if op == "Bucketize":
        build, inputs, label = (lambda p, q: opset3.bucketize(p, q)), [x, np.zeros(3, np.float32)], "Bucketize-v3"
    elif op == "SearchSorted":
        build, inputs, label = (lambda p, q: opset15.search_sorted(p, q)), [x, x], "SearchSorted-v15"
    else:
        # (its axis must be a Constant, which these tests cannot retype)
        build, inputs, label = (lambda p: opset10.unique(p)), [x], "Unique-v10"
    assert_refused(build, inputs, port, et, tmp_path, label)
