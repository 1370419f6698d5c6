"""FakeQuantize-1, FakeConvert-13: the quantize-dequantize steps of INT8 and FP8 models.

``FakeQuantize(X, input_low, input_high, output_low, output_high, levels)`` maps
each element ``x`` with its own range values ``il, ih, ol, oh``:

* ``x <= min(il, ih)`` gives ``ol`` and ``x > max(il, ih)`` gives ``oh``;
* otherwise ``nearbyint((x - il) / (ih - il) * (levels - 1)) / (levels - 1)
  * (oh - ol) + ol``.

irrun computes this exactly as OpenVINO's reference kernel
(``reference/fake_quantize.hpp``) does, and the result is bit-identical to
``ov.Model.evaluate`` (and to the CPU plugin on a FakeQuantize whose ranges are
inputs, not constants):

* Floats: f32 operations in that order, each rounded to f32, no fused
  multiply-add; ``nearbyint`` rounds ties to even (0.5 -> 0, 1.5 -> 2), not away
  from zero.  ``min``/``max`` are ``std::min``/``std::max``: a NaN ``ih`` in
  ``min(il, ih)`` is passed over, a NaN ``il`` is kept; a NaN ``x`` falls through
  both comparisons to the formula and gives NaN.  f16 is converted to f32,
  computed there and rounded once, as OpenVINO evaluates it.  bf16 is not taken:
  OpenVINO's reference kernel gives bf16 results that irrun could not reproduce
  (about 5% of in-range elements a level apart from the f32 formula rounded once).
* ``il > ih`` (an inverted range) is not an error: the bounds are ``min`` and
  ``max`` but the formula keeps the signed ``ih - il``, so the levels run from
  ``oh`` down to ``ol``.  ``il == ih`` is a step: ``ol`` up to ``il``, then
  ``oh``.  ``ol > oh`` simply flips the output.
* ``levels - 1`` is an f32 constant: 65535 is exact, so levels up to 65536 give
  the formula; levels 2^24 + 2 and beyond round it.
* i32, i64, u32 and u64 compute in the integer type as the reference kernel
  does: ``(x - il) / (ih - il)`` divides with truncation, so inside the range
  the result is ``oh`` at ``x == ih`` (when ``il < ih``) and ``ol`` elsewhere.
  Integer overflow wraps (``oh - ol`` too, for unsigned types), and the final
  conversion from double is x86-64's.

Range inputs broadcast onto ``X`` by ``auto_broadcast``.  With ``numpy`` and
``none`` they are indexed as the reference kernel (and the CPU plugin, which
agrees) index them: each right-aligned with ``X``, a dim that differs from
``X``'s skipped.  That is NumPy broadcasting wherever NumPy broadcasts; it also
covers a range of higher rank than ``X`` or with a dim above ``X``'s 1, which
OpenVINO's shape rule accepts.  With ``pdpd`` a range is laid over ``X`` from
axis 0, as the specification and OpenVINO's shape rule say; OpenVINO's kernels
ignore that and read such a range right-aligned or cyclically, past its end
when it is shorter (a ``(1, 3)`` range on a ``(2, 3, 4)`` X), so irrun follows
the specification there and agrees with OpenVINO only where the two readings
coincide (ranges of X's rank).

The output has ``X``'s shape and element type.  The ranges only have to
broadcast onto ``X`` (``none``: merge with it); OpenVINO does not restrict
their element types but reads them as ``X``'s, so irrun requires one type.
``levels`` below 2 is rejected: OpenVINO divides by ``levels - 1`` (NaN for 1;
0 wraps to 2^64 - 1, close to identity), which no quantizer means.

FakeConvert-13 (FP8 emulation, see :func:`_fake_convert` for its semantics and where
OpenVINO's plugin and reference differ).

Tolerance against OpenVINO.  The reference kernel: none (bit-identical).  The
CPU plugin on a lone FakeQuantize whose ranges are inputs: none either.  With
constant ranges (every quantized model) the plugin folds them into scales and
shifts, ``x * s + b``, which round differently: results agree to a few ulp of
the output range, and a value within that of a level boundary lands one level
(``(oh - ol) / (levels - 1)``) away.  irrun follows the reference kernel where
that plugin path departs from the formula (2026.4, constant ranges only):

* ``il == ih`` gives NaN everywhere, also outside the range, where the formula
  gives ``ol`` up to ``il`` and ``oh`` above;
* ``il > ih`` gives other values (0.2 with ``il=1, ih=0``, levels 3, onto
  [0, 1] gives 0; the formula: ``nearbyint(1.6) / 2 = 1``);
* with ``levels=255`` and ranges along an axis other than the channel axis
  (e.g. ``(1, 1, 1, W)``), the levels are dequantized by 255 instead of 254:
  0.3 in [0, 1] gives 76/255 instead of 76/254.

In a whole INT8 network the plugin runs the quantized convolutions with INT8
kernels; irrun computes them in f32.  Upstream ops differ by an ulp, so now and
then an activation crosses a level boundary and moves one level, and the
network's outputs differ by up to about 0.5% of their range on a few percent
of inputs, as much as OpenVINO's own INT8 and f32 executions differ from each
other (NNCF-quantized CNNs, 200 random inputs each).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import ml_dtypes
import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import BROADCAST_ATTR, broadcast_operands, broadcast_shapes, same_element_type

TYPES = ("f32", "f16", "i32", "i64", "u32", "u64")
NAMES = ("input_low", "input_high", "output_low", "output_high")


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    et = same_element_type(inputs)
    for name, info in zip(NAMES, inputs[1:], strict=True):
        try:
            broadcast_shapes(x.shape, info.shape, a.auto_broadcast)
        except ShapeError as exc:
            raise ShapeError(f"{name} does not broadcast to X: {exc}") from None
        # OpenVINO's shape rule lets an empty range stretch X's 1s to 0, then keeps X's
        # shape, and its kernels read past the range's end: no value is meant.
        empty = info.shape is not None and 0 in info.shape
        if empty and x.shape is not None and 0 not in x.shape:
            raise ShapeError(
                f"{name} is empty ({list(info.shape)}) but X {list(x.shape)} is not"
            )
    # OpenVINO keeps X's shape as declared, even where a range could refine a dim.
    return [TensorInfo(x.shape, et)]


def _check(a: SimpleNamespace) -> None:
    if a.levels < 2:
        raise KernelError(f"levels ({a.levels}) must be at least 2")


def _as_indexed(r: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``r`` as the reference kernel reads it for an output of ``shape``.

    Right-aligned dims equal to the output's advance through ``r``'s elements in
    order; every other dim (and any leading one beyond the output's rank)
    neither moves nor counts, so the matched dims take the first elements of
    ``r``.  Where NumPy's broadcasting applies, this is exactly it.
    """
    tail = r.shape[max(r.ndim - len(shape), 0) :]
    lead = len(shape) - len(tail)
    view = [1] * len(shape)
    count = 1
    for i, d in enumerate(tail):
        if d == shape[lead + i]:
            view[lead + i] = d
            count *= d
    if r.shape == tuple(view[len(shape) - r.ndim :]) and r.ndim <= len(shape):
        return r  # ordinary broadcasting
    return r.reshape(-1)[:count].reshape(view)


