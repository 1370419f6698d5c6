"""ReadValue-3/6 and Assign-3/6 for every element type: a variable may hold any.

The first run of a model gives the initial value, as OpenVINO's reference kernels do
(``Model.evaluate``); the next run of the same request gives what the first assigned
(the values only move, so they are compared bit for bit).  A string variable is checked
by hand: ``Model.evaluate`` aborts the process on one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import irrun
from irrun.ir.element_types import ANY
from irrun.ir.registry import resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset6  # noqa: E402
from openvino.op.util import Variable, VariableInfo  # noqa: E402
from support.typed import assert_same, run_openvino, sample  # noqa: E402


def _param(name, et):
    p = opset1.parameter([2, 3], getattr(ov.Type, et), name=name)
    p.output(0).get_tensor().set_names({name})
    return p


def _model(et: str) -> ov.Model:
    """out = the variable (initially in0); the variable <- in1.  (OpenVINO's Assign-3
    finds its variable only through a ReadValue it depends on, which in1 is not: the
    versions 3 are written into the saved IR.)"""
    init, new = _param("in0", et), _param("in1", et)
    info = VariableInfo()
    info.variable_id, info.data_type = "v", getattr(ov.Type, et)
    info.data_shape = ov.PartialShape([2, 3])
    var = Variable(info)
    read, assign = opset6.read_value(init, var), opset6.assign(new, var)
    read.output(0).get_tensor().set_names({"out"})
    return ov.Model([opset1.result(read)], [assign], [init, new], "variable")


def _as_version_3(text: str) -> str:
    text = re.sub(r'(type="(?:ReadValue|Assign)" version=")opset6"', r'\g<1>opset3"', text)
    text = re.sub(r' variable_type="[^"]*"', "", text)
    return re.sub(r' variable_shape="[^"]*"', "", text)


@pytest.mark.parametrize("version", [3, 6])
def test_declared_ports(version):
    assert resolve("ReadValue", f"opset{version}").input_types == (ANY,)
    assert resolve("Assign", f"opset{version}").input_types == (ANY,)


@pytest.mark.parametrize("version", [3, 6])
@pytest.mark.parametrize("et", ANY)
def test_a_variable_of_each_type(version, et, tmp_path):
    rng = np.random.default_rng([version, len(et)])
    first, second, third = (sample(et, (2, 3), rng) for _ in range(3))
    model = _model(et)
    path = tmp_path / "m.xml"
    ov.save_model(model, path, compress_to_fp16=False)
    if version == 3:
        path.write_text(_as_version_3(path.read_text()))
        assert 'version="opset3"' in path.read_text()
    request = irrun.load(path).create_request()
    got = request.run({"in0": first, "in1": second})["out"]
    if et != "string":  # OpenVINO's evaluate aborts the process on a string variable
        (want,) = run_openvino(model, [first, second], [et, et])
        assert_same(got, want, "the initial value")
    assert_same(got, first, "the initial value")
    got = request.run({"in0": third, "in1": third})["out"]
    assert_same(got, second, "the value assigned by the first run")
