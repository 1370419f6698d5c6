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


# --------------------------------------------------------------------------- element types

from support.typed import assert_not_taken, check_types, numbers, refused, run_typed, typed  # noqa: E402

from irrun.ir.element_types import ELEMENT_TYPES  # noqa: E402

TYPED = {**BINARY, "SquaredDifference": opset1.squared_difference}
# Each op's exact integer result, to pick operands whose results the type holds (OpenVINO
# wraps or saturates the others as irrun, computing u1..u6 and i4 in a byte, does not).
EXACT = {
    "Add": lambda a, b: a + b, "Subtract": lambda a, b: a - b, "Multiply": lambda a, b: a * b,
    "Divide": lambda a, b: a // b if b else None, "Maximum": max, "Minimum": min,
    "Power": lambda a, b: a**b if b >= 0 else None,
    "Mod": lambda a, b: int(np.fmod(a, b)) if b else None,
    "FloorMod": lambda a, b: a % b if b else None,
    "SquaredDifference": lambda a, b: (a - b) ** 2,
}  # fmt: skip
PACKED_RANGE = {"i4": (-8, 7), "u1": (0, 1), "u2": (0, 3), "u3": (0, 7), "u4": (0, 15),
                "u6": (0, 63)}  # fmt: skip
FAST_TYPES = ("f32", "f16", "bf16", "f8e8m0", "f4e2m1", "i64", "u8", "u3", "i4")


