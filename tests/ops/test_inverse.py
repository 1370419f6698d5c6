"""Inverse-14 against OpenVINO's CPU plugin (f32, one thread): OpenVINO 2026.4 has no
``evaluate`` for Inverse (checked below), so the plugin is the only OpenVINO oracle.

Tolerances: f32 rtol 1e-5 plus an absolute 1e-5 of the result's largest magnitude on
matrices kept well conditioned (a multiple of the identity added); f16 one f16 ulp
(both compute in f32 and round once); f64 rtol 1e-4 (the plugin computes it in f32).
Singular matrices, NaN and infinities: the same infinities and NaN, at the same places.
Shapes against OpenVINO's shape inference, dynamic and interval dims included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import irrun
import irrun.ops
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset14  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    one_op_model,
    run_both,
    run_irrun,
    run_reference,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

OP = resolve("Inverse", "opset14")


def _build(adjoint):
    return lambda p: opset14.inverse(p, adjoint)


def _conditioned(rng, shape, dtype=np.float32):
    n = shape[-1]
    return (rng.standard_normal(shape) + 2 * n * np.eye(n)).astype(dtype)


def _same_nonfinite(got, want):
    for test in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(test(got), test(want)), (got, want)


def test_openvino_2026_4_has_no_reference_kernel():
    x = np.eye(2, dtype=np.float32)
    with pytest.raises(RuntimeError, match="Inverse"):
        run_reference(one_op_model(_build(False), [x]), [x])


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 5), (1, 1), (3, 2, 2), (2, 0, 0), (0, 3, 3)])
def test_matches_cpu(shape, adjoint, tmp_path):
    rng = np.random.default_rng(sum(shape) + adjoint)
    x = rng.standard_normal(shape).astype(np.float32)  # unconditioned too: random
    got, want = run_both(_build(adjoint), [x], tmp_path)
    assert_close(got, want, rtol=1e-4, atol=1e-4, scaled_atol=True, what=str(shape))


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_types_match_cpu(dtype, adjoint, tmp_path):
    x = _conditioned(np.random.default_rng(7), (3, 6, 6), dtype)
    got, want = run_both(_build(adjoint), [x], tmp_path)
    rtol = 1e-3 if dtype == np.float16 else 1e-4
    assert_close(got, want, rtol=rtol, atol=rtol, scaled_atol=True, what=str(dtype))


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 7), batch=st.lists(st.integers(1, 3), max_size=2), adjoint=st.booleans(),
       seed=st.integers(0, 2**16))  # fmt: skip
def test_sweep_matches_cpu(tmp_path_factory, n, batch, adjoint, seed):
    x = _conditioned(np.random.default_rng(seed), (*batch, n, n))
    got, want = run_both(_build(adjoint), [x], tmp_path_factory.mktemp("inv"))
    assert_close(got, want, rtol=1e-5, atol=1e-5, scaled_atol=True)


SINGULAR = {
    "rank one": [[1, 2], [2, 4]],
    "zero": [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    "rank two": [[1, 2, 3], [4, 5, 6], [7, 8, 9]],
    "nan pivot": [[np.nan, 1], [1, 2]],
    "nan below": [[1, 1], [np.nan, 2]],
    "infinity": [[1, np.inf], [1, 2]],
    "tied pivots": [[1, 2, 0], [-1, 0, 3], [1, 1, 1]],
}


@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("name", sorted(SINGULAR))
def test_singular_and_nonfinite_matrices_give_what_the_plugin_gives(name, adjoint, tmp_path):
    x = np.array(SINGULAR[name], np.float32)
    got, want = run_both(_build(adjoint), [x], tmp_path)
    _same_nonfinite(got, want)
    finite = np.isfinite(want)
    assert_close(got[finite], want[finite], rtol=1e-5, atol=1e-6, what=name)


def test_by_hand(tmp_path):
    x = np.array([[[4, 7], [2, 6]], [[0, 1], [1, 0]]], np.float32)
    got = run_irrun(_build(False), [x], tmp_path)
    np.testing.assert_allclose(got, [[[0.6, -0.7], [-0.2, 0.4]], [[0, 1], [1, 0]]], atol=1e-6)
    adj = run_irrun(_build(True), [x], tmp_path)  # the transpose: not the adjugate
    np.testing.assert_allclose(adj, [[[0.6, -0.2], [-0.7, 0.4]], [[0, 1], [1, 0]]], atol=1e-6)
    singular = run_irrun(_build(False), [np.array([[1, 2], [2, 4]], np.float32)], tmp_path)
    assert singular.tolist() == [[-np.inf, np.inf], [np.inf, -np.inf]]


D = Interval(0, None)


@pytest.mark.parametrize("shape", [
    (3, 3), (2, 3, 3), (3,), (), (2, 3), (D, 3), (D, D), (Interval(2, 5), Interval(3, 4)),
    (Interval(2, 5), Interval(6, 8)), (4, D, 3), None, (0, 0), (2, 1, 1),
])  # fmt: skip
def test_shape_rule_matches_openvino(shape):
    info = TensorInfo(shape, ELEMENT_TYPES["f32"])
    try:
        node = opset14.inverse(opset1.parameter(to_ov_shape(shape), ov.Type.f32), False)
    except RuntimeError:
        with pytest.raises(ShapeError):
            OP.infer(attrs_namespace({"adjoint": False}), [info])
        return
    (out,) = OP.infer(attrs_namespace({"adjoint": False}), [info])
    assert out.shape == from_ov_shape(node.get_output_partial_shape(0))
    assert out.element_type == ELEMENT_TYPES["f32"]


@pytest.mark.parametrize("et", ["i32", "u8", "boolean"])
def test_integers_are_refused_as_openvino_refuses_them(et, tmp_path):
    with pytest.raises(RuntimeError, match="floating point"):
        opset14.inverse(opset1.parameter([2, 2], getattr(ov.Type, et)), False)
    p = opset1.parameter([2, 2], ov.Type.f32, name="in0")
    node = opset14.inverse(p, True)
    node.set_friendly_name("inv")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text()
    assert 'type="Inverse" version="opset14"' in text and 'adjoint="true"' in text
    assert irrun.validate(path) == []
    prec = {"i32": "I32", "u8": "U8", "boolean": "BOOL"}[et]
    path.write_text(text.replace('element_type="f32"', f'element_type="{et}"')
                        .replace('precision="FP32"', f'precision="{prec}"'))  # fmt: skip
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'inv' (Inverse-v14)" in m and f"input 0 is {et}" in m for m in found), found


def test_validate_flags_a_matrix_that_is_not_square(tmp_path):
    p = opset1.parameter([2, 3, 3], ov.Type.f32, name="in0")
    node = opset14.inverse(p, False)
    node.set_friendly_name("inv")
    path = tmp_path / "m.xml"
    ov.save_model(ov.Model([node], [p]), path)
    text = path.read_text().replace('shape="2,3,3"', 'shape="2,3,4"')
    first, second, rest = text.split("<dim>3</dim>", 2)  # the Parameter's dims 1 and 2
    path.write_text(first + "<dim>3</dim>" + second + "<dim>4</dim>" + rest)
    found = [str(d) for d in irrun.validate(path) if d.level == "error"]
    assert any("'inv' (Inverse-v14)" in m and "square" in m for m in found), found
