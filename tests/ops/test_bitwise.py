"""BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot (opset13), BitwiseLeftShift and
BitwiseRightShift (opset15).

Differential sweeps: one-op models built with OpenVINO's Python API, saved as IR,
run by irrun and by the CPU plugin (f32, one thread), from seeded generators.
Every result is exact, so every comparison is exact.

Kept out of the sweeps, and checked by hand and against the plugin below: the
plugin runs i64 and u64 in 32 bits, so the sweeps draw 64-bit values that fit 31
bits and shifts that stay there; irrun keeps 64 bits, as the reference kernels do.
Shift amounts that are negative or not below the bit width (undefined in C++) are
swept for 8-, 16- and 32-bit types, where the plugin and the installed reference
kernel (i32 only) take the amount modulo 32 of the promoted value, as irrun does.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve
from irrun.ops.bitwise import shift

ov = pytest.importorskip("openvino")
from openvino import opset1, opset13, opset15  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    assert_versions_follow_factories,
    one_op_model,
    run_both,
    run_reference,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

FACTORIES = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor",
             "BitwiseNot": "bitwise_not", "BitwiseLeftShift": "bitwise_left_shift",
             "BitwiseRightShift": "bitwise_right_shift"}  # fmt: skip
LOGIC = {"BitwiseAnd": opset13.bitwise_and, "BitwiseOr": opset13.bitwise_or,
         "BitwiseXor": opset13.bitwise_xor}  # fmt: skip
SHIFTS = {"BitwiseLeftShift": opset15.bitwise_left_shift,
          "BitwiseRightShift": opset15.bitwise_right_shift}  # fmt: skip
INTEGERS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64")


def _dtype(name: str) -> np.dtype:
    return ELEMENT_TYPES[name].dtype


def _values(rng: np.random.Generator, name: str, shape) -> np.ndarray:
    """Random values over the whole type; 64-bit ones within 31 bits (the plugin's 32)."""
    if name == "boolean":
        return rng.random(shape) < 0.5
    dtype = _dtype(name)
    info = np.iinfo(dtype)
    lo, hi = (int(info.min), int(info.max)) if dtype.itemsize < 8 else (
        (-(2**31), 2**31 - 1) if dtype.kind == "i" else (0, 2**31 - 1))  # fmt: skip
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def _shapes(rng: np.random.Generator, mode: str):
    """Two shapes that broadcast under ``mode`` (dims 0 and 1 included).

    ``pdpd`` shapes have equal ranks: the plugin misreads a lower-rank second input
    (see test_pdpd_with_a_shorter_second_input_follows_the_reference).
    """
    rank = int(rng.integers(0, 5))
    a = [int(rng.choice([0, 1, 2, 3, 4], p=[0.05, 0.25, 0.3, 0.2, 0.2])) for _ in range(rank)]
    if mode == "none":
        return a, list(a)
    if mode == "pdpd":
        return a, [d if d == 0 or rng.random() < 0.6 else 1 for d in a]  # 1 over 0 clashes
    b = [d if rng.random() < 0.6 else 1 for d in a[int(rng.integers(0, rank + 1)) :]]
    if len(b) == rank and rng.random() < 0.3:
        b = [int(rng.integers(1, 3)), *b]
        a, b = (b, a) if rng.random() < 0.5 else (a, b)
    return a, b


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    assert_versions_follow_factories(op_type, FACTORIES[op_type])


# --------------------------------------------------------------------------- differential sweeps


@pytest.mark.parametrize("mode", ["numpy", "none", "pdpd"])
@pytest.mark.parametrize("et", ["boolean", *INTEGERS])
@pytest.mark.parametrize("op", sorted(LOGIC))
def test_logic_matches_cpu(op, et, mode, tmp_path):
    rng = np.random.default_rng([len(op), INTEGERS.index(et) if et in INTEGERS else 9, len(mode)])
    for _ in range(2):
        a, b = _shapes(rng, mode)
        x, y = _values(rng, et, a), _values(rng, et, b)
        got, want = run_both(lambda p, q: LOGIC[op](p, q, mode), [x, y], tmp_path)
        assert_close(got, want, what=f"{op} {et} {a} {b} {mode}")


@pytest.mark.parametrize("et", ["boolean", *INTEGERS])
def test_not_matches_cpu(et, tmp_path):
    rng = np.random.default_rng(len(et))
    for shape in ([], [0], [1], [3, 4], [2, 1, 5]):
        x = _values(rng, et, shape)
        got, want = run_both(opset13.bitwise_not, [x], tmp_path)
        assert_close(got, want, what=f"{et} {shape}")


def _amounts(rng: np.random.Generator, name: str, shape) -> np.ndarray:
    dtype = _dtype(name)
    if dtype.itemsize == 8:
        # The plugin's 32 bits: amounts that keep 1 and -1 shifted left within 31 bits.
        return rng.integers(0, 30, size=shape, endpoint=True).astype(dtype)
    # Negative amounts and amounts past the width, which wrap modulo 32.
    return rng.integers(-70, 70, size=shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("mode", ["numpy", "none", "pdpd"])
@pytest.mark.parametrize("et", INTEGERS)
@pytest.mark.parametrize("op", sorted(SHIFTS))
def test_shifts_match_cpu(op, et, mode, tmp_path):
    rng = np.random.default_rng([len(op), INTEGERS.index(et), len(mode)])
    for _ in range(2):
        a, b = _shapes(rng, mode)
        x, s = _values(rng, et, a), _amounts(rng, et, b)
        if et == "u32" and op == "BitwiseRightShift":
            x = (x >> 1).astype(x.dtype)  # the plugin shifts u32 as i32, arithmetically
        if _dtype(et).itemsize == 8 and op == "BitwiseLeftShift":
            x = (x >> 31 if et == "i64" else x & 1).astype(x.dtype)  # -1, 0 or 1
        got, want = run_both(lambda p, q: SHIFTS[op](p, q, mode), [x, s], tmp_path)
        assert_close(got, want, what=f"{op} {et} {a} {b} {mode}")


@pytest.mark.parametrize("op", sorted(SHIFTS))
def test_i32_shifts_match_the_reference_kernel(op):
    rng = np.random.default_rng(5)
    x = rng.integers(-(2**31), 2**31 - 1, size=(6, 40), endpoint=True).astype(np.int32)
    s = rng.integers(-100, 100, size=(1, 40), endpoint=True).astype(np.int32)
    model = one_op_model(lambda p, q: SHIFTS[op](p, q), [x, s])
    (want,) = run_reference(model, [x, s])
    assert_close(shift(x, np.broadcast_to(s, x.shape), op == "BitwiseLeftShift"), want)


def test_pdpd_with_a_shorter_second_input_follows_the_reference():
    """PDPD lays the second input over the first from axis 0; the plugin's bitwise
    kernels read a lower-rank second input as if it were all its first value."""
    x = np.arange(6, dtype=np.int32).reshape(2, 3) + 100
    s = np.array([1, 2], np.int32)
    model = one_op_model(lambda p, q: opset15.bitwise_left_shift(p, q, "pdpd"), [x, s])
    (want,) = run_reference(model, [x, s])
    assert want.tolist() == [[200, 202, 204], [412, 416, 420]]  # rows shifted by 1, then 2
    rule = resolve("BitwiseLeftShift", "opset15")
    assert_close(rule.kernel(attrs_namespace({"auto_broadcast": "pdpd"}), x, s)[0], want)


# --------------------------------------------------------------------------- by hand


def _run(build, inputs, tmp_path):
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, inputs), path, compress_to_fp16=False)
    return irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})["out"]


