"""Convolution-1 and GroupConvolution-1, fast: one dispatch over five paths.

:func:`convolve` computes what :func:`irrun.ops.convolution.convolve` (the reference)
computes, by the first of these paths that applies, or returns ``NotImplemented`` and
the reference runs.  Which one is chosen from the shapes, the element type and the
attributes alone (:func:`path`, remembered per attributes and shapes), so that the
scratch a plan counts for a layer is that of the path its run takes; one check reads
values: a filter with an
infinite or NaN weight goes to the reference wherever a path would multiply padding
(``0 * inf`` is NaN, and the reference skips the padding).

1. ``pointwise``: a 1x1... filter at stride 1 without pads (any rank, any type): one
   matrix product of each group's ``[Co, Ci]`` filter with the input as it lies.  The
   reference's single tap is the same product on a copy of the same values.
2. ``taps`` (:mod:`.conv_taps`): an ordinary (one group) 2-D filter of several taps
   with at least ``conv_taps.MIN_CHANNELS`` (16) input channels, at most twice as many
   outputs, output rows at least ``conv_taps.MIN_WIDTH`` (20) wide, f32 or f64 with a
   BLAS of known interface (:mod:`.blas`): one GEMM per tap accumulated in place.
3. ``depthwise`` and ``grouped`` (:mod:`.conv_depthwise`): 1-D or 2-D filters, each
   group one input and one output channel (depthwise) or several input channels
   (grouped), and ordinary filters of several taps with at least 32 input channels and
   at most half as many outputs (:func:`_tap_by_tap`): tap by tap over cache-sized
   blocks on the run's threads (depthwise compiled by numba where it is installed,
   :mod:`.conv_jit`).  Taken where the padded copy is no larger than
   ``conv_depthwise.applies`` allows (4x the input plus the output times the taps).
   Within it: output planes of up to ``_NHWC_POSITIONS`` (1024) positions are computed
   channels last, larger ones flat; blocks of 256 KiB (flat) or 2 MiB (channels last)
   of sums; a block goes to another thread from ``_THREAD_WORK`` (16 million)
   multiply-adds.
4. ``columns``: the rest (3-D filters, channel multipliers, small ordinary filters):
   the padded input's taps stacked into a column matrix ``[N, G, Ci * taps, P]`` and
   one matrix product per group, where that matrix holds at most
   :data:`COLUMNS_BYTES` and the padded copy is bounded as in 3.

Else (a column matrix past :data:`COLUMNS_BYTES`, pads or strides so far beyond the
input that a padded copy would be huge, 0-size tensors) the reference runs, whose
memory follows the input and the output whatever the attributes.

Values: ``pointwise`` and ``depthwise`` give the reference's bits (the same products
added in the same order, from +0).  ``taps``, ``grouped`` and ``columns`` sum over the
input channels (and, for ``columns``, the taps) in BLAS's order for another matrix
shape, so they agree with the reference within the bound of
:mod:`irrun.ops.convolution`: twice ``gamma_K`` times the sum of ``|x * w|`` of the
output element (``K = Ci * taps``), checked in ``tests/fast/test_convolution.py``.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.registry import TensorInfo
from ..ops.convolution import check_shapes, geometry, static_shapes, work_type
from ..ops.window import Windows
from . import conv_depthwise, conv_taps
from .registry import FastKernel, register_fast

# The largest column matrix ``columns`` builds; past it the reference's tap loop, whose
# scratch is the input and the output, not ``taps`` copies of the input.
COLUMNS_BYTES = 64 * 2**20


def path(x_shape: Sequence[int], w_shape: Sequence[int], dtype: np.dtype,
         win: Windows) -> str | None:  # fmt: skip
    """The path that computes a convolution of these shapes (filter ``[G, Co, Ci, *K]``)
    and element type, or None for the reference (see the module's docstring)."""
    groups, co, ci = w_shape[:3]
    n = len(win.kernel)
    taps = math.prod(win.kernel)
    if 0 in x_shape or 0 in w_shape or 0 in win.out:
        return None
    if taps == 1 and all(s == 1 for s in win.strides) and not any(win.pads_begin + win.pads_end):
        return "pointwise"
    work = work_type(dtype)
    planes = _planes(x_shape, win)
    if n == 2 and conv_taps.takes(x_shape, groups, co, ci, win, work):
        return "taps"
    if n in (1, 2) and _tap_by_tap(groups, co, ci, taps) and conv_depthwise.applies(*planes):
        return "depthwise" if co == ci == 1 else "grouped"
    if _padded_size(win) <= _copy_limit(win) and _columns_bytes(x_shape, w_shape, win, work) \
            <= COLUMNS_BYTES:  # fmt: skip
        return "columns"
    return None


def _planes(x_shape: Sequence[int], win: Windows) -> tuple[tuple[int, ...], Windows]:
    """The shape and windows of 1-D convolutions as 2-D ones of planes one row high."""
    if len(win.kernel) != 1:
        return tuple(x_shape), win
    return (*x_shape[:2], 1, x_shape[2]), _as_rows(win)


def _as_rows(win: Windows) -> Windows:
    return Windows((1, *win.sizes), (1, *win.kernel), (1, *win.strides), (1, *win.dilations),
                   (0, *win.pads_begin), (0, *win.pads_end), (1, *win.out))  # fmt: skip


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


def _reach(win: Windows) -> list[int]:
    """How far the windows reach on each axis, from the start of the padding."""
    return [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in
            zip(win.out, win.strides, win.kernel, win.dilations, strict=True)]  # fmt: skip


def _padded_size(win: Windows) -> int:
    """Positions of a plane's padded copy as :func:`_padded` makes it."""
    return math.prod(max(r, pb + n) for r, pb, n in
                     zip(_reach(win), win.pads_begin, win.sizes, strict=True))  # fmt: skip


def _copy_limit(win: Windows) -> int:
    """The largest padded plane a path copies: pads and strides far past the input would
    make the copy gigabytes of zeros (2**31 pads of a 3x3 input), which the reference
    never makes."""
    return 4 * math.prod(win.sizes) + math.prod(win.out) * math.prod(win.kernel) + 4096


def _columns_bytes(x_shape, w_shape, win: Windows, work: np.dtype) -> int:
    groups, _, ci = w_shape[:3]
    return x_shape[0] * groups * ci * math.prod(win.kernel) * math.prod(win.out) * work.itemsize


def _padded(x: np.ndarray, win: Windows) -> np.ndarray:
    """``x`` in zeros: ``pads_begin`` before each spatial axis, and after it as far as the
    windows reach (pads the windows never read are not made)."""
    n = len(win.sizes)
    ends = [max(r - pb - s, 0) for r, pb, s in zip(_reach(win), win.pads_begin, win.sizes,
                                                   strict=True)]  # fmt: skip
    return np.pad(x, [(0, 0)] * (x.ndim - n) + list(zip(win.pads_begin, ends, strict=True)))


def _tap_view(xp: np.ndarray, win: Windows, tap: Sequence[int]) -> np.ndarray:
    """What ``tap`` reads for every window of the padded ``xp``: a strided view."""
    n = len(win.sizes)
    index = tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, o, s in
                  zip(tap, win.dilations, win.out, win.strides, strict=True))  # fmt: skip
    return xp[(slice(None),) * (xp.ndim - n) + index]


