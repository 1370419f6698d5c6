"""Convolution-1 and GroupConvolution-1 over 1, 2 or 3 spatial dims.

Geometry is the pooling windows' (:mod:`irrun.ops.window`): the kernel is the
filter's spatial shape, the output size uses floor rounding and ``auto_pad``
resolves pads the same way.  Padding is zeros.

Computation: the padded input is cut into one strided view per kernel tap
(im2col, never a loop over output pixels) and each group is one matrix product
of its filters ``[C_out/G, C_in/G * taps]`` with those columns, summed in f32
(f16 in f32 and rounded once).  Depthwise filters (one input and one output
channel per group) skip the matrix product and multiply-add tap by tap.  The
summation order differs from the CPU plugin's, so values agree within rounding.

Over 2 spatial dims, ordinary filters with wide outputs go to :mod:`.conv_taps`: one
GEMM per tap accumulated in place by BLAS, no column matrix.  Over 1 or 2 spatial
dims, depthwise and grouped filters, and ordinary ones with at least twice the input
channels as outputs, go to :mod:`.conv_depthwise` instead (see :func:`_tap_by_tap`):
the same depthwise sums in cache-sized blocks on the run's threads, and grouped ones
as a product per tap with no column matrix.  The paths here stay for 3-D planes, the
rest of the ordinary filters, channel multipliers, and pads or strides so far beyond
the input that a padded copy would be huge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, format_shape
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import conv_depthwise, conv_taps
from ._shapes import same_element_type, try_merge_dims
from .window import AUTO_PADS, Windows, pooled_shape, with_defaults

ATTRS = (
    Attr("strides", "ints"),
    Attr("dilations", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
)
SHAPE_ATTRS = ("strides", "dilations", "pads_begin", "pads_end", "auto_pad")


def check_attrs(a: SimpleNamespace) -> None:
    """Lengths and signs of the geometry attributes (shared with the transposed ops)."""
    n = len(a.strides)
    for name in ("dilations", "pads_begin", "pads_end"):
        values = getattr(a, name)
        if values and len(values) != n:
            raise KernelError(
                f"{name} has {len(values)} values {list(values)} but strides has {n} "
                f"{list(a.strides)}"
            )
    for name in ("strides", "dilations"):
        if any(v <= 0 for v in getattr(a, name)):
            raise KernelError(f"{name} must be positive, got {list(getattr(a, name))}")
    for name in ("pads_begin", "pads_end"):
        if any(v < 0 for v in getattr(a, name)):
            raise KernelError(f"{name} must not be negative, got {list(getattr(a, name))}")


def _geometry(a: SimpleNamespace, kernel: Sequence[int]) -> SimpleNamespace:
    """The attributes as a pooling window description with the filter's kernel."""
    n = len(kernel)
    if len(a.strides) != n:
        raise ShapeError(
            f"strides {list(a.strides)} has {len(a.strides)} values for {n} spatial dims"
        )
    pool = SimpleNamespace(
        kernel=tuple(kernel), strides=tuple(a.strides), dilations=tuple(a.dilations),
        pads_begin=tuple(a.pads_begin), pads_end=tuple(a.pads_end), auto_pad=a.auto_pad,
        rounding_type="floor",
    )  # fmt: skip
    return with_defaults(pool)


