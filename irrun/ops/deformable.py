"""DeformableConvolution-1, DeformableConvolution-8 and DeformablePSROIPooling-1 (at the end).

DeformableConvolution: a 2D convolution at shifted positions.

Data ``x`` ``[N, C, H, W]``, offsets ``[N, DG*2*KH*KW, Ho, Wo]``, filters ``[Co, C/G, KH,
KW]`` and (v8) an optional mask ``[N, DG*KH*KW, Ho, Wo]``, with ``G = group`` and ``DG =
deformable_group``.  Tap ``t = (i, j)`` (row-major, ``t = i*KW + j``) of output position
``(oy, ox)`` reads input channel ``c`` (of deformable group ``d = c // (C/DG)``) at

    y = oy*s_y - pad_y + i*dil_y + offsets[n, d*2*KH*KW + 2*t,     oy, ox]
    x = ox*s_x - pad_x + j*dil_x + offsets[n, d*2*KH*KW + 2*t + 1, oy, ox]

sampled bilinearly, times ``mask[n, d*KH*KW + t, oy, ox]`` (1 without a mask), and the
output is the grouped convolution of those samples with the filters: output channel ``o``
of group ``g`` sums over the group's ``C/G`` channels and the taps.  The output's spatial
shape is Convolution's (floor rounding, ``auto_pad`` as there) and the offsets' and
mask's spatial dims must equal it.

The sampling follows OpenVINO's reference kernel:

- ``bilinear_interpolation_pad=false`` (and v1): a tap whose position lies outside
  ``0 <= y < H``, ``0 <= x < W`` contributes nothing; inside, the corners are
  ``floor(y)`` and ``min(ceil(y), H-1)`` (so past the last row the last row repeats), the
  weights ``y - floor(y)`` and its complement (likewise for x);
- ``bilinear_interpolation_pad=true``: a position with ``-1 < y < H`` and ``-1 < x < W``
  is sampled from the corners ``floor(y)`` and ``floor(y)+1``, a corner outside the
  input reading zero: the input padded with zeros.

A NaN position contributes nothing.  Reference kernel (:func:`deformable_convolve`): for
each tap, a whole-tensor gather of the four corners, their weighted sum times the mask,
and one matrix product per group with the tap's filter, added into an accumulator; f16
and bf16 are computed in f32, rounded once at the end.

OpenVINO's CPU plugin agrees with the reference in both sampling modes (the tests compare
them, offsets far past the input included): it sums in its own order, so values differ
within rounding; f64 is computed in f32 there.  It crashes (a segmentation fault, 2026.4)
on NaN offsets.  ``Model.evaluate`` has no kernel for these ops.  irrun requires the data's
channels to be a multiple of ``deformable_group``: OpenVINO's shape inference does not
check it, and its reference then reads offsets past the end.

DeformablePSROIPooling-1 (:func:`_psroi_kernel`): position-sensitive ROI pooling over a
``group_size`` square grid of bins, each moved by the optional offsets and averaged over
``spatial_bins_y x spatial_bins_x`` bilinear samples, as OpenVINO's reference; the CPU
plugin agrees but after a ROI of negative batch index (see the kernel's docstring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Interval, format_shape
from ..ir.element_types import FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._shapes import merge_dims, same_element_type, try_merge_dims
from .convolution import check_attrs, work_type
from .window import AUTO_PADS, Windows, pooled_shape, with_defaults

ATTRS_V1 = (
    Attr("strides", "ints"),
    Attr("dilations", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
    Attr("group", "int", 1),
    Attr("deformable_group", "int", 1),
)
ATTRS_V8 = (*ATTRS_V1, Attr("bilinear_interpolation_pad", "bool", False))
SHAPE_ATTRS = ("strides", "dilations", "pads_begin", "pads_end", "auto_pad", "group",
               "deformable_group")  # fmt: skip


def _check(a: SimpleNamespace) -> None:
    check_attrs(a)
    if len(a.strides) != 2:
        raise KernelError(f"strides {list(a.strides)} must have 2 values (2D data)")
    for name in ("group", "deformable_group"):
        if getattr(a, name) < 1:
            raise KernelError(f"{name} must be at least 1, got {getattr(a, name)}")


def _pool(a: SimpleNamespace, kernel: Sequence[int]) -> SimpleNamespace:
    pool = SimpleNamespace(
        kernel=tuple(kernel), strides=tuple(a.strides), dilations=tuple(a.dilations),
        pads_begin=tuple(a.pads_begin), pads_end=tuple(a.pads_end), auto_pad=a.auto_pad,
        rounding_type="floor",
    )  # fmt: skip
    return with_defaults(pool)


def _divisible(dim, by: int, what: str) -> None:
    if isinstance(dim, int) and dim % by:
        raise ShapeError(what)


def _infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, offsets, filt = inputs[:3]
    mask = inputs[3] if len(inputs) > 3 else None
    et = same_element_type(inputs)
    g, dg = a.group, a.deformable_group
    for name, info in (("data", data), ("offsets", offsets), ("filters", filt), ("mask", mask)):
        if info is not None and info.shape is not None and len(info.shape) != 4:
            raise ShapeError(f"{name} {format_shape(info.shape)} must have rank 4")
    if data.shape is None and offsets.shape is None and filt.shape is None:
        return [TensorInfo(None, et)]  # OpenVINO knows not even the rank then
    batch = DYNAMIC if data.shape is None else data.shape[0]
    if data.shape is not None:
        _divisible(data.shape[1], g, f"data has {data.shape[1]} channels, not a multiple of "
                                     f"group {g}")  # fmt: skip
        _divisible(data.shape[1], dg, f"data has {data.shape[1]} channels, not a multiple of "
                                      f"deformable_group {dg}")  # fmt: skip
    taps = None
    if filt.shape is not None:
        co, ci, kh, kw = filt.shape
        _divisible(co, g, f"filters {format_shape(filt.shape)} have {co} output channels, "
                          f"not a multiple of group {g}")  # fmt: skip
        known = data.shape is not None and isinstance(ci, int)
        if known and try_merge_dims(data.shape[1], ci * g) is None:
            raise ShapeError(
                f"data has {data.shape[1]} channels but the filters "
                f"{format_shape(filt.shape)} with group {g} expect {ci * g}"
            )
        if isinstance(kh, int) and isinstance(kw, int):
            taps = kh * kw
    for name, info, per_tap in (("offsets", offsets, 2), ("mask", mask, 1)):
        if info is None or info.shape is None:
            continue
        if name == "offsets":  # OpenVINO takes the batch from data and offsets alone
            batch = merge_dims(batch, info.shape[0], f"batch of data and {name}")
        elif try_merge_dims(batch, info.shape[0]) is None:
            raise ShapeError(f"batch of data and {name}: {batch} != {info.shape[0]}")
        if taps is not None and try_merge_dims(info.shape[1], per_tap * taps * dg) is None:
            raise ShapeError(
                f"{name} {format_shape(info.shape)} must have {per_tap * taps * dg} channels "
                f"({per_tap} per tap of the {format_shape(filt.shape)} filters, deformable_group "
                f"{dg})"
            )
    out_ch = DYNAMIC if filt.shape is None else filt.shape[0]
    if filt.shape is None:
        spatial = [DYNAMIC, DYNAMIC]
    else:
        image = (DYNAMIC,) * 4 if data.shape is None else data.shape
        kernel = [k if isinstance(k, int) else 1 for k in filt.shape[2:]]
        spatial = list(pooled_shape(image, _pool(a, kernel))[2:])
        for i, k in enumerate(filt.shape[2:]):
            if not isinstance(k, int) and a.auto_pad not in ("same_upper", "same_lower"):
                # Any kernel: at most the windows of a kernel of 1, at least one (OpenVINO's).
                hi = spatial[i] if isinstance(spatial[i], int) else spatial[i].hi
                spatial[i] = Interval(1, hi)
    for name, info in (("offsets", offsets), ("mask", mask)):
        if info is None or info.shape is None:
            continue
        for k in range(2):
            # Checked, not merged into the output (as OpenVINO's shape inference).
            if try_merge_dims(spatial[k], info.shape[2 + k]) is None:
                raise ShapeError(
                    f"{name} {format_shape(info.shape)} must have the output's spatial dims "
                    f"{format_shape(tuple(spatial))}"
                )
    return [TensorInfo((batch, out_ch, *spatial), et)]


def _corners(pos: np.ndarray, size: int, pad: bool):
    """Per axis: whether a position is sampled, its two corners (clipped into the input)
    with whether each lies inside, and the weight of the second corner."""
    finite = np.where(np.isnan(pos), -2.0, pos)
    taken = ((finite > -1) if pad else (finite >= 0)) & (finite < size)
    safe = np.clip(finite, -1, size)  # no overflow when made integers
    lo = np.floor(safe)
    hi = lo + 1 if pad else np.minimum(np.ceil(safe), size - 1)
    frac = safe - lo
    lo_i, hi_i = lo.astype(np.int64), hi.astype(np.int64)
    ins = ((lo_i >= 0) & (lo_i < size), (hi_i >= 0) & (hi_i < size))
    return taken, (np.clip(lo_i, 0, size - 1), np.clip(hi_i, 0, size - 1)), ins, frac


def _sample(xd: np.ndarray, y: np.ndarray, x: np.ndarray, pad: bool) -> np.ndarray:
    """``xd`` [N, DG, Cd, H, W] sampled at ``y``, ``x`` [N, DG, P]: [N, DG, Cd, P]."""
    n, dg, cd, h, w = xd.shape
    flat = xd.reshape(n, dg, cd, h * w)
    ty, ys, yin, fy = _corners(y, h, pad)
    tx, xs, xin, fx = _corners(x, w, pad)
    taken = ty & tx
    out = np.zeros((n, dg, cd, y.shape[-1]), flat.dtype)
    for yi, yok, wy in zip(ys, yin, (1 - fy, fy), strict=True):
        for xi, xok, wx in zip(xs, xin, (1 - fx, fx), strict=True):
            index = (yi * w + xi)[:, :, None, :]
            seen = np.take_along_axis(flat, index, axis=3)
            use = (taken & yok & xok)[:, :, None, :]
            out += np.where(use, seen, 0) * (wy * wx).astype(flat.dtype)[:, :, None, :]
    return out


def deformable_convolve(a: SimpleNamespace, x: np.ndarray, offsets: np.ndarray, w: np.ndarray,
                        mask: np.ndarray | None, pad: bool) -> np.ndarray:  # fmt: skip
    """The deformable convolution of the module's docstring: a new array of x's type."""
    _check_shapes(a, x, offsets, w, mask)
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    g, dg = a.group, a.deformable_group
    win = Windows.of((h, wd), _pool(a, (kh, kw)))
    ho, wo = win.out
    work = work_type(x.dtype)
    xd = x.astype(work).reshape(n, dg, c // dg, h, wd)
    off = offsets.astype(work).reshape(n, dg, kh * kw, 2, ho * wo)
    m = None if mask is None else mask.astype(work).reshape(n, dg, kh * kw, ho * wo)
    rows = (np.arange(ho) * win.strides[0] - win.pads_begin[0]).astype(work)
    cols = (np.arange(wo) * win.strides[1] - win.pads_begin[1]).astype(work)
    base_y = np.repeat(rows, wo)
    base_x = np.tile(cols, ho)
    filt = w.astype(work).reshape(g, co // g, ci, kh * kw)
    acc = np.zeros((n, g, co // g, ho * wo), work)
    for t in range(kh * kw):
        i, j = divmod(t, kw)
        y = base_y + work.type(i * win.dilations[0]) + off[:, :, t, 0]
        xx = base_x + work.type(j * win.dilations[1]) + off[:, :, t, 1]
        seen = _sample(xd, y, xx, pad)
        if m is not None:
            seen *= m[:, :, t][:, :, None, :]
        seen = seen.reshape(n, g, ci, ho * wo)
        acc += np.matmul(filt[:, :, :, t], seen)
    return acc.reshape(n, co, ho, wo).astype(x.dtype, copy=False)


def _check_shapes(a, x, offsets, w, mask) -> None:
    arrays = {"data": x, "offsets": offsets, "filters": w, "mask": mask}
    for name, arr in arrays.items():
        if arr is not None and arr.ndim != 4:
            raise KernelError(f"{name} has shape {list(arr.shape)}, expected rank 4")
        if arr is not None and arr.dtype != x.dtype:
            raise KernelError(f"data is {x.dtype} but {name} is {arr.dtype}")
    n, c, h, wd = x.shape
    co, ci, kh, kw = w.shape
    g, dg = a.group, a.deformable_group
    if c != ci * g or co % g:
        raise KernelError(f"data {list(x.shape)} and filters {list(w.shape)} do not fit group {g}")
    if c % dg:
        raise KernelError(f"data has {c} channels, not a multiple of deformable_group {dg}")
    win = Windows.of((h, wd), _pool(a, (kh, kw)))
    for name, arr, per_tap in (("offsets", offsets, 2), ("mask", mask, 1)):
        if arr is not None and arr.shape != (n, per_tap * kh * kw * dg, *win.out):
            raise KernelError(
                f"{name} has shape {list(arr.shape)}, expected "
                f"{[n, per_tap * kh * kw * dg, *win.out]}"
            )


def _kernel_v1(a: SimpleNamespace, x, offsets, w) -> tuple[np.ndarray, ...]:
    return (deformable_convolve(a, x, offsets, w, None, pad=False),)


def _kernel_v8(a: SimpleNamespace, x, offsets, w, mask=None) -> tuple[np.ndarray, ...]:
    return (deformable_convolve(a, x, offsets, w, mask, pad=a.bilinear_interpolation_pad),)


def _scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
             outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """A tap's positions and corner indices (about 16 arrays of 8 bytes per offset position
    of a deformable group), its samples and their temporaries (4 arrays of the data's
    channels by the output positions), the inputs in the work type and the accumulator."""
    data, offsets, filt = inputs[:3]
    shapes = [i.shape for i in (data, offsets, filt)]
    if data.element_type is None or any(
        s is None or not all(isinstance(v, int) for v in s) for s in shapes
    ):
        return 0
    n, c = data.shape[:2]
    p = math.prod(offsets.shape[2:])
    size = work_type(data.element_type.dtype).itemsize
    dg = max(a.deformable_group, 1)
    conversions = sum(math.prod(i.shape) for i in inputs if i.shape is not None)
    return (
        16 * 8 * n * dg * p
        + 5 * size * n * c * p
        + size * n * filt.shape[0] * p
        + size * conversions
        + size * math.prod(filt.shape)
    )


register(
    OpDef(
        type="DeformableConvolution", version=1, since_opset=1, attrs=ATTRS_V1, infer=_infer,
        kernel=_kernel_v1, inputs=(3, 3), check=_check, shape_attrs=SHAPE_ATTRS,
        input_types=(FLOATS, FLOATS, FLOATS), fresh_output=True, scratch=_scratch,
    )
)  # fmt: skip
register(
    OpDef(
        type="DeformableConvolution", version=8, since_opset=8, attrs=ATTRS_V8, infer=_infer,
        kernel=_kernel_v8, inputs=(3, 4), check=_check, shape_attrs=SHAPE_ATTRS,
        input_types=(FLOATS, FLOATS, FLOATS, FLOATS), fresh_output=True, scratch=_scratch,
    )
)  # fmt: skip


# --- DeformablePSROIPooling-1 ---------------------------------------------------------------

PSROI_ATTRS = (
    Attr("output_dim", "int"),
    Attr("spatial_scale", "float"),
    Attr("group_size", "int", 1),
    Attr("mode", "enum", "bilinear_deformable", ("bilinear_deformable",)),
    Attr("spatial_bins_x", "int", 1),
    Attr("spatial_bins_y", "int", 1),
    Attr("trans_std", "float", 1.0),
    Attr("part_size", "int", 1),
)


def _check_psroi(a: SimpleNamespace) -> None:
    for name in ("output_dim", "group_size", "spatial_bins_x", "spatial_bins_y", "part_size"):
        if getattr(a, name) < 1:
            raise KernelError(f"{name} must be at least 1, got {getattr(a, name)}")


def _infer_psroi(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, rois = inputs[:2]
    offsets = inputs[2] if len(inputs) > 2 else None
    et = same_element_type(inputs)
    for name, info, rank in (("data", data, 4), ("rois", rois, 2), ("offsets", offsets, 4)):
        if info is not None and info.shape is not None and len(info.shape) != rank:
            raise ShapeError(f"{name} {format_shape(info.shape)} must have rank {rank}")
    g = a.group_size
    count = DYNAMIC if rois.shape is None else rois.shape[0]
    return [TensorInfo((count, a.output_dim, g, g), et)]


def _psroi_kernel(a: SimpleNamespace, data: np.ndarray, rois: np.ndarray,
                  offsets: np.ndarray | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
    """DeformablePSROIPooling's reference: for each ROI ``(batch, x1, y1, x2, y2)`` (the
    corners rounded half away from zero, scaled, shifted by -0.5, the far ones by one pixel
    more) a ``group_size`` square grid of bins; bin ``(c, i, j)`` reads input channel
    ``(c*G + i)*G + j``, starts at its grid position (moved by ``offsets[roi, 2*k (x) or
    2*k+1 (y), i*part_size//G, j*part_size//G] * trans_std`` times the ROI's size, ``k =
    c // (output_dim / classes)``), and averages the bilinear samples at its
    ``spatial_bins_y x spatial_bins_x`` sub-bin corners that lie within half a pixel of
    the input (clamped into it): 0 when none does, and for a ROI of negative batch.

    The CPU plugin agrees (within rounding) but for a negative batch index: it gives zeros
    for that ROI and every later one (a terminator of the list of ROIs), the reference for
    that ROI alone, as here.  ``Model.evaluate`` has no kernel for it."""
    if data.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 5:
        raise KernelError(f"data {list(data.shape)} and rois {list(rois.shape)}: expected "
                          "[N, C, H, W] and [R, 5]")  # fmt: skip
    g, cout = a.group_size, a.output_dim
    n, c, h, w = data.shape
    if c != cout * g * g:
        raise KernelError(f"data has {c} channels, expected output_dim x group_size^2 = "
                          f"{cout * g * g}")  # fmt: skip
    f32 = np.float32
    r = rois.shape[0]
    batch = np.trunc(rois[:, 0].astype(np.float64))
    bad = (batch >= n) & (batch >= 0)
    if bad.any():
        raise KernelError(f"a ROI's batch index {int(batch[bad][0])} is past the {n} images")
    scale = f32(a.spatial_scale)
    raw = rois[:, 1:].astype(f32)
    corners = np.sign(raw) * np.floor(np.abs(raw) + f32(0.5))  # C's round: half away from 0
    x1 = corners[:, 0] * scale - f32(0.5)
    y1 = corners[:, 1] * scale - f32(0.5)
    x2 = (corners[:, 2] + f32(1)) * scale - f32(0.5)
    y2 = (corners[:, 3] + f32(1)) * scale - f32(0.5)
    rw = np.maximum(x2 - x1, f32(0.1))
    rh = np.maximum(y2 - y1, f32(0.1))
    bw, bh = rw / f32(g), rh / f32(g)
    cols = np.arange(g, dtype=f32)
    # Bins [R, C_out, G(i), G(j)]
    bx = (x1[:, None] + cols[None, :] * bw[:, None])[:, None, None, :]
    by = (y1[:, None] + cols[None, :] * bh[:, None])[:, None, :, None]
    bx = np.broadcast_to(bx, (r, cout, g, g)).astype(f32)
    by = np.broadcast_to(by, (r, cout, g, g)).astype(f32)
    if offsets is not None:
        classes = offsets.shape[1] // 2
        part = a.part_size
        if offsets.shape[0] != r or classes < 1 or offsets.shape[2:] != (part, part) or \
                cout % classes:  # fmt: skip
            raise KernelError(f"offsets have shape {list(offsets.shape)}, expected "
                              f"[{r}, 2 x classes dividing {cout}, {part}, {part}]")  # fmt: skip
        k = np.arange(cout) // (cout // classes)
        pi = np.arange(g) * part // g
        off = offsets.astype(f32) * f32(a.trans_std)
        ox = off[:, 2 * k][:, :, pi][:, :, :, pi]
        oy = off[:, 2 * k + 1][:, :, pi][:, :, :, pi]
        bx = bx + ox * rw[:, None, None, None]
        by = by + oy * rh[:, None, None, None]
    sbw = bw[:, None, None, None] / f32(a.spatial_bins_x)
    sbh = bh[:, None, None, None] / f32(a.spatial_bins_y)
    chan = (np.arange(cout)[:, None, None] * g + np.arange(g)[None, :, None]) * g + \
        np.arange(g)[None, None, :]  # fmt: skip
    work = work_type(data.dtype)
    flat = data.astype(work).reshape(n * c, h * w)
    rows = np.clip(batch, 0, n - 1).astype(np.int64)[:, None, None, None] * c + chan[None]
    total = np.zeros((r, cout, g, g), work)
    count = np.zeros((r, cout, g, g), np.int64)
    for sy in range(a.spatial_bins_y):
        y = by + f32(sy) * sbh
        for sx in range(a.spatial_bins_x):
            x = bx + f32(sx) * sbw
            inside = (y >= -0.5) & (y <= h - 0.5) & (x >= -0.5) & (x <= w - 0.5)
            yc = np.clip(np.nan_to_num(y), 0, h - 1).astype(f32)
            xc = np.clip(np.nan_to_num(x), 0, w - 1).astype(f32)
            top, left = np.floor(yc).astype(np.int64), np.floor(xc).astype(np.int64)
            bottom, right = np.ceil(yc).astype(np.int64), np.ceil(xc).astype(np.int64)
            dx = (xc - left).astype(work)
            dy = (yc - top).astype(work)
            tl, tr = flat[rows, top * w + left], flat[rows, top * w + right]
            bl, br = flat[rows, bottom * w + left], flat[rows, bottom * w + right]
            upper = tl + (tr - tl) * dx
            lower = bl + (br - bl) * dx
            value = upper + (lower - upper) * dy
            total += np.where(inside, value, 0).astype(work)
            count += inside
    out = np.where(count > 0, total / np.maximum(count, 1).astype(work), 0)
    out[batch < 0] = 0
    return (out.astype(data.dtype, copy=False),)


def _scratch_psroi(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                   outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """About 40 arrays of 8 bytes per bin (positions, corner indices, samples), the data in
    the work type and the offsets in f32."""
    shapes = [i.shape for i in (*inputs, *outputs)]
    if inputs[0].element_type is None or any(
        sh is None or not all(isinstance(v, int) for v in sh) for sh in shapes
    ):
        return 0
    return (
        320 * math.prod(outputs[0].shape)
        + 8 * math.prod(inputs[0].shape)
        + sum(4 * math.prod(i.shape) for i in inputs[1:])
    )


register(
    OpDef(
        type="DeformablePSROIPooling", version=1, since_opset=1, attrs=PSROI_ATTRS,
        infer=_infer_psroi, kernel=_psroi_kernel, inputs=(2, 3), check=_check_psroi,
        input_types=(FLOATS, FLOATS, FLOATS), scratch=_scratch_psroi,
    )
)  # fmt: skip
