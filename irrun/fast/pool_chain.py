"""A chain of same-size 2-D pools run in a padded layout, chunk by chunk.

Consecutive MaxPool and AvgPool layers with stride 1, no dilation and as many
outputs as inputs (a k x k kernel with k - 1 pads per axis) are run together,
as OpenVINO's plugin keeps its blocked layout across such a chain.  The planes
live in buffers with the padding around each of them, so every tap of every
window is the flat buffer shifted by a fixed amount: one NumPy call per tap
over all the planes of a chunk, with no border cases.  Before each layer the
padding holds what that layer's windows see there: -inf or NaN for a max pool
(neither wins with ``fmax``), +0.0 for an average (adding it changes no sum but
a -0.0 one, see below).  The positions between rows, which the flat calls fill
with garbage, are padding and are filled again before the next layer reads
them, but for one shortcut: an average divides its padding by NaN, which leaves
NaN there for a max pool after it.  Chunks of planes go through the whole chain
while their buffers stay in the CPU's cache.

Results are those of the layers' kernels (:mod:`irrun.ops.max_pool`,
:mod:`irrun.ops.avg_pool`) bit for bit:

* averages add their taps in kernel order and divide once by the count, as the
  plugin does; its sum starts at +0.0 and this one at the first tap, which
  differs only when every tap is -0.0: such sums are turned into +0.0;
* maxima are ``fmax`` over rows then columns (NaN wins only where all is NaN or
  -inf); what is below the plugin's start value is raised to it, and zero maxima
  get the sign of their window's first zero, as in :func:`.max_pool._zero_signs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..ops.max_pool import lowest
from .max_pool import fmax_fold, has_negative_zero

# Told, after each layer of each chunk: the layer's index, a view of its result for the
# chunk's planes (p, h, w; valid until the chain goes on), the index of the chunk's first
# plane, and the seconds the layer took on the chunk.  Called once more for the last
# layer with no view, for the time taken to copy the chunk's result out.
Observer = Callable[[int, "np.ndarray | None", int, float], None]

# Larger kernels run layer by layer: the padding bands (and the plan's window counts)
# grow with the kernel, not with the input, and a chain is for 3x3-like windows.
MAX_KERNEL = 64
# Bytes of a chunk's buffer: as the pools' (fast.max_pool.CHUNK_BYTES); below, NumPy's cost
# per call outweighs what smaller, cached chunks save.
CHUNK_BYTES = 1 << 20
# Elements of the divisor an average broadcasts (a whole number of planes, at least).
DIVISOR_ELEMENTS = 1 << 14
# Where in a 4 KiB page each buffer's first output position lies.  Aligned to 32
# bytes, the AVX stores of most calls never straddle a cache line; half a page
# apart, a call's loads from one buffer are never taken for its stores to the
# other, which the CPU first tells apart by their address within a page.  The two
# took 5-6% off the benchmark's C1 (interleaved A/B runs in one process).
PAGE = 4096
PHASES = (0, PAGE // 2)


@dataclass(frozen=True)
class Layer:
    """One pool of a chain: ``max`` or not (an average, which ``exclude_pad`` or not)."""

    max: bool
    exclude_pad: bool = True


@dataclass(frozen=True)
class Geometry:
    """The window shared by a chain: kernel and pads per axis (pads_begin + pads_end = k - 1)."""

    kernel: tuple[int, int]
    pads_begin: tuple[int, int]
    pads_end: tuple[int, int]


class ChainPlan:
    """A chain of pools over one input shape (N, C, H, W), float32, worked out once.

    Layout of a chunk of ``p`` planes in a flat buffer: each plane is ``bh`` rows of
    padding then its ``h`` rows, each row ``bw`` padding positions then its ``w``
    values, and after the last plane ``bh`` more rows and ``bw`` positions of
    padding.  ``bh`` and ``bw`` are the larger of the two pads on their axis: a
    band of padding is the end padding of what comes before it and the begin
    padding of what follows, so a tap never reaches beyond the band next to it.

    The plan keeps one of its two buffers between runs (as OpenVINO keeps its
    memory between inferences): fresh memory from the system costs a page fault
    per 4 KiB, which is a tenth of a run's time once other code has made the
    allocator give memory back.
    """

    def __init__(self, shape: tuple[int, ...], g: Geometry, layers: tuple[Layer, ...]) -> None:
        n, c, h, w = shape
        (kh, kw), (pbh, pbw), (peh, pew) = g.kernel, g.pads_begin, g.pads_end
        self.shape, self.layers = shape, layers
        self.h, self.w = h, w
        self.bh, self.bw = bh, bw = max(pbh, peh), max(pbw, pew)
        self.wp = wp = w + bw
        self.plane = (h + bh) * wp  # the distance between planes
        self.planes = n * c
        self.per_chunk = max(1, min(self.planes, CHUNK_BYTES // (self.plane * 4)))
        self.low = lowest(np.dtype(np.float32))
        # Row-major taps as flat offsets from the window's output position.
        self.taps = [(i - pbh) * wp + (j - pbw) for i in range(kh) for j in range(kw)]
        self.row_taps = [j - pbw for j in range(kw)]
        self.col_taps = [(i - pbh) * wp for i in range(kh)]
        self.any_pad = any((pbh, pbw, peh, pew))
        # A max pool's row maxima start a padding row (or more) before the first output
        # position; stored this many positions further on, they start aligned too.
        self.rows_shift = -self.col_taps[0] % (32 // 4)
        # Exclude-pad window counts of a few planes in the layout (NaN in the padding,
        # see the module's docstring), by which an average divides its sums, broadcast
        # over groups of planes: a divisor as large as the tensor would be a third
        # buffer to keep, and NumPy broadcasts slowly over short rows.
        rows = np.array([_count(r, kh, pbh, h) for r in range(h)], np.float32)
        cols = np.array([_count(q, kw, pbw, w) for q in range(w)], np.float32)
        counts = np.full((h + bh, wp), np.nan, np.float32)
        counts[bh:, bw:] = rows[:, None] * cols[None, :]
        # Averages that count the pads divide by the kernel's size; kept only when the
        # chain has such a layer (with pads, or the counts are that size already).
        self.counting_pads = self.any_pad and any(
            not layer.max and not layer.exclude_pad for layer in layers)
        kernel_counts = np.full((h + bh, wp), np.nan, np.float32)
        kernel_counts[bh:, bw:] = kh * kw
        least = -(-DIVISOR_ELEMENTS // self.plane)
        # A group that divides the chunk makes the division a single call.
        group = next((g for g in range(least, 4 * least + 1) if self.per_chunk % g == 0), least)
        self.group = min(self.per_chunk, group)
        # Divisions start at the first output position, where the buffers are aligned.
        first = self.span(1)[0]

        def divisor(c: np.ndarray) -> np.ndarray:
            return np.roll(np.tile(c.reshape(-1), self.group), -first)

        self.counts = divisor(counts)
        self.kernel_counts = divisor(kernel_counts) if self.counting_pads else None
        self._spare: list[np.ndarray] = []  # the buffer kept between runs

    def size(self, p: int) -> int:
        """Length of the buffer for ``p`` planes (with the padding after the last, and
        room for the row maxima to be stored ``rows_shift`` further on)."""
        return p * self.plane + self.bh * self.wp + self.bw + self.rows_shift

    def span(self, p: int) -> tuple[int, int]:
        """The flat range from the first to past the last output position of ``p`` planes."""
        return self.bh * self.wp + self.bw, p * self.plane

    def run(self, x: np.ndarray, observer: Observer | None = None) -> np.ndarray:
        """The chain's output for ``x`` (the planned shape, float32).

        The buffer that does not hold the result is freed before the output is
        made, so that a run holds at most about twice the tensor's size.
        ``observer`` is told of each layer's result for each chunk (see :data:`Observer`).
        """
        xp = x.reshape(self.planes, self.h, self.w)
        # NumPy reports each call that rounded a result below the normal range; only
        # an average's division can, and only then may it have made a -0.0.
        underflows: list[int] = []
        with np.errstate(invalid="ignore", over="ignore", divide="ignore", under="call",
                         call=lambda kind, flag: underflows.append(flag)):
            return self._run(xp, underflows, observer)

    def _run(self, xp: np.ndarray, underflows: list[int], observer: Observer | None
             ) -> np.ndarray:
        try:
            bufs = [self._spare.pop()]  # another thread may be using it: then make one
        except IndexError:
            bufs = [self._buffer(PHASES[0])]
        bufs.append(self._buffer(PHASES[1] if self._phase(bufs[0]) == PHASES[0] else PHASES[0]))
        last = len(self.layers) - 1
        if self.per_chunk >= self.planes:
            result = bufs.pop(self._run_chunk(xp, bufs, underflows, observer))
            bufs.clear()
            started = time.perf_counter() if observer else 0.0
            out = np.empty((self.planes, self.h, self.w), np.float32)
            np.copyto(out, self._interior(result, self.planes))
            if observer:  # the copy out is the last layer's
                observer(last, None, 0, time.perf_counter() - started)
        else:
            out = np.empty((self.planes, self.h, self.w), np.float32)
            for start in range(0, self.planes, self.per_chunk):
                stop = min(self.planes, start + self.per_chunk)
                which = self._run_chunk(xp[start:stop], bufs, underflows, observer, start)
                started = time.perf_counter() if observer else 0.0
                np.copyto(out[start:stop], self._interior(bufs[which], stop - start))
                if observer:
                    observer(last, None, start, time.perf_counter() - started)
            result = bufs[0]
        if not self._spare:
            self._spare.append(result)
        return out.reshape(self.shape)

    def _buffer(self, phase: int) -> np.ndarray:
        """An empty buffer for a chunk whose first output position is at ``phase``
        bytes into a page."""
        size, first = self.size(self.per_chunk), self.span(self.per_chunk)[0] * 4
        raw = np.empty(size + PAGE // 4, np.float32)
        start = (phase - first - raw.ctypes.data) % PAGE // 4
        return raw[start : start + size]

    def _phase(self, buf: np.ndarray) -> int:
        return (buf.ctypes.data + self.span(self.per_chunk)[0] * 4) % PAGE

    def _interior(self, buf: np.ndarray, p: int) -> np.ndarray:
        b3 = buf[: p * self.plane].reshape(p, self.h + self.bh, self.wp)
        return b3[:, self.bh :, self.bw :]

    def _run_chunk(self, xc: np.ndarray, bufs: list[np.ndarray], underflows: list[int],
                   observer: Observer | None = None, start: int = 0) -> int:
        """Run the chain over the planes ``xc`` (the planes from ``start`` on); return which
        buffer holds the result."""
        started = time.perf_counter() if observer else 0.0
        p = xc.shape[0]
        src, dst = 0, 1
        views = [_Views(self, b, p) for b in bufs]
        np.copyto(self._interior(bufs[src], p), xc)
        # What is known of the values, so that checks that cannot find anything are
        # skipped: whether some is -0.0, and whether all are finite and small enough
        # that no sum overflows (then no NaN or -inf ever comes up).
        negative_zero = has_negative_zero(xc)
        bound = np.float32(np.finfo(np.float32).max / (4 * len(self.taps)))
        small = bool(-bound < xc.min() and xc.max() < bound)  # False for NaN
        divided_by_nan = False  # whether the padding after the first output is NaN
        for i, layer in enumerate(self.layers):
            if layer.max and divided_by_nan:
                views[src].head.fill(-np.inf)
            else:
                for pad in views[src].padding:
                    pad.fill(-np.inf if layer.max else 0.0)
            divided_by_nan = not layer.max
            if layer.max:
                # A maximum is one of its window's values: -0.0 only where some was.
                if self._max(views[src], views[dst], negative_zero, small):
                    src, dst = dst, src  # else the result is in src
            else:
                underflows.clear()
                self._average(views[src], views[dst], layer, negative_zero)
                # Averages of values that are not -0.0 can still underflow to it.
                negative_zero = bool(underflows) and has_negative_zero(views[dst].out)
                src, dst = dst, src
            if observer:  # what it does is no layer's time
                observer(i, self._interior(bufs[src], p), start, time.perf_counter() - started)
                started = time.perf_counter()
        return src

    def _average(self, src: _Views, dst: _Views, layer: Layer, negative_zero: bool) -> None:
        acc, taps = dst.out, src.taps
        if len(taps) == 1:
            np.add(taps[0], 0.0, out=acc)
        else:
            np.add(taps[0], taps[1], out=acc)
            for tap in taps[2:]:
                np.add(acc, tap, out=acc)
            # A sum of -0.0 taps only (each window holds its centre, so the input has
            # -0.0) is -0.0 here and +0.0 in the plugin, whose sum starts at +0.0.
            if negative_zero and has_negative_zero(acc):
                acc += 0.0
        counts = self.kernel_counts if self.counting_pads and not layer.exclude_pad else self.counts
        for part in dst.divided:
            np.divide(part, counts[: part.shape[-1]], out=part)

    def _max(self, src: _Views, dst: _Views, negative_zero: bool, small: bool) -> bool:
        """Max-pool ``src``: into ``src`` itself (return False) or into ``dst`` (True)."""
        # Rows first, over every row (the padding rows give -inf), then columns.  The
        # input is needed again only to give zero maxima their sign: otherwise the row
        # maxima go to dst and the result back into src.
        if negative_zero:
            rows, result = _Views(self, np.empty_like(src.buf), src.p), dst
        else:
            rows, result = dst, src
        fmax_fold(rows.rows, src.row_taps)
        acc = result.out
        fmax_fold(acc, rows.col_taps)
        if not small and not acc.min() >= self.low:  # NaN, or -inf: below the start value
            np.fmax(acc, self.low, out=acc)
        if negative_zero:  # fmax may have picked either zero of a tie
            zero = acc == 0
            if zero.any():
                self._zero_signs(src.buf, acc, self.span(src.p)[0], zero)
        return negative_zero

    def _zero_signs(self, src: np.ndarray, acc: np.ndarray, lo: int, zero: np.ndarray) -> None:
        """Each zero maximum gets the sign of its window's first zero (padding is -inf)."""
        where = np.flatnonzero(zero) + lo
        found = np.zeros(where.size, bool)
        negative = np.zeros(where.size, bool)
        for t in self.taps:
            v = src[where + t]
            first = ~found & (v == 0)
            negative |= first & np.signbit(v)
            found |= first
        acc[where - lo] = np.where(negative, np.float32(-0.0), np.float32(0.0))


