"""Region pooling of Fast R-CNN and R-FCN: ROIPooling-2 and PSROIPooling-1.

Both read regions ``[batch_id, x1, y1, x2, y2]`` (``rois [R, 5]``; the batch id is
truncated to an integer and must name an image of the map) of a feature map
``[N, C, H, W]``, computed in the map's type (f32 for f16 and bf16, rounded once).

ROIPooling gives ``[R, C, pooled_h, pooled_w]``:

* ``max``: the region's corners are scaled by ``spatial_scale`` and rounded (half
  away from zero); the region is at least 1x1 pixel (``x2 - x1 + 1`` pixels, the
  corners included); bin ``(ph, pw)`` spans the pixels
  ``floor(ph * size / pooled) .. ceil((ph + 1) * size / pooled)`` (in f32) from the
  corner, clipped to the map, and takes their maximum, or 0 where the clipped bin is
  empty;
* ``bilinear``: the corners are fractions of the map (``spatial_scale`` plays no
  part); bin ``(ph, pw)`` samples the map bilinearly at ``y1 * (H - 1) + ph * (y2 -
  y1) * (H - 1) / (pooled_h - 1)`` (the last bin exactly at ``y2 * (H - 1)``; one bin:
  the middle), and is 0 where the sample falls outside ``[0, H - 1]`` (likewise x).

PSROIPooling (position-sensitive) gives ``[R, output_dim, group_size, group_size]``:

* ``average``: corners rounded to whole pixels (half away from zero), scaled by
  ``spatial_scale`` (the far corner + 1 first); the region at least 0.1 wide and
  high; bin ``(ph, pw)`` of output channel ``c`` averages input channel ``(c *
  group_size + ph) * group_size + pw`` over the pixels ``floor(start + k * bin) ..
  ceil(start + (k + 1) * bin)`` of each axis clipped to the map, or is 0 where the
  clipped bin is empty;
* ``bilinear``: each output bin averages ``spatial_bins_x * spatial_bins_y`` bilinear
  samples, sample bin ``(by, bx)`` read from input channel ``(by * spatial_bins_x +
  bx) * output_dim + c`` and placed as in ROIPooling's bilinear mode within that
  sample bin (the corners scaled by ``spatial_scale``, not rounded); a sample outside
  ``[0, size - 1]`` counts as 0.

PSROIPooling follows the CPU plugin, which follows Caffe's R-FCN layer; OpenVINO's
reference kernel differs for regions reaching past the map: it clips a bin's first
pixel to the last one (so a bin wholly outside averages the edge instead of giving
0), has no 0.1 minimum (an inverted region makes it loop nearly forever), converts
negative positions to unsigned indices (undefined), and keeps bilinear samples up to
``size`` rather than ``size - 1``.  Neither op has a reference ``evaluate`` in
OpenVINO's core, so the plugin is the oracle for both; f32 results agree with it to
about 1e-6 relative (it sums and interpolates in its own order; irrun sums average
bins from an f64 integral image).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._shapes import fmt, merge_dims

# f32, f16 and bf16: OpenVINO's checks take f64 too (and the CPU plugin runs it), but
# irrun's kernel has not been tested in f64 here.
FLOATS_NO_F64 = ("f32", "f16", "bf16")
F32 = np.float32
# Elements one step of ROIPooling's max gathers (a few regions at a time).
AT_ONCE = 1 << 22


def _check_inputs(inputs: Sequence[TensorInfo]) -> tuple[Dim, Dim]:
    """The number of regions and the map's channels, after checking the ranks."""
    x, rois = inputs[0].shape, inputs[1].shape
    et = inputs[0].element_type, inputs[1].element_type
    if None not in et and et[0] != et[1]:
        raise ShapeError(f"the map and the rois must have one element type, got {et[0].name} "
                         f"and {et[1].name}")  # fmt: skip
    if x is not None and len(x) != 4:
        raise ShapeError(f"the feature map must be 4-D [N, C, H, W], got {fmt(x)}")
    if rois is not None:
        if len(rois) != 2:
            raise ShapeError(f"rois must be 2-D [R, 5], got {fmt(rois)}")
        merge_dims(rois[1], 5, "rois' dim 1 must be 5 (batch id, x1, y1, x2, y2)")
    return (DYNAMIC if rois is None else rois[0]), (DYNAMIC if x is None else x[1])


