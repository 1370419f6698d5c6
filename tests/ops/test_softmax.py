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
