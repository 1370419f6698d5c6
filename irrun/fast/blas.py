"""The GEMM of the BLAS NumPy itself uses, called directly: :func:`gemm`.

``np.matmul`` takes matrices whose rows are contiguous and whose row stride is any
multiple of the element: so does BLAS.  What NumPy does not pass on is GEMM's ``beta``:
``C = A @ B + beta * C`` accumulates into C in the same pass.  A convolution whose every
tap is one product with a strided slice of its input (:mod:`.conv_taps`) needs that;
with ``np.matmul`` each tap would cost a product into a temporary and an addition pass,
or the taps would be copied into a column matrix first.

The library is the one threadpoolctl finds NumPy loaded (the same one, so ``--threads``
sets its pool), and the function is its 64-bit-integer CBLAS GEMM under the names
NumPy's wheels build it with (``scipy_cblas_sgemm64_``; OpenBLAS's ``cblas_sgemm64_``).
Other builds (Accelerate, MKL, a 32-bit-integer OpenBLAS) are not guessed at:
:func:`available` is then False and callers use NumPy.  The first call checks a small
product against NumPy's before the function is trusted.  ctypes releases the GIL during
the call, so blocks on :mod:`irrun.threads` run at once.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import numpy as np

_ROW_MAJOR, _NO_TRANS = 101, 111
_SYMBOLS = {  # element type -> CBLAS names with 64-bit integers, NumPy's first
    np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
    np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_"),
}
_SCALARS = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}


@functools.cache
def _library() -> ctypes.CDLL | None:
    try:
        import threadpoolctl

        paths = [i["filepath"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    except Exception:  # threadpoolctl missing or failing: no BLAS of our own
        return None
    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


@functools.cache
def _function(dtype: np.dtype) -> Callable[..., None] | None:
    lib = _library()
    if lib is None or dtype not in _SYMBOLS:
        return None
    for name in _SYMBOLS[dtype]:
        fn = getattr(lib, name, None)
        if fn is not None:
            break
    else:
        return None
    i64, scalar, ptr = ctypes.c_int64, _SCALARS[dtype], ctypes.c_void_p
    fn.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, scalar, ptr, i64,
                   ptr, i64, scalar, ptr, i64)  # fmt: skip
    fn.restype = None
    # Trust it only once it has computed a product as NumPy does (exact small integers).
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    b = np.arange(12, dtype=dtype).reshape(3, 4)
    c = np.ones((2, 4), dtype)
    fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, 2, 4, 3, 1.0, a.ctypes.data, 3, b.ctypes.data, 4, 1.0,
       c.ctypes.data, 4)  # fmt: skip
    return fn if np.array_equal(c, a @ b + 1) else None


def available(dtype: np.dtype | type) -> bool:
    """Whether :func:`gemm` runs for this element type (f32 or f64 with a known BLAS)."""
    return _function(np.dtype(dtype)) is not None


def _rows(m: np.ndarray) -> int:
    """The row stride of a 2-D matrix of contiguous rows that do not overlap, in elements
    (what BLAS calls its leading dimension)."""
    rows, cols = m.shape if m.ndim == 2 else (0, 0)
    step, size = (m.strides[0], m.itemsize) if m.ndim == 2 else (0, 1)
    if (m.ndim != 2 or (cols > 1 and m.strides[1] != size) or step % size
            or (rows > 1 and step < cols * size)):  # fmt: skip
        raise ValueError(f"not a matrix of contiguous rows: shape {m.shape}, strides {m.strides}")
    return max(step // size, cols, 1)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, accumulate: bool) -> None:
    """``c = a @ b`` (``accumulate`` false) or ``c += a @ b`` (true), in place.

    Each of the three is a 2-D matrix of contiguous rows with any row stride (a strided
    view works as it is), all of one element type for which :func:`available` holds;
    ``c`` must not overlap ``a`` or ``b``.

    >>> a = np.float32([[1, 2], [3, 4]]); b = np.float32([[1, 0, 2], [0, 1, 3]])
    >>> c = np.ones((2, 3), np.float32)
    >>> if available(np.float32):
    ...     gemm(a, b, c, accumulate=True)
    ... else:  # the same, by NumPy, where no BLAS of known interface is found
    ...     c += a @ b
    >>> c.tolist()
    [[2.0, 3.0, 9.0], [4.0, 5.0, 19.0]]
    """
    m, k = a.shape
    n = b.shape[1]
    if b.shape[0] != k or c.shape != (m, n) or not (a.dtype == b.dtype == c.dtype):
        raise ValueError(f"gemm of {a.shape} {a.dtype} and {b.shape} {b.dtype} "
                         f"into {c.shape} {c.dtype}")
    if not c.flags.writeable:
        raise ValueError("gemm's output is read-only")
    fn = _function(a.dtype)
    if fn is None:
        raise ValueError(f"no BLAS GEMM for {a.dtype}")
    if m == 0 or n == 0:
        return
    if k == 0:
        if not accumulate:
            c[...] = 0
        return
    fn(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, m, n, k, 1.0, a.ctypes.data, _rows(a), b.ctypes.data,
       _rows(b), 1.0 if accumulate else 0.0, c.ctypes.data, _rows(c))  # fmt: skip
