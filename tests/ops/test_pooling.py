"""Differential tests: irrun against OpenVINO's CPU plugin, in-process.

Every configuration is a small model (one pooling op, or a chain of 2-4) built
with OpenVINO's Python opset API.  The model is saved as IR and run by irrun
(in the default mode, and again with its reference kernels only), and the same
in-memory model is compiled for the CPU plugin with f32 inference
precision; both get the same seeded input and every output is compared by
tensor name.  Expected values always come from OpenVINO, never from irrun.

Configurations are drawn from a seeded generator.  OpenVINO itself decides
which are valid: a layer that OpenVINO's shape inference rejects (dilated
kernel larger than the padded input, AvgPool with exclude-pad and a kernel not
larger than a pad, ...) is simply drawn again.

Comparison rules (see /work/shared/notes/openvino-semantics.md):

* indices and max values: exactly equal, bit for bit (so -0.0 vs 0.0 counts),
  and the index dtype must be the configured one;
* f32 averages: bit-exact, since both sides accumulate taps in kernel order in
  f32 and divide once; the exception is an AdaptiveAvgPool whose output is all
  ones, which the CPU plugin rewrites to ReduceMean (rtol 1e-6);
* f16 averages: within one f16 ulp;
* f64: the CPU plugin runs f64 as f32, so inputs are f32-representable and
  averages are compared with rtol 1e-6 (atol 1e-6 for sums that cancel);
* integers: exact; the CPU averages in f32 and rounds half to even.

Known CPU-plugin behaviours that are masked or avoided here, with the reason:

* Empty AvgPool windows (count 0: ceil rounding and no counted padding): irrun
  gives 0/0 = NaN, the CPU divides 0 by a product of per-axis counts that go
  negative for windows starting past the end, so NaN, -0.0 or +0.0.  Those
  positions, found from the window geometry, need NaN from irrun and NaN or a
  zero from the CPU.  Such a layer is always the last one (downstream the two
  would diverge further).  Integer outputs give 0 on both sides.
* The CPU runs i64 as i32 (values wrap), so i64 inputs stay small.
* The CPU converts f64 inputs to f32 saturating: +-inf become +-FLT_MAX and
  NaN becomes an arbitrary value, so f64 inputs are finite.
* The CPU keeps f32 between layers of an f16, f64 or integer model instead of
  rounding to the model's type.  In those chains only the last layer may
  average, and only the last MaxPool may have windows without any element
  (f32's lowest in the intermediate, the type's own lowest in irrun: -inf for
  f16); f16 chains get no NaN / inf inputs, which also yield that lowest.
* AdaptiveAvgPool to all ones becomes ReduceMean: inexact for floats (rtol,
  last layer only, and not after an empty MaxPool window, whose f32 lowest
  overflows to -inf or not depending on the summation order), truncating and,
  for 8-bit, saturating the sum for integers (not generated).  AdaptiveMaxPool
  to all ones without its indices used becomes ReduceMax, whose NaN handling
  differs (not generated: indices are used).
* The CPU refuses i64 indices for AdaptiveMaxPool: its copy of the model uses
  i32 indices, irrun's copy the configured type (values must still match).
* Integer AvgPool arithmetic depends on the kernel the CPU picks (see
  ``expectations``): one step of difference is allowed where it picked the
  kind of kernel irrun does not follow.  Many i32/i64 AvgPool geometries have
  no CPU kernel at all; the CPU then runs the same model on the input converted
  to f32, rounding every average half to even and converting back, which is
  what its f32 kernel does for the integer models it does accept.  Those
  configurations never have empty windows (the stand-in converts NaN its own way).
* MaxPool-8/14 with same_* pads and dynamic spatial dims uses wrong pads on
  the CPU; all models here have static shapes.
"""

from __future__ import annotations

import os
import random
from typing import Any

import numpy as np
import pytest
from support import reference_mode

ov = pytest.importorskip("openvino")
from openvino import opset1, opset5, opset8, opset14, opset16  # noqa: E402
from support.ov_oneop import CPU_CONFIG  # noqa: E402

