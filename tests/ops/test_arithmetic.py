"""Binary arithmetic (Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, Mod,
FloorMod) against the CPU plugin and by hand.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances: exact for integer results and for Add, Subtract, Multiply, Maximum and
Minimum in f32 (one correctly rounded operation, same as the plugin); rtol 1e-6 for
Divide (the plugin may multiply by the reciprocal); rtol 1e-5, atol 1e-6 for Power;
one f16 ulp (1e-3) for f16.

Behaviour where irrun follows OpenVINO's specification and reference kernels
rather than the CPU plugin (hand-checked below, kept out of the differential
cases): 8-bit integer overflow wraps (the plugin saturates), integer Divide
floors when ``m_pythondiv`` is true (the plugin truncates, in f32), integer
division by zero is an error.
"""

from __future__ import annotations

import random
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from support.arrays import dtype_of

import irrun
from irrun.ir.element_types import of_array
from irrun.ir.registry import ShapeError, TensorInfo, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset4, opset5  # noqa: E402
from support.ov_oneop import assert_close, run_both, run_irrun  # noqa: E402

# --------------------------------------------------------------------------- binary ops

BINARY = {
    "Add": opset1.add, "Subtract": opset1.subtract, "Multiply": opset1.multiply,
    "Divide": opset1.divide, "Maximum": opset1.maximum, "Minimum": opset1.minimum,
    "Power": opset1.power, "Mod": opset1.mod, "FloorMod": opset1.floor_mod,
}  # fmt: skip
BINARY_RTOL = {"Divide": 1e-6, "Power": 1e-5}


def _broadcast_pair(rng: random.Random, mode: str) -> tuple[tuple, tuple]:
    rank = rng.randint(1, 4)
    a = tuple(rng.randint(1, 5) for _ in range(rank))
    if mode == "none":
        return a, a
    if mode == "numpy":
        b = list(a[rng.randint(0, rank - 1):]) if rng.random() < 0.5 else list(a)
        b = [1 if rng.random() < 0.4 else d for d in b]
        if rng.random() < 0.3:
            b = [rng.randint(1, 3), *b]  # b of the higher rank
        if rng.random() < 0.5:
            return tuple(b), a
        return a, tuple(b)
    start = 0  # pdpd as OpenVINO's IR means it: from axis 0
    length = rng.randint(0, rank - start)
    b = [1 if rng.random() < 0.4 else d for d in a[start:start + length]]
    return a, tuple(b)


def _binary_values(rng: np.random.Generator, op: str, dtype: str, shape, second: bool):
    if dtype in ("f32", "f16"):
        if op == "Power":
            # Positive bases, moderate exponents: no NaN from fractional powers.
            x = rng.uniform(0.1, 4, shape) if not second else rng.uniform(-3, 3, shape)
        else:
            x = rng.standard_normal(shape) * 8
            if op in ("Divide", "Mod", "FloorMod") and second:
                x = np.where(np.abs(x) < 0.1, 0.5, x)
            if op in ("Maximum", "Minimum"):
                x = np.round(x)  # ties between the inputs
        return x.astype(np.float16 if dtype == "f16" else np.float32)
    info = {"i32": (-1000, 1000), "i8": (-11, 11), "u8": (0, 15)}[dtype]
    lo, hi = info
    if op == "Divide":
        lo = 1  # the plugin truncates in f32: positive operands agree with floor
    if op == "Power":
        return rng.integers(0, 3 if second else 5, shape).astype(dtype_of(dtype))
    values = rng.integers(lo, hi, shape).astype(dtype_of(dtype))
    if op in ("Mod", "FloorMod") and second:
        values[values == 0] = 3  # a remainder by zero is an error in irrun
    return values


def _binary_cases():
    rng = random.Random(11)
    cases = []
    for op in BINARY:
        for i in range(9):
            mode = ("numpy", "pdpd", "none")[i % 3]
            dtype = ("f32", "f32", "f32", "f16", "i32", "f32", "i8", "f32", "u8")[i]
            if op in ("Subtract",) and dtype == "u8":
                dtype = "i32"  # u8 subtraction underflows: the plugin saturates
            if op in ("Mod", "FloorMod") and mode == "pdpd":
                # The plugin's JIT kernels refuse pdpd: Mod fails to compile and FloorMod
                # falls back to the reference kernel, whose float formula is fmod's.
                mode = "numpy"
            a, b = _broadcast_pair(rng, mode)
            cases.append(pytest.param(op, mode, dtype, a, b, id=f"{op}-{mode}-{dtype}-{i}"))
    return cases


@pytest.mark.parametrize(("op", "mode", "dtype", "a_shape", "b_shape"), _binary_cases())
def test_binary_matches_cpu(op, mode, dtype, a_shape, b_shape, tmp_path):
    rng = np.random.default_rng(zlib.crc32(repr((op, mode, dtype, a_shape, b_shape)).encode()))
    x = _binary_values(rng, op, dtype, a_shape, False)
    y = _binary_values(rng, op, dtype, b_shape, True)
    got, want = run_both(lambda p, q: BINARY[op](p, q, mode), [x, y], tmp_path)
    rtol = BINARY_RTOL.get(op, 0.0)
    if dtype == "f16":
        rtol = max(rtol, 1e-3)  # the plugin rounds to f16 once, as irrun does; ulp 1e-3
    assert_close(got, want, rtol=rtol, atol=1e-6 if rtol else 0, what=f"{op} {a_shape} {b_shape}")


