"""Bitwise ops: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot (opset13) and
BitwiseLeftShift, BitwiseRightShift (opset15).

And, Or, Xor and Not take booleans or integers (both inputs of one type, broadcast
by ``auto_broadcast`` as arithmetic is) and give the same type; on booleans they
are the logical ops.  The shifts take integers only.  Results are exact, in the
element type, as OpenVINO's reference kernels compute them.  The CPU plugin runs
i64 and u64 in 32 bits (``2**40 + 5 & 2**40 + 3`` is 1 there, not ``2**40 + 1``);
irrun keeps all 64 bits.

A shift is C++'s ``a << b`` (``a >> b``) on the element type, which is what
OpenVINO's reference kernel writes; the right shift of a signed type is
arithmetic (``-5 >> 1`` is -3), of an unsigned one logical.  A shift amount that
is negative or not below the bit width is undefined in C++; irrun gives what x86's
shift instructions give, which is what the plugin computes for 8-, 16- and 32-bit
types and the installed reference kernel for i32 (the one type its evaluate takes):
8- and 16-bit values are promoted to i32, the shift amount taken modulo the
promoted width (32, or 64 for 64-bit types), and the result narrowed (wrapping).
So an i8 ``-5 << 8`` is 0, an i32 ``-5 << 33`` is -10, a u8 ``200 >> 100`` is 12.
For i64 and u64 the plugin's 32 bits also take the amount modulo 32, not 64.  These
are x86 figures (the CPU plugin on this x86 machine, 4096-element tensors included);
AArch64's scalar shifts also take the amount modulo 32 or 64, but its vector shifts
give 0 past the width, so an ARM build of the plugin may differ (not verified).
validate warns of a constant shift amount that is negative or not below the bit
width of the element type (:func:`warn_shift_width`).

A "BitShift past the width" that stops with "integer division by zero" is not these
ops: OpenVINO's ONNX frontend converts ONNX BitShift to ``Multiply``/``Divide`` by
``Power(2, y)``, and ``2**y`` of an unsigned type is 0 past the width (irrun, and
OpenVINO's reference for u32 and u64, the types its Power evaluates), so the Divide
divides by zero: OpenVINO's reference kernel then also stops with "integer division
by zero" for u32 and u64, and gives -1 for i32 and i64 (its ``2**y`` is the type's
minimum there and the division floors), where the CPU plugin gives 0 for all of them
(its Power saturates instead of wrapping: 255 for u8, 2**31 for u32).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.element_types import INTEGERS
from ..ir.registry import OpDef, TensorInfo, register
from ._scratch import nothing, per_element
from ._shapes import BROADCAST_ATTR, infer_unary
from .arithmetic import binary_kernel, infer_binary

BOOLEAN_OR_INTEGERS = ("boolean", *INTEGERS)


def _promoted(x: np.ndarray) -> np.ndarray:
    """``x`` as C++ promotes it for a shift: types narrower than int become int."""
    return x.astype(np.int32) if x.dtype.itemsize < 4 else x


def shift(x: np.ndarray, amount: np.ndarray, left: bool) -> np.ndarray:
    """``x << amount`` or ``x >> amount`` as compiled C++ computes it on x86.

    >>> shift(np.array([-5, -5], np.int8), np.array([8, 1], np.int8), left=True).tolist()
    [0, -10]
    >>> shift(np.array([200], np.uint8), np.array([100], np.uint8), left=False).tolist()
    [12]
    """
    wide = _promoted(x)
    bits = wide.dtype.itemsize * 8
    # x86's shift instructions keep only the amount's low bits.
    count = (amount.astype(np.int64) & (bits - 1)).astype(wide.dtype)
    out = np.left_shift(wide, count) if left else np.right_shift(wide, count)
    return out.astype(x.dtype)


def warn_shift_width(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
    """A constant shift amount that C++ leaves undefined (negative, or not below the
    element type's bit width): what irrun and the plugin give there is x86's."""
    x, amount = inputs[0], inputs[1]
    et = x.element_type or amount.element_type
    if amount.value is None or et is None or et.dtype.kind not in "iu":
        return []
    values = np.asarray(amount.value).astype(np.int64).reshape(-1)
    bits = et.dtype.itemsize * 8
    bad = np.unique(values[(values < 0) | (values >= bits)])
    if bad.size == 0:
        return []
    shown = ", ".join(str(v) for v in bad[:5]) + (", ..." if bad.size > 5 else "")
    promoted = max(bits, 32)
    return [f"shift amount {shown} is outside 0..{bits - 1} for {et.name} (undefined in C++): "
            f"irrun, as OpenVINO's CPU plugin on x86, shifts by the amount modulo {promoted}"
            + (" (the plugin runs 64-bit types in 32 bits: modulo 32)" if bits == 64 else "")
            + (f" of the value widened to 32 bits, then keeps the low {bits} bits"
               if bits < 32 else "")]


def _not(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.asarray(np.invert(x)),)


LOGIC = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
         "BitwiseXor": np.bitwise_xor}

for _type, _fn in LOGIC.items():
    register(OpDef(type=_type, version=13, since_opset=13, attrs=(BROADCAST_ATTR,),
                   infer=infer_binary, kernel=binary_kernel(lambda a, x, y, f=_fn: f(x, y)),
                   inputs=(2, 2), shape_attrs=("auto_broadcast",),
                   input_types=(BOOLEAN_OR_INTEGERS, BOOLEAN_OR_INTEGERS), elementwise=True,
                   scratch=nothing))
register(OpDef(type="BitwiseNot", version=13, since_opset=13, attrs=(), infer=infer_unary,
               kernel=_not, input_types=(BOOLEAN_OR_INTEGERS,), elementwise=True,
               scratch=nothing))
for _type, _left in (("BitwiseLeftShift", True), ("BitwiseRightShift", False)):
    register(OpDef(type=_type, version=15, since_opset=15, attrs=(BROADCAST_ATTR,),
                   infer=infer_binary,
                   kernel=binary_kernel(lambda a, x, y, left=_left: shift(x, y, left)),
                   inputs=(2, 2), shape_attrs=("auto_broadcast",),
                   input_types=(INTEGERS, INTEGERS), elementwise=True, warn=warn_shift_width,
                   scratch=per_element(24)))  # the promoted values and amounts
