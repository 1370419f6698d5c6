"""The fast AvgPool: sums built tap by tap over whole chunks of planes.

Computes what :func:`irrun.ops.avg_pool.avg_pool` computes, bit for bit: each output's
sum adds its window's taps in row-major kernel order in the accumulator type, and is
divided once (or multiplied by the f32 reciprocal, for 8-bit types), so every output
sees the same additions in the same order as in the reference; only which outputs one
NumPy call covers differs (see _Plan).

Applies where the geometry is tame (kernel and dilation within the input, strides and
pads below 2**31) and every axis has at most :data:`MAX_BORDERS` outputs that some tap
misses; elsewhere the reference runs, whose work is bounded by the input and the output.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from ..ops.avg_pool import accumulator_dtype, to_input_type
from ..ops.window import Windows, computed, computed_type, pool_dilations, restored, with_defaults
from .chunks import each_chunk, in_flight, plane_chunks
from .registry import FastKernel, register_fast

# Outputs per axis that some tap misses, at most (each costs NumPy calls of its own).
MAX_BORDERS = 64

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


# Bytes of input per chunk of planes (see max_pool.CHUNK_BYTES).
CHUNK_BYTES = 1 << 20

_ALL = slice(None)


class _Plan:
    """One average pool over one input shape and type, worked out once.

    The sum of each window is built tap by tap in row-major kernel order, as the
    plugin builds it, so each output sees the same f32 additions in the same
    order; only which outputs one NumPy call covers differs.  Three ways:

    * a window covering whole planes: a sum over the flattened plane;
    * stride 1 and as many outputs as inputs on every axis: every tap of the full
      windows is the flat input shifted by a fixed amount, one call per tap over
      the whole chunk; the border windows, which some taps miss, are redone as
      boxes (in 2-D, the border rows are copied out of the flat sums and the
      border columns summed in strips instead, see _plan_rows);
    * otherwise one box, the whole output: per tap, one call over the outputs it
      reaches.
    """

    def __init__(self, shape: tuple[int, ...], a: SimpleNamespace, dtype: np.dtype) -> None:
        self.w = w = Windows.of(shape[2:], a)
        self.dtype, self.acc = dtype, accumulator_dtype(dtype)
        self.planes = shape[0] * shape[1]
        self.plane = int(np.prod(shape[2:], dtype=np.int64))
        self.chunks = plane_chunks(self.planes, self.plane * self.acc.itemsize, CHUNK_BYTES)
        # OpenVINO decides this once for the whole op, not per axis or per window.
        self.pads_in_average = not a.exclude_pad and any((*w.pads_begin, *w.pads_end))
        # The 8-bit kernel multiplies by the f32 reciprocal of the count; that rounds
        # some exact halves (2475/30) up before half-to-even.
        self.by_reciprocal = dtype.kind in "iu" and dtype.itemsize == 1
        self.steps = w.steps
        axes = w.axes
        full = [ax.full() for ax in axes]
        self.whole = all(
            ax.out == 1 and ax.dilation == 1 and ax.offset(0) <= 0
            and ax.offset(ax.kernel - 1) >= ax.size - 1 for ax in axes
        )
        self.aligned = (not self.whole and all(ax.aligned for ax in axes)
                        and all(lo < hi for lo, hi in full))
        if self.aligned:
            self.interior = full
            self.offsets = [
                sum(ax.offset(j) * st for ax, j, st in zip(axes, tap, self.steps, strict=True))
                for tap in w.taps()
            ]
            # Every tap of a full window counts, whatever exclude-pad says.
            count = np.array(np.prod(w.kernel), self.acc)
            self.interior_divisor = np.ones((), self.acc) / count if self.by_reciprocal else count
            self.rows = len(axes) == 2 and axes[0].dilation == 1
            if self.rows:
                self._plan_rows()
            else:
                self.boxes = [self._box(box) for box in _complement(full, w.out)]
        elif self.whole:
            self.whole_divisor = self.divisor([(0, 1)] * len(w.out)).reshape(-1)
        else:
            self.boxes = [self._box([(0, o) for o in w.out])]

    def _plan_rows(self) -> None:
        """Border rows of a 2-D aligned pool as prefixes of the flat sums.

        The sum over a window's first rows is where the flat sums stand after
        those rows' taps.  A top border row's window is the first rows of the first
        full row's window, and a bottom border row's window the first rows of its
        own: their values are copied out of the flat sums at that point, before
        later taps wrap into the next plane.  Border columns: _plan_columns.
        """
        ah, aw = self.w.axes
        height, width = ah.size, aw.size
        lo, hi = ah.full()
        self.cols = slice(*aw.full())
        # Per tap: flat shift, and the last row whose windows it reaches.
        self.row_taps = [(ah.offset(i) * width + aw.offset(j),
                          min(height - 1, height - 1 - ah.offset(i)))
                         for i, j in self.w.taps()]
        self.snapshots: dict[int, list] = {}  # taps done -> (source row, row, divisor)
        for o in [*range(lo), *range(hi, height)]:
            divisor = self.divisor([(o, o + 1), (self.cols.start, self.cols.stop)])
            if divisor.ndim:
                divisor = divisor.reshape(1, -1)
            self.snapshots.setdefault(len(ah.taps_of(o)) * aw.kernel, []).append(
                (lo if o < lo else o, o, divisor))
        self.boxes = []
        self._plan_columns()

    def _plan_columns(self) -> None:
        """Border columns of a 2-D aligned pool from strips of transposed columns.

        Each border column's window reads a few input columns; those are copied,
        transposed, into one strip per number of columns read, between rows of
        zeros standing for the padding (adding +0.0 to a sum that starts at +0.0
        changes nothing).  A strip is one flat array in which every tap of every
        border column is a fixed shift, so a tap is again one call for all planes.
        """
        ah, aw = self.w.axes
        height = ah.size
        # Rows of zeros before (the top padding) and after, enough for every tap.
        padded = height + max(ah.pad_begin, (ah.kernel - 1) * ah.dilation)
        groups: dict[int, list[int]] = {}  # columns read -> border columns reading them
        for o in aw.borders():
            groups.setdefault(len(aw.taps_of(o)), []).append(o)
        self.strips = []
        for m, columns in groups.items():
            fills = []  # (strip columns, input columns) for each border column
            for q, o in enumerate(columns):
                first = o + aw.offset(aw.taps_of(o)[0])
                fills.append((slice(q * m, (q + 1) * m),
                              slice(first, first + (m - 1) * aw.dilation + 1, aw.dilation)))
            shifts = [t * padded + i * ah.dilation for i in range(ah.kernel) for t in range(m)]
            outs = []
            for q, o in enumerate(columns):
                divisor = self.divisor([(0, height), (o, o + 1)])
                outs.append((q * m, o, divisor.reshape(1, -1) if divisor.ndim else divisor))
            self.strips.append(((len(columns) * m, padded), fills, shifts, outs))

    def count(self, box: list[tuple[int, int]]) -> np.ndarray:
        """The divisor of each window in ``box`` (0 for a window with no element)."""
        if self.pads_in_average:
            return np.array(np.prod(self.w.kernel), self.acc)
        count = np.ones((1,) * (len(box) + 1), self.acc)
        for i, (ax, (lo, hi)) in enumerate(zip(self.w.axes, box, strict=True)):
            valid = np.array([len(ax.taps_of(o)) for o in range(lo, hi)], self.acc)
            shape = [1] * (len(box) + 1)
            shape[i + 1] = hi - lo
            count = count * valid.reshape(shape)
        return count

    def _box(self, box: list[tuple[int, int]]):
        """The outputs ``box`` (a range per axis) summed tap by tap over what each reaches."""
        adds = []
        for tap in self.w.taps():
            dst, src = [_ALL], [_ALL]
            for ax, j, (lo, hi) in zip(self.w.axes, tap, box, strict=True):
                rlo, rhi = ax.reach(j)
                rlo, rhi = max(rlo, lo), min(rhi, hi)
                if rlo >= rhi:
                    break
                c = ax.offset(j)
                dst.append(slice(rlo - lo, rhi - lo))
                src.append(slice(rlo * ax.stride + c, (rhi - 1) * ax.stride + c + 1, ax.stride))
            else:
                adds.append((tuple(dst), tuple(src)))
        region = (_ALL, *(slice(lo, hi) for lo, hi in box))
        return region, tuple(hi - lo for lo, hi in box), adds, self.divisor(box)

    def divisor(self, box: list[tuple[int, int]]) -> np.ndarray:
        """What :meth:`divide` takes: the count, or the 8-bit kernel's reciprocal of it."""
        count = self.count(box)
        if not self.by_reciprocal:
            return count
        with np.errstate(divide="ignore"):  # an empty window: 0 * inf is NaN, as 0/0 is
            return np.ones((), self.acc) / count

    def divide(self, acc: np.ndarray, divisor: np.ndarray, out: np.ndarray) -> None:
        if self.by_reciprocal:
            np.multiply(acc, divisor, out=out)
        else:
            np.divide(acc, divisor, out=out)

    def _run_rows(self, xc: np.ndarray, out: np.ndarray) -> None:
        p = xc.shape[0]
        height, width = self.w.sizes
        xf, of = xc.reshape(-1), out.reshape(-1)
        o3 = out.reshape(p, height, width)
        qa = self.interior[0][0] * width + self.interior[1][0]
        copies = []
        end = None
        for t, (shift, last) in enumerate(self.row_taps):
            qb = min(p * self.plane - shift, (p - 1) * self.plane + (last + 1) * width)
            if t == 0:
                end = qb
                np.add(xf[qa + shift : qb + shift], 0.0, out=of[qa:qb])
            else:
                np.add(of[qa:qb], xf[qa + shift : qb + shift], out=of[qa:qb])
            for source, row, divisor in self.snapshots.get(t + 1, ()):
                copies.append((o3[:, source, self.cols].copy(), row, divisor))
        # Positions between full windows get garbage here, redone below.
        self.divide(of[qa:end], self.interior_divisor, of[qa:end])
        for values, row, divisor in copies:
            self.divide(values, divisor, o3[:, row, self.cols])
        x3 = xc.reshape(p, height, width)
        top = self.w.axes[0].pad_begin
        for (columns, padded), fills, shifts, outs in self.strips:
            if not shifts:  # windows without any element: 0/0
                for _, o, divisor in outs:
                    self.divide(np.zeros((p, height), self.acc), divisor, o3[:, :, o])
                continue
            strip = np.zeros((p, columns, padded), self.acc)
            for cols, source in fills:
                np.copyto(strip[:, cols, top : top + height], x3[:, :, source].transpose(0, 2, 1))
            flat = strip.reshape(-1)
            # Windows start at each border column's first strip column, rows 0..height.
            n = (p - 1) * columns * padded + outs[-1][0] * padded + height
            sums = np.empty(p * columns * padded, self.acc)
            acc = sums[:n]
            np.add(flat[shifts[0] : shifts[0] + n], 0.0, out=acc)
            for shift in shifts[1:]:
                acc += flat[shift : shift + n]
            acc3 = sums.reshape(p, columns, padded)
            for row, o, divisor in outs:
                self.divide(acc3[:, row, :height], divisor, o3[:, :, o])

    def run(self, xc: np.ndarray, out: np.ndarray) -> None:
        """Average planes ``xc`` (already in the accumulator type) into ``out``."""
        p = xc.shape[0]
        if self.whole:
            # Rows are the positions of the plane in order: summed one row at a time.
            acc = row_sums(xc.reshape(p, self.plane).T, self.acc)
            self.divide(acc, self.whole_divisor, acc)
            np.copyto(out.reshape(p), acc)
            return
        if self.aligned and self.rows:
            self._run_rows(xc, out)
        elif self.aligned:
            xf, of = xc.reshape(-1), out.reshape(-1)
            qa = sum(lo * st for (lo, _), st in zip(self.interior, self.steps, strict=True))
            last = zip(self.interior, self.steps, strict=True)
            qb = (p - 1) * self.plane + sum((hi - 1) * st for (_, hi), st in last) + 1
            dst = of[qa:qb]
            # Positions between full windows get garbage here, redone as boxes below.
            np.add(xf[qa + self.offsets[0] : qb + self.offsets[0]], 0.0, out=dst)
            for off in self.offsets[1:]:
                np.add(dst, xf[qa + off : qb + off], out=dst)
            self.divide(dst, self.interior_divisor, dst)
        for region, sizes, adds, divisor in self.boxes:
            acc = np.zeros((p, *sizes), self.acc)
            for dst, src in adds:
                np.add(acc[dst], xc[src], out=acc[dst])
            self.divide(acc, divisor, out[region])


