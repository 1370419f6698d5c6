"""Acos, Asin, Atan, Cosh, Sinh, Tan, Acosh, Asinh, Atanh, Round, Selu, HardSigmoid,
IsFinite, IsInf, IsNaN, Identity, SquaredDifference and ErfInv against OpenVINO; and (at the end)
one sweep over the element-wise unary functions, activations included (Abs, Sqrt, Exp,
Log, Erf, Sin, Cos, Sign, Floor, ..., ReLU, Sigmoid, Tanh, HSwish, Swish, Gelu, Clamp,
Elu, SoftPlus, Mish, SoftSign), with Sign, Negative, Floor and Erf by hand.

Differential sweeps run one-op models (saved as IR) in irrun and in the CPU plugin
(f32, one thread) from seeded generators.  Tolerances:

* transcendental functions in f32: 4 ulp relative (rtol 5e-7) plus an absolute 4 ulp
  of the result's scale near zeros of the function: NumPy (glibc/SVML) and the
  plugin's JIT polynomials are each within ~2 ulp of the true value, so they may
  differ by twice that.  Tan, whose result grows without bound near its poles,
  is compared relative to the result, as the others.
* f16: the plugin computes in f32 and rounds once, as irrun does; both round the
  same f32 value unless the f32 results differ across a rounding boundary, so one
  f16 ulp (rtol 1e-3).
* integers: the f32 result rounded half to even; exact except where the f32 result
  lies within a few ulp of a .5 tie, which the sweep's small integers never hit.
* Round, IsFinite, IsInf, IsNaN, Identity, HardSigmoid's clamp: exact.
* ErfInv (f32): rtol 1.1e-4 against the plugin, which computes OpenVINO's approximation
  in f32 by its own route (2e-7 for 1e-3 < |x| < 0.5); OpenVINO 2026.4 has no
  ``evaluate`` for it.  f16: one f16 ulp.
* the sweep: exact for Abs, ReLU, Clamp, Negative, Sign, Floor, Ceiling; rtol 1e-6 for
  HSigmoid; rtol 1e-5, atol 1e-6 for the others (Gelu on inputs in [-10, 10]: the
  plugin's erf approximation is off by up to ~2e-7 absolute); one f16 ulp for f16.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import irrun
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES, NUMBERS
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve
from irrun.ops.unary import REAL, erf, erfinv

ov = pytest.importorskip("openvino")
from openvino import (  # noqa: E402
    opset1,
    opset2,
    opset4,
    opset5,
    opset7,
    opset9,
    opset10,
    opset16,
    opset17,
)
from support.ov_oneop import (  # noqa: E402
    assert_close,
    assert_versions_follow_factories,
    one_op_model,
    run_both,
    run_irrun,
    run_reference,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402
from support.typed import assert_not_taken, check_types, numbers, refused, run_typed, typed  # noqa: E402

FACTORIES = {
    "Acos": "acos", "Asin": "asin", "Atan": "atan", "Cosh": "cosh", "Sinh": "sinh",
    "Tan": "tan", "Acosh": "acosh", "Asinh": "asinh", "Atanh": "atanh", "Round": "round",
    "Selu": "selu", "HardSigmoid": "hard_sigmoid", "IsFinite": "is_finite", "IsInf": "is_inf",
    "IsNaN": "is_nan", "Identity": "identity", "SquaredDifference": "squared_difference",
}  # fmt: skip
TRIG = {
    "Acos": (opset1.acos, (-1, 1)), "Asin": (opset1.asin, (-1, 1)),
    "Atan": (opset1.atan, (-20, 20)), "Cosh": (opset1.cosh, (-10, 10)),
    "Sinh": (opset1.sinh, (-10, 10)), "Tan": (opset1.tan, (-1.5, 1.5)),
    "Acosh": (opset4.acosh, (1, 50)), "Asinh": (opset4.asinh, (-50, 50)),
    "Atanh": (opset4.atanh, (-1, 1)),
}  # fmt: skip
F32_ULP4 = 5e-7


def _f32(v):
    return np.array(v, np.float32)


@pytest.mark.parametrize("op_type", sorted(FACTORIES))
def test_version_for_every_opset(op_type):
    assert_versions_follow_factories(op_type, FACTORIES[op_type])


# --------------------------------------------------------------------------- trigonometry


@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_f32_matches_cpu(op, tmp_path):
    factory, (lo, hi) = TRIG[op]
    rng = np.random.default_rng(len(op) * 7 + ord(op[1]))
    x = rng.uniform(lo, hi, size=(3, 257)).astype(np.float32)
    # The domain's edges, outside it (NaN), infinities, signed zeros and NaN.
    x[0, :10] = [lo, hi, -0.0, 0.0, np.nan, np.inf, -np.inf, lo - 1, hi + 1, 1e-30]
    got, want = run_both(factory, [x], tmp_path)
    scale = float(np.nanmax(np.abs(want[np.isfinite(want)])))
    assert_close(got, want, rtol=F32_ULP4, atol=scale * 2.4e-7, what=op)
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_f16_matches_cpu(op, tmp_path):
    factory, (lo, hi) = TRIG[op]
    rng = np.random.default_rng(len(op))
    x = rng.uniform(lo, hi, size=(2, 3, 17)).astype(np.float16)
    got, want = run_both(factory, [x], tmp_path)
    assert_close(got, want, rtol=1e-3, atol=1e-3, what=op)


@pytest.mark.parametrize("et", ["i32", "i8", "u8", "i64"])
@pytest.mark.parametrize("op", sorted(TRIG))
def test_trig_integers_match_cpu(op, et, tmp_path):
    """In-domain, in-range integers: the f32 result rounded half to even."""
    factory, (lo, hi) = TRIG[op]
    lo, hi = max(math.ceil(lo), -5), min(math.floor(hi), 5)
    if ELEMENT_TYPES[et].dtype.kind == "u":
        lo = max(lo, 0)
    if op == "Atanh":
        lo, hi = 0, 0  # atanh(+-1) is infinite, whose conversion differs by type
    x = np.arange(lo, hi + 1).astype(ELEMENT_TYPES[et].dtype)
    got, want = run_both(factory, [x], tmp_path)
    assert_close(got, want, what=f"{op} {et}")


def test_trig_by_hand(tmp_path):
    x = _f32([-1.0, 0.0, 0.5, 1.0])
    run = lambda f, v: run_saved(one_op_model(f, [v]), [v], tmp_path)[0]  # noqa: E731
    assert np.allclose(run(opset1.acos, x), [math.pi, math.pi / 2, math.pi / 3, 0], atol=1e-6)
    assert np.allclose(run(opset1.asin, x), [-math.pi / 2, 0, math.pi / 6, math.pi / 2])
    assert np.allclose(run(opset1.atan, x), [-math.pi / 4, 0, math.atan(0.5), math.pi / 4])
    assert np.allclose(run(opset1.cosh, x), [math.cosh(1), 1, math.cosh(0.5), math.cosh(1)])
    assert np.allclose(run(opset4.atanh, x), [-np.inf, 0, math.atanh(0.5), np.inf])
    assert np.isnan(run(opset4.acosh, _f32([0.5]))).all()
    # -1.5708 rounds to -2 (the plugin); OpenVINO's reference kernel truncates to -1.
    assert run(opset1.asin, np.int32([-1, 0, 1])).tolist() == [-2, 0, 2]
    assert run(opset1.tan, np.int32([1, 2, 3])).tolist() == [2, -2, 0]


# --------------------------------------------------------------------------- Round


@pytest.mark.parametrize("mode", ["half_to_even", "half_away_from_zero"])
@pytest.mark.parametrize("et", ["f32", "f16", "i32", "i8", "u8", "i64"])
def test_round_matches_cpu(mode, et, tmp_path):
    rng = np.random.default_rng(len(mode) + len(et))
    dtype = ELEMENT_TYPES[et].dtype
    if dtype.kind == "f":
        x = (rng.integers(-40, 40, size=(4, 33)) / 4).astype(dtype)  # many ties
        x[0, :3] = [np.nan, np.inf, -np.inf]
        x[1, :4] = rng.uniform(-1e4, 1e4, 4)
    else:
        # The plugin rounds integers through f32, half away from zero as floor(x + 0.5):
        # exact below 2**22 only.
        info = np.iinfo(dtype)
        x = rng.integers(max(info.min, -(2**22)), min(info.max, 2**22), size=(3, 7),
                         endpoint=True).astype(dtype)  # fmt: skip
    got, want = run_both(lambda p: opset5.round(p, mode), [x], tmp_path)
    assert_close(got, want, what=f"{mode} {et}")


@pytest.mark.parametrize("et", ["i32", "i64", "u8"])
def test_round_returns_integers_unchanged_as_the_reference_does(et, tmp_path):
    """The plugin's f32 detour turns i32 1852092161 into 1852092160; the reference copies."""
    info = np.iinfo(ELEMENT_TYPES[et].dtype)
    x = np.array([info.min, info.max, 1852092161 % int(info.max), 0], info.dtype)
    model = one_op_model(lambda p: opset5.round(p, "half_to_even"), [x])
    (want,) = run_reference(model, [x])
    assert_close(run_saved(model, [x], tmp_path)[0], want)
    assert want.tolist() == x.tolist()