OPS = (
    ("MaxPool", 1),
    ("MaxPool", 8),
    ("MaxPool", 14),
    ("AvgPool", 1),
    ("AvgPool", 14),
    ("AvgPool", 16),
    ("AdaptiveAvgPool", 8),
    ("AdaptiveMaxPool", 8),
)
AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
DTYPES = ("f32", "f16", "f64", "i32", "i64", "i8", "u8")
FLOATS = ("f32", "f16", "f64")
NUMPY_DTYPES = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64, "i32": np.int32,
    "i64": np.int64, "i8": np.int8, "u8": np.uint8,
}  # fmt: skip
# Output elements per layer: keeps the whole file well inside its time budget.
MAX_ELEMENTS = 6000


def _ov_type(name: str):
    return getattr(ov.Type, name)


def _has_dilations(layer: dict[str, Any]) -> bool:
    return (layer["op"], layer["version"]) in (("MaxPool", 8), ("MaxPool", 14), ("AvgPool", 16))


def _roundings(op: str, version: int) -> tuple[str, ...]:
    torch = (op, version) in (("MaxPool", 14), ("AvgPool", 14), ("AvgPool", 16))
    return ("floor", "ceil", "ceil_torch") if torch else ("floor", "ceil")


# --------------------------------------------------------------------------- model building


def _add_layer(x, layer: dict[str, Any], for_cpu: bool):
    op, version = layer["op"], layer["version"]
    if op in ("MaxPool", "AvgPool"):
        common = (layer["strides"], layer["pads_begin"], layer["pads_end"], layer["kernel"])
        rounding, auto_pad = layer["rounding"], layer["auto_pad"]
    if op == "MaxPool" and version == 1:
        return opset1.max_pool(x, *common, rounding, auto_pad)
    if op == "MaxPool":
        module = opset8 if version == 8 else opset14
        strides, pb, pe, kernel = common
        return module.max_pool(
            x, strides, layer["dilations"], pb, pe, kernel, rounding, auto_pad,
            index_element_type=layer["index_type"], axis=layer["axis"],
        )  # fmt: skip
    if op == "AvgPool" and version == 16:
        return opset16.avg_pool(
            x, *common, layer["exclude_pad"], rounding, auto_pad, dilations=layer["dilations"]
        )
    if op == "AvgPool":
        module = opset1 if version == 1 else opset14
        return module.avg_pool(x, *common, layer["exclude_pad"], rounding, auto_pad)
    target = opset1.constant(np.array(layer["out_sizes"], NUMPY_DTYPES[layer["shape_type"]]))
    if op == "AdaptiveAvgPool":
        return opset8.adaptive_avg_pool(x, target)
    # The CPU plugin refuses i64 indices for AdaptiveMaxPool.
    index_type = "i32" if for_cpu else layer["index_type"]
    return opset8.adaptive_max_pool(x, target, index_element_type=index_type)


def build_model(cfg: dict[str, Any], for_cpu: bool = False, via_f32: bool = False):
    """The configured chain as an ov.Model; outputs are named ``l<i>_values``/``l<i>_indices``.

    ``via_f32`` builds the CPU stand-in for integer models the plugin refuses:
    the same ops on f32, each average rounded half to even, outputs converted back.
    """
    dtype = _ov_type(cfg["dtype"])
    param = opset1.parameter(cfg["shape"], _ov_type("f32") if via_f32 else dtype, name="x")
    param.output(0).get_tensor().set_names({"x"})
    x = param.output(0)
    results = []

    def expose(port, name):
        if via_f32 and port.get_element_type() == _ov_type("f32"):
            port = opset1.convert(port, dtype).output(0)
        port.get_tensor().set_names({name})
        results.append(opset1.result(port))

    for i, layer in enumerate(cfg["layers"]):
        node = _add_layer(x, layer, for_cpu)
        node.set_friendly_name(f"l{i}")
        values = node.output(0)
        if via_f32 and layer["op"] in ("AvgPool", "AdaptiveAvgPool"):
            values = opset5.round(values, "half_to_even").output(0)
        last = i == len(cfg["layers"]) - 1
        if last or layer["expose"]:
            expose(values, f"l{i}_values")
        if node.get_output_size() > 1 and layer["indices"]:
            expose(node.output(1), f"l{i}_indices")
        x = values
    return ov.Model(results, [param], "differential")


