"""Slice, Range, Tile, Roll, OneHot and NonZero against OpenVINO, by hand, and end to end.

Differential sweeps run one-op models in irrun and in the CPU plugin (and OpenVINO's
reference kernels where the two differ); shape rules are compared with OpenVINO's shape
inference on the same partial shapes; NonZero's data-dependent count is followed through
propagation, validation, the memory plan and downstream ops.
"""

from __future__ import annotations

import importlib
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import irrun
from irrun.core.budget import _info_bytes
from irrun.ir.dims import Interval, dims_agree
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops.creation import range_count
from irrun.ops.slicing import slice_dim, slice_length

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset7, opset8, opset12, opset16  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "boolean": np.bool_}  # fmt: skip


def values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    if dtype == "boolean":
        return rng.random(shape) < 0.5
    if dtype in ("f32", "f16"):
        return rng.standard_normal(shape).astype(DTYPES[dtype])
    low = 0 if dtype == "u8" else -50
    return rng.integers(low, 100, shape).astype(DTYPES[dtype])


def const(v, dtype=np.int64):
    return opset1.constant(np.array(v, dtype))


def reference(model, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """OpenVINO's reference kernels (``Model.evaluate``), scalars included."""
    tensors = []
    for x in inputs:
        t = ov.Tensor(ov.Type(x.dtype), ov.Shape(list(x.shape)))
        if x.size:
            t.data[...] = x
        tensors.append(t)
    outs = [ov.Tensor(o.get_element_type(), [0]) for o in model.outputs]
    model.evaluate(outs, tensors)
    return [np.array(t.data, copy=True).reshape(tuple(t.shape)) for t in outs]


# --------------------------------------------------------------------------- versions

# op -> the opset whose version opsetN holds, per OpenVINO's C++ opset tables.  Python's
# opset4..11 modules re-export Range from opset1, but the C++ opset4 holds Range-v4 (an IR
# with version="opset4" and output_type reads, test_range_versions_in_openvino).
VERSIONS = {
    "Slice": {n: 8 for n in range(8, 17)},
    "Range": {n: (1 if n < 4 else 4) for n in range(1, 17)},
    "Tile": {n: 1 for n in range(1, 17)},
    "Roll": {n: 7 for n in range(7, 17)},
    "OneHot": {n: (1 if n < 16 else 16) for n in range(1, 17)},
    "NonZero": {n: 3 for n in range(3, 17)},
}
FACTORIES = {"Slice": "slice", "Tile": "tile", "Roll": "roll", "OneHot": "one_hot",
             "NonZero": "non_zero"}  # fmt: skip


@pytest.mark.parametrize("op_type", sorted(VERSIONS))
def test_versions_for_every_opset(op_type):
    for n in range(1, 17):
        want = VERSIONS[op_type].get(n)
        if want is None:
            with pytest.raises(LookupError):
                resolve(op_type, f"opset{n}")
        else:
            assert resolve(op_type, f"opset{n}").since_opset == want, (op_type, n)
        if op_type in FACTORIES:  # Python's factories agree
            factory = getattr(importlib.import_module(f"openvino.opset{n}"), FACTORIES[op_type],
                              None)  # fmt: skip
            got = None if factory is None else int(factory.__module__.split(".")[-2][5:])
            assert got == want, (op_type, n)


def test_range_versions_in_openvino(tmp_path):
    model = ov.Model([opset12.range(const(0), const(5), const(2), "i32")], [], "r")
    path = tmp_path / "r.xml"
    ov.save_model(model, path)
    text = path.read_text()
    assert 'version="opset4"' in text and 'output_type="i32"' in text
    read = ov.Core().read_model(path)
    assert [op.get_type_info().version_id for op in read.get_ordered_ops()
            if op.get_type_name() == "Range"] == ["opset4"]  # fmt: skip
    model = irrun.load(path)
    assert model.run({})[model.outputs[0].name].tolist() == [0, 2, 4]


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
    assert_close(got, reference(model, arrays)[0], what=what)
    if not {I64_MAX, I64_MIN} & {*start, *stop}:
        assert_close(got, run_cpu(model, arrays)[0], what=what)


def test_slice_run_time_int64_max_in_the_cpu_plugin(tmp_path):
    """The plugin's deviation, pinned: a run-time stop of INT64_MAX loses the last element."""
    x = np.arange(4, dtype=np.float32)
    arrays = [x, np.array([1]), np.array([I64_MAX]), np.array([1])]
    model = one_op_model(lambda p, *q: opset8.slice(p, *q), arrays)
    assert run_saved(model, arrays, tmp_path)[0].tolist() == [1, 2, 3]
    assert reference(model, arrays)[0].tolist() == [1, 2, 3]
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


# --------------------------------------------------------------------------- Range


def test_range_count_by_hand():
    assert range_count(0, 10, 3, True) == 4  # 0 3 6 9
    assert range_count(10, 0, -3, True) == 4  # 10 7 4 1
    assert range_count(0, 10, -1, True) == 0  # the step points away
    assert range_count(0.5, 3.2, 0.7, True) == 0  # the step truncates to 0
    assert range_count(0.5, 3.2, 0.7, False) == 4
    assert range_count(-2.9, 7.9, 1.9, True) == 9  # -2 .. 6


RANGE_CASES = [
    (0, 10, 3), (10, 0, -3), (0, 10, -1), (-5, 5, 2), (7, -3, -3), (3, 3, 1), (0, 1, 5),
    (0.5, 3.2, 0.7), (3, -2, -0.6), (0.1, 1.0, 0.1), (2.9, 7.9, 1.9), (-2.9, 7.9, 1.9),
    (1, 1e3, 97.5),
]  # fmt: skip


@pytest.mark.parametrize("case", RANGE_CASES, ids=str)
@pytest.mark.parametrize("out", ["f32", "f16", "i32", "i64", "u8"])
def test_range4_matches_reference(case, out, tmp_path):
    """Range-v4 with f32 inputs: the reference kernels (what constant folding gives)."""
    inputs = [np.array(v, np.float32) for v in case]
    model = one_op_model(lambda a, b, c: opset12.range(a, b, c, out), inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    want = reference(model, inputs)[0]
    assert_close(got, want, what=f"{case} -> {out}")
    # The CPU plugin differs where its inputs are fractions and the output integers (it
    # rounds values to nearest, see the module docstring of irrun.ops.creation), where the
    # step points away from stop (it makes |stop - start| / |step| values anyway) and where
    # u8 values would be negative (it saturates them to 0; the reference wraps).
    whole = all(float(v).is_integer() for v in case) or out in ("f32", "f16")
    away = (case[2] > 0) != (case[1] > case[0])
    if whole and not away and not (out == "u8" and min(case[0], case[1]) < 0):
        # Float values may differ from the reference in the last place (f32: one unit is
        # 1.2e-7 relative; f16 rounds from f32 in both, but the plugin's f32 differs).
        cpu = run_cpu(model, inputs)[0]
        assert_close(got, cpu, rtol=2.4e-7 if out == "f32" else 1e-3, what="cpu")


@pytest.mark.parametrize("dtype", ["f32", "i32", "i64"])
@pytest.mark.parametrize("case", [(0, 10, 3), (10, 0, -3), (-5, 5, 2), (0, 0, 1), (1, 9, 20)],
                         ids=str)  # fmt: skip
def test_range1_matches_cpu(dtype, case, tmp_path):
    inputs = [np.array(v, DTYPES[dtype]) for v in case]
    got, want = run_both(lambda a, b, c: opset1.range(a, b, c), inputs, tmp_path)
    assert_close(got, want, what=str(case))


@pytest.mark.parametrize("out", ["f32", "i32", "i64", "u8", "f16"])
@pytest.mark.parametrize(
    "types", [("i32", "i64", "f32"), ("u8", "i32", "i64"), ("f16", "f32", "i32")], ids=str
)
def test_range4_mixed_types_match_cpu(types, out, tmp_path):
    inputs = [np.array(v, DTYPES[t]) for v, t in zip((2, 19, 3), types, strict=True)]
    got, want = run_both(lambda a, b, c: opset12.range(a, b, c, out), inputs, tmp_path)
    assert_close(got, want, what=f"{types} -> {out}")


@pytest.mark.parametrize("case", [(0.5, 3.2, 0.7), (3, -2, -0.6), (0.1, 1.0, 0.1)], ids=str)
def test_range1_f16_matches_cpu(case, tmp_path):
    """The reference kernels cannot evaluate f16 Range-v0; the plugin computes in f32 in
    another order: one f16 unit (2^-10 relative) apart at most."""
    inputs = [np.array(v, np.float16) for v in case]
    got, want = run_both(lambda a, b, c: opset1.range(a, b, c), inputs, tmp_path)
    assert_close(got, want, rtol=2**-10, what=str(case))


def test_range_plugin_deviations(tmp_path):
    """Pinned: the CPU plugin's Range-v4 where it leaves the reference kernels."""
    f32 = np.float32

    def both(case, out):
        inputs = [np.array(v, f32) for v in case]
        model = one_op_model(lambda a, b, c: opset12.range(a, b, c, out), inputs)
        return run_saved(model, inputs, tmp_path)[0].tolist(), run_cpu(model, inputs)[0]

    got, cpu = both((2.9, 7.9, 1.9), "i64")
    assert got == [2, 3, 4, 5, 6] and cpu.tolist() in ([3, 5, 7], got)
    got, cpu = both((0, 10, -1), "i32")
    assert got == [] and cpu.shape in ((10,), (0,))
    got, cpu = both((-3, 2, 2), "u8")
    assert got == [253, 255, 1] and cpu.tolist() in ([0, 0, 1], got)
    inputs = [np.array(v, f32) for v in (1e8, 1e8 + 10, 1)]
    model = one_op_model(lambda a, b, c: opset12.range(a, b, c, "f32"), inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    assert_close(got, reference(model, inputs)[0])  # 1e8 + i, rounded to f32 each
    assert got[-1] == np.float32(1e8 + 8) and run_cpu(model, inputs)[0][-1] in (1e8, got[-1])


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_range1_pointing_away_is_empty(dtype, tmp_path):
    inputs = [np.array(v, DTYPES[dtype]) for v in (0, 10, -1)]
    model = one_op_model(lambda a, b, c: opset1.range(a, b, c), inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    assert got.shape == (0,) and reference(model, inputs)[0].shape == (0,)
    assert run_cpu(model, inputs)[0].shape in ((0,), (10,))  # the plugin: 10 values


def test_range_by_hand(tmp_path):
    i32, f32 = np.int32, np.float32
    inputs = [np.array(1, i32), np.array(2.5, f32), np.array(1, np.int64)]
    model = one_op_model(lambda a, b, c: opset12.range(a, b, c, "f32"), inputs)
    assert run_saved(model, inputs, tmp_path)[0].tolist() == [1.0, 2.0]  # mixed types
    inputs = [np.array(-2.9, f32), np.array(1.5, f32), np.array(1.9, f32)]
    model = one_op_model(lambda a, b, c: opset12.range(a, b, c, "u8"), inputs)
    # Truncated to -2, 1, 1: three values, -2 and -1 wrapping into u8.
    assert run_saved(model, inputs, tmp_path)[0].tolist() == [254, 255, 0]


def test_range_shapes():
    r0, r4 = resolve("Range", "opset1"), resolve("Range", "opset4")
    f32, i32 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"]

    def c(v, et=f32):
        return TensorInfo((), et, np.array(v, et.dtype))

    (out,) = r0.infer(None, [c(0), c(1), c(0.1)])
    assert out.shape == (10,) and out.element_type is f32
    a4 = type("A", (), {"output_type": i32})()
    (out,) = r4.infer(a4, [c(0.5), c(10.9), c(2.5)])
    assert out.shape == (5,) and out.element_type is i32  # 0 2 4 6 8
    (out,) = r4.infer(a4, [c(0.5), TensorInfo((), f32), c(2.5)])
    assert out.shape == (Interval(0, None),)
    with pytest.raises(ShapeError, match="one element type"):
        r0.infer(None, [c(0), c(1, i32), c(1)])
    with pytest.raises(ShapeError, match="'step' must not be 0"):
        r0.infer(None, [c(0), c(1), c(0)])
    with pytest.raises(ShapeError, match="must be a scalar"):
        r0.infer(None, [TensorInfo((1,), f32), c(1), c(1)])
    with pytest.raises(ShapeError, match="must be finite"):
        r0.infer(None, [c(0), c(np.inf), c(1)])


# --------------------------------------------------------------------------- Tile


TILE_CASES = [((2, 3), [2, 1]), ((2, 3), [3]), ((2, 3), [2, 1, 2]), ((4,), [0]),
              ((1, 2, 1, 3), [1, 2, 3, 1]), ((0, 2), [3, 2]), ((), [2, 3]), ((2, 3), [1, 1])]  # fmt: skip


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", TILE_CASES, ids=str)
def test_tile_matches_cpu(case, dtype, tmp_path):
    shape, reps = case
    x = values(np.random.default_rng(len(reps)), shape, dtype)
    got, want = run_both(lambda p: opset1.tile(p, const(reps)), [x], tmp_path)
    assert_close(got, want, what=str(case))


def test_tile_shapes():
    op = resolve("Tile", "opset1")
    f32, i64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]
    reps = TensorInfo((2,), i64, np.array([2, 3]))
    (out,) = op.infer(None, [TensorInfo((Interval(1, 3), Interval(0, None)), f32), reps])
    assert out.shape == (Interval(2, 6), Interval(0, None))
    (out,) = op.infer(None, [TensorInfo((2, 3), f32), TensorInfo((2,), i64,
                                                                   np.array([2, -1]))])  # fmt: skip
    assert out.shape == (4, 0)  # as OpenVINO's shape inference: a negative repeat is 0
    (out,) = op.infer(None, [TensorInfo((2, 5), f32), TensorInfo((3,), i64)])
    assert out.shape == (Interval(0, None),) * 3
    p = opset1.parameter(to_ov_shape((Interval(1, 3), Interval(0, None))), np.float32)
    want = opset1.tile(p, const([2, 3])).get_output_partial_shape(0)
    assert from_ov_shape(want) == (Interval(2, 6), Interval(0, None))


# --------------------------------------------------------------------------- Roll


ROLL_CASES = [((5,), 2, [0]), ((3, 4), [1, -2], [0, 1]), ((3, 4), 7, [1]), ((3, 4), 7, 0),
              ((2, 3, 4), [1, 2], [-1, -1]), ((2, 3, 4), -5, [1]), ((4, 0), 3, [1]),
              ((2, 3), 0, [0])]  # fmt: skip


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", ROLL_CASES, ids=str)
def test_roll_matches_cpu(case, dtype, tmp_path):
    shape, shift, axes = case
    x = values(np.random.default_rng(len(shape)), shape, dtype)
    got, want = run_both(lambda p: opset7.roll(p, const(shift), const(axes)), [x], tmp_path)
    assert_close(got, want, what=str(case))


def test_roll_by_hand(tmp_path):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = run_saved(one_op_model(lambda p: opset7.roll(p, const([1, 1], np.int32),
                                                       const([1, 1], np.int32)), [x]),
                    [x], tmp_path)[0]  # fmt: skip
    assert got.tolist() == [[1, 2, 0], [4, 5, 3]]  # a repeated axis adds its shifts
    op = resolve("Roll", "opset7")
    i64 = ELEMENT_TYPES["i64"]
    with pytest.raises(ShapeError, match="axes must be one of the same size"):
        op.infer(None, [TensorInfo((2, 3), i64), TensorInfo((2,), i64), TensorInfo((3,), i64)])
    with pytest.raises(ShapeError, match="axes must be one of the same size"):
        op.infer(None, [TensorInfo((2, 3), i64), TensorInfo((1,), i64), TensorInfo((), i64)])
    # A scalar shift over two axes passes OpenVINO's shape inference, not its kernels.
    op.infer(None, [TensorInfo((2, 3), i64), TensorInfo((), i64), TensorInfo((2,), i64)])

    def build(p):
        return opset7.roll(p, const(1), const([0, 1]))

    with pytest.raises(RuntimeError, match="dimensions mismatch"):
        run_cpu(one_op_model(build, [x]), [x])
    with pytest.raises(irrun.IrrunError, match="one value per axis"):
        run_saved(one_op_model(build, [x]), [x], tmp_path)
    with pytest.raises(ShapeError, match="axes value 2 is out of range"):
        op.infer(None, [TensorInfo((2, 3), i64), TensorInfo((), i64),
                        TensorInfo((1,), i64, np.array([2]))])  # fmt: skip


# --------------------------------------------------------------------------- OneHot


ONE_HOT = [(-1, None), (0, None), (1, None), (-2, None), (1, "ignore_negative"),
           (-1, "normalize"), (0, "normalize")]  # fmt: skip


@pytest.mark.parametrize(("axis", "mode"), ONE_HOT)
@pytest.mark.parametrize("idx_type", ["i32", "i64"])
@pytest.mark.parametrize("out", ["f32", "f16", "i32", "i64", "u8", "boolean"])
def test_one_hot_matches_cpu(axis, mode, idx_type, out, tmp_path):
    idx = np.array([[0, -1, 2, 4], [3, -3, -4, 1]], DTYPES[idx_type])
    on, off = (True, False) if out == "boolean" else (5, 2)

    def build(p):
        on_c, off_c = const(on, DTYPES[out]), const(off, DTYPES[out])
        if mode is None:
            return opset1.one_hot(p, const(4, DTYPES[idx_type]), on_c, off_c, axis)
        return opset16.one_hot(p, const(4, DTYPES[idx_type]), on_c, off_c, axis, mode)

    got, want = run_both(build, [idx], tmp_path)
    assert_close(got, want, what=f"axis {axis} {mode}")


def test_one_hot_by_hand(tmp_path):
    idx = np.array([1, -1, 5], np.int64)

    def run(mode):
        def build(p):
            on, off = const(9.0, np.float32), const(0.0, np.float32)
            return opset16.one_hot(p, const(3), on, off, 0, mode)

        return run_saved(one_op_model(build, [idx]), [idx], tmp_path)[0].tolist()

    assert run("ignore_negative") == [[0, 0, 0], [9, 0, 0], [0, 0, 0]]
    assert run("normalize") == [[0, 0, 0], [9, 0, 0], [0, 9, 0]]  # -1 is index 2
    op = resolve("OneHot", "opset1")
    a = type("A", (), {"axis": 3})()
    i64, f32 = ELEMENT_TYPES["i64"], ELEMENT_TYPES["f32"]
    scalars = [TensorInfo((), i64, np.array(4)), TensorInfo((), f32), TensorInfo((), f32)]
    with pytest.raises(ShapeError, match="axis 3 is out of range for rank 3"):
        op.infer(a, [TensorInfo((2, 3), i64), *scalars])
    a.axis = -1
    (out,) = op.infer(a, [TensorInfo((Interval(1, 4), 3), i64), *scalars])
    assert out.shape == (Interval(1, 4), 3, 4) and out.element_type is f32
    with pytest.raises(ShapeError, match="depth must not be negative"):
        op.infer(a, [TensorInfo((2,), i64), TensorInfo((), i64, np.array(-1)), *scalars[1:]])


# --------------------------------------------------------------------------- NonZero


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0, 3), (2, 1, 1, 5)], ids=str)
@pytest.mark.parametrize("out", ["i32", "i64"])
def test_non_zero_matches_cpu(shape, dtype, out, tmp_path):
    rng = np.random.default_rng(len(shape))
    x = values(rng, shape, dtype) * (rng.random(shape) < 0.5).astype(DTYPES[dtype])
    got, want = run_both(lambda p: opset3.non_zero(p, out), [x], tmp_path)
    assert_close(got, want, what=str(shape))


