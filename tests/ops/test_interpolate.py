"""Interpolate-11's Pillow modes and Interpolate-0's area mode.

bilinear_pillow and bicubic_pillow are checked against the CPU plugin (floats, bicubic with
cube_coeff -0.5, the only value the plugin honours) and against OpenVINO's reference kernels
(``Model.evaluate``: integers, cube_coeff -0.75, axes in order), each where that kernel is
the one irrun follows (see the module docstring of irrun.ops.interpolate); the places where
the two kernels differ are pinned by deviation tests.

Tolerances: irrun sums the taps in f64 like the reference, so it matches the reference
exactly; the plugin sums in f32, so f32 results agree to 1e-5 of the output's magnitude
(a few f32 ulps over up to ~10 taps per pass, two passes).  f16 results are computed in f32
and rounded once: one f16 ulp (2e-3 relative).
"""

from __future__ import annotations

import random

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset11
from support.ov_oneop import assert_close, one_op_model, run_both, run_cpu, run_reference, run_saved

import irrun
from irrun.ir.attributes import AttrError, parse_attributes
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, resolve
from irrun.ops.interpolate import pillow_taps

F32, I64 = ELEMENT_TYPES["f32"], ELEMENT_TYPES["i64"]
PILLOW = ("bilinear_pillow", "bicubic_pillow")


def ints(values) -> ov.Node:
    return opset1.constant(np.int64(values))


def floats(values) -> ov.Node:
    return opset1.constant(np.float32(values))


