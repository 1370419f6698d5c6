"""String tensors and StringTensorPack/StringTensorUnpack against OpenVINO's CPU plugin
(``evaluate`` runs neither op): string constants as ``ov.save_model`` packs them in the
.bin, string inputs and outputs, bytes that are no UTF-8; a case by hand; the shape
rules against OpenVINO's; what irrun refuses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import irrun
from irrun.errors import IrrunError
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.element_types import ELEMENT_TYPES, STRING, as_strings, decode_strings
from irrun.ir.registry import KernelError, ShapeError, TensorInfo, resolve

ov = pytest.importorskip("openvino")
import openvino.op as ov_op  # noqa: E402
from openvino import opset1, opset15  # noqa: E402
from support.ov_oneop import CORE, CPU_CONFIG  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

STRING_T = ELEMENT_TYPES["string"]
NO_HEALTH = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


def _bytes(values) -> list[bytes]:
    return [v if isinstance(v, bytes) else v.encode("utf-8", "surrogateescape")
            for v in np.asarray(values, object).reshape(-1).tolist()]  # fmt: skip


def _model(build, inputs):
    """``build(*parameters)``'s outputs as a model; inputs in0, in1, ..., outputs out0, ..."""
    params = []
    for i, x in enumerate(inputs):
        et = ov.Type.string if x.dtype.kind in "USO" else ov.Type(x.dtype)
        p = opset1.parameter(list(x.shape), et)
        p.output(0).get_tensor().set_names({f"in{i}"})
        params.append(p)
    outs = build(*params)
    outs = outs if isinstance(outs, list) else list(outs.outputs())
    for k, o in enumerate(outs):
        if not o.get_names():  # a Parameter's output keeps its input's name
            o.get_tensor().set_names({f"out{k}"})
    return ov.Model(outs, params, "strings")


def _cpu(model, inputs) -> list:
    """The CPU plugin's outputs: string tensors as lists of bytes (as OpenVINO holds them)."""
    request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
    request.infer(inputs)
    out = []
    for k, o in enumerate(model.outputs):
        t = request.get_output_tensor(k)
        if o.get_element_type() == ov.Type.string:
            out.append(np.array(t.bytes_data, object).reshape(tuple(t.shape)))
        else:
            out.append(np.array(t.data, copy=True))
    return out


def _irrun(model, inputs, tmp_path) -> list:
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    got = irrun.load(path).run({f"in{i}": x for i, x in enumerate(inputs)})
    return list(got.values())


def _same(got, want):
    assert got.shape == want.shape
    if want.dtype == object:  # bytes from OpenVINO: irrun's str encode back to them
        assert got.dtype == STRING
        assert _bytes(got) == list(want.reshape(-1))
    else:
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


WORDS = ["", "a", "Intel", "OpenVINO", "héllo wörld", "日本語", "emoji 🙂", "tab\tnew\nline",
         "nul\x00inside", "  spaces  "]  # fmt: skip


def _strings(rng, shape):
    return np.array([WORDS[i] for i in rng.integers(0, len(WORDS), int(np.prod(shape)))],
                    dtype=object).reshape(shape)  # fmt: skip


# --------------------------------------------------------------------------- constants


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0), (2, 3), (1, 2, 2)], ids=str)
def test_string_constant_as_openvino_packs_it(shape, tmp_path):
    """A Const of strings saved by OpenVINO reads back as its values (and through a
    StringTensorUnpack, as the plugin's); the .bin holds a count, offsets, the bytes."""
    rng = np.random.default_rng(len(shape))
    values = _strings(rng, shape)
    tensor = ov.Tensor(np.array(values.tolist(), dtype=str).reshape(shape))
    c = ov_op.Constant(tensor)
    model = ov.Model([c.output(0), *opset15.string_tensor_unpack(c).outputs()], [], "const")
    got = _irrun(model, [], tmp_path)
    if 0 in shape:  # the plugin dies of a floating point exception on empty string tensors
        want = [np.empty(shape, object), np.empty(shape, np.int32), np.empty(shape, np.int32),
                np.empty(0, np.uint8)]  # fmt: skip
    else:
        want = _cpu(model, [])
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    assert got[0].tolist() == values.tolist()
    raw = np.fromfile(tmp_path / "m.bin", np.uint8)
    encoded = _bytes(values)
    assert raw[:4].view("<i4")[0] == len(encoded)
    assert decode_strings(raw, len(encoded))[0].tolist() == values.reshape(-1).tolist()
    assert raw.size == 4 * (len(encoded) + 2) + sum(map(len, encoded))


