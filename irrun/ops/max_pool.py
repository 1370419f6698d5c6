"""MaxPool-1, MaxPool-8 and MaxPool-14.

Semantics (OpenVINO's reference kernel and CPU plugin agree): padded taps are
skipped, not read as -inf; the running maximum starts at the dtype's lowest
value and is replaced only by a strictly greater element, so NaN never wins,
ties go to the first tap in row-major order, and a window with no valid tap
yields the lowest value with the index of the start of its (n, c) plane.
Indices are flat over the whole input, taken modulo ``prod(shape[axis:])``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir import element_types
from ..ir.attributes import Attr
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import pool_windows
from .window import (
    AUTO_PADS,
    POOL_TYPES,
    ROUNDING_TYPES,
    Axis,
    Windows,
    check_pool_attributes,
    computed,
    each_chunk,
    plane_chunks,
    pool_dilations,
    pooled_shape,
    restored,
    with_defaults,
)

COMMON_ATTRS = (
    Attr("strides", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("kernel", "ints"),
    Attr("rounding_type", "enum", "floor", ROUNDING_TYPES),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
)
V8_ATTRS = (
    *COMMON_ATTRS,
    Attr("dilations", "ints", ()),
    Attr("index_element_type", "element_type", element_types.ELEMENT_TYPES["i64"]),
    Attr("axis", "int", 0),
)
SHAPE_ATTRS = ("kernel", "strides", "dilations", "pads_begin", "pads_end", "auto_pad",
               "rounding_type")  # fmt: skip


def lowest(dtype: np.dtype) -> np.generic:
    """The start value of a running maximum, as OpenVINO's CPU plugin has it.

    Floats use f32's lowest finite value (which becomes -inf in f16); integers their
    minimum, except i64, which the plugin computes as i32.

    >>> lowest(np.dtype(np.float16)), lowest(np.dtype(np.uint8)), lowest(np.dtype(np.int64))
    (np.float16(-inf), np.uint8(0), np.int64(-2147483648))
    """
    if dtype.kind == "f":
        with np.errstate(over="ignore"):
            return np.array(np.finfo(np.float32).min).astype(dtype)[()]
    if dtype == np.int64:
        return np.array(np.iinfo(np.int32).min, dtype)[()]
    return np.array(np.iinfo(dtype).min, dtype)[()]


def _check(version: int):
    def check(a: SimpleNamespace) -> None:
        check_pool_attributes(with_defaults(a), allow_ceil_torch=version >= 14)
        if version >= 8 and a.index_element_type.name not in ("i32", "i64"):
            raise KernelError(
                f"index_element_type must be i32 or i64, got {a.index_element_type.name}"
            )

    return check


def _normalized_axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"axis {axis} is out of range for a rank-{rank} input")
    return axis % rank


def infer_max_pool(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    a = with_defaults(a)
    out_shape = pooled_shape(x.shape, a)
    values = TensorInfo(out_shape, x.element_type)
    if not hasattr(a, "index_element_type"):
        return [values]
    if x.shape is not None:
        _normalized_axis(a.axis, len(x.shape))
    return [values, TensorInfo(out_shape, a.index_element_type)]


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
            and itemsize in _PAIRS and sys.byteorder == "little")  # fmt: skip


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
                         for c in offsets]  # fmt: skip
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
                                          for c in offsets])  # fmt: skip
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
                            [(_ALL, slice(lo * s + c, last + c, s)) for c in offsets])  # fmt: skip
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
                       ph.taps(ph.copies(a3)), 0, self.distance, carried)  # fmt: skip
        for dst, srcs, first in self.groups:
            if not srcs:
                v3[dst] = low
                ro3[dst] = 0
                continue
            _first_max(v3[dst], ro3[dst], [a3[i] for i in srcs], first, self.distance,
                       None if r3 is None else [r3[i] for i in srcs])  # fmt: skip


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
        # Kernels, dilations or pads past the input's size: clipped windows instead.
        self.general = None
        if not w.tame:
            self.general = pool_windows.Windows(
                w.sizes, [(f, c, d) for (f, c), d in zip(w.clipped(), w.dilations, strict=True)])
            self.chunks = plane_chunks(self.planes, self.plane * dtype.itemsize, CHUNK_BYTES)
            return
        # Index within a plane (may be negative for a window starting in the padding).
        self.within_dtype = np.dtype(np.int64 if self.plane >= 2**31 else np.int32)
        # Offsets of a tap from its window's first tap, as carried by _AxisArgmax.
        reach = sum((k - 1) * d * st for k, d, st in zip(w.kernel, w.dilations, w.steps,
                                                          strict=True))  # fmt: skip
        self.rel_dtype = next(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)
                              if reach <= np.iinfo(t).max)  # fmt: skip
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
                               for i, outer, inner, shape in self._axis_runs(p, order)]  # fmt: skip
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


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple[int, ...], key: tuple, dtype: np.dtype) -> _Plan:
    kernel, strides, dilations, pb, pe, auto_pad, rounding = key
    a = SimpleNamespace(kernel=kernel, strides=strides, dilations=dilations, pads_begin=pb,
                        pads_end=pe, auto_pad=auto_pad, rounding_type=rounding)  # fmt: skip
    return _Plan(shape, a, dtype)


def max_pool(
    x: np.ndarray,
    a: SimpleNamespace,
    with_indices: bool = True,
    with_values: bool = True,
    index_dtype: np.dtype | type = np.int64,
    axis: int = 0,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Max-pool ``x`` (N, C, *spatial); return values and flat indices.

    The pool is separable: a maximum over a window is the maximum over its rows
    of the maxima along them, so each spatial axis is reduced on its own.  Indices
    are flat over the whole input, modulo ``prod(x.shape[axis:])``.

    >>> a = SimpleNamespace(kernel=(2,), strides=(1,), pads_begin=(0,), pads_end=(0,),
    ...                     rounding_type="floor", auto_pad="explicit")
    >>> v, i = max_pool(np.array([[[1., np.nan, 3., 3.]]], np.float32), a)
    >>> v.tolist(), i.tolist()
    ([[[1.0, 3.0, 3.0]]], [[[0, 2, 2]]])
    """
    zeros = (0,) * len(a.kernel)
    key = (tuple(a.kernel), tuple(a.strides), pool_dilations(a), tuple(a.pads_begin) or zeros,
           tuple(a.pads_end) or zeros, a.auto_pad, a.rounding_type)  # fmt: skip
    plan = _plan(x.shape, key, x.dtype)
    if plan.general is not None:
        return _max_pool_windows(plan, x, with_indices, with_values, index_dtype, axis)
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