def test_non_zero_by_hand(tmp_path):
    x = np.array([[0.0, np.nan, -0.0], [1.0, 0.0, 2.0]], np.float32)
    got = run_saved(one_op_model(lambda p: opset3.non_zero(p), [x]), [x], tmp_path)[0]
    assert got.tolist() == [[0, 1, 1], [1, 0, 2]]  # NaN counts, -0.0 does not
    for v, want in ((2.0, (1, 1)), (0.0, (1, 0))):  # a scalar, as the CPU plugin lists it
        s = np.array(v, np.float32)
        got = run_saved(one_op_model(lambda p: opset3.non_zero(p, "i32"), [s]), [s], tmp_path)
        cpu = run_cpu(one_op_model(lambda p: opset3.non_zero(p, "i32"), [s]), [s])
        assert got[0].shape == want and cpu[0].shape == want


@pytest.mark.parametrize("shape", [(2, 3), (Interval(1, 4), 3), (Interval(0, None), 3), (),
                                   None, (0, 5)], ids=str)  # fmt: skip
def test_non_zero_shapes(shape):
    op = resolve("NonZero", "opset3")
    a = type("A", (), {"output_type": ELEMENT_TYPES["i32"]})()
    (out,) = op.infer(a, [TensorInfo(shape, ELEMENT_TYPES["f32"])])
    want = from_ov_shape(opset3.non_zero(opset1.parameter(to_ov_shape(shape), np.float32))
                         .get_output_partial_shape(0))  # fmt: skip
    assert out.element_type.name == "i32"
    if shape == ():  # OpenVINO says [?,?]; the run gives [1, 0 or 1]
        assert out.shape == (1, Interval(0, 1))
    else:
        assert out.shape == want


