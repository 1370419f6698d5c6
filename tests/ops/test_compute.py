"""Compute ops (element-wise, Convolution, GroupConvolution, MatMul, BatchNormInference).

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances (``np.isclose``-style, atol relative to the output's largest magnitude
where noted), and why:

* exact: integer results; Add, Subtract, Multiply, Maximum, Minimum, Abs, ReLU,
  Clamp in f32 (one correctly rounded operation, same as the plugin).
* rtol 1e-6: Divide (the plugin may multiply by the reciprocal), HSigmoid.
* rtol 1e-5, atol 1e-6: Power, Sqrt, Exp, Sigmoid, Tanh, HSwish, Swish, and
  BatchNormInference (the plugin folds it into one scale and shift).
* rtol 1e-5, atol 1e-6: Gelu; inputs in [-10, 10].  The plugin's erf
  approximation is off by up to ~2e-7 absolute (irrun's Gelu-erf is within
  1.2e-7 relative of the true value, checked against ``math.erfc`` below).
* rtol 1e-4, atol 1e-5 * max|out|: Convolution, GroupConvolution (different
  summation order); rtol 1e-5, atol 1e-6 * max|out|: MatMul.

Behaviour where irrun follows OpenVINO's specification and reference kernels
rather than the CPU plugin (hand-checked below, kept out of the differential
cases): 8-bit integer overflow wraps (the plugin saturates), integer Divide
floors when ``m_pythondiv`` is true (the plugin truncates, in f32), integer
division by zero is an error.
"""

from __future__ import annotations

import importlib
import math
import random
import zlib
from types import SimpleNamespace

import numpy as np
import pytest
from support.ov_shapes import from_ov_shape

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import of_array
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops._shapes import broadcast_shapes
from irrun.ops.activations import gelu_erf
from irrun.ops.unary import erf

ov = pytest.importorskip("openvino")
from openvino import opset1, opset2, opset3, opset4, opset5, opset6, opset7, opset9, opset11  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG, assert_close, run_both, run_saved  # noqa: E402
from support.ov_oneop import one_op_model as _one_op_model  # noqa: E402

# --------------------------------------------------------------------------- running


# --------------------------------------------------------------------------- versions


# Op type in the IR -> the Python factory name, to read OpenVINO's opset tables.
FACTORIES = {
    "Convolution": "convolution", "GroupConvolution": "group_convolution", "Add": "add",
    "Subtract": "subtract", "Multiply": "multiply", "Divide": "divide", "Maximum": "maximum",
    "Minimum": "minimum", "Power": "power", "Abs": "abs", "Sqrt": "sqrt", "Exp": "exp",
    "Clamp": "clamp", "ReLU": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "HSwish": "hswish",
    "HSigmoid": "hsigmoid", "Swish": "swish", "Gelu": "gelu", "MatMul": "matmul",
    "BatchNormInference": "batch_norm_inference", "Negative": "negative", "Log": "log",
    "Erf": "erf", "Sin": "sin", "Cos": "cos", "Floor": "floor", "Ceiling": "ceiling",
    "Sign": "sign", "Elu": "elu", "SoftPlus": "softplus", "Mish": "mish",
    "SoftSign": "softsign", "PRelu": "prelu", "Mod": "mod", "FloorMod": "floor_mod",
    "Equal": "equal", "NotEqual": "not_equal", "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "LogicalNot": "logical_not",
    "LogicalAnd": "logical_and", "LogicalOr": "logical_or", "LogicalXor": "logical_xor",
    "Select": "select", "LogSoftmax": "log_softmax", "TopK": "topk",
    "ConvolutionBackpropData": "convolution_backprop_data",
    "GroupConvolutionBackpropData": "group_convolution_backprop_data",
}  # fmt: skip


def openvino_version(op_type: str, opset: int) -> int | None:
    """The opset that introduced the version opsetN holds (None: not in opsetN)."""
    module = importlib.import_module(f"openvino.opset{opset}")
    factory = getattr(module, FACTORIES[op_type], None)
    if factory is None:
        return None
    return int(factory.__module__.split(".")[-2].removeprefix("opset"))


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    for n in range(1, 17):
        want = openvino_version(op_type, n)
        if want is None:
            with pytest.raises(LookupError):
                resolve(op_type, f"opset{n}")
        else:
            assert resolve(op_type, f"opset{n}").since_opset == want, (op_type, n)


def test_versions_by_hand():
    assert resolve("Gelu", "opset6").label == "Gelu-v2"
    assert resolve("Gelu", "opset7").label == "Gelu-v7"
    assert resolve("BatchNormInference", "opset4").label == "BatchNormInference-v1"
    assert resolve("BatchNormInference", "opset16").label == "BatchNormInference-v5"
    assert resolve("relu", "opset1").type == "ReLU"
    assert resolve("HSigmoid", "opset5").label == "HSigmoid-v5"
    with pytest.raises(LookupError):
        resolve("HSwish", "opset3")


# --------------------------------------------------------------------------- broadcasting shapes


def _ov_dim(d):
    if isinstance(d, int):
        return ov.Dimension(d)
    return ov.Dimension(d.lo, -1 if d.hi is None else d.hi)




def _random_dim(rng: random.Random):
    kind = rng.random()
    if kind < 0.55:
        return rng.choice((1, 1, 2, 3, 4))
    lo = rng.choice((0, 1, 2, 3))
    hi = rng.choice((None, lo, lo + 1, lo + 3))
    return lo if hi == lo else Interval(lo, hi)


def _random_shape(rng: random.Random) -> tuple | None:
    if rng.random() < 0.05:
        return None  # unknown rank
    return tuple(_random_dim(rng) for _ in range(rng.randint(0, 4)))


def test_broadcast_shapes_match_openvino():
    rng = random.Random(7)
    checked = rejected = 0
    for _ in range(600):
        mode = rng.choice(("numpy", "pdpd", "none"))
        a, b = (_random_shape(rng) for _ in range(2))
        if mode == "none" and a is not None and b is not None and rng.random() < 0.5:
            b = a
        pa = ov.PartialShape.dynamic() if a is None else ov.PartialShape([_ov_dim(d) for d in a])
        pb = ov.PartialShape.dynamic() if b is None else ov.PartialShape([_ov_dim(d) for d in b])
        try:
            node = opset1.add(
                opset1.parameter(pa, ov.Type.f32), opset1.parameter(pb, ov.Type.f32), mode
            )
            want = from_ov_shape(node.get_output_partial_shape(0))
        except RuntimeError:
            with pytest.raises(ShapeError):
                broadcast_shapes(a, b, mode)
            rejected += 1
            continue
        assert broadcast_shapes(a, b, mode) == want, (a, b, mode)
        checked += 1
    assert checked > 200 and rejected > 50