def test_string_constant_of_bytes_no_utf8(tmp_path):
    """Bytes that are no UTF-8 survive: irrun holds them as surrogate escapes."""
    raw = [b"\xff\xfe", b"ok", b"\xc3"]
    c = ov_op.Constant(ov.Tensor(np.array(raw)))
    model = ov.Model([c.output(0), *opset15.string_tensor_unpack(c).outputs()], [], "const")
    got = _irrun(model, [], tmp_path)
    for g, w in zip(got, _cpu(model, []), strict=True):
        _same(g, w)
    assert got[0].tolist() == ["\udcff\udcfe", "ok", "\udcc3"]


def test_string_constant_bad_bytes(tmp_path):
    c = ov_op.Constant(ov.Tensor(np.array(["ab", "cde"])))
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([c.output(0)], [], "const"), path)
    assert irrun.validate(path) == []
    data = (tmp_path / "m.bin").read_bytes()
    for broken, message in (
        (b"\x03" + data[1:], "hold 3 strings, the shape 2"),
        (data[:4] + b"\x01" + data[5:], "not increasing from 0"),
        (data[:12] + b"\x09" + data[13:], "not increasing from 0"),
    ):  # fmt: skip
        (tmp_path / "m.bin").write_bytes(broken)
        found = irrun.validate(path)
        assert any(d.level == "error" and message in d.message for d in found), found
    text = path.read_text()
    (tmp_path / "m.bin").write_bytes(data)
    assert 'size="21"' in text  # 4 + 3 * 4 + 5
    path.write_text(text.replace('size="21"', 'size="12"'))
    found = irrun.validate(path)
    assert any("too small" in d.message for d in found), found


# --------------------------------------------------------------------------- inputs, outputs