# --------------------------------------------------------------------------- window geometry


def _window_has_data(size: int, out: int, kernel: int, stride: int, dil: int, pad: int):
    """Per output position on one axis: does any tap fall inside the input?"""
    taps = (np.arange(out) * stride - pad)[:, None] + np.arange(kernel)[None, :] * dil
    return ((taps >= 0) & (taps < size)).any(axis=1)


def empty_windows(in_spatial, layer: dict[str, Any]) -> np.ndarray:
    """Output positions whose window holds no input element (over the spatial grid)."""
    out = layer["resolved"]["out"]
    full = np.ones(out, bool)
    for axis, size in enumerate(in_spatial):
        has = _window_has_data(
            size, out[axis], layer["kernel"][axis], layer["strides"][axis],
            layer["dilations"][axis], layer["resolved"]["pads_begin"][axis],
        )  # fmt: skip
        shape = [1] * len(out)
        shape[axis] = out[axis]
        full = full & has.reshape(shape)
    return ~full


def zero_count_windows(in_spatial, layer: dict[str, Any]) -> np.ndarray | None:
    """AvgPool positions that divide by a zero count, or None for other layers."""
    if layer["op"] != "AvgPool":
        return None
    r = layer["resolved"]
    if not layer["exclude_pad"] and any(r["pads_begin"] + r["pads_end"]):
        return np.zeros(r["out"], bool)  # padding counts: every window has a divisor
    return empty_windows(in_spatial, layer)


# --------------------------------------------------------------------------- configurations


def _random_window_layer(rng: random.Random, op: str, version: int, spatial) -> dict[str, Any]:
    n = len(spatial)
    layer: dict[str, Any] = {"op": op, "version": version}
    layer["kernel"] = [rng.choice((1, 2, 2, 3, 3, 4, 5)) for _ in range(n)]
    layer["strides"] = [rng.choice((1, 1, 2, 2, 3, 4)) for _ in range(n)]
    layer["dilations"] = (
        [rng.choice((1, 1, 2, 3)) for _ in range(n)] if _has_dilations(layer) else [1] * n
    )
    layer["auto_pad"] = rng.choice((*AUTO_PADS, "explicit"))
    layer["rounding"] = rng.choice(_roundings(op, version))
    kd = [d * (k - 1) + 1 for k, d in zip(layer["kernel"], layer["dilations"], strict=True)]
    # MaxPool accepts pads >= kernel (windows entirely in the padding); AvgPool
    # with exclude-pad does not, and OpenVINO's rejection makes us draw again.
    reach = 2 if op == "MaxPool" else 0
    layer["pads_begin"] = [rng.randint(0, k + reach) if rng.random() < 0.7 else 0 for k in kd]
    layer["pads_end"] = [rng.randint(0, k + reach) if rng.random() < 0.7 else 0 for k in kd]
    if op == "AvgPool":
        layer["exclude_pad"] = rng.random() < 0.5
    if op == "MaxPool" and version >= 8:
        rank = n + 2
        layer["axis"] = rng.randint(-rank, rank - 1)
        layer["index_type"] = rng.choice(("i32", "i64"))
        layer["indices"] = rng.random() < 0.8
    return layer


def _random_adaptive_layer(rng: random.Random, op: str, spatial) -> dict[str, Any]:
    layer: dict[str, Any] = {"op": op, "version": 8}
    if rng.random() < 0.12:
        layer["out_sizes"] = [1] * len(spatial)
    else:
        layer["out_sizes"] = [rng.randint(1, min(8, s + 3)) for s in spatial]
    layer["shape_type"] = rng.choice(("i32", "i64"))
    if op == "AdaptiveMaxPool":
        layer["index_type"] = rng.choice(("i32", "i64"))
        layer["indices"] = rng.random() < 0.85
    return layer


