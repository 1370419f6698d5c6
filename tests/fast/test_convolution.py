"""The fast convolution kernels (irrun.fast.convolution) against the reference
(irrun.ops.convolution.convolve), and both against the CPU plugin.

The bound.  An output element is a sum of ``K = Ci * taps`` rounded products; any order
of that sum (BLAS's blocking, the plugin's, with or without fused multiply-adds) is
within ``gamma_K * S`` of the exact sum, where ``S`` is the sum of ``|x * w|`` over the
element's products and ``gamma_K = K*u / (1 - K*u)`` (Higham, Accuracy and Stability of
Numerical Algorithms, 2nd ed., eq. 3.5; ``u = 2**-24`` for sums in f32, ``2**-53`` in
f64).  Two such sums of the same products are within ``2 * gamma_K * S`` of each other:
that is what :func:`assert_within_bound` checks, plus, for f16 results, one f16 rounding
of each (half an f16 ulp apiece), plus a few subnormal quanta for products that
underflow.  ``S`` is computed in f64 from ``|x|`` and ``|w|`` by the reference kernel:
the bound's scale, not an expected value.  Against the plugin, f64 data counts two more
roundings per product (the plugin computes f64 in f32: ``K + 2`` and ``u = 2**-24``).

Where a fast path adds the same products in the same order as the reference
(``pointwise``, ``depthwise`` and the JIT), the test is bit for bit: values, signs of
zeros and NaN positions.  Elsewhere non-finite results must match exactly (an infinity
or a NaN in a sum does not depend on the order) and finite ones within the bound.
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openvino import opset1
from support.ov_oneop import run_both

import irrun
from irrun import threads
from irrun.fast import blas, conv_depthwise, conv_taps
from irrun.fast import convolution as fast
from irrun.ops import convolution as reference

U = {np.dtype(np.float64): 2.0**-53}  # unit roundoff of the sums; f32 for the rest
PATHS = ("pointwise", "taps", "depthwise", "grouped", "columns")
EXACT = {"pointwise", "depthwise"}


def gamma(k: int, u: float) -> float:
    return k * u / (1 - k * u)


def magnitude(x: np.ndarray, w: np.ndarray, a) -> np.ndarray:
    """S: the sum of |x * w| over each output element's products, in f64."""
    with np.errstate(invalid="ignore", over="ignore"):
        return reference.convolve(np.abs(x.astype(np.float64)), np.abs(w.astype(np.float64)), a)


