"""Reductions (ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL1,
ReduceL2, ReduceLogicalAnd, ReduceLogicalOr) and CumSum.

Differential sweeps: one-op models built with OpenVINO's Python API, saved as IR,
run by irrun and by the CPU plugin (f32, one thread), from seeded generators over
shapes (dims 0 and 1 included), axes (negative, repeated, scalar, i32 or i64),
keep_dims and element types.  Expected values come from OpenVINO or by hand.

Tolerances, and why (u = 2**-24, f32's unit roundoff; n terms per output):

* exact: integers, booleans, ReduceMax, ReduceMin.
* Sum, L1, CumSum: |irrun - plugin| <= 2 (n - 1) u sum(|x|) per output, twice the
  bound of any order of n - 1 f32 additions: the plugin adds in its vector order,
  NumPy pairwise.  Mean: that over n, plus 2u relative for the division.
* Prod: 2 n u relative (each product rounds once); L2: 2 (n + 1) u relative (the
  sum of squares' bound, halved by the square root, plus its rounding).
* f16: both reduce in f32 and round once to f16, so results one f16 ulp apart
  are allowed as well: 2**-10 relative (and 2**-24 absolute for subnormals).

Where the plugin differs from OpenVINO's reference kernels and irrun follows the
reference, the sweeps stay out of the way and hand-checked cases below pin the
difference: integer overflow (the plugin reduces i32 in f32 and saturates 8-bit
partial sums; irrun wraps, so the sweeps keep every partial result in range), i64 beyond 32 bits (the plugin runs i64 as i32), NaN in
ReduceMax/Min, and ReduceMin of an empty f32 slice (+inf, not 3.4e38).  An empty
axes list reduces nothing; the plugin refuses some such models (ReduceMax, ReduceMin,
ReduceL1 of i8...), so those cases are checked against the input itself.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve
from irrun.ops.reduction import cumsum

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset4  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    assert_versions_follow_factories,
    one_op_model,
    run_both,
    run_reference,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

U = 2.0**-24
F16_RTOL = 2.0**-10

REDUCE = {
    "ReduceSum": opset1.reduce_sum, "ReduceMean": opset1.reduce_mean,
    "ReduceProd": opset1.reduce_prod, "ReduceMax": opset1.reduce_max,
    "ReduceMin": opset1.reduce_min, "ReduceL1": opset4.reduce_l1, "ReduceL2": opset4.reduce_l2,
    "ReduceLogicalAnd": opset1.reduce_logical_and, "ReduceLogicalOr": opset1.reduce_logical_or,
}  # fmt: skip
FACTORIES = {
    "ReduceSum": "reduce_sum", "ReduceMean": "reduce_mean", "ReduceProd": "reduce_prod",
    "ReduceMax": "reduce_max", "ReduceMin": "reduce_min", "ReduceL1": "reduce_l1",
    "ReduceL2": "reduce_l2", "ReduceLogicalAnd": "reduce_logical_and",
    "ReduceLogicalOr": "reduce_logical_or", "CumSum": "cumsum",
}  # fmt: skip
NUMBER_TYPES = ("f32", "f16", "i32", "i64", "i8", "u8")
LOGICAL = ("ReduceLogicalAnd", "ReduceLogicalOr")


def _dtype(et: str) -> np.dtype:
    return ELEMENT_TYPES[et].dtype


def axes_const(axes: list[int], scalar: bool = False, et=np.int64):
    """OpenVINO's Constant of ``axes`` (the Python API refuses an empty one: built here)."""
    if not axes:
        return ov.op.Constant(ov.Type(np.dtype(et)), ov.Shape([0]), [])
    return opset1.constant(np.array(axes[0] if scalar else axes, et))


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    assert_versions_follow_factories(op_type, FACTORIES[op_type])


# --------------------------------------------------------------------------- exact results


