"""Element type conversion: Convert-v1 and ConvertLike-v1.

Convert-v1 converts to ``destination_type`` as the CPU plugin does (see :func:`convert`).
ConvertLike-v1 converts its first input to the element type of its second (whose values
are not read) exactly as Convert does; ONNX's LpPool, for one, converts to it.  Its
kernel sees only the second input's array, in which a u1/u2/u3/u4/u6/i4 one reads as
u8/i8: so its shape rule records the second input's element type as the layer's
``destination_type``, and the kernel converts to that (a ConvertLike to u4 wraps to 4
bits, as OpenVINO's, which turns ConvertLike into that Convert).  Both ports take any
element type (real IRs bring f16/bf16 weights, u8/i8 data and i4/u4/nf4/f8 compressed
weights to Convert); a conversion from or to string is refused by the shape rule.

The small floats (f8e4m3, f8e5m2, f8e8m0, f4e2m1, nf4) are made as OpenVINO 2026.4
makes them, bit for bit against its plugin and reference kernels over every f16 and bf16
value and random f32 ones: f8e4m3 and f8e5m2 through f16 (rounded twice), f8e5m2 through
OpenVINO's own f16 rounding, which doubles a few values below f16's normal range.  Where
OpenVINO's plugin and reference part, or both are plainly wrong, irrun:

* keeps NaN a NaN in f8e5m2 (the plugin from f16; OpenVINO from f32, and its reference
  always, drop the quiet bit: a NaN with payload in its low bits becomes infinity);
* makes NaN false in boolean (the plugin; the reference, the only kernel converting the
  f8 types to boolean, makes it true);
* keeps infinities in f64 (the reference; the plugin makes them f32's largest value);
* wraps f64 to i4/u4 as from any float (the reference; the plugin's f64 to i4/u4 gives
  other values);
* wraps to i4 and u4 also in ``Convert(i4) -> Convert(f32)`` (the reference; the plugin
  drops such a round trip from its graph, so -9 stays -9 there);
* rounds nf4's table to bf16 to nearest even (OpenVINO rounds codes 8 and 9 down).

The plugin's Convert to u1 gives the right values but corrupts its heap (the next
compile_model in the process crashes), so u1 is tested against the reference alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import ml_dtypes
import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.element_types import ANY, ElementType
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import largest


def _no_strings(source: ElementType | None, target: ElementType | None) -> None:
    """OpenVINO reads a Convert from or to string but runs none (not even string to
    string): refused, as irrun could only make up what it does."""
    if "string" in (getattr(source, "name", None), getattr(target, "name", None)):
        raise ShapeError(f"converts {source or 'dynamic'} to {target or 'dynamic'}: OpenVINO "
                         "runs no Convert of string tensors")  # fmt: skip


def _convert_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    _no_strings(inputs[0].element_type, a.destination_type)
    return [TensorInfo(inputs[0].shape, a.destination_type)]


# ml_dtypes' floats, read as f32 (exactly) before any conversion.
_ML_FLOATS = tuple(np.dtype(t) for t in (ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                         ml_dtypes.float8_e5m2, ml_dtypes.float8_e8m0fnu,
                                         ml_dtypes.float4_e2m1fn))  # fmt: skip
_INT_BITS = {"u1": 1, "u2": 2, "u3": 3, "u4": 4, "u6": 6, "i4": 4}
# NF4's decision boundaries (f32, as OpenVINO compares them): a value's code is the number
# of boundaries below it.
_NF4_BOUNDS = np.array([
    -0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
    -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
    0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
    0.5016634166240692, 0.6427869200706482, 0.8614784181118011,
], np.float32)  # fmt: skip


def _target(target: np.dtype | ElementType) -> ElementType:
    if isinstance(target, ElementType):
        return target
    et = element_types.of_array(np.empty(0, target))
    if et is None:
        raise KernelError(f"Convert: no element type is numpy {target}")
    return et


def _as_f32(x: np.ndarray) -> np.ndarray:
    """Any number as f32, as OpenVINO converts to its small floats: f64 rounds once."""
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(np.float32)


def ov_f16_bits(x: np.ndarray) -> np.ndarray:
    """f32 to f16 bits as OpenVINO's ``float16(float)`` rounds them (its f8e5m2 path).

    Round to nearest even, overflow to infinity, f32 subnormals to signed zero, NaN keeps
    the top 10 bits of its payload (0x0001 when they are zero, no quiet bit set).  Its one
    departure from IEEE: a value below f16's normal range whose rounding at f16's normal
    precision carries into the exponent is then denormalised with that carried exponent,
    which doubles it (0x377fffff, just below 2^-16, becomes 2^-15, not 2^-16).
    """
    iv = np.array(x, np.float32, order="C").view(np.uint32).astype(np.int64)
    sign = (iv >> 16) & 0x8000
    e32 = (iv >> 23) & 0xFF
    mant = iv & 0x7FFFFF
    frac = mant << 3

    def rounded(f: np.ndarray) -> np.ndarray:
        up = ((f & 0x1FFFF) == 0x18000) | ((f & 0x7FFF) != 0)
        return f + np.where(up, 0x8000, 0)

    exp = e32 - 127 + 15
    f = rounded(frac)
    carry = (f & 0x7C000000) != 0
    exp = exp + carry
    f = np.where(carry, 0, f & 0x03FF0000)
    normal = sign | np.minimum(np.maximum(exp, 0), 31) << 10 | f >> 16
    out = np.where(exp > 30, sign | 0x7C00, normal)
    # Below the normal range: the hidden one restored, shifted by 1 - exp, a sticky bit.
    shift = np.clip(1 - exp, 0, 40)
    full = 0x04000000 | frac
    sticky = (full & ((np.int64(1) << np.minimum(shift, 32)) - 1)) != 0
    small = np.where(shift > 31, 0, full >> np.minimum(shift, 31)) | sticky
    out = np.where(exp <= 0, sign | rounded(small) >> 16, out)
    nan_frac = np.where((frac & 0x03FF0000) == 0, 0x00010000, frac & 0x03FF0000)
    special = sign | 0x7C00 | np.where(mant != 0, nan_frac >> 16, 0)
    out = np.where(e32 == 0xFF, special, np.where(e32 == 0, sign, out))
    return out.astype(np.uint16)


def _to_f8e4m3(x: np.ndarray) -> np.ndarray:
    """Through f16, as OpenVINO does (so rounding twice); beyond 464 (inf too) and NaN
    become NaN (0x7f, 0xff negative): f8e4m3 has no infinity and does not saturate."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = x if x.dtype == np.float16 else _as_f32(x).astype(np.float16)
        out = h.astype(ml_dtypes.float8_e4m3fn)
    nan = np.isnan(h)
    if nan.any():
        bits = out.view(np.uint8)
        bits[nan] = np.where(np.signbit(h[nan]), 0xFF, 0x7F)
    return out