def _batch_ids(rois: np.ndarray, batches: int) -> np.ndarray:
    ids = np.trunc(rois[:, 0]).astype(np.int64)
    if len(ids) and (ids.min() < 0 or ids.max() >= batches):
        raise KernelError(f"roi batch ids {ids.tolist()} must lie in 0..{batches - 1}")
    return ids


def _check_arrays(x: np.ndarray, rois: np.ndarray) -> None:
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        raise ShapeError(f"the map {list(x.shape)} and rois {list(rois.shape)} must be "
                         "[N, C, H, W] and [R, 5]")  # fmt: skip


def _round_half_away(v: np.ndarray) -> np.ndarray:
    return (np.sign(v) * np.floor(np.abs(v) + F32(0.5))).astype(F32)


# --------------------------------------------------------------------------- ROIPooling

ROI_POOLING_ATTRS = (
    Attr("output_size", "ints", ()),
    Attr("output_roi", "ints", ()),
    Attr("pooled_h", "int"),
    Attr("pooled_w", "int"),
    Attr("spatial_scale", "float"),
    Attr("method", "enum", "max", ("max", "bilinear")),
)


def _check_roi_pooling(a: SimpleNamespace) -> None:
    # OpenVINO reads pooled_h and pooled_w last: they win over output_size/output_roi.
    if a.pooled_h < 1 or a.pooled_w < 1:
        raise KernelError(f"pooled_h and pooled_w must be positive, got {a.pooled_h} and "
                          f"{a.pooled_w}")  # fmt: skip
    if not (a.spatial_scale > 0 and np.isfinite(a.spatial_scale)):
        raise KernelError(f"spatial_scale must be a positive number, got {a.spatial_scale}")


def _roi_pooling_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    count, channels = _check_inputs(inputs)
    et = inputs[0].element_type or inputs[1].element_type
    return [TensorInfo((count, channels, a.pooled_h, a.pooled_w), et)]


def _roi_pooling_kernel(a: SimpleNamespace, x: np.ndarray,
                        rois: np.ndarray) -> tuple[np.ndarray]:  # fmt: skip
    _check_arrays(x, rois)
    ids = _batch_ids(rois, x.shape[0])
    data, boxes = x.astype(F32), rois.astype(F32)
    if a.method == "bilinear":
        out = _bilinear_pool(data, ids, boxes[:, 1:], a.pooled_h, a.pooled_w)
    else:
        out = _max_pool(data, ids, boxes[:, 1:], a)
    return (out.astype(x.dtype),)


def _max_bins(start: np.ndarray, end: np.ndarray, pooled: int, size: int):
    """Per region and bin along one axis: the first pixel and the pixel past the last."""
    extent = np.maximum(end - start + 1, 1)
    bin_size = extent.astype(F32) / F32(pooled)
    k = np.arange(pooled, dtype=F32)
    lo = np.floor(k[None] * bin_size[:, None]).astype(np.int64) + start[:, None]
    hi = np.ceil((k[None] + F32(1)) * bin_size[:, None]).astype(np.int64) + start[:, None]
    return np.clip(lo, 0, size), np.clip(hi, 0, size)