def test_string_parameter_to_result(tmp_path):
    """A string input goes through to an output; <U, S and object arrays are taken."""
    x = np.array([["a", "héllo"], ["", "日本"]])
    model = _model(lambda p: [p.output(0)], [x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    m = irrun.load(path)
    assert m.inputs[0].element_type == "string"
    for feed in (x, x.astype(object), np.char.encode(x, "utf-8")):
        (got,) = m.run({"in0": feed}).values()
        _same(got, _cpu(model, [x])[0])
    with pytest.raises(IrrunError, match="input 'in0' is a string tensor: int64 values are not strings"):
        m.run({"in0": np.zeros((2, 2), np.int64)})
    with pytest.raises(IrrunError, match="has shape"):
        m.run({"in0": np.array(["a"])})
    with pytest.raises(IrrunError, match="int 1 is not a string"):
        m.run({"in0": np.array([["a", 1], ["b", "c"]], object)})


def test_string_random_inputs(tmp_path):
    x = np.array(["a", "b", "c"])
    model = _model(lambda p: list(opset15.string_tensor_unpack(p).outputs()), [x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    m = irrun.load(path)
    feeds = m.random_inputs(seed=3)
    assert feeds["in0"].dtype == STRING and feeds["in0"].shape == (3,)
    assert all(isinstance(s, str) and len(s) <= 8 for s in feeds["in0"].tolist())
    got = list(m.run(feeds).values())
    for g, w in zip(got, _cpu(model, [np.array(feeds["in0"].tolist())]), strict=True):
        _same(g, w)


def test_string_convert_refused(tmp_path):
    """OpenVINO reads a Convert of strings but runs none: irrun refuses it at load."""
    x = np.array(["1", "2"])
    for build in (lambda p: opset1.convert(p, "f32"),
                  lambda p: opset1.convert(opset15.string_tensor_unpack(p).output(0), "string")):
        model = _model(lambda p, build=build: [build(p).output(0)], [x])
        with pytest.raises(RuntimeError):
            _cpu(model, [x])
        path = tmp_path / "m.xml"
        ov.save_model(model, path)
        with pytest.raises(IrrunError, match="OpenVINO runs no Convert of string tensors"):
            irrun.load(path)


# --------------------------------------------------------------------------- Unpack


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 3), (1, 2, 2, 2)], ids=str)
def test_unpack_matches_cpu(shape, tmp_path):
    x = _strings(np.random.default_rng(7 + len(shape)), shape)
    model = _model(lambda p: opset15.string_tensor_unpack(p), [x.astype(str)])
    got = _irrun(model, [x], tmp_path)
    if 0 in shape:  # the plugin dies of a floating point exception on empty string tensors
        want = [np.empty(shape, np.int32), np.empty(shape, np.int32), np.empty(0, np.uint8)]
    else:
        want = _cpu(model, [x.astype(str)])
    for g, w in zip(got, want, strict=True):
        _same(g, w)


@settings(max_examples=25, deadline=None, suppress_health_check=NO_HEALTH)
@given(values=st.lists(st.text(max_size=6), min_size=1, max_size=12), data=st.data())
def test_unpack_pack_hypothesis(values, data, tmp_path):
    """Unpack of any text, and Pack of ascending ranges of its bytes, against the plugin."""
    raw = [v.encode("utf-8", "surrogatepass") for v in values]
    feed = ov.Tensor(ov.Type.string, [len(raw)])
    feed.bytes_data = raw
    model = _model(lambda p: opset15.string_tensor_unpack(p), [np.array(values)])
    request = CORE.compile_model(model, "CPU", CPU_CONFIG).create_infer_request()
    request.infer([feed])
    want = [np.array(request.get_output_tensor(k).data, copy=True) for k in range(3)]
    got = _irrun(model, [as_strings(np.array(raw, object))], tmp_path)
    for g, w in zip(got, want, strict=True):
        _same(g, w)
    symbols = want[2]
    n = data.draw(st.integers(0, 8))
    cuts = sorted(data.draw(st.lists(st.integers(0, symbols.size), min_size=n, max_size=n)))
    lengths = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    begins = np.array(cuts, np.int64)
    ends = np.maximum.accumulate(np.minimum(begins + np.array(lengths, np.int64), symbols.size)) \
        if n else begins  # fmt: skip
    inputs = [begins, ends, symbols]
    pack = _model(lambda *p: opset15.string_tensor_pack(*p), inputs)
    (got,) = _irrun(pack, inputs, tmp_path)
    if n:
        _same(got, _cpu(pack, inputs)[0])
    assert _bytes(got) == [symbols[b:e].tobytes() for b, e in zip(begins, ends, strict=True)]


# --------------------------------------------------------------------------- Pack


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(), (0,), (6,), (2, 3), (3, 0, 2)], ids=str)
def test_pack_matches_cpu(shape, index, tmp_path):
    """Ascending ranges, overlapping, empty, leaving bytes out."""
    rng = np.random.default_rng(len(shape))
    symbols = np.frombuffer("IntelOpenVINO héllo 日本".encode(), np.uint8).copy()
    count = int(np.prod(shape))
    begins = np.sort(rng.integers(0, symbols.size + 1, count))
    ends = np.maximum.accumulate(np.minimum(begins + rng.integers(0, 6, count), symbols.size))
    begins, ends = begins.astype(index).reshape(shape), ends.astype(index).reshape(shape)
    inputs = [begins, ends, symbols]
    model = _model(lambda *p: opset15.string_tensor_pack(*p), inputs)
    (got,) = _irrun(model, inputs, tmp_path)
    if 0 in shape:  # the plugin dies of a floating point exception on empty string tensors
        assert got.shape == shape and got.dtype == STRING
        return
    (want,) = _cpu(model, inputs)
    _same(got, want)


def test_pack_by_hand(tmp_path):
    """The specification's example, and a range that splits a UTF-8 character."""
    symbols = np.frombuffer(b"IntelOpenVINO\xc3\xa9", np.uint8).copy()
    inputs = [np.array([0, 5, 13, 15], np.int64), np.array([5, 13, 14, 15], np.int64), symbols]
    model = _model(lambda *p: opset15.string_tensor_pack(*p), inputs)
    (got,) = _irrun(model, inputs, tmp_path)
    assert got.tolist() == ["Intel", "OpenVINO", "\udcc3", ""]
    _same(got, _cpu(model, inputs)[0])
    x = np.array([["Intel", "OpenVINO"], ["", "é"]])
    unpack = _model(lambda p: opset15.string_tensor_unpack(p), [x])
    begins, ends, symbols = _irrun(unpack, [x], tmp_path)
    assert begins.tolist() == [[0, 5], [13, 13]] and ends.tolist() == [[5, 13], [13, 15]]
    assert symbols.tobytes() == b"IntelOpenVINO\xc3\xa9"