def data(shape, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype in ("u8", "i8", "i32"):
        lo, hi = {"u8": (0, 256), "i8": (-128, 128), "i32": (-1000, 1000)}[dtype]
        return rng.integers(lo, hi, shape).astype({"u8": np.uint8, "i8": np.int8,
                                                   "i32": np.int32}[dtype])  # fmt: skip
    return (rng.standard_normal(shape) * 4 + 1).astype(dtype.replace("f", "float"))


def pillow(mode, target, calc="sizes", axes=None, cube=-0.5, pads=None):
    pads = pads or ([], [])

    def build(p):
        return opset11.interpolate(p, target, mode, calc, axes=axes, cube_coeff=cube,
                                   pads_begin=pads[0], pads_end=pads[1])  # fmt: skip

    return build


def fresh(tmp_path):
    """A new directory per saved model: irrun caches what it read by path."""
    fresh.count = getattr(fresh, "count", 0) + 1
    d = tmp_path / f"m{fresh.count}"
    d.mkdir()
    return d


# --------------------------------------------------------------------------- against the plugin

PLUGIN_CASES = [  # shape, sizes or scales, axes, pads
    ((2, 3, 9, 7), [4, 3], [2, 3], None), ((2, 3, 9, 7), [18, 14], [2, 3], None),
    ((2, 3, 9, 7), [13, 5], [2, 3], None), ((2, 3, 9, 7), [3, 20], [2, 3], None),
    ((2, 3, 9, 7), [1, 1], [2, 3], None), ((2, 3, 9, 7), [9, 7], [2, 3], None),
    ((2, 3, 9, 7), [9, 3], [2, 3], None), ((2, 3, 9, 7), [4, 3], [3, 2], None),
    ((2, 3, 9, 7), [5, 11], [2, 3], None), ((1, 2, 6, 5), [4, 8], [2, 3], ([0, 0, 1, 2], [0, 0, 1, 0])),
    ((1, 2, 6, 5), [1, 2, 3, 3], None, None), ((1, 2, 6, 5), [1, 3], [0, 3], None),
    ((1, 2, 6, 5), [4], [2], None), ((3, 8, 5), [2, 17], [1, 2], None), ((30, 2), [7, 2], [0, 1], None),
    ((2, 2, 3, 4, 5), [2, 9], [3, 4], None), ((2, 3, 9, 7), [0.5, 0.75], [2, 3], None),
    ((2, 3, 9, 7), [1.7, 2.0], [2, 3], None), ((2, 3, 9, 7), [0.3, 1.0], [2, 3], None),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("mode", PILLOW)
@pytest.mark.parametrize(("shape", "target", "axes", "pads"), PLUGIN_CASES, ids=str)
def test_pillow_matches_cpu(shape, target, axes, pads, mode, dtype, tmp_path):
    x = data(shape, dtype, len(target) + sum(shape))
    by_scales = isinstance(target[0], float)
    node = floats(target) if by_scales else ints(target)
    build = pillow(mode, node, "scales" if by_scales else "sizes",
                   None if axes is None else ints(axes), pads=pads)  # fmt: skip
    got, want = run_both(build, [x], tmp_path)
    tol = 1e-5 if dtype == "f32" else 2e-3
    assert_close(got, want, rtol=tol, atol=tol, scaled_atol=True, what=f"{mode} {target}")


def test_pillow_i32_matches_cpu_within_rounding(tmp_path):
    """The reference has no i32 kernel; the plugin's integer results differ from the
    reference's per-pass rounding by at most 2 (see the u8 deviation test)."""
    x = data((2, 3, 9, 7), "i32", 5)
    for mode in PILLOW:
        got, want = run_both(pillow(mode, ints([4, 13]), axes=ints([2, 3])), [x], tmp_path)
        assert got.dtype == want.dtype == np.int32
        assert np.abs(got.astype(np.int64) - want).max() <= 2


# --------------------------------------------------------------------------- against the reference

REFERENCE_CASES = [  # shape, sizes, axes
    ((2, 3, 9, 7), [4, 3]), ((2, 3, 9, 7), [18, 14]), ((2, 3, 9, 7), [13, 5]),
    ((2, 3, 9, 7), [3, 20]), ((1, 1, 9, 7), [1, 1]), ((3, 8, 5), [2, 17]),
    ((2, 3, 9, 7), [5, 11], (1, 3)),
]  # fmt: skip


@pytest.mark.parametrize("cube", [-0.75, -0.5])
@pytest.mark.parametrize("dtype", ["u8", "i8", "f32", "f16"])
@pytest.mark.parametrize("mode", PILLOW)
@pytest.mark.parametrize("case", REFERENCE_CASES, ids=str)
def test_pillow_matches_reference(case, mode, dtype, cube, tmp_path):
    """Integers are rounded after each pass, and cube_coeff is honoured, as the reference
    does: bit-exact (f16 within one ulp: the reference's intermediate is f16, irrun's f32).
    Resizing the channels (axes 1 and 3) is checked here only: the plugin reads outside
    the data for it (garbage such as 1.9e19 and NaN in its output)."""
    shape, sizes, *given = case
    x = data(shape, dtype, sum(sizes))
    axes = ints(given[0] if given else [len(shape) - 2, len(shape) - 1])
    model = one_op_model(pillow(mode, ints(sizes), axes=axes, cube=cube), [x])
    got = run_saved(model, [x], tmp_path)[0]
    want = run_reference(model, [x])[0]
    if dtype == "f16":
        assert_close(got, want, rtol=2e-3, atol=2e-3, scaled_atol=True)
    else:
        assert_close(got, want)


# --------------------------------------------------------------------------- by hand


def test_pillow_by_hand(tmp_path):
    def run(values, mode, size, cube=-0.5, dtype=np.float32):
        x = np.array(values, dtype).reshape(1, 1, 1, -1)
        build = pillow(mode, ints([1, size]), axes=ints([2, 3]), cube=cube)
        return run_saved(one_op_model(build, [x]), [x], fresh(tmp_path))[0].ravel().tolist()

    # Downscale 4 -> 2: triangles of half-width 2 centred at 1 and 3, taps at
    # -0.25, 0.25, 0.75 (x2 scale): weights 3/7, 3/7, 1/7 (0, 7, 14) and 1/7, 3/7, 3/7.
    assert run([0, 7, 14, 21], "bilinear_pillow", 2) == [5, 16]
    # Upscale 2 -> 4: centres 0.25, 0.75, 1.25, 1.75; the first sees only input 0.
    assert run([0, 8], "bilinear_pillow", 4) == [0, 2, 6, 8]
    # Upscale 2 -> 4, cubic a = -0.5, pixel centres at 0.5 and 1.5: output centre 0.75 is
    # 0.25 and 0.75 from them, w(0.25) = 1.5 * 0.25**3 - 2.5 * 0.25**2 + 1 = 0.8671875,
    # w(0.75) = 0.2265625; centre 0.25 is 0.25 and 1.25 away, w(1.25) = -0.0703125 (the
    # negative lobe overshoots below 0).
    w1, w2, w3 = 0.8671875, 0.2265625, -0.0703125
    got = run([0, 8], "bicubic_pillow", 4)
    edge = 8 * w3 / (w1 + w3)
    want = [edge, 8 * w2 / (w1 + w2), 8 * w1 / (w1 + w2), 8 - edge]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # u8: 35 / 7 = 5 exactly; (1 * 3 + 2 * 3 + 2) / 7 = 11 / 7 = 1.571 rounds to 2.
    assert run([1, 2, 2, 0], "bilinear_pillow", 2, dtype=np.uint8) == [2, 1]
    # Rounding is half away from zero: 0.5 -> 1 on u8 ([0, 1] -> 4 gives 0, 0.25, 0.75, 1).
    assert run([0, 1], "bilinear_pillow", 4, dtype=np.uint8) == [0, 0, 1, 1]
    assert run([0, -1], "bilinear_pillow", 3, dtype=np.int8) == [0, -1, -1]


def test_pillow_taps_stretch_on_downscale_only():
    _, w, count = pillow_taps("bicubic_pillow", 8, 16, -0.5)  # upscale: support 2
    assert w.shape == (16, 5) and count.max() <= 4
    _, w, count = pillow_taps("bicubic_pillow", 16, 4, -0.5)  # x4 down: support 8
    assert w.shape == (4, 17) and count.tolist() == [10, 14, 14, 10]
    np.testing.assert_allclose(w.sum(axis=1), 1.0)


def test_pillow_nan_stays_in_its_window(tmp_path):
    x = np.ones((1, 1, 6, 6), np.float32)
    x[0, 0, 0, 0] = np.nan
    got, want = run_both(pillow("bilinear_pillow", ints([2, 2]), axes=ints([2, 3])), [x],
                         tmp_path)  # fmt: skip
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got).sum() == 1


# --------------------------------------------------------------------------- deviations


def test_bicubic_pillow_cube_coeff_follows_the_reference(tmp_path):
    x = data((1, 2, 9, 7), "f32", 1)
    build = pillow("bicubic_pillow", ints([4, 13]), axes=ints([2, 3]), cube=-0.75)
    model = one_op_model(build, [x])
    got = run_saved(model, [x], tmp_path)[0]
    np.testing.assert_array_equal(got, run_reference(model, [x])[0])
    cpu = run_cpu(model, [x])[0]
    as_pillow = run_cpu(one_op_model(pillow("bicubic_pillow", ints([4, 13]), axes=ints([2, 3]),
                                            cube=-0.5), [x]), [x])[0]  # fmt: skip
    np.testing.assert_array_equal(cpu, as_pillow)  # the plugin ignores cube_coeff
    assert not np.allclose(got, cpu, atol=1e-2)


def test_pillow_integers_follow_the_reference(tmp_path):
    x = data((2, 3, 9, 7), "u8", 2)
    model = one_op_model(pillow("bilinear_pillow", ints([18, 14]), axes=ints([2, 3])), [x])
    got = run_saved(model, [x], tmp_path)[0]
    np.testing.assert_array_equal(got, run_reference(model, [x])[0])
    cpu = run_cpu(model, [x])[0]
    diff = np.abs(got.astype(int) - cpu)
    assert diff.max() <= 2  # the plugin rounds its own way


def test_pillow_axes_out_of_order_follow_the_plugin(tmp_path):
    x = data((1, 2, 9, 7), "f32", 3)
    model = one_op_model(pillow("bilinear_pillow", ints([4, 3]), axes=ints([3, 2])), [x])
    got = run_saved(model, [x], tmp_path)[0]
    assert got.shape == (1, 2, 3, 4)
    assert_close(got, run_cpu(model, [x])[0], rtol=1e-5, atol=1e-5, scaled_atol=True)
    # The same resize with the axes in order (the passes then run in the other order: the
    # f32 intermediate rounds differently), and what the reference makes of [3, 2].
    ordered = one_op_model(pillow("bilinear_pillow", ints([3, 4]), axes=ints([2, 3])), [x])
    assert_close(got, run_saved(ordered, [x], fresh(tmp_path))[0], rtol=1e-6, atol=1e-6,
                 scaled_atol=True)  # fmt: skip
    assert not np.allclose(run_reference(model, [x])[0], got)


# --------------------------------------------------------------------------- shape rules


def infer(opset: str, attrs: dict[str, str], *inputs: TensorInfo):
    op = resolve("Interpolate", opset)
    a = parse_attributes(op.attrs, attrs).values
    from types import SimpleNamespace

    return op.infer(SimpleNamespace(**a), list(inputs))


def const(values, et=I64) -> TensorInfo:
    v = np.asarray(values, et.dtype)
    return TensorInfo(v.shape, et, v)


def test_pillow_shape_rule():
    attrs = {"mode": "bicubic_pillow", "shape_calculation_mode": "sizes"}
    x = TensorInfo((DYNAMIC, 3, Interval(4, 9), 7), F32)
    got = infer("opset11", attrs, x, const([5, 2]), const([2, 3]))[0].shape
    assert got == (DYNAMIC, 3, 5, 2)
    scales = {**attrs, "shape_calculation_mode": "scales"}
    got = infer("opset16", scales, x, const([0.5, 2.0], F32), const([2, 3]))[0].shape
    assert got == (DYNAMIC, 3, Interval(2, 4), 14)
    # No axes input: every axis listed, two of them changing.
    assert infer("opset11", attrs, TensorInfo((1, 3, 8, 8), F32),
                 const([1, 3, 4, 4]))[0].shape == (1, 3, 4, 4)  # fmt: skip
    with pytest.raises(ShapeError, match=r"at most two axes, but axes \[1, 2, 3\] change 3"):
        infer("opset11", attrs, TensorInfo((1, 3, 8, 8), F32), const([2, 4, 4]), const([1, 2, 3]))
    with pytest.raises(ShapeError, match=r"axes \[-2, -1\] must not be negative"):
        infer("opset11", attrs, x, const([5, 2]), const([-2, -1]))
    # Interpolate-4 has no Pillow modes (OpenVINO refuses to build such a node).
    op4 = resolve("Interpolate", "opset4")
    with pytest.raises(AttrError, match="bilinear_pillow"):
        parse_attributes(op4.attrs, {**attrs, "mode": "bilinear_pillow"})


def test_area_is_refused_by_validate_and_load(tmp_path):
    x = data((1, 2, 8, 8), "f32", 0)

    def build(p):
        return opset1.interpolate(p, ints([4, 3]), {"axes": [2, 3], "mode": "area"})

    model = one_op_model(build, [x])
    with pytest.raises(RuntimeError, match="Only v4 and v11 interpolate"):
        run_cpu(model, [x])
    path = tmp_path / "area.xml"
    ov.save_model(model, path)
    found = [d for d in irrun.validate(path) if d.level == "error"]
    assert [d.code for d in found] == ["bad-attribute"]
    assert "mode area has no kernel in OpenVINO" in found[0].message
    with pytest.raises(irrun.IrrunError, match="mode area has no kernel in OpenVINO"):
        irrun.load(path)


# --------------------------------------------------------------------------- validate


def test_validate_names_the_layer(tmp_path):
    x = data((1, 2, 8, 8), "f32", 0)
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(pillow("bilinear_pillow", ints([4, 3]), axes=ints([2, 3])), [x]),
                  path)  # fmt: skip
    text = path.read_text()
    assert 'mode="bilinear_pillow"' in text
    path.write_text(text.replace('mode="bilinear_pillow"', 'mode="trilinear_pillow"'))
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert len(found) == 1 and "Interpolate" in found[0] and "trilinear_pillow" in found[0]
    start = text.index('type="Interpolate"')
    dim = text.index("<dim>3</dim>", text.index("<output>", start))
    path.write_text(text[:dim] + "<dim>5</dim>" + text[dim + len("<dim>3</dim>") :])
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert len(found) == 1 and "Interpolate" in found[0] and "5" in found[0]


