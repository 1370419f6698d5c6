"""The fast kernels of ReLU, Clamp, Swish and Gelu, and their ``into`` (irrun.fast.activations).

ReLU, Clamp and Swish run other operations than their reference kernels (SIMD passes,
pieces), with the same bits: checked against the reference and against the definitions
written out here, NaN, infinities, signed zeros and denormals included, on one thread and
split over two.  ``into`` writes the fast kernel's values into its argument, or refuses
and leaves it untouched.  Gelu's table is bounded in tests/fast/test_gelu_table.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from support.bits import laid_out, same_bits, split_small

from irrun.fast import fast_kernel
from irrun.fast.activations import swish_pieces
from irrun.ir.registry import resolve
from irrun.ops.activations import clamp_bounds

RELU, CLAMP, SWISH = (resolve(t, "opset4") for t in ("ReLU", "Clamp", "Swish"))
GELU = resolve("Gelu", "opset7")
FLOATS = [np.float32, np.float16, np.float64]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("lo", "hi"), [(0.0, 6.0), (-1.0, 1.0), (-np.inf, 0.0), (0.0, 0.0),
                                        (-3.5, np.inf), (2.0, 2.0), (-0.0, 1.0), (-2.0, -0.0)])
def test_clamp_is_the_definition(dtype, lo, hi):
    """Clamp's bits are those of its definition (``x > lo ? x : lo``, then ``t < hi ? t :
    hi``, as maxps/minps), signed zeros and NaN included, on whatever CPU: the fast
    kernel's max and min passes with their fix-ups too."""
    specials = [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 6.0, -6.0, 1e-45, -1e-45, 2.0, -1.0]
    x = np.concatenate([np.array(specials, dtype),
                        (np.random.default_rng(1).standard_normal(5000) * 5).astype(dtype)])
    low, high = clamp_bounds(np.dtype(dtype), lo, hi)
    t = np.where(x > low, x, low)
    want = np.where(t < high, t, high).astype(dtype)
    attrs = SimpleNamespace(min=lo, max=hi)
    assert same_bits(CLAMP.kernel(attrs, x)[0], want)
    fast = fast_kernel(CLAMP).run(attrs, x)
    assert fast is NotImplemented if (np.signbit(low) and low == 0) or (np.signbit(high) and high == 0) \
        else same_bits(fast[0], want)


@pytest.mark.parametrize("dtype", [*FLOATS, np.int32, np.int8, np.uint8])
def test_relu_is_the_definition(dtype):
    """ReLU is ``x > 0 ? x : 0`` bit for bit (NaN and -0.0 give +0.0) on whatever CPU."""
    if np.dtype(dtype).kind == "f":
        special = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, -1e-45], dtype)
        rand = (np.random.default_rng(2).standard_normal(5000) * 5).astype(dtype)
    else:
        info = np.iinfo(dtype)
        special = np.array([info.min, info.max, 0, 1, 2], dtype)
        rand = np.random.default_rng(2).integers(info.min, info.max, 5000, dtype=dtype)
    x = np.concatenate([special, rand])
    want = np.where(x > 0, x, dtype(0)).astype(dtype)
    assert same_bits(RELU.kernel(SimpleNamespace(), x)[0], want)
    assert same_bits(fast_kernel(RELU).run(SimpleNamespace(), x)[0], want)


def test_swish_is_the_definition():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45, 88.0, -88.0, -104.0, 3.0],
                 np.float32)
    with np.errstate(all="ignore"):
        want = x / (np.float32(1) + np.exp(-x))
        got = fast_kernel(SWISH).run(SimpleNamespace(), x)[0]
    assert same_bits(SWISH.kernel(SimpleNamespace(), x)[0], want)
    assert same_bits(got, want)