def _place_layer(x, layer: dict[str, Any]):
    """Build ``layer`` on ``x`` with OpenVINO; None when OpenVINO rejects it."""
    try:
        node = _add_layer(x, layer, for_cpu=True)
    except RuntimeError:
        return None
    shape = list(node.get_output_partial_shape(0).to_shape())
    if int(np.prod(shape)) > MAX_ELEMENTS or max(shape[2:]) > 16:
        return None
    if layer["op"] in ("MaxPool", "AvgPool"):
        attrs = node.get_attributes()
        layer["resolved"] = {
            "pads_begin": list(attrs["pads_begin"]),
            "pads_end": list(attrs["pads_end"]),
            "out": shape[2:],
        }
    return node


def _random_chain(rng: random.Random, ops, shape, dtype: str) -> list[dict[str, Any]] | None:
    param = opset1.parameter(shape, _ov_type(dtype))
    x, spatial = param.output(0), list(shape[2:])
    layers = []
    huge = False  # does the input of this layer hold f32's lowest from an empty MaxPool window?
    for i, (op, version) in enumerate(ops):
        last = i == len(ops) - 1
        for _attempt in range(200):
            if op.startswith("Adaptive"):
                layer = _random_adaptive_layer(rng, op, spatial)
            else:
                layer = _random_window_layer(rng, op, version, spatial)
            layer["expose"] = last or rng.random() < 0.5
            node = _place_layer(x, layer)
            if node is None:
                continue
            if _meets_cpu_divergence(spatial, layer, dtype, last, huge):
                continue
            break
        else:
            return None
        huge = huge or (op == "MaxPool" and bool(empty_windows(spatial, layer).any()))
        layers.append(layer)
        x = node.output(0)
        spatial = list(x.get_partial_shape().to_shape())[2:]
    return layers


def _meets_cpu_divergence(
    spatial, layer: dict[str, Any], dtype: str, last: bool, huge: bool = False
) -> bool:
    """Would this layer run into a CPU-plugin divergence listed in the module docstring?"""
    op = layer["op"]
    to_ones = op.startswith("Adaptive") and all(s == 1 for s in layer["out_sizes"])
    if to_ones and op == "AdaptiveAvgPool" and (not last or dtype not in FLOATS or huge):
        return True
    if to_ones and op == "AdaptiveMaxPool" and not layer["indices"]:
        return True
    zero = zero_count_windows(spatial, layer)
    if zero is not None and zero.any() and (not last or dtype in ("i32", "i64")):
        return True
    if last or dtype == "f32":
        return False
    if op in ("AvgPool", "AdaptiveAvgPool"):
        return True
    return op == "MaxPool" and bool(empty_windows(spatial, layer).any())


def _random_shape(rng: random.Random, rank: int) -> list[int]:
    top = 12 if rank < 5 else 7
    spatial = [rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)[:top]) for _ in range(rank - 2)]
    return [rng.randint(1, 3), rng.randint(1, 3), *spatial]


def _values_kind(rng: random.Random, dtype: str, layers: int) -> str:
    if dtype == "f32" or (dtype == "f16" and layers == 1):
        return rng.choice(("normal", "ties", "special", "special"))
    return rng.choice(("normal", "ties"))


def _config_id(number: int, cfg: dict[str, Any]) -> str:
    parts = []
    for layer in cfg["layers"]:
        name = f"{layer['op']}{layer['version']}"
        if "kernel" in layer:
            name += "-k" + "x".join(map(str, layer["kernel"]))
            name += "-s" + "x".join(map(str, layer["strides"]))
            if any(d != 1 for d in layer["dilations"]):
                name += "-d" + "x".join(map(str, layer["dilations"]))
            name += f"-{layer['auto_pad']}-{layer['rounding']}"
        else:
            name += "-o" + "x".join(map(str, layer["out_sizes"]))
        parts.append(name)
    shape = "x".join(map(str, cfg["shape"]))
    return f"{number:04d}-{cfg['dtype']}-{cfg['values']}-{shape}-" + "+".join(parts)