def test_logic_by_hand(tmp_path):
    x, y = np.array([0b1100, -1], np.int8), np.array([0b1010, 5], np.int8)
    assert _run(opset13.bitwise_and, [x, y], tmp_path).tolist() == [0b1000, 5]
    assert _run(opset13.bitwise_or, [x, y], tmp_path).tolist() == [0b1110, -1]
    assert _run(opset13.bitwise_xor, [x, y], tmp_path).tolist() == [0b0110, -6]
    assert _run(opset13.bitwise_not, [x], tmp_path).tolist() == [-13, 0]
    assert _run(opset13.bitwise_not, [np.array([0, 200], np.uint8)], tmp_path).tolist() == [255, 55]
    b = np.array([True, False])
    assert _run(opset13.bitwise_not, [b], tmp_path).tolist() == [False, True]
    assert _run(opset13.bitwise_xor, [b, np.array([True])], tmp_path).tolist() == [False, True]


def test_shifts_by_hand(tmp_path):
    def left(x, s):
        return _run(opset15.bitwise_left_shift, [x, s], tmp_path).tolist()

    def right(x, s):
        return _run(opset15.bitwise_right_shift, [x, s], tmp_path).tolist()

    i8 = np.array([-5] * 6, np.int8)
    amounts = np.array([1, 7, 8, 36, -1, -28], np.int8)  # -1 and -28 are 31 and 4 modulo 32
    assert left(i8, amounts) == [-10, -128, 0, -80, 0, -80]
    assert right(i8, amounts) == [-3, -1, -1, -1, -1, -1]  # arithmetic: the sign fills in
    u8 = np.array([200] * 4, np.uint8)
    assert right(u8, np.array([1, 7, 100, 255], np.uint8)) == [100, 1, 12, 0]
    assert left(u8, np.array([1, 8, 100, 3], np.uint8)) == [144, 0, 128, 64]  # 1600 % 256
    i32 = np.array([-5, -5, 1, 2**31 - 1], np.int32)
    assert left(i32, np.array([32, 33, 31, 1], np.int32)) == [-5, -10, -(2**31), -2]
    u32 = np.array([2**31, 7], np.uint32)
    assert right(u32, np.array([31, 33], np.uint32)) == [1, 3]  # logical, 33 is 1 mod 32
    # 64-bit: the amount modulo 64 (the reference kernel's x86 code; the plugin's is mod 32).
    i64 = np.array([-5, 1, -(2**40)], np.int64)
    assert left(i64, np.array([65, 40, 0], np.int64)) == [-10, 2**40, -(2**40)]
    assert right(i64, np.array([64, 3, 38], np.int64)) == [-5, 0, -4]
    u64 = np.array([2**63, 2**63], np.uint64)
    assert right(u64, np.array([63, 127], np.uint64)) == [1, 1]


