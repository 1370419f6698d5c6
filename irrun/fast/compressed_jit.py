"""Products with a compressed weight's table look-ups compiled by numba: optional, off by default.

With ``IRRUN_JIT=1`` (read as :func:`irrun.fast.conv_jit.enabled` reads it) and numba
installed, a MatMul of a few rows (:data:`MAX_ROWS`, a decode step's) whose weight is kept
compressed with look-up tables (:mod:`irrun.core.compressed`: 4-bit or 8-bit codes whose
scale and zero point are shared by a group) multiplies without decompressing: for each
output channel and group it reads the group's codes (two to a byte for 4 bits) and their
values in the group's table, and sums ``x[m, k] * w[n, k]`` over k.  Without it, and for
more rows, NumPy decompresses blocks and BLAS multiplies (:mod:`.compressed`).

Values.  Each weight value is the table's entry, which is exactly the decompressed value
(the tables are made by the chain's own kernels); the products and sums are f32, each
rounded on its own (numba compiles without fast-math: no fused multiply-add, no
reassociation), summed over k in four interleaved partial sums (k mod 4) added at the end.
That is another order than BLAS's, within the same bound as the fast MatMul's
(:data:`irrun.fast.matmul.BOUND`: 2 K u sum_k |a_ik w_kj|; a sum of K terms in any order
is within (K - 1) u of it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import conv_jit

MAX_ROWS = 8  # rows of the input: beyond, BLAS on decompressed blocks re-reads less


@functools.cache
def kernels() -> tuple[Callable[..., None], Callable[..., None]] | None:
    """The compiled kernels (4-bit, 8-bit), or None when numba cannot be imported (conv_jit
    warns once about that)."""
    if conv_jit.kernels() is None:
        return None
    import numba

    jit = numba.njit(cache=False, nogil=True)
    return jit(_nibbles), jit(_bytes)


def takes(rows: int) -> bool:
    """Whether the compiled product runs for an input of ``rows`` rows."""
    return rows <= MAX_ROWS and conv_jit.enabled() and kernels() is not None


def _nibbles(x, packed, table, groups, group, signed, out):  # pragma: no cover - compiled
    """``out[m, n] = sum_k x[m, k] * table[n * groups + k // group, code(n, k)]``, codes
    two to a byte, low nibble first (``signed``: two's complement, its table from -8);
    ``group`` a multiple of 4."""
    rows, count = out.shape
    half = group // 2
    for n in range(count):
        for m in range(rows):
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            xm = x[m]
            for g in range(groups):
                t = table[n * groups + g]
                base = g * group
                at = g * half
                for i in range(0, half, 2):
                    b0 = np.int64(packed[n, at + i])  # an int: uint8 with int64 is a float
                    b1 = np.int64(packed[n, at + i + 1])
                    lo0, hi0, lo1, hi1 = b0 & 15, b0 >> 4, b1 & 15, b1 >> 4
                    if signed:
                        lo0, hi0, lo1, hi1 = lo0 ^ 8, hi0 ^ 8, lo1 ^ 8, hi1 ^ 8
                    k = base + 2 * i
                    s0 = s0 + xm[k] * t[lo0]
                    s1 = s1 + xm[k + 1] * t[hi0]
                    s2 = s2 + xm[k + 2] * t[lo1]
                    s3 = s3 + xm[k + 3] * t[hi1]
            out[m, n] = (s0 + s1) + (s2 + s3)


def _bytes(x, code, table, groups, group, signed, out):  # pragma: no cover - compiled
    """As :func:`_nibbles`, a code a byte (``signed``: int8 read as uint8, its table from
    -128)."""
    rows, count = out.shape
    for n in range(count):
        for m in range(rows):
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            s2 = np.float32(0.0)
            s3 = np.float32(0.0)
            xm = x[m]
            for g in range(groups):
                t = table[n * groups + g]
                base = g * group
                for i in range(0, group, 4):
                    k = base + i
                    c0, c1 = np.int64(code[n, k]), np.int64(code[n, k + 1])
                    c2, c3 = np.int64(code[n, k + 2]), np.int64(code[n, k + 3])
                    if signed:
                        c0, c1, c2, c3 = c0 ^ 128, c1 ^ 128, c2 ^ 128, c3 ^ 128
                    s0 = s0 + xm[k] * t[c0]
                    s1 = s1 + xm[k + 1] * t[c1]
                    s2 = s2 + xm[k + 2] * t[c2]
                    s3 = s3 + xm[k + 3] * t[c3]
            out[m, n] = (s0 + s1) + (s2 + s3)
