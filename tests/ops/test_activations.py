"""Activations (ReLU, HSigmoid, HSwish, Clamp, Sigmoid, Swish, Gelu, PRelu) by hand and
against the CPU plugin; the sweep over all element-wise unary functions is in test_unary.py.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances: exact for ReLU, Clamp in f32 and PRelu in f32 and integers; one f16 ulp
(1e-3) for f16.  Gelu-erf's accuracy is checked against ``math.erfc``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import irrun
from irrun.ops.activations import gelu_erf

ov = pytest.importorskip("openvino")
from openvino import opset1, opset2, opset4, opset5, opset7, opset9  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG, assert_close, run_both, run_irrun  # noqa: E402
from support.typed import assert_not_taken, check_types, const_like, numbers, refused  # noqa: E402

from irrun.ir.registry import resolve  # noqa: E402


def test_unary_by_hand(tmp_path):
    f = np.float32
    x = np.array([np.nan, -0.0, -4.0, -3.0, 0.0, 1.5, 3.0, 7.0], f)
    relu = run_irrun(opset1.relu, [x], tmp_path)
    assert relu.tolist() == [0, 0, 0, 0, 0, 1.5, 3, 7]  # NaN gives 0
    hsig = run_irrun(opset5.hsigmoid, [x[2:]], tmp_path)
    assert np.allclose(hsig, [0, 0, 0.5, 0.75, 1, 1], rtol=0, atol=1e-7)
    hswish = run_irrun(opset4.hswish, [x[2:]], tmp_path)
    assert np.allclose(hswish, [0, 0, 0, 1.125, 3, 7], rtol=0, atol=1e-6)
    clamp = run_irrun(lambda p: opset1.clamp(p, -1, 2), [x], tmp_path)
    assert clamp[0] == -1 and np.signbit(clamp[1])  # NaN becomes min; -0.0 stays
    ints = np.array([-7, -2, 0, 2, 3, 9], np.int32)
    assert run_irrun(lambda p: opset1.clamp(p, -2.5, 3.5), [ints], tmp_path).tolist() == [
        -2, -2, 0, 2, 3, 3]  # fmt: skip
    assert run_irrun(opset1.sqrt, [ints[3:]], tmp_path).tolist() == [1, 2, 3]  # round(1.41, 1.73)
    assert run_irrun(opset1.sigmoid, [ints], tmp_path).tolist() == [0, 0, 0, 1, 1, 1]  # 0.5 -> 0
    swish = run_irrun(lambda p: opset4.swish(p, opset1.constant(f(2))), [np.array([1], f)],
                       tmp_path)  # fmt: skip
    assert np.isclose(swish[0], 1 / (1 + math.exp(-2)), rtol=1e-6)
    g = run_irrun(lambda p: opset7.gelu(p, "tanh"), [np.array([1], f)], tmp_path)
    assert np.isclose(g[0], 0.5 * (1 + math.tanh(math.sqrt(2 / math.pi) * 1.044715)), rtol=1e-6)


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
    got = run_irrun(lambda p: opset1.prelu(p, opset1.constant(np.float32([0.5, -1, 2]))), [x],
                     tmp_path)  # fmt: skip
    assert np.isnan(got[0, 0]) and np.signbit(got[0, 1])  # NaN and -0.0 stay
    assert got[0, 2] == -4 and got[1].tolist() == [0, 4, 3]
    chw = np.full((1, 2, 2, 2), -2.0, np.float32)
    got = run_irrun(lambda p: opset1.prelu(p, opset1.constant(slope)), [chw], tmp_path)
    assert got[0, :, 0, 0].tolist() == [1, -0.5]  # a slope per channel
    with pytest.raises(irrun.IrrunError, match=r"slope \[2\] does not broadcast onto the input"):
        run_irrun(lambda p: opset1.prelu(p, opset1.constant(slope)), [x.reshape(3, 2)[:, :1]],
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


# --------------------------------------------------------------------------- element types


def _prelu(p):
    t = p.get_output_element_type(0)
    slope = [0.5, 2, 1, 0.5] if t.is_real() else [1, 0, 1, 1] if t == ov.Type.u1 else [1, 2, 0, 1]
    return opset1.prelu(p, const_like(slope, p))


# label: (type, opset, build of the data parameter; the other inputs are constants of its type)
TYPED = {
    "Sigmoid": ("Sigmoid", "opset1", opset1.sigmoid),
    "HSigmoid": ("HSigmoid", "opset5", opset5.hsigmoid),
    "HSwish": ("HSwish", "opset4", opset4.hswish),
    "SoftPlus": ("SoftPlus", "opset4", opset4.softplus),
    "Mish": ("Mish", "opset4", opset4.mish),
    "SoftSign": ("SoftSign", "opset9", opset9.softsign),
    "Elu": ("Elu", "opset1", lambda p: opset1.elu(p, 0.5)),
    "ReLU": ("ReLU", "opset1", opset1.relu),
    "Clamp": ("Clamp", "opset1", lambda p: opset1.clamp(p, -1.0, 2.0)),
    "Selu": ("Selu", "opset1", lambda p: opset1.selu(p, const_like([2.0], p),
                                                      const_like([1.0], p))),
    "HardSigmoid": ("HardSigmoid", "opset1",
                    lambda p: opset1.hard_sigmoid(p, const_like(0.5, p), const_like(0.5, p))),
    "PRelu": ("PRelu", "opset1", _prelu),
    "Swish": ("Swish", "opset4", lambda p: opset4.swish(p, const_like(0.5, p))),
    "Gelu-2": ("Gelu", "opset2", opset2.gelu),
    "Gelu-7": ("Gelu", "opset7", lambda p: opset7.gelu(p, "tanh")),
}


# The types every run sweeps (one of each kind); the others run with -m slow.
FAST_TYPES = ("f32", "f16", "bf16", "f8e8m0", "f4e2m1", "i64", "u8", "u3", "i4", "boolean")


def _typed_cases():
    for label, (op_type, opset, _) in TYPED.items():
        for t in resolve(op_type, opset).input_types[0]:
            marks = () if t in FAST_TYPES else (pytest.mark.slow,)
            yield pytest.param(label, t, id=f"{label}-{t}", marks=marks)


@pytest.mark.parametrize(("label", "t"), list(_typed_cases()))
def test_every_declared_type_matches_openvino(label, t, tmp_path):
    """Each type the data port takes (the other ports take the data's type): the CPU plugin's
    values, or its f32 (i32) values converted to the type by OpenVINO where it has no kernel
    of the type (f8, f4 and packed types: irrun computes them in f32 and rounds once)."""
    check_types(TYPED[label][2], [numbers(t).reshape(2, 4)], [t], tmp_path,
                oracles=("cpu", "reference"), rtol=1e-5, atol=1e-6, what=label)


REFUSED = [("Sigmoid", "boolean"), ("SoftPlus", "i32"), ("Mish", "u8"), ("SoftSign", "boolean"),
           ("Elu", "string"), ("ReLU", "boolean"), ("Clamp", "string"), ("Selu", "i32"),
           ("HardSigmoid", "i32"), ("PRelu", "boolean"), ("Swish", "i64"), ("Gelu-2", "i32"),
           ("Gelu-7", "u8")]  # fmt: skip


@pytest.mark.parametrize(("label", "bad"), REFUSED)
def test_a_type_not_taken_is_an_error_of_validate(label, bad, tmp_path):
    op_type, opset, build = TYPED[label]
    op = resolve(op_type, opset)
    assert bad not in op.input_types[0]
    found = refused(build, ["f32"], 0, bad, tmp_path)
    assert_not_taken(found, 0, bad, op.label)
