"""Pooling over arbitrary windows, with work bounded by the input and the output.

The fast kernels of :mod:`.max_pool` and :mod:`.avg_pool` work tap by tap over
the kernel, which is right for a 3x3 window and hopeless for a kernel of 2**31
(a window far larger than the input only ever reads the input's elements).  Here
each window is first clipped to the elements it holds (:func:`..window.clip_windows`:
per axis a first position and a count, step ``dilation``), windows that clip
alike are computed once, and the remaining ones are reduced either tap by tap
over all of them or window by window over its taps, whichever takes fewer NumPy
calls.  Adaptive pools, whose windows are ranges of the input, go through the
same code.

Results are OpenVINO's, as the fast kernels have them: sums add the window's
elements in row-major order starting from +0.0; a maximum starts at ``low`` (or
at the window's first element) and takes only a strictly greater one, so NaN
never wins after the start and the first of equal values (and of zeros) wins.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

_ALL = slice(None)


# Columns copied at a time by row_sums.
_ROW_BLOCK = 512


def row_sums(rows: np.ndarray, acc: np.dtype) -> np.ndarray:
    """Column sums of ``rows`` (L, P) in ``acc``, row after row from +0.0, as the plugin adds.

    Reducing a C-ordered array over its first axis adds one row at a time, but a
    single column is summed pairwise by NumPy: then a column of zeros goes beside it.

    >>> x = np.float32([1e8, 1, -1e8, 1] * 8)[:, None]
    >>> row_sums(x, np.dtype(np.float32)).tolist(), float(np.add.reduce(x[:, 0]))
    ([1.0], 0.0)
    """
    p = rows.shape[1]
    table = np.empty((rows.shape[0], max(p, 2)), acc)
    table[:, p:] = 0
    # Columns in blocks: ``rows`` is usually a transposed view (planes x positions read
    # position-major), and a block of it is read within the cache (W5, a global 7x7
    # average of 2048 planes: the copy 39 -> 27 us).
    for a in range(0, p, _ROW_BLOCK):
        np.copyto(table[:, a : a + _ROW_BLOCK], rows[:, a : a + _ROW_BLOCK])
    total = np.add.reduce(table, axis=0)[:p]
    total += 0.0  # the plugin's sum starts at +0.0: no -0.0 total
    return total


class Windows:
    """Distinct clipped windows of an N-D pool and where each output finds its own.

    ``axes`` holds, per spatial axis, ``(first, count, step)`` for every output.
    """

    def __init__(self, sizes: Sequence[int], axes: Sequence[tuple[np.ndarray, np.ndarray, int]]):
        self.sizes = tuple(sizes)
        self.out = tuple(len(first) for first, _, _ in axes)
        self.firsts, self.counts, self.steps, self.inverse = [], [], [], []
        for size, (first, count, step) in zip(self.sizes, axes, strict=True):
            key = first * (size + 1) + count  # first and count are at most size
            unique, index, inverse = np.unique(key, return_index=True, return_inverse=True)
            if len(unique) == len(key):  # every output has a window of its own: no gather
                index, inverse = np.arange(len(key)), None
            self.firsts.append(first[index])
            self.counts.append(count[index])
            self.steps.append(step)
            self.inverse.append(None if inverse is None else inverse.reshape(-1))
        self.shape = tuple(len(f) for f in self.firsts)
        self.flat_steps = [int(v) for v in np.cumprod((1, *self.sizes[:0:-1]))[::-1]]
        self.most = [int(c.max()) if c.size else 0 for c in self.counts]
        # Taps over all windows at once, or windows one by one: as few calls as may be.
        self.by_tap = int(np.prod(self.most, dtype=object)) <= int(np.prod(self.shape))

    def _box(self, combo: tuple[int, ...]) -> tuple[slice, ...] | None:
        """The slices of window ``combo`` (a distinct window per axis), or None if empty."""
        slices = []
        for u, first, count, step in zip(combo, self.firsts, self.counts, self.steps,
                                         strict=True):  # fmt: skip
            c = int(count[u])
            if c == 0:
                return None
            f = int(first[u])
            slices.append(slice(f, f + (c - 1) * step + 1, step))
        return tuple(slices)

    def _positions(self, combo: tuple[int, ...], j: np.ndarray) -> np.ndarray:
        """Flat plane positions of element ``j`` (row-major) of window ``combo``."""
        dims = [int(count[u]) for u, count in zip(combo, self.counts, strict=True)]
        coords = np.unravel_index(j, dims)
        flat = np.zeros(j.shape, np.int64)
        for u, c, first, step, fs in zip(combo, coords, self.firsts, self.steps,
                                         self.flat_steps, strict=True):  # fmt: skip
            flat += (int(first[u]) + c * step) * fs
        return flat

    def _taps(self):
        """Per tap in row-major order: gather indices per axis (shaped to broadcast over
        the windows), a mask of the windows it is inside (None: all) and its flat
        positions in the plane."""
        n = len(self.shape)

        def along(i: int, v: np.ndarray) -> np.ndarray:
            return v.reshape((1,) * i + (-1,) + (1,) * (n - 1 - i))

        fewest = [int(c.min()) if c.size else 0 for c in self.counts]
        for tap in itertools.product(*(range(m) for m in self.most)):
            pos, mask, flat = [], None, np.zeros((), np.int64)
            for i, t in enumerate(tap):
                # Past a window's end the index is clamped and the mask leaves it out.
                p = along(i, np.minimum(self.firsts[i] + t * self.steps[i], self.sizes[i] - 1))
                pos.append(p)
                flat = flat + p * self.flat_steps[i]
                if t >= fewest[i]:
                    inside = along(i, t < self.counts[i])
                    mask = inside if mask is None else mask & inside
            yield tuple(pos), mask, flat

    def expand(self, a: np.ndarray) -> np.ndarray:
        """``a`` over the distinct windows (planes first) spread to every output."""
        for i, inverse in enumerate(self.inverse):
            if inverse is not None:
                a = np.take(a, inverse, axis=i + 1)
        return a

    # ------------------------------------------------------------------ reductions

    def sums(self, x: np.ndarray, acc: np.dtype) -> np.ndarray:
        """Sequential sums of each distinct window over planes ``x`` (P, *sizes)."""
        p = x.shape[0]
        out = np.zeros((p, *self.shape), acc)
        if self.by_tap:
            for pos, mask, _ in self._taps():
                v = x[(_ALL, *pos)]
                np.add(out, v, out=out, where=True if mask is None else mask[None])
            return out
        for combo in itertools.product(*(range(n) for n in self.shape)):
            box = self._box(combo)
            if box is None:
                continue
            out[(_ALL, *combo)] = row_sums(x[(_ALL, *box)].reshape(p, -1).T, acc)
        return out

    def maxima(self, x: np.ndarray, low=None) -> tuple[np.ndarray, np.ndarray]:
        """Each distinct window's first strict maximum and its flat position in the plane.

        ``low`` given: the running maximum starts there (MaxPool), and a window with
        nothing above it gives ``low`` at position 0.  Otherwise it starts at the
        window's first element (AdaptiveMaxPool: a leading NaN stays).
        """
        p = x.shape[0]
        values = np.empty((p, *self.shape), x.dtype)
        where = np.zeros((p, *self.shape), np.int64)
        if self.by_tap:
            started = low is not None
            if started:
                values[...] = low
            better = np.empty(values.shape, bool)
            for pos, mask, flat in self._taps():
                v = x[(_ALL, *pos)]
                if not started:  # the first tap of every window is inside
                    np.copyto(values, v)
                    np.copyto(where, np.broadcast_to(flat, where.shape[1:]))
                    started = True
                    continue
                with np.errstate(invalid="ignore"):
                    np.greater(v, values, out=better)
                if mask is not None:
                    better &= mask[None]
                np.copyto(values, v, where=better)
                np.copyto(where, np.broadcast_to(flat[None], where.shape), where=better)
            return values, where
        floats = x.dtype.kind == "f"
        for combo in itertools.product(*(range(n) for n in self.shape)):
            box = self._box(combo)
            dst = (_ALL, *combo)
            if box is None:  # only MaxPool has empty windows
                values[dst] = low
                continue
            flat = x[(_ALL, *box)].reshape(p, -1)
            top = np.fmax.reduce(flat, axis=1)
            if floats and low is None:  # a leading NaN is the result
                top = np.where(np.isnan(flat[:, 0]), flat[:, 0], top)
            with np.errstate(invalid="ignore"):
                j = np.argmax(flat == top[:, None], axis=1)  # NaN equals nothing: 0
            values[dst] = flat[np.arange(p), j]  # the first equal one: its zero's sign
            where[dst] = self._positions(combo, j)
            if low is not None:
                with np.errstate(invalid="ignore"):
                    none = ~(top > low)
                values[dst] = np.where(none, low, values[dst])
                where[dst] = np.where(none, 0, where[dst])
        return values, where