def _max_pool(data: np.ndarray, ids: np.ndarray, boxes: np.ndarray,
              a: SimpleNamespace) -> np.ndarray:  # fmt: skip
    """Max over each bin: columns first (a mask over W per bin), then rows."""
    _, c, h, w = data.shape
    corners = _round_half_away(boxes * F32(a.spatial_scale)).astype(np.int64)
    ys, ye = _max_bins(corners[:, 1], corners[:, 3], a.pooled_h, h)
    xs, xe = _max_bins(corners[:, 0], corners[:, 2], a.pooled_w, w)
    out = np.zeros((len(boxes), c, a.pooled_h, a.pooled_w), F32)
    low = F32(-np.inf)
    cols, rows = np.arange(w), np.arange(h)
    step = max(1, AT_ONCE // max(1, c * h * w * max(a.pooled_w, a.pooled_h)))
    for first in range(0, len(boxes), step):
        part = slice(first, first + step)
        in_x = (cols >= xs[part, :, None]) & (cols < xe[part, :, None])  # [r, PW, W]
        in_y = (rows >= ys[part, :, None]) & (rows < ye[part, :, None])  # [r, PH, H]
        maps = data[ids[part]]  # [r, C, H, W]
        by_col = np.where(in_x[:, None, None], maps[:, :, :, None, :], low).max(axis=-1)
        # by_col [r, C, H, PW] -> [r, C, PH, PW]
        pooled = np.where(in_y[:, None, :, :, None], by_col[:, :, None], low).max(axis=3)
        out[part] = np.where(np.isneginf(pooled), F32(0), pooled)
    return out


def _bilinear_pool(data: np.ndarray, ids: np.ndarray, boxes: np.ndarray, pooled_h: int,
                   pooled_w: int) -> np.ndarray:  # fmt: skip
    _, _, h, w = data.shape
    in_y = _positions(boxes[:, 1], boxes[:, 3], pooled_h, h)  # [R, PH]
    in_x = _positions(boxes[:, 0], boxes[:, 2], pooled_w, w)  # [R, PW]
    return _interpolate(data, ids, in_y, in_x, h, w)


def _positions(start: np.ndarray, end: np.ndarray, pooled: int, size: int) -> np.ndarray:
    """ROIPooling's bilinear sample positions along one axis, in f32 as OpenVINO has them."""
    span = F32(size - 1)
    if pooled == 1:
        return (F32(0.5) * (start + end) * span).astype(F32)[:, None]
    scale = (end - start) * span / F32(pooled - 1)
    k = np.arange(pooled, dtype=F32)
    pos = k[None] * scale[:, None] + (start * span)[:, None]
    pos[:, -1] = span * end
    return pos.astype(F32)


def _interpolate(data: np.ndarray, ids: np.ndarray, in_y: np.ndarray, in_x: np.ndarray,
                 h: int, w: int) -> np.ndarray:  # fmt: skip
    """``[R, C, PH, PW]`` bilinear samples at rows ``in_y [R, PH]`` and columns
    ``in_x [R, PW]``; 0 outside ``[0, size - 1]``."""
    ok_y = (in_y >= 0) & (in_y <= F32(h - 1))
    ok_x = (in_x >= 0) & (in_x <= F32(w - 1))
    y = np.where(ok_y, in_y, F32(0))
    x = np.where(ok_x, in_x, F32(0))
    top, left = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    bottom = np.minimum(np.ceil(y).astype(np.int64), h - 1)
    right = np.minimum(np.ceil(x).astype(np.int64), w - 1)
    fy = (y - top.astype(F32))[:, None, :, None]
    fx = (x - left.astype(F32))[:, None, None, :]
    b = ids[:, None, None, None]
    ch = np.arange(data.shape[1])[None, :, None, None]

    def at(rows, cols):
        return data[b, ch, rows[:, None, :, None], cols[:, None, None, :]]

    tl, tr, bl, br = at(top, left), at(top, right), at(bottom, left), at(bottom, right)
    upper = tl + (tr - tl) * fx
    lower = bl + (br - bl) * fx
    value = upper + (lower - upper) * fy
    ok = ok_y[:, None, :, None] & ok_x[:, None, None, :]
    return np.where(ok, value, F32(0)).astype(F32)


def _roi_pooling_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                         outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The map in f32, the regions' maps gathered and their masked copies (AT_ONCE
    elements, or one region's), and the output's f32 twin and bilinear taps."""
    x = inputs[0].shape
    out = outputs[0].shape if outputs else None
    if x is None or out is None or not all(isinstance(d, int) for d in (*x, *out)):
        return 0
    n, c, h, w = x
    per_region = c * h * w * max(a.pooled_w, a.pooled_h)
    gathered = max(min(AT_ONCE, out[0] * per_region), per_region)
    return 4 * n * c * h * w + 12 * gathered + 48 * int(np.prod(out))


register(OpDef(type="ROIPooling", version=2, since_opset=2, attrs=ROI_POOLING_ATTRS,
               infer=_roi_pooling_infer, kernel=_roi_pooling_kernel, inputs=(2, 2),
               check=_check_roi_pooling, input_types=(FLOATS_NO_F64, FLOATS_NO_F64),
               shape_attrs=("pooled_h", "pooled_w"), scratch=_roi_pooling_scratch))  # fmt: skip


# --------------------------------------------------------------------------- PSROIPooling

PSROI_ATTRS = (
    Attr("output_dim", "int"),
    Attr("group_size", "int", 1),
    Attr("spatial_scale", "float"),
    Attr("mode", "enum", "average", ("average", "bilinear")),
    Attr("spatial_bins_x", "int", 1),
    Attr("spatial_bins_y", "int", 1),
)


def _check_psroi(a: SimpleNamespace) -> None:
    if a.group_size < 1 or a.output_dim < 0:
        raise KernelError(f"group_size must be positive and output_dim not negative, got "
                          f"{a.group_size} and {a.output_dim}")  # fmt: skip
    if a.mode == "bilinear" and (a.spatial_bins_x < 1 or a.spatial_bins_y < 1):
        raise KernelError(f"spatial_bins_x and spatial_bins_y must be positive, got "
                          f"{a.spatial_bins_x} and {a.spatial_bins_y}")  # fmt: skip
    if not (a.spatial_scale > 0 and np.isfinite(a.spatial_scale)):
        raise KernelError(f"spatial_scale must be a positive number, got {a.spatial_scale}")


def _psroi_channels(a: SimpleNamespace) -> int:
    bins = a.group_size**2 if a.mode == "average" else a.spatial_bins_x * a.spatial_bins_y
    return a.output_dim * bins


def _psroi_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    count, channels = _check_inputs(inputs)
    merge_dims(channels, _psroi_channels(a), f"the map's channels must be output_dim * "
               f"{'group_size**2' if a.mode == 'average' else 'spatial_bins_x * spatial_bins_y'}"
               f" = {_psroi_channels(a)}")  # fmt: skip
    et = inputs[0].element_type or inputs[1].element_type
    return [TensorInfo((count, a.output_dim, a.group_size, a.group_size), et)]


def _psroi_kernel(a: SimpleNamespace, x: np.ndarray, rois: np.ndarray) -> tuple[np.ndarray]:
    _check_arrays(x, rois)
    n, c = x.shape[:2]
    if c != _psroi_channels(a):
        raise ShapeError(f"the map has {c} channels, PSROIPooling needs {_psroi_channels(a)}")
    ids = _batch_ids(rois, n)
    boxes = rois[:, 1:].astype(F32) if rois.dtype != F32 else rois[:, 1:]
    if a.mode == "average":
        out = _ps_average(x.astype(F32), ids, boxes, a)
    else:
        out = _ps_bilinear(x.astype(F32), ids, boxes, a)
    return (out.astype(x.dtype),)


def _ps_average(data: np.ndarray, ids: np.ndarray, boxes: np.ndarray,
                a: SimpleNamespace) -> np.ndarray:  # fmt: skip
    """Window sums from an integral image (in f64) of every channel."""
    _, _, h, w = data.shape
    g, scale = a.group_size, F32(a.spatial_scale)
    corners = _round_half_away(boxes)
    start_x, start_y = corners[:, 0] * scale, corners[:, 1] * scale
    end_x, end_y = (corners[:, 2] + F32(1)) * scale, (corners[:, 3] + F32(1)) * scale
    x0, x1 = _ps_bins(start_x, end_x, g, w)
    y0, y1 = _ps_bins(start_y, end_y, g, h)
    table = np.zeros((*data.shape[:2], h + 1, w + 1), np.float64)
    inner = table[:, :, 1:, 1:]
    np.cumsum(data, axis=2, dtype=np.float64, out=inner)
    np.cumsum(inner, axis=3, out=inner)
    # Output channel c, bin (ph, pw) reads input channel (c * g + ph) * g + pw.
    channel = np.arange(a.output_dim * g * g).reshape(1, a.output_dim, g, g)
    b = ids[:, None, None, None]
    ya, yb = y0[:, None, :, None], y1[:, None, :, None]
    xa, xb = x0[:, None, None, :], x1[:, None, None, :]
    total = (table[b, channel, yb, xb] - table[b, channel, ya, xb]
             - table[b, channel, yb, xa] + table[b, channel, ya, xa])  # fmt: skip
    count = np.maximum(yb - ya, 0) * np.maximum(xb - xa, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total.astype(F32) / count.astype(F32)
    return np.where(count > 0, mean, F32(0)).astype(F32)


def _ps_bins(start: np.ndarray, end: np.ndarray, bins: int, size: int):
    """Average mode's pixel ranges ``[first, past)`` of each bin along one axis."""
    width = np.maximum(end - start, F32(0.1)) / F32(bins)  # at least 0.1, as in Caffe
    k = np.arange(bins, dtype=F32)
    lo = np.floor(start[:, None] + k[None] * width[:, None])
    hi = np.ceil(start[:, None] + (k[None] + F32(1)) * width[:, None])
    first = np.clip(lo, 0, size).astype(np.int64)
    past = np.clip(hi, 0, size).astype(np.int64)
    return first, past


def _ps_bilinear(data: np.ndarray, ids: np.ndarray, boxes: np.ndarray,
                 a: SimpleNamespace) -> np.ndarray:  # fmt: skip
    _, _, h, w = data.shape
    g, scale = a.group_size, F32(a.spatial_scale)
    sbx, sby = a.spatial_bins_x, a.spatial_bins_y
    start_x, start_y = boxes[:, 0] * scale, boxes[:, 1] * scale
    bin_w = (boxes[:, 2] * scale - start_x) / F32(sbx)
    bin_h = (boxes[:, 3] * scale - start_y) / F32(sby)
    px = _ps_points(start_x, bin_w, sbx, g, w)  # [R, SBX, G]
    py = _ps_points(start_y, bin_h, sby, g, h)  # [R, SBY, G]
    out = np.zeros((len(boxes), a.output_dim, g, g), F32)
    c_out = np.arange(a.output_dim)
    for by in range(sby):  # the sample bins: a small attribute
        for bx in range(sbx):
            channels = (by * sbx + bx) * a.output_dim + c_out
            out += _interpolate(data[:, channels], ids, py[:, by], px[:, bx], h, w)
    return (out / F32(sbx * sby)).astype(F32)


def _ps_points(start: np.ndarray, bin_size: np.ndarray, bins: int, pooled: int,
               size: int) -> np.ndarray:  # fmt: skip
    """Bilinear mode's sample positions ``[R, bins, pooled]`` along one axis."""
    span = F32(size - 1)
    k = np.arange(bins, dtype=F32)
    bin_start = start[:, None] + k[None] * bin_size[:, None]  # [R, bins]
    if pooled > 1:
        step = (bin_size * span / F32(pooled - 1))[:, None, None]
        p = np.arange(pooled, dtype=F32)[None, None, :]
        pos = p * step + (bin_start * span)[:, :, None]
    else:
        pos = ((bin_start + bin_start + bin_size[:, None]) * span / F32(2))[:, :, None]
    return pos.astype(F32)


def _psroi_scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                   outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """The map in f32 and its f64 integral image, and a few temporaries per output
    element (the taps and their weights)."""
    x = inputs[0].shape
    out = outputs[0].shape if outputs else None
    if x is None or out is None or not all(isinstance(d, int) for d in (*x, *out)):
        return 0
    n, c, h, w = x
    # The f32 map, the f64 table, and the buffer NumPy's in-place cumsum takes.
    return 12 * n * c * h * w + 8 * n * c * (h + 1) * (w + 1) + 96 * int(np.prod(out))


register(OpDef(type="PSROIPooling", version=1, since_opset=1, attrs=PSROI_ATTRS,
               infer=_psroi_infer, kernel=_psroi_kernel, inputs=(2, 2), check=_check_psroi,
               input_types=(FLOATS_NO_F64, FLOATS_NO_F64),
               shape_attrs=("output_dim", "group_size", "mode"),
               scratch=_psroi_scratch))  # fmt: skip