def test_broadcast_shapes_by_hand():
    assert broadcast_shapes((8, 1, 6, 1), (7, 1, 5)) == (8, 7, 6, 5)
    assert broadcast_shapes((2, 3, 4, 5), (3, 4), "pdpd", axis=1) == (2, 3, 4, 5)
    assert broadcast_shapes((2, 3, 4, 5), (2, 3, 1), "pdpd") == (2, 3, 4, 5)
    with pytest.raises(ShapeError, match=r"\[2,3\] and \[3,2\]"):
        broadcast_shapes((2, 3), (3, 2), "numpy")
    with pytest.raises(ShapeError, match="none"):
        broadcast_shapes((2, 3), (1, 3), "none")


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


def dtype_of(name: str) -> np.dtype:
    return np.dtype({"f32": np.float32, "f16": np.float16, "i32": np.int32, "i8": np.int8,
                     "u8": np.uint8}[name])  # fmt: skip


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


def _run_irrun(build, inputs, tmp_path):
    return run_saved(_one_op_model(build, inputs), inputs, tmp_path)[0]


def _divide_node(p, q, pythondiv: bool):
    node = opset1.divide(p, q)
    node.set_attribute("m_pythondiv", pythondiv)
    return node


def test_binary_by_hand(tmp_path):
    i32 = np.int32
    a, b = np.array([7, -7, 7, -7, 6], i32), np.array([2, 2, -2, -2, 3], i32)
    assert _run_irrun(lambda p, q: _divide_node(p, q, True), [a, b], tmp_path).tolist() == [
        3, -4, -4, 3, 2]  # fmt: skip
    assert _run_irrun(lambda p, q: _divide_node(p, q, False), [a, b], tmp_path).tolist() == [
        3, -3, -3, 3, 2]  # fmt: skip
    with pytest.raises(irrun.IrrunError, match="division by zero"):
        _run_irrun(lambda p, q: _divide_node(p, q, True), [a, np.zeros(5, i32)], tmp_path)
    f = np.float32
    x, y = np.array([np.nan, 1, np.nan, -0.0, 0.0], f), np.array([1, np.nan, np.nan, 0.0, -0.0], f)
    got = _run_irrun(opset1.maximum, [x, y], tmp_path)
    # max(NaN, 1) = 1, max(1, NaN) = NaN, and of equal zeros the second: the CPU's rule.
    assert np.array_equal(got, np.array([1, np.nan, np.nan, 0.0, -0.0], f), equal_nan=True)
    assert np.signbit(got[4]) and not np.signbit(got[3])
    base, exp = np.array([2, -2, 3, 1, -1, -1], i32), np.array([10, 3, -1, -5, -3, -2], i32)
    got = _run_irrun(opset1.power, [base, exp], tmp_path)
    assert got.tolist() == [1024, -8, 0, 1, -1, 1]
    u8 = np.uint8
    got = _run_irrun(opset1.add, [np.array([250, 3], u8), np.array([10, 4], u8)], tmp_path)
    assert got.tolist() == [4, 7]  # wraps, as the reference kernel does
    got = _run_irrun(
        lambda p, q: opset1.multiply(p, q, "pdpd"),
        [np.arange(6, dtype=f).reshape(2, 3), np.array([[10], [100]], f)], tmp_path,
    )  # fmt: skip
    assert got.tolist() == [[0, 10, 20], [300, 400, 500]]


# --------------------------------------------------------------------------- unary ops

UNARY = {
    "Abs": (opset1.abs, 0.0), "Sqrt": (opset1.sqrt, 1e-5), "Exp": (opset1.exp, 1e-5),
    "ReLU": (opset1.relu, 0.0), "Sigmoid": (opset1.sigmoid, 1e-5), "Tanh": (opset1.tanh, 1e-5),
    "HSwish": (opset4.hswish, 1e-5), "HSigmoid": (opset5.hsigmoid, 1e-6),
    "Swish": (opset4.swish, 1e-5),
    "Swish-beta": (lambda p: opset4.swish(p, opset1.constant(np.float32(0.35))), 1e-5),
    "Gelu-2": (opset2.gelu, 1e-5), "Gelu-7-erf": (lambda p: opset7.gelu(p, "erf"), 1e-5),
    "Gelu-7-tanh": (lambda p: opset7.gelu(p, "tanh"), 1e-5),
    "Clamp": (lambda p: opset1.clamp(p, -2.5, 3.75), 0.0),
    "Clamp-wide": (lambda p: opset1.clamp(p, -1e30, 0.1), 0.0),
    "Negative": (opset1.negative, 0.0), "Sign": (opset1.sign, 0.0),
    "Floor": (opset1.floor, 0.0), "Ceiling": (opset1.ceiling, 0.0),
    "Log": (opset1.log, 1e-5), "Erf": (opset1.erf, 1e-5), "Sin": (opset1.sin, 1e-5),
    "Cos": (opset1.cos, 1e-5), "Elu": (lambda p: opset1.elu(p, 0.7), 1e-5),
    "SoftPlus": (opset4.softplus, 1e-5), "Mish": (opset4.mish, 1e-5),
    "SoftSign": (opset9.softsign, 1e-5),
}  # fmt: skip
FLOAT_ONLY = {"Swish", "Swish-beta", "Gelu-2", "Gelu-7-erf", "Gelu-7-tanh", "SoftPlus", "Mish",
              "SoftSign"}  # fmt: skip


