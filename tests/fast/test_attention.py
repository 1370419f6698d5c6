"""ScaledDotProductAttention's fast kernel (irrun.fast.attention: the scores laid out
[..., S, L]) against the reference kernel, within the stated bound: each output within
``(4 E u A + 2 (S + 3) u) max|v|``, ``A`` the largest ``sum_e |q_e k_e|`` of its row
(the scaled query's), ``u`` 2^-24 for f32 (f16: computed in f32, then one f16 ulp) and
2^-53 for f64; NaN where the reference has NaN (a row of -inf scores, a NaN input)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from irrun.fast import fast_kernel
from irrun.ir.registry import resolve

SDPA = resolve("ScaledDotProductAttention", "opset13")
UNIT = {np.float32: 2.0**-24, np.float64: 2.0**-53, np.float16: 2.0**-24}


@st.composite
def _attention(draw):
    dtype = np.dtype(draw(st.sampled_from([np.float32, np.float64, np.float16])))
    b, h = draw(st.integers(1, 2)), draw(st.integers(1, 3))
    L, S, E, Ev = (draw(st.integers(1, 5)) for _ in range(4))
    special = draw(st.booleans())
    elements = st.floats(-4, 4, width=16)
    if special:
        elements = st.one_of(elements, st.sampled_from([np.nan, np.inf, -np.inf, -0.0]))

    def array(shape):
        return draw(hnp.arrays(dtype, shape, elements=elements))

    q = array((b, h, L, E))
    k = array((draw(st.sampled_from([1, b])), h, S, E))
    v = array((k.shape[0], h, S, Ev))
    args = [q, k, v]
    causal = draw(st.booleans())
    kind = draw(st.sampled_from(["none", "bool", "float"]))
    if kind != "none" or draw(st.booleans()):
        if kind == "bool":
            mask = draw(hnp.arrays(np.bool_, draw(st.sampled_from([(L, S), (b, 1, L, S), (1, S)]))))
        else:
            mask = array(draw(st.sampled_from([(L, S), (b, 1, 1, S), ()])))
        args.append(mask)
        if draw(st.booleans()):
            args.append(np.array(draw(st.sampled_from([0.125, 1.0, 2.0])), dtype))
    return SimpleNamespace(causal=causal), args, special


@settings(max_examples=200, deadline=None)
@given(case=_attention())
def test_key_major_scores_are_the_reference_within_the_bound(case):
    attrs, args, special = case
    with np.errstate(all="ignore"):
        (want,) = SDPA.kernel(attrs, *args)
        (got,) = fast_kernel(SDPA).run(attrs, *args)
    assert got.shape == want.shape and got.dtype == want.dtype
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
    if special:
        return  # NaN where the reference has it; no bound on values from infinities
    q, k, v = (a.astype(np.float64) for a in args[:3])
    e = q.shape[-1]
    scale = float(args[4]) if len(args) > 4 else 1 / np.sqrt(e)
    products = np.matmul(np.abs(q * scale), np.swapaxes(np.abs(k), -1, -2)).max(axis=-1)
    u = UNIT[want.dtype.type]
    allowed = (4 * e * u * products[..., None] + 2 * (k.shape[-2] + 3) * u) * np.abs(v).max()
    if want.dtype == np.float16:
        with np.errstate(invalid="ignore"):  # NaN's spacing
            allowed = allowed + np.spacing(np.abs(want)).astype(np.float64)
    finite = np.isfinite(w)
    assert (np.abs(g - w)[finite] <= np.broadcast_to(allowed, w.shape)[finite]).all()


def test_what_the_fast_kernel_leaves_to_the_reference():
    run = fast_kernel(SDPA).run
    q = np.ones((1, 2, 3, 4), np.float32)
    sink = np.zeros((1, 2, 3, 1), np.float32)
    attrs = SimpleNamespace(causal=False)
    assert run(attrs, q, q, q, None, None, sink) is NotImplemented
    assert run(attrs, q, q[:, :, :0], q[:, :, :0]) is NotImplemented  # no keys
    assert run(attrs, q[:, :, :0], q, q) is NotImplemented  # no queries