def test_round_half_away_follows_the_reference(tmp_path):
    """The plugin rounds 0.49999997 to 1 and gives +0.0 for -0.0; std::round does not."""
    x = _f32([0.49999997, -0.49999997, -0.0, 2.5, -2.5, 8388609, 0.5, -0.3])
    model = one_op_model(lambda p: opset5.round(p, "half_away_from_zero"), [x])
    (want,) = run_reference(model, [x])
    got = run_saved(model, [x], tmp_path)[0]
    assert got.tolist() == want.tolist() == [0, 0, 0, 3, -3, 8388609, 1, 0]
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert np.signbit(got[[1, 2, 7]]).all()
    even = run_saved(one_op_model(lambda p: opset5.round(p, "half_to_even"), [x]), [x], tmp_path)
    assert even[0].tolist() == [0, 0, 0, 2, -2, 8388609, 0, 0]


# --------------------------------------------------------------------------- Selu, HardSigmoid


def _selu(alpha, lam):
    return lambda p: opset1.selu(p, opset1.constant(alpha), opset1.constant(lam))


def _hard_sigmoid(alpha, beta):
    return lambda p: opset1.hard_sigmoid(p, opset1.constant(alpha), opset1.constant(beta))


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("params", [(1.6732632, 1.050701), (0.5, 2.0), (-1.0, 0.25)])
def test_selu_matches_cpu(params, et, tmp_path):
    """The plugin takes alpha and lambda from constants only (its reference fallback for
    parameters is missing); 1-D and 0-D ones alike."""
    dtype = ELEMENT_TYPES[et].dtype
    rng = np.random.default_rng(int(params[1] * 100))
    x = rng.uniform(-8, 8, size=(2, 5, 13)).astype(dtype)
    x.flat[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    for alpha, lam in ((np.array([params[0]], dtype), np.array([params[1]], dtype)),
                       (np.array(params[0], dtype), np.array(params[1], dtype))):  # fmt: skip
        got, want = run_both(_selu(alpha, lam), [x], tmp_path)
        tol = 1e-3 if et == "f16" else F32_ULP4
        assert_close(got, want, rtol=tol, atol=tol, what=f"{params} {et}")


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("params", [(0.2, 0.5), (1 / 6, 0.5), (-0.7, 0.1), (3.0, -1.0)])
def test_hard_sigmoid_matches_cpu(params, et, tmp_path):
    dtype = ELEMENT_TYPES[et].dtype
    rng = np.random.default_rng(int(abs(params[0]) * 100) + 7)
    x = rng.uniform(-6, 6, size=(3, 4, 11)).astype(dtype)
    x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    alpha, beta = np.array(params[0], dtype), np.array(params[1], dtype)
    got, want = run_both(_hard_sigmoid(alpha, beta), [x], tmp_path)
    assert_close(got, want, rtol=1e-3 if et == "f16" else 1e-7, atol=1e-7, what=f"{params}")


def test_selu_and_hard_sigmoid_by_hand(tmp_path):
    x = _f32([-1.0, 0.0, 2.0, -100.0, np.nan])
    selu = run_saved(one_op_model(_selu(_f32([2.0]), _f32([3.0])), [x]), [x], tmp_path)[0]
    assert np.allclose(selu[:4], [3 * 2 * (math.exp(-1) - 1), 0, 6, -6], rtol=1e-6)
    assert np.isnan(selu[4])
    hs = run_saved(one_op_model(_hard_sigmoid(_f32(0.25), _f32(0.5)), [x]), [x], tmp_path)[0]
    assert hs.tolist() == [0.25, 0.5, 1.0, 0.0, 1.0]  # NaN gives 1, as in the plugin


def test_selu_hard_sigmoid_shape_rules():
    f32, i32 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i32"]
    attrs = attrs_namespace({})
    hs, selu = resolve("HardSigmoid", "opset1"), resolve("Selu", "opset1")
    (out,) = hs.infer(attrs, [TensorInfo((2, Interval(1, 5)), f32), TensorInfo((), f32),
                              TensorInfo((), f32)])  # fmt: skip
    assert out.shape == (2, Interval(1, 5))
    with pytest.raises(ShapeError, match=r"alpha must be a scalar, got shape \[1\]"):
        hs.infer(attrs, [TensorInfo((2,), f32), TensorInfo((1,), f32), TensorInfo((), f32)])
    # OpenVINO refuses the same.
    with pytest.raises(RuntimeError, match="scalar"):
        opset1.hard_sigmoid(opset1.parameter([2]), opset1.constant(_f32([1])),
                            opset1.constant(_f32(1)))  # fmt: skip
    (out,) = selu.infer(attrs, [TensorInfo(None, f32), TensorInfo((1,), f32),
                                TensorInfo((1,), f32)])  # fmt: skip
    assert out.shape is None
    with pytest.raises(ShapeError, match="input 0 is i32, which Selu-v1 does not take"):
        selu.infer(attrs, [TensorInfo((2,), i32)] * 3)
    f16 = ELEMENT_TYPES["f16"]
    with pytest.raises(ShapeError, match="different element types"):
        selu.infer(attrs, [TensorInfo((2,), f32), TensorInfo((1,), f16), TensorInfo((1,), f32)])


# --------------------------------------------------------------------------- IsFinite, IsInf, IsNaN


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -3.5, 65504.0, 1e-30]


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("op", ["IsFinite", "IsNaN", "IsInf"])
def test_checks_match_cpu(op, et, tmp_path):
    dtype = ELEMENT_TYPES[et].dtype
    rng = np.random.default_rng(len(op))
    x = rng.choice(np.array(SPECIALS, dtype), size=(4, 23))
    if op == "IsInf":
        for neg in (True, False):
            for pos in (True, False):
                attrs = {"detect_negative": neg, "detect_positive": pos}
                got, want = run_both(lambda p, a=attrs: opset10.is_inf(p, a), [x], tmp_path)
                assert_close(got, want, what=f"{attrs}")
        return
    got, want = run_both(getattr(opset10, FACTORIES[op]), [x], tmp_path)
    assert_close(got, want, what=op)


