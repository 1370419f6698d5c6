"""ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1 (transposed
convolutions) over 1, 2 or 3 spatial dims.

Each input element scatters its filter, scaled, into a "full" output of
``s*(I-1) + d*(K-1) + 1`` positions per axis; the result is a window of that,
zeros beyond it.  Where the window begins and how long it is (:func:`window`):

* without the ``output_shape`` input, ``explicit`` pads crop ``pads_begin`` and
  ``pads_end`` off the full output; ``valid`` and ``same_*`` crop nothing;
  ``output_padding`` then adds positions at the end (which may be full output
  that ``pads_end`` cropped);
* with it, the window is that long, and begins at ``pads_begin`` (``explicit``),
  0 (``valid``), or at ``ceil(t/2)`` (``same_upper``) or ``floor(t/2)``
  (``same_lower``) of the surplus ``t = full + output_padding - output_shape``
  (0 if negative), as OpenVINO places it.

Computation: one matrix product per group of the filters ``[Co * taps, Ci]``
with the input ``[Ci, positions]``, then one strided add per tap into the full
output, in f32 (f16 in f32 and rounded once).  The summation order differs from
the CPU plugin's, so values agree within rounding.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import DYNAMIC, Dim, format_shape, map_bounds
from ..ir.element_types import FLOATS, INTEGERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from . import convolution as conv
from ._shapes import check_vector, flat_ints, int_values, same_element_type, try_merge_dims

ATTRS = (*conv.ATTRS, Attr("output_padding", "ints", ()))
SHAPE_ATTRS = (*conv.SHAPE_ATTRS, "output_padding")


def _check(a: SimpleNamespace) -> None:
    conv.check_attrs(a)
    n, extra = len(a.strides), a.output_padding
    if extra and len(extra) != n:
        raise KernelError(f"output_padding has {len(extra)} values {list(extra)} but strides "
                         f"has {n} {list(a.strides)}")  # fmt: skip
    if any(v < 0 for v in extra):
        raise KernelError(f"output_padding must not be negative, got {list(extra)}")


def _per_axis(values: Sequence[int], n: int) -> tuple[int, ...]:
    return tuple(values) if values else (0,) * n


def window(a: SimpleNamespace, size: int, kernel: int, axis: int,
           requested: int | None = None, strict: bool = True) -> tuple[int, int]:  # fmt: skip
    """Where the output begins in the full output of one axis, and its length
    (a ShapeError if that would be negative, unless not ``strict``).

    >>> a = SimpleNamespace(strides=(2,), dilations=(1,), pads_begin=(1,), pads_end=(2,),
    ...                     auto_pad="explicit", output_padding=(1,))
    >>> window(a, 5, 3, 0), window(a, 5, 3, 0, requested=10)
    ((1, 9), (1, 10))
    """
    s, d = a.strides[axis], (a.dilations or (1,) * len(a.strides))[axis]
    n = len(a.strides)
    pb, pe = _per_axis(a.pads_begin, n)[axis], _per_axis(a.pads_end, n)[axis]
    extra = _per_axis(a.output_padding, n)[axis]
    full = s * (size - 1) + d * (kernel - 1) + 1
    explicit = a.auto_pad in ("explicit", "notset")
    if requested is None:
        out = full - pb - pe + extra if explicit else full + extra
        begin = pb if explicit else 0
    else:
        out = requested
        surplus = max(full + extra - out, 0)
        begin = {"same_upper": surplus - surplus // 2, "same_lower": surplus // 2}.get(
            a.auto_pad, pb if explicit else 0)  # fmt: skip
    if out < 0 and strict:
        raise ShapeError(f"the output of spatial axis {axis} would have {out} positions "
                         f"(input {size}, kernel {kernel}, stride {s}, dilation {d}, pads "
                         f"{pb}/{pe}, output_padding {extra})")  # fmt: skip
    return begin, max(out, 0)


def _infer(grouped: bool):
    def infer(a: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
        data, filt = inputs[:2]
        et = same_element_type(inputs[:2])
        n = len(a.strides)
        if n not in (1, 2, 3):
            raise ShapeError(f"expected 1 to 3 spatial dims, got {n} strides")
        want = n + 3 if grouped else n + 2
        if filt.shape is not None and len(filt.shape) != want:
            raise ShapeError(f"filter {format_shape(filt.shape)} must have rank {want} for "
                             f"{n} spatial dims")  # fmt: skip
        if data.shape is not None and len(data.shape) != n + 2:
            raise ShapeError(f"data {format_shape(data.shape)} must have rank {n + 2} for {n} "
                             f"spatial dims (strides {list(a.strides)})")  # fmt: skip
        requested = None
        if len(inputs) == 3:
            check_vector(inputs[2], "output_shape", allow_scalar=False)
            shape = inputs[2].shape
            if shape is not None and isinstance(shape[0], int) and shape[0] != n:
                raise ShapeError(f"output_shape has {shape[0]} values for {n} spatial dims")
            requested = int_values(inputs[2])
        out_ch: Dim = DYNAMIC
        kernel: Sequence[Dim] | None = None
        if filt.shape is not None:
            fs = filt.shape
            g = fs[0] if grouped else 1
            ci, co = (fs[1], fs[2]) if grouped else (fs[0], fs[1])
            kernel = fs[-n:]
            if isinstance(g, int) and isinstance(co, int):
                out_ch = g * co
            if data.shape is not None and isinstance(g, int) and isinstance(ci, int) \
                    and try_merge_dims(data.shape[1], g * ci) is None:  # fmt: skip
                raise ShapeError(f"data has {data.shape[1]} channels but the filter "
                                 f"{format_shape(fs)} expects {g * ci}")  # fmt: skip
        if data.shape is None:
            return [TensorInfo(None, et)]
        spatial: list[Dim] = []
        for i in range(n):
            k = None if kernel is None else kernel[i]
            if len(inputs) == 3:
                spatial.append(DYNAMIC if requested is None else requested[i])
                if requested is not None and requested[i] < 0:
                    raise ShapeError(f"output_shape {requested} holds a negative size")
            elif isinstance(k, int):
                size = data.shape[2 + i]
                # Bounds of an unknown size may be too small for a window; a size is not.
                strict = isinstance(size, int)
                spatial.append(map_bounds(size, lambda v, k=k, i=i, strict=strict:
                                          window(a, v, k, i, strict=strict)[1]))  # fmt: skip
            else:
                spatial.append(DYNAMIC)
        return [TensorInfo((data.shape[0], out_ch, *spatial), et)]

    return infer


def convolve_transposed(x: np.ndarray, w: np.ndarray, a: SimpleNamespace,
                        requested: Sequence[int] | None = None) -> np.ndarray:  # fmt: skip
    """Grouped transposed convolution of ``x`` [N, G*Ci, *I] with ``w`` [G, Ci, Co, *K].

    >>> x = np.array([1, 2], np.float32).reshape(1, 1, 2)
    >>> w = np.array([1, 10, 100], np.float32).reshape(1, 1, 1, 3)
    >>> a = SimpleNamespace(strides=(2,), dilations=(1,), pads_begin=(0,), pads_end=(1,),
    ...                     auto_pad="explicit", output_padding=())
    >>> convolve_transposed(x, w, a).tolist()
    [[[1.0, 10.0, 102.0, 20.0]]]
    """
    groups, ci, co = w.shape[:3]
    kernel = w.shape[3:]
    n = len(kernel)
    if x.ndim != n + 2:
        raise KernelError(f"data has shape {list(x.shape)}, expected rank {n + 2}")
    if x.shape[1] != groups * ci:
        raise KernelError(f"data has {x.shape[1]} channels but the filter expects {groups} x "
                         f"{ci} = {groups * ci}")  # fmt: skip
    if requested is not None and len(requested) != n:
        raise KernelError(f"output_shape {list(requested)} has {len(requested)} values for {n} "
                         "spatial dims")  # fmt: skip
    sizes = x.shape[2:]
    where = [window(a, sizes[i], kernel[i], i, None if requested is None else requested[i])
             for i in range(n)]  # fmt: skip
    work = np.float32 if x.dtype.itemsize < 4 else x.dtype
    batch, taps = x.shape[0], int(np.prod(kernel, dtype=np.int64))
    xg = x.astype(work, copy=False).reshape(batch, groups, ci, -1)
    # [G, Co * taps, Ci] @ [N, G, Ci, P]: every tap's contribution at once.
    wt = w.astype(work, copy=False).reshape(groups, ci, co * taps).transpose(0, 2, 1)
    parts = np.matmul(wt, xg).reshape(batch, groups, co, taps, *sizes)
    dilations = a.dilations or (1,) * n
    # Only the window of the full output is made: each tap adds the input positions that
    # land in it, found in closed form, so strides, dilations and pads of any size cost
    # nothing beyond the input, the filter and the output.  In tap order, as before.
    acc = np.zeros((batch, groups, co, *(o for _, o in where)), work)
    for t, tap in enumerate(itertools.product(*(range(k) for k in kernel))):
        into, take = [], []
        for i, (begin, length) in enumerate(where):
            first = tap[i] * dilations[i] - begin  # where input position 0 lands
            step = a.strides[i]
            lo = max(0, -(first // step))  # the first input position at or past 0
            hi = min(sizes[i], -(-(length - first) // step))  # the last one before length
            if lo >= hi:
                break
            into.append(slice(first + lo * step, first + (hi - 1) * step + 1, step))
            take.append(slice(lo, hi))
        else:
            acc[(Ellipsis, *into)] += parts[(slice(None),) * 3 + (t, *take)]
    return acc.reshape(batch, groups * co, *acc.shape[3:]).astype(x.dtype)


def _scratch(grouped: bool):
    def scratch(a: SimpleNamespace, inputs: Sequence[TensorInfo],
                outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
        """:func:`convolve_transposed`'s memory beside its inputs and output: the data and
        the filter in the work type, every tap's contribution (``taps`` times the
        output channels at each input position) and the accumulator."""
        data, filt = inputs[:2]
        shapes = (data.shape, filt.shape, outputs[0].shape if outputs else None)
        if data.element_type is None or any(
            s is None or not all(isinstance(v, int) for v in s) for s in shapes
        ):
            return 0
        x_shape, w_shape, out_shape = shapes
        size = max(4, data.element_type.dtype.itemsize)
        n = len(x_shape) - 2
        taps = math.prod(w_shape[-n:]) if n else 1
        contributions = x_shape[0] * out_shape[1] * taps * math.prod(x_shape[2:])
        need = math.prod(x_shape) + math.prod(w_shape) + contributions + math.prod(out_shape)
        return need * size

    return scratch


def _kernel(grouped: bool):
    def kernel(a: SimpleNamespace, x: np.ndarray, w: np.ndarray,
               output_shape: np.ndarray | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
        if x.dtype != w.dtype:
            raise KernelError(f"data is {x.dtype} but the filter is {w.dtype}")
        want = x.ndim + 1 if grouped else x.ndim
        if w.ndim != want:
            raise KernelError(f"filter has shape {list(w.shape)}, expected rank {want}")
        requested = None if output_shape is None else flat_ints(output_shape)
        return (convolve_transposed(x, w if grouped else w[None], a, requested),)

    return kernel


# OpenVINO takes any number but boolean for the data and filter (one type) and any
# integer for output_shape; irrun computes the floats and the two f8 types with a sign.
_REALS = (*FLOATS, "f8e4m3", "f8e5m2")
INPUT_TYPES = (_REALS, _REALS, INTEGERS)

register(
    OpDef(
        type="ConvolutionBackpropData", version=1, since_opset=1, attrs=ATTRS,
        infer=_infer(False), kernel=_kernel(False), inputs=(2, 3), check=_check,
        shape_attrs=SHAPE_ATTRS, fresh_output=True, scratch=_scratch(False),
        input_types=INPUT_TYPES,
    )
)  # fmt: skip
register(
    OpDef(
        type="GroupConvolutionBackpropData", version=1, since_opset=1, attrs=ATTRS,
        infer=_infer(True), kernel=_kernel(True), inputs=(2, 3), check=_check,
        shape_attrs=SHAPE_ATTRS, fresh_output=True, scratch=_scratch(True),
        input_types=INPUT_TYPES,
    )
)  # fmt: skip