def _unary_input(rng: np.random.Generator, name: str, dtype: str) -> np.ndarray:
    if dtype == "i32":
        return rng.integers(-8, 12, (3, 17)).astype(np.int32)
    x = rng.uniform(-10, 10, (4, 5, 13))
    if name == "Exp":
        x = x * 8  # up to overflow
    if name in ("Sqrt", "Log"):
        x = np.abs(x) * 100
    if name in ("Floor", "Ceiling", "Sign"):
        x = np.round(x * 2) / 2  # whole and half numbers, exactly
    if name.startswith(("HS", "Clamp", "ReLU")):
        x = np.round(x * 4) / 4  # the kinks at -3, 3, 0 and the bounds, exactly
    x = x.astype(np.float32)
    if name not in ("Sqrt", "Exp"):
        x.flat[:3] = (0.0, -0.0, 1e-30)
    return x.astype(np.float16) if dtype == "f16" else x


def _unary_cases():
    for name in UNARY:
        for dtype in ("f32", "f16", "i32"):
            if dtype == "i32" and name in FLOAT_ONLY:
                continue
            yield pytest.param(name, dtype, id=f"{name}-{dtype}")


@pytest.mark.parametrize(("name", "dtype"), list(_unary_cases()))
def test_unary_matches_cpu(name, dtype, tmp_path):
    build, rtol = UNARY[name]
    x = _unary_input(np.random.default_rng(len(name) * 31 + len(dtype)), name, dtype)
    if dtype == "f16":
        rtol = max(rtol, 1e-3)
        # OpenVINO's Python swish() adds an f32 beta of 1, which an f16 input refuses.
        beta = {"Swish": 1.0, "Swish-beta": 0.35}.get(name)
        if beta is not None:
            build = lambda p: opset4.swish(p, opset1.constant(np.float16(beta)))  # noqa: E731
    got, want = run_both(build, [x], tmp_path)
    assert_close(got, want, rtol=rtol, atol=1e-6 if rtol else 0, what=name)


def test_unary_by_hand(tmp_path):
    f = np.float32
    x = np.array([np.nan, -0.0, -4.0, -3.0, 0.0, 1.5, 3.0, 7.0], f)
    relu = _run_irrun(opset1.relu, [x], tmp_path)
    assert relu.tolist() == [0, 0, 0, 0, 0, 1.5, 3, 7]  # NaN gives 0
    hsig = _run_irrun(opset5.hsigmoid, [x[2:]], tmp_path)
    assert np.allclose(hsig, [0, 0, 0.5, 0.75, 1, 1], rtol=0, atol=1e-7)
    hswish = _run_irrun(opset4.hswish, [x[2:]], tmp_path)
    assert np.allclose(hswish, [0, 0, 0, 1.125, 3, 7], rtol=0, atol=1e-6)
    clamp = _run_irrun(lambda p: opset1.clamp(p, -1, 2), [x], tmp_path)
    assert clamp[0] == -1 and np.signbit(clamp[1])  # NaN becomes min; -0.0 stays
    ints = np.array([-7, -2, 0, 2, 3, 9], np.int32)
    assert _run_irrun(lambda p: opset1.clamp(p, -2.5, 3.5), [ints], tmp_path).tolist() == [
        -2, -2, 0, 2, 3, 3]  # fmt: skip
    assert _run_irrun(opset1.sqrt, [ints[3:]], tmp_path).tolist() == [1, 2, 3]  # round(1.41, 1.73)
    assert _run_irrun(opset1.sigmoid, [ints], tmp_path).tolist() == [0, 0, 0, 1, 1, 1]  # 0.5 -> 0
    swish = _run_irrun(lambda p: opset4.swish(p, opset1.constant(f(2))), [np.array([1], f)],
                       tmp_path)  # fmt: skip
    assert np.isclose(swish[0], 1 / (1 + math.exp(-2)), rtol=1e-6)
    g = _run_irrun(lambda p: opset7.gelu(p, "tanh"), [np.array([1], f)], tmp_path)
    assert np.isclose(g[0], 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715)), rtol=1e-6)


def test_sign_negative_floor_elu_by_hand(tmp_path):
    f = np.float32
    x = np.array([np.nan, -np.inf, -2.5, -0.0, 0.0, 1e-30, 3.0], f)
    sign = _run_irrun(opset1.sign, [x], tmp_path)
    assert np.isnan(sign[0]) and sign[1:].tolist() == [-1, -1, 0, 0, 1, 1]
    assert not np.signbit(sign[3])  # -0.0 gives +0.0, as in the plugin
    neg = _run_irrun(opset1.negative, [x], tmp_path)
    assert neg[1:].tolist() == [np.inf, 2.5, 0, 0, float(f(-1e-30)), -3]
    assert not np.signbit(neg[3]) and np.signbit(neg[4])
    ints = np.array([-(2**31), -7, 0, 2**31 - 1], np.int32)
    assert _run_irrun(opset1.negative, [ints], tmp_path).tolist() == [-(2**31), 7, 0, -(2**31) + 1]
    # Integers go through f32, where int32's maximum rounds up to 2**31 and overflows.
    assert _run_irrun(opset1.floor, [ints], tmp_path).tolist() == [-(2**31), -7, 0, -(2**31)]
    assert _run_irrun(opset1.sign, [np.array([0, 3, 255], np.uint8)], tmp_path).tolist() == [
        0, 1, 1]  # fmt: skip
    elu = _run_irrun(lambda p: opset1.elu(p, 0.5), [np.array([-1.0, 0.0, 2.0], f)], tmp_path)
    assert np.allclose(elu, [0.5 * (math.exp(-1) - 1), 0, 2], rtol=1e-6, atol=0)


def test_negative_of_unsigned_is_refused(tmp_path):
    p = opset1.parameter([3], ov.Type.f32, name="in0")
    model = ov.Model([opset1.negative(p)], [p])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    text = path.read_text().replace('element_type="f32"', 'element_type="u8"').replace(
        "<precision>FP32</precision>", "<precision>U8</precision>")  # fmt: skip
    path.write_text(text.replace('precision="FP32"', 'precision="U8"'))
    with pytest.raises(irrun.IrrunError, match="Negative needs a signed input, got u8"):
        irrun.load(path)


def test_erf_accuracy():
    xs = np.concatenate([np.linspace(-6, 6, 2401), [1e-30, -1e-8, 0.4999, 0.5, 0.5001]])
    want = np.array([math.erf(v) for v in xs.astype(np.float32).astype(float)])
    got = erf(xs.astype(np.float32)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-37)


# Slope shapes OpenVINO accepts for an input of (2, 3, 4, 5): along axis 1 (a 1-D slope
# as long as it), or broadcast as NumPy does.
PRELU_SLOPES = [(3,), (5,), (1,), (), (1, 3, 1, 1), (3, 1, 1), (4, 5), (3, 4, 5), (2, 3, 4, 5)]


