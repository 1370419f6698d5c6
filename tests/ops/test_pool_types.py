"""Element types of the pooling ops: those OpenVINO's CPU plugin runs, as it runs them.

OpenVINO's op classes check no element type; its CPU plugin compiles pools for
the types below and refuses others (f8 with indices, u1, ...).  irrun takes the
types it computes as the plugin does and refuses the rest in validate, by name,
so that a run never reaches NumPy's own message.  Every run here turns warnings
into errors: NaN, infinities and integer extremes are values, not warnings.
"""

from __future__ import annotations

import itertools
import warnings

import ml_dtypes
import numpy as np
import pytest
from support.ov_oneop import CPU_CONFIG

import irrun
import irrun.ir.registry
from irrun.ops.window import POOL_TYPES

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8, opset14, opset16  # noqa: E402
from support.pools import write_pool  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMPY = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "bf16": BF16, "i64": np.int64,
         "i32": np.int32, "i16": np.int16, "i8": np.int8, "u64": np.uint64, "u32": np.uint32,
         "u16": np.uint16, "u8": np.uint8, "boolean": np.bool_}  # fmt: skip


def _pools(n: int) -> dict:
    one, three = [1] * n, [3] * n
    const = opset1.constant(np.array([3] * n, np.int64))
    return {
        "MaxPool-1-ceil": lambda p: opset1.max_pool(p, [2] * n, one, one, three, "ceil"),
        "MaxPool-1-empty": lambda p: opset1.max_pool(p, one, [2] * n, [0] * n, one),
        "MaxPool-8": lambda p: opset8.max_pool(
            p, one, one, one, one, [2] * n, index_element_type="i32"
        ),
        "MaxPool-14-values": lambda p: [
            opset14.max_pool(p, [2] * n, one, one, one, three, "ceil_torch").output(0)
        ],
        "AvgPool-1": lambda p: opset1.avg_pool(p, one, one, one, three, True),
        "AvgPool-14-pads": lambda p: opset14.avg_pool(p, [2] * n, one, one, three, False, "ceil"),
        "AvgPool-16": lambda p: opset16.avg_pool(
            p, one, [2] * n, [2] * n, three, True, dilations=[2] * n
        ),
        "AdaptiveAvgPool-8": lambda p: opset8.adaptive_avg_pool(p, const),
        "AdaptiveMaxPool-8": lambda p: opset8.adaptive_max_pool(p, const, index_element_type="i32"),
    }


def _values(name: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(NUMPY[name])
    if name == "boolean":
        return rng.random(shape) < 0.5
    if dtype.kind == "f" or dtype == BF16:
        x = rng.standard_normal(shape) * 100
        pick = rng.random(shape)
        x[pick < 0.06] = np.nan
        x[(pick >= 0.06) & (pick < 0.1)] = np.inf
        x[(pick >= 0.1) & (pick < 0.14)] = -np.inf
        x[(pick >= 0.14) & (pick < 0.2)] = -0.0
        return x.astype(np.float32).astype(dtype)
    # The plugin's max pool goes through f32 (exact up to 2**24) and runs 16-bit and
    # unsigned 32/64-bit integers as i32; u32 here includes values past 2**31.
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -(2**24)), min(info.max, 2**24), shape, endpoint=True)
    if name == "u32":
        x[rng.random(shape) < 0.2] = 2**32 - 1  # -1 in i32
    extremes = rng.random(shape) < 0.1
    # i64 too runs as i32 in the plugin; irrun keeps it (docs/semantics.md): i32's range only.
    x[extremes] = rng.choice([max(info.min, -(2**31)), min(info.max, 2**24)], int(extremes.sum()))
    return x.astype(dtype)