def _bound(op: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The largest magnitude any partial result can take, in any order (Python ints).

    The sweeps keep it inside the type: the plugin saturates 8-bit partial sums and
    computes some integer reductions in f32 (exact up to 2**24), where irrun wraps.
    """
    wide = np.abs(x.astype(object))
    if op == "ReduceProd":
        return np.prod(np.maximum(wide, 1), axis=axes)
    if op == "ReduceL2":
        return np.sum(wide * wide, axis=axes)
    if op in ("ReduceSum", "ReduceMean", "ReduceL1"):
        return np.sum(wide, axis=axes)
    return np.zeros((), object)


def _fits(values: np.ndarray, et: str) -> bool:
    limit = 2**24 if et in ("i32", "i64") else int(np.iinfo(_dtype(et)).max)
    return all(int(v) <= limit for v in np.asarray(values).reshape(-1))


def _data(rng: np.random.Generator, op: str, et: str, shape, axes) -> np.ndarray:
    if et == "boolean":
        # Mostly true or mostly false, so that both answers occur.
        return rng.random(shape) < rng.choice([0.2, 0.9])
    dtype = _dtype(et)
    if dtype.kind == "f":
        if op == "ReduceProd":  # magnitudes near 1: no overflow over a few hundred factors
            x = rng.uniform(0.8, 1.25, shape) * rng.choice([-1.0, 1.0], shape)
        else:
            x = rng.standard_normal(shape) * 4
        return x.astype(dtype)
    lo = 0 if dtype.kind == "u" else -100
    amplitude = 100
    while True:
        x = rng.integers(lo * amplitude // 100, amplitude, size=shape, endpoint=True)
        x = x.astype(dtype)
        if _fits(_bound(op, x, axes), et):
            return x
        amplitude //= 2  # overflow: the plugin saturates or runs in f32, irrun wraps


def _tolerance(op: str, x: np.ndarray, axes: tuple[int, ...], keep: bool):
    """(atol per output, rtol) for floats, as the module docstring derives them."""
    if x.dtype.kind != "f" or op in ("ReduceMax", "ReduceMin"):
        return 0.0, 0.0
    n = int(np.prod([x.shape[i] for i in axes], dtype=np.int64)) if axes else 1
    magnitude = np.sum(np.abs(x.astype(np.float64)), axis=axes, keepdims=keep)
    f16 = F16_RTOL if x.dtype == np.float16 else 0.0
    atol: np.ndarray | float = 2.0**-24 if f16 else 0.0
    if op in ("ReduceSum", "ReduceL1"):
        return atol + 2 * max(n - 1, 0) * U * magnitude, f16
    if op == "ReduceMean":
        return atol + 2 * max(n - 1, 0) * U * magnitude / max(n, 1), f16 + 2 * U
    if op == "ReduceProd":
        return atol, f16 + 2 * n * U
    return atol, f16 + 2 * (n + 1) * U  # ReduceL2


def _compare(got, want, atol, rtol, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=what)
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    ok = np.isclose(g, w, rtol=rtol, atol=atol) | (np.isnan(g) & np.isnan(w))
    assert ok.all(), f"{what}: {g[~ok]} vs {w[~ok]}"


# --------------------------------------------------------------------------- differential sweeps


def _draw(rng: np.random.Generator, op: str):
    rank = int(rng.integers(0, 5))
    shape = [int(rng.choice([0, 1, 2, 3, 4, 5], p=[0.04, 0.2, 0.2, 0.2, 0.2, 0.16]))
             for _ in range(rank)]  # fmt: skip
    k = int(rng.integers(0 if rank == 0 else 1, rank + 1))
    axes = [int(rng.integers(-rank, rank)) for _ in range(k)]  # negative and repeated
    if rank and rng.random() < 0.15:
        axes = []  # reduces nothing
    return shape, axes


@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.parametrize(
    "op, et",
    [(op, et) for op in sorted(set(REDUCE) - set(LOGICAL)) for et in NUMBER_TYPES]
    + [(op, "boolean") for op in LOGICAL],
)
def test_reduce_matches_cpu(op, et, keep, tmp_path):
    rng = np.random.default_rng([sorted(REDUCE).index(op), len(et), et.startswith("u"), keep])
    for _ in range(4):
        shape, axes = _draw(rng, op)
        norm = tuple(sorted({a % len(shape) for a in axes}))
        x = _data(rng, op, et, shape, norm)
        scalar = len(axes) == 1 and rng.random() < 0.4
        axes_et = np.int32 if rng.random() < 0.3 else np.int64
        what = f"{op} {et} {shape} axes={axes} keep={keep}"
        axes_node = axes_const(axes, scalar, axes_et)
        if not axes:
            # Nothing reduced (the plugin refuses some such models): x, or |x| for L1 and L2.
            got = _run(lambda p, a=axes_node: REDUCE[op](p, a, keep), [x], tmp_path)
            want = np.abs(x) if op in ("ReduceL1", "ReduceL2") else x
        else:
            build = lambda p, a=axes_node: REDUCE[op](p, a, keep)  # noqa: E731
            got, want = run_both(build, [x], tmp_path)
            if (
                op in ("ReduceMin", "ReduceMax")
                and et in ("f32", "i64")
                and 0 in [shape[i] for i in norm]
            ):
                # The plugin's min of nothing is 3.4028235e38 (f32), its i64 start
                # values those of i32; the reference's are +inf and i64's.
                (want,) = run_reference(one_op_model(build, [x]), [x])
        _compare(got, want, *_tolerance(op, x, norm, keep), what)


def test_reduce_over_empty_axes_matches_the_reference_and_the_plugin(tmp_path):
    """Start values: 0, 1, lowest(), true, false agree; ReduceMin's f32 start is
    the reference's +inf (the plugin's is 3.4028235e38)."""
    x = np.zeros((2, 0, 3), np.float32)
    for op in sorted(REDUCE):
        data = x.astype(bool) if op in LOGICAL else x
        build = lambda p, op=op: REDUCE[op](p, axes_const([1]), True)  # noqa: E731
        got, cpu = run_both(build, [data], tmp_path)
        (ref,) = run_reference(one_op_model(build, [data]), [data])
        assert_close(got, ref, what=op)
        if op != "ReduceMin":
            assert_close(got, cpu, what=op)
    for et in ("i32", "i8", "u8", "f16"):
        data = x.astype(_dtype(et))
        for op in ("ReduceMax", "ReduceMin"):
            build = lambda p, op=op: REDUCE[op](p, axes_const([-2]), False)  # noqa: E731
            got, cpu = run_both(build, [data], tmp_path)
            assert_close(got, cpu, what=f"{op} {et}")


# --------------------------------------------------------------------------- by hand


def _run(build, inputs, tmp_path):
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, inputs), path, compress_to_fp16=False)
    return irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})["out"]


def _reduce(op, x, axes, keep=False, tmp_path=None):
    return _run(lambda p: REDUCE[op](p, axes_const(axes), keep), [x], tmp_path)


def test_reductions_by_hand(tmp_path):
    x = np.array([[1, -2, 3], [4, 5, -6]], np.float32)

    def r(op, axes, keep=False, data=x):
        return _reduce(op, data, axes, keep, tmp_path).tolist()

    assert r("ReduceProd", [1]) == [-6.0, -120.0]
    assert r("ReduceProd", [0, -1], True) == [[720.0]]
    assert r("ReduceMin", [0]) == [1.0, -2.0, -6.0]
    assert r("ReduceMin", [1, 1, -1]) == [-2.0, -6.0]  # repeats are one axis
    assert r("ReduceL1", [1]) == [6.0, 15.0]
    assert r("ReduceL2", [0], True) == [[np.sqrt(17, dtype=np.float32), np.sqrt(29, dtype=np.float32),
                                          np.sqrt(45, dtype=np.float32)]]  # fmt: skip
    assert r("ReduceL2", [1], data=np.array([[3, -4]], np.float32)) == [5.0]
    assert r("ReduceProd", [], True) == x.tolist()  # an empty axes list reduces nothing
    b = np.array([[True, False], [True, True]])
    assert r("ReduceLogicalAnd", [1], data=b) == [False, True]
    assert r("ReduceLogicalOr", [0], True, data=~b) == [[False, True]]
    assert r("ReduceLogicalAnd", [0, 1], data=b) is False
    # Integer L2 is floor(sqrt(sum of squares)): 8, 9, 3 and 75 give 2, 3, 1 and 8.
    i = np.array([[2, 2, 0], [2, 2, 1], [1, 1, 1], [5, 5, 5]], np.int32)
    assert r("ReduceL2", [1], data=i) == [2, 3, 1, 8]
    assert r("ReduceL1", [1], data=i.astype(np.int8) - 3) == [5, 4, 6, 6]
    # f16 is reduced in f32: 60000 + 60000 does not overflow on the way.
    h = np.array([60000, 60000, -60000], np.float16)
    assert r("ReduceSum", [0], data=h) == 60000.0
    assert r("ReduceProd", [0], data=np.array([60000, 2, 0.5], np.float16)) == 60000.0
    assert r("ReduceMean", [0], data=np.zeros((0, 2), np.float32)) == [0.0, 0.0]
    assert r("ReduceMean", [1], data=np.array([[1, 2], [-1, -2], [1, 4]], np.int32)) == [1, -1, 2]


def test_integer_overflow_wraps_as_the_reference_does(tmp_path):
    def r(op, data):
        build = lambda p: REDUCE[op](p, axes_const([0]), False)  # noqa: E731
        got = _run(build, [data], tmp_path)
        if data.dtype in (np.int32, np.int64) and op != "ReduceL2":  # what the reference takes
            (want,) = run_reference(one_op_model(build, [data]), [data])
            assert_close(got, want, what=op)
        return got.tolist()

    # 70000 * 70000 * 3 = 14700000000 = 3 * 2**32 + 1815098112.
    assert r("ReduceProd", np.array([70000, 70000, 3], np.int32)) == 1815098112
    assert r("ReduceSum", np.array([2**31 - 1, 5], np.int32)) == -(2**31) + 4
    assert r("ReduceL1", np.array([-(2**31), 5], np.int32)) == -(2**31) + 5  # |min| is min
    assert r("ReduceSum", np.array([2**40, 3], np.int64)) == 2**40 + 3
    assert r("ReduceMin", np.array([2**40, 3 * 2**40], np.int64)) == 2**40
    assert r("ReduceSum", np.array([100, 100, 100], np.uint8)) == 44  # 300 - 256
    assert r("ReduceProd", np.array([100, 100, -100, -100, 3], np.int8)) == 0  # 3e8 % 256
    assert r("ReduceL2", np.array([46341], np.int32)) == -(2**31)  # the square wraps negative


def test_the_plugins_integer_deviations(tmp_path):
    """What the module docstring says the plugin does instead, noticed if it changes."""
    cases = [
        ("ReduceSum", np.array([2**31 - 1, 5], np.int32), -(2**31)),  # summed in f32
        ("ReduceSum", np.array([2**40, 3], np.int64), 3),  # i64 run as i32
        ("ReduceSum", np.array([100, 100, 100], np.uint8), 255),  # saturated
        ("ReduceMin", np.zeros((0,), np.float32), np.finfo(np.float32).max),
    ]
    for op, data, plugin in cases:
        _, cpu = run_both(lambda p, op=op: REDUCE[op](p, axes_const([0]), False), [data], tmp_path)
        assert cpu.tolist() == plugin, op


def test_nan_never_wins_as_in_the_reference_kernels(tmp_path):
    x = np.array([[3.0, np.nan, 1.0], [np.nan, 3.0, 1.0], [np.nan, np.nan, np.nan]], np.float32)
    lowest = float(np.finfo(np.float32).min)
    for op, hand in (("ReduceMax", [3.0, 3.0, lowest]), ("ReduceMin", [1.0, 1.0, np.inf])):
        build = lambda p, op=op: REDUCE[op](p, axes_const([1]), False)  # noqa: E731
        got = _run(build, [x], tmp_path)
        (ref,) = run_reference(one_op_model(build, [x]), [x])
        assert got.tolist() == hand == ref.tolist(), op
    # f16 is compared in f32: its lowest() rounds to -inf.
    h = np.array([[np.nan, np.nan], [np.nan, 1]], np.float16)
    assert _reduce("ReduceMax", h, [1], tmp_path=tmp_path).tolist() == [-np.inf, 1.0]
    assert _reduce("ReduceMin", h, [1], tmp_path=tmp_path).tolist() == [np.inf, 1.0]


def _wrapped(value: int, dtype: np.dtype) -> int:
    bits = dtype.itemsize * 8
    value %= 2**bits
    return value - 2**bits if dtype.kind == "i" and value >= 2 ** (bits - 1) else value


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(("i8", "u8", "i32", "i64", "u64")), st.data())
def test_integer_reductions_are_exact_arithmetic_wrapped(et, data):
    """Sum, Prod, L1, Max, Min and CumSum of integers: Python's exact answer wrapped to
    the type, as the reference kernels compute in C++ (64-bit values included)."""
    dtype = _dtype(et)
    info = np.iinfo(dtype)
    values = data.draw(st.lists(st.integers(int(info.min), int(info.max)), max_size=6))
    x = np.array(values, dtype)
    axes = np.array([0], np.int64)

    def kernel(op):
        attrs = attrs_namespace({"keep_dims": False})
        return resolve(op, "opset16").kernel(attrs, x, axes)[0].tolist()

    assert kernel("ReduceSum") == _wrapped(sum(values), dtype)
    assert kernel("ReduceProd") == _wrapped(int(np.prod(np.array(values, object))), dtype)
    assert kernel("ReduceL1") == _wrapped(sum(abs(v) for v in values), dtype)
    assert kernel("ReduceMax") == max(values, default=int(info.min))
    assert kernel("ReduceMin") == min(values, default=int(info.max))
    sums = cumsum(x, 0).tolist()
    assert sums == [_wrapped(sum(values[: i + 1]), dtype) for i in range(len(values))]


# --------------------------------------------------------------------------- shape rules


def _infer(op, data_shape, axes_info: TensorInfo, keep: bool, et="f32"):
    rule = resolve(op, "opset16")
    (out,) = rule.infer(attrs_namespace({"keep_dims": keep}),
                        [TensorInfo(data_shape, ELEMENT_TYPES[et]), axes_info])  # fmt: skip
    return out


SHAPES = [(2, Interval(0, None), 4), (Interval(1, 3), 5), None, (Interval(2, 6), 0, 1, 7)]


@pytest.mark.parametrize("op", ["ReduceProd", "ReduceMin", "ReduceL1", "ReduceL2"])
@pytest.mark.parametrize("keep", [False, True])
def test_shape_rule_matches_openvino_on_dynamic_dims(op, keep):
    i64 = ELEMENT_TYPES["i64"]
    for shape in SHAPES:
        p = opset1.parameter(to_ov_shape(shape), ov.Type.f32)
        rank = 3 if shape is None else len(shape)
        for axes in ([0], [-1, 0, -1], []) if rank else ([],):
            if shape is None and axes:
                continue  # OpenVINO cannot check them either: same as unknown axes
            node = REDUCE[op](p, axes_const(axes), keep)
            want = from_ov_shape(node.get_output_partial_shape(0))
            value = np.array(axes, np.int64)
            got = _infer(op, shape, TensorInfo((len(axes),), i64, value), keep)
            assert got.shape == want, (shape, axes)
        # Axes known only by their count: one axis removes one dim.
        for n in (1, 2):
            q = opset1.parameter([n], ov.Type.i64)
            want = from_ov_shape(REDUCE[op](p, q, keep).get_output_partial_shape(0))
            assert _infer(op, shape, TensorInfo((n,), i64), keep).shape == want, (shape, n)


def test_logical_shape_rule_and_types():
    boolean, i32 = ELEMENT_TYPES["boolean"], ELEMENT_TYPES["i32"]
    axes = TensorInfo((1,), i32, np.array([-1], np.int32))
    out = _infer("ReduceLogicalOr", (3, Interval(2, 4)), axes, True, et="boolean")
    assert out.shape == (3, 1) and out.element_type is boolean
    with pytest.raises(ShapeError, match="input 0 is f32"):
        _infer("ReduceLogicalAnd", (3,), axes, False)
    with pytest.raises(ShapeError, match="input 0 is boolean"):
        _infer("ReduceProd", (3,), axes, False, et="boolean")
    for op, et in (("ReduceLogicalAnd", "f32"), ("ReduceProd", "boolean")):
        with pytest.raises(RuntimeError):  # OpenVINO refuses them alike
            REDUCE[op](opset1.parameter([3], ov.Type(_dtype(et))), axes_const([0]), False)


@pytest.mark.parametrize(
    "axes_info, says",
    [
        (TensorInfo((1,), ELEMENT_TYPES["i64"], np.array([3])), "axes value 3 is out of range"),
        (TensorInfo((1,), ELEMENT_TYPES["i64"], np.array([-4])), "axes value -4 is out of range"),
        (TensorInfo((1, 1), ELEMENT_TYPES["i64"]), "axes must be 0-D or 1-D"),
        (TensorInfo((1,), ELEMENT_TYPES["f32"]), "input 1 is f32, which ReduceL2-v4 does not take"),
    ],
)
def test_shape_rule_errors(axes_info, says):
    with pytest.raises(ShapeError, match=says):
        _infer("ReduceL2", (2, 3, 4), axes_info, False)


# --------------------------------------------------------------------------- CumSum


CUMSUM_TYPES = ("f32", "f16", "i32", "i64", "i8", "u8")


def _cumsum_tolerance(x: np.ndarray, axis: int):
    if x.dtype.kind != "f":
        return 0.0, 0.0
    n = x.shape[axis]
    total = np.sum(np.abs(x.astype(np.float64)), axis=axis, keepdims=True)
    f16 = x.dtype == np.float16
    return (2.0**-24 if f16 else 0.0) + 2 * max(n - 1, 0) * U * total, F16_RTOL if f16 else 0.0


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("et", CUMSUM_TYPES)
def test_cumsum_matches_cpu(et, exclusive, reverse, tmp_path):
    rng = np.random.default_rng([CUMSUM_TYPES.index(et), exclusive, reverse])
    dtype = _dtype(et)
    for _ in range(3):
        rank = int(rng.integers(1, 5))
        shape = [int(rng.choice([0, 1, 2, 3, 6], p=[0.05, 0.2, 0.25, 0.25, 0.25]))
                 for _ in range(rank)]  # fmt: skip
        axis = int(rng.integers(-rank, rank))
        if dtype.kind == "f":
            x = (rng.standard_normal(shape) * 4).astype(dtype)
        elif dtype.itemsize == 1:  # 8-bit sums wrap in the plugin as in irrun
            info = np.iinfo(dtype)
            x = rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
        else:  # within 32 bits: the plugin runs i64 as i32
            x = rng.integers(-(2**20), 2**20, size=shape).astype(dtype)
        axis_et = np.int32 if rng.random() < 0.5 else np.int64
        axis_node = opset1.constant(axis_et(axis))
        got, want = run_both(lambda p, a=axis_node: opset3.cumsum(p, a, exclusive, reverse), [x],
                             tmp_path)  # fmt: skip
        _compare(got, want, *_cumsum_tolerance(x, axis % rank), f"{et} {shape} axis={axis}")


def test_cumsum_by_hand(tmp_path):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)

    def run(data, axis, exclusive=False, reverse=False):
        build = lambda p: opset3.cumsum(p, opset1.constant(np.int64(axis)), exclusive, reverse)  # noqa: E731
        return _run(build, [data], tmp_path).tolist()

    assert run(x, 1) == [[1, 3, 6], [4, 9, 15]]
    assert run(x, -1, reverse=True) == [[6, 5, 3], [15, 11, 6]]
    assert run(x, 1, exclusive=True) == [[0, 1, 3], [0, 4, 9]]
    assert run(x, 1, exclusive=True, reverse=True) == [[5, 3, 0], [11, 6, 0]]
    assert run(x, 0, exclusive=True) == [[0, 0, 0], [1, 2, 3]]
    assert run(np.array([100, 100, 100, -3], np.int8), 0) == [100, -56, 44, 41]  # wraps
    assert run(np.array([2**40, 5], np.int64), 0) == [2**40, 2**40 + 5]  # the plugin: 0, 5
    # f16 sums in f32, each output rounded once: 2049 and 2051 round to even.
    assert run(np.array([2048, 1, 1, 1, 1], np.float16), 0) == [2048, 2048, 2050, 2052, 2052]
    assert run(np.array([60000, 60000, -60000], np.float16), 0) == [60000, np.inf, 60000]
    assert run(np.array([True, False, True]), 0) == [True, True, True]
    assert cumsum(np.array([1, 2, 3]), 0, exclusive=True, reverse=True).tolist() == [5, 3, 0]


def test_cumsum_without_an_axis_input_is_refused_as_openvino_refuses_it(tmp_path):
    """OpenVINO's C++ API has a one-input CumSum (axis 0), but its IR reader fails on one."""
    p = opset1.parameter([2, 2], ov.Type.f32, name="in0")
    node = opset3.cumsum(p, opset1.constant(np.int32(0)), False, True)
    node.set_friendly_name("sums")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    # Drop the Const layer, its edge and the port it fed.
    start = text.index('<layer id="1"')
    text = text[:start] + text[text.index("</layer>", start) + len("</layer>") :]
    text = text.replace('<port id="1" precision="I32" />', "")
    path.write_text("\n".join(line for line in text.splitlines() if 'from-layer="1"' not in line))
    with pytest.raises(RuntimeError, match="out of range"):
        ov.Core().read_model(path)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'sums' (CumSum-v3)" in m and "input" in m for m in found), found