def test_the_plugin_runs_64_bit_and_u32_as_i32(tmp_path):
    """The deviations the module docstring states, so that it is noticed when they go."""
    x, y = np.array([2**40 + 5], np.int64), np.array([2**40 + 3], np.int64)
    got, want = run_both(opset13.bitwise_and, [x, y], tmp_path)
    assert got.tolist() == [2**40 + 1] and want.tolist() == [1]
    s = np.array([33], np.int64)
    got, want = run_both(opset15.bitwise_left_shift, [np.array([1], np.int64), s], tmp_path)
    assert got.tolist() == [2**33] and want.tolist() == [2]
    x, s = np.array([2**32 - 16], np.uint32), np.array([2], np.uint32)
    got, want = run_both(opset15.bitwise_right_shift, [x, s], tmp_path)
    assert got.tolist() == [2**30 - 4] and want.tolist() == [2**32 - 4]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(INTEGERS), st.data())
def test_in_range_shifts_are_exact_arithmetic(et, data):
    """For 0 <= s < bits, ``x << s`` is ``x * 2**s`` wrapped to the type and ``x >> s``
    is ``floor(x / 2**s)``: Python's integers give every type's answer, 64-bit included."""
    dtype = _dtype(et)
    info, bits = np.iinfo(dtype), dtype.itemsize * 8
    x = data.draw(st.integers(int(info.min), int(info.max)))
    s = data.draw(st.integers(0, bits - 1))
    left = (x << s) % 2**bits
    if info.min < 0 and left >= 2 ** (bits - 1):
        left -= 2**bits
    xa, sa = np.array([x], dtype), np.array([s], dtype)
    assert shift(xa, sa, left=True).tolist() == [left]
    assert shift(xa, sa, left=False).tolist() == [x >> s]  # Python's >> floors


# --------------------------------------------------------------------------- shape rules


@pytest.mark.parametrize("op", sorted(LOGIC) + sorted(SHIFTS))
def test_shape_rule_matches_openvino_on_dynamic_dims(op):
    factory = {**LOGIC, **SHIFTS}[op]
    cases = [((2, Interval(0, None)), (Interval(1, 4), 1)), ((Interval(2, 5), 3), (3,)),
             (None, (4, 1)), ((1, Interval(0, 3)), (Interval(2, 6), Interval(1, 8)))]  # fmt: skip
    rule = resolve(op, "opset15")
    for a, b in cases:
        p = opset1.parameter(to_ov_shape(a), ov.Type.i32)
        q = opset1.parameter(to_ov_shape(b), ov.Type.i32)
        want = from_ov_shape(factory(p, q).get_output_partial_shape(0))
        infos = [TensorInfo(a, ELEMENT_TYPES["i32"]), TensorInfo(b, ELEMENT_TYPES["i32"])]
        (got,) = rule.infer(attrs_namespace({"auto_broadcast": "numpy"}), infos)
        assert got.shape == want and got.element_type.name == "i32", (a, b)