def _same_bits(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    if got.dtype.kind in "fV":  # NaNs agree whatever their payload
        g32, w32 = got.astype(np.float32), want.astype(np.float32)
        both_nan = np.isnan(g32) & np.isnan(w32)
    else:
        both_nan = np.zeros(got.shape, bool)
    width = f"u{got.dtype.itemsize}"
    return (got.view(width) == want.view(width)) | both_nan


# f64: the plugin computes in f32, irrun keeps f64 (docs/semantics.md, "deliberately differs").
COMPARED = [t for t in POOL_TYPES if t != "f64"]


@pytest.mark.parametrize("shape", [(2, 3, 11), (1, 4, 7, 9)], ids=["1d", "2d"])
@pytest.mark.parametrize("op", list(_pools(1)))
@pytest.mark.parametrize("et", COMPARED)
def test_every_type_runs_as_the_cpu_plugin_runs_it(core, tmp_path, et, op, shape):
    param = opset1.parameter(list(shape), getattr(ov.Type, et), name="x")
    node = _pools(len(shape) - 2)[op](param)
    outputs = node if isinstance(node, list) else node.outputs()
    model = ov.Model(outputs, [param])
    try:
        compiled = core.compile_model(model, "CPU", CPU_CONFIG)
    except RuntimeError:
        # The plugin's reference MaxPool-8 (used for indices) has no bf16 kernel.
        assert (et, op) == ("bf16", "MaxPool-8")
        pytest.skip("the CPU plugin does not compile MaxPool-8 indices for bf16")
    x = _values(et, shape, seed=len(op) + len(et))
    results = compiled(x)
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = list(irrun.load(tmp_path / "m.xml").run({"x": x}).values())
    for g, out in zip(got, compiled.outputs, strict=True):
        want = results[out]
        if et == "bf16" and want.dtype == np.float16:  # OpenVINO's Python hands bf16 as f16
            want = want.view(np.uint16).view(BF16)
        want = want.astype(g.dtype, copy=False)
        same = _same_bits(g, want)
        bad = np.argwhere(~same)[:3]
        assert same.all(), [(tuple(i), g[tuple(i)], want[tuple(i)]) for i in bad]


def test_bf16_empty_window_is_bf16s_lowest_not_minus_inf(tmp_path):
    # The plugin narrows f32's lowest value by dropping its low half: -3.3895e38.
    attrs = {"kernel": 1, "strides": 1, "pads_begin": 1, "pads_end": 0}
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset1", attrs, [1, 1, 2], et="bf16",
                      out_shape=[1, 1, 3])  # fmt: skip
    x = np.array([[[1.5, -2.0]]], BF16)
    got = irrun.load(path).run({"x": x})["r0"]
    assert got.dtype == BF16
    assert got.astype(np.float32).tolist() == [[[float(ml_dtypes.finfo(BF16).min), 1.5, -2.0]]]


@pytest.mark.parametrize(("et", "lowest"), [("i16", 0), ("u16", 0), ("u32", 2**31),
                                            ("u64", 2**64 - 2**31), ("boolean", False)])  # fmt: skip
def test_an_empty_max_window_is_i32s_minimum_narrowed(tmp_path, et, lowest):
    # i16, u16, u32 and u64 run as i32 in the plugin; its start value wraps on the way back.
    attrs = {"kernel": 1, "strides": 1, "pads_begin": 1, "pads_end": 0}
    path = write_pool(tmp_path / "m.xml", "MaxPool", "opset1", attrs, [1, 1, 2], et=et,
                      out_shape=[1, 1, 3])  # fmt: skip
    x = np.array([[[1, 1]]], NUMPY[et])
    assert irrun.load(path).run({"x": x})["r0"].tolist() == [[[lowest, 1, 1]]]


REFUSED = ["f8e4m3", "f8e5m2", "u4", "i4", "u1"]
OPS = [("MaxPool", "opset1", {"kernel": 1, "strides": 1}, 1),
       ("MaxPool", "opset8", {"kernel": 1, "strides": 1}, 2),
       ("MaxPool", "opset14", {"kernel": 1, "strides": 1}, 2),
       ("AvgPool", "opset1", {"kernel": 1, "strides": 1}, 1),
       ("AvgPool", "opset14", {"kernel": 1, "strides": 1}, 1),
       ("AvgPool", "opset16", {"kernel": 1, "strides": 1}, 1),
       ("AdaptiveAvgPool", "opset8", {}, 1),
       ("AdaptiveMaxPool", "opset8", {}, 2)]  # fmt: skip


@pytest.mark.parametrize("et", REFUSED)
@pytest.mark.parametrize(("op", "opset", "attrs", "outputs"), OPS,
                         ids=[f"{o}-{v}" for o, v, _, _ in OPS])  # fmt: skip