def _complement(box: list[tuple[int, int]], outs: tuple[int, ...]) -> list[list[tuple[int, int]]]:
    """Boxes that cover the outputs outside ``box``, each once.

    >>> _complement([(1, 3), (1, 3)], (4, 4))
    [[(0, 1), (0, 4)], [(3, 4), (0, 4)], [(1, 3), (0, 1)], [(1, 3), (3, 4)]]
    """
    found = []
    for i, ((lo, hi), out) in enumerate(zip(box, outs, strict=True)):
        before = list(box[:i])
        after = [(0, o) for o in outs[i + 1 :]]
        for part in ((0, lo), (hi, out)):
            if part[0] < part[1]:
                found.append([*before, part, *after])
    return found


def applies(w: Windows) -> bool:
    """Whether the fast kernel takes a pool of geometry ``w`` (see the module's docstring)."""
    return w.tame and all(ax.border_count() <= MAX_BORDERS for ax in w.axes)


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple[int, ...], key: tuple, dtype: np.dtype) -> _Plan | None:
    """The plan for a pool, or None where the fast kernel does not apply."""
    kernel, strides, dilations, pb, pe, auto_pad, rounding, exclude_pad = key
    a = SimpleNamespace(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb,
                        pads_end=pe, auto_pad=auto_pad, rounding_type=rounding,
                        exclude_pad=exclude_pad)
    return _Plan(shape, a, dtype) if applies(Windows.of(shape[2:], a)) else None