# --------------------------------------------------------------------------- seeded random sweeps


def _draw(rng, any_axes: bool):
    rank = rng.randint(2, 5)
    shape = [rng.randint(1, 3) for _ in range(rank - 2)] + [rng.randint(1, 12) for _ in range(2)]
    if any_axes:
        axes = sorted(rng.sample(range(rank), 2))
        for axis in axes:
            shape[axis] = rng.randint(1, 12)
    else:
        axes = [rank - 2, rank - 1]
    sizes = [rng.randint(1, 3 * shape[axis] + 1) for axis in axes]
    return tuple(shape), axes, sizes, rng.choice(PILLOW)


@pytest.mark.parametrize("seed", range(12))
def test_pillow_random_against_cpu(seed, tmp_path):
    rng = random.Random(seed)
    for _ in range(4):
        shape, axes, sizes, mode = _draw(rng, any_axes=False)
        x = data(shape, "f32", seed)
        got, want = run_both(pillow(mode, ints(sizes), axes=ints(axes)), [x], fresh(tmp_path))
        assert_close(got, want, rtol=1e-5, atol=1e-5, scaled_atol=True,
                     what=f"{mode} {shape} {axes} {sizes}")  # fmt: skip


@pytest.mark.parametrize("seed", range(12))
def test_pillow_random_against_reference(seed, tmp_path):
    rng = random.Random(100 + seed)
    for _ in range(4):
        shape, axes, sizes, mode = _draw(rng, any_axes=True)
        dtype = rng.choice(("f32", "u8", "i8"))
        cube = rng.choice((-0.75, -0.5, -0.6))
        x = data(shape, dtype, seed)
        model = one_op_model(pillow(mode, ints(sizes), axes=ints(axes), cube=cube), [x])
        got = run_saved(model, [x], fresh(tmp_path))[0]
        assert_close(got, run_reference(model, [x])[0], what=f"{mode} {shape} {axes} {sizes}")