def _operands(op: str, t: str) -> tuple[np.ndarray, np.ndarray]:
    if t == "f8e8m0":
        return numbers(t), np.array([1, 2, 0.5, 0.25, 4, 1, 2, 0.5])
    if t in ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "f4e2m1"):
        return numbers(t), np.array([1, 2, 0.5, 3, -1, -1.5, 1, 0.5])  # no 0 ** -1
    if t in PACKED_RANGE:
        lo, hi = PACKED_RANGE[t]
    else:
        info = np.iinfo(ELEMENT_TYPES[t].dtype)
        lo, hi = int(info.min), int(info.max)
    pairs = []
    for a in range(max(lo, -4), min(hi, 7) + 1):
        for b in range(max(lo, -2), min(hi, 3) + 1):
            r = EXACT[op](a, b)
            # The plugin divides 8- and 16-bit integers in f32, truncating.
            inexact = op == "Divide" and a * b < 0 and a % b
            if r is not None and lo <= r <= hi and not inexact:
                pairs.append((a, b))
    picked = [pairs[i * len(pairs) // 8] for i in range(8)]
    return np.array([p[0] for p in picked], float), np.array([p[1] for p in picked], float)


def _typed_cases():
    for op in TYPED:
        for t in resolve(op, "opset1").input_types[0]:
            marks = () if t in FAST_TYPES else (pytest.mark.slow,)
            yield pytest.param(op, t, id=f"{op}-{t}", marks=marks)


@pytest.mark.parametrize(("op", "t"), list(_typed_cases()))
def test_every_declared_type_matches_openvino(op, t, tmp_path):
    """Each type the ports take (both the same): the reference kernels' values (the CPU
    plugin's where they have none), or their f32 (i32) values converted to the type by
    OpenVINO where it has no kernel of the type (f8, f4 and packed types)."""
    a, b = _operands(op, t)
    if op == "SquaredDifference" and t in ("i8", "u8"):
        # OpenVINO has no kernel of these: its reference refuses integers, its plugin's
        # 8-bit results are garbage.  By hand: the operands are picked to hold the result.
        got = run_typed(TYPED[op], [a, b], [t, t], tmp_path)
        assert got.tolist() == ((a - b) ** 2).astype(int).tolist()
        return
    check_types(TYPED[op], [a.reshape(2, 4), b.reshape(2, 4)], [t, t], tmp_path,
                rtol=BINARY_RTOL.get(op, 1e-6), atol=1e-6, what=op)


@pytest.mark.parametrize(("op", "port", "bad"), [
    ("Add", 0, "boolean"), ("Subtract", 1, "boolean"), ("Multiply", 0, "string"),
    ("Divide", 1, "nf4"), ("Maximum", 0, "boolean"), ("Minimum", 1, "string"),
    ("Power", 0, "nf4"), ("Mod", 0, "boolean"), ("FloorMod", 1, "boolean"),
    ("SquaredDifference", 0, "boolean"),
])  # fmt: skip
def test_a_type_not_taken_is_an_error_of_validate(op, port, bad, tmp_path):
    opdef = resolve(op, "opset1")
    assert bad not in opdef.input_types[port]
    types = ["f32", "f32"]
    types[1 - port] = "f64"  # the retyped port's type is its own; converted to f32

    def build(p, q):
        pair = [p, q]
        pair[1 - port] = opset1.convert(pair[1 - port], "f32")
        return TYPED[op](*pair)

    found = refused(build, types, port, bad, tmp_path)
    assert_not_taken(found, port, bad, opdef.label)


PROMOTABLE = resolve("ConvertPromoteTypes", "opset14").input_types


@pytest.mark.parametrize("other", ["same", "f32", "i32"])
@pytest.mark.parametrize("t", PROMOTABLE[0])
def test_convert_promote_types_takes_every_declared_type(t, other, tmp_path):
    """Each declared type with itself, f32 and i32 (promote_unsafe): OpenVINO's promoted type
    (its node's) and the values, 0 and 1, which every type holds."""
    from openvino import opset14

    t1 = t if other == "same" else other
    assert t1 in PROMOTABLE[1]
    values = [np.array([0.0, 1.0, 1.0]), np.array([1.0, 0.0, 1.0])]
    build = lambda p, q: opset14.convert_promote_types(p, q, True)  # noqa: E731
    node = build(opset1.parameter([3], getattr(ov.Type, t)),
                 opset1.parameter([3], getattr(ov.Type, t1)))  # fmt: skip
    want = node.get_output_element_type(0).get_type_name()
    p = opset1.parameter([3], getattr(ov.Type, t), name="in0")
    q = opset1.parameter([3], getattr(ov.Type, t1), name="in1")
    for param, name in ((p, "in0"), (q, "in1")):
        param.output(0).get_tensor().set_names({name})
    node = build(p, q)
    node.output(0).get_tensor().set_names({"out0"})
    node.output(1).get_tensor().set_names({"out1"})
    path = tmp_path / "promote.xml"
    ov.save_model(ov.Model([node.output(0), node.output(1)], [p, q]), path,
                  compress_to_fp16=False)  # fmt: skip
    got = irrun.load(path).run({"in0": typed(values[0], t), "in1": typed(values[1], t1)})
    for name, v in zip(("out0", "out1"), values, strict=True):
        assert got[name].dtype == ELEMENT_TYPES[want].dtype, (name, want)
        assert got[name].astype(np.float64).tolist() == v.tolist(), name


def test_convert_promote_types_refuses_what_openvino_refuses(tmp_path):
    from openvino import opset14

    opdef = resolve("ConvertPromoteTypes", "opset14")
    for bad in ("f8e8m0", "f4e2m1", "u3", "nf4", "string"):
        assert bad not in opdef.input_types[0]
        with pytest.raises(RuntimeError):
            opset14.convert_promote_types(opset1.parameter([2], getattr(ov.Type, bad)),
                                          opset1.parameter([2], ov.Type.f32))  # fmt: skip
    found = refused(lambda p, q: opset14.convert_promote_types(p, q, True), ["f32", "i32"], 1,
                    "u3", tmp_path)  # fmt: skip
    assert any("input 1 is u3, which ConvertPromoteTypes-v14 does not take" in m
               for m in found), found


@pytest.mark.parametrize("op", ["divide", "mod", "floor_mod"])
def test_validate_warns_of_a_constant_integer_divisor_with_zeros(op, tmp_path):
    # As ONNX's BitShift past the width becomes: x / Power(2, 40) is x / 0 in u32.
    import openvino as ov

    x = opset1.parameter([3], np.uint32, name="x")
    shift = opset1.power(opset1.constant(np.uint32([2, 2, 2])), opset1.constant(np.uint32([1, 40, 33])))
    node = getattr(opset1, op)(x, shift)
    node.set_friendly_name("shifted")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [x]), path)
    warned = [d for d in irrun.validate(path) if d.level == "warning" and d.layer.name == "shifted"]
    assert len(warned) == 1 and warned[0].message.startswith(
        "the divisor (input 1) holds 2 zeros: an integer division by zero")
    with pytest.raises(irrun.IrrunError, match=r"integer (division|remainder) by zero"):
        irrun.load(path).run(np.uint32([8, 8, 8]))
    # Floats divide by zero into infinities: nothing to warn of.
    y = opset1.parameter([3], np.float32, name="x")
    ov.save_model(ov.Model([opset1.divide(y, opset1.constant(np.float32([0, 1, 0])))], [y]), path)
    assert not [d for d in irrun.validate(path) if d.level == "warning"]
