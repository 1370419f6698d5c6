"""GridSample against OpenVINO: its reference kernel (``evaluate``, which runs f32 only)
bit for bit, its CPU plugin within f32 rounding over every mode, padding mode and
``align_corners`` with grids reaching well outside [-1, 1]; element types against the
plugin; a case by hand; the shape rule against OpenVINO's own; validate's findings.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.arrays import ET

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset9  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    one_op_model,
    run_cpu,
    run_reference,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

MODES = ("bilinear", "bicubic", "nearest")
PADDINGS = ("zeros", "border", "reflection")


def _build(mode, padding, align):
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    return lambda d, g: opset9.grid_sample(d, g, attrs)


def _compare(build, data, grid, tmp_path, reference=True, atol=2e-6):
    model = one_op_model(build, [data, grid])
    got = run_saved(model, [data, grid], tmp_path)[0]
    if reference:
        assert_close(got, run_reference(model, [data, grid])[0], what="reference")
    want = run_cpu(model, [data, grid])[0]
    assert_close(got, want, rtol=1e-5, atol=atol, scaled_atol=True, what="CPU plugin")
    return got


def _grid(rng, shape, reach=2.5):
    """Random points, a quarter of them on a lattice of quarters (pixel centres and edges)."""
    g = rng.uniform(-reach, reach, shape)
    lattice = np.round(g * 4) / 4
    return np.where(rng.random(shape) < 0.25, lattice, g).astype(np.float32)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_grid_sample_matches_openvino(mode, padding, align, tmp_path):
    rng = np.random.default_rng(len(mode) * 7 + len(padding) + align)
    for data_shape, out_hw in (((2, 3, 5, 7), (4, 6)), ((1, 2, 1, 1), (3, 3)),
                               ((1, 1, 1, 4), (2, 5)), ((1, 2, 6, 2), (5, 1))):  # fmt: skip
        data = rng.normal(0, 3, data_shape).astype(np.float32)
        grid = _grid(rng, (data_shape[0], *out_hw, 2))
        _compare(_build(mode, padding, align), data, grid, tmp_path)


@settings(max_examples=60, deadline=None)
@given(
    mode=st.sampled_from(MODES),
    padding=st.sampled_from(PADDINGS),
    align=st.booleans(),
    dims=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6),
                   st.integers(1, 4), st.integers(1, 4)),
    reach=st.sampled_from([1.0, 1.5, 4.0, 20.0]),
    seed=st.integers(0, 2**16),
)
def test_grid_sample_hypothesis(mode, padding, align, dims, reach, seed, tmp_path_factory):
    n, c, h, w, ho, wo = dims
    rng = np.random.default_rng(seed)
    data = rng.normal(0, 3, (n, c, h, w)).astype(np.float32)
    grid = _grid(rng, (n, ho, wo, 2), reach)
    _compare(_build(mode, padding, align), data, grid, tmp_path_factory.mktemp("gs"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("et", ["f16", "i32", "i16", "u8", "i8"])
def test_grid_sample_element_types(mode, et, tmp_path):
    """Float types within their rounding; i16/i32 truncate as the plugin does (bicubic
    sums may land on the other side of an integer: 1 apart); u8/i8: the plugin rounds
    to nearest, irrun truncates as the reference kernel does (see the module's docstring)."""
    rng = np.random.default_rng(len(et) + len(mode))
    dtype = ELEMENT_TYPES[et].dtype
    for padding in PADDINGS:
        if dtype.kind == "f":
            data = rng.normal(0, 3, (2, 3, 5, 6)).astype(dtype)
        else:
            info = np.iinfo(dtype)
            data = rng.integers(max(info.min, -200), min(info.max, 200), (2, 3, 5, 6)).astype(dtype)
        grid = _grid(rng, (2, 4, 3, 2), 1.5)
        model = one_op_model(_build(mode, padding, False), [data, grid])
        got = run_saved(model, [data, grid], tmp_path)[0]
        want = run_cpu(model, [data, grid])[0]
        if dtype.kind == "f":
            assert_close(got, want, rtol=2e-3, atol=2e-3, scaled_atol=True)
        elif mode == "nearest" or (mode == "bilinear" and et in ("i32", "i16")):
            assert_close(got, want)
        else:
            assert got.dtype == want.dtype
            assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
    # A f16 grid: its points are f16 values, read in f32.
    data = rng.normal(0, 3, (1, 2, 4, 5)).astype(np.float32)
    grid = _grid(rng, (1, 3, 3, 2), 1.5).astype(np.float16)
    _compare(_build(mode, "border", True), data, grid, tmp_path, reference=False, atol=1e-5)


def test_grid_sample_by_hand(tmp_path):
    data = np.array([[[[1, 2], [3, 4]]]], np.float32)
    # With align_corners, -1 and 1 are the corner pixels' centres and 0 the middle.
    grid = np.array([[[[0, 0], [-1, -1], [1, -1], [0.5, 1]]]], np.float32)
    got = run_saved(one_op_model(_build("bilinear", "zeros", True), [data, grid]),
                    [data, grid], tmp_path)[0]  # fmt: skip
    assert got.ravel().tolist() == [2.5, 1.0, 2.0, 3.75]
    # Without it, -1 is the outer edge: half of pixel 0 and half of the zero padding.
    grid = np.array([[[[-1, -0.5], [-0.5, -1], [1.75, -0.5]]]], np.float32)
    got = run_saved(one_op_model(_build("bilinear", "zeros", False), [data, grid]),
                    [data, grid], tmp_path)[0]  # fmt: skip
    assert got.ravel().tolist() == [0.5, 0.5, 0.0]
    # Reflection about the edges: x = 1.75 is position 2.25; taps 2 and 3 read columns 1, 0.
    got = run_saved(one_op_model(_build("bilinear", "reflection", False), [data, grid]),
                    [data, grid], tmp_path)[0]  # fmt: skip
    assert got.ravel().tolist() == [1.0, 1.0, 1.75]
    # Nearest rounds half to even: position 0.5 -> 0, 1.5 -> 2 (border: 1).
    grid = np.array([[[[0, -1], [1, -1]]]], np.float32)
    got = run_saved(one_op_model(_build("nearest", "border", False), [data, grid]),
                    [data, grid], tmp_path)[0]  # fmt: skip
    assert got.ravel().tolist() == [1.0, 2.0]


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_non_finite_and_far_points(mode, tmp_path):
    """NaN and infinite points give NaN, as in OpenVINO; points 1e20 away read the border
    (zeros: 0) as the plugin does (the reference's integer conversion overflows there)."""
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4) + 1
    grid = np.zeros((1, 1, 5, 2), np.float32)
    grid[0, 0, :, 0] = [np.nan, np.inf, -np.inf, 1e20, -1e20]
    for padding in ("zeros", "border"):
        model = one_op_model(_build(mode, padding, False), [data, grid])
        got = run_saved(model, [data, grid], tmp_path)[0]
        assert_close(got, run_cpu(model, [data, grid])[0])
    data = np.ones((1, 1, 2, 2), np.int32)
    model = one_op_model(_build(mode, "zeros", False), [data, grid])
    with pytest.raises(irrun.IrrunError, match="NaN or an infinity"):
        run_saved(model, [data, grid], tmp_path)


