"""Const decoding and Convert, against the files and results OpenVINO produces.

Each element type is written by OpenVINO itself (``ov.save_model``) and read
back by irrun; the decoded values must be the ones the test constructed, and
the values after a Convert to f32 must be what OpenVINO's CPU plugin computes.
Broken weights (a Const reaching past the end of the ``.bin``, a size too
small for the shape) must be errors that name the layer, as they are for
OpenVINO.  Finally irrun's Convert is compared with the CPU plugin's for the
conversions pooling models need, out-of-range values, NaN and halves included.
"""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import openvino as ov
import pytest
from openvino import opset1
from support.ov_oneop import CPU_CONFIG

import irrun
from irrun.ir import weights
from irrun.ops.convert import convert

CORE = ov.Core()

F32_SPECIALS = [0.0, -0.0, 1.5, -2.25, 0.1, np.inf, -np.inf, np.nan]


def _ints(dtype) -> list[int]:
    info = np.iinfo(dtype)
    values = [info.min, info.max, 0, 1, info.max - 1, 42, info.min + 1]
    if info.min < 0:
        values += [-1, -42]
    return values


# (OpenVINO type, values as constructed, dtype irrun decodes to, shape): odd element counts
CASES = {
    "f64": ([*F32_SPECIALS, 1e308, -5e-324, np.pi], np.float64, (11,)),
    "f32": ([*F32_SPECIALS, 3.4028235e38, -1e-45, 1e-38], np.float32, (11,)),
    "f16": ([*F32_SPECIALS, 65504.0, -6e-08, 6.1e-05], np.float16, (11,)),
    # 2^-133 is bf16's smallest subnormal, 3.3895314e38 its largest finite value
    "bf16": ([*F32_SPECIALS, 3.3895314e38, -(2.0**-133), 1.00390625], ml_dtypes.bfloat16, (11,)),
    "i64": ([*_ints(np.int64), 2**40 + 3, -(2**33)], np.int64, (11,)),
    "i32": (_ints(np.int32), np.int32, (3, 3)),
    "i16": (_ints(np.int16), np.int16, (9,)),
    "i8": (_ints(np.int8), np.int8, (1, 9)),
    "u64": ([*_ints(np.uint64), 2**63, 2**40 + 3], np.uint64, (9,)),
    "u32": (_ints(np.uint32), np.uint32, (7,)),
    "u16": (_ints(np.uint16), np.uint16, (7, 1)),
    "u8": (_ints(np.uint8), np.uint8, (7,)),
    "boolean": ([True, False, True, True, False], np.bool_, (5,)),
    # u1: most significant bit first; 11 and 15 bits leave a byte half used
    "u1": ([1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0], np.uint8, (11,)),
    "u1_2d": ([1, 1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 1], np.uint8, (3, 5)),
    # u4/i4: low nibble first
    "u4": ([1, 2, 3, 15, 0, 8, 7, 9, 14, 5, 6, 10, 11, 12, 13], np.uint8, (3, 5)),
    "i4": ([-8, -1, 7, 0, 3, -5, 6, 1, -2, 2, -3, 4, -4, 5, -7], np.int8, (5, 3)),
    "i4_short": ([-8, -1, 7], np.int8, (3,)),
}
PACKED_BYTES = {  # the .bin bytes OpenVINO writes, worked out by hand
    "u1": "b1c0",  # 1011 0001, 110x xxxx
    "u1_2d": "d2e6",  # 1101 0010, 1110 011x
    "i4_short": "f807",  # -8=0x8 low, -1=0xF high; 7
}


def ov_type(case: str) -> ov.Type:
    return getattr(ov.Type, case.split("_")[0])


def expected_values(case: str) -> np.ndarray:
    values, dtype, shape = CASES[case]
    if dtype == ml_dtypes.bfloat16:
        return np.array(values, np.float64).astype(dtype).reshape(shape)
    return np.array(values, dtype).reshape(shape)


def ov_input(case: str) -> np.ndarray:
    """What the test hands OpenVINO: exactly representable in the target type."""
    expected = expected_values(case)
    if expected.dtype == ml_dtypes.bfloat16:
        return expected.astype(np.float32)
    return expected


def make_constant(case: str) -> ov.Node:
    if case == "f64":
        # opset1.constant rounds f64 values through f32 (1e308 -> inf); ov.op.Constant does not
        const = ov.op.Constant(ov_input(case))
        const.set_friendly_name("c")
    else:
        const = opset1.constant(ov_input(case), dtype=ov_type(case), name="c")
    assert const.get_output_element_type(0) == ov_type(case)
    return const


