"""The element types of issue 27 (f8e4m3, f8e5m2, f8e8m0, f4e2m1, nf4, u2, u3, u6 beside
u1, u4, i4) as OpenVINO writes them: port precisions, Const weights in the ``.bin``,
model inputs and outputs.

Each constant is made and saved by OpenVINO (``ov.save_model``) and read back by irrun;
its bytes must be what OpenVINO wrote, irrun's decoded elements what OpenVINO's own
Convert to f32 gives (the CPU plugin, or the reference kernels where the plugin has no
such Convert), and the XML's ``size`` irrun's byte count.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from openvino import opset1
from support.ov_oneop import CORE, CPU_CONFIG
from support.ov_packed import PACKED, pack

import irrun
from irrun.ir import element_types, schema
from irrun.ir.element_types import ELEMENT_TYPES

# Values given to OpenVINO's constant(): it rounds them to the type as its Convert does.
VALUES = {
    "f8e4m3": [0, -0.0, 1, -2, 448, 500, 0.001, 0.3, np.nan, -np.inf, 1e-7],
    "f8e5m2": [0, -0.0, 1, -2, 57344, 60000, 1e6, 0.001, np.inf, -3.3, 1e-7],
    "f8e8m0": [1, 2, 0.5, 3, 0, -1, 1e38, np.nan, 2.0**-127, 2.0**127, 7],
    "f4e2m1": [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -6, 7, 100, -0.0],
    "nf4": [-1.0, 0.0, 1.0, 0.5, -0.5, 0.07, 0.3, -0.9, 2.0],
    "u1": [1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0],
    "u2": [0, 1, 2, 3, 3, 2, 1, 0, 1],
    "u3": [0, 1, 2, 3, 4, 5, 6, 7, 5, 6, 3],
    "u4": [1, 2, 3, 15, 0, 8, 7, 9, 14],
    "u6": [0, 1, 2, 63, 32, 17, 5, 40, 33],
    "i4": [-8, -1, 0, 7, 3, -5, 6],
}
# Where OpenVINO's CPU plugin has no Convert from the type to f32 (its reference does).
NO_CPU = {"u3", "u6", "u1"}


def saved(t: str, tmp_path, shape=None) -> tuple:
    values = np.array(VALUES[t], np.float32)
    if shape is not None:
        values = values[: int(np.prod(shape))].reshape(shape)
    const = opset1.constant(values, dtype=getattr(ov.Type, t), name="c")
    model = ov.Model([opset1.convert(const, "f32", name="cv")], [], "const")
    model.outputs[0].get_tensor().set_names({"y"})
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    return path, model, const


def same(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and values; NaN equals NaN, -0.0 differs from 0.0."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want)).all()


def check_f32(got: np.ndarray, model: ov.Model, t: str) -> None:
    """``got`` is the reference kernels' result and, but for f32 subnormals, which the
    plugin flushes to +0.0 (f8e8m0's 2^-127), the CPU plugin's."""
    out = [ov.Tensor(ov.Type.f32, [0])]
    model.evaluate(out, [])
    same(got, np.array(out[0].data, copy=True).reshape(tuple(out[0].shape)))
    if t not in NO_CPU:
        tiny = np.abs(got) < np.finfo(np.float32).tiny
        flushed = np.where(tiny & (got != 0), np.float32(0), got)
        same(flushed, np.asarray(CORE.compile_model(model, "CPU", CPU_CONFIG)([])[0]))


@pytest.mark.parametrize("t", VALUES)
def test_const_reads_as_openvino_wrote_it(t, tmp_path):
    path, model, const = saved(t, tmp_path)
    xml = path.read_text()
    assert f'element_type="{t}"' in xml
    assert f'precision="{"BIN" if t == "u1" else t.upper()}"' in xml
    et = ELEMENT_TYPES[t]
    count = len(VALUES[t])
    # The .bin holds exactly OpenVINO's bytes of the constant, sized as irrun counts them.
    raw = np.fromfile(path.with_suffix(".bin"), np.uint8)
    assert raw.size == element_types.byte_size(et, count)
    assert f'size="{raw.size}"' in xml
    np.testing.assert_array_equal(raw, np.asarray(const.get_data()).reshape(-1).view(np.uint8))
    if t in PACKED and t not in ("nf4", "f4e2m1"):  # the test's own packing agrees too
        decoded = element_types.decode(raw, et, count)
        np.testing.assert_array_equal(pack(decoded, t), raw)
    # irrun's Convert to f32 of its decoded elements is OpenVINO's.
    check_f32(np.asarray(irrun.load(path).run({})["y"]), model, t)


@pytest.mark.parametrize("t", ["f8e4m3", "u3", "u6", "f4e2m1", "nf4", "u2"])
def test_const_of_two_dims(t, tmp_path):
    path, model, _ = saved(t, tmp_path, (3, 3))
    check_f32(np.asarray(irrun.load(path).run({})["y"]), model, t)


def test_decoded_elements():
    """By hand: the codes and values each type's bytes stand for."""
    def dec(t, *raw):
        count = {"u3": 8, "u6": 4, "u2": 4}.get(t, 2 if PACKED.get(t) == 4 else 1)
        return element_types.decode(np.array(raw, np.uint8), ELEMENT_TYPES[t], count)

    assert dec("f8e4m3", 0x7E).astype(np.float32).tolist() == [448.0]
    assert np.isnan(dec("f8e4m3", 0x7F).astype(np.float32)).all()
    assert dec("f8e5m2", 0x7B).astype(np.float32).tolist() == [57344.0]
    assert dec("f8e5m2", 0xFC).astype(np.float32).tolist() == [-np.inf]
    assert dec("f8e8m0", 0x7F).astype(np.float32).tolist() == [1.0]
    assert dec("f8e8m0", 0x00).astype(np.float32).tolist() == [2.0**-127]
    assert dec("f4e2m1", 0xF7).astype(np.float32).tolist() == [6.0, -6.0]
    assert dec("nf4", 0xF0).view(np.uint8).tolist() == [0, 15]
    assert dec("nf4", 0xF0).dtype == element_types.NF4
    assert dec("u2", 0b11100100).tolist() == [0, 1, 2, 3]
    assert dec("u3", 0b00011011, 0b00011011, 0b00001111).tolist() == list(range(8))
    assert dec("u6", 0x01, 0x2F, 0x03).tolist() == [0, 1, 2, 63]


# Every precision schemas/ir.xsd lists (every name OpenVINO reads) but the dynamic ones,
# which irrun does not take.
NAMES = [n for n in schema._schema().precisions
         if n not in ("UNSPECIFIED", "undefined", "dynamic")]  # fmt: skip


def test_the_schema_lists_the_new_names():
    assert {"F8E4M3", "F8E5M2", "F8E8M0", "F4E2M1", "NF4", "U2", "U3", "U6"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_precision_openvino_reads(name):
    """Each is OpenVINO's type of that name."""
    et = element_types.from_precision(name)
    legacy = {"FP32": "f32", "FP16": "f16", "FP64": "f64", "BIN": "u1", "bin": "u1",
              "BOOL": "boolean"}  # fmt: skip
    assert et.name == getattr(ov.Type, legacy.get(name, name.lower())).get_type_name()


@pytest.mark.parametrize("name", ["F8E4M3", "F4E2M1", "NF4", "U3"])
def test_precisions_in_an_ir_file(name, tmp_path):
    """A port of such a precision loads (it was refused: 'F8E4M3' is not a port precision)."""
    t = name.lower()
    path, _, _ = saved(t, tmp_path)
    assert f'precision="{name}"' in path.read_text()
    irrun.load(path)


@pytest.mark.parametrize(
    ("t", "dtype"),
    [("f8e4m3", ml_dtypes.float8_e4m3fn), ("f8e5m2", ml_dtypes.float8_e5m2),
     ("f8e8m0", ml_dtypes.float8_e8m0fnu), ("bf16", ml_dtypes.bfloat16)],
)  # fmt: skip
def test_input_and_output_of_a_small_float(t, dtype, tmp_path):
    """A model with an f8 input and an f8 output: the arrays are ml_dtypes'."""
    from support.ov_packed import array, tensor

    p = opset1.parameter([6], getattr(ov.Type, t), name="x")
    p.output(0).get_tensor().set_names({"x"})
    y = opset1.convert(opset1.convert(p, "f32"), t)
    y.output(0).get_tensor().set_names({"y"})
    model = ov.Model([y, opset1.convert(p, "f32")], [p])
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    x = np.array([0.5, -2, 3, 0.125, 4, -0.25], np.float32).astype(dtype)
    got = irrun.load(path).run({"x": x})
    request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
    request.infer({0: tensor(x, t)})
    want = array(request.get_output_tensor(0), t)
    assert np.asarray(got["y"]).dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(got["y"]).view(np.uint8), want.view(np.uint8))
    assert element_types.of_array(x).name == t


def test_of_array_names_the_new_types():
    assert element_types.of_array(np.zeros(2, ml_dtypes.float4_e2m1fn)).name == "f4e2m1"
    assert element_types.of_array(np.zeros(2, element_types.NF4)).name == "nf4"
    assert element_types.of_array(np.zeros(2, ml_dtypes.float8_e8m0fnu)).name == "f8e8m0"


def _one_input(t: str, tmp_path):
    p = opset1.parameter([3], getattr(ov.Type, t), name="x")
    p.output(0).get_tensor().set_names({"x"})
    y = opset1.convert(p, "f32")
    y.output(0).get_tensor().set_names({"y"})
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([y], [p]), path)
    return irrun.load(path)