def test_grid_sample_shape_rule():
    rule = resolve("GridSample", "opset9")
    attrs = attrs_namespace({"mode": "bicubic", "padding_mode": "zeros", "align_corners": False})
    for data, grid in (
        ((2, 3, 5, 7), (2, 4, 6, 2)), ((DYNAMIC, 3, 5, 7), (2, DYNAMIC, 6, 2)),
        ((Interval(1, 4), 3, 5, 7), (Interval(2, 8), 4, 6, DYNAMIC)),
        (None, (2, 4, 6, 2)), ((2, 3, 5, 7), None), (None, None), ((2, 0, 5, 7), (2, 0, 3, 2)),
    ):  # fmt: skip
        want = opset9.grid_sample(opset1.parameter(to_ov_shape(data), ov.Type.f32),
                                  opset1.parameter(to_ov_shape(grid), ov.Type.f32),
                                  {"mode": "bicubic"})  # fmt: skip
        (out,) = rule.infer(attrs, [TensorInfo(data, ET["f32"]), TensorInfo(grid, ET["f32"])])
        assert out.shape == from_ov_shape(want.get_output_partial_shape(0)), (data, grid)
        assert out.element_type == ET["f32"]
    for data, grid, message in (((2, 3, 5), (2, 4, 6, 2), "data must be 4-D"),
                                ((2, 3, 5, 7), (2, 4, 6), "grid must be 4-D"),
                                ((2, 3, 5, 7), (2, 4, 6, 3), "last dim must be 2"),
                                ((2, 3, 5, 7), (3, 4, 6, 2), "same batch")):  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(attrs, [TensorInfo(data, ET["f32"]), TensorInfo(grid, ET["f32"])])
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(attrs, [TensorInfo((1, 1, 2, 2), ET["f32"]), TensorInfo((1, 1, 1, 2),
                                                                            ET["i32"])])


def test_grid_sample_validate(tmp_path):
    data, grid = np.zeros((1, 2, 3, 3), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    model = one_op_model(_build("bicubic", "border", True), [data, grid])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    assert irrun.validate(path) == []
    text = path.read_text()
    for old, new in (('mode="bicubic"', 'mode="cubic"'), ('padding_mode="border"',
                                                            'padding_mode="edge"')):  # fmt: skip
        path.write_text(text.replace(old, new))
        found = [d for d in irrun.validate(path) if d.layer is not None]
        assert [d.code for d in found] == ["bad-attribute"], found
        assert old.split("=")[0] in found[0].message
    path.write_text(re.sub(r"(<dim>2</dim>\s*</port>\s*</input>)", r"<dim>3</dim></port></input>",
                           text, count=1))  # fmt: skip
    assert any(d.level == "error" for d in irrun.validate(path))
