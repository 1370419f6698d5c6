"""GroupedMatMul-17: the matrix products of a mixture of experts, one per group.

Inputs ``mat_a``, ``mat_b`` (per-group weights, stored transposed: ``[G, N, K]``) and,
optionally, ``offsets`` (1-D, i32 or i64).  Two combinations of ranks exist:

* 2-D x 3-D (the MoE forward pass; ``offsets`` required): ``mat_a [T, K]`` holds the
  tokens of all groups, sorted by group; ``offsets [G]`` are the cumulative end rows of
  the groups, so group ``g`` is rows ``offsets[g-1] .. offsets[g]`` (from row 0 for
  ``g = 0``), and ``out[t] = mat_a[t] @ mat_b[g].T`` for those rows: ``out [T, N]``.
  Empty groups (equal offsets) are allowed; rows from ``offsets[G-1]`` on belong to no
  group and are 0, as in OpenVINO's reference (which zero-fills its output first).
* 3-D x 3-D (batched, uniform groups): ``out[g] = mat_a[g] @ mat_b[g].T``,
  ``mat_a [G, M, K]`` -> ``out [G, M, N]``; ``offsets``, if given, is not read (OpenVINO
  does not check even its rank there).

The shape rule is OpenVINO's: ``mat_a`` and ``mat_b`` of one element type; the
offsets' element type i32 or i64 and, in the 2-D x 3-D case, rank 1; ``G`` and ``K``
merged (an interval narrows); an unknown rank gives an unknown output rank.  OpenVINO
does not compare the offsets' length with ``G``: irrun's kernel raises KernelError when
they differ, and for offsets that are negative, decrease or pass ``T`` (OpenVINO's
reference reads past its buffers there), and validate warns of such constant offsets.

Floats narrower than f32 (f16, bf16, the f8 types) are multiplied in f32 and rounded
once; f32 and f64 sum in their own type (BLAS order); integers wrap in their type.
OpenVINO 2026.4 has neither an ``evaluate`` (reference) nor a CPU plugin kernel for
GroupedMatMul ("Unsupported operation of type: GroupedMatMul"), so its values are
tested against OpenVINO's MatMul (``transpose_b``) of each group's slice.  OpenVINO's
reference kernel in its sources sums in the element type itself (f16 in f16), and some
versions of it read mat_b as ``[G, K, N]`` and take a third, 2-D x 2-D case (the
weight gradient); 2026.4's shape inference and documentation have ``[G, N, K]`` and
refuse 2-D x 2-D, and irrun follows them.
OpenVINO takes boolean inputs too; irrun refuses them (a product of booleans is not
defined by any kernel of OpenVINO's).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.dims import format_shape
from ..ir.element_types import INDEX_TYPES
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element
from ._shapes import flat_ints, int_values, same_element_type, try_merge_dims
from .arithmetic import ARITHMETIC


def _merge(a, b, what: str, sa, sb):
    merged = try_merge_dims(a, b)
    if merged is None:
        raise ShapeError(
            f"{what} of mat_a {format_shape(sa)} and mat_b {format_shape(sb)} differ: {a} and {b}"
        )
    return merged


def infer_grouped_matmul(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    a, b = inputs[0], inputs[1]
    offsets = inputs[2] if len(inputs) > 2 else None
    et = same_element_type([a, b])
    if a.shape is None or b.shape is None:
        return [TensorInfo(None, et)]
    ranks = (len(a.shape), len(b.shape))
    if ranks == (3, 3):
        groups = _merge(a.shape[0], b.shape[0], "the groups (dim 0)", a.shape, b.shape)
        _merge(a.shape[2], b.shape[2], "the inner dims (K)", a.shape, b.shape)
        return [TensorInfo((groups, a.shape[1], b.shape[1]), et)]
    if ranks == (2, 3):
        if offsets is None:
            raise ShapeError("a 2-D mat_a with a 3-D mat_b needs the offsets input")
        if offsets.shape is not None and len(offsets.shape) != 1:
            raise ShapeError(f"offsets must be 1-D, got shape {format_shape(offsets.shape)}")
        _merge(a.shape[1], b.shape[2], "the inner dims (K)", a.shape, b.shape)
        return [TensorInfo((a.shape[0], b.shape[1]), et)]
    raise ShapeError(
        f"mat_a {format_shape(a.shape)} and mat_b {format_shape(b.shape)}: GroupedMatMul takes "
        "a 2-D mat_a with a 3-D mat_b (and offsets) or a 3-D mat_a with a 3-D mat_b"
    )


def group_bounds(offsets: Sequence[int], groups: int, rows: int) -> str | None:
    """Why ``offsets`` cannot split ``rows`` rows into ``groups`` groups, or None."""
    if len(offsets) != groups:
        return f"{len(offsets)} offsets for {groups} groups of mat_b"
    previous = 0
    for g, end in enumerate(offsets):
        if end < previous:
            return f"offsets[{g}] = {end} is below {previous}: offsets must not decrease from 0"
        previous = end
    if previous > rows:
        return f"the last offset {previous} is past mat_a's {rows} rows"
    return None


def warn_grouped_matmul(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[str]:
    """Constant offsets that do not split mat_a's rows into mat_b's groups."""
    if len(inputs) < 3:
        return []
    a, b, offsets = inputs[:3]
    values = int_values(offsets)
    if values is None or a.shape is None or b.shape is None or len(a.shape) != 2:
        return []
    if len(b.shape) != 3 or not isinstance(a.shape[0], int) or not isinstance(b.shape[0], int):
        return []
    why = group_bounds(values, b.shape[0], a.shape[0])
    return [f"{why}: the layer fails when it runs"] if why else []


def _compute_type(x: np.ndarray) -> np.ndarray:
    narrow = x.dtype.kind == "V" or (x.dtype.kind == "f" and x.dtype.itemsize < 4)
    return x.astype(np.float32) if narrow else x


def grouped_matmul(attrs: SimpleNamespace, a: np.ndarray, b: np.ndarray,
                   offsets: np.ndarray | None = None) -> tuple[np.ndarray, ...]:  # fmt: skip
    """``mat_a @ mat_b[g].T`` per group ``g`` (see the module's docstring)."""
    if a.dtype != b.dtype:
        raise KernelError(f"mat_a is {a.dtype} and mat_b {b.dtype}")
    x, w = _compute_type(a), np.swapaxes(_compute_type(b), -1, -2)  # w: [G, K, N]
    with np.errstate(all="ignore"):
        if a.ndim == 3:
            return (np.matmul(x, w).astype(a.dtype, copy=False),)
        if offsets is None:
            raise KernelError("a 2-D mat_a needs the offsets input")
        ends = flat_ints(offsets)
        why = group_bounds(ends, b.shape[0], a.shape[0])
        if why:
            raise KernelError(why)
        out = np.zeros((a.shape[0], b.shape[1]), x.dtype)
        start = 0
        for g, end in enumerate(ends):  # one product per group (expert)
            if end > start:
                out[start:end] = np.matmul(x[start:end], w[g])
            start = end
    return (out.astype(a.dtype, copy=False),)


register(
    OpDef(
        type="GroupedMatMul", version=17, since_opset=17, attrs=(),
        infer=infer_grouped_matmul, kernel=grouped_matmul, inputs=(2, 3),
        input_types=(ARITHMETIC, ARITHMETIC, INDEX_TYPES), warn=warn_grouped_matmul,
        fresh_output=True,
        scratch=per_element(8, 16),  # a group's product beside the output; f16 in f32
    )
)
