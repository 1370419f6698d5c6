"""The IR writer over generated graphs, and ``encode`` against ``decode``, with hypothesis.

Random small models are built with OpenVINO's own op API (Parameters of random shapes
and types; elementwise, unary, MatMul, Reshape, Concat, Split, Convert, Gather,
Transpose, Select, If and Loop layers; constants of every common type, strings and bits;
decompression chains of compressed weights; tensor names with commas and other odd
characters; model rt_info)
and saved by ``ov.save_model``.  irrun reads each and writes it back: the records read
from the copy equal those of the original (but for line numbers), the ``.bin`` is the
same byte for byte, and OpenVINO computes bit-identical outputs from both files.
"""

from __future__ import annotations

import dataclasses
import filecmp
import tempfile
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from irrun.ir.element_types import ELEMENT_TYPES, decode, decode_strings, encode
from irrun.ir.reader import read_ir
from irrun.ir.records import IRDocument
from irrun.ir.weights import Weights
from irrun.ir.writer import write_ir

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

CPU = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": 1}
INPUT_TYPES = ("f32", "f16", "i32", "i64", "u8", "boolean")
FLOAT = ("f32", "f16")
NUMERIC = ("f32", "f16", "i32", "i64", "u8")
# Compressed weights' types, and the range of values each holds.
LOW = {"f16": (-8, 8), "bf16": (-8, 8), "i8": (-128, 127), "u8": (0, 255), "i4": (-8, 7),
       "u4": (0, 15)}  # fmt: skip
_OV_TYPE = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32", "i64": "i64", "u8": "u8",
            "i8": "i8", "i4": "i4", "u4": "u4", "boolean": "boolean"}  # fmt: skip
# Characters a tensor name may hold that XML and the names list must carry: the comma
# separates names (OpenVINO escapes it), the rest are ordinary in converted models.
NAME_CHARS = ",:/.-_ #[]()é\\"


def _type(name: str) -> Any:
    return getattr(ov.Type, _OV_TYPE[name])


@dataclasses.dataclass
class _Tensor:
    out: Any  # an ov Output
    et: str
    shape: tuple[int, ...]


def _values(draw: Any, et: str, shape: tuple[int, ...], low: int = -4, high: int = 4) -> list:
    n = int(np.prod(shape, dtype=np.int64))
    if et == "boolean":
        return draw(st.lists(st.booleans(), min_size=n, max_size=n))
    if et in ("f32", "f16", "bf16"):
        return draw(st.lists(st.integers(low * 4, high * 4), min_size=n, max_size=n))
    lo, hi = LOW.get(et, (low, high))
    return draw(st.lists(st.integers(lo, hi), min_size=n, max_size=n))


def _constant(draw: Any, et: str, shape: tuple[int, ...]) -> Any:
    values = _values(draw, et, shape)
    if et in ("f32", "f16", "bf16"):
        values = [v / 4 for v in values]  # exact quarters: no rounding in any float type
    return ov.op.Constant(_type(et), ov.Shape(list(shape)), values)


def _pick(draw: Any, pool: list[_Tensor], ets: tuple[str, ...] | None = None,
          min_rank: int = 0) -> _Tensor | None:  # fmt: skip
    fits = [
        t for t in pool if (t.et in ets if ets else t.et != "string") and len(t.shape) >= min_rank
    ]
    return draw(st.sampled_from(fits)) if fits else None


