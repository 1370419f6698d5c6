"""Reverse and ReverseSequence against OpenVINO: the CPU plugin, the reference kernels
(``Model.evaluate``), by hand, and the shape rules against OpenVINO's own.

Every op here moves values, so comparisons are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.arrays import ET, random_data

import irrun
from irrun.ir.dims import DYNAMIC, Interval
from irrun.ir.registry import ShapeError, TensorInfo, attrs_namespace, resolve

ov = pytest.importorskip("openvino")
from openvino import opset1  # noqa: E402
from openvino.utils.node_factory import NodeFactory  # noqa: E402
from support.ov_oneop import all_three, const, one_op_model, run_saved  # noqa: E402
from support.ov_shapes import from_ov_shape, to_ov_shape  # noqa: E402


def _reverse(p, axes, mode):
    return NodeFactory("opset1").create("Reverse", [p.output(0), axes.output(0)], {"mode": mode})


def test_reverse_is_in_opset1_only():
    assert resolve("Reverse", "opset1").label == "Reverse-v1"
    for n in (2, 8, 16):
        with pytest.raises(LookupError):
            resolve("Reverse", f"opset{n}")


# --------------------------------------------------------------------------- Reverse


@pytest.mark.parametrize("et", ["f32", "f16", "i32", "u8", "boolean"])
def test_reverse_matches_openvino(et, tmp_path):
    rng = np.random.default_rng(len(et))
    for shape in ([2, 3, 4], [5], [1, 0, 3], [3, 1, 2, 2]):
        x = random_data(rng, shape, et)
        rank = len(shape)
        axes = sorted(set(rng.integers(-rank, rank, size=int(rng.integers(1, rank + 1)))))
        for itype in (np.int64, np.int32, np.uint8):
            if itype == np.uint8:
                axes = [a % rank for a in axes]
            all_three(lambda p, ax=axes, t=itype: _reverse(p, const(ax, t), "index"), [x],
                       tmp_path)  # fmt: skip
        mask = rng.random(rank) < 0.5
        all_three(lambda p, m=mask: _reverse(p, const(m, bool), "mask"), [x], tmp_path)


def test_reverse_by_hand(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    run = lambda b: run_saved(one_op_model(b, [x]), [x], tmp_path)[0].tolist()  # noqa: E731
    assert run(lambda p: _reverse(p, const([-1, 1]), "index")) == [[2, 1, 0], [5, 4, 3]]
    assert run(lambda p: _reverse(p, const([True, True], bool), "mask")) == [[5, 4, 3],
                                                                              [2, 1, 0]]
    # The axes may come from a tensor computed at run time.
    a = np.array([0], np.int64)
    got = run_saved(one_op_model(lambda p, q: _reverse(p, q, "index"), [x, a]), [x, a],
                    tmp_path)[0]  # fmt: skip
    assert got.tolist() == [[3, 4, 5], [0, 1, 2]]


def test_reverse_shape_rule():
    rule = resolve("Reverse", "opset1")
    f32, i64, b = ET["f32"], ET["i64"], ET["boolean"]
    shape = (Interval(1, 4), DYNAMIC)
    (out,) = rule.infer(attrs_namespace({"mode": "index"}),
                        [TensorInfo(shape, f32), TensorInfo((1,), i64, np.array([1]))])  # fmt: skip
    assert out.shape == shape
    with pytest.raises(ShapeError, match="reversed axis 2 is out of range for rank 2"):
        rule.infer(attrs_namespace({"mode": "index"}),
                   [TensorInfo(shape, f32), TensorInfo((1,), i64, np.array([2]))])  # fmt: skip
    with pytest.raises(ShapeError, match="mask has 3 values"):
        rule.infer(attrs_namespace({"mode": "mask"}), [TensorInfo(shape, f32),
                                                       TensorInfo((3,), b)])  # fmt: skip
    with pytest.raises(ShapeError, match="must be boolean"):
        rule.infer(attrs_namespace({"mode": "mask"}), [TensorInfo(shape, f32),
                                                       TensorInfo((2,), i64)])  # fmt: skip
    with pytest.raises(ShapeError, match="must be 1-D"):
        rule.infer(attrs_namespace({"mode": "index"}), [TensorInfo(shape, f32),
                                                        TensorInfo((), i64)])  # fmt: skip
    # OpenVINO refuses the same.
    for axes, mode in (([2], "index"), ([True], "mask"), ([1, 0], "mask")):
        dtype = bool if isinstance(axes[0], bool) else np.int64
        with pytest.raises(RuntimeError):
            _reverse(opset1.parameter([2, 3]), const(axes, dtype), mode)


# --------------------------------------------------------------------------- ReverseSequence


@pytest.mark.parametrize("et", ["f32", "i32", "u8", "f16"])
def test_reverse_sequence_matches_openvino(et, tmp_path):
    rng = np.random.default_rng(len(et) + 40)
    for shape, batch, seq in (([3, 5], 0, 1), ([4, 2, 3], 1, 0), ([2, 3, 4], -1, 1),
                              ([3, 4, 2, 2], 0, -2), ([2, 6, 1], 2, 1)):  # fmt: skip
        x = random_data(rng, shape, et)
        n, b = shape[seq], shape[batch]
        for ltype in (np.int32, np.int64, np.float32, np.int8):
            lengths = rng.integers(0, n + 1, b).astype(ltype)
            all_three(lambda p, q, bt=batch, sq=seq: opset1.reverse_sequence(p, q, bt, sq),
                       [x, lengths], tmp_path, reference=False)  # fmt: skip


def test_reverse_sequence_by_hand(tmp_path):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    lengths = np.array([4, 0, 2], np.int32)
    model = one_op_model(lambda p, q: opset1.reverse_sequence(p, q, 0, 1), [x, lengths])
    got = run_saved(model, [x, lengths], tmp_path)[0]
    # A length of 0 flips nothing, as 1 does.
    assert got.tolist() == [[3, 2, 1, 0], [4, 5, 6, 7], [9, 8, 10, 11]]
    with pytest.raises(irrun.IrrunError, match=r"must lie in 0\.\.4"):
        run_saved(model, [x, np.array([1, 5, 1], np.int32)], tmp_path)


def test_reverse_sequence_shape_rule_matches_openvino():
    rule = resolve("ReverseSequence", "opset1")
    cases = [((Interval(2, 6), 4), (3,), 0, 1), ((DYNAMIC, 3, 2), (DYNAMIC,), 0, 2),
             (None, (3,), 0, 1), ((2, DYNAMIC), (2,), 0, 1)]  # fmt: skip
    for data, lengths, batch, seq in cases:
        p = opset1.parameter(to_ov_shape(data), ov.Type.f32)
        q = opset1.parameter(to_ov_shape(lengths), ov.Type.i32)
        want = from_ov_shape(opset1.reverse_sequence(p, q, batch, seq).get_output_partial_shape(0))
        (got,) = rule.infer(attrs_namespace({"batch_axis": batch, "seq_axis": seq}),
                            [TensorInfo(data, ET["f32"]), TensorInfo(lengths, ET["i32"])])
        assert got.shape == want, (data, lengths)
    for data, lengths, batch, seq, match in (((3,), (3,), 0, 0, "rank 2 or more"),
                                             ((3, 4), (4,), 0, 1, "3"),
                                             ((3, 4), (3,), 2, 1, "batch_axis 2")):  # fmt: skip
        with pytest.raises(ShapeError, match=match):
            rule.infer(attrs_namespace({"batch_axis": batch, "seq_axis": seq}),
                       [TensorInfo(data, ET["f32"]), TensorInfo(lengths, ET["i32"])])
        with pytest.raises(RuntimeError):
            opset1.reverse_sequence(opset1.parameter(list(data)), opset1.parameter(
                list(lengths), ov.Type.i32), batch, seq)  # fmt: skip