@pytest.mark.parametrize("dtype", ["f32", "f16", "i32"])
@pytest.mark.parametrize("slope_shape", PRELU_SLOPES, ids=str)
def test_prelu_matches_cpu(slope_shape, dtype, tmp_path):
    rng = np.random.default_rng(len(slope_shape) * 7 + len(dtype))
    np_type = {"f32": np.float32, "f16": np.float16, "i32": np.int32}[dtype]
    x = (rng.uniform(-8, 8, (2, 3, 4, 5)) * (1 if dtype != "i32" else 4)).astype(np_type)
    slope = rng.uniform(-2, 2, slope_shape).astype(np_type)
    if dtype == "i32":
        slope = rng.integers(-3, 4, slope_shape).astype(np_type)
    got, want = run_both(lambda p: opset1.prelu(p, opset1.constant(slope)), [x], tmp_path)
    assert_close(got, want, rtol=1e-3 if dtype == "f16" else 0.0, what=str(slope_shape))


def test_prelu_by_hand(tmp_path):
    x = np.array([[np.nan, -0.0, -2.0], [0.0, -4.0, 3.0]], np.float32)
    slope = np.array([-0.5, 0.25], np.float32)
    got = _run_irrun(lambda p: opset1.prelu(p, opset1.constant(np.float32([0.5, -1, 2]))), [x],
                     tmp_path)  # fmt: skip
    assert np.isnan(got[0, 0]) and np.signbit(got[0, 1])  # NaN and -0.0 stay
    assert got[0, 2] == -4 and got[1].tolist() == [0, 4, 3]
    chw = np.full((1, 2, 2, 2), -2.0, np.float32)
    got = _run_irrun(lambda p: opset1.prelu(p, opset1.constant(slope)), [chw], tmp_path)
    assert got[0, :, 0, 0].tolist() == [1, -0.5]  # a slope per channel
    with pytest.raises(irrun.IrrunError, match=r"slope \[2\] does not broadcast onto the input"):
        _run_irrun(lambda p: opset1.prelu(p, opset1.constant(slope)), [x.reshape(3, 2)[:, :1]],
                   tmp_path)  # fmt: skip


def test_gelu_erf_accuracy():
    # f32 work: relative error 3e-6 where the value is not tiny (x > -5); beyond, rounding
    # z*z in f32 costs up to ~z*z * 2^-22 relative, on values below 1.5e-6; f64 work: 2e-7.
    xs = np.linspace(-12, 12, 24001).astype(np.float32)
    want = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in xs.astype(float)])
    got = gelu_erf(xs).astype(np.float64)
    near = xs > -5
    np.testing.assert_allclose(got[near], want[near], rtol=3e-6, atol=1e-37)
    np.testing.assert_allclose(got[~near], want[~near], rtol=3e-5, atol=1e-37)
    np.testing.assert_allclose(gelu_erf(xs.astype(np.float64)), want, rtol=2e-7, atol=1e-300)
    edges = gelu_erf(np.array([-0.0, 0.0, np.inf, -np.inf, np.nan], np.float32))
    assert edges[:2].tolist() == [0.0, 0.0] and edges[2] == np.inf
    assert edges[3] == 0 and np.isnan(edges[4])


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


# --------------------------------------------------------------------------- convolution


def _conv_case(rng: random.Random, grouped: bool):
    n = rng.choice((1, 2, 2, 3))
    spatial = [rng.randint(3, 9 if n < 3 else 6) for _ in range(n)]
    groups = rng.choice((1, 2, 3)) if grouped else 1
    depthwise = grouped and rng.random() < 0.4
    ci = 1 if depthwise else rng.randint(1, 3)
    co = 1 if depthwise else rng.randint(1, 4)
    kernel = [rng.randint(1, 3) for _ in range(n)]
    strides = [rng.choice((1, 1, 2, 3)) for _ in range(n)]
    dilations = [rng.choice((1, 1, 2)) for _ in range(n)]
    auto_pad = rng.choice(("explicit", "explicit", "valid", "same_upper", "same_lower"))
    pads_begin = [rng.randint(0, 2) for _ in range(n)]
    pads_end = [rng.randint(0, 2) for _ in range(n)]
    for i in range(n):  # the dilated kernel must fit the (unpadded for valid) input
        while dilations[i] * (kernel[i] - 1) + 1 > spatial[i]:
            kernel[i] -= 1
    return SimpleNamespace(
        n=n, batch=rng.randint(1, 2), spatial=spatial, groups=groups, ci=ci, co=co,
        kernel=kernel, strides=strides, dilations=dilations, auto_pad=auto_pad,
        pads_begin=pads_begin, pads_end=pads_end, grouped=grouped,
    )  # fmt: skip


CONV_CASES = [_conv_case(random.Random(s), grouped=s % 2 == 1) for s in range(60)]


CONV_IDS = [
    f"{'g' if c.grouped else ''}conv{c.n}d-{c.auto_pad}-{i}" for i, c in enumerate(CONV_CASES)
]


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_convolution_matches_cpu(case, tmp_path):
    rng = np.random.default_rng(zlib.crc32(str(vars(case)).encode()))
    x = rng.standard_normal((case.batch, case.groups * case.ci, *case.spatial)).astype(np.float32)
    if case.grouped:
        w_shape = (case.groups, case.co, case.ci, *case.kernel)
    else:
        w_shape = (case.co, case.ci, *case.kernel)
    w = rng.standard_normal(w_shape).astype(np.float32)
    geometry = (case.strides, case.pads_begin, case.pads_end, case.dilations, case.auto_pad)
    factory = opset1.group_convolution if case.grouped else opset1.convolution
    got, want = run_both(lambda p: factory(p, opset1.constant(w), *geometry), [x], tmp_path)
    assert_close(got, want, rtol=1e-4, atol=1e-5, scaled_atol=True, what=str(vars(case)))
    # The reference kernel alone (a run may take a fast kernel): the same tolerance.
    op = resolve("GroupConvolution" if case.grouped else "Convolution", "opset1")
    a = SimpleNamespace(strides=case.strides, dilations=case.dilations, auto_pad=case.auto_pad,
                        pads_begin=case.pads_begin, pads_end=case.pads_end)  # fmt: skip
    (alone,) = op.kernel(a, x, w)
    assert_close(alone, want, rtol=1e-4, atol=1e-5, scaled_atol=True, what=str(vars(case)))