def test_checks_by_hand(tmp_path):
    x = _f32([np.nan, np.inf, -np.inf, 0.0, 2.0])
    run = lambda f: run_saved(one_op_model(f, [x]), [x], tmp_path)[0].tolist()  # noqa: E731
    assert run(opset10.is_finite) == [False, False, False, True, True]
    assert run(opset10.is_nan) == [True, False, False, False, False]
    assert run(opset10.is_inf) == [False, True, True, False, False]
    assert run(lambda p: opset10.is_inf(p, {"detect_negative": False})) == [
        False, True, False, False, False]  # fmt: skip
    assert run(lambda p: opset10.is_inf(p, {"detect_positive": False})) == [
        False, False, True, False, False]  # fmt: skip
    # f64, which the plugin misjudges (it calls -inf finite): irrun answers correctly.
    d = np.array([-np.inf, np.nan, 1.0])
    got = run_saved(one_op_model(opset10.is_finite, [d]), [d], tmp_path)[0]
    assert got.tolist() == [False, False, True]


@pytest.mark.parametrize("op", ["IsFinite", "IsNaN", "IsInf"])
def test_checks_refuse_integers(op):
    with pytest.raises(RuntimeError):
        getattr(opset10, FACTORIES[op])(opset1.parameter([2], ov.Type.i32))
    rule = resolve(op, "opset10")
    attrs = attrs_namespace({"detect_negative": True, "detect_positive": True})
    with pytest.raises(ShapeError, match="input 0 is i32"):
        rule.infer(attrs, [TensorInfo((2,), ELEMENT_TYPES["i32"])])
    (out,) = rule.infer(attrs, [TensorInfo((Interval(0, None), 3), ELEMENT_TYPES["f16"])])
    assert out.shape == (Interval(0, None), 3) and out.element_type.name == "boolean"