def make_configs(seed: int = 20240611, singles_per_op: int = 80, chains: int = 160):
    """Seeded differential configurations: single ops round-robin, then chains."""
    rng = random.Random(seed)
    plans = [[OPS[i % len(OPS)]] for i in range(singles_per_op * len(OPS))]
    plans += [[rng.choice(OPS) for _ in range(rng.randint(2, 4))] for _ in range(chains)]
    configs = []
    for number, ops in enumerate(plans):
        # Most cases use f32, where the CPU plugin is the strictest oracle.
        dtype = "f32" if rng.random() < 0.45 else rng.choice(DTYPES)
        if any(op.endswith("AvgPool") for op, _ in ops[:-1]):
            dtype = "f32"  # see _meets_cpu_divergence
        rank = rng.choice((3, 4, 5))
        for _attempt in range(50):
            shape = _random_shape(rng, rank)
            layers = _random_chain(rng, ops, shape, dtype)
            if layers is not None:
                break
        else:
            raise AssertionError(f"no valid configuration found for {ops} at rank {rank}")
        cfg = {
            "shape": shape, "dtype": dtype, "values": _values_kind(rng, dtype, len(ops)),
            "seed": rng.randrange(2**32), "layers": layers,
        }  # fmt: skip
        cfg["id"] = _config_id(number, cfg)
        configs.append(cfg)
    return configs


# IRRUN_DIFF_SEED draws a different (still reproducible) set, for fuzzing by hand.
CONFIGS = make_configs(int(os.environ.get("IRRUN_DIFF_SEED", "20240611")))


# --------------------------------------------------------------------------- inputs


def make_input(cfg: dict[str, Any]) -> np.ndarray:
    rng = np.random.default_rng(cfg["seed"])
    shape, kind = cfg["shape"], cfg["values"]
    dtype = np.dtype(NUMPY_DTYPES[cfg["dtype"]])
    if dtype.kind == "f":
        if kind == "ties":
            x = rng.integers(-3, 4, shape).astype(np.float32)
            x[(x == 0) & (rng.random(shape) < 0.5)] = -0.0
        else:
            x = rng.standard_normal(shape).astype(np.float32)
        if kind == "special":
            pick = rng.random(shape)
            x[pick < 0.12] = np.nan
            x[(pick >= 0.12) & (pick < 0.22)] = -np.inf
            x[(pick >= 0.22) & (pick < 0.25)] = np.inf
            x[(pick >= 0.25) & (pick < 0.30)] = -0.0
        # f64 stays f32-representable: the CPU plugin computes it in f32.
        return x.astype(dtype)
    small = {"i8": (-2, 3), "u8": (0, 4), "i32": (-2, 3), "i64": (-2, 3)}
    wide = {"i8": (-128, 128), "u8": (0, 256), "i32": (-1000, 1001), "i64": (-1000, 1001)}
    lo, hi = (small if kind == "ties" else wide)[cfg["dtype"]]
    return rng.integers(lo, hi, shape).astype(dtype)


# --------------------------------------------------------------------------- running


def run_cpu(core, cfg: dict[str, Any], x: np.ndarray):
    """CPU outputs by name, and the kernel (primitive type) the plugin runs for each layer."""
    try:
        compiled = core.compile_model(build_model(cfg, for_cpu=True), "CPU", CPU_CONFIG)
        feed = x
    except RuntimeError as exc:
        if "Supported primitive descriptors list is empty" not in str(exc):
            raise
        if cfg["dtype"] not in ("i32", "i64"):
            raise
        model = build_model(cfg, for_cpu=True, via_f32=True)
        compiled = core.compile_model(model, "CPU", CPU_CONFIG)
        feed = x.astype(np.float32)
    results = compiled(feed)
    outputs = {next(iter(out.get_names())): results[out] for out in compiled.outputs}
    kernels = {
        node.get_friendly_name(): str(node.get_rt_info()["primitiveType"].astype(str))
        for node in compiled.get_runtime_model().get_ordered_ops()
    }
    return outputs, kernels


def run_irrun(cfg: dict[str, Any], x: np.ndarray, tmp_path, mode: str = "fast"
              ) -> dict[str, np.ndarray]:
    path = tmp_path / "m.xml"
    ov.save_model(build_model(cfg), path, compress_to_fp16=False)
    return reference_mode.load(path, mode).run({"x": x})