def plan_of(shape: tuple[int, ...], a: SimpleNamespace, dtype: np.dtype) -> _Plan | None:
    """The plan of a pool of ``shape`` and ``dtype`` (None: the fast kernel does not apply)."""
    zeros = (0,) * len(a.kernel)
    key = (tuple(a.kernel), tuple(a.strides), pool_dilations(a), tuple(a.pads_begin) or zeros,
           tuple(a.pads_end) or zeros, a.auto_pad, a.rounding_type, a.exclude_pad)
    return _plan(shape, key, dtype)


def avg_pool(plan: _Plan, x: np.ndarray) -> np.ndarray:
    """Average-pool ``x`` (N, C, *spatial) as ``plan`` says.

    >>> a = SimpleNamespace(kernel=(2, 2), strides=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
    ...                     rounding_type="floor", auto_pad="explicit", exclude_pad=False)
    >>> x = np.array([[[[1., 3.], [7., 11.]]]], np.float32)
    >>> avg_pool(plan_of(x.shape, a, x.dtype), x)[0, 0, 0].tolist()
    [0.25, 1.0, 0.75]
    """
    x = np.ascontiguousarray(x)
    xp = x.reshape(plan.planes, *plan.w.sizes)
    plane_bytes = plan.plane * plan.acc.itemsize  # as plan.chunks counts them
    out = np.empty((plan.planes, *plan.w.out), plan.acc)

    def average(ch: slice) -> None:
        # inf - inf, overflow to inf and 0/0 are the IEEE results OpenVINO gives too
        # (the error state is each thread's own: set in the block).
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            plan.run(xp[ch].astype(plan.acc, copy=False), out[ch])

    each_chunk(plan.planes, plane_bytes, plan.chunks, average, CHUNK_BYTES)
    return to_input_type(out, x.dtype).reshape(x.shape[:2] + plan.w.out)