def flushed(x: np.ndarray) -> np.ndarray:
    """``x`` with subnormals and -0.0 made +0.0, as the CPU plugin returns f32/bf16 constants."""
    tiny = np.finfo(np.float32).tiny
    return np.where((np.abs(x) < tiny) & ~np.isnan(x), np.float32(0), x)


def assert_identical(got: np.ndarray, want: np.ndarray) -> None:
    """Same dtype, shape and values; NaN equals NaN and -0.0 differs from 0.0."""
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    if want.dtype == ml_dtypes.bfloat16:
        got, want = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        assert (np.signbit(got) == np.signbit(want)).all()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """case -> path of ``Const "c" -> Convert(f32) "cv" -> Result "r"`` saved by OpenVINO."""
    paths: dict[str, Path] = {}

    def get(case: str) -> Path:
        if case not in paths:
            const = make_constant(case)
            cv = opset1.convert(const, "f32", name="cv")
            model = ov.Model([opset1.result(cv, name="r")], [], "const")
            path = tmp_path_factory.mktemp(case) / "const.xml"
            ov.save_model(model, path, compress_to_fp16=False)
            paths[case] = path
        return paths[case]

    return get


@pytest.mark.parametrize("case", CASES)
def test_const_decodes_to_the_constructed_values(saved, case):
    path = saved(case)
    xml = path.read_text()
    assert f'element_type="{case.split("_")[0]}"' in xml
    decoded = irrun.load(path).run({}, outputs=["c"])["c"]
    assert_identical(decoded, expected_values(case))


@pytest.mark.parametrize("case", PACKED_BYTES)
def test_packed_bytes_as_openvino_writes_them(saved, case):
    assert saved(case).with_suffix(".bin").read_bytes().hex() == PACKED_BYTES[case]


@pytest.mark.parametrize("case", CASES)
def test_const_converted_to_f32_matches_openvino(saved, case):
    path = saved(case)
    want = CORE.compile_model(path, "CPU", CPU_CONFIG)({})[0]
    got = irrun.load(path).run({})["r"]
    got = np.asarray(got)
    if case in ("f32", "bf16"):
        # The CPU plugin hands back f32 and bf16 constants with subnormals and -0.0 as
        # +0.0 (a Parameter's values come through unchanged); irrun keeps them.
        assert_identical(flushed(got), want)
    else:
        assert_identical(got, want)


@pytest.mark.parametrize("case", ["f32", "f16", "i32", "i16", "i8", "u16", "u8", "boolean"])
def test_const_to_result_matches_openvino(tmp_path, case):
    """A Const straight into a Result, for the types the CPU plugin returns unchanged.

    (It runs i64, u64 and u32 as i32, saturating; f64 as f32; packed types not at all.)
    """
    const = make_constant(case)
    ov.save_model(ov.Model([opset1.result(const, name="r")], []), tmp_path / "m.xml",
                  compress_to_fp16=False)  # fmt: skip
    want = CORE.compile_model(tmp_path / "m.xml", "CPU", CPU_CONFIG)({})[0]
    got = np.asarray(irrun.load(tmp_path / "m.xml").run({})["r"])
    assert_identical(got, expected_values(case))
    assert_identical(flushed(got) if case == "f32" else got, want)


# --- compress_to_fp16 (ov.save_model's default) -------------------------------------------------


def test_default_fp16_compression_runs_like_openvino(tmp_path):
    """f32 weights saved as an f16 Const plus a decompressing Convert, into a MaxPool."""
    weights = np.array(
        [[[0.1, -2.5, 1e-3, 70000.0, 3.14159, -0.0, 1e-9, 6e-6, -65519.0, 2049.0, 1.0 / 3]]],
        np.float32,
    )
    const = opset1.constant(weights, name="w")
    pool = opset1.max_pool(const, [1], [0], [0], [1], name="pool")  # identity on the values
    ov.save_model(ov.Model([opset1.result(pool, name="out")], []), tmp_path / "m.xml")
    xml = (tmp_path / "m.xml").read_text()
    assert re.search(r'type="Const".*\n.*element_type="f16"', xml)
    assert 'type="Convert"' in xml and 'destination_type="f32"' in xml
    want = CORE.compile_model(tmp_path / "m.xml", "CPU", CPU_CONFIG)({})[0]
    model = irrun.load(tmp_path / "m.xml")
    assert model.validate() == []
    got = model.run({})["out"]
    assert_identical(np.asarray(got), want)
    # f16 rounding, with values beyond f16's range clamped to its largest finite value
    assert want[0, 0, 3] == 65504.0 and want[0, 0, 8] == -65504.0
    assert want[0, 0, 0] == np.float32(np.float16(0.1))


