"""NonZero against the CPU plugin, by hand, and end to end: its data-dependent count
is followed through propagation, validation, the memory plan and downstream ops.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.arrays import DTYPES, values

import irrun
from irrun.core.budget import _info_bytes
from irrun.ir.dims import Interval
from irrun.ir.element_types import ELEMENT_TYPES
from irrun.ir.registry import TensorInfo, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset8  # noqa: E402
from support.ov_oneop import (  # noqa: E402
    assert_close,
    const,
    one_op_model,
    run_both,
    run_cpu,
    run_saved,
)
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402

# --------------------------------------------------------------------------- NonZero


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0, 3), (2, 1, 1, 5)], ids=str)
@pytest.mark.parametrize("out", ["i32", "i64"])
def test_non_zero_matches_cpu(shape, dtype, out, tmp_path):
    rng = np.random.default_rng(len(shape))
    x = values(rng, shape, dtype) * (rng.random(shape) < 0.5).astype(DTYPES[dtype])
    got, want = run_both(lambda p: opset3.non_zero(p, out), [x], tmp_path)
    assert_close(got, want, what=str(shape))


def test_non_zero_by_hand(tmp_path):
    x = np.array([[0.0, np.nan, -0.0], [1.0, 0.0, 2.0]], np.float32)
    got = run_saved(one_op_model(lambda p: opset3.non_zero(p), [x]), [x], tmp_path)[0]
    assert got.tolist() == [[0, 1, 1], [1, 0, 2]]  # NaN counts, -0.0 does not
    for v, want in ((2.0, (1, 1)), (0.0, (1, 0))):  # a scalar, as the CPU plugin lists it
        s = np.array(v, np.float32)
        got = run_saved(one_op_model(lambda p: opset3.non_zero(p, "i32"), [s]), [s], tmp_path)
        cpu = run_cpu(one_op_model(lambda p: opset3.non_zero(p, "i32"), [s]), [s])
        assert got[0].shape == want and cpu[0].shape == want


@pytest.mark.parametrize("shape", [(2, 3), (Interval(1, 4), 3), (Interval(0, None), 3), (),
                                   None, (0, 5)], ids=str)  # fmt: skip
def test_non_zero_shapes(shape):
    op = resolve("NonZero", "opset3")
    a = type("A", (), {"output_type": ELEMENT_TYPES["i32"]})()
    (out,) = op.infer(a, [TensorInfo(shape, ELEMENT_TYPES["f32"])])
    want = from_ov_shape(opset3.non_zero(opset1.parameter(to_ov_shape(shape), np.float32))
                         .get_output_partial_shape(0))  # fmt: skip
    assert out.element_type.name == "i32"
    if shape == ():  # OpenVINO says [?,?]; the run gives [1, 0 or 1]
        assert out.shape == (1, Interval(0, 1))
    else:
        assert out.shape == want


# --------------------------------------------------------------------------- end to end


def _non_zero_model(path: Path, shape=(3, 4)) -> None:
    """x -> NonZero -> (row * 4 + col) -> Gather of flat x -> Reshape [1,-1]; and
    NonZero -> Transpose, the coordinates as rows."""
    p = opset1.parameter(list(shape), np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    nz = opset3.non_zero(p, "i64")
    rows = opset8.gather(nz, const(0), const(0))
    cols = opset8.gather(nz, const(1), const(0))
    linear = opset1.add(opset1.multiply(rows, const(shape[1])), cols)
    flat = opset1.reshape(p, const([-1]), False)
    picked = opset8.gather(flat, linear, const(0))
    out = opset1.reshape(picked, const([1, -1]), False)
    out.output(0).get_tensor().set_names({"picked"})
    coords = opset1.transpose(nz, const([1, 0]))
    coords.output(0).get_tensor().set_names({"coords"})
    count = opset3.shape_of(coords)
    count.output(0).get_tensor().set_names({"count"})
    ov.save_model(ov.Model([out, coords, count], [p], "nz"), path, compress_to_fp16=False)


def test_non_zero_end_to_end(tmp_path):
    path = tmp_path / "nz.xml"
    _non_zero_model(path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    model = irrun.load(path)
    shapes = {o.name: o.shape for o in model.outputs}
    assert shapes["coords"] == (Interval(0, 12), 2)
    compiled = ov.Core().compile_model(path, "CPU")
    for x in (
        np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 5, 6]], np.float32),
        np.zeros((3, 4), np.float32),
        np.ones((3, 4), np.float32),
    ):
        got = model.run({"x": x})
        want = compiled([x])
        for name in ("picked", "coords", "count"):
            assert_close(got[name], np.asarray(want[name]), what=name)
    assert model.run({"x": np.eye(3, 4, dtype=np.float32)})["picked"].tolist() == [[1, 1, 1]]


def test_non_zero_memory_plan_uses_the_bound(tmp_path):
    """The plan counts NonZero's output at its bound: 2 x 4096 i64 = 64 KiB."""
    path = tmp_path / "nz.xml"
    _non_zero_model(path, (64, 64))
    x = np.zeros((64, 64), np.float32)
    x[3, 5] = 1
    assert irrun.load(path, max_memory="1M").run({"x": x})["picked"].tolist() == [[1.0]]
    # The plan holds the bounds of the NonZero, of its rows and columns and more at once.
    with pytest.raises(irrun.IrrunError, match=r"the run needs .* its output i64\[0\.\.4096\]"):
        irrun.load(path, max_memory="40K").run({"x": x})
    warnings = [d for d in irrun.validate(path, max_memory="40K") if d.code == "over-budget"]
    assert any("up to 64.0 KiB" in d.message for d in warnings), warnings