# --------------------------------------------------------------------------- end to end


def _non_zero_model(path: Path, shape=(3, 4)) -> None:
    """x -> NonZero -> (row * 4 + col) -> Gather of flat x -> Reshape [1,-1]; and
    NonZero -> Transpose, the coordinates as rows."""
    p = opset1.parameter(list(shape), np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    nz = opset3.non_zero(p, "i64")
    rows = opset8.gather(nz, const(0), const(0))
    cols = opset8.gather(nz, const(1), const(0))
    linear = opset1.add(opset1.multiply(rows, const(shape[1])), cols)
    flat = opset1.reshape(p, const([-1]), False)
    picked = opset8.gather(flat, linear, const(0))
    out = opset1.reshape(picked, const([1, -1]), False)
    out.output(0).get_tensor().set_names({"picked"})
    coords = opset1.transpose(nz, const([1, 0]))
    coords.output(0).get_tensor().set_names({"coords"})
    count = opset3.shape_of(coords)
    count.output(0).get_tensor().set_names({"count"})
    ov.save_model(ov.Model([out, coords, count], [p], "nz"), path, compress_to_fp16=False)


def test_non_zero_end_to_end(tmp_path):
    path = tmp_path / "nz.xml"
    _non_zero_model(path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    model = irrun.load(path)
    shapes = {o.name: o.shape for o in model.outputs}
    assert shapes["coords"] == (Interval(0, 12), 2)
    compiled = ov.Core().compile_model(path, "CPU")
    for x in (
        np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], np.float32),
        np.zeros((3, 4), np.float32),
        np.ones((3, 4), np.float32),
    ):
        got = model.run({"x": x})
        want = compiled([x])
        for name in ("picked", "coords", "count"):
            assert_close(got[name], np.asarray(want[name]), what=name)
    assert model.run({"x": np.eye(3, 4, dtype=np.float32)})["picked"].tolist() == [[1, 1, 1]]


