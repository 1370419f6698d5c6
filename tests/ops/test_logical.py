"""Comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual), logical ops
(LogicalAnd, LogicalOr, LogicalXor, Xor, LogicalNot) and Select against the CPU plugin, by
hand, and the checks of their inputs and attributes.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Every result is boolean or a copy of an input: comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import dtype_of

import irrun

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.ov_oneop import assert_close, run_both, run_irrun  # noqa: E402

# --------------------------------------------------------------------------- comparisons, logical, Select

COMPARE = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
LOGICAL = ["LogicalAnd", "LogicalOr", "LogicalXor"]


def _factory(op: str):
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in op).lstrip("_")
    return getattr(opset1, snake)


@pytest.mark.parametrize("mode", ["numpy", "none"])
@pytest.mark.parametrize("dtype", ["f32", "i32", "u8"])
@pytest.mark.parametrize("op", COMPARE)
def test_comparison_matches_cpu(op, dtype, mode, tmp_path):
    rng = np.random.default_rng(len(op) * 3 + len(dtype) + len(mode))
    b_shape = (3, 4, 5) if mode == "none" else (4, 1)
    x = rng.integers(0, 4, (3, 4, 5)).astype(dtype_of(dtype))  # many ties
    y = rng.integers(0, 4, b_shape).astype(dtype_of(dtype))
    if dtype == "f32":
        x.flat[:4] = (np.nan, -0.0, np.inf, 1.5)
        y.flat[:4] = (np.nan, 0.0, np.inf, np.nan)
    got, want = run_both(lambda p, q: _factory(op)(p, q, mode), [x, y], tmp_path)
    assert got.dtype == np.bool_
    # The plugin's answer where a NaN is compared depends on the instructions its JIT
    # picks for the CPU (Greater is true for NaN on some): compared only elsewhere, and
    # by IEEE's rule in test_comparison_with_nan_is_ieee.
    defined = ~np.broadcast_to(np.isnan(x.astype(np.float32)) | np.isnan(y.astype(np.float32)),
                               got.shape)  # fmt: skip
    assert defined.sum() >= 30  # most of the tensor is still compared
    assert_close(got[defined], want[defined], what=op)


# IEEE 754: every ordered comparison with NaN is false, and NaN is unequal to everything.
NAN_ROWS = {"Equal": False, "NotEqual": True, "Less": False, "LessEqual": False,
            "Greater": False, "GreaterEqual": False}  # fmt: skip


@pytest.mark.parametrize("op", COMPARE)
def test_comparison_with_nan_is_ieee(op, tmp_path):
    x = np.array([np.nan, np.nan, 1.0, -np.inf, np.nan], np.float32)
    y = np.array([np.nan, 1.0, np.nan, np.nan, np.inf], np.float32)
    got = run_irrun(lambda p, q: _factory(op)(p, q, "numpy"), [x, y], tmp_path)
    assert got.tolist() == [NAN_ROWS[op]] * 5


@pytest.mark.parametrize("op", LOGICAL)
def test_logical_matches_cpu(op, tmp_path):
    rng = np.random.default_rng(len(op))
    x, y = rng.random((2, 3, 4)) < 0.5, rng.random((3, 1)) < 0.5
    got, want = run_both(lambda p, q: _factory(op)(p, q), [x, y], tmp_path)
    assert_close(got, want, what=op)
    got, want = run_both(opset1.logical_not, [x], tmp_path)
    assert_close(got, want, what="LogicalNot")


@pytest.mark.parametrize(("shapes", "mode"), [
    (((2, 3, 4), (2, 3, 4), (2, 3, 4)), "none"), (((3, 1), (2, 1, 4), (4,)), "numpy"),
    (((), (2, 3), (2, 3)), "numpy"), (((2, 3, 4), (1, 3, 1), (4,)), "numpy"),
])  # fmt: skip
def test_select_matches_cpu(shapes, mode, tmp_path):
    rng = np.random.default_rng(len(shapes[1]) + len(mode))
    cond = rng.random(shapes[0]) < 0.5
    then = rng.standard_normal(shapes[1]).astype(np.float32)
    other = rng.standard_normal(shapes[2]).astype(np.float32)
    got, want = run_both(lambda c, t, e: opset1.select(c, t, e, mode), [cond, then, other],
                         tmp_path)  # fmt: skip
    assert_close(got, want, what=str(shapes))


def test_select_with_pdpd_broadcasting_is_refused(tmp_path):
    p = opset1.parameter([2, 3], ov.Type.f32, name="in0")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([opset1.select(opset1.constant(True), p, p)], [p]), path)
    text = path.read_text()
    assert text.count('auto_broadcast="numpy"') == 1
    path.write_text(text.replace('auto_broadcast="numpy"', 'auto_broadcast="pdpd"'))
    found = [d.message for d in irrun.validate(path) if d.level == "error"]
    assert any("auto_broadcast" in m and "none, explicit, numpy" in m for m in found), found


def test_boolean_inputs_are_checked(tmp_path):
    p = opset1.parameter([3], ov.Type.f32, name="in0")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([opset1.logical_not(opset1.convert(p, "boolean"))], [p]), path)
    text = path.read_text()
    assert text.count('destination_type="boolean"') == 1
    # The Convert made to give f32: LogicalNot reads f32.
    bad = text.replace('destination_type="boolean"', 'destination_type="f32"')
    path.write_text(bad.replace('precision="BOOL"', 'precision="FP32"', 1))
    assert any("input 0 is f32, which LogicalNot-v1 does not take (it takes boolean)" in d.message
               for d in irrun.validate(path))


# --------------------------------------------------------------------------- Xor-1


def _xor_ir(tmp_path, shapes, mode="numpy", et="boolean"):
    """An IR of opset1's Xor: OpenVINO's Python API builds LogicalXor only, so its saved
    layer is renamed (OpenVINO's reader builds v0::Xor from it)."""
    import re

    a = opset1.parameter(list(shapes[0]), ov.Type.boolean, name="in0")
    b = opset1.parameter(list(shapes[1]), ov.Type.boolean, name="in1")
    node = opset1.logical_xor(a, b, mode)
    node.set_friendly_name("x")
    path = tmp_path / "xor.xml"
    ov.save_model(ov.Model([node], [a, b]), path)
    text = re.sub(r'type="LogicalXor" version="opset\d+"', 'type="Xor" version="opset1"',
                  path.read_text())
    if et != "boolean":
        prec = {"i32": "I32", "u8": "U8", "f32": "FP32"}[et]
        text = text.replace('element_type="boolean"', f'element_type="{et}"')
        text = text.replace('precision="BOOL"', f'precision="{prec}"')
    path.write_text(text)
    return path


@pytest.mark.parametrize(("shapes", "mode"), [(((2, 3, 4), (3, 1)), "numpy"),
                                              (((2, 3), (2, 3)), "none"), (((), (5,)), "numpy")])
def test_xor_matches_cpu_and_reference(shapes, mode, tmp_path):
    rng = np.random.default_rng(sum(map(len, shapes)))
    x, y = (rng.random(s) < 0.5 for s in shapes)
    x, y = np.asarray(x), np.asarray(y)
    path = _xor_ir(tmp_path, shapes, mode)
    model = ov.Core().read_model(path)
    assert [o.get_type_info().version_id for o in model.get_ops() if o.get_type_name() == "Xor"] \
        == ["opset1"]  # fmt: skip
    got = next(iter(irrun.load(path).run({"in0": x, "in1": y}).values()))
    want = ov.Core().compile_model(model, "CPU")([x, y])[0]
    assert_close(got, np.asarray(want), what="Xor")
    outs = [ov.Tensor(ov.Type.boolean, [0])]
    model.evaluate(outs, [ov.Tensor(np.array(x)), ov.Tensor(np.array(y))])
    assert_close(got, np.array(outs[0].data).reshape(tuple(outs[0].shape)), what="Xor reference")


def test_xor_by_hand(tmp_path):
    path = _xor_ir(tmp_path, [(4,), (4,)])
    x, y = np.array([False, False, True, True]), np.array([False, True, False, True])
    got = next(iter(irrun.load(path).run({"in0": x, "in1": y}).values()))
    assert got.tolist() == [False, True, True, False]


@pytest.mark.parametrize("et", ["i32", "u8", "f32"])
def test_xor_takes_booleans_only_as_openvino(et, tmp_path):
    path = _xor_ir(tmp_path, [(2, 3), (3,)], et=et)
    with pytest.raises(RuntimeError, match="must have boolean element type"):
        ov.Core().read_model(path)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'x' (Xor-v0)" in m and "boolean" in m for m in found), found


def test_xor_is_in_opset1_only(tmp_path):
    from irrun.ir.registry import LookupFailure, resolve

    assert resolve("Xor", "opset1").label == "Xor-v0"
    path = _xor_ir(tmp_path, [(2,), (2,)])
    path.write_text(path.read_text().replace('type="Xor" version="opset1"',
                                             'type="Xor" version="opset2"'))
    with pytest.raises(RuntimeError, match="opset2 doesn't contain the operation with type: Xor"):
        ov.Core().read_model(path)
    with pytest.raises(LookupFailure, match="opset2 has no op Xor"):
        resolve("Xor", "opset2")


def test_xor_shape_rule_refuses_what_openvino_refuses(tmp_path):
    path = _xor_ir(tmp_path, [(2, 3), (3,)], mode="numpy")
    path.write_text(path.read_text().replace('auto_broadcast="numpy"', 'auto_broadcast="none"'))
    with pytest.raises(RuntimeError):
        ov.Core().read_model(path)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'x' (Xor-v0)" in m for m in found), found


# --------------------------------------------------------------------------- element types

from support.typed import assert_not_taken, check_types, numbers, refused, run_typed, typed  # noqa: E402

from irrun.ir.registry import resolve  # noqa: E402

FAST_TYPES = ("f32", "f16", "bf16", "f8e8m0", "f4e2m1", "i64", "u8", "u3", "i4", "boolean",
              "string", "nf4")  # fmt: skip


def _cases(op: str, port: int):
    for t in resolve(op, "opset1").input_types[port]:
        marks = () if t in FAST_TYPES else (pytest.mark.slow,)
        yield pytest.param(op, t, id=f"{op}-{t}", marks=marks)


@pytest.mark.parametrize(("op", "t"), [c for op in COMPARE for c in _cases(op, 0)])
def test_comparisons_of_every_declared_type_match_openvino(op, t, tmp_path):
    """Each type the comparisons take (both ports alike), with ties: the reference kernels'
    values (the plugin's where they have none), or those of their f32 (i32) values where
    OpenVINO has no kernel of the type (f8, f4 and packed types)."""
    a = numbers(t)
    b = a[[0, 2, 1, 3, 5, 4, 7, 6]]  # equal at 0 and 3
    got = check_types(lambda p, q: _factory(op)(p, q), [a.reshape(2, 4), b.reshape(2, 4)],
                      [t, t], tmp_path, what=op)  # fmt: skip
    assert got.dtype == np.bool_


@pytest.mark.parametrize(("op", "t"), list(_cases("Select", 1)))
def test_select_of_every_declared_type_matches_openvino(op, t, tmp_path):
    """Each type then and else take: OpenVINO's values (through f32 or i32 where it has no
    kernel of the type), by hand for nf4 codes and strings, which it selects no number of."""
    cond = np.array([[1, 0, 1, 1], [0, 0, 1, 0]])
    a, b = numbers(t).reshape(2, 4), numbers(t)[::-1].reshape(2, 4)
    build = lambda c, x, y: opset1.select(c, x, y)  # noqa: E731
    if t not in ("nf4", "string"):
        check_types(build, [cond, a, b], ["boolean", t, t], tmp_path, what=f"Select {t}")
        return
    got = run_typed(build, [cond, a, b], ["boolean", t, t], tmp_path)
    want = np.where(cond != 0, typed(a, t), typed(b, t))
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


@pytest.mark.parametrize(("op", "port", "bad"), [
    ("Equal", 0, "string"), ("NotEqual", 1, "nf4"), ("Less", 0, "nf4"),
    ("LessEqual", 1, "string"), ("Greater", 0, "string"), ("GreaterEqual", 0, "nf4"),
    ("LogicalAnd", 0, "i32"), ("LogicalOr", 1, "f32"), ("LogicalXor", 0, "u8"),
    ("LogicalNot", 0, "i64"), ("Select", 0, "f32"), ("Select", 0, "u8"),
])  # fmt: skip
def test_a_type_not_taken_is_an_error_of_validate(op, port, bad, tmp_path):
    opdef = resolve(op, "opset1")
    assert bad not in opdef.input_types[port]
    good = opdef.input_types[port][0]
    count = opdef.inputs[1]
    types = ["f64"] * count  # the other ports: f64 converted to the type they take
    types[port] = good

    def build(*params):
        args = [p if i == port else opset1.convert(p, opdef.input_types[i][0] if op != "Select"
                                                   or i == 0 else "f32")
                for i, p in enumerate(params)]  # fmt: skip
        return opset1.logical_not(args[0]) if op == "LogicalNot" else _factory(op)(*args)

    if types.count(good) > 1 or good == "f64":
        types = ["i16" if i != port else good for i in range(count)]
    found = refused(build, types, port, bad, tmp_path)
    assert_not_taken(found, port, bad, opdef.label)
