"""Products with a compressed weight's table look-ups compiled by numba: the fast engine's.

With the fast engine on (numba installed, ``IRRUN_JIT`` not ``0``: :mod:`.jit`), a MatMul of
a few rows (:data:`MAX_ROWS`, a decode step's) whose weight is kept compressed with look-up
tables (:mod:`irrun.core.compressed`: 4-bit or 8-bit codes whose scale and zero point are
shared by a group) multiplies without decompressing: for each output channel and group it
reads the group's codes (two to a byte for 4 bits) and their values in the group's table,
and sums ``x[m, k] * w[n, k]`` over k. Without it, and for more rows, NumPy decompresses
blocks and BLAS multiplies (:mod:`.compressed`).

On a CPU with AVX-512, the 4-bit products and the 8-bit ones whose tables are affine run
the kernels of :mod:`.compressed_vector` instead (4-5x faster), within the same bound.

Values.  Each weight value is the table's entry, which is exactly the decompressed value
(the tables are made by the chain's own kernels); the products are summed over k in f32
in an order of LLVM's (compiled with the ``reassoc`` and ``contract`` fast-math flags
only: it may reorder the sum into vector lanes and fuse a multiply with its add).  That
is another order than BLAS's, within the same bound as the fast MatMul's
(:data:`irrun.fast.matmul.BOUND`: 2 K u sum_k |a_ik w_kj|, which a sum of K products in
any order, fused or not, keeps).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import jit

MAX_ROWS = 8  # rows of the input: beyond, BLAS on decompressed blocks re-reads less


@functools.cache
def kernels() -> tuple[Callable[..., None], Callable[..., None]]:
    """The compiled kernels (4-bit, 8-bit); the engine must be on (:func:`jit.enabled`)."""
    # Sums in any order, with fused multiply-adds: LLVM vectorises the look-ups' products
    # (0.5 ns an element instead of 0.8 in order, measured); no other fast-math flag, so
    # NaN and infinities are what the arithmetic makes of them.
    fast = {"fastmath": {"reassoc", "contract"}}
    return (jit.compile(_nibbles, "compressed 4-bit product", **fast),
            jit.compile(_bytes, "compressed 8-bit product", **fast))


def vector_kernel(group: int) -> Callable[..., None] | None:
    """The 4-bit kernel with each group's table in a register (:mod:`.compressed_vector`),
    where this CPU runs it and ``group`` (codes a group) is a multiple of 32; else None."""
    if group % 32:
        return None
    from . import compressed_vector  # imports numba: only with the engine on

    return compressed_vector.kernel()


def affine(table):
    """For 4-bit or 8-bit tables ``[tables, 16 or 256]`` (entry ``j`` for the ``j``-th
    code from the least): their ``(scale, zero, half)`` where the AVX-512 kernels compute
    every entry bit for bit
    (:func:`.compressed_vector.affine`) and runs here; else None."""
    if table.shape[-1] not in (16, 256) or not jit.enabled():
        return None
    from . import compressed_vector  # imports numba: only with the engine on

    if not compressed_vector.available():
        return None
    return compressed_vector.affine(table.reshape(-1, table.shape[-1]))


def affine_kernel(bits: int = 8) -> Callable[..., None]:
    """The 4-bit or 8-bit kernel for tables :func:`affine` describes."""
    from . import compressed_vector

    kernel = (compressed_vector.byte_kernel() if bits == 8
              else compressed_vector.affine_nibble_kernel())  # fmt: skip
    assert kernel is not None
    return kernel


def takes(rows: int) -> bool:
    """Whether the compiled product runs for an input of ``rows`` rows."""
    return rows <= MAX_ROWS and jit.enabled()


def _nibbles(x, packed, table, groups, group, signed, out):  # pragma: no cover - compiled
    """``out[m, n] = sum_k x[m, k] * table[n * groups + k // group, code(n, k)]``, codes
    two to a byte, low nibble first (``signed``: two's complement, its table from -8)."""
    rows, count = out.shape
    half = group // 2
    for n in range(count):
        for m in range(rows):
            s = np.float32(0.0)
            xm = x[m]
            for g in range(groups):
                t = table[n * groups + g]
                at = g * half
                k = g * group
                for i in range(half):
                    b = np.int64(packed[n, at + i])  # an int: uint8 with int64 is a float
                    lo = b & 15
                    hi = b >> 4
                    if signed:
                        lo ^= 8
                        hi ^= 8
                    s += xm[k + 2 * i] * t[lo] + xm[k + 2 * i + 1] * t[hi]
            out[m, n] = s


def _bytes(x, code, table, groups, group, signed, out):  # pragma: no cover - compiled
    """As :func:`_nibbles`, a code a byte (``signed``: int8 read as uint8, its table from
    -128)."""
    rows, count = out.shape
    for n in range(count):
        for m in range(rows):
            s = np.float32(0.0)
            xm = x[m]
            for g in range(groups):
                t = table[n * groups + g]
                k = g * group
                for i in range(group):
                    c = np.int64(code[n, k + i])
                    if signed:
                        c ^= 128
                    s += xm[k + i] * t[c]
            out[m, n] = s