def test_non_zero_memory_plan_uses_the_bound(tmp_path):
    """The plan counts NonZero's output at its bound: 2 x 4096 i64 = 64 KiB."""
    path = tmp_path / "nz.xml"
    _non_zero_model(path, (64, 64))
    x = np.zeros((64, 64), np.float32)
    x[3, 5] = 1
    assert irrun.load(path, max_memory="1M").run({"x": x})["picked"].tolist() == [[1.0]]
    # The plan holds the bounds of the NonZero, of its rows and columns and more at once.
    with pytest.raises(irrun.IrrunError, match=r"the run needs .* its output i64\[0\.\.4096\]"):
        irrun.load(path, max_memory="40K").run({"x": x})
    warnings = [d for d in irrun.validate(path, max_memory="40K") if d.code == "over-budget"]
    assert any("up to 64.0 KiB" in d.message for d in warnings), warnings


def test_memory_plan_sizes_of_dynamic_dims():
    i64 = ELEMENT_TYPES["i64"]
    assert _info_bytes(TensorInfo((2, Interval(0, 12)), i64)) == 2 * 12 * 8  # at its bound
    assert _info_bytes(TensorInfo((2, Interval(0, None)), i64)) is None  # no bound: unknown
    assert _info_bytes(TensorInfo(None, i64)) is None