@st.composite
def _activation_cases(draw):
    op = draw(st.sampled_from([RELU, CLAMP, SWISH, GELU]))
    dtype = draw(st.sampled_from(FLOATS + ([np.int32, np.int8] if op in (RELU, CLAMP) else [])))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5))
    x = draw(laid_out(shape, np.dtype(dtype)))
    args = [x]
    attrs = SimpleNamespace()
    if op is CLAMP:
        bounds = st.sampled_from([0.0, -0.0, -1.0, 1.0, 6.0, 0.5, -np.inf, np.inf])
        lo, hi = sorted((draw(bounds), draw(bounds)))
        attrs = SimpleNamespace(min=lo, max=hi)
    elif op is SWISH and draw(st.booleans()):
        args.append(np.array(draw(st.sampled_from([1.0, 0.5, -2.0, 0.0])), dtype))
    elif op is GELU:
        attrs = SimpleNamespace(approximation_mode=draw(st.sampled_from(["erf", "tanh"])))
    return op, attrs, args


def _exact(op, attrs) -> bool:
    return op is not GELU or attrs.approximation_mode != "erf"


@settings(max_examples=200, deadline=None)
@given(case=_activation_cases(), split=st.booleans())
def test_fast_kernels_and_into_are_the_reference(case, split):
    op, attrs, args = case
    with np.errstate(all="ignore"):
        (want,) = op.kernel(attrs, *args)
        if split:
            with split_small():
                fast = fast_kernel(op).run(attrs, *args)
        else:
            fast = fast_kernel(op).run(attrs, *args)
        if fast is NotImplemented:  # the reference's case: a -0.0 bound, say
            fast = (want,)
        if _exact(op, attrs):
            assert same_bits(fast[0], want)
        x = args[0]
        target = x.copy()  # C-contiguous and owned: what the in-place pass gives into
        if split:
            with split_small():
                done = fast_kernel(op).into(attrs, target, *args[1:])
        else:
            done = fast_kernel(op).into(attrs, target, *args[1:])
    if done:
        assert x.dtype in (np.float32, np.float64)
        assert same_bits(target, fast[0])
    else:
        assert same_bits(target, x)


@pytest.mark.parametrize("op", [RELU, CLAMP, SWISH, GELU], ids=lambda o: o.type)
def test_into_refuses_what_it_cannot_give_alike(op):
    attrs = SimpleNamespace(min=0.0, max=6.0, approximation_mode="erf")
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    frozen = x.copy()
    frozen.flags.writeable = False
    refused = [x.astype(np.float16), np.asfortranarray(x), x[:, ::2], frozen]
    if op is CLAMP:
        refused.append(x)  # with a -0.0 bound below
        attrs = SimpleNamespace(min=-0.0, max=6.0)
    if op is GELU:
        refused += [x.astype(np.float64)]
    for arr in refused:
        before = arr.copy()
        assert not fast_kernel(op).into(attrs, arr)
        assert same_bits(arr, before)
    if op is GELU:
        tanh = x.copy()
        assert not fast_kernel(op).into(SimpleNamespace(approximation_mode="tanh"), tanh)
        assert fast_kernel(op).into(SimpleNamespace(), x.copy())  # Gelu-2: erf
    if op is SWISH:
        for beta in (np.ones(1, np.float32), np.float64(1.0) * np.ones((), np.float64)):
            assert not fast_kernel(op).into(attrs, x.copy(), beta)


@pytest.mark.parametrize("op", [RELU, CLAMP, SWISH, GELU], ids=lambda o: o.type)
@pytest.mark.parametrize("shape", [(0, 16), (0,), (), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("split", [False, True])
def test_into_and_the_fast_kernel_take_empty_and_rank_0_arrays(op, shape, split):
    """An MoE's expert that no token chose gets 0 rows: its Swish ran in place into a
    0-row array and failed (range() with a step of 0); a rank-0 Clamp failed too."""
    attrs = SimpleNamespace(min=0.0, max=6.0, approximation_mode="erf")
    x = np.full(shape, -1.5, np.float32)
    target = x.copy()
    with split_small() if split else np.errstate():
        assert fast_kernel(op).into(attrs, target)
        (got,) = fast_kernel(op).run(attrs, x)
    (want,) = op.kernel(attrs, x)
    assert target.shape == got.shape == want.shape == shape
    assert same_bits(target, got)
    if op is not GELU:
        assert same_bits(got, want)


def test_swish_pieces_of_nothing():
    empty = np.empty((0, 4), np.float32)
    swish_pieces(empty, empty, None)  # no pieces, and no error
    assert empty.shape == (0, 4)
