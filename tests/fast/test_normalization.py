"""MVN-6 over the last axis (LayerNorm) by BLAS means (irrun.fast.normalization) against
the reference kernel, within the stated bound: ``2 (n + 2) u (mean|x| / s + |y|)`` for a
row of ``n`` and ``s = sqrt(variance + eps)`` above the means' rounding error
(``2 (n + 2) u mean|x|``), whose squares neither underflow to denormals nor overflow; NaN
where the reference has NaN."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import laid_out

from irrun.fast import fast_kernel
from irrun.ir.registry import resolve

MVN = resolve("MVN", "opset6")
UNIT = {np.float32: 2.0**-24, np.float64: 2.0**-53}


@st.composite
def _rows(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64])))
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=6))
    if draw(st.booleans()):
        x = draw(laid_out(shape, dtype))  # NaN, infinities, huge and tiny values
    else:
        x = draw(hnp.arrays(dtype, shape, elements=st.floats(-100, 100, width=dtype.itemsize * 8)))
    eps = draw(st.sampled_from([0.0, 1e-12, 1e-5]))
    axis = draw(st.sampled_from([-1, len(shape) - 1]))
    return x, eps, np.int64([axis])


@settings(max_examples=200, deadline=None)
@given(case=_rows())
def test_layer_norm_is_the_reference_within_the_bound(case):
    x, eps, axes = case
    attrs = SimpleNamespace(normalize_variance=True, eps=eps, eps_mode="inside_sqrt")
    with np.errstate(all="ignore"):
        (want,) = MVN.kernel(attrs, x, axes)
        (got,) = fast_kernel(MVN).run(attrs, x, axes)
        w, g, v = want.astype(np.float64), got.astype(np.float64), x.astype(np.float64)
        n = x.shape[-1]
        d = v - v.mean(axis=-1, keepdims=True)
        s = np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps)
        scale = np.abs(v).mean(axis=-1, keepdims=True)
        # Rounding is relative (UNIT) for normal numbers; among subnormals each sum is off by
        # up to their spacing, whatever its size: x = [1e-45, 1e-45] has a mean one spacing off.
        tiny = np.finfo(x.dtype).smallest_subnormal
        allowed = 2 * (n + 2) * (UNIT[x.dtype.type] * (scale / s + np.abs(w)) + tiny / s)
    assert got.shape == want.shape and got.dtype == want.dtype
    info = np.finfo(x.dtype)
    squares = (s * s >= info.tiny / UNIT[x.dtype.type]) & (s * s * n < info.max)
    resolved = s > 2 * (n + 2) * UNIT[x.dtype.type] * scale
    bounded = np.broadcast_to(squares & resolved & np.isfinite(scale), w.shape)
    assert (np.isnan(g) == np.isnan(w))[bounded].all()
    finite = bounded & np.isfinite(w)
    assert (np.abs(g[finite] - w[finite]) <= allowed[finite]).all()


def test_what_the_fast_kernel_leaves_to_the_reference():
    run = fast_kernel(MVN).run
    attrs = SimpleNamespace(normalize_variance=True, eps=1e-5, eps_mode="inside_sqrt")
    x = np.ones((2, 3), np.float32)
    last = np.int64([1])
    assert run(attrs, x, np.int64([0])) is NotImplemented
    assert run(attrs, x, np.int64([0, 1])) is NotImplemented
    assert run(attrs, x.astype(np.float16), last) is NotImplemented
    assert run(attrs, np.ones((2, 0), np.float32), last) is NotImplemented
    assert run(SimpleNamespace(normalize_variance=False, eps=0.0, eps_mode="inside_sqrt"), x,
               last) is NotImplemented
    assert run(SimpleNamespace(normalize_variance=True, eps=0.0, eps_mode="outside_sqrt"), x,
               last) is NotImplemented
    assert run(attrs, np.float32(1.0) * np.ones((), np.float32), np.int64([-1])) is NotImplemented