def run(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...] | object:
    plan = plan_of(x.shape, a, computed_type(x.dtype))
    if plan is None:
        return NotImplemented
    with np.errstate(all="ignore"):  # NaN, infinities and overflow are results here
        return (restored(avg_pool(plan, computed(x)), x.dtype),)


def takes(a: SimpleNamespace, inputs, outputs) -> bool:
    """Whether the fast kernel runs on an input of these infos (its geometry applies,
    worked out without making its plan, which may be as large as the tensors)."""
    (x,) = inputs
    return applies(Windows.of(tuple(x.shape[2:]), with_defaults(a)))


def scratch(a: SimpleNamespace, inputs, outputs) -> int:
    """A contiguous and a converted copy of the input, the averages in the accumulator
    type with their conversion back, and per chunk in flight its sums and strips."""
    (x,) = inputs
    size = int(np.prod(x.shape, dtype=object))
    out = int(np.prod(outputs[0].shape, dtype=object))
    item = x.element_type.dtype.itemsize
    acc = accumulator_dtype(computed_type(x.element_type.dtype)).itemsize
    return size * (item + acc) + 4 * out * acc + 8 * in_flight(size * acc, CHUNK_BYTES)


register_fast(
    FastKernel(
        "AvgPool", (1, 14, 16),
        applies=f"geometry within the input (kernel and dilation at most the axis, strides and "
                f"pads below 2**31) and at most {MAX_BORDERS} border outputs per axis",
        run=run, scratch=scratch, takes=takes,
    )
)