def _max_pool_windows(plan: _Plan, x, with_indices, with_values, index_dtype, axis) -> tuple:
    """:func:`max_pool` through :mod:`.pool_windows`, for windows past the input's size."""
    win, w = plan.general, plan.w
    xp = np.ascontiguousarray(x).reshape(plan.planes, *w.sizes)
    values = np.empty((plan.planes, *win.shape), x.dtype)
    where = np.empty((plan.planes, *win.shape), np.int64)

    def maxima(ch: slice) -> None:
        values[ch], where[ch] = win.maxima(xp[ch], plan.low)

    each_chunk(plan.planes, plan.plane * x.dtype.itemsize, plan.chunks, maxima, CHUNK_BYTES)
    shape = x.shape[:2] + w.out
    values = win.expand(values).reshape(shape) if with_values else None
    if not with_indices:
        return values, None
    modulo = int(np.prod(x.shape[axis:], dtype=np.int64))
    index = win.expand(where)
    index += plan.plane_starts(plan.planes * plan.plane)  # the plane's start, below modulo
    index %= modulo
    return values, index.astype(index_dtype).reshape(shape)


def _kernel(version: int):
    def kernel(a: SimpleNamespace, x: np.ndarray, needed=(True, True)) -> tuple:
        work = computed(x)
        # NaN and infinities are values like any other here, never a warning.
        with np.errstate(all="ignore"):
            if version == 1:
                values, _ = max_pool(work, a, with_indices=False)
                return (restored(values, x.dtype, truncate=True),)
            axis = _normalized_axis(a.axis, x.ndim)
            values, index = max_pool(work, a, with_indices=needed[1], with_values=needed[0],
                                     index_dtype=a.index_element_type.dtype, axis=axis)  # fmt: skip
        return restored(values, x.dtype, truncate=True), index

    return kernel


for _version, _since, _attrs in ((1, 1, COMMON_ATTRS), (8, 8, V8_ATTRS), (14, 14, V8_ATTRS)):
    register(
        OpDef(
            type="MaxPool",
            version=_version,
            since_opset=_since,
            attrs=_attrs,
            infer=infer_max_pool,
            kernel=_kernel(_version),
            check=_check(_version),
            shape_attrs=SHAPE_ATTRS,
            optional_outputs=_version >= 8,
            input_types=(POOL_TYPES,),
        )
    )