def test_convolution_cases_cover_the_attributes():
    assert {c.n for c in CONV_CASES} == {1, 2, 3}
    assert {c.auto_pad for c in CONV_CASES} == {"explicit", "valid", "same_upper", "same_lower"}
    assert any(c.grouped and c.ci == c.co == 1 for c in CONV_CASES)
    assert any(c.grouped and c.ci > 1 and c.groups > 1 for c in CONV_CASES)
    assert any(max(c.strides) > 1 and max(c.dilations) > 1 for c in CONV_CASES)


def _backprop_case(rng: random.Random, grouped: bool):
    n = rng.choice((1, 2, 2, 3))
    groups = rng.choice((1, 2, 3)) if grouped else 1
    strides = [rng.choice((1, 2, 2, 3)) for _ in range(n)]
    dilations = [rng.choice((1, 1, 2)) for _ in range(n)]
    case = SimpleNamespace(
        n=n, batch=rng.randint(1, 2), spatial=[rng.randint(1, 6 if n < 3 else 4) for _ in range(n)],
        groups=groups, ci=rng.randint(1, 3), co=rng.randint(1, 3),
        kernel=[rng.randint(1, 4) for _ in range(n)], strides=strides, dilations=dilations,
        auto_pad=rng.choice(("explicit", "explicit", "valid", "same_upper", "same_lower")),
        pads_begin=[rng.randint(0, 2) for _ in range(n)],
        pads_end=[rng.randint(0, 2) for _ in range(n)],
        output_padding=[rng.randint(0, s - 1) for s in strides],
        output_shape=None, grouped=grouped,
    )  # fmt: skip
    if rng.random() < 0.4:
        full = [s * (i - 1) + d * (k - 1) + 1 for s, i, d, k in
                zip(strides, case.spatial, dilations, case.kernel, strict=True)]  # fmt: skip
        case.output_shape = [max(1, f + rng.randint(-3, 2)) for f in full]
    return case


def _backprop_node(p, w, case):
    factory = (opset1.group_convolution_backprop_data if case.grouped
               else opset1.convolution_backprop_data)  # fmt: skip
    shape = None if case.output_shape is None else opset1.constant(np.int64(case.output_shape))
    return factory(p, opset1.constant(w), case.strides, shape, case.pads_begin, case.pads_end,
                   case.dilations, case.auto_pad, case.output_padding)  # fmt: skip


def _backprop_weights(case, rng) -> np.ndarray:
    if case.grouped:
        return rng.standard_normal((case.groups, case.ci, case.co, *case.kernel))
    return rng.standard_normal((case.ci, case.co, *case.kernel))


def _backprop_cases(count: int) -> list[SimpleNamespace]:
    """Drawn cases that OpenVINO builds and its CPU plugin compiles (oneDNN refuses
    some groupings of stride, dilation and pads that irrun runs)."""
    found, seed = [], 0
    while len(found) < count:
        case = _backprop_case(random.Random(seed), grouped=seed % 2 == 1)
        seed += 1
        p = opset1.parameter([case.batch, case.groups * case.ci, *case.spatial], ov.Type.f32)
        w = _backprop_weights(case, np.random.default_rng(0)).astype(np.float32)
        try:
            CORE.compile_model(ov.Model([_backprop_node(p, w, case)], [p]), "CPU", CPU_CONFIG)
        except RuntimeError:
            continue
        found.append(case)
    return found


BACKPROP_CASES = _backprop_cases(60)


@pytest.mark.parametrize("case", BACKPROP_CASES, ids=[
    f"{'g' if c.grouped else ''}deconv{c.n}d-{c.auto_pad}-{'shape' if c.output_shape else 'pads'}"
    f"-{i}" for i, c in enumerate(BACKPROP_CASES)])  # fmt: skip
def test_convolution_backprop_matches_cpu(case, tmp_path):
    rng = np.random.default_rng(len(str(vars(case))))
    dtype = np.float16 if case.batch == 2 and case.n == 1 else np.float32
    x = rng.standard_normal((case.batch, case.groups * case.ci, *case.spatial)).astype(dtype)
    w = _backprop_weights(case, rng).astype(dtype)
    got, want = run_both(lambda p: _backprop_node(p, w, case), [x], tmp_path)
    tol = 2e-3 if dtype == np.float16 else 1e-4
    assert_close(got, want, rtol=tol, atol=tol / 10, scaled_atol=True, what=str(vars(case)))


def test_convolution_backprop_cases_cover_the_attributes():
    cases = BACKPROP_CASES
    assert {c.n for c in cases} == {1, 2, 3}
    for shaped in (True, False):
        assert {c.auto_pad for c in cases if (c.output_shape is not None) == shaped} == {
            "explicit", "valid", "same_upper", "same_lower"}  # fmt: skip
    assert any(c.grouped and c.groups > 1 for c in cases)
    assert any(max(c.output_padding) > 0 for c in cases)
    assert any(c.batch == 2 and c.n == 1 for c in cases)  # f16


def test_convolution_backprop_by_hand(tmp_path):
    # 1-D, stride 2: each input scatters [1, 10, 100] two positions after the last.
    x = np.array([1, 2, 3], np.float32).reshape(1, 1, 3)
    w = np.array([1, 10, 100], np.float32).reshape(1, 1, 3)
    full = [1, 10, 102, 20, 203, 30, 300]

    def run(**kw):
        args = dict(strides=[2], pads_begin=[0], pads_end=[0], dilations=[1],
                    auto_pad="explicit", output_padding=[0])  # fmt: skip
        args.update(kw)
        shape = args.pop("output_shape", None)
        node = lambda p: opset1.convolution_backprop_data(  # noqa: E731
            p, opset1.constant(w), output_shape=shape and opset1.constant(np.int64(shape)),
            **args)  # fmt: skip
        return _run_irrun(node, [x], tmp_path)[0, 0].tolist()

    assert run() == full
    assert run(pads_begin=[1], pads_end=[2]) == full[1:-2]
    assert run(pads_begin=[1], pads_end=[2], output_padding=[1]) == full[1:-1]
    assert run(auto_pad="valid", output_padding=[1]) == [*full, 0]
    # With output_shape, same_upper puts the larger half of the surplus first.
    assert run(auto_pad="same_upper", output_shape=[4]) == full[2:6]
    assert run(auto_pad="same_lower", output_shape=[4]) == full[1:5]
    assert run(auto_pad="same_lower", output_shape=[9]) == [*full, 0, 0]


