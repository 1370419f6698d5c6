"""Slice against OpenVINO: the CPU plugin, the reference kernels (``Model.evaluate``)
where the two differ, by hand, and the shape rules against OpenVINO's shape inference
on the same partial shapes.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.arrays import DTYPES, I64_MAX, I64_MIN, values

from irrun.ir.dims import Interval, dims_agree
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops.slicing import slice_dim, slice_length

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    const,
    evaluate_reference,
    one_op_model,
    run_both,
    run_cpu,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

# --------------------------------------------------------------------------- Slice


def test_slice_length_by_hand():
    assert slice_length(10, 2, 8, 3) == 2  # 2, 5
    assert slice_length(10, -3, I64_MAX, 1) == 3  # the last three
    assert slice_length(10, I64_MAX, I64_MIN, -1) == 10  # reversed whole
    assert slice_length(10, -1, I64_MIN, -4) == 3  # 9, 5, 1
    assert slice_length(10, 8, 2, 1) == 0
    assert slice_length(0, 0, I64_MAX, 1) == 0
    assert slice_length(10, -20, 3, 1) == 3  # a start before the dim is clamped
    assert slice_length(4, -9, -9, -1) == 1  # ... to element 0, which a negative step takes
    assert slice_length(4, -9, -1, -1) == 0
    assert slice_dim(Interval(2, 10), 1, I64_MAX, 1) == Interval(1, 9)
    assert slice_dim(Interval(2, 8), -5, 3, 1) == Interval(0, 3)  # 3 at sizes 3..5, 0 at 8
    assert slice_dim(Interval(0, None), 1, I64_MAX, 1) == Interval(0, None)
    assert slice_dim(Interval(5, None), -5, -1, 1) == 4


def _slice_case(rng: random.Random):
    rank = rng.randint(1, 4)
    shape = [rng.choice((0, 1, 2, 3, 5, 7)) if rng.random() < 0.15 else rng.randint(1, 7)
             for _ in range(rank)]  # fmt: skip
    n = rng.randint(1, rank)
    axes = rng.sample(range(rank), n)
    bound = (-9, -3, -1, 0, 1, 2, 4, 9, I64_MAX, I64_MIN)
    start = [rng.choice(bound) for _ in axes]
    stop = [rng.choice(bound) for _ in axes]
    step = [rng.choice((1, 1, 2, 3, -1, -1, -2, -3)) for _ in axes]
    use_axes = rng.random() < 0.7 or axes != list(range(n))
    axes = [a - rank if rng.random() < 0.3 else a for a in axes]
    return shape, start, stop, step, axes if use_axes else None


SLICE_CASES = [(dtype, i) for dtype in DTYPES for i in range(10)]


@pytest.mark.parametrize(("dtype", "seed"), SLICE_CASES)
def test_slice_matches_cpu(dtype, seed, tmp_path):
    rng = random.Random(seed * 31 + len(dtype))
    shape, start, stop, step, axes = _slice_case(rng)
    x = values(np.random.default_rng(seed), shape, dtype)
    idx = np.int32 if seed % 3 == 0 else np.int64
    if seed % 3 == 0:  # i32 parameters: no INT64 extremes
        start = [max(min(v, 2**31 - 1), -(2**31)) for v in start]
        stop = [max(min(v, 2**31 - 1), -(2**31)) for v in stop]

    def build(p):
        extra = [] if axes is None else [const(axes, idx)]
        return opset8.slice(p, const(start, idx), const(stop, idx), const(step, idx), *extra)

    got, want = run_both(build, [x], tmp_path)
    assert_close(got, want, what=f"{shape} {start}:{stop}:{step} axes {axes}")


@pytest.mark.parametrize("seed", range(8))
def test_slice_with_computed_bounds_matches_reference(seed, tmp_path):
    """start/stop/step as inputs: the output shape is known only when the kernel runs.

    The reference kernels decide: the CPU plugin reads a run-time stop of INT64_MAX as -1
    (it narrows the value to 32 bits), dropping the last element (a constant one is fine).
    """
    rng = random.Random(seed)
    shape, start, stop, step, axes = _slice_case(rng)
    x = values(np.random.default_rng(seed), shape, "f32")
    arrays = [x, np.array(start, np.int64), np.array(stop, np.int64), np.array(step, np.int64)]
    if axes is not None:
        arrays.append(np.array(axes, np.int64))
    model = one_op_model(lambda p, *q: opset8.slice(p, *q), arrays)
    got = run_saved(model, arrays, tmp_path)[0]
    what = f"{shape} {start}:{stop}:{step} axes {axes}"
    assert_close(got, evaluate_reference(model, arrays)[0], what=what)
    if not {I64_MAX, I64_MIN} & {*start, *stop}:
        assert_close(got, run_cpu(model, arrays)[0], what=what)


def test_slice_run_time_int64_max_in_the_cpu_plugin(tmp_path):
    """The plugin's deviation, pinned: a run-time stop of INT64_MAX loses the last element."""
    x = np.arange(4, dtype=np.float32)
    arrays = [x, np.array([1]), np.array([I64_MAX]), np.array([1])]
    model = one_op_model(lambda p, *q: opset8.slice(p, *q), arrays)
    assert run_saved(model, arrays, tmp_path)[0].tolist() == [1, 2, 3]
    assert evaluate_reference(model, arrays)[0].tolist() == [1, 2, 3]
    assert run_cpu(model, arrays)[0].tolist() in ([1, 2], [1, 2, 3])  # [1, 2] in 2026.4