@st.composite
def models(draw: Any) -> tuple[Any, list[tuple[str, tuple[int, ...]]]]:
    """An ov.Model and its inputs' (type, shape)."""
    params, pool = [], []
    for i in range(draw(st.integers(1, 3))):
        # The first input f32 and not a scalar, for the layers that need one to grow on.
        et = "f32" if i == 0 else draw(st.sampled_from(INPUT_TYPES))
        dims = st.sampled_from([1, 2, 3, 4])
        shape = tuple(draw(st.lists(dims, min_size=1 if i == 0 else 0, max_size=3)))
        p = ops.parameter(list(shape), _type(et), name=f"in{i}")
        params.append(p)
        pool.append(_Tensor(p.output(0), et, shape))
    for _ in range(draw(st.integers(2, 10))):
        _grow(draw, pool)
    chosen = draw(st.lists(st.sampled_from(pool[len(params):] or pool), min_size=1, max_size=3,
                           unique_by=lambda t: id(t)))  # fmt: skip
    results = [ops.result(t.out) for t in chosen]
    names = iter(range(1000))
    for t in pool:
        if draw(st.integers(0, 3)) == 0:
            odd = draw(st.text(NAME_CHARS, min_size=1, max_size=4))
            t.out.get_tensor().set_names({f"t{next(names)}{odd}", f"alias{next(names)}"})
    model = ov.Model(results, params, "generated")
    if draw(st.booleans()):
        model.set_rt_info(draw(st.sampled_from(["1", "a b", "x,y"])), ["model_info", "labels"])
        model.set_rt_info("0.5", "threshold")
    return model, [(t.et, t.shape) for t in pool[: len(params)]]


