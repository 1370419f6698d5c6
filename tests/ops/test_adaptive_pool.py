"""AdaptiveAvgPool-8 and AdaptiveMaxPool-8: element types.

The data types (POOL_TYPES) are swept against OpenVINO in tests/ops/test_pool_types.py
with the other pools, which also hold validate's refusal of the rest; here every type
of output_size, and the floats output_size is not, against OpenVINO's reference
kernels (the values from the CPU plugin where the reference has no AdaptiveMaxPool).
"""

from __future__ import annotations

import numpy as np
import pytest

ov = pytest.importorskip("openvino")
from openvino import opset1, opset8  # noqa: E402
from support.typed import assert_refused, assert_typed_close, convertible, typed_runs  # noqa: E402

from irrun.ir.element_types import INTEGERS  # noqa: E402
from irrun.ir.registry import resolve  # noqa: E402
from irrun.ops.window import POOL_TYPES  # noqa: E402

POOLS = {"AdaptiveAvgPool": lambda p, s: opset8.adaptive_avg_pool(p, s),
         "AdaptiveMaxPool": lambda p, s: opset8.adaptive_max_pool(p, s, index_element_type="i32")}  # fmt: skip


@pytest.mark.parametrize("op", list(POOLS))
def test_declared_types(op):
    assert resolve(op, "opset8").input_types == (POOL_TYPES, INTEGERS)


@pytest.mark.parametrize("st", INTEGERS)
@pytest.mark.parametrize("op", list(POOLS))
def test_every_output_size_type(op, st, tmp_path):
    x = convertible("f32", (1, 2, 5, 4), seed=1)
    size = opset1.constant(np.array([2, 3]), getattr(ov.Type, st))
    outputs = 2 if op == "AdaptiveMaxPool" else 1
    got, want = typed_runs(lambda p: POOLS[op](p, size), [x], ["f32"], tmp_path,
                           outputs=outputs)  # fmt: skip
    assert got[0].shape == (1, 2, 2, 3)
    assert_typed_close(got, want, rtol=1e-6)


@pytest.mark.parametrize("st", ["f32", "boolean"])
@pytest.mark.parametrize("op", list(POOLS))
def test_validate_names_an_output_size_type_it_does_not_take(op, st, tmp_path):
    x, size = np.zeros((1, 2, 4, 4), np.float32), np.array([2, 2], np.int64)
    assert_refused(POOLS[op], [x, size], 1, st, tmp_path, f"{op}-v8")
