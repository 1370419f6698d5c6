"""Convolution-1 and GroupConvolution-1 over 1, 2 or 3 spatial dims: the reference.

A Convolution is a GroupConvolution of one group (its filter ``[Co, Ci, *K]`` read as
``[1, Co, Ci, *K]``).  With ``G`` groups, data ``x`` ``[N, G*Ci, *S]`` and filter ``w``
``[G, Co, Ci, *K]``, output channel ``g*Co + o`` at output position ``y`` is

    out[n, g*Co + o, y] = sum over c < Ci and taps k of
                          x[n, g*Ci + c, y*strides + k*dilations - pads_begin] * w[g, o, c, k]

over the taps whose input position lies inside ``x``: the padding is zeros, and a
position in it contributes nothing (not even ``0 * w``: an infinite weight on a padded
tap gives no NaN, as in the CPU plugin, which skips the padding too).

Geometry is the pooling windows' (:mod:`irrun.ops.window`), with the filter's spatial
shape as the kernel and floor rounding: ``out = floor((S + pb + pe - d*(K-1) - 1) / s)
+ 1`` per axis.  ``auto_pad="explicit"`` takes ``pads_begin``/``pads_end``; ``valid`` pads
nothing; ``same_upper`` and ``same_lower`` pad so that ``ceil(S/s)`` windows fit, the odd
pad at the end (upper) or the beginning (lower), whatever the pads attributes say.

Arithmetic (:func:`convolve`): for each tap, in the filter's row-major order, one matrix
product of the tap's ``[Co, Ci]`` filter with what the tap reads (a strided view of the
input, no padded copy), added into an accumulator of zeros.  f32 and f64 are computed
in their own type; f16 and bf16 in f32, rounded once at the end; integers in their own
type, wrapping.  So each output element is a sum of ``Ci * prod(K)`` rounded products:
over ``Ci`` in the order of NumPy's BLAS, then over the taps in order, from +0 (a sum of
zeros is +0, never -0).  The work and the memory follow the input, the output and the
filter whatever the pads, strides and dilations (:func:`scratch`): a tap adds into the
box of output positions whose input lies inside the input, found in closed form.

Where the CPU plugin differs:

- It sums in its own order (oneDNN's blocking), so floating values differ within
  rounding.  Any order of a sum of ``K = Ci * prod(kernel)`` rounded products is within
  ``gamma_K * sum |x * w|`` of the exact sum (``gamma_K = K*u / (1 - K*u)``, ``u = 2**-24``
  for f32): irrun and the plugin agree within twice that, and ``tests/fast/
  test_convolution.py`` checks that bound against the plugin and between irrun's paths.
- f64 is computed in f32 by the plugin (its values are f32's), in f64 here.
- Integers are computed in f32 by the plugin (exact below 2**24), with i8 and u8
  results saturated and i64 narrowed as i32; here in their own type, wrapping, as
  before: they agree while the sums stay below 2**24 in magnitude and in range.

The fast kernels for these ops (one GEMM per tap, the depthwise and grouped tap loops,
the pointwise product, the column matrix, threads) are in :mod:`irrun.fast.convolution`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, format_shape
from ..ir.element_types import NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
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


def work_type(dtype: np.dtype) -> np.dtype:
    """The type a convolution of ``dtype`` data sums in: f32 for floats narrower than
    f32 (f16, bf16), else the data's own."""
    narrow = dtype.itemsize < 4 and dtype.kind not in "biu"
    return np.dtype(np.float32) if narrow else np.dtype(dtype)


def geometry(a: SimpleNamespace, x_shape: Sequence[int], w_shape: Sequence[int]) -> Windows:
    """The windows of a convolution of data ``x_shape`` with a ``[G, Co, Ci, *K]`` filter."""
    return Windows.of(tuple(x_shape[2:]), _geometry(a, tuple(w_shape[3:])))


