"""Binary arithmetic: Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, Mod,
FloorMod, SquaredDifference, and ConvertPromoteTypes (the type promotion before them).

The two inputs have one element type, not boolean, and broadcast by ``auto_broadcast``
(:func:`irrun.ops._shapes.broadcast_shapes`).  f16 inputs are computed in f32 and
rounded once, as the CPU plugin computes them; bf16 and the low-precision floats alike
(rounded to them as Convert rounds).

* Maximum/Minimum are ``a > b ? a : b`` (``<`` for Minimum): a NaN in ``a`` gives
  ``b``, a NaN in ``b`` gives NaN, and of two equal zeros ``b`` wins (x86's
  maxps/minps, and OpenVINO's reference kernel).
* Integer arithmetic is exact and wraps, as OpenVINO's reference kernels do; the CPU
  plugin instead saturates 8-bit results and divides and raises integers in f32,
  ignoring ``m_pythondiv``.  irrun follows the specification there: Divide floors when
  ``m_pythondiv`` is true and truncates when false, an integer division by zero is an
  error, and an integer raised to a negative power is the truncated real result (0
  unless the base is 1 or -1).
* Mod and FloorMod of floats are ``x - trunc(x / y) * y`` and ``x - floor(x / y) * y``
  in the input's type, as the plugin's kernels compute them (so ``1e30 mod 3`` is 0,
  not fmod's 1); of integers, the exact remainder with the sign of ``x`` (Mod) or ``y``
  (FloorMod), and a remainder by zero is an error.
* SquaredDifference-1 is ``(x - y)**2``; integers wrap, as OpenVINO's other integer
  arithmetic does in the reference kernels (the plugin's 8-bit results are garbage and
  the reference kernel refuses integers).
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
from ..ir.element_types import ALL_NUMBERS, ELEMENT_TYPES, FLOATS, INTEGERS, ElementType
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import BROADCAST_ATTR, broadcast_operands, broadcast_shapes, same_element_type
from .convert import convert
from .unary import to_float

# OpenVINO's arithmetic takes every element type but boolean; irrun's not nf4 either, whose
# elements are codes (OpenVINO's shape rule takes nf4, no kernel of it adds them): the
# arithmetic types are ALL_NUMBERS.  (ARITHMETIC is its former name, kept for the modules
# that still import it.)
ARITHMETIC = ALL_NUMBERS


def infer_binary(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, y = inputs
    et = same_element_type(inputs)
    return [TensorInfo(broadcast_shapes(x.shape, y.shape, a.auto_broadcast), et)]


def binary_kernel(fn: Callable[[SimpleNamespace, np.ndarray, np.ndarray], np.ndarray],
                  boolean: bool = False):
    """The kernel of a binary op ``fn(attrs, x, y)``: same input types, broadcast by
    ``auto_broadcast``, f16 computed in f32; the result in the inputs' type, or
    boolean (comparisons and logical ops)."""

    def kernel(a: SimpleNamespace, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype != y.dtype:
            raise KernelError(f"inputs have different element types: {x.dtype} and {y.dtype}")
        mode = a.auto_broadcast
        # NumPy's own broadcasting is the numpy mode's, checked as it computes.
        xb, yb = (x, y) if mode == "numpy" else broadcast_operands(x, y, mode)
        try:
            with np.errstate(all="ignore"):
                if x.dtype.kind == "V" or (x.dtype.kind == "f" and x.dtype.itemsize < 4):
                    # f16, bf16 and the low floats in f32, rounded once as Convert rounds
                    out = fn(a, xb.astype(np.float32), yb.astype(np.float32))
                    if not boolean:
                        out = to_float(np.asarray(out), x.dtype)
                else:
                    out = fn(a, xb, yb)
        except ValueError:
            broadcast_operands(x, y, mode)  # raises, naming the shapes
            raise
        # A ufunc of 0-D arrays gives a scalar: the kernel's result is an array.
        return (np.asarray(out, np.bool_ if boolean else x.dtype),)

    return kernel


def _divide(x: np.ndarray, y: np.ndarray, pythondiv: bool) -> np.ndarray:
    if x.dtype.kind not in "iu":
        return x / y
    if (y == 0).any():
        raise KernelError("integer division by zero")
    if pythondiv:
        return x // y
    # C division truncates toward zero; floor division is one too low where the
    # signs differ and the division is inexact.
    q = x // y
    return q + ((q < 0) & (q * y != x)).astype(q.dtype)


def _power(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype.kind not in "iu":
        return np.power(x, y)
    negative = y < 0 if y.dtype.kind == "i" else np.zeros(y.shape, bool)
    if not negative.any():
        return np.power(x, y)
    x, y = np.broadcast_arrays(x, y)
    negative = np.broadcast_to(negative, x.shape)
    if (negative & (x == 0)).any():
        raise KernelError("integer 0 raised to a negative power")
    out = np.power(x, np.where(negative, 0, y))
    # The real result 1/x**|y| truncates to 0 except for x = 1 (1) and x = -1 (+-1).
    sign = np.where(y % 2 == 0, 1, -1).astype(x.dtype)
    flip = np.where(x == -1, sign, np.where(x == 1, 1, 0)).astype(x.dtype)
    return np.where(negative, flip, out)


def _mod(x: np.ndarray, y: np.ndarray, floor: bool) -> np.ndarray:
    if x.dtype.kind in "iu":
        if (y == 0).any():
            raise KernelError("integer remainder by zero")
        return np.mod(x, y) if floor else np.fmod(x, y)
    q = x / y
    return x - (np.floor(q) if floor else np.trunc(q)) * y


def _squared_difference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    d = x - y
    return d * d


BINARY: dict[str, Callable[[SimpleNamespace, np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": lambda a, x, y: np.add(x, y),
    "Subtract": lambda a, x, y: np.subtract(x, y),
    "Multiply": lambda a, x, y: np.multiply(x, y),
    "Divide": lambda a, x, y: _divide(x, y, a.m_pythondiv),
    "Maximum": lambda a, x, y: np.where(x > y, x, y),
    "Minimum": lambda a, x, y: np.where(x < y, x, y),
    "Power": lambda a, x, y: _power(x, y),
    "Mod": lambda a, x, y: _mod(x, y, floor=False),
    "FloorMod": lambda a, x, y: _mod(x, y, floor=True),
}
# Their kernels return new arrays, and a bias or a scale is added (multiplied) into a
# result as well as beside it: either input may take the result, since both commute.
IN_PLACE = ("Add", "Multiply")
# Bytes a kernel holds per element of its result (see _scratch): f16 is computed in f32;
# integer division, powers and float remainders hold a few whole-tensor temporaries.
SCRATCH = {"Divide": per_element(24, 24, 48), "Power": per_element(24, 24, 48),
           "Mod": per_element(24, 24, 48), "FloorMod": per_element(24, 24, 48)}

def warn_zero_divisor(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
    """An integer divisor known at load to hold a zero: the run will stop there."""
    x, y = inputs
    et = x.element_type or y.element_type
    if y.value is None or et is None or et.dtype.kind not in "iu":
        return []
    zeros = int(np.count_nonzero(np.asarray(y.value) == 0))
    if not zeros:
        return []
    return [f"the divisor (input 1) holds {zeros} zero{'s' if zeros > 1 else ''}: an integer "
            "division by zero, which stops a run as it stops OpenVINO's reference kernels (the "
            "CPU plugin divides in f32 and gives its own values, -2147483648 for i32 on x86); "
            "ONNX's BitShift past the bit width, which OpenVINO's frontend turns into a division "
            "by Power(2, shift), comes to this"]


WARN = {"Divide": warn_zero_divisor, "Mod": warn_zero_divisor, "FloorMod": warn_zero_divisor}

for _type, _fn in BINARY.items():
    _attrs: tuple[Attr, ...] = (BROADCAST_ATTR,)
    if _type == "Divide":
        _attrs = (BROADCAST_ATTR, Attr("m_pythondiv", "bool", True))
    register(
        OpDef(
            type=_type, version=1, since_opset=1, attrs=_attrs, infer=infer_binary,
            kernel=binary_kernel(_fn), inputs=(2, 2), shape_attrs=("auto_broadcast",),
            input_types=(ALL_NUMBERS, ALL_NUMBERS), elementwise=True, in_place=_type in IN_PLACE,
            fresh_output=_type in IN_PLACE, scratch=SCRATCH.get(_type, per_element(8, 16, 8)),
            warn=WARN.get(_type),
        )
    )
register(
    OpDef(type="SquaredDifference", version=1, since_opset=1, attrs=(BROADCAST_ATTR,),
          infer=infer_binary, kernel=binary_kernel(lambda a, x, y: _squared_difference(x, y)),
          inputs=(2, 2), shape_attrs=("auto_broadcast",), input_types=(ALL_NUMBERS, ALL_NUMBERS),
          elementwise=True, scratch=per_element(12, 16, 12))
)


# --------------------------------------------------------------------------- ConvertPromoteTypes

# The types ConvertPromoteTypes-14 takes (OpenVINO's: no f8e8m0, f4e2m1, u2, u3, u6, nf4).
PROMOTABLE = (*FLOATS, "f8e4m3", "f8e5m2", *INTEGERS, "i4", "u1", "u4", "boolean")
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
                             f"safely (promote_unsafe is false)")
        return real
    scalar0 = x.shape is not None and len(x.shape) == 0
    scalar1 = y.shape is not None and len(y.shape) == 0
    if a.pytorch_scalar_promotion and scalar0 != scalar1:
        target, scalar = (t1, t0) if scalar0 else (t0, t1)
        fits = (_is_signed(target) == _is_signed(scalar) and target.bits >= scalar.bits) or (
            _is_signed(target) and not _is_signed(scalar) and 2 * target.bits >= scalar.bits)
        if not unsafe and not fits:
            raise ShapeError(f"{pair}: the scalar's {scalar.name} does not fit "
                             f"{target.name} safely (promote_unsafe is false)")
        return target
    if _is_signed(t0) != _is_signed(t1):
        unsigned, signed = (t1, t0) if _is_signed(t0) else (t0, t1)
        if unsigned.bits <= 32 and (unsafe or 2 * unsigned.bits <= signed.bits):
            return ELEMENT_TYPES[_SIGNED_INTS[max(2 * unsigned.bits, signed.bits)]]
        if not unsafe:
            raise ShapeError(f"{pair}: no signed integer holds every {unsigned.name} "
                             f"(promote_unsafe is false)")
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
          infer=_infer_promote, kernel=_convert_promote, inputs=(2, 2),
          input_types=(PROMOTABLE, PROMOTABLE), scratch=per_element(16))
)