# --------------------------------------------------------------------------- comparing


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def assert_same(
    name: str, got: np.ndarray, want: np.ndarray, *, tolerance: str, empty: np.ndarray | None = None
) -> None:
    """Compare one output; ``tolerance`` is exact, one, f16_ulp or rtol; ``empty`` masks 0/0."""
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != {want.dtype}"
    if got.dtype.kind != "f":
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        _report(name, diff > (1 if tolerance == "one" else 0), got, want)
        return
    skip = np.zeros(got.shape, bool)
    if empty is not None:
        # Empty AvgPool window: irrun computes 0/0 = NaN; the CPU plugin divides 0 by
        # a product of per-axis counts that go negative past the end: NaN or ±0.0.
        cpu_ok = np.isnan(want) | (want == 0)
        _report(f"{name} (empty windows)", empty & ~(np.isnan(got) & cpu_ok), got, want)
        skip = empty
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    _report(f"{name} (NaN positions)", (nan_got != nan_want) & ~skip, got, want)
    check = ~skip & ~nan_got & ~nan_want
    if tolerance == "exact":
        bad = _bits(got) != _bits(want)
    else:
        g, w = got.astype(np.float64), want.astype(np.float64)
        with np.errstate(invalid="ignore"):
            if tolerance == "f16_ulp":
                ulp = np.spacing(np.maximum(np.abs(got), np.abs(want)).astype(np.float16))
                close = np.abs(g - w) <= ulp.astype(np.float64)
            else:
                close = np.isclose(g, w, rtol=1e-6, atol=1e-6)
            # Infinities must match exactly, including their sign.
            close = np.where(np.isinf(g) | np.isinf(w), g == w, close)
        bad = ~close
    _report(name, bad & check, got, want)


def _report(name: str, bad: np.ndarray, got: np.ndarray, want: np.ndarray) -> None:
    if not bad.any():
        return
    where = np.argwhere(bad)[:5]
    samples = ", ".join(
        f"{tuple(int(i) for i in w)}: irrun {got[tuple(w)]!r} cpu {want[tuple(w)]!r}" for w in where
    )
    pytest.fail(f"{name}: {int(bad.sum())} of {bad.size} differ, e.g. {samples}")


def _multiplies_by_reciprocal(kernel: str) -> bool:
    """Does the CPU's AvgPool kernel scale by 1/count instead of dividing?

    The integer jit kernels (jit_avx2_i8, jit_sse42_I8, jit_avx2_i32, ...) do;
    the f32 ones and oneDNN's reference kernel (ref_any_*) divide.
    """
    return kernel.startswith("jit_") and kernel.lower().endswith(("_i8", "_i32"))


def expectations(cfg: dict[str, Any], kernels=None):
    """For each output name: its tolerance, zero-count mask and expected index dtype.

    ``kernels`` maps layer names to the CPU plugin's kernel for them.  For integer
    AvgPool the plugin's choice decides the arithmetic: the integer jit kernels
    multiply the f32 sum by the reciprocal of the count, the others divide, so an
    exact half such as 2475/30 can round to either neighbour.  The choice depends
    on channel count, layout, pads and ISA; irrun follows the usual one (the jit
    kernel for i8/u8, the f32 kernel for i32/i64) and one step is allowed where the
    plugin took the other.
    """
    kernels = kernels or {}
    spatial = list(cfg["shape"][2:])
    dtype = cfg["dtype"]
    found = {}
    for i, layer in enumerate(cfg["layers"]):
        op = layer["op"]
        tolerance = "exact"
        if op in ("AvgPool", "AdaptiveAvgPool"):
            # Only the last layer of a non-f32 chain may average (_meets_cpu_divergence).
            tolerance = {"f16": "f16_ulp", "f64": "rtol"}.get(dtype, "exact")
        if op == "AdaptiveAvgPool" and all(s == 1 for s in layer["out_sizes"]):
            tolerance = "rtol" if dtype == "f32" else tolerance
        if op == "AvgPool" and dtype in ("i32", "i64", "i8", "u8"):
            by_reciprocal = _multiplies_by_reciprocal(kernels.get(f"l{i}", ""))
            if by_reciprocal != (dtype in ("i8", "u8")):
                tolerance = "one"
        zero = zero_count_windows(spatial, layer)
        mask = None
        if zero is not None and zero.any():
            n, c = cfg["shape"][:2]
            mask = np.broadcast_to(zero, (n, c, *zero.shape))
        found[f"l{i}_values"] = (tolerance, mask, None)
        if "index_type" in layer:
            found[f"l{i}_indices"] = ("exact", None, layer["index_type"])
        if op.startswith("Adaptive"):
            spatial = list(layer["out_sizes"])
        else:
            spatial = list(layer["resolved"]["out"])
    return found