def test_slice_by_hand(tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    got = run_saved(one_op_model(lambda p: opset8.slice(
        p, const([I64_MAX, 1]), const([I64_MIN, I64_MAX]), const([-1, 2]), const([-1, 1])),
        [x]), [x], tmp_path)[0]  # fmt: skip
    # Last axis reversed whole, axis 1 from 1 in steps of 2: rows 1 only.
    assert got.tolist() == [[[7, 6, 5, 4]], [[19, 18, 17, 16]]]
    got = run_saved(one_op_model(lambda p: opset8.slice(
        p, const([-1]), const([-10]), const([-1])), [x]), [x], tmp_path)[0]  # fmt: skip
    assert got.shape == (2, 3, 4) and got[0, 0, 0] == 12  # axis 0 reversed


BOUNDS = st.sampled_from([-12, -5, -3, -1, 0, 1, 2, 3, 5, 12, I64_MAX, I64_MIN, I64_MIN + 1])


@settings(max_examples=300, deadline=None)
@given(lo=st.integers(0, 12), width=st.one_of(st.none(), st.integers(0, 12)), start=BOUNDS,
       stop=BOUNDS, step=st.sampled_from([-3, -2, -1, 1, 2, 3]), d=st.integers(0, 40))  # fmt: skip
def test_slice_dim_holds_every_length(lo, width, start, stop, step, d):
    """The interval inferred for a dynamic dim holds the length of every size in it, and
    its ends are lengths that occur (it is the tightest interval)."""
    hi = None if width is None else lo + width
    assume(d >= lo and (hi is None or d <= hi))
    got = slice_dim(Interval(lo, hi), start, stop, step)
    length = slice_length(d, start, stop, step)
    assert dims_agree(got, length) and (
        got == length if isinstance(got, int) else got.contains(length)
    )
    if hi is not None and isinstance(got, Interval):
        lengths = {slice_length(v, start, stop, step) for v in range(lo, hi + 1)}
        assert (got.lo, got.hi) == (min(lengths), max(lengths))


SLICE_SHAPES = [
    ((Interval(2, 10),), [1], [I64_MAX], [1], None),
    ((Interval(0, None), 3), [0], [3], [1], None),
    ((Interval(5, None), 4), [-5], [-1], [1], [0]),
    ((Interval(5, None), 4), [1], [8], [3], [0]),
    ((Interval(0, 10), 4), [-1], [I64_MIN], [-1], [-2]),
    ((Interval(2, 10), 6), [8, 1], [1, -1], [-1, 2], [0, 1]),
    ((7, Interval(0, None)), [2], [-1], [1], [1]),
]


@pytest.mark.parametrize("case", SLICE_SHAPES, ids=str)
def test_slice_shapes_agree_with_openvino(case):
    shape, start, stop, step, axes = case
    p = opset1.parameter(to_ov_shape(shape), np.float32)
    extra = [] if axes is None else [const(axes)]
    node = opset8.slice(p, const(start), const(stop), const(step), *extra)
    want = from_ov_shape(node.get_output_partial_shape(0))
    infos = [TensorInfo(shape, ELEMENT_TYPES["f32"])] + [
        TensorInfo((len(v),), ELEMENT_TYPES["i64"], np.array(v, np.int64))
        for v in [start, stop, step] + ([] if axes is None else [axes])
    ]
    (got,) = resolve("Slice", "opset8").infer(None, infos)
    # irrun's interval holds exactly the lengths that occur; OpenVINO's may be wider.
    assert len(got.shape) == len(want)
    for g, w in zip(got.shape, want, strict=True):
        assert dims_agree(w, g), (got.shape, want)
        if isinstance(w, int):
            assert g == w


def test_slice_shape_errors():
    op = resolve("Slice", "opset8")
    f32, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]

    def vec(v):
        return TensorInfo((len(v),), i64, np.array(v, np.int64))

    x = TensorInfo((4, 5), f32)
    with pytest.raises(ShapeError, match="must not contain 0"):
        op.infer(None, [x, vec([0]), vec([3]), vec([0])])
    with pytest.raises(ShapeError, match=r"axes .* must be unique"):
        op.infer(None, [x, vec([0, 0]), vec([3, 3]), vec([1, 1]), vec([1, -1])])
    with pytest.raises(ShapeError, match="axes value 2 is out of range"):
        op.infer(None, [x, vec([0]), vec([3]), vec([1]), vec([2])])
    with pytest.raises(ShapeError, match="same length"):
        op.infer(None, [x, vec([0, 1]), vec([3]), vec([1])])
    with pytest.raises(ShapeError, match="input 1 is f32"):
        op.infer(None, [x, TensorInfo((1,), f32), vec([3]), vec([1])])
    unknown = TensorInfo((1,), i64)
    (out,) = op.infer(None, [x, unknown, unknown, unknown, vec([1])])
    assert out.shape == (4, Interval(0, 5))
    (out,) = op.infer(None, [x, unknown, unknown, unknown, unknown])
    assert out.shape == (Interval(0, 4), Interval(0, 5))


