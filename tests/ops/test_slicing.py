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
