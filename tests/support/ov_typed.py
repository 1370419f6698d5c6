"""One-op models of any element type, run by irrun and by OpenVINO, for the tests that sweep
the element types an op declares (``OpDef.input_types``).

``check_types(build, values, types, tmp_path)`` builds ``build(*parameters)`` with
parameters of the IR element types ``types`` (``in0``, ``in1``, ...), holding ``values``
(float64 arrays of numbers each type represents exactly), runs the saved IR in irrun and
compares its first output with OpenVINO's: the reference kernels (``Model.evaluate``) or
the CPU plugin, the first of ``oracles`` that runs the types; where none does (OpenVINO has
no kernel of f8 types, packed integers, ...), the same op of ``work`` parameters (f32 for
floats, i32 for integers) followed by a Convert to the output's type in the OpenVINO graph.
Tensors of packed types go through :mod:`support.ov_packed`.  Integers and booleans are
compared exactly, floats within ``rtol`` (f32, f64) or one step of their own precision
(narrower floats: computed in f32 and rounded once, as irrun computes them).

``refused(build, types, bad, tmp_path)`` gives validate's errors for the one-op IR whose
element type ``types[port]`` is rewritten to ``bad`` in the saved file (OpenVINO's Python API
would not build it).
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import openvino as ov
from openvino import opset1

import irrun
from irrun.ir.element_types import ELEMENT_TYPES, FLOATS, LOW_FLOATS

from .ov_oneop import CORE, CPU_CONFIG
from .ov_packed import PACKED, array, convert_model, run_reference, tensor

# The IR precisions ov.save_model writes, by element type.
PRECISION = {"f64": "FP64", "f32": "FP32", "f16": "FP16", "bf16": "BF16", "i64": "I64",
             "i32": "I32", "i16": "I16", "i8": "I8", "u64": "U64", "u32": "U32", "u16": "U16",
             "u8": "U8", "boolean": "BOOL", "u1": "U1", "i4": "I4", "u4": "U4",
             "string": "STRING", "nf4": "NF4", "f8e4m3": "F8E4M3", "f8e5m2": "F8E5M2",
             "f8e8m0": "F8E8M0", "f4e2m1": "F4E2M1", "u2": "U2", "u3": "U3", "u6": "U6"}
NARROW_FLOATS = ("f16", "bf16", *LOW_FLOATS)


def is_float(t: str) -> bool:
    return t in FLOATS or t in LOW_FLOATS


def typed(values, t: str) -> np.ndarray:
    """``values`` as an array of element type ``t`` (packed types one element a byte)."""
    if t == "string":
        return np.array([str(v) for v in np.ravel(values)], object).reshape(np.shape(values))
    v = np.asarray(values)
    if t == "nf4":
        return v.astype(np.uint8).view(ELEMENT_TYPES["nf4"].dtype)
    if t == "boolean":
        return v != 0
    return v.astype(ELEMENT_TYPES[t].dtype)


def model(build, types, shapes) -> ov.Model:
    params = []
    for i, (t, s) in enumerate(zip(types, shapes, strict=True)):
        p = opset1.parameter(list(s), getattr(ov.Type, t), name=f"in{i}")
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    node = build(*params)
    node.output(0).get_tensor().set_names({"out"})
    return ov.Model([node.output(0)], params, "one_op")


def run_irrun(build, values, types, tmp_path) -> np.ndarray:
    arrays = [typed(v, t) for v, t in zip(values, types, strict=True)]
    path = tmp_path / "typed.xml"
    ov.save_model(model(build, types, [a.shape for a in arrays]), path, compress_to_fp16=False)
    got = irrun.load(path).run({f"in{i}": a for i, a in enumerate(arrays)})
    return got["out"]


def _ov_tensor(a: np.ndarray, t: str) -> ov.Tensor:
    if t == "string":
        return ov.Tensor(a.astype(str))
    if t == "nf4":
        return tensor(a.view(np.uint8), t)
    if t in PACKED or t in ("bf16", *LOW_FLOATS):
        return tensor(a, t)
    return ov.Tensor(np.ascontiguousarray(a), shared_memory=False)


def _out_array(t: ov.Tensor, name: str) -> np.ndarray:
    if name == "string":
        return np.array(t.str_data, object)
    out = array(t, name)
    if name == "f16":
        return out.view(np.float16) if out.dtype != np.float16 else out
    if name == "nf4":
        return out.astype(np.uint8).view(ELEMENT_TYPES["nf4"].dtype)
    return out


def run_openvino(m: ov.Model, values, types, oracle: str) -> np.ndarray:
    tensors = [_ov_tensor(typed(v, t), t) for v, t in zip(values, types, strict=True)]
    out_type = m.output(0).get_element_type()
    name = out_type.get_type_name()
    name = {"boolean": "boolean"}.get(name, name)
    if oracle == "reference":
        outs = [ov.Tensor(out_type, [0])]
        if not m.evaluate(outs, tensors):
            raise RuntimeError("evaluate ran nothing")
        return _out_array(outs[0], name)
    request = CORE.compile_model(m, "CPU", CPU_CONFIG).create_infer_request()
    request.infer({i: x for i, x in enumerate(tensors)})
    return _out_array(request.get_output_tensor(0), name)


def work_type(t: str) -> str:
    if is_float(t):
        return "f32"
    return "boolean" if t == "boolean" else "i32"


# Types OpenVINO's kernels are run on directly; the others (packed integers, nf4, the f8 and
# f4 floats), which its plugin may crash on, go through the work type.
DIRECT = (*FLOATS, "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8", "boolean", "string")


def expected(build, values, types, oracles=("reference", "cpu")):
    """OpenVINO's output of ``build`` for ``values`` of ``types`` (see the module's doc)."""
    shapes = [np.shape(v) for v in values]
    m = model(build, types, shapes)
    last = None
    if all(t in DIRECT for t in types):
        for oracle in oracles:
            try:
                return run_openvino(m, values, types, oracle)
            except Exception as e:  # OpenVINO has no kernel of the types: next
                last = e
        if all(work_type(t) == t for t in types):
            raise AssertionError(f"OpenVINO runs {types} in none of {oracles}: {last}")
    target = m.output(0).get_element_type().get_type_name()
    work = [work_type(t) for t in types]
    m = model(build, work, shapes)
    last = None
    for oracle in oracles:
        try:
            out = run_openvino(m, values, work, oracle)
            break
        except Exception as e:
            last = e
    else:
        raise AssertionError(f"OpenVINO runs {work} in none of {oracles}: {last}")
    source = m.output(0).get_element_type().get_type_name()
    if source == target:
        return out
    return run_reference(convert_model(source, target, list(out.shape)), out, source, target)


def assert_matches(got: np.ndarray, want: np.ndarray, rtol: float = 1e-6, atol: float = 0.0,
                   what: str = "") -> None:
    """Same shape and dtype; integers, booleans, strings and codes exactly, floats within
    ``rtol`` (f32, f64) or one step of their own precision (narrower floats)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    t = next((n for n in (*FLOATS, *LOW_FLOATS) if ELEMENT_TYPES[n].dtype == got.dtype), None)
    if t is None:
        assert got.tolist() == want.tolist(), f"{what}: {got.tolist()} != {want.tolist()}"
        return
    if t in NARROW_FLOATS:
        info = ml_dtypes.finfo(got.dtype)
        rtol, atol = max(rtol, float(info.eps)), max(atol, float(info.smallest_subnormal))
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True, err_msg=what)