# --------------------------------------------------------------------------- SliceScatter


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from(list(DTYPES)),
       idx=st.sampled_from([np.int32, np.int64]))  # fmt: skip
def test_slice_scatter_matches_cpu(seed, dtype, idx, tmp_path_factory):
    """Constant bounds: the CPU plugin ignores run-time ones (test below)."""
    from openvino import opset15

    rng = random.Random(seed)
    shape, start, stop, step, axes = _slice_case(rng)
    clamp = (lambda v: max(min(v, 2**31 - 1), -(2**31))) if idx is np.int32 else (lambda v: v)
    start, stop = [clamp(v) for v in start], [clamp(v) for v in stop]
    gen = np.random.default_rng(seed)
    data = values(gen, shape, dtype)
    target = np.empty(shape)[_slice_index_of(shape, start, stop, step, axes)]
    assume(target.size > 0)  # an empty slice crashes the CPU plugin: tested by hand below
    updates = values(gen, target.shape, dtype)
    params = [np.array(v, idx) for v in (start, stop, step, *([] if axes is None else [axes]))]
    model = one_op_model(lambda d, u: opset15.slice_scatter(
        d, u, *[opset1.constant(p) for p in params], *[None] * (4 - len(params))),
        [data, updates])  # fmt: skip
    inputs = [data, updates]
    got = run_saved(model, inputs, tmp_path_factory.mktemp("s"))[0]
    assert_close(got, run_cpu(model, inputs)[0], what=f"{shape} {start}:{stop}:{step} {axes}")


def test_slice_scatter_with_run_time_bounds(tmp_path):
    """Bounds as inputs, by hand: the CPU plugin (2026.4) returns the data unchanged or
    crashes the process, so it is not run here."""
    from openvino import opset15

    bounds = [np.array([1]), np.array([I64_MAX]), np.array([2]), np.array([0])]
    updates = np.ones((2, 3), np.float32)
    got = run_saved(one_op_model(lambda d, u, *q: opset15.slice_scatter(d, u, *q),
                                 [np.zeros((4, 3), np.float32), updates, *bounds]),
                    [np.zeros((4, 3), np.float32), updates, *bounds], tmp_path)[0]  # fmt: skip
    assert got.tolist() == [[0, 0, 0], [1, 1, 1], [0, 0, 0], [1, 1, 1]]
    data, updates = np.zeros((4, 3), np.float32), np.ones((2, 3), np.float32)
    bounds = [np.array([1]), np.array([3]), np.array([1]), np.array([0])]
    model = one_op_model(lambda d, u, *q: opset15.slice_scatter(d, u, *q),
                         [data, updates, *bounds])  # fmt: skip
    got = run_saved(model, [data, updates, *bounds], tmp_path)[0]
    assert got.tolist() == [[0, 0, 0], [1, 1, 1], [1, 1, 1], [0, 0, 0]]


