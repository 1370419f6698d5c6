"""LogSoftmax against the CPU plugin.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances: 1e-5 (f32) and 2e-3 (f16), relative and of the output's largest magnitude.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import dtype_of

ov = pytest.importorskip("openvino")
from openvino import opset5  # noqa: E402
from support.ov_oneop import assert_close, run_both  # noqa: E402

# --------------------------------------------------------------------------- LogSoftmax


@pytest.mark.parametrize(("shape", "axis", "dtype"), [
    ((2, 5), 1, "f32"), ((2, 5), -1, "f32"), ((3, 4, 5), 0, "f32"), ((3, 4, 5), 1, "f16"),
    ((7,), 0, "f32"),
])  # fmt: skip
def test_log_softmax_matches_cpu(shape, axis, dtype, tmp_path):
    x = (np.random.default_rng(len(shape) + axis).standard_normal(shape) * 10).astype(
        dtype_of(dtype))  # fmt: skip
    got, want = run_both(lambda p: opset5.log_softmax(p, axis), [x], tmp_path)
    tol = 2e-3 if dtype == "f16" else 1e-5
    assert_close(got, want, rtol=tol, atol=tol, scaled_atol=True, what=str(shape))


# --------------------------------------------------------------------------- element types

from openvino import opset1, opset8  # noqa: E402
from support.typed import assert_not_taken, check_types, numbers, refused  # noqa: E402

from irrun.ir.registry import resolve  # noqa: E402

TYPED = {
    "SoftMax-1": ("SoftMax", "opset1", lambda p: opset1.softmax(p, 1)),
    "SoftMax-8": ("SoftMax", "opset8", lambda p: opset8.softmax(p, -1)),
    "LogSoftmax-5": ("LogSoftmax", "opset5", lambda p: opset5.log_softmax(p, 1)),
}


@pytest.mark.parametrize(("label", "t"), [
    pytest.param(label, t, id=f"{label}-{t}")
    for label, (op, opset, _) in TYPED.items() for t in resolve(op, opset).input_types[0]
])  # fmt: skip
def test_every_declared_type_matches_openvino(label, t, tmp_path):
    """Each type the input takes: the reference kernels' values (the plugin's where they have
    none), or their f32 values converted to the type by OpenVINO (f8 and f4 floats, which it
    has no kernel of; irrun computes them in f32 and rounds once)."""
    check_types(TYPED[label][2], [numbers(t).reshape(2, 4)], [t], tmp_path, rtol=1e-5,
                atol=1e-6, what=label)


@pytest.mark.parametrize(("label", "bad"), [("SoftMax-1", "i32"), ("SoftMax-8", "boolean"),
                                            ("LogSoftmax-5", "u8")])
def test_a_type_not_taken_is_an_error_of_validate(label, bad, tmp_path):
    """OpenVINO builds a SoftMax of any type, but runs none of integers (its reference
    kernels refuse them): irrun takes floats."""
    op_type, opset, build = TYPED[label]
    op = resolve(op_type, opset)
    assert bad not in op.input_types[0]
    found = refused(build, ["f32"], 0, bad, tmp_path)
    assert_not_taken(found, 0, bad, op.label)
