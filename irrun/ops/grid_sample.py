"""Sampling an image at normalized points: GridSample-9.

GridSample-9 reads ``data`` [N, C, H, W] at the points of ``grid`` [N, H_out, W_out, 2]
(pairs ``(x, y)``, -1..1 spanning the image) and gives [N, C, H_out, W_out].  A
coordinate ``v`` of an axis of ``size`` pixels becomes the pixel position
``(v + 1) * (size - 1) / 2`` with ``align_corners`` (-1 and 1 are the centres of the
border pixels), else ``((v + 1) * size - 1) / 2`` (-1 and 1 are the outer edges of the
border pixels).  ``mode``:

* ``bilinear``: the four pixels around the position, weighted by the distances;
* ``bicubic``: the 4x4 pixels around it, weighted by the cubic convolution kernel with
  ``A = -0.75`` per axis (rows first combined along x, then the four along y);
* ``nearest``: the pixel at the position rounded half to even.

A pixel index outside the image reads, per ``padding_mode``: ``zeros`` 0; ``border``
the nearest border pixel; ``reflection`` the image mirrored about its edges (about the
border pixels' outer edges, ``-1 -> 0``, without ``align_corners``; about their centres,
``-1 -> 1``, with it), repeatedly, so every index lands inside.  As OpenVINO's
reference kernel does, the padding applies to each tap's integer index, not to the
sampling position (PyTorch reflects and clamps the position instead, which differs
for bilinear and bicubic sampling near and beyond the edges).

The coordinates are computed in f32 (f64 for an f64 grid); a float image is mixed in
f32 (f64 for f64) and rounded once to its type.  An integer image is mixed in f32,
truncated toward zero (as the reference kernel's conversion does) and saturated to its
type.  A NaN or infinite grid point gives NaN (an integer image refuses it); points
farther than 2**30 pixels out are clipped there first.

irrun matches OpenVINO's reference kernel (``evaluate``, which runs f32 alone) bit for
bit.  Its CPU plugin sums in its own order: f32 results agree to about 1e-6 relative.
Where they differ:

* u8 and i8 images: the plugin rounds its f32 result to nearest (saturating); irrun
  truncates, as the reference kernel and the plugin for i16, i32 and i64 do.  Wider
  integer results may also lie 1 apart where a bicubic sum lands next to an integer.
* NaN or infinite points, ``nearest`` mode: the plugin reads 0 or some pixel, the
  reference a border pixel; irrun gives NaN, as both do in the other modes.
* Points more than about 2**63 pixels out (1e20): the reference kernel's integer
  conversion overflows, so ``border`` reads the wrong side; irrun clips the position,
  as the plugin does.  ``reflection`` of such a point is meaningless in f32 (no
  fraction left); irrun reflects the clipped position, and the three all differ.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Shape, format_shape
from ..ir.element_types import FLOATS, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import static_shape
from ._shapes import merge_dims, try_merge_dims

MODES = ("bilinear", "bicubic", "nearest")
PADDINGS = ("zeros", "border", "reflection")
# Positions are clipped to +-FAR pixels (2**30, far past any image), so that their
# integer taps stay within int64 whatever the grid holds.
FAR = float(1 << 30)


def _grid_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, grid = inputs[0].shape, inputs[1].shape
    if data is not None and len(data) != 4:
        raise ShapeError(f"data must be 4-D [N, C, H, W], got shape {format_shape(data)}")
    if grid is not None and len(grid) != 4:
        raise ShapeError(f"grid must be 4-D [N, H_out, W_out, 2], got shape {format_shape(grid)}")
    shape: Shape = (DYNAMIC,) * 4
    if grid is not None:
        if try_merge_dims(grid[3], 2) is None:
            raise ShapeError(f"grid's last dim must be 2 (x, y), got {grid[3]}")
        batch = grid[0]
        channels = DYNAMIC
        if data is not None:
            batch = merge_dims(grid[0], data[0], "data and grid must have the same batch")
            channels = data[1]
        shape = (batch, channels, grid[1], grid[2])
    elif data is not None:
        shape = (data[0], data[1], DYNAMIC, DYNAMIC)
    return [TensorInfo(shape, inputs[0].element_type)]


def _positions(v: np.ndarray, size: int, align: bool) -> np.ndarray:
    """Normalized coordinates as pixel positions along an axis of ``size`` pixels."""
    one, two = v.dtype.type(1), v.dtype.type(2)
    if align:
        return (v + one) * v.dtype.type(size - 1) / two
    return ((v + one) * v.dtype.type(size) - one) / two


def _padded(index: np.ndarray, size: int, padding: str, align: bool):
    """(index inside 0..size-1, whether it reads the image) for integer taps."""
    if padding == "zeros":
        inside = (index >= 0) & (index < size)
        return np.clip(index, 0, size - 1), inside
    if padding == "border":
        return np.clip(index, 0, size - 1), None
    if align:
        period = 1 if size == 1 else 2 * (size - 1)
        r = np.abs(index) % period
        return np.where(r >= size, period - r, r), None
    period = 2 * size
    r = index % period
    return np.where(r >= size, period - 1 - r, r), None


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    """The four cubic-convolution weights (A = -0.75) of taps -1, 0, 1, 2 at offset t."""
    a = t.dtype.type(-0.75)
    one, two = t.dtype.type(1), t.dtype.type(2)

    def near(d):  # |d| <= 1
        return ((a + two) * d - (a + t.dtype.type(3))) * d * d + one

    def far(d):  # 1 < |d| < 2
        return ((a * d - t.dtype.type(5) * a) * d + t.dtype.type(8) * a) * d - t.dtype.type(4) * a

    return [far(t + one), near(t), near(one - t), far(two - t)]


def _grid_sample(a: SimpleNamespace, data: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray]:
    (info,) = _grid_infer(a, [TensorInfo(data.shape, None), TensorInfo(grid.shape, None)])
    n, c, h, w = data.shape
    _, ho, wo, _ = grid.shape
    out_shape = (n, c, ho, wo)
    if 0 in out_shape:
        return (np.zeros(out_shape, data.dtype),)
    if h == 0 or w == 0:
        raise KernelError(f"GridSample cannot sample an image of size {h}x{w}")
    compute = np.float64 if np.float64 in (data.dtype, grid.dtype) else np.float32
    g = grid.astype(np.float64 if grid.dtype == np.float64 else np.float32)
    finite = np.isfinite(g).all(axis=-1)
    if not finite.all() and data.dtype.kind in "iub":
        raise KernelError("the grid holds a NaN or an infinity, which has no integer value")
    g = np.where(finite[..., None], g, g.dtype.type(0))
    # Positions farther out than any image reads the same pixels wherever they are.
    x = np.clip(_positions(g[..., 0], w, a.align_corners), -FAR, FAR).astype(compute)
    y = np.clip(_positions(g[..., 1], h, a.align_corners), -FAR, FAR).astype(compute)
    batch = np.arange(n).reshape(n, 1, 1)
    image = data.astype(compute)

    def tap(iy, ix):
        """The pixels at integer taps [N, H_out, W_out] as [N, C, H_out, W_out]."""
        ry, oky = _padded(iy, h, a.padding_mode, a.align_corners)
        rx, okx = _padded(ix, w, a.padding_mode, a.align_corners)
        got = image[batch, :, ry, rx]  # [N, H_out, W_out, C]
        if oky is not None:
            got = np.where((oky & okx)[..., None], got, compute(0))
        return np.moveaxis(got, -1, 1)

    if a.mode == "nearest":
        out = tap(np.rint(y).astype(np.int64), np.rint(x).astype(np.int64))
    else:
        y0, x0 = np.floor(y), np.floor(x)
        dy, dx = (y - y0)[:, None], (x - x0)[:, None]
        iy, ix = y0.astype(np.int64), x0.astype(np.int64)
        if a.mode == "bilinear":
            one = compute(1)
            top = (one - dx) * tap(iy, ix) + dx * tap(iy, ix + 1)
            bottom = (one - dx) * tap(iy + 1, ix) + dx * tap(iy + 1, ix + 1)
            out = dy * bottom + (one - dy) * top
        else:
            wy, wx = _cubic(dy), _cubic(dx)
            out = compute(0)
            for j in range(4):
                row = compute(0)
                for i in range(4):
                    row = row + wx[i] * tap(iy + j - 1, ix + i - 1)
                out = out + wy[j] * row
    if data.dtype.kind in "iub":
        info = np.iinfo(data.dtype) if data.dtype.kind != "b" else None
        out = np.trunc(out)
        if info is not None:
            out = np.clip(out, info.min, info.max)
    elif not finite.all():
        out = np.where(finite[:, None], out, compute(np.nan))
    return (np.asarray(out).astype(data.dtype),)


def _grid_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                  outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The image in the compute type, per output element a few taps, weights and partial
    sums in it, and per grid point its positions, indices and masks."""
    data, out = static_shape(inputs[0]), static_shape(outputs[0])
    if data is None or out is None:
        return 0
    types = [i.element_type for i in inputs[:2] if i.element_type is not None]
    each = 8 if any(t.name == "f64" for t in types) else 4
    points = out[0] * out[2] * out[3]
    return each * math.prod(data) + 6 * each * math.prod(out) + 48 * points


register(
    OpDef(type="GridSample", version=9, since_opset=9,
          attrs=(Attr("align_corners", "bool", False),
                 Attr("mode", "enum", "bilinear", MODES),
                 Attr("padding_mode", "enum", "zeros", PADDINGS)),
          infer=_grid_infer, kernel=_grid_sample, inputs=(2, 2),
          input_types=(NUMBERS, FLOATS),
          shape_attrs=("mode", "padding_mode"), scratch=_grid_scratch)
)  # fmt: skip