def test_pack_refuses_bad_ranges(tmp_path):
    """What OpenVINO's shape inference refuses (descending, negative, past the symbols);
    a begin past its end, which it does not check."""
    op = resolve("StringTensorPack", "opset15")
    symbols = np.zeros(4, np.uint8)
    for begins, ends, message in (
        ([0, 3, 1], [1, 3, 4], "begins must be in ascending order"),
        ([0, 1, 1], [3, 2, 4], "ends must be in ascending order"),
        ([-1, 0, 1], [1, 1, 1], "begins must not be negative"),
        ([0, 1, 1], [1, 1, 5], "ends must be at most the 4 symbols"),
    ):  # fmt: skip
        inputs = [np.array(begins, np.int32), np.array(ends, np.int32), symbols]
        with pytest.raises(KernelError, match=message):
            op.kernel(None, *inputs)
        # Constants: the shape rule, as OpenVINO's shape inference.
        infos = [TensorInfo((3,), ELEMENT_TYPES["i32"], x) for x in inputs[:2]]
        with pytest.raises(ShapeError, match=message):
            op.infer(None, [*infos, TensorInfo((4,), ELEMENT_TYPES["u8"])])
        # (OpenVINO's plugin refuses these where its shapes are dynamic, but at times
        # crashed the test process doing so: it is not run on them here.)
    with pytest.raises(KernelError, match="string 1 begins at 3, after its end 2"):
        op.kernel(None, np.array([0, 3], np.int32), np.array([2, 2], np.int32), symbols)


# --------------------------------------------------------------------------- shape rules


def test_pack_shape_rule():
    rule = resolve("StringTensorPack", "opset15")
    i32, i64, u8 = ELEMENT_TYPES["i32"], ELEMENT_TYPES["i64"], ELEMENT_TYPES["u8"]
    for b, e, s in (((2, 3), (2, 3), (10,)), ((2, DYNAMIC), (DYNAMIC, 3), (DYNAMIC,)),
                    (None, (4,), None), ((), (), (10,)), ((Interval(2, 5),), (Interval(3, 8),), (1,)),
                    (None, None, (3,))):  # fmt: skip
        params = [opset1.parameter(to_ov_shape(x), t) for x, t in ((b, ov.Type.i64), (e, ov.Type.i64),
                                                                     (s, ov.Type.u8))]  # fmt: skip
        want = from_ov_shape(opset15.string_tensor_pack(*params).get_output_partial_shape(0))
        (out,) = rule.infer(None, [TensorInfo(b, i64), TensorInfo(e, i64), TensorInfo(s, u8)])
        assert out.shape == want and out.element_type == STRING_T, (b, e, s)
    for infos, message in (
        ([TensorInfo((2,), i32), TensorInfo((2,), i64), TensorInfo((4,), u8)], "one element type"),
        ([TensorInfo((2,), i32), TensorInfo((3,), i32), TensorInfo((4,), u8)], "differ in shape"),
        ([TensorInfo((2,), i32), TensorInfo((2, 1), i32), TensorInfo((4,), u8)], "differ in shape"),
        ([TensorInfo((2,), i32), TensorInfo((2,), i32), TensorInfo((4, 1), u8)], "1-D"),
        ([TensorInfo((2,), i32), TensorInfo((2,), i32), TensorInfo((4,), ELEMENT_TYPES["i8"])],
         "does not take"),
        ([TensorInfo((2,), ELEMENT_TYPES["u32"]), TensorInfo((2,), ELEMENT_TYPES["u32"]),
          TensorInfo((4,), u8)], "does not take"),
    ):  # fmt: skip
        with pytest.raises(ShapeError, match=message):
            rule.infer(None, infos)


