"""Depthwise 2-D convolution compiled by numba: the fast engine's, where it is on.

Where the fast engine is on (numba installed, the optional extra ``pip install
'irrun[fast]'``, and ``IRRUN_JIT`` not ``0``: :mod:`.jit`), :func:`irrun.fast.
conv_depthwise.depthwise` sends f32 and f64 data here (f16 and bf16 arrive as f32: the
convolution sums them in f32).  Other element types, and every run without the engine,
stay on the NumPy path, which is the oracle of this one (tests/fast/test_conv_jit.py).

Same bits as the NumPy path and the reference.  Those compute each output element as
+0 plus its first tap's product, then add each further tap's product in the filter's
row-major tap order, every operation rounded in the data's type.  The kernels here do
exactly that per element: ``acc = zero + x0 * w0`` (``zero`` a +0 of the data's type,
passed in), then ``p = x * w; acc = acc + p`` tap by tap, in f32 for
f32 (numba keeps f32 * f32 in f32).  numba compiles without fast-math, so LLVM may not
reassociate the sums nor contract a multiply and an add into one fused multiply-add
(contraction needs the ``contract`` flag, which only ``fastmath`` sets; the compiled
code holds no ``vfmadd`` on an AVX-512/FMA machine), and tests/fast/test_conv_jit.py
compares bits over a sweep of geometries, magnitudes, infinities and NaNs.

The kernels read the NumPy path's own padded copies of each block of planes (the flat
stride phases, or channels last for small planes), so the zeros of the padding are
multiplied as there (``0 * inf`` is NaN in both), and the blocks are the same: only the
tap loop changes, from one NumPy pass over the block per multiply and per add to one
compiled pass per output row (flat) or window (channels last) that keeps its sums in
L1 and needs no temporary.  Its inner loop runs along an output row, or along the
block's channels, and LLVM vectorises it; the order of the sums per element stays.
(Reading the unpadded input directly, with the padding's products computed apart,
measured 2-5x slower: numba's index checks keep LLVM from vectorising.)

Blocks run on the run's threads as the NumPy path's do (:func:`irrun.threads.
map_blocks`): the kernels are compiled with ``nogil``, so blocks run at once.
Compiling costs importing numba (about 0.1 s) and each kernel about 0.25-0.35 s at the
first depthwise convolution of its layout and element type (about 0.6 s for an f32
network that uses both layouts), once: numba's disk cache keeps them for the next
process (:mod:`.jit`), and ``irrun ... -v`` shows each compile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from . import jit


@functools.cache
def kernels() -> tuple[Callable[..., None], Callable[..., None]]:
    """The compiled kernels (flat, channels last); the fast engine must be on."""
    return jit.compile(_flat, "depthwise flat"), jit.compile(_last, "depthwise channels-last")


def takes(x: np.ndarray) -> bool:
    """Whether the JIT computes a depthwise convolution of ``x``: the fast engine on, and
    float data (f32, f64)."""
    return x.dtype in (np.float32, np.float64) and jit.enabled()


def _flat(ph, w, tr, tq, toff, wq, zero, out):  # pragma: no cover - runs compiled
    """The flat layout's planes: ``out[p, oy, ox]`` sums ``ph[p, tr[t], tq[t], toff[t] +
    oy * wq + ox] * w[p, t]`` over taps t in order from ``zero[0]``, each operation
    rounded."""
    m, ho, wo = out.shape
    taps = w.shape[1]
    z = zero[0]
    for p in range(m):
        for oy in range(ho):
            row = out[p, oy]
            at = toff[0] + oy * wq
            src = ph[p, tr[0], tq[0], at:at + wo]
            w0 = w[p, 0]
            for ox in range(wo):
                row[ox] = z + src[ox] * w0
            for t in range(1, taps):
                at = toff[t] + oy * wq
                src = ph[p, tr[t], tq[t], at:at + wo]
                wt = w[p, t]
                for ox in range(wo):
                    prod = src[ox] * wt  # rounded on its own: no fused multiply-add
                    row[ox] = row[ox] + prod


def _last(buf, wts, di, dj, sh, sw, zero, acc):  # pragma: no cover - runs compiled
    """The channels-last layout: ``buf`` [rows, cols, m], ``wts`` [taps, m], ``acc``
    [Ho, Wo, m]; a window's sums run over a vector of channels, tap by tap, from
    ``zero[0]``."""
    ho, wo, m = acc.shape
    taps = wts.shape[0]
    z = zero[0]
    for oy in range(ho):
        for ox in range(wo):
            dst = acc[oy, ox]
            src = buf[oy * sh + di[0], ox * sw + dj[0]]
            w0 = wts[0]
            for c in range(m):
                dst[c] = z + src[c] * w0[c]
            for t in range(1, taps):
                src = buf[oy * sh + di[t], ox * sw + dj[t]]
                wt = wts[t]
                for c in range(m):
                    prod = src[c] * wt[c]
                    dst[c] = dst[c] + prod
