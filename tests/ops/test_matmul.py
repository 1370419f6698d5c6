"""MatMul against the CPU plugin and by hand.

Differential tests: each case is a one-op model built with OpenVINO's Python opset
API, saved as IR (no f16 compression) and run by irrun; the same model is compiled
for the CPU plugin in f32 with one thread, and the outputs are compared.  Cases
are drawn from seeded generators.  Expected values always come from OpenVINO or
are computed by hand in this file, never from irrun.

Tolerances: exact for i32; in f32 rtol 1e-5 plus 1e-6 of the sum of the magnitudes of
the summed terms (rounding depends on the summation order).
"""

from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.ov_oneop import assert_close, run_both, run_irrun  # noqa: E402

# --------------------------------------------------------------------------- MatMul

MATMUL_CASES = [
    ((3, 4), (4, 5), False, False), ((4,), (4,), False, False), ((4,), (4,), True, True),
    ((2, 4, 3), (4,), True, False), ((4,), (2, 4, 3), False, False), ((4,), (2, 3, 4), True, True),
    ((2, 1, 4, 3), (5, 5, 4), True, True), ((1, 3, 2), (6, 2, 7), False, False),
    ((3, 2, 5), (5, 1), False, False), ((5, 3), (2, 1, 3, 5), True, True),
    ((1, 1), (1, 1), False, False), ((2, 7, 9), (2, 3, 9), False, True),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b", "ta", "tb"), MATMUL_CASES)
@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_matmul_matches_cpu(a, b, ta, tb, dtype, tmp_path):
    rng = np.random.default_rng(len(a) * 10 + len(b))
    if dtype == "f32":
        x, y = rng.standard_normal(a).astype(np.float32), rng.standard_normal(b).astype(np.float32)
    else:
        x, y = rng.integers(-9, 10, a).astype(np.int32), rng.integers(-9, 10, b).astype(np.int32)
    got, want = run_both(lambda p, q: opset1.matmul(p, q, ta, tb), [x, y], tmp_path)
    if dtype == "i32":
        assert_close(got, want, what=f"{a} {b} {ta} {tb}")
        return
    # Rounding depends on summation order: bound it by the size of the summed terms.
    xa = np.swapaxes(np.abs(x), -1, -2) if ta and x.ndim > 1 else np.abs(x)
    ya = np.swapaxes(np.abs(y), -1, -2) if tb and y.ndim > 1 else np.abs(y)
    terms = np.matmul(xa, ya)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.all(np.abs(got - want) <= 1e-5 * np.abs(want) + 1e-6 * terms), (a, b, ta, tb)


def test_matmul_by_hand(tmp_path):
    a = np.array([[1, 2], [3, 4]], np.float32)
    v = np.array([1, -1], np.float32)
    def mm(ta, tb, x, y):
        return run_irrun(lambda p, q: opset1.matmul(p, q, ta, tb), [x, y], tmp_path).tolist()

    assert mm(True, False, a, v) == [-2.0, -2.0]  # a.T @ v; the row vector is [1, -1]
    assert mm(False, False, v, a) == [-2.0, -2.0]
    assert mm(True, True, v, a) == [-1.0, -1.0]  # v @ a.T: transpose_a is ignored for 1-D v
    assert mm(False, True, a, a) == [[5.0, 11.0], [11.0, 25.0]]


# --------------------------------------------------------------------------- element types
# Every type MatMul declares, against OpenVINO's reference kernels (or the product in f32
# rounded once to the type, for the small floats it has no kernel for); a type it does not
# take is named by validate.

from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ops.matmul import MATMUL_TYPES  # noqa: E402


@pytest.mark.parametrize("et", MATMUL_TYPES)
@pytest.mark.parametrize("tb", [False, True])
def test_matmul_element_types(et, tb, tmp_path):
    a, b = convertible(et, (2, 3, 4), seed=1), convertible(et, (3, 5) if not tb else (5, 3), seed=2)
    a = a.reshape(2, 3, 4).transpose(0, 2, 1).copy()  # [2, 4, 3]
    got, want = typed_runs(lambda p, q: opset1.matmul(p, q, False, tb), [a, b], [et, et],
                           tmp_path)  # fmt: skip
    assert_typed_close(got, want)


@pytest.mark.parametrize("et", ["u4", "i4", "u1", "nf4"])
def test_matmul_validate_names_a_type_it_does_not_take(et, tmp_path):
    a = np.zeros((2, 2), np.float32)
    assert_refused(lambda p, q: opset1.matmul(p, q, False, False), [a, a], 0, et, tmp_path,
                   "MatMul-v1")
