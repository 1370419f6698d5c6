"""The pooling kernels' fast paths (and the reference kernels) against OpenVINO's CPU
plugin, bit for bit.

The differential suite draws small shapes, where every pool fits in one chunk of
planes.  Here shapes are larger, the chunks tiny (so planes are split into many),
and the inputs full of the values that decide ties: NaN, infinities, f32's lowest,
and zeros of both signs.  Each case names the fast path it exercises.
"""

from __future__ import annotations

import numpy as np
import pytest
from support import reference_mode
from support.ov_oneop import CPU_CONFIG

import irrun
from irrun.fast import adaptive_pool as fast_adaptive_pool
from irrun.fast import avg_pool as fast_avg_pool
from irrun.fast import max_pool as fast_max_pool
from irrun.ops import adaptive_pool

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8, opset14  # noqa: E402


def _values(shape, kind: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "ties":
        x = rng.integers(-2, 3, shape).astype(np.float32)
        x[(x == 0) & (rng.random(shape) < 0.5)] = -0.0
        return x
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "relu":  # half +0.0, no -0.0: the sign fix of zero maxima is skipped
        return np.maximum(x, np.float32(0))
    if kind == "special":
        pick = rng.random(shape)
        x[pick < 0.15] = np.nan
        x[(pick >= 0.15) & (pick < 0.2)] = -np.inf
        x[(pick >= 0.2) & (pick < 0.22)] = np.finfo(np.float32).min
        x[(pick >= 0.22) & (pick < 0.3)] = -0.0
        x[(pick >= 0.3) & (pick < 0.35)] = 0.0
    return x


def _max(k, s, p=0, rounding="floor", dil=1, pe=None):
    def build(x):
        n = len(k)
        module = opset14 if rounding == "ceil_torch" else opset8
        node = module.max_pool(x, [s] * n, [dil] * n, [p] * n, [p if pe is None else pe] * n,
                               list(k), rounding, index_element_type="i64")  # fmt: skip
        return [node.output(0), node.output(1)]

    return build


def _avg(k, s, p=0, exclude_pad=True, rounding="floor"):
    def build(x):
        n = len(k)
        node = opset1.avg_pool(x, [s] * n, [p] * n, [p] * n, list(k), exclude_pad, rounding)
        return [node.output(0)]

    return build


def _adaptive(out, op="avg"):
    def build(x):
        target = opset1.constant(np.array(out, np.int64))
        if op == "avg":
            return [opset8.adaptive_avg_pool(x, target).output(0)]
        node = opset8.adaptive_max_pool(x, target, index_element_type="i32")
        return [node.output(0), node.output(1)]

    return build


CASES = {
    # MaxPool: stride-2 innermost axis (sliding window, phase copies for indices)
    "max-k3s2p1": ((3, 5, 20, 22), _max((3, 3), 2, 1)),
    "max-k2s2": ((2, 6, 18, 18), _max((2, 2), 2)),
    "max-k3s2-ceil_torch-odd": ((2, 5, 19, 21), _max((3, 3), 2, 0, "ceil_torch")),
    "max-k3s1p1-aligned": ((2, 7, 15, 17), _max((3, 3), 1, 1)),
    "max-k2x2x2-5d": ((1, 6, 8, 10, 12), _max((2, 2, 2), 2)),
    "max-k3s2-dilated": ((2, 4, 21, 23), _max((3, 3), 2, 1, dil=2)),
    "max-pads-beyond-kernel": ((2, 3, 9, 11), _max((2, 2), 3, 3)),
    "max-k5s3-ceil": ((2, 3, 17, 16), _max((5, 5), 3, 1, "ceil")),
    # AvgPool: aligned (flat interior + border boxes), strided boxes, one window per plane
    "avg-k3s1p1-aligned": ((2, 9, 14, 15), _avg((3, 3), 1, 1)),
    "avg-k3s1p1-include-pad": ((2, 9, 14, 15), _avg((3, 3), 1, 1, exclude_pad=False)),
    "avg-k5s1p2-aligned": ((1, 5, 12, 13), _avg((5, 5), 1, 2)),
    "avg-k3s2p1-boxes": ((2, 6, 17, 16), _avg((3, 3), 2, 1)),
    "avg-k3s2-ceil": ((2, 6, 17, 16), _avg((3, 3), 2, 0, rounding="ceil")),
    "avg-whole-plane": ((2, 40, 7, 7), _avg((7, 7), 1)),
    "avg-3d-aligned": ((1, 4, 6, 7, 8), _avg((3, 3, 3), 1, 1)),
    # Adaptive pools: gathered rows of the transposed planes
    "adaptive-avg-13to7": ((2, 20, 13, 13), _adaptive([7, 7])),
    "adaptive-avg-uneven": ((2, 10, 11, 17), _adaptive([4, 5])),
    "adaptive-max-13to7": ((2, 20, 13, 13), _adaptive([7, 7], "max")),
}


@pytest.fixture()
def tiny_chunks(monkeypatch):
    """Chunks of a few planes, so that every path runs over several chunks."""
    modules = (fast_max_pool, fast_avg_pool, fast_adaptive_pool)
    for module in modules:
        monkeypatch.setattr(module, "CHUNK_BYTES", 3000)
        module._plan.cache_clear()
    yield
    for module in modules:
        module._plan.cache_clear()


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


@pytest.mark.parametrize("mode", reference_mode.MODES)
@pytest.mark.parametrize("kind", ["normal", "ties", "special", "relu"])
@pytest.mark.parametrize("name", list(CASES))
def test_matches_cpu_plugin_bit_for_bit(name, kind, mode, core, tmp_path, tiny_chunks):
    shape, build = CASES[name]
    x = _values(shape, kind)
    p = opset1.parameter(list(shape), ov.Type.f32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    outs = build(p)
    for i, o in enumerate(outs):
        o.get_tensor().set_names({f"y{i}"})
    model = ov.Model(outs, [p], name)
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    want = core.compile_model(model, "CPU", CPU_CONFIG)(x)
    got = reference_mode.load(tmp_path / "m.xml", mode).run({"x": x})
    for i in range(len(outs)):
        w, g = want[i], got[f"y{i}"]
        assert g.shape == w.shape and g.dtype == w.dtype, (i, g.shape, w.shape)
        same = _bits(g) == _bits(w)
        if g.dtype.kind == "f":
            same |= np.isnan(g) & np.isnan(w)
        assert same.all(), f"output {i}: {int((~same).sum())} of {same.size} differ"


@pytest.mark.parametrize("kind", ["ties", "special", "relu"])
@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("max-")])
def test_max_values_alone_match_cpu_plugin_bit_for_bit(name, kind, core, tmp_path, tiny_chunks):
    # Without the index output the values take their own path (and their own sign fix).
    shape, build = CASES[name]
    x = _values(shape, kind, seed=1)
    p = opset1.parameter(list(shape), ov.Type.f32, name="x")
    values = build(p)[0]
    values.get_tensor().set_names({"y0"})
    model = ov.Model([values], [p], name)
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    want = core.compile_model(model, "CPU", CPU_CONFIG)(x)[0]
    got = irrun.load(tmp_path / "m.xml").run({"x": x})["y0"]
    same = (_bits(got) == _bits(want)) | (np.isnan(got) & np.isnan(want))
    assert got.shape == want.shape and same.all(), f"{int((~same).sum())} of {same.size} differ"
    if kind == "relu":
        assert not np.signbit(got[got == 0]).any()


