"""Sliding-window geometry shared by every pooling op (and convolution).

This module is the one place that knows how big a pooled output is
(:func:`output_size`), how ``auto_pad`` turns into pads (:func:`resolve_pads`),
and where each window's taps fall (:func:`clip_windows`).  Shape rules, reference
kernels and fast kernels all call it, so the shape irrun checks is the shape irrun
computes.  The reference pools reduce :func:`window_elements`: every window's elements
gathered, in the order OpenVINO scans them.

Conventions (OpenVINO's): on each spatial axis the window for output ``o``
has taps at ``o*stride - pad_begin + j*dilation`` for ``j in range(kernel)``;
a tap outside ``[0, size)`` is padding.  ``pad_end`` only affects the size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import ml_dtypes
import numpy as np

from ..errors import KernelError
from ..ir.dims import DYNAMIC, Dim, Shape, map_bounds
from ..ir.element_types import NUMBERS
from ..ir.registry import ShapeError

ROUNDING_TYPES = ("floor", "ceil", "ceil_torch")
AUTO_PADS = ("explicit", "same_upper", "same_lower", "valid")
# OpenVINO's dims are int64: a pooled size past this cannot be a tensor's.
MAX_DIM = 2**63 - 1
# Geometry above this (strides, pads) leaves int64 no room for products with a position.
_TAME_VALUE = 2**31


# The element types of the data every pool op takes.  OpenVINO's op classes check
# none (any type infers), so these are the types its CPU plugin compiles a pool for
# and irrun computes as the plugin does; f8, u4/i4 and the rest are refused.
POOL_TYPES = (*NUMBERS, "boolean")

_BF16 = np.dtype(ml_dtypes.bfloat16)
# The plugin pools these in another type: booleans as u8, bf16 in f32, and 16-bit
# and unsigned 32/64-bit integers as i32 (wrapping: u32 2**31 is -2**31 there).
_COMPUTED_IN = {np.dtype(np.bool_): np.dtype(np.uint8), _BF16: np.dtype(np.float32),
                **{np.dtype(t): np.dtype(np.int32)
                   for t in (np.int16, np.uint16, np.uint32, np.uint64)}}


def computed(x: np.ndarray) -> np.ndarray:
    """``x`` in the type the CPU plugin pools it in (see ``_COMPUTED_IN``).

    >>> computed(np.array([True, False])).dtype, computed(np.uint32([2**31])).tolist()
    (dtype('uint8'), [-2147483648])
    """
    work = _COMPUTED_IN.get(x.dtype)
    if work is None:
        return x
    if x.dtype == np.bool_:
        return x.view(np.uint8)
    return x.astype(work)


def computed_type(dtype: np.dtype) -> np.dtype:
    """The type :func:`computed` gives an array of ``dtype``."""
    return _COMPUTED_IN.get(dtype, dtype)


def restored(y: np.ndarray, dtype: np.dtype, truncate: bool = False) -> np.ndarray:
    """A pool's result ``y`` (of :func:`computed`'s type) back in ``dtype``.

    Integers wrap, as the plugin narrows them.  f32 becomes bf16 rounded to nearest
    even, or with ``truncate`` by dropping the low half: that is how the plugin's
    max pool turns f32's lowest value into bf16's (-3.39e38, not -inf).
    """
    if y is None or y.dtype == dtype:
        return y
    if dtype == _BF16 and truncate:
        return (y.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(_BF16)
    return y.astype(dtype)


def dilated(kernel: int, dilation: int) -> int:
    return dilation * (kernel - 1) + 1


def resolve_pads(
    size: int, kernel: int, stride: int, dilation: int, auto_pad: str, pad_begin: int, pad_end: int
) -> tuple[int, int]:
    """The pads OpenVINO uses on one axis: XML pads for ``explicit``, else computed.

    ``same_*`` pads make ``ceil(size/stride)`` windows fit; the odd pad goes at the
    end for ``same_upper`` and at the beginning for ``same_lower``.

    >>> resolve_pads(9, 2, 2, 1, "same_upper", 5, 5), resolve_pads(9, 2, 2, 1, "same_lower", 0, 0)
    ((0, 1), (1, 0))
    """
    if auto_pad == "valid":
        return 0, 0
    if auto_pad in ("same_upper", "same_lower"):
        total = max(0, (-(-size // stride) - 1) * stride + dilated(kernel, dilation) - size)
        small, large = total // 2, total - total // 2
        return (small, large) if auto_pad == "same_upper" else (large, small)
    return pad_begin, pad_end


def output_size(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, pad_end: int, rounding: str
) -> int:
    """Number of windows on one axis. The only copy of the pooling size formula.

    ``ceil`` may add a window that starts past the input; ``ceil_torch`` drops a
    last window that would start in the end padding.

    >>> [output_size(3, 2, 2, 1, 1, 1, r) for r in ROUNDING_TYPES]
    [2, 3, 2]
    """
    span = size + pad_begin + pad_end - dilated(kernel, dilation)
    if span < 0:
        raise ShapeError(
            f"kernel after dilation ({dilated(kernel, dilation)}) is larger than the padded "
            f"input ({size + pad_begin + pad_end})"
        )
    if rounding == "floor":
        count = span // stride + 1
    else:
        steps = -(-span // stride)
        # OpenVINO compares in unsigned arithmetic: with nothing before the end padding
        # (size + pad_begin == 0) the right side wraps around and the last window stays.
        last_start_fits = size + pad_begin == 0 or steps * stride <= size + pad_begin - 1
        count = steps + 1 if rounding == "ceil" or last_start_fits else steps
    if count > MAX_DIM:
        raise ShapeError(f"{count} windows do not fit in a dim (at most {MAX_DIM})")
    return count


def clip_windows(
    size: int, kernel: int, stride: int, dilation: int, pad_begin: int, out: int
) -> tuple[np.ndarray, np.ndarray]:
    """Where each window's taps inside the input start, and how many there are.

    Window ``o``'s taps inside ``[0, size)`` are ``first[o] + t*dilation`` for
    ``t < count[o]`` (count 0: the window holds no element).  Closed forms, so the
    work is one pass over the outputs whatever the kernel, pads or dilation; exact
    for values of any size (Python integers where int64 could overflow).

    >>> [v.tolist() for v in clip_windows(5, 2**40, 2, 1, 2**39, 3)]
    [[0, 0, 0], [5, 5, 5]]
    >>> [v.tolist() for v in clip_windows(5, 3, 3, 2, 2, 3)]
    [[0, 1, 4], [2, 2, 1]]
    """
    bound = out * stride + pad_begin + kernel * dilation + size + dilation
    o = np.arange(out, dtype=np.int64 if bound < 2**62 else object)
    start = o * stride - pad_begin
    # The first tap at or after 0 and the last before ``size`` (floor divisions).
    low = np.maximum((dilation - 1 - start) // dilation, 0)
    high = np.minimum((size - 1 - start) // dilation, kernel - 1)
    count = np.maximum(high - low + 1, 0)
    first = np.where(count > 0, start + low * dilation, 0)
    return first.astype(np.int64), count.astype(np.int64)


def distinct_windows(
    first: np.ndarray, count: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The windows of one axis that hold different elements, and each output's among them.

    Windows are given as :func:`clip_windows` gives them (``first`` is 0 where ``count``
    is 0).  Returns the distinct ones' ``first`` and ``count`` and, for each output, the
    index of its window among them.

    >>> [v.tolist() for v in distinct_windows(np.array([0, 0, 1, 0]), np.array([2, 2, 2, 0]), 3)]
    [[0, 0, 1], [0, 2, 2], [1, 1, 2, 0]]
    """
    _, pick, inverse = np.unique(first * (size + 1) + count, return_index=True,
                                 return_inverse=True)
    return first[pick], count[pick], inverse.reshape(-1)


