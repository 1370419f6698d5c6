"""ROIAlign-3 and -9 with a fixed sampling ratio: the reference's arithmetic, with each
bilinear tap gathered as rows of a flat channels-last map and the samples pooled in
cache-sized chunks.

The reference (:func:`irrun.ops.detection._roi_kernel`) gathers each tap's channels
with three index arrays (batch, row, column) at once, a slow path of NumPy's fancy
indexing, and pools up to ``SAMPLES_AT_ONCE`` (4 million) values at a time, 16 MB per
temporary.  Here a tap is one ``np.take`` of rows of the map laid out ``[N * H * W,
C]`` at the flat offsets ``(b * H + y) * W + x``, the four weighted taps are summed into
one array in place, in the reference's order (``w00 p00 + w01 p01``, then ``+ w10
p10``, then ``+ w11 p11``), and ``CHUNK`` values are pooled at a time.  The sample
positions, the taps' weights and the pooling (``sum(value / (sy * sx))`` over the
samples, or the max from 0 ignoring NaN) are the reference's own functions and
expressions: bit for bit.  torchvision's Faster and Mask R-CNN heads (sampling ratio 2)
take half the reference's time.

It gives way to the reference for an adaptive sampling ratio (0: a count per region),
empty outputs or feature maps, and whatever the reference refuses.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ops.detection import _samples, _taps
from .registry import FastKernel, register_fast

CHUNK = 1 << 20  # values (region x channel x bin x sample) pooled at a time


def _pool(flat: np.ndarray, shape: tuple[int, int, int], bidx: np.ndarray, ys: np.ndarray,
          xs: np.ndarray, mode: str) -> np.ndarray:  # fmt: skip
    """The reference's ``_pool`` from ``flat`` (``[N * H * W, C]``, ``shape`` its ``N,
    H, W``), samples at ``ys`` and ``xs`` (broadcast to ``[SY, SX, R, PH, PW]``):
    ``[R, PH, PW, C]``."""
    _, height, width = shape
    channels = flat.shape[1]
    in_y, y0, y1, ly, hy = _taps(ys, height)
    in_x, x0, x1, lx, hx = _taps(xs, width)
    b = bidx[None, None, :, None, None]
    inside = in_y & in_x
    zero = np.float32(0)
    row0, row1 = (b * height + y0) * width, (b * height + y1) * width
    grid = np.broadcast_shapes(inside.shape, row0.shape, x0.shape)

    def tap(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        at = np.broadcast_to(rows + cols, grid).reshape(-1)
        return np.take(flat, at, axis=0).reshape(*grid, channels)

    value = np.where(inside, hy * hx, zero)[..., None] * tap(row0, x0)
    value += np.where(inside, hy * lx, zero)[..., None] * tap(row0, x1)
    value += np.where(inside, ly * hx, zero)[..., None] * tap(row1, x0)
    value += np.where(inside, ly * lx, zero)[..., None] * tap(row1, x1)
    sy, sx = value.shape[:2]
    value = value.reshape(sy * sx, *value.shape[2:])
    if mode == "avg":
        return np.sum(value / np.float32(sy * sx), axis=0, dtype=np.float32)
    # max starts from 0 and a NaN sample never wins, as in the reference.
    return np.maximum(np.where(np.isnan(value), zero, value).max(axis=0), zero)


def _roi_align(a: SimpleNamespace, data: np.ndarray, rois: np.ndarray,
               batch_indices: np.ndarray):  # fmt: skip
    if (data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4 or batch_indices.ndim != 1
            or batch_indices.shape[0] != rois.shape[0] or a.sampling_ratio <= 0
            or a.pooled_h <= 0 or a.pooled_w <= 0 or 0 in data.shape or not len(rois)):
        return NotImplemented  # fmt: skip
    n, channels, height, width = data.shape
    bidx = batch_indices.astype(np.int64)
    if bidx.min() < 0 or bidx.max() >= n:
        return NotImplemented
    # As the reference: the regions' corners, bins and sample positions in f32.
    mode = getattr(a, "aligned_mode", "asymmetric")
    src = np.float32(0.5 if mode == "half_pixel" else 0.0)
    dst = np.float32(0.0 if mode == "asymmetric" else -0.5)
    scaled = (rois.astype(np.float32) + src) * np.float32(a.spatial_scale) + dst
    start_x, start_y = scaled[:, 0], scaled[:, 1]
    size_x, size_y = scaled[:, 2] - start_x, scaled[:, 3] - start_y
    if mode == "asymmetric":
        size_x, size_y = np.maximum(size_x, np.float32(1)), np.maximum(size_y, np.float32(1))
    bin_x, bin_y = size_x / np.float32(a.pooled_w), size_y / np.float32(a.pooled_h)
    s = a.sampling_ratio
    flat = np.ascontiguousarray(data.astype(np.float32).transpose(0, 2, 3, 1))
    flat = flat.reshape(n * height * width, channels)
    out = np.empty((len(rois), channels, a.pooled_h, a.pooled_w), np.float32)
    step = max(1, CHUNK // (channels * a.pooled_h * a.pooled_w * s * s))
    for first in range(0, len(rois), step):
        part = slice(first, first + step)
        ys = _samples(start_y[part], bin_y[part], s, a.pooled_h).transpose(2, 0, 1)
        xs = _samples(start_x[part], bin_x[part], s, a.pooled_w).transpose(2, 0, 1)
        pooled = _pool(flat, (n, height, width), bidx[part], ys[:, None, :, :, None],
                       xs[None, :, :, None, :], a.mode)  # fmt: skip
        out[part] = pooled.transpose(0, 3, 1, 2)
    return (out.astype(data.dtype),)


register_fast(FastKernel(
    "ROIAlign", (3, 9), "a fixed sampling ratio (> 0): taps gathered as rows of the flat "
    "channels-last map, pooled in chunks of about a million values", _roi_align))  # fmt: skip
