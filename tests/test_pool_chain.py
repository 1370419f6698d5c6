"""Chains of same-size pools, run fused in a padded layout: bit-exact with OpenVINO."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import irrun
from irrun.executor import PoolChain

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


def _fused(m) -> bool:
    schedule = m._plan._schedule(tuple(sorted(m._output_slots.values())))
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
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        # Observed runs and runs asking for an intermediate go layer by layer, alike.
        observed = m.run({"x": x}, on_layer=lambda run: None)["y"]
        np.testing.assert_array_equal(observed.view(np.uint32), want.view(np.uint32))


def test_chain_keeps_an_intermediate_asked_for(tmp_path):
    path, _ = _save(tmp_path, (1, 2, 6, 6), ov.Type.f32, ["max", "avg", "max"], (3, 3),
                    [1, 1], [1, 1])  # fmt: skip
    m = irrun.load(path)
    x = _special((1, 2, 6, 6))
    all_values = m.run({"x": x}, intermediate=True)
    names = list(all_values)
    some = m.run({"x": x}, outputs=[names[0], "y"])
    np.testing.assert_array_equal(some[names[0]].view(np.uint32),
                                  all_values[names[0]].view(np.uint32))  # fmt: skip
    np.testing.assert_array_equal(some["y"].view(np.uint32), all_values["y"].view(np.uint32))


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
            np.testing.assert_array_equal(g.view(np.uint32), want.view(np.uint32))