_FINITE: dict[int, tuple[weakref.ref, bool]] = {}


def _finite(w: np.ndarray) -> bool:
    """Whether every weight is finite.  A read-only filter (a model's constant) is read
    once and remembered while it lives: the check would be 2-8% of a 7x7 layer's time."""
    if w.dtype.kind in "biu":
        return True
    if w.flags.writeable:
        return bool(np.isfinite(w).all())
    known = _FINITE.get(id(w))
    if known is not None and known[0]() is w:
        return known[1]
    finite, key = bool(np.isfinite(w).all()), id(w)
    _FINITE[key] = (weakref.ref(w, lambda _: _FINITE.pop(key, None)), finite)
    return finite


def convolve(x: np.ndarray, w: np.ndarray, a: SimpleNamespace,
             filter_: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """``x`` [N, G*Ci, *S] convolved with ``w`` [G, Co, Ci, *K] by the first path that
    applies, or ``NotImplemented`` (see the module's docstring).  ``filter_``: the array
    ``w`` was made from (the op's input), whose finiteness is remembered."""
    check_shapes(x, w)
    win, taken = _plan(tuple(a.strides), tuple(a.dilations), tuple(a.pads_begin),
                       tuple(a.pads_end), a.auto_pad, x.shape, w.shape, x.dtype)  # fmt: skip
    if taken is None or (taken != "pointwise" and not _finite(w if filter_ is None else filter_)):
        return NotImplemented
    work = work_type(x.dtype)
    xw, ww = x.astype(work, copy=False), w.astype(work, copy=False)
    groups, co, ci = w.shape[:3]
    batch = x.shape[0]
    if taken == "pointwise":
        # Contiguous, as the reference's copy: NumPy multiplies a strided view by its own
        # loop, in another order than BLAS.
        cols = np.ascontiguousarray(xw).reshape(batch, groups, ci, math.prod(win.sizes))
        out = np.matmul(ww.reshape(groups, co, ci), cols)
    elif taken == "taps":
        out = conv_taps.convolve(xw, ww[0], win)
    elif taken in ("depthwise", "grouped"):
        out = _tap_by_tap_run(xw, ww, win, taken)
    else:
        xp = _padded(xw.reshape(batch, groups, ci, *win.sizes), win)
        # [N, G, Ci, taps, *out] as [N, G, Ci * taps, P]: the filter's (channel, tap) order.
        cols = np.stack([_tap_view(xp, win, tap) for tap in np.ndindex(*win.kernel)], axis=3)
        cols = cols.reshape(batch, groups, ci * math.prod(win.kernel), math.prod(win.out))
        out = np.matmul(ww.reshape(groups, co, -1), cols)
    return out.reshape(batch, groups * co, *win.out).astype(x.dtype, copy=False)


@functools.lru_cache(maxsize=1024)
def _plan(strides, dilations, pads_begin, pads_end, auto_pad, x_shape, w_shape,
          dtype) -> tuple[Windows, str | None]:  # fmt: skip
    """The windows and the path of a layer, worked out once per attributes and shapes (a
    few microseconds, 3% of a small 1x1 layer's time)."""
    a = SimpleNamespace(strides=strides, dilations=dilations, pads_begin=pads_begin,
                        pads_end=pads_end, auto_pad=auto_pad)  # fmt: skip
    win = geometry(a, x_shape, w_shape)
    return win, path(x_shape, w_shape, dtype, win)


def _tap_by_tap_run(x: np.ndarray, w: np.ndarray, win: Windows, taken: str) -> np.ndarray:
    """:mod:`.conv_depthwise` on 2-D planes (1-D ones as planes of one row)."""
    rank = x.ndim
    if rank == 3:
        x, w, win = x[:, :, None, :], w[..., None, :], _as_rows(win)
    if taken == "depthwise":
        out = conv_depthwise.depthwise(x, w.reshape(w.shape[0], -1), win)
    else:
        out = conv_depthwise.grouped(x, w, win)
    return out[:, :, 0] if rank == 3 else out


def _run(grouped: bool):
    def run(a: SimpleNamespace, x: np.ndarray, w: np.ndarray):
        if x.dtype != w.dtype or w.ndim != x.ndim + grouped:
            return NotImplemented  # the reference says what is wrong
        out = convolve(x, w if grouped else w[None], a, filter_=w)
        return NotImplemented if out is NotImplemented else (out,)

    return run


def _scratch(grouped: bool):
    def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
        """Bytes the chosen path holds beside the input and the output, at most: the
        input and the filter in the work type (f16, bf16), the padded copy, the column
        matrix or the per-tap sums, and the result in the work type."""
        known = static_shapes(a, inputs, grouped)
        if known is None:
            return 0
        x_shape, w_shape, dtype, win = known
        taken = path(x_shape, w_shape, dtype, win)
        if taken is None:
            return 0
        work = work_type(dtype)
        size = work.itemsize
        groups, co, ci = w_shape[:3]
        batch = x_shape[0]
        out = batch * groups * co * math.prod(win.out)
        need = 0 if work == dtype else (math.prod(x_shape) + out) * size
        need += math.prod(w_shape) * size  # the filter cast or laid out per tap
        planes = batch * groups * ci
        if taken == "taps":
            # Stride phases of the whole input, one row of sums per output channel.
            (sh, sw), (hq, wq) = win.strides, conv_depthwise._phase_shape(win)
            need += (planes * sh * sw * hq * wq + co * win.out[0] * wq) * size
        elif taken in ("depthwise", "grouped"):
            # Each block's padded copy, its two sums of rows as wide as a phase and its
            # filters (per plane; channels last, repeated along an output row): bounded
            # by all blocks at once, whatever the threads.
            flat = _planes(x_shape, win)[1]
            (sh, sw), (hq, wq) = flat.strides, conv_depthwise._phase_shape(flat)
            copy = max(sh * sw * hq * wq, math.prod(_reach(flat)))
            rows = batch * groups * co * flat.out[0] * max(wq, flat.out[1])
            need += (planes * copy + 2 * rows) * size
            need += batch * math.prod(w_shape) * max(1, flat.out[1]) * size
        elif taken == "columns":
            need += planes * _padded_size(win) * size
            need += _columns_bytes(x_shape, w_shape, win, work)
        return need

    return scratch


APPLIES = ("1x1 at stride 1 unpadded: one product; ordinary 2-D with >= 16 input channels, "
           "<= 2x outputs, rows >= 20 wide (f32/f64): one BLAS GEMM per tap; 1-D/2-D "
           "depthwise, grouped, or >= 32 inputs to <= half as many outputs: tap by tap "
           "in blocks on threads; else a column matrix up to 64 MiB; finite filters "
           "where padding is read; otherwise the reference")
BOUND = ("pointwise and depthwise bit-identical; the others within 2*gamma_K*sum|x*w| "
         "(K = Ci * taps, gamma_K = K*u/(1-K*u), u = 2**-24 in f32): BLAS sums in its order")

for _op, _grouped in (("Convolution", False), ("GroupConvolution", True)):
    register_fast(FastKernel(op=_op, versions=(1,), applies=APPLIES, run=_run(_grouped),
                             exact=False, bound=BOUND, scratch=_scratch(_grouped)))
