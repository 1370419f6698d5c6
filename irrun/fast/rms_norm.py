"""RMSNorm as optimum exports it, in one call: the layers' own NumPy calls, no dispatch.

An exported RMSNorm (Llama, Qwen2, Mistral...) is six layers (seven with its weight)::

    Power(x, 2) | Multiply(x, x)  ->  ReduceMean(keep_dims, axes)  ->  Add(eps)  ->  Sqrt
    ->  Divide(1, .)  ->  Multiply(x, .)  [->  Multiply(weight, .)]

:func:`rms_norm` computes what the layers' reference kernels compute for f32 or f64 data
of one type broadcast as NumPy does: the same ufunc calls on the same operands in the same
order (``np.power`` for Power, the reference ReduceMean's ``np.add.reduce`` in the data's
type and its division by the count, ``np.sqrt``, ``np.true_divide``, ``np.multiply``), so
the same bits, NaN and infinities included.  It only leaves out the reference kernels'
work around those calls (type checks, f16 conversions, NumPy's error state, which a run
has set): in a decode step of a small model each layer costs a few microseconds of Python
around a call of one or two.  It returns None where it does not apply (another type,
operands of different types, shapes that do not broadcast), and the layers then run one
by one, each saying what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_WIDE = (np.dtype(np.float32), np.dtype(np.float64))


def rms_norm(x: np.ndarray, exponent: np.ndarray | None, axes: Sequence[int], keep_dims: bool,
             eps: np.ndarray, eps_first: bool, numerator: np.ndarray, x_first: bool,
             weight: np.ndarray | None = None, weight_first: bool = False) -> np.ndarray | None:
    """The RMSNorm layers' output for ``x`` (see the module's doc), or None.

    ``exponent`` is Power's second operand (None: the square is ``Multiply(x, x)``);
    ``axes`` ReduceMean's, already normalised (:func:`irrun.ops.reduction.reduction_axes`);
    ``eps_first``, ``x_first`` and ``weight_first`` whether that operand is the first of
    its Add or Multiply (the other being the running value).
    """
    dtype = x.dtype
    if dtype not in _WIDE:
        return None
    for operand in (exponent, eps, numerator, weight):
        if operand is not None and operand.dtype != dtype:
            return None
    try:
        square = np.multiply(x, x) if exponent is None else np.power(x, exponent)
        total = np.add.reduce(square, axis=tuple(axes), keepdims=keep_dims, dtype=dtype)
        count = math.prod(square.shape[i] for i in axes)
        mean = total / np.asarray(count, dtype) if count else total
        mean = np.asarray(mean)  # ReduceMean's kernel gives an array, also of 0-D
        shifted = np.add(eps, mean) if eps_first else np.add(mean, eps)
        root = np.sqrt(np.asarray(shifted))
        inverse = np.true_divide(numerator, np.asarray(root))
        out = np.multiply(x, inverse) if x_first else np.multiply(inverse, x)
        if weight is not None:
            out = np.multiply(weight, out) if weight_first else np.multiply(out, weight)
    except ValueError:  # shapes that do not broadcast: the layers name them
        return None
    return np.asarray(out)
