"""Fast kernels of ReLU, Clamp, Swish and Gelu (a CNN's and a transformer's activations),
and each computed into the memory of its input for an in-place chain (``into``).

Each splits over the run's threads as :func:`irrun.fast.blocks.split` does, and:

* ReLU and Clamp run as SIMD passes (``np.fmax``, ``np.minimum``, adding +0.0) rather
  than the reference's selects, some ten times faster, with the same bits:
  ``np.fmax`` gives the other operand for NaN, as the definition's ``x > lo ? x : lo``
  does, and adding +0.0 turns a -0.0 the CPU may keep where equal zeros compare into the
  +0.0 the definition gives.  A -0.0 bound of Clamp takes the reference.
* Swish runs the reference's operations on pieces of 64K elements, whose temporary stays
  in the CPU's cache: the same bits, and a third less time for an EfficientNet's
  activation (``python benchmarks/kernels.py --only act`` times these four).
* Gelu (erf) in f32, and in narrower floats computed in f32, reads a table of Phi
  (:mod:`.gelu_table`), not bit for bit the reference.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ir.registry import supported_ops
from ..ops.activations import clamp_bounds, gelu_erf, gelu_tanh
from ..ops.unary import float_compute
from . import blocks
from .gelu_table import gelu_erf_table
from .registry import FastKernel, register_fast

_SPLIT = "split over the run's threads from 2**20 elements"


def _pieces(op_type: str):
    """The scratch of the op's fast kernel, split into pieces like its reference (every
    version of the op declares the same)."""
    (reference,) = {op.scratch for op in supported_ops() if op.type == op_type}
    return blocks.pieces_scratch(reference)


def _writable_float(x: np.ndarray) -> bool:
    """Whether an activation may be done into ``x`` in passes over its flat row: f32 or
    f64 (narrower floats are computed in f32 and rounded), C-contiguous and writable."""
    return x.dtype in (np.float32, np.float64) and x.flags.c_contiguous and x.flags.writeable


# --------------------------------------------------------------------------- ReLU


def relu_values(x: np.ndarray) -> np.ndarray:
    """``x > 0 ? x : 0`` in two SIMD passes for floats (see the module's doc)."""
    out = np.empty(x.shape, x.dtype)
    if x.dtype.kind != "f":
        return np.maximum(x, x.dtype.type(0), out=out)
    np.fmax(x, x.dtype.type(0), out=out)
    out += x.dtype.type(0)
    return out


def _relu(attrs: SimpleNamespace, x: np.ndarray):
    if x.dtype.kind not in "fiu":
        return NotImplemented
    return (blocks.elementwise(relu_values, x.shape, (x,), x.dtype),)


def relu_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """ReLU of ``x`` written into ``x`` (f32 or f64, C-contiguous, writable); whether it did."""
    if not _writable_float(x):
        return False

    def into(v: np.ndarray) -> None:
        np.fmax(v, v.dtype.type(0), out=v)
        v += v.dtype.type(0)

    blocks.in_place(into, x)
    return True


register_fast(FastKernel(
    "ReLU", (1,), f"floats and integers: fmax(x, 0) + 0.0 (integers: maximum); {_SPLIT}",
    _relu, scratch=_pieces("ReLU"), into=relu_into,
))


# --------------------------------------------------------------------------- Clamp


def _passes_give_definition(x: np.ndarray, lo: np.generic, hi: np.generic) -> bool:
    """Floats and integers, but for a -0.0 bound (see the module's doc)."""
    if x.dtype.kind not in "fiu":
        return False
    return x.dtype.kind != "f" or not ((lo == 0 and np.signbit(lo)) or (hi == 0 and np.signbit(hi)))


def clamp_values(x: np.ndarray, lo: np.generic, hi: np.generic) -> np.ndarray:
    """``x > lo ? x : lo``, then ``t < hi ? t : hi``, in SIMD passes (see the module's doc)."""
    out = np.empty(x.shape, x.dtype)
    (np.fmax if x.dtype.kind == "f" else np.maximum)(x, lo, out=out)
    _clamp_rest(out, lo, hi)
    return out


def _clamp_rest(out: np.ndarray, lo: np.generic, hi: np.generic) -> None:
    np.minimum(out, hi, out=out)
    if out.dtype.kind == "f" and (lo == 0 or hi == 0):
        out += out.dtype.type(0)


def _clamp(attrs: SimpleNamespace, x: np.ndarray):
    lo, hi = clamp_bounds(x.dtype, attrs.min, attrs.max)
    if not _passes_give_definition(x, lo, hi):
        return NotImplemented
    return (blocks.elementwise(lambda v: clamp_values(v, lo, hi), x.shape, (x,), x.dtype),)


def clamp_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """Clamp of ``x`` written into ``x`` (f32 or f64, C-contiguous, writable, no -0.0
    bound); whether it did."""
    if not _writable_float(x):
        return False
    lo, hi = clamp_bounds(x.dtype, attrs.min, attrs.max)
    if not _passes_give_definition(x, lo, hi):
        return False

    def into(v: np.ndarray) -> None:
        np.fmax(v, lo, out=v)
        _clamp_rest(v, lo, hi)

    blocks.in_place(into, x)
    return True


register_fast(FastKernel(
    "Clamp", (1,), f"floats and integers, no -0.0 bound: SIMD max and min passes; {_SPLIT}",
    _clamp, scratch=_pieces("Clamp"), into=clamp_into,
))


# --------------------------------------------------------------------------- Swish


def swish_pieces(v: np.ndarray, out: np.ndarray, beta: np.ndarray | None) -> None:
    """``out = v / (1 + exp(-beta v))`` by the reference's operations, piece by piece of
    ``blocks.PIECE`` elements; ``v`` and ``out`` C-contiguous, ``out`` may be ``v``."""
    flat_v, flat_out = v.reshape(-1), out.reshape(-1)
    piece = max(1, min(blocks.PIECE, flat_v.size))
    t = np.empty(piece, v.dtype)
    for a in range(0, flat_v.size, piece):
        src, dst = flat_v[a : a + piece], flat_out[a : a + piece]
        tmp = t[: src.size]
        if beta is None:
            np.negative(src, out=tmp)
        else:
            np.multiply(src, -v.dtype.type(beta), out=tmp)
        np.exp(tmp, out=tmp)
        tmp += v.dtype.type(1)
        np.divide(src, tmp, out=dst)


def _swish_values(v: np.ndarray, beta: np.ndarray | None) -> np.ndarray:
    out = np.empty(v.shape, v.dtype)  # C order: its flat view is itself
    swish_pieces(np.ascontiguousarray(v), out, beta)
    return out


def _swish(attrs: SimpleNamespace, x: np.ndarray, beta: np.ndarray | None = None):
    if beta is not None and beta.ndim != 0:
        return NotImplemented  # the reference says why

    def compute(v: np.ndarray) -> np.ndarray:
        return float_compute(v, lambda w: _swish_values(w, beta))

    return (blocks.elementwise(compute, x.shape, (x,), x.dtype),)


def swish_into(attrs: SimpleNamespace, x: np.ndarray, beta: np.ndarray | None = None) -> bool:
    """Swish of ``x`` written into ``x`` (f32 or f64, C-contiguous, writable; ``beta``
    absent, or a scalar of x's type); whether it did."""
    if not _writable_float(x):
        return False
    if beta is not None and (beta.ndim != 0 or beta.dtype != x.dtype):
        return False
    blocks.in_place(lambda v: swish_pieces(v, v, beta), x)
    return True


register_fast(FastKernel(
    "Swish", (4,), f"always: the reference's passes on cache-sized pieces; {_SPLIT}",
    _swish, scratch=_pieces("Swish"), into=swish_into,
))


# --------------------------------------------------------------------------- Gelu


def _table(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """Whether the table computes Gelu of ``x``: erf mode, in f32 work (not f64)."""
    return getattr(attrs, "approximation_mode", "erf") == "erf" and x.dtype != np.float64


def _gelu(attrs: SimpleNamespace, x: np.ndarray):
    if _table(attrs, x):
        fn = gelu_erf_table
    elif blocks.worth_splitting(x.size):
        fn = gelu_erf if getattr(attrs, "approximation_mode", "erf") == "erf" else gelu_tanh
    else:
        return NotImplemented
    return (blocks.elementwise(lambda v: float_compute(v, fn), x.shape, (x,), x.dtype),)


def gelu_into(attrs: SimpleNamespace, x: np.ndarray) -> bool:
    """Gelu of ``x`` by the table, written into ``x`` (f32, erf mode, C-contiguous,
    writable); whether it did."""
    if not (x.dtype == np.float32 and _table(attrs, x) and x.flags.c_contiguous
            and x.flags.writeable):
        return False
    blocks.in_place(lambda v: gelu_erf_table(v, v), x)
    return True


register_fast(FastKernel(
    "Gelu", (2, 7),
    f"erf mode, f32 (and narrower floats, computed in f32): a table of Phi; {_SPLIT}",
    _gelu, exact=False,
    bound="relative error against the reference at most 4.4e-7 + 2e-8 x^2 for x >= -13, "
          "5.2e-6 below (measured: 2.4e-7 for x >= 0, 5.4e-7 down to -5, 2.9e-6 down to "
          "-13); denormal outputs within 1e-43 (tests/fast/test_gelu_table.py)",
    scratch=_pieces("Gelu"), into=gelu_into,
))