# --------------------------------------------------------------------------- Identity


@pytest.mark.parametrize("et", ["f32", "f16", "i64", "u8", "boolean"])
def test_identity_matches_cpu(et, tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 5, size=(2, 0, 3)) if et == "u8" else rng.integers(0, 2, size=(3, 4)))
    x = x.astype(ELEMENT_TYPES[et].dtype)
    got, want = run_both(opset16.identity, [x], tmp_path)
    assert_close(got, want, what=et)


# --------------------------------------------------------------------------- SquaredDifference


def _pair(rng, mode, min_rank=0):
    rank = int(rng.integers(min_rank, 4))
    a = [int(rng.choice([0, 1, 2, 3, 5], p=[0.05, 0.25, 0.3, 0.2, 0.2])) for _ in range(rank)]
    if mode == "none":
        return a, list(a)
    if mode == "pdpd":
        return a, [d if d == 0 or rng.random() < 0.6 else 1 for d in a]
    b = [d if rng.random() < 0.6 else 1 for d in a[int(rng.integers(0, rank + 1)) :]]
    return (b, a) if rng.random() < 0.3 else (a, b)


@pytest.mark.parametrize("mode", ["numpy", "none", "pdpd"])
@pytest.mark.parametrize("et", ["f32", "f16", "i32"])
def test_squared_difference_matches_cpu(et, mode, tmp_path):
    rng = np.random.default_rng(len(et) * 10 + len(mode))
    dtype = ELEMENT_TYPES[et].dtype
    if dtype.kind != "f" and mode == "pdpd":
        pytest.skip("no oracle: the plugin cannot compile integer pdpd SquaredDifference")
    for _ in range(3):
        # The plugin has no integer kernel for 0-D inputs.
        a, b = _pair(rng, mode, min_rank=0 if dtype.kind == "f" else 1)
        if dtype.kind == "f":
            x, y = rng.normal(0, 30, a).astype(dtype), rng.normal(0, 30, b).astype(dtype)
        else:  # small enough that the square fits
            x, y = (rng.integers(-3000, 3000, s).astype(dtype) for s in (a, b))
        got, want = run_both(lambda p, q: opset1.squared_difference(p, q, mode), [x, y],
                             tmp_path)  # fmt: skip
        tol = 1e-3 if et == "f16" else 0.0
        assert_close(got, want, rtol=tol, what=f"{a} {b} {mode}")


def test_squared_difference_by_hand(tmp_path):
    x, y = _f32([[1, 2], [np.inf, np.inf]]), _f32([4, np.inf])
    model = one_op_model(opset1.squared_difference, [x, y])
    got = run_saved(model, [x, y], tmp_path)[0]
    assert got[0].tolist() == [9, np.inf] and got[1, 0] == np.inf and np.isnan(got[1, 1])
    # Integers wrap, as OpenVINO's reference arithmetic does: (100 - -100)**2 = 40000.
    a, b = np.int8([100, 3]), np.int8([-100, 5])
    got = run_saved(one_op_model(opset1.squared_difference, [a, b]), [a, b], tmp_path)[0]
    assert got.tolist() == [64, 4]  # 200 wraps to -56 in i8; 3136 wraps to 64


