"""Unary math: Sqrt, Exp, Log, Erf, ErfInv, Sin, Cos, Tan, Tanh, Acos, Asin, Atan, Cosh,
Sinh, Acosh, Asinh, Atanh, Floor, Ceiling, Round, Abs, Negative, Sign, IsFinite, IsInf,
IsNaN and Identity.

* Floats are computed in f32 (f64 for f64) and f16 rounded once, as the CPU plugin does
  (:func:`float_compute`); the plugin's f32 functions and NumPy's differ by a few ulp
  (the tests allow 4 ulp, see tests/ops/test_unary.py).  Integer inputs of the functions
  are computed in f32 and rounded half to even, NaN and overflow giving int32's minimum
  (wrapped into narrower types), as the plugin does: Floor of int32's maximum is its
  minimum there, ``asin(-1)`` is -2 (the reference kernel truncates to -1).  The plugin
  instead saturates 8-bit types and runs i64 as i32, so out-of-domain integer results
  differ there.  Acos, Asin, Atan, Cosh, Sinh, Tan (opset1) and Acosh, Asinh, Atanh (v3,
  first in opset4) take any numeric type.
* Erf is computed in f64 (:func:`erf`, :func:`erfc`): within 2e-7 of the true value,
  relative to it.
* ErfInv-17 (opset17) takes floats and is OpenVINO's reference kernel's rational
  approximation (M. Giles, "Approximating the erfinv function", GPU Computing Gems Jade,
  2011, the single-precision variant) evaluated in f64 and rounded once to the input's
  type (:func:`erfinv`): ``erfinv(0) = 0``, ``+-1`` give ``+-inf``, ``|x| > 1`` and NaN
  give NaN.  OpenVINO's reference and CPU plugin both carry ``-0.00943887047`` where
  Giles' tail polynomial has ``+0.00943887047``, so for ``|x| > 0.99663`` (``w >= 5``)
  both are off the true erfinv by up to 0.53% (2.0645 for x = 0.99666554, where the
  true value is 2.0754); irrun gives OpenVINO's values, not the paper's.  Elsewhere the
  approximation is within 4e-7 of erfinv, relative.  OpenVINO 2026.4 has no ``evaluate``
  for ErfInv; its CPU plugin computes in f32 by another route, within 1.1e-4 of irrun
  relative (the tests' tolerance; 2e-7 for 1e-3 < |x| < 0.5), and runs f64 as f32,
  giving f32's largest finite value, not infinity, for f64 +-1.
* Round-5 rounds half to even (``nearbyint``) or half away from zero (``std::round``);
  integers are returned unchanged.  irrun follows the reference kernel where the plugin
  differs: it rounds 0.49999997 up to 1 and gives +0.0 for -0.0 in
  ``half_away_from_zero``, and it passes integers through f32 (i32 1852092161 becomes
  1852092160).
* Sign is ``x > 0 ? 1 : x < 0 ? -1 : x`` but gives +0.0 for -0.0; Negative wraps on
  integers and takes no unsigned type (OpenVINO builds those), f8e8m0 included.
* The functions, Abs and Sign take any number, Round booleans too (packed integers one a
  byte: a result beyond their bits is not wrapped); bf16 and the low-precision floats are
  computed in f32 and rounded as Convert rounds to them (:func:`to_float`).
* IsFinite, IsInf (``detect_negative``, ``detect_positive``) and IsNaN (opset10) take
  floats and give booleans.
* Identity-16 copies its input, of any type.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.attributes import Attr
from ..ir.element_types import ALL_NUMBERS, ANY, ELEMENT_TYPES, FLOATS, LOW_FLOATS
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import infer_unary
from .convert import convert

BOOLEAN = ELEMENT_TYPES["boolean"]
BF16 = ELEMENT_TYPES["bf16"].dtype
# What OpenVINO's float-only activations take: every float type, the low-precision ones
# (computed in f32 and rounded once) included.
REAL = (*FLOATS, *LOW_FLOATS)
# Negative's types: the numbers with a sign.
SIGNED = tuple(name for name in ALL_NUMBERS if name[0] in "fbi" and name != "f8e8m0")


def to_float(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``out`` (f32 or f64 work) rounded to the float type ``dtype``: the low-precision
    floats as OpenVINO converts to them (:func:`irrun.ops.convert.convert`: f8e8m0 has no
    zero, nor sign, f4e2m1 no NaN), the others by NumPy."""
    if dtype.kind == "V" and dtype != BF16:
        return convert(out, dtype)
    with np.errstate(over="ignore"):  # beyond f16's range is inf, as in the plugin
        return out.astype(dtype, copy=False)


