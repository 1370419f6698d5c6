"""A chain of same-size 2-D pools run in a padded layout, chunk by chunk.

Consecutive MaxPool and AvgPool layers with stride 1, no dilation and as many
outputs as inputs (a k x k kernel with k - 1 pads per axis) are run together,
as OpenVINO's plugin keeps its blocked layout across such a chain.  The planes
live in buffers with the padding around each of them, so every tap of every
window is the flat buffer shifted by a fixed amount: one NumPy call per tap
over all the planes of a chunk, with no border cases.  Before each layer the
padding holds what that layer's windows see there: -inf for a max pool (it never
wins), +0.0 for an average (adding it changes no sum but a -0.0 one, see below).
The positions between rows, which the flat calls fill with garbage, are padding
and are filled again before the next layer reads them.  Chunks of planes go
through the whole chain while their buffers stay in the CPU's cache.

Results are those of :mod:`.max_pool` and :mod:`.avg_pool` bit for bit:

* averages add their taps in kernel order and divide once by the count, as the
  plugin does; its sum starts at +0.0 and this one at the first tap, which
  differs only when every tap is -0.0: such sums are turned into +0.0;
* maxima are ``fmax`` over rows then columns (NaN wins only where all is NaN or
  -inf); what is below the plugin's start value is raised to it, and zero maxima
  get the sign of their window's first zero, as in :func:`.max_pool._zero_signs`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .max_pool import fmax_fold, has_negative_zero, lowest

# Bytes of a chunk's buffer: NumPy's cost per call outweighs what smaller, cached chunks save.
CHUNK_BYTES = 1 << 22


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
    """A chain of pools over one input shape (N, C, H, W), float32, worked out once."""

    def __init__(self, shape: tuple[int, ...], g: Geometry, layers: tuple[Layer, ...]) -> None:
        n, c, h, w = shape
        (kh, kw), (pbh, pbw), (peh, pew) = g.kernel, g.pads_begin, g.pads_end
        self.shape, self.layers = shape, layers
        self.h, self.w, self.pbh, self.pbw = h, w, pbh, pbw
        self.hp, self.wp = hp, wp = h + pbh + peh, w + pbw + pew
        self.plane = hp * wp
        self.planes = n * c
        self.per_chunk = max(1, min(self.planes, CHUNK_BYTES // (self.plane * 4)))
        self.low = lowest(np.dtype(np.float32))
        # Row-major taps as flat offsets from the window's output position.
        self.taps = [(i - pbh) * wp + (j - pbw) for i in range(kh) for j in range(kw)]
        self.row_taps = [j - pbw for j in range(kw)]
        self.col_taps = [(i - pbh) * wp for i in range(kh)]
        self.any_pad = any((pbh, pbw, peh, pew))
        # Per-position window counts (exclude-pad), in the padded layout (1 in the padding).
        rows = np.array([_count(r, kh, pbh, h) for r in range(h)], np.float32)
        cols = np.array([_count(q, kw, pbw, w) for q in range(w)], np.float32)
        counts = np.ones((hp, wp), np.float32)
        counts[pbh : pbh + h, pbw : pbw + w] = rows[:, None] * cols[None, :]
        self._counts = counts
        self._divisors: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def divisors(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """Flat divisors over the output range of ``p`` planes: exclude-pad counts, and
        the whole kernel (an average that counts the padding)."""
        if p not in self._divisors:
            lo, hi = self.span(p)
            flat = np.broadcast_to(self._counts, (p, self.hp, self.wp)).reshape(-1)[lo:hi]
            full = np.full(hi - lo, float(len(self.taps)), np.float32)
            self._divisors[p] = (np.ascontiguousarray(flat), full)
        return self._divisors[p]

    def span(self, p: int) -> tuple[int, int]:
        """The flat range from the first to past the last output position of ``p`` planes."""
        lo = self.pbh * self.wp + self.pbw
        hi = (p - 1) * self.plane + (self.pbh + self.h - 1) * self.wp + self.pbw + self.w
        return lo, hi

    def run(self, x: np.ndarray) -> np.ndarray:
        """The chain's output for ``x`` (the planned shape, float32).

        Two padded buffers per chunk; for a single chunk the output is allocated
        once one of them is freed, so that a run holds at most about twice the
        tensor's size.
        """
        xp = x.reshape(self.planes, self.h, self.w)
        size = self.per_chunk * self.plane
        if self.per_chunk >= self.planes:
            bufs = [np.empty(size, np.float32), np.empty(size, np.float32)]
            which = self._run_chunk(xp, bufs)
            result = bufs.pop(which)
            bufs.clear()
            out = np.empty((self.planes, self.h, self.w), np.float32)
            np.copyto(out, self._interior(result, self.planes))
            return out.reshape(self.shape)
        out = np.empty((self.planes, self.h, self.w), np.float32)
        bufs = [np.empty(size, np.float32), np.empty(size, np.float32)]
        for start in range(0, self.planes, self.per_chunk):
            stop = min(self.planes, start + self.per_chunk)
            which = self._run_chunk(xp[start:stop], bufs)
            np.copyto(out[start:stop], self._interior(bufs[which], stop - start))
        return out.reshape(self.shape)

    def _interior(self, buf: np.ndarray, p: int) -> np.ndarray:
        b3 = buf[: p * self.plane].reshape(p, self.hp, self.wp)
        return b3[:, self.pbh : self.pbh + self.h, self.pbw : self.pbw + self.w]

    def _fill_padding(self, buf: np.ndarray, p: int, value: float) -> None:
        """Put ``value`` in every padding position of the first ``p`` planes of ``buf``."""
        b3 = buf[: p * self.plane].reshape(p, self.hp, self.wp)
        top, bottom = self.pbh, self.pbh + self.h
        b3[:, :top] = value
        b3[:, bottom:] = value
        b3[:, top:bottom, : self.pbw] = value
        b3[:, top:bottom, self.pbw + self.w :] = value

    def _run_chunk(self, xc: np.ndarray, bufs: list[np.ndarray]) -> int:
        """Run the chain over the planes ``xc``; return which buffer holds the result."""
        p = xc.shape[0]
        n = p * self.plane
        src, dst = 0, 1
        views = [b[:n] for b in bufs]
        lo, hi = self.span(p)
        np.copyto(self._interior(views[src], p), xc)
        # What is known of the values, so that checks that cannot find anything are
        # skipped: whether some is -0.0, and whether all are finite and small enough
        # that no sum overflows (then no NaN or -inf ever comes up).
        negative_zero = has_negative_zero(xc)
        bound = np.float32(np.finfo(np.float32).max / (4 * len(self.taps)))
        small = bool(-bound < xc.min() and xc.max() < bound)  # False for NaN
        for layer in self.layers:
            self._fill_padding(views[src], p, -np.inf if layer.max else 0.0)
            if layer.max:
                # A maximum is one of its window's values: -0.0 only where some was.
                if not self._max(views[src], views[dst], lo, hi, negative_zero, small):
                    continue  # the result is in src
            else:
                self._average(views[src], views[dst], lo, hi, layer, p, negative_zero)
                # Averages of values that are not -0.0 can still underflow to it.
                negative_zero = has_negative_zero(views[dst][lo:hi])
            src, dst = dst, src
        return src

    def _average(self, src, dst, lo, hi, layer: Layer, p: int, negative_zero: bool) -> None:
        acc = dst[lo:hi]
        taps = self.taps
        if len(taps) == 1:
            np.add(src[lo + taps[0] : hi + taps[0]], 0.0, out=acc)
        else:
            np.add(src[lo + taps[0] : hi + taps[0]], src[lo + taps[1] : hi + taps[1]], out=acc)
            for t in taps[2:]:
                np.add(acc, src[lo + t : hi + t], out=acc)
            # A sum of -0.0 taps only (each window holds its centre, so the input has
            # -0.0) is -0.0 here and +0.0 in the plugin, whose sum starts at +0.0.
            if negative_zero and has_negative_zero(acc):
                acc += 0.0
        counts, full = self.divisors(p)
        np.divide(acc, counts if layer.exclude_pad or not self.any_pad else full, out=acc)

    def _max(self, src, dst, lo, hi, negative_zero: bool, small: bool) -> bool:
        """Max-pool ``src``: into ``src`` itself (return False) or into ``dst`` (True)."""
        # Rows first, over every row (the padding rows give -inf), then columns.
        top, bottom = self.col_taps[0], self.col_taps[-1]
        rlo, rhi = lo + top, hi + bottom
        # The input is needed again only to give zero maxima their sign: otherwise the
        # row maxima go to dst and the result back into src.
        rows_buf, result = (np.empty_like(src), dst) if negative_zero else (dst, src)
        fmax_fold(rows_buf[rlo:rhi], [src[rlo + t : rhi + t] for t in self.row_taps])
        acc = result[lo:hi]
        fmax_fold(acc, [rows_buf[lo + t : hi + t] for t in self.col_taps])
        if not small and not acc.min() >= self.low:  # NaN, or -inf: below the start value
            np.fmax(acc, self.low, out=acc)
        if negative_zero:  # fmax may have picked either zero of a tie
            zero = acc == 0
            if zero.any():
                self._zero_signs(src, acc, lo, zero)
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


def _count(o: int, k: int, pad: int, size: int) -> int:
    """How many taps of the window at output ``o`` lie inside an axis of ``size``."""
    return sum(0 <= o - pad + j < size for j in range(k))




def chain_layer(op_type: str, a) -> tuple[Geometry, Layer] | None:
    """The geometry and kind of a pool layer that can join a chain, or None.

    2-D MaxPool (its indices unused) or AvgPool, explicit pads, stride 1, no
    dilation, and pads_begin + pads_end = kernel - 1 on each axis (as many outputs
    as inputs).
    """
    if op_type not in ("MaxPool", "AvgPool") or len(a.kernel) != 2:
        return None
    zeros = (0, 0)
    pb, pe = tuple(a.pads_begin) or zeros, tuple(a.pads_end) or zeros
    dilations = tuple(getattr(a, "dilations", ())) or (1, 1)
    if (a.auto_pad not in ("explicit", "notset") or tuple(a.strides) != (1, 1)
            or dilations != (1, 1) or len(pb) != 2 or len(pe) != 2):  # fmt: skip
        return None
    if any(k < 1 or b < 0 or e < 0 or b + e != k - 1
           for k, b, e in zip(a.kernel, pb, pe, strict=True)):  # fmt: skip
        return None
    g = Geometry(tuple(a.kernel), pb, pe)
    return g, Layer(op_type == "MaxPool", getattr(a, "exclude_pad", True))
