"""The fast MaxPool: each spatial axis reduced on its own, over chunks of planes.

Computes what :func:`irrun.ops.max_pool.max_pool` computes, bit for bit, values and
indices.  The pool is separable: a maximum over a window is the maximum over its rows
of the maxima along them, so each spatial axis is reduced on its own, with ``fmax``
over one strided slice per tap for all full windows at once (the outputs at the
borders, which some taps miss, one by one).  For the values alone the outer axes go
first (the last, strided pass then reads the least); with indices the innermost goes
first and each pass carries where in its window its maximum is (see _AxisArgmax).
``fmax`` keeps NaN only where a window has nothing else and picks either zero of a
tie, so what is below the start value is raised to it afterwards (_finish) and zero
maxima get the sign of their window's first zero (_zero_signs).

Applies where the geometry is tame (kernel and dilation within the input, strides and
pads below 2**31: per-tap loops stay as long as the input) and every axis has at most
:data:`MAX_BORDERS` outputs that some tap misses (a pad of a million would make a
million border outputs, each a NumPy call); elsewhere the reference runs, whose work
is bounded by the input and the output.
"""

from __future__ import annotations

import functools
import sys
from types import SimpleNamespace

import numpy as np

from ..ops.max_pool import lowest, normalized_axis
from ..ops.window import (
    Axis,
    Windows,
    computed,
    computed_type,
    pool_dilations,
    restored,
    with_defaults,
)
from .chunks import each_chunk, in_flight, plane_chunks
from .registry import FastKernel, register_fast

# Outputs per axis that some tap misses, at most (each is a NumPy call or a few).
MAX_BORDERS = 64



# Bytes of input per chunk of planes: large enough that NumPy's cost per call is
# spread thin, small enough that a chunk's intermediates stay in the CPU's cache and
# take little memory next to the tensors themselves.  1 MiB: a chunk's split phases
# and partial maxima then fit a 2 MiB L2 (W1 1.3x, W3 1.4x, W9 1.45x faster than with
# 4 MiB on an AVX-512 Xeon, whose OpenVINO pools are fast).
CHUNK_BYTES = 1 << 20

_ALL = slice(None)


def fmax_fold(dst: np.ndarray, srcs: list[np.ndarray]) -> None:
    """``dst`` = fmax over ``srcs`` in order (NaN only where every source is NaN)."""
    if len(srcs) == 1:
        np.copyto(dst, srcs[0])
        return
    np.fmax(srcs[0], srcs[1], out=dst)
    for src in srcs[2:]:
        np.fmax(dst, src, out=dst)


def _pairs_split(ax: Axis, inner: int, itemsize: int) -> bool:
    """Can the two phases of a stride-2 innermost axis be split off as in _split_pairs?"""
    return (inner == 1 and ax.stride == 2 and ax.size % 2 == 0 and ax.out == ax.size // 2
            and itemsize in _PAIRS and sys.byteorder == "little")


_PAIRS = {1: (np.uint16, np.uint8), 2: (np.uint32, np.uint16), 4: (np.uint64, np.uint32)}


