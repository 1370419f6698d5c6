"""MVN-6 over the last axis alone (what PyTorch's LayerNorm becomes): its two means as
products with a vector of 1/n.

BLAS sums rows far faster than NumPy reduces many short rows, but in an order of its
own and with ``x * (1/n)`` in place of ``sum / n``: values agree with the reference
within a bound, not bit for bit.  With ``u`` the type's unit roundoff (2^-24 for f32)
and a row of ``n`` elements, each mean is within ``(n + 1) u mean|x|`` of the true one,
the reference's too; the deviations ``x - m`` then differ by the means' difference, and
their zero sum leaves the variance's relative error ``(n + 1) u`` each.  So an output
``y`` is within ``2 (n + 2) u (mean|x| / s + |y|)`` of the reference's, ``s`` the row's
``sqrt(variance + eps)``, where squares neither underflow to denormals nor overflow.
No bound holds where ``s`` is within the means' rounding error (``s <= 2 (n + 2) u
mean|x|``): a constant row without eps may give NaN (0/0) in one and the quotient of two
rounding errors in the other.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from .registry import FastKernel, register_fast


@functools.lru_cache(maxsize=64)
def _mean_weights(n: int, dtype: np.dtype) -> np.ndarray:
    weights = np.full(n, 1.0 / n, dtype)
    weights.flags.writeable = False
    return weights


def layer_norm(v: np.ndarray, eps: float) -> np.ndarray:
    """``(v - mean) / sqrt(variance + eps)`` over the last axis, the means by BLAS."""
    weights = _mean_weights(v.shape[-1], v.dtype)
    rows = v.reshape(-1, v.shape[-1])  # a 1-D input too: the means are then arrays
    with np.errstate(all="ignore"):
        d = rows - (rows @ weights)[:, None]
        var = np.square(d) @ weights
        var += v.dtype.type(eps)
        np.sqrt(var, out=var)
        d /= var[:, None]
    return d.reshape(v.shape)


def _mvn(attrs: SimpleNamespace, x: np.ndarray, axes: np.ndarray):
    if not (axes.size == 1 and x.ndim and x.size and x.dtype in (np.float32, np.float64)
            and int(axes.reshape(-1)[0]) in (-1, x.ndim - 1)
            and attrs.normalize_variance and attrs.eps_mode == "inside_sqrt"):
        return NotImplemented
    return (layer_norm(x, attrs.eps),)


register_fast(FastKernel(
    "MVN", (6,), "f32 or f64, normalized over the last axis alone, eps inside the root, "
    "not empty: the means as BLAS products with a vector of 1/n", _mvn, exact=False,
    bound="2 (n + 2) u (mean|x| / s + |y|) for a row of n, mean |x| and s = sqrt(variance "
          "+ eps) > 2 (n + 2) u mean|x|, output y, where squares neither underflow nor "
          "overflow; u = 2^-24 for f32, 2^-53 for f64",
))