def _infer(grouped: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, filt = inputs
        et = same_element_type(inputs)
        n = len(a.strides)
        rank = n + 2
        want = rank + 1 if grouped else rank
        if filt.shape is not None and len(filt.shape) != want:
            raise ShapeError(
                f"filter {format_shape(filt.shape)} must have rank {want} for {n} spatial dims"
            )
        if data.shape is not None and len(data.shape) != rank:
            raise ShapeError(
                f"data {format_shape(data.shape)} must have rank {rank} for {n} spatial dims "
                f"(strides {list(a.strides)})"
            )
        if rank not in (3, 4, 5):
            raise ShapeError(f"expected 1 to 3 spatial dims, got {n}")
        if filt.shape is None:
            out_ch: Dim | None = None
            kernel = None
        else:
            fs = filt.shape
            out_ch = _out_channels(fs, grouped)
            in_ch = _in_channels(fs, grouped)
            kernel = fs[-n:]
            known = data.shape is not None and in_ch is not None
            if known and try_merge_dims(data.shape[1], in_ch) is None:
                raise ShapeError(
                    f"data has {data.shape[1]} channels but the filter "
                    f"{format_shape(fs)} expects {in_ch}"
                )
        if data.shape is None:
            return [TensorInfo(None, et)]
        if kernel is None or not all(isinstance(k, int) for k in kernel):
            return [TensorInfo((data.shape[0], out_ch or DYNAMIC, *([DYNAMIC] * n)), et)]
        pooled = pooled_shape(data.shape, _geometry(a, kernel))  # type: ignore[arg-type]
        return [TensorInfo((pooled[0], DYNAMIC if out_ch is None else out_ch, *pooled[2:]), et)]

    return infer


def _out_channels(fs, grouped: bool) -> Dim | None:
    if not grouped:
        return fs[0]
    g, o = fs[0], fs[1]
    if isinstance(g, int) and isinstance(o, int):
        return g * o
    return None


def _in_channels(fs, grouped: bool) -> Dim | None:
    if not grouped:
        return fs[1]
    g, i = fs[0], fs[2]
    if isinstance(g, int) and isinstance(i, int):
        return g * i
    return None


def convolve(x: np.ndarray, w: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Grouped convolution of ``x`` [N, G*Ci, *S] with ``w`` [G, Co, Ci, *K].

    >>> x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    >>> w = np.array([1, 0, -1], np.float32).reshape(1, 1, 1, 3)
    >>> a = SimpleNamespace(strides=(1,), dilations=(1,), pads_begin=(1,), pads_end=(0,),
    ...                     auto_pad="explicit")
    >>> convolve(x, w, a).tolist()
    [[[-1.0, -2.0, -2.0, -2.0]]]
    """
    groups, co, ci = w.shape[:3]
    n = w.ndim - 3
    if x.ndim != n + 2:
        raise KernelError(f"data has shape {list(x.shape)}, expected rank {n + 2}")
    if x.shape[1] != groups * ci:
        raise KernelError(
            f"data has {x.shape[1]} channels but the filter expects {groups} x {ci} = "
            f"{groups * ci}"
        )
    work = np.float32 if x.dtype.kind == "f" and x.dtype.itemsize < 4 else x.dtype
    if _pointwise(a, w.shape[3:]):
        # A 1x1 filter at stride 1 without pads is one product per group with the input as
        # it lies: no window geometry or tap views (20-40 us a layer, a fifth of a mobile
        # net's 1x1 layer).
        batch, planes = x.shape[0], x.shape[2:]
        cols = x.astype(work, copy=False).reshape(batch, groups, ci, math.prod(planes))
        filters = w.astype(work, copy=False).reshape(groups, co, ci)
        out = np.matmul(filters[0], cols[:, 0]) if groups == 1 else np.matmul(filters, cols)
        return out.reshape(batch, groups * co, *planes).astype(x.dtype, copy=False)
    win = Windows.of(x.shape[2:], _geometry(a, w.shape[3:]))
    if n == 2 and conv_taps.takes(x, groups, co, ci, win, work):
        wide = conv_taps.convolve(x.astype(work, copy=False), w[0].astype(work, copy=False), win)
        return wide.astype(x.dtype, copy=False)
    if n in (1, 2) and _tap_by_tap(groups, co, ci, math.prod(win.kernel)):
        fast = _fast(x.astype(work, copy=False), w.astype(work, copy=False), win)
        if fast is not None:
            return fast.astype(x.dtype, copy=False)
    read = _tap_reader(x.astype(work, copy=False), win)
    w = w.astype(work, copy=False)
    batch = x.shape[0]
    taps = list(win.taps())
    if co == 1 and ci == 1:
        # Depthwise: one multiply-add per tap over the whole output beats a
        # product of 1 x taps matrices per channel.
        flat = w.reshape(groups, len(taps))
        acc = np.zeros((batch, groups, *win.out), work)
        bcast = (1, groups) + (1,) * n
        for t, tap in enumerate(taps):
            acc += read(tap) * flat[:, t].reshape(bcast)
        return acc.astype(x.dtype, copy=False)
    positions = int(np.prod(win.out, dtype=np.int64))
    # Columns [N, G, Ci * taps, P] in the filter's (channel, tap) order.
    if len(taps) == 1:  # 1x1 filters: the (strided) input is the columns, often uncopied
        cols = read(taps[0]).reshape(batch, groups, ci, positions)
    else:
        cols = np.stack([read(tap) for tap in taps], axis=2)
        cols = cols.reshape(batch, groups, ci * len(taps), positions)
    out = np.matmul(w.reshape(groups, co, ci * len(taps)), cols)
    return out.reshape(batch, groups * co, *win.out).astype(x.dtype, copy=False)


def _pointwise(a: SimpleNamespace, kernel: Sequence[int]) -> bool:
    """Whether a filter of ``kernel`` with these attributes reads each input position once,
    in place: 1x1..., stride 1, no pads (explicit zeros; auto_pad gives none for 1x1)."""
    n = len(kernel)
    return (n > 0 and all(k == 1 for k in kernel) and len(a.strides) == n
            and all(s == 1 for s in a.strides)
            and (a.auto_pad != "explicit" or not any((*a.pads_begin, *a.pads_end)))
            and len(a.pads_begin) in (0, n) and len(a.pads_end) in (0, n))  # fmt: skip


def _tap_by_tap(groups: int, co: int, ci: int, taps: int) -> bool:
    """Whether :mod:`.conv_depthwise` is faster than one product with a column matrix.

    Depthwise and grouped filters always (small products per group).  Ordinary ones when
    the column matrix, ``taps`` copies of the input, costs more than summing ``taps``
    products of the output's size: at least twice the input channels as output ones,
    and enough of them for each tap's product to be efficient (densenet's 128 -> 32
    3x3: 1.7x faster; 64 -> 64 and 256 -> 256 are not).
    """
    if groups > 1:
        return ci > 1 or co == 1  # a channel multiplier (one input, many outputs) is not
    return taps > 1 and ci >= 32 and 2 * co <= ci


def _fast(x: np.ndarray, w: np.ndarray, win: Windows) -> np.ndarray | None:
    """:mod:`.conv_depthwise` for depthwise or grouped filters over 1-D or 2-D planes
    (1-D as planes of one row), or None where it does not apply."""
    rank = x.ndim
    if rank == 3:
        x, w = x[:, :, None, :], w[..., None, :]
        win = Windows((1, *win.sizes), (1, *win.kernel), (1, *win.strides),
                      (1, *win.dilations), (0, *win.pads_begin), (0, *win.pads_end),
                      (1, *win.out))  # fmt: skip
    if not conv_depthwise.applies(x, win):
        return None
    if w.shape[1] == w.shape[2] == 1:
        out = conv_depthwise.depthwise(x, w.reshape(w.shape[0], -1), win)
    else:
        out = conv_depthwise.grouped(x, w, win)
    return out[:, :, 0] if rank == 3 else out


def _tap_reader(x: np.ndarray, win: Windows) -> Callable[[tuple[int, ...]], np.ndarray]:
    """A function from a tap to what it reads for every window, ``[N, C, *out]``.

    Usually a strided view of the input padded with zeros.  Pads, strides or dilations
    far beyond the input would make that padded copy huge (2^31 pads of a 3x3 input are
    gigabytes of zeros), so then each tap is gathered instead, by index arrays of
    ``out x kernel`` per axis that point past the input's end, at one appended zero,
    for a tap in the padding: the work follows the input, the output and the filter,
    whatever the attributes.  Both give the same values.
    """
    reach = [(o - 1) * st + (k - 1) * d + 1 for o, st, k, d in
             zip(win.out, win.strides, win.kernel, win.dilations, strict=True)]  # fmt: skip
    padded = math.prod(max(r, pb + n) for r, pb, n in zip(reach, win.pads_begin, win.sizes,
                                                          strict=True))  # fmt: skip
    if padded <= 2 * math.prod(win.sizes) + math.prod(win.out) * math.prod(win.kernel) + 4096:
        xp = win.padded(x, 0)
        return lambda tap: win.tap_view(xp, tap)
    n = len(win.sizes)
    extended = np.pad(x, [(0, 0)] * (x.ndim - n) + [(0, 1)] * n)  # one zero past each axis
    index = []
    for size, k, st, d, pb, o in zip(win.sizes, win.kernel, win.strides, win.dilations,
                                     win.pads_begin, win.out, strict=True):  # fmt: skip
        # Python integers where int64 could overflow (pads near 2^63).
        big = max(o * st, pb, k * d) >= 2**62
        pos = (np.arange(o, dtype=object if big else np.int64)[:, None] * st - pb
               + np.arange(k, dtype=object if big else np.int64)[None, :] * d)  # fmt: skip
        inside = (pos >= 0) & (pos < size)
        index.append(np.where(inside, pos, size).astype(np.intp))  # [out, kernel]
    lead = (slice(None),) * (x.ndim - n)
    return lambda tap: extended[lead + np.ix_(*(ix[:, j] for ix, j in zip(index, tap,
                                                                         strict=True)))]


def _same_types(x: np.ndarray, w: np.ndarray) -> None:
    if x.dtype != w.dtype:
        raise KernelError(f"data is {x.dtype} but the filter is {w.dtype}")


def _convolution(a: SimpleNamespace, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    _same_types(x, w)
    if w.ndim != x.ndim:
        raise KernelError(f"filter has shape {list(w.shape)}, expected rank {x.ndim}")
    return (convolve(x, w[None], a),)


def _group_convolution(
    a: SimpleNamespace, x: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, ...]:
    _same_types(x, w)
    if w.ndim != x.ndim + 1:
        raise KernelError(f"filter has shape {list(w.shape)}, expected rank {x.ndim + 1}")
    return (convolve(x, w, a),)


register(
    OpDef(
        type="Convolution", version=1, since_opset=1, attrs=ATTRS, infer=_infer(False),
        kernel=_convolution, inputs=(2, 2), check=check_attrs, shape_attrs=SHAPE_ATTRS,
        fresh_output=True,
    )
)  # fmt: skip
register(
    OpDef(
        type="GroupConvolution", version=1, since_opset=1, attrs=ATTRS, infer=_infer(True),
        kernel=_group_convolution, inputs=(2, 2), check=check_attrs, shape_attrs=SHAPE_ATTRS,
        fresh_output=True,
    )
)  # fmt: skip
