"""Chains of same-size pools, run fused in a padded layout: bit-exact with OpenVINO."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
from irrun.core.passes.pool_chains import PoolChain
from irrun.fast import pool_chain
from irrun.ops.avg_pool import avg_pool
from irrun.ops.max_pool import max_pool

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op8 = pytest.importorskip("openvino.opset8")


def _chain(x, kinds, kernel, pb, pe, exclude_pad=True):
    node = x
    for kind in kinds:
        if kind == "max":
            node = op8.max_pool(node, [1, 1], [1, 1], pb, pe, kernel).output(0)
        elif kind == "max1":
            node = op1.max_pool(node, [1, 1], pb, pe, kernel).output(0)
        else:
            node = op1.avg_pool(node, [1, 1], pb, pe, kernel, exclude_pad=exclude_pad).output(0)
    return node


def _save(tmp_path, shape, dtype, *args, **kwargs):
    x = op1.parameter(list(shape), dtype, name="x")
    x.output(0).get_tensor().set_names({"x"})
    y = _chain(x, *args, **kwargs)
    y.get_tensor().set_names({"y"})
    model = ov.Model([y], [x], "chain")
    path = tmp_path / "chain.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    compiled = ov.Core().compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    return path, compiled


def _special(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    picks = rng.choice(flat.size, size=flat.size // 6, replace=False)
    values = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 3e38, -3e38, 1e-45, -1e-45],
                      np.float32)  # fmt: skip
    flat[picks] = values[rng.integers(0, len(values), picks.size)]
    x[0, 0] = -0.0  # a plane of -0.0 only
    x[0, -1, :2] = np.nan
    return x


def _assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, except that any NaN stands for any other: which NaN a sum of two
    returns is the CPU's pick of an operand, which NumPy's loops (and the plugin's)
    make as they please, and NaN's sign and payload are no part of OpenVINO's results."""
    both = np.isnan(got) & np.isnan(want)
    np.testing.assert_array_equal(np.where(both, 0, got.view(np.uint32)),
                                  np.where(both, 0, want.view(np.uint32)))  # fmt: skip


def _fused(m) -> bool:
    schedule = m._plan.schedule(tuple(sorted(m._output_slots.values())))
    return any(isinstance(step.kernel, PoolChain) for step, _ in schedule)


CASES = [
    (["max", "avg"] * 4, (3, 3), [1, 1], [1, 1], True),
    (["avg", "max", "max1", "avg"], (3, 3), [1, 1], [1, 1], True),
    (["avg", "max", "avg"], (3, 3), [1, 1], [1, 1], False),
    (["max", "avg", "avg"], (5, 5), [2, 2], [2, 2], True),
    (["avg", "max", "avg"], (2, 2), [1, 0], [0, 1], True),
    (["max", "avg", "max"], (3, 1), [1, 0], [1, 0], False),
]


@pytest.mark.parametrize("kinds,kernel,pb,pe,exclude_pad", CASES)
@pytest.mark.parametrize("shape", [(1, 5, 9, 7), (2, 3, 6, 11)])
def test_chain_is_bit_exact(tmp_path, kinds, kernel, pb, pe, exclude_pad, shape):
    path, compiled = _save(tmp_path, shape, ov.Type.f32, kinds, kernel, pb, pe, exclude_pad)
    m = irrun.load(path)
    assert _fused(m)
    for seed in range(3):
        x = _special(shape, seed) if seed else np.random.default_rng(9).standard_normal(
            shape).astype(np.float32)  # fmt: skip
        want = next(iter(compiled(x).values()))
        got = m.run({"x": x})["y"]
        assert got.shape == want.shape and got.flags.c_contiguous
        _assert_same(got, want)
        # Observed runs and runs asking for an intermediate go layer by layer, alike.
        observed = m.run({"x": x}, on_layer=lambda run: None)["y"]
        _assert_same(observed, want)


@pytest.mark.parametrize("exclude_pad", [True, False])
def test_chain_averages_that_underflow_to_negative_zero(tmp_path, exclude_pad):
    # A tiny negative sum divided by the count rounds to -0.0, which no input holds;
    # the max pool after it must then give zero maxima the sign of their first zero.
    shape = (1, 4, 7, 8)
    path, compiled = _save(tmp_path, shape, ov.Type.f32, ["avg", "max", "avg", "max"],
                           (3, 3), [1, 1], [1, 1], exclude_pad)  # fmt: skip
    m = irrun.load(path)
    assert _fused(m)
    tiny = np.array([-1e-45, -2e-45, -4e-45, 1e-45, 0.0], np.float32)
    for seed in range(4):
        x = np.random.default_rng(seed).choice(tiny, shape)
        want = next(iter(compiled(x).values()))
        assert np.signbit(want[want == 0]).any() and not np.signbit(x[x == 0]).any()
        got = m.run({"x": x})["y"]
        _assert_same(got, want)