def test_squared_difference_shape_rule_matches_openvino():
    rule = resolve("SquaredDifference", "opset1")
    f32 = ELEMENT_TYPES["f32"]
    for a, b in [((2, Interval(0, None)), (Interval(1, 4), 1)), (None, (4, 1)),
                 ((Interval(2, 5), 3), (3,))]:  # fmt: skip
        p, q = (opset1.parameter(to_ov_shape(s), ov.Type.f32) for s in (a, b))
        want = from_ov_shape(opset1.squared_difference(p, q).get_output_partial_shape(0))
        (got,) = rule.infer(attrs_namespace({"auto_broadcast": "numpy"}),
                            [TensorInfo(a, f32), TensorInfo(b, f32)])  # fmt: skip
        assert got.shape == want, (a, b)
    with pytest.raises(ShapeError, match="do not broadcast"):
        rule.infer(attrs_namespace({"auto_broadcast": "numpy"}),
                   [TensorInfo((2, 3), f32), TensorInfo((4,), f32)])  # fmt: skip


@pytest.mark.parametrize("op", [*sorted(TRIG), "SquaredDifference"])
def test_booleans_are_refused_as_openvino_refuses_them(op):
    p = opset1.parameter([2], ov.Type.boolean)
    factory = TRIG[op][0] if op in TRIG else opset1.squared_difference
    with pytest.raises(RuntimeError):
        factory(p) if op in TRIG else factory(p, p)
    infos = [TensorInfo((2,), ELEMENT_TYPES["boolean"])] * (1 if op in TRIG else 2)
    with pytest.raises(ShapeError, match="input 0 is boolean"):
        resolve(op, "opset16").infer(attrs_namespace({"auto_broadcast": "numpy"}), infos)