def assert_within_bound(got, want, x, w, a, u=None, extra_products=0, what=""):
    """``got`` and ``want`` are two sums of the same products (see the module's docstring)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, what)
    if got.size == 0:
        return
    u = U.get(np.dtype(x.dtype), 2.0**-24) if u is None else u
    k = w.shape[2] * math.prod(w.shape[3:]) + extra_products
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    finite = np.isfinite(w64)
    np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64), err_msg=f"NaNs: {what}")
    np.testing.assert_array_equal(g64[~finite & ~np.isnan(w64)], w64[~finite & ~np.isnan(w64)],
                                  err_msg=f"infinities: {what}")  # fmt: skip
    bound = 2 * gamma(k, u) * magnitude(x, w, a) + k * 2.0**-126
    if got.dtype == np.float16:
        bound += np.spacing(np.maximum(np.abs(got), np.abs(want))).astype(np.float64)
    err = np.abs(g64 - w64)
    bad = finite & ~(err <= bound)
    assert not bad.any(), (f"{what}: {int(bad.sum())} beyond the bound, worst "
                           f"{float(np.max(err[bad] / bound[bad])):.3g}x")  # fmt: skip


def assert_same_bits(got, want, what=""):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    np.testing.assert_array_equal(got, want, err_msg=what)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"signs: {what}")
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"NaNs: {what}")


def run_fast(x, w, a):
    """The fast kernel's output, or the reference's where it returns NotImplemented."""
    out = fast.convolve(x, w, a)
    return reference.convolve(x, w, a) if out is NotImplemented else out


def path_of(x, w, a) -> str | None:
    return fast.path(x.shape, w.shape, x.dtype, reference.geometry(a, x.shape, w.shape))


def check_against_reference(x, w, a, what=""):
    """The fast kernel against the reference: bit for bit on the exact paths."""
    taken = path_of(x, w, a)
    got, want = run_fast(x, w, a), reference.convolve(x, w, a)
    if taken in EXACT or taken is None:
        assert_same_bits(got, want, what=f"{taken} {what}")
    else:
        assert_within_bound(got, want, x, w, a, what=f"{taken} {what}")
    return taken


# ----------------------------------------------------------------- each path, drawn cases

DTYPES = (np.float32, np.float16, np.float64)
SPECIALS = (np.nan, np.inf, -np.inf, 0.0, -0.0)


def _fit(sizes, kernel, dilations, pads_begin, pads_end, auto_pad):
    """Kernels shrunk until their reach fits the (padded, for explicit) input."""
    kernel = list(kernel)
    for i, size in enumerate(sizes):
        room = size + (pads_begin[i] + pads_end[i] if auto_pad == "explicit" else 0)
        while kernel[i] > 1 and dilations[i] * (kernel[i] - 1) + 1 > room:
            kernel[i] -= 1
    return tuple(kernel)


@st.composite
def cases(draw, kind: str):
    """(x, w [G, Co, Ci, *K], attrs) meant for path ``kind``, with the odd special value,
    signed zero and non-contiguous layout."""
    ints = lambda lo, hi: draw(st.integers(lo, hi))  # noqa: E731
    auto_pad = draw(st.sampled_from(("explicit", "explicit", "valid", "same_upper",
                                     "same_lower")))  # fmt: skip
    if kind == "pointwise":
        n = ints(1, 3)
        groups, ci, co = ints(1, 3), ints(1, 4), ints(1, 4)
        sizes = tuple(ints(1, 6) for _ in range(n))
        kernel, strides = (1,) * n, (1,) * n
        dilations = tuple(ints(1, 3) for _ in range(n))
        pads_begin = pads_end = (0,) * n
    else:
        if kind == "taps":
            n, groups, ci = 2, 1, ints(16, 20)
            co = ints(1, 2 * ci)
            kernel, strides = (ints(1, 3), ints(2, 3)), (ints(1, 2), 1)
        elif kind == "depthwise":
            n, groups, ci, co = ints(1, 2), ints(1, 80), 1, 1
            kernel, strides = tuple(ints(1, 5) for _ in range(n)), tuple(ints(1, 3) for _ in range(n))
        elif kind == "grouped":
            n = ints(1, 2)
            if draw(st.booleans()):
                groups, ci, co = ints(2, 4), ints(2, 4), ints(1, 4)
            else:  # ordinary, many more inputs than outputs
                groups, ci = 1, ints(32, 40)
                co = ints(1, ci // 2)
            kernel = tuple(ints(2, 4) for _ in range(n))
            strides = tuple(ints(1, 3) for _ in range(n))
        else:  # columns: 3-D, a channel multiplier, or a small ordinary filter
            n = draw(st.sampled_from((1, 2, 3)))
            if n == 3:
                groups, ci, co = ints(1, 3), ints(1, 3), ints(1, 3)
            elif draw(st.booleans()):
                groups, ci, co = ints(2, 4), 1, ints(2, 4)
            else:
                groups, ci, co = 1, ints(1, 8), ints(1, 8)
            kernel = tuple(ints(1, 3) for _ in range(n))
            strides = tuple(ints(1, 3) for _ in range(n))
        dilations = tuple(ints(1, 2) for _ in range(n))
        pads_begin = tuple(ints(0, 3) for _ in range(n))
        pads_end = tuple(ints(0, 3) for _ in range(n))
        if kind == "taps":  # output rows at least 20 wide
            sizes = (ints(1, 5) + 2 * (kernel[0] - 1), ints(20, 24) + 2 * (kernel[1] - 1))
        elif kind == "depthwise" and draw(st.booleans()):
            sizes = tuple(ints(30, 40) for _ in range(n))  # flat planes, past 1024 outputs
        else:
            sizes = tuple(ints(1, 9 if n < 3 else 5) for _ in range(n))
    kernel = _fit(sizes, kernel, dilations, pads_begin, pads_end, auto_pad)
    a = SimpleNamespace(strides=strides, dilations=dilations, pads_begin=pads_begin,
                        pads_end=pads_end, auto_pad=auto_pad)  # fmt: skip
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (ints(1, 2), groups * ci, *sizes)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((groups, co, ci, *kernel)).astype(dtype)
    for _ in range(ints(0, 3)):
        x.flat[ints(0, x.size - 1)] = draw(st.sampled_from(SPECIALS))
    if draw(st.integers(0, 4)) == 0:
        w.flat[ints(0, w.size - 1)] = draw(st.sampled_from((0.0, -0.0, np.inf, np.nan)))
    layout = draw(st.sampled_from(("C", "F", "strided")))
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "strided":  # every other element of a wider array: a view
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    return x, w, a


def _dispatched(kind, examples=30):
    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
    @given(case=cases(kind))
    def test(case):
        x, w, a = case
        assume(path_of(x, w, a) == kind)
        with np.errstate(invalid="ignore", over="ignore"):
            check_against_reference(x, w, a, what=f"{x.shape} {w.shape} {vars(a)} {x.dtype}")

    test.__name__ = f"test_{kind}_against_the_reference"
    return test


test_pointwise_against_the_reference = _dispatched("pointwise")
test_taps_against_the_reference = _dispatched("taps")
test_depthwise_against_the_reference = _dispatched("depthwise")
test_grouped_against_the_reference = _dispatched("grouped")
test_columns_against_the_reference = _dispatched("columns")


@pytest.mark.slow
@pytest.mark.parametrize("kind", PATHS)
def test_a_long_sweep_of_each_path(kind):
    """The same, 500 cases a path (``python -m pytest -m slow``)."""
    _dispatched(kind, examples=500)()


def test_empty_batch_and_channels_take_the_reference():
    """0-size batch or channels: no path applies; the reference gives the empty or zero
    output of the shape rule's shape."""
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    for xs, ws, want in [((0, 4, 24, 24), (1, 2, 4, 3, 3), (0, 2, 24, 24)),
                         ((1, 0, 24, 24), (1, 2, 0, 3, 3), (1, 2, 24, 24)),
                         ((1, 4, 24, 24), (1, 0, 4, 3, 3), (1, 0, 24, 24))]:  # fmt: skip
        x, w = np.ones(xs, np.float32), np.ones(ws, np.float32)
        assert fast.convolve(x, w, a) is NotImplemented
        out = reference.convolve(x, w, a)
        assert out.shape == want and not out.any()