def test_default_fp16_compression_of_a_result_constant(tmp_path):
    weights = np.linspace(-3, 3, 7, dtype=np.float32)
    const = opset1.constant(weights, name="w")
    ov.save_model(ov.Model([opset1.result(const, name="out")], []), tmp_path / "m.xml")
    assert 'element_type="f16"' in (tmp_path / "m.xml").read_text()
    want = CORE.compile_model(tmp_path / "m.xml", "CPU", CPU_CONFIG)({})[0]
    model = irrun.load(tmp_path / "m.xml")
    # OpenVINO writes precision="FP16" on this Convert's f32 output: not a warning either.
    assert model.validate() == []
    assert_identical(np.asarray(model.run({})["out"]), want)
    assert_identical(want, weights.astype(np.float16).astype(np.float32))


# --- broken weights -----------------------------------------------------------------------------


@pytest.fixture
def two_consts(tmp_path) -> Path:
    """Const "b" (u1, 11 bits) then Const "a" (f32, 5 values, unaligned) in one .bin."""
    a = opset1.constant(np.arange(5, dtype=np.float32), name="a")
    b = opset1.constant(np.array(CASES["u1"][0], np.uint8), dtype=ov.Type.u1, name="b")
    outs = [opset1.result(a, name="ra"), opset1.result(opset1.convert(b, "f32"), name="rb")]
    ov.save_model(ov.Model(outs, [], "two"), tmp_path / "m.xml", compress_to_fp16=False)
    xml = (tmp_path / "m.xml").read_text()
    assert 'element_type="u1" shape="11" offset="0" size="2"' in xml
    assert 'element_type="f32" shape="5" offset="2" size="20"' in xml
    assert (tmp_path / "m.bin").stat().st_size == 22
    return tmp_path / "m.xml"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


