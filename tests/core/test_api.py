"""The Python API as OpenVINO's and onnxruntime's users call it: feeds by position, name or
port, results indexed likewise, ``model(x)``, ``reshape`` of a bare shape, dtypes, error codes
and ``cast=True``.

Expected values come from OpenVINO (the bundled models' ``.expected.npz``, written by
``models/make_models.py`` from OpenVINO's CPU plugin) or by hand (the two-input model below
adds ``x`` to ``n`` converted to f32; OpenVINO names its outputs ``{sum, total}`` and, the
second having no tensor name, by its Result ``n_result``).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import irrun
from irrun.core.model import Results
from irrun.tools.common import read_inputs

MODELS = Path(__file__).resolve().parents[2] / "models"

TWO_INPUTS = """<?xml version="1.0"?>
<net name="two_inputs" version="11">
	<layers>
		<layer id="0" name="x" type="Parameter" version="opset1">
			<data shape="2,3" element_type="f32" />
			<output>
				<port id="0" precision="FP32" names="x,x_alias">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="1" name="n" type="Parameter" version="opset1">
			<data shape="2,3" element_type="i32" />
			<output>
				<port id="0" precision="I32" names="n">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="2" name="to_float" type="Convert" version="opset1">
			<data destination_type="f32" />
			<input>
				<port id="0" precision="I32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</input>
			<output>
				<port id="1" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="3" name="add" type="Add" version="opset1">
			<data auto_broadcast="numpy" />
			<input>
				<port id="0" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
				<port id="1" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</input>
			<output>
				<port id="2" precision="FP32" names="sum,total">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</output>
		</layer>
		<layer id="4" name="sum_result" type="Result" version="opset1">
			<input>
				<port id="0" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</input>
		</layer>
		<layer id="5" name="n_result" type="Result" version="opset1">
			<input>
				<port id="0" precision="FP32">
					<dim>2</dim>
					<dim>3</dim>
				</port>
			</input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="3" to-port="0" />
		<edge from-layer="1" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="2" from-port="1" to-layer="3" to-port="1" />
		<edge from-layer="3" from-port="2" to-layer="4" to-port="0" />
		<edge from-layer="2" from-port="1" to-layer="5" to-port="0" />
	</edges>
