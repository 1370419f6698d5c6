"""BinaryConvolution-1: a convolution of binarized data with a u1 filter (xnor-popcount).

Data ``x`` ``[N, C, H, W]`` (a float type) and filter ``w`` ``[Co, C,
KH, KW]`` of u1 (irrun reads u1 as OpenVINO defines it: the most significant bit of a byte
first).  In ``mode="xnor-popcount"`` a bit stands for +1 (1) or -1 (0): the data is
binarized as ``x > 0`` (so 0, -0 and NaN are -1), the padding holds ``pad_value``
binarized alike, and

    out[n, o, y] = sum over c and taps k of sign(x)[n, c, y*s + k*d - pb] * sign(w)[o, c, k]

that is ``2 * popcount(xnor(x, w)) - C * prod(K)`` over each window, the padding included.
The geometry (strides, pads, dilations, auto_pad, floor rounding) is Convolution's; the
output has the data's element type.

Reference kernel: the padded data's signs are ``(sign(x) - p)`` padded with zeros, plus
``p`` everywhere (``p`` the pad's sign), so the output is Convolution's reference
(:func:`irrun.ops.convolution.convolve`, exact: sums of +-1 and +-2 in f32) of
``sign(x) - p`` with ``sign(w)``, plus ``p`` times the sum of each filter's signs: no
padded copy.

Where OpenVINO differs (``Model.evaluate`` has no kernel for the op; its reference source
compares the raw data value with the bit, which agrees with the binarization above for data
of 0s and 1s, the spec's binary input):

- the CPU plugin reads the filter's bits least significant first within each byte,
  unlike OpenVINO's own u1 (its Convert, its reference kernel); the tests compare with it
  by giving it each byte's bits reversed;
- the plugin binarizes ``pad_value`` otherwise than its data: 1 as +1, 0 as nothing
  (the padding contributes neither +1 nor -1), any other value (0.5, 3) as -1; here the
  pad is binarized like the data (``pad_value > 0``), which the reference source's
  comparison agrees with for 0 and 1;
- the plugin's values are wrong when ``C * prod(K)`` bits of a filter do not fill whole
  bytes at each output channel (C not a multiple of 8): irrun follows the definition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, format_shape
from ..ir.element_types import ELEMENT_TYPES, FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from .convolution import SHAPE_ATTRS, _infer, _scratch, check_attrs, convolve
from .window import AUTO_PADS

F32 = ELEMENT_TYPES["f32"]

ATTRS = (
    Attr("strides", "ints"),
    Attr("dilations", "ints"),
    Attr("pads_begin", "ints", ()),
    Attr("pads_end", "ints", ()),
    Attr("auto_pad", "enum", "explicit", AUTO_PADS),
    Attr("mode", "enum", choices=("xnor-popcount",)),
    Attr("pad_value", "float"),
)

_conv_infer = _infer(False)


def _infer_binary(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    data, filt = inputs
    for name, info in (("data", data), ("filter", filt)):
        if info.shape is not None and len(info.shape) != 4:
            raise ShapeError(f"{name} {format_shape(info.shape)} must have rank 4 (2D)")
    # Convolution's rule on the shapes (the data's rank is 4 even when unknown); the
    # output has the data's type.
    shape = (DYNAMIC,) * 4 if data.shape is None else data.shape
    (out,) = _conv_infer(a, [TensorInfo(shape, data.element_type),
                             TensorInfo(filt.shape, data.element_type)])  # fmt: skip
    return [out]


def _check(a: SimpleNamespace) -> None:
    check_attrs(a)
    if len(a.strides) != 2:
        raise KernelError(f"strides {list(a.strides)} must have 2 values (2D data)")


def _kernel(a: SimpleNamespace, x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, ...]:
    if w.ndim != x.ndim:
        raise KernelError(f"filter has shape {list(w.shape)}, expected rank {x.ndim}")
    signs = np.where(x > 0, np.float32(1), np.float32(-1))
    pad = np.float32(1 if a.pad_value > 0 else -1)
    weights = np.where(w != 0, np.float32(1), np.float32(-1))
    out = convolve(signs - pad, weights[None], a)
    out += pad * weights.reshape(w.shape[0], -1).sum(axis=1).reshape(-1, *([1] * (x.ndim - 2)))
    return (out.astype(x.dtype),)


_conv_scratch = _scratch(False)


def _scratch_binary(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                    outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """Convolution's scratch on f32 signs, beside two f32 arrays of the data's signs, the
    filter's signs and the f32 output before its cast."""
    data, filt = inputs
    f32 = F32
    known = [TensorInfo(data.shape, f32), TensorInfo(filt.shape, f32)]
    shapes = [i.shape for i in (data, filt, *outputs)]
    if any(sh is None or not all(isinstance(v, int) for v in sh) for sh in shapes):
        return 0
    return _conv_scratch(a, known, outputs) + 4 * (
        2 * math.prod(data.shape) + math.prod(filt.shape) + math.prod(outputs[0].shape)
    )


register(
    OpDef(
        type="BinaryConvolution", version=1, since_opset=1, attrs=ATTRS, infer=_infer_binary,
        kernel=_kernel, inputs=(2, 2), check=_check, shape_attrs=SHAPE_ATTRS,
        input_types=(FLOATS, ("u1",)), fresh_output=True, scratch=_scratch_binary,
    )
)  # fmt: skip