def test_unpack_shape_rule():
    rule = resolve("StringTensorUnpack", "opset15")
    for shape in ((2, 3), None, (), (Interval(1, 4), DYNAMIC)):
        node = opset15.string_tensor_unpack(opset1.parameter(to_ov_shape(shape), ov.Type.string))
        want = [(from_ov_shape(o.get_partial_shape()), o.get_element_type().get_type_name())
                for o in node.outputs()]  # fmt: skip
        got = rule.infer(None, [TensorInfo(shape, STRING_T)])
        assert [(i.shape, i.element_type.name) for i in got] == want
    # A constant's symbols have a known length, as OpenVINO's.
    values = np.array(["ab", "", "héllo"], object)
    node = opset15.string_tensor_unpack(ov_op.Constant(ov.Tensor(values.astype(str))))
    got = rule.infer(None, [TensorInfo((3,), STRING_T, values)])
    assert got[2].shape == from_ov_shape(node.get_output_partial_shape(2)) == (8,)
    with pytest.raises(ShapeError, match="does not take"):
        rule.infer(None, [TensorInfo((2,), ELEMENT_TYPES["u8"])])


def test_string_validate(tmp_path):
    x = np.array(["a", "bc"])
    model = _model(lambda p: list(opset15.string_tensor_unpack(p).outputs()), [x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    assert irrun.validate(path) == []
    text = path.read_text()
    path.write_text(text.replace('element_type="string"', 'element_type="u8"')
                    .replace('precision="STRING"', 'precision="U8"'))  # fmt: skip
    assert any(d.level == "error" for d in irrun.validate(path))


def _moves():
    from openvino import opset8

    c = opset1.constant
    return {
        "transpose": lambda p: opset1.transpose(p, c(np.array([1, 0]))),
        "gather": lambda p: opset8.gather(p, c(np.array([1, 0, 1])), c(np.array(1))),
        "concat": lambda p: opset1.concat([p, p], 0),
        "reshape": lambda p: opset1.reshape(p, c(np.array([-1])), False),
    }


@pytest.mark.parametrize("move", ["transpose", "gather", "concat", "reshape"])
def test_strings_through_data_movement(move, tmp_path):
    """String tensors through data-movement ops, one at a time, as the plugin moves them
    (a graph of several of them aborted the plugin)."""
    x = _strings(np.random.default_rng(5), (2, 3)).astype(str)
    build = _moves()[move]
    model = _model(lambda p: [build(p).output(0)], [x])
    for g, w in zip(_irrun(model, [x], tmp_path), _cpu(model, [x]), strict=True):
        _same(g, w)


def test_string_outputs_saved_without_pickle(tmp_path):
    """``irrun run -o out.npz``: string outputs as fixed-width strings, read back with no
    pickle; a trailing NUL, which those would drop, is refused."""
    import io

    from irrun.tools.common import write_npz

    out = io.BytesIO()
    strings = np.array([["a", "héllo"], ["", "\udcff"]], object)
    write_npz(out, {"s": strings, "n": np.arange(3)})
    back = np.load(io.BytesIO(out.getvalue()), allow_pickle=False)
    assert back["s"].tolist() == strings.tolist() and back["n"].tolist() == [0, 1, 2]
    with pytest.raises(IrrunError, match="ending in NUL"):
        write_npz(io.BytesIO(), {"s": np.array(["a\x00"], object)})


def test_string_compare_with_openvino(tmp_path, capsys):
    """``irrun compare --ref-backend openvino`` feeds string inputs to OpenVINO as bytes
    and compares string outputs element by element."""
    from irrun.cli import main
    from irrun.tools.compare_results import compare_arrays

    x = np.array(["a", "bc"])
    model = _model(lambda p: [p.output(0), *opset15.string_tensor_unpack(p).outputs()], [x])
    path = tmp_path / "m.xml"
    ov.save_model(model, path)
    assert main(["compare", str(path), "--ref-backend", "openvino"]) == 0
    assert "4 of 4 tensors passed" in capsys.readouterr().out
    r = compare_arrays(np.array(["a", "b", "c"], object), np.array(["a", "x", "c"], object))
    assert not r.passed and r.mismatches == 1 and r.worst == (1,)


def test_string_inputs_cast(tmp_path):
    """``cast=True`` and ``cast_inputs`` take str and bytes for a string input, no numbers."""
    x = np.array(["a", "b"])
    path = tmp_path / "m.xml"
    ov.save_model(_model(lambda p: list(opset15.string_tensor_unpack(p).outputs()), [x]), path)
    m = irrun.load(path)
    assert m.cast_inputs({"in0": np.array([b"a", b"b"])})["in0"].tolist() == ["a", "b"]
    assert list(m.run({"in0": x}, cast=True).values())[2].tolist() == [97, 98]
    with pytest.raises(IrrunError, match="not strings"):
        m.cast_inputs({"in0": np.array([1.0, 2.0])})
