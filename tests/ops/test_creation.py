"""Eye, Range and OneHot against OpenVINO: the CPU plugin, the reference kernels
(``Model.evaluate``) where the two differ, by hand, and the shape rules against
OpenVINO's own.

Values are made or counted, so comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import DTYPES, ET

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ANY, ELEMENT_TYPES, INDEX_TYPES, NUMBERS
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve
from irrun.ops.creation import ONE_HOT_INDICES, range_count

ov = pytest.importorskip("openvino")
from openvino import opset1, opset9, opset12, opset16  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    all_three,
    assert_close,
    const,
    evaluate_reference,
    one_op_model,
    run_both,
    run_cpu,
    run_saved,
)
from support.ov_shapes import from_ov_shape  # noqa: E402
from support.typed import assert_same, refusals, run_irrun, run_openvino, sample  # noqa: E402

# --------------------------------------------------------------------------- Eye


@pytest.mark.parametrize("out_type", ["f32", "f16", "i32", "i64", "u8", "boolean"])
def test_eye_matches_openvino(out_type, tmp_path):
    for rows, cols, diag, batch in ((3, 4, 0, None), (4, 3, 1, [2]), (3, 3, -2, [2, 1]),
                                    (2, 5, 7, None), (3, 2, -5, [1]), (0, 3, 0, [2]),
                                    (1, 1, 0, [0, 2])):  # fmt: skip
        for itype in (np.int64, np.int32):
            extra = [] if batch is None else [np.array(batch, itype)]
            inputs = [np.array(rows, itype), np.array([cols], itype), np.array(diag, itype),
                      *extra]  # fmt: skip
            # The reference kernel has no boolean Eye.
            all_three(lambda *ps, t=out_type: opset9.eye(*ps[:3], t, *ps[3:]), inputs,
                       tmp_path, reference=out_type != "boolean")  # fmt: skip


def test_eye_by_hand(tmp_path):
    model = one_op_model(lambda: opset9.eye(const(2), const(3), const(1), "i32"), [])
    assert run_saved(model, [], tmp_path)[0].tolist() == [[0, 1, 0], [0, 0, 1]]


def test_eye_shape_rule_matches_openvino():
    rule = resolve("Eye", "opset9")
    i64 = ET["i64"]
    known = lambda v: TensorInfo((), i64, np.array(v))  # noqa: E731
    attrs = attrs_namespace({"output_type": ET["f32"]})
    (out,) = rule.infer(attrs, [known(3), TensorInfo((), i64), known(0),
                                TensorInfo((2,), i64)])  # fmt: skip
    p = opset1.parameter([], ov.Type.i64)
    b = opset1.parameter([2], ov.Type.i64)
    want = opset9.eye(const(3), p, const(0), "f32", b).get_output_partial_shape(0)
    assert out.shape == from_ov_shape(want) == (DYNAMIC, DYNAMIC, 3, DYNAMIC)
    (out,) = rule.infer(attrs, [known(3), known(2), known(0), TensorInfo((2,), i64,
                                                                       np.array([4, 1]))])
    assert out.shape == (4, 1, 3, 2)
    with pytest.raises(ShapeError, match="num_rows must not be negative, got -1"):
        rule.infer(attrs, [known(-1), known(2), known(0)])
    with pytest.raises(RuntimeError):
        opset9.eye(const(-1), const(2), const(0), "f32")
    with pytest.raises(ShapeError, match="input 0 is f32"):
        rule.infer(attrs, [TensorInfo((), ET["f32"]), known(2), known(0)])


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
    want = evaluate_reference(model, inputs)[0]
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
    assert_close(got, evaluate_reference(model, inputs)[0])  # 1e8 + i, rounded to f32 each
    assert got[-1] == np.float32(1e8 + 8) and run_cpu(model, inputs)[0][-1] in (1e8, got[-1])


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_range1_pointing_away_is_empty(dtype, tmp_path):
    inputs = [np.array(v, DTYPES[dtype]) for v in (0, 10, -1)]
    model = one_op_model(lambda a, b, c: opset1.range(a, b, c), inputs)
    got = run_saved(model, inputs, tmp_path)[0]
    assert got.shape == (0,) and evaluate_reference(model, inputs)[0].shape == (0,)
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


# --------------------------------------------------------------------------- element types

# The types OpenVINO's reference kernels run OneHot with and get right: indices i32 and
# i64 only; values of whole bytes (its kernel copies bytes: packed values come out wrong,
# and a string aborts the process).
EVALUATED_INDICES = INDEX_TYPES
EVALUATED_VALUES = tuple(t for t in ANY if ELEMENT_TYPES[t].bits >= 8)


def _params(types, shapes):
    out = []
    for i, (t, shape) in enumerate(zip(types, shapes, strict=True)):
        p = opset1.parameter(shape, getattr(ov.Type, t), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        out.append(p)
    return out


def _one_hot_model(version, types):
    params = _params(types, [[2, 3], [], [], []])
    if version == 1:
        node = opset1.one_hot(*params, -1)
    else:
        node = opset16.one_hot(*params, -1, "normalize")
    return ov.Model([node], params, "one_hot")


def _one_hot_by_hand(version, idx, depth, on, off):
    i = idx.astype(np.int64)
    n = int(depth)
    if version == 16:
        i = np.where((i < 0) & (i >= -n), i + n, i)
    hot = i[..., None] == np.arange(n)
    return np.where(hot, on.reshape(()), off.reshape(()))


@pytest.mark.parametrize("version", [1, 16])
@pytest.mark.parametrize("et", ONE_HOT_INDICES)
def test_one_hot_index_types(version, et, tmp_path):
    """Indices and depth of every integral type (the same type: OpenVINO's reference
    kernel runs only i32 and i64, the others are checked by hand)."""
    rng = np.random.default_rng([version, len(et), ONE_HOT_INDICES.index(et)])
    idx = sample(et, (2, 3), rng)
    depth = np.array(1 if et in ("u1", "boolean") else 3, idx.dtype)
    on, off = np.array(5, np.float32), np.array(-1, np.float32)
    model = _one_hot_model(version, [et, et, "f32", "f32"])
    (got,) = run_irrun(model, [idx, depth, on, off], tmp_path)
    assert_same(got, _one_hot_by_hand(version, idx, depth, on, off).astype(np.float32))
    if et in EVALUATED_INDICES:
        (want,) = run_openvino(model, [idx, depth, on, off], [et, et, "f32", "f32"])
        assert_same(got, want)


@pytest.mark.parametrize("version", [1, 16])
@pytest.mark.parametrize("et", ANY)
def test_one_hot_value_types(version, et, tmp_path):
    """on_value and off_value of every type, against the reference kernels where they
    copy whole elements, by hand elsewhere."""
    rng = np.random.default_rng([version, len(et), ANY.index(et)])
    idx = np.array([[0, 2, -1], [1, 5, -3]], np.int64)
    depth = np.array(3, np.int64)
    on, off = sample(et, (), rng), sample(et, (), rng)
    model = _one_hot_model(version, ["i64", "i64", et, et])
    (got,) = run_irrun(model, [idx, depth, on, off], tmp_path)
    assert_same(got, _one_hot_by_hand(version, idx, depth, on, off), et)
    if et in EVALUATED_VALUES and et != "string":
        (want,) = run_openvino(model, [idx, depth, on, off], ["i64", "i64", et, et])
        assert_same(got, want, et)


@pytest.mark.parametrize("et", NUMBERS)
def test_range1_types_match_reference(et, tmp_path):
    """Range-1 of every numeric type, from inputs that are no constants (the kernel's
    path), against OpenVINO's reference kernel (the CPU plugin for f16 and bf16, which
    the reference does not run)."""
    start, stop, step = (np.array(v, ELEMENT_TYPES[et].dtype) for v in (2, 11, 3))
    params = _params([et] * 3, [[], [], []])
    model = ov.Model([opset1.range(*params)], params, "range")
    (got,) = run_irrun(model, [start, stop, step], tmp_path)
    oracle = "cpu" if et in ("f16", "bf16") else "reference"
    (want,) = run_openvino(model, [start, stop, step], [et] * 3, oracle)
    assert_same(got, want, et)


@pytest.mark.parametrize("et", NUMBERS)
@pytest.mark.parametrize("out", ["f32", "i32"])
def test_range4_input_types_match_reference(et, out, tmp_path):
    """Range-4's start, stop and step of every numeric type, each port in turn beside
    i32 ones."""
    dtype = ELEMENT_TYPES[et].dtype
    for port in range(3):
        types = ["i32"] * 3
        types[port] = et
        values = [np.array(v, ELEMENT_TYPES[t].dtype) for v, t in zip((1, 12, 2), types,
                                                                       strict=True)]  # fmt: skip
        values[port] = np.array((1, 12, 2)[port], dtype)
        params = _params(types, [[], [], []])
        model = ov.Model([opset12.range(*params, out)], params, "range")
        (got,) = run_irrun(model, values, tmp_path)
        (want,) = run_openvino(model, values, types)
        assert_same(got, want, f"{et} at port {port}")


@pytest.mark.parametrize("et", INDEX_TYPES)
def test_eye_input_types_match_reference(et, tmp_path):
    """Eye-9's four inputs, each port in turn of ``et`` beside i64 ones."""
    for port in range(4):
        types = ["i64"] * 4
        types[port] = et
        values = [np.array(v, ELEMENT_TYPES[t].dtype) for v, t in zip((3, 4, 1, [2]), types,
                                                                       strict=True)]  # fmt: skip
        params = _params(types, [[], [], [], [1]])
        model = ov.Model([opset9.eye(*params[:3], "f32", params[3])], params, "eye")
        (got,) = run_irrun(model, values, tmp_path)
        (want,) = run_openvino(model, values, types)
        assert_same(got, want, f"{et} at port {port}")