def test_cumsum_shape_rule():
    rule = resolve("CumSum", "opset3")
    attrs = attrs_namespace({"exclusive": False, "reverse": False})
    f32, i32 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"]
    data = TensorInfo((2, Interval(0, None)), f32)
    (out,) = rule.infer(attrs, [data, TensorInfo((), i32, np.array(-1, np.int32))])
    assert out.shape == (2, Interval(0, None)) and out.element_type is f32
    with pytest.raises(ShapeError, match="axis 2 is out of range for rank 2"):
        rule.infer(attrs, [data, TensorInfo((), i32, np.array(2, np.int32))])
    with pytest.raises(ShapeError, match="input 1 is f32"):
        rule.infer(attrs, [data, TensorInfo((), f32)])
    with pytest.raises(ShapeError, match="axis must hold one value"):
        rule.infer(attrs, [data, TensorInfo((2,), i32)])


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    p = opset1.parameter([2, 3, 4], ov.Type.f32, name="in0")
    node = opset4.reduce_l2(p, axes_const([1]), True)
    node.set_friendly_name("norm")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert irrun.validate(path) == []
    # keep_dims false would drop the axis the file still declares.
    path.write_text(text.replace('keep_dims="true"', 'keep_dims="false"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'norm' (ReduceL2-v4) port 2: declared [2,1,4], inferred [2,4] (keep_dims=false)"
               in m for m in found), found  # fmt: skip
    path.write_text(re.sub(r'(<port id="2"[^>]*>\s*<dim>2</dim>\s*<dim>)1(</dim>)', r"\g<1>7\2",
                           text, count=1))  # fmt: skip
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'norm' (ReduceL2-v4) port 2: declared [2,7,4], inferred [2,1,4]" in m
               for m in found), found  # fmt: skip