def test_other_types_are_refused_by_validate_and_load(tmp_path, et, op, opset, attrs, outputs):
    target = [4] if op.startswith("Adaptive") else None
    path = write_pool(tmp_path / "m.xml", op, opset, attrs, [1, 2, 4], et=et, outputs=outputs,
                      out_shape=[1, 2, 4], target=target)  # fmt: skip
    errors = [f for f in irrun.validate(path) if f.level == "error"]
    assert [f.code for f in errors] == ["shape-error"], errors
    message = errors[0].message
    assert f"input 0 is {et}" in message and "f32, f16, bf16" in message and "boolean" in message
    with pytest.raises(irrun.IrrunError, match=f"input 0 is {et}"):
        irrun.load(path)


# ---------------------------------------------------------------------- NaN and infinities


@pytest.mark.parametrize("et", ["f32", "f16", "f64", "bf16"])
@pytest.mark.parametrize(("op", "opset", "attrs", "outputs"), OPS,
                         ids=[f"{o}-{v}" for o, v, _, _ in OPS])  # fmt: skip
@pytest.mark.parametrize("kernel", [3, 2**31], ids=["small", "huge"])
def test_special_values_never_warn(tmp_path, et, op, opset, attrs, outputs, kernel):
    attrs = dict(attrs)
    size = 40
    out = size
    if attrs and kernel == 3:
        attrs.update(kernel=3, pads_begin=2, pads_end=2, rounding_type="ceil")
        out = size + 2
    elif attrs:  # windows far past the input, through the clipped-windows engine
        attrs.update(kernel=kernel, auto_pad="same_upper", rounding_type="ceil")
    if op == "AvgPool":
        attrs["exclude-pad"] = "false"
    target = [3] if op.startswith("Adaptive") else None
    path = write_pool(tmp_path / "m.xml", op, opset, attrs, [2, 3, size], et=et,
                      outputs=outputs, out_shape=[2, 3, 3 if target else out],
                      target=target)  # fmt: skip
    x = np.random.default_rng(5).standard_normal((2, 3, size)) * 1e38
    x[0, 0] = np.nan
    x[0, 1, ::2] = np.inf
    x[0, 2, 1::2] = -np.inf
    x[1, 0, ::3] = np.nan
    with np.errstate(over="ignore"):  # 1e38 is inf in f16, on purpose
        x = x.astype(np.float32).astype(NUMPY[et]) if et != "f64" else x
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        irrun.load(path).run({"x": x})


@pytest.mark.parametrize("et", ["i8", "u8", "i16", "i32", "u32", "i64", "u64"])
@pytest.mark.parametrize(("op", "opset", "attrs", "outputs"), OPS,
                         ids=[f"{o}-{v}" for o, v, _, _ in OPS])  # fmt: skip
def test_integer_extremes_never_warn(tmp_path, et, op, opset, attrs, outputs):
    attrs = dict(attrs)
    if attrs:
        attrs.update(kernel=3, pads_begin=2, pads_end=2)
    target = [2] if op.startswith("Adaptive") else None
    path = write_pool(tmp_path / "m.xml", op, opset, attrs, [1, 2, 6], et=et, outputs=outputs,
                      out_shape=[1, 2, 2 if target else 8], target=target)  # fmt: skip
    info = np.iinfo(NUMPY[et])
    x = np.array([[[info.max] * 6, [info.min, info.max] * 3]], NUMPY[et])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        irrun.load(path).run({"x": x})


# ---------------------------------------------------------------------- integer AdaptiveAvgPool

INTEGERS = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]


@pytest.mark.parametrize("spatial", [(1,), (2,), (5,), (7,), (12,), (4, 6), (3, 4, 5)],
                         ids=lambda s: "x".join(map(str, s)))  # fmt: skip