</net>
"""

X = np.arange(6, dtype=np.float32).reshape(2, 3)
N = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
SUM = np.array([[1, 3, 5], [7, 9, 11]], np.float32)  # X + N, by hand


@pytest.fixture
def two(tmp_path) -> irrun.Model:
    path = tmp_path / "two.xml"
    path.write_text(TWO_INPUTS)
    return irrun.load(path)


def _npz(name: str) -> dict[str, np.ndarray]:
    with np.load(MODELS / name) as f:
        return dict(f)


def test_one_array_a_list_a_tuple_and_a_dict_give_openvinos_values():
    m = irrun.load(MODELS / "demo.xml")
    x = _npz("demo.inputs.npz")["image"]
    want = _npz("demo.expected.npz")["probabilities"]
    spec = m.inputs[0]
    for feeds in (x, [x], (x,), {"image": x}, {0: x}, {spec: x}):
        res = m.run(feeds)
        np.testing.assert_allclose(res["probabilities"], want, rtol=1e-5, atol=1e-7)
        assert np.array_equal(res[0], res["probabilities"])
    assert np.array_equal(m(x)[0], m.run(x)["probabilities"])  # Model.__call__ is run


def test_two_inputs_by_position_by_name_alias_and_port_agree(two):
    for feeds in ([X, N], (X, N), {"x": X, "n": N}, {"x_alias": X, "n": N}, {1: N, 0: X},
                  {two.inputs[1]: N, two.inputs[0]: X}):  # fmt: skip
        res = two.run(feeds)
        assert np.array_equal(res["sum"], SUM)
        assert np.array_equal(res["n_result"], N.astype(np.float32))


def test_results_answer_to_positions_every_tensor_name_the_result_name_and_outputs(two):
    res = two.run([X, N])
    assert isinstance(res, dict) and isinstance(res, Results)
    # A dict as before: its keys are the outputs' names, in the model's order.
    assert list(res) == ["sum", "n_result"] == list(res.keys())
    assert [k for k, _ in res.items()] == ["sum", "n_result"] and len(res) == 2
    for key in (0, -2, "sum", "total", "sum_result", two.outputs[0], np.int64(0)):
        assert np.array_equal(res[key], SUM), key
        assert key in res
    for key in (1, -1, "n_result", two.outputs[1]):
        assert np.array_equal(res[key], [[1, 2, 3], [4, 5, 6]]), key
    assert [v.tolist() for v in res.to_tuple()] == [SUM.tolist(), [[1, 2, 3], [4, 5, 6]]]
    assert res.get("total") is res["sum"] and res.get("nothing") is None and res.get(5) is None
    assert "nothing" not in res and 2 not in res
    with pytest.raises(IndexError, match=r"output 2 is out of range: 2 outputs \(sum, n_result\)"):
        res[2]
    with pytest.raises(KeyError, match="no value named 'nothing'"):
        res["nothing"]
    again = pickle.loads(pickle.dumps(res))
    assert np.array_equal(again["total"], SUM) and list(again) == ["sum", "n_result"]


def test_positions_count_the_outputs_asked_for(two):
    res = two.run([X, N], outputs=[1, "sum"])
    assert list(res) == ["n_result", "sum"]
    assert np.array_equal(res[1], SUM) and np.array_equal(res["total"], SUM)
    one = two.run([X, N], outputs="total")  # one name, not a list of its letters
    assert list(one) == ["total"] and np.array_equal(one[0], SUM)
    # With every tensor, positions are still the model's outputs.
    every = two.run([X, N], intermediate=True)
    assert np.array_equal(every[0], SUM) and np.array_equal(every[1], N)
    # The unnamed Convert is known by the Result it feeds, in every view (one naming rule).
    assert "to_float" not in every and np.array_equal(every["n_result"], N)


def test_feeds_that_do_not_fit_the_inputs_are_refused_with_a_code(two):
    cases = [
        ([X], r"1 values given by position, but the model has 2 inputs \(x, n\)"),
        (X, r"one array given, but the model has 2 inputs \(x, n\): pass a dict by name or a "
            r"list by position"),
        ({0: X, 2: N}, r"no input 2: the model has 2 inputs \(x, n\)"),
        ({"x": X, "x_alias": X, "n": N}, "input 'x_alias' is given twice"),
        ({"x": X}, "no value given for input 'n'"),
    ]  # fmt: skip
    for feeds, message in cases:
        with pytest.raises(irrun.IrrunError, match=message) as caught:
            two.run(feeds)
        assert caught.value.code == "bad-input"


class _Sub(np.ndarray):
    pass


def test_feeds_accepted_before_are_still_checked_after_a_reshape(two):
    """A dict of arrays whose types and shapes fit is taken without the long checks (a
    decode step's): the same refusals as ever once something does not fit, and a shape
    that fitted before a reshape is checked against the new shapes."""
    feeds = {"x": X, "n": N}
    for _ in range(2):
        np.testing.assert_array_equal(two.run(feeds)["sum"], X + N)
    refused = [
        ({"x": X.astype(np.float64), "n": N}, "input 'x' has element type f64"),
        ({"x": X[:1], "n": N}, r"input 'x' has shape \[1,3\], expected \[2,3\]"),
        ({"x": X.view(_Sub), "n": N}, None),  # a subclass: the long way, which takes it
        ({"x": X, "x_alias": X, "n": N}, "input 'x_alias' is given twice"),
    ]  # fmt: skip
    for bad, message in refused:
        if message is None:
            np.testing.assert_array_equal(two.run(bad)["sum"], X + N)
            continue
        with pytest.raises(irrun.IrrunError, match=message) as caught:
            two.run(bad)
        assert caught.value.code == "bad-input"
    two.reshape([[1, 3], [1, 3]])
    with pytest.raises(irrun.IrrunError, match=r"input 'x' has shape \[2,3\], expected \[1,3\]"):
        two.run(feeds)
    np.testing.assert_array_equal(two.run({"x": X[:1], "n": N[:1]})["sum"], X[:1] + N[:1])


def test_reshape_takes_a_bare_shape_a_list_by_position_and_a_dict_by_port():
    m = irrun.load(MODELS / "pooling_chain.xml")
    m.reshape([2, 3, 32, 32])
    assert m.inputs[0].shape == (2, 3, 32, 32) and m.outputs[0].shape == (2, 3, 2, 2)
    m.reshape([(4, 3, 16, 16)])
    assert m.inputs[0].partial_shape == "[4,3,16,16]"
    m.reshape({0: [1, 3, None, -1]})
    assert m.inputs[0].partial_shape == "[1,3,?,?]"
    m.reshape({m.inputs[0]: "1,3,16,16"})
    x = _npz("pooling_chain.inputs.npz")["image"]
    np.testing.assert_array_equal(m(x)[0], _npz("pooling_chain.expected.npz")["pooled"])


def test_reshape_of_a_bare_shape_needs_one_input(two):
    with pytest.raises(irrun.UsageError, match=r"one shape given, but the model has 2 inputs"):
        two.reshape([2, 3])
    two.reshape([[1, 3], [1, 3]])
    assert [s.shape for s in two.inputs] == [(1, 3), (1, 3)]
    with pytest.raises(irrun.UsageError, match=r"3 shapes given by position, but the model has "
                       r"2 inputs"):  # fmt: skip
        two.reshape([[1], [1], [1]])


def test_tensor_specs_have_numpy_dtypes_and_openvinos_names(two):
    assert [s.dtype for s in two.inputs] == [np.dtype(np.float32), np.dtype(np.int32)]
    assert two.inputs[0].names == ("x", "x_alias") and two.inputs[0].get_any_name() == "x"
    assert two.outputs[0].names == ("sum", "total") and two.outputs[0].any_name == "sum"
    assert two.inputs[1].partial_shape == "[2,3]"


def test_a_missing_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        irrun.load(tmp_path / "nope.xml")
    err = caught.value
    assert isinstance(err, irrun.MissingFile) and isinstance(err, irrun.IrrunError)
    assert err.code == "missing-file" and err.filename == str(tmp_path / "nope.xml")
    assert str(err) == f"{tmp_path / 'nope.xml'}: no such file"
    (tmp_path / "demo.xml").write_bytes((MODELS / "demo.xml").read_bytes())  # no .bin
    with pytest.raises(irrun.MissingFile) as caught:
        irrun.load(tmp_path / "demo.xml")
    assert caught.value.filename == str(tmp_path / "demo.bin")
    assert caught.value.code == "missing-file" and caught.value.location.line > 0
    assert pickle.loads(pickle.dumps(caught.value)).filename == str(tmp_path / "demo.bin")


def test_a_missing_input_or_reference_file_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.npz: no such reference file") as caught:
        irrun.compare(MODELS / "demo.xml", reference=tmp_path / "nope.npz")
    assert caught.value.code == "missing-file"
    assert caught.value.filename == str(tmp_path / "nope.npz")
    with pytest.raises(irrun.MissingFile, match=r"nope\.npy: no such input file"):
        read_inputs(irrun.load(MODELS / "demo.xml"), [str(tmp_path / "nope.npy")])


def test_every_error_has_a_code(two):
    assert irrun.IrrunError("x").code == "error"
    assert irrun.UsageError("x").code == "usage"
    assert irrun.InternalError.wrap(ValueError("v")).code == "internal-error"
    with pytest.raises(irrun.IrrunError) as caught:
        two.run([X, N], outputs=["nothing"])
    assert caught.value.code == "unknown-name"
    with pytest.raises(irrun.IrrunError) as caught:
        two.reshape({"x": [2, 4]})  # Add cannot broadcast [2,4] with [2,3]
    assert caught.value.code == "shape-error"


def test_float64_is_refused_with_a_note_on_cast(two):
    with pytest.raises(irrun.IrrunError) as caught:
        two.run([X.astype(np.float64), N])
    assert caught.value.code == "bad-input"
    assert "input 'x' has element type f64, expected f32 (numpy float32)" in str(caught.value)
    assert "cast=True (--cast on the command line)" in str(caught.value)


def test_cast_converts_what_the_input_type_can_hold(two):
    res = two.run([X.astype(np.float64), N.astype(np.float64)], cast=True)
    assert np.array_equal(res["sum"], SUM)
    res = two.run({"x": X.astype(np.float16), "n": N.astype(np.uint8)}, cast=True)
    assert np.array_equal(res["sum"], SUM)
    big = np.full((2, 3), 2.0**31 - 1)  # i32's largest: exact in f64
    assert two.run([X, big], cast=True)["n_result"][0, 0] == np.float32(2.0**31)


@pytest.mark.parametrize(
    ("x", "n", "message"),
    [
        (np.full((2, 3), 1e39), N, r"input 'x': cannot cast f64 to f32: value 1e\+39 is out of "
                                   r"f32's range \(it would become inf\)"),
        (X, np.full((2, 3), 1.5), r"input 'n': cannot cast f64 to i32: value 1.5 is not an integer"),
        (X, np.full((2, 3), np.nan), r"input 'n': cannot cast f64 to i32: value nan is not an "
                                     r"integer"),
        (X, np.full((2, 3), 2.0**31), r"input 'n': cannot cast f64 to i32: value 2147483648.0 is "
                                      r"outside i32's range \[-2147483648, 2147483647\]"),
        (X, np.full((2, 3), -(2**40), np.int64), r"input 'n': cannot cast i64 to i32: value "
                                                 r"-1099511627776 is outside i32's range"),
        (np.full((2, 3), "a"), N, r"input 'x': cannot cast <U1 to f32: its values are not numbers"),
    ],
)  # fmt: skip
def test_cast_refuses_values_the_input_type_cannot_hold(two, x, n, message):
    with pytest.raises(irrun.IrrunError, match=message) as caught:
        two.run([x, n], cast=True)
    assert caught.value.code == "bad-input"


def test_a_request_returns_results_too():
    req = irrun.load(MODELS / "running_sum.xml").create_request()
    req.run([np.ones((1, 4), np.float32)])
    out = req.run(np.ones((1, 4), np.float32))
    assert out[0].tolist() == [[2.0, 2.0, 2.0, 2.0]] and list(out) == ["sum"]


def test_feeds_and_results_answer_as_openvinos_do(two, tmp_path):
    ov = pytest.importorskip("openvino")
    path = tmp_path / "two_ov.xml"
    path.write_text(TWO_INPUTS)
    compiled = ov.Core().compile_model(str(path), "CPU")
    for feeds in ([X, N], {1: N, 0: X}, {"x_alias": X, "n": N}):
        want, got = compiled(feeds), two(feeds)
        for key in (0, 1, "sum", "total"):
            np.testing.assert_array_equal(got[key], want[key])
        np.testing.assert_array_equal(got[two.outputs[1]], want[compiled.outputs[1]])


def test_irrun_compare_imports_no_openvino(tmp_path):
    code = ("import sys, irrun; irrun.compare, irrun.benchmark; "
            "print('openvino' in sys.modules)")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(irrun.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)  # fmt: skip
    assert done.stdout == "False\n", done.stderr


def test_a_request_casts_too():
    req = irrun.load(MODELS / "running_sum.xml").create_request()
    for _ in range(2):
        out = req.run([np.full((1, 4), 2.0)], cast=True)
    assert out["sum"].tolist() == [[4.0, 4.0, 4.0, 4.0]]