def float_compute(x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` in f32 (f64 for f64 inputs), rounded once to ``x``'s type.

    Integers are rounded half to even, as the CPU plugin converts its f32 result.
    """
    work = x if x.dtype == np.float64 else x.astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        out = np.asarray(fn(work))
    if x.dtype.kind in "iu":
        return np.asarray(convert(np.rint(out), x.dtype))
    return to_float(out, x.dtype)


def unary_kernel(fn: Callable[[np.ndarray], np.ndarray]):
    """The kernel of an op that is ``fn`` computed by :func:`float_compute`."""

    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (float_compute(x, fn),)

    return kernel


# --------------------------------------------------------------------------- erf

# Numerical Recipes' erfcc: the coefficients of its polynomial in t, highest first.
_ERFC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
         0.09678418, 0.37409196, 1.00002368, -1.26551223)


def erfc(z: np.ndarray) -> np.ndarray:
    """erfc in ``z``'s float type: Numerical Recipes' erfcc (a Chebyshev fit), relative
    error below 1.2e-7 everywhere when computed in f64.

    ``erfc(a) = t exp(-a^2 + P(t))`` for ``a = |z|``, ``t = 1 / (1 + a/2)``, and
    ``erfc(z) = 2 - erfc(-z)`` for negative ``z``.
    """
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = np.full_like(t, _ERFC[0])
    for c in _ERFC[1:]:
        poly = poly * t + c
    tail = t * np.exp(poly - a * a)
    return np.where(z < 0, 2.0 - tail, tail)


def erf(x: np.ndarray) -> np.ndarray:
    """erf of a float array, computed in f64 and returned in ``x``'s type.

    A Taylor series below 0.5 (where ``1 - erfc`` would cancel), ``1 - erfc``
    above: within 2e-7 of the true value relative to it.
    """
    z = x.astype(np.float64)
    a = np.abs(z)
    small = a < 0.5
    # erf(z) = 2/sqrt(pi) * sum (-1)^n z^(2n+1) / (n! (2n+1)); 9 terms reach 1e-12 here.
    z2, term, series = z * z, z.copy(), np.zeros_like(z)
    for n in range(9):
        series += term / (2 * n + 1)
        term = term * -z2 / (n + 1)
    big = np.copysign(1.0 - erfc(a), z)
    return np.asarray(np.where(small, series * (2.0 / math.sqrt(math.pi)), big)).astype(x.dtype)


# --------------------------------------------------------------------------- functions

FUNCTIONS: dict[str, tuple[int, int, Callable[[np.ndarray], np.ndarray]]] = {
    # type: (version, since_opset, function); any input type but boolean, as OpenVINO
    "Sqrt": (1, 1, np.sqrt),
    "Exp": (1, 1, np.exp),
    "Log": (1, 1, np.log),
    "Erf": (1, 1, erf),
    "Sin": (1, 1, np.sin),
    "Cos": (1, 1, np.cos),
    "Tan": (1, 1, np.tan),
    "Tanh": (1, 1, np.tanh),
    "Floor": (1, 1, np.floor),
    "Ceiling": (1, 1, np.ceil),
    "Acos": (1, 1, np.arccos),
    "Asin": (1, 1, np.arcsin),
    "Atan": (1, 1, np.arctan),
    "Cosh": (1, 1, np.cosh),
    "Sinh": (1, 1, np.sinh),
    "Acosh": (3, 4, np.arccosh),
    "Asinh": (3, 4, np.arcsinh),
    "Atanh": (3, 4, np.arctanh),
}
# Bytes held per element (see _scratch): f32 work for narrower floats; integers' result
# converted through f64; Erf's series and erfc in f64.
FUNCTION_SCRATCH = per_element(0, 12, 48)
ERF_SCRATCH = per_element(112, 120, 120)

for _type, (_version, _since, _fn) in FUNCTIONS.items():
    register(
        OpDef(type=_type, version=_version, since_opset=_since, attrs=(), infer=infer_unary,
              kernel=unary_kernel(_fn), input_types=(ALL_NUMBERS,), elementwise=True,
              scratch=ERF_SCRATCH if _type == "Erf" else FUNCTION_SCRATCH)
    )


# --------------------------------------------------------------------------- ErfInv

# Giles' single-precision erfinv: r(s) for w = -log(1 - x^2), highest power first, with
# s = w - 2.5 below w = 5 and s = sqrt(w) - 3 from there on.  The seventh tail
# coefficient's sign is OpenVINO's (the paper has +0.00943887047): see the docstring.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, -0.00943887047, 1.00167406, 2.83297682)


def _horner(coefficients: tuple[float, ...], s: np.ndarray) -> np.ndarray:
    r = np.full_like(s, coefficients[0])
    for c in coefficients[1:]:
        r *= s
        r += c
    return r


def erfinv(x: np.ndarray) -> np.ndarray:
    """The inverse error function of a float array as OpenVINO's reference computes it:
    ``x * r(w)`` in f64 for ``w = -log((1 - x)(1 + x))``, rounded once to ``x``'s type."""
    z = x.astype(np.float64)
    with np.errstate(all="ignore"):
        w = np.asarray(-np.log((1.0 - z) * (1.0 + z)))
        tail = w >= 5.0
        r = _horner(_ERFINV_CENTRAL, w - 2.5)
        r[tail] = _horner(_ERFINV_TAIL, np.sqrt(w[tail]) - 3.0)
        r *= z
    a = np.abs(z)
    r[a == 1.0] = np.copysign(np.inf, z[a == 1.0])
    r[a > 1.0] = np.nan
    r[z == 0.0] = 0.0  # +0.0 for -0.0, as the reference returns T{0}
    return r.astype(x.dtype)


def _erfinv(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (erfinv(x),)


register(
    OpDef(type="ErfInv", version=17, since_opset=17, attrs=(), infer=infer_unary,
          kernel=_erfinv, input_types=(FLOATS,), elementwise=True, scratch=per_element(40))
)


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
    if x.dtype.kind == "V":  # bf16 and the low floats: in f32 (f8e8m0 holds no 0 to give)
        return (to_float(_round(a, x.astype(np.float32))[0], x.dtype),)
    fn = np.rint if a.mode == "half_to_even" else round_half_away
    with np.errstate(invalid="ignore"):
        return (np.asarray(fn(x)),)


register(
    OpDef(type="Round", version=5, since_opset=5,
          attrs=(Attr("mode", "enum", "half_to_even", ROUND_MODES),), infer=infer_unary,
          kernel=_round, input_types=((*ALL_NUMBERS, "boolean"),), elementwise=True,
          scratch=nothing)
)


# --------------------------------------------------------------------------- Abs, Negative, Sign


def _abs(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.asarray(np.abs(x)),)


def _negative(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(over="ignore"):
        return (np.asarray(np.negative(x)),)


def _sign(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype.kind == "V":  # bf16 and the low floats: in f32 (f8e8m0 holds no 0 to compare)
        return (to_float(_sign(a, x.astype(np.float32))[0], x.dtype),)
    out = np.asarray((x > 0).astype(x.dtype))
    if x.dtype.kind != "u":
        out -= (x < 0).astype(x.dtype)
    if x.dtype.kind == "f":
        out[np.isnan(x)] = np.nan
    return (out,)


for _type, _kernel in (("Abs", _abs), ("Negative", _negative), ("Sign", _sign)):
    register(OpDef(type=_type, version=1, since_opset=1, attrs=(), infer=infer_unary,
                   kernel=_kernel, input_types=(SIGNED if _type == "Negative" else ALL_NUMBERS,),
                   elementwise=True,
                   scratch=per_element(12, 8, 12) if _type == "Sign" else nothing))


# --------------------------------------------------------------------------- IsFinite, IsInf, IsNaN


def _infer_test(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, BOOLEAN)]


def _wide(x: np.ndarray) -> np.ndarray:
    return x if x.dtype.kind == "f" else x.astype(np.float32)  # bf16 and f8 types


def _is_finite(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.asarray(np.isfinite(_wide(x))),)


def _is_nan(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.asarray(np.isnan(_wide(x))),)


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
):
    register(
        OpDef(type=_type, version=10, since_opset=10, attrs=_attrs, infer=_infer_test,
              kernel=_kernel, input_types=(FLOATS,), elementwise=True, scratch=per_element(2, 6))
    )


# --------------------------------------------------------------------------- Identity


def _identity(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (x.copy(),)


register(
    OpDef(type="Identity", version=16, since_opset=16, attrs=(), infer=infer_unary,
          kernel=_identity, input_types=(ANY,), elementwise=True,
          scratch=nothing)
)
