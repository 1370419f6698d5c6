"""Element-wise ops: binary arithmetic with auto-broadcasting, and activations.

Binary ops (Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, Mod,
FloorMod) broadcast
their two inputs by ``auto_broadcast``: ``numpy`` (right-aligned, 1 stretches),
``pdpd`` (the second input, of no higher rank, is laid over the first from axis
0; its dims must be 1 or the first's) or ``none`` (equal shapes).
:func:`broadcast_shapes` is the one implementation of those rules, for shape
rules on partial shapes and for kernels on concrete ones; other op families may
import it.

Numerics follow OpenVINO's CPU plugin in f32 where it is deterministic:

* Maximum/Minimum are ``a > b ? a : b`` (``<`` for Minimum): a NaN in ``a``
  gives ``b``, a NaN in ``b`` gives NaN, and of two equal zeros ``b`` wins.
  Relu is ``x > 0 ? x : 0`` (NaN gives 0) and Clamp applies the same max and
  then min, so NaN becomes ``min``.
* f16 inputs are computed in f32 and rounded once, as the plugin computes them.
* Integer inputs of Sqrt, Exp, Log, Erf, Sin, Cos, Floor, Ceiling, Elu, Sigmoid,
  Tanh, HSwish and HSigmoid are computed in f32 and rounded half to even (NaN
  and overflow give int32's minimum, then narrow), as the plugin does: Floor of
  int32's maximum is its minimum there.  Clamp on integers uses ``ceil(min)``
  and ``floor(max)``.
* Sign is ``x > 0 ? 1 : x < 0 ? -1 : x`` but gives +0.0 for -0.0; Negative wraps
  on integers.  PRelu is ``x < 0 ? x * slope : x`` (NaN and -0.0 stay); a 1-D
  slope as long as the input's axis 1 lies along that axis, any other slope
  broadcasts as NumPy does.
* SoftPlus (and Mish through it) is ``log(exp(x) + 1)``, as the plugin and the
  reference kernel compute it, not a more accurate form: their results agree.

Integer arithmetic is exact and wraps, as OpenVINO's reference kernels do; the
CPU plugin instead saturates 8-bit results and divides and raises integers in
f32, ignoring ``m_pythondiv``.  irrun follows the specification there: Divide
floors when ``m_pythondiv`` is true and truncates when false, an integer
division by zero is an error, and an integer raised to a negative power is the
truncated real result (0 unless the base is 1 or -1).  Mod and FloorMod of
floats are ``x - trunc(x / y) * y`` and ``x - floor(x / y) * y`` in the input's
type, as the plugin's kernels compute them (so ``1e30 mod 3`` is 0, not fmod's
1); of integers, the exact remainder with the sign of ``x`` (Mod) or ``y``
(FloorMod), and a remainder by zero is an error.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Dim, Interval, Shape, format_shape
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import blocks
from .basic import convert

# "explicit" is OpenVINO's other spelling of "none".
AUTO_BROADCASTS = ("none", "explicit", "numpy", "pdpd")
BROADCAST_ATTR = Attr("auto_broadcast", "enum", "numpy", AUTO_BROADCASTS)


# --------------------------------------------------------------------------- broadcasting


def _bounds(d: Dim) -> tuple[int, int | None]:
    return (d, d) if isinstance(d, int) else (d.lo, d.hi)


def _dim(lo: int, hi: int | None) -> Dim:
    return lo if lo == hi else Interval(lo, hi)


def _has_one(d: Dim) -> bool:
    lo, hi = _bounds(d)
    return lo <= 1 and (hi is None or hi >= 1)


def merge_dims(a: Dim, b: Dim) -> Dim | None:
    """The sizes both dims allow (their intersection), or None if there is none.

    >>> merge_dims(Interval(2, 6), Interval(4, 10)), merge_dims(3, Interval(4, 8))
    (Interval(lo=4, hi=6), None)
    """
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    lo = max(alo, blo)
    hi = bhi if ahi is None else ahi if bhi is None else min(ahi, bhi)
    if hi is not None and hi < lo:
        return None
    return _dim(lo, hi)


def broadcast_dims(a: Dim, b: Dim) -> Dim | None:
    """Numpy broadcasting of two dims as OpenVINO infers it, or None if they clash.

    A dim that may be 1 yields the other; if both may be 1 the result spans both.

    >>> broadcast_dims(1, Interval(0, None)), broadcast_dims(Interval(1, 5), Interval(10, 15))
    (Interval(lo=0, hi=None), Interval(lo=10, hi=15))
    >>> broadcast_dims(Interval(0, 6), Interval(0, 4)), broadcast_dims(3, Interval(2, 8))
    (Interval(lo=0, hi=6), 3)
    """
    a_one, b_one = _has_one(a), _has_one(b)
    if a_one and b_one:
        (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
        return _dim(min(alo, blo), None if ahi is None or bhi is None else max(ahi, bhi))
    if a_one:
        return b
    if b_one:
        return a
    return merge_dims(a, b)


def _clash(a: Shape | None, b: Shape | None, mode: str, why: str = "") -> ShapeError:
    detail = f": {why}" if why else ""
    return ShapeError(
        f"shapes {format_shape(a)} and {format_shape(b)} do not broadcast "
        f"(auto_broadcast={mode}){detail}"
    )


def broadcast_shapes(
    a: Shape | None, b: Shape | None, mode: str = "numpy", axis: int = 0
) -> Shape | None:
    """The result shape of an element-wise op on ``a`` and ``b``; raises ShapeError.

    Works on partial shapes (ints and :class:`Interval`; ``None`` is an unknown
    rank) and on concrete ones alike.  ``mode`` is an ``auto_broadcast`` value;
    ``axis`` is where PDPD lays ``b`` over ``a`` (-1: right-aligned).  OpenVINO's
    IR always means axis 0 for ``pdpd``.

    >>> broadcast_shapes((2, 3, 4), (3, 1)), broadcast_shapes((2, 3, 4), (2,), "pdpd")
    ((2, 3, 4), (2, 3, 4))
    >>> broadcast_shapes(None, (3,), "none"), broadcast_shapes(None, (3,))
    ((3,), None)
    """
    if mode in ("none", "explicit"):
        if a is None or b is None:
            return b if a is None else a
        if len(a) != len(b):
            raise _clash(a, b, mode, "ranks differ")
        out = tuple(merge_dims(x, y) for x, y in zip(a, b, strict=True))
        if any(d is None for d in out):
            raise _clash(a, b, mode, "dims differ")
        return out  # type: ignore[return-value]
    if a is None or b is None:
        return None
    if mode == "numpy":
        rank = max(len(a), len(b))
        pa = (1,) * (rank - len(a)) + tuple(a)
        pb = (1,) * (rank - len(b)) + tuple(b)
        out = tuple(broadcast_dims(x, y) for x, y in zip(pa, pb, strict=True))
        if any(d is None for d in out):
            raise _clash(a, b, mode)
        return out  # type: ignore[return-value]
    if mode != "pdpd":
        raise KernelError(f"auto_broadcast '{mode}' is not one of {', '.join(AUTO_BROADCASTS)}")
    if len(b) > len(a) or axis < -1:
        raise _clash(a, b, mode, "the second input has the higher rank")
    start = len(a) - len(b) if axis == -1 else axis
    if start + len(b) > len(a):
        raise _clash(a, b, mode, f"the second input does not fit from axis {start}")
    out_list = list(a)
    for i, db in enumerate(b):
        da = a[start + i]
        # PDPD only stretches the second input, never the first.
        if isinstance(da, int) and isinstance(db, int) and db > da:
            raise _clash(a, b, mode, f"dim {db} is larger than {da}")
        merged = broadcast_dims(da, db)
        if merged is None:
            raise _clash(a, b, mode)
        out_list[start + i] = merged
    return tuple(out_list)


def broadcast_operands(
    x: np.ndarray, y: np.ndarray, mode: str, axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` shaped so that NumPy's broadcasting gives ``mode``'s result."""
    broadcast_shapes(x.shape, y.shape, mode, axis)  # raises with the shapes named
    if mode == "pdpd":
        start = x.ndim - y.ndim if axis == -1 else axis
        y = y.reshape((1,) * start + y.shape + (1,) * (x.ndim - start - y.ndim))
    return x, y


