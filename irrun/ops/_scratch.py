"""The scratch memory of kernels whose temporaries are whole tensors (``OpDef.scratch``).

Such a kernel holds at most a few arrays as large as its largest tensor (an input or an
output) beside its inputs and outputs, of the type it computes in: :func:`per_element`
declares how many bytes per element of that tensor, by the first input's kind, since
narrower floats are computed in f32 and integers through f32 and f64.  The figures are
measured (tests/ops/test_scratch.py runs every kernel under ``tracemalloc``, which sees
NumPy's arrays) and rounded up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

from ..ir.registry import Scratch, TensorInfo


def static_shape(info: TensorInfo) -> tuple[int, ...] | None:
    """``info``'s shape where every dim is known, else None."""
    shape = info.shape
    if shape is None or not all(isinstance(d, int) for d in shape):
        return None
    return tuple(shape)


def largest(infos: Sequence[TensorInfo]) -> int:
    """Elements of the largest of ``infos`` with a static shape (0 if none has one)."""
    return max((math.prod(i.shape) for i in infos
                if i.shape is not None and all(isinstance(d, int) for d in i.shape)), default=0)


def per_element(wide: int, narrow: int | None = None, integer: int | None = None) -> Scratch:
    """Scratch of ``wide`` bytes per element of the op's largest tensor where its first
    input is f32 or f64, ``narrow`` where it is a narrower float, ``integer`` where it is
    an integer or boolean (each ``wide`` when not given)."""

    def scratch(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                outputs: Sequence[TensorInfo]) -> int:
        dtype = inputs[0].element_type.dtype if inputs and inputs[0].element_type else None
        each = wide
        if dtype is not None and (dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize < 4)):
            each = wide if narrow is None else narrow  # bf16 and the f8 types too
        elif dtype is not None and dtype.kind in "iub":
            each = wide if integer is None else integer
        return each * largest([*inputs, *outputs])

    return scratch


def nothing(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
            outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """No scratch: the kernel returns views of its inputs, or writes its outputs whole
    with no temporary as large as a tensor (index arrays of a few elements aside)."""
    return 0


def outputs_bytes(attrs: SimpleNamespace, inputs: Sequence[TensorInfo],
                  outputs: Sequence[TensorInfo]) -> int:  # fmt: skip
    """As much again as the outputs: the kernel builds them in pieces, then joins them."""
    return sum(math.prod(o.shape) * max(o.element_type.bits // 8, 1) for o in outputs
               if o.element_type is not None and o.shape is not None
               and all(isinstance(d, int) for d in o.shape))