@pytest.mark.parametrize("et", INTEGERS)
def test_integer_adaptive_average_at_every_output_size(core, et, spatial):
    """Every output size from 1 to the input's against the plugin.

    A constant all-ones output_shape makes the plugin's pool a ReduceMean (truncating,
    8-bit sums saturating); any other size keeps its pooling kernel (half to even).
    """
    info = np.iinfo(NUMPY[et])
    # i8 sums of 2-D and 3-D planes must stay in i8's range: past it the plugin's
    # ReduceMean adds in an order of its vector code (see adaptive_pool._integer_mean).
    reach = 3 if et == "i8" and len(spatial) > 1 else 120
    rng = np.random.default_rng(len(spatial) * 31 + len(et))
    x = rng.integers(max(info.min, -reach), min(info.max, reach), (2, 3, *spatial),
                     endpoint=True).astype(NUMPY[et])  # fmt: skip
    param = opset1.parameter(list(x.shape), getattr(ov.Type, et))
    sizes = opset1.parameter([len(spatial)], ov.Type.i64)
    pooled = ov.Model([opset8.adaptive_avg_pool(param, sizes).output(0)], [param, sizes])
    dynamic = core.compile_model(pooled, "CPU", CPU_CONFIG)
    ones = opset1.constant(np.ones(len(spatial), np.int64))
    reduced = ov.Model([opset8.adaptive_avg_pool(param, ones).output(0)], [param])
    constant = core.compile_model(reduced, "CPU", CPU_CONFIG)
    kernel = irrun.ir.registry.resolve("AdaptiveAvgPool", "opset8").kernel
    for out in itertools.product(*(range(1, s + 1) for s in spatial)):
        if all(o == 1 for o in out):
            want = constant(x)[constant.outputs[0]]
        else:
            want = dynamic([x, np.array(out, np.int64)])[dynamic.outputs[0]]
        (got,) = kernel(None, x, np.array(out, np.int64))
        assert got.dtype == x.dtype and np.array_equal(got, want.astype(got.dtype)), out


@pytest.mark.parametrize(("et", "values", "mean"), [
    ("u8", [200, 200], 127),           # the sum saturates at 255
    ("i8", [-100, -100], -64),         # ... at -128
    ("i8", [127, 127, -128, -128], 0), # in f32, not saturating on the way
    ("i32", [-1, -2], -1),             # truncated toward zero
    ("i32", [2**30, 2**30], -(2**30)), # 2**31 does not fit: i32's minimum, halved
    ("i16", [30000, 30000], 30000),    # as i32: no 16-bit saturation
    ("u32", [2**31, 2**31], 3 * 2**30),  # as i32: -2**31 each, wrapping back
])  # fmt: skip
def test_integer_global_average_is_the_plugins_reduce_mean(tmp_path, et, values, mean):
    path = write_pool(tmp_path / "m.xml", "AdaptiveAvgPool", "opset8", {}, [1, 1, len(values)],
                      et=et, out_shape=[1, 1, 1], target=[1])  # fmt: skip
    x = np.array([[values]], NUMPY[et])
    assert irrun.load(path).run({"x": x})["r0"].tolist() == [[[mean]]]


def test_a_boolean_global_average_is_refused_as_the_plugin_refuses_it(tmp_path):
    path = write_pool(tmp_path / "m.xml", "AdaptiveAvgPool", "opset8", {}, [1, 2, 4],
                      et="boolean", out_shape=[1, 2, 1], target=[1])  # fmt: skip
    errors = [f for f in irrun.validate(path) if f.level == "error"]
    assert [f.code for f in errors] == ["shape-error"] and "ReduceMean" in errors[0].message
    path = write_pool(tmp_path / "m.xml", "AdaptiveAvgPool", "opset8", {}, [1, 2, 4],
                      et="boolean", out_shape=[1, 2, 2], target=[2])  # fmt: skip
    x = np.array([[[True, True, False, False], [True, False, True, True]]])
    # Pooled as u8 and rounded half to even: 1, 0 and 0.5 -> 0, 1.
    assert irrun.load(path).run({"x": x})["r0"].tolist() == [[[True, False], [False, True]]]


@pytest.mark.parametrize("shape", [(1, 1, 32, 32), (1, 1, 7, 9, 11), (1, 1, 500)])
def test_a_single_plane_global_average_adds_in_order(core, tmp_path, shape):
    # NumPy sums a single column pairwise; the plugin adds one element after another.
    n = len(shape) - 2
    param = opset1.parameter(list(shape), ov.Type.f32, name="x")
    node = opset1.avg_pool(param, [1] * n, [0] * n, [0] * n, list(shape[2:]), True)
    model = ov.Model(node.outputs(), [param])
    x = (np.random.default_rng(7).standard_normal(shape) * 1000).astype(np.float32)
    compiled = core.compile_model(model, "CPU", CPU_CONFIG)
    want = compiled(x)[compiled.outputs[0]]
    ov.save_model(model, tmp_path / "m.xml", compress_to_fp16=False)
    (got,) = irrun.load(tmp_path / "m.xml").run({"x": x}).values()
    running = np.cumsum(x.reshape(-1), dtype=np.float32)[-1] / np.float32(x.size)
    assert got.reshape(-1).tolist() == want.reshape(-1).tolist() == [running]
