"""Depthwise 2-D convolution (one input and one output channel per group), fast.

The same sums as :func:`irrun.ops.convolution.convolve`'s tap-by-tap loop: each output
element is its first tap's product, then each further tap's product added in the
filter's row-major tap order, in f32 for f16 and f32 data.  What changes is how the
work is laid out, for memory traffic: the planes of ``batch x channels`` are cut into
blocks that fit in a core's cache, each block is copied once with its zero padding,
and every tap is one multiply and one add over the whole block.

- Large output planes (more than ``_NHWC_POSITIONS`` positions): each plane is flat.
  The padded plane, split into its ``stride x stride`` phases (rows ``r::s``, columns
  ``q::s``) when strided, is a contiguous row of values; the output is computed on
  the phase's full width, so that a tap is one contiguous slice of it, and the extra
  columns are dropped at the end.
- Small planes with many channels: channels last, so that a tap's inner loop runs
  over the block's channels (a contiguous vector of weights) rather than over a row
  of 7 or 14 positions.

Blocks run on the run's threads (:func:`irrun.threads.map_blocks`).  Neither the
layout nor the blocks change which products are added in which order, so the values
are the same for every thread count and as the plain loop's.
"""

from __future__ import annotations

import math

import numpy as np

from .. import threads
from .window import Windows

# Output planes up to this many positions are computed channels last.
_NHWC_POSITIONS = 1024
# Bytes of one block's accumulator: a core's share of L2 with room for the input.
_BLOCK_BYTES = 256 * 1024


def applies(x: np.ndarray, win: Windows) -> bool:
    """Whether :func:`depthwise` takes ``x`` (2-D planes whose padding is not huge)."""
    if x.ndim != 4 or 0 in x.shape or 0 in win.out:
        return False
    padded = math.prod(_reach(win, i) for i in range(2))
    return padded <= 4 * math.prod(win.sizes) + math.prod(win.out) * math.prod(win.kernel) + 4096


def _reach(win: Windows, i: int) -> int:
    return (win.out[i] - 1) * win.strides[i] + (win.kernel[i] - 1) * win.dilations[i] + 1


def depthwise(x: np.ndarray, w: np.ndarray, win: Windows) -> np.ndarray:
    """``x`` [N, C, H, W] convolved plane by plane with ``w`` [C, kh * kw], in x's dtype
    (the caller passes f32 for f16)."""
    batch, channels = x.shape[:2]
    out = np.empty((batch, channels, *win.out), x.dtype)
    planes = x.reshape(batch * channels, *x.shape[2:])
    flat_out = out.reshape(batch * channels, *win.out)
    small = math.prod(win.out) <= _NHWC_POSITIONS
    kernel = _channels_last if small else _flat

    def block(start: int, stop: int) -> None:
        per = max(1, _BLOCK_BYTES // (math.prod(win.out) * x.itemsize))
        if small:
            per = max(per, 64)  # a short channel vector would make the inner loop short
        for a in range(start, stop, per):
            b = min(stop, a + per)
            index = np.arange(a, b) % channels
            kernel(planes[a:b], w[index], win, flat_out[a:b])

    threads.map_blocks(block, batch * channels, min_block=8)
    return out


def _padded(x: np.ndarray, win: Windows, rows: int, cols: int, last: bool) -> np.ndarray:
    """``x`` [m, H, W] in zeros of ``rows x cols`` per plane (channels last if ``last``),
    cut where no window reaches."""
    m, h, w = x.shape
    pt, pl = win.pads_begin
    shape = (rows, cols, m) if last else (m, rows, cols)
    buf = np.zeros(shape, x.dtype)
    # Input rows and columns that some window reads: [0, reach - pad) within the input.
    h1 = max(0, min(h, _reach(win, 0) - pt))
    w1 = max(0, min(w, _reach(win, 1) - pl))
    if h1 and w1:
        src = x[:, :h1, :w1]
        if last:
            buf[pt:pt + h1, pl:pl + w1] = src.transpose(1, 2, 0)
        else:
            buf[:, pt:pt + h1, pl:pl + w1] = src
    return buf


def _taps(win: Windows):
    (kh, kw), (dh, dw) = win.kernel, win.dilations
    for i in range(kh):
        for j in range(kw):
            yield i * kw + j, i * dh, j * dw


def _flat(x: np.ndarray, w: np.ndarray, win: Windows, out: np.ndarray) -> None:
    m = x.shape[0]
    (sh, sw), (ho, wo) = win.strides, win.out
    hq = -(-_reach(win, 0) // sh) + 1  # a row past the end: the last taps read into it
    wq = -(-_reach(win, 1) // sw)
    buf = _padded(x, win, hq * sh, wq * sw, last=False)
    if sh == 1 and sw == 1:
        phases = buf.reshape(m, 1, 1, hq * wq)
    else:  # phase (r, q) holds rows r::sh and columns q::sw, each contiguous
        phases = buf.reshape(m, hq, sh, wq, sw).transpose(0, 2, 4, 1, 3).copy()
        phases = phases.reshape(m, sh, sw, hq * wq)
    length = ho * wq
    acc = np.empty((m, length), x.dtype)
    tmp = np.empty((m, length), x.dtype)
    for t, di, dj in _taps(win):
        offset = (di // sh) * wq + dj // sw
        src = phases[:, di % sh, dj % sw, offset:offset + length]
        col = w[:, t:t + 1]
        if t == 0:
            np.multiply(src, col, out=acc)
        else:
            np.multiply(src, col, out=tmp)
            acc += tmp
    out[...] = acc.reshape(m, ho, wq)[:, :, :wo]


def _channels_last(x: np.ndarray, w: np.ndarray, win: Windows, out: np.ndarray) -> None:
    m = x.shape[0]
    (sh, sw), (ho, wo) = win.strides, win.out
    buf = _padded(x, win, _reach(win, 0), _reach(win, 1), last=True)
    weights = np.ascontiguousarray(w.T)  # [taps, m]
    acc = np.empty((ho, wo, m), x.dtype)
    tmp = np.empty((ho, wo, m), x.dtype)
    for t, di, dj in _taps(win):
        src = buf[di:di + (ho - 1) * sh + 1:sh, dj:dj + (wo - 1) * sw + 1:sw]
        if t == 0:
            np.multiply(src, weights[t], out=acc)
        else:
            np.multiply(src, weights[t], out=tmp)
            acc += tmp
    out[...] = acc.transpose(2, 0, 1)