def _slice_index_of(shape, start, stop, step, axes):
    from irrun.ops.slicing import resolve_slice

    index = [slice(None)] * len(shape)
    for i, b, e, s in zip(range(len(start)) if axes is None else axes, start, stop, step,
                          strict=True):  # fmt: skip
        index[i] = resolve_slice(slice(b, e, s), shape[i])
    return tuple(index)


def test_slice_scatter_by_hand(tmp_path):
    from openvino import opset15

    data = np.arange(30, dtype=np.float32).reshape(5, 6)
    updates = -np.arange(1, 7, dtype=np.float32).reshape(2, 3)
    # Rows 4 and 2 (a negative step: updates[0] goes to row 4), columns 0, 2, 4.
    got = run_saved(one_op_model(lambda d, u: opset15.slice_scatter(
        d, u, const([-1, 0]), const([-5, 6]), const([-2, 2]), const([0, 1])), [data, updates]),
        [data, updates], tmp_path)[0]  # fmt: skip
    want = data.copy()
    want[4, [0, 2, 4]] = [-1, -2, -3]
    want[2, [0, 2, 4]] = [-4, -5, -6]
    np.testing.assert_array_equal(got, want)


def test_slice_scatter_of_an_empty_slice_copies_the_data(tmp_path):
    from openvino import opset15

    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run_saved(one_op_model(lambda d, u: opset15.slice_scatter(
        d, u, const([2]), const([1]), const([1]), const([1])),
        [data, np.zeros((2, 0), np.int32)]), [data, np.zeros((2, 0), np.int32)], tmp_path)[0]  # fmt: skip
    np.testing.assert_array_equal(got, data)


def test_slice_scatter_shapes_agree_with_openvino():
    from openvino import opset15

    f32, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]
    op = resolve("SliceScatter", "opset15")
    cases = [((5, 6), (2, 6), [1], [3], [1], [0]), ((Interval(0, None), 6), (2, Interval(1, 7)),
             [1], [3], [1], [0]), ((5, 6), (Interval(0, None), Interval(0, None)), [1], [3], [1],
             [0]), ((Interval(2, 9), 4), (Interval(0, None), 4), None, None, None, None)]  # fmt: skip
    for data, updates, start, stop, step, axes in cases:
        if start is None:
            params = [opset1.parameter([1], np.int64) for _ in range(3)]
            infos = [TensorInfo((1,), i64) for _ in range(3)]
        else:
            params = [const(v) for v in (start, stop, step, axes)]
            infos = [TensorInfo((len(v),), i64, np.array(v, np.int64))
                     for v in (start, stop, step, axes)]  # fmt: skip
        node = opset15.slice_scatter(opset1.parameter(to_ov_shape(data), np.float32),
                                     opset1.parameter(to_ov_shape(updates), np.float32),
                                     *params)  # fmt: skip
        (got,) = op.infer(None, [TensorInfo(data, f32), TensorInfo(updates, f32), *infos])
        assert got.shape == from_ov_shape(node.get_output_partial_shape(0))


def test_slice_scatter_shape_errors():
    from openvino import opset15

    op = resolve("SliceScatter", "opset15")
    f32, f16, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["f16"], ELEMENT_TYPES["i64"]

    def vec(v):
        return TensorInfo((len(v),), i64, np.array(v, np.int64))

    x = TensorInfo((5, 6), f32)
    slc = [vec([1]), vec([3]), vec([1]), vec([0])]
    for updates, message in (((3, 6), "must have the slice's shape"), ((2,), "slice's shape")):
        with pytest.raises(ShapeError, match=message):
            op.infer(None, [x, TensorInfo(updates, f32), *slc])
        with pytest.raises(Exception):  # noqa: B017 - OpenVINO refuses it too
            opset15.slice_scatter(opset1.parameter([5, 6], np.float32),
                                  opset1.parameter(list(updates), np.float32),
                                  const([1]), const([3]), const([1]), const([0]))  # fmt: skip
    with pytest.raises(ShapeError, match="must not contain 0"):
        op.infer(None, [x, TensorInfo((2, 6), f32), vec([1]), vec([3]), vec([0]), vec([0])])
    with pytest.raises(ShapeError, match="updates are f16 but data is f32"):
        op.infer(None, [x, TensorInfo((2, 6), f16), *slc])


