"""Comparisons (Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual), logical ops
(LogicalAnd, LogicalOr, LogicalXor, LogicalNot) and Select against the CPU plugin, by
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
    assert any("the input must be boolean, got f32" in d.message for d in irrun.validate(path))
