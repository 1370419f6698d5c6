"""GRN against the CPU plugin and by hand.

GRN sums squares along axis 1 in an order of the plugin's choosing: 4 f32 ulp
(rtol 5e-7) for the sum's rounding and the division, one f16 ulp (1e-3) for f16.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import ET, random_data

from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.ov_oneop import assert_close, one_op_model, run_both, run_saved  # noqa: E402

# --------------------------------------------------------------------------- GRN


@pytest.mark.parametrize("et", ["f32", "f16"])
@pytest.mark.parametrize("bias", [1e-6, 0.5, 3.0])
def test_grn_matches_cpu(bias, et, tmp_path):
    rng = np.random.default_rng(int(bias * 10) + len(et))
    for shape in ((2, 3, 4), (3, 7), (1, 16, 3, 5), (2, 1, 3)):
        x = random_data(rng, shape, et)
        got, want = run_both(lambda p: opset1.grn(p, bias), [x], tmp_path)
        tol = 1e-3 if et == "f16" else 5e-7
        assert_close(got, want, rtol=tol, atol=tol, what=f"{shape}")


def test_grn_by_hand(tmp_path):
    x = np.array([[3, 4], [0, 0]], np.float32).reshape(2, 2)
    model = one_op_model(lambda p: opset1.grn(p, 0.0), [x])
    got = run_saved(model, [x], tmp_path)[0]
    assert np.allclose(got[0], [0.6, 0.8])
    with pytest.raises(ShapeError, match="rank 2, 3 or 4"):
        resolve("GRN", "opset1").infer(attrs_namespace({"bias": 1.0}),
                                       [TensorInfo((1, 2, 3, 4, 5), ET["f32"])])  # fmt: skip


# --------------------------------------------------------------------------- element types

from support.typed import assert_not_taken, check_types, numbers, refused  # noqa: E402

from irrun.ir.registry import resolve as _resolve  # noqa: E402


@pytest.mark.parametrize("t", _resolve("GRN", "opset1").input_types[0])
def test_every_declared_type_matches_cpu(t, tmp_path):
    """Each type the input takes: the CPU plugin's values, or its f32 values converted to the
    type by OpenVINO (f8 and f4 floats, which it has no kernel of)."""
    check_types(lambda p: opset1.grn(p, 0.5), [numbers(t).reshape(2, 4)], [t], tmp_path,
                oracles=("cpu",), rtol=5e-7, atol=1e-6)


@pytest.mark.parametrize("bad", ["i32", "u8", "boolean"])
def test_a_type_not_taken_is_an_error_of_validate(bad, tmp_path):
    """OpenVINO builds a GRN of any type: irrun takes floats (which its kernel computes)."""
    assert bad not in _resolve("GRN", "opset1").input_types[0]
    found = refused(lambda p: opset1.grn(p, 0.5), ["f32"], 0, bad, tmp_path)
    assert_not_taken(found, 0, bad, "GRN-v1")