def test_slice_scatter_updates_of_the_wrong_shape_at_run_time(tmp_path):
    from openvino import opset15

    arrays = [np.zeros((5, 6), np.float32), np.ones((3, 6), np.float32)]
    data = opset1.parameter([5, 6], np.float32, name="in0")
    upd = opset1.parameter(ov.PartialShape([-1, 6]), np.float32, name="in1")
    node = opset15.slice_scatter(data, upd, const([1]), const([3]), const([1]), const([0]))
    node.output(0).get_tensor().set_names({"out"})
    model = ov.Model([node.output(0)], [data, upd], "m")
    with pytest.raises(Exception, match=r"updates \[3, 6\] must have the slice's shape \[2, 6\]"):
        run_saved(model, arrays, tmp_path)


# --------------------------------------------------------------------------- element types

from openvino import opset15  # noqa: E402
from support.typed import Case, assert_not_taken  # noqa: E402

from irrun.ir.element_types import ANY  # noqa: E402

TYPE_CASES = {
    "Slice-8": Case(lambda x, b, e, s, a: opset8.slice(x, b, e, s, a), (3, 4), [3, 0], [-5, 9],
                    [-2, 3], [1, 0]),
    "Slice-8/positive": Case(lambda x, b, e, s: opset8.slice(x, b, e, s), (3, 4), [0, 1], [3, 3],
                             [2, 1]),
    "SliceScatter-15": Case(lambda x, u, b, e, s, a: opset15.slice_scatter(x, u, b, e, s, a),
                            (3, 4), (3, 2), [1], [3], [1], [1]),
    "SliceScatter-15/negative": Case(
        lambda x, u, b, e, s, a: opset15.slice_scatter(x, u, b, e, s, a), (3, 4), (2, 4), [-1],
        [-9], [-2], [-2]),
    "StridedSlice-1": Case(lambda x, b, e, s: opset1.strided_slice(x, b, e, s, [0, 1], [0, 0]),
                           (3, 4), [2, 0], [0, 3], [-1, 2]),
    "StridedSlice-1/positive": Case(
        lambda x, b, e, s: opset1.strided_slice(x, b, e, s, [0, 0, 0], [0, 0, 0], [0, 0, 1],
                                                [1, 0, 0]),
        (3, 4), [1, 0, 0], [2, 3, 0], [1, 2, 1]),
}  # fmt: skip


def _declared(op: str):
    type_, version = op.split("/")[0].split("-")
    return resolve(type_, f"opset{version}")


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("op", [op for op in TYPE_CASES if "/" not in op])
def test_every_data_type(op, t, tmp_path):
    """Data (and SliceScatter's updates) of every element type, strings and packed types
    included, as OpenVINO moves them (support.typed)."""
    TYPE_CASES[op].check_data_type(t, tmp_path)


INDEX_CASES = [(op, t) for op, case in TYPE_CASES.items() for t in case.index_types(_declared(op))]


@pytest.mark.parametrize(("op", "t"), INDEX_CASES)
def test_every_index_type(op, t, tmp_path):
    TYPE_CASES[op].check_index_type(t, tmp_path, data_type="f32")


def test_index_cases_cover_the_declared_types():
    for op in TYPE_CASES:
        label = _declared(op).label
        swept = {t for o, t in INDEX_CASES if _declared(o).label == label}
        assert swept >= set(_declared(op).port_types(2)) - {"u1"}, (label, swept)


REFUSED = [("Slice-8", 1, "f32"), ("Slice-8", 4, "boolean"), ("SliceScatter-15", 3, "f16"),
           ("SliceScatter-15", 5, "string"), ("StridedSlice-1", 1, "f32"),
           ("StridedSlice-1", 3, "f32")]


@pytest.mark.parametrize(("op", "port", "t"), REFUSED)
def test_a_type_not_taken_is_a_validate_error(op, port, t, tmp_path):
    errors = TYPE_CASES[op].refused(port, t, tmp_path)
    label = _declared(op).label
    assert_not_taken(errors, port, t, label)


def test_slice_scatter_takes_updates_of_the_data_type():
    f32, f16, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["f16"], ELEMENT_TYPES["i64"]
    q = TensorInfo((1,), i64, np.array([0]))
    with pytest.raises(ShapeError, match="updates are f16 but data is f32"):
        resolve("SliceScatter", "opset15").infer(None, [TensorInfo((2,), f32),
                                                        TensorInfo((2,), f16), q, q, q])  # fmt: skip