def test_validate_names_a_bad_cumsum(tmp_path):
    p = opset1.parameter([2, 3], ov.Type.f32, name="in0")
    node = opset3.cumsum(p, opset1.constant(np.int64(1)), True, False)
    node.set_friendly_name("sums")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert irrun.validate(path) == []
    path.write_text(text.replace('exclusive="true"', 'exclusive="yes"'))
    found = [str(d) for d in irrun.validate(path)]
    assert any("'sums' (CumSum-v3): attribute 'exclusive'=\"yes\"" in m for m in found), found
    # An axis past the rank (the plugin returns garbage there).
    path.with_suffix(".bin").write_bytes(np.int64(2).tobytes())
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'sums' (CumSum-v3)" in m and "axis 2 is out of range for rank 2" in m
               for m in found), found  # fmt: skip


# --------------------------------------------------------------------------- element types
# Every data type the reductions and CumSum declare (the sweep above runs f32, f16, i32,
# i64, i8 and u8 against the plugin), against OpenVINO's reference kernels or, for the
# types it has none for, the reduction in f32 converted to the type by OpenVINO's Convert
# (packed integers wrapping to their bits); every integer type of the axes; validate
# naming the types they do not take.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ir.element_types import INDEX_TYPES, INTEGERS  # noqa: E402
from irrun.ops.reduction import ARITHMETIC_TYPES  # noqa: E402