def test_chain_keeps_an_intermediate_asked_for(tmp_path):
    path, _ = _save(tmp_path, (1, 2, 6, 6), ov.Type.f32, ["max", "avg", "max"], (3, 3),
                    [1, 1], [1, 1])  # fmt: skip
    m = irrun.load(path)
    x = _special((1, 2, 6, 6))
    all_values = m.run({"x": x}, intermediate=True)
    names = list(all_values)
    some = m.run({"x": x}, outputs=[names[0], "y"])
    _assert_same(some[names[0]], all_values[names[0]])
    _assert_same(some["y"], all_values["y"])


def test_chain_of_other_types_goes_layer_by_layer(tmp_path):
    path, _ = _save(tmp_path, (1, 3, 5, 5), ov.Type.f16, ["max", "avg", "max"], (3, 3),
                           [1, 1], [1, 1])  # fmt: skip
    m = irrun.load(path)
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float16)
    want = m.run({"x": x}, on_layer=lambda run: None)["y"]
    got = m.run({"x": x})["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def test_chain_runs_at_once_in_threads(tmp_path):
    # The plan keeps a buffer between runs: runs at the same time must not share it.
    shape = (2, 8, 20, 20)
    path, compiled = _save(tmp_path, shape, ov.Type.f32, ["max", "avg"] * 3, (3, 3),
                           [1, 1], [1, 1])  # fmt: skip
    m = irrun.load(path)
    xs = [np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
          for seed in range(8)]  # fmt: skip
    wants = [next(iter(compiled(x).values())) for x in xs]
    with ThreadPoolExecutor(4) as pool:
        gots = list(pool.map(lambda x: [m.run({"x": x})["y"] for _ in range(20)], xs))
    for got, want in zip(gots, wants, strict=True):
        for g in got:
            _assert_same(g, want)


@st.composite
def _chains(draw):
    kh, kw = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    pbh, pbw = draw(st.integers(0, kh - 1)), draw(st.integers(0, kw - 1))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 9)),
             draw(st.integers(1, 9)))  # fmt: skip
    layers = draw(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=5))
    return shape, (kh, kw), (pbh, pbw), (kh - 1 - pbh, kw - 1 - pbw), layers


@settings(max_examples=80, deadline=None)
@given(_chains(), st.integers(0, 2**32 - 1), st.sampled_from([1e-40, 1.0, 1e37]),
       st.integers(0, 3))  # fmt: skip
def test_chain_matches_the_layer_kernels(case, seed, scale, planes_per_chunk):
    # The layers' reference kernels are checked against OpenVINO elsewhere; the chain must
    # agree with them bit for bit, in chunks or not, and again when its kept buffer is reused.
    shape, kernel, pb, pe, kinds = case
    with np.errstate(over="ignore"):  # 3e38 * 1e37 is inf, one more special value
        x = _special(shape, seed) * np.float32(scale)
    plane = (shape[2] + max(pb[0], pe[0])) * (shape[3] + max(pb[1], pe[1])) * 4
    chunk = planes_per_chunk * plane or pool_chain.CHUNK_BYTES
    layers = tuple(pool_chain.Layer(is_max, exclude) for is_max, exclude in kinds)
    with mock.patch.object(pool_chain, "CHUNK_BYTES", chunk), np.errstate(all="ignore"):
        plan = pool_chain.ChainPlan(shape, pool_chain.Geometry(kernel, pb, pe), layers)
        got = [plan.run(x), plan.run(x)]
        want = x
        for layer in layers:
            a = SimpleNamespace(kernel=kernel, strides=(1, 1), pads_begin=pb, pads_end=pe,
                                dilations=(1, 1), rounding_type="floor", auto_pad="explicit",
                                exclude_pad=layer.exclude_pad)  # fmt: skip
            want = max_pool(want, a)[0] if layer.max else avg_pool(want, a)
    for g in got:
        _assert_same(g, want)


@pytest.mark.parametrize("kernel,pb,pe", [((3, 3), (1, 1), (1, 1)), ((5, 5), (2, 2), (2, 2)),
                                          ((2, 2), (1, 0), (0, 1)), ((3, 1), (1, 0), (1, 0))])
