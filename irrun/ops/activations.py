"""Activations: ReLU, Clamp, Sigmoid, HSigmoid, HSwish, HardSigmoid, Elu, Selu, SoftPlus,
Mish, SoftSign, Swish, Gelu and PRelu.

Floats are computed in f32 (f64 for f64) and f16 rounded once, as the CPU plugin computes
them; integer inputs of Elu, Sigmoid, HSigmoid and HSwish are computed in f32 and rounded
half to even (see :func:`irrun.ops.unary.float_compute`).  Element types (``input_types``):
SoftPlus, Mish, SoftSign, Swish, Gelu, Selu and HardSigmoid take the floats, the
low-precision ones too (computed in f32 and rounded as Convert rounds to them); ReLU, Clamp,
Sigmoid, HSigmoid, HSwish and PRelu any number (packed integers one a byte: a result beyond
their bits is not wrapped); Elu booleans too, as in OpenVINO.  Where the plugin's f32
arithmetic is deterministic, irrun's is the same:

* ReLU is ``x > 0 ? x : 0``: NaN gives 0, and so does -0.0.
* Clamp is ``x > min ? x : min``, then ``t < max ? t : max`` (x86's maxps and minps), so
  NaN becomes ``min``.  Integers clamp to ``ceil(min)`` and ``floor(max)``.
* Sigmoid is ``1 / (1 + exp(-x))``, HSigmoid ``min(max(x + 3, 0), 6) / 6``, HSwish
  ``x * HSigmoid(x)``, SoftSign ``x / (1 + |x|)``, Elu ``x > 0 ? x : alpha * expm1(x)``.
* SoftPlus (and Mish, ``x * tanh(SoftPlus(x))``) is ``log(exp(x) + 1)``, as the plugin and
  the reference kernel compute it, not a more accurate form: their results agree.
* Swish-4 is ``x / (1 + exp(-beta x))`` (beta a scalar, 1 when absent).
* Gelu is ``x * Phi(x)`` (``approximation_mode="erf"``, Gelu-2's only mode), ``Phi(x) =
  erfc(-x / sqrt 2) / 2`` computed in f64: within 2e-7 of the true value relative to it,
  also in the negative tail where ``1 + erf`` would cancel.  The plugin's erf is off by up
  to ~2e-7 absolute.  ``tanh`` mode is ``x / 2 (1 + tanh(u))``, ``u = sqrt(2/pi) (x +
  0.044715 x^3)``.
* Selu-1 is ``lambda * (x > 0 ? x : alpha * (exp(x) - 1))`` (not expm1: near 0 the plugin
  keeps f32's absolute precision only); HardSigmoid-1 is ``max(0, min(1, alpha * x +
  beta))`` (NaN gives 1, as in the plugin).  Both take floats only (OpenVINO builds an
  integer HardSigmoid, but neither its plugin nor its reference kernel runs one).
  HardSigmoid's alpha and beta are 0-D; Selu's may have any shape, of which the plugin
  uses the first value, as irrun does (the reference kernel would cycle through them).
* PRelu is ``x < 0 ? x * slope : x`` (NaN and -0.0 stay); a 1-D slope as long as the
  input's axis 1 lies along that axis, any other slope broadcasts as NumPy does.

Selu and PRelu are not ``elementwise`` ops in the registry's sense: Selu reads the first
of its parameters' values for every element, and PRelu's slope lies along axis 1, not
by NumPy's broadcasting.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Shape, format_shape
from ..ir.element_types import ALL_NUMBERS, ELEMENT_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import broadcast_shapes, infer_unary, same_element_type
from .unary import REAL, erfc, float_compute, unary_kernel

# f8e8m0's dtype: powers of two, with neither zero nor sign.
E8M0 = ELEMENT_TYPES["f8e8m0"].dtype

# --------------------------------------------------------------------------- functions


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _hsigmoid(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    return np.minimum(np.maximum(x + t(3), t(0)), t(6)) / t(6)


def _softplus(x: np.ndarray) -> np.ndarray:
    """``log(exp(x) + 1)`` as OpenVINO computes it, ``x`` itself from where the two
    differ by less than 1e-6.  Below about -8 in f32 this keeps little of the true
    value's relative precision (``1 + exp(x)`` rounds), but it is the plugin's value."""
    t = x.dtype.type
    threshold = -math.log(math.expm1(10.0 ** -np.finfo(x.dtype).precision))
    return np.where(x < t(threshold), np.log(np.exp(x) + t(1)), x)


# Bytes held per element (see _scratch): a few temporaries in the compute type, f32 work
# for narrower floats, integers' result converted through f64.
SCRATCH = per_element(12, 16, 48)

FUNCTIONS = {
    # type: (since_opset, function, floats only; else any number, as OpenVINO)
    "Sigmoid": (1, _sigmoid, False),
    "HSigmoid": (5, _hsigmoid, False),
    "HSwish": (4, lambda x: x * _hsigmoid(x), False),
    "SoftPlus": (4, _softplus, True),
    "Mish": (4, lambda x: x * np.tanh(_softplus(x)), True),
    "SoftSign": (9, lambda x: x / (x.dtype.type(1) + np.abs(x)), True),
}

for _type, (_since, _fn, _real) in FUNCTIONS.items():
    register(
        OpDef(type=_type, version=_since, since_opset=_since, attrs=(),
              infer=infer_unary, kernel=unary_kernel(_fn),
              input_types=(REAL if _real else ALL_NUMBERS,), elementwise=True, scratch=SCRATCH)
    )


def _elu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    def fn(v: np.ndarray) -> np.ndarray:
        return np.where(v > 0, v, v.dtype.type(a.alpha) * np.expm1(v))

    return (float_compute(x, fn),)


register(OpDef(type="Elu", version=1, since_opset=1, attrs=(Attr("alpha", "float"),),
               infer=infer_unary, kernel=_elu, input_types=((*ALL_NUMBERS, "boolean"),),
               elementwise=True, scratch=SCRATCH))


# --------------------------------------------------------------------------- ReLU, Clamp


def _relu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype == E8M0:  # no zero to compare with (0 is NaN there), but no sign either
        return (x.copy(),)
    return (np.where(x > 0, x, x.dtype.type(0)),)


register(OpDef(type="ReLU", version=1, since_opset=1, attrs=(), infer=infer_unary,
               kernel=_relu, input_types=(ALL_NUMBERS,), elementwise=True, in_place=True,
               scratch=per_element(2)))


def clamp_bounds(dtype: np.dtype, lo: float, hi: float) -> tuple[np.generic, np.generic]:
    """Clamp's bounds in ``dtype``: integers take ``ceil(min)`` and ``floor(max)``,
    saturated to the type's range.

    >>> clamp_bounds(np.dtype(np.int32), -2.5, 3.5)
    (np.int32(-2), np.int32(3))
    """
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo_i = info.min if math.isinf(lo) or lo < info.min else max(math.ceil(lo), info.min)
        hi_i = info.max if math.isinf(hi) or hi > info.max else min(math.floor(hi), info.max)
        return dtype.type(min(lo_i, info.max)), dtype.type(max(hi_i, info.min))
    with np.errstate(over="ignore"):
        return dtype.type(lo), dtype.type(hi)


def _check_clamp(a: SimpleNamespace) -> None:
    if math.isnan(a.min) or math.isnan(a.max) or a.min > a.max:
        raise KernelError(f"min ({a.min}) must not be greater than max ({a.max})")


def _clamp(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype == E8M0:  # bounds it cannot hold (0, negatives) would be NaN: clamp in f32
        return (_clamp(a, x.astype(np.float32))[0].astype(x.dtype),)
    lo, hi = clamp_bounds(x.dtype, a.min, a.max)
    t = np.where(x > lo, x, lo)
    return (np.where(t < hi, t, hi).astype(x.dtype, copy=False),)


register(
    OpDef(
        type="Clamp", version=1, since_opset=1,
        attrs=(Attr("min", "float"), Attr("max", "float")),
        infer=infer_unary, kernel=_clamp, check=_check_clamp, shape_attrs=("min", "max"),
        input_types=(ALL_NUMBERS,), elementwise=True, in_place=True, scratch=per_element(12, 8, 12),
    )
)


# --------------------------------------------------------------------------- Selu, HardSigmoid


def _real_parameters(op: str, names: tuple[str, str], scalars: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        same_element_type(inputs)
        for name, info in zip(names, inputs[1:], strict=True):
            if scalars and info.shape is not None and len(info.shape) != 0:
                raise ShapeError(f"{name} must be a scalar, got shape {format_shape(info.shape)}")
            if info.shape is not None and 0 in info.shape:
                raise ShapeError(f"{name} has no value (shape {format_shape(info.shape)})")
        return infer_unary(a, inputs[:1])

    return infer


def _first(v: np.ndarray, name: str, dtype: np.dtype) -> np.generic:
    if v.size == 0:
        raise KernelError(f"{name} has no value (shape {list(v.shape)})")
    return dtype.type(v.reshape(-1)[0])


def _selu(a: SimpleNamespace, x: np.ndarray, alpha: np.ndarray, lam: np.ndarray):
    def fn(v: np.ndarray) -> np.ndarray:
        al, la = _first(alpha, "alpha", v.dtype), _first(lam, "lambda", v.dtype)
        return la * np.where(v > 0, v, al * (np.exp(v) - v.dtype.type(1)))

    return (float_compute(x, fn),)


def _hard_sigmoid(a: SimpleNamespace, x: np.ndarray, alpha: np.ndarray, beta: np.ndarray):
    def fn(v: np.ndarray) -> np.ndarray:
        al, be = _first(alpha, "alpha", v.dtype), _first(beta, "beta", v.dtype)
        zero, one = v.dtype.type(0), v.dtype.type(1)
        t = al * v + be
        t = np.where(t < one, t, one)
        return np.where(t > zero, t, zero)

    return (float_compute(x, fn),)


register(
    OpDef(type="Selu", version=1, since_opset=1, attrs=(),
          infer=_real_parameters("Selu", ("alpha", "lambda"), scalars=False), kernel=_selu,
          inputs=(3, 3), input_types=(REAL, REAL, REAL), scratch=SCRATCH)
)
register(
    OpDef(type="HardSigmoid", version=1, since_opset=1, attrs=(),
          infer=_real_parameters("HardSigmoid", ("alpha", "beta"), scalars=True),
          kernel=_hard_sigmoid, inputs=(3, 3), input_types=(REAL, REAL, REAL), elementwise=True,
          scratch=SCRATCH)
)


# --------------------------------------------------------------------------- PRelu


def prelu_slope_shape(x: Shape | None, slope: Shape | None) -> Shape | None:
    """The slope's shape as it lies over ``x``: a 1-D slope as long as axis 1 lies
    along it, any other broadcasts as NumPy does.

    >>> prelu_slope_shape((2, 3, 4, 5), (3,)), prelu_slope_shape((2, 3, 4, 5), (5,))
    ((1, 3, 1, 1), (5,))
    """
    if x is None or slope is None or len(slope) != 1 or len(x) < 2 or slope[0] != x[1]:
        return slope
    return (1, slope[0]) + (1,) * (len(x) - 2)


def _infer_prelu(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, slope = inputs
    same_element_type(inputs)
    s = prelu_slope_shape(x.shape, slope.shape)
    out = broadcast_shapes(x.shape, s)
    # The slope may not stretch the input (with unknown dims, only its rank is sure).
    stretched = out is not None and x.shape is not None and out != tuple(x.shape) and (
        len(out) != len(x.shape) or all(isinstance(d, int) for d in out + tuple(x.shape)))
    if stretched:
        raise ShapeError(f"slope {format_shape(slope.shape)} does not broadcast onto the "
                         f"input {format_shape(x.shape)}")
    return [TensorInfo(x.shape, x.element_type)]


def _prelu(a: SimpleNamespace, x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype != slope.dtype:
        raise KernelError(f"inputs have different element types: {x.dtype} and {slope.dtype}")
    s = slope.reshape(prelu_slope_shape(x.shape, slope.shape))
    if np.broadcast_shapes(x.shape, s.shape) != x.shape:
        raise KernelError(f"slope {list(slope.shape)} does not broadcast onto the input "
                          f"{list(x.shape)}")
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and x.dtype.itemsize < 4:
            scaled = (x.astype(np.float32) * s.astype(np.float32)).astype(x.dtype)
        else:
            scaled = x * s
    return (np.where(x < 0, scaled, x),)


register(OpDef(type="PRelu", version=1, since_opset=1, attrs=(), infer=_infer_prelu,
               kernel=_prelu, inputs=(2, 2), input_types=(ALL_NUMBERS, ALL_NUMBERS),
               scratch=SCRATCH))


# --------------------------------------------------------------------------- Swish, Gelu


def _infer_swish(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    out = infer_unary(a, inputs[:1])
    if len(inputs) == 2:
        beta = inputs[1]
        if beta.shape is not None and len(beta.shape) != 0:
            raise ShapeError(f"beta must be a scalar, got shape {format_shape(beta.shape)}")
        same_element_type(inputs)
    return out


def _swish(a: SimpleNamespace, x: np.ndarray, beta: np.ndarray | None = None):
    if beta is not None and beta.ndim != 0:
        raise KernelError(f"beta must be a scalar, got shape {list(beta.shape)}")

    def fn(v: np.ndarray) -> np.ndarray:
        e = np.exp(-v if beta is None else v * -v.dtype.type(beta))
        return v / (v.dtype.type(1) + e)

    return (float_compute(x, fn),)


register(
    OpDef(type="Swish", version=4, since_opset=4, attrs=(), infer=_infer_swish, kernel=_swish,
          inputs=(1, 2), input_types=(REAL, REAL), elementwise=True, in_place=True,
          scratch=per_element(20))
)


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """``x * Phi(x)``, ``Phi(x) = erfc(-x / sqrt 2) / 2``, computed in f64 and returned in
    ``x``'s float type.

    Below -40 ``Phi`` underflows to 0 in f64, where ``-inf * 0`` would be NaN: x is taken
    as -40 there, which gives the limit, -0.0.
    """
    z = np.maximum(x.astype(np.float64), -40.0)
    return np.asarray(z * 0.5 * erfc(z * -(1.0 / math.sqrt(2.0)))).astype(x.dtype)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """``0.5 * x * (1 + tanh(u))`` written as ``x / (1 + exp(-2u))``: the same value
    without the cancellation of ``1 + tanh(u)`` for negative ``x``."""
    t = x.dtype.type
    inner = t(math.sqrt(2.0 / math.pi)) * (x + t(0.044715) * x * x * x)
    return x / (t(1) + np.exp(t(-2) * inner))


GELU_MODES = ("erf", "tanh")
# Bytes held per element (see _scratch): erf mode's f64 work holds some ten arrays.
_GELU_SCRATCH = {"erf": per_element(88, 96), "tanh": per_element(20)}


def _gelu_scratch(a: SimpleNamespace, inputs, outputs) -> int:
    return _GELU_SCRATCH[getattr(a, "approximation_mode", "erf")](a, inputs, outputs)



def _gelu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    mode = getattr(a, "approximation_mode", "erf")
    return (float_compute(x, gelu_erf if mode == "erf" else gelu_tanh),)


register(
    OpDef(type="Gelu", version=2, since_opset=2, attrs=(), infer=infer_unary, kernel=_gelu,
          input_types=(REAL,), elementwise=True, in_place=True, fresh_output=True,
          scratch=_gelu_scratch)
)
register(
    OpDef(
        type="Gelu", version=7, since_opset=7,
        attrs=(Attr("approximation_mode", "enum", "erf", GELU_MODES),),
        infer=infer_unary, kernel=_gelu, shape_attrs=("approximation_mode",), input_types=(REAL,),
        elementwise=True, in_place=True, fresh_output=True, scratch=_gelu_scratch,
    )
)