def _range1(p0, p1, p2):
    return opset1.range(p0, p1, p2)


@pytest.mark.parametrize(("name", "build", "types", "shapes", "port", "bad"), [
    ("Range-v0", _range1, ["f32"] * 3, [[]] * 3, 0, "boolean"),
    ("Range-v4", lambda *p: opset12.range(*p, "f32"), ["f32"] * 3, [[]] * 3, 2, "string"),
    ("Eye-v9", lambda *p: opset9.eye(*p, "f32"), ["i32"] * 3, [[]] * 3, 1, "f32"),
    ("OneHot-v1", lambda *p: opset1.one_hot(*p, -1), ["i32", "i32", "f32", "f32"],
     [[2], [], [], []], 0, "f32"),
    ("OneHot-v16", lambda *p: opset16.one_hot(*p, -1), ["i32", "i32", "f32", "f32"],
     [[2], [], [], []], 1, "string"),
])  # fmt: skip
def test_types_not_taken_are_found(name, build, types, shapes, port, bad, tmp_path):
    params = _params(types, shapes)
    model = ov.Model([build(*params)], params, "m")
    found = [str(d) for d in refusals(model, tmp_path, {port: bad})
             if "does not take" in d.message]  # fmt: skip
    assert len(found) == 1 and f"input {port} is {bad}, which {name} does not take" in found[0]