def test_trig_shape_rule_keeps_dynamic_dims():
    for op in TRIG:
        info = TensorInfo((Interval(1, 8), Interval(0, None), 3), ELEMENT_TYPES["i32"])
        (out,) = resolve(op, "opset16").infer(attrs_namespace({}), [info])
        assert out == info


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    p = opset1.parameter([2, 3], ov.Type.f32, name="in0")
    node = opset5.round(opset1.asin(p), "half_away_from_zero")
    node.set_friendly_name("rnd")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert irrun.validate(path) == []
    path.write_text(text.replace('mode="half_away_from_zero"', 'mode="half_up"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'rnd' (Round-v5)" in m and "mode" in m for m in found), found
    # The Round layer declares a wrong output dim.
    head, tail = text.split('type="Round"')
    path.write_text(head + 'type="Round"' + tail.replace("<dim>3</dim>", "<dim>4</dim>", 2))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'rnd' (Round-v5)" in m for m in found), found


# --------------------------------------------------------------------------- ConvertPromoteTypes

PROMOTE_TYPES = ("boolean", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2", "i8", "i16", "i32",
                 "i64", "u1", "u8", "u16", "u32", "u64")  # fmt: skip


@pytest.mark.parametrize("unsafe", [False, True])
@pytest.mark.parametrize("pytorch", [False, True])
def test_promoted_type_matches_openvino(unsafe, pytorch):
    from openvino import opset14

    rule = resolve("ConvertPromoteTypes", "opset14")
    for i, t0 in enumerate(PROMOTE_TYPES):
        for j, t1 in enumerate(PROMOTE_TYPES):
            shapes = [([2], [2]), ([], [3]), ([3], [])][(i + j) % 3]
            target = ("f32", "i64", "u64")[(i * 3 + j) % 3]
            p = opset1.parameter(shapes[0], getattr(ov.Type, t0))
            q = opset1.parameter(shapes[1], getattr(ov.Type, t1))
            attrs = attrs_namespace({"promote_unsafe": unsafe, "pytorch_scalar_promotion": pytorch,
                                     "u64_integer_promotion_target": ELEMENT_TYPES[target]})
            infos = [TensorInfo(tuple(shapes[0]), ELEMENT_TYPES[t0]),
                     TensorInfo(tuple(shapes[1]), ELEMENT_TYPES[t1])]  # fmt: skip
            try:
                node = opset14.convert_promote_types(p, q, unsafe, pytorch, target)
            except RuntimeError:
                with pytest.raises(ShapeError):
                    rule.infer(attrs, infos)
                continue
            want = node.get_output_element_type(0).get_type_name()
            got = rule.infer(attrs, infos)
            assert [g.element_type.name for g in got] == [want, want], (t0, t1, shapes)
            assert [g.shape for g in got] == [tuple(shapes[0]), tuple(shapes[1])]


@pytest.mark.parametrize("t0, t1, unsafe, pytorch", [
    ("i8", "f32", True, False), ("u8", "i8", True, False), ("f32", "i64", True, True),
    ("i32", "f64", False, False), ("u16", "i32", False, False), ("f16", "f32", False, False),
    ("boolean", "i32", False, False), ("i64", "i32", False, True), ("u8", "u32", False, False),
])  # fmt: skip
def test_convert_promote_types_matches_cpu(t0, t1, unsafe, pytorch, tmp_path):
    from openvino import opset14

    rng = np.random.default_rng(len(t0 + t1))
    values = []
    for et, shape in ((t0, (3, 4)), (t1, () if pytorch else (3, 4))):
        dtype = ELEMENT_TYPES[et].dtype
        if dtype.kind == "f":
            v = rng.normal(0, 100, shape).astype(dtype)
        elif dtype.kind == "b":
            v = rng.random(shape) < 0.5
        else:
            info = np.iinfo(dtype)
            v = rng.integers(max(info.min, -(2**20)), min(info.max, 2**20), shape).astype(dtype)
        values.append(np.asarray(v, dtype))
    got, want = run_both(lambda p, q: opset14.convert_promote_types(p, q, unsafe, pytorch),
                         values, tmp_path, outputs=2)  # fmt: skip
    for g, w in zip(got, want, strict=True):
        # The plugin computes f64 in f32 (its inference precision).
        rtol = 1e-7 if g.dtype == np.float64 else 0.0
        assert_close(g, w, rtol=rtol, what=f"{t0} {t1}")


def test_convert_promote_types_by_hand(tmp_path):
    from openvino import opset14

    x, y = np.array([200, 255], np.uint8), np.array([-1, 5], np.int8)
    model = one_op_model(lambda p, q: opset14.convert_promote_types(p, q, True), [x, y], 2)
    a, b = run_saved(model, [x, y], tmp_path)
    assert a.dtype == b.dtype == np.int16 and a.tolist() == [200, 255] and b.tolist() == [-1, 5]
    rule = resolve("ConvertPromoteTypes", "opset14")
    attrs = attrs_namespace({"promote_unsafe": False, "pytorch_scalar_promotion": False,
                             "u64_integer_promotion_target": ELEMENT_TYPES["f32"]})
    with pytest.raises(ShapeError, match="i64 cannot be promoted to f32 safely"):
        rule.infer(attrs, [TensorInfo((2,), ELEMENT_TYPES["f32"]),
                           TensorInfo((2,), ELEMENT_TYPES["i64"])])  # fmt: skip


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


def test_sign_negative_floor_elu_by_hand(tmp_path):
    f = np.float32
    x = np.array([np.nan, -np.inf, -2.5, -0.0, 0.0, 1e-30, 3.0], f)
    sign = run_irrun(opset1.sign, [x], tmp_path)
    assert np.isnan(sign[0]) and sign[1:].tolist() == [-1, -1, 0, 0, 1, 1]
    assert not np.signbit(sign[3])  # -0.0 gives +0.0, as in the plugin
    neg = run_irrun(opset1.negative, [x], tmp_path)
    assert neg[1:].tolist() == [np.inf, 2.5, 0, 0, float(f(-1e-30)), -3]
    assert not np.signbit(neg[3]) and np.signbit(neg[4])
    ints = np.array([-(2**31), -7, 0, 2**31 - 1], np.int32)
    assert run_irrun(opset1.negative, [ints], tmp_path).tolist() == [-(2**31), 7, 0, -(2**31) + 1]
    # Integers go through f32, where int32's maximum rounds up to 2**31 and overflows.
    assert run_irrun(opset1.floor, [ints], tmp_path).tolist() == [-(2**31), -7, 0, -(2**31)]
    assert run_irrun(opset1.sign, [np.array([0, 3, 255], np.uint8)], tmp_path).tolist() == [
        0, 1, 1]  # fmt: skip
    elu = run_irrun(lambda p: opset1.elu(p, 0.5), [np.array([-1.0, 0.0, 2.0], f)], tmp_path)
    assert np.allclose(elu, [0.5 * (math.exp(-1) - 1), 0, 2], rtol=1e-6, atol=0)


def test_negative_of_unsigned_is_refused(tmp_path):
    p = opset1.parameter([3], ov.Type.f32, name="in0")
    model = ov.Model([opset1.negative(p)], [p])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    text = path.read_text().replace('element_type="f32"', 'element_type="u8"').replace(
        "<precision>FP32</precision>", "<precision>U8</precision>")  # fmt: skip
    path.write_text(text.replace('precision="FP32"', 'precision="U8"'))
    with pytest.raises(irrun.IrrunError, match="input 0 is u8, which Negative-v1 does not take"):
        irrun.load(path)


def test_erf_accuracy():
    xs = np.concatenate([np.linspace(-6, 6, 2401), [1e-30, -1e-8, 0.4999, 0.5, 0.5001]])
    want = np.array([math.erf(v) for v in xs.astype(np.float32).astype(float)])
    got = erf(xs.astype(np.float32)).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-37)


# --------------------------------------------------------------------------- ErfInv


def _erfinv_input(rng, n, dtype):
    x = rng.uniform(-1, 1, n)
    tails = 1 - np.logspace(-7, -1, 64)  # both branches, the tail's w >= 5 included
    edges = [0.0, -0.0, 1.0, -1.0, 1.5, -2.0, np.nan, np.inf, -np.inf, 1e-30, 0.5, -0.5]
    return np.concatenate([edges, tails, -tails, x]).astype(dtype)


def test_erfinv_f32_matches_cpu(tmp_path):
    x = _erfinv_input(np.random.default_rng(17), 4000, np.float32)
    got, want = run_both(opset17.erfinv, [x], tmp_path)
    assert_close(got, want, rtol=1.1e-4, what="ErfInv")
    assert np.array_equal(np.isnan(got), np.isnan(want))
    middle = (np.abs(x) > 1e-3) & (np.abs(x) < 0.5)
    assert_close(got[middle], want[middle], rtol=2e-7, what="ErfInv (1e-3, 0.5)")


def test_erfinv_f16_matches_cpu(tmp_path):
    x = _erfinv_input(np.random.default_rng(16), 500, np.float16)
    got, want = run_both(opset17.erfinv, [x], tmp_path)
    assert_close(got, want, rtol=1e-3, what="ErfInv f16")


def test_erfinv_by_hand(tmp_path):
    x = np.array([0.0, -0.0, 0.5, -0.9, 1.0, -1.0, 1.0000001, np.nan], np.float64)
    got = run_irrun(opset17.erfinv, [x], tmp_path)
    # erfinv(0.5) = 0.4769362762044699, erfinv(0.9) = 1.1630871536766743: Giles'
    # approximation is within 4e-7 of them, relative.
    assert np.allclose(got[2:4], [0.4769362762044699, -1.1630871536766743], rtol=4e-7, atol=0)
    assert got[:2].tolist() == [0.0, 0.0] and not np.signbit(got[1])
    assert got[4:6].tolist() == [np.inf, -np.inf] and np.isnan(got[6:]).all()
    # Near 1 the approximation carries OpenVINO's sign of its seventh tail coefficient:
    # 2.06452 for x = 0.99666554, where erfinv is 2.07543 (the CPU plugin agrees, above).
    near_one = erfinv(np.array([0.99666554], np.float32))
    assert abs(float(near_one[0]) - 2.0645218) < 2e-6
    # Round trip where the approximation is faithful: erf(erfinv(x)) = x.
    xs = np.linspace(-0.99, 0.99, 199)
    back = np.array([math.erf(v) for v in erfinv(xs)])
    np.testing.assert_allclose(back, xs, rtol=0, atol=1e-6)


def test_erfinv_only_in_opset17():
    assert resolve("ErfInv", "opset17").label == "ErfInv-v17"
    for n in (1, 16):
        with pytest.raises(LookupError, match="has no op ErfInv"):
            resolve("ErfInv", f"opset{n}")


@pytest.mark.parametrize("et", ["i32", "boolean"])
def test_erfinv_refuses_what_openvino_refuses(et):
    with pytest.raises(RuntimeError):
        opset17.erfinv(opset1.parameter([2], getattr(ov.Type, et)))
    with pytest.raises(ShapeError, match="input 0"):
        resolve("ErfInv", "opset17").infer(attrs_namespace({}), [TensorInfo((2,), ELEMENT_TYPES[et])])


@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4), None, (Interval(1, 8), Interval(0, None))])
@pytest.mark.parametrize("et", ["f32", "f16", "bf16", "f64"])
def test_erfinv_shape_rule_matches_openvino(shape, et):
    p = opset1.parameter(to_ov_shape(shape), getattr(ov.Type, et))
    node = opset17.erfinv(p)
    (out,) = resolve("ErfInv", "opset17").infer(attrs_namespace({}),
                                                [TensorInfo(shape, ELEMENT_TYPES[et])])
    assert out.shape == from_ov_shape(node.get_output_partial_shape(0))
    assert out.element_type == ELEMENT_TYPES[et]


