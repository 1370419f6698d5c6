"""ScaledDotProductAttention with the scores laid out ``[..., S, L]`` (no sink).

``K·Qᵀ`` rather than ``Q·Kᵀ`` (BLAS makes either layout alike): the softmax then
reduces over an outer axis, which NumPy does a whole row of queries at a time instead of
one short row per query; the row sums are one product with a vector of ones, and ``Pᵀ·V``
reads the exponentials transposed in place (BLAS's transposed operand), divided by the
sums after the product rather than before.  Sums in other orders, and a division after
the product: values agree with the reference within a bound, not bit for bit.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..ops.attention import attention_bias, check_sizes, compute_type, scale_factor
from .registry import FastKernel, register_fast

BOUND = ("each output within (4 E u A + 2 (S + 3) u) max|v|, A the largest sum_e |q_e k_e| "
         "of its row (the scaled query's); u = 2^-24 for f32 (f16 computed in f32, then one "
         "f16 ulp), 2^-53 for f64")


def _fits(small: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether ``small`` broadcasts to ``shape`` itself (as np.broadcast_shapes of the two
    giving ``shape``, without its cost)."""
    return len(small) <= len(shape) and all(
        d in (1, s) for d, s in zip(reversed(small), reversed(shape), strict=False))


def _key_major(attrs: SimpleNamespace, q: np.ndarray, k: np.ndarray, v: np.ndarray,
               mask: np.ndarray | None = None, scale: np.ndarray | None = None,
               sink: np.ndarray | None = None):
    if sink is not None or 0 in q.shape[-2:] or 0 in k.shape[-2:]:
        return NotImplemented
    out_dtype = q.dtype
    # compute_type's, by the type's code: comparing a dtype with NumPy's types costs more.
    ct = out_dtype if out_dtype.char in "fd" else compute_type(out_dtype)
    q, k, v = (x.astype(ct, copy=False) for x in (q, k, v))
    check_sizes(q, k, v)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        scores = np.matmul(k, (q * scale_factor(q, scale)).swapaxes(-1, -2))
        bias = attention_bias(attrs.causal, mask, scores.shape[-1:-3:-1], ct)
        if bias is not None:
            bias = bias.swapaxes(-1, -2) if bias.ndim >= 2 else bias
            if _fits(bias.shape, scores.shape):
                scores += bias
            else:
                scores = scores + bias
        scores -= scores.max(axis=-2, keepdims=True)
        np.exp(scores, out=scores)
        total = np.matmul(np.ones(scores.shape[-2], ct), scores)
        out = np.matmul(scores.swapaxes(-1, -2), v)
        out /= total[..., None]
    return (out.astype(out_dtype, copy=False),)


register_fast(FastKernel(
    "ScaledDotProductAttention", (13,), "no sink, L and S not 0: the scores laid out "
    "[..., S, L]", _key_major, exact=False, bound=BOUND,
))
