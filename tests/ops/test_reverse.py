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


# --------------------------------------------------------------------------- element types

from support.ov_oneop import run_cpu  # noqa: E402
from support.typed import Case, assert_not_taken, assert_same, run_pairs, sample  # noqa: E402

from irrun.ir.element_types import ALL_NUMBERS, ANY, ELEMENT_TYPES  # noqa: E402

TYPE_CASES = {
    "Reverse-1": Case(lambda x, a: _reverse(x, a, "index"), (2, 3, 2), [2, 0]),
    "Reverse-1/negative": Case(lambda x, a: _reverse(x, a, "index"), (2, 3), [-1, 1]),
    "Reverse-1/mask": Case(lambda x: _reverse(x, const([True, False, True], bool), "mask"),
                           (2, 3, 2)),
    "ReverseSequence-1": Case(lambda x, s: opset1.reverse_sequence(x, s, 0, 1), (2, 3), [2, 3]),
    "ReverseSequence-1/batch": Case(lambda x, s: opset1.reverse_sequence(x, s, -1, 0), (3, 2, 2),
                                    [3, 0]),
}  # fmt: skip


@pytest.mark.parametrize("t", ANY)
@pytest.mark.parametrize("op", ["Reverse-1", "Reverse-1/mask", "ReverseSequence-1"])
def test_every_data_type(op, t, tmp_path):
    """Data of every element type, strings and packed types included, as OpenVINO moves it
    (support.typed)."""
    TYPE_CASES[op].check_data_type(t, tmp_path)


INDEX_CASES = [(op, t) for op in ("Reverse-1", "Reverse-1/negative", "ReverseSequence-1",
                                  "ReverseSequence-1/batch")
               for t in TYPE_CASES[op].index_types(resolve(op.split("-")[0], "opset1"))]  # fmt: skip


@pytest.mark.parametrize(("op", "t"), INDEX_CASES)
def test_every_integer_axis_and_length_type(op, t, tmp_path):
    TYPE_CASES[op].check_index_type(t, tmp_path, data_type="f32")


def test_index_cases_cover_the_declared_integers():
    for name in ("Reverse", "ReverseSequence"):
        swept = {t for o, t in INDEX_CASES if o.startswith(name + "-")}
        declared = resolve(name, "opset1").port_types(1)
        assert swept >= {t for t in declared if t in ELEMENT_TYPES and t not in (
            "boolean", "u1") and ELEMENT_TYPES[t].dtype.kind in "iu"}, (name, swept)  # fmt: skip


FLOAT_LENGTHS = [t for t in ALL_NUMBERS if ELEMENT_TYPES[t].dtype.kind not in "iu"]


@pytest.mark.parametrize("t", FLOAT_LENGTHS)
def test_reverse_sequence_takes_float_lengths(t, tmp_path):
    """seq_lengths of every float type OpenVINO takes, whole numbers (2 and 1: f8e8m0 holds
    no 3), as the plugin runs i64 ones."""
    x = sample("i32", (2, 3))
    lengths = np.array([2.0, 1.0]).astype(ELEMENT_TYPES[t].dtype)
    build = lambda p, q: opset1.reverse_sequence(p, q, 0, 1)  # noqa: E731
    (got,) = run_pairs(build, [(x, "i32"), (lengths, t)], tmp_path)
    ints = [x, np.array([2, 1], np.int64)]
    (want,) = run_cpu(one_op_model(build, ints), ints)
    assert_same(got, want)
    assert got.tolist() == [[x[0, 1], x[0, 0], x[0, 2]], x[1].tolist()]


REFUSED = [("Reverse-1", 1, "f32"), ("Reverse-1", 1, "string"), ("ReverseSequence-1", 1,
                                                                   "boolean"),
           ("ReverseSequence-1", 1, "nf4"), ("ReverseSequence-1", 1, "string")]  # fmt: skip


@pytest.mark.parametrize(("op", "port", "t"), REFUSED)
def test_a_type_not_taken_is_a_validate_error(op, port, t, tmp_path):
    errors = TYPE_CASES[op].refused(port, t, tmp_path)
    label = resolve(op.split("-")[0], "opset1").label
    assert_not_taken(errors, port, t, label)


def test_reverse_mode_picks_integers_or_booleans():
    rule = resolve("Reverse", "opset1")
    f32 = ELEMENT_TYPES["f32"]
    for mode, et in (("index", "boolean"), ("mask", "i4")):
        with pytest.raises(ShapeError, match=f"in '{mode}' mode reversed_axes must be"):
            rule.infer(attrs_namespace({"mode": mode}), [TensorInfo((2,), f32),
                                                         TensorInfo((1,), ELEMENT_TYPES[et])])
