"""Parameter, Result and Const against OpenVINO's reference kernels, for every element type.

Parameter and Const have no input port (their element type is an attribute); a Result
takes a tensor of any type, which comes out of a run bit for bit as OpenVINO gives it.
"""

from __future__ import annotations

import numpy as np
import pytest

from irrun.ir.element_types import ANY
from irrun.ir.registry import resolve

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from support.typed import assert_same, run_irrun, run_openvino, sample  # noqa: E402


def test_declared_ports():
    assert resolve("Parameter", "opset1").input_types == ()
    assert resolve("Const", "opset1").input_types == ()
    assert resolve("Result", "opset1").input_types == (ANY,)


@pytest.mark.parametrize("et", ANY)
def test_a_parameter_reaches_its_result_as_openvino_gives_it(et, tmp_path):
    x = sample(et, (2, 3), np.random.default_rng(len(et)))
    p = opset1.parameter([2, 3], getattr(ov.Type, et), name="in0")
    p.output(0).get_tensor().set_names({"in0"})
    model = ov.Model([opset1.result(p)], [p], "ends")
    (got,) = run_irrun(model, [x], tmp_path)
    (want,) = run_openvino(model, [x], [et])
    assert_same(got, want, et)
    assert_same(got, x, et)