def tap_box(win: Windows, tap: Sequence[int]) -> tuple[tuple[slice, ...], tuple[slice, ...]] | None:
    """Where one tap of the filter adds and what it reads: the output positions whose
    input position ``y*s + tap*d - pads_begin`` lies inside the input (a box, one slice
    per axis), and those input positions (strided slices); None when there are none.

    >>> win = Windows((5,), (3,), (2,), (1,), (1,), (1,), (3,))  # 5 positions, 3 windows
    >>> tap_box(win, (0,)), tap_box(win, (2,))
    (((slice(1, 3, None),), (slice(1, 4, 2),)), ((slice(0, 2, None),), (slice(1, 4, 2),)))
    """
    into, take = [], []
    for size, s, d, pb, out, k in zip(win.sizes, win.strides, win.dilations, win.pads_begin,
                                      win.out, tap, strict=True):  # fmt: skip
        offset = k * d - pb  # the input position output 0 reads
        lo = max(0, -(offset // s))  # the first output reading at or past input 0
        hi = min(out, -((offset - size) // s))  # past the last one reading before size
        if lo >= hi:
            return None
        first = lo * s + offset
        into.append(slice(lo, hi))
        take.append(slice(first, first + (hi - lo - 1) * s + 1, s))
    return tuple(into), tuple(take)


def convolve(x: np.ndarray, w: np.ndarray, a: SimpleNamespace) -> np.ndarray:
    """Grouped convolution of ``x`` [N, G*Ci, *S] with ``w`` [G, Co, Ci, *K] (see the
    module's docstring): a new array of x's type.

    >>> x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    >>> w = np.array([1, 0, -1], np.float32).reshape(1, 1, 1, 3)
    >>> a = SimpleNamespace(strides=(1,), dilations=(1,), pads_begin=(1,), pads_end=(0,),
    ...                     auto_pad="explicit")
    >>> convolve(x, w, a).tolist()
    [[[-1.0, -2.0, -2.0, -2.0]]]
    """
    check_shapes(x, w)
    groups, co, ci = w.shape[:3]
    batch = x.shape[0]
    win = geometry(a, x.shape, w.shape)
    work = work_type(x.dtype)
    xg = x.reshape(batch, groups, ci, *win.sizes)
    acc = np.zeros((batch, groups, co, *win.out), work)
    for tap in np.ndindex(*win.kernel):
        box = tap_box(win, tap)
        if box is not None:  # else every position this tap reads is padding
            into, take = box
            acc[(..., *into)] += _product(w[(..., *tap)], xg[(..., *take)], work)
    return acc.reshape(batch, groups * co, *win.out).astype(x.dtype, copy=False)


def _product(filt: np.ndarray, seen: np.ndarray, work: np.dtype) -> np.ndarray:
    """A tap's ``[G, Co, Ci]`` filter times what it reads, ``[N, G, Ci, *box]``, summed
    over ``Ci``: ``[N, G, Co, *box]`` in ``work``."""
    batch, groups, ci, *box = seen.shape
    # Rows in C order whatever the input's layout: NumPy's product picks its BLAS call
    # (and so its order of summation) by the operands' layout.
    cols = seen.astype(work, order="C").reshape(batch, groups, ci, math.prod(box))
    return np.matmul(filt.astype(work), cols).reshape(batch, groups, filt.shape[1], *box)


def check_shapes(x: np.ndarray, w: np.ndarray) -> None:
    """``x`` [N, G*Ci, *S] and ``w`` [G, Co, Ci, *K] fit each other."""
    groups, _, ci = w.shape[:3]
    n = w.ndim - 3
    if x.ndim != n + 2:
        raise KernelError(f"data has shape {list(x.shape)}, expected rank {n + 2}")
    if x.shape[1] != groups * ci:
        raise KernelError(
            f"data has {x.shape[1]} channels but the filter expects {groups} x {ci} = "
            f"{groups * ci}"
        )


def static_shapes(a: SimpleNamespace, inputs: Sequence[TensorInfo], grouped: bool):
    """(data shape, filter shape as [G, Co, Ci, *K], data dtype, windows) when all are
    known and static and the geometry holds, else None: what the scratch estimates read."""
    data, filt = inputs[:2]
    shapes = (data.shape, filt.shape)
    if data.element_type is None or any(
        s is None or not all(isinstance(v, int) for v in s) for s in shapes
    ):
        return None
    w_shape = tuple(filt.shape) if grouped else (1, *filt.shape)
    if len(w_shape) != len(data.shape) + 1:
        return None
    try:
        win = geometry(a, data.shape, w_shape)
    except ShapeError:
        return None
    return tuple(data.shape), w_shape, data.element_type.dtype, win


def _scratch(grouped: bool):
    def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
        """:func:`convolve`'s memory beside its inputs and output: a tap's view of the
        input and its product (each at most the input positions a tap reads, never more
        than the input's), the filter in the work type, and the accumulator when it is
        not the output's type (f16, bf16)."""
        known = static_shapes(a, inputs, grouped)
        if known is None:
            return 0
        x_shape, w_shape, dtype, win = known
        groups, co, ci = w_shape[:3]
        size = work_type(dtype).itemsize
        box = math.prod(min(o, n) for o, n in zip(win.out, win.sizes, strict=True))
        lanes = x_shape[0] * groups
        need = lanes * (ci + co) * box * size + groups * co * ci * size
        if work_type(dtype) != dtype:
            need += lanes * co * math.prod(win.out) * size
        return need

    return scratch


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


# OpenVINO takes any number but boolean (the data's type and the filter's the same);
# irrun computes the numbers and the two f8 types with a sign (in f32, rounded once).
CONV_TYPES = (*NUMBERS, "f8e4m3", "f8e5m2")

register(
    OpDef(
        type="Convolution", version=1, since_opset=1, attrs=ATTRS, infer=_infer(False),
        kernel=_convolution, inputs=(2, 2), check=check_attrs, shape_attrs=SHAPE_ATTRS,
        fresh_output=True, scratch=_scratch(False), input_types=(CONV_TYPES, CONV_TYPES),
    )
)  # fmt: skip
register(
    OpDef(
        type="GroupConvolution", version=1, since_opset=1, attrs=ATTRS, infer=_infer(True),
        kernel=_group_convolution, inputs=(2, 2), check=check_attrs, shape_attrs=SHAPE_ATTRS,
        fresh_output=True, scratch=_scratch(True), input_types=(CONV_TYPES, CONV_TYPES),
    )
)  # fmt: skip