@pytest.mark.parametrize("mode", reference_mode.MODES)
@pytest.mark.parametrize("cfg", CONFIGS, ids=[c["id"] for c in CONFIGS])
def test_matches_cpu_plugin(cfg, mode, core, tmp_path):
    x = make_input(cfg)
    got = run_irrun(cfg, x, tmp_path, mode)
    want, kernels = run_cpu(core, cfg, x)
    assert sorted(got) == sorted(want)
    for name, (tolerance, empty, index_type) in expectations(cfg, kernels).items():
        if name not in want:
            continue
        g, w = got[name], want[name]
        if index_type is not None:
            assert g.dtype == np.dtype(NUMPY_DTYPES[index_type]), f"{name}: dtype {g.dtype}"
            # The CPU copy of an AdaptiveMaxPool always has i32 indices.
            w = w.astype(g.dtype)
        assert_same(name, g, w, tolerance=tolerance, empty=empty)


# --------------------------------------------------------------------------- the suite itself


def test_configurations_cover_the_issue():
    """The generated set really exercises what the differential suite promises."""
    assert len(CONFIGS) >= 500
    layers = [(cfg, layer) for cfg in CONFIGS for layer in cfg["layers"]]
    assert {(lay["op"], lay["version"]) for _, lay in layers} == set(OPS)
    assert {len(cfg["shape"]) for cfg in CONFIGS} == {3, 4, 5}
    assert {cfg["dtype"] for cfg in CONFIGS} == set(DTYPES)
    assert {cfg["values"] for cfg in CONFIGS} == {"normal", "ties", "special"}
    assert {len(cfg["layers"]) for cfg in CONFIGS} >= {1, 2, 3, 4}
    for op, version in OPS[:6]:
        mine = [lay for _, lay in layers if (lay["op"], lay["version"]) == (op, version)]
        assert {lay["auto_pad"] for lay in mine} == set(AUTO_PADS), (op, version)
        assert {lay["rounding"] for lay in mine} == set(_roundings(op, version)), (op, version)
        assert any(s > 1 for lay in mine for s in lay["strides"]), (op, version)
        if _has_dilations({"op": op, "version": version}):
            assert any(d > 1 for lay in mine for d in lay["dilations"]), (op, version)
        if op == "MaxPool":
            assert any(
                p >= k
                for lay in mine
                for p, k in zip(lay["resolved"]["pads_begin"], lay["kernel"], strict=True)
            ), (op, version)
        if op == "AvgPool":
            assert {lay["exclude_pad"] for lay in mine} == {True, False}
        if version >= 8 and op == "MaxPool":
            assert {lay["index_type"] for lay in mine} == {"i32", "i64"}
            assert any(lay["axis"] < 0 for lay in mine)
    adaptive_max = [lay for _, lay in layers if lay["op"] == "AdaptiveMaxPool"]
    assert {lay["index_type"] for lay in adaptive_max} == {"i32", "i64"}
    # Windows hanging past the end, and windows holding no element at all.
    assert any(
        empty_windows(cfg["shape"][2:], lay).any()
        for cfg in CONFIGS
        for lay in cfg["layers"][:1]
        if lay["op"] == "MaxPool"
    )
    assert any(
        (zero := zero_count_windows(cfg["shape"][2:], lay)) is not None and zero.any()
        for cfg in CONFIGS
        for lay in cfg["layers"][:1]
    )
