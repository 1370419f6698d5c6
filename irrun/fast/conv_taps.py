"""Ordinary 2-D convolution as one GEMM per tap, accumulated in place (:func:`convolve`).

The column matrix (the ``columns`` path of :mod:`.convolution`) copies the input once
per tap (9 copies for a 3x3 filter) before one product.  Here the input is copied once,
padded and split into its stride phases as :func:`irrun.fast.conv_depthwise._phases`
lays it out, so that what a tap reads for every output position is a contiguous slice
of each channel's flat phase: a ``[Ci, Ho * Wq]`` matrix of contiguous rows, which BLAS
takes as it is.  Each tap is then one GEMM of its ``[Co, Ci]`` filter with that slice,
added into the output by GEMM's own ``beta`` (:func:`irrun.fast.blas.gemm`): no column
matrix and no addition pass.  The output is computed on the phase's full width ``Wq``
(``Wo`` plus the kernel's reach), and the extra columns are dropped at the end.

Measured on a 2-core Xeon (AVX-512) at one thread against the column matrix: resnet's
64 -> 64 3x3 at 56x56 1.4x faster, 32 -> 32 at 112x112 1.6x, 128 -> 128 at 28x28 1.1x;
at 14x14 the same, and at 7x7, where the extra columns are a third of the work, slower:
so it is taken for outputs at least :data:`MIN_WIDTH` wide, and for at most twice the
input channels as outputs (see :func:`takes`).

The sums are over the input channels by BLAS, then over the taps in the filter's order,
as the reference's (:mod:`irrun.ops.convolution`), but BLAS's order over the channels
may differ with the product's width, and the padding's ``0 * w`` terms are added (a
finite filter's leave the sums as they were, the closing ``+ 0`` gives back the
reference's +0 for a zero sum): values agree with the reference within rounding.  The
order does not depend on the thread count but BLAS's own blocking does, as for every
product.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.window import Windows
from . import blas
from .conv_depthwise import _phases, _tap_slice, _taps, applies

# Output rows at least this wide: the extra Wq - Wo columns stay under a tenth or so.
MIN_WIDTH = 20
# Input channels at least: a GEMM with fewer sums too little per element it writes.
MIN_CHANNELS = 16


def takes(shape: tuple[int, ...], groups: int, co: int, ci: int, win: Windows,
          dtype: np.dtype | type) -> bool:  # fmt: skip
    """Whether :func:`convolve` computes this convolution: an ordinary (one group) 2-D
    filter of several taps; enough input channels, and not many more outputs (each tap
    reads and writes the whole output where the column matrix copies the input once per
    tap: squeezenet's 16 -> 64 3x3 is 1.7x slower here); wide outputs; computed in
    ``dtype`` (f32 or f64) by a BLAS of known interface; and a padded copy of the data
    (of ``shape``) no larger than the column matrix would be."""
    return (groups == 1 and len(shape) == 4 and len(win.kernel) == 2 and math.prod(win.kernel) > 1
            and ci >= MIN_CHANNELS and co <= 2 * ci and win.out[1] >= MIN_WIDTH
            and blas.available(dtype) and applies(shape, win))  # fmt: skip


def convolve(x: np.ndarray, w: np.ndarray, win: Windows) -> np.ndarray:
    """``x`` [N, Ci, H, W] convolved with ``w`` [Co, Ci, kh, kw], both of x's type."""
    batch, ci = x.shape[:2]
    co = w.shape[0]
    ho, wo = win.out
    # [taps, Co, Ci]: each tap's filter a contiguous matrix.  A copy of the filter per run:
    # each weight is used Ho * Wo >= 400 times, so the copy is under 1/400 of the work.
    filters = np.ascontiguousarray(np.moveaxis(w.reshape(co, ci, -1), 2, 0))
    phases, wq = _phases(x.reshape(batch * ci, *x.shape[2:]), win)
    phases = phases.reshape(batch, ci, *phases.shape[1:])
    out = np.empty((batch, co, ho, wo), x.dtype)
    acc = np.empty((co, ho * wq), x.dtype)
    for n in range(batch):
        for t, di, dj in _taps(win):
            r, q, span = _tap_slice(win, wq, di, dj)
            blas.gemm(filters[t], phases[n, :, r, q, span], acc, accumulate=t > 0)
        np.add(acc.reshape(co, ho, wq)[:, :, :wo], 0, out=out[n])  # the reference's +0 start
    return out
