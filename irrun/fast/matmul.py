"""MatMul: a stack of matrices times one matrix as one product of all their rows.

NumPy runs one GEMM per matrix of a stack; a linear layer's ``[batch, seq, in] x [in,
out]`` is one GEMM of ``batch * seq`` rows instead (for a BERT layer at batch 4, 3% of
the layer's time).  BLAS sums each dot product over ``in`` in an order of its own, which
may depend on the rows it is given: values agree with the reference within the sum's
rounding, not bit for bit.  The result is an array of its own (not a reshaped view), so
that an in-place chain may work in it.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .registry import FastKernel, register_fast

BOUND = ("each element within 2 K u sum_k |a_ik b_kj| of the reference (u = 2^-24 for f32 "
         "and f16, computed in f32, 2^-53 for f64; f16 then one f16 ulp), NaN and infinities "
         "alike, where no finite product or sum overflows: both sum K products, each in an "
         "order of BLAS's, with or without fused multiply-adds")


def _stack_times_matrix(attrs: SimpleNamespace, a: np.ndarray, b: np.ndarray):
    if a.dtype != b.dtype or a.dtype not in (np.float16, np.float32, np.float64):
        return NotImplemented
    x = a.swapaxes(-1, -2) if attrs.transpose_a and a.ndim > 1 else a
    y = b.swapaxes(-1, -2) if attrs.transpose_b and b.ndim > 1 else b
    if not (y.ndim == 2 and x.ndim > 2 and math.prod(x.shape[:-2]) > 1
            and x.flags.c_contiguous and x.shape[-1] == y.shape[0]):
        return NotImplemented
    if a.dtype == np.float16:
        x, y = x.astype(np.float32), y.astype(np.float32)
    out = np.empty((*x.shape[:-1], y.shape[1]), x.dtype)
    rows = math.prod(x.shape[:-1])
    np.matmul(x.reshape(rows, x.shape[-1]), y, out=out.reshape(rows, y.shape[1]))
    return (out.astype(a.dtype, copy=False),)


register_fast(FastKernel(
    "MatMul", (1,), "a C-contiguous stack of several matrices times one matrix, float: "
    "one product of all their rows", _stack_times_matrix, exact=False, bound=BOUND,
))