def test_convolution_backprop_attributes_are_checked(tmp_path):
    p = opset1.parameter([1, 2, 3, 3], ov.Type.f32, name="in0")
    w = opset1.constant(np.ones((2, 1, 2, 2), np.float32))
    node = opset1.convolution_backprop_data(p, w, [2, 2], output_padding=[1, 0])
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert 'output_padding="1, 0"' in text
    for bad, says in (('output_padding="1"', "output_padding has 1 values [1] but strides has 2"),
                      ('output_padding="1, -1"', "output_padding must not be negative")):
        path.write_text(text.replace('output_padding="1, 0"', bad))
        assert any(says in d.message for d in irrun.validate(path)), bad


def test_convolution_by_hand(tmp_path):
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    w = np.array([[1, 0], [0, -1]], np.float32).reshape(1, 1, 2, 2)
    got = _run_irrun(
        lambda p: opset1.convolution(p, opset1.constant(w), [2, 2], [0, 0], [0, 0], [1, 1]),
        [x], tmp_path,
    )  # fmt: skip
    assert got.tolist() == [[[[-5.0, -5.0], [-5.0, -5.0]]]]  # x[i,j] - x[i+1,j+1] = -5
    # Depthwise with same_upper: each channel summed over its 3x3 neighbourhood.
    x = np.ones((1, 2, 3, 3), np.float32)
    w = np.stack([np.ones((1, 1, 3, 3)), 2 * np.ones((1, 1, 3, 3))]).astype(np.float32)
    got = _run_irrun(
        lambda p: opset1.group_convolution(p, opset1.constant(w), [1, 1], [0, 0], [0, 0],
                                           [1, 1], "same_upper"),
        [x], tmp_path,
    )  # fmt: skip
    counts = np.array([[4, 6, 4], [6, 9, 6], [4, 6, 4]], np.float32)
    assert np.array_equal(got[0, 0], counts) and np.array_equal(got[0, 1], 2 * counts)


# --------------------------------------------------------------------------- MatMul

MATMUL_CASES = [
    ((3, 4), (4, 5), False, False), ((4,), (4,), False, False), ((4,), (4,), True, True),
    ((2, 4, 3), (4,), True, False), ((4,), (2, 4, 3), False, False), ((4,), (2, 3, 4), True, True),
    ((2, 1, 4, 3), (5, 5, 4), True, True), ((1, 3, 2), (6, 2, 7), False, False),
    ((3, 2, 5), (5, 1), False, False), ((5, 3), (2, 1, 3, 5), True, True),
    ((1, 1), (1, 1), False, False), ((2, 7, 9), (2, 3, 9), False, True),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "ta", "tb"), MATMUL_CASES)
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_matmul_matches_cpu(a, b, ta, tb, dtype, tmp_path):
    rng = np.random.default_rng(len(a) * 10 + len(b))
    if dtype == "f32":
        x, y = rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)
    else:
        x, y = rng.integers(-9, 10, a).astype(np.int32), rng.integers(-9, 10, b).astype(np.int32)
    got, want = run_both(lambda p, q: opset1.matmul(p, q, ta, tb), [x, y], tmp_path)
    if dtype == "i32":
        assert_close(got, want, what=f"{a} {b} {ta} {tb}")
        return
    # Rounding depends on summation order: bound it by the size of the summed terms.
    xa = np.swapaxes(np.abs(x), -1, -2) if ta and x.ndim > 1 else np.abs(x)
    ya = np.swapaxes(np.abs(y), -1, -2) if tb and y.ndim > 1 else np.abs(y)
    terms = np.matmul(xa, ya)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got - want) <= 1e-5 * np.abs(want) + 1e-6 * terms), (a, b, ta, tb)


def test_matmul_by_hand(tmp_path):
    a = np.array([[1, 2], [3, 4]], np.float32)
    v = np.array([1, -1], np.float32)
    def mm(ta, tb, x, y):
        return _run_irrun(lambda p, q: opset1.matmul(p, q, ta, tb), [x, y], tmp_path).tolist()

    assert mm(True, False, a, v) == [-2.0, -2.0]  # a.T @ v; the row vector is [1, -1]
    assert mm(False, False, v, a) == [-2.0, -2.0]
    assert mm(True, True, v, a) == [-1.0, -1.0]  # v @ a.T: transpose_a is ignored for 1-D v
    assert mm(False, True, a, a) == [[5.0, 11.0], [11.0, 25.0]]


# --------------------------------------------------------------------------- BatchNormInference


@pytest.mark.parametrize("module", [opset1, opset5], ids=["v1", "v5"])
@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 5), (2, 3, 4, 5), (1, 2, 3, 2, 4)])
def test_batch_norm_matches_cpu(module, shape, tmp_path):
    rng = np.random.default_rng(shape[1] * 7 + len(shape))
    c = shape[1]
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    gamma, beta, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.01, 4, c).astype(np.float32)
    stats = [opset1.constant(v) for v in (gamma, beta, mean, var)]
    got, want = run_both(lambda p: module.batch_norm_inference(p, *stats, 1e-3), [x], tmp_path)
    assert_close(got, want, rtol=1e-5, atol=1e-6, what=str(shape))


@pytest.mark.parametrize("module", [opset1, opset5], ids=["v1", "v5"])
def test_batch_norm_by_hand(module, tmp_path):
    x = np.array([[1.0, 4.0], [3.0, 0.0]], np.float32)
    c = [opset1.constant(np.array(v, np.float32)) for v in ([2, 2], [1, 1], [2, 2], [3, 3])]
    got = _run_irrun(lambda p: module.batch_norm_inference(p, *c, 1.0), [x], tmp_path)
    # gamma * (x - mean) / sqrt(var + eps) + beta with sqrt(4) = 2: x - 1.
    assert got.tolist() == [[0.0, 3.0], [2.0, -1.0]]


# --------------------------------------------------------------------------- MVN-6