ARITHMETIC = [op for op in REDUCE if op not in LOGICAL]


@pytest.mark.parametrize("et", ARITHMETIC_TYPES)
@pytest.mark.parametrize("op", ARITHMETIC)
def test_every_declared_type(op, et, tmp_path):
    x = convertible(et, (2, 3, 4), seed=len(op), low=-3, high=3)
    got, want = typed_runs(lambda p: REDUCE[op](p, axes_const([2]), False), [x], [et], tmp_path)
    # OpenVINO's reference reduces bf16 in bf16, rounding towards zero (L2's square root):
    # irrun in f32, rounding once to nearest.
    assert_typed_close(got, want, rtol=2.0**-7 if et == "bf16" else 1e-6)


@pytest.mark.parametrize("at", INTEGERS)
@pytest.mark.parametrize("op", list(REDUCE))
def test_every_axes_type(op, at, tmp_path):
    et = "boolean" if op in LOGICAL else "f32"
    x = convertible(et, (2, 3, 4), seed=1)
    axes = opset1.constant(np.array([0, 2]), getattr(ov.Type, at))
    got, want = typed_runs(lambda p: REDUCE[op](p, axes, True), [x], [et], tmp_path)
    assert got[0].shape == (1, 3, 1)
    assert_typed_close(got, want, rtol=1e-6)