# --------------------------------------------------------------------------- element types
# Every data type the three versions declare (OpenVINO's Interpolate-4/11 list), with
# floats against the reference kernels and integers against the plugin (whose rounding
# irrun follows outside the pillow modes); every type of sizes, scales and axes; and
# validate naming the types they do not take.

from openvino import opset10  # noqa: E402
from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.interpolate import DATA_TYPES, SCALES_TYPES, SIZES_TYPES, V0_TYPES  # noqa: E402


def _typed(et, x):
    """OpenVINO ints (the plugin) or through a Convert (the reference kernels)."""
    return x.astype(ELEMENT_TYPES[et].dtype) if et in ("i64", "i32", "i8", "u8") else x


def _check(build, et, tmp_path, off=0):
    """Integers within ``off`` of the plugin (its f32 arithmetic decides near-ties)."""
    x = _typed(et, convertible(et, (1, 2, 3, 4), seed=5, low=-50, high=50))
    if x.dtype.kind in "iu":
        got, want = run_both(build, [x], tmp_path)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= off
    else:
        got, want = typed_runs(build, [x], [et], tmp_path)
        assert_typed_close(got, want)


@pytest.mark.parametrize("et", V0_TYPES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_v0_element_types(et, mode, tmp_path):
    _check(lambda p: opset1.interpolate(p, ints([5, 3]), {"axes": [2, 3], "mode": mode}), et,
           tmp_path, off=mode != "nearest")


@pytest.mark.parametrize("et", DATA_TYPES)
@pytest.mark.parametrize("mode", ["nearest", "linear_onnx", "cubic"])
def test_v4_element_types(et, mode, tmp_path):
    _check(lambda p: opset10.interpolate(p, ints([5, 3]), floats([1.5, 0.75]), mode, "sizes",
                                         axes=ints([2, 3])), et, tmp_path,
           off=mode != "nearest")  # fmt: skip


@pytest.mark.parametrize("et", DATA_TYPES)
@pytest.mark.parametrize("mode", ["nearest", "linear", "bilinear_pillow"])
def test_v11_element_types(et, mode, tmp_path):
    # The pillow modes' integers follow the reference (the plugin's are off by 1-2; the
    # reference is held above, test_pillow_integers_follow_the_reference).
    _check(lambda p: opset11.interpolate(p, ints([5, 3]), mode, "sizes", axes=ints([2, 3])), et,
           tmp_path, off={"nearest": 0, "linear": 1}.get(mode, 2))


def _const(values, et):
    return opset1.constant(np.array(values), getattr(ov.Type, et))


@pytest.mark.parametrize(("sizes", "scales", "axes"),
                         [(s, "f32", "i64") for s in SIZES_TYPES]
                         + [("i64", s, "i64") for s in SCALES_TYPES]
                         + [("i64", "f32", a) for a in SIZES_TYPES])  # fmt: skip
@pytest.mark.parametrize("calc", ["sizes", "scales"])
def test_v4_and_v11_shape_input_types(sizes, scales, axes, calc, tmp_path):
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)

    def v4(p):
        return opset10.interpolate(p, _const([6, 2], sizes), _const([2, 0.5], scales),
                                   "nearest", calc, axes=_const([2, 3], axes))  # fmt: skip

    def v11(p):
        second = _const([6, 2], sizes) if calc == "sizes" else _const([2, 0.5], scales)
        return opset11.interpolate(p, second, "nearest", calc, axes=_const([2, 3], axes))

    for build in (v4, v11):
        got, want = run_both(build, [x], tmp_path)
        assert got.shape == (1, 2, 6, 2)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("et", ["i16", "u16", "boolean", "f8e4m3", "u4"])