MVN_CASES = [  # axes, normalize_variance, eps, eps_mode, dtype
    ([-1], True, 1e-5, "inside_sqrt", "f32"), ([2, 3], True, 1e-3, "outside_sqrt", "f32"),
    ([1, 2, 3], False, 1e-5, "inside_sqrt", "f32"), ([0], True, 1e-5, "outside_sqrt", "f32"),
    ([3, 1], True, 0.5, "inside_sqrt", "f32"), ([-1], True, 1e-5, "inside_sqrt", "f16"),
    ([1], False, 1e-9, "outside_sqrt", "f16"),
]  # fmt: skip


@pytest.mark.parametrize(("axes", "variance", "eps", "mode", "dtype"), MVN_CASES, ids=str)
def test_mvn_matches_cpu(axes, variance, eps, mode, dtype, tmp_path):
    rng = np.random.default_rng(len(axes) * 5 + int(variance))
    x = (rng.standard_normal((2, 3, 4, 5)) * 3 + 1).astype(dtype.replace("f", "float"))
    build = lambda p: opset6.mvn(p, opset1.constant(np.int64(axes)), variance, eps, mode)  # noqa: E731
    got, want = run_both(build, [x], tmp_path)
    rtol = 2e-3 if dtype == "f16" else 1e-5
    assert_close(got, want, rtol=rtol, atol=rtol, scaled_atol=True, what=str(axes))


def test_mvn_by_hand(tmp_path):
    x = np.array([[1.0, 3.0, 5.0], [2.0, 2.0, 2.0]], np.float32)
    axes = opset1.constant(np.int32([1]))
    got = _run_irrun(lambda p: opset6.mvn(p, axes, True, 0.25, "outside_sqrt"), [x], tmp_path)
    # Row 0: mean 3, variance 8/3; row 1: all at its mean.
    want = [[v / (math.sqrt(8 / 3) + 0.25) for v in (-2, 0, 2)], [0, 0, 0]]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    got = _run_irrun(lambda p: opset6.mvn(p, axes, False, 0.25, "inside_sqrt"), [x], tmp_path)
    assert got.tolist() == [[-2, 0, 2], [0, 0, 0]]
    assert resolve("MVN", "opset6").label == resolve("MVN", "opset16").label == "MVN-v6"
    # An axis named twice counts once, as in the plugin; one out of range is refused.
    twice = _run_irrun(lambda p: opset6.mvn(p, opset1.constant(np.int32([1, -1])), False, 0.0,
                                            "inside_sqrt"), [x], tmp_path)  # fmt: skip
    assert twice.tolist() == [[-2, 0, 2], [0, 0, 0]]
    with pytest.raises(irrun.IrrunError, match=r"axes value 2 is out of range for rank 2"):
        _run_irrun(lambda p: opset6.mvn(p, opset1.constant(np.int32([2])), True, 1e-5,
                                        "inside_sqrt"), [x], tmp_path)  # fmt: skip


# --------------------------------------------------------------------------- comparisons, logical, Select

COMPARE = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
LOGICAL = ["LogicalAnd", "LogicalOr", "LogicalXor"]


def _factory(op: str):
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in op).lstrip("_")
    return getattr(opset1, snake)


@pytest.mark.parametrize("mode", ["numpy", "none"])
@pytest.mark.parametrize("dtype", ["f32", "i32", "u8"])
@pytest.mark.parametrize("op", COMPARE)
def test_comparison_matches_cpu(op, dtype, mode, tmp_path):
    rng = np.random.default_rng(len(op) * 3 + len(dtype) + len(mode))
    b_shape = (3, 4, 5) if mode == "none" else (4, 1)
    x = rng.integers(0, 4, (3, 4, 5)).astype(dtype_of(dtype))  # many ties
    y = rng.integers(0, 4, b_shape).astype(dtype_of(dtype))
    if dtype == "f32":
        x.flat[:4] = (np.nan, -0.0, np.inf, 1.5)
        y.flat[:4] = (np.nan, 0.0, np.inf, np.nan)
    got, want = run_both(lambda p, q: _factory(op)(p, q, mode), [x, y], tmp_path)
    assert got.dtype == np.bool_
    # The plugin's answer where a NaN is compared depends on the instructions its JIT
    # picks for the CPU (Greater is true for NaN on some): compared only elsewhere, and
    # by IEEE's rule in test_comparison_with_nan_is_ieee.
    defined = ~np.broadcast_to(np.isnan(x.astype(np.float32)) | np.isnan(y.astype(np.float32)),
                               got.shape)  # fmt: skip
    assert defined.sum() >= 30  # most of the tensor is still compared
    assert_close(got[defined], want[defined], what=op)


# IEEE 754: every ordered comparison with NaN is false, and NaN is unequal to everything.
NAN_ROWS = {"Equal": False, "NotEqual": True, "Less": False, "LessEqual": False,
            "Greater": False, "GreaterEqual": False}  # fmt: skip


@pytest.mark.parametrize("op", COMPARE)
def test_comparison_with_nan_is_ieee(op, tmp_path):
    x = np.array([np.nan, np.nan, 1.0, -np.inf, np.nan], np.float32)
    y = np.array([np.nan, 1.0, np.nan, np.nan, np.inf], np.float32)
    got = _run_irrun(lambda p, q: _factory(op)(p, q, "numpy"), [x, y], tmp_path)
    assert got.tolist() == [NAN_ROWS[op]] * 5


@pytest.mark.parametrize("op", LOGICAL)
def test_logical_matches_cpu(op, tmp_path):
    rng = np.random.default_rng(len(op))
    x, y = rng.random((2, 3, 4)) < 0.5, rng.random((3, 1)) < 0.5
    got, want = run_both(lambda p, q: _factory(op)(p, q), [x, y], tmp_path)
    assert_close(got, want, what=op)
    got, want = run_both(opset1.logical_not, [x], tmp_path)
    assert_close(got, want, what="LogicalNot")