@pytest.mark.parametrize("op, et", [("BitwiseAnd", "f32"), ("BitwiseNot", "f16"),
                                    ("BitwiseLeftShift", "boolean"),
                                    ("BitwiseRightShift", "f32")])  # fmt: skip
def test_types_openvino_refuses_are_refused(op, et):
    factory = getattr(opset15, FACTORIES[op])
    params = [opset1.parameter([2], ov.Type(_dtype(et))) for _ in range(1 if "Not" in op else 2)]
    with pytest.raises(RuntimeError):
        factory(*params)
    infos = [TensorInfo((2,), ELEMENT_TYPES[et])] * len(params)
    attrs = attrs_namespace({} if "Not" in op else {"auto_broadcast": "numpy"})
    with pytest.raises(ShapeError, match=f"input 0 is {et}"):
        resolve(op, "opset15").infer(attrs, infos)


def test_mixed_types_and_clashing_shapes_are_refused():
    rule = resolve("BitwiseXor", "opset13")
    i8, u8 = ELEMENT_TYPES["i8"], ELEMENT_TYPES["u8"]
    with pytest.raises(ShapeError, match="different element types"):
        rule.infer(attrs_namespace({"auto_broadcast": "numpy"}),
                   [TensorInfo((2,), i8), TensorInfo((2,), u8)])  # fmt: skip
    with pytest.raises(ShapeError, match="do not broadcast"):
        rule.infer(attrs_namespace({"auto_broadcast": "none"}),
                   [TensorInfo((2, 3), i8), TensorInfo((3,), i8)])  # fmt: skip


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    p = opset1.parameter([2, 3], ov.Type.i32, name="in0")
    node = opset15.bitwise_left_shift(p, opset1.constant(np.int32([[1], [2]])))
    node.set_friendly_name("shl")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert irrun.validate(path) == []
    path.write_text(text.replace('auto_broadcast="numpy"', 'auto_broadcast="sideways"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'shl' (BitwiseLeftShift-v15)" in m and "auto_broadcast" in m for m in found), found
    path.write_text(text.replace('precision="I32"', 'precision="FP32"')
                        .replace('element_type="i32"', 'element_type="f32"'))  # fmt: skip
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'shl' (BitwiseLeftShift-v15)" in m and "input 0 is f32" in m for m in found), found


@pytest.mark.parametrize(("et", "amounts", "warned"), [
    ("i32", [0, 31], None), ("i32", [32, -1, 3], "-1, 32"), ("u8", [7, 8], "8"),
    ("i64", [63, 64], "64"), ("u16", [2], None),
])  # fmt: skip
def test_validate_warns_of_a_constant_shift_past_the_width(et, amounts, warned, tmp_path):
    for op, factory in SHIFTS.items():
        p = opset1.parameter([2, 3], getattr(ov.Type, et), name="in0")
        dtype = ELEMENT_TYPES[et].dtype
        node = factory(p, opset1.constant(np.resize(np.array(amounts), 3).astype(dtype)))
        node.set_friendly_name("sh")
        path = tmp_path / "m.xml"
        ov.save_model(ov.Model([node], [p]), path)
        found = [str(d) for d in irrun.validate(path)]
        assert not [d for d in irrun.validate(path) if d.level == "error"], found
        if warned is None:
            assert found == [], found
        else:
            assert len(found) == 1 and f"'sh' ({op}-v15)" in found[0], found
            bits = dtype.itemsize * 8
            assert f"shift amount {warned} is outside 0..{bits - 1} for {et}" in found[0]


def test_the_warned_shift_is_what_the_plugin_computes(tmp_path):
    # i32 amounts 32 and 33 act as 0 and 1 (x86), in the plugin and in irrun.
    x, s = np.array([5, -7, 9], np.int32), np.array([32, 33, 65], np.int32)
    got, want = run_both(opset15.bitwise_left_shift, [x, s], tmp_path)
    assert got.tolist() == want.tolist() == [5, -14, 18]