# ----------------------------------------------------------------- fixed cases, and the plugin

F16_TOL = {"rtol": 1e-3, "atol": 1e-3}


def _case(shape, groups, co, ci, kernel, strides, pads_begin=None, pads_end=None,
          dilations=None, auto_pad="explicit", dtype=np.float32):  # fmt: skip
    n = len(kernel)
    return SimpleNamespace(
        shape=shape, groups=groups, co=co, ci=ci, kernel=kernel, strides=strides,
        pads_begin=pads_begin or (0,) * n, pads_end=pads_end or (0,) * n,
        dilations=dilations or (1,) * n, auto_pad=auto_pad, dtype=dtype,
    )  # fmt: skip


CASES = [
    # depthwise, flat planes (large outputs)
    _case((1, 6, 40, 40), 6, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 5, 37, 41), 5, 1, 1, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 4, 36, 36), 4, 1, 1, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 3, 40, 38), 3, 1, 1, (7, 7), (1, 1), (3, 3), (3, 3)),
    _case((1, 4, 40, 40), 4, 1, 1, (3, 3), (3, 2), (0, 2), (1, 0), (2, 1)),
    _case((2, 3, 45, 45), 3, 1, 1, (1, 1), (1, 1)),
    _case((1, 3, 44, 40), 3, 1, 1, (5, 3), (2, 1), (0, 0), (0, 0), (1, 2)),
    _case((1, 4, 41, 39), 4, 1, 1, (3, 3), (2, 2), auto_pad="same_upper"),
    _case((1, 4, 41, 39), 4, 1, 1, (4, 4), (2, 2), auto_pad="same_lower"),
    _case((1, 4, 41, 39), 4, 1, 1, (3, 3), (1, 1), auto_pad="valid"),
    # depthwise, channels last (small outputs, many channels)
    _case((1, 70, 14, 14), 70, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 96, 7, 7), 96, 1, 1, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 80, 14, 14), 80, 1, 1, (7, 7), (1, 1), (3, 3), (3, 3)),
    _case((1, 72, 15, 15), 72, 1, 1, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2)),
    _case((1, 64, 9, 9), 64, 1, 1, (1, 1), (2, 2), (1, 1), (0, 0)),
    # grouped (several input channels per group)
    _case((1, 12, 30, 30), 3, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 16, 29, 31), 2, 8, 8, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 24, 14, 14), 6, 2, 4, (5, 5), (1, 1), (2, 2), (2, 2), (2, 2)),
    _case((1, 8, 20, 20), 4, 3, 2, (7, 7), (3, 3), (3, 3), (0, 0)),
    _case((1, 16, 9, 9), 8, 2, 2, (1, 1), (1, 1)),
    _case((1, 16, 12, 12), 4, 4, 4, (3, 3), (2, 2), auto_pad="same_upper"),
    # ordinary filters with twice the input channels as output ones
    _case((1, 64, 20, 20), 1, 16, 64, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 48, 17, 19), 1, 24, 48, (3, 3), (2, 2), (1, 1), (1, 1), (2, 2)),
    _case((1, 32, 12, 12), 1, 8, 32, (5, 5), (1, 1), (2, 2), (2, 2)),
    _case((1, 64, 10, 10), 1, 16, 64, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    # ordinary filters, wide outputs: one GEMM per tap (conv_taps)
    _case((1, 16, 24, 24), 1, 16, 16, (3, 3), (1, 1), (1, 1), (1, 1)),
    _case((2, 20, 45, 47), 1, 32, 20, (3, 3), (2, 2), (1, 1), (1, 1)),
    _case((1, 24, 30, 30), 1, 24, 24, (5, 5), (1, 1), (2, 2), (2, 2), (2, 2)),
    _case((1, 16, 26, 44), 1, 8, 16, (3, 1), (1, 2), (0, 1), (2, 0), auto_pad="same_upper"),
    _case((1, 16, 24, 24), 1, 16, 16, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    _case((1, 16, 22, 22), 1, 20, 16, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float64),
    # a channel multiplier: one input channel per group, several outputs (plain path)
    _case((1, 6, 16, 16), 6, 3, 1, (3, 3), (1, 1), (1, 1), (1, 1)),
    # 1-D
    _case((2, 9, 50), 9, 1, 1, (5,), (2,), (2,), (1,)),
    _case((1, 80, 30), 80, 1, 1, (3,), (1,), (1,), (1,), (2,)),
    _case((1, 12, 33), 3, 2, 4, (3,), (1,), (1,), (1,)),
    # f16
    _case((1, 8, 30, 30), 8, 1, 1, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
    _case((1, 96, 10, 10), 96, 1, 1, (5, 5), (2, 2), (2, 2), (2, 2), dtype=np.float16),
    _case((1, 16, 20, 20), 4, 4, 4, (3, 3), (1, 1), (1, 1), (1, 1), dtype=np.float16),
]


def _inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(case.shape).astype(case.dtype)
    w = rng.standard_normal((case.groups, case.co, case.ci, *case.kernel)).astype(case.dtype)
    return x, w


def _attrs(case):
    return SimpleNamespace(strides=case.strides, dilations=case.dilations,
                           pads_begin=case.pads_begin, pads_end=case.pads_end,
                           auto_pad=case.auto_pad)  # fmt: skip


def _id(c):
    return (f"{c.shape}-g{c.groups}-k{c.kernel}-s{c.strides}-d{c.dilations}-{c.auto_pad}"
            f"-{np.dtype(c.dtype).name}")  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_matches_the_plugin(case, tmp_path):
    """A run (the fast kernels) and the reference kernel, each against the plugin within
    the bound of two sums of the same products (f64: the plugin's in f32)."""
    x, w = _inputs(case)
    geometry = (case.strides, case.pads_begin, case.pads_end, case.dilations, case.auto_pad)
    got, want = run_both(
        lambda p: opset1.group_convolution(p, opset1.constant(w), *geometry), [x], tmp_path)
    f64 = case.dtype == np.float64
    bound = {"u": 2.0**-24, "extra_products": 2} if f64 else {}
    a = _attrs(case)
    assert_within_bound(got, want, x, w, a, **bound, what=f"run {vars(case)}")
    assert_within_bound(reference.convolve(x, w, a), want, x, w, a, **bound,
                        what=f"reference {vars(case)}")  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_cases_against_the_reference(case):
    x, w = _inputs(case, seed=4)
    check_against_reference(x, w, _attrs(case), what=str(vars(case)))


def test_the_cases_take_every_path():
    """Every path but ``columns`` (a channel multiplier) among the fixed cases, and
    ``columns`` for the multiplier: the plugin checks them all."""
    seen = {}
    for case in CASES:
        x, w = _inputs(case)
        seen.setdefault(path_of(x, w, _attrs(case)), []).append(case)
    assert set(seen) == set(PATHS), set(seen)
    assert all(c.ci == 1 and c.co > 1 for c in seen["columns"])


@pytest.mark.parametrize("case", [c for c in CASES if not (c.ci == 1 and c.co > 1)][::2],
                         ids=lambda c: f"{c.shape}-g{c.groups}-k{c.kernel}-s{c.strides}")
def test_the_same_bits_for_any_thread_count(case, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "_THREAD_WORK", 1)  # these small cases split too
    x, w = _inputs(case, seed=3)
    a = _attrs(case)
    outs = []
    for n in (1, 2, 3):
        with threads.using(n):
            outs.append(run_fast(x, w, a))
    for out in outs[1:]:
        assert_same_bits(out, outs[0])


def test_blocks_of_a_few_planes_give_the_same_bits(monkeypatch):
    """Many small blocks (a block of one plane, rows one by one) on three threads change
    nothing."""
    splits = []
    real = threads.map_blocks
    monkeypatch.setattr(threads, "map_blocks", lambda fn, n, min_block=1: (
        splits.append((threads.current(), n // min_block)), real(fn, n, min_block))[1])  # fmt: skip
    rng = np.random.default_rng(5)
    for shape, w_shape in [((2, 20, 66, 67), (20, 1, 1, 3, 3)),
                           ((2, 96, 9, 9), (96, 1, 1, 5, 5)),
                           ((2, 12, 31, 29), (3, 4, 4, 3, 3))]:  # fmt: skip
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal(w_shape).astype(np.float32)
        for strides in [(1, 1), (2, 2)]:
            a = SimpleNamespace(strides=strides, dilations=(1, 1), pads_begin=(1, 1),
                                pads_end=(1, 1), auto_pad="explicit")  # fmt: skip
            whole = run_fast(x, w, a)
            with monkeypatch.context() as m:
                m.setattr(conv_depthwise, "_BLOCK_BYTES", 1)
                m.setattr(conv_depthwise, "_BLOCK_BYTES_LAST", 1)
                m.setattr(conv_depthwise, "_THREAD_WORK", 1)
                with threads.using(3):
                    small = run_fast(x, w, a)
            assert_same_bits(whole, small, what=f"{shape} {strides}")
    # Every call on three threads was free to give a block to each of them.
    assert len(splits) >= 6 and all(most >= 3 for n, most in splits if n == 3)


def test_depthwise_gives_the_reference_s_bits():
    """Same products added in the same order, from +0: padding, strides, dilations, both
    layouts (5 channels: flat planes; 70: channels last for the small planes)."""
    rng = np.random.default_rng(11)
    for (h, w_), k, s, d, pads in itertools.product([(13, 17), (40, 36)], [1, 3, 5], [1, 2],
                                                    [1, 2], [(0, 0), (2, 1)]):  # fmt: skip
        for channels in (5, 70):
            x = rng.standard_normal((2, channels, h, w_)).astype(np.float32)
            x[0, 0, :3] = -0.0  # sums of signed zeros: +0, as from +0
            w = rng.standard_normal((channels, 1, 1, k, k)).astype(np.float32)
            a = SimpleNamespace(strides=(s, s), dilations=(d, d), pads_begin=(pads[0],) * 2,
                                pads_end=(pads[1],) * 2, auto_pad="explicit")  # fmt: skip
            assert path_of(x, w, a) in ("depthwise", "pointwise")
            assert_same_bits(fast.convolve(x, w, a), reference.convolve(x, w, a),
                             what=str((h, w_, k, s, d, pads, channels)))  # fmt: skip


def test_a_padded_infinite_weight_gives_no_nan():
    """The plugin skips the padding (checked by hand on it: an infinite corner weight
    makes the first row and column 0 with a pad of 1, not NaN); so does the reference,
    and a fast path that would multiply padding gives way to it."""
    x = np.ones((1, 16, 24, 24), np.float32)
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    for w_shape in [(16, 1, 1, 3, 3), (1, 16, 16, 3, 3), (4, 4, 4, 3, 3)]:
        w = np.zeros(w_shape, np.float32)
        w[..., 0, 0] = np.inf
        assert fast.convolve(x, w, a) is NotImplemented
        with np.errstate(invalid="ignore"):  # BLAS may multiply inf by its own padding
            out = reference.convolve(x, w, a)
        assert (out[:, :, 0, :] == 0).all() and (out[:, :, :, 0] == 0).all()
        assert np.isposinf(out[:, :, 1:, 1:]).all()


def test_hand_computed_depthwise():
    x = np.arange(2 * 16, dtype=np.float32).reshape(1, 2, 4, 4)
    w = np.zeros((2, 1, 1, 3, 3), np.float32)
    w[0, 0, 0, 1, 1] = 2  # channel 0: doubles the centre
    w[1, 0, 0] = 1  # channel 1: the sum of each 3x3 window
    a = SimpleNamespace(strides=(2, 2), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    for got in (fast.convolve(x, w, a), reference.convolve(x, w, a)):
        assert got[0, 0].tolist() == [[0.0, 4.0], [16.0, 20.0]]
        c = x[0, 1]
        assert got[0, 1].tolist() == [
            [c[0:2, 0:2].sum(), c[0:2, 1:4].sum()],
            [c[1:4, 0:2].sum(), c[1:4, 1:4].sum()],
        ]


def test_far_pads_and_strides_take_the_reference():
    """Pads or strides far past the input: a padded copy would be huge; no path applies,
    and the reference's values are right (by hand)."""
    big = 2**31
    x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    w = np.ones((1, 1, 1, 2, 2), np.float32)
    a = SimpleNamespace(strides=(big, big), dilations=(1, 1), pads_begin=(1, 1),
                        pads_end=(big, big), auto_pad="explicit")  # fmt: skip
    assert fast.convolve(x, w, a) is NotImplemented
    got = reference.convolve(x, w, a)
    assert got.shape == (1, 1, 2, 2)
    assert got[0, 0].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    x = np.arange(2 * 81, dtype=np.float32).reshape(1, 2, 9, 9)
    w = np.ones((2, 1, 1, 3, 3), np.float32)
    a = SimpleNamespace(strides=(1000, 1000), dilations=(1, 1), pads_begin=(0, 0),
                        pads_end=(0, 0), auto_pad="explicit")  # fmt: skip
    # Stride phases would be millions of zeros: not the tap loop, but the column matrix
    # of the one window, whose padded copy is the input.
    assert path_of(x, w, a) == "columns"
    for got in (fast.convolve(x, w, a), reference.convolve(x, w, a)):
        assert got.reshape(2).tolist() == [x[0, c, :3, :3].sum() for c in range(2)]


def test_a_big_column_matrix_takes_the_reference(monkeypatch):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 4, 5, 6, 7)).astype(np.float32)
    w = rng.standard_normal((1, 3, 4, 3, 3, 3)).astype(np.float32)
    a = SimpleNamespace(strides=(1,) * 3, dilations=(1,) * 3, pads_begin=(1,) * 3,
                        pads_end=(1,) * 3, auto_pad="explicit")  # fmt: skip
    assert path_of(x, w, a) == "columns"
    monkeypatch.setattr(fast, "COLUMNS_BYTES", 4 * 4 * 27 * 5 * 6 * 7 - 1)
    assert path_of(x, w, a) is None


def test_a_model_run_on_two_threads_gives_the_same_bits(tmp_path):
    """Through a loaded model: depthwise then grouped, threads=1 and threads=2, and the
    same bits in a reference run for the depthwise layer alone."""
    import openvino as ov

    rng = np.random.default_rng(9)
    dw = rng.standard_normal((16, 1, 1, 3, 3)).astype(np.float32)
    gw = rng.standard_normal((4, 8, 4, 3, 3)).astype(np.float32)
    p = opset1.parameter([2, 16, 33, 33], ov.Type.f32, name="x")
    a = opset1.group_convolution(p, opset1.constant(dw), [1, 1], [1, 1], [1, 1], [1, 1])
    b = opset1.group_convolution(a, opset1.constant(gw), [2, 2], [1, 1], [1, 1], [1, 1])
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([b], [p], "m"), path, compress_to_fp16=False)
    x = rng.standard_normal((2, 16, 33, 33)).astype(np.float32)
    one = next(iter(irrun.load(path, threads=1).run({"x": x}).values()))
    two = next(iter(irrun.load(path, threads=2).run({"x": x}).values()))
    assert_same_bits(one, two)


# Pointwise filters (1x1..., stride 1, no pads): one product with the input as it lies.
POINTWISE = [
    # shape, groups, co, ci, pads (explicit) or auto_pad, dtype
    ((1, 16, 9, 11), 1, 24, 16, "explicit", np.float32),
    ((2, 12, 7, 5), 3, 2, 4, "explicit", np.float32),  # grouped
    ((1, 8, 6, 6), 8, 1, 1, "same_upper", np.float32),  # depthwise 1x1: a scale per channel
    ((1, 8, 6, 6), 1, 4, 8, "valid", np.float16),
    ((2, 6, 13), 1, 5, 6, "explicit", np.float32),  # 1-D
    ((1, 4, 3, 4, 5), 2, 3, 2, "same_lower", np.float32),  # 3-D
]


@pytest.mark.parametrize(("shape", "groups", "co", "ci", "auto_pad", "dtype"), POINTWISE)
def test_pointwise_filters_match_the_plugin_and_a_product(shape, groups, co, ci, auto_pad,
                                                         dtype, tmp_path):  # fmt: skip
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((groups, co, ci) + (1,) * (len(shape) - 2)).astype(dtype)
    n = len(shape) - 2
    geometry = ((1,) * n, (0,) * n, (0,) * n, (2,) * n, auto_pad)  # dilations do not matter
    a = SimpleNamespace(strides=(1,) * n, dilations=(2,) * n, pads_begin=(0,) * n,
                        pads_end=(0,) * n, auto_pad=auto_pad)  # fmt: skip
    assert path_of(x, w, a) == "pointwise"
    got, want = run_both(
        lambda p: opset1.group_convolution(p, opset1.constant(w), *geometry), [x], tmp_path)
    assert_within_bound(got, want, x, w, a)
    assert_same_bits(reference.convolve(x, w, a), got)
    # By hand: each group's [Co, Ci] filter times its channels at every position, in f64.
    xs = x.astype(np.float64).reshape(shape[0], groups, ci, -1)
    by_hand = np.einsum("goc,ngcp->ngop", w.reshape(groups, co, ci).astype(np.float64), xs)
    np.testing.assert_allclose(got.astype(np.float64).reshape(by_hand.shape), by_hand,
                               rtol=2e-3 if dtype == np.float16 else 1e-5, atol=1e-2)


def test_pointwise_needs_stride_1_and_no_pads():
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(0, 0), pads_end=(0, 0),
                        auto_pad="explicit")  # fmt: skip
    x = np.ones((1, 1, 2, 2), np.float32)
    w = np.full((1, 1, 1, 1, 1), 3, np.float32)
    assert path_of(x, w, a) == "pointwise"
    assert path_of(x, np.ones((1, 1, 1, 1, 2), np.float32), a) != "pointwise"
    assert path_of(x, w, SimpleNamespace(**{**vars(a), "strides": (2, 1)})) != "pointwise"
    padded = SimpleNamespace(**{**vars(a), "pads_begin": (1, 0)})
    assert path_of(x, w, padded) != "pointwise"
    # a 1x1 filter with pads reads zeros around the input, which add nothing
    assert run_fast(x, w, padded).tolist() == [[[[0.0, 0.0], [3.0, 3.0], [3.0, 3.0]]]]


def test_without_a_known_blas_the_taps_give_way(monkeypatch):
    """Where NumPy's BLAS has no CBLAS GEMM of known interface, conv_taps steps aside."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 16, 24, 24)).astype(np.float32)
    w = rng.standard_normal((1, 16, 16, 3, 3)).astype(np.float32)
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    assert path_of(x, w, a) == ("taps" if blas.available(np.float32) else "columns")
    monkeypatch.setattr(conv_taps.blas, "available", lambda dtype: False)
    fast._plan.cache_clear()  # the paths of layers seen so far were chosen with BLAS
    try:
        assert path_of(x, w, a) == "columns"
        called = []
        monkeypatch.setattr(conv_taps, "convolve", lambda *args: called.append(1))
        assert_within_bound(run_fast(x, w, a), reference.convolve(x, w, a), x, w, a)
        assert not called
    finally:
        fast._plan.cache_clear()


def test_f64_taps_match_an_f64_sum_by_hand():
    """The plugin computes f64 in f32; by hand in f64, conv_taps' dgemm agrees to 1e-12."""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 16, 22, 24))
    w = rng.standard_normal((1, 20, 16, 3, 3))
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1),
                        auto_pad="explicit")  # fmt: skip
    assert path_of(x, w, a) == ("taps" if blas.available(np.float64) else "columns")
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("oc,nchw->nohw", w[0, :, :, i, j], xp[:, :, i:i + 22, j:j + 24])
               for i in range(3) for j in range(3))  # fmt: skip
    for got in (fast.convolve(x, w, a), reference.convolve(x, w, a)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------- declared scratch


SCRATCH_CASES = [
    # data, filter [G, Co, Ci, *K], strides, pads, dtype: a case for each path
    ((2, 16, 9, 11), (1, 24, 16, 1, 1), 1, 0, np.float16),  # pointwise
    ((1, 16, 24, 30), (1, 20, 16, 3, 3), 1, 1, np.float32),  # taps
    ((2, 16, 24, 30), (1, 20, 16, 3, 3), 2, 1, np.float16),  # taps, strided
    ((2, 24, 40, 40), (24, 1, 1, 3, 3), 1, 1, np.float32),  # depthwise, flat
    ((1, 96, 14, 14), (96, 1, 1, 5, 5), 2, 2, np.float16),  # depthwise, channels last
    ((2, 12, 30, 30), (3, 4, 4, 3, 3), 1, 1, np.float32),  # grouped
    ((1, 64, 20, 12), (1, 16, 64, 3, 3), 1, 1, np.float32),  # ordinary, many inputs
    ((1, 4, 5, 6, 7), (1, 3, 4, 3, 3, 3), 1, 1, np.float32),  # columns
    ((1, 6, 16, 16), (6, 3, 1, 3, 3), 2, 3, np.float16),  # columns: a channel multiplier
]


def _peak(fn) -> int:
    """The most bytes ``fn()`` held at once, less what it returned."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - (out.nbytes if isinstance(out, np.ndarray) else 0)


@pytest.mark.parametrize(("x_shape", "w_shape", "stride", "pad", "dtype"), SCRATCH_CASES)
def test_the_declared_scratch_holds(x_shape, w_shape, stride, pad, dtype):
    """What the kernels hold beside their inputs and output stays within what the OpDef
    and the FastKernel declare (traced by tracemalloc, which sees NumPy's buffers; 64 KiB
    for Python's own objects and NumPy's small temporaries)."""
    from irrun.fast import fast_kernel
    from irrun.ir.element_types import of_array
    from irrun.ir.registry import TensorInfo, resolve

    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    n = len(x_shape) - 2
    a = SimpleNamespace(strides=(stride,) * n, dilations=(1,) * n, pads_begin=(pad,) * n,
                        pads_end=(pad,) * n, auto_pad="explicit")  # fmt: skip
    op = resolve("GroupConvolution", "opset1")
    infos = [TensorInfo(x.shape, of_array(x)), TensorInfo(w.shape, of_array(w))]
    declared_reference = op.scratch(a, infos, [])
    declared_fast = fast_kernel(op).scratch(a, infos, [])
    assert path_of(x, w, a) is not None
    run_fast(x, w, a)  # the first call's one-off set-up (BLAS, caches) is not the kernel's
    slack = 64 * 1024
    assert _peak(lambda: fast.convolve(x, w, a)) <= declared_fast + slack
    assert _peak(lambda: reference.convolve(x, w, a)) <= declared_reference + slack


def test_pads_of_65536_on_the_demo_s_first_convolution_hold_only_the_output():
    """models/demo.xml's first convolution (3 -> 16 channels, 3x3, 32x32) with
    pads_end=65536 on the rows: the output is [1, 16, 65567, 32]; the column matrix
    would be 27 of those per input channel, so the fast kernel gives way, and the
    reference holds a tap's view of the input and its product (the output's zeros
    are allocated once, untouched past the input's box)."""
    from irrun.ir.element_types import of_array
    from irrun.ir.registry import TensorInfo, resolve

    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    a = SimpleNamespace(strides=(1, 1), dilations=(1, 1), pads_begin=(1, 1),
                        pads_end=(65536, 1), auto_pad="explicit")  # fmt: skip
    op = resolve("Convolution", "opset1")
    infos = [TensorInfo(x.shape, of_array(x)), TensorInfo(w.shape, of_array(w))]
    declared = op.scratch(a, infos, [])
    assert declared <= 2 * (x.nbytes + 16 * 32 * 32 * 4) + w.nbytes
    assert fast.convolve(x, w[None], a) is NotImplemented
    assert _peak(lambda: reference.convolve(x, w[None], a)) <= declared + 64 * 1024
    out = reference.convolve(x, w[None], a)
    assert out.shape == (1, 16, 65567, 32) and not out[:, :, 33:].any()
