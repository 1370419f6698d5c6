"""irrun.fast.blas: NumPy's own BLAS GEMM called directly, with accumulation.

Products of small integers are exact in any summation order, so they are compared
bit for bit with NumPy's; random values within rounding of a float64 product.
"""

from __future__ import annotations

import numpy as np
import pytest

from irrun.fast import blas

pytestmark = pytest.mark.skipif(
    not blas.available(np.float32),
    reason="NumPy's BLAS here exports no CBLAS GEMM of known interface; callers use NumPy",
)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("accumulate", [False, True])
def test_integer_products_are_numpy_s(dtype, accumulate):
    rng = np.random.default_rng(0)
    a = rng.integers(-8, 8, (5, 7)).astype(dtype)
    b = rng.integers(-8, 8, (7, 9)).astype(dtype)
    c = rng.integers(-8, 8, (5, 9)).astype(dtype)
    want = a @ b + (c if accumulate else 0)
    if not accumulate:
        c[0, 0] = np.nan  # beta 0: whatever c held is not read
    blas.gemm(a, b, c, accumulate)
    np.testing.assert_array_equal(c, want)


def test_strided_views_are_read_and_written_in_place():
    """Row strides of views (a tap's slice of a padded plane, a block of the output)."""
    rng = np.random.default_rng(1)
    big_a = rng.standard_normal((6, 20)).astype(np.float32)
    big_b = rng.standard_normal((30, 40)).astype(np.float32)
    out = np.zeros((8, 50), np.float32)
    a, b, c = big_a[1:5, 3:11], big_b[2:10, 5:17], out[2:6, 7:19]
    blas.gemm(a, b, c, accumulate=False)
    blas.gemm(a, b, c, accumulate=True)
    want = 2 * (a.astype(np.float64) @ b.astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    out[2:6, 7:19] = 0
    assert not out.any()  # nothing written outside the view


def test_empty_and_k0_products():
    c = np.full((2, 3), 5, np.float32)
    blas.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), c, accumulate=True)
    assert (c == 5).all()
    blas.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 3), np.float32), c, accumulate=False)
    assert (c == 0).all()


@pytest.mark.parametrize(
    ("a", "b", "c", "match"),
    [(np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32), np.zeros((2, 2), np.float32),
      "gemm of"),
     (np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float64), np.zeros((2, 2), np.float32),
      "gemm of"),
     (np.zeros((2, 6), np.float32)[:, ::2], np.zeros((3, 2), np.float32),
      np.zeros((2, 2), np.float32), "contiguous rows"),
     (np.zeros((2, 3), np.int32), np.zeros((3, 2), np.int32), np.zeros((2, 2), np.int32),
      "no BLAS GEMM"),
     # rows read backwards, or overlapping: BLAS would read other elements
     (np.zeros((2, 3), np.float32)[::-1], np.zeros((3, 2), np.float32),
      np.zeros((2, 2), np.float32), "contiguous rows"),
     (np.lib.stride_tricks.as_strided(np.zeros(8, np.float32), (2, 3), (4, 4)),
      np.zeros((3, 2), np.float32), np.zeros((2, 2), np.float32), "contiguous rows")],
)  # fmt: skip
def test_what_it_refuses(a, b, c, match):
    with pytest.raises(ValueError, match=match):
        blas.gemm(a, b, c, accumulate=False)