class _Views:
    """The views of one buffer that a chunk of ``p`` planes goes through, made once
    per run: a view costs about as much to make as a small NumPy call does."""

    def __init__(self, plan: ChainPlan, buf: np.ndarray, p: int) -> None:
        lo, hi = plan.span(p)
        self.buf, self.p = buf, p
        self.out = buf[lo:hi]  # the output positions, and the garbage between rows
        self.taps = [buf[lo + t : hi + t] for t in plan.taps]
        # Max pools: row maxima over every row (the padding rows give -inf or NaN), then
        # columns over those.
        rlo, rhi = lo + plan.col_taps[0], hi + plan.col_taps[-1]
        shift = plan.rows_shift
        self.rows = buf[rlo + shift : rhi + shift]
        self.row_taps = [buf[rlo + t : rhi + t] for t in plan.row_taps]
        self.col_taps = [buf[lo + t + shift : hi + t + shift] for t in plan.col_taps]
        wp, plane = plan.wp, plan.plane
        end = p * plane
        # The rows before each plane and after the last, with the band that starts the
        # next row (the buffer ends there), then that band of every row: two calls.
        head = plan.bh * wp + plan.bw
        self.padding = [as_strided(buf, (p + 1, head), (plane * buf.itemsize, buf.itemsize))]
        if plan.bw:
            self.padding.append(buf[: end + plan.bh * wp].reshape(-1, wp)[:, : plan.bw])
        # The padding before the first output position, which an average does not divide.
        self.head = buf[:lo]
        # What an average divides by its counts: a plane's length from each first output
        # position (the padding after the last included, divided by NaN), a group of
        # planes per row.
        size = plan.group * plane
        whole = p // plan.group * size
        self.divided = []
        if whole:
            self.divided.append(buf[lo : lo + whole].reshape(-1, size))
        if whole < end:
            self.divided.append(buf[lo + whole : lo + end])