@pytest.mark.parametrize(
    ("t", "values", "says"),
    [("f8e4m3", [1, 2, 1000], "value 1000.0 is out of f8e4m3's range (it would become nan)"),
     ("f8e5m2", [1, 2, 1e6], "value 1000000.0 is out of f8e5m2's range (it would become inf)"),
     ("f4e2m1", [1, 2, 100], "value 100.0 is out of f4e2m1's range (it would become 6.0)"),
     ("f8e8m0", [1, -2, 4], "value -2.0 is out of f8e8m0's range"),
     ("nf4", [1, 0, 0.5], "nf4 elements are 4-bit codes, not numbers")],
)  # fmt: skip
def test_cast_to_a_small_float_input_refuses_what_it_cannot_hold(t, values, says, tmp_path):
    model = _one_input(t, tmp_path)
    with pytest.raises(irrun.IrrunError, match=re.escape(says)):
        model.run({"x": np.array(values, np.float32)}, cast=True)


@pytest.mark.parametrize("t", ["f8e4m3", "f8e5m2", "f4e2m1", "f8e8m0"])
def test_cast_to_a_small_float_input_keeps_what_it_holds(t, tmp_path):
    got = _one_input(t, tmp_path).run({"x": np.array([1, 0.5, 4], np.float32)}, cast=True)
    np.testing.assert_array_equal(got["y"], [1, 0.5, 4])


def test_nf4_input_codes(tmp_path):
    """nf4 inputs are codes; only the low 4 bits of each count, as in a packed tensor."""
    codes = np.array([0, 7, 15 + 16], np.uint8).view(element_types.NF4)
    got = _one_input("nf4", tmp_path).run({"x": codes})
    np.testing.assert_array_equal(got["y"], [-1, 0, 1])
