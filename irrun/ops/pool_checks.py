"""MaxPool's and AvgPool's ``warn`` hook: windows that hold no input element.

OpenVINO accepts a pool whose windows lie wholly outside the input: ``ceil``
rounding can add a last window that starts past the end, and MaxPool allows
pads as large as the kernel.  Such a window yields NaN (AvgPool on the CPU
plugin; its reference kernel gives 0), 0 (AvgPool counting padding) or the
lowest value of the type (MaxPool), which is rarely what the model's author
meant, so the checker warns about it with the values that cause it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..ir.dims import Shape
from ..ir.registry import ShapeError, TensorInfo
from .window import clip_windows, output_size, pool_dilations, resolve_pads, with_defaults

# Axes with more windows than this are not examined (only absurd shapes have them).
MAX_WINDOWS = 1_000_000
_SHOWN = 5  # window indices listed in a message


def warn_empty_windows(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
    """The ``warn`` hook of MaxPool and AvgPool (see :func:`empty_windows`)."""
    return empty_windows(attrs, inputs[0].shape) if inputs else []


def empty_windows(attrs: SimpleNamespace, shape: Shape | None) -> list[str]:
    """One message per spatial axis that has windows without any input element.

    ``shape`` is the pool's input shape; axes of unknown size are skipped.

    >>> a = SimpleNamespace(kernel=(1,), strides=(3,), pads_begin=(0,), pads_end=(0,),
    ...                     auto_pad="explicit", rounding_type="ceil", exclude_pad=True)
    >>> print(empty_windows(a, (1, 1, 5))[0])
    1 window on spatial axis 0 holds no input element (output 2 starts at 6; input size 5, \
kernel 1, stride 3, dilation 1, pads 0/0, rounding_type=ceil): OpenVINO's CPU plugin gives \
NaN or -0.0 there (its reference implementation 0)
    """
    if shape is None or len(shape) - 2 != len(attrs.kernel):
        return []
    a = with_defaults(attrs)
    dil = pool_dilations(a)
    found: list[tuple[int, int, np.ndarray, np.ndarray, tuple[int, ...]]] = []
    any_pad = False
    for axis, size in enumerate(shape[2:]):
        if not isinstance(size, int):
            continue
        k, s, d = a.kernel[axis], a.strides[axis], dil[axis]
        pb, pe = resolve_pads(size, k, s, d, a.auto_pad, a.pads_begin[axis], a.pads_end[axis])
        any_pad = any_pad or pb > 0 or pe > 0
        try:
            out = output_size(size, k, s, d, pb, pe, a.rounding_type)
        except ShapeError:
            return []  # the shape rule reports it
        if out > MAX_WINDOWS:
            continue
        empty = clip_windows(size, k, s, d, pb, out)[1] == 0
        if empty.any():
            found.append((axis, size, np.flatnonzero(empty), (k, s, d, pb, pe)))
    return [_message(a, any_pad, *f) for f in found]


def _message(a: SimpleNamespace, any_pad: bool, axis: int, size: int, empty: np.ndarray,
             geometry: tuple[int, ...]) -> str:
    k, s, d, pb, pe = geometry
    n = len(empty)
    shown = ", ".join(str(i) for i in empty[:_SHOWN]) + (", ..." if n > _SHOWN else "")
    begins = ", ".join(str(int(i) * s - pb) for i in empty[:_SHOWN]) + (
        ", ..." if n > _SHOWN else "")
    several = n != 1
    where = (f"output{'s' * several} {shown} start{'' if several else 's'} at {begins}; "
             f"input size {size}, kernel {k}, stride {s}, dilation {d}, pads {pb}/{pe}, "
             f"rounding_type={a.rounding_type}")
    if not hasattr(a, "exclude_pad"):
        effect = "OpenVINO gives the lowest value of the element type there (-3.4e38 for f32)"
    elif not a.exclude_pad and any_pad:
        effect = "their average is 0 (the divisor counts the padding)"
    else:
        # The plugin divides 0 by (size - start): NaN for a window starting at the end,
        # -0.0 for one starting past it.
        effect = "OpenVINO's CPU plugin gives NaN or -0.0 there (its reference implementation 0)"
    return (f"{n} window{'s' * several} on spatial axis {axis} hold{'' if several else 's'} "
            f"no input element ({where}): {effect}")
