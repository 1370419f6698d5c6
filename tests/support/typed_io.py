"""Inputs of every element type, fed to irrun and to OpenVINO's reference kernels.

``sample(t, shape, rng)`` draws values of element type ``t`` in irrun's representation
(packed integers one per byte, nf4 as codes in :data:`irrun.ir.element_types.NF4`,
strings as object arrays of ``str``); ``to_ov`` and ``from_ov`` turn them into OpenVINO
tensors and back through :mod:`support.ov_packed`, which packs as OpenVINO does,
independently of irrun's decoder.  ``evaluate`` runs ``ov.Model.evaluate`` on such
inputs, ``cpu`` the CPU plugin, and ``assert_same`` compares two results element for element (floats by their
bits, so that NaNs and signed zeros count).
"""

from __future__ import annotations

import numpy as np
import openvino as ov

import irrun
from irrun.ir.element_types import ELEMENT_TYPES, NF4

from .ov_oneop import CORE, CPU_CONFIG
from .ov_packed import array, tensor

# The largest value each packed integer type holds (i4: -8..7).
_PACKED_HIGH = {"u1": 2, "u2": 4, "u3": 8, "u4": 16, "u6": 64}


def sample(t: str, shape, rng: np.random.Generator) -> np.ndarray:
    """Values of element type ``t`` (irrun's representation) of ``shape``."""
    et = ELEMENT_TYPES[t]
    if t == "string":
        words = ["", "a", "bc", "déf", "ghij", "\u4e2d\u6587"]
        out = np.empty(shape, object)
        flat = out.reshape(-1)
        for i, k in enumerate(rng.integers(0, len(words), flat.size)):
            flat[i] = words[k]
        return out
    if t == "nf4":
        return rng.integers(0, 16, shape).astype(np.uint8).view(NF4).reshape(shape)
    if t == "boolean":
        return rng.random(shape) < 0.5
    if t in _PACKED_HIGH:
        return rng.integers(0, _PACKED_HIGH[t], shape).astype(np.uint8)
    if t == "i4":
        return rng.integers(-8, 8, shape).astype(np.int8)
    if et.dtype.kind in "iu":
        low = 0 if et.dtype.kind == "u" else -100
        return rng.integers(low, 100, shape).astype(et.dtype)
    if t == "f8e8m0":  # powers of two only
        return (2.0 ** rng.integers(-4, 5, shape)).astype(et.dtype)
    return (rng.standard_normal(shape) * 2).astype(et.dtype)


def to_ov(x: np.ndarray, t: str) -> ov.Tensor:
    if t == "string":
        return ov.Tensor(np.array(x.tolist(), dtype=str).reshape(x.shape))
    if t == "nf4":
        return tensor(x.view(np.uint8), t)
    return tensor(x, t)


def from_ov(out: ov.Tensor, t: str) -> np.ndarray:
    if t == "string":
        values = [bytes(b).decode("utf-8", "surrogateescape")
                  for b in np.asarray(out.bytes_data).reshape(-1)]  # fmt: skip
        result = np.empty(len(values), object)
        result[:] = values
        return result.reshape(tuple(out.shape))
    got = array(out, t)
    return got.astype(np.uint8).view(NF4) if t == "nf4" else got


def evaluate(model: ov.Model, inputs: list[np.ndarray], types: list[str]) -> list[np.ndarray]:
    """OpenVINO's reference kernels' outputs of ``model`` (output types from the model)."""
    outs = [ov.Tensor(o.get_element_type(), [0]) for o in model.outputs]
    assert model.evaluate(outs, [to_ov(x, t) for x, t in zip(inputs, types, strict=True)])
    names = [o.get_element_type().get_type_name() for o in model.outputs]
    return [from_ov(o, _name(n)) for o, n in zip(outs, names, strict=True)]


def cpu(model: ov.Model, inputs: list[np.ndarray], types: list[str]) -> list[np.ndarray]:
    """The CPU plugin's outputs of ``model`` (f32 precision, one thread)."""
    request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
    request.infer({i: to_ov(x, t) for i, (x, t) in enumerate(zip(inputs, types, strict=True))})
    outs = [request.get_output_tensor(k) for k in range(len(model.outputs))]
    return [from_ov(o, _name(o.get_element_type().get_type_name())) for o in outs]


def _name(ov_name: str) -> str:
    return {"bool": "boolean"}.get(ov_name, ov_name)


def run_irrun(model: ov.Model, inputs: list[np.ndarray], tmp_path) -> list[np.ndarray]:
    """irrun's outputs of ``model`` saved as IR (inputs named in0, in1, ...)."""
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})
    return list(got.values())


def assert_same(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Same shape, dtype and elements (floats compared by their bits)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if got.dtype == object:
        assert got.tolist() == want.tolist(), what
        return
    if got.dtype.fields is not None or got.dtype.kind in "fV":
        got, want = got.view(np.uint8), want.view(np.uint8)
    np.testing.assert_array_equal(got, want, err_msg=what)


def refusals(model: ov.Model, tmp_path, retype: dict[int, str]) -> list[str]:
    """irrun.validate's findings of types an op does not take, for ``model`` saved with its
    parameters ``in<k>`` retyped (``retype``: k -> element type), as an IR that OpenVINO
    itself may refuse to build."""
    import re

    path = tmp_path / "retyped.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    text = path.read_text()
    for k, t in retype.items():
        layer = re.compile(rf'(<layer id="\d+" name="in{k}" type="Parameter"[^>]*>\s*<data [^>]*'
                           rf'element_type=")[^"]*(")')  # fmt: skip
        text, count = layer.subn(rf"\g<1>{t}\g<2>", text)
        assert count == 1, f"no parameter in{k}"
    path.write_text(text)  # the ports' precisions are left: their mismatch is another finding
    return [str(d) for d in irrun.validate(path) if "does not take" in d.message]
