"""OpenVINO tensors of any element type from NumPy arrays and back, packed types included.

OpenVINO's Python API shows a tensor of a packed type (u1, u2, u3, u4, u6, i4, nf4,
f4e2m1) as its bytes, and a bf16 tensor as float16 numbers; these helpers pack and
unpack as OpenVINO lays such tensors out (checked against the ``.bin`` files
``ov.save_model`` writes, in tests/ir/test_element_types.py), independently of irrun's
own decoder.  Elements of the packed types are given and returned one per byte: u* as
uint8 numbers, i4 as int8, nf4 as uint8 codes, f4e2m1 as ml_dtypes.float4_e2m1fn.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import openvino as ov
from openvino import opset1

from .ov_oneop import CORE, CPU_CONFIG

PACKED = {"u1": 1, "u2": 2, "u3": 3, "u4": 4, "u6": 6, "i4": 4, "nf4": 4, "f4e2m1": 4}


def pack(values: np.ndarray, t: str) -> np.ndarray:
    """The bytes OpenVINO stores ``values`` of packed type ``t`` in."""
    v = np.ascontiguousarray(values).reshape(-1).view(np.uint8) & ((1 << PACKED[t]) - 1)
    if t == "u1":
        return np.packbits(v, bitorder="big")
    if t == "u2":
        v = np.concatenate([v, np.zeros(-v.size % 4, np.uint8)]).reshape(-1, 4)
        return v[:, 0] | v[:, 1] << 2 | v[:, 2] << 4 | v[:, 3] << 6
    if t in ("u3", "u6"):
        per = 8 if t == "u3" else 4
        v = np.concatenate([v, np.zeros(-v.size % per, np.uint8)]).reshape(-1, per)
        out = np.zeros((v.shape[0], 3), np.uint8)
        low_bits = 2 if t == "u3" else 4
        low, high = v & ((1 << low_bits) - 1), v >> low_bits
        for i in range(per):  # low parts first element highest, then the high parts
            byte, at = divmod(i * low_bits, 8)
            out[:, byte] |= low[:, i] << (8 - low_bits - at)
            out[:, 2] |= high[:, i] << (8 - (8 // per) * (i + 1))
        return out.reshape(-1)
    v = np.concatenate([v, np.zeros(v.size % 2, np.uint8)])
    return v[0::2] | v[1::2] << 4


def unpack(raw: np.ndarray, t: str, count: int) -> np.ndarray:
    """``count`` elements of packed type ``t`` from OpenVINO's bytes ``raw``."""
    raw = np.asarray(raw).reshape(-1).view(np.uint8)
    if t == "u1":
        out = np.unpackbits(raw, bitorder="big")
    elif t == "u2":
        out = np.stack([(raw >> s) & 3 for s in (0, 2, 4, 6)], 1)
    elif t in ("u3", "u6"):
        per, low_bits = (8, 2) if t == "u3" else (4, 4)
        g = raw.reshape(-1, 3)
        low = np.stack([(g[:, (i * low_bits) // 8] >> (8 - low_bits - (i * low_bits) % 8))
                        & ((1 << low_bits) - 1) for i in range(per)], 1)  # fmt: skip
        high = np.stack([(g[:, 2] >> (8 - (8 // per) * (i + 1))) & ((1 << (8 // per)) - 1)
                         for i in range(per)], 1)  # fmt: skip
        out = high << low_bits | low
    else:
        out = np.stack([raw & 15, raw >> 4], 1)
    out = out.reshape(-1)[:count]
    if t == "i4":
        return (out.astype(np.int8) ^ 8) - 8
    if t == "f4e2m1":
        return out.view(ml_dtypes.float4_e2m1fn)
    return out


def tensor(x: np.ndarray, t: str) -> ov.Tensor:
    """An OpenVINO tensor of type ``t`` holding ``x``."""
    out = ov.Tensor(getattr(ov.Type, t), list(x.shape))
    raw = pack(x, t) if t in PACKED else np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    out.data.reshape(-1).view(np.uint8)[:] = raw
    return out


def array(t: ov.Tensor, name: str) -> np.ndarray:
    """The elements of OpenVINO tensor ``t`` of type ``name``."""
    shape = tuple(t.shape)
    if name in PACKED:
        return unpack(t.data, name, int(np.prod(shape, dtype=np.int64))).reshape(shape)
    data = np.array(t.data, copy=True)
    if name == "bf16":
        return data.view(np.uint16).view(ml_dtypes.bfloat16)
    for n, dtype in (("f8e4m3", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2),
                     ("f8e8m0", ml_dtypes.float8_e8m0fnu)):  # fmt: skip
        if name == n:
            return data.view(dtype)
    return data


def convert_model(src: str, dst: str, shape: list[int]) -> ov.Model:
    p = opset1.parameter(shape, getattr(ov.Type, src), name="x")
    p.output(0).get_tensor().set_names({"x"})
    y = opset1.convert(p, dst)
    y.output(0).get_tensor().set_names({"y"})
    return ov.Model([y], [p], "convert")


def run_cpu(model: ov.Model, x: np.ndarray, src: str, dst: str) -> np.ndarray:
    request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
    request.infer({0: tensor(x, src)})
    return array(request.get_output_tensor(0), dst)


def run_reference(model: ov.Model, x: np.ndarray, src: str, dst: str) -> np.ndarray:
    out = [ov.Tensor(getattr(ov.Type, dst), list(x.shape))]
    model.evaluate(out, [tensor(x, src)])
    return array(out[0], dst)
