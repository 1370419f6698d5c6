"""One-op models over any element type: the inputs reach the op through a Convert.

NumPy and OpenVINO's Python API share no array type for bf16, the small floats or the
packed integers, so :func:`typed_runs` feeds the op parameters of a NumPy type
converted in the graph to the type under test, and converts outputs of such types to
f32 (exactly: every value of those types is an f32).  irrun runs the saved model;
OpenVINO's reference kernels (``Model.evaluate``) run the same model, or, where they
have no kernel for the type, the op in f32 between Converts (``Convert(t) ->
Convert(f32) -> op -> Convert(t) -> Convert(f32)``): the f32 reference computed in
OpenVINO and rounded to the type, as irrun's kernels for those types compute.
"""

from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset1

from irrun.ir.element_types import ELEMENT_TYPES

from .ov_oneop import run_cpu, run_reference, run_saved

# Types that go through f32 at the model's edges (no common NumPy/OpenVINO array type).
EDGE_F32 = {"bf16", "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "nf4", "u1", "u2", "u3", "u4",
            "u6", "i4"}  # fmt: skip
PACKED = {"nf4", "f4e2m1", "u1", "u2", "u3", "u4", "u6", "i4"}


def _ov(name: str) -> ov.Type:
    return getattr(ov.Type, name)


def _model(build, inputs, types, outputs, through=None):
    params, nodes = [], []
    for i, (x, t) in enumerate(zip(inputs, types, strict=True)):
        p = opset1.parameter(list(x.shape), ov.Type(x.dtype), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
        node = p if ov.Type(x.dtype) == _ov(t) else opset1.convert(p, _ov(t))
        if through is not None and t not in (through, "boolean") and t == types[0]:
            node = opset1.convert(node, _ov(through))
        nodes.append(node)
    op = build(*nodes)
    outs = []
    for k in range(outputs):
        out = op.output(k)
        et = out.get_element_type().get_type_name()
        if through is not None and et == through and types[0] != through and types[0] in (
            through_types(through)
        ):
            out = opset1.convert(out, _ov(types[0])).output(0)
            et = types[0]
        if et in EDGE_F32:
            out = opset1.convert(out, ov.Type.f32).output(0)
        outs.append(out)
    for k, out in enumerate(outs):
        out.get_tensor().set_names({f"out{k}"})
    return ov.Model(outs, params, "one_op")


def through_types(through: str) -> set[str]:
    return {name for name in ELEMENT_TYPES if name != through}


def typed_irrun(build, inputs, types, tmp_path, outputs=1) -> list[np.ndarray]:
    """irrun's outputs alone, of the model :func:`typed_runs` runs."""
    return run_saved(_model(build, inputs, types, outputs), inputs, tmp_path)


def typed_runs(build, inputs, types, tmp_path, outputs=1, through="f32"):
    """irrun's outputs of ``build`` on ``inputs`` converted to ``types`` (one per input,
    the NumPy arrays' own type to leave one as it is), and OpenVINO's reference answer:
    its kernels' on the same model, or where they refuse the first input's type, the op
    in ``through`` between Converts (the other inputs of the first one's type converted as
    well, those of other types, a boolean mask, left as they are); for ops without a reference kernel (Einsum), the CPU plugin's
    answer to the same two models."""
    model = _model(build, inputs, types, outputs)
    got = run_saved(model, inputs, tmp_path)
    typed = _model(build, inputs, types, outputs, through=through)
    error = None
    runs = [(run_reference, model), (run_reference, typed)]
    if not set(types) & PACKED:  # the plugin's Convert to u1 corrupts its heap
        runs += [(run_cpu, model), (run_cpu, typed)]
    for run, m in runs:
        try:
            return got, run(m, inputs)
        except RuntimeError as e:
            error = e
    raise AssertionError(f"OpenVINO runs none of the models: {error}")


def sample(name: str, shape, seed: int = 0, low: float = -4, high: float = 4) -> np.ndarray:
    """Values that ``name`` holds exactly, as f32 (small integers for the integer types,
    a multiple of 1/4 for the floats), in [low, high] (non-negative for unsigned ones)."""
    rng = np.random.default_rng(seed)
    et = ELEMENT_TYPES[name]
    if name == "boolean":
        return rng.integers(0, 2, shape).astype(np.float32)
    if et.dtype.kind == "u" or name in ("f8e8m0",):
        low = max(low, 0)
    if name.startswith("u") and et.bits < 8:
        high = min(high, (1 << et.bits) - 1)
    if name == "i4":
        low, high = max(low, -8), min(high, 7)
    if name == "f8e8m0":
        return (2.0 ** rng.integers(-3, 3, shape)).astype(np.float32)
    if et.dtype.kind in "iu" or et.bits < 8:
        return rng.integers(int(low), int(high) + 1, shape).astype(np.float32)
    step = 0.5 if name in ("f8e4m3", "f8e5m2", "f4e2m1") else 0.25
    vals = rng.integers(int(low / step), int(high / step) + 1, shape) * step
    if name == "f4e2m1":
        vals = np.clip(vals, -6, 6)
    return vals.astype(np.float32)


def refused(build, inputs, port: int, et: str, tmp_path) -> list:
    """irrun.validate's errors for the one-op model of ``build`` on parameters like
    ``inputs`` (NumPy arrays, OpenVINO builds it) with parameter ``port`` retyped ``et`` in
    the saved IR: OpenVINO refuses to build a model with a type its op does not take,
    so the types are edited in the file."""
    import xml.etree.ElementTree as ET

    import irrun

    from .ov_oneop import one_op_model

    path = tmp_path / "refused.xml"
    ov.save_model(one_op_model(build, inputs), path, compress_to_fp16=False)
    tree = ET.parse(path)
    root = tree.getroot()
    layer = next(la for la in root.iter("layer") if la.get("name") == f"in{port}")
    layer.find("data").set("element_type", et)
    layer.find("output/port").set("precision", et)
    for edge in root.iter("edge"):
        if edge.get("from-layer") == layer.get("id"):
            to = next(la for la in root.iter("layer") if la.get("id") == edge.get("to-layer"))
            for p in to.find("input"):
                if p.get("id") == edge.get("to-port"):
                    p.set("precision", et)
    tree.write(path)
    return [f for f in irrun.validate(path) if f.level == "error"]


def assert_refused(build, inputs, port: int, et: str, tmp_path, label: str) -> None:
    """Validate's one error names the port, the type and the op's label."""
    errors = refused(build, inputs, port, et, tmp_path)
    assert [f.code for f in errors] == ["shape-error"], errors
    assert f"input {port} is {et}, which {label} does not take" in errors[0].message, errors


def assert_typed_close(got, want, rtol: float = 2.0**-7, atol: float = 1e-6) -> None:
    """Equal outputs: exactly for integers and booleans, within ``rtol`` (bf16's
    rounding) for floats (NaN where NaN)."""
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if g.dtype.kind in "iub":
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol, equal_nan=True)  # fmt: skip