# --------------------------------------------------------------------------- element types

# label: (type, opset, build, rtol for floats): each over every type its input takes.
TYPED = {
    "Sqrt": ("Sqrt", "opset1", opset1.sqrt), "Exp": ("Exp", "opset1", opset1.exp),
    "Log": ("Log", "opset1", opset1.log), "Erf": ("Erf", "opset1", opset1.erf),
    "Sin": ("Sin", "opset1", opset1.sin), "Cos": ("Cos", "opset1", opset1.cos),
    "Tan": ("Tan", "opset1", opset1.tan), "Tanh": ("Tanh", "opset1", opset1.tanh),
    "Floor": ("Floor", "opset1", opset1.floor), "Ceiling": ("Ceiling", "opset1", opset1.ceiling),
    "Acos": ("Acos", "opset1", opset1.acos), "Asin": ("Asin", "opset1", opset1.asin),
    "Atan": ("Atan", "opset1", opset1.atan), "Cosh": ("Cosh", "opset1", opset1.cosh),
    "Sinh": ("Sinh", "opset1", opset1.sinh), "Acosh": ("Acosh", "opset4", opset4.acosh),
    "Asinh": ("Asinh", "opset4", opset4.asinh), "Atanh": ("Atanh", "opset4", opset4.atanh),
    "ErfInv": ("ErfInv", "opset17", opset17.erfinv),
    "Round-even": ("Round", "opset5", lambda p: opset5.round(p, "half_to_even")),
    "Round-away": ("Round", "opset5", lambda p: opset5.round(p, "half_away_from_zero")),
    "Abs": ("Abs", "opset1", opset1.abs), "Negative": ("Negative", "opset1", opset1.negative),
    "Sign": ("Sign", "opset1", opset1.sign), "IsFinite": ("IsFinite", "opset10", opset10.is_finite),
    "IsNaN": ("IsNaN", "opset10", opset10.is_nan), "IsInf": ("IsInf", "opset10", opset10.is_inf),
    "Identity": ("Identity", "opset16", opset16.identity),
}  # fmt: skip