def _bounds(il: np.ndarray, ih: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``std::min(il, ih)`` and ``std::max(il, ih)``: ``il`` unless ``ih`` compares past it."""
    return np.where(ih < il, ih, il), np.where(il < ih, ih, il)


def _float(x, il, ih, ol, oh, levels: int) -> np.ndarray:
    steps = np.float32(levels - 1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        q = np.rint((x - il) / (ih - il) * steps)
        y = q / steps * (oh - ol) + ol
    lo, hi = _bounds(il, ih)
    return np.where(x <= lo, ol, np.where(x > hi, oh, y))


def _integer(x, il, ih, ol, oh, levels: int) -> np.ndarray:
    t = x.dtype.type
    lo, hi = _bounds(il, ih)
    inside = ~((x <= lo) | (x > hi))
    with np.errstate(all="ignore"):
        num, den = np.subtract(x, il), np.subtract(ih, il)
        den = np.where(inside, den, t(1))  # outside the range the quotient is unused
        # C division truncates toward zero; floor division is one below where the
        # signs differ and the division is inexact.
        quot = num // den
        if x.dtype.kind == "i":
            quot = quot + ((quot < 0) & (quot * den != num)).astype(x.dtype)
        steps = t(levels - 1)
        # nearbyint() of an integer returns a double; the rest is double arithmetic
        # truncated back to the integer type.
        k = (quot * steps).astype(np.float64)
        y = k / np.float64(steps) * np.subtract(oh, ol).astype(np.float64) + ol.astype(np.float64)
        y = _double_to(np.trunc(np.where(inside, y, 0)), x.dtype)
    return np.where(x <= lo, ol, np.where(x > hi, oh, y))


def _double_to(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``static_cast`` from double as x86-64 compilers emit it: i32 saturates out of
    range to its minimum (cvttsd2si), u32 keeps the low 32 bits of the int64 result."""
    if dtype == np.int32:
        bad = (y < -(2**31)) | (y >= 2**31)
        return np.where(bad, -(2**31), y).astype(np.int32)
    if dtype == np.uint32:
        return y.astype(np.int64).astype(np.uint32)
    return y.astype(dtype)


def _fake_quantize(a: SimpleNamespace, x: np.ndarray, *ranges: np.ndarray) -> tuple[np.ndarray]:
    if len({r.dtype for r in ranges} | {x.dtype}) > 1:
        raise KernelError("FakeQuantize's inputs must have one element type")
    if a.auto_broadcast == "pdpd":
        il, ih, ol, oh = (broadcast_operands(x, r, "pdpd")[1] for r in ranges)
    else:
        il, ih, ol, oh = (_as_indexed(r, x.shape) for r in ranges)
    if x.dtype.kind in "iu":
        out = _integer(x, il, ih, ol, oh, a.levels)
    else:
        f32 = [v.astype(np.float32, copy=False) for v in (x, il, ih, ol, oh)]
        out = _float(*f32, a.levels)
    return (np.broadcast_to(out, x.shape).astype(x.dtype),)


register(
    OpDef(
        type="FakeQuantize", version=1, since_opset=1,
        attrs=(Attr("levels", "int"), BROADCAST_ATTR),
        infer=_infer, kernel=_fake_quantize, inputs=(5, 5), check=_check,
        input_types=(TYPES,) * 5,
        scratch=per_element(20, 28),
    )
)  # fmt: skip


# --------------------------------------------------------------------------- FakeConvert-13

FP8 = {"f8e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "f8e5m2": (ml_dtypes.float8_e5m2, 57344.0)}
# OpenVINO takes f32, f16 and bf16 (one type for the three inputs).  For bf16 irrun rounds
# each operation to bf16 (nearest even), as it does for f16: where every intermediate is a
# bf16 value OpenVINO's reference kernel agrees bit for bit; where one must round it
# does not round consistently (to nearest here, towards zero there: no rule reproduces
# it), and the CPU plugin's bf16 results are far from both.
FAKE_CONVERT_TYPES = ("f32", "f16", "bf16")


def _fake_convert_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    """The data's shape, refined by the scale's (and shift's) dims, which broadcast onto
    it one way: no higher rank, no dim that the data's would have to stretch to.  The
    shift has the scale's shape."""
    et = same_element_type(inputs)
    x, scale = inputs[0], inputs[1]
    if len(inputs) == 3 and scale.shape is not None and inputs[2].shape is not None:
        shift = inputs[2].shape
        if len(shift) != len(scale.shape) or any(
                isinstance(p, int) and isinstance(q, int) and p != q
                for p, q in zip(scale.shape, shift, strict=True)):  # fmt: skip
            raise ShapeError(f"shift {list(shift)} is not the scale's shape "
                             f"{list(scale.shape)}")  # fmt: skip
    if x.shape is None or scale.shape is None:
        return [TensorInfo(None, et)]
    if len(scale.shape) > len(x.shape):
        raise ShapeError(f"scale {list(scale.shape)} has a higher rank than data "
                         f"{list(x.shape)}")  # fmt: skip
    out = broadcast_shapes(x.shape, scale.shape, "numpy")
    assert out is not None
    for d, o in zip(x.shape, out, strict=True):
        if isinstance(d, int) and d != o:
            raise ShapeError(f"scale {list(scale.shape)} does not broadcast onto data "
                             f"{list(x.shape)} (it would make {list(out)})")  # fmt: skip
    return [TensorInfo(tuple(out), et)]


def _fp8(h: np.ndarray, destination: str) -> np.ndarray:
    """f16 values rounded to the nearest FP8 value (ties to even, subnormals kept),
    saturating: beyond the largest value, infinities too, is the largest value; NaN stays
    NaN."""
    dtype, top = FP8[destination]
    with np.errstate(invalid="ignore"):
        return np.clip(h, -top, top).astype(dtype).astype(np.float16)


def _fake_convert(a: SimpleNamespace, x: np.ndarray, scale: np.ndarray,
                  shift: np.ndarray | None = None) -> tuple[np.ndarray]:  # fmt: skip
    """``y = x * scale - shift``, rounded to ``destination_type`` through f16 and back,
    then ``(y + shift) / scale``, each operation rounded to the data's type (f16 and
    bf16 computed in f32 and rounded after each, as OpenVINO's reference kernel does; the
    CPU plugin keeps f32 throughout, so that near a rounding boundary an f16 result may be
    an FP8 step away from the reference's; with f32 data the plugin is within an ulp of
    it; see FAKE_CONVERT_TYPES for bf16).
    scale and shift broadcast onto the data (numpy, one way).

    The FP8 rounding is to nearest even and saturates, unlike Convert's: f8e4m3 gives
    at most 448 and f8e5m2 57344 in magnitude, infinities included.  Where OpenVINO's
    kernels differ from that (irrun follows the one that rounds, or none):

    * NaN stays NaN (the f8e5m2 reference); OpenVINO's f8e4m3 makes it a number, 448 in
      the reference and -448 in the CPU plugin, whose f8e5m2 makes it -57344;
    * f8e4m3 rounds values between 2^-10 and 2^-9 up to 2^-9 (the CPU plugin, and
      Convert); the reference flushes everything below 2^-9 to zero.
    """
    dtypes = {x.dtype, scale.dtype} | ({shift.dtype} if shift is not None else set())
    if len(dtypes) > 1:
        raise KernelError("FakeConvert's inputs must have one element type")
    t = x.dtype

    def rounded(v: np.ndarray) -> np.ndarray:
        return v if t == np.float32 else v.astype(t).astype(np.float32)

    xf, sf = x.astype(np.float32), scale.astype(np.float32)
    of = shift.astype(np.float32) if shift is not None else np.float32(0)
    with np.errstate(all="ignore"):
        y = rounded(rounded(xf * sf) - of)
        q = _fp8(y.astype(np.float16), a.destination_type).astype(np.float32)
        out = rounded(rounded(q + of) / sf)
    return (np.asarray(out).astype(t),)


register(
    OpDef(
        type="FakeConvert", version=13, since_opset=13,
        attrs=(Attr("destination_type", "enum", choices=tuple(FP8)),),
        infer=_fake_convert_infer, kernel=_fake_convert, inputs=(2, 3),
        input_types=(FAKE_CONVERT_TYPES,) * 3, elementwise=True,
        scratch=per_element(16, 24),
    )
)  # fmt: skip