def test_memory_plan_sizes_of_dynamic_dims():
    i64 = ELEMENT_TYPES["i64"]
    assert _info_bytes(TensorInfo((2, Interval(0, 12)), i64)) == 2 * 12 * 8  # at its bound
    assert _info_bytes(TensorInfo((2, Interval(0, None)), i64)) is None  # no bound: unknown
    assert _info_bytes(TensorInfo(None, i64)) is None


def test_non_zero_with_dynamic_input(tmp_path):
    """A dynamic input: every dim after NonZero is unknown, and runs still work."""
    p = opset1.parameter(ov.PartialShape([-1, 3]), np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    nz = opset3.non_zero(p)
    nz.output(0).get_tensor().set_names({"nz"})
    path = tmp_path / "d.xml"
    ov.save_model(ov.Model([nz], [p]), path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    model = irrun.load(path, max_memory="1M")
    assert model.outputs[0].shape == (2, Interval(0, None))
    x = np.array([[0, 1, 0], [2, 0, 3]], np.float32)
    assert model.run({"x": x})["nz"].tolist() == [[0, 1, 1], [1, 0, 2]]


# --------------------------------------------------------------------------- element types

from support.typed import (  # noqa: E402
    assert_not_taken,
    assert_same,
    one_op,
    refusals,
    run_irrun,
    run_openvino,
    sample,
)

from irrun.ir.element_types import ALL_NUMBERS  # noqa: E402

TAKEN = (*ALL_NUMBERS, "boolean")


def _with_zeros(t: str) -> np.ndarray:
    x = sample(t, (3, 4), 5)
    if t == "f8e8m0":  # no zero: every element counts
        return x
    zero = np.zeros(2, x.dtype)
    if x.dtype.kind == "f" or t in ("bf16", "f8e4m3", "f8e5m2", "f4e2m1"):
        zero = np.array([0.0, -0.0]).astype(x.dtype)  # -0.0 is no non-zero
    x.reshape(-1)[[0, 5]] = zero
    return x


@pytest.mark.parametrize("t", TAKEN)
def test_every_type_it_takes(t, tmp_path):
    """NonZero of every number type and boolean against OpenVINO's reference kernel on the
    same values converted to f32 in the graph (its NonZero kernels take neither the low
    floats nor u1, u2, u3, u6)."""
    x = _with_zeros(t)
    model = one_op(lambda p: opset3.non_zero(p, "i64"), [t], [x.shape])
    (got,) = run_irrun(model, [x], tmp_path)
    in_f32 = one_op(lambda p: opset3.non_zero(opset1.convert(p, "f32"), "i64"), [t], [x.shape])
    (want,) = run_openvino(in_f32, [x], [t])
    assert_same(got, want, t)
    if t not in ("f8e8m0", "boolean"):
        assert got.shape[1] <= 10, t  # the zeros set above (-0.0 among them) are left out


@pytest.mark.parametrize("t", ["nf4", "string"])
def test_a_type_not_taken_is_a_validate_error(t, tmp_path):
    """OpenVINO builds NonZero of any type, but none of its kernels count nf4 or strings."""
    model = one_op(lambda p: opset3.non_zero(p, "i64"), ["f32"], [(2, 3)])
    errors = [str(d) for d in refusals(model, tmp_path, {0: t})]
    assert_not_taken(errors, 0, t, "NonZero-v3")