def window_elements(
    x: np.ndarray, axes: Sequence[tuple[np.ndarray, np.ndarray, int]], fill: object,
    dtype: np.dtype | None = None,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The elements of every distinct window of ``x`` (N, C, *sizes), taps in row-major order.

    ``axes`` holds, per spatial axis, each output's window as ``(first, count, step)``:
    its taps inside the input are ``first + t*step`` for ``t < count`` (see
    :func:`clip_windows`).  Outputs of an axis whose windows hold the same elements share
    one (:func:`distinct_windows`), and a window is as long as its taps inside the input,
    so the work is bounded by the input and the output whatever the kernel, pads or
    dilations say: a million outputs in the padding are one window of no element.
    Windows shorter than the longest read ``fill`` after their elements, at the plane's
    end (``fill`` must leave the reduction unchanged).  ``dtype``: the elements cast to it.

    Returns ``(taps, positions, inverse)``: ``taps`` (N*C, *distinct, T), each tap's flat
    position in the plane (*distinct, T; the plane's size where it reads ``fill``) and,
    per axis, each output's distinct window (see :func:`spread`).

    >>> x = np.arange(5.0).reshape(1, 1, 5)  # windows [0, 1], [2, 3, 4], [4] and [0, 1]
    >>> taps, where, inverse = window_elements(x, [(np.array([0, 2, 4, 0]),
    ...                                             np.array([2, 3, 1, 2]), 1)], -1.0)
    >>> taps.tolist()
    [[[0.0, 1.0, -1.0], [2.0, 3.0, 4.0], [4.0, -1.0, -1.0]]]
    >>> where.tolist(), inverse[0].tolist()
    ([[0, 1, 5], [2, 3, 4], [4, 5, 5]], [0, 1, 2, 0])
    """
    p, sizes = x.shape[0] * x.shape[1], x.shape[2:]
    plane = int(np.prod(sizes, dtype=np.int64))
    n = len(sizes)
    flat = np.empty((p, plane + 1), dtype or x.dtype)
    flat[:, :plane] = x.reshape(p, plane)
    flat[:, plane] = fill
    # Positions over (*distinct, *taps per axis): each axis adds its part, broadcast.
    position, inside, inverse = np.zeros((), np.int64), np.ones((), bool), []
    for i, ((first, count, step), size) in enumerate(zip(axes, sizes, strict=True)):
        first, count, which = distinct_windows(first, count, size)
        t = np.arange(max(int(count.max(initial=0)), 1))
        shape = [1] * (2 * n)
        shape[i], shape[n + i] = len(first), len(t)
        spacing = int(np.prod(sizes[i + 1 :], dtype=np.int64))  # of neighbours on the axis
        # Past its count a tap may lie past the input (masked below): never past 2 * size.
        position = position + ((first[:, None] + t * min(step, size)) * spacing).reshape(shape)
        inside = inside & (t < count[:, None]).reshape(shape)
        inverse.append(which)
    distinct = position.shape[:n]
    positions = np.where(inside, position, plane).reshape(*distinct, -1)
    return flat[:, positions], positions, inverse


def spread(a: np.ndarray, inverse: Sequence[np.ndarray]) -> np.ndarray:
    """``a`` (N*C, *distinct) over the outputs: each takes its distinct window's value."""
    for i, which in enumerate(inverse):
        a = np.take(a, which, axis=i + 1)
    return a


# Outputs per axis past which :func:`window_counts` bounds the distinct windows by the
# outputs instead of counting them (the output itself is then of that size at least).
_COUNTED = 1 << 24


def window_counts(w: Windows) -> tuple[int, int]:
    """(distinct windows, taps per window) that :func:`window_elements` takes for ``w``,
    at most: what a kernel's scratch grows with."""
    windows = taps = 1
    for ax in w.axes:
        if ax.out > _COUNTED:
            windows *= ax.out
            taps *= max(min(ax.kernel, -(-ax.size // ax.dilation)), 1)
            continue
        first, count = clip_windows(ax.size, ax.kernel, ax.stride, ax.dilation, ax.pad_begin,
                                    ax.out)
        first, count, _ = distinct_windows(first, count, ax.size)
        windows *= len(first)
        taps *= max(int(count.max(initial=0)), 1)
    return windows, taps


def check_pool_attributes(a: SimpleNamespace, allow_ceil_torch: bool) -> None:
    """Attribute checks that need no input shape. Raises ValueError."""
    n = len(a.kernel)
    if n == 0:
        raise KernelError("kernel must not be empty")
    if a.auto_pad not in AUTO_PADS:
        raise KernelError(f"auto_pad '{a.auto_pad}' is not one of {', '.join(AUTO_PADS)}")
    lists = {"strides": a.strides, "pads_begin": a.pads_begin, "pads_end": a.pads_end}
    if hasattr(a, "dilations"):
        lists["dilations"] = a.dilations
    for name, values in lists.items():
        if len(values) != n:
            raise KernelError(
                f"{name} has {len(values)} values {list(values)} "
                f"but kernel has {n} {list(a.kernel)}"
            )
    for name, values in (("kernel", a.kernel), ("strides", a.strides), *(
        [("dilations", a.dilations)] if hasattr(a, "dilations") else []
    )):
        if any(v <= 0 for v in values):
            raise KernelError(f"{name} must be positive, got {list(values)}")
    for name in ("pads_begin", "pads_end"):
        if any(v < 0 for v in lists[name]):
            raise KernelError(f"{name} must not be negative, got {list(lists[name])}")
    if a.rounding_type == "ceil_torch" and not allow_ceil_torch:
        raise KernelError("rounding_type ceil_torch needs MaxPool-14, AvgPool-14 or AvgPool-16")


def with_defaults(a: SimpleNamespace) -> SimpleNamespace:
    """Empty pad lists mean zeros and empty dilations ones, as OpenVINO reads them.

    (``ov.save_model`` writes ``dilations=""`` for a MaxPool built without them.)
    """
    n = len(a.kernel)
    filled = {"pads_begin": tuple(a.pads_begin) or (0,) * n,
              "pads_end": tuple(a.pads_end) or (0,) * n}
    if hasattr(a, "dilations"):
        filled["dilations"] = tuple(a.dilations) or (1,) * n
    return SimpleNamespace(**{**vars(a), **filled})


def pool_dilations(a: SimpleNamespace) -> tuple[int, ...]:
    """Dilations, or ones for ops without them (and for an IR that omits them)."""
    d = getattr(a, "dilations", ())
    return tuple(d) if d else (1,) * len(a.kernel)


def pooled_shape(shape: Shape | None, a: SimpleNamespace, exclude_pad: bool | None = None) -> Shape:
    """Output shape of a sliding-window pool, intervals included.

    ``exclude_pad`` (AvgPool only) adds OpenVINO's rule that with excluded padding
    a window may never lie entirely in the padding.
    """
    n = len(a.kernel)
    dil = pool_dilations(a)
    if shape is None:
        return (DYNAMIC,) * (n + 2)
    if len(shape) not in (3, 4, 5):
        raise ShapeError(f"expected a 3D, 4D or 5D input, got rank {len(shape)}")
    if len(shape) - 2 != n:
        raise ShapeError(
            f"kernel {list(a.kernel)} has {n} values but the input has {len(shape) - 2} "
            f"spatial dims"
        )
    for axis, what in ((0, "batch"), (1, "channel")):
        if shape[axis] == 0:
            raise ShapeError(f"{what} size is zero")
    out: list[Dim] = [shape[0], shape[1]]
    for i, size in enumerate(shape[2:]):
        k, s, d = a.kernel[i], a.strides[i], dil[i]
        if isinstance(size, int):
            pb, pe = resolve_pads(size, k, s, d, a.auto_pad, a.pads_begin[i], a.pads_end[i])
            if dilated(k, d) > size + pb + pe:
                raise ShapeError(
                    f"kernel after dilation has size {dilated(k, d)}, larger than the input "
                    f"after padding ({size} + {pb} + {pe} = {size + pb + pe}) at spatial axis {i}"
                )
            if exclude_pad and not (dilated(k, d) > pb and dilated(k, d) > pe):
                raise ShapeError(
                    f"kernel after dilation ({dilated(k, d)}) lies entirely in the padding "
                    f"(pads {pb}/{pe}) at spatial axis {i}, which exclude-pad forbids"
                )
            out.append(output_size(size, k, s, d, pb, pe, a.rounding_type))
        elif a.auto_pad in ("same_upper", "same_lower"):
            out.append(DYNAMIC)
        else:
            pb, pe = resolve_pads(0, k, s, d, a.auto_pad, a.pads_begin[i], a.pads_end[i])
            smallest = max(dilated(k, d) - pb - pe, 0)

            def size_of(h: int, k=k, s=s, d=d, pb=pb, pe=pe, smallest=smallest) -> int:
                return output_size(max(h, smallest), k, s, d, pb, pe, a.rounding_type)

            out.append(map_bounds(size, size_of))
    return tuple(out)


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a resolved pool: which outputs each tap reaches.

    Tap ``j`` of output ``o`` reads input ``o*stride + offset(j)``; the outputs for
    which that lies inside ``[0, size)`` form one range, so a kernel can handle a
    tap for all its outputs with one strided slice instead of a padded copy.

    >>> ax = Axis(size=5, kernel=3, stride=2, dilation=1, pad_begin=1, out=3)
    >>> [ax.reach(j) for j in range(3)], ax.full(), tuple(ax.taps_of(0))
    ([(1, 3), (0, 3), (0, 2)], (1, 2), (1, 2))
    """

    size: int
    kernel: int
    stride: int
    dilation: int
    pad_begin: int
    out: int

    def offset(self, j: int) -> int:
        return j * self.dilation - self.pad_begin

    def reach(self, j: int) -> tuple[int, int]:
        """The outputs ``[lo, hi)`` whose tap ``j`` falls inside the input."""
        c, s = self.offset(j), self.stride
        lo = min(max(0, -(c // s) if c < 0 else 0), self.out)
        hi = max(min(self.out, (self.size - 1 - c) // s + 1), lo)
        return lo, hi

    def full(self) -> tuple[int, int]:
        """The outputs ``[lo, hi)`` whose every tap falls inside (``lo >= hi``: none).

        The first tap reaches the fewest outputs at the start, the last at the end.
        """
        return self.reach(0)[0], self.reach(self.kernel - 1)[1]

    def taps_of(self, o: int) -> range:
        """The taps of output ``o`` that fall inside the input, in order (closed form)."""
        start, d = o * self.stride - self.pad_begin, self.dilation
        low = max((d - 1 - start) // d, 0)
        high = min((self.size - 1 - start) // d, self.kernel - 1)
        return range(low, max(high + 1, low))

    def borders(self) -> list[int]:
        """The outputs that some tap misses (all of them when no window is full)."""
        lo, hi = self.full()
        if lo >= hi:
            return list(range(self.out))
        return [*range(lo), *range(hi, self.out)]

    def border_count(self) -> int:
        """How many :meth:`borders` there are, without listing them (there may be 2**31)."""
        lo, hi = self.full()
        return self.out if lo >= hi else lo + self.out - hi

    @property
    def identity(self) -> bool:
        """Does pooling along this axis leave it unchanged (one tap, no step, no pad)?"""
        return (self.kernel, self.stride, self.pad_begin, self.out) == (1, 1, 0, self.size)

    @property
    def aligned(self) -> bool:
        """Stride 1 and as many outputs as inputs: tap ``j`` of every output is the
        input at one fixed distance, so a whole tensor's taps are one flat slice."""
        return self.stride == 1 and self.out == self.size


@dataclass(frozen=True)
class Windows:
    """Resolved geometry of a pool over a concrete input, one entry per spatial axis."""

    sizes: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    out: tuple[int, ...]

    @classmethod
    def of(cls, spatial: Sequence[int], a: SimpleNamespace) -> Windows:
        dil = pool_dilations(a)
        begins, ends, outs = [], [], []
        for i, size in enumerate(spatial):
            k, s, d = a.kernel[i], a.strides[i], dil[i]
            pb, pe = resolve_pads(size, k, s, d, a.auto_pad, a.pads_begin[i], a.pads_end[i])
            begins.append(pb)
            ends.append(pe)
            outs.append(output_size(size, k, s, d, pb, pe, a.rounding_type))
        return cls(
            tuple(spatial), tuple(a.kernel), tuple(a.strides), dil,
            tuple(begins), tuple(ends), tuple(outs),
        )

    @property
    def tame(self) -> bool:
        """Whether loops over the kernel's taps stay within the input's size and
        positions within int64: kernels and dilations at most the axis, strides and pads
        at most ``_TAME_VALUE`` (what the fast pools take; the reference takes any)."""
        return all(
            k <= n and d <= max(n, 1) and max(s, pb, pe) <= _TAME_VALUE
            for n, k, d, s, pb, pe in zip(self.sizes, self.kernel, self.dilations, self.strides,
                                          self.pads_begin, self.pads_end, strict=True)
        )

    def clipped(self) -> list[tuple[np.ndarray, np.ndarray, int]]:
        """Per axis, each output's taps inside the input: :func:`clip_windows`'s first
        position and count, and the distance between taps (the dilation)."""
        return [(*clip_windows(ax.size, ax.kernel, ax.stride, ax.dilation, ax.pad_begin, ax.out),
                 ax.dilation) for ax in self.axes]

    @property
    def axes(self) -> tuple[Axis, ...]:
        return tuple(
            Axis(*fields)
            for fields in zip(self.sizes, self.kernel, self.strides, self.dilations,
                              self.pads_begin, self.out, strict=True)
        )

    @property
    def steps(self) -> tuple[int, ...]:
        """Flat distance between neighbours along each spatial axis of a plane."""
        return tuple(int(v) for v in np.cumprod((1, *self.sizes[:0:-1]))[::-1])

    def taps(self) -> Iterator[tuple[int, ...]]:
        """Kernel offsets in row-major (D, H, W) order: the order OpenVINO scans them."""
        return itertools.product(*(range(k) for k in self.kernel))

    def padded(self, x: np.ndarray, fill: float | int) -> np.ndarray:
        """``x`` surrounded by ``fill`` so that every tap of every window is inside."""
        widths = [(0, 0)] * (x.ndim - len(self.sizes))
        for i, size in enumerate(self.sizes):
            reach = (self.out[i] - 1) * self.strides[i] + (self.kernel[i] - 1) * self.dilations[
                i
            ] + 1
            widths.append((self.pads_begin[i], max(0, reach - self.pads_begin[i] - size)))
        if all(w == (0, 0) for w in widths):
            return x
        return np.pad(x, widths, mode="constant", constant_values=fill)

    def tap_view(self, padded: np.ndarray, tap: Sequence[int]) -> np.ndarray:
        """The strided view of ``padded`` that tap ``tap`` reads for every window."""
        lead = (slice(None),) * (padded.ndim - len(tap))
        return padded[
            lead
            + tuple(
                slice(j * d, j * d + (o - 1) * s + 1, s)
                for j, d, o, s in zip(tap, self.dilations, self.out, self.strides, strict=True)
            )
        ]
