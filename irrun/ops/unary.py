"""More element-wise math: inverse and hyperbolic trigonometry, Tan, Round, Selu,
HardSigmoid, IsFinite, IsInf, IsNaN, Identity, SquaredDifference and
ConvertPromoteTypes.

* Acos, Asin, Atan, Cosh, Sinh, Tan (opset1) and Acosh, Asinh, Atanh (v3, first in
  opset4) take any numeric type.  Floats are computed in f32 (f64 for f64) and f16
  rounded once, as the CPU plugin does; the plugin's f32 functions and NumPy's
  differ by a few ulp (the tests allow 4 ulp, see tests/test_ops_math.py).
  Integers follow :func:`irrun.ops.activations.float_compute`, as Sin and Exp do:
  the f32 result rounded half to even (``asin(-1)`` is -2, as in the plugin; the
  reference kernel truncates to -1), NaN and overflow giving int32's minimum
  (wrapped into narrower types; the plugin instead saturates 8-bit types and runs
  i64 as i32, so such out-of-domain results differ there, as they do for Sin).
* Round-5 rounds half to even (``nearbyint``) or half away from zero
  (``std::round``); integers are returned unchanged.  irrun follows the reference
  kernel where the plugin differs: it rounds 0.49999997 up to 1 and gives +0.0
  for -0.0 in ``half_away_from_zero``, and it passes integers through f32
  (i32 1852092161 becomes 1852092160).
* Selu-1 is ``lambda * (x > 0 ? x : alpha * (exp(x) - 1))`` (not expm1: near 0
  the plugin keeps f32's absolute precision only); HardSigmoid-1 is
  ``max(0, min(1, alpha * x + beta))`` (NaN gives 1, as in the plugin).  Both
  take floats only (OpenVINO builds an integer HardSigmoid, but neither its plugin
  nor its reference kernel runs one).  HardSigmoid's alpha and beta are 0-D; Selu's may have any
  shape, of which the plugin uses the first value, as irrun does (the reference
  kernel would cycle through them).
* IsFinite, IsInf (``detect_negative``, ``detect_positive``) and IsNaN (opset10)
  take floats and give booleans.
* Identity-16 copies its input.
* SquaredDifference-1 is ``(x - y)**2`` with ``auto_broadcast``; integers wrap, as
  OpenVINO's other integer arithmetic does in the reference kernels (the plugin's
  8-bit results are garbage and the reference kernel refuses integers).
* ConvertPromoteTypes-14 converts both inputs to one type by OpenVINO's rules
  (``promote_unsafe``, ``pytorch_scalar_promotion`` for 0-D inputs,
  ``u64_integer_promotion_target``) and converts as Convert does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.element_types import ELEMENT_TYPES, ElementType
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import blocks
from .activations import (
    BROADCAST_ATTR,
    binary_kernel,
    float_compute,
    infer_binary,
    same_element_type,
)
from .basic import convert

BOOLEAN = ELEMENT_TYPES["boolean"]
REAL = ("f64", "f32", "f16", "bf16")


def _infer_same(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, inputs[0].element_type)]


# --------------------------------------------------------------------------- trigonometry

TRIG: dict[str, tuple[int, int, Callable[[np.ndarray], np.ndarray]]] = {
    # type: (version, since_opset, function)
    "Acos": (1, 1, np.arccos),
    "Asin": (1, 1, np.arcsin),
    "Atan": (1, 1, np.arctan),
    "Cosh": (1, 1, np.cosh),
    "Sinh": (1, 1, np.sinh),
    "Tan": (1, 1, np.tan),
    "Acosh": (3, 4, np.arccosh),
    "Asinh": (3, 4, np.arcsinh),
    "Atanh": (3, 4, np.arctanh),
}


def _trig_kernel(fn: Callable[[np.ndarray], np.ndarray]):
    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (float_compute(x, fn),)

    return kernel


# OpenVINO's arithmetic takes every element type but boolean.
ARITHMETIC = tuple(name for name in ELEMENT_TYPES if name != "boolean")

for _type, (_version, _since, _fn) in TRIG.items():
    register(
        OpDef(type=_type, version=_version, since_opset=_since, attrs=(), infer=_infer_same,
              kernel=_trig_kernel(_fn), input_types=(ARITHMETIC,))
    )  # fmt: skip


# --------------------------------------------------------------------------- Round

ROUND_MODES = ("half_to_even", "half_away_from_zero")


def round_half_away(x: np.ndarray) -> np.ndarray:
    """``std::round``: ties away from zero, exact for every float (0.49999997 gives 0)."""
    t = np.trunc(x)
    # x - trunc(x) is exact, so the tie test is too; trunc keeps -0.0 and NaN.
    away = np.abs(x - t) >= x.dtype.type(0.5)
    return np.where(away, t + np.sign(x), t).astype(x.dtype, copy=False)


def _round(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype.kind in "iub":
        return (x.copy(),)
    fn = np.rint if a.mode == "half_to_even" else round_half_away
    with np.errstate(invalid="ignore"):
        return (blocks.elementwise(fn, x.shape, x.dtype, (x,)),)


register(
    OpDef(type="Round", version=5, since_opset=5,
          attrs=(Attr("mode", "enum", "half_to_even", ROUND_MODES),), infer=_infer_same,
          kernel=_round)
)  # fmt: skip


# --------------------------------------------------------------------------- Selu, HardSigmoid


def _real_parameters(op: str, names: tuple[str, str], scalars: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        et = same_element_type(inputs)
        if et is not None and et.name not in REAL:
            raise ShapeError(f"{op} needs floating-point inputs, got {et.name}")
        for name, info in zip(names, inputs[1:], strict=True):
            if scalars and info.shape is not None and len(info.shape) != 0:
                raise ShapeError(f"{name} must be a scalar, got shape {format_shape(info.shape)}")
            if info.shape is not None and 0 in info.shape:
                raise ShapeError(f"{name} has no value (shape {format_shape(info.shape)})")
        return _infer_same(a, inputs[:1])

    return infer


def _first(v: np.ndarray, name: str, dtype: np.dtype) -> np.generic:
    if v.size == 0:
        raise KernelError(f"{name} has no value (shape {list(v.shape)})")
    return dtype.type(v.reshape(-1)[0])


def _selu(a: SimpleNamespace, x: np.ndarray, alpha: np.ndarray, lam: np.ndarray):
    def fn(v: np.ndarray) -> np.ndarray:
        al, la = _first(alpha, "alpha", v.dtype), _first(lam, "lambda", v.dtype)
        # exp(x) - 1 rather than expm1, as the plugin computes it: near 0 it keeps
        # only f32's absolute precision.
        return la * np.where(v > 0, v, al * (np.exp(v) - v.dtype.type(1)))

    return (float_compute(x, fn),)


def _hard_sigmoid(a: SimpleNamespace, x: np.ndarray, alpha: np.ndarray, beta: np.ndarray):
    def fn(v: np.ndarray) -> np.ndarray:
        al, be = _first(alpha, "alpha", v.dtype), _first(beta, "beta", v.dtype)
        zero, one = v.dtype.type(0), v.dtype.type(1)
        # min(., 1) then max(., 0) in minps/maxps order: NaN gives 1, as in the plugin.
        t = al * v + be
        t = np.where(t < one, t, one)
        return np.where(t > zero, t, zero)

    return (float_compute(x, fn),)


register(
    OpDef(type="Selu", version=1, since_opset=1, attrs=(),
          infer=_real_parameters("Selu", ("alpha", "lambda"), scalars=False), kernel=_selu,
          inputs=(3, 3))
)  # fmt: skip
register(
    OpDef(type="HardSigmoid", version=1, since_opset=1, attrs=(),
          infer=_real_parameters("HardSigmoid", ("alpha", "beta"), scalars=True),
          kernel=_hard_sigmoid, inputs=(3, 3))
)  # fmt: skip


# --------------------------------------------------------------------------- IsFinite, IsInf, IsNaN


def _infer_test(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, BOOLEAN)]


def _wide(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind == "f" else x.astype(np.float32)  # bf16 and f8 types


def _is_finite(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.isfinite(_wide(x)),)


def _is_nan(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.isnan(_wide(x)),)


def _is_inf(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    w = _wide(x)
    out = np.zeros(x.shape, np.bool_)
    if a.detect_positive:
        out |= w == np.inf
    if a.detect_negative:
        out |= w == -np.inf
    return (out,)


for _type, _kernel, _attrs in (
    ("IsFinite", _is_finite, ()),
    ("IsNaN", _is_nan, ()),
    ("IsInf", _is_inf, (Attr("detect_negative", "bool", True),
                        Attr("detect_positive", "bool", True))),
):  # fmt: skip
    register(
        OpDef(type=_type, version=10, since_opset=10, attrs=_attrs, infer=_infer_test,
              kernel=_kernel, input_types=(REAL,))
    )  # fmt: skip


# --------------------------------------------------------------------------- Identity


def _identity(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (x.copy(),)


register(
    OpDef(type="Identity", version=16, since_opset=16, attrs=(), infer=_infer_same,
          kernel=_identity)
)  # fmt: skip


# --------------------------------------------------------------------------- SquaredDifference


def _squared_difference(a: SimpleNamespace, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = x - y
    return d * d


register(
    OpDef(type="SquaredDifference", version=1, since_opset=1, attrs=(BROADCAST_ATTR,),
          infer=infer_binary, kernel=binary_kernel(_squared_difference),
          inputs=(2, 2), shape_attrs=("auto_broadcast",), input_types=(ARITHMETIC, ARITHMETIC))
)  # fmt: skip


# --------------------------------------------------------------------------- ConvertPromoteTypes

PROMOTABLE = ("boolean", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2", "i4", "i8", "i16",
              "i32", "i64", "u1", "u4", "u8", "u16", "u32", "u64")  # fmt: skip
_SIGNED_INTS = {4: "i4", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}


def _is_real(et: ElementType) -> bool:
    return et.name[0] == "f" or et.name == "bf16"


def _is_signed(et: ElementType) -> bool:
    return et.name[0] in "fib"  # OpenVINO counts floats and boolean as signed


def promoted_type(a: SimpleNamespace, x: TensorInfo, y: TensorInfo) -> ElementType | None:
    """The common type ConvertPromoteTypes-14 converts both inputs to; ShapeError if none.

    >>> f32, i64, u8 = (ELEMENT_TYPES[n] for n in ("f32", "i64", "u8"))
    >>> a = SimpleNamespace(promote_unsafe=True, pytorch_scalar_promotion=False,
    ...                     u64_integer_promotion_target=f32)
    >>> promoted_type(a, TensorInfo((2,), f32), TensorInfo((2,), i64)).name
    'f32'
    >>> promoted_type(a, TensorInfo((2,), u8), TensorInfo((2,), ELEMENT_TYPES["i8"])).name
    'i16'
    """
    t0, t1 = x.element_type, y.element_type
    for et in (t0, t1):
        if et is not None and et.name not in PROMOTABLE:
            raise ShapeError(f"ConvertPromoteTypes does not take {et.name}")
    if t0 is None or t1 is None:
        return None
    if t0.name == t1.name or t1.name == "boolean":
        return t0
    if t0.name == "boolean":
        return t1
    unsafe = a.promote_unsafe
    pair = f"{t0.name} and {t1.name}"
    if _is_real(t0) != _is_real(t1):
        real, integer = (t0, t1) if _is_real(t0) else (t1, t0)
        if not unsafe and real.bits < 2 * integer.bits:
            raise ShapeError(f"{pair}: {integer.name} cannot be promoted to {real.name} "
                             f"safely (promote_unsafe is false)")  # fmt: skip
        return real
    scalar0 = x.shape is not None and len(x.shape) == 0
    scalar1 = y.shape is not None and len(y.shape) == 0
    if a.pytorch_scalar_promotion and scalar0 != scalar1:
        target, scalar = (t1, t0) if scalar0 else (t0, t1)
        fits = (_is_signed(target) == _is_signed(scalar) and target.bits >= scalar.bits) or (
            _is_signed(target) and not _is_signed(scalar) and 2 * target.bits >= scalar.bits)
        if not unsafe and not fits:
            raise ShapeError(f"{pair}: the scalar's {scalar.name} does not fit "
                             f"{target.name} safely (promote_unsafe is false)")  # fmt: skip
        return target
    if _is_signed(t0) != _is_signed(t1):
        unsigned, signed = (t1, t0) if _is_signed(t0) else (t0, t1)
        if unsigned.bits <= 32 and (unsafe or 2 * unsigned.bits <= signed.bits):
            return ELEMENT_TYPES[_SIGNED_INTS[max(2 * unsigned.bits, signed.bits)]]
        if not unsafe:
            raise ShapeError(f"{pair}: no signed integer holds every {unsigned.name} "
                             f"(promote_unsafe is false)")  # fmt: skip
        return a.u64_integer_promotion_target
    if t0.bits != t1.bits:
        return t0 if t0.bits > t1.bits else t1
    if unsafe and {t0.name, t1.name} == {"f8e4m3", "f8e5m2"}:
        return ELEMENT_TYPES["f16"]
    if unsafe and {t0.name, t1.name} == {"f16", "bf16"}:
        return ELEMENT_TYPES["f32"]
    raise ShapeError(f"{pair} have no common type with promote_unsafe={unsafe}")


def _infer_promote(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, y = inputs
    et = promoted_type(a, x, y)
    return [TensorInfo(x.shape, et), TensorInfo(y.shape, et)]


def _convert_promote(a: SimpleNamespace, x: np.ndarray, y: np.ndarray):
    # The arrays' dtypes name their element types (u1, u4 and i4 decode to u8 and i8,
    # which promote alike but for bit widths below 8).
    infos = [TensorInfo(v.shape, element_types.of_array(v)) for v in (x, y)]
    try:
        et = promoted_type(a, *infos)
    except ShapeError as e:
        raise KernelError(str(e)) from None
    assert et is not None
    return convert(x, et.dtype), convert(y, et.dtype)


register(
    OpDef(type="ConvertPromoteTypes", version=14, since_opset=14,
          attrs=(Attr("promote_unsafe", "bool", False),
                 Attr("pytorch_scalar_promotion", "bool", False),
                 Attr("u64_integer_promotion_target", "element_type", ELEMENT_TYPES["f32"])),
          infer=_infer_promote, kernel=_convert_promote, inputs=(2, 2))
)  # fmt: skip