def _grow(draw: Any, pool: list[_Tensor]) -> None:
    """Add the outputs of one more layer, of a kind drawn, to ``pool``."""
    kind = draw(st.sampled_from(["unary", "binary_const", "binary", "convert", "reshape",
                                 "concat", "split", "gather", "transpose", "matmul",
                                 "decompression", "decompression", "select", "if", "loop", "constant"]))  # fmt: skip
    if kind == "unary":
        t = _pick(draw, pool)
        if t is None:
            return
        if t.et == "boolean":
            out = ops.logical_not(t.out)
        elif t.et in FLOAT:
            out = draw(st.sampled_from([ops.abs, ops.negative, ops.relu, ops.floor]))(t.out)
        elif t.et == "u8":
            out = ops.abs(t.out)  # the CPU plugin refuses Negative on unsigned numbers
        else:
            out = draw(st.sampled_from([ops.abs, ops.negative]))(t.out)
        pool.append(_Tensor(out.output(0), t.et, t.shape))
    elif kind == "binary_const":
        t = _pick(draw, pool, NUMERIC)
        if t is None:
            return
        shape = draw(st.sampled_from([(), t.shape, t.shape[-1:]]))
        op = draw(st.sampled_from([ops.add, ops.multiply, ops.maximum, ops.subtract]))
        pool.append(_Tensor(op(t.out, _constant(draw, t.et, shape)).output(0), t.et, t.shape))
    elif kind == "binary":
        t = _pick(draw, pool, NUMERIC)
        if t is None:
            return
        same = [u for u in pool if u.et == t.et and u.shape == t.shape]
        u = draw(st.sampled_from(same))
        pool.append(_Tensor(ops.add(t.out, u.out).output(0), t.et, t.shape))
    elif kind == "convert":
        t = _pick(draw, pool)
        to = draw(st.sampled_from(INPUT_TYPES))
        if t is None or (t.et in FLOAT and to not in FLOAT):
            return  # float to integer is undefined for values out of range: no such model
        pool.append(_Tensor(ops.convert(t.out, _OV_TYPE[to]).output(0), to, t.shape))
    elif kind == "reshape":
        t = _pick(draw, pool)
        if t is None:
            return
        n = int(np.prod(t.shape, dtype=np.int64))
        shape = draw(st.sampled_from([(n,), (1, n), (n, 1)]))
        pattern = ops.constant(np.array(shape, np.int64))
        pool.append(_Tensor(ops.reshape(t.out, pattern, False).output(0), t.et, shape))
    elif kind == "concat":
        t = _pick(draw, pool, min_rank=1)
        if t is None:
            return
        axis = draw(st.integers(0, len(t.shape) - 1))
        shape = tuple(d * 2 if i == axis else d for i, d in enumerate(t.shape))
        pool.append(_Tensor(ops.concat([t.out, t.out], axis).output(0), t.et, shape))
    elif kind == "split":
        t = _pick(draw, pool, min_rank=1)
        axes = [i for i, d in enumerate(t.shape) if d % 2 == 0] if t else []
        if not axes:
            return
        axis = draw(st.sampled_from(axes))
        shape = tuple(d // 2 if i == axis else d for i, d in enumerate(t.shape))
        node = ops.split(t.out, ops.constant(np.int64(axis)), 2)
        pool.extend(_Tensor(o, t.et, shape) for o in node.outputs())
    elif kind == "gather":
        t = _pick(draw, pool, min_rank=1)
        if t is None:
            return
        axis = draw(st.integers(0, len(t.shape) - 1))
        k = draw(st.integers(1, 3))
        idx = draw(st.lists(st.integers(0, t.shape[axis] - 1), min_size=k, max_size=k))
        indices = ops.constant(np.array(idx, np.int64))
        out = ops.gather(t.out, indices, ops.constant(np.int64(axis)))
        shape = tuple(k if i == axis else d for i, d in enumerate(t.shape))
        pool.append(_Tensor(out.output(0), t.et, shape))
    elif kind == "transpose":
        t = _pick(draw, pool, min_rank=2)
        if t is None:
            return
        perm = draw(st.permutations(range(len(t.shape))))
        out = ops.transpose(t.out, ops.constant(np.array(perm, np.int64)))
        pool.append(_Tensor(out.output(0), t.et, tuple(t.shape[i] for i in perm)))
    elif kind == "matmul":
        t = _pick(draw, pool, FLOAT, min_rank=2)
        if t is None:
            return
        m = draw(st.integers(1, 3))
        weight = _constant(draw, t.et, (t.shape[-1], m))
        pool.append(_Tensor(ops.matmul(t.out, weight, False, False).output(0), t.et,
                            (*t.shape[:-1], m)))  # fmt: skip
    elif kind == "decompression":
        t = _pick(draw, pool, ("f32",))
        if t is None:
            return
        low = draw(st.sampled_from(sorted(LOW)))
        w = ops.convert(_constant(draw, low, t.shape), "f32")
        if low not in ("f16", "bf16") and draw(st.booleans()):
            w = ops.subtract(w, ops.convert(_constant(draw, low, t.shape[-1:]), "f32"))
        w = ops.multiply(w, _constant(draw, "f32", t.shape[-1:]))
        pool.append(_Tensor(ops.add(t.out, w).output(0), "f32", t.shape))
    elif kind == "if":
        t = _pick(draw, pool, FLOAT)
        if t is None:
            return
        # The condition from data, so that OpenVINO cannot fold the If away.
        total = ops.reduce_sum(t.out, ops.constant(np.arange(len(t.shape), dtype=np.int64)))
        node = ops.if_op(ops.greater(total, _constant(draw, t.et, ())).output(0))
        bodies = []
        for op in (ops.abs, ops.add):
            p = ops.parameter(list(t.shape), _type(t.et))
            y = ops.abs(p) if op is ops.abs else ops.add(p, _constant(draw, t.et, t.shape[-1:]))
            bodies.append((ov.Model([ops.result(y)], [p]), p))
        node.set_then_body(bodies[0][0])
        node.set_else_body(bodies[1][0])
        node.set_input(t.out, bodies[0][1], bodies[1][1])
        out = node.set_output(bodies[0][0].get_results()[0], bodies[1][0].get_results()[0])
        pool.append(_Tensor(out, t.et, t.shape))
    elif kind == "loop":
        t = _pick(draw, pool, FLOAT, min_rank=1)
        if t is None:
            return
        # A few turns adding a constant to the tensor carried from one to the next: a
        # body with a back edge, the iteration number unused, the last value out.
        carried, turn = ops.parameter(list(t.shape), _type(t.et)), ops.parameter([], np.int64)
        step = ops.add(carried, _constant(draw, t.et, t.shape[-1:]))
        body = ov.Model([ops.result(ops.constant(True)), ops.result(step)], [turn, carried])
        loop = ops.loop(ops.constant(np.int64(draw(st.integers(1, 3)))), ops.constant(True))
        loop.set_function(body)
        loop.set_special_body_ports([0, 0])
        loop.set_merged_input(carried, t.out, step.output(0))
        pool.append(_Tensor(loop.get_iter_value(step.output(0), -1), t.et, t.shape))
    elif kind == "constant":
        # A constant as an output of the model: strings as they are, other types converted
        # to f32 (odd counts of packed types end in a byte half or partly used).
        et = draw(st.sampled_from(["string", "u1", "i4", "u4", "i8", "bf16", "boolean", "i64"]))
        shape = (draw(st.integers(1, 9)),)
        if et == "string":
            words = draw(st.lists(st.text(NAME_CHARS + "ab", max_size=4), min_size=shape[0],
                                  max_size=shape[0]))  # fmt: skip
            const = ov.op.Constant(ov.Tensor(np.array(words, dtype=str)))
            pool.append(_Tensor(const.output(0), "string", shape))
        elif et == "u1":
            bits = draw(st.lists(st.integers(0, 1), min_size=shape[0], max_size=shape[0]))
            const = ov.op.Constant(ov.Type.u1, ov.Shape(list(shape)), bits)
            pool.append(_Tensor(ops.convert(const, "f32").output(0), "f32", shape))
        else:
            const = _constant(draw, et, shape)
            pool.append(_Tensor(ops.convert(const, "f32").output(0), "f32", shape))
    elif kind == "select":
        t = _pick(draw, pool, NUMERIC)
        if t is None:
            return
        cond = ops.greater(t.out, _constant(draw, t.et, ()))
        other = _constant(draw, t.et, t.shape)
        pool.append(_Tensor(ops.select(cond, t.out, other).output(0), t.et, t.shape))


def _plain(value: Any) -> Any:
    """Records as nested tuples and dicts, without line numbers, for comparing."""
    if isinstance(value, IRDocument):
        return (value.ir_version, value.name, _plain(value.layers), _plain(value.edges),
                _plain(dict(value.rt_info)))  # fmt: skip
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple((f.name, _plain(getattr(value, f.name))) for f in dataclasses.fields(value)
                     if f.name not in ("line", "data_line", "_ref", "blob"))  # fmt: skip
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return tuple(_plain(v) for v in value)
    return value


def _inputs(specs: list[tuple[str, tuple[int, ...]]], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for et, shape in specs:
        if et == "boolean":
            out.append(rng.random(shape) < 0.5)
        elif et in FLOAT:
            out.append(rng.standard_normal(shape).astype(ELEMENT_TYPES[et].dtype))
        else:
            out.append(rng.integers(0, 100, shape).astype(ELEMENT_TYPES[et].dtype))
    return out


def _run(core: Any, xml: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    model = core.read_model(xml)
    compiled = core.compile_model(model, "CPU", CPU)
    result = compiled(inputs)
    return [np.array(result[k], copy=True) for k in range(len(model.outputs))]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(), st.integers(0, 2**16))
def test_the_writer_gives_back_what_openvino_wrote(core, generated, seed):
    model, specs = generated
    with tempfile.TemporaryDirectory() as d:
        src, copy = Path(d, "model.xml"), Path(d, "copy.xml")
        ov.save_model(model, src, compress_to_fp16=False)
        doc = read_ir(src)
        write_ir(doc, copy, Weights(src.with_suffix(".bin")))
        assert _plain(read_ir(copy)) == _plain(doc)
        assert filecmp.cmp(copy.with_suffix(".bin"), src.with_suffix(".bin"), shallow=False)
        inputs = _inputs(specs, seed)
        expected = _run(core, src, inputs)
        for got, want in zip(_run(core, copy, inputs), expected, strict=True):
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------- encode and decode

_WHOLE = [n for n, et in ELEMENT_TYPES.items() if et.bits >= 8 and n != "boolean"]
_PACKED_ENCODED = ["u1", "i4", "u4", "nf4", "f4e2m1"]


@pytest.mark.parametrize("name", _WHOLE)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_whole_byte_types_encode_the_bytes_they_decode(name, data):
    et = ELEMENT_TYPES[name]
    count = data.draw(st.integers(0, 9))
    raw = data.draw(st.binary(min_size=count * et.bits // 8, max_size=count * et.bits // 8))
    values = decode(np.frombuffer(raw, np.uint8), et, count)
    assert encode(values, et) == raw


@pytest.mark.parametrize("name", _PACKED_ENCODED)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_packed_types_encode_the_bytes_they_decode(name, data):
    et = ELEMENT_TYPES[name]
    count = data.draw(st.integers(0, 17))
    per_byte = 8 // et.bits
    raw = bytearray(data.draw(st.binary(min_size=-(-count // per_byte),
                                        max_size=-(-count // per_byte))))  # fmt: skip
    if count % per_byte:  # the bits past the last element are zero in a .bin
        used = (count % per_byte) * et.bits
        raw[-1] &= ((1 << used) - 1) if name != "u1" else (0xFF << (8 - used)) & 0xFF
    values = decode(np.frombuffer(bytes(raw), np.uint8), et, count)
    assert len(values) == count
    assert encode(values, et) == bytes(raw)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), max_size=12))
def test_booleans_encode_as_one_byte_each(values):
    raw = encode(np.array(values, bool), ELEMENT_TYPES["boolean"])
    assert raw == bytes(values)
    assert decode(np.frombuffer(raw, np.uint8), ELEMENT_TYPES["boolean"], len(values)).tolist() \
        == values  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=5))
def test_strings_encode_as_openvino_lays_them(values):
    raw = encode(np.array(values, object), ELEMENT_TYPES["string"])
    decoded, _ = decode_strings(np.frombuffer(raw, np.uint8), len(values))
    assert decoded.tolist() == values
    tensor = ov.Tensor(np.array(values or [""], dtype=str)) if values else None
    if tensor is not None:
        # OpenVINO's own layout: a count, offsets, then the bytes (what save_model writes).
        with tempfile.TemporaryDirectory() as d:
            ov.save_model(ov.Model([ops.result(ov.op.Constant(tensor))], [], "s"), f"{d}/s.xml")
            assert Path(d, "s.bin").read_bytes() == raw


@pytest.mark.parametrize("name", ["i4", "u4", "u1", "i8", "u8", "f16", "bf16", "boolean", "i64"])
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_encode_writes_what_openvino_writes(name, data):
    count = data.draw(st.integers(1, 9))
    if name == "u1":
        values = data.draw(st.lists(st.integers(0, 1), min_size=count, max_size=count))
    else:
        values = _values(data.draw, name, (count,))
        if name in ("f16", "bf16"):
            values = [v / 4 for v in values]
    constant = ov.op.Constant(getattr(ov.Type, _OV_TYPE.get(name, name)), ov.Shape([count]),
                              values)  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        ov.save_model(ov.Model([ops.result(constant)], [], "c"), f"{d}/c.xml")
        written = Path(d, "c.bin").read_bytes()
    array = np.array(values, ml_dtypes.bfloat16 if name == "bf16" else None)
    assert encode(array, ELEMENT_TYPES[name]) == written


@pytest.mark.parametrize("name", ["u2", "u3", "u6"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_types_encode_cannot_write_say_so(name, data):
    et = ELEMENT_TYPES[name]
    count = data.draw(st.integers(1, 8))
    values = np.array(data.draw(st.lists(st.integers(0, 2**et.bits - 1), min_size=count,
                                         max_size=count)), np.uint8)  # fmt: skip
    with pytest.raises(ValueError, match=f"cannot write {name} values"):
        encode(values, et)


def test_every_element_type_is_covered_here():
    covered = {*_WHOLE, *_PACKED_ENCODED, "boolean", "string", "u2", "u3", "u6"}
    assert covered == set(ELEMENT_TYPES)
