"""Inverse-14: the inverse of each square matrix in the last two dims of a batch.

The specification's algorithm, which the CPU plugin follows: an LU decomposition with
partial pivoting (the pivot of column ``k`` is the first row at or below ``k`` whose
``|U[i, k]|`` is largest; a NaN never takes the pivot from a number), then forward and
backward substitution for each column of the identity.  ``adjoint=true`` returns the
transpose of the inverse, ``(A^-1)^T`` (the specification's "adjoint (conjugate
transpose)"), as the CPU plugin of OpenVINO 2026.4 does, which decomposes ``A^T``
(so a singular matrix's infinities and NaN fall where the inverse of ``A^T`` has them,
not transposed from ``A``'s: irrun does the same); OpenVINO's reference sources
instead multiply the inverse by the determinant (the adjugate) there, which
contradicts the specification, and OpenVINO 2026.4 has no ``evaluate`` for Inverse
to run them.  irrun follows the specification and the plugin.

A singular matrix is not refused: as in the plugin, a zero pivot divides by zero, so
its result holds infinities and NaN (``[[1, 2], [2, 4]]`` gives ``[[-inf, inf], [inf,
-inf]]``, a zero matrix NaN everywhere); the specification leaves the result
undefined.  f16 and bf16 are computed in f32 and rounded once (the specification:
"converted to f32"); f64 is computed in f64 (the plugin runs it in f32).  The sums of
the substitutions are vectorized, in another order than the plugin's loops: values
agree within rounding (the tests' tolerance is relative to the condition of the
matrices), infinities and NaN where they arise.

The shape rule is OpenVINO's: rank at least 2, the last two dims equal where both are
static; otherwise the output has the input's shape unchanged (OpenVINO does not merge
the two dims).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np

from ..errors import KernelError
from ..ir.attributes import Attr
from ..ir.dims import format_shape
from ..ir.element_types import FLOATS
from ..ir.registry import OpDef, ShapeError, TensorInfo, register
from ._scratch import per_element


def infer_inverse(attrs: SimpleNamespace, inputs: Sequence[TensorInfo]) -> list[TensorInfo]:
    (x,) = inputs
    if x.shape is not None:
        if len(x.shape) < 2:
            raise ShapeError(f"Inverse needs matrices (rank 2 or more): {format_shape(x.shape)}")
        rows, cols = x.shape[-2], x.shape[-1]
        if isinstance(rows, int) and isinstance(cols, int) and rows != cols:
            raise ShapeError(f"Inverse needs square matrices, got {format_shape(x.shape)}")
    return [TensorInfo(x.shape, x.element_type)]


def _pivots(column: np.ndarray) -> np.ndarray:
    """The pivot row (relative to the column's first row) of each matrix's column: the
    first largest magnitude; a NaN in the first row keeps it, a NaN below never wins."""
    size = np.abs(column)
    key = np.where(np.isnan(size), -1.0, size)
    key[..., 0] = np.where(np.isnan(size[..., 0]), np.inf, key[..., 0])
    return np.argmax(key, axis=-1)


def lu_inverse(a: np.ndarray) -> np.ndarray:
    """The inverse of each matrix of ``a`` ([..., n, n], a float type) by LU with partial
    pivoting, in ``a``'s type; singular matrices give infinities and NaN."""
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    u = a.reshape(-1, n, n).copy()
    batch = np.arange(u.shape[0])
    lower = np.zeros_like(u)
    perm = np.broadcast_to(np.arange(n), u.shape[:2]).copy()
    for k in range(n):  # one column of the decomposition at a time, every matrix at once
        p = k + _pivots(u[:, k:, k])
        rows = np.stack([np.full_like(p, k), p], axis=1)  # swap row k with row p
        swapped = rows[:, ::-1]
        u[batch[:, None], rows] = u[batch[:, None], swapped]
        lower[batch[:, None], rows, :k] = lower[batch[:, None], swapped, :k]
        perm[batch[:, None], rows] = perm[batch[:, None], swapped]
        lower[:, k + 1:, k] = u[:, k + 1:, k] / u[:, k, k][:, None]
        u[:, k + 1:, k:] -= lower[:, k + 1:, k, None] * u[:, k, None, k:]
    # Solve L Y = P I, then U X = Y, for all n columns of the identity together.
    y = (perm[:, :, None] == np.arange(n)).astype(u.dtype)
    for i in range(n):
        y[:, i] -= np.einsum("bj,bjc->bc", lower[:, i, :i], y[:, :i])
    x = np.empty_like(y)
    for i in range(n - 1, -1, -1):
        rest = np.einsum("bj,bjc->bc", u[:, i, i + 1:], x[:, i + 1:])
        x[:, i] = (y[:, i] - rest) / u[:, i, i][:, None]
    return x.reshape(a.shape)


def inverse(attrs: SimpleNamespace, data: np.ndarray) -> tuple[np.ndarray, ...]:
    """The inverse (``adjoint``: its transpose) of each matrix in the last two dims."""
    if data.ndim < 2 or data.shape[-1] != data.shape[-2]:
        raise KernelError(f"Inverse needs square matrices, got shape {list(data.shape)}")
    work = data if data.dtype.kind == "f" and data.dtype.itemsize >= 4 else \
        data.astype(np.float32)  # fmt: skip
    if attrs.adjoint:  # (A^-1)^T as the inverse of A^T: the plugin's infinities and NaN
        work = np.swapaxes(work, -1, -2)
    with np.errstate(all="ignore"):
        out = lu_inverse(work)
    return (np.ascontiguousarray(out).astype(data.dtype, copy=False),)


register(
    OpDef(
        type="Inverse", version=14, since_opset=14, attrs=(Attr("adjoint", "bool", False),),
        infer=infer_inverse, kernel=inverse, input_types=(FLOATS,),
        scratch=per_element(24, 36),  # U, L and the solutions; f16 in f32
    )
)