@pytest.mark.parametrize("et", [*ARITHMETIC_TYPES, "boolean"])
@pytest.mark.parametrize("at", INDEX_TYPES)
def test_cumsum_every_declared_type(et, at, tmp_path):
    x = convertible(et, (2, 5), seed=3, low=-3, high=3)
    axis = opset1.constant(np.array(1), getattr(ov.Type, at))
    got, want = typed_runs(lambda p: opset3.cum_sum(p, axis, reverse=True), [x], [et],
                           tmp_path)  # fmt: skip
    assert_typed_close(got, want, rtol=1e-6)


@pytest.mark.parametrize(("op", "port", "et"),
                         [("ReduceSum", 0, "boolean"), ("ReduceMean", 0, "nf4"),
                          ("ReduceL2", 1, "f32"), ("ReduceMax", 1, "boolean"),
                          ("ReduceLogicalAnd", 0, "u8"), ("ReduceLogicalOr", 0, "f32"),
                          ("CumSum", 0, "nf4"), ("CumSum", 1, "u8")])  # fmt: skip
def test_validate_names_a_type_it_does_not_take(op, port, et, tmp_path):
    x = np.zeros((2, 3), bool if op in LOGICAL else np.float32)
    axes = np.array([1], np.int64) if op != "CumSum" else np.array(1, np.int64)

    def build(p, a):
        return opset3.cum_sum(p, a) if op == "CumSum" else REDUCE[op](p, a, False)

    version = {"ReduceL1": 4, "ReduceL2": 4, "CumSum": 3}.get(op, 1)
    assert_refused(build, [x, axes], port, et, tmp_path, f"{op}-v{version}")