# The types every run sweeps (one of each kind); the others run with -m slow.
FAST_TYPES = ("f32", "f16", "bf16", "f8e8m0", "f4e2m1", "i64", "u8", "u3", "i4", "boolean",
              "string", "nf4")  # fmt: skip


def _typed_cases():
    for label, (op_type, opset, _) in TYPED.items():
        for t in resolve(op_type, opset).input_types[0]:
            marks = () if t in FAST_TYPES else (pytest.mark.slow,)
            yield pytest.param(label, t, id=f"{label}-{t}", marks=marks)


# The functions in f64, to pick integer inputs whose results the type holds (OpenVINO's
# plugin saturates or wraps the others as irrun does not, see the module's doc).
MATH = {"Sqrt": np.sqrt, "Exp": np.exp, "Log": np.log, "Erf": np.vectorize(math.erf),
        "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Tanh": np.tanh, "Floor": np.floor,
        "Ceiling": np.ceil, "Acos": np.arccos, "Asin": np.arcsin, "Atan": np.arctan,
        "Cosh": np.cosh, "Sinh": np.sinh, "Acosh": np.arccosh, "Asinh": np.arcsinh,
        "Atanh": np.arctanh}  # fmt: skip
PACKED_RANGE = {"i4": (-8, 7), "u1": (0, 1), "u2": (0, 3), "u3": (0, 7), "u4": (0, 15),
                "u6": (0, 63)}  # fmt: skip


def _int_range(t: str) -> tuple[int, int]:
    if t in PACKED_RANGE:
        return PACKED_RANGE[t]
    info = np.iinfo(ELEMENT_TYPES[t].dtype)
    return int(info.min), int(info.max)


def _typed_values(label: str, t: str) -> np.ndarray:
    v = numbers(t)
    if label in MATH and t in ELEMENT_TYPES and ELEMENT_TYPES[t].dtype.kind in "iu":
        lo, hi = _int_range(t)
        with np.errstate(all="ignore"):
            xs = np.arange(max(lo, -4), min(hi, 7) + 1, dtype=np.float64)
            r = np.rint(MATH[label](xs))
        xs = xs[np.isfinite(r) & (r >= lo) & (r <= hi)]
        v = np.resize(xs, 8)
    if label in ("Acos", "Asin", "Atanh", "ErfInv") and t in REAL:  # within (-1, 1)
        v = v / 8 if t in ("f64", "f32", "f16", "bf16") else np.resize(
            [0.25, 0.5, 0.125] if t == "f8e8m0" else [-0.5, 0, 0.5], 8)  # fmt: skip
    # The plugin computes f64 in f32 and has no reference kernel of these in f64: f64's
    # infinities are f32's largest finite values there, log(0) f32's lowest.
    if label in ("IsFinite", "IsNaN", "IsInf") and t in ("f64", "f32", "f16", "bf16"):
        v[:3] = (np.nan, np.inf, -np.inf) if t != "f64" else (np.nan, 1e30, -1e30)
    if label == "Log" and t == "f64":
        v[v == 0] = 0.25
    return v.reshape(2, 4)


@pytest.mark.parametrize(("label", "t"), list(_typed_cases()))
def test_every_declared_type_matches_openvino(label, t, tmp_path):
    """Each type the input takes: the CPU plugin's values (the reference kernels' where the
    plugin runs none), or the f32 (i32) values converted to the type by OpenVINO where it
    has no kernel of the type (f8, f4 and packed types: irrun computes them in f32 and rounds
    once); Identity of types OpenVINO runs no kernel of gives its input, by hand."""
    build = TYPED[label][2]
    values = [_typed_values(label, t)]
    if label == "Identity" and t not in NUMBERS:
        got = run_typed(build, values, [t], tmp_path)
        want = typed(values[0], t)
        assert got.dtype == want.dtype and got.tolist() == want.tolist()
        return
    rtol = 1.1e-4 if label == "ErfInv" else 4 * F32_ULP4
    check_types(build, values, [t], tmp_path, oracles=("cpu", "reference"), rtol=rtol,
                atol=1e-6, what=label)


@pytest.mark.parametrize(("label", "bad"), [
    ("Sqrt", "boolean"), ("Erf", "string"), ("Acosh", "nf4"), ("ErfInv", "i32"),
    ("Round-even", "string"), ("Abs", "boolean"), ("Negative", "u8"), ("Sign", "boolean"),
    ("IsNaN", "i32"), ("IsInf", "f8e4m3"), ("IsFinite", "boolean"),
])  # fmt: skip
def test_a_type_not_taken_is_an_error_of_validate(label, bad, tmp_path):
    op_type, opset, build = TYPED[label]
    op = resolve(op_type, opset)
    assert bad not in op.input_types[0]
    found = refused(build, ["f32"], 0, bad, tmp_path)
    assert_not_taken(found, 0, bad, op.label)
