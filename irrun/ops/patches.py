"""Image patches into channels: ExtractImagePatches-3.

ExtractImagePatches-3 gathers ``sizes`` patches of an NCHW image, ``strides`` apart,
taps ``rates`` apart, into channels ordered (patch row, patch column, channel); taps
outside the image read 0.  ``same_*`` pads as OpenVINO's kernel does (no padding where
the total would reach the patch's span).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, format_shape
from ..ir.element_types import ANY
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import affine_dim, zeros

PATCH_PADS = ("valid", "same_upper", "same_lower")


def _check_patches(a: SimpleNamespace) -> None:
    for name in ("sizes", "strides", "rates"):
        values = getattr(a, name)
        if len(values) != 2:
            raise KernelError(f"{name} must hold [rows, cols], got {list(values)}")
        if name != "sizes" and min(values) < 1:
            raise KernelError(f"{name} {list(values)} must be 1 or more")


def _patch_count(size: int, k: int, stride: int, rate: int, pad: str) -> int:
    if pad == "valid":
        n = size - rate * (k - 1) - 1
        out = n // stride + 1 if n >= 0 else 0
    else:
        out = 1 + (size - 1) // stride
    return max(out, 0)


def _patches_infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    x = inputs[0]
    if x.shape is None:
        return [TensorInfo((DYNAMIC,) * 4, x.element_type)]
    if len(x.shape) != 4:
        raise ShapeError(f"the input must be 4-D, got shape {format_shape(x.shape)}")
    n, c, h, w = x.shape
    depth = affine_dim(c, a.sizes[0] * a.sizes[1], 0)
    rows, cols = (
        _patch_count(d, a.sizes[i], a.strides[i], a.rates[i], a.auto_pad)
        if isinstance(d, int) else DYNAMIC for i, d in enumerate((h, w)))  # fmt: skip
    return [TensorInfo((n, depth, rows, cols), x.element_type)]


def _patch_taps(size: int, out: int, k: int, stride: int, rate: int, pad: str):
    """(index, valid) arrays of shape [out, k]: which input row each tap reads."""
    span = k + (rate - 1) * (k - 1)
    begin = 0
    if pad != "valid":
        total = (-(-size // stride) - 1) * stride + span - size
        if 0 < total < span:
            begin = (total + 1) // 2 if pad == "same_lower" else total // 2
    taps = np.arange(out)[:, None] * stride - begin + np.arange(k)[None, :] * rate
    valid = (taps >= 0) & (taps < size)
    return np.clip(taps, 0, max(size - 1, 0)), valid


def _extract_image_patches(a: SimpleNamespace, x: np.ndarray) -> tuple[np.ndarray, ...]:
    (info,) = _patches_infer(a, [TensorInfo(x.shape, None)])
    shape = tuple(int(d) for d in info.shape)  # type: ignore[union-attr, arg-type]
    h, w = x.shape[2:]
    if x.size == 0 or 0 in shape:
        return (zeros(shape, x.dtype),)
    (kh, kw), (sh, sw), (rh, rw) = a.sizes, a.strides, a.rates
    rows, rows_ok = _patch_taps(h, shape[2], kh, sh, rh, a.auto_pad)
    cols, cols_ok = _patch_taps(w, shape[3], kw, sw, rw, a.auto_pad)
    # [N, C, OH, KH, OW, KW]; taps outside the image read 0.
    got = x[:, :, rows[:, :, None, None], cols[None, None, :, :]]
    ok = rows_ok[:, :, None, None] & cols_ok[None, None, :, :]
    got = np.where(ok, got, zeros((), x.dtype))
    # Output channel (kh * KW + kw) * C + c, as OpenVINO orders patches.
    out = got.transpose(0, 3, 5, 1, 2, 4).reshape(shape)
    return (np.ascontiguousarray(out),)


register(
    OpDef(type="ExtractImagePatches", version=3, since_opset=3,
          attrs=(Attr("sizes", "ints"), Attr("strides", "ints"), Attr("rates", "ints"),
                 Attr("auto_pad", "enum", choices=PATCH_PADS)),
          infer=_patches_infer, kernel=_extract_image_patches, check=_check_patches,
          shape_attrs=("sizes", "strides", "rates", "auto_pad"), input_types=(ANY,),
          scratch=per_element(12))
)  # fmt: skip