def _to_f8e5m2(x: np.ndarray) -> np.ndarray:
    """f16's top byte rounded to nearest even (f8e5m2 is f16 with 8 fewer mantissa bits).
    Other types go to f16 by :func:`ov_f16_bits`, as OpenVINO's conversion does; from
    61440 on rounds to infinity.  NaN keeps its f16 payload's top bits with the quiet bit
    set, as the CPU plugin does from f16 (OpenVINO from f32 and the reference kernel
    always drop the quiet bit, which turns a NaN whose payload is in its low bits into
    infinity)."""
    f16 = x.dtype == np.float16
    h = np.array(x, order="C").view(np.uint16) if f16 else ov_f16_bits(_as_f32(x))
    with np.errstate(invalid="ignore"):
        out = h.view(np.float16).astype(ml_dtypes.float8_e5m2)
    nan = (h & 0x7FFF) > 0x7C00
    if nan.any():
        out.view(np.uint8)[nan] = ((h[nan] >> 8) | 2).astype(np.uint8)
    return out


def _to_f8e8m0(x: np.ndarray) -> np.ndarray:
    """The f32 exponent, rounded to nearest even on the mantissa: any negative number
    (-0.0 too) becomes code 0 (2^-127), as does zero; an f32 subnormal rounds to the
    nearer of 2^-127 and 2^-126 (ties to 2^-127); infinity is 2^127 (code 254), NaN
    code 255; values from 2^127 up stay 2^127, they do not round to NaN."""
    iv = np.array(_as_f32(x), order="C").view(np.uint32)
    exp = (iv >> 23) & 0xFF
    mant = iv & 0x7FFFFF
    up = (mant > 0x400000) | ((mant == 0x400000) & (exp & 1 == 1))
    inf = (iv & 0x7FFFFFFF) == 0x7F800000
    code = np.where(exp >= 254, exp - inf, exp + up)
    code = np.where(exp == 0, mant > 0x600000, code)
    code = np.where(iv >> 31 == 1, 0, code)
    return code.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def _to_f4e2m1(x: np.ndarray) -> np.ndarray:
    """Round to nearest even, saturating at +-6 (infinities too); NaN becomes 6 with its
    sign, as OpenVINO's conversion gives."""
    f = _as_f32(x)
    with np.errstate(over="ignore", invalid="ignore"):
        out = f.astype(ml_dtypes.float4_e2m1fn)
    nan = np.isnan(f)
    if nan.any():
        out.view(np.uint8)[nan] = np.where(np.signbit(f[nan]), 0x0F, 0x07)
    return out


def _to_nf4(x: np.ndarray) -> np.ndarray:
    """The nearest code of the NF4 table by its midpoints (ties down); NaN is code 0."""
    f = np.asarray(_as_f32(x))
    codes = np.searchsorted(_NF4_BOUNDS, f.reshape(-1), side="left").astype(np.uint8)
    codes[np.isnan(f.reshape(-1))] = 0
    return codes.reshape(f.shape).view(element_types.NF4)


_SMALL_FLOATS = {
    "f8e4m3": _to_f8e4m3, "f8e5m2": _to_f8e5m2, "f8e8m0": _to_f8e8m0,
    "f4e2m1": _to_f4e2m1, "nf4": _to_nf4,
}  # fmt: skip


