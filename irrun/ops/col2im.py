"""Sliding blocks back into an image: Col2Im-15.

Col2Im-15 is the inverse layout of an unfold (PyTorch's ``fold``): ``data`` [N, C*kh*kw, L]
(or [C*kh*kw, L] unbatched) holds, per block, the ``kernel_size`` taps of each channel,
ordered (channel, tap row, tap column); the blocks, ``L = Lh * Lw`` of them in row-major
order, start ``strides`` apart on the image of ``output_size`` padded by ``pads_begin``
and ``pads_end``, their taps ``dilations`` apart.  Per axis there are
``Lh = (size + pad_begin + pad_end - dilation * (k - 1) - 1) // stride + 1`` blocks;
the shape rule checks ``L = Lh * Lw`` when the sizes are known, and refuses an axis
where not one block fits (OpenVINO computes that count in unsigned arithmetic, which
wraps around to 0 or to some huge number).  The output [N, C, H, W] (or [C, H, W]) is zero
where no tap lands and the sum of the taps that land on a pixel elsewhere; taps in the
padding are dropped.

Each pixel's taps are added in the order of the columns (tap row, tap column), as
OpenVINO's reference kernel adds them, in the data's type (integers wrap on overflow),
but f16 and bf16 sum in f32 and are rounded once, as the CPU plugin sums them (the
reference kernel sums in the data's type).  irrun matches the plugin bit for bit, but
for f64, which the plugin computes in f32 (irrun keeps f64).  ``ov.Model.evaluate`` has
no Col2Im kernel to compare with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, format_shape
from ..ir.element_types import INDEX_TYPES, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import int_values


def _check_col2im(a: SimpleNamespace) -> None:
    for name in ("strides", "dilations", "pads_begin", "pads_end"):
        values = list(getattr(a, name))
        if len(values) != 2:
            raise KernelError(f"{name} must hold [rows, cols], got {values}")
        low = 0 if name.startswith("pads") else 1
        if min(values) < low:
            raise KernelError(f"{name} {values} must be {low} or more")


def _blocks(size: int, k: int, stride: int, dilation: int, pads: int) -> int:
    """Blocks along an axis; ShapeError where not one fits in the padded image."""
    span = size + pads - dilation * (k - 1) - 1
    if span < 0:
        raise ShapeError(f"no block of {k} taps {dilation} apart fits in {size} pixels padded "
                         f"by {pads}")  # fmt: skip
    return span // stride + 1


def _pair(info: TensorInfo, what: str) -> list[int] | None:
    shape = info.shape
    if shape is not None and (len(shape) != 1 or (isinstance(shape[0], int) and shape[0] != 2)):
        raise ShapeError(f"{what} must be a 1-D input of 2 values, got shape {format_shape(shape)}")
    return int_values(info)


def _col2im_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data = inputs[0].shape
    size = _pair(inputs[1], "output_size")
    kernel = _pair(inputs[2], "kernel_size")
    if kernel is not None and min(kernel) < 1:
        raise ShapeError(f"kernel_size {kernel} must be 1 or more")
    if size is not None and min(size) < 0:
        raise ShapeError(f"output_size {size} must not be negative")
    et = inputs[0].element_type
    if data is None:
        return [TensorInfo(None, et)]
    if len(data) not in (2, 3):
        raise ShapeError(f"data must be 2-D [C*kh*kw, L] or 3-D [N, C*kh*kw, L], got shape "
                         f"{format_shape(data)}")  # fmt: skip
    batched = len(data) == 3
    columns, count = data[-2], data[-1]
    channels: Dim = DYNAMIC
    if kernel is not None and isinstance(columns, int):
        if columns % (kernel[0] * kernel[1]):
            raise ShapeError(f"data's dim {len(data) - 2} ({columns}) is not a multiple of "
                             f"kernel_size {kernel[0]}x{kernel[1]}")  # fmt: skip
        channels = columns // (kernel[0] * kernel[1])
    spatial: tuple[Dim, Dim] = (DYNAMIC, DYNAMIC)
    if size is not None:
        spatial = (size[0], size[1])
        if kernel is not None and isinstance(count, int):
            want = 1
            for d in range(2):
                want *= _blocks(size[d], kernel[d], a.strides[d], a.dilations[d],
                                a.pads_begin[d] + a.pads_end[d])  # fmt: skip
            if want != count:
                raise ShapeError(f"the blocks of output_size {size}, kernel_size {kernel}, "
                                 f"strides, dilations and pads number {want}, but data holds "
                                 f"{count}")  # fmt: skip
    shape = (*data[:1], channels, *spatial) if batched else (channels, *spatial)
    return [TensorInfo(shape, et)]


def _col2im(a: SimpleNamespace, data: np.ndarray, output_size: np.ndarray,
            kernel_size: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    infos = [TensorInfo(data.shape, None), TensorInfo(output_size.shape, None, output_size),
             TensorInfo(kernel_size.shape, None, kernel_size)]  # fmt: skip
    (info,) = _col2im_infer(a, infos)
    (h, w), (kh, kw) = (int(v) for v in output_size), (int(v) for v in kernel_size)
    x = data if data.ndim == 3 else data[None]
    n, c = x.shape[0], int(info.shape[-3])  # type: ignore[index, arg-type]
    # Narrow floats sum in f32, rounded once, as the CPU plugin sums them.
    narrow = data.dtype.kind == "V" or (data.dtype.kind == "f" and data.dtype.itemsize < 4)
    out = np.zeros((n, c, h, w), np.float32 if narrow else data.dtype)
    (sh, sw), (dh, dw), (ph, pw) = a.strides, a.dilations, a.pads_begin
    lh = _blocks(h, kh, sh, dh, ph + a.pads_end[0])
    lw = _blocks(w, kw, sw, dw, pw + a.pads_end[1])
    if out.size and x.size:
        # The pixel of tap (i, j) of block (p, q): [kh, 1, lh, 1] and [1, kw, 1, lw].
        rows = (np.arange(kh) * dh)[:, None, None, None] + (np.arange(lh) * sh - ph)[:, None]
        cols = (np.arange(kw) * dw)[None, :, None, None] + (np.arange(lw) * sw - pw)
        rows, cols = np.broadcast_arrays(rows, cols)
        inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
        taps = x.reshape(n, c, kh, kw, lh, lw)[..., inside]  # [N, C, taps], columns' order
        taps = taps.astype(out.dtype, copy=False)
        np.add.at(out, (slice(None), slice(None), rows[inside], cols[inside]), taps)
    out = out.astype(data.dtype, copy=False)
    return (out if data.ndim == 3 else out[0],)


def _col2im_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                    outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The taps that land (a copy of the data at most, in f32 for the narrow floats, with
    an f32 image for them to sum into), and per tap and block its pixel and mask (int64
    and bool; a channel's share of the data's elements)."""
    data, out = static_shape(inputs[0]), static_shape(outputs[0])
    et = inputs[0].element_type
    if data is None or out is None or et is None:
        return 0
    narrow = et.dtype.kind == "V" or (et.dtype.kind == "f" and et.dtype.itemsize < 4)
    each = 4 if narrow else max(et.bits // 8, 1)
    return math.prod(data) * (each + 8) + (4 * math.prod(out) if narrow else 0)


register(
    OpDef(type="Col2Im", version=15, since_opset=15,
          attrs=(Attr("strides", "ints", (1, 1)), Attr("dilations", "ints", (1, 1)),
                 Attr("pads_begin", "ints", (0, 0)), Attr("pads_end", "ints", (0, 0))),
          infer=_col2im_infer, kernel=_col2im, inputs=(3, 3), check=_check_col2im,
          input_types=(NUMBERS, INDEX_TYPES, INDEX_TYPES),
          shape_attrs=("strides", "dilations", "pads_begin", "pads_end"),
          scratch=_col2im_scratch)
)  # fmt: skip