def _divide_node(p, q, pythondiv: bool):
    node = opset1.divide(p, q)
    node.set_attribute("m_pythondiv", pythondiv)
    return node


def test_binary_by_hand(tmp_path):
    i32 = np.int32
    a, b = np.array([7, -7, 7, -7, 6], i32), np.array([2, 2, -2, -2, 3], i32)
    assert run_irrun(lambda p, q: _divide_node(p, q, True), [a, b], tmp_path).tolist() == [
        3, -4, -4, 3, 2]  # fmt: skip
    assert run_irrun(lambda p, q: _divide_node(p, q, False), [a, b], tmp_path).tolist() == [
        3, -3, -3, 3, 2]  # fmt: skip
    with pytest.raises(irrun.IrrunError, match="division by zero"):
        run_irrun(lambda p, q: _divide_node(p, q, True), [a, np.zeros(5, i32)], tmp_path)
    f = np.float32
    x, y = np.array([np.nan, 1, np.nan, -0.0, 0.0], f), np.array([1, np.nan, np.nan, 0.0, -0.0], f)
    got = run_irrun(opset1.maximum, [x, y], tmp_path)
    # max(NaN, 1) = 1, max(1, NaN) = NaN, and of equal zeros the second: the CPU's rule.
    assert np.array_equal(got, np.array([1, np.nan, np.nan, 0.0, -0.0], f), equal_nan=True)
    assert np.signbit(got[4]) and not np.signbit(got[3])
    base, exp = np.array([2, -2, 3, 1, -1, -1], i32), np.array([10, 3, -1, -5, -3, -2], i32)
    got = run_irrun(opset1.power, [base, exp], tmp_path)
    assert got.tolist() == [1024, -8, 0, 1, -1, 1]
    u8 = np.uint8
    got = run_irrun(opset1.add, [np.array([250, 3], u8), np.array([10, 4], u8)], tmp_path)
    assert got.tolist() == [4, 7]  # wraps, as the reference kernel does
    got = run_irrun(
        lambda p, q: opset1.multiply(p, q, "pdpd"),
        [np.arange(6, dtype=f).reshape(2, 3), np.array([[10], [100]], f)], tmp_path,
    )  # fmt: skip
    assert got.tolist() == [[0, 10, 20], [300, 400, 500]]


def test_elementwise_shape_errors(tmp_path):
    problems = [d.message for d in irrun.validate(_ir_with_bad_broadcast(tmp_path))]
    assert any("[2,3] and [3] do not broadcast (auto_broadcast=none)" in m for m in problems)


def _ir_with_bad_broadcast(tmp_path):
    """An Add with auto_broadcast=none on [2,3] and [3]: OpenVINO refuses to build it."""
    p = opset1.parameter([2, 3], ov.Type.f32, name="in0")
    q = opset1.parameter([3], ov.Type.f32, name="in1")
    path = tmp_path / "bad.xml"
    ov.save_model(ov.Model([opset1.add(p, q)], [p, q]), path)
    text = path.read_text().replace('auto_broadcast="numpy"', 'auto_broadcast="none"')
    path.write_text(text)
    return path


BOOLEAN_REFUSED = {
    "Add": opset1.add, "Subtract": opset1.subtract, "Multiply": opset1.multiply,
    "Divide": opset1.divide, "Maximum": opset1.maximum, "Minimum": opset1.minimum,
    "Power": opset1.power, "Mod": opset1.mod, "FloorMod": opset1.floor_mod, "Sqrt": opset1.sqrt,
    "Exp": opset1.exp, "Log": opset1.log, "Erf": opset1.erf, "Sin": opset1.sin, "Cos": opset1.cos,
    "Tanh": opset1.tanh, "Floor": opset1.floor, "Ceiling": opset1.ceiling, "Abs": opset1.absolute,
    "Negative": opset1.negative, "Sign": opset1.sign, "Sigmoid": opset1.sigmoid,
    "HSigmoid": opset5.hsigmoid, "HSwish": opset4.hswish, "ReLU": opset1.relu,
    "Clamp": lambda p: opset1.clamp(p, 0.0, 1.0),
}


@pytest.mark.parametrize("op", list(BOOLEAN_REFUSED))
def test_arithmetic_refuses_booleans_as_openvino_does(op):
    """OpenVINO's arithmetic takes no booleans (Subtract, Negative and Sign of booleans
    once reached NumPy, which refuses them too)."""
    p = opset1.parameter([3], ov.Type.boolean)
    build = BOOLEAN_REFUSED[op]
    nargs = 2 if op in BINARY else 1
    with pytest.raises(Exception, match=r"is_supported_et|is_integral_number"):
        build(*[p] * nargs)
    opdef = resolve(op, "opset5")
    attrs = SimpleNamespace(**{a.name: a.default for a in opdef.attrs})
    boolean = TensorInfo((3,), of_array(np.zeros(3, np.bool_)))
    with pytest.raises(ShapeError, match=f"is boolean, which {opdef.label} does not take"):
        opdef.infer(attrs, [boolean] * nargs)