def test_unused_index_output_is_not_computed(tmp_path, monkeypatch):
    """The executor tells MaxPool-8 which outputs a run uses; it skips the others."""
    p = opset1.parameter([1, 2, 8, 8], ov.Type.f32, name="x")
    node = opset8.max_pool(p, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], name="pool")
    node.output(0).get_tensor().set_names({"values"})
    node.output(1).get_tensor().set_names({"indices"})
    ov.save_model(ov.Model([node.output(0)], [p]), tmp_path / "m.xml")
    model = irrun.load(tmp_path / "m.xml")
    seen = []
    step = next(s for s in model._plan.steps if s.node.layer.name == "pool")
    kernel = step.kernel

    def spy(a, *xs, **kw):
        seen.append(kw.get("needed"))
        return kernel(a, *xs, **kw)

    object.__setattr__(step, "kernel", spy)
    model._plan._schedules.clear()
    x = np.arange(128, dtype=np.float32).reshape(1, 2, 8, 8)
    assert sorted(model.run({"x": x})) == ["values"]
    both = model.run({"x": x}, outputs=["values", "indices"])
    only = model.run({"x": x}, outputs=["indices"])
    assert seen == [(True, False), None, (False, True)]
    np.testing.assert_array_equal(only["indices"], both["indices"])
    assert both["indices"][0, 1, 0, 0] == 64 + 9


@pytest.mark.parametrize("mode", reference_mode.MODES)
@pytest.mark.parametrize("kind", ["normal", "ties", "special"])
@pytest.mark.parametrize("shape", [(2, 5, 6, 7), (1, 3, 4, 5, 6), (3, 4, 33)])
def test_global_adaptive_average_adds_in_row_major_order(shape, kind, mode, tiny_chunks):
    # OpenVINO's plugin turns an all-ones AdaptiveAvgPool into ReduceMean, so the
    # oracle here is the plugin's pooling order, spelled out: f32 additions from +0.0
    # in row-major order, one division.
    x = _values(shape, kind, seed=2)
    target = np.ones(len(shape) - 2, np.int64)
    if mode == "reference":
        (got,) = adaptive_pool._avg_kernel(None, x, target)
    else:
        (got,) = fast_adaptive_pool._run_avg(None, x, target)
    planes = x.reshape(shape[0] * shape[1], -1)
    want = np.empty(len(planes), np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for i, plane in enumerate(planes):
            acc = np.float32(0.0)
            for v in plane:
                acc = np.float32(acc + v)
            want[i] = acc / np.float32(plane.size)
    got = got.reshape(-1)
    same = (_bits(got) == _bits(want)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), f"{int((~same).sum())} of {same.size} differ"