def _split_pairs(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The even and the odd elements of a flat array of even length.

    Read as integers of twice the width, neighbouring elements are one number
    whose low half (on a little-endian machine) is the first of them: narrowing
    those numbers copies out every other element at the speed of a contiguous
    cast, about twice as fast as copying a strided view.
    """
    wide, narrow = _PAIRS[flat.dtype.itemsize]
    even = np.empty(flat.size // 2, flat.dtype)
    odd = np.empty(flat.size // 2, flat.dtype)
    np.copyto(even.view(narrow), flat.view(wide), casting="unsafe")
    np.copyto(odd.view(narrow)[:-1], flat[1:-1].view(wide), casting="unsafe")
    odd[-1] = flat[-1]
    return even, odd


class _Phases:
    """The rows (or columns) of one strided axis copied out by phase (``phase::stride``).

    Over the copies every tap of the full windows is a contiguous slice (one flat
    slice over all planes when the copies have one row per output), so the
    operations per tap run at full speed instead of over short strided runs; a
    copy costs about what one strided operation does.  ``pairs``: the phases of a
    stride-2 innermost axis are taken apart by _split_pairs instead.
    """

    def __init__(self, ax: Axis, p: int, inner: int, pairs: bool) -> None:
        s, offsets = ax.stride, [ax.offset(j) for j in range(ax.kernel)]
        lo, hi = ax.full()
        width = max(ax.out, *(hi + c // s for c in offsets))
        self.shape = (p, width, inner)
        self.rows = {}  # phase -> (rows of the copy, rows of the input)
        for c in offsets:
            ph = c % s
            count = min(width, len(range(ph, ax.size, s)))
            self.rows[ph] = ((_ALL, slice(0, count)), (_ALL, slice(ph, ph + count * s, s)))
        self.flat = width == ax.out
        if self.flat:
            qa, qb = lo * inner, ((p - 1) * width + hi) * inner
            self.dst = slice(qa, qb)
            self.srcs = [(c % s, slice(qa + c // s * inner, qb + c // s * inner))
                         for c in offsets]
        else:
            self.dst = (_ALL, slice(lo, hi))
            self.srcs = [(c % s, (_ALL, slice(lo + c // s, hi + c // s))) for c in offsets]
        self.pairs = pairs and self.flat

    def copies(self, a3: np.ndarray, split: bool = True) -> dict[int, np.ndarray]:
        """The phases of ``a3``; ``split=False``: never by _split_pairs."""
        if self.pairs and split:
            return dict(enumerate(_split_pairs(a3.reshape(-1))))
        copies = {}
        for ph, (fill, rows) in self.rows.items():
            copy = np.empty(self.shape, a3.dtype)
            np.copyto(copy[fill], a3[rows])
            copies[ph] = copy.reshape(-1) if self.flat else copy
        return copies

    def taps(self, copies: dict[int, np.ndarray]) -> list[np.ndarray]:
        return [copies[ph][i] for ph, i in self.srcs]

    def target(self, out: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        """The full windows' part of ``out`` (of ``shape``) that the taps line up with."""
        return out.reshape(-1)[self.dst] if self.flat else out.reshape(shape)[self.dst]


class _AxisMax:
    """The maximum over one axis of ``(P, S, R)`` into ``(P, O, R)``, sliced in advance.

    Full windows are done as one operation per tap over all of them; the few
    outputs at the borders, which some taps miss, one by one.  NaN is kept where a
    window has nothing else (``_finish`` replaces it).
    """

    def __init__(self, ax: Axis, p: int, inner: int, slide: bool, itemsize: int) -> None:
        self.shape_in, self.shape_out = (p, ax.size, inner), (p, ax.out, inner)
        self.flat = self.sliding = self.strided = self.pairs = self.phases = None
        lo, hi = ax.full()
        s, offsets = ax.stride, [ax.offset(j) for j in range(ax.kernel)]
        if lo < hi and ax.aligned:
            # Every full window's taps are the flat input shifted by a fixed amount;
            # positions past a row's end get garbage here and are redone as borders.
            qa, qb = lo * inner, ((p - 1) * ax.size + hi) * inner
            self.flat = (slice(qa, qb), [slice(qa + c * inner, qb + c * inner) for c in offsets])
        elif lo < hi and slide and ax.kernel > 1 and _pairs_split(ax, inner, itemsize):
            # The window maximum over the even and the odd elements, split apart.
            qa, qb = lo, (p - 1) * ax.out + hi
            self.pairs = (slice(qa, qb), [(c % 2, slice(qa + c // 2, qb + c // 2))
                                          for c in offsets])
        elif lo < hi and inner > 1 and s > 1 and len({c % s for c in offsets}) < ax.kernel:
            # Some phase is read by two taps or more: its copy pays for itself.
            self.phases = _Phases(ax, p, inner, pairs=False)
        elif lo < hi and slide and inner == 1 and s > 1 and ax.kernel > 1:
            # NumPy's float max over a strided view is several times slower than
            # over contiguous memory: take the window maximum at every input
            # position over the flat rows, then copy out every ``stride``-th one.
            # grid[j] is the window starting at flat input position qa + j, so row
            # r's output o is grid[r * size + (o - lo) * stride].
            qa = lo * s + offsets[0]
            n = (p - 1) * ax.size + (hi - 1 - lo) * s + 1
            srcs = [slice(qa + c - offsets[0], qa + c - offsets[0] + n) for c in offsets]
            take = (_ALL, slice(0, (hi - 1 - lo) * s + 1, s))
            self.sliding = (n, srcs, (_ALL, slice(lo, hi)), take)
        elif lo < hi:
            last = (hi - 1) * s + 1
            self.strided = ((_ALL, slice(lo, hi)),
                            [(_ALL, slice(lo * s + c, last + c, s)) for c in offsets])
        self.borders = []
        for o in ax.borders():
            taps = ax.taps_of(o)
            self.borders.append(((_ALL, o), [(_ALL, o * s + offsets[j]) for j in taps]))

    def __call__(self, a: np.ndarray, out: np.ndarray, low: np.generic) -> None:
        a3, o3 = a.reshape(self.shape_in), out.reshape(self.shape_out)
        if self.flat is not None:
            dst, srcs = self.flat
            af = a3.reshape(-1)
            fmax_fold(o3.reshape(-1)[dst], [af[i] for i in srcs])
        elif self.pairs is not None:
            dst, srcs = self.pairs
            phases = _split_pairs(a3.reshape(-1))
            fmax_fold(o3.reshape(-1)[dst], [phases[ph][i] for ph, i in srcs])
        elif self.phases is not None:
            ph = self.phases
            fmax_fold(ph.target(out, self.shape_out), ph.taps(ph.copies(a3)))
        elif self.sliding is not None:
            n, srcs, cols, take = self.sliding
            af = a3.reshape(-1)
            grid = np.empty(self.shape_in[0] * self.shape_in[1], a.dtype)
            fmax_fold(grid[:n], [af[i] for i in srcs])
            o3.reshape(self.shape_out[:2])[cols] = grid.reshape(self.shape_in[:2])[take]
        elif self.strided is not None:
            dst, srcs = self.strided
            fmax_fold(o3[dst], [a3[i] for i in srcs])
        for dst, srcs in self.borders:
            if srcs:
                fmax_fold(o3[dst], [a3[i] for i in srcs])
            else:
                o3[dst] = low


class _AxisArgmax:
    """Max over one axis with where in its window each output's first maximum is.

    The input holds the maxima over the inner axes (already reduced) and where
    they are relative to their window's first tap (None on the innermost axis).
    The first tap whose value equals the maximum wins (NaN equals nothing) and its
    offset is carried along: with the inner axes already reduced to their first
    maximum, that is the first maximum in row-major order.  Offsets are small
    unsigned integers and the choice is arithmetic on 0/1 masks (exact modulo the
    type's range, since every result fits), because masked writes are far slower
    in NumPy.

    With a stride, the taps read copies of the input by phase (see _Phases).
    """

    def __init__(self, ax: Axis, p: int, inner: int, step: int, itemsize: int) -> None:
        self.shape_in, self.shape_out = (p, ax.size, inner), (p, ax.out, inner)
        s, offsets = ax.stride, [ax.offset(j) for j in range(ax.kernel)]
        self.distance = ax.dilation * step  # of consecutive taps, in the plane
        self.groups = []  # (dst, srcs, offset of the first tap); srcs slice the input
        self.phases = None
        lo, hi = ax.full()
        if lo < hi and s > 1 and ax.kernel > 1:
            self.phases = _Phases(ax, p, inner, _pairs_split(ax, inner, itemsize))
        elif lo < hi:
            last = (hi - 1) * s + 1
            self.groups.append(((_ALL, slice(lo, hi)),
                                [(_ALL, slice(lo * s + c, last + c, s)) for c in offsets], 0))
        for o in ax.borders():
            taps = ax.taps_of(o)
            srcs = [(_ALL, o * s + offsets[j]) for j in taps]
            self.groups.append(((_ALL, o), srcs, taps[0] * self.distance if taps else 0))

    def __call__(self, a, rel, vout, rel_out, low) -> None:
        a3, v3 = a.reshape(self.shape_in), vout.reshape(self.shape_out)
        r3 = None if rel is None else rel.reshape(self.shape_in)
        ro3 = rel_out.reshape(self.shape_out)
        if self.phases is not None:
            ph = self.phases
            # The carried offsets are small integers: copied, never split in pairs.
            carried = None if r3 is None else ph.taps(ph.copies(r3, split=False))
            _first_max(ph.target(vout, self.shape_out), ph.target(rel_out, self.shape_out),
                       ph.taps(ph.copies(a3)), 0, self.distance, carried)
        for dst, srcs, first in self.groups:
            if not srcs:
                v3[dst] = low
                ro3[dst] = 0
                continue
            _first_max(v3[dst], ro3[dst], [a3[i] for i in srcs], first, self.distance,
                       None if r3 is None else [r3[i] for i in srcs])


def _first_max(v, rel, taps, first, distance, carried) -> None:
    """``v`` = max of ``taps``; ``rel`` = ``first`` + ``distance`` * (position of the
    first tap equal to it) + (that tap's entry of ``carried``, if any)."""
    fmax_fold(v, taps)
    kind = rel.dtype.type
    if carried is None:
        # The position is the number of leading taps that differ from the maximum.
        rel[...] = 0
        later = None  # the first maximum comes after tap t
        for t in range(1, len(taps)):
            ne = np.not_equal(taps[t - 1], v)
            later = ne if later is None else np.logical_and(later, ne, out=later)
            rel += later.view(np.uint8)  # True is 1: adding the bytes needs no cast
        if distance != 1 and len(taps) > 1:
            rel *= kind(distance)
        if first:
            rel += kind(first)
        return
    np.add(carried[0], kind(first), out=rel)
    later = None
    for t in range(1, len(taps)):
        ne = np.not_equal(taps[t - 1], v)
        later = ne if later is None else np.logical_and(later, ne, out=later)
        step = np.subtract(carried[t], carried[t - 1])
        step += kind(distance)
        step *= later.view(np.uint8) if kind is np.uint8 else later
        rel += step


def _finish(out: np.ndarray, low: np.generic) -> bool:
    """Raise what is below the running maximum's start value to it (NaN included).

    Returns whether some value is now the start value (a window with nothing above it).
    """
    m = out.min()
    if out.dtype.kind == "f":
        if not m >= low:  # NaN, or -inf below f32's lowest
            np.fmax(out, low, out=out)
            return True
    elif m < low:
        np.maximum(out, low, out=out)
        return True
    return bool(m == low)


def has_negative_zero(a: np.ndarray) -> bool:
    """Whether float ``a`` holds -0.0: read as signed integers it is the least value.

    >>> has_negative_zero(np.array([0.0, -1.0], np.float32)), has_negative_zero(np.float16([-0.0]))
    (False, True)
    """
    if a.size == 0:
        return False
    signed, least = _SIGNED[a.dtype.itemsize]
    return bool(a.view(signed).min() == least)


# Float size -> the signed integers of that size and their least value (-0.0's bits).
_SIGNED = {n: (np.dtype(f"i{n}"), np.iinfo(f"i{n}").min) for n in (2, 4, 8)}


def _zero_signs(xc: np.ndarray, w: Windows, out: np.ndarray) -> None:
    """Give each zero maximum the sign of the window's first zero in row-major order.

    ``fmax`` picks either zero of a tie, and NumPy's choice differs between its
    loops; OpenVINO keeps the first.  Maxima of exactly zero are rare, so they are
    redone here one tap at a time over just those positions.
    """
    zero = out == 0
    # Only -0.0 among the inputs can make a zero maximum's sign wrong; ReLU outputs
    # are full of zero maxima, all +0.0.
    if not zero.any() or not has_negative_zero(xc):
        return
    where = np.flatnonzero(zero)
    coords = np.unravel_index(where, out.shape)
    found = np.zeros(where.size, bool)
    negative = np.zeros(where.size, bool)
    for tap in w.taps():
        pos, valid = [coords[0]], np.ones(where.size, bool)
        for ax, o, j in zip(w.axes, coords[1:], tap, strict=True):
            i = o * ax.stride + ax.offset(j)
            valid &= (i >= 0) & (i < ax.size)
            pos.append(np.clip(i, 0, ax.size - 1))
        v = xc[tuple(pos)]
        first = valid & ~found & (v == 0)
        negative |= first & np.signbit(v)
        found |= first
    out.reshape(-1)[where] = np.where(negative, -0.0, 0.0).astype(out.dtype)


class _Plan:
    """Everything about one max pool over one input shape and type, worked out once."""

    def __init__(self, shape: tuple[int, ...], a: SimpleNamespace, dtype: np.dtype) -> None:
        self.w = w = Windows.of(shape[2:], a)
        self.dtype, self.low = dtype, lowest(dtype)
        self.planes = shape[0] * shape[1]
        self.plane = int(np.prod(shape[2:], dtype=np.int64))
        self._starts: dict[int, np.ndarray] = {}
        # Index within a plane (may be negative for a window starting in the padding).
        self.within_dtype = np.dtype(np.int64 if self.plane >= 2**31 else np.int32)
        # Offsets of a tap from its window's first tap, as carried by _AxisArgmax.
        reach = sum((k - 1) * d * st for k, d, st in zip(w.kernel, w.dilations, w.steps,
                                                          strict=True))
        self.rel_dtype = next(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                              if reach <= np.iinfo(t).max)
        plane_bytes = self.plane * dtype.itemsize
        self.chunks = plane_chunks(self.planes, plane_bytes, CHUNK_BYTES)
        # A first pass that keeps the size (stride 1) would hold a copy of the whole
        # input: then chunks of half the planes, so that a run needs at most 2.5
        # times the input (input, output, half an intermediate).
        order = [i for i, ax in enumerate(w.axes) if not ax.identity]
        target = CHUNK_BYTES
        if len(order) > 1 and w.out[order[0]] == w.sizes[order[0]]:
            target = min(target, max(plane_bytes, self.planes * plane_bytes // 2))
        self.value_chunks = plane_chunks(self.planes, plane_bytes, target)
        self.value_target = target
        self._values: dict[int, list] = {}
        self._indices: dict[int, list] = {}

    def _axis_runs(self, p: int, order: list[int]):
        """(axis, rows before it, elements after it, shape after it) for each pass."""
        spatial = list(self.w.sizes)
        for i in order:
            outer = p * int(np.prod(spatial[:i], dtype=np.int64))
            inner = int(np.prod(spatial[i + 1 :], dtype=np.int64))
            spatial[i] = self.w.out[i]
            yield i, outer, inner, (p, *spatial)

    def values_passes(self, p: int) -> list:
        """Passes over a chunk of ``p`` planes, outer axes first.

        The value of a maximum does not depend on the order the axes are reduced
        in; reducing the outer ones first leaves the strided innermost pass the
        least data.
        """
        if p not in self._values:
            order = [i for i, ax in enumerate(self.w.axes) if not ax.identity]
            slide = self.dtype.kind == "f"
            size = self.dtype.itemsize
            self._values[p] = [(_AxisMax(self.w.axes[i], outer, inner, slide, size), shape)
                               for i, outer, inner, shape in self._axis_runs(p, order)]
        return self._values[p]

    def index_passes(self, p: int) -> list:
        """Passes over a chunk of ``p`` planes, innermost axis first (see _AxisArgmax)."""
        if p not in self._indices:
            w, order = self.w, list(range(len(self.w.sizes)))[::-1]
            self._indices[p] = [
                (_AxisArgmax(w.axes[i], outer, inner, w.steps[i], self.dtype.itemsize), shape)
                for i, outer, inner, shape in self._axis_runs(p, order)
            ]
        return self._indices[p]

    @functools.cached_property
    def first_taps(self) -> np.ndarray:
        """The index in the plane of each window's first tap (negative in the padding)."""
        first = np.zeros(self.w.out, self.within_dtype)
        for i, (ax, st) in enumerate(zip(self.w.axes, self.w.steps, strict=True)):
            shape = [1] * len(self.w.out)
            shape[i] = ax.out
            starts = np.arange(ax.out) * ax.stride + ax.offset(0)
            first = first + (starts * st).astype(self.within_dtype).reshape(shape)
        return first[None]

    def plane_starts(self, modulo: int) -> np.ndarray:
        """The index of each plane's first element, modulo ``modulo``, shaped to broadcast."""
        if modulo not in self._starts:
            starts = (np.arange(self.planes, dtype=np.int64) * self.plane) % modulo
            self._starts[modulo] = starts.reshape((self.planes,) + (1,) * len(self.w.out))
        return self._starts[modulo]


def applies(w: Windows) -> bool:
    """Whether the fast kernel takes a pool of geometry ``w`` (see the module's docstring)."""
    return w.tame and all(ax.border_count() <= MAX_BORDERS for ax in w.axes)


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple[int, ...], key: tuple, dtype: np.dtype) -> _Plan | None:
    """The plan for a pool, or None where the fast kernel does not apply."""
    kernel, strides, dilations, pb, pe, auto_pad, rounding = key
    a = SimpleNamespace(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb,
                        pads_end=pe, auto_pad=auto_pad, rounding_type=rounding)
    return _Plan(shape, a, dtype) if applies(Windows.of(shape[2:], a)) else None


def plan_of(shape: tuple[int, ...], a: SimpleNamespace, dtype: np.dtype) -> _Plan | None:
    """The plan of a pool of ``shape`` and ``dtype`` (None: the fast kernel does not apply)."""
    zeros = (0,) * len(a.kernel)
    key = (tuple(a.kernel), tuple(a.strides), pool_dilations(a), tuple(a.pads_begin) or zeros,
           tuple(a.pads_end) or zeros, a.auto_pad, a.rounding_type)
    return _plan(shape, key, dtype)


def max_pool(
    plan: _Plan,
    x: np.ndarray,
    with_indices: bool = True,
    with_values: bool = True,
    index_dtype: np.dtype | type = np.int64,
    axis: int = 0,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Max-pool ``x`` (N, C, *spatial) as ``plan`` says; return values and flat indices
    (modulo ``prod(x.shape[axis:])``).

    >>> a = SimpleNamespace(kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(0,),
    ...                     rounding_type="floor", auto_pad="explicit")
    >>> x = np.array([[[1., np.nan, 3., 3.]]], np.float32)
    >>> v, i = max_pool(plan_of(x.shape, a, x.dtype), x)
    >>> v.tolist(), i.tolist()
    ([[[1.0, 3.0, 3.0]]], [[[0, 2, 2]]])
    """
    w, low = plan.w, plan.low
    x = np.ascontiguousarray(x)
    xp = x.reshape(plan.planes, *w.sizes)
    values = np.empty((plan.planes, *w.out), x.dtype)
    shape = x.shape[:2] + w.out
    floats = x.dtype.kind == "f"
    plane_bytes = plan.plane * x.dtype.itemsize
    if not with_indices:

        def values_of(ch: slice) -> None:
            passes = plan.values_passes(ch.stop - ch.start)
            if not passes:  # every axis is the identity, but NaN still never wins
                np.copyto(values[ch], xp[ch])
                _finish(values[ch], low)
                return
            cur = xp[ch]
            for n, (run, out_shape) in enumerate(passes):
                dst = values[ch] if n == len(passes) - 1 else np.empty(out_shape, x.dtype)
                run(cur, dst, low)
                cur = dst
            _finish(values[ch], low)
            if floats:
                _zero_signs(xp[ch], w, values[ch])

        each_chunk(plan.planes, plane_bytes, plan.value_chunks, values_of, plan.value_target)
        return values.reshape(shape), None
    first = plan.first_taps
    modulo = int(np.prod(x.shape[axis:], dtype=np.int64))
    plane_start = plan.plane_starts(modulo)
    index = np.empty((plan.planes, *w.out), index_dtype)

    def indices_of(ch: slice) -> None:
        p = ch.stop - ch.start
        cur, rel = xp[ch], None
        passes = plan.index_passes(p)
        for n, (run, out_shape) in enumerate(passes):
            v = values[ch] if n == len(passes) - 1 else np.empty(out_shape, x.dtype)
            rel_out = np.empty(out_shape, plan.rel_dtype)
            run(cur, rel, v, rel_out, low)
            cur, rel = v, rel_out
        vals = values[ch]
        some_empty = _finish(vals, low)
        idx = index[ch]
        if modulo < plan.plane:  # the axis is inside the plane: take the index apart
            within = np.add(rel, first, dtype=plan.within_dtype)
            within %= modulo
            np.add(within, plane_start[ch], out=idx, casting="unsafe")
        else:  # the two terms that broadcast first: a cast of rel to the index type costs
            np.add(plane_start[ch], first, out=idx, casting="unsafe")
            np.add(idx, rel, out=idx, casting="unsafe")
        if floats:
            zero = vals == 0
            if zero.any():  # fmax may pick either zero of a tie; the first one wins
                where = np.nonzero(zero)
                inside = (rel[where] + first[(0, *where[1:])]).astype(np.int64)
                vals[where] = xp[ch].reshape(p, -1)[where[0], inside]
        # Nothing strictly above the start value: the window keeps the plane's start.
        if some_empty:
            empty = vals == low
            idx[empty] = np.broadcast_to(plane_start[ch], idx.shape)[empty]

    each_chunk(plan.planes, plane_bytes, plan.chunks, indices_of, CHUNK_BYTES)
    return (values.reshape(shape) if with_values else None), index.reshape(shape)




def _run(version: int):
    def run(a: SimpleNamespace, x: np.ndarray, needed=(True, True)) -> tuple | object:
        plan = plan_of(x.shape, a, computed_type(x.dtype))
        if plan is None:
            return NotImplemented
        work = computed(x)
        with np.errstate(all="ignore"):  # NaN and infinities are values here
            if version == 1:
                values, _ = max_pool(plan, work, with_indices=False)
                return (restored(values, x.dtype, truncate=True),)
            values, index = max_pool(plan, work, with_indices=needed[1], with_values=needed[0],
                                     index_dtype=a.index_element_type.dtype,
                                     axis=normalized_axis(a.axis, x.ndim))
        return restored(values, x.dtype, truncate=True), index

    return run


def takes(a: SimpleNamespace, inputs, outputs) -> bool:
    """Whether the fast kernel runs on an input of these infos (its geometry applies,
    worked out without making its plan, which may be as large as the tensors)."""
    (x,) = inputs
    return applies(Windows.of(tuple(x.shape[2:]), with_defaults(a)))


def scratch(a: SimpleNamespace, inputs, outputs) -> int:
    """A contiguous and a converted copy of the input, the values in the type pooled in,
    and per chunk in flight its passes' intermediates, phase copies and offsets (a pass
    that keeps the size may hold half the input)."""
    (x,) = inputs
    size = int(np.prod(x.shape, dtype=object))
    work = computed_type(x.element_type.dtype).itemsize
    out = int(np.prod(outputs[0].shape, dtype=object))
    return (size * (x.element_type.dtype.itemsize + 2 * work) + out * work
            + 8 * in_flight(size * work, CHUNK_BYTES))


for _version in (1, 8, 14):
    register_fast(
        FastKernel(
            "MaxPool", (_version,),
            applies=f"geometry within the input (kernel and dilation at most the axis, strides "
                    f"and pads below 2**31) and at most {MAX_BORDERS} border outputs per axis",
            run=_run(_version), scratch=scratch, takes=takes,
        )
    )