def test_non_zero_with_dynamic_input(tmp_path):
    """A dynamic input: every dim after NonZero is unknown, and runs still work."""
    p = opset1.parameter(ov.PartialShape([-1, 3]), np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    nz = opset3.non_zero(p)
    nz.output(0).get_tensor().set_names({"nz"})
    path = tmp_path / "d.xml"
    ov.save_model(ov.Model([nz], [p]), path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    model = irrun.load(path, max_memory="1M")
    assert model.outputs[0].shape == (2, Interval(0, None))
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    assert model.run({"x": x})["nz"].tolist() == [[0, 1, 1], [1, 0, 2]]


# --------------------------------------------------------------------------- validate


def _layer_with(tmp_path, build, inputs, old: str, new: str) -> Path:
    path = tmp_path / "bad.xml"
    ov.save_model(one_op_model(build, inputs), path)
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))
    return path


X26 = np.zeros((2, 6), np.float32)
IDX = np.zeros((2, 6), np.int64)
VALIDATE_CASES = {
    "OneHot-axis": (lambda p: opset1.one_hot(p, const(3), const(1.0, np.float32),
                                             const(0.0, np.float32), 1), IDX,
                    'axis="1"', 'axis="5"', "shape-error", "axis 5 is out of range"),
    "OneHot-mode": (lambda p: opset16.one_hot(p, const(3), const(1.0, np.float32),
                                              const(0.0, np.float32), 1, "normalize"), IDX,
                    'negative_indices_mode="normalize"', 'negative_indices_mode="wrap"',
                    "bad-attribute", "ignore_negative, normalize"),
    "NonZero-type": (lambda p: opset3.non_zero(p), X26, 'output_type="i64"',
                     'output_type="f32"', "bad-attribute", "output_type must be i32 or i64"),
    "NonZero-dim": (lambda p: opset3.non_zero(p), X26, "<dim>2</dim>\n\t\t\t\t\t<dim>-1</dim>",
                    "<dim>2</dim>\n\t\t\t\t\t<dim>13</dim>", "shape-mismatch",
                    "declared [2,13], inferred [2,0..12]"),
    "Tile-dim": (lambda p: opset1.tile(p, const([2, 1])), X26, "<dim>4</dim>", "<dim>5</dim>",
                 "shape-mismatch", "declared [5,6], inferred [4,6]"),
    "Slice-dim": (lambda p: opset8.slice(p, const([1]), const([I64_MAX]), const([2]),
                                         const([-1])), X26,
                  "<dim>2</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
                  "<dim>2</dim>\n\t\t\t\t\t<dim>4</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
                  "shape-mismatch", "declared [2,4], inferred [2,3]"),
    "Range-type": (lambda p: opset12.range(const(0), const(4), const(1), "i32"), X26,
                   'output_type="i32"', 'output_type="boolean"', "bad-attribute",
                   "output_type must be a numeric type"),
    "Roll-dim": (lambda p: opset7.roll(p, const([1]), const([1])), X26,
                 'names="out">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>6</dim>',
                 'names="out">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>7</dim>', "shape-mismatch",
                 "declared [2,7], inferred [2,6]"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(VALIDATE_CASES))
def test_validate_findings(case, tmp_path):
    build, x, old, new, code, says = VALIDATE_CASES[case]
    path = _layer_with(tmp_path, build, [x], old, new)
    found = [d for d in irrun.validate(path) if d.level == "error"]
    layer = f"({case.split('-')[0]}-v"  # the op's layer, as "(Roll-v7)" names it
    assert any(d.code == code and says in d.message and layer in str(d) for d in found), found


RUNTIME_CASES = {
    "Tile": (lambda p, q: opset1.tile(p, q), [np.array([2, 3, 1])]),
    "Roll": (lambda p, q, r: opset7.roll(p, q, r), [np.array([2, -1]), np.array([0, -1])]),
    "OneHot": (lambda p, q: opset1.one_hot(opset1.convert(p, "i64"), q, const(1.0, np.float32),
                                           const(0.0, np.float32), 0), [np.array(5)]),
    "Slice": (lambda p, q: opset8.slice(p, q, const([9]), const([1]), const([1])),
              [np.array([1])]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RUNTIME_CASES))
def test_shape_inputs_known_only_at_run_time_match_cpu(case, tmp_path):
    """Repeats, shifts, depth and bounds as model inputs: shapes unknown before the run."""
    build, extra = RUNTIME_CASES[case]
    x = np.arange(12, dtype=np.float32).reshape(3, 4) % 5
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, [x, *extra]), path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    got, want = run_both(build, [x, *extra], tmp_path)
    assert_close(got, want, what=case)