@pytest.mark.parametrize("version", [0, 4, 11])
def test_validate_names_a_data_type_it_does_not_take(et, version, tmp_path):
    x = np.zeros((1, 1, 2, 2), np.float32)
    builds = {
        0: lambda p: opset1.interpolate(p, ints([4, 4]), {"axes": [2, 3], "mode": "nearest"}),
        4: lambda p: opset10.interpolate(p, ints([4, 4]), floats([2, 2]), "nearest", "sizes",
                                         axes=ints([2, 3])),
        11: lambda p: opset11.interpolate(p, ints([4, 4]), "nearest", "sizes", axes=ints([2, 3])),
    }  # fmt: skip
    assert_refused(builds[version], [x], 0, et, tmp_path, f"Interpolate-v{version}")


@pytest.mark.parametrize(("version", "port", "et"),
                         [(4, 1, "i8"), (4, 2, "f64"), (4, 3, "f32"), (11, 1, "i16"),
                          (11, 1, "f64"), (11, 2, "u8"), (0, 1, "f32")])  # fmt: skip
def test_validate_names_a_shape_input_type_it_does_not_take(version, port, et, tmp_path):
    x = np.zeros((1, 1, 2, 2), np.float32)
    sizes, scales, axes = np.int64([4, 4]), np.float32([2, 2]), np.int64([2, 3])
    if version == 0:
        build, inputs = (lambda p, s: opset1.interpolate(p, s, {"axes": [2, 3],
                                                                 "mode": "nearest"})), [x, sizes]
    elif version == 4:
        build, inputs = (lambda p, s, c, a: opset10.interpolate(p, s, c, "nearest", "sizes",
                                                                axes=a)), [x, sizes, scales, axes]
    else:
        build, inputs = (lambda p, s, a: opset11.interpolate(p, s, "nearest", "sizes",
                                                             axes=a)), [x, sizes, axes]
    assert_refused(build, inputs, port, et, tmp_path, f"Interpolate-v{version}")