def _count(o: int, k: int, pad: int, size: int) -> int:
    """How many taps of the window at output ``o`` lie inside an axis of ``size``."""
    return sum(0 <= o - pad + j < size for j in range(k))




def chain_layer(op_type: str, a) -> tuple[Geometry, Layer] | None:
    """The geometry and kind of a pool layer that can join a chain, or None.

    2-D MaxPool (its indices unused) or AvgPool, explicit pads, stride 1, no
    dilation, a kernel of at most ``MAX_KERNEL``, and pads_begin + pads_end =
    kernel - 1 on each axis (as many outputs as inputs).
    """
    if op_type not in ("MaxPool", "AvgPool") or len(a.kernel) != 2:
        return None
    zeros = (0, 0)
    pb, pe = tuple(a.pads_begin) or zeros, tuple(a.pads_end) or zeros
    dilations = tuple(getattr(a, "dilations", ())) or (1, 1)
    if (a.auto_pad not in ("explicit", "notset") or tuple(a.strides) != (1, 1)
            or dilations != (1, 1) or len(pb) != 2 or len(pe) != 2):
        return None
    if any(k < 1 or k > MAX_KERNEL or b < 0 or e < 0 or b + e != k - 1
           for k, b, e in zip(a.kernel, pb, pe, strict=True)):
        return None
    g = Geometry(tuple(a.kernel), pb, pe)
    return g, Layer(op_type == "MaxPool", getattr(a, "exclude_pad", True))