BROKEN = {
    "offset past the end": ('offset="2" size="20"', 'offset="3" size="20"', "a"),
    "size past the end": ('offset="2" size="20"', 'offset="2" size="21"', "a"),
    "offset far past the end": ('offset="2" size="20"', 'offset="1000" size="20"', "a"),
    "size too small": ('offset="2" size="20"', 'offset="2" size="19"', "a"),
    "size too small, packed": ('offset="0" size="2"', 'offset="0" size="1"', "b"),
    "size too small for the shape": ('shape="5" offset="2"', 'shape="6" offset="2"', "a"),
    "packed shape too large": ('shape="11" offset="0"', 'shape="17" offset="0"', "b"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_broken_weights_are_errors_naming_the_layer(two_consts, case):
    old, new, layer = BROKEN[case]
    _edit(two_consts, old, new)
    with pytest.raises(RuntimeError):  # OpenVINO refuses the file too
        CORE.read_model(two_consts)
    with pytest.raises(irrun.IrrunError) as info:
        irrun.load(two_consts)
    assert info.value.layer is not None and info.value.layer.name == layer
    assert f"'{layer}'" in str(info.value)
    errors = [d for d in irrun.validate(two_consts) if d.level == "error"]
    assert [(d.code, d.layer.name) for d in errors] == [("bad-weights", layer)]


def test_missing_weights_file(two_consts):
    two_consts.with_suffix(".bin").unlink()
    with pytest.raises(RuntimeError):
        CORE.read_model(two_consts)
    # One error about the file, at the first Const ("b"), counting both: not one per Const.
    line = two_consts.read_text().splitlines().index(
        next(t for t in two_consts.read_text().splitlines() if 'element_type="u1"' in t)) + 1
    said = (f"weights file {two_consts.with_suffix('.bin')} does not exist (2 Const layers read "
            "from it; give its path with --weights, or weights= in Python)")  # fmt: skip
    with pytest.raises(irrun.IrrunError) as info:
        irrun.load(two_consts)
    assert str(info.value) == f"{two_consts}:{line}: {said}"
    errors = [d for d in irrun.validate(two_consts) if d.level == "error"]
    assert [(d.code, d.line, d.layer, d.message) for d in errors] == [
        ("bad-weights", line, None, said)
    ]  # fmt: skip


def test_larger_size_than_needed_is_accepted(two_consts):
    """OpenVINO ignores bytes beyond what the shape needs; so does irrun."""
    _edit(two_consts, 'offset="0" size="2"', 'offset="0" size="22"')
    want = CORE.compile_model(two_consts, "CPU", CPU_CONFIG)({})
    got = irrun.load(two_consts).run({})
    assert_identical(np.asarray(got["ra"]), want[0])
    assert_identical(np.asarray(got["ra"]), np.arange(5, dtype=np.float32))
    assert_identical(np.asarray(got["rb"]), want[1])


# --- memory mapping -----------------------------------------------------------------------------


def _bases(array: np.ndarray):
    while isinstance(array, np.ndarray):
        yield array
        array = array.base


def test_weights_are_memory_mapped(two_consts):
    model = irrun.load(two_consts)
    # What the executor holds: Model.run hands out writable copies of such read-only views.
    a = next(n for n in model._nodes.values() if n.layer.name == "a").attrs.value
    assert not a.flags.writeable
    assert_identical(np.asarray(a), np.arange(5, dtype=np.float32))
    maps = [b for b in _bases(a) if isinstance(b, np.memmap)]
    assert maps, "the decoded constant is not a view of a memory map"
    # the map is the .bin file itself, and the constant starts at its offset 2
    backing = maps[-1]
    assert Path(backing.filename).samefile(two_consts.with_suffix(".bin"))
    assert np.shares_memory(a, backing)
    start = np.asarray(a).__array_interface__["data"][0]
    assert start == backing.__array_interface__["data"][0] + 2


def _unaligned_linear(tmp_path: Path, out: int = 256, inner: int = 128) -> Path:
    """y = x @ w.T with an f32 weight [out, inner] that OpenVINO stores at offset 3, after
    a u8 constant of 3 bytes (the unaligned layout of optimum-intel's Llama exports)."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((out, inner)).astype(np.float32)
    x = opset1.parameter([1, inner], np.float32, name="x")
    odd = opset1.convert(opset1.constant(np.array([1, 2, 3], np.uint8)), "f32")
    y = opset1.matmul(x, opset1.constant(w), False, True)
    outs = [opset1.result(y, name="y"), opset1.result(odd, name="odd")]
    ov.save_model(ov.Model(outs, [x], "linear"), tmp_path / "m.xml", compress_to_fp16=False)
    xml = (tmp_path / "m.xml").read_text()
    assert f'element_type="f32" shape="{out}, {inner}" offset="3"' in xml, xml
    np.save(tmp_path / "w.npy", w)
    return tmp_path / "m.xml"


def test_large_unaligned_weights_are_read_aligned(tmp_path):
    """A weight at an offset that is no multiple of its element's size is read into
    aligned, read-only memory of its own (NumPy gives unaligned arrays to no BLAS), with
    the same values; the products match OpenVINO's."""
    xml = _unaligned_linear(tmp_path)
    w = np.load(tmp_path / "w.npy")
    assert w.nbytes >= weights.ALIGNED_FROM
    model = irrun.load(xml)
    value = next(n.attrs.value for n in model._nodes.values()
                 if n.layer.type == "Const" and n.attrs.value.size == w.size)  # fmt: skip
    assert value.flags.aligned and value.ctypes.data % 4096 == 0
    assert not value.flags.writeable
    assert not any(isinstance(b, np.memmap) for b in _bases(value))
    assert_identical(np.asarray(value), w)
    x = np.random.default_rng(6).standard_normal((1, w.shape[1])).astype(np.float32)
    want = CORE.compile_model(xml, "CPU", CPU_CONFIG)(x)[0]
    got = model.run({"x": x})["y"]
    # f32 sums of 128 products in BLAS's order and oneDNN's: a few ulps of the sums' scale
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * (np.abs(x) @ np.abs(w).T).max())
    np.testing.assert_array_equal(got, x @ w.T)  # the same BLAS product as on the values


def test_small_unaligned_weights_stay_views(tmp_path):
    """Below ALIGNED_FROM an unaligned weight stays a view of the map: copying it would
    cost more than NumPy's unaligned loops do."""
    xml = _unaligned_linear(tmp_path, out=8, inner=8)
    value = next(n.attrs.value for n in irrun.load(xml)._nodes.values()
                 if n.layer.type == "Const" and n.attrs.value.size == 64)  # fmt: skip
    assert not value.flags.aligned
    assert any(isinstance(b, np.memmap) for b in _bases(value))


# --- Convert against the CPU plugin -------------------------------------------------------------

FLOATS = np.array(
    [
        0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.7, -2.7, 0.49999997,
        127.0, 127.5, 128.0, -128.0, -128.5, -129.0, 255.0, 255.5, 256.0, 300.0, -1.0, -300.0,
        65504.0, 65519.0, 65520.0, 70000.0, 2049.0, 2051.0, 6e-08, 1e-45, -1e-45,
        2147483520.0, -2147483648.0, 2147483648.0, 3e9, -3e9, 1e20, -1e20, 3.4028235e38,
        np.inf, -np.inf, np.nan, -np.nan,
    ],
    np.float32,
)  # fmt: skip
INTS = np.array(
    [0, 1, -1, 127, 128, -128, -129, 255, 256, 300, -300, 65535, 65536, -65536, 2**31 - 1,
     -(2**31) + 1, 1000000007],
    np.int32,
)  # fmt: skip


def ov_convert(x: np.ndarray, src: ov.Type, dst: str) -> np.ndarray:
    param = opset1.parameter(list(x.shape), src, name="x")
    model = ov.Model([opset1.result(opset1.convert(param, dst), name="y")], [param])
    return CORE.compile_model(model, "CPU", CPU_CONFIG)(x)[0]


@pytest.mark.parametrize(
    ("src", "dst", "dtype"),
    [
        ("f32", "i32", np.int32),
        ("f32", "u8", np.uint8),
        ("f32", "i8", np.int8),
        ("f32", "boolean", np.bool_),
        ("f32", "f16", np.float16),
        ("f32", "i16", np.int16),
        ("f32", "u16", np.uint16),
        ("f32", "u32", np.uint32),
        ("i32", "u8", np.uint8),
        ("i32", "i8", np.int8),
        ("i32", "i16", np.int16),
        ("i32", "u16", np.uint16),
        ("i32", "f32", np.float32),
        ("i32", "f16", np.float16),
    ],
)
def test_convert_matches_cpu_plugin(src, dst, dtype):
    x = FLOATS if src == "f32" else INTS
    want = ov_convert(x, getattr(ov.Type, src), dst)
    got = convert(x, np.dtype(dtype))
    assert_identical(got, want)


@pytest.mark.parametrize(
    ("x", "dtype", "want"),
    [
        # by hand: truncation toward zero, then two's-complement wrap
        ([2.7, -2.7, 300.0, -1.0, 255.9], np.uint8, [2, 254, 44, 255, 255]),
        ([127.9, 128.0, -128.9, -129.0], np.int8, [127, -128, -128, 127]),
        # NaN, infinities and values beyond int32 are int32's minimum, then wrapped
        ([np.nan, np.inf, -np.inf, 3e9], np.int32, [-(2**31)] * 4),
        ([np.nan, np.inf, 3e9], np.uint8, [0, 0, 0]),
        ([np.nan, 0.0, -0.0, 1e-45, -np.inf], np.bool_, [False, False, False, True, True]),
        ([65519.0, 65520.0, 2049.0, 2051.0], np.float16, [65504.0, np.inf, 2048.0, 2052.0]),
    ],
)
def test_convert_by_hand(x, dtype, want):
    got = convert(np.array(x, np.float32), np.dtype(dtype))
    assert_identical(got, np.array(want).astype(dtype))


def test_convert_of_an_ir_model_matches_openvino(tmp_path):
    """The Convert layer as read from an IR file, not just the kernel."""
    x = opset1.parameter([FLOATS.size], ov.Type.f32, name="x")
    outs = [opset1.result(opset1.convert(x, t), name=f"y_{t}") for t in ("i32", "u8", "boolean")]
    ov.save_model(ov.Model(outs, [x]), tmp_path / "m.xml", compress_to_fp16=False)
    want = CORE.compile_model(tmp_path / "m.xml", "CPU", CPU_CONFIG)(FLOATS)
    got = irrun.load(tmp_path / "m.xml").run({"x": FLOATS})
    for i, t in enumerate(("i32", "u8", "boolean")):
        assert_identical(np.asarray(got[f"y_{t}"]), want[i])