# --------------------------------------------------------------------------- folding


def test_shape_inputs_fold_to_static_shapes(tmp_path):
    """Range, Slice and Tile fed by ShapeOf -> Gather of a static input stay static."""
    p = opset1.parameter([2, 5], np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    width = opset8.gather(opset3.shape_of(p), const(1), const(0))
    steps = opset12.range(const(0), width, const(2), "i32")  # 0 2 4
    steps.output(0).get_tensor().set_names({"steps"})
    ends = opset1.unsqueeze(opset1.subtract(width, const(1)), const(0))
    cut = opset8.slice(p, const([1]), ends, const([1]), const([1]))  # columns 1..3
    cut.output(0).get_tensor().set_names({"cut"})
    tiled = opset1.tile(p, opset1.concat([const([1]), opset1.unsqueeze(width, const(0))], 0))
    tiled.output(0).get_tensor().set_names({"tiled"})
    nz = opset3.non_zero(const([[0, 1, 0], [2, 0, 3]], np.float32))
    nz.output(0).get_tensor().set_names({"nz"})
    path = tmp_path / "fold.xml"
    ov.save_model(ov.Model([steps, cut, tiled, nz], [p]), path)
    text = path.read_text()
    assert all(f'type="{t}"' in text for t in ("Range", "Slice", "Tile", "NonZero", "ShapeOf"))
    assert irrun.validate(path) == []
    model = irrun.load(path)
    shapes = {o.name: o.shape for o in model.outputs}
    assert shapes == {"steps": (3,), "cut": (2, 3), "tiled": (2, 25), "nz": (2, 3)}
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = model.run({"x": x})
    want = ov.Core().compile_model(path, "CPU")([x])
    for name in shapes:
        assert_close(got[name], np.asarray(want[name]), what=name)
