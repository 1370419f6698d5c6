"""MatMul's fast kernel (irrun.fast.matmul): a stack of matrices times one matrix as one
product, against the reference kernel within the stated bound: each element within
``2 K u sum_k |a_ik b_kj|`` (``u`` 2^-24 for f32, 2^-53 for f64; f16 rounds the f32
product once more, one f16 ulp), NaN and infinities where the reference has them, where
the finite products and their sums do not overflow (BLAS may fuse a multiply and an add in
one path and not in another: an overflowing product is then -inf in one, a finite sum in
the other)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bits import laid_out

from irrun.fast import fast_kernel, kernel_for
from irrun.ir.registry import resolve

MATMUL = resolve("MatMul", "opset1")
UNIT = {np.float32: 2.0**-24, np.float64: 2.0**-53, np.float16: 2.0**-24}


def _finite_abs(x: np.ndarray) -> np.ndarray:
    v = np.abs(x.astype(np.float64))
    return np.where(np.isfinite(v), v, 0.0)


def check_within_bound(got: np.ndarray, want: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    g, w = got.astype(np.float64), want.astype(np.float64)
    with np.errstate(all="ignore"):
        scale = np.matmul(np.abs(a.astype(np.float64)), np.abs(b.astype(np.float64)))
        safe = np.matmul(_finite_abs(a), _finite_abs(b)) < np.finfo(want.dtype).max / 2
    np.testing.assert_array_equal(np.isnan(g)[safe], np.isnan(w)[safe])
    infinite = np.isinf(w) & safe
    np.testing.assert_array_equal(g[infinite], w[infinite])
    k = a.shape[-1]
    allowed = 2 * k * UNIT[want.dtype.type] * scale
    if want.dtype == np.float16:
        with np.errstate(invalid="ignore"):  # of infinities
            allowed = allowed + np.spacing(np.abs(want)).astype(np.float64)
    finite = np.isfinite(w) & np.isfinite(g) & safe
    assert (np.abs(g[finite] - w[finite]) <= allowed[finite]).all()


@st.composite
def _stack(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64, np.float16])))
    batch = draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
    m, k, n = (draw(st.integers(0, 5)) for _ in range(3))
    a = draw(laid_out((*batch, m, k), dtype))
    b = draw(laid_out((k, n), dtype))
    return a, b


@settings(max_examples=150, deadline=None)
@given(case=_stack())
def test_a_stack_times_a_matrix_is_the_reference_within_the_bound(case):
    a, b = case
    attrs = SimpleNamespace(transpose_a=False, transpose_b=False)
    with np.errstate(all="ignore"):
        (want,) = MATMUL.kernel(attrs, a, b)
        got = fast_kernel(MATMUL).run(attrs, a, b)
    if got is NotImplemented:
        assert not a.flags.c_contiguous or np.prod(a.shape[:-2]) <= 1
        return
    check_within_bound(got[0], want, a, b)
    assert got[0].flags.owndata  # an Add of the in-place chain may work in it


@pytest.mark.parametrize("shape", [(3, 4, 6), (2, 1, 4, 6), (0, 4, 6), (3, 0, 6)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_a_stack_times_a_matrix_is_one_product_into_its_own_array(shape, transpose_b):
    rng = np.random.default_rng(6)
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal((5, 6) if transpose_b else (6, 5)).astype(np.float32)
    attrs = SimpleNamespace(transpose_a=False, transpose_b=transpose_b)
    (got,) = kernel_for(MATMUL)(attrs, a, b)  # the fast kernel's, or the reference's (0 rows)
    assert got.shape == (*shape[:-1], 5) and got.flags.owndata
    (want,) = MATMUL.kernel(attrs, a, b)
    check_within_bound(got, want, a, b.T if transpose_b else b)


def test_what_the_fast_kernel_leaves_to_the_reference():
    run, attrs = fast_kernel(MATMUL).run, SimpleNamespace(transpose_a=False, transpose_b=False)
    b = np.ones((4, 2), np.float32)
    assert run(attrs, np.ones((1, 3, 4), np.float32), b) is NotImplemented  # one matrix
    assert run(attrs, np.ones((2, 3, 4), np.int32), b.astype(np.int32)) is NotImplemented
    assert run(attrs, np.ones((2, 3, 4), np.float32), np.ones((2, 4, 2), np.float32)) \
        is NotImplemented  # a stack times a stack
    transposed = SimpleNamespace(transpose_a=True, transpose_b=False)
    assert run(transposed, np.ones((2, 4, 3), np.float32), b) is NotImplemented  # strided