# --------------------------------------------------------------------------- binary ops


def same_element_type(inputs: Sequence[TensorInfo]):
    """The inputs' common element type (None if none is known); ShapeError if they differ."""
    types = {i.element_type.name for i in inputs if i.element_type is not None}
    if len(types) > 1:
        raise ShapeError(f"inputs have different element types: {', '.join(sorted(types))}")
    return next((i.element_type for i in inputs if i.element_type is not None), None)


def infer_binary(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x, y = inputs
    et = same_element_type(inputs)
    return [TensorInfo(broadcast_shapes(x.shape, y.shape, a.auto_broadcast), et)]


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


BINARY: dict[str, Callable[[SimpleNamespace, np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": lambda a, x, y: np.add(x, y),
    "Subtract": lambda a, x, y: np.subtract(x, y),
    "Multiply": lambda a, x, y: np.multiply(x, y),
    "Divide": lambda a, x, y: _divide(x, y, a.m_pythondiv),
    # x86's maxps/minps: the second operand unless the first is strictly greater
    # (smaller), which is also OpenVINO's reference kernel.
    "Maximum": lambda a, x, y: np.where(x > y, x, y),
    "Minimum": lambda a, x, y: np.where(x < y, x, y),
    "Power": lambda a, x, y: _power(x, y),
    "Mod": lambda a, x, y: _mod(x, y, floor=False),
    "FloorMod": lambda a, x, y: _mod(x, y, floor=True),
}


def binary_kernel(fn, boolean: bool = False):
    """The kernel of a binary op ``fn(attrs, x, y)``: same input types, broadcast by
    ``auto_broadcast``, f16 computed in f32; the result in the inputs' type, or
    boolean (comparisons and logical ops)."""

    def kernel(a: SimpleNamespace, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        if x.dtype != y.dtype:
            raise KernelError(f"inputs have different element types: {x.dtype} and {y.dtype}")
        # y's shape a suffix of x's: NumPy's own rules give the same, without checking first.
        suffix = y.ndim <= x.ndim and x.shape[x.ndim - y.ndim :] == y.shape
        if a.auto_broadcast == "numpy" and suffix:
            xb, yb = x, y
        else:
            xb, yb = broadcast_operands(x, y, a.auto_broadcast)
        if x.dtype.kind == "f" and x.dtype.itemsize < 4 and not boolean:

            def compute(u: np.ndarray, v: np.ndarray) -> np.ndarray:
                return fn(a, u.astype(np.float32), v.astype(np.float32)).astype(x.dtype)
        else:

            def compute(u: np.ndarray, v: np.ndarray) -> np.ndarray:
                return fn(a, u, v)

        with np.errstate(all="ignore"):
            out = blocks.elementwise(compute, None, np.bool_ if boolean else x.dtype, (xb, yb))
        return (out,)

    return kernel


for _type, _fn in BINARY.items():
    _attrs: tuple[Attr, ...] = (BROADCAST_ATTR,)
    if _type == "Divide":
        _attrs = (BROADCAST_ATTR, Attr("m_pythondiv", "bool", True))
    register(
        OpDef(
            type=_type, version=1, since_opset=1, attrs=_attrs, infer=infer_binary,
            kernel=binary_kernel(_fn), inputs=(2, 2), shape_attrs=("auto_broadcast",),
        )
    )  # fmt: skip


# --------------------------------------------------------------------------- unary ops


def infer_unary(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    return [TensorInfo(inputs[0].shape, inputs[0].element_type)]


def _infer_real(op: str):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        et = inputs[0].element_type
        if et is not None and et.dtype.kind != "f":
            raise ShapeError(f"{op} needs a floating-point input, got {et.name}")
        return infer_unary(a, inputs)

    return infer


def float_compute(x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``fn`` in f32 (f64 for f64 inputs), rounded once to ``x``'s type.

    Integers are rounded half to even, as the CPU plugin converts its f32 result.
    ``fn`` is elementwise: large inputs are split over the run's threads (see
    :mod:`.blocks`).
    """
    return blocks.elementwise(lambda v: _float_compute(v, fn), x.shape, x.dtype, (x,))


def _float_compute(x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    work = x if x.dtype == np.float64 else x.astype(np.float32, copy=False)
    with np.errstate(all="ignore"):
        out = fn(work)
    if x.dtype.kind in "iu":
        return convert(np.rint(out), x.dtype)
    with np.errstate(over="ignore"):  # beyond f16's range is inf, as in the plugin
        return out.astype(x.dtype, copy=False)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _hsigmoid(x: np.ndarray) -> np.ndarray:
    return np.minimum(np.maximum(x + x.dtype.type(3), x.dtype.type(0)), x.dtype.type(6)) / (
        x.dtype.type(6)
    )


_ERFC = (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
         0.09678418, 0.37409196, 1.00002368, -1.26551223)  # fmt: skip
# Elements per block of Gelu's work: its temporaries then stay in the CPU's cache (and
# apart in memory: page-aligned whole-tensor temporaries alias in the cache and run slower).
_BLOCK = 32768


def _erfc(z: np.ndarray) -> np.ndarray:
    """erfc in ``z``'s float type (Numerical Recipes' erfcc: relative error below 1.2e-7
    in f64; in f32, rounding ``z*z`` adds up to about ``z*z * 2^-24``, 3e-6 for
    ``|z| < 3.5``, where erfc is above 7e-7).  Every step but the last works in place.
    """
    a = np.abs(z)
    t = a * 0.5
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _ERFC[0]
    poly += _ERFC[1]
    for c in _ERFC[2:]:
        poly *= t
        poly += c
    a *= a
    poly -= a
    np.exp(poly, out=poly)
    poly *= t
    # erfc(z) = 2 - erfc(-z): added as 0 or (2 - 2 erfc) by a 0/1 factor, since a select
    # (np.where, a ufunc's where=) on signs that vary is many times slower than arithmetic.
    flip = 2.0 - 2.0 * poly
    flip *= z < 0
    poly += flip
    return poly


# Gelu's erfc polynomial with log(sqrt(2) / 2) added to its constant term, so that the
# exponential gives erfc(a) * |x| / 2 directly when multiplied by t and a (a = |x|/sqrt 2).
_GELU_ERFC = (*_ERFC[:-1], _ERFC[-1] + math.log(math.sqrt(2.0) / 2.0))


def gelu_erf(x: np.ndarray) -> np.ndarray:
    """``x * Phi(x)`` in ``x``'s float type: f32 by a table (:func:`_gelu_erf_table`), f64
    by :func:`_gelu_erf_poly`."""
    if x.dtype == np.float32:
        return _gelu_erf_table(x)
    return _gelu_erf_poly(x)


def _gelu_erf_poly(x: np.ndarray) -> np.ndarray:
    """``x * Phi(x)``, as ``max(x, 0) - |x|/2 * erfc(|x|/sqrt 2)``, in ``x``'s float type:
    so accurate also where Phi(x) is tiny (relative error 3e-6 in f32 for ``x > -5``, beyond
    which the value is below 1.5e-6; 1.2e-7 in f64), in cache-sized blocks."""
    flat = x.reshape(-1)
    out = np.empty(flat.shape, x.dtype)
    for start in range(0, flat.size, _BLOCK):
        part = flat[start : start + _BLOCK]
        a = np.abs(part)
        a *= 1.0 / math.sqrt(2.0)
        # Past this, erfc underflows to 0 in the type: clamped, |x| = inf gives 0, not 0 * inf.
        np.minimum(a, 14.0 if x.dtype.itemsize <= 4 else 40.0, out=a)
        t = a + 2.0
        np.divide(2.0, t, out=t)  # 1 / (1 + a/2)
        poly = t * _GELU_ERFC[0]
        poly += _GELU_ERFC[1]
        for c in _GELU_ERFC[2:]:
            poly *= t
            poly += c
        poly -= a * a
        np.exp(poly, out=poly)
        poly *= t
        poly *= a  # |x|/2 * erfc(|x|/sqrt 2), from the constant folded into the polynomial
        dest = out[start : start + _BLOCK]
        np.maximum(part, 0.0, out=dest)
        dest -= poly
    return out.reshape(x.shape)


# Gelu's f32 table: Phi on [-16, 16) in steps of 1/2048, one line per step.  Below -16,
# x * Phi(x) is below f32's least denormal; from 5.4 on, Phi(x) rounds to 1.
_PHI_STEPS = 2048
_PHI_SPAN = 16 * _PHI_STEPS
# Elements per block of the table's work (its index array is 8 bytes an element).
_PHI_BLOCK = 32768


@functools.cache
def _phi_table() -> tuple[np.ndarray, np.ndarray]:
    """``(c0, c1)`` in f32, with ``Phi((k + f) / 2048) ~ c0[k + 32768] + c1[k + 32768] * f``
    for ``k = floor(2048 x)`` and ``0 <= f < 1``: the line through Phi (from ``math.erfc``
    in f64) at the step's Chebyshev nodes, which halves the secant's error."""
    erfc = np.frompyfunc(math.erfc, 1, 1)
    lo = np.arange(-_PHI_SPAN, _PHI_SPAN, dtype=np.float64)
    f1, f2 = 0.5 - 0.5 / math.sqrt(2.0), 0.5 + 0.5 / math.sqrt(2.0)
    scale = -1.0 / (_PHI_STEPS * math.sqrt(2.0))
    p1 = 0.5 * erfc((lo + f1) * scale).astype(np.float64)
    p2 = 0.5 * erfc((lo + f2) * scale).astype(np.float64)
    c1 = (p2 - p1) / (f2 - f1)
    c0 = p1 - c1 * f1
    c0[-1], c1[-1] = 1.0, 0.0  # the last step also takes every x from 16 on: Phi is 1
    return c0.astype(np.float32), c1.astype(np.float32)


def gelu_erf_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """Gelu of ``x`` written into ``x``, where that gives the kernel's result (f32, erf
    mode, C-contiguous); whether it did."""
    if (x.dtype != np.float32 or getattr(attrs, "approximation_mode", "erf") != "erf"
            or not (x.flags.c_contiguous and x.flags.writeable)):  # fmt: skip
        return False
    _gelu_erf_table(x, x)
    return True


def _gelu_erf_table(x: np.ndarray, into: np.ndarray | None = None) -> np.ndarray:
    """``x * Phi(x)`` for f32 ``x``, Phi interpolated linearly in a table of 2048 steps
    per unit (:func:`_phi_table`): 11 passes over 32K-element blocks, two of them gathers.

    ``z = 2048 x`` is exact (a power of two), so are its step ``floor(z)`` and the offset
    ``f = z - floor(z)`` in it: the line is evaluated where x is.  The interpolation's
    relative error grows as ``x^2 / 2^26`` in the negative tail (Phi's relative curvature);
    measured over all f16 values and a dense f32 grid, with the rounding of the three
    operations after the gathers: below 5e-7 for ``x > -5``, 1.1e-6 for ``x > -8``, 3e-6
    down to -13 (where the value is about 1e-38), and 2e-7 for ``x > 0``
    (tests/test_gelu_table.py).  x below -16 is taken as -16 (so -inf gives 0, not
    -inf * 0); from 16 on the last step's Phi is exactly 1 (so x and +inf give
    themselves); NaN stays NaN (its index is clipped into the table, its f is NaN).
    """
    c0, c1 = _phi_table()
    flat = x.reshape(-1)
    out = np.empty(flat.shape, x.dtype) if into is None else into.reshape(-1)
    m = min(_PHI_BLOCK, flat.size)
    low, z, step, line = (np.empty(m, np.float32) for _ in range(4))
    index = np.empty(m, np.intp)
    # NaN's index (an invalid cast) and 2048 x past f32's range are expected here.
    with np.errstate(invalid="ignore", over="ignore"):
        for start in range(0, flat.size, _PHI_BLOCK):
            part = flat[start : start + _PHI_BLOCK]
            if part.size != m:
                m = part.size
                low, z, step, line, index = low[:m], z[:m], step[:m], line[:m], index[:m]
            np.clip(part, -16.0, np.inf, out=low)
            np.multiply(low, _PHI_STEPS, out=z)
            np.clip(z, -_PHI_SPAN, _PHI_SPAN - 0.5, out=z)
            np.floor(z, out=step)
            z -= step
            np.add(step, _PHI_SPAN, out=index, casting="unsafe")
            np.take(c1, index, mode="clip", out=line)
            line *= z
            dest = out[start : start + _PHI_BLOCK]
            np.take(c0, index, mode="clip", out=dest)
            dest += line
            dest *= low
    return out.reshape(x.shape)  # each block is read before its result is written


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """``0.5 * x * (1 + tanh(u))`` written as ``x / (1 + exp(-2u))``: the same value
    without the cancellation of ``1 + tanh(u)`` for negative ``x``."""
    t = x.dtype.type
    inner = t(math.sqrt(2.0 / math.pi)) * (x + t(0.044715) * x * x * x)
    return x / (t(1) + np.exp(t(-2) * inner))


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
    big = np.copysign(1.0 - _erfc(a), z)
    return np.where(small, series * (2.0 / math.sqrt(math.pi)), big).astype(x.dtype)


def _softplus(x: np.ndarray) -> np.ndarray:
    """``log(exp(x) + 1)`` as OpenVINO computes it, ``x`` itself from where the two
    differ by less than 1e-6.  Below about -8 in f32 this keeps little of the true
    value's relative precision (``1 + exp(x)`` rounds), but it is the plugin's value."""
    t = x.dtype.type
    threshold = -math.log(math.expm1(10.0 ** -np.finfo(x.dtype).precision))
    return np.where(x < t(threshold), np.log(np.exp(x) + t(1)), x)


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Log": np.log,
    "Erf": erf,
    "Sin": np.sin,
    "Cos": np.cos,
    "Floor": np.floor,
    "Ceiling": np.ceil,
    "Sigmoid": _sigmoid,
    "Tanh": np.tanh,
    "HSwish": lambda x: x * _hsigmoid(x),
    "HSigmoid": _hsigmoid,
}
UNARY_SINCE = {"HSwish": 4, "HSigmoid": 5}
# Activations OpenVINO defines for floating-point inputs only.
REAL_UNARY: dict[str, tuple[int, Callable[[np.ndarray], np.ndarray]]] = {
    "SoftPlus": (4, _softplus),
    "Mish": (4, lambda x: x * np.tanh(_softplus(x))),
    "SoftSign": (9, lambda x: x / (x.dtype.type(1) + np.abs(x))),
}


def _unary_kernel(fn):
    def kernel(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (float_compute(x, fn),)

    return kernel


for _type, _fn in UNARY.items():
    _since = UNARY_SINCE.get(_type, 1)
    register(
        OpDef(type=_type, version=_since, since_opset=_since, attrs=(), infer=infer_unary,
              kernel=_unary_kernel(_fn))
    )  # fmt: skip


for _type, (_since, _fn) in REAL_UNARY.items():
    register(
        OpDef(type=_type, version=_since, since_opset=_since, attrs=(),
              infer=_infer_real(_type), kernel=_unary_kernel(_fn))
    )  # fmt: skip


def _abs(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.abs(x),)


def _infer_signed(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    et = inputs[0].element_type
    if et is not None and et.dtype.kind == "u":
        raise ShapeError(f"Negative needs a signed input, got {et.name}")
    return infer_unary(a, inputs)


def _negative(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    with np.errstate(over="ignore"):
        return (np.negative(x),)


def _sign(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    out = (x > 0).astype(x.dtype)
    if x.dtype.kind != "u":
        out -= (x < 0).astype(x.dtype)
    if x.dtype.kind == "f":
        out[np.isnan(x)] = np.nan
    return (out,)


def _elu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    def fn(v: np.ndarray) -> np.ndarray:
        return np.where(v > 0, v, v.dtype.type(a.alpha) * np.expm1(v))

    return (float_compute(x, fn),)


def _relu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    return (blocks.elementwise(_relu_values, x.shape, x.dtype, (x,)),)


def _relu_values(v: np.ndarray) -> np.ndarray:
    """``v > 0 ? v : 0``: NaN > 0 is false, so NaN gives 0, as in the plugin and the
    reference kernel, and so does -0.0.

    In two SIMD passes (25 times faster than np.where): np.fmax gives the other operand
    for NaN, and adding +0.0 turns the -0.0 it may keep (which zero it keeps is the
    CPU's) into +0.0, changing nothing else.
    """
    if v.dtype.kind != "f":
        return np.maximum(v, v.dtype.type(0))
    out = np.fmax(v, v.dtype.type(0))
    out += v.dtype.type(0)
    return out


def _writable_float(x: np.ndarray) -> bool:
    """Whether an activation may be done into ``x`` in passes over its flat row: f32 or
    f64 (narrower floats are computed in f32 and rounded), C-contiguous and writable."""
    return x.dtype in (np.float32, np.float64) and x.flags.c_contiguous and x.flags.writeable


def relu_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """ReLU of ``x`` written into ``x``, where that gives the kernel's result (f32 or f64,
    C-contiguous): the same two passes as :func:`_relu_values`; whether it did."""
    if not _writable_float(x):
        return False

    def into(v: np.ndarray) -> None:
        np.fmax(v, v.dtype.type(0), out=v)
        v += v.dtype.type(0)

    blocks.in_place(into, x)
    return True


register(OpDef(type="Abs", version=1, since_opset=1, attrs=(), infer=infer_unary, kernel=_abs))
register(OpDef(type="ReLU", version=1, since_opset=1, attrs=(), infer=infer_unary, kernel=_relu))
register(OpDef(type="Negative", version=1, since_opset=1, attrs=(), infer=_infer_signed,
               kernel=_negative))  # fmt: skip
register(OpDef(type="Sign", version=1, since_opset=1, attrs=(), infer=infer_unary, kernel=_sign))
register(OpDef(type="Elu", version=1, since_opset=1, attrs=(Attr("alpha", "float"),),
               infer=infer_unary, kernel=_elu))  # fmt: skip


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
                         f"input {format_shape(x.shape)}")  # fmt: skip
    return [TensorInfo(x.shape, x.element_type)]


def _prelu(a: SimpleNamespace, x: np.ndarray, slope: np.ndarray) -> tuple[np.ndarray, ...]:
    if x.dtype != slope.dtype:
        raise KernelError(f"inputs have different element types: {x.dtype} and {slope.dtype}")
    s = slope.reshape(prelu_slope_shape(x.shape, slope.shape))
    if np.broadcast_shapes(x.shape, s.shape) != x.shape:
        raise KernelError(f"slope {list(slope.shape)} does not broadcast onto the input "
                         f"{list(x.shape)}")  # fmt: skip
    with np.errstate(all="ignore"):
        if x.dtype.kind == "f" and x.dtype.itemsize < 4:
            scaled = (x.astype(np.float32) * s.astype(np.float32)).astype(x.dtype)
        else:
            scaled = x * s
    return (np.where(x < 0, scaled, x),)


register(OpDef(type="PRelu", version=1, since_opset=1, attrs=(), infer=_infer_prelu,
               kernel=_prelu, inputs=(2, 2)))  # fmt: skip


# --------------------------------------------------------------------------- Clamp


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
    lo, hi = clamp_bounds(x.dtype, a.min, a.max)
    if x.dtype.kind not in "fiu" or (x.dtype.kind == "f" and (
            (lo == 0 and np.signbit(lo)) or (hi == 0 and np.signbit(hi)))):  # fmt: skip
        return (_clamp_exact(x, lo, hi),)
    return (blocks.elementwise(lambda v: _clamp_fast(v, lo, hi), x.shape, x.dtype, (x,)),)


def clamp_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """Clamp of ``x`` written into ``x``, where that gives the kernel's result (f32 or
    f64, C-contiguous, bounds that take :func:`_clamp_fast`): the same passes; whether
    it did."""
    if not _writable_float(x):
        return False
    lo, hi = clamp_bounds(x.dtype, attrs.min, attrs.max)
    if (lo == 0 and np.signbit(lo)) or (hi == 0 and np.signbit(hi)):
        return False

    def into(v: np.ndarray) -> None:
        np.fmax(v, lo, out=v)
        _clamp_rest(v, lo, hi)

    blocks.in_place(into, x)
    return True


def _clamp_exact(x: np.ndarray, lo: np.generic, hi: np.generic) -> np.ndarray:
    """Clamp by its definition: max then min in maxps/minps order (``x > lo ? x : lo``,
    then ``t < hi ? t : hi``), so NaN becomes min, as in the CPU plugin."""
    t = np.where(x > lo, x, lo)
    return np.where(t < hi, t, hi).astype(x.dtype, copy=False)


def _clamp_fast(x: np.ndarray, lo: np.generic, hi: np.generic) -> np.ndarray:
    """:func:`_clamp_exact`'s values in two SIMD passes (ten times faster than np.where).

    Floats: ``np.fmax`` gives the other operand for NaN, so NaN becomes ``lo``, as the
    definition makes it (``NaN > lo`` is false), and then no NaN is left for
    ``np.minimum``.  The two differ from the definition only where it compares equal
    zeros (which zero they keep is the CPU's): with a +0.0 bound every zero of the
    result becomes +0.0, as the definition gives, by adding +0.0 (a third pass).  (A
    -0.0 bound takes the exact path.)  Integers: np.maximum and np.minimum.
    """
    out = np.fmax(x, lo) if x.dtype.kind == "f" else np.maximum(x, lo)
    _clamp_rest(out, lo, hi)
    return out


def _clamp_rest(out: np.ndarray, lo: np.generic, hi: np.generic) -> None:
    np.minimum(out, hi, out=out)
    if out.dtype.kind == "f" and (lo == 0 or hi == 0):
        out += out.dtype.type(0)


register(
    OpDef(
        type="Clamp", version=1, since_opset=1,
        attrs=(Attr("min", "float"), Attr("max", "float")),
        infer=infer_unary, kernel=_clamp, check=_check_clamp, shape_attrs=("min", "max"),
    )
)  # fmt: skip


# --------------------------------------------------------------------------- Swish, Gelu


def _infer_swish(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    out = _infer_real("Swish")(a, inputs[:1])
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
        out = np.empty(v.shape, v.dtype)  # C order: its flat view is itself
        _swish_pieces(np.ascontiguousarray(v), out, beta)
        return out

    return (float_compute(x, fn),)


def _swish_pieces(v: np.ndarray, out: np.ndarray, beta: np.ndarray | None) -> None:
    """``out = v * sigmoid(b v) = v / (1 + exp(-b v))``, in three passes per piece of
    ``blocks.PIECE`` elements (efficientnet's activation: half its run before), whose
    temporary stays in cache; ``v`` and ``out`` C-contiguous, ``out`` may be ``v``."""
    flat_v, flat_out = v.reshape(-1), out.reshape(-1)
    piece = min(blocks.PIECE, flat_v.size)
    t = np.empty(piece, v.dtype)
    for a in range(0, flat_v.size, piece):
        src, dst = flat_v[a:a + piece], flat_out[a:a + piece]
        tmp = t[:src.size]
        if beta is not None:
            np.multiply(src, -v.dtype.type(beta), out=tmp)
        else:
            np.negative(src, out=tmp)
        np.exp(tmp, out=tmp)
        tmp += v.dtype.type(1)
        np.divide(src, tmp, out=dst)


def swish_into(attrs: SimpleNamespace, x: np.ndarray, beta: np.ndarray | None = None) -> bool:
    """Swish of ``x`` written into ``x``, where that gives the kernel's result (f32 or
    f64, C-contiguous; ``beta`` absent, or a scalar of x's type): the same three passes;
    whether it did."""
    if not _writable_float(x):
        return False
    if beta is not None and (beta.ndim != 0 or beta.dtype != x.dtype):
        return False
    blocks.in_place(lambda v: _swish_pieces(v, v, beta), x)
    return True


register(
    OpDef(type="Swish", version=4, since_opset=4, attrs=(), infer=_infer_swish, kernel=_swish,
          inputs=(1, 2))
)  # fmt: skip

GELU_MODES = ("erf", "tanh")


def _gelu(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    mode = getattr(a, "approximation_mode", "erf")
    return (float_compute(x, gelu_erf if mode == "erf" else gelu_tanh),)


register(
    OpDef(type="Gelu", version=2, since_opset=2, attrs=(), infer=_infer_real("Gelu"),
          kernel=_gelu)
)  # fmt: skip
register(
    OpDef(
        type="Gelu", version=7, since_opset=7,
        attrs=(Attr("approximation_mode", "enum", "erf", GELU_MODES),),
        infer=_infer_real("Gelu"), kernel=_gelu, shape_attrs=("approximation_mode",),
    )
)  # fmt: skip

__all__ = [
    "AUTO_BROADCASTS",
    "binary_kernel",
    "broadcast_dims",
    "broadcast_operands",
    "broadcast_shapes",
    "erf",
    "float_compute",
    "merge_dims",
    "prelu_slope_shape",
    "same_element_type",
]