def check_types(build, values, types, tmp_path, *, oracles=("reference", "cpu"), rtol=1e-6,
                atol=0.0, what=""):
    """irrun's output of ``build`` against OpenVINO's (see the module's doc); returns it."""
    got = run_irrun(build, values, types, tmp_path)
    want = expected(build, values, types, oracles)
    if got.dtype != want.dtype and want.dtype == np.uint8 and got.dtype == np.int8:
        want = want.astype(np.int8)
    assert_matches(got, want, rtol, atol, what or f"{types}")
    return got


def refused(build, types, port: int, bad: str, tmp_path, shape=(2, 3),
            shapes=None) -> list[str]:
    """validate's errors for the IR of ``build`` whose input ``port`` (a parameter of type
    ``types[port]``, the only one of its type in the file) is rewritten to ``bad``; the
    parameters are of ``shape`` (or each of its own of ``shapes``)."""
    shapes = [list(s) for s in shapes] if shapes else [list(shape)] * len(types)
    path = tmp_path / "refused.xml"
    ov.save_model(model(build, types, shapes), path, compress_to_fp16=False)
    text = path.read_text()
    old = types[port]
    assert sum(t == old for t in types) == 1, "the retyped port's type must be its own"
    text, n = re.subn(rf'(name="in{port}" type="Parameter"[^>]*>\s*<data shape="[^"]*" )'
                      rf'element_type="{old}"', rf'\1element_type="{bad}"', text)
    assert n == 1, text
    text = text.replace(f'precision="{PRECISION[old]}"', f'precision="{PRECISION[bad]}"')
    path.write_text(text)
    return [str(d) for d in irrun.validate(path) if d.level == "error"]


def sample(t: str, n: int = 8) -> np.ndarray:
    """``n`` (at most 8) values of type ``t``, as float64: both signs, zero and fractions
    where ``t`` holds them, every one exactly representable."""
    if t == "f8e8m0":  # powers of two, no zero, no sign
        v = [0.25, 0.5, 1, 2, 4, 8, 0.125, 16]
    elif is_float(t):
        v = [-3, -1.5, -0.5, 0, 0.5, 1, 2, 6]
    elif t == "boolean" or t == "u1":
        v = [0, 1, 1, 0, 1, 0, 0, 1]
    elif t == "u2":
        v = [0, 1, 2, 3, 3, 2, 1, 0]
    elif t[0] == "u" or t == "nf4":
        v = [0, 1, 2, 3, 5, 7, 4, 6]
    else:
        v = [-4, -3, -1, 0, 1, 2, 5, 7]
    return np.array(v[:n], np.float64)


def const_like(values, node) -> ov.Node:
    """A constant of ``values`` of ``node``'s output element type."""
    t = node.get_output_element_type(0)
    v = np.asarray(values, np.float64)
    flat = [float(x) for x in v.reshape(-1)] if t.is_real() else [int(x) for x in v.reshape(-1)]
    return ov.op.Constant(t, ov.Shape(list(v.shape)), flat)