@pytest.mark.parametrize(("shapes", "mode"), [
    (((2, 3, 4), (2, 3, 4), (2, 3, 4)), "none"), (((3, 1), (2, 1, 4), (4,)), "numpy"),
    (((), (2, 3), (2, 3)), "numpy"), (((2, 3, 4), (1, 3, 1), (4,)), "numpy"),
])  # fmt: skip
def test_select_matches_cpu(shapes, mode, tmp_path):
    rng = np.random.default_rng(len(shapes[1]) + len(mode))
    cond = rng.random(shapes[0]) < 0.5
    then = rng.standard_normal(shapes[1]).astype(np.float32)
    other = rng.standard_normal(shapes[2]).astype(np.float32)
    got, want = run_both(lambda c, t, e: opset1.select(c, t, e, mode), [cond, then, other],
                         tmp_path)  # fmt: skip
    assert_close(got, want, what=str(shapes))


def test_select_with_pdpd_broadcasting_is_refused(tmp_path):
    p = opset1.parameter([2, 3], ov.Type.f32, name="in0")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([opset1.select(opset1.constant(True), p, p)], [p]), path)
    text = path.read_text()
    assert text.count('auto_broadcast="numpy"') == 1
    path.write_text(text.replace('auto_broadcast="numpy"', 'auto_broadcast="pdpd"'))
    found = [d.message for d in irrun.validate(path) if d.level == "error"]
    assert any("auto_broadcast" in m and "none, explicit, numpy" in m for m in found), found


def test_boolean_inputs_are_checked(tmp_path):
    p = opset1.parameter([3], ov.Type.f32, name="in0")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([opset1.logical_not(opset1.convert(p, "boolean"))], [p]), path)
    text = path.read_text()
    assert text.count('destination_type="boolean"') == 1
    # The Convert made to give f32: LogicalNot reads f32.
    bad = text.replace('destination_type="boolean"', 'destination_type="f32"')
    path.write_text(bad.replace('precision="BOOL"', 'precision="FP32"', 1))
    assert any("the input must be boolean, got f32" in d.message for d in irrun.validate(path))


# --------------------------------------------------------------------------- LogSoftmax, TopK


@pytest.mark.parametrize(("shape", "axis", "dtype"), [
    ((2, 5), 1, "f32"), ((2, 5), -1, "f32"), ((3, 4, 5), 0, "f32"), ((3, 4, 5), 1, "f16"),
    ((7,), 0, "f32"),
])  # fmt: skip
def test_log_softmax_matches_cpu(shape, axis, dtype, tmp_path):
    x = (np.random.default_rng(len(shape) + axis).standard_normal(shape) * 10).astype(
        dtype_of(dtype))  # fmt: skip
    got, want = run_both(lambda p: opset5.log_softmax(p, axis), [x], tmp_path)
    tol = 2e-3 if dtype == "f16" else 1e-5
    assert_close(got, want, rtol=tol, atol=tol, scaled_atol=True, what=str(shape))


def _topk_cases():
    rng = random.Random(5)
    modules = {1: opset1, 3: opset3, 11: opset11}
    for i in range(36):
        version = (1, 3, 11)[i % 3]
        rank = rng.randint(1, 3)
        shape = [rng.randint(1, 6) for _ in range(rank)]
        axis = rng.randint(-rank, rank - 1)
        k = rng.randint(1, shape[axis])
        mode, sort = rng.choice(("max", "min")), rng.choice(("value", "index", "none"))
        stable = version == 11 and sort != "none" and rng.random() < 0.7
        dtype = rng.choice(("f32", "f32", "i32"))
        yield pytest.param(modules[version], shape, axis, k, mode, sort, stable, dtype,
                           id=f"v{version}-{shape}-{axis}-k{k}-{mode}-{sort}-{stable}-{dtype}")


@pytest.mark.parametrize(("module", "shape", "axis", "k", "mode", "sort", "stable", "dtype"),
                         list(_topk_cases()))  # fmt: skip
def test_topk_matches_cpu(module, shape, axis, k, mode, sort, stable, dtype, tmp_path):
    rng = np.random.default_rng(sum(shape) + k)
    size = int(np.prod(shape))
    # Ties only where a stable TopK fixes their order.
    x = rng.integers(0, 3, shape) if stable else rng.permutation(size).reshape(shape) - size // 2
    x = x.astype(dtype_of(dtype))
    args = [opset1.constant(np.int64(k)), axis, mode, sort, "i32"]
    if module is opset11:
        args.append(stable)
    elif module is opset1:
        args = args[:4]

    def build(p):
        node = module.topk(p, *args)
        node.output(0).get_tensor().set_names({"out"})
        node.output(1).get_tensor().set_names({"indices"})
        return node

    model = _one_op_model(build, [x])
    model.add_results([opset1.result(model.get_ordered_ops()[-2].output(1))])
    cpu = CORE.compile_model(model, "CPU", CPU_CONFIG)([x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({"in0": x})
    assert_close(got["out"], cpu[0], what="values")
    assert_close(got["indices"], cpu[1].astype(np.int32), what="indices")


@pytest.mark.parametrize("threads", [1, 2])
def test_a_clamp_of_a_rank_0_tensor(tmp_path, threads):
    """ONNX's DynamicQuantizeLinear as OpenVINO converts it clamps its 0-D zero point (it
    once failed: a 0-D array went where the clamp wrote into its result)."""
    x = opset1.parameter([6], np.float32, name="x")
    axes = opset1.constant(np.int64([0]))
    low = opset1.minimum(opset1.reduce_min(x, axes, False), opset1.constant(np.float32(0)))
    high = opset1.maximum(opset1.reduce_max(x, axes, False), opset1.constant(np.float32(0)))
    scale = opset1.divide(opset1.subtract(high, low), opset1.constant(np.float32(255)))
    zero = opset1.clamp(opset5.round(opset1.divide(opset1.negative(low), scale),
                                     "half_to_even"), 0.0, 255.0)
    relu = opset1.relu(opset1.negative(zero))  # and the other activations on 0-D
    out = opset1.add(zero, relu)
    out.output(0).get_tensor().set_names({"out"})
    ov_model = ov.Model([out.output(0)], [x])
    path = tmp_path / "dql.xml"
    ov.save_model(ov_model, path, compress_to_fp16=False)
    model = irrun.load(path)
    model.threads = threads
    feed = np.float32([-1.5, 0.25, 3.0, -0.5, 2.0, 7.25])
    got = model.run({"x": feed})["out"]
    want = CORE.compile_model(ov_model, "CPU", CPU_CONFIG)([feed])[0]
    assert got.shape == () and got.dtype == np.float32
    assert_close(got, np.asarray(want), what="zero point")


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