def convert(x: np.ndarray, target: np.dtype | ElementType) -> np.ndarray:
    """Convert as OpenVINO's CPU plugin does (an array, 0-D ones too).

    Floats become integers by truncation toward zero; NaN, infinities and values
    outside int32 become int32's minimum (x86's "integer indefinite") before being
    wrapped into narrower types.  Integers wrap, the packed ones too: to u1, u2, u3, u4,
    u6 and i4 a value keeps its low 1, 2, 3, 4, 6 or 4 bits (-9 becomes 7 in i4, as in
    OpenVINO and ONNX).  Booleans are ``x != 0``; NaN is false, as in the CPU plugin (its
    reference kernel makes NaN true, and it is the only one that converts the f8 types to
    boolean).  nf4 codes read as their NF4 table values, in f32 (to bf16 they round to
    nearest even; OpenVINO rounds codes 8 and 9 down, 0x3da2 and 0x3e24, one bf16 ulp from
    that); the small floats are made as the ``_to_*`` functions say.  Infinities stay
    infinite in f64 (the CPU plugin makes them f32's largest finite value; its reference
    does not).  A conversion to the source's own type copies it.

    >>> convert(np.array([2.7, -2.7, 300.0, np.nan], np.float32), np.dtype(np.uint8)).tolist()
    [2, 254, 44, 0]
    >>> convert(np.array([-9, 7, 8, 300], np.int32), element_types.ELEMENT_TYPES["i4"]).tolist()
    [7, 7, -8, -4]
    """
    return np.asarray(_converted(np.asarray(x), _target(target)))


def _converted(x: np.ndarray, et: ElementType) -> np.ndarray:
    dtype = et.dtype
    if x.dtype == dtype and et.name not in _INT_BITS:
        return x.copy()  # NaN payloads kept
    if x.dtype == element_types.NF4:
        x = element_types.NF4_TABLE[x.view(np.uint8) & 0x0F]  # a code is 4 bits
    elif x.dtype in _ML_FLOATS:
        x = x.astype(np.float32)  # exact
    if et.name in _SMALL_FLOATS:
        return _SMALL_FLOATS[et.name](x)
    if dtype == np.bool_:
        with np.errstate(invalid="ignore"):
            return (x != 0) & ~np.isnan(x) if x.dtype.kind == "f" else x != 0
    if x.dtype.kind == "f" and dtype.kind in "iu":
        with np.errstate(invalid="ignore", over="ignore"):
            t = np.trunc(x.astype(np.float64))
            wide = 64 if dtype.itemsize == 8 else 32
            info = np.iinfo(np.int64 if wide == 64 else np.int32)
            bad = ~np.isfinite(t) | (t < info.min) | (t > info.max)
            x = np.where(bad, info.min, np.where(bad, 0, t)).astype(np.int64)
    if et.name in _INT_BITS:
        bits = _INT_BITS[et.name]
        low = x.astype(np.int64) & ((1 << bits) - 1)
        if et.name == "i4":
            low = (low ^ 8) - 8
        return low.astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(dtype)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Floats made integers go through f64 and i64 (a few of each per element), as do
    packed integers (i64); the small floats through f32, f16 and masks, f8e5m2 through
    i64 bit fields (OpenVINO's f16 rounding); ml_dtypes' floats and nf4 are read as f32
    first; NaN tests for booleans take a byte or two; any other conversion is NumPy's,
    into the output."""
    source = inputs[0].element_type
    target = getattr(a, "destination_type", None) or outputs[0].element_type
    elements = largest([*inputs[:1], *outputs])
    if source is None or target is None:
        return 160 * elements
    first = 4 * elements if source.dtype in (*_ML_FLOATS, element_types.NF4) else 0
    if target.name in _SMALL_FLOATS:
        return first + (160 if target.name == "f8e5m2" else 48) * elements
    if target.name in _INT_BITS or (source.dtype.kind in "fV" and target.dtype.kind in "iu"):
        return first + 32 * elements
    return first + (2 * elements if target.dtype == np.bool_ else 0)


def _convert(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (convert(x, a.destination_type),)


def _convert_like_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    like = inputs[1].element_type
    _no_strings(inputs[0].element_type, like)
    # The kernel cannot tell a u4 array from a u8 one: it converts to the type named here.
    # (The layer's own attribute, set from its input's declared type, the same each time.)
    a.destination_type = like
    return [TensorInfo(inputs[0].shape, like)]


def _convert_like(a: SimpleNamespace, x: np.ndarray, like: np.ndarray) -> tuple[np.ndarray, ...]:
    target = getattr(a, "destination_type", None)
    return (convert(x, like.dtype if target is None else target),)


register(
    OpDef(
        type="Convert",
        version=1,
        since_opset=1,
        attrs=(Attr("destination_type", "element_type"),),
        infer=_convert_infer,
        kernel=_convert,
        scratch=_scratch,
        input_types=(ANY,),
    )
)
register(
    OpDef(
        type="ConvertLike",
        version=1,
        since_opset=1,
        attrs=(),
        infer=_convert_like_infer,
        kernel=_convert_like,
        inputs=(2, 2),
        scratch=_scratch,
        input_types=(ANY, ANY),
    )
)
