"""Depthwise 2-D convolution compiled by numba: optional, off by default.

``IRRUN_JIT=1`` in the environment (read once, at the first depthwise convolution)
sends :func:`irrun.fast.conv_depthwise.depthwise` here for f32 and f64 data (f16 and
bf16 arrive as f32: the convolution sums them in f32).  Other element types, and
every run without the variable, stay on the NumPy path, which is the default and the
oracle of this one (tests/fast/test_conv_jit.py).  numba is the optional extra
``pip install 'irrun[jit]'``; with the variable set and numba missing, irrun warns
once and runs the NumPy path, whose values are the same.

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
Compiling costs once per process: importing numba about 0.1 s, then each kernel about
0.25-0.35 s at the first depthwise convolution of its layout and element type (about
0.6 s for an f32 network that uses both layouts).  ``cache=False``: nothing is written
next to the package.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable

import numpy as np

INSTALL_HINT = "pip install 'irrun[jit]'"


@functools.cache
def enabled() -> bool:
    """Whether ``IRRUN_JIT`` asks for the JIT (``1``, ``true``, ``yes``, ``on``); read
    once (``enabled.cache_clear()`` reads it again)."""
    return os.environ.get("IRRUN_JIT", "").strip().lower() in ("1", "true", "yes", "on")


@functools.cache
def kernels() -> tuple[Callable[..., None], Callable[..., None]] | None:
    """The compiled kernels (flat, channels last), or None, with one warning, when numba
    cannot be imported."""
    try:
        import numba
    except ImportError as e:
        warnings.warn(
            f"IRRUN_JIT is set but numba cannot be imported ({e}); depthwise convolutions "
            f"run on NumPy (same values, slower). Install the optional extra: {INSTALL_HINT}",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    jit = numba.njit(cache=False, nogil=True)
    return jit(_flat), jit(_last)


def takes(x: np.ndarray) -> bool:
    """Whether the JIT computes a depthwise convolution of ``x``: enabled, numba there,
    and float data (f32, f64)."""
    return enabled() and x.dtype in (np.float32, np.float64) and kernels() is not None


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
