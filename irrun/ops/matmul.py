"""MatMul-1: batched matrix product with optional transposes, NumPy's rules for 1-D operands.

A 1-D first operand is a row ``[1, K]`` and a 1-D second one a column ``[K, 1]``;
the added axis is dropped from the result, and ``transpose_a``/``transpose_b``
are ignored for 1-D operands (OpenVINO's shape inference).  Batch dims broadcast
as in numpy.  f16, bf16 and the small floats are multiplied in f32 and rounded once
(the small floats as Convert rounds them; OpenVINO's reference computes bf16 in bf16,
rounding towards zero, an ulp or so from this); f32 sums in f32 (BLAS
order, so values match the CPU plugin within rounding, not bit for bit).  A MatMul
reads a strided view of its inputs (a Transpose's, say) as fast as a contiguous one.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import Shape, format_shape
from ..ir.element_types import ELEMENT_TYPES, LOW_FLOATS, NUMBERS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import broadcast_shapes, same_element_type, try_merge_dims
from .convert import convert


def matmul_shape(a: Shape | None, b: Shape | None, ta: bool, tb: bool) -> Shape | None:
    """Output shape of MatMul; raises ShapeError.

    >>> matmul_shape((2, 1, 3, 4), (5, 4, 6), False, False), matmul_shape((4,), (4,), True, True)
    ((2, 5, 3, 6), ())
    """
    if a is None or b is None:
        return None
    if len(a) == 0 or len(b) == 0:
        raise ShapeError("MatMul does not accept scalars")
    a2 = (1, *a) if len(a) == 1 else (*a[:-2], a[-1], a[-2]) if ta else tuple(a)
    b2 = (*b, 1) if len(b) == 1 else (*b[:-2], b[-1], b[-2]) if tb else tuple(b)
    if try_merge_dims(a2[-1], b2[-2]) is None:
        raise ShapeError(
            f"inner dims differ: {a2[-1]} in {format_shape(a)} and {b2[-2]} in "
            f"{format_shape(b)} (transpose_a={str(ta).lower()}, transpose_b={str(tb).lower()})"
        )
    try:
        batch = broadcast_shapes(a2[:-2], b2[:-2], "numpy")
    except ShapeError as exc:
        raise ShapeError(
            f"batch dims of {format_shape(a)} and {format_shape(b)} do not broadcast"
        ) from exc
    assert batch is not None
    rows = () if len(a) == 1 else (a2[-2],)
    cols = () if len(b) == 1 else (b2[-1],)
    return (*batch, *rows, *cols)


def infer_matmul(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    a, b = inputs
    et = same_element_type(inputs)
    shape = matmul_shape(a.shape, b.shape, attrs.transpose_a, attrs.transpose_b)
    return [TensorInfo(shape, et)]


def matmul(attrs: SimpleNamespace, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    if a.dtype != b.dtype:
        raise KernelError(f"inputs have different element types: {a.dtype} and {b.dtype}")
    x, y = a, b
    if attrs.transpose_a and a.ndim > 1:
        x = a.swapaxes(-1, -2)
    if attrs.transpose_b and b.ndim > 1:
        y = b.swapaxes(-1, -2)
    if a.dtype.kind in "fV" and a.dtype.itemsize < 4:  # f16, bf16 and the small floats
        x, y = x.astype(np.float32), y.astype(np.float32)
    try:
        product = np.matmul(x, y)
    except ValueError:
        # NumPy's own message would not name the attributes: this one does.
        try:
            matmul_shape(a.shape, b.shape, attrs.transpose_a, attrs.transpose_b)
        except ShapeError as e:
            raise KernelError(str(e)) from None
        raise
    # A product of two vectors is a NumPy scalar: the kernel's result is an array.
    if a.dtype in _SMALL_FLOATS:  # rounded as OpenVINO's Convert rounds them
        return (convert(np.asarray(product), a.dtype),)
    return (np.asarray(product).astype(a.dtype, copy=False),)


# OpenVINO takes any type (both inputs the same); irrun multiplies the numbers, the
# small floats (in f32, rounded once as OpenVINO's Convert rounds) and booleans (a
# product of booleans is an and, a sum an or).  Not the packed integers, whose products
# would not wrap to their bits.
MATMUL_TYPES = (*NUMBERS, *LOW_FLOATS, "boolean")
_SMALL_FLOATS = {ELEMENT_TYPES[name].dtype for name in LOW_FLOATS}


register(
    OpDef(
        type="MatMul", version=1, since_opset=1,
        attrs=(Attr("transpose_a", "bool", False), Attr("transpose_b", "bool", False)),
        infer=infer_matmul, kernel=matmul, inputs=(2, 2),
        shape_attrs=("transpose_a", "transpose_b"), fresh_output=True, view_reader=True,
        scratch=per_element(0, 12),  # f16 multiplied in f32
        input_types=(MATMUL_TYPES, MATMUL_TYPES),
    )
)