@pytest.mark.parametrize("shape", [(1, 64, 56, 56), (2, 3, 6, 11)])
def test_chain_buffers_are_aligned_and_half_a_page_apart(kernel, pb, pe, shape):
    # The speed of every call depends on it (see pool_chain.PHASES), nothing else does.
    layers = (pool_chain.Layer(True), pool_chain.Layer(False))
    plan = pool_chain.ChainPlan(shape, pool_chain.Geometry(kernel, pb, pe), layers)
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    seen = []
    real = pool_chain.ChainPlan._run_chunk

    def spy(self, xc, bufs, *rest):
        for b in bufs:
            views = pool_chain._Views(self, b, xc.shape[0])
            seen.append((views.out.ctypes.data % 4096, views.rows.ctypes.data % 32))
        return real(self, xc, bufs, *rest)

    with mock.patch.object(pool_chain.ChainPlan, "_run_chunk", spy):
        plan.run(x)
        plan.run(x)  # with the buffer kept from the first run
    assert sorted(seen[:2]) == sorted(seen[2:]) == [(0, 0), (2048, 0)]


def _chain_step(m) -> PoolChain:
    schedule = m._plan.schedule(tuple(sorted(m._output_slots.values())))
    return next(step.kernel for step, _ in schedule if isinstance(step.kernel, PoolChain))


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(
        (a.view(np.uint32) == b.view(np.uint32)).all())


@pytest.mark.parametrize("copies", [True, False])
@pytest.mark.parametrize("planes_per_chunk", [0, 1, 4])
def test_observed_parts_are_the_layers_outputs(tmp_path, copies, planes_per_chunk):
    # An observed run of a fused chain tells of each layer as the layers' own kernels
    # (the fast ones a default run takes, and the reference ones) compute it, bit for
    # bit, and its own output is the plain run's.
    shape = (2, 3, 7, 9)
    kinds = ["max", "avg", "max1", "avg", "max"]
    path, _ = _save(tmp_path, shape, ov.Type.f32, kinds, (3, 3), [1, 1], [1, 1])
    fused = _chain_step(irrun.load(path))
    plane = (shape[2] + 1) * (shape[3] + 1) * 4
    chunk = planes_per_chunk * plane or pool_chain.CHUNK_BYTES
    with mock.patch.object(pool_chain, "CHUNK_BYTES", chunk):
        chain = PoolChain(list(fused.parts), fused.geometry, fused.layers)
        x = _special(shape, seed=3)
        chunked = chain._plan(x).per_chunk < chain._plan(x).planes
        assert chunked == (planes_per_chunk in (1, 4))
        seen = []

        def tap(step, args, outputs, seconds):
            # Without copies the arrays are good while tap runs: kept as they are now.
            seen.append((step, [np.array(a) for a in args],
                         [None if o is None else np.array(o) for o in outputs], seconds))

        observed = chain.observed((x,), tap, copies)
        plain = chain(None, x)
    assert len(observed) == len(plain) == 2 and observed[1] is None and plain[1] is None
    assert _bits_equal(observed[0], plain[0])
    assert [s for s, _, _, _ in seen] == list(fused.parts)
    assert all(seconds >= 0 for _, _, _, seconds in seen)
    want = x
    for step, args, outputs, _ in seen:
        assert len(args) == 1 and len(outputs) == len(step.outputs)
        assert all(o is None for o in outputs[1:])  # MaxPool-8's indices: not needed
        kw = {} if step.needed is None else {"needed": step.needed}
        fast = step.kernel(step.attrs, want, **kw)[0]
        reference = step.node.op.kernel(step.attrs, want)[0]
        assert _bits_equal(fast, reference)
        if copies:
            assert _bits_equal(args[0], want)
        else:  # a layer may have overwritten its input in the buffer
            assert args[0].shape == want.shape and args[0].dtype == want.dtype
        if copies or not chunked:
            assert _bits_equal(outputs[0], reference)
        else:  # only shapes and types: no layer's whole output ever exists
            assert outputs[0].shape == reference.shape and outputs[0].dtype == reference.dtype
        want = reference
    assert _bits_equal(plain[0], want)


def test_observed_copies_stay_valid(tmp_path):
    shape = (1, 2, 6, 6)
    path, _ = _save(tmp_path, shape, ov.Type.f32, ["max", "avg", "max"], (3, 3), [1, 1], [1, 1])
    chain = _chain_step(irrun.load(path))
    kept = []
    first = _special(shape, seed=1)
    chain.observed((first,), lambda step, args, outs, s: kept.append((args, outs)), True)
    snapshot = [(np.array(a[0]), np.array(o[0])) for a, o in kept]
    chain(None, _special(shape, seed=2))  # the chain's buffers hold other values now
    chain.observed((_special(shape, seed=3),), lambda *told: None, True)
    for (args, outs), (a, o) in zip(kept, snapshot, strict=True):
        assert _bits_equal(args[0], a) and _bits_equal(outs[0], o)
