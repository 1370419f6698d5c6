"""Ops whose output shape is read from an input's values (Tile, Roll, OneHot, Slice,
Range, NonZero), across op modules: validation of their layers, shape inputs known only
at run time, and shape inputs folded to static shapes.

The cases are one parametrization over ops of several modules (creation, movement,
slicing, non_zero), so they live together here rather than beside each op.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from support.arrays import I64_MAX

import irrun

ov = pytest.importorskip("openvino")
from openvino import opset1, opset3, opset7, opset8, opset12, opset16  # noqa: E402
from support.ov_oneop import assert_close, const, one_op_model, run_both  # noqa: E402

# --------------------------------------------------------------------------- validate


def _layer_with(tmp_path, build, inputs, old: str, new: str) -> Path:
    path = tmp_path / "bad.xml"
    ov.save_model(one_op_model(build, inputs), path)
    text = path.read_text()
    assert old in text, text
    path.write_text(text.replace(old, new, 1))
    return path


X26 = np.zeros((2, 6), np.float32)
IDX = np.zeros((2, 6), np.int64)
VALIDATE_CASES = {
    "OneHot-axis": (lambda p: opset1.one_hot(p, const(3), const(1.0, np.float32),
                                             const(0.0, np.float32), 1), IDX,
                    'axis="1"', 'axis="5"', "shape-error", "axis 5 is out of range"),
    "OneHot-mode": (lambda p: opset16.one_hot(p, const(3), const(1.0, np.float32),
                                              const(0.0, np.float32), 1, "normalize"), IDX,
                    'negative_indices_mode="normalize"', 'negative_indices_mode="wrap"',
                    "bad-attribute", "ignore_negative, normalize"),
    "NonZero-type": (lambda p: opset3.non_zero(p), X26, 'output_type="i64"',
                     'output_type="f32"', "bad-attribute", "output_type must be i32 or i64"),
    "NonZero-dim": (lambda p: opset3.non_zero(p), X26, "<dim>2</dim>\n\t\t\t\t\t<dim>-1</dim>",
                    "<dim>2</dim>\n\t\t\t\t\t<dim>13</dim>", "shape-mismatch",
                    "declared [2,13], inferred [2,0..12]"),
    "Tile-dim": (lambda p: opset1.tile(p, const([2, 1])), X26, "<dim>4</dim>", "<dim>5</dim>",
                 "shape-mismatch", "declared [5,6], inferred [4,6]"),
    "Slice-dim": (lambda p: opset8.slice(p, const([1]), const([I64_MAX]), const([2]),
                                         const([-1])), X26,
                  "<dim>2</dim>\n\t\t\t\t\t<dim>3</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
                  "<dim>2</dim>\n\t\t\t\t\t<dim>4</dim>\n\t\t\t\t</port>\n\t\t\t</output>",
                  "shape-mismatch", "declared [2,4], inferred [2,3]"),
    "Range-type": (lambda p: opset12.range(const(0), const(4), const(1), "i32"), X26,
                   'output_type="i32"', 'output_type="boolean"', "bad-attribute",
                   "output_type must be a numeric type"),
    "Roll-dim": (lambda p: opset7.roll(p, const([1]), const([1])), X26,
                 'names="out">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>6</dim>',
                 'names="out">\n\t\t\t\t\t<dim>2</dim>\n\t\t\t\t\t<dim>7</dim>', "shape-mismatch",
                 "declared [2,7], inferred [2,6]"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(VALIDATE_CASES))
def test_validate_findings(case, tmp_path):
    build, x, old, new, code, says = VALIDATE_CASES[case]
    path = _layer_with(tmp_path, build, [x], old, new)
    found = [d for d in irrun.validate(path) if d.level == "error"]
    layer = f"({case.split('-')[0]}-v"  # the op's layer, as "(Roll-v7)" names it
    assert any(d.code == code and says in d.message and layer in str(d) for d in found), found


RUNTIME_CASES = {
    "Tile": (lambda p, q: opset1.tile(p, q), [np.array([2, 3, 1])]),
    "Roll": (lambda p, q, r: opset7.roll(p, q, r), [np.array([2, -1]), np.array([0, -1])]),
    "OneHot": (lambda p, q: opset1.one_hot(opset1.convert(p, "i64"), q, const(1.0, np.float32),
                                           const(0.0, np.float32), 0), [np.array(5)]),
    "Slice": (lambda p, q: opset8.slice(p, q, const([9]), const([1]), const([1])),
              [np.array([1])]),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(RUNTIME_CASES))
def test_shape_inputs_known_only_at_run_time_match_cpu(case, tmp_path):
    """Repeats, shifts, depth and bounds as model inputs: shapes unknown before the run."""
    build, extra = RUNTIME_CASES[case]
    x = np.arange(12, dtype=np.float32).reshape(3, 4) % 5
    path = tmp_path / "m.xml"
    ov.save_model(one_op_model(build, [x, *extra]), path)
    assert [d for d in irrun.validate(path) if d.level == "error"] == []
    got, want = run_both(build, [x, *extra], tmp_path)
    assert_close(got, want, what=case)


# --------------------------------------------------------------------------- folding


def test_shape_inputs_fold_to_static_shapes(tmp_path):
    """Range, Slice and Tile fed by ShapeOf -> Gather of a static input stay static."""
    p = opset1.parameter([2, 5], np.float32, name="x")
    p.output(0).get_tensor().set_names({"x"})
    width = opset8.gather(opset3.shape_of(p), const(1), const(0))
    steps = opset12.range(const(0), width, const(2), "i32")  # 0 2 4
    steps.output(0).get_tensor().set_names({"steps"})
    ends = opset1.unsqueeze(opset1.subtract(width, const(1)), const(0))
    cut = opset8.slice(p, const([1]), ends, const([1]), const([1]))  # columns 1..3
    cut.output(0).get_tensor().set_names({"cut"})
    tiled = opset1.tile(p, opset1.concat([const([1]), opset1.unsqueeze(width, const(0))], 0))
    tiled.output(0).get_tensor().set_names({"tiled"})
    nz = opset3.non_zero(const([[0, 1, 0], [2, 0, 3]], np.float32))
    nz.output(0).get_tensor().set_names({"nz"})
    path = tmp_path / "fold.xml"
    ov.save_model(ov.Model([steps, cut, tiled, nz], [p]), path)
    text = path.read_text()
    assert all(f'type="{t}"' in text for t in ("Range", "Slice", "Tile", "NonZero", "ShapeOf"))
    assert irrun.validate(path) == []
    model = irrun.load(path)
    shapes = {o.name: o.shape for o in model.outputs}
    assert shapes == {"steps": (3,), "cut": (2, 3), "tiled": (2, 25), "nz": (2, 3)}
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    got = model.run({"x": x})
    want = ov.Core().compile_model(path, "CPU")([x])
    for name in shapes:
        assert_close(got[name], np.asarray(want[name]), what=name)
