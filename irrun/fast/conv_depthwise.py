"""Depthwise and grouped 2-D convolution, fast (:func:`depthwise`, :func:`grouped`).

Depthwise: the same sums as the reference (:func:`irrun.ops.convolution.convolve`),
bit for bit where the filter is finite: each output element is +0 plus its first
tap's product, then each further tap's product added in the filter's row-major tap
order, in f32 for f16 and f32 data.  What changes is how the work is laid out, for
memory traffic: the planes of ``batch x channels`` are cut into blocks that fit in a
core's cache, each block is copied once with its zero padding, and every tap is one
multiply and one add over the whole block.  The padding is multiplied here, where the
reference skips it: ``0 * w`` is a zero that leaves every sum as it was but for the
sign of a zero sum, which the closing ``+ 0`` (a sum started from +0, as the
reference's) gives back; an infinite or NaN weight would make ``0 * w`` NaN, so the
dispatcher (:mod:`.convolution`) sends such filters to the reference.

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
are the same for every thread count and as the reference's.  Where the fast engine is
on (numba installed, optional: :mod:`.jit`), :mod:`.conv_jit` runs the depthwise tap loop
compiled, on the same padded blocks, with the same bits.

Grouped filters (several input channels per group, and ordinary filters with many
more input channels than output ones) use the flat layout too: each tap is one
product of every group's ``[Co, Ci]`` filter with a contiguous slice of the flat
input, summed over taps in order: the reference's order, but BLAS's sum over ``Ci``
may differ with the product's width and the layout, so values agree within rounding
(the bound of :mod:`irrun.ops.convolution`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import threads
from ..ops.window import Windows
from . import conv_jit

# Output planes up to this many positions are computed channels last.
_NHWC_POSITIONS = 1024
# Bytes of one block's accumulator: flat, a core's share of L2 with room for the input;
# channels last, longer vectors of channels matter more than staying in L2 (measured on
# mobilenet and convnext shapes).
_BLOCK_BYTES = 256 * 1024
_BLOCK_BYTES_LAST = 2 * 2**20
# Multiply-adds a block handed to a thread must hold at least: the hand-off costs
# 20-60 us (irrun.threads.map_blocks), and each of a block's NumPy calls (two per tap)
# hands the GIL over, waking a waiting thread.  On a 2-vCPU VM blocks of a million
# made two threads slower than one (convnext's 96-channel 7x7 at 56x56: 3.1 -> 4.6 ms)
# and of four million still did (3.8 ms): so only the largest layers split.
_THREAD_WORK = 16_000_000


def applies(shape: tuple[int, ...], win: Windows) -> bool:
    """Whether :func:`depthwise` and :func:`grouped` take data of ``shape``: 2-D planes
    whose padded copy (with its stride phases) is not much larger than the input, the
    output and the filter, so that pads and strides far beyond the input cost no memory
    here."""
    if len(shape) != 4 or 0 in shape or 0 in win.out:
        return False
    reach = [_reach(win, i) for i in range(2)]
    (sh, sw), (hq, wq) = win.strides, _phase_shape(win)
    copy = max(reach[0] * reach[1], sh * sw * hq * wq)
    return copy <= 4 * math.prod(win.sizes) + math.prod(win.out) * math.prod(win.kernel) + 4096


def _phase_shape(win: Windows) -> tuple[int, int]:
    """Rows and columns of each stride phase in :func:`_phases`: as far as the windows
    reach, and a row past the end, which the last taps' slices run into."""
    return -(-_reach(win, 0) // win.strides[0]) + 1, -(-_reach(win, 1) // win.strides[1])


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
    jit = conv_jit.takes(x)  # the same sums compiled, where the fast engine is on

    def block(start: int, stop: int) -> None:
        room = _BLOCK_BYTES_LAST if small else _BLOCK_BYTES
        per = max(64 if small else 1, room // (math.prod(win.out) * x.itemsize))
        for a in range(start, stop, per):
            b = min(stop, a + per)
            first = a % channels
            # The planes' filters: a slice when the block stays within one image.
            filters = w[first:first + b - a] if first + b - a <= channels \
                else w[np.arange(a, b) % channels]  # fmt: skip
            kernel(planes[a:b], filters, win, flat_out[a:b], jit)

    # Channels last wants 64 channels or more in a block: its inner loop runs over them.
    least = max(64 if small else 1, -(-_THREAD_WORK // (w.shape[1] * math.prod(win.out))))
    threads.map_blocks(block, batch * channels, min_block=least)
    return out


def _padded_last(x: np.ndarray, win: Windows) -> np.ndarray:
    """``x`` [m, H, W] channels last in zeros as far as the windows reach, [rows, cols, m]."""
    m, h, w = x.shape
    pt, pl = win.pads_begin
    rows, cols = _reach(win, 0), _reach(win, 1)
    buf = np.zeros((rows, cols, m), x.dtype)
    h1 = max(0, min(h, rows - pt))  # input rows and columns some window reads
    w1 = max(0, min(w, cols - pl))
    if h1 and w1:
        buf[pt:pt + h1, pl:pl + w1] = x[:, :h1, :w1].transpose(1, 2, 0)
    return buf


def _taps(win: Windows):
    (kh, kw), (dh, dw) = win.kernel, win.dilations
    for i in range(kh):
        for j in range(kw):
            yield i * kw + j, i * dh, j * dw


def _tiled(weights: np.ndarray, times: int) -> np.ndarray:
    """``weights`` [taps, m] repeated ``times`` times along each row: [taps, times * m]
    (as np.tile, which goes through a slower np.repeat)."""
    taps, m = weights.shape
    return np.ascontiguousarray(np.broadcast_to(weights[:, None, :], (taps, times, m))
                                ).reshape(taps, times * m)  # fmt: skip


def _phases(x: np.ndarray, win: Windows) -> tuple[np.ndarray, int]:
    """``x`` [m, H, W] padded and flat: [m, sh, sw, rows * wq] where phase (r, q) holds
    the padded rows r::sh and columns q::sw, each plane a contiguous row; and wq.

    Each phase is copied straight from ``x`` into zeros: one pass over the input."""
    m, h, w = x.shape
    sh, sw = win.strides
    pt, pl = win.pads_begin
    hq, wq = _phase_shape(win)
    buf = np.zeros((m, sh, sw, hq, wq), x.dtype)
    # Input rows and columns that some window reads: [0, reach - pad) within the input.
    h1 = max(0, min(h, _reach(win, 0) - pt))
    w1 = max(0, min(w, _reach(win, 1) - pl))
    for r in range(sh):
        i0 = (r - pt) % sh  # the first input row in phase r
        rows = range(i0, h1, sh)
        for q in range(sw):
            j0 = (q - pl) % sw
            cols = range(j0, w1, sw)
            if len(rows) and len(cols):
                a0, b0 = (i0 + pt) // sh, (j0 + pl) // sw
                buf[:, r, q, a0:a0 + len(rows), b0:b0 + len(cols)] = x[:, i0:h1:sh, j0:w1:sw]
    return buf.reshape(m, sh, sw, hq * wq), wq


def _tap_slice(win: Windows, wq: int, di: int, dj: int) -> tuple[int, int, slice]:
    """Where a tap reads in :func:`_phases`' layout: its phase and flat positions."""
    sh, sw = win.strides
    offset = (di // sh) * wq + dj // sw
    return di % sh, dj % sw, slice(offset, offset + win.out[0] * wq)


def _flat(x: np.ndarray, w: np.ndarray, win: Windows, out: np.ndarray, jit: bool) -> None:
    m = x.shape[0]
    ho, wo = win.out
    phases, wq = _phases(x, win)
    if jit:
        where = [_tap_slice(win, wq, di, dj) for _, di, dj in _taps(win)]
        r, q, start = np.array([(r, q, span.start) for r, q, span in where], np.int64).T.copy()
        conv_jit.kernels()[0](phases, w, r, q, start, wq, np.zeros(1, x.dtype), out)
        return
    acc = np.empty((m, ho * wq), x.dtype)
    tmp = np.empty((m, ho * wq), x.dtype)
    for t, di, dj in _taps(win):
        r, q, span = _tap_slice(win, wq, di, dj)
        src = phases[:, r, q, span]
        col = w[:, t:t + 1]
        if t == 0:
            np.multiply(src, col, out=acc)
        else:
            np.multiply(src, col, out=tmp)
            acc += tmp
    np.add(acc.reshape(m, ho, wq)[:, :, :wo], 0, out=out)  # +0: see the module's docstring


def grouped(x: np.ndarray, w: np.ndarray, win: Windows) -> np.ndarray:
    """``x`` [N, G*Ci, H, W] convolved with ``w`` [G, Co, Ci, kh, kw] group by group,
    in x's dtype (the caller passes f32 for f16).

    Each tap is one product of the groups' ``[Co, Ci]`` filters with a contiguous slice
    of the flat padded input (see :func:`_phases`): no column matrix of ``taps`` copies
    of the input.  Sums are per tap over the input channels, then over taps in order.
    The output rows go in chunks whose sums stay in cache, chosen from the shapes
    alone; blocks of ``batch x groups`` (or, for fewer of them than threads, of chunks)
    run on the run's threads, so that every product is the same whatever the blocks.
    """
    batch = x.shape[0]
    groups, co, ci = w.shape[:3]
    ho, wo = win.out
    out = np.empty((batch * groups, co, ho, wo), x.dtype)
    planes = x.reshape(batch * groups * ci, *x.shape[2:])
    taps = w.reshape(groups, co, ci, -1)
    wq = _phase_shape(win)[1]
    rows = max(1, _BLOCK_BYTES // (batch * groups * co * wq * x.itemsize))
    chunks = [(y0, min(ho, y0 + rows)) for y0 in range(0, ho, rows)]

    def run(start: int, stop: int, first: int, last: int, phases=None) -> None:
        m = stop - start
        if phases is None:
            phases = _phases(planes[start * ci:stop * ci], win)[0]
        phases = phases.reshape(m, ci, *phases.shape[1:])
        index = np.arange(start, stop) % groups
        filters = np.ascontiguousarray(taps[index].transpose(3, 0, 1, 2))  # [taps, m, Co, Ci]
        a = b = np.empty(0, x.dtype)
        for y0, y1 in chunks[first:last]:
            if a.shape[-1] != (y1 - y0) * wq:  # contiguous: matmul is slower into a view
                a = np.empty((m, co, (y1 - y0) * wq), x.dtype)
                b = np.empty_like(a)
            for t, di, dj in _taps(win):
                r, q, span = _tap_slice(win, wq, di, dj)
                src = phases[:, :, r, q, span.start + y0 * wq:span.start + y1 * wq]
                if t == 0:
                    np.matmul(filters[t], src, out=a)
                else:
                    np.matmul(filters[t], src, out=b)
                    a += b
            np.add(a.reshape(m, co, y1 - y0, wq)[..., :wo], 0, out=out[start:stop, :, y0:y1])

    planes_n = batch * groups
    work = co * ci * taps.shape[-1] * ho * wq  # multiply-adds of a group
    if planes_n >= threads.current() or len(chunks) == 1:
        threads.map_blocks(lambda a, b: run(a, b, 0, len(chunks)), planes_n,
                           min_block=-(-_THREAD_WORK // work))  # fmt: skip
    else:  # every block reads all planes: padded once, here
        phases = _phases(planes, win)[0]
        threads.map_blocks(lambda a, b: run(0, planes_n, a, b, phases), len(chunks),
                           min_block=-(-_THREAD_WORK * ho // (work * planes_n * rows)))  # fmt: skip
    return out.reshape(batch, groups * co, ho, wo)


def _channels_last(x: np.ndarray, w: np.ndarray, win: Windows, out: np.ndarray,
                   jit: bool) -> None:  # fmt: skip
    m = x.shape[0]
    (sh, sw), (ho, wo) = win.strides, win.out
    buf = _padded_last(x, win)
    weights = np.ascontiguousarray(w.T)  # [taps, m]
    if jit:
        _, di, dj = np.array(list(_taps(win)), np.int64).T.copy()
        acc = np.empty((ho, wo, m), x.dtype)
        conv_jit.kernels()[1](buf, weights, di, dj, sh, sw, np.zeros(1, x.dtype), acc)
        out[...] = acc.transpose(2, 0, 1)  # the JIT started its sums from +0
        return
    acc = np.empty((ho, wo * m), x.dtype)
    tmp = np.empty((ho, wo * m), x.dtype)
    if (sh, sw) == (1, 1):
        # A tap's (column, channel) pairs are then contiguous in the padded block: each tap
        # is one product over [Ho, Wo * m] with its weights repeated Wo times, so that
        # NumPy's inner loop runs over Wo * m values rather than m (1.2-1.7x faster).
        # Strided, splitting the block into phases first costs more than that gains.
        taps = [(buf[di:di + ho, dj:dj + wo].reshape(ho, wo * m), row)
                for (_, di, dj), row in zip(_taps(win), _tiled(weights, wo), strict=True)]
    else:
        taps = [(buf[di:di + (ho - 1) * sh + 1:sh, dj:dj + (wo - 1) * sw + 1:sw], row)
                for (_, di, dj), row in zip(_taps(win), weights, strict=True)]
        acc, tmp = acc.reshape(ho, wo, m), tmp.reshape(ho, wo, m)
    for t, (src, row) in enumerate(taps):
        if t == 0:
            np.multiply(src, row, out=acc)
        else:
            np.multiply(src, row, out=tmp)
            acc += tmp
    np.add(acc.reshape(ho, wo, m).transpose(2, 0, 1), 0, out=out)
