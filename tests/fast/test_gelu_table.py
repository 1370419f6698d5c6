"""Gelu (erf) in f32 by its table of Phi (irrun.fast.gelu_table), Gelu's fast kernel.

The true value is ``x * erfc(-x / sqrt 2) / 2`` in float64 with ``math.erfc`` (correctly
rounded to within an ulp of f64), never irrun.  Gelu's reference kernel
(irrun.ops.activations.gelu_erf) is within 2e-7 of it; the table within the bounds below,
so the two differ by at most their sum (checked too).  The sweeps cover every finite f16 value
(what an f16 model feeds the f32 kernel), f32 values taken every 4099th bit pattern
(every exponent, sign and many mantissas), a dense grid over the table's span and the
values at, just below and just above each of the table's 65536 step bounds.

Relative error bounds, measured (see the docstring of ``_gelu_erf_table``), with a
margin of about 20%: the linear interpolation's error grows as x^2 / 2^26 in the
negative tail, on top of ~2e-7 of rounding in the three operations after the gathers.
Outputs below f32's least normal (x < -13.2) are denormals: 1e-43 absolute.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from irrun.fast import fast_kernel
from irrun.fast.gelu_table import gelu_erf_table as _gelu_erf_table
from irrun.fast.gelu_table import phi_table as _phi_table
from irrun.ir.registry import resolve
from irrun.ops.activations import gelu_erf

GELU = resolve("Gelu", "opset7")

TINY = float(np.finfo(np.float32).tiny)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _fast(attrs, x):
    return fast_kernel(GELU).run(attrs, x)


def gelu_erf_into(attrs, x):
    return fast_kernel(GELU).into(attrs, x)


def reference(x: np.ndarray) -> np.ndarray:
    v = np.asarray(x, np.float64)
    return v * 0.5 * np.asarray(_ERFC(-v / math.sqrt(2.0)), np.float64)


def bound(x: np.ndarray) -> np.ndarray:
    """The relative error allowed at ``x`` (normal outputs)."""
    x = x.astype(np.float64)
    return np.where(x >= -13.0, 2.4e-7 + 2.0e-8 * x * x, 5e-6)


def check(x: np.ndarray) -> None:
    got = _gelu_erf_table(x).astype(np.float64)
    want = reference(x)
    normal = np.abs(want) >= TINY
    rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
    worst = np.argmax(rel / bound(x[normal]))
    assert rel[worst] <= bound(x[normal])[worst], (x[normal][worst], rel[worst])
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=1e-43)


def test_every_f16_value():
    x = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    check(x[np.isfinite(x)])


def test_f32_bit_patterns():
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    check(x[np.isfinite(x) & (np.abs(x) < 40)])


def test_dense_grid_and_step_bounds():
    check(np.linspace(-16.5, 16.5, 1_000_001).astype(np.float32))
    edges = (np.arange(-32768, 32769) / 2048).astype(np.float32)
    below = np.nextafter(edges, np.float32(-np.inf))
    above = np.nextafter(edges, np.float32(np.inf))
    check(np.concatenate([edges, below, above]))


def test_the_whole_range_measured_here():
    # The bounds the docstring states, region by region, on the dense grid.
    x = np.linspace(-13, 16, 600_001).astype(np.float32)
    rel = np.abs(_gelu_erf_table(x) - reference(x)) / np.abs(reference(x))
    for lo, hi, most in ((0, 16, 2e-7), (-5, 0, 5e-7), (-8, -5, 1.3e-6), (-13, -8, 3.5e-6)):
        part = (x >= lo) & (x < hi) & (x != 0)
        assert rel[part].max() <= most, (lo, hi, rel[part].max())


def test_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -1e30, 1e30, 3.4e38, -3.4e38, 16.0,
                  -16.0, 1e-40, -1e-40, 1e-30, -1e-30, 5.5, -20.0], np.float32)  # fmt: skip
    got = _gelu_erf_table(x)
    assert got[0] == 0 and got[1] == 0
    assert got[2] == np.inf and got[3] == 0 and np.isnan(got[4])
    assert got[5] == 0 and got[6] == np.float32(1e30) and got[7] == np.float32(3.4e38)
    assert got[8] == 0 and got[9] == 16.0 and got[10] == 0 and got[16] == 0
    # Tiny inputs: x / 2, to f32's own rounding (denormals in and out).
    np.testing.assert_allclose(got[11:15], x[11:15] / 2, rtol=1e-6, atol=1e-45)
    assert got[15] == np.float32(reference(np.float32(5.5)))  # Phi(5.5) rounds to 1


@pytest.mark.parametrize("shape", [(), (0,), (1,), (3, 0, 2), (7,), (2, 40000), (3, 5, 7)])
def test_shapes_blocks_and_in_place(shape):
    rng = np.random.default_rng(len(shape))
    x = np.asarray(rng.standard_normal(shape) * 4, np.float32)
    (got,) = _fast(SimpleNamespace(approximation_mode="erf"), x)
    assert got.shape == x.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, reference(x), rtol=2e-6, atol=1e-30)
    inside = x.copy()
    assert gelu_erf_into(SimpleNamespace(approximation_mode="erf"), inside)
    np.testing.assert_array_equal(inside, got)  # the same values, written over the input


def test_into_refuses_what_it_cannot_give_alike():
    erf, tanh = SimpleNamespace(approximation_mode="erf"), SimpleNamespace(approximation_mode="tanh")
    x = np.linspace(-3, 3, 12, dtype=np.float32)
    for attrs, arr in ((tanh, x.copy()), (erf, x.astype(np.float16)), (erf, x.astype(np.float64)),
                       (erf, x.reshape(3, 4).T.copy().T)):  # fmt: skip
        before = arr.copy()
        assert not gelu_erf_into(attrs, arr)
        np.testing.assert_array_equal(arr, before)
    frozen = x.copy()
    frozen.flags.writeable = False
    assert not gelu_erf_into(erf, frozen)
    assert gelu_erf_into(SimpleNamespace(), x.copy())  # Gelu-2: erf


def test_f16_op_rounds_once():
    # Every finite f16 value through the op: computed in f32 and rounded once to f16, so
    # within one f16 ulp of the true value (half an ulp plus the f32 error).
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    x = x[np.isfinite(x)]
    (got,) = _fast(SimpleNamespace(approximation_mode="erf"), x)
    assert got.dtype == np.float16
    want = reference(x.astype(np.float32))
    with np.errstate(over="ignore"):  # the spacing at f16's largest value
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
    assert np.all(np.abs(got.astype(np.float64) - want) <= ulp)


def test_the_table_itself():
    c0, c1 = _phi_table()
    assert c0.dtype == c1.dtype == np.float32 and c0.shape == c1.shape == (65536,)
    assert c0[-1] == 1 and c1[-1] == 0  # from 16 on, Phi is exactly 1
    # The lines meet Phi at the step bounds to within the interpolation's error, which is
    # largest there: (x / 2048)^2 / 16 relative in the negative tail.
    k = np.arange(-32768, 32768, 512)
    at = _ERFC(-(k / 2048) / math.sqrt(2)).astype(np.float64) / 2
    np.testing.assert_allclose(c0[k + 32768], at, rtol=5e-6, atol=1e-44)


def _sweep(normal: bool = True) -> np.ndarray:
    """Every finite f16 value and a grid over the table's span, where the output is normal
    (or not)."""
    f16 = np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32)
    grid = np.linspace(-16.5, 16.5, 200_001).astype(np.float32)
    x = np.concatenate([f16[np.isfinite(f16)], grid])
    return x[(np.abs(reference(x)) >= TINY) == normal]


def test_the_reference_kernel_is_within_2e_7_of_the_true_value():
    x = _sweep()
    rel = np.abs(gelu_erf(x).astype(np.float64) - reference(x)) / np.abs(reference(x))
    assert rel.max() <= 2e-7, (x[np.argmax(rel)], rel.max())
    edges = gelu_erf(np.array([-0.0, 0.0, np.inf, -np.inf, np.nan, -1e30], np.float32))
    assert edges[:2].tolist() == [0.0, 0.0] and edges[2] == np.inf
    assert edges[3] == 0 and np.isnan(edges[4]) and edges[5] == 0


def test_the_table_is_within_its_bound_of_the_reference_kernel():
    """The fast kernel's stated bound: the table's error and the reference's added."""
    x = _sweep()
    (fast,) = _fast(SimpleNamespace(approximation_mode="erf"), x)
    ref = gelu_erf(x).astype(np.float64)
    rel = np.abs(fast.astype(np.float64) - ref) / np.abs(ref)
    allowed = bound(x) + 2e-7
    assert (rel <= allowed).all(), (x[np.argmax(rel / allowed)], rel.max())
    tiny = _sweep(normal=False)
    np.testing.assert_allclose(_fast(SimpleNamespace(), tiny)[0], gelu_erf(tiny), rtol=0,
                               atol=1e-43)
    assert fast_kernel(GELU).bound and not fast_kernel(GELU).exact
